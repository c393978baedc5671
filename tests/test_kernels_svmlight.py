"""The svmlight parser's number conversion (rankfast._kernels._svmlight) against strtod,
bit for bit.

Random tokens of every shape the grammar allows (digits, leading zeros, signs, '.5',
'5.', exponents with signs and padding, values from 1e-330 to 1e307) go through
parse_into in one file; hard cases (halfway points, 17+ digits, subnormals, the limits
of the exponent range) through number_of and parse_into."""

import struct
from decimal import Decimal

import numpy as np
import pow5_table
import pytest
from data_makers import bits

from rankfast._kernels import _svmlight

N_TOKENS = 2_000_000


class _Fields:
    """n lines built field by field: each field a width per line and its characters."""

    def __init__(self, n):
        self.n = n
        self.fields = []

    def add(self, widths, chars):
        widths = np.broadcast_to(np.asarray(widths, dtype=np.int64), (self.n,))
        chars = np.asarray(chars, dtype=np.uint8)
        if chars.ndim == 1:                       # a constant
            chars = np.broadcast_to(chars, (self.n, len(chars)))
        self.fields.append((widths, chars))

    def tobytes(self):
        """Every field in its own columns, left-aligned; the bytes within each width, in order."""
        chars = np.concatenate([c for _, c in self.fields], axis=1)
        keep = np.concatenate([np.arange(c.shape[1])[None, :] < w[:, None] for w, c in self.fields],
                              axis=1)
        return chars[keep].tobytes()


def digit_matrix(values, width):
    """Right-aligned decimal digits of non-negative ints as an (n, width) uint8 matrix."""
    out = np.empty((len(values), width), dtype=np.uint8)
    rest = values.copy()
    for j in range(width - 1, -1, -1):
        out[:, j] = 48 + rest % 10
        rest //= 10
    return out


def random_tokens_file(rng, n, low, high):
    """A file of n lines '0 1:<token>' with random decimal tokens of value ~10**[low, high]."""
    f = _Fields(n)
    f.add(4, np.frombuffer(b"0 1:", np.uint8))
    sign = rng.choice(np.frombuffer(b"+--", np.uint8), n)
    f.add(rng.random(n) < 0.4, sign[:, None])
    nd = rng.integers(1, 26, n)                              # significant digits
    near = rng.random(n) < 0.3                               # more near 17..20 digits
    nd[near] = rng.integers(15, 21, int(near.sum()))
    digits = rng.integers(48, 58, (n, 25), dtype=np.uint8)
    digits[:, 0] = rng.integers(49, 58, n)                   # a nonzero first digit
    ni = (rng.random(n) * (nd + 1)).astype(np.int64)         # digits before the point
    nf = nd - ni
    lz = np.where(rng.random(n) < 0.1, rng.integers(1, 4, n), 0)
    f.add(lz, np.full(3, 48, np.uint8))                      # leading zeros: 007.5
    f.add(ni, digits)
    point = (nf > 0) | (rng.random(n) < 0.2)                 # '5.' too
    f.add(point, np.frombuffer(b".", np.uint8))
    fz = np.where((ni == 0) & (rng.random(n) < 0.5), rng.integers(1, 6, n), 0)
    f.add(fz, np.full(5, 48, np.uint8))                      # 0.000123
    fraction = rng.integers(48, 58, (n, 25), dtype=np.uint8)
    fraction[:, 0] = np.where(ni == 0, digits[:, 0], fraction[:, 0])
    f.add(nf, fraction)
    # exponent so that the value's decimal magnitude is uniform in [low, high]
    magnitude = rng.integers(low, high + 1, n)
    leading = np.where(ni > 0, ni - 1, -fz - 1)              # magnitude without an exponent
    e10 = magnitude - leading
    has_exp = rng.random(n) < 0.8
    e10 = np.where(has_exp, e10, 0)
    f.add(has_exp, rng.choice(np.frombuffer(b"eE", np.uint8), n)[:, None])
    exp_sign = np.where(e10 < 0, ord("-"), ord("+")).astype(np.uint8)
    f.add(has_exp & ((e10 < 0) | (rng.random(n) < 0.3)), exp_sign[:, None])
    absexp = np.abs(e10)
    width = 1 + (absexp >= 10) + (absexp >= 100) + np.where(rng.random(n) < 0.1, 1, 0)   # e+05
    f.add(np.where(has_exp, width, 0), _right_aligned(absexp, width))
    f.add(1, np.frombuffer(b"\n", np.uint8))
    return f.tobytes()


