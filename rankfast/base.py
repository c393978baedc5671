"""What every estimator shares: parameters, input checks at the Python boundary, ``score``.

The learners' ``fit(X, y, qid=None, group=None)`` and ``predict(X)`` check
their input here once, then hand C-contiguous float64 arrays (or float64 CSR
matrices) to the numerics.  Queries are given per row (``qid``, any integer
ids, rows of a query need not be contiguous) or as LightGBM-style ``group``
sizes (consecutive rows); with neither, all rows are one ranking (svm_rank's
reading of a file without qids).
"""
import sys
import warnings

import numpy as np

from .compat import BaseEstimator, check_is_fitted
from .csr import all_finite, as_csr, issparse
from .data import group_to_qid, query_index, query_starts


def check_features(X, what="X", sparse_float32=False, n_threads=1):
    """X as float64 CSR arrays (sparse input) or a 2-D float64 ndarray, checked.

    Parameters
    ----------
    X : array-like or scipy sparse matrix, shape (n_documents, n_features)
        Lists of lists, NumPy arrays, pandas DataFrames or any scipy sparse format.
    what : str
        Name used in error messages.
    sparse_float32 : bool
        Keep the float32 values of sparse input as they are (for learners
        whose products widen them: 4 bytes a value instead of 8).
    n_threads : int or None
        Threads for the finiteness check (None or 0: every core).

    Returns
    -------
    X : rankfast.csr.CSR or ndarray of float64
        Sparse input (a CSR, or any scipy sparse format) as CSR, sharing the
        arrays of float64 CSR input.
    names : ndarray of str or None
        The column names of a DataFrame whose columns are all strings.

    Raises
    ------
    ValueError
        Complex values, not 2-D, no row or no column, NaN or infinity.
    TypeError
        Values that are not numbers (e.g. dicts).

    Examples
    --------
    >>> from rankfast.base import check_features
    >>> X, names = check_features([[1, 2], [3, 4]])
    >>> X.dtype, X.shape, names
    (dtype('float64'), (2, 2), None)
    >>> check_features([1.0, 2.0])
    Traceback (most recent call last):
    ...
    ValueError: Expected a 2-D X, got a 1-D array of shape (2,): Reshape your data with X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one document
    """
    names = _feature_names(X)
    if issparse(X):
        if X.dtype.kind == "c":
            raise ValueError(f"Complex data not supported ({what} is complex)")
        X = as_csr(X)
        if not (sparse_float32 and X.dtype == np.float32):
            X = X.astype(np.float64, copy=False)
        values = X.data[:X.nnz]
    else:
        X = np.asarray(X)
        if X.dtype.kind == "c":
            raise ValueError(f"Complex data not supported ({what} is complex)")
        if X.ndim != 2:
            raise ValueError(f"Expected a 2-D {what}, got a {X.ndim}-D array of shape {X.shape}: "
                             f"Reshape your data with X.reshape(-1, 1) for one feature or "
                             f"X.reshape(1, -1) for one document")
        X = _float64(X, what)
        values = X
    n, d = X.shape
    if n == 0:
        raise ValueError(f"no documents: {what} has 0 rows (shape={X.shape})")
    if d == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of "
                         f"1 is required.")
    if not all_finite(values, n_threads):
        raise ValueError(f"Input {what} contains NaN or infinity: feature values must be finite")
    return X, names


def _float64(values, what):
    """values as a C-contiguous float64 array; a missing value (None, pandas.NA) is a ValueError.

    An object array holding pandas.NA (a nullable column beside others) or
    None would otherwise raise float()'s TypeError.
    """
    try:
        return np.ascontiguousarray(values, dtype=np.float64)
    except TypeError:
        if values.dtype == object:
            import sys
            missing = getattr(sys.modules.get("pandas"), "NA", None)
            if any(value is None or value is missing for value in values.ravel()):
                raise ValueError(f"Input {what} contains missing values (None or pandas.NA): "
                                 f"values must be finite numbers") from None
        raise


def _feature_names(X):
    columns = getattr(X, "columns", None)
    if columns is None or issparse(X) or isinstance(X, np.ndarray):
        return None
    names = np.asarray(columns, dtype=object)
    return names if len(names) and all(isinstance(c, str) for c in names) else None


