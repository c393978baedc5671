# Numbers in a line, included by _svmlight.pyx before the line grammar: a token read with
# the data files' number grammar (exactly, as strtod would: Clinger, Eisel-Lemire, strtod
# for the rest).
from libc.stdint cimport int16_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, strtod, strtol
from libc.string cimport memcpy
from libc.math cimport fabsf, signbit

# ------------------------------------------------------------------ reading

# What scan_double found: not a number, a number, or a number read without strtod and
# below 2**127 (finite and within float range without looking at it).
cdef enum:
    NOT_A_NUMBER = 0
    NUMBER = 1
    EXACT = 2

cdef uint64_t MAX_EXACT = 9007199254740992  # 2**53
cdef extern from *:
    """
    /* Powers of ten exact in a double (10**22 < 2**53 * 2**22), as constants the compiler sees. */
    static const double RANKFAST_POW10[23] = {
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    /* 1 and -1 by the sign: a multiplication instead of a branch that a random sign mispredicts. */
    static const double RANKFAST_SIGN[2] = {1.0, -1.0};
    """
    const double POW10 "RANKFAST_POW10"[23]
    const double SIGN "RANKFAST_SIGN"[2]

include "_pow5.pxi"

cdef extern from *:
    """
    /* The high and low words of a * b, and the leading zero bits of a nonzero word. */
    #if defined(__SIZEOF_INT128__)
    static inline uint64_t rankfast_mul64(uint64_t a, uint64_t b, uint64_t* low) {
        unsigned __int128 p = (unsigned __int128)a * b;
        *low = (uint64_t)p;
        return (uint64_t)(p >> 64);
    }
    #else
    static inline uint64_t rankfast_mul64(uint64_t a, uint64_t b, uint64_t* low) {
        uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
        uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
        uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
        *low = (mid << 32) | (uint32_t)p00;
        return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    }
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    static inline int rankfast_clz64(uint64_t x) { return __builtin_clzll(x); }
    #else
    static inline int rankfast_clz64(uint64_t x) { int n = 0; while (!(x >> 63)) { x <<= 1; n++; } return n; }
    #endif
    """
    uint64_t mul64 "rankfast_mul64"(uint64_t a, uint64_t b, uint64_t* low) noexcept nogil
    int clz64 "rankfast_clz64"(uint64_t x) noexcept nogil


cdef extern from *:
    """
    /* Bytes that end a token: blanks (space, tab, CR, VT, FF) are 1, '\\n' and '#' 2. */
    static const unsigned char RANKFAST_DELIMITER[256] = {
        [32] = 1, [9] = 1, [13] = 1, [11] = 1, [12] = 1, [10] = 2, [35] = 2};
    """
    const unsigned char DELIMITER "RANKFAST_DELIMITER"[256]


cdef inline bint is_blank(unsigned char c) noexcept nogil:
    return DELIMITER[c] == 1


cdef inline bint is_digit(unsigned char c) noexcept nogil:
    return c >= 48 and c <= 57


cdef bint strtod_token(const unsigned char* s, const unsigned char* end,
                       double* out) noexcept nogil:
    """Parse [s, end) with the C library's strtod; the whole span must be used."""
    cdef Py_ssize_t n = end - s
    cdef char small[64]
    cdef char* buf = small
    cdef char* stop
    if n <= 0:
        return False
    if n >= 64:
        buf = <char*>malloc(n + 1)
        if buf == NULL:
            return False
    memcpy(buf, s, n)
    buf[n] = 0
    out[0] = strtod(buf, &stop)
    cdef bint whole = (stop - buf) == n and not is_blank(<unsigned char>buf[0])
    if buf != small:
        free(buf)
    return whole


cdef inline bint is_delim(const unsigned char* p, const unsigned char* end) noexcept nogil:
    """True at the end of a token: end of buffer, blank, newline or '#'."""
    return p == end or DELIMITER[p[0]] != 0


cdef inline const unsigned char* token_end(const unsigned char* p,
                                           const unsigned char* end) noexcept nogil:
    while not is_delim(p, end):
        p += 1
    return p


cdef inline const unsigned char* digit_loop(const unsigned char* p, const unsigned char* end,
                                            bint to_newline, uint64_t* value,
                                            int* count) noexcept nogil:
    """Read the decimal digits at p into value (value * 10 + digit each, modulo 2**64)
    and add their number to count; return the first byte after them.

    to_newline: the buffer ends with '\\n' at or after p, where any run of digits
    stops, so the loop need not test for the end (faster on LETOR-like lines:
    benchmarks/README.md).

    One byte at a time: eight at once (SWAR), a 16-byte vector per token, and
    an index of token starts made beforehand with SIMD compares all measured
    slower on LETOR-like lines, whose run lengths the branch predictor learns:
    a word's first non-digit (a ctz) puts the load, compare and count on the
    chain from one token to the next, and the SWAR conversions cost as many
    instructions as the bytes they replace (benchmarks/README.md)."""
    cdef const unsigned char* start = p
    cdef uint64_t v = value[0]
    cdef unsigned int d
    if to_newline:
        while True:
            d = p[0] - 48                          # unsigned: below '0' wraps above 9
            if d > 9:
                break
            v = v * 10 + d
            p += 1
    else:
        while p < end:
            d = p[0] - 48
            if d > 9:
                break
            v = v * 10 + d
            p += 1
    value[0] = v
    count[0] += <int>(p - start)
    return p


