"""RankRLS kernels: greedy RankRLS's leave-query-out scoring of every candidate feature and
its cache update after a feature is added (Pahikkala et al. 2010, Algorithm 1), O(n d)
each; RankRLS's exact leave-query-out residuals of small queries for one λ; and the
per-query centring that turns RankRLS into ridge regression.

Shared conventions.  n documents in contiguous queries, query q holding rows
starts[q]:starts[q+1]; d candidate features.  With X̂ the per-query centred
data (n × d), ŷ the centred labels, S the selected features and
G = (X̂_S X̂_Sᵀ + λI)⁻¹ (n × n), the caches are

    C = G X̂ (n × d),  U = blockdiag(G_qq⁻¹) C (n × d),  a = G ŷ,  p = blockdiag(G_qq⁻¹) a,

p being the leave-query-out residuals, and, per feature j, g_j = X̂_jᵀ C_j and
h_j = X̂_jᵀ a.  Adding feature i (Sherman–Morrison): c = 1 / (1 + g_i),
δ = c h_i, and per query, with uc = U_qiᵀC_qi and ua = U_qiᵀa_q,
γ = 1 / (uc − 1/c) and κ = δ + γ (ua − δ uc); the new residuals are
p_q − κ U_qi.  Rows are C-contiguous, so every inner loop runs over the
features of one document.
"""
from cython.parallel cimport prange, threadid
from libc.math cimport NAN
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc
from scipy.linalg.cython_blas cimport dgemm, dsyrk
from scipy.linalg.cython_lapack cimport dpotrf, dpotrs

import numpy as np


include "_chunks.pxi"

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused value_t:       # centre's X and centre_csr's data: float32 or float64
    float
    double


cdef void query_sums(const double* C, const double* U, const double* a, Py_ssize_t lo,
                     Py_ssize_t hi, Py_ssize_t d, double* uc, double* ua) noexcept nogil:
    """(uc_j, ua_j) = Σ_r U_rj (C_rj, a_r) over the rows lo .. hi - 1 of a query."""
    cdef Py_ssize_t r, j
    cdef const double* urow
    cdef const double* crow
    cdef double ar
    for j in range(d):
        uc[j] = 0.0
        ua[j] = 0.0
    for r in range(lo, hi):
        urow = U + r * d
        crow = C + r * d
        ar = a[r]
        for j in range(d):
            uc[j] += urow[j] * crow[j]
            ua[j] += urow[j] * ar


cdef void query_residuals(const double* U, const double* p, const double* g, const double* h,
                          const double* uc, const double* ua, Py_ssize_t lo, Py_ssize_t hi,
                          Py_ssize_t d, double* kappa, double* out) noexcept nogil:
    """out[j] += ‖p_q − κ_qj U_qj‖² for the query of rows lo .. hi - 1, from its query_sums."""
    # κ_j from the sums, then Σ_r (p_r − κ_j U_rj)² (exact, not expanded: no cancellation).
    cdef Py_ssize_t r, j
    cdef const double* urow
    cdef double pr, c, delta, gamma, diff
    for j in range(d):
        c = 1.0 / (1.0 + g[j])
        delta = c * h[j]
        gamma = 1.0 / (uc[j] - 1.0 / c)
        kappa[j] = delta + gamma * (ua[j] - delta * uc[j])
    for r in range(lo, hi):
        urow = U + r * d
        pr = p[r]
        for j in range(d):
            diff = pr - kappa[j] * urow[j]
            out[j] += diff * diff


