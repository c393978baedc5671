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
import threading

import numpy as np

from . import _svmlight
from ._products import mark_columns
from ._threads import resolve_n_jobs
from .csr import CSR, as_csr, scipy_csr
from .errors import InputError
from .files import open_binary
from .groups import GROUP_SIDECARS, group_sidecar, read_group_file  # noqa: F401 (public here too)
from .reader import ERR_FULL, Rows, _blocks, plain_size, reason

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from ._typing import Matrix, Vector

# Read at a time by one thread: memory beyond the result.  Small enough to stay in the
# caches between the read and the parse: bench_reader's 200 MB dense file read in 0.305 s
# in 8 MB chunks, 0.297 in 4, 0.286 in 2 and 0.285 in 1 (one thread, medians of 11 fresh
# processes in turn, 2026-11-27).
CHUNK_BYTES = 2 << 20
MIN_BLOCK_BYTES = 2 << 20      # a thread's block: larger than the cost of handing it out
# Blocks a file of known size must hold for each parsing thread: the pool's start (a
# thread may begin 8 ms into the read) and each thread's fresh buffers cost about what
# its first blocks save.  Two threads over one on dense files, 11-15 fresh processes in
# turn (2026-11-27): 8 MB (4 blocks of 2 MB) 0.82x, 12 MB 1.03x, 16 MB 0.90-1.09x, 24 MB
# 1.20x, 32 MB 1.36x, at 1.3-1.7x one thread's CPU below 24 MB.
MIN_BLOCKS_PER_THREAD = 4

@dataclasses.dataclass
class Dataset:
    """Documents of an SVMlight file.

    Attributes
    ----------
    features : rankfast.csr.CSR, shape (n_documents, n_features)
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
    """

    features: CSR
    y: np.ndarray
    qid: np.ndarray
    line: np.ndarray
    comments: list | None = None
    path: str = ""

    def __post_init__(self):
        if not isinstance(self.features, CSR):
            self.features = as_csr(self.features)

    @property
    def X(self) -> Any:
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

    def subset(self, rows: Matrix) -> Dataset:
        """The documents at ``rows`` (an index array), in that order."""
        rows = np.asarray(rows)
        return Dataset(self.features[rows], self.y[rows], self.qid[rows], self.line[rows],
                       None if self.comments is None else [self.comments[i] for i in rows],
                       self.path)


def read_weight_file(path: str) -> np.ndarray:
    """Weights from a side file, one number a line (LightGBM's ``.weight``; rank_learn --weights).

    One weight per line of the data file or per query, in file order (see
    rankfast.base.query_sample_weights: weights are per query).  Blank lines
    are skipped.

    Parameters
    ----------
    path : str
        The weights file (gzip, bzip2 and xz are read transparently).

    Returns
    -------
    ndarray of float64

    Raises
    ------
    InputError
        A line that is not a finite number ≥ 0 (file and line named).

    Examples
    --------
    >>> import os, tempfile
    >>> from rankfast.data import read_weight_file
    >>> path = os.path.join(tempfile.mkdtemp(), "train.txt.weight")
    >>> with open(path, "w") as f:
    ...     _ = f.write("1\\n2.5\\n")
    >>> read_weight_file(path)
    array([1. , 2.5])
    """
    import io
    weights = []
    with open_binary(path) as stream:
        for number, raw in enumerate(io.TextIOWrapper(stream, encoding="ascii",
                                                      errors="replace"), start=1):
            token = raw.strip()
            if not token:
                continue
            try:
                value = float(token)
            except ValueError:
                value = float("nan")
            if not (np.isfinite(value) and value >= 0):
                raise InputError(path, number, f"weight {token[:40]!r} is not a finite "
                                               f"number >= 0")
            weights.append(value)
    return np.array(weights, dtype=np.float64)


def query_starts(qid: Vector) -> np.ndarray:
    """Offsets where a new run of equal qid starts, with len(qid) appended."""
    qid = np.asarray(qid)
    if len(qid) == 0:
        return np.zeros(1, dtype=np.int64)
    change = np.flatnonzero(qid[1:] != qid[:-1]) + 1
    return np.concatenate(([0], change, [len(qid)])).astype(np.int64)


