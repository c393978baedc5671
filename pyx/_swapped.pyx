"""Counting swapped pairs per query in O(n log n) with a Fenwick tree over label ranks."""
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport int64_t

# Documents swept between two checks for Ctrl-C / SIGTERM (the GIL is taken back then).
cdef enum:
    SIGNAL_CHECK_DOCUMENTS = 1 << 16


cdef inline void fenwick_add(int64_t[::1] tree, Py_ssize_t i, int64_t v) noexcept nogil:
    i += 1
    while i < tree.shape[0]:
        tree[i] += v
        i += i & (-i)


cdef inline int64_t fenwick_prefix(const int64_t[::1] tree, Py_ssize_t i) noexcept nogil:
    """Sum of the entries 0 .. i - 1."""
    cdef int64_t s = 0
    while i > 0:
        s += tree[i]
        i -= i & (-i)
    return s


cdef inline bint same_score(double x, double y) noexcept nogil:
    """x and y tie: equal, or both NaN (NaN is one value, below every number)."""
    return x == y or (x != x and y != y)


cdef inline void count_query(const int64_t[::1] order, const int64_t[::1] rank,
                             const double[::1] scores, Py_ssize_t lo, Py_ssize_t hi,
                             int64_t[::1] tree, int64_t* nswap, int64_t* npairs) noexcept nogil:
    """One query, documents order[lo:hi] by decreasing score (NaN last)."""
    cdef Py_ssize_t a = lo, b, t
    # swapped: partners j with lower rank and score >= own score,
    # i.e. inserted earlier (higher score) or tied (same score block)
    while a < hi:
        b = a + 1                        # a block holds at least a: the sweep always advances
        while b < hi and same_score(scores[order[b]], scores[order[a]]):
            b += 1
        for t in range(a, b):
            fenwick_add(tree, rank[order[t]], 1)
        for t in range(a, b):
            nswap[0] += fenwick_prefix(tree, rank[order[t]])
        a = b
    # pairs: partners with lower rank anywhere in the query
    for t in range(lo, hi):
        npairs[0] += fenwick_prefix(tree, rank[order[t]])
    for t in range(lo, hi):
        fenwick_add(tree, rank[order[t]], -1)


def count_swapped(const int64_t[::1] order, const int64_t[::1] rank,
                  const double[::1] scores, const int64_t[::1] starts,
                  int64_t[::1] tree, int64_t[::1] swapped, int64_t[::1] pairs):
    """For each query q (documents order[starts[q]:starts[q+1]], sorted by
    decreasing score, NaN scores last), count the pairs with rank_i > rank_j
    (pairs[q]) and, among them, those not ranked strictly right (swapped[q]):
    score_i <= score_j, where NaN ties NaN and is below every number.

    rank holds label ranks 0 .. tree.shape[0] - 2; tree must be all zero and
    is left all zero.  Every sweep ends whatever the scores; Ctrl-C is
    honoured every SIGNAL_CHECK_DOCUMENTS documents (KeyboardInterrupt).
    """
    cdef Py_ssize_t q = 0, nq = starts.shape[0] - 1
    cdef int64_t nswap, npairs, swept
    while q < nq:
        with nogil:
            swept = 0
            while q < nq and swept < SIGNAL_CHECK_DOCUMENTS:
                nswap = 0
                npairs = 0
                count_query(order, rank, scores, starts[q], starts[q + 1], tree, &nswap, &npairs)
                swapped[q] = nswap
                pairs[q] = npairs
                swept += starts[q + 1] - starts[q] + 1
                q += 1
        PyErr_CheckSignals()
