"""Every learner on the shared real data, at the default stop and at a tight one.

For each set (benchmarks/real_data.py: the MSLR sample raw and query-normalised,
MQ2008 Fold1, Torgo's regression sets as one ranking), each learner and each C
of the grid, prints: iterations, CPU seconds, the objective's relative gap to a
tight solve (-e 1e-9 or its equivalent) and the test NDCG@10 (standard) and
pair accuracy of both.  With --anchors, LightGBM lambdarank and XGBoost
rank:ndcg (100 trees, one thread; benchmark-only dependencies, skipped when
not installed) on the same splits, their NDCG computed by rankfast.metrics too.

    python benchmarks/bench_real_data.py [--sets mslr,house_8l] [--learners prsvm,svmrank]
        [--C 0.001,0.01,...] [--anchors]

The README's promise ("the default -e ends within 1e-3 relative of the optimum")
is checked here on data nobody here generated: a gap above 1e-3 is marked "!".
"""
import argparse
import math
import os
import time

import numpy as np
import real_data

from rankfast import RankNCG, RankRLS, RankSVM, RankSVML1, metrics
from rankfast.data.normalize import query_min_max
from rankfast.learners._linear import query_weights, training_arrays
from rankfast.losses.erfc_pairs import KAPPA

TIGHT = {"prsvm": dict(tol=1e-9, max_iter=1000), "rankncg": dict(tol=1e-9, max_iter=20000),
         "svmrank": dict(tol=1e-6, solver="smoothing"), "rankrls": dict(solver="dense")}


def make(learner, C, **options):
    if learner == "prsvm":
        return RankSVM(C=C, n_jobs=1, **options)
    if learner == "rankncg":
        return RankNCG(C=C, n_jobs=1, erfc="fast", **options)
    if learner == "svmrank":
        return RankSVML1(C=C, n_jobs=1, **options)
    if learner == "rankrls":
        return RankRLS(C=C, n_jobs=1, **options)
    raise ValueError(learner)


def objective(learner, model, train):
    """The learner's training objective at its weights (exact, from the pairs for rankncg)."""
    if learner in ("prsvm", "svmrank"):
        return model.result_.f
    X, y, starts, used = training_arrays(train.features, train.y, train.qid)
    if model.normalizer_.kind == "query":
        X = query_min_max(X, np.repeat(np.arange(len(starts) - 1), np.diff(starts)))
    w = model.coef_[used]
    scores = np.asarray(X @ w).ravel()
    weight = query_weights(y, starts, model.C_, model.loss)
    if learner == "rankncg":
        from scipy.special import erfc
        total = 0.0
        for q in range(len(starts) - 1):
            s, labels = scores[starts[q]:starts[q + 1]], y[starts[q]:starts[q + 1]]
            for i in range(len(s)):            # each document's pairs with lower labels
                lower = labels < labels[i]
                x = KAPPA * (s[i] - s[lower])
                psi = (np.exp(-x * x) / math.sqrt(math.pi) - x * erfc(x)) / (2 * KAPPA)
                total += weight[q] * psi.sum()
        return 0.5 * (w @ w) + total
    r = y - scores                     # rankrls: Σ_q c_q Σ_{i<j} (r_i − r_j)²
    total = 0.0
    for q in range(len(starts) - 1):
        part = r[starts[q]:starts[q + 1]]
        total += weight[q] * (len(part) * (part @ part) - part.sum() ** 2)
    return 0.5 * (w @ w) + total


def fit(learner, C, train, **options):
    started = time.process_time()
    model = make(learner, C, **options).fit(train.features, train.y, train.qid)
    seconds = time.process_time() - started
    result = getattr(model, "result_", None)
    iterations = getattr(result, "iterations", 0) if result is not None else 0
    return model, iterations, seconds


def quality(model, test):
    return measured(model.predict(test.features, test.qid), test)


def measured(scores, test):
    """(NDCG@10 standard, pair accuracy): NDCG on graded labels (a continuous target is
    cut into 10 grades at its deciles), pair accuracy on the labels as they are."""
    return (metrics.ndcg(scores, grades(test.y), test.qid, 10, convention="standard"),
            metrics.pairwise_accuracy(scores, test.y, test.qid))


def grades(y):
    integral = np.all(y == np.round(y)) and y.max() <= 30
    return y if integral else _bins(y, y)


