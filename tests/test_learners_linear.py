"""rankfast.learners._linear: the shared numerics of the linear learners (the compiled
products against numpy, query weights, query-constant features, storable weights)."""

import numpy as np
import pytest
import scipy.sparse as sp
from data_makers import bits, random_csr
from data_makers import letor_like_with_query_level_columns as letor_like

from rankfast import RankNCG, RankRLS, RankSVM, RankSVML1
from rankfast._kernels import _products
from rankfast.data.sparse import CSR
from rankfast.learners._linear import pair_counts, query_weights, without_query_constant

THREADS = (1, 2, 3)


MODES = (0, 1, 2)                     # x, |x|, x²


def assert_close(got, expected, magnitude):
    """|got - expected| within 1e-12 of the sum of the terms' magnitudes (any summing order)."""
    assert np.all(np.abs(got - expected) <= 1e-12 * magnitude), np.max(np.abs(got - expected))


def shapes():
    return [(1, 7), (2, 1), (300, 13), (1000, 5)]


@pytest.mark.parametrize("n, d", shapes())
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("lanes", [False, True])
def test_csr_matvec_float32_is_float64_bit_for_bit_on_any_threads(n, d, index, lanes):
    rng = np.random.default_rng(n * d)
    X = random_csr(rng, n, d)
    data32 = X.data.astype(np.float32)
    data64 = data32.astype(np.float64)
    indices, indptr = X.indices.astype(index), X.indptr.astype(index)
    v = rng.normal(size=d)
    for mode in MODES:
        expected = np.empty(n)
        _products.csr_matvec(data64, indices, indptr, v, expected, 1, mode, lanes)
        dense = X.toarray().astype(np.float64)
        entry = (dense, np.abs(dense), dense * dense)[mode]
        assert_close(expected, entry @ v, np.abs(entry) @ np.abs(v))
        for t in THREADS:
            out = np.full(n, np.nan)
            _products.csr_matvec(data32, indices, indptr, v, out, t, mode, lanes)
            assert bits(out) == bits(expected), (mode, t)


