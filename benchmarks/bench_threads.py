#!/usr/bin/env python3
"""Threads: per-phase speed-ups with -j 1 against -j N, peak memory, one-thread solver ratios.

    python benchmarks/bench_threads.py [--docs 500000] [--threads 1,2] [--file PATH]
                                       [--learners prsvm,rankncg,rankrls,greedy] [--repeat 3]

Data as benchmarks/bench_prsvm.py (50 dense N(0,1) features, 50 documents per
query, relevance 0-4), written to a temporary directory unless --file names one.
Printed, nothing asserted:

* per phase (read, train per learner, classify): wall seconds at each -j and the
  speed-up over the first, and whether the model files are byte-identical;
  RankRLS and greedy RankRLS also split at their first progress line (-v):
  "prepare" (input checks, grouping; greedy: also centring, X̂ᵀX̂ and the caches)
  and the rest ("solve": centring, X̂ᵀX̂, the solve; "select": the k steps);
* peak RSS of a whole ``rank_learn -j 1`` process (default learner) against
  svm_rank_learn's on the same file, both run in turn (``--svm-rank DIR``, see
  benchmarks/anchors.py; with their CPU and wall ratios), else against svm_rank's
  302 MB at 500k × 50 recorded on another machine;
* one thread: PRSVM's solve at 220k documents against liblinear-ranksvm's
  recorded 0.39 s (another machine), and with ``--liblinear-ranksvm DIR`` the
  whole processes ``rank_learn -j 1 -c 0.01`` and ``train -s 8 -c 0.01`` (on
  a copy without comments) in turn; greedy RankRLS, k = 10 on 100k × 200 in
  1000 queries, against RLScore's recorded 5.0 s;
* greedy RankRLS's memory traffic: one selection step at 500k × 50 (its caches
  C and U read and written once: 800 MB) in GB/s at each -j, beside a plain
  stream over the same arrays (C = U / 1 on the same threads: 400 MB) and a
  NumPy copy, the machine's bandwidth that bounds the step.

Recorded figures are not measured in this run (svm_rank's come from another machine); timings
here are wall-clock seconds and the machine may be shared (other jobs make the
multi-thread figures look worse than they are): read the ratios as indicative
and compare CPU seconds (also printed) where the load was high.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))          # this checkout's rankfast, even if another is installed
sys.path.insert(0, str(HERE))

import anchors  # noqa: E402
from bench_prsvm import make_file  # noqa: E402
from rankfast._kernels._predict import linear_scores  # noqa: E402

import rankfast  # noqa: E402
from rankfast import write_model  # noqa: E402
from rankfast.cli.learners import build_learner  # noqa: E402

SVM_RANK_PEAK_MB_500K = 302.0       # recorded: svm_rank_learn on 500k x 50
LIBLINEAR_SOLVE_220K = 0.39         # recorded: liblinear-ranksvm -s 8, train() at 220k
RLSCORE_GREEDY = 5.0                # recorded: RLScore GreedyRLS, k = 10, 100k x 200
LEARNER_OPTIONS = {"prsvm": {}, "rankncg": {}, "rankrls": {}, "greedy": {"k": 10}}
# learners whose fit is split at its first progress line: (before, after)
SPLIT_AT_FIRST_LOG = {"rankrls": ("prepare", "solve"), "greedy": ("prepare", "select")}


def timed(function, repeat=1):
    """(result, wall seconds, CPU seconds of this process, all threads): the fastest of repeat runs."""
    best = None
    for _ in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        result = function()
        run = (result, time.perf_counter() - wall, time.process_time() - cpu)
        best = run if best is None or run[1] < best[1] else best
    return best


def split_fit(learner, data, repeat):
    """(wall, cpu) of the whole fit and of its parts before and after its first progress line."""
    best = None
    for _ in range(repeat):
        marks = []

        def log(text, level, marks=marks):
            return marks or marks.append((time.perf_counter(), time.process_time()))
        cpu, wall = time.process_time(), time.perf_counter()
        learner.fit(data.X, data.y, data.qid, log=log)
        end = (time.perf_counter(), time.process_time())
        mark = marks[0] if marks else end
        run = [(end[0] - wall, end[1] - cpu), (mark[0] - wall, mark[1] - cpu),
               (end[0] - mark[0], end[1] - mark[1])]
        best = run if best is None or run[0][0] < best[0][0] else best
    return best


def model_bytes(model):
    path = Path(tempfile.mkstemp()[1])
    try:
        write_model(model, str(path))
        return path.read_bytes()
    finally:
        path.unlink()


def phases(path, threads, learners, repeat):
    """Print read / train / classify wall seconds per thread count and the speed-ups."""
    rows, walls, cpus, datasets = [], [], [], []
    for j in threads:
        data, wall, cpu = timed(lambda: rankfast.load_svmlight(str(path), n_jobs=j), repeat)
        walls.append(wall)
        cpus.append(cpu)
        datasets.append((data.X.data.tobytes(), data.y.tobytes(), data.line.tobytes()))
        del data
    same = "same arrays" if all(d == datasets[0] for d in datasets) else "ARRAYS DIFFER"
    del datasets
    rows.append(("read", walls, cpus, same))
    data = rankfast.load_svmlight(str(path), n_jobs=1)
    for name in learners:
        walls, cpus, files, parts = [], [], [], []
        for j in threads:
            options = dict(LEARNER_OPTIONS[name], n_jobs=j, C=[0.01])
            learner = build_learner(name, options)
            if name in SPLIT_AT_FIRST_LOG:
                (wall, cpu), *split = split_fit(learner, data, repeat)
                parts.append(split)
            else:
                _, wall, cpu = timed(lambda: learner.fit(data.X, data.y, data.qid), repeat)
            walls.append(wall)
            cpus.append(cpu)
            files.append(model_bytes(learner.to_model(n_features=data.n_features)))
        same = "model files identical" if all(f == files[0] for f in files) else "MODELS DIFFER"
        rows.append((f"train {name}", walls, cpus, same))
        for k, label in enumerate(SPLIT_AT_FIRST_LOG.get(name, ())):
            rows.append((f"  {name} {label}", [p[k][0] for p in parts], [p[k][1] for p in parts],
                         ""))
    learner = build_learner("prsvm", {"n_jobs": 1})
    learner.fit(data.X, data.y, data.qid)
    model = learner.to_model(n_features=data.n_features)
    walls, cpus, outputs = [], [], []
    X = data.X
    for j in threads:
        out = np.empty(X.shape[0])
        _, wall, cpu = timed(lambda: linear_scores(X.indptr, X.indices, X.data, model.feature_ids,
                                                   model.weights, model.bias, out, j), repeat)
        walls.append(wall)
        cpus.append(cpu)
        outputs.append(out.tobytes())
    same = "same scores" if all(o == outputs[0] for o in outputs) else "SCORES DIFFER"
    rows.append(("classify (scoring)", walls, cpus, same))
    head = "".join(f"  -j {j:<2} wall   cpu" for j in threads)
    print(f"{'phase':18s}{head}   speed-up -j {threads[-1]} / -j {threads[0]}")
    for name, walls, cpus, note in rows:
        cells = "".join(f"  {w:8.3f} {c:6.2f}" for w, c in zip(walls, cpus))
        print(f"{name:18s}{cells}   {walls[0] / walls[-1]:5.2f}x  {note}")


def peak_rss(path, threads):
    """Peak RSS (MB) of a whole rank_learn process: its VmHWM, read inside the child.

    (getrusage's ru_maxrss would not do: a child starts from the parent's peak.)
    """
    code = ("from rankfast.cli.learn import learn_main; "
            f"learn_main(['-v', '0', '-j', '{threads}', {str(path)!r}, '/dev/null']); "
            "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0])")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout
    return int(out.split()[-2]) / 1024


def one_thread_prsvm(path_220k, liblinear, repeat):
    from rankfast import RankSVM
    data = rankfast.load_svmlight(path_220k)
    best = timed(lambda: RankSVM(C=0.01, n_jobs=1).fit(data.X, data.y, data.qid), 3)[1:]
    print(f"PRSVM solve at {data.n_documents} docs, one thread: wall {best[0]:.3f} s, "
          f"cpu {best[1]:.3f} s; liblinear-ranksvm {LIBLINEAR_SOLVE_220K} s "
          f"({anchors.RECORDED}): {LIBLINEAR_SOLVE_220K / best[0]:.2f}x by wall, "
          f"{LIBLINEAR_SOLVE_220K / best[1]:.2f}x by cpu")
    if liblinear:
        bare = anchors.without_comments(path_220k, str(path_220k) + ".nocomments")
        runs = anchors.in_turn(
            [("ours", [sys.executable, str(ROOT / "rank_learn"), "-v", "0", "-j", "1", "-c",
                       "0.01", str(path_220k), "/dev/null"]),
             ("liblinear", [liblinear[0], "-s", "8", "-c", "0.01", bare, "/dev/null"])], repeat)
        print(f"  whole processes in turn: rank_learn -j 1 {anchors.figures(runs['ours'])}; "
              f"liblinear-ranksvm train -s 8 {anchors.figures(runs['liblinear'])}: "
              f"{anchors.ratios(runs['ours'], runs['liblinear'])}; {anchors.load()}")


def greedy_ratio(threads):
    from rankfast import GreedyRankRLS
    rng = np.random.default_rng(0)
    n, d, Q = 100_000, 200, 1000
    X = rng.normal(size=(n, d))
    qid = np.repeat(np.arange(Q), n // Q)
    y = np.clip(np.round(X[:, :5] @ rng.normal(size=5) + rng.normal(size=n)), 0, 4)
    for j in threads:
        best = timed(lambda: GreedyRankRLS(C=1.0, k=10, n_jobs=j).fit(X, y, qid), 2)[1:]
        print(f"greedy k=10, 100k x 200, -j {j}: wall {best[0]:.3f} s, cpu {best[1]:.3f} s; "
              f"RLScore {RLSCORE_GREEDY} s (recorded): {RLSCORE_GREEDY / best[0]:.1f}x by wall")


def greedy_bandwidth(threads, n=500_000, d=50, repeat=5):
    """GB/s of one greedy step (add_feature with scoring) against plain streams over C and U."""
    from rankfast._kernels import _rankrls
    from rankfast._kernels.threads import query_chunks
    rng = np.random.default_rng(0)
    C, U = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    a, p, g, h = rng.normal(size=n), rng.normal(size=n), rng.random(d), rng.normal(size=d)
    t = 1e-4 * rng.normal(size=d)                      # small: the caches stay finite
    starts = np.arange(0, n + 1, 50, dtype=np.int64)
    chunks, out, moved = query_chunks(starts), np.empty(d), 2 * C.nbytes
    step = {j: timed(lambda: _rankrls.add_feature(C, U, a, p, C[:, 3], U[:, 3], t, 0.5, 1e-4,
                                                 starts, chunks, j, g, h, out), repeat)[1:]
            for j in threads}
    stream = {j: timed(lambda: _rankrls.divide(U, 1.0, C, j), repeat)[1] for j in threads}
    copy = timed(lambda: np.copyto(C, U), repeat)[1]
    print(f"greedy step at {n // 1000}k x {d} (C, U read and written: {2 * moved / 1e9:.1f} GB); "
          f"NumPy copy U -> C: {moved / copy / 1e9:.1f} GB/s")
    for j in threads:
        wall, cpu = step[j]
        print(f"  -j {j}: step {wall * 1e3:.1f} ms ({cpu * 1e3:.1f} ms cpu), "
              f"{2 * moved / wall / 1e9:.1f} GB/s; stream U -> C {moved / stream[j] / 1e9:.1f} GB/s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=500_000)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--file", help="an existing data file (else one is generated)")
    parser.add_argument("--learners", default="prsvm,rankncg,rankrls,greedy")
    parser.add_argument("--repeat", type=int, default=3, help="runs per phase (the fastest counts)")
    anchors.add_arguments(parser)
    args = parser.parse_args()
    svm_rank, liblinear = anchors.svm_rank(args), anchors.liblinear(args)
    threads = [int(t) for t in args.threads.split(",")]
    learners = [name for name in args.learners.split(",") if name]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} "
          f"(the machine may be shared: figures are indicative)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.file) if args.file else Path(tmp) / "train.dat"
        if not args.file:
            make_file(args.docs, path)
        phases(path, threads, learners, args.repeat)
        rss = peak_rss(path, 1)
        if svm_rank:
            runs = anchors.in_turn(
                [("ours", [sys.executable, str(ROOT / "rank_learn"), "-v", "0", "-j", "1", "-c",
                           "1", str(path), "/dev/null"]),
                 ("svm_rank", [svm_rank[0], "-c", "1", str(path),
                               str(Path(tmp) / "model.svm_rank")])],
                args.repeat)
            print(f"peak RSS of rank_learn -j 1: {rss:.0f} MB (VmHWM); whole processes in turn "
                  f"at -c 1: rank_learn -j 1 {anchors.figures(runs['ours'])}; "
                  f"svm_rank_learn {anchors.figures(runs['svm_rank'])}: "
                  f"{anchors.ratios(runs['ours'], runs['svm_rank'])}; {anchors.load()}")
        else:
            print(f"peak RSS of rank_learn -j 1: {rss:.0f} MB (svm_rank at 500k x 50: "
                  f"{SVM_RANK_PEAK_MB_500K:.0f} MB, {anchors.RECORDED})")
        small = Path(tmp) / "220k.dat"
        make_file(220_000, small)
        one_thread_prsvm(small, liblinear, args.repeat)
    greedy_ratio(threads)
    greedy_bandwidth(threads)


if __name__ == "__main__":
    main()
