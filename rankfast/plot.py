"""Pictures of what model selection chose: the CV curve, greedy's selection, RankRLS's path.

matplotlib (the extra ``rankfast[plot]``) is imported inside the functions,
through its object-oriented interface (matplotlib.figure.Figure, no pyplot):
no window and no global state, so they work headless and in notebooks
(a Figure displays itself there).  Each drawing function takes an optional
Axes and returns the Axes it drew on.

* cv_curve: the selection metric's mean ± one standard error over folds
  (sd / √folds, the one the 1se rule uses) against C (log axis), one curve
  per value of any other parameter (a kernel's gamma), the chosen C marked
  by a line in the legend (an artist with gid "chosen"; the row with the
  highest mean, where the 1se rule chose another, with gid "best"); the
  title names the learner when it is given.
* greedy_path: greedy RankRLS's leave-query-out error against the number of
  selected features, each point labelled with the feature id it added.
* regularisation_path: RankRLS's weights against C (``weights_by_C_``),
  the chosen C marked.
"""
from __future__ import annotations

import os

import numpy as np

from .errors import MissingDependencyError, UsageError

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

FORMATS = {".png": "png", ".svg": "svg"}


def _figure_class():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingDependencyError("plotting needs matplotlib: pip install rankfast[plot]") from None
    return Figure


def require_matplotlib() -> None:
    """MissingDependencyError (with the pip command) unless matplotlib can be imported."""
    _figure_class()


def plot_format(path: str) -> Any:
    """"png" or "svg" from the file name's suffix; UsageError for any other."""
    suffix = os.path.splitext(str(path))[1].lower()
    if suffix not in FORMATS:
        raise UsageError(f"the plot file must end in .png or .svg (got {path!r})")
    return FORMATS[suffix]


def _axes(ax):
    if ax is not None:
        return ax
    return _figure_class()(figsize=(6.4, 4.4)).add_subplot()


def learner_title(learner: Any) -> Any:
    """A learner's name for a title: "RankRLS", "RankSVM (prsvm) on Nyström features", ...

    ``learner`` is a fitted or unfitted estimator (its ``name``) or a string.
    """
    from .learners import registry
    titles: dict[Any, str] = {entry.name: entry.title for entry in registry.learners()}
    if isinstance(learner, str):
        return titles.get(learner, learner)
    title = titles.get(getattr(learner, "name", None), type(learner).__name__)
    inner = getattr(learner, "estimator", learner)        # a GridSearch's estimator
    approx = getattr(inner, "approx", None)
    if approx is not None and hasattr(inner, "base_learner"):
        title += " on " + ("Nyström" if approx == "nystrom" else "random Fourier") + " features"
    return title


def cv_curve(result: Any, ax: Any = None, learner: Any = None) -> Any:
    """The CV curve of a rankfast.model_selection.CVResult: metric mean ± standard error against C.

    The error bars are one standard error of the mean (sd / √folds), the
    distance the 1se rule allows; the legend names the chosen C's line and
    the rule.  ``learner`` (an estimator or a name), when given, is named in
    the title.
    """
    ax = _axes(ax)
    mean, se = result.mean[:, 0], result.se[:, 0]
    C = np.array([row["C"] for row in result.params])
    others = [name for name in result.params[0] if name != "C"]
    keys = [tuple(row[name] for name in others) for row in result.params]
    for key in dict.fromkeys(keys):
        rows = [i for i, k in enumerate(keys) if k == key]
        label = ", ".join(f"{name} = {value:g}" for name, value in zip(others, key))
        ax.errorbar(C[rows], mean[rows], yerr=np.nan_to_num(se[rows]), marker="o", capsize=3,
                    label=label or "mean ± standard error")
    chosen = result.chosen
    rule = "highest mean" if result.rule == "best" else "1se rule"
    chosen_text = ", ".join(f"{k} = {v:g}" for k, v in result.params[chosen].items())
    ax.axvline(C[chosen], color="0.4", linestyle="--", linewidth=1,
               label=f"chosen: {chosen_text} ({rule})")
    ax.plot([C[chosen]], [mean[chosen]], marker="*", markersize=16, color="crimson",
            linestyle="none", gid="chosen")
    if result.best != chosen:
        ax.plot([C[result.best]], [mean[result.best]], marker="s", markersize=9, color="0.2",
                fillstyle="none", linestyle="none", gid="best", label="highest mean")
        ax.axhline(mean[result.best] - result.se[result.best, 0], color="0.6", linestyle=":",
                   linewidth=1, label="best − 1 standard error")
    ax.set_xscale("log")
    ax.set_xlabel("C")
    over, title = ("its queries", "Validation") if result.validation else ("folds", "Cross-validation")
    ax.set_ylabel(f"{result.columns[0].label}, mean ± standard error over {over}", fontsize=8)
    name = "" if learner is None else learner_title(learner) + " — "
    ax.set_title(f"{name}{title}: {result.folds}", fontsize=9)
    ax.legend(fontsize=8)
    return ax


