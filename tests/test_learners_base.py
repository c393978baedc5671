"""rankfast.learners._base: the one fit every learner shares (its input checks, counted, the
eval sets, the stopping rule, the warnings and errors of a fit)."""

import sys

import numpy as np
import pytest
import scipy.sparse as sp
from data_makers import api_data, documents, unscaled
from data_makers import letor_like_queries as letor_like
from fit_helpers import objective_at as objective

from rankfast import (
    GreedyRankRLS,
    KernelApproxLearner,
    KernelParams,
    RankNCG,
    RankRLS,
    RankSVM,
    RankSVML1,
    metrics,
)
from rankfast.data import sparse as csr
from rankfast.data.validation import TrainingData, predicted
from rankfast.learners import _base as base

LEARNERS = [RankSVM, RankNCG, RankSVML1, RankRLS, lambda: GreedyRankRLS(k=2)]


GRID = [1e-3, 1e-1, 10.0, 1e3]


def test_every_estimator_predicts_its_decision_function():
    from rankfast import GreedyRankRLS, KernelApproxLearner, KernelParams, RankNCG, RankRLS
    rng = np.random.default_rng(3)
    X, qid = rng.normal(size=(30, 4)), np.repeat([1, 2, 3], 10)
    y = (X[:, 0] > 0).astype(float)
    for learner in (RankSVM(C=1.0), RankNCG(C=1.0), RankRLS(C=1.0), GreedyRankRLS(k=2, C=1.0),
                    KernelApproxLearner(RankSVM(C=1.0), KernelParams(2, gamma=0.5), landmarks=10)):
        learner.fit(X, y, qid)
        np.testing.assert_array_equal(learner.predict(X), learner.decision_function(X))


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


def learner_classes():
    from rankfast import GreedyRankRLS, RankNCG, RankRLS, RankSVM, RankSVML1
    return {"RankSVM": RankSVM, "RankRLS": RankRLS, "GreedyRankRLS": GreedyRankRLS,
            "RankNCG": RankNCG, "RankSVML1": RankSVML1}


@pytest.mark.parametrize("name", ["RankSVM", "RankRLS", "GreedyRankRLS", "RankNCG", "RankSVML1"])
@pytest.mark.parametrize("C", [-1, float("nan"), [1.0, -1], [], "x", None, float("inf")],
                         ids=["-1", "nan", "list with -1", "empty list", "str", "None", "inf"])
def test_an_invalid_c_is_a_usage_error_naming_c(name, C):
    from rankfast import UsageError
    X, y, qid = api_data()
    with pytest.raises(UsageError) as info:
        learner_classes()[name](C=C).fit(X, y, qid)
    assert isinstance(info.value, ValueError)           # scikit-learn's convention as well
    message = str(info.value)
    assert message.startswith("C must be") or message == "the list of C values is empty"
    assert "-c" not in message


@pytest.mark.parametrize("name", ["RankSVM", "RankRLS", "GreedyRankRLS", "RankNCG"])
@pytest.mark.parametrize("setting, says", [
    ({"cv": "bogus"}, "folds must be a number of folds or loqo"),
    ({"cv": 1}, "the number of folds must be an integer of at least 2"),
    ({"cv_metric": "bogus"}, "the CV metric must be"),
    ({"cv_metric": "ndcg@\u00b2"}, "the CV metric must be"),
    ({"cv_rule": "x"}, "the CV rule must be best or 1se"),
    ({"cv_convention": "x"}, "NDCG convention must be letor or standard"),
], ids=["cv", "cv=1", "metric", "metric cut-off", "rule", "convention"])
@pytest.mark.parametrize("C", [1.0, [1.0, 2.0]], ids=["one C", "C list"])
def test_cross_validation_settings_are_checked_with_one_c_too(name, setting, says, C):
    from rankfast import UsageError
    X, y, qid = api_data()
    with pytest.raises(UsageError, match=says):
        learner_classes()[name](C=C, **setting).fit(X, y, qid)


