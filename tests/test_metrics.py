"""rankfast.metrics: ranking metrics against brute-force twins and hand-computed values
(conventions included), and the swapped-pair counter."""

import itertools
import signal
import warnings

import numpy as np
import pytest
import reference_impl as _reference

from rankfast import metrics


def test_count_swapped_honours_signals_between_queries():
    """A signal's Python handler runs inside a long sweep, not only after it (Ctrl-C works)."""
    from rankfast._kernels import _swapped

    class Alarm(Exception):
        pass

    state = {"returned": False}

    def ring(signum, frame):
        state["rang_after_return"] = state["returned"]
        raise Alarm()

    n_queries, size = 40000, 50
    starts = np.arange(0, n_queries * size + 1, size, dtype=np.int64)
    order = np.arange(n_queries * size, dtype=np.int64)
    rank = np.tile(np.arange(size, dtype=np.int64), n_queries)
    scores = np.zeros(n_queries * size)
    tree = np.zeros(size + 1, dtype=np.int64)
    previous = signal.signal(signal.SIGALRM, ring)
    try:
        for delay in (1e-4, 1e-3, 1e-2):
            swapped = np.zeros(n_queries, dtype=np.int64)
            pairs = np.zeros(n_queries, dtype=np.int64)
            with pytest.raises(Alarm):          # armed inside: it may ring at once
                signal.setitimer(signal.ITIMER_REAL, delay)
                _swapped.count_swapped(order, rank, scores, starts, tree, swapped, pairs)
                state["returned"] = True
                signal.pause()
            if pairs[0]:                  # else it rang before the sweep began: a later alarm
                break
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if pairs[-1] == 0:                                  # stopped inside the sweep
        assert pairs[0] == size * (size - 1) // 2
        return
    # the sweep ran to its end: fine only if the alarm had not rung yet
    assert state["rang_after_return"], "the signal waited for the whole sweep"
    pytest.skip("the sweep ended before the alarm rang")


def metric_cases():
    rng = np.random.default_rng(99)
    out = []
    for trial in range(6):
        n_queries = int(rng.integers(1, 12))
        qids = rng.choice(np.arange(1, 1000), size=n_queries, replace=False)
        sizes = rng.integers(1, 30, size=n_queries)
        qid = np.repeat(qids, sizes)
        rng.shuffle(qid)                           # queries interleaved in the file
        n = len(qid)
        labels = rng.integers(0, 5, size=n).astype(np.float64)
        if trial % 2:
            labels = rng.choice([0.0, 0.5, 1.0, 2.5], size=n)
        labels[qid == qids[0]] = 0.0               # a query without relevant documents
        scores = np.round(rng.normal(size=n), 1)   # many ties
        out.append((scores, labels, qid))
    # single-document queries, all-zero query, one document
    out.append((np.array([0.3, 0.1, 0.1, 0.0, 0.5]), np.array([1.0, 0.0, 2.0, 0.0, 0.0]),
                np.array([5, 2, 2, 9, 2])))
    out.append((np.array([1.0]), np.array([3.0]), np.array([4])))
    out.append((np.array([0.0, 0.0, 0.0]), np.array([2.0, 0.0, 1.0]), np.array([1, 1, 1])))
    # NaN scores (one value, below every number, -inf included) among ties and infinities
    for _trial in range(4):
        n = int(rng.integers(2, 40))
        qid = rng.integers(1, 4, size=n)
        labels = rng.integers(0, 3, size=n).astype(np.float64)
        scores = rng.choice([np.nan, -np.inf, -1.0, 0.0, 0.5, np.inf], size=n)
        out.append((scores, labels, qid))
    out.append((np.full(5, np.nan), np.array([0.0, 1.0, 2.0, 1.0, 0.0]), np.ones(5)))
    return out


METRIC_CASES = metric_cases()


@pytest.mark.parametrize("scores, labels, qid", METRIC_CASES)
def test_swapped_pairs_match_brute(scores, labels, qid):
    swapped, pairs = metrics.swapped_pairs(scores, labels, qid)
    ref_swapped, ref_pairs = _reference.swapped_pairs_brute(scores, labels, qid)
    np.testing.assert_array_equal(pairs, ref_pairs)
    np.testing.assert_array_equal(swapped, ref_swapped)


