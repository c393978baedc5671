"""Issue 14 item 5 (memory): the kernels take float32 feature values, as svm_rank stores them.

With float32 data every product, score and centring must be the bits the float64 kernel gives
on the same values widened to float64, for any number of threads.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from rankfast._kernels import _predict, _products, _rankrls

THREADS = (1, 2, 3)
MODES = (0, 1, 2)                     # x, |x|, x²


def bits(a):
    """The bytes of an array, so that -0.0 != 0.0 and NaNs compare as bits."""
    a = np.ascontiguousarray(a)
    return a.view(np.uint8).tobytes()


def random_csr(rng, n, d, density=0.4, empty_rows=True):
    """float32 CSR with every kind of value (subnormals, large, negative), some rows empty."""
    X = sp.random(n, d, density=density, format="csr", random_state=rng, dtype=np.float64)
    X.data = (rng.normal(size=X.nnz) * 10.0 ** rng.integers(-44, 38, size=X.nnz)).astype(np.float32)
    if empty_rows and n > 2:
        X = X.tolil()
        for i in {0, n - 1, *rng.integers(0, n, size=n // 5).tolist()}:
            X.rows[i], X.data[i] = [], []
        X = X.tocsr()
    X.sort_indices()
    return X


def assert_close(got, expected, magnitude):
    """|got - expected| within 1e-12 of the sum of the terms' magnitudes (any summing order)."""
    assert np.all(np.abs(got - expected) <= 1e-12 * magnitude), np.max(np.abs(got - expected))


def shapes():
    return [(1, 7), (2, 1), (300, 13), (1000, 5)]


# ------------------------------------------------------------------- products

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
    from rankfast._threads import BLOCK_ROWS
    from rankfast.data.sparse import CSR
    from rankfast.learners._linear import DataMatrix
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


# -------------------------------------------- other kernels fed with X's values

@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_linear_scores_of_float32_data_are_those_of_float64(index):
    rng = np.random.default_rng(3)
    X = random_csr(rng, 500, 40)
    ids = np.flatnonzero(rng.random(45) < 0.7).astype(np.int64) + 1
    weights = rng.normal(size=len(ids))
    indices, indptr = X.indices.astype(index), X.indptr.astype(index)
    expected = np.empty(500)
    _predict.linear_scores(indptr, indices, X.data.astype(np.float64), ids, weights, 0.25,
                           expected)
    assert np.isfinite(expected).all()
    for t in THREADS:
        out = np.empty(500)
        _predict.linear_scores(indptr, indices, X.data, ids, weights, 0.25, out, t)
        assert bits(out) == bits(expected)


def test_centre_of_float32_data_is_that_of_float64():
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 40, size=60)
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(starts[-1])
    X = (rng.normal(size=(n, 9)) * 1e3).astype(np.float32)
    scale = rng.random(len(sizes)) + 0.5
    chunks = np.array([0, 7, 30, 60], np.int64)
    expected = np.empty((n, 9))
    _rankrls.centre(X.astype(np.float64), starts, scale, expected)
    means = np.repeat(np.add.reduceat(X.astype(np.float64), starts[:-1]) / sizes[:, None], sizes, 0)
    np.testing.assert_allclose(expected, (X - means) * np.repeat(scale, sizes)[:, None],
                               rtol=1e-9, atol=1e-9)
    for t in THREADS:
        out = np.empty((n, 9))
        _rankrls.centre(X, starts, scale, out, chunks, t)
        assert bits(out) == bits(expected)