def check_labels(y, n, name="the estimator"):
    """y as a 1-D float64 array of n finite numbers (a column vector is flattened)."""
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.dtype.kind == "c":
        raise ValueError("Complex data not supported (y is complex)")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array of relevance labels, got shape {y.shape}")
    y = _float64(y, "y")
    if len(y) != n:
        raise ValueError(f"X has {n} rows but y has {len(y)} labels")
    if not np.isfinite(y).all():
        raise ValueError("labels must be finite (y contains NaN or infinity)")
    return y


def query_ids(n, qid=None, group=None):
    """Per-row query ids from ``qid``, LightGBM-style ``group`` sizes, or neither.

    Parameters
    ----------
    n : int
        Number of rows.
    qid : array-like, shape (n,), optional
        Query id of each row (integers, or any values np.unique can sort);
        rows of one query need not be contiguous.
    group : array-like of int, optional
        Sizes of consecutive groups of rows, adding up to n.

    Returns
    -------
    ndarray, shape (n,)
        ``qid`` itself; group numbers 0, 1, ... from ``group``; zeros (one
        ranking) with neither.  With both, they must describe the same queries.

    Examples
    --------
    >>> from rankfast.base import query_ids
    >>> query_ids(5, group=[2, 3])
    array([0, 0, 1, 1, 1])
    >>> query_ids(3)
    array([0, 0, 0])
    """
    if qid is not None:
        qid = np.asarray(qid)
        if qid.ndim != 1 or len(qid) != n:
            raise ValueError(f"qid must hold one query id per row: X has {n} rows, "
                             f"qid has shape {qid.shape}")
        if qid.dtype.kind == "c" or (qid.dtype.kind == "f" and not np.isfinite(qid).all()):
            raise ValueError("query ids must be finite real numbers, integers or strings")
    if group is None:
        return np.zeros(n, dtype=np.int64) if qid is None else qid
    from_group = group_to_qid(group, n)
    if qid is not None:
        if not np.array_equal(np.diff(query_starts(qid)), np.diff(query_starts(from_group))):
            raise ValueError("qid and group describe different queries: give one of them")
        return qid
    return from_group


def query_sample_weights(sample_weight, qid):
    """Each query's multiplier of its loss term from ``sample_weight`` (None: no weights).

    Weights are per query, as XGBRanker's ranking weights: query q's term of
    the objective, C/Q times its loss, becomes C w_q / Σ_r w_r times its
    loss, so that a weight of 2 gives the model of the data with that query
    twice, and a weight of 0 the model without it.  A list of C, K-fold and
    leave-query-out cross-validation use the same weights: every fold's model
    normalises the weights of its training queries alike, and the table
    counts each held-out query's value w_q times (rankfast.model_selection).

    Parameters
    ----------
    sample_weight : array-like or None
        One weight per row, the same for every row of a query (the form
        scikit-learn's searches slice into folds), or one per query in the
        order the queries first appear.  Finite, ≥ 0, not all zero.
    qid : ndarray, shape (n_documents,)
        Query ids as Ranker._fit_input returns them.

    Returns
    -------
    ndarray of float64, shape (n_queries,), or None
        w_q Q / Σ_r w_r for the queries in the order of first appearance
        (rankfast.linear.training_arrays' order): mean 1, so that the
        learners multiply their per-query weights C/Q by it.

    Raises
    ------
    ValueError
        Weights that are not numbers, of the wrong length, negative, not
        finite, all zero, or different within a query (sample_weight is per
        query: weights of documents within one ranking have no meaning here).

    Examples
    --------
    >>> from rankfast.base import query_sample_weights
    >>> query_sample_weights([2, 2, 1, 1, 1], [5, 5, 3, 3, 3])
    array([1.33333333, 0.66666667])
    >>> query_sample_weights([2, 1], [5, 5, 3, 3, 3])
    array([1.33333333, 0.66666667])
    """
    if sample_weight is None:
        return None
    weight = np.asarray(sample_weight)
    if weight.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must hold numbers (got dtype {weight.dtype})")
    weight = weight.astype(np.float64)           # a copy: the caller's array is never changed
    query, n_queries = query_index(qid)
    if weight.ndim != 1 or len(weight) not in (len(qid), n_queries):
        raise ValueError(f"sample_weight must hold one weight per row ({len(qid)}) or per query "
                         f"({n_queries}), got shape {weight.shape}")
    if not np.isfinite(weight).all() or (weight < 0).any():
        raise ValueError("sample_weight must be finite and non-negative")
    if len(weight) == len(qid):
        per_query = np.zeros(n_queries)
        per_query[query] = weight
        if not np.array_equal(per_query[query], weight):
            raise ValueError("sample_weight must be the same for every row of a query: weights "
                             "are per query (a weight of 2 counts the query twice), as "
                             "XGBRanker's ranking weights")
        weight = per_query
    total = weight.sum()
    if not total > 0:
        raise ValueError("sample_weight: every weight is zero, nothing to train on")
    return weight * (n_queries / total)