def test_an_eval_set_without_its_queries_is_refused_as_score_refuses_it():
    """It was scored as one ranking (MAP 0.990 against 1.0 with its queries)."""
    X = np.arange(16.0).reshape(8, 2) % 5
    y, qid = np.array([2, 1, 0, 1, 2, 0, 1, 0]), np.repeat([1, 2], 4)
    with pytest.raises(ValueError, match="without eval_qid or eval_group"):
        RankSVM().fit(X, y, qid, eval_set=[(X, y)])
    model = RankSVM().fit(X, y, qid, eval_set=[(X, y)], eval_qid=[qid])
    assert set(model.evals_result_) == {"validation_0"}
    RankSVM().fit(X, y, eval_set=[(X, y)])            # one ranking trained, one scored


@pytest.mark.parametrize("make", [lambda: RankSVM(max_iter=1, tol=1e-12),
                                  lambda: RankNCG(max_iter=1, tol=1e-12),
                                  lambda: RankSVML1(max_iter=1, tol=1e-12)])
def test_fit_warns_when_its_solver_stops_before_its_tolerance(make):
    from rankfast.learners._linear import NotConvergedWarning
    rng = np.random.default_rng(6)
    X, y, qid = rng.normal(size=(60, 3)), np.arange(60) % 3, np.arange(60) // 6
    with pytest.warns(NotConvergedWarning, match="stopped before its tolerance") as caught:
        model = make().fit(X, y, qid)
    assert not model.result_.converged and caught[0].filename == __file__


@pytest.mark.parametrize("make", LEARNERS)
def test_a_model_from_the_api_records_its_training_documents(make, tmp_path):
    """to_model() writes the number of documents fit saw, as svm_rank's model files do
    (it said 0); an explicit n_documents still wins, and a refit updates it."""
    from rankfast import read_model, write_model
    rng = np.random.default_rng(3)
    X, y, qid = rng.normal(size=(40, 3)), rng.integers(0, 3, 40), np.repeat(np.arange(4), 10)
    learner = make().fit(X, y, qid)
    write_model(learner.to_model(), tmp_path / "m")
    assert "\n40 # number of training documents" in (tmp_path / "m").read_text()
    assert read_model(str(tmp_path / "m")).n_documents == 40
    assert learner.to_model(n_documents=7).n_documents == 7
    assert learner.fit(X[:30], y[:30], qid[:30]).to_model().n_documents == 30


