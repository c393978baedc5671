"""Model files of every learner, written by this checkout and by another, compared byte for byte.

For a change that must not change behaviour (a refactor, a move): ``rank_learn``
of both checkouts trains every learner, with one C and with a C list, with
normalisation, query weights and a kernel approximation, on the shared real
data (MQ2008 fold 1, the MSLR-WEB sample, LightGBM's example with its group
file), and the two model files must be the same bytes.  Each checkout runs
its own launcher with its own package (PYTHONPATH), both built in place.

Usage::

    python benchmarks/compare_models.py --baseline /path/to/other/checkout [--quick]

Prints one line per run (``same`` or ``DIFFERENT``) and exits 1 if any differs.
"""
import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"

# (name, training file, flags): every -a, and the paths a fit can take.
RUNS = [
    ("prsvm", "mq2008", ["-a", "prsvm", "-c", "1"]),
    ("prsvm C list", "mq2008", ["-a", "prsvm", "-c", "0.1,1,10", "--folds", "3"]),
    ("prsvm -l 2 zscore", "mslr", ["-a", "prsvm", "-c", "0.1", "-l", "2", "--normalize", "zscore"]),
    ("prsvm weights", "mq2008", ["-a", "prsvm", "-c", "1", "--weights", "WEIGHTS"]),
    ("svmrank", "mq2008", ["-a", "svmrank", "-c", "1"]),
    ("svmrank query norm", "mslr", ["-a", "svmrank", "-c", "0.01", "--normalize", "query"]),
    ("svmrank raw (smoothing)", "mslr", ["-a", "svmrank", "-c", "1"]),
    ("rankncg", "mq2008", ["-a", "rankncg", "-c", "1"]),
    ("rankncg C list", "mq2008", ["-a", "rankncg", "-c", "0.1,1", "--folds", "3"]),
    ("rankncg direct", "lightgbm", ["-a", "rankncg", "-c", "0.1", "--erfc", "direct"]),
    ("rankrls", "mq2008", ["-a", "rankrls", "-c", "1"]),
    ("rankrls C list (LQO)", "mq2008", ["-a", "rankrls", "-c", "0.01,1,100"]),
    ("rankrls C list folds", "mslr", ["-a", "rankrls", "-c", "0.1,10", "--folds", "3"]),
    ("rankrls log norm", "lightgbm", ["-a", "rankrls", "-c", "1", "--normalize", "log"]),
    ("greedy", "mq2008", ["-a", "greedy", "-c", "1", "-k", "10"]),
    ("greedy auto, C list", "mslr", ["-a", "greedy", "-c", "0.1,1", "--folds", "3",
                                     "--normalize", "query"]),
    ("nystrom rbf", "mq2008", ["-t", "2", "-g", "0.1", "-c", "1", "--landmarks", "100"]),
    ("nystrom, Hessian formed", "mslr", ["-t", "2", "-g", "auto", "--normalize", "zscore",
                                         "--landmarks", "300", "-c", "1000"]),
    ("rff rbf rankrls", "mq2008", ["-t", "2", "-g", "0.1", "-a", "rankrls", "-c", "1",
                                  "--approx", "rff", "--landmarks", "100"]),
]
QUICK = {"prsvm", "svmrank", "rankncg", "rankrls", "greedy", "nystrom rbf"}


def prepare(work):
    """The training files (plain text: every reader path the same), and a weights file."""
    files = {}
    mq = work / "mq2008.dat"
    with open(mq, "wb") as out:
        for part in ("S1", "S2", "S3"):
            with gzip.open(SHARED / "mq2008" / f"{part}.txt.gz") as f:
                shutil.copyfileobj(f, out)
    files["mq2008"] = mq
    with gzip.open(SHARED / "mslr_web_fold1_5k" / "train.5k.txt.gz") as f:
        (work / "mslr.dat").write_bytes(f.read())
    files["mslr"] = work / "mslr.dat"
    with gzip.open(SHARED / "lightgbm_lambdarank" / "rank.train.gz") as f:
        (work / "lightgbm.dat").write_bytes(f.read())
    shutil.copy(SHARED / "lightgbm_lambdarank" / "rank.train.query", work / "lightgbm.dat.query")
    files["lightgbm"] = work / "lightgbm.dat"
    queries = []
    for line in mq.read_text().splitlines():
        qid = line.split()[1]
        if not queries or queries[-1] != qid:
            queries.append(qid)
    weights = work / "weights.txt"
    weights.write_text("".join(f"{1 + (i % 3)}\n" for i in range(len(queries))))
    files["WEIGHTS"] = weights
    return files


def train(checkout, flags, data, model):
    env = dict(os.environ, PYTHONPATH=str(checkout))
    done = subprocess.run([sys.executable, str(checkout / "rank_learn"), "-v", "0", *flags,
                           str(data), str(model)], env=env, capture_output=True, text=True,
                          timeout=900)
    return done.returncode, done.stderr.strip()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the other checkout, built in place")
    parser.add_argument("--quick", action="store_true", help="one run per learner")
    args = parser.parse_args(argv)
    baseline = Path(args.baseline).resolve()
    different = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        files = prepare(work)
        for name, data, flags in RUNS:
            if args.quick and name not in QUICK:
                continue
            flags = [str(files.get(flag, flag)) for flag in flags]
            results = []
            for side, checkout in (("new", ROOT), ("old", baseline)):
                model = work / f"model.{side}"
                status, err = train(checkout, flags, files[data], model)
                results.append((status, model.read_bytes() if model.exists() else b"", err))
                if model.exists():
                    model.unlink()
            (s1, m1, e1), (s2, m2, e2) = results
            same = s1 == s2 and m1 == m2
            different += not same
            detail = "" if same else f"  (status {s1} vs {s2}; {e1[-200:]!r} / {e2[-200:]!r})"
            print(f"{'same' if same else 'DIFFERENT':9s} {name:24s} {data:9s} "
                  f"{len(m1):7d} bytes{detail}", flush=True)
    print(f"{different} of the runs differ" if different else "every model file is the same")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
