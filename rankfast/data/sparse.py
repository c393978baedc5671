"""Compressed sparse rows without scipy: what the reader fills and the linear learners read.

Importing scipy.sparse costs about a third of a second, more than reading and
training on a small file takes.  The linear learners only multiply by X and Xᵀ
(rankfast._kernels._products), select rows and drop empty columns, so they work on
:class:`CSR`, three NumPy arrays; scipy is imported only by what uses its
algorithms (RankRLS's linear algebra, kernel maps) or when a user asks for a
scipy matrix (``Dataset.X``).  ``scipy_csr`` turns either form into scipy's,
sharing the arrays.
"""
from __future__ import annotations

import sys

import numpy as np

from .._kernels import _csr, _products
from .._kernels._products import mark_columns
from .._kernels.threads import resolve_n_jobs

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Union

    import scipy.sparse as sp
    from numpy.typing import ArrayLike, DTypeLike
    from typing_extensions import TypeIs

    # rankfast._typing's MatrixLike; spelled out here, as that module imports CSR from this one
    MatrixLike = Union[ArrayLike, sp.spmatrix, sp.sparray, "CSR"]


class CSR:
    """A sparse matrix as CSR arrays: row i holds data[indptr[i]:indptr[i + 1]] in columns indices[...].

    Parameters
    ----------
    data : ndarray of float32 or float64, shape (nnz,)
    indices : ndarray of int32 or int64, shape (nnz,)
        Column of each entry (0-based; any order within a row).
    indptr : ndarray of int32 or int64, shape (n_rows + 1,)
    shape : (int, int)

    The arrays are used as given (no copy); indices get indptr's integer type
    if they differ, as the compiled kernels take both of one type.

    Examples
    --------
    >>> import numpy as np
    >>> from rankfast.data.sparse import CSR
    >>> X = CSR(np.array([1.0, 2.0, 3.0]), np.array([0, 2, 1]), np.array([0, 2, 3]), (2, 3))
    >>> X.toarray()
    array([[1., 0., 2.],
           [0., 3., 0.]])
    >>> X[[1, 0]].toarray()
    array([[0., 3., 0.],
           [1., 0., 2.]])
    >>> X.T.toarray()
    array([[1., 0.],
           [0., 3.],
           [2., 0.]])
    """

    format = "csr"
    ndim = 2

    def __init__(self, data: ArrayLike, indices: ArrayLike, indptr: ArrayLike,
                 shape: tuple[int, int]) -> None:
        indptr = np.asarray(indptr)
        if indptr.dtype not in (np.int32, np.int64):
            indptr = indptr.astype(np.int64)
        self.data = np.asarray(data)
        self.indices = np.asarray(indices).astype(indptr.dtype, copy=False)
        self.indptr = indptr
        self.shape = (int(shape[0]), int(shape[1]))

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1]) if len(self.indptr) else 0

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    def __repr__(self):
        return (f"<{self.shape[0]}x{self.shape[1]} rankfast.data.sparse.CSR of {self.dtype} "
                f"with {self.nnz} stored elements>")

    def __getitem__(self, rows):
        """The rows ``rows`` (a slice, an index array or a boolean mask), in that order."""
        if isinstance(rows, tuple):
            raise IndexError("CSR selects rows only (X[rows])")
        index = np.ascontiguousarray(np.arange(self.shape[0], dtype=np.int64)[rows])
        if index.ndim != 1:
            raise IndexError("CSR selects rows only (X[rows])")
        values = self.kernel_data()
        total = int(np.diff(self.indptr)[index].sum())
        indptr = np.zeros(len(index) + 1, dtype=self.indptr.dtype)
        data = np.empty(total, dtype=values.dtype)
        indices = np.empty(total, dtype=self.indptr.dtype)
        _csr.take_rows(values, self.indices, self.indptr, index, data, indices, indptr)
        return CSR(data, indices, indptr, (len(index), self.shape[1]))

    @property
    def T(self) -> CSR:
        """Xᵀ as CSR (each row of Xᵀ lists its entries in X's row order)."""
        values = self.kernel_data()
        indptr = np.zeros(self.shape[1] + 1, dtype=self.indptr.dtype)
        data = np.empty(self.nnz, dtype=values.dtype)
        indices = np.empty(self.nnz, dtype=self.indptr.dtype)
        _csr.transpose(values, self.indices, self.indptr, data, indices, indptr)
        return CSR(data, indices, indptr, (self.shape[1], self.shape[0]))

    def __matmul__(self, other):
        """X v for a vector v (in float64, each row summed in stored order, as scipy does)."""
        v = np.asarray(other)
        if v.ndim != 1:
            return self.to_scipy() @ other
        if len(v) != self.shape[1]:
            raise ValueError(f"dimension mismatch: X has {self.shape[1]} columns, v {len(v)} entries")
        out = np.empty(self.shape[0])
        _products.csr_matvec(self.kernel_data(), self.indices, self.indptr,
                             np.ascontiguousarray(v, dtype=np.float64), out)
        return out

    def group_square_sums(self, order: ArrayLike, starts: ArrayLike, weights: ArrayLike) -> np.ndarray:
        """Σ_g weights_g (Σ_{i in g} x_ij)² for every column j, group g the rows
        order[starts[g]:starts[g + 1]].

        Examples
        --------
        >>> import numpy as np
        >>> X = CSR(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 1]), np.array([0, 2, 3]), (2, 2))
        >>> X.group_square_sums(np.array([0, 1]), np.array([0, 2]), np.array([0.5]))  # (1², 5²)/2
        array([ 0.5, 12.5])
        """
        out = np.zeros(self.shape[1])
        _csr.group_square_sums(self.kernel_data(), self.indices, self.indptr,
                               np.ascontiguousarray(order, dtype=np.int64),
                               np.ascontiguousarray(starts, dtype=np.int64),
                               np.ascontiguousarray(weights, dtype=np.float64), out)
        return out

    def nested_square_sums(self, order: ArrayLike, starts: ArrayLike, outer: ArrayLike,
                           weights: ArrayLike, outer_weights: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(group_square_sums of the groups, of the outer groups they make up), one pass.

        Group g is the rows order[starts[g]:starts[g + 1]] and lies in outer group
        outer[g]; the groups of an outer group are consecutive.

        Examples
        --------
        >>> import numpy as np
        >>> X = CSR(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 1]), np.array([0, 2, 3]), (2, 2))
        >>> X.nested_square_sums(np.array([0, 1]), np.array([0, 1, 2]), np.array([0, 0]),
        ...                      np.array([1.0, 1.0]), np.array([0.5]))   # (1², 2² + 3²), (1², 5²)/2
        (array([ 1., 13.]), array([ 0.5, 12.5]))
        """
        out, outer_out = np.zeros(self.shape[1]), np.zeros(self.shape[1])
        _csr.nested_square_sums(self.kernel_data(), self.indices, self.indptr,
                                np.ascontiguousarray(order, dtype=np.int64),
                                np.ascontiguousarray(starts, dtype=np.int64),
                                np.ascontiguousarray(outer, dtype=np.int64),
                                np.ascontiguousarray(weights, dtype=np.float64),
                                np.ascontiguousarray(outer_weights, dtype=np.float64),
                                out, outer_out)
        return out, outer_out

    def astype(self, dtype: DTypeLike, copy: bool = True) -> CSR:
        data = self.data.astype(dtype, copy=copy)
        return self if data is self.data else CSR(data, self.indices, self.indptr, self.shape)

    def toarray(self) -> np.ndarray:
        out = np.zeros(self.shape, dtype=self.dtype)
        rows = np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))
        np.add.at(out, (rows, self.indices[:self.nnz]), self.data[:self.nnz])
        return out

    def to_scipy(self) -> sp.csr_matrix:
        """scipy.sparse.csr_matrix sharing these arrays."""
        import scipy.sparse as sp
        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape, copy=False)

    def kernel_data(self) -> np.ndarray:
        """data as the kernels take it (they compute in float64): float32 kept, anything else as float64."""
        return self.data if self.data.dtype == np.float32 else self.data.astype(np.float64, copy=False)


def all_finite(values: ArrayLike, n_threads: int | None = 1) -> bool:
    """Whether an array holds no NaN or ±inf (float32 and float64 in one pass, without a copy).

    ``n_threads``: threads (None or 0: every core this process may use).
    """
    values = np.ascontiguousarray(values).ravel()
    if values.dtype not in (np.float32, np.float64):
        return bool(np.isfinite(values).all())
    return _csr.all_finite(values, resolve_n_jobs(n_threads, values.size))


def issparse(X: object) -> TypeIs[CSR | sp.spmatrix | sp.sparray]:
    """Whether X is a CSR or any scipy sparse matrix (without importing scipy).

    A scipy matrix cannot exist unless scipy.sparse has been imported, so
    when it has not, only CSR can be sparse.
    """
    if isinstance(X, CSR):
        return True
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


def as_csr(X: MatrixLike) -> CSR:
    """X (CSR, scipy sparse, or dense through scipy) as CSR, sharing a scipy CSR matrix's arrays."""
    if isinstance(X, CSR):
        return X
    X = X.tocsr() if issparse(X) else scipy_csr(X)  # type: ignore[union-attr]  # scipy's types are Any
    return CSR(X.data, X.indices, X.indptr, X.shape)