cdef inline int eisel_lemire(uint64_t w, int q, bint negative, double* out) noexcept nogil:
    """(-1)**negative * w * 10**q correctly rounded to a double, for 0 < w < 2**64.

    Returns the double's biased binary exponent (1 .. 2046), or 0 when undecided.

    Eisel-Lemire (Lemire, "Number Parsing at a Gigabyte per Second", 2021):
    w, shifted left by its l leading zeros, times T[q] (5**q scaled into
    [2**127, 2**128), |T - exact| < 1: _pow5.pxi) gives w * 10**q = (hi:mid:lo)
    * 2**(F(q) - l - 127 + 1), F = floor(q log2 10), to within 2**64 units of lo.
    The double's 53 bits and its rounding bit are the top 54 bits of hi, below
    them `low`.  The result is only in doubt near a halfway point (rounding bit
    1 and nothing below it); the first product (w times T's high word, short of
    the exact one by under one unit of hi) is enough unless it is within that
    error of one, the second (T's low word) narrows the error to two units of
    mid, and a product still that near a halfway point (exact ties such as
    2**53 + 1 among them) returns 0, as do subnormal, zero and infinite
    results and q outside the table: the caller asks strtod.
    """
    cdef uint64_t hi, mid, lo, carry, mask, r, m, sig, bits
    cdef int l, upper, sh, i
    cdef int64_t biased
    if q < Q_MIN or q > Q_MAX:
        return 0
    i = q - Q_MIN
    l = clz64(w)
    w <<= l
    hi = mul64(w, POW5[2 * i], &mid)
    upper = <int>(hi >> 63)
    sh = 9 + upper
    mask = (<uint64_t>1 << sh) - 1
    r = hi & ((mask << 1) | 1)                     # the rounding bit and those below it
    # Within the first product's error of a halfway point (r = 10..0): r = 01..10 or
    # 01..11, or 10..0 with mid <= 2.  One unsigned test first, as it is rarely true
    # (a branch on the rounding bit itself would be mispredicted half the time).
    if r - (mask - 1) <= 2 and (r != mask + 1 or mid <= 2):
        carry = mul64(w, POW5[2 * i + 1], &lo)
        mid += carry
        hi += mid < carry
        upper = <int>(hi >> 63)
        sh = 9 + upper
        mask = (<uint64_t>1 << sh) - 1
        r = hi & ((mask << 1) | 1)
        if (r == mask + 1 and mid <= 2) or (r == mask and mid >= ~(<uint64_t>3)):
            return 0
    m = hi >> sh                                   # 2**53 <= m < 2**54
    sig = (m + 1) >> 1                             # ties excluded above: half up is nearest
    biased = POW10_EXP[i] - l + upper
    if biased <= 0:                                # subnormal or zero: strtod
        return 0
    if sig == (<uint64_t>1 << 53):
        sig >>= 1
        biased += 1
    if biased >= 2047:                             # overflow: strtod says inf
        return 0
    bits = (<uint64_t>negative << 63) | (<uint64_t>biased << 52) | (sig & ((<uint64_t>1 << 52) - 1))
    memcpy(out, &bits, 8)
    return <int>biased


cdef bint long_decimal(const unsigned char* s, const unsigned char* end, int exp10,
                       double* out) noexcept nogil:
    """The decimal digits[.digits] at s, before end (more than 19 of them) times 10**exp10, or False.

    end bounds the scan: a number ending a block without a newline is
    followed by whatever the buffer held before (it read other digits there).

    The first 19 significant digits make w; if the rest are not all zeros the
    value lies strictly between w and w + 1 (times the same power of ten), and
    when both round to the same double so does it (Lemire 2021, section 11).
    """
    cdef uint64_t w = 0
    cdef int kept = 0, q = exp10
    cdef bint point = False, inexact = False
    cdef double v, upper
    while s < end:
        if s[0] == 46:
            point = True
        elif is_digit(s[0]):
            if kept < 19:
                if w or s[0] != 48:
                    w = w * 10 + (s[0] - 48)
                    kept += 1
                q -= point
            else:
                q += not point
                inexact |= s[0] != 48
        else:
            break
        s += 1
    if w == 0:
        out[0] = 0.0
        return True
    if not eisel_lemire(w, q, False, &v):
        return False
    if inexact and not (eisel_lemire(w + 1, q, False, &upper) and upper == v):
        return False
    out[0] = v
    return True


