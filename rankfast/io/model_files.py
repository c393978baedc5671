"""svm_rank's model files (SVM-light V6.20), and rankfast's random-feature models, both ways.

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
Random Fourier feature models (RFFModel) have a format of their own
(format_rff_model), whose first line svm_rank's reader rejects as a version
mismatch.  Every number is read with the data files' strict C-locale grammar
and written as svm_rank writes it (float32 values at %.8g); files are written
to a temporary name and renamed, so a model file is never half-written.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._kernels import _svmlight
from ..errors import InputError
from ..models import KernelModel, KernelParams, LinearModel, RFFModel, scale_of
from ._model_text import (
    NAMED_NORMALIZATIONS,
    RFF_NORMALIZED_VERSION_LINE,
    RFF_VERSION_LINE,
    RFF_VERSION_LINES,
    VERSION_LINE,
    _highest,
    _leading,
    _parse_metadata,
    _shown,
    check_header_normalize,
    header_normalization,
    read_model_file,
    single_vector_weights,
)
from ._stream import quoted
from .files import atomic_output

if TYPE_CHECKING:
    from typing import Any



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


def read_model(path: str) -> LinearModel | KernelModel | RFFModel:
    """Read an svm_rank / SVM-light model file.

    Parameters
    ----------
    path : str
        The model file ('-' reads standard input; compressed files are read transparently).

    Returns
    -------
    LinearModel, KernelModel or RFFModel
        A linear file (kernel type 0) becomes a LinearModel whose weights are
        Σ_i α_i s_i, accumulated as svm_rank_classify does; a kernel file a
        KernelModel; rankfast's random Fourier feature file (written by
        ``rank_learn --approx rff``) an RFFModel.  Each has ``predict(X)``.

    Raises
    ------
    InputError
        Not a V6.20 model file, unreadable or corrupt (compressed) data, a
        malformed line, or metadata that contradicts itself (a key given twice
        with different values; a header that names another normalisation than
        the metadata: see rankfast.io._model_text.read_model_file), file and
        line named.

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
    return model_of(read_model_file(path))


def model_of(file: Any) -> LinearModel | KernelModel | RFFModel:
    """The model object of a read model file (see modelfile.read_model_file)."""
    if file.rff is not None:
        return parse_rff_model(file.rff, file.path)
    alphas = np.asarray(file.alphas)
    indptr, indices = np.asarray(file.indptr), np.asarray(file.indices)
    values = np.asarray(file.values).astype(np.float32).astype(np.float64)  # SVM-light's floats
    if file.kernel == 0:
        ids, w = _compact_linear(alphas, indptr, indices, values)
        return LinearModel(ids, w, file.bias, file.highest, file.documents, file.metadata)
    import scipy.sparse as sp
    kernel = KernelParams(file.kernel, file.degree, file.gamma, file.coef_lin,
                          file.coef_const, file.custom)
    sv = sp.csr_matrix((values, indices, indptr), shape=(len(alphas), file.highest))
    try:                              # a Nyström zscore's scale=, one per feature, checked now
        scale_of(file.metadata, file.highest)
    except ValueError as exc:
        raise InputError(file.path, 12 if len(alphas) else None, str(exc)) from None
    return KernelModel(kernel, alphas, sv, file.bias, file.highest, file.documents,
                       file.metadata)


