"""Greedy RankRLS (Pahikkala et al. 2010, Algorithm 1): RankRLS on features chosen one at a time.

Forward selection of features, each step adding the feature whose addition
gives the least leave-query-out error (the mean over queries of the held-out
pair loss ‖p_q‖², see rankfast.learners.rankrls for the objective and the LQO
residuals), O(d n) per step and O(k d n) in all, O(d n) memory (the paper's
O(kmn) and O(mn), its m being our n documents and its n our d features).
"""
from __future__ import annotations

import resource

import numpy as np

from .._estimator import check_is_fitted
from .._kernels import _rankrls
from .._kernels.threads import blas_single_thread, query_chunks
from ..data.validation import weighted
from ..errors import UsageError
from ..losses.products import DataMatrix
from ._base import LinearRanker, Problem
from ._linear import c_grid, check_loss, linear_model, varying_columns
from .rankrls import _check_regularisation, centred, gram, query_scale

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from .._typing import Log, Vector
    from ..data.normalize import Normalizer


class GreedyRankRLS(LinearRanker):
    """Greedy RankRLS: forward feature selection by exact leave-query-out error.

    Algorithm 1 of Pahikkala et al. (2010).  Each step scores every unselected
    feature i by the LQO error of RankRLS on the selected features plus i (the
    mean over queries of ‖p_q‖², see the module docstring) and adds the best
    (the lowest index on ties).  With G = (X̂_S X̂_Sᵀ + λI)⁻¹ (n × n) the
    caches are a = Gŷ, C = G X̂ (n × d; the paper's misprinted λ⁻¹X̂X̂ᵀ is
    λ⁻¹X̂ at the start), U = blockdiag(G_qq⁻¹) C and p = blockdiag(G_qq⁻¹) a,
    the LQO residuals; two d-vectors g_j = X̂_jᵀC_j and h_j = X̂_jᵀa (the
    weights of the selected features are h_S) are kept up to date in O(d).
    Sherman–Morrison gives for candidate i, c = 1/(1 + g_i), δ = c h_i, and
    per query γ_q = 1/(C_qiᵀU_qi − 1/c) (the paper prints C_{:,i} for C_qi)

        p̃_q = p_q − κ_q U_qi,    κ_q = δ + γ_q (U_qiᵀa_q − δ C_qiᵀU_qi),

    O(m_q) per query, O(n d) per step (rankfast._kernels._rankrls.lqo_errors).  Adding
    feature b: t = c X̂_bᵀC, C ← C − C_b t (the paper prints C_b C_bᵀ),
    U_q ← U_q − U_qb (t + γ_q U_qbᵀC_q) with the new C, O(n d)
    (rankfast._kernels._rankrls.add_feature).  A single ranking (Q = 1) has no query
    to leave out: its rows are the held-out blocks instead, i.e. the
    criterion is the leave-one-out error of the ridge regression of ŷ on X̂
    (each document's deviation from the mean residual is one term of the
    pair loss; the same updates with blocks of one row).  Time O(k d n),
    memory two dense n × d arrays besides X (C and U: every step reads and
    updates both); ``fit`` raises ValueError before allocating them when the
    machine has not that much memory available (check_greedy_memory).

    Parameters
    ----------
    C : float or list of float
        svm_rank's -c, λ = Q / (2C) as for RankRLS.  A list picks its value
        by cross-validation (rankfast.model_selection; ``cv=None``: 5 folds of
        queries, greedy selection rerun on every training fold).
    k : int or "auto"
        Number of features to select; "auto" stops as soon as the best
        candidate does not lower the LQO error.  A feature constant within
        every query is no candidate (it cannot change any score; the paper's
        loop would take it as a no-op when every other feature is worse), so
        at most the number of features that vary within some query.
    loss : {1, 2}
        svm_rank's -l, as for RankRLS.
    cv, cv_metric, cv_rule, cv_convention, random_state
        With a list of C: folds, selection metric, rule, NDCG convention and
        the seed of the folds, as for rankfast.learners.prsvm.RankSVM.

    Attributes
    ----------
    selected_ : ndarray of int64
        1-based feature ids, in selection order.
    lqo_errors_ : ndarray of float64
        LQO error (mean pair loss per held-out query, weighted by sample_weight) after
        each selection.
    lqo_error_start_ : float
        LQO error with no feature (all scores zero).
    weights_path_ : list of ndarray
        Weights of the selected features after each step (step s: s weights,
        in selection order).
    feature_ids_, weights_ : ndarray
        The selected features (increasing ids) and their final weights.
    C_ : float
        The C of the model.
    cv_result_ : rankfast.model_selection.CVResult or None
        With a list of C: the cross-validation table.

    Examples
    --------
    >>> import numpy as np
    >>> from rankfast import GreedyRankRLS
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 5))
    >>> y = 3 * X[:, 2] - X[:, 4] + 0.1 * rng.normal(size=60)    # only features 3 and 5 matter
    >>> ranker = GreedyRankRLS(C=10.0, k=2).fit(X, y, group=[15, 15, 15, 15])
    >>> ranker.selected_                                         # 1-based, in selection order
    array([3, 5])
    """

    name = "greedy"
    sparse_float32 = True          # X is centred into a float64 X̂ first

    def __init__(self, C: Any = 0.01, k: int | str = "auto", loss: int = 1,
                 n_jobs: int | None = None, cv: Any = None, cv_metric: str = "ndcg@10",
                 cv_rule: str = "best", cv_convention: str = "letor", random_state: int = 0,
                 normalize: str = "none") -> None:   # C first, as for every learner
        self.C, self.k, self.loss = C, k, loss
        self.normalize = normalize
        self.n_jobs = n_jobs
        self.cv, self.cv_metric, self.cv_rule = cv, cv_metric, cv_rule
        self.cv_convention, self.random_state = cv_convention, random_state

    @blas_single_thread
    def check_parameters(self) -> None:
        """UsageError naming a parameter out of range (fit calls it first)."""
        c_grid(self.C)
        check_loss(self.loss)
        if not (self.k == "auto" or (isinstance(self.k, (int, np.integer)) and self.k >= 1)):
            raise UsageError(f"k must be a positive integer or 'auto' (got {self.k!r})")

    def _solve(self, problem: Problem, C: float, w0: Vector | None = None,
               log: Log = None) -> tuple[Vector, Any]:
        """Algorithm 1: features added one at a time by least LQO error; the weights of the
        selected features (``selected_``, in the order chosen) at the last step."""
        X, y, starts, used = problem.X, problem.y, problem.starts, problem.used
        weight, n_threads = problem.weight, problem.n_threads
        n, d = X.shape
        check_greedy_memory(n, d)
        Q = len(starts) - 1
        _check_regularisation(Q, [C])
        lam = Q / (2.0 * float(C))
        alpha = weighted(query_scale(starts, self.loss), weight)
        # The held-out blocks: the queries, or for a single ranking its rows (leave-one-out).
        held_out = starts if Q >= 2 else np.arange(n + 1, dtype=np.int64)
        n_held_out = len(held_out) - 1
        chunks = query_chunks(held_out)
        U = centred(X, starts, alpha, n_threads=n_threads)  # U = X̂ at the start (G = I/λ)
        M, varies = gram(U, n_threads)
        _check_greedy_conditioning(np.diag(M), Q, float(C), self.normalize == "none")
        M /= lam                                      # X̂ᵀC (d × d): t = c M_b below
        g = np.diag(M).copy()                         # ‖x̂_j‖² / λ
        yh = centred(y[:, None], starts, alpha).ravel()
        cache = np.empty_like(U)                      # the paper's C
        _rankrls.divide(U, lam, cache, n_threads)     # C = U / λ
        a = yh / lam
        p = yh.copy()
        h = DataMatrix(U, n_threads).rmatvec(yh) / lam
        errors = np.empty(d)
        current = float(p @ p) / max(n_held_out, 1)
        self.lqo_error_start_ = current
        constant = ~(varies & varying_columns(X, starts))   # no score can change (X̂_j ≈ 0)
        k_max = int(d - constant.sum())
        if self.k != "auto":
            k_max = min(int(self.k), k_max)
        selected: list[int] = []
        lqo: list[float] = []
        path: list = []
        if log is not None:
            log(f"Greedy RankRLS: {d} features, {n} documents, {Q} queries, λ = {lam:.6g}; "
                f"LQO error without features {current:.8g}", 1)
        if k_max > 0:
            _rankrls.lqo_errors(cache, U, a, p, g, h, held_out, errors, chunks, n_threads)
        while len(selected) < k_max:
            scores = errors / max(n_held_out, 1)
            scores[selected] = np.inf
            scores[constant] = np.inf
            b = int(np.argmin(scores))
            if self.k == "auto" and not scores[b] < current:
                if log is not None:
                    log(f"Greedy RankRLS: stop, the best candidate (feature {used[b] + 1}) "
                        f"gives LQO error {scores[b]:.8g} >= {current:.8g}", 1)
                break
            c = 1.0 / (1.0 + g[b])
            t = c * M[b]                              # c X̂_bᵀC, no pass over C
            h_next, g_next = h - h[b] * t, g - t * t / c
            # one pass: the update, and (unless this is the last step) the next errors
            score_next = () if len(selected) + 1 == k_max else (g_next, h_next, errors)
            _rankrls.add_feature(cache, U, a, p, cache[:, b], U[:, b], t, c, c * h[b],
                                 held_out, chunks, n_threads, *score_next)
            M -= np.outer(M[:, b], t)                 # X̂ᵀC after C ← C − C_b tᵀ
            h, g = h_next, g_next
            selected.append(b)
            current = float(scores[b])
            lqo.append(current)
            path.append(h[selected].copy())
            if log is not None:
                log(f"Greedy step {len(selected)}: feature {used[b] + 1}, "
                    f"LQO error {current:.8g}", 1)
        order = np.array(selected, dtype=np.int64)
        self.selected_ = used[order].astype(np.int64) + 1
        self.lqo_errors_ = np.array(lqo, dtype=np.float64)
        self.weights_path_ = path
        return (path[-1] if path else np.zeros(0)), None

    def _keep_solution(self, normalizer: Normalizer, problem: Problem, w: Vector) -> None:
        """The selected features' weights, in the order of their indices."""
        sort = np.argsort(self.selected_, kind="stable")
        self._keep_weights(normalizer, self.selected_[sort] - 1, w[sort])

    def to_model(self, n_features: int | None = None, n_documents: int | None = None) -> Any:
        """LinearModel of the selected features; metadata records the selection order."""
        check_is_fitted(self)
        return linear_model(self, n_features, n_documents,
                            {"C": self.C_, "l": self.loss, "k": self.k, "grid": c_grid(self.C),
                             "selected": ",".join(str(int(i)) for i in self.selected_)})


