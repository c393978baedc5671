"""What the linear learners share: scoring in float64 and turning weights into a model."""
from __future__ import annotations

import numpy as np

from .._kernels import _products
from ..data.sparse import all_finite, as_csr, issparse
from ..data.validation import TrainingData
from ..errors import UsageError
from ..models import LinearModel, file_weights

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import Int64Vector, Matrix, Vector


def check_training_input(X: Matrix, y: np.ndarray, qid: np.ndarray) -> None:
    """ValueError unless X, y and qid describe the same documents with finite numbers.

    For input that has not been through Ranker._training_data (e.g. dask's blocks).
    """
    check_lengths(X, y, qid)
    values = as_csr(X).data if issparse(X) else np.asarray(X)
    if not all_finite(values):
        raise ValueError("feature values must be finite (X holds NaN or inf)")
    if not np.all(np.isfinite(np.asarray(y, dtype=np.float64))):
        raise ValueError("labels must be finite")
    qid = np.asarray(qid)
    if qid.dtype.kind == "f" and not np.all(np.isfinite(qid)):
        raise ValueError("query ids must be finite")


def check_lengths(X: Matrix, y: np.ndarray, qid: np.ndarray) -> None:
    """ValueError unless X, y and qid have one entry per document.

    The compiled kernels trust these lengths; unchecked, a short y or qid
    reads past the end of an array.
    """
    n = X.shape[0] if issparse(X) else len(X)
    if not (len(y) == len(qid) == n):
        raise ValueError(f"X has {n} rows but y has {len(y)} and qid {len(qid)} entries")


