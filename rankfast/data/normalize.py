"""Feature normalisation for data whose features have wildly different scales.

Raw learning-to-rank features (MSLR's go from 0..1 up to 2.3e8) make every
linear learner's problem badly conditioned and its weights meaningless to
compare.  rank_learn's ``--normalize`` (and the estimators' ``normalize=``):

``none``
    svm_rank's behaviour: the features as given.
``query``
    LETOR's QueryLevelNorm: within each query, each feature mapped by
    (x − min) / (max − min) over the query's documents (0 where max = min,
    implicit zeros of sparse rows counted).  What the LETOR and MQ2008 files
    already are.  The model file records it (``normalize=query``) and
    rank_classify applies it query by query; svm_rank_classify cannot, and the
    model's header says so.
``zscore``
    Each feature divided by its standard deviation over the training set (the
    mean cancels in every pair, so it is not subtracted: sparse data stays
    sparse).  Folded back into the weights, w_j / σ_j: the model file is a plain
    svm_rank model that svm_rank_classify applies as it is.  A kernel model
    (rankfast.learners.kernel_approx) scales the documents before its map: a
    Nyström file records σ (``scale=``), which rank_classify applies; a random
    Fourier model folds it into Ω.
``log``
    sign(x) · log(1 + |x|) for every value (zeros stay zeros); recorded and
    applied like ``query``.

When it helps: ``query`` when the raw features are counts or scores whose
range differs from query to query (web search features: MSLR, Istella);
``zscore`` when the features are comparable across queries but on different
scales (one ranking of regression data); ``log`` for heavy-tailed counts.
"""
from __future__ import annotations

import numpy as np

from .._kernels import _csr, _minmax
from ..errors import UsageError
from .sparse import CSR, as_csr, issparse

CHUNK = 1 << 20          # entries scaled at a time (zscore): 8 MB of gathered scales

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import ArrayLike

    from .._typing import Int64Vector, Matrix, MatrixLike, Vector, VectorLike

KINDS = ("none", "query", "zscore", "log")
APPLIED = ("query", "log")          # what a model file records and rank_classify applies


def check_kind(kind: str) -> Any:
    """The kind, or a UsageError naming the allowed values."""
    if kind not in KINDS:
        raise UsageError(f"'normalize' must be one of {', '.join(KINDS)}, not {kind!r}")
    return kind


def log_transform(values: ArrayLike) -> np.ndarray:
    """sign(x) · log(1 + |x|), elementwise (a new float64 array, and no other of that size)."""
    values = np.asarray(values)
    out = np.abs(values, dtype=np.float64)
    np.log1p(out, out=out)
    return np.copysign(out, values, out=out)


def query_min_max(X: MatrixLike, qid: VectorLike) -> Matrix:
    """X with each feature mapped to (x − min) / (max − min) within each query (0 where max = min).

    Parameters
    ----------
    X : ndarray (n × d) or sparse matrix
    qid : array-like, shape (n,)
        Query of each row; a query's rows need not be contiguous.

    Returns
    -------
    ndarray of float64, or CSR of float64 when X is sparse: an absent entry is a 0
    of its query's range, stored when it does not scale to 0 (a column with a
    negative minimum in that query), after the row's other entries.

    Query by query in a compiled kernel (rankfast._kernels._minmax): the memory it takes is
    the result's and O(d) more.
    """
    qid = np.asarray(qid)
    if not issparse(X):
        X = np.asarray(X)
    if len(qid) != X.shape[0]:
        raise ValueError(f"query_min_max: {len(qid)} query ids for {X.shape[0]} rows")
    _, group = np.unique(qid, return_inverse=True)
    group = group.ravel()
    order = np.argsort(group, kind="stable").astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(np.bincount(group)))).astype(np.int64)
    if issparse(X):
        return _sparse_min_max(canonical_csr(as_csr(X)), order, starts)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    X = np.ascontiguousarray(X)
    out = np.empty(X.shape, dtype=np.float64)
    if X.size:
        _minmax.dense_min_max(X, order, starts, out)
    return out


