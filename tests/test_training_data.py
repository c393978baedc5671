"""Input is checked and converted once, where it enters an estimator (rankfast.inputs.TrainingData)."""
import numpy as np
import pytest
import scipy.sparse as sp

from rankfast import base, csr
from rankfast.inputs import TrainingData
from rankfast.ranksvm import RankSVM


def documents(seed=0, n=40, d=6):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 2)
    X[:, [1, 4]] = 0.0                                  # two empty columns
    X[rng.random(size=(n, d)) < 0.3] = 0.0
    qid = rng.integers(1, 6, size=n)                    # rows of a query not contiguous
    y = rng.integers(0, 3, size=n).astype(float)
    return X, y, qid


@pytest.mark.parametrize("sparse", [False, True])
def test_grouped_rows_follow_the_queries_first_appearance_and_drop_empty_columns(sparse):
    X, y, qid = documents()
    data = TrainingData(csr.as_csr(sp.csr_matrix(X)) if sparse else X, y, qid)
    grouped, labels, starts, used = data.grouped()
    order = [q for i, q in enumerate(qid) if q not in qid[:i]]           # by first appearance
    rows = np.concatenate([np.flatnonzero(qid == q) for q in order])     # file order within
    expected_used = np.array([j for j in range(X.shape[1]) if X[:, j].any()])
    np.testing.assert_array_equal(used, expected_used)
    dense = grouped.to_scipy().toarray() if sparse else grouped
    np.testing.assert_array_equal(dense, X[rows][:, expected_used])
    np.testing.assert_array_equal(labels, y[rows])
    np.testing.assert_array_equal(starts, np.cumsum([0] + [np.sum(qid == q) for q in order]))
    assert data.sparse == sparse


def test_ranksvm_checks_its_input_once(monkeypatch):
    X, y, qid = documents(1)
    calls = []
    check = base.check_features

    def counted(*args, **kwargs):
        calls.append(args[0])
        return check(*args, **kwargs)
    monkeypatch.setattr(base, "check_features", counted)
    for given in (X, sp.csr_matrix(X), sp.coo_matrix(X)):
        calls.clear()
        RankSVM(C=1.0).fit(given, y, qid)
        assert len(calls) == 1
    calls.clear()
    reference = RankSVM(C=1.0).fit(X, y, qid)
    weighted = RankSVM(C=1.0).fit(X, y, qid, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(weighted.weights_, reference.weights_)
    assert len(calls) == 2
