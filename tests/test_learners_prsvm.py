"""rankfast.learners.prsvm (RankSVM): the squared hinge kernel against its pair twin, and the
learner against the optimum of its objective."""

import tracemalloc

import numpy as np
import pytest
import reference_impl as _reference
import scipy.optimize
import scipy.sparse as sp
from data_makers import unscaled
from fit_helpers import fitted_on_mslr as fitted
from reference_impl import prsvm_objective_pairs, squared_hinge_pairs

from rankfast import RankSVM, metrics
from rankfast._kernels import _prsvm
from rankfast.data.queries import query_starts
from rankfast.learners._linear import query_weights


def make_queries(rng, sizes, n_levels, real_labels=False, decimals=None, spread=2.0):
    """Contiguous queries of the given sizes: (scores, labels, starts, weight)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    if real_labels:
        levels = rng.normal(size=n_levels) * 3.0
    else:
        levels = np.arange(n_levels, dtype=np.float64)
    labels = levels[rng.integers(0, n_levels, size=n)] if n_levels else np.zeros(n)
    scores = rng.normal(size=n) * spread
    if decimals is not None:
        scores = np.round(scores, decimals)
    weight = rng.uniform(0.1, 3.0, size=len(sizes))
    return scores, labels, starts, weight


def kernel_inputs(scores, labels, starts):
    """(rank, order, n_levels) as a caller of the kernels builds them."""
    levels, rank = np.unique(labels, return_inverse=True)
    query = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    order = np.lexsort((scores, query)).astype(np.int64)
    return rank.ravel().astype(np.int64), order, len(levels)


def kernel_loss(scores, labels, starts, weight):
    rank, order, n_levels = kernel_inputs(scores, labels, starts)
    grad = np.full(len(scores), np.nan)
    loss = _prsvm.squared_hinge(scores, rank, starts, order, weight, n_levels, grad)
    return loss, grad


def kernel_hessvec(scores, labels, starts, weight, d):
    rank, order, n_levels = kernel_inputs(scores, labels, starts)
    out = np.full(len(scores), np.nan)
    _prsvm.squared_hinge_hessvec(scores, rank, starts, order, weight, n_levels, d, out)
    return out


def cases():
    """(name, scores, labels, starts, weight) covering the awkward shapes."""
    rng = np.random.default_rng(20240601)
    out = []
    for n_levels in range(1, 7):
        for decimals in (None, 1):
            sizes = rng.integers(1, 61, size=8)
            out.append((f"levels{n_levels}-dec{decimals}",)
                       + make_queries(rng, sizes, n_levels, decimals=decimals))
    out.append(("real-labels",) + make_queries(rng, rng.integers(1, 61, size=10), 5,
                                                real_labels=True))
    out.append(("real-labels-ties",) + make_queries(rng, rng.integers(1, 61, size=10), 6,
                                                     real_labels=True, decimals=1))
    out.append(("single-docs",) + make_queries(rng, np.ones(7, dtype=np.int64), 3))
    out.append(("mixed-single",) + make_queries(rng, [1, 40, 1, 1, 25, 1], 4, decimals=1))
    # exact binary grid: many pairs exactly on the boundary s_j == s_i - 1.0
    grid = make_queries(rng, rng.integers(1, 61, size=8), 4)
    out.append(("boundary-grid", np.round(grid[0] * 2) / 4) + grid[1:])
    # queries of one label level each, then a mixed one
    sc, lab, st, w = make_queries(rng, [5, 12, 30], 4, decimals=1)
    lab[:5] = 2.0
    lab[5:17] = 0.0
    out.append(("one-level-queries", sc, lab, st, w))
    out.append(("big-query",) + make_queries(rng, [300], 6, decimals=1))
    out.append(("big-query-many-levels",) + make_queries(rng, [300, 3], 40, real_labels=True))
    for n_levels in (8, 9):             # the last flat tree (one node per level), the first Fenwick
        out.append((f"levels{n_levels}",) + make_queries(rng, rng.integers(1, 61, size=8), n_levels))
    # a large per-query offset in the scores (as query-level features give)
    sc, lab, st, w = make_queries(rng, rng.integers(1, 61, size=6), 5)
    offset = np.repeat(rng.normal(size=6) * 1e4, np.diff(st))
    out.append(("offset", sc + offset, lab, st, w))
    return out


CASES = cases()


IDS = [c[0] for c in CASES]


def test_twin_by_hand():
    # labels 2 > 1 > 0; scores 0.2, 0.5, 3.0: pairs (0,1), (0,2) active, (1,2) active
    scores = np.array([0.2, 0.5, 3.0, 7.0])
    labels = np.array([2.0, 1.0, 0.0, 5.0])
    starts = np.array([0, 3, 4])
    weight = np.array([0.5, 9.0])
    r01, r02, r12 = 1 - 0.2 + 0.5, 1 - 0.2 + 3.0, 1 - 0.5 + 3.0
    loss, grad = _reference.squared_hinge_pairs(scores, labels, starts, weight)
    assert loss == pytest.approx(0.5 * (r01 ** 2 + r02 ** 2 + r12 ** 2), rel=1e-14)
    expected = 0.5 * 2 * np.array([-r01 - r02, r01 - r12, r02 + r12, 0.0])
    np.testing.assert_allclose(grad, expected, rtol=1e-14)
    d = np.array([1.0, -2.0, 0.5, 4.0])
    hv = _reference.squared_hinge_hessvec_pairs(scores, labels, starts, weight, d)
    expected = 0.5 * 2 * np.array([(1 + 2) + (1 - 0.5), (-2 - 1) + (-2 - 0.5),
                                   (0.5 - 1) + (0.5 + 2), 0.0])
    np.testing.assert_allclose(hv, expected, rtol=1e-14)


def test_boundary_pair_inactive_in_both():
    # s_j == s_i - 1.0 exactly: not active, so it adds nothing to the Hessian
    scores = np.array([1.5, 0.5, 0.75])
    labels = np.array([1.0, 0.0, 0.0])
    starts = np.array([0, 3])
    weight = np.array([1.0])
    d = np.array([1.0, 2.0, 3.0])
    expected = 2 * np.array([1 - 3, 0.0, 3 - 1])
    np.testing.assert_array_equal(
        _reference.squared_hinge_hessvec_pairs(scores, labels, starts, weight, d), expected)
    np.testing.assert_array_equal(kernel_hessvec(scores, labels, starts, weight, d), expected)


@pytest.mark.parametrize("name, scores, labels, starts, weight", CASES, ids=IDS)
def test_loss_and_gradient_match_twin(name, scores, labels, starts, weight):
    loss, grad = kernel_loss(scores, labels, starts, weight)
    ref_loss, ref_grad = _reference.squared_hinge_pairs(scores, labels, starts, weight)
    if name != "single-docs" and len(np.unique(labels)) > 1:
        assert ref_loss > 0                        # the case does exercise some pairs
    assert loss == pytest.approx(ref_loss, rel=1e-10, abs=1e-12)
    scale = max(1.0, np.abs(ref_grad).max(initial=0.0))
    np.testing.assert_allclose(grad, ref_grad, rtol=0, atol=1e-9 * scale)


@pytest.mark.parametrize("name, scores, labels, starts, weight", CASES, ids=IDS)
def test_hessvec_matches_twin(name, scores, labels, starts, weight):
    d = np.random.default_rng(len(scores)).normal(size=len(scores))
    out = kernel_hessvec(scores, labels, starts, weight, d)
    ref = _reference.squared_hinge_hessvec_pairs(scores, labels, starts, weight, d)
    scale = max(1.0, np.abs(ref).max(initial=0.0))
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-9 * scale)


def test_kernel_ignores_order_of_tied_scores():
    rng = np.random.default_rng(7)
    scores, labels, starts, weight = make_queries(rng, [50, 30], 4, decimals=0)
    rank, order, n_levels = kernel_inputs(scores, labels, starts)
    query = np.repeat(np.arange(2), np.diff(starts))
    other = np.lexsort((-np.arange(len(scores)), scores, query)).astype(np.int64)
    assert not np.array_equal(order, other)
    g1, g2 = np.empty(len(scores)), np.empty(len(scores))
    l1 = _prsvm.squared_hinge(scores, rank, starts, order, weight, n_levels, g1)
    l2 = _prsvm.squared_hinge(scores, rank, starts, other, weight, n_levels, g2)
    assert l1 == pytest.approx(l2, rel=1e-12)
    np.testing.assert_allclose(g1, g2, rtol=0, atol=1e-10 * np.abs(g1).max())


def test_empty_input():
    scores = np.zeros(0)
    starts = np.zeros(1, dtype=np.int64)
    empty_i = np.zeros(0, dtype=np.int64)
    grad = np.zeros(0)
    assert _prsvm.squared_hinge(scores, empty_i, starts, empty_i, np.zeros(0), 0, grad) == 0.0
    out = np.zeros(0)
    _prsvm.squared_hinge_hessvec(scores, empty_i, starts, empty_i, np.zeros(0), 0,
                                 np.zeros(0), out)
    loss, g = _reference.squared_hinge_pairs(scores, np.zeros(0), starts, np.zeros(0))
    assert loss == 0.0 and len(g) == 0


def off_boundary_queries(seed):
    """Scores 0.3 k + u, |u| < 0.025: every pairwise difference is >= 0.05 from 1."""
    rng = np.random.default_rng(seed)
    scores, labels, starts, weight = make_queries(rng, rng.integers(1, 40, size=6), 5)
    scores = 0.3 * rng.integers(-12, 13, size=len(scores)) + rng.uniform(-0.025, 0.025,
                                                                          size=len(scores))
    for q in range(len(starts) - 1):
        s = scores[starts[q]:starts[q + 1]]
        assert np.abs(s[:, None] - s[None, :] - 1.0).min() > 0.04
    return scores, labels, starts, weight


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_gradient_is_finite_difference_of_twin(seed):
    scores, labels, starts, weight = off_boundary_queries(seed)
    _, grad = kernel_loss(scores, labels, starts, weight)
    h = 1e-5
    fd = np.empty(len(scores))
    for i in range(len(scores)):
        e = np.zeros(len(scores))
        e[i] = h
        up, _ = _reference.squared_hinge_pairs(scores + e, labels, starts, weight)
        down, _ = _reference.squared_hinge_pairs(scores - e, labels, starts, weight)
        fd[i] = (up - down) / (2 * h)
    assert np.abs(grad).max() > 1.0
    np.testing.assert_allclose(grad, fd, rtol=0, atol=1e-6 * np.abs(grad).max())


@pytest.mark.parametrize("seed", [4, 5])
def test_hessvec_is_gradient_difference(seed):
    # the loss is quadratic while no pair crosses the boundary: g(s + e d) - g(s) = e H d
    scores, labels, starts, weight = off_boundary_queries(seed)
    d = np.random.default_rng(seed).normal(size=len(scores))
    eps = 1e-3
    _, g0 = kernel_loss(scores, labels, starts, weight)
    _, g1 = kernel_loss(scores + eps * d, labels, starts, weight)
    hv = kernel_hessvec(scores, labels, starts, weight, d)
    assert np.abs(hv).max() > 1.0
    np.testing.assert_allclose((g1 - g0) / eps, hv, rtol=0, atol=1e-8 * np.abs(hv).max())


def test_prsvm_objective_dense_and_sparse():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(40, 6)) * (rng.random((40, 6)) < 0.5)
    y = rng.integers(0, 3, size=40).astype(np.float64)
    starts = np.array([0, 15, 16, 40])
    weight = np.array([1.0, 2.0, 0.5])
    w = rng.normal(size=6)
    loss, _ = _reference.squared_hinge_pairs(X @ w, y, starts, weight)
    expected = 0.5 * w @ w + loss
    assert _reference.prsvm_objective_pairs(X, y, starts, weight, w) == pytest.approx(expected)
    assert _reference.prsvm_objective_pairs(sp.csr_matrix(X), y, starts, weight, w) \
        == pytest.approx(expected)


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


@pytest.mark.parametrize("bad", [dict(C=-1.0), dict(C=0.0), dict(C=[1.0, -1.0]), dict(loss=3)],
                         ids=["negative C", "zero C", "negative C in a list", "loss 3"])
def test_bad_parameters_are_refused_not_trained(bad):
    from rankfast import UsageError
    X, y, qid = np.eye(4), np.array([1.0, 0.0, 1.0, 0.0]), np.array([1, 1, 2, 2])
    with pytest.raises(UsageError):
        RankSVM(**bad).fit(X, y, qid)


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


def test_prsvm_default_ndcg_is_its_tight_solves_on_raw_mslr(mslr):
    train, test = mslr
    ndcg = [metrics.ndcg(fitted("prsvm", 0.01, train, tight).predict(test.features), test.y,
                         test.qid, 10, convention="standard") for tight in (False, True)]
    assert abs(ndcg[0] - ndcg[1]) <= 0.005, ndcg
    assert ndcg[0] > 0.3, ndcg                            # a zero model scores 0.207


def test_prsvm_leaves_zero_on_unscaled_data():
    """The bug itself: one loosely solved Newton step once looked converged at w ≈ 0."""
    X, y, qid = unscaled(one_ranking=False, seed=3)
    model = RankSVM(C=0.01).fit(X, y, qid)
    assert model.result_.iterations > 1
    tight = RankSVM(C=0.01, tol=1e-10, max_iter=500).fit(X, y, qid)
    assert (model.result_.f - tight.result_.f) / tight.result_.f <= 1e-3