def test_ranksvm_checks_its_input_once(monkeypatch):
    X, y, qid = documents(1)
    calls = []
    check = base.check_features

    def counted(*args, **kwargs):
        calls.append(args[0])
        return check(*args, **kwargs)
    monkeypatch.setattr(base, "check_features", counted)
    for given in (X, sp.csr_matrix(X), sp.coo_matrix(X)):
        calls.clear()
        RankSVM(C=1.0).fit(given, y, qid)
        assert len(calls) == 1
    calls.clear()
    reference = RankSVM(C=1.0).fit(X, y, qid)
    weighted = RankSVM(C=1.0).fit(X, y, qid, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(weighted.weights_, reference.weights_)
    assert len(calls) == 2


class ConversionCounter:
    """Counts, during a fit, the checks of X and the conversions the estimators make besides.

    Every rankfast module's binding of the boundary and of the conversions
    (check_features, csr.all_finite, csr.as_csr, csr.issparse, CSR.astype) is
    replaced by a counting twin: ``checks`` counts the calls of check_features,
    ``scans`` all_finite's passes over values, and ``outside`` lists the calls of
    as_csr, issparse and CSR.astype made by the estimators' own modules (those of
    ESTIMATORS), not from inside check_features.
    """

    NAMES = ("check_features", "all_finite", "as_csr", "issparse")
    ESTIMATORS = {f"rankfast.{name}" for name in (
        "base", "inputs", "linear", "ranksvm", "rankncg", "svmrank", "rankrls", "kernels",
        "model_selection", "dask")}

    def __init__(self, monkeypatch):
        self.checks = self.scans = self.depth = 0
        self.outside = []
        originals = {"check_features": base.check_features, "all_finite": csr.all_finite,
                     "as_csr": csr.as_csr, "issparse": csr.issparse}
        for module in [m for name, m in sys.modules.items() if name.startswith("rankfast")]:
            for name in self.NAMES:
                if getattr(module, name, None) is originals[name]:
                    monkeypatch.setattr(module, name, self._twin(name, originals[name]))
        monkeypatch.setattr(csr.CSR, "astype", self._twin("CSR.astype", csr.CSR.astype))

    def _twin(self, name, original):
        def counted(*args, **kwargs):
            if name == "check_features":
                self.checks += 1
                self.depth += 1
                try:
                    return original(*args, **kwargs)
                finally:
                    self.depth -= 1
            if name == "all_finite":
                self.scans += 1
            elif self.depth == 0 and sys._getframe(1).f_globals["__name__"] in self.ESTIMATORS:
                self.outside.append(f"{name} in {sys._getframe(1).f_code.co_name}")
            return original(*args, **kwargs)
        return counted


def learners():
    from rankfast import GreedyRankRLS, KernelApproxLearner, RankNCG, RankRLS, RankSVML1
    # (learner, finiteness scans of one fit: X once, and a kernel learner's φ(X) once)
    return {"ranksvm": (RankSVM(C=1.0), 1), "ranksvm C list": (RankSVM(C=[0.1, 1.0], cv=3), 1),
            "rankncg": (RankNCG(C=1.0), 1), "rankncg C list": (RankNCG(C=[0.1, 1.0], cv=3), 1),
            "svmrank": (RankSVML1(C=1.0), 1),
            "rankrls": (RankRLS(C=1.0), 1), "rankrls cg": (RankRLS(C=1.0, solver="cg"), 1),
            "rankrls C list loqo": (RankRLS(C=[0.1, 1.0]), 1),
            "rankrls C list folds": (RankRLS(C=[0.1, 1.0], cv=3), 1),
            "greedy": (GreedyRankRLS(C=1.0, k=2), 1),
            "greedy C list": (GreedyRankRLS(C=[0.1, 1.0], k=2, cv=3), 1),
            "nystrom": (KernelApproxLearner(RankSVM(C=1.0), landmarks=10), 2),
            "rff": (KernelApproxLearner(RankSVM(C=1.0), approx="rff", landmarks=10), 2)}


@pytest.mark.parametrize("form", ["dense", "csr", "coo", "float32 csr"])
@pytest.mark.parametrize("name", list(learners()))
def test_every_learner_checks_and_converts_x_once_per_fit(name, form, monkeypatch):
    X, y, qid = documents(2, n=60)
    given = {"dense": X, "csr": sp.csr_matrix(X), "coo": sp.coo_matrix(X),
             "float32 csr": sp.csr_matrix(X.astype(np.float32))}[form]
    learner, scans = learners()[name]
    counter = ConversionCounter(monkeypatch)
    fitted = learner.fit(given, y, qid, sample_weight=np.ones(len(y)))
    assert counter.outside == []
    assert counter.checks == counter.scans == scans
    monkeypatch.undo()
    reference = learners()[name][0].fit(given, y, qid)      # (weights of 1 change nothing)
    np.testing.assert_array_equal(fitted.weights_, reference.weights_)


@pytest.mark.parametrize("sparse", [False, True])
def test_cross_validation_checks_its_input_once_and_not_its_folds(sparse, monkeypatch):
    from rankfast import KernelApproxLearner
    from rankfast.model_selection import GridSearch, cross_validate
    X, y, qid = documents(3, n=60)
    given = sp.csr_matrix(X) if sparse else X
    counter = ConversionCounter(monkeypatch)
    result = cross_validate(RankSVM(), given, y, qid, [0.1, 1.0], cv=3)
    assert (counter.checks, counter.scans, counter.outside) == (1, 1, [])
    search = GridSearch(KernelApproxLearner(RankSVM(), landmarks=10),
                        {"base_learner__C": [0.1, 1.0]}, cv=3)
    counter.checks = counter.scans = 0
    search.fit(given, y, qid)
    # X once for the folds, and once by the refit on all rows; φ(X) once per map (3 folds,
    # each walking its 2 C's from one map, and the refit); the held-out folds are scored
    # without a check
    assert (counter.checks, counter.scans, counter.outside) == (2 + 4, 2 + 4, [])
    monkeypatch.undo()
    unchecked = cross_validate(RankSVM(), X, y, qid, [0.1, 1.0], cv=3)
    np.testing.assert_array_equal(result.values, unchecked.values)


def test_a_validation_set_is_checked_once_not_for_every_c(monkeypatch):
    from rankfast.model_selection import ValidationSet
    X, y, qid = documents(4, n=80)
    valid = ValidationSet(X[40:], y[40:], qid[40:])
    counter = ConversionCounter(monkeypatch)
    ranker = RankSVM(C=[0.01, 0.1, 1.0], cv=valid).fit(
        X[:40], y[:40], qid[:40], eval_set=[(valid.X, valid.y)], eval_qid=[valid.qid])
    # the training X once, eval_set's X once; valid's X was checked when it was made
    assert (counter.checks, counter.scans, counter.outside) == (2, 2, [])
    monkeypatch.undo()
    reference = RankSVM(C=[0.01, 0.1, 1.0], cv=ValidationSet(X[40:], y[40:], qid[40:])).fit(
        X[:40], y[:40], qid[:40])
    np.testing.assert_array_equal(ranker.cv_result_.values, reference.cv_result_.values)
    assert ranker.evals_result_["validation_0"]["ndcg@10"] == [reference.score(X[40:], y[40:],
                                                                               qid[40:])]


def test_the_private_entry_takes_a_training_data_as_it_is():
    """Cross-validation's folds and rank_learn's file reach _fit_checked and _score_checked with
    data checked once; the public fit takes arrays only."""
    from rankfast import RankRLS
    X, y, qid = documents(5)
    data = TrainingData(csr.as_csr(sp.csr_matrix(X)), y, qid)
    for make in (lambda: RankSVM(C=1.0), lambda: RankRLS(C=1.0)):
        given = make()._fit_checked(data)
        assert given.n_features_in_ == X.shape[1]
        np.testing.assert_array_equal(given.weights_, make().fit(sp.csr_matrix(X), y, qid).weights_)
        np.testing.assert_array_equal(predicted(given, data.subset(np.arange(10)), qid[:10]),
                                      given.predict(X[:10]))
        with pytest.raises(ValueError, match="2-D X"):
            make().fit(data, y)


def fitted(learner, C, X, y, qid, tight):
    if learner == "prsvm":
        model = RankSVM(C=C, tol=1e-10 if tight else 1e-3, max_iter=500)
    elif learner == "rankncg":
        model = (RankNCG(C=C, tol=1e-9, max_iter=100000, erfc="direct") if tight else
                 RankNCG(C=C))                       # the default: fast erfc sums
    elif learner == "svmrank":
        model = RankSVML1(C=C, tol=1e-6 if tight else 1e-3, solver="smoothing" if tight else "auto")
    else:
        model = RankRLS(C=C, solver="dense" if tight else "cg")
    return model.fit(X, y, qid)


@pytest.mark.parametrize("one_ranking", [True, False], ids=["one-ranking", "many-queries"])
@pytest.mark.parametrize("learner", ["prsvm", "rankncg", "svmrank", "rankrls"])
def test_default_stop_is_within_1e_3_of_the_optimum(learner, one_ranking):
    X, y, qid = unscaled(one_ranking)
    if learner == "rankncg" and one_ranking:      # the pair oracle: keep it small
        X, y, qid = X[:600], y[:600], qid[:600]
    for C in GRID:
        model = fitted(learner, C, X, y, qid, tight=False)
        f = objective(learner, model, X, y, qid)
        best = objective(learner, fitted(learner, C, X, y, qid, tight=True), X, y, qid)
        if learner == "svmrank":           # certified: a dual value D ≤ F* beneath f
            result = model.result_
            assert result.converged and result.gap <= result.target, (C, result)
            assert result.lower_bound <= best * (1 + 1e-12)
            if "rounding" not in result.message:
                assert result.gap <= 1e-3 * result.lower_bound, (C, result)
            best = min(best, f)            # a tight solve can stop on rounding too
        assert f >= best * (1 - 1e-9), (C, f, best)         # the tight solve is the better one
        assert (f - best) / best <= 1e-3, (learner, C, f, best)


@pytest.mark.parametrize("make", [lambda j: RankSVML1(C=1.0, n_jobs=j),           # smoothing path
                                  lambda j: RankSVM(C=1.0, n_jobs=j),
                                  lambda j: RankNCG(C=10.0, erfc_eps=1e-3, n_jobs=j),  # refined sums
                                  lambda j: RankSVM(C=1.0, n_jobs=j, normalize="query")])
def test_the_new_paths_give_the_same_bits_for_any_thread_count(make, every_thread_counts):
    X, y, qid = unscaled(one_ranking=True, seed=6)
    models = [make(j).fit(X, y, qid) for j in (1, 2, 3)]
    if isinstance(models[0], RankSVML1):
        assert type(models[0].result_).__name__ == "SmoothingResult"
    for model in models[1:]:
        assert model.weights_.tobytes() == models[0].weights_.tobytes()


@pytest.mark.parametrize("make", [
    lambda: RankSVM(C=1.0), lambda: RankSVML1(C=1.0), lambda: RankRLS(C=1.0, cv_metric="map"),
    lambda: RankNCG(C=1.0), lambda: GreedyRankRLS(C=1.0, k=2),
    lambda: KernelApproxLearner(RankSVM(C=1.0), KernelParams(kernel=2, gamma=0.5), landmarks=20)],
    ids=["RankSVM", "RankSVML1", "RankRLS-map", "RankNCG", "GreedyRankRLS", "Nystroem"])
def test_eval_set_records_evals_result_as_xgbranker(make):
    X, y, qid = letor_like(20, 11)
    Xv, yv, qv = letor_like(8, 12)
    Xt, yt, qt = letor_like(6, 13)
    sizes = np.unique(qt, return_counts=True)[1]
    ranker = make().fit(X, y, qid, eval_set=[(Xv, yv), (Xt, yt)], eval_qid=[qv, None],
                        eval_group=[None, sizes])
    plain = make().fit(X, y, qid)
    np.testing.assert_array_equal(ranker.weights_, plain.weights_)      # only recorded
    assert list(ranker.evals_result_) == ["validation_0", "validation_1"]
    first = list(ranker.evals_result_["validation_0"])
    assert first[0] == getattr(ranker, "cv_metric", "ndcg@10")
    assert set(first) >= {"ndcg@10", "map", "err@10", "pairs"}
    for name, (Xe, ye, qe) in (("validation_0", (Xv, yv, qv)), ("validation_1", (Xt, yt, qt))):
        scores = plain.predict(Xe)
        assert ranker.evals_result_[name]["ndcg@10"] == [metrics.ndcg(scores, ye, qe, k=10)]
        assert ranker.evals_result_[name]["map"] == [metrics.mean_average_precision(scores, ye,
                                                                                     qe)]
    assert not hasattr(plain, "evals_result_")
    assert not hasattr(ranker.fit(X, y, qid), "evals_result_")          # a refit without


def test_eval_set_is_checked():
    X, y, qid = letor_like(5, 14)
    with pytest.raises(ValueError, match="one entry per eval_set pair"):
        RankSVM().fit(X, y, qid, eval_set=[(X, y)], eval_qid=[qid, qid])
    with pytest.raises(ValueError, match="eval_set\\[0\\]'s X contains NaN"):
        RankSVM().fit(X, y, qid, eval_set=[(np.full_like(X, np.nan), y)], eval_qid=[qid])
    with pytest.raises(ValueError, match="which is not given"):
        RankSVM().fit(X, y, qid, eval_qid=[qid])


EVAL_SET_LEARNERS = {
    "prsvm": lambda: RankSVM(C=1.0), "svmrank": lambda: RankSVML1(C=1.0),
    "rankncg": lambda: RankNCG(C=1.0), "rankrls": lambda: RankRLS(C=1.0),
    "greedy": lambda: GreedyRankRLS(C=1.0, k=2),
    "nystrom": lambda: KernelApproxLearner(RankSVM(C=1.0), KernelParams(2, gamma=0.5),
                                           landmarks=10),
    "rff": lambda: KernelApproxLearner(RankSVM(C=1.0), KernelParams(2, gamma=0.5),
                                       approx="rff", landmarks=10)}


@pytest.mark.parametrize("make", EVAL_SET_LEARNERS.values(), ids=EVAL_SET_LEARNERS.keys())
def test_an_eval_set_of_another_width_is_refused_at_fit_as_predict_refuses_it(make):
    """Issue 48 (4): a narrower or wider dense eval_set X was scored while predict refused it."""
    X, y, qid = letor_like(6, 15)
    name = type(make()).__name__
    fitted = make().fit(X, y, qid)
    for width in (3, 7):
        other = np.resize(X, (len(X), width))
        with pytest.raises(ValueError, match=f"^X has {width} features, but {name} is expecting "
                                             f"5 features as input$"):
            fitted.predict(other)
        with pytest.raises(ValueError, match=f"^eval_set\\[1\\]'s X has {width} features, but "
                                             f"{name} is expecting 5 features as input$"):
            make().fit(X, y, qid, eval_set=[(X, y), (other, y)], eval_qid=[qid, qid])


@pytest.mark.parametrize("make", EVAL_SET_LEARNERS.values(), ids=EVAL_SET_LEARNERS.keys())
def test_a_sparse_eval_set_of_another_width_is_scored_as_predict_scores_it(make):
    """Sparse X may be narrower (absent features are 0, as in svm_rank's files) or wider
    (features above the training width weigh nothing) at predict, and so in eval_set."""
    X, y, qid = letor_like(6, 16)
    plain = make().fit(X, y, qid)
    for width in (3, 7):
        other = sp.csr_matrix(np.resize(X, (len(X), width)))
        ranker = make().fit(X, y, qid, eval_set=[(other, y)], eval_qid=[qid])
        assert ranker.evals_result_["validation_0"]["ndcg@10"] == [
            metrics.ndcg(plain.predict(other), y, qid, k=10)]


def test_an_eval_set_with_other_feature_names_is_refused_as_predict_refuses_it():
    pd = pytest.importorskip("pandas")
    X, y, qid = letor_like(5, 17)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    with pytest.raises(ValueError, match="feature names should match"):
        RankSVM().fit(frame, y, qid, eval_set=[(frame[frame.columns[::-1]], y)], eval_qid=[qid])
    with pytest.warns(UserWarning, match="does not have valid feature names") as caught:
        RankSVM().fit(frame, y, qid, eval_set=[(X, y)], eval_qid=[qid])
    assert caught[0].filename == __file__                  # named at the caller's line


@pytest.mark.parametrize("entry", ["fit", "fit_data"])
@pytest.mark.parametrize("name", list(learners()))
def test_every_learner_checks_its_parameters_once_per_fit(name, entry, monkeypatch):
    """check_parameters runs once per fit (fit or fit_data), and once per row of a C list
    before its folds (cross_validate), never once per fold; the cross-validation settings
    with it."""
    from rankfast.model_selection import _validation
    X, y, qid = documents(2, n=60)
    learner, _ = learners()[name]
    calls = []
    counted_class = type(learner)
    original = counted_class.check_parameters

    def counting(self):
        calls.append(type(self).__name__)
        return original(self)
    monkeypatch.setattr(counted_class, "check_parameters", counting)
    settings_checks = []
    checked_settings = _validation.check_settings
    monkeypatch.setattr(base, "check_settings",
                        lambda e: (settings_checks.append(1), checked_settings(e))[1])
    if entry == "fit":
        learner.fit(X, y, qid)
    else:
        learner.fit_data(TrainingData(X, y, qid))
    # a C list's rows, checked by cross_validate (RankRLS's exact leave-query-out has no rows)
    rows = 2 if "C list" in name and name != "rankrls C list loqo" else 0
    assert calls.count(counted_class.__name__) == 1 + rows
    assert len(settings_checks) == 1


def test_fit_data_takes_a_training_data_as_fit_takes_arrays():
    """fit_data (rank_learn's entry: the reader's documents, checked once) gives fit's model."""
    X, y, qid = documents(6)
    for make in (lambda: RankSVM(C=1.0), lambda: RankSVML1(C=1.0), lambda: RankRLS(C=[0.1, 1.0]),
                 lambda: KernelApproxLearner(RankSVM(C=1.0), landmarks=10)):
        given = make().fit_data(TrainingData(csr.as_csr(sp.csr_matrix(X)), y, qid))
        np.testing.assert_array_equal(given.predict(X),
                                      make().fit(sp.csr_matrix(X), y, qid).predict(X))
    with pytest.raises(ValueError, match="C must be a positive number"):
        RankSVM(C=-1.0).fit_data(TrainingData(X, y, qid))
