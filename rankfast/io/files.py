"""Opening inputs (plain, compressed, standard input, pipes) and writing outputs atomically."""
from __future__ import annotations

import io
import os
import stat
import sys

from ..errors import InputError

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

# First bytes of compressed files and the module that opens them (imported only then:
# a run on plain files should not pay for three compression libraries); gzip is read
# with zlib itself (GzipMembers).
GZIP_MAGIC = b"\x1f\x8b"
_MAGIC = (
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "lzma"),
)


class open_binary:
    """Open ``path`` for binary reading; '-' is standard input.

    gzip, bzip2 and xz files are recognised by their first bytes (not by their
    names) and decompressed on the fly.  Used as a context manager; it closes
    what it opened (never standard input).  (A class, not a contextlib
    generator: this module is on every run's path, and contextlib with the
    functools it imports costs ~2.5 ms of a 30 ms rank_classify run.)
    """

    def __init__(self, path: str) -> None:
        self._opened: list = []                      # closed on exit, the last opened first
        try:
            self.stream = self._open(path)
        except BaseException:
            self._close()
            raise

    def __enter__(self):
        return self.stream

    def __exit__(self, *_):
        self._close()

    def _close(self):
        while self._opened:
            self._opened.pop().close()

    def _open(self, path):
        if path == "-":
            if sys.stdin is None:            # started with standard input closed (<&-)
                raise InputError(path, None, "standard input is closed")
            raw = sys.stdin.buffer
            head = raw.peek(6)[:6]
        else:
            if os.path.isdir(path):
                raise InputError(path, None, "is a directory")
            try:
                raw = open(path, "rb")
            except OSError as exc:
                raise InputError(path, None, exc.strerror or str(exc)) from None
            self._opened.append(raw)
            head = raw.read(6)
            if raw.seekable():
                raw.seek(0)
            else:                      # a pipe or FIFO: hand the bytes read back in front
                raw = io.BufferedReader(_Rejoined(head, raw))
        if head.startswith(GZIP_MAGIC):
            self._opened.append(io.BufferedReader(GzipMembers(raw), 1 << 20))
            return self._opened[-1]
        for magic, module in _MAGIC:
            if head.startswith(magic):
                self._opened.append(__import__(module).open(raw, "rb"))
                return self._opened[-1]
        return raw


class GzipMembers(io.RawIOBase):
    """The decompressed bytes of a gzip stream, inflated by zlib a megabyte of input at a time.

    The gzip module inflates 8 to 128 KB a call with Python between the calls;
    zlib releases the GIL while it inflates, and here it is handed a megabyte:
    a 200 MB file reads in 0.78 s of CPU against the gzip module's 1.08 s, and a
    pool can parse meanwhile (load_svmlight on threads).  As gzip
    reads them: concatenated members are one stream and NUL bytes after a member
    are padding; a wrong CRC or length is zlib.error, a stream cut short
    EOFError, anything else after a member OSError.
    """

    INPUT_BYTES = 1 << 20

    def __init__(self, raw: Any) -> None:
        import zlib
        self._zlib, self._raw = zlib, raw
        self._member = zlib.decompressobj(31)          # 16 + 15: a gzip header and trailer
        self._input = b""                              # read from raw, not yet inflated
        self._started = False                          # the member has had input

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        room = len(buffer)
        while room:
            if self._member.eof and not self._next_member():
                return 0
            if not self._input:
                self._input = self._raw.read(self.INPUT_BYTES)
                if not self._input:
                    if self._started:
                        raise EOFError("Compressed file ended before the end-of-stream "
                                       "marker was reached")
                    return 0
            self._started = True
            out = self._member.decompress(self._input, room)
            self._input = self._member.unconsumed_tail or self._member.unused_data
            if out:
                buffer[:len(out)] = out
                return len(out)
        return 0

    def _next_member(self):
        """After a member's end: start the next one; False at the end of the stream."""
        rest = self._input
        while True:
            rest = rest.lstrip(b"\x00")
            if rest:
                break
            rest = self._raw.read(self.INPUT_BYTES)
            if not rest:
                return False
        if len(rest) < 2:
            rest += self._raw.read(1)
        if not rest.startswith(GZIP_MAGIC):
            raise OSError(f"not a gzip member after the end of the last one ({rest[:2]!r})")
        self._member, self._input, self._started = self._zlib.decompressobj(31), rest, True
        return True


