"""PRSVM: primal RankSVM trained by truncated Newton (Chapelle & Keerthi 2010).

Objective, with svm_rank's meaning of ``-c`` and ``-l``::

    minimise  ½‖w‖² + Σ_q c_q Σ_{(i,j) ∈ P_q} max(0, 1 − wᵀ(x_i − x_j))²

P_q holds the pairs of documents of query q with label_i > label_j (labels
may be any real numbers; equal labels make no pair).  c_q = C / Q with Q the
number of queries in the training set (svm_rank divides C by it), and with
``loss=2`` (``-l 2``) c_q = C / (Q |P_q|): each query's pairs are averaged,
as svm_rank's fraction-of-swapped-pairs loss does.  svm_rank minimises the
plain hinge; PRSVM its square, so models are close but not equal.

Each gradient and Hessian-vector product costs O(nnz(X) + n log L) with L
the number of distinct labels: scores are sorted once per gradient, and one
sweep per query with Fenwick trees over label ranks gives every document's
number of active partners and the sums of their scores (PRSVM+, Sect. 4 of
the paper, with the balanced-tree counting of Lee & Lin 2014).  No pair is
ever formed.  Newton steps are solved by CG (rankfast.optimize.newton); the stopping
rule is the Newton decrement relative to the objective (see there).
"""
from __future__ import annotations

import numpy as np

