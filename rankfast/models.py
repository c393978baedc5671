"""Ranking models and how they score: linear, kernel (support vectors) and random Fourier features.

LinearModel, KernelModel and RFFModel are what rank_learn writes and
rank_classify reads (rankfast.io.model_files holds their file formats).
Scores follow svm_rank_classify's arithmetic so that predictions agree to
the last printed digit: weights and feature values are rounded to float32
(SVM-light stores them as ``float``), products are summed in float64 in the
order of the features on the line, and the threshold b is subtracted.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ._kernels import _predict
from .data.sparse import as_csr, issparse, mostly_dense, with_width
from .data.validation import query_ids

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import ArrayLike

    from ._typing import DenseMatrix, MatrixLike, ScipyMatrix, Vector, VectorLike

if TYPE_CHECKING:                # scipy is imported only where a kernel model needs it
    import scipy.sparse


@dataclasses.dataclass
class KernelParams:
    """SVM-light's kernel settings (``-t -d -g -s -r -u``).

    k(a, b) is a·b (t=0), (s a·b + r)^d (t=1), exp(-g ||a - b||²) (t=2),
    tanh(s a·b + r) (t=3).
    """

    kernel: int = 0
    degree: int = 3
    gamma: float = 1.0
    coef_lin: float = 1.0
    coef_const: float = 1.0
    custom: str = "empty"

    def __call__(self, A: ScipyMatrix, B: ScipyMatrix) -> np.ndarray:
        """Kernel matrix between the rows of A and B (dense arrays or CSR matrices).

        B holds the few rows (landmarks, support vectors).  When both are
        sparse, nothing proportional to their width is allocated (see
        _sparse_dot): a feature index of 2**31 - 1 costs what index 3 would.
        """
        import scipy.sparse as sp
        if sp.issparse(A) and sp.issparse(B):
            dot = _sparse_dot(A, B)
        else:
            dot = A @ B.T
            dot = dot.toarray() if sp.issparse(dot) else np.asarray(dot)  # type: ignore[union-attr]
        if self.kernel == 0:
            return dot
        if self.kernel == 2:                 # exp(-g (|a|² - 2 a·b + |b|²)), in place
            dot *= 2.0 * self.gamma
            dot -= self.gamma * _row_norms_sq(A)[:, None]
            dot -= self.gamma * _row_norms_sq(B)[None, :]
            return np.exp(dot, out=dot)
        dot *= self.coef_lin
        dot += self.coef_const
        if self.kernel == 1:
            return np.power(dot, self.degree, out=dot)
        if self.kernel == 3:
            return np.tanh(dot, out=dot)
        raise ValueError(f"kernel type {self.kernel} cannot be evaluated")


def _sparse_dot(A, B):
    """A Bᵀ as a dense array for sparse A and B, over the columns B uses only.

    scipy's ``A @ B.T`` turns Bᵀ into CSR, whose indptr has one entry per
    column: 16 GB at width 2**31.  Here B's used columns (sorted) are
    renumbered 0 … u − 1 and A's entries in the other columns, which meet
    only zeros of B, are dropped; the products left are summed in the same
    order, so the result is the same to the last bit.  O(nnz(A) log u).
    """
    import scipy.sparse as sp
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"dimension mismatch: {A.shape[1]} and {B.shape[1]} columns")
    used = np.unique(B.indices)
    B_used = sp.csr_matrix((B.data, np.searchsorted(used, B.indices), B.indptr),
                           shape=(B.shape[0], len(used)))
    position = np.searchsorted(used, A.indices)
    hit = position < len(used)
    hit[hit] = used[position[hit]] == A.indices[hit]
    indptr = np.concatenate(([0], np.cumsum(hit)))[A.indptr]
    A_used = sp.csr_matrix((A.data[hit], position[hit], indptr), shape=(A.shape[0], len(used)))
    return (A_used @ B_used.T).toarray()


def _row_norms_sq(M):
    import scipy.sparse as sp
    if sp.issparse(M):
        if not M.has_canonical_format:   # else multiply allocates a row as wide as M
            M = M.copy()
            M.sum_duplicates()
        return np.asarray(M.multiply(M).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", M, M)


class Exportable:
    """``to_onnx()`` and ``to_json(format=...)`` for the models (rankfast.export, as rank_export).

    ``kind`` names the model's form ("linear", "kernel" or "rff"): rankfast.export
    tells the models apart by it, so that it need not import this module.
    """

    kind: ClassVar[str] = ""

    def to_onnx(self, feature_names: Any = None, name: str = "rankfast_model") -> Any:
        """This model as an ONNX graph (see rankfast.export.to_onnx; needs rankfast[onnx])."""
        from .export import to_onnx
        return to_onnx(self, feature_names, name)

    def to_json(self, format: str = "es-ltr", feature_names: Any = None,
                name: str = "rankfast_model") -> Any:
        """This model in a search engine's format (see rankfast.export.to_json)."""
        from .export import to_json
        return to_json(self, format, feature_names, name)