class _Rejoined(io.RawIOBase):
    """A stream that cannot seek, read from its start again: the bytes already taken, then the rest."""

    def __init__(self, head, rest):
        self._head, self._rest = bytes(head), rest

    def readable(self):
        return True

    def readinto(self, buffer):
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n], self._head = self._head[:n], self._head[n:]
            return n
        return self._rest.readinto(buffer)


def check_output(path: str, inputs: Any = ()) -> None:
    """Raise the InputError that writing ``path`` would raise, before any work is done.

    A missing or unwritable directory, a directory, a read-only file: each is
    reported by the programs before they train or classify.  Checked by
    creating (and at once removing) a temporary file where atomic_output
    will, so a read-only file system or an ACL counts too.  Nothing is
    created for outputs written in place (devices, FIFOs): only their
    permission is checked.  ``inputs``: the run's input files; an output that
    is one of them (``rank_classify test model model``) would destroy it, and
    is refused (regular files only: a terminal may be input and output).
    """
    if os.path.isdir(path):
        raise InputError(path, None, "cannot write: is a directory")
    for source in inputs:
        if os.path.isfile(path) and source != "-" and os.path.isfile(source) \
                and os.path.samefile(path, source):
            raise InputError(path, None, f"cannot write: it is also the input file {source}, "
                                         f"which writing would destroy")
    if _written_in_place(path):
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise InputError(path, None, "cannot write: Permission denied")
        return
    target = _replaceable_target(path)
    fd, tmp = _temporary_beside(path, target)
    os.close(fd)
    os.unlink(tmp)


class atomic_output:
    """Write ``path`` so that a failed run never leaves it half-written.

    A regular file (or a new one) is written as a temporary file
    (``.rankfast-XXXXXX``) beside it, flushed to disk (fsync) and renamed into
    place on success; on any exception, KeyboardInterrupt included (the
    programs turn SIGTERM into one), the temporary file is removed and
    ``path`` is untouched.  A kill that cannot be caught (SIGKILL, a power
    cut before the rename) can leave the temporary file behind; ``path``
    itself is then either the old file or the new one, never a mix.

    A symbolic link is followed, so the file it points to is replaced and the
    link stays.  The rename gives ``path`` a new inode: a hard link's other
    names keep the old content.  An existing file keeps its permission bits;
    a read-only one is refused (InputError), not replaced.  Anything else (a
    device such as /dev/stdout, a FIFO, a /proc or /dev/fd path) cannot be
    replaced and is written in place, as svm_rank writes every output.
    """

    def __init__(self, path: str, mode: str = "w") -> None:
        self.path, self._mode = path, mode
        self._text = {} if "b" in mode else {"encoding": "utf-8", "newline": "\n"}
        self._tmp = self._target = None             # the temporary file and what it replaces

    def __enter__(self):
        if _written_in_place(self.path):
            try:
                self._out = open(self.path, self._mode, **self._text)
            except OSError as exc:
                raise self._cannot_write(exc) from None
            return self._out
        self._target = _replaceable_target(self.path)
        fd, self._tmp = _temporary_beside(self.path, self._target)
        try:
            self._out = os.fdopen(fd, self._mode, **self._text)
        except BaseException:
            os.close(fd)
            _remove_quietly(self._tmp)
            raise
        return self._out

    def __exit__(self, exc_type, exc, tb):
        failure = exc                     # the block's exception, else the closing's
        try:
            self._close(keep=exc is None)
        except BaseException as error:
            failure = failure or error
        if failure is None:
            return False
        if self._tmp is not None:
            _remove_quietly(self._tmp)
        if isinstance(failure, OSError):            # a full disk, a directory in the way, ...
            raise self._cannot_write(failure) from None
        if failure is exc:
            return False                            # the block's exception goes on
        raise failure

    def _close(self, keep):
        """Close the output; if keep, put the temporary file in place (on disk first), or hand
        it to the open deferred_outputs, which puts it in place when the run succeeds."""
        try:
            if keep and self._tmp is not None:
                self._out.flush()
                os.fsync(self._out.fileno())    # the data is on disk before the name points to it
        finally:
            self._out.close()
        if keep and self._tmp is not None:
            os.chmod(self._tmp, _mode_of(self._target))
            if _pending:
                _pending[-1].append((self._tmp, self._target))
            else:
                os.replace(self._tmp, self._target)

    def _cannot_write(self, exc):
        return InputError(self.path, None, f"cannot write: {exc.strerror or exc}")


