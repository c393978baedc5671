"""rankfast's kernel recipe beside a default LightGBM on the shared real data, in one run.

The recipe is ``rank_learn -t 2 --normalize zscore -g auto``: an RBF kernel through a
500-landmark Nyström map, gamma by the median heuristic on the z-scored features, every
other flag at its default (prsvm, -c 0.01).  Beside it, on the same splits: the linear
default, a best-effort linear, the recipe at -c 1, with 1000 landmarks and with
--normalize log in place of zscore (heavy tails), the RBF on features standardised by hand
at scikit-learn's gamma='scale' (1/d on standardised data), and LightGBM at its defaults
(verbose=-1 only; benchmark-only: ``pip install lightgbm``, its rows are skipped without it).

* Torgo's regression sets (../shared/data/torgo_regression) with at least 150 rows, each
  as ONE ranking: an 80/20 split of the rows by np.random.default_rng(0).permutation,
  labels the target's tertiles (0/1/2, cut points from the training rows); metric: test
  pair accuracy (rankfast.metrics.pairwise_accuracy; tied scores count as wrong).
  LightGBM: LGBMRegressor fitted on the tertile labels of the raw features.
* The MSLR-WEB 5k sample (raw features) and MQ2008 Fold1 (benchmarks/real_data.py):
  test NDCG@10, the "standard" convention of bench_real_data.py (gain 2^l - 1, discount
  1/log2(1 + p), a query without relevant documents scores 0).  LightGBM: LGBMRanker
  (lambdarank) with the group sizes of the qid runs.

CPU seconds are user + sys.  rank_learn is this checkout's launcher run as a child process,
timed by resource.getrusage(RUSAGE_CHILDREN) deltas: process start-up and reading its
SVMlight file included.  Its test scores come from its model file, read by
rankfast.read_model and predicted in this process (rank_classify's '%.8f' scores would
tie tiny ones; prediction is not timed).  LightGBM's is time.process_time() around fit
(every thread of this process; its arrays are already in memory).

    python benchmarks/bench_kernel_recipe.py [--sets cpu_act,mslr] [--plot FILE.png]
"""
import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import real_data

import rankfast
from rankfast import metrics

RANK_LEARN = [sys.executable, str(real_data.ROOT / "rank_learn")]
TORGO = real_data.DATA / "torgo_regression"

# Torgo's sets with at least 150 rows: name -> (file, separator, header row?)
SINGLE = {
    "cpu_act": ("pmlb/197_cpu_act.tsv.gz", "\t", True),
    "cpu_small": ("pmlb/227_cpu_small.tsv.gz", "\t", True),
    "puma8NH": ("pmlb/225_puma8NH.tsv.gz", "\t", True),
    "house_8L": ("pmlb/218_house_8L.tsv.gz", "\t", True),
    "house_16H": ("pmlb/574_house_16H.tsv.gz", "\t", True),
    "machine_cpu": ("pmlb/230_machine_cpu.tsv.gz", "\t", True),
    "abalone": ("chu_wei/abalone.data.gz", None, False),
    "auto_mpg": ("chu_wei/auto_mpg.data.gz", None, False),
    "boston_housing": ("chu_wei/boston_housing.data.gz", None, False),
    "stock": ("chu_wei/stock.data.gz", None, False),
    "triazines": ("chu_wei/triazines.data.gz", None, False),
    "wisconsin_wpbc": ("chu_wei/wisconsin_wpbc.data.gz", None, False),
}
LEFT_OUT = ("left out: chu_wei pyrimidines (74 rows) and diabetes (43 rows), too few for a "
            "20% test ranking; chu_wei machine_cpu, the same 209 machines as pmlb "
            "230_machine_cpu with 10 targets altered")
QUERY_SETS = ("mslr", "mq2008")

