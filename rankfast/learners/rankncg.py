"""RankNCG: pairwise ranking by nonlinear conjugate gradient on fast erfc sums
(Raykar, Duraiswami & Krishnapuram 2008, IEEE TPAMI 30(7)).

Objective, with svm_rank's meaning of ``-c`` and ``-l``::

    minimise  F(w) = ½‖w‖² + Σ_q c_q Σ_{(l, k) ∈ P_q} ψ(wᵀ(x_l − x_k))

P_q holds the pairs of documents of query q with label_l > label_k: the full order
between the query's relevance levels.  c_q = C / Q (``loss=1``) or C / (Q |P_q|)
(``loss=2``, each query's pairs averaged), Q the number of queries, exactly as in
rankfast.learners.prsvm.  The paper maximises −(λ/2)‖w‖² + Σ_pairs log σ(wᵀ(x_l − x_k))
(eq. 8); dividing by λ gives F with C / Q = 1 / λ, i.e. **λ = Q / C**.

The loss ψ.  The paper's gradient (eqs. 13–17) replaces σ(−t), the derivative of
−log σ(t), by ½ erfc(κt) with κ = √3 / (π√2) (eq. 11 with its misprint corrected:
the normal CDF with the logistic's variance; see shared/papers.md).  RankNCG
minimises the objective whose gradient that is, exactly:

    ψ(t) = ∫_t^∞ ½ erfc(κu) du = ierfc(κt) / (2κ),   ierfc(x) = e^{−x²}/√π − x erfc(x),

a smooth convex loss within 0.031 of −log σ(t) everywhere (both → −t as t → −∞ and
→ 0 as t → ∞; ψ(0) = 0.724, log 2 = 0.693).  So ``erfc="direct"`` computes the exact
gradient of F, and ``erfc="fast"`` one within a certified bound, and the line search
below can certify descent of F itself.

Gradient.  With s = Xw and z = κs, for document i of query q,

    ∂F/∂s_i = γ_i = (c_q / 2) (2 n_i^> − Σ_{k ∈ q, level_k ≠ level_i} erfc(z_i − z_k)),

n_i^> the number of documents of q with a higher label, and ∇F = w + Xᵀγ.  The sum
over the other levels is the erfc sum over the whole query minus that over i's own
level: two fast transforms (rankfast.losses.erfc, accuracy ``erfc_eps``) cover every level,
O(p m) per query of m documents whatever the number S of levels (the paper's
Δ2/Δ3 cost O(S m)), plus O(nnz(X)) for Xᵀγ.  Each transform errs by at most ε times
its number of sources, so |γ̂_i − γ_i| ≤ δ_i = (c_q/2) (ε (m_q + m_level) + rounding).
``direct`` sums erfc term by term: O(m²) per query, exact to rounding.

Optimiser: Polak–Ribière+ nonlinear CG from w = 0, preconditioned by the diagonal of
∇²F(0) = I + ψ''(0) Σ_q c_q Σ_pairs (x_l − x_k)(x_l − x_k)ᵀ (ψ'' is largest at 0, so
this bounds ∇²F everywhere), or, when CG is still running after ``STRENGTHEN_AFTER``
iterations and d² ≤ nnz(X), by ∇²F(0) itself (its Cholesky factor; one pass over X to
form, O(d²) to apply; rankfast.optimize.precondition).  The diagonal corrects the features'
scales, the full matrix their correlations too: on MSLR-WEB's raw features, ~450
iterations become ~45, and the default stop lands 1e-6 from the optimum, not 1e-3.
The line search never evaluates F.  Along a direction d, φ(t) = F(w + td) is convex
with curvature between ‖d‖² and Λ = ‖d‖² + ψ''(0) · 2 Σ_i c_q n_i^≠ (u_i − ū_q)²
(u = Xd, ū_q its mean over query q, n_i^≠ the partners of i); each trial t costs one
score-space gradient and gives φ'(t) within ±e, e = Σ_i |u_i| δ_i.  Convexity turns those intervals into a
certified upper bound U(t) ≥ φ(t) − φ(0) (φ(t) ≤ φ(t') + (t − t') φ'(t) for any t');
and t_min = −(φ'(0) + e) / Λ always has U(t_min) ≤ −(φ'(0) + e)² / (2Λ) < 0.  A root
search on φ' (secant extrapolation, then Illinois regula falsi in the bracket) accepts
the first trial with U(t) < 0 and |φ'(t)| ≤ 0.1 |φ'(0)| (strong-Wolfe-like), else
the trial with the smallest U, so every step provably decreases F (fast or direct).
``result_.decrease`` is the sum of the certified decreases: F(0) − F(w) is at least that.

Stopping rule (``tol``, rank_learn's ``-e``; the paper's CG tolerance is 1e-3):
‖∇F(w)‖_P ≤ tol · ‖∇F(0)‖_P, in the norm of the preconditioner P (‖v‖_P² = vᵀPv,
P the inverse of the diagonal or of ∇²F(0) above, ∇F(0) measured in the P in use:
½‖∇F‖_P² estimates the gap F(w) − F* as a Newton decrement does, and it does not
change when features are rescaled, where the plain norm is dominated by the largest
feature); ∇F(0) whatever the starting point, so a warm start (a C path) stops where
a cold one would; or ‖∇F(w)‖_P ≤ tol · ‖∇F(0)‖_P + ‖|X|ᵀδ‖_P, the computed gradient
then being within its error bound of the tolerance (a tolerance finer than
the erfc sums resolve: lower ``erfc_eps`` to go further); or when descent along −P∇F
can no longer be certified; or after ``max_iter`` iterations (``-#``).  Cost per
iteration: one X d, one Xᵀγ, and one score-space gradient per trial step (2 to 3 on
average).
"""
from __future__ import annotations

