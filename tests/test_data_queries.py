"""rankfast.data.queries: queries analysed once per fit."""

import numpy as np
import pytest
from data_makers import documents

from rankfast import RankSVM


@pytest.mark.parametrize("weights", [False, True])
def test_a_fit_analyses_its_queries_once(monkeypatch, weights):
    """One Queries per fit, and its query ids sorted once (query_index), whatever reads them:
    the check for pairs, the query weights, the grouped rows."""
    from rankfast.data import queries
    calls = {"Queries": 0, "query_index": 0}
    real_index, real_init = queries.query_index, queries.Queries.__init__

    def counted_index(*args):
        calls["query_index"] += 1
        return real_index(*args)

    def counted_init(self, qid):
        calls["Queries"] += 1
        real_init(self, qid)
    monkeypatch.setattr(queries, "query_index", counted_index)
    monkeypatch.setattr(queries.Queries, "__init__", counted_init)
    X, y, qid = documents(5)
    shuffled = np.random.default_rng(0).permutation(len(qid))      # queries not contiguous
    extra = {"sample_weight": np.ones(len(qid))} if weights else {}
    RankSVM(C=1.0).fit(X[shuffled], y[shuffled], qid[shuffled], **extra)
    assert calls == {"Queries": 1, "query_index": 1}
