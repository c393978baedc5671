"""Smoothing continuation: Newton on smoothings of a nonsmooth objective, of shrinking width.

The second solver of svm_rank's objective (rankfast.learners.svmrank): where
cutting planes stall (one large ranking with raw features), Newton on Huber
smoothings of the hinge certifies the same gap.  It knows no objective: it sees
a family F_δ with Newton's protocol and a certificate of the nonsmooth problem.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from .newton import minimize

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Callable

    from .._typing import Log, Vector
    from .protocols import SmoothedObjective


@dataclasses.dataclass
class SmoothingResult:
    """Where the smoothing path stopped: the best point, its objective and the certificate."""

    w: np.ndarray
    f: float                # F(w)
    lower_bound: float      # D: a dual value, ≤ F*
    gap: float              # f − lower_bound, certified: F(w) − F* ≤ gap
    target: float
    iterations: int         # Newton steps, all stages
    stages: int             # values of δ
    delta: float            # the last δ
    converged: bool
    message: str


def smoothing_path(smoothed: Callable[[float], SmoothedObjective], dim: int, f0: float,
                   target: float | Callable[[float], float],
                   max_iter: int, log: Log = None, delta: float = 0.5, max_stages: int = 20,
                   w0: Vector | None = None, lower: float = 0.0, relative: float = 0.0) -> SmoothingResult:
    """Minimise a nonsmooth F by Newton on smoothings F_δ of shrinking width δ.

    ``smoothed(δ)`` is F_δ, a rankfast.optimize.protocols.SmoothedObjective: Newton's
    protocol and ``certificate(w) -> (point, F(point), D)``, D ≤ F* a dual value of
    the nonsmooth problem; ``smoothed(1)`` is the stage that needs
    no curvature from the nonsmooth part (the squared hinge, for the hinge).
    ``dim`` is w's length and ``f0`` F(0).  Each stage minimises F_δ from the
    last stage's point until its Newton decrement is certified small; F's
    certified gap F(w) − D is then computed, and the path stops once it is ≤
    target, else shrinks δ.  Newton's steps do not depend on the features'
    scales where a cutting-plane method's iterations grow with C ‖x‖² / ε.
    ``target`` (a number, or a function of F(0)) and ``relative`` as for
    rankfast.optimize.ocas.ocas.
    """
    if callable(target):
        target = target(f0)
    # At w = 0 every pair lies in the hinge's linear part, where F_δ has no curvature
    # for Newton to use: start from the squared hinge's optimum (δ = 1, θ = 0 above).
    def steps_log(what):
        """Newton's lines for a stage, one verbosity level below the stage's own."""
        return None if log is None else (lambda text, level: log(f"  {what}: {text}", level + 1))

    start = minimize(smoothed(1.0), np.zeros(dim) if w0 is None else w0, tol=1e-3,
                     max_iter=max_iter,
                     log=steps_log("squared hinge"))
    w, steps = start.w, start.iterations
    if log is not None:
        log(f"Smoothing 0: the squared hinge's optimum, {start.iterations} Newton steps "
            f"({start.cg_iterations} CG)", 1)
    best_w, best_f = np.zeros(dim), f0
    last_gap = np.inf
    message, converged, stage = "iteration limit reached", False, 0
    for stage in range(1, max_stages + 1):
        objective = smoothed(delta)
        smooth_f0 = objective.value_grad(w)[0]
        if not smooth_f0 > 0.0:                 # rounding has the upper hand: stop here
            message = "smoothing too fine for the scores' rounding"
            break
        goal = min(target, relative * max(lower, 0.5 * smooth_f0) if relative > 0 else np.inf)
        result = minimize(objective, w, tol=max(2.5 * goal / max(smooth_f0, 1e-300), 1e-15),
                          max_iter=max(max_iter - steps, 1), certify=True,
                          log=steps_log(f"smoothing {stage}"))
        if not (np.all(np.isfinite(result.w)) and np.isfinite(result.f)):
            message = "smoothing too fine for the scores' rounding"
            break
        w, steps = result.w, steps + result.iterations
        objective.value_grad(w)
        point, f, dual = objective.certificate(w)
        lower = max(lower, dual)
        if f < best_f:
            best_w, best_f = point, f
        if log is not None:
            log(f"Smoothing {stage}: delta={delta:.3g} F={best_f:.10g} lower bound={lower:.10g} "
                f"gap={best_f - lower:.4g} (target {target:.4g}), {result.iterations} Newton "
                f"steps ({result.cg_iterations} CG)", 1)
        goal = min(target, relative * lower if relative > 0 else np.inf)
        if best_f - lower <= goal:
            message, converged = "certified gap below target", True
            break
        if steps >= max_iter:
            break
        if result.message.startswith("no further decrease") and best_f - lower >= last_gap:
            # float64 cannot certify more here (features spanning ~1e11 make ∇F_δ's
            # rounding floor large): the target's bound may still hold.
            converged = best_f - lower <= target
            message = (f"certified within the target; rounding limits the "
                       f"certificate to {(best_f - lower) / max(lower, 1e-300):.2g} relative "
                       f"('normalize' helps)" if converged else
                       "rounding limits the certificate (use a looser 'tol' or 'normalize')")
            break
        last_gap = best_f - lower
        # F − D = (smoothing's part, ≤ δ/4 per pair within δ of the margin, so ~δ²) +
        # ½‖∇F_δ‖²: shrink δ by what the smoothing's part asks, within [δ/100, δ/2].
        smoothing = max(f - dual - 0.5 * result.grad_norm ** 2, 1e-300)
        delta *= min(0.5, max(0.01, 0.7 * np.sqrt(max(goal, 1e-300) / smoothing)))
    return SmoothingResult(best_w, best_f, lower, max(best_f - lower, 0.0), target, steps, stage,
                           delta, converged, message)
