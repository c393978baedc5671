"""Propensities of examination: the position-based model, clipping, and eta from interventions."""
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
    if not np.isfinite(p).all() or (p <= 0).any():
        raise ValueError("propensities must be positive and finite")
    if clip is not None:
        if not (0 < clip <= 1):
            raise ValueError(f"the propensity clip must be in (0, 1] (got {clip!r})")
        p = np.maximum(p, clip)
    with np.errstate(over="ignore", divide="ignore"):
        weight = 1.0 / p
    return np.minimum(weight, np.finfo(np.float64).max)


def estimate_eta(clicks_moved: VectorLike, clicks_at_top: VectorLike,
                 rank: VectorLike) -> tuple[float, np.ndarray]:
    """eta of p(rank) = (1/rank)^eta from randomised swap interventions (Joachims et al. 2017, §5).

    In a swap-(1, k) intervention the result the ranker put first is shown at
    rank k, so its clicks there over its clicks at rank 1 (in as many
    sessions without the swap) estimate p_k / p_1 whatever its relevance.

    Parameters
    ----------
    clicks_moved : array-like
        For each k, clicks on the top result when it was moved to rank k.
    clicks_at_top : array-like
        For each k, clicks on the top result at rank 1 in as many sessions.
    rank : array-like
        The k of each intervention (≥ 2).

    Returns
    -------
    (eta, relative propensities p_k / p_1)
        eta by least squares of log(p_k / p_1) = −eta log k through the origin.
    """
    moved = np.asarray(clicks_moved, dtype=np.float64)
    top = np.asarray(clicks_at_top, dtype=np.float64)
    k = np.asarray(rank, dtype=np.float64)
    if not (moved.shape == top.shape == k.shape) or moved.ndim != 1 or len(k) == 0:
        raise ValueError("clicks_moved, clicks_at_top and rank must be 1-D of one length")
    if (k < 2).any() or (top <= 0).any() or (moved <= 0).any():
        raise ValueError("every swap needs rank >= 2 and clicks on both sides")
    relative = moved / top
    logk = np.log(k)
    return float(-(logk @ np.log(relative)) / (logk @ logk)), relative
