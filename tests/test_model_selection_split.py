"""rankfast.model_selection's folds (make_folds, splitters) and validation sets (ValidationSet)."""

import copy
import warnings

import numpy as np
import pytest
from data_makers import interleaved_queries as make_data
from data_makers import letor_like_queries as letor_like

from rankfast import RankRLS, RankSVM, RankSVML1, UsageError, metrics
from rankfast.model_selection import ValidationSet, make_folds

# The table's other columns that no ranking changes get a note of their own (tested in
# test_silent_misuse.py and above); here they would only add to the warnings summary.
pytestmark = pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")


CS = [0.001, 0.01, 0.1, 1.0, 10.0]


@pytest.mark.parametrize("K", [2, 3, 5, 10, 25])
def test_every_query_is_in_exactly_one_test_fold(K):
    X, y, qid = make_data(1)
    folds = make_folds(qid, K, random_state=7)
    Q = len(np.unique(qid))
    assert len(folds.splits) == min(K, Q)
    held = np.zeros(len(qid), dtype=int)
    sizes = []
    for train, test in folds.splits:
        held[test] += 1
        np.testing.assert_array_equal(np.sort(np.concatenate((train, test))), np.arange(len(qid)))
        assert not set(qid[train]) & set(qid[test])           # a query is never split
        sizes.append(len(set(qid[test])))
    assert np.all(held == 1)
    assert max(sizes) - min(sizes) <= 1                       # queries spread evenly


def test_the_seed_shuffles_the_folds_and_fixes_them():
    _, _, qid = make_data(2, sizes=(3,) * 30)

    def test_sets(seed):
        return [frozenset(qid[test]) for _, test in make_folds(qid, 5, seed).splits]
    assert test_sets(0) == test_sets(0)
    assert test_sets(0) != test_sets(1)
    unshuffled = [frozenset(np.unique(qid)[j::5]) for j in range(5)]    # the old "j mod K"
    assert test_sets(0) != unshuffled


def test_loqo_folds_and_single_ranking_folds():
    _, _, qid = make_data(3)
    loqo = make_folds(qid, "loqo")
    assert [set(qid[test]) for _, test in loqo.splits] == [{q} for q in dict.fromkeys(qid.tolist())]
    one = np.full(23, 4)
    folds = make_folds(one, 5, random_state=3)
    held = np.zeros(23, dtype=int)
    for train, test in folds.splits:
        held[test] += 1
        assert len(train) + len(test) == 23
    assert np.all(held == 1) and "documents of the single ranking" in folds.description
    with pytest.raises(ValueError, match="leave-query-out .* at least 2 queries"):
        make_folds(one, "loqo")
    with pytest.raises(ValueError, match="at least 4 documents"):
        make_folds(np.ones(3), 5)


@pytest.mark.parametrize("cv", [1, 0, "lqo", 2.5, True])
def test_bad_fold_counts_are_usage_errors(cv):
    with pytest.raises(UsageError):
        make_folds(np.arange(10) // 2, cv)


@pytest.mark.filterwarnings("ignore::rankfast.metrics.ConstantMetricWarning")   # 10-row queries
def test_a_splitter_that_splits_queries_warns():
    """KFold over rows trained each fold on fragments of every query it was scored on, and
    rankfast printed a normal table (NDCG 0.16-0.29 where GroupKFold gave 0.71-0.83)."""
    from rankfast.model_selection import SplitQueryWarning
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(120, 3)), rng.integers(0, 3, 120).astype(float)
    qid = np.repeat(np.arange(12), 10)
    shuffled = [(np.setdiff1d(np.arange(120), part), part)
                for part in np.array_split(rng.permutation(120), 4)]
    with pytest.warns(SplitQueryWarning, match=r"splits queries: fold \d holds out rows of") as got:
        RankSVM(C=[0.1, 1.0], cv=shuffled).fit(X, y, qid)
    assert got[0].filename == __file__
    by_query = [(np.flatnonzero(qid % 4 != f), np.flatnonzero(qid % 4 == f)) for f in range(4)]
    one_ranking = [(np.arange(60, 120), np.arange(60)), (np.arange(60), np.arange(60, 120))]
    with warnings.catch_warnings():
        warnings.simplefilter("error", SplitQueryWarning)
        RankSVM(C=[0.1, 1.0], cv=by_query).fit(X, y, qid)
        RankSVM(C=[0.1, 1.0], cv=one_ranking).fit(X, y, np.zeros(120))


