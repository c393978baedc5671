"""Preconditioners for conjugate gradients on a Hessian H = I + (a symmetric PSD d × d matrix).

:class:`FullPreconditioner` applies M⁻¹ for a formed M = I + scale · G by its Cholesky
factor, O(d²) a product after O(d³) once; :class:`DiagonalPreconditioner` divides by
diag(M) (Jacobi, Hsia, Chiang & Lin 2018).  Which M a loss offers (the Hessian at
w = 0 from pairs and queries) is the loss's business: rankfast.losses.pair_preconditioner.

On a dense X of few columns and many rows (a kernel map's n × m features) the bound M
at w = 0 helps only the first Newton steps: later the active pairs are a small part of
all pairs, and CG on the bound needs 100–200 products a step (house_8L, 1,000
landmarks: 721 in 22 steps).  There :func:`hessian_gram` forms the Hessian itself at
the current scores, I + XᵀAX with A the loss's Hessian in score space (any loss that
can apply A to many directions at once), in O(n m²) (its upper triangle through BLAS,
on threads), the cost of some 25 Hessian products; with it CG needs a few products a
step until the active set has moved (benchmarks/README.md, "Kernels on raw features: where the time goes").
"""
from __future__ import annotations

import numpy as np

from .._kernels.threads import each_block

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Callable

    from numpy.typing import ArrayLike

    from .._typing import Vector

HESSIAN_COLUMNS = 128            # columns of X whose Hessian products are formed at once


def hessian_gram(X: np.ndarray, score_hessian: Callable[[np.ndarray, np.ndarray, int], None],
                 n_threads: int = 1) -> np.ndarray:
    """XᵀAX for a dense X (n × m), A the Hessian in score space: score_hessian(D, out, threads)
    writes A D on that many threads.

    HESSIAN_COLUMNS columns at a time (n × 128 values of A D in memory per thread), and of
    each block of columns only the rows on and above the diagonal (XᵀAX is symmetric: the
    upper triangle is mirrored, about half the multiply-adds of the whole).  Each block's
    A D and Xᵀ(A D) run on one thread, ``n_threads`` blocks at once: BLAS stays on one
    thread (rankfast._kernels.threads.blas_single_thread), so every block is the same
    call, and the same bits, at any number of threads.
    """
    n_columns = X.shape[1]
    gram = np.zeros((n_columns, n_columns))

    def block(begin):
        end = min(begin + HESSIAN_COLUMNS, n_columns)
        columns = np.ascontiguousarray(X[:, begin:end])
        products = np.empty_like(columns)
        score_hessian(columns, products, 1)
        np.matmul(X[:, :end].T, products, out=gram[:end, begin:end])

    each_block(block, reversed(range(0, n_columns, HESSIAN_COLUMNS)), n_threads)  # largest first
    upper = np.triu(gram)
    upper += np.triu(gram, 1).T
    return upper


class FullPreconditioner:
    """v ↦ M⁻¹ v for M = I + scale · gram, by a Cholesky factor of M scaled to a unit diagonal.

    With S = diag(M)^(-1/2) and S M S = L Lᵀ, M⁻¹ v = S L⁻ᵀ L⁻¹ S v; L⁻¹ is formed once
    (O(d³), NumPy only: the programs never import SciPy), so each application is two
    triangular products, O(d²).  If rounding leaves S M S not numerically positive
    definite (features whose scales differ by more than 1e8 and that are nearly
    dependent), a shift of 1e-12, then 100 times more, is added to its diagonal until
    it factors: any symmetric positive definite matrix keeps the solvers correct, this
    one only faster.
    """

    kind = "full"

    def __init__(self, gram: np.ndarray, scale: float) -> None:
        matrix = scale * gram
        matrix[np.diag_indices_from(matrix)] += 1.0
        self.unit = 1.0 / np.sqrt(np.diag(matrix))
        scaled = matrix * self.unit[:, None] * self.unit[None, :]
        identity = np.eye(len(scaled))
        shift = 0.0
        while True:
            try:
                factor = np.linalg.cholesky(scaled + shift * identity)
                break
            except np.linalg.LinAlgError:
                shift = 1e-12 if shift == 0.0 else 100.0 * shift
        self.shift = shift
        self.inverse_factor = np.linalg.solve(factor, identity)      # L⁻¹

    def __call__(self, v: Vector) -> np.ndarray:
        z = self.inverse_factor @ (self.unit * v)
        return self.unit * (self.inverse_factor.T @ z)


class HessianAtNextPoint:
    """M⁻¹ of a loss's bound (``fallback``) until asked, then of the Hessian itself, formed at
    the next point: what a Newton objective's ``precondition`` applies.

    ``ask()`` (from its ``strengthen``) asks for the Hessian; ``arrive(rows, score_hessian,
    n_threads)`` (from its ``value_grad``, once the new point fixes the score-space
    Hessian A) forms I + rowsᵀ A rows by :func:`hessian_gram` if asked since the last
    arrival, and that one preconditions until the next is formed.
    """

    def __init__(self, fallback: Callable[[Vector], np.ndarray]) -> None:
        self.fallback = fallback
        self.formed: FullPreconditioner | None = None      # the last Hessian formed
        self.asked = False                                  # form one at the next point

    def ask(self) -> None:
        self.asked = True

    def arrive(self, rows: ArrayLike, score_hessian: Callable[[np.ndarray, np.ndarray, int], None],
               n_threads: int) -> None:
        if self.asked:
            self.asked = False
            rows = np.asarray(rows, dtype=np.float64)
            self.formed = FullPreconditioner(hessian_gram(rows, score_hessian, n_threads), 1.0)

    def __call__(self, r: Vector) -> np.ndarray:
        return self.fallback(r) if self.formed is None else self.formed(r)


class DiagonalPreconditioner:
    """v ↦ v / diag(M): Jacobi (Hsia, Chiang & Lin 2018)."""

    kind = "diagonal"

    def __init__(self, diagonal: ArrayLike) -> None:
        self.diagonal = np.asarray(diagonal, dtype=np.float64)
        self.inverse = 1.0 / self.diagonal

    def __call__(self, v: Vector) -> np.ndarray:
        return self.inverse * v