# ---------------------------------------------------------------- the pieces

def greedy_memory_bytes(n: int, d: int) -> int:
    """Bytes greedy RankRLS allocates for n documents and d features (see check_greedy_memory)."""
    return 8 * (2 * n * d + 2 * d * d + 16 * (n + d))


def check_greedy_memory(n: int, d: int) -> None:
    """Raise ValueError when greedy RankRLS's caches would not fit in available_memory().

    The caches C and U are two dense n × d float64 arrays (both are read and
    updated by every step), besides X̂ᵀC (d × d, and its update) and O(n + d)
    vectors: greedy_memory_bytes(n, d).  The message gives both terms: with
    more features than documents the d × d arrays are the larger.
    No check when the memory is unknown.
    """
    needed = greedy_memory_bytes(n, d)
    available = available_memory()
    if available is not None and needed > available:
        raise ValueError(f"greedy RankRLS needs {needed / 1e9:.1f} GB for {n} documents x "
                         f"{d} features (two dense n x d arrays: {16 * n * d / 1e9:.1f} GB, two "
                         f"d x d arrays: {16 * d * d / 1e9:.1f} GB) but {available / 1e9:.1f} GB "
                         f"is available: use a linear learner (prsvm, rankrls) or fewer features")


def available_memory(meminfo: str = "/proc/meminfo", status: str = "/proc/self/status") -> int | None:
    """Bytes this process can still allocate, or None when that cannot be read.

    MemAvailable from ``meminfo`` (Linux), lowered to what the address-space
    limit (``ulimit -v``) leaves above the process's VmSize in ``status``.
    """
    available = _proc_field(meminfo, "MemAvailable:")
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    used = _proc_field(status, "VmSize:")
    if limit != resource.RLIM_INFINITY and used is not None:
        headroom = max(limit - used, 0)
        available = headroom if available is None else min(available, headroom)
    return available