def greedy_path(learner: Any, ax: Any = None) -> Any:
    """Greedy RankRLS's LQO error (lqo_errors_) against the number of features, with their ids."""
    ax = _axes(ax)
    errors = np.concatenate(([learner.lqo_error_start_], learner.lqo_errors_))
    steps = np.arange(len(errors))
    ax.plot(steps, errors, marker="o", gid="lqo_errors")
    for step, feature in enumerate(learner.selected_, start=1):
        ax.annotate(str(int(feature)), (step, errors[step]), textcoords="offset points",
                    xytext=(0, 6), ha="center", fontsize=7)
    ax.set_xlabel("number of selected features (labels: the feature each step added)")
    ax.set_ylabel("leave-query-out error (mean pair loss per query)")
    ax.set_title(f"Greedy RankRLS: {len(learner.selected_)} features selected", fontsize=9)
    return ax


def regularisation_path(learner: Any, ax: Any = None, label_top: int = 8) -> Any:
    """RankRLS's weights (weights_by_C_) against C, the chosen C marked; the largest labelled."""
    ax = _axes(ax)
    C = np.array([row["C"] for row in learner.cv_table_])
    W = np.asarray(learner.weights_by_C_)
    largest = np.argsort(-np.abs(W).max(axis=0))[:label_top]
    for j in range(W.shape[1]):
        ax.plot(C, W[:, j], linewidth=1,
                label=f"feature {int(learner.feature_ids_[j])}" if j in largest else None)
    ax.axvline(learner.C_, color="crimson", linestyle="--", linewidth=1, gid="chosen",
               label=f"chosen: C = {learner.C_:g}")
    ax.set_xscale("log")
    ax.set_xlabel("C")
    ax.set_ylabel("weight")
    ax.set_title("RankRLS regularisation path", fontsize=9)
    ax.legend(fontsize=7)
    return ax


def selection_figure(learner: Any) -> Any:
    """A Figure with every picture of what ``learner`` (fitted) chose, one panel each.

    Panels: the CV curve (a learner with a cross-validation table), RankRLS's
    regularisation path (weights_by_C_), greedy's selection (lqo_errors_).

    Raises
    ------
    ValueError
        The learner chose nothing that can be drawn (no C list, not greedy).
    """
    from .model_selection import cv_result_of
    result = cv_result_of(learner)
    panels = []
    if result is not None:
        panels.append(lambda ax: cv_curve(result, ax, learner))
    if getattr(learner, "weights_by_C_", None) is not None:
        panels.append(lambda ax: regularisation_path(learner, ax))
    if getattr(learner, "lqo_errors_", None) is not None:
        panels.append(lambda ax: greedy_path(learner, ax))
    if not panels:
        raise ValueError("nothing to plot: no cross-validation (a list of C) and no greedy selection")
    figure = _figure_class()(figsize=(6.4, 4.4 * len(panels)), layout="constrained")
    for i, draw in enumerate(panels, start=1):
        draw(figure.add_subplot(len(panels), 1, i))
    return figure


def save(figure: Any, path: str) -> None:
    """Write figure to path as PNG or SVG (by its suffix), atomically (rankfast.io.files)."""
    from .io.files import atomic_output
    kind = plot_format(path)
    with atomic_output(path, "wb") as out:
        figure.savefig(out, format=kind, dpi=100)
