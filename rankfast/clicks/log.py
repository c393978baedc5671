"""A click log read from svm_proprank's training file: each click's weight, checked at its line."""
from __future__ import annotations

import numpy as np

from ..data.queries import Queries
from ..data.validation import query_weight_scale
from ..errors import InputError, UsageError

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any


def click_weights(dataset: Any, clip: float | None = None, check_queries: bool = True,
                  check_preferred: bool = True) -> tuple[np.ndarray, float]:
    """(one weight per document, svm_proprank's scale) of a Dataset read with ``costs=True``.

    svm_proprank's reading: a click is a document with a target above 0 (the
    relevant document of its query); it weighs its ``cost:``, its inverse
    propensity (at most 1/``clip`` with a propensity floor), or 1 when its
    line has none (SVM-light's default: a file without any ``cost:`` trains
    unweighted).  ``cost:`` on an unclicked document is ignored; an unclicked
    document weighs 1 (it is only ever the lower side of a pair).  A query
    of one document has no pair and weighs nothing; a query with two clicks
    (which svm_proprank refuses) prefers each over the documents with a lower
    target.  The scale is the mean over queries of their clicks' mean
    weight: svm_proprank multiplies each query's loss by C / queries times its
    cost, where the learners normalise weights to mean 1, so training at
    C × scale gives svm_proprank's objective at C.

    ``cost:`` is each line's: one click's weight in svm_proprank's files (a
    query per click); the clip caps it as it is, so a file whose cost: sums
    several clicks (rankfast.clicks.write_click_file's default) is clipped
    when it is written instead.

    Raises
    ------
    UsageError
        If the dataset was read without ``costs=True`` (it has no cost: values).
    InputError
        Naming the file and line of the first click whose cost is not a
        positive number, that has no query (check_click_queries; skipped with
        ``check_queries=False``, when the caller checked the file before its
        queries came from a group file), or of the first line of a query
        without a click (svm_proprank's "Missing propensity weight"; skipped
        with ``check_preferred=False``, for a file that holds part of a query).
    """
    cost = dataset.cost
    if cost is None:
        raise UsageError("click_weights needs the clicks' cost: values: read the file with "
                         "load_svmlight(path, costs=True)")
    clicks = np.asarray(dataset.y) > 0
    given = ~np.isnan(cost)
    _refuse_first(dataset, clicks & given & ~(cost > 0),
                  "a click's cost is its weight, the inverse propensity 1/p of its rank "
                  "(p in (0, 1]): it must be greater than zero")
    if check_queries:
        check_click_queries(dataset)
    queries = Queries(dataset.qid)
    if check_preferred:            # (off for a file that holds part of a query: rankfast.dask)
        check_every_query_clicked(dataset, queries)
    weight = np.where(clicks & given, cost, 1.0)
    if clip is not None:
        if not 0 < clip <= 1:
            raise ValueError(f"the propensity clip must be in (0, 1] (got {clip!r})")
        weight = np.minimum(weight, 1.0 / clip)
    return weight, query_weight_scale(weight, queries, dataset.y)


def scale_c(learner: Any, scale: float) -> None:
    """svm_proprank's C: every C ``learner`` trains with multiplied by ``scale`` (click_weights'
    scale), in place: its own C (one or a list), a kernel learner's base learner's, and the
    C's of a grid searched around either (rankfast.model_selection.GridSearch's ``C`` or
    ``base_learner__C``).  rank_learn --clicks and rankfast.dask.fit(proprank_c=True) call it.

    Raises
    ------
    UsageError
        When no part of ``learner`` has a C, or a C times ``scale`` is beyond floating point.
    """
    def scaled(C):
        values = np.asarray(C, dtype=np.float64) * scale
        if not np.isfinite(values).all():
            raise UsageError(f"'C' times the clicks' mean weight ({scale:.3g}) is beyond "
                             f"floating point: give a smaller 'C'")
        return values.tolist() if np.ndim(C) else float(values)
    found = False
    for part in (learner, getattr(learner, "estimator", None)):
        grid = getattr(part, "grid", None)
        if isinstance(grid, dict):
            for name in [n for n in grid if n in ("C", "base_learner__C")]:
                grid[name], found = scaled(grid[name]), True
        for holder in (part, getattr(part, "base_learner", None)):
            if holder is not None and hasattr(holder, "C"):
                holder.C, found = scaled(holder.C), True
    if not found:
        raise UsageError("click weights with svm_proprank's C need a learner with a 'C'")


def check_every_query_clicked(dataset: Any, queries: Queries | None = None) -> None:
    """InputError at the first line of the first query without a click (a document with a
    target above 0): svm_proprank refuses it too ("Missing propensity weight")."""
    queries = Queries(dataset.qid) if queries is None else queries
    clicked = np.zeros(queries.n_queries, dtype=bool)
    clicked[queries.index[np.asarray(dataset.y) > 0]] = True
    if clicked.all():
        return
    first = int(np.flatnonzero(~clicked[queries.index])[0])
    raise InputError(dataset.path, int(dataset.line[first]),
                     f"qid {int(dataset.qid[first])} has no click: every query of a click log "
                     f"holds a clicked document (target 1, cost: its inverse propensity)")


def click_count(dataset: Any) -> tuple[int, int]:
    """(clicks, clicks whose line has a cost:) of a Dataset read with ``costs=True``."""
    clicks = np.asarray(dataset.y) > 0
    return int(clicks.sum()), int((clicks & ~np.isnan(dataset.cost)).sum())


def check_click_queries(dataset: Any) -> None:
    """InputError at the first click (a document with a target above 0) without a qid in a
    file whose other lines have qids: a click on an unknown query.  (A file without any
    qid is refused by the programs, unless a group file gives its queries.)"""
    if dataset.cost is not None and (dataset.qid != 0).any():
        _refuse_first(dataset, (np.asarray(dataset.y) > 0) & (dataset.qid == 0),
                      "a click on no query: give its query as qid:N, N ≥ 1")


def _refuse_first(dataset, bad, reason):
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        value = dataset.cost[first]
        given = "" if np.isnan(value) else f"cost:{value:g}: "
        raise InputError(dataset.path, int(dataset.line[first]), f"{given}{reason}")
