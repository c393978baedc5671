"""Scoring documents with an SVM-light kernel model exactly as svm_rank_classify does.

SVM-light (svm_common.c) scores a document x as Σ_s α_s k(sv_s, x) − b, the sum in
float64 over the support vectors in file order.  Its dot product a·b (sprod_ss)
multiplies the float32 values of each feature the two share in float32 and adds
the products, widened, in float64 in increasing feature order; then

    polynomial  pow(s a·b + r, d)
    RBF         exp(−g ((|sv|² − 2 sv·x) + |x|²)),  |v|² = v·v taken the same way
    sigmoid     tanh(s a·b + r)

with the C library's pow, exp and tanh.  These kernels do the same operations in
the same order, so the scores have the same bits.  A feature one side lacks adds
nothing: its product is ±0, which leaves a float64 sum as it was.  The caller
rounds values to float32 (svm_rank's FVAL), drops test features above the model's
highest index and sorts each row's indices.

Two layouts of the support vectors, each scored on n_threads threads (one row per
thread at a time, so the scores do not depend on their number):
``scores_by_columns`` keeps them dense and transposed (feature × SV), so that each
of a row's entries updates every SV's dot product in one vectorised loop; and
``scores_by_rows`` keeps them sparse and scatters each row into a dense buffer
instead, for support vectors that are wide and sparse.
"""
from cython.parallel cimport prange, threadid
from libc.math cimport exp, pow, tanh
from libc.stdint cimport int32_t, int64_t

import numpy as np


cdef inline double kernel_value(int kernel_type, double dot, double sv_norm, double x_norm,
                                double degree, double gamma, double coef_lin,
                                double coef_const) noexcept nogil:
    """k(sv, x) from sv·x (and the squared norms for RBF) as SVM-light's single_kernel."""
    if kernel_type == 2:
        return exp((-gamma) * ((sv_norm - (dot + dot)) + x_norm))
    if kernel_type == 1:
        return pow(coef_lin * dot + coef_const, degree)
    if kernel_type == 3:
        return tanh(coef_lin * dot + coef_const)
    return dot


cdef inline double self_dot(const float* values, Py_ssize_t n) noexcept nogil:
    """v·v as sprod_ss(v, v): float32 squares added in float64, in order."""
    cdef double total = 0.0
    cdef Py_ssize_t k
    for k in range(n):
        total = total + <double>(values[k] * values[k])
    return total


def row_norms(const int64_t[::1] indptr, const float[::1] values, double[::1] out):
    """out[i] = row i's v·v as SVM-light takes it (sprod_ss(v, v))."""
    cdef Py_ssize_t i
    with nogil:
        for i in range(out.shape[0]):
            out[i] = self_dot(&values[indptr[i]], indptr[i + 1] - indptr[i])


def scores_by_columns(const int64_t[::1] indptr, const int32_t[::1] indices,
                      const float[::1] values, const double[::1] x_norms,
                      const float[:, ::1] sv_columns, const double[::1] sv_norms,
                      const double[::1] alphas, int kernel_type, double degree, double gamma,
                      double coef_lin, double coef_const, double bias, double[::1] out,
                      int n_threads=1):
    """out[i] = Σ_s α_s k(sv_s, x_i) − b with the SVs dense and transposed.

    Rows (CSR: indptr, indices, values) hold column numbers of sv_columns (one
    row per column, one entry per SV); x_norms[i] is row i's v·v over all of
    its features (RBF only).
    """
    cdef Py_ssize_t n = out.shape[0], n_sv = alphas.shape[0], i, p, s, t
    cdef double[:, ::1] dots = np.zeros((max(n_threads, 1), max(n_sv, 1)))
    cdef double* dot
    cdef const float* column
    cdef float v
    cdef double total
    for i in prange(n, schedule="static", chunksize=64, num_threads=n_threads, nogil=True):
        t = threadid()
        dot = &dots[t, 0]
        for s in range(n_sv):
            dot[s] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v = values[p]
            column = &sv_columns[indices[p], 0]
            for s in range(n_sv):
                dot[s] = dot[s] + <double>(v * column[s])
        total = 0.0
        for s in range(n_sv):
            total = total + kernel_value(kernel_type, dot[s], sv_norms[s], x_norms[i], degree,
                                         gamma, coef_lin, coef_const) * alphas[s]
        out[i] = total - bias


def scores_by_rows(const int64_t[::1] indptr, const int32_t[::1] indices,
                   const float[::1] values, const double[::1] x_norms,
                   const int64_t[::1] sv_indptr, const int32_t[::1] sv_indices,
                   const float[::1] sv_values, Py_ssize_t width, const double[::1] sv_norms,
                   const double[::1] alphas, int kernel_type, double degree, double gamma,
                   double coef_lin, double coef_const, double bias, double[::1] out,
                   int n_threads=1):
    """scores_by_columns with the SVs as CSR rows (columns 0 .. width − 1): each document
    is scattered into a dense buffer of width floats, read along each SV's entries."""
    cdef Py_ssize_t n = out.shape[0], n_sv = alphas.shape[0], i, p, s, q, t
    cdef float[:, ::1] buffers = np.zeros((max(n_threads, 1), max(width, 1)), dtype=np.float32)
    cdef float* row
    cdef double dot, total
    for i in prange(n, schedule="static", chunksize=64, num_threads=n_threads, nogil=True):
        t = threadid()
        row = &buffers[t, 0]
        for p in range(indptr[i], indptr[i + 1]):
            row[indices[p]] = values[p]
        total = 0.0
        for s in range(n_sv):
            dot = 0.0
            for q in range(sv_indptr[s], sv_indptr[s + 1]):
                dot = dot + <double>(sv_values[q] * row[sv_indices[q]])
            total = total + kernel_value(kernel_type, dot, sv_norms[s], x_norms[i], degree,
                                         gamma, coef_lin, coef_const) * alphas[s]
        for p in range(indptr[i], indptr[i + 1]):
            row[indices[p]] = 0.0
        out[i] = total - bias
