"""rank_classify (rankfast.cli.classify): predictions and stdout as svm_rank's, the streamed
reading, its metrics and summary, notes and errors."""

import functools
import gzip
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from data_makers import corrupt, data_lines, raw_data, write_data
from program_runs import launch_bytes as launch
from program_runs import read_text, without_runtime
from shared_paths import REFERENCE, require

from rankfast import RankSVM, load_svmlight, metrics, read_model
from rankfast.cli import classify as classify_cli
from rankfast.cli.classify import classify_main, classify_summary, metrics_report
from rankfast.cli.learn import learn_main
from rankfast.io import _stream as reader

ROOT = Path(__file__).resolve().parents[1]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


SYNTHETIC = REFERENCE / "synthetic"


GOLDEN = [("example3", "test.dat", f"model_c{c}.dat", f"pred_test_c{c}.txt", f"classify_test_c{c}.stdout", [])
          for c in ("0.01", "1", "3", "20", "3_l2", "3_t2")]


GOLDEN += [("example3", "train.dat", f"model_c{c}.dat", f"pred_train_c{c}.txt",
            f"classify_train_c{c}.stdout", [])
           for c in ("0.01", "1", "3", "20")]


GOLDEN += [("example3", "test.dat", "model_c3.dat", f"pred_test_c3_v{v}.txt", f"classify_test_c3_v{v}.stdout",
            ["-v", v]) for v in ("0", "3")]


GOLDEN += [("synthetic", f"{k}_test.dat.gz", f"{k}_c{c}.model", f"{k}_c{c}.test.pred.gz",
            f"{k}_classify_c{c}.stdout", []) for k in ("dense", "sparse") for c in ("0.01", "1", "20")]


@pytest.mark.parametrize("folder, data, model, pred, stdout, flags", GOLDEN, ids=lambda v: str(v))
def test_classify_matches_svm_rank_byte_for_byte(tmp_path, capsys, folder, data, model, pred, stdout, flags):
    base = require(REFERENCE / folder)
    out = tmp_path / "predictions"
    assert classify_main(flags + [str(base / data), str(base / model), str(out)]) == 0
    expected = gzip.open(base / pred, "rb").read() if pred.endswith(".gz") else (base / pred).read_bytes()
    assert out.read_bytes() == expected
    assert without_runtime(capsys.readouterr().out) == without_runtime((base / stdout).read_text())