def canonical_csr(X: CSR) -> CSR:
    """X with its entries from data[0] on, contiguous, float32 or float64 (views where they are).

    A CSR may start at indptr[0] > 0 (rows taken from a larger one) and hold strided
    arrays; the kernels read data and indices from 0 to indptr[-1].
    """
    first, last = int(X.indptr[0]), int(X.indptr[-1])
    data = X.data[first:last]
    if data.dtype not in (np.float32, np.float64):
        data = data.astype(np.float64)
    indptr = X.indptr - first if first else X.indptr
    return CSR(np.ascontiguousarray(data), np.ascontiguousarray(X.indices[first:last]),
               np.ascontiguousarray(indptr), X.shape)


def _sparse_min_max(X, order, starts):
    """query_min_max of a canonical CSR.  The kernels' scratch is a few arrays of one value
    a column: when columns outnumber the entries (a file naming feature 2**31 - 1), the
    columns that occur are numbered afresh first, and the result's put back."""
    n, d = X.shape
    columns, indices = None, X.indices
    if d > X.nnz // 4 + 4096:
        columns, indices = np.unique(X.indices, return_inverse=True)
        indices = indices.astype(X.indices.dtype).ravel()
    width = d if columns is None else len(columns)
    extra = np.empty(n, dtype=np.int64)
    added = _minmax.sparse_extra_entries(X.data, indices, X.indptr, order, starts, width, extra)
    if not added:       # the same places: X's indices and indptr are shared, not written
        out = np.empty(len(X.data), dtype=np.float64)
        _minmax.sparse_min_max(X.data, indices, X.indptr, order, starts, width,
                               X.indptr.astype(np.int64), out, np.empty(0, dtype=indices.dtype),
                               False)
        return CSR(out, X.indices, X.indptr, X.shape)
    lengths = np.diff(X.indptr).astype(np.int64) + extra
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    out_indices = np.empty(indptr[-1], dtype=indices.dtype)
    out = np.empty(indptr[-1], dtype=np.float64)
    _minmax.sparse_min_max(X.data, indices, X.indptr, order, starts, width, indptr, out,
                           out_indices, True)
    if columns is not None:
        out_indices = columns[out_indices].astype(X.indices.dtype)
    if out_indices.dtype == np.int32 and indptr[-1] <= np.iinfo(np.int32).max:
        indptr = indptr.astype(np.int32)        # CSR gives indices indptr's type: no copy of them
    return CSR(out, out_indices, indptr, X.shape)


class Normalizer:
    """One of KINDS, fitted on training data (only ``zscore`` learns anything: σ per feature).

    Examples
    --------
    >>> import numpy as np
    >>> from rankfast.data.normalize import Normalizer
    >>> X = np.array([[1.0, 200.0], [3.0, 100.0], [2.0, 5e8], [2.0, 0.0]])
    >>> Normalizer("query").fit(X, [1, 1, 2, 2]).transform(X, [1, 1, 2, 2])
    array([[0., 1.],
           [1., 0.],
           [0., 1.],
           [0., 0.]])
    """

    def __init__(self, kind: str = "none") -> None:
        self.kind = check_kind(kind)
        self.scale: Any = None

    def fit(self, X: Matrix, qid: VectorLike | None = None) -> Normalizer:
        if self.kind == "zscore":
            self.scale = _standard_deviations(X)
        return self

    def transform(self, X: Matrix, qid: VectorLike | None = None) -> Matrix:
        """X normalised (X itself for ``none``); ``query`` needs each row's qid."""
        if self.kind == "none":
            return X
        if self.kind == "query":
            if qid is None:
                raise ValueError("normalize='query' needs the query of each row (qid or group)")
            return query_min_max(X, qid)
        if self.kind == "log":
            if issparse(X):
                X = as_csr(X)
                return CSR(log_transform(X.data), X.indices, X.indptr, X.shape)
            return log_transform(X)
        inverse = inverse_scale(self.scale)
        if issparse(X):
            X = as_csr(X)
            data = X.data.astype(np.float64)
            for start in range(0, len(data), CHUNK):   # no gathered copy of the entries' size
                data[start:start + CHUNK] *= inverse[X.indices[start:start + CHUNK]]
            return CSR(data, X.indices, X.indptr, X.shape)
        return np.multiply(X, inverse, dtype=np.float64)

    def original_weights(self, w: Vector, columns: Int64Vector) -> np.ndarray:
        """Weights on the raw features that score as w does on the normalised ones (``zscore``).

        ``columns``: the 0-based feature of each weight.  Only ``zscore`` folds;
        the other kinds return w as it is.
        """
        if self.kind != "zscore":
            return w
        scale = self.scale[columns]
        return np.where(scale > 0, w / np.where(scale > 0, scale, 1.0), 0.0)


