#!/usr/bin/env python3
"""PRSVM speed: training time against n and C, beside svm_rank and liblinear-ranksvm.

    python benchmarks/bench_prsvm.py [--sizes 10k,100k,500k,2M] [--cs 0.01,1,100]

Data like svm_rank's scaling runs (../shared/reference/svm_rank/scaling): 50 dense
N(0,1) features, 50 documents per query, relevance 0-4 by fixed thresholds on a
noisy linear utility.  Files are generated once into benchmarks/_work/.

Printed per (n, C): the whole `rank_learn` process (wall, CPU, peak RSS), and
in-process the reading and the solving separately.  With ``--svm-rank DIR``
(and ``--liblinear-ranksvm DIR``; see benchmarks/anchors.py) svm_rank_learn
(and liblinear-ranksvm's ``train -s 8``, on a copy without comments, which
its reader refuses) run on the same file with the same -c, in turn with
rank_learn, ``--repeat`` times each: their medians and the ratios (median of
the pairs) of CPU, wall and peak memory, with the load average.  Without
them, svm_rank's recorded wall times (from another machine) and the ratio
to those.  Then the growth from 100k to 500k (target: at most 6x), the
recorded liblinear-ranksvm anchors (2.11: 20k docs solved in 0.16 s after
0.3 s parsing; 220k in 1.6 s after 4 s) and, on queries of 1,000+ documents,
one gradient by the Fenwick kernel against the pair-enumerating twin
(O(n log L) vs O(pairs)).
Nothing is asserted: the figures are for reading.
"""
import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))          # this checkout's rankfast, even if another is installed
sys.path.insert(0, str(ROOT / "tests"))  # the test oracles (reference_impl)
sys.path.insert(0, str(HERE))
import anchors  # noqa: E402

WORK = HERE / "_work"
SCALING = ROOT.parent / "shared" / "reference" / "svm_rank" / "scaling" / "results.txt"
SIZES = {"10k": 10_000, "20k": 20_000, "100k": 100_000, "220k": 220_000, "500k": 500_000,
         "2M": 2_000_000}


