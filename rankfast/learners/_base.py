"""What every estimator shares: input checks at the Python boundary, ``score``, and one fit.

``Ranker`` checks the input and scores; ``LinearRanker`` holds the one fit
skeleton of the linear learners (the C grid, the data, the selection of C, the
queries grouped once, a ``_solve`` hook, the weights kept, the eval sets), so a
learner is its objective and its solver call.

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
from typing import NamedTuple

import numpy as np

from .._estimator import BaseEstimator, check_is_fitted
from .._kernels.threads import blas_single_thread, resolve_n_jobs, stored_entries
from ..data.sparse import CSR
from ..data.validation import (
    OneRankingWarning,
    TrainingData,
    check_features,
    check_labels,
    outside_stacklevel,
    pair_weights,
    query_ids,
    scored_queries,
    warn_without_pairs,
    weighted,
)
from ..metrics import ndcg, scored_with_check
from ..model_selection import check_settings
from ._linear import (
    c_grid,
    check_loss,
    linear_scores,
    query_weights,
    warn_if_stopped_early,
    without_query_constant,
)

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any

    from .._typing import Log, Matrix, MatrixLike, Vector, VectorLike
    from ..data.normalize import Normalizer
    from ..data.validation import PairWeights
    from ..model_selection import CVResult


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

    ``fit`` checks X, y and the queries once into a rankfast.data.validation.TrainingData
    (``_training_data``) and hands it to the private entry ``_fit_checked``, which
    cross-validation's folds and rank_learn's file reach directly; ``predict`` checks X
    with ``_predict_input`` and scores it with ``_score_checked``.  Constructors only store their
    arguments (scikit-learn's convention, so that ``clone`` and
    ``set_params`` work); parameters are checked by ``fit``.
    """

    #: Whether sparse float32 input is used as is (no float64 copy): learners whose
    #: numerics only multiply by X through rankfast.losses.products.DataMatrix.
    sparse_float32 = False

    def _training_data(self, X, y, qid, group) -> TrainingData:
        """fit's X, y and queries checked and converted once into a TrainingData, and taken in
        (_accepted).  The only check of a fit's input: what follows takes it as it is."""
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
        return self._accepted(TrainingData(X, y, query_ids(X.shape[0], qid, group), names))

    def fit_data(self, data: TrainingData, sample_weight: VectorLike | None = None,
                 log: Log = None) -> Any:
        """fit on documents checked already: a rankfast.data.validation.TrainingData (the file
        reader's ``Dataset.training_data()``, which rank_learn passes), taken as it is, without
        a second pass over its values.  The parameters are checked first, as fit checks them;
        ``sample_weight`` and ``log`` as fit's."""
        self._check_fit_parameters()
        return self._fit_checked(self._accepted(data), sample_weight, (), log)

    def _check_fit_parameters(self) -> None:
        """The parameters (check_parameters) and the cross-validation settings: once per fit,
        before the data is read (fit_data, and each learner's fit)."""
        self.check_parameters()
        check_settings(self)

    def check_parameters(self) -> None:
        """UsageError or ValueError for a parameter out of range (each learner's own)."""

    def _fit_checked(self, data: TrainingData, sample_weight: VectorLike | None = None,
                     evals: Any = (), log: Log = None) -> Any:
        """fit on checked data and parameters (each learner's own)."""
        raise NotImplementedError

    def _accepted(self, data: TrainingData) -> TrainingData:
        """Checked training data taken in, as fit takes it: its width, names and queries
        recorded (_record_input), and NoPairsWarning when no query holds a pair.  rank_learn
        hands the file reader's result here (rankfast.io.svmlight.Dataset.training_data)."""
        self._record_input(data)
        warn_without_pairs(data.y, data.queries, f"{type(self).__name__}.fit")
        return data

    def _record_input(self, data: TrainingData) -> None:
        """n_features_in_, feature_names_in_ (deleted for None), whether the data holds several
        queries and how many documents (the model file's "number of training documents")."""
        self._several_queries = data.queries.n_queries > 1
        self._fit_documents = len(data.qid)
        self.n_features_in_ = data.X.shape[1]
        if data.feature_names is not None:
            self.feature_names_in_ = data.feature_names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def _evaluation_sets(self, eval_set, eval_qid=None, eval_group=None):
        """fit's eval_set as checked rankfast.model_selection.ValidationSets named validation_i.

        Each X is checked as predict checks it (_fitted_input: the width and the
        feature names of the training data fit has just recorded).
        """
        if eval_set is None:
            if eval_qid is not None or eval_group is not None:
                raise ValueError("eval_qid and eval_group describe eval_set, which is not given")
            return []
        from ..model_selection import ValidationSet
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
            X = self._fitted_input(pair[0], f"eval_set[{i}]'s X")
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
        from ..model_selection import Metric, table_metrics
        columns = table_metrics(Metric.parse(getattr(self, "cv_metric", "ndcg@10"),
                                             getattr(self, "cv_convention", "letor")))
        results = {}
        for valid in sets:
            scores = self._score_checked(valid.X, valid.qid)
            results[valid.name] = {column.key: [float(column.evaluate(scores, valid.y, valid.qid))]
                                   for column in columns}
        self.evals_result_ = results

    def decision_function(self, X: MatrixLike, qid: VectorLike | None = None) -> np.ndarray:
        """The documents' scores in float64: Xw, or wᵀφ(x) with a kernel map (rank_classify
        rounds the model file's weights as svm_rank does; this does not).

        Parameters
        ----------
        X : array-like or sparse matrix, shape (n_documents, n_features_in_)
            Dense input must have the training width; sparse input may be
            narrower or wider (columns beyond the training width weigh nothing).
        qid : array-like, shape (n_documents,), optional
            The rows' queries: needed (only) by a model trained with
            ``normalize="query"``, which normalises each query's rows.

        Returns
        -------
        ndarray of float64, shape (n_documents,)
        """
        return self._score_checked(self._predict_input(X), qid)

    def predict(self, X: MatrixLike, qid: VectorLike | None = None) -> np.ndarray:
        """The documents' scores (higher ranks first): the same as decision_function.

        The model file stores the weights as float32, so ``to_model().predict``
        (rank_classify's scores) can differ from these in the 8th digit.

        Parameters
        ----------
        X : array-like or sparse matrix, shape (n_documents, n_features_in_)

        qid : array-like, shape (n_documents,), optional
            See decision_function (``normalize="query"`` needs it).

        Returns
        -------
        ndarray of float64, shape (n_documents,)
        """
        return self.decision_function(X, qid)

    def _score_checked(self, X: Matrix, qid: VectorLike | None = None) -> np.ndarray:
        """decision_function of X checked already (check_features' form), taken as it is:
        each estimator's own."""
        raise NotImplementedError

    def _predict_input(self, X):
        """X checked against what fit saw (_fitted_input), for a fitted estimator."""
        check_is_fitted(self)
        return self._fitted_input(X, "X")

    def _fitted_input(self, X, what):
        """X checked (check_features) against the training data recorded: predict's check, and
        eval_set's (``what`` names X in the errors).

        Dense input must have n_features_in_ columns.  Sparse input may be
        narrower or wider (features above the training width are ignored, as
        svm_rank ignores features above a model's highest index; features
        absent are 0): SVMlight test files often end below the training file's
        highest index.  Feature names must match fit's (a warning when only one
        of them has names).
        """
        X, names = check_features(X, what, sparse_float32=self.sparse_float32)
        fitted_names = getattr(self, "feature_names_in_", None)
        if fitted_names is not None and names is not None:
            if not np.array_equal(names, fitted_names):
                raise ValueError("The feature names should match those that were passed "
                                 "during fit (same names in the same order)")
        elif fitted_names is not None:
            warnings.warn(f"{what} does not have valid feature names, but {type(self).__name__} "
                          f"was fitted with feature names", UserWarning,
                          stacklevel=outside_stacklevel())
        elif names is not None:
            warnings.warn(f"{what} has feature names, but {type(self).__name__} was fitted "
                          f"without feature names", UserWarning, stacklevel=outside_stacklevel())
        if not isinstance(X, CSR) and X.shape[1] != self.n_features_in_:
            raise ValueError(f"{what} has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        return X

    def score(self, X: MatrixLike, y: VectorLike, qid: VectorLike | None = None,
              group: VectorLike | None = None) -> float:
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


def sparse_input_tags(tags: Any) -> Any:
    """scikit-learn's tags of an estimator that takes sparse X (only scikit-learn asks for tags)."""
    tags.input_tags.sparse = True
    return tags


def fit_doc(summary: str, sample_weight: str) -> str:
    """The one docstring of the learners' ``fit``: its summary line and what sample_weight does."""
    return f"""{summary}

        Parameters
        ----------
        X : array-like or sparse matrix, shape (n_documents, n_features)
            Dense (ndarray, DataFrame, list of lists) or any scipy sparse format.
        y : array-like, shape (n_documents,)
            Relevance labels (any real numbers; higher is better).
        qid : array-like, shape (n_documents,), optional
            Query id of each document (rows of a query need not be contiguous).
        group : array-like of int, optional
            Sizes of consecutive groups of rows (LightGBM's ``group``), instead
            of ``qid``.  With neither, all documents form one ranking.
        sample_weight : array-like, optional
            {sample_weight}
        eval_set : list of (X, y), optional
            Sets scored by the fitted model, as XGBRanker's: ``evals_result_``
            records each one's metrics (the table's: ``cv_metric`` first).
        eval_qid, eval_group : list of array-like, optional
            The queries of each eval_set pair (qid, or group sizes).
        log : callable, optional
            ``log(text, level)`` receives progress lines (what rank_learn shows verbosely).

        Returns
        -------
        self
        """


QUERY_WEIGHTS = """Query weights: one per row, the same within a query, or one per
            query in order of first appearance; a weight of 2 counts the
            query twice (rankfast.data.validation.query_sample_weights); with a
            list of C, the cross-validation weighs its fits and scores alike.
            Learners that weigh documents (prsvm, svmrank) also take per-row
            weights that differ within a query: a row's weight weighs the
            pairs it is preferred in, as a click's inverse propensity does
            (rankfast.data.validation.pair_weights; rankfast.clicks)."""


class Problem(NamedTuple):
    """The training data as a linear learner's solver sees it: queries contiguous, grouped once.

    ``X, y, starts, used`` as TrainingData.grouped returns them (``used``: the
    columns kept, 0-based), ``weight`` the per-query sample weights (or None),
    ``n_threads`` the threads the solver may use and ``doc_weight`` the weight of
    each grouped row as the preferred document of a pair (pair_weights; None: 1).
    ``n_queries`` is Q, the number of queries of the whole training set, when these
    rows are only some of its queries (one Dask shard's: rankfast.dask); None: the
    queries of ``starts``.
    """

    X: Matrix
    y: np.ndarray
    starts: np.ndarray
    used: np.ndarray
    weight: np.ndarray | None
    n_threads: int
    doc_weight: np.ndarray | None = None
    n_queries: int | None = None

    def query_weights(self, C: float, loss: int) -> np.ndarray:
        """c_q of each query: C / Q or C / (Q |P_q|) (query_weights), times its sample weight."""
        return weighted(query_weights(self.y, self.starts, C, loss, self.n_queries,
                                      doc_weight=self.doc_weight), self.weight)


class LinearRanker(Ranker):
    """Base of the linear learners: after ``fit``, ``feature_ids_`` (1-based) and ``weights_``.

    ``normalize`` (rank_learn's --normalize, rankfast.data.normalize): the features
    are normalised before training (and before the cross-validation of a C
    list); ``normalizer_`` keeps what predict applies (query, log) and zscore's
    scales are folded into ``weights_``, which always weigh the raw features'
    normalised values as predict computes them.
    """

    normalize = "none"
    document_weights = False  # whether sample_weight may differ within a query (pair_weights)
    C: Any                    # set by each learner's constructor: one C or a list
    loss: int
    cv_result_: CVResult | None

    #: The class of the objective ``_objective`` builds, for a learner that is an objective
    #: and a solver (``_objective``, ``_minimize``): its ``protocol`` says which of
    #: rankfast.dask's drivers sums it over a cluster's shards.  None: no distributed fit.
    objective_type: Any = None

    def _normalize_fit(self, X, qid):
        """(X normalised as ``normalize`` says, its Normalizer); normalizer_ is None meanwhile.

        While it is None, the shallow copies that cross-validation makes of this
        estimator score the (already normalised) folds as they are.
        """
        from ..data.normalize import Normalizer
        self.normalizer_ = None
        normalizer = Normalizer(self.normalize).fit(X, qid)
        return normalizer.transform(X, qid), normalizer

    # ---- the one fit: a learner supplies _objective and _minimize, or its own _solve

    def fit(self, X: MatrixLike, y: VectorLike, qid: VectorLike | None = None,
            group: VectorLike | None = None, sample_weight: VectorLike | None = None,
            eval_set: Sequence[tuple[MatrixLike, VectorLike]] | None = None,
            eval_qid: Sequence[VectorLike] | None = None,
            eval_group: Sequence[VectorLike] | None = None, log: Log = None) -> LinearRanker:
        self._check_fit_parameters()
        data = self._training_data(X, y, qid, group)
        evals = self._evaluation_sets(eval_set, eval_qid, eval_group)
        return self._fit_checked(data, sample_weight, evals, log)

    @blas_single_thread
    def _fit_checked(self, data: TrainingData, sample_weight: VectorLike | None = None, evals: Any = (),
                     log: Log = None) -> LinearRanker:
        """fit on a TrainingData and parameters checked already, taken as they are (fit's and
        fit_data's second half; cross-validation's folds, whose rows cross_validate checked):
        ``evals`` are checked ValidationSets."""
        self._record_input(data)
        grid = c_grid(self.C)
        features, normalizer = self._normalize_fit(data.X, data.qid)
        data = data.with_features(features)
        problem = self._problem(data, self._pair_weights(sample_weight, data))
        self.C_, self.cv_result_ = self.C, None
        if grid is not None:
            self._select_c(data, problem, grid, log,
                           problem.weight if problem.doc_weight is None else sample_weight)
        w, result = self._solve(problem, self.C_, log=log)
        if result is not None:
            self.result_ = result
            warn_if_stopped_early(self, result)
        self._keep_solution(normalizer, problem, w)
        self._record_evals(evals)
        return self

    fit.__doc__ = fit_doc(
        "Train on documents X (n × d, dense or sparse), labels y and their queries.\n\n"
        "        With a list of C, each value is scored by cross-validation\n"
        "        (rankfast.model_selection.select_c), the result kept in ``cv_result_``\n"
        "        and ``cv_table_``, and the chosen C (``C_``) trained on all the data.",
        QUERY_WEIGHTS)

    def check_parameters(self) -> None:
        """UsageError for a parameter out of range (fit calls it first): the loss, and C."""
        check_loss(self.loss)
        c_grid(self.C)

    def _select_c(self, data: TrainingData, problem: Problem, grid: list[float], log: Log,
                  sample_weight: VectorLike | None = None) -> None:
        """C_, cv_result_ and cv_table_ for a list of C: cross-validation on ``data``
        (rankfast.model_selection.select_c; the folds of ``cv``), with ``sample_weight``."""
        from ..model_selection import select_c
        result = select_c(self, data, None, None, grid, log, sample_weight=sample_weight)
        self.cv_result_, self.cv_table_ = result, result.rows()
        self.C_ = result.chosen_params["C"]

    def _pair_weights(self, sample_weight: VectorLike | None,
                      data: TrainingData) -> PairWeights:
        """sample_weight as PairWeights (ValueError): weights on documents only for a learner
        that takes them (``document_weights``)."""
        weights = pair_weights(sample_weight, data.queries, data.y)
        if weights.document is not None:
            self._check_document_weights()
        return weights

    def _check_document_weights(self) -> None:
        """ValueError unless this learner weighs documents (``document_weights``)."""
        if not self.document_weights:
            from .registry import enumeration, learners
            raise ValueError(
                f"sample_weight must be the same for every row of a query for "
                f"{getattr(self, 'name', type(self).__name__)}: "
                "weights are per query (a weight of 2 counts the query twice), as XGBRanker's "
                "ranking weights; weights on the preferred documents of a query (clicks) are "
                f"for {enumeration([e.name for e in learners() if e.document_weights])}")

    def _problem(self, data: TrainingData, weights: PairWeights) -> Problem:
        """The grouped data, its PairWeights and the threads the solver may use (``n_jobs``)."""
        X, y, starts, used = data.grouped()
        doc_weight, perm = weights.document, data.queries.permutation
        if doc_weight is not None and perm is not None:
            doc_weight = doc_weight[perm]
        return Problem(X, y, starts, used, weights.query,
                       resolve_n_jobs(getattr(self, "n_jobs", 1), stored_entries(X)), doc_weight)

    def _solve(self, problem: Problem, C: float, w0: Vector | None = None,
               log: Log = None) -> tuple[Vector, Any]:
        """(w over problem.used's columns, the solver's result or None) for one C, from w0
        (None: zero): the learner's solver (``_minimize``) on its objective (``_objective``).
        A learner that trains otherwise (a closed form, greedy selection) has its own."""
        w0 = np.zeros(problem.X.shape[1]) if w0 is None else w0
        return self._minimize(self._objective(problem, C), w0, log)

    def _objective(self, problem: Problem, C: float) -> Any:
        """The learner's objective of one C on grouped rows: all the training data, or one
        Dask shard's queries (``problem.n_queries`` then counts every shard's)."""
        raise NotImplementedError

    def _minimize(self, objective: Any, w0: Any, log: Log = None) -> tuple[Any, Any]:
        """(w, the solver's result or None): the learner's solver run from w0 on ``objective``,
        the one ``_objective`` built or rankfast.dask's sum of the shards' (same protocol)."""
        raise NotImplementedError

    def _keep_solution(self, normalizer: Normalizer, problem: Problem, w: Vector) -> None:
        """Record w as the model: zero on query-constant columns (without_query_constant)."""
        self._keep_weights(normalizer, problem.used,
                           without_query_constant(w, problem.X, problem.starts, problem.n_threads))

    def _keep_weights(self, normalizer, used, w):
        """Record the fitted weights (zscore's folded back onto the raw features)."""
        self.normalizer_ = normalizer
        self.feature_ids_ = np.asarray(used, dtype=np.int64) + 1
        self.weights_ = normalizer.original_weights(w, used)

    def _applied_normalizer(self):
        normalizer = getattr(self, "normalizer_", None)
        return normalizer if normalizer is not None and normalizer.kind in ("query", "log") \
            else None

    @property
    def coef_(self) -> np.ndarray:
        """The weight of every feature, dense, shape (n_features_in_,): coef_[j] weighs column j."""
        check_is_fitted(self, "weights_")
        w = np.zeros(self.n_features_in_)
        w[self.feature_ids_ - 1] = self.weights_
        return w

    @property
    def feature_importances_(self) -> np.ndarray:
        """|coef_| / Σ|coef_|, shape (n_features_in_,): each column's share of the weights' size.

        As LGBMRanker's and XGBRanker's attribute (and what scikit-learn's
        SelectFromModel reads), for a linear model: the magnitude of each
        feature's weight, normalised to sum 1 (all zeros for a model of zero
        weights).  Magnitudes compare across features of one scale only:
        standardise the features first to compare them.
        """
        w = np.abs(self.coef_)
        total = w.sum()
        return w / total if total > 0 else w

    def _score_checked(self, X: Matrix, qid: VectorLike | None = None) -> np.ndarray:
        """decision_function of X checked already (check_features' form), taken as it is."""
        normalizer = self._applied_normalizer()
        if normalizer is not None:
            X = normalizer.transform(X, qid)
        return linear_scores(X, self.feature_ids_, self.weights_)


class PathRanker(LinearRanker):
    """A linear learner with a C path (cross-validation's): ``fit_path`` gives a fitted copy for
    each C of a list from one pass, ``_path``; by default each solve starts from the last optimum."""

    def fit_path(self, X: MatrixLike, y: VectorLike, qid: VectorLike | None, Cs: Sequence[float],
                 sample_weight: VectorLike | None = None) -> Iterator[Any]:
        """Fitted copies for each C of Cs (ascending), each run started at the previous optimum.

        The C path of cross-validation (rankfast.model_selection): X, y and qid
        as fit takes them (or a TrainingData as X), ``sample_weight`` as fit's.
        """
        self.check_parameters()
        return self._fit_path_checked(self._training_data(X, y, qid, None), Cs, sample_weight)

    def _fit_path_checked(self, data: TrainingData, Cs: Sequence[float],
                          sample_weight: VectorLike | None = None) -> Iterator[Any]:
        """fit_path on a TrainingData checked already, taken as it is (cross-validation's folds)."""
        from ..model_selection import fitted_linear
        self._record_input(data)                        # n_features_in_ of the copies
        problem = self._problem(data, self._pair_weights(sample_weight, data))
        for C, w in zip(Cs, self._path(problem, Cs)):
            yield fitted_linear(self, C, problem.used,
                                without_query_constant(w, problem.X, problem.starts,
                                                       problem.n_threads))

    def _path(self, problem: Problem, Cs: Sequence[float]) -> Iterator[Vector]:
        """The weights for each C of Cs, each solve started at the previous optimum."""
        w = None
        for C in Cs:
            w, _ = self._solve(problem, C, w0=w)
            yield w
