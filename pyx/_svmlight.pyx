"""SVMlight / svm_rank line parser: a chunk of bytes in, CSR arrays out.

Grammar of one line (the data part ends at the first '#'):
    <target> [qid:N] [sid:N] [cost:F] idx:val ... [# comment]
Blank lines, whitespace-only lines and comment-only lines are skipped.
The kernel only parses; ``rankfast.data`` turns error codes into messages.
It writes only within the capacity of the arrays it is given: a line that
does not fit ends the parse (ERR_FULL) at that line's start, so a caller can
score or store what was parsed and go on, or report a file that changed
between counting and parsing.  No state outside the arguments: parse_lines
is reentrant and works on any byte range.
"""
from cpython.array cimport array, clone, resize
from cpython.bytearray cimport PyByteArray_FromStringAndSize
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, strtod, strtol
from libc.string cimport memchr, memcpy
from libc.math cimport fabs, fabsf, isfinite, signbit

# Error codes (their messages: rankfast/reader.py).
cdef enum:
    OK = 0
    ERR_TARGET = 1            # target is not a number
    ERR_TARGET_NONFINITE = 2  # target is nan or inf
    ERR_TOKEN = 3             # token is not name:value
    ERR_INDEX = 4             # feature index is not an integer
    ERR_INDEX_RANGE = 5       # feature index outside 1 .. 2**31 - 1
    ERR_INDEX_ORDER = 6       # feature index not above the previous one
    ERR_VALUE = 7             # feature value is not a number
    ERR_VALUE_NONFINITE = 8   # feature value is nan or inf
    ERR_QID = 9               # qid is not an integer in 0 .. 2**63 - 1
    ERR_QID_REPEAT = 10       # second qid on one line
    ERR_SID = 11              # sid is not an integer
    ERR_COST = 12             # cost is not a finite number
    ERR_FULL = 13             # the next line does not fit in the arrays (not a data error)
    ERR_VALUE_FLOAT32 = 14    # feature value rounds to inf in float32 (float32 values only)
    ERR_CR = 15               # a carriage return alone ends a line (old Mac OS line ends)

# What scan_double found: not a number, a number, or a number read without strtod and
# below 2**127 (finite and within float range without looking at it).
cdef enum:
    NOT_A_NUMBER = 0
    NUMBER = 1
    EXACT = 2

ctypedef fused value_t:       # where feature values go: float32 (svm_rank's FVAL) or float64
    float
    double

cdef int64_t MAX_INDEX = 2147483647
cdef uint64_t MAX_EXACT = 9007199254740992  # 2**53
# The least double that rounds to inf as a float: FLT_MAX + half its ulp, (2 - 2**-24) * 2**127
# (a tie, and FLT_MAX's significand is odd, so it rounds up).  Smaller ones, e.g. 3.4028235e38
# (how float32's largest value prints), round to FLT_MAX.
cdef double FLOAT32_OVERFLOW = 3.4028235677973366e38
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


cdef struct ParseResult:
    Py_ssize_t rows
    Py_ssize_t nnz
    Py_ssize_t consumed         # bytes parsed: buf[consumed:] is left (ERR_FULL) or empty
    int error
    Py_ssize_t error_line       # 0-based line within the chunk
    Py_ssize_t error_start      # token span within the chunk
    Py_ssize_t error_end
    int64_t max_index           # the highest feature index of the rows kept (1-based; 0: none)


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


cdef inline bint all_digits(const unsigned char* s, const unsigned char* end) noexcept nogil:
    while s < end:
        if not is_digit(s[0]):
            return False
        s += 1
    return True


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


cdef inline bint line_after_cr(const unsigned char* s, const unsigned char* end) noexcept nogil:
    """True when [s, end) (a comment) holds a carriage return that another line seems to
    follow: after it (and more of them, spaces, tabs), a digit, a sign, a point or '#'.

    Lines ended by CR alone (old Mac OS) make a file one line, all of it after the
    first '#' a comment; svm_rank refuses such a file.  A CR inside a comment
    before other text is left to be part of the comment, as svm_rank leaves it.
    """
    cdef const unsigned char* q
    cdef const unsigned char* cr = <const unsigned char*> memchr(s, 13, end - s)
    while cr != NULL:
        q = cr
        while q < end and is_blank(q[0]):
            q += 1
        if q < end and (is_digit(q[0]) or q[0] == 43 or q[0] == 45 or q[0] == 46 or q[0] == 35):
            return True
        if q >= end:
            return False
        cr = <const unsigned char*> memchr(q, 13, end - q)
    return False


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
    stops, so the loop need not test for the end (6% faster reading of
    LETOR-like lines).

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


