"""rankfast.learners.rankncg (RankNCG): the erfc objective, its gradients and the learner."""

import math

import numpy as np
import pytest
import reference_impl as reference
import scipy.sparse as sp
from data_makers import api_data, unscaled
from scipy.optimize import minimize

from rankfast import LinearModel, RankNCG, UsageError, metrics
from rankfast._kernels import _erfc
from rankfast.data.validation import NoPairsWarning
from rankfast.learners._linear import query_weights
from rankfast.losses.erfc import erfc_parameters
from rankfast.losses.erfc_pairs import KAPPA, ErfcPairObjective
from rankfast.optimize.ncg import certified_step


def ranking_data(rng, sizes, n_features=5, n_levels=3, noise=0.7, real_labels=False):
    """Contiguous queries: (X dense, labels, qid, starts)."""
    sizes = np.asarray(sizes)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features)) * rng.uniform(0.1, 10.0, size=n_features)
    w = rng.normal(size=n_features) / X.std(axis=0).clip(1e-12)
    latent = X @ w + noise * rng.normal(size=n)
    if real_labels:
        y = np.round(latent, 1)
    else:
        y = np.digitize(latent, np.quantile(latent, np.linspace(0, 1, n_levels + 1)[1:-1]))
    qid = np.repeat(np.arange(len(sizes)) * 7 + 3, sizes)
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return X, y.astype(np.float64), qid, starts


def objective(X, y, starts, C=1.0, loss=1, eps=1e-6, fast=True):
    weight = query_weights(y, starts, C, loss)
    return ErfcPairObjective(sp.csr_matrix(X), y, starts, weight, eps, fast), weight


def level_sums(z, y, starts, fast, eps=1e-6):
    ob = ErfcPairObjective(sp.csr_matrix(np.zeros((len(z), 1))), y, starts,
                           np.ones(len(starts) - 1), eps, fast)
    out = np.full(len(z), np.nan)
    w, h, coef, L, gap = erfc_parameters(eps).kernel_args()
    _erfc.other_level_sums(np.ascontiguousarray(z), ob.starts, ob.group_order, ob.group_starts,
                           ob.rank, fast, w, h, coef, L, gap, out)
    return out


@pytest.mark.parametrize("eps", [1e-3, 1e-6, 1e-10])
def test_other_level_sums_against_brute_force(eps):
    rng = np.random.default_rng(1)
    for real_labels in (False, True):
        sizes = [1, 2, 40, 7, 120, 1, 60]
        _, y, _, starts = ranking_data(rng, sizes, n_levels=4, real_labels=real_labels)
        y[starts[3]:starts[4]] = 2.0                 # a query with one level only
        z = rng.normal(size=len(y)) * rng.choice([0.1, 3.0, 50.0])
        exact = reference.other_level_sums_brute(z, y, starts)
        direct = level_sums(z, y, starts, fast=False)
        assert np.allclose(direct, exact, rtol=1e-13, atol=1e-12)
        fast = level_sums(z, y, starts, fast=True, eps=eps)
        m_query = np.repeat(np.diff(starts), np.diff(starts))
        m_level = np.array([np.sum(y[a:b] == y[i]) for a, b in zip(starts[:-1], starts[1:])
                            for i in range(a, b)])
        assert np.all(np.abs(fast - exact) <= eps * (m_query + m_level) + 1e-12)
        assert np.all(fast[starts[3]:starts[4]] == 0.0)


@pytest.mark.parametrize("loss", [1, 2])
def test_fast_and_direct_gradients_against_pairs(loss):
    rng = np.random.default_rng(2)
    X, y, _, starts = ranking_data(rng, [30, 1, 80, 45])
    for scale in (0.0, 0.05, 1.0):
        w = rng.normal(size=X.shape[1]) * scale
        weight = query_weights(y, starts, 3.0, loss)
        exact = reference.erfc_rank_gradient_pairs(X, y, starts, weight, w)
        ob_direct, _ = objective(X, y, starts, C=3.0, loss=loss, fast=False)
        assert np.allclose(ob_direct.point(w).g, exact, rtol=1e-11, atol=1e-11)
        ob_fast, _ = objective(X, y, starts, C=3.0, loss=loss, eps=1e-6)
        point = ob_fast.point(w)
        # score-space error within the certified per-document bound δ
        s = X @ w
        gamma_exact = ob_direct.score_gradient(s)
        assert np.all(np.abs(point.gamma - gamma_exact) <= ob_fast.delta)
        bound = np.abs(X).T @ ob_fast.delta
        assert np.all(np.abs(point.g - exact) <= bound + 1e-12)


