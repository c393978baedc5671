"""Part of Table 3 of Raykar et al. (2008): RankNCG's generalised WMW on Torgo's regression sets.

Protocol, as in Sect. 6 of the paper.  Each data set is one ranking.  Its target is
binned into S classes of equal size (S from the paper's Table 1) by rank, ties broken
by a seeded shuffle.  That is what Table 1's M (pairs per training fold) shows for
Abalone: 3,713,729 in the paper, 3.72M here; keeping tied targets in one class would
give 3.54M, equal-width bins 2.58M.  For the smaller sets the paper's M is 5-18% below
any of these, so its binning there is not known; M is printed beside the paper's.  Five
outer folds: each trains on 80% and tests on the other 20% (fold assignment seeded).
On every training part, C (λ = 1 / C for one ranking) is chosen from 10^-3 … 10^3 by
an inner five-fold cross-validation maximising WMW; features are standardised with
the training part's mean and deviation.  RankNCG runs with the paper's settings: CG
tolerance 1e-3, erfc eps 1e-6 (``--direct`` adds the exact-gradient learner,
``--prsvm`` rankfast's primal RankSVM with the same protocol, for context;
``--nystrom`` PRSVM on a Nyström RBF map, m = 500 landmarks, its γ chosen with C
by the same inner cross-validation from 2^-9 … 2^-1: a non-linear ranker, to show
where a set holds ranking signal no linear model sees).  WMW is
the pairwise accuracy of the full order graph on the test part (rankfast.metrics;
ties in score count as wrong, the paper counts them right: with real-valued scores
this makes no difference).  Printed: mean ± standard deviation (ddof = 1) over the
five folds, beside the paper's RankNCG-fast column (and its direct column).

Column "ceiling": what a linear ranker can reach on the set at all.  rankfast's
primal RankSVM is trained on the whole standardised set and scored on that same set
(in-sample, nothing held out), best over C in 1, 10^2, 10^4.  A held-out mean above
it would mean a linear model predicting unseen items better than the best linear
fit to all of them; where the paper's figure sits above the ceiling, no linear
ranker can reproduce it on this data with this binning.  Column "ceil.w" is the
same ceiling with S bins of equal width instead (the other reading of "equal sized
bins"), for the case that the paper binned that way.

The paper's numbers were read from Table 3 of the text in shared/seeds (rows 1-8, 11;
the text is intact there).  Its data sets: 1 Diabetes, 2 Pyrimidines, 3 Triazines,
4 Wisconsin Breast Cancer, 5 Machine-CPU, 6 Auto-MPG, 7 Boston Housing, 8 Airplane
Companies (Torgo's "stock" domain: 950 rows, 9 companies' prices predicting a 10th),
11 Abalone.  Table 1's d counts the target column too (Boston: 13 features, d = 14).

Usage::

    python benchmarks/bench_table3.py                  # a few minutes
    python benchmarks/bench_table3.py --direct --prsvm --only abalone,boston
    python benchmarks/bench_table3.py --prsvm --nystrom --only boston,auto_mpg
"""
import argparse
import gzip
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # see bench_rankncg.py

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)                  # this checkout's rankfast, not an installed one

from rankfast import KernelApproxLearner, KernelParams, RankNCG, RankSVM, metrics  # noqa: E402

DATA = os.path.join(ROOT, "..", "shared", "data", "torgo_regression", "chu_wei")
C_GRID = 10.0 ** np.arange(-3, 4)
GAMMA_GRID = 2.0 ** np.arange(-9, 0, 2)     # RBF γ on standardised features (--nystrom)
LANDMARKS = 500
CEILING_C = (1.0, 1e2, 1e4)
FOLDS = 5

