"""The Python API's contract, with or without scikit-learn: parameters, queries, input checks,
the package's names and submodules, and importing it."""

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from program_runs import run_python

from rankfast import (
    GreedyRankRLS,
    KernelApproxLearner,
    KernelParams,
    NystroemMap,
    RandomFourierMap,
    RankNCG,
    RankRLS,
    RankSVM,
    RankSVML1,
)
from rankfast._estimator import NotFittedError
from rankfast.data.validation import NoPairsWarning

RBF = KernelParams(kernel=2, gamma=0.5)


LINEAR = ["RankSVM", "RankSVML1", "RankNCG", "RankRLS", "GreedyRankRLS"]


ESTIMATORS = {
    "RankSVM": lambda: RankSVM(C=1.0),
    "RankSVML1": lambda: RankSVML1(C=1.0),
    "RankNCG": lambda: RankNCG(C=1.0),
    "RankRLS": lambda: RankRLS(C=1.0),
    "GreedyRankRLS": lambda: GreedyRankRLS(C=1.0, k=2),
    "Nystroem": lambda: KernelApproxLearner(RankSVM(C=1.0), RBF, landmarks=20),
    "RFF": lambda: KernelApproxLearner(RankSVM(C=1.0), RBF, approx="rff", landmarks=50),
}


MAPS = {"NystroemMap": lambda: NystroemMap(RBF, landmarks=10),
        "RandomFourierMap": lambda: RandomFourierMap(RBF, components=10)}


def data(n_queries=4, size=8, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * size, d))
    y = (X @ np.arange(1.0, d + 1) + 0.3 * rng.normal(size=len(X)) > 0).astype(float)
    y[::size] = 2.0
    qid = np.repeat(np.arange(10, 10 + n_queries), size)
    return X, y, qid


@pytest.fixture(params=sorted(ESTIMATORS))
def make(request):
    return ESTIMATORS[request.param]


@pytest.mark.parametrize("method", ["predict", "decision_function", "to_model", "score"])
def test_use_before_fit_is_a_not_fitted_error(make, method):
    X, y, qid = data()
    args = {"predict": (X,), "decision_function": (X,), "to_model": (), "score": (X, y)}[method]
    with pytest.raises(NotFittedError, match="not fitted yet"):
        getattr(make(), method)(*args)
    assert issubclass(NotFittedError, (ValueError)) and issubclass(NotFittedError, AttributeError)


def test_constructor_stores_parameters_unchanged(make):
    estimator = make()
    params = estimator.get_params(deep=False)
    again = type(estimator)(**params)
    assert all(again.get_params(deep=False)[k] is v for k, v in params.items())
    estimator.set_params(seed=3) if "seed" in params else estimator.set_params(C=2.5)
    changed = estimator.get_params(deep=False)
    assert changed.get("seed", changed.get("C")) in (3, 2.5)


def test_nested_parameters_of_the_kernel_learner():
    learner = KernelApproxLearner(RankSVM(C=1.0), RBF)
    assert learner.get_params()["base_learner__C"] == 1.0
    learner.set_params(base_learner__C=4.0)
    assert learner.base_learner.C == 4.0
    X, y, qid = data()
    learner.fit(X, y, qid)
    assert learner.learner_ is not learner.base_learner      # fit trains a copy
    assert not hasattr(learner.base_learner, "weights_")


def test_pickle_round_trip_predicts_the_same(make):
    X, y, qid = data()
    fitted = make().fit(X, y, qid)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.predict(X), fitted.predict(X))


