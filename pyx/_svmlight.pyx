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

The numbers within a line are read by _numbers.pxi; the reader's buffers are
made by _buffers.pxi and numbers turned to and from text for Python by
_number_text.pxi: included here, one module for Python, in this order (the
order of their functions in the generated C, which the parser's speed follows).
"""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.string cimport memchr
from libc.math cimport NAN, fabs, isfinite

include "_numbers.pxi"

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

ctypedef fused value_t:       # where feature values go: float32 (svm_rank's FVAL) or float64
    float
    double

cdef int64_t MAX_INDEX = 2147483647
# The least double that rounds to inf as a float: FLT_MAX + half its ulp, (2 - 2**-24) * 2**127
# (a tie, and FLT_MAX's significand is odd, so it rounds up).  Smaller ones, e.g. 3.4028235e38
# (how float32's largest value prints), round to FLT_MAX.
cdef double FLOAT32_OVERFLOW = 3.4028235677973366e38

cdef struct ParseResult:
    Py_ssize_t rows
    Py_ssize_t nnz
    Py_ssize_t consumed         # bytes parsed: buf[consumed:] is left (ERR_FULL) or empty
    int error
    Py_ssize_t error_line       # 0-based line within the chunk
    Py_ssize_t error_start      # token span within the chunk
    Py_ssize_t error_end
    int64_t max_index           # the highest feature index of the rows kept (1-based; 0: none)


cdef inline bint all_digits(const unsigned char* s, const unsigned char* end) noexcept nogil:
    while s < end:
        if not is_digit(s[0]):
            return False
        s += 1
    return True


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
                             int64_t* comment_start, int64_t* comment_end,
                             double* costs) noexcept nogil:
    """Parse the lines of buf[0:size] (the last may lack '\\n') in one forward pass.

    Feature values are read as doubles; float values are those rounded (C
    cast, as svm_rank's (FVAL)), and one that would round to inf is
    ERR_VALUE_FLOAT32.

    costs (when not NULL) gets each row's cost: value, NaN where it has none.
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
    cdef double value, cost
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
        cost = NAN
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
                if not parse_double(colon + 1, p, &cost) or not isfinite(cost):
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
        if costs != NULL:
            costs[rows] = cost
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
       digit, are compared an instruction into byte counters, summed every 255 steps
       (faster than the compiler's vectorising of the plain loop: benchmarks/README.md).
       The plain loop, in byte counters over runs of 255 bytes too (a 64-bit counter
       for each comparison was slower), does the rest, and all of it elsewhere. */
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
               int64_t first_line=0, int64_t entries_before=-1, double[::1] costs=None):
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
    comment; costs (if given) each row's cost: value, NaN where it has none; first_line is added to every line number (the line of buf's
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
    cdef double* co = NULL
    if row0 < 0 or nnz0 < 0 or max_rows < 0 or max_nnz < 0:
        raise ValueError("row0 or nnz0 beyond the arrays")
    if comment_start is not None:
        max_rows = min(max_rows, comment_start.shape[0] - row0, comment_end.shape[0] - row0)
        if max_rows < 0:
            raise ValueError("row0 beyond the comment arrays")
        if max_rows > 0:
            cs = &comment_start[row0]
            ce = &comment_end[row0]
    if costs is not None:
        max_rows = min(max_rows, costs.shape[0] - row0)
        if max_rows < 0:
            raise ValueError("row0 beyond the cost array")
        if max_rows > 0:
            co = &costs[row0]
    if size == 0:
        return 0, 0, 0, 0, 0, 0, 0, 0
    with nogil:
        if single:
            r = parse_lines(&buf[0], size, max_rows, max_nnz,
                            &labels[0] + row0, &qids[0] + row0, &lines[0] + row0,
                            &indptr[0] + row0, &indices[0] + nnz0 if max_nnz else NULL,
                            &floats[0] + nnz0 if max_nnz else <float*>NULL, cs, ce, co)
        else:
            r = parse_lines(&buf[0], size, max_rows, max_nnz,
                            &labels[0] + row0, &qids[0] + row0, &lines[0] + row0,
                            &indptr[0] + row0, &indices[0] + nnz0 if max_nnz else NULL,
                            &doubles[0] + nnz0 if max_nnz else <double*>NULL, cs, ce, co)
        if entries_before < 0:
            entries_before = nnz0
        for i in range(row0 + 1, row0 + r.rows + 1):
            indptr[i] += entries_before
        if first_line:
            for i in range(row0, row0 + r.rows):
                lines[i] += first_line
    return (r.rows, r.nnz, r.error, r.error_line, r.error_start, r.error_end, r.consumed,
            r.max_index)


include "_buffers.pxi"
include "_number_text.pxi"
