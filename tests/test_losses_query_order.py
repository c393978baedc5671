"""Each query's order by score sorted from a previous order (rankfast.losses.query_order and
rankfast._kernels._prsvm.sort_within_queries' ``start``): the same order as a sort from scratch,
whatever permutation it starts from."""

import numpy as np
import pytest

from rankfast._kernels import _prsvm
from rankfast._kernels.threads import query_chunks
from rankfast.losses.query_order import QueryOrder


def random_queries(rng, n_queries, largest):
    """starts of contiguous queries of 0 .. largest documents (single documents and empty
    queries among them)."""
    sizes = rng.integers(0, largest + 1, size=n_queries)
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


def by_score_then_document(scores, starts):
    """The reference: each query's documents by (score, document), by NumPy."""
    query = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    return np.lexsort((np.arange(len(scores)), scores, query)).astype(np.int64)


def shuffled_within_queries(rng, order, starts):
    out = order.copy()
    for a, b in zip(starts[:-1], starts[1:]):
        out[a:b] = rng.permutation(out[a:b])
    return out


def sort(scores, starts, start=None, n_threads=1):
    order = np.empty(len(scores), dtype=np.int64)
    _prsvm.sort_within_queries(scores, starts, order, query_chunks(starts), n_threads, start=start)
    return order


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("ties", [False, True])
def test_any_start_gives_the_sort_from_scratch(n_threads, ties):
    rng = np.random.default_rng(3 + ties)
    for _ in range(20):
        starts = random_queries(rng, int(rng.integers(1, 40)), int(rng.integers(1, 120)))
        n = int(starts[-1])
        scores = rng.normal(size=n)
        if ties:                                  # few values, and -0.0 beside 0.0
            scores = np.round(scores) * rng.choice([1.0, -1.0], size=n) + 0.0 * scores
        expected = by_score_then_document(scores, starts)
        assert np.array_equal(sort(scores, starts, n_threads=n_threads), expected)
        nearby = sort(scores + 1e-3 * rng.normal(size=n), starts)          # few moves
        far = shuffled_within_queries(rng, expected, starts)             # the merge sort's
        backwards = sort(-scores, starts)                                # the most moves
        for start in (nearby, far, backwards, expected):
            assert np.array_equal(sort(scores, starts, start, n_threads), expected)


def test_start_may_be_the_output_array():
    rng = np.random.default_rng(5)
    starts = random_queries(rng, 30, 60)
    scores = rng.normal(size=int(starts[-1]))
    order = shuffled_within_queries(rng, by_score_then_document(scores, starts), starts)
    _prsvm.sort_within_queries(scores, starts, order, query_chunks(starts), 2, start=order)
    assert np.array_equal(order, by_score_then_document(scores, starts))


def test_nan_scores_order_as_the_sort_from_scratch_does():
    rng = np.random.default_rng(9)
    starts = random_queries(rng, 20, 30)
    scores = rng.normal(size=int(starts[-1]))
    scores[rng.random(len(scores)) < 0.2] = np.nan
    cold = sort(scores, starts)
    start = shuffled_within_queries(rng, cold, starts)
    assert np.array_equal(sort(scores, starts, start), cold)


def test_a_start_of_the_wrong_length_is_refused():
    starts = np.array([0, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="one document per score"):
        sort(np.zeros(3), starts, np.arange(2, dtype=np.int64))


def test_query_order_starts_from_its_last_order_and_keeps_no_caller_array():
    rng = np.random.default_rng(11)
    starts = random_queries(rng, 50, 40)
    n = int(starts[-1])
    orders = QueryOrder(starts, query_chunks(starts), 2)
    scores = rng.normal(size=n)
    first = orders(scores)
    kept = first.copy()
    for _ in range(5):
        scores = scores + 0.3 * rng.normal(size=n)
        order = orders(scores)
        assert order is not first
        assert np.array_equal(order, by_score_then_document(scores, starts))
    assert np.array_equal(first, kept)           # an order handed out is never written again
