"""Kernel approximation: Nyström and random Fourier maps, their models and files."""
import math
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from shared_paths import REFERENCE, require

from rankfast import (
    InputError,
    KernelApproxLearner,
    KernelModel,
    KernelParams,
    NystroemMap,
    RandomFourierMap,
    RankSVM,
    RFFModel,
    load_svmlight,
    read_model,
    write_model,
)
from rankfast.io._model_text import RFF_VERSION_LINE, VERSION_LINE
from rankfast.io.model_files import format_model, format_rff_model, parse_rff_model
from rankfast.learners.kernel_approx import RFF_MAX_VALUES
from rankfast.metrics import pairwise_accuracy

CHECKOUT = Path(__file__).resolve().parents[1]
EXAMPLE3 = REFERENCE / "example3"
RBF = KernelParams(2, gamma=0.5)
POLY = KernelParams(1, degree=2, coef_lin=0.5, coef_const=1.0)
SIGMOID = KernelParams(3, coef_lin=0.2, coef_const=-0.1)


def direct_kernel(kernel, A, B):
    """k(a, b) for every pair of rows, one pair at a time (the formulas of SVM-light's kernel.h)."""
    out = np.empty((len(A), len(B)))
    for i, a in enumerate(A):
        for j, b in enumerate(B):
            dot = float(a @ b)
            out[i, j] = {1: (kernel.coef_lin * dot + kernel.coef_const) ** kernel.degree,
                         2: math.exp(-kernel.gamma * float((a - b) @ (a - b))),
                         3: math.tanh(kernel.coef_lin * dot + kernel.coef_const)}[kernel.kernel]
    return out


def points(n, d=5, seed=0):
    return np.random.default_rng(seed).random((n, d))


