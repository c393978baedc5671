"""Ranking models and svm_rank's model file format (SVM-light V6.20), both ways.

The file, as svm_rank writes it::

    SVM-light Version V6.20
    0 # kernel type
    3 # kernel parameter -d
    1 # kernel parameter -g
    1 # kernel parameter -s
    1 # kernel parameter -r
    empty# kernel parameter -u
    6 # highest feature index
    8 # number of training documents
    2 # number of support vectors plus 1
    0 # threshold b, each following line is a SV (starting with alpha*y)
    1 1:1.521512 2:-0.057497051 ... #

svm_rank_classify reads only the leading value of each header line and the
SV lines before their '#'; rankfast writes its own metadata after the '#' of
the first SV line (``#rankfast key=value ...``), where that reader ignores it.
Random Fourier feature models have a format of their own (rankfast.kernels),
whose first line svm_rank's reader rejects as a version mismatch.

Scores follow svm_rank_classify's arithmetic so that predictions agree to
the last printed digit: weights and feature values are rounded to float32
(SVM-light stores them as ``float``), products are summed in float64 in the
order of the features on the line, and the threshold b is subtracted.
"""
import dataclasses

import numpy as np
import scipy.sparse as sp

from . import _predict, _svmlight
from .data import with_width
from .errors import InputError
from .files import atomic_output, open_binary

