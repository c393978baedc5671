"""Folds over whole queries, and validation sets given as (X, y, qid)."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from ..data.queries import query_index
from ..data.validation import (
    check_features,
    check_labels,
    outside_stacklevel,
    pair_weights,
    query_ids,
)
from ..errors import UsageError

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import Matrix, VectorLike

DEFAULT_FOLDS = 5


# -------------------------------------------------------------------- folds

@dataclasses.dataclass(frozen=True, eq=False)
class ValidationSet:
    """Documents that score the grid's models instead of folds (``cv=ValidationSet(...)``).

    Parameters
    ----------
    X : array or sparse matrix, shape (n_valid, d)
        Sparse input may be narrower or wider than the training data (as for predict).
    y, qid : array, shape (n_valid,)
        Relevance labels and query ids of the validation documents.
    name : str
        What the table's header calls it (rank_learn: the file name).
    sample_weight : array-like, optional
        Weights of the validation queries, as a learner's ``sample_weight``
        (rankfast.data.validation.pair_weights: per row or per query; on clicks,
        each click's inverse propensity): each query's value counts its weight,
        so on a click log the table's NDCG is the inverse-propensity estimate
        of the rankers' DCG on the clicks (rankfast.clicks).

    Examples
    --------
    >>> import numpy as np
    >>> from rankfast.model_selection import ValidationSet
    >>> from rankfast import RankSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 3)); y = (X[:, 0] > 0).astype(float); qid = np.repeat(range(8), 10)
    >>> ranker = RankSVM(C=[0.01, 1.0], cv=ValidationSet(X[40:], y[40:], qid[40:]))
    >>> ranker.fit(X[:40], y[:40], qid[:40]).cv_result_.folds
    'validation set, 4 queries'
    """

    X: object
    y: np.ndarray
    qid: np.ndarray
    name: str = "validation set"
    sample_weight: object = None

    def __post_init__(self):
        X, _ = check_features(self.X, "the validation X")
        y = check_labels(self.y, X.shape[0], "the validation set")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "qid", query_ids(X.shape[0], self.qid))
        _refuse_without_pairs(y, self.qid)
        if self.sample_weight is not None:
            object.__setattr__(self, "sample_weight",
                               pair_weights(self.sample_weight, self.qid, y).query)

    @property
    def query_weights(self) -> np.ndarray | None:
        """Each query's weight in the table's means (queries in order of first appearance)."""
        return self.sample_weight  # type: ignore[return-value]

    def __deepcopy__(self, memo):
        return self                 # data, not state: estimators copied per row share it

    @classmethod
    def of_checked(cls, X: Matrix, y: np.ndarray, qid: np.ndarray, name: str) -> ValidationSet:
        """A ValidationSet of X, y and qid as rankfast.data.validation's checks return them,
        not checked again."""
        valid = object.__new__(cls)
        _refuse_without_pairs(y, qid)
        for field, value in (("X", X), ("y", y), ("qid", qid), ("name", name),
                             ("sample_weight", None)):
            object.__setattr__(valid, field, value)
        return valid


def _refuse_without_pairs(y, qid):
    """ValueError for a validation set none of whose queries has two different labels: every
    model scores the same on it (NDCG, MAP and ERR 0 without a relevant document, pair
    accuracy undefined), so it would choose the first C of the grid for no reason."""
    from .. import metrics
    facts = metrics.query_facts(y, qid)
    if facts.one_label.all():
        what = "no relevant document" if not facts.relevant.any() else \
            "the same label on every document of each query"
        raise ValueError(f"the validation set has {what}: no query has a pair to order, so "
                         f"it cannot tell the models apart")


@dataclasses.dataclass
class Folds:
    """(train, test) row indices of every fold, and what they are in words."""

    splits: list
    description: str


def make_folds(qid: VectorLike, cv: Any = DEFAULT_FOLDS, random_state: int = 0, X: object = None,
               y: VectorLike | None = None) -> Folds:
    """The folds ``cv`` asks for over documents with query ids qid (see the module docstring).

    Raises
    ------
    UsageError
        cv is neither an int ≥ 2, "loqo" nor a splitter; a splitter's indices are out of range.
    ValueError
        Too few queries (loqo) or documents to cross-validate.
    """
    qid = np.asarray(qid)
    n = len(qid)
    group, Q = query_index(qid)
    if _given_splits(cv):
        return _splitter_folds(cv, X, y, qid, n)
    if isinstance(cv, str):
        if cv != "loqo":
            raise UsageError(f"folds must be a number of folds or loqo (got {cv!r})")
        if Q < 2:
            raise ValueError(f"leave-query-out cross-validation needs at least 2 queries "
                             f"(got {Q}); use a number of folds")
        fold = group
        K, what = Q, f"leave-query-out ({Q} queries)"
    else:
        if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
            raise UsageError(f"the number of folds must be an integer of at least 2 (got {cv!r})")
        rng = np.random.default_rng(random_state)
        seed = "" if random_state is None else f", seed {random_state}"
        if Q >= 2:
            K = min(int(cv), Q)
            fold_of_query = np.empty(Q, dtype=np.int64)
            fold_of_query[rng.permutation(Q)] = np.arange(Q) % K
            fold = fold_of_query[group]
            fewer = "" if K == cv else f" (one a query: {cv} asked)"
            what = f"{K} folds of queries{fewer}{seed}"
        else:
            K = min(int(cv), n // 2)
            if K < 2:
                raise ValueError(f"cross-validation needs at least 4 documents in a single "
                                 f"ranking (got {n})")
            fold = np.empty(n, dtype=np.int64)
            fold[rng.permutation(n)] = np.arange(n) % K
            fewer = "" if K == cv else f" ({cv} asked; at least 2 documents a fold)"
            what = f"{K} folds of the documents of the single ranking{fewer}{seed}"
    splits = [(np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(K)]
    return Folds(splits, what)


def _given_splits(cv):
    """Whether cv is a splitter (``split``) or a list or tuple of (train, test) pairs."""
    return (hasattr(cv, "split") and not isinstance(cv, str)) or isinstance(cv, (list, tuple))


def _splitter_folds(cv, X, y, qid, n):
    splits = []
    pairs = cv.split(X, y, qid) if hasattr(cv, "split") else cv
    for pair in pairs:
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
            raise UsageError("cv as a list must hold (train, test) pairs of row indices")
        train, test = pair
        train, test = np.asarray(train), np.asarray(test)
        for part in (train, test):
            if part.dtype == bool:
                raise UsageError("the splitter must yield row indices, not masks")
            if len(part) == 0 or part.min() < 0 or part.max() >= n:
                raise UsageError(f"the splitter yielded an empty fold or rows outside 0..{n - 1}")
        splits.append((train.astype(np.int64), test.astype(np.int64)))
    if not splits:
        raise UsageError("the splitter yielded no fold")
    what = f"{type(cv).__name__}" if hasattr(cv, "split") else "the list given"
    _warn_of_split_queries(splits, np.asarray(qid), what)
    return Folds(splits, f"{len(splits)} splits of {what}")


class SplitQueryWarning(UserWarning):
    """Cross-validation folds put rows of one query on both sides of a split."""


def _warn_of_split_queries(splits, qid, what):
    """SplitQueryWarning when a fold holds out rows of a query that also has training rows.

    Such a fold trains on part of the queries it is scored on and scores fragments of
    queries (a splitter that ignores groups, as KFold does).  Folds of the documents of
    a single ranking are what cross-validation of one ranking is: no warning.
    """
    if len(qid) == 0 or np.all(qid == qid[0]):
        return
    split = [len(np.intersect1d(qid[train], qid[test])) for train, test in splits]
    if any(split):
        worst = int(np.argmax(split))
        warnings.warn(f"{what} splits queries: fold {worst + 1} holds out rows of "
                      f"{split[worst]} queries that also have rows in its training part "
                      f"({sum(1 for n in split if n)} of {len(splits)} folds do so), so it trains "
                      f"on the queries it is scored on and scores parts of them. Split by query: "
                      f"GroupKFold (the qids as groups), a number of folds, or 'loqo'",
                      SplitQueryWarning, stacklevel=outside_stacklevel())
