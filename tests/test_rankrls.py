"""RankRLS, its C path with exact leave-query-out CV and greedy RankRLS, against closed
forms and the slow twins of reference_impl (cross-validation itself: test_model_selection)."""
import resource
import tracemalloc

import numpy as np
import pytest
import reference_impl as _reference
import scipy.sparse as sp

from rankfast import GreedyRankRLS, RankRLS, UsageError, metrics, read_model, write_model
from rankfast._kernels import _rankrls
from rankfast._threads import query_chunks
from rankfast.learners import greedy, rankrls
from rankfast.learners.greedy import available_memory, greedy_memory_bytes
from rankfast.learners.rankrls import centred, query_scale

# ---------------------------------------------------------------- data

def make_data(seed, sizes=(1, 5, 2, 12, 3, 1, 11, 4), d=6, levels=3, shuffle=True):
    """Uneven queries (one-document ones included), tied labels, a constant feature,
    an all-zero feature, rows of different queries interleaved."""
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(len(sizes)) * 7 + 3, sizes)
    n = len(qid)
    X = rng.normal(size=(n, d))
    X[:, 1] = 2.5                                   # constant (non-zero) feature
    X[:, d - 1] = 0.0                               # never occurs: not a feature at all
    y = rng.integers(0, levels, size=n).astype(np.float64)
    y += X[:, 0] > 0.5                              # some signal
    if shuffle:
        perm = rng.permutation(n)
        X, y, qid = X[perm], y[perm], qid[perm]
    return X, y, qid


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


# ---------------------------------------------------------------- RankRLS

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


# ---------------------------------------------------------------- greedy

@pytest.mark.parametrize("loss", [1, 2])
@pytest.mark.parametrize("C", [0.05, 1.0, 30.0])
def test_greedy_equals_naive_twin(loss, C):
    X, y, qid = make_data(11, d=7)
    selected, errors = _reference.greedy_rankrls_naive(X, y, qid, C, loss, k=6)
    model = GreedyRankRLS(k=6, C=C, loss=loss).fit(X, y, qid)
    assert list(model.selected_ - 1) == selected
    np.testing.assert_allclose(model.lqo_errors_, errors, rtol=1e-8)


def test_greedy_more_features_than_documents():
    X, y, qid = make_data(12, sizes=(3, 1, 5, 2), d=25)
    selected, errors = _reference.greedy_rankrls_naive(X, y, qid, 0.8, 1, k=5)
    model = GreedyRankRLS(k=5, C=0.8).fit(X, y, qid)
    assert list(model.selected_ - 1) == selected
    np.testing.assert_allclose(model.lqo_errors_, errors, rtol=1e-8)


@pytest.mark.parametrize("loss", [1, 2])
def test_greedy_weights_are_rankrls_on_the_selection(loss):
    X, y, qid = make_data(13, d=8)
    model = GreedyRankRLS(k=4, C=2.0, loss=loss).fit(X, y, qid)
    for step, w in enumerate(model.weights_path_, start=1):
        columns = model.selected_[:step] - 1
        expected = _reference.rankrls_pairs(X[:, columns], y, qid, 2.0, loss)
        np.testing.assert_allclose(w, expected, rtol=1e-8, atol=1e-12)
    np.testing.assert_array_equal(model.feature_ids_, np.sort(model.selected_))


@pytest.mark.parametrize("loss", [1, 2])
def test_greedy_all_features_ends_at_rankrls_lqo(loss):
    """Selecting every feature, the last LQO error is RankRLS's LQO loss (two independent paths)."""
    X, y, qid = make_data(14, d=6)
    greedy = GreedyRankRLS(k=100, C=0.4, loss=loss).fit(X, y, qid)
    assert len(greedy.selected_) == 4          # k clamped: 6 columns, one all-zero, one constant
    assert 2 not in greedy.selected_
    path = RankRLS(C=[0.4], loss=loss).fit(X, y, qid)
    assert greedy.lqo_errors_[-1] == pytest.approx(path.cv_table_[0]["loss"], rel=1e-9)


