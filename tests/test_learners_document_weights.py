"""Weights on documents (learning from clicks): PRSVM and svm_rank's objective with a weight on
each pair's preferred document, against pair twins and the meaning of a weight."""

import numpy as np
import pytest
from reference_impl import hinge_pairs, squared_hinge_pairs
from scipy.optimize import minimize

from rankfast import GreedyRankRLS, RankNCG, RankRLS, RankSVM, RankSVML1
from rankfast.data.validation import pair_weights


def click_log(seed, n_queries=30, size=8, d=5, clicks=1):
    """A click log as svm_proprank reads it: per query, ``clicks`` clicked documents (label 1,
    weight 1/propensity) among unclicked ones (label 0, weight 1)."""
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(n_queries), size)
    X = rng.normal(size=(len(qid), d))
    y = np.zeros(len(qid))
    weight = np.ones(len(qid))
    for q in range(n_queries):
        rows = q * size + rng.choice(size, clicks, replace=False)
        y[rows] = 1.0
        weight[rows] = 1.0 / (1.0 / (1 + rng.integers(0, 10, size=clicks)))   # rank^eta, eta=1
    return X, y, qid, weight


def pair_objective(kernel, X, y, qid, C, row_weight):
    """½‖w‖² + Σ_pairs (C/Q) (w_q Q/Σw) (v_i / w_q) loss: the objective the weights define,
    pairs enumerated (w_q: the query's mean weight over its preferred documents)."""
    starts = np.r_[0, np.flatnonzero(np.diff(qid)) + 1, len(qid)]
    pw = pair_weights(row_weight, qid, y)
    Q = len(starts) - 1
    c = np.full(Q, C / Q) * (1.0 if pw.query is None else pw.query)
    v = None if pw.document is None else pw.document

    def f(w):
        loss, grad = kernel(X @ w, y, starts, c, v)
        return 0.5 * w @ w + loss, w + X.T @ grad
    return f


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("clicks", [1, 3])
def test_prsvm_reaches_the_optimum_of_the_weighted_objective(seed, clicks):
    X, y, qid, weight = click_log(seed, clicks=clicks)
    y[::7] = 2.0                            # graded labels too: weights on every preferred level
    weight = weight * np.exp(np.random.default_rng(seed).normal(size=len(y)))
    f = pair_objective(squared_hinge_pairs, X, y, qid, 3.0, weight)
    reference = minimize(f, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                         options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000}).x
    model = RankSVM(C=3.0, tol=1e-10).fit(X, y, qid, sample_weight=weight)
    assert pair_weights(weight, qid, y).document is not None     # weights within queries
    np.testing.assert_allclose(model.weights_, reference, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("seed", range(2))
def test_svmrank_reaches_the_optimum_of_the_weighted_hinge(seed):
    X, y, qid, weight = click_log(seed, n_queries=8, size=5, d=3, clicks=2)
    weight = weight * np.exp(np.random.default_rng(seed).normal(size=len(y)))
    f = pair_objective(hinge_pairs, X, y, qid, 2.0, weight)
    model = RankSVML1(C=2.0, tol=1e-8).fit(X, y, qid, sample_weight=weight)
    value = f(model.weights_)[0]
    assert model.result_.converged
    assert value == pytest.approx(model.result_.f, rel=1e-9, abs=1e-9)
    # no direction improves on it beyond the certified gap
    rng = np.random.default_rng(seed)
    for _ in range(50):
        trial = model.weights_ + rng.normal(size=3) * 10.0 ** rng.uniform(-4, 0)
        assert f(trial)[0] >= value - model.result_.gap - 1e-12


@pytest.mark.parametrize("learner", [RankSVM, RankSVML1, RankNCG, RankRLS])
def test_a_click_weighted_two_is_that_click_twice(learner):
    X, y, qid, weight = click_log(4, n_queries=12)
    weight[qid == 3] *= 2.0 / weight[(qid == 3) & (y == 1)][0]   # query 3's click weighs 2 ...
    weight[(qid == 3) & (y == 0)] = 1.0
    twice = np.flatnonzero(qid == 3)
    X2 = np.vstack([X, X[twice]])
    y2 = np.r_[y, y[twice]]
    qid2 = np.r_[qid, np.full(len(twice), 99)]
    w2 = np.r_[weight, weight[twice]]
    w2[(qid2 == 3) | (qid2 == 99)] = np.where(y2[(qid2 == 3) | (qid2 == 99)] == 1, 1.0, 1.0)
    one = learner(C=1.0).fit(X, y, qid, sample_weight=weight)
    two = learner(C=1.0).fit(X2, y2, qid2, sample_weight=w2)     # ... as that click twice
    np.testing.assert_allclose(one.weights_, two.weights_, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("learner", [RankSVM, RankSVML1, RankNCG])
@pytest.mark.parametrize("size", [1.0, 3.0, 1e-300, 1e308])
def test_equal_weights_of_any_size_give_the_unweighted_model(learner, size):
    X, y, qid, _ = click_log(5, clicks=2)
    plain = learner(C=1.0).fit(X, y, qid)
    weighted = learner(C=1.0).fit(X, y, qid, sample_weight=np.full(len(y), size))
    assert np.array_equal(plain.weights_, weighted.weights_)


@pytest.mark.parametrize("learner", [RankSVM, RankSVML1, RankNCG])
def test_huge_and_tiny_weights_train_the_scaled_model(learner):
    X, y, qid, weight = click_log(6, clicks=2)
    reference = learner(C=1.0, tol=1e-9).fit(X, y, qid, sample_weight=weight)
    for scale in (2.0 ** 1000, 2.0 ** -1000):              # exact: the same bits
        scaled = learner(C=1.0, tol=1e-9).fit(X, y, qid, sample_weight=weight * scale)
        assert np.array_equal(scaled.weights_, reference.weights_)
    largest = learner(C=1.0, tol=1e-9).fit(X, y, qid,
                                         sample_weight=weight * (1e308 / weight.max()))
    assert np.abs(largest.weights_).max() > 0
    np.testing.assert_allclose(largest.weights_, reference.weights_, rtol=1e-3, atol=1e-4)


def test_query_weights_of_1e308_are_not_a_zero_model():
    X, y, qid, _ = click_log(7)
    plain = RankSVM(C=1.0).fit(X, y, qid)
    huge = RankSVM(C=1.0).fit(X, y, qid, sample_weight=np.full(len(y), 1e308))
    assert np.array_equal(plain.weights_, huge.weights_)
    mixed = np.where(qid % 2 == 0, 1e308, 1e307)
    model = RankSVM(C=1.0).fit(X, y, qid, sample_weight=mixed)
    assert np.abs(model.weights_).max() > 0


@pytest.mark.parametrize("learner", [RankRLS, GreedyRankRLS])
def test_learners_without_document_weights_refuse_them_by_name(learner):
    X, y, qid, weight = click_log(8, clicks=2)
    with pytest.raises(ValueError, match=f"{learner.name}.*prsvm, svmrank and rankncg"):
        learner(C=1.0).fit(X, y, qid, sample_weight=weight)


def test_cross_validation_on_clicks_weighs_fits_and_scores():
    X, y, qid, weight = click_log(9, n_queries=40, size=12, clicks=2)
    model = RankSVM(C=[0.1, 1.0, 10.0], cv=4).fit(X, y, qid, sample_weight=weight)
    assert model.C_ in (0.1, 1.0, 10.0) and len(model.cv_table_) == 3
    again = RankSVM(C=model.C_).fit(X, y, qid, sample_weight=weight)
    assert np.array_equal(model.weights_, again.weights_)


@pytest.mark.parametrize("erfc", ["fast", "direct"])
@pytest.mark.parametrize("n_levels", [2, 4])
def test_rankncg_weighted_gradient_is_the_weighted_objective_gradient(erfc, n_levels):
    from reference_impl import erfc_rank_objective_pairs

    from rankfast.losses.erfc_pairs import ErfcPairObjective

    def approx_fprime(w, f, h):               # central differences: error O(h²)
        return np.array([(f(w + h * e) - f(w - h * e)) / (2 * h) for e in np.eye(len(w))])
    rng = np.random.default_rng(n_levels)
    sizes = np.r_[1, rng.integers(2, 30, size=12)]
    starts = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    X = rng.normal(size=(starts[-1], 4))
    y = rng.integers(0, n_levels, size=starts[-1]).astype(float)
    c = rng.uniform(0.5, 2.0, size=len(sizes))
    v = np.exp(rng.normal(size=starts[-1]))
    objective = ErfcPairObjective(X, y, starts, c, 1e-10, erfc == "fast", doc_weight=v)
    w = rng.normal(size=4)
    numeric = approx_fprime(w, lambda u: erfc_rank_objective_pairs(X, y, starts, c, u, v), 1e-5)
    np.testing.assert_allclose(objective.point(w).g, numeric, rtol=1e-6, atol=1e-6)
    zero = objective.gradient_at_zero()
    np.testing.assert_allclose(zero, approx_fprime(np.zeros(4), lambda u: erfc_rank_objective_pairs(
        X, y, starts, c, u, v), 1e-5), rtol=1e-6, atol=1e-6)


def test_rankncg_reaches_the_optimum_of_the_weighted_objective():
    from reference_impl import erfc_rank_objective_pairs
    X, y, qid, weight = click_log(3, clicks=2)
    y[::5] = 2.0
    weight = weight * np.exp(np.random.default_rng(3).normal(size=len(y)))
    starts = np.r_[0, np.flatnonzero(np.diff(qid)) + 1, len(qid)]
    pw = pair_weights(weight, qid, y)
    c = np.full(len(starts) - 1, 3.0 / (len(starts) - 1)) * pw.query
    reference = minimize(lambda u: erfc_rank_objective_pairs(X, y, starts, c, u, pw.document),
                         np.zeros(X.shape[1]), method="BFGS", options={"gtol": 1e-10}).x
    model = RankNCG(C=3.0, tol=1e-8, erfc="direct").fit(X, y, qid, sample_weight=weight)
    np.testing.assert_allclose(model.weights_, reference, rtol=1e-4, atol=1e-6)


def test_loss_2_averages_each_query_s_pairs_by_their_weights():
    from rankfast.learners._linear import pair_counts, weighted_pair_counts
    rng = np.random.default_rng(11)
    starts = np.array([0, 1, 5, 12, 12, 20, 31])
    y = rng.integers(0, 3, size=31).astype(float)
    v = rng.uniform(0.1, 5.0, size=31)
    brute = [sum(v[i] for i in range(a, b) for j in range(a, b) if y[i] > y[j])
             for a, b in zip(starts[:-1], starts[1:])]
    np.testing.assert_allclose(weighted_pair_counts(y, starts, v), brute, rtol=1e-12)
    np.testing.assert_array_equal(weighted_pair_counts(y, starts, np.ones(31)),
                                  pair_counts(y, starts))
