"""Ranking metrics: svm_rank's swapped pairs, pairwise accuracy, NDCG@k, MAP, ERR@k, MRR, P@k.

Every function takes ``scores``, ``labels`` and ``qid`` (one entry per
document); documents of one query need not be contiguous.

Conventions
-----------
* A pair is two documents of one query with different labels.  It is
  *swapped* unless the one with the higher label has the strictly higher
  score: ties in score count as swapped, as in svm_rank_classify.
* A NaN score (a model evaluated where it overflows, 0 * inf) is one value
  below every number, -inf included: NaN scores tie each other, sort last,
  and a pair whose higher label scored NaN is swapped.  Every function
  follows this one rule, so each sweep over sorted scores ends whatever the
  scores are.
* NDCG@k and MAP follow, by default, the LETOR 4.0 evaluation script
  (Eval-Score-4.0.pl), so figures compare with published LETOR results:
  gain 2^label − 1 (negative labels count as 0), discount 1 at positions 1
  and 2 and 1/log2(p) at position p >= 3, documents sorted by decreasing
  score with ties kept in file order, and NDCG@k = 0 for a query with fewer
  than k documents (the script leaves those entries undefined and sums them
  as 0).  ``convention="standard"`` gives the now more common form: discount
  1/log2(1 + p), a short query evaluated over its whole list.
* MAP: a label > 0 is relevant.  A query without any relevant document scores
  0 in both NDCG and MAP (LETOR's choice), unless ``skip_no_relevant=True``
  leaves it out of the mean.
* Some queries score alike in every order: a query shorter than k at LETOR's
  NDCG@k, graded labels all above 0 at MAP.  ``alike_in_every_order`` finds
  them exactly; a metric alike on every query cannot choose a model, and
  model selection, the scorers and rank_classify --metrics say so
  (``ConstantMetricWarning``, ``why_alike``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._kernels import _swapped
from .data.queries import query_index
from .data.validation import check_labels, query_ids, scored_queries

__all__ = ["alike_in_every_order", "ConstantMetricWarning", "why_alike", "swapped_pairs",
           "swapped_fraction", "pairwise_accuracy", "ndcg", "mean_average_precision", "err",
           "reciprocal_rank", "precision_at", "ndcg_scorer", "map_scorer", "RankingScorer"]

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from numpy.typing import ArrayLike

    from ._typing import MatrixLike, VectorLike


def _sorted_by_score(scores, group, n_groups):
    """Document order by group, then decreasing score (NaN last), then file position; and group starts."""
    n = len(scores)
    order = np.lexsort((np.arange(n), -np.asarray(scores, dtype=np.float64), group))
    starts = np.searchsorted(group[order], np.arange(n_groups + 1)).astype(np.int64)
    return order.astype(np.int64), starts


class Ranking(NamedTuple):
    """Every query's documents by decreasing score (NaN last, ties in file order), one query after another.

    One sort that the ``*_of`` functions share (rank_classify --metrics
    computes six metrics of each batch from one); made by :func:`ranking`.
    """

    order: np.ndarray           # the documents' rows in ranked order
    labels: np.ndarray          # float64 labels in ranked order
    query: np.ndarray           # query number (order of first appearance) of each
    position: np.ndarray        # 1-based rank within its query, float64
    starts: np.ndarray          # offsets of the queries, with the document count appended
    n_queries: int

    def has_relevant(self) -> np.ndarray:
        return np.bincount(self.query, weights=(self.labels > 0).astype(np.float64),
                           minlength=self.n_queries) > 0


def ranking(scores: Any, labels: VectorLike, qid: VectorLike,
            index: tuple[np.ndarray, int] | None = None) -> Ranking:
    """The Ranking of scores; ``index``: ``query_index(qid)`` when already known.

    ValueError for inputs no metric can be taken of: lengths that differ, a label
    that is not a finite number, query ids that are not finite or not comparable.
    Scores may be NaN (ranked last).
    """
    labels = np.asarray(labels, dtype=np.float64)
    n = len(labels)
    if labels.ndim != 1 or np.ndim(scores) != 1 or len(scores) != n or \
            (index is None and np.shape(qid) != (n,)):
        raise ValueError(f"scores, labels and qid must be 1-d and as long as one another "
                         f"(got {np.shape(scores)}, {labels.shape} and {np.shape(qid)})")
    if not np.isfinite(labels).all():
        bad = int(np.flatnonzero(~np.isfinite(labels))[0])
        raise ValueError(f"labels must be finite numbers (label {bad} is {labels[bad]})")
    group, n_groups = query_index(query_ids(n, qid)) if index is None else index
    order, starts = _sorted_by_score(scores, group, n_groups)
    g = group[order]
    return Ranking(order, labels[order], g, np.arange(len(order)) - starts[g] + 1.0, starts,
                   n_groups)


def alike_in_every_order(per_query: Callable[[np.ndarray], ArrayLike], labels: VectorLike) -> np.ndarray:
    """Per query: whether a metric scores every order of its documents alike.

    ``per_query(scores)``: the metric's value of each query (of ``labels``'
    queries) for these scores.  NDCG, ERR, MAP, MRR, P@k and pair accuracy
    never fall when a document moves above one of lower label, so every order
    of a query scores between its worst (increasing labels) and its best
    (decreasing labels); where those two agree, no model can do better or
    worse on it.  That is a query whose documents share one label (one of
    relevant or not, for MAP, MRR and P@k), a query shorter than k under
    LETOR's NDCG@k (which scores it 0), and P@k of a query of at most k
    documents; pair accuracy is undefined (nan) where no order differs.

    >>> import numpy as np
    >>> from rankfast.metrics import alike_in_every_order, ndcg
    >>> labels, qid = [2, 0, 1, 1, 0], [1, 1, 1, 2, 2]
    >>> alike_in_every_order(lambda s: ndcg(s, labels, qid, k=3, per_query=True), labels)
    array([False,  True])
    """
    labels = np.asarray(labels, dtype=np.float64)
    best, worst = np.asarray(per_query(labels)), np.asarray(per_query(-labels))
    return (best == worst) | (np.isnan(best) & np.isnan(worst))


class ConstantMetricWarning(UserWarning):
    """A metric is the same for every ranking of the queries it is computed on.

    It cannot tell models apart there (see alike_in_every_order).
    """


class QueryFacts(NamedTuple):
    """Per query: its documents, its relevant ones (label > 0), whether its documents share one label."""

    sizes: np.ndarray
    relevant: np.ndarray
    one_label: np.ndarray


def query_facts(labels: VectorLike, qid: VectorLike,
                index: tuple[np.ndarray, int] | None = None) -> QueryFacts:
    """The QueryFacts of labels and their queries (order of first appearance; ``index``:
    ``query_index(qid)`` when already known)."""
    labels = np.asarray(labels, dtype=np.float64)
    query, n_queries = query_index(qid) if index is None else index
    sizes = np.bincount(query, minlength=n_queries)
    relevant = np.bincount(query, weights=(labels > 0).astype(np.float64), minlength=n_queries)
    low, high = np.full(n_queries, np.inf), np.full(n_queries, -np.inf)
    np.minimum.at(low, query, labels)
    np.maximum.at(high, query, labels)
    return QueryFacts(sizes, relevant.astype(np.int64), low == high)


def joined_facts(parts: Iterable[QueryFacts]) -> QueryFacts:
    """The QueryFacts of several sets of queries, one after another."""
    parts = list(parts)
    return QueryFacts(*(np.concatenate([part[i] for part in parts]) if parts else np.zeros(0)
                        for i in range(3)))


def why_alike(kind: str, facts: QueryFacts, k: int | None = None, convention: str = "letor") -> str:
    """Why metric ``kind`` (ndcg, err, map, mrr, p) scores every ranking of these queries alike.

    In words: the cause that holds for every query, or the causes that
    together do ("" when they do not: see alike_in_every_order).
    """
    sizes, relevant, one_label = facts
    short = kind == "ndcg" and convention == "letor" and k is not None
    causes = [(one_label, "documents of a single label"),
              (sizes < k if short else None, f"fewer than {k} documents"),
              (relevant == 0, "no relevant document (label > 0)"),
              (relevant == sizes if kind in ("map", "mrr", "p") else None,
               "only relevant documents (label > 0)"),
              (sizes <= k if kind == "p" and k is not None else None,
               f"at most {k} documents, all in the top {k}")]
    causes = [(holds, phrase) for holds, phrase in causes if holds is not None]
    chosen = [(holds, phrase) for holds, phrase in causes if holds.all()][:1]
    if not chosen:                                   # several causes, each for some queries
        covered = np.zeros(len(sizes), dtype=bool)
        for holds, phrase in causes:
            if (holds & ~covered).any():
                chosen.append((holds, phrase))
                covered |= holds
        if not covered.all():
            return ""
    subject = "every query has " if len(sizes) > 1 else "it has "
    text = subject + " or ".join(phrase for _, phrase in chosen)
    if short and any(phrase.startswith("fewer than") for _, phrase in chosen):
        text += (f" (LETOR's NDCG@{k} scores such a query 0; the standard convention "
                 f"evaluates it over its whole list)")
    return text


def alike_message(labels: list[str], where: str, why: str) -> str:
    """"<labels> is (are) the same for every ranking of <where>: <why>"."""
    names = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
    verb = "is" if len(labels) == 1 else "are"
    return f"{names} {verb} the same for every ranking of {where}" + (f": {why}" if why else "")


def queries_phrase(n_queries: int) -> str:
    """"this query" or "these N queries"."""
    return "this query" if n_queries == 1 else f"these {n_queries} queries"


def swapped_pairs(scores: VectorLike, labels: VectorLike, qid: VectorLike) -> tuple[np.ndarray, np.ndarray]:
    """Per-query counts of swapped pairs and of all pairs, in O(n log n).

    Parameters
    ----------
    scores, labels, qid : array_like, shape (n_documents,)
        Predicted scores, relevance labels and query ids.

    Returns
    -------
    swapped, pairs : ndarray of int64, one entry per query (order of first appearance)

    Examples
    --------
    >>> from rankfast.metrics import swapped_pairs
    >>> scores = [0.9, 0.1, 0.5, 0.3, 0.8]
    >>> labels = [2, 0, 1, 1, 0]
    >>> qid = [1, 1, 1, 2, 2]
    >>> swapped_pairs(scores, labels, qid)
    (array([0, 1]), array([3, 1]))
    """
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    return swapped_pairs_of(ranking(scores, labels, qid), scores, labels)


def swapped_pairs_of(r: Ranking, scores: VectorLike, labels: VectorLike) -> tuple[np.ndarray, np.ndarray]:
    """swapped_pairs of a Ranking of these scores (float64) and labels."""
    levels, rank = np.unique(np.asarray(labels, dtype=np.float64), return_inverse=True)
    tree = np.zeros(len(levels) + 1, dtype=np.int64)
    swapped = np.zeros(r.n_queries, dtype=np.int64)
    pairs = np.zeros(r.n_queries, dtype=np.int64)
    _swapped.count_swapped(r.order, rank.ravel().astype(np.int64),
                           np.ascontiguousarray(scores, dtype=np.float64), r.starts,
                           tree, swapped, pairs)
    return swapped, pairs


def swapped_fraction(scores: VectorLike, labels: VectorLike, qid: VectorLike) -> np.ndarray:
    """svm_rank_classify's per-query loss: swapped pairs / pairs (0 for a query without pairs).

    Parameters
    ----------
    scores, labels, qid : array_like, shape (n_documents,)

    Returns
    -------
    ndarray of float64, one entry per query (order of first appearance)

    Examples
    --------
    >>> from rankfast.metrics import swapped_fraction
    >>> scores = [0.9, 0.1, 0.5, 0.3, 0.8]
    >>> labels = [2, 0, 1, 1, 0]
    >>> qid = [1, 1, 1, 2, 2]
    >>> swapped_fraction(scores, labels, qid)
    array([0., 1.])
    """
    swapped, pairs = swapped_pairs(scores, labels, qid)
    return np.divide(swapped, pairs, out=np.zeros(len(pairs)), where=pairs > 0)


def pairwise_accuracy(scores: VectorLike, labels: VectorLike, qid: VectorLike) -> float:
    """Fraction of all pairs (pooled over queries) ranked strictly right; nan without pairs.

    Parameters
    ----------
    scores, labels, qid : array_like, shape (n_documents,)

    Returns
    -------
    float

    Examples
    --------
    >>> from rankfast.metrics import pairwise_accuracy
    >>> scores = [0.9, 0.1, 0.5, 0.3, 0.8]
    >>> labels = [2, 0, 1, 1, 0]
    >>> qid = [1, 1, 1, 2, 2]
    >>> pairwise_accuracy(scores, labels, qid)
    0.75
    """
    swapped, pairs = swapped_pairs(scores, labels, qid)
    total = pairs.sum()
    return float(1.0 - swapped.sum() / total) if total else float("nan")


def ndcg(scores: VectorLike, labels: VectorLike, qid: VectorLike, k: int | None = 10,
         per_query: bool = False,
         skip_no_relevant: bool = False, convention: str = "letor") -> float | np.ndarray:
    """NDCG@k (see the module docstring for the conventions).

    Parameters
    ----------
    k : int or None
        Cut-off; None for the whole list.
    per_query : bool
        Return the array of per-query values instead of the mean.
    skip_no_relevant : bool
        Leave queries without a relevant document out (instead of scoring 0).
    convention : {"letor", "standard"}
        "letor": LETOR 4.0's script; "standard": discount 1/log2(1 + p).

    Returns
    -------
    float, or ndarray of float64 with ``per_query``

    Examples
    --------
    >>> from rankfast.metrics import ndcg
    >>> ndcg([0.9, 0.1, 0.5], [2, 0, 1], [1, 1, 1], k=None)   # ideal order: 1 by any convention
    1.0
    >>> ndcg([0.9, 0.1, 0.5, 0.3], [2, 0, 1, 0], [1, 1, 1, 2], k=None, per_query=True)
    array([1., 0.])
    """
    r = ranking(scores, labels, qid)
    return _reduce(ndcg_of(r, k, convention), r.has_relevant(), per_query, skip_no_relevant)


def checked_cutoff(k: Any, whole_list: bool = True) -> Any:
    """k as a metric's cut-off: an integer of at least 1, or None (the whole list) where allowed."""
    if k is None and whole_list:
        return None
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        allowed = "an integer of at least 1" + (" or None (the whole list)" if whole_list else "")
        raise ValueError(f"the cut-off k must be {allowed} (got {k!r})")
    return int(k)


