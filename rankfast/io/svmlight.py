"""Reading and writing SVMlight / svm_rank data files.

A line is ``<target> [qid:N] [sid:N] [cost:F] idx:val ... [# comment]``.
Feature ``idx`` (1 .. 2**31 - 1) becomes column ``idx - 1`` of a CSR matrix.
Compared with svm_rank the reader is

* as permissive where svm_rank accepts a line (tabs, CRLF, leading blanks,
  hexadecimal and scientific numbers, ``sid:``/``cost:`` tokens, a qid after
  the features, a missing qid meaning qid 0);
* more forgiving where svm_rank stops for no good reason (blank and
  whitespace-only lines, indented comment lines, a last line without newline,
  queries whose lines are not contiguous, which ``Dataset.grouped`` gathers);
* stricter where svm_rank silently computes nonsense (non-numeric targets,
  nan and inf, index 0 or negative, decreasing or repeated indices, ``1:``,
  ``1:abc``, ``1 : 2``, negative or fractional qids): each raises
  :class:`~rankfast.errors.InputError` naming file, line and token.
"""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from .._kernels import _svmlight
from .._kernels.threads import resolve_n_jobs
from ..data.queries import group_rows, noncontiguous_qid, query_starts
from ..data.sparse import CSR, as_csr
from ..data.validation import TrainingData, check_features
from ._stream import _blocks, plain_size
from ._threaded import MIN_BLOCK_BYTES, MIN_BLOCKS_PER_THREAD, _Arrays, _read_in_threads
from .files import open_binary

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    import scipy.sparse as sp
    from numpy.typing import DTypeLike

    from .._typing import MatrixLike, VectorLike

# Read at a time by one thread: small enough to stay in the caches between the read and
# the parse (benchmarks/README.md, "Block sizes").
CHUNK_BYTES = 2 << 20

@dataclasses.dataclass
class Dataset:
    """Documents of an SVMlight file.

    Attributes
    ----------
    features : rankfast.data.sparse.CSR, shape (n_documents, n_features)
        Feature values; column j holds feature index j + 1.  A scipy sparse
        matrix or an array given here is converted (sharing a CSR matrix's
        arrays); the estimators take this form as they take scipy's.
    X : scipy.sparse.csr_matrix (property)
        The same values as a scipy matrix, sharing the arrays (scipy is
        imported on first use only: training from a file needs none of it).
    y : ndarray of float64, shape (n_documents,)
        Targets (relevance labels; any real numbers).
    qid : ndarray of int64, shape (n_documents,)
        Query ids (0 where a line has none).
    line : ndarray of int64, shape (n_documents,)
        1-based physical line of each document in its file.
    comments : list of str or None
        Text after '#' of each line ('' where none), if requested.
    path : str
        Where the documents came from.
    cost : ndarray of float64, shape (n_documents,), or None
        Each line's ``cost:`` value (NaN where a line has none), if requested:
        svm_proprank's propensity weight of a click (rankfast.clicks).
    """

    features: CSR
    y: np.ndarray
    qid: np.ndarray
    line: np.ndarray
    comments: list | None = None
    path: str = ""
    cost: np.ndarray | None = None

    def __post_init__(self):
        if not isinstance(self.features, CSR):
            self.features = as_csr(self.features)

    @property
    def X(self) -> sp.csr_matrix:
        return self.features.to_scipy()

    @property
    def n_documents(self) -> int:
        return self.features.shape[0]

    @property
    def n_features(self) -> int:
        return self.features.shape[1]

    def query_starts(self) -> np.ndarray:
        """Start offsets of each run of equal qid, with n_documents appended."""
        return query_starts(self.qid)

    def noncontiguous_qid(self) -> Any:
        """The first qid (in file order) whose lines are split in several runs, or None."""
        return noncontiguous_qid(self.qid)

    def grouped(self) -> tuple[Dataset, np.ndarray | None]:
        """This dataset with each query's lines made contiguous.

        Queries keep the order of their first line, documents their order
        within the query.  Returns ``(dataset, permutation)``; the
        permutation is None when the lines already were grouped.
        """
        perm, _ = group_rows(self.qid)
        return (self, None) if perm is None else (self.subset(perm), perm)

    def training_data(self, sparse_float32: bool = False) -> TrainingData:
        """These documents as an estimator's checked input, without a second pass over them.

        The reader refused NaN and infinite values at their line, so the
        features are not scanned again; float32 values are widened to float64
        unless ``sparse_float32`` (learners whose products widen them).
        """
        X, _ = check_features(self.features, sparse_float32=sparse_float32, known_finite=True)
        return TrainingData(X, self.y, self.qid)

    def subset(self, rows: VectorLike) -> Dataset:
        """The documents at ``rows`` (an index array), in that order."""
        rows = np.asarray(rows)
        return Dataset(self.features[rows], self.y[rows], self.qid[rows], self.line[rows],
                       None if self.comments is None else [self.comments[i] for i in rows],
                       self.path, None if self.cost is None else self.cost[rows])


