"""The pairwise losses' preconditioners: their Hessian at w = 0, from pairs and queries.

Every pairwise learner's Hessian is bounded by, and at w = 0 equal to,

    M = I + a · Σ_q c_q Σ_{(l, k) ∈ P_q} (x_l − x_k)(x_l − x_k)ᵀ = I + a · XᵀLX,

P_q the pairs of query q's documents with different labels, a the loss's largest
curvature (ψ''(0) for RankNCG).  Its diagonal is the Jacobi preconditioner of Hsia,
Chiang & Lin (2018), which corrects the features' scales but not their correlations.
On raw features (MSLR-WEB: counts, sums and lengths of the same fields, 1e-3..2.3e8)
the correlations are what is left: RankNCG needs ~440 iterations with the diagonal,
~30 with M itself, and stops 1e-3 above the optimum instead of 1e-6; PRSVM's CG
needs ~70 products a Newton step instead of ~7.

M itself costs one pass over X, O(nnz · d) (dense blocks through BLAS), d² memory and
O(d³) once for its Cholesky factor; applying M⁻¹ costs O(d²), no more than one X v
while d² ≤ nnz(X) (and d ≤ FULL_MAX).  :class:`PairPreconditioner` starts with the
diagonal, which is all well-scaled features need, and forms M when the solver finds
itself working hard and M is that cheap.

XᵀLX is formed from rows centred per query, which changes no difference x_l − x_k
and leaves two positive semidefinite terms (no cancellation between large sums):
Σ_{pairs of a set S} (x_l − x_k)(x_l − x_k)ᵀ = |S| Σ_S x xᵀ − (Σ_S x)(Σ_S x)ᵀ, and the
pairs across levels are those of the query less those within each level, so with
Σ_q x = 0 after centring

    XᵀL_qX = c_q (Σ_{i ∈ q} (m_q − m_level(i)) x_i x_iᵀ + Σ_{levels of q} (Σ_level x)(Σ_level x)ᵀ).
"""
from __future__ import annotations

import numpy as np

from ..data.sparse import issparse
from ..optimize.precondition import DiagonalPreconditioner, FullPreconditioner

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import ArrayLike

    from .._typing import Int64Vector, Matrix, Vector

FULL_MAX = 2048                 # largest d whose d × d matrix is formed


BLOCK_VALUES = 1 << 22          # values of X densified at a time (32 MB)


