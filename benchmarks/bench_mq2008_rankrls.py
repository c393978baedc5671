#!/usr/bin/env python3
"""RankRLS and greedy RankRLS on LETOR 4.0 MQ2008, five folds, beside Pahikkala et al. (2010).

    python benchmarks/bench_mq2008_rankrls.py [--loss 1|2] [--cs 2^-12..2^14]

Data: ../shared/data/mq2008/S1..S5 read in place with rankfast.load_svmlight;
fold k trains on three partitions, validates on the next and tests on the one
after (LETOR's layout, see ../shared/data/README.md).

RankRLS: every C of the grid in one eigendecomposition (RankRLS(C=[...])),
the C with the best validation MAP kept.  Greedy RankRLS: for every C, all 46
features selected in order; the pair (C, k) with the best validation MAP kept
(ties: the smaller C, then the smaller k), the model being the first k
selected features with the weights of that step.  MAP and NDCG@10 follow the
LETOR 4.0 evaluation script (rankfast.metrics' default), as the paper's
tables do.  Printed: per fold the chosen C (and k), test MAP and NDCG@10, the
selected features; the means beside the paper's (MAP 0.4720 greedy, 0.4719
RankRLS; NDCG@10 0.2251 and 0.2268), and whether feature 39 comes first on
every fold (the paper's finding).  Nothing is asserted.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))          # this checkout's rankfast, even if another is installed

from mq2008 import DATA, FOLDS, available, fold  # noqa: E402

from rankfast import GreedyRankRLS, RankRLS, metrics  # noqa: E402

PAPER = {"greedy": {"MAP": [0.4311, 0.4239, 0.4582, 0.5283, 0.5183],
                    "NDCG@10": [0.1920, 0.1585, 0.2558, 0.2940, 0.2254]},
         "rankrls": {"MAP": [0.4524, 0.4300, 0.4542, 0.5225, 0.5006],
                     "NDCG@10": [0.2145, 0.1669, 0.2489, 0.2874, 0.2165]}}
PAPER_SELECTED = {1: [39], 2: [39, 23, 37, 32], 3: [39, 29, 25, 23, 46, 37, 19],
                  4: [39, 29, 25, 23], 5: [39]}
N_FEATURES = 46


def scores_of(X, ids, weights):
    w = np.zeros(X.shape[1])
    w[np.asarray(ids) - 1] = weights
    return X @ w


def evaluate(X, y, qid, ids, weights):
    s = scores_of(X, ids, weights)
    return metrics.mean_average_precision(s, y, qid), metrics.ndcg(s, y, qid, k=10)


def run_fold(k, grid, loss):
    (X, y, qid), (Xv, yv, qv), (Xt, yt, qt) = ((d.X, d.y, d.qid) for d in fold(k))

    rls = RankRLS(C=grid, loss=loss).fit(X, y, qid)
    vali_map = [evaluate(Xv, yv, qv, rls.feature_ids_, w)[0] for w in rls.weights_by_C_]
    best = int(np.argmax(vali_map))
    rls_row = {"C": rls.cv_table_[best]["C"], "vali": vali_map[best],
               "test": evaluate(Xt, yt, qt, rls.feature_ids_, rls.weights_by_C_[best])}

    greedy_best = None
    for C in grid:
        model = GreedyRankRLS(k=N_FEATURES, C=C, loss=loss).fit(X, y, qid)
        for step, w in enumerate(model.weights_path_, start=1):
            ids = model.selected_[:step]
            v = evaluate(Xv, yv, qv, ids, w)[0]
            if greedy_best is None or v > greedy_best["vali"]:
                greedy_best = {"C": C, "k": step, "vali": v, "ids": ids.tolist(),
                               "test": evaluate(Xt, yt, qt, ids, w)}
    return rls_row, greedy_best


def parse_grid(text):
    """'2^-8..2^14' (every power of two between) or a comma-separated list."""
    if ".." in text:
        lo, hi = (int(part.split("^")[1]) for part in text.split(".."))
        return [2.0 ** e for e in range(lo, hi + 1)]
    return [float(part) for part in text.split(",")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loss", type=int, choices=(1, 2), default=1)
    parser.add_argument("--cs", default="2^-12..2^14")
    args = parser.parse_args(argv)
    if not available():
        print(f"MQ2008 is not available in {DATA}")
        return 1
    grid = parse_grid(args.cs)
    print(f"MQ2008, -l {args.loss}, {len(grid)} values of C from {grid[0]:g} to {grid[-1]:g}; "
          f"C and k chosen by validation MAP; test MAP / NDCG@10 (LETOR 4.0 script)\n")
    print(f"{'fold':<5} {'RankRLS C':>10} {'MAP':>7} {'NDCG@10':>8} {'paper MAP':>9} | "
          f"{'greedy C':>9} {'k':>3} {'MAP':>7} {'NDCG@10':>8} {'paper MAP':>9}  "
          "selected (paper's)")
    results = {"rankrls": [], "greedy": []}
    first = []
    start = time.perf_counter()
    for k in FOLDS:
        rls, greedy = run_fold(k, grid, args.loss)
        results["rankrls"].append(rls["test"])
        results["greedy"].append(greedy["test"])
        first.append(greedy["ids"][0])
        print(f"{k:<5} {rls['C']:>10.4g} {rls['test'][0]:7.4f} {rls['test'][1]:8.4f} "
              f"{PAPER['rankrls']['MAP'][k - 1]:9.4f} | {greedy['C']:>9.4g} {greedy['k']:>3} "
              f"{greedy['test'][0]:7.4f} {greedy['test'][1]:8.4f} "
              f"{PAPER['greedy']['MAP'][k - 1]:9.4f}  {','.join(map(str, greedy['ids'][:10]))}"
              f"{',...' if len(greedy['ids']) > 10 else ''} "
              f"({','.join(map(str, PAPER_SELECTED[k]))})")
    print()
    for name, label in (("rankrls", "RankRLS"), ("greedy", "greedy RankRLS")):
        got = np.mean(results[name], axis=0)
        paper = [np.mean(PAPER[name]["MAP"]), np.mean(PAPER[name]["NDCG@10"])]
        close = "yes" if abs(got[0] - paper[0]) <= 0.005 else "no"
        print(f"{label:<15} mean test MAP {got[0]:.4f} (paper {paper[0]:.4f}, difference "
              f"{got[0] - paper[0]:+.4f}, within 0.005: {close})   "
              f"NDCG@10 {got[1]:.4f} (paper {paper[1]:.4f})")
    print(f"feature 39 first on every fold of the chosen greedy models: "
          f"{'yes' if all(f == 39 for f in first) else 'no'} ({','.join(map(str, first))})")
    print(f"{time.perf_counter() - start:.1f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
