"""Fast weighted sums of erfc functions (Raykar, Duraiswami & Krishnapuram 2008, Sect. 5).

``erfc_sum`` computes ``E(y_j) = Σ_i q_i erfc(y_j − z_i)`` at M targets y_j for N
sources z_i with real weights q_i, so that

    max_j |Ê(y_j) − E(y_j)| / Σ_i |q_i|  ≤  ε,

in O(p (N + M)) time instead of the O(NM) of the direct sum.  Beaulieu's Fourier
series ``erfc(s) ≈ 1 − (4/π) Σ_{n odd ≤ 2p−1} e^{−n²h²}/n · sin(2nhs)`` is separated
around the centres of cells of width 2 r_x; sources within reach r of a target enter
through the series, sources further right as 2 q_i (erfc → 2), sources further left
as 0.  The parameters follow Sect. 5.8 of the paper:

    r_x = 0.1 erfcinv(ε)                      cell radius
    r   = erfcinv(ε) + 2 r_x                  reach of the series
    h   = π / (3 (r + erfcinv(ε / 2)))
    p   = ⌈erfcinv(√π h ε / 4) / (2h)⌉         number of terms

so that the truncation and the aliasing error of the series are each below ε/2 for
|y − z| ≤ r, and erfc(s) is within ε of 0 or 2 beyond erfcinv(ε).  A target takes
the series from the L = 5 cells on either side of its own (5 · 2 r_x = erfcinv(ε),
6 · 2 r_x = r).  Powers e^{inφ} come from one sin and one cos per point by a
trigonometric recurrence.  Points far apart are handled without a grid over the
whole line (see ``pyx/_erfc.pyx``), so any finite inputs work.

The kernels are in ``rankfast._kernels._erfc``; the direct sum (libm's erfc, term by term)
is its slow twin.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._kernels import _erfc

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from .._typing import VectorLike

#: Cells taken by the series on either side of a target's cell: L · 2 r_x = erfcinv(ε).
CELLS_EACH_SIDE = 5
RADIUS_FRACTION = 0.1        # r_x / erfcinv(ε)


@dataclasses.dataclass(frozen=True)
class ErfcParameters:
    """Parameters of the fast erfc transform for accuracy ``eps`` (paper, Sect. 5.8).

    Attributes
    ----------
    eps : float
        Target accuracy, relative to Σ|q_i|.
    r_x, r, h : float
        Cell radius, reach of the series, frequency step.
    p : int
        Terms of the series (n = 1, 3, …, 2p − 1).
    L : int
        Cells on either side of a target's cell that use the series.
    coef : ndarray
        (4/π) e^{−n²h²}/n for n = 1, 3, …, 2p − 1.
    """

    eps: float
    r_x: float
    r: float
    h: float
    p: int
    L: int
    coef: np.ndarray

    @property
    def gap(self) -> float:
        """Sources further apart than this are put on separate grids (> 2 erfcinv(ε))."""
        return 4.0 * self.r

    def kernel_args(self) -> tuple[float, float, np.ndarray, int, float]:
        """(w, h, coef, L, gap) as the kernels of rankfast._kernels._erfc take them."""
        return 2.0 * self.r_x, self.h, self.coef, self.L, self.gap


def erfcinv(y: float) -> float:
    """x ≥ 0 with erfc(x) = y, for y in (0, 1], by bisection on math.erfc to the last bit.

    scipy.special has it too, but importing scipy costs more than a small
    training run.  math.erfc is within an ulp or so; as erfc(x) ≈ e^{−x²}/(x√π),
    a relative error δ in y moves x by about δ/(2x): the parameters below
    (x ≥ 3 for ε ≤ 1e-5) agree with scipy's to ~1e-15.

    Examples
    --------
    >>> import math
    >>> x = erfcinv(1e-6)
    >>> round(x, 12), math.isclose(math.erfc(x), 1e-6, rel_tol=1e-14)
    (3.45891073728, True)
    """
    lo, hi = 0.0, 27.3                     # erfc(27.3) is below the smallest double
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            return lo if abs(math.erfc(lo) - y) <= abs(math.erfc(hi) - y) else hi
        if math.erfc(mid) > y:
            lo = mid
        else:
            hi = mid


def erfc_parameters(eps: float) -> ErfcParameters:
    """The fast transform's parameters for accuracy eps in (0, 1) (paper, Sect. 5.8)."""
    eps = _check_eps(eps)
    a = erfcinv(eps)
    r_x = RADIUS_FRACTION * a
    r = a + 2.0 * r_x
    h = math.pi / (3.0 * (r + erfcinv(eps / 2.0)))
    p = max(1, math.ceil(erfcinv(math.sqrt(math.pi) * h * eps / 4.0) / (2.0 * h)))
    n = 2.0 * np.arange(p) + 1.0
    coef = (4.0 / math.pi) * np.exp(-(n * h) ** 2) / n
    return ErfcParameters(eps, r_x, r, h, p, CELLS_EACH_SIDE, coef)


