"""A click simulator: a logging ranker's results shown, position-biased clicks, svm_proprank's files.

The simulation of Joachims, Swaminathan & Schnabel (WSDM 2017, §6): each
session samples a query uniformly, shows its documents in the logging
ranker's order (the top ``top_k``), and the user examines rank r with
probability (1/r)^eta and clicks an examined result with probability
``eps_plus`` when it is relevant (label ≥ ``relevant_at``), ``eps_minus``
when it is not.  Examination is independent across ranks, so the number of
sessions that click rank r of query q is binomial: the simulator draws one
count per shown result, and its time and memory grow with the documents shown,
not with the number of sessions.  Seeded: the same arguments give the same log.
"""
from __future__ import annotations

import collections

import numpy as np

from ..data.queries import Queries
from ..data.validation import check_labels, query_ids
from .propensity import clipped_weights, position_propensity

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import VectorLike


class ClickLog(collections.namedtuple("ClickLog",
                                       "row rank count n_sessions eta query_sessions")):
    """Clicks of simulated sessions, one entry per (document, rank) clicked at least once.

    ``row``: the clicked document (a row of the labelled data); ``rank``: where
    it was shown (1-based); ``count``: in how many sessions it was clicked there;
    ``n_sessions``: sessions simulated; ``eta``: the examination model's;
    ``query_sessions``: the sessions of each query (queries in order of first
    appearance).
    (collections.namedtuple: typing costs milliseconds to import.)
    """

    __slots__ = ()

    @property
    def n_clicks(self) -> int:
        return int(self.count.sum())


def simulate_clicks(scores: VectorLike, y: VectorLike, qid: VectorLike, n_sessions: int, eta: float = 1.0,
                    eps_plus: float = 1.0, eps_minus: float = 0.1, top_k: int | None = None,
                    relevant_at: float = 1.0, seed: int = 0) -> ClickLog:
    """Sessions of a logging ranker (its ``scores``) on labelled queries, and their clicks.

    Parameters
    ----------
    scores : array-like, shape (n_documents,)
        The logging ranker's scores (higher first; ties keep the rows' order).
    y, qid : array-like, shape (n_documents,)
        Relevance labels and query ids of the documents.
    n_sessions : int
        Sessions to simulate, each on a query drawn uniformly.
    eta : float
        Examination p(r) = (1/r)^eta.
    eps_plus, eps_minus : float
        Click probability of an examined relevant / non-relevant result.
    top_k : int, optional
        Results shown per session (None: every document of the query).
    relevant_at : float
        A label at least this is relevant.
    seed : int

    Returns
    -------
    ClickLog
    """
    y = check_labels(y, len(np.asarray(y)), "rankfast.clicks")
    qid = query_ids(len(y), qid, None)
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if len(scores) != len(y):
        raise ValueError(f"scores has {len(scores)} entries for {len(y)} documents")
    for name, p in (("eps_plus", eps_plus), ("eps_minus", eps_minus)):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"'{name}' must be a probability in [0, 1] (got {p!r})")
    if int(n_sessions) < 0 or (top_k is not None and int(top_k) < 1):
        raise ValueError("n_sessions must be >= 0 and top_k >= 1")
    queries = Queries(qid)
    rng = np.random.default_rng(seed)
    per_query = np.bincount(rng.integers(0, max(queries.n_queries, 1), size=int(n_sessions)),
                            minlength=queries.n_queries)
    order = np.arange(len(y)) if queries.permutation is None else queries.permutation
    starts = queries.starts
    rows, ranks, counts = [], [], []
    for q in np.flatnonzero(per_query):
        shown = shown_results(scores, order[starts[q]:starts[q + 1]], top_k)
        rank = np.arange(1, len(shown) + 1)
        p_click = position_propensity(rank, eta) * np.where(y[shown] >= relevant_at,
                                                            eps_plus, eps_minus)
        count = rng.binomial(per_query[q], p_click)
        clicked = count > 0
        rows.append(shown[clicked])
        ranks.append(rank[clicked])
        counts.append(count[clicked])
    def joined(parts):
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
    return ClickLog(joined(rows), joined(ranks), joined(counts), int(n_sessions), float(eta),
                    per_query)


def shown_results(scores: np.ndarray, docs: np.ndarray, top_k: int | None) -> np.ndarray:
    """The documents a session of the ranker shows, best first (ties: the rows' order)."""
    return docs[np.argsort(-scores[docs], kind="stable")][:top_k]