def ranking_data(queries=40, per_query=12, d=6, seed=1):
    """Documents whose relevance falls with the distance to a centre: no linear ranker gets it."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((queries * per_query, d)) * 64) / 64        # float32-exact values
    distance = ((X - 0.5) ** 2).sum(axis=1)
    y = np.digitize(-distance, np.quantile(-distance, [0.5, 0.8])).astype(float)
    qid = np.repeat(np.arange(1, queries + 1), per_query)
    return X, y, qid


# ------------------------------------------------------------------ the maps

@pytest.mark.parametrize("kernel", [RBF, POLY], ids=["rbf", "poly"])
def test_nystroem_is_exact_when_every_document_is_a_landmark(kernel):
    X = points(60)
    phi = NystroemMap(kernel, landmarks=1000).fit(X).transform(X)
    K = direct_kernel(kernel, X, X)
    assert np.abs(phi @ phi.T - K).max() <= 1e-8 * np.abs(K).max()


def test_nystroem_error_falls_as_landmarks_grow():
    X = points(300)
    K = direct_kernel(RBF, X, X)
    errors = []
    for m in (5, 20, 80, 300):
        phi = NystroemMap(RBF, landmarks=m, seed=3).fit(X).transform(X)
        errors.append(np.linalg.norm(phi @ phi.T - K) / np.linalg.norm(K))
    assert errors[0] > errors[1] > errors[2] > errors[3]
    assert errors[0] > 0.05 and errors[2] < 1e-3 and errors[3] < 1e-9


def test_random_fourier_error_falls_like_one_over_root_m():
    X = points(40, d=4)
    K = direct_kernel(RBF, X, X)
    errors = []
    for m in (100, 1000, 10000):
        phi = RandomFourierMap(RBF, components=m, seed=5).fit(X).transform(X)
        errors.append(np.abs(phi @ phi.T - K).mean())
    assert errors[1] < errors[0] / 2 and errors[2] < errors[1] / 2
    assert errors[2] < 0.02


def test_random_fourier_map_against_its_formula_on_sparse_input():
    rng = np.random.default_rng(2)
    X = sp.random(30, 8, density=0.2, random_state=3, format="csr")
    rff = RandomFourierMap(KernelParams(2, gamma=0.3), components=7, seed=11).fit(X)
    wider = sp.hstack([X, sp.csr_matrix(rng.random((30, 3)))]).tocsr()   # extra features ignored
    dense = X.toarray()
    expected = [[math.sqrt(2 / 7) * math.cos(float(rff.omega_[i] @ x) + rff.offset_[i])
                 for i in range(7)] for x in dense]
    np.testing.assert_allclose(rff.transform(wider), expected, rtol=1e-12, atol=1e-14)
    assert rff.omega_.shape == (7, 8)


def test_random_fourier_draws_follow_the_kernel():
    rff = RandomFourierMap(KernelParams(2, gamma=0.125), components=4000)
    rff.fit(np.zeros((1, 50)))
    assert abs(rff.omega_.std() - math.sqrt(2 * 0.125)) < 0.01       # ω ~ N(0, 2γ I)
    assert abs(rff.omega_.mean()) < 0.01
    assert 0 <= rff.offset_.min() and rff.offset_.max() < 2 * math.pi
    assert abs(rff.offset_.mean() - math.pi) < 0.1                   # b ~ U[0, 2π]


def test_random_fourier_features_are_reproducible_from_the_seed():
    X = points(20)
    first = RandomFourierMap(RBF, components=50, seed=42).fit(X)
    again = RandomFourierMap(RBF, components=50, seed=42).fit(X)
    other = RandomFourierMap(RBF, components=50, seed=43).fit(X)
    assert first.omega_.tobytes() == again.omega_.tobytes()
    assert first.offset_.tobytes() == again.offset_.tobytes()
    assert first.transform(X).tobytes() == again.transform(X).tobytes()
    assert not np.array_equal(first.omega_, other.omega_)


def test_nystroem_landmarks_are_reproducible_and_float32():
    X = points(200) / 3.0                                            # not float32-exact
    a = NystroemMap(RBF, landmarks=30, seed=9).fit(X)
    b = NystroemMap(RBF, landmarks=30, seed=9).fit(X)
    c = NystroemMap(RBF, landmarks=30, seed=10).fit(X)
    assert a.landmark_rows_.tolist() == b.landmark_rows_.tolist() != c.landmark_rows_.tolist()
    assert len(set(a.landmark_rows_.tolist())) == 30                 # without replacement
    np.testing.assert_array_equal(a.landmarks_.toarray(),
                                  X[a.landmark_rows_].astype(np.float32).astype(np.float64))


class RecordingKernel(KernelParams):
    """A kernel that remembers the largest block it was asked to evaluate."""

    largest = 0

    def __call__(self, A, B):
        RecordingKernel.largest = max(RecordingKernel.largest, A.shape[0] * B.shape[0])
        return super().__call__(A, B)


def test_mapping_works_in_bounded_blocks():
    X = points(1000)
    kernel = RecordingKernel(2, gamma=0.5)
    whole = NystroemMap(kernel, landmarks=50, block_rows=4096).fit(X)
    RecordingKernel.largest = 0
    blocked = NystroemMap(kernel, landmarks=50, block_rows=64).fit(X)
    RecordingKernel.largest = 0
    phi = blocked.transform(X)
    assert RecordingKernel.largest == 64 * 50
    np.testing.assert_allclose(phi, whole.transform(X), rtol=1e-12, atol=1e-14)
    rff = RandomFourierMap(RBF, components=30, block_rows=4096).fit(X)
    small = RandomFourierMap(RBF, components=30, block_rows=7).fit(X)
    np.testing.assert_array_equal(small.transform(X), rff.transform(X))


def test_sparse_and_dense_inputs_map_alike():
    X = sp.random(300, 40, density=0.1, random_state=4, format="csr")   # sparse branch
    nys = NystroemMap(POLY, landmarks=60, seed=2).fit(X)
    Z = nys.landmarks_.toarray()
    expected = direct_kernel(POLY, X.toarray()[:25], Z) @ nys.projection_
    np.testing.assert_allclose(nys.transform(X[:25]), expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(nys.transform(X[:25].toarray()), expected, rtol=1e-9, atol=1e-12)


# ------------------------------------------------ near-singular and indefinite

def test_duplicated_landmarks_stay_finite_and_exact():
    base = points(25)
    X = np.vstack([base, base, base + 1e-9])                         # 75 rows, 25 distinct points
    nys = NystroemMap(RBF, landmarks=75).fit(X)
    phi = nys.transform(X)
    assert np.isfinite(phi).all() and np.isfinite(nys.projection_).all()
    assert nys.rank_ <= 25 and np.abs(nys.eigenvalues_).min() < 1e-12
    K = direct_kernel(RBF, X, X)
    assert np.abs(phi @ phi.T - K).max() < 1e-6


def test_identical_landmarks_give_one_feature():
    X = np.tile([0.25, 0.5, 1.0], (40, 1))
    nys = NystroemMap(RBF, landmarks=10).fit(X)
    assert nys.rank_ == 1
    np.testing.assert_allclose(np.abs(nys.transform(X[:3])), 1.0, rtol=1e-12)   # φ² = k(x, x)


def test_sigmoid_drops_negative_eigenvalues():
    X = np.round(points(40) * 256) / 64 - 2                          # float32-exact: Z = X
    nys = NystroemMap(SIGMOID, landmarks=40).fit(X)
    lam = nys.eigenvalues_
    assert lam.min() < -1e-3                                          # tanh is not PSD here
    assert nys.rank_ == np.count_nonzero(lam > 1e-10 * np.abs(lam).max())
    W = direct_kernel(SIGMOID, nys.landmarks_.toarray(), nys.landmarks_.toarray())
    values, vectors = np.linalg.eigh(W)
    positive = vectors[:, values > 0] * values[values > 0] @ vectors[:, values > 0].T
    phi = nys.transform(X)
    assert np.isfinite(phi).all()
    np.testing.assert_allclose(phi @ phi.T, positive, atol=1e-8)


def test_no_documents_no_landmarks():
    """A data problem, not a usage error: rank_learn reports it against the training file."""
    with pytest.raises(ValueError, match="no documents"):
        NystroemMap(RBF).fit(sp.csr_matrix((0, 4)))


def test_kernel_without_positive_eigenvalue_is_refused():
    X = points(20)
    with pytest.raises(ValueError, match="no eigenvalue above"):
        NystroemMap(KernelParams(3, coef_lin=1e-9, coef_const=-5.0), landmarks=20).fit(X)


def test_random_fourier_features_refuse_a_huge_width_before_drawing():
    """Ω holds one value per random feature and feature index: 500 × (2**31 − 1) is refused."""
    X = sp.csr_matrix(([1.0], [2**31 - 2], [0, 1]), shape=(1, 2**31 - 1))
    with pytest.raises(ValueError, match=r"500 x 2147483647 omega matrix \(8589.9 GB"):
        RandomFourierMap(RBF, components=500).fit(X)
    d = RFF_MAX_VALUES // 4                                     # just above the limit
    with pytest.raises(ValueError, match=f"5 x {d} omega"):
        RandomFourierMap(RBF, components=5).fit(sp.csr_matrix((1, d)))
    assert RandomFourierMap(RBF, components=1).fit(sp.csr_matrix((1, 8))).omega_.shape == (1, 8)


@pytest.mark.parametrize("make", [
    lambda: NystroemMap(KernelParams(0)),
    lambda: NystroemMap(RBF, landmarks=0),
    lambda: RandomFourierMap(POLY),
    lambda: RandomFourierMap(KernelParams(2, gamma=0.0)),
    lambda: KernelApproxLearner(RankSVM(), RBF, approx="exact"),
    lambda: KernelApproxLearner(RankSVM(), SIGMOID, approx="rff"),
])
def test_impossible_settings_raise_value_error(make):
    estimator = make()                         # scikit-learn's rule: __init__ only stores
    with pytest.raises(ValueError):
        estimator.check_parameters()
    with pytest.raises(ValueError):
        estimator.fit(*ranking_data()) if hasattr(estimator, "score") else estimator.fit(
            ranking_data()[0])


# ---------------------------------------------------------------- learning

@pytest.mark.parametrize("approx", ["nystrom", "rff"])
def test_kernel_approximation_learns_what_a_linear_ranker_cannot(approx):
    X, y, qid = ranking_data()
    linear = RankSVM(C=10.0).fit(X, y, qid).decision_function(X)
    learner = KernelApproxLearner(RankSVM(C=10.0), KernelParams(2, gamma=4.0), approx,
                                  landmarks=200, seed=0).fit(X, y, qid)
    assert pairwise_accuracy(linear, y, qid) < 0.7
    assert pairwise_accuracy(learner.decision_function(X), y, qid) > 0.9


class LeastSquaresRanker:
    """The smallest learner the wrapper must accept: fit + feature_ids_ / weights_ (no to_model)."""

    name = "lsq"

    def fit(self, X, y, qid, log=None):
        self.weights_ = np.linalg.lstsq(X, y, rcond=None)[0]
        self.feature_ids_ = np.arange(1, X.shape[1] + 1)
        return self


def test_any_linear_learner_can_be_wrapped(tmp_path):
    X, y, qid = ranking_data(queries=10)
    learner = KernelApproxLearner(LeastSquaresRanker(), RBF, landmarks=30).fit(X, y, qid)
    phi = learner.map_.transform(X)
    np.testing.assert_allclose(learner.decision_function(X), phi @ learner.weights_)
    model = learner.to_model(n_features=X.shape[1], n_documents=len(y))
    assert model.metadata["algorithm"] == "lsq" and model.metadata["approx"] == "nystrom"
    np.testing.assert_allclose(model.predict(X), phi @ learner.weights_, rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------------ Nyström models

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


def test_nystroem_file_has_svm_rank_kernel_layout(tmp_path):
    reference = require(EXAMPLE3 / "model_c3_t2.dat").read_text().splitlines(keepends=True)
    data = load_svmlight(str(EXAMPLE3 / "train.dat"))
    learner = KernelApproxLearner(RankSVM(C=3.0), KernelParams(2, gamma=0.5), landmarks=6)
    learner.fit(data.X, data.y, data.qid)
    mine = format_model(learner.to_model(n_features=data.n_features,
                                          n_documents=data.n_documents)).splitlines(keepends=True)
    assert mine[0] == reference[0] == VERSION_LINE + "\n"
    for number, (line, ref) in enumerate(zip(mine[1:11], reference[1:11]), start=2):
        value, ref_value = re.match(r"[^ #]*", line).group(), re.match(r"[^ #]*", ref).group()
        assert line[len(value):] == ref[len(ref_value):], number     # same comment, spaces
        if number in (2, 3, 4, 5, 6, 7, 8, 11):                        # same kernel, -g, width, b
            assert value == ref_value, number
    assert mine[9] == "7 # number of support vectors plus 1 \n"          # 6 landmarks
    sv_line = re.compile(r"^-?[0-9.e+-]+( [1-9][0-9]*:-?[0-9.e+-]+)* #.*\n$")
    assert all(sv_line.match(line) for line in reference[11:])
    assert len(mine) == 11 + 6 and all(sv_line.match(line) for line in mine[11:])
    for line in mine[11:]:
        ids = [int(word.split(":")[0]) for word in line.split("#")[0].split()[1:]]
        assert ids == sorted(set(ids)) and max(ids) < 6


def test_svm_rank_kernel_model_still_classifies():
    model = read_model(str(require(EXAMPLE3 / "model_c3_t2.dat")))
    assert isinstance(model, KernelModel)
    scores = model.predict(load_svmlight(str(EXAMPLE3 / "test.dat")).X)
    expected = np.array((EXAMPLE3 / "pred_test_c3_t2.txt").read_text().split(), dtype=float)
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-6)


# ------------------------------------------- a feature index of 2**31 − 1

def run_limited(program, *args, cwd, limit=3 << 29):
    """Run a launcher of the checkout with its address space capped at ``limit`` bytes (1.5 GB)."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return subprocess.run([sys.executable, str(CHECKOUT / program), *map(str, args)],
                          cwd=cwd, preexec_fn=cap, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(CHECKOUT), OPENBLAS_NUM_THREADS="1",
                                   OMP_NUM_THREADS="1"))     # BLAS threads reserve memory too


