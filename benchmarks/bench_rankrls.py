#!/usr/bin/env python3
"""RankRLS and greedy RankRLS speed (and greedy's peak memory) beside RLScore's figures.

    python benchmarks/bench_rankrls.py [--repeat 5] [--greedy-docs 200000] [--threads 1]

Three cases, data generated in memory (seeded): dense N(0, 1) features,
queries of 20 documents, relevance 0-4 by quantiles of a noisy linear utility.

fit     one RankRLS fit, 20,000 × 50, 1,000 queries (C = 1)
grid    RankRLS with 11 values of C (2^-10 .. 2^10) and exact leave-query-out
        CV for each (LQO pair loss and NDCG@10), same data
greedy  greedy RankRLS, k = 10, 200,000 × 200, 10,000 queries, run in a fresh
        Python process: seconds of the fit, and the process's peak RSS
        (VmHWM), in total and above its VmHWM once the data exist

fit and grid print the median and the best of --repeat runs after one
warm-up.  Beside each figure: RLScore's (0.16 s, 3.4 s, 55 s and 2.7 GB
peak), the target (grid 0.2 s; greedy at least 5x faster than RLScore and at
most half its peak memory) and the ratios.  --threads sets the BLAS threads
(OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS) of a child process
that runs every case; leave it out to keep the environment's.  Nothing is
asserted: the figures are for reading, and on a shared machine indicative.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))          # this checkout's rankfast, even if another is installed

RLSCORE = {"fit": 0.16, "grid": 3.4, "greedy": 55.0, "greedy_mb": 2700.0}
TARGET = {"grid": 0.2, "greedy": RLSCORE["greedy"] / 5, "greedy_mb": RLSCORE["greedy_mb"] / 2}
GRID = [2.0 ** e for e in range(-10, 11, 2)]                 # 11 values
DOCS_PER_QUERY = 20


def make_data(n, d, seed=0):
    """(X, y, qid): n × d dense N(0,1), 20 documents per query, labels 0-4."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    utility = X @ (rng.standard_normal(d) * (rng.random(d) < 0.3)) + rng.standard_normal(n)
    y = np.digitize(utility, np.quantile(utility, [0.5, 0.75, 0.9, 0.97])).astype(np.float64)
    return X, y, np.repeat(np.arange(n // DOCS_PER_QUERY + 1), DOCS_PER_QUERY)[:n]


def _vm_hwm_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def time_in_process(repeat):
    """{case: (median s, best s)} of fit and grid on 20,000 × 50."""
    from rankfast import RankRLS
    X, y, qid = make_data(20_000, 50)
    cases = {"fit": lambda: RankRLS(C=1.0).fit(X, y, qid),
             "grid": lambda: RankRLS(C=GRID).fit(X, y, qid)}
    out = {}
    for name, run in cases.items():
        run()
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        out[name] = (float(np.median(times)), min(times))
    return out


def greedy_child(n_docs):
    """Run in a fresh process: greedy k = 10 on n_docs × 200; prints one JSON line."""
    from rankfast import GreedyRankRLS
    X, y, qid = make_data(n_docs, 200, seed=1)
    base = _vm_hwm_mb()
    start = time.perf_counter()
    model = GreedyRankRLS(k=10, C=1.0).fit(X, y, qid)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_mb": _vm_hwm_mb(), "base_mb": base,
                      "selected": model.selected_.tolist()}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--greedy-docs", type=int, default=200_000)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--child", choices=("greedy", "timing"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child == "greedy":
        greedy_child(args.greedy_docs)
        return 0
    if args.child == "timing":
        print(json.dumps(time_in_process(args.repeat)))
        return 0

    env = dict(os.environ)
    if args.threads is not None:
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[name] = str(args.threads)

    def child(*extra):
        proc = subprocess.run([sys.executable, __file__, *extra], env=env, cwd=ROOT,
                              capture_output=True, text=True)
        if proc.returncode:
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"child {' '.join(extra)} failed")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    threads = args.threads if args.threads is not None else "environment's"
    print(f"BLAS threads: {threads}; {os.cpu_count()} CPUs; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    timing = child("--child", "timing", "--repeat", str(args.repeat))
    greedy = child("--child", "greedy", "--greedy-docs", str(args.greedy_docs))

    print(f"\n{'case':<34} {'rankfast':>10} {'best':>8} {'target':>8} {'RLScore':>8} "
          f"{'speed-up':>9} {'of target':>9}")

    def row(label, value, best, target, rlscore, unit="s"):
        vs_target = f"{value / target:9.2f}" if target else f"{'-':>9}"
        best_text = f"{best:8.3f}" if best is not None else f"{'-':>8}"
        target_text = f"{target:8.3g}" if target else f"{'-':>8}"
        print(f"{label:<34} {value:10.3f} {best_text} {target_text} "
              f"{rlscore:8.3g} {rlscore / value:8.1f}x {vs_target}  {unit}")

    row("fit 20,000 x 50 (1 C)", *timing["fit"], None, RLSCORE["fit"])
    row("grid 20,000 x 50 (11 C + LQO)", *timing["grid"], TARGET["grid"], RLSCORE["grid"])
    label = f"greedy k=10 {args.greedy_docs:,} x 200"
    row(label, greedy["seconds"], None, TARGET["greedy"], RLSCORE["greedy"])
    row("  peak RSS, whole process", greedy["peak_mb"], None, TARGET["greedy_mb"],
        RLSCORE["greedy_mb"], "MB")
    print(f"  (the data alone: {greedy['base_mb']:.0f} MB; the fit adds "
          f"{greedy['peak_mb'] - greedy['base_mb']:.0f} MB; selected "
          f"{','.join(map(str, greedy['selected']))})")
    print("\nspeed-up = RLScore / rankfast (memory: RLScore's peak / ours); "
          "'of target' = rankfast / target (<= 1 meets it).  fit and grid: median "
          f"of {args.repeat} runs after a warm-up, best beside it.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
