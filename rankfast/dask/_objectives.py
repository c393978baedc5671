"""The distributed objectives: each shard's part of an objective, summed by the driver.

The solvers (rankfast.optimize) see the same protocol as in one process; each
call sends the iterate to the shards, which evaluate their queries' part with
the one-process kernels, and the driver sums the parts in shard order.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg

from ..errors import RankfastError, UsageError
from ..optimize.precondition import StrengtheningPreconditioner
from ._shards import (
    MAX_RETRIES,
    Shards,
    StaleShard,
    Traffic,
    _data_bytes,
    _grouped,
    _nbytes,
    _on,
    _ordered_sum,
    _query_multipliers,
    gather,
)

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any, Callable

    from .._typing import Vector


class _Stepper:
    """Calls a step on every shard; on StaleShard, restores the shards' state and repeats it."""

    def __init__(self, shards):
        self.shards = shards
        self.repeats = 0

    def call(self, function, *args):
        for _ in range(MAX_RETRIES):
            try:
                return self.shards.map(function, *args)
            except StaleShard:
                self.repeats += 1
                self.shards.locate()
                try:
                    self.restore()
                except StaleShard:
                    continue
        raise RankfastError(f"a step failed {MAX_RETRIES} times: the cluster keeps losing shards")

    def restore(self):
        """Recompute every shard's per-step state (subclasses)."""


def _check(shard, tag):
    if shard.tag != tag:
        raise StaleShard(tag)


# ------------------------------------------------------------------ PRSVM

class _SquaredHingePart:
    """A shard's SquaredHingeObjective and the step it is at (worker side)."""

    __sizeof__ = _data_bytes

    def __init__(self, part, used, n_queries, C, loss, table=None):
        from ..data.validation import weighted
        from ..learners._linear import query_weights
        from ..learners.prsvm import SquaredHingeObjective
        X, y, starts = _grouped(part, used)
        self.objective = SquaredHingeObjective(
            X, y, starts, weighted(query_weights(y, starts, C, loss, n_queries),
                                   _query_multipliers(part, table)))
        self.tag, self.phi = None, None

    def __getstate__(self):                     # a copy moved elsewhere holds no step
        return {"objective": self.objective, "tag": None, "phi": None}


def _hinge_value_grad(shard, tag, w):
    """The shard's loss and its gradient at w (its objective minus ½‖w‖², w)."""
    f, g = shard.objective.value_grad(w)
    shard.tag, shard.phi = tag, None
    return f - 0.5 * (w @ w), g - w


def _hinge_diagonal(shard):
    """The shard's part of the Hessian diagonal with every pair active (no ½‖w‖² term)."""
    return shard.objective.pair_diagonal


def _pair_gram(shard):
    """The shard's XᵀLX: its part of the full preconditioner."""
    return shard.objective.preconditioner.gram()


def _stored_entries(shard):
    return shard.objective.preconditioner.stored_entries()


class _Strengthened(StrengtheningPreconditioner):
    """The driver's preconditioner: the shards' summed diagonal, then (when the solver asks and
    it is cheap) the summed I + scale · XᵀLX: one round of tasks, a d × d matrix from each shard."""

    def __init__(self, shards, diagonal, scale):
        super().__init__(diagonal, scale)
        self.shards = shards

    def stored_entries(self):
        return _ordered_sum(self.shards.map(_stored_entries))

    def gram(self):
        return _ordered_sum(self.shards.map(_pair_gram))


def _hinge_hessvec(shard, tag, v):
    _check(shard, tag)
    return shard.objective.hessvec(v) - v


def _hinge_line(shard, tag, w, d):
    _check(shard, tag)
    shard.phi = (shard.objective.line(w, d), w @ w, w @ d, d @ d)


def _hinge_phi(shard, tag, t):
    """The shard's loss at w + t d (phi(t) minus its regulariser term)."""
    _check(shard, tag)
    if shard.phi is None:
        raise StaleShard(tag)
    phi, ww, wd, dd = shard.phi
    return phi(t) - 0.5 * (ww + 2.0 * t * wd + t * t * dd)


