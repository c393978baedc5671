"""Cross-validation along a grid: the table (mean ± se per fold), the selection rule, select_c."""
from __future__ import annotations

import copy
import dataclasses
import itertools
import time

import numpy as np

from .. import metrics
from ..data.queries import query_index
from ..data.sparse import issparse
from ..data.validation import (
    TrainingData,
    pair_weights,
    predicted,
    row_weights,
)
from ..errors import UsageError
from ._scoring import DEFAULT_METRIC, Metric, table_columns
from ._split import DEFAULT_FOLDS, ValidationSet, _given_splits, make_folds

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from numpy.typing import ArrayLike

    from .._typing import Log, MatrixLike, Vector, VectorLike
    from ._scoring import Column
RULES = ("best", "1se")


# ------------------------------------------------------------------ results

@dataclasses.dataclass
class Progress:
    """One step of a cross-validation: a fold (None: all queries at once) and a row of the grid."""

    done: int
    total: int
    fold: object
    n_folds: int
    params: dict
    label: str
    value: float
    elapsed: float

    @property
    def eta(self) -> Any:
        """Seconds left, at the mean pace so far."""
        return self.elapsed / self.done * (self.total - self.done) if self.done else float("nan")

    def __str__(self):
        where = "all queries" if self.fold is None else f"fold {self.fold + 1}/{self.n_folds}"
        params = ", ".join(f"{name} = {value:g}" for name, value in self.params.items())
        return (f"CV {self.done}/{self.total}: {where}, {params}: {self.label} {self.value:.4f}"
                f" (elapsed {self.elapsed:.1f} s, ETA {self.eta:.1f} s)")