cdef inline bint span_is(const unsigned char* s, const unsigned char* end,
                         const char* word) noexcept nogil:
    cdef Py_ssize_t i = 0
    while s + i < end:
        if word[i] == 0 or <unsigned char>word[i] != s[i]:
            return False
        i += 1
    return word[i] == 0


cdef ParseResult parse_lines(const unsigned char* buf, Py_ssize_t size,
                             Py_ssize_t max_rows, Py_ssize_t max_nnz,
                             double* labels, int64_t* qids, int64_t* line_of_row,
                             int64_t* indptr, int32_t* indices, value_t* values,
                             int64_t* comment_start, int64_t* comment_end) noexcept nogil:
    """Parse the lines of buf[0:size] (the last may lack '\\n') in one forward pass.

    Feature values are read as doubles; float values are those rounded (C
    cast, as svm_rank's (FVAL)), and one that would round to inf is
    ERR_VALUE_FLOAT32.

    At most max_rows rows (labels ... indptr[1:max_rows + 1]) and max_nnz
    entries are written; a line that would exceed either stops the parse
    with ERR_FULL, r.consumed at its first byte and nothing of it kept.
    """
    cdef ParseResult r
    cdef const unsigned char* line_start
    cdef Py_ssize_t nnz_start
    cdef const unsigned char* end = buf + size
    cdef const unsigned char* p = buf
    cdef const unsigned char* tok
    cdef const unsigned char* colon
    cdef const unsigned char* stop
    cdef const unsigned char* hash_pos
    cdef Py_ssize_t line = 0, nnz = 0, rows = 0
    cdef double value
    cdef int ok
    cdef int64_t index, previous, qid, ignored, max_index = 0
    cdef uint64_t uindex
    cdef int index_digits
    cdef bint has_qid
    cdef bint to_newline = size > 0 and buf[size - 1] == 10   # every run of digits stops there
    r.error = OK
    r.error_start = 0
    r.error_end = 0
    while p < end:
        while p < end and is_blank(p[0]):
            p += 1
        if p == end:
            break
        if p[0] == 10:                                 # blank line
            p += 1
            line += 1
            continue
        if p[0] == 35:                                 # comment line
            tok = p
            p = <const unsigned char*> memchr(p, 10, end - p)
            p = end if p == NULL else p + 1
            if line_after_cr(tok, p):
                r.error = ERR_CR
                r.error_start = tok - buf
                r.error_end = tok - buf
                break
            line += 1
            continue
        line_start = p
        nnz_start = nnz
        if rows >= max_rows:
            r.error = ERR_FULL
            break
        # target
        tok = p
        stop = scan_double(p, end, to_newline, &value, &ok)
        if not ok or not isfinite(value):
            r.error = ERR_TARGET if not ok else ERR_TARGET_NONFINITE
            r.error_start = tok - buf
            r.error_end = stop - buf
            break
        p = stop
        labels[rows] = value
        qid = 0
        has_qid = False
        if end - p > 5 and p[0] == 32 and p[1] == 113 and p[2] == 105 and p[3] == 100 and p[4] == 58:
            uindex = 0                                 # ' qid:digits', as most lines have
            index_digits = 0
            stop = digit_loop(p + 5, end, to_newline, &uindex, &index_digits)
            if 0 < index_digits <= 18 and is_delim(stop, end):     # below 2**63
                qid = <int64_t>uindex
                has_qid = True
                p = stop
        previous = 0
        hash_pos = NULL
        while True:
            while p < end and is_blank(p[0]):
                p += 1
            if p == end or p[0] == 10:
                break
            if p[0] == 35:                             # '#': the rest is the comment
                hash_pos = p
                p = <const unsigned char*> memchr(p, 10, end - p)
                if p == NULL:
                    p = end
                if line_after_cr(hash_pos, p):
                    r.error = ERR_CR
                    r.error_start = hash_pos - buf
                    r.error_end = hash_pos - buf
                break
            tok = p
            if is_digit(p[0]):                         # idx:value, the common case
                uindex = 0
                index_digits = 0
                p = digit_loop(p, end, to_newline, &uindex, &index_digits)
                index = <int64_t>uindex
                if (p < end and p[0] == 58 and index_digits <= 19 and uindex <= <uint64_t>MAX_INDEX
                        and index > previous):                  # previous >= 0: index >= 1
                    stop = scan_double(p + 1, end, to_newline, &value, &ok)
                    if ok == EXACT or (ok and isfinite(value) and
                                       (value_t is double or fabs(value) < FLOAT32_OVERFLOW)):
                        if nnz >= max_nnz:
                            r.error = ERR_FULL
                            break
                        indices[nnz] = <int32_t>(index - 1)
                        values[nnz] = <value_t>value
                        nnz += 1
                        previous = index
                        p = stop
                        continue
            # anything else: find the token, then classify it (rare tokens and errors)
            p = token_end(tok, end)
            r.error_start = tok - buf
            r.error_end = p - buf
            colon = <const unsigned char*> memchr(tok, 58, p - tok)
            if colon == NULL:                          # '1:0\r0 qid:1': a line ended by CR
                r.error = ERR_CR if tok > buf and (tok - 1)[0] == 13 else ERR_TOKEN
                break
            if is_digit(tok[0]) or tok[0] == 43 or tok[0] == 45:
                if tok[0] == 45:                       # '-': a negative index
                    r.error = ERR_INDEX_RANGE if all_digits(tok + 1, colon) and colon > tok + 1 else ERR_INDEX
                    break
                if not parse_uint(tok, colon, MAX_INDEX, &index):
                    r.error = ERR_INDEX_RANGE if all_digits(tok + (tok[0] == 43), colon) else ERR_INDEX
                    break
                if index < 1:
                    r.error = ERR_INDEX_RANGE
                    break
                if index <= previous:
                    r.error = ERR_INDEX_ORDER
                    break
                if not parse_double(colon + 1, p, &value):
                    r.error = ERR_VALUE
                    break
                if not isfinite(value):
                    r.error = ERR_VALUE_NONFINITE
                    break
                if value_t is float:
                    if fabs(value) >= FLOAT32_OVERFLOW:
                        r.error = ERR_VALUE_FLOAT32
                        break
                if nnz >= max_nnz:
                    r.error = ERR_FULL
                    break
                indices[nnz] = <int32_t>(index - 1)    # '+3:1' and the like
                values[nnz] = <value_t>value
                nnz += 1
                previous = index
            elif span_is(tok, colon, b"qid"):
                if has_qid:
                    r.error = ERR_QID_REPEAT
                    break
                if colon + 1 == p or colon[1] == 43 or not parse_uint(colon + 1, p, 9223372036854775807, &qid):
                    r.error = ERR_QID
                    break
                has_qid = True
            elif span_is(tok, colon, b"sid"):
                if not parse_uint(colon + 1, p, 9223372036854775807, &ignored):
                    r.error = ERR_SID
                    break
            elif span_is(tok, colon, b"cost"):
                if not parse_double(colon + 1, p, &value) or not isfinite(value):
                    r.error = ERR_COST
                    break
            else:
                r.error = ERR_INDEX
                break
        if r.error == ERR_FULL:
            nnz = nnz_start
            p = line_start
        if r.error != OK:
            break
        qids[rows] = qid
        line_of_row[rows] = line
        if previous > max_index:                       # indices increase along a line
            max_index = previous
        if comment_start != NULL:
            if hash_pos != NULL:
                comment_start[rows] = (hash_pos - buf) + 1
                stop = p
                while stop > hash_pos + 1 and (stop - 1)[0] == 13:   # drop a trailing '\r'
                    stop -= 1
                comment_end[rows] = stop - buf
            else:
                comment_start[rows] = -1
                comment_end[rows] = -1
        rows += 1
        indptr[rows] = nnz
        line += 1
        if p < end:
            p += 1                                     # past the '\n'
    r.rows = rows
    r.nnz = nnz
    r.max_index = max_index
    r.error_line = line
    r.consumed = (p - buf) if r.error == ERR_FULL else size
    return r


