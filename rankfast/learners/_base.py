"""What every estimator shares: parameters, input checks at the Python boundary, ``score``.

The learners' ``fit(X, y, qid=None, group=None)`` and ``predict(X)`` check
their input once (with rankfast.data.validation's checks), then hand
C-contiguous float64 arrays (or float64 CSR matrices) to the numerics.
Queries are given per row (``qid``, any integer ids, rows of a query need not
be contiguous) or as LightGBM-style ``group`` sizes (consecutive rows); with
neither, all rows are one ranking (svm_rank's reading of a file without qids).
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from .._estimator import BaseEstimator, check_is_fitted
from ..data.sparse import CSR

# The input checks live in rankfast.data.validation (below both the estimators and the metrics);
# their names stay importable from here, where they were first documented.
from ..data.validation import (
    OneRankingWarning,
    TrainingData,
    check_features,
    check_labels,
    predicted,
    query_ids,
    scored_queries,
    warn_without_pairs,
)
from ..metrics import ndcg, scored_with_check

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import Matrix, Vector


def in_scikit_learn_search() -> bool:
    """Whether a scikit-learn model-selection routine (GridSearchCV, cross_validate, ...) is a caller.

    Looks up the call stack only when scikit-learn's model_selection is imported.
    """
    if "sklearn.model_selection" not in sys.modules:
        return False
    frame: Any = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("sklearn.model_selection"):
            return True
        frame = frame.f_back
    return False


class Ranker(BaseEstimator):
    """Base of rankfast's estimators: input checks, ``n_features_in_``, ``score``.

    Subclasses call ``_training_data`` first thing in ``fit`` (X, y and the
    queries checked once into a rankfast.data.validation.TrainingData, which they take
    as it is) and ``_predict_input`` in ``predict``.  Constructors only store their
    arguments (scikit-learn's convention, so that ``clone`` and
    ``set_params`` work); parameters are checked by ``fit``.
    """

    if TYPE_CHECKING:
        def predict(self, X: Matrix) -> np.ndarray: ...    # each estimator's own

    #: Whether sparse float32 input is used as is (no float64 copy): learners whose
    #: numerics only multiply by X through rankfast.learners._linear.DataMatrix.
    sparse_float32 = False

    def _fit_input(self, X, y, qid, group):
        """(X, y, qid) checked and converted; records n_features_in_ and feature_names_in_."""
        X, names = check_features(X, sparse_float32=self.sparse_float32,
                                  n_threads=getattr(self, "n_jobs", 1))
        y = check_labels(y, X.shape[0], type(self).__name__)
        if qid is None and group is None and in_scikit_learn_search():
            warnings.warn(
                f"{type(self).__name__}.fit got neither qid nor group inside a scikit-learn "
                f"search: its {X.shape[0]} rows are trained as one ranking. If they belong to "
                f"several queries, route qid: sklearn.set_config(enable_metadata_routing=True), "
                f"estimator.set_fit_request(qid=True), search.fit(X, y, groups=qid, qid=qid)",
                OneRankingWarning, stacklevel=3)
        qid = query_ids(X.shape[0], qid, group)
        self._record_input(X.shape[1], qid, names)
        return X, y, qid

    def _training_data(self, X, y, qid, group):
        """fit's X, y and queries as one rankfast.data.validation.TrainingData (_fit_input's checks).

        A TrainingData given as X (y, qid and group None) is taken as it is,
        checked already (cross-validation's folds): only what _fit_input
        records is recorded.
        """
        if isinstance(X, TrainingData):
            if y is not None or qid is not None or group is not None:
                raise ValueError("fit got a TrainingData as X: its labels and queries are in it "
                                 "(y, qid and group must be None)")
            self._record_input(X.X.shape[1], X.qid, None)
            return X
        data = TrainingData(*self._fit_input(X, y, qid, group))
        warn_without_pairs(data.y, data.qid, f"{type(self).__name__}.fit")
        return data

    def _record_input(self, n_features, qid, names):
        """n_features_in_, feature_names_in_ (deleted for None), whether qid holds several queries
        and how many documents it has (the model file's "number of training documents")."""
        self._several_queries = bool(len(qid)) and not bool((qid == qid[0]).all())
        self._fit_documents = len(qid)
        self.n_features_in_ = n_features
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def _evaluation_sets(self, eval_set, eval_qid=None, eval_group=None):
        """fit's eval_set as checked rankfast.model_selection.ValidationSets named validation_i."""
        if eval_set is None:
            if eval_qid is not None or eval_group is not None:
                raise ValueError("eval_qid and eval_group describe eval_set, which is not given")
            return []
        from ..model_selection._split import ValidationSet
        pairs = list(eval_set)
        if eval_qid is None and eval_group is None and getattr(self, "_several_queries", False):
            raise ValueError("eval_set was given without eval_qid or eval_group, but the training "
                             "data holds several queries: its rows would be scored as one "
                             "ranking. Pass eval_qid (one array of query ids per set) or "
                             "eval_group; eval_qid=[np.zeros(n)] scores a set as one ranking")
        for name, given in (("eval_qid", eval_qid), ("eval_group", eval_group)):
            if given is not None and len(given) != len(pairs):
                raise ValueError(f"{name} must hold one entry per eval_set pair ({len(pairs)}), "
                                 f"got {len(given)}")
        sets = []
        for i, pair in enumerate(pairs):
            if len(pair) != 2:
                raise ValueError(f"eval_set[{i}] must be a pair (X, y)")
            X, _ = check_features(pair[0], f"eval_set[{i}]'s X")
            y = check_labels(pair[1], X.shape[0], "the validation set")
            qid = query_ids(X.shape[0], None if eval_qid is None else eval_qid[i],
                            None if eval_group is None else eval_group[i])
            sets.append(ValidationSet.of_checked(X, y, qid, name=f"validation_{i}"))
        return sets

    def _record_evals(self, sets):
        """``evals_result_`` of the fitted model on fit's eval_set (nothing without one).

        XGBRanker's layout, {"validation_0": {"ndcg@10": [value], ...}}, with
        one value per metric (a linear ranker has no boosting rounds): the
        table's metrics of rankfast.model_selection, ``cv_metric`` first.
        The sets' X, checked when they were made, is scored as it is.
        """
        if hasattr(self, "evals_result_"):
            del self.evals_result_
        if not sets:
            return
        from ..model_selection._scoring import Metric, table_metrics
        columns = table_metrics(Metric.parse(getattr(self, "cv_metric", "ndcg@10"),
                                             getattr(self, "cv_convention", "letor")))
        results = {}
        for valid in sets:
            scores = predicted(self, TrainingData(valid.X, valid.y, valid.qid), valid.qid)
            results[valid.name] = {column.key: [float(column.evaluate(scores, valid.y, valid.qid))]
                                   for column in columns}
        self.evals_result_ = results

    def _predict_input(self, X):
        """X checked against what fit saw: dense input must have n_features_in_ columns.

        Sparse input may be narrower or wider (features above the training
        width are ignored, as svm_rank ignores features above a model's
        highest index): SVMlight test files often end below the training
        file's highest index.  A TrainingData's X (cross-validation's
        held-out rows) is taken as it is, checked already.
        """
        check_is_fitted(self)
        if isinstance(X, TrainingData):       # cross-validation's held-out rows: checked already
            X, names = X.X, None
        else:
            X, names = check_features(X, sparse_float32=self.sparse_float32)
        fitted_names = getattr(self, "feature_names_in_", None)
        if fitted_names is not None and names is not None:
            if not np.array_equal(names, fitted_names):
                raise ValueError("The feature names should match those that were passed "
                                 "during fit (same names in the same order)")
        elif fitted_names is not None:
            warnings.warn(f"X does not have valid feature names, but {type(self).__name__} "
                          f"was fitted with feature names", UserWarning, stacklevel=3)
        elif names is not None:
            warnings.warn(f"X has feature names, but {type(self).__name__} was fitted "
                          f"without feature names", UserWarning, stacklevel=3)
        if not isinstance(X, CSR) and X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        return X

    def score(self, X: Matrix, y: Vector, qid: Vector = None, group: Vector = None) -> float:
        """Mean NDCG@10 of the predictions, as ``rank_classify --metrics`` reports it.

        Parameters
        ----------
        X : array-like or sparse matrix, shape (n_documents, n_features)
        y : array-like, shape (n_documents,)
            Relevance labels.
        qid, group : array-like, optional
            The queries, as for ``fit``; with neither, one ranking, unless the
            estimator was trained on several queries: then ValueError (see
            rankfast.data.validation.scoring_queries).

        Returns
        -------
        float
            rankfast.metrics.ndcg(predict(X), y, qid, k=10) with its default
            (LETOR 4.0) convention; a ConstantMetricWarning when no ranking of
            these queries could change it (every query shorter than 10
            documents, or of one label: rankfast.metrics.why_alike).
        """
        scores, qid = scored_queries(self, X, qid, group, f"{type(self).__name__}.score")
        y = check_labels(y, len(scores), type(self).__name__)
        return scored_with_check(lambda s: ndcg(s, y, qid, k=10, per_query=True), scores, y, qid,
                                 "ndcg", 10)

    #: What the estimator is, for scikit-learn before 1.6 and for libraries that read it
    #: (XGBRanker has the same); scikit-learn >= 1.6 reads the tag below.
    _estimator_type = "ranker"

    def __sklearn_tags__(self):
        tags = sparse_input_tags(super().__sklearn_tags__())
        tags.estimator_type = "ranker"
        tags.target_tags.required = True
        return tags


def cv_result_of(estimator: Any) -> Any:
    """The CVResult a fitted estimator (or the base learner of a kernel learner) holds, or None."""
    result = getattr(estimator, "cv_result_", None)
    if result is None and hasattr(estimator, "base_learner"):
        result = getattr(estimator.base_learner, "cv_result_", None)
    return result


def sparse_input_tags(tags: Any) -> Any:
    """scikit-learn's tags of an estimator that takes sparse X (only scikit-learn asks for tags)."""
    tags.input_tags.sparse = True
    return tags


def fit_documents(learner: Any, n_documents: int | None) -> int:
    """n_documents, or when None the number of documents ``learner`` was last fitted on (0 if unknown):
    what a model file records as its "number of training documents", as svm_rank's does."""
    return int(getattr(learner, "_fit_documents", 0) if n_documents is None else n_documents)
