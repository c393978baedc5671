"""Query weights (sample_weight) with a list of C, K folds, leave-query-out and greedy RankRLS.

A weight of 2 is the query twice: in every fit (test_api), and in a cross-validation
table when both copies are held out in the same fold, where each fold's value is the
mean over its held-out queries with each query counted w_q times.  Leave-query-out
(RankRLS's exact table, greedy RankRLS's selection) holds a query out with all its
weight and weighs its held-out value by it: checked here against retraining without
each query (tests/reference_impl.py, pairs enumerated).
"""
import numpy as np
import pytest
import reference_impl as _reference

from rankfast import (
    GreedyRankRLS,
    KernelApproxLearner,
    KernelParams,
    RankNCG,
    RankRLS,
    RankSVM,
    RankSVML1,
    dump_svmlight,
    read_model,
)
from rankfast.cli.learn import learn_main
from rankfast.data.validation import query_sample_weights
from rankfast.model_selection import CVResult, GridSearch, Metric, ValidationSet

WEIGHT_OF = {10: 1, 11: 2, 12: 1, 13: 0, 14: 3, 15: 1}     # 13 left out, 14 three times
CS = [0.03, 0.3, 3.0]
M = "ndcg@5"            # the queries have 7 documents: LETOR's NDCG@10 is 0 for each


def data(seed=0, d=4):
    rng = np.random.default_rng(seed)
    qid = np.repeat(sorted(WEIGHT_OF), 7)
    X = rng.normal(size=(len(qid), d))
    y = np.floor(np.clip(X @ rng.normal(size=d) + rng.normal(size=len(qid)), -1, 2.9) + 1)
    return X, y, qid


def repeated(X, y, qid):
    """The data with each query as many times as its weight, copy k of query q as qid 100k + q."""
    parts = [np.flatnonzero(qid == q) for q, w in WEIGHT_OF.items() for _ in range(w)]
    copy = [k for q, w in WEIGHT_OF.items() for k in range(w)]
    rows = np.concatenate(parts)
    ids = np.concatenate([np.full(len(p), 100 * k + qid[p[0]]) for p, k in zip(parts, copy)])
    return X[rows], y[rows], ids


class SameFold:
    """Three folds of the original queries; every copy (qid 100k + q) in the fold of q."""

    def split(self, X, y, groups):
        fold = (np.asarray(groups) % 100) % 3
        for f in range(3):
            yield np.flatnonzero(fold != f), np.flatnonzero(fold == f)


def row_weights(qid):
    return np.array([WEIGHT_OF[q] for q in qid], dtype=np.float64)


# ------------------------------------------------------------------------ the weighted metrics

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


# ------------------------------------------------------------- K folds: a weight of 2 is twice

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


# ------------------------------------------------ leave-query-out: held out with all its weight