def test_greedy_auto_stops_when_lqo_error_stops_improving():
    X, y, qid = make_data(15, d=7)
    _, errors = _reference.greedy_rankrls_naive(X, y, qid, 0.3, 1, k=6)
    lines = []
    model = GreedyRankRLS(k="auto", C=0.3).fit(X, y, qid, log=lambda t, level: lines.append(t))
    start = _reference.rankrls_lqo_retrain(X[:, :0], y, qid, 0.3, 1)[1].mean()
    previous = np.concatenate(([start], errors))
    expected = int(np.argmax(~(previous[1:] < previous[:-1]))) if np.any(
        ~(previous[1:] < previous[:-1])) else len(errors)
    assert len(model.selected_) == expected
    np.testing.assert_allclose(model.lqo_errors_, errors[:expected], rtol=1e-8)
    assert model.lqo_error_start_ == pytest.approx(start, rel=1e-12)
    steps = [line for line in lines if line.startswith("Greedy step")]
    assert len(steps) == expected
    assert steps and steps[0].startswith(f"Greedy step 1: feature {model.selected_[0]}, LQO error ")


def test_greedy_model_round_trip(tmp_path):
    X, y, qid = make_data(16, d=7)
    X = np.hstack([X, np.zeros((len(y), 4)), X[:, :3] * 0.5 + 1.0])   # ids up to 14
    fitted = GreedyRankRLS(k=3, C=1.0).fit(sp.csr_matrix(X), y, qid)
    model = fitted.to_model(n_features=X.shape[1], n_documents=len(y))
    write_model(model, tmp_path / "greedy.model")
    back = read_model(tmp_path / "greedy.model")
    assert sorted(back.feature_ids.tolist()) == sorted(fitted.selected_.tolist())
    assert back.metadata["selected"] == ",".join(map(str, fitted.selected_))
    assert back.metadata["algorithm"] == "greedy" and back.metadata["k"] == "3"
    np.testing.assert_array_equal(back.weights, model.weights)
    np.testing.assert_allclose(back.predict(X), fitted.decision_function(X), rtol=1e-5, atol=1e-6)


def test_greedy_kernel_scores_against_direct_sherman_morrison():
    """One scoring call on random caches, against p̃_q = (G̃_qq)⁻¹ ã_q from an explicit G."""
    rng = np.random.default_rng(17)
    starts = np.array([0, 3, 4, 9], dtype=np.int64)
    n, d, lam = 9, 4, 0.7
    Xh = rng.normal(size=(n, d))
    yh = rng.normal(size=n)
    S = [2]
    G = np.linalg.inv(Xh[:, S] @ Xh[:, S].T + lam * np.eye(n))
    blocks = [slice(starts[q], starts[q + 1]) for q in range(3)]
    Qinv = np.zeros((n, n))
    for b in blocks:
        Qinv[b, b] = np.linalg.inv(G[b, b])
    C, a = G @ Xh, G @ yh
    U, p = Qinv @ C, Qinv @ a
    g, h = np.einsum("ij,ij->j", Xh, C), Xh.T @ a
    out = np.empty(d)
    _rankrls.lqo_errors(C, U, a, p, g, h, starts, out)
    for i in range(d):
        Gi = np.linalg.inv(np.linalg.inv(G) + np.outer(Xh[:, i], Xh[:, i]))
        ai = Gi @ yh
        expected = sum(float(np.sum((np.linalg.solve(Gi[b, b], ai[b])) ** 2)) for b in blocks)
        assert out[i] == pytest.approx(expected, rel=1e-9)


