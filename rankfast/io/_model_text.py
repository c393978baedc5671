"""svm_rank's model files (SVM-light V6.20) read into plain arrays, without numpy.

The one reader of model files: rankfast.models turns what it returns into
LinearModel, KernelModel or RFFModel objects; rank_classify scores a linear
model's weights straight from it.  Every number is read with the data
files' strict grammar (rankfast._kernels._svmlight).
"""
from __future__ import annotations

import array
import math

from .._kernels import _predict, _svmlight
from ..errors import InputError
from ._stream import BOM, SHOWN_CHARS, Rows, quoted, read_errors, reason
from .files import open_binary

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    import numpy as np

VERSION_LINE = "SVM-light Version V6.20"
RFF_VERSION_LINE = "rankfast RFF model V1"
# The same layout for a model that normalises its input (normalize=query or log in its
# metadata): a reader of V1 alone refuses it instead of scoring raw features.
RFF_NORMALIZED_VERSION_LINE = "rankfast RFF model V2"
RFF_VERSION_LINES = (RFF_VERSION_LINE, RFF_NORMALIZED_VERSION_LINE)
# The normalisations a model file names in its header too (line 2; an RFF model's V2).
NAMED_NORMALIZATIONS = ("query", "log")
KERNEL_NAMES = {0: "linear", 1: "polynomial", 2: "rbf", 3: "sigmoid", 4: "custom"}
MAX_HIGHEST = 2**31          # data files' indices go up to 2**31 - 1; the header holds max + 1



class ModelFile:
    """The numbers of an SVM-light model file (or the raw text of an RFF model in ``rff``).

    Header: kernel, degree, gamma, coef_lin, coef_const, custom (the kernel
    settings, as rankfast.models.KernelParams), highest, documents, bias.
    ``alphas`` (one per support vector), ``indptr``, ``indices`` (0-based
    columns) and ``values`` (as written, not yet rounded to float32) are
    array.array objects in CSR layout; ``metadata`` rankfast's key=value notes.
    """

    def __init__(self, path: str, rff: Any = None, **header: Any) -> None:
        self.path, self.rff = path, rff
        self.kernel, self.degree, self.gamma, self.coef_lin, self.coef_const = 0, 3, 1.0, 1.0, 1.0
        self.custom, self.highest, self.documents, self.bias = "empty", 1, 0, 0.0
        self.alphas = self.indptr = self.indices = self.values = None
        self.metadata: dict = {}
        for name, value in header.items():
            setattr(self, name, value)