# name: (file, S, row of Tables 1 and 3, Table 1's M, paper's RankNCG fast (mean, std),
#        RankNCG direct (mean, std), RankSVM linear (mean, std; None: not run))
SETS = {
    "diabetes": ("diabetes.data.gz", 2, 1, 272, (0.650, 0.210), (0.677, 0.233), (0.545, 0.236)),
    "pyrimidines": ("pyrimidines.data.gz", 3, 2, 1113, (0.948, 0.077), (0.987, 0.019),
                    (0.973, 0.048)),
    "triazines": ("triazines.data.gz", 4, 3, 7674, (0.914, 0.047), (0.942, 0.044),
                  (0.934, 0.019)),
    "wisconsin": ("wisconsin_wpbc.data.gz", 4, 4, 8162, (0.771, 0.046), (0.764, 0.028),
                  (0.793, 0.018)),
    "machine_cpu": ("machine_cpu.data.gz", 4, 5, 9820, (0.938, 0.020), (0.920, 0.015),
                    (0.929, 0.026)),
    "auto_mpg": ("auto_mpg.data.gz", 3, 6, 30057, (0.998, 0.002), (0.999, 0.002),
                 (0.998, 0.002)),
    "boston": ("boston_housing.data.gz", 2, 7, 33693, (1.000, 0.000), (1.000, 0.000),
               (1.000, 0.000)),
    "airplane": ("stock.data.gz", 5, 8, 217301, (0.984, 0.003), (0.984, 0.004), (0.984, 0.004)),
    "abalone": ("abalone.data.gz", 3, 11, 3713729, (0.534, 0.008), (0.536, 0.011), None),
}


def load(filename):
    """(X, target): delimited numbers (commas, tabs or blanks), target in the last column."""
    with gzip.open(os.path.join(DATA, filename), "rt") as f:
        rows = [line.replace(",", " ").split() for line in f if line.strip()]
    table = np.array(rows, dtype=np.float64)
    return table[:, :-1], table[:, -1]


def bin_target(target, n_classes, rng):
    """S classes of equal size (±1) by rank of the target, ties in a seeded random order."""
    shuffle = rng.permutation(len(target))
    order = shuffle[np.argsort(target[shuffle], kind="stable")]
    classes = np.empty(len(target))
    classes[order] = np.arange(len(target)) * n_classes // len(target)
    return classes


def bin_width(target, n_classes):
    """S classes of equal width over the target's range."""
    edges = np.linspace(target.min(), target.max(), n_classes + 1)[1:-1]
    return np.searchsorted(edges, target, side="right").astype(np.float64)


def folds(n, rng):
    """Fold number of each item: a seeded permutation dealt into FOLDS parts."""
    fold = np.empty(n, dtype=np.int64)
    fold[rng.permutation(n)] = np.arange(n) % FOLDS
    return fold


def standardised(train, test):
    mean, std = train.mean(axis=0), train.std(axis=0)
    std[std == 0] = 1.0
    return (train - mean) / std, (test - mean) / std


def wmw(model, X, y):
    return metrics.pairwise_accuracy(model.decision_function(X), y, np.zeros(len(y)))


def settings(method):
    """The (C, γ) the inner cross-validation chooses among (γ only for --nystrom)."""
    gammas = GAMMA_GRID if method == "nystrom" else [None]
    return [(C, gamma) for gamma in gammas for C in C_GRID]


def fit(X, y, setting, method):
    C, gamma = setting
    if method == "nystrom":
        learner = KernelApproxLearner(RankSVM(C=C), KernelParams(2, gamma=gamma), "nystrom",
                                      LANDMARKS, seed=0)
    elif method == "prsvm":
        learner = RankSVM(C=C)
    else:
        learner = RankNCG(C=C, erfc=method)
    return learner.fit(X, y, np.zeros(len(y)))


def linear_ceiling(X, y):
    """In-sample WMW of the best linear fit to the whole set (see "ceiling" above)."""
    Xs, _ = standardised(X, X)
    return max(wmw(fit(Xs, y, (C, None), "prsvm"), Xs, y) for C in CEILING_C)


def choose_setting(X, y, method, rng):
    """(C, γ) with the best mean WMW over an inner five-fold cross-validation."""
    fold = folds(len(y), rng)
    grid, scores = settings(method), []
    for setting in grid:
        values = []
        for k in range(FOLDS):
            train, test = standardised(X[fold != k], X[fold == k])
            values.append(wmw(fit(train, y[fold != k], setting, method), test, y[fold == k]))
        scores.append(np.nanmean(values))
    return grid[int(np.nanargmax(scores))]