def test_greedy_update_with_scores_equals_update_then_scores():
    """add_feature's fused scoring pass: the same bits as lqo_errors after a plain update,
    on one-document, empty and uneven queries, on any threads, with b's columns passed as
    copies or as views of the caches being updated."""
    rng = np.random.default_rng(19)
    starts = np.concatenate(([0], np.cumsum([1, 7, 0, 30, 1, 2, 55, 3]))).astype(np.int64)
    n, d = int(starts[-1]), 6
    C, U = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    a, p = rng.normal(size=n), rng.normal(size=n)
    g, h, t = rng.random(d), rng.normal(size=d), rng.normal(size=d)
    chunks = query_chunks(starts, 20)
    caches = (C.copy(), U.copy(), a.copy(), p.copy())
    _rankrls.add_feature(*caches, C[:, 3].copy(), U[:, 3].copy(), t, 0.4, 0.3, starts)
    expected = np.empty(d)
    _rankrls.lqo_errors(*caches, g, h, starts, expected)
    for n_threads in (1, 2, 3):
        fused = (C.copy(), U.copy(), a.copy(), p.copy())
        out = np.full(d, np.nan)
        cb, ub = (fused[0][:, 3], fused[1][:, 3]) if n_threads > 1 else (C[:, 3], U[:, 3])
        _rankrls.add_feature(*fused, cb, ub, t, 0.4, 0.3, starts, chunks, n_threads, g, h, out)
        for got, want in zip(fused, caches):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(out, expected, rtol=1e-13)     # other chunks: other sums
        one = np.full(d, np.nan)
        _rankrls.lqo_errors(*caches, g, h, starts, one, chunks, 1)
        np.testing.assert_array_equal(out, one)


def test_divide_equals_numpy():
    X = np.random.default_rng(23).normal(size=(1001, 7))
    for n_threads in (1, 3):
        out = np.empty_like(X)
        _rankrls.divide(X, 0.37, out, n_threads)
        np.testing.assert_array_equal(out, X / 0.37)


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("make", [
    lambda: RankRLS(C=0), lambda: RankRLS(C=[1.0, -2.0]), lambda: RankRLS(C=[]),
    lambda: RankRLS(loss=3), lambda: RankRLS(solver="qr"), lambda: GreedyRankRLS(k=0),
    lambda: GreedyRankRLS(k="all"), lambda: GreedyRankRLS(C=[1.0, -2.0]),
])
def test_bad_parameters_raise_usage_errors(make):
    X, y, qid = make_data(18)
    with pytest.raises(UsageError):
        make().fit(X, y, qid)


# ---------------------------------------------------------------- greedy's memory

def test_greedy_refuses_what_the_machine_cannot_hold(monkeypatch):
    X, y, qid = make_data(21, d=8)
    n, d = X.shape[0], X.shape[1] - 1                         # one column never occurs
    needed = greedy_memory_bytes(n, d)
    assert needed >= 2 * 8 * n * d                            # the caches C and U
    monkeypatch.setattr(greedy, "available_memory", lambda: needed - 1)
    with pytest.raises(ValueError, match=f"greedy RankRLS needs .* GB for {n} documents x {d} "
                                         f"features .* use a linear learner"):
        GreedyRankRLS(k=2, C=1.0).fit(X, y, qid)
    for available in (needed, None):                          # enough, or unknown: no check
        monkeypatch.setattr(greedy, "available_memory", lambda: available)
        assert len(GreedyRankRLS(k=2, C=1.0).fit(X, y, qid).selected_) == 2


