"""PRSVM+ loss kernels: squared-hinge pairwise loss, gradient and Hessian-vector
product in O(n log L) per call without enumerating pairs (Chapelle & Keerthi 2010,
Sect. 4, with Lee & Lin 2014's tree over label ranks instead of a loop over levels).

Shared conventions.  Query q holds the documents order[starts[q]:starts[q+1]],
listed by increasing score.  rank holds label ranks 0 .. n_levels - 1 (higher is
more relevant).  A pair (i, j) of one query with rank_i > rank_j is active iff
scores[j] > scores[i] - 1.0, evaluated exactly so.  Each sweep keeps one Fenwick
tree over label ranks holding, per rank, the count, sum and sum of squares of the
inserted values (flat, one node per rank, for up to 8 ranks); an insertion pointer
moves monotonically through the sorted query, so a query of m documents costs
O(m log L).  After each sweep of a query
the paths it touched are zeroed again, so the tree is reset in O(m log L) and
exactly (no floating-point residue of subtracting what was added).
"""
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, malloc

import numpy as np


include "_chunks.pxi"


cdef struct Moments:
    double n      # count of inserted documents
    double s      # sum of their values
    double ss     # sum of squares of their values


# With few label levels (2 to 5 in LETOR, MSLR, Yahoo) the "tree" is flat: node k
# holds level k - 1 alone, an insertion touches one node and a prefix adds the nodes
# below it in order.  A Fenwick path's length varies with the level, which the
# branch predictor cannot learn from one document to the next: flat, the loss and
# the Hessian product run 1.4x as fast on 5 levels (benchmarks/README.md).
cdef enum:
    FLAT_SIZE = 9       # up to 8 label levels


cdef inline void fenwick_add(Moments* tree, Py_ssize_t size, Py_ssize_t i,
                             double v) noexcept nogil:
    """Insert value v at position i (0-based) of a tree with size - 1 positions."""
    i += 1
    if size <= FLAT_SIZE:
        tree[i].n += 1.0
        tree[i].s += v
        tree[i].ss += v * v
        return
    while i < size:
        tree[i].n += 1.0
        tree[i].s += v
        tree[i].ss += v * v
        i += i & (-i)


cdef inline void fenwick_add_weighted(Moments* tree, Py_ssize_t size, Py_ssize_t i,
                                      double v, double w) noexcept nogil:
    """Insert value v with weight w at position i: count w, sum w v, sum of squares w v²."""
    i += 1
    if size <= FLAT_SIZE:
        tree[i].n += w
        tree[i].s += w * v
        tree[i].ss += w * v * v
        return
    while i < size:
        tree[i].n += w
        tree[i].s += w * v
        tree[i].ss += w * v * v
        i += i & (-i)


cdef inline void fenwick_clear(Moments* tree, Py_ssize_t size, Py_ssize_t i) noexcept nogil:
    """Zero every node on position i's update path."""
    i += 1
    if size <= FLAT_SIZE:
        tree[i].n = 0.0
        tree[i].s = 0.0
        tree[i].ss = 0.0
        return
    while i < size:
        tree[i].n = 0.0
        tree[i].s = 0.0
        tree[i].ss = 0.0
        i += i & (-i)


cdef inline Moments fenwick_prefix(const Moments* tree, Py_ssize_t size,
                                   Py_ssize_t i) noexcept nogil:
    """Moments of the values inserted at positions 0 .. i - 1."""
    cdef Moments m
    cdef Py_ssize_t k
    m.n = 0.0
    m.s = 0.0
    m.ss = 0.0
    if size <= FLAT_SIZE:
        for k in range(1, i + 1):
            m.n += tree[k].n
            m.s += tree[k].s
            m.ss += tree[k].ss
        return m
    while i > 0:
        m.n += tree[i].n
        m.s += tree[i].s
        m.ss += tree[i].ss
        i -= i & (-i)
    return m


# Threads.  Queries are independent: the kernels take chunks of whole queries
# (chunk c: queries chunks[c]:chunks[c+1], fixed by the data, not by the number of
# threads), run them on n_threads OpenMP threads, each chunk with its own Fenwick
# tree and its own partial loss, and add the partial losses in chunk order, so the
# results are the same bits for any number of threads.  Between batches of chunks
# the GIL is taken to let Ctrl-C through.

cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1

cdef enum:
    BATCH = 256         # chunks between two checks for signals


cdef inline void loss_chunk(const double* scores, const int64_t* rank, const int64_t* starts,
                     const int64_t* order, const double* weight, const double* doc_weight,
                     Py_ssize_t n_levels, Py_ssize_t q0, Py_ssize_t q1, Moments* tree,
                     double* grad_out, double* loss_out) noexcept nogil:
    """squared_hinge over queries q0 .. q1 - 1, with a zeroed tree (left zeroed)."""
    # Per query, scores are shifted by a reference c (the median score) to keep
    # the moment sums small: t = s - c.  For document i, with u_i = 1 - t_i,
    #   lower partners  j (rank_j < rank_i, s_j > s_i - 1):  n, S1 = sum t_j, S2 = sum t_j^2
    #     loss  += c_q (n u_i^2 + 2 u_i S1 + S2)          (each pair counted once, here)
    #     g_i   -= 2 c_q (n u_i + S1)
    #   higher partners k (rank_k > rank_i, s_i > s_k - 1): m, T1 = sum t_k
    #     g_i   += 2 c_q (m (1 + t_i) - T1)
    # Sweep 1 visits i by decreasing score and inserts j while s_j > s_i - 1.0;
    # sweep 2 visits i by increasing score and inserts k while s_i > s_k - 1.0,
    # at the reversed rank L - 1 - rank_k so that "rank > rank_i" is a prefix.
    # With doc_weight (v, NULL: all 1), pair (i, j) weighs c_q v_i, v of its
    # preferred document: sweep 1 multiplies i's terms by v_i, sweep 2 inserts
    # each k with weight v_k (count v_k, sum v_k t_k).
    cdef Py_ssize_t size = n_levels + 1
    cdef Py_ssize_t q, a, b, p, t, i, j
    cdef double c, ci, ref, u, ti, loss = 0.0
    cdef Moments m
    for q in range(q0, q1):
        a = starts[q]
        b = starts[q + 1]
        if a == b:
            continue
        c = weight[q]
        ref = scores[order[a + (b - a) // 2]]
        # sweep 1: lower-label partners, by decreasing score
        p = b - 1
        for t in range(b - 1, a - 1, -1):
            i = order[t]
            while p >= a and scores[order[p]] > scores[i] - 1.0:
                j = order[p]
                fenwick_add(tree, size, rank[j], scores[j] - ref)
                p -= 1
            m = fenwick_prefix(tree, size, rank[i])
            u = 1.0 - (scores[i] - ref)
            ci = c if doc_weight == NULL else c * doc_weight[i]
            loss += ci * (m.n * u * u + 2.0 * u * m.s + m.ss)
            grad_out[i] = -2.0 * ci * (m.n * u + m.s)
        for t in range(p + 1, b):
            fenwick_clear(tree, size, rank[order[t]])
        # sweep 2: higher-label partners, by increasing score
        p = a
        for t in range(a, b):
            i = order[t]
            while p < b and scores[i] > scores[order[p]] - 1.0:
                j = order[p]
                if doc_weight == NULL:
                    fenwick_add(tree, size, n_levels - 1 - rank[j], scores[j] - ref)
                else:
                    fenwick_add_weighted(tree, size, n_levels - 1 - rank[j], scores[j] - ref,
                                         doc_weight[j])
                p += 1
            m = fenwick_prefix(tree, size, n_levels - 1 - rank[i])
            ti = scores[i] - ref
            grad_out[i] += 2.0 * c * (m.n * (1.0 + ti) - m.s)
        for t in range(a, p):
            fenwick_clear(tree, size, n_levels - 1 - rank[order[t]])
    loss_out[0] = loss


cdef inline void hessvec_chunk(const double* scores, const int64_t* rank, const int64_t* starts,
                        const int64_t* order, const double* weight, const double* doc_weight,
                        Py_ssize_t n_levels, const double* d, Py_ssize_t q0, Py_ssize_t q1,
                        Moments* tree, double* out) noexcept nogil:
    """squared_hinge_hessvec over queries q0 .. q1 - 1, with a zeroed tree (left zeroed)."""
    # out_i = 2 c_q (a_i d_i - sum_{active partners j of i} d_j), a_i = number of
    # active partners of i, lower and higher.  Same two sweeps as loss_chunk,
    # inserting d_j instead of the shifted score (the sum of squares is unused);
    # doc_weight as there.
    cdef Py_ssize_t size = n_levels + 1
    cdef Py_ssize_t q, a, b, p, t, i, j
    cdef double c, ci
    cdef Moments m
    for q in range(q0, q1):
        a = starts[q]
        b = starts[q + 1]
        c = weight[q]
        # sweep 1: lower-label partners, by decreasing score
        p = b - 1
        for t in range(b - 1, a - 1, -1):
            i = order[t]
            while p >= a and scores[order[p]] > scores[i] - 1.0:
                j = order[p]
                fenwick_add(tree, size, rank[j], d[j])
                p -= 1
            m = fenwick_prefix(tree, size, rank[i])
            ci = c if doc_weight == NULL else c * doc_weight[i]
            out[i] = 2.0 * ci * (m.n * d[i] - m.s)
        for t in range(p + 1, b):
            fenwick_clear(tree, size, rank[order[t]])
        # sweep 2: higher-label partners, by increasing score
        p = a
        for t in range(a, b):
            i = order[t]
            while p < b and scores[i] > scores[order[p]] - 1.0:
                j = order[p]
                if doc_weight == NULL:
                    fenwick_add(tree, size, n_levels - 1 - rank[j], d[j])
                else:
                    fenwick_add_weighted(tree, size, n_levels - 1 - rank[j], d[j], doc_weight[j])
                p += 1
            m = fenwick_prefix(tree, size, n_levels - 1 - rank[i])
            out[i] += 2.0 * c * (m.n * d[i] - m.s)
        for t in range(a, p):
            fenwick_clear(tree, size, n_levels - 1 - rank[order[t]])


cdef Moments[:, ::1] thread_trees(int n_threads, Py_ssize_t n_levels):
    """One zeroed Fenwick tree per thread (threadid() picks it), reused by its chunks.

    Each query leaves its tree zeroed, so a tree serves any number of chunks; per
    thread rather than per chunk, as a tree holds one node per label level (as
    many as documents with real-valued labels).
    """
    return np.zeros((max(n_threads, 1), n_levels + 1),
                    dtype=[("n", np.float64), ("s", np.float64), ("ss", np.float64)])


def squared_hinge(const double[::1] scores, const int64_t[::1] rank,
                  const int64_t[::1] starts, const int64_t[::1] order,
                  const double[::1] weight, Py_ssize_t n_levels, double[::1] grad_out,
                  const int64_t[::1] chunks=None, int n_threads=1,
                  const double[::1] doc_weight=None):
    """Return L = sum_q c_q sum_{active (i, j)} v_i (1 - s_i + s_j)^2 and write dL/ds to grad_out.

    doc_weight: v, one per document (None: all 1), the weight of each pair on
    its preferred (higher-label) document.
    """
    chunks = chunk_list(chunks, starts.shape[0] - 1)
    cdef const double* v = NULL if doc_weight is None or doc_weight.shape[0] == 0 else &doc_weight[0]
    cdef Py_ssize_t n_chunks = chunks.shape[0] - 1, lo, hi, k
    cdef double[::1] partial = np.zeros(max(n_chunks, 1))
    cdef double loss = 0.0
    if scores.shape[0] == 0:
        return 0.0
    cdef Moments[:, ::1] trees = thread_trees(n_threads, n_levels)
    lo = 0
    while lo < n_chunks:
        hi = min(lo + BATCH, n_chunks)
        with nogil:
            for k in prange(lo, hi, schedule="dynamic", num_threads=n_threads):
                if v == NULL:           # a constant NULL: the compiler drops the weights' branches
                    loss_chunk(&scores[0], &rank[0], &starts[0], &order[0], &weight[0], NULL,
                               n_levels, chunks[k], chunks[k + 1], &trees[threadid(), 0],
                               &grad_out[0], &partial[k])
                else:
                    loss_chunk(&scores[0], &rank[0], &starts[0], &order[0], &weight[0], v,
                               n_levels, chunks[k], chunks[k + 1], &trees[threadid(), 0],
                               &grad_out[0], &partial[k])
        PyErr_CheckSignals()
        lo = hi
    for k in range(n_chunks):
        loss += partial[k]
    return loss


def squared_hinge_hessvec(const double[::1] scores, const int64_t[::1] rank,
                          const int64_t[::1] starts, const int64_t[::1] order,
                          const double[::1] weight, Py_ssize_t n_levels,
                          const double[::1] d, double[::1] out,
                          const int64_t[::1] chunks=None, int n_threads=1,
                          const double[::1] doc_weight=None):
    """Write out = H d, the generalized Hessian of squared_hinge (active set fixed at scores)."""
    chunks = chunk_list(chunks, starts.shape[0] - 1)
    cdef const double* v = NULL if doc_weight is None or doc_weight.shape[0] == 0 else &doc_weight[0]
    cdef Py_ssize_t n_chunks = chunks.shape[0] - 1, lo, hi, k
    if scores.shape[0] == 0:
        return
    cdef Moments[:, ::1] trees = thread_trees(n_threads, n_levels)
    lo = 0
    while lo < n_chunks:
        hi = min(lo + BATCH, n_chunks)
        with nogil:
            for k in prange(lo, hi, schedule="dynamic", num_threads=n_threads):
                if v == NULL:
                    hessvec_chunk(&scores[0], &rank[0], &starts[0], &order[0], &weight[0], NULL,
                                  n_levels, &d[0], chunks[k], chunks[k + 1],
                                  &trees[threadid(), 0], &out[0])
                else:
                    hessvec_chunk(&scores[0], &rank[0], &starts[0], &order[0], &weight[0], v,
                                  n_levels, &d[0], chunks[k], chunks[k + 1],
                                  &trees[threadid(), 0], &out[0])
        PyErr_CheckSignals()
        lo = hi


# ---- the Hessian in score space, many directions at once ----------------------------
#
# squared_hinge_hessian_columns writes A D for a block of columns D (n x k, rows of
# documents): column c of the result is squared_hinge_hessvec of column c of D, bit for
# bit (the same sweeps, the same order of additions).  Its tree holds, per label rank,
# a count and k sums; the columns are split into blocks of COLUMN_BLOCK, each block one
# task of the threads (the documents' order, not the threads, fixes every sum).

cdef enum:
    COLUMN_BLOCK = 32


cdef inline void columns_add(double* count, double* sums, Py_ssize_t size, Py_ssize_t width,
                             Py_ssize_t i, const double* v, double w) noexcept nogil:
    """Insert the row v (width values) with weight w at position i (as fenwick_add_weighted)."""
    cdef Py_ssize_t c
    i += 1
    while True:
        count[i] += w
        if w == 1.0:
            for c in range(width):
                sums[i * width + c] += v[c]
        else:
            for c in range(width):
                sums[i * width + c] += w * v[c]
        if size <= FLAT_SIZE:
            return
        i += i & (-i)
        if i >= size:
            return


cdef inline void columns_clear(double* count, double* sums, Py_ssize_t size, Py_ssize_t width,
                               Py_ssize_t i) noexcept nogil:
    """Zero every node on position i's update path."""
    cdef Py_ssize_t c
    i += 1
    while True:
        count[i] = 0.0
        for c in range(width):
            sums[i * width + c] = 0.0
        if size <= FLAT_SIZE:
            return
        i += i & (-i)
        if i >= size:
            return


cdef inline double columns_prefix(const double* count, const double* sums, Py_ssize_t size,
                                  Py_ssize_t width, Py_ssize_t i, double* acc) noexcept nogil:
    """acc = the sums of the rows inserted at positions 0 .. i - 1; returns their count.

    The nodes are added in fenwick_prefix's order, so each column's sum is its bits."""
    cdef Py_ssize_t c, k
    cdef double n = 0.0
    for c in range(width):
        acc[c] = 0.0
    if size <= FLAT_SIZE:
        for k in range(1, i + 1):
            n += count[k]
            for c in range(width):
                acc[c] += sums[k * width + c]
        return n
    while i > 0:
        n += count[i]
        for c in range(width):
            acc[c] += sums[i * width + c]
        i -= i & (-i)
    return n


cdef int hessian_block(const double* scores, const int64_t* rank, const int64_t* starts,
                       const int64_t* order, const double* weight, const double* doc_weight,
                       Py_ssize_t n_levels, Py_ssize_t n_queries, const double* D,
                       Py_ssize_t k, Py_ssize_t c0, Py_ssize_t width,
                       double* out) noexcept nogil:
    """Columns c0 .. c0 + width - 1 of out = A D (hessvec_chunk's sweeps on rows of width
    values); -1 when out of memory."""
    cdef Py_ssize_t size = n_levels + 1
    cdef Py_ssize_t q, a, b, p, t, i, j, c
    cdef double c_q, ci, n
    cdef double* count = <double*> calloc(size, sizeof(double))
    cdef double* sums = <double*> calloc(size * width, sizeof(double))
    cdef double* acc = <double*> malloc(width * sizeof(double))
    if count == NULL or sums == NULL or acc == NULL:
        free(count)
        free(sums)
        free(acc)
        return -1
    for q in range(n_queries):
        a = starts[q]
        b = starts[q + 1]
        c_q = weight[q]
        # sweep 1: lower-label partners, by decreasing score
        p = b - 1
        for t in range(b - 1, a - 1, -1):
            i = order[t]
            while p >= a and scores[order[p]] > scores[i] - 1.0:
                j = order[p]
                columns_add(count, sums, size, width, rank[j], &D[j * k + c0], 1.0)
                p -= 1
            n = columns_prefix(count, sums, size, width, rank[i], acc)
            ci = c_q if doc_weight == NULL else c_q * doc_weight[i]
            for c in range(width):
                out[i * k + c0 + c] = 2.0 * ci * (n * D[i * k + c0 + c] - acc[c])
        for t in range(p + 1, b):
            columns_clear(count, sums, size, width, rank[order[t]])
        # sweep 2: higher-label partners, by increasing score
        p = a
        for t in range(a, b):
            i = order[t]
            while p < b and scores[i] > scores[order[p]] - 1.0:
                j = order[p]
                columns_add(count, sums, size, width, n_levels - 1 - rank[j], &D[j * k + c0],
                            1.0 if doc_weight == NULL else doc_weight[j])
                p += 1
            n = columns_prefix(count, sums, size, width, n_levels - 1 - rank[i], acc)
            for c in range(width):
                out[i * k + c0 + c] += 2.0 * c_q * (n * D[i * k + c0 + c] - acc[c])
        for t in range(a, p):
            columns_clear(count, sums, size, width, n_levels - 1 - rank[order[t]])
    free(count)
    free(sums)
    free(acc)
    return 0


def squared_hinge_hessian_columns(const double[::1] scores, const int64_t[::1] rank,
                                  const int64_t[::1] starts, const int64_t[::1] order,
                                  const double[::1] weight, Py_ssize_t n_levels,
                                  const double[:, ::1] D, double[:, ::1] out, int n_threads=1,
                                  const double[::1] doc_weight=None):
    """Write out = A D, A the generalized Hessian of squared_hinge in score space (active set
    fixed at scores): column c of out is squared_hinge_hessvec of D[:, c], the same bits."""
    cdef const double* v = NULL if doc_weight is None or doc_weight.shape[0] == 0 else &doc_weight[0]
    cdef Py_ssize_t k = D.shape[1], n_blocks = (D.shape[1] + COLUMN_BLOCK - 1) // COLUMN_BLOCK
    cdef Py_ssize_t n_queries = starts.shape[0] - 1, block
    cdef int[::1] status = np.zeros(max(n_blocks, 1), dtype=np.intc)
    if D.shape[0] != scores.shape[0] or out.shape[0] != D.shape[0] or out.shape[1] != k:
        raise ValueError("D and out must have one row per document and the same columns")
    if scores.shape[0] == 0 or k == 0:
        return
    with nogil:
        for block in prange(n_blocks, schedule="dynamic", num_threads=n_threads):
            status[block] = hessian_block(
                &scores[0], &rank[0], &starts[0], &order[0], &weight[0], v, n_levels, n_queries,
                &D[0, 0], k, block * COLUMN_BLOCK, min(COLUMN_BLOCK, k - block * COLUMN_BLOCK),
                &out[0, 0])
    check_chunks(status)


cdef enum:
    WARM_MOVES = 2        # a warm sort's insertions may move a document this many places on average


cdef void merge_sort(int64_t* idx, int64_t* tmp, Py_ssize_t m,
                     const double* key) noexcept nogil:
    """Stable sort of idx[0:m] by key[idx]: insertion sort on runs of 16, then merges."""
    cdef Py_ssize_t lo, hi, i, j, k, width, mid
    cdef int64_t v
    cdef int64_t* src = idx
    cdef int64_t* dst = tmp
    cdef int64_t* swap
    lo = 0
    while lo < m:
        hi = min(lo + 16, m)
        for i in range(lo + 1, hi):
            v = src[i]
            j = i
            while j > lo and key[src[j - 1]] > key[v]:
                src[j] = src[j - 1]
                j -= 1
            src[j] = v
        lo += 16
    width = 16
    while width < m:
        lo = 0
        while lo < m:
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if key[src[j]] < key[src[i]]:
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
            lo += 2 * width
        swap = src
        src = dst
        dst = swap
        width *= 2
    if src != idx:
        for i in range(m):
            idx[i] = src[i]


cdef bint insertion_sort(int64_t* idx, Py_ssize_t m, const double* key,
                         Py_ssize_t budget) noexcept nogil:
    """Sort idx[0:m] by (key[idx], idx) by insertion from the order idx holds: about m
    steps when it is nearly sorted.  False (idx then some permutation of its entries)
    once it has moved entries more than budget places in all, or at a NaN key, whose
    place a stable sort leaves to its order of comparisons."""
    cdef Py_ssize_t i, j, moves = 0
    cdef int64_t v, u
    cdef double kv, ku
    if m == 0 or key[idx[0]] != key[idx[0]]:
        return m == 0
    for i in range(1, m):
        v = idx[i]
        kv = key[v]
        if kv != kv:
            return False
        j = i
        while j > 0:
            u = idx[j - 1]
            ku = key[u]
            if ku < kv or (ku == kv and u < v):
                break
            idx[j] = u
            j -= 1
        idx[j] = v
        moves += i - j
        if moves > budget:
            return False
    return True


cdef int sort_chunk(const double* scores, const int64_t* starts, Py_ssize_t q0,
                    Py_ssize_t q1, int64_t* order, const int64_t* start) noexcept nogil:
    """order[starts[q]:starts[q+1]] for queries q0 .. q1 - 1; -1 when out of memory.

    start (NULL: none): each query's range holds a permutation of its documents (a
    previous call's order), from which the query is sorted by insertion while that
    takes fewer than WARM_MOVES moves a document, else by the merge sort from the
    documents' own order.  A stable sort from there sorts by (score, document),
    and so does the insertion: either way the result is the same."""
    cdef Py_ssize_t q, i, a, b, longest = 1
    cdef int64_t* tmp
    for q in range(q0, q1):
        longest = max(longest, starts[q + 1] - starts[q])
    tmp = <int64_t*> malloc(longest * sizeof(int64_t))
    if tmp == NULL:
        return -1
    for q in range(q0, q1):
        a, b = starts[q], starts[q + 1]
        if start != NULL:
            for i in range(a, b):
                order[i] = start[i]
            if insertion_sort(&order[a], b - a, scores, WARM_MOVES * (b - a)):
                continue
        for i in range(a, b):
            order[i] = i
        if b - a > 1:
            merge_sort(&order[a], tmp, b - a, scores)
    free(tmp)
    return 0


def sort_within_queries(const double[::1] scores, const int64_t[::1] starts,
                        int64_t[::1] order, const int64_t[::1] chunks=None, int n_threads=1,
                        const int64_t[::1] start=None):
    """order[starts[q]:starts[q+1]] = that query's documents by increasing score (stable).

    start: for each query, a permutation of its documents to start from (e.g. this
    function's order at nearby scores; it may be order itself): fewer steps when
    few documents change places, and the same result as without it."""
    chunks = chunk_list(chunks, starts.shape[0] - 1)
    cdef Py_ssize_t n_chunks = chunks.shape[0] - 1, k
    cdef int[::1] status = np.zeros(max(n_chunks, 1), dtype=np.intc)
    cdef const int64_t* begin = NULL
    if scores.shape[0] == 0:
        return
    if start is not None:
        if start.shape[0] != scores.shape[0]:
            raise ValueError("start must hold one document per score")
        begin = &start[0]
    with nogil:
        for k in prange(n_chunks, schedule="dynamic", num_threads=n_threads):
            status[k] = sort_chunk(&scores[0], &starts[0], chunks[k], chunks[k + 1], &order[0],
                                   begin)
    check_chunks(status)