def test_huge_feature_index_trains_and_classifies_in_little_memory(tmp_path):
    """Nothing is allocated per possible feature index: 2**31 − 1 scores as 3 would."""
    lines = "3 qid:1 1:1 {big}:1\n2 qid:1 1:0 2:1\n1 qid:2 1:1\n2 qid:2 2:1\n"
    predictions = []
    for big in (2**31 - 1, 3):
        data, model, pred = (tmp_path / f"{name}{big}" for name in ("data", "model", "pred"))
        data.write_text(lines.format(big=big))
        learn = run_limited("rank_learn", "-v", "0", "-t", "2", "-c", "1", data, model, cwd=tmp_path)
        assert learn.returncode == 0, learn.stderr
        classify = run_limited("rank_classify", "-v", "0", data, model, pred, cwd=tmp_path)
        assert classify.returncode == 0, classify.stderr
        assert model.read_text().split("\n")[7].split()[0] == str(big + 1)
        predictions.append(pred.read_text())
    assert predictions[0] == predictions[1]
    rff = run_limited("rank_learn", "-t", "2", "--approx", "rff", tmp_path / f"data{2**31 - 1}",
                      tmp_path / "rff", cwd=tmp_path)
    assert rff.returncode == 1 and "500 x 2147483647 omega matrix" in rff.stderr, rff.stderr
    assert not (tmp_path / "rff").exists()


