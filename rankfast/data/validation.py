"""The Python boundary: features, labels and queries checked and converted, once.

Every estimator's ``fit`` and ``predict`` and every scorer pass their input
through here before any numerics see it: X becomes a C-contiguous float64
ndarray or a CSR matrix (rankfast.data.sparse.CSR), y a 1-D float64 array of finite
labels, the queries one id per row, sample_weight one multiplier per query
(query_sample_weights).  This module stands below the estimators
(rankfast.learners._base), the metrics and model selection, which all use it.
"""
from __future__ import annotations

import collections
import dataclasses
import sys
import warnings
from functools import cached_property

import numpy as np

from .queries import Queries, group_to_qid, query_index, query_starts
from .sparse import CSR, all_finite, as_csr, compact_columns, issparse

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import Matrix, MatrixLike, Vector, VectorLike


def check_features(X: MatrixLike, what: str = "X", sparse_float32: bool = False,
                   n_threads: int | None = 1,
                   known_finite: bool = False) -> tuple[Matrix, np.ndarray | None]:
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
    known_finite : bool
        The values were checked finite where they were made (the file reader
        refuses NaN and infinity at their line): no pass over them again.

    Returns
    -------
    X : rankfast.data.sparse.CSR or ndarray of float64
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
    >>> from rankfast.data.validation import check_features
    >>> X, names = check_features([[1, 2], [3, 4]])
    >>> X.dtype, X.shape, names
    (dtype('float64'), (2, 2), None)
    >>> check_features([1.0, 2.0])
    Traceback (most recent call last):
    ...
    ValueError: Expected a 2-D X, got a 1-D array of shape (2,): Reshape your data with
    X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one document
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
    if not known_finite and not all_finite(values, n_threads):
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


def check_labels(y: VectorLike, n: int, name: str = "the estimator") -> np.ndarray:
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


def query_ids(n: int, qid: VectorLike | None = None, group: VectorLike | None = None) -> np.ndarray:
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
    >>> from rankfast.data.validation import query_ids
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
        if qid.dtype.kind == "O":
            try:
                np.unique(qid)
            except TypeError:
                raise ValueError("query ids must be all numbers or all strings (they are "
                                 "compared to find each query's rows); got a mix") from None
    if group is None:
        return np.zeros(n, dtype=np.int64) if qid is None else qid
    from_group = group_to_qid(group, n)
    if qid is not None:
        if not np.array_equal(np.diff(query_starts(qid)), np.diff(query_starts(from_group))):
            raise ValueError("qid and group describe different queries: give one of them")
        return qid
    return from_group


def query_sample_weights(sample_weight: VectorLike | None, qid: VectorLike | Queries) -> np.ndarray | None:
    """Each query's multiplier of its loss term from ``sample_weight`` (None: no weights).

    Weights are per query, as XGBRanker's ranking weights: query q's term of
    the objective, C/Q times its loss, becomes C w_q / Σ_r w_r times its
    loss, so that a weight of 2 gives the model of the data with that query
    twice, and a weight of 0 the model without it.  Weights of any finite
    size work (they are scaled by a power of two before they are summed), and
    equal weights are no weights: the unweighted model, bit for bit.  A list
    of C, K-fold and leave-query-out cross-validation use the same weights:
    every fold's model normalises the weights of its training queries alike,
    and the table counts each held-out query's value w_q times
    (rankfast.model_selection).  Weights that differ within a query weigh
    documents (pair_weights).

    Parameters
    ----------
    sample_weight : array-like or None
        One weight per row, the same for every row of a query (the form
        scikit-learn's searches slice into folds), or one per query in the
        order the queries first appear.  Finite, ≥ 0, not all zero.
    qid : ndarray, shape (n_documents,), or rankfast.data.queries.Queries
        Query ids as Ranker._training_data returns them, or their Queries.

    Returns
    -------
    ndarray of float64, shape (n_queries,), or None
        w_q Q / Σ_r w_r for the queries in the order of first appearance
        (rankfast.learners._linear.training_arrays' order): mean 1, so that the
        learners multiply their per-query weights C/Q by it.  None when there
        are no weights or all are equal.

    Raises
    ------
    ValueError
        Weights that are not numbers, of the wrong length, negative, not
        finite, all zero, or different within a query (sample_weight is per
        query here: pair_weights gives weights within a ranking their meaning).

    Examples
    --------
    >>> from rankfast.data.validation import query_sample_weights
    >>> query_sample_weights([2, 2, 1, 1, 1], [5, 5, 3, 3, 3])
    array([1.33333333, 0.66666667])
    >>> query_sample_weights([2, 1], [5, 5, 3, 3, 3])
    array([1.33333333, 0.66666667])
    >>> query_sample_weights([1e308, 1e308], [5, 3]) is None
    True
    """
    if sample_weight is None:
        return None
    queries = qid if isinstance(qid, Queries) else Queries(qid)
    weight = _checked_weights(sample_weight, queries)
    if len(weight) == len(queries.qid):
        per_query = np.zeros(queries.n_queries)
        per_query[queries.index] = weight
        if not np.array_equal(per_query[queries.index], weight):
            raise ValueError("sample_weight must be the same for every row of a query: weights "
                             "are per query (a weight of 2 counts the query twice), as "
                             "XGBRanker's ranking weights")
        weight = per_query
    return _mean_one(weight)


