"""--normalize and normalize=: the transforms against brute force, folding, and rank_classify."""

import functools
import io
import sys

import numpy as np
import pytest
from data_makers import raw_data
from reference_impl import query_min_max_brute as brute_query_min_max

from rankfast import RankSVM, dump_svmlight, load_svmlight, read_model
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main
from rankfast.data.normalize import Normalizer


def write_data(path, X, y, qid):
    dump_svmlight(X, y, qid=qid, path=str(path))


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


def test_zscore_model_file_is_plain(tmp_path):
    X, y, qid = raw_data()
    train, model_path = tmp_path / "train.dat", tmp_path / "model"
    write_data(train, X, y, qid)
    assert learn_main(["-c", "1", "--normalize", "zscore", str(train), str(model_path)]) == 0
    assert "normalize" not in model_path.read_text().splitlines()[1]
    model = read_model(str(model_path))
    fitted = RankSVM(C=1.0, normalize="zscore").fit(X.astype(np.float32), y, qid)
    np.testing.assert_allclose(model.predict(X), fitted.predict(X), rtol=1e-5,
                               atol=1e-6 * np.abs(fitted.predict(X)).max())


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


def test_normalize_usage_errors(tmp_path, capsys):
    X, y, qid = raw_data()
    train = tmp_path / "train.dat"
    write_data(train, X, y, qid)
    assert learn_main(["--normalize", "minmax", str(train), str(tmp_path / "m")]) == 2
    assert learn_main(["--normalize", "zscore", "-t", "2", str(train), str(tmp_path / "m")]) == 2
    assert "with -t 1, 2 or 3 use --normalize query or log" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
    with pytest.raises(Exception, match="normalize"):
        Normalizer("minmax")


def test_a_note_suggests_normalize_when_scales_differ(tmp_path, capsys):
    X, y, qid = raw_data()
    train = tmp_path / "train.dat"
    write_data(train, X, y, qid)
    assert learn_main(["-v", "1", str(train), str(tmp_path / "m")]) == 0
    assert "--normalize" in capsys.readouterr().err
    write_data(train, brute_query_min_max(X, qid), y, qid)
    assert learn_main(["-v", "1", str(train), str(tmp_path / "m")]) == 0
    assert "--normalize" not in capsys.readouterr().err


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
