"""rankfast.learners.kernel_width: gamma "auto", the median heuristic, in the maps and learners."""

import numpy as np
import pytest
import scipy.sparse as sp

from rankfast import KernelApproxLearner, KernelParams, NystroemMap, RandomFourierMap, RankSVM
from rankfast.learners.kernel_width import SAMPLE, median_gamma, sample_rows

AUTO = KernelParams(2, gamma="auto")


def brute_median_gamma(X):
    """1 / the median ||a-b||^2 over the pairs of distinct rows, one pair at a time."""
    squares = [float(((a - b) ** 2).sum()) for i, a in enumerate(X) for b in X[i + 1:]]
    return 1.0 / np.median([s for s in squares if s > 0])


@pytest.mark.parametrize("n", [3, 4, 40, SAMPLE + 50])
def test_median_gamma_is_one_over_the_median_squared_distance_of_the_sample(n):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 3)) * [1.0, 10.0, 0.1]
    X[1] = X[0]                                   # equal documents: a pair that says nothing
    rows = sample_rows(n, seed=5)
    assert len(rows) == min(n, SAMPLE) and np.all(np.diff(rows) > 0)
    expected = brute_median_gamma(X[rows])
    assert median_gamma(X, seed=5) == pytest.approx(expected, rel=1e-5)       # 6 digits
    assert median_gamma(sp.csr_matrix(X), seed=5) == median_gamma(X, seed=5)


def test_median_gamma_of_identical_documents_warns_and_is_one():
    with pytest.warns(UserWarning, match="every training document sampled is the same"):
        assert median_gamma(np.ones((5, 2))) == 1.0


@pytest.mark.parametrize("kind", [NystroemMap, RandomFourierMap])
def test_maps_resolve_auto_to_the_heuristic_of_what_they_are_fitted_on(kind):
    """fit replaces "auto" by the number (in kernel_), leaves the parameter as given, and maps as
    the explicit gamma does, to the last bit."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4)) * [1.0, 3.0, 0.5, 2.0]
    fitted = kind(AUTO, 30, seed=2).fit(X)
    gamma = median_gamma(X, seed=2)
    assert fitted.kernel_.gamma == gamma and fitted.kernel.gamma == "auto"
    explicit = kind(KernelParams(2, gamma=gamma), 30, seed=2).fit(X)
    np.testing.assert_array_equal(fitted.transform(X), explicit.transform(X))


def test_learner_with_auto_gamma_is_the_learner_with_the_printed_gamma():
    """normalize first, then the heuristic on the normalised documents: the model equals the one
    trained with that number, and scores raw features of very different scales well."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3)) * [1e-3, 1.0, 1e3]
    y = (X[:, 0] * 1e3) ** 2 + X[:, 1] ** 2 + (X[:, 2] / 1e3) ** 2      # non-linear in each
    qid = np.repeat([1, 2], 200)
    lines = []
    auto = KernelApproxLearner(RankSVM(C=1.0), AUTO, landmarks=80, normalize="zscore").fit(
        X, y, qid, log=lambda text, level=1: lines.append(text))
    gamma = auto.map_.kernel_.gamma
    assert gamma == median_gamma(X / X.std(axis=0), seed=0)
    assert any(f"'gamma' = {gamma:g} (auto" in line for line in lines)
    explicit = KernelApproxLearner(RankSVM(C=1.0), KernelParams(2, gamma=gamma), landmarks=80,
                                   normalize="zscore").fit(X, y, qid)
    np.testing.assert_array_equal(auto.predict(X), explicit.predict(X))
    assert auto.to_model().kernel.gamma == gamma
    assert auto.score(X, y, qid) > 0.9


@pytest.mark.parametrize("kernel", [KernelParams(1, gamma="auto"), KernelParams(3, gamma="auto"),
                                    KernelParams(2, gamma="scale")])
def test_auto_is_for_the_rbf_kernel_only(kernel):
    with pytest.raises(ValueError, match="gamma must be a number or 'auto'"):
        NystroemMap(kernel).fit(np.eye(3))