cdef void query_update(double* C, double* U, double* a, double* p, const double* cb,
                       Py_ssize_t cs, const double* ub, Py_ssize_t us, const double* t,
                       double c, double delta, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t d,
                       double* v, double* uc, double* ua) noexcept nogil:
    """Add feature b to the caches of the query of rows lo .. hi - 1 (v: d doubles of work).

    cb[r cs] and ub[r us] hold the old C_rb and U_rb; they may be C's and U's own
    column b: row r's entries are read before row r is overwritten.  With uc, ua
    (not NULL): also the query_sums of the updated caches, in the same pass over
    U (the same bits as query_sums after the update).
    """
    # t = c X̂_bᵀ C (old C), δ = c h_b.  Per query q:
    #   γ = 1 / (ub·cb − 1/c),  κ = δ + γ (ub·a − δ ub·cb)   (old a)
    #   p_q ← p_q − κ ub,  a_q ← a_q − δ cb,  C_q ← C_q − cb tᵀ
    #   v = C_qᵀ ub (new C),  U_q ← U_q − ub (t + γ v)ᵀ
    cdef Py_ssize_t r, j
    cdef double ucb = 0.0, uab = 0.0, gamma, kappa, br, wr, ar
    cdef double* crow
    cdef double* urow
    for r in range(lo, hi):
        ucb += ub[r * us] * cb[r * cs]
        uab += ub[r * us] * a[r]
    gamma = 1.0 / (ucb - 1.0 / c)
    kappa = delta + gamma * (uab - delta * ucb)
    for j in range(d):
        v[j] = 0.0
    for r in range(lo, hi):
        br = cb[r * cs]
        wr = ub[r * us]
        p[r] -= kappa * wr
        a[r] -= delta * br
        crow = C + r * d
        for j in range(d):
            crow[j] -= br * t[j]
            v[j] += crow[j] * wr
    for j in range(d):                      # v ← t + γ v
        v[j] = t[j] + gamma * v[j]
    if uc == NULL:
        for r in range(lo, hi):
            urow = U + r * d
            wr = ub[r * us]
            for j in range(d):
                urow[j] -= wr * v[j]
        return
    for j in range(d):
        uc[j] = 0.0
        ua[j] = 0.0
    for r in range(lo, hi):
        urow = U + r * d
        crow = C + r * d
        wr = ub[r * us]
        ar = a[r]
        for j in range(d):
            urow[j] -= wr * v[j]
            uc[j] += urow[j] * crow[j]
            ua[j] += urow[j] * ar


cdef struct Greedy:
    # the caches (n × d row-major C and U, n-vectors a and p) and, for an update,
    # feature b's old columns cb, ub (strides cs, us), t, c, δ; for scoring, g and h
    # (after the update)
    double* C
    double* U
    double* a
    double* p
    const double* cb
    const double* ub
    Py_ssize_t cs
    Py_ssize_t us
    const double* t
    double c
    double delta
    const double* g
    const double* h
    const int64_t* starts
    Py_ssize_t d


cdef int greedy_chunk(const Greedy* G, bint update, double* errors, Py_ssize_t q0,
                      Py_ssize_t q1) noexcept nogil:
    """Update (if update) and/or score (if errors) queries q0 .. q1 - 1; -1 when out of memory."""
    cdef Py_ssize_t q, j, lo, hi, d = G.d
    cdef double* work = <double*> malloc(4 * d * sizeof(double))
    cdef double* uc = work + d
    cdef double* ua = work + 2 * d
    if work == NULL:
        return -1
    if errors != NULL:
        for j in range(d):
            errors[j] = 0.0
    for q in range(q0, q1):
        lo, hi = G.starts[q], G.starts[q + 1]
        if update:                          # and the new caches' sums, in the same pass
            query_update(G.C, G.U, G.a, G.p, G.cb, G.cs, G.ub, G.us, G.t, G.c, G.delta, lo, hi,
                         d, work, uc if errors != NULL else NULL, ua)
        elif errors != NULL:
            query_sums(G.C, G.U, G.a, lo, hi, d, uc, ua)
        if errors != NULL:                  # the query's new caches, still in cache
            query_residuals(G.U, G.p, G.g, G.h, uc, ua, lo, hi, d, work + 3 * d, errors)
    free(work)
    return 0


cdef run_greedy(Greedy* G, bint update, double[::1] out, const int64_t[::1] chunks,
                int n_threads):
    """greedy_chunk over every chunk on n_threads threads; errors (if out is not None) into out."""
    # Each chunk scores into its own row of partial, rows added in chunk order: the
    # same bits for any n_threads.
    cdef Py_ssize_t n_chunks = chunks.shape[0] - 1, k
    cdef bint score = out is not None
    cdef double[:, ::1] partial = np.zeros((max(n_chunks, 1), G.d if score else 1))
    cdef int[::1] status = np.zeros(max(n_chunks, 1), dtype=np.intc)
    with nogil:
        for k in prange(n_chunks, schedule="dynamic", num_threads=n_threads):
            status[k] = greedy_chunk(G, update, &partial[k, 0] if score else NULL,
                                     chunks[k], chunks[k + 1])
    check_chunks(status)
    if score:
        add_rows(partial, n_chunks, out)