def training_arrays(X: Matrix, y: Vector,
                    qid: np.ndarray) -> tuple[Matrix, np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, starts, used) as rankfast.data.validation.TrainingData.grouped returns them.

    For learners that take X, y and qid as Ranker._training_data returns them
    rather than a TrainingData (values already checked finite there: only
    the lengths are checked again, and X and y taken as the kernels take them).
    """
    check_lengths(X, y, qid)
    X = as_csr(X) if issparse(X) else np.asarray(X, dtype=np.float64)
    return TrainingData(X, np.asarray(y, dtype=np.float64), np.asarray(qid)).grouped()


def varying_columns(X: Matrix, starts: Int64Vector, order: Int64Vector | None = None,
                    n_threads: int = 1) -> np.ndarray:
    """Whether each column of X has values that differ within some query (bool, one per column).

    X and starts as TrainingData.grouped returns them, or a CSR X whose query q is
    rows ``order[starts[q]:starts[q + 1]]`` (group_rows' permutation); one pass over X
    at most (it ends once every column is seen to vary); a CSR X's queries on
    ``n_threads`` threads.
    """
    varies = np.zeros(X.shape[1], dtype=np.int8)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    if isinstance(X, np.ndarray) and order is None:
        _products.mark_varying_columns_dense(X, starts, varies)
    else:                                   # a rankfast.data.sparse.CSR, as TrainingData holds X
        rows = np.arange(X.shape[0]) if order is None else np.asarray(order, dtype=np.int64)
        _products.mark_varying_columns(X.data, X.indices, X.indptr, rows, starts, varies,  # type: ignore[union-attr]
                                       n_threads)
    return varies.astype(bool)


def without_query_constant(w: Vector, X: Matrix, starts: Int64Vector,
                           n_threads: int = 1) -> np.ndarray:
    """w with exact zeros on the columns of X that are constant within every query.

    Such a column adds the same to every score of a query, so no pair's difference
    and no ranking depends on it: every pairwise learner's optimum weighs it 0 (only
    ½‖w‖² sees it), and what a solver leaves there is rounding and the stopping
    rule's slack (~1e-6 on LETOR's query-level features at the default -e).
    svm_rank's w = Σ α (x_i − x_j) is exactly 0 there, and its model file leaves
    such features out; so do ours.  X and starts as TrainingData.grouped returns them.
    """
    varies = varying_columns(X, starts, n_threads=n_threads)
    if varies.all():
        return w
    return np.where(varies, w, 0.0)


def query_weights(y: Vector, starts: Int64Vector, C: float, loss: int,
                  n_queries: int | None = None, doc_weight: Vector | None = None) -> Vector:
    """c_q: C / Q (loss 1) or C / (Q · pairs of q) (loss 2).

    Q counts every query of ``starts``, or is ``n_queries`` (the queries of
    every shard, when these are one shard's; rankfast.dask).  With
    ``doc_weight`` (a weight on each pair's preferred document), loss 2
    averages each query's pairs by their weights: pairs of q is Σ v_i.
    """
    if len(starts) == 1:
        return np.zeros(0)
    weight = np.full(len(starts) - 1, C / (len(starts) - 1 if n_queries is None else n_queries))
    if loss == 2:
        pairs = pair_counts(y, starts) if doc_weight is None else \
            weighted_pair_counts(y, starts, doc_weight)
        weight /= np.where(pairs > 0, pairs, 1)
    return weight


def _label_runs(y: Vector, starts: Int64Vector) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, query of each sorted row, start of each run): the rows sorted by query, then
    label, and where each run of one (query, label) begins in that order."""
    sizes = np.diff(starts)
    query = np.repeat(np.arange(len(sizes)), sizes)
    order = np.lexsort((y, query))
    ys, qs = np.asarray(y)[order], query[order]
    new_run = np.ones(len(ys), dtype=bool)
    new_run[1:] = (ys[1:] != ys[:-1]) | (qs[1:] != qs[:-1])
    return order, qs, np.flatnonzero(new_run)


def weighted_pair_counts(y: Vector, starts: Int64Vector, doc_weight: Vector) -> np.ndarray:
    """Σ over each query's pairs (i, j), y_i > y_j, of doc_weight[i] (O(n log n))."""
    order, qs, run_start = _label_runs(y, starts)
    run_of = np.zeros(len(order), dtype=np.int64)
    run_of[run_start[1:]] = 1
    first_of_run = run_start[np.cumsum(run_of)]               # each row's run's first position
    lower = first_of_run - np.asarray(starts)[qs]             # rows of its query below its label
    return np.bincount(qs, weights=lower * np.asarray(doc_weight)[order],
                       minlength=len(starts) - 1)


def pair_counts(y: Vector, starts: Int64Vector) -> np.ndarray:
    """Number of pairs with different labels in each query (O(n log n))."""
    sizes = np.diff(starts)
    _, qs, run_start = _label_runs(y, starts)
    run_length = np.diff(np.r_[run_start, len(qs)])
    tied = np.zeros(len(sizes), dtype=np.int64)
    np.add.at(tied, qs[run_start], run_length * run_length)
    return (sizes * sizes - tied) // 2


class NotConvergedWarning(UserWarning):
    """A solver stopped before its tolerance was met (its iteration cap, most often)."""


def warn_if_stopped_early(estimator: Any, result: Any) -> None:
    """NotConvergedWarning, naming why, when ``result`` (a solver's) is not converged."""
    if getattr(result, "converged", True) is not False:
        return
    import warnings

    from ..data.validation import outside_stacklevel
    warnings.warn(f"{type(estimator).__name__}.fit stopped before its tolerance was met "
                  f"({result.message} after {result.iterations} iterations): the model may be "
                  f"far from the optimum"
                  + ("; raise 'max_iter'" if "limit" in result.message else ""),
                  NotConvergedWarning, stacklevel=outside_stacklevel())


def linear_scores(X: Matrix, feature_ids: Int64Vector, weights: Vector) -> np.ndarray:
    """X w in float64, w given sparsely by 1-based feature ids (ids beyond X's width weigh nothing)."""
    keep = feature_ids <= X.shape[1]
    w = np.zeros(X.shape[1])
    w[feature_ids[keep] - 1] = weights[keep]
    return X @ w                    # X as Ranker._predict_input returns it: CSR or float64


def c_grid(C: Any) -> list[float] | None:
    """Sorted list of C values if C is a sequence, None for one number; checks C > 0."""
    values = list(C) if isinstance(C, (list, tuple, np.ndarray)) else [C]
    for value in values:
        try:
            positive = bool(np.isfinite(value) and value > 0) and not isinstance(value, bool)
        except (TypeError, ValueError):            # a string, None, a nested list
            positive = False
        if not positive:
            raise UsageError(f"C must be a positive number (got {value!r})")
    if not isinstance(C, (list, tuple, np.ndarray)):
        return None
    if not values:
        raise UsageError("the list of C values is empty")
    return sorted(float(c) for c in set(values))


def check_loss(loss: Any) -> None:
    """svm_rank's -l: 1 (every pair) or 2 (pairs averaged per query)."""
    if loss not in (1, 2):
        raise UsageError(f"'loss' must be 1 or 2 (got {loss!r})")


def linear_model(learner: Any, n_features: int | None, n_documents: int | None,
                 options: dict[str, Any]) -> LinearModel:
    """LinearModel of a fitted linear learner, recording version, algorithm and options
    (n_documents None: the number of documents it was fitted on, see fit_documents)."""
    from .. import __version__
    ids, w = learner.feature_ids_, learner.weights_
    highest = (int(ids.max()) if len(ids) else 0) if n_features is None else n_features
    metadata = {"version": __version__, "algorithm": learner.name}
    metadata.update({k: _text(v) for k, v in options.items() if v is not None})
    normalizer = getattr(learner, "normalizer_", None)
    if normalizer is not None and normalizer.kind != "none":
        metadata["normalize"] = normalizer.kind
    return LinearModel(ids, storable_weights(w), 0.0, highest + 1, fit_documents(learner, n_documents),
                       metadata)


def storable_weights(w: Vector) -> np.ndarray:
    """w as the model file stores it (float32), or a ValueError if that loses the model.

    svm_rank's format holds floats: weights beyond float32's range would be
    written as inf, and a model whose every weight is below it as all zeros.
    """
    if not np.all(np.isfinite(w)):
        raise ValueError("training diverged: the weights are not finite "
                         "(feature values, labels or C too large?)")
    with np.errstate(over="ignore"):                 # overflow to inf is tested just below
        stored = file_weights(w)
    if not np.all(np.isfinite(stored)):
        raise ValueError(f"weights up to {np.abs(w).max():.3g} exceed the model file's float "
                         f"range: rescale the features")
    if np.any(w != 0) and not np.any(stored != 0):
        raise ValueError(f"every weight (at most {np.abs(w).max():.3g}) is below the model "
                         f"file's float range: C is too small for these features; use a "
                         f"larger 'C' (or rescale the features)")
    return stored


def _text(value):
    """A metadata value as text: numbers in their shortest exact form, lists comma-joined."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return ",".join(_text(v) for v in value)
    if isinstance(value, (float, np.floating)):
        text = repr(float(value))
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def fit_documents(learner: Any, n_documents: int | None) -> int:
    """n_documents, or when None the number of documents ``learner`` was last fitted on (0 if unknown):
    what a model file records as its "number of training documents", as svm_rank's does."""
    return int(getattr(learner, "_fit_documents", 0) if n_documents is None else n_documents)