def _right_aligned(values, width):
    """Row i: the last width[i] digits of values[i] (zero-padded), left-aligned in 4 columns."""
    full = digit_matrix(values, 4)
    idx = (4 - width)[:, None] + np.arange(4)[None, :]
    return np.take_along_axis(full, np.minimum(idx, 3), axis=1)


def parse(buf, dtype):
    newlines, colons = _svmlight.count_bytes_of(buf)
    rows = newlines + 1
    y, qid, line = np.empty(rows), np.empty(rows, np.int64), np.empty(rows, np.int64)
    indptr, indices = np.zeros(rows + 1, np.int64), np.empty(max(colons, 1), np.int32)
    values = np.empty(max(colons, 1), dtype)
    result = _svmlight.parse_into(buf, 0, 0, y, qid, line, indptr, indices, values)
    return result, values[:result[1]]


def reference(buf):
    tokens = buf.split()[1::2]                                 # '1:<token>'
    return np.array([float(t[2:]) for t in tokens]), tokens


def test_pow5_table_is_the_scripts_output():
    with open(pow5_table.PATH) as committed:
        assert committed.read() == pow5_table.text()


def test_random_tokens_float64_match_strtod_bit_for_bit():
    rng = np.random.default_rng(2026)
    buf = random_tokens_file(rng, N_TOKENS, -330, 307)
    result, values = parse(buf, np.float64)
    want, tokens = reference(buf)
    assert result[2] == 0 and result[1] == len(want) == N_TOKENS
    bad = np.flatnonzero(values.view(np.uint64) != want.view(np.uint64))
    assert not len(bad), [(tokens[i], values[i], want[i]) for i in bad[:10]]


def test_a_buffer_ending_in_a_newline_parses_as_one_that_does_not():
    """Digit runs are scanned without testing for the buffer's end when it ends with
    '\\n' (where every run stops), with the test otherwise: the same rows and bits."""
    rng = np.random.default_rng(7)
    buf = random_tokens_file(rng, 200_000, -30, 30) + b"3 qid:12 45:6789"
    (rows, nnz, error, *_), values = parse(buf + b"\n", np.float64)
    (rows2, nnz2, error2, *_), values2 = parse(buf, np.float64)
    assert (rows, nnz, error) == (rows2, nnz2, error2) == (200_001, 200_001, 0)
    assert bits(values) == bits(values2) and values[-1] == 6789


