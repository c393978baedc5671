"""rankfast.learners.greedy (GreedyRankRLS) against its naive twin, RankRLS and the memory it needs."""

import resource
import tracemalloc

import numpy as np
import pytest
import reference_impl as _reference
import scipy.sparse as sp
from data_makers import letor_like_with_query_level_columns as letor_like
from data_makers import repeated, row_weights
from data_makers import uneven_queries as make_data
from data_makers import weighted_queries as data

from rankfast import GreedyRankRLS, RankRLS, read_model, write_model
from rankfast._kernels import _rankrls
from rankfast._kernels.threads import query_chunks
from rankfast.data.validation import query_sample_weights
from rankfast.learners import greedy
from rankfast.learners.greedy import available_memory, greedy_memory_bytes


def test_greedy_never_selects_a_query_constant_feature():
    """It used to pick them once the useful features were taken (no feature lowered the
    leave-query-out error, and theirs moved by rounding alone)."""
    from rankfast import GreedyRankRLS
    X, y, qid = letor_like(3)
    model = GreedyRankRLS(C=1.0, k=6).fit(X, y, qid)
    assert sorted(model.selected_.tolist()) == [1, 3, 6]
    assert np.all(model.coef_[[1, 3, 4]] == 0.0)


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


def test_greedy_memory_message_names_the_d_by_d_arrays(monkeypatch):
    from rankfast.learners import greedy
    monkeypatch.setattr(greedy, "available_memory", lambda: 10**9)
    with pytest.raises(ValueError) as info:
        greedy.check_greedy_memory(100, 20000)          # 6.4 GB of d x d, 0.03 GB of n x d
    assert "two d x d arrays: 6.4 GB" in str(info.value)
    assert "two dense n x d arrays: 0.0 GB" in str(info.value)


@pytest.mark.parametrize("loss", [1, 2])
def test_greedy_with_weights_equals_its_weighted_naive_twin(loss):
    X, y, qid = data(seed=2, d=6)
    multipliers = query_sample_weights(row_weights(qid), qid)
    ranker = GreedyRankRLS(C=2.0, k=4, loss=loss).fit(X, y, qid, sample_weight=row_weights(qid))
    selected, errors = _reference.greedy_rankrls_naive(X, y, qid, 2.0, loss, k=4,
                                                       query_weight=multipliers)
    np.testing.assert_array_equal(ranker.selected_, np.array(selected) + 1)
    np.testing.assert_allclose(ranker.lqo_errors_, errors, rtol=1e-8)
    plain = GreedyRankRLS(C=2.0, k=4, loss=loss).fit(X, y, qid)
    assert not np.allclose(plain.lqo_errors_, ranker.lqo_errors_, rtol=1e-6)


def test_greedys_model_is_rankrls_of_the_data_with_the_query_twice_on_its_selection():
    X, y, qid = data(seed=2, d=6)
    ranker = GreedyRankRLS(C=2.0, k=3).fit(X, y, qid, sample_weight=row_weights(qid))
    X2, y2, qid2 = repeated(X, y, qid)
    columns = ranker.selected_ - 1
    twice = RankRLS(C=2.0).fit(X2[:, columns], y2, qid2)
    np.testing.assert_allclose(ranker.coef_[columns], twice.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ranker.predict(X), twice.predict(X[:, columns]), rtol=1e-9,
                               atol=1e-12)
