"""The SVMlight reader on threads: blocks of a file parsed in parallel into growing arrays.

A plain file's blocks are read by the threads that parse them (each takes the
reader's turn when it is free); a stream's blocks are handed out by the calling
thread.  The thread that completes the file order places the blocks, so the
arrays, and any error, are those of one thread reading in file order, for any
number of threads.  The arrays (_Arrays) are array.array buffers grown by
realloc, so a file is read in one pass without numpy.
"""
from __future__ import annotations

import dataclasses
import threading

import numpy as np

from .._kernels import _svmlight
from ..errors import InputError
from ._stream import ERR_FULL, Rows, _blocks, reason

MIN_BLOCK_BYTES = 2 << 20      # a thread's block: larger than the cost of handing it out
# Blocks a file of known size must hold for each parsing thread: below that, the pool's
# start and each thread's fresh buffers cost what its blocks save (benchmarks/README.md,
# "Block sizes").
MIN_BLOCKS_PER_THREAD = 4


def _read_in_threads(stream, path, size, n_threads, block_bytes, dtype, progress, costs=False):
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
    arrays = _Arrays(0, 0, False, dtype, costs)
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
    costs = arrays.array("cost")[rows_of] if arrays.has("cost") else None
    return _svmlight.parse_into(block, 0, 0, arrays.array("y")[rows_of], arrays.array("qid")[rows_of],
                                arrays.array("line")[rows_of],
                                arrays.array("indptr")[row:row + rows + 1],
                                arrays.array("indices")[entries_of],
                                arrays.array("values")[entries_of], None, None, first_line, nnz,
                                costs=costs)


_TYPECODES = {"f8": "d", "f4": "f"}     # numpy's -> array.array's


class _Arrays:
    """Targets, qids, lines, CSR arrays (and comment spans, costs) of the documents parsed so far.

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

    def __init__(self, rows, entries, comments, dtype=np.float64, costs=False):
        self.rows = self.nnz = 0
        self.parsed_bytes = 0      # of the blocks parse() has read
        self.width = 0             # the highest feature index parsed (1-based; 0: none)
        self.comments = [] if comments else None
        self._row_names = (Rows.ROW_ARRAYS + (Rows.SPAN_ARRAYS if comments else ())
                           + (Rows.COST_ARRAYS if costs else ()))
        self._entry_names = Rows.ENTRY_ARRAYS
        buffers = Rows(rows, entries, comments, _TYPECODES[np.dtype(dtype).str[1:]], costs)
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

    def has(self, name):
        """Whether buffer ``name`` is kept (comment spans and costs are asked for)."""
        return name in self._buffers

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
        costs = buffers.get("cost")
        if self.parsed_bytes:      # as many documents and features a byte as so far, and 5% more
            share = 1.05 * len(block) / self.parsed_bytes
            self.populate(self.rows, self.nnz, int(share * self.rows), int(share * self.nnz))
        self.parsed_bytes += len(block)
        while True:
            rows, entries, error, error_line, start, end, consumed, width = _svmlight.parse_into(
                block, self.rows, self.nnz, buffers["y"], buffers["qid"], buffers["line"],
                buffers["indptr"], buffers["indices"], buffers["values"], *spans, line_offset + 1,
                costs=costs)
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
            for name in ("y", "qid", "line") + (("cost",) if self.has("cost") else ()):
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