@dataclasses.dataclass
class CVResult:
    """A cross-validation table: per row of the grid and per fold, every column's value.

    Attributes
    ----------
    params : list of dict
        The grid's rows ({"C": ...}, or {"gamma": ..., "C": ...}).
    columns : list of Metric or Column
        columns[0] is the selection metric (higher is better).
    values : ndarray, shape (rows, folds, columns)
        Held-out values (nan where undefined).
    folds : str
        The folds in words.
    rule : {"best", "1se"}
    validation : bool
        Whether the folds are the queries of a validation set (ValidationSet).
    weights : ndarray, shape (folds,), or None
        Each fold's weight when the folds are queries of weighted training
        data (RankRLS's exact leave-query-out with sample_weight): the mean
        and sd over folds are weighted, each query counting w_q times, and
        the standard error divides by the root of the effective number of
        folds (Σw)² / Σw² (Kish).  None: every fold counts once.
    chosen : int
        The row the rule picks.
    best : int
        The row with the highest mean (the same as chosen under "best").
    """

    params: list
    columns: list
    values: np.ndarray
    folds: str
    rule: str = "best"
    validation: bool = False
    weights: np.ndarray | None = None
    chosen: int = dataclasses.field(init=False)
    best: int = dataclasses.field(init=False)

    def __post_init__(self):
        if self.rule not in RULES:
            raise UsageError(f"the selection rule must be best or 1se (got {self.rule!r})")
        C = [row["C"] for row in self.params]
        self.best = choose(self.mean[:, 0], self.se[:, 0], C, "best")
        self.chosen = choose(self.mean[:, 0], self.se[:, 0], C, self.rule)

    def _fold_weights(self):
        """Each fold's weight where its value is defined, 0 elsewhere: shape of values."""
        defined = np.isfinite(self.values)
        if self.weights is None:
            return defined.astype(np.float64)
        return np.where(defined, np.asarray(self.weights, dtype=np.float64)[None, :, None], 0.0)

    @property
    def count(self) -> np.ndarray:
        """Folds on which each row's column is defined ((Σw)²/Σw² of them when weighted)."""
        w = self._fold_weights()
        total, squares = w.sum(axis=1), (w * w).sum(axis=1)
        return np.divide(total * total, squares, out=np.zeros(total.shape), where=squares > 0)

    @property
    def mean(self) -> np.ndarray:
        """Mean over folds (weighted by ``weights``), shape (rows, columns)."""
        w = self._fold_weights()
        total, weight = np.sum(w * np.nan_to_num(self.values), axis=1), w.sum(axis=1)
        return np.divide(total, weight, out=np.full(total.shape, np.nan), where=weight > 0)

    @property
    def sd(self) -> np.ndarray:
        """Standard deviation over folds (ddof 1; weighted: Σw(v − mean)² / (Σw − Σw²/Σw)).

        nan with fewer than 2 (effective) folds.
        """
        w = self._fold_weights()
        deviation = np.where(w > 0, np.nan_to_num(self.values) - self.mean[:, None, :], 0.0)
        squares = np.sum(w * deviation * deviation, axis=1)
        total = w.sum(axis=1)
        dof = total - np.divide((w * w).sum(axis=1), total, out=np.zeros(total.shape),
                                where=total > 0)
        return np.divide(squares, dof, out=np.full(squares.shape, np.nan),
                         where=self.count > 1) ** 0.5

    @property
    def se(self) -> np.ndarray:
        """Standard error of the mean: sd / √(folds) (effective folds when weighted)."""
        return self.sd / np.sqrt(np.maximum(self.count, 1))

    @property
    def chosen_params(self) -> Any:
        return dict(self.params[self.chosen])

    def edge_note(self) -> str | None:
        """A note when the highest mean is at an end of a list of 3 or more C: the best C may
        lie beyond it.  (The 1se rule prefers the smallest C by design: no note then.)"""
        values = sorted({row["C"] for row in self.params})
        C = self.params[self.chosen]["C"]
        if self.rule != "best" or len(values) < 3 or C not in (values[0], values[-1]):
            return None
        end, side = ("smallest", "smaller") if C == values[0] else ("largest", "larger")
        return (f"the chosen C = {_param_text(C)} is the {end} of the list: a {side} C may do "
                f"better; extend the list beyond it")

    def rows(self) -> Any:
        """One dict per row: its params, then per column key its mean and key + "_sd"."""
        mean, sd = self.mean, self.sd
        out = []
        for i, params in enumerate(self.params):
            row = dict(params)
            for j, column in enumerate(self.columns):
                row[column.key] = float(mean[i, j])
                row[column.key + "_sd"] = float(sd[i, j])
            out.append(row)
        return out

    def format(self) -> Any:
        """The table as text: a header naming folds, metric and rule, one line per row."""
        metric = self.columns[0].label
        rule = ("highest mean" if self.rule == "best" else
                "one-standard-error rule: smallest C within one standard error of the best mean")
        if self.validation:
            lines = [f"Validation ({self.folds}): mean ± sd over its queries; "
                     f"chosen by {metric}, {rule}"]
        else:
            lines = [f"Cross-validation ({self.folds}): mean ± sd over folds; "
                     f"chosen by {metric}, {rule}"]
        names = list(self.params[0])
        cells = [[_param_text(row[name]) for name in names] for row in self.params]
        mean, sd = self.mean, self.sd
        for i in range(len(self.params)):
            for j, column in enumerate(self.columns):
                cells[i].append(f"{column.fmt.format(mean[i, j])} ± {column.fmt.format(sd[i, j])}")
        header = names + [column.label for column in self.columns]
        widths = [max(len(header[j]), *(len(row[j]) for row in cells)) for j in range(len(header))]
        lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths)).rstrip())
        for i, row in enumerate(cells):
            mark = ""
            if i == self.chosen:
                mark = "  <- chosen"
            elif i == self.best:
                mark = "  (highest mean)"
            lines.append("  ".join(c.rjust(w) for c, w in zip(row, widths)) + mark)
        return "\n".join(lines) + "\n"


def _param_text(value):
    return f"{value:g}" if isinstance(value, (float, int, np.floating, np.integer)) else str(value)


def choose(mean: ArrayLike, se: ArrayLike, C: ArrayLike, rule: str = "best") -> int:
    """Index of the row a rule picks from means and standard errors of a higher-is-better metric.

    "best": highest mean, ties to the smaller C.  "1se": the smallest C whose
    mean is ≥ best mean − best row's standard error (a nan error counts as 0),
    ties in C to the higher mean.

    Raises
    ------
    ValueError
        The metric is undefined (nan) on every row.
    """
    mean, se, C = np.asarray(mean, float), np.asarray(se, float), np.asarray(C, float)
    valid = np.flatnonzero(np.isfinite(mean))
    if not len(valid):
        raise ValueError("the cross-validation metric is undefined on every fold "
                         "(no held-out pair or no relevant document)")
    best = min(valid, key=lambda i: (-mean[i], C[i], i))
    if rule == "best":
        return int(best)
    margin = se[best] if np.isfinite(se[best]) else 0.0
    within = [i for i in valid if mean[i] >= mean[best] - margin]
    return int(min(within, key=lambda i: (C[i], -mean[i], i)))


