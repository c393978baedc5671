"""RankSVM with kernel approximation on MQ2008: Nyström and RFF vs linear PRSVM.

Protocol (after Chen et al. 2017, Sect. 4, on a coarser grid): the five LETOR
4.0 folds of MQ2008 (Fold k trains on three S files, validates on the next,
tests on the last; see ../shared/data/README.md).  For each fold and method,
C and, for the kernel methods, the RBF γ are chosen by NDCG@10 on the
validation set, over the paper's C ∈ 2^-12 … 2^6 and γ ∈ 2^-12 … 2^2 (steps
``--c-step`` and ``--gamma-step`` in the exponent).  The paper's C multiplies
the sum over all pairs (Chapelle & Keerthi's PRSVM); rankfast's C is
svm_rank's, which multiplies the loss by C / Q (Q training queries), so the
learners get C_rankfast = Q · C_paper.  The table shows C_paper.  m =
``--landmarks`` (500) landmarks or random features drawn with each seed of
``--seeds`` (several: one table each, then the means over all seeds, which
separates the methods from the luck of one draw).  Each map is computed once
per γ and reused for every C during the search.

Reported per fold: test NDCG@10 and MAP (rankfast.metrics, LETOR convention:
a query without relevant document scores 0) of the chosen model, scored the
way rank_classify will score it (Nyström: the written SVM-light kernel model,
float32-rounded; RFF: RFFModel), and the wall-clock seconds of one training
run at the chosen parameters (the map included) from raw documents to model,
best of three runs.  Also timed: scoring ``--predict-docs`` documents (MQ2008
rows repeated) against m landmarks / random features.

With ``--oracle`` it also prints, per method, the single grid setting whose
mean *test* score over the folds is best.  That is chosen on the test folds, so
it is not a result but an upper bound on what any validation choice can reach
in expectation: when the kernel maps' bound is no higher than linear PRSVM's,
the kernel has nothing to add on this data, and the comparison of the chosen
models only measures selection noise.

Timings are indicative only: the machine has 2 cores shared with other jobs.
Prints a table; never asserts.

Usage::

    python benchmarks/bench_kernels.py
    python benchmarks/bench_kernels.py --folds 1 --c-step 3 --gamma-step 3 --predict-docs 0
    python benchmarks/bench_kernels.py --select map --seeds 0 1 2 3 4 --predict-docs 0
    python benchmarks/bench_kernels.py --oracle --c-step 1 --gamma-step 1 --predict-docs 0
    python benchmarks/bench_kernels.py --oracle --approx nystrom --landmarks 2000 --predict-docs 0
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from mq2008 import fold as mq2008_fold  # noqa: E402

from rankfast import (  # noqa: E402
    KernelApproxLearner,
    KernelParams,  # noqa: E402
    NystroemMap,
    RandomFourierMap,
    RankSVM,  # noqa: E402
    metrics,  # noqa: E402
)

TARGET_SECONDS = 3.0


def validation_score(scores, y, qid):
    """What the grid search maximises on validation (set by --select)."""
    if SELECT[0] == "map":
        return metrics.mean_average_precision(scores, y, qid)
    return ndcg10(scores, y, qid)


SELECT = ["ndcg"]
NAMES = {"nystrom": "Nystrom", "rff": "RFF"}


def ndcg10(scores, y, qid):
    return metrics.ndcg(scores, y, qid, k=10)


def powers(low, high, step):
    exponents = list(range(low, high + 1, step))
    if exponents[-1] != high:
        exponents.append(high)
    return [2.0 ** e for e in exponents]


def n_queries(data):
    return len(np.unique(data[2]))


def search_linear(train, vali, cs, oracle=None):
    """Best (vali score, C_paper) of linear PRSVM.

    With ``oracle`` = (test, dict), each setting's test (NDCG@10, MAP) is appended
    to dict[C] as well (for the --oracle diagnostic, never for the choice)."""
    best = (-1.0, None)
    for C in cs:
        learner = RankSVM(C=C * n_queries(train)).fit(*train)
        best = max(best, (validation_score(learner.decision_function(vali[0]), vali[1], vali[2]), C))
        if oracle:
            test, record = oracle
            record.setdefault(C, []).append(metrics_on(learner.decision_function(test[0]), test))
    return best


def search_kernel(approx, train, vali, cs, gammas, m, seed, oracle=None):
    """Best (vali score, γ, C_paper) of PRSVM on the Nyström / RFF map (one map per γ).

    ``oracle`` as in search_linear, keyed by (γ, C)."""
    best = (-1.0, None, None)
    for gamma in gammas:
        kernel = KernelParams(2, gamma=gamma)
        kind = NystroemMap if approx == "nystrom" else RandomFourierMap
        feature_map = kind(kernel, m, seed).fit(train[0])
        phi_train, phi_vali = feature_map.transform(train[0]), feature_map.transform(vali[0])
        phi_test = feature_map.transform(oracle[0][0]) if oracle else None
        for C in cs:
            learner = RankSVM(C=C * n_queries(train)).fit(phi_train, train[1], train[2])
            columns = learner.feature_ids_ - 1
            scores = phi_vali[:, columns] @ learner.weights_
            best = max(best, (validation_score(scores, vali[1], vali[2]), gamma, C))
            if oracle:
                test, record = oracle
                record.setdefault((gamma, C), []).append(
                    metrics_on(phi_test[:, columns] @ learner.weights_, test))
    return best


def metrics_on(scores, data):
    """(NDCG@10, MAP) of ``scores`` on data = (X, y, qid)."""
    return ndcg10(scores, data[1], data[2]), metrics.mean_average_precision(scores, data[1], data[2])


def final_run(make_learner, train, test, repeats=3):
    """Train from raw documents (best wall clock of ``repeats`` runs); score the test set."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        learner = make_learner().fit(*train)
        model = learner.to_model(n_features=train[0].shape[1], n_documents=train[0].shape[0])
        seconds.append(time.perf_counter() - start)
    seconds = min(seconds)
    scores = model.predict(test[0])
    return (*metrics_on(scores, test), seconds)


