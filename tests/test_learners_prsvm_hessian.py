"""The Hessian formed whole for a kernel map's features: its columns against the one-vector
kernel (bit for bit) and the enumerated pairs, and the Newton solves it preconditions."""
import numpy as np
import pytest
from reference_impl import squared_hinge_hessvec_pairs
from test_learners_prsvm import CASES, IDS, kernel_inputs

from rankfast import KernelApproxLearner, KernelParams, RankSVM
from rankfast._kernels import _prsvm
from rankfast.losses.squared_hinge import SquaredHingeObjective
from rankfast.optimize.newton import minimize
from rankfast.optimize.precondition import HESSIAN_COLUMNS, hessian_gram


def hessian_columns(scores, labels, starts, weight, D, doc_weight=None, n_threads=1):
    rank, order, n_levels = kernel_inputs(scores, labels, starts)
    out = np.full(D.shape, np.nan)
    _prsvm.squared_hinge_hessian_columns(scores, rank, starts, order, weight, n_levels, D, out,
                                         n_threads, doc_weight=doc_weight)
    return out


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "doc-weights"])
@pytest.mark.parametrize("name, scores, labels, starts, weight", CASES, ids=IDS)
def test_columns_are_the_one_vector_products(name, scores, labels, starts, weight, weighted):
    rng = np.random.default_rng(len(scores))
    doc_weight = rng.uniform(0.1, 3.0, len(scores)) if weighted else None
    D = rng.normal(size=(len(scores), 37))          # one full block of 32 columns and a part
    out = hessian_columns(scores, labels, starts, weight, D, doc_weight, n_threads=2)
    rank, order, n_levels = kernel_inputs(scores, labels, starts)
    for c in range(D.shape[1]):
        column = np.empty(len(scores))
        _prsvm.squared_hinge_hessvec(scores, rank, starts, order, weight, n_levels,
                                     np.ascontiguousarray(D[:, c]), column, doc_weight=doc_weight)
        np.testing.assert_array_equal(out[:, c], column)
        np.testing.assert_allclose(
            out[:, c], squared_hinge_hessvec_pairs(scores, labels, starts, weight, D[:, c],
                                                   doc_weight), rtol=1e-10, atol=1e-10)


def test_columns_refuse_mismatched_shapes():
    scores, labels, starts, weight = CASES[0][1:]
    rank, order, n_levels = kernel_inputs(scores, labels, starts)
    D = np.zeros((len(scores), 3))
    with pytest.raises(ValueError, match="one row per document"):
        _prsvm.squared_hinge_hessian_columns(scores, rank, starts, order, weight, n_levels, D,
                                             np.zeros((len(scores), 2)))


def test_gram_is_the_pairs_hessian():
    """XᵀAX = Σ_q c_q Σ_active 2 v_i (x_i − x_j)(x_i − x_j)ᵀ, over more than one block of columns."""
    rng = np.random.default_rng(7)
    name, scores, labels, starts, weight = CASES[IDS.index("mixed-single")]
    X = rng.normal(size=(len(scores), HESSIAN_COLUMNS + 5))
    doc_weight = rng.uniform(0.5, 2.0, len(scores))
    rank, order, n_levels = kernel_inputs(scores, labels, starts)

    def score_hessian(D, out, n_threads):
        _prsvm.squared_hinge_hessian_columns(scores, rank, starts, order, weight, n_levels, D, out,
                                             n_threads, doc_weight=doc_weight)

    brute = np.zeros((X.shape[1], X.shape[1]))
    for q in range(len(starts) - 1):
        for i in range(starts[q], starts[q + 1]):
            for j in range(starts[q], starts[q + 1]):
                if labels[i] > labels[j] and scores[j] > scores[i] - 1.0:
                    diff = X[i] - X[j]
                    brute += 2.0 * weight[q] * doc_weight[i] * np.outer(diff, diff)
    gram = hessian_gram(X, score_hessian)
    np.testing.assert_allclose(gram, brute, rtol=1e-10, atol=1e-9)
    np.testing.assert_array_equal(gram, gram.T)
    wide = rng.normal(size=(len(scores), 3 * HESSIAN_COLUMNS + 1))    # four blocks on threads
    np.testing.assert_array_equal(hessian_gram(wide, score_hessian, 2),
                                  hessian_gram(wide, score_hessian, 1))


def mapped_ranking(seed=3, n=1500):
    """One non-linear ranking through a Nyström map: (features, labels, starts, weight)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * [1.0, 10.0, 0.1, 3.0]
    target = np.sin(X[:, 0]) + np.abs(X[:, 1]) / 10 + X[:, 2] * X[:, 3]
    y = np.searchsorted(np.quantile(target, [1 / 3, 2 / 3]), target).astype(np.float64)
    from rankfast import NystroemMap
    features = NystroemMap(KernelParams(2, gamma="auto"), 300, 0).fit(X / X.std(axis=0))
    return features.transform(X / X.std(axis=0)), y, np.array([0, n], dtype=np.int64), \
        np.array([10.0])


@pytest.mark.parametrize("n_threads", [1, 2])
def test_hessian_preconditioner_reaches_the_same_optimum_in_fewer_products(n_threads):
    Phi, y, starts, weight = mapped_ranking()
    results = {}
    for kind in ("auto", "hessian"):
        objective = SquaredHingeObjective(Phi, y, starts, weight, n_threads, kind)
        results[kind] = minimize(objective, np.zeros(Phi.shape[1]), tol=1e-6)
    auto, hessian = results["auto"], results["hessian"]
    assert auto.converged and hessian.converged
    assert hessian.f == pytest.approx(auto.f, rel=1e-6)
    assert hessian.cg_iterations < auto.cg_iterations / 2, (hessian.cg_iterations,
                                                            auto.cg_iterations)


def test_hessian_preconditioner_is_the_same_at_any_thread_count():
    Phi, y, starts, weight = mapped_ranking(seed=5)
    ws = [minimize(SquaredHingeObjective(Phi, y, starts, weight, threads, "hessian"),
                   np.zeros(Phi.shape[1])).w for threads in (1, 2)]
    np.testing.assert_array_equal(ws[0], ws[1])


def test_sparse_features_fall_back_to_the_bound():
    import scipy.sparse as sp
    Phi, y, starts, weight = mapped_ranking(n=300)
    objective = SquaredHingeObjective(sp.csr_matrix(Phi), y, starts, weight, 1, "hessian")
    assert not objective.exact_hessian


def test_kernel_learner_solves_with_the_hessian_and_linear_stays_on_the_bound():
    learner = KernelApproxLearner(RankSVM(C=1.0), KernelParams(2, gamma="auto"))
    assert learner._base().solver_preconditioner == "hessian"
    assert RankSVM().solver_preconditioner == "auto"
    assert learner.base_learner.solver_preconditioner == "auto"     # the user's is not changed
