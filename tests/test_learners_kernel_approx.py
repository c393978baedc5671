"""rankfast.learners.kernel_approx: the Nystroem and random Fourier maps and KernelApproxLearner."""

import math
import re

import numpy as np
import pytest
import scipy.sparse as sp
from data_makers import ranking_data
from data_makers import raw_scale_features as _raw_scale_features
from shared_paths import REFERENCE, require

from rankfast import KernelApproxLearner, KernelParams, NystroemMap, RandomFourierMap, RankSVM, load_svmlight
from rankfast.io._model_text import VERSION_LINE
from rankfast.io.model_files import format_model
from rankfast.learners.kernel_approx import RFF_MAX_VALUES
from rankfast.metrics import pairwise_accuracy

EXAMPLE3 = REFERENCE / "example3"


RBF = KernelParams(2, gamma=0.5)


POLY = KernelParams(1, degree=2, coef_lin=0.5, coef_const=1.0)


SIGMOID = KernelParams(3, coef_lin=0.2, coef_const=-0.1)


def test_kernel_overflow_from_features_blames_the_features():
    from rankfast import KernelParams, NystroemMap
    X = np.array([[1e39, 1.0], [0.0, 1.0], [1.0, 0.0]])
    with np.errstate(over="ignore"), pytest.raises(ValueError, match="rescale the features"):
        NystroemMap(KernelParams(2)).fit(X)


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


@pytest.mark.parametrize("kernel", [KernelParams(2, gamma=1e308),
                                    KernelParams(1, degree=1000, coef_lin=1.0, coef_const=1.0)],
                         ids=["rbf", "poly"])
def test_an_overflowing_kernel_is_a_clear_error_not_nan_features(kernel):
    X = sp.csr_matrix(np.random.default_rng(0).uniform(1, 2, size=(20, 3)))
    with np.errstate(all="raise"):          # no RuntimeWarning may escape either
        with pytest.raises(ValueError, match=r"kernel \((RBF|polynomial), .*\) overflows"):
            NystroemMap(kernel, landmarks=5).fit(X)


def test_kernel_learner_normalises_before_the_map():
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
    with pytest.raises(ValueError, match="normalize must be"):
        KernelApproxLearner(normalize="minmax").fit(X, y, qid)


@pytest.mark.parametrize("approx", ["nystrom", "rff"])
def test_zscore_kernel_models_do_not_depend_on_the_features_scales(tmp_path, approx):
    """normalize="zscore" divides each feature by its training deviation before the map, and
    the model (its file too) scores raw features: rescaling any feature of the training and
    test data alike leaves the scores as they were; without it, the RBF kernel of features
    of very different scales sees only the largest and ranks worse."""
    from rankfast import read_model, write_model
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4)) * [1e-3, 1.0, 50.0, 1e4]
    y = np.sin(X[:, 0] * 1e3) + X[:, 1] ** 2 + (X[:, 2] > 0)       # non-linear in every scale
    qid = np.ones(len(y))
    train, test = slice(0, 200), slice(200, 300)

    def fitted(features):
        return KernelApproxLearner(RankSVM(C=10.0, tol=1e-10), KernelParams(2, gamma=0.25), approx,
                                   landmarks=100, normalize="zscore").fit(
            features[train], y[train], qid[train])
    ranker = fitted(X)
    stretch = np.array([1e4, 0.5, 3.0, 1e-4])
    scores = ranker.predict(X[test])
    # float32 values of the documents and landmarks round differently after the stretch; the
    # optimum (solved tightly: at the default tolerance the two stopping points differ by
    # 2e-3 of the scores on one machine, 2e-6 on another) moves by about 1e-8 of them
    np.testing.assert_allclose(fitted(X * stretch).predict(X[test] * stretch), scores,
                               rtol=0, atol=1e-6 * np.abs(scores).max())
    path = tmp_path / "m.dat"
    write_model(ranker.to_model(), str(path))
    model = read_model(str(path))
    np.testing.assert_allclose(model.predict(X[test]), scores, rtol=0,
                               atol=1e-4 * np.abs(scores).max())   # 8 digits, float32 values
    raw = KernelApproxLearner(RankSVM(C=10.0), KernelParams(2, gamma=0.25), approx,
                              landmarks=100).fit(X[train], y[train], qid[train])
    assert ranker.score(X[test], y[test], qid[test]) > raw.score(X[test], y[test], qid[test]) + 0.1
    if approx == "nystrom":
        text = path.read_text().splitlines()
        assert "rankfast normalize=zscore: only rank_classify" in text[1]
        assert " scale=" in text[11]
    else:
        assert "scale=" not in path.read_text()         # folded into Ω


