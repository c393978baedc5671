"""rankfast.losses.pair_preconditioner: the pair Gram preconditioners, and what they do on raw
(unscaled) features, MSLR's included."""

import numpy as np
import pytest
import scipy.sparse as sp
from data_makers import unscaled
from fit_helpers import fitted_on_mslr as fitted
from reference_impl import erfc_rank_objective_pairs

from rankfast import RankNCG, RankSVM, RankSVML1
from rankfast.data.sparse import as_csr
from rankfast.learners._linear import query_weights, training_arrays
from rankfast.losses import pair_preconditioner
from rankfast.losses.pair_preconditioner import PairPreconditioner, full_is_cheap, pair_gram
from rankfast.losses.products import DataMatrix, pair_square_sums
from rankfast.optimize.precondition import DiagonalPreconditioner, FullPreconditioner

GRID = [1e-3, 1.0, 1e3]


SCALES = 10.0 ** np.array([-3.0, -1.0, 0.0, 2.0, 4.0, 6.0, 7.0, 8.0])


def pairs_gram(X, starts, rank, weight):
    """Σ_q c_q Σ_{l, k of q, rank_l > rank_k} (x_l − x_k)(x_l − x_k)ᵀ, pair by pair."""
    d = X.shape[1]
    total = np.zeros((d, d))
    for q in range(len(starts) - 1):
        for l in range(starts[q], starts[q + 1]):
            for k in range(starts[q], starts[q + 1]):
                if rank[l] > rank[k]:
                    diff = X[l] - X[k]
                    total += weight[q] * np.outer(diff, diff)
    return total


def queries(seed, sizes, d=5, levels=3, scales=None):
    rng = np.random.default_rng(seed)
    n = int(sum(sizes))
    X = rng.normal(size=(n, d)) * (1.0 if scales is None else scales)
    X[rng.random(size=X.shape) < 0.3] = 0.0                          # sparse-ish, and ties
    rank = rng.integers(0, levels, size=n).astype(np.int64)
    starts = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    weight = rng.uniform(0.5, 2.0, size=len(sizes))
    return X, starts, rank, weight