def write_model(model: Any, path: str) -> None:
    """Write ``model`` in svm_rank's format, atomically (temporary file, then rename).

    Numbers are written in their shortest exact form, zero weights are left
    out, and ``model.metadata`` goes after the '#' of the first SV line.

    Parameters
    ----------
    model : LinearModel, KernelModel or RFFModel
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


def format_model(model: Any) -> str:
    """The text of ``model``'s file."""
    if isinstance(model, LinearModel):
        kernel = KernelParams()
        pairs = _pairs(model.feature_ids, model.weights)
        sv_lines = ["1 " + pairs + (" " if pairs else "") + "#" + _format_metadata(model.metadata)]
    elif isinstance(model, KernelModel):
        import scipy.sparse as sp
        kernel = model.kernel
        sv = sp.csr_matrix(model.support_vectors)
        sv_lines = []
        for i in range(sv.shape[0]):
            lo, hi = sv.indptr[i], sv.indptr[i + 1]
            pairs = _pairs(sv.indices[lo:hi].astype(np.int64) + 1, sv.data[lo:hi])
            note = _format_metadata(model.metadata) if i == 0 else ""
            sv_lines.append(f"{_num(model.alphas[i])} {pairs} #{note}")
    else:
        return format_rff_model(model)
    header = _HEADER
    named = header_normalization(model.metadata)
    if named is not None:
        # svm_rank reads the number and skips the rest of the line: a note for its users.
        header = header.replace("{kernel} # kernel type\n",
                                "{kernel} # kernel type; rankfast normalize=" + named +
                                ": only rank_classify applies this model, not svm_rank_classify\n")
    text = VERSION_LINE + "\n" + header.format(
        kernel=kernel.kernel, degree=kernel.degree, gamma=_num(kernel.gamma),
        coef_lin=_num(kernel.coef_lin), coef_const=_num(kernel.coef_const),
        custom=kernel.custom, highest=model.highest_feature_index,
        documents=model.n_documents, sv_plus_one=len(sv_lines) + 1,
        bias=_num(model.bias))
    return text + "".join(line + "\n" for line in sv_lines)


def _pairs(ids, values, chunk=1 << 16):
    """'id:v id:v ...', each v as _num32 writes it, formatted in compiled code."""
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        bad = np.flatnonzero(~np.isfinite(values.astype(np.float32)))
    if len(bad):
        _num32(values[bad[0]])                       # raises, naming the value
    return " ".join(_svmlight.format_pairs(ids[i:i + chunk], values[i:i + chunk], _num32)
                    for i in range(0, len(ids), chunk))


_RFF_HEADER = (
    "2 # kernel type\n"
    "{gamma} # kernel parameter -g\n"
    "{highest} # highest feature index\n"
    "{documents} # number of training documents\n"
    "{components} # number of random features m\n"
    "{bias} # threshold b, each following line is a random feature: w_i b_i omega_i1 ... "
    "omega_id #\n"
)
_RFF_HEADER_LINES = 7          # the version line and the six above


def format_rff_model(model: Any) -> str:
    """The text of an RFFModel's file (``rankfast RFF model V1``; ``V2``, the same layout,
    for a model that normalises its input, which a reader of V1 alone must refuse).

    Layout: the version line; kernel type (2), γ, highest feature index
    (d + 1), training documents, m and the threshold, one per line with a
    '# name' comment as in SVM-light's header; then m lines
    ``w_i b_i ω_i1 … ω_id #``, the first of which carries rankfast's
    metadata after its '#'.  Every number is written in its shortest exact
    form (``repr``), so reading gives back the same float64 values.
    """
    normalized = model.metadata.get("normalize") in NAMED_NORMALIZATIONS
    version = RFF_NORMALIZED_VERSION_LINE if normalized else RFF_VERSION_LINE
    lines = [version + "\n" + _RFF_HEADER.format(
        gamma=_num(model.gamma), highest=int(model.highest_feature_index),
        documents=int(model.n_documents), components=len(model.offset), bias=_num(model.bias))]
    for i in range(len(model.offset)):
        numbers = " ".join(map(_num, (model.weights[i], model.offset[i], *model.omega[i])))
        note = _format_metadata(model.metadata) if i == 0 else ""
        lines.append(f"{numbers} #{note}\n")
    return "".join(lines)