VERSION_LINE = "SVM-light Version V6.20"
RFF_VERSION_LINE = "rankfast RFF model V1"      # rankfast.kernels' random Fourier model files
KERNEL_NAMES = {0: "linear", 1: "polynomial", 2: "rbf", 3: "sigmoid", 4: "custom"}
_HEADER = (
    "{kernel} # kernel type\n"
    "{degree} # kernel parameter -d \n"
    "{gamma} # kernel parameter -g \n"
    "{coef_lin} # kernel parameter -s \n"
    "{coef_const} # kernel parameter -r \n"
    "{custom}# kernel parameter -u \n"
    "{highest} # highest feature index \n"
    "{documents} # number of training documents \n"
    "{sv_plus_one} # number of support vectors plus 1 \n"
    "{bias} # threshold b, each following line is a SV (starting with alpha*y)\n"
)


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

    def __call__(self, A, B):
        """Kernel matrix between the rows of A and B (dense arrays or CSR matrices).

        B holds the few rows (landmarks, support vectors).  When both are
        sparse, nothing proportional to their width is allocated (see
        _sparse_dot): a feature index of 2**31 - 1 costs what index 3 would.
        """
        if sp.issparse(A) and sp.issparse(B):
            dot = _sparse_dot(A, B)
        else:
            dot = A @ B.T
            dot = dot.toarray() if sp.issparse(dot) else np.asarray(dot)
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
    if sp.issparse(M):
        if not M.has_canonical_format:   # else multiply allocates a row as wide as M
            M = M.copy()
            M.sum_duplicates()
        return np.asarray(M.multiply(M).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", M, M)


@dataclasses.dataclass
class LinearModel:
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
    def from_dense(cls, w, bias=0.0, n_features=None, n_documents=0, metadata=None):
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

    def dense_weights(self, n_features):
        """Weights as a dense vector of length n_features (w[j] for feature j + 1)."""
        w = np.zeros(n_features)
        keep = self.feature_ids <= n_features
        w[self.feature_ids[keep] - 1] = self.weights[keep]
        return w

    def predict(self, X):
        """Scores of the rows of X, computed as svm_rank_classify does."""
        X = _as_csr(X)
        out = np.empty(X.shape[0])
        _predict.linear_scores(X.indptr, X.indices, X.data, self.feature_ids,
                               self.weights, self.bias, out)
        return out


@dataclasses.dataclass
class KernelModel:
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

    kernel: KernelParams
    alphas: np.ndarray
    support_vectors: sp.csr_matrix
    bias: float = 0.0
    highest_feature_index: int = 1
    n_documents: int = 0
    metadata: dict = dataclasses.field(default_factory=dict)

    def predict(self, X, block_rows=None):
        """Scores of the rows of X: SVM-light's kernel sum, in blocks of rows.

        Values are rounded to float32 as SVM-light stores them; test features
        above the highest feature index are ignored, as svm_rank does.  Blocks
        are made dense (BLAS) when the feature space is narrow enough; at
        most about 2**24 kernel or feature values are held at once.
        """
        X = _as_csr(X)
        width = self.highest_feature_index
        sv = _float32_rounded(with_width(self.support_vectors, width))
        X = _float32_rounded(with_width(X, width))
        dense = sv.shape[0] * width <= 1 << 24
        if dense:
            sv = sv.toarray()
        if block_rows is None:
            block_rows = max(16, min(8192, (1 << 24) // max(width if dense else 1, sv.shape[0], 1)))
        out = np.empty(X.shape[0])
        for start in range(0, X.shape[0], block_rows):
            block = X[start:start + block_rows]
            block = block.toarray() if dense else block
            out[start:start + block_rows] = self.kernel(block, sv) @ self.alphas - self.bias
        return out


def file_weights(w):
    """Weights as a model file carries them: SVM-light reads each as a float (float32).

    A learner's model holds these, so it predicts exactly as its written file
    will.  A model read from a file keeps its weights as svm_rank_classify
    builds them (Σ_i α_i s_i in float64), which need not be float32.
    """
    return np.asarray(w, dtype=np.float64).astype(np.float32).astype(np.float64)


def read_model(path):
    """Read an svm_rank / SVM-light model file.

    Parameters
    ----------
    path : str
        The model file ('-' reads standard input; compressed files are read transparently).

    Returns
    -------
    LinearModel, KernelModel or rankfast.kernels.RFFModel
        A linear file (kernel type 0) becomes a LinearModel whose weights are
        Σ_i α_i s_i, accumulated as svm_rank_classify does; a kernel file a
        KernelModel; rankfast's random Fourier feature file (written by
        ``rank_learn --approx rff``) an RFFModel.  Each has ``predict(X)``.

    Raises
    ------
    InputError
        Not a V6.20 model file, or a malformed line (file and line named).

    Examples
    --------
    >>> import os, tempfile
    >>> from rankfast import LinearModel, read_model, write_model
    >>> path = os.path.join(tempfile.mkdtemp(), "model.dat")
    >>> write_model(LinearModel.from_dense([0.5, 0.0, -2.0]), path)
    >>> model = read_model(path)
    >>> model.feature_ids, model.weights
    (array([1, 3]), array([ 0.5, -2. ]))
    >>> model.predict([[1.0, 5.0, 1.0]])
    array([-1.5])
    """
    with open_binary(path) as stream:
        try:
            raw = stream.read()
        except (OSError, EOFError, ValueError) as exc:
            raise InputError(path, None, f"cannot read: {exc}") from None
    first = raw.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    if first == RFF_VERSION_LINE:
        from .kernels import parse_rff_model      # the estimators (and scikit-learn) only then
        return parse_rff_model(raw.decode("utf-8", "replace"), path)
    if first != VERSION_LINE:
        raise InputError(path, 1, f"not an SVM-light V6.20 model file "
                                  f"(first line {first[:60]!r}, expected {VERSION_LINE!r})")
    header, body_start = _split_header(raw, path)
    kernel = KernelParams(
        kernel=_leading(header, 2, path, int, "kernel type"),
        degree=_leading(header, 3, path, int, "kernel parameter -d"),
        gamma=_leading(header, 4, path, float, "kernel parameter -g"),
        coef_lin=_leading(header, 5, path, float, "kernel parameter -s"),
        coef_const=_leading(header, 6, path, float, "kernel parameter -r"),
        custom=header[6].split("#", 1)[0],
    )
    if kernel.kernel not in KERNEL_NAMES:
        raise InputError(path, 2, f"unknown kernel type {kernel.kernel}")
    highest = _leading(header, 8, path, int, "highest feature index")
    documents = _leading(header, 9, path, int, "number of training documents")
    sv_plus_one = _leading(header, 10, path, int, "number of support vectors plus 1")
    bias = _leading(header, 11, path, float, "threshold b")
    if sv_plus_one < 1:
        raise InputError(path, 10, f"number of support vectors plus 1 is {sv_plus_one}")
    (alphas, _, lines, indptr, indices, values, comments,
     error, error_line, start, end) = _svmlight.parse_chunk(raw[body_start:], True)
    if error:
        token = raw[body_start + start:body_start + end].decode("utf-8", "replace")
        raise InputError(path, 12 + error_line, "support vector: " +
                         _svmlight_reason(error, token))
    if len(alphas) != sv_plus_one - 1:
        raise InputError(path, 12 + (lines[-1] + 1 if len(lines) else 0),
                         f"{len(alphas)} support vector lines, but the header "
                         f"(line 10) announces {sv_plus_one - 1}")
    if len(indices) and indices.max() + 1 > highest and kernel.kernel == 0:
        row = np.searchsorted(indptr, np.argmax(indices + 1 > highest), side="right") - 1
        raise InputError(path, 12 + int(lines[row]),
                         f"feature {int(indices.max()) + 1} is above the highest "
                         f"feature index {highest} (line 8)")
    metadata = {}
    if len(alphas):
        s, e = int(comments[0][0]), int(comments[1][0])
        if s >= 0:
            metadata = _parse_metadata(raw[body_start + s:body_start + e].decode("utf-8", "replace"))
    width = max(highest, int(indices.max()) + 1 if len(indices) else 0)
    sv = sp.csr_matrix((values.astype(np.float32).astype(np.float64), indices, indptr),
                       shape=(len(alphas), width))
    if kernel.kernel == 4:
        raise InputError(path, 2, "user-defined kernels (kernel type 4) cannot be evaluated")
    if kernel.kernel == 0:
        ids, w = _compact_linear(alphas, sv)
        return LinearModel(ids, w, bias, highest, documents, metadata)
    return KernelModel(kernel, alphas, sv, bias, highest, documents, metadata)


def write_model(model, path):
    """Write ``model`` in svm_rank's format, atomically (temporary file, then rename).

    Numbers are written in their shortest exact form, zero weights are left
    out, and ``model.metadata`` goes after the '#' of the first SV line.

    Parameters
    ----------
    model : LinearModel, KernelModel or rankfast.kernels.RFFModel
    path : str
        Where to write ('-' or a device such as /dev/stdout is written in place).

    Returns
    -------
    None

    Examples
    --------
    >>> import os, tempfile
    >>> from rankfast import LinearModel, write_model
    >>> path = os.path.join(tempfile.mkdtemp(), "model.dat")
    >>> write_model(LinearModel.from_dense([0.5, 0.0, -2.0]), path)
    >>> open(path).read().splitlines()[-1]
    '1 1:0.5 3:-2 #'
    """
    with atomic_output(path) as out:
        out.write(format_model(model))


def format_model(model):
    """The text of ``model``'s file."""
    from .kernels import RFFModel, format_rff_model
    if isinstance(model, RFFModel):
        return format_rff_model(model)
    if isinstance(model, LinearModel):
        kernel = KernelParams()
        pairs = " ".join(f"{int(i)}:{_num32(v)}" for i, v in
                         zip(model.feature_ids, model.weights))
        sv_lines = ["1 " + pairs + (" " if pairs else "") + "#" + _format_metadata(model.metadata)]
    else:
        kernel = model.kernel
        sv = sp.csr_matrix(model.support_vectors)
        sv_lines = []
        for i in range(sv.shape[0]):
            lo, hi = sv.indptr[i], sv.indptr[i + 1]
            pairs = " ".join(f"{int(j) + 1}:{_num32(v)}" for j, v in
                             zip(sv.indices[lo:hi], sv.data[lo:hi]))
            note = _format_metadata(model.metadata) if i == 0 else ""
            sv_lines.append(f"{_num(model.alphas[i])} {pairs} #{note}")
    text = VERSION_LINE + "\n" + _HEADER.format(
        kernel=kernel.kernel, degree=kernel.degree, gamma=_num(kernel.gamma),
        coef_lin=_num(kernel.coef_lin), coef_const=_num(kernel.coef_const),
        custom=kernel.custom, highest=model.highest_feature_index,
        documents=model.n_documents, sv_plus_one=len(sv_lines) + 1,
        bias=_num(model.bias))
    return text + "".join(line + "\n" for line in sv_lines)


def _split_header(raw, path):
    """The 11 header lines (text) and the byte offset where the SV lines start."""
    header, pos = [], 0
    for number in range(1, 12):
        end = raw.find(b"\n", pos)
        if end < 0:
            if pos < len(raw) and number == 11:
                end = len(raw)
            else:
                raise InputError(path, number, "model file ends inside its header "
                                               "(11 header lines expected)")
        header.append(raw[pos:end].decode("utf-8", "replace"))
        pos = end + 1
    return header, min(pos, len(raw))


def _leading(header, number, path, kind, what):
    text = header[number - 1].split("#", 1)[0].split()
    try:
        value = kind(text[0])
    except (IndexError, ValueError):
        raise InputError(path, number, f"{what}: expected a number, found "
                                       f"{header[number - 1].strip()[:60]!r}") from None
    if kind is float and not np.isfinite(value):
        raise InputError(path, number, f"{what} is not finite")
    return value


def _svmlight_reason(error, token):
    from .data import _REASONS
    return _REASONS[error].format(token=token).replace("target", "alpha")


def _compact_linear(alphas, sv):
    """Σ_i α_i s_i as (feature ids, weights), accumulated in SV order in float64."""
    coo = sv.tocoo()
    order = np.lexsort((coo.row, coo.col))
    cols, rows, vals = coo.col[order], coo.row[order], coo.data[order]
    ids = np.unique(cols)
    weights = np.zeros(len(ids))
    np.add.at(weights, np.searchsorted(ids, cols), alphas[rows] * vals)
    return ids.astype(np.int64) + 1, weights


def _format_metadata(metadata):
    if not metadata:
        return ""
    return "rankfast " + " ".join(f"{k}={str(v).replace(' ', '_')}" for k, v in metadata.items())


def _parse_metadata(comment):
    words = comment.split()
    if not words or words[0] != "rankfast":
        return {}
    return dict(word.split("=", 1) for word in words[1:] if "=" in word)


def _num(v):
    text = repr(float(v))
    if text in ("nan", "inf", "-inf"):
        raise ValueError(f"cannot write {text} in a model file")
    return text[:-2] if text.endswith(".0") else text


def _num32(v):
    """Shortest text that an SVM-light reader (strtod, then float) turns into float32(v)."""
    single = np.float32(v)
    if not np.isfinite(single):
        raise ValueError(f"cannot write {v} in a model file")
    short = str(single)
    if np.float32(float(short)) != single:      # double rounding: write the exact double
        short = repr(float(single))
    return short[:-2] if short.endswith(".0") else short


def _as_csr(X):
    X = sp.csr_matrix(X)
    if X.indices.dtype != X.indptr.dtype:
        X.indices = X.indices.astype(X.indptr.dtype)
    return X


def _float32_rounded(X):
    X = X.copy()
    X.data = X.data.astype(np.float32).astype(np.float64)
    return X