@pytest.mark.parametrize("convention", ["letor", "standard"])
@pytest.mark.parametrize("k", [1, 3, 10, None])
@pytest.mark.parametrize("scores, labels, qid", METRIC_CASES)
def test_ndcg_matches_brute(scores, labels, qid, k, convention):
    got = metrics.ndcg(scores, labels, qid, k=k, per_query=True, convention=convention)
    np.testing.assert_allclose(got, _reference.ndcg_brute(scores, labels, qid, k, convention),
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("scores, labels, qid", METRIC_CASES)
def test_average_precision_matches_brute(scores, labels, qid):
    got = metrics.mean_average_precision(scores, labels, qid, per_query=True)
    np.testing.assert_allclose(got, _reference.average_precision_brute(scores, labels, qid),
                               rtol=1e-12, atol=1e-15)


def test_metric_twins_by_hand():
    scores = np.array([0.5, 0.5, 0.9, 0.1])
    labels = np.array([2.0, 0.0, 1.0, 1.0])
    qid = np.array([3, 3, 3, 3])
    # order by decreasing score, ties in file order: docs 2, 0, 1, 3 -> labels 1, 2, 0, 1
    swapped, pairs = _reference.swapped_pairs_brute(scores, labels, qid)
    assert pairs.tolist() == [5] and swapped.tolist() == [3]    # (0,2) (0,1) (3,1)
    dcg = 1 + 3 / np.log2(3) + 0 + 1 / np.log2(5)
    idcg = 3 + 1 / np.log2(3) + 1 / np.log2(4)
    assert _reference.ndcg_brute(scores, labels, qid, None)[0] == pytest.approx(dcg / idcg)
    assert _reference.ndcg_brute(scores, labels, qid, 1)[0] == pytest.approx(1 / 3)
    ap = (1 / 1 + 2 / 2 + 3 / 4) / 3
    assert _reference.average_precision_brute(scores, labels, qid)[0] == pytest.approx(ap)


def test_letor_convention_by_hand():
    """Eval-Score-4.0.pl: positions 1 and 2 undiscounted, then 1/log2(p); short queries score 0."""
    scores = np.array([0.5, 0.5, 0.9, 0.1, 0.3, 0.2, 0.8, 0.0, 0.7, 0.6, 0.4])
    labels = np.array([2.0, 0.0, 1.0, 1.0, 0, 0, 0, 0, 0, 0, 0])
    qid = np.zeros(11)
    # ranked: 1 (0.9), 0, 0, 0, 2 (0.5, first in file), 0 (0.5), 0, 0, 0, 1 (0.1) at position 10
    dcg3 = 1 + 0 + 0
    idcg3 = 3 + 1 + 1 / np.log2(3)
    assert metrics.ndcg(scores, labels, qid, k=3) == pytest.approx(dcg3 / idcg3)
    dcg10 = 1 + 3 / np.log2(5) + 1 / np.log2(10)
    idcg10 = 3 + 1 + 1 / np.log2(3)
    assert metrics.ndcg(scores, labels, qid, k=10) == pytest.approx(dcg10 / idcg10)
    short = metrics.ndcg(scores[:4], labels[:4], qid[:4], k=10, per_query=True)
    assert short.tolist() == [0.0]                     # fewer than 10 documents
    assert metrics.ndcg(scores[:4], labels[:4], qid[:4], k=10, convention="standard") > 0.5


def test_queries_without_relevant_documents():
    scores = np.array([0.3, 0.2, 0.1, 0.9, 0.8])
    labels = np.array([0.0, 0.0, 0.0, 1.0, 0.0])
    qid = np.array([1, 1, 1, 2, 2])
    assert metrics.mean_average_precision(scores, labels, qid) == pytest.approx(0.5)
    assert metrics.mean_average_precision(scores, labels, qid, skip_no_relevant=True) == 1.0
    assert metrics.ndcg(scores, labels, qid, k=2, skip_no_relevant=True) == 1.0
    assert metrics.ndcg(scores, labels, qid, k=2) == pytest.approx(0.5)


def test_pairwise_accuracy_and_svm_rank_loss():
    scores = np.array([1.0, 1.0, 0.0, 2.0, 1.0])
    labels = np.array([2.0, 1.0, 0.0, 0.0, 1.0])
    qid = np.array([1, 1, 1, 2, 2])
    # query 1: (0,1) tie -> swapped, (0,2) right, (1,2) right; query 2: (4,3) swapped
    assert metrics.pairwise_accuracy(scores, labels, qid) == pytest.approx(2 / 4)
    np.testing.assert_allclose(metrics.swapped_fraction(scores, labels, qid), [1 / 3, 1.0])
    assert np.isnan(metrics.pairwise_accuracy(scores, np.zeros(5), qid))


def test_nan_scores_rank_below_every_number():
    """NaN ties NaN and sorts last; pairwise_accuracy([nan], [1], [1]) ends (it hung)."""
    nan, inf = np.nan, np.inf
    assert np.isnan(metrics.pairwise_accuracy([nan], [1], [1]))             # no pair
    assert metrics.pairwise_accuracy([nan, nan], [1, 0], [1, 1]) == 0.0     # a tie: swapped
    assert metrics.pairwise_accuracy([-inf, nan], [1, 0], [1, 1]) == 1.0    # -inf above NaN
    assert metrics.pairwise_accuracy([nan, -inf], [1, 0], [1, 1]) == 0.0
    assert metrics.ndcg([nan, 0.0], [1, 0], [1, 1], k=None, convention="standard") < 1.0
    assert metrics.mean_average_precision([0.0, nan], [1, 0], [1, 1]) == 1.0


def _every_order_values(per_query_of, labels, qid):
    """Per query, the set of values a metric takes over every permutation of its documents' scores."""
    labels, qid = np.asarray(labels, dtype=np.float64), np.asarray(qid)
    values = {}
    for q in dict.fromkeys(qid.tolist()):
        rows = np.flatnonzero(qid == q)
        for perm in itertools.permutations(range(len(rows))):
            scores = np.zeros(len(rows))
            scores[list(perm)] = np.arange(len(rows), 0, -1)      # distinct scores: one order
            values.setdefault(q, set()).add(float(per_query_of(scores, labels[rows],
                                                               np.zeros(len(rows)))[0]))
    return [values[q] for q in dict.fromkeys(qid.tolist())]


ALIKE_METRICS = {
    "ndcg@2 letor": lambda s, y, q: metrics.ndcg(s, y, q, k=2, per_query=True),
    "ndcg@3 letor": lambda s, y, q: metrics.ndcg(s, y, q, k=3, per_query=True),
    "ndcg letor": lambda s, y, q: metrics.ndcg(s, y, q, k=None, per_query=True),
    "ndcg@1 standard": lambda s, y, q: metrics.ndcg(s, y, q, k=1, per_query=True,
                                                    convention="standard"),
    "ndcg@3 standard": lambda s, y, q: metrics.ndcg(s, y, q, k=3, per_query=True,
                                                    convention="standard"),
    "err@2": lambda s, y, q: metrics.err(s, y, q, k=2, max_grade=3, per_query=True),
    "map": lambda s, y, q: metrics.mean_average_precision(s, y, q, per_query=True),
    "mrr": lambda s, y, q: metrics.reciprocal_rank(s, y, q, per_query=True),
    "p@2": lambda s, y, q: metrics.precision_at(s, y, q, k=2, per_query=True),
}


@pytest.mark.parametrize("name", list(ALIKE_METRICS))
def test_alike_in_every_order_is_what_every_permutation_gives(name):
    """The best and the worst order agree exactly where every order scores alike (all permutations
    of queries of 1-5 documents: one label, two levels, negative labels, all relevant, none)."""
    metric = ALIKE_METRICS[name]
    rng = np.random.default_rng(7)
    label_sets = ([0.0], [1.0], [-1.0, 0.0], [0.0, 1.0], [1.0, 3.0], [0.0, 1.0, 2.0, 3.0], [-2.0, 2.0])
    labels, qid = [], []
    for q in range(60):
        size = int(rng.integers(1, 6))
        labels += rng.choice(label_sets[q % len(label_sets)], size=size).tolist()
        qid += [q] * size
    labels, qid = np.array(labels), np.array(qid)
    got = metrics.alike_in_every_order(lambda s: metric(s, labels, qid), labels)
    expected = [len(values) == 1 for values in _every_order_values(metric, labels, qid)]
    assert got.tolist() == expected
    assert 0 < sum(expected) < len(expected)            # both kinds of query were tried


def test_why_alike_names_the_cause():
    facts = metrics.query_facts([2, 0, 1, 1, 0, 3, 3], [1, 1, 1, 2, 2, 3, 3])
    assert metrics.why_alike("ndcg", facts, 10, "letor") == (
        "every query has fewer than 10 documents (LETOR's NDCG@10 scores such a query 0; the "
        "standard convention evaluates it over its whole list)")
    assert metrics.why_alike("ndcg", facts, 10, "standard") == ""
    assert metrics.why_alike("ndcg", metrics.query_facts([0, -1, 0, 0, 2, 2], [1, 1, 2, 2, 3, 3]),
                             None) == ("every query has documents of a single label or no "
                                       "relevant document (label > 0)")
    assert metrics.why_alike("ndcg", metrics.query_facts([0, -1], [1, 1])) == \
        "it has no relevant document (label > 0)"
    graded = metrics.query_facts([3, 5, 8, 4, 4], [1, 1, 1, 2, 2])
    assert metrics.why_alike("map", graded) == "every query has only relevant documents (label > 0)"
    assert metrics.why_alike("map", metrics.query_facts([0, -1, 2, 1], [1, 1, 2, 2])) == \
        "every query has no relevant document (label > 0) or only relevant documents (label > 0)"
    assert metrics.why_alike("err", metrics.query_facts([2, 2, 1], [1, 1, 2])) == \
        "every query has documents of a single label"
    assert metrics.why_alike("ndcg", metrics.query_facts([2, 0, 1, 1, 0, 1], [1, 1, 1, 2, 2, 3]),
                             k=3, convention="standard") == ""       # not alike: no cause covers
    message = metrics.alike_message(["P@10", "MAP", "MRR"], metrics.queries_phrase(3), "why")
    assert message == "P@10, MAP and MRR are the same for every ranking of these 3 queries: why"


def test_scorers_warn_when_no_ranking_could_change_the_figure():
    from rankfast import RankSVM
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y, qid = (X[:, 0] > 0).astype(float), np.repeat(np.arange(8), 5)     # 5 documents a query
    ranker = RankSVM(C=1.0).fit(X, y, qid)
    with pytest.warns(metrics.ConstantMetricWarning, match="fewer than 10 documents"):
        assert ranker.score(X, y, qid) == 0.0
    with pytest.warns(metrics.ConstantMetricWarning, match="fewer than 10 documents"):
        assert metrics.ndcg_scorer(10)(ranker, X, y, qid=qid) == 0.0
    with pytest.warns(metrics.ConstantMetricWarning, match="only relevant documents"):
        assert metrics.map_scorer()(ranker, X, y + 1, qid=qid) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert 0.0 < metrics.ndcg_scorer(3)(ranker, X, y, qid=qid) <= 1.0
        assert 0.0 < ranker.score(X, y, np.repeat(np.arange(4), 10)) <= 1.0


def cases():
    rng = np.random.default_rng(2024)
    out = []
    for _trial in range(6):
        n_queries = int(rng.integers(1, 10))
        sizes = rng.integers(1, 25, size=n_queries)
        qid = np.repeat(rng.choice(np.arange(1, 500), n_queries, replace=False), sizes)
        rng.shuffle(qid)                                    # queries interleaved
        labels = rng.integers(-1, 4, size=len(qid)).astype(np.float64)
        labels[qid == qid[0]] = 0.0                         # a query without relevant documents
        scores = np.round(rng.normal(size=len(qid)), 1)     # ties, kept in file order
        out.append((scores, labels, qid))
    out.append((np.array([0.2, 0.2, 0.2]), np.array([0.0, 2.0, 1.0]), np.array([7, 7, 7])))
    out.append((np.array([1.0]), np.array([3.0]), np.array([1])))
    return out


CASES = cases()


def ranked_labels(scores, labels, qid):
    """Per query (order of first appearance), its labels by decreasing score, ties in file order."""
    out = []
    for q in dict.fromkeys(np.asarray(qid).tolist()):
        rows = [i for i in range(len(qid)) if qid[i] == q]
        rows.sort(key=lambda i: -scores[i])                 # stable: file order on ties
        out.append([labels[i] for i in rows])
    return out


def err_brute(scores, labels, qid, k, gmax):
    values = []
    for ranked in ranked_labels(scores, labels, qid):
        total, p_continue = 0.0, 1.0
        for r, g in enumerate(ranked[:k] if k else ranked, start=1):
            R = (2.0 ** max(g, 0.0) - 1.0) / 2.0 ** gmax
            total += p_continue * R / r
            p_continue *= 1.0 - R
        values.append(total)
    return np.array(values)


@pytest.mark.parametrize("k", [1, 3, 10, None])
@pytest.mark.parametrize("scores, labels, qid", CASES)
def test_err_matches_brute(scores, labels, qid, k):
    gmax = max(labels.max(), 0.0)
    got = metrics.err(scores, labels, qid, k=k, per_query=True)
    np.testing.assert_allclose(got, err_brute(scores, labels, qid, k, gmax), rtol=1e-12, atol=1e-15)
    fixed = metrics.err(scores, labels, qid, k=k, max_grade=4.0)
    assert fixed == pytest.approx(err_brute(scores, labels, qid, k, 4.0).mean(), rel=1e-12)


@pytest.mark.parametrize("scores, labels, qid", CASES)
def test_mrr_matches_brute(scores, labels, qid):
    expected = [next((1.0 / r for r, g in enumerate(ranked, 1) if g > 0), 0.0)
                for ranked in ranked_labels(scores, labels, qid)]
    np.testing.assert_allclose(metrics.reciprocal_rank(scores, labels, qid, per_query=True), expected,
                               rtol=1e-15)
    relevant = [e for e, ranked in zip(expected, ranked_labels(scores, labels, qid))
                if any(g > 0 for g in ranked)]
    skipped = metrics.reciprocal_rank(scores, labels, qid, skip_no_relevant=True)
    assert skipped == pytest.approx(np.mean(relevant)) if relevant else np.isnan(skipped)


@pytest.mark.parametrize("k", [1, 5, 30])
@pytest.mark.parametrize("scores, labels, qid", CASES)
def test_precision_at_k_matches_brute(scores, labels, qid, k):
    expected = [sum(g > 0 for g in ranked[:k]) / k for ranked in ranked_labels(scores, labels, qid)]
    np.testing.assert_allclose(metrics.precision_at(scores, labels, qid, k=k, per_query=True),
                               expected, rtol=1e-15)


def test_err_by_hand():
    # labels 2, 0, 1 with g_max 2: R = 3/4, 0, 1/4
    got = metrics.err([3.0, 2.0, 1.0], [2.0, 0.0, 1.0], [1, 1, 1])
    assert got == pytest.approx(0.75 / 1 + (1 - 0.75) * 0.0 / 2 + (1 - 0.75) * (1 - 0.0) * 0.25 / 3)


@pytest.mark.parametrize("k", [1, 3, 10, None])
def test_standard_ndcg_matches_scikit_learn(k):
    """sklearn's ndcg_score takes gains as given: pass 2^label − 1; scores without ties."""
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    for size in (2, 5, 9, 20):
        labels = rng.integers(0, 4, size=size).astype(float)
        labels[0] = 2.0                                     # at least one relevant document
        scores = rng.normal(size=size)
        ours = metrics.ndcg(scores, labels, np.ones(size), k=k, convention="standard")
        theirs = sk.ndcg_score([2.0 ** labels - 1.0], [scores], k=k)
        assert ours == pytest.approx(theirs, rel=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda m, s, y, q: m.ndcg(s, y, q, k=0), "cut-off k must be an integer of at least 1"),
    (lambda m, s, y, q: m.ndcg(s, y, q, k=2.5), "cut-off k"),
    (lambda m, s, y, q: m.err(s, y, q, k=-1), "cut-off k"),
    (lambda m, s, y, q: m.precision_at(s, y, q, k=None), "cut-off k must be an integer of at least"),
    (lambda m, s, y, q: m.ndcg(s, [1, np.nan, 0], q), "labels must be finite numbers"),
    (lambda m, s, y, q: m.mean_average_precision(s, [1, np.inf, 0], q), "label 1 is inf"),
    (lambda m, s, y, q: m.ndcg(s, y, [1, np.nan, 1]), "query ids must be finite"),
    (lambda m, s, y, q: m.ndcg(s, y, [1, 1]), "as long as one another"),
    (lambda m, s, y, q: m.reciprocal_rank(s[:2], y, q), "as long as one another"),
])
def test_metrics_refuse_what_no_metric_can_be_taken_of(call, message):
    """k = 0 gave 0.0, P@0 nan, a NaN label NDCG 0.0 or MAP 0.833, a NaN qid a query of its own."""
    from rankfast import metrics
    with pytest.raises(ValueError, match=message):
        call(metrics, [0.3, 0.2, 0.1], [1, 0, 2], [1, 1, 1])