def pair_gram(X: Matrix, starts: Int64Vector, rank: Int64Vector, query_weight: Vector) -> np.ndarray:
    """XᵀLX = Σ_q c_q Σ_{pairs of q with different labels} (x_l − x_k)(x_l − x_k)ᵀ.

    Rows are densified BLOCK_VALUES at a time: whole queries together, a query larger
    than that in pieces (its mean and level sums first, then its centred rows).

    Parameters
    ----------
    X : ndarray or CSR, shape (n, d)
        Rows grouped by query.
    starts : ndarray of int64
        Query offsets with the row count appended.
    rank : ndarray of int64
        Each document's label rank (any order-preserving integer code).
    query_weight : ndarray of float64
        c_q ≥ 0, one per query.

    Returns
    -------
    ndarray of float64, shape (d, d), symmetric positive semidefinite
    """
    d = X.shape[1]
    gram = np.zeros((d, d))
    starts = np.asarray(starts, dtype=np.int64)
    query_weight = np.asarray(query_weight, dtype=np.float64)
    budget = max(BLOCK_VALUES // max(d, 1), 1)
    first, n_queries = 0, len(starts) - 1
    while first < n_queries:
        last = int(np.searchsorted(starts, starts[first] + budget, side="right")) - 1
        last = min(max(last, first + 1), n_queries)
        _add_queries(gram, X, starts[first:last + 1], rank, query_weight[first:last], budget)
        first = last
    return 0.5 * (gram + gram.T)


def _dense(X, begin, end):
    """Rows begin..end of X as a new dense float64 array."""
    rows = X[begin:end]
    return (rows.toarray() if issparse(rows) else np.asarray(rows)).astype(np.float64)


def _runs(labels):
    """(starts, labels) of the runs of equal values in labels."""
    heads = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    return heads, labels[heads]


def _add_queries(gram, X, starts, rank, query_weight, budget):
    """Add the queries of X[starts[0]:starts[-1]] to gram (see the module docstring)."""
    begin, end = int(starts[0]), int(starts[-1])
    sizes = np.diff(starts)
    query = np.repeat(np.arange(len(sizes)), sizes)
    ranks = rank[begin:end]
    order = np.lexsort((ranks, query))
    level_key = query[order] * (int(ranks.max()) + 1) + ranks[order]
    level_starts = np.flatnonzero(np.r_[True, np.diff(level_key) != 0])
    level_size = np.diff(np.r_[level_starts, len(order)])
    level_of = np.empty(len(order), dtype=np.int64)
    level_of[order] = np.repeat(np.arange(len(level_starts)), level_size)
    pieces = [(a - begin, min(a + budget, end) - begin) for a in range(begin, end, budget)]
    blocks = {}
    query_sums = np.zeros((len(sizes), X.shape[1]))
    for a, b in pieces:                          # each query's sum (rows are grouped by query)
        block = blocks[a] = _dense(X, begin + a, begin + b)
        heads, queries = _runs(query[a:b])
        query_sums[queries] += np.add.reduceat(block, heads, axis=0)
        if len(pieces) > 1:
            blocks.clear()                       # densified again below: memory stays bounded
    mean = query_sums / sizes[:, None]
    c = query_weight[query]
    weight = np.sqrt(c * (sizes[query] - level_size[level_of]))
    level_sums = np.zeros((len(level_starts), X.shape[1]))
    for a, b in pieces:
        block = blocks.pop(a) if a in blocks else _dense(X, begin + a, begin + b)
        block -= mean[query[a:b]]                # centred: Σ_q x = 0
        by_level = np.argsort(level_of[a:b], kind="stable")
        heads, levels = _runs(level_of[a:b][by_level])
        level_sums[levels] += np.add.reduceat(block[by_level], heads, axis=0)
        block *= weight[a:b, None]               # c_q (m_q − m_level) on each row's square
        gram += block.T @ block
    level_sums *= np.sqrt(query_weight[query[order[level_starts]]])[:, None]
    gram += level_sums.T @ level_sums


def full_is_cheap(n_features: int, stored_entries: int) -> bool:
    """Whether M (d × d) costs no more to apply than one X v, and is small enough to form."""
    return n_features <= FULL_MAX and n_features * n_features <= max(stored_entries, 1)


class StrengtheningPreconditioner:
    """v ↦ M⁻¹ v for M = I + scale · XᵀLX: its diagonal, then M itself once the solver asks.

    On well-scaled features the diagonal is all CG needs (one or two products a
    Newton step) and forming M would cost more than the whole solve; a solver that
    finds itself working hard calls :meth:`strengthen`, which forms M when that is
    cheap (:func:`full_is_cheap`; ``kind="auto"``).  ``kind="full"`` forms it at once,
    ``"diagonal"`` never.  Subclasses say where XᵀLX and nnz(X) come from: the rows
    in this process (:class:`PairPreconditioner`) or a Dask cluster's shards.

    Parameters
    ----------
    diagonal : ndarray
        diag(M), already computed by the learner (rankfast.losses.products.pair_square_sums).
    scale : float
        The loss's largest curvature (2 for squared hinges, ψ''(0) for RankNCG).
    kind : {"auto", "full", "diagonal"}
    """

    def __init__(self, diagonal: ArrayLike, scale: float, kind: str = "auto") -> None:
        if kind not in ("auto", "full", "diagonal"):
            raise ValueError(f"preconditioner kind must be 'auto', 'full' or 'diagonal', "
                             f"not {kind!r}")
        self.scale = scale
        self._apply: Any = DiagonalPreconditioner(diagonal)
        self._n_features = len(self._apply.diagonal)
        self._may_strengthen = kind == "auto"

    @property
    def kind(self) -> Any:
        """"diagonal" or "full": what is applied now."""
        return self._apply.kind

    def __call__(self, v: Vector) -> np.ndarray:
        return self._apply(v)

    def gram(self) -> np.ndarray:
        """XᵀLX (:func:`pair_gram`)."""
        raise NotImplementedError

    def stored_entries(self) -> int:
        """nnz(X) (every entry for dense X): what one X v costs."""
        raise NotImplementedError

    def strengthen(self) -> bool:
        """Form M itself if allowed, cheap and not yet done; whether the preconditioner changed."""
        if not self._may_strengthen:
            return False
        self._may_strengthen = False
        if not full_is_cheap(self._n_features, self.stored_entries()):
            return False
        self._form_full()
        return True

    def _form_full(self):
        self._apply = FullPreconditioner(self.gram(), self.scale)
        self._may_strengthen = False


class PairPreconditioner(StrengtheningPreconditioner):
    """:class:`StrengtheningPreconditioner` of the rows this process holds.

    Parameters
    ----------
    X : ndarray or CSR
        Rows grouped by query (as the learner holds them; not copied).
    starts, rank, query_weight
        As for :func:`pair_gram`.
    scale, diagonal, kind
        As for :class:`StrengtheningPreconditioner`.
    """

    def __init__(self, X: Matrix, starts: Int64Vector, rank: Int64Vector, query_weight: Vector,
                 scale: float, diagonal: ArrayLike, kind: str = "auto") -> None:
        super().__init__(diagonal, scale, kind)
        self._rows = (X, starts, rank, query_weight)
        if kind == "full":
            self._form_full()

    def stored_entries(self) -> int:
        X = self._rows[0]
        return X.nnz if issparse(X) else X.shape[0] * X.shape[1]

    def gram(self) -> np.ndarray:
        """XᵀLX of these rows (also a Dask shard's part of the sum)."""
        return pair_gram(*self._rows)