def inverse_scale(scale: Vector) -> np.ndarray:
    """1/σ per feature, 0 where σ is 0 (a constant feature is dropped, not divided by 0)."""
    scale = np.asarray(scale, dtype=np.float64)
    return np.where(scale > 0, 1.0 / np.where(scale > 0, scale, 1.0), 0.0)


def _standard_deviations(X):
    """σ of every column over the rows (implicit zeros counted)."""
    n = X.shape[0]
    if n == 0:
        return np.zeros(X.shape[1])
    if issparse(X):
        X = canonical_csr(as_csr(X))
        out = np.empty(X.shape[1])
        _csr.column_deviations(X.data, X.indices, n, out)
        return out
    return np.asarray(X, dtype=np.float64).std(axis=0)


def scale_spread(X: Matrix) -> float:
    """max / min over the columns of each column's largest |value| (non-zero columns), or 1.

    One pass over the stored values, no copy of them (rank_learn asks at -v 1, the
    default, before every fit).
    """
    if issparse(X):
        X = as_csr(X)
        if X.shape[1] <= 4 * X.nnz + 1024:          # as compact_columns: d may be 2^31
            largest = np.zeros(X.shape[1])
            _csr.column_abs_max(X.kernel_data(), X.indices, largest)
        else:
            columns, where = np.unique(X.indices, return_inverse=True)
            largest = np.zeros(len(columns))
            np.maximum.at(largest, where.ravel(), np.abs(X.data.astype(np.float64)))
    elif X.shape[0]:
        X = np.asarray(X)
        largest = np.maximum(np.abs(X.max(axis=0)), np.abs(X.min(axis=0))).astype(np.float64)
    else:
        largest = np.zeros(X.shape[1])
    largest = largest[largest > 0]
    return float(largest.max() / largest.min()) if len(largest) else 1.0


def normalized_scores(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                      feature_ids: Int64Vector, weights: Vector, bias: float, kind: str) -> np.ndarray:
    """Scores of rows (CSR: 0-based columns) under a linear model trained with ``kind``.

    ``query``: the rows must be one query; each weighted feature is min-max
    normalised over them (implicit zeros counted), computed in O(nnz) without
    densifying: score_i = Σ_j (w_j / span_j) x_ij − Σ_j w_j low_j / span_j − b.
    ``log``: any rows; each value x becomes sign(x) log(1 + |x|).  Values are
    narrowed to float32 first, as svm_rank and rank_classify read them.
    """
    n = len(indptr) - 1
    rows = np.repeat(np.arange(n), np.diff(indptr))
    columns = np.asarray(indices, dtype=np.int64) + 1
    position = np.searchsorted(feature_ids, columns)
    position = np.minimum(position, max(len(feature_ids) - 1, 0))
    weighted = (feature_ids[position] == columns) if len(feature_ids) else \
        np.zeros(len(columns), dtype=bool)
    rows, position = rows[weighted], position[weighted]
    x = np.asarray(values, dtype=np.float32)[weighted].astype(np.float64)
    if kind == "log":
        return np.bincount(rows, weights=weights[position] * log_transform(x), minlength=n) - bias
    k = len(feature_ids)
    low, high = np.full(k, np.inf), np.full(k, -np.inf)
    np.minimum.at(low, position, x)
    np.maximum.at(high, position, x)
    partial = np.bincount(position, minlength=k) < n
    low[partial] = np.minimum(low[partial], 0.0)
    high[partial] = np.maximum(high[partial], 0.0)
    span = high - low
    varies = span > 0
    coef = np.zeros(k)
    coef[varies] = weights[varies] / span[varies]
    offset = float(coef[varies] @ low[varies])
    return np.bincount(rows, weights=coef[position] * x, minlength=n) - offset - bias