def ndcg_of(r: Ranking, k: int | None = 10, convention: str = "letor") -> np.ndarray:
    """Per-query NDCG@k of a Ranking (see ndcg)."""
    k = checked_cutoff(k)
    if convention not in ("letor", "standard"):
        raise ValueError(f"unknown NDCG convention {convention!r}")
    ideal, _ = _sorted_by_score(r.labels, r.query, r.n_queries)   # labels by label: the best order
    dcg = _dcg(r.labels, r.query, r.starts, r.n_queries, k, convention)
    best = _dcg(r.labels[ideal], r.query[ideal], r.starts, r.n_queries, k, convention)
    values = np.divide(dcg, best, out=np.zeros(r.n_queries), where=best > 0)
    if convention == "letor" and k is not None:
        values[np.diff(r.starts) < k] = 0.0
    return values


def ndcg_label(convention: str) -> str:
    """How printed labels name an NDCG convention: "LETOR" or "standard"."""
    return {"letor": "LETOR", "standard": "standard"}[convention]


def ndcg_name(k: int | None, convention: str) -> str:
    """How tables, notes and rank_classify name NDCG@k: "NDCG@10 (LETOR)" ("NDCG (...)": no k)."""
    return f"NDCG{'' if k is None else f'@{k}'} ({ndcg_label(convention)})"


