# Numbers as text, the Python side: a whole token read with the data files' grammar
# (number_of, integer_of, over _numbers.pxi's scanner) and a float32 written as model
# files give it (numpy's shortest digits, read back exactly).  Included by _svmlight.pyx
# after the line grammar (where these functions stood when they were one file: the
# parser's loops then compile as before).


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
