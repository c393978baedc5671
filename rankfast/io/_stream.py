"""The SVMlight reader's streaming layer: bytes of a file in, parsed rows out, no numpy.

Opening (rankfast.io.files), reading blocks that end at line ends, skipping a
byte order mark, reporting progress and read errors, and turning the Cython
parser's error codes into messages.  rankfast.io.svmlight builds Datasets (numpy,
scipy) on top of it; rank_classify streams a linear model's scores over
iter_svmlight without importing either.
"""
from __future__ import annotations

import collections
import io

from .._kernels import _svmlight
from ..errors import InputError
from .files import open_binary

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

BOM = b"\xef\xbb\xbf"
SHOWN_CHARS = 60            # how much of a bad token an error message quotes


def read_errors() -> Any:
    """What reading a (possibly compressed) stream can raise, as an ``except`` tuple.

    A corrupt gzip stream raises zlib.error, a corrupt xz stream LZMAError,
    truncated gzip EOFError, bz2 OSError.  A function, evaluated only when an
    exception is being handled, so that reading a plain file imports neither
    zlib nor lzma (``except read_errors() as exc``).
    """
    import lzma
    import zlib
    return (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError)


ERR_FULL = 13               # _svmlight: the next line does not fit in the arrays

_REASONS = {
    1: "target {token} is not a number (a line starts with its target value)",
    2: "target {token} is not finite",
    3: "token {token} is not of the form index:value",
    4: "feature index in {token} is not an integer",
    5: "feature index in {token} is outside 1 .. 2147483647",
    6: "feature index in {token} is not above the previous index on the line "
       "(svm_rank requires each line's indices to increase: each index once, in order)",
    7: "feature value in {token} is not a number",
    8: "feature value in {token} is not finite",
    9: "{token}: qid must be an integer in 0 .. 9223372036854775807",
    10: "{token}: a second qid on one line",
    11: "{token}: sid must be a non-negative integer",
    12: "{token}: cost must be a finite number",
    14: "feature value in {token} is beyond single precision (svm_rank stores feature "
        "values as 4-byte floats, at most 3.4028235e+38 in magnitude): rescale the features",
    15: "a carriage return ('\\r') without a line feed ends this line and another follows: "
        "the file's lines seem to end in CR alone (old Mac OS), which svm_rank cannot read "
        "either; convert them to '\\n' (tr '\\r' '\\n' < old > new)",
}


def reason(error: Any, token: Any, what: str = "target") -> Any:
    """The message for parser error code ``error`` at ``token`` (bytes).

    A long token is quoted in part: its first SHOWN_CHARS characters, an
    ellipsis and its length.  ``what`` names the leading number of a line
    ("alpha" in a model file's support vectors).
    """
    return _REASONS[error].replace("target", what).format(token=quoted(token))


def quoted(token: Any) -> str:
    """Bytes as a message quotes them, in single quotes: the first SHOWN_CHARS characters.

    UTF-8 text shows as it is; what is not printable as an escape: \\t or
    \\x00 for an ASCII control byte, \\u00a0 for a character (a no-break
    space), and \\xNN only for a byte that is not UTF-8, never raw in a
    message or as U+FFFD.

    >>> from rankfast.io._stream import quoted
    >>> print(quoted(b"1e5x"), quoted("é".encode()), quoted(b"\\x7fELF\\xef\\x00"))
    '1e5x' 'é' '\\x7fELF\\xef\\x00'
    """
    text = bytes(token[:4 * SHOWN_CHARS + 4]).decode("utf-8", "surrogateescape")
    shown = "".join(_quoted_char(c) for c in text[:SHOWN_CHARS])
    if len(text) > SHOWN_CHARS:
        shown += f"... ({len(token)} bytes)"
    return f"'{shown}'"


