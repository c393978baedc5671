"""OCAS cutting planes (Franc & Sonnenburg, JMLR 2009) for ½‖w‖² + L(Xw), L convex in the scores.

BMRM's cutting-plane model of L and its small dual QP (svm_rank's method),
plus what BMRM lacks: the best point so far w_b, a line search from w_b
towards the model's minimiser w_c, and new cutting planes taken near w_b (at
(1 − μ) w_b + μ w_c, μ = 0.1).  It keeps BMRM's certificate, F(w_b) − D with D
the model's dual value ≤ F*, and its O(1/ε) bound.  The line search works on
score vectors only (s_b + t(s_c − s_b)), so a trial costs one loss
evaluation, not a product with X.  The reduced problem's dual is a QP over the
simplex, one variable per plane, solved by greedy SMO in Cython; planes unused
for 50 rounds go.  It knows no objective: ``loss(scores) -> (value, gradient)``
and a data matrix with ``matvec`` and ``rmatvec``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .._kernels import _hinge

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Callable

    from .._typing import Log, MatrixProducts
    from .protocols import ScoreLoss

MU = 0.1            # OCAS: where between w_b and w_c the next cutting plane is taken
IDLE_ROUNDS = 50    # a cutting plane with zero weight for this many rounds is dropped


@dataclasses.dataclass
class CuttingPlaneResult:
    """Where OCAS stopped: the best point, its objective and the certificate."""

    w: np.ndarray
    f: float                # F(w)
    lower_bound: float      # D: the cutting-plane model's dual value, ≤ F*
    gap: float              # f − lower_bound, certified: F(w) − F* ≤ gap
    target: float           # the gap asked for (C ε')
    iterations: int
    planes: int             # cutting planes in the final model
    oracle_calls: int
    converged: bool
    message: str


class _Planes:
    """The cutting-plane model L(w) ≥ max(0, max_k a_kᵀw + b_k), its Gram matrix and dual weights."""

    def __init__(self, dim):
        self.A = np.zeros((1, dim))          # row 0: the zero plane (L ≥ 0)
        self.b = np.zeros(1)
        self.H = np.zeros((1, 1))
        self.alpha = np.ones(1)
        self.idle = np.zeros(1, dtype=np.int64)

    def add(self, a, b):
        h = self.A @ a
        h[0] = 0.0
        k = len(self.b)
        H = np.empty((k + 1, k + 1))
        H[:k, :k] = self.H
        H[k, :k] = H[:k, k] = h
        H[k, k] = a @ a
        self.H = H
        self.A = np.vstack([self.A, a])
        self.b = np.append(self.b, b)
        self.alpha = np.append(self.alpha, 0.0)
        self.idle = np.append(self.idle, 0)

    def solve(self, tol):
        """Solve the dual QP; return (w_c, D) with w_c = −Σ α_k a_k and D the dual value."""
        _hinge.simplex_qp(self.H, self.b, self.alpha, tol, 100 * len(self.b) + 10000)
        w = -(self.alpha @ self.A)
        self.idle = np.where(self.alpha > 0, 0, self.idle + 1)
        self.idle[0] = 0
        keep = self.idle < IDLE_ROUNDS
        if not keep.all():
            self.A, self.b, self.alpha, self.idle = (
                self.A[keep], self.b[keep], self.alpha[keep], self.idle[keep])
            self.H = self.H[np.ix_(keep, keep)]
        return w, self.b @ self.alpha - 0.5 * (w @ w)


def ocas(X: MatrixProducts, loss: ScoreLoss,
         target: float | Callable[[float], float], max_iter: int, log: Log = None, stall: bool = False,
         relative: float = 0.0) -> CuttingPlaneResult:
    """Minimise ½‖w‖² + loss(Xw) by OCAS until the certified gap is ≤ target.

    ``X`` is a rankfast.losses.products.DataMatrix (its matvec and rmatvec are X w and Xᵀ u).

    ``loss(scores) -> (value, ∂/∂scores)`` must be convex in the scores and,
    for the final certificate, satisfy |loss(s) − loss(s')| ≤
    2 loss(0) ‖s − s'‖_∞: true of the pairwise hinge, where loss(0) =
    Σ_q c_q |P_q| and each pair's hinge is 1-Lipschitz in s_i − s_j.
    ``target`` is a number or a function of F(0) = loss(0) giving it; with
    ``relative`` > 0 the gap must also be ≤ relative · D (D ≤ F*, so within that
    fraction of the optimum's objective).  With ``stall``, gives up (message "stalled")
    once the gap after k ≥ 10 iterations is above 0.9 times the gap after k/2: slower than the O(1/k)
    cutting planes promise, as on one large ranking with raw features.
    Returns a CuttingPlaneResult.

    Scores are carried along rather than recomputed: a point w_b + tΔ has
    scores s_b + t XΔ, so each iteration multiplies by X once (the model's
    minimiser) and by Xᵀ once (the new plane).  A cutting plane taken at
    scores s with loss value v and gradient g is L(w) ≥ v + gᵀ(Xw − s), i.e.
    a = Xᵀg, b = v − gᵀs: valid whether or not s equals X w to the last bit,
    so the lower bound never depends on the carried scores.  The upper bound
    F(w_b) does; at the end X w_b is computed once and the loss's Lipschitz
    bound covers the rounding drift ‖X w_b − s_b‖_∞ (about 1e-16 relative),
    instead of a last loss evaluation.
    """
    dim = X.shape[1]
    calls = 0

    def at(w, s):
        nonlocal calls
        calls += 1
        value, grad = loss(s)
        return 0.5 * (w @ w) + value, value, grad

    w_b = np.zeros(dim)
    s_b = np.zeros(X.shape[0])
    f_b, loss_at_zero, g_b = at(w_b, s_b)
    if callable(target):
        target = target(f_b)
    planes = _Planes(dim)
    planes.add(X.rmatvec(g_b), loss_at_zero)
    lower = -np.inf
    message, converged, it = "iteration limit reached", False, 0
    gaps = []
    for it in range(1, max_iter + 1):
        w_c, dual = planes.solve(0.01 * target)
        lower = max(lower, dual)
        if f_b - lower <= min(target, relative * lower if relative > 0 else np.inf):
            message, converged = "certified gap below target", True
            break
        gaps.append(f_b - lower)
        if stall and it >= 10 and it % 2 == 0 and gaps[-1] > 0.9 * gaps[it // 2 - 1]:
            message = "stalled"
            break
        s_c = X.matvec(w_c)
        (f_b, w_b, s_b, g_b), trials = _line_search(at, w_b, s_b, g_b, f_b, w_c, s_c,
                                                    0.1 * target)
        w_p = (1.0 - MU) * w_b + MU * w_c
        s_p = (1.0 - MU) * s_b + MU * s_c
        f_p, value, g_p = at(w_p, s_p)
        if f_p < f_b:
            f_b, w_b, s_b, g_b = f_p, w_p, s_p, g_p
        planes.add(X.rmatvec(g_p), value - g_p @ s_p)
        if log is not None:
            log(f"OCAS {it}: F={f_b:.10g} lower bound={lower:.10g} gap={f_b - lower:.4g} "
                f"(target {target:.4g}), {trials} line-search trials, {len(planes.b) - 1} planes", 2)
    else:
        it = max_iter
    if np.any(w_b):     # F(w_b) ≤ f_b + 2 L(0) ‖X w_b − s_b‖_∞: the carried scores' drift
        f_b += 2.0 * loss_at_zero * np.max(np.abs(X.matvec(w_b) - s_b))
    return CuttingPlaneResult(w_b, f_b, lower, max(f_b - lower, 0.0), target, it, len(planes.b) - 1,
                              calls, converged, message)


def _line_search(at, w_b, s_b, g_b, f_b, w_c, s_c, accuracy, max_trials=12):
    """Best point of F on the ray w_b + t (w_c − w_b), t ≥ 0, found to within accuracy.

    φ(t) = F(w_b + tΔ) is convex; φ'(t) = w_bᵀΔ + t‖Δ‖² + g(t)ᵀδ with δ = X Δ.
    Brackets the minimiser, then regula falsi (Illinois) on φ', stopping when
    the two bracket tangents' intersection is within accuracy of the best
    value.  Returns ((φ, w, s, g) at the best trial, number of trials).
    """
    delta_w = w_c - w_b
    delta_s = s_c - s_b
    q1, q2 = w_b @ delta_w, delta_w @ delta_w
    best = (f_b, w_b, s_b, g_b)
    d0 = q1 + g_b @ delta_s
    if d0 >= 0 or q2 == 0:
        return best, 0

    def trial(t):
        w, s = w_b + t * delta_w, s_b + t * delta_s
        f, _, g = at(w, s)
        return f, q1 + t * q2 + g @ delta_s, (f, w, s, g)

    lo, f_lo, d_lo = 0.0, f_b, d0
    hi, trials = 1.0, 0
    while True:                                  # bracket: φ'(hi) ≥ 0
        f_hi, d_hi, point = trial(hi)
        trials += 1
        if point[0] < best[0]:
            best = point
        if d_hi >= 0 or trials >= max_trials:
            break
        lo, f_lo, d_lo, hi = hi, f_hi, d_hi, 2.0 * hi
    last = 0                                     # which end the previous trial replaced
    while d_hi > 0 and trials < max_trials:
        # the tangents at lo and hi meet at t_x; φ ≥ their value there on [lo, hi]
        t_x = (f_hi - f_lo + d_lo * lo - d_hi * hi) / (d_lo - d_hi)
        if best[0] - (f_lo + d_lo * (t_x - lo)) <= accuracy:
            break
        w_lo = 0.5 * d_lo if last > 0 else d_lo    # Illinois: damp the end that stayed
        w_hi = 0.5 * d_hi if last < 0 else d_hi
        t = lo - w_lo * (hi - lo) / (w_hi - w_lo)
        if not lo < t < hi:
            t = 0.5 * (lo + hi)
        f_t, d_t, point = trial(t)
        trials += 1
        if point[0] < best[0]:
            best = point
        if d_t == 0:
            break
        if d_t < 0:
            lo, f_lo, d_lo, last = t, f_t, d_t, -1
        else:
            hi, f_hi, d_hi, last = t, f_t, d_t, 1
    return best, trials
