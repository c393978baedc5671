"""Query weights (sample_weight) with a list of C, K folds, leave-query-out and greedy RankRLS.

A weight of 2 is the query twice: in every fit (test_api), and in a cross-validation
table when both copies are held out in the same fold, where each fold's value is the
mean over its held-out queries with each query counted w_q times.  Leave-query-out
(RankRLS's exact table, greedy RankRLS's selection) holds a query out with all its
weight and weighs its held-out value by it: checked here against retraining without
each query (tests/reference_impl.py, pairs enumerated).
"""

import numpy as np
import pytest
from data_makers import weighted_queries as data

from rankfast import GreedyRankRLS, RankRLS, RankSVM, dump_svmlight, read_model
from rankfast.cli.learn import learn_main
from rankfast.model_selection import ValidationSet

WEIGHT_OF = {10: 1, 11: 2, 12: 1, 13: 0, 14: 3, 15: 1}     # 13 left out, 14 three times


CS = [0.03, 0.3, 3.0]


M = "ndcg@5"            # the queries have 7 documents: LETOR's NDCG@10 is 0 for each


def _files(tmp_path):
    X, y, qid = data()
    dump_svmlight(X, y, qid, path=str(tmp_path / "train.txt"))
    Xv, yv, qv = data(seed=1)
    dump_svmlight(Xv, yv, qv, path=str(tmp_path / "vali.txt"))
    (tmp_path / "train.weight").write_text("".join(f"{WEIGHT_OF[q]}\n" for q in WEIGHT_OF))
    return X, y, qid, (Xv, yv, qv)


@pytest.mark.parametrize("flags, make", [
    (["-c", "0.03,0.3,3", "--folds", "3", "-e", "1e-10"],
     lambda valid: RankSVM(C=CS, cv=3, tol=1e-10, cv_metric=M)),
    (["-a", "rankrls", "-c", "0.03,0.3,3"], lambda valid: RankRLS(C=CS, cv_metric=M)),
    (["-a", "rankrls", "-c", "0.03,0.3,3", "--valid", "VALID"],
     lambda valid: RankRLS(C=CS, cv=ValidationSet(*valid, name="VALID"), cv_metric=M)),
    (["-a", "greedy", "-c", "2", "-k", "2"], lambda valid: GreedyRankRLS(C=2.0, k=2)),
])
def test_rank_learn_weights_with_c_lists_folds_valid_and_greedy(tmp_path, capsys, flags, make):
    X, y, qid, valid = _files(tmp_path)
    flags = [str(tmp_path / "vali.txt") if f == "VALID" else f for f in flags]
    assert learn_main(["-v", "1", "--cv-metric", M, *flags,
                       "--weights", str(tmp_path / "train.weight"),
                       str(tmp_path / "train.txt"), str(tmp_path / "model")]) == 0
    out = capsys.readouterr().out
    expected = make(valid).fit(X, y, qid, sample_weight=list(WEIGHT_OF.values()))
    np.testing.assert_allclose(read_model(str(tmp_path / "model")).weights,
                               expected.weights_, rtol=1e-6, atol=1e-9)
    if getattr(expected, "cv_result_", None) is not None:
        table = expected.cv_result_.format().replace("VALID", str(tmp_path / "vali.txt"))
        assert table in out
        assert "Cross-validation" in table or "Validation" in table