def test_gradient_matches_finite_differences_of_the_exact_objective():
    rng = np.random.default_rng(3)
    X, y, _, starts = ranking_data(rng, [50, 35])
    ob, weight = objective(X, y, starts, C=2.0, eps=1e-10)
    w = rng.normal(size=X.shape[1]) * 0.1
    g = ob.point(w).g

    def f(v):
        return reference.erfc_rank_objective_pairs(X, y, starts, weight, v)

    step = 1e-5
    numeric = np.array([(f(w + step * e) - f(w - step * e)) / (2 * step)
                        for e in np.eye(len(w))])
    assert np.allclose(g, numeric, rtol=1e-6, atol=1e-6 * np.abs(numeric).max())


def test_erfc_loss_derivative_and_closeness_to_log_sigmoid():
    d = np.linspace(-30, 30, 20001)
    psi = reference.erfc_pair_loss(d)
    numeric = np.gradient(psi, d)
    assert np.allclose(numeric[1:-1], -0.5 * np.vectorize(math.erfc)(KAPPA * d[1:-1]), atol=1e-6)
    log_sigma = -np.logaddexp(0.0, -d)
    assert np.max(np.abs(psi + log_sigma)) < 0.031


class NoisyQuadraticLine:
    """φ(t) = a t + b t²/2 + c log(1 + e^{t}) with φ' reported within ±noise."""

    def __init__(self, a, b, c, noise, rng):
        self.a, self.b, self.c, self.noise, self.rng = a, b, c, noise, rng

    def phi(self, t):
        return self.a * t + 0.5 * self.b * t * t + self.c * np.logaddexp(0.0, t)

    def slope(self, t):
        exact = self.a + self.b * t + self.c / (1.0 + math.exp(-t))
        return exact + self.rng.uniform(-1, 1) * self.noise, self.noise

    def curvature_bounds(self):
        return self.b, self.b + 0.25 * self.c


@pytest.mark.parametrize("seed", range(20))
def test_certified_step_bound_holds(seed):
    rng = np.random.default_rng(seed)
    c = rng.uniform(0, 30)
    line = NoisyQuadraticLine(-c / 2 - rng.uniform(1, 50), rng.uniform(0.01, 2), c,
                              rng.choice([0.0, 1e-3, 0.3]), rng)
    slope0, error0 = line.slope(0.0)
    t, bound, trials = certified_step(line, slope0, error0, rng.uniform(0, 100))
    assert bound < 0 and t > 0 and 1 <= trials <= 10
    assert line.phi(t) - line.phi(0.0) <= bound + 1e-9 * abs(bound)


def fit(X, y, qid, **options):
    return RankNCG(**options).fit(sp.csr_matrix(X), y, qid)


@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
def test_fast_learner_reaches_the_direct_learners_wmw(C):
    rng = np.random.default_rng(4)
    X, y, qid, _ = ranking_data(rng, [150, 90, 200, 60])
    fast, direct = fit(X, y, qid, C=C), fit(X, y, qid, C=C, erfc="direct")
    assert fast.result_.converged and direct.result_.converged
    wmw_fast = metrics.pairwise_accuracy(X @ fast.weights_, y, qid)
    wmw_direct = metrics.pairwise_accuracy(X @ direct.weights_, y, qid)
    assert abs(wmw_fast - wmw_direct) <= 2e-3
    a, b = fast.weights_, direct.weights_
    cosine = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
    assert cosine > 0.9999