# ----------------------------------------------------------- cross-validation

def parameter_path(name: str) -> list[str]:
    """A grid's parameter name as scikit-learn's set_params spells it: "base_learner__C" is C of
    the base learner, "kernel__gamma" gamma of the kernel (an attribute of an attribute)."""
    if "." in name:
        raise UsageError(f"grid parameter {name!r}: name nested parameters as scikit-learn's "
                         f"set_params does, {name.replace('.', '__')!r}")
    return name.split("__")


def grid_rows(grid: Any) -> Any:
    """The grid as a list of param dicts: a list of C, or a dict name → values (product, C last)."""
    if isinstance(grid, dict):
        names = sorted(grid, key=lambda name: parameter_path(name)[-1] == "C")  # C varies fastest
        values = [sorted(set(float(v) for v in grid[name])) for name in names]
        return [dict(zip(names, combo)) for combo in itertools.product(*values)]
    return [{"C": float(C)} for C in sorted(set(float(C) for C in grid))]


def cross_validate(estimator: Any, X: MatrixLike | TrainingData, y: VectorLike | None,
                   qid: VectorLike | None, grid: Any,
                   cv: Any = DEFAULT_FOLDS, metric: Any = DEFAULT_METRIC, rule: str = "best",
                   random_state: int = 0, convention: str = "letor", progress: Any = None,
                   sample_weight: VectorLike | None = None) -> CVResult:
    """Score every row of a grid on the same folds; the chosen row by the rule.

    Parameters
    ----------
    estimator : object with fit(X, y, qid) and predict(X)
        Copied (never fitted itself) and set to each row's parameters; a
        nested name ("kernel__gamma", "base_learner__C", as scikit-learn's
        set_params names them) sets an attribute of an attribute.  With
        ``fit_path(X, y, qid, Cs)`` the C values of one setting of the other
        parameters are trained along the path.
    X : array or sparse matrix, shape (n, d)
    y, qid : array, shape (n,)
    grid : list of float or dict
        A list of C, or a dict name → list of values (crossed; the name
        ending in "C" is the one the 1se rule regularises by).
    cv : int, "loqo" or splitter
        See the module docstring.
    metric : str or Metric
        ``ndcg@k``, ``map``, ``err@k`` or ``pairs``.
    rule : {"best", "1se"}
    random_state : int or None
        Seed of the fold shuffle.
    convention : {"letor", "standard"}
        NDCG convention (rankfast.metrics.ndcg).
    progress : callable(Progress), optional
        Called after every fold and row, with elapsed time and ETA.
    sample_weight : array-like, optional
        Query weights, per row (the same within a query) or per query
        (rankfast.data.validation.query_sample_weights), or per row weights
        that differ within a query for a learner that weighs documents
        (pair_weights: clicks; a held-out query then counts its mean weight
        over its preferred documents).  Each fold's model is fitted
        with its training rows' weights (``sample_weight=``: the learner
        normalises them over its training queries, as on a file of those
        queries), and each fold's value is the mean over its held-out queries
        with each query counting w_q times (pair accuracy: pairs pooled with
        those weights); the folds themselves count once each, as without
        weights.  So a weight of 2 gives the table of the data with that
        query twice, both copies in the same fold.  A ValidationSet's
        queries are not weighted (the weights are the training queries').

    Returns
    -------
    CVResult
    """
    metric = Metric.parse(metric, convention)
    if rule not in RULES:
        raise UsageError(f"the CV rule must be best or 1se (got {rule!r})")
    data = training_data(estimator, X, y, qid)
    if data is not None:
        X, y, qid = data.X, data.y, data.qid
    y, qid = np.asarray(y, dtype=np.float64), np.asarray(qid)
    weights = pair_weights(sample_weight, qid, y)
    weight = row_weights(weights.query, qid)          # each held-out query's weight
    fit_weight = weight if weights.document is None else \
        row_weights(weights.query, qid) * weights.document    # and its documents' (clicks)
    rows = grid_rows(grid)
    c_name = [name for name in rows[0] if parameter_path(name)[-1] == "C"]
    if not c_name:
        raise UsageError("the grid needs a C")
    c_name = c_name[0]
    for row in rows:               # each row's parameters once, before any fold fits them
        check_row(with_params(estimator, row))
    if isinstance(cv, ValidationSet):
        return _validate(estimator, X if data is None else data, y, qid, rows, c_name, cv, metric,
                         rule, progress, fit_weight)
    folds = make_folds(qid, cv, random_state, X, y)
    top = metrics.highest_grade(y)     # ERR's g_max, the same for every fold
    scored_sets = [(y[test], qid[test], None if weight is None else weight[test])
                for _, test in folds.splits]
    columns = table_columns(metric, scored_sets, top)
    values = np.full((len(rows), len(folds.splits), len(columns)), np.nan)
    total, done, start = len(rows) * len(folds.splits), 0, time.perf_counter()
    for f, (train, test) in enumerate(folds.splits):
        if weight is not None and not weight[train].sum() > 0:
            raise ValueError(f"cross-validation fold {f + 1} of {len(folds.splits)} trains on "
                             f"queries whose weights are all zero: weigh more queries, or use "
                             f"other folds")
        if data is None:
            X_train, X_test = _rows(X, train), _rows(X, test)
        else:                           # checked once: the folds are taken as they are
            X_train, X_test = data.subset(train), data.subset(test)
        held_out = None if weight is None else weight[test]
        for i, fitted in _fitted_rows(estimator, rows, c_name, X_train, y[train], qid[train],
                                      None if fit_weight is None else fit_weight[train]):
            scores = np.asarray(predicted(fitted, X_test, qid[test]), dtype=np.float64).ravel()
            values[i, f] = [column.evaluate(scores, y[test], qid[test], max_grade=top,
                                            weight=held_out)
                            for column in columns]
            done += 1
            if progress is not None:
                progress(Progress(done, total, f, len(folds.splits), _short(rows[i]),
                                  columns[0].label, values[i, f, 0], time.perf_counter() - start))
    return CVResult([_short(row) for row in rows], columns, values, folds.description, rule)




