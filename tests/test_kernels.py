"""Kernel approximation: Nyström and random Fourier maps, their models and files."""

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from data_makers import raw_scale_features as _raw_scale_features

from rankfast import KernelApproxLearner, KernelParams, RankSVM, load_svmlight, read_model

CHECKOUT = Path(__file__).resolve().parents[1]


RBF = KernelParams(2, gamma=0.5)


def run_limited(program, *args, cwd, limit=3 << 29):
    """Run a launcher of the checkout with its address space capped at ``limit`` bytes (1.5 GB)."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return subprocess.run([sys.executable, str(CHECKOUT / program), *map(str, args)],
                          cwd=cwd, preexec_fn=cap, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(CHECKOUT), OPENBLAS_NUM_THREADS="1",
                                   OMP_NUM_THREADS="1"))     # BLAS threads reserve memory too


def test_huge_feature_index_trains_and_classifies_in_little_memory(tmp_path):
    """Nothing is allocated per possible feature index: 2**31 − 1 scores as 3 would."""
    lines = "3 qid:1 1:1 {big}:1\n2 qid:1 1:0 2:1\n1 qid:2 1:1\n2 qid:2 2:1\n"
    predictions = []
    for big in (2**31 - 1, 3):
        data, model, pred = (tmp_path / f"{name}{big}" for name in ("data", "model", "pred"))
        data.write_text(lines.format(big=big))
        learn = run_limited("rank_learn", "-v", "0", "-t", "2", "-c", "1", data, model, cwd=tmp_path)
        assert learn.returncode == 0, learn.stderr
        classify = run_limited("rank_classify", "-v", "0", data, model, pred, cwd=tmp_path)
        assert classify.returncode == 0, classify.stderr
        assert model.read_text().split("\n")[7].split()[0] == str(big + 1)
        predictions.append(pred.read_text())
    assert predictions[0] == predictions[1]
    rff = run_limited("rank_learn", "-t", "2", "--approx", "rff", tmp_path / f"data{2**31 - 1}",
                      tmp_path / "rff", cwd=tmp_path)
    assert rff.returncode == 1 and "500 x 2147483647 omega matrix" in rff.stderr, rff.stderr
    assert not (tmp_path / "rff").exists()


@pytest.mark.parametrize("sparse", [False, True])
def test_saturation_note_names_a_saturated_rbf_kernel_and_a_scale_that_is_not(sparse):
    from rankfast.cli.notes import RBF_SATURATED, saturation_note
    X = _raw_scale_features(np.random.default_rng(3))
    X = sp.csr_matrix(X) if sparse else X
    note = saturation_note(KernelParams(2, gamma=1.0), X)
    assert note is not None and note.startswith("-g 1: the RBF kernel")
    suggested = float(re.search(r"try -g near (\S+) ", note).group(1))
    diffs = X.toarray() if sparse else X
    distances = ((diffs[:, None, :] - diffs[None, :, :]) ** 2).sum(axis=2)[np.triu_indices(len(diffs), 1)]
    assert suggested == pytest.approx(1.0 / np.median(distances), rel=0.05)
    assert 1.0 * np.median(distances) > RBF_SATURATED
    assert saturation_note(KernelParams(2, gamma=suggested), X) is None


def test_saturation_note_stays_silent_on_scaled_features_and_other_kernels():
    from rankfast.cli.notes import saturation_note
    rng = np.random.default_rng(4)
    scaled = rng.uniform(0, 1, (200, 46))                # LETOR's query-normalised features
    for kernel in (KernelParams(2, gamma=1.0), KernelParams(3), KernelParams(2, gamma=0.01)):
        assert saturation_note(kernel, scaled) is None
    raw = _raw_scale_features(rng)
    assert saturation_note(KernelParams(1), raw) is None             # polynomial: no saturation
    assert saturation_note(KernelParams(0), raw) is None
    assert saturation_note(KernelParams(2), np.ones((50, 3)) * 1e8) is None   # equal documents
    assert saturation_note(KernelParams(2), raw[:1]) is None


def test_saturation_note_names_a_saturated_sigmoid_kernel():
    from rankfast.cli.notes import TANH_SATURATED, saturation_note
    X = _raw_scale_features(np.random.default_rng(5))
    note = saturation_note(KernelParams(3, coef_lin=1.0, coef_const=1.0), X)
    assert note is not None and "tanh(s a*b + r) is +-1" in note
    suggested = float(re.search(r"try -s near (\S+) ", note).group(1))
    products = (X @ X.T)[np.triu_indices(len(X), 1)]
    assert suggested == pytest.approx(1.0 / np.median(np.abs(products)), rel=0.05)
    assert np.median(np.abs(products + 1.0)) > TANH_SATURATED
    assert saturation_note(KernelParams(3, coef_lin=suggested, coef_const=0.0), X) is None
    unit = np.zeros((20, 2))
    unit[:, 0] = 1.0                                                # a*b = 1: saturated by r alone
    assert "use a smaller |r|" in saturation_note(KernelParams(3, coef_lin=0.0, coef_const=50.0),
                                                   unit)


def test_rank_learn_notes_a_saturated_kernel_and_how_to_scale_for_kernels(tmp_path, capsys):
    from rankfast import dump_svmlight
    from rankfast.cli.learn import learn_main
    rng = np.random.default_rng(6)
    X = _raw_scale_features(rng, 200)
    y = rng.integers(0, 3, 200).astype(float)
    path = tmp_path / "raw.dat"
    dump_svmlight(X, y, np.repeat(np.arange(20), 10), str(path))
    assert learn_main(["-t", "2", str(path), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert "note: -g 1: the RBF kernel" in err and "scale the features (--normalize query or log)" in err
    assert "--normalize query (per query, as LETOR) or log may train a better model" in err
    assert learn_main(["-t", "2", "--normalize", "query", str(path), str(tmp_path / "m")]) == 0
    assert "note" not in capsys.readouterr().err                  # scaled per query: not saturated
    assert learn_main(["-t", "2", "--normalize", "log", str(path), str(tmp_path / "m")]) == 0
    assert "note" not in capsys.readouterr().err
    assert learn_main(["-t", "2", "-g", "1000", "--normalize", "log", str(path),
                       str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err                       # saturated although normalised: -g only
    assert "the RBF kernel" in err and "try -g near" in err and "--normalize" not in err
    assert learn_main(["-t", "2", "-g", "1e-18,1", str(path), str(tmp_path / "m")]) == 0
    assert "the RBF kernel" not in capsys.readouterr().err             # the smallest -g is fine
    assert learn_main(["-v", "0", "-t", "3", str(path), str(tmp_path / "m")]) == 0
    assert capsys.readouterr().err == ""
    assert learn_main([str(path), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert "--normalize query (per query, as LETOR)" in err and "kernel" not in err


def _raw_ranking_files(tmp_path, rng, n_queries=12, per_query=15):
    """Training and test files of raw-scale features whose relevance is not linear in them."""
    from rankfast import dump_svmlight
    paths = []
    for name in ("train", "test"):
        X = _raw_scale_features(rng, n_queries * per_query)
        X[:, 0] *= rng.uniform(0.1, 10, n_queries).repeat(per_query)      # scales vary by query
        y = np.round(2 * np.sin(3 * X[:, 1]) + (X[:, 2] > 25)).clip(0, 3)
        path = tmp_path / f"{name}.dat"
        dump_svmlight(X, y, np.repeat(np.arange(n_queries), per_query), str(path))
        paths.append(path)
    return paths


@pytest.mark.parametrize("approx", ["nystrom", "rff"])
@pytest.mark.parametrize("kind", ["query", "log"])
def test_normalize_with_a_kernel_scores_as_the_normalised_files_would(tmp_path, kind, approx):
    """--normalize query|log with -t 2: the model records it, and rank_classify on the raw test
    file scores as the model trained on normalised files scores the normalised test file."""
    from rankfast import dump_svmlight
    from rankfast.cli.classify import classify_main
    from rankfast.cli.learn import learn_main
    from rankfast.data.normalize import Normalizer
    train, test = _raw_ranking_files(tmp_path, np.random.default_rng(7))
    flags = ["-v", "0", "-t", "2", "-g", "0.5", "-c", "1", "--approx", approx, "--landmarks", "40"]
    assert learn_main(flags + ["--normalize", kind, str(train), str(tmp_path / "m")]) == 0
    model_text = (tmp_path / "m").read_text()
    assert f"normalize={kind}" in model_text
    if approx == "nystrom":                      # svm_rank's users are told it is not theirs
        assert f"rankfast normalize={kind}: only rank_classify applies this model" in model_text
    for name, source in (("train", train), ("test", test)):
        data = load_svmlight(str(source), dtype=np.float32)
        scaled = Normalizer(kind).transform(data.X, data.qid)
        dump_svmlight(scaled, data.y, data.qid, str(tmp_path / f"{name}_scaled.dat"))
    assert learn_main(flags + [str(tmp_path / "train_scaled.dat"), str(tmp_path / "m_scaled")]) == 0
    assert classify_main(["-v", "0", str(test), str(tmp_path / "m"), str(tmp_path / "p")]) == 0
    assert classify_main(["-v", "0", str(tmp_path / "test_scaled.dat"), str(tmp_path / "m_scaled"),
                          str(tmp_path / "p_scaled")]) == 0
    ours, theirs = np.loadtxt(tmp_path / "p"), np.loadtxt(tmp_path / "p_scaled")
    assert np.ptp(ours) > 0                                      # a model that ranks
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6 * np.abs(theirs).max())
    model = read_model(str(tmp_path / "m"))
    data = load_svmlight(str(test))
    np.testing.assert_allclose(model.predict(data.X, data.qid), ours, rtol=1e-6, atol=1e-8)  # %.8f
    if kind == "query":
        with pytest.raises(ValueError, match="pass qid"):
            model.predict(data.X)


def test_normalising_kernel_models_ignore_features_above_their_width(tmp_path):
    """A test file naming feature 2**31 - 1 (negative: a query's columns would be made dense)."""
    from rankfast.cli.classify import classify_main
    from rankfast.cli.learn import learn_main
    train, test = _raw_ranking_files(tmp_path, np.random.default_rng(9))
    lines = test.read_text().splitlines()
    wide = tmp_path / "wide.dat"
    wide.write_text("".join(line + (" 2147483647:-1\n" if i % 2 else "\n")
                            for i, line in enumerate(lines)))
    for approx in ("nystrom", "rff"):
        model = tmp_path / f"m_{approx}"
        assert learn_main(["-v", "0", "-t", "2", "-g", "0.5", "--approx", approx, "--landmarks",
                           "30", "--normalize", "query", str(train), str(model)]) == 0
        for name, data in (("p", test), ("p_wide", wide)):
            assert classify_main(["-v", "0", str(data), str(model), str(tmp_path / name)]) == 0
        np.testing.assert_array_equal(np.loadtxt(tmp_path / "p"), np.loadtxt(tmp_path / "p_wide"))
        first = model.read_text().splitlines()[0]
        assert first == ("rankfast RFF model V2" if approx == "rff" else "SVM-light Version V6.20")
    X = load_svmlight(str(train))
    ranker = KernelApproxLearner(RankSVM(C=1.0), RBF, landmarks=30, normalize="query").fit(
        X.X, X.y, X.qid)
    W = load_svmlight(str(wide))
    T = load_svmlight(str(test))
    np.testing.assert_array_equal(ranker.predict(W.X, W.qid), ranker.predict(T.X, T.qid))


def test_saturation_note_names_g_1_on_many_scaled_features():
    """136 query-normalised features (MSLR's count) put most pairs ~23 apart in ||a-b||^2:
    at svm_rank's -g 1 the kernel is ~1e-10 between them, and on MSLR-like data such a
    model ranked near random (NDCG@10 0.176 against 0.356 at the suggested -g)."""
    from rankfast.cli.notes import saturation_note
    X = np.random.default_rng(5).uniform(0, 1, (300, 136))
    note = saturation_note(KernelParams(2, gamma=1.0), X)
    assert note is not None and "is below 1e-4 between most training documents" in note
    suggested = float(re.search(r"try -g near (\S+) ", note).group(1))
    assert 0.03 < suggested < 0.06                             # 1 / (136 / 6)
    assert saturation_note(KernelParams(2, gamma=suggested), X) is None