cdef extern from *:
    """
    /* Newlines, and colons right after a digit (those of idx:value tokens: qid:, sid:,
       cost: and most comments' colons are not counted), in b[0:n]; prev is the byte
       before b (0 at a file's start).  The count places each block of a threaded read
       in the arrays, and the thread doing it shares the cores with the parsers: on
       x86-64 with AVX2 (chosen at run time), 32 bytes and the 32 before them, for the
       digit, are compared an instruction into byte counters, summed every 255 steps,
       4.3 ms for 200 MB just read, where the compiler's vectorising of the plain loop
       took 15.  The plain loop, in byte counters over runs of 255 bytes too (adding
       every comparison into a 64-bit counter ran at a quarter of the speed), does the
       rest, and all of it elsewhere. */
    #if defined(__x86_64__) && defined(__GNUC__)
    #include <immintrin.h>
    #define RANKFAST_AVX2 1
    __attribute__((target("avx2")))
    static Py_ssize_t rankfast_count_avx2(const unsigned char* b, Py_ssize_t n, Py_ssize_t i,
                                          Py_ssize_t* nl, Py_ssize_t* co) {
        const __m256i newline = _mm256_set1_epi8(10), colon = _mm256_set1_epi8(58);
        const __m256i zero = _mm256_set1_epi8(48), nine = _mm256_set1_epi8(9);
        const __m256i none = _mm256_setzero_si256();
        while (n - i >= 32) {
            __m256i lines = none, digit_colons = none, sums;
            Py_ssize_t stop = n - i >= 32 * 255 ? i + 32 * 255 : n - 31;
            for (; i < stop; i += 32) {
                __m256i x = _mm256_loadu_si256((const __m256i*)(b + i));
                __m256i d = _mm256_sub_epi8(_mm256_loadu_si256((const __m256i*)(b + i - 1)), zero);
                __m256i is_digit = _mm256_cmpeq_epi8(_mm256_min_epu8(d, nine), d);
                lines = _mm256_sub_epi8(lines, _mm256_cmpeq_epi8(x, newline));
                digit_colons = _mm256_sub_epi8(
                    digit_colons, _mm256_and_si256(_mm256_cmpeq_epi8(x, colon), is_digit));
            }
            sums = _mm256_sad_epu8(lines, none);
            *nl += _mm256_extract_epi64(sums, 0) + _mm256_extract_epi64(sums, 1)
                   + _mm256_extract_epi64(sums, 2) + _mm256_extract_epi64(sums, 3);
            sums = _mm256_sad_epu8(digit_colons, none);
            *co += _mm256_extract_epi64(sums, 0) + _mm256_extract_epi64(sums, 1)
                   + _mm256_extract_epi64(sums, 2) + _mm256_extract_epi64(sums, 3);
        }
        return i;
    }
    #endif
    static void rankfast_count_bytes(const unsigned char* b, Py_ssize_t n, unsigned char prev,
                                     Py_ssize_t* newlines, Py_ssize_t* colons) {
        Py_ssize_t nl = 0, co = 0, i = 0;
        if (n <= 0) { *newlines = 0; *colons = 0; return; }
        nl += b[0] == 10;
        co += b[0] == 58 && (unsigned char)(prev - 48) < 10;
        i = 1;
    #ifdef RANKFAST_AVX2
        if (__builtin_cpu_supports("avx2"))
            i = rankfast_count_avx2(b, n, i, &nl, &co);
    #endif
        while (i < n) {
            Py_ssize_t stop = n - i < 255 ? n : i + 255, j;
            unsigned char a = 0, c = 0;
            for (j = i; j < stop; j++) {
                a += b[j] == 10;
                c += (b[j] == 58) & ((unsigned char)(b[j - 1] - 48) < 10);
            }
            nl += a;
            co += c;
            i = stop;
        }
        *newlines = nl;
        *colons = co;
    }
    """
    void count_bytes "rankfast_count_bytes"(const unsigned char* buf, Py_ssize_t size,
                                            unsigned char prev, Py_ssize_t* newlines,
                                            Py_ssize_t* colons) noexcept nogil


