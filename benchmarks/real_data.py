"""The shared real ranking sets, read in place from ../shared/data, as (name, train, test) splits.

* ``mslr``: the MSLR-WEB Fold1 5k-line sample (raw features up to 2.3e8), its own train/test;
* ``mq2008``: LETOR 4.0 MQ2008 Fold1 (QueryLevelNorm already applied), train/test;
* ``house_8l``, ``cpu_act``, ``abalone``: Torgo's regression sets (PMLB / Chu Wei copies)
  as one ranking each (the target is the relevance), 75% / 25% split of the rows with a
  fixed seed: one large, badly scaled ranking.
"""
import gzip
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))          # this checkout's rankfast, even if another is installed

import rankfast  # noqa: E402
from rankfast import Dataset  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


def _regression(path, separator=None, header=False):
    """(X, target) of a delimited text file whose last column is the target."""
    with gzip.open(path, "rt") as stream:
        lines = stream.read().splitlines()
    if header:
        lines = lines[1:]
    rows = [[float(v) for v in (line.replace(",", " ").split() if separator is None
                               else line.split(separator)) if v.strip()]
            for line in lines if line.strip()]
    table = np.array(rows)
    return table[:, :-1], table[:, -1]


def _one_ranking(X, target, seed=0):
    """(train, test) Datasets: one ranking each, 75% / 25% of the rows."""
    order = np.random.default_rng(seed).permutation(len(target))
    cut = (3 * len(target)) // 4
    parts = []
    for rows in (np.sort(order[:cut]), np.sort(order[cut:])):
        parts.append(Dataset(np.ascontiguousarray(X[rows]), target[rows],
                             np.ones(len(rows), dtype=np.int64), np.arange(len(rows)) + 1))
    return parts


def mslr():
    folder = DATA / "mslr_web_fold1_5k"
    return (rankfast.load_svmlight(str(folder / "train.5k.txt.gz"), n_features=136),
            rankfast.load_svmlight(str(folder / "test.5k.txt.gz"), n_features=136))


def mq2008():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import mq2008 as letor
    train, _, test = letor.fold(1)
    return train, test


def house_8l():
    return _one_ranking(*_regression(DATA / "torgo_regression" / "pmlb" / "218_house_8L.tsv.gz",
                                     separator="\t", header=True))


def cpu_act():
    return _one_ranking(*_regression(DATA / "torgo_regression" / "pmlb" / "197_cpu_act.tsv.gz",
                                     separator="\t", header=True))


def abalone():
    return _one_ranking(*_regression(DATA / "torgo_regression" / "chu_wei" / "abalone.data.gz"))


SETS = {"mslr": mslr, "mq2008": mq2008, "house_8l": house_8l, "cpu_act": cpu_act,
        "abalone": abalone}


def available():
    return DATA.is_dir()