# ------------------------------------------------------------------ RFF models

def rff_learner(X, y, qid, seed=7):
    return KernelApproxLearner(RankSVM(C=1.0), KernelParams(2, gamma=2.0), "rff",
                               landmarks=64, seed=seed).fit(X, y, qid)


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


def test_rff_file_is_refused_by_svm_light_readers():
    """svm_rank_classify reads 'SVM-light Version %s' and stops unless it is V6.20."""
    X, y, qid = ranking_data(queries=10)
    text = format_rff_model(rff_learner(X, y, qid).to_model())
    first = text.split("\n", 1)[0]
    assert first == RFF_VERSION_LINE and not first.startswith("SVM-light Version")


def on_line(number, change):
    """A mutation of the file's text that rewrites its line ``number`` (1-based)."""
    def mutate(text):
        lines = text.split("\n")
        lines[number - 1] = change(lines[number - 1])
        return "\n".join(lines)
    return mutate


def third_word(replacement):
    return lambda line: " ".join(line.split(" ")[:2] + [replacement] + line.split(" ")[3:])


@pytest.mark.parametrize("mutate, line, message", [
    (on_line(1, lambda l: "rankfast RFF model V3"), 1, "not a rankfast RFF"),
    (on_line(2, lambda l: "1 # kernel type"), 2, "kernel type must be 2"),
    (on_line(3, lambda l: "x" + l[1:]), 3, "-g"),
    (on_line(6, lambda l: "65" + l[2:]), 71, "announces 65"),
    (lambda t: "\n".join(t.split("\n")[:4]), 4, "ends inside its header"),
    (on_line(8, lambda l: l.split(" ", 1)[1]), 8, "7 numbers, expected 8"),
    (on_line(9, third_word("nan")), 9, "not finite"),
    (on_line(10, third_word("1.5x")), 10, "not a number"),
    (on_line(11, lambda l: l[:-2]), 11, "'#'"),
])
def test_malformed_rff_files_name_the_line(mutate, line, message):
    X, y, qid = ranking_data(queries=10)
    text = format_rff_model(rff_learner(X, y, qid).to_model(n_features=X.shape[1]))
    with pytest.raises(InputError) as info:
        parse_rff_model(mutate(text), "bad.dat")
    assert info.value.line == line and message in str(info.value), str(info.value)


