"""rankfast.learners.rankrls (RankRLS): closed form, leave-query-out, the compiled kernels
against numpy, the same bits on any threads."""

import numpy as np
import pytest
import reference_impl as _reference
import scipy.sparse as sp
from data_makers import bits, row_weights
from data_makers import uneven_queries as make_data
from data_makers import weighted_queries as data

from rankfast import GreedyRankRLS, RankRLS, UsageError, metrics, read_model, write_model
from rankfast._kernels import _rankrls
from rankfast._kernels.threads import query_chunks
from rankfast.data.validation import query_sample_weights
from rankfast.learners import rankrls
from rankfast.learners.rankrls import centred, query_scale
from rankfast.model_selection import Metric

THREADS = (1, 2, 3)


CS = [0.03, 0.3, 3.0]


M = "ndcg@5"            # the queries have 7 documents: LETOR's NDCG@10 is 0 for each


def test_centre_of_float32_data_is_that_of_float64():
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 40, size=60)
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(starts[-1])
    X = (rng.normal(size=(n, 9)) * 1e3).astype(np.float32)
    scale = rng.random(len(sizes)) + 0.5
    chunks = np.array([0, 7, 30, 60], np.int64)
    expected = np.empty((n, 9))
    _rankrls.centre(X.astype(np.float64), starts, scale, expected)
    means = np.repeat(np.add.reduceat(X.astype(np.float64), starts[:-1]) / sizes[:, None], sizes, 0)
    np.testing.assert_allclose(expected, (X - means) * np.repeat(scale, sizes)[:, None],
                               rtol=1e-9, atol=1e-9)
    for t in THREADS:
        out = np.empty((n, 9))
        _rankrls.centre(X, starts, scale, out, chunks, t)
        assert bits(out) == bits(expected)


def explicit_laplacian(qid, loss):
    """L = blockdiag(β_q (m_q I − 11ᵀ)) in the rows' own order (β_q = 1 or 1/pairs)."""
    qid = np.asarray(qid)
    L = np.zeros((len(qid), len(qid)))
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        m = len(rows)
        beta = 1.0 if loss == 1 else (2.0 / (m * (m - 1)) if m > 1 else 0.0)
        L[np.ix_(rows, rows)] = beta * (m * np.eye(m) - np.ones((m, m)))
    return L


def full_weights(model, d):
    w = np.zeros(d)
    w[model.feature_ids_ - 1] = model.weights_
    return w


def n_queries(qid):
    return len(np.unique(qid))


@pytest.mark.parametrize("loss", [1, 2])
@pytest.mark.parametrize("C", [0.05, 1.0, 40.0])
def test_closed_form(loss, C):
    """w = (XᵀLX + λI)⁻¹ XᵀLy with λ = Q / (2C), L built densely."""
    X, y, qid = make_data(1)
    L = explicit_laplacian(qid, loss)
    lam = n_queries(qid) / (2.0 * C)
    expected = np.linalg.solve(X.T @ L @ X + lam * np.eye(X.shape[1]), X.T @ L @ y)
    got = full_weights(RankRLS(C=C, loss=loss, solver="dense").fit(X, y, qid), X.shape[1])
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("loss", [1, 2])
def test_pair_enumeration_twin(loss):
    """The objective of the docstring, minimised over explicitly enumerated pairs."""
    X, y, qid = make_data(2, levels=5)
    got = full_weights(RankRLS(C=0.7, loss=loss).fit(X, y, qid), X.shape[1])
    np.testing.assert_allclose(got, _reference.rankrls_pairs(X, y, qid, 0.7, loss),
                               rtol=1e-8, atol=1e-12)


