"""Threads: every kernel and every model file the same bits for any number of threads."""
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from shared_paths import DATA, require

import rankfast
from rankfast import dump_svmlight
from rankfast._kernels import _erfc, _predict, _prsvm, _rankrls
from rankfast._kernels import threads as _threads
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main
from rankfast.losses.erfc import erfc_parameters
from rankfast.losses.products import DataMatrix

ROOT = Path(__file__).resolve().parents[1]
THREADS = (1, 2, 3)
pytestmark = pytest.mark.usefixtures("every_thread_counts")


def uneven_queries(seed, n_queries=300, d=8, levels=4, max_size=80):
    """Random ranking data: query sizes from 1 to max_size, a few large ones, ties."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size, size=n_queries)
    sizes[rng.integers(0, n_queries, size=3)] = 5 * max_size
    qid = np.repeat(np.arange(n_queries) + 1, sizes)
    X = np.round(rng.normal(size=(len(qid), d)), 3)
    y = np.clip(np.floor(X @ rng.normal(size=d) / 2 + rng.normal(size=len(qid))), 0, levels - 1)
    return X, y, qid


def starts_of(sizes):
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


# ------------------------------------------------------------ chunks and threads

def test_resolve_n_jobs():
    cores = _threads.available_cores()
    assert _threads.resolve_n_jobs(None) == cores == _threads.resolve_n_jobs(0)
    assert _threads.resolve_n_jobs(1) == 1 and _threads.resolve_n_jobs(5) == min(5, cores)
    assert _threads.resolve_n_jobs(-1) == cores
    assert _threads.resolve_n_jobs(-cores - 5) == 1
    for bad in (1.5, "2", True):
        with pytest.raises(ValueError):
            _threads.resolve_n_jobs(bad)
        with pytest.raises(ValueError):
            _threads.resolve_n_jobs(bad, 10)
    assert _threads.resolve_n_jobs(np.int64(3)) == min(3, cores)


def test_small_data_gets_one_thread_per_min_entries(monkeypatch):
    per_thread = 100
    monkeypatch.setattr(_threads, "MIN_ENTRIES_PER_THREAD", per_thread)
    monkeypatch.setattr(_threads, "available_cores", lambda: 8)
    assert _threads.resolve_n_jobs(8, 0) == 1 == _threads.resolve_n_jobs(8, per_thread - 1)
    assert _threads.resolve_n_jobs(8, 3 * per_thread) == 3
    assert _threads.resolve_n_jobs(2, 100 * per_thread) == 2
    assert _threads.resolve_n_jobs(None, 10) == 1
    assert _threads.stored_entries(np.ones((3, 4))) == 12
    assert _threads.stored_entries(sp.random(5, 7, density=0.4, format="csr")) == 14


def test_query_chunks_cover_every_query_once_at_query_boundaries():
    sizes = np.random.default_rng(0).integers(1, 300, size=500)
    sizes[7] = 20000                                  # one query longer than a chunk
    starts = starts_of(sizes)
    chunks = _threads.query_chunks(starts, documents=1000)
    assert chunks[0] == 0 and chunks[-1] == len(sizes) and np.all(np.diff(chunks) > 0)
    rows = np.diff(starts[chunks])
    assert rows.max() >= 20000 and np.median(rows) < 2000
    assert list(_threads.query_chunks(starts_of([]))) == [0]
    assert list(_threads.query_chunks(starts_of([5]))) == [0, 1]


# ------------------------------------------------------------------- kernels

@pytest.mark.parametrize("sparse", [False, True])
def test_products_equal_numpy_and_the_same_bits_on_any_threads(sparse):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5000, 13))
    if sparse:
        X[rng.random(X.shape) < 0.6] = 0.0
        X = sp.csr_matrix(X)
    v, u = rng.normal(size=13), rng.normal(size=5000)
    results = [(M.matvec(v), M.rmatvec(u)) for M in (DataMatrix(X, t) for t in THREADS)]
    for Xv, XTu in results:
        np.testing.assert_array_equal(Xv, results[0][0])
        np.testing.assert_array_equal(XTu, results[0][1])
    np.testing.assert_allclose(results[0][0], X @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[0][1], X.T @ u, rtol=1e-12, atol=1e-12)
    dense = X.toarray() if sparse else X
    M = DataMatrix(X, 2)
    np.testing.assert_allclose(M.rmatvec(u, "abs"), abs(dense).T @ u, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(M.rmatvec(u, "square"), (dense * dense).T @ u, rtol=1e-12,
                               atol=1e-12)


def test_wide_sparse_products_use_the_transpose():
    rng = np.random.default_rng(2)
    rows, cols = rng.integers(0, 3000, size=6000), rng.integers(0, 200_000, size=6000)
    X = sp.csr_matrix((rng.normal(size=6000), (rows, cols)), shape=(3000, 200_000))
    M = DataMatrix(X, 2)
    assert M.XT is not None
    u = rng.normal(size=3000)
    np.testing.assert_allclose(M.rmatvec(u), X.T @ u, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(M.rmatvec(u), DataMatrix(X, 1).rmatvec(u))
    np.testing.assert_allclose(M.rmatvec(u, "square"), X.multiply(X).T @ u, rtol=1e-12,
                               atol=1e-12)


def prsvm_inputs(seed, real_labels=False):
    X, y, qid = uneven_queries(seed)
    rng = np.random.default_rng(seed)
    if real_labels:                                   # a label level per document, nearly
        y = np.round(rng.normal(size=len(y)), 2)
    starts = starts_of(np.bincount(qid)[1:])
    scores = rng.normal(size=len(y)) * 2
    rank = np.unique(y, return_inverse=True)[1].ravel().astype(np.int64)
    weight = rng.random(len(starts) - 1)
    return scores, rank, starts, weight, int(rank.max()) + 1


@pytest.mark.parametrize("real_labels", [False, True])
def test_prsvm_kernels_the_same_bits_on_any_threads(real_labels):
    scores, rank, starts, weight, levels = prsvm_inputs(4, real_labels)
    chunks = _threads.query_chunks(starts, documents=500)
    assert len(chunks) > 10
    d = np.random.default_rng(5).normal(size=len(scores))
    one = None
    for n_threads in THREADS:
        order = np.empty(len(scores), dtype=np.int64)
        _prsvm.sort_within_queries(scores, starts, order, chunks, n_threads)
        grad, hv = np.empty(len(scores)), np.empty(len(scores))
        loss = _prsvm.squared_hinge(scores, rank, starts, order, weight, levels, grad,
                                    chunks, n_threads)
        _prsvm.squared_hinge_hessvec(scores, rank, starts, order, weight, levels, d, hv,
                                     chunks, n_threads)
        got = (order, loss, grad, hv)
        if one is None:
            one = got
        for a, b in zip(got, one):
            np.testing.assert_array_equal(a, b)
    # one chunk (the serial order of the loss sum) agrees to rounding; per-document outputs exactly
    order = np.empty(len(scores), dtype=np.int64)
    _prsvm.sort_within_queries(scores, starts, order)
    grad, hv = np.empty(len(scores)), np.empty(len(scores))
    loss = _prsvm.squared_hinge(scores, rank, starts, order, weight, levels, grad)
    _prsvm.squared_hinge_hessvec(scores, rank, starts, order, weight, levels, d, hv)
    np.testing.assert_array_equal(order, one[0])
    assert loss == pytest.approx(one[1], rel=1e-12)
    np.testing.assert_array_equal(grad, one[2])
    np.testing.assert_array_equal(hv, one[3])


@pytest.mark.parametrize("fast", [True, False])
def test_erfc_sums_the_same_bits_on_any_threads(fast):
    from rankfast.losses.erfc_pairs import ErfcPairObjective
    X, y, qid = uneven_queries(6, n_queries=120)
    starts = starts_of(np.bincount(qid)[1:])
    ob = ErfcPairObjective(X, y, starts, np.ones(len(starts) - 1), 1e-6, fast)
    z = np.random.default_rng(7).normal(size=len(y))
    args = erfc_parameters(1e-6).kernel_args()
    outs = []
    for chunks, n_threads in [(None, 1)] + [(_threads.query_chunks(starts, 300), t) for t in THREADS]:
        out = np.empty(len(y))
        _erfc.other_level_sums(z, ob.starts, ob.group_order, ob.group_starts, ob.rank, fast,
                               *args, out, chunks, n_threads)
        outs.append(out)
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])


def greedy_caches(seed, d=7):
    X, y, qid = uneven_queries(seed, n_queries=80, d=d, max_size=40)
    starts = starts_of(np.bincount(qid)[1:])
    rng = np.random.default_rng(seed)
    n = len(y)
    return (rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=n),
            rng.normal(size=n), rng.random(d), rng.normal(size=d), starts)


def test_greedy_kernels_the_same_bits_on_any_threads():
    C, U, a, p, g, h, starts = greedy_caches(8)
    chunks = _threads.query_chunks(starts, documents=200)
    assert len(chunks) > 5
    serial = np.empty(C.shape[1])
    _rankrls.lqo_errors(C, U, a, p, g, h, starts, serial)
    results = []
    for n_threads in THREADS:
        out = np.empty(C.shape[1])
        _rankrls.lqo_errors(C, U, a, p, g, h, starts, out, chunks, n_threads)
        Cn, Un, an, pn = C.copy(), U.copy(), a.copy(), p.copy()
        t = np.random.default_rng(9).normal(size=C.shape[1])
        _rankrls.add_feature(Cn, Un, an, pn, C[:, 2].copy(), U[:, 2].copy(), t, 0.3, 0.2,
                             starts, chunks, n_threads)
        results.append((out, Cn, Un, an, pn))
    for got in results[1:]:
        for x, y in zip(got, results[0]):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_allclose(results[0][0], serial, rtol=1e-12)


def test_centring_the_same_bits_on_any_threads():
    X, y, qid = uneven_queries(10)
    starts = starts_of(np.bincount(qid)[1:])
    scale = np.random.default_rng(11).random(len(starts) - 1)
    outs = []
    for chunks, n_threads in [(None, 1)] + [(_threads.query_chunks(starts, 500), t) for t in THREADS]:
        out = np.empty_like(X)
        _rankrls.centre(X, starts, scale, out, chunks, n_threads)
        outs.append(out)
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])
    q = 3
    block = X[starts[q]:starts[q + 1]]
    np.testing.assert_allclose(outs[0][starts[q]:starts[q + 1]],
                               scale[q] * (block - block.mean(axis=0)), atol=1e-12)


# -------------------------------------------------------------- model files

LEARNER_FLAGS = {
    "prsvm": ["-c", "1"],
    "prsvm-sparse": ["-c", "1"],
    "prsvm-grid": ["-c", "0.1,10"],
    "rankncg": ["-a", "rankncg", "-c", "1"],
    "rankncg-direct": ["-a", "rankncg", "-c", "1", "--erfc", "direct", "-#", "15"],
    "rankrls": ["-a", "rankrls", "-c", "1"],
    "rankrls-grid": ["-a", "rankrls", "-c", "0.1,1,10"],
    "greedy": ["-a", "greedy", "-k", "4", "-c", "1"],
    "nystrom": ["-t", "2", "-g", "0.1", "--landmarks", "20"],
    "nystrom-zscore-auto": ["-t", "2", "-g", "auto", "--normalize", "zscore", "--landmarks", "20"],
    "nystrom-grid": ["-t", "2", "-g", "0.05,0.1", "-c", "0.1,1", "--landmarks", "20"],
    # the map's blocks and the formed Hessian's column blocks on threads (formed at step 10)
    "nystrom-hessian": ["-t", "2", "-g", "auto", "--normalize", "zscore", "--landmarks", "300",
                        "-c", "100"],
}


@pytest.fixture(scope="module")
def training_files(tmp_path_factory):
    """A dense file of 12k documents in uneven queries (several chunks and row blocks), a sparse one."""
    folder = tmp_path_factory.mktemp("threads")
    X, y, qid = uneven_queries(12, n_queries=320, d=9)
    dense = folder / "dense.dat"
    dump_svmlight(X, y, qid, path=str(dense))
    Xs = X.copy()
    Xs[np.random.default_rng(13).random(X.shape) < 0.7] = 0.0
    sparse = folder / "sparse.dat"
    dump_svmlight(sp.csr_matrix(Xs), y, qid, path=str(sparse))
    assert len(y) > 3 * _threads.CHUNK_DOCUMENTS
    return {"dense": dense, "sparse": sparse}


@pytest.mark.parametrize("learner", sorted(LEARNER_FLAGS))
def test_model_files_byte_identical_across_threads(learner, training_files, tmp_path, capsys):
    data = training_files["sparse" if learner.endswith("sparse") else "dense"]
    models = []
    for n_threads in THREADS:
        model = tmp_path / f"model{n_threads}"
        flag = ["-j", str(n_threads)] if n_threads != 3 else ["--threads", "3"]
        assert learn_main(LEARNER_FLAGS[learner] + flag + ["-v", "0", str(data), str(model)]) == 0
        models.append(model.read_bytes())
    capsys.readouterr()
    assert models[0] == models[1] == models[2]
    assert len(models[0]) > 200


NO_THREADPOOLCTL = """
import sys
sys.modules["threadpoolctl"] = None          # as on an install of numpy and scipy alone
from rankfast.cli import learn_command
sys.argv = ["rank_learn", *sys.argv[1:]]
learn_command()
"""


@pytest.mark.parametrize("flags", [["-a", "prsvm"], ["-a", "rankrls"]], ids=["prsvm", "rankrls"])
def test_model_files_byte_identical_across_threads_without_threadpoolctl(flags, tmp_path):
    """rank_learn holds BLAS to one thread itself: without threadpoolctl, -j 2 once gave BLAS
    two threads, and PRSVM's and RankRLS's models on the raw MSLR sample changed their last
    digits (their dense algebra through BLAS)."""
    data = require(DATA / "mslr_web_fold1_5k" / "train.5k.txt.gz")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(name, None)
    models = []
    for n_threads in (1, 2):
        model = tmp_path / f"model{n_threads}"
        subprocess.run([sys.executable, "-c", NO_THREADPOOLCTL, *flags, "-c", "1", "-j",
                        str(n_threads), "-v", "0", str(data), str(model)],
                       env=env, check=True, capture_output=True, timeout=300)
        models.append(model.read_bytes())
    assert models[0] == models[1] and len(models[0]) > 500


def test_threads_flag_checked(tmp_path, capsys, training_files):
    assert learn_main(["-j", "-1", str(training_files["dense"]), str(tmp_path / "m")]) == 2
    assert "-j must be at least 0" in capsys.readouterr().err


# ------------------------------------------------------------ without OpenMP

def test_serial_build_gives_the_same_bits(tmp_path):
    """Build _prsvm with RANKFAST_OPENMP=0 in a temporary copy: no OpenMP, the same results.

    RANKFAST_DEBUG=1 (-O0, bounds checked) keeps the compilation short; neither changes
    the arithmetic (no -ffast-math, no FMA contraction on the default x86-64 target).
    """
    for name in ("setup.py", "pyproject.toml", "README.md"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    (tmp_path / "pyx").mkdir()
    for source in [ROOT / "pyx" / "_prsvm.pyx", *(ROOT / "pyx").glob("*.pxi")]:
        (tmp_path / "pyx" / source.name).write_bytes(source.read_bytes())
    (tmp_path / "rankfast" / "_kernels").mkdir(parents=True)   # where the modules are built
    (tmp_path / "rankfast" / "__init__.py").write_bytes((ROOT / "rankfast" / "__init__.py").read_bytes())
    env = dict(os.environ, RANKFAST_OPENMP="0", RANKFAST_ONLY="_prsvm", RANKFAST_DEBUG="1")
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=tmp_path,
                   env=env, check=True, capture_output=True)
    built = next((tmp_path / "rankfast" / "_kernels").glob("_prsvm*.so"))
    assert b"GOMP_parallel" not in built.read_bytes()
    scores, rank, starts, weight, levels = prsvm_inputs(14)
    chunks = _threads.query_chunks(starts, documents=500)
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, scores=scores, rank=rank, starts=starts, weight=weight, chunks=chunks)
    script = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {str(tmp_path / 'rankfast' / '_kernels')!r})\n"
        "import _prsvm\n"
        f"a = np.load({str(inputs)!r})\n"
        "order = np.empty(len(a['scores']), dtype=np.int64)\n"
        "_prsvm.sort_within_queries(a['scores'], a['starts'], order, a['chunks'], 3)\n"
        "grad = np.empty(len(a['scores']))\n"
        f"loss = _prsvm.squared_hinge(a['scores'], a['rank'], a['starts'], order, a['weight'], "
        f"{levels}, grad, a['chunks'], 3)\n"
        f"np.save({str(tmp_path / 'grad.npy')!r}, np.r_[loss, grad])\n")
    subprocess.run([sys.executable, "-c", script], check=True)
    serial = np.load(tmp_path / "grad.npy")
    order = np.empty(len(scores), dtype=np.int64)
    _prsvm.sort_within_queries(scores, starts, order, chunks, 2)
    grad = np.empty(len(scores))
    loss = _prsvm.squared_hinge(scores, rank, starts, order, weight, levels, grad, chunks, 2)
    np.testing.assert_array_equal(serial, np.r_[loss, grad])


def test_linear_scores_of_a_block_large_enough_for_threads_do_not_depend_on_them():
    """Each row is summed by one thread, whatever their number."""
    rng = np.random.default_rng(5)
    X = sp.random(4000, 60, density=0.5, format="csr", random_state=rng)       # ~120k entries
    ids = np.flatnonzero(rng.random(70) < 0.8).astype(np.int64) + 1
    weights = rng.normal(size=len(ids))
    dense_weights = np.zeros(X.shape[1] + 1)
    dense_weights[ids[ids <= X.shape[1]] - 1] = weights[ids <= X.shape[1]]
    expected = X.astype(np.float32).astype(np.float64) @ dense_weights[:X.shape[1]] - 0.25
    outputs = []
    for n_threads in THREADS:
        out = np.empty(X.shape[0])
        _predict.linear_scores(X.indptr.astype(np.int64), X.indices, X.data, ids, weights, 0.25,
                               out, n_threads)
        outputs.append(out)
    assert all(np.array_equal(outputs[0], other) for other in outputs[1:])
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-12, atol=1e-12)


def test_rank_classify_predictions_byte_identical_across_threads(training_files, tmp_path,
                                                                 capsys):
    data = training_files["sparse"]
    model = tmp_path / "model"
    assert learn_main(["-c", "1", "-v", "0", str(data), str(model)]) == 0
    outputs = []
    for n_threads in THREADS:
        out = tmp_path / f"pred{n_threads}"
        assert classify_main(["-j", str(n_threads), "-v", "0", str(data), str(model),
                              str(out)]) == 0
        outputs.append(out.read_bytes())
    capsys.readouterr()
    assert outputs[0] == outputs[1] == outputs[2]
    scores = np.array(outputs[0].split(), dtype=float)
    expected = rankfast.read_model(str(model)).predict(rankfast.load_svmlight(str(data)).X)
    np.testing.assert_allclose(scores, expected, atol=5e-9)


# ------------------------------------------------------------------- reading

def test_parallel_reading_gives_the_same_dataset(training_files):
    for name in ("dense", "sparse"):
        path = str(training_files[name])
        one = rankfast.load_svmlight(path, n_jobs=1)
        for n_jobs in (2, 3):
            many = rankfast.load_svmlight(path, n_jobs=n_jobs, chunk_bytes=50_000)
            for attribute in ("y", "qid", "line"):
                np.testing.assert_array_equal(getattr(many, attribute), getattr(one, attribute))
            for attribute in ("data", "indices", "indptr"):
                np.testing.assert_array_equal(getattr(many.X, attribute), getattr(one.X, attribute))
            assert many.X.shape == one.X.shape


def test_a_file_of_known_size_gets_a_thread_per_min_blocks(tmp_path, monkeypatch):
    """No more parsing threads than the file holds MIN_BLOCKS_PER_THREAD blocks for each;
    streams (size unknown) and compressed files keep every thread."""
    import gzip

    from rankfast.io import svmlight as data
    monkeypatch.setattr(_threads, "available_cores", lambda: 8)
    monkeypatch.setattr(data, "MIN_BLOCKS_PER_THREAD", 3)
    threads_used = []
    read_in_threads = data._read_in_threads

    def spy(stream, path, size, n_threads, *args):
        threads_used.append(n_threads)
        return read_in_threads(stream, path, size, n_threads, *args)
    monkeypatch.setattr(data, "_read_in_threads", spy)
    line = "1 qid:1 1:0.5 2:0.2\n"                                 # 20 bytes
    for lines, expected in ((29, None), (30, 2), (74, 4), (75, 5), (200, 8)):
        path = tmp_path / f"{lines}.dat"
        path.write_text(line * lines)                  # blocks of 100 bytes: 3 a thread
        threads_used.clear()
        data_ = rankfast.load_svmlight(str(path), n_jobs=8, chunk_bytes=100)
        assert len(data_.y) == lines
        assert threads_used == ([] if expected is None else [expected])
    gz = tmp_path / "29.dat.gz"
    gz.write_bytes(gzip.compress((line * 29).encode()))
    threads_used.clear()
    assert len(rankfast.load_svmlight(str(gz), n_jobs=8, chunk_bytes=100).y) == 29
    assert threads_used == [8]


def test_a_stream_starts_threads_as_its_blocks_wait_for_them(tmp_path, monkeypatch,
                                                             started_threads):
    """A compressed file or a pipe may get every core, but a thread starts only when a
    block read waits for one: a stream of one block is parsed on one thread."""
    import gzip
    started = started_threads
    monkeypatch.setattr(_threads, "available_cores", lambda: 8)
    gz = tmp_path / "small.dat.gz"
    gz.write_bytes(gzip.compress(b"1 qid:1 1:0.5 2:0.2\n" * 40))
    assert len(rankfast.load_svmlight(str(gz), n_jobs=8).y) == 40
    assert len(started) == 1
    many = rankfast.load_svmlight(str(gz), n_jobs=8, chunk_bytes=40)     # 20 blocks
    assert len(many.y) == 40 and 1 <= len(started) - 1 <= 8


def test_parallel_reading_reports_the_first_error_in_file_order(tmp_path):
    lines = [f"{i % 3} qid:{i // 7 + 1} 1:{i} 2:0.5 # c{i}\n" for i in range(3000)]
    lines.insert(100, "\n")                                      # blank and comment lines
    lines.insert(200, "# a comment\n")
    lines[2500] = "1 qid:5 3:x\n"                                 # a late error
    lines[1700] = "1 qid:5 0:1\n"                                 # the first one
    path = tmp_path / "bad.dat"
    path.write_text("".join(lines[:-1]) + lines[-1].rstrip("\n"))   # no final newline
    messages = []
    for n_jobs in (1, 2, 3):
        with pytest.raises(rankfast.InputError) as caught:
            rankfast.load_svmlight(str(path), n_jobs=n_jobs, chunk_bytes=4096)
        messages.append(str(caught.value))
    assert messages[0] == messages[1] == messages[2]
    assert ":1701:" in messages[0]
    del lines[1700], lines[2499]
    path.write_text("".join(lines))
    one = rankfast.load_svmlight(str(path), n_jobs=1)
    many = rankfast.load_svmlight(str(path), n_jobs=3, chunk_bytes=4096)
    np.testing.assert_array_equal(many.line, one.line)
    np.testing.assert_array_equal(many.X.toarray(), one.X.toarray())
    assert len(one.y) == 2998


@pytest.mark.usefixtures("every_block_counts")
def test_parallel_reading_of_long_lines_a_byte_order_mark_and_gaps(tmp_path):
    """Lines longer than a thread's block, a BOM, blank and comment lines, colons that are no
    feature's, and no final newline: the threads' dataset is the one thread's, bit for bit."""
    rng = np.random.default_rng(21)
    lines = []
    for i in range(1500):
        width = 1200 if i % 97 == 5 else 6                       # 1,200 features: > 4,096 bytes
        columns = np.sort(rng.choice(3000, width, replace=False)) + 1
        values = np.round(rng.normal(size=width), 4).tolist()
        lines.append(f"{i % 3} qid:{i // 10} sid:{i} " +
                     " ".join(f"{c}:{v!r}" for c, v in zip(columns, values)) +
                     (f" # note 7:{i} cost:1" if i % 5 == 0 else "") + "\n")
        if i % 211 == 0:
            lines.append("\n" if i % 2 else "# 1:2 3:4 a comment line\n")
    path = tmp_path / "long.dat"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(lines).rstrip("\n").encode())
    one = rankfast.load_svmlight(str(path), n_jobs=1)
    for n_jobs in (2, 3):
        for chunk_bytes in (4096, 50_000):
            many = rankfast.load_svmlight(str(path), n_jobs=n_jobs, chunk_bytes=chunk_bytes)
            for attribute in ("y", "qid", "line"):
                np.testing.assert_array_equal(getattr(many, attribute), getattr(one, attribute))
            for attribute in ("data", "indices", "indptr"):
                np.testing.assert_array_equal(getattr(many.X, attribute), getattr(one.X, attribute))
    assert one.line[-1] == len(lines) and len(one.y) == 1500