def test_every_c_is_trained_on_all_of_train_and_scored_on_the_validation_queries():
    X, y, qid = letor_like(30, 0)
    Xv, yv, qv = letor_like(12, 1)
    ranker = RankSVM(C=CS, cv=ValidationSet(Xv, yv, qv)).fit(X, y, qid)
    result = ranker.cv_result_
    assert result.validation and result.folds == "validation set, 12 queries"
    expected = np.array([metrics.ndcg(RankSVM(C=C).fit(X, y, qid).predict(Xv), yv, qv, k=10,
                                      per_query=True) for C in CS])
    np.testing.assert_allclose(result.values[:, :, 0], expected, rtol=1e-6, atol=1e-9)
    assert ranker.C_ == CS[int(np.argmax(expected.mean(axis=1)))]
    # the model is a plain fit at the chosen value
    np.testing.assert_array_equal(ranker.weights_, RankSVM(C=ranker.C_).fit(X, y, qid).weights_)
    # the 1se rule's standard error is over the validation queries
    np.testing.assert_allclose(result.se[:, 0], expected.std(axis=1, ddof=1) / np.sqrt(12))
    one_se = RankSVM(C=CS, cv=ValidationSet(Xv, yv, qv), cv_rule="1se").fit(X, y, qid)
    best = int(np.argmax(expected.mean(axis=1)))
    within = expected.mean(axis=1) >= expected.mean(axis=1)[best] - result.se[best, 0]
    assert one_se.C_ == CS[int(np.flatnonzero(within)[0])]


def test_rankrls_and_a_learner_of_one_c_choose_on_the_validation_set_too():
    from rankfast.model_selection import GridSearch
    X, y, qid = letor_like(30, 2)
    Xv, yv, qv = letor_like(10, 3)
    valid = ValidationSet(Xv, yv, qv)
    rls = RankRLS(C=CS, cv=valid).fit(X, y, qid)
    expected = [metrics.ndcg(RankRLS(C=C).fit(X, y, qid).predict(Xv), yv, qv, k=10) for C in CS]
    np.testing.assert_allclose(rls.cv_result_.mean[:, 0], expected, rtol=1e-9)
    np.testing.assert_allclose(rls.weights_, RankRLS(C=rls.C_).fit(X, y, qid).weights_,
                               rtol=1e-8, atol=1e-12)
    search = GridSearch(RankSVML1(), {"C": CS}, cv=valid).fit(X, y, qid)
    assert search.cv_result_.validation
    np.testing.assert_array_equal(search.weights_,
                                  RankSVML1(C=search.C_).fit(X, y, qid).weights_)


def test_a_validation_set_is_checked_and_shared_not_copied():
    X, y, qid = letor_like(5, 4)
    with pytest.raises(ValueError, match="NaN or infinity"):
        ValidationSet(np.full((3, 2), np.nan), [1, 0, 1], [1, 1, 1])
    with pytest.raises(ValueError, match="rows but y has"):
        ValidationSet(X, y[:-1], qid)
    valid = ValidationSet(X, y, qid)
    assert copy.deepcopy(RankSVM(cv=valid)).cv is valid


def test_a_weighted_validation_set_weighs_each_query_in_the_table():
    from data_makers import letor_like_queries

    from rankfast import RankSVM
    from rankfast.model_selection import ValidationSet, cross_validate
    X, y, qid = letor_like_queries(n_queries=30, seed=2)
    weight = np.repeat(np.arange(1.0, 31.0), np.unique(qid, return_counts=True)[1])
    plain = ValidationSet(X[qid > 15], y[qid > 15], qid[qid > 15])
    weighted = ValidationSet(X[qid > 15], y[qid > 15], qid[qid > 15],
                             sample_weight=weight[qid > 15])
    fits = [cross_validate(RankSVM(), X[qid <= 15], y[qid <= 15], qid[qid <= 15],
                           {"C": [0.1, 1.0]}, cv=cv) for cv in (plain, weighted)]
    per_query = fits[0].values[:, :, 0]
    w = weight[qid > 15][np.r_[0, np.flatnonzero(np.diff(qid[qid > 15])) + 1]]
    np.testing.assert_allclose(fits[1].mean[:, 0], per_query @ w / w.sum())
    np.testing.assert_allclose(fits[0].mean[:, 0], per_query.mean(axis=1))
