"""The examination model's eta, estimated from clicks: swap interventions, or two rankers' logs."""
from __future__ import annotations

import numpy as np

from ..data.queries import Queries
from .simulate import shown_results

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import VectorLike


def estimate_eta(clicks_moved: VectorLike, clicks_at_top: VectorLike,
                 rank: VectorLike) -> tuple[float, np.ndarray]:
    """eta of p(rank) = (1/rank)^eta from randomised swap interventions (Joachims et al. 2017, §5).

    In a swap-(1, k) intervention the result the ranker put first is shown at
    rank k, so its clicks there over its clicks at rank 1 (in as many
    sessions without the swap) estimate p_k / p_1 whatever its relevance.

    Parameters
    ----------
    clicks_moved : array-like
        For each k, clicks on the top result when it was moved to rank k.
    clicks_at_top : array-like
        For each k, clicks on the top result at rank 1 in as many sessions.
    rank : array-like
        The k of each intervention (≥ 2).

    Returns
    -------
    (eta, relative propensities p_k / p_1)
        eta by least squares of log(p_k / p_1) = −eta log k through the origin.
    """
    moved = np.asarray(clicks_moved, dtype=np.float64)
    top = np.asarray(clicks_at_top, dtype=np.float64)
    k = np.asarray(rank, dtype=np.float64)
    if not (moved.shape == top.shape == k.shape) or moved.ndim != 1 or len(k) == 0:
        raise ValueError("clicks_moved, clicks_at_top and rank must be 1-D of one length")
    if (k < 2).any() or (top <= 0).any() or (moved <= 0).any():
        raise ValueError("every swap needs rank >= 2 and clicks on both sides")
    relative = moved / top
    logk = np.log(k)
    return float(-(logk @ np.log(relative)) / (logk @ logk)), relative


def estimate_eta_from_rankers(scores_a: VectorLike, scores_b: VectorLike, qid: VectorLike,
                              log_a: Any, log_b: Any,
                              top_k: int | None = None) -> tuple[float, np.ndarray]:
    """eta of p(rank) = (1/rank)^eta from the click logs of two rankers, without an intervention.

    Intervention harvesting (Agarwal, Zaitsev, Wang, Li, Najork & Joachims,
    WSDM 2019): when two rankers served the same queries (an A/B test), a
    document ranked k by one and k' by the other was clicked, per session,
    p_k r / p_k' r times as often under the first: the relevance r cancels.
    The clicks of the documents at each pair of ranks (k, k') are pooled (per
    session of their query under each ranker), and eta is fitted by least
    squares to log(p_k / p_k') = −eta log(k / k'), each pair of ranks weighing
    its clicks.

    Parameters
    ----------
    scores_a, scores_b : array-like, shape (n_documents,)
        The two rankers' scores of the logged documents (higher first, as the
        sessions showed them; the top ``top_k``).
    qid : array-like, shape (n_documents,)
    log_a, log_b : rankfast.clicks.ClickLog
        Each ranker's clicks (simulate_clicks' form: rows, ranks, counts, and
        the sessions of each query).

    Returns
    -------
    (eta, table)
        table rows (k, k', pooled clicks per session under A, under B, clicks).
    """
    qid = np.asarray(qid)
    queries = Queries(qid)
    order = np.arange(len(qid)) if queries.permutation is None else queries.permutation
    rank_a, rank_b = np.zeros(len(qid), np.int64), np.zeros(len(qid), np.int64)
    for scores, rank in ((np.asarray(scores_a, float), rank_a), (np.asarray(scores_b, float), rank_b)):
        for q in range(queries.n_queries):
            shown = shown_results(scores, order[queries.starts[q]:queries.starts[q + 1]], top_k)
            rank[shown] = np.arange(1, len(shown) + 1)
    rates = []
    for log in (log_a, log_b):
        clicks = np.bincount(log.row, weights=log.count, minlength=len(qid))
        sessions = np.asarray(log.query_sessions, dtype=np.float64)[queries.index]
        rates.append((clicks, np.divide(clicks, sessions, out=np.zeros(len(qid)),
                                        where=sessions > 0)))
    both = (rank_a > 0) & (rank_b > 0) & (rank_a != rank_b)
    key = rank_a[both] * (len(qid) + 1) + rank_b[both]
    cells, inverse = np.unique(key, return_inverse=True)
    pooled_a = np.bincount(inverse, weights=rates[0][1][both])
    pooled_b = np.bincount(inverse, weights=rates[1][1][both])
    clicks = np.bincount(inverse, weights=rates[0][0][both] + rates[1][0][both])
    k, k2 = cells // (len(qid) + 1), cells % (len(qid) + 1)
    usable = (pooled_a > 0) & (pooled_b > 0)
    if not usable.any():
        raise ValueError("no document was clicked under both rankers at different ranks")
    x = np.log(k[usable] / k2[usable])
    y = np.log(pooled_a[usable] / pooled_b[usable])
    w = clicks[usable]
    table = np.column_stack([k, k2, pooled_a, pooled_b, clicks])
    return float(-(w * x) @ y / ((w * x) @ x)), table
