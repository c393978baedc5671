"""RankRLS and greedy RankRLS: pairwise regularised least squares over the pairs of each query.

Objective, with svm_rank's meaning of ``-c`` and ``-l``::

    minimise  ½‖w‖² + (C / Q) Σ_q β_q Σ_{i<j ∈ q} (y_i − y_j − wᵀ(x_i − x_j))²

over every unordered pair of documents of the same query, ties included (the
efficient form needs them; a tied pair asks for equal scores).  Q counts the
queries of the training set, as svm_rank divides C by it.  β_q = 1 with
``loss=1`` (``-l 1``: every pair counts once), β_q = 1 / (m_q (m_q − 1) / 2)
with ``loss=2`` (``-l 2``: each query's pairs are averaged, as svm_rank's
fraction of swapped pairs does; a one-document query has no pair).

With r = y − Xw the inner sum is rᵀ L_q r, L_q = m_q I − 11ᵀ, the Laplacian of
query q's complete pair graph (Pahikkala et al. 2009, eq. 25), so the
objective is (C/Q) [rᵀLr + λ‖w‖²] with L = blockdiag(β_q (m_q I − 11ᵀ)) and

    λ = Q / (2C),      w = (XᵀLX + λI)⁻¹ XᵀLy          (eq. 28).

L_q = α_q P_q with P_q = I − 11ᵀ/m_q the centring matrix and α_q = β_q m_q
(m_q for -l 1, 2/(m_q − 1) for -l 2), so X̂ = blockdiag(√α_q P_q) X and
ŷ = blockdiag(√α_q P_q) y turn RankRLS into ordinary ridge regression of ŷ
on X̂ (Pahikkala et al. 2010, eq. 5): L is applied by per-query centring and
scaling, no pair is ever formed.  (The greedy paper's own weighting, eq. 3,
is α_q = 1: each query's pair sum divided by m_q; RLScore's QueryRankRLS.)

Solvers
-------
dense   X̂ as a dense n × d array, X̂ᵀX̂ by BLAS (row blocks on threads), a Cholesky solve:
        O(nd² + d³) time, O(nd + d²) memory.  Used when d ≤ 2048 and
        n·d ≤ 2²⁸ (``solver="auto"``).  A feature constant within every
        query (X̂_j = 0) is left out of the solve: its weight is exactly 0.
cg      conjugate gradient (rankfast.optimize.newton.conjugate_gradient, Jacobi
        preconditioner) on the same normal equations, each product
        v ↦ Xᵀ L X v + λv costing O(nnz(X) + n + d); X is never densified.
        Stops when ‖XᵀLy − (XᵀLX + λI)w‖ ≤ tol ‖XᵀLy‖.

Many C at once (a list of C, Sect. 3.2 of the 2009 paper): one
eigendecomposition X̂ᵀX̂ = VΛVᵀ, then every λ costs O(d²) for its weights.
Leave-query-out (LQO) cross-validation, exact (Sect. 3.3; 2010 paper,
Thm 3.1): the model trained without query q (same λ: the objective above
with query q's term removed) leaves on q's documents the residual

    p_q = (I − H_qq)⁻¹ (ŷ_q − X̂_q w),     H_qq = X̂_q (X̂ᵀX̂ + λI)⁻¹ X̂_qᵀ,

and ‖p_q‖² = r_qᵀ L_q r_q is the held-out query's pair loss, with the same
pair weights β_q as training.  Per λ this costs O(Σ_q m_q² d + m_q³) (a
query larger than d uses the d × d form (Λ + λ − Z_qᵀZ_q)⁻¹ instead).  The
table reports, for every C, the mean over queries of that loss and of the
metrics of the held-out scores ŷ_q − p_q (query q's held-out scores,
centred and scaled by √α_q > 0, which changes no ranking).  Each query is a
fold of rankfast.model_selection's table (mean ± sd over queries of the
selection metric, NDCG@10 in the LETOR convention by default, of the other
metrics and of the LQO pair loss), and its rule picks C.  Other folds
(``cv=K`` or a splitter) train along the C path of each fold from one
eigendecomposition of the fold (``fit_path``).

Greedy RankRLS (Pahikkala et al. 2010, Algorithm 1): forward selection of
features, each step adding the feature whose addition gives the least LQO
error (the mean over queries of ‖p_q‖², as above), O(d n) per step and
O(k d n) in all, O(d n) memory (the paper's O(kmn) and O(mn), its m being
our n documents and its n our d features).  See GreedyRankRLS.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from .._estimator import check_is_fitted
from .._kernels import _rankrls
from .._kernels.threads import BLOCK_ROWS, query_chunks
from ..data.sparse import CSR
from ..data.validation import TrainingData, weighted
from ..errors import UsageError
from ..losses.products import DataMatrix, kernel_form
from ..optimize.newton import conjugate_gradient
from ._base import PathRanker, Problem
from ._linear import c_grid, check_loss, linear_model

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any

    from .._typing import DenseMatrix, Int64Vector, Log, Matrix, Vector, VectorLike
    from ..data.normalize import Normalizer

DENSE_MAX_FEATURES = 2048
DENSE_MAX_ENTRIES = 1 << 28


class PairNormalEquations:
    """XᵀLX w = XᵀLy of some rows, λ left out: RankRLS's part of one Dask shard.

    rankfast.dask (its ``protocol``) adds the shards' ``matrix_and_rhs`` (the dense
    solver: X̂ᵀX̂ and X̂ᵀŷ of the centred rows, one d × d matrix per shard, once) or
    their ``rhs_and_diagonal`` and ``product`` (CG: one d-vector per shard a step), and
    RankRLS._minimize adds λ once and solves.  The CG operator is built on first use.
    """

    protocol = "normal_equations"

    def __init__(self, X: Matrix, y: Vector, starts: Vector, alpha: Vector) -> None:
        self.X, self.y, self.starts, self.alpha = X, y, starts, alpha
        self._operator: Any = None

    def matrix_and_rhs(self) -> tuple[Any, Any]:
        """(X̂ᵀX̂, X̂ᵀŷ), X̂ = blockdiag(√α_q P_q) X (centred): XᵀLX and XᵀLy as dense arrays."""
        Xh = centred(self.X, self.starts, self.alpha)
        yh = centred(self.y[:, None], self.starts, self.alpha).ravel()
        return Xh.T @ Xh, Xh.T @ yh

    def rhs_and_diagonal(self) -> tuple[Any, Any]:
        """(XᵀLy, diag(XᵀLX)), the diagonal as the operator's inverse holds it (1/inf = 0)."""
        operator = self.operator()
        with np.errstate(divide="ignore"):
            diagonal = 1.0 / operator.inverse_diag          # 1 / (diag + 0)
        return operator.rhs(self.y), diagonal

    def product(self, v: Vector) -> Any:
        """XᵀLXv."""
        return self.operator().hessvec(v)

    def operator(self) -> Any:
        """v ↦ XᵀLXv (_NormalEquations with λ = 0), built once."""
        if self._operator is None:
            self._operator = _NormalEquations(self.X, self.starts, self.alpha, 0.0)
        return self._operator


