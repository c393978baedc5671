"""RankNCG's loss, the pairwise log-sigmoid through erfc sums (Raykar, Duraiswami & Krishnapuram 2008).

F(w) = ½‖w‖² + Σ_q c_q Σ_pairs ψ(s_l − s_k), its gradient in O(n) per evaluation by the
ε-accurate fast erfc sums (rankfast.losses.erfc), with the error bounds and curvature
bounds the certified line search of rankfast.optimize.ncg needs (rankfast.learners.rankncg
has the derivation).  Meets rankfast.optimize.protocols.NCGObjective.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._kernels import _erfc
from .._kernels.threads import query_chunks
from ..losses.erfc import erfc_parameters
from .pair_preconditioner import PairPreconditioner
from .products import DataMatrix, pair_square_sums, pair_weight_bound

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import Int64Vector, Matrix, Vector

KAPPA = math.sqrt(3.0) / (math.pi * math.sqrt(2.0))


PSI2_MAX = KAPPA / math.sqrt(math.pi)       # ψ''(0) = max_t ψ''(t)


ROUNDING = 16.0 * np.finfo(np.float64).eps


FINEST_EPS = 1e-14          # the fast sums' finest accuracy refine() goes to


class ErfcPairObjective:
    """F(w) = ½‖w‖² + Σ_q c_q Σ_pairs ψ(s_l − s_k), s = Xw, over contiguous queries.

    Protocol of :func:`nonlinear_cg`: ``point(w)``, ``precondition(g)``, ``line(point, d)``.

    On a Dask cluster each shard holds one over its queries (rankfast.dask's driver of
    the ``protocol``): the driver adds the shards' ``loss_point`` gradients, their lines'
    ``error``, ``pair_spread`` and ``slope_terms``, their ``pair_squares`` and
    ``gradient_error``, and combines the sums as one process does (``line_bounds``,
    ``slope_bound``).
    """

    protocol = "ncg"
    pair_curvature = PSI2_MAX      # ψ''(0): ∇²F(0) = I + ψ''(0) XᵀLX

    def __init__(self, X: Matrix, y: Vector, starts: Int64Vector, query_weight: Vector, eps: float,
                 fast: bool, n_threads: int = 1, preconditioner: str = "auto",
                 doc_weight: Vector | None = None) -> None:
        self.products = DataMatrix(X, n_threads)        # sparse X stays sparse: no dense copy
        self.n_threads = self.products.n_threads
        self.fast = bool(fast)
        n = X.shape[0]
        self.starts = np.ascontiguousarray(starts, dtype=np.int64)
        self.chunks = query_chunks(self.starts)
        sizes = np.diff(self.starts)
        self.qidx = np.repeat(np.arange(len(sizes)), sizes)
        _, rank = np.unique(y, return_inverse=True)
        self.rank = np.ascontiguousarray(rank.ravel(), dtype=np.int64)
        # documents by query, then label; runs of one (query, label) are the level groups
        self.group_order = np.lexsort((self.rank, self.qidx)).astype(np.int64)
        key_q, key_r = self.qidx[self.group_order], self.rank[self.group_order]
        change = np.flatnonzero((np.diff(key_q) != 0) | (np.diff(key_r) != 0)) + 1
        self.group_starts = np.concatenate(([0], change, [n])).astype(np.int64)
        group_of = np.empty(n, dtype=np.int64)
        group_of[self.group_order] = np.repeat(np.arange(len(self.group_starts) - 1),
                                               np.diff(self.group_starts))
        m_query = sizes[self.qidx].astype(np.float64)
        m_level = np.diff(self.group_starts)[group_of].astype(np.float64)
        n_higher = self.starts[1:][self.qidx] - self.group_starts[1:][group_of]
        self.n_other = m_query - m_level
        self.c = np.asarray(query_weight, dtype=np.float64)[self.qidx]
        self.half_c = 0.5 * self.c
        self.twice_higher = 2.0 * n_higher
        self.sources = m_query + m_level          # the two transforms' sources per document
        self.rounding = ROUNDING * m_query * (m_query + 1.0)
        self.doc_weight = None
        bound = query_weight
        if doc_weight is not None:
            self._weigh_documents(np.ascontiguousarray(doc_weight, dtype=np.float64), group_of,
                                  m_query, m_level, n_higher)
            bound = pair_weight_bound(query_weight, self.starts, self.doc_weight)
        self.c_bound = np.asarray(bound, dtype=np.float64)[self.qidx]   # ≥ every pair's weight
        self._set_accuracy(eps)
        diagonal = 1.0 + PSI2_MAX * pair_square_sums(self.products, self.starts, self.rank, bound)
        self.inverse_diagonal = 1.0 / diagonal
        self.preconditioner = PairPreconditioner(self.products.X, self.starts, self.rank,
                                                 bound, PSI2_MAX, diagonal, preconditioner)

    def _weigh_documents(self, v, group_of, m_query, m_level, n_higher):
        """A weight v_l on each pair (l, k)'s preferred document:
        γ_i = (c_q/2) (2 V_i^> − v_i Σ_{k lower} erfc(z_i − z_k) − Σ_{l higher} v_l erfc(z_i − z_l)),
        V_i^> the weight of the documents above i; the sums from split_level_sums."""
        self.doc_weight = v
        group_weight = np.bincount(group_of, weights=v, minlength=len(self.group_starts) - 1)
        query_of_group = self.qidx[self.group_order[self.group_starts[:-1]]]
        for_query = np.bincount(query_of_group, weights=group_weight)
        through = np.cumsum(group_weight)            # groups are by query, then level
        first_of_query = np.r_[0, np.cumsum(np.bincount(query_of_group))[:-1]]
        before = np.r_[0.0, through][first_of_query][query_of_group]
        above = for_query[query_of_group] - (through - before)
        self.v_higher = above[group_of]
        m_lower = m_query - m_level - n_higher
        self.m_lower = m_lower
        self.twice_higher = 2.0 * self.v_higher
        self.sources = v * m_lower + self.v_higher   # each side's sources, by their weights
        largest = pair_weight_bound(np.ones(len(self.starts) - 1), self.starts, v)[self.qidx]
        self.rounding = self.rounding * np.maximum(largest, 1.0)

    def _set_accuracy(self, eps):
        self.eps = eps
        self.kernel_args = erfc_parameters(eps).kernel_args()
        self.delta = self.half_c * ((eps * self.sources if self.fast else 0.0) + self.rounding)

    def refine(self) -> bool:
        """Make the fast sums 1e4 times more accurate (down to FINEST_EPS); False if they are not fast
        or already that accurate.  nonlinear_cg asks for it when the sums' error bound, not the
        tolerance, would stop it: on raw features (1e8 beside 1e-3) ‖∇F‖ cancels that far."""
        if not self.fast or self.eps <= FINEST_EPS:
            return False
        self._set_accuracy(max(self.eps * 1e-4, FINEST_EPS))
        return True

    def score_gradient(self, scores: Vector) -> np.ndarray:
        """γ = ∂F/∂s at scores s (the loss part of the gradient in score space)."""
        w, h, coef, L, gap = self.kernel_args
        if self.doc_weight is not None:
            lower, higher = np.empty(len(scores)), np.empty(len(scores))
            _erfc.split_level_sums(KAPPA * scores, self.doc_weight, self.starts, self.group_order,
                                   self.group_starts, self.fast, w, h, coef, L, gap, lower,
                                   higher, self.chunks, self.n_threads)
            return self.half_c * (self.twice_higher - self.doc_weight * lower - higher)
        other = np.empty(len(scores))
        _erfc.other_level_sums(KAPPA * scores, self.starts, self.group_order, self.group_starts,
                               self.rank, self.fast, w, h, coef, L, gap, other, self.chunks,
                               self.n_threads)
        return self.half_c * (self.twice_higher - other)

    def point(self, w: Vector) -> _Point:
        """The iterate w with its scores, score-space and full gradients."""
        point = self.loss_point(w)
        return _Point(w, point.scores, point.gamma, w + point.g)

    def loss_point(self, w: Vector) -> Any:
        """point(w) with the loss's gradient Xᵀγ as g (½‖w‖²'s w left out: a Dask shard's part)."""
        scores = self.products.matvec(w)
        gamma = self.score_gradient(scores)
        return _Point(w, scores, gamma, self.products.rmatvec(gamma))

    def pair_squares(self) -> Any:
        """Σ_q c_q Σ_pairs (x_lj − x_kj)² for every column j, as the preconditioner's diagonal
        1 + ψ''(0) · pair_squares holds it (a Dask shard's part: the driver adds them)."""
        return (1.0 / self.inverse_diagonal - 1.0) / PSI2_MAX

    def precondition(self, g: Vector) -> np.ndarray:
        """diag(∇²F(0))⁻¹ g, or ∇²F(0)⁻¹ g once strengthened (rankfast.optimize.precondition)."""
        return self.preconditioner(g)

    def strengthen(self) -> bool:
        """Precondition with ∇²F(0) itself from now on, if cheap; whether anything changed."""
        return self.preconditioner.strengthen()

    def gradient_at_zero(self) -> np.ndarray:
        """∇F(0): at w = 0 every erfc is erfc(0) = 1, so γ = (c_q / 2)(2 n_i^> − n_i^≠)
        (weighted: (c_q / 2)(V_i^> − v_i n_i^<))."""
        if self.doc_weight is not None:
            return self.products.rmatvec(self.half_c * (self.v_higher
                                                        - self.doc_weight * self.m_lower))
        return self.products.rmatvec(self.half_c * (self.twice_higher - self.n_other))

    def gradient_error(self) -> np.ndarray:
        """|X|ᵀδ: bounds |∇F computed − ∇F| entry by entry (the erfc sums' and rounding errors)."""
        return self.products.rmatvec(self.delta, entries="abs")

    def line(self, point: _Point, d: Vector) -> _Line:
        return _Line(self, point, d)

    @staticmethod
    def line_bounds(dd: float, pair_spread: float) -> tuple[float, float]:
        """(μ, Λ) with μ ≤ φ''(t) ≤ Λ along d, from ‖d‖² and the loss's ``pair_spread`` (summed)."""
        return dd, (dd + 2.0 * PSI2_MAX * pair_spread) * (1.0 + 1e-12)

    @staticmethod
    def slope_bound(wd: float, dd: float, t: float, error: float, terms: Any,
                    n_features: int) -> tuple[float, float]:
        """(φ'(t) as computed, bound on its error) from wᵀd, ‖d‖², the erfc sums' ``error`` and
        the loss's ``slope_terms`` (summed); n_features: the length of d."""
        products, absolute, documents = terms
        value = wd + t * dd + products
        rounding = ROUNDING * (documents + n_features) * (abs(wd) + t * dd + absolute)
        return value, error + rounding