class NewtonObjective(_Stepper):
    """PRSVM's objective for rankfast.optimize.newton.minimize: ½‖w‖² plus the shards' losses.

    value_grad, hessvec and line have the meaning of rankfast.optimize.newton's
    protocol; each is one round of tasks, one per shard, sending one d-vector
    (or a number) to each and receiving one d-vector (or a number) from each.
    """

    curvature_floor = 1.0          # ½‖w‖² plus a convex loss: rankfast.optimize.newton certifies with it
    w: np.ndarray | None           # the point of the last value_grad

    def __init__(self, shards: Any) -> None:
        super().__init__(shards)
        self.tag, self.w = 0, None
        self.direction: tuple[np.ndarray, np.ndarray] | None = None
        # as SquaredHingeObjective's: the shards' parts of the pair diagonal, then of I + 2XᵀLX
        self.preconditioner = _Strengthened(
            shards, 1.0 + _ordered_sum(shards.map(_hinge_diagonal)), 2.0)

    def precondition(self, r: Vector) -> np.ndarray:
        return self.preconditioner(r)

    def strengthen(self) -> bool:
        return self.preconditioner.strengthen()

    def value_grad(self, w: Vector) -> tuple[float, np.ndarray]:
        self.tag += 1
        self.w, self.direction = w.copy(), None
        parts = self.shards.map(_hinge_value_grad, self.tag, w)
        return (0.5 * (w @ w) + _ordered_sum(p[0] for p in parts),
                w + _ordered_sum(p[1] for p in parts))

    def hessvec(self, v: Vector) -> np.ndarray:
        return v + _ordered_sum(self.call(_hinge_hessvec, self.tag, v))

    def line(self, w: Vector, d: Vector) -> Callable[[float], float]:
        self.direction = (w.copy(), d.copy())
        self.call(_hinge_line, self.tag, w, d)
        ww, wd, dd = w @ w, w @ d, d @ d

        def phi(t):
            return 0.5 * (ww + 2.0 * t * wd + t * t * dd) + _ordered_sum(
                self.call(_hinge_phi, self.tag, t))
        return phi

    def restore(self) -> None:
        self.shards.map(_hinge_value_grad, self.tag, self.w)
        if self.direction is not None:
            self.shards.map(_hinge_line, self.tag, *self.direction)


def _fit_prsvm(learner, data, client, log, table=None):
    from ..learners._linear import check_loss
    from ..optimize.newton import minimize
    check_loss(learner.loss)
    shards = Shards(client, _SquaredHingePart, data, data.used,
                    data.summary.n_queries, float(learner.C), learner.loss, table)
    objective = NewtonObjective(shards)
    learner.result_ = minimize(objective, np.zeros(len(data.used)), tol=learner.tol,
                               max_iter=learner.max_iter, log=log)
    learner.C_ = learner.C
    if log is not None:
        result = learner.result_
        log(f"Newton: {result.message} after {result.iterations} iterations "
            f"({result.cg_iterations} CG steps), objective {result.f:.8g}", 1)
    return learner.result_.w, shards.traffic(objective.repeats)


# ---------------------------------------------------------------- RankNCG

class _ErfcPart:
    """A shard's ErfcPairObjective, its point (scores, γ) and line (X d, trial γ's) (worker side)."""

    __sizeof__ = _data_bytes

    def __init__(self, part, used, n_queries, C, loss, eps, fast, table=None):
        from ..data.validation import weighted
        from ..learners._linear import query_weights
        from ..learners.rankncg import ErfcPairObjective
        X, y, starts = _grouped(part, used)
        # never strengthened here: the driver sums the shards' parts (_Strengthened)
        self.objective = ErfcPairObjective(
            X, y, starts, weighted(query_weights(y, starts, C, loss, n_queries),
                                   _query_multipliers(part, table)), eps, fast,
            preconditioner="diagonal")
        self.refined = 0                # the driver's refine() calls this objective has had
        self.tag = self.scores = self.gamma = self.sd = None
        self.gammas = {}

    def __getstate__(self):
        return {"objective": self.objective, "refined": self.refined, "tag": None,
                "scores": None, "gamma": None, "sd": None, "gammas": {}}