_pending: list = []          # the open deferred_outputs' finished files: [(temporary, target)]


class deferred_outputs:
    """Within the block, the files atomic_output finishes are put in place only when the
    block ends without an exception; on any exception (KeyboardInterrupt and SIGTERM
    included) they are removed and every output keeps its old content.

    The programs run in one: a run that fails after it wrote an output (a click log
    refused when the predictions are written, Ctrl-C while the summary prints) leaves
    no output it did not finish, and an existing one untouched.  Outputs written in
    place (devices, FIFOs) cannot wait.
    """

    def __enter__(self):
        _pending.append([])
        self._discard = False
        return self

    def discard(self) -> None:
        """At the end of the block, remove the finished outputs instead (a run that failed)."""
        self._discard = True

    def __exit__(self, exc_type, exc, tb):
        finished = _pending.pop()
        if exc_type is not None or self._discard:
            for tmp, _ in finished:
                _remove_quietly(tmp)
            return False
        for done, (tmp, target) in enumerate(finished):
            try:
                os.replace(tmp, target)
            except BaseException as error:          # SIGTERM (KeyboardInterrupt) included
                for rest, _ in finished[done:]:
                    _remove_quietly(rest)
                if isinstance(error, OSError):
                    raise InputError(target, None,
                                     f"cannot write: {error.strerror or error}") from None
                raise
        return False


def _remove_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _replaceable_target(path):
    """The file a rename will replace (symbolic links followed); refuses a read-only one."""
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return target                                       # a new file
    if stat.S_ISDIR(mode):
        raise InputError(path, None, "cannot write: is a directory")
    if not (mode & 0o222 and os.access(target, os.W_OK)):  # root passes access(): look at the bits
        raise InputError(path, None, "cannot write: the file is read-only")
    return target


def _temporary_beside(path, target):
    """(fd, name) of a new file in the target's directory, or the InputError naming ``path``.

    As tempfile.mkstemp (a random name created with O_EXCL, mode 0600), without
    importing tempfile (and random, shutil, ...) on every run.
    """
    directory = os.path.abspath(os.path.dirname(target) or ".")
    while True:
        name = os.path.join(directory, ".rankfast-" + os.urandom(6).hex())
        try:
            return os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                           0o600), name
        except FileExistsError:
            continue
        except OSError as exc:
            raise InputError(path, None, f"cannot write: {exc.strerror or exc}") from None


def _written_in_place(path):
    """True for outputs that renaming would break: devices, FIFOs, /dev and /proc paths."""
    if os.path.abspath(path).startswith(("/dev/", "/proc/")):
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)     # follows symbolic links
    except OSError:
        return False                                        # a new file (or a broken link)


def _mode_of(target):
    """Permission bits for the output: the existing file's, else what the umask allows."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