def test_group_sizes_are_queries_of_consecutive_rows(make):
    X, y, qid = data()
    by_qid = make().fit(X, y, qid).predict(X)
    by_group = make().fit(X, y, group=[8, 8, 8, 8]).predict(X)
    both = make().fit(X, y, qid=qid, group=[8, 8, 8, 8]).predict(X)
    np.testing.assert_allclose(by_group, by_qid, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(both, by_qid, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("group, message", [
    ([8, 8, 8], "add up to 24 documents, not 32"),
    ([8, 8, 8, 9], "add up to 33 documents, not 32"),
    ([16, 0, 16], "at least 1"),
    ([16, 8.5, 7.5], "integers"),
    ([16, 16], "qid and group describe different queries"),
])
def test_bad_or_inconsistent_group_sizes(group, message):
    X, y, qid = data()
    with pytest.raises(ValueError, match=message):
        RankSVM().fit(X, y, qid=qid if "qid" in message else None, group=group)


def test_without_queries_all_rows_are_one_ranking():
    X, y, _ = data()
    np.testing.assert_array_equal(RankSVM(C=1.0).fit(X, y).predict(X),
                                  RankSVM(C=1.0).fit(X, y, np.zeros(len(y))).predict(X))


def test_score_is_mean_ndcg_at_10_as_rank_classify_reports_it():
    from rankfast import metrics
    X, y, qid = data(size=12)
    ranker = RankSVM(C=1.0).fit(X, y, qid)
    assert ranker.score(X, y, qid) == metrics.ndcg(ranker.predict(X), y, qid, k=10)
    assert ranker.score(X, y, group=[12] * 4) == ranker.score(X, y, qid)


@pytest.mark.parametrize("bad, message", [
    (lambda X: X[:, 0], "Reshape your data"),                        # 1-D
    (lambda X: X[:0], "no documents"),                               # 0 rows
    (lambda X: X[:, :0], r"0 feature\(s\)"),                         # 0 columns
    (lambda X: np.where(X > 1.5, np.nan, X), "NaN or infinity"),
    (lambda X: np.where(X > 1.5, np.inf, X), "NaN or infinity"),
    (lambda X: X + 1j, "Complex data not supported"),
    (lambda X: sp.csr_matrix(X + 1j), "Complex data not supported"),
    (lambda X: sp.csr_matrix(np.where(X > 1.5, np.nan, X)), "NaN or infinity"),
])
def test_fit_refuses_bad_features(make, bad, message):
    X, y, qid = data()
    Xb = bad(X)
    n = Xb.shape[0] if Xb.ndim == 2 else len(Xb)
    with pytest.raises(ValueError, match=message):
        make().fit(Xb, y[:n], qid[:n])


@pytest.mark.parametrize("bad, message", [
    (lambda X: X[:, 0], "Reshape your data"),
    (lambda X: X[:, :2], "X has 2 features, but .* is expecting 3 features as input"),
    (lambda X: np.hstack([X, X]), "X has 6 features, but .* is expecting 3 features"),
    (lambda X: np.where(X > 1.5, np.nan, X), "NaN or infinity"),
    (lambda X: X + 1j, "Complex data not supported"),
])
def test_predict_refuses_bad_features(make, bad, message):
    X, y, qid = data()
    fitted = make().fit(X, y, qid)
    with pytest.raises(ValueError, match=message):
        fitted.predict(bad(X))


def test_sparse_input_may_be_narrower_or_wider_as_svmlight_files_are(make):
    X, y, qid = data()
    fitted = make().fit(sp.csr_matrix(X), y, qid)
    wider = sp.hstack([sp.csr_matrix(X), sp.csr_matrix(np.ones((len(X), 2)))]).tocsr()
    np.testing.assert_allclose(fitted.predict(wider), fitted.predict(X), rtol=1e-12)
    narrower = sp.csr_matrix(X[:, :2])
    np.testing.assert_allclose(fitted.predict(narrower),
                               fitted.predict(np.hstack([X[:, :2], np.zeros((len(X), 1))])),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("labels, qids, message", [
    (lambda y: y[:-1], lambda q: q, "X has 32 rows but y has 31 labels"),
    (lambda y: None, lambda q: q, "requires y to be passed"),
    (lambda y: np.where(y > 1, np.nan, y), lambda q: q, "labels must be finite"),
    (lambda y: y + 1j, lambda q: q, "Complex data not supported"),
    (lambda y: y, lambda q: q[:-1], "one query id per row"),
    (lambda y: y, lambda q: np.where(q > 11, np.nan, q), "query ids must be finite"),
])
def test_fit_refuses_bad_labels_and_queries(make, labels, qids, message):
    X, y, qid = data()
    with pytest.raises(ValueError, match=message):
        make().fit(X, labels(y), qids(qid))


def test_every_learner_takes_lists_of_lists(make):
    """The RFF learner used to fail on X.shape of a list (issue 11, item 13)."""
    X, y, qid = data()
    fitted = make().fit(X.tolist(), y.tolist(), qid.tolist())
    np.testing.assert_allclose(fitted.predict(X.tolist()), make().fit(X, y, qid).predict(X),
                               rtol=1e-12, atol=1e-12)


def test_coef_and_n_features_in():
    X, y, qid = data()
    wide = np.hstack([X, np.zeros((len(X), 2))])          # two features that never occur
    ranker = RankSVM(C=1.0).fit(sp.csr_matrix(wide), y, qid)
    assert ranker.n_features_in_ == 5
    assert ranker.coef_.shape == (5,) and np.all(ranker.coef_[3:] == 0)
    np.testing.assert_allclose(wide @ ranker.coef_, ranker.predict(wide), rtol=1e-12)
    assert not hasattr(RankSVM(), "coef_")


@pytest.mark.parametrize("name", sorted(MAPS))
def test_kernel_maps_are_transformers(name):
    X, y, qid = data()
    phi = MAPS[name]()
    features = phi.fit_transform(X)
    np.testing.assert_array_equal(features, phi.transform(X))
    with pytest.raises(NotFittedError):
        MAPS[name]().transform(X)
    with pytest.raises(ValueError, match="X has 2 features"):
        phi.transform(X[:, :2])
    # the learner on the map is exactly a linear ranker on the transformer's output
    approx = "nystrom" if name == "NystroemMap" else "rff"
    learner = KernelApproxLearner(RankSVM(C=1.0), RBF, approx=approx, landmarks=10).fit(X, y, qid)
    on_features = RankSVM(C=1.0).fit(features, y, qid)
    np.testing.assert_allclose(learner.predict(X), on_features.predict(features), rtol=1e-10)


def test_works_without_scikit_learn():
    """A subprocess in which importing sklearn fails: fit, predict, params, errors all work."""
    code = textwrap.dedent("""
        import sys, pickle
        import importlib.abc

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "sklearn" or name.startswith("sklearn."):
                    raise ImportError("scikit-learn is blocked for this test")
                return None

        sys.meta_path.insert(0, Block())
        import numpy as np
        import rankfast
        from rankfast import _estimator as compat, metrics
        from rankfast.learners.prsvm import RankSVM
        from rankfast.learners.kernel_approx import KernelApproxLearner, NystroemMap
        from rankfast.models import KernelParams
        assert not compat.SKLEARN_INSTALLED and "sklearn" not in sys.modules
        rng = np.random.default_rng(0)
        X = rng.normal(size=(40, 3)); y = (X[:, 0] > 0).astype(float); qid = np.repeat([1, 2], 20)
        ranker = RankSVM(C=1.0)
        try:
            ranker.predict(X)
        except compat.NotFittedError as exc:
            assert isinstance(exc, ValueError) and isinstance(exc, AttributeError)
        else:
            raise AssertionError("no NotFittedError")
        ranker.set_params(C=2.0)
        assert ranker.get_params() == {"C": 2.0, "loss": 1, "tol": 1e-3, "max_iter": 100000,
                                       "n_jobs": None, "cv": None, "cv_metric": "ndcg@10",
                                       "cv_rule": "best", "cv_convention": "letor",
                                       "random_state": 0, "normalize": "none"}
        scores = ranker.fit(X, y, qid).predict(X)
        assert ranker.score(X, y, qid) == metrics.ndcg(scores, y, qid, k=10)
        assert metrics.ndcg_scorer(5)(ranker, X, y, qid=qid) == metrics.ndcg(scores, y, qid, k=5)
        learner = KernelApproxLearner(RankSVM(), KernelParams(kernel=2), landmarks=10)
        assert learner.get_params()["base_learner__C"] == 0.01
        learner.set_params(base_learner__C=1.0).fit(X, y, qid)
        assert repr(RankSVM(C=3.0)).startswith("RankSVM(C=3.0")
        assert NystroemMap(landmarks=5).fit_transform(X).shape[0] == 40
        pickle.loads(pickle.dumps(ranker)).predict(X)
        assert "sklearn" not in sys.modules
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_rank_learn_imports_no_scikit_learn_even_with_it_installed(tmp_path):
    """rankfast.sklearn's wrappers inherit scikit-learn's classes; the programs use the core
    learners, whose protocol is rankfast._estimator's: no scikit-learn import (a second of start-up)."""
    rng = np.random.default_rng(3)
    lines = [f"{rng.integers(0, 3)} qid:{1 + i // 10} " + " ".join(
        f"{j}:{rng.random():.3f}" for j in range(1, 5)) for i in range(60)]
    (tmp_path / "train.dat").write_text("\n".join(lines) + "\n")
    code = ("import sys\nfrom rankfast.cli.learn import learn_main\n"
            "rc = learn_main(sys.argv[1:])\n"
            "assert 'sklearn' not in sys.modules, sorted(m for m in sys.modules if 'sklearn' in m)\n"
            "sys.exit(rc)\n")
    for options in (["-a", "prsvm", "-c", "0.1,1"], ["-a", "greedy", "-c", "1"],
                    ["-a", "rankrls", "-c", "0.1,1"], ["-t", "2", "-c", "1"]):
        done = subprocess.run([sys.executable, "-c", code, "-v", "0", *options,
                               str(tmp_path / "train.dat"), str(tmp_path / "model")],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (options, done.stderr)


@pytest.mark.parametrize("name", LINEAR)
def test_feature_importances_are_normalised_weight_magnitudes(name):
    X, y, qid = data(d=4)
    X[:, 3] *= 0.0                                   # a column without weight
    ranker = ESTIMATORS[name]().fit(X, y, qid)
    importances = ranker.feature_importances_
    np.testing.assert_allclose(importances, np.abs(ranker.coef_) / np.abs(ranker.coef_).sum(),
                               rtol=1e-15)
    assert importances.shape == (4,) and importances[3] == 0.0
    assert abs(importances.sum() - 1.0) < 1e-12
    assert not hasattr(ESTIMATORS[name](), "feature_importances_")     # before fit


def test_a_zero_model_has_zero_importances_and_a_kernel_learner_none():
    X, y, qid = data()
    with pytest.warns(NoPairsWarning):
        flat = RankSVM(C=1.0).fit(X, np.ones(len(y)), qid)       # no pair: w = 0
    np.testing.assert_array_equal(flat.feature_importances_, np.zeros(X.shape[1]))
    assert not hasattr(ESTIMATORS["Nystroem"]().fit(X, y, qid), "feature_importances_")


WEIGHTED = {
    "RankSVM": lambda: RankSVM(C=1.0, tol=1e-12),
    "RankSVML1": lambda: RankSVML1(C=1.0, tol=1e-10),
    "RankNCG": lambda: RankNCG(C=1.0, tol=1e-10),
    "RankRLS": lambda: RankRLS(C=1.0),
    "RankRLS-cg": lambda: RankRLS(C=1.0, solver="cg", tol=1e-12),
    "RankSVM-loss2": lambda: RankSVM(C=1.0, loss=2, tol=1e-12),
    "RFF": lambda: KernelApproxLearner(RankRLS(C=1.0), RBF, approx="rff", landmarks=30),
}


@pytest.mark.parametrize("name", sorted(WEIGHTED))
def test_a_query_weight_of_two_is_the_query_twice(name):
    """XGBRanker's per-query weights: C/Q becomes C w_q / Σw, so weight 2 = the query repeated
    (under a new id), weight 0 = the query left out."""
    X, y, qid = data(n_queries=4, size=8, d=3, seed=5)
    twice = qid == 11
    X2, y2 = np.vstack([X, X[twice]]), np.concatenate([y, y[twice]])
    qid2 = np.concatenate([qid, np.full(twice.sum(), 99)])
    repeated = WEIGHTED[name]().fit(X2, y2, qid2).predict(X)
    per_row = np.where(twice, 2.0, 1.0)
    weighted = WEIGHTED[name]().fit(X, y, qid, sample_weight=per_row).predict(X)
    per_query = WEIGHTED[name]().fit(X, y, qid, sample_weight=[1, 2, 1, 1]).predict(X)
    np.testing.assert_allclose(weighted, repeated, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(per_query, weighted)
    keep = qid != 12
    without = WEIGHTED[name]().fit(X[keep], y[keep], qid[keep]).predict(X)
    dropped = WEIGHTED[name]().fit(X, y, qid, sample_weight=np.where(qid == 12, 0, 3)).predict(X)
    np.testing.assert_allclose(dropped, without, rtol=1e-6, atol=1e-9)
    unweighted = WEIGHTED[name]().fit(X, y, qid).predict(X)
    np.testing.assert_array_equal(
        WEIGHTED[name]().fit(X, y, qid, sample_weight=np.full(len(y), 0.5)).predict(X), unweighted)


@pytest.mark.parametrize("weight, message", [
    (np.arange(32.0), "the same for every row of a query for rankrls"),
    (np.ones(5), "one weight per row \\(32\\) or per query \\(4\\)"),
    (np.ones((32, 2)), "one weight per row"),
    (-np.ones(32), "non-negative"),
    (np.zeros(32), "every weight is zero"),
    (["a"] * 32, "numbers"),
])
def test_bad_sample_weights_are_refused(weight, message):
    """RankRLS takes per-query weights (prsvm, svmrank and rankncg also take them on documents)."""
    X, y, qid = data()
    with pytest.raises(ValueError, match=message):
        RankRLS().fit(X, y, qid, sample_weight=weight)


def test_submodules_are_reachable_from_the_package():
    import rankfast
    assert rankfast.metrics.ndcg and rankfast.learners.prsvm.RankSVM is RankSVM


def test_out_of_address_space_is_not_reported_as_missing_kernels():
    result = run_python("import rankfast.io.svmlight", limit_bytes=50_000_000)
    assert "compiled kernels are missing" not in result.stderr
    result = run_python("import rankfast; print('imported')", limit_bytes=50_000_000)
    assert "compiled kernels are missing" not in result.stderr
