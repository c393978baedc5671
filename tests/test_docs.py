"""The documentation (docs/) builds with warnings as errors, and its examples run.

The build needs Sphinx, numpydoc and myst-parser (``pip install -e ".[docs]"``;
the test extra has them too); without Sphinx the build test skips, saying so.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from shared_paths import DATA, require

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GUIDE = DOCS / "guide"


def load_example(name):
    path = DOCS / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"docs_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_build_with_warnings_as_errors(tmp_path):
    if importlib.util.find_spec("sphinx") is None:
        pytest.skip("Sphinx is not importable: pip install -e '.[docs]' to build the documentation")
    out = tmp_path / "html"
    command = [sys.executable, "-m", "sphinx", "-W", "-b", "html", str(DOCS), str(out)]
    built = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-5000:]
    pages = {path.relative_to(out).as_posix() for path in out.rglob("*.html")}
    assert {"index.html", "api.html", "changelog.html", "contributing.html",
            "guide/programs.html", "guide/files.html", "guide/learners.html",
            "guide/normalize.html", "guide/model_selection.html", "guide/threads.html",
            "guide/dask.html", "guide/python_api.html", "examples/letor_mq2008.html",
            "examples/cv_plot.html", "examples/dask_local.html"} <= pages
    api = (out / "api.html").read_text()
    for name in ("rankfast.learners.prsvm.RankSVM", "rankfast.learners.greedy.GreedyRankRLS",
                 "rankfast.sklearn.RankSVM", "rankfast.metrics.ndcg", "rankfast.plot.cv_curve"):
        assert f'id="{name}"' in api, name                   # generated from the docstrings
    programs = (out / "guide" / "programs.html").read_text()
    assert "--normalize" in programs and 'href="model_selection.html#model-selection"' in programs
    assert "examples/letor_mq2008.sh" in (out / "examples" / "letor_mq2008.html").read_text()
    assert {f"guide/{page.stem}.html" for page in GUIDE.glob("*.md")} <= pages
    assert {"guide/install.html", "guide/svm_rank.html", "guide/metrics.html",
            "guide/export.html", "guide/performance.html"} <= pages


def test_readme_says_how_to_build_the_docs():
    readme = (ROOT / "README.md").read_text()
    assert "python -m sphinx -W -b html docs docs/_build/html" in readme
    assert readme.index("docs/_build/html") < readme.index("## The programs")


def test_readme_is_one_page_that_points_to_the_guide():
    # The docs site owns the manual: the README stays short, links every guide page, and
    # no page of the site includes it (a heading renamed in the README broke the docs).
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) <= 12 * 1024, f"README.md is {len(readme)} bytes"
    index = (DOCS / "index.rst").read_text()
    for page in sorted(GUIDE.glob("*.md")):
        assert f"(docs/guide/{page.name})".encode() in readme, page.name
        assert f"guide/{page.stem}\n" in index, page.name
    for page in sorted(DOCS.rglob("*")):
        if page.suffix in (".md", ".rst") and "_build" not in page.parts:
            assert not re.search(r"include\S*\s+\S*README\.md", page.read_text()), page


def test_guide_python_snippets_run_from_any_directory(tmp_path):
    """Every self-contained ```python block of the guide, run in an empty directory (the
    README's are run by test_doctests.py). A block that connects to a running cluster
    (``Client("tcp://HOST:...")``) needs one and is left out."""
    blocks = [(page.name, block) for page in sorted(GUIDE.glob("*.md"))
              for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)]
    assert blocks
    for name, block in blocks:
        if 'Client("tcp://' in block:
            continue
        if "sklearn" in block and importlib.util.find_spec("sklearn") is None:
            continue                                       # pip install rankfast[sklearn]
        done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, f"{name}:\n{block}\n{done.stderr}"


def test_cv_plot_example_writes_the_curve(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = load_example("cv_plot").main(str(tmp_path / "cv.png"))
    assert Path(out).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    printed = capsys.readouterr().out
    assert "one-standard-error rule" in printed and re.search(r"chosen C = \S+", printed)


def test_dask_example_runs_on_loopback_and_stops(tmp_path):
    pytest.importorskip("distributed")
    run = subprocess.run([sys.executable, str(DOCS / "examples" / "dask_local.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    found = re.search(r"on 2 workers; weights within (\S+) \(relative\) of one process; "
                      r"(\d+) documents scored", run.stdout)
    assert found, run.stdout
    assert float(found.group(1)) < 1e-8 and int(found.group(2)) > 0


def test_letor_example_runs_the_protocol_on_mq2008(tmp_path):
    mq2008 = require(DATA / "mq2008")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    if shutil.which("rank_learn", path=env["PATH"]) is None:
        pytest.skip("rank_learn is not installed beside this Python (pip install -e .)")
    script = ROOT / "examples" / "letor_mq2008.sh"
    work = tmp_path / "fold1"                            # the script makes it
    run = subprocess.run(["sh", str(script), str(mq2008), str(work)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert re.search(r"^Validation \(\S*vali.txt, \d+ queries\)", run.stdout, re.M)
    assert run.stdout.count("<- chosen") == 1
    ndcg = float(re.search(r"^NDCG@10 \(LETOR\): (\S+)$", run.stdout, re.M).group(1))
    assert 0.15 < ndcg < 0.3                              # LETOR's RankSVM baseline: 0.2279
    test_documents = len((work / "test.txt").read_text().splitlines())
    assert len((work / "predictions").read_text().splitlines()) == test_documents
    # The guide shows this run's table and test figures: they must be today's.
    guide = (GUIDE / "model_selection.md").read_text()
    assert _table_after("Validation (", run.stdout) == _table_after("Validation (vali.txt", guide)
    figures = re.search(r"on test.txt NDCG@10 \(LETOR\) (\S+), MAP (\S+)\.", guide).groups()
    assert figures == (f"{ndcg:.4f}", re.search(r"^MAP: (\S+)$", run.stdout, re.M).group(1))
    cv = subprocess.run([os.path.join(os.path.dirname(sys.executable), "rank_learn"), "-c",
                         "0.01,0.1,1,10,100", "train.txt", "model"], cwd=work, env=env,
                        capture_output=True, text=True, timeout=300)
    assert cv.returncode == 0, cv.stderr[-3000:]
    assert (_table_after("Cross-validation (5 folds", cv.stdout)
            == _table_after("Cross-validation (5 folds", guide))


def _table_after(header, text):
    """The table whose title line starts with ``header``: its column line and its rows (the
    lines with a ±)."""
    lines = text[text.index(header):].splitlines()[1:]
    rows = lines[1:]
    return lines[:1] + rows[:next(i for i, line in enumerate(rows + [""]) if "±" not in line)]
