"""svm_rank model files both ways, and svm_rank_classify's arithmetic."""
import contextlib
import gzip
import resource

import numpy as np
import pytest
import scipy.sparse as sp
from shared_paths import REFERENCE, require

from rankfast import (
    InputError,
    KernelModel,
    KernelParams,
    LinearModel,
    load_svmlight,
    read_model,
    write_model,
)
from rankfast.io.model_files import format_model

EXAMPLE3 = REFERENCE / "example3"


def reference_pairs():
    """(model, data, predictions) triples of every prediction file in the reference."""
    triples = []
    for pred in sorted(p for p in EXAMPLE3.glob("pred_*_c*.txt") if "svmlight" not in p.name):
        which, tag = pred.stem.split("_")[1], pred.stem.split("_", 2)[2]
        triples.append((EXAMPLE3 / f"model_{tag}.dat", EXAMPLE3 / f"{which}.dat", pred))
    triples.append((EXAMPLE3 / "model_svmlight_zp_c1.dat", EXAMPLE3 / "test.dat",
                    EXAMPLE3 / "pred_svmlight_zp_c1.txt"))
    for kind in ("dense", "sparse"):
        for c in ("0.01", "1", "20"):
            triples.append((REFERENCE / "synthetic" / f"{kind}_c{c}.model",
                            REFERENCE / "synthetic" / f"{kind}_test.dat.gz",
                            REFERENCE / "synthetic" / f"{kind}_c{c}.test.pred.gz"))
    for name in ("small_rank_c20", "small_light_c1"):
        model = REFERENCE / "synthetic" / f"{name}.model"
        triples.append((model if model.exists() else model.with_suffix(".model.gz"),
                        REFERENCE / "synthetic" / "dense_test.dat.gz",
                        REFERENCE / "synthetic" / f"{name}.test.pred.gz"))
    return triples


def read_text(path):
    return gzip.open(path, "rt").read() if str(path).endswith(".gz") else open(path).read()


@pytest.mark.parametrize("model_path, data_path, pred_path", reference_pairs(),
                         ids=lambda p: p.name)
def test_predictions_match_svm_rank(model_path, data_path, pred_path):
    require(model_path)
    model = read_model(str(model_path))
    scores = model.predict(load_svmlight(str(data_path)).X)
    text = "".join("%.8f\n" % s for s in scores)
    if "light" in model_path.name:               # svm_classify's own '%.8g' files
        expected = np.array(read_text(pred_path).split(), dtype=float)
        np.testing.assert_allclose(scores, expected, rtol=1e-7, atol=1e-7)
    elif isinstance(model, LinearModel):
        assert text == read_text(pred_path)          # byte-identical
    else:
        expected = np.array(read_text(pred_path).split(), dtype=float)
        np.testing.assert_allclose(scores, expected, atol=1e-6, rtol=0)


def test_prediction_lines_are_printf_8f_to_the_byte():
    """format_scores' own '%.8f' (|score| < 1e10) against Python's, which rounds the exact
    binary value half to even as glibc's printf (so svm_rank_classify) does: scores at every
    scale, exact ties (odd / 2**k), zeros, subnormals, the 1e10 border (printf's side), NaN;
    then huge and infinite scores (Python's formatting for the whole block)."""
    from rankfast._kernels import _predict
    rng = np.random.default_rng(11)
    parts = [rng.standard_normal(5000) * scale for scale in 10.0 ** np.arange(-10, 11)]
    odd = rng.integers(-2**40, 2**40, 1000) * 2 + 1
    parts += [odd / 2.0 ** k for k in range(1, 64)]
    parts.append(np.array([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 5e-9, -5e-9,
                           1.5e-8, 2.5e-8, 1 / 512, -3 / 512, 1e10, -1e10, np.nextafter(1e10, 0),
                           -np.nextafter(1e10, 0), 9.99e29, np.nan]))
    scores = np.concatenate(parts)
    for block in (scores, np.r_[scores[::97], 1e30, -1e300, np.inf, -np.inf]):
        expected = "".join("%.8f\n" % v if v == v else "-nan\n" for v in block.tolist())
        assert bytes(_predict.format_scores(block)).decode() == expected


def test_linear_model_file_layout_matches_svm_rank(tmp_path):
    reference = require(EXAMPLE3 / "model_c3.dat").read_text().splitlines(keepends=True)
    model = read_model(str(EXAMPLE3 / "model_c3.dat"))
    assert isinstance(model, LinearModel)
    assert model.highest_feature_index == 6 and model.n_documents == 8
    assert model.feature_ids.tolist() == [1, 2, 3, 4, 5]
    mine = format_model(model).splitlines(keepends=True)
    assert mine[:11] == reference[:11]           # header, trailing spaces included
    assert mine[11].startswith("1 1:1.521512 2:-0.05749705") and mine[11].endswith(" #\n")
    words = [w.split(":") for w in mine[11].split()[1:-1]]
    ref_words = [w.split(":") for w in reference[11].split()[1:-1]]
    assert [(i, np.float32(v)) for i, v in words] == [(i, np.float32(v)) for i, v in ref_words]


