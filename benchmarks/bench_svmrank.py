#!/usr/bin/env python3
"""svm_rank's own objective (-a svmrank, OCAS): speed and agreement against svm_rank.

    python benchmarks/bench_svmrank.py [--sizes 100k,500k] [--cs 0.01,1,100] [--reference]

Speed: the data of svm_rank's scaling runs (../shared/reference/svm_rank/scaling:
dense, 50 N(0,1) features, 50 documents per query, gen_data.py with seed 12 for
100k and 13 for 500k), regenerated into benchmarks/_work/ by bench_prsvm's
generator, which draws the same numbers as gen_data.py.  Per (n, C), in process:
reading, solving (wall and CPU), OCAS iterations, our objective F and its
certified gap, and the whole `rank_learn -a svmrank` process (start-up, reading,
training, writing the model), beside svm_rank's recorded figures quoted as recorded (wall of the
whole run, its "Runtime in cpu-seconds" without I/O, iterations, its objective
"pval" at its model), the ratios, and F − pval against svm_rank's tolerance C ε'.

--reference: the agreement table on svm_rank's reference models (example3 and the
synthetic dense and sparse sets at their recorded C): objectives (svm_rank's
computed from its model file by rankfast.objective), max |Δw| / ‖w‖, and the
test loss (fraction of swapped pairs) of both models.
Nothing is asserted: the figures are for reading.
"""
import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))          # this checkout's rankfast, even if another is installed
from bench_prsvm import SIZES, WORK, make_file, run_process  # noqa: E402  (same generator as gen_data.py)

REFERENCE = ROOT.parent / "shared" / "reference" / "svm_rank"
SEEDS = {"10k": 11, "100k": 12, "500k": 13}         # run_scaling.sh's seeds


def recorded(label, C):
    """svm_rank's recorded run: (wall s, user + sys s, cpu s without I/O, iterations, pval) or None."""
    stdout = REFERENCE / "scaling" / f"dense_{label}_c{C}.stdout"
    timing = REFERENCE / "scaling" / f"dense_{label}_c{C}.time"
    if not (stdout.exists() and timing.exists()):
        return None
    text, times = stdout.read_text(), timing.read_text()
    clock = re.search(r"Elapsed \(wall clock\) time.*: ([0-9:.]+)", times).group(1).split(":")
    wall = sum(float(part) * 60 ** k for k, part in enumerate(reversed(clock)))
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): ([0-9.]+)", times).group(1))
              for kind in ("User", "System"))
    return (wall, cpu, float(re.search(r"Runtime in cpu-seconds: ([0-9.]+)", text).group(1)),
            int(re.search(r"Number of iterations: (\d+)", text).group(1)),
            float(re.search(r"pval=([0-9.]+)", text).group(1)))


def speed(sizes, cs):
    import rankfast
    from rankfast.svmrank import RankSVML1
    WORK.mkdir(exist_ok=True)
    print(f"{'n':>5} {'C':>5} | {'read s':>6} {'solve s':>7} {'cpu s':>6} {'iters':>5} "
          f"{'F':>14} {'gap':>9} {'process':>14} | {'svm_rank wall':>13} {'cpu':>6} "
          f"{'cpu(no IO)':>10} {'iters':>5} {'pval':>14} | {'cpu':>7} {'wall':>6} "
          f"{'solve':>6} {'F - pval':>10} {'C eps':>9}")
    learn = [sys.executable, str(ROOT / "rank_learn"), "-a", "svmrank", "-v", "0"]
    for label in sizes:
        path = WORK / f"svmrank_dense_{label}_seed{SEEDS[label]}.dat"
        if not path.exists():
            make_file(SIZES[label], path, seed=SEEDS[label])
        t = time.perf_counter()
        data = rankfast.load_svmlight(path)
        read = time.perf_counter() - t
        for C in cs:
            wall, cpu = time.perf_counter(), time.process_time()
            est = RankSVML1(C=float(C)).fit(data.X, data.y, data.qid)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            r = est.result_
            p_wall, p_cpu, _ = run_process(learn + ["-c", C, str(path),
                                                    str(WORK / "svmrank_model.dat")])
            theirs = recorded(label, C)
            ours = (f"{label:>5} {C:>5} | {read:>6.2f} {wall:>7.2f} {cpu:>6.2f} {r.iterations:>5} "
                    f"{r.f:>14.5f} {r.gap:>9.3g} {p_wall:>6.2f}s/{p_cpu:>5.2f}c |")
            if theirs is None:
                print(ours + " (no recorded svm_rank run)")
                continue
            t_wall, t_cpu, t_solve, t_iters, pval = theirs
            print(ours + f" {t_wall:>12.2f}s {t_cpu:>6.2f} {t_solve:>10.2f} {t_iters:>5} "
                  f"{pval:>14.5f} | {t_cpu / p_cpu:>6.1f}x {t_wall / p_wall:>5.1f}x "
                  f"{t_solve / cpu:>5.1f}x {r.f - pval:>10.4g} {r.target:>9.4g}")
    print("\nprocess: our whole rank_learn run, wall s / CPU s.  Ratios, svm_rank's recorded figure"
          "\nover ours: cpu = its user + sys over our process's CPU; wall = its wall over our"
          "\nprocess's wall (swings with the load); solve = its 'Runtime in cpu-seconds' (no I/O)"
          "\nover our solve's CPU seconds.  F - pval ≤ 0: our objective is below svm_rank's at its"
          "\nmodel; the certified gap bounds F − F*; svm_rank's own guarantee is F − F* ≤ C eps.")


