"""svm_rank's loss, the pairwise hinge: the cutting planes' oracle and its Huber smoothings for Newton.

:class:`HingeLoss` gives L(s) = Σ_q c_q Σ_pairs v_i max(0, 1 − s_i + s_j) and a
subgradient in score space (rankfast.optimize.ocas's ``loss``); :class:`HuberObjective`
is ½‖w‖² plus its Huber smoothing of width δ, a difference of two squared hinges
(rankfast.optimize.protocols.NewtonObjective), whose pair weights certify a duality gap
(rankfast.learners.svmrank has the derivation).
"""
from __future__ import annotations

import numpy as np

from .._kernels import _hinge, _prsvm
from .._kernels.threads import query_chunks
from ..optimize.precondition import HessianAtNextPoint
from .products import pair_weight_bound
from .query_order import QueryOrder

# Hessian products one formation of the Hessian costs per column of X (its pair sweep
# over that column, about a third of a product, and the column's share of XᵀAX through
# BLAS): measured 5.9 s for 136 columns of 724k rows against 57 ms a product.
FORMATION_PRODUCTS_PER_COLUMN = 0.75

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any, Callable

    from .._typing import Int64Vector, Vector
    from .pair_preconditioner import PairPreconditioner
    from .products import DataMatrix


class HingeLoss:
    """L as a function of the scores s = Xw: value and a subgradient in score space.

    ``power`` 1 is the hinge (this learner), 2 the squared hinge (PRSVM's loss,
    through rankfast._kernels._prsvm.squared_hinge, which has the same signature).
    ``n_threads`` threads share the queries, in chunks fixed by the data, so
    the value and the subgradient are the same bits for any number of them.
    ``doc_weight`` weighs each pair by its preferred document (None: 1).
    """

    def __init__(self, y: Vector, starts: Int64Vector, query_weight: Vector, power: int = 1,
                 n_threads: int = 1, doc_weight: Vector | None = None) -> None:
        self.kernel = _hinge.hinge if power == 1 else _prsvm.squared_hinge
        levels, rank = np.unique(y, return_inverse=True)
        self.rank = rank.ravel().astype(np.int64)
        self.n_levels = len(levels)
        self.starts = np.ascontiguousarray(starts, dtype=np.int64)
        self.weight = np.ascontiguousarray(query_weight, dtype=np.float64)
        self.n_threads = n_threads
        self.chunks = query_chunks(self.starts)     # fixed by the data: same bits for any n_threads
        self.doc_weight = None if doc_weight is None else \
            np.ascontiguousarray(doc_weight, dtype=np.float64)
        self.bound_weight = pair_weight_bound(self.weight, self.starts, self.doc_weight)
        self.order = QueryOrder(self.starts, self.chunks, n_threads)

    def __call__(self, scores: Vector) -> tuple[float, np.ndarray]:
        """(L, ∂L/∂s) at scores (float64, one per document, queries contiguous)."""
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        order = self.order(scores)
        grad = np.empty_like(scores)
        value = self.kernel(scores, self.rank, self.starts, order, self.weight,
                             self.n_levels, grad, self.chunks, self.n_threads,
                             doc_weight=self.doc_weight)
        return value, grad


