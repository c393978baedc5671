"""A click log read from svm_proprank's training file: each click's weight, checked at its line."""
from __future__ import annotations

import numpy as np

from ..data.queries import Queries
from ..data.validation import preferred_documents, preferred_means
from ..errors import InputError

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any


def click_weights(dataset: Any, clip: float | None = None) -> tuple[np.ndarray, float]:
    """(one weight per document, svm_proprank's scale) of a Dataset read with ``costs=True``.

    A document with ``cost:`` is a click weighing its cost (its inverse
    propensity, svm_proprank's format; at most 1/``clip`` with a propensity
    floor); a document without one weighs 1 (it is only ever the lower side
    of a pair).  The scale is the mean over queries of their clicks' mean
    weight: svm_proprank multiplies each query's loss by C / queries times its
    cost, where the learners normalise weights to mean 1, so training at
    C × scale gives svm_proprank's objective at C.

    Raises
    ------
    InputError
        Naming the file and line of the first click whose cost is not a
        positive number, that has no query (no qid:, or qid:0), or that has
        nothing to be preferred over (no document of its query with a lower
        target); or when no line has a cost.
    """
    cost = dataset.cost
    clicks = ~np.isnan(cost)
    if not clicks.any():
        raise InputError(dataset.path, None, "no line has a cost: (a click's weight, its "
                                             "inverse propensity): this is not a click log")
    _refuse_first(dataset, clicks & ~(cost > 0),
                  "a click's cost is its weight, the inverse propensity 1/p of its rank "
                  "(p in (0, 1]): it must be greater than zero")
    _refuse_first(dataset, clicks & (dataset.qid == 0),
                  "a click on no query: give its query as qid:N, N ≥ 1")
    queries = Queries(dataset.qid)
    preferred = preferred_documents(dataset.y, queries)
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


def _refuse_first(dataset, bad, reason):
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        value = dataset.cost[first]
        raise InputError(dataset.path, int(dataset.line[first]), f"cost:{value:g}: {reason}")