def _erfc_constants(shard):
    """(Σ_pairs c_q (x_lj − x_kj)² per column, |X|ᵀδ): the parts of the preconditioner and error bound."""
    from ..learners.rankncg import PSI2_MAX
    ob = shard.objective
    pair_squares = (1.0 / ob.inverse_diagonal - 1.0) / PSI2_MAX
    return pair_squares, ob.products.rmatvec(ob.delta, entries="abs")


def _erfc_refine(shard, times):
    """The shard's fast sums refined ``times`` times since it was built (ErfcPairObjective.refine:
    a shard recomputed after a lost worker starts again from the first accuracy);
    (whether the last refinement did anything, eps, the shard's |X|ᵀδ)."""
    ob = shard.objective
    refined = True
    while shard.refined < times:
        refined = ob.refine()
        shard.refined += 1
    return refined, ob.eps, ob.products.rmatvec(ob.delta, entries="abs")


def _erfc_point(shard, tag, w):
    """Xᵀγ at w, keeping the scores and γ as the shard's point ``tag``."""
    ob = shard.objective
    shard.scores = ob.products.matvec(w)
    shard.gamma = ob.score_gradient(shard.scores)
    shard.tag, shard.sd, shard.gammas = tag, None, {}
    return ob.products.rmatvec(shard.gamma)


def _erfc_line(shard, tag, d):
    """Along d from the point: (Σ |X d| δ, Σ c n_other (Xd − query means)², slope parts at 0)."""
    _check(shard, tag)
    ob = shard.objective
    shard.sd = ob.products.matvec(d)
    shard.gammas = {0.0: shard.gamma}
    sizes = np.maximum(np.diff(ob.starts), 1)
    mean = np.bincount(ob.qidx, weights=shard.sd, minlength=len(sizes)) / sizes
    centred = shard.sd - mean[ob.qidx]
    return (float(np.abs(shard.sd) @ ob.delta), float(ob.c * ob.n_other @ (centred * centred)),
            _erfc_slope(shard, tag, 0.0))


def _erfc_slope(shard, tag, t):
    """(Σ X d ∘ γ(t), Σ |X d ∘ γ(t)|, documents) at w + t d."""
    _check(shard, tag)
    if shard.sd is None:
        raise StaleShard(tag)
    gamma = shard.gammas.get(t)
    if gamma is None:
        gamma = shard.objective.score_gradient(shard.scores + t * shard.sd)
        shard.gammas[t] = gamma
    products = shard.sd * gamma
    return float(products.sum()), float(np.abs(products).sum()), len(products)


def _erfc_move(shard, tag, new_tag, t):
    """Xᵀγ at w + t d, which becomes the shard's point ``new_tag``."""
    _check(shard, tag)
    if shard.sd is None:
        raise StaleShard(tag)
    scores = shard.scores + t * shard.sd
    gamma = shard.gammas.get(t)
    if gamma is None:
        gamma = shard.objective.score_gradient(scores)
    shard.tag, shard.scores, shard.gamma, shard.sd, shard.gammas = new_tag, scores, gamma, None, {}
    return shard.objective.products.rmatvec(gamma)


@dataclasses.dataclass
class _Point:
    w: np.ndarray
    g: np.ndarray
    tag: int