def count_distinct(values: Vector) -> int:
    """How many distinct values ``values`` holds (np.unique's count, without its import of numpy.ma).

    Only the first value of each run of equal ones is sorted: a file's qids come in
    runs, so 500,000 documents sort as their 10,000 queries.
    """
    values = np.asarray(values).ravel()
    if not len(values):
        return 0
    firsts = np.sort(values[np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))])
    return int(np.count_nonzero(firsts[1:] != firsts[:-1])) + 1


def noncontiguous_qid(qid: Vector) -> Any:
    """The first qid (in row order) whose rows are split in several runs, or None."""
    qid = np.asarray(qid)
    run_qids = qid[query_starts(qid)[:-1]]
    run = _repeated_run(run_qids)
    return None if run is None else int(run_qids[run])


def group_rows(qid: Vector) -> tuple[np.ndarray | None, np.ndarray]:
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


def query_index(qid: Vector) -> tuple[np.ndarray, int]:
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


def mostly_dense(X: Matrix) -> bool:
    """Whether X has non-zeros in half of its entries or more (then BLAS beats sparse products)."""
    return X.nnz >= 0.5 * X.shape[0] * X.shape[1]


def with_width(X: Matrix, width: Any) -> Any:
    """X as float64 CSR with exactly ``width`` columns (features above it dropped)."""
    import scipy.sparse as sp
    X = scipy_csr(X, dtype=np.float64)
    if X.shape[1] > width:
        X = X[:, :width]
    elif X.shape[1] < width:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
    return X


def compact_columns(X: Matrix) -> tuple[CSR, np.ndarray]:
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