def _dcg(sorted_labels, sorted_group, starts, n_groups, k, convention):
    position = np.arange(len(sorted_labels)) - starts[sorted_group] + 1.0
    if convention == "letor":
        discount = np.log2(np.maximum(position, 2.0))
    else:
        discount = np.log2(position + 1.0)
    gain = (2.0 ** np.maximum(sorted_labels, 0.0) - 1.0) / discount
    if k is not None:
        gain = np.where(position <= k, gain, 0.0)
    return np.bincount(sorted_group, weights=gain, minlength=n_groups)


def mean_average_precision(scores: VectorLike, labels: VectorLike, qid: VectorLike, per_query: bool = False,
                           skip_no_relevant: bool = False) -> float | np.ndarray:
    """MAP with label > 0 relevant (LETOR 4.0 convention; see the module docstring).

    Parameters
    ----------
    scores, labels, qid : array_like, shape (n_documents,)
    per_query : bool
        Return the array of per-query values instead of the mean.
    skip_no_relevant : bool
        Leave queries without a relevant document out (instead of scoring 0).

    Returns
    -------
    float, or ndarray of float64 with ``per_query``

    Examples
    --------
    >>> from rankfast.metrics import mean_average_precision
    >>> scores = [0.9, 0.1, 0.5, 0.3, 0.8]
    >>> labels = [2, 0, 1, 1, 0]
    >>> qid = [1, 1, 1, 2, 2]
    >>> mean_average_precision(scores, labels, qid, per_query=True)
    array([1. , 0.5])
    """
    r = ranking(scores, labels, qid)
    values = average_precision_of(r)
    return _reduce(values, r.has_relevant(), per_query, skip_no_relevant)


