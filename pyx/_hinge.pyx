"""Kernels of the L1-hinge RankSVM (svm_rank's objective): the pairwise hinge
loss with its subgradient in O(n log L) without forming pairs, and the small
simplex-constrained QP of the cutting-plane dual.

Conventions as in _prsvm: query q holds the documents order[starts[q]:starts[q+1]]
listed by increasing score; rank holds label ranks 0 .. n_levels - 1 (higher is
more relevant).  A pair (i, j) of one query with rank_i > rank_j is active iff
scores[j] > scores[i] - 1.0 (a pair at margin exactly 1 has zero loss either way;
svm_rank's find_most_violated_constraint draws the same line).
"""
from cython.parallel cimport prange
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memset

import numpy as np

include "_chunks.pxi"


cdef struct CountSum:
    double n      # count of inserted documents
    double s      # sum of their (shifted) scores


cdef inline void tree_add(CountSum* tree, Py_ssize_t size, Py_ssize_t i,
                          double v) noexcept nogil:
    """Insert value v at position i (0-based) of a Fenwick tree with size - 1 positions."""
    i += 1
    while i < size:
        tree[i].n += 1.0
        tree[i].s += v
        i += i & (-i)


cdef inline void tree_clear(CountSum* tree, Py_ssize_t size, Py_ssize_t i) noexcept nogil:
    """Zero every node on position i's update path."""
    i += 1
    while i < size:
        tree[i].n = 0.0
        tree[i].s = 0.0
        i += i & (-i)


cdef inline CountSum tree_prefix(const CountSum* tree, Py_ssize_t i) noexcept nogil:
    """Count and sum of the values inserted at positions 0 .. i - 1."""
    cdef CountSum m
    m.n = 0.0
    m.s = 0.0
    while i > 0:
        m.n += tree[i].n
        m.s += tree[i].s
        i -= i & (-i)
    return m


cdef inline void count_add(double* tree, Py_ssize_t size, Py_ssize_t i) noexcept nogil:
    """Count one at position i of a counting Fenwick tree (tree_add without the sums)."""
    i += 1
    while i < size:
        tree[i] += 1.0
        i += i & (-i)


cdef inline void count_add_weighted(double* tree, Py_ssize_t size, Py_ssize_t i,
                                    double w) noexcept nogil:
    """Count w at position i (a document that weighs w)."""
    i += 1
    while i < size:
        tree[i] += w
        i += i & (-i)


cdef inline void count_clear(double* tree, Py_ssize_t size, Py_ssize_t i) noexcept nogil:
    """Zero every node on position i's update path."""
    i += 1
    while i < size:
        tree[i] = 0.0
        i += i & (-i)


cdef inline double count_prefix(const double* tree, Py_ssize_t i) noexcept nogil:
    """Count at positions 0 .. i - 1."""
    cdef double n = 0.0
    while i > 0:
        n += tree[i]
        i -= i & (-i)
    return n


cdef inline double two_level_sweeps(double loss, const double* ss, const int64_t* rr,
                                    const double* vv, double* gg, Py_ssize_t m_q, double c,
                                    const int64_t* order, double* grad_out) noexcept nogil:
    """hinge_chunk's two sweeps over one query whose labels have two levels, loss added to.

    With ranks 0 and 1 the prefix sums read one node of each tree: sweep 1's
    prefix below rank 1 is the count and sum of the rank-0 documents inserted,
    sweep 2's below reversed rank 1 the count (or weight) of the rank-1 ones.
    Here they are three numbers, added to in the same order as the nodes: the
    same bits as the trees, without their loops.
    """
    cdef Py_ssize_t t, p = m_q - 1
    cdef double n0 = 0.0, s0 = 0.0, n1 = 0.0, mn, ms, ci
    for t in range(m_q - 1, -1, -1):
        while p >= 0 and ss[p] > ss[t] - 1.0:
            if rr[p] == 0:
                n0 += 1.0
                s0 += ss[p]
            p -= 1
        mn = n0 if rr[t] == 1 else 0.0
        ms = s0 if rr[t] == 1 else 0.0
        ci = c if vv == NULL else c * vv[t]
        loss += ci * (mn * (1.0 - ss[t]) + ms)
        gg[t] = -ci * mn
    p = 0
    for t in range(m_q):
        while p < m_q and ss[t] > ss[p] - 1.0:
            if rr[p] == 1:
                n1 += 1.0 if vv == NULL else vv[p]
            p += 1
        grad_out[order[t]] = gg[t] + c * (n1 if rr[t] == 0 else 0.0)
    return loss