class RankRLS(PathRanker):
    """Linear RankRLS, solved in primal form without forming pairs.

    See the module docstring for objective, λ, solvers and complexity.

    Parameters
    ----------
    C : float or sequence of float
        svm_rank's -c: the pair loss is multiplied by C / Q (λ = Q / (2C)).
        A sequence trains every value from one eigendecomposition and keeps
        the one rankfast.model_selection's rule picks, by exact
        leave-query-out cross-validation (``cv=None`` or "loqo"; a single
        ranking: 5 folds of its documents) or the folds of ``cv`` (dense
        solver only).
    loss : {1, 2}
        svm_rank's -l: 1 counts every pair, 2 averages each query's pairs.
    solver : {"auto", "dense", "cg"}
        "auto" picks dense for d ≤ 2048 features and n·d ≤ 2²⁸, else cg.
    tol : float
        cg only: relative residual of the normal equations at which to stop.
    max_iter : int
        cg only: cap on CG iterations.
    cv, cv_metric, cv_rule, cv_convention, random_state
        With a list of C: folds (None: exact leave-query-out), selection
        metric, rule, NDCG convention and the seed of the folds, as for
        rankfast.learners.prsvm.RankSVM.

    Attributes
    ----------
    feature_ids_ : ndarray of int64
        1-based indices of the features seen in training.
    weights_ : ndarray of float64
        Their weights (of the chosen C).
    C_ : float
        The C of the model.
    cv_result_ : rankfast.model_selection.CVResult or None
        With a list of C: the cross-validation table.  With leave-query-out
        it has a column "loss", the LQO pair loss (mean ‖p_q‖² per query).
    cv_table_ : list of dict or None
        With a list of C: cv_result_.rows(), one dict per C, ascending.
    weights_by_C_ : ndarray, shape (n_C, n_features_seen) or None
        With a list of C: the weights of every C, rows as in cv_table_.
    solver_ : str
        The solver used ("dense" or "cg").
    cg_iterations_, residual_ : int, float
        cg only: iterations and final relative residual.

    Examples
    --------
    >>> from rankfast import RankRLS
    >>> X = [[3.0, 0.2], [2.0, 0.9], [1.0, 0.1], [1.0, 0.5], [2.5, 0.4]]
    >>> y = [2, 1, 0, 0, 1]                     # relevance: higher is better
    >>> qid = [7, 7, 7, 8, 8]                   # or group=[3, 2]
    >>> scores = RankRLS(C=1.0).fit(X, y, qid).predict(X)
    >>> [int(i) for i in scores[:3].argsort()[::-1]], [int(i) for i in scores[3:].argsort()[::-1]]
    ([0, 1, 2], [1, 0])
    """

    name = "rankrls"
    sparse_float32 = True          # X is centred (in float64) or multiplied by DataMatrix
    objective_type = PairNormalEquations

    def __init__(self, C: Any = 0.01, loss: int = 1, solver: str = "auto", tol: float = 1e-6,
                 max_iter: int = 1000, n_jobs: int | None = None, cv: Any = None,
                 cv_metric: str = "ndcg@10", cv_rule: str = "best", cv_convention: str = "letor",
                 random_state: int = 0, normalize: str = "none") -> None:
        self.C, self.loss, self.solver = C, loss, solver
        self.normalize = normalize
        self.tol, self.max_iter = tol, max_iter
        self.n_jobs = n_jobs
        self.cv, self.cv_metric, self.cv_rule = cv, cv_metric, cv_rule
        self.cv_convention, self.random_state = cv_convention, random_state

    weights_by_C_: Any           # set by fit: None, or one row of weights per C of a list

    def check_parameters(self) -> None:
        """UsageError naming a parameter out of range (fit calls it first)."""
        c_grid(self.C)
        check_loss(self.loss)
        if self.solver not in ("auto", "dense", "cg"):
            raise UsageError(f"solver must be auto, dense or cg (got {self.solver!r})")

    def _chosen_solver(self, problem: Problem) -> str:
        """``solver``, or for "auto" dense when X̂ fits as a dense array (DENSE_MAX_*), else cg."""
        n, d = problem.X.shape
        if self.solver != "auto":
            return self.solver
        return "dense" if d <= DENSE_MAX_FEATURES and n * d <= DENSE_MAX_ENTRIES else "cg"

    def _announce(self, problem: Problem, solver: str, grid: list[float] | None, log: Log) -> None:
        if log is not None:
            (n, d), Q = problem.X.shape, len(problem.starts) - 1
            log(f"RankRLS: {d} features, {n} documents, {Q} queries, {solver} solver, "
                + (f"λ = Q/(2C) = {Q / (2.0 * float(self.C)):.6g}" if grid is None else
                   f"{len(grid)} values of C"), 1)

    def _centred(self, problem: Problem) -> tuple[DenseMatrix, Vector, DenseMatrix, np.ndarray]:
        """(X̂, ŷ, X̂ᵀX̂, the columns of X̂ that are not all zero) for the dense solver."""
        alpha = weighted(query_scale(problem.starts, self.loss), problem.weight)
        Xh = centred(problem.X, problem.starts, alpha, n_threads=problem.n_threads)
        yh = centred(problem.y[:, None], problem.starts, alpha).ravel()
        A, nonzero = gram(Xh, problem.n_threads)
        return Xh, yh, A, np.flatnonzero(nonzero)

    def _select_c(self, data: TrainingData, problem: Problem, grid: list[float], log: Log,
                  sample_weight: VectorLike | None = None) -> None:
        """Every C of the list from one eigendecomposition (weights_by_C_), C_ by exact
        leave-query-out or by the folds of ``cv`` (_fit_grid), weighted by problem.weight
        (per query: RankRLS takes no weights on documents)."""
        n, d = problem.X.shape
        Q = len(problem.starts) - 1
        _check_regularisation(Q, grid)
        solver = self._chosen_solver(problem)
        if solver != "dense":
            raise UsageError(f"several C values need the dense solver (an eigendecomposition "
                             f"of the {d} × {d} matrix XᵀLX); give one C for {d} features "
                             f"and {n} documents")
        self.solver_, self.cg_iterations_, self.residual_ = solver, 0, 0.0
        self._announce(problem, solver, grid, log)
        Xh, yh, A, varies = self._centred(problem)
        if len(varies) < d:
            Xh, A = Xh[:, varies], A[np.ix_(varies, varies)]
        self._fit_grid(Xh, A, yh, problem.y, problem.starts, grid, data, log, problem.n_threads,
                       problem.weight)
        self.weights_by_C_ = _scatter(self.weights_by_C_, varies, d)

    def _solve(self, problem: Problem, C: float, w0: Vector | None = None,
               log: Log = None) -> tuple[Vector, Any]:
        """The closed form for one C (dense Cholesky, or CG), or C_'s row of weights_by_C_."""
        grid = c_grid(self.C)
        if grid is not None:                      # solved with the whole list by _select_c
            return self.weights_by_C_[grid.index(C)].copy(), None
        Q = len(problem.starts) - 1
        _check_regularisation(Q, [self.C])
        solver = self._chosen_solver(problem)
        self.solver_, self.cv_table_, self.weights_by_C_ = solver, None, None
        self.cg_iterations_, self.residual_ = 0, 0.0
        self._announce(problem, solver, None, log)
        self.C_ = float(self.C)
        lam = Q / (2.0 * self.C_)
        if solver == "cg":
            alpha = weighted(query_scale(problem.starts, self.loss), problem.weight)
            return self._fit_cg(problem.X, problem.y, problem.starts, alpha, lam, log,
                                problem.n_threads), None
        Xh, yh, A, varies = self._centred(problem)
        b = DataMatrix(Xh, problem.n_threads).rmatvec(yh)
        return _scatter(_ridge(A[np.ix_(varies, varies)], b[varies], lam), varies,
                        problem.X.shape[1]), None

    def _objective(self, problem: Problem, C: float) -> PairNormalEquations:
        """The normal equations of grouped rows without λ (a Dask shard's: rankfast.dask adds
        them over the shards, and _minimize solves the sum); C enters only through λ."""
        return PairNormalEquations(problem.X, problem.y, problem.starts,
                                   weighted(query_scale(problem.starts, self.loss), problem.weight))

    def _minimize(self, objective: Any, w0: Any, log: Log = None) -> tuple[Any, Any]:
        """(XᵀLX + λI)⁻¹ XᵀLy for the shards' summed normal equations (rankfast.dask), λ = Q/(2C):
        by Cholesky of the summed X̂ᵀX̂ ("dense"), or by CG on the summed products ("cg";
        "auto": dense when the largest shard fits as a dense array, DENSE_MAX_*).  The closed
        form starts nowhere: w0 is not used.  One process solves in _solve instead."""
        d, Q = objective.n_features, objective.n_queries
        self.C_ = float(self.C)
        _check_regularisation(Q, [self.C_])
        lam = Q / (2.0 * self.C_)
        solver = self.solver
        if solver == "auto":
            solver = ("dense" if d <= DENSE_MAX_FEATURES
                      and objective.largest_part * d <= DENSE_MAX_ENTRIES else "cg")
        self.solver_, self.cv_table_, self.weights_by_C_ = solver, None, None
        self.cg_iterations_, self.residual_ = 0, 0.0
        if log is not None:
            log(f"RankRLS: {d} features, {objective.n_documents} documents, {Q} queries on "
                f"{objective.n_parts} shards, {solver} solver, λ = Q/(2C) = {lam:.6g}", 1)
        if solver == "dense":
            A, b = objective.matrix_and_rhs()
            A[np.diag_indices_from(A)] += lam
            return scipy.linalg.solve(A, b, assume_a="pos"), None
        b, diagonal = objective.rhs_and_diagonal()
        inverse_diagonal = 1.0 / (np.maximum(diagonal, 0.0) + lam)

        def hessvec(v):
            return objective.product(v) + lam * v

        w, iterations, _ = conjugate_gradient(hessvec, b, self.tol, self.max_iter,
                                              lambda r: inverse_diagonal * r)
        norm_b = np.linalg.norm(b)
        self.cg_iterations_ = iterations
        self.residual_ = float(np.linalg.norm(b - hessvec(w)) / norm_b) if norm_b > 0 else 0.0
        if log is not None:
            log(f"CG: {iterations} iterations, relative residual {self.residual_:.3g}", 1)
        return w, None

    def _keep_solution(self, normalizer: Normalizer, problem: Problem, w: Vector) -> None:
        super()._keep_solution(normalizer, problem, w)
        if self.weights_by_C_ is not None:
            self.weights_by_C_ = normalizer.original_weights(self.weights_by_C_, problem.used)

    def _fit_cg(self, X, y, starts, alpha, lam, log, n_threads):
        op = _NormalEquations(X, starts, alpha, lam, n_threads)
        b = op.rhs(y)
        w, iterations, _ = conjugate_gradient(op.hessvec, b, self.tol, self.max_iter, op.precondition)
        norm_b = np.linalg.norm(b)
        self.cg_iterations_ = iterations
        self.residual_ = float(np.linalg.norm(b - op.hessvec(w)) / norm_b) if norm_b > 0 else 0.0
        if log is not None:
            log(f"CG: {iterations} iterations, relative residual {self.residual_:.3g}"
                + ("" if self.residual_ <= self.tol else
                   f" (iteration limit {self.max_iter} reached before {self.tol:g})"
                   if iterations >= self.max_iter else
                   f" (CG's running residual reached {self.tol:g}; computed again from w, "
                   f"rounding leaves this)"), 1)
        return w

    def _fit_grid(self, Xh, A, yh, y, starts, grid, data, log, n_threads, weight=None):
        """weights_by_C_ (on the varying columns), cv_result_ and C_ for a C list (A = X̂ᵀX̂).

        ``data``: fit's TrainingData (normalised features, rows as given), for folds other
        than leave-query-out.

        ``weight``: the queries' sample weights (query_sample_weights), already in X̂ and ŷ.
        """
        from .. import model_selection
        path = EigenPath(Xh, yh, starts, A, n_threads)
        Q = len(starts) - 1
        self.weights_by_C_ = np.array([path.weights(Q / (2.0 * C)) for C in grid]).reshape(
            len(grid), -1)
        cv = self.cv
        if cv is None:
            cv = "loqo" if Q >= 2 else model_selection.DEFAULT_FOLDS
        if isinstance(cv, str) and cv == "loqo":
            if Q < 2:
                model_selection.make_folds(data.qid, cv)     # raises, saying why
            result = self._lqo_result(path, yh, y, starts, grid, log, weight)
        else:
            result = model_selection.select_c(self, data, None, None, grid, log, cv, weight)
        self.cv_result_, self.cv_table_ = result, result.rows()
        self.C_ = result.chosen_params["C"]

    def _lqo_result(self, path, yh, y, starts, grid, log, weight=None):
        """The exact leave-query-out CVResult: every query a fold, its pair loss a column.

        With sample weights w'_q (in X̂ and ŷ: ‖p_q‖² = w'_q r_qᵀL_q r_q) the loss
        column holds each query's own pair loss r_qᵀL_q r_q, and the folds are
        weighted by w'_q (CVResult.weights): each query counts w'_q times.
        """
        from .. import model_selection
        settings = model_selection.settings(self)
        metric = model_selection.Metric.parse(settings["metric"], settings["convention"])
        Q = len(starts) - 1
        qid = np.repeat(np.arange(Q), np.diff(starts))
        held_out, losses = [], []
        for C in grid:
            p = path.lqo_residuals(Q / (2.0 * C))
            held_out.append(yh - p)
            loss = np.bincount(qid, weights=p * p, minlength=Q)
            if weight is not None:
                loss = np.divide(loss, weight, out=np.zeros(Q), where=weight > 0)
            losses.append(loss)
        rows = [{"C": C} for C in grid]
        return model_selection.held_out_result(
            rows, held_out, y, qid, metric, settings["rule"], f"exact leave-query-out, {Q} queries",
            (model_selection.Column("loss", "LQO pair loss"), losses), log, weight)

    def _path(self, problem: Problem, Cs: Sequence[float]) -> Iterator[Vector]:
        """The weights for each C of Cs from one eigendecomposition (the dense solver)."""
        d, Q = problem.X.shape[1], len(problem.starts) - 1
        Xh, yh, A, varies = self._centred(problem)
        path = EigenPath(Xh[:, varies], yh, problem.starts, A[np.ix_(varies, varies)],
                         problem.n_threads)
        for C in Cs:
            yield _scatter(path.weights(Q / (2.0 * C)), varies, d)

    def to_model(self, n_features: int | None = None, n_documents: int | None = None) -> Any:
        """The trained LinearModel, with rankfast's metadata (C grid included)."""
        check_is_fitted(self)
        grid = c_grid(self.C)
        options: dict[str, Any] = {"C": self.C_, "l": self.loss}
        if grid is not None:
            options["grid"] = list(grid)
        return linear_model(self, n_features, n_documents, options)