def log2(value):
    return f"2^{int(round(np.log2(value)))}"


def bench_prediction(n_docs, m, seed, approximations):
    """Seconds to score n_docs MQ2008-like documents with m landmarks / random features."""
    train = mq2008_fold(1)[0]
    X, y, qid = train.X, train.y, train.qid
    rows = np.arange(n_docs) % X.shape[0]
    big = X[rows]
    print(f"\nScoring {n_docs:,} documents x {X.shape[1]} features (MQ2008 rows repeated), "
          f"m = {m}, RBF gamma = 2^-3, wall clock:")
    for approx in approximations:
        learner = KernelApproxLearner(RankSVM(C=1.0), KernelParams(2, gamma=0.125), approx,
                                      m, seed).fit(X, y, qid)
        model = learner.to_model(n_features=X.shape[1], n_documents=X.shape[0])
        start = time.perf_counter()
        model.predict(big)
        print(f"  {type(model).__name__:<12} ({approx}) {time.perf_counter() - start:6.1f} s")


def fold_table(args, seed, cs, gammas, linear_rows, oracle=None):
    """Print the fold table for one landmark / random-feature seed; return its rows.

    ``linear_rows`` caches the linear PRSVM's results per fold (they do not depend on
    the seed).  With ``oracle`` (a dict), every grid setting's test scores are
    recorded in oracle["linear" | "nystrom" | "rff"] as well (oracle["linear"] is
    shared by the seeds, like ``linear_rows``)."""
    header = f"{'fold':<5}| {'linear PRSVM':^29}" + "".join(
        f" | {NAMES[approx] + ' + PRSVM':^38}" for approx in args.approx)
    sub = f"{'':<5}| {'NDCG@10':>7} {'MAP':>6} {'s':>5} {'C':>6}" + "".join(
        f" | {'NDCG@10':>7} {'MAP':>6} {'s':>5} {'gamma':>6} {'C':>6}" for _ in args.approx)
    print(f"seed {seed}:")
    print(header)
    print(sub)
    print("-" * len(sub))
    rows = []
    for fold in args.folds:
        train, vali, test = ((d.X, d.y, d.qid) for d in mq2008_fold(fold))
        if fold not in linear_rows:
            _, c_lin = search_linear(train, vali, cs,
                                     (test, oracle["linear"]) if oracle is not None else None)
            lin = final_run(lambda: RankSVM(C=c_lin * n_queries(train)), train, test)
            linear_rows[fold] = (lin, f"{lin[0]:7.4f} {lin[1]:6.4f} {lin[2]:5.2f} {log2(c_lin):>6}")
        lin, cell = linear_rows[fold]
        cells, row = [cell], [*lin]
        for approx in args.approx:
            _, gamma, C = search_kernel(approx, train, vali, cs, gammas, args.landmarks, seed,
                                        (test, oracle.setdefault(approx, {}))
                                        if oracle is not None else None)
            kernel = KernelParams(2, gamma=gamma)
            result = final_run(lambda: KernelApproxLearner(RankSVM(C=C * n_queries(train)),
                                                           kernel, approx, args.landmarks, seed),
                               train, test)
            cells.append(f"{result[0]:7.4f} {result[1]:6.4f} {result[2]:5.2f} {log2(gamma):>6} "
                         f"{log2(C):>6}")
            row.extend(result)
        rows.append(row)
        print(f"{fold:<5}| " + " | ".join(cells), flush=True)
    mean = np.mean(rows, axis=0)
    print("-" * len(sub))
    print(f"{'mean':<5}| {mean[0]:7.4f} {mean[1]:6.4f} {mean[2]:5.2f} {'':>6}" + "".join(
        f" | {mean[at]:7.4f} {mean[at + 1]:6.4f} {mean[at + 2]:5.2f} {'':>6} {'':>6}"
        for at in range(3, len(mean), 3)) + "\n")
    return rows


