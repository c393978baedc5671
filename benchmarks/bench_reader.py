"""Reading speed and peak memory of rankfast's SVMlight reader (and scikit-learn's).

Generates two files of about ``--size-mb`` MB each (seeded, so every run reads
the same bytes), then runs every reader once per file in a fresh Python
process, so that each peak RSS belongs to one reader:

dense   50 features, 6 significant digits, labels 0..4, 50 documents per
        query, a ``# d<qid>_<k>`` comment on every line
sparse  10,000 columns, 20 random non-zeros per row (increasing indices),
        values U(0, 1) written with 6 decimals, 50 documents per query

Readers: ``rankfast.load_svmlight`` on one thread and on two (``n_jobs``; also
on the dense file gzip-compressed, where one thread decompresses while the others parse, beside
Python's gzip module alone, the floor it had to beat; rankfast inflates with zlib
itself, a megabyte of input a call (rankfast.io.files.GzipMembers), about 1.1x the
module's speed; MB/s counts uncompressed bytes),
the same on the dense file read a second time in one child whose allocator keeps
freed memory (glibc's MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_), so that
the timed read takes no page faults ("no faults": what the faults cost, and two
threads over one without them; each child's minor faults are printed),
the parser kernel alone (``_svmlight.parse_into`` into arrays sized for each chunk)
over load_svmlight's chunks (CHUNK_BYTES, 8 MB) already in memory (the kernel without the Python wrapper),
``sklearn.datasets.load_svmlight_file`` without and with ``query_id=True``
(skipped when scikit-learn is missing: ``pip install scikit-learn``; it is a
benchmark dependency only), and ``rank_classify`` with a random linear model
on the dense file (skipped while ``rankfast.cli`` does not exist).

Seconds are the reader call alone, timed inside the child, as wall time and
as CPU time (user + system; on a busy machine wall MB/s understate); with
``--repeat`` N, the median of N children.  How quiet the machine was: the CPU
time other processes took while a reader's children ran (the machine's busy
time in /proc/stat, steal included, less this process's and its children's),
printed with the two-thread verdicts.  The load average counts this benchmark's
own child (about 1.0 on its own), so it cannot say so.
A reader's one- and two-thread children run in turn (1 2, 2 1, ...), and two
threads over one is the median of each round's ratio: the machine's speed
drifts (in this virtual machine a child's CPU time for the same read varies by
a quarter from one minute to the next), and a ratio of two medians taken a
minute apart carries that drift.
The child imports rankfast's reading modules before the clock starts, and runs
with OPENBLAS_THREAD_TIMEOUT=4 (unless it is set), as rank_learn does: by
default OpenBLAS's idle threads spin about 0.1 s after numpy loads, on the core
a second reading thread needs, and that CPU time counted as the reader's.

``--compare DIR`` times a second checkout of rankfast (its kernels built in
place: ``python setup.py build_ext --inplace`` there) in the same run: each
rankfast reader runs from DIR and from this checkout in turn (B A, A B, ...),
and a ratio row (this checkout's MB/s over DIR's, wall and CPU, medians of
the pairs) follows each pair of rows.  That is how a change to the parser is
measured against the commit before it while the machine's load drifts.  Under
each one-thread row with a target, the user CPU ratio (the parsing) and each
side's range of system CPU seconds (page faults, the read's copy): a checkout
whose arrays get huge pages, as 17fd399's numpy arrays did, faults cheaply when
the guest has used that memory before and slowly when the host must back it, so
its system time and every ratio with it vary from one process to the next.  Peak RSS
is the child's VmHWM at the end minus its VmHWM once numpy, scipy and rankfast (and
scikit-learn, for its readers) are imported; that import baseline is printed.
"array MB" is X.data + X.indices + X.indptr + y + qid.  MB = 10**6 bytes.  A child running longer than
``--timeout`` is killed (scikit-learn's ``query_id=True`` appends each qid
with ``np.append``, which is quadratic in the number of lines).
rank_classify is timed from outside (interpreter start included); its peak is
its own VmHWM, absolute (``ru_maxrss`` from wait4 would include this process's
peak, inherited through fork).

Usage::

    python benchmarks/bench_reader.py                 # 200 MB per file
    python benchmarks/bench_reader.py --size-mb 20 --keep
    python benchmarks/bench_reader.py --repeat 5 --compare /tmp/rankfast-main
    python benchmarks/bench_reader.py --repeat 5 --svm-rank /tmp/svm_rank

``--svm-rank DIR`` names a folder holding svm_rank's ``svm_rank_classify``,
built from public sources outside the project (see the reference folder's
BUILDING.md): it and ``rank_classify`` then score the dense file with the same
linear model in turn, ``--repeat`` times each, timed from outside (interpreter
start included; CPU = the child's user + system from wait4), and the median
wall and CPU ratios are printed with the load average.  Without it, the
figures recorded in benchmarks/README.md (from another machine) are all there
is to compare with.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MB = 1e6
TARGET_MB_S = 150.0
TARGET_MEMORY_RATIO = 2.0
TARGET_SPEED_UP = 1.8            # one thread over --compare's, and two threads over one
from reader_data import DENSE_FEATURES, generate, gzip_copy  # noqa: E402

CHILD = r"""
import json, sys, time

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

