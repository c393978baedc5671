"""The RBF kernel's width from the data: the median heuristic.

exp(−γ ‖a − b‖²) tells documents apart only where γ ‖a − b‖² is neither
near 0 (every value near 1) nor large (every value near 0).  The median
heuristic puts the median pair of documents at exp(−1): γ = 1 / the
median ‖a − b‖² over the pairs of distinct documents of a seeded sample of
SAMPLE documents.  It depends on the documents' distances only, so it
follows the normalisation applied before the map; benchmarks/README.md
("The kernel recipe beside boosted trees") measures it on held-out data.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from ..data.sparse import scipy_csr
from ..models import KernelParams

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from .._typing import Matrix

SAMPLE = 256                       # documents (seeded) whose pairs the heuristic looks at
AUTO = "auto"                      # KernelParams.gamma that fit replaces by median_gamma


def sample_rows(n_documents: int, seed: int = 0) -> np.ndarray:
    """The rows (increasing) of the seeded sample of min(n_documents, SAMPLE) documents."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_documents, size=min(n_documents, SAMPLE), replace=False))


def median_squared_distance(sample: Matrix) -> float | None:
    """The median ‖a − b‖² over the pairs of distinct rows of sample, or None."""
    sample = scipy_csr(sample, dtype=np.float64)
    dot = KernelParams(0)(sample, sample)
    norms = np.diag(dot)
    distances = (norms[:, None] + norms[None, :] - 2.0 * dot)[np.triu_indices(len(norms), 1)]
    distances = distances[distances > 0]             # pairs of equal documents say nothing
    return float(np.median(distances)) if len(distances) else None


def median_gamma(X: Matrix, seed: int = 0) -> float:
    """γ = 1 / the median ‖a − b‖² over the pairs of a seeded sample of X's rows, rounded
    to 6 significant digits (the value printed is the value used: ``-g`` with it gives the
    same model); 1 (svm_rank's ``-g 1``), with a warning, when every sampled row is the same."""
    median = (median_squared_distance(X[sample_rows(X.shape[0], seed)])
              if X.shape[0] > 1 else None)
    if median is None:
        warnings.warn("gamma 'auto': every training document sampled is the same; "
                      "using gamma 1", stacklevel=3)
        return 1.0
    return float(f"{1.0 / median:.6g}")


def resolved(kernel: KernelParams, X: Matrix, seed: int = 0) -> KernelParams:
    """``kernel`` with gamma ``"auto"`` replaced by median_gamma(X, seed) (a copy), or
    ``kernel`` itself."""
    if kernel.gamma != AUTO:
        return kernel
    return dataclasses.replace(kernel, gamma=median_gamma(X, seed))