class HuberObjective:
    """F_δ(w) = ½‖w‖² + Σ_q c_q Σ_pairs h_δ(wᵀ(x_i − x_j)): the hinge smoothed over a width δ.

    h_δ(m) = 0 for m ≥ 1, (1 − m)² / (2δ) for 1 − δ < m < 1, 1 − m − δ/2 below:
    h_δ ≤ max(0, 1 − m) ≤ h_δ + δ/2.  It is a difference of two squared hinges,
    h_δ(m) = [(1 − m)₊² − (θ − m)₊²] / (2δ) with θ = 1 − δ, and (θ − m)₊² =
    θ² (1 − m/θ)₊², so value, gradient and generalised Hessian (curvature c_q/δ
    on the pairs within δ of the margin) come from PRSVM's pair-counting
    kernels at the scores s and s/θ: no pair is formed.  The protocol of
    rankfast.optimize.newton.minimize; ``preconditioner`` applies the inverse of (an
    approximation of) I + 2 XᵀLX, all pairs active (rankfast.optimize.precondition).

    When that bound is far from the Hessian (raw features spanning 1e9 on few
    queries: the pairs within δ of the margin are a small part of all pairs, and CG
    needs hundreds to thousands of products a Newton step), a step that needed more
    products than forming the Hessian costs makes the next point form it itself,
    I + XᵀAX (rankfast.optimize.precondition.hessian_gram, A the smoothed loss's
    Hessian in score space; X whose rows are all stored, as dense), and precondition
    with it: CG then needs a few products while the band of pairs stays put.  A
    formation costs about FORMATION_PRODUCTS_PER_COLUMN products per column of X
    (a pass of the pair sweep per column, and the Gram through BLAS): the rule only
    fires where CG costs more, so steps that CG solves cheaply stay as they were.
    """

    curvature_floor = 1.0
    _scores: np.ndarray | None         # at the last value_grad: fixes the Hessian
    _order: np.ndarray | None

    def __init__(self, products: DataMatrix, loss: HingeLoss, delta: float,
                 preconditioner: PairPreconditioner) -> None:
        self.X, self.loss, self.delta = products, loss, float(delta)
        self.theta = 1.0 - self.delta
        self.preconditioner = preconditioner
        sizes = np.diff(loss.starts)
        self._query = np.repeat(np.arange(len(sizes)), sizes)      # each document's query
        self._sizes = np.maximum(sizes, 1)
        self._scores = self._order = None
        self._hessian_scores: list[np.ndarray] | None = None
        self._rows = products.rows if products.rows is not None else \
            (products.X if products.dense else None)          # X dense, if it can be
        self._formation_products = FORMATION_PRODUCTS_PER_COLUMN * products.shape[1]
        self._step_products = 0          # Hessian products since the last value_grad
        self._precondition = HessianAtNextPoint(preconditioner)     # the Hessian when it pays

    def _squared(self, scores, order):
        grad = np.empty_like(scores)
        value = _prsvm.squared_hinge(scores, self.loss.rank, self.loss.starts, order,
                                     self.loss.weight, self.loss.n_levels, grad, self.loss.chunks,
                                     self.loss.n_threads, doc_weight=self.loss.doc_weight)
        return value, grad

    def _centred(self, scores):
        """Scores less their query's mean: the pairs see the same differences, and the
        kernels' sums of squares (of scores, not of margins) lose far less to
        cancellation, which the 1/δ of the difference below would magnify."""
        mean = np.bincount(self._query, weights=scores, minlength=len(self._sizes)) / self._sizes
        return scores - mean[self._query]

    def score_space(self, scores: Vector, order: Int64Vector) -> tuple[float, np.ndarray]:
        """(L_δ, ∂L_δ/∂s) at scores (δ = 1: the squared hinge (1 − m)₊² / 2 alone)."""
        theta, delta = self.theta, self.delta
        scores = self._centred(scores)
        outer, g_outer = self._squared(scores, order)
        if theta == 0.0:
            return outer / (2.0 * delta), g_outer / (2.0 * delta)
        inner, g_inner = self._squared(scores / theta, order)
        value = (outer - theta * theta * inner) / (2.0 * delta)
        if not value >= 0.0:
            # L_δ ≥ 0: the difference has lost to rounding (tiny δ, huge margins);
            # +inf makes the line search step back to where it can be trusted.
            value = np.inf
        return value, (g_outer - theta * g_inner) / (2.0 * delta)

    def value_grad(self, w: Vector) -> tuple[float, np.ndarray]:
        scores = self.X.matvec(w)
        order = self.loss.order(scores)
        value, gamma = self.score_space(scores, order)
        self._scores, self._order, self._gamma = scores, order, gamma
        self._hessian_scores = None
        self._step_products = 0
        if self._rows is not None:                   # only then is the Hessian ever asked for
            self._precondition.arrive(self._rows, self._score_hessian, self.loss.n_threads)
        return 0.5 * (w @ w) + value, w + self.X.rmatvec(gamma)

    def _fixed_scores(self) -> list[np.ndarray]:
        """The centred scores of the last value_grad and, for θ > 0, the same over θ: the
        Hessian's two active sets, computed once a point rather than once a product."""
        if self._hessian_scores is None:
            scores = self._centred(self._scores)
            self._hessian_scores = [scores] if self.theta == 0.0 else [scores, scores / self.theta]
        return self._hessian_scores

    def _score_hessian(self, D: np.ndarray, out: np.ndarray, n_threads: int) -> None:
        """out = A D, A the smoothed loss's Hessian in score space at the last value_grad:
        hessvec's score-space step for every column of D (on n_threads threads)."""
        loss = self.loss
        fixed = self._fixed_scores()
        parts = [out] + [np.empty_like(out) for _ in fixed[1:]]     # θ = 0: no inner set
        for scores, part in zip(fixed, parts):
            _prsvm.squared_hinge_hessian_columns(scores, loss.rank, loss.starts, self._order,
                                                 loss.weight, loss.n_levels, D, part,
                                                 n_threads, doc_weight=loss.doc_weight)
        if len(parts) > 1:
            out -= parts[1]
        out /= 2.0 * self.delta

    def hessvec(self, v: Vector) -> np.ndarray:
        self._step_products += 1
        u = self.X.matvec(v)
        fixed = self._fixed_scores()
        parts = [np.empty_like(u) for _ in fixed]          # outer and, for θ > 0, inner
        for scores, out in zip(fixed, parts):
            _prsvm.squared_hinge_hessvec(scores, self.loss.rank, self.loss.starts, self._order,
                                         self.loss.weight, self.loss.n_levels, u, out,
                                         self.loss.chunks, self.loss.n_threads,
                                         doc_weight=self.loss.doc_weight)
        step = parts[0] - parts[1] if len(parts) > 1 else parts[0]
        return v + self.X.rmatvec(step / (2.0 * self.delta))

    def precondition(self, r: Vector) -> np.ndarray:
        return self._precondition(r)

    def strengthen(self) -> bool | str:
        """The full bound I + 2 XᵀLX if cheap and not yet formed; and, when the step cost
        more products than a formation, the Hessian at the next point (see the class)."""
        changed = self.preconditioner.strengthen()
        if self._rows is not None and self._step_products > self._formation_products:
            self._precondition.ask()
            return "preconditioning with the Hessian at the next point"
        return changed

    def line(self, w: Vector, d: Vector) -> Callable[[float], float]:
        s0, sd = self._scores, self.X.matvec(d)
        ww, wd, dd = w @ w, w @ d, d @ d

        def phi(t):
            scores = s0 + t * sd
            return 0.5 * (ww + 2.0 * t * wd + t * t * dd) + \
                self.score_space(scores, self.loss.order(scores))[0]
        return phi

    def certificate(self, w: Vector) -> Any:
        """(w', F(w'), a lower bound D ≤ F*) at the last value_grad's point w (weak duality).

        The smoothed loss's pair weights α_p = c_q min(1, (1 − m_p)₊ / δ) ∈ [0, c_q]
        are feasible for the hinge problem's dual, max Σ α_p − ½‖Σ α_p (x_i − x_j)‖²;
        Σ_p α_p (x_i − x_j) = −Xᵀγ (γ = ∂L_δ/∂s) and Σ_p α_p = [H(s) − θ H(s/θ)] / δ,
        H the hinge's value.  The best multiple tα, t ∈ [0, 1], is taken, and w' is
        the better of w and the dual's own primal point tΣα_p(x_i − x_j): where
        rounding keeps ∇F_δ(w) from vanishing (F(w) − D then carries ½‖∇F_δ‖²),
        the dual's point is often the closer to it.
        """
        scores = self._fixed_scores()[0]
        hinge, _ = self.loss(scores)
        inner, _ = self.loss(scores / self.theta)
        mass = max((hinge - self.theta * inner) / self.delta, 0.0)
        v = -self.X.rmatvec(self._gamma)
        vv = float(v @ v)
        t = 1.0 if vv <= mass else mass / vv
        lower = t * mass - 0.5 * t * t * vv
        f = 0.5 * (w @ w) + hinge
        dual_point = t * v
        f_dual = 0.5 * (dual_point @ dual_point) + self.loss(self.X.matvec(dual_point))[0]
        if f_dual < f:
            return dual_point, f_dual, lower
        return w, f, lower