class ErfcObjective(_Stepper):
    """RankNCG's objective for rankfast.optimize.ncg.nonlinear_cg: ½‖w‖² plus the shards' erfc losses.

    ``point``, ``precondition``, ``line`` and ``gradient_error`` as
    ErfcPairObjective's, with every sum over documents a sum of the shards'.
    """

    def __init__(self, shards: Any) -> None:
        from ..learners.rankncg import PSI2_MAX
        super().__init__(shards)
        parts = shards.map(_erfc_constants)
        self.preconditioner = _Strengthened(
            shards, 1.0 + PSI2_MAX * _ordered_sum(p[0] for p in parts), PSI2_MAX)
        self.error_vector = _ordered_sum(p[1] for p in parts)
        self.refined = 0                # refinements of the shards' fast sums (refine)
        self.tag = 0
        self.current: Any = None
        self.direction: np.ndarray | None = None

    def _new_tag(self):
        self.tag += 1
        return self.tag

    def point(self, w: Vector) -> _Point:
        tag = self._new_tag()
        self.current, self.direction = (tag, w.copy()), None
        return _Point(w, w + _ordered_sum(self.shards.map(_erfc_point, tag, w)), tag)

    def precondition(self, g: Vector) -> np.ndarray:
        return self.preconditioner(g)

    def strengthen(self) -> bool:
        return self.preconditioner.strengthen()

    def refine(self) -> bool:
        """The shards' fast sums 1e4 times more accurate, as ErfcPairObjective.refine."""
        self.refined += 1
        parts = list(self.shards.map(_erfc_refine, self.refined))
        self.error_vector = _ordered_sum(p[2] for p in parts)
        self.eps = parts[0][1]
        return all(p[0] for p in parts)

    def gradient_error(self) -> np.ndarray:
        return self.error_vector

    def line(self, point: _Point, d: Vector) -> _ErfcLine:
        return _ErfcLine(self, point, d)

    def restore(self) -> None:
        tag, w = self.current
        if self.refined:
            self.shards.map(_erfc_refine, self.refined)
        self.shards.map(_erfc_point, tag, w)
        if self.direction is not None:
            self.shards.map(_erfc_line, tag, self.direction)


class _ErfcLine:
    """rankncg._Line's φ'(t) ± error and curvature bounds, from the shards' sums."""

    def __init__(self, objective, point, d):
        from ..learners.rankncg import PSI2_MAX
        self.objective, self.start, self.d = objective, point, d
        objective.direction = d.copy()
        parts = objective.call(_erfc_line, point.tag, d)
        self.error = _ordered_sum(p[0] for p in parts)
        self.curvature = 2.0 * PSI2_MAX * _ordered_sum(p[1] for p in parts)
        self.wd, self.dd = float(point.w @ d), float(d @ d)
        self.gammas = {0.0: [p[2] for p in parts]}

    def curvature_bounds(self):
        return self.dd, (self.dd + self.curvature) * (1.0 + 1e-12)

    def slope(self, t):
        from ..learners.rankncg import ROUNDING
        parts = self.gammas.get(t)
        if parts is None:
            parts = self.gammas[t] = self.objective.call(_erfc_slope, self.start.tag, t)
        products = _ordered_sum(p[0] for p in parts)
        absolute = _ordered_sum(p[1] for p in parts)
        size = sum(p[2] for p in parts) + len(self.d)
        value = self.wd + t * self.dd + products
        rounding = ROUNDING * size * (abs(self.wd) + t * self.dd + absolute)
        return value, self.error + rounding

    def point(self, t):
        ob = self.objective
        tag = ob._new_tag()
        w = self.start.w + t * self.d
        g = w + _ordered_sum(ob.call(_erfc_move, self.start.tag, tag, t))
        ob.current, ob.direction = (tag, w.copy()), None
        return _Point(w, g, tag)


def _fit_rankncg(learner, data, client, log, table=None):
    from ..optimize.ncg import nonlinear_cg
    shards = Shards(client, _ErfcPart, data, data.used, data.summary.n_queries,
                    float(learner.C), learner.loss, learner.erfc_eps, learner.erfc == "fast",
                    table)
    objective = ErfcObjective(shards)
    learner.result_ = nonlinear_cg(objective, np.zeros(len(data.used)), tol=learner.tol,
                                   max_iter=learner.max_iter, log=log)
    learner.C_ = learner.C                              # to_model's metadata, as _fit_prsvm
    if log is not None:
        log(learner.result_.summary(), 1)
    return learner.result_.w, shards.traffic(objective.repeats)


# ---------------------------------------------------------------- RankRLS

