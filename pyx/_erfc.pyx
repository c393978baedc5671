"""Weighted sums of erfc functions, E(y_j) = sum_i q_i erfc(y_j - z_i), and the
per-query sums of RankNCG's gradient (Raykar, Duraiswami & Krishnapuram 2008, Sect. 4-5).

Fast transform (Sect. 5).  Beaulieu's series
    erfc(s) ~ 1 - sum_{n = 1, 3, .., 2p-1} coef[m] sin(2 n h s),
    coef[m] = (4/pi) exp(-n^2 h^2) / n,  n = 2m + 1,
is eps-accurate for |s| <= r.  Sources go into cells of width w = 2 r_x
of a uniform grid (cell k: base + [k w, (k + 1) w), centre c_k).  A target y in cell t
takes cells t - L .. t + L by the series, every cell beyond t + L as 2 Q_k (erfc ~ 2,
sources far right of y) and every cell before t - L as 0 (L w = erfcinv(eps): a far
source is at least L w away; a series source at most (L + 1) w = r).  The series is
separated around cell centres,
    sum_{i in k} q_i sin(2nh(y - z_i)) = Im[ e^{i 2nh(y - c_t)} e^{i 2nh(c_t - c_k)} M_n^k ],
    M_n^k = sum_{i in k} q_i e^{i 2nh(c_k - z_i)},
so each source costs O(p) once, each target cell O(p) per cell of its window (the
window moment W_n = sum_k coef M_n^k e^{i 2nh(c_t - c_k)}), each target O(p).  Powers
e^{i n phi} come from one sin and one cos per point by the recurrence
e^{i(n+2)phi} = e^{i n phi} e^{2 i phi}.  All phases are taken from differences of
nearby numbers (y - c_t, c_t - c_k, c_k - z), so accuracy does not depend on where
the points lie on the line.

Two layouts put points into cells.  Dense: one grid from the smallest source, points
counted into cells (counting sort, O(N + M + cells)); used when the grid has at most
`dense_limit` cells.  Sorted: sources and targets sorted (qsort), sources split into
groups wherever two neighbours are more than `gap` apart, one grid per group, so the
number of cells is O(N) however far apart the points are; a target belongs to the
nearest group (every other group is then far: at least gap / 2 > erfcinv(eps) away).
Cell ids of successive groups are spaced so that no window spans two groups.
"""
from cython.parallel cimport prange
from libc.math cimport cos, erfc, fabs, floor, sin
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, malloc, qsort

import numpy as np


include "_chunks.pxi"


cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1

cdef enum:
    BATCH = 256         # chunks of queries between two checks for signals


cdef struct Series:
    double w              # cell width 2 r_x
    double h              # frequency step of the series
    Py_ssize_t p          # number of terms
    Py_ssize_t L          # cells taken by the series on each side of a target's cell
    double gap            # sorted layout: neighbours further apart start a new group
    Py_ssize_t dense_limit  # dense layout when the grid has at most this many cells
    const double* coef    # coef[m] = (4/pi) exp(-n^2 h^2) / n, n = 2m + 1


cdef struct Cells:
    Py_ssize_t n          # non-empty cells
    int64_t* id           # [n] increasing cell ids
    double* centre        # [n] cell centres
    Py_ssize_t* start     # [n + 1] members of cell k: member[start[k]:start[k + 1]]
    Py_ssize_t* member    # point indices, cell after cell
    double* v             # their values, in the same order (contiguous reads)
    double* q             # their weights (sources with weights only, else NULL)


cdef struct Keyed:
    double v
    Py_ssize_t i


cdef int cells_alloc(Cells* c, Py_ssize_t count, bint weighted) noexcept nogil:
    c.n = 0
    c.id = <int64_t*> malloc((count + 1) * sizeof(int64_t))
    c.centre = <double*> malloc((count + 1) * sizeof(double))
    c.start = <Py_ssize_t*> malloc((count + 1) * sizeof(Py_ssize_t))
    c.member = <Py_ssize_t*> malloc((count + 1) * sizeof(Py_ssize_t))
    c.v = <double*> malloc((count + 1) * sizeof(double))
    c.q = <double*> malloc((count + 1) * sizeof(double)) if weighted else NULL
    if (c.id == NULL or c.centre == NULL or c.start == NULL or c.member == NULL
            or c.v == NULL or (weighted and c.q == NULL)):
        return -1
    return 0


