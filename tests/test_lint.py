"""The project passes its linter (ruff, configured in pyproject.toml) and its type check (mypy).

Both are in the test extra (pip install -e ".[test]"); a test skips, saying
why, when its tool is not installed.
"""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_tool(module, *args):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed: pip install -e '.[test]' to run it")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


# The project's own Python: a virtual environment made inside the checkout under any name
# (.venv-fresh, env3, ...) holds other projects' code, which ruff's default excludes miss.
LINTED = ("rankfast", "tests", "benchmarks", "examples", "docs", "setup.py")


def test_ruff_finds_nothing():
    paths = [name for name in LINTED if (ROOT / name).exists()]
    done = run_tool("ruff", "check", "--no-cache", "--output-format", "concise", *paths)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]


def test_mypy_finds_nothing_in_the_package():
    done = run_tool("mypy", "--no-incremental")          # files and settings: pyproject.toml
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]


def unannotated_public_functions(package):
    """'module:line name' of every public function and method (of a public class) whose
    parameters (but self and cls) or return value lack an annotation."""
    import ast
    missing = []
    for path in sorted(package.glob("*.py")):
        def visit(body, in_class, path=path):
            for node in body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    visit(node.body, True)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if node.name.startswith("_") and node.name not in ("__init__", "__call__"):
                        continue
                    args = node.args
                    params = args.posonlyargs + args.args
                    static = any(getattr(d, "id", None) == "staticmethod" for d in node.decorator_list)
                    if in_class and not static and params:
                        params = params[1:]                   # self or cls
                    params += args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
                    if node.returns is None or any(p.annotation is None for p in params):
                        missing.append(f"{path.stem}:{node.lineno} {node.name}")
        visit(ast.parse(path.read_text(encoding="utf-8")).body, False)
    return missing


def test_every_public_function_and_method_is_annotated(tmp_path):
    assert unannotated_public_functions(ROOT / "rankfast") == []
    (tmp_path / "m.py").write_text("def f(x: int) -> int:\n    return x\n\n\n"
                                   "class C:\n    def g(self, y) -> None:\n        pass\n\n"
                                   "    def _h(self, z):\n        pass\n\n\ndef _p(q):\n    pass\n")
    assert unannotated_public_functions(tmp_path) == ["m:6 g"]


def test_the_package_says_it_is_typed():
    assert (ROOT / "rankfast" / "py.typed").exists()               # PEP 561's marker,
    assert 'rankfast = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()   # in the wheel
