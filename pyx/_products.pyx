"""Products of the data matrix with vectors, X v and Xᵀ u, on several threads with results
that do not depend on the number of threads.

X v: each row's dot product is computed by one thread, in a fixed order.  Xᵀ u: the rows
are cut into blocks of block_rows (fixed by the caller, not by the number of threads),
each block sums its rows into its own row of partial (n_blocks × d), and the blocks are
added in block order.  X is dense (C-contiguous n × d) or CSR (data, indices, indptr); CSR
values may be float32 or float64, each widened to double where it is read, so float32 data
give the bits float64 data holding the same values give.
For CSR with many columns Xᵀ u is better taken as the row products of Xᵀ in CSR
(csr_matvec on the transpose): no partial sums at all.
"""
from cython.parallel cimport prange
from libc.math cimport fabs
from libc.stdint cimport int32_t, int64_t

import numpy as np

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused value_t:           # CSR values: float32 (as svm_rank stores them) or float64
    float
    double


cdef inline double dot(const value_t* x, const double* v, Py_ssize_t d) noexcept nogil:
    """Σ_j x_j v_j with four running sums (lanes j mod 4), added as (s0 + s1) + (s2 + s3)."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t j = 0
    while j + 4 <= d:
        s0 += <double>x[j] * v[j]
        s1 += <double>x[j + 1] * v[j + 1]
        s2 += <double>x[j + 2] * v[j + 2]
        s3 += <double>x[j + 3] * v[j + 3]
        j += 4
    while j < d:
        s0 += <double>x[j] * v[j]
        j += 1
    return (s0 + s1) + (s2 + s3)


cdef inline double entry(double x, int mode) noexcept nogil:
    """x (mode 0), |x| (mode 1) or x² (mode 2): the matrix the product uses."""
    if mode == 0:
        return x
    return fabs(x) if mode == 1 else x * x


cdef inline double sparse_dot(const value_t* data, const index_t* indices, Py_ssize_t a,
                              Py_ssize_t b, const double* v, int mode) noexcept nogil:
    """Σ_k entry(x_k) v_{j_k} over k in [a, b) with four running sums (lanes k - a mod 4),
    added as (s0 + s1) + (s2 + s3), as dot adds a dense row: a full row gives dot's bits."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t k = a
    if mode == 0:
        while k + 4 <= b:
            s0 += <double>data[k] * v[indices[k]]
            s1 += <double>data[k + 1] * v[indices[k + 1]]
            s2 += <double>data[k + 2] * v[indices[k + 2]]
            s3 += <double>data[k + 3] * v[indices[k + 3]]
            k += 4
    while k + 4 <= b:
        s0 += entry(<double>data[k], mode) * v[indices[k]]
        s1 += entry(<double>data[k + 1], mode) * v[indices[k + 1]]
        s2 += entry(<double>data[k + 2], mode) * v[indices[k + 2]]
        s3 += entry(<double>data[k + 3], mode) * v[indices[k + 3]]
        k += 4
    while k < b:
        s0 += entry(<double>data[k], mode) * v[indices[k]]
        k += 1
    return (s0 + s1) + (s2 + s3)


def dense_matvec(const value_t[:, ::1] X, const double[::1] v, double[::1] out, int n_threads=1):
    """out = X v (NumPy: X @ v); float32 X is widened as read, as csr_matvec's data."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i
    if n == 0:
        return
    if d == 0:
        out[:] = 0.0
        return
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_threads):
            out[i] = dot(&X[i, 0], &v[0], d)


def dense_rmatvec(const value_t[:, ::1] X, const double[::1] u, double[::1] out,
                  double[:, ::1] partial, Py_ssize_t block_rows, int n_threads=1, int mode=0):
    """out = Xᵀ u (NumPy: X.T @ u), block partial sums in partial (ceil(n / block_rows) × d).

    mode 1 uses |X| (NumPy: abs(X).T @ u), mode 2 X² (NumPy: (X * X).T @ u).  The
    sums are csr_rmatvec's, in its order: a full CSR matrix gives the same bits.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], n_blocks = partial.shape[0]
    cdef Py_ssize_t b, i, j, lo, hi
    cdef double ui
    cdef double* acc
    cdef const value_t* row
    if d == 0:
        return
    with nogil:
        for b in prange(n_blocks, schedule="static", num_threads=n_threads):
            acc = &partial[b, 0]
            for j in range(d):
                acc[j] = 0.0
            lo = b * block_rows
            hi = min(lo + block_rows, n)
            for i in range(lo, hi):
                row = &X[i, 0]
                ui = u[i]
                if mode == 0:
                    for j in range(d):
                        acc[j] += ui * <double>row[j]
                else:
                    for j in range(d):
                        acc[j] += ui * entry(<double>row[j], mode)
        add_rows(partial, n_blocks, d, out)