RECIPE = ["-t", "2", "--normalize", "zscore", "-g", "auto"]
LOG_RECIPE = ("recipe, --normalize log", ["-t", "2", "--normalize", "log", "-g", "auto"])
SINGLE_ROWS = [("linear (defaults)", []),
               ("linear zscore -c 1", ["--normalize", "zscore", "-c", "1"]),
               ("recipe", RECIPE),
               ("recipe -c 1", RECIPE + ["-c", "1"]),
               ("recipe --landmarks 1000 -c 1", RECIPE + ["--landmarks", "1000", "-c", "1"]),
               LOG_RECIPE]
QUERY_ROWS = [("linear (defaults)", []),
              ("recipe", RECIPE),
              ("recipe -c 1", RECIPE + ["-c", "1"]),
              LOG_RECIPE]
RAW_QUERY_ROW = ("linear --normalize query -c 1", ["--normalize", "query", "-c", "1"])
HAND = "hand-standardised -g 1/d -c 1"
PLOTTED = ("linear (defaults)", "recipe", "recipe -c 1", "LightGBM")


class Row(NamedTuple):
    label: str
    metric: float
    cpu: float
    info: str = ""


# ---- data ---------------------------------------------------------------------------------

def one_ranking(name):
    """(X_train, labels_train, X_test, labels_test): 80/20 of the rows, tertile labels."""
    file, separator, header = SINGLE[name]
    X, target = real_data._regression(TORGO / file, separator=separator, header=header)
    order = np.random.default_rng(0).permutation(len(target))
    train, test = np.sort(order[:(4 * len(target)) // 5]), np.sort(order[(4 * len(target)) // 5:])
    cuts = np.quantile(target[train], [1 / 3, 2 / 3])
    labels = np.searchsorted(cuts, target, side="right").astype(np.float64)
    return X[train], labels[train], X[test], labels[test]


def standardised(X_train, X_test):
    """Both parts standardised by the training rows' mean and deviation (1 where it is 0)."""
    mean, deviation = X_train.mean(axis=0), X_train.std(axis=0)
    deviation[deviation == 0] = 1.0
    return (X_train - mean) / deviation, (X_test - mean) / deviation


def group_sizes(qid):
    """Sizes of the runs of equal qid (LightGBM's groups), checked to be whole queries."""
    starts = np.r_[0, np.flatnonzero(np.diff(qid)) + 1]
    if len(np.unique(qid)) != len(starts):
        raise ValueError("a query's documents are not contiguous")
    return np.diff(np.r_[starts, len(qid)])


# ---- the two sides ------------------------------------------------------------------------

def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rank_learn(flags, train_path, folder):
    """(model, CPU seconds of the whole rank_learn process, its -v 1 facts: gamma, notes)."""
    model_path = Path(folder) / "model.dat"
    before = _children_cpu()
    run = subprocess.run(RANK_LEARN + ["-v", "1"] + flags + [str(train_path), str(model_path)],
                         capture_output=True, text=True)
    seconds = _children_cpu() - before
    if run.returncode != 0:
        raise RuntimeError(f"rank_learn {' '.join(flags)}: {run.stderr.strip()[-300:]}")
    return rankfast.read_model(str(model_path)), seconds, _facts(run.stdout, run.stderr)


def _facts(stdout, stderr):
    """'g=…(auto), N it' and the notes of a rank_learn -v 1 run."""
    facts = []
    gamma = re.search(r"^-g (\S+) \(auto", stdout, re.MULTILINE)
    if gamma:
        facts.append(f"g={gamma.group(1)} (auto)")
    iterations = re.search(r"after (\d+) iterations", stdout)
    if iterations:
        facts.append(f"{iterations.group(1)} it")
    facts += [line.split(": note: ", 1)[1] for line in stderr.splitlines() if ": note: " in line]
    return "; ".join(facts)


def lightgbm_scores(lightgbm, kind, X, labels, sizes, X_test):
    """(test scores, CPU seconds of fit) of LGBMRegressor or LGBMRanker at their defaults."""
    if kind == "ranker":
        model, fit_options = lightgbm.LGBMRanker(verbose=-1), {"group": sizes}
    else:
        model, fit_options = lightgbm.LGBMRegressor(verbose=-1), {}
    started = time.process_time()
    model.fit(X, labels, **fit_options)
    seconds = time.process_time() - started
    return model.predict(X_test), seconds


# ---- one set ------------------------------------------------------------------------------

def run_single(name, lightgbm, folder):
    """The rows of one Torgo set: test pair accuracy, CPU seconds."""
    X, y, X_test, y_test = one_ranking(name)
    qid, qid_test = np.ones(len(y), dtype=np.int64), np.ones(len(y_test), dtype=np.int64)

    def accuracy(scores):
        return metrics.pairwise_accuracy(scores, y_test, qid_test)

    train_path = Path(folder) / "train.dat"
    rankfast.dump_svmlight(X, y, qid, path=str(train_path))
    rows = []
    for label, flags in SINGLE_ROWS:
        model, seconds, info = rank_learn(flags, train_path, folder)
        rows.append(Row(label, accuracy(model.predict(X_test, qid_test)), seconds, info))
    Z, Z_test = standardised(X, X_test)
    hand_path = Path(folder) / "train-standardised.dat"
    rankfast.dump_svmlight(Z, y, qid, path=str(hand_path))
    gamma = 1.0 / X.shape[1]
    model, seconds, info = rank_learn(["-t", "2", "-g", repr(gamma), "-c", "1"], hand_path, folder)
    rows.append(Row(HAND, accuracy(model.predict(Z_test, qid_test)), seconds,
                    "; ".join(filter(None, [f"g={gamma:.4g}", info]))))
    if lightgbm is not None:
        scores, seconds = lightgbm_scores(lightgbm, "regressor", X, y, None, X_test)
        rows.append(Row("LightGBM", accuracy(scores), seconds, "LGBMRegressor()"))
    return rows


def run_query(name, lightgbm, folder):
    """The rows of MSLR or MQ2008: test NDCG@10 (standard), CPU seconds."""
    train, test = real_data.SETS[name]()

    def ndcg10(scores):
        return metrics.ndcg(scores, test.y, test.qid, 10, convention="standard")

    train_path = Path(folder) / "train.dat"
    rankfast.dump_svmlight(train, path=str(train_path))
    rows = []
    for label, flags in QUERY_ROWS + ([RAW_QUERY_ROW] if name == "mslr" else []):
        model, seconds, info = rank_learn(flags, train_path, folder)
        rows.append(Row(label, ndcg10(model.predict(test.features, test.qid)), seconds, info))
    if lightgbm is not None:
        scores, seconds = lightgbm_scores(lightgbm, "ranker", train.X.toarray(),
                                          train.y.astype(int), group_sizes(train.qid),
                                          test.X.toarray())
        rows.append(Row("LightGBM", ndcg10(scores), seconds, "LGBMRanker()"))
    return rows


# ---- reports ------------------------------------------------------------------------------

def print_set(name, metric_name, rows):
    print(f"\n{name}  ({metric_name})")
    for row in rows:
        print(f"  {row.label:30s} {row.metric:.4f} {row.cpu:7.2f} s  {row.info}")


def print_markdown(results):
    """Every set in one markdown table: metric (CPU s) per row."""
    labels = list(dict.fromkeys(row.label for rows in results.values() for row in rows))
    print("\n| set | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name, rows in results.items():
        by_label = {row.label: row for row in rows}
        cells = [f"{by_label[label].metric:.4f} ({by_label[label].cpu:.2f} s)"
                 if label in by_label else "" for label in labels]
        print(f"| {name} | " + " | ".join(cells) + " |")


def print_targets(results):
    """recipe − linear (≥ +0.02 on one ranking, ≥ 0 on LETOR), recipe − hand (|·| ≤ 0.005),
    and recipe, recipe -c 1 − LightGBM."""
    print("\n| set | recipe − linear (defaults) | recipe − hand | recipe -c 1 − hand "
          "| recipe − LightGBM | recipe -c 1 − LightGBM |")
    print("|---|---|---|---|---|---|")
    for name, rows in results.items():
        m = {row.label: row.metric for row in rows}
        bound = 0.0 if name in QUERY_SETS else 0.02
        gain = m["recipe"] - m["linear (defaults)"]
        cells = [f"{gain:+.5f} {'met' if gain >= bound else 'MISSED'} (≥ {bound:+.2f})"]
        for label in ("recipe", "recipe -c 1"):
            if HAND in m:
                off = m[label] - m[HAND]
                cells.append(f"{off:+.4f} {'met' if abs(off) <= 0.005 else 'MISSED'}")
            else:
                cells.append("")
        cells += [f"{m[label] - m['LightGBM']:+.4f}" if "LightGBM" in m else ""
                  for label in ("recipe", "recipe -c 1")]
        print(f"| {name} | " + " | ".join(cells) + " |")


def plot(results, path):
    """Grouped bars of PLOTTED per set: pair accuracy sets left, NDCG@10 sets right."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(names, title) for names, title in (
        ([n for n in results if n not in QUERY_SETS], "test pair accuracy (one ranking, tertiles)"),
        ([n for n in results if n in QUERY_SETS], "test NDCG@10")) if names]
    figure, axes = plt.subplots(1, len(panels), figsize=(13, 4.2), squeeze=False,
                                gridspec_kw={"width_ratios": [max(len(n), 3) for n, _ in panels]})
    width = 0.8 / len(PLOTTED)
    for ax, (names, title) in zip(axes[0], panels):
        for k, label in enumerate(PLOTTED):
            values = [next((row.metric for row in results[n] if row.label == label), np.nan)
                      for n in names]
            ax.bar(np.arange(len(names)) + (k - (len(PLOTTED) - 1) / 2) * width, values, width,
                   label=label)
        low = np.nanmin([row.metric for n in names for row in results[n]])
        ax.set_ylim(max(0.0, low - 0.05), 1.0 if names[0] not in QUERY_SETS else None)
        ax.set_xticks(np.arange(len(names)), names, rotation=30, ha="right")
        ax.set_title(title)
    figure.legend(*axes[0][0].get_legend_handles_labels(), loc="upper center",
                  ncol=len(PLOTTED), fontsize=9)
    figure.tight_layout(rect=(0, 0, 1, 0.93))
    figure.savefig(path, dpi=110)
    print(f"\nplot written to {path}")


# ---- the program --------------------------------------------------------------------------

def _lightgbm():
    try:
        import lightgbm
    except ImportError:
        print("LightGBM rows skipped: lightgbm is not installed (pip install lightgbm)")
        return None
    print(f"LightGBM {lightgbm.__version__}, defaults (100 trees, 31 leaves, its default "
          "threads), verbose=-1")
    return lightgbm


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(list(SINGLE) + list(QUERY_SETS)))
    parser.add_argument("--plot", metavar="FILE", help="grouped bars of the metrics (matplotlib)")
    args = parser.parse_args(argv)
    names = args.sets.split(",")
    unknown = [n for n in names if n not in SINGLE and n not in QUERY_SETS]
    if unknown:
        parser.error(f"--sets: unknown {', '.join(unknown)} (sets: "
                     f"{', '.join(list(SINGLE) + list(QUERY_SETS))})")
    if args.plot:
        try:
            rankfast.plot.require_matplotlib()      # before the runs, not after them
        except rankfast.errors.MissingDependencyError as exc:
            parser.error(f"--plot: {exc}")
    if not real_data.available():
        print(f"bench_kernel_recipe: skipped: {real_data.DATA} is not beside this checkout")
        return 0
    print(LEFT_OUT)
    lightgbm = _lightgbm()
    results = {}
    for name in names:
        with tempfile.TemporaryDirectory(prefix="kernel-recipe-") as folder:
            if name in QUERY_SETS:
                results[name] = run_query(name, lightgbm, folder)
                print_set(name, "test NDCG@10, CPU s", results[name])
            else:
                results[name] = run_single(name, lightgbm, folder)
                print_set(name, "test pair accuracy, CPU s", results[name])
    print_markdown(results)
    print_targets(results)
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
