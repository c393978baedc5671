"""Choose C by cross-validation and draw the CV curve, as ``rank_learn --plot`` does.

    python docs/examples/cv_plot.py [OUT.png|OUT.svg]

Trains RankSVM (prsvm) on the example data (examples/train.dat) over a grid of C,
with 5 folds of queries and the one-standard-error rule, prints the table and
writes the picture: mean NDCG@10 ± one standard error against C, the chosen C's
line in the legend.  Needs matplotlib (``pip install "rankfast[plot]"``).
"""
import os
import sys
import tempfile
from pathlib import Path

import rankfast
from rankfast import RankSVM, plot

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def main(out=None):
    data = rankfast.load_svmlight(str(EXAMPLES / "train.dat"))
    ranker = RankSVM(C=[0.001, 0.01, 0.1, 1.0, 10.0, 100.0], cv=5, cv_metric="ndcg@10",
                     cv_rule="1se", random_state=0)
    ranker.fit(data.features, data.y, data.qid)
    print(ranker.cv_result_.format())
    print(f"chosen C = {ranker.C_:g}")

    figure = plot.selection_figure(ranker)       # one panel here: the CV curve
    out = out or os.path.join(tempfile.mkdtemp(), "cv.png")
    plot.save(figure, out)                       # PNG or SVG by the suffix
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
