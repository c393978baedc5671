"""rankfast.optimize.newton: the truncated Newton solver's conjugate gradient and its certified stop."""

import numpy as np
from data_makers import starts_of, unscaled

from rankfast.learners._linear import query_weights
from rankfast.losses.squared_hinge import SquaredHingeObjective
from rankfast.optimize.newton import conjugate_gradient, minimize

SCALES = 10.0 ** np.array([-3.0, -1.0, 0.0, 2.0, 4.0, 6.0, 7.0, 8.0])


def test_cg_decrement_bound_holds_for_any_accuracy():
    """½ bᵀx + ½ ‖r‖² / μ ≥ ½ bᵀH⁻¹b at every CG stopping point (r ⊥ x, H ≥ μ I)."""
    rng = np.random.default_rng(0)
    for _trial in range(20):
        A = rng.normal(size=(30, 12)) * 10.0 ** rng.uniform(-1, 2, size=12)
        H = np.eye(12) + A.T @ A
        b = rng.normal(size=12) * 10.0 ** rng.uniform(-2, 3, size=12)
        exact = 0.5 * b @ np.linalg.solve(H, b)
        for rtol in (0.9, 0.5, 1e-2, 1e-6):
            for precondition in (None, lambda r: r / np.diag(H)):
                x, _, residual = conjugate_gradient(lambda v: H @ v, b, rtol, 200, precondition)
                assert 0.5 * b @ x <= exact * (1 + 1e-7)
                assert 0.5 * b @ x + 0.5 * residual ** 2 >= exact * (1 - 1e-7)


def test_certify_stops_only_when_the_gradient_bounds_the_gap():
    X, y, qid = unscaled(one_ranking=False, seed=4)
    X = X / SCALES * 10.0 ** np.linspace(-1, 2, X.shape[1])     # within rounding's reach
    starts = starts_of(qid)
    weight = query_weights(y, starts, 1.0, 1)
    loose = minimize(SquaredHingeObjective(X, y, starts, weight), np.zeros(X.shape[1]), tol=1e-3)
    result = minimize(SquaredHingeObjective(X, y, starts, weight), np.zeros(X.shape[1]),
                      tol=1e-3, max_iter=500, certify=True)
    assert result.message == "gradient certifies the tolerance"
    assert 0.5 * result.grad_norm ** 2 <= 1e-4 * result.f * (1 + 1e-9)
    assert 0.5 * loose.grad_norm ** 2 > 1e-4 * loose.f       # which the decrement did not ask