def parse_rff_model(raw: Any, path: str) -> RFFModel:
    """An RFFModel from the content (bytes or text) of its file (see format_rff_model).

    Raises
    ------
    InputError
        Wrong version line, a number that is malformed (the data files'
        grammar) or not finite, a feature line with the wrong count of
        numbers, a metadata key given twice with different values (the same
        value twice is taken once), or a version line that does not match
        the metadata's normalisation (V2 is query or log's); file and 1-based
        line named.  Nothing is allocated before a line's count of numbers has
        been checked against the header.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else raw
    lines = text.split("\n")
    if lines[0].strip() not in RFF_VERSION_LINES:
        first = raw.split(b"\n", 1)[0] if isinstance(raw, (bytes, bytearray)) else lines[0].encode()
        raise InputError(path, 1, f"not a rankfast RFF model file (first line "
                                  f"{quoted(first.strip())}, expected {RFF_VERSION_LINE!r})")
    if len(lines) < _RFF_HEADER_LINES:
        raise InputError(path, len(lines), f"model file ends inside its header "
                                           f"({_RFF_HEADER_LINES} header lines expected)")
    if _leading(lines, 2, path, int, "kernel type") != 2:
        raise InputError(path, 2, "kernel type must be 2 (RBF) in an RFF model")
    gamma = _leading(lines, 3, path, float, "kernel parameter -g")
    highest = _highest(lines, 4, path)
    documents = _leading(lines, 5, path, int, "number of training documents")
    m = _leading(lines, 6, path, int, "number of random features")
    bias = _leading(lines, 7, path, float, "threshold b")
    if m < 0:
        raise InputError(path, 6, f"number of random features is {m}")
    body = lines[_RFF_HEADER_LINES:]
    if body and body[-1] == "":
        body = body[:-1]
    if len(body) != m:
        raise InputError(path, _RFF_HEADER_LINES + len(body),
                         f"{len(body)} random feature lines, but the header (line 6) "
                         f"announces {m}")
    rows = []
    metadata = {}
    for i, line in enumerate(body):
        number = _RFF_HEADER_LINES + 1 + i
        values, hash_, note = line.partition("#")
        if not hash_:
            raise InputError(path, number, "random feature line does not end with '#'")
        words = values.split()
        if len(words) != highest + 1:
            raise InputError(path, number, f"{len(words)} numbers, expected {highest + 1} "
                                           f"(w_i, b_i and {highest - 1} omega values)")
        row = [_svmlight.number_of(word.encode("utf-8", "replace")) for word in words]
        if None in row:
            bad = words[row.index(None)]
            raise InputError(path, number, f"not a number: {_shown(bad)!r}")
        rows.append(row)
        if i == 0:
            metadata = _parse_metadata(note, path, number)
    check_header_normalize(path, lines[0].strip() == RFF_NORMALIZED_VERSION_LINE, metadata,
                           _RFF_HEADER_LINES + 1 if body else 1)
    table = np.array(rows, dtype=np.float64).reshape(m, highest + 1)
    if not np.isfinite(table).all():
        bad = int(np.flatnonzero(~np.isfinite(table).all(axis=1))[0])
        raise InputError(path, _RFF_HEADER_LINES + 1 + bad, "number is not finite")
    return RFFModel(gamma, table[:, 2:], table[:, 1], table[:, 0], bias, highest, documents,
                    metadata)


def _compact_linear(alphas, indptr, indices, values):
    """Σ_i α_i s_i as (feature ids, weights), accumulated in SV order in float64.

    O(nnz) for svm_rank's single compacted support vector (its indices
    increase); several support vectors are sorted by feature first.
    """
    if len(alphas) == 1:
        ids, weights = single_vector_weights(alphas[0], indices, values)
        return np.asarray(ids), np.asarray(weights)
    rows = np.repeat(np.arange(len(alphas)), np.diff(indptr))
    order = np.lexsort((rows, indices))
    cols, rows, vals = indices[order], rows[order], values[order]
    ids = np.unique(cols)
    weights = np.zeros(len(ids))
    np.add.at(weights, np.searchsorted(ids, cols), alphas[rows] * vals)
    return ids.astype(np.int64) + 1, weights


def _format_metadata(metadata):
    if not metadata:
        return ""
    return "rankfast " + " ".join(f"{k}={str(v).replace(' ', '_')}" for k, v in metadata.items())


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
