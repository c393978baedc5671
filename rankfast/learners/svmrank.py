"""svm_rank's own objective, the L1-hinge RankSVM, trained by OCAS cutting planes or smoothed Newton.

Objective (exactly svm_rank's, ``-c C -l 1|2``)::

    F(w) = ½‖w‖² + L(w),   L(w) = Σ_q c_q Σ_{(i,j) ∈ P_q} max(0, 1 − wᵀ(x_i − x_j))

P_q holds the pairs of query q with label_i > label_j, c_q = C / Q (Q queries)
and, with ``-l 2``, c_q = C / (Q |P_q|): svm_rank's fraction of swapped pairs,
which scales both its loss and its joint feature map by 1 / |P_q| (its
``read_struct_examples``), so each query's hinges are averaged.

svm_rank's guarantee, worked out.  svm_rank is SVM-struct's 1-slack
formulation, min ½‖w‖² + C ξ subject to, for every labelling ȳ,
(1/Q) Σ_q [Δ_q(ȳ) − wᵀδΨ_q(ȳ)] ≤ ξ; the most violated ȳ makes the right side
(1/Q) Σ_q Σ_P max(0, 1 − wᵀ(x_i − x_j)), so C ξ at the optimum is L(w) above.
It stops when the most violated constraint exceeds the working set's slack by
at most ε', and ε' is svm_rank's ``-e ε`` rescaled "relative to maximum loss":
ε' = ε · (Σ_q |P_q|) / Q with ``-l 1``, ε' = ε with ``-l 2`` (the loss of a
query is then at most 1).  At that point (w, ξ + ε') is feasible and ½‖w‖² + Cξ
is a lower bound on the optimum (a relaxation), so svm_rank's model satisfies
F(w) − F* ≤ C ε'.  This learner stops when its *certified* gap F(w) − D is at
most C ε' and at most ε D, where D ≤ F* is a dual value (of the cutting-plane
model, or of the smoothed problem's pair weights), so its model carries at
least svm_rank's guarantee and is within ε relative of the optimum's objective
(C ε' alone can be far more than that when the optimum is far below F(0)); with
``-l 1``, C ε' = ε F(0).  ``result_.gap`` holds the certified gap reached.

Method.  svm_rank's cutting-plane loop is BMRM (Teo et al. 2010): its
iteration count grows like C / ε (10-12 iterations at -c 0.01, about 1200 at
-c 100 on its recorded 10k-500k-document scaling runs).  OCAS (Franc & Sonnenburg, JMLR 2009)
keeps the same cutting-plane model of L and the same small dual QP but adds
what BMRM lacks: the best point so far w_b, an exact-enough line search from w_b
towards the model's minimiser w_c, and new cutting planes taken near w_b
(at (1 − μ) w_b + μ w_c, μ = 0.1) rather than at the jumpy w_c.  It keeps
BMRM's certificate and its O(1/ε) bound while needing far fewer iterations in
practice (the paper reports 10-100x fewer than BMRM/SVMperf), and every
ingredient is cheap here:

* the oracle (L and a subgradient) is the pair-counting sweep of
  rankfast._kernels._hinge.hinge: scores sorted within queries, Fenwick trees over label
  ranks give each document's number of active partners, O(nnz + n log n) per
  call (Chapelle & Keerthi 2010, Sect. 4, with Lee & Lin 2014's trees); no pair
  is ever formed;
* the line search works on score vectors only: along w_b + t(w_c − w_b) the
  scores are s_b + t(s_c − s_b), so each trial costs a sort and a sweep, not a
  product with X.  It brackets the minimum, then takes regula-falsi steps on
  the derivative until the tangent lower bound is within a tenth of the target
  gap (or 12 trials);
* the reduced problem's dual is a QP over the simplex with one variable per
  cutting plane (plus the zero plane L ≥ 0), solved by greedy SMO in Cython
  (rankfast._kernels._hinge.simplex_qp), warm-started; planes unused for 50 rounds go.

Per iteration: two products with X (w_c's scores and the new plane's Xᵀg), a
few sorts and sweeps, all on ``n_jobs`` threads over chunks of queries fixed
by the data, so the model is the same bits for any number of threads.

When cutting planes stall.  Their iteration count grows like C R² / ε, R the
length of the pairs' feature differences: on one large ranking with raw
features (Torgo's house_8L as one ranking: 17k documents, features up to 5e5)
OCAS's lower bound had moved from 0 to 33 of the 8.2e7 it must reach after 300
iterations.  The default solver (``"auto"``) therefore watches the gap and,
when it falls slower than O(1/k) (:func:`ocas`'s ``stall``), goes on by
rankfast.optimize.smoothing.smoothing_path: Newton (rankfast.optimize.newton,
Jacobi-preconditioned CG) on Huber smoothings of the hinge of shrinking width δ, each a difference of two
squared hinges computed by PRSVM's kernels, whose smoothed pair weights are a
feasible point of the hinge problem's dual and so certify the gap the same
way; 0.6-1 s on that ranking for C from 1e-3 to 1e3.

Stopping rule: certified gap ≤ min(C ε', ε D) (above), or ``max_iter``
iterations (``-#``).
"""
from __future__ import annotations