def count_bytes_of(const unsigned char[::1] buf, unsigned char prev=0):
    """(newlines, colons after a digit) in buf: bounds on the rows and features it can hold.

    ``prev`` is the byte before buf when buf continues a file (0: none), so that
    a file counted in pieces cut anywhere gives the sum of its pieces.
    """
    cdef Py_ssize_t size = buf.shape[0], newlines = 0, colons = 0
    if size:
        with nogil:
            count_bytes(&buf[0], size, prev, &newlines, &colons)
    return newlines, colons


cdef bint holds_floats(object values):
    """Whether values exports a buffer of C floats (numpy float32, array.array("f")).

    parse_into picks its specialisation by this rather than by a fused def
    function's dispatch, which imports numpy (rank_classify reads without it).
    """
    try:
        return memoryview(values).format.lstrip("@=<>!") == "f"
    except TypeError:
        return False


def parse_into(const unsigned char[::1] buf, Py_ssize_t row0, Py_ssize_t nnz0,
               double[::1] labels, int64_t[::1] qids, int64_t[::1] lines,
               int64_t[::1] indptr, int32_t[::1] indices, values,
               int64_t[::1] comment_start=None, int64_t[::1] comment_end=None,
               int64_t first_line=0, int64_t entries_before=-1):
    """Parse the lines of buf into the arrays from row row0 and entry nnz0 on.

    values is float64 or float32 (contiguous): float32 values are the
    doubles read rounded to float, as svm_rank stores them; a value that
    would round to inf there is error ERR_VALUE_FLOAT32 (14).

    Nothing is written beyond the arrays' lengths: when the next line does
    not fit, parsing stops before it with error ERR_FULL (13) and
    ``consumed`` at its first byte (count_bytes_of(buf) more rows (+1) and
    entries always fit).  indptr[row0 + 1:] gets each row's end, counted
    from nnz0 (which indptr[row0] should hold), or from entries_before when
    it is given (the arrays are slices of larger ones, with that many entries
    before them).  lines get 0-based line numbers within buf; comment spans
    (if arrays are given) byte offsets into buf, -1 where a line has no
    comment; first_line is added to every line number (the line of buf's
    start in its file).  Returns (rows, entries,
    error, error_line, error_start, error_end, consumed, max_index); error_line
    is the line of the error (ERR_FULL: of the line left), else buf's line
    count; max_index is the highest feature index (1-based) of the rows
    parsed, 0 if they have none (the matrix's width, without a pass over it).
    """
    cdef float[::1] floats
    cdef double[::1] doubles
    cdef bint single = holds_floats(values)
    if single:
        floats = values
    else:
        doubles = values
    cdef Py_ssize_t size = buf.shape[0], i
    cdef Py_ssize_t max_rows = min(labels.shape[0], qids.shape[0], lines.shape[0],
                                   indptr.shape[0] - 1) - row0
    cdef Py_ssize_t max_nnz = min(indices.shape[0],
                                  floats.shape[0] if single else doubles.shape[0]) - nnz0
    cdef ParseResult r
    cdef int64_t* cs = NULL
    cdef int64_t* ce = NULL
    if row0 < 0 or nnz0 < 0 or max_rows < 0 or max_nnz < 0:
        raise ValueError("row0 or nnz0 beyond the arrays")
    if comment_start is not None:
        max_rows = min(max_rows, comment_start.shape[0] - row0, comment_end.shape[0] - row0)
        if max_rows < 0:
            raise ValueError("row0 beyond the comment arrays")
        if max_rows > 0:
            cs = &comment_start[row0]
            ce = &comment_end[row0]
    if size == 0:
        return 0, 0, 0, 0, 0, 0, 0, 0
    with nogil:
        if single:
            r = parse_lines(&buf[0], size, max_rows, max_nnz,
                            &labels[0] + row0, &qids[0] + row0, &lines[0] + row0,
                            &indptr[0] + row0, &indices[0] + nnz0 if max_nnz else NULL,
                            &floats[0] + nnz0 if max_nnz else <float*>NULL, cs, ce)
        else:
            r = parse_lines(&buf[0], size, max_rows, max_nnz,
                            &labels[0] + row0, &qids[0] + row0, &lines[0] + row0,
                            &indptr[0] + row0, &indices[0] + nnz0 if max_nnz else NULL,
                            &doubles[0] + nnz0 if max_nnz else <double*>NULL, cs, ce)
        if entries_before < 0:
            entries_before = nnz0
        for i in range(row0 + 1, row0 + r.rows + 1):
            indptr[i] += entries_before
        if first_line:
            for i in range(row0, row0 + r.rows):
                lines[i] += first_line
    return (r.rows, r.nnz, r.error, r.error_line, r.error_start, r.error_end, r.consumed,
            r.max_index)


