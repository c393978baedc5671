"""rankfast.model_selection: the CV table, the 1se rule, progress, warm-started paths against
cold refits, grids, weighted selection, and choosing when a metric cannot."""

import warnings

import numpy as np
import pytest
from data_makers import interleaved_queries as make_data
from data_makers import repeated, row_weights
from data_makers import weighted_queries as data
from fit_helpers import Recorder

from rankfast import (
    GreedyRankRLS,
    KernelApproxLearner,
    KernelParams,
    RankNCG,
    RankRLS,
    RankSVM,
    RankSVML1,
    UsageError,
    metrics,
)
from rankfast.data.validation import NoPairsWarning
from rankfast.model_selection import CVResult, GridSearch, Metric, ValidationSet, make_folds, table_metrics
from rankfast.model_selection._validation import Progress, _log_progress, choose, cross_validate

# The table's other columns that no ranking changes get a note of their own (tested in
# test_silent_misuse.py and above); here they would only add to the warnings summary.
pytestmark = pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")


CS = [0.03, 0.3, 3.0]


M = "ndcg@5"            # the queries have 7 documents: LETOR's NDCG@10 is 0 for each


def test_the_same_folds_serve_every_c():
    X, y, qid = make_data(4)
    Recorder.seen = []
    result = cross_validate(Recorder(), X, y, qid, [10.0, 0.1, 1.0], cv=4, random_state=5)
    folds = make_folds(qid, 4, random_state=5)
    assert len(Recorder.seen) == 3 * 4
    for f, (train, _) in enumerate(folds.splits):
        fits = Recorder.seen[3 * f:3 * f + 3]
        assert [C for C, _, _ in fits] == [0.1, 1.0, 10.0]           # ascending
        assert {(queries, n) for _, queries, n in fits} == {(frozenset(qid[train]), len(train))}
    assert [row["C"] for row in result.params] == [0.1, 1.0, 10.0]


class FixedSplitter:
    """A splitter object of scikit-learn's protocol with hand-chosen folds."""

    def __init__(self, tests):
        self.tests = tests

    def split(self, X, y, groups):
        n = len(groups)
        for test in self.tests:
            yield np.setdiff1d(np.arange(n), test), np.asarray(test)


def test_splitter_objects_are_honoured():
    X, y, qid = make_data(5)
    queries = list(dict.fromkeys(qid.tolist()))
    tests = [np.flatnonzero(np.isin(qid, queries[:3])), np.flatnonzero(np.isin(qid, queries[5:]))]
    result = cross_validate(Recorder(), X, y, qid, [1.0], cv=FixedSplitter(tests))
    assert result.values.shape[1] == 2 and "2 splits of FixedSplitter" in result.folds
    for f, test in enumerate(tests):
        train = np.setdiff1d(np.arange(len(y)), test)
        scores = Recorder().fit(X[train], y[train], qid[train]).predict(X[test])
        assert result.values[0, f, 0] == pytest.approx(metrics.ndcg(scores, y[test], qid[test]))
    with pytest.raises(UsageError, match="outside"):
        cross_validate(Recorder(), X, y, qid, [1.0], cv=FixedSplitter([[0, len(y)]]))


def test_scikit_learn_group_k_fold():
    model_selection = pytest.importorskip("sklearn.model_selection")
    X, y, qid = make_data(6)
    splitter = model_selection.GroupKFold(n_splits=3)
    result = cross_validate(RankSVM(), X, y, qid, [0.1, 1.0], cv=splitter)
    for f, (train, test) in enumerate(splitter.split(X, y, qid)):
        scores = RankSVM(C=1.0).fit(X[train], y[train], qid[train]).predict(X[test])
        assert result.values[1, f, 0] == pytest.approx(metrics.ndcg(scores, y[test], qid[test]),
                                                      abs=1e-6)


