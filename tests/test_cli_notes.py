"""rankfast.cli.notes: the note that a kernel saturates on the features it is given."""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from data_makers import raw_scale_features as _raw_scale_features

from rankfast import KernelParams


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