@pytest.mark.parametrize("loss", [1, 2])
@pytest.mark.parametrize("erfc", ["fast", "direct"])
def test_reaches_the_optimum_and_certified_decrease_is_true(loss, erfc):
    rng = np.random.default_rng(5)
    X, y, qid, starts = ranking_data(rng, [70, 40, 90], real_labels=(loss == 2))
    C = 5.0
    weight = query_weights(y, starts, C, loss)

    def f(w):
        return reference.erfc_rank_objective_pairs(X, y, starts, weight, w)

    def g(w):
        return reference.erfc_rank_gradient_pairs(X, y, starts, weight, w)

    best = minimize(f, np.zeros(X.shape[1]), jac=g, method="L-BFGS-B",
                    options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
    model = fit(X, y, qid, C=C, loss=loss, erfc=erfc, tol=1e-8)
    f0, f_model = f(np.zeros(X.shape[1])), f(model.weights_)
    assert model.result_.converged
    assert f_model - best.fun <= 1e-7 * abs(best.fun)
    assert 0 < model.result_.decrease <= f0 - f_model + 1e-9 * f0


def test_default_tolerance_is_close_to_optimal():
    rng = np.random.default_rng(6)
    X, y, qid, starts = ranking_data(rng, [300])
    loose, tight = fit(X, y, qid, C=1.0), fit(X, y, qid, C=1.0, tol=1e-9)
    weight = query_weights(y, starts, 1.0, 1)
    f_loose = reference.erfc_rank_objective_pairs(X, y, starts, weight, loose.weights_)
    f_tight = reference.erfc_rank_objective_pairs(X, y, starts, weight, tight.weights_)
    assert f_loose - f_tight <= 1e-4 * f_tight
    g0 = np.linalg.norm(reference.erfc_rank_gradient_pairs(X, y, starts, weight, np.zeros(5)))
    assert loose.result_.grad_norm <= 1e-3 * g0 * 1.0001


def test_c_and_loss_mapping():
    """-l 2 with C equals -l 1 with C / pairs when every query has as many pairs;
    and λ = Q / C: Q queries at C are one query's objective scaled (same minimiser)."""
    rng = np.random.default_rng(7)
    X, y, qid, starts = ranking_data(rng, [40, 40, 40])
    for q in range(3):                                 # identical label multisets
        y[starts[q]:starts[q + 1]] = np.sort(y[starts[q]:starts[q + 1]])
        y[starts[q]:starts[q + 1]] = np.repeat([0.0, 1.0, 2.0], [10, 15, 15])
    pairs = 10 * 15 + 10 * 15 + 15 * 15
    a = fit(X, y, qid, C=2.0 * pairs, loss=2, tol=1e-10, erfc="direct")
    b = fit(X, y, qid, C=2.0, loss=1, tol=1e-10, erfc="direct")
    assert np.allclose(a.weights_, b.weights_, rtol=1e-7, atol=1e-10)
    # λ = Q / C: the paper's maximiser of −(λ/2)‖w‖² − Σ_pairs ψ is the minimiser at C = Q / λ
    lam, ones = 0.75, np.ones(3)

    def paper(w):
        return (lam - 1) / 2 * (w @ w) + reference.erfc_rank_objective_pairs(X, y, starts, ones, w)

    def paper_gradient(w):
        return (lam - 1) * w + reference.erfc_rank_gradient_pairs(X, y, starts, ones, w)

    best = minimize(paper, np.zeros(5), jac=paper_gradient, method="L-BFGS-B",
                    options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 10000})
    c = fit(X, y, qid, C=3 / lam, tol=1e-10, erfc="direct")
    assert np.allclose(c.weights_, best.x, rtol=1e-6, atol=1e-9)


def test_deterministic():
    rng = np.random.default_rng(8)
    X, y, qid, _ = ranking_data(rng, [400, 300], real_labels=True)
    first, second = fit(X, y, qid, C=3.0), fit(X, y, qid, C=3.0)
    assert np.array_equal(first.weights_, second.weights_)
    assert first.result_.evaluations == second.result_.evaluations