import numpy as np

from .._estimator import check_is_fitted
from ..errors import UsageError
from ..losses.hinge import HingeLoss, HuberObjective
from ..losses.pair_preconditioner import PairPreconditioner
from ..losses.products import DataMatrix, pair_square_sums
from ..optimize.ocas import CuttingPlaneResult, ocas
from ..optimize.smoothing import smoothing_path
from ._base import LinearRanker, Problem
from ._linear import c_grid, check_loss, linear_model

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any, Callable

    from .._typing import Log, Vector
    from ..optimize.smoothing import SmoothingResult


def svm_rank_target(C: float, tol: float, loss: int) -> Callable[[float], float]:
    """C ε' for svm_rank's ``-e tol``, as a function of F(0) = L(0) (see the module docstring).

    ε' = tol · (pairs / queries) with -l 1, so C ε' = tol · L(0); ε' = tol with -l 2.
    """
    if loss == 2:
        return lambda f_start: C * tol
    return lambda f_start: tol * f_start


class RankSVML1(LinearRanker):
    """svm_rank's L1-hinge RankSVM, solved with a certified duality gap.

    See the module docstring for objective, method, stopping rule and the
    ε guarantee.  Each iteration costs O(nnz(X) + n log n) plus a small QP.

    Parameters
    ----------
    C : float
        svm_rank's -c: the loss is multiplied by C / (number of queries).
    loss : {1, 2}
        svm_rank's -l: 1 counts every pair, 2 averages each query's pairs.
    tol : float
        svm_rank's -e: stop when the certified gap is at most C ε', ε' being
        svm_rank's rescaled ε (svm_rank_target), and at most ε times a lower
        bound on the optimum's objective.
    max_iter : int
        svm_rank's -#: cap on Newton steps (smoothing) or cutting-plane iterations (ocas).
    n_jobs : int or None
        Threads for the products X w and Xᵀ u and the loss oracle (None or 0:
        every core this process may use); the model is the same for any number.
    normalize : {"none", "query", "zscore", "log"}
        rank_learn's --normalize (see rankfast.learners.prsvm.RankSVM).
    solver : {"auto", "smoothing", "ocas"}
        "ocas": the cutting planes of :func:`ocas`, fastest on well-scaled
        features; "smoothing": Newton on Huber smoothings of the hinge with the
        dual certificate of :func:`smoothing_path`, whose work does not grow
        with the features' scales; "auto" (default): OCAS until it stalls, then
        smoothing from its best point.  All stop at the same certified gap.

    Attributes
    ----------
    feature_ids_ : ndarray of int64
        1-based indices of the features seen in training.
    weights_ : ndarray of float64
        Their weights.
    result_ : SmoothingResult or CuttingPlaneResult
        Objective, lower bound and certified gap reached.

    Examples
    --------
    >>> from rankfast import RankSVML1
    >>> X = [[3.0, 0.2], [2.0, 0.9], [1.0, 0.1], [1.0, 0.5], [2.5, 0.4]]
    >>> y, qid = [2, 1, 0, 0, 1], [7, 7, 7, 8, 8]
    >>> scores = RankSVML1(C=1.0).fit(X, y, qid).predict(X)
    >>> [int(i) for i in scores[:3].argsort()[::-1]], [int(i) for i in scores[3:].argsort()[::-1]]
    ([0, 1, 2], [1, 0])
    """

    name = "svmrank"
    sparse_float32 = True          # X enters the numerics only through DataMatrix
    document_weights = True        # sample_weight may weigh documents: svm_proprank's objective

    def __init__(self, C: Any = 0.01, loss: int = 1, tol: float = 1e-3, max_iter: int = 100000,
                 n_jobs: int | None = None, normalize: str = "none", solver: str = "auto") -> None:
        self.C, self.loss, self.tol, self.max_iter = C, loss, tol, max_iter
        self.solver = solver
        self.normalize = normalize
        self.n_jobs = n_jobs

    def check_parameters(self) -> None:
        """UsageError naming a parameter out of range (fit calls it first): one C, no list."""
        check_loss(self.loss)
        if np.ndim(self.C) != 0 or c_grid(self.C) is not None:
            raise UsageError(f"C must be one positive number (got {self.C!r})")
        if not (isinstance(self.tol, (int, float, np.number)) and np.isfinite(self.tol)
                and self.tol > 0):
            raise UsageError(f"tol must be a positive number (got {self.tol!r})")
        if self.solver not in ("auto", "smoothing", "ocas"):
            raise UsageError(f"solver must be 'auto', 'smoothing' or 'ocas' "
                             f"(got {self.solver!r})")

    def _solve(self, problem: Problem, C: float, w0: Vector | None = None,
               log: Log = None) -> tuple[Vector, Any]:
        """OCAS, going on by smoothed Newton if it stalls (``solver``), to svm_rank's -e bound."""
        loss = HingeLoss(problem.y, problem.starts, problem.query_weights(C, self.loss),
                         n_threads=problem.n_threads, doc_weight=problem.doc_weight)
        products = DataMatrix(problem.X, problem.n_threads)
        target = svm_rank_target(C, self.tol, self.loss)
        result: CuttingPlaneResult | SmoothingResult | None = None
        if self.solver in ("auto", "ocas"):
            result = ocas(products, loss, target, self.max_iter, log=log,
                          stall=self.solver == "auto", relative=self.tol)
            if log is not None and result.message == "stalled":
                log(f"OCAS stalled after {result.iterations} iterations (gap "
                    f"{result.gap:.4g}); going on by smoothed Newton", 1)
        if result is None or result.message == "stalled":
            diagonal = 1.0 + 2.0 * pair_square_sums(products, loss.starts, loss.rank,
                                                    loss.bound_weight)
            preconditioner = PairPreconditioner(products.X, loss.starts, loss.rank,
                                                loss.bound_weight, 2.0, diagonal)
            before = result
            result = smoothing_path(
                lambda delta: HuberObjective(products, loss, delta, preconditioner),
                products.shape[1], loss(np.zeros(products.shape[0]))[0], target, self.max_iter,
                log=log,
                w0=None if before is None else before.w,
                lower=0.0 if before is None else max(before.lower_bound, 0.0),
                relative=self.tol)
        if log is not None:
            r = result
            how = (f"OCAS: {r.message} after {r.iterations} iterations ({r.oracle_calls} loss "
                   f"evaluations, {r.planes} cutting planes)" if isinstance(r, CuttingPlaneResult)
                   else f"Smoothed Newton: {r.message} after {r.iterations} Newton steps over "
                   f"{r.stages} smoothing widths (last {r.delta:.3g})")
            log(f"{how}: objective {r.f:.8g}, certified duality gap {r.gap:.4g} "
                f"(svm_rank's bound C*eps' = {r.target:.4g})", 1)
        return result.w, result

    def to_model(self, n_features: int | None = None, n_documents: int | None = None) -> Any:
        """The trained LinearModel, with rankfast's metadata."""
        check_is_fitted(self)
        return linear_model(self, n_features, n_documents,
                            {"C": self.C, "l": self.loss, "e": self.tol})
