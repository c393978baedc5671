"""GridSearch: cross-validation over any of a learner's parameters, refitted on all the data."""
from __future__ import annotations

import numpy as np

from ..data.validation import TrainingData, predicted
from ._scoring import DEFAULT_METRIC
from ._split import DEFAULT_FOLDS
from ._validation import _log_progress, cross_validate, grid_rows, parameter_path, settings, with_params

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import Log, MatrixLike, VectorLike


# ------------------------------------------------------- a grid over any learner


def takes_training_data(estimator: Any) -> bool:
    """Whether ``estimator.fit_data`` takes a rankfast.data.validation.TrainingData as it is
    (rankfast's learners, and a GridSearch over one): rank_learn then hands it the reader's
    documents without a second pass; any other estimator gets fit's arrays."""
    if isinstance(estimator, GridSearch):
        return takes_training_data(estimator.estimator)
    return callable(getattr(estimator, "fit_data", None))

class GridSearch:
    """Cross-validate any learner over a grid (e.g. a kernel's gamma crossed with C), refit the chosen.

    Each fold trains a fresh copy of ``estimator`` per row (kernel maps are
    fitted on the training folds only).  The learners' own C lists are
    cheaper where they apply (warm starts, RankRLS's exact leave-query-out).

    Parameters
    ----------
    estimator : object with fit(X, y, qid) and predict(X)
    grid : dict
        Parameter name → list of values, nested names as scikit-learn's set_params
        spells them, e.g. {"kernel__gamma": [0.1, 1], "base_learner__C": [0.01, 0.1]};
        one name must end in "C".
    cv, cv_metric, cv_rule, cv_convention, random_state
        As the learners' (see cross_validate).

    Attributes
    ----------
    cv_result_ : CVResult
    best_estimator_ : the estimator refitted on all documents with the chosen row
    C_, feature_ids_, weights_ : the chosen C and, for a linear learner, its model
    """

    def __init__(self, estimator: Any, grid: Any, cv: Any = None, cv_metric: Any = DEFAULT_METRIC,
                 cv_rule: str = "best", cv_convention: str = "letor", random_state: int = 0) -> None:
        self.estimator, self.grid, self.cv = estimator, grid, cv
        self.cv_metric, self.cv_rule, self.cv_convention = cv_metric, cv_rule, cv_convention
        self.random_state = random_state

    @property
    def name(self) -> Any:
        return self.estimator.name

    def fit(self, X: MatrixLike | TrainingData, y: VectorLike | None, qid: VectorLike | None,
            log: Log = None,
            sample_weight: VectorLike | None = None) -> GridSearch:
        """Cross-validate every row, then fit the chosen one on all documents.

        ``sample_weight``: query weights, as cross_validate's (and the refit's).
        """
        self.cv_result_ = cross_validate(self.estimator, X, y, qid, self.grid,
                                         DEFAULT_FOLDS if self.cv is None else self.cv,
                                         **settings(self), progress=_log_progress(log),
                                         sample_weight=sample_weight)
        chosen = with_params(self.estimator, grid_rows(self.grid)[self.cv_result_.chosen])
        weights = {} if sample_weight is None else {"sample_weight": sample_weight}
        if isinstance(X, TrainingData):             # fit_data's documents, taken as they are
            self.best_estimator_ = chosen.fit_data(X, log=log, **weights)
        else:
            self.best_estimator_ = chosen.fit(X, y, qid, log=log, **weights)
        return self

    def fit_data(self, data: TrainingData, sample_weight: VectorLike | None = None,
                 log: Log = None) -> GridSearch:
        """fit on documents checked already (a rankfast.data.validation.TrainingData, as the
        learners' fit_data): the folds and the refit (the estimator's fit_data) take it as it is.

        Raises
        ------
        TypeError
            For an estimator without fit_data (takes_training_data): give it fit's arrays.
        """
        if not takes_training_data(self.estimator):
            raise TypeError(f"{type(self.estimator).__name__} has no fit_data: call fit")
        self.fit(data, None, None, log=log, sample_weight=sample_weight)
        return self

    @property
    def sparse_float32(self) -> bool:
        """The estimator's: whether it takes sparse float32 documents as they are."""
        return getattr(self.estimator, "sparse_float32", False)

    def predict(self, X: MatrixLike, qid: VectorLike | None = None) -> np.ndarray:
        """The chosen model's scores (``qid``: for a model that normalises each query's rows)."""
        return predicted(self.best_estimator_, X, qid)

    def _applied_normalizer(self):
        """The chosen model's, so that rankfast.data.validation.predicted passes it the queries."""
        applied = getattr(self.best_estimator_, "_applied_normalizer", None)
        return applied() if applied is not None else None

    @property
    def C_(self) -> Any:
        """The chosen C."""
        return self.cv_result_.chosen_params["C"]

    @property
    def feature_ids_(self) -> np.ndarray:
        """The chosen linear model's feature ids (a kernel learner's base learner reads them)."""
        return self.best_estimator_.feature_ids_

    @property
    def weights_(self) -> np.ndarray:
        return self.best_estimator_.weights_

    def to_model(self, n_features: int | None = None, n_documents: int | None = None) -> Any:
        """The chosen model's file, its metadata naming the grid."""
        model = self.best_estimator_.to_model(n_features=n_features, n_documents=n_documents)
        for name, values in self.grid.items():
            model.metadata[parameter_path(name)[-1] + "_grid"] = ",".join(repr(float(v)) for v in values)
        return model
