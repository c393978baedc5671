"""The package's import graph has no circle, and its layers hold.

Every import of one rankfast module by another counts, at module level or
inside a function (a deferred import still ties the two modules together).
Calls go one way: cli -> learners and model selection -> losses -> solvers
(optimize) -> shared parts -> io, data and the kernels.  The rules a reader can rely on:

* ``rankfast.io`` (files) imports no learner, no model selection, no program;
* ``rankfast.metrics`` imports nothing of ``rankfast.io`` (computing NDCG reads no file);
* learners never import the programs (``rankfast.cli``);
* the solvers (``rankfast.optimize``) import no loss and no learner: they see an objective
  through rankfast.optimize.protocols only; the losses (``rankfast.losses``) import no
  learner, file reader, model selection or program;
* only ``rankfast.cli`` ends the process (``sys.exit``, ``os._exit``, ``SystemExit``).
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rankfast"


def module_name(path, package):
    """The dotted name of a file of the package: rankfast/io/svmlight.py -> rankfast.io.svmlight."""
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(node, importer, is_package, modules):
    """The package's modules that one import statement names (the longest existing prefix)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = importer.split(".")
            base = base if is_package else base[:-1]
            base = base[:len(base) - node.level + 1]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        # from a.b import c: c may be a module of a.b or a name defined in it
        targets = [f"{stem}.{alias.name}" for alias in node.names] + [stem]
    found = set()
    for target in targets:
        parts = target.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        if parts:
            found.add(".".join(parts))
    return found