cdef void add_rows(const double[:, ::1] partial, Py_ssize_t n_rows, double[::1] out) noexcept:
    """out = Σ_k partial[k] (NumPy: partial[:n_rows].sum(axis=0), in row order)."""
    cdef Py_ssize_t k, j
    for j in range(out.shape[0]):
        out[j] = 0.0
    for k in range(n_rows):
        for j in range(out.shape[0]):
            out[j] += partial[k, j]


def lqo_errors(const double[:, ::1] C, const double[:, ::1] U, const double[::1] a,
               const double[::1] p, const double[::1] g, const double[::1] h,
               const int64_t[::1] starts, double[::1] out, const int64_t[::1] chunks=None,
               int n_threads=1):
    """out[j] = Σ_q ‖p_q − κ_qj U_qj‖², the LQO squared error after adding feature j.

    Chunks of queries (chunks[c]:chunks[c+1]; None: one chunk) on n_threads threads.
    """
    cdef Greedy G
    if U.shape[1] == 0:
        return
    G.C, G.U = <double*> &C[0, 0], <double*> &U[0, 0]
    G.a, G.p, G.g, G.h = <double*> &a[0], <double*> &p[0], &g[0], &h[0]
    G.starts, G.d = &starts[0], U.shape[1]
    run_greedy(&G, False, out, chunk_list(chunks, starts.shape[0] - 1), n_threads)


def add_feature(double[:, ::1] C, double[:, ::1] U, double[::1] a, double[::1] p,
                const double[:] cb, const double[:] ub, const double[::1] t,
                double c, double delta, const int64_t[::1] starts,
                const int64_t[::1] chunks=None, int n_threads=1, const double[::1] g=None,
                const double[::1] h=None, double[::1] out=None):
    """Update C, U, a, p in place for the added feature b (cb, ub: its old C and U columns).

    cb and ub may be copies or the views C[:, b] and U[:, b] themselves (no copy:
    each row's entry is read before the row is updated).

    With g, h (the vectors after the update) and out: also lqo_errors of the
    updated caches into out, in the same pass over the data.  Queries only touch
    their own rows: chunks (None: one) run on n_threads threads.
    """
    cdef Greedy G
    if C.shape[1] == 0:
        return
    G.C, G.U, G.a, G.p = &C[0, 0], &U[0, 0], &a[0], &p[0]
    G.cb, G.ub, G.t, G.c, G.delta = &cb[0], &ub[0], &t[0], c, delta
    G.cs, G.us = cb.strides[0] // sizeof(double), ub.strides[0] // sizeof(double)
    G.g = &g[0] if out is not None else NULL
    G.h = &h[0] if out is not None else NULL
    G.starts, G.d = &starts[0], C.shape[1]
    run_greedy(&G, True, out, chunk_list(chunks, starts.shape[0] - 1), n_threads)


cdef int lqo_block(const double[:, ::1] Z, const double[::1] sroot, const double[::1] e,
                   Py_ssize_t lo, int m, double[::1] p, double* W) noexcept nogil:
    """p[lo:lo+m] = (I − Z_q S Z_qᵀ)⁻¹ e_q for the query of rows lo .. lo+m-1; 1 if not SPD."""
    cdef int d = Z.shape[1]
    cdef int info, one = 1
    cdef Py_ssize_t r, j, i
    cdef double minus_one = -1.0, plus_one = 1.0
    cdef char upper = b'U'
    cdef char trans = b'T'
    cdef double* M = W + <Py_ssize_t> m * d
    for r in range(m):
        for j in range(d):
            W[r * d + j] = Z[lo + r, j] * sroot[j]
    for i in range(m):
        for r in range(m):
            M[i * m + r] = 1.0 if i == r else 0.0
    # M = I − (Wᵀ)ᵀ Wᵀ  (NumPy: np.eye(m) − W @ W.T), upper triangle
    dsyrk(&upper, &trans, &m, &d, &minus_one, W, &d, &plus_one, M, &m)
    # M = RᵀR  (NumPy: np.linalg.cholesky(M).T)
    dpotrf(&upper, &m, M, &m, &info)
    if info != 0:
        for r in range(m):
            p[lo + r] = NAN
        return 1
    for r in range(m):
        p[lo + r] = e[lo + r]
    # p_q = M⁻¹ e_q  (NumPy: np.linalg.solve(M, e_q))
    dpotrs(&upper, &m, &one, M, &m, &p[lo], &m, &info)
    return 0


