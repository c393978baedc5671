"""Kernel models score documents as svm_rank_classify does, to the last bit.

The reference below is SVM-light's arithmetic written out one operation at a time
(svm_common.c: classify_example, kernel_s, single_kernel, sprod_ss): each shared
feature's float32 values multiplied in float32, the products added in float64 in
feature order, the C library's exp, pow and tanh (Python's math calls them), the
support vectors in file order.  Until this was the kernel's arithmetic, a third of
the RBF predictions of svm_rank's own models differed in the 8th decimal.
"""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from shared_paths import REFERENCE, require

import rankfast.models
from rankfast import KernelModel, KernelParams, read_model


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
