"""The SVMlight files bench_reader.py reads: dense and sparse ranking data, written fast.

Seeded: the same --seed gives the same bytes.  Lines are a sequence of fields, each a
constant, a non-negative integer (variable width) or an optional character; widths give
every field's byte offset, and digits are scattered into one uint8 buffer.
"""
import gzip
import shutil

import numpy as np

MB = 1e6

DOCS_PER_QUERY = 50
DENSE_FEATURES = 50
SPARSE_COLUMNS = 10_000
SPARSE_NNZ = 20
ROWS_PER_BLOCK = 50_000          # lines formatted at a time (a multiple of DOCS_PER_QUERY)


# --------------------------------------------------------------------------
# Fast SVMlight text: lines are a sequence of fields, each field a constant,
# a non-negative integer (variable width) or an optional character.  Widths
# give every field's byte offset; digits are scattered into one uint8 buffer.
# --------------------------------------------------------------------------

class _Lines:
    """Builds n lines of text column by column, without a per-value Python loop."""

    def __init__(self, n):
        self.n = n
        self.fields = []            # (kind, payload, widths)

    def const(self, text):
        text = np.frombuffer(text, dtype=np.uint8)
        self.fields.append(("const", text, np.full(self.n, len(text), dtype=np.int64)))

    def integer(self, values, min_digits=1):
        values = np.asarray(values, dtype=np.int64)
        widths = np.full(self.n, min_digits, dtype=np.int64)
        power = 10 ** min_digits
        while power <= values.max():
            widths += values >= power
            power *= 10
        self.fields.append(("int", values, widths))

    def optional(self, mask, char):
        self.fields.append(("opt", char, np.asarray(mask, dtype=np.int64)))

    def tobytes(self):
        widths = np.stack([f[2] for f in self.fields], axis=1)          # (n, fields)
        ends = np.cumsum(widths.ravel()).reshape(widths.shape)
        starts = ends - widths
        out = np.empty(int(ends[-1, -1]), dtype=np.uint8)
        for column, (kind, payload, width) in enumerate(self.fields):
            start = starts[:, column]
            if kind == "const":
                for i, byte in enumerate(payload):
                    out[start + i] = byte
            elif kind == "opt":
                out[start[width > 0]] = ord(payload)
            else:
                rest = payload.copy()
                position = start + width - 1        # last digit first
                for digit in range(int(width.max())):
                    live = width > digit
                    out[position[live]] = 48 + rest[live] % 10
                    rest //= 10
                    position -= 1
        return out.tobytes()


def _dense_block(rng, first_qid, n_queries, exponents, negative_share):
    """Lines of n_queries queries of the dense file."""
    n = n_queries * DOCS_PER_QUERY
    qid = np.repeat(np.arange(first_qid, first_qid + n_queries), DOCS_PER_QUERY)
    doc = np.tile(np.arange(DOCS_PER_QUERY), n_queries)
    lines = _Lines(n)
    lines.integer(rng.integers(0, 5, n))
    lines.const(b" qid:")
    lines.integer(qid)
    # 6 significant digits: mantissa 100000..999999 times 10**-decimals,
    # decimals fixed per feature (0.123456, 1.23456, 12.3456, 123.456).
    mantissa = rng.integers(100_000, 1_000_000, (n, DENSE_FEATURES))
    negative = rng.random((n, DENSE_FEATURES)) < negative_share
    for j, decimals in enumerate(exponents):
        scale = 10 ** int(decimals)
        lines.const(b" %d:" % (j + 1))
        lines.optional(negative[:, j], "-")
        lines.integer(mantissa[:, j] // scale)
        lines.const(b".")
        lines.integer(mantissa[:, j] % scale, min_digits=int(decimals))
    lines.const(b" # d")
    lines.integer(qid)
    lines.const(b"_")
    lines.integer(doc)
    lines.const(b"\n")
    return lines.tobytes()


def _distinct_sorted_columns(rng, n):
    cols = np.sort(rng.integers(0, SPARSE_COLUMNS, (n, SPARSE_NNZ)), axis=1)
    while True:
        bad = np.flatnonzero((np.diff(cols, axis=1) == 0).any(axis=1))
        if len(bad) == 0:
            return cols
        cols[bad] = np.sort(rng.integers(0, SPARSE_COLUMNS, (len(bad), SPARSE_NNZ)), axis=1)


def _sparse_block(rng, first_qid, n_queries):
    """Lines of n_queries queries of the sparse file."""
    n = n_queries * DOCS_PER_QUERY
    qid = np.repeat(np.arange(first_qid, first_qid + n_queries), DOCS_PER_QUERY)
    cols = _distinct_sorted_columns(rng, n) + 1
    micro = rng.integers(0, 1_000_000, (n, SPARSE_NNZ))     # U(0, 1), 6 decimals
    lines = _Lines(n)
    lines.integer(rng.integers(0, 5, n))
    lines.const(b" qid:")
    lines.integer(qid)
    for j in range(SPARSE_NNZ):
        lines.const(b" ")
        lines.integer(cols[:, j])
        lines.const(b":0.")
        lines.integer(micro[:, j], min_digits=6)
    lines.const(b"\n")
    return lines.tobytes()


def generate(path, kind, size_mb, seed):
    """Write about size_mb MB of the 'dense' or 'sparse' file; returns its byte size."""
    rng = np.random.default_rng([seed, 0 if kind == "dense" else 1])
    if kind == "dense":
        exponents = rng.integers(3, 7, DENSE_FEATURES)       # decimals per feature
        block = lambda first, count: _dense_block(rng, first, count, exponents, 0.2)  # noqa: E731
    else:
        block = lambda first, count: _sparse_block(rng, first, count)  # noqa: E731
    target = int(size_mb * MB)
    queries_per_block = ROWS_PER_BLOCK // DOCS_PER_QUERY
    written, qid = 0, 1
    with open(path, "wb") as out:
        while written < target:
            text = block(qid, queries_per_block)
            if written + len(text) > target:      # last block: whole queries up to the size
                ends = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 10)
                query_ends = ends[DOCS_PER_QUERY - 1::DOCS_PER_QUERY] + 1
                keep = np.searchsorted(query_ends, target - written)
                text = text[:query_ends[min(keep, len(query_ends) - 1)]]
            out.write(text)
            written += len(text)
            qid += queries_per_block
    return written


def gzip_copy(src, dst):
    with open(src, "rb") as raw, gzip.open(dst, "wb", compresslevel=6) as packed:
        shutil.copyfileobj(raw, packed, 16 << 20)


# --------------------------------------------------------------------------
# Children: one reader each, reporting JSON on stdout.
# --------------------------------------------------------------------------
