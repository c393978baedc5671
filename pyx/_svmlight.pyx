"""SVMlight / svm_rank line parser: a chunk of bytes in, CSR arrays out.

Grammar of one line (the data part ends at the first '#'):
    <target> [qid:N] [sid:N] [cost:F] idx:val ... [# comment]
Blank lines, whitespace-only lines and comment-only lines are skipped.
The kernel only parses; ``rankfast.data`` turns error codes into messages.
"""
import numpy as np

from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport free, malloc, strtod
from libc.string cimport memcpy
from libc.math cimport isfinite

# Error codes (mirrored in rankfast/data.py).
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

cdef int64_t MAX_INDEX = 2147483647
cdef uint64_t MAX_EXACT = 9007199254740992  # 2**53
cdef double POW10[23]
cdef int _k
POW10[0] = 1.0
for _k in range(1, 23):
    POW10[_k] = POW10[_k - 1] * 10.0


cdef struct ParseResult:
    Py_ssize_t rows
    Py_ssize_t nnz
    int error
    Py_ssize_t error_line       # 0-based line within the chunk
    Py_ssize_t error_start      # token span within the chunk
    Py_ssize_t error_end


cdef inline bint is_blank(unsigned char c) noexcept nogil:
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


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


cdef inline bint parse_double(const unsigned char* s, const unsigned char* end,
                              double* out) noexcept nogil:
    """Decimal fast path (exact: Clinger), strtod for everything else (hex, long)."""
    cdef const unsigned char* p = s
    cdef bint negative = False
    cdef uint64_t mantissa = 0
    cdef int digits = 0, frac = 0, exponent = 0, exp_sign = 1, exp_digits = 0
    cdef int e10
    cdef double v
    if p < end and (p[0] == 43 or p[0] == 45):    # '+' '-'
        negative = p[0] == 45
        p += 1
    while p < end and is_digit(p[0]):
        mantissa = mantissa * 10 + (p[0] - 48)
        digits += 1
        p += 1
    if p < end and p[0] == 46:                     # '.'
        p += 1
        while p < end and is_digit(p[0]):
            mantissa = mantissa * 10 + (p[0] - 48)
            digits += 1
            frac += 1
            p += 1
    if digits == 0 or digits > 19:
        return strtod_token(s, end, out)
    if p < end and (p[0] == 101 or p[0] == 69):    # 'e' 'E'
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
            return strtod_token(s, end, out)
    if p != end:
        return strtod_token(s, end, out)
    e10 = exp_sign * exponent - frac
    if mantissa == 0:
        out[0] = -0.0 if negative else 0.0
        return True
    if mantissa > MAX_EXACT or e10 < -22 or e10 > 22:
        return strtod_token(s, end, out)
    v = <double>mantissa
    if e10 >= 0:
        v = v * POW10[e10]
    else:
        v = v / POW10[-e10]
    out[0] = -v if negative else v
    return True


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
                             double* labels, int64_t* qids, int64_t* line_of_row,
                             int64_t* indptr, int32_t* indices, double* values,
                             int64_t* comment_start, int64_t* comment_end) noexcept nogil:
    """Parse every complete line of buf[0:size] (the last may lack '\\n')."""
    cdef ParseResult r
    cdef Py_ssize_t pos = 0, line = 0, nnz = 0, rows = 0
    cdef const unsigned char* start
    cdef const unsigned char* stop
    cdef const unsigned char* data_end
    cdef const unsigned char* p
    cdef const unsigned char* tok
    cdef const unsigned char* tok_end
    cdef const unsigned char* colon
    cdef const unsigned char* hash_pos
    cdef double value
    cdef int64_t index, previous, qid, ignored
    cdef bint has_qid
    r.error = OK
    r.error_start = 0
    r.error_end = 0
    indptr[0] = 0
    while pos < size:
        start = buf + pos
        stop = start
        hash_pos = NULL
        while stop < buf + size and stop[0] != 10:
            if stop[0] == 35 and hash_pos == NULL:     # '#'
                hash_pos = stop
            stop += 1
        pos = (stop - buf) + 1
        data_end = hash_pos if hash_pos != NULL else stop
        p = start
        while p < data_end and is_blank(p[0]):
            p += 1
        if p == data_end:                              # blank or comment line
            line += 1
            continue
        # target
        tok = p
        while p < data_end and not is_blank(p[0]):
            p += 1
        if not parse_double(tok, p, &value):
            r.error = ERR_TARGET
            r.error_start = tok - buf
            r.error_end = p - buf
            break
        if not isfinite(value):
            r.error = ERR_TARGET_NONFINITE
            r.error_start = tok - buf
            r.error_end = p - buf
            break
        labels[rows] = value
        qid = 0
        has_qid = False
        previous = 0
        while True:
            while p < data_end and is_blank(p[0]):
                p += 1
            if p == data_end:
                break
            tok = p
            colon = NULL
            while p < data_end and not is_blank(p[0]):
                if p[0] == 58 and colon == NULL:       # ':'
                    colon = p
                p += 1
            tok_end = p
            r.error_start = tok - buf
            r.error_end = tok_end - buf
            if colon == NULL:
                r.error = ERR_TOKEN
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
                if not parse_double(colon + 1, tok_end, &value):
                    r.error = ERR_VALUE
                    break
                if not isfinite(value):
                    r.error = ERR_VALUE_NONFINITE
                    break
                indices[nnz] = <int32_t>(index - 1)
                values[nnz] = value
                nnz += 1
                previous = index
            elif span_is(tok, colon, b"qid"):
                if has_qid:
                    r.error = ERR_QID_REPEAT
                    break
                if colon + 1 == tok_end or colon[1] == 43 or not parse_uint(colon + 1, tok_end, 9223372036854775807, &qid):
                    r.error = ERR_QID
                    break
                has_qid = True
            elif span_is(tok, colon, b"sid"):
                if not parse_uint(colon + 1, tok_end, 9223372036854775807, &ignored):
                    r.error = ERR_SID
                    break
            elif span_is(tok, colon, b"cost"):
                if not parse_double(colon + 1, tok_end, &value) or not isfinite(value):
                    r.error = ERR_COST
                    break
            else:
                r.error = ERR_INDEX
                break
        if r.error != OK:
            break
        qids[rows] = qid
        line_of_row[rows] = line
        if comment_start != NULL:
            if hash_pos != NULL:
                comment_start[rows] = (hash_pos - buf) + 1
                p = stop
                while p > hash_pos + 1 and (p - 1)[0] == 13:   # drop a trailing '\r'
                    p -= 1
                comment_end[rows] = p - buf
            else:
                comment_start[rows] = -1
                comment_end[rows] = -1
        rows += 1
        indptr[rows] = nnz
        line += 1
    r.rows = rows
    r.nnz = nnz
    r.error_line = line
    return r


