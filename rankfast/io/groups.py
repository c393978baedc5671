"""Query group files (LightGBM / XGBoost): the sizes of a data file's consecutive queries.

A data file without qids may have ``FILE.query`` or ``FILE.group`` beside it
(or one named by ``--group``), one query size a line.  Both programs use the
queries it gives through :class:`QueryGroups`, which takes a file's qids
block by block in file order, so that rank_classify can apply it to a stream
of documents without holding them (and without numpy).
"""
from __future__ import annotations

import array
import os

from .._kernels import _svmlight
from ..errors import InputError
from ._stream import BOM, read_errors
from .files import open_binary

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    import numpy as np

GROUP_SIDECARS = (".query", ".group")
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")   # train.gz's sizes may be in train.query
_WORD = 8                                   # bytes of an int64 qid
_CHUNK = 1 << 16                            # bytes compared at a time


def sidecar_candidates(path: str) -> list[str]:
    """Where a data file's group sizes may be, in the order they are looked for.

    ``path.query`` and ``path.group``; for a compressed file (``.gz``, ``.bz2``,
    ``.xz``) also the same without that suffix, as the file was named before
    it was compressed (LightGBM's ``rank.train`` with ``rank.train.query``).
    """
    if path == "-":
        return []
    stems = [path] + [path[:-len(suffix)] for suffix in COMPRESSED_SUFFIXES
                      if path.endswith(suffix) and len(path) > len(suffix)]
    return [stem + suffix for stem in stems for suffix in GROUP_SIDECARS]


def group_sidecar(path: str) -> str | None:
    """The first of sidecar_candidates(path) that exists beside a data file, else None.

    Parameters
    ----------
    path : str
        The data file ('-', standard input, has none).

    Returns
    -------
    str or None

    Examples
    --------
    >>> from rankfast.io.groups import group_sidecar
    >>> group_sidecar("-") is None
    True
    """
    return next((candidate for candidate in sidecar_candidates(path)
                 if os.path.isfile(candidate)), None)


def read_group_file(path: str) -> array.array[int]:
    """Group sizes from a LightGBM / XGBoost ``.query`` / ``.group`` file, one size a line.

    Blank lines and a UTF-8 byte order mark are skipped; lines may end in CRLF.

    Parameters
    ----------
    path : str
        The group file (gzip, bzip2 and xz are read transparently).

    Returns
    -------
    array.array of int64 (typecode 'q')
        The sizes, in file order.

    Raises
    ------
    InputError
        A line that is not a positive integer (below 2**63; file and line
        named), or a file that cannot be read.

    Examples
    --------
    >>> import os, tempfile
    >>> from rankfast.io.groups import read_group_file
    >>> path = os.path.join(tempfile.mkdtemp(), "train.txt.query")
    >>> with open(path, "w") as f:
    ...     _ = f.write("3\\n2\\n")
    >>> list(read_group_file(path))
    [3, 2]
    """
    sizes = array.array("q")
    with open_binary(path) as stream:
        try:
            for number, raw in enumerate(stream, start=1):
                if number == 1 and raw.startswith(BOM):
                    raw = raw[len(BOM):]
                token = raw.strip()             # ASCII white space: CRLF line ends too
                if not token:
                    continue
                # ASCII digits, read in compiled code: Python's int() would refuse (with
                # its own ValueError) a token of more than 4300 digits
                size = _svmlight.integer_of(token) if token.isdigit() else None
                if size is None or size < 1:
                    raise InputError(path, number, f"group size {_shown(token)!r} is not a "
                                                   f"positive integer")
                sizes.append(size)
        except read_errors() as exc:
            raise InputError(path, None, f"cannot read: {exc}") from None
    return sizes


def _shown(token):
    """A group file's token as an error message quotes it: at most 40 characters."""
    text = token[:41].decode("ascii", "replace")
    return text if len(token) <= 40 else text[:40] + f"... ({len(token)} bytes)"