def make_file(n_docs, path, seed=1, docs=50, features=50):
    """Write the data set (vectorised per block of queries)."""
    rng = np.random.default_rng(seed)
    w_true = np.random.default_rng(12345).normal(size=features)
    fmt = "{} qid:{} " + " ".join(f"{j + 1}:{{:.6g}}" for j in range(features)) + " # d{}_{}\n"
    with open(path, "w") as out:
        for start in range(0, n_docs, 50_000):
            m = min(50_000, n_docs - start)
            X = np.round(rng.normal(size=(m, features)), 6)
            s = X @ w_true
            s = s / s.std() + rng.normal(size=m)
            rel = np.digitize(s, [-1.0, 0.0, 1.0, 2.0])
            rows = X.tolist()
            out.write("".join(fmt.format(rel[k], (start + k) // docs + 1, *rows[k],
                                         (start + k) // docs + 1, (start + k) % docs)
                              for k in range(m)))


def svm_rank_figures():
    """{(size label, C): (wall seconds, user seconds)} from svm_rank's recorded runs."""
    figures = {}
    if SCALING.exists():
        for line in SCALING.read_text().splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 5 and parts[2] == "0":
                minutes, seconds = parts[3].split(":")
                figures[(parts[0], parts[1])] = (60 * float(minutes) + float(seconds), float(parts[4]))
    return figures


def run_process(args):
    """(wall, cpu, peak RSS MB) of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024


def in_process(path, C):
    """(read seconds, solve seconds, Newton iterations, CG steps)."""
    code = (
        "import sys, time, json\n"
        "import rankfast\nfrom rankfast.learners.prsvm import RankSVM\n"
        "t = time.perf_counter(); d = rankfast.load_svmlight(sys.argv[1]); r = time.perf_counter() - t\n"
        "t = time.perf_counter(); m = RankSVM(C=float(sys.argv[2])).fit(d.X, d.y, d.qid)\n"
        "s = time.perf_counter() - t\n"
        "print(json.dumps([r, s, m.result_.iterations, m.result_.cg_iterations]))\n")
    out = subprocess.run([sys.executable, "-c", code, str(path), str(C)], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    import json
    return json.loads(out)


def kernel_vs_twin():
    """One loss+gradient on queries of 1,000+ documents: Fenwick kernel vs explicit pairs."""
    from reference_impl import squared_hinge_pairs

    from rankfast._kernels import _prsvm
    rng = np.random.default_rng(0)
    print("\nOne gradient, Fenwick kernel vs pair-enumerating twin (5 levels)")
    print(f"{'docs/query':>10} {'queries':>8} {'pairs':>12} {'kernel s':>10} {'twin s':>10} {'ratio':>8}")
    for m, queries in ((1000, 4), (2000, 4), (4000, 2)):
        n = m * queries
        scores = rng.normal(size=n)
        labels = rng.integers(0, 5, size=n).astype(float)
        starts = np.arange(0, n + 1, m, dtype=np.int64)
        weight = np.ones(queries)
        _, rank = np.unique(labels, return_inverse=True)
        order = np.empty(n, dtype=np.int64)
        _prsvm.sort_within_queries(scores, starts, order)
        grad = np.empty(n)
        t = time.perf_counter()
        for _ in range(10):
            _prsvm.sort_within_queries(scores, starts, order)
            _prsvm.squared_hinge(scores, rank.astype(np.int64), starts, order, weight, 5, grad)
        fast = (time.perf_counter() - t) / 10
        t = time.perf_counter()
        squared_hinge_pairs(scores, labels, starts, weight)
        slow = time.perf_counter() - t
        pairs = sum(int((labels[a:a + m][:, None] > labels[a:a + m][None, :]).sum())
                    for a in range(0, n, m))
        print(f"{m:>10} {queries:>8} {pairs:>12} {fast:>10.4f} {slow:>10.3f} {slow / fast:>8.0f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10k,100k,500k,2M")
    parser.add_argument("--cs", default="0.01,1,100")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each whole process, in turn with the anchors (default 3)")
    anchors.add_arguments(parser)
    args = parser.parse_args()
    svm_rank, liblinear = anchors.svm_rank(args), anchors.liblinear(args)
    WORK.mkdir(exist_ok=True)
    reference = svm_rank_figures()
    learn = [sys.executable, str(ROOT / "rank_learn"), "-v", "0"]
    print(f"{'n':>5} {'C':>5} | {'rank_learn wall':>15} {'cpu':>6} {'RSS MB':>7} | {'read s':>7} "
          f"{'solve s':>8} {'newton':>6} {'cg':>4} | svm_rank")
    solve, live = {}, []
    for label in args.sizes.split(","):
        path = WORK / f"dense_{label}.dat"
        if not path.exists():
            t = time.perf_counter()
            make_file(SIZES[label], path)
            print(f"(generated {path.name}: {path.stat().st_size / 1e6:.0f} MB in "
                  f"{time.perf_counter() - t:.0f} s)")
        bare = WORK / f"dense_{label}.nocomments.dat"
        if liblinear and not bare.exists():
            anchors.without_comments(path, bare)
        for C in args.cs.split(","):
            commands = [("rank_learn", learn + ["-c", C, str(path), str(WORK / "model.dat")])]
            if svm_rank:
                commands.append(("svm_rank", [svm_rank[0], "-c", C, str(path),
                                              str(WORK / "model.svm_rank")]))
            if liblinear:
                commands.append(("liblinear-ranksvm", [liblinear[0], "-s", "8", "-c", C,
                                                       str(bare), str(WORK / "model.liblinear")]))
            runs = anchors.in_turn(commands, args.repeat)
            ours = runs["rank_learn"]
            wall, cpu = anchors.median(ours, "wall"), anchors.median(ours, "cpu")
            rss = max(r.peak_mb for r in ours)
            read, fit, newton, cg = in_process(path, C)
            solve[(label, C)] = wall
            if svm_rank:
                ref = f"{anchors.figures(runs['svm_rank'])}: {anchors.ratios(ours, runs['svm_rank'])}"
            else:
                theirs = reference.get((label, C))
                ref = (f"{theirs[0]:.2f} s wall ({anchors.RECORDED}): {theirs[0] / wall:.1f}x"
                       if theirs else "-")
            print(f"{label:>5} {C:>5} | {wall:>14.2f}s {cpu:>6.2f} {rss:>7.0f} | {read:>7.2f} "
                  f"{fit:>8.2f} {newton:>6} {cg:>4} | {ref}")
            if liblinear:
                live.append(f"{label:>5} {C:>5} | liblinear-ranksvm "
                            f"{anchors.figures(runs['liblinear-ranksvm'])}: "
                            f"{anchors.ratios(ours, runs['liblinear-ranksvm'])}")
    print(f"rank_learn: medians of {args.repeat} whole processes; ratios: theirs over ours, "
          f"median of the pairs run in turn; {anchors.load()}")
    if live:
        print("\nliblinear-ranksvm (train -s 8, the same -c; its C weighs its own sum of pair "
              "losses, so the models differ):\n" + "\n".join(live))
    for C in args.cs.split(","):
        if ("100k", C) in solve and ("500k", C) in solve:
            print(f"growth 100k -> 500k at C={C}: {solve[('500k', C)] / solve[('100k', C)]:.2f}x "
                  f"(target <= 6x; linear would be 5x)")
    print("\nTargets (whole rank_learn process): 100k under 1.5 s and 500k under 6 s at every C;"
          "\nanchor liblinear-ranksvm 2.11 (recorded on another machine): 20k docs 0.16 s solve "
          "+ 0.3 s parse, 220k docs 1.6 s + 4 s.")
    kernel_vs_twin()


if __name__ == "__main__":
    main()
