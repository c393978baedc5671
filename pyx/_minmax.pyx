"""Per-query min-max scaling (LETOR's QueryLevelNorm), query by query.

Each feature x of a document becomes (x − min) / (max − min), min and max over
the documents of its query (0 where max = min).  A query's rows are given by
``order[starts[g]:starts[g + 1]]`` (a permutation of the rows, grouped), so a
query's rows need not be contiguous.  Scratch is O(d) and reused from query to
query; the only output is the scaled matrix: no temporaries of the size of the
data (numpy's version held about ten arrays the size of the stored entries,
7.8 GB for 720k documents of 136 features).

In a sparse matrix an absent entry is a 0 that counts towards its query's min
and max; where such a 0 does not scale to 0 (a column with a negative minimum
in that query) it is stored explicitly, appended after the row's entries.
"""
from libc.stdint cimport int32_t, int64_t

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused value_t:
    float
    double


cdef inline double scaled(double x, double low, double high) noexcept nogil:
    """(x − low) / (high − low), 0 where high − low is not positive (numpy's arithmetic)."""
    cdef double span = high - low
    if span > 0:
        return (x - low) / span
    return 0.0


cdef Py_ssize_t group_ranges(const value_t[::1] data, const index_t[::1] indices,
                             const index_t[::1] indptr, const int64_t[::1] order,
                             Py_ssize_t first, Py_ssize_t last, double[::1] low,
                             double[::1] high, int64_t[::1] count, int64_t[::1] touched,
                             int64_t[::1] negative, Py_ssize_t* n_negative) noexcept nogil:
    """Min, max and number of stored entries of every column stored in rows
    order[first:last]; their columns in touched[:returned], count zero elsewhere.
    Absent entries (zeros) widen the range to 0; the columns where such a zero
    scales to a non-zero value (a negative minimum) go to negative[:n_negative[0]]."""
    cdef Py_ssize_t i, k, t, n_touched = 0
    cdef int64_t r, j, m = last - first
    cdef double v
    for i in range(first, last):
        r = order[i]
        for k in range(indptr[r], indptr[r + 1]):
            j = indices[k]
            v = data[k]
            if count[j] == 0:
                touched[n_touched] = j
                n_touched += 1
                low[j] = v
                high[j] = v
            else:
                if v < low[j]:
                    low[j] = v
                if v > high[j]:
                    high[j] = v
            count[j] += 1
    n_negative[0] = 0
    for t in range(n_touched):
        j = touched[t]
        if count[j] < m:
            if low[j] > 0:
                low[j] = 0.0
            if high[j] < 0:
                high[j] = 0.0
            if low[j] < 0:
                negative[n_negative[0]] = j
                n_negative[0] += 1
    return n_touched


def sparse_extra_entries(const value_t[::1] data, const index_t[::1] indices,
                         const index_t[::1] indptr, const int64_t[::1] order,
                         const int64_t[::1] starts, Py_ssize_t n_columns,
                         int64_t[::1] extra):
    """extra[r]: the zeros of row r that do not scale to 0 (absent, in a column whose
    minimum over the query is negative), to be stored; returns their total."""
    cdef double[::1] low = _doubles(n_columns), high = _doubles(n_columns)
    cdef int64_t[::1] count = _zeros(n_columns), touched = _zeros(n_columns)
    cdef int64_t[::1] negative_columns = _zeros(n_columns), negative = _zeros(n_columns)
    cdef Py_ssize_t g, i, k, t, n_touched, n_negative
    cdef int64_t r, j, total = 0
    with nogil:
        for g in range(starts.shape[0] - 1):
            n_touched = group_ranges(data, indices, indptr, order, starts[g], starts[g + 1],
                                     low, high, count, touched, negative_columns, &n_negative)
            for t in range(n_negative):
                negative[negative_columns[t]] = 1
            for i in range(starts[g], starts[g + 1]):
                r = order[i]
                extra[r] = n_negative
                if n_negative:
                    for k in range(indptr[r], indptr[r + 1]):
                        extra[r] -= negative[indices[k]]
                total += extra[r]
            for t in range(n_touched):
                count[touched[t]] = 0
            for t in range(n_negative):
                negative[negative_columns[t]] = 0
    return total


def sparse_min_max(const value_t[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, const int64_t[::1] order,
                   const int64_t[::1] starts, Py_ssize_t n_columns,
                   const int64_t[::1] out_indptr, double[::1] out_data,
                   index_t[::1] out_indices, bint write_indices):
    """Row r scaled into out_data[out_indptr[r]:out_indptr[r + 1]]: its stored entries
    in their order, then the zeros sparse_extra_entries counted (out_indices too when
    write_indices, which must then be true if any are)."""
    cdef double[::1] low = _doubles(n_columns), high = _doubles(n_columns)
    cdef int64_t[::1] count = _zeros(n_columns), touched = _zeros(n_columns)
    cdef int64_t[::1] negative_columns = _zeros(n_columns)
    cdef int64_t[::1] stamp = _zeros(n_columns)
    cdef Py_ssize_t g, i, k, t, n_touched, n_negative, at
    cdef int64_t r, j
    stamp[:] = -1
    with nogil:
        for g in range(starts.shape[0] - 1):
            n_touched = group_ranges(data, indices, indptr, order, starts[g], starts[g + 1],
                                     low, high, count, touched, negative_columns, &n_negative)
            for i in range(starts[g], starts[g + 1]):
                r = order[i]
                at = out_indptr[r]
                for k in range(indptr[r], indptr[r + 1]):
                    j = indices[k]
                    out_data[at] = scaled(data[k], low[j], high[j])
                    if write_indices:
                        out_indices[at] = <index_t>j
                    stamp[j] = r
                    at += 1
                for t in range(n_negative):
                    j = negative_columns[t]
                    if stamp[j] != r:
                        out_data[at] = scaled(0.0, low[j], high[j])
                        out_indices[at] = <index_t>j
                        at += 1
            for t in range(n_touched):
                count[touched[t]] = 0


def dense_min_max(const value_t[:, ::1] X, const int64_t[::1] order,
                  const int64_t[::1] starts, double[:, ::1] out):
    """out[r] = X[r] scaled over the rows of r's query (X and out C-contiguous)."""
    cdef Py_ssize_t d = X.shape[1]
    cdef double[::1] low = _doubles(d), high = _doubles(d)
    cdef Py_ssize_t g, i, j
    cdef int64_t r
    cdef double v
    with nogil:
        for g in range(starts.shape[0] - 1):
            if starts[g + 1] == starts[g]:
                continue
            r = order[starts[g]]
            for j in range(d):
                low[j] = X[r, j]
                high[j] = X[r, j]
            for i in range(starts[g] + 1, starts[g + 1]):
                r = order[i]
                for j in range(d):
                    v = X[r, j]
                    if v < low[j]:
                        low[j] = v
                    if v > high[j]:
                        high[j] = v
            for i in range(starts[g], starts[g + 1]):
                r = order[i]
                for j in range(d):
                    out[r, j] = scaled(X[r, j], low[j], high[j])


cdef double[::1] _doubles(Py_ssize_t n):
    import numpy as np
    return np.empty(max(n, 1), dtype=np.float64)


cdef int64_t[::1] _zeros(Py_ssize_t n):
    import numpy as np
    return np.zeros(max(n, 1), dtype=np.int64)
