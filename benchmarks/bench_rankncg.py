"""Training time of RankNCG on one ranking of 20,000 items in 3 classes, fast beside direct.

Like the paper's California Housing run (20,640 items, 3 classes, 82M pairs; RankNCG
fast 46.86 s, WMW 0.979; direct did not finish).  Data sets:

house_8L   the first 20,000 rows of PMLB 218_house_8L (census house data, 8 features,
           the closest stand-in for California Housing in ../shared/data), target
           binned into 3 equal-size classes, features standardised;
synthetic  20,000 items, 9 N(0, 1) features, a linear score plus noise binned into
           3 equal-size classes (seeded).

Both learners use the paper's settings (CG tolerance 1e-3, erfc eps 1e-6) at C = 1.
The direct learner (exact O(m²) gradient, about 10 s per gradient here) runs in full
unless ``--quick``, which times one direct gradient and multiplies by the number of
gradients the fast run needed.  WMW is pairwise accuracy on the training ranking.
Target: fast under 5 s.

OPENBLAS_NUM_THREADS defaults to 1 here: on a shared 2-core machine OpenBLAS's own
threads made a 20,000-element dot product cost ~10 ms.  Timings are wall-clock and,
on a shared machine, indicative only.

Usage::

    python benchmarks/bench_rankncg.py            # about 10 minutes (two direct fits)
    python benchmarks/bench_rankncg.py --quick
"""
import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)                  # this checkout's rankfast, not an installed one

from rankfast import RankNCG, metrics  # noqa: E402
from rankfast.learners._linear import query_weights  # noqa: E402
from rankfast.losses.erfc_pairs import ErfcPairObjective  # noqa: E402

HOUSE = os.path.join(ROOT, "..", "shared", "data", "torgo_regression", "pmlb",
                     "218_house_8L.tsv.gz")
N_ITEMS, N_CLASSES, C = 20_000, 3, 1.0
TARGET_SECONDS = 5.0


def equal_bins(target, n_classes):
    """Classes 0 .. n_classes − 1 of (nearly) equal size by rank of the target."""
    order = np.argsort(target, kind="stable")
    classes = np.empty(len(target))
    classes[order] = np.arange(len(target)) * n_classes // len(target)
    return classes


def house(n_items):
    table = np.loadtxt(HOUSE, skiprows=1, delimiter="\t")[:n_items]
    X = table[:, :-1]
    return (X - X.mean(axis=0)) / X.std(axis=0), equal_bins(table[:, -1], N_CLASSES)


def synthetic(n_items, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_items, 9))
    return X, equal_bins(X @ rng.normal(size=9) + 0.5 * rng.normal(size=n_items), N_CLASSES)


def run(name, X, y, quick):
    qid = np.zeros(len(y))
    counts = np.bincount(y.astype(int))
    pairs = (len(y) ** 2 - (counts ** 2).sum()) // 2
    print(f"{name}: {X.shape[0]} items, {X.shape[1]} features, {len(counts)} classes, "
          f"{pairs:,} pairs")
    start = time.perf_counter()
    fast = RankNCG(C=C).fit(X, y, qid)
    fast_s = time.perf_counter() - start
    r = fast.result_
    print(f"  fast    {fast_s:9.2f} s  {r.iterations:3d} iterations {r.evaluations:3d} gradients  "
          f"WMW {metrics.pairwise_accuracy(X @ fast.weights_, y, qid):.4f}  ({r.message}) "
          f"[{'under' if fast_s < TARGET_SECONDS else 'OVER'} the {TARGET_SECONDS:g} s target]")
    if quick:
        objective = ErfcPairObjective(sp.csr_matrix(X), y, np.array([0, len(y)]),
                                      query_weights(y, np.array([0, len(y)]), C, 1), 1e-6, False)
        start = time.perf_counter()
        objective.score_gradient(X @ fast.weights_)
        per_gradient = time.perf_counter() - start
        print(f"  direct  {per_gradient * r.evaluations:9.0f} s  (estimated: {per_gradient:.2f} s "
              f"per exact gradient x {r.evaluations} gradients)  speed-up "
              f"~{per_gradient * r.evaluations / fast_s:.0f}")
        return
    start = time.perf_counter()
    direct = RankNCG(C=C, erfc="direct").fit(X, y, qid)
    direct_s = time.perf_counter() - start
    r = direct.result_
    print(f"  direct  {direct_s:9.2f} s  {r.iterations:3d} iterations "
          f"{r.evaluations:3d} gradients  "
          f"WMW {metrics.pairwise_accuracy(X @ direct.weights_, y, qid):.4f}  ({r.message})  "
          f"speed-up {direct_s / fast_s:.0f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="estimate the direct fit from one exact gradient")
    parser.add_argument("--items", type=int, default=N_ITEMS,
                        help=f"items in each ranking (default {N_ITEMS:,}, the size the "
                        "target is read at)")
    args = parser.parse_args(argv)
    print(f"RankNCG, C = {C:g}, tol 1e-3, erfc_eps 1e-6; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus (timings indicative only); "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    if os.path.exists(HOUSE):
        run("house_8L", *house(args.items), args.quick)
    else:
        print(f"house_8L: {HOUSE} not found, skipped")
    run("synthetic", *synthetic(args.items), args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
