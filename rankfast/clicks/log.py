"""A click log read from svm_proprank's training file: each click's weight, checked at its line."""
from __future__ import annotations

import numpy as np

from ..data.queries import Queries
from ..data.validation import preferred_documents, preferred_means
from ..errors import InputError

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any


def click_weights(dataset: Any, clip: float | None = None, check_queries: bool = True,
                  check_preferred: bool = True) -> tuple[np.ndarray, float]:
    """(one weight per document, svm_proprank's scale) of a Dataset read with ``costs=True``.

    A document with ``cost:`` is a click weighing its cost (its inverse
    propensity, svm_proprank's format; at most 1/``clip`` with a propensity
    floor); a document without one weighs 1 (it is only ever the lower side
    of a pair).  The scale is the mean over queries of their clicks' mean
    weight: svm_proprank multiplies each query's loss by C / queries times its
    cost, where the learners normalise weights to mean 1, so training at
    C × scale gives svm_proprank's objective at C.

    ``cost:`` is each line's: one click's weight in svm_proprank's files (a
    query per click); the clip caps it as it is, so a file whose cost: sums
    several clicks (rankfast.clicks.write_click_file's default) is clipped
    when it is written instead.

    Raises
    ------
    InputError
        Naming the file and line of the first click whose cost is not a
        positive number, that has no query (check_click_queries; skipped with
        ``check_queries=False``, when the caller checked the file before its
        queries came from a group file), or that has nothing to be preferred
        over (no document of its query with a lower target); or when no line
        has a cost.
    """
    cost = dataset.cost
    clicks = ~np.isnan(cost)
    if not clicks.any():
        raise InputError(dataset.path, None, "no line has a cost: (a click's weight, its "
                                             "inverse propensity): this is not a click log")
    _refuse_first(dataset, clicks & ~(cost > 0),
                  "a click's cost is its weight, the inverse propensity 1/p of its rank "
                  "(p in (0, 1]): it must be greater than zero")
    if check_queries:
        check_click_queries(dataset)
    queries = Queries(dataset.qid)
    preferred = preferred_documents(dataset.y, queries)
    if check_preferred:            # (off for a file that holds part of a query: rankfast.dask)
        _refuse_first(dataset, clicks & ~preferred & (dataset.y > 0),
                      "a click with nothing to prefer it over: no document of its query has a "
                      "lower target")
    weight = np.where(clicks, cost, 1.0)
    if clip is not None:
        if not 0 < clip <= 1:
            raise ValueError(f"the propensity clip must be in (0, 1] (got {clip!r})")
        weight = np.minimum(weight, 1.0 / clip)
    exponent = np.frexp(weight.max())[1]
    means = preferred_means(np.ldexp(weight, -exponent), queries, preferred)
    return weight, float(np.ldexp(means.mean(), exponent))


def check_click_queries(dataset: Any) -> None:
    """InputError at the first click (a line with cost:) without a qid in a file whose other
    lines have qids: a click on an unknown query.  A file without any qid is one ranking,
    or takes its queries from a group file."""
    if dataset.cost is not None and (dataset.qid != 0).any():
        _refuse_first(dataset, ~np.isnan(dataset.cost) & (dataset.qid == 0),
                      "a click on no query: give its query as qid:N, N ≥ 1")


def _refuse_first(dataset, bad, reason):
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        value = dataset.cost[first]
        raise InputError(dataset.path, int(dataset.line[first]), f"cost:{value:g}: {reason}")
