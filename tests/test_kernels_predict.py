"""rankfast._kernels._predict: linear scores against the plain sum, float32 as float64."""

import array

import numpy as np
import pytest
from data_makers import bits, random_csr

from rankfast._kernels import _predict

THREADS = (1, 2, 3)


@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_linear_scores_of_float32_data_are_those_of_float64(index):
    rng = np.random.default_rng(3)
    X = random_csr(rng, 500, 40)
    ids = np.flatnonzero(rng.random(45) < 0.7).astype(np.int64) + 1
    weights = rng.normal(size=len(ids))
    indices, indptr = X.indices.astype(index), X.indptr.astype(index)
    expected = np.empty(500)
    _predict.linear_scores(indptr, indices, X.data.astype(np.float64), ids, weights, 0.25,
                           expected)
    assert np.isfinite(expected).all()
    for t in THREADS:
        out = np.empty(500)
        _predict.linear_scores(indptr, indices, X.data, ids, weights, 0.25, out, t)
        assert bits(out) == bits(expected)


def brute_force_scores(indptr, indices, values, ids, weights, bias):
    """sum of weight * float32(value) over the row's features the model has, in file order."""
    weight_of = dict(zip(ids.tolist(), weights.tolist()))
    scores = []
    for i in range(len(indptr) - 1):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            w = weight_of.get(int(indices[p]) + 1)
            if w is not None:
                s = s + w * float(np.float32(values[p]))
        scores.append(s - bias)
    return np.array(scores)


@pytest.mark.parametrize("model_share", [1.0, 0.9, 0.5, 0.1])
@pytest.mark.parametrize("row_share", [1.0, 0.6, 0.05])
def test_scores_are_the_plain_sum_s(model_share, row_share):
    rng = np.random.default_rng(int(100 * model_share + 10 * row_share))
    d = 80
    ids = np.flatnonzero(rng.random(d - 10) < model_share).astype(np.int64) + 1   # none past d-10
    weights = rng.normal(size=len(ids))
    rows = [np.flatnonzero(rng.random(d) < row_share) for _ in range(300)]
    indptr = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
    indices = np.concatenate(rows).astype(np.int32)
    values = rng.normal(size=len(indices)) * 10.0 ** rng.integers(-5, 5, size=len(indices))
    expected = brute_force_scores(indptr, indices, values, ids, weights, 0.5)
    for threads in (1, 2):
        out = array.array("d", bytes(8 * len(rows)))
        _predict.linear_scores_rows(indptr, indices, values, ids, weights, 0.5, out, threads)
        assert np.array(out).tobytes() == expected.tobytes()