reader, path, n_jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
import numpy as np, scipy.sparse, rankfast
load_svmlight = rankfast.load_svmlight          # imports rankfast.io.svmlight: not the reading
if reader.startswith("sklearn"):
    from sklearn.datasets import load_svmlight_file
if reader in ("kernel", "gunzip"):
    try:
        from rankfast._kernels import _svmlight
        from rankfast.io._threaded import _Arrays
        from rankfast.io.svmlight import CHUNK_BYTES
    except ImportError:                            # a checkout from before the subpackages
        from rankfast import _svmlight
        from rankfast.data import CHUNK_BYTES, _Arrays
    with open(path, "rb") as f:
        raw = f.read()
if reader == "prefaulted":     # glibc keeps what is freed (MALLOC_* from the parent):
    load_svmlight(path, n_jobs=n_jobs)       # the timed read reuses these pages, no faults
import resource
base = status("VmHWM")
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
if reader in ("rankfast", "prefaulted"):
    ds = load_svmlight(path, n_jobs=n_jobs)
    X, y, qid = ds.X, ds.y, ds.qid
elif reader == "sklearn":
    X, y = load_svmlight_file(path)
    qid = np.empty(0, np.int64)
elif reader == "sklearn-qid":
    X, y, qid = load_svmlight_file(path, query_id=True)
elif reader == "gunzip":
    import gzip
    buffer, n_rows = bytearray(CHUNK_BYTES), 0
    with gzip.open(path, "rb") as f:
        while f.readinto(buffer):
            pass
elif reader == "kernel":
    n_rows = nnz = 0
    pos = 0
    while pos < len(raw):
        cut = raw.rfind(b"\n", pos, pos + CHUNK_BYTES) + 1
        cut = len(raw) if cut <= pos or pos + CHUNK_BYTES >= len(raw) else cut
        block = memoryview(raw)[pos:cut]
        part = _Arrays(*_svmlight.count_bytes_of(block), False)
        part.parse(block, path, 0)
        n_rows += part.rows; nnz += part.nnz
        pos = cut
seconds = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
user, system = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
cpu = user + system
peak = status("VmHWM")
if reader in ("kernel", "gunzip"):
    arrays = 0; shape = [n_rows, None]; checksum = None; nnz = 0
else:
    arrays = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes + y.nbytes + qid.nbytes
    shape = list(X.shape); nnz = int(X.nnz)
    checksum = [float(y.sum()), float(X.data.sum()), int(qid.sum()) if len(qid) else None]
print(json.dumps(dict(seconds=seconds, cpu=cpu, user=user, system=system, base=base, peak=peak, arrays=arrays,
                      shape=shape, nnz=nnz, checksum=checksum,
                      faults=r1.ru_minflt - r0.ru_minflt)))
