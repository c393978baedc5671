"""rankfast.learners.svmrank (RankSVML1): the hinge kernel and QP against their twins and svm_rank."""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from program_runs import svm_rank_pval
from reference_impl import pairs_of_weighted as pairs_of
from scipy.optimize import minimize
from shared_paths import REFERENCE, require

import rankfast
from rankfast import RankSVML1
from rankfast._kernels import _hinge, _prsvm
from rankfast._kernels.threads import query_chunks
from rankfast.cli.learn import learn_main
from rankfast.data.validation import NoPairsWarning
from rankfast.learners._linear import query_weights
from rankfast.losses.hinge import HingeLoss


def test_svmrank_smoothing_reports_each_stage_at_the_default_verbosity():
    """On raw MovieLens svmrank ran past 300 s after 'OCAS stalled' without a line; each
    smoothing stage now prints one at level 1 (rank_learn's default), its Newton steps at 2."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 4)) * [1.0, 10.0, 100.0, 1000.0]
    y, qid = (X @ [1.0, 0.1, 0.01, 0.001] + rng.normal(size=300) > 0).astype(float), np.zeros(300)
    lines = []
    RankSVML1(C=1.0, solver="smoothing").fit(X, y, qid, log=lambda text, level: lines.append(
        (level, text)))
    stages = [text for level, text in lines if level == 1 and text.startswith("Smoothing ")]
    assert stages[0].startswith("Smoothing 0: the squared hinge's optimum")
    assert len(stages) >= 2
    assert any(level == 2 and "smoothing 1: Iter 1:" in text for level, text in lines)


def raw_click_like(seed, n=240, d=12, n_queries=4):
    """Few queries, one or more clicks each, features of scales 1e-3..1e8 with heavy tails:
    the data on which CG on the all-pairs bound needs hundreds of products a step."""
    rng = np.random.default_rng(seed)
    scales = 10.0 ** rng.uniform(-3, 8, d)
    X = np.abs(rng.standard_cauchy(size=(n, d))) * scales
    qid = np.repeat(np.arange(n_queries), n // n_queries)
    y = (rng.random(n) < 0.2).astype(float)
    y[::n // n_queries] = 1
    return X, y, qid


@pytest.mark.parametrize("doc_weights", [False, True])
def test_huber_hessian_formed_is_its_hessian_products(doc_weights):
    """I + XᵀAX formed from the score-space columns equals hessvec on every unit vector."""
    from rankfast.losses.hinge import HuberObjective
    from rankfast.losses.pair_preconditioner import PairPreconditioner
    from rankfast.losses.products import DataMatrix
    from rankfast.optimize.precondition import hessian_gram
    rng = np.random.default_rng(4)
    y, starts = random_queries(rng, 30, [0.0, 1.0, 2.0])
    X = rng.normal(size=(len(y), 5))
    weight = rng.uniform(0.5, 2.0, len(starts) - 1)
    doc_weight = rng.uniform(0.5, 3.0, len(y)) if doc_weights else None
    loss = HingeLoss(y, starts, weight, doc_weight=doc_weight)
    products = DataMatrix(X)
    preconditioner = PairPreconditioner(X, loss.starts, loss.rank, loss.bound_weight, 2.0,
                                        np.ones(5))
    for delta in (1.0, 0.3):
        objective = HuberObjective(products, loss, delta, preconditioner)
        objective.value_grad(rng.normal(size=5))
        by_products = np.column_stack([objective.hessvec(e) for e in np.eye(5)])
        formed = np.eye(5) + hessian_gram(X, objective._score_hessian, 2)
        np.testing.assert_allclose(formed, by_products, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_svmrank_forms_the_hessian_where_cg_works_hard_and_certifies_the_same_optimum(
        seed, monkeypatch):
    """On raw features of few queries the smoothing path forms the Hessian (CG needed more
    products than a formation costs); the optimum it certifies is the one CG alone certifies."""
    import rankfast.losses.hinge as hinge
    X, y, qid = raw_click_like(seed)
    fits = {}
    for cost in (hinge.FORMATION_PRODUCTS_PER_COLUMN, np.inf):
        monkeypatch.setattr(hinge, "FORMATION_PRODUCTS_PER_COLUMN", cost)
        lines = []
        model = RankSVML1(C=1.0, solver="smoothing").fit(
            X, y, qid, log=lambda text, level: lines.append(text))
        fits[cost] = (model.result_, sum("the Hessian at the next point" in t for t in lines))
    (formed, n_formed), (plain, n_plain) = fits.values()
    assert n_formed >= 1 and n_plain == 0
    for result in (formed, plain):
        assert result.converged and result.gap <= result.target
    assert abs(formed.f - plain.f) <= max(formed.gap, plain.gap)


def hinge_twin(scores, y, starts, weight):
    """L = Σ c_q max(0, 1 − s_i + s_j) over enumerated pairs, and the subgradient whose
    active pairs are those with s_j > s_i − 1 (the kernel's stated convention)."""
    loss, grad = 0.0, np.zeros(len(scores))
    for i, j, c in pairs_of(y, starts, weight):
        if scores[j] > scores[i] - 1.0:
            loss += c * (1.0 - scores[i] + scores[j])
            grad[i] -= c
            grad[j] += c
    return loss, grad


def random_queries(rng, n_queries, levels, max_size=9):
    """Query sizes 1..max_size (single-document queries included), labels from `levels`."""
    sizes = rng.integers(1, max_size + 1, size=n_queries)
    sizes[0] = 1
    starts = np.r_[0, np.cumsum(sizes)]
    y = rng.choice(levels, size=starts[-1]).astype(float)
    y[starts[1]:starts[2]] = levels[0]                    # a query with one label level
    return y, starts


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("loss", [1, 2])
def test_hinge_kernel_matches_pair_twin(seed, loss):
    rng = np.random.default_rng(seed)
    levels = [0.0, 1.0, 2.0, 3.0] if seed % 2 else [-0.7, 0.25, 0.3, 4.5, 9.0]
    y, starts = random_queries(rng, 40, np.array(levels))
    # scores on a grid of halves: ties in score and pairs at margin exactly 1
    scores = rng.integers(-4, 5, size=len(y)) * 0.5 if seed < 3 else rng.normal(size=len(y)) * 2
    weight = query_weights(y, starts, 0.7 + seed, loss)
    value, grad = HingeLoss(y, starts, weight)(scores)
    value_twin, grad_twin = hinge_twin(scores, y, starts, weight)
    assert value == pytest.approx(value_twin, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(grad, grad_twin, rtol=0, atol=1e-12)


@pytest.mark.parametrize("levels", [3, 200])
def test_hinge_kernel_on_long_queries_matches_pair_twin(levels):
    """Queries of up to 90 documents with score ties, and label trees both smaller than a
    query (the kernel clears them whole) and larger (cleared along the inserted paths)."""
    rng = np.random.default_rng(levels)
    y, starts = random_queries(rng, 6, np.arange(levels) * 0.5, max_size=90)
    scores = rng.integers(-6, 7, size=len(y)) * 0.5
    scores[starts[-2]:] = rng.normal(size=len(y) - starts[-2]) * 3
    weight = query_weights(y, starts, 1.3, 1)
    value, grad = HingeLoss(y, starts, weight)(scores)
    value_twin, grad_twin = hinge_twin(scores, y, starts, weight)
    assert value == pytest.approx(value_twin, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(grad, grad_twin, rtol=0, atol=1e-12)


def test_hinge_kernel_gives_the_same_bits_on_any_number_of_threads():
    rng = np.random.default_rng(4)
    y, starts = random_queries(rng, 300, np.array([0.0, 1.0, 2.0, 3.0]), max_size=40)
    scores = rng.normal(size=len(y)) * 2
    weight = query_weights(y, starts, 0.9, 1)
    results = []
    for n_threads in (1, 2, 3):
        loss = HingeLoss(y, starts, weight, n_threads=n_threads)
        loss.chunks = query_chunks(loss.starts, documents=100)    # many chunks on few documents
        results.append(loss(scores))
    value_twin, grad_twin = hinge_twin(scores, y, starts, weight)
    assert results[0][0] == pytest.approx(value_twin, rel=1e-12)
    np.testing.assert_allclose(results[0][1], grad_twin, rtol=0, atol=1e-12)
    for value, grad in results[1:]:
        assert value == results[0][0] and np.array_equal(grad, results[0][1])


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("grid", [False, True])
def test_two_label_levels_give_the_trees_bits(weighted, grid):
    """Labels of two levels take their own sweeps (three running sums, no trees): the same
    bits as the trees give, which the kernel still takes when told of a third, unused level."""
    rng = np.random.default_rng(12 + weighted + 2 * grid)
    y, starts = random_queries(rng, 200, np.array([0.0, 1.0]), max_size=60)
    scores = rng.integers(-4, 5, size=len(y)) * 0.5 if grid else rng.normal(size=len(y)) * 2
    rank = y.astype(np.int64)
    weight = rng.uniform(0.2, 3.0, size=len(starts) - 1)
    v = rng.uniform(0.5, 4.0, size=len(y)) if weighted else None
    order = np.empty(len(y), dtype=np.int64)
    _prsvm.sort_within_queries(scores, starts.astype(np.int64), order)
    results = []
    for n_levels in (2, 3):
        grad = np.empty(len(y))
        value = _hinge.hinge(scores, rank, starts.astype(np.int64), order, weight, n_levels, grad,
                             doc_weight=v)
        results.append((value, grad))
    assert results[0][0] == results[1][0]
    assert np.array_equal(results[0][1], results[1][1])
    if not weighted:
        value_twin, grad_twin = hinge_twin(scores, y, starts, weight)
        assert results[0][0] == pytest.approx(value_twin, rel=1e-12)
        np.testing.assert_allclose(results[0][1], grad_twin, rtol=0, atol=1e-12)


def test_model_is_the_same_for_any_number_of_threads(every_thread_counts):
    rng = np.random.default_rng(8)
    qid = np.repeat(np.arange(250), 40)                 # 10,000 documents: three query chunks
    X = rng.normal(size=(len(qid), 10))
    y = np.digitize(X @ rng.normal(size=10) + rng.normal(size=len(qid)), [-1, 0, 1]).astype(float)
    one, two = (RankSVML1(C=1.0, n_jobs=n).fit(X, y, qid) for n in (1, 2))
    assert one.result_.iterations > 2
    assert np.array_equal(one.weights_, two.weights_) and one.result_.f == two.result_.f


def test_hinge_subgradient_is_a_subgradient():
    """L(s + d) ≥ L(s) + gᵀd for random d: the kernel's g is a subgradient."""
    rng = np.random.default_rng(7)
    y, starts = random_queries(rng, 30, np.array([0.0, 1.0, 2.0]))
    loss = HingeLoss(y, starts, query_weights(y, starts, 2.0, 1))
    scores = rng.integers(-3, 4, size=len(y)) * 0.5
    value, grad = loss(scores)
    for _ in range(50):
        d = rng.normal(size=len(y)) * rng.choice([1e-3, 1.0])
        assert loss(scores + d)[0] >= value + grad @ d - 1e-9


def test_simplex_qp_reaches_the_scipy_optimum():
    rng = np.random.default_rng(3)
    for k in (1, 2, 7, 20):
        A = rng.normal(size=(k, 5))
        H, f = A @ A.T, rng.normal(size=k)
        alpha = np.zeros(k)
        alpha[0] = 1.0
        steps, gap = _hinge.simplex_qp(H, f, alpha, 1e-12, 100000)
        assert alpha.min() >= 0 and alpha.sum() == pytest.approx(1.0, abs=1e-12)

        def phi(a):
            return 0.5 * a @ H @ a - f @ a
        ref = minimize(phi, np.full(k, 1.0 / k), jac=lambda a: H @ a - f, method="SLSQP",
                       bounds=[(0, None)] * k, options={"ftol": 1e-15, "maxiter": 1000},
                       constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1.0}])
        assert gap <= 1e-12
        assert phi(alpha) <= phi(ref.x) + 1e-9
        assert phi(alpha) - gap <= phi(ref.x) + 1e-9


def qp_on_pairs(X, y, qid, C, loss):
    """The pair formulation min ½‖w‖² + Σ_p c_p max(0, 1 − wᵀ(x_i − x_j)) through its dual,
    max Σ β_p − ½‖Σ β_p (x_i − x_j)‖², 0 ≤ β_p ≤ c_p, by scipy's SLSQP.

    Returns (w, primal value at w, dual value): F* lies between the two values.
    """
    _, starts = np.unique(qid, return_index=True)
    starts = np.r_[starts, len(qid)]
    pairs = pairs_of(y, starts, query_weights(y, starts, C, loss))
    D = np.array([X[i] - X[j] for i, j, _ in pairs])
    c = np.array([cq for _, _, cq in pairs])

    def negative_dual(beta):
        v = D.T @ beta
        return 0.5 * v @ v - beta.sum(), D @ v - 1.0
    res = minimize(negative_dual, c / 2, jac=True, method="SLSQP",
                   bounds=[(0, cq) for cq in c], options={"ftol": 1e-15, "maxiter": 10000})
    w = D.T @ res.x
    primal = 0.5 * w @ w + c @ np.maximum(0.0, 1.0 - D @ w)
    return w, primal, -res.fun


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("loss", [1, 2])
@pytest.mark.parametrize("C", [0.1, 3.0, 100.0])
def test_optimum_matches_generic_qp(seed, loss, C):
    rng = np.random.default_rng(seed)
    qid = np.repeat([3, 5, 8], [4, 5, 3])
    X = rng.normal(size=(len(qid), 3))
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    w_ref, upper, lower = qp_on_pairs(X, y, qid, C, loss)
    assert upper - lower <= 1e-7 * max(1.0, upper)         # the generic solver converged
    est = RankSVML1(C=C, loss=loss, tol=1e-9).fit(X, y, qid)
    r = est.result_
    assert r.converged and r.gap <= r.target
    assert r.lower_bound <= upper + 1e-9                   # the certificate is a lower bound
    assert lower - 1e-9 <= r.f <= upper + r.gap + 1e-9
    # ½‖w − w*‖² ≤ F(w) − F* for this 1-strongly convex objective
    assert np.linalg.norm(est.weights_ - w_ref) <= np.sqrt(2 * r.gap) + np.sqrt(
        2 * max(upper - lower, 0.0)) + 1e-9


@pytest.mark.parametrize("C", [0.01, 1.0, 30.0])
def test_reported_objective_bounds_the_objective_at_the_model(C):
    """OCAS carries scores along (X(w + tΔ) as Xw + t XΔ) and pads F(w) by the drift's
    Lipschitz bound: the reported F is ≥ F evaluated from X w itself, and barely above."""
    rng = np.random.default_rng(2)
    qid = np.repeat(np.arange(60), 12)
    X = rng.normal(size=(len(qid), 6))
    y = rng.integers(0, 4, size=len(qid)).astype(float)
    est = RankSVML1(C=C, tol=1e-6).fit(X, y, qid)
    r = est.result_
    _, starts = np.unique(qid, return_index=True)
    loss = HingeLoss(y, np.r_[starts, len(qid)], query_weights(y, np.r_[starts, len(qid)], C, 1))
    exact = 0.5 * r.w @ r.w + loss(X @ r.w)[0]
    assert r.iterations > 1 and exact <= r.f <= exact + 1e-12 * max(1.0, exact)
    assert r.f - r.lower_bound == pytest.approx(r.gap) and r.gap <= r.target


def test_sparse_and_dense_input_give_the_same_model():
    rng = np.random.default_rng(11)
    qid = np.repeat(np.arange(20), 6)
    X = rng.normal(size=(len(qid), 8)) * (rng.random((len(qid), 8)) < 0.3)
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    a = RankSVML1(C=1.0, tol=1e-8).fit(X, y, qid)
    b = RankSVML1(C=1.0, tol=1e-8).fit(sp.csr_matrix(X), y, qid)
    assert a.result_.f == pytest.approx(b.result_.f, rel=1e-8)


def test_no_pairs_gives_zero_weights():
    X = np.eye(4)
    with pytest.warns(NoPairsWarning):
        est = RankSVML1(C=1.0).fit(X, np.ones(4), np.array([1, 1, 2, 2]))
    assert not np.any(est.weights_) and est.result_.gap == 0.0


EXAMPLE3 = [("c0.01", 0.01, 1), ("c1", 1.0, 1), ("c3", 3.0, 1), ("c20", 20.0, 1),
            ("c3_l2", 3.0, 2)]


@pytest.mark.parametrize("run,C,loss", EXAMPLE3)
def test_example3_agrees_with_svm_rank(run, C, loss, tmp_path):
    folder = require(REFERENCE / "example3")
    train = rankfast.load_svmlight(folder / "train.dat")
    theirs = rankfast.read_model(folder / f"model_{run}.dat")
    f_theirs = rankfast.objective(theirs, train, C, loss)
    assert f_theirs == pytest.approx(svm_rank_pval(folder / f"learn_{run}.stdout"), abs=1e-5)
    argv = ["-c", str(C), "-l", str(loss), "-a", "svmrank", str(folder / "train.dat"),
            str(tmp_path / "model.dat")]
    assert learn_main(argv) == 0
    ours = rankfast.read_model(tmp_path / "model.dat")
    est = RankSVML1(C=C, loss=loss).fit(train.X, train.y, train.qid)
    assert rankfast.objective(ours, train, C, loss) <= f_theirs + est.result_.target + 1e-6
    _check_weights(est, theirs, f_theirs)
    test = rankfast.load_svmlight(folder / "test.dat")
    assert np.array_equal(np.argsort(-ours.predict(test.X)), np.argsort(-theirs.predict(test.X)))


def _check_weights(est, theirs, f_theirs):
    """‖w − w'‖ ≤ √(2 gap) + √(2 (F(w') − lower bound)): both within their gaps of w*."""
    r = est.result_
    w = np.zeros(max(est.feature_ids_.max(), theirs.feature_ids.max()) + 1)
    v = w.copy()
    w[est.feature_ids_] = est.weights_
    v[theirs.feature_ids] = theirs.weights
    assert np.linalg.norm(w - v) <= (np.sqrt(2 * r.gap) + np.sqrt(2 * max(f_theirs - r.lower_bound, 0))
                                     + 1e-6)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_synthetic_sets_agree_with_svm_rank(kind):
    folder = require(REFERENCE / "synthetic")
    train = rankfast.load_svmlight(folder / f"{kind}_train.dat.gz")
    test = rankfast.load_svmlight(folder / f"{kind}_test.dat.gz")
    for C in (0.01, 1, 20):
        theirs = rankfast.read_model(folder / f"{kind}_c{C}.model")
        f_theirs = rankfast.objective(theirs, train, C)
        assert f_theirs == pytest.approx(svm_rank_pval(folder / f"{kind}_learn_c{C}.stdout"),
                                         abs=1e-4, rel=1e-6)
        est = RankSVML1(C=C).fit(train.X, train.y, train.qid)
        assert est.result_.converged
        assert est.result_.f <= f_theirs + est.result_.target
        _check_weights(est, theirs, f_theirs)
        recorded = float(re.search(r"Average loss on test set: ([0-9.]+)", (
            folder / f"{kind}_classify_c{C}.stdout").read_text()).group(1))
        ours = rankfast.metrics.swapped_fraction(est.predict(test.X), test.y, test.qid).mean()
        assert abs(ours - recorded) <= 0.005