def test_one_standard_error_rule_on_a_hand_made_table():
    C = [0.01, 0.1, 1.0, 10.0]
    mean = [0.70, 0.78, 0.80, 0.79]
    se = [0.01, 0.01, 0.03, 0.01]
    assert choose(mean, se, C, "best") == 2
    assert choose(mean, se, C, "1se") == 1                    # 0.78 ≥ 0.80 − 0.03; 0.70 is not
    assert choose(mean, [0.0, 0.0, 0.005, 0.0], C, "1se") == 2
    assert choose([0.5, 0.5], [0.1, 0.1], [2.0, 1.0], "best") == 1     # ties to the smaller C
    assert choose([np.nan, 0.4], [np.nan, np.nan], [1.0, 2.0], "1se") == 1
    # the grid crossed with gamma: the smallest C, then the higher mean
    assert choose([0.60, 0.75, 0.61, 0.80], [0.1] * 4, [0.1, 0.1, 1.0, 1.0], "1se") == 1
    with pytest.raises(ValueError, match="undefined"):
        choose([np.nan], [np.nan], [1.0])


def test_cv_result_statistics_and_marks():
    values = np.array([[[0.70], [0.72], [0.68]],
                       [[0.80], [0.70], [0.75]],
                       [[0.79], [0.74], [np.nan]]])
    params = [{"C": 0.1}, {"C": 1.0}, {"C": 10.0}]
    result = CVResult(params, [Metric("ndcg", 10)], values, "3 folds", "1se")
    np.testing.assert_allclose(result.mean[:, 0], [0.70, 0.75, 0.765])
    np.testing.assert_allclose(result.sd[:, 0], [np.std([0.70, 0.72, 0.68], ddof=1),
                                                 np.std([0.80, 0.70, 0.75], ddof=1),
                                                 np.std([0.79, 0.74], ddof=1)])
    np.testing.assert_allclose(result.se[:, 0], result.sd[:, 0] / np.sqrt([3, 3, 2]))
    assert result.best == 2 and result.chosen == 1             # 0.75 ≥ 0.765 − 0.025
    text = result.format()
    assert "NDCG@10 (LETOR)" in text and "one-standard-error" in text
    lines = text.splitlines()
    assert lines[3].endswith("<- chosen") and lines[4].endswith("(highest mean)")
    assert "0.7500 ± 0.0500" in lines[3]
    assert result.rows()[1] == {"C": 1.0, "ndcg@10": pytest.approx(0.75),
                                "ndcg@10_sd": pytest.approx(0.05)}
    assert CVResult(params, [Metric("ndcg", 10)], values, "3 folds", "best").chosen == 2


def test_metric_parsing_and_columns():
    assert Metric.parse("NDCG@5").key == "ndcg@5"
    assert Metric.parse("err@3").label == "ERR@3"
    assert Metric.parse("ndcg@10", "standard").label == "NDCG@10 (standard)"
    assert [m.key for m in table_metrics(Metric.parse("map"))] == ["map", "ndcg@10", "err@10", "pairs"]
    assert [m.key for m in table_metrics(Metric.parse("err@5"))] == ["err@5", "ndcg@5", "map", "pairs"]
    for bad in ("ndcg@0", "auc", "map@3", "pairs@2", "ndcg@x"):
        with pytest.raises(UsageError):
            Metric.parse(bad)
    with pytest.raises(UsageError):
        Metric.parse("map", "trec")


def test_progress_reports_elapsed_time_and_eta():
    steps = []
    X, y, qid = make_data(7)
    cross_validate(RankSVM(), X, y, qid, [0.1, 1.0, 10.0], cv=3, progress=steps.append)
    assert [s.done for s in steps] == list(range(1, 10)) and all(s.total == 9 for s in steps)
    assert [s.fold for s in steps] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert steps[-1].eta == 0.0 and all(s.elapsed >= 0 for s in steps)
    step = Progress(2, 8, 1, 4, {"C": 0.5}, "MAP", 0.61234, 3.0)
    assert step.eta == 9.0
    assert str(step) == "CV 2/8: fold 2/4, C = 0.5: MAP 0.6123 (elapsed 3.0 s, ETA 9.0 s)"