def row_weights(per_query, qid):
    """Per-query weights (query_sample_weights' order) as one weight per row of qid (None: None)."""
    return None if per_query is None else per_query[query_index(qid)[0]]


def weighted(per_query, weight):
    """per_query times query_sample_weights' multipliers (as is without weights)."""
    return per_query if weight is None else per_query * weight


class OneRankingWarning(UserWarning):
    """An estimator inside a scikit-learn search was fitted without qid or group: one ranking."""


def scoring_queries(estimator, n, qid, group, who):
    """Query ids for scoring n rows of ``estimator``'s predictions (``who`` names the scorer).

    With neither ``qid`` nor ``group`` the rows are one ranking, as svm_rank
    reads a file without qids, unless the estimator was trained on several
    queries: then the rows are almost surely several queries whose ids did
    not reach the scorer (scikit-learn without metadata routing passes none),
    and scoring them as one ranking would give a wrong figure with no sign of
    it, so this raises ValueError saying how to route them.
    """
    if qid is None and group is None and _trained_on_several_queries(estimator):
        raise ValueError(
            f"{who} was given {n} rows without qid or group, but {type(estimator).__name__} "
            f"was trained on several queries: scoring the rows as one ranking would be wrong. "
            f"In scikit-learn, route the queries: sklearn.set_config("
            f"enable_metadata_routing=True), request them with "
            f"estimator.set_fit_request(qid=True) (and set_score_request(qid=True) when the "
            f"search scores with estimator.score), and pass them to the search: "
            f"search.fit(X, y, groups=qid, qid=qid). Called directly, pass qid= "
            f"(qid=np.zeros(n) scores the rows as one ranking)")
    return query_ids(n, qid, group)


def _trained_on_several_queries(estimator):
    """Whether the estimator (or a Pipeline's last step, or a search's best estimator) saw
    several queries in fit."""
    for candidate in (estimator, getattr(estimator, "_final_estimator", None),
                      getattr(estimator, "best_estimator_", None)):
        if getattr(candidate, "_several_queries", False):
            return True
    return False


def in_scikit_learn_search():
    """Whether a scikit-learn model-selection routine (GridSearchCV, cross_validate, ...) is a caller.

    Looks up the call stack only when scikit-learn's model_selection is imported.
    """
    if "sklearn.model_selection" not in sys.modules:
        return False
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("sklearn.model_selection"):
            return True
        frame = frame.f_back
    return False


