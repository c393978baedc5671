"""rankfast.data.validation: the checks where input enters an estimator (TrainingData,
check_features, labels, query ids, the pairs a fit needs)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from data_makers import api_data, documents

from rankfast import GreedyRankRLS, RankNCG, RankRLS, RankSVM, RankSVML1
from rankfast.data import sparse as csr
from rankfast.data.validation import NoPairsWarning, TrainingData, check_features

LEARNERS = [RankSVM, RankNCG, RankSVML1, RankRLS, lambda: GreedyRankRLS(k=2)]


@pytest.mark.parametrize("name", ["RankSVM", "RankNCG", "RankSVML1", "RankRLS", "RankRLS-cg",
                                  "GreedyRankRLS"])
def test_float32_features_are_not_copied_and_give_the_float64_model_bit_for_bit(name):
    """The linear learners keep float32 values (svm_rank's 4 bytes a value), widening as they read."""
    import functools

    from rankfast.learners import greedy, rankncg, rankrls, svmrank
    from rankfast.learners import prsvm as ranksvm
    learner = {"RankSVM": ranksvm.RankSVM, "RankNCG": rankncg.RankNCG,
               "RankSVML1": svmrank.RankSVML1, "RankRLS": rankrls.RankRLS,
               "RankRLS-cg": functools.partial(rankrls.RankRLS, solver="cg"),
               "GreedyRankRLS": functools.partial(greedy.GreedyRankRLS, k=5)}[name]
    sparse_float32 = getattr(learner, "func", learner).sparse_float32
    rng = np.random.default_rng(4)
    S = sp.random(300, 20, density=0.3, format="csr", random_state=4, dtype=np.float32)
    y, qid = rng.integers(0, 3, 300), np.repeat(np.arange(30), 10)[rng.permutation(300)]
    X, _ = check_features(S, sparse_float32=sparse_float32)
    assert X.dtype == np.float32 and np.shares_memory(X.data, S.data)
    single = learner(C=1.0).fit(S, y, qid)
    double = learner(C=1.0).fit(S.astype(np.float64), y, qid)
    assert np.array_equal(single.weights_, double.weights_)
    assert np.array_equal(single.predict(S), double.predict(S.astype(np.float64)))


def test_other_learners_widen_float32_to_float64():
    from rankfast import KernelApproxLearner
    S = sp.random(10, 4, density=0.5, format="csr", random_state=0, dtype=np.float32)
    assert check_features(S)[0].dtype == np.float64
    assert not KernelApproxLearner.sparse_float32


def test_pandas_missing_values_are_a_value_error():
    pd = pytest.importorskip("pandas")
    from rankfast import RankSVM
    X, y, qid = api_data()
    frame = pd.DataFrame({"a": pd.array([1.0, None] * 20, dtype="Float64"), "b": X[:, 1]})
    with pytest.raises(ValueError, match="missing values"):
        RankSVM().fit(frame, y, qid)
    model = RankSVM().fit(frame.fillna(0.0), y, qid)
    with pytest.raises(ValueError, match="missing values"):
        model.predict(frame)
    with pytest.raises(ValueError, match="finite"):
        RankSVM().fit(X, pd.array([1.0, None] * 20, dtype="Float64"), qid)


@pytest.mark.parametrize("make", LEARNERS)
@pytest.mark.parametrize("y, qid, cause", [
    ([2, 1, 0, 1], [5, 6, 7, 8], "each of the 4 documents is a query of its own"),
    ([1, 1, 1, 1], [1, 1, 2, 2], "every label is 1"),
    ([1, 1, 0, 0], [1, 1, 2, 2], "within each query every document has the same label"),
])
def test_training_data_without_a_pair_warns_with_the_cause(make, y, qid, cause):
    X = np.arange(8.0).reshape(4, 2) ** 2
    with pytest.warns(NoPairsWarning, match=cause) as caught:
        model = make().fit(X, y, qid)
    assert not np.any(model.coef_)
    assert caught[0].filename == __file__               # points at the user's call


def test_data_with_a_pair_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoPairsWarning)
        RankSVM().fit(np.eye(3), [1, 0, 0], [1, 1, 2])


def test_query_ids_of_mixed_types_are_a_clear_error():
    qid = np.array([1, "a", 1], dtype=object)
    with pytest.raises(ValueError, match="all numbers or all strings"):
        RankSVM().fit(np.eye(3), [1, 0, 2], qid)


@pytest.mark.parametrize("sparse", [False, True])
def test_grouped_rows_follow_the_queries_first_appearance_and_drop_empty_columns(sparse):
    X, y, qid = documents()
    data = TrainingData(csr.as_csr(sp.csr_matrix(X)) if sparse else X, y, qid)
    grouped, labels, starts, used = data.grouped()
    order = [q for i, q in enumerate(qid) if q not in qid[:i]]           # by first appearance
    rows = np.concatenate([np.flatnonzero(qid == q) for q in order])     # file order within
    expected_used = np.array([j for j in range(X.shape[1]) if X[:, j].any()])
    np.testing.assert_array_equal(used, expected_used)
    dense = grouped.to_scipy().toarray() if sparse else grouped
    np.testing.assert_array_equal(dense, X[rows][:, expected_used])
    np.testing.assert_array_equal(labels, y[rows])
    np.testing.assert_array_equal(starts, np.cumsum([0] + [np.sum(qid == q) for q in order]))
    assert data.sparse == sparse