def empty_bytearray(Py_ssize_t n):
    """A bytearray of n bytes, not initialised (bytearray(n) writes n zeros first).

    For read buffers: the read writes every byte that is used, and a fresh
    buffer's pages are then first touched by the read, without the GIL held,
    rather than by zeroing them while holding it (a 4 MB buffer: 2-3 ms,
    during which the threads that would parse wait for the GIL).
    """
    if n < 0:
        raise ValueError("negative size")
    return PyByteArray_FromStringAndSize(NULL, n)


def empty_array(str typecode, Py_ssize_t n):
    """An array.array of n items of typecode, not initialised.

    array.array(typecode, bytes(size)) allocates zeros and copies them, touching
    every page twice; the parser then writes what it uses.  At 2,000 documents
    the reader's arrays (832 KB) took 1.2 ms that way.
    """
    return clone(array(typecode), n, False)


cdef extern from *:
    """
    #define rankfast_array_exports(a) (((arrayobject*)(a))->ob_exports)
    """
    int array_exports "rankfast_array_exports"(array a)


def resize_array(array a, Py_ssize_t n):
    """Make ``a`` (an array.array) n items long, its first items kept, new ones not initialised.

    By realloc, which moves the pages of a buffer malloc has mapped on its own
    (mremap; glibc maps buffers from 128 KB to 32 MB up, as its threshold has
    moved) instead of copying them, so arrays can grow as a file is read
    without a counting pass first, and shrink to what was read.  An array with a buffer exported (a
    memoryview or numpy array of it) raises BufferError, as array.array's own
    resizing does.
    """
    if n < 0:
        raise ValueError("negative size")
    if array_exports(a) > 0:
        raise BufferError("cannot resize an array.array that is exported")
    resize(a, n)