def _rls_gram(part, used, loss, table=None):
    """Task: (X̂ᵀX̂, X̂ᵀŷ) of a shard, X̂ = blockdiag(√α_q P_q) X (rankrls.centred)."""
    from ..data.validation import weighted
    from ..learners.rankrls import centred, query_scale
    X, y, starts = _grouped(part, used)
    alpha = weighted(query_scale(starts, loss), _query_multipliers(part, table))
    Xh = centred(X, starts, alpha)
    yh = centred(y[:, None], starts, alpha).ravel()
    return Xh.T @ Xh, Xh.T @ yh


class _LaplacianPart:
    """A shard's v ↦ XᵀLXv (rankrls._NormalEquations with λ = 0) and XᵀLy (worker side)."""

    __sizeof__ = _data_bytes

    def __init__(self, part, used, loss, table=None):
        from ..data.validation import weighted
        from ..learners.rankrls import _NormalEquations, query_scale
        X, y, starts = _grouped(part, used)
        alpha = weighted(query_scale(starts, loss), _query_multipliers(part, table))
        self.operator = _NormalEquations(X, starts, alpha, 0.0)
        self.y = y


def _laplacian_setup(shard):
    """(XᵀLy, diag(XᵀLX)) of the shard."""
    with np.errstate(divide="ignore"):
        diagonal = 1.0 / shard.operator.inverse_diag          # 1 / (diag + 0); 1/inf = 0
    return shard.operator.rhs(shard.y), diagonal


def _laplacian_product(shard, v):
    return shard.operator.hessvec(v)


def _fit_rankrls(learner, data, client, log, table=None):
    from ..learners._linear import check_loss
    from ..learners.rankrls import DENSE_MAX_ENTRIES, DENSE_MAX_FEATURES, _check_regularisation
    from ..optimize.newton import conjugate_gradient
    check_loss(learner.loss)
    if learner.solver not in ("auto", "dense", "cg"):
        raise UsageError(f"solver must be auto, dense or cg (got {learner.solver!r})")
    d, Q = len(data.used), data.summary.n_queries
    learner.C_ = float(learner.C)
    _check_regularisation(Q, [learner.C_])
    lam = Q / (2.0 * learner.C_)
    solver = learner.solver
    if solver == "auto":
        largest = max(data.shard_sizes, default=0)
        solver = "dense" if d <= DENSE_MAX_FEATURES and largest * d <= DENSE_MAX_ENTRIES else "cg"
    learner.solver_, learner.cv_table_, learner.weights_by_C_ = solver, None, None
    learner.cg_iterations_, learner.residual_ = 0, 0.0
    if log is not None:
        log(f"RankRLS: {d} features, {data.summary.n_documents} documents, {Q} queries on "
            f"{len(data.parts)} shards, {solver} solver, λ = Q/(2C) = {lam:.6g}", 1)
    if solver == "dense":
        futures = [client.submit(_rls_gram, part, data.used, learner.loss, table, **_on(where))
                   for part, where in zip(data.parts, data.places)]
        parts = gather(client, futures)
        A = _ordered_sum(p[0] for p in parts)
        b = _ordered_sum(p[1] for p in parts)
        A[np.diag_indices_from(A)] += lam
        return scipy.linalg.solve(A, b, assume_a="pos"), Traffic(1, 0, _nbytes(parts), 0)
    shards = Shards(client, _LaplacianPart, data, data.used, learner.loss, table)
    parts = shards.map(_laplacian_setup)
    b = _ordered_sum(p[0] for p in parts)
    inverse_diagonal = 1.0 / (np.maximum(_ordered_sum(p[1] for p in parts), 0.0) + lam)

    def hessvec(v):
        return _ordered_sum(shards.map(_laplacian_product, v)) + lam * v

    w, iterations, _ = conjugate_gradient(hessvec, b, learner.tol, learner.max_iter,
                                          lambda r: inverse_diagonal * r)
    norm_b = np.linalg.norm(b)
    learner.cg_iterations_ = iterations
    learner.residual_ = float(np.linalg.norm(b - hessvec(w)) / norm_b) if norm_b > 0 else 0.0
    if log is not None:
        log(f"CG: {iterations} iterations, relative residual {learner.residual_:.3g}", 1)
    return w, shards.traffic(0)