def agreement():
    import rankfast
    from rankfast import metrics
    from rankfast.svmrank import RankSVML1
    runs = [("example3", "train.dat", "test.dat", f"model_{name}.dat",
             f"classify_test_{name}.stdout", C, loss, name)
            for name, C, loss in (("c0.01", 0.01, 1), ("c1", 1, 1), ("c3", 3, 1),
                                  ("c20", 20, 1), ("c3_l2", 3, 2))]
    runs += [("synthetic", f"{kind}_train.dat.gz", f"{kind}_test.dat.gz", f"{kind}_c{C}.model",
              f"{kind}_classify_c{C}.stdout", C, 1, f"{kind} c{C}")
             for kind in ("dense", "sparse") for C in (0.01, 1, 20)]
    print(f"{'run':>13} | {'F ours':>14} {'F svm_rank':>14} {'diff':>10} {'C eps':>9} "
          f"{'gap':>9} | {'max|dw|/|w|':>11} | {'test loss ours':>14} {'svm_rank':>8}")
    cache = {}
    for folder, train_name, test_name, model, classify, C, loss, name in runs:
        base = REFERENCE / folder
        if train_name not in cache:
            cache[train_name] = (rankfast.load_svmlight(base / train_name),
                                 rankfast.load_svmlight(base / test_name))
        train, test = cache[train_name]
        theirs = rankfast.read_model(base / model)
        est = RankSVML1(C=C, loss=loss).fit(train.X, train.y, train.qid)
        ours = est.to_model(train.n_features)
        r = est.result_
        f_theirs = rankfast.objective(theirs, train, C, loss)
        f_ours = rankfast.objective(ours, train, C, loss)          # float32 weights, as written
        w = np.zeros(train.n_features + 2)
        v = w.copy()
        w[theirs.feature_ids] = theirs.weights
        v[ours.feature_ids] = ours.weights
        relative = np.abs(v - w).max() / np.linalg.norm(w)
        loss_ours = metrics.swapped_fraction(ours.predict(test.X), test.y, test.qid).mean()
        loss_theirs = float(re.search(r"Average loss on test set: ([0-9.]+)",
                                      (base / classify).read_text()).group(1))
        print(f"{name:>13} | {f_ours:>14.6f} {f_theirs:>14.6f} {f_ours - f_theirs:>10.3g} "
              f"{r.target:>9.3g} {r.gap:>9.3g} | {relative:>11.4f} | {loss_ours:>14.4f} "
              f"{loss_theirs:>8.4f}")
    print("\nsvm_rank's test loss is as its svm_rank_classify printed it (4 decimals).")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100k,500k")
    parser.add_argument("--cs", default="0.01,1,100")
    parser.add_argument("--reference", action="store_true",
                        help="print the agreement table on svm_rank's reference models instead")
    args = parser.parse_args()
    if args.reference:
        agreement()
    else:
        speed(args.sizes.split(","), args.cs.split(","))


if __name__ == "__main__":
    main()