def test_progress_lines_are_rate_limited_at_verbosity_1():
    """A fake clock (each step's elapsed time, 0.3 s apart): level 1 about once a second."""
    sent = []
    send = _log_progress(lambda text, level: sent.append((level, text)))
    for done in range(1, 11):
        send(Progress(done, 10, 0, 2, {"C": 1.0}, "MAP", 0.5, 0.3 * (done - 1)))
    assert len(sent) == 10                                      # -v 2: every line
    shown = [i + 1 for i, (level, _) in enumerate(sent) if level == 1]
    assert shown == [1, 5, 9, 10]                              # first, ≥ 1 s apart, last
    assert all(level == 2 for i, (level, _) in enumerate(sent) if i + 1 not in shown)
    assert sent[4][1].startswith("CV 5/10: fold 1/2, C = 1: MAP 0.5000 (elapsed 1.2 s")
    assert _log_progress(None) is None


def test_progress_lines_of_a_slow_search_are_all_shown():
    sent = []
    send = _log_progress(lambda text, level: sent.append(level))
    for done in range(1, 5):
        send(Progress(done, 4, None, 1, {"C": 1.0}, "MAP", 0.5, 2.0 * done))
    assert sent == [1, 1, 1, 1]


def test_prsvm_warm_started_path_equals_cold_retraining():
    X, y, qid = make_data(8)
    grid = [3.0, 0.01, 0.3]
    result = cross_validate(RankSVM(tol=1e-10, max_iter=200), X, y, qid, grid, cv=3,
                            metric="pairs", random_state=2)
    folds = make_folds(qid, 3, random_state=2)
    for i, C in enumerate(sorted(grid)):
        for f, (train, test) in enumerate(folds.splits):
            model = RankSVM(C=C, tol=1e-10, max_iter=200).fit(X[train], y[train], qid[train])
            s = model.predict(X[test])
            right = sum(1 for q in set(qid[test]) for a in np.flatnonzero(qid[test] == q)
                        for b in np.flatnonzero(qid[test] == q)
                        if y[test][a] > y[test][b] and s[a] > s[b])
            pairs = sum(1 for q in set(qid[test]) for a in np.flatnonzero(qid[test] == q)
                        for b in np.flatnonzero(qid[test] == q) if y[test][a] > y[test][b])
            assert result.values[i, f, 0] == pytest.approx(right / pairs, abs=1e-9)
            assert result.values[i, f, 1] == pytest.approx(
                metrics.ndcg(s, y[test], qid[test], k=10), abs=1e-6)


def test_rankncg_path_equals_cold_fits():
    X, y, qid = make_data(9)
    Cs = [0.1, 1.0, 10.0]
    path = list(RankNCG(tol=1e-9, erfc="direct").fit_path(X, y, qid, Cs))
    for C, fitted in zip(Cs, path):
        cold = RankNCG(C=C, tol=1e-9, erfc="direct").fit(X, y, qid)
        assert fitted.C_ == C
        np.testing.assert_allclose(fitted.predict(X), cold.predict(X), rtol=1e-5, atol=1e-6)


class SameLambda:
    """RankRLS refitted on fewer queries with the λ = Q / (2C) of all Q (as exact LQO keeps it)."""

    def __init__(self, C=1.0, Q=1):
        self.C, self.Q = C, Q

    def fit(self, X, y, qid):
        self.model = RankRLS(C=self.C * len(np.unique(qid)) / self.Q).fit(X, y, qid)
        return self

    def predict(self, X):
        return self.model.predict(X)


def test_rankrls_exact_loqo_equals_refitting_per_query():
    """The eigendecomposition's exact leave-query-out table and Q honest refits agree."""
    X, y, qid = make_data(10, levels=4)
    grid = [0.03, 1.0, 30.0]
    exact = RankRLS(C=grid).fit(X, y, qid).cv_result_
    refit = cross_validate(SameLambda(Q=len(np.unique(qid))), X, y, qid, grid, cv="loqo")
    assert "exact leave-query-out" in exact.folds and exact.columns[-1].key == "loss"
    np.testing.assert_allclose(exact.values[:, :, :-1], refit.values, rtol=1e-8, atol=1e-10)
    assert exact.chosen == refit.chosen