def test_threads_read_standard_input_and_pipes_as_one_thread_does(tmp_path, monkeypatch):
    """A stream of unknown length (standard input from a pipe, plain or compressed) on two
    threads: the arrays grow by half as blocks need, to the one thread's dataset, fitted;
    standard input from a file is read as a file is."""
    import gzip
    rng = np.random.default_rng(5)
    text = "".join(f"{i % 3} qid:{i // 9} " + " ".join(f"{j}:{rng.random():.5f}" for j in
                                                       range(1, 2 + i % 13)) + "\n"
                   for i in range(6000)).encode()
    path = tmp_path / "data.dat"
    path.write_bytes(text)
    one = rankfast.load_svmlight(str(path), n_jobs=1)
    for payload, raw in ((text, _Pipe), (gzip.compress(text), io.BytesIO), (text, io.BytesIO)):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(raw(payload))))
        two = rankfast.load_svmlight("-", n_jobs=2, chunk_bytes=8192)
        for attribute in ("y", "qid", "line"):
            np.testing.assert_array_equal(getattr(two, attribute), getattr(one, attribute))
        for attribute in ("data", "indices", "indptr"):
            np.testing.assert_array_equal(getattr(two.X, attribute), getattr(one.X, attribute))
        assert len(two.features.data.base) == len(two.features.data)


