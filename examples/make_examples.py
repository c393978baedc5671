#!/usr/bin/env python3
"""Write the example data set: a small LETOR-like train/test split with qids.

    python examples/make_examples.py [folder]

Also features.txt, the features' names one a line (rank_export --feature-names).

Each query has 5 to 40 documents with 20 features in [0, 1] (about a quarter
of them zero, so lines are sparse), graded relevance 0-2 from a hidden linear
model plus noise, and a LETOR-style '#docid = ...' comment.  The numbers come
from NumPy's legacy RandomState, whose stream never changes, so the files are
the same byte for byte on every machine.
"""
import os
import sys

import numpy as np

N_FEATURES = 20


def make_queries(rng, n_queries, first_qid, w_true):
    lines = []
    for qid in range(first_qid, first_qid + n_queries):
        m = rng.randint(5, 41)
        X = rng.uniform(0.0, 1.0, size=(m, N_FEATURES))
        X[rng.uniform(size=X.shape) < 0.25] = 0.0
        X = np.round(X, 6)
        utility = X @ w_true + rng.normal(0.0, 0.5, size=m)
        labels = np.digitize(utility, np.quantile(utility, [0.6, 0.85]))
        for k in range(m):
            features = " ".join(f"{j + 1}:{X[k, j]:.6g}" for j in np.flatnonzero(X[k]))
            lines.append(f"{labels[k]} qid:{qid} {features} #docid = Q{qid}-D{k}\n")
    return lines


def main(folder):
    rng = np.random.RandomState(20091)
    w_true = rng.normal(0.0, 1.0, size=N_FEATURES)
    w_true[rng.permutation(N_FEATURES)[:8]] = 0.0      # a few useless features
    train = make_queries(rng, 120, 1, w_true)
    test = make_queries(rng, 40, 1001, w_true)
    names = [f"feature_{j:02d}\n" for j in range(1, N_FEATURES + 1)]    # rank_export's names
    for name, lines in (("train.dat", train), ("test.dat", test), ("features.txt", names)):
        with open(os.path.join(folder, name), "w", newline="\n") as out:
            out.writelines(lines)
    print(f"wrote {len(train)} training and {len(test)} test documents and the feature names "
          f"to {folder}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
