"""The pair kernels with a weight on each pair's preferred document (learning from clicks):
the squared hinge (PRSVM) and the hinge (svm_rank's objective) against their pair twins."""

import numpy as np
import pytest
from reference_impl import hinge_pairs, squared_hinge_hessvec_pairs, squared_hinge_pairs

from rankfast._kernels import _hinge, _prsvm


def weighted_queries(seed, n_levels=4, n_queries=30, max_size=40, grid=False):
    """(scores, labels, starts, query weights, document weights): single-document queries,
    a query of one level, ties in score and pairs exactly at margin 1 (grid=True)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, size=n_queries)
    sizes[:2] = 1
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(starts[-1])
    labels = rng.integers(0, n_levels, size=n).astype(np.float64)
    labels[starts[2]:starts[3]] = 1.0
    scores = rng.integers(-6, 7, size=n) * 0.5 if grid else rng.normal(size=n) * 2.0
    weight = rng.uniform(0.1, 3.0, size=n_queries)
    doc_weight = np.exp(rng.normal(size=n) * 2.0)             # spans e^-6 .. e^6
    return scores, labels, starts, weight, doc_weight


def inputs(scores, labels, starts):
    levels, rank = np.unique(labels, return_inverse=True)
    query = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    order = np.lexsort((scores, query)).astype(np.int64)
    return rank.ravel().astype(np.int64), order, len(levels)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n_levels", [1, 2, 5, 12])
def test_weighted_squared_hinge_matches_its_pair_twin(seed, n_levels):
    scores, labels, starts, weight, v = weighted_queries(seed, n_levels, grid=seed % 2 == 0)
    rank, order, L = inputs(scores, labels, starts)
    grad = np.full(len(scores), np.nan)
    loss = _prsvm.squared_hinge(scores, rank, starts, order, weight, L, grad, doc_weight=v)
    loss_twin, grad_twin = squared_hinge_pairs(scores, labels, starts, weight, v)
    assert loss == pytest.approx(loss_twin, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(grad, grad_twin, rtol=1e-11, atol=1e-11)
    d = np.random.default_rng(seed + 100).normal(size=len(scores))
    out = np.full(len(scores), np.nan)
    _prsvm.squared_hinge_hessvec(scores, rank, starts, order, weight, L, d, out, doc_weight=v)
    np.testing.assert_allclose(out, squared_hinge_hessvec_pairs(scores, labels, starts, weight,
                                                                d, v), rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n_levels", [1, 2, 5, 40])
def test_weighted_hinge_matches_its_pair_twin(seed, n_levels):
    scores, labels, starts, weight, v = weighted_queries(seed, n_levels, grid=seed % 2 == 0)
    rank, order, L = inputs(scores, labels, starts)
    grad = np.full(len(scores), np.nan)
    loss = _hinge.hinge(scores, rank, starts, order, weight, L, grad, doc_weight=v)
    loss_twin, grad_twin = hinge_pairs(scores, labels, starts, weight, v)
    assert loss == pytest.approx(loss_twin, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(grad, grad_twin, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("kernel", ["squared_hinge", "hinge"])
def test_unit_document_weights_give_the_unweighted_bits(kernel):
    scores, labels, starts, weight, _ = weighted_queries(3, 5)
    rank, order, L = inputs(scores, labels, starts)
    module = _prsvm if kernel == "squared_hinge" else _hinge
    g1, g2 = np.empty(len(scores)), np.empty(len(scores))
    l1 = getattr(module, kernel)(scores, rank, starts, order, weight, L, g1)
    l2 = getattr(module, kernel)(scores, rank, starts, order, weight, L, g2,
                                 doc_weight=np.ones(len(scores)))
    assert l1 == l2 and np.array_equal(g1, g2)


def test_weighted_kernels_give_the_same_bits_on_any_number_of_threads():
    scores, labels, starts, weight, v = weighted_queries(5, 4, n_queries=400)
    rank, order, L = inputs(scores, labels, starts)
    chunks = np.arange(0, len(starts), 7, dtype=np.int64)
    chunks = np.unique(np.r_[chunks, len(starts) - 1])
    results = []
    for threads in (1, 2, 3):
        g = np.empty(len(scores))
        f = _prsvm.squared_hinge(scores, rank, starts, order, weight, L, g, chunks, threads,
                                 doc_weight=v)
        h = np.empty(len(scores))
        f1 = _hinge.hinge(scores, rank, starts, order, weight, L, h, chunks, threads,
                          doc_weight=v)
        results.append((f, g, f1, h))
    for other in results[1:]:
        assert other[0] == results[0][0] and other[2] == results[0][2]
        assert np.array_equal(other[1], results[0][1]) and np.array_equal(other[3], results[0][3])


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("n_levels", [1, 2, 6])
def test_split_level_sums_match_the_double_sums(fast, n_levels):
    from scipy.special import erfc

    from rankfast._kernels import _erfc
    from rankfast.losses.erfc import erfc_parameters
    scores, labels, starts, _, v = weighted_queries(n_levels, n_levels, max_size=60)
    query = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    rank = np.unique(labels, return_inverse=True)[1].ravel().astype(np.int64)
    group_order = np.lexsort((rank, query)).astype(np.int64)
    kq, kr = query[group_order], rank[group_order]
    change = np.flatnonzero((np.diff(kq) != 0) | (np.diff(kr) != 0)) + 1
    group_starts = np.r_[0, change, len(scores)].astype(np.int64)
    lower, higher = np.full(len(scores), np.nan), np.full(len(scores), np.nan)
    _erfc.split_level_sums(scores, v, starts, group_order, group_starts, fast,
                           *erfc_parameters(1e-10).kernel_args(), lower, higher)
    for q in range(len(starts) - 1):
        a, b = starts[q], starts[q + 1]
        below = labels[a:b][None, :] < labels[a:b][:, None]
        terms = erfc(scores[a:b][:, None] - scores[a:b][None, :])
        np.testing.assert_allclose(lower[a:b], (terms * below).sum(axis=1), rtol=0, atol=1e-8)
        np.testing.assert_allclose(higher[a:b], (terms * below.T) @ v[a:b], rtol=0,
                                   atol=1e-8 * max(1.0, v[a:b].sum()))