def run_learners(name, train, test, learners, grid, normalize):
    for learner in learners:
        for C in grid:
            model, its, secs = fit(learner, C, train, normalize=normalize)
            tight, tight_its, tight_secs = fit(learner, C, train, normalize=normalize,
                                               **TIGHT[learner])
            f, f_tight = objective(learner, model, train), objective(learner, tight, train)
            gap = (f - f_tight) / abs(f_tight) if f_tight else 0.0
            ndcg, acc = quality(model, test)
            ndcg_t, acc_t = quality(tight, test)
            mark = "!" if gap > 1e-3 else " "
            print(f"{name:14s} {learner:8s} {C:8g} {its:6d} {secs:7.2f}s {gap:10.2e}{mark} "
                  f"{ndcg:.4f} {acc:.4f} | tight {tight_its:6d} {tight_secs:7.2f}s "
                  f"{ndcg_t:.4f} {acc_t:.4f}", flush=True)


def run_anchors(name, train, test, normalize):
    for library in ("lightgbm", "xgboost"):
        try:
            module = __import__(library)
        except ImportError:
            print(f"{name:14s} {library}: not installed (pip install {library})")
            continue
        X, y, qid = _dense(train.features), train.y, train.qid
        X_test = _dense(test.features)
        if normalize == "query":
            X, X_test = query_min_max(X, qid), query_min_max(X_test, test.qid)
        sizes = np.diff(np.r_[0, np.flatnonzero(np.diff(qid)) + 1, len(qid)])
        labels = grades(y).astype(int)
        started = time.process_time()
        try:
            model = _anchor(module, library, X, labels, sizes)
        except Exception as exc:              # e.g. LightGBM: at most 10,000 rows a query
            print(f"{name:14s} {library}: refused: {str(exc).splitlines()[0]}")
            continue
        seconds = time.process_time() - started
        ndcg, accuracy = measured(model.predict(X_test), test)
        print(f"{name:14s} {library:8s} {'':8s} {100:6d} {seconds:7.2f}s {'':11s} "
              f"{ndcg:.4f} {accuracy:.4f}", flush=True)


def _anchor(module, library, X, labels, sizes):
    """LGBMRanker (lambdarank) or XGBRanker (rank:ndcg): 100 trees, one thread, fitted."""
    if library == "lightgbm":
        model = module.LGBMRanker(n_estimators=100, num_threads=1, verbose=-1,
                                  objective="lambdarank")
    else:
        model = module.XGBRanker(n_estimators=100, n_jobs=1, objective="rank:ndcg",
                                 tree_method="hist")
    return model.fit(X, labels, group=sizes)


def _dense(X):
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X)


def _bins(values, reference, n_bins=10):
    """Values of a continuous target as 0..n_bins-1 by the reference's quantiles (for the anchors)."""
    edges = np.quantile(reference, np.linspace(0, 1, n_bins + 1)[1:-1])
    return np.searchsorted(edges, values, side="right")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="mslr,mslr+query,mq2008,house_8l,cpu_act,abalone")
    parser.add_argument("--learners", default="prsvm,rankncg,svmrank,rankrls")
    parser.add_argument("--C", default="0.001,0.01,0.1,1,10,100,1000")
    parser.add_argument("--anchors", action="store_true")
    args = parser.parse_args()
    sets, learners = args.sets.split(","), [name for name in args.learners.split(",") if name]
    for name in sets:
        base, _, normalize = name.partition("+")
        if base not in real_data.SETS or normalize not in ("", "query"):
            parser.error(f"--sets: unknown set {name!r} (sets: {', '.join(real_data.SETS)}; "
                         "add +query for --normalize query)")
    for learner in learners:
        if learner not in TIGHT:
            parser.error(f"--learners: unknown learner {learner!r} (learners: {', '.join(TIGHT)})")
    if not real_data.available():
        raise SystemExit("bench_real_data: ../shared/data is not beside this checkout")
    grid = [float(c) for c in args.C.split(",")]
    print("load average at the start: %.2f %.2f %.2f" % os.getloadavg())
    print(f"{'set':14s} {'learner':8s} {'C':>8s} {'iters':>6s} {'CPU':>8s} {'gap':>10s}  "
          f"NDCG@10 pairacc | tight: iters, CPU, NDCG@10, pairacc")
    for name in sets:
        base, _, normalize = name.partition("+")
        train, test = real_data.SETS[base]()
        run_learners(name, train, test, learners, grid, normalize or "none")
        if args.anchors:
            run_anchors(name, train, test, normalize)
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