def test_more_features_than_documents_and_sparse_input():
    X, y, qid = make_data(3, sizes=(4, 1, 6, 3), d=30)
    dense = RankRLS(C=2.0).fit(X, y, qid)
    from_sparse = RankRLS(C=2.0).fit(sp.csr_matrix(X), y, qid)
    np.testing.assert_array_equal(dense.feature_ids_, from_sparse.feature_ids_)
    np.testing.assert_allclose(dense.weights_, from_sparse.weights_, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(full_weights(dense, 30),
                               _reference.rankrls_pairs(X, y, qid, 2.0), rtol=1e-8, atol=1e-12)
    assert 30 not in dense.feature_ids_                        # the all-zero column


@pytest.mark.parametrize("loss", [1, 2])
def test_cg_equals_dense_solve_on_sparse_data(loss):
    """The CG path on a sparse matrix (never densified) against the dense closed form."""
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 15, size=25)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    X = sp.random(len(qid), 300, density=0.03, format="csr", random_state=5)
    y = rng.integers(0, 3, size=len(qid)).astype(np.float64)
    cg = RankRLS(C=3.0, loss=loss, solver="cg", tol=1e-12).fit(X, y, qid)
    assert cg.solver_ == "cg" and cg.residual_ <= 1e-12
    L = explicit_laplacian(qid, loss)
    Xd = X.toarray()
    lam = len(sizes) / 6.0
    expected = np.linalg.solve(Xd.T @ L @ Xd + lam * np.eye(300), Xd.T @ L @ y)
    np.testing.assert_allclose(full_weights(cg, 300), expected, rtol=1e-8, atol=1e-10)


def test_auto_solver_choice():
    X, y, qid = make_data(5)
    assert RankRLS().fit(X, y, qid).solver_ == "dense"
    wide = sp.random(40, 5000, density=0.05, format="csr", random_state=1)   # ~4000 used
    model = RankRLS().fit(wide, np.arange(40) % 3, np.repeat(np.arange(8), 5))
    assert model.solver_ == "cg"
    with pytest.raises(UsageError, match="dense solver"):
        RankRLS(C=[1, 2]).fit(wide, np.arange(40) % 3, np.repeat(np.arange(8), 5))