def average_precision_of(r: Ranking) -> np.ndarray:
    """Per-query average precision of a Ranking (see mean_average_precision)."""
    relevant = (r.labels > 0).astype(np.float64)
    hits = np.cumsum(relevant)
    hits_before = np.concatenate(([0.0], hits))[r.starts[:-1]]
    precision = (hits - hits_before[r.query]) / r.position
    n_relevant = np.bincount(r.query, weights=relevant, minlength=r.n_queries)
    total = np.bincount(r.query, weights=relevant * precision, minlength=r.n_queries)
    return np.divide(total, n_relevant, out=np.zeros(r.n_queries), where=n_relevant > 0)


def _reduce(values, has_relevant, per_query, skip_no_relevant):
    if skip_no_relevant:
        values = values[has_relevant]
    if per_query:
        return values
    return float(values.mean()) if len(values) else float("nan")


def err(scores: VectorLike, labels: VectorLike, qid: VectorLike, k: int | None = 10,
        max_grade: float | None = None,
        per_query: bool = False, skip_no_relevant: bool = False) -> float | np.ndarray:
    """Expected reciprocal rank at k (Chapelle, Metzler, Zhang & Grinspan 2009, graded).

    ERR@k = Σ_{r ≤ k} (1/r) R_r Π_{i < r} (1 − R_i) over the documents sorted
    by decreasing score (ties in file order), with the probability that the
    document at rank i satisfies the user R = (2^g − 1) / 2^g_max, g its
    label (negative labels count as 0) and g_max ``max_grade``, by default
    the highest label of ``labels``.  A query shorter than k is taken over
    its whole list.  A query without relevant documents scores 0.

    Parameters
    ----------
    k : int or None
        Cut-off; None for the whole list.
    max_grade : float, optional
        g_max; default max(labels) (0 when every label is ≤ 0).
    per_query, skip_no_relevant : bool
        As for ndcg.
    """
    r = ranking(scores, labels, qid)
    if max_grade is None:
        max_grade = highest_grade(r.labels)
    values = err_of_ranked(*top_of(r, k), max_grade)
    return _reduce(values, r.has_relevant(), per_query, skip_no_relevant)