def load_svmlight(path: str, comments: bool = False, n_features: int | None = None,
                  chunk_bytes: Any = CHUNK_BYTES, progress: Any = None,
                  n_jobs: int | None = None, dtype: Any = np.float64) -> Dataset:
    """Read an SVMlight / svm_rank file.

    Parameters
    ----------
    path : str
        File name; '-' reads standard input; gzip, bzip2 and xz files are
        decompressed transparently.  A UTF-8 byte order mark is skipped.
    comments : bool
        Also return the text after '#' of every document line.
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
        rankfast._threads; a file of known size gets no more threads than it
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
            arrays = _read_in_threads(stream, path, size, n_threads, block_bytes, dtype, progress)
        else:
            arrays = _read_in_one_thread(stream, path, size, comments, chunk_bytes, dtype,
                                         progress)
    return _dataset(arrays, path, n_features)


def _read_in_one_thread(stream, path, size, comments, chunk_bytes, dtype, progress):
    """The rest of the stream (size bytes; None: unknown) parsed by this thread: filled _Arrays."""
    arrays = _Arrays(0, 0, comments, dtype)
    buffer = _svmlight.empty_bytearray(chunk_bytes if size is None else min(chunk_bytes, size + 1))
    with contextlib.closing(_blocks(stream, path, buffer, progress=progress)) as blocks:
        line_offset = read = 0
        for block in blocks:
            read += len(block)
            line_offset = arrays.parse(block, path, line_offset,
                                       None if size is None else max(size - read, 0))
    return arrays


def _read_in_threads(stream, path, size, n_threads, block_bytes, dtype, progress):
    """The rest of the stream (size bytes; None: unknown) parsed on n_threads threads: filled _Arrays.

    The stream is read in blocks of whole lines (block_bytes each), one
    block at a time.  A block's newlines and colons, counted as it is read,
    bound the documents and entries it holds and give it its place in the
    arrays, right after the previous block's; a thread parses it there while
    the others read on.  The thread that completes the file order places the
    blocks: a block's rows move down when an earlier block held blank or
    comment lines or colons that were not a feature's, and the first error
    in file order raises.  The file is read once, and a file growing
    meanwhile is read whole.  The arrays are sized at the first block for the
    whole file (a stream: by half again); a block that does not fit waits
    until every earlier one is placed, then grows them.

    Who reads: in a plain file (size known), each parsing thread reads the
    blocks it parses, in turn (_BlockTurns): the read's copy lands in the
    cache of the core that parses it (read by one thread and parsed by
    another, the copy cost 1.5-4x as much, by where the host ran the two),
    and no third thread competes for the cores.  Anything else (compressed,
    a pipe, a terminal) is read by this thread, which hands each block to
    the pool, started as blocks wait for it: a read that may wait for a
    writer stays where an interrupt reaches it, and the decompressor keeps
    its core.
    """
    arrays = _Arrays(0, 0, False, dtype)
    spare = []
    blocks = _blocks(stream, path, _svmlight.empty_bytearray(block_bytes), progress=progress,
                     spare=spare)
    turns = _BlockTurns(arrays, blocks, spare, size, path)
    try:
        if size is not None:
            for _ in range(n_threads):
                turns.start_thread()
        else:
            turns.feed(n_threads)
        turns.join()
    finally:
        turns.stop()
        turns.join()
    turns.check()
    return arrays


@dataclasses.dataclass(frozen=True)
class _Parsed:
    """A block parsed at row and nnz, after ``lines`` lines: parse_into's result, the bytes
    of the token an error names, or the exception its reading or parsing raised."""
    index: int
    row: int = 0
    nnz: int = 0
    lines: int = 0
    result: tuple = ()
    token: bytes = b""
    exception: BaseException | None = None


class _BlockTurns:
    """The blocks of a stream, read one at a time, parsed on threads, placed in file order.

    A block read is counted and claims its place (``_take``).  The threads
    started (``start_thread``) run ``work``.  Where they read (a plain
    file: ``reads``), each takes the reader's turn when it is free, reads
    a block and parses it.  Where they do not, the calling thread reads
    every block and hands it to them (``feed``), starting a thread when no
    thread waits for work.  A thread done with a block places it, and the
    blocks after it that wait, once every block before it is placed
    (``_place``); the first error in file order, or a thread's own failure
    (``_fail``), stops the others, and ``check`` raises it.

    ``placed`` counts the blocks placed.  A block that does not fit waits
    for it to reach its index: then no other thread holds the arrays, and
    they can grow (realloc may move them).
    """

    def __init__(self, arrays, blocks, spare, size, path):
        self.arrays, self.placed, self.path, self.error = arrays, 0, path, None
        self._blocks, self._spare, self._size = blocks, spare, size
        self._next = self._row = self._nnz = self._lines = self._read = 0
        self._threads = []
        self._turn = threading.Condition()       # the reader's turn and the blocks handed out
        self._reading, self._handed, self._idle = False, [], 0
        self._ended = self._stopped = False      # no more blocks to read; to read or parse
        self._placing = threading.Condition()    # placed, the blocks waiting for it, the error
        self._waiting = {}

    def start_thread(self):
        thread = threading.Thread(target=self.work)
        thread.start()
        self._threads.append(thread)

    def join(self):
        for thread in self._threads:
            thread.join()

    # ------------------------------------------------------------------ the threads

    def work(self):
        """A thread's loop: the next block, parsed and placed, until there is none."""
        try:
            while (taken := self._next_job()) is not None:
                self._place(self._parse(*taken) if type(taken) is tuple else taken)
        except BaseException as exc:       # this loop's own failure: the read must not end short
            self._fail(exc)

    def _next_job(self):
        """A block handed to this thread, else one it reads in the reader's turn (a plain
        file), as _take's; None at the end."""
        reads = self._size is not None
        with self._turn:
            self._idle += 1
            self._turn.wait_for(lambda: (self._handed or self._stopped or self._ended
                                         or (reads and not self._reading)))
            self._idle -= 1
            if self._stopped:
                return None
            if self._handed:
                self._turn.notify_all()            # the feeder waits for room
                return self._handed.pop(0)
            if self._ended:
                return None
            self._reading = True
        taken = self._take()
        with self._turn:
            self._reading = False
            self._ended = self._ended or taken is None
            self._turn.notify_all()
        return taken

    def _parse(self, index, block, row, nnz, rows, entries, lines):
        try:
            result = _parse_at(self.arrays, block, row, nnz, rows, entries, lines + 1)
            error, start, end = result[2], result[4], result[5]
            token = bytes(block[start:end]) if error else b""
        except BaseException as exc:
            return _Parsed(index, exception=exc)
        self._spare.append(block.obj)
        return _Parsed(index, row, nnz, lines, result, token)

    def _place(self, parsed):
        """Place parsed and the blocks after it that wait, once every block before it is."""
        with self._placing:
            self._waiting[parsed.index] = parsed
            if parsed.index != self.placed:
                return
            try:
                while self.placed in self._waiting and self.error is None:
                    self.arrays.place(self._waiting.pop(self.placed), self.path)
                    self.placed += 1
            except BaseException as exc:           # the first error in file order
                self.error = exc
            self._placing.notify_all()
        if self.error is not None:
            self.stop()

    def _fail(self, exc):
        with self._placing:
            self.error = self.error or exc
        self.stop()

    # ------------------------------------------------------------------ reading a block

    def _take(self):
        """(index, block, row, nnz, rows, entries, lines) of the next block, a _Parsed with the
        exception reading it raised, or None at the end (or once stopped)."""
        if self._stopped:                  # an error found: nothing more is read
            return None
        index = self._next
        try:
            block = next(self._blocks, None)
        except Exception as exc:         # InputError, a progress callback's: raised in file order
            self._next += 1
            return _Parsed(index, exception=exc)
        if block is None or self._stopped:
            return None
        self._next += 1
        return self._claim(index, block)

    def _claim(self, index, block):
        """The block's place after the previous one's, the arrays grown when it does not fit
        (once every earlier block is placed): as _take's, or None once stopped."""
        self._read += len(block)
        newlines, colons = _svmlight.count_bytes_of(block)
        rows = newlines + (block[-1] != 10)
        room_rows, room_entries = self.arrays.room
        if self._row + rows > room_rows or self._nnz + colons > room_entries:
            with self._placing:
                self._placing.wait_for(lambda: self.placed == index or self._stopped)
            if self._stopped:
                return None
            self._row, self._nnz = self.arrays.rows, self.arrays.nnz
            self.arrays.make_room(rows, colons, len(block),
                                  None if self._size is None else max(self._size - self._read, 0))
        taken = index, block, self._row, self._nnz, rows, colons, self._lines
        self._row, self._nnz, self._lines = self._row + rows, self._nnz + colons, self._lines + newlines
        return taken

    # ------------------------------------------------------------------ the calling thread

    def feed(self, n_threads):
        """Read every block here and hand it to the threads, n_threads at most, started as
        blocks wait for them, n_threads blocks waiting at most."""
        while (taken := self._take()) is not None:
            if type(taken) is not tuple:           # a read error: placed in its turn
                self._place(taken)
                break
            with self._turn:
                self._turn.wait_for(lambda: len(self._handed) < n_threads or self._stopped)
                if self._stopped:
                    return
                self._handed.append(taken)
                self._turn.notify_all()
                start = len(self._handed) > self._idle and len(self._threads) < n_threads
            if start:
                self.start_thread()
        with self._turn:
            self._ended = True                     # the threads end once the handed are parsed
            self._turn.notify_all()

    def stop(self):
        """No more blocks read or parsed: the threads end their loops."""
        with self._turn, self._placing:
            self._stopped = True
            self._turn.notify_all()
            self._placing.notify_all()

    def check(self):
        """Raise the first error in file order, or when a block read was not placed."""
        if self.error is not None:
            raise self.error
        if self._waiting or self.placed != self._next:
            raise RuntimeError(f"load_svmlight: {self._next} blocks read, {self.placed} placed")