def test_query_order_and_sparse_input_do_not_matter():
    rng = np.random.default_rng(9)
    X, y, qid, _ = ranking_data(rng, [60, 50, 70])
    perm = rng.permutation(len(y))                       # queries interleaved
    a = fit(X, y, qid, C=1.0, tol=1e-10)
    b = RankNCG(C=1.0, tol=1e-10).fit(X[perm], y[perm], qid[perm])
    assert np.allclose(a.weights_, b.weights_, rtol=1e-7, atol=1e-10)


def test_scaled_features_converge_too():
    """The diagonal preconditioner makes badly scaled features harmless."""
    rng = np.random.default_rng(10)
    X, y, qid, _ = ranking_data(rng, [500])
    X[:, 0] *= 1e4
    X[:, 1] *= 1e-4
    model = fit(X, y, qid, C=1.0, max_iter=200)
    assert model.result_.converged and model.result_.iterations < 100


def test_no_pairs_gives_zero_model():
    X = np.random.default_rng(11).normal(size=(20, 3))
    with pytest.warns(NoPairsWarning):
        model = fit(X, np.ones(20), np.repeat([1, 2], 10))
    assert model.result_.converged and np.array_equal(model.weights_, np.zeros(3))
    assert len(model.to_model(3, 20).feature_ids) == 0


def test_to_model_and_metadata():
    rng = np.random.default_rng(12)
    X, y, qid, _ = ranking_data(rng, [80, 60])
    X[:, 2] = 0.0                                          # an unused feature
    model = fit(X, y, qid, C=0.5, erfc_eps=1e-4)
    lm = model.to_model(n_features=5, n_documents=len(y))
    assert isinstance(lm, LinearModel)
    assert lm.metadata["algorithm"] == "rankncg" and lm.metadata["erfc"] == "fast"
    assert lm.metadata["erfc_eps"] == "0.0001" and lm.highest_feature_index == 6
    assert 3 not in lm.feature_ids
    scores = lm.predict(sp.csr_matrix(X))
    assert np.allclose(scores, model.decision_function(X), rtol=1e-6, atol=1e-6)
    assert "erfc_eps" not in fit(X, y, qid, erfc="direct").to_model(5).metadata


@pytest.mark.parametrize("options, flag", [
    ({"erfc": "exact"}, "'erfc' must"), ({"erfc_eps": 0.0}, "'erfc_eps' must"),
    ({"erfc_eps": 1.0}, "'erfc_eps' must"), ({"loss": 3}, "'loss' must"), ({"C": 0.0}, "^C must be"),
])
def test_rejects_bad_options(options, flag):
    learner = RankNCG(**options)                 # scikit-learn's rule: __init__ only stores
    assert learner.get_params()[next(iter(options))] == next(iter(options.values()))
    with pytest.raises(UsageError, match=flag):
        learner.fit([[1.0], [2.0]], [1, 0], [1, 1])


def test_log_lines():
    rng = np.random.default_rng(13)
    X, y, qid, _ = ranking_data(rng, [50])
    lines = []
    fit_model = RankNCG(C=1.0).fit(sp.csr_matrix(X), y, qid,
                                   log=lambda text, level=1: lines.append(text))
    assert lines[0].startswith("Iter 1:") and lines[-1].startswith("NCG: ")
    assert len([line for line in lines if line.startswith("Iter")]) == fit_model.result_.iterations


@pytest.mark.parametrize("eps", [1e-3, 1e-6])
def test_gradient_error_bounds_the_fast_gradients_error(eps):
    rng = np.random.default_rng(11)
    X, y, qid, starts = ranking_data(rng, [400, 3, 150])
    ob, weight = objective(X, y, starts, C=3.0, eps=eps)
    for _ in range(5):
        w = rng.normal(size=X.shape[1]) * 0.3
        exact = reference.erfc_rank_gradient_pairs(X, y, starts, weight, w)
        assert np.linalg.norm(ob.point(w).g - exact) <= np.linalg.norm(ob.gradient_error())
        assert np.all(np.abs(ob.point(w).g - exact) <= ob.gradient_error())