import numpy as np

from .._estimator import check_is_fitted
from ..errors import UsageError
from ..losses.erfc_pairs import ErfcPairObjective
from ..optimize.ncg import nonlinear_cg
from ._base import PathRanker, Problem
from ._linear import c_grid, linear_model

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import Log


class RankNCG(PathRanker):
    """Pairwise ranking with an erfc-smoothed logistic loss, trained by nonlinear CG.

    See the module docstring for objective, gradient, line search, stopping rule,
    complexity and source.

    Parameters
    ----------
    C : float or list of float
        svm_rank's -c: the loss is multiplied by C / (number of queries); the
        paper's λ is Q / C.  A list picks its best value by cross-validation
        (rankfast.model_selection, warm-started along the C path of each fold).
    loss : {1, 2}
        svm_rank's -l: 1 counts every pair, 2 averages each query's pairs.
    tol : float
        svm_rank's -e: stop when ‖∇F‖ ≤ tol ‖∇F(0)‖ (the paper's CG tolerance, 1e-3).
    max_iter : int
        svm_rank's -#: cap on CG iterations.
    erfc_eps : float in (0, 1)
        Accuracy of the fast erfc sums (rank_learn's --erfc-eps; paper: 1e-6).
    erfc : {"fast", "direct"}
        Fast erfc transform, O(p m) per query, or exact term-by-term sums, O(m²).
    n_jobs : int or None
        Threads (rank_learn's -j): None or 0 uses every core this process may
        run on, -k all but k - 1, 1 none besides the caller.  The model is the
        same bits for any value.
    cv, cv_metric, cv_rule, cv_convention, random_state
        With a list of C: folds, selection metric, rule, NDCG convention and
        the seed of the folds, as for rankfast.learners.prsvm.RankSVM.
    normalize : {"none", "query", "zscore", "log"}
        rank_learn's --normalize (rankfast.data.normalize): features normalised
        before training; zscore is folded into the weights, query and log are
        applied again by predict (query: pass ``qid``) and by rank_classify.

    Attributes
    ----------
    feature_ids_ : ndarray of int64
        1-based indices of the features seen in training.
    weights_ : ndarray of float64
        Their weights.
    result_ : NCGResult
    C_ : float
        The C of the model.
    cv_result_ : rankfast.model_selection.CVResult or None
        With a list of C: the cross-validation table.

    Examples
    --------
    >>> from rankfast import RankNCG
    >>> X = [[3.0, 0.2], [2.0, 0.9], [1.0, 0.1], [1.0, 0.5], [2.5, 0.4]]
    >>> y = [2, 1, 0, 0, 1]                     # relevance: higher is better
    >>> qid = [7, 7, 7, 8, 8]                   # or group=[3, 2]
    >>> scores = RankNCG(C=1.0).fit(X, y, qid).predict(X)
    >>> [int(i) for i in scores[:3].argsort()[::-1]], [int(i) for i in scores[3:].argsort()[::-1]]
    ([0, 1, 2], [1, 0])
    """

    name = "rankncg"
    sparse_float32 = True          # X enters the numerics only through DataMatrix
    document_weights = True        # sample_weight may weigh documents (clicks)
    objective_type = ErfcPairObjective

    def __init__(self, C: Any = 0.01, loss: int = 1, tol: float = 1e-3, max_iter: int = 1000,
                 erfc_eps: float = 1e-6, erfc: str = "fast", n_jobs: int | None = None,
                 cv: Any = None, cv_metric: str = "ndcg@10", cv_rule: str = "best",
                 cv_convention: str = "letor", random_state: int = 0, normalize: str = "none") -> None:
        self.C, self.loss, self.tol, self.max_iter = C, loss, tol, max_iter
        self.normalize = normalize
        self.erfc_eps, self.erfc = erfc_eps, erfc
        self.n_jobs = n_jobs
        self.cv, self.cv_metric, self.cv_rule = cv, cv_metric, cv_rule
        self.cv_convention, self.random_state = cv_convention, random_state

    def check_parameters(self) -> None:
        """UsageError naming a parameter out of range (fit calls it first)."""
        if self.erfc not in ("fast", "direct"):
            raise UsageError(f"'erfc' must be 'fast' or 'direct', not {self.erfc!r}")
        eps = self.erfc_eps
        if isinstance(eps, bool) or not (isinstance(eps, (int, float, np.number)) and 0 < eps < 1):
            raise UsageError(f"'erfc_eps' must lie in (0, 1), not {self.erfc_eps!r}")
        if self.loss not in (1, 2):
            raise UsageError(f"'loss' must be 1 or 2, not {self.loss!r}")
        c_grid(self.C)                               # a positive number or a list of them

    def _objective(self, problem: Problem, C: float) -> ErfcPairObjective:
        """The erfc pair objective of one C on grouped rows (all of them, or a Dask shard's)."""
        return ErfcPairObjective(problem.X, problem.y, problem.starts,
                                 problem.query_weights(C, self.loss), self.erfc_eps,
                                 self.erfc == "fast", problem.n_threads,
                                 doc_weight=problem.doc_weight)

    def _minimize(self, objective: Any, w0: Any, log: Log = None) -> tuple[Any, Any]:
        """Nonlinear CG (rankfast.optimize.ncg) on objective from w0."""
        result = nonlinear_cg(objective, w0, tol=self.tol, max_iter=self.max_iter, log=log)
        if log is not None:
            log(result.summary(), 1)
        return result.w, result

    def to_model(self, n_features: int | None = None, n_documents: int | None = None) -> Any:
        """The trained LinearModel, with rankfast's metadata."""
        check_is_fitted(self)
        grid = c_grid(self.C)
        options = {"C": self.C_, "l": self.loss, "e": self.tol, "erfc": self.erfc, "grid": grid}
        if self.erfc == "fast":
            options["erfc_eps"] = self.erfc_eps
        return linear_model(self, n_features, n_documents, options)
