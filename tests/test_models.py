"""rankfast.models: LinearModel, KernelModel and RFFModel score as svm_rank_classify does."""

import contextlib
import gzip
import math
import resource

import numpy as np
import pytest
import scipy.sparse as sp
from data_makers import ranking_data
from fit_helpers import rff_learner
from shared_paths import REFERENCE, require

import rankfast.models
from rankfast import (
    KernelApproxLearner,
    KernelModel,
    KernelParams,
    LinearModel,
    RankSVM,
    RFFModel,
    load_svmlight,
    read_model,
    write_model,
)
from rankfast.io.model_files import format_rff_model, parse_rff_model

RBF = KernelParams(2, gamma=0.5)


POLY = KernelParams(1, degree=2, coef_lin=0.5, coef_const=1.0)


SIGMOID = KernelParams(3, coef_lin=0.2, coef_const=-0.1)


def sprod_ss(a, b):
    """SVM-light's dot product of two sparse rows given as {index: float32 value}."""
    total = 0.0
    for j in sorted(set(a) & set(b)):
        total = total + float(np.float32(a[j]) * np.float32(b[j]))
    return total


def svm_light_score(model, x):
    k = model.kernel
    total = 0.0
    sv_rows = model.support_vectors.tocsr()
    for s, alpha in enumerate(model.alphas):
        row = sv_rows[s]
        sv = {int(j): np.float32(v) for j, v in zip(row.indices, row.data)}
        dot = sprod_ss(sv, x)
        if k.kernel == 2:
            value = math.exp((-k.gamma) * ((sprod_ss(sv, sv) - (dot + dot)) + sprod_ss(x, x)))
        elif k.kernel == 1:
            value = math.pow(k.coef_lin * dot + k.coef_const, float(k.degree))
        else:
            value = math.tanh(k.coef_lin * dot + k.coef_const)
        total = total + value * float(alpha)
    return total - model.bias


def random_model(rng, kernel, width):
    n_sv = int(rng.integers(1, 30))
    density = rng.choice([0.2, 1.0])
    values = np.where(rng.random((n_sv, width)) < density, rng.normal(size=(n_sv, width)), 0.0)
    params = KernelParams(kernel=kernel, degree=int(rng.integers(1, 4)),
                          gamma=float(rng.choice([0.01, 0.5, 3.0])),
                          coef_lin=float(rng.choice([0.1, 1.0])),
                          coef_const=float(rng.choice([0.0, 1.0, -0.5])))
    return KernelModel(params, rng.normal(size=n_sv) / n_sv, sp.csr_matrix(values),
                       float(rng.normal()), width + 1)


def random_rows(rng, n, width):
    """Rows with features beyond the model's width (ignored), explicit zeros, empty rows."""
    wider = width + 3
    values = np.where(rng.random((n, wider)) < 0.5, rng.normal(size=(n, wider)) * 3, 0.0)
    values[0] = 0.0
    X = sp.csr_matrix(values)
    X.data[::7] = 0.0                                  # stored zeros
    return X


@pytest.mark.parametrize("kernel", [1, 2, 3], ids=["polynomial", "rbf", "sigmoid"])
@pytest.mark.parametrize("layout", ["columns", "rows"])
def test_scores_have_the_bits_of_svm_light_arithmetic(kernel, layout, monkeypatch):
    if layout == "rows":
        monkeypatch.setattr(rankfast.models, "DENSE_SV_VALUES", 0)
    rng = np.random.default_rng(kernel)
    for _ in range(4):
        width = int(rng.integers(1, 12))
        model = random_model(rng, kernel, width)
        X = random_rows(rng, 25, width)
        expected = []
        for i in range(X.shape[0]):
            row = X[i]
            x = {int(j): np.float32(v) for j, v in zip(row.indices, row.data) if j < width + 1}
            expected.append(svm_light_score(model, x))
        scores = model.predict(X)
        assert scores.tolist() == expected
        assert model.predict(X, n_jobs=2).tolist() == expected


def test_unsorted_and_duplicate_entries_are_the_canonical_matrix():
    model = random_model(np.random.default_rng(5), 2, 4)
    X = sp.csr_matrix((np.array([0.5, 1.0, 0.25, 2.0]), np.array([3, 0, 3, 1]),
                       np.array([0, 3, 4])), shape=(2, 4))
    canonical = X.copy()
    canonical.sum_duplicates()
    assert model.predict(X).tolist() == model.predict(canonical).tolist()
    assert X.indices.tolist() == [3, 0, 3, 1]            # the caller's matrix is left as it was