def test_linear_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(0)
    w = (rng.normal(size=50) * 10.0 ** rng.integers(-20, 20, size=50)).astype(np.float32)
    w[::7] = 0.0
    model = LinearModel.from_dense(w, bias=0.25, n_documents=99,
                                   metadata={"version": "x", "algorithm": "prsvm", "C": 0.01})
    path = tmp_path / "m.dat"
    write_model(model, str(path))
    back = read_model(str(path))
    assert back.weights.tobytes() == model.weights.tobytes()
    assert back.feature_ids.tolist() == (np.flatnonzero(w) + 1).tolist()
    assert back.bias == 0.25 and back.highest_feature_index == 51 and back.n_documents == 99
    assert back.metadata == {"version": "x", "algorithm": "prsvm", "C": "0.01"}
    assert format_model(back) == path.read_text()
    assert "0 # kernel type\n" in path.read_text()


def test_empty_linear_model(tmp_path):
    model = LinearModel.from_dense(np.zeros(3))
    path = tmp_path / "m.dat"
    write_model(model, str(path))
    assert path.read_text().splitlines()[-1] == "1 #"
    assert read_model(str(path)).predict(sp.csr_matrix(np.ones((2, 3)))).tolist() == [0.0, 0.0]


def test_kernel_model_round_trip_and_svm_rank_kernel_file(tmp_path):
    ref = read_model(str(require(EXAMPLE3 / "model_c3_t2.dat")))
    assert isinstance(ref, KernelModel)
    assert ref.kernel.kernel == 2 and ref.kernel.gamma == 0.5
    path = tmp_path / "k.dat"
    write_model(ref, str(path))
    back = read_model(str(path))
    X = load_svmlight(str(EXAMPLE3 / "test.dat")).X
    np.testing.assert_array_equal(back.predict(X), ref.predict(X))


@pytest.mark.parametrize("kernel", [KernelParams(1, 2, 1.0, 0.5, 1.0), KernelParams(2, 3, 0.3),
                                    KernelParams(3, 3, 1.0, 0.2, -0.1), KernelParams(0)])
def test_kernel_evaluation_against_direct_sum(kernel):
    rng = np.random.default_rng(3)
    sv = np.round(rng.normal(size=(7, 5)) * 8) / 8       # float32-exact values
    X = np.round(rng.normal(size=(20, 5)) * 8) / 8
    alphas = rng.normal(size=7)
    model = KernelModel(kernel, alphas, sp.csr_matrix(sv), 0.5, 6)

    def k(a, b):
        dot = a @ b
        return [dot, (kernel.coef_lin * dot + kernel.coef_const) ** kernel.degree,
                np.exp(-kernel.gamma * ((a - b) @ (a - b))),
                np.tanh(kernel.coef_lin * dot + kernel.coef_const)][kernel.kernel]
    direct = [sum(alphas[i] * k(x, sv[i]) for i in range(7)) - 0.5 for x in X]
    np.testing.assert_allclose(model.predict(sp.csr_matrix(X), n_jobs=2), direct, rtol=1e-6)


def random_csr(rng, rows, width, density, columns=None):
    """CSR with unsorted indices and explicit zeros, its entries in ``columns`` (default all)."""
    columns = np.arange(width) if columns is None else columns
    M = sp.random(rows, len(columns), density=density, random_state=rng, format="csr")
    M.data = np.round(M.data * 16 - 8) / 8
    M.data[::7] = 0.0
    M.indices = columns[M.indices].astype(M.indices.dtype)
    M = sp.csr_matrix((M.data, M.indices, M.indptr), shape=(rows, width))
    for i in range(rows):                                  # reverse each row's order
        lo, hi = M.indptr[i], M.indptr[i + 1]
        M.indices[lo:hi], M.data[lo:hi] = M.indices[lo:hi][::-1].copy(), M.data[lo:hi][::-1].copy()
    M.has_sorted_indices = False
    return M


@pytest.mark.parametrize("kernel", [KernelParams(1, 3, 1.0, 0.5, 1.0), KernelParams(2, 3, 0.3),
                                    KernelParams(3, 3, 1.0, 0.2, -0.1), KernelParams(0)])
def test_sparse_kernel_over_the_used_columns_equals_the_plain_product(kernel, monkeypatch):
    """Dot products over the columns B uses give the bits of scipy's A @ B.T over all columns."""
    rng = np.random.default_rng(5)
    B = random_csr(rng, 5, 400, 0.3, columns=np.sort(rng.choice(400, 40, replace=False)))
    B = sp.csr_matrix((B.data, B.indices, np.insert(B.indptr, 2, B.indptr[2])),
                      shape=(6, 400))                     # row 2: an empty support vector
    A = random_csr(rng, 50, 400, 0.1)
    compact = kernel(A, B)
    monkeypatch.setattr("rankfast.models._sparse_dot", lambda A, B: (A @ B.T).toarray())
    assert compact.tobytes() == kernel(A, B).tobytes()
    np.testing.assert_allclose(compact, kernel(A.toarray(), B.toarray()), rtol=1e-12, atol=1e-15)