def load_svmlight(path: str, comments: bool = False, n_features: int | None = None,
                  chunk_bytes: int = CHUNK_BYTES, progress: Any = None,
                  n_jobs: int | None = None, dtype: DTypeLike = np.float64,
                  costs: bool = False) -> Dataset:
    """Read an SVMlight / svm_rank file.

    Parameters
    ----------
    path : str
        File name; '-' reads standard input; gzip, bzip2 and xz files are
        decompressed transparently.  A UTF-8 byte order mark is skipped.
    comments : bool
        Also return the text after '#' of every document line.
    costs : bool
        Also return every line's ``cost:`` (``Dataset.cost``; svm_rank reads and
        ignores it, svm_proprank weighs a click by it).
    n_features : int, optional
        Make X at least this wide (columns beyond the file's highest index).
    chunk_bytes : int
        Bytes parsed at a time.  A file is read once, plain or compressed:
        the arrays are sized from the first block and grow as later blocks
        need (realloc, which moves pages rather than copying them), ending
        fitted to the documents (peak memory: the result plus one chunk).
    progress : callable, optional
        Called as ``progress(bytes_read)`` after each block is read (bytes
        of decompressed data, increasing), one call at a time, from the
        thread reading the block (on threads, a plain file's blocks are read
        by the parsing threads); the library prints nothing.
    n_jobs : int or None
        Threads parsing (None or 0: every core this process may run on; see
        rankfast._kernels.threads; a file of known size gets no more threads than it
        holds MIN_BLOCKS_PER_THREAD blocks for each, below which a thread
        costs more than it saves).  Above 1, the file is read in blocks of
        chunk_bytes / threads (MIN_BLOCK_BYTES, 2 MB, at least), whose lines
        and colons, counted as each is read, place it in the arrays; the
        threads parse the blocks straight into their place.  A plain file's
        blocks are read by the threads that parse them, in turn (peak memory:
        the result plus a block a thread and one); anything else is read (and
        decompressed) by this thread while the pool parses (the result plus
        two blocks a thread and one).  The file is still read once: the same
        Dataset and the same first error (in file order) as one thread, for
        plain files, compressed ones and standard input alike.
        With ``comments=True`` one thread parses.
    dtype : numpy.float64 or numpy.float32
        How feature values are stored.  float32 is svm_rank's choice (it
        reads each value as a double and stores it as a float; rank_learn
        does the same): 8 bytes a value with its index instead of 12, and a
        value beyond float32's range is an InputError naming its line.

    Returns
    -------
    Dataset
        Possibly with no documents (an empty file, or one with only comments).

    Raises
    ------
    InputError
        The file cannot be opened or read (also: corrupt compressed data), or
        a line is malformed (file, line, token).

    Examples
    --------
    >>> import os, tempfile
    >>> from rankfast import load_svmlight
    >>> path = os.path.join(tempfile.mkdtemp(), "train.dat")
    >>> with open(path, "w") as f:
    ...     _ = f.write("2 qid:1 1:0.5 3:1 # doc a\\n0 qid:1 2:1\\n1 qid:2 1:0.25\\n")
    >>> data = load_svmlight(path)
    >>> data.X.toarray()
    array([[0.5 , 0.  , 1.  ],
           [0.  , 1.  , 0.  ],
           [0.25, 0.  , 0.  ]])
    >>> data.y, data.qid
    (array([2., 0., 1.]), array([1, 1, 2]))
    """
    with open_binary(path) as stream:
        size = plain_size(stream)
        n_threads = resolve_n_jobs(n_jobs)
        block_bytes = max(chunk_bytes // n_threads, min(MIN_BLOCK_BYTES, chunk_bytes), 1)
        if size is not None:
            n_threads = max(1, min(n_threads, size // (MIN_BLOCKS_PER_THREAD * block_bytes)))
        if n_threads > 1 and not comments:
            arrays = _read_in_threads(stream, path, size, n_threads, block_bytes, dtype, progress,
                                      costs)
        else:
            arrays = _read_in_one_thread(stream, path, size, comments, chunk_bytes, dtype,
                                         progress, costs)
    return _dataset(arrays, path, n_features)


def _read_in_one_thread(stream, path, size, comments, chunk_bytes, dtype, progress, costs=False):
    """The rest of the stream (size bytes; None: unknown) parsed by this thread: filled _Arrays."""
    arrays = _Arrays(0, 0, comments, dtype, costs)
    buffer = _svmlight.empty_bytearray(chunk_bytes if size is None else min(chunk_bytes, size + 1))
    with contextlib.closing(_blocks(stream, path, buffer, progress=progress)) as blocks:
        line_offset = read = 0
        for block in blocks:
            read += len(block)
            line_offset = arrays.parse(block, path, line_offset,
                                       None if size is None else max(size - read, 0))
    return arrays


def _dataset(arrays, path, n_features):
    """The Dataset of a filled _Arrays (its buffers become the Dataset's arrays)."""
    arrays.finish()
    rows, total = arrays.rows, arrays.nnz
    y, qid, line, indptr, indices, values = (
        arrays.array(name) for name in ("y", "qid", "line", "indptr", "indices", "values"))
    width = arrays.width
    if n_features is not None:
        width = max(width, int(n_features))
    if total < np.iinfo(np.int32).max:
        indptr = indptr.astype(np.int32)
    else:
        indices = indices.astype(np.int64)
    cost = arrays.array("cost") if arrays.has("cost") else None
    return Dataset(CSR(values, indices, indptr, (rows, width)), y, qid, line, arrays.comments, path,
                   cost)


def dump_svmlight(dataset_or_X: Dataset | MatrixLike, y: VectorLike | None = None,
                  qid: VectorLike | None = None, path: str | None = None, comments: Any = None,
                  stream: Any = None) -> None:
    """Write documents in SVMlight format so that reading them back is exact.

    Every number is written in its shortest round-tripping form; explicit
    zeros stored in X are written, absent entries are not.

    Parameters
    ----------
    dataset_or_X : Dataset or sparse matrix or ndarray
        The documents (a Dataset supplies y, qid and comments itself).
    y, qid : array_like, optional
        Targets and query ids when X is given (qid omitted: no qid tokens).
    path : str, optional
        File to write (atomically); or give an open text ``stream``.
    comments : list of str, optional
        Text written after '#' on each line.

    Returns
    -------
    None

    Examples
    --------
    >>> import io
    >>> import numpy as np
    >>> from rankfast import dump_svmlight
    >>> out = io.StringIO()
    >>> dump_svmlight(np.array([[0.5, 0.0], [0.0, 2.0]]), [1, 0], [3, 3], stream=out)
    >>> print(out.getvalue(), end="")
    1 qid:3 1:0.5
    0 qid:3 2:2
    """
    from .files import atomic_output
    X: MatrixLike
    if isinstance(dataset_or_X, Dataset):
        ds = dataset_or_X
        X, y, qid = ds.features, ds.y, ds.qid
        comments = ds.comments if comments is None else comments
    else:
        X = dataset_or_X
    X = as_csr(X)
    y = np.asarray(y, dtype=np.float64)
    lines = _format_lines(X, y, None if qid is None else _written_qids(qid), comments)
    if stream is not None:
        stream.writelines(lines)
    else:
        with atomic_output(path) as out:  # type: ignore[arg-type]  # path is given without stream
            out.writelines(lines)


def _written_qids(qid):
    """qid as dump_svmlight writes it: svm_rank's qid:N, N an integer in 0 .. 2**63 - 1 (a
    warning where they decrease, which svm_rank refuses)."""
    qid = np.asarray(qid)
    if qid.dtype.kind not in "iub" and not (qid.dtype.kind == "f" and np.all(qid == np.round(qid))):
        raise ValueError(f"dump_svmlight writes query ids as svm_rank's qid:N, N a non-negative "
                         f"integer (got {qid.dtype} values such as {qid.flat[0]!r}); number the "
                         f"queries first, e.g. np.unique(qid, return_inverse=True)[1]")
    if len(qid) and qid.min() < 0:
        raise ValueError(f"dump_svmlight writes query ids as svm_rank's qid:N, N non-negative "
                         f"(got {qid.min()})")
    if np.any(np.diff(qid) < 0):
        import warnings
        warnings.warn("dump_svmlight: the qids do not increase down the rows; rankfast reads "
                      "such a file, but svm_rank_learn refuses it ('Query ID's in data file have "
                      "to be in increasing order'): sort the rows by qid first (a stable sort "
                      "keeps each query's order)", UserWarning, stacklevel=3)
    return qid.astype(np.int64)


def _format_lines(X, y, qid, comments):
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(X.data))):
        raise ValueError("cannot write nan or inf in SVMlight format")
    indptr, indices, data = X.indptr, (X.indices + 1).tolist(), X.data.tolist()
    ys = y.tolist()
    qs = None if qid is None else qid.tolist()
    for i in range(X.shape[0]):
        parts = [_num(ys[i])]
        if qs is not None:
            parts.append(f"qid:{qs[i]}")
        parts.extend(f"{j}:{_num(v)}" for j, v in
                     zip(indices[indptr[i]:indptr[i + 1]], data[indptr[i]:indptr[i + 1]]))
        if comments is not None and comments[i]:
            parts.append("#" + comments[i])
        yield " ".join(parts) + "\n"


def _num(v):
    """Shortest text that reads back as exactly v ('3' for 3.0)."""
    text = repr(v)
    return text[:-2] if text.endswith(".0") else text