def test_tolerance_finer_than_the_erfc_sums_stops_at_their_accuracy():
    # The gradient cannot be resolved below the erfc sums' error: the search used to
    # creep on with certified but negligible steps until the iteration limit.
    rng = np.random.default_rng(12)
    X, y, qid, starts = ranking_data(rng, [1500], noise=0.3)
    model = fit(X, y, qid, C=10.0, tol=1e-14, erfc_eps=1e-3)
    result = model.result_
    ob, weight = objective(X, y, starts, C=10.0, eps=1e-3)
    assert result.converged and "accuracy" in result.message
    assert result.iterations < 100
    g0 = np.linalg.norm(reference.erfc_rank_gradient_pairs(X, y, starts, weight, np.zeros(5)))
    exact = reference.erfc_rank_gradient_pairs(X, y, starts, weight, model.weights_)
    assert np.linalg.norm(exact) <= 1e-14 * g0 + 2 * np.linalg.norm(ob.gradient_error())


def test_progress_lines_and_summary_report_the_figure_the_stopping_rule_tests():
    """Every iteration line and the final line give ‖∇F‖_P / ‖∇F(0)‖_P (they gave the plain
    norm per iteration and the P-norm at the end, 2.3e5 beside 0.023 on raw features)."""
    import re
    rng = np.random.default_rng(8)
    X, y, qid, _ = ranking_data(rng, [120, 80])
    X = X * np.array([1e-3, 1.0, 1e4, 10.0, 1e6])              # raw-like scales
    lines = []
    model = RankNCG(C=1.0, tol=1e-3).fit(X, y, qid, log=lambda text, level: lines.append(text))
    result = model.result_
    iterations = [float(m.group(1)) for m in (re.search(r"relative gradient ([0-9.e+-]+) step", t)
                                              for t in lines) if m]
    assert len(iterations) == result.iterations > 1
    assert iterations[-1] == float(f"{result.relative_grad:.3g}") and result.relative_grad <= 1e-3
    assert all(value > 1e-3 for value in iterations[:-1])       # the rule stopped at the first
    assert f"relative gradient {result.relative_grad:.3g} " in lines[-1] and lines[-1] == result.summary()


def test_a_last_step_that_meets_the_tolerance_is_converged_at_the_iteration_limit():
    """max_iter equal to the iterations needed: the last step's point is tested too (it was
    reported 'iteration limit reached', with a NotConvergedWarning, at relative gradient
    below -e)."""
    import warnings
    rng = np.random.default_rng(8)
    X, y, qid, _ = ranking_data(rng, [100, 100])
    needed = RankNCG(C=1.0).fit(X, y, qid).result_.iterations
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        at_limit = RankNCG(C=1.0, max_iter=needed).fit(X, y, qid).result_
    assert at_limit.converged and at_limit.iterations == needed and at_limit.relative_grad <= 1e-3
    short = RankNCG(C=1.0, max_iter=needed - 1)
    with pytest.warns(Warning, match="iteration"):
        short.fit(X, y, qid)
    assert not short.result_.converged


def test_rankncg_messages_name_the_parameters():
    from rankfast import RankNCG, UsageError
    X, y, qid = api_data()
    for kwargs, says in (({"erfc": "x"}, "'erfc' must be"),
                         ({"erfc_eps": "x"}, "'erfc_eps' must lie in (0, 1)"),
                         ({"loss": 3}, "'loss' must be 1 or 2")):
        with pytest.raises(UsageError, match=says.replace("(", r"\(").replace(")", r"\)")):
            RankNCG(**kwargs).fit(X, y, qid)


def test_rankncg_refines_its_erfc_sums_rather_than_stop_on_them():
    """On raw features ∇F cancels below the fast sums' error bound: they are refined."""
    X, y, qid = unscaled(one_ranking=False, seed=5)
    model = RankNCG(C=10.0, erfc_eps=1e-3).fit(X, y, qid)
    assert model.result_.message == "gradient norm below tolerance"