def test_rff_model_goes_through_write_and_read_model(tmp_path):
    X, y, qid = ranking_data(queries=10)
    model = rff_learner(X, y, qid).to_model(n_features=X.shape[1])
    path = tmp_path / "rff.dat"
    write_model(model, str(path))
    assert path.read_text() == format_rff_model(model)
    back = read_model(str(path))
    assert isinstance(back, RFFModel)
    assert back.predict(X).tobytes() == model.predict(X).tobytes()


@pytest.mark.parametrize("kernel", [KernelParams(2, gamma=1e308),
                                    KernelParams(1, degree=1000, coef_lin=1.0, coef_const=1.0)],
                         ids=["rbf", "poly"])
def test_an_overflowing_kernel_is_a_clear_error_not_nan_features(kernel):
    X = sp.csr_matrix(np.random.default_rng(0).uniform(1, 2, size=(20, 3)))
    with np.errstate(all="raise"):          # no RuntimeWarning may escape either
        with pytest.raises(ValueError, match=r"kernel \((RBF|polynomial), .*\) overflows"):
            NystroemMap(kernel, landmarks=5).fit(X)


def _raw_scale_features(rng, n=300):
    """LETOR-like raw features: counts in the hundreds of millions beside fractions."""
    return np.column_stack([rng.uniform(0, 2e8, n), rng.uniform(0, 1, n), rng.integers(0, 50, n)])


@pytest.mark.parametrize("sparse", [False, True])
def test_saturation_note_names_a_saturated_rbf_kernel_and_a_scale_that_is_not(sparse):
    from rankfast.cli.notes import RBF_SATURATED, saturation_note
    X = _raw_scale_features(np.random.default_rng(3))
    X = sp.csr_matrix(X) if sparse else X
    note = saturation_note(KernelParams(2, gamma=1.0), X)
    assert note is not None and note.startswith("-g 1: the RBF kernel")
    suggested = float(re.search(r"try -g near (\S+) ", note).group(1))
    diffs = X.toarray() if sparse else X
    distances = ((diffs[:, None, :] - diffs[None, :, :]) ** 2).sum(axis=2)[np.triu_indices(len(diffs), 1)]
    assert suggested == pytest.approx(1.0 / np.median(distances), rel=0.05)
    assert 1.0 * np.median(distances) > RBF_SATURATED
    assert saturation_note(KernelParams(2, gamma=suggested), X) is None


