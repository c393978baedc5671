"""rankfast.learners.objectives: rankfast.objective of a model on a dataset."""

import numpy as np
import pytest
import scipy.sparse as sp
from reference_impl import pairs_of_weighted as pairs_of

import rankfast
from rankfast.learners._linear import query_weights


def test_objective_p2_is_the_squared_hinge():
    rng = np.random.default_rng(5)
    qid = np.repeat([1, 2, 3], 5)
    X = sp.csr_matrix(rng.normal(size=(15, 4)))
    y = rng.integers(0, 3, size=15).astype(float)
    model = rankfast.LinearModel(np.arange(1, 5), rng.normal(size=4))
    data = rankfast.Dataset(X, y, qid, np.arange(1, 16))
    starts = np.array([0, 5, 10, 15])
    s = X @ model.weights
    for loss in (1, 2):
        for p in (1, 2):
            twin = sum(c * max(0.0, 1 - s[i] + s[j]) ** p
                       for i, j, c in pairs_of(y, starts, query_weights(y, starts, 2.0, loss)))
            assert rankfast.objective(model, data, 2.0, loss, p) == pytest.approx(
                0.5 * model.weights @ model.weights + twin, rel=1e-12)
