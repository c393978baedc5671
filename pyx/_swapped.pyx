"""Counting swapped pairs per query in O(n log n) with a Fenwick tree over label ranks."""
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport int64_t
from libc.stdlib cimport qsort

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


cdef enum:
    PAIR_LOOP_DOCUMENTS = 64      # queries this small are counted pair by pair (no sort)


cdef extern from *:
    """
    #include <stdint.h>
    #include <stddef.h>
    /* Swapped and total pairs of one query's m documents, every pair looked at without
       branches on the data (bitwise masks the compiler can vectorise): O(m^2), faster
       than sorting for a few dozen documents.  A pair (i, j) with label_i > label_j is
       swapped unless score_i ranks strictly above score_j: greater, or a number
       against NaN (NaN ties NaN and is below every number). */
    static void rankfast_count_pairs(const double* s, const double* l, ptrdiff_t m,
                                     int64_t* nswap, int64_t* npairs) {
        int64_t swapped = 0, pairs = 0;
        for (ptrdiff_t i = 0; i < m; i++) {
            const double si = s[i], li = l[i];
            const int64_t i_number = si == si;
            for (ptrdiff_t j = i + 1; j < m; j++) {
                const double sj = s[j], lj = l[j];
                const int64_t higher = li > lj, lower = li < lj;
                const int64_t j_number = sj == sj;
                const int64_t i_above = (si > sj) | (i_number & (1 - j_number));
                const int64_t j_above = (sj > si) | (j_number & (1 - i_number));
                pairs += higher | lower;
                swapped += (higher & (1 - i_above)) | (lower & (1 - j_above));
            }
        }
        *nswap = swapped;
        *npairs = pairs;
    }
    """
    void count_pairs "rankfast_count_pairs"(const double* s, const double* l, Py_ssize_t m,
                                            int64_t* nswap, int64_t* npairs) nogil


cdef struct Keyed:
    double score
    Py_ssize_t index


cdef int by_decreasing_score(const void* a, const void* b) noexcept nogil:
    """Decreasing score, NaN last (one value below every number), then position."""
    cdef const Keyed* x = <const Keyed*>a
    cdef const Keyed* y = <const Keyed*>b
    cdef bint x_nan = x.score != x.score, y_nan = y.score != y.score
    if x_nan != y_nan:
        return 1 if x_nan else -1
    if not x_nan and x.score != y.score:
        return -1 if x.score > y.score else 1
    return (x.index > y.index) - (x.index < y.index)


cdef int by_value(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0], y = (<const double*>b)[0]
    return (x > y) - (x < y)


def count_swapped_runs(const double[::1] scores, const double[::1] labels,
                       const int64_t[::1] starts, int64_t[::1] swapped, int64_t[::1] pairs):
    """count_swapped for queries stored in file order, scores[starts[q]:starts[q+1]]:
    each query is sorted here (decreasing score, NaN last, then position; labels
    ranked), so a caller needs no numpy.  O(m log m) a query of m documents; a query
    of at most PAIR_LOOP_DOCUMENTS is counted pair by pair instead.  Labels are finite."""
    cdef Py_ssize_t q, i, m, lo, hi, n_levels, biggest = 0
    cdef int64_t nswap, npairs
    for q in range(starts.shape[0] - 1):
        biggest = max(biggest, starts[q + 1] - starts[q])
    keyed_bytes = bytearray(max(biggest, 1) * sizeof(Keyed))
    cdef Keyed* keyed = <Keyed*><char*>keyed_bytes
    levels_buffer = bytearray(max(biggest, 1) * sizeof(double))
    cdef double* levels = <double*><char*>levels_buffer
    order_buffer = bytearray(max(biggest, 1) * sizeof(int64_t))
    rank_buffer = bytearray(max(biggest, 1) * sizeof(int64_t))
    tree_buffer = bytearray((max(biggest, 1) + 1) * sizeof(int64_t))
    cdef int64_t[::1] order = memoryview(order_buffer).cast("q")
    cdef int64_t[::1] rank = memoryview(rank_buffer).cast("q")
    cdef int64_t[::1] tree = memoryview(tree_buffer).cast("q")
    for q in range(starts.shape[0] - 1):
        lo, hi = starts[q], starts[q + 1]
        m = hi - lo
        if m <= PAIR_LOOP_DOCUMENTS:
            nswap = npairs = 0
            if m > 0:
                with nogil:
                    count_pairs(&scores[lo], &labels[lo], m, &nswap, &npairs)
            swapped[q] = nswap
            pairs[q] = npairs
            continue
        with nogil:
            for i in range(m):
                keyed[i].score = scores[lo + i]
                keyed[i].index = i
                levels[i] = labels[lo + i]
            qsort(keyed, m, sizeof(Keyed), by_decreasing_score)
            qsort(levels, m, sizeof(double), by_value)
            n_levels = 0
            for i in range(m):
                if n_levels == 0 or levels[i] != levels[n_levels - 1]:
                    levels[n_levels] = levels[i]
                    n_levels += 1
            for i in range(m):
                order[i] = keyed[i].index
                rank[i] = level_of(levels, n_levels, labels[lo + i])
            nswap = 0
            npairs = 0
            count_query(order, rank, scores[lo:hi], 0, m, tree[:n_levels + 1], &nswap, &npairs)
        swapped[q] = nswap
        pairs[q] = npairs


cdef inline Py_ssize_t level_of(const double* levels, Py_ssize_t n, double value) noexcept nogil:
    """Position of value in the sorted distinct levels[0:n]."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if levels[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


def run_starts(const int64_t[::1] qid, int64_t[::1] out):
    """Positions i where a run of equal qid starts (i = 0, or qid[i] != qid[i - 1]); their count.

    out holds len(qid) entries at least.
    """
    cdef Py_ssize_t i, k = 0
    with nogil:
        for i in range(qid.shape[0]):
            if i == 0 or qid[i] != qid[i - 1]:
                out[k] = i
                k += 1
    return k