def test_saturation_note_stays_silent_on_scaled_features_and_other_kernels():
    from rankfast.cli.notes import saturation_note
    rng = np.random.default_rng(4)
    scaled = rng.uniform(0, 1, (200, 46))                # LETOR's query-normalised features
    for kernel in (KernelParams(2, gamma=1.0), KernelParams(3), KernelParams(2, gamma=0.01)):
        assert saturation_note(kernel, scaled) is None
    raw = _raw_scale_features(rng)
    assert saturation_note(KernelParams(1), raw) is None             # polynomial: no saturation
    assert saturation_note(KernelParams(0), raw) is None
    assert saturation_note(KernelParams(2), np.ones((50, 3)) * 1e8) is None   # equal documents
    assert saturation_note(KernelParams(2), raw[:1]) is None


def test_saturation_note_names_a_saturated_sigmoid_kernel():
    from rankfast.cli.notes import TANH_SATURATED, saturation_note
    X = _raw_scale_features(np.random.default_rng(5))
    note = saturation_note(KernelParams(3, coef_lin=1.0, coef_const=1.0), X)
    assert note is not None and "tanh(s a*b + r) is +-1" in note
    suggested = float(re.search(r"try -s near (\S+) ", note).group(1))
    products = (X @ X.T)[np.triu_indices(len(X), 1)]
    assert suggested == pytest.approx(1.0 / np.median(np.abs(products)), rel=0.05)
    assert np.median(np.abs(products + 1.0)) > TANH_SATURATED
    assert saturation_note(KernelParams(3, coef_lin=suggested, coef_const=0.0), X) is None
    unit = np.zeros((20, 2))
    unit[:, 0] = 1.0                                                # a*b = 1: saturated by r alone
    assert "use a smaller |r|" in saturation_note(KernelParams(3, coef_lin=0.0, coef_const=50.0),
                                                   unit)


