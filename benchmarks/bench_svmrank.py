#!/usr/bin/env python3
"""svm_rank's own objective (-a svmrank, OCAS): speed and agreement against svm_rank.

    python benchmarks/bench_svmrank.py [--sizes 100k,500k] [--cs 0.01,1,100] [--repeat 3]
                                       [--reference]

Speed: the data of svm_rank's scaling runs (../shared/reference/svm_rank/scaling:
dense, 50 N(0,1) features, 50 documents per query, gen_data.py with seed 12 for
100k and 13 for 500k), regenerated into benchmarks/_work/ by bench_prsvm's
generator, which draws the same numbers as gen_data.py.  Per (n, C), in process:
reading, solving (wall and CPU), OCAS iterations, our objective F and its
certified gap, and the whole `rank_learn -a svmrank` process (start-up, reading,
training, writing the model), beside svm_rank's figures (wall and CPU of the whole
run, its "Runtime in cpu-seconds" without I/O, iterations, its objective "pval"
at its model), the ratios, and F − pval against svm_rank's tolerance C ε'.
With ``--svm-rank DIR`` (benchmarks/anchors.py) svm_rank_learn runs on the same
file, in turn with rank_learn, --repeat times each: medians, and ratios that are
medians of the pairs, with the load average.  Without it, its figures recorded
on another machine are quoted as recorded (svm_rank built here ran 1.8-2.5x
faster than those: ratios against them are inflated by that much).

Then where our process's CPU time goes, per (n, C): start-up (a process that
only starts Python and imports what `rank_learn -a svmrank` imports), reading,
training, and the rest (the process minus those three: statistics, writing the
model, exit); training split into input preparation (grouping rows, dropping
empty columns, label ranks, query weights) and OCAS, and OCAS into loss oracle
calls (sort + pair-counting sweeps), products with X and Xᵀ, and the rest (the
reduced QP, line-search and plane bookkeeping in Python).  CPU seconds, each the
minimum of --repeat runs (the machine is shared: minima are the least disturbed).

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
sys.path.insert(0, str(HERE))
import anchors  # noqa: E402
from bench_prsvm import SIZES, WORK, make_file, run_process  # noqa: E402  (same generator as gen_data.py)

REFERENCE = ROOT.parent / "shared" / "reference" / "svm_rank"
SEEDS = {"10k": 11, "100k": 12, "500k": 13}         # run_scaling.sh's seeds


def reported(text):
    """(cpu s without I/O, iterations, pval) from svm_rank_learn's output."""
    return (float(re.search(r"Runtime in cpu-seconds: ([0-9.]+)", text).group(1)),
            int(re.search(r"Number of iterations: (\d+)", text).group(1)),
            float(re.search(r"pval=([0-9.]+)", text).group(1)))


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
    return (wall, cpu) + reported(text)


def cpu_min(run, repeat):
    """(result of the last run, least CPU seconds of ``repeat`` runs of run())."""
    best = np.inf
    for _ in range(repeat):
        start = time.process_time()
        result = run()
        best = min(best, time.process_time() - start)
    return result, best


class _Timed:
    """A loss, or a matrix's matvec and rmatvec, adding the CPU time of each call to a total."""

    def __init__(self, inner):
        self.inner, self.seconds, self.calls = inner, 0.0, 0
        self.shape = getattr(inner, "shape", None)

    def _time(self, run, *args):
        start = time.process_time()
        result = run(*args)
        self.seconds += time.process_time() - start
        self.calls += 1
        return result

    def __call__(self, scores):
        return self._time(self.inner, scores)

    def matvec(self, v):
        return self._time(self.inner.matvec, v)

    def rmatvec(self, u):
        return self._time(self.inner.rmatvec, u)


def fit_phases(data, C):
    """CPU seconds of fit's steps, taken as RankSVML1.fit takes them:
    (preparation, OCAS, oracle, oracle calls, products, number of products)."""
    from rankfast import RankSVML1
    from rankfast._kernels.threads import resolve_n_jobs
    from rankfast.learners._linear import query_weights
    from rankfast.learners.svmrank import svm_rank_target
    from rankfast.losses.hinge import HingeLoss
    from rankfast.losses.products import DataMatrix
    from rankfast.optimize.ocas import ocas
    est = RankSVML1(C=C)
    start = time.process_time()
    X, y, starts, _ = data.training_data(est.sparse_float32).grouped()
    loss = _Timed(HingeLoss(y, starts, query_weights(y, starts, est.C, est.loss)))
    X = _Timed(DataMatrix(X, resolve_n_jobs(est.n_jobs)))
    prepared = time.process_time()
    ocas(X, loss, svm_rank_target(est.C, est.tol, est.loss), est.max_iter)
    solved = time.process_time()
    return prepared - start, solved - prepared, loss.seconds, loss.calls, X.seconds, X.calls


def startup_process(repeat):
    """Least CPU seconds of a process that only starts and imports rank_learn's modules."""
    code = "import rankfast.cli, rankfast.cli.learners, rankfast.learners.svmrank"
    return min(run_process([sys.executable, "-c", code])[1] for _ in range(repeat))


