"""LETOR 4.0 MQ2008 folds, read in place from ../shared/data/mq2008 (S1..S5)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))          # this checkout's rankfast, even if another is installed

import rankfast  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "mq2008"

# Official LETOR 4.0 layout: fold k trains on three partitions, validates on the
# next and tests on the one after.
FOLDS = {
    1: (("S1", "S2", "S3"), "S4", "S5"),
    2: (("S2", "S3", "S4"), "S5", "S1"),
    3: (("S3", "S4", "S5"), "S1", "S2"),
    4: (("S4", "S5", "S1"), "S2", "S3"),
    5: (("S5", "S1", "S2"), "S3", "S4"),
}

# LETOR 4.0's published RankSVM baseline on MQ2008 (mean over the five folds).
LETOR_RANKSVM = {"MAP": 0.4696, "NDCG@10": 0.2279}


_PARTS = {}                 # the folds' parts, each read once


def _part(name):
    if name not in _PARTS:
        _PARTS[name] = rankfast.load_svmlight(str(DATA / f"{name}.txt.gz"), n_features=46)
    return _PARTS[name]


def _concat(parts):
    import numpy as np
    import scipy.sparse as sp
    return rankfast.Dataset(sp.vstack([p.X for p in parts]).tocsr(),
                            np.concatenate([p.y for p in parts]),
                            np.concatenate([p.qid for p in parts]),
                            np.concatenate([p.line for p in parts]))


def fold(k):
    """(train, validation, test) Datasets of fold k (1..5)."""
    train, vali, test = FOLDS[k]
    return _concat([_part(name) for name in train]), _part(vali), _part(test)


def available():
    return all((DATA / f"S{i}.txt.gz").exists() for i in range(1, 6))