def _parse_at(arrays, block, row, nnz, rows, entries, first_line):
    """parse_into the arrays at row and nnz, room for rows and entries (indptr[row + 1:] too).

    The arrays' views are taken here, not passed in, so that none is left
    in the pool's hands once the result is out (they must be gone before
    the arrays grow)."""
    rows_of, entries_of = slice(row, row + rows), slice(nnz, nnz + entries)
    arrays.populate(row, nnz, rows, entries)
    return _svmlight.parse_into(block, 0, 0, arrays.array("y")[rows_of], arrays.array("qid")[rows_of],
                                arrays.array("line")[rows_of],
                                arrays.array("indptr")[row:row + rows + 1],
                                arrays.array("indices")[entries_of],
                                arrays.array("values")[entries_of], None, None, first_line, nnz)


_TYPECODES = {"f8": "d", "f4": "f"}     # numpy's -> array.array's


class _Arrays:
    """Targets, qids, lines, CSR arrays (and comment spans) of the documents parsed so far.

    Room for ``rows`` documents and ``entries`` features at first, in
    array.array buffers, not initialised (malloc'd memory).  Before a block is
    parsed, the pages its documents will be written to are faulted in by one
    system call per buffer (``populate``), in the pages the system gives by
    default: no huge-page advice (benchmarks/README.md, "Without the huge-page
    policy").

    The buffers are a reader.Rows's.  ``parse`` grows them as a block needs
    (realloc, which moves a large buffer's pages instead of copying them:
    _svmlight.resize_array), so a file is read in one pass; on threads,
    ``make_room`` grows them between blocks.  ``array(name)`` is a numpy array
    over a buffer, taken afresh each time: while one is alive, that buffer
    cannot grow.
    """

    def __init__(self, rows, entries, comments, dtype=np.float64):
        self.rows = self.nnz = 0
        self.parsed_bytes = 0      # of the blocks parse() has read
        self.width = 0             # the highest feature index parsed (1-based; 0: none)
        self.comments = [] if comments else None
        self._row_names = Rows.ROW_ARRAYS + (Rows.SPAN_ARRAYS if comments else ())
        self._entry_names = Rows.ENTRY_ARRAYS
        buffers = Rows(rows, entries, comments, _TYPECODES[np.dtype(dtype).str[1:]])
        self._buffers = {name: getattr(buffers, name) for name in self._row_names + self._entry_names}

    @property
    def room(self):
        """(documents, entries) every buffer holds."""
        return (min(len(self._buffers[name]) - (name == "indptr") for name in self._row_names),
                min(len(self._buffers[name]) for name in self._entry_names))

    def _lengths(self, rows, entries):
        """(buffer, its length for rows documents and entries features), for every buffer."""
        for name in self._row_names:
            yield self._buffers[name], rows + (name == "indptr")
        for name in self._entry_names:
            yield self._buffers[name], entries

    def reserve(self, rows, entries):
        """Room for at least rows documents and entries features in all."""
        for buffer, length in self._lengths(rows, entries):
            if len(buffer) < length:
                _svmlight.resize_array(buffer, length)

    def array(self, name):
        """The numpy array over buffer ``name`` (y, qid, line, indptr, indices, values)."""
        buffer = self._buffers[name]
        return np.frombuffer(buffer, dtype=_NUMPY_TYPES[buffer.typecode])

    def populate(self, row, nnz, rows, entries):
        """Fault in the pages that rows documents from row and entries features from nnz
        will be written to, a system call per buffer (_svmlight.populate)."""
        for name in self._row_names:
            _svmlight.populate(self._buffers[name], row, row + rows + (name == "indptr"))
        for name in self._entry_names:
            _svmlight.populate(self._buffers[name], nnz, nnz + entries)

    def finish(self):
        """Buffers fitted to what was parsed."""
        for buffer, length in self._lengths(self.rows, self.nnz):
            _svmlight.resize_array(buffer, length)
        return self

    def parse(self, block, path, line_offset, bytes_after=None):
        """Parse a block of whole lines after the documents so far; returns the next block's line offset.

        The buffers grow when the block's lines do not fit: by what the rest
        of the block can hold (its newlines and colons), plus, for the rest of
        the file (``bytes_after`` bytes; None: a stream of unknown length), as
        much again per byte, or half the room there is.
        """
        buffers = self._buffers
        spans = ((buffers["comment_start"], buffers["comment_end"]) if self.comments is not None
                 else (None, None))
        if self.parsed_bytes:      # as many documents and features a byte as so far, and 5% more
            share = 1.05 * len(block) / self.parsed_bytes
            self.populate(self.rows, self.nnz, int(share * self.rows), int(share * self.nnz))
        self.parsed_bytes += len(block)
        while True:
            rows, entries, error, error_line, start, end, consumed, width = _svmlight.parse_into(
                block, self.rows, self.nnz, buffers["y"], buffers["qid"], buffers["line"],
                buffers["indptr"], buffers["indices"], buffers["values"], *spans, line_offset + 1)
            if error and error != ERR_FULL:
                raise InputError(path, line_offset + error_line + 1, reason(error, block[start:end]))
            if self.comments is not None:
                self._keep_comments(block, rows)
            self.rows += rows
            self.width = max(self.width, width)
            self.nnz += entries
            if error != ERR_FULL:
                return line_offset + error_line
            line_offset += error_line
            block = block[consumed:]
            self._grow(block, bytes_after)

    def _grow(self, block, bytes_after):
        newlines, colons = _svmlight.count_bytes_of(block)
        self.make_room(newlines + 1, colons, len(block), bytes_after)
        self.populate(self.rows, self.nnz, newlines + 1, colons)

    def make_room(self, rows, entries, length, bytes_after):
        """Room for rows more documents and entries more features (a block of length bytes),
        and for the rest of the file, bytes_after bytes, at the block's density (None: a
        stream of unknown length: half the room there is)."""
        if bytes_after is None:
            have_rows, have_entries = self.room
            more = max(rows, have_rows // 2), max(entries, have_entries // 2)
        else:
            share = 1.05 * bytes_after / max(length, 1)
            more = rows + int(share * rows), entries + int(share * entries)
        try:
            self.reserve(self.rows + more[0], self.nnz + more[1])
        except MemoryError:       # a guess for the rest of the file too large: what this block needs
            self.reserve(self.rows + rows, self.nnz + entries)

    def _keep_comments(self, block, rows):
        text = bytes(block)
        starts = self._buffers["comment_start"][self.rows:self.rows + rows].tolist()
        ends = self._buffers["comment_end"][self.rows:self.rows + rows].tolist()
        self.comments.extend(text[s:e].decode("utf-8", "replace") if s >= 0 else ""
                             for s, e in zip(starts, ends))

    def place(self, parsed, path):
        """Move a block parsed at parsed.row and parsed.nnz (a _Parsed) down to the end of the arrays.

        Nothing moves when it already is there (no earlier block had lines or
        colons that its counts included but that stored nothing): the
        parser wrote its indptr counted from nnz.
        """
        if parsed.exception is not None:
            raise parsed.exception
        rows, entries, error, error_line, _, _, _, width = parsed.result
        if error:              # ERR_FULL too: never, as the block's counts bound what it holds
            raise InputError(path, parsed.lines + error_line + 1, reason(error, parsed.token))
        row, nnz = parsed.row, parsed.nnz
        r, z = self.rows, self.nnz
        if r != row:
            for name in ("y", "qid", "line"):
                array = self.array(name)
                array[r:r + rows] = array[row:row + rows]
        if z != nnz:
            for name in ("indices", "values"):
                array = self.array(name)
                array[z:z + entries] = array[nnz:nnz + entries]
        if r != row or z != nnz:
            indptr = self.array("indptr")
            indptr[r + 1:r + rows + 1] = indptr[row + 1:row + rows + 1] - (nnz - z)
        self.rows, self.nnz = r + rows, z + entries
        self.width = max(self.width, width)


_NUMPY_TYPES = {"d": np.float64, "f": np.float32, "q": np.int64, "i": np.int32}


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
    return Dataset(CSR(values, indices, indptr, (rows, width)), y, qid, line, arrays.comments, path)


def dump_svmlight(dataset_or_X: Any, y: Vector = None, qid: Vector = None,
                  path: str | None = None, comments: Any = None, stream: Any = None) -> None:
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


# ------------------------------------------------- query group sizes (LightGBM / XGBoost)

def group_to_qid(sizes: Any, n_documents: int) -> np.ndarray:
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
    >>> from rankfast.data import group_to_qid
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
