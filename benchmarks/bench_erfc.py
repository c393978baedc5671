"""Speed and accuracy of rankfast.erfc_sum: the fast transform beside the direct sum.

As in Fig. 5 of Raykar et al. (2008): N = M points drawn from N(0, 1), unit weights,
eps = 1e-6 (``--eps``), N = 10³ … 10⁶.  Each size is timed for both methods in the
same run; the direct sum only while its predicted time (from the last measured size,
O(N²)) stays under ``--direct-seconds`` (default 60).  Error is max_j |Ê − E| / Σ|q|
(the quantity bounded by eps) against the direct sum at all targets, or, beyond
the direct sizes, at ``--sample`` random targets (marked "sampled").

Times are wall-clock seconds, best of a few runs for quick cases; on a shared machine
they are indicative only.  Target: under 0.5 s at N = M = 10⁶.

Usage::

    python benchmarks/bench_erfc.py
    python benchmarks/bench_erfc.py --eps 1e-10 --max-n 100000
"""
import argparse
import os
import platform
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)                  # this checkout's rankfast, not an installed one

from rankfast import erfc_sum  # noqa: E402
from rankfast.losses.erfc import erfc_parameters  # noqa: E402

TARGET_SECONDS_AT_1E6 = 0.5


def timed(function, min_total=0.5, max_runs=5):
    """(result, best wall time) over up to max_runs calls (stop once min_total is spent)."""
    best, spent, runs = float("inf"), 0.0, 0
    while runs < max_runs and (runs == 0 or spent < min_total):
        start = time.perf_counter()
        result = function()
        elapsed = time.perf_counter() - start
        best, spent, runs = min(best, elapsed), spent + elapsed, runs + 1
    return result, best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--eps", type=float, default=1e-6)
    parser.add_argument("--max-n", type=int, default=1_000_000)
    parser.add_argument("--direct-seconds", type=float, default=60.0)
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    P = erfc_parameters(args.eps)
    print(f"erfc_sum, N = M points from N(0, 1), unit weights, eps = {args.eps:g}: "
          f"p = {P.p} terms, r_x = {P.r_x:.4f}, r = {P.r:.4f}, h = {P.h:.4f}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"load average {os.getloadavg()[0]:.2f} (timings indicative only)")
    print(f"{'N = M':>9} {'fast s':>9} {'fast error/eps':>15} {'direct s':>10} {'speed-up':>9}")
    rng = np.random.default_rng(args.seed)
    sizes = [n for n in (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
             if n <= args.max_n]
    direct_rate = None                         # seconds per source-target pair
    for n in sizes:
        z, y, q = rng.normal(size=n), rng.normal(size=n), np.ones(n)
        fast, fast_s = timed(lambda: erfc_sum(z, q, y, args.eps))
        predicted = None if direct_rate is None else direct_rate * n * n
        if predicted is None or predicted <= args.direct_seconds:
            exact, direct_s = timed(lambda: erfc_sum(z, q, y, method="direct"), max_runs=3)
            direct_rate = direct_s / (n * n)
            error, note = np.max(np.abs(fast - exact)) / n, ""
            direct_text = f"{direct_s:10.3f} {direct_s / fast_s:9.0f}"
        else:
            pick = rng.choice(n, min(args.sample, n), replace=False)
            exact = erfc_sum(z, q, y[pick], method="direct")
            error, note = np.max(np.abs(fast[pick] - exact)) / n, " (sampled)"
            direct_text = (f"{'~' + format(predicted, '.0f'):>10} "
                           f"{'~' + format(predicted / fast_s, '.0f'):>9}")
        print(f"{n:9d} {fast_s:9.4f} {error / args.eps:15.2e} {direct_text}{note}")
    if sizes and sizes[-1] == 1_000_000:
        print(f"target: fast under {TARGET_SECONDS_AT_1E6} s at N = M = 10^6 "
              f"({'met' if fast_s < TARGET_SECONDS_AT_1E6 else 'NOT met'} in this run); "
              f"'~' marks direct times extrapolated as O(N^2) from the largest measured size")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