@pytest.mark.parametrize("loss", [1, 2])
def test_many_c_equals_separate_fits(loss):
    X, y, qid = make_data(6, d=8)
    grid = [10.0, 0.01, 0.3, 3.0, 100.0]
    path = RankRLS(C=grid, loss=loss).fit(X, y, qid)
    assert [row["C"] for row in path.cv_table_] == sorted(grid)
    assert path.weights_by_C_.shape == (len(grid), 7) and not np.any(path.weights_by_C_[:, 1])
    for row, w in zip(path.cv_table_, path.weights_by_C_):
        single = RankRLS(C=row["C"], loss=loss).fit(X, y, qid)
        np.testing.assert_allclose(w, single.weights_, rtol=1e-8, atol=1e-12)
    chosen = path.cv_table_[[row["C"] for row in path.cv_table_].index(path.C_)]
    assert chosen["ndcg@10"] == max(row["ndcg@10"] for row in path.cv_table_)
    np.testing.assert_allclose(path.weights_, RankRLS(C=path.C_, loss=loss).fit(X, y, qid).weights_,
                               rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("loss", [1, 2])
@pytest.mark.parametrize("d", [4, 20])                  # d < query sizes (d × d form) and d > n
def test_lqo_equals_retraining(loss, d):
    X, y, qid = make_data(7, sizes=(1, 5, 2, 12, 3, 1, 11, 4, 9), d=d, levels=4)
    grid = [0.02, 0.5, 20.0]
    lines = []
    path = RankRLS(C=grid, loss=loss, cv_convention="standard").fit(
        X, y, qid, log=lambda text, level: lines.append(text))
    for row in path.cv_table_:
        scores, losses = _reference.rankrls_lqo_retrain(X, y, qid, row["C"], loss)
        assert row["loss"] == pytest.approx(losses.mean(), rel=1e-8)
        assert row["ndcg@10"] == pytest.approx(
            metrics.ndcg(scores, y, qid, k=10, convention="standard"), rel=1e-12)
    assert len(lines) == 1 + len(grid)                         # a progress line per C
    assert all(f"CV {i}/{len(grid)}: all queries" in line for i, line in enumerate(lines[1:], 1))


def test_lqo_large_query_uses_the_d_by_d_form():
    """Queries bigger than d take the other exact branch; both must agree with retraining."""
    X, y, qid = make_data(8, sizes=(30, 2, 25, 1, 7), d=5)
    path = RankRLS(C=[0.1, 5.0]).fit(X, y, qid)
    for row in path.cv_table_:
        _, losses = _reference.rankrls_lqo_retrain(X, y, qid, row["C"], 1)
        assert row["loss"] == pytest.approx(losses.mean(), rel=1e-8)


def test_lqo_fallback_when_cholesky_fails(monkeypatch):
    """A block the kernel reports as not SPD (nan) is redone by the d × d form, still exact."""
    import rankfast.learners.rankrls as rankrls
    real = _rankrls.lqo_blocks

    def failing_first(Z, sroot, e, starts, queries, p, work, n_threads):
        failed = real(Z, sroot, e, starts, queries, p, work, n_threads)
        p[starts[queries[0]]:starts[queries[0] + 1]] = np.nan
        return failed + 1

    monkeypatch.setattr(rankrls._rankrls, "lqo_blocks", failing_first)
    X, y, qid = make_data(21, d=15)
    path = RankRLS(C=[0.2, 4.0]).fit(X, y, qid)
    for row in path.cv_table_:
        _, losses = _reference.rankrls_lqo_retrain(X, y, qid, row["C"], 1)
        assert row["loss"] == pytest.approx(losses.mean(), rel=1e-8)


@pytest.mark.parametrize("sparse", [False, True])
def test_c_path_the_same_bits_on_any_threads(sparse, every_thread_counts):
    """Weights and LQO table of a C list (X̂V by row blocks, the small queries' blocks on
    threads): the same bits for 1, 2 and 3 threads; uneven and one-document queries."""
    rng = np.random.default_rng(29)
    sizes = rng.integers(1, 30, size=120)
    sizes[:3] = 1
    qid = np.repeat(np.arange(len(sizes)), sizes)
    X = rng.normal(size=(len(qid), 12))
    X[rng.random(X.shape) < 0.3] = 0.0
    X[:, 4] = 1.0                                                # constant: weight 0
    y = np.floor(X[:, 0] + rng.normal(size=len(qid)))
    X = sp.csr_matrix(X) if sparse else X
    fits = [RankRLS(C=[0.1, 1.0, 10.0], n_jobs=t).fit(X, y, qid) for t in (1, 2, 3)]
    for fit in fits[1:]:
        np.testing.assert_array_equal(fit.weights_by_C_, fits[0].weights_by_C_)
        assert fit.cv_table_ == fits[0].cv_table_
    assert np.all(fits[0].weights_by_C_[:, 4] == 0.0)


@pytest.mark.parametrize("learner", ["rankrls", "greedy"])
def test_dense_and_sparse_fits_the_same_bits_on_any_threads(learner, monkeypatch,
                                                            every_thread_counts):
    """Single C: weights (so model files) identical for n_jobs 1, 2, 3 and for dense and sparse
    X, on uneven queries with one-document ones, X̂ᵀX̂ over several row blocks and panels."""
    monkeypatch.setattr(rankrls, "GRAM_BLOCK_ROWS", 97)
    monkeypatch.setattr(rankrls, "GRAM_PANEL", 5)
    monkeypatch.setattr(rankrls, "query_chunks", lambda starts: query_chunks(starts, 60))
    rng = np.random.default_rng(37)
    sizes = rng.integers(1, 25, size=90)
    sizes[::7] = 1
    qid = np.repeat(np.arange(len(sizes)), sizes)
    X = np.round(rng.normal(size=(len(qid), 13)), 2)
    X[rng.random(X.shape) < 0.5] = 0.0
    y = np.floor(X[:, 0] - X[:, 3] + rng.normal(size=len(qid)))
    make = (lambda j: RankRLS(C=0.5, n_jobs=j)) if learner == "rankrls" else \
        (lambda j: GreedyRankRLS(C=0.5, k=5, n_jobs=j))
    fits = [make(j).fit(data, y, qid) for data in (X, sp.csr_matrix(X)) for j in (1, 2, 3)]
    for fit in fits[1:]:
        np.testing.assert_array_equal(fit.feature_ids_, fits[0].feature_ids_)
        np.testing.assert_array_equal(fit.weights_, fits[0].weights_)
    reference = make(1)
    monkeypatch.undo()                                   # one block, one panel, one chunk each
    np.testing.assert_allclose(reference.fit(X, y, qid).weights_, fits[0].weights_, rtol=1e-10)


def test_times_equals_numpy():
    rng = np.random.default_rng(31)
    X, V = rng.normal(size=(1001, 6)), rng.normal(size=(6, 6))
    for n_threads in (1, 3):
        out = np.full((1001, 6), np.nan)
        _rankrls.times(X, V, out, 100, n_threads)
        np.testing.assert_allclose(out, X @ V, rtol=1e-12, atol=1e-12)


def test_centring_matches_the_laplacian():
    X, y, qid = make_data(9, shuffle=False)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(qid)) + 1, [len(qid)]))
    for loss in (1, 2):
        Xh = centred(X, starts, query_scale(starts, loss))
        np.testing.assert_allclose(Xh.T @ Xh, X.T @ explicit_laplacian(qid, loss) @ X,
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(Xh, centred(sp.csr_matrix(X), starts,
                                                  query_scale(starts, loss)))
        assert np.all(Xh[:, 1] == 0.0)                  # constant feature: exactly zero


def test_csr_centring_equals_dense_centring_bit_for_bit():
    """centre_csr: int32 and int64 indices, unsorted and duplicate entries, empty rows, any threads."""
    rng = np.random.default_rng(21)
    sizes = [1, 40, 3, 0, 17, 1, 60]
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n, d = int(starts[-1]), 9
    rows, cols = rng.integers(0, n, size=500), rng.integers(0, d, size=500)
    rows[:3], cols[:3] = 5, 4                            # a duplicate entry, summed
    X = sp.coo_matrix((rng.normal(size=500), (rows, cols)), shape=(n, d)).tocsr()
    X.has_canonical_format = False
    perm = rng.permutation(X.indptr[6] - X.indptr[5]) + X.indptr[5]
    X.indices[X.indptr[5]:X.indptr[6]] = X.indices[perm]      # row 5 unsorted
    X.data[X.indptr[5]:X.indptr[6]] = X.data[perm]
    scale = np.sqrt(query_scale(starts, 1))
    chunks = query_chunks(starts, 30)
    dense = np.empty((n, d))
    _rankrls.centre(X.toarray(), starts, scale, dense, chunks, 1)
    for index in (np.int32, np.int64):
        for n_threads in (1, 2, 3):
            out = np.full((n, d), np.nan)
            _rankrls.centre_csr(X.data, X.indices.astype(index), X.indptr.astype(index),
                                starts, scale, out, chunks, n_threads)
            np.testing.assert_array_equal(out, dense)
    single = X.astype(np.float32)                   # float32 values: those of dense float32
    single.sum_duplicates()
    expected = np.empty((n, d))
    _rankrls.centre(single.toarray(), starts, scale, expected, chunks, 1)
    for n_threads in (1, 2):
        out = np.full((n, d), np.nan)
        _rankrls.centre_csr(single.data, single.indices, single.indptr, starts, scale, out,
                            chunks, n_threads)
        np.testing.assert_array_equal(out, expected)
    np.testing.assert_allclose(dense[1:41], scale[1] * (X.toarray()[1:41] - X.toarray()[1:41].mean(0)),
                               atol=1e-12)


@pytest.mark.parametrize("n, d, block_rows, panel", [(1000, 7, 100, 3), (333, 20, 50, 6),
                                                     (2000, 5, 4096, 256), (10, 1, 3, 1),
                                                     (0, 3, 10, 2), (4, 0, 10, 2)])
def test_gram_equals_numpy_and_the_same_bits_on_any_threads(n, d, block_rows, panel):
    """X̂ᵀX̂ by blocks of rows × tiles (uneven last block and panel), with the non-zero columns."""
    rng = np.random.default_rng(n + d)
    X = rng.normal(size=(n, d))
    if d > 2:
        X[:, 2] = 0.0
        X[n // 2:, 0] = 0.0
    results = []
    for n_threads in (1, 2, 3):
        out, nonzero = np.full((d, d), np.nan), np.full(d, 7, dtype=np.uint8)
        _rankrls.gram(X, out, nonzero, block_rows, panel, n_threads)
        results.append((out, nonzero))
    for out, nonzero in results:
        np.testing.assert_array_equal(out, results[0][0])
        np.testing.assert_array_equal(out, out.T)
        np.testing.assert_array_equal(nonzero, np.any(X != 0.0, axis=0))
    np.testing.assert_allclose(results[0][0], X.T @ X, rtol=1e-12, atol=1e-10)


def test_gram_block_rows_depend_on_the_data_alone(monkeypatch):
    """rankrls.gram: blocks of at least GRAM_BLOCK_ROWS rows, fewer when the partials would not fit."""
    seen = []
    real = _rankrls.gram
    monkeypatch.setattr(rankrls._rankrls, "gram",
                        lambda X, out, nz, rows, panel, t: seen.append(rows) or
                        real(X, out, nz, rows, panel, t))
    X = np.random.default_rng(3).normal(size=(3000, 40))
    for n_threads in (1, 2):
        A, nonzero = rankrls.gram(X, n_threads)
        np.testing.assert_allclose(A, X.T @ X, rtol=1e-12, atol=1e-10)
        assert nonzero.all()
    monkeypatch.setattr(rankrls, "GRAM_BLOCK_ROWS", 100)
    rankrls.gram(X, 2)
    monkeypatch.setattr(rankrls, "GRAM_PARTIAL_MAX", 40 * 40 * 4)
    rankrls.gram(X, 2)
    assert seen == [3000, 3000, 100, 750]


def test_rankrls_model_metadata(tmp_path):
    X, y, qid = make_data(10)
    model = RankRLS(C=[0.5, 2.0], loss=2).fit(X, y, qid).to_model(n_features=6, n_documents=len(y))
    write_model(model, tmp_path / "m")
    back = read_model(tmp_path / "m")
    assert back.metadata["algorithm"] == "rankrls" and back.metadata["grid"] == "0.5,2"
    assert back.metadata["l"] == "2" and float(back.metadata["C"]) in (0.5, 2.0)


def test_divide_equals_numpy():
    X = np.random.default_rng(23).normal(size=(1001, 7))
    for n_threads in (1, 3):
        out = np.empty_like(X)
        _rankrls.divide(X, 0.37, out, n_threads)
        np.testing.assert_array_equal(out, X / 0.37)


@pytest.mark.parametrize("make", [
    lambda: RankRLS(C=0), lambda: RankRLS(C=[1.0, -2.0]), lambda: RankRLS(C=[]),
    lambda: RankRLS(loss=3), lambda: RankRLS(solver="qr"), lambda: GreedyRankRLS(k=0),
    lambda: GreedyRankRLS(k="all"), lambda: GreedyRankRLS(C=[1.0, -2.0]),
])
def test_bad_parameters_raise_usage_errors(make):
    X, y, qid = make_data(18)
    with pytest.raises(UsageError):
        make().fit(X, y, qid)


@pytest.mark.parametrize("make", [lambda C: RankRLS(C=C), lambda C: RankRLS(C=[C, 1.0]),
                                  lambda C: GreedyRankRLS(C=C, k=1)],
                         ids=["single", "grid", "greedy"])
def test_a_c_so_small_that_lambda_overflows_is_refused(make):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 3)), rng.integers(0, 3, 12).astype(float)
    qid = np.repeat([1, 2, 3], 4)
    with pytest.raises(ValueError, match="too small"):
        make(1e-320).fit(X, y, qid)


