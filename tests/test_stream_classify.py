"""rank_classify streams linear models: same predictions and summary as the whole-file
path and as svm_rank, for any block size, non-contiguous queries, pipes; no scipy."""

import functools
import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from program_runs import without_runtime
from shared_paths import REFERENCE, require

from rankfast import load_svmlight, read_model
from rankfast.cli import classify as classify_cli
from rankfast.cli.classify import classify_main, classify_summary, metrics_report
from rankfast.io import _stream as reader

ROOT = Path(__file__).resolve().parents[1]


EXAMPLE3 = REFERENCE / "example3"


SYNTHETIC = REFERENCE / "synthetic"


def read_text(path):
    return gzip.open(path, "rt").read() if str(path).endswith(".gz") else open(path).read()


@pytest.fixture(params=[2048, 7], ids=["blocks_2048", "blocks_7"])
def block_rows(request, monkeypatch):
    """Run each test with the default block size and with tiny blocks (runs span blocks)."""
    monkeypatch.setattr(reader, "iter_svmlight",
                        functools.partial(reader.iter_svmlight, rows=request.param, entries=16))
    monkeypatch.setattr(classify_cli._QueryFigures, "BATCH", 5 if request.param < 100 else 1 << 16)
    return request.param


@pytest.mark.parametrize("test_name, model_name, pred_name, stdout_name", [
    ("example3/test.dat", "example3/model_c3.dat", "example3/pred_test_c3.txt",
     "example3/classify_test_c3.stdout"),
    ("example3/train.dat", "example3/model_c1.dat", "example3/pred_train_c1.txt",
     "example3/classify_train_c1.stdout"),
    ("synthetic/sparse_test.dat.gz", "synthetic/sparse_c1.model", "synthetic/sparse_c1.test.pred.gz",
     "synthetic/sparse_classify_c1.stdout"),
])
def test_streamed_predictions_and_summary_are_svm_rank_s(tmp_path, capsys, block_rows, test_name,
                                                         model_name, pred_name, stdout_name):
    require(REFERENCE / model_name)
    out = tmp_path / "pred"
    rc = classify_main([str(REFERENCE / test_name), str(REFERENCE / model_name), str(out)])
    assert rc == 0
    assert out.read_text() == read_text(REFERENCE / pred_name)
    assert without_runtime(capsys.readouterr().out) == \
        without_runtime(read_text(REFERENCE / stdout_name))


def shuffled_queries(tmp_path):
    """example3's training file with its queries interleaved (qid 1, 2, 1, 3, 2, ...)."""
    lines = require(EXAMPLE3 / "train.dat").read_text().splitlines(True)
    docs = [line for line in lines if not line.startswith("#")]
    order = [0, 4, 1, 8, 5, 2, 9, 6, 3, 10, 7, 11]
    path = tmp_path / "interleaved.dat"
    path.write_text("# interleaved\n" + "".join(docs[i] for i in order))
    return path


def expected_output(path, model_path, cutoffs=(1, 3, 10)):
    ds = load_svmlight(str(path))
    scores = read_model(str(model_path)).predict(ds.X)
    return (classify_summary(scores, ds.y, ds.qid) +
            metrics_report(scores, ds.y, ds.qid, cutoffs),
            "".join("%.8f\n" % s for s in scores))


def test_non_contiguous_queries_from_a_file(tmp_path, capsys, block_rows):
    path = shuffled_queries(tmp_path)
    model_path = EXAMPLE3 / "model_c3.dat"
    summary, predictions = expected_output(path, model_path)
    rc = classify_main(["--metrics", "--ndcg-at", "1,3,10", str(path), str(model_path),
                            str(tmp_path / "pred")])
    out, err = capsys.readouterr()
    assert rc == 0 and out.endswith(summary) and (tmp_path / "pred").read_text() == predictions
    assert "qid 1 are not contiguous" in err