def _quoted_char(c):
    if "\udc80" <= c <= "\udcff":                # a byte surrogateescape kept
        return f"\\x{ord(c) - 0xDC00:02x}"
    if c in "\\'":
        return "\\" + c
    if c.isprintable() and c != "\ufffd":        # U+FFFD in a file: text already broken once
        return c
    if c < "\x80":                     # a control byte: \t, \x00 (it is the byte too)
        return repr(c)[1:-1]
    return f"\\u{ord(c):04x}" if c <= "\uffff" else f"\\U{ord(c):08x}"   # never \xNN: a byte


class Rows:
    """Arrays for ``rows`` documents and ``entries`` features (array.array, reused).

    With ``comments``, also each line's comment span (``comment_start``,
    ``comment_end``: byte offsets, -1 where a line has none); with ``costs``,
    each line's ``cost:`` value (``cost``, NaN where a line has none).  Not initialised
    (but indptr[0] = 0): the parser writes every item a block shows.
    ``values`` is their typecode: "d" (float64) or "f" (float32).
    """

    ROW_ARRAYS = ("y", "qid", "line", "indptr")      # a document an item (indptr: one more)
    SPAN_ARRAYS = ("comment_start", "comment_end")   # a document an item, with comments
    COST_ARRAYS = ("cost",)                          # a document an item, with costs
    ENTRY_ARRAYS = ("indices", "values")             # a feature an item

    def __init__(self, rows: int, entries: int, comments: bool = False,
                 values: str = "d", costs: bool = False) -> None:
        empty = _svmlight.empty_array
        self.y, self.qid, self.line = empty("d", rows), empty("q", rows), empty("q", rows)
        self.indptr = empty("q", rows + 1)
        self.indptr[0] = 0
        self.indices, self.values = empty("i", max(entries, 1)), empty(values, max(entries, 1))
        spans = (empty("q", rows), empty("q", rows)) if comments else (None, None)
        self.comment_start: Any = spans[0]
        self.comment_end: Any = spans[1]
        self.cost: Any = empty("d", rows) if costs else None       # NaN: no cost: on the line

    def block(self, n: int, nnz: int) -> RowBlock:
        """The first n documents (nnz entries) as a RowBlock of views."""
        return RowBlock(memoryview(self.y)[:n], memoryview(self.qid)[:n],
                        memoryview(self.line)[:n], memoryview(self.indptr)[:n + 1],
                        memoryview(self.indices)[:nnz], memoryview(self.values)[:nnz])


class RowBlock(collections.namedtuple("RowBlock", "y qid line indptr indices values")):
    """Consecutive documents of a file, parsed into CSR arrays that the reader reuses.

    ``indptr`` (int64, n + 1 entries from 0), ``indices`` (int32, 0-based
    columns), ``values``, ``y``, ``qid`` and ``line`` (1-based) describe the
    documents, as memoryviews of arrays (``numpy.asarray`` takes them without
    a copy); they are overwritten by the next block, so copy what you keep.
    len() is the number of documents.  (collections.namedtuple, not
    typing.NamedTuple: typing costs 3 ms to import.)
    """

    __slots__ = ()

    def __len__(self):
        return len(self.y)