@pytest.mark.parametrize("model_file, test_file, predictions", [
    ("example3/model_c3_t2.dat", "example3/test.dat", "example3/pred_test_c3_t2.txt"),
    ("edge_cases/opt_t2/model.dat", "example3/test.dat", "edge_cases/opt_t2/pred_test"),
])
def test_svm_rank_kernel_models_give_svm_rank_classify_files(tmp_path, model_file, test_file,
                                                              predictions):
    from rankfast.cli.classify import classify_main
    out = tmp_path / "predictions"
    assert classify_main(["-v", "0", str(require(REFERENCE / test_file)),
                          str(REFERENCE / model_file), str(out)]) == 0
    assert out.read_bytes() == (REFERENCE / predictions).read_bytes()


@pytest.mark.parametrize("case", ["opt_t1", "opt_t2", "opt_t3"])
def test_svm_rank_kernel_models_score_as_the_reference_arithmetic(case):
    from rankfast import load_svmlight
    model = read_model(str(require(REFERENCE / "edge_cases" / case / "model.dat")))
    X = load_svmlight(str(REFERENCE / "example3" / "test.dat")).X[:60]
    width = model.highest_feature_index
    expected = [svm_light_score(model, {int(j): np.float32(v) for j, v in
                                        zip(X[i].indices, X[i].data) if j < width})
                for i in range(X.shape[0])]
    assert model.predict(X).tolist() == expected


EXAMPLE3 = REFERENCE / "example3"


@pytest.mark.parametrize("kernel", [RBF, POLY, SIGMOID], ids=["rbf", "poly", "sigmoid"])
def test_written_nystroem_model_scores_like_the_map(tmp_path, kernel):
    X, y, qid = ranking_data()
    learner = KernelApproxLearner(RankSVM(C=1.0), kernel, landmarks=100, seed=4).fit(X, y, qid)
    model = learner.to_model(n_features=X.shape[1], n_documents=len(y))
    assert isinstance(model, KernelModel) and model.bias == 0.0
    assert model.support_vectors.shape == (100, X.shape[1])
    assert model.highest_feature_index == X.shape[1] + 1
    path = tmp_path / "nystroem.dat"
    write_model(model, str(path))
    back = read_model(str(path))
    assert isinstance(back, KernelModel) and back.kernel == kernel
    np.testing.assert_array_equal(back.alphas, model.alphas)        # alphas: exact doubles
    # Training values are float32-exact: the file then holds every number the map used.
    f = learner.decision_function(X)
    scale = np.abs(f).max()
    np.testing.assert_allclose(back.predict(X), f, rtol=0, atol=1e-9 * scale)
    # Other values: svm_rank_classify (and predict) round x to float32; about 1e-7 relative.
    Xt = np.random.default_rng(8).random((200, X.shape[1])) / 3.0
    np.testing.assert_allclose(back.predict(Xt), learner.decision_function(Xt),
                               rtol=0, atol=1e-6 * scale)


def test_svm_rank_kernel_model_still_classifies():
    model = read_model(str(require(EXAMPLE3 / "model_c3_t2.dat")))
    assert isinstance(model, KernelModel)
    scores = model.predict(load_svmlight(str(EXAMPLE3 / "test.dat")).X)
    expected = np.array((EXAMPLE3 / "pred_test_c3_t2.txt").read_text().split(), dtype=float)
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-6)


def test_rff_model_predicts_the_map_scores_and_round_trips_exactly():
    X, y, qid = ranking_data()
    learner = rff_learner(X, y, qid)
    model = learner.to_model(n_features=X.shape[1], n_documents=len(y))
    assert isinstance(model, RFFModel) and model.highest_feature_index == X.shape[1] + 1
    assert model.metadata["seed"] == 7 and model.metadata["approx"] == "rff"
    np.testing.assert_allclose(model.predict(X, block_rows=33), learner.decision_function(X),
                               rtol=1e-12, atol=1e-12)
    text = format_rff_model(model)
    back = parse_rff_model(text, "m.dat")
    for name in ("omega", "offset", "weights"):
        assert getattr(back, name).tobytes() == getattr(model, name).tobytes(), name
    assert (back.gamma, back.bias, back.highest_feature_index, back.n_documents) == \
           (2.0, 0.0, X.shape[1] + 1, len(y))
    assert back.metadata == {k: str(v) for k, v in model.metadata.items()}
    assert format_rff_model(back) == text
    assert back.predict(X).tobytes() == model.predict(X).tobytes()


def test_rff_model_ignores_features_above_its_width():
    X, y, qid = ranking_data(queries=10)
    model = rff_learner(X, y, qid).to_model(n_features=X.shape[1])
    wider = np.hstack([X, np.ones((len(X), 4))])
    np.testing.assert_array_equal(model.predict(wider), model.predict(X))


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
