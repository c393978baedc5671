"""The names of the types in rankfast's annotations; read by type checkers only.

No module imports this one at run time (each imports it under ``if
TYPE_CHECKING``, and its annotations are strings: ``from __future__ import
annotations``), so the programs start without importing ``typing``.  It
imports pandas and scipy for type checkers only, and writes its aliases
with ``Union`` and quoted names, so that it imports without them (and
under Python 3.9) all the same.

Two families.  What a user may pass to a public entry point (``fit``,
``predict``, ``score``, the metrics, the file writers), which
rankfast.data.validation checks and converts once:

MatrixLike
    Features, shape (n_documents, n_features): an ndarray, a list of lists
    (anything numpy.asarray takes), a pandas DataFrame, any scipy sparse
    matrix or array, or a rankfast.data.sparse.CSR.
VectorLike
    One value per document (labels, query ids, scores) or per query (group
    sizes, weights): an ndarray, a list, a pandas Series.

What the code under that boundary passes around, checked already:

Matrix
    Checked features: a C-contiguous float64 ndarray or a CSR (float64
    values, or float32 for the learners whose kernels widen them), as
    rankfast.data.validation.check_features returns them.
DenseMatrix
    A 2-D float64 ndarray (a centred X̂, a Gram matrix, mapped features).
ScipyMatrix
    A dense float64 ndarray or a scipy.sparse.csr_matrix: what the kernel
    maps and kernel models multiply (scipy's algebra, not rankfast's CSR).
Vector
    A 1-D float64 ndarray: checked labels, scores, weights w, per-query
    multipliers c_q.
Int64Vector
    A 1-D int64 ndarray: query offsets (``starts``), row permutations,
    feature ids, column indices.
MatrixProducts
    What the solvers of rankfast.optimize multiply by: X's shape, X v and Xᵀ u
    (rankfast.losses.products.DataMatrix).
Log
    A progress callback, ``log(text, level)``, or None.

Query ids once checked are a plain ``np.ndarray``: any dtype np.unique can
sort (integers, floats, strings).

The dtypes (float64, int64) are named for the reader, not checked: the
aliases are ``np.ndarray``, not ``NDArray[np.float64]``, because numpy's
stubs type a vector's dot product ``w @ w`` as an array and argsort's or
flatnonzero's int64 as ``intp``, and their arithmetic's result types move
from one numpy release to the next.
"""
from typing import TYPE_CHECKING, Callable, Optional, Protocol, Union

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    import pandas as pd
    import scipy.sparse as sp

    from .data.sparse import CSR

# ---- what the public entry points take (checked by rankfast.data.validation)
MatrixLike = Union[ArrayLike, "sp.spmatrix", "sp.sparray", "pd.DataFrame", "CSR"]
VectorLike = Union[ArrayLike, "pd.Series"]

# ---- what the code under the boundary passes around (dtypes for the reader: see above)
DenseMatrix = np.ndarray
Matrix = Union[np.ndarray, "CSR"]
ScipyMatrix = Union[np.ndarray, "sp.csr_matrix"]
Vector = np.ndarray
Int64Vector = np.ndarray



class MatrixProducts(Protocol):
    """X as the solvers see it: its shape, X v and Xᵀ u (rankfast.losses.products.DataMatrix)."""

    @property
    def shape(self) -> tuple[int, int]: ...

    def matvec(self, v: Vector) -> np.ndarray: ...

    def rmatvec(self, u: Vector) -> np.ndarray: ...


Log = Optional[Callable[[str, int], None]]