@pytest.mark.parametrize("interleave", [False, True])
def test_standard_input_and_compressed_pipes(tmp_path, interleave):
    require(EXAMPLE3)
    path = shuffled_queries(tmp_path) if interleave else EXAMPLE3 / "train.dat"
    model_path = EXAMPLE3 / "model_c3.dat"
    summary, predictions = expected_output(path, model_path)
    packed = gzip.compress(path.read_bytes())
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from rankfast.cli.classify import classify_main; "
         "sys.exit(classify_main(sys.argv[1:]))", "--metrics", "--ndcg-at", "1,3,10", "-",
         str(model_path), str(tmp_path / "pred")],
        input=packed, capture_output=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().endswith(summary)
    assert (tmp_path / "pred").read_text() == predictions


def test_an_error_mid_stream_names_the_line_and_leaves_no_output(tmp_path, capsys, block_rows):
    require(EXAMPLE3)
    lines = (EXAMPLE3 / "train.dat").read_text().splitlines(True)
    lines[9] = "1 qid:3 1:1 1:2\n"
    path = tmp_path / "bad.dat"
    path.write_text("".join(lines))
    (tmp_path / "pred").write_text("previous")
    rc = classify_main([str(path), str(EXAMPLE3 / "model_c3.dat"), str(tmp_path / "pred")])
    err = capsys.readouterr().err
    assert rc == 1 and f"{path}:10: feature index in '1:2'" in err
    assert (tmp_path / "pred").read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.dat", "pred"]


def test_a_linear_rank_classify_run_imports_no_scipy_no_learner_and_without_metrics_no_numpy(
        tmp_path):
    require(EXAMPLE3)
    code = ("import sys\nfrom rankfast.cli.classify import classify_main\n"
            "rc = classify_main(sys.argv[1:])\n"
            "print(' '.join(sorted(sys.modules)), file=sys.stderr)\nsys.exit(rc)\n")
    for extra in ([], ["--metrics"]):
        result = subprocess.run(
            [sys.executable, "-c", code, *extra, str(EXAMPLE3 / "test.dat"),
             str(EXAMPLE3 / "model_c3.dat"), str(tmp_path / "pred")],
            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
        assert result.returncode == 0, result.stderr
        modules = set(result.stderr.split())
        assert "rankfast.cli" in modules and "rankfast._kernels._svmlight" in modules
        unwanted = sorted(m for m in modules if m.split(".")[0] == "scipy" or
                          m.startswith("numpy.f2py") or (not extra and m == "numpy") or m in (
                              "rankfast.cli.learners", "rankfast.learners.kernel_approx",
                              "rankfast.learners.prsvm", "rankfast.learners.rankrls",
                              "rankfast.learners.greedy", "rankfast.learners.rankncg",
                              "rankfast.learners.erfc"))
        assert unwanted == []


def test_a_linear_rank_classify_run_adds_none_of_the_slow_standard_modules(tmp_path):
    """re, enum (through signal), typing, contextlib + functools, tempfile, ...: each costs
    1-10 ms of a 30 ms run; none is imported unless the interpreter had it already."""
    require(EXAMPLE3)
    listing = "import sys\nprint(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    env = dict(os.environ, PYTHONPATH=ROOT)
    bare = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True,
                          env=env, timeout=120)
    run = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom rankfast.cli.classify import classify_main\n"
         "rc = classify_main(sys.argv[1:])\n" + listing + "sys.exit(rc)\n",
         str(EXAMPLE3 / "test.dat"), str(EXAMPLE3 / "model_c3.dat"), str(tmp_path / "pred")],
        capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    added = set(run.stderr.split()) - set(bare.stderr.split())
    assert "rankfast.cli" in added
    slow = {"re", "enum", "signal", "typing", "contextlib", "functools", "tempfile", "struct",
            "numbers", "inspect", "importlib.util", "threading", "numpy", "scipy"}
    assert sorted(added & slow) == []


