"""PRSVM as a learner: its optimum against the pair-enumerating twin, flags, memory, quality."""
import re
import tracemalloc

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from reference_impl import prsvm_objective_pairs, squared_hinge_pairs
from shared_paths import REFERENCE, require

from rankfast import RankSVM
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main
from rankfast.data.queries import query_starts
from rankfast.learners._linear import pair_counts, query_weights


def random_problem(seed, n_queries=25, d=6, sparse=False, levels=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 15, size=n_queries)
    qid = np.repeat(np.arange(n_queries) * 3 + 7, sizes)
    n = len(qid)
    X = rng.normal(size=(n, d))
    if sparse:
        X[rng.random((n, d)) < 0.7] = 0.0
        X = sp.csr_matrix(X)
    w_true = rng.normal(size=d)
    y = np.floor((X @ w_true + rng.normal(size=n)) * levels / 4).clip(0, levels - 1)
    y[qid == qid[0]] = 1.0            # one query with a single level
    return X, y, qid


def twin_optimum(X, y, qid, C, loss):
    starts = query_starts(qid)
    weight = query_weights(y, starts, C, loss)

    def fun(w):
        scores = X @ w
        value, grad = squared_hinge_pairs(scores, y, starts, weight)
        return 0.5 * w @ w + value, w + X.T @ grad
    result = scipy.optimize.minimize(fun, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                                     options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
    return result.x, result.fun, weight


@pytest.mark.parametrize("seed, sparse, loss, C", [(0, False, 1, 1.0), (1, True, 1, 10.0),
                                                     (2, False, 2, 5.0), (3, True, 2, 0.1),
                                                     (4, False, 1, 300.0)])
def test_trained_weights_reach_the_twin_optimum(seed, sparse, loss, C):
    X, y, qid = random_problem(seed, sparse=sparse)
    w_twin, f_twin, weight = twin_optimum(X, y, qid, C, loss)
    exact = RankSVM(C=C, loss=loss, tol=1e-12, max_iter=200).fit(X, y, qid)
    np.testing.assert_allclose(exact.weights_, w_twin, rtol=1e-5, atol=1e-6)
    assert abs(exact.result_.f - f_twin) <= 1e-9 * f_twin
    default = RankSVM(C=C, loss=loss).fit(X, y, qid)          # -e 0.001
    f_default = prsvm_objective_pairs(X, y, query_starts(qid), weight, default.weights_)
    assert f_default - f_twin <= 1e-4 * f_twin


def test_query_weights_follow_svm_rank_scaling():
    y = np.array([2, 1, 0, 1, 1, 3, 0, 2, 2, 1.5])
    starts = np.array([0, 3, 5, 10])
    assert pair_counts(y, starts).tolist() == [3, 0, 9]
    np.testing.assert_allclose(query_weights(y, starts, 6.0, 1), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(query_weights(y, starts, 6.0, 2), [2.0 / 3, 2.0, 2.0 / 9])


def test_queries_without_pairs_add_nothing():
    X, y, qid = random_problem(5)
    base = RankSVM(C=2.0, tol=1e-12).fit(X, y, qid)
    # documents of new one-level and one-document queries change nothing but Q
    extra = np.random.default_rng(0).normal(size=(4, X.shape[1]))
    X2 = np.vstack([X, extra])
    y2 = np.concatenate([y, [1, 1, 1, 0]])
    qid2 = np.concatenate([qid, [900, 900, 900, 901]])
    q, q2 = len(np.unique(qid)), len(np.unique(qid2))
    more = RankSVM(C=2.0 * q2 / q, tol=1e-12).fit(X2, y2, qid2)
    np.testing.assert_allclose(more.weights_, base.weights_, rtol=1e-8, atol=1e-10)


def test_noncontiguous_qids_and_real_labels():
    X, y, qid = random_problem(6)
    y = y + np.random.default_rng(1).random(len(y)) * 0.01      # real-valued labels
    perm = np.random.default_rng(2).permutation(len(y))
    a = RankSVM(C=1.0, tol=1e-12).fit(X, y, qid)
    b = RankSVM(C=1.0, tol=1e-12).fit(X[perm], y[perm], qid[perm])
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-8, atol=1e-10)


def test_sparse_high_dimensional_training_stays_sparse():
    rng = np.random.default_rng(3)
    n, d, nnz_row = 3000, 10000, 20
    cols = np.sort(np.argsort(rng.random((n, d)), axis=1)[:, :nnz_row], axis=1)
    X = sp.csr_matrix((rng.random(n * nnz_row), cols.ravel(), np.arange(0, n * nnz_row + 1, nnz_row)),
                      shape=(n, d))
    y = rng.integers(0, 3, size=n).astype(float)
    qid = np.repeat(np.arange(n // 50), 50)
    tracemalloc.start()
    RankSVM(C=1.0).fit(X, y, qid)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    dense_bytes = n * d * 8
    assert peak < dense_bytes / 8, f"peak {peak / 1e6:.1f} MB: X was densified?"


def test_huge_feature_index_trains_without_allocating_per_index(tmp_path):
    train = tmp_path / "train.dat"
    train.write_text("2 qid:1 1:1 2147483647:1\n1 qid:1 2:1\n0 qid:1 1:0.5 3:1\n"
                     "1 qid:2 2147483647:0.5\n0 qid:2 3:2\n")
    tracemalloc.start()
    assert learn_main(["-v", "0", "-c", "10", str(train), str(tmp_path / "m")]) == 0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50e6
    text = (tmp_path / "m").read_text()
    assert "2147483648 # highest feature index" in text and " 2147483647:" in text


SYNTHETIC = [(kind, c) for kind in ("dense", "sparse") for c in ("0.01", "1", "20")]


@pytest.mark.parametrize("kind, c", SYNTHETIC)
def test_test_loss_is_at_most_svm_rank_plus_0_002(tmp_path, capsys, kind, c):
    base = require(REFERENCE / "synthetic")
    model = tmp_path / "model"
    assert learn_main(["-v", "0", "-c", c, str(base / f"{kind}_train.dat.gz"), str(model)]) == 0
    assert classify_main(["-v", "1", str(base / f"{kind}_test.dat.gz"), str(model), str(tmp_path / "p")]) == 0
    ours = float(re.search(r"Average loss on test set: ([0-9.]+)", capsys.readouterr().out).group(1))
    theirs = float(re.search(r"Average loss on test set: ([0-9.]+)",
                             (base / f"{kind}_classify_c{c}.stdout").read_text()).group(1))
    assert ours <= theirs + 0.002


@pytest.mark.parametrize("bad", [dict(C=-1.0), dict(C=0.0), dict(C=[1.0, -1.0]), dict(loss=3)],
                         ids=["negative C", "zero C", "negative C in a list", "loss 3"])
def test_bad_parameters_are_refused_not_trained(bad):
    from rankfast import UsageError
    X, y, qid = np.eye(4), np.array([1.0, 0.0, 1.0, 0.0]), np.array([1, 1, 2, 2])
    with pytest.raises(UsageError):
        RankSVM(**bad).fit(X, y, qid)


def test_every_estimator_predicts_its_decision_function():
    from rankfast import GreedyRankRLS, KernelApproxLearner, KernelParams, RankNCG, RankRLS
    rng = np.random.default_rng(3)
    X, qid = rng.normal(size=(30, 4)), np.repeat([1, 2, 3], 10)
    y = (X[:, 0] > 0).astype(float)
    for learner in (RankSVM(C=1.0), RankNCG(C=1.0), RankRLS(C=1.0), GreedyRankRLS(k=2, C=1.0),
                    KernelApproxLearner(RankSVM(C=1.0), KernelParams(2, gamma=0.5), landmarks=10)):
        learner.fit(X, y, qid)
        np.testing.assert_array_equal(learner.predict(X), learner.decision_function(X))


def test_submodules_are_reachable_from_the_package():
    import rankfast
    assert rankfast.metrics.ndcg and rankfast.learners.prsvm.RankSVM is RankSVM


def _all_learners():
    from rankfast import GreedyRankRLS, KernelApproxLearner, KernelParams, RankNCG, RankRLS
    return [RankSVM(), RankNCG(), RankRLS(), GreedyRankRLS(k=2),
            KernelApproxLearner(RankSVM(), KernelParams(2, gamma=0.5), landmarks=5)]


@pytest.mark.parametrize("learner", _all_learners(), ids=lambda l: type(l).__name__)
def test_inputs_of_different_lengths_are_refused_before_any_kernel_runs(learner):
    X, y, qid = np.random.default_rng(0).normal(size=(12, 3)), np.arange(12) % 3, np.repeat([1, 2, 3, 4], 3)
    for bad in [(X, y[:5], qid), (X, y, qid[:11])]:
        with pytest.raises(ValueError, match="12 rows"):
            learner.fit(*bad)


@pytest.mark.parametrize("learner", _all_learners(), ids=lambda l: type(l).__name__)
def test_non_finite_features_are_refused(learner):
    X, y, qid = np.random.default_rng(0).normal(size=(12, 3)), np.arange(12) % 3, np.repeat([1, 2, 3, 4], 3)
    X[4, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        learner.fit(X, y, qid)


@pytest.mark.parametrize("scale, C", [(1e-10, 1.0), (1.0, 1e-12)], ids=["tiny features", "tiny C"])
def test_prsvm_takes_a_step_on_data_of_tiny_scale(scale, C):
    rng = np.random.default_rng(2)
    X, qid = rng.normal(size=(40, 3)), np.repeat([1, 2, 3, 4], 10)
    y = (X @ [1.0, -2.0, 0.5] > 0).astype(float)
    learner = RankSVM(C=C).fit(X * scale, y, qid)
    assert np.any(learner.weights_ != 0)
    reference = RankSVM(C=1.0).fit(X, y, qid).weights_
    cosine = learner.weights_ @ reference / np.linalg.norm(learner.weights_) / np.linalg.norm(reference)
    assert cosine > 0.9


@pytest.mark.parametrize("w, match", [(np.array([1e300, 1.0]), "exceed"),
                                      (np.array([1e-50, -1e-60]), "below"),
                                      (np.array([np.nan, 1.0]), "diverged")])
def test_weights_the_model_file_cannot_hold_are_an_error(w, match):
    from rankfast.learners._linear import storable_weights
    with pytest.raises(ValueError, match=match):
        storable_weights(w)


def test_rank_learn_on_features_beyond_float_range_fails_cleanly(tmp_path, capsys):
    data, model = tmp_path / "h.dat", tmp_path / "m"
    data.write_text("1 qid:1 1:1e150 2:3e150\n0 qid:1 1:2e150 2:1e150\n"
                    "1 qid:2 1:1e150\n0 qid:2 2:1e150\n")
    for algorithm in ("prsvm", "rankncg", "rankrls"):
        assert learn_main(["-v", "0", "-a", algorithm, str(data), str(model)]) == 1
        err = capsys.readouterr().err
        assert str(data) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert not model.exists()


def test_an_overflowing_run_prints_one_line_and_no_numpy_warnings(tmp_path):
    import subprocess
    import sys
    data = tmp_path / "h.dat"
    data.write_text("1 qid:1 1:1e150 2:3e150\n0 qid:1 1:2e150 2:1e150\n")
    run = subprocess.run([sys.executable, "-c", "import sys; from rankfast.cli.learn import learn_main; "
                          "sys.exit(learn_main())", "-v", "0", str(data), str(tmp_path / "m")],
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        f"rank_learn: {data}:1: feature value in '1:1e150' is beyond single precision (svm_rank "
        f"stores feature values as 4-byte floats, at most 3.4028235e+38 in magnitude): rescale "
        f"the features"]