class Ranker(BaseEstimator):
    """Base of rankfast's estimators: input checks, ``n_features_in_``, ``score``.

    Subclasses call ``_fit_input`` first thing in ``fit`` and
    ``_predict_input`` in ``predict``.  Constructors only store their
    arguments (scikit-learn's convention, so that ``clone`` and
    ``set_params`` work); parameters are checked by ``fit``.
    """

    #: Whether sparse float32 input is used as is (no float64 copy): learners whose
    #: numerics only multiply by X through rankfast.linear.DataMatrix.
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
        self._several_queries = bool(len(qid)) and not bool((qid == qid[0]).all())
        self.n_features_in_ = X.shape[1]
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return X, y, qid

    def _evaluation_sets(self, eval_set, eval_qid=None, eval_group=None):
        """fit's eval_set as checked rankfast.model_selection.ValidationSets named validation_i."""
        if eval_set is None:
            if eval_qid is not None or eval_group is not None:
                raise ValueError("eval_qid and eval_group describe eval_set, which is not given")
            return []
        from .model_selection import ValidationSet
        pairs = list(eval_set)
        for name, given in (("eval_qid", eval_qid), ("eval_group", eval_group)):
            if given is not None and len(given) != len(pairs):
                raise ValueError(f"{name} must hold one entry per eval_set pair ({len(pairs)}), "
                                 f"got {len(given)}")
        sets = []
        for i, pair in enumerate(pairs):
            if len(pair) != 2:
                raise ValueError(f"eval_set[{i}] must be a pair (X, y)")
            X, _ = check_features(pair[0], f"eval_set[{i}]'s X")
            qid = query_ids(X.shape[0], None if eval_qid is None else eval_qid[i],
                            None if eval_group is None else eval_group[i])
            sets.append(ValidationSet(X, pair[1], qid, name=f"validation_{i}"))
        return sets

    def _record_evals(self, sets):
        """``evals_result_`` of the fitted model on fit's eval_set (nothing without one).

        XGBRanker's layout, {"validation_0": {"ndcg@10": [value], ...}}, with
        one value per metric (a linear ranker has no boosting rounds): the
        table's metrics of rankfast.model_selection, ``cv_metric`` first.
        """
        if hasattr(self, "evals_result_"):
            del self.evals_result_
        if not sets:
            return
        from .model_selection import Metric, table_metrics
        columns = table_metrics(Metric.parse(getattr(self, "cv_metric", "ndcg@10"),
                                             getattr(self, "cv_convention", "letor")))
        results = {}
        for valid in sets:
            scores = predicted(self, valid.X, valid.qid)
            results[valid.name] = {column.key: [float(column.evaluate(scores, valid.y, valid.qid))]
                                   for column in columns}
        self.evals_result_ = results

    def _predict_input(self, X):
        """X checked against what fit saw: dense input must have n_features_in_ columns.

        Sparse input may be narrower or wider (features above the training
        width are ignored, as svm_rank ignores features above a model's
        highest index): SVMlight test files often end below the training
        file's highest index.
        """
        check_is_fitted(self)
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
        if not issparse(X) and X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        return X

    def score(self, X, y, qid=None, group=None):
        """Mean NDCG@10 of the predictions, as ``rank_classify --metrics`` reports it.

        Parameters
        ----------
        X : array-like or sparse matrix, shape (n_documents, n_features)
        y : array-like, shape (n_documents,)
            Relevance labels.
        qid, group : array-like, optional
            The queries, as for ``fit``; with neither, one ranking, unless the
            estimator was trained on several queries: then ValueError (see
            rankfast.base.scoring_queries).

        Returns
        -------
        float
            rankfast.metrics.ndcg(predict(X), y, qid, k=10) with its default
            (LETOR 4.0) convention.
        """
        from .metrics import ndcg
        scores = self.predict(X)
        y = check_labels(y, len(scores), type(self).__name__)
        qid = scoring_queries(self, len(scores), qid, group, f"{type(self).__name__}.score")
        return ndcg(scores, y, qid, k=10)

    #: What the estimator is, for scikit-learn before 1.6 and for libraries that read it
    #: (XGBRanker has the same); scikit-learn >= 1.6 reads the tag below.
    _estimator_type = "ranker"

    def __sklearn_tags__(self):
        tags = sparse_input_tags(super().__sklearn_tags__())
        tags.estimator_type = "ranker"
        tags.target_tags.required = True
        return tags


def cv_result_of(estimator):
    """The CVResult a fitted estimator (or the base learner of a kernel learner) holds, or None."""
    result = getattr(estimator, "cv_result_", None)
    if result is None and hasattr(estimator, "base_learner"):
        result = getattr(estimator.base_learner, "cv_result_", None)
    return result


def sparse_input_tags(tags):
    """scikit-learn's tags of an estimator that takes sparse X (only scikit-learn asks for tags)."""
    tags.input_tags.sparse = True
    return tags


def predicted(estimator, X, qid):
    """estimator's scores of X; a model that normalises per query (normalize="query") gets qid."""
    applied = getattr(estimator, "_applied_normalizer", None)
    if applied is not None and applied() is not None:
        return estimator.predict(X, qid)
    return estimator.predict(X)
