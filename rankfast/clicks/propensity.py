"""Propensities of examination: the position-based model and clipping."""
from __future__ import annotations

import numpy as np

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from .._typing import VectorLike


def position_propensity(rank: VectorLike, eta: float = 1.0) -> np.ndarray:
    """p(rank) = (1/rank)^eta: the probability that a result at ``rank`` (1-based) is examined.

    Computed as exp(−eta log rank), so a tiny propensity (rank 10⁶, eta 60)
    is a tiny positive number or 0, never a division's overflow.
    """
    rank = np.asarray(rank, dtype=np.float64)
    if (rank < 1).any() or not np.isfinite(rank).all():
        raise ValueError("ranks must be finite and at least 1")
    if not (np.isfinite(eta) and eta >= 0):
        raise ValueError(f"'eta' must be a finite number >= 0 (got {eta!r})")
    return np.exp(-eta * np.log(rank))


def clipped_weights(propensity: VectorLike, clip: float | None = None) -> np.ndarray:
    """Inverse-propensity weights 1 / max(p, clip): the clip bounds every weight by 1/clip.

    Clipping trades a little bias for much less variance (the usual control
    for rare, far-down clicks).  A propensity must be positive and finite; a
    positive propensity so small that 1/p overflows gets the largest finite
    weight (the learners scale weights before they sum them).
    """
    p = np.asarray(propensity, dtype=np.float64)
    if clip is not None:
        if not (0 < clip <= 1):
            raise ValueError(f"the propensity clip must be in (0, 1] (got {clip!r})")
        p = np.maximum(p, clip)          # a propensity that underflowed to 0 is clipped too
    if not np.isfinite(p).all() or (p <= 0).any():
        raise ValueError("propensities must be positive and finite (a propensity that "
                         "underflows to 0 needs a clip)")
    with np.errstate(over="ignore", divide="ignore"):
        weight = 1.0 / p
    return np.minimum(weight, np.finfo(np.float64).max)