cdef inline void count_bytes(const unsigned char* buf, Py_ssize_t size,
                             Py_ssize_t* newlines, Py_ssize_t* colons) noexcept nogil:
    cdef Py_ssize_t i, nl = 0, co = 0
    for i in range(size):
        if buf[i] == 10:
            nl += 1
        elif buf[i] == 58:
            co += 1
    newlines[0] = nl
    colons[0] = co


def parse_chunk(const unsigned char[::1] buf, bint comments):
    """Parse the lines of one chunk.

    Returns (labels, qids, line_of_row, indptr, indices, values, comments,
    error, error_line, error_start, error_end); line_of_row and error_line
    count physical lines from 0 within the chunk; comments is None or a pair
    (start, end) of byte offsets of each row's comment text (-1: none).
    """
    cdef Py_ssize_t size = buf.shape[0], newlines, colons
    with nogil:
        count_bytes(&buf[0] if size else NULL, size, &newlines, &colons)
    cdef Py_ssize_t max_rows = newlines + 1
    labels = np.empty(max_rows, dtype=np.float64)
    qids = np.empty(max_rows, dtype=np.int64)
    line_of_row = np.empty(max_rows, dtype=np.int64)
    indptr = np.empty(max_rows + 1, dtype=np.int64)
    indices = np.empty(max(colons, 1), dtype=np.int32)
    values = np.empty(max(colons, 1), dtype=np.float64)
    comment_start = np.empty(max_rows if comments else 1, dtype=np.int64)
    comment_end = np.empty(max_rows if comments else 1, dtype=np.int64)
    cdef double[::1] lab = labels
    cdef int64_t[::1] qv = qids
    cdef int64_t[::1] lv = line_of_row
    cdef int64_t[::1] ip = indptr
    cdef int32_t[::1] iv = indices
    cdef double[::1] vv = values
    cdef int64_t[::1] csv = comment_start
    cdef int64_t[::1] cev = comment_end
    cdef int64_t* cs = &csv[0] if comments else NULL
    cdef int64_t* ce = &cev[0] if comments else NULL
    cdef ParseResult r
    with nogil:
        r = parse_lines(&buf[0] if size else NULL, size, &lab[0], &qv[0], &lv[0],
                        &ip[0], &iv[0], &vv[0], cs, ce)
    return (labels[:r.rows], qids[:r.rows], line_of_row[:r.rows],
            indptr[:r.rows + 1], indices[:r.nnz], values[:r.nnz],
            (comment_start[:r.rows], comment_end[:r.rows]) if comments else None,
            r.error, r.error_line, r.error_start, r.error_end)