def test_greedy_memory_estimate_covers_what_it_allocates():
    n, d = 2000, 200
    X = sp.random(n, d, density=0.1, random_state=22, format="csr")
    y = np.random.default_rng(22).integers(0, 3, n).astype(np.float64)
    qid = np.repeat(np.arange(50), n // 50)
    tracemalloc.start()
    GreedyRankRLS(k=3, C=1.0).fit(X, y, qid)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    copies_of_X = 3 * (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)   # grouped, compacted
    assert 2 * 8 * n * d <= peak <= greedy_memory_bytes(n, d) + copies_of_X


@pytest.mark.parametrize("limit, vm_kb, expected", [
    (None, 100, 4096 * 1024),                                 # no ulimit -v: MemAvailable
    (3 << 30, 1 << 20, 4096 * 1024),                          # ulimit -v far above: MemAvailable
    (5 << 20, 2048, (5 << 20) - (2048 << 10)),                # ulimit -v: what VmSize leaves
    (1 << 20, 2048, 0),                                       # over the limit already
])
def test_available_memory_reads_meminfo_and_the_address_space_limit(tmp_path, monkeypatch,
                                                                   limit, vm_kb, expected):
    meminfo, status = tmp_path / "meminfo", tmp_path / "status"
    meminfo.write_text("MemTotal:       16384 kB\nMemFree:     1000 kB\nMemAvailable:    4096 kB\n")
    status.write_text(f"Name:\tpython\nVmPeak:\t  9999 kB\nVmSize:\t {vm_kb} kB\n")
    soft = resource.RLIM_INFINITY if limit is None else limit
    monkeypatch.setattr(resource, "getrlimit", lambda which: (soft, resource.RLIM_INFINITY))
    assert available_memory(str(meminfo), str(status)) == expected
    assert available_memory(str(tmp_path / "missing"), str(status)) == \
        (None if limit is None else max(limit - vm_kb * 1024, 0))


@pytest.mark.parametrize("make", [lambda C: RankRLS(C=C), lambda C: RankRLS(C=[C, 1.0]),
                                  lambda C: GreedyRankRLS(C=C, k=1)],
                         ids=["single", "grid", "greedy"])
def test_a_c_so_small_that_lambda_overflows_is_refused(make):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 3)), rng.integers(0, 3, 12).astype(float)
    qid = np.repeat([1, 2, 3], 4)
    with pytest.raises(ValueError, match="too small"):
        make(1e-320).fit(X, y, qid)


def _ridge_leave_one_row_out(Xh, yh, lam):
    """Mean squared leave-one-out residual of ridge regression, by retraining without each row."""
    residuals = []
    for i in range(len(yh)):
        keep = np.arange(len(yh)) != i
        A = Xh[keep].T @ Xh[keep] + lam * np.eye(Xh.shape[1])
        residuals.append(yh[i] - Xh[i] @ np.linalg.solve(A, Xh[keep].T @ yh[keep]))
    return float(np.mean(np.square(residuals)))


def test_greedy_fits_a_single_ranking_by_leave_one_out_of_its_rows():
    """One ranking (scikit-learn's checks pass no qid): no query to leave out, so each step
    picks the feature of least leave-one-out error of the centred regression, ŷ on X̂ with
    X̂ = √m (X − mean), ŷ = √m (y − mean) and λ = 1/(2C): the brute-force retraining here.
    It used to refuse one ranking."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(14, 4))
    y = X @ [0.3, 0.0, 2.0, -1.0] + 0.2 * rng.normal(size=14)
    C, m = 0.5, len(y)
    ranker = GreedyRankRLS(C=C, k=3).fit(X, y)
    Xh, yh = np.sqrt(m) * (X - X.mean(axis=0)), np.sqrt(m) * (y - y.mean())
    selected, errors = [], []
    for _ in range(3):
        trial = {j: _ridge_leave_one_row_out(Xh[:, selected + [j]], yh, 1 / (2 * C))
                 for j in range(4) if j not in selected}
        best = min(trial, key=trial.get)
        selected.append(best)
        errors.append(trial[best])
    np.testing.assert_array_equal(ranker.selected_, np.array(selected) + 1)
    np.testing.assert_allclose(ranker.lqo_errors_, errors, rtol=1e-9)
    ridge = RankRLS(C=C).fit(X[:, sorted(selected)], y)     # the final model: RankRLS on them
    np.testing.assert_allclose(ranker.weights_, ridge.weights_, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(GreedyRankRLS(C=C, k=3).fit(X, y, np.ones(14)).selected_,
                                  ranker.selected_)


def test_greedy_refuses_features_its_updates_cannot_resolve():
    rng = np.random.default_rng(1)
    X, qid = rng.normal(size=(30, 3)), np.repeat(np.arange(1, 6), 6)
    y = (X @ [1.0, 2.0, 3.0] > 0).astype(float)
    GreedyRankRLS(k=3).fit(X * 1e4, y, qid)                    # fine: matches RankRLS
    with pytest.raises(ValueError, match=r"rescale the features \('normalize'\), or use"):
        GreedyRankRLS(k=3).fit(X * 1e8, y, qid)
    with pytest.raises(ValueError, match="rescale the features, or use"):      # already asked
        GreedyRankRLS(k=3, C=1e13, normalize="log").fit(X * 1e8, y, qid)