"""


# OpenBLAS's threads spin about 0.1 s after numpy loads them, on the core a second
# reading thread needs, and their CPU time would count as the reader's (as rank_learn
# and rank_classify do, the children let them sleep at once; nothing here uses BLAS).
CHILD_ENV = {"OPENBLAS_THREAD_TIMEOUT": "4", **os.environ}
# The "prefaulted" child reads the file twice and times the second read: glibc, told
# never to hand memory back (no mmap'd chunks, no trimming), gives it the pages the
# first read touched, so it takes no page faults (about a third of a one-thread read).
PREFAULTED_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 32), "MALLOC_TRIM_THRESHOLD_": str(1 << 40),
                  "MALLOC_ARENA_MAX": "1"}


def run_child(reader, path, n_jobs, timeout, root=ROOT):
    """One fresh child reading ``path`` with the rankfast of checkout ``root``.

    None when it runs longer than ``timeout`` seconds (it is killed).
    """
    try:
        env = {**CHILD_ENV, **PREFAULTED_ENV} if reader == "prefaulted" else CHILD_ENV
        proc = subprocess.run([sys.executable, "-c", CHILD, reader, path, str(n_jobs)], cwd=root,
                              capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"{reader} on {path} ({root}) failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summarise(runs):
    """Median wall and CPU seconds and the highest peak of several children's results."""
    if not runs or any(r is None for r in runs):
        return None
    best = dict(runs[0])
    best["seconds"] = statistics.median(r["seconds"] for r in runs)
    best["cpu"] = statistics.median(r["cpu"] for r in runs)
    best["peak"] = max(r["peak"] for r in runs)
    best["runs"] = runs
    return best


def run_arms(reader, path, arms, repeat, timeout):
    """``repeat`` children of each arm, a (checkout directory, n_jobs), summarised: {arm: summary}.

    The arms run in turn, in reverse order every other round (A B C, C B A,
    ...), so that a drift in the machine's speed falls on all of them alike,
    and round k of one arm pairs with round k of another (the summaries keep
    their runs): one thread against two, this checkout against --compare's.
    A summary is None once a child timed out.
    """
    runs = {arm: [] for arm in arms}
    for k in range(repeat):
        for arm in (arms[::-1] if k % 2 == 0 else arms):
            runs[arm].append(run_child(reader, path, arm[1], timeout, arm[0]))
            if runs[arm][-1] is None:
                return {arm: summarise(done) for arm, done in runs.items()}
    return {arm: summarise(done) for arm, done in runs.items()}


def machine_busy():
    """CPU seconds the machine has spent busy since boot, all CPUs (/proc/stat: user, nice,
    system, irq, softirq and steal, the time the host ran something else); None without
    /proc/stat."""
    try:
        with open("/proc/stat") as stat:
            ticks = [int(t) for t in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks + [0] * (8 - len(ticks))
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu():
    """CPU seconds of this process and of the children it has waited for."""
    import resource
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def others_cpu(measure):
    """(measure()'s result, CPU seconds other processes took meanwhile or None, its wall seconds)."""
    busy, own, t0 = machine_busy(), own_cpu(), time.perf_counter()
    result = measure()
    wall = time.perf_counter() - t0
    after = machine_busy()
    others = None if busy is None or after is None else max(after - busy - (own_cpu() - own), 0.0)
    return result, others, wall


def quietness(others, wall):
    """'other processes took X CPU s of Y s (Z% of a core)', or why it is unknown."""
    if others is None:
        return "other processes' CPU unknown (no /proc/stat)"
    return (f"other processes took {others:.2f} CPU s in these {wall:.1f} s "
            f"({100 * others / wall:.1f}% of a core)")


def paired_ratio(one, two, key="seconds"):
    """Median over the rounds of one[key] / two[key] (summaries from one run_arms call)."""
    return statistics.median(a[key] / b[key] for a, b in zip(one["runs"], two["runs"]))


def run_classify(test, model, predictions, repeat):
    """Wall time (interpreter start included) and peak RSS of rank_classify's main.

    The child's VmHWM is written at exit by an atexit hook: os.wait4's
    ru_maxrss would also count this (forking) process's own peak.
    """
    code = ("import atexit, shutil, sys; "
            "atexit.register(shutil.copyfile, '/proc/self/status', sys.argv.pop(1)); "
            "from rankfast.cli.classify import classify_main; "
            "sys.exit(classify_main(sys.argv[1:]))")
    status_copy = predictions + ".status"
    best = None
    for _ in range(repeat):
        with open(predictions + ".log", "wb") as log:
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", code, status_copy, test, model,
                                   predictions], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
            seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            with open(predictions + ".log", encoding="utf-8", errors="replace") as log:
                raise RuntimeError(f"rank_classify failed ({proc.returncode}):\n{log.read()}")
        with open(status_copy) as status:
            peak = next(int(line.split()[1]) * 1024 for line in status
                        if line.startswith("VmHWM:"))
        best = (seconds, peak) if best is None else (min(best[0], seconds), max(best[1], peak))
    return best