def _proc_field(path, name):
    """A ``name   N kB`` line of a /proc file, in bytes; None when absent or unreadable."""
    try:
        with open(path) as stream:
            for line in stream:
                if line.startswith(name):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# Greedy's rank-one updates of G = (X̂_S X̂_Sᵀ + λI)⁻¹ lose about log10(‖x̂_j‖²/λ)
# digits; beyond this the selected weights can have the wrong sign.
GREEDY_MAX_CONDITION = 1e12


def _check_greedy_conditioning(squares, Q, C, may_normalize=True):
    """ValueError when C and a feature's within-query spread make greedy's updates unreliable.

    squares holds ‖x̂_j‖² for every feature; greedy's starting diagonal
    ‖x̂_j‖²/λ grows with C (λ = Q/(2C)), so the message names the C that
    would pass, C_max = GREEDY_MAX_CONDITION · Q / (2 max ‖x̂_j‖²): computed
    from the finite squares, not from the ratio (which overflows for a huge
    C), it is a finite number below C.  ``may_normalize``: the features are
    the file's, so --normalize is advice too.
    """
    square = float(squares.max(initial=0.0))
    largest = square * (2.0 * C / Q)
    if largest > GREEDY_MAX_CONDITION:
        advice = GREEDY_MAX_CONDITION * (Q / (2.0 * square))
        shown = f"{advice:.2g}"
        if float(shown) > advice:                     # rounded up: it would fail again
            shown = f"{advice * 0.95:.2g}"
        raise ValueError(f"C = {C:g} is too large for greedy RankRLS on these features "
                         f"(max ||x_j||^2 / lambda = {largest:.3g} > {GREEDY_MAX_CONDITION:g}, "
                         f"lambda = Q/(2C): its updates would lose all precision); use "
                         f"'C' = {shown} or less, rescale the features"
                         + (" ('normalize')" if may_normalize else "") + ", or use RankRLS")
