"""Every Python code block of the documentation runs: the README and docs/**/*.md, *.rst.

A block is a Markdown fence ```` ```python ```` (``py``, ``{code-block} python``) or
```` ```pycon ````, a reStructuredText ``.. code-block:: python`` (``code``,
``sourcecode``; ``pycon``), a literal block or a doctest block of ``>>>`` lines.
A script block runs as ``python -c`` in an empty directory; a ``>>>`` block runs as
a doctest there (its printed output must match, with ``...`` and any whitespace).

A block that needs an optional library (scikit-learn, dask, matplotlib, onnx) skips
when it is not installed; a block that needs the shared data sets (tests/shared_paths.py)
gets its files in the working directory (SETUP) and skips without them. A block that
cannot run here at all says so in its first line, visible to readers:
``# not run by the tests: <why>``, e.g. that it needs a cluster's address; such
exclusions are counted (MAX_NOT_RUN).
"""
import gzip
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from shared_paths import DATA, require

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
NOT_RUN = re.compile(r"^\s*# not run by the tests: (\S.*)$")
MAX_NOT_RUN = 2

# Optional libraries, by the top-level module a block imports (rankfast's own modules
# that import them on use included).
OPTIONAL = {"sklearn": "sklearn", "dask": "dask", "distributed": "distributed",
            "matplotlib": "matplotlib", "onnx": "onnx", "pandas": "pandas",
            "rankfast.sklearn": "sklearn", "rankfast.dask": "distributed",
            "rankfast.plot": "matplotlib"}

_PYTHON = {"python", "py", "python3"}
_PYCON = {"pycon"}


def documentation_pages():
    pages = [ROOT / "README.md"]
    pages += sorted(p for p in DOCS.rglob("*") if p.suffix in (".md", ".rst")
                    and "_build" not in p.relative_to(DOCS).parts)
    return pages


def markdown_blocks(text):
    """(line, kind, code) of every fenced block in Python or of ``>>>`` lines."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^(\s*)(`{3,}|~{3,})\s*(\{code-block\}\s*)?([\w+-]*)", lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, language = opening.group(1), opening.group(2), opening.group(4).lower()
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        body = [line for line in body if not re.match(r"^:\w[\w-]*:", line)]  # MyST options
        yield from _classified(i + 1, language, "\n".join(body) + "\n")
        i = j + 1


def rst_blocks(text):
    """(line, kind, code) of every Python code-block, and of every literal or doctest block
    of ``>>>`` lines."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        indent = len(line) - len(line.lstrip())
        directive = re.match(r"^\s*\.\. (?:code-block|code|sourcecode)::\s*(\S*)", line)
        if directive or (line.rstrip().endswith("::") and not line.lstrip().startswith("..")):
            j = i + 1
            while j < len(lines) and re.match(r"^\s+:\w[\w-]*:", lines[j]):    # options
                j += 1
            start, body, j = _indented_body(lines, j, indent)
            language = directive.group(1).lower() if directive else ""
            if body.strip():
                yield from _classified(start, language, body)
            i = max(j, i + 1)
        elif line.lstrip().startswith(">>>") and (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and lines[j].strip():
                j += 1
            yield i + 1, "doctest", "\n".join(x[indent:] for x in lines[i:j]) + "\n"
            i = j
        else:
            i += 1


def _indented_body(lines, j, indent):
    """(first line number, text, index after) of the block indented deeper than ``indent``."""
    while j < len(lines) and not lines[j].strip():
        j += 1
    start, body = j + 1, []
    while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
        body.append(lines[j])
        j += 1
    depth = min((len(x) - len(x.lstrip()) for x in body if x.strip()), default=0)
    return start, "\n".join(x[depth:] for x in body).rstrip() + "\n", j


def _classified(line, language, code):
    if code.lstrip().startswith(">>>") and language in _PYTHON | _PYCON | {""}:
        yield line, "doctest", code
    elif language in _PYCON:
        yield line, "doctest", code
    elif language in _PYTHON:
        yield line, "script", code


def all_blocks():
    blocks = []
    for page in documentation_pages():
        text = page.read_text(encoding="utf-8")
        found = rst_blocks(text) if page.suffix == ".rst" else markdown_blocks(text)
        name = page.relative_to(ROOT).as_posix()
        blocks += [(f"{name}:{line}", kind, code) for line, kind, code in found]
    return blocks


BLOCKS = all_blocks()


# ------------------------------------------------------- what a block needs in its directory

def _mq2008_fold1(work):
    """LETOR 4.0's MQ2008 fold 1 as examples/letor_mq2008.sh makes it: train.txt (S1-S3),
    vali.txt (S4), test.txt (S5)."""
    mq2008 = require(DATA / "mq2008")
    parts = {"train.txt": ("S1", "S2", "S3"), "vali.txt": ("S4",), "test.txt": ("S5",)}
    for name, subsets in parts.items():
        with open(work / name, "wb") as out:
            for subset in subsets:
                out.write(gzip.decompress((mq2008 / f"{subset}.txt.gz").read_bytes()))


SETUP = {"docs/examples/letor_mq2008.rst": _mq2008_fold1}


def _imported_modules(code, kind):
    if kind == "doctest":
        code = "\n".join(line.strip()[4:] for line in code.splitlines()
                         if line.strip().startswith((">>> ", "... ")))
    return set(re.findall(r"^\s*(?:from|import)\s+([\w.]+)", code, re.M))


def _skip_without_optional_libraries(code, kind):
    for module in sorted(_imported_modules(code, kind)):
        for prefix, library in OPTIONAL.items():
            if (module == prefix or module.startswith(prefix + ".")) \
                    and importlib.util.find_spec(library) is None:
                pytest.skip(f"needs {library}, which is not installed (pip install -e '.[test]')")


_DOCTEST_RUNNER = """
import doctest, sys
source = sys.stdin.read()
test = doctest.DocTestParser().get_doctest(source, {"__name__": "__main__"}, NAME, NAME, 0)
runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
runner.run(test)
sys.exit(1 if runner.failures else 0)
"""


def test_the_documentation_has_python_blocks():
    where = {name.rsplit(":", 1)[0] for name, _, _ in BLOCKS}
    assert {"README.md", "docs/guide/python_api.md", "docs/guide/clicks.md",
            "docs/examples/letor_mq2008.rst"} <= where, where


def test_few_blocks_are_left_out_and_each_says_why():
    left_out = [(name, NOT_RUN.match(code.splitlines()[0])) for name, _, code in BLOCKS
                if NOT_RUN.match(code.splitlines()[0])]
    assert len(left_out) <= MAX_NOT_RUN, [name for name, _ in left_out]
    assert all(len(why.group(1)) > 10 for _, why in left_out)


@pytest.mark.parametrize("name, kind, code", BLOCKS, ids=[name for name, _, _ in BLOCKS])
def test_block_runs(name, kind, code, tmp_path):
    not_run = NOT_RUN.match(code.splitlines()[0])
    if not_run:
        pytest.skip(f"marked in the page: {not_run.group(1)}")
    _skip_without_optional_libraries(code, kind)
    setup = SETUP.get(name.rsplit(":", 1)[0])
    if setup is not None:
        setup(tmp_path)
    if kind == "doctest":
        command = [sys.executable, "-c", _DOCTEST_RUNNER.replace("NAME", repr(name))]
    else:
        command = [sys.executable, "-c", code]
    done = subprocess.run(command, cwd=tmp_path, input=code if kind == "doctest" else None,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{name} ({kind}):\n{code}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