from .._estimator import check_is_fitted
from .._kernels import _prsvm
from .._kernels.threads import query_chunks
from ..data.sparse import issparse
from ..optimize.newton import minimize
from ..optimize.precondition import FullPreconditioner, PairPreconditioner, hessian_gram
from ._base import PathRanker, Problem
from ._linear import (
    DataMatrix,
    linear_model,
    pair_square_sums,
    pair_weight_bound,
)

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any, Callable

    from .._typing import Int64Vector, Log, Matrix, Vector


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
        self._hessian: FullPreconditioner | None = None   # "hessian": the last one formed
        self._form_hessian = False                          # "hessian": form it at the next w
        self._scores: np.ndarray | None = None  # s = Xw at the last value_grad: fixes the Hessian
        self._order: np.ndarray | None = None
        self._step = None         # (w, s, loss, ∂loss/∂s, order) of the line search's last trial

    def _score_space(self, scores):
        """(loss, its gradient in score space, per-query order by score) at scores."""
        order = np.empty(len(scores), dtype=np.int64)
        _prsvm.sort_within_queries(scores, self.starts, order, self.chunks, self.n_threads)
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
        if self._form_hessian:
            self._form_hessian = False
            self._hessian = FullPreconditioner(hessian_gram(self.X.X, self._score_hessian), 1.0)
        return 0.5 * (w @ w) + loss, w + self.X.rmatvec(grad_s)

    def precondition(self, r: Vector) -> np.ndarray:
        return self.preconditioner(r) if self._hessian is None else self._hessian(r)

    def strengthen(self) -> bool | str:
        """Precondition with I + 2 XᵀLX itself from now on, if cheap (rankfast.optimize.precondition);
        with ``preconditioner="hessian"``, with the Hessian at the next w (each time asked)."""
        if self.exact_hessian:
            self._form_hessian = True
            return "preconditioning with the Hessian at the next point"
        return self.preconditioner.strengthen()

    def _score_hessian(self, D, out):
        """out = A D, A the loss's Hessian in score space at the last value_grad (columns of D)."""
        _prsvm.squared_hinge_hessian_columns(self._scores, self.rank, self.starts, self._order,
                                             self.weight, self.n_levels, D, out, self.n_threads,
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


class RankSVM(PathRanker):
    """Primal RankSVM (PRSVM, squared hinge) trained by truncated Newton.

    See the module docstring for objective, complexity and stopping rule.

    Parameters
    ----------
    C : float or list of float
        svm_rank's -c: the loss is multiplied by C / (number of queries).
        A list picks its best value by cross-validation (rankfast.model_selection:
        the folds of ``cv``, warm-started along the C path of each fold).
    loss : {1, 2}
        svm_rank's -l: 1 counts every pair, 2 averages each query's pairs.
    tol : float
        svm_rank's -e: relative tolerance of the Newton decrement.
    max_iter : int
        svm_rank's -#: cap on Newton iterations (default 100000, svm_rank's; the tolerance,
        not the cap, ends a run: one large ranking that separates took 510).
    n_jobs : int or None
        Threads (rank_learn's -j): None or 0 uses every core this process may
        run on, -k all but k - 1, 1 none besides the caller.  The model is the
        same bits for any value.
    cv, cv_metric, cv_rule, cv_convention, random_state
        With a list of C: folds (None: 5 folds of queries; an int, "loqo" or
        a splitter), selection metric, rule ("best" or "1se"), NDCG
        convention and the seed of the folds; see rankfast.model_selection.
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
    result_ : rankfast.optimize.newton.NewtonResult
    C_ : float
        The C of the model.
    cv_result_ : rankfast.model_selection.CVResult or None
        With a list of C: the cross-validation table (``cv_table_``: its rows).
    coef_ : ndarray, shape (n_features_in_,)
        Every feature's weight, dense.
    n_features_in_ : int
        Width of the training X.
    feature_names_in_ : ndarray of str
        Column names, when X was a DataFrame with string column names.

    Examples
    --------
    >>> from rankfast import RankSVM
    >>> X = [[3.0, 0.2], [2.0, 0.9], [1.0, 0.1], [1.0, 0.5], [2.5, 0.4]]
    >>> y = [2, 1, 0, 0, 1]                     # relevance: higher is better
    >>> qid = [7, 7, 7, 8, 8]                   # or group=[3, 2]
    >>> ranker = RankSVM(C=1.0).fit(X, y, qid)
    >>> scores = ranker.predict(X)
    >>> [int(i) for i in scores[:3].argsort()[::-1]], [int(i) for i in scores[3:].argsort()[::-1]]
    ([0, 1, 2], [1, 0])
    >>> model = ranker.to_model()                   # for rankfast.write_model / rank_classify
    """

    name = "prsvm"
    sparse_float32 = True          # X enters the numerics only through DataMatrix
    document_weights = True        # sample_weight may weigh documents (clicks)
    objective_type = SquaredHingeObjective
    #: The Newton solves' preconditioner (SquaredHingeObjective): "auto" for the features as
    #: given; KernelApproxLearner sets "hessian" on its copy, for a kernel map's dense features.
    solver_preconditioner = "auto"

    def __init__(self, C: Any = 0.01, loss: int = 1, tol: float = 1e-3, max_iter: int = 100000,
                 n_jobs: int | None = None, cv: Any = None, cv_metric: str = "ndcg@10",
                 cv_rule: str = "best", cv_convention: str = "letor", random_state: int = 0,
                 normalize: str = "none") -> None:
        self.C, self.loss, self.tol, self.max_iter = C, loss, tol, max_iter
        self.normalize = normalize
        self.n_jobs = n_jobs
        self.cv, self.cv_metric, self.cv_rule = cv, cv_metric, cv_rule
        self.cv_convention, self.random_state = cv_convention, random_state

    def _objective(self, problem: Problem, C: float) -> SquaredHingeObjective:
        """The squared hinge of one C on grouped rows (all of them, or a Dask shard's)."""
        return SquaredHingeObjective(problem.X, problem.y, problem.starts,
                                     problem.query_weights(C, self.loss), problem.n_threads,
                                     self.solver_preconditioner, doc_weight=problem.doc_weight)

    def _minimize(self, objective: Any, w0: Any, log: Log = None) -> tuple[Any, Any]:
        """Truncated Newton (rankfast.optimize.newton.minimize) on objective from w0."""
        result = minimize(objective, w0, tol=self.tol, max_iter=self.max_iter, log=log)
        if log is not None:
            log(f"Newton: {result.message} after {result.iterations} iterations "
                f"({result.cg_iterations} CG steps), objective {result.f:.8g}", 1)
        return result.w, result

    def to_model(self, n_features: int | None = None, n_documents: int | None = None) -> Any:
        """The trained LinearModel, with rankfast's metadata."""
        check_is_fitted(self)
        grid = list(self.C) if np.ndim(self.C) > 0 else None
        return linear_model(self, n_features, n_documents,
                            {"C": self.C_, "l": self.loss, "e": self.tol, "grid": grid})
