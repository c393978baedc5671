"""The objective contract (rankfast.optimize.protocols): every loss meets its solver's
protocol, and a loss written against a protocol alone is solved by that solver."""
import numpy as np
import pytest

from rankfast.losses.erfc_pairs import ErfcPairObjective
from rankfast.losses.hinge import HingeLoss, HuberObjective
from rankfast.losses.pair_preconditioner import PairPreconditioner
from rankfast.losses.products import DataMatrix, pair_square_sums
from rankfast.losses.squared_hinge import SquaredHingeObjective
from rankfast.optimize.newton import minimize
from rankfast.optimize.protocols import (
    NCGLine,
    NCGObjective,
    NewtonObjective,
    ScoreLoss,
    SmoothedObjective,
)


@pytest.fixture
def queries():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 5))
    y = rng.integers(0, 3, size=40).astype(np.float64)
    starts = np.array([0, 15, 40], dtype=np.int64)
    return X, y, starts, np.array([0.5, 1.5])


def test_every_loss_meets_its_solvers_protocol(queries):
    X, y, starts, weight = queries
    squared = SquaredHingeObjective(X, y, starts, weight)
    assert isinstance(squared, NewtonObjective)
    hinge = HingeLoss(y, starts, weight)
    assert isinstance(hinge, ScoreLoss)
    products = DataMatrix(X)
    diagonal = 1.0 + 2.0 * pair_square_sums(products, hinge.starts, hinge.rank, hinge.bound_weight)
    preconditioner = PairPreconditioner(products.X, hinge.starts, hinge.rank, hinge.bound_weight,
                                        2.0, diagonal)
    huber = HuberObjective(products, hinge, 0.5, preconditioner)
    assert isinstance(huber, NewtonObjective) and isinstance(huber, SmoothedObjective)
    erfc = ErfcPairObjective(X, y, starts, weight, 1e-6, True)
    assert isinstance(erfc, NCGObjective)
    point = erfc.point(np.zeros(X.shape[1]))
    assert isinstance(erfc.line(point, -point.g), NCGLine)


def test_a_protocol_is_a_contract_not_an_attribute_list():
    class Incomplete:                            # value_grad and hessvec only
        curvature_floor = 1.0

        def value_grad(self, w):
            return 0.5 * w @ w, w

        def hessvec(self, v):
            return v

    assert not isinstance(Incomplete(), NewtonObjective)


class RidgeScores:
    """½‖w‖² + ½ Σ_i (x_iᵀw − t_i)²: a new loss, written against NewtonObjective alone."""

    curvature_floor = 1.0

    def __init__(self, X, t):
        self.X, self.t = X, t

    def value_grad(self, w):
        r = self.X @ w - self.t
        return 0.5 * (w @ w) + 0.5 * (r @ r), w + self.X.T @ r

    def hessvec(self, v):
        return v + self.X.T @ (self.X @ v)

    def line(self, w, d):
        return lambda step: self.value_grad(w + step * d)[0]

    def precondition(self, r):
        return r / (1.0 + (self.X * self.X).sum(axis=0))

    def strengthen(self):
        return False


def test_a_new_loss_is_one_class_newton_solves():
    rng = np.random.default_rng(0)
    X, t = rng.normal(size=(60, 4)) * [1.0, 10.0, 0.1, 3.0], rng.normal(size=60)
    loss = RidgeScores(X, t)
    assert isinstance(loss, NewtonObjective)
    result = minimize(loss, np.zeros(4), tol=1e-10)
    exact = np.linalg.solve(np.eye(4) + X.T @ X, X.T @ t)
    assert result.converged
    np.testing.assert_allclose(result.w, exact, rtol=1e-6, atol=1e-8)
