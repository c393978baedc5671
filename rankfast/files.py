"""Opening inputs (plain, compressed, standard input, pipes) and writing outputs atomically."""
import bz2
import contextlib
import gzip
import io
import lzma
import os
import stat
import sys
import tempfile

from .errors import InputError

_MAGIC = (
    (b"\x1f\x8b", gzip.open),
    (b"BZh", bz2.open),
    (b"\xfd7zXZ\x00", lzma.open),
)


@contextlib.contextmanager
def open_binary(path):
    """Open ``path`` for binary reading; '-' is standard input.

    gzip, bzip2 and xz files are recognised by their first bytes (not by their
    names) and decompressed on the fly.  Used as a context manager; it closes
    what it opened (never standard input).
    """
    with contextlib.ExitStack() as stack:
        if path == "-":
            raw = sys.stdin.buffer
            head = raw.peek(6)[:6]
        else:
            if os.path.isdir(path):
                raise InputError(path, None, "is a directory")
            try:
                raw = stack.enter_context(open(path, "rb"))
            except OSError as exc:
                raise InputError(path, None, exc.strerror or str(exc)) from None
            head = raw.read(6)
            if raw.seekable():
                raw.seek(0)
            else:                      # a pipe or FIFO: hand the bytes read back in front
                raw = io.BufferedReader(_Rejoined(head, raw))
        for magic, opener in _MAGIC:
            if head.startswith(magic):
                yield stack.enter_context(opener(raw, "rb"))
                return
        yield raw


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


@contextlib.contextmanager
def atomic_output(path, mode="w"):
    """Write ``path`` so that a failed run never leaves it half-written.

    A regular file (or a new one) is written as a temporary file beside it and
    renamed into place on success; on any exception the temporary file is
    removed and ``path`` is untouched.  A symbolic link is followed, so the
    file it points to is replaced and the link stays; an existing file keeps
    its permission bits.  Anything else (a device such as /dev/stdout, a FIFO,
    a /proc or /dev/fd path) cannot be replaced and is written in place, as
    svm_rank writes every output.
    """
    text = {} if "b" in mode else {"encoding": "utf-8", "newline": "\n"}
    if _written_in_place(path):
        try:
            with open(path, mode, **text) as out:
                yield out
        except OSError as exc:
            raise InputError(path, None, f"cannot write: {exc.strerror or exc}") from None
        return
    target = os.path.realpath(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".rankfast-", dir=os.path.dirname(target))
    except OSError as exc:
        raise InputError(path, None, f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, mode, **text) as out:
            yield out
        os.chmod(tmp, _mode_of(target))
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):          # a full disk, a directory in the way, ...
            raise InputError(path, None, f"cannot write: {exc.strerror or exc}") from None
        raise


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