cdef extern from *:
    """
    /* Fault in the whole pages of [start, stop) for writing, in one system call (Linux
       5.14's MADV_POPULATE_WRITE) instead of a page fault each 4 KB page; elsewhere, or
       where the kernel refuses, nothing: the first writes fault them in, as without it.
       No advice on page sizes: the pages are what the system gives by default. */
    #if defined(__linux__)
    #include <sys/mman.h>
    #include <unistd.h>
    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23
    #endif
    #endif
    static void rankfast_populate(char* start, char* stop) {
    #if defined(__linux__)
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t first = ((uintptr_t)start + page - 1) & ~(page - 1);
        uintptr_t last = (uintptr_t)stop & ~(page - 1);
        if (page > 1 && last > first)
            (void)madvise((void*)first, last - first, MADV_POPULATE_WRITE);
    #else
        (void)start; (void)stop;
    #endif
    }
    """
    void populate_span "rankfast_populate"(char* start, char* stop) noexcept nogil


def populate(array a, Py_ssize_t start, Py_ssize_t stop):
    """Fault in the pages of items start .. stop of ``a`` (an array.array) ahead of writing them.

    One system call instead of a page fault for each 4 KB page (the figures:
    benchmarks/README.md, "Without the huge-page policy").  The span is clipped to ``a``.
    """
    cdef Py_ssize_t n = len(a), size = a.ob_descr.itemsize
    start, stop = max(start, 0), min(stop, n)
    if stop > start:
        with nogil:
            populate_span(a.data.as_chars + start * size, a.data.as_chars + stop * size)


def number_of(const unsigned char[::1] token):
    """The value of a whole token read with the data files' number grammar, or None.

    C-locale decimal, hexadecimal, inf and nan as strtod reads them; no
    blanks, underscores or non-ASCII digits (Python's float() takes '1_0'
    and '\u0663').  The caller decides whether non-finite values are allowed.
    """
    cdef double value = 0.0
    cdef Py_ssize_t n = token.shape[0]
    if n == 0:
        return None
    if not parse_double(&token[0], &token[0] + n, &value):
        return None
    return value


def integer_of(const unsigned char[::1] token):
    """The value of a whole token [+-]digits within ±(2**63 - 1), or None."""
    cdef int64_t value = 0
    cdef Py_ssize_t n = token.shape[0]
    cdef bint negative
    if n == 0:
        return None
    negative = token[0] == 45
    if negative:
        if n == 1 or not parse_uint(&token[0] + 1, &token[0] + n, 9223372036854775807, &value):
            return None
        return -value
    if not parse_uint(&token[0], &token[0] + n, 9223372036854775807, &value):
        return None
    return value


# ------------------------------------------------------------------ writing