def _validate(estimator, X, y, qid, rows, c_name, valid, metric, rule, progress, weight=None):
    """cross_validate's table with a ValidationSet: every row trained on X, scored on valid per query.

    X: features, or a TrainingData (then y and qid are its own).
    """
    n_queries = query_index(valid.qid)[1]
    # valid's X is checked (ValidationSet): an estimator that takes a TrainingData scores it as is
    scored = TrainingData(valid.X, valid.y, valid.qid) if isinstance(X, TrainingData) else valid.X
    top = max(metrics.highest_grade(y), metrics.highest_grade(valid.y))
    columns = table_columns(metric, [(valid.y, valid.qid, None)], top)
    values = np.full((len(rows), n_queries, len(columns)), np.nan)
    start = time.perf_counter()
    for done, (i, fitted) in enumerate(_fitted_rows(estimator, rows, c_name, X, y, qid, weight),
                                       1):
        scores = np.asarray(predicted(fitted, scored, valid.qid), dtype=np.float64).ravel()
        values[i] = np.column_stack([column.evaluate(scores, valid.y, valid.qid, True, top)
                                     for column in columns])
        if progress is not None:
            progress(Progress(done, len(rows), None, 1, _short(rows[i]), columns[0].label,
                              _mean_over_folds(values[i, :, 0], valid.query_weights),
                              time.perf_counter() - start))     # the table's mean
    return CVResult([_short(row) for row in rows], columns, values,
                    f"{valid.name}, {n_queries} queries", rule, validation=True,
                    weights=valid.query_weights)


def _short(row):
    """Param names without their path ("kernel__gamma" → "gamma")."""
    return {parameter_path(name)[-1]: value for name, value in row.items()}


def _rows(X, index):
    return X[index] if issparse(X) else np.asarray(X)[index]


