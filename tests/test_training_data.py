"""Input is checked and converted once, where it enters an estimator
(rankfast.data.validation.TrainingData)."""
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from rankfast import RankSVM
from rankfast.data import sparse as csr
from rankfast.data.validation import TrainingData, predicted
from rankfast.learners import _base as base


def documents(seed=0, n=40, d=6):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 2)
    X[:, [1, 4]] = 0.0                                  # two empty columns
    X[rng.random(size=(n, d)) < 0.3] = 0.0
    qid = rng.integers(1, 6, size=n)                    # rows of a query not contiguous
    y = rng.integers(0, 3, size=n).astype(float)
    return X, y, qid


@pytest.mark.parametrize("sparse", [False, True])
def test_grouped_rows_follow_the_queries_first_appearance_and_drop_empty_columns(sparse):
    X, y, qid = documents()
    data = TrainingData(csr.as_csr(sp.csr_matrix(X)) if sparse else X, y, qid)
    grouped, labels, starts, used = data.grouped()
    order = [q for i, q in enumerate(qid) if q not in qid[:i]]           # by first appearance
    rows = np.concatenate([np.flatnonzero(qid == q) for q in order])     # file order within
    expected_used = np.array([j for j in range(X.shape[1]) if X[:, j].any()])
    np.testing.assert_array_equal(used, expected_used)
    dense = grouped.to_scipy().toarray() if sparse else grouped
    np.testing.assert_array_equal(dense, X[rows][:, expected_used])
    np.testing.assert_array_equal(labels, y[rows])
    np.testing.assert_array_equal(starts, np.cumsum([0] + [np.sum(qid == q) for q in order]))
    assert data.sparse == sparse


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
    # X once for the folds, and once by the refit on all rows; φ(X) once per fit (3 folds
    # x 2 C, and the refit); the held-out folds are scored without a check
    assert (counter.checks, counter.scans, counter.outside) == (2 + 7, 2 + 7, [])
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




@pytest.mark.parametrize("weights", [False, True])
def test_a_fit_analyses_its_queries_once(monkeypatch, weights):
    """One Queries per fit, and its query ids sorted once (query_index), whatever reads them:
    the check for pairs, the query weights, the grouped rows."""
    from rankfast.data import queries
    calls = {"Queries": 0, "query_index": 0}
    real_index, real_init = queries.query_index, queries.Queries.__init__

    def counted_index(*args):
        calls["query_index"] += 1
        return real_index(*args)

    def counted_init(self, qid):
        calls["Queries"] += 1
        real_init(self, qid)
    monkeypatch.setattr(queries, "query_index", counted_index)
    monkeypatch.setattr(queries.Queries, "__init__", counted_init)
    X, y, qid = documents(5)
    shuffled = np.random.default_rng(0).permutation(len(qid))      # queries not contiguous
    extra = {"sample_weight": np.ones(len(qid))} if weights else {}
    RankSVM(C=1.0).fit(X[shuffled], y[shuffled], qid[shuffled], **extra)
    assert calls == {"Queries": 1, "query_index": 1}