cdef void cells_free(Cells* c) noexcept nogil:
    free(c.id)
    free(c.centre)
    free(c.start)
    free(c.member)
    free(c.v)
    free(c.q)


cdef inline double cell_of(double v, double base, double w, double lowest,
                           double highest) noexcept nogil:
    """floor((v - base) / w) clamped to [lowest, highest] (as a double: no overflow)."""
    cdef double x = floor((v - base) / w)
    if x < lowest:
        return lowest
    if x > highest:
        return highest
    return x


cdef int dense_cells(const double* v, const double* q, Py_ssize_t count, double base,
                     Py_ssize_t ncells, Py_ssize_t L, double w, Cells* out) noexcept nogil:
    """Counting sort of points into the grid base + [k w, (k + 1) w), k = -L-1 .. ncells+L.

    Cell id k + L + 1; points beyond either end share the end cells, whose windows
    hold no source.
    """
    cdef Py_ssize_t size = ncells + 2 * L + 2
    cdef Py_ssize_t* pos = <Py_ssize_t*> calloc(size, sizeof(Py_ssize_t))
    cdef Py_ssize_t* cell = <Py_ssize_t*> malloc((count + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t i, k, total, c, previous, slot
    if pos == NULL or cell == NULL:
        free(pos)
        free(cell)
        return -1
    for i in range(count):
        k = <Py_ssize_t> cell_of(v[i], base, w, <double> (-L - 1), <double> (ncells + L)) + L + 1
        cell[i] = k
        pos[k] += 1
    total = 0
    for k in range(size):           # pos[k] = first slot of cell k
        c = pos[k]
        pos[k] = total
        total += c
    for i in range(count):          # afterwards pos[k] = one past the last slot of cell k
        slot = pos[cell[i]]
        out.member[slot] = i
        out.v[slot] = v[i]
        if q != NULL:
            out.q[slot] = q[i]
        pos[cell[i]] = slot + 1
    out.n = 0
    previous = 0
    for k in range(size):
        if pos[k] > previous:
            out.id[out.n] = k
            out.centre[out.n] = base + (<double> (k - L - 1) + 0.5) * w
            out.start[out.n] = previous
            out.n += 1
            previous = pos[k]
    out.start[out.n] = count
    free(pos)
    free(cell)
    return 0


cdef int compare_keyed(const void* a, const void* b) noexcept nogil:
    cdef const Keyed* x = <const Keyed*> a
    cdef const Keyed* y = <const Keyed*> b
    if x.v < y.v:
        return -1
    if x.v > y.v:
        return 1
    return (x.i > y.i) - (x.i < y.i)


cdef Keyed* sorted_keys(const double* v, Py_ssize_t count) noexcept nogil:
    cdef Keyed* keys = <Keyed*> malloc((count + 1) * sizeof(Keyed))
    cdef Py_ssize_t i
    if keys == NULL:
        return NULL
    for i in range(count):
        keys[i].v = v[i]
        keys[i].i = i
    qsort(keys, count, sizeof(Keyed), compare_keyed)
    return keys


cdef inline void add_member(Cells* c, int64_t id, double centre, Py_ssize_t point,
                            double v, const double* q, Py_ssize_t slot) noexcept nogil:
    """Append point (value v, the slot-th in sorted order) to cell id, opening it if new."""
    if c.n == 0 or c.id[c.n - 1] != id:
        c.id[c.n] = id
        c.centre[c.n] = centre
        c.start[c.n] = slot
        c.n += 1
    c.member[slot] = point
    c.v[slot] = v
    if q != NULL:
        c.q[slot] = q[point]


cdef int sorted_cells(const double* z, const double* q, Py_ssize_t N, const double* y,
                      Py_ssize_t M, const Series* s, Cells* S, Cells* T) noexcept nogil:
    """Sorted layout: groups of sources split at gaps, one grid per group (see module doc)."""
    cdef Keyed* zs = sorted_keys(z, N)
    cdef Keyed* ys = sorted_keys(y, M)
    cdef double* lo = <double*> malloc((N + 1) * sizeof(double))
    cdef double* hi = <double*> malloc((N + 1) * sizeof(double))
    cdef int64_t* offset = <int64_t*> malloc((N + 1) * sizeof(int64_t))
    cdef int64_t* ncells = <int64_t*> malloc((N + 1) * sizeof(int64_t))
    cdef Py_ssize_t i, g, G = 0, L = s.L
    cdef double x, v, w = s.w
    cdef int status = -1
    if not (zs == NULL or ys == NULL or lo == NULL or hi == NULL or offset == NULL
            or ncells == NULL):
        # groups of sources
        for i in range(N):
            v = zs[i].v
            if G == 0 or v - hi[G - 1] > s.gap:
                lo[G] = v
                G += 1
            hi[G - 1] = v
        for g in range(G):
            ncells[g] = <int64_t> floor((hi[g] - lo[g]) / w) + 1
            offset[g] = L + 1 if g == 0 else offset[g - 1] + ncells[g - 1] + 2 * L + 2
        # sources: cells in increasing order along the sorted sources
        S.n = 0
        g = 0
        for i in range(N):
            v = zs[i].v
            while g + 1 < G and lo[g + 1] <= v:
                g += 1
            x = cell_of(v, lo[g], w, 0.0, <double> (ncells[g] - 1))
            add_member(S, offset[g] + <int64_t> x, lo[g] + (x + 0.5) * w, zs[i].i, v, q, i)
        S.start[S.n] = N
        # targets: the nearest group, then its grid (clamped to L + 1 cells beyond its ends)
        T.n = 0
        g = 0
        for i in range(M):
            v = ys[i].v
            while g + 1 < G and lo[g + 1] <= v:
                g += 1
            if g + 1 < G and lo[g + 1] - v < v - hi[g]:
                g += 1
            x = cell_of(v, lo[g], w, <double> (-L - 1), <double> (ncells[g] + L))
            add_member(T, offset[g] + <int64_t> x, lo[g] + (x + 0.5) * w, ys[i].i, v, NULL, i)
        T.start[T.n] = M
        status = 0
    free(zs)
    free(ys)
    free(lo)
    free(hi)
    free(offset)
    free(ncells)
    return status


cdef inline void neumaier_add(double* s, double* c, double x) noexcept nogil:
    """Compensated running sum: s + c carries the exact sum to about one rounding."""
    cdef double t = s[0] + x
    if fabs(s[0]) >= fabs(x):
        c[0] += (s[0] - t) + x
    else:
        c[0] += (x - t) + s[0]
    s[0] = t


cdef void source_moments(const Cells* S, Py_ssize_t k, const Series* s, double* mr,
                         double* mi) noexcept nogil:
    """M_n^k = sum_{i in k} q_i e^{i 2nh(c_k - z_i)}, n = 2m + 1, into (mr[m], mi[m])."""
    cdef Py_ssize_t a, m
    cdef double phi, c1, s1, c2, s2, cn, sn, t, qi
    for m in range(s.p):
        mr[m] = 0.0
        mi[m] = 0.0
    for a in range(S.start[k], S.start[k + 1]):
        qi = 1.0 if S.q == NULL else S.q[a]
        phi = 2.0 * s.h * (S.centre[k] - S.v[a])
        c1 = cos(phi)
        s1 = sin(phi)
        c2 = c1 * c1 - s1 * s1
        s2 = 2.0 * c1 * s1
        cn = qi * c1
        sn = qi * s1
        for m in range(s.p):
            mr[m] += cn
            mi[m] += sn
            t = cn * c2 - sn * s2
            sn = sn * c2 + cn * s2
            cn = t


cdef void sweep(const Cells* S, const Cells* T, const Series* s, double* ring, double* qk,
                double* suffix, double* out) noexcept nogil:
    """E at every target from the cells (see module docstring).

    ring: (2L + 1) * 2p doubles of source moments; qk, suffix: S.n and S.n + 1 doubles.
    """
    cdef Py_ssize_t p = s.p, L = s.L, slots = 2 * s.L + 1
    cdef Py_ssize_t k, t, a, m, ka = 0, kb = 0, ready = 0
    cdef double acc, comp, qw, far, phi, c1, s1, c2, s2, cn, sn, tmp, mr, mi
    cdef double* wr = ring + slots * 2 * p      # window moments (2p more doubles)
    cdef double* wi = wr + p
    cdef double* sr
    cdef double* si
    # Q_k per cell, and 2 * (sum of Q_k over cells k .. end), both compensated
    for k in range(S.n):
        acc = 0.0
        comp = 0.0
        for a in range(S.start[k], S.start[k + 1]):
            neumaier_add(&acc, &comp, 1.0 if S.q == NULL else S.q[a])
        qk[k] = acc + comp
    acc = 0.0
    comp = 0.0
    suffix[S.n] = 0.0
    for k in range(S.n - 1, -1, -1):
        neumaier_add(&acc, &comp, qk[k])
        suffix[k] = 2.0 * (acc + comp)
    for t in range(T.n):
        while ka < S.n and S.id[ka] < T.id[t] - L:
            ka += 1
        if kb < ka:
            kb = ka
        while kb < S.n and S.id[kb] <= T.id[t] + L:
            kb += 1
        far = suffix[kb]
        if ka == kb:                                  # no source within reach
            for a in range(T.start[t], T.start[t + 1]):
                out[T.member[a]] = far
            continue
        if ready < ka:
            ready = ka
        while ready < kb:                             # moments of cells entering the window
            sr = ring + (ready % slots) * 2 * p
            source_moments(S, ready, s, sr, sr + p)
            ready += 1
        qw = 0.0
        for m in range(p):
            wr[m] = 0.0
            wi[m] = 0.0
        for k in range(ka, kb):                       # window moments around c_t
            qw += qk[k]
            sr = ring + (k % slots) * 2 * p
            si = sr + p
            phi = 2.0 * s.h * (T.centre[t] - S.centre[k])
            c1 = cos(phi)
            s1 = sin(phi)
            c2 = c1 * c1 - s1 * s1
            s2 = 2.0 * c1 * s1
            cn = c1
            sn = s1
            for m in range(p):
                mr = sr[m]
                mi = si[m]
                wr[m] += s.coef[m] * (mr * cn - mi * sn)
                wi[m] += s.coef[m] * (mr * sn + mi * cn)
                tmp = cn * c2 - sn * s2
                sn = sn * c2 + cn * s2
                cn = tmp
        for a in range(T.start[t], T.start[t + 1]):  # each target: O(p)
            phi = 2.0 * s.h * (T.v[a] - T.centre[t])
            c1 = cos(phi)
            s1 = sin(phi)
            c2 = c1 * c1 - s1 * s1
            s2 = 2.0 * c1 * s1
            cn = c1
            sn = s1
            acc = 0.0
            for m in range(p):
                acc += cn * wi[m] + sn * wr[m]
                tmp = cn * c2 - sn * s2
                sn = sn * c2 + cn * s2
                cn = tmp
            out[T.member[a]] = far + qw - acc


cdef int fast_sum_core(const double* z, const double* q, Py_ssize_t N, const double* y,
                       Py_ssize_t M, const Series* s, double* out) noexcept nogil:
    """out[j] ~ sum_i q_i erfc(y_j - z_i) (q NULL: unit weights).  Returns -1 if out of memory."""
    cdef Cells S, T
    cdef Py_ssize_t i
    cdef double zmin, zmax, span
    cdef double* work = NULL
    cdef int status
    if M == 0:
        return 0
    if N == 0:
        for i in range(M):
            out[i] = 0.0
        return 0
    zmin = z[0]
    zmax = z[0]
    for i in range(1, N):
        if z[i] < zmin:
            zmin = z[i]
        if z[i] > zmax:
            zmax = z[i]
    span = (zmax - zmin) / s.w              # may be inf: then the sorted layout
    status = cells_alloc(&S, N, q != NULL)
    status = cells_alloc(&T, M, False) | status
    if status == 0:
        if span + <double> (2 * s.L + 3) <= <double> s.dense_limit:
            status = dense_cells(z, q, N, zmin, <Py_ssize_t> floor(span) + 1, s.L, s.w, &S)
            status = status | dense_cells(y, NULL, M, zmin, <Py_ssize_t> floor(span) + 1,
                                          s.L, s.w, &T)
        else:
            status = sorted_cells(z, q, N, y, M, s, &S, &T)
    if status == 0:
        work = <double*> malloc(((2 * s.L + 2) * 2 * s.p + 2 * S.n + 1) * sizeof(double))
        if work == NULL:
            status = -1
        else:
            sweep(&S, &T, s, work, work + (2 * s.L + 2) * 2 * s.p,
                  work + (2 * s.L + 2) * 2 * s.p + S.n, out)
    free(work)
    cells_free(&S)
    cells_free(&T)
    return status


cdef void direct_sum_core(const double* z, const double* q, Py_ssize_t N, const double* y,
                          Py_ssize_t M, double* out) noexcept nogil:
    """out[j] = sum_i q_i erfc(y_j - z_i), term by term (q NULL: unit weights)."""
    cdef Py_ssize_t i, j
    cdef double acc
    for j in range(M):
        acc = 0.0
        if q == NULL:
            for i in range(N):
                acc += erfc(y[j] - z[i])
        else:
            for i in range(N):
                acc += q[i] * erfc(y[j] - z[i])
        out[j] = acc


cdef Series make_series(double w, double h, const double[::1] coef, Py_ssize_t L,
                        double gap, Py_ssize_t dense_limit):
    cdef Series s
    s.w = w
    s.h = h
    s.p = coef.shape[0]
    s.L = L
    s.gap = gap
    s.dense_limit = dense_limit
    s.coef = &coef[0]
    return s


def fast_sum(const double[::1] z, const double[::1] q, const double[::1] y, double w,
             double h, const double[::1] coef, Py_ssize_t L, double gap,
             Py_ssize_t dense_limit, double[::1] out):
    """out[j] ~ sum_i q_i erfc(y_j - z_i) by the fast transform (parameters from rankfast.erfc).

    dense_limit < 0 means 2 (N + M) + 4096 cells.
    """
    cdef Py_ssize_t N = z.shape[0], M = y.shape[0]
    if dense_limit < 0:
        dense_limit = 2 * (N + M) + 4096
    cdef Series s = make_series(w, h, coef, L, gap, dense_limit)
    cdef int status
    if M == 0:
        return
    with nogil:
        status = fast_sum_core(&z[0] if N else NULL, &q[0] if N else NULL, N, &y[0], M,
                               &s, &out[0])
    if status != 0:
        raise MemoryError()


def direct_sum(const double[::1] z, const double[::1] q, const double[::1] y, double[::1] out):
    """out[j] = sum_i q_i erfc(y_j - z_i), O(NM), with erfc from the C library."""
    cdef Py_ssize_t N = z.shape[0], M = y.shape[0]
    if M == 0:
        return
    with nogil:
        direct_sum_core(&z[0] if N else NULL, &q[0] if N else NULL, N, &y[0], M, &out[0])


cdef int other_level_chunk(const double* z, const int64_t* starts, const int64_t* group_order,
                           const int64_t* group_starts, const int64_t* qgroup,
                           const int64_t* level, bint fast, Series s, Py_ssize_t q0,
                           Py_ssize_t q1, double* out) noexcept nogil:
    """other_level_sums over queries q0 .. q1 - 1; -1 when out of memory."""
    cdef Py_ssize_t qi, a, b, ga, gb, gend, j, i, k, longest = 1
    cdef double* zbuf = NULL
    cdef double* ebuf = NULL
    cdef double acc
    cdef int status = 0
    if fast:
        for qi in range(q0, q1):
            longest = max(longest, starts[qi + 1] - starts[qi])
        zbuf = <double*> malloc(longest * sizeof(double))
        ebuf = <double*> malloc(longest * sizeof(double))
        if zbuf == NULL or ebuf == NULL:
            free(zbuf)
            free(ebuf)
            return -1
    for qi in range(q0, q1):
        a = starts[qi]
        b = starts[qi + 1]
        ga = qgroup[qi]                               # level groups of this query
        gend = qgroup[qi + 1]
        if b - a == 0:
            continue
        if gend - ga == 1:                            # one level: no pair
            for i in range(a, b):
                out[i] = 0.0
            continue
        if not fast:
            for i in range(a, b):
                acc = 0.0
                for k in range(a, b):
                    if level[k] != level[i]:
                        acc += erfc(z[i] - z[k])
                out[i] = acc
            continue
        s.dense_limit = 2 * 2 * (b - a) + 4096
        if fast_sum_core(&z[a], NULL, b - a, &z[a], b - a, &s, &out[a]) != 0:
            status = -1
            break
        for gb in range(ga, gend):
            for j in range(group_starts[gb], group_starts[gb + 1]):
                zbuf[j - group_starts[gb]] = z[group_order[j]]
            k = group_starts[gb + 1] - group_starts[gb]
            s.dense_limit = 4 * k + 4096
            if fast_sum_core(zbuf, NULL, k, zbuf, k, &s, ebuf) != 0:
                status = -1
                break
            for j in range(group_starts[gb], group_starts[gb + 1]):
                out[group_order[j]] -= ebuf[j - group_starts[gb]]
        if status != 0:
            break
    free(zbuf)
    free(ebuf)
    return status


def other_level_sums(const double[::1] z, const int64_t[::1] starts,
                     const int64_t[::1] group_order, const int64_t[::1] group_starts,
                     const int64_t[::1] level, bint fast, double w, double h,
                     const double[::1] coef, Py_ssize_t L, double gap, double[::1] out,
                     const int64_t[::1] chunks=None, int n_threads=1):
    """out[i] = sum over documents k of i's query with level[k] != level[i] of erfc(z_i - z_k).

    Queries are starts[q]:starts[q+1]; group_order lists the documents by query, then
    level, and group_starts delimits its runs of one (query, level).  Fast: the sum over
    the whole query minus the sum over i's own level, two fast transforms, O(p m) per
    query of m documents whatever the number of levels (error <= eps (m + m_level)).
    Direct: term by term, O(m^2) per query.  Chunks of whole queries (chunk c:
    queries chunks[c]:chunks[c+1]; None: one chunk) run on n_threads threads; every
    document's sum is computed by one of them, so the results do not depend on
    n_threads.
    """
    cdef Py_ssize_t nq = starts.shape[0] - 1, n = z.shape[0]
    cdef Py_ssize_t k, lo, hi, n_chunks
    cdef Series s
    if nq <= 0 or n == 0:
        return
    chunks = chunk_list(chunks, nq)
    n_chunks = chunks.shape[0] - 1
    if fast:
        s = make_series(w, h, coef, L, gap, 0)
    else:                                             # unused by the direct sums
        s.w, s.h, s.p, s.L, s.gap, s.dense_limit, s.coef = 1.0, 1.0, 0, 0, 0.0, 0, NULL
    cdef int64_t[::1] qgroup = first_groups(starts, group_starts)
    cdef int[::1] status = np.zeros(max(n_chunks, 1), dtype=np.intc)
    lo = 0
    while lo < n_chunks:
        hi = min(lo + BATCH, n_chunks)
        with nogil:
            for k in prange(lo, hi, schedule="dynamic", num_threads=n_threads):
                status[k] = other_level_chunk(&z[0], &starts[0], &group_order[0],
                                              &group_starts[0], &qgroup[0], &level[0], fast, s,
                                              chunks[k], chunks[k + 1], &out[0])
        PyErr_CheckSignals()
        lo = hi
    check_chunks(status)


cdef int64_t[::1] first_groups(const int64_t[::1] starts, const int64_t[::1] group_starts):
    """The first level group of each query (and the number of groups, appended)."""
    cdef Py_ssize_t nq = starts.shape[0] - 1, n_groups = group_starts.shape[0] - 1
    cdef Py_ssize_t qi, b, g = 0
    cdef int64_t[::1] qgroup = np.empty(nq + 1, dtype=np.int64)
    for qi in range(nq):
        qgroup[qi] = g
        b = starts[qi + 1]
        while g < n_groups and group_starts[g] < b:
            g += 1
    qgroup[nq] = g
    return qgroup


cdef int split_level_chunk(const double* z, const double* v, const int64_t* group_order,
                           const int64_t* group_starts, const int64_t* qgroup, bint fast,
                           Series s, Py_ssize_t q0, Py_ssize_t q1, double* lower,
                           double* higher) noexcept nogil:
    """split_level_sums over queries q0 .. q1 - 1; -1 when out of memory."""
    cdef Py_ssize_t qi, g, ga, gend, j, a, b, ns, nt, longest = 1
    cdef double* zs
    cdef double* ws
    cdef double* zt
    cdef double* ot
    cdef int status = 0
    for qi in range(q0, q1):
        longest = max(longest, group_starts[qgroup[qi + 1]] - group_starts[qgroup[qi]])
    zs = <double*> malloc(longest * sizeof(double))
    ws = <double*> malloc(longest * sizeof(double))
    zt = <double*> malloc(longest * sizeof(double))
    ot = <double*> malloc(longest * sizeof(double))
    if zs == NULL or ws == NULL or zt == NULL or ot == NULL:
        status = -1
    else:
        for qi in range(q0, q1):
            ga, gend = qgroup[qi], qgroup[qi + 1]
            for g in range(ga, gend):               # the query's levels, lowest first
                a, b = group_starts[g], group_starts[g + 1]
                nt = b - a
                for j in range(a, b):
                    zt[j - a] = z[group_order[j]]
                # below: the levels under g, unit weights
                ns = a - group_starts[ga]
                for j in range(group_starts[ga], a):
                    zs[j - group_starts[ga]] = z[group_order[j]]
                if sum_into(zs, NULL, ns, zt, nt, fast, &s, ot) != 0:
                    status = -1
                    break
                for j in range(a, b):
                    lower[group_order[j]] = ot[j - a]
                # above: the levels over g, each document weighing v
                ns = group_starts[gend] - b
                for j in range(b, group_starts[gend]):
                    zs[j - b] = z[group_order[j]]
                    ws[j - b] = v[group_order[j]]
                if sum_into(zs, ws, ns, zt, nt, fast, &s, ot) != 0:
                    status = -1
                    break
                for j in range(a, b):
                    higher[group_order[j]] = ot[j - a]
            if status != 0:
                break
    free(zs)
    free(ws)
    free(zt)
    free(ot)
    return status


cdef inline int sum_into(const double* z, const double* q, Py_ssize_t N, const double* y,
                         Py_ssize_t M, bint fast, Series* s, double* out) noexcept nogil:
    """out[j] = sum_i q_i erfc(y_j - z_i), fast or direct; -1 when out of memory."""
    if not fast:
        direct_sum_core(z, q, N, y, M, out)
        return 0
    s.dense_limit = 2 * (N + M) + 4096
    return fast_sum_core(z, q, N, y, M, s, out)


def split_level_sums(const double[::1] z, const double[::1] v, const int64_t[::1] starts,
                     const int64_t[::1] group_order, const int64_t[::1] group_starts,
                     bint fast, double w, double h, const double[::1] coef, Py_ssize_t L,
                     double gap, double[::1] lower, double[::1] higher,
                     const int64_t[::1] chunks=None, int n_threads=1):
    """lower[i] = sum over documents k of i's query at a lower level of erfc(z_i - z_k);
    higher[i] = the same over higher levels, each term times v[k].

    RankNCG's gradient with a weight on each pair's preferred document (learning
    from clicks) needs the two sides apart.  Queries, group_order and
    group_starts as for other_level_sums (levels ascending within a query).
    Fast: one transform per level and side, O(p m S) per query of m documents
    and S levels (error <= eps (m_lower + sum of v above)); direct: O(m^2).
    The results do not depend on n_threads.
    """
    cdef Py_ssize_t nq = starts.shape[0] - 1, n = z.shape[0]
    cdef Py_ssize_t k, lo, hi, n_chunks
    cdef Series s
    if nq <= 0 or n == 0:
        return
    chunks = chunk_list(chunks, nq)
    n_chunks = chunks.shape[0] - 1
    if fast:
        s = make_series(w, h, coef, L, gap, 0)
    else:
        s.w, s.h, s.p, s.L, s.gap, s.dense_limit, s.coef = 1.0, 1.0, 0, 0, 0.0, 0, NULL
    cdef int64_t[::1] qgroup = first_groups(starts, group_starts)
    cdef int[::1] status = np.zeros(max(n_chunks, 1), dtype=np.intc)
    lo = 0
    while lo < n_chunks:
        hi = min(lo + BATCH, n_chunks)
        with nogil:
            for k in prange(lo, hi, schedule="dynamic", num_threads=n_threads):
                status[k] = split_level_chunk(&z[0], &v[0], &group_order[0], &group_starts[0],
                                              &qgroup[0], fast, s, chunks[k], chunks[k + 1],
                                              &lower[0], &higher[0])
        PyErr_CheckSignals()
        lo = hi
    check_chunks(status)
