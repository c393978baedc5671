#!/usr/bin/env python3
"""PRSVM on LETOR 4.0 MQ2008: 5 folds, C chosen on validation by MAP, test MAP and NDCG@10.

    python benchmarks/bench_mq2008_prsvm.py

Prints the fold table beside LETOR's RankSVM baseline (mean MAP 0.4696,
NDCG@10 0.2279).  Metrics follow the LETOR 4.0 conventions (rankfast.metrics).
"""
import argparse
import time

import numpy as np
from mq2008 import LETOR_RANKSVM, available, fold

from rankfast import RankSVM, metrics

GRID = [10.0 ** e for e in range(-3, 4)]          # svm_rank's -c scale


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args(argv)  # --help
    if not available():
        raise SystemExit("../shared/data/mq2008 not found")
    print(f"{'fold':>4} {'C':>8} {'vali MAP':>9} {'test MAP':>9} {'NDCG@10':>8} {'train s':>8}")
    rows = []
    for k in range(1, 6):
        train, vali, test = fold(k)
        best = None
        for C in GRID:
            start = time.perf_counter()
            model = RankSVM(C=C).fit(train.X, train.y, train.qid)
            seconds = time.perf_counter() - start
            score = metrics.mean_average_precision(model.decision_function(vali.X), vali.y, vali.qid)
            if best is None or score > best[0]:
                best = (score, C, model, seconds)
        score, C, model, seconds = best
        s = model.decision_function(test.X)
        row = (metrics.mean_average_precision(s, test.y, test.qid), metrics.ndcg(s, test.y, test.qid, k=10))
        rows.append(row)
        print(f"{k:>4} {C:>8g} {score:>9.4f} {row[0]:>9.4f} {row[1]:>8.4f} {seconds:>8.3f}")
    mean = np.mean(rows, axis=0)
    print(f"mean {'':>8} {'':>9} {mean[0]:>9.4f} {mean[1]:>8.4f}")
    print(f"LETOR RankSVM baseline:    {LETOR_RANKSVM['MAP']:>9.4f} {LETOR_RANKSVM['NDCG@10']:>8.4f}"
          f"   (difference {mean[0] - LETOR_RANKSVM['MAP']:+.4f} MAP, "
          f"{mean[1] - LETOR_RANKSVM['NDCG@10']:+.4f} NDCG@10)")


if __name__ == "__main__":
    main()