def speed(sizes, cs, repeat, svm_rank=None):
    import rankfast
    from rankfast import RankSVML1
    WORK.mkdir(exist_ok=True)
    print(f"{'n':>5} {'C':>5} | {'read s':>6} {'fit s':>6} {'iters':>5} "
          f"{'F':>14} {'gap':>9} {'process':>14} | {'svm_rank wall':>13} {'cpu':>6} "
          f"{'cpu(no IO)':>10} {'iters':>5} {'pval':>14} | {'cpu':>7} {'wall':>6} "
          f"{'solve':>6} {'F - pval':>10} {'C eps':>9}")
    learn = [sys.executable, str(ROOT / "rank_learn"), "-a", "svmrank", "-v", "0"]
    startup = startup_process(repeat)
    phases = []
    for label in sizes:
        path = WORK / f"svmrank_dense_{label}_seed{SEEDS[label]}.dat"
        if not path.exists():
            make_file(SIZES[label], path, seed=SEEDS[label])
        data, read = cpu_min(lambda: rankfast.load_svmlight(path), repeat)
        for C in cs:
            est, cpu = cpu_min(lambda: RankSVML1(C=float(C)).fit(data.features, data.y, data.qid),
                               repeat)
            r = est.result_
            commands = [("ours", learn + ["-c", C, str(path), str(WORK / "svmrank_model.dat")])]
            if svm_rank:
                commands.append(("svm_rank", [svm_rank[0], "-c", C, str(path),
                                              str(WORK / "svmrank_model.svm_rank")]))
            log = WORK / "svm_rank_learn.stdout"
            runs = anchors.in_turn(commands, repeat, outputs={"svm_rank": log})
            p_wall, p_cpu = anchors.median(runs["ours"], "wall"), anchors.median(runs["ours"], "cpu")
            phases.append((label, C, min(r.cpu for r in runs["ours"]), read, cpu, r.iterations,
                           min((fit_phases(data, float(C)) for _ in range(repeat)),
                               key=lambda phase: phase[1])))
            ours = (f"{label:>5} {C:>5} | {read:>6.2f} {cpu:>6.3f} {r.iterations:>5} "
                    f"{r.f:>14.5f} {r.gap:>9.3g} {p_wall:>6.2f}s/{p_cpu:>5.2f}c |")
            if svm_rank:
                theirs = runs["svm_rank"]
                t_wall, t_cpu = anchors.median(theirs, "wall"), anchors.median(theirs, "cpu")
                t_solve, t_iters, pval = reported(log.read_text())
                cpu_ratio = anchors.ratio(runs["ours"], theirs, "cpu")
                wall_ratio = anchors.ratio(runs["ours"], theirs, "wall")
                where = "measured"
            else:
                theirs = recorded(label, C)
                if theirs is None:
                    print(ours + " (no recorded svm_rank run)")
                    continue
                t_wall, t_cpu, t_solve, t_iters, pval = theirs
                cpu_ratio, wall_ratio = t_cpu / p_cpu, t_wall / p_wall
                where = "recorded"
            print(ours + f" {t_wall:>12.2f}s {t_cpu:>6.2f} {t_solve:>10.2f} {t_iters:>5} "
                  f"{pval:>14.5f} | {cpu_ratio:>6.1f}x {wall_ratio:>5.1f}x "
                  f"{t_solve / cpu:>5.1f}x {r.f - pval:>10.4g} {r.target:>9.4g} {where}")
    print("\nread, fit: CPU s in this process.  process: our whole rank_learn run, wall s / CPU s"
          "\n(medians).  svm_rank: measured = run here in turn with ours (ratios: medians of the"
          "\npairs); recorded = its figures " + anchors.RECORDED + " (ratios inflated by the"
          "\nother machine's slowness).  " + anchors.load() + "."
          "\nRatios, svm_rank's figure over ours: cpu = its user + sys over our process's"
          "\nCPU; wall = its wall over our process's wall (swings with the load); solve = its"
          "\n'Runtime in cpu-seconds' (no I/O) over our fit's CPU seconds.  F - pval ≤ 0: our"
          "\nobjective is below svm_rank's at its model; the certified gap bounds F − F*;"
          "\nsvm_rank's own guarantee is F − F* ≤ C eps.  %d runs each." % repeat)
    print(f"\nWhere the process's CPU time goes (s): start-up = Python + imports, alone "
          f"{startup:.3f} s")
    print(f"{'n':>5} {'C':>5} | {'process':>7} = {'start-up':>8} + {'read':>6} + {'fit':>6} + "
          f"{'rest':>6} | fit: {'prep':>6} {'OCAS':>6} = {'oracle':>6} ({'calls':>5}) + "
          f"{'X, Xt':>6} ({'prods':>5}) + {'QP etc':>6} | {'iters':>5}")
    for label, C, p_cpu, read, fit, iterations, phase in phases:
        prep, solve, oracle, calls, products, n_products = phase
        print(f"{label:>5} {C:>5} | {p_cpu:>7.3f} = {startup:>8.3f} + {read:>6.3f} + {fit:>6.3f} + "
              f"{p_cpu - startup - read - fit:>6.3f} | fit: {prep:>6.3f} {solve:>6.3f} = "
              f"{oracle:>6.3f} ({calls:>5}) + {products:>6.3f} ({n_products:>5}) + "
              f"{solve - oracle - products:>6.3f} | {iterations:>5}")
    print("rest: statistics, writing the model, exit.  QP etc: the reduced QP, line search and"
          "\nplanes in Python.  fit's split is from a separate fit with timers around the oracle"
          "\nand the products, so prep + OCAS need not add up to fit exactly.")


def agreement():
    import rankfast
    from rankfast import RankSVML1, metrics
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
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per figure; the least CPU time is printed (default 3)")
    parser.add_argument("--reference", action="store_true",
                        help="print the agreement table on svm_rank's reference models instead")
    anchors.add_arguments(parser)
    args = parser.parse_args()
    if args.reference:
        agreement()
    else:
        speed(args.sizes.split(","), args.cs.split(","), args.repeat, anchors.svm_rank(args))


if __name__ == "__main__":
    main()