def import_graph(package=PACKAGE):
    """{module: {imported module: first line}} over every .py file of the package."""
    files = {module_name(path, package): path for path in package.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        edges = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in resolve(node, name, path.name == "__init__.py", files):
                    if target != name and not name.startswith(target + "."):
                        edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


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


def within(name, layer):
    return name == layer or name.startswith(layer + ".")


def crossings(graph, importers, forbidden):
    """Imports by a module of ``importers`` of a module of any ``forbidden`` layer."""
    return [f"{a} -> {b} (line {line})" for a, edges in sorted(graph.items()) if within(a, importers)
            for b, line in sorted(edges.items()) if any(within(b, layer) for layer in forbidden)]


GRAPH = import_graph()


def test_the_graph_is_read():
    assert {"rankfast.io.svmlight", "rankfast.learners.prsvm", "rankfast.metrics",
            "rankfast.cli.learn", "rankfast.data.validation"} <= set(GRAPH)
    assert "rankfast.optimize.newton" in GRAPH["rankfast.learners.prsvm"]
    assert "rankfast.data.queries" in GRAPH["rankfast.metrics"]


def test_the_package_imports_in_one_direction():
    found = circles(GRAPH)
    assert not found, "import circles: " + " | ".join(describe(GRAPH, c) for c in found)


@pytest.mark.parametrize("importers, forbidden", [
    ("rankfast.io", ["rankfast.learners", "rankfast.model_selection", "rankfast.cli",
                     "rankfast.dask", "rankfast.optimize"]),
    ("rankfast.metrics", ["rankfast.io", "rankfast.learners", "rankfast.cli"]),
    ("rankfast.data", ["rankfast.io", "rankfast.learners", "rankfast.cli"]),
    ("rankfast.optimize", ["rankfast.learners", "rankfast.losses", "rankfast.io", "rankfast.cli"]),
    ("rankfast.losses", ["rankfast.learners", "rankfast.model_selection", "rankfast.io",
                         "rankfast.cli", "rankfast.dask"]),
    ("rankfast.learners", ["rankfast.cli"]),
    ("rankfast.model_selection", ["rankfast.cli", "rankfast.io"]),
])
def test_the_layers_hold(importers, forbidden):
    assert crossings(GRAPH, importers, forbidden) == []


def exits(path):
    """Lines of a file that end the process: sys.exit, os._exit, exit(), raise SystemExit."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("exit", "_exit", "quit"):
                found.append(node.lineno)
        elif isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if getattr(raised, "id", None) == "SystemExit":
                found.append(node.lineno)
    return found


def test_only_the_programs_end_the_process():
    offenders = {str(path.relative_to(PACKAGE)): lines for path in PACKAGE.rglob("*.py")
                 if "cli" not in path.relative_to(PACKAGE).parts and (lines := exits(path))}
    assert offenders == {}
    assert exits(PACKAGE / "cli" / "__init__.py")         # the check sees the programs' exits


@pytest.mark.parametrize("files, expected", [
    ({"a.py": "from . import b\n", "b.py": "def f():\n    from .a import x\n"},
     [["pkg.a", "pkg.b"]]),
    ({"a.py": "from .b import y\n", "b.py": "import pkg.c\n", "c.py": "from pkg import a\n"},
     [["pkg.a", "pkg.b", "pkg.c"]]),
    ({"a.py": "from .b import y\n", "b.py": "from .c import z\n", "c.py": "import os\n"}, []),
    ({"sub/__init__.py": "from .x import f\n", "sub/x.py": "from ..a import g\n",
      "a.py": "from .sub import f\n"}, [["pkg.a", "pkg.sub", "pkg.sub.x"]]),
])
def test_a_circle_is_found_wherever_the_import_stands(tmp_path, files, expected):
    package = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    assert circles(import_graph(package)) == expected


def program_flags():
    """Every flag of the programs (the option tables of rankfast.cli.options)."""
    from rankfast.cli import options
    return {key for value in vars(options).values() if isinstance(value, dict)
            for key in value if isinstance(key, str) and key.startswith("-")}


def flag_mentions(path, flags):
    """(line, flag) of each flag named in a string of the file that is not a docstring.

    'pip install -e' and 'ulimit -v' are shell words, not the programs' flags.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            text = node.value
            for shell in ("pip install -e", "ulimit -v"):
                text = text.replace(shell, "")
            words = text.replace("(", " ").replace(")", " ").replace(",", " ").split()
            found += [(node.lineno, word) for word in words if word in flags]
    return found


def test_only_the_programs_name_flags():
    """The library's messages name parameters ('C', 'loss'); rank_learn adds the flags.

    svm_rank's model file names its kernel parameters by flag ("kernel parameter -g"),
    so the model file modules write those words as the format has them.
    """
    flags = program_flags()
    assert {"-c", "-l", "-#", "--normalize"} <= flags
    file_format = {"io/model_files.py", "io/_model_text.py"}
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        where = path.relative_to(PACKAGE)
        if where.parts[0] == "cli" or where.as_posix() in file_format:
            continue
        mentions = flag_mentions(path, flags)
        if mentions:
            offenders[where.as_posix()] = mentions
    assert offenders == {}


SHARED = ("rankfast._typing", "rankfast._estimator", "rankfast._kernels")   # importable anywhere


def room(module):
    """The subpackage (or top-level module) a module belongs to: rankfast.cli.learn -> rankfast.cli."""
    return ".".join(module.split(".")[:2])


def private_crossings(package=PACKAGE):
    """[(importer, line, imported)] of imports of another room's private module (a name of it
    after the room starting with "_") whose lines hold no comment saying why."""
    files = {module_name(path, package): path for path in package.rglob("*.py")}
    found = []
    for name, path in files.items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text, str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            said = any("#" in line for line in lines[node.lineno - 1:node.end_lineno])
            for target in resolve(node, name, path.name == "__init__.py", files):
                private = any(part.startswith("_") for part in target.split(".")[2:])
                if (private and room(target) != room(name) and not target.startswith(SHARED)
                        and not said):
                    found.append((name, node.lineno, target))
    return sorted(found)


def test_no_private_module_of_another_room_is_imported_without_a_reason():
    """A subpackage's private modules (names starting with "_") are its own: another room
    imports them only with a comment on the import line saying why (rankfast._typing,
    _estimator and _kernels are shared infrastructure, importable anywhere)."""
    assert private_crossings() == []


def test_a_private_crossing_is_found_and_a_comment_lets_it_pass(tmp_path):
    package = tmp_path / "rankfast"
    for part in ("io", "cli"):
        (package / part).mkdir(parents=True)
        (package / part / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "io" / "_stream.py").write_text("X = 1\n")
    (package / "io" / "svmlight.py").write_text("from ._stream import X\n")
    (package / "cli" / "classify.py").write_text(
        "def f():\n    from ..io._stream import X\n    return X\n")
    assert private_crossings(package) == [("rankfast.cli.classify", 2, "rankfast.io._stream")]
    (package / "cli" / "classify.py").write_text(
        "def f():\n    from ..io._stream import X  # the streaming reader, no public twin\n"
        "    return X\n")
    assert private_crossings(package) == []
