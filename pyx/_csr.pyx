"""Row selection, transposition and per-group column sums of CSR arrays, each one pass over the
entries (O(nnz + n + d)).

A CSR matrix is (data, indices, indptr): the entries of row i are
data[indptr[i]:indptr[i + 1]] in columns indices[indptr[i]:indptr[i + 1]].  The
caller allocates the outputs; nothing is written outside them.
"""
from cython.parallel cimport prange
from libc.math cimport fabs, sqrt
from libc.stdint cimport int32_t, int64_t

import numpy as np

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused value_t:
    float
    double


def take_rows(const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              const int64_t[::1] rows, value_t[::1] out_data, index_t[::1] out_indices,
              index_t[::1] out_indptr):
    """Rows ``rows`` (in that order) into out_*; out_indptr[0] must be 0.

    out_data and out_indices hold Σ_r (indptr[r + 1] − indptr[r]) entries.
    """
    cdef Py_ssize_t r, k, at = 0, i
    with nogil:
        for r in range(rows.shape[0]):
            i = rows[r]
            for k in range(indptr[i], indptr[i + 1]):
                out_data[at] = data[k]
                out_indices[at] = indices[k]
                at += 1
            out_indptr[r + 1] = at


def transpose(const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              value_t[::1] out_data, index_t[::1] out_indices, index_t[::1] out_indptr):
    """Xᵀ in CSR (a counting sort by column; each column's entries keep their row order).

    out_indptr has one entry per column of X plus one, all zero on entry.
    """
    cdef Py_ssize_t n = indptr.shape[0] - 1, d = out_indptr.shape[0] - 1
    cdef Py_ssize_t i, j, k, at
    with nogil:
        for k in range(indptr[n]):
            out_indptr[indices[k] + 1] += 1
        for j in range(d):
            out_indptr[j + 1] += out_indptr[j]
        for i in range(n):                       # out_indptr[j] is column j's next free slot ...
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                at = out_indptr[j]
                out_data[at] = data[k]
                out_indices[at] = i
                out_indptr[j] = at + 1
        for j in range(d, 0, -1):                # ... and ends as column j + 1's start
            out_indptr[j] = out_indptr[j - 1]
        out_indptr[0] = 0


cdef inline void _flush_squares(double[::1] sums, const int64_t[::1] touched, Py_ssize_t n_touched,
                                char[::1] seen, double weight, double[::1] out) noexcept nogil:
    """out_j += weight · sums_j² for the touched columns j, in the order they were touched; then
    clear them (sums and seen) for the next group."""
    cdef Py_ssize_t t, j
    cdef double s
    for t in range(n_touched):
        j = touched[t]
        s = sums[j]
        out[j] += weight * (s * s)
        sums[j] = 0.0
        seen[j] = 0


def group_square_sums(const value_t[::1] data, const index_t[::1] indices,
                      const index_t[::1] indptr, const int64_t[::1] order,
                      const int64_t[::1] group_starts, const double[::1] weights,
                      double[::1] out):
    """out_j += Σ_g weights_g (Σ_{i in group g} x_ij)² (in float64).

    Group g holds rows order[group_starts[g]:group_starts[g + 1]].  Each group's
    column sums are gathered in a dense scratch row (the sum over X's rows in
    the group order) with the list of its columns, then squared once per
    column, in the order the columns first appear, and cleared: one pass over
    the entries, O(nnz + d).
    """
    cdef Py_ssize_t d = out.shape[0], g, k, e, j, n_touched
    cdef double[::1] sums = np.zeros(d)
    cdef int64_t[::1] touched = np.empty(d, dtype=np.int64)
    cdef char[::1] seen = np.zeros(d, dtype=np.int8)
    with nogil:
        for g in range(group_starts.shape[0] - 1):
            n_touched = 0
            for k in range(group_starts[g], group_starts[g + 1]):
                for e in range(indptr[order[k]], indptr[order[k] + 1]):
                    j = indices[e]
                    sums[j] += data[e]
                    if not seen[j]:
                        seen[j] = 1
                        touched[n_touched] = j
                        n_touched += 1
            _flush_squares(sums, touched, n_touched, seen, weights[g], out)