@pytest.mark.parametrize("loss", [1, 2])
def test_rankrls_exact_lqo_with_weights_equals_retraining_without_each_query(loss):
    X, y, qid = data()
    lines = []
    ranker = RankRLS(C=CS, loss=loss, cv_metric=M).fit(X, y, qid, sample_weight=row_weights(qid),
                                                       log=lambda text, level: lines.append(text))
    multipliers = query_sample_weights(row_weights(qid), qid)
    result = ranker.cv_result_
    progress = [line for line in lines if line.startswith("CV ")]
    assert [line.split(": ")[-1][:len("NDCG@5 (LETOR) 0.0000")] for line in progress] == \
        [f"NDCG@5 (LETOR) {value:.4f}" for value in result.mean[:, 0]]
    np.testing.assert_array_equal(result.weights, multipliers)
    ndcg = Metric.parse(M)
    for i, C in enumerate(CS):
        scores, losses = _reference.rankrls_lqo_retrain(X, y, qid, C, loss, multipliers)
        per_query = ndcg.evaluate(scores, y, qid, per_query=True, max_grade=3)
        kept = multipliers > 0
        np.testing.assert_allclose(result.values[i, kept, 0], per_query[kept], rtol=1e-9)
        np.testing.assert_allclose(result.values[i, kept, -1], losses[kept], rtol=1e-8)
        assert result.mean[i, 0] == pytest.approx(np.average(per_query, weights=multipliers),
                                                  rel=1e-9)
        assert result.mean[i, -1] == pytest.approx(np.average(losses, weights=multipliers),
                                                   rel=1e-8)
    fits = _reference.rankrls_pairs(X, y, qid, ranker.C_, loss, query_weight=multipliers)
    np.testing.assert_allclose(ranker.coef_, fits, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("loss", [1, 2])
def test_greedy_with_weights_equals_its_weighted_naive_twin(loss):
    X, y, qid = data(seed=2, d=6)
    multipliers = query_sample_weights(row_weights(qid), qid)
    ranker = GreedyRankRLS(C=2.0, k=4, loss=loss).fit(X, y, qid, sample_weight=row_weights(qid))
    selected, errors = _reference.greedy_rankrls_naive(X, y, qid, 2.0, loss, k=4,
                                                       query_weight=multipliers)
    np.testing.assert_array_equal(ranker.selected_, np.array(selected) + 1)
    np.testing.assert_allclose(ranker.lqo_errors_, errors, rtol=1e-8)
    plain = GreedyRankRLS(C=2.0, k=4, loss=loss).fit(X, y, qid)
    assert not np.allclose(plain.lqo_errors_, ranker.lqo_errors_, rtol=1e-6)


def test_greedys_model_is_rankrls_of_the_data_with_the_query_twice_on_its_selection():
    X, y, qid = data(seed=2, d=6)
    ranker = GreedyRankRLS(C=2.0, k=3).fit(X, y, qid, sample_weight=row_weights(qid))
    X2, y2, qid2 = repeated(X, y, qid)
    columns = ranker.selected_ - 1
    twice = RankRLS(C=2.0).fit(X2[:, columns], y2, qid2)
    np.testing.assert_allclose(ranker.coef_[columns], twice.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ranker.predict(X), twice.predict(X[:, columns]), rtol=1e-9,
                               atol=1e-12)


# ---------------------------------------------------------------------------------- rank_learn

def _files(tmp_path):
    X, y, qid = data()
    dump_svmlight(X, y, qid, path=str(tmp_path / "train.txt"))
    Xv, yv, qv = data(seed=1)
    dump_svmlight(Xv, yv, qv, path=str(tmp_path / "vali.txt"))
    (tmp_path / "train.weight").write_text("".join(f"{WEIGHT_OF[q]}\n" for q in WEIGHT_OF))
    return X, y, qid, (Xv, yv, qv)


@pytest.mark.parametrize("flags, make", [
    (["-c", "0.03,0.3,3", "--folds", "3", "-e", "1e-10"],
     lambda valid: RankSVM(C=CS, cv=3, tol=1e-10, cv_metric=M)),
    (["-a", "rankrls", "-c", "0.03,0.3,3"], lambda valid: RankRLS(C=CS, cv_metric=M)),
    (["-a", "rankrls", "-c", "0.03,0.3,3", "--valid", "VALID"],
     lambda valid: RankRLS(C=CS, cv=ValidationSet(*valid, name="VALID"), cv_metric=M)),
    (["-a", "greedy", "-c", "2", "-k", "2"], lambda valid: GreedyRankRLS(C=2.0, k=2)),
])
def test_rank_learn_weights_with_c_lists_folds_valid_and_greedy(tmp_path, capsys, flags, make):
    X, y, qid, valid = _files(tmp_path)
    flags = [str(tmp_path / "vali.txt") if f == "VALID" else f for f in flags]
    assert learn_main(["-v", "1", "--cv-metric", M, *flags,
                       "--weights", str(tmp_path / "train.weight"),
                       str(tmp_path / "train.txt"), str(tmp_path / "model")]) == 0
    out = capsys.readouterr().out
    expected = make(valid).fit(X, y, qid, sample_weight=list(WEIGHT_OF.values()))
    np.testing.assert_allclose(read_model(str(tmp_path / "model")).weights,
                               expected.weights_, rtol=1e-6, atol=1e-9)
    if getattr(expected, "cv_result_", None) is not None:
        table = expected.cv_result_.format().replace("VALID", str(tmp_path / "vali.txt"))
        assert table in out
        assert "Cross-validation" in table or "Validation" in table


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