cdef const unsigned char* scan_number(const unsigned char* s, const unsigned char* end,
                                     double* out, int* ok) noexcept nogil:
    """Parse the number starting at s; return where its token ends.

    Plain decimals are read exactly without strtod: mantissa <= 2**53 and
    |exponent| <= 22 by one correctly rounded multiply or divide (Clinger),
    other mantissas of up to 19 digits by eisel_lemire, longer ones by
    long_decimal; what those leave undecided (exact ties, subnormals,
    overflow), hex, inf and nan go through strtod on the whole token.  ok[0]
    says which: EXACT (read here and below 2**127: finite and within float
    range without looking at it), NUMBER (any other, maybe inf or beyond
    float range) or NOT_A_NUMBER.  Telling EXACT apart lets the caller skip
    the range checks, whose branches would wait for the division.
    """
    cdef const unsigned char* p = s
    cdef const unsigned char* first
    cdef bint negative = False
    cdef uint64_t mantissa = 0
    cdef int digits = 0, frac = 0, exponent = 0, exp_sign = 1, exp_digits = 0
    cdef int e10, biased
    cdef double v
    if p < end and (p[0] == 43 or p[0] == 45):    # '+' '-'
        negative = p[0] == 45
        p += 1
    first = p
    p = digit_loop(p, end, False, &mantissa, &digits)
    if p < end and p[0] == 46:                     # '.'
        p = digit_loop(p + 1, end, False, &mantissa, &frac)
        digits += frac
    if p < end and (p[0] == 101 or p[0] == 69) and digits > 0:    # 'e' 'E'
        p += 1
        if p < end and (p[0] == 43 or p[0] == 45):
            exp_sign = -1 if p[0] == 45 else 1
            p += 1
        while p < end and is_digit(p[0]):
            if exponent < 100000:
                exponent = exponent * 10 + (p[0] - 48)
            exp_digits += 1
            p += 1
        if exp_digits == 0:
            digits = 0                             # '1e': let strtod judge
    if digits == 0 or not is_delim(p, end):
        p = token_end(p, end)
        ok[0] = strtod_token(s, p, out)
        return p
    ok[0] = EXACT
    if digits > 19:                                # mantissa overflowed: read the digits again
        ok[0] = NUMBER
        if long_decimal(first, p, exp_sign * exponent, &v):
            out[0] = -v if negative else v
        else:
            ok[0] = strtod_token(s, p, out)
        return p
    e10 = exp_sign * exponent - frac
    if mantissa == 0:
        out[0] = -0.0 if negative else 0.0
        return p
    if mantissa <= MAX_EXACT and -22 <= e10 <= 22:
        v = <double>mantissa
        if e10 >= 0:
            v = v * POW10[e10]
        else:
            v = v / POW10[-e10]
        out[0] = -v if negative else v
        return p
    biased = eisel_lemire(mantissa, e10, negative, out)
    if biased:
        ok[0] = EXACT if biased < 1023 + 127 else NUMBER
        return p
    ok[0] = strtod_token(s, p, out)
    return p


cdef inline const unsigned char* scan_double(const unsigned char* s, const unsigned char* end,
                                             bint to_newline, double* out, int* ok) noexcept nogil:
    """scan_number, with its common case inline: [-]digits[.digits] of at most 19 digits
    and at most 22 decimals, mantissa <= 2**53, then a delimiter: mantissa / 10**decimals,
    both exact, so the one division rounds correctly (Clinger).  Anything else (exponents,
    signs other than '-', longer mantissas, errors) is read again by scan_number.
    to_newline: as digit_loop's."""
    cdef const unsigned char* p = s
    cdef uint64_t mantissa = 0
    cdef int digits = 0, frac = 0
    cdef int negative
    negative = p < end and p[0] == 45
    p += negative
    p = digit_loop(p, end, to_newline, &mantissa, &digits)
    if p < end and p[0] == 46:
        p = digit_loop(p + 1, end, to_newline, &mantissa, &frac)
        digits += frac
    # 1 to 19 digits, so at most 19 decimals (POW10 goes to 22); one unsigned test for both ends
    if <unsigned int>(digits - 1) > 18 or mantissa > MAX_EXACT or not is_delim(p, end):
        return scan_number(s, end, out, ok)
    out[0] = <double>mantissa / POW10[frac] * SIGN[negative]   # exact: no branch on the sign
    ok[0] = EXACT
    return p


cdef inline bint parse_double(const unsigned char* s, const unsigned char* end,
                              double* out) noexcept nogil:
    """Parse exactly the span [s, end) as a number."""
    cdef int ok = NOT_A_NUMBER
    cdef const unsigned char* stop = scan_double(s, end, False, out, &ok)
    return ok and stop == end


cdef inline bint parse_uint(const unsigned char* s, const unsigned char* end,
                            int64_t limit, int64_t* out) noexcept nogil:
    """Parse [+]digits into 0 .. limit."""
    cdef const unsigned char* p = s
    cdef int64_t v = 0
    cdef int d
    if p < end and p[0] == 43:
        p += 1
    if p == end:
        return False
    while p < end:
        if not is_digit(p[0]):
            return False
        d = p[0] - 48
        if v > (limit - d) // 10:
            return False
        v = v * 10 + d
        p += 1
    out[0] = v
    return True