def training_data(estimator: Any, X: MatrixLike | TrainingData, y: VectorLike | None,
                  qid: VectorLike | None) -> TrainingData | None:
    """cross_validate's input, checked once, for an estimator that takes a TrainingData in fit.

    A TrainingData is taken as it is (each fold's fit gets its rows'
    sample_weight); X, y and qid are checked as the
    estimator's fit checks them (a shallow copy's, so that the estimator
    records nothing).  None for an estimator without Ranker._training_data:
    its fits get the folds' rows and check them.
    """
    if isinstance(X, TrainingData):
        return X
    if not hasattr(estimator, "_training_data"):
        return None
    return copy.copy(estimator)._training_data(X, y, qid, None)


def _fitted_rows(estimator, rows, c_name, X, y, qid, weight=None):
    """(row index, fitted estimator) for every row; C paths warm-started where the estimator can.

    X: features, or a TrainingData that fit and fit_path take as it is (y and
    qid its own).  ``weight`` (per row, or None) reaches fit and fit_path as
    ``sample_weight``.
    """
    weights = {} if weight is None else {"sample_weight": weight}
    checked = isinstance(X, TrainingData)       # the learners' private entries take it as it is

    def fit(learner):
        return learner._fit_checked(X, **weights) if checked else learner.fit(X, y, qid, **weights)

    def fit_path(learner, Cs):
        return (learner._fit_path_checked(X, Cs, **weights) if checked
                else learner.fit_path(X, y, qid, Cs, **weights))

    i = 0
    while i < len(rows):
        others = {name: v for name, v in rows[i].items() if name != c_name}
        j = i
        while j < len(rows) and all(rows[j][name] == v for name, v in others.items()):
            j += 1
        template = with_params(estimator, others)
        # a C path: a linear learner's own C, or a kernel learner's base learner's C from one
        # map of the documents (KernelApproxLearner.fit_path)
        if c_name in ("C", "base_learner__C") and hasattr(template, "fit_path"):
            yield from zip(range(i, j), fit_path(template, [rows[r][c_name] for r in range(i, j)]))
        else:
            for r in range(i, j):
                yield r, fit(with_params(template, {c_name: rows[r][c_name]}))
        i = j


def with_params(estimator: Any, params: dict[str, Any]) -> Any:
    """A deep copy of estimator with attributes set; "a__b" sets attribute b of attribute a."""
    copied = copy.deepcopy(estimator)
    for name, value in params.items():
        *path, last = parameter_path(name)
        target = copied
        for part in path:
            target = getattr(target, part)
        setattr(target, last, value)
    return copied


def fitted_linear(estimator: Any, C: float, used: np.ndarray, w: Vector) -> Any:
    """A shallow copy of a linear ranker fitted at C: weights w on 0-based columns ``used``."""
    fitted = copy.copy(estimator)
    fitted.C = fitted.C_ = C
    fitted.feature_ids_ = np.asarray(used, dtype=np.int64) + 1
    fitted.weights_ = w
    return fitted


def select_c(estimator: Any, X: MatrixLike | TrainingData, y: VectorLike | None,
             qid: VectorLike | None, grid: Any, log: Log = None, cv: Any = None,
             sample_weight: VectorLike | None = None) -> CVResult:
    """cross_validate over a C list with the estimator's own settings, progress sent to log.

    The settings are the estimator's ``cv`` (None: DEFAULT_FOLDS, or the
    ``cv`` argument), ``cv_metric``, ``cv_rule``, ``cv_convention`` and
    ``random_state``, with the defaults of cross_validate when it has none;
    ``sample_weight`` as cross_validate's.
    """
    if cv is None:
        cv = getattr(estimator, "cv", None)
    return cross_validate(estimator, X, y, qid, grid, DEFAULT_FOLDS if cv is None else cv,
                          **settings(estimator), progress=_log_progress(log),
                          sample_weight=sample_weight)


def cv_result_of(estimator: Any) -> Any:
    """The CVResult a fitted estimator (or the base learner of a kernel learner) holds, or None."""
    result = getattr(estimator, "cv_result_", None)
    if result is None and hasattr(estimator, "base_learner"):
        result = getattr(estimator.base_learner, "cv_result_", None)
    return result


