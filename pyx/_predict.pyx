"""Scoring documents with a linear model exactly as svm_rank_classify does."""
from libc.stdint cimport int32_t, int64_t
from libc.math cimport isnan

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused column_t:
    int32_t
    int64_t

cdef extern from "stdio.h" nogil:
    int snprintf(char* s, size_t n, const char* fmt, ...)


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


def linear_scores(const index_t[::1] indptr, const column_t[::1] indices,
                  const double[::1] data, const int64_t[::1] feature_ids,
                  const double[::1] weights, double bias, double[::1] out):
    """out[i] = sum_j weights[f] * float32(x_ij) - bias, summed in float64 in file order.

    Columns are 0-based (feature id = column + 1); feature_ids is sorted and
    features absent from it weigh nothing, so no array spans the index range.
    """
    cdef Py_ssize_t n = out.shape[0], k = feature_ids.shape[0]
    cdef Py_ssize_t i, p, pos
    cdef int64_t fid
    cdef double s
    with nogil:
        for i in range(n):
            s = 0.0
            pos = 0
            for p in range(indptr[i], indptr[i + 1]):
                fid = <int64_t>indices[p] + 1
                pos = lower_bound(feature_ids, pos, k, fid)
                if pos == k:
                    break
                if feature_ids[pos] == fid:
                    s += weights[pos] * <double>(<float>data[p])
            out[i] = s - bias


def format_scores(const double[::1] scores):
    """svm_rank_classify's prediction lines: '%.8f\\n' for each score ('-nan' for NaN)."""
    cdef Py_ssize_t n = scores.shape[0], i, k = 0
    cdef bytearray text
    cdef char* out
    cdef double v
    cdef bint wide = False
    for i in range(n):
        if not -1e30 < scores[i] < 1e30:
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
            else:
                k += snprintf(out + k, 48, b"%.8f\n", v)
    return bytes(text[:k])