cdef extern from "stdio.h" nogil:
    int snprintf(char* s, size_t n, const char* fmt, ...)

cdef extern from "stdlib.h" nogil:
    float strtof(const char* s, char** end)


cdef inline bint needs_fallback(float x) noexcept nogil:
    """Values the digit search below may get wrong: powers of two (whose rounding
    interval is narrower below than above), or not finite."""
    cdef uint32_t bits
    memcpy(&bits, &x, 4)
    return (bits & 0x7FFFFF) == 0 and ((bits >> 23) & 0xFF) > 1 or ((bits >> 23) & 0xFF) == 0xFF


cdef extern from "Python.h":
    char* PyOS_double_to_string(double val, char format_code, int precision,
                                int flags, int* type) except NULL
    void PyMem_Free(void* p)


cdef inline bint reads_back(const char* digits, int n, int e, float x) noexcept nogil:
    """Whether d1.d2...dn x 10^e, read by strtof, is x."""
    cdef char buf[40]
    cdef char* stop
    cdef int i, k = 0
    buf[k] = digits[0]
    k += 1
    buf[k] = 46
    k += 1
    for i in range(1, n):
        buf[k] = digits[i]
        k += 1
    buf[k] = 101
    k += 1
    k += write_int(buf + k, e)
    buf[k] = 0
    return fabsf(strtof(buf, &stop)) == fabsf(x)


cdef inline int write_int(char* out, long long v) noexcept nogil:
    """Decimal text of v at out (no terminator); returns its length."""
    cdef char tmp[24]
    cdef int n = 0, k = 0
    cdef unsigned long long u
    if v < 0:
        out[k] = 45
        k += 1
        u = <unsigned long long>(-(v + 1)) + 1
    else:
        u = <unsigned long long>v
    while True:
        tmp[n] = <char>(48 + u % 10)
        n += 1
        u //= 10
        if u == 0:
            break
    while n:
        n -= 1
        out[k] = tmp[n]
        k += 1
    return k


cdef int digits_by_printf(float x, char* digits, int* e) noexcept nogil:
    """The shortest digits of x that read back (and their exponent), by printf.

    The least n for which x's correctly rounded n-digit form reads back as
    x: if the nearest n-digit decimal does, so does the nearest (n+1)-digit
    one (it is at least as near), so n is found by bisection.  Exact
    wherever x's rounding interval is symmetric (needs_fallback).
    """
    cdef char buf[40]
    cdef char* stop
    cdef int n, lo = 1, hi = 9, nd = 0, i
    while lo < hi:                           # 9 digits always read back
        n = (lo + hi) >> 1
        snprintf(buf, 40, b"%.*e", n - 1, <double>fabsf(x))
        if strtof(buf, &stop) == fabsf(x):
            hi = n
        else:
            lo = n + 1
    snprintf(buf, 40, b"%.*e", lo - 1, <double>fabsf(x))
    digits[nd] = buf[0]
    nd += 1
    i = 1
    if buf[i] == 46:
        i += 1
        while buf[i] != 101:
            digits[nd] = buf[i]
            nd += 1
            i += 1
    e[0] = <int>strtol(buf + i + 1, NULL, 10)
    return nd


cdef int digits_by_repr(float x, char* digits, int* e):
    """As digits_by_printf, rounding the digits of repr(float(x)) instead of printing
    each candidate; -1 when that rounding could be wrong (the repr ends in a 5
    right after the digits kept) or repr cannot be had."""
    cdef char* r
    cdef char d[24]
    cdef char cand[12]
    cdef int nd = 0, exp10 = 0, i = 0, point = -1, first = -1, lo = 1, hi = 9, n, k, ce
    cdef int cn
    try:
        r = PyOS_double_to_string(<double>fabsf(x), b"r", 0, 0, NULL)
    except MemoryError:
        return -1
    while r[i] != 0 and r[i] != 101:
        if r[i] == 46:
            point = nd
        else:
            if first < 0 and r[i] != 48:
                first = nd
            if nd < 24:
                d[nd] = r[i]
            nd += 1
        i += 1
    if r[i] == 101:
        exp10 = <int>strtol(r + i + 1, NULL, 10)
    PyMem_Free(r)
    if point < 0:
        point = nd
    if first < 0 or nd > 24:
        return -1
    # value = 0.d[first:] ... : scientific exponent of the first significant digit
    exp10 += point - first - 1
    for i in range(first, nd):
        d[i - first] = d[i]
    nd -= first
    while nd > 1 and d[nd - 1] == 48:
        nd -= 1
    while lo < hi:
        n = (lo + hi) >> 1
        cn = round_digits(d, nd, n, exp10, cand, &ce)
        if cn < 0:
            return -1
        if reads_back(cand, cn, ce, x):
            hi = n
        else:
            lo = n + 1
    cn = round_digits(d, nd, lo, exp10, cand, &ce)
    if cn < 0:
        return -1
    for i in range(cn):
        digits[i] = cand[i]
    e[0] = ce
    return cn