def scipy_csr(X: MatrixLike, dtype: DTypeLike | None = None) -> sp.csr_matrix:
    """X (CSR, scipy sparse or dense) as a scipy.sparse.csr_matrix, of ``dtype`` if given."""
    import scipy.sparse as sp
    if isinstance(X, CSR):
        X = X.to_scipy()
    return sp.csr_matrix(X, dtype=dtype)



def mostly_dense(X: CSR | sp.csr_matrix) -> bool:
    """Whether X has non-zeros in half of its entries or more (then BLAS beats sparse products)."""
    return X.nnz >= 0.5 * X.shape[0] * X.shape[1]


def with_width(X: MatrixLike, width: int) -> sp.csr_matrix:
    """X as float64 CSR with exactly ``width`` columns (features above it dropped)."""
    import scipy.sparse as sp
    X = scipy_csr(X, dtype=np.float64)
    if X.shape[1] > width:
        X = X[:, :width]
    elif X.shape[1] < width:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
    return X


def compact_columns(X: MatrixLike) -> tuple[CSR, np.ndarray]:
    """X without its all-empty columns, and the original index of each kept column.

    Lets learners work in the space of features that occur, so a huge
    feature index never allocates anything per possible index.
    """
    X = as_csr(X)
    if X.shape[1] <= 4 * X.nnz + 1024:
        mask = np.zeros(X.shape[1], dtype=np.int8)        # bincount would copy indices to int64
        mark_columns(X.indices, mask)
        used = np.flatnonzero(mask)
    else:
        used = np.unique(X.indices)
    if len(used) == X.shape[1]:
        return X, used
    indices = np.searchsorted(used, X.indices).astype(X.indices.dtype)
    return CSR(X.data, indices, X.indptr, (X.shape[0], len(used))), used