def test_the_programs_skip_the_interpreter_teardown_and_lose_nothing(tmp_path):
    """classify_command / learn_command end with os._exit once their files are on disk:
    the exit status, the predictions and the output through a pipe are those of a normal
    exit; with an atexit handler registered, the normal exit runs it.  (-S: no site, whose
    .pth files may register atexit handlers of their own.)"""
    require(EXAMPLE3)
    probe = ("import sys, atexit\n"
             "class Probe:\n"
             "    def __del__(self):\n"
             "        sys.stderr.write('teardown\\n')\n"
             "probe = Probe()\n"
             "if sys.argv.pop(1) == 'atexit':\n"
             "    atexit.register(lambda: sys.stderr.write('atexit\\n'))\n"
             "from rankfast.cli import classify_command\n"
             "classify_command()\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    expected = tmp_path / "expected"
    assert classify_main(["-v", "0", str(EXAMPLE3 / "test.dat"),
                              str(EXAMPLE3 / "model_c3.dat"), str(expected)]) == 0
    for mode in ("plain", "atexit"):
        pred = tmp_path / f"pred_{mode}"
        run = subprocess.run([sys.executable, "-S", "-c", probe, mode, str(EXAMPLE3 / "test.dat"),
                              str(EXAMPLE3 / "model_c3.dat"), str(pred)],
                             capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 0
        assert without_runtime(run.stdout) == \
            without_runtime(read_text(EXAMPLE3 / "classify_test_c3.stdout"))
        assert pred.read_bytes() == expected.read_bytes()
        if mode == "plain":
            assert run.stderr == ""                      # no teardown: Probe.__del__ never ran
        else:
            assert run.stderr.split() == ["atexit", "teardown"]
    failed = subprocess.run([sys.executable, "-S", "-c", probe, "plain",
                             str(tmp_path / "missing.dat"),
                             str(EXAMPLE3 / "model_c3.dat"), str(tmp_path / "p")],
                            capture_output=True, text=True, env=env, timeout=120)
    assert failed.returncode == 1 and "missing.dat" in failed.stderr
    assert "teardown" not in failed.stderr


def test_rank_learn_imports_only_the_learner_it_runs(tmp_path):
    require(EXAMPLE3)
    code = ("import sys\nfrom rankfast.cli.learn import learn_main\n"
            "rc = learn_main(sys.argv[1:])\n"
            "print(' '.join(sorted(sys.modules)), file=sys.stderr)\nsys.exit(rc)\n")
    result = subprocess.run(
        [sys.executable, "-c", code, "-v", "0", "-c", "1", str(EXAMPLE3 / "train.dat"),
         str(tmp_path / "model")], capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert result.returncode == 0, result.stderr
    modules = set(result.stderr.split())
    assert "rankfast.learners.prsvm" in modules
    assert not modules & {"rankfast.learners.kernel_approx", "rankfast.learners.rankrls",
                          "rankfast.learners.greedy", "rankfast.learners.rankncg",
                          "rankfast.learners.erfc", "rankfast.learners.svmrank", "scipy.linalg",
                          "scipy.special"}


@pytest.mark.parametrize("largest", [40, 200])   # pair by pair up to 64 documents, sorted above
def test_the_stream_counts_swapped_pairs_as_rankfast_metrics_does(largest):
    """count_swapped_runs (no numpy: each query sorted in C) against metrics.swapped_pairs."""
    from rankfast import metrics
    from rankfast._kernels import _swapped
    rng = np.random.default_rng(largest)
    for _ in range(100):
        sizes = rng.integers(1, largest, rng.integers(1, 6))
        n = int(sizes.sum())
        scores = np.round(rng.standard_normal(n), 1)
        scores[rng.random(n) < 0.1] = np.nan
        labels = rng.integers(0, 4, n).astype(float)
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        swapped, pairs = np.zeros(len(sizes), np.int64), np.zeros(len(sizes), np.int64)
        _swapped.count_swapped_runs(scores, labels, starts, swapped, pairs)
        expected = metrics.swapped_pairs(scores, labels, np.repeat(np.arange(len(sizes)), sizes))
        assert swapped.tolist() == expected[0].tolist() and pairs.tolist() == expected[1].tolist()


def test_run_starts_finds_where_each_run_of_equal_qid_begins():
    from rankfast._kernels import _swapped
    rng = np.random.default_rng(2)
    for n in (0, 1, 2, 50, 1000):
        qid = np.repeat(rng.integers(0, 4, n), rng.integers(1, 4, n))[:n].astype(np.int64)
        out = np.full(max(n, 1), -1, dtype=np.int64)
        k = _swapped.run_starts(qid, out)
        expected = np.flatnonzero(np.concatenate(([True], qid[1:] != qid[:-1]))) if n else []
        assert out[:k].tolist() == list(expected)
