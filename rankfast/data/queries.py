"""Queries as arrays: where each query starts, its rows gathered, its index, group sizes to ids.

Query ids are any integers, one per document; a query's rows need not be
contiguous (svm_rank reads such files too).  These helpers are shared by the
reader, the input checks and the metrics, so computing NDCG needs no file reader.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import VectorLike


def query_starts(qid: VectorLike) -> np.ndarray:
    """Offsets where a new run of equal qid starts, with len(qid) appended."""
    qid = np.asarray(qid)
    if len(qid) == 0:
        return np.zeros(1, dtype=np.int64)
    change = np.flatnonzero(qid[1:] != qid[:-1]) + 1
    return np.concatenate(([0], change, [len(qid)])).astype(np.int64)


def count_distinct(values: VectorLike) -> int:
    """How many distinct values ``values`` holds (np.unique's count, without its import of numpy.ma).

    Only the first value of each run of equal ones is sorted: a file's qids come in
    runs, so 500,000 documents sort as their 10,000 queries.
    """
    values = np.asarray(values).ravel()
    if not len(values):
        return 0
    firsts = np.sort(values[np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))])
    return int(np.count_nonzero(firsts[1:] != firsts[:-1])) + 1


def noncontiguous_qid(qid: VectorLike) -> Any:
    """The first qid (in row order) whose rows are split in several runs, or None."""
    qid = np.asarray(qid)
    run_qids = qid[query_starts(qid)[:-1]]
    run = _repeated_run(run_qids)
    return None if run is None else int(run_qids[run])


def group_rows(qid: VectorLike) -> tuple[np.ndarray | None, np.ndarray]:
    """Make each query's rows contiguous.

    Returns ``(permutation, starts)``: rows ``permutation`` (None if the rows
    already are grouped) put queries in the order of their first row, rows of
    a query in their original order; ``starts`` are the query offsets of the
    grouped rows, with the row count appended.
    """
    qid = np.asarray(qid)
    starts = query_starts(qid)
    if _repeated_run(qid[starts[:-1]]) is None:
        return None, starts
    perm = np.argsort(query_index(qid)[0], kind="stable")
    return perm, query_starts(qid[perm])


def query_index(qid: VectorLike) -> tuple[np.ndarray, int]:
    """(query number of each row, number of queries), queries numbered by first appearance."""
    qid = np.asarray(qid)
    if len(qid) == 0:
        return np.zeros(0, dtype=np.int64), 0
    _, first, inverse = np.unique(qid, return_index=True, return_inverse=True)
    renumber = np.empty(len(first), dtype=np.int64)
    renumber[np.argsort(first, kind="stable")] = np.arange(len(first))
    return renumber[inverse.ravel()], len(first)


def _repeated_run(run_qids):
    """Position of the first run whose qid an earlier run had, or None."""
    _, first_run = np.unique(run_qids, return_index=True)
    if len(first_run) == len(run_qids):
        return None
    seen_before = np.ones(len(run_qids), dtype=bool)
    seen_before[first_run] = False
    return int(np.argmax(seen_before))


# ------------------------------------------------- query group sizes (LightGBM / XGBoost)

def group_to_qid(sizes: VectorLike, n_documents: int) -> np.ndarray:
    """Query number of each row from the sizes of consecutive groups of rows.

    Parameters
    ----------
    sizes : array-like of int
        Group sizes, each at least 1, in row order (LightGBM's ``group``).
    n_documents : int
        Number of rows; the sizes must add up to it.

    Returns
    -------
    ndarray of int64, shape (n_documents,)
        0 for the rows of the first group, 1 for the next, ...

    Raises
    ------
    ValueError
        A size that is not a positive integer, or sizes not adding up.

    Examples
    --------
    >>> from rankfast.data.queries import group_to_qid
    >>> group_to_qid([2, 1, 3], 6)
    array([0, 0, 1, 2, 2, 2])
    """
    sizes = np.asarray(sizes)
    if sizes.ndim != 1 or sizes.dtype.kind not in "iuf" or (
            sizes.dtype.kind == "f" and not np.all(np.isfinite(sizes) & (sizes == np.round(sizes)))):
        raise ValueError("group sizes must be a 1-D sequence of integers")
    if len(sizes) and sizes.min() < 1:
        raise ValueError(f"group sizes must be at least 1 (got {sizes.min():g})")
    total = int(sizes.sum()) if len(sizes) else 0
    if total != n_documents:
        raise ValueError(f"the group sizes add up to {total} documents, not {n_documents}")
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes.astype(np.int64))


class Queries:
    """The queries of n rows, analysed once: their grouping and their numbering, on first use.

    Every consumer of one fit's query ids (the grouping of the rows, the query
    weights, the check for pairs, the count of queries) reads it from here,
    so a fit sorts or compares its qids once, not once per consumer.

    Parameters
    ----------
    qid : ndarray, shape (n,)
        Query id of each row (rows of a query need not be contiguous).

    Examples
    --------
    >>> from rankfast.data.queries import Queries
    >>> queries = Queries([7, 7, 3, 7])
    >>> queries.permutation, queries.starts
    (array([0, 1, 3, 2]), array([0, 3, 4]))
    >>> queries.index, queries.n_queries
    (array([0, 0, 1, 0]), 2)
    """

    def __init__(self, qid: VectorLike) -> None:
        self.qid = np.asarray(qid)

    @cached_property
    def _runs(self) -> np.ndarray:
        return query_starts(self.qid)

    @cached_property
    def contiguous(self) -> bool:
        """Whether each query's rows are one run (no query id comes back after another)."""
        return _repeated_run(self.qid[self._runs[:-1]]) is None

    @cached_property
    def _numbering(self) -> tuple[np.ndarray, int]:
        if self.contiguous:                       # the runs are the queries
            sizes = np.diff(self._runs)
            return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes), len(sizes)
        return query_index(self.qid)

    @cached_property
    def _grouping(self) -> tuple[np.ndarray | None, np.ndarray]:
        if self.contiguous:
            return None, self._runs
        permutation = np.argsort(self.index, kind="stable")
        return permutation, query_starts(self.qid[permutation])

    @property
    def permutation(self) -> np.ndarray | None:
        """The rows in query order, each query's rows in their order (group_rows), or None
        when each query's rows are contiguous already."""
        return self._grouping[0]

    @property
    def starts(self) -> np.ndarray:
        """The offsets of the queries in the grouped rows, with the row count appended."""
        return self._grouping[1]

    @property
    def index(self) -> np.ndarray:
        """Each row's query number, queries numbered by first appearance (query_index)."""
        return self._numbering[0]

    @property
    def n_queries(self) -> int:
        return len(self.starts) - 1