def csr_matvec(const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
               const double[::1] v, double[::1] out, int n_threads=1, int mode=0,
               bint lanes=False):
    """out = X v for X in CSR (scipy: X @ v), each row summed in stored order, scipy's bits;
    mode as dense_rmatvec.  With lanes, each row in four running sums (sparse_dot): 1.4x as
    fast on LETOR-like rows, whose one chain of additions bounds the stored order's speed."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, k
    cdef double acc
    if n <= 0:
        return
    with nogil:
        if lanes:
            for i in prange(n, schedule="static", num_threads=n_threads):
                out[i] = sparse_dot(&data[0], &indices[0], indptr[i], indptr[i + 1], &v[0], mode)
        else:
            for i in prange(n, schedule="static", num_threads=n_threads):
                acc = 0.0
                for k in range(indptr[i], indptr[i + 1]):
                    acc = acc + entry(<double>data[k], mode) * v[indices[k]]
                out[i] = acc


def csr_rmatvec(const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
                const double[::1] u, double[::1] out, double[:, ::1] partial,
                Py_ssize_t block_rows, int n_threads=1, int mode=0):
    """out = Xᵀ u for X in CSR with few columns, by row blocks as dense_rmatvec (mode too)."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, d = out.shape[0], n_blocks = partial.shape[0]
    cdef Py_ssize_t b, i, j, k, lo, hi
    cdef double ui
    cdef double* acc
    if d == 0:
        return
    with nogil:
        for b in prange(n_blocks, schedule="static", num_threads=n_threads):
            acc = &partial[b, 0]
            for j in range(d):
                acc[j] = 0.0
            lo = b * block_rows
            hi = min(lo + block_rows, n)
            for i in range(lo, hi):
                ui = u[i]
                for k in range(indptr[i], indptr[i + 1]):
                    acc[indices[k]] += ui * entry(<double>data[k], mode)
        add_rows(partial, n_blocks, d, out)


cdef void add_rows(double[:, ::1] partial, Py_ssize_t n_blocks, Py_ssize_t d,
                   double[::1] out) noexcept nogil:
    """out = Σ_b partial[b] (NumPy: partial.sum(axis=0), summed in block order)."""
    cdef Py_ssize_t b, j
    for j in range(d):
        out[j] = 0.0
    for b in range(n_blocks):
        for j in range(d):
            out[j] += partial[b, j]