def _checked_weights(sample_weight, queries):
    """sample_weight as float64, one per row or per query, finite and ≥ 0 (ValueError)."""
    weight = np.asarray(sample_weight)
    if weight.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must hold numbers (got dtype {weight.dtype})")
    weight = weight.astype(np.float64)           # a copy: the caller's array is never changed
    n, n_queries = len(queries.qid), queries.n_queries
    if weight.ndim != 1 or len(weight) not in (n, n_queries):
        raise ValueError(f"sample_weight must hold one weight per row ({n}) or per query "
                         f"({n_queries}), got shape {weight.shape}")
    if not np.isfinite(weight).all() or (weight < 0).any():
        raise ValueError("sample_weight must be finite and non-negative")
    return weight


def _mean_one(weight):
    """Per-query weights times Q / Σ w (mean 1); None when all are equal.

    First scaled by a power of two (exact) so that their sum cannot overflow:
    1e308 on every query is as good a weight as 1.
    """
    if len(weight) and weight.max() > 0:
        weight = np.ldexp(weight, -np.frexp(weight.max())[1])      # now < 1, same bits
    total = weight.sum()
    if not total > 0:
        raise ValueError("sample_weight: every weight is zero, nothing to train on")
    if weight.min() == weight.max():
        return None
    return weight * (len(weight) / total)


def preferred_documents(y: VectorLike, queries: Queries) -> np.ndarray:
    """Whether each row has a lower label in its query (it is the preferred side of a pair)."""
    y = np.asarray(y, dtype=np.float64)
    lowest = np.full(queries.n_queries, np.inf)
    np.minimum.at(lowest, queries.index, y)
    return y > lowest[queries.index]


def preferred_means(weight: Vector, queries: Queries, preferred: np.ndarray) -> np.ndarray:
    """Each query's mean weight over its preferred rows (over all its rows when it has none)."""
    index, n_queries = queries.index, queries.n_queries
    total = np.bincount(index, weights=np.where(preferred, weight, 0.0), minlength=n_queries)
    count = np.bincount(index, weights=preferred, minlength=n_queries)
    everyone = np.bincount(index, weights=weight, minlength=n_queries) / np.maximum(
        np.bincount(index, minlength=n_queries), 1)
    return np.where(count > 0, total / np.maximum(count, 1), everyone)


class PairWeights(collections.namedtuple("PairWeights", "query document")):
    """The weights of a weighted fit's pairs: pair (i, j) of query q, i preferred, weighs
    ``query[q] · document[i]`` times the learner's c_q (either part None: all 1).

    ``query``: per-query multipliers with mean 1 (query_sample_weights' meaning), in
    the queries' order of first appearance; ``document``: one factor per row (the
    rows' order), the row's weight over its query's mean weight of preferred
    documents (those with a lower label in their query), 1 on the others.
    (collections.namedtuple: typing costs milliseconds to import.)
    """

    __slots__ = ()


def pair_weights(sample_weight: VectorLike | None, qid: VectorLike | Queries,
                 y: VectorLike) -> PairWeights:
    """Query and document weights from per-row ``sample_weight`` that may differ within a query.

    A row's weight weighs the pairs in which it is the preferred document (the
    higher label): a click's inverse propensity on the clicked document weighs
    that click's pairs (Joachims, Swaminathan & Schnabel 2017).  Query q's
    weight w_q is the mean weight of its preferred documents (of all its rows
    when it has none) and is normalised as query_sample_weights does; each
    document keeps its weight relative to w_q.  So weights equal within every
    query mean exactly what query_sample_weights says, a query of one
    weighted click weighs as that click (a weight of 2: the click twice), and
    scaling every weight alike changes nothing.

    Raises
    ------
    ValueError
        As query_sample_weights (but weights may differ within a query).
    """
    if sample_weight is None:
        return PairWeights(None, None)
    queries = qid if isinstance(qid, Queries) else Queries(qid)
    weight = _checked_weights(sample_weight, queries)
    index, n_queries = queries.index, queries.n_queries
    if len(weight) != len(queries.qid):                       # one per query
        return PairWeights(query_sample_weights(weight, queries), None)
    first = np.zeros(n_queries)
    first[index] = weight
    if np.array_equal(first[index], weight):                   # the same within every query
        return PairWeights(_mean_one(first), None)
    if weight.max() > 0:
        weight = np.ldexp(weight, -np.frexp(weight.max())[1])  # sums cannot overflow
    per_query, document = preferred_weights(weight, queries, y)
    multipliers = _mean_one(per_query)
    if document is None:
        return PairWeights(multipliers, None)
    return PairWeights(np.ones(n_queries) if multipliers is None else multipliers, document)