class QueryGroups:
    """The queries of a data file, from its group file when the file has no qids.

    Feed the file's qids block by block, in file order, to :meth:`qid`; then
    :meth:`finish` says what was done (or raises).  The rule, as for one
    whole file: a file without qids (all 0) is grouped by ``group_path`` or,
    without one, by ``path.query`` / ``path.group`` beside it; a file with
    qids keeps them (an explicit group file must then give the same runs of
    equal qid); a file with neither is one ranking.

    Memory: the sizes and a few counters, whatever the number of documents.
    Errors of the group file are raised by :meth:`finish`, after the data
    file's own (as when reading a whole file first).

    Parameters
    ----------
    path : str
        The data file ('-': standard input, which has no sidecar).
    group_path : str, optional
        Group file named explicitly (``--group``).

    Attributes
    ----------
    regrouped : bool
        Rows that :meth:`qid` numbered by group turned out to belong to a
        file with qids (lines without qid before the first one that has
        one): figures made from them must be made again from the file's qids.
    """

    def __init__(self, path: str, group_path: Any = None) -> None:
        self.path = path
        self.explicit = group_path is not None
        self.group_path = group_path if self.explicit else group_sidecar(path)
        self.sizes: Any = None
        self.error = None
        if self.group_path is not None:
            try:
                self.sizes = read_group_file(self.group_path)
            except InputError as exc:
                self.error = exc
        self.rows = 0
        self.has_qids = False
        self.numbered = False               # rows already returned with group numbers
        self.regrouped = False
        self.group = 0                      # group of the next row
        self.group_end = self.sizes[0] if self.sizes else 0
        self.mismatch = False               # runs of equal qid differ from the sizes
        self.last = None                    # bytes of the previous row's qid

    def qid(self, qid: Any) -> Any:
        """The qids to group the next rows by.

        Parameters
        ----------
        qid : buffer of int64
            The file's qids of the next rows (C-contiguous).

        Returns
        -------
        buffer of int64
            ``qid`` itself, or (while the file has shown no qid and a group
            file applies) each row's group number, 0 for the first group.
        """
        raw = memoryview(qid).cast("B")
        row, stop = self.rows, self.rows + len(raw) // _WORD
        first, self.rows = row, stop
        if not self.has_qids and _first_nonzero(raw) is not None:
            self.has_qids = True
            self.regrouped = self.numbered
        if self.sizes is None or (self.has_qids and not self.explicit):
            return qid
        numbers = array.array("q")
        while row < stop:
            while self.group < len(self.sizes) and row >= self.group_end:
                self.group += 1
                self.group_end += self.sizes[self.group] if self.group < len(self.sizes) else 0
            end = stop if self.group == len(self.sizes) else min(stop, self.group_end)
            if self.explicit:
                self._check_run(raw[_WORD * (row - first):_WORD * (end - first)], row)
            if not self.has_qids:
                numbers.extend(array.array("q", [self.group]) * (end - row))
            row = end
        if self.has_qids:
            return qid
        self.numbered = True
        return numbers

    def _check_run(self, piece, row):
        """Note whether a piece of the current group (rows from ``row``) continues one run of qid."""
        if self.mismatch or self.group == len(self.sizes):
            return                                  # known already, or beyond the sizes' total
        head = bytes(piece[:_WORD])
        if row == self.group_end - self.sizes[self.group]:      # the group begins here
            continues = self.last is None or head != self.last
        else:
            continues = head == self.last
        if not (continues and _constant(piece)):
            self.mismatch = True
        self.last = bytes(piece[-_WORD:])

    def finish(self) -> str | None:
        """After the last rows: the note to print at -v 1 (or None).

        Returns
        -------
        str or None
            How the file's queries were made, where the user may not expect it.

        Raises
        ------
        InputError
            The group file cannot be read or is malformed, its sizes do not
            add up to the number of documents, or (named explicitly) they do
            not match the file's qids.
        """
        path, group_path, n = self.path, self.group_path, self.rows
        if group_path is None:
            if not self.has_qids and n > 1:
                candidates = sidecar_candidates(path)          # none for standard input
                looked = f" and no {' or '.join(candidates)} file" if candidates else ""
                return f"{path} has no qids{looked}: its {n} documents are one ranking"
            return None
        if self.has_qids and not self.explicit:
            return f"{path} has qids: {group_path} is not used"
        if self.error is not None:
            raise self.error
        total = sum(self.sizes)
        if total != n:
            raise InputError(group_path, None, f"the group sizes add up to {total} "
                                               f"documents, but {path} has {n}")
        if self.has_qids:
            if self.mismatch:
                raise InputError(group_path, None, f"the group sizes do not match the qids of {path}")
            return None
        return f"{path}: {len(self.sizes)} queries from {group_path}"


def _first_nonzero(raw):
    """Row of the first non-zero int64 in a byte view, or None."""
    for offset in range(0, len(raw), _CHUNK):
        chunk = bytes(raw[offset:offset + _CHUNK])
        rest = len(chunk.lstrip(b"\0"))
        if rest:
            return (offset + len(chunk) - rest) // _WORD
    return None


def _constant(raw):
    """Whether the int64 words of a byte view are all equal (the view equals itself shifted by one)."""
    for offset in range(0, max(len(raw) - _WORD, 0), _CHUNK):
        chunk = bytes(raw[offset:offset + _CHUNK + _WORD])
        if chunk[_WORD:] != chunk[:-_WORD]:
            return False
    return True


def read_weight_file(path: str) -> np.ndarray:
    """Weights from a side file, one number a line (LightGBM's ``.weight``; rank_learn --weights).

    One weight per line of the data file or per query, in file order (see
    rankfast.learners._base.query_sample_weights: weights are per query).  Blank lines
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
    >>> from rankfast.io.groups import read_weight_file
    >>> path = os.path.join(tempfile.mkdtemp(), "train.txt.weight")
    >>> with open(path, "w") as f:
    ...     _ = f.write("1\\n2.5\\n")
    >>> read_weight_file(path)
    array([1. , 2.5])
    """
    import io

    import numpy as np
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