def test_random_tokens_float32_are_the_doubles_rounded():
    rng = np.random.default_rng(2027)
    buf = random_tokens_file(rng, N_TOKENS // 4, -50, 37)
    result, values = parse(buf, np.float32)
    want, tokens = reference(buf)
    assert result[2] == 0 and result[1] == len(want)
    want32 = want.astype(np.float32)
    bad = np.flatnonzero(values.view(np.uint32) != want32.view(np.uint32))
    assert not len(bad), [(tokens[i], values[i], want32[i]) for i in bad[:10]]


def halfway_tokens(rng, n):
    """Decimal texts at, just below and just above the midpoints of adjacent doubles."""
    out = []
    for _ in range(n):
        bits_ = int(rng.integers(1, 0x7FEFFFFFFFFFFFFF, dtype=np.int64))
        if rng.random() < 0.5:                                  # near 1: the Clinger / 19-digit range
            bits_ = 0x3FF0000000000000 + int(rng.integers(-2**56, 2**56))
        lo = struct.unpack("<d", struct.pack("<q", bits_))[0]
        hi = np.nextafter(lo, np.inf)
        mid = (Decimal(lo) + Decimal(float(hi))) / 2             # exact: Decimal has the precision
        text = format(mid, "e")
        mantissa, exp = text.split("e")
        for keep in (17, 18, 19, 20, 25, len(mantissa)):
            digits = mantissa.replace(".", "")[:keep]
            out.append(f"{digits[0]}.{digits[1:]}e{int(exp)}")
            if keep < len(mantissa) - 1:                         # the next decimal up
                up = str(int(digits) + 1)
                shift = len(up) - len(digits)
                out.append(f"{up[0]}.{up[1:]}e{int(exp) + shift}")
    return out


HARD = [
    "9007199254740993", "9007199254740992", "9007199254740994", "9007199254740995",
    "18014398509481986", "18014398509481990", "9007199254740993.0000000000000000001",
    "9007199254740992.9999999999999999999", "4503599627370497.5", "4503599627370496.5",
    "2.2250738585072011e-308", "2.2250738585072012e-308", "2.2250738585072014e-308",
    "2.225073858507201136057409796709131975934819546351645648e-308",
    "4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
    "2.47032822920623272e-324", "5e-324", "1e-324", "3e-324", "1e-400", "-1e-400",
    "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623158079e308",
    "1.7976931348623159e308", "1e309", "-1e309", "1e308", "9.9999999999999999999e307",
    "0.1", "0.100000000000000000000000000001", "0.1000000000000000055511151231257827",
    "0.1000000000000000055511151231257828", "0.30000000000000004", "123456789012345678901234567890",
    "1.00000000000000011102230246251565404236316680908203125",
    "1.00000000000000011102230246251565404236316680908203124",
    "1.00000000000000011102230246251565404236316680908203126",
    "7.2057594037927933e16", "3.4028235677973366e38", "3.4028235677973362e38",
    "1.1754943508222875e-38", "1.4012984643248171e-45", "7.006492321624085e-46",
    "1e22", "1e23", "9007199254740993e-22", "8.98846567431158e307", "-0", "-0.0", "0e999",
    "0.000000000000000000000000000001", "00000000000000000000000000001.5",
    "+.5", "-5.", "5e+05", "5E-0005", "1e-342", "1e-343", "9.999999999999999999e-343",
    "1e308", "1e-308", "123.456e-310", "0.0000000000000000000000000000000000001e300",
]


@pytest.mark.parametrize("token", HARD)
def test_hard_cases_number_of(token):
    assert bits(np.array([_svmlight.number_of(token.encode())])) == bits(np.array([float(token)]))


def test_halfway_points_through_the_reader():
    rng = np.random.default_rng(7)
    tokens = halfway_tokens(rng, 3000) + [t for t in HARD if abs(float(t)) < 1.79e308]
    buf = "".join(f"0 1:{t}\n" for t in tokens).encode()
    result, values = parse(buf, np.float64)
    want = np.array([float(t) for t in tokens])
    assert result[2] == 0 and result[1] == len(tokens)
    bad = np.flatnonzero(values.view(np.uint64) != want.view(np.uint64))
    assert not len(bad), [(tokens[i], values[i], want[i]) for i in bad[:10]]
    small = [t for t in tokens if abs(float(t)) < 3.4e38]
    result, values = parse("".join(f"0 1:{t}\n" for t in small).encode(), np.float32)
    want32 = np.array([float(t) for t in small]).astype(np.float32)
    assert result[2] == 0 and bits(values) == bits(want32)


def test_overflow_is_an_error_as_before():
    for token in ("1.7976931348623159e308", "1e309", "-2e308"):
        result, _ = parse(f"0 1:{token}\n".encode(), np.float64)
        assert result[2] == 8                                 # ERR_VALUE_NONFINITE
