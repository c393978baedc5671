"""What the linear learners share: scoring in float64 and turning weights into a model."""
import numpy as np
import scipy.sparse as sp

from .data import compact_columns, group_rows
from .errors import UsageError
from .model import LinearModel, file_weights


def training_arrays(X, y, qid):
    """(X, y, starts, used): rows grouped by query, empty columns dropped, dense X kept dense.

    ``used`` holds the original 0-based index of each kept column; ``starts``
    the query offsets of the grouped rows, with the row count appended.
    """
    y = np.asarray(y, dtype=np.float64)
    perm, starts = group_rows(qid)
    if sp.issparse(X):
        X, used = compact_columns(X)
    else:
        X = np.asarray(X, dtype=np.float64)
        used = np.flatnonzero(np.count_nonzero(X, axis=0))
        if len(used) < X.shape[1]:
            X = X[:, used]
    if perm is not None:
        X, y = X[perm], y[perm]
    if not sp.issparse(X):
        X = np.ascontiguousarray(X)
    if not np.all(np.isfinite(y)):
        raise UsageError("labels must be finite")
    return X, y, starts, used


def linear_scores(X, feature_ids, weights):
    """X w in float64, w given sparsely by 1-based feature ids (ids beyond X's width weigh nothing)."""
    X = sp.csr_matrix(X)
    keep = feature_ids <= X.shape[1]
    w = np.zeros(X.shape[1])
    w[feature_ids[keep] - 1] = weights[keep]
    return X @ w


def c_grid(C):
    """Sorted list of C values if C is a sequence, None for one number; checks C > 0."""
    values = list(C) if isinstance(C, (list, tuple, np.ndarray)) else [C]
    for value in values:
        if not (np.isfinite(value) and value > 0):
            raise UsageError(f"C must be a positive number (got {value!r})")
    if not isinstance(C, (list, tuple, np.ndarray)):
        return None
    if not values:
        raise UsageError("the list of C values is empty")
    return sorted(float(c) for c in set(values))


def check_loss(loss):
    """svm_rank's -l: 1 (every pair) or 2 (pairs averaged per query)."""
    if loss not in (1, 2):
        raise UsageError(f"loss (-l) must be 1 or 2 (got {loss!r})")


class LinearRanker:
    """Base of the linear learners: after ``fit``, ``feature_ids_`` (1-based) and ``weights_``."""

    def decision_function(self, X):
        """Scores Xw in float64 (rank_classify rounds as svm_rank does; this does not)."""
        return linear_scores(X, self.feature_ids_, self.weights_)

    def predict(self, X):
        """The documents' scores (higher ranks first): the same as decision_function.

        The model file stores the weights as float32, so ``to_model().predict``
        (rank_classify's scores) can differ from these in the 8th digit.
        """
        return self.decision_function(X)


def linear_model(learner, n_features, n_documents, options):
    """LinearModel of a fitted linear learner, recording version, algorithm and options."""
    from . import __version__
    ids, w = learner.feature_ids_, learner.weights_
    highest = (int(ids.max()) if len(ids) else 0) if n_features is None else n_features
    metadata = {"version": __version__, "algorithm": learner.name}
    metadata.update({k: _text(v) for k, v in options.items() if v is not None})
    return LinearModel(ids, file_weights(w), 0.0, highest + 1, n_documents, metadata)


def _text(value):
    """A metadata value as text: numbers in their shortest exact form, lists comma-joined."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return ",".join(_text(v) for v in value)
    if isinstance(value, (float, np.floating)):
        text = repr(float(value))
        return text[:-2] if text.endswith(".0") else text
    return str(value)