def query_weight_scale(weight: Vector, queries: Queries, y: VectorLike) -> float:
    """The mean over queries of each query's mean weight on its preferred documents: what
    pair_weights divides the query weights by (to mean 1).  A learner trained at C × this
    scale on ``weight`` minimises the objective of C on the raw weights (svm_proprank's C:
    rankfast.clicks.scale_c); computed as pair_weights does (a power of two first, exact)."""
    weight = np.asarray(weight, dtype=np.float64)
    exponent = int(np.frexp(weight.max())[1]) if len(weight) and weight.max() > 0 else 0
    per_query, _ = preferred_weights(np.ldexp(weight, -exponent), queries, y)
    return float(np.ldexp(per_query.mean(), exponent))


def preferred_weights(weight: np.ndarray, queries: Queries,
                      y: VectorLike) -> tuple[np.ndarray, np.ndarray | None]:
    """(each query's mean weight over its preferred documents, each row's weight over its
    query's mean on preferred documents and 1 elsewhere, or None when every one is 1).

    The two parts of pair_weights before the queries' weights are normalised
    (rankfast.dask normalises them over every shard); ``weight`` scaled already.
    """
    preferred = preferred_documents(y, queries)
    per_query = preferred_means(weight, queries, preferred)
    mean = per_query[queries.index]
    relative = np.divide(weight, mean, out=np.ones_like(weight), where=preferred & (mean > 0))
    document = np.where(preferred, relative, 1.0)
    return per_query, None if np.all(document == 1.0) else document


def row_weights(per_query: np.ndarray | None, qid: VectorLike) -> np.ndarray | None:
    """Per-query weights (query_sample_weights' order) as one weight per row of qid (None: None)."""
    return None if per_query is None else per_query[query_index(qid)[0]]


def weighted(per_query: Vector, weight: Vector | None) -> np.ndarray:
    """per_query times query_sample_weights' multipliers (as is without weights)."""
    return per_query if weight is None else per_query * weight


class OneRankingWarning(UserWarning):
    """An estimator inside a scikit-learn search was fitted without qid or group: one ranking."""


class NoPairsWarning(UserWarning):
    """No query of the training data has two documents with different labels: nothing to learn."""


def warn_without_pairs(y: Vector, qid: VectorLike | Queries, who: str) -> None:
    """NoPairsWarning, naming the cause, when no query holds two different labels.

    Every pairwise learner then trains an all-zero model (each document scores
    0), exactly as it should, but silently that looks like a bug or hides one:
    document ids given as qids, one group size per row, a constant target.
    O(n) for rows already grouped by query.
    """
    if len(y) == 0:
        return
    queries = qid if isinstance(qid, Queries) else Queries(qid)
    perm, starts = queries.permutation, queries.starts
    labels = y if perm is None else y[perm]
    sizes = np.diff(starts)
    if np.any(labels != np.repeat(labels[starts[:-1]], sizes)):
        return
    if sizes.max() == 1:
        cause = (f"each of the {len(y)} documents is a query of its own: are the qids "
                 f"document ids, or the group sizes all 1?")
    elif np.all(labels == labels[0]):
        cause = f"every label is {labels[0]:g}"
    else:
        cause = "within each query every document has the same label"
    warnings.warn(f"{who}: no query has two documents with different labels ({cause}); "
                  f"there is no pair to order, so the model is all zero", NoPairsWarning,
                  stacklevel=outside_stacklevel())


def outside_stacklevel() -> int:
    """warnings.warn's stacklevel that names the first caller outside rankfast (from the caller
    of the function calling this)."""
    frame: Any = sys._getframe(2)
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("rankfast."):
        frame = frame.f_back
        level += 1
    return level


def scoring_queries(estimator: Any, n: int, qid: VectorLike | None, group: VectorLike | None,
                    who: str) -> np.ndarray:
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


