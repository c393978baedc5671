"""Features constant within every query get weight exactly 0, as in svm_rank's models.

Such a feature (LETOR's query-level features: OHSUMED's idf sums, MSLR's IDF
columns) adds the same to every score of a query, so no pair and no ranking
depends on it; svm_rank's w = Σ α (x_i − x_j) is 0 there and its model file
leaves it out.  The solvers used to leave their rounding and stopping slack
there (1.5e-6 on OHSUMED's raw features at the default -e).
"""
import numpy as np
import pytest
import scipy.sparse as sp

from rankfast import RankNCG, RankRLS, RankSVM, RankSVML1
from rankfast._kernels import _products
from rankfast.data.sparse import CSR
from rankfast.learners._linear import without_query_constant


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
    marked = np.zeros(d, dtype=np.int8)
    _products.mark_varying_columns(S.data, S.indices.astype(index_type),
                                   S.indptr.astype(index_type), order, starts, marked)
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


def letor_like(seed=0):
    """Raw features with LETOR's query-level columns: large values, constant within each query."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 25, size=40)
    qid = np.repeat(np.arange(len(sizes)) * 3 + 11, sizes)
    n = len(qid)
    X = rng.normal(size=(n, 6)) * [1.0, 30.0, 0.01, 1.0, 1.0, 100.0]
    level = rng.gamma(2.0, 60.0, size=(len(sizes), 3))
    X[:, [1, 3, 4]] = level[np.repeat(np.arange(len(sizes)), sizes)]    # query-constant
    y = np.digitize(X[:, 0] - 0.5 * X[:, 2] * 100 + X[:, 5] / 100 + rng.normal(size=n),
                    [-1.0, 0.5, 1.5]).astype(float)
    return X, y, qid


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


def test_the_model_file_leaves_them_out_as_svm_rank_does(tmp_path):
    from rankfast import write_model
    X, y, qid = letor_like(2)
    path = tmp_path / "model"
    write_model(RankSVM(C=1.0).fit(X, y, qid).to_model(), str(path))
    support_vector = path.read_text().splitlines()[-1].split()
    features = [int(token.split(":")[0]) for token in support_vector[1:] if ":" in token
                and not token.startswith("qid")]
    assert features == [1, 3, 6]


def test_greedy_never_selects_a_query_constant_feature():
    """It used to pick them once the useful features were taken (no feature lowered the
    leave-query-out error, and theirs moved by rounding alone)."""
    from rankfast import GreedyRankRLS
    X, y, qid = letor_like(3)
    model = GreedyRankRLS(C=1.0, k=6).fit(X, y, qid)
    assert sorted(model.selected_.tolist()) == [1, 3, 6]
    assert np.all(model.coef_[[1, 3, 4]] == 0.0)
