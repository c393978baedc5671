"""rankfast's estimators inside scikit-learn: clone, searches, pipelines, routing, its checks.

Skipped as a whole without scikit-learn (``pip install rankfast[sklearn]``).
"""
import pickle
import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, GroupKFold  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from rankfast import (  # noqa: E402  # noqa: E402
    GreedyRankRLS,
    KernelApproxLearner,
    KernelParams,  # noqa: E402
    NystroemMap,
    RandomFourierMap,
    RankNCG,  # noqa: E402
    RankRLS,
    RankSVM,  # noqa: E402
    RankSVML1,  # noqa: E402
    metrics,  # noqa: E402
)
from rankfast import sklearn as wrappers  # noqa: E402
from rankfast._estimator import NotFittedError  # noqa: E402

RBF = KernelParams(kernel=2, gamma=0.5)


def letor_like(n_queries=30, seed=0):
    """Queries of 12-20 documents, graded labels 0-2 from a noisy linear utility."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(12, 21, size=n_queries)
    qid = np.repeat(np.arange(100, 100 + n_queries), sizes)
    X = rng.normal(size=(len(qid), 5))
    utility = X @ np.array([2.0, -1.0, 0.5, 0.0, 0.0]) + rng.normal(size=len(qid))
    y = np.digitize(utility, [0.5, 1.5]).astype(float)
    return X, y, qid


def test_not_fitted_error_is_scikit_learns():
    assert NotFittedError is sklearn.exceptions.NotFittedError
    with pytest.raises(sklearn.exceptions.NotFittedError):
        RankSVM().predict(np.ones((2, 2)))


@pytest.mark.parametrize("estimator", [
    RankSVM(C=0.5), RankSVML1(C=0.5), RankNCG(C=0.5), RankRLS(C=[0.1, 1.0]), GreedyRankRLS(k=2),
    KernelApproxLearner(RankRLS(C=2.0), RBF, landmarks=20), NystroemMap(RBF, landmarks=5),
    RandomFourierMap(RBF, components=7)], ids=lambda e: type(e).__name__)
def test_clone_keeps_parameters(estimator):
    copy = clone(estimator)
    assert copy is not estimator
    assert copy.get_params(deep=False).keys() == estimator.get_params(deep=False).keys()
    for key, value in estimator.get_params().items():
        assert repr(copy.get_params()[key]) == repr(value), key


def _manual_grid(X, y, qid, Cs, folds):
    """Mean test NDCG@10 of each C over the folds, each fold scored by its own queries."""
    means = []
    for C in Cs:
        fold_scores = []
        for train, test in folds:
            ranker = RankSVM(C=C).fit(X[train], y[train], qid[train])
            fold_scores.append(metrics.ndcg(ranker.predict(X[test]), y[test], qid[test], k=10))
        means.append(np.mean(fold_scores))
    return np.array(means)


def test_grid_search_picks_c_by_ndcg_with_each_folds_queries():
    X, y, qid = letor_like()
    Cs = [1e-4, 1e-2, 1.0, 100.0]
    folds = list(GroupKFold(n_splits=5).split(X, y, groups=qid))
    expected = _manual_grid(X, y, qid, Cs, folds)
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(RankSVM().set_fit_request(qid=True), {"C": Cs},
                              cv=GroupKFold(n_splits=5), scoring=metrics.ndcg_scorer(10))
        search.fit(X, y, groups=qid, qid=qid)
        by_own_score = GridSearchCV(RankSVM().set_fit_request(qid=True).set_score_request(qid=True),
                                    {"C": Cs}, cv=GroupKFold(n_splits=5))
        by_own_score.fit(X, y, groups=qid, qid=qid)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], expected, rtol=1e-12)
    np.testing.assert_allclose(by_own_score.cv_results_["mean_test_score"], expected, rtol=1e-12)
    assert search.best_params_ == {"C": Cs[int(np.argmax(expected))]}
    # Had the scorer not seen the fold's qid, each fold would be one ranking of ~100 documents:
    one_ranking = [np.mean([metrics.ndcg(RankSVM(C=C).fit(X[tr], y[tr], qid[tr]).predict(X[te]),
                                         y[te], np.zeros(len(te)), k=10) for tr, te in folds])
                   for C in Cs]
    assert not np.allclose(one_ranking, expected)


def test_map_scorer_through_routing_in_cross_validate():
    from sklearn.model_selection import cross_validate
    X, y, qid = letor_like(n_queries=10)
    with sklearn.config_context(enable_metadata_routing=True):
        result = cross_validate(RankSVM(C=1.0).set_fit_request(qid=True), X, y,
                                cv=GroupKFold(n_splits=2), scoring={"map": metrics.map_scorer()},
                                params={"groups": qid, "qid": qid})
    folds = list(GroupKFold(n_splits=2).split(X, y, groups=qid))
    expected = [metrics.mean_average_precision(
        RankSVM(C=1.0).fit(X[tr], y[tr], qid[tr]).predict(X[te]), y[te], qid[te])
        for tr, te in folds]
    np.testing.assert_allclose(result["test_map"], expected, rtol=1e-12)


def test_pipeline_with_a_scaler():
    X, y, qid = letor_like(n_queries=10)
    X = X * [1.0, 1000.0, 0.001, 1.0, 1.0] + 5.0
    pipe = Pipeline([("scale", StandardScaler()), ("rank", RankSVM(C=1.0))])
    pipe.fit(X, y, rank__qid=qid)
    scaled = StandardScaler().fit_transform(X)
    alone = RankSVM(C=1.0).fit(scaled, y, qid)
    np.testing.assert_allclose(pipe.predict(X), alone.predict(scaled), rtol=1e-10)
    with sklearn.config_context(enable_metadata_routing=True):
        routed = Pipeline([("scale", StandardScaler()),
                           ("rank", RankSVM(C=1.0).set_fit_request(qid=True))])
        routed.fit(X, y, qid=qid)
    # (Pipeline.score routes sample_weight=None, which a ranker's score does not take: a scorer)
    assert metrics.ndcg_scorer(10)(routed, X, y, qid=qid) == alone.score(scaled, y, qid)


def test_kernel_map_in_a_pipeline_is_the_kernel_learner():
    X, y, qid = letor_like(n_queries=6)
    pipe = Pipeline([("map", NystroemMap(RBF, landmarks=30)), ("rank", RankSVM(C=1.0))])
    pipe.fit(X, y, rank__qid=qid)
    learner = KernelApproxLearner(RankSVM(C=1.0), RBF, landmarks=30).fit(X, y, qid)
    np.testing.assert_allclose(pipe.predict(X), learner.predict(X), rtol=1e-10)


def test_feature_names_from_a_dataframe():
    pd = pytest.importorskip("pandas")
    X, y, qid = letor_like(n_queries=5)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    ranker = RankSVM(C=1.0).fit(frame, y, qid)
    assert list(ranker.feature_names_in_) == list(frame.columns)
    np.testing.assert_array_equal(ranker.predict(frame), RankSVM(C=1.0).fit(X, y, qid).predict(X))
    with pytest.raises(ValueError, match="feature names should match"):
        ranker.predict(frame[frame.columns[::-1]])
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        ranker.predict(X)
    assert not hasattr(RankSVM(C=1.0).fit(X, y, qid), "feature_names_in_")


def test_pickle_and_joblib_round_trips(tmp_path):
    joblib = pytest.importorskip("joblib")
    X, y, qid = letor_like(n_queries=5)
    for ranker in (RankSVM(C=1.0).fit(X, y, qid),
                   KernelApproxLearner(RankSVM(C=1.0), RBF, approx="rff", landmarks=30)
                   .fit(X, y, qid)):
        joblib.dump(ranker, tmp_path / "ranker.joblib")
        for again in (joblib.load(tmp_path / "ranker.joblib"), pickle.loads(pickle.dumps(ranker))):
            np.testing.assert_array_equal(again.predict(X), ranker.predict(X))
            assert again.get_params()["C" if hasattr(ranker, "C") else "approx"] == \
                ranker.get_params()["C" if hasattr(ranker, "C") else "approx"]


# ------------------------------------------------------------------ scikit-learn's own checks

# sample_weight is per query (XGBRanker's ranking weights: a weight of 2 is the query twice,
# test_api's test_a_query_weight_of_two_is_the_query_twice).  These three checks pass no qid
# and weight the documents of that one ranking differently, which per-query weights refuse;
# no weighting can be both: a weight of 2 on every row of a single ranking is the same model
# as a query (twice the query over twice the queries) but four times each pair's loss as
# documents.  check_sample_weights_not_overwritten only reads the array back, but it needs
# fit to accept weights that vary within the ranking: fit refuses them rather than read them
# as document weights or ignore them (test_fit_never_writes_into_the_query_weights instead).
PER_QUERY_WEIGHT_CHECKS = wrappers.EXPECTED_FAILED_CHECKS


# scikit-learn's checks pass no qid, so every X is one ranking (greedy RankRLS holds out
# rows then, where it used to refuse, failing 26 checks).  rankfast.sklearn's classes are
# the learners with sklearn.base.BaseEstimator as a further base: the same code, checked here.
@parametrize_with_checks(
    [wrappers.RankSVM(), wrappers.RankSVML1(), wrappers.RankNCG(), wrappers.RankRLS(),
     wrappers.GreedyRankRLS(k=2), wrappers.GreedyRankRLS(),
     wrappers.KernelApproxLearner(landmarks=20),
     wrappers.KernelApproxLearner(approx="rff", landmarks=20),
     wrappers.NystroemMap(landmarks=10), wrappers.RandomFourierMap(components=10)],
    expected_failed_checks=wrappers.expected_failed_checks)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


WEIGHTED_LEARNERS = [wrappers.RankSVM, wrappers.RankSVML1, wrappers.RankNCG, wrappers.RankRLS,
                     wrappers.GreedyRankRLS, wrappers.KernelApproxLearner]


@pytest.mark.parametrize("make", WEIGHTED_LEARNERS)
def test_the_declared_weight_checks_fail_on_per_query_weights_only(make):
    """The declared checks fail because repeating a row is not weighing it: learners of
    query weights refuse the weights that vary within the one ranking, learners of document
    weights (prsvm, svmrank) train a different model; the weights are never overwritten."""
    from sklearn.utils.estimator_checks import (
        check_sample_weight_equivalence_on_dense_data,
        check_sample_weights_not_overwritten,
    )
    check_sample_weights_not_overwritten(make.__name__, make())
    takes_documents = getattr(make(), "document_weights", False) or \
        make is wrappers.KernelApproxLearner              # its base learner is prsvm
    with pytest.raises(AssertionError if takes_documents else ValueError,
                       match=None if takes_documents else "the same for every row of a query"):
        check_sample_weight_equivalence_on_dense_data(make.__name__, make())


@pytest.mark.parametrize("make", WEIGHTED_LEARNERS)
@pytest.mark.parametrize("several_c", [False, True])
def test_fit_never_writes_into_the_query_weights(make, several_c):
    """check_sample_weights_not_overwritten's point, with queries: a read-only weight array
    (any write raises) comes back unchanged, with one C and with a list of C."""
    X, y, qid = letor_like(n_queries=6)
    weight = np.repeat([10.0, 1.0, 1.0, 2.0, 0.0, 1.0], np.unique(qid, return_counts=True)[1])
    original = weight.copy()
    weight.setflags(write=False)
    if several_c and make is wrappers.RankSVML1:
        pytest.skip("RankSVML1 takes one C (rank_learn searches its C list outside)")
    ranker = make()
    C = [0.1, 1.0] if several_c else 1.0
    if make is wrappers.KernelApproxLearner:
        ranker.set_params(base_learner=wrappers.RankSVM(C=C), landmarks=20)
    else:
        ranker.set_params(C=C)
    ranker.fit(X, y, qid, sample_weight=weight)
    np.testing.assert_array_equal(weight, original)


def test_rankfast_sklearn_classes_inherit_scikit_learns_base_estimator():
    """check_estimator warns of every class of the core (its protocol is rankfast._estimator's, so
    that the programs never import scikit-learn), of none of rankfast.sklearn's."""
    core = [RankSVM(), RankSVML1(), RankNCG(), RankRLS(), GreedyRankRLS(), KernelApproxLearner(),
            NystroemMap(), RandomFourierMap()]
    sk = [estimator() for estimator in wrappers.ESTIMATORS]
    assert [type(e).__name__ for e in sk] == [type(e).__name__ for e in core]
    for estimators, warned in ((core, len(core)), (sk, 0)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            parametrize_with_checks(estimators)
        assert sum("does not inherit from `sklearn.base.BaseEstimator`" in str(w.message)
                   for w in caught) == warned
    for estimator, plain in zip(sk, core):
        assert isinstance(estimator, sklearn.base.BaseEstimator) and isinstance(estimator,
                                                                                type(plain))
        assert estimator.get_params() == plain.get_params()


@pytest.mark.parametrize("make", [RankSVM, wrappers.RankSVM, wrappers.GreedyRankRLS,
                                  wrappers.KernelApproxLearner])
def test_rankers_are_tagged_ranker_as_xgboost_does(make):
    estimator = make()
    assert estimator._estimator_type == "ranker"
    assert sklearn.utils.get_tags(estimator).estimator_type == "ranker"
    assert not sklearn.base.is_regressor(estimator) and not sklearn.base.is_classifier(estimator)


def test_a_wrapper_fits_as_its_core_and_round_trips_through_pickle():
    X, y, qid = letor_like(n_queries=5)
    ranker = wrappers.RankSVM(C=1.0).fit(X, y, qid)
    np.testing.assert_array_equal(ranker.predict(X), RankSVM(C=1.0).fit(X, y, qid).predict(X))
    again = pickle.loads(pickle.dumps(ranker))
    assert type(again) is wrappers.RankSVM
    np.testing.assert_array_equal(again.predict(X), ranker.predict(X))
    assert type(clone(ranker)) is wrappers.RankSVM


# ------------------------------------------------- issue 24: no silent single ranking

ROUTED = [RankSVM(C=0.5), RankSVML1(C=0.5), RankNCG(C=0.5), RankRLS(C=0.5), GreedyRankRLS(k=2),
          KernelApproxLearner(RankSVM(C=0.5), RBF, landmarks=20)]


@pytest.mark.parametrize("estimator", ROUTED, ids=lambda e: type(e).__name__)
def test_metadata_routing_lists_qid_and_group_unrequested(estimator):
    """As scikit-learn's own estimators list their fit parameters: None until requested."""
    routing = estimator.get_metadata_routing()
    assert routing.fit.requests["qid"] is None and routing.fit.requests["group"] is None
    assert routing.score.requests == {"qid": None, "group": None}
    assert "log" not in routing.fit.requests                  # a callback, not metadata
    requested = clone(estimator).set_fit_request(qid=True).get_metadata_routing()
    assert requested.fit.requests["qid"] is True and requested.fit.requests["group"] is None
    with pytest.raises(TypeError, match="no metadata parameter 'log'"):
        clone(estimator).set_fit_request(log=True)


def test_routing_on_qid_passed_to_an_estimator_that_did_not_request_it_raises():
    """The issue's case: the scorer requests qid, the estimator's fit does not: scikit-learn's
    UnsetMetadataPassedError, where every fold used to train on one ranking."""
    X, y, qid = letor_like(n_queries=12)
    with sklearn.config_context(enable_metadata_routing=True):
        for scoring in (metrics.ndcg_scorer(10), None):
            search = GridSearchCV(RankSVM(), {"C": [0.01, 1.0]}, cv=GroupKFold(n_splits=3),
                                  scoring=scoring)
            with pytest.raises(sklearn.exceptions.UnsetMetadataPassedError,
                               match=r"RankSVM.set_fit_request"):
                search.fit(X, y, groups=qid, qid=qid)


@pytest.mark.filterwarnings("ignore:One or more of the test scores are non-finite")  # asserted below
def test_routing_off_a_scorer_without_qid_for_a_model_of_several_queries_raises():
    """Without routing the scorer gets no qid: it used to score each test fold as one ranking
    (best_score_ 1.0 here against about 0.9 fold by fold), now it says how to route qid."""
    from rankfast.data.validation import OneRankingWarning
    X, y, qid = letor_like(n_queries=12)
    ranker = RankSVM(C=1.0).fit(X, y, qid)
    for scorer in (metrics.ndcg_scorer(10), metrics.map_scorer(), lambda e, X, y: e.score(X, y)):
        with pytest.raises(ValueError, match=r"trained on several queries.*"
                                             r"enable_metadata_routing=True.*set_fit_request"):
            scorer(ranker, X, y)
    search = GridSearchCV(RankSVM(), {"C": [0.01, 1.0]}, cv=GroupKFold(n_splits=3),
                          scoring=metrics.ndcg_scorer(10), error_score="raise")
    with pytest.raises(ValueError, match="route the queries"):
        search.fit(X, y, groups=qid, qid=qid)
    quiet = GridSearchCV(RankSVM(), {"C": [0.01, 1.0]}, cv=GroupKFold(n_splits=3),
                         scoring=metrics.ndcg_scorer(10), refit=False)
    with pytest.warns(UserWarning, match="route the queries"):
        quiet.fit(X, y, groups=qid, qid=qid)
    assert np.isnan(quiet.cv_results_["mean_test_score"]).all()      # no figure, not a wrong one
    # with qid given, the same scorer and score work as before
    assert metrics.ndcg_scorer(10)(ranker, X, y, qid=qid) == ranker.score(X, y, qid) == \
        metrics.ndcg(ranker.predict(X), y, qid, k=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OneRankingWarning)
        ranker.fit(X, y, qid)                                  # no note with queries


def test_one_ranking_without_qid_stays_allowed_with_a_note_inside_a_search():
    """svm_rank's reading of rows without qid is kept; in a scikit-learn search a fit without
    groups emits a note, since there it is most often a qid that was not routed."""
    from rankfast.data.validation import OneRankingWarning
    X, y, _ = letor_like(n_queries=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ranker = RankSVM(C=1.0).fit(X, y)                       # outside a search: no note
        assert metrics.ndcg_scorer(10)(ranker, X, y) == metrics.ndcg(
            ranker.predict(X), y, np.zeros(len(y)), k=10) == ranker.score(X, y)
    with pytest.warns(OneRankingWarning, match=r"one ranking.*set_fit_request\(qid=True\)"):
        GridSearchCV(RankSVM(), {"C": [0.01, 1.0]}, cv=3,
                     scoring=metrics.ndcg_scorer(10)).fit(X, y)


def test_sample_weight_is_fit_metadata_routed_per_fold():
    """Per-row query weights are sliced into folds by a search, as qid is."""
    X, y, qid = letor_like(n_queries=12)
    weight = np.where(qid % 3 == 0, 2.0, 1.0)
    folds = list(GroupKFold(n_splits=3).split(X, y, groups=qid))
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(RankSVM().set_fit_request(qid=True, sample_weight=True),
                              {"C": [0.1]}, cv=GroupKFold(n_splits=3),
                              scoring=metrics.ndcg_scorer(10), refit=False)
        search.fit(X, y, groups=qid, qid=qid, sample_weight=weight)
    expected = np.mean([metrics.ndcg(RankSVM(C=0.1).fit(X[tr], y[tr], qid[tr],
                                                       sample_weight=weight[tr]).predict(X[te]),
                                     y[te], qid[te], k=10) for tr, te in folds])
    assert search.cv_results_["mean_test_score"][0] == pytest.approx(expected, rel=1e-12)
    original = weight.copy()
    RankSVM().fit(X, y, qid, sample_weight=weight)
    np.testing.assert_array_equal(weight, original)              # not overwritten