def pairs(y):
    sizes = np.bincount(y.astype(int))
    return (len(y) ** 2 - int((sizes ** 2).sum())) // 2


def evaluate(name, method, seed):
    filename, n_classes = SETS[name][:2]
    X, target = load(filename)
    rng = np.random.default_rng(seed)
    y = bin_target(target, n_classes, rng)
    fold = folds(len(y), rng)
    results, chosen, seconds, train_pairs = [], [], [], []
    for k in range(FOLDS):
        inside, outside = fold != k, fold == k
        setting = choose_setting(X[inside], y[inside], method, rng)
        train, test = standardised(X[inside], X[outside])
        train_pairs.append(pairs(y[inside]))
        start = time.perf_counter()
        model = fit(train, y[inside], setting, method)
        seconds.append(time.perf_counter() - start)
        results.append(wmw(model, test, y[outside]))
        chosen.append(setting[0])
    return X.shape, np.mean(train_pairs), np.array(results), chosen, np.mean(seconds)


def ceilings(name, seed):
    """The linear ceilings of a set: equal-size bins (as evaluate bins) and equal-width."""
    filename, n_classes = SETS[name][:2]
    X, target = load(filename)
    y = bin_target(target, n_classes, np.random.default_rng(seed))
    return linear_ceiling(X, y), linear_ceiling(X, bin_width(target, n_classes))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--direct", action="store_true", help="also the exact-gradient learner")
    parser.add_argument("--prsvm", action="store_true", help="also rankfast's primal RankSVM")
    parser.add_argument("--nystrom", action="store_true",
                        help="also PRSVM on a Nystrom RBF map (gamma chosen with C)")
    parser.add_argument("--only", default="", help="comma-separated subset of " + ",".join(SETS))
    parser.add_argument("--seed", type=int, default=2008)
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(SETS)
    unknown = set(names) - set(SETS)
    if unknown:
        parser.error(f"unknown data set(s): {', '.join(sorted(unknown))}")
    methods = (["fast"] + ["direct"] * args.direct + ["prsvm"] * args.prsvm
               + ["nystrom"] * args.nystrom)
    print(f"Table 3 (part): test WMW, mean ± std over {FOLDS} folds (80/20), C by inner "
          f"{FOLDS}-fold CV over {C_GRID.min():g} … {C_GRID.max():g}"
          f"{' (nystrom: with gamma 2^-9 … 2^-1)' if args.nystrom else ''}; load average "
          f"{os.getloadavg()[0]:.2f} (times indicative only)")
    header = f"{'#':>2} {'data set':12} {'N':>5} {'d':>3} {'S':>2} {'M':>9} {'paper M':>9}"
    for method in methods:
        header += f" {'rankfast ' + method:>17} {'s/fit':>6}"
    header += (f" {'ceiling':>7} {'ceil.w':>6} {'paper fast':>15} {'paper direct':>15} {'paper RankSVM':>15}"
               "  chosen C (fast)")
    print(header)
    for name in names:
        _, n_classes, row, paper_m, paper_fast, paper_direct, paper_svm = SETS[name]
        line, chosen_fast = "", None
        for method in methods:
            shape, m, results, chosen, seconds = evaluate(name, method, args.seed)
            chosen_fast = chosen_fast or chosen
            line += f" {results.mean():9.3f} ± {results.std(ddof=1):5.3f} {seconds:6.2f}"
        svm = f"{paper_svm[0]:7.3f} ± {paper_svm[1]:5.3f}" if paper_svm else f"{'*':>15}"
        ceiling, ceiling_width = ceilings(name, args.seed)
        print(f"{row:2d} {name:12} {shape[0]:5d} {shape[1]:3d} {n_classes:2d} {m:9.0f} "
              f"{paper_m:9d}{line} {ceiling:7.3f} {ceiling_width:6.3f} "
              f"{paper_fast[0]:7.3f} ± {paper_fast[1]:5.3f} "
              f"{paper_direct[0]:7.3f} ± {paper_direct[1]:5.3f} {svm}  "
              f"{' '.join(f'{c:g}' for c in chosen_fast)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