def check_row(estimator: Any) -> None:
    """An estimator set to a grid row, its parameters checked as its fit checks them (the
    folds' fits take them as they are); one without check_parameters checks its own."""
    if hasattr(estimator, "check_parameters"):
        estimator.check_parameters()
        check_settings(estimator)


def check_settings(estimator: Any) -> None:
    """UsageError for cv, cv_metric, cv_rule or cv_convention values no grid could use.

    The learners call it even when C is one number (no cross-validation), so
    that a mistyped setting is not accepted silently.
    """
    cv, given = getattr(estimator, "cv", None), settings(estimator)
    Metric.parse(given["metric"], given["convention"])
    if given["rule"] not in RULES:
        raise UsageError(f"the CV rule must be best or 1se (got {given['rule']!r})")
    if cv is None or isinstance(cv, ValidationSet) or _given_splits(cv):
        return
    if isinstance(cv, str):
        if cv != "loqo":
            raise UsageError(f"folds must be a number of folds or loqo (got {cv!r})")
    elif isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
        raise UsageError(f"the number of folds must be an integer of at least 2 (got {cv!r})")


RULES = ("best", "1se")


def settings(estimator: Any) -> Any:
    """metric, rule, random_state and convention of an estimator's cv_* parameters."""
    return {"metric": getattr(estimator, "cv_metric", DEFAULT_METRIC),
            "rule": getattr(estimator, "cv_rule", "best"),
            "random_state": getattr(estimator, "random_state", 0),
            "convention": getattr(estimator, "cv_convention", "letor")}


PROGRESS_INTERVAL = 1.0     # seconds between the progress lines shown at -v 1


def _log_progress(log, interval=PROGRESS_INTERVAL):
    """A progress callback sending each Progress to log(text, level), rate-limited at level 1.

    The first step, the last one and any step at least ``interval`` seconds
    (by the steps' own elapsed times) after the last step sent at level 1 go
    at level 1 (rank_learn's -v 1); the others at level 2, so -v 1 prints
    about one line a second and -v 2 every line.
    """
    if log is None:
        return None
    shown = [None]

    def send(step):
        if shown[0] is None or step.elapsed - shown[0] >= interval or step.done == step.total:
            shown[0] = step.elapsed
            log(str(step), 1)
        else:
            log(str(step), 2)
    return send


def held_out_result(rows: list[dict[str, Any]], scores_by_row: Sequence[Vector], y: Vector,
                    qid: np.ndarray, metric: Metric, rule: str, folds: str,
                    extra: tuple[Column, Sequence[np.ndarray]] | None = None,
                    log: Log = None, weights: Vector | None = None) -> CVResult:
    """CVResult where every query is a fold, from each row's held-out scores of every document.

    ``extra`` (optional): (Column, per-row per-query values) appended as a
    last column, e.g. RankRLS's exact leave-query-out pair loss.  ``weights``
    (optional, one per query in order of first appearance): the queries'
    sample weights, which weigh the folds (CVResult.weights).
    """
    top = metrics.highest_grade(y)
    per_row = None if weights is None else np.asarray(weights)[query_index(qid)[0]]
    columns = table_columns(metric, [(y, qid, per_row)], top)
    per_query = []
    start, progress = time.perf_counter(), _log_progress(log)
    for i, scores in enumerate(scores_by_row):
        per_query.append(np.column_stack([column.evaluate(scores, y, qid, True, top)
                                          for column in columns]))
        if progress is not None:
            progress(Progress(i + 1, len(rows), None, 1, rows[i], columns[0].label,
                              _mean_over_folds(per_query[-1][:, 0], weights),
                              time.perf_counter() - start))
    values = np.array(per_query)
    if extra is not None:
        columns = columns + [extra[0]]
        values = np.concatenate((values, np.asarray(extra[1], dtype=np.float64)[:, :, None]), axis=2)
    return CVResult(list(rows), columns, values, folds, rule, weights=weights)


def _mean_over_folds(values, weights=None):
    """The mean of the defined values (nan: none), weighted as CVResult.mean is."""
    w = np.where(np.isfinite(values), 1.0 if weights is None else weights, 0.0)
    total = w.sum()
    return float(w @ np.nan_to_num(values) / total) if total > 0 else float("nan")