def test_compressed_files_on_threads_give_the_one_thread_dataset(tmp_path):
    """gzip with n_jobs=2: this thread decompresses while the pool parses (comments: one
    thread); the same dataset and comments, the first error at its line, and a corrupt
    stream's message."""
    import gzip
    lines = [f"{i % 3} qid:{i // 7 + 1} 1:{i} 2:0.5 # c{i}\n" for i in range(30000)]
    path = tmp_path / "data.dat.gz"
    path.write_bytes(gzip.compress("".join(lines).encode()))
    for comments in (False, True):
        one = rankfast.load_svmlight(str(path), n_jobs=1, chunk_bytes=4096, comments=comments)
        two = rankfast.load_svmlight(str(path), n_jobs=2, chunk_bytes=4096, comments=comments)
        for attribute in ("y", "qid", "line"):
            np.testing.assert_array_equal(getattr(two, attribute), getattr(one, attribute))
        for attribute in ("data", "indices", "indptr"):
            np.testing.assert_array_equal(getattr(two.X, attribute), getattr(one.X, attribute))
        assert two.comments == one.comments and len(one.y) == 30000
    lines[20000] = "1 qid:5 3:x\n"
    path.write_bytes(gzip.compress("".join(lines).encode()))
    with pytest.raises(rankfast.InputError, match=r":20001: feature value in '3:x'"):
        rankfast.load_svmlight(str(path), n_jobs=2, chunk_bytes=4096)
    packed = gzip.compress("".join(lines[:10000]).encode())
    path.write_bytes(packed[:len(packed) // 2])                  # cut short
    with pytest.raises(rankfast.InputError, match="cannot read"):
        rankfast.load_svmlight(str(path), n_jobs=2, chunk_bytes=4096)


def _import_rankfast_in_a_child(**env):
    """stdout and stderr of a fresh Python that imports rankfast and says whether its
    environment and its children's hold OMP_WAIT_POLICY (libgomp prints its settings)."""
    import subprocess
    import sys
    code = ("import os, subprocess, sys, rankfast\n"
            "print(os.environ.get('OMP_WAIT_POLICY'))\n"
            "print(subprocess.run([sys.executable, '-c', \"import os; "
            "print(os.environ.get('OMP_WAIT_POLICY'))\"], capture_output=True, text=True)"
            ".stdout.strip())\n")
    environ = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**environ, "OMP_DISPLAY_ENV": "verbose", **env}, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split(), done.stderr


def test_passive_waiting_is_set_for_the_kernels_only():
    (own, child), stderr = _import_rankfast_in_a_child()
    assert own == "None" and child == "None"          # not left for other libraries or children
    if b"GOMP_parallel" not in Path(_prsvm.__file__).read_bytes():
        pytest.skip("the kernels are not built with GNU OpenMP (it prints no settings)")
    # Built with it, importing rankfast loads the runtime, which prints its settings
    assert "GOMP_SPINCOUNT = '0'" in stderr            # PASSIVE: the threads never spin


def test_an_explicit_wait_policy_wins():
    (own, child), stderr = _import_rankfast_in_a_child(OMP_WAIT_POLICY="ACTIVE")
    assert own == child == "ACTIVE"
    if "OMP_WAIT_POLICY = " in stderr:
        assert "OMP_WAIT_POLICY = 'ACTIVE'" in stderr


class _Pipe(io.RawIOBase):
    """Bytes read as from a pipe: not seekable, so their length is unknown."""

    def __init__(self, payload):
        self._bytes = io.BytesIO(payload)

    def readable(self):
        return True

    def readinto(self, buffer):
        return self._bytes.readinto(buffer)


@pytest.mark.parametrize("compressed", [False, True])
def test_the_first_error_raises_wherever_the_arrays_grow(tmp_path, monkeypatch, compressed):
    """A stream of unknown length grows its arrays every few blocks, once all the blocks
    before are placed: an error found while placing them then is the one raised, at its
    line, never lost (an error placed there once went missing and the read ended short)."""
    import gzip
    lines = [f"{i % 3} qid:{i // 9} 1:{i} 2:0.5\n" for i in range(3000)]
    for bad in range(40, 3000, 97):
        text = "".join(lines[:bad] + ["1 qid:5 3:x\n"] + lines[bad + 1:]).encode()
        payload = gzip.compress(text, compresslevel=1) if compressed else text
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(_Pipe(payload))))
        with pytest.raises(rankfast.InputError, match=rf":{bad + 1}: feature value in '3:x'"):
            rankfast.load_svmlight("-", n_jobs=2, chunk_bytes=2048)