@dataclasses.dataclass
class LinearModel(Exportable):
    """f(x) = Σ_j w_j x_j − b, with the weights kept sparse.

    Attributes
    ----------
    feature_ids : ndarray of int64
        1-based feature indices with a non-zero weight, increasing.
    weights : ndarray of float64
        Their weights.
    bias : float
        The threshold b (subtracted).
    highest_feature_index : int
        The model file's "highest feature index" (svm_rank: training max + 1).
    n_documents : int
        Training documents, as recorded in the file.
    metadata : dict
        rankfast's own key=value notes (algorithm, options, version).
    """

    kind: ClassVar[str] = "linear"
    feature_ids: np.ndarray
    weights: np.ndarray
    bias: float = 0.0
    highest_feature_index: int = 1
    n_documents: int = 0
    metadata: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        weights = np.asarray(self.weights, dtype=np.float64)
        keep = weights != 0
        self.feature_ids = np.asarray(self.feature_ids, dtype=np.int64)[keep]
        self.weights = weights[keep]

    @classmethod
    def from_dense(cls, w: VectorLike, bias: float = 0.0, n_features: int | None = None,
                   n_documents: int = 0, metadata: dict[str, Any] | None = None) -> LinearModel:
        """Model from a dense weight vector (w[j] weighs feature j + 1).

        Parameters
        ----------
        w : array_like of float
        bias : float
        n_features : int, optional
            Training width (default len(w)); the file records it plus one.
        n_documents : int
        metadata : dict, optional

        Returns
        -------
        LinearModel

        Examples
        --------
        >>> from rankfast import LinearModel
        >>> model = LinearModel.from_dense([0.5, 0.0, -2.0])
        >>> model.feature_ids, model.highest_feature_index
        (array([1, 3]), 4)
        >>> model.predict([[2.0, 7.0, 0.25]])
        array([0.5])
        """
        w = file_weights(w)
        nz = np.flatnonzero(w)
        n_features = len(w) if n_features is None else n_features
        return cls(nz.astype(np.int64) + 1, w[nz].copy(), float(bias),
                   int(n_features) + 1, int(n_documents), dict(metadata or {}))

    def dense_weights(self, n_features: int) -> np.ndarray:
        """Weights as a dense vector of length n_features (w[j] for feature j + 1)."""
        w = np.zeros(n_features)
        keep = self.feature_ids <= n_features
        w[self.feature_ids[keep] - 1] = self.weights[keep]
        return w

    def predict(self, X: MatrixLike, qid: VectorLike | None = None) -> np.ndarray:
        """Scores of the rows of X, computed as svm_rank_classify does.

        A model trained with ``--normalize query`` or ``log`` (``normalize`` in
        its metadata) normalises the rows first, as rank_classify does; query
        normalisation needs each row's ``qid``.
        """
        X = _as_csr(X)
        kind = self.metadata.get("normalize", "none")
        if kind not in ("query", "log"):
            return self.predict_rows(X.indptr, X.indices, X.data)
        from .data.normalize import normalized_scores
        if kind == "log":
            return normalized_scores(X.indptr, X.indices, X.data, self.feature_ids,
                                     self.weights, self.bias, kind)
        qid = _normalized_query_ids(X.shape[0], qid)
        out = np.empty(X.shape[0])
        order = np.argsort(qid, kind="stable")
        bounds = np.flatnonzero(np.diff(qid[order])) + 1
        for rows in np.split(order, bounds):
            part = X[rows]
            out[rows] = normalized_scores(part.indptr, part.indices, part.data, self.feature_ids,
                                          self.weights, self.bias, kind)
        return out

    def predict_rows(self, indptr: np.ndarray, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Scores of documents given as CSR arrays (e.g. a reader.RowBlock's), as predict.

        Needs no scipy: this is how rank_classify scores a file as it streams.
        """
        out = np.empty(len(indptr) - 1)
        _predict.linear_scores(indptr, indices, values, self.feature_ids,
                               self.weights, self.bias, out)
        return out


DENSE_SV_VALUES = 1 << 24       # support-vector values held dense for scoring (64 MB of float32)


@dataclasses.dataclass
class KernelModel(Exportable):
    """f(x) = Σ_i α_i k(x, s_i) − b over support vectors s_i (SVM-light kernel model).

    Attributes
    ----------
    kernel : KernelParams
    alphas : ndarray of float64, shape (n_sv,)
        Coefficients α_i (alpha*y in SVM-light's words).
    support_vectors : scipy.sparse.csr_matrix, shape (n_sv, n_features)
        Column j is feature j + 1.
    bias, highest_feature_index, n_documents, metadata
        As for :class:`LinearModel`.
    """

    kind: ClassVar[str] = "kernel"
    kernel: KernelParams
    alphas: np.ndarray
    support_vectors: scipy.sparse.csr_matrix
    bias: float = 0.0
    highest_feature_index: int = 1
    n_documents: int = 0
    metadata: dict = dataclasses.field(default_factory=dict)

    @property
    def input_scale(self) -> np.ndarray | None:
        """σ per feature (highest_feature_index − 1 of them) that the documents are divided by
        before the kernel (a model trained with normalize="zscore": its ``scale=``), or None."""
        return scale_of(self.metadata, self.highest_feature_index)

    def predict(self, X: MatrixLike, qid: VectorLike | None = None, *,
                n_jobs: int | None = 1) -> np.ndarray:
        """Scores of the rows of X, Σ_i α_i k(x, s_i) − b.

        Values are rounded to float32 as SVM-light stores them; test features
        above the highest feature index are ignored, as svm_rank does.  A model
        trained with ``--normalize query`` or ``log`` normalises the rows first
        (query: each row's ``qid`` is needed), as rank_classify does.

        A model of svm_rank's (no rankfast metadata) is scored in SVM-light's own
        arithmetic, so that the scores have svm_rank_classify's bits
        (rankfast._kernels._kernel_scores: float32 products, on ``n_jobs`` threads, None or
        0 for every core).  A Nyström model of rankfast's is scored with float64
        products (BLAS): its coefficients are large and cancel, and float32
        products move its scores by up to ~1e-3 of their size where features are
        large (svm_rank_classify's scores of it differ from these by that much).
        """
        width = self.highest_feature_index
        X = with_width(_as_csr(normalized_input(self.metadata.get("normalize", "none"), X, qid,
                                                width, self.input_scale)), width)
        sv = with_width(self.support_vectors, width)
        if "algorithm" in self.metadata:
            return self._float64_products(_float32_rounded(X), _float32_rounded(sv))
        return self._svm_light_scores(_canonical(X), _canonical(sv), n_jobs)

    def _float64_products(self, X, sv):
        """Scores from float64 products of the float32 values, blocks of rows through BLAS."""
        width = self.highest_feature_index
        dense = sv.shape[0] * width <= DENSE_SV_VALUES
        if dense:
            sv = sv.toarray()
        block_rows = max(16, min(8192, DENSE_SV_VALUES // max(width if dense else 1,
                                                              sv.shape[0], 1)))
        out = np.empty(X.shape[0])
        for start in range(0, X.shape[0], block_rows):
            block = X[start:start + block_rows]
            block = block.toarray() if dense else block
            out[start:start + block_rows] = self.kernel(block, sv) @ self.alphas - self.bias
        return out

    def _svm_light_scores(self, X, sv, n_jobs):
        """Scores with svm_rank_classify's bits (rankfast._kernels._kernel_scores), X and sv canonical."""
        from ._kernels import _kernel_scores
        from ._kernels.threads import resolve_n_jobs
        values, indptr = X.data.astype(np.float32), X.indptr.astype(np.int64)
        x_norms = np.zeros(X.shape[0])
        if self.kernel.kernel == 2:
            _kernel_scores.row_norms(indptr, values, x_norms)
        sv_values, sv_indptr = sv.data.astype(np.float32), sv.indptr.astype(np.int64)
        sv_norms = np.zeros(sv.shape[0])
        _kernel_scores.row_norms(sv_indptr, sv_values, sv_norms)
        used = np.unique(sv.indices)                 # columns an SV stores: the others add 0
        position = np.minimum(np.searchsorted(used, X.indices), max(len(used) - 1, 0))
        shared = used[position] == X.indices if len(used) else np.zeros(X.nnz, dtype=bool)
        kept = np.r_[0, np.cumsum(shared)][indptr]
        rows = (kept, position[shared].astype(np.int32), values[shared], x_norms)
        k = self.kernel
        settings = (np.asarray(self.alphas, dtype=np.float64), int(k.kernel), float(k.degree),
                    float(k.gamma), float(k.coef_lin), float(k.coef_const), float(self.bias))
        out = np.empty(X.shape[0])
        threads = resolve_n_jobs(n_jobs, X.nnz * max(sv.shape[0], 1))
        if len(used) * sv.shape[0] <= DENSE_SV_VALUES:    # dense and transposed
            columns = np.zeros((len(used), sv.shape[0]), dtype=np.float32)
            columns[np.searchsorted(used, sv.indices),
                    np.repeat(np.arange(sv.shape[0]), np.diff(sv_indptr))] = sv_values
            _kernel_scores.scores_by_columns(*rows, columns, sv_norms, *settings, out, threads)
        else:
            _kernel_scores.scores_by_rows(*rows, sv_indptr,
                                          np.searchsorted(used, sv.indices).astype(np.int32),
                                          sv_values, len(used), sv_norms, *settings, out, threads)
        return out


@dataclasses.dataclass
class RFFModel(Exportable):
    """f(x) = √(2/m) Σ_i w_i cos(ω_iᵀx + b_i) − bias: a ranker on random Fourier features.

    Attributes
    ----------
    gamma : float
        γ of the RBF kernel the features approximate (for the record: Ω holds it).
    omega : ndarray, shape (m, highest_feature_index − 1)
        ω_i, one row per feature; column j weighs feature j + 1.
    offset : ndarray, shape (m,)
        b_i.
    weights : ndarray, shape (m,)
        w_i.
    bias : float
        Subtracted, as SVM-light's threshold b.
    highest_feature_index : int
        Training width + 1 (svm_rank's convention); test features at or above it are ignored.
    n_documents : int
        Training documents, as recorded in the file.
    metadata : dict
        rankfast's key=value notes (algorithm, options, seed, version).
    """

    kind: ClassVar[str] = "rff"
    gamma: float
    omega: np.ndarray
    offset: np.ndarray
    weights: np.ndarray
    bias: float = 0.0
    highest_feature_index: int = 1
    n_documents: int = 0
    metadata: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self.omega = np.asarray(self.omega, dtype=np.float64).reshape(len(self.offset), -1)
        self.offset = np.asarray(self.offset, dtype=np.float64)
        self.weights = np.asarray(self.weights, dtype=np.float64)
        if not len(self.offset) == len(self.weights) == self.omega.shape[0]:
            raise ValueError(f"omega has {self.omega.shape[0]} rows, offset {len(self.offset)} "
                             f"and weights {len(self.weights)} entries: they must agree")
        if self.omega.shape[1] != self.highest_feature_index - 1:
            raise ValueError(f"omega has {self.omega.shape[1]} columns; the highest feature "
                             f"index {self.highest_feature_index} needs one fewer")

    def predict(self, X: MatrixLike, qid: VectorLike | None = None, *,
                block_rows: int = 4096) -> np.ndarray:
        """Scores of the rows of X (float64), block_rows documents at a time.

        Normalised first as the model's metadata says (see KernelModel.predict).
        """
        width = self.omega.shape[1]
        X = with_width(normalized_input(self.metadata.get("normalize", "none"), X, qid, width),
                       width)
        dense = mostly_dense(X)
        out = np.empty(X.shape[0])
        features = np.empty((min(block_rows, X.shape[0]), len(self.offset)))
        for start in range(0, X.shape[0], block_rows):
            block = X[start:start + block_rows]
            phi = fourier_features(block.toarray() if dense else block, self.omega,
                                    self.offset, features[:block.shape[0]])
            out[start:start + block_rows] = phi @ self.weights - self.bias
        return out


def scale_text(scale: Vector, width: int) -> str:
    """A kernel model's ``scale=`` metadata: σ of features 1 .. width−1 in their shortest exact
    form, comma-separated (features beyond the training data's: 0, dropped)."""
    values = np.zeros(max(width - 1, 0))
    shared = min(len(values), len(scale))
    values[:shared] = np.asarray(scale, dtype=np.float64)[:shared]
    return ",".join(repr(float(v)) if v != int(v) else str(int(v)) for v in values)


def scale_of(metadata: dict, width: int) -> np.ndarray | None:
    """The σ per feature of a kernel model trained with normalize=zscore (its ``scale=``),
    width−1 of them, or None (no scale recorded).

    Raises
    ------
    ValueError
        ``scale=`` is not width−1 non-negative finite numbers.
    """
    text = metadata.get("scale")
    if text is None or metadata.get("normalize") != "zscore":
        return None
    try:
        scale = np.array([float(v) for v in str(text).split(",")] if text else [])
    except ValueError:
        raise ValueError(f"the model's scale= is not a list of numbers: {str(text)[:60]!r}") from None
    if len(scale) != width - 1 or not np.all(np.isfinite(scale)) or (scale < 0).any():
        raise ValueError(f"the model's scale= must hold {width - 1} non-negative numbers, one "
                         f"per feature (got {len(scale)})")
    return scale


def normalized_input(kind: str, X: MatrixLike, qid: VectorLike | None, width: int,
                     scale: Vector | None = None) -> MatrixLike:
    """X as a kernel or random Fourier model scores it: normalised when ``kind`` (its
    metadata's ``normalize``) is ``query`` or ``log``, or ``zscore`` with the ``scale`` (σ per
    feature) of a Nyström model (X itself otherwise: a linear or random Fourier model folds
    zscore into its numbers).

    The features from ``width`` on, which the model ignores, are dropped
    first: min-max works feature by feature, and a test file may name
    feature 2**31 - 1 (with a negative value, a query's columns would be
    made dense).

    Raises
    ------
    ValueError
        The model normalises each query's rows and qid is None, or qid does
        not hold one query id per row.
    """
    if kind not in ("query", "log") and not (kind == "zscore" and scale is not None):
        return X
    X = with_width(X, width)
    if kind == "query":
        qid = _normalized_query_ids(X.shape[0], qid)
    from .data.normalize import Normalizer
    normalizer = Normalizer(kind)
    if scale is not None:                          # zscore
        normalizer.scale = np.zeros(X.shape[1])
        shared = min(X.shape[1], len(scale))
        normalizer.scale[:shared] = np.asarray(scale)[:shared]
    return normalizer.transform(X, qid)


def _normalized_query_ids(n: int, qid: VectorLike | None) -> np.ndarray:
    """The query id of each of n rows scored by a model that normalises each query's rows.

    ValueError when qid is None or does not hold one id per row (query_ids).
    """
    if qid is None:
        raise ValueError("this model normalises each query's rows (normalize=query): pass qid")
    return query_ids(n, qid)


def fourier_features(X: ScipyMatrix, omega: DenseMatrix, offset: Vector, out: DenseMatrix) -> DenseMatrix:
    """out = √(2/m) cos(X Ωᵀ + b) for one block of rows, in place."""
    if issparse(X):
        out[...] = X @ omega.T
    else:
        np.matmul(X, omega.T, out=out)
    out += offset
    np.cos(out, out=out)
    out *= math.sqrt(2.0 / len(offset))
    return out


def file_weights(w: ArrayLike) -> np.ndarray:
    """Weights as a model file carries them: SVM-light reads each as a float (float32).

    A learner's model holds these, so it predicts exactly as its written file
    will.  A model read from a file keeps its weights as svm_rank_classify
    builds them (Σ_i α_i s_i in float64), which need not be float32.
    """
    return np.asarray(w, dtype=np.float64).astype(np.float32).astype(np.float64)


def _as_csr(X):
    """X as float64 CSR arrays (dense X through scipy)."""
    return as_csr(X).astype(np.float64, copy=False)


def _canonical(X):
    """A scipy CSR matrix with each row's indices increasing, each once (a copy if needed)."""
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _float32_rounded(X):
    X = X.copy()
    X.data = X.data.astype(np.float32).astype(np.float64)
    return X