def erfc_sum(sources: VectorLike, weights: VectorLike, targets: VectorLike, eps: float = 1e-6,
             method: str = "fast") -> np.ndarray:
    """Weighted sum of erfc functions at many points: E(y_j) = Σ_i q_i erfc(y_j − z_i).

    Parameters
    ----------
    sources : array_like of float, shape (N,)
        Centres z_i (any finite values, in any order, repeats allowed).
    weights : array_like of float, shape (N,)
        Weights q_i (any finite values, negative ones included).
    targets : array_like of float, shape (M,)
        Points y_j.
    eps : float in (0, 1)
        Accuracy of the fast method: max_j |Ê(y_j) − E(y_j)| ≤ eps · Σ_i |q_i|
        (up to rounding).  Ignored by the direct method but checked all the same.
    method : {"fast", "direct"}
        "fast": O(p (N + M)) transform; "direct": the O(NM) sum, term by term with
        the C library's erfc (the slow twin).

    Returns
    -------
    ndarray of float64, shape (M,)

    Raises
    ------
    ValueError
        Arrays not 1-D, of different lengths (sources and weights), not finite; eps
        not in (0, 1); unknown method.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import erfc
    >>> from rankfast import erfc_sum
    >>> z, q, y = np.array([0.0, 1.0, 2.5]), np.array([1.0, -2.0, 0.5]), np.linspace(-3, 3, 7)
    >>> fast = erfc_sum(z, q, y, eps=1e-8)
    >>> exact = (q * erfc(y[:, None] - z)).sum(axis=1)
    >>> bool(np.abs(fast - exact).max() <= 1e-8 * np.abs(q).sum())
    True
    """
    z = _vector(sources, "sources")
    q = _vector(weights, "weights")
    y = _vector(targets, "targets")
    if len(z) != len(q):
        raise ValueError(f"sources and weights differ in length ({len(z)} and {len(q)})")
    eps = _check_eps(eps)
    out = np.zeros(len(y))
    if method == "fast":
        w, h, coef, L, gap = erfc_parameters(eps).kernel_args()
        _erfc.fast_sum(z, q, y, w, h, coef, L, gap, -1, out)
    elif method == "direct":
        _erfc.direct_sum(z, q, y, out)
    else:
        raise ValueError(f"method must be 'fast' or 'direct', not {method!r}")
    return out


def _vector(values, name):
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (got shape {a.shape})")
    a = np.ascontiguousarray(a)
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite")
    return a


def _check_eps(eps):
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, (int, float, np.number)):
        raise ValueError(f"eps must be a number in (0, 1), not {eps!r}")
    eps = float(eps)
    if not 0.0 < eps < 1.0:
        raise ValueError(f"eps must lie in (0, 1), not {eps!r}")
    return eps
