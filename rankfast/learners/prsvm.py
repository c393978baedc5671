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
from ..losses.squared_hinge import SquaredHingeObjective
from ..optimize.newton import minimize
from ._base import PathRanker, Problem
from ._linear import linear_model

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import Log


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
