"""Truncated Newton: Newton steps solved by linear conjugate gradient on Hessian-vector products.

The driver knows nothing of the objective.  An objective supplies

* ``value_grad(w) -> (f, g)``: value and gradient at w; it also fixes the
  (generalised) Hessian used by the next calls of
* ``hessvec(v) -> H v``;
* ``line(w, d) -> phi``: a function with ``phi(t) = f(w + t d)``, which may
  reuse products computed once for the direction (for linear models X d).

Stopping rule (``tol``, rank_learn's ``-e``): stop when the Newton decrement
½ (−gᵀd), the decrease the quadratic model predicts for the full step, is at
most ``0.1 * tol`` times the objective, or when ‖g‖ ≤ 1e-10 (1 + |f|) after
the first step (or g = 0 at the start).  Near
the optimum the objective is (piecewise) quadratic, so the decrement bounds
the remaining gap: at the default tol = 1e-3 the result is typically within
1e-4 relative of the optimum's objective (a few times more at very large C,
where the loss is far from quadratic).  ``max_iter`` (``-#``) caps Newton steps.

Each CG solve stops when ‖r‖ ≤ η ‖g‖ with η = min(0.5, √‖g‖) (Eisenstat–
Walker forcing: loose far from the optimum, tight near it), or after
``max_cg`` products.  The step length comes from a backtracking Armijo
search starting at the full Newton step, which guarantees descent.
"""
import dataclasses
import time

import numpy as np


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


def conjugate_gradient(hessvec, b, rtol, max_iter, precondition=None):
    """Approximately solve H x = b (H symmetric positive definite) by preconditioned CG.

    Stops when ‖b − H x‖ ≤ rtol ‖b‖ or after max_iter products.
    Returns (x, iterations).
    """
    x = np.zeros_like(b)
    r = b.copy()
    z = r if precondition is None else precondition(r)
    p = z.copy()
    rz = r @ z
    target = rtol * np.linalg.norm(b)
    for it in range(1, max_iter + 1):
        hp = hessvec(p)
        curvature = p @ hp
        if curvature <= 0:
            return (x if it > 1 else p), it
        step = rz / curvature
        x += step * p
        r -= step * hp
        if np.linalg.norm(r) <= target:
            return x, it
        z = r if precondition is None else precondition(r)
        rz_new = r @ z
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x, max_iter


def minimize(objective, w0, tol=1e-3, max_iter=100, max_cg=250, log=None):
    """Minimise a convex, twice differentiable (piecewise) objective by truncated Newton.

    Parameters
    ----------
    objective : object with value_grad, hessvec and line (see the module docstring)
    w0 : ndarray
        Starting point (copied).
    tol : float
        Relative tolerance on the Newton decrement (rank_learn's -e).
    max_iter, max_cg : int
        Caps on Newton steps and on CG products per step.
    log : callable(text, level), optional
        Receives one progress line per iteration (level 1) and details (level 2).

    Returns
    -------
    NewtonResult
    """
    w = np.array(w0, dtype=np.float64)
    f, g = objective.value_grad(w)
    total_cg = 0
    started = time.perf_counter()
    for iteration in range(1, max_iter + 1):
        gnorm = float(np.linalg.norm(g))
        # The absolute test would stop at w0 on data of tiny scale (features of 1e-10,
        # C of 1e-12), whose optimum still ranks: the first step is always taken.
        if gnorm == 0.0 or (iteration > 1 and gnorm <= 1e-10 * (1.0 + abs(f))):
            return NewtonResult(w, f, gnorm, iteration - 1, total_cg, True, "gradient is zero")
        eta = min(0.5, np.sqrt(gnorm))
        d, cg_steps = conjugate_gradient(objective.hessvec, -g, eta, max_cg,
                                         getattr(objective, "precondition", None))
        total_cg += cg_steps
        slope = float(g @ d)
        if slope >= 0:          # not a descent direction (numerically): use -g
            d, slope = -g, -gnorm ** 2
        decrement = -0.5 * slope
        phi = objective.line(w, d)
        t, f_new = _armijo(phi, f, slope)
        w = w + t * d
        f_previous = f
        f, g = objective.value_grad(w)
        if log is not None:
            log(f"Iter {iteration}: obj={f:.8g} |grad|={gnorm:.3g} cg={cg_steps} "
                f"step={t:.3g} decrement={decrement:.3g}", 1)
            log(f"  objective decrease {f_previous - f:.6g}, "
                f"{time.perf_counter() - started:.3f} s so far", 2)
        if decrement <= 0.1 * tol * max(abs(f), 1e-300) and t == 1.0:
            return NewtonResult(w, f, float(np.linalg.norm(g)), iteration, total_cg, True,
                                "Newton decrement below tolerance")
        if t == 0.0 or f_previous - f <= 1e-15 * max(abs(f), 1.0):
            return NewtonResult(w, f, float(np.linalg.norm(g)), iteration, total_cg, True,
                                "no further decrease possible (rounding)")
    return NewtonResult(w, f, float(np.linalg.norm(g)), max_iter, total_cg, False,
                        "iteration limit reached")


def _armijo(phi, f0, slope, shrink=0.5, c1=1e-4, max_halvings=60):
    """Largest t in 1, ½, ¼, … with phi(t) ≤ f0 + c1 t slope; (0, f0) if none."""
    t = 1.0
    for _ in range(max_halvings):
        value = phi(t)
        if value <= f0 + c1 * t * slope:
            return t, value
        t *= shrink
    return 0.0, f0