cdef int hinge_chunk(const double* scores, const int64_t* rank, const int64_t* starts,
                     const int64_t* order, const double* weight, const double* doc_weight,
                     Py_ssize_t n_levels, Py_ssize_t q0, Py_ssize_t q1, double* grad_out,
                     double* loss_out) noexcept nogil:
    """hinge over queries q0 .. q1 - 1 into loss_out[0] and grad_out; -1 when out of memory."""
    # With t = s - ref (ref: the query's median score, keeps the sums small), for
    # document i as the preferred side: n lower-label partners j with s_j > s_i - 1,
    # S = sum t_j:  loss += c (n (1 - t_i) + S),  g_i -= c n.  As the other side:
    # m higher-label partners k with s_i > s_k - 1:  g_i += c m.
    # Sweep 1 visits i by decreasing score and inserts j while s_j > s_i - 1;
    # sweep 2 visits i by increasing score and inserts k while s_i > s_k - 1, at
    # the reversed rank L - 1 - rank_k so that "rank > rank_i" is a prefix.
    # Each query's scores and ranks are first copied in score order (ss, rr) so
    # the sweeps read memory sequentially.  Sweep 2 needs counts only (a tree
    # of counts, half the memory traffic).  A tree with no more nodes than the
    # query has documents is cleared whole, a larger one along inserted paths.
    # With doc_weight (v, NULL: all 1), pair (i, j) weighs c_q v_i: sweep 1
    # multiplies i's terms by v_i, sweep 2 counts each k as v_k (copied to vv).
    cdef Py_ssize_t size = n_levels + 1
    cdef Py_ssize_t q, a, m_q, p, t, longest = 1
    cdef double c, ci, ref, loss = 0.0
    cdef CountSum m
    cdef int status = 0
    for q in range(q0, q1):
        longest = max(longest, starts[q + 1] - starts[q])
    cdef CountSum* tree = <CountSum*> calloc(size, sizeof(CountSum))
    cdef double* counts = <double*> calloc(size, sizeof(double))
    cdef double* ss = <double*> malloc(longest * sizeof(double))
    cdef double* gg = <double*> malloc(longest * sizeof(double))
    cdef int64_t* rr = <int64_t*> malloc(longest * sizeof(int64_t))
    cdef double* vv = NULL
    if doc_weight != NULL:
        vv = <double*> malloc(longest * sizeof(double))
    if tree == NULL or counts == NULL or ss == NULL or gg == NULL or rr == NULL or (
            doc_weight != NULL and vv == NULL):
        status = -1
    else:
        for q in range(q0, q1):
            a = starts[q]
            m_q = starts[q + 1] - a
            if m_q == 0:
                continue
            c = weight[q]
            ref = scores[order[a + m_q // 2]]
            for t in range(m_q):
                ss[t] = scores[order[a + t]] - ref
                rr[t] = rank[order[a + t]]
            if doc_weight != NULL:
                for t in range(m_q):
                    vv[t] = doc_weight[order[a + t]]
            if n_levels == 2:
                loss = two_level_sweeps(loss, ss, rr, vv, gg, m_q, c, &order[a], grad_out)
                continue
            p = m_q - 1
            for t in range(m_q - 1, -1, -1):
                while p >= 0 and ss[p] > ss[t] - 1.0:
                    tree_add(tree, size, rr[p], ss[p])
                    p -= 1
                m = tree_prefix(tree, rr[t])
                ci = c if doc_weight == NULL else c * vv[t]
                loss += ci * (m.n * (1.0 - ss[t]) + m.s)
                gg[t] = -ci * m.n
            if size <= m_q:
                memset(tree, 0, size * sizeof(CountSum))
            else:
                for t in range(p + 1, m_q):
                    tree_clear(tree, size, rr[t])
            p = 0
            for t in range(m_q):
                while p < m_q and ss[t] > ss[p] - 1.0:
                    if doc_weight == NULL:
                        count_add(counts, size, n_levels - 1 - rr[p])
                    else:
                        count_add_weighted(counts, size, n_levels - 1 - rr[p], vv[p])
                    p += 1
                grad_out[order[a + t]] = gg[t] + c * count_prefix(counts, n_levels - 1 - rr[t])
            if size <= m_q:
                memset(counts, 0, size * sizeof(double))
            else:
                for t in range(p):
                    count_clear(counts, size, n_levels - 1 - rr[t])
    loss_out[0] = loss
    free(tree)
    free(counts)
    free(ss)
    free(gg)
    free(rr)
    free(vv)
    return status


def hinge(const double[::1] scores, const int64_t[::1] rank,
          const int64_t[::1] starts, const int64_t[::1] order,
          const double[::1] weight, Py_ssize_t n_levels, double[::1] grad_out,
          const int64_t[::1] chunks=None, int n_threads=1, const double[::1] doc_weight=None):
    """Return L = sum_q c_q sum_{active (i, j)} v_i (1 - s_i + s_j) and write a subgradient dL/ds to grad_out.

    doc_weight: v, one per document (None: all 1), the weight of each pair on
    its preferred (higher-label) document.
    """
    # Threads as in _prsvm: chunks of whole queries fixed by the data, each with
    # its own scratch and partial loss, added in chunk order: the same bits for
    # any number of threads.
    chunks = chunk_list(chunks, starts.shape[0] - 1)
    cdef Py_ssize_t n_chunks = chunks.shape[0] - 1, k
    cdef double[::1] partial = np.zeros(max(n_chunks, 1))
    cdef int[::1] status = np.zeros(max(n_chunks, 1), dtype=np.intc)
    cdef double loss = 0.0
    cdef const double* v = NULL if doc_weight is None or doc_weight.shape[0] == 0 else &doc_weight[0]
    if scores.shape[0] == 0:
        return 0.0
    with nogil:
        for k in prange(n_chunks, schedule="dynamic", num_threads=n_threads):
            status[k] = hinge_chunk(&scores[0], &rank[0], &starts[0], &order[0], &weight[0], v,
                                    n_levels, chunks[k], chunks[k + 1], &grad_out[0],
                                    &partial[k])
    check_chunks(status)
    for k in range(n_chunks):
        loss += partial[k]
    return loss


def simplex_qp(const double[:, ::1] H, const double[::1] f, double[::1] alpha,
               double tol, Py_ssize_t max_steps):
    """Minimise ½αᵀHα − fᵀα over {α ≥ 0, Σα = Σα_start} in place; return (steps, gap bound).

    Greedy SMO (the most violating pair): move mass from the support's largest
    gradient to the smallest gradient, with the exact step clipped to the
    support.  The gap bound Σ α_k g_k − (Σα) min_k g_k ≥ objective − optimum
    (the Frank–Wolfe gap); it stops when that is ≤ tol or after max_steps.
    """
    cdef Py_ssize_t k = alpha.shape[0]
    cdef Py_ssize_t r, c, i, j, steps = 0
    cdef double total = 0.0, gap = 0.0, gi, gj, eta, delta
    cdef double* g = <double*> calloc(max(k, 1), sizeof(double))
    if g == NULL:
        raise MemoryError()
    try:
        with nogil:
            for r in range(k):
                total += alpha[r]
                g[r] = -f[r]
                for c in range(k):
                    g[r] += H[r, c] * alpha[c]
            while True:
                # g = H α − f;  i = argmin g,  j = argmax g over the support
                i = 0
                j = -1
                gap = 0.0
                for r in range(k):
                    gap += alpha[r] * g[r]
                    if g[r] < g[i]:
                        i = r
                    if alpha[r] > 0.0 and (j < 0 or g[r] > g[j]):
                        j = r
                gap -= total * g[i]
                if gap <= tol or steps >= max_steps or j < 0 or i == j:
                    break
                gi = g[i]
                gj = g[j]
                eta = H[i, i] + H[j, j] - 2.0 * H[i, j]
                delta = alpha[j]
                if eta > 0.0 and (gj - gi) / eta < delta:
                    delta = (gj - gi) / eta
                if delta <= 0.0:
                    break
                alpha[i] += delta
                alpha[j] -= delta
                if alpha[j] < 1e-300:
                    alpha[j] = 0.0
                for r in range(k):
                    g[r] += delta * (H[r, i] - H[r, j])
                steps += 1
    finally:
        free(g)
    return steps, max(gap, 0.0)
