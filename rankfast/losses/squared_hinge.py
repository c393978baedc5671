"""PRSVM's loss, the squared pairwise hinge, as truncated Newton takes it (Chapelle & Keerthi 2010).

Σ_q c_q Σ_{(i,j) ∈ P_q} v_i max(0, 1 − (s_i − s_j))² with s = Xw, plus ½‖w‖²: value,
gradient and Hessian products in O(nnz(X) + n log L) through the pair-counting sweeps
of rankfast._kernels._prsvm (rankfast.learners.prsvm says what C, Q and ``-l`` make of c_q).
Meets rankfast.optimize.protocols.NewtonObjective.
"""
from __future__ import annotations

import numpy as np

from .._kernels import _prsvm
from .._kernels.threads import query_chunks
from ..data.sparse import issparse
from ..optimize.precondition import HessianAtNextPoint
from .pair_preconditioner import PairPreconditioner
from .products import DataMatrix, pair_square_sums, pair_weight_bound
from .query_order import QueryOrder

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Callable

    from .._typing import Int64Vector, Matrix, Vector


class SquaredHingeObjective:
    """½‖w‖² + Σ_q c_q Σ_pairs max(0, 1 − (s_i − s_j))², s = Xw, over contiguous queries.

    ``precondition`` divides by the Hessian's diagonal with every pair active,
    1 + 2 Σ_q c_q Σ_pairs (x_ij − x_kj)² (one pass over X; an upper bound of the
    diagonal at any w, exact at w = 0), so CG's work does not depend on the
    features' scales.  ``curvature_floor``: the Hessian's eigenvalues are ≥ 1.

    ``preconditioner="hessian"`` (dense X only; a kernel map's features): Jacobi first,
    then, each time the solver asks (``strengthen``: a Newton step needed more than
    rankfast.optimize.newton's STRENGTHEN_CG products), the Hessian itself at the next
    point the solver stands on (rankfast.optimize.precondition.hessian_gram).

    On a Dask cluster each shard holds one over its queries (rankfast.dask's driver of
    rankfast.optimize.newton's ``protocol``), and the driver adds their value_grad,
    hessvec and line, each less ½‖w‖²'s term, and their ``pair_squares``.
    """

    curvature_floor = 1.0
    protocol = "newton"
    pair_curvature = 2.0           # the squared hinge's second derivative: M = I + 2 XᵀLX

    def __init__(self, X: Matrix, y: Vector, starts: Int64Vector, query_weight: Vector,
                 n_threads: int = 1, preconditioner: str = "auto",
                 doc_weight: Vector | None = None) -> None:
        self.X = DataMatrix(X, n_threads)               # sparse X stays sparse: no dense copy
        self.n_threads = self.X.n_threads
        self.starts = np.ascontiguousarray(starts, dtype=np.int64)
        self.chunks = query_chunks(self.starts)
        self._order_of = QueryOrder(self.starts, self.chunks, self.n_threads)
        levels, rank = np.unique(y, return_inverse=True)
        self.rank = rank.ravel().astype(np.int64)
        self.n_levels = len(levels)
        self.weight = np.ascontiguousarray(query_weight, dtype=np.float64)
        self.doc_weight = None if doc_weight is None else \
            np.ascontiguousarray(doc_weight, dtype=np.float64)
        bound = pair_weight_bound(self.weight, self.starts, self.doc_weight)
        self.pair_diagonal = 2.0 * pair_square_sums(self.X, self.starts, self.rank, bound)
        self.exact_hessian = preconditioner == "hessian" and not issparse(self.X.X)
        if preconditioner == "hessian":
            preconditioner = "diagonal" if self.exact_hessian else "auto"
        self.preconditioner = PairPreconditioner(self.X.X, self.starts, self.rank, bound,
                                                 2.0, 1.0 + self.pair_diagonal, preconditioner)
        self._precondition = HessianAtNextPoint(self.preconditioner)   # "hessian": formed when asked
        self._scores: np.ndarray | None = None  # s = Xw at the last value_grad: fixes the Hessian
        self._order: np.ndarray | None = None
        self._step = None         # (w, s, loss, ∂loss/∂s, order) of the line search's last trial

    def _score_space(self, scores):
        """(loss, its gradient in score space, per-query order by score) at scores."""
        order = self._order_of(scores)
        grad_s = np.empty_like(scores)
        loss = _prsvm.squared_hinge(scores, self.rank, self.starts, order, self.weight,
                                    self.n_levels, grad_s, self.chunks, self.n_threads,
                                    doc_weight=self.doc_weight)
        return loss, grad_s, order

    def loss(self, scores: Vector) -> float:
        """Σ_q c_q Σ_active (1 − s_i + s_j)² at scores."""
        return self._score_space(scores)[0]

    def value_grad(self, w: Vector) -> tuple[float, np.ndarray]:
        if self._step is not None and np.array_equal(w, self._step[0]):
            _, scores, loss, grad_s, order = self._step     # the line search's accepted trial
        else:
            scores = self.X.matvec(w)
            loss, grad_s, order = self._score_space(scores)
        self._step = None
        self._scores, self._order = scores, order
        self._precondition.arrive(self.X.X, self._score_hessian, self.n_threads)
        return 0.5 * (w @ w) + loss, w + self.X.rmatvec(grad_s)

    def precondition(self, r: Vector) -> np.ndarray:
        return self._precondition(r)

    def strengthen(self) -> bool | str:
        """Precondition with I + 2 XᵀLX itself from now on, if cheap (rankfast.optimize.precondition);
        with ``preconditioner="hessian"``, with the Hessian at the next w (each time asked)."""
        if self.exact_hessian:
            self._precondition.ask()
            return "preconditioning with the Hessian at the next point"
        return self.preconditioner.strengthen()

    def _score_hessian(self, D, out, n_threads):
        """out = A D, A the loss's Hessian in score space at the last value_grad (columns of D)."""
        _prsvm.squared_hinge_hessian_columns(self._scores, self.rank, self.starts, self._order,
                                             self.weight, self.n_levels, D, out, n_threads,
                                             doc_weight=self.doc_weight)

    def pair_squares(self) -> np.ndarray:
        """Σ_q c_q Σ_pairs (x_lj − x_kj)² for every column j: diag(M) = 1 + pair_curvature times
        the sum of the shards' (pair_diagonal divided back, exactly: by a power of two)."""
        return self.pair_diagonal / self.pair_curvature

    def hessvec(self, v: Vector) -> np.ndarray:
        d = self.X.matvec(v)
        out = np.empty_like(d)
        _prsvm.squared_hinge_hessvec(self._scores, self.rank, self.starts, self._order,
                                     self.weight, self.n_levels, d, out, self.chunks,
                                     self.n_threads, doc_weight=self.doc_weight)
        return v + self.X.rmatvec(out)

    def line(self, w: Vector, d: Vector) -> Callable[[float], float]:
        s0 = self._scores if self._scores is not None else self.X.matvec(w)
        sd = self.X.matvec(d)
        ww, wd, dd = w @ w, w @ d, d @ d

        def phi(t):
            scores = s0 + t * sd
            loss, grad_s, order = self._score_space(scores)
            self._step = (w + t * d, scores, loss, grad_s, order)
            return 0.5 * (ww + 2.0 * t * wd + t * t * dd) + loss
        return phi
