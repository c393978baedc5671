"""Advice in the programs' words: what rank_learn notes about the data before it trains."""
from __future__ import annotations

import math

import numpy as np

from ..data.sparse import scipy_csr
from ..learners.kernel_width import median_squared_distance, sample_rows
from ..models import KernelParams

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from .._typing import Matrix, VectorLike

# A kernel saturated between most pairs of documents tells them apart no better than a
# constant (raw features do that to svm_rank's default -g 1 and -s 1): past these,
# exp(-x) < 1e-4 and tanh(x) is ±1 within 1e-17 (benchmarks/README.md, "Saturated kernels").
RBF_SATURATED = math.log(1e4)
TANH_SATURATED = 20.0
SATURATION_QUERY_ROWS = 1 << 16   # at most this many rows give their queries' min and max


def saturation_note(kernel: KernelParams, X: Matrix, seed: int = 0, normalize: str = "none",
                    qid: VectorLike | None = None) -> str | None:
    """Why ``kernel`` cannot tell most of X's documents apart, or None when it can.

    Looks at the pairs of up to kernel_width.SAMPLE documents drawn (seeded)
    from X, normalised first as ``normalize`` says (``query``: over their
    whole queries, which needs each row's qid; ``zscore``: by the deviations
    over all of X).  RBF: exp(-g ‖a − b‖²)
    below 1e-4 for more than half the pairs of distinct documents, so that
    a document is scored by the few training documents nearest to it.
    Sigmoid: tanh(s a·b + r) at ±1 for more than half the pairs.  The advice
    is the median heuristic, g = 1 / median ‖a − b‖² or s = 1 / median
    |a·b|, or scaled features.  The polynomial and linear kernels do not
    saturate.
    """
    if kernel.kernel not in (2, 3) or X.shape[0] < 2:
        return None
    sample = _sample(X, seed, normalize, qid)
    scale_first = ("scale the features (--normalize zscore, query or log), or "
                   if normalize == "none" else "")
    if kernel.kernel == 2:
        median = median_squared_distance(sample)
        if median is None:
            return None
        if kernel.gamma * median <= RBF_SATURATED:
            return None
        spread = kernel.gamma * median
        return (f"-g {kernel.gamma:g}: the RBF kernel exp(-g ||a-b||^2) is below 1e-4 between "
                f"most training documents (median g ||a-b||^2 = {spread:.3g}: exp(-{spread:.3g}) = "
                f"{math.exp(-spread):.2g}), so a document is scored by the few training documents "
                f"nearest to it and hardly by the rest; {scale_first}try -g near {1.0 / median:.2g} "
                f"(1 / the median ||a-b||^2, -g auto) or a -g list around it")
    products = KernelParams(0)(sample, sample)[np.triu_indices(sample.shape[0], 1)]
    argument = float(np.median(np.abs(kernel.coef_lin * products + kernel.coef_const)))
    if argument <= TANH_SATURATED:
        return None
    scale = float(np.median(np.abs(products)))
    steps = []
    if scale > 0 and (abs(kernel.coef_lin) * scale > TANH_SATURATED
                      or abs(kernel.coef_const) <= TANH_SATURATED):
        steps.append(f"{scale_first}try -s near {1.0 / scale:.2g} (1 / the median |a*b|)")
    if abs(kernel.coef_const) > TANH_SATURATED:
        steps.append("use a smaller |r|")
    advice = "; ".join(steps)
    return (f"-s {kernel.coef_lin:g} -r {kernel.coef_const:g}: the sigmoid kernel tanh(s a*b + r) "
            f"is +-1 between most training documents (median |s a*b + r| = {argument:.3g}), "
            f"so it cannot tell them apart; {advice}")


def _sample(X, seed, normalize, qid):
    """The sample -g auto looks at (kernel_width.sample_rows), normalised as ``normalize`` says."""
    rows = sample_rows(X.shape[0], seed)
    return _normalized_rows(X, rows, normalize, qid, np.random.default_rng(seed))


def _normalized_rows(X, rows, normalize, qid, rng):
    """Rows of X (sorted indices) as float64 CSR, normalised as ``normalize`` says.

    ``query``: within the rows' queries; past SATURATION_QUERY_ROWS rows (one
    ranking of a million documents) a seeded sample of them stands for
    their minimum and maximum, which is enough for a note.
    """
    from ..data.normalize import Normalizer
    if normalize == "query":
        qid = np.asarray(qid)
        members = np.flatnonzero(np.isin(qid, qid[rows]))       # the sampled rows' queries
        if len(members) > SATURATION_QUERY_ROWS:
            others = np.setdiff1d(members, rows, assume_unique=True)
            members = np.union1d(rows, rng.choice(others, SATURATION_QUERY_ROWS - len(rows),
                                                  replace=False))
        whole = Normalizer("query").transform(X[members], qid[members])
        return scipy_csr(whole, dtype=np.float64)[np.searchsorted(members, rows)]
    sample = scipy_csr(X[rows], dtype=np.float64)
    if normalize == "zscore":                 # each feature over its deviation on all of X
        return scipy_csr(Normalizer("zscore").fit(X).transform(sample))
    return scipy_csr(Normalizer("log").transform(sample)) if normalize == "log" else sample
