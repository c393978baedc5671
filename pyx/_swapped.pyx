"""Counting swapped pairs per query in O(n log n) with a Fenwick tree over label ranks."""
from libc.stdint cimport int64_t


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


def count_swapped(const int64_t[::1] order, const int64_t[::1] rank,
                  const double[::1] scores, const int64_t[::1] starts,
                  int64_t[::1] tree, int64_t[::1] swapped, int64_t[::1] pairs):
    """For each query q (documents order[starts[q]:starts[q+1]], sorted by
    decreasing score), count the pairs with rank_i > rank_j (pairs[q]) and,
    among them, those not ranked strictly right, score_i <= score_j (swapped[q]).

    rank holds label ranks 0 .. tree.shape[0] - 2; tree must be all zero and
    is left all zero.
    """
    cdef Py_ssize_t q, a, b, t, i
    cdef int64_t below_same, nswap, npairs
    with nogil:
        for q in range(starts.shape[0] - 1):
            nswap = 0
            npairs = 0
            a = starts[q]
            # swapped: partners j with lower rank and score >= own score,
            # i.e. inserted earlier (higher score) or tied (same score block)
            while a < starts[q + 1]:
                b = a
                while b < starts[q + 1] and scores[order[b]] == scores[order[a]]:
                    b += 1
                for t in range(a, b):
                    fenwick_add(tree, rank[order[t]], 1)
                for t in range(a, b):
                    nswap += fenwick_prefix(tree, rank[order[t]])
                a = b
            # pairs: partners with lower rank anywhere in the query
            for t in range(starts[q], starts[q + 1]):
                npairs += fenwick_prefix(tree, rank[order[t]])
            for t in range(starts[q], starts[q + 1]):
                fenwick_add(tree, rank[order[t]], -1)
            swapped[q] = nswap
            pairs[q] = npairs