def swap_intervention_clicks(scores: VectorLike, y: VectorLike, qid: VectorLike, n_sessions: int,
                             ranks: VectorLike, eta: float = 1.0, eps_plus: float = 1.0,
                             eps_minus: float = 0.1, relevant_at: float = 1.0,
                             seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Clicks on the logging ranker's top result, moved to rank k or left at rank 1.

    For each k of ``ranks``, ``n_sessions`` sessions swap the results at ranks
    1 and k and as many do not (queries drawn uniformly): the input of
    rankfast.clicks.estimate_eta.  Returns (clicks at rank k, clicks at rank 1).
    """
    y = check_labels(y, len(np.asarray(y)), "rankfast.clicks")
    qid = query_ids(len(y), qid, None)
    scores = np.asarray(scores, dtype=np.float64).ravel()
    queries = Queries(qid)
    order = np.arange(len(y)) if queries.permutation is None else queries.permutation
    top = np.array([docs[np.argmax(scores[docs])] for docs in
                    (order[a:b] for a, b in zip(queries.starts[:-1], queries.starts[1:]))])
    relevant = np.where(y[top] >= relevant_at, eps_plus, eps_minus)
    rng = np.random.default_rng(seed)
    moved: list = []
    kept: list = []
    for k in np.asarray(ranks, dtype=np.int64):
        for shown_at, out in ((k, moved), (1, kept)):
            drawn = rng.integers(0, len(top), size=int(n_sessions))
            examined = rng.random(int(n_sessions)) < position_propensity([shown_at], eta)[0]
            out.append(int(np.sum(examined & (rng.random(int(n_sessions)) < relevant[drawn]))))
    return np.array(moved), np.array(kept)


def click_instances(log: ClickLog, eta: float | None = None, clip: float | None = None,
                    aggregate: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(clicked rows, their cost:) as svm_proprank's training file holds them.

    Each click weighs 1 / max(p(rank), clip) with p of ``eta`` (None: the
    log's own).  Aggregated, the clicks on one document (at any rank) become
    one instance weighing their sum, scaled by instances / clicks so that
    svm_proprank's objective (C / instances times each cost) is that of the
    clicks one by one; not aggregated, each click is an instance (rows repeat).
    """
    weight = clipped_weights(position_propensity(log.rank, log.eta if eta is None else eta), clip)
    if not aggregate:
        return np.repeat(log.row, log.count), np.repeat(weight, log.count)
    rows, inverse = np.unique(log.row, return_inverse=True)
    share = len(rows) / max(log.n_clicks, 1)
    with np.errstate(over="ignore"):
        total = np.bincount(inverse, weights=weight * log.count, minlength=len(rows)) * share
    if not np.isfinite(total).all():       # huge weights: the largest finite cost, ratios kept
        weight = np.ldexp(weight, -np.frexp(weight.max())[1])
        total = np.bincount(inverse, weights=weight * log.count, minlength=len(rows)) * share
        total *= np.finfo(np.float64).max / total.max()
    return rows, total


def _with_partners(log: ClickLog, queries: Any) -> ClickLog:
    """The log without the clicks in queries of one document: such a click's instance has
    nothing to be preferred over (it has no pair), and rank_learn --clicks refuses it."""
    alone = (np.diff(queries.starts) < 2)[queries.index[log.row]]
    if not alone.any():
        return log
    keep = ~alone
    return log._replace(row=log.row[keep], rank=log.rank[keep], count=log.count[keep])


def click_training_data(X: Any, qid: VectorLike, log: ClickLog, eta: float | None = None,
                        clip: float | None = None, aggregate: bool = True) -> tuple[Any, ...]:
    """(X, y, qid, sample_weight) of the click instances, as write_click_file's file holds them.

    The in-memory form of the click file: instance n (qid n) is the clicked
    document (target 1, weight its cost) and the other documents of its query
    (target 0, weight 1), so ``RankSVM().fit(X, y, qid, sample_weight=w)``
    trains on the clicks.  X's rows are taken from the labelled X (any form
    that supports row indexing: ndarray, scipy sparse, rankfast's CSR).
    """
    qid = np.asarray(qid)
    queries = Queries(qid)
    order = np.arange(len(qid)) if queries.permutation is None else queries.permutation
    starts = queries.starts
    rows, cost = click_instances(_with_partners(log, queries), eta, clip, aggregate)
    query = queries.index[rows]
    sizes = np.diff(starts)[query]
    first = np.repeat(np.cumsum(sizes) - sizes, sizes)
    docs = order[np.repeat(starts[query], sizes) + np.arange(int(sizes.sum())) - first]
    instance = np.repeat(np.arange(1, len(rows) + 1), sizes)
    clicked = docs == np.repeat(rows, sizes)
    weight = np.where(clicked, np.repeat(cost, sizes), 1.0)
    return X[docs], clicked.astype(np.float64), instance, weight


def write_click_file(path: str, X: Any, qid: VectorLike, log: ClickLog, eta: float | None = None,
                     clip: float | None = None, aggregate: bool = True) -> int:
    """Write a click log as svm_proprank's training file; returns the instances written.

    Each instance is a query of its own (qid 1, 2, ... in the order of the
    clicked rows): the clicked document with target 1 and ``cost:`` its
    weight (click_instances), then every other document of its query with
    target 0.  Clicks in a query of one document are left out: they have no
    pair.  ``rank_learn --clicks`` or ``svm_proprank_learn`` train on it.
    The file appears whole or not at all (written beside, then renamed).
    """
    from ..data.sparse import as_csr
    from ..io.files import atomic_output
    from ..io.svmlight import _num
    X = as_csr(X)
    qid = np.asarray(qid)
    queries = Queries(qid)
    order = np.arange(len(qid)) if queries.permutation is None else queries.permutation
    starts, index = queries.starts, queries.index
    rows, cost = click_instances(_with_partners(log, queries), eta, clip, aggregate)
    indptr, indices, values = X.indptr, X.indices, X.data
    text: dict = {}

    def features(row):
        if row not in text:
            a, b = indptr[row], indptr[row + 1]
            text[row] = " ".join(f"{j + 1}:{_num(v)}" for j, v in
                                 zip(indices[a:b].tolist(), values[a:b].tolist()))
        return text[row]
    with atomic_output(path) as out:
        for n, (row, weight) in enumerate(zip(rows.tolist(), cost.tolist()), start=1):
            q = index[row]
            out.write(f"1 qid:{n} cost:{_num(weight)} {features(row)}\n")
            out.writelines(f"0 qid:{n} {features(other)}\n"
                           for other in order[starts[q]:starts[q + 1]].tolist() if other != row)
    return len(rows)
