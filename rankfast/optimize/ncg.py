"""Nonlinear conjugate gradient with a certified line search (RankNCG's optimiser).

Polak–Ribière+ nonlinear CG, preconditioned by the objective (its diagonal, or
its Hessian at 0 once asked to strengthen).  The line search never evaluates
the objective: along a direction d, φ(t) = F(w + td) is convex with curvature
between bounds the objective gives, and each trial gives φ'(t) within an error
bound; convexity turns those into a certified upper bound U(t) ≥ φ(t) − φ(0),
and a step is taken only where U(t) < 0, so every step provably decreases F.
It knows no objective but rankfast.optimize.protocols.NCGObjective: ``point``,
``precondition``, ``strengthen``, ``refine``, ``gradient_error`` and ``line``, and
``gradient_at_zero`` where the objective offers it
(rankfast.losses.erfc_pairs.ErfcPairObjective; the distributed one in rankfast.dask).
Stopping rule: ‖∇F(w)‖_P ≤ tol · ‖∇F(0)‖_P in the preconditioner's norm, or within
the gradient's error bound of it, or when descent can no longer be certified, or
after ``max_iter`` iterations.
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:

    from numpy.typing import ArrayLike

    from .._typing import Log, Vector
    from .protocols import NCGLine, NCGObjective


STRENGTHEN_AFTER = 20       # iterations after which a stronger preconditioner is asked for

@dataclasses.dataclass
class NCGResult:
    """Where nonlinear CG stopped and why.

    grad_norm is ‖∇F(w)‖_P and relative_grad ‖∇F(w)‖_P / ‖∇F(0)‖_P, the figure the
    stopping rule compares with ``tol`` (P the preconditioner in use at the end).
    """

    w: np.ndarray
    grad_norm: float
    iterations: int
    evaluations: int
    converged: bool
    message: str
    decrease: float
    relative_grad: float = math.nan

    def summary(self) -> str:
        """The line rank_learn prints at the end of a run."""
        return (f"NCG: {self.message} after {self.iterations} iterations ({self.evaluations} "
                f"gradients), relative gradient {self.relative_grad:.3g} (|grad|_P "
                f"{self.grad_norm:.6g}), certified objective decrease {self.decrease:.8g}")


def certified_step(line: NCGLine, slope0: float, error0: float, t_guess: float, sigma: float = 0.1,
                   max_trials: int = 10) -> tuple[float, float, int]:
    """Step length along a descent direction of a convex φ known through φ' ± error.

    Parameters
    ----------
    line : object with ``slope(t) -> (φ'(t) estimate, error bound)`` and
        ``curvature_bounds() -> (μ, Λ)`` (μ ≤ φ'' ≤ Λ, μ > 0)
    slope0, error0 : float
        φ'(0) as computed and its error bound; slope0 + error0 < 0 is required.
    t_guess : float
        First trial (clipped to the interval that must hold the minimiser).

    Returns
    -------
    (t, bound, trials) with φ(t) − φ(0) ≤ bound < 0 (see the module docstring).
    """
    mu, lam = line.curvature_bounds()
    hi0, lo0 = slope0 + error0, slope0 - error0
    t_min, t_max = -hi0 / lam, -lo0 / mu          # the minimiser lies in [t_min, t_max]
    known = [(0.0, 0.0), (t_min, t_min * hi0 + 0.5 * lam * t_min * t_min)]
    best_t, best_bound = known[1]
    left, right, kept = [0.0, slope0], None, None
    t = min(max(t_guess, t_min), t_max)
    trials = 0
    while trials < max_trials:
        trials += 1
        value, error = line.slope(t)
        low, high = value - error, value + error
        bound = min(u + (t - s) * (high if t >= s else low) for s, u in known)
        known.append((t, bound))
        if bound < best_bound:
            best_t, best_bound = t, bound
        if bound < 0.0 and abs(value) <= sigma * abs(slope0):
            return t, bound, trials
        side = "left" if value < 0.0 else "right"
        if side == "left":
            previous, left = left, [t, value]
        else:
            right = [t, value]
        if right is None:                 # no sign change yet: extrapolate the secant
            if t >= t_max:
                break
            nxt = t - value * (t - previous[0]) / (value - previous[1]) \
                if value > previous[1] else math.inf
            t_next = min(max(nxt, 1.5 * t), 10.0 * t, t_max)
        else:                             # Illinois: regula falsi that does not stall
            if side == kept:
                other = right if side == "left" else left
                other[1] *= 0.5
            kept = side
            (tl, vl), (tr, vr) = left, right
            t_next = tl - vl * (tr - tl) / (vr - vl)
            t_next = min(max(t_next, tl + 0.01 * (tr - tl)), tr - 0.01 * (tr - tl))
        if t_next == t:
            break
        t = t_next
    return best_t, best_bound, trials


def nonlinear_cg(objective: NCGObjective, w0: ArrayLike, tol: float = 1e-3, max_iter: int = 1000,
                 log: Log = None) -> NCGResult:
    """Minimise a smooth strongly convex objective by preconditioned Polak–Ribière+ CG.

    Parameters
    ----------
    objective : rankfast.optimize.protocols.NCGObjective
    w0 : ndarray
        Starting point (copied).
    tol : float
        Stop when ‖g‖_P ≤ tol ‖g(0)‖_P (‖v‖_P² = vᵀPv with P the preconditioner;
        g(0) from ``objective.gradient_at_zero()``, else g(w0)), or ‖g‖_P ≤
        tol ‖g(0)‖_P + ‖gradient_error()‖_P: the
        computed gradient is then within its error bound of meeting the tolerance,
        and the sums cannot resolve a better point.
    max_iter : int
        Cap on iterations.
    log : callable(text, level), optional
        One line per iteration (level 1), details (level 2).

    Returns
    -------
    NCGResult
    """
    point = objective.point(np.array(w0, dtype=np.float64))

    def size(v):                         # ‖v‖_P: unchanged when features are rescaled
        return size_of(v, objective.precondition(v))

    # The tolerance is relative to ∇F(0) wherever the run starts: relative to a
    # warm start's small gradient it would tighten with every step of a C path.
    reference = getattr(objective, "gradient_at_zero", None)
    g0_norm = size(reference() if reference is not None else point.g)
    resolution = size(objective.gradient_error())
    strengthen = objective.strengthen
    pg = objective.precondition(point.g)
    d = -pg
    ratio = 1.0                          # last step / its t_min: the next first trial
    evaluations, decrease = 1, 0.0
    started = time.perf_counter()
    for iteration in range(1, max_iter + 2):   # the last pass only tests the last step's point
        g_norm = size_of(point.g, pg)
        if g_norm <= tol * g0_norm + resolution:
            if g_norm > tol * g0_norm and objective.refine():
                # the sums, not the tolerance, would stop here: finer sums, same point
                resolution = size(objective.gradient_error())
                point = objective.point(point.w)
                pg = objective.precondition(point.g)
                d = -pg
                evaluations += 1
                if log is not None:
                    log(f"Iter {iteration}: erfc sums refined to eps "
                        f"{getattr(objective, 'eps', float('nan')):.3g}", 1)
                continue
            message = ("gradient norm below tolerance" if g_norm <= tol * g0_norm else
                       "gradient norm below tolerance within the erfc sums' accuracy")
            return NCGResult(point.w, g_norm, iteration - 1, evaluations, True, message,
                             decrease, _ratio(g_norm, g0_norm))
        if iteration > max_iter:
            break
        if iteration == STRENGTHEN_AFTER and strengthen():
            # still far after this many iterations: the features are correlated as well
            # as badly scaled; ∇²F(0) itself preconditions from now on (a restart along
            # −P g, the tolerance measured in the new P's norm from here)
            g0_norm = size(reference() if reference is not None else point.g)
            resolution = size(objective.gradient_error())
            pg = objective.precondition(point.g)
            d = -pg
            if log is not None:
                log(f"Iter {iteration}: preconditioning with the Hessian at zero", 1)
            continue
        line = objective.line(point, d)
        slope0, error0 = line.slope(0.0)
        if slope0 + error0 >= 0.0 and not np.array_equal(d, -pg):   # restart along −Pg
            d = -pg
            line = objective.line(point, d)
            slope0, error0 = line.slope(0.0)
        if slope0 + error0 >= 0.0:
            return NCGResult(point.w, g_norm, iteration - 1, evaluations, True,
                             "descent no longer certifiable at this erfc accuracy", decrease,
                             _ratio(g_norm, g0_norm))
        t_min = -(slope0 + error0) / line.curvature_bounds()[1]
        t, bound, trials = certified_step(line, slope0, error0, ratio * t_min)
        ratio = max(t / t_min, 1.0)
        evaluations += trials
        decrease -= bound
        new = line.point(t)
        if t not in line.gammas:
            evaluations += 1
        new_pg = objective.precondition(new.g)
        beta = max(0.0, float(new.g @ (new_pg - pg)) / float(point.g @ pg))
        d = -new_pg + beta * d
        point, pg = new, new_pg
        if log is not None:
            log(f"Iter {iteration}: relative gradient "
                f"{_ratio(size_of(point.g, pg), g0_norm):.3g} step={t:.4g} "
                f"trials={trials} beta={beta:.3g} certified decrease={-bound:.4g}", 1)
            log(f"  slope {slope0:.6g} ± {error0:.3g}, "
                f"{time.perf_counter() - started:.3f} s so far", 2)
    g_norm = size_of(point.g, pg)
    return NCGResult(point.w, g_norm, max_iter, evaluations, False, "iteration limit reached",
                     decrease, _ratio(g_norm, g0_norm))


def size_of(g: Vector, pg: Vector) -> float:
    """‖g‖_P from g and P g."""
    return float(np.sqrt(max(float(g @ pg), 0.0)))


def _ratio(g_norm, g0_norm):
    if g0_norm > 0:
        return g_norm / g0_norm
    return 0.0 if g_norm == 0 else math.inf
