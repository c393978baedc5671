"""What each solver of rankfast.optimize calls on its objective: the written contract of a loss.

A solver sees its objective through one of these protocols and nothing else, so that a
new loss (rankfast.losses) is one class, usable by every solver whose protocol it meets,
and a new solver needs no learner.  As liblinear's ``newton.h`` puts value, gradient,
Hessian product, preconditioner and line search on the function's side, so here:

* ``newton.minimize`` takes a :class:`NewtonObjective`: rankfast.losses.squared_hinge's
  SquaredHingeObjective, rankfast.losses.hinge's HuberObjective, rankfast.dask's NewtonSum;
* ``smoothing.smoothing_path`` takes one :class:`SmoothedObjective` per width: HuberObjective;
* ``ncg.nonlinear_cg`` takes an :class:`NCGObjective`, whose lines are :class:`NCGLine`:
  rankfast.losses.erfc_pairs's ErfcPairObjective, rankfast.dask's NCGSum;
* ``ocas.ocas`` takes a :class:`ScoreLoss` and the products of ``MatrixProducts``
  (rankfast._typing): rankfast.losses.hinge's HingeLoss, rankfast.losses.products's DataMatrix.

Each method's meaning, beyond its signature, is the solver's to state (its module
docstring); a solver never reads another attribute of its objective.  The protocols are
checked by the type checker (``mypy`` in the tests) and, for every loss, by
tests/test_optimize_protocols.py at run time.
"""
from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from .._typing import Vector


@runtime_checkable
class NewtonObjective(Protocol):
    """Truncated Newton's objective (rankfast.optimize.newton).

    ``value_grad(w)`` fixes the (generalised) Hessian the next ``hessvec`` calls use;
    ``line(w, d)`` returns φ with φ(t) = f(w + t d); ``precondition(r)`` is an
    approximate H⁻¹ r; ``strengthen()`` may switch to a stronger preconditioner when a
    Newton step was hard, and says whether (or, as text for the log, how) it did;
    ``curvature_floor`` is a lower bound μ > 0 on H's eigenvalues (1 for ½‖w‖² plus a
    convex loss), or None when there is none, which leaves the decrement uncertified.
    """

    @property
    def curvature_floor(self) -> float | None: ...

    def value_grad(self, w: Vector) -> tuple[float, np.ndarray]: ...

    def hessvec(self, v: Vector) -> np.ndarray: ...

    def line(self, w: Vector, d: Vector) -> Callable[[float], float]: ...

    def precondition(self, r: Vector) -> np.ndarray: ...

    def strengthen(self) -> bool | str: ...


@runtime_checkable
class SmoothedObjective(NewtonObjective, Protocol):
    """A stage of the smoothing path (rankfast.optimize.smoothing): a Newton objective F_δ
    that also certifies the nonsmooth problem's gap, ``certificate(w) -> (w', F(w'), D)``
    with D ≤ F* a dual value."""

    def certificate(self, w: Vector) -> tuple[np.ndarray, float, float]: ...


class NCGPoint(Protocol):
    """A point of nonlinear CG: ``w`` and the gradient ``g`` there."""

    @property
    def w(self) -> np.ndarray: ...

    @property
    def g(self) -> np.ndarray: ...


@runtime_checkable
class NCGLine(Protocol):
    """The objective along a direction, as the certified line search takes it.

    ``slope(t) -> (φ'(t), its error bound)``; ``curvature_bounds() -> (lo, hi)`` with
    lo ≤ φ'' ≤ hi everywhere; ``point(t)`` the NCGPoint at w + t d (reusing what
    ``slope`` computed at t when it can); ``gammas``: the t whose gradients are kept.
    """

    @property
    def gammas(self) -> dict: ...

    def slope(self, t: float) -> tuple[float, float]: ...

    def curvature_bounds(self) -> tuple[float, float]: ...

    def point(self, t: float) -> NCGPoint: ...


@runtime_checkable
class NCGObjective(Protocol):
    """Nonlinear CG's objective (rankfast.optimize.ncg).

    ``point(w)``: the NCGPoint at w; ``line(point, d)``: an NCGLine from it;
    ``precondition(g)``: P g; ``strengthen()``: a stronger P from now on, whether it
    changed; ``gradient_error()``: a bound on the computed gradient's error, per
    coordinate; ``refine()``: make the gradient more accurate if it can (whether it did).
    It may also offer ``gradient_at_zero()``, ∇F(0), the tolerance's reference
    (otherwise the gradient at the start is), and ``eps``, the accuracy ``refine``
    reached, for the log.
    """

    def point(self, w: Vector) -> NCGPoint: ...

    def line(self, point: NCGPoint, d: Vector) -> NCGLine: ...

    def precondition(self, g: Vector) -> np.ndarray: ...

    def strengthen(self) -> bool: ...

    def gradient_error(self) -> np.ndarray: ...

    def refine(self) -> bool: ...


@runtime_checkable
class ScoreLoss(Protocol):
    """The cutting planes' oracle (rankfast.optimize.ocas): ``loss(scores) -> (value,
    a subgradient in score space)``, convex in the scores."""

    def __call__(self, scores: Vector) -> tuple[float, np.ndarray]: ...