def test_rank_learn_notes_a_saturated_kernel_and_how_to_scale_for_kernels(tmp_path, capsys):
    from rankfast import dump_svmlight
    from rankfast.cli.learn import learn_main
    rng = np.random.default_rng(6)
    X = _raw_scale_features(rng, 200)
    y = rng.integers(0, 3, 200).astype(float)
    path = tmp_path / "raw.dat"
    dump_svmlight(X, y, np.repeat(np.arange(20), 10), str(path))
    assert learn_main(["-t", "2", str(path), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert "note: -g 1: the RBF kernel" in err and "scale the features (--normalize query or log)" in err
    assert "--normalize query (per query, as LETOR) or log may train a better model" in err
    assert learn_main(["-t", "2", "--normalize", "query", str(path), str(tmp_path / "m")]) == 0
    assert "note" not in capsys.readouterr().err                  # scaled per query: not saturated
    assert learn_main(["-t", "2", "--normalize", "log", str(path), str(tmp_path / "m")]) == 0
    assert "note" not in capsys.readouterr().err
    assert learn_main(["-t", "2", "-g", "1000", "--normalize", "log", str(path),
                       str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err                       # saturated although normalised: -g only
    assert "the RBF kernel" in err and "try -g near" in err and "--normalize" not in err
    assert learn_main(["-t", "2", "-g", "1e-18,1", str(path), str(tmp_path / "m")]) == 0
    assert "the RBF kernel" not in capsys.readouterr().err             # the smallest -g is fine
    assert learn_main(["-v", "0", "-t", "3", str(path), str(tmp_path / "m")]) == 0
    assert capsys.readouterr().err == ""
    assert learn_main([str(path), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert "--normalize query (per query, as LETOR)" in err and "kernel" not in err


def _raw_ranking_files(tmp_path, rng, n_queries=12, per_query=15):
    """Training and test files of raw-scale features whose relevance is not linear in them."""
    from rankfast import dump_svmlight
    paths = []
    for name in ("train", "test"):
        X = _raw_scale_features(rng, n_queries * per_query)
        X[:, 0] *= rng.uniform(0.1, 10, n_queries).repeat(per_query)      # scales vary by query
        y = np.round(2 * np.sin(3 * X[:, 1]) + (X[:, 2] > 25)).clip(0, 3)
        path = tmp_path / f"{name}.dat"
        dump_svmlight(X, y, np.repeat(np.arange(n_queries), per_query), str(path))
        paths.append(path)
    return paths


@pytest.mark.parametrize("approx", ["nystrom", "rff"])
@pytest.mark.parametrize("kind", ["query", "log"])
def test_normalize_with_a_kernel_scores_as_the_normalised_files_would(tmp_path, kind, approx):
    """--normalize query|log with -t 2: the model records it, and rank_classify on the raw test
    file scores as the model trained on normalised files scores the normalised test file."""
    from rankfast import dump_svmlight
    from rankfast.cli.classify import classify_main
    from rankfast.cli.learn import learn_main
    from rankfast.data.normalize import Normalizer
    train, test = _raw_ranking_files(tmp_path, np.random.default_rng(7))
    flags = ["-v", "0", "-t", "2", "-g", "0.5", "-c", "1", "--approx", approx, "--landmarks", "40"]
    assert learn_main(flags + ["--normalize", kind, str(train), str(tmp_path / "m")]) == 0
    model_text = (tmp_path / "m").read_text()
    assert f"normalize={kind}" in model_text
    if approx == "nystrom":                      # svm_rank's users are told it is not theirs
        assert f"rankfast normalize={kind}: only rank_classify applies this model" in model_text
    for name, source in (("train", train), ("test", test)):
        data = load_svmlight(str(source), dtype=np.float32)
        scaled = Normalizer(kind).transform(data.X, data.qid)
        dump_svmlight(scaled, data.y, data.qid, str(tmp_path / f"{name}_scaled.dat"))
    assert learn_main(flags + [str(tmp_path / "train_scaled.dat"), str(tmp_path / "m_scaled")]) == 0
    assert classify_main(["-v", "0", str(test), str(tmp_path / "m"), str(tmp_path / "p")]) == 0
    assert classify_main(["-v", "0", str(tmp_path / "test_scaled.dat"), str(tmp_path / "m_scaled"),
                          str(tmp_path / "p_scaled")]) == 0
    ours, theirs = np.loadtxt(tmp_path / "p"), np.loadtxt(tmp_path / "p_scaled")
    assert np.ptp(ours) > 0                                      # a model that ranks
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6 * np.abs(theirs).max())
    model = read_model(str(tmp_path / "m"))
    data = load_svmlight(str(test))
    np.testing.assert_allclose(model.predict(data.X, data.qid), ours, rtol=1e-6, atol=1e-8)  # %.8f
    if kind == "query":
        with pytest.raises(ValueError, match="pass qid"):
            model.predict(data.X)


def test_kernel_learner_normalises_before_the_map_and_refuses_zscore(tmp_path):
    from rankfast.cli.learn import learn_main
    from rankfast.data.normalize import query_min_max
    rng = np.random.default_rng(8)
    X = _raw_scale_features(rng, 120)
    y = (X[:, 1] > 0.5).astype(float) + (X[:, 2] > 25)
    qid = np.repeat(np.arange(8), 15)
    ranker = KernelApproxLearner(RankSVM(C=1.0), RBF, landmarks=30, normalize="query").fit(X, y, qid)
    plain = KernelApproxLearner(RankSVM(C=1.0), RBF, landmarks=30).fit(query_min_max(X, qid), y, qid)
    np.testing.assert_allclose(ranker.predict(X, qid), plain.predict(query_min_max(X, qid)),
                               rtol=1e-10, atol=1e-12)
    assert ranker.score(X, y, qid) == pytest.approx(plain.score(query_min_max(X, qid), y, qid))
    assert ranker.to_model().metadata["normalize"] == "query"
    assert "normalize" not in plain.to_model().metadata
    with pytest.raises(ValueError, match="pass qid|needs the query"):
        ranker.predict(X)
    with pytest.raises(ValueError, match="zscore"):
        KernelApproxLearner(normalize="zscore").fit(X, y, qid)
    path = tmp_path / "d.dat"
    path.write_text("1 qid:1 1:1\n0 qid:1 1:2\n")
    assert learn_main(["-t", "2", "--normalize", "zscore", str(path), str(tmp_path / "m")]) == 2
    assert not (tmp_path / "m").exists()


def test_normalising_kernel_models_ignore_features_above_their_width(tmp_path):
    """A test file naming feature 2**31 - 1 (negative: a query's columns would be made dense)."""
    from rankfast.cli.classify import classify_main
    from rankfast.cli.learn import learn_main
    train, test = _raw_ranking_files(tmp_path, np.random.default_rng(9))
    lines = test.read_text().splitlines()
    wide = tmp_path / "wide.dat"
    wide.write_text("".join(line + (" 2147483647:-1\n" if i % 2 else "\n")
                            for i, line in enumerate(lines)))
    for approx in ("nystrom", "rff"):
        model = tmp_path / f"m_{approx}"
        assert learn_main(["-v", "0", "-t", "2", "-g", "0.5", "--approx", approx, "--landmarks",
                           "30", "--normalize", "query", str(train), str(model)]) == 0
        for name, data in (("p", test), ("p_wide", wide)):
            assert classify_main(["-v", "0", str(data), str(model), str(tmp_path / name)]) == 0
        np.testing.assert_array_equal(np.loadtxt(tmp_path / "p"), np.loadtxt(tmp_path / "p_wide"))
        first = model.read_text().splitlines()[0]
        assert first == ("rankfast RFF model V2" if approx == "rff" else "SVM-light Version V6.20")
    X = load_svmlight(str(train))
    ranker = KernelApproxLearner(RankSVM(C=1.0), RBF, landmarks=30, normalize="query").fit(
        X.X, X.y, X.qid)
    W = load_svmlight(str(wide))
    T = load_svmlight(str(test))
    np.testing.assert_array_equal(ranker.predict(W.X, W.qid), ranker.predict(T.X, T.qid))


def test_kernel_models_check_the_queries_they_are_given():
    X = _raw_scale_features(np.random.default_rng(10), 60)
    y, qid = (X[:, 1] > 0.5).astype(float), np.repeat(np.arange(4), 15)
    ranker = KernelApproxLearner(RankSVM(C=1.0), RBF, landmarks=20, normalize="query").fit(X, y, qid)
    for approx in ("nystrom", "rff"):
        model = KernelApproxLearner(RankSVM(C=1.0), RBF, approx=approx, landmarks=20,
                                    normalize="query").fit(X, y, qid).to_model()
        for bad in (qid[:-1], np.r_[qid, 0, 0, 0]):
            with pytest.raises(ValueError, match="qid must hold one query id per row"):
                model.predict(X, bad)
    with pytest.raises(ValueError, match="qid must hold one query id per row"):
        ranker.predict(X, qid[:-1])
    with pytest.raises(ValueError, match="base learner would normalise the mapped features"):
        KernelApproxLearner(RankSVM(normalize="log"), RBF).fit(X, y, qid)


def test_a_kernel_learner_pickled_before_normalize_existed_still_works():
    import pickle
    X = _raw_scale_features(np.random.default_rng(12), 40) / 1e8
    y, qid = (X[:, 1] > np.median(X[:, 1])).astype(float), np.repeat(np.arange(4), 10)
    ranker = KernelApproxLearner(RankSVM(C=1.0), RBF, landmarks=10).fit(X, y, qid)
    del ranker.normalize                                 # as an older rankfast pickled it
    del ranker.normalizer_
    restored = pickle.loads(pickle.dumps(ranker))
    assert restored.get_params()["normalize"] == "none"
    assert "normalize" not in restored.to_model().metadata
    np.testing.assert_array_equal(restored.predict(X), ranker.predict(X))


def test_saturation_note_names_g_1_on_many_scaled_features():
    """136 query-normalised features (MSLR's count) put most pairs ~23 apart in ||a-b||^2:
    at svm_rank's -g 1 the kernel is ~1e-10 between them, and on MSLR-like data such a
    model ranked near random (NDCG@10 0.176 against 0.356 at the suggested -g)."""
    from rankfast.cli.notes import saturation_note
    X = np.random.default_rng(5).uniform(0, 1, (300, 136))
    note = saturation_note(KernelParams(2, gamma=1.0), X)
    assert note is not None and "is below 1e-4 between most training documents" in note
    suggested = float(re.search(r"try -g near (\S+) ", note).group(1))
    assert 0.03 < suggested < 0.06                             # 1 / (136 / 6)
    assert saturation_note(KernelParams(2, gamma=suggested), X) is None