def scored_queries(estimator: Any, X: MatrixLike, qid: VectorLike | None, group: VectorLike | None,
                   who: str) -> tuple[np.ndarray, np.ndarray]:
    """(estimator's scores of X, the query ids they are scored by) for a scorer (``who``).

    The queries as scoring_queries gives them, and the scores as predicted
    gives them (a model that normalises each query's rows gets the queries).
    """
    n = X.shape[0] if hasattr(X, "shape") else len(X)  # type: ignore[arg-type]  # a number has none
    queries = scoring_queries(estimator, n, qid, group, who)
    return predicted(estimator, X, queries), queries


def _trained_on_several_queries(estimator):
    """Whether the estimator (or a Pipeline's last step, or a search's best estimator) saw
    several queries in fit."""
    for candidate in (estimator, getattr(estimator, "_final_estimator", None),
                      getattr(estimator, "best_estimator_", None)):
        if getattr(candidate, "_several_queries", False):
            return True
    return False


def predicted(estimator: Any, X: MatrixLike | TrainingData, qid: VectorLike | None) -> np.ndarray:
    """estimator's scores of X; a model that normalises per query (normalize="query") gets qid.

    X may be a TrainingData (cross-validation's held-out rows, checked already): the
    estimator's private entry scores its X as it is.
    """
    if isinstance(X, TrainingData):
        return estimator._score_checked(X.X, qid)
    applied = getattr(estimator, "_applied_normalizer", None)
    if applied is not None and applied() is not None:
        return estimator.predict(X, qid)
    return estimator.predict(X)


@dataclasses.dataclass(frozen=True)
class TrainingData:
    """A fit's input, checked and converted once where it enters an estimator.

    Built by Ranker._training_data from fit's X, y, qid/group (and then the
    query weights); the learners take it as it is, without checking or
    converting X again.  An estimator's ``fit`` (and a linear learner's
    ``fit_path``, and ``predict``) also takes one in place of X, with y and the
    queries left out: cross-validation passes its folds so (``subset``),
    checked once.

    Attributes
    ----------
    X : rankfast.data.sparse.CSR or ndarray of float64, shape (n_documents, n_features)
        Sparse input as CSR (float64 values, or float32 for the learners whose
        kernels widen them: Ranker.sparse_float32); dense input C-contiguous.
    y : ndarray of float64, shape (n_documents,)
        Finite relevance labels.
    qid : ndarray, shape (n_documents,)
        Query id of each row (rows of a query need not be contiguous).
    feature_names : ndarray of str or None
        The column names of a DataFrame X (check_features), else None.
    queries : rankfast.data.queries.Queries
        The queries of ``qid``, analysed once on first use and shared by every
        step of the fit (the grouping, the query weights, the check for pairs).
    """

    X: Matrix
    y: np.ndarray
    qid: np.ndarray
    feature_names: np.ndarray | None = None

    @cached_property
    def queries(self) -> Queries:
        return Queries(self.qid)

    @property
    def sparse(self) -> bool:
        """Whether X is sparse (a CSR)."""
        return isinstance(self.X, CSR)

    def with_features(self, X: Matrix) -> TrainingData:
        """The same documents with X replaced (normalised features: CSR or float64 ndarray);
        the queries, analysed already, are shared."""
        replaced = dataclasses.replace(self, X=X)
        if "queries" in self.__dict__:
            replaced.__dict__["queries"] = self.queries
        return replaced

    def subset(self, rows: VectorLike) -> TrainingData:
        """The documents ``rows`` (an index array), in that order, taken as they are: no check.

        What cross-validation trains and scores its folds on.
        """
        index = np.asarray(rows)
        return TrainingData(self.X[index], self.y[index], self.qid[index], self.feature_names)

    def grouped(self) -> tuple[Matrix, np.ndarray, np.ndarray, np.ndarray]:
        """(X, y, starts, used): rows grouped by query, empty columns dropped, dense X kept dense.

        ``used`` holds the original 0-based index of each kept column;
        ``starts`` the query offsets of the grouped rows, with the row count
        appended.  Queries keep their order of first appearance (that of
        query_sample_weights' weights).
        """
        X, y = self.X, self.y
        perm, starts = self.queries.permutation, self.queries.starts
        if self.sparse:
            X, used = compact_columns(X)
        else:
            used = np.flatnonzero(np.count_nonzero(X, axis=0))  # type: ignore[arg-type]  # dense here
            if len(used) < X.shape[1]:
                X = X[:, used]
        if perm is not None:
            X, y = X[perm], y[perm]
        if not self.sparse:
            X = np.ascontiguousarray(X)
        return X, y, starts, used