def query_scale(starts: Int64Vector, loss: int) -> Vector:
    """α_q of L_q = α_q (I − 11ᵀ/m_q): m_q (loss 1), 2/(m_q − 1) (loss 2; 0 when m_q = 1)."""
    m = np.diff(starts).astype(np.float64)
    if loss == 1:
        return m
    return np.divide(2.0, m - 1.0, out=np.zeros_like(m), where=m > 1)


def centred(X: Matrix, starts: Int64Vector, alpha: Vector, n_threads: int = 1) -> DenseMatrix:
    """X̂ = blockdiag(√α_q (I − 11ᵀ/m_q)) X as a new dense C-contiguous n × d array.

    X, with contiguous queries, is taken as rankfast.losses.products.kernel_form
    takes it (a TrainingData's X as it is).  Sparse X
    is densified query by query straight into the result and centred there
    (rankfast._kernels._rankrls.centre_csr), no other copy; both forms give the same
    bits, on ``n_threads`` threads (chunks of whole queries).
    """
    n, d = X.shape
    out = np.empty((n, d))
    scale = np.sqrt(alpha)
    X = kernel_form(X)
    if not isinstance(X, CSR):
        _rankrls.centre(X, starts, scale, out, query_chunks(starts), n_threads)
        return out
    _rankrls.centre_csr(X.kernel_data(), X.indices, X.indptr, starts, scale, out,
                        query_chunks(starts), n_threads)
    return out