def test_a_nystrom_model_whose_scale_does_not_fit_is_refused_at_its_line(tmp_path):
    from rankfast import read_model, write_model
    from rankfast.errors import InputError
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(40, 3)) * [1, 10, 100], rng.normal(size=40)
    ranker = KernelApproxLearner(RankSVM(), RBF, landmarks=10, normalize="zscore").fit(X, y)
    path = tmp_path / "m.dat"
    write_model(ranker.to_model(), str(path))
    text = path.read_text()
    scale = re.search(r"scale=(\S+)", text).group(1)
    for bad in (scale.rsplit(",", 1)[0], scale + ",1", scale.replace(scale.split(",")[0], "-1", 1),
                "a,b,c"):
        path.write_text(text.replace(f"scale={scale}", f"scale={bad}"))
        with pytest.raises(InputError, match=r"m\.dat:12: the model's scale="):
            read_model(str(path))


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


def test_a_kernel_model_from_the_api_records_its_training_documents():
    from rankfast import KernelApproxLearner
    rng = np.random.default_rng(4)
    X, y, qid = rng.normal(size=(30, 3)), rng.integers(0, 3, 30), np.repeat(np.arange(3), 10)
    for approx in ("nystrom", "rff"):
        model = KernelApproxLearner(approx=approx, landmarks=5, seed=0).fit(X, y, qid).to_model()
        assert model.n_documents == 30


def test_a_c_grid_maps_the_documents_once_per_fold_and_gamma(monkeypatch):
    """GridSearch over kernel__gamma x base_learner__C fitted a map per C; KernelApproxLearner.
    fit_path maps once and walks the base learner's C path from that map."""
    from rankfast.model_selection import GridSearch
    rng = np.random.default_rng(5)
    X = rng.normal(size=(240, 3))
    y = (X ** 2).sum(axis=1).round()
    qid = np.repeat(np.arange(12), 20)
    maps = []
    real = NystroemMap._fit_checked

    def counted(self, X):
        maps.append(X.shape[0])
        return real(self, X)
    monkeypatch.setattr(NystroemMap, "_fit_checked", counted)
    search = GridSearch(KernelApproxLearner(RankSVM(), RBF, landmarks=40),
                        {"kernel__gamma": [0.1, 0.5], "base_learner__C": [0.1, 1.0, 10.0]}, cv=3)
    search.fit(X, y, qid)
    assert len(maps) == 3 * 2 + 1                       # folds x gammas, and the final refit
    path = list(KernelApproxLearner(RankSVM(), RBF, landmarks=40).fit_path(X, y, qid,
                                                                         [0.1, 1.0, 10.0]))
    for C, fitted in zip([0.1, 1.0, 10.0], path):
        alone = KernelApproxLearner(RankSVM(C=C), RBF, landmarks=40).fit(X, y, qid)
        assert fitted.base_learner.C == C
        assert fitted.to_model().metadata["C"] == alone.to_model().metadata["C"]
        scores = alone.predict(X)
        np.testing.assert_allclose(fitted.predict(X), scores, rtol=0,
                                   atol=5e-3 * np.abs(scores).max())   # warm starts, tolerance
