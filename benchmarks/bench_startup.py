"""Whole-process time and peak memory of rank_classify / rank_learn on small and large files.

The start-up targets (a small classify run near svm_rank's, a large one much
faster), side by side with svm_rank run on the same files in the same run
(``--svm-rank DIR``, see benchmarks/anchors.py: svm_rank_classify and
svm_rank_learn interleaved with the other rows, and the ratios of the medians)
or, without it, svm_rank's figures recorded on another machine (quoted, not
measured), and with baselines measured in the same run: the bare interpreter,
the imports alone (numpy, scipy.sparse), and optionally another checkout's
launchers (``--compare /work/main``: rankfast before this change).

Files (generated, seeded, in a temporary directory; nothing is committed):
60 lines (6 queries of 10), 2,000 documents, 500k documents (``--large``),
each with 46 dense features like LETOR's, 10 documents a query; the linear
model is trained by rank_learn on the 2,000-document file.

Every run is a fresh process started by this script; seconds are wall time
and CPU time (user + system, which a busy machine inflates less) of the run
that was fastest by wall time among ``--repeat``, and the median wall time;
peak RSS is /usr/bin/time's "Maximum resident set size".  The runs of all
rows are interleaved (row 1, row 2, ..., row 1, ...), so a machine that
slows down for a while slows every row alike.  The loop runs
``--loop`` rank_classify calls on the 60-line file one after the other and
prints the total, scaled to 1,000 calls.

Usage::

    python benchmarks/bench_startup.py                      # quick: no 500k file
    python benchmarks/bench_startup.py --large 500000 --compare /work/main
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(HERE, "benchmarks"))
import anchors  # noqa: E402

# svm_rank's figures, recorded once on the same files (whole process), on another machine.
SVM_RANK = {
    "classify 60 lines": ("0.002 s", "11 MB"),
    "classify 2,000 docs": ("0.030 s", ""),
    "classify 20,000 docs": ("0.276 s", "14 MB"),
    "learn 60 lines": ("0.005 s", ""),
    "classify 500k docs": ("11.0 s", "301 MB"),
    "1,000 x classify 60 lines": ("~2 s (1,000 x 0.002 s)", ""),
}
TARGETS = {
    "classify 60 lines": "<= 0.030 s",
    "classify 2,000 docs": "<= svm_rank (0.030 s)",
    "classify 500k docs": ">= 6x faster than svm_rank (<= 1.8 s)",
    "learn 60 lines": "<= 0.120 s",
}


def write_data(path, n_docs, seed, features=46, per_query=10):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(features)
    with open(path, "w") as out:
        for start in range(0, n_docs, 50_000):
            n = min(50_000, n_docs - start)
            X = np.round(rng.random((n, features)), 6)
            y = np.clip(np.floor((X - 0.5) @ w / 2 + 2 + rng.standard_normal(n)), 0, 4).astype(int)
            qid = (start + np.arange(n)) // per_query + 1
            cells = np.char.add(np.char.add(np.arange(1, features + 1).astype(str), ":"),
                                X.astype(str))
            body = [" ".join(row) for row in cells.tolist()]
            out.writelines(f"{label} qid:{q} {feats}\n"
                           for label, q, feats in zip(y.tolist(), qid.tolist(), body))


def run_once(argv, env):
    """(wall seconds, CPU seconds, peak RSS MB) of one fresh process."""
    start = time.perf_counter()
    result = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", *argv], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{result.stderr}")
    user, system, rss = result.stderr.strip().splitlines()[-1].split()
    return seconds, float(user) + float(system), int(rss) / 1000.0


def measure_interleaved(cases, repeat):
    """{name: (best wall s, its CPU s, its peak MB, median wall s)}, the cases' runs interleaved.

    cases: (name, argv, env, runs) with runs = repeat or 1 (a long run is made once).
    """
    runs = {name: [] for name, *_ in cases}
    for round_ in range(repeat):
        for name, argv, env, times in cases:
            if round_ < times:
                runs[name].append(run_once(argv, env))
    figures = {}
    for name, done in runs.items():
        best = min(done)
        figures[name] = best + (statistics.median(r[0] for r in done),)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", type=int, default=0,
                        help="documents of the large file (the target is read at 500000; 0 skips it)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--loop", type=int, default=100)
    parser.add_argument("--compare", help="another checkout whose launchers run beside these")
    anchors.add_arguments(parser)
    args = parser.parse_args()
    svm_rank = anchors.svm_rank(args)
    checkouts = [("this checkout", HERE)] + ([("compare: " + args.compare, args.compare)]
                                            if args.compare else [])
    with tempfile.TemporaryDirectory() as tmp:
        files = {"60": os.path.join(tmp, "small.dat"), "2000": os.path.join(tmp, "mid.dat")}
        write_data(files["60"], 60, 1)
        write_data(files["2000"], 2000, 2)
        if args.large:
            files["large"] = os.path.join(tmp, "large.dat")
            write_data(files["large"], args.large, 3)
        model = os.path.join(tmp, "model.dat")
        env = dict(os.environ, PYTHONPATH=HERE, OPENBLAS_NUM_THREADS="1")
        subprocess.run([sys.executable, os.path.join(HERE, "rank_learn"), "-c", "1", "-v", "0",
                        files["2000"], model], env=env, check=True, stdout=subprocess.DEVNULL)
        pred = os.path.join(tmp, "pred")
        cases = [("python -c pass", [sys.executable, "-c", "pass"], env, args.repeat, ""),
                 ("python -c 'import numpy'", [sys.executable, "-c", "import numpy"], env,
                  args.repeat, ""),
                 ("python -c 'import scipy.sparse'", [sys.executable, "-c", "import scipy.sparse"],
                  env, args.repeat, "")]
        loops = []
        for label, root in checkouts:
            run_env = dict(env, PYTHONPATH=root)
            classify = [sys.executable, os.path.join(root, "rank_classify"), "-v", "0"]
            learn = [sys.executable, os.path.join(root, "rank_learn"), "-v", "0", "-c", "1"]
            cases += [(f"classify 60 lines [{label}]", classify + [files["60"], model, pred],
                       run_env, args.repeat, "classify 60 lines"),
                      (f"classify 2,000 docs [{label}]", classify + [files["2000"], model, pred],
                       run_env, args.repeat, "classify 2,000 docs"),
                      (f"learn 60 lines [{label}]",
                       learn + [files["60"], os.path.join(tmp, "m60")], run_env, args.repeat,
                       "learn 60 lines")]
            if args.large:
                cases.append((f"classify {args.large // 1000}k docs [{label}]",
                              classify + [files["large"], model, pred], run_env, 1,
                              "classify 500k docs"))
            loops.append((label, classify + [files["60"], model, pred], run_env))
        if svm_rank:
            learn_theirs, classify_theirs = svm_rank
            cases += [("classify 60 lines [svm_rank]", [classify_theirs, files["60"], model, pred],
                       env, args.repeat, "classify 60 lines"),
                      ("classify 2,000 docs [svm_rank]",
                       [classify_theirs, files["2000"], model, pred], env, args.repeat,
                       "classify 2,000 docs"),
                      ("learn 60 lines [svm_rank]",
                       [learn_theirs, "-c", "1", files["60"], os.path.join(tmp, "m60.svm_rank")],
                       env, args.repeat, "learn 60 lines")]
            if args.large:
                cases.append((f"classify {args.large // 1000}k docs [svm_rank]",
                              [classify_theirs, files["large"], model, pred], env, 1,
                              "classify 500k docs"))
        figures = measure_interleaved([case[:4] for case in cases], args.repeat)
        rows = [(name, figures[name], key) for name, _, _, _, key in cases]
        for label, argv, run_env in loops:
            start, cpu = time.perf_counter(), os.times()
            for _ in range(args.loop):
                subprocess.run(argv, env=run_env, check=True, stdout=subprocess.DEVNULL)
            total, after = time.perf_counter() - start, os.times()
            children = (after.children_user - cpu.children_user
                        + after.children_system - cpu.children_system)
            rows.append((f"{args.loop} x classify 60 lines [{label}]",
                         (total, children, float("nan"), float("nan")),
                         "1,000 x classify 60 lines"))
        load = os.getloadavg()
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores; "
              f"seconds: best and median of {args.repeat}, interleaved (the loop and the large "
              f"file: one run)\n")
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            print("PYTHONDONTWRITEBYTECODE is set: every run compiles rankfast's modules from "
                  "source (about 40 ms more than an installed package, whose .pyc files pip "
                  "writes); unset it for figures users will see\n")
        measured = {key: figures[name] for name, _, _, _, key in cases
                    if name.endswith("[svm_rank]")}
        print(f"{'run':52s} {'wall s':>8s} {'median':>8s} {'cpu s':>7s} {'peak MB':>8s}   "
              f"{'svm_rank' if svm_rank else 'svm_rank (' + anchors.RECORDED + ')':24s} target")
        for name, (seconds, cpu_seconds, rss, median), key in rows:
            theirs = " ".join(x for x in SVM_RANK.get(key, ("", "")) if x)
            if name.endswith("[svm_rank]"):
                theirs = ""
            elif key in measured:
                _, t_cpu, _, t_median = measured[key]
                theirs = (f"{t_median / median:.2f}x wall, {t_cpu / cpu_seconds:.2f}x cpu "
                          f"(svm_rank over ours; cpu in 10 ms steps)")
            extra = ""
            if name.startswith(f"{args.loop} x"):
                extra = f"  = {seconds * 1000 / args.loop:.1f} s per 1,000 calls"
            target = "" if name.endswith("[svm_rank]") else TARGETS.get(key, "")
            print(f"{name:52s} {seconds:8.3f} {median:8.3f} {cpu_seconds:7.3f} {rss:8.1f}   "
                  f"{theirs:24s} {target}{extra}")


if __name__ == "__main__":
    main()