def lqo_blocks(const double[:, ::1] Z, const double[::1] sroot, const double[::1] e,
               const int64_t[::1] starts, const int64_t[::1] queries, double[::1] p,
               double[::1] work, int n_threads=1):
    """p_q = (I − Z_q S Z_qᵀ)⁻¹ e_q for each listed query; returns how many were not SPD."""
    # S = diag(sroot²) = (Λ + λ)⁻¹ in the eigenbasis of X̂ᵀX̂, Z = X̂V, e = ŷ − X̂w, so
    # Z_q S Z_qᵀ = H_qq, the hat matrix block of query q, and p_q is its held-out
    # residual.  Per query of m rows: W = Z_q diag(sroot) (row-major m × d is the
    # column-major d × m matrix Wᵀ), M = I − WᵀᵀWᵀ by dsyrk, Cholesky M = RᵀR by
    # dpotrf, p_q = M⁻¹ e_q by dpotrs; O(m² d + m³).  M is SPD in exact arithmetic;
    # a query where dpotrf fails gets p_q = nan and is counted.  Each query is
    # solved by one of n_threads threads, alone (the same bits for any n_threads),
    # in its thread's share of work: n_threads shares of at least m (d + m)
    # doubles for the largest listed query.
    cdef Py_ssize_t n_queries = queries.shape[0], share, k, q
    if n_queries == 0:
        return 0
    share = work.shape[0] // n_threads
    cdef int[::1] failed = np.zeros(n_queries, dtype=np.intc)
    with nogil:
        for k in prange(n_queries, schedule="dynamic", num_threads=n_threads):
            q = queries[k]
            failed[k] = lqo_block(Z, sroot, e, starts[q], <int> (starts[q + 1] - starts[q]), p,
                                  &work[threadid() * share])
    return int(np.sum(failed))


def times(const double[:, ::1] X, const double[:, ::1] V, double[:, ::1] out,
          Py_ssize_t block_rows, int n_threads=1):
    """out = X V (NumPy: X @ V, V d × k), blocks of block_rows rows on n_threads threads."""
    # Row-major out_b (m × k) is column-major (X_b V)ᵀ = Vᵀ X_bᵀ, and the row-major
    # buffers of V and X_b are the column-major Vᵀ and X_bᵀ: one dgemm per block,
    # each row's bits fixed by its block, never by the number of threads.
    cdef Py_ssize_t n = X.shape[0], n_blocks = (n + block_rows - 1) // block_rows, b, lo
    cdef int d = X.shape[1], k = V.shape[1], m
    cdef double one = 1.0, zero = 0.0
    cdef char notrans = b'N'
    if n == 0 or k == 0:
        return
    if d == 0:
        out[:, :] = 0.0
        return
    with nogil:
        for b in prange(n_blocks, schedule="static", num_threads=n_threads):
            lo = b * block_rows
            m = <int> (min(lo + block_rows, n) - lo)
            dgemm(&notrans, &notrans, &k, &m, &d, &one, <double*> &V[0, 0], &k,
                  <double*> &X[lo, 0], &d, &zero, &out[lo, 0], &k)


cdef void centre_query(const value_t* X, double* out, Py_ssize_t lo, Py_ssize_t hi,
                       Py_ssize_t d, double sq, double* mean) noexcept nogil:
    """Rows lo .. hi - 1 of out = sq (X − 1 meanᵀ) over those rows; X may be out (in place)."""
    # Two passes: the column means (summed in row order, then divided by m_q), then
    # the centred, scaled rows; float32 X is widened to double where it is read.
    cdef Py_ssize_t r, j
    cdef double inv_m
    cdef const value_t *xrow
    cdef double *orow
    if hi == lo:
        return
    for j in range(d):
        mean[j] = 0.0
    for r in range(lo, hi):
        xrow = X + r * d
        for j in range(d):
            mean[j] += <double> xrow[j]
    inv_m = 1.0 / <double> (hi - lo)
    for j in range(d):
        mean[j] = mean[j] * inv_m
    for r in range(lo, hi):
        xrow = X + r * d
        orow = out + r * d
        for j in range(d):
            orow[j] = (<double> xrow[j] - mean[j]) * sq