def read_model_file(path: str) -> Any:
    """Read a model file's header and support vectors (see ModelFile).

    rankfast's metadata is read from the comment of the first SV line (the
    trailer, ``#rankfast key=value ...``); a model that normalises its input
    also names its normalisation in the header, on line 2 (``# kernel type;
    rankfast normalize=query: ...``), for svm_rank's users.  The two must
    agree, and a key given twice in either must have one value: a key
    repeated with the same value is taken once (the file still has one
    meaning), with another value it is refused.

    Raises
    ------
    InputError
        Not a V6.20 model file, unreadable or corrupt (compressed) data, a
        malformed line, a metadata key given twice with different values, or
        a header whose normalisation is not the metadata's (file and line named).
    """
    raw = read_bytes(path)
    first_bytes = raw.split(b"\n", 1)[0].strip()
    first = first_bytes.decode("utf-8", "replace")
    if first in RFF_VERSION_LINES:
        _check_last_newline(raw, path)
        return ModelFile(path, rff=raw)
    if first != VERSION_LINE:
        raise InputError(path, 1, f"not an SVM-light V6.20 model file "
                                  f"(first line {quoted(first_bytes)}, expected {VERSION_LINE!r})")
    header, body_start = _split_header(raw, path)
    file = ModelFile(
        path,
        kernel=_leading(header, 2, path, int, "kernel type"),
        degree=_leading(header, 3, path, int, "kernel parameter -d"),
        gamma=_leading(header, 4, path, float, "kernel parameter -g"),
        coef_lin=_leading(header, 5, path, float, "kernel parameter -s"),
        coef_const=_leading(header, 6, path, float, "kernel parameter -r"),
        custom=header[6].split("#", 1)[0],
    )
    if file.kernel not in KERNEL_NAMES:
        raise InputError(path, 2, f"unknown kernel type {file.kernel}")
    file.highest = _highest(header, 8, path)
    file.documents = _leading(header, 9, path, int, "number of training documents")
    sv_plus_one = _leading(header, 10, path, int, "number of support vectors plus 1")
    file.bias = _leading(header, 11, path, float, "threshold b")
    if sv_plus_one < 1:
        raise InputError(path, 10, f"number of support vectors plus 1 is {sv_plus_one}")
    body = memoryview(raw)[body_start:]
    newlines, colons = _svmlight.count_bytes_of(body)
    sv = Rows(newlines + 1, colons, comments=True)
    alphas, lines, indptr, indices, values = sv.y, sv.line, sv.indptr, sv.indices, sv.values
    starts, ends = sv.comment_start, sv.comment_end
    n, nnz, error, error_line, start, end, _, _ = _svmlight.parse_into(
        body, 0, 0, alphas, sv.qid, lines, indptr, indices, values, starts, ends)
    if error:
        token = body[start:end]
        raise InputError(path, 12 + error_line, "support vector: " + reason(error, token, "alpha"))
    if n != sv_plus_one - 1:
        raise InputError(path, 12 + (lines[n - 1] + 1 if n else 0),
                         f"{n} support vector lines, but the header "
                         f"(line 10) announces {sv_plus_one - 1}")
    del alphas[n:], indptr[n + 1:], indices[nnz:], values[nnz:]
    if n and -1 in starts[:n]:
        row = starts[:n].index(-1)
        raise InputError(path, 12 + lines[row], "support vector line does not end with '#': "
                                                "the file is cut short or damaged")
    _check_last_newline(raw, path)
    above = _predict.first_at_least(indices, file.highest)
    if above >= 0:
        import bisect  # here: only a faulty model needs it
        row = bisect.bisect_right(indptr, above) - 1
        raise InputError(path, 12 + lines[row],
                         f"feature {indices[above] + 1} is above the highest "
                         f"feature index {file.highest} (line 8)")
    metadata_line = 12 + lines[0] if n else 2
    if n and starts[0] >= 0:
        file.metadata = _parse_metadata(bytes(body[starts[0]:ends[0]]).decode("utf-8", "replace"),
                                        path, metadata_line)
    check_header_normalize(path, _header_normalize(header[1], path), file.metadata,
                           metadata_line)
    if file.kernel == 4:
        raise InputError(path, 2, "user-defined kernels (kernel type 4) cannot be evaluated")
    file.alphas, file.indptr, file.indices, file.values = alphas, indptr, indices, values
    return file


def single_vector_weights(alpha: float, indices: array.array | np.ndarray,
                          values: array.array | np.ndarray) -> tuple[array.array, array.array]:
    """(feature ids, weights) of a linear model with one support vector: α·float32(v)
    for each entry (SVM-light stores floats), zero weights left out; array.arrays."""
    ids = array.array("q", bytes(8 * len(indices)))
    weights = array.array("d", bytes(8 * len(indices)))
    n = _predict.single_vector_weights(alpha, indices, values, ids, weights)
    del ids[n:], weights[n:]
    return ids, weights


def read_bytes(path: str) -> Any:
    """The whole (decompressed) content of a model file, without a UTF-8 byte order mark."""
    with open_binary(path) as stream:
        try:
            raw = stream.read()
        except read_errors() as exc:
            raise InputError(path, None, f"cannot read: {exc}") from None
    return raw[len(BOM):] if raw.startswith(BOM) else raw


def _check_last_newline(raw, path):
    """A model file ends with a line end: without one, its last line may be cut short."""
    if raw and not raw.endswith(b"\n"):
        raise InputError(path, raw.count(b"\n") + 1, "the last line does not end with a "
                                                     "newline: the file is cut short")


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
    """The number leading header line ``number`` (1-based), read with the data grammar."""
    return _number(header[number - 1], number, path, kind, what)