def full_rows(const index_t[::1] indices, const index_t[::1] indptr, Py_ssize_t d):
    """Whether every row holds columns 0 .. d - 1 in order (a dense matrix stored as CSR):
    then data, seen as n × d, is that matrix."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, j
    cdef bint full = indptr[0] == 0 and indices.shape[0] >= n * d
    with nogil:
        i = 0
        while full and i < n:
            full = indptr[i + 1] - indptr[i] == d
            j = 0
            while full and j < d:
                full = indices[i * d + j] == j
                j += 1
            i += 1
    return full


def mark_columns(const index_t[::1] indices, char[::1] used):
    """used[j] = 1 for every column j that occurs in indices (NumPy: used[indices] = 1, no copy)."""
    cdef Py_ssize_t k
    with nogil:
        for k in range(indices.shape[0]):
            used[indices[k]] = 1


cdef void mark_varying_in_groups(const value_t* data, const index_t* indices,
                                 const index_t* indptr, const int64_t* order,
                                 const int64_t* starts, Py_ssize_t g0, Py_ssize_t g1,
                                 Py_ssize_t d, char* varies, double* first, int64_t* count,
                                 int64_t* touched) noexcept nogil:
    """mark_varying_columns over groups g0 .. g1 - 1 into varies (count zero on entry and exit)."""
    cdef Py_ssize_t g, k, i, e, j, t, n_touched, n_varying = 0
    cdef int64_t size
    cdef double v
    for j in range(d):
        n_varying += varies[j] != 0
    for g in range(g0, g1):
        if n_varying == d:
            break
        n_touched = 0
        for k in range(starts[g], starts[g + 1]):
            i = order[k]
            for e in range(indptr[i], indptr[i + 1]):
                j = indices[e]
                v = data[e]
                if count[j] == 0:
                    first[j] = v
                    touched[n_touched] = j
                    n_touched += 1
                elif v != first[j] and not varies[j]:
                    varies[j] = 1
                    n_varying += 1
                count[j] += 1
        size = starts[g + 1] - starts[g]
        for t in range(n_touched):          # a row without the column holds 0
            j = touched[t]
            if count[j] < size and first[j] != 0.0 and not varies[j]:
                varies[j] = 1
                n_varying += 1
            count[j] = 0


def mark_varying_columns(const value_t[::1] data, const index_t[::1] indices,
                         const index_t[::1] indptr, const int64_t[::1] order,
                         const int64_t[::1] starts, char[::1] varies, int n_threads=1):
    """varies[j] = 1 for every column j whose values differ within some group of rows.

    Group g holds rows order[starts[g]:starts[g + 1]]; an entry not stored is 0, and a row
    stores each column at most once.  Each group notes the first value and the number
    of entries of every column it touches (a scratch row and the list of its columns):
    one pass over the entries, O(nnz + d), which ends early once every column varies
    (the common case: a few queries decide).  n_threads threads take a range of groups
    each, with scratch rows and marks of their own (d values each), joined at the end:
    the marks are the same for any number of them.
    """
    cdef Py_ssize_t d = varies.shape[0], n_groups = starts.shape[0] - 1, t, j
    cdef Py_ssize_t T = max(1, min(n_threads, n_groups))
    if d == 0 or n_groups <= 0:
        return
    cdef double[:, ::1] first = np.empty((T, d))
    cdef int64_t[:, ::1] count = np.zeros((T, d), dtype=np.int64)
    cdef int64_t[:, ::1] touched = np.empty((T, d), dtype=np.int64)
    cdef char[:, ::1] marks = np.repeat(np.asarray(varies)[None, :], T, axis=0)
    cdef const value_t* values = &data[0] if data.shape[0] else NULL        # no entries: unread
    cdef const index_t* columns = &indices[0] if indices.shape[0] else NULL
    cdef const int64_t* rows = &order[0] if order.shape[0] else NULL
    with nogil:
        for t in prange(T, schedule="static", num_threads=T):
            mark_varying_in_groups(values, columns, &indptr[0], rows, &starts[0],
                                   t * n_groups // T, (t + 1) * n_groups // T, d, &marks[t, 0],
                                   &first[t, 0], &count[t, 0], &touched[t, 0])
        for t in range(T):
            for j in range(d):
                varies[j] |= marks[t, j]


def mark_varying_columns_dense(const value_t[:, ::1] X, const int64_t[::1] starts,
                               char[::1] varies):
    """mark_varying_columns for dense X: every row of a group compared with its first (ends
    early once every column varies)."""
    cdef Py_ssize_t d = X.shape[1], g, i, j, head
    cdef bint undecided = True
    with nogil:
        for g in range(starts.shape[0] - 1):
            head = starts[g]
            for i in range(head + 1, starts[g + 1]):
                for j in range(d):
                    varies[j] |= X[i, j] != X[head, j]
            undecided = False
            for j in range(d):
                undecided = undecided or not varies[j]
            if not undecided:
                break


def dense_group_sums(const value_t[:, ::1] X, const int64_t[::1] order,
                     const int64_t[::1] group_starts, double[:, ::1] out, int n_threads=1):
    """Row g of out = Σ X[order[k]] for k in group_starts[g]:group_starts[g + 1], added in that
    order from 0 (NumPy's ``np.add.at(out, labels, X)`` on zeros, the same bits when order
    lists each group's rows in ascending index), one group per thread at a time."""
    cdef Py_ssize_t n_groups = group_starts.shape[0] - 1, d = X.shape[1], g, k, j
    cdef const value_t* row
    cdef double* acc
    if out.shape[0] != n_groups or out.shape[1] != d:
        raise ValueError("out must have one row per group and X's columns")
    if d == 0 or n_groups <= 0:
        return
    with nogil:
        for g in prange(n_groups, schedule="dynamic", num_threads=n_threads):
            acc = &out[g, 0]
            for j in range(d):
                acc[j] = 0.0
            for k in range(group_starts[g], group_starts[g + 1]):
                row = &X[order[k], 0]
                for j in range(d):
                    acc[j] += <double>row[j]