def iter_svmlight(path: str, rows: int = 2048, entries: int = 1 << 16,
                  chunk_bytes: int = 1 << 18, progress: Any = None) -> Iterator[RowBlock]:
    """The documents of an SVMlight file as a stream of RowBlocks of at most ``rows`` documents.

    The same parser, grammar and errors as load_svmlight, in one pass over
    the file (pipes and compressed files too) with memory independent of
    its size: a block of bytes and arrays for ``rows`` documents and
    ``entries`` features (grown only for a line with more features).
    The defaults (1 MB in all) stay in the CPU's caches and cost little to
    allocate: at 2,000 documents, 8,192 rows, 262,144 entries and 1 MB of bytes
    (4.3 MB) took 18 ms a run where these take 10, the first touch of each new
    page being most of the difference; at 500k documents they are as fast.

    Raises
    ------
    InputError
        As load_svmlight.
    """
    line_offset = 0
    with open_binary(path) as stream:
        size = plain_size(stream)
        if size is not None:        # a small file: arrays and buffer to its size (a line
            rows = min(rows, size // 2 + 1)           # takes 2 bytes at least, a feature 4)
            entries = min(entries, size // 4 + 1)
            chunk_bytes = min(chunk_bytes, size + 1)
        arrays = Rows(rows, entries)
        for block in _blocks(stream, path, _svmlight.empty_bytearray(chunk_bytes), progress=progress):
            while len(block):
                n, nnz, error, error_line, start, end, consumed, _ = _svmlight.parse_into(
                    block, 0, 0, arrays.y, arrays.qid, arrays.line, arrays.indptr,
                    arrays.indices, arrays.values, None, None, line_offset + 1)
                if error and error != ERR_FULL:
                    raise InputError(path, line_offset + error_line + 1,
                                     reason(error, block[start:end]))
                if error == ERR_FULL and n == 0:       # one line with more features than room
                    arrays = Rows(rows, 2 * len(arrays.values))
                    continue
                yield arrays.block(n, nnz)
                line_offset += error_line
                block = block[consumed:]


def plain_size(stream: Any) -> Any:
    """Bytes left to read in a stream that can be rewound (a plain file), else None.

    Lets readers size their buffers to a small file: zeroing megabytes takes
    longer than reading it.  A file that grows meanwhile is still read whole
    (buffers grow for long lines; arrays fill and are reused).  The stream is
    left where it was.
    """
    if not (isinstance(stream, io.BufferedReader) and stream.seekable()):
        return None
    start = stream.tell()
    end = stream.seek(0, io.SEEK_END)
    stream.seek(start)
    return end - start


def _blocks(stream, path, buffer, progress=None, spare=None):
    """Successive blocks of the stream read into buffer, each ending at a line end (but the last).

    A line longer than the buffer makes a bigger one (the caller's stays as it is).
    A UTF-8 byte order mark at the start is skipped.  ``progress(bytes)`` is
    called after each read.

    Without ``spare`` a block is yielded as soon as a read gives a line end,
    and the next one is read into the same buffer.  With ``spare`` (a list to
    which the caller gives back the buffers, ``block.obj``, it is done with)
    each block fills its buffer and stays there for the caller to keep (a
    thread parsing it): the next is read into a spare buffer, or a new one,
    after the unfinished line, the only bytes copied.
    """
    view = memoryview(buffer)
    filled = total = 0
    bom_checked = False
    while True:
        try:
            got = stream.readinto(view[filled:])
        except read_errors() as exc:
            raise InputError(path, None, f"cannot read: {exc}") from None
        if got:
            total += got
            if progress is not None:
                progress(total)
            filled += got
        if not bom_checked and (filled >= len(BOM) or not got):
            bom_checked = True           # (bytes past filled were never read: not initialised)
            if filled >= len(BOM) and buffer[:len(BOM)] == BOM:
                buffer[:filled - len(BOM)] = buffer[len(BOM):filled]
                filled -= len(BOM)
        if not got:
            if filled:
                yield view[:filled]
            return
        if spare is not None and filled < len(buffer):
            continue
        cut = buffer.rfind(b"\n", 0, filled) + 1
        if cut == 0:
            if filled == len(buffer):                  # one line longer than the buffer
                bigger = _svmlight.empty_bytearray(2 * len(buffer))
                bigger[:filled] = buffer
                buffer, view = bigger, memoryview(bigger)
            continue
        yield view[:cut]
        if spare is not None:
            spent = buffer
            buffer = spare.pop() if spare else _svmlight.empty_bytearray(len(spent))
            if len(buffer) <= filled - cut:       # no room to read after the unfinished line
                buffer = _svmlight.empty_bytearray(len(spent))
            view = memoryview(buffer)
            buffer[:filled - cut] = spent[cut:filled]    # a copy: buffer may be spent, given back
        else:
            buffer[:filled - cut] = buffer[cut:filled]
        filled -= cut


