"""Scoring documents with a linear model exactly as svm_rank_classify does."""
from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t
from libc.math cimport isnan

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused column_t:
    int32_t
    int64_t

ctypedef fused value_t:       # feature values: float32 or float64 (rounded to float32 either way)
    float
    double

cdef extern from "stdio.h" nogil:
    int snprintf(char* s, size_t n, const char* fmt, ...)

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* printf's "%.8f" of v, 0 < |v| < 1e10 or v = 0, written at out (no terminator); returns
       its length.  Exact, as glibc's printf: v = m * 2**e (m < 2**53 and, as |v| < 2**52,
       e < 0); q = m * 10**8 * 2**e rounded half to even (m * 10**8 < 2**80 fits 128 bits);
       the digits of q with the point before its last 8.  About 10x faster than snprintf. */
    static int rankfast_format_8f(double v, char* out) {
        uint64_t bits, m, q, whole, frac;
        unsigned __int128 n, rest, half;
        int biased, shift, k = 0, i;
        char digits[20];
        char* p = out;
        memcpy(&bits, &v, sizeof bits);
        biased = (int)((bits >> 52) & 0x7ff);
        m = bits & ((UINT64_C(1) << 52) - 1);
        if (biased) m |= UINT64_C(1) << 52;
        shift = biased ? 1075 - biased : 1074;            /* v = m * 2**-shift, shift > 0 */
        n = (unsigned __int128)m * 100000000u;
        if (shift >= 128) {
            q = 0;                                        /* v * 1e8 < 2**80 * 2**-128 */
        } else {
            q = (uint64_t)(n >> shift);
            rest = n & ((((unsigned __int128)1) << shift) - 1);
            half = ((unsigned __int128)1) << (shift - 1);
            if (rest > half || (rest == half && (q & 1))) q++;
        }
        if (bits >> 63) *p++ = '-';
        whole = q / 100000000u;
        frac = q % 100000000u;
        do { digits[k++] = (char)('0' + whole % 10); whole /= 10; } while (whole);
        while (k) *p++ = digits[--k];
        *p++ = '.';
        for (i = 7; i >= 0; i--) { p[i] = (char)('0' + frac % 10); frac /= 10; }
        return (int)(p + 8 - out);
    }
    """
    int format_8f "rankfast_format_8f"(double v, char* out) nogil


cdef inline Py_ssize_t lower_bound(const int64_t[::1] keys, Py_ssize_t lo,
                                   Py_ssize_t hi, int64_t key) noexcept nogil:
    """First position in keys[lo:hi] (sorted) whose key is >= key."""
    cdef Py_ssize_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t position_from(const int64_t[::1] keys, Py_ssize_t pos,
                                     Py_ssize_t k, int64_t key) noexcept nogil:
    """lower_bound(keys, pos, k, key), looking at keys[pos] and keys[pos + 1] first: a row's
    features in increasing order are mostly the model's next one or two (dense data)."""
    if pos == k or keys[pos] >= key:
        return pos
    if pos + 1 == k or keys[pos + 1] >= key:
        return pos + 1
    return lower_bound(keys, pos + 2, k, key)


cdef void score_rows(const index_t[::1] indptr, const column_t[::1] indices,
                     const value_t[::1] data, const int64_t[::1] feature_ids,
                     const double[::1] weights, double bias, double[::1] out,
                     int n_threads) noexcept nogil:
    """out[i] = sum_j weights[f] * float32(x_ij) - bias, summed in float64 in file order.

    Rows on n_threads threads: each row is summed by one of them, so the scores do
    not depend on n_threads.
    """
    cdef Py_ssize_t n = out.shape[0], k = feature_ids.shape[0]
    cdef Py_ssize_t i, p, pos
    cdef int64_t fid
    cdef double s
    for i in prange(n, schedule="static", num_threads=n_threads):
        s = 0.0
        pos = 0
        for p in range(indptr[i], indptr[i + 1]):
            fid = <int64_t>indices[p] + 1
            pos = position_from(feature_ids, pos, k, fid)
            if pos == k:
                break
            if feature_ids[pos] == fid:
                s = s + weights[pos] * <double>(<float>data[p])
        out[i] = s - bias


def linear_scores(const index_t[::1] indptr, const column_t[::1] indices,
                  const value_t[::1] data, const int64_t[::1] feature_ids,
                  const double[::1] weights, double bias, double[::1] out, int n_threads=1):
    """out[i] = sum_j weights[f] * float32(x_ij) - bias, summed in float64 in file order.

    Columns are 0-based (feature id = column + 1); feature_ids is sorted and
    features absent from it weigh nothing, so no array spans the index range.
    Rows are scored on n_threads threads (the same scores for any number).
    """
    with nogil:
        score_rows(indptr, indices, data, feature_ids, weights, bias, out, n_threads)


def linear_scores_rows(const int64_t[::1] indptr, const int32_t[::1] indices,
                       const double[::1] data, const int64_t[::1] feature_ids,
                       const double[::1] weights, double bias, double[::1] out,
                       int n_threads=1):
    """linear_scores for the reader's rows (int64 indptr, int32 indices); not a fused
    function, whose dispatch would import numpy."""
    with nogil:
        score_rows(indptr, indices, data, feature_ids, weights, bias, out, n_threads)


def format_scores(const double[::1] scores):
    """svm_rank_classify's prediction lines: '%.8f\\n' for each score ('-nan' for NaN), as bytes-like."""
    cdef Py_ssize_t n = scores.shape[0], i, k = 0
    cdef bytearray text
    cdef char* out
    cdef double v
    cdef bint wide = False
    for i in range(n):
        if not -1e30 < scores[i] < 1e30 and not isnan(scores[i]):
            wide = True
    if wide:                                # huge or infinite scores: Python's own '%.8f'
        return "".join(["%.8f\n" % v if v == v else "-nan\n" for v in scores]).encode()
    text = bytearray(n * 48)
    out = text
    with nogil:
        for i in range(n):
            v = scores[i]
            if isnan(v):
                k += snprintf(out + k, 48, b"-nan\n")
            elif -1e10 < v < 1e10:
                k += format_8f(v, out + k)
                out[k] = 10
                k += 1
            else:
                k += snprintf(out + k, 48, b"%.8f\n", v)
    del text[k:]                            # shrunk in place, not copied
    return text


def single_vector_weights(double alpha, const int32_t[::1] indices, const double[::1] values,
                          int64_t[::1] ids, double[::1] weights):
    """A one-SV linear model's weights: ids[k] = column + 1, weights[k] = alpha * float32(v),
    zeros left out; returns how many were written (ids, weights: room for all)."""
    cdef Py_ssize_t i, k = 0
    cdef double w
    with nogil:
        for i in range(indices.shape[0]):
            w = alpha * <double>(<float>values[i])
            if w != 0:
                ids[k] = <int64_t>indices[i] + 1
                weights[k] = w
                k += 1
    return k


def first_at_least(const int32_t[::1] indices, int64_t limit):
    """The first position whose entry is >= limit, or -1."""
    cdef Py_ssize_t i
    for i in range(indices.shape[0]):
        if indices[i] >= limit:
            return i
    return -1
