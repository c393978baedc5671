"""svm_rank, svm_proprank and liblinear-ranksvm run beside rankfast, in turn, in the same benchmark run.

None is part of the project: build them from their public sources in a
folder outside it (../shared/reference/svm_rank/BUILDING.md says where the
parts are) and name the folders with ``--svm-rank DIR`` (holding
svm_rank_learn and svm_rank_classify), ``--svm-proprank DIR`` (holding
svm_proprank_learn and svm_proprank_classify) and ``--liblinear-ranksvm DIR``
(holding liblinear's train and predict built with the ranksvm extension), or
with the environment variables RANKFAST_SVM_RANK, RANKFAST_SVM_PROPRANK and
RANKFAST_LIBLINEAR_RANKSVM.  Without them a benchmark prints the figures
recorded in ../shared/reference (or in its own text), labelled as recorded on
another machine: svm_rank built here ran 1.8-2.5x faster than those, so a
ratio against them is inflated by about that much.

Every run is a whole process; CPU seconds are its user + system time, peak
memory its maximum resident set (/usr/bin/time's, so that this Python
process's own peak is not counted in it).  Runs of the programs compared go in
turn (A B, B A, ...) and each ratio is the median of the pairs' ratios, so a
machine whose load drifts slows both alike; the load average is printed with
every table.
"""
import os
import statistics
import subprocess
import time
from collections import namedtuple

SVM_RANK_ENV = "RANKFAST_SVM_RANK"
LIBLINEAR_ENV = "RANKFAST_LIBLINEAR_RANKSVM"
SVM_PROPRANK_ENV = "RANKFAST_SVM_PROPRANK"
RECORDED = "recorded on another machine"
TIME = "/usr/bin/time"

Run = namedtuple("Run", "wall cpu peak_mb")


def add_arguments(parser):
    """--svm-rank DIR and --liblinear-ranksvm DIR (defaults from the environment)."""
    parser.add_argument("--svm-rank", metavar="DIR", default=os.environ.get(SVM_RANK_ENV),
                        help="folder with svm_rank_learn and svm_rank_classify, built outside "
                        f"the project (default ${SVM_RANK_ENV}); they then run in turn with "
                        "rankfast in this run, else svm_rank's recorded figures are quoted")
    parser.add_argument("--svm-proprank", metavar="DIR",
                        default=os.environ.get(SVM_PROPRANK_ENV),
                        help="folder with svm_proprank_learn and svm_proprank_classify "
                        f"(default ${SVM_PROPRANK_ENV})")
    parser.add_argument("--liblinear-ranksvm", metavar="DIR",
                        default=os.environ.get(LIBLINEAR_ENV),
                        help="folder with liblinear-ranksvm's train and predict "
                        f"(default ${LIBLINEAR_ENV})")


def programs(directory, *names):
    """The paths of names in directory, or None when directory is unset or one is missing."""
    if not directory:
        return None
    paths = [os.path.join(directory, name) for name in names]
    if not all(os.access(path, os.X_OK) for path in paths):
        missing = [path for path in paths if not os.access(path, os.X_OK)]
        raise SystemExit(f"{directory}: no executable {', '.join(missing)}")
    return paths


def svm_rank(args):
    """(svm_rank_learn, svm_rank_classify) from --svm-rank, or None."""
    return programs(args.svm_rank, "svm_rank_learn", "svm_rank_classify")


def svm_proprank(args):
    """(svm_proprank_learn, svm_proprank_classify) from --svm-proprank, or None."""
    return programs(args.svm_proprank, "svm_proprank_learn", "svm_proprank_classify")


def liblinear(args):
    """(train, predict) of liblinear-ranksvm from --liblinear-ranksvm, or None."""
    return programs(args.liblinear_ranksvm, "train", "predict")


def run(argv, env=None, cwd=None, output=None):
    """One whole process: Run(wall s, user + system s, peak RSS MB); its standard output
    goes to the file ``output`` (overwritten), else nowhere."""
    timed = [TIME, "-f", "%U %S %M", *argv] if os.access(TIME, os.X_OK) else list(argv)
    start = time.perf_counter()
    with open(output or os.devnull, "wb") as out:
        proc = subprocess.Popen(timed, env=env, cwd=cwd, stdout=out,
                                stderr=subprocess.PIPE, text=True)
        err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {proc.returncode}:\n{err[-2000:]}")
    if timed[0] == TIME:
        user, system, peak = err.strip().splitlines()[-1].split()
        return Run(wall, float(user) + float(system), int(peak) / 1000.0)
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1000.0)


def in_turn(commands, repeat, env=None, outputs=None):
    """{name: [Run, ...]}: each of commands ((name, argv) pairs) run repeat times, in
    turn, the order reversed every other round; outputs: {name: file for its stdout}."""
    runs = {name: [] for name, _ in commands}
    for k in range(repeat):
        for name, argv in (commands if k % 2 == 0 else commands[::-1]):
            runs[name].append(run(argv, env=env, output=(outputs or {}).get(name)))
    return runs


def median(runs, field):
    return statistics.median(getattr(r, field) for r in runs)


def ratio(ours, theirs, field):
    """Median over the pairs of theirs / ours (how many times faster or smaller ours is)."""
    return statistics.median(getattr(t, field) / getattr(o, field) for o, t in zip(ours, theirs))


def figures(runs):
    """'W s wall, C s cpu, P MB' of a command's runs (medians, highest peak)."""
    return (f"{median(runs, 'wall'):.2f} s wall, {median(runs, 'cpu'):.2f} s cpu, "
            f"{max(r.peak_mb for r in runs):.0f} MB")


def ratios(ours, theirs):
    """'Rc x cpu, Rw x wall, Rm x peak' of theirs over ours, medians of the pairs."""
    return (f"{ratio(ours, theirs, 'cpu'):.1f}x cpu, {ratio(ours, theirs, 'wall'):.1f}x wall, "
            f"peak {max(r.peak_mb for r in ours) / max(r.peak_mb for r in theirs):.2f}x theirs")


def load():
    """The machine's load average, as printed beside every table."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def without_comments(source, target):
    """Copy an SVMlight file without its '#' comments (liblinear's reader refuses them)."""
    with open(source, "rb") as src, open(target, "wb") as out:
        for line in src:
            out.write(line.split(b"#", 1)[0].rstrip() + b"\n")
    return target