cdef int centre_chunk(const value_t* X, const value_t[::1] data, const index_t[::1] indices,
                      const index_t[::1] indptr, const int64_t[::1] starts,
                      const double[::1] scale, double[:, ::1] out, Py_ssize_t q0,
                      Py_ssize_t q1) noexcept nogil:
    """Queries q0 .. q1 - 1 of centre (dense X) or, X NULL, of centre_csr; -1 when out of memory."""
    cdef Py_ssize_t d = out.shape[1], q, r, j, k
    cdef double* orow
    cdef double* mean = <double*> malloc((d + 1) * sizeof(double))
    if mean == NULL:
        return -1
    for q in range(q0, q1):
        if X != NULL:
            centre_query(X, &out[0, 0], starts[q], starts[q + 1], d, scale[q], mean)
            continue
        for r in range(starts[q], starts[q + 1]):       # densify the query's rows in out
            orow = &out[r, 0]
            for j in range(d):
                orow[j] = 0.0
            for k in range(indptr[r], indptr[r + 1]):
                orow[indices[k]] += <double> data[k]
        centre_query(<const double*> &out[0, 0], &out[0, 0], starts[q], starts[q + 1], d,
                     scale[q], mean)
    free(mean)
    return 0


cdef centre_chunks(const value_t* X, const value_t[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, const int64_t[::1] starts,
                   const double[::1] scale, double[:, ::1] out, const int64_t[::1] chunks,
                   int n_threads):
    """centre_chunk over every chunk of queries (None: one chunk) on n_threads threads."""
    cdef Py_ssize_t n_chunks, k
    if out.shape[0] == 0 or out.shape[1] == 0:
        return
    chunks = chunk_list(chunks, starts.shape[0] - 1)
    n_chunks = chunks.shape[0] - 1
    cdef int[::1] status = np.zeros(max(n_chunks, 1), dtype=np.intc)
    with nogil:
        for k in prange(n_chunks, schedule="dynamic", num_threads=n_threads):
            status[k] = centre_chunk(X, data, indices, indptr, starts, scale, out, chunks[k],
                                     chunks[k + 1])
    check_chunks(status)


def centre(const value_t[:, ::1] X, const int64_t[::1] starts, const double[::1] scale,
           double[:, ::1] out, const int64_t[::1] chunks=None, int n_threads=1):
    """out_q = scale_q (X_q − 1 mean(X_q)ᵀ) for each query q (rows starts[q]:starts[q+1]).

    X may have one column (a vector); float32 X is widened to double where it is
    read (the bits float64 X of the same values gives).  Chunks of queries (None:
    one) run on n_threads threads, each query computed by one of them.
    """
    cdef const value_t[::1] no_data = None
    cdef const int64_t[::1] no_index = None
    if X.shape[0] == 0 or X.shape[1] == 0:
        return
    centre_chunks(&X[0, 0], no_data, no_index, no_index, starts, scale, out, chunks, n_threads)


def centre_csr(const value_t[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
               const int64_t[::1] starts, const double[::1] scale, double[:, ::1] out,
               const int64_t[::1] chunks=None, int n_threads=1):
    """centre of the CSR matrix (data, indices, indptr) with out.shape[1] columns, into out.

    Each query's rows are densified in out (duplicate entries added, in double,
    in stored order) and centred there: the same bits as centre of the dense
    matrix (float32 data: of the dense float32 matrix).
    """
    centre_chunks(<const value_t*> NULL, data, indices, indptr, starts, scale, out, chunks,
                  n_threads)


cdef void gram_tile(const double[:, ::1] X, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t i0,
                    Py_ssize_t i1, Py_ssize_t j0, Py_ssize_t j1, double* G,
                    unsigned char* nonzero) noexcept nogil:
    """G[i, j] = Σ_{r=lo}^{hi-1} X[r, i] X[r, j] for i in i0 .. i1-1, j in j0 .. j1-1, j ≥ i.

    G is row-major d × d; only its upper triangle is written.  On a diagonal tile
    (i0 = j0) nonzero[i] = 1 when column i has a non-zero entry among these rows.
    """
    # Row-major X[lo:hi] is the column-major d × m matrix A = X[lo:hi]ᵀ (lda d), and
    # the upper triangle of row-major G is the lower one of column-major G (dsyrk's
    # lower triangle: faster than its upper one in OpenBLAS 0.3.30 at d = 50).
    cdef int m = <int> (hi - lo), w = <int> (i1 - i0), v = <int> (j1 - j0)
    cdef int ld = <int> X.shape[1]
    cdef double one = 1.0, zero = 0.0
    cdef char lower = b'L'
    cdef char notrans = b'N'
    cdef char trans = b'T'
    cdef Py_ssize_t r, i, found = 0
    cdef const double* row
    if i0 == j0:
        # G[I, I] (column-major, lower) = A_I A_Iᵀ  (NumPy: X[lo:hi, I].T @ X[lo:hi, I])
        dsyrk(&lower, &notrans, &w, &m, &one, <double*> &X[lo, i0], &ld, &zero,
              G + i0 * ld + i0, &ld)
        r = lo
        while r < hi and found < w:                 # dense data: done after a row or two
            row = &X[r, 0]
            for i in range(i0, i1):
                if nonzero[i] == 0 and row[i] != 0.0:
                    nonzero[i] = 1
                    found += 1
            r += 1
    else:
        # G[J, I] (column-major) = A_J A_Iᵀ  (NumPy: X[lo:hi, J].T @ X[lo:hi, I])
        dgemm(&notrans, &trans, &v, &w, &m, &one, <double*> &X[lo, j0], &ld,
              <double*> &X[lo, i0], &ld, &zero, G + i0 * ld + j0, &ld)


def gram(const double[:, ::1] X, double[:, ::1] out, unsigned char[::1] nonzero,
         Py_ssize_t block_rows, Py_ssize_t panel, int n_threads=1):
    """out = XᵀX (NumPy: X.T @ X); nonzero[j] = 1 if column j has a non-zero entry, else 0.

    The rows are cut into blocks of block_rows and the columns into panels of
    panel; each (block, pair of panels) is one task on n_threads threads
    (BLAS dsyrk / dgemm on one thread each) writing its block's own d × d
    partial, and the partials are added in block order: the same bits for any
    n_threads.  Memory: ceil(n / block_rows) d² doubles of partials.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t n_blocks = max((n + block_rows - 1) // block_rows, 1)
    cdef Py_ssize_t n_panels = max((d + panel - 1) // panel, 1)
    cdef Py_ssize_t n_tiles = n_panels * (n_panels + 1) // 2
    cdef Py_ssize_t k, b, t, pi, pj, i, j, lo, hi
    cdef double s
    out[:, :] = 0.0
    nonzero[:] = 0
    if d == 0 or n == 0:
        return
    cdef double[:, :, ::1] partial = np.empty((n_blocks, d, d))
    cdef unsigned char[:, ::1] flags = np.zeros((n_blocks, d), dtype=np.uint8)
    cdef int64_t[::1] tile_i = np.empty(n_tiles, dtype=np.int64)
    cdef int64_t[::1] tile_j = np.empty(n_tiles, dtype=np.int64)
    t = 0
    for pj in range(n_panels):
        for pi in range(pj + 1):
            tile_i[t], tile_j[t] = pi, pj
            t += 1
    with nogil:
        for k in prange(n_blocks * n_tiles, schedule="dynamic", num_threads=n_threads):
            b = k // n_tiles
            t = k % n_tiles
            lo = b * block_rows
            hi = min(lo + block_rows, n)
            gram_tile(X, lo, hi, tile_i[t] * panel, min((tile_i[t] + 1) * panel, d),
                      tile_j[t] * panel, min((tile_j[t] + 1) * panel, d), &partial[b, 0, 0],
                      &flags[b, 0])
        # out's upper triangle = Σ_b partial[b] in block order, one row per task
        for i in prange(d, schedule="static", num_threads=n_threads):
            for j in range(i, d):
                s = 0.0
                for b in range(n_blocks):
                    s = s + partial[b, i, j]
                out[i, j] = s
    for j in range(d):
        for i in range(j):
            out[j, i] = out[i, j]
        for b in range(n_blocks):
            if flags[b, j]:
                nonzero[j] = 1


def divide(const double[:, ::1] X, double s, double[:, ::1] out, int n_threads=1):
    """out = X / s (NumPy: np.divide(X, s, out=out)), rows shared among n_threads threads."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, j
    if d == 0:
        return
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_threads):
            for j in range(d):
                out[i, j] = X[i, j] / s