def test_full_rows_tells_a_dense_matrix_stored_as_csr():
    """full_rows: every row holds columns 0 .. d - 1 in order, and only then."""
    n, d = 4, 3
    indices = np.tile(np.arange(d, dtype=np.int32), n)
    indptr = np.arange(0, n * d + 1, d, dtype=np.int32)
    assert _products.full_rows(indices, indptr, d)
    assert _products.full_rows(indices.astype(np.int64), indptr.astype(np.int64), d)
    assert _products.full_rows(indices[:0], indptr[:1], d)            # no rows
    swapped = indices.copy()
    swapped[[4, 5]] = swapped[[5, 4]]                                  # a row out of order
    assert not _products.full_rows(swapped, indptr, d)
    short = np.array([0, 3, 5, 8, 11], dtype=np.int32)                 # 3 + 2 + 3 + 3 entries
    assert not _products.full_rows(np.r_[indices[:5], indices[6:]], short, d)
    assert not _products.full_rows(indices, indptr, d + 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_solvers_products_of_a_full_csr_matrix_are_its_sparse_products(dtype):
    """DataMatrix multiplies a CSR matrix holding every entry as the dense matrix of its
    values (no index read): the bits the CSR kernels give, every mode, on any threads."""
    from rankfast._kernels.threads import BLOCK_ROWS
    from rankfast.data.sparse import CSR
    from rankfast.losses.products import DataMatrix
    rng = np.random.default_rng(5)
    n, d = 3 * BLOCK_ROWS + 17, 11
    data = rng.normal(size=n * d).astype(dtype)
    indices = np.tile(np.arange(d, dtype=np.int32), n)
    indptr = np.arange(0, n * d + 1, d, dtype=np.int32)
    v, u = rng.normal(size=d), rng.normal(size=n)
    n_blocks = -(-n // BLOCK_ROWS)
    for t in THREADS:
        products = DataMatrix(CSR(data, indices, indptr, (n, d)), t)
        assert products.rows is not None
        expected = np.empty(n)
        _products.csr_matvec(data, indices, indptr, v, expected, 1, 0, True)
        assert bits(products.matvec(v)) == bits(expected)
        for mode, entries in zip(MODES, ("x", "abs", "square")):
            expected = np.zeros(d)
            _products.csr_rmatvec(data, indices, indptr, u, expected, np.empty((n_blocks, d)),
                                  BLOCK_ROWS, 1, mode)
            assert bits(products.rmatvec(u, entries)) == bits(expected), (t, mode)


@pytest.mark.parametrize("n, d", [(1, 1), (7, 3), (300, 13), (100, 50)])
def test_a_full_csr_row_in_four_lanes_gives_the_dense_rows_bits(n, d):
    """DataMatrix adds a row's products in four running sums, dense or CSR (lanes): a
    CSR matrix with every entry stored gives the dense matrix's bits, whatever its dtype."""
    rng = np.random.default_rng(d)
    dense = rng.normal(size=(n, d)).astype(np.float32).astype(np.float64)
    v = rng.normal(size=d)
    expected = np.empty(n)
    _products.dense_matvec(dense, v, expected, 1)
    indices = np.tile(np.arange(d, dtype=np.int32), n)
    indptr = np.arange(0, n * d + 1, d, dtype=np.int32)
    for data in (dense.ravel(), dense.ravel().astype(np.float32)):
        out = np.empty(n)
        _products.csr_matvec(data, indices, indptr, v, out, 2, 0, True)
        assert bits(out) == bits(expected)


@pytest.mark.parametrize("n, d", shapes())
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_csr_rmatvec_float32_is_float64_bit_for_bit_on_any_threads(n, d, index):
    rng = np.random.default_rng(n + d)
    X = random_csr(rng, n, d)
    data32 = X.data.astype(np.float32)
    data64 = data32.astype(np.float64)
    indices, indptr = X.indices.astype(index), X.indptr.astype(index)
    u = rng.normal(size=n)
    block_rows = 64
    partial = np.empty((max(-(-n // block_rows), 1), d))
    for mode in MODES:
        expected = np.empty(d)
        _products.csr_rmatvec(data64, indices, indptr, u, expected, partial, block_rows, 1, mode)
        dense = X.toarray().astype(np.float64)
        entry = (dense, np.abs(dense), dense * dense)[mode]
        assert_close(expected, entry.T @ u, np.abs(entry).T @ np.abs(u))
        for t in THREADS:
            out = np.full(d, np.nan)
            _products.csr_rmatvec(data32, indices, indptr, u, out, partial, block_rows, t, mode)
            assert bits(out) == bits(expected), (mode, t)


def test_products_refuse_other_value_types():
    X = sp.csr_matrix(np.eye(3))
    out = np.empty(3)
    for dtype in (np.float16, np.int32, np.longdouble):
        with pytest.raises((TypeError, ValueError)):
            _products.csr_matvec(X.data.astype(dtype), X.indices, X.indptr, np.ones(3), out)


def brute_varies(dense, order, starts):
    """Columns whose values differ within some group, compared pair by pair."""
    d = dense.shape[1]
    varies = np.zeros(d, dtype=bool)
    for g in range(len(starts) - 1):
        rows = dense[order[starts[g]:starts[g + 1]]]
        for a in range(len(rows)):
            for b in range(len(rows)):
                varies |= rows[a] != rows[b]
    return varies


def planted(rng, n_groups, d):
    """Dense data by groups of 1–7 rows, with columns constant within groups (0, or a group's
    own value) and columns that vary in one group only."""
    sizes = rng.integers(1, 8, size=n_groups)
    starts = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    n = int(starts[-1])
    dense = np.where(rng.random((n, d)) < 0.4, rng.integers(-2, 3, (n, d)).astype(float), 0.0)
    group = np.repeat(np.arange(n_groups), sizes)
    for j in rng.choice(d, size=d // 2, replace=False):
        kind = rng.integers(0, 3)
        values = (rng.integers(-1, 2, n_groups) * rng.integers(0, 2, n_groups)).astype(float)
        dense[:, j] = values[group] if kind else 0.0
        if kind == 2:                                 # varies in one group only
            dense[starts[rng.integers(0, n_groups)], j] += 1.0
    return dense, starts


@pytest.mark.parametrize("value_type", [np.float32, np.float64])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize("seed", range(6))
def test_varying_columns_match_the_pair_by_pair_comparison(seed, index_type, value_type):
    rng = np.random.default_rng(seed)
    dense, starts = planted(rng, n_groups=int(rng.integers(1, 12)), d=int(rng.integers(1, 9)))
    dense = dense.astype(value_type)
    n, d = dense.shape
    order = rng.permutation(n).astype(np.int64)       # the groups are rows order[starts...]
    stored = (dense != 0) | (rng.random((n, d)) < (0.3 if seed % 2 else 0.0))  # explicit zeros
    rows, columns = np.nonzero(stored)
    S = sp.csr_matrix((dense[rows, columns], (rows, columns)), shape=(n, d))
    assert S.nnz == stored.sum()
    expected = brute_varies(dense, order, starts)
    for n_threads in (1, 2, 3):                       # each thread a range of the groups
        marked = np.zeros(d, dtype=np.int8)
        _products.mark_varying_columns(S.data, S.indices.astype(index_type),
                                       S.indptr.astype(index_type), order, starts, marked,
                                       n_threads)
        np.testing.assert_array_equal(marked.astype(bool), expected)
    grouped = np.ascontiguousarray(dense[order])
    marked = np.zeros(d, dtype=np.int8)
    _products.mark_varying_columns_dense(grouped, starts, marked)
    np.testing.assert_array_equal(marked.astype(bool), expected)


def test_explicit_zeros_and_missing_entries_are_the_same_value():
    """Column 0 stores 0 in one row and nothing in the other: constant.  Column 1 stores 5 in
    one row only: varies."""
    data, indices, indptr = np.array([0.0, 5.0]), np.array([0, 1], np.int32), np.array([0, 2, 2],
                                                                                    np.int32)
    marked = np.zeros(2, dtype=np.int8)
    _products.mark_varying_columns(data, indices, indptr, np.arange(2), np.array([0, 2]), marked)
    assert marked.tolist() == [0, 1]


def test_only_the_query_constant_weights_are_zeroed():
    X = np.array([[1.0, 7.0], [2.0, 7.0], [3.0, 8.0]])
    w = np.array([0.5, 1e-6])
    np.testing.assert_array_equal(without_query_constant(w, X, np.array([0, 2, 3])), [0.5, 0.0])
    np.testing.assert_array_equal(without_query_constant(w, X, np.array([0, 3])), w)
    csr = CSR(X.ravel(), np.tile(np.arange(2, dtype=np.int32), 3), np.arange(0, 7, 2, np.int32),
              X.shape)
    np.testing.assert_array_equal(without_query_constant(w, csr, np.array([0, 2, 3])), [0.5, 0.0])


LEARNERS = {
    "prsvm": lambda C: RankSVM(C=C),
    "prsvm-l2": lambda C: RankSVM(C=C, loss=2),
    "rankncg": lambda C: RankNCG(C=C),
    "svmrank": lambda C: RankSVML1(C=C),
    "rankrls": lambda C: RankRLS(C=C, solver="dense"),
    "rankrls-cg": lambda C: RankRLS(C=C, solver="cg"),
}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_every_learner_weighs_query_constant_features_exactly_zero(name, sparse):
    X, y, qid = letor_like()
    data = sp.csr_matrix(X) if sparse else X
    for C in (0.01, 1.0, 100.0):
        model = LEARNERS[name](C).fit(data, y, qid)
        assert np.all(model.coef_[[1, 3, 4]] == 0.0), (C, model.coef_)
        assert np.all(model.coef_[[0, 2, 5]] != 0.0), (C, model.coef_)


@pytest.mark.parametrize("name", ["prsvm", "rankncg", "rankrls"])
def test_the_c_path_of_cross_validation_zeroes_them_too(name):
    X, y, qid = letor_like(1)
    estimator = LEARNERS[name](1.0)
    for fitted in estimator.fit_path(X, y, qid, [0.1, 10.0]):
        assert np.all(fitted.coef_[[1, 3, 4]] == 0.0), fitted.coef_


def test_query_weights_follow_svm_rank_scaling():
    y = np.array([2, 1, 0, 1, 1, 3, 0, 2, 2, 1.5])
    starts = np.array([0, 3, 5, 10])
    assert pair_counts(y, starts).tolist() == [3, 0, 9]
    np.testing.assert_allclose(query_weights(y, starts, 6.0, 1), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(query_weights(y, starts, 6.0, 2), [2.0 / 3, 2.0, 2.0 / 9])


@pytest.mark.parametrize("w, match", [(np.array([1e300, 1.0]), "exceed"),
                                      (np.array([1e-50, -1e-60]), "below"),
                                      (np.array([np.nan, 1.0]), "diverged")])
def test_weights_the_model_file_cannot_hold_are_an_error(w, match):
    from rankfast.learners._linear import storable_weights
    with pytest.raises(ValueError, match=match):
        storable_weights(w)