def nested_square_sums(const value_t[::1] data, const index_t[::1] indices,
                       const index_t[::1] indptr, const int64_t[::1] order,
                       const int64_t[::1] group_starts, const int64_t[::1] group_outer,
                       const double[::1] weights, const double[::1] outer_weights,
                       double[::1] out, double[::1] outer_out):
    """group_square_sums for the groups and, in the same pass, for the outer groups they make up.

    Group g (rows order[group_starts[g]:group_starts[g + 1]]) lies in outer group
    group_outer[g], and the groups of one outer group are consecutive: out_j +=
    Σ_g weights_g (Σ_{i in g} x_ij)² and outer_out_j += Σ_o outer_weights_o (Σ_{i in o} x_ij)²
    (the outer sums taken in the groups' row order), one pass over the entries.
    """
    cdef Py_ssize_t d = out.shape[0], n_groups = group_starts.shape[0] - 1
    cdef Py_ssize_t g, k, e, j, n_touched = 0, n_outer_touched = 0
    cdef double[::1] sums = np.zeros(d)
    cdef double[::1] outer_sums = np.zeros(d)
    cdef int64_t[::1] touched = np.empty(d, dtype=np.int64)
    cdef int64_t[::1] outer_touched = np.empty(d, dtype=np.int64)
    cdef char[::1] seen = np.zeros(d, dtype=np.int8)
    cdef char[::1] outer_seen = np.zeros(d, dtype=np.int8)
    cdef double v
    with nogil:
        for g in range(n_groups):
            n_touched = 0
            for k in range(group_starts[g], group_starts[g + 1]):
                for e in range(indptr[order[k]], indptr[order[k] + 1]):
                    j = indices[e]
                    v = data[e]
                    sums[j] += v
                    outer_sums[j] += v
                    if not seen[j]:
                        seen[j] = 1
                        touched[n_touched] = j
                        n_touched += 1
                        if not outer_seen[j]:
                            outer_seen[j] = 1
                            outer_touched[n_outer_touched] = j
                            n_outer_touched += 1
            _flush_squares(sums, touched, n_touched, seen, weights[g], out)
            if g + 1 == n_groups or group_outer[g + 1] != group_outer[g]:
                _flush_squares(outer_sums, outer_touched, n_outer_touched, outer_seen,
                               outer_weights[group_outer[g]], outer_out)
                n_outer_touched = 0


cdef enum:
    FINITE_BLOCK = 1 << 14          # values per block of all_finite


def all_finite(const value_t[::1] values, int n_threads=1):
    """Whether no value is NaN or ±inf (no temporary array; blocks on n_threads threads).

    x − x is 0 for a finite x and NaN for NaN and ±inf, so a block is finite
    exactly when Σ (x − x) over it is 0: no branch per value, and four
    running sums so that the additions overlap.
    """
    cdef Py_ssize_t n = values.shape[0], n_blocks = (n + FINITE_BLOCK - 1) // FINITE_BLOCK
    cdef Py_ssize_t b, i, lo, hi
    cdef double s0, s1, s2, s3
    cdef Py_ssize_t bad = 0
    with nogil:
        for b in prange(n_blocks, schedule="static", num_threads=max(n_threads, 1)):
            lo = b * FINITE_BLOCK
            hi = min(lo + FINITE_BLOCK, n)
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            i = lo
            while i + 4 <= hi:
                s0 = s0 + (values[i] - values[i])
                s1 = s1 + (values[i + 1] - values[i + 1])
                s2 = s2 + (values[i + 2] - values[i + 2])
                s3 = s3 + (values[i + 3] - values[i + 3])
                i = i + 4
            while i < hi:
                s0 = s0 + (values[i] - values[i])
                i = i + 1
            if (s0 + s1) + (s2 + s3) != 0.0:
                bad += 1
    return bad == 0


def column_abs_max(const value_t[::1] data, const index_t[::1] indices, double[::1] out):
    """out[j] = max(out[j], |x|) over the stored entries x of every column j (out: zeros, one per column)."""
    cdef Py_ssize_t k
    cdef double v
    with nogil:
        for k in range(data.shape[0]):
            v = fabs(data[k])               # not a branch on the sign: half the signs mispredict
            if v > out[indices[k]]:
                out[indices[k]] = v


def column_deviations(const value_t[::1] data, const index_t[::1] indices, Py_ssize_t n_rows,
                      double[::1] out):
    """out[j] = the standard deviation of column j over n_rows rows, absent entries 0 (out:
    one per column).  Two passes over the entries, mean first, then squares about it
    (E[x²] − E[x]² cancels for features of large mean and small spread); O(d) scratch."""
    cdef Py_ssize_t k, j, d = out.shape[0]
    cdef double[::1] mean = np.zeros(max(d, 1))
    cdef int64_t[::1] count = np.zeros(max(d, 1), dtype=np.int64)
    cdef double v
    if n_rows <= 0:
        out[:] = 0.0
        return
    with nogil:
        for k in range(data.shape[0]):
            mean[indices[k]] += data[k]
            count[indices[k]] += 1
        for j in range(d):
            mean[j] /= n_rows
            out[j] = (n_rows - count[j]) * mean[j] * mean[j]      # the absent zeros' squares
        for k in range(data.shape[0]):
            v = data[k] - mean[indices[k]]
            out[indices[k]] += v * v
        for j in range(d):
            out[j] = sqrt(out[j] / n_rows)