GRAM_BLOCK_ROWS = 8192          # rows per block of X̂ᵀX̂'s partial sums (at least)
GRAM_PANEL = 256                # columns per panel of its tiles
GRAM_PARTIAL_MAX = 1 << 23      # doubles of partial sums (64 MB): fewer, longer blocks beyond


def gram(Xh: DenseMatrix, n_threads: int = 1) -> tuple[DenseMatrix, np.ndarray]:
    """(X̂ᵀX̂, mask of the columns of X̂ that are not all zero), the same bits on any threads.

    rankfast._kernels._rankrls.gram: blocks of rows × tiles of the d × d result, each
    its own partial sum, added in block order.  The blocks depend on n and d
    only: at least GRAM_BLOCK_ROWS rows, at most GRAM_PARTIAL_MAX doubles of
    partial sums in all.
    """
    n, d = Xh.shape
    blocks = max(min(-(-n // GRAM_BLOCK_ROWS), GRAM_PARTIAL_MAX // max(d * d, 1)), 1)
    out = np.empty((d, d))
    nonzero = np.empty(d, dtype=np.uint8)
    _rankrls.gram(Xh, out, nonzero, max(-(-n // blocks), 1), GRAM_PANEL, n_threads)
    return out, nonzero.astype(bool)


def _scatter(w, columns, d):
    """Weights on ``columns`` of d (last axis), zeros elsewhere."""
    out = np.zeros(w.shape[:-1] + (d,))
    out[..., columns] = w
    return out


def _ridge(A, b, lam):
    """argmin ‖ŷ − X̂w‖² + λ‖w‖² by Cholesky from A = X̂ᵀX̂ and b = X̂ᵀŷ: (A + λI)⁻¹ b.

    Solved as S (S(A + λI)S)⁻¹ S b with S = diag(A + λI)^(-1/2): the same w, but a
    matrix of unit diagonal, whose condition does not depend on the features'
    scales (raw MSLR features of 1e-3..2.3e8 left A + λI with rcond 1e-21).
    """
    A = A.copy()
    A[np.diag_indices_from(A)] += lam
    scale = 1.0 / np.sqrt(np.diag(A))
    return scale * scipy.linalg.solve(A * np.outer(scale, scale), scale * b, assume_a="pos")


class EigenPath:
    """Ridge solutions and exact LQO residuals of (X̂, ŷ) for any λ > 0, from X̂ᵀX̂ = VΛVᵀ.

    Setup O(nd² + d³); per λ: weights O(d²), LQO residuals
    O(Σ_q min(m_q² d + m_q³, m_q d² + d³)): a query of at most d documents
    by its hat-matrix block (rankfast._kernels._rankrls.lqo_blocks), a larger one by
    the d × d system of the model trained without it.  ``gram_matrix`` is X̂ᵀX̂
    when the caller has it; X̂ᵀX̂, X̂V and the small queries' blocks run on
    ``n_threads`` threads, with the same bits for any number.
    """

    def __init__(self, Xh: DenseMatrix, yh: Vector, starts: Int64Vector,
                 gram_matrix: DenseMatrix | None = None, n_threads: int = 1) -> None:
        n, d = Xh.shape
        if gram_matrix is None:
            gram_matrix = gram(Xh, n_threads)[0]
        lam, self.V = np.linalg.eigh(gram_matrix)
        self.lam = np.maximum(lam, 0.0)
        self.Z = np.empty((n, d))                                  # X̂V, by row blocks
        _rankrls.times(np.ascontiguousarray(Xh), np.ascontiguousarray(self.V), self.Z,
                       BLOCK_ROWS, n_threads)
        self.products = DataMatrix(self.Z, n_threads)
        self.c = self.products.rmatvec(yh)                         # Zᵀŷ
        self.yh, self.starts, self.n_threads = yh, starts, n_threads
        sizes = np.diff(starts)
        # A one-document query has X̂_q = 0 and ŷ_q = 0, so p_q = 0: it is in neither list.
        self.small = np.flatnonzero((sizes > 1) & (sizes <= d)).astype(np.int64)
        self.large = np.flatnonzero(sizes > d)
        largest = int(sizes[self.small].max()) if len(self.small) else 0
        self.work = np.empty(n_threads * largest * (d + largest))  # a share per thread
        self.gram: dict = {}                          # Z_qᵀZ_q and Z_qᵀŷ_q of queries solved by d × d

    def weights(self, lam: float) -> np.ndarray:
        """(X̂ᵀX̂ + λI)⁻¹ X̂ᵀŷ."""
        return self.V @ (self.c / (self.lam + lam))

    def lqo_residuals(self, lam: float) -> np.ndarray:
        """p with p_q = ŷ_q − X̂_q w_{−q}: residuals of the models trained without each query."""
        s = 1.0 / (self.lam + lam)
        e = self.yh - self.products.matvec(s * self.c)             # ŷ − X̂w
        p = np.zeros(len(e))
        _rankrls.lqo_blocks(self.Z, np.sqrt(s), e, self.starts, self.small, p, self.work,
                            self.n_threads)
        failed = self.small[np.isnan(p[self.starts[self.small]])]   # not SPD in rounding
        for q in np.concatenate((self.large, failed)).astype(np.int64):
            lo, hi = self.starts[q], self.starts[q + 1]
            if q not in self.gram:
                Zq = self.Z[lo:hi]
                self.gram[q] = (Zq.T @ Zq, Zq.T @ self.yh[lo:hi])
            ZZ, Zy = self.gram[q]
            A = np.diag(self.lam + lam) - ZZ                     # Vᵀ(X̂_{−q}ᵀX̂_{−q} + λI)V
            p[lo:hi] = self.yh[lo:hi] - self.Z[lo:hi] @ scipy.linalg.solve(A, self.c - Zy,
                                                                           assume_a="pos")
        return p


class _NormalEquations:
    """v ↦ XᵀLXv + λv with L = blockdiag(α_q (I − 11ᵀ/m_q)) applied by centring, X kept as given."""

    def __init__(self, X, starts, alpha, lam, n_threads=1):
        self.products = DataMatrix(X, n_threads)
        self.starts, self.lam, self.alpha = starts, lam, alpha
        self.chunks, self.n_threads = query_chunks(starts), n_threads
        self.sizes = np.diff(starts)
        self.alpha_rows = np.repeat(alpha, self.sizes)
        n, d = X.shape
        # Jacobi preconditioner: diag(XᵀLX)_j = Σ_i α_i x_ij² − Σ_q α_q m_q μ_qj².
        if n == 0:
            diag = np.zeros(d)
        elif not self.products.dense:             # in float64 whatever X's values
            diag = (self.products.rmatvec(self.alpha_rows, entries="square")
                    - self.products.X.group_square_sums(np.arange(n), starts, alpha / self.sizes))
        else:
            sums = np.add.reduceat(X, starts[:-1], axis=0)
            diag = (np.einsum("ij,ij,i->j", X, X, self.alpha_rows)
                    - (sums * sums).T @ (alpha / self.sizes))
        self.inverse_diag = 1.0 / (np.maximum(diag, 0.0) + lam)

    def laplacian(self, u):
        """L u: per-query centring, then scaling by α_q (rankfast._kernels._rankrls.centre)."""
        out = np.empty((len(u), 1))
        _rankrls.centre(np.ascontiguousarray(u, dtype=np.float64).reshape(-1, 1), self.starts,
                        self.alpha, out, self.chunks, self.n_threads)
        return out.ravel()

    def rhs(self, y):
        return self.products.rmatvec(self.laplacian(y))

    def hessvec(self, v):
        return self.products.rmatvec(self.laplacian(self.products.matvec(v))) + self.lam * v

    def precondition(self, r):
        return self.inverse_diag * r


def _check_regularisation(Q, Cs):
    """ValueError when λ = Q / (2C) is not a finite number (a C below about 1e-308)."""
    for C in Cs:
        if not np.isfinite(Q / (2.0 * float(C))):
            raise ValueError(f"C = {float(C):g} is too small: λ = Q / (2C) overflows")
