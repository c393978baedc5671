"""X for the losses: products X v and Xᵀ u on threads, and the pair sums every pairwise loss's
Hessian diagonal is made of (all pairs active), in O(nnz(X)) with no pair formed."""
from __future__ import annotations

import numpy as np

from .._kernels import _products, _prsvm
from .._kernels.threads import BLOCK_ROWS, query_chunks
from ..data.sparse import CSR, as_csr, issparse

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import Int64Vector, Matrix, MatrixLike, Vector


def kernel_form(X: MatrixLike) -> Matrix:
    """X as the compiled kernels take it: a rankfast.data.sparse.CSR or a C-contiguous float64 ndarray.

    X in one of these forms (a TrainingData's: every estimator's fit) is
    returned as it is, with no check or conversion; other forms (a scipy
    matrix or a list given to an objective directly) are converted.
    """
    if isinstance(X, CSR) or (isinstance(X, np.ndarray) and X.dtype == np.float64
                              and X.flags.c_contiguous):
        return X
    return as_csr(X) if issparse(X) else np.ascontiguousarray(X, dtype=np.float64)


class DataMatrix:
    """X for the solvers: X v and Xᵀ u on ``n_threads`` threads, the same bits for any number.

    X is taken as rankfast.data.validation.TrainingData holds it, without converting
    it again (kernel_form).  Dense X is used as given (no copy); sparse X stays in
    CSR, never densified (12 bytes a value against dense's 8 only where it is
    full, and no second copy of the data), with its transpose in CSR only when
    it has so many columns that per-block partial sums (rankfast._kernels._products)
    would cost more than the product itself.  A row's products are added in
    four running sums, dense or sparse (a full CSR row gives the dense row's
    bits), not in scipy's one chain, whose additions bound its speed.  A CSR
    matrix with every entry stored (a LETOR file's) is multiplied as the dense
    matrix its values are, without reading its indices: the same bits, 1.3x as fast.
    """

    PARTIAL_MAX = 1 << 22           # doubles of per-block partial sums, above: Xᵀ in CSR

    def __init__(self, X: Matrix, n_threads: int = 1) -> None:
        self.n_threads = int(n_threads)
        self.shape = X.shape
        n, d = X.shape
        n_blocks = max(-(-n // BLOCK_ROWS), 1)
        X = kernel_form(X)
        self.dense = not isinstance(X, CSR)
        self.rows: np.ndarray | None = None  # a CSR matrix with every entry stored, seen as n × d (no copy)
        if self.dense:
            self.X: Any = X
        else:                             # float32 values stay float32 (the kernels widen them)
            self.X = CSR(X.kernel_data(), X.indices, X.indptr, X.shape)  # type: ignore[union-attr]
            if n and d and self.X.nnz == n * d and _products.full_rows(X.indices, X.indptr, d):  # type: ignore[union-attr]
                self.rows = self.X.data[:n * d].reshape(n, d)
        self.XT = None
        partial_size = n_blocks * d         # per-block sums cost this much per Xᵀu besides nnz
        if not self.dense and partial_size > min(self.PARTIAL_MAX, self.X.nnz):
            self.XT = self.X.T
            self.partial = None
        else:
            self.partial = np.empty((n_blocks, d))

    def matvec(self, v: Vector) -> np.ndarray:
        """X v."""
        v = np.ascontiguousarray(v, dtype=np.float64)
        out = np.empty(self.shape[0])
        if self.dense or self.rows is not None:
            _products.dense_matvec(self.X if self.dense else self.rows, v, out, self.n_threads)
        else:
            X = self.X
            _products.csr_matvec(X.data, X.indices, X.indptr, v, out, self.n_threads, lanes=True)
        return out

    def rmatvec(self, u: Vector, entries: str = "x") -> np.ndarray:
        """Xᵀ u; with entries "abs" |X|ᵀ u, with "square" (X ∘ X)ᵀ u (no copy of X either way)."""
        mode = {"x": 0, "abs": 1, "square": 2}[entries]
        u = np.ascontiguousarray(u, dtype=np.float64)
        out = np.zeros(self.shape[1])
        if self.dense or self.rows is not None:
            _products.dense_rmatvec(self.X if self.dense else self.rows, u, out, self.partial,
                                    BLOCK_ROWS, self.n_threads, mode)
        elif self.XT is None:
            X = self.X
            _products.csr_rmatvec(X.data, X.indices, X.indptr, u, out, self.partial,
                                  BLOCK_ROWS, self.n_threads, mode)
        else:
            XT = self.XT
            _products.csr_matvec(XT.data, XT.indices, XT.indptr, u, out, self.n_threads, mode,
                                 lanes=True)
        return out


def pair_weight_bound(query_weight: Vector, starts: Int64Vector,
                      doc_weight: Vector | None = None) -> Vector:
    """c_q times the largest document weight of q (c_q without doc_weight): no pair of q weighs
    more, so the all-pairs diagonal and XᵀLX built on it bound the weighted ones."""
    if doc_weight is None:
        return query_weight
    sizes = np.diff(starts)
    largest = np.zeros(len(sizes))
    np.maximum.at(largest, np.repeat(np.arange(len(sizes)), sizes), doc_weight)
    return query_weight * largest


def pair_square_sums(products: DataMatrix, starts: Int64Vector, rank: Int64Vector,
                     query_weight: Vector) -> np.ndarray:
    """Σ_q c_q Σ_{pairs of q with different labels} (x_lj − x_kj)² for every column j.

    The diagonal of Σ_q c_q Σ_pairs (x_l − x_k)(x_l − x_k)ᵀ: what every pairwise
    learner's Hessian diagonal is made of (all pairs active), in O(nnz(X)) with
    no pair formed.  Within a query, the pairs across levels are all pairs less
    those within a level, and Σ_{pairs of a set S} (x_l − x_k)² = |S| Σ_S x² − (Σ_S x)²;
    so the sum is Σ_i c_q (m_q − m_level(i)) x_i² − Σ_q c_q (Σ_q x)² + Σ_levels c_q (Σ_level x)².

    Parameters
    ----------
    products : DataMatrix
        X, rows grouped by query.
    starts : ndarray of int64
        Query offsets with the row count appended.
    rank : ndarray of int64
        Each document's label rank (any order-preserving integer code).
    query_weight : ndarray of float64
        c_q, one per query.

    Returns
    -------
    ndarray of float64, shape (n_features,), ≥ 0 (rounding clipped)
    """
    n, d = products.shape
    if n == 0:
        return np.zeros(d)
    starts = np.asarray(starts, dtype=np.int64)
    sizes = np.diff(starts)
    query = np.repeat(np.arange(len(sizes)), sizes)
    group_order = np.empty(n, dtype=np.int64)      # each query's rows by rank: lexsort((rank, query))
    _prsvm.sort_within_queries(np.asarray(rank, dtype=np.float64), starts, group_order,
                               query_chunks(starts), products.n_threads)
    key_q, key_r = query[group_order], rank[group_order]
    change = np.flatnonzero((np.diff(key_q) != 0) | (np.diff(key_r) != 0)) + 1
    group_starts = np.concatenate(([0], change, [n])).astype(np.int64)
    n_groups = len(group_starts) - 1
    group_of = np.empty(n, dtype=np.int64)
    group_of[group_order] = np.repeat(np.arange(n_groups), np.diff(group_starts))
    c_query = np.asarray(query_weight, dtype=np.float64)
    c = c_query[query]
    c_group = np.zeros(n_groups)
    c_group[group_of] = c
    n_other = sizes[query] - np.diff(group_starts)[group_of]
    if products.dense:
        X, threads = products.X, products.n_threads
        by_query = _weighted_column_squares(
            _group_sums(X, np.arange(n, dtype=np.int64), starts, threads),
            c_query)
        by_group = _weighted_column_squares(_group_sums(X, group_order, group_starts, threads),
                                            c_group)
    else:
        by_group, by_query = products.X.nested_square_sums(
            group_order, group_starts, query[group_order[group_starts[:-1]]], c_group, c_query)
    total = products.rmatvec(c * n_other, entries="square") - by_query + by_group
    return np.maximum(total, 0.0)


def _group_sums(X, order, group_starts, n_threads):
    """Row g of the result: the sum of X's rows order[group_starts[g]:group_starts[g + 1]] (dense
    X), added in ascending row order as np.add.at adds them, with no copy of X."""
    sums = np.empty((len(group_starts) - 1, X.shape[1]))
    _products.dense_group_sums(X, order, group_starts, sums, n_threads)
    return sums


def _weighted_column_squares(A, weights):
    """Σ_i weights_i A_ij² for every column j (dense A)."""
    return (A * A).T @ weights
