"""rankfast.data.normalize: per-query min-max, log and z-score normalisation, folded into
the models the learners write."""

import numpy as np
import pytest
import scipy.sparse as sp
from data_makers import raw_data
from reference_impl import brute_query_min_max

from rankfast import GreedyRankRLS, RankNCG, RankRLS, RankSVM, RankSVML1
from rankfast.data.normalize import Normalizer, log_transform, normalized_scores, query_min_max


@pytest.mark.parametrize("negative", [False, True])
def test_query_min_max_matches_brute_force_dense_and_sparse(negative):
    X, _, qid = raw_data(negative=negative)
    expected = brute_query_min_max(X, qid)
    np.testing.assert_allclose(query_min_max(X, qid), expected, rtol=1e-12, atol=1e-15)
    sparse = query_min_max(sp.csr_matrix(X), qid)
    dense = sparse.toarray() if hasattr(sparse, "toarray") else sparse
    np.testing.assert_allclose(dense, expected, rtol=1e-12, atol=1e-15)


def test_query_min_max_rows_of_a_query_need_not_be_contiguous():
    X, _, qid = raw_data()
    order = np.random.default_rng(1).permutation(len(qid))
    np.testing.assert_allclose(query_min_max(X[order], qid[order]),
                               brute_query_min_max(X, qid)[order], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("values, index", [(np.float64, np.int32), (np.float32, np.int64)])
def test_query_min_max_sparse_kernel_matches_brute_force(seed, values, index):
    """Random CSR: negative columns whose absent zeros must be stored, explicit zeros,
    empty rows, one-document queries, rows out of query order and out of column order;
    the result equals the dense brute force exactly, and stores no more than it must."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 60)), int(rng.integers(1, 9))
    X = np.where(rng.random((n, d)) < 0.5, 0.0, rng.normal(size=(n, d)) * 10.0 ** rng.integers(-2, 6, d))
    X[:, 0] = np.abs(X[:, 0])                                # a non-negative column
    X[rng.random(n) < 0.1] = 0.0                             # empty rows
    X = X.astype(values)
    qid = rng.integers(0, max(1, n // 4), n)                 # not contiguous, some of one document
    csr = sp.csr_matrix(X)
    csr.data[rng.random(csr.nnz) < 0.1] = 0.0                # explicit zeros
    for row in range(n):                                     # columns out of order within rows
        lo, hi = csr.indptr[row], csr.indptr[row + 1]
        flip = rng.permutation(hi - lo)
        csr.indices[lo:hi], csr.data[lo:hi] = csr.indices[lo:hi][flip], csr.data[lo:hi][flip]
    csr.indices, csr.indptr = csr.indices.astype(index), csr.indptr.astype(index)
    X = csr.toarray()
    expected = brute_query_min_max(X.astype(np.float64), qid)
    result = query_min_max(csr, qid)
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result.toarray(), expected)
    absent = ~_stored(csr)                                   # zeros that only scaling can store
    assert result.nnz == csr.nnz + np.count_nonzero(expected[absent])
    np.testing.assert_array_equal(query_min_max(X, qid), expected)   # the dense kernel


def _stored(csr):
    mask = np.zeros(csr.shape, dtype=bool)
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    mask[rows, csr.indices] = True
    return mask


def test_query_min_max_of_no_rows_and_no_columns():
    for shape in ((0, 3), (4, 0)):
        X = np.zeros(shape)
        qid = np.arange(shape[0])
        assert query_min_max(X, qid).shape == shape
        assert query_min_max(sp.csr_matrix(X), qid).shape == shape


def test_log_keeps_signs_and_zeros():
    values = np.array([-1e8, -1.0, 0.0, 1e-3, 2.3e8])
    np.testing.assert_allclose(log_transform(values), np.sign(values) * np.log1p(np.abs(values)))
    assert log_transform(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("make", [lambda k: RankSVM(C=1.0, normalize=k, tol=1e-10),
                                  lambda k: RankNCG(C=1.0, normalize=k, tol=1e-10,
                                                    erfc="direct"),
                                  lambda k: RankSVML1(C=1.0, normalize=k, tol=1e-8),
                                  lambda k: RankRLS(C=1.0, normalize=k)])
def test_zscore_is_folded_into_the_weights(make):
    """normalize="zscore" scores raw X as the plain learner scores X / σ."""
    X, y, qid = raw_data()
    folded = make("zscore").fit(X, y, qid)
    sigma = X.std(axis=0)
    scaled = np.where(sigma > 0, X / np.where(sigma > 0, sigma, 1.0), 0.0)
    plain = make("none").fit(scaled, y, qid)
    np.testing.assert_allclose(folded.predict(X), plain.predict(scaled), rtol=1e-6,
                               atol=1e-9 * np.abs(plain.predict(scaled)).max())
    assert folded.to_model().metadata["normalize"] == "zscore"


@pytest.mark.parametrize("kind, transform", [("query", brute_query_min_max),
                                             ("log", lambda X, qid: log_transform(X))])
def test_query_and_log_models_normalise_what_they_score(kind, transform):
    X, y, qid = raw_data()
    model = RankSVM(C=1.0, normalize=kind).fit(X, y, qid)
    plain = RankSVM(C=1.0).fit(transform(X, qid), y, qid)
    np.testing.assert_allclose(model.weights_, plain.weights_, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(model.predict(X, qid), plain.predict(transform(X, qid)),
                               rtol=1e-9, atol=1e-12)
    stored = model.to_model()                       # the file's float32 weights
    assert stored.metadata["normalize"] == kind
    np.testing.assert_allclose(stored.predict(X, qid), model.predict(X, qid), rtol=1e-5,
                               atol=1e-6 * np.abs(model.predict(X, qid)).max())


def test_query_model_needs_the_queries():
    X, y, qid = raw_data()
    model = RankSVM(C=1.0, normalize="query").fit(X, y, qid)
    with pytest.raises(ValueError, match="qid"):
        model.predict(X)
    with pytest.raises(ValueError, match="qid"):
        model.to_model().predict(X)


def test_cross_validation_normalises_once():
    """A C list under normalize="log" cross-validates on the transformed data, as given once."""
    X, y, qid = raw_data(n=300)
    model = RankSVM(C=[0.1, 1.0, 10.0], normalize="log", cv=3).fit(X, y, qid)
    plain = RankSVM(C=[0.1, 1.0, 10.0], cv=3).fit(log_transform(X), y, qid)
    assert model.C_ == plain.C_
    np.testing.assert_allclose(model.cv_result_.values, plain.cv_result_.values)


def test_greedy_accepts_normalize():
    X, y, qid = raw_data(n=300)
    model = GreedyRankRLS(C=1.0, k=3, normalize="query").fit(X, y, qid)
    plain = GreedyRankRLS(C=1.0, k=3).fit(brute_query_min_max(X, qid), y, qid)
    np.testing.assert_array_equal(model.feature_ids_, plain.feature_ids_)


def test_normalized_scores_are_sparse_exact():
    """O(nnz) scores of a query equal scoring its densified, normalised rows."""
    X, _, qid = raw_data(negative=True)
    rows = np.flatnonzero(qid == qid[0])
    part = sp.csr_matrix(X[rows])
    ids = np.array([1, 2, 3, 5], dtype=np.int64)              # feature 4 and 6 weigh nothing
    weights = np.array([0.5, -2.0, 3.0, 1e-3])
    got = normalized_scores(part.indptr, part.indices, part.data, ids, weights, 0.25, "query")
    dense = brute_query_min_max(part.toarray().astype(np.float32).astype(np.float64),
                                np.zeros(len(rows)))
    expected = dense[:, ids - 1] @ weights - 0.25
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_scale_spread_is_the_ratio_of_the_columns_largest_magnitudes():
    from rankfast.data.normalize import scale_spread
    from rankfast.data.sparse import CSR
    X, _, _ = raw_data(negative=True)
    largest = np.abs(X).max(axis=0)
    expected = largest[largest > 0].max() / largest[largest > 0].min()
    assert scale_spread(X) == pytest.approx(expected, rel=1e-12)
    sparse = sp.csr_matrix(X)
    assert scale_spread(sparse) == pytest.approx(expected, rel=1e-12)
    wide = CSR(sparse.data, sparse.indices.astype(np.int64), sparse.indptr.astype(np.int64),
               (X.shape[0], 2**40))                      # the unique path: no array of 2^40
    assert scale_spread(wide) == pytest.approx(expected, rel=1e-12)


def test_score_scorers_and_grid_search_give_a_per_query_model_its_queries():
    from rankfast import RankSVM
    from rankfast.metrics import map_scorer, mean_average_precision, ndcg, ndcg_scorer
    from rankfast.model_selection import GridSearch
    rng = np.random.default_rng(13)
    X = rng.uniform(0, 1, (60, 3)) * [1.0, 1e6, 10.0]
    y = (X[:, 0] > 0.5).astype(float)
    qid = np.repeat(np.arange(6), 10)
    ranker = RankSVM(C=1.0, normalize="query").fit(X, y, qid)
    expected = ndcg(ranker.predict(X, qid), y, qid, k=10)
    assert ranker.score(X, y, qid) == pytest.approx(expected)
    assert ranker.score(X, y, group=[10] * 6) == pytest.approx(expected)
    scores = ranker.predict(X, qid)
    assert ndcg_scorer(10)(ranker, X, y, qid=qid) == pytest.approx(ndcg(scores, y, qid, k=10))
    assert map_scorer()(ranker, X, y, qid=qid) == pytest.approx(mean_average_precision(scores, y, qid))
    search = GridSearch(RankSVM(normalize="query"), {"C": [0.1, 1.0]}, cv=3).fit(X, y, qid)
    np.testing.assert_array_equal(search.predict(X, qid), search.best_estimator_.predict(X, qid))
    assert ndcg_scorer(10)(search, X, y, qid=qid) == pytest.approx(
        ndcg(search.predict(X, qid), y, qid, k=10))
    with pytest.raises(ValueError, match="qid must hold one query id per row"):
        ranker.to_model().predict(X, qid[:-1])


@pytest.mark.parametrize("values", [np.float32, np.float64])
def test_zscore_scales_of_sparse_columns_match_numpy_std(values):
    """σ per column of a CSR (absent entries count as 0) as numpy's two-pass std gives it,
    also for a column of large mean and small spread, where E[x²] − E[x]² cancels
    (1e8 ± 0.01 in float64: the one-pass formula gave σ = 0)."""
    from rankfast.data.normalize import Normalizer
    rng = np.random.default_rng(7)
    X = np.where(rng.random((300, 5)) < 0.4, 0.0, rng.normal(size=(300, 5)) * [1, 1e-3, 1e6, 5, 1])
    X[:, 3] = 1e8 + rng.normal(size=300) * 0.01                # stored in every row
    X[:, 4] = 0.0                                              # nothing stored: σ 0
    X = X.astype(values)
    expected = X.astype(np.float64).std(axis=0)
    scale = Normalizer("zscore").fit(sp.csr_matrix(X)).scale
    np.testing.assert_allclose(scale, expected, rtol=1e-9, atol=0)
    assert scale[4] == 0.0


def test_query_min_max_of_a_huge_feature_index_takes_memory_of_the_entries():
    """A file naming feature 2**31 - 1: the kernels' scratch (one value a column) is for the
    columns that occur, not for every index up to it (2**31 of them: 16 GB)."""
    from rankfast.data.sparse import CSR
    wide = 2**31 - 1
    data = np.array([1.0, 2.0, 3.0, -3.0, 1.0])
    indices = np.array([0, 4, 0, wide - 1, 4], dtype=np.int64)
    X = CSR(data, indices, np.array([0, 2, 4, 5]), (3, wide))
    scaled = query_min_max(X, [1, 1, 1])
    used = [0, 4, wide - 1]
    dense = np.zeros((3, 3))
    rows = np.repeat(np.arange(3), np.diff(X.indptr))
    dense[rows, [used.index(j) for j in indices]] = data
    expected = brute_query_min_max(dense, np.array([1, 1, 1]))
    got = np.zeros((3, 3))
    rows = np.repeat(np.arange(3), np.diff(scaled.indptr))
    got[rows, [used.index(j) for j in scaled.indices]] = scaled.data
    np.testing.assert_array_equal(got, expected)
    assert scaled.shape == (3, wide) and scaled.nnz == 7      # two absent zeros of column 2**31 - 2


def test_query_min_max_and_zscore_of_rows_taken_from_a_larger_csr():
    """indptr[0] > 0 and strided data: the entries before the rows are not the rows'."""
    from rankfast.data.sparse import CSR
    parent = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 9.0], [4.0, 0.0], [5.0, 7.0]])
    full = sp.csr_matrix(parent)
    strided = np.repeat(full.data, 2)[::2]                     # the same values, strided
    part = CSR(strided, full.indices, full.indptr[3:], (2, 2))  # rows 3 and 4 of the parent
    np.testing.assert_array_equal(query_min_max(part, [1, 1]).toarray(),
                                  brute_query_min_max(parent[3:], np.array([1, 1])))
    np.testing.assert_allclose(Normalizer("zscore").fit(part).scale, parent[3:].std(axis=0),
                               rtol=1e-12)


def test_query_min_max_refuses_query_ids_that_do_not_match_the_rows():
    with pytest.raises(ValueError, match="2 query ids for 3 rows"):
        query_min_max(np.arange(6.0).reshape(3, 2), [1, 1])
    with pytest.raises(ValueError, match="4 query ids for 3 rows"):
        query_min_max(sp.csr_matrix(np.eye(3)), [1, 1, 1, 1])


def test_query_min_max_takes_a_list_of_lists():
    np.testing.assert_array_equal(query_min_max([[1, 2], [3, 0], [5, 5]], [1, 1, 2]),
                                  [[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