def test_classify_extra_metrics(tmp_path, capsys):
    base = require(REFERENCE / "example3")
    assert classify_main(["--metrics", "--ndcg-at", "1,3", str(base / "test.dat"),
                          str(base / "model_c3.dat"), str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"NDCG@1 \(LETOR\): 1.0000\nNDCG@3 \(LETOR\): 1.0000\nERR@1: 0\.\d{4}\n"
                     r"ERR@3: 0\.\d{4}\nP@1: 1.0000\nP@3: 1.0000\nMAP: 1.0000\nMRR: 1.0000\n"
                     r"Pairwise accuracy: 1.0000\n", out)          # ERR < 1: R = (2^g - 1)/2^gmax


@pytest.mark.parametrize("argv", [[], ["x"], ["-z", "x", "y"], ["-v", "x", "y"], ["a", "b", "c", "d"]])
def test_classify_usage_errors_exit_2(capsys, argv):
    assert classify_main(argv) == 2
    assert capsys.readouterr().err.startswith("rank_classify: ")


def test_classify_errors_keep_old_predictions(tmp_path, capsys):
    base = require(REFERENCE / "example3")
    preds = tmp_path / "preds"
    preds.write_text("old\n")
    bad_model = tmp_path / "bad.dat"
    bad_model.write_text("SVM-light Version V6.01\n")
    assert classify_main([str(base / "test.dat"), str(bad_model), str(preds)]) == 1
    assert "bad.dat:1: not an SVM-light V6.20 model file" in capsys.readouterr().err
    assert preds.read_text() == "old\n"
    bad_model.write_bytes(b"\x7fELF\x02\xd0\xef\xbf\xbd\n")                # a binary file
    assert classify_main([str(base / "test.dat"), str(bad_model), str(preds)]) == 1
    assert "(first line '\\x7fELF\\x02\\xd0\\ufffd', expected" in capsys.readouterr().err
    assert classify_main([str(base / "test.dat"), str(base / "model_c3.dat"),
                          str(tmp_path / "missing" / "p")]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_classify_y3_matches_svm_rank_stdout(tmp_path, capsys):
    case = require(REFERENCE / "edge_cases" / "cls_verbosity3")
    argv = (case / "cmd.txt").read_text().split()[1:]
    assert argv == ["-v", "3", "-y", "3", "test.dat", "model.dat", "predictions"]
    assert classify_main(argv[:4] + [str(case / "test.dat"), str(case / "model.dat"),
                                     str(tmp_path / "predictions")]) == 0

    def comparable(text):
        return re.sub(r"Runtime \(without IO\) in cpu-seconds: [0-9.]+\n", "", text)
    assert comparable(capsys.readouterr().out) == comparable((case / "stdout.txt").read_text())
    assert (tmp_path / "predictions").read_bytes() == (case / "predictions").read_bytes()


def test_y_with_a_random_fourier_model_prints_no_svm_light_model_line(tmp_path, capsys, small):
    model = tmp_path / "m"
    assert learn_main(["-v", "0", "-t", "2", "--approx", "rff", "--landmarks", "8", str(small),
                       str(model)]) == 0
    capsys.readouterr()
    assert classify_main(["-y", "1", str(small), str(model), str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Reading model...done.\nReading test examples...Scanning examples...done\n"
                          "Reading examples into memory...OK. (6 examples read)\ndone.\n")


LINEAR_MODEL = ("SVM-light Version V6.20\n0 # kernel type\n3 # kernel parameter -d \n"
                "1 # kernel parameter -g \n1 # kernel parameter -s \n1 # kernel parameter -r \n"
                "empty# kernel parameter -u \n2 # highest feature index \n"
                "1 # number of training documents \n2 # number of support vectors plus 1 \n"
                "0 # threshold b, each following line is a SV (starting with alpha*y)\n{sv} #\n")


def test_nan_scores_end_rank_classify(tmp_path):
    """The issue's reproducer: w = 1e39 is inf in float32, inf * 0 = NaN; it hung forever."""
    model, test, preds = tmp_path / "m", tmp_path / "t", tmp_path / "p"
    model.write_text(LINEAR_MODEL.format(sv="1 1:1e39"))
    test.write_text("1 qid:1 1:0\n")
    run = launch("rank_classify", "--metrics", test, model, preds, capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert preds.read_text() == "-nan\n"                     # svm_rank's output for NaN
    assert b"Total Num Swappedpairs  :      0" in run.stdout


def test_nan_scores_rank_last_in_the_summary(tmp_path):
    """Two documents of one query: the higher label scores NaN (swapped), then finite (right)."""
    from rankfast.cli.classify import classify_summary
    nan = float("nan")
    swapped = classify_summary(np.array([nan, 0.0]), np.array([2.0, 1.0]), np.array([1, 1]))
    right = classify_summary(np.array([0.0, nan]), np.array([2.0, 1.0]), np.array([1, 1]))
    assert "Total Num Swappedpairs  :      1" in swapped
    assert "Total Num Swappedpairs  :      0" in right


def test_an_unwritable_prediction_path_fails_before_classifying(small, tmp_path, capsys):
    model = tmp_path / "m"
    assert learn_main(["-v", "0", str(small), str(model)]) == 0
    out = tmp_path / "missing" / "p"
    assert classify_main([str(small), str(model), str(out)]) == 1
    captured = capsys.readouterr()
    assert "Reading model" not in captured.out and "cannot write" in captured.err


def test_rank_classify_metrics_name_the_ndcg_convention(tmp_path, capsys):
    examples = EXAMPLES
    model = tmp_path / "m"
    assert learn_main(["-v", "0", str(examples / "train.dat"), str(model)]) == 0
    capsys.readouterr()
    for convention, label in (("standard", "standard"), ("letor", "LETOR")):
        assert classify_main(["--metrics", "--ndcg", convention, "--ndcg-at", "5",
                              str(examples / "test.dat"), str(model), str(tmp_path / "p")]) == 0
        out = capsys.readouterr().out
        scores = np.loadtxt(tmp_path / "p")
        test = load_svmlight(str(examples / "test.dat"))
        value = metrics.ndcg(scores, test.y, test.qid, k=5, convention=convention)
        assert f"NDCG@5 ({label}): {value:.4f}\n" in out
        assert f"ERR@5: {metrics.err(scores, test.y, test.qid, k=5):.4f}\n" in out
        assert f"MRR: {metrics.reciprocal_rank(scores, test.y, test.qid):.4f}\n" in out


@pytest.mark.parametrize("contiguous", [True, False])
def test_streamed_metrics_equal_the_whole_file_figures(tmp_path, capsys, monkeypatch, contiguous):
    """Small batches (and a query split in the file) give the figures of rankfast.metrics."""
    from rankfast.cli import classify as classify_cli
    monkeypatch.setattr(classify_cli._QueryFigures, "BATCH", 7)
    lines = (EXAMPLES / "test.dat").read_text().splitlines(keepends=True)[:300]
    if not contiguous:
        lines = lines[20:] + lines[:20]                   # the first query's lines split in two
        lines = lines[:150] + lines[280:] + lines[150:280]
    data, model = tmp_path / "t.dat", tmp_path / "m"
    data.write_text("".join(lines))
    assert learn_main(["-v", "0", str(EXAMPLES / "train.dat"), str(model)]) == 0
    assert classify_main(["--metrics", "--ndcg-at", "3,10", str(data), str(model),
                          str(tmp_path / "p")]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert ("are not contiguous" in captured.err) == (not contiguous)
    test = load_svmlight(str(data))
    expected = classify_cli.metrics_report(np.loadtxt(tmp_path / "p"), test.y, test.qid, [3, 10])
    assert expected in out and "ERR@10: " in expected and "NDCG@3 (LETOR): " in expected


@pytest.mark.parametrize("kind", ["query", "log"])
def test_rank_classify_applies_the_model_s_normalisation(tmp_path, capsys, monkeypatch, kind):
    X, y, qid = raw_data(n=200)
    train, test = tmp_path / "train.dat", tmp_path / "test.dat"
    write_data(train, X[:150], y[:150], qid[:150])
    write_data(test, X[150:], y[150:], qid[150:])
    model_path, predictions = tmp_path / "model", tmp_path / "predictions"
    assert learn_main(["-c", "1", "--normalize", kind, str(train), str(model_path)]) == 0
    header = model_path.read_text().splitlines()[1]
    assert f"normalize={kind}" in header and "not svm_rank_classify" in header
    # blocks of 7 documents: queries straddle them and are put back together
    from rankfast.io import _stream as reader
    monkeypatch.setattr(reader, "iter_svmlight", functools.partial(reader.iter_svmlight, rows=7))
    assert classify_main([str(test), str(model_path), str(predictions)]) == 0
    got = np.loadtxt(predictions)
    stored = read_model(str(model_path))
    from rankfast import load_svmlight
    data = load_svmlight(str(test))
    np.testing.assert_allclose(got, stored.predict(data.X, data.qid), atol=1e-7)
    fitted = RankSVM(C=1.0, normalize=kind).fit(
        load_svmlight(str(train), dtype="float32").features, y[:150], qid[:150])
    np.testing.assert_allclose(got, fitted.predict(data.X, data.qid), rtol=1e-5, atol=1e-6)


def test_rank_classify_refuses_a_normalisation_it_does_not_know(tmp_path, capsys):
    X, y, qid = raw_data()
    train, model_path = tmp_path / "train.dat", tmp_path / "model"
    write_data(train, X, y, qid)
    assert learn_main(["-c", "1", "--normalize", "log", str(train), str(model_path)]) == 0
    model_path.write_text(model_path.read_text().replace("normalize=log", "normalize=rank"))
    predictions = tmp_path / "predictions"
    assert classify_main([str(train), str(model_path), str(predictions)]) == 1
    err = capsys.readouterr().err
    assert str(model_path) in err and "normalize=rank" in err and "Traceback" not in err
    assert not predictions.exists()


def test_rank_classify_normalises_a_split_query_whole_where_it_can(tmp_path, capsys, monkeypatch):
    X, y, qid = raw_data(n=120)
    train, test = tmp_path / "train.dat", tmp_path / "test.dat"
    write_data(train, X, y, qid)
    split = np.r_[np.arange(0, 10), np.arange(60, 70), np.arange(10, 20)]      # qid 0's lines, twice
    with pytest.warns(UserWarning, match="svm_rank_learn refuses it"):   # on purpose
        write_data(test, X[split], y[split],
                   np.r_[np.zeros(10), np.ones(10), np.zeros(10)].astype(int))
    assert learn_main(["-v", "0", "--normalize", "query", str(train), str(tmp_path / "m")]) == 0
    capsys.readouterr()
    assert classify_main([str(test), str(tmp_path / "m"), str(tmp_path / "p")]) == 0
    err = capsys.readouterr().err
    assert "the lines of qid 0 are not contiguous" in err and "--normalize query scored" not in err
    data = load_svmlight(str(test))
    whole = read_model(str(tmp_path / "m")).predict(data.X, data.qid)      # qid 0 as one query
    np.testing.assert_allclose(np.loadtxt(tmp_path / "p"), whole, rtol=0, atol=5e-9)
    runs = read_model(str(tmp_path / "m")).predict(data.X, [0] * 10 + [1] * 10 + [2] * 10)
    assert np.abs(whole - runs).max() > 1e-3                                # and it matters
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(test.read_bytes()))))
    assert classify_main(["-", str(tmp_path / "m"), str(tmp_path / "p_pipe")]) == 0
    assert "--normalize query scored each run of qid 0's lines as its own query" in \
        capsys.readouterr().err                                         # a pipe: read once
    np.testing.assert_allclose(np.loadtxt(tmp_path / "p_pipe"), runs, rtol=0, atol=5e-9)


EXAMPLE3 = REFERENCE / "example3"


def test_rank_classify_names_a_corrupt_gzip_file(tmp_path, capsys):
    require(EXAMPLE3)
    path = tmp_path / "test.dat.gz"
    path.write_bytes(corrupt("gz", data_lines(3000).encode()))
    rc = classify_main([str(path), str(EXAMPLE3 / "model_c3.dat"), str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith(f"rank_classify: {path}: cannot read") and "Traceback" not in err
    assert err.count("\n") == 1 and not (tmp_path / "p").exists()


def test_rank_classify_v0_prints_what_svm_rank_prints(tmp_path, capsys):
    reference = require(EXAMPLE3 / "classify_test_c3_v0.stdout").read_text()
    rc = classify_main(["-v", "0", str(EXAMPLE3 / "test.dat"), str(EXAMPLE3 / "model_c3.dat"),
                            str(tmp_path / "p")])
    assert rc == 0 and capsys.readouterr().out == reference      # svm_rank keeps the NOTE


def test_rank_classify_refuses_a_cut_model_naming_file_and_line(models, tmp_path, capsys):
    content = models["linear"].read_bytes()
    cut = tmp_path / "cut"
    cut.write_bytes(content[:len(content) - 40])        # inside the support vector line
    predictions = tmp_path / "p"
    assert classify_main([str(EXAMPLES / "test.dat"), str(cut), str(predictions)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rank_classify: {cut}:12: ") and "cut short" in err
    assert err.count("\n") == 1 and not predictions.exists()


def test_the_largest_cut_offs_are_computed(tmp_path, capsys, models):
    big = "9223372036854775807"
    assert classify_main(["--metrics", "--ndcg-at", f"{big},3", str(EXAMPLES / "test.dat"),
                          str(models["linear"]), str(tmp_path / "p")]) == 0
    captured = capsys.readouterr()
    assert f"NDCG@{big} (LETOR): 0.0000" in captured.out and f"ERR@{big}: 0." in captured.out
    assert f"NDCG@{big} (LETOR) is the same for every ranking" in captured.err
    assert learn_main(["-c", "1,2", "--cv-metric", f"ndcg@{big}", str(EXAMPLES / "train.dat"),
                       str(tmp_path / "m")]) == 0
    captured = capsys.readouterr()       # LETOR's NDCG@k is 0 for every query: pairs choose
    assert "chosen by pair accuracy" in captured.out and f"NDCG@{big} (LETOR)" in captured.out
    assert f"every query has fewer than {big} documents" in captured.err


MODEL_OF_ONE_VECTOR = ("SVM-light Version V6.20\n0 # kernel type\n3 # kernel parameter -d \n"
                       "1 # kernel parameter -g \n1 # kernel parameter -s \n1 # kernel parameter -r \n"
                       "empty# kernel parameter -u \n3 # highest feature index \n"
                       "4 # number of training documents \n2 # number of support vectors plus 1 \n"
                       "0 # threshold b, each following line is a SV (starting with alpha*y)\n{sv} #\n")


@pytest.mark.parametrize("vector, alike", [("1", True), ("1 1:0 2:0", True), ("1 2:0.5", False)])
def test_rank_classify_says_when_every_document_scores_alike(tmp_path, capsys, vector, alike):
    """A model that gives every test document one score (all-zero weights; an RBF kernel about
    0 away from its support vectors) wrote a file of zeros and 100% swapped pairs in silence."""
    from rankfast.cli.classify import classify_main
    (tmp_path / "model").write_text(MODEL_OF_ONE_VECTOR.format(sv=vector))
    (tmp_path / "test").write_text("2 qid:1 1:1 2:3\n1 qid:1 1:2 2:1\n0 qid:2 2:5\n1 qid:2 1:4\n")
    assert classify_main([str(tmp_path / "test"), str(tmp_path / "model"),
                          str(tmp_path / "pred")]) == 0
    said = "every document got the same score (0): the model ranks nothing" in capsys.readouterr().err
    assert said == alike


def _query_normalised_model(tmp_path):
    from rankfast import write_model
    rng = np.random.default_rng(9)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60)
    model = RankSVM(C=1.0, normalize="query").fit(X, y, np.repeat(np.arange(6), 10)).to_model()
    write_model(model, tmp_path / "model")
    return str(tmp_path / "model")


def test_the_same_score_note_judges_the_scores_written_after_rescoring(tmp_path, capsys):
    """--normalize query and a query split in two runs: each run was scored on its own first
    (one document a run: all 0), then the file rescored query by query; no note then."""
    from rankfast.cli.classify import classify_main
    model = _query_normalised_model(tmp_path)
    (tmp_path / "test").write_text("1 qid:1 1:1 2:3 3:0\n0 qid:2 1:5 2:1 3:2\n"
                                   "0 qid:1 1:2 2:1 3:4\n1 qid:2 1:4 2:0 3:1\n")
    assert classify_main([str(tmp_path / "test"), model, str(tmp_path / "pred")]) == 0
    assert len(set((tmp_path / "pred").read_text().split())) > 1
    assert "the same score" not in capsys.readouterr().err


def test_the_same_score_note_names_one_document_queries_for_query_normalised_models(tmp_path,
                                                                                      capsys):
    from rankfast.cli.classify import classify_main
    model = _query_normalised_model(tmp_path)
    (tmp_path / "test").write_text("1 qid:1 1:1 2:3\n0 qid:2 1:5 2:1\n1 qid:3 1:4 2:0\n")
    assert classify_main([str(tmp_path / "test"), model, str(tmp_path / "pred")]) == 0
    assert "each query here has one document" in capsys.readouterr().err


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
                              "rankfast.losses.erfc"))
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
