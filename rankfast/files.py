"""Opening inputs (plain, compressed, standard input) and writing outputs atomically."""
import bz2
import contextlib
import gzip
import lzma
import os
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
            raw.seek(0)
        for magic, opener in _MAGIC:
            if head.startswith(magic):
                yield stack.enter_context(opener(raw, "rb"))
                return
        yield raw


@contextlib.contextmanager
def atomic_output(path, mode="w"):
    """Write to a temporary file beside ``path`` and rename it into place on success.

    On any exception the temporary file is removed and ``path`` is untouched,
    so a failed run never leaves a half-written file.
    """
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".rankfast-", dir=folder)
    except OSError as exc:
        raise InputError(path, None, f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as out:
            yield out
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):          # a full disk, a directory in the way, ...
            raise InputError(path, None, f"cannot write: {exc.strerror or exc}") from None
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