@pytest.mark.parametrize("loss", [1, 2])
def test_rankrls_exact_lqo_with_weights_equals_retraining_without_each_query(loss):
    X, y, qid = data()
    lines = []
    ranker = RankRLS(C=CS, loss=loss, cv_metric=M).fit(X, y, qid, sample_weight=row_weights(qid),
                                                       log=lambda text, level: lines.append(text))
    multipliers = query_sample_weights(row_weights(qid), qid)
    result = ranker.cv_result_
    progress = [line for line in lines if line.startswith("CV ")]
    assert [line.split(": ")[-1][:len("NDCG@5 (LETOR) 0.0000")] for line in progress] == \
        [f"NDCG@5 (LETOR) {value:.4f}" for value in result.mean[:, 0]]
    np.testing.assert_array_equal(result.weights, multipliers)
    ndcg = Metric.parse(M)
    for i, C in enumerate(CS):
        scores, losses = _reference.rankrls_lqo_retrain(X, y, qid, C, loss, multipliers)
        per_query = ndcg.evaluate(scores, y, qid, per_query=True, max_grade=3)
        kept = multipliers > 0
        np.testing.assert_allclose(result.values[i, kept, 0], per_query[kept], rtol=1e-9)
        np.testing.assert_allclose(result.values[i, kept, -1], losses[kept], rtol=1e-8)
        assert result.mean[i, 0] == pytest.approx(np.average(per_query, weights=multipliers),
                                                  rel=1e-9)
        assert result.mean[i, -1] == pytest.approx(np.average(losses, weights=multipliers),
                                                   rel=1e-8)
    fits = _reference.rankrls_pairs(X, y, qid, ranker.C_, loss, query_weight=multipliers)
    np.testing.assert_allclose(ranker.coef_, fits, rtol=1e-8, atol=1e-12)
