"""The distributed objectives: a learner's objective on every shard, summed by a driver per protocol.

A learner that trains on a cluster is an objective and a solver (rankfast.learners._base.
LinearRanker): each shard builds the learner's objective over its queries with the hook
one process uses (``_objective``), and the learner's solver (``_minimize``) runs on the
driver here that its objective class's ``protocol`` names.  A driver offers the solver
the protocol one process offers it; each call sends the iterate to the shards, which
evaluate their queries' part with their objective's own methods, and the driver adds the
parts in shard order, the regulariser ½‖w‖² once.  The drivers know the protocols, not
the learners:

``newton``            rankfast.optimize.newton.minimize: value_grad, hessvec and line, each
                      less ½‖w‖²'s term; the preconditioner's pair_squares and gram.
``ncg``               rankfast.optimize.ncg.nonlinear_cg: loss_point's gradient, the line's
                      error, pair_spread and slope_terms (combined by the objective class's
                      line_bounds and slope_bound), refine, gradient_error, the preconditioner.
``normal_equations``  a closed form: the summed matrix_and_rhs, or rhs_and_diagonal and
                      products for CG; the learner's solve adds its λ once.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import RankfastError
from ..losses.pair_preconditioner import StrengtheningPreconditioner
from ._shards import (
    MAX_RETRIES,
    Shards,
    StaleShard,
    _data_bytes,
    _grouped,
    _ordered_sum,
    _query_multipliers,
    document_weights,
)

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import Log, Vector

PROTOCOLS = ("newton", "ncg", "normal_equations")


def train(learner: Any, data: Any, client: Any, log: Log, table: Any = None) -> tuple[Any, Any]:
    """(w, Traffic): the learner's solver on the sum of its objective over ``data``'s shards.

    Every shard builds ``learner._objective`` on its queries (c_q with the global
    number of queries, ``table``'s query multipliers); ``learner._minimize`` runs
    from zero on the driver of ``learner.objective_type.protocol``.
    """
    objective_type = learner.objective_type
    shards = Shards(client, _ShardObjective, data, data.used, learner, data.summary.n_queries,
                    float(learner.C), table)
    objective = _driver(objective_type, shards, data)
    learner.C_ = learner.C                              # to_model's metadata, as fit's
    w, result = learner._minimize(objective, np.zeros(len(data.used)), log)
    if result is not None:
        learner.result_ = result
    return w, shards.traffic(objective.repeats)


def _driver(objective_type, shards, data):
    """The driver of the objective's protocol over ``shards``."""
    protocol = objective_type.protocol
    if protocol == "newton":
        return NewtonSum(shards, objective_type)
    if protocol == "ncg":
        return NCGSum(shards, objective_type)
    return NormalEquationsSum(shards, data)


class _ShardObjective:
    """A shard's queries as the learner's objective, and the step it is at (worker side)."""

    __sizeof__ = _data_bytes

    def __init__(self, part, used, learner, n_queries, C, table=None):
        from ..learners._base import Problem  # the learners' fit, on a shard's queries
        X, y, starts = _grouped(part, used)
        doc_weight = document_weights(part, table)
        if doc_weight is not None:
            learner._check_document_weights()
        self.objective = learner._objective(
            Problem(X, y, starts, used, _query_multipliers(part, table), 1,
                    doc_weight=doc_weight, n_queries=n_queries), C)
        self.refined = 0                # the driver's refine() calls this objective has had
        self.tag = None                 # the driver's step that point and line belong to
        self.point = self.line = None

    def __getstate__(self):                     # a copy moved elsewhere holds no step
        return {"objective": self.objective, "refined": self.refined, "tag": None,
                "point": None, "line": None}


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


def _check_line(shard, tag):
    _check(shard, tag)
    if shard.line is None:
        raise StaleShard(tag)


# ------------------------------------------------------------ the preconditioner

def _pair_gram(shard):
    """The shard's XᵀLX: its part of the full preconditioner."""
    return shard.objective.preconditioner.gram()


def _stored_entries(shard):
    return shard.objective.preconditioner.stored_entries()


class _Strengthened(StrengtheningPreconditioner):
    """The driver's M = I + a Σ_shards XᵀLX (a: the objective's pair_curvature): its diagonal
    from the shards' summed pair_squares, then (when the solver asks and it is cheap) M itself:
    one round of tasks, a d × d matrix from each shard."""

    def __init__(self, shards, pair_squares, scale):
        super().__init__(1.0 + scale * pair_squares, scale)
        self.shards = shards

    def stored_entries(self):
        return _ordered_sum(self.shards.map(_stored_entries))

    def gram(self):
        return _ordered_sum(self.shards.map(_pair_gram))


# ------------------------------------------------------------------ newton

def _newton_value_grad(shard, tag, w):
    """The shard's loss and its gradient at w (its objective minus ½‖w‖², w)."""
    f, g = shard.objective.value_grad(w)
    shard.tag, shard.line = tag, None
    return f - 0.5 * (w @ w), g - w


def _pair_squares(shard):
    return shard.objective.pair_squares()


def _newton_hessvec(shard, tag, v):
    _check(shard, tag)
    return shard.objective.hessvec(v) - v


def _newton_line(shard, tag, w, d):
    _check(shard, tag)
    shard.line = (shard.objective.line(w, d), w @ w, w @ d, d @ d)


def _newton_phi(shard, tag, t):
    """The shard's loss at w + t d (phi(t) minus its regulariser term)."""
    _check_line(shard, tag)
    phi, ww, wd, dd = shard.line
    return phi(t) - 0.5 * (ww + 2.0 * t * wd + t * t * dd)


class NewtonSum(_Stepper):
    """An objective for rankfast.optimize.newton.minimize: ½‖w‖² plus the shards' losses.

    value_grad, hessvec and line have the meaning of rankfast.optimize.newton's
    protocol; each is one round of tasks, one per shard, sending one d-vector
    (or a number) to each and receiving one d-vector (or a number) from each.
    """

    def __init__(self, shards: Any, objective_type: Any) -> None:
        super().__init__(shards)
        self.curvature_floor = objective_type.curvature_floor     # of ½‖w‖² plus convex losses
        self.tag = 0
        self.w: np.ndarray | None = None           # the point of the last value_grad
        self.direction: Any = None
        self.preconditioner = _Strengthened(shards, _ordered_sum(shards.map(_pair_squares)),
                                            objective_type.pair_curvature)

    def precondition(self, r: Any) -> Any:
        return self.preconditioner(r)

    def strengthen(self) -> Any:
        return self.preconditioner.strengthen()

    def value_grad(self, w: Vector) -> Any:
        self.tag += 1
        self.w, self.direction = w.copy(), None
        parts = self.shards.map(_newton_value_grad, self.tag, w)
        return (0.5 * (w @ w) + _ordered_sum(p[0] for p in parts),
                w + _ordered_sum(p[1] for p in parts))

    def hessvec(self, v: Vector) -> Any:
        return v + _ordered_sum(self.call(_newton_hessvec, self.tag, v))

    def line(self, w: Vector, d: Vector) -> Any:
        self.direction = (w.copy(), d.copy())
        self.call(_newton_line, self.tag, w, d)
        ww, wd, dd = w @ w, w @ d, d @ d

        def phi(t):
            return 0.5 * (ww + 2.0 * t * wd + t * t * dd) + _ordered_sum(
                self.call(_newton_phi, self.tag, t))
        return phi

    def restore(self) -> None:
        self.shards.map(_newton_value_grad, self.tag, self.w)
        if self.direction is not None:
            self.shards.map(_newton_line, self.tag, *self.direction)


# --------------------------------------------------------------------- ncg

def _ncg_constants(shard):
    """(pair_squares, |X|ᵀδ): the shard's parts of the preconditioner and of the error bound."""
    return shard.objective.pair_squares(), shard.objective.gradient_error()


def _ncg_refine(shard, times):
    """The shard's objective refined ``times`` times since it was built (a shard recomputed
    after a lost worker starts again from the first accuracy); (whether the last
    refinement did anything, eps, the shard's gradient_error)."""
    ob = shard.objective
    refined = True
    while shard.refined < times:
        refined = ob.refine()
        shard.refined += 1
    return refined, ob.eps, ob.gradient_error()


def _ncg_point(shard, tag, w):
    """The loss's gradient at w, keeping the point as the shard's point ``tag``."""
    shard.point = shard.objective.loss_point(w)
    shard.tag, shard.line = tag, None
    return shard.point.g


def _ncg_line(shard, tag, d):
    """Along d from the point: (error, pair_spread, slope_terms at 0) of the shard's line."""
    _check(shard, tag)
    shard.line = shard.objective.line(shard.point, d)
    return shard.line.error, shard.line.pair_spread(), shard.line.slope_terms(0.0)


def _ncg_slope(shard, tag, t):
    """The line's slope_terms at w + t d."""
    _check_line(shard, tag)
    return shard.line.slope_terms(t)


def _ncg_move(shard, tag, new_tag, t):
    """The loss's gradient at w + t d, which becomes the shard's point ``new_tag``."""
    _check_line(shard, tag)
    shard.point = shard.line.loss_point(t)
    shard.tag, shard.line = new_tag, None
    return shard.point.g


@dataclasses.dataclass
class _Point:
    w: np.ndarray
    g: np.ndarray
    tag: int


class NCGSum(_Stepper):
    """An objective for rankfast.optimize.ncg.nonlinear_cg: ½‖w‖² plus the shards' losses.

    ``point``, ``precondition``, ``line``, ``refine`` and ``gradient_error`` as the
    one-process objective's, with every sum over documents a sum of the shards'.
    """

    def __init__(self, shards: Any, objective_type: Any) -> None:
        super().__init__(shards)
        self.objective_type = objective_type
        parts = shards.map(_ncg_constants)
        self.preconditioner = _Strengthened(shards, _ordered_sum(p[0] for p in parts),
                                            objective_type.pair_curvature)
        self.error_vector = _ordered_sum(p[1] for p in parts)
        self.refined = 0                # refinements of the shards' objectives (refine)
        self.tag = 0
        self.current: Any = None
        self.direction: Any = None

    def _new_tag(self):
        self.tag += 1
        return self.tag

    def point(self, w: Vector) -> Any:
        tag = self._new_tag()
        self.current, self.direction = (tag, w.copy()), None
        return _Point(w, w + _ordered_sum(self.shards.map(_ncg_point, tag, w)), tag)

    def precondition(self, g: Any) -> Any:
        return self.preconditioner(g)

    def strengthen(self) -> Any:
        return self.preconditioner.strengthen()

    def refine(self) -> Any:
        """Every shard's objective refined once more (its ``refine``); whether all changed."""
        self.refined += 1
        parts = list(self.shards.map(_ncg_refine, self.refined))
        self.error_vector = _ordered_sum(p[2] for p in parts)
        self.eps = parts[0][1]
        return all(p[0] for p in parts)

    def gradient_error(self) -> Any:
        return self.error_vector

    def line(self, point: Any, d: Vector) -> Any:
        return _SummedLine(self, point, d)

    def restore(self) -> None:
        tag, w = self.current
        if self.refined:
            self.shards.map(_ncg_refine, self.refined)
        self.shards.map(_ncg_point, tag, w)
        if self.direction is not None:
            self.shards.map(_ncg_line, tag, self.direction)


class _SummedLine:
    """The line of nonlinear_cg's protocol from the shards' summed parts, combined by the
    objective class (line_bounds, slope_bound) as one process combines its own."""

    def __init__(self, objective, point, d):
        self.objective, self.start, self.d = objective, point, d
        objective.direction = d.copy()
        parts = objective.call(_ncg_line, point.tag, d)
        self.error = _ordered_sum(p[0] for p in parts)
        self.pair_spread = _ordered_sum(p[1] for p in parts)
        self.wd, self.dd = float(point.w @ d), float(d @ d)
        self.gammas = {0.0: [p[2] for p in parts]}     # the trials' slope_terms, by t

    def curvature_bounds(self):
        return self.objective.objective_type.line_bounds(self.dd, self.pair_spread)

    def slope(self, t):
        parts = self.gammas.get(t)
        if parts is None:
            parts = self.gammas[t] = self.objective.call(_ncg_slope, self.start.tag, t)
        terms = (_ordered_sum(p[0] for p in parts), _ordered_sum(p[1] for p in parts),
                 sum(p[2] for p in parts))
        return self.objective.objective_type.slope_bound(self.wd, self.dd, t, self.error, terms,
                                                         len(self.d))

    def point(self, t):
        ob = self.objective
        tag = ob._new_tag()
        w = self.start.w + t * self.d
        g = w + _ordered_sum(ob.call(_ncg_move, self.start.tag, tag, t))
        ob.current, ob.direction = (tag, w.copy()), None
        return _Point(w, g, tag)


# -------------------------------------------------------- normal equations

def _matrix_and_rhs(shard):
    return shard.objective.matrix_and_rhs()


def _rhs_and_diagonal(shard):
    return shard.objective.rhs_and_diagonal()


def _product(shard, v):
    return shard.objective.product(v)


class NormalEquationsSum:
    """The shards' normal equations XᵀLX w = XᵀLy, summed, for a closed-form learner's solve.

    ``matrix_and_rhs`` is one round of tasks (a d × d matrix and a d-vector from each
    shard), ``rhs_and_diagonal`` one round (two d-vectors each), ``product(v)`` one
    round a product (a d-vector each way).  The sizes the solve chooses by:
    ``n_features``, ``n_queries``, ``n_documents``, ``n_parts`` (shards) and
    ``largest_part`` (the documents of the largest shard).
    """

    repeats = 0                     # its tasks keep no step: a recomputed shard is as good

    def __init__(self, shards: Any, data: Any) -> None:
        self.shards = shards
        self.n_features, self.n_queries = len(data.used), data.summary.n_queries
        self.n_documents, self.n_parts = data.summary.n_documents, len(shards.futures)
        self.largest_part = max(data.shard_sizes, default=0)

    def matrix_and_rhs(self) -> tuple[Any, Any]:
        parts = self.shards.map(_matrix_and_rhs)
        return _ordered_sum(p[0] for p in parts), _ordered_sum(p[1] for p in parts)

    def rhs_and_diagonal(self) -> tuple[Any, Any]:
        parts = self.shards.map(_rhs_and_diagonal)
        return _ordered_sum(p[0] for p in parts), _ordered_sum(p[1] for p in parts)

    def product(self, v: Vector) -> Any:
        return _ordered_sum(self.shards.map(_product, v))