@dataclasses.dataclass
class _Point:
    w: np.ndarray
    scores: np.ndarray
    gamma: np.ndarray
    g: np.ndarray


class _Line:
    """φ(t) = F(w + t d): derivative estimates with error bounds, and curvature bounds."""

    def __init__(self, objective, point, d):
        self.objective, self.start, self.d = objective, point, d
        self.sd = objective.products.matvec(d)
        self.wd, self.dd = float(point.w @ d), float(d @ d)
        self.error = float(np.abs(self.sd) @ objective.delta)
        self.gammas = {0.0: point.gamma}

    def curvature_bounds(self):
        """(μ, Λ): μ ≤ φ''(t) ≤ Λ for every t."""
        return self.objective.line_bounds(self.dd, self.pair_spread())

    def pair_spread(self):
        """Σ_i c_q n_i^≠ (u_i − ū_q)², u = X d: φ'' ≤ ‖d‖² + 2ψ''(0) times this (a shard's part)."""
        ob = self.objective
        sizes = np.maximum(np.diff(ob.starts), 1)
        mean = np.bincount(ob.qidx, weights=self.sd, minlength=len(sizes)) / sizes
        centred = self.sd - mean[ob.qidx]
        return float(ob.c_bound * ob.n_other @ (centred * centred))

    def slope(self, t):
        """(φ'(t) as computed, bound on its error)."""
        return self.objective.slope_bound(self.wd, self.dd, t, self.error, self.slope_terms(t),
                                          len(self.d))

    def slope_terms(self, t):
        """(Σ u_i γ_i(t), Σ |u_i γ_i(t)|, documents), u = X d: the loss's part of φ'(t) (a
        shard's part), γ(t) kept for point(t)."""
        gamma = self.gammas.get(t)
        if gamma is None:
            gamma = self.objective.score_gradient(self.start.scores + t * self.sd)
            self.gammas[t] = gamma
        products = self.sd * gamma
        return float(products.sum()), float(np.abs(products).sum()), len(products)

    def point(self, t):
        """The point w + t d, reusing the score-space gradient of a trial at t."""
        point = self.loss_point(t)
        return _Point(point.w, point.scores, point.gamma, point.w + point.g)

    def loss_point(self, t):
        """point(t) with the loss's gradient Xᵀγ as g (½‖w‖²'s w left out: a shard's part)."""
        w = self.start.w + t * self.d
        scores = self.start.scores + t * self.sd
        gamma = self.gammas.get(t)
        if gamma is None:
            gamma = self.objective.score_gradient(scores)
        return _Point(w, scores, gamma, self.objective.products.rmatvec(gamma))