def _number(line, number, path, kind, what):
    words = line.split("#", 1)[0].split()
    token = words[0].encode("utf-8", "replace") if words else b""
    value = (_svmlight.integer_of if kind is int else _svmlight.number_of)(token)
    if value is None:
        expected = ("an integer in -9223372036854775807 .. 9223372036854775807"
                    if kind is int else "a number")
        raise InputError(path, number, f"{what}: expected {expected}, found "
                                       f"{_shown(line.strip())!r}")
    if kind is float and not math.isfinite(value):
        raise InputError(path, number, f"{what} is not finite")
    return value


def _highest(header, number, path):
    """The highest feature index: 1 .. 2**31 (max + 1 of indices up to 2**31 - 1)."""
    highest = _leading(header, number, path, int, "highest feature index")
    if not 1 <= highest <= MAX_HIGHEST:
        raise InputError(path, number, f"highest feature index {highest} is outside "
                                       f"1 .. {MAX_HIGHEST}")
    return highest


def _shown(text):
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + f"... ({len(text)} characters)"


def _parse_metadata(comment, path, line):
    """rankfast's key=value words of a comment that starts with 'rankfast' ({} otherwise), the
    comment's on ``line`` of ``path``: see _notes for a key given twice."""
    words = comment.split()
    if not words or words[0] != "rankfast":
        return {}
    return _notes(words[1:], path, line)


def _header_normalize(line, path):
    """The normalisation header line 2 names in its comment (``rankfast normalize=query: ...``,
    written for a model that normalises its input), or None."""
    words = line.partition("#")[2].split()
    if "rankfast" not in words:
        return None
    notes = _notes([word.rstrip(":;,") for word in words[words.index("rankfast") + 1:]], path, 2)
    return notes.get("normalize")


def _notes(words, path, line):
    """{key: value} of the words holding '='; InputError at ``line`` for a key given twice with
    different values (twice with the same value, it is taken once)."""
    notes = {}
    for key, value in (word.split("=", 1) for word in words if "=" in word):
        if notes.setdefault(key, value) != value:
            raise InputError(path, line, f"metadata key {key!r} is given twice, as "
                                         f"{key}={notes[key]} and {key}={value}")
    return notes


def header_normalization(metadata: dict) -> Any:
    """The normalisation a model file names in its header for svm_rank's users, who cannot
    apply it (None for none): query and log (NAMED_NORMALIZATIONS), and a Nyström model's
    zscore, whose metadata holds the ``scale=`` it applies (linear and RFF models fold it)."""
    applied = metadata.get("normalize")
    if applied in NAMED_NORMALIZATIONS:
        return applied
    return "zscore" if "scale" in metadata else None


def check_header_normalize(path, named, metadata, line):
    """InputError at ``line`` (the metadata's) unless the header's normalisation is the metadata's.

    ``named``: what the header names (line 2's note of an SVM-light file; for an
    RFF file True or False, whether its version line is V2), None for nothing.
    rankfast names what header_normalization says in the header, which svm_rank
    cannot apply; a header that names one must have it in the metadata, and
    metadata that asks for one must have a header naming it.
    """
    applied = metadata.get("normalize")
    if isinstance(named, bool):                     # an RFF model's version line
        if named == (applied in NAMED_NORMALIZATIONS):
            return
        header = (f"the version line (line 1) is {RFF_NORMALIZED_VERSION_LINE!r}, for a model "
                  f"that normalises its input" if named else
                  f"the version line (line 1) is {RFF_VERSION_LINE!r}, for a model that does not "
                  f"normalise its input")
    elif named == applied or (named is None and header_normalization(metadata) is None):
        return
    else:
        header = ("the header names no normalisation (line 2)" if named is None else
                  f"the header names normalize={named} (line 2)")
    said = "no normalize" if applied is None else f"normalize={applied}"
    raise InputError(path, line, f"{header}, but the model's metadata says {said}: "
                                 f"the file was edited or damaged")