def highest_grade(labels: VectorLike) -> float:
    """ERR's default g_max: the highest label, 0 when none is positive."""
    return max(float(np.max(labels, initial=0.0)), 0.0)


def top_labels(scores: VectorLike, labels: VectorLike, qid: VectorLike,
               k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each query's labels by decreasing score (ties in file order), its first k only.

    Returns
    -------
    ranked : ndarray of float64
        The queries' ranked labels one after the other (order of first appearance).
    starts : ndarray of int64
        Offsets of the queries in ``ranked``, with its length appended.
    """
    return top_of(ranking(scores, labels, qid), k)


def top_of(r: Ranking, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """top_labels of a Ranking."""
    k = checked_cutoff(k)
    if k is None:
        return r.labels, r.starts
    counts = np.minimum(np.diff(r.starts), k)
    return r.labels[r.position <= k], np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def err_of_ranked(ranked: ArrayLike, starts: np.ndarray, max_grade: float) -> np.ndarray:
    """Per-query ERR of labels in ranked order (top_labels' form), g_max = max_grade.

    ERR = Σ_r (1/r) R_r Π_{i<r} (1 − R_i), R = (2^g − 1) / 2^g_max (see err).
    """
    ranked = np.asarray(ranked, dtype=np.float64)
    n_groups = len(starts) - 1
    g = np.repeat(np.arange(n_groups), np.diff(starts))
    R = (2.0 ** np.maximum(ranked, 0.0) - 1.0) / 2.0 ** max_grade
    position = np.arange(len(R)) - starts[g] + 1.0
    # Π_{i<r} (1 − R_i) within each query: exclusive cumulative product, restarted per query
    # (by cumulative sums of logs would lose R = 1; a loop over queries keeps it exact).
    stop = np.ones(len(R))
    for q in range(n_groups):
        lo, hi = starts[q], starts[q + 1]
        if hi > lo + 1:
            stop[lo + 1:hi] = np.cumprod(1.0 - R[lo:hi - 1])
    return np.bincount(g, weights=R * stop / position, minlength=n_groups)


def reciprocal_rank(scores: VectorLike, labels: VectorLike, qid: VectorLike, per_query: bool = False,
                    skip_no_relevant: bool = False) -> float | np.ndarray:
    """MRR: the mean over queries of 1 / (rank of the first document with label > 0).

    Ranks by decreasing score, ties in file order; a query without relevant
    documents scores 0 (or is skipped with ``skip_no_relevant=True``).
    """
    r = ranking(scores, labels, qid)
    return _reduce(reciprocal_rank_of(r), r.has_relevant(), per_query, skip_no_relevant)


def reciprocal_rank_of(r: Ranking) -> np.ndarray:
    """Per-query reciprocal rank of a Ranking (see reciprocal_rank)."""
    first = np.full(r.n_queries, np.inf)
    relevant = r.labels > 0
    np.minimum.at(first, r.query[relevant], r.position[relevant])
    return 1.0 / first                                     # 1/inf = 0: no relevant document


def precision_at(scores: VectorLike, labels: VectorLike, qid: VectorLike, k: int = 10,
                 per_query: bool = False, skip_no_relevant: bool = False) -> float | np.ndarray:
    """P@k: relevant documents (label > 0) among the top k, divided by k.

    Ranks by decreasing score, ties in file order; a query shorter than k
    still divides by k (trec_eval's convention: the missing places count as
    not relevant).
    """
    r = ranking(scores, labels, qid)
    return _reduce(precision_of(r, k), r.has_relevant(), per_query, skip_no_relevant)


def precision_of(r: Ranking, k: int = 10) -> np.ndarray:
    """Per-query P@k of a Ranking (see precision_at)."""
    k = checked_cutoff(k, whole_list=False)
    hits = (r.labels > 0) & (r.position <= k)
    return np.bincount(r.query, weights=hits.astype(np.float64), minlength=r.n_queries) / float(k)


# ------------------------------------------------------ scorers for scikit-learn's searches

def scored_with_check(per_query: Callable[[np.ndarray], ArrayLike], scores: np.ndarray,
                      labels: VectorLike, qid: VectorLike, kind: str,
                      k: int | None = None, convention: str = "letor") -> float:
    """The mean of ``per_query(scores)``, with a ConstantMetricWarning if no ranking could change it.

    ``per_query(scores)``: metric ``kind``'s (ndcg, map) value of each query.
    A scikit-learn search choosing by such a metric would choose silently
    among ties (its first candidate); the warning says why the metric is
    blind here (alike_in_every_order, why_alike).
    """
    values = np.asarray(per_query(scores))
    if len(values) and alike_in_every_order(per_query, labels).all():
        import warnings
        facts = query_facts(labels, qid)
        label = ndcg_name(k, convention) if kind == "ndcg" else "MAP"
        warnings.warn(alike_message([label], queries_phrase(len(facts.sizes)),
                                    why_alike(kind, facts, k, convention))
                      + ", so on these queries it cannot tell models apart", ConstantMetricWarning,
                      stacklevel=3)
    return float(values.mean()) if len(values) else float("nan")


def ndcg_scorer(k: int = 10) -> RankingScorer:
    """A scorer ``scorer(estimator, X, y, qid=None, group=None)``: mean NDCG@k of predict(X).

    Usable as ``scoring=`` in scikit-learn's GridSearchCV, cross_validate, ...
    It asks scikit-learn's metadata routing for ``qid`` and ``group`` at
    ``score``, so with ``sklearn.set_config(enable_metadata_routing=True)``
    and the estimator's ``set_fit_request(qid=True)``, each test fold is
    scored by its own queries::

        sklearn.set_config(enable_metadata_routing=True)
        search = GridSearchCV(RankSVM().set_fit_request(qid=True), {"C": [0.01, 0.1, 1]},
                              cv=GroupKFold(5), scoring=ndcg_scorer(10))
        search.fit(X, y, groups=qid, qid=qid)

    Without routing the scorer gets no qid: if the estimator was trained on
    several queries it raises ValueError (scoring the fold as one ranking
    would be wrong); an estimator trained as one ranking is scored as one.

    Parameters
    ----------
    k : int or None
        Cut-off (None: the whole list); the convention is ndcg's default.

    Returns
    -------
    callable
        Picklable; ``scorer(estimator, X, y, qid=None, group=None) -> float``.

    Examples
    --------
    >>> import numpy as np
    >>> from rankfast.metrics import ndcg_scorer
    >>> from rankfast import RankSVM
    >>> X = np.array([[3.0], [2.0], [1.0], [1.0], [2.0], [3.0]])
    >>> y, qid = [2, 1, 0, 0, 1, 2], [1, 1, 1, 2, 2, 2]
    >>> ranker = RankSVM(C=1.0).fit(X, y, qid)
    >>> ndcg_scorer(k=3)(ranker, X, y, qid=qid)
    1.0
    """
    return RankingScorer("ndcg", k)


def map_scorer() -> RankingScorer:
    """A scorer ``scorer(estimator, X, y, qid=None, group=None)``: MAP of predict(X).

    See ndcg_scorer for how it receives each fold's queries.

    Returns
    -------
    callable
        Picklable; ``scorer(estimator, X, y, qid=None, group=None) -> float``.

    Examples
    --------
    >>> from rankfast.metrics import map_scorer
    >>> from rankfast import RankSVM
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], [0, 1, 0, 1]
    >>> ranker = RankSVM(C=1.0).fit(X, y, group=[2, 2])
    >>> map_scorer()(ranker, X, y, group=[2, 2])
    1.0
    """
    return RankingScorer("map")


class RankingScorer:
    """Scores ``estimator.predict(X)`` against y by NDCG@k or MAP, query by query.

    Made by ndcg_scorer and map_scorer; ``get_metadata_routing`` requests
    ``qid`` and ``group`` at ``score`` from scikit-learn's metadata routing.

    Parameters
    ----------
    metric : {"ndcg", "map"}
    k : int or None
        NDCG's cut-off (ignored by MAP).
    """

    def __init__(self, metric: str, k: int | None = None) -> None:
        if metric not in ("ndcg", "map"):
            raise ValueError(f"unknown ranking metric {metric!r} (ndcg or map)")
        self.metric, self.k = metric, k

    def __call__(self, estimator: Any, X: MatrixLike, y: VectorLike, qid: VectorLike | None = None,
                 group: VectorLike | None = None) -> float:
        """The metric of estimator.predict(X) for labels y and the queries (one ranking without).

        A model that normalises each query's rows (``normalize="query"``) is
        given the queries (rankfast.data.validation.predicted).
        """
        scores, qid = scored_queries(estimator, X, qid, group, repr(self))
        y = check_labels(y, len(scores))
        if self.metric == "ndcg":
            return scored_with_check(lambda s: ndcg(s, y, qid, k=self.k, per_query=True), scores, y,
                                     qid, "ndcg", self.k)
        return scored_with_check(lambda s: mean_average_precision(s, y, qid, per_query=True),
                                 scores, y, qid, "map")

    def get_metadata_routing(self) -> Any:
        """scikit-learn's metadata request: qid and group, at score."""
        from ._estimator import score_request
        return score_request(type(self).__name__, ("qid", "group"))

    def __repr__(self):
        return f"ndcg_scorer(k={self.k!r})" if self.metric == "ndcg" else "map_scorer()"
