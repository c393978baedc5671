"""rankfast.plot rendered headless (matplotlib's Agg and SVG backends) to files, and --plot."""

import numpy as np
import pytest
from program_runs import check_figure_file as check_file

from rankfast import GreedyRankRLS, RankRLS, RankSVM, plot


def make_data(seed=0, Q=12, m=12, d=5):
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(Q), m)
    X = rng.normal(size=(Q * m, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=Q * m) > 0).astype(float) + (X[:, 0] > 1)
    return X, y, qid


def chosen_x(ax):
    """x of the artist the plot marks as chosen (gid "chosen")."""
    marks = [line for line in ax.get_lines() if line.get_gid() == "chosen"]
    assert len(marks) == 1
    return np.unique(marks[0].get_xdata())


@pytest.mark.usefixtures("needs_matplotlib")
@pytest.mark.parametrize("kind", ["png", "svg"])
def test_cv_curve_marks_the_chosen_c(tmp_path, kind):
    X, y, qid = make_data()
    model = RankSVM(C=[0.001, 0.1, 10.0], cv=3, cv_rule="1se").fit(X, y, qid)
    ax = plot.cv_curve(model.cv_result_)
    assert chosen_x(ax) == [model.C_]
    assert ax.get_xscale() == "log" and "NDCG@10 (LETOR)" in ax.get_ylabel()
    result = model.cv_result_
    errorbars = ax.containers[0]
    np.testing.assert_allclose(errorbars.lines[0].get_ydata(), result.mean[:, 0])
    path = tmp_path / f"cv.{kind}"
    plot.save(ax.figure, path)
    data = check_file(path, kind)
    if kind == "svg":
        assert b'id="chosen"' in data


@pytest.mark.usefixtures("needs_matplotlib")
def test_greedy_path_labels_the_features(tmp_path):
    X, y, qid = make_data(1)
    model = GreedyRankRLS(C=1.0, k=3).fit(X, y, qid)
    ax = plot.greedy_path(model)
    assert [text.get_text() for text in ax.texts] == [str(i) for i in model.selected_]
    line = [line for line in ax.get_lines() if line.get_gid() == "lqo_errors"][0]
    np.testing.assert_allclose(line.get_ydata(), np.r_[model.lqo_error_start_, model.lqo_errors_])
    np.testing.assert_array_equal(line.get_xdata(), np.arange(4))
    plot.save(ax.figure, tmp_path / "greedy.png")
    check_file(tmp_path / "greedy.png", "png")


@pytest.mark.usefixtures("needs_matplotlib")
def test_regularisation_path_and_the_selection_figure(tmp_path):
    X, y, qid = make_data(2)
    model = RankRLS(C=[0.01, 1.0, 100.0]).fit(X, y, qid)
    ax = plot.regularisation_path(model)
    path_lines = [line for line in ax.get_lines() if line.get_gid() != "chosen"]
    assert len(path_lines) == model.weights_by_C_.shape[1]
    np.testing.assert_allclose(path_lines[0].get_ydata(), model.weights_by_C_[:, 0])
    assert chosen_x(ax) == [model.C_]
    figure = plot.selection_figure(model)
    assert len(figure.axes) == 2                              # the CV curve and the path
    plot.save(figure, tmp_path / "rls.svg")
    check_file(tmp_path / "rls.svg", "svg")
    with pytest.raises(ValueError, match="nothing to plot"):
        plot.selection_figure(RankSVM(C=1.0).fit(X, y, qid))


@pytest.mark.usefixtures("needs_matplotlib")
def test_cv_curve_draws_one_curve_per_gamma_and_the_1se_marks():
    from rankfast.model_selection import CVResult, Metric
    params = [{"gamma": g, "C": C} for g in (0.1, 1.0) for C in (0.1, 1.0, 10.0)]
    values = np.array([[[0.60], [0.62]], [[0.70], [0.74]], [[0.71], [0.75]],
                       [[0.50], [0.52]], [[0.66], [0.70]], [[0.69], [0.71]]])
    result = CVResult(params, [Metric("map")], values, "2 folds", "1se")
    ax = plot.cv_curve(result)
    assert len(ax.containers) == 2
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"gamma = 0.1", "gamma = 1", "chosen: gamma = 0.1, C = 1 (1se rule)"} <= set(legend)
    assert chosen_x(ax) == [1.0]                              # 0.72 ≥ 0.73 − se 0.02
    best = [line for line in ax.get_lines() if line.get_gid() == "best"]
    assert len(best) == 1 and list(best[0].get_xdata()) == [10.0]


@pytest.mark.usefixtures("needs_matplotlib")
def test_cv_curve_error_bars_are_the_standard_error_the_1se_rule_uses():
    X, y, qid = make_data()
    model = RankSVM(C=[0.001, 0.1, 10.0], cv=3, cv_rule="1se").fit(X, y, qid)
    result = model.cv_result_
    ax = plot.cv_curve(result, learner=model)
    bars = ax.containers[0].lines[2][0].get_segments()         # one vertical segment per C
    half_heights = [(segment[1, 1] - segment[0, 1]) / 2 for segment in bars]
    np.testing.assert_allclose(half_heights, result.se[:, 0])
    np.testing.assert_allclose(result.se[:, 0], result.sd[:, 0] / np.sqrt(3))
    assert "mean ± standard error over folds" in ax.get_ylabel()
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "mean ± standard error" in legend
    assert f"chosen: C = {model.C_:g} (1se rule)" in legend


@pytest.mark.usefixtures("needs_matplotlib")
def test_cv_curve_legend_holds_the_chosen_line():
    X, y, qid = make_data(3)
    model = RankSVM(C=[0.01, 1.0, 100.0], cv=3).fit(X, y, qid)
    ax = plot.cv_curve(model.cv_result_)
    label = f"chosen: C = {model.C_:g} (highest mean)"
    assert label in [text.get_text() for text in ax.get_legend().get_texts()]
    vertical = [line for line in ax.get_lines() if line.get_label() == label]
    assert len(vertical) == 1 and vertical[0].get_linestyle() == "--"    # a line, not a marker
    assert list(np.unique(vertical[0].get_xdata())) == [model.C_]
    assert ax.get_title().startswith("Cross-validation: 3 folds")    # no learner given


@pytest.mark.usefixtures("needs_matplotlib")
@pytest.mark.parametrize("learner, title", [
    (RankSVM(C=[0.1, 1.0], cv=3), "RankSVM (prsvm)"),
    (RankRLS(C=[0.1, 1.0]), "RankRLS"),
])
def test_the_selection_figure_names_the_learner(learner, title):
    X, y, qid = make_data(4)
    figure = plot.selection_figure(learner.fit(X, y, qid))
    assert figure.axes[0].get_title().startswith(f"{title} — ")


def test_learner_titles():
    from rankfast import KernelApproxLearner, RankNCG, RankSVML1
    from rankfast.model_selection import GridSearch
    assert plot.learner_title(RankNCG()) == "RankNCG"
    assert plot.learner_title(GreedyRankRLS()) == "Greedy RankRLS"
    assert plot.learner_title("svmrank") == "svm_rank's L1-hinge RankSVM (svmrank)"
    svmrank = plot.learner_title("svmrank")
    assert plot.learner_title(GridSearch(RankSVML1(), {"C": [1.0]})) == svmrank
    assert plot.learner_title(KernelApproxLearner(approx="rff")) == \
        "RankSVM (prsvm) on random Fourier features"
    assert plot.learner_title(GridSearch(KernelApproxLearner(), {"base_learner__C": [1.0]})) == \
        "RankSVM (prsvm) on Nyström features"
