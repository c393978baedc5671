"""The package's import graph has no circle.

Every import of one rankfast module by another counts, at module level or
inside a function (a deferred import still ties the two modules together):
calls go one way, cli -> estimators -> shared parts -> data and kernels.
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rankfast"


def imported_modules(path, modules):
    """{module: first line} of the package's modules that the file imports, anywhere in it."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names = []
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 or node.module == "rankfast":
                if node.module in (None, "rankfast"):      # from . import a, b
                    names = [alias.name for alias in node.names]
                else:                                       # from .a.b import c
                    names = [node.module.split(".")[0]]
            elif node.level == 0 and node.module and node.module.startswith("rankfast."):
                names = [node.module.split(".")[1]]
        elif isinstance(node, ast.Import):
            names = [alias.name.split(".")[1] for alias in node.names
                     if alias.name.startswith("rankfast.")]
        for name in names:
            if name in modules and name != path.stem:
                found.setdefault(name, node.lineno)
    return found


def import_graph(package=PACKAGE):
    modules = {path.stem: path for path in package.glob("*.py")}
    return {name: imported_modules(path, modules) for name, path in modules.items()}


def circles(graph):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph[node]:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def describe(graph, component):
    return "; ".join(f"{a} -> {b} (line {graph[a][b]})"
                     for a in component for b in sorted(graph[a]) if b in component)


def test_the_package_imports_in_one_direction():
    graph = import_graph()
    assert {"base", "inputs", "metrics", "model", "kernels", "cli"} <= set(graph)
    assert "metrics" in graph["base"] and "base" not in graph["metrics"]   # the graph is read
    found = circles(graph)
    assert not found, "import circles: " + " | ".join(describe(graph, c) for c in found)


@pytest.mark.parametrize("files, expected", [
    ({"a.py": "from . import b\n", "b.py": "def f():\n    from .a import x\n"}, [["a", "b"]]),
    ({"a.py": "from .b import y\n", "b.py": "import rankfast.c\n",
      "c.py": "from rankfast import a\n"}, [["a", "b", "c"]]),
    ({"a.py": "from .b import y\n", "b.py": "from .c import z\n", "c.py": "import os\n"}, []),
])
def test_a_circle_is_found_wherever_the_import_stands(tmp_path, files, expected):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert circles(import_graph(tmp_path)) == expected