def has_module(name):
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is None)"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


# --------------------------------------------------------------------------

def _mb(n):
    return n / MB


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=200.0,
                        help="approximate size of each generated file (default 200)")
    parser.add_argument("--workdir", help="where the files go (default: a new temporary "
                        "directory under benchmarks/_work/)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="children per measurement; median time, highest peak (default 1)")
    parser.add_argument("--svm-rank", metavar="DIR",
                        help="folder with svm_rank_classify: run it and rank_classify in turn "
                        "on the dense file, with wall and CPU ratios")
    parser.add_argument("--compare", metavar="DIR",
                        help="another rankfast checkout, kernels built in place: its rankfast "
                        "readers run in turn with this checkout's, with ratio rows")
    parser.add_argument("--skip-sklearn", action="store_true",
                        help="leave out scikit-learn's readers (query_id=True takes minutes)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds after which a reader's child is killed and reported "
                        "as timed out (default 300; scikit-learn's query_id=True is "
                        "quadratic in the number of lines)")
    args = parser.parse_args(argv)
    if args.size_mb <= 0 or args.repeat < 1:
        parser.error("--size-mb must be positive and --repeat at least 1")
    if args.svm_rank and not os.access(os.path.join(args.svm_rank, "svm_rank_classify"), os.X_OK):
        parser.error(f"--svm-rank {args.svm_rank}: no executable svm_rank_classify there")
    if args.compare and not os.path.isfile(os.path.join(args.compare, "rankfast", "__init__.py")):
        parser.error(f"--compare {args.compare}: no rankfast/__init__.py there")

    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        workdir = args.workdir
    else:
        os.makedirs(os.path.join(HERE, "_work"), exist_ok=True)
        workdir = tempfile.mkdtemp(prefix="bench_reader-", dir=os.path.join(HERE, "_work"))
    created = []
    try:
        return _run(args, workdir, created)
    finally:
        if not args.keep:
            for path in created:
                if os.path.exists(path):
                    os.remove(path)
            if not args.workdir:
                shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"\nfiles kept in {workdir}")


def _print_comparison(compared, names, other):
    """This checkout's readers against ``other``'s, pair by pair (medians of per-pair ratios)."""
    if not compared:
        return
    print(f"\nthis checkout ({ROOT}) against {other}, run in turn: MB/s, and ours over theirs "
          f"(median of the pairs' ratios)")
    for reader, which, n_jobs, size, ours, theirs in compared:
        if ours is None or theirs is None:
            print(f"  {names[reader]:28s} {which:9s} -j{n_jobs}: timed out")
            continue
        wall = statistics.median(b["seconds"] / a["seconds"] for a, b in zip(ours["runs"], theirs["runs"]))
        cpu = statistics.median(b["cpu"] / a["cpu"] for a, b in zip(ours["runs"], theirs["runs"]))
        target = ""
        if reader == "rankfast" and n_jobs == 1 and which in ("dense", "sparse"):
            target = (f"  target >= {TARGET_SPEED_UP}x: "
                      f"{'ok' if min(wall, cpu) >= TARGET_SPEED_UP else 'MISS'}")
        print(f"  {names[reader]:28s} {which:9s} -j{n_jobs}: ours {_mb(size) / ours['seconds']:7.1f} "
              f"wall {_mb(size) / ours['cpu']:7.1f} cpu, theirs {_mb(size) / theirs['seconds']:7.1f} "
              f"wall {_mb(size) / theirs['cpu']:7.1f} cpu; ratio {wall:5.2f}x wall {cpu:5.2f}x cpu"
              f"{target}")
        if target:
            print("      " + _user_and_system(ours["runs"], theirs["runs"]))