@contextlib.contextmanager
def address_space_cap(extra):
    """Let this process map at most ``extra`` more bytes inside the block (MemoryError beyond)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as status:
        size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    cap = size + extra if hard == resource.RLIM_INFINITY else min(size + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def test_wide_sparse_kernel_model_predicts_as_its_narrow_twin():
    """Renumbering features 1..d to indices up to 2**31 − 1 changes no score and costs no memory."""
    rng = np.random.default_rng(6)
    sv, X = random_csr(rng, 9, 30, 0.4), random_csr(rng, 25, 30, 0.4)
    huge = np.sort(rng.choice(2**31 - 2, 30, replace=False))

    def spread(M):
        return sp.csr_matrix((M.data, huge[M.indices], M.indptr), shape=(M.shape[0], 2**31 - 1))
    alphas = rng.normal(size=9)
    for kernel in (KernelParams(2, gamma=0.2), KernelParams(1, 2, 0.5, 0.5, 1.0)):
        narrow = KernelModel(kernel, alphas, sv, 0.25, 31).predict(X)
        with address_space_cap(1 << 30):
            wide = KernelModel(kernel, alphas, spread(sv), 0.25, 2**31).predict(spread(X))
        np.testing.assert_allclose(wide, narrow, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("mutate, line, message", [
    (lambda t: t.replace("V6.20", "V6.01", 1), 1, "V6.20"),
    (lambda t: t.replace("0 # kernel type", "x # kernel type"), 2, "kernel type"),
    (lambda t: t.replace("0 # kernel type", "9 # kernel type"), 2, "unknown kernel"),
    (lambda t: t.replace("6 # highest", "3 # highest"), 12, "highest feature index"),
    (lambda t: t.replace("2 # number of support", "3 # number of support"), 13, "support vector lines"),
    (lambda t: t.replace("1 1:1.521512", "1 1:abc"), 12, "1:abc"),
    (lambda t: "\n".join(t.split("\n")[:5]), 5, "header"),
])
def test_malformed_model_files_name_the_line(tmp_path, mutate, line, message):
    text = require(EXAMPLE3 / "model_c3.dat").read_text()
    path = tmp_path / "bad.dat"
    path.write_text(mutate(text))
    with pytest.raises(InputError) as info:
        read_model(str(path))
    assert info.value.line == line and message in str(info.value)


def test_failed_write_leaves_previous_file(tmp_path):
    path = tmp_path / "m.dat"
    path.write_text("previous")
    bad = LinearModel.from_dense(np.array([1.0, np.nan]))
    with pytest.raises(ValueError):
        write_model(bad, str(path))
    assert path.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["m.dat"]
    with pytest.raises(InputError, match="cannot write"):
        write_model(LinearModel.from_dense(np.ones(2)), str(tmp_path / "no" / "m.dat"))


def test_several_support_vectors_sum_in_float64_as_svm_rank_classify(tmp_path):
    """w = Σ_i α_i float32(s_i) accumulated in double (not rounded to float32 again)."""
    header = require(EXAMPLE3 / "model_c3.dat").read_text().splitlines(keepends=True)[:11]
    header[9] = "4 # number of support vectors plus 1 \n"
    path = tmp_path / "m.dat"
    path.write_text("".join(header) + "0.3 1:0.1 3:2.5 #\n-0.7 1:0.2 2:1e-3 #\n0.11 1:0.7 #\n")
    model = read_model(str(path))
    f = lambda v: float(np.float32(v))                       # noqa: E731
    w1 = 0.0 + 0.3 * f(0.1)
    w1 += -0.7 * f(0.2)
    w1 += 0.11 * f(0.7)
    assert model.weights.tolist() == [w1, -0.7 * f(1e-3), 0.3 * f(2.5)]
    X = sp.csr_matrix(np.array([[1.0, 2.0, 3.0]]))
    expected = ((0.0 + w1 * f(1.0)) + (-0.7 * f(1e-3)) * f(2.0)) + (0.3 * f(2.5)) * f(3.0)
    assert model.predict(X).tolist() == [expected]


def test_prediction_ignores_features_above_model_and_huge_indices():
    model = LinearModel(np.array([2, 2000000000], dtype=np.int64), np.array([1.5, 2.0]), 0.5,
                        2000000001)
    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 1, 1999999999, 2100000000]),
                       np.array([0, 3, 4])), shape=(2, 2147483647))
    assert model.predict(X).tolist() == [1.5 * 2.0 + 2.0 * 3.0 - 0.5, -0.5]


def test_a_failing_disk_write_is_an_input_error_and_leaves_nothing(tmp_path):
    from rankfast.io.files import atomic_output
    path = tmp_path / "out.txt"
    with pytest.raises(InputError, match="cannot write: No space left on device"):
        with atomic_output(str(path)) as out:
            out.write("partial")
            raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "dir").mkdir()
    with pytest.raises(InputError, match="cannot write"):
        with atomic_output(str(tmp_path / "dir")) as out:
            out.write("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]
