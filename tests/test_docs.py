"""The documentation (docs/) builds with warnings as errors, its examples run, and the
figures it shows are a run's (the code blocks of every page run in test_docs_code_blocks.py).

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
                 "rankfast.sklearn.RankSVM", "rankfast.metrics.ndcg", "rankfast.plot.cv_curve",
                 "rankfast.clicks.simulate_clicks", "rankfast.clicks.counterfactual_metrics"):
        assert f'id="{name}"' in api, name                   # generated from the docstrings
    programs = (out / "guide" / "programs.html").read_text()
    assert "--normalize" in programs and 'href="model_selection.html#model-selection"' in programs
    for program in ("svm_proprank_learn", "svm_proprank_classify", "rank_simulate_clicks", "--clip"):
        assert program in programs, program
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
    # The guide shows this run's table and test figures: they must be today's, to within
    # what differs between CPUs (FIGURE_TOLERANCE).
    guide = (GUIDE / "model_selection.md").read_text()
    _assert_same_table(_table_after("Validation (", run.stdout),
                       _table_after("Validation (vali.txt", guide))
    figures = re.search(r"on test.txt NDCG@10 \(LETOR\) (\S+), MAP (\S+)\.", guide).groups()
    run_map = float(re.search(r"^MAP: (\S+)$", run.stdout, re.M).group(1))
    assert [float(figure) for figure in figures] == pytest.approx([ndcg, run_map],
                                                                  abs=FIGURE_TOLERANCE), figures
    cv = subprocess.run([os.path.join(os.path.dirname(sys.executable), "rank_learn"), "-c",
                         "0.01,0.1,1,10,100", "train.txt", "model"], cwd=work, env=env,
                        capture_output=True, text=True, timeout=300)
    assert cv.returncode == 0, cv.stderr[-3000:]
    _assert_same_table(_table_after("Cross-validation (5 folds", cv.stdout),
                       _table_after("Cross-validation (5 folds", guide))


# The tables print 4 decimals of means and standard deviations over folds of models that
# BLAS kernels picked per CPU (and their summation order) compute a few units in the 16th
# digit apart: a figure near a rounding boundary prints one unit of its 4th decimal apart
# on another CPU (0.0596 / 0.0595 seen).  Two units of the last printed digit allow that and
# rounding both ways; any real change to a learner, a metric or the folds moves a figure
# by more (a query's NDCG changes the mean of a fold of ~30 queries by ~1e-3).
FIGURE_TOLERANCE = 2e-4
_FIGURE = re.compile(r"(-?\d+\.\d+) ± (\d+\.\d+)")


def _assert_same_table(printed, shown):
    """The run's table (``printed``) is the guide's (``shown``): the same column line and, row
    by row, the same C, layout and ``<- chosen`` marker, each mean ± sd within FIGURE_TOLERANCE."""
    assert len(printed) == len(shown), (printed, shown)
    for run_line, doc_line in zip(printed, shown):
        layout = [_FIGURE.sub("# ± #", line) for line in (run_line, doc_line)]
        assert layout[0] == layout[1], (run_line, doc_line)        # C, columns, marker, widths
        figures = [[float(x) for pair in _FIGURE.findall(line) for x in pair]
                   for line in (run_line, doc_line)]
        assert figures[0] == pytest.approx(figures[1], abs=FIGURE_TOLERANCE), (run_line, doc_line)


def _table_after(header, text):
    """The table whose title line starts with ``header``: its column line and its rows (the
    lines with a ±)."""
    lines = text[text.index(header):].splitlines()[1:]
    rows = lines[1:]
    return lines[:1] + rows[:next(i for i, line in enumerate(rows + [""]) if "±" not in line)]