def _user_and_system(ours, theirs):
    """User CPU ratio (median of the pairs) and each side's range of system CPU seconds.

    System time is the page faults of the arrays (and the read's copy out of the page
    cache): a reader whose arrays get huge pages (numpy advises them, 17fd399's did)
    takes them cheaply when the guest has used that memory before and slowly when the
    host must back it, so its system time, and every ratio with it, varies from one
    process to the next; the user time is the parsing.
    """
    if "user" not in ours[0] or "user" not in theirs[0]:
        return "(user and system CPU: not reported by this child)"
    user = statistics.median(b["user"] / max(a["user"], 1e-9) for a, b in zip(ours, theirs))
    span = lambda runs: f"{min(r['system'] for r in runs):.2f}-{max(r['system'] for r in runs):.2f} s"  # noqa: E731
    return (f"user CPU ratio {user:4.2f}x; system CPU (page faults, the read's copy) ours "
            f"{span(ours)}, theirs {span(theirs)} over {len(ours)} runs")


def _run(args, workdir, created):
    files = {}
    for kind in ("dense", "sparse"):
        path = os.path.join(workdir, f"{kind}.svmlight")
        created.append(path)
        t0 = time.perf_counter()
        size = generate(path, kind, args.size_mb, args.seed)
        files[kind] = (path, size)
        print(f"generated {kind:6s} {_mb(size):8.1f} MB in {time.perf_counter() - t0:5.1f} s  "
              f"{path}")
    gz = files["dense"][0] + ".gz"
    created.append(gz)
    t0 = time.perf_counter()
    gzip_copy(files["dense"][0], gz)
    print(f"gzipped dense -> {_mb(os.path.getsize(gz)):.1f} MB in "
          f"{time.perf_counter() - t0:.1f} s")

    with_sklearn = not args.skip_sklearn and has_module("sklearn")
    # (reader, file, thread counts): one and two threads run in turn, for the paired ratio
    plan = [("rankfast", "dense", (1, 2)), ("rankfast", "sparse", (1, 2)),
            ("rankfast", "dense.gz", (1, 2)), ("prefaulted", "dense", (1, 2)),
            ("gunzip", "dense.gz", (1,)), ("kernel", "dense", (1,)), ("kernel", "sparse", (1,))]
    if with_sklearn:
        plan += [("sklearn", "dense", (1,)), ("sklearn", "sparse", (1,)),
                 ("sklearn-qid", "dense", (1,)), ("sklearn-qid", "sparse", (1,))]

    rows, compared, competition = [], [], {}
    for reader, which, thread_counts in plan:
        path = gz if which == "dense.gz" else files[which][0]
        size = files["dense" if which == "dense.gz" else which][1]
        other = args.compare if reader in ("rankfast", "kernel") else None
        print(f"  reading {which:8s} with {reader} (n_jobs={' and '.join(map(str, thread_counts))}) "
              "...", flush=True)
        roots = (ROOT, other) if other else (ROOT,)
        results, others, wall = others_cpu(lambda: run_arms(
            reader, path, [(root, n_jobs) for root in roots for n_jobs in thread_counts],
            args.repeat, args.timeout))
        competition[(reader, which)] = others, wall
        for n_jobs in thread_counts:
            ours = results[(ROOT, n_jobs)]
            rows.append((reader, which, n_jobs, size, ours))
            if other:
                compared.append((reader, which, n_jobs, size, ours, results[(other, n_jobs)]))

    names = {"rankfast": "rankfast.load_svmlight",
             "prefaulted": "load_svmlight, no faults",
             "kernel": "_svmlight.parse_into only",
             "gunzip": "gzip module alone",
             "sklearn": "sklearn load_svmlight_file",
             "sklearn-qid": "sklearn ... query_id=True"}
    print()
    print(f"{'reader':28s} {'file':9s} {'MB':>6s} {'seconds':>8s} {'MB/s':>6s} "
          f"{'cpu s':>7s} {'MB/cpu s':>8s} {'peak RSS MB':>11s} {'array MB':>8s} "
          f"{'RSS/arrays':>10s}  target (wall / cpu)")
    baselines = {}
    for reader, which, n_jobs, size, r in rows:
        name = names[reader] + (f" -j{n_jobs}" if reader in ("rankfast", "prefaulted") else "")
        if r is None:
            slowest = f">{args.timeout:.0f}"
            fastest = f"<{_mb(size) / args.timeout:.2f}"
            print(f"{name:28s} {which:9s} {_mb(size):6.1f} {slowest:>8s} "
                  f"{fastest:>6s}  (killed after --timeout {args.timeout:.0f} s)")
            continue
        speed, cpu_speed = _mb(size) / r["seconds"], _mb(size) / r["cpu"]
        extra = r["peak"] - r["base"] if reader != "prefaulted" else float("nan")  # pages reused
        baselines[reader] = r["base"]
        ratio = extra / r["arrays"] if r["arrays"] else float("nan")
        target = ""
        if reader == "rankfast" and n_jobs == 1:
            verdict = lambda ok: "ok" if ok else "MISS"  # noqa: E731
            target = (f"{verdict(speed >= TARGET_MB_S)} / {verdict(cpu_speed >= TARGET_MB_S)} "
                      f">={TARGET_MB_S:.0f} MB/s, {verdict(ratio <= TARGET_MEMORY_RATIO)} "
                      f"<={TARGET_MEMORY_RATIO:.0f}x arrays")
        arrays = _mb(r["arrays"]) if r["arrays"] else float("nan")
        print(f"{name:28s} {which:9s} {_mb(size):6.1f} {r['seconds']:8.2f} "
              f"{speed:6.1f} {r['cpu']:7.2f} {cpu_speed:8.1f} {_mb(extra):11.1f} "
              f"{arrays:8.1f} {ratio:10.2f}  {target}")
    others = [o for o, _ in competition.values()]      # None each where /proc/stat is missing
    print("seconds: wall time of the read inside the child; cpu s: its user + system time "
          "(where other processes took much CPU, wall MB/s understate: compare MB/cpu s); "
          + quietness(None if None in others else sum(others),
                      sum(w for _, w in competition.values())))
    if args.skip_sklearn:
        print("sklearn readers: skipped (--skip-sklearn)")
    elif not with_sklearn:
        print("sklearn readers: skipped (scikit-learn is not importable; "
              "'pip install scikit-learn' to compare, it is a benchmark-only dependency)")
    print("peak RSS MB = child's VmHWM after the read minus its VmHWM once imports are "
          "done; import baselines: " +
          ", ".join(f"{k} {_mb(v):.0f} MB" for k, v in baselines.items()))
    print("'_svmlight.parse_into only' reads the file into memory first (untimed, "
          "in its baseline) and parses CHUNK_BYTES chunks: the kernel without data.py's wrapper")
    print("'gzip module alone' decompresses dense.gz into a CHUNK_BYTES buffer and drops it "
          "with Python's gzip module: the floor of reading the compressed file that way "
          "(rankfast inflates with zlib itself, faster; -j2 parses while one thread decompresses)")

    _print_comparison(compared, names, args.compare)
    by = {(reader, which): r for reader, which, n_jobs, _, r in rows if n_jobs == 1}
    by2 = {(reader, which): r for reader, which, n_jobs, _, r in rows if n_jobs == 2}
    for which in ("dense", "sparse"):
        one, two = by[("rankfast", which)], by2.get(("rankfast", which))
        if one and two:
            speed_up = paired_ratio(one, two)
            print(f"rankfast two threads over one, {which:6s}: {speed_up:5.2f}x "
                  f"as fast (wall); CPU seconds {paired_ratio(two, one, 'cpu'):5.2f}x one thread's; "
                  f"target >= {TARGET_SPEED_UP}x on a quiet machine: "
                  f"{'ok' if speed_up >= TARGET_SPEED_UP else 'MISS'}; "
                  f"{quietness(*competition[('rankfast', which)])}; minor page faults "
                  f"{one['faults']:,} and {two['faults']:,}")
    one, two = by.get(("prefaulted", "dense")), by2.get(("prefaulted", "dense"))
    if one and two:
        print(f"without page faults (the dense file read again in a process whose allocator "
              f"keeps freed memory: {one['faults']:,} and {two['faults']:,} faults): one thread "
              f"{one['seconds']:.3f} s, two {two['seconds']:.3f} s, {paired_ratio(one, two):.2f}x "
              f"as fast (wall); CPU seconds {paired_ratio(two, one, 'cpu'):.2f}x one thread's")
    for which in ("dense", "sparse"):
        ours = by[("rankfast", which)]
        if ours is None:
            continue
        for other in ("sklearn", "sklearn-qid"):
            if (other, which) not in by:
                continue
            theirs = by[(other, which)]
            if theirs is None:
                print(f"rankfast vs {names[other]:26s} {which:6s}: the latter timed out")
                continue
            print(f"rankfast vs {names[other]:26s} {which:6s}: "
                  f"{theirs['seconds'] / ours['seconds']:6.2f}x faster (wall), "
                  f"{theirs['cpu'] / ours['cpu']:6.2f}x (cpu), "
                  f"{(ours['peak'] - ours['base']) / (theirs['peak'] - theirs['base']):5.2f}x "
                  f"the peak memory")
            if other == "sklearn-qid":
                same = (ours["shape"][0] == theirs["shape"][0] and ours["nnz"] == theirs["nnz"]
                        and np.allclose(ours["checksum"], theirs["checksum"], rtol=1e-9))
                if not same:
                    print(f"  WARNING: results differ: rankfast {ours['shape']} nnz "
                          f"{ours['nnz']} {ours['checksum']}, sklearn {theirs['shape']} nnz "
                          f"{theirs['nnz']} {theirs['checksum']}")

    print()
    if not has_module("rankfast.cli"):
        print("rank_classify: skipped (rankfast.cli not available)")
        return 0
    sys.path.insert(0, ROOT)
    from rankfast import LinearModel, write_model
    model = os.path.join(workdir, "model.dat")
    predictions = os.path.join(workdir, "predictions")
    created += [model, predictions, predictions + ".log", predictions + ".status"]
    w = np.random.default_rng([args.seed, 2]).standard_normal(DENSE_FEATURES)
    write_model(LinearModel.from_dense(w), model)
    seconds, peak = run_classify(files["dense"][0], model, predictions, args.repeat)
    size = files["dense"][1]
    print(f"rank_classify dense {_mb(size):.1f} MB: {seconds:.2f} s wall (interpreter start "
          f"included), {_mb(size) / seconds:.1f} MB/s, peak RSS {_mb(peak):.1f} MB (absolute)")
    if args.svm_rank:
        created.append(predictions + ".svm_rank")
        _against_svm_rank(args, files["dense"], model, predictions)
    return 0