cdef inline int round_digits(const char* d, int nd, int n, int exp10, char* out,
                             int* out_exp) noexcept nogil:
    """d (nd digits, value d1.d2... x 10^exp10) rounded to n digits; -1 on a possible tie."""
    cdef int i, k
    cdef bint up
    if nd <= n:
        for i in range(nd):
            out[i] = d[i]
        out_exp[0] = exp10
        return nd
    if d[n] == 53 and nd == n + 1:
        return -1
    up = d[n] >= 53
    for i in range(n):
        out[i] = d[i]
    out_exp[0] = exp10
    k = n
    if up:
        i = n - 1
        while i >= 0 and out[i] == 57:
            out[i] = 48
            i -= 1
        if i < 0:
            out[0] = 49
            for i in range(1, n):
                out[i] = 48
            out_exp[0] = exp10 + 1
        else:
            out[i] += 1
    while k > 1 and out[k - 1] == 48:
        k -= 1
    return k


cdef int float32_text(float x, char* out):
    """numpy's str(np.float32(x)) without a trailing '.0'; -1 when it must be asked.

    Digits from digits_by_repr (digits_by_printf where that cannot decide),
    laid out as numpy does for float32: positional for 1e-4 <= |x| < 1e6,
    else d.ddde±XX.  -1 also when strtod-then-float (SVM-light's reader)
    would not give x back: the caller writes the exact double then.
    """
    cdef char digits[12]
    cdef int nd, e, i, k = 0
    cdef double ax = fabsf(x)
    cdef char* stop
    if needs_fallback(x):
        return -1
    if x == 0:
        if signbit(x):
            memcpy(out, b"-0", 3)
            return 2
        memcpy(out, b"0", 2)
        return 1
    nd = digits_by_repr(x, digits, &e)
    if nd < 0:
        nd = digits_by_printf(x, digits, &e)
    while nd > 1 and digits[nd - 1] == 48:
        nd -= 1
    if x < 0:
        out[k] = 45
        k += 1
    if 1e-4 <= ax < 1e6:
        if e >= 0:
            for i in range(e + 1):
                out[k] = digits[i] if i < nd else 48
                k += 1
            if nd > e + 1:
                out[k] = 46
                k += 1
                for i in range(e + 1, nd):
                    out[k] = digits[i]
                    k += 1
        else:
            out[k] = 48
            out[k + 1] = 46
            k += 2
            for i in range(-e - 1):
                out[k] = 48
                k += 1
            for i in range(nd):
                out[k] = digits[i]
                k += 1
    else:
        out[k] = digits[0]
        k += 1
        if nd > 1:
            out[k] = 46
            k += 1
            for i in range(1, nd):
                out[k] = digits[i]
                k += 1
        k += snprintf(out + k, 8, b"e%c%02d", <int>(45 if e < 0 else 43), <int>(e if e >= 0 else -e))
    out[k] = 0
    if <float>strtod(out, &stop) != x:
        return -1
    return k


def format_pairs(const int64_t[::1] ids, const double[::1] values, fallback):
    """'id:v id:v ...' with each v as model files write it (``fallback(v)``
    gives the text where float32_text cannot).  values must be finite as float32."""
    cdef Py_ssize_t n = ids.shape[0], i, k = 0
    cdef int m
    cdef bytearray text = bytearray(n * 48)
    cdef char* out = text
    for i in range(n):
        if i:
            out[k] = 32
            k += 1
        k += write_int(out + k, ids[i])
        out[k] = 58
        k += 1
        m = float32_text(<float>values[i], out + k)
        if m < 0:
            word = fallback(values[i]).encode()
            memcpy(out + k, <char*>word, len(word))
            m = len(word)
        k += m
    return text[:k].decode("ascii")