def oracle_report(oracle, label):
    """Best single grid setting per method by mean *test* score: an upper bound.

    No validation choice can beat, in expectation, the setting that is best on
    the test folds themselves; if the kernel maps' bound is no higher than the
    linear model's, the kernel has nothing to add on this data."""
    print(f"Oracle ({label}): the one grid setting with the best mean test score over "
          f"the folds (chosen on test, so an upper bound, not a result):")
    for name, record in oracle.items():
        means = {setting: np.mean(scores, axis=0) for setting, scores in record.items()}
        for at, metric in ((0, "NDCG@10"), (1, "MAP")):
            setting = max(means, key=lambda key: means[key][at])
            where = (f"gamma {log2(setting[0])}, C {log2(setting[1])}" if isinstance(setting, tuple)
                     else f"C {log2(setting)}")
            print(f"  {name:<8} best {metric:<7} {means[setting][at]:.4f} "
                  f"(other metric {means[setting][1 - at]:.4f}) at {where}")


def verdict(rows, approximations, label):
    """One line per kernel method: mean test NDCG@10 and MAP against linear PRSVM."""
    mean = np.mean(rows, axis=0)
    for i, approx in enumerate(approximations):
        name, at = NAMES[approx], 3 + 3 * i
        ok = mean[at] >= mean[0] and mean[at + 1] >= mean[1]
        print(f"{name} ({label}): mean test NDCG@10 {mean[at]:.4f} vs linear {mean[0]:.4f}, "
              f"MAP {mean[at + 1]:.4f} vs {mean[1]:.4f}: "
              f"{'at least linear on both' if ok else 'below linear on at least one'}; "
              f"slowest training run {max(r[at + 2] for r in rows):.2f} s "
              f"(target {TARGET_SECONDS:.0f} s)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, nargs="*", default=[1, 2, 3, 4, 5])
    parser.add_argument("--landmarks", type=int, default=500)
    parser.add_argument("--approx", nargs="+", choices=list(NAMES), default=list(NAMES),
                        help="the kernel maps to compare with linear PRSVM (default both)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="landmark / random-feature seeds; each gets its own fold table, "
                             "and with several the means over seeds are printed too")
    parser.add_argument("--c-step", type=int, default=3, help="step of log2 C in the grid")
    parser.add_argument("--gamma-step", type=int, default=2, help="step of log2 gamma")
    parser.add_argument("--predict-docs", type=int, default=1_000_000)
    parser.add_argument("--select", choices=["ndcg", "map"], default="ndcg",
                        help="validation criterion: NDCG@10 (default) or MAP")
    parser.add_argument("--oracle", action="store_true",
                        help="also print each method's best single grid setting by mean "
                             "test score (an upper bound on what any choice can reach)")
    args = parser.parse_args(argv)
    SELECT[0] = args.select
    cs, gammas = powers(-12, 6, args.c_step), powers(-12, 2, args.gamma_step)
    print(f"MQ2008, 5-fold LETOR protocol; m = {args.landmarks}, seeds "
          f"{' '.join(map(str, args.seeds))}; grid "
          f"C_paper in {{{', '.join(map(log2, cs))}}} (rankfast's C = Q_train * C_paper), "
          f"gamma in {{{', '.join(map(log2, gammas))}}}; chosen by validation "
          f"{'MAP' if args.select == 'map' else 'NDCG@10'}.\n"
          f"Times: wall-clock seconds of one training run at the chosen parameters (map "
          f"included), best of 3; 2 cores shared with other jobs, indicative only; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}.\n")
    linear_rows, linear_oracle, all_rows = {}, {}, []
    for seed in args.seeds:
        oracle = {"linear": linear_oracle} if args.oracle else None
        rows = fold_table(args, seed, cs, gammas, linear_rows, oracle)
        verdict(rows, args.approx, f"seed {seed}")
        if oracle:
            oracle_report(oracle, f"seed {seed}")
        print()
        all_rows.extend(rows)
    if len(args.seeds) > 1:
        verdict(all_rows, args.approx, f"mean over {len(args.seeds)} seeds")
    if args.predict_docs:
        bench_prediction(args.predict_docs, args.landmarks, args.seeds[0], args.approx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
