"""What model selection scores: the metric spec (``ndcg@10``, ``map``, ...) and the table's columns."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from .. import metrics
from .._kernels import _svmlight
from ..data.queries import query_index
from ..data.validation import (
    outside_stacklevel,
)
from ..errors import UsageError

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .._typing import VectorLike
DEFAULT_METRIC = "ndcg@10"
CONVENTIONS = ("letor", "standard")
TIES = ("file", "against")


# ------------------------------------------------------------------ metrics

@dataclasses.dataclass(frozen=True)
class Metric:
    """A metric of held-out scores: kind "ndcg", "map", "err" or "pairs", cut-off k, NDCG convention.

    ``ties``: how documents of equal score are ranked: "file" (in file order,
    LETOR's and svm_rank's convention for labelled data) or "against" (the
    higher label after the lower: a tie gains a ranker nothing, as svm_proprank
    and rankfast.clicks count a clicked document's ties; a model that scores
    every document alike then rates worst, not best, whatever the file order).
    Pair accuracy counts ties as swapped either way.
    """

    kind: str
    k: int | None = None
    convention: str = "letor"
    fmt: str = "{:.4f}"
    ties: str = "file"

    def __post_init__(self):
        if self.ties not in TIES:
            raise UsageError(f"ties must be one of {', '.join(TIES)} (got {self.ties!r})")

    @classmethod
    def parse(cls, text: str, convention: str = "letor") -> Any:
        """``ndcg@k``, ``map``, ``err@k`` or ``pairs`` (``ndcg``/``err`` alone: the whole list)."""
        if convention not in CONVENTIONS:
            raise UsageError(f"NDCG convention must be letor or standard (got {convention!r})")
        if isinstance(text, Metric):
            return text
        kind, _, cut = str(text).lower().partition("@")
        if kind in ("map", "pairs") and not cut:
            return cls(kind, None, convention)
        if kind in ("ndcg", "err"):
            if not cut:
                return cls(kind, None, convention)
            # the data files' integers (not int(): it takes '1_0' and '٣', and
            # raises for '²'), within int64, which the metrics compute with
            k = _svmlight.integer_of(cut.encode("utf-8", "replace"))
            if k is not None and k >= 1:
                return cls(kind, k, convention)
        raise UsageError(f"the CV metric must be ndcg@k, map, err@k or pairs (got {text!r})")

    @property
    def key(self) -> Any:
        return self.kind if self.k is None else f"{self.kind}@{self.k}"

    @property
    def label(self) -> Any:
        if self.kind == "ndcg":
            return metrics.ndcg_name(self.k, self.convention)
        at = "" if self.k is None else f"@{self.k}"
        return {"map": "MAP", "err": f"ERR{at}", "pairs": "pair accuracy"}[self.kind]

    def evaluate(self, scores: VectorLike, labels: VectorLike, qid: VectorLike, per_query: bool = False,
                 max_grade: float | None = None,
                 weight: VectorLike | None = None) -> float | np.ndarray:
        """The metric of scores (mean over queries, pairs pooled), or per query (nan: no pair).

        ``max_grade``: ERR's g_max (rankfast.metrics.err); cross-validation
        passes the whole data set's, so that every fold grades alike.
        ``weight`` (one per row, the same within a query; not with
        per_query): each query counts w_q times, in the mean over queries
        and in the pooled pairs (a weight of 2 is the query twice; nan when
        every weight is 0).
        """
        if self.ties == "against":
            order = np.lexsort((np.asarray(labels), query_index(qid)[0]))   # queries kept in
            scores, labels, qid = (np.asarray(a)[order] for a in (scores, labels, qid))  # order
            weight = None if weight is None else np.asarray(weight)[order]
        if weight is not None and not per_query:
            return self._weighted(scores, labels, qid, max_grade, weight)
        if self.kind == "pairs":
            swapped, pairs = metrics.swapped_pairs(scores, labels, qid)
            if per_query:
                return np.where(pairs > 0, 1.0 - swapped / np.maximum(pairs, 1), np.nan)
            total = pairs.sum()
            return float(1.0 - swapped.sum() / total) if total else float("nan")
        if self.kind == "ndcg":
            return metrics.ndcg(scores, labels, qid, k=self.k, per_query=per_query,
                                convention=self.convention)
        if self.kind == "err":
            return metrics.err(scores, labels, qid, k=self.k, max_grade=max_grade,
                               per_query=per_query)
        return metrics.mean_average_precision(scores, labels, qid, per_query=per_query)

    def _weighted(self, scores, labels, qid, max_grade, weight):
        query, n_queries = query_index(qid)
        w = np.zeros(n_queries)
        w[query] = weight
        if self.kind == "pairs":
            swapped, pairs = metrics.swapped_pairs(scores, labels, qid)
            total = w @ pairs
            return float(1.0 - (w @ swapped) / total) if total > 0 else float("nan")
        values = self.evaluate(scores, labels, qid, True, max_grade)
        total = w.sum()
        return float(w @ values / total) if total > 0 else float("nan")


@dataclasses.dataclass(frozen=True)
class Column:
    """A table column that is not a Metric of scores (RankRLS's exact LQO pair loss)."""

    key: str
    label: str
    fmt: str = "{:.6g}"


def table_metrics(metric: Metric, chooser: Metric | None = None) -> Any:
    """The table's columns: the selection metric first, then NDCG@k, MAP, ERR@k, pair accuracy.

    ``chooser``: the metric that selects instead of ``metric`` (pair
    accuracy, see selecting_metric), moved to the front.
    """
    k = metric.k if metric.k is not None and metric.kind in ("ndcg", "err") else 10
    columns = [metric]
    for kind, cut in (("ndcg", k), ("map", None), ("err", k), ("pairs", None)):
        candidate = Metric(kind, cut, metric.convention, ties=metric.ties)
        if candidate.key != metric.key:
            columns.append(candidate)
    if chooser is not None and chooser.key != metric.key:
        columns = [chooser] + [column for column in columns if column.key != chooser.key]
    return columns


def selecting_metric(metric: Metric, scored: Sequence[tuple[VectorLike, VectorLike, VectorLike | None]],
                     max_grade: float | None = None) -> Metric:
    """The metric that chooses among models, from the sets of rows that score them.

    ``scored``: (y, qid, weight) of each set as a fold scores it (its
    held-out rows; weight per row, or None), rows of weight 0 left out, as
    the folds' means leave them.  ``metric`` itself, unless no ranking of
    any set could change it (rankfast.metrics.alike_in_every_order): then it
    cannot tell models apart, and the choice would fall silently to the
    smallest C (LETOR's NDCG@10 of queries, or of a single ranking's folds,
    shorter than 10 documents is 0 for all; MAP of graded labels 3-8, all
    relevant, is 1).  Pair accuracy chooses then, with a
    ConstantMetricWarning saying why (rank_learn prints it as a note); when
    the rows hold no pair either, nothing can choose, and the warning says so.
    """
    if metric.kind == "pairs":
        return metric
    sets = _scored_sets(scored)
    if not sets or not all(_alike(metric, y, qid, max_grade) for y, qid in sets):
        return metric
    facts = metrics.joined_facts(metrics.query_facts(y, qid) for y, qid in sets)
    text = metrics.alike_message([metric.label], "the held-out queries", metrics.why_alike(
        metric.kind, facts, metric.k, metric.convention))
    if facts.one_label.all():
        warnings.warn(f"{text}, so no model is better than another", metrics.ConstantMetricWarning,
                      stacklevel=outside_stacklevel())
        return metric
    warnings.warn(f"{text}, so the models are chosen by pair accuracy instead",
                  metrics.ConstantMetricWarning, stacklevel=outside_stacklevel())
    return Metric("pairs", None, metric.convention, ties=metric.ties)


def table_columns(metric: Metric, scored: Sequence[tuple[VectorLike, VectorLike, VectorLike | None]],
                  max_grade: float | None = None) -> Any:
    """table_metrics with the metric that selecting_metric chooses by; and a
    ConstantMetricWarning for each other column that no ranking of the scored sets could
    change (MAP when every label is above 0: 1 in every row of the table)."""
    chooser = selecting_metric(metric, scored, max_grade)
    columns = table_metrics(metric, chooser)
    sets = _scored_sets(scored)
    if not sets:
        return columns
    facts = metrics.joined_facts(metrics.query_facts(y, qid) for y, qid in sets)
    if facts.one_label.all():               # nothing can choose: selecting_metric said so
        return columns
    for column in columns[1:]:
        if column.key == metric.key or \
                not all(_alike(column, y, qid, max_grade) for y, qid in sets):
            continue
        warnings.warn(metrics.alike_message([column.label], "the held-out queries",
                                            metrics.why_alike(column.kind, facts, column.k,
                                                              column.convention))
                      + ", so its column cannot tell the models apart",
                      metrics.ConstantMetricWarning, stacklevel=outside_stacklevel())
    return columns


def _scored_sets(scored):
    """(y, qid) of each scored set, rows of weight 0 left out, empty sets dropped."""
    sets = []
    for y, qid, weight in scored:
        y, qid = np.asarray(y, dtype=np.float64), np.asarray(qid)
        if weight is not None:
            y, qid = y[np.asarray(weight) > 0], qid[np.asarray(weight) > 0]
        if len(y):
            sets.append((y, qid))
    return sets


def _alike(metric, y, qid, max_grade):
    """Whether no ranking of these queries could change metric (on every one of them)."""
    return bool(metrics.alike_in_every_order(
        lambda scores: metric.evaluate(scores, y, qid, True, max_grade), y).all())