def test_rankrls_with_k_folds_uses_its_path():
    X, y, qid = make_data(11)
    model = RankRLS(C=[0.1, 10.0], cv=3, random_state=4).fit(X, y, qid)
    refit = cross_validate(Recorder(), X, y, qid, [1.0], cv=3, random_state=4)   # same folds
    assert model.cv_result_.folds == refit.folds == "3 folds of queries, seed 4"
    folds = make_folds(qid, 3, random_state=4)
    train, test = folds.splits[1]
    cold = RankRLS(C=10.0).fit(X[train], y[train], qid[train]).predict(X[test])
    assert model.cv_result_.values[1, 1, 0] == pytest.approx(metrics.ndcg(cold, y[test], qid[test]))
    np.testing.assert_allclose(model.weights_, RankRLS(C=model.C_).fit(X, y, qid).weights_,
                               rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("make", [lambda g: RankSVM(C=g), lambda g: RankNCG(C=g),
                                  lambda g: RankRLS(C=g), lambda g: GreedyRankRLS(C=g, k=2)],
                         ids=["prsvm", "rankncg", "rankrls", "greedy"])
def test_every_learner_takes_a_c_list(make):
    X, y, qid = make_data(12)
    model = make([0.05, 5.0]).fit(X, y, qid)
    assert model.C_ in (0.05, 5.0) and len(model.cv_table_) == 2
    single = make(model.C_).fit(X, y, qid)
    np.testing.assert_allclose(model.predict(X), single.predict(X), rtol=1e-9, atol=1e-12)
    assert read_meta(model, X)["grid"] == "0.05,5"


def read_meta(model, X):
    return model.to_model(n_features=X.shape[1]).metadata


def test_a_single_ranking_is_cross_validated_by_its_documents():
    rng = np.random.default_rng(13)
    X = rng.normal(size=(60, 4))
    y = (X @ [1.0, -0.5, 0.2, 0.0] + 0.3 * rng.normal(size=60) > 0).astype(float)
    qid = np.ones(60)
    result = cross_validate(RankSVM(), X, y, qid, [0.1, 10.0], cv=4, metric="pairs",
                            random_state=1)
    folds = make_folds(qid, 4, random_state=1)
    assert "4 folds of the documents" in result.folds
    for f, (train, test) in enumerate(folds.splits):
        s = RankSVM(C=10.0).fit(X[train], y[train], qid[train]).predict(X[test])
        pos, neg = s[y[test] == 1], s[y[test] == 0]
        wmw = np.mean(pos[:, None] > neg[None, :])            # the held-out part's WMW
        assert result.values[1, f, 0] == pytest.approx(wmw, abs=1e-6)
    model = RankRLS(C=[0.1, 10.0]).fit(X, y, qid)              # default: folds of documents
    assert "folds of the documents" in model.cv_result_.folds
    with pytest.raises(ValueError, match="leave-query-out"):
        RankRLS(C=[0.1, 10.0], cv="loqo").fit(X, y, qid)


def test_gamma_grid_crossed_with_c():
    from rankfast import KernelApproxLearner, KernelParams
    X, y, qid = make_data(14)
    base = KernelApproxLearner(RankSVM(), KernelParams(2, gamma=1.0), landmarks=20, seed=3)
    search = GridSearch(base, {"kernel__gamma": [0.1, 1.0], "base_learner__C": [0.1, 10.0]},
                        cv=3).fit(X, y, qid)
    result = search.cv_result_
    assert [tuple(row.values()) for row in result.params] == [(0.1, 0.1), (0.1, 10.0),
                                                               (1.0, 0.1), (1.0, 10.0)]
    chosen = result.chosen_params
    assert search.best_estimator_.kernel.gamma == chosen["gamma"]
    assert search.best_estimator_.base_learner.C == chosen["C"]
    folds = make_folds(qid, 3, random_state=0)
    train, test = folds.splits[0]
    one = KernelApproxLearner(RankSVM(C=10.0), KernelParams(2, gamma=0.1), landmarks=20, seed=3)
    s = one.fit(X[train], y[train], qid[train]).predict(X[test])
    assert result.values[1, 0, 0] == pytest.approx(metrics.ndcg(s, y[test], qid[test]), abs=1e-9)
    meta = search.to_model(n_features=X.shape[1]).metadata
    assert meta["gamma_grid"] == "0.1,1.0"
    assert base.kernel.gamma == 1.0 and base.base_learner.C == 0.01      # template untouched


def test_grid_rows_put_c_last_whatever_the_order_given():
    from rankfast.model_selection import grid_rows
    rows = grid_rows({"base_learner__C": [1.0, 0.1], "kernel__gamma": [2.0, 0.5]})
    assert [list(row) for row in rows] == [["kernel__gamma", "base_learner__C"]] * 4
    assert [tuple(row.values()) for row in rows] == [(0.5, 0.1), (0.5, 1.0), (2.0, 0.1), (2.0, 1.0)]
    assert grid_rows([3, 1, 3]) == [{"C": 1.0}, {"C": 3.0}]


def short_queries(seed=0, n_queries=30, size=6, d=4):
    """Queries of `size` documents (fewer than 10) with graded labels 1-3 (every one relevant)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * size, d))
    y = 1.0 + np.clip(np.round(X @ np.array([1.0, -0.5, 0.25, 0.0]) + rng.normal(size=len(X))), 0, 2)
    return X, y, np.repeat(np.arange(n_queries), size)


@pytest.mark.parametrize("metric, cause", [("ndcg@10", "every query has fewer than 10 documents"),
                                           ("map", "every query has only relevant documents")])
@pytest.mark.parametrize("make", [lambda m: RankSVM(C=[1e-4, 1e-2, 1.0, 100.0], cv=3, cv_metric=m),
                                  lambda m: RankRLS(C=[1e-4, 1e-2, 1.0, 100.0], cv="loqo",
                                                    cv_metric=m)])
def test_a_metric_no_ranking_can_change_hands_the_choice_to_pair_accuracy(metric, cause, make):
    """LETOR's NDCG@10 of short queries is 0 and MAP of graded labels 1-3 is 1 whatever the
    model: the choice fell silently to the smallest C.  Pair accuracy chooses then, with a
    warning naming the cause, and the chosen C is the one cv_metric="pairs" chooses."""
    X, y, qid = short_queries()
    with pytest.warns(metrics.ConstantMetricWarning, match=cause):
        ranker = make(metric).fit(X, y, qid)
    result = ranker.cv_result_
    assert [column.key for column in result.columns[:2]] == ["pairs", metric]
    assert np.all(result.mean[:, 1] == result.mean[0, 1])         # the asked metric: all alike
    assert len(set(result.mean[:, 0].tolist())) > 1                # pair accuracy tells apart
    by_pairs = make("pairs").fit(X, y, qid)
    assert ranker.C_ == by_pairs.C_
    np.testing.assert_array_equal(result.mean[:, 0], by_pairs.cv_result_.mean[:, 0])
    assert "chosen by pair accuracy" in result.format()


def test_a_validation_set_whose_queries_no_ranking_can_change_chooses_by_pairs():
    X, y, qid = short_queries()
    valid = ValidationSet(*short_queries(1))
    with pytest.warns(metrics.ConstantMetricWarning, match="of the held-out queries"):
        ranker = RankSVM(C=[1e-4, 1.0], cv=valid).fit(X, y, qid)
    assert ranker.cv_result_.columns[0].key == "pairs"


def test_a_metric_that_tells_models_apart_still_chooses(recwarn):
    X, y, qid = short_queries()
    ranker = RankSVM(C=[1e-4, 1.0], cv=3, cv_metric="ndcg@5").fit(X, y, qid)
    assert ranker.cv_result_.columns[0].key == "ndcg@5"
    notes = [str(w.message) for w in recwarn if issubclass(w.category,
                                                          metrics.ConstantMetricWarning)]
    assert not [note for note in notes if "NDCG@5" in note or "chosen by" in note]


def test_queries_of_one_label_each_leave_nothing_to_choose_by():
    X, y, qid = short_queries()
    y = (qid % 2).astype(float)                       # one label per query: no pair anywhere
    with pytest.warns(metrics.ConstantMetricWarning, match="every query has documents of a single "
                                                           "label, so no model is better than another"), \
            pytest.warns(NoPairsWarning):
        ranker = RankSVM(C=[1e-4, 1.0], cv=3).fit(X, y, qid)
    assert ranker.cv_result_.columns[0].key == "ndcg@10"           # pairs could not choose either


def test_queries_weighing_zero_do_not_decide_whether_the_metric_can_choose():
    """The folds' means leave out queries of weight 0, and so does the check: queries that
    could tell models apart but weigh 0 do not save the metric, and pairs only they hold do
    not make pair accuracy a choice (it would be undefined on every fold)."""
    X, y, qid = short_queries(size=12)                       # 12 documents: NDCG@10 can choose
    short = qid < 15
    keep = ~short | (np.arange(len(qid)) % 12 < 6)            # queries 0-14 cut to 6 documents
    X, y, qid, short = X[keep], y[keep], qid[keep], short[keep]
    weight = np.where(short, 1.0, 0.0)
    with pytest.warns(metrics.ConstantMetricWarning, match="fewer than 10 documents .*, so the "
                                                           "models are chosen by pair accuracy"):
        ranker = RankSVM(C=[1e-4, 1.0], cv=3).fit(X, y, qid, sample_weight=weight)
    assert ranker.cv_result_.columns[0].key == "pairs"
    y = np.where(short, 2.0, y)                               # the weighed queries: one label
    with pytest.warns(metrics.ConstantMetricWarning, match="no model is better than another"):
        ranker = RankSVM(C=[1e-4, 1.0], cv=3, cv_metric="map").fit(X, y, qid, sample_weight=weight)
    assert ranker.cv_result_.columns[0].key == "map" and ranker.C_ == 1e-4


def test_a_single_ranking_split_into_short_folds_chooses_by_pairs():
    """One ranking of 30 documents is cut into 5 folds of 6: each fold's NDCG@10 (LETOR) is 0."""
    X, y, _ = short_queries(n_queries=1, size=30)
    with pytest.warns(metrics.ConstantMetricWarning, match="every query has fewer than 10"):
        ranker = RankSVM(C=[1e-4, 1.0]).fit(X, y)
    assert ranker.cv_result_.columns[0].key == "pairs"
    X, y, _ = short_queries(n_queries=1, size=100)             # folds of 20: NDCG@10 chooses
    assert RankSVM(C=[1e-4, 1.0]).fit(X, y).cv_result_.columns[0].key == "ndcg@10"


def test_a_grid_names_nested_parameters_as_set_params_does():
    """GridSearch and set_params name a nested parameter one way: base_learner__C."""
    from rankfast import KernelApproxLearner
    from rankfast.model_selection import grid_rows
    rows = grid_rows({"base_learner__C": [1.0], "kernel__gamma": [0.5]})
    assert rows == [{"kernel__gamma": 0.5, "base_learner__C": 1.0}]
    learner = KernelApproxLearner(RankSVM(C=3.0))
    assert learner.get_params()["base_learner__C"] == 3.0
    with pytest.raises(UsageError, match="'base_learner__C'"):
        grid_rows({"base_learner.C": [1.0]})


def test_more_folds_than_queries_say_so_in_the_table_title():
    rng = np.random.default_rng(0)
    X, y, qid = rng.normal(size=(40, 2)), np.arange(40) % 3, np.arange(40) // 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                # 4-document queries: NDCG@10 constant
        result = RankSVM(C=[0.1, 1.0], cv=50).fit(X, y, qid).cv_result_
    assert result.folds.startswith("10 folds of queries (one a query: 50 asked)")


def test_a_cv_result_says_validation_in_its_header():
    result = CVResult([{"C": 1.0}, {"C": 2.0}], [metrics_column()], np.ones((2, 3, 1)),
                      "vali.txt, 3 queries", validation=True)
    assert result.format().startswith("Validation (vali.txt, 3 queries): mean ± sd over its "
                                      "queries")


def metrics_column():
    from rankfast.model_selection import Metric
    return Metric.parse("ndcg@10")


class SameFold:
    """Three folds of the original queries; every copy (qid 100k + q) in the fold of q."""

    def split(self, X, y, groups):
        fold = (np.asarray(groups) % 100) % 3
        for f in range(3):
            yield np.flatnonzero(fold != f), np.flatnonzero(fold == f)


@pytest.mark.parametrize("metric", ["ndcg@5", "map", "err@5", "pairs", "ndcg"])
def test_a_weighted_metric_is_the_metric_of_the_data_with_the_queries_repeated(metric):
    X, y, qid = data()
    scores = X @ [1.0, -0.5, 0.2, 0.0]
    X2, y2, qid2 = repeated(X, y, qid)
    metric = Metric.parse(metric)
    weighted = metric.evaluate(scores, y, qid, max_grade=3, weight=row_weights(qid))
    assert weighted == pytest.approx(metric.evaluate(X2 @ [1.0, -0.5, 0.2, 0.0], y2, qid2,
                                                     max_grade=3), rel=1e-12)
    assert weighted != pytest.approx(metric.evaluate(scores, y, qid, max_grade=3), rel=1e-6)
    assert np.isnan(metric.evaluate(scores, y, qid, weight=np.zeros(len(y))))


def test_weighted_fold_statistics_against_their_formulas():
    rng = np.random.default_rng(3)
    values = rng.random((2, 5, 1))
    values[1, 2, 0] = np.nan                        # undefined on a fold: left out
    w = np.array([1.0, 2.0, 0.5, 0.0, 3.0])
    result = CVResult([{"C": 1.0}, {"C": 2.0}], [Metric.parse("map")], values, "x", weights=w)
    for i in range(2):
        keep = np.isfinite(values[i, :, 0]) & (w > 0)
        v, u = values[i, keep, 0], w[keep]
        mean = np.average(v, weights=u)
        n_eff = u.sum() ** 2 / (u * u).sum()
        sd = np.sqrt(np.sum(u * (v - mean) ** 2) / (u.sum() - (u * u).sum() / u.sum()))
        assert result.mean[i, 0] == pytest.approx(mean, rel=1e-13)
        assert result.sd[i, 0] == pytest.approx(sd, rel=1e-12)
        assert result.se[i, 0] == pytest.approx(sd / np.sqrt(n_eff), rel=1e-12)
    plain = CVResult([{"C": 1.0}, {"C": 2.0}], [Metric.parse("map")], values, "x")
    ones = CVResult([{"C": 1.0}, {"C": 2.0}], [Metric.parse("map")], values, "x",
                    weights=np.ones(5))
    for stat in ("mean", "sd", "se", "count"):
        np.testing.assert_array_equal(getattr(ones, stat), getattr(plain, stat))


KFOLD = {
    "RankSVM": lambda cv: RankSVM(C=CS, tol=1e-12, cv=cv, cv_metric=M),
    "RankSVM-loss2": lambda cv: RankSVM(C=CS, loss=2, tol=1e-12, cv=cv, cv_metric=M),
    "RankNCG": lambda cv: RankNCG(C=CS, tol=1e-12, cv=cv, cv_metric=M),
    "RankRLS": lambda cv: RankRLS(C=CS, cv=cv, cv_metric=M),
    "RankSVML1-grid": lambda cv: GridSearch(RankSVML1(tol=1e-10), {"C": CS}, cv=cv, cv_metric=M),
    "RFF-gamma-grid": lambda cv: GridSearch(
        KernelApproxLearner(RankRLS(C=1.0), KernelParams(kernel=2, gamma=1.0), approx="rff",
                            landmarks=30),
        {"kernel__gamma": [0.1, 1.0], "base_learner__C": [0.1, 1.0]}, cv=cv, cv_metric=M),
    "RFF": lambda cv: KernelApproxLearner(RankRLS(C=CS, cv=cv, cv_metric=M),
                                          KernelParams(kernel=2, gamma=0.3), approx="rff",
                                          landmarks=30),
}


@pytest.mark.parametrize("name", sorted(KFOLD))
def test_a_c_list_with_a_weight_of_two_is_the_c_list_with_the_query_twice(name):
    X, y, qid = data()
    X2, y2, qid2 = repeated(X, y, qid)
    weight = row_weights(qid)
    original = weight.copy()
    weight.setflags(write=False)                     # fit must not write into it
    fitted = KFOLD[name](SameFold()).fit(X, y, qid, sample_weight=weight)
    twice = KFOLD[name](SameFold()).fit(X2, y2, qid2)
    plain = KFOLD[name](SameFold()).fit(X, y, qid)
    np.testing.assert_array_equal(weight, original)
    tables = [getattr(m, "cv_result_", None) or m.learner_.cv_result_ for m in (fitted, twice,
                                                                             plain)]
    np.testing.assert_allclose(tables[0].values, tables[1].values, rtol=1e-7, atol=1e-9)
    assert not np.allclose(tables[0].values, tables[2].values, rtol=1e-6)
    assert tables[0].chosen == tables[1].chosen
    np.testing.assert_allclose(fitted.predict(X), twice.predict(X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("make", [lambda: RankSVM(C=CS, tol=1e-12), lambda: RankRLS(C=CS)])
def test_a_validation_table_weighs_the_fits_not_the_validation_queries(make):
    X, y, qid = data()
    Xv, yv, qv = data(seed=1)
    X2, y2, qid2 = repeated(X, y, qid)
    fitted = make().set_params(cv=ValidationSet(Xv, yv, qv), cv_metric=M).fit(X, y, qid,
                                                                 sample_weight=row_weights(qid))
    twice = make().set_params(cv=ValidationSet(Xv, yv, qv), cv_metric=M).fit(X2, y2, qid2)
    np.testing.assert_allclose(fitted.cv_result_.values, twice.cv_result_.values, rtol=1e-7,
                               atol=1e-9)
    assert fitted.cv_result_.weights is None


def test_greedy_with_a_c_list_scores_each_fold_with_its_weighted_fits():
    """Greedy's C list: every fold's model is greedy fitted on the fold's weighted queries, and
    the fold's value weighs its held-out queries (greedy's own weighting: the tests below)."""
    X, y, qid = data(d=5)
    weight = row_weights(qid)
    ranker = GreedyRankRLS(C=CS, k=2, cv=SameFold(), cv_metric=M).fit(X, y, qid,
                                                                      sample_weight=weight)
    metric = Metric.parse(M)
    for f, (train, test) in enumerate(SameFold().split(X, y, qid)):
        for i, C in enumerate(CS):
            model = GreedyRankRLS(C=C, k=2).fit(X[train], y[train], qid[train],
                                                sample_weight=weight[train])
            expected = metric.evaluate(model.predict(X[test]), y[test], qid[test], max_grade=3,
                                       weight=weight[test])
            assert ranker.cv_result_.values[i, f, 0] == pytest.approx(expected, rel=1e-12)


def test_cv_as_a_list_of_splits_is_the_splitter_that_made_them():
    """scikit-learn's other form of cv (its sample-weight checks pass one)."""
    from rankfast import UsageError
    X, y, qid = data()
    splits = list(SameFold().split(X, y, qid))
    by_list = RankSVM(C=CS, cv=splits, cv_metric=M).fit(X, y, qid, sample_weight=row_weights(qid))
    by_splitter = RankSVM(C=CS, cv=SameFold(), cv_metric=M).fit(X, y, qid,
                                                                sample_weight=row_weights(qid))
    np.testing.assert_array_equal(by_list.cv_result_.values, by_splitter.cv_result_.values)
    assert by_list.cv_result_.folds == "3 splits of the list given"
    for bad in ([(splits[0][0],)], [], [(np.ones(3, dtype=bool), splits[0][1])]):
        with pytest.raises(UsageError):
            RankSVM(C=CS, cv=bad).fit(X, y, qid)


def test_a_fold_whose_training_queries_all_weigh_zero_is_refused_by_its_number():
    X, y, qid = data()
    weight = np.where(qid % 3 == 0, 1.0, 0.0)        # only fold 0's queries weigh
    with pytest.raises(ValueError, match="fold 1 of 3 trains on queries whose weights are all"):
        RankSVM(C=CS, cv=SameFold(), cv_metric="ndcg@5").fit(X, y, qid, sample_weight=weight)
