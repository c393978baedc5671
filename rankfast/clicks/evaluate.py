"""Counterfactual evaluation: a ranker's average rank of relevant results and DCG from clicks.

The click log of svm_proprank's files holds, per click instance, the
clicked document (target 1, ``cost:`` its inverse propensity) among the
candidates of its query.  Under a new ranker the clicked document takes some
rank; weighting that rank by the click's inverse propensity estimates, without
a label, the rank the ranker gives relevant results (Joachims, Swaminathan &
Schnabel 2017, §4): self-normalised by the weights, the estimate is of the
mean over relevant documents, the figure relevant_rank_metrics computes from
labels, so the two can be set side by side.
"""
from __future__ import annotations

import collections

import numpy as np

from ..data.queries import Queries
from ..data.validation import check_labels, query_ids

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from .._typing import VectorLike


class RankMetrics(collections.namedtuple("RankMetrics", "average_rank dcg")):
    """``average_rank``: mean rank (1 = top) of a relevant result; ``dcg``: mean of
    1 / log2(1 + rank) over relevant results (a query's DCG with binary gains,
    per relevant result).  (collections.namedtuple: typing costs milliseconds to import.)"""

    __slots__ = ()


def _ranks(scores, qid):
    """Each document's rank (1-based) in its query by decreasing score; ties take the
    worse rank (a ranker gains nothing from a tie)."""
    queries = Queries(qid)
    index = queries.index
    order = np.lexsort((-scores, index))
    sorted_q, sorted_s = index[order], scores[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (sorted_q[1:] != sorted_q[:-1]) | (sorted_s[1:] != sorted_s[:-1])
    group_end = np.r_[np.flatnonzero(new)[1:], len(order)] - 1   # last position of each tie run
    run = np.cumsum(new) - 1
    first = np.full(queries.n_queries, len(order), dtype=np.int64)
    np.minimum.at(first, sorted_q, np.arange(len(order)))
    ranks = np.empty(len(order), dtype=np.float64)
    ranks[order] = group_end[run] - first[sorted_q] + 1
    return ranks


def counterfactual_metrics(scores: VectorLike, clicked: VectorLike, qid: VectorLike,
                           cost: VectorLike) -> RankMetrics:
    """The inverse-propensity estimates of a ranker's RankMetrics from a click log.

    Parameters
    ----------
    scores : array-like, shape (n_documents,)
        The ranker's scores of the log's documents.
    clicked : array-like, shape (n_documents,)
        Targets of the log: > 0 on the clicked document of each instance.
    qid : array-like, shape (n_documents,)
        The log's query ids (one click instance each, or several clicks).
    cost : array-like, shape (n_documents,)
        Each click's inverse propensity (cost:; read on clicked documents only).
    """
    clicked = check_labels(clicked, len(np.asarray(clicked)), "rankfast.clicks") > 0
    qid = query_ids(len(clicked), qid, None)
    scores = np.asarray(scores, dtype=np.float64).ravel()
    weight = np.asarray(cost, dtype=np.float64)[clicked]
    if not len(weight) or not np.isfinite(weight).all() or (weight <= 0).any():
        raise ValueError("the click log needs clicks with positive, finite costs")
    weight = np.ldexp(weight, -np.frexp(weight.max())[1])          # sums cannot overflow
    rank = _ranks(scores, qid)[clicked]
    total = weight.sum()
    return RankMetrics(float(weight @ rank / total), float(weight @ (1.0 / np.log2(1.0 + rank))
                                                         / total))


def relevant_rank_metrics(scores: VectorLike, y: VectorLike, qid: VectorLike,
                          relevant_at: float = 1.0) -> RankMetrics:
    """The true RankMetrics of a ranker on labelled data: over its relevant documents
    (label ≥ ``relevant_at``), pooled over queries."""
    y = check_labels(y, len(np.asarray(y)), "rankfast.clicks")
    qid = query_ids(len(y), qid, None)
    relevant = y >= relevant_at
    if not relevant.any():
        raise ValueError("no document is relevant")
    rank = _ranks(np.asarray(scores, dtype=np.float64).ravel(), qid)[relevant]
    return RankMetrics(float(rank.mean()), float(np.mean(1.0 / np.log2(1.0 + rank))))