CASES = {
    "mixed sizes": dict(sizes=[1, 7, 3, 12, 1, 5]),
    "single-document queries": dict(sizes=[1, 1, 1, 1]),
    "one level": dict(sizes=[6, 4], levels=1),
    "one ranking": dict(sizes=[40]),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_pair_gram_is_the_pairs_sum(case, sparse, monkeypatch):
    monkeypatch.setattr(pair_preconditioner, "BLOCK_VALUES", 25)  # 5 rows: queries together, or in pieces
    X, starts, rank, weight = queries(1, **case)
    expected = pairs_gram(X, starts, rank, weight)
    A = as_csr(sp.csr_matrix(X)) if sparse else X
    gram = pair_gram(A, starts, rank, weight)
    scale = len(X) ** 2 * np.abs(X).max() ** 2 * weight.max()       # rounding's unit
    np.testing.assert_allclose(gram, expected, rtol=1e-12, atol=1e-14 * scale)
    assert np.array_equal(gram, gram.T)
    np.testing.assert_allclose(np.diag(gram), pair_square_sums(DataMatrix(X), starts, rank, weight),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_group_sums_are_add_at_bit_for_bit(case, n_threads):
    """The dense pair sums' row sums by query and by level: np.add.at's bits, with no copy of X."""
    from rankfast._kernels import _products
    X, starts, rank, weight = queries(3, **case, scales=SCALES[:5])
    query = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    order = np.lexsort((rank, query)).astype(np.int64)
    keys = np.stack([query[order], rank[order]])
    bounds = np.flatnonzero((np.diff(keys, axis=1) != 0).any(axis=0)) + 1
    group_starts = np.r_[0, bounds, len(X)].astype(np.int64)
    group_of = np.empty(len(X), dtype=np.int64)
    group_of[order] = np.repeat(np.arange(len(group_starts) - 1), np.diff(group_starts))
    for rows, begins, labels in ((np.arange(len(X), dtype=np.int64), starts, query),
                                 (order, group_starts, group_of)):
        expected = np.zeros((len(begins) - 1, X.shape[1]))
        np.add.at(expected, labels, X)
        sums = np.full_like(expected, np.nan)
        _products.dense_group_sums(X, rows, begins, sums, n_threads)
        np.testing.assert_array_equal(sums, expected)


def test_pair_gram_keeps_its_accuracy_on_raw_scales():
    """Centring per query: columns of 1e8 with a spread of 1 inside each query lose nothing."""
    X, starts, rank, weight = queries(2, [8, 9, 10])
    X[:, 0] += 1e8
    expected = pairs_gram(X - 1e8 * (np.arange(X.shape[1]) == 0), starts, rank, weight)
    np.testing.assert_allclose(pair_gram(X, starts, rank, weight)[0, 0], expected[0, 0],
                               rtol=1e-7)


def test_full_preconditioner_inverts_identity_plus_scaled_gram():
    X, starts, rank, weight = queries(3, [10, 12, 9], scales=10.0 ** np.arange(-2, 3))
    gram = pairs_gram(X, starts, rank, weight)
    apply = FullPreconditioner(gram.copy(), 0.7)
    M = np.eye(len(gram)) + 0.7 * gram
    v = np.random.default_rng(0).normal(size=len(gram))
    np.testing.assert_allclose(M @ apply(v), v, rtol=1e-9, atol=1e-9 * np.abs(v).max())
    assert apply.shift == 0.0


def test_full_preconditioner_stays_positive_definite_when_rounding_breaks_cholesky():
    """Two columns equal up to 1e-13 at a scale of 1e8: M is singular in rounding; a shift
    makes it factor, and what is applied is still symmetric positive definite."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=30)
    X = 1e8 * np.column_stack([x, x * (1 + 1e-13), rng.normal(size=30) * 1e-8])
    starts = np.array([0, 30])
    rank = rng.integers(0, 2, size=30).astype(np.int64)
    apply = FullPreconditioner(pair_gram(X, starts, rank, np.array([1.0])), 1.0)
    P = np.column_stack([apply(e) for e in np.eye(3)])
    assert np.all(np.isfinite(P))
    np.testing.assert_allclose(P, P.T, rtol=1e-6, atol=1e-30)
    assert np.all(np.linalg.eigvalsh(0.5 * (P + P.T)) > 0.0)


def test_pair_preconditioner_starts_diagonal_and_strengthens_only_when_cheap():
    X, starts, rank, weight = queries(5, [20, 30, 25])
    diagonal = 1.0 + 2.0 * pair_square_sums(DataMatrix(X), starts, rank, weight)
    v = np.arange(1.0, 6.0)
    auto = PairPreconditioner(X, starts, rank, weight, 2.0, diagonal)
    assert auto.kind == "diagonal"
    np.testing.assert_allclose(auto(v), v / diagonal)
    assert auto.strengthen() and auto.kind == "full" and not auto.strengthen()
    M = np.eye(5) + 2.0 * pairs_gram(X, starts, rank, weight)
    np.testing.assert_allclose(M @ auto(v), v, rtol=1e-9)
    never = PairPreconditioner(X, starts, rank, weight, 2.0, diagonal, kind="diagonal")
    assert not never.strengthen() and never.kind == "diagonal"
    assert PairPreconditioner(X, starts, rank, weight, 2.0, diagonal, kind="full").kind == "full"
    wide = np.zeros((3, 400))                      # d² = 160,000 > nnz: M costs more than X v
    wide[:, :3] = X[:3, :3]
    assert not full_is_cheap(400, 9)
    assert not PairPreconditioner(wide, np.array([0, 3]), rank[:3], weight[:1], 2.0,
                                  np.ones(400)).strengthen()
    with pytest.raises(ValueError, match="'auto', 'full' or 'diagonal'"):
        PairPreconditioner(X, starts, rank, weight, 2.0, diagonal, kind="cholesky")
    assert isinstance(DiagonalPreconditioner(diagonal)(v), np.ndarray)


def objective(learner, model, data):
    if learner in ("prsvm", "svmrank"):
        return model.result_.f
    X, y, starts, used = training_arrays(data.features, data.y, data.qid)
    w = model.coef_[used]
    weight = query_weights(y, starts, model.C_, 1)
    if learner == "rankncg":
        return erfc_rank_objective_pairs(X, y, starts, weight, w)
    r = y - np.asarray(X @ w).ravel()
    total = sum(weight[q] * (len(part) * (part @ part) - part.sum() ** 2)
                for q, part in enumerate(np.split(r, starts[1:-1])))
    return 0.5 * (w @ w) + total


@pytest.mark.parametrize("learner", ["prsvm", "rankncg", "svmrank", "rankrls"])
def test_default_stop_is_within_1e_3_of_a_tight_solve_on_raw_mslr(mslr, learner):
    train, _ = mslr
    for C in GRID:
        model = fitted(learner, C, train, tight=False)
        f = objective(learner, model, train)
        if learner == "svmrank":          # certified by its own dual bound D ≤ F*
            assert model.result_.converged, (C, model.result_)
            assert model.result_.gap <= 1e-3 * model.result_.lower_bound, (C, model.result_)
            if C != 1.0:                  # a tight solve besides at one C (seconds each)
                continue
        best = objective(learner, fitted(learner, C, train, tight=True), train)
        if learner == "svmrank":
            best = min(best, f)
        assert f >= best * (1 - 1e-9), (C, f, best)
        assert (f - best) / best <= 1e-3, (learner, C, f, best)


def test_the_hessian_preconditioner_is_what_makes_raw_mslr_fast(mslr, monkeypatch):
    """The same fits with the diagonal alone: many times the iterations, a worse objective."""
    train, _ = mslr
    strong = RankNCG(C=1.0).fit(train.features, train.y, train.qid).result_
    newton = RankSVM(C=1.0).fit(train.features, train.y, train.qid).result_
    monkeypatch.setattr(pair_preconditioner, "FULL_MAX", 0)
    weak = RankNCG(C=1.0).fit(train.features, train.y, train.qid).result_
    weak_newton = RankSVM(C=1.0).fit(train.features, train.y, train.qid).result_
    assert weak.iterations > 4 * strong.iterations, (weak.iterations, strong.iterations)
    assert strong.decrease > weak.decrease
    assert weak_newton.cg_iterations > 3 * newton.cg_iterations
    assert newton.f <= weak_newton.f * (1 + 1e-4)


@pytest.mark.parametrize("make", [lambda j: RankSVM(C=1.0, n_jobs=j), lambda j: RankNCG(C=1.0, n_jobs=j),
                                  lambda j: RankSVML1(C=0.01, n_jobs=j)],
                         ids=["prsvm", "rankncg", "svmrank"])
def test_the_hessian_preconditioned_paths_give_the_same_bits_for_any_thread_count(
        mslr, make, every_thread_counts):
    train, _ = mslr
    models = [make(j).fit(train.features, train.y, train.qid) for j in (1, 2, 3)]
    for model in models[1:]:
        assert model.weights_.tobytes() == models[0].weights_.tobytes()


@pytest.mark.parametrize("learner", ["prsvm", "rankncg"])
def test_iterations_do_not_grow_when_features_are_rescaled(learner):
    """Jacobi preconditioning: columns rescaled by 1e-3..1e6 cost at most ~2x the work."""
    X, y, qid = unscaled(one_ranking=False, seed=1)
    X = X / SCALES                                             # well scaled
    rescale = 10.0 ** np.linspace(-3, 6, X.shape[1])
    work = []
    for data in (X, X * rescale):
        if learner == "prsvm":
            result = RankSVM(C=1.0).fit(data, y, qid).result_
            work.append(result.cg_iterations + result.iterations)
        else:
            work.append(RankNCG(C=1.0).fit(data, y, qid).result_.evaluations)
    assert work[1] <= 2 * work[0] + 5, work
