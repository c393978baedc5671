"""Each query's documents by increasing score, sorted from the order found last.

A solver asks for the order at scores close to the last ones (a line search's
trials, the next Newton or cutting-plane point), where few documents change
places: rankfast._kernels._prsvm.sort_within_queries then starts from the last
order and sorts by insertion, falling back to its merge sort where that is
cheaper.  Both sort by (score, document), so the order, and every sum the pair
sweeps take in it, is the same bits as a sort from scratch.
"""
from __future__ import annotations

import numpy as np

from .._kernels import _prsvm

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from .._typing import Int64Vector, Vector


class QueryOrder:
    """order = QueryOrder(starts, chunks, n_threads)(scores): a new array each call (callers
    keep theirs), each query's range listing its documents by increasing score (stable)."""

    def __init__(self, starts: Int64Vector, chunks: Int64Vector, n_threads: int) -> None:
        self.starts, self.chunks, self.n_threads = starts, chunks, n_threads
        self._last: np.ndarray | None = None

    def __call__(self, scores: Vector) -> np.ndarray:
        order = np.empty(len(scores), dtype=np.int64)
        _prsvm.sort_within_queries(scores, self.starts, order, self.chunks, self.n_threads,
                                   start=self._last)
        self._last = order
        return order
