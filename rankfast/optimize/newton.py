"""Truncated Newton: Newton steps solved by linear conjugate gradient on Hessian-vector products.

The driver knows nothing of the objective but rankfast.optimize.protocols.NewtonObjective:

* ``value_grad(w) -> (f, g)``: value and gradient at w; it also fixes the
  (generalised) Hessian used by the next calls of
* ``hessvec(v) -> H v``;
* ``line(w, d) -> phi``: a function with ``phi(t) = f(w + t d)``, which may
  reuse products computed once for the direction (for linear models X d);
* ``precondition``, ``strengthen`` and ``curvature_floor``, below.

Stopping rule (``tol``, rank_learn's ``-e``): stop after a full Newton step
when the Newton decrement ½ gᵀH⁻¹g, the decrease the quadratic model predicts
for the exact Newton step, is certified to be at most ``0.1 * tol`` times the
objective, or when ‖g‖ ≤ 1e-10 (1 + |f|) after the first step (or g = 0 at
the start).  A CG step solved loosely understates the decrement (on raw
features spanning 1e-3..1e8, by orders of magnitude: such a step once looked
converged at w ≈ 0), so the decrement is bounded from above with the CG
residual, ½ (−gᵀd) + ½ ‖r‖² / μ, μ the objective's ``curvature_floor`` (1 for
½‖w‖² plus a convex loss); a step that looks converged without that
certificate is solved again, until the decrement has settled (its remaining
rise estimated from the last CG steps, see :func:`conjugate_gradient`), before
the test.  Near the optimum the
objective is (piecewise) quadratic, so the decrement bounds the remaining gap:
at the default tol = 1e-3 the result is within ~1e-4 relative of the optimum's
objective.  ``max_iter`` (``-#``) caps Newton steps.

Preconditioning: the objective's ``precondition(r)`` (an approximate
H⁻¹ r; for the pairwise losses first Jacobi, the inverse of H's diagonal with every
pair active) preconditions CG, so the number of CG products does not grow with the
features' scales (Hsia, Chiang & Lin 2018).  When a Newton step still needs
more than ``STRENGTHEN_CG`` products (features that are correlated as well as
badly scaled), the objective's ``strengthen()`` is called: it may switch
to a stronger preconditioner (rankfast.optimize.precondition) and returns whether
it did (or, as text for the log, what it did).

Each CG solve stops when ‖r‖ ≤ η ‖g‖ with η = min(0.5, √‖g‖) (Eisenstat–
Walker forcing: loose far from the optimum, tight near it), or after
``max_cg`` products.  The step length comes from a backtracking Armijo
search starting at the full Newton step, which guarantees descent.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any, Callable

    from numpy.typing import ArrayLike

    from .._typing import Log, Vector
    from .protocols import NewtonObjective

STRENGTHEN_CG = 20      # CG products in one Newton step beyond which a stronger preconditioner is asked


@dataclasses.dataclass
class NewtonResult:
    """Where truncated Newton stopped and why."""

    w: np.ndarray
    f: float
    grad_norm: float
    iterations: int
    cg_iterations: int
    converged: bool
    message: str


def conjugate_gradient(hessvec: Callable[[Vector], np.ndarray], b: Vector, rtol: float, max_iter: int,
                       precondition: Callable[[Vector], np.ndarray] | None = None,
                       settle: float | None = None, delay: int = 25) -> tuple[np.ndarray, int, float]:
    """Approximately solve H x = b (H symmetric positive definite) by preconditioned CG.

    Stops when ‖b − H x‖ ≤ rtol ‖b‖, or after max_iter products, or (with
    ``settle``) when the last ``delay`` steps together raised ½ bᵀx by at most
    ``settle``.  Returns (x, iterations, ‖b − H x‖).

    Started at 0, each iterate x_k minimises the energy error over its Krylov
    space, so ½ bᵀx_k rises monotonically to ½ bᵀH⁻¹b (the Newton decrement
    when b = −g) and the gap is ½ ‖x* − x_k‖²_H; step j raises it by
    ½ α_j r_jᵀz_j, and the sum of the next ``delay`` such terms estimates the
    gap from below, tightly once CG has left its plateaus (Strakoš & Tichý
    2002, "On error estimation in the conjugate gradient method").  Also
    ½ bᵀH⁻¹b ≤ ½ bᵀx + ½ ‖r‖² / μ for μ ≤ H's smallest eigenvalue (r ⊥ x).
    """
    x = np.zeros_like(b)
    r = b.copy()
    z = r if precondition is None else precondition(r)
    p = z.copy()
    rz = r @ z
    target = rtol * np.linalg.norm(b)
    rises = []
    for it in range(1, max_iter + 1):
        hp = hessvec(p)
        curvature = p @ hp
        if curvature <= 0:
            return (p, it, np.inf) if it == 1 else (x, it, float(np.linalg.norm(r)))
        step = rz / curvature
        x += step * p
        r -= step * hp
        residual = float(np.linalg.norm(r))
        if residual <= target:
            return x, it, residual
        if settle is not None:
            rises.append(0.5 * step * rz)
            if len(rises) >= delay and sum(rises[-delay:]) <= settle:
                return x, it, residual
        z = r if precondition is None else precondition(r)
        rz_new = r @ z
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x, max_iter, float(np.linalg.norm(r))


def minimize(objective: NewtonObjective, w0: ArrayLike, tol: float = 1e-3, max_iter: int = 100,
             max_cg: int = 250, log: Log = None, certify: bool = False) -> NewtonResult:
    """Minimise a convex, twice differentiable (piecewise) objective by truncated Newton.

    Parameters
    ----------
    objective : rankfast.optimize.protocols.NewtonObjective
    w0 : ndarray
        Starting point (copied).
    tol : float
        Relative tolerance on the Newton decrement (rank_learn's -e).
    max_iter, max_cg : int
        Caps on Newton steps and on CG products per step.
    log : callable(text, level), optional
        Receives one progress line per iteration (level 1) and details (level 2).
    certify : bool
        Stop only when ½ ‖g‖² / μ ≤ 0.1 tol |f|, which bounds f − f* for a
        μ-strongly convex objective whatever the model's accuracy (needs the
        objective's ``curvature_floor``); steps that look converged are still
        re-solved to the certified CG residual.

    Returns
    -------
    NewtonResult
    """
    w = np.array(w0, dtype=np.float64)
    f, g = objective.value_grad(w)
    precondition, strengthen = objective.precondition, objective.strengthen
    mu: Any = objective.curvature_floor
    total_cg = 0
    started = time.perf_counter()
    for iteration in range(1, max_iter + 1):
        gnorm = float(np.linalg.norm(g))
        # The absolute test would stop at w0 on data of tiny scale (features of 1e-10,
        # C of 1e-12), whose optimum still ranks: the first step is always taken.
        if gnorm == 0.0 or (iteration > 1 and gnorm <= 1e-10 * (1.0 + abs(f))):
            return NewtonResult(w, f, gnorm, iteration - 1, total_cg, True, "gradient is zero")
        threshold = 0.1 * tol * max(abs(f), 1e-300)
        if certify and 0.5 * gnorm * gnorm / mu <= threshold:
            return NewtonResult(w, f, gnorm, iteration - 1, total_cg, True,
                                "gradient certifies the tolerance")
        eta = min(0.5, np.sqrt(gnorm))
        d, cg_steps, residual = conjugate_gradient(objective.hessvec, -g, eta, max_cg, precondition)
        decrement, bound = _decrement(g, d, residual, mu)
        if decrement <= threshold < bound:
            # A loosely solved step understates the decrement (on raw features spanning
            # 1e-3..1e8, by orders of magnitude): before trusting it, solve again until
            # the decrement settles (its remaining rise estimated as conjugate_gradient says).
            d, more_steps, residual = conjugate_gradient(
                objective.hessvec, -g, np.sqrt(threshold * mu) / gnorm, 10 * max_cg, precondition,
                settle=None if certify else 0.05 * threshold)
            cg_steps += more_steps
            decrement, bound = _decrement(g, d, residual, mu)
            if not certify:
                bound = min(bound, decrement + 0.05 * threshold)
        total_cg += cg_steps
        changed = cg_steps > STRENGTHEN_CG and strengthen()
        if changed and log is not None:
            log(f"Iter {iteration}: {cg_steps} CG products; " + (
                changed if isinstance(changed, str) else
                "preconditioning with the full Hessian bound from now on"), 1)
        slope = float(g @ d)
        if slope >= 0:          # not a descent direction (numerically): use -g
            d, slope = -g, -gnorm ** 2
            decrement = bound = -0.5 * slope
        phi = objective.line(w, d)
        t, f_new = _armijo(phi, f, slope)
        w = w + t * d
        f_previous = f
        f, g = objective.value_grad(w)
        if log is not None:
            log(f"Iter {iteration}: obj={f:.8g} |grad|={gnorm:.3g} cg={cg_steps} "
                f"step={t:.3g} decrement={decrement:.3g} (at most {bound:.3g})", 1)
            log(f"  objective decrease {f_previous - f:.6g}, "
                f"{time.perf_counter() - started:.3f} s so far", 2)
        if not certify and bound <= 0.1 * tol * max(abs(f), 1e-300) and t == 1.0:
            return NewtonResult(w, f, float(np.linalg.norm(g)), iteration, total_cg, True,
                                "Newton decrement below tolerance")
        if t == 0.0 or f_previous - f <= 1e-15 * max(abs(f), 1.0):
            return NewtonResult(w, f, float(np.linalg.norm(g)), iteration, total_cg, True,
                                "no further decrease possible (rounding)")
    return NewtonResult(w, f, float(np.linalg.norm(g)), max_iter, total_cg, False,
                        "iteration limit reached")


def _decrement(g, d, residual, mu):
    """(½ (−gᵀd), a bound on the exact Newton decrement ½ gᵀH⁻¹g) for a CG step d.

    The bound adds ½ ‖r‖² / μ (see :func:`conjugate_gradient`); without a
    curvature floor μ it is the computed decrement itself (uncertified).
    """
    decrement = -0.5 * float(g @ d)
    if mu is None:
        return decrement, decrement
    return decrement, decrement + 0.5 * residual * residual / mu


def _armijo(phi, f0, slope, shrink=0.5, c1=1e-4, max_halvings=60):
    """Largest t in 1, ½, ¼, … with phi(t) ≤ f0 + c1 t slope; (0, f0) if none."""
    t = 1.0
    for _ in range(max_halvings):
        value = phi(t)
        if value <= f0 + c1 * t * slope:
            return t, value
        t *= shrink
    return 0.0, f0