def run_program(argv):
    """Wall and CPU seconds (user + system, from wait4) of one run of argv, output discarded."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited with {proc.returncode}")
    return seconds, usage.ru_utime + usage.ru_stime


def _against_svm_rank(args, dense, model, predictions):
    """svm_rank_classify and rank_classify on the dense file in turn: medians and ratios."""
    path, size = dense
    ours_argv = [sys.executable, os.path.join(ROOT, "rank_classify"), path, model, predictions]
    theirs_argv = [os.path.join(args.svm_rank, "svm_rank_classify"), path, model,
                   predictions + ".svm_rank"]
    ours, theirs = [], []
    for k in range(max(args.repeat, 3)):
        pair = [(theirs_argv, theirs), (ours_argv, ours)]
        for argv, into in (pair if k % 2 == 0 else pair[::-1]):
            into.append(run_program(argv))
    wall = statistics.median(t[0] / o[0] for o, t in zip(ours, theirs))
    cpu = statistics.median(t[1] / o[1] for o, t in zip(ours, theirs))
    ranked = np.loadtxt(predictions, ndmin=1)
    reference = np.loadtxt(predictions + ".svm_rank", ndmin=1)
    if ranked.shape != reference.shape or not np.allclose(ranked, reference, rtol=1e-6, atol=1e-9):
        print("  WARNING: rank_classify's and svm_rank_classify's predictions differ")
    load = os.getloadavg()
    print(f"svm_rank_classify vs rank_classify, dense {_mb(size):.1f} MB, {len(ours)} runs each in "
          f"turn (whole processes): svm_rank {statistics.median(t[0] for t in theirs):.2f} s wall "
          f"{statistics.median(t[1] for t in theirs):.2f} s cpu, rank_classify "
          f"{statistics.median(o[0] for o in ours):.2f} s wall {statistics.median(o[1] for o in ours):.2f} "
          f"s cpu: rank_classify {wall:.2f}x faster (wall), {cpu:.2f}x (cpu); load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    sys.exit(main())
