"""rankfast.clicks: propensities, eta from swaps, the simulator, counterfactual evaluation."""

import numpy as np
import pytest
from data_makers import letor_like_queries as letor_like

from rankfast import RankSVM, load_svmlight
from rankfast.clicks import (
    click_training_data,
    clipped_weights,
    counterfactual_metrics,
    estimate_eta,
    position_propensity,
    relevant_rank_metrics,
    simulate_clicks,
    swap_intervention_clicks,
    write_click_file,
)
from rankfast.clicks.evaluate import _ranks
from rankfast.clicks.simulate import click_instances


def test_position_propensity_is_rank_to_the_minus_eta_without_overflow():
    np.testing.assert_allclose(position_propensity([1, 2, 4], 1.0), [1.0, 0.5, 0.25])
    np.testing.assert_allclose(position_propensity([1, 3], 2.0), [1.0, 1 / 9])
    tiny = position_propensity([10**6], 60.0)
    assert tiny[0] >= 0 and np.isfinite(clipped_weights(np.maximum(tiny, 5e-324))).all()
    with pytest.raises(ValueError, match="at least 1"):
        position_propensity([0], 1.0)


def test_clipped_weights_bound_every_weight_and_refuse_bad_propensities():
    np.testing.assert_allclose(clipped_weights([1.0, 0.5, 0.01], clip=0.1), [1.0, 2.0, 10.0])
    assert clipped_weights([5e-324])[0] == np.finfo(np.float64).max     # 1/p overflows: capped
    for bad in ([0.0], [-0.5], [np.nan], [np.inf]):
        with pytest.raises(ValueError, match="positive and finite"):
            clipped_weights(bad)


def test_ranks_by_decreasing_score_ties_take_the_worse_rank():
    scores = np.array([0.5, 0.9, 0.5, 0.1, 3.0, 3.0])
    np.testing.assert_array_equal(_ranks(scores, np.array([1, 1, 1, 1, 2, 2])),
                                  [3, 1, 3, 4, 2, 2])


@pytest.mark.parametrize("eta", [0.5, 1.0, 2.0])
def test_eta_is_recovered_from_swap_interventions(eta):
    X, y, qid = letor_like(n_queries=60, seed=3)
    scores = X @ np.ones(X.shape[1])
    ranks = [2, 3, 5, 8]
    moved, top = swap_intervention_clicks(scores, y, qid, 200000, ranks, eta=eta, seed=1)
    estimate, relative = estimate_eta(moved, top, ranks)
    assert estimate == pytest.approx(eta, abs=0.05)
    np.testing.assert_allclose(relative, position_propensity(ranks, eta), rtol=0.1)


def test_the_simulator_is_seeded_and_clicks_as_the_position_based_model():
    X, y, qid = letor_like(n_queries=30, seed=4)
    scores = X @ np.ones(X.shape[1])
    one = simulate_clicks(scores, y, qid, 50000, eta=1.0, eps_minus=0.1, seed=7)
    two = simulate_clicks(scores, y, qid, 50000, eta=1.0, eps_minus=0.1, seed=7)
    assert all(np.array_equal(a, b) for a, b in zip(one[:3], two[:3]))
    other = simulate_clicks(scores, y, qid, 50000, eta=1.0, eps_minus=0.1, seed=8)
    assert not np.array_equal(one.count, other.count)
    # clicks at rank 1 over sessions: P(relevant at 1) + 0.1 P(not), queries uniform
    top = {q: np.flatnonzero(qid == q)[np.argmax(scores[qid == q])] for q in np.unique(qid)}
    expected = np.mean([1.0 if y[r] >= 1 else 0.1 for r in top.values()])
    at_top = one.count[one.rank == 1].sum() / one.n_sessions
    assert at_top == pytest.approx(expected, abs=0.01)
    assert (one.rank >= 1).all() and one.n_clicks == one.count.sum()
    shown = simulate_clicks(scores, y, qid, 5000, top_k=3, seed=1)
    assert shown.rank.max() <= 3


def test_the_estimate_of_average_rank_is_unbiased_without_noise():
    X, y, qid = letor_like(n_queries=80, seed=5)
    logging = X @ np.r_[1.0, np.zeros(X.shape[1] - 1)]
    ranker = X @ np.ones(X.shape[1])
    log = simulate_clicks(logging, y, qid, 400000, eta=1.0, eps_minus=0.0, seed=2)
    rows, cost = click_instances(log)          # summed per document: the same estimate
    # a click instance's candidates are its query's documents: score them by the ranker
    docs, clicked, ids, costs = _expand(rows, qid, cost)
    estimate = counterfactual_metrics(ranker[docs], clicked, ids, costs)
    truth = relevant_rank_metrics(ranker, y, qid)
    assert estimate.average_rank == pytest.approx(truth.average_rank, rel=0.03)
    assert estimate.dcg == pytest.approx(truth.dcg, rel=0.03)
    naive_rows, naive_cost = click_instances(log, eta=0.0)     # every click weighs 1
    docs, clicked, ids, costs = _expand(naive_rows, qid, naive_cost)
    naive = counterfactual_metrics(ranker[docs], clicked, ids, costs)
    assert abs(naive.average_rank - truth.average_rank) > 3 * abs(
        estimate.average_rank - truth.average_rank)


def _expand(rows, qid, cost=None):
    """Click instances as documents: (rows of the data, clicked, instance id, cost)."""
    out_rows, clicked, ids, costs = [], [], [], []
    members = {q: np.flatnonzero(qid == q) for q in np.unique(qid)}
    for n, row in enumerate(rows):
        docs = members[qid[row]]
        out_rows.append(docs)
        clicked.append(docs == row)
        ids.append(np.full(len(docs), n))
        costs.append(np.where(docs == row, 1.0 if cost is None else cost[n], np.nan))
    return (np.concatenate(out_rows), np.concatenate(clicked).astype(float), np.concatenate(ids),
            np.concatenate(costs))


def test_an_aggregated_click_file_trains_the_model_of_the_raw_one(tmp_path):
    X, y, qid = letor_like(n_queries=40, seed=6)
    log = simulate_clicks(X @ np.ones(X.shape[1]), y, qid, 3000, seed=3)
    models = []
    for aggregate in (True, False):
        path = tmp_path / f"clicks{aggregate}.dat"
        written = write_click_file(str(path), X, qid, log, aggregate=aggregate)
        data = load_svmlight(str(path), costs=True)
        assert written == len(np.unique(data.qid)) and (data.cost[data.y == 1] > 0).all()
        assert np.isnan(data.cost[data.y == 0]).all()
        weight = np.where(np.isnan(data.cost), 1.0, data.cost)
        models.append(RankSVM(C=1.0, tol=1e-9).fit(data.X, data.y, data.qid,
                                                   sample_weight=weight).weights_)
    assert written == log.n_clicks
    np.testing.assert_allclose(models[0], models[1], rtol=1e-6, atol=1e-8)


def test_propensity_weighted_clicks_learn_the_labels_ranking():
    """The point of it all, small: from a poor logging ranker's clicks, the weighted learner
    ranks test queries about as well as the learner of the labels, the naive one worse."""
    X, y, qid = letor_like(n_queries=300, seed=8)
    test = qid >= np.quantile(np.unique(qid), 0.7)
    logging = X[~test] @ np.random.default_rng(0).normal(size=X.shape[1])
    log = simulate_clicks(logging, y[~test], qid[~test], 200000, eta=1.0, eps_minus=0.1, seed=4)
    truth = RankSVM(C=1.0).fit(X[~test], y[~test], qid[~test]).predict(X[test])
    rank_of = {}
    for eta in (1.0, 0.0):
        rows, cost = click_instances(log, eta=eta)
        rows_in, clicked, ids, costs = _expand(rows, qid[~test], cost)
        weight = np.where(np.isnan(costs), 1.0, costs)
        model = RankSVM(C=1.0).fit(X[~test][rows_in], clicked, ids, sample_weight=weight)
        rank_of[eta] = relevant_rank_metrics(model.predict(X[test]), y[test],
                                             qid[test]).average_rank
    best = relevant_rank_metrics(truth, y[test], qid[test]).average_rank
    assert rank_of[1.0] <= best + 0.3 < rank_of[0.0]


def test_click_training_data_is_the_click_file_in_memory(tmp_path):
    X, y, qid = letor_like(n_queries=25, seed=9)
    log = simulate_clicks(X @ np.ones(X.shape[1]), y, qid, 2000, seed=5)
    path = tmp_path / "clicks.dat"
    write_click_file(str(path), X, qid, log)
    data = load_svmlight(str(path), costs=True)
    from_file = RankSVM(C=1.0, tol=1e-9).fit(data.X, data.y, data.qid, sample_weight=np.where(
        np.isnan(data.cost), 1.0, data.cost)).weights_
    Xc, yc, qc, wc = click_training_data(X, qid, log)
    assert len(yc) == len(data.y) and yc.sum() == data.y.sum()
    np.testing.assert_allclose(RankSVM(C=1.0, tol=1e-9).fit(Xc, yc, qc, sample_weight=wc).weights_,
                               from_file, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("eta", [0.5, 1.0, 2.0])
def test_eta_is_recovered_from_the_logs_of_two_rankers(eta):
    """Intervention harvesting: no swap, two rankers' logs of the same queries."""
    from rankfast.clicks import estimate_eta_from_rankers
    X, y, qid = letor_like(n_queries=200, seed=3)
    rng = np.random.default_rng(1)
    a, b = X @ rng.normal(size=X.shape[1]), X @ rng.normal(size=X.shape[1])
    log_a = simulate_clicks(a, y, qid, 200000, eta=eta, eps_minus=0.1, seed=1)
    log_b = simulate_clicks(b, y, qid, 200000, eta=eta, eps_minus=0.1, seed=2)
    estimate, table = estimate_eta_from_rankers(a, b, qid, log_a, log_b)
    assert estimate == pytest.approx(eta, abs=0.05)
    assert (table[:, 0] != table[:, 1]).all() and len(table) > 20
    with pytest.raises(ValueError, match="both rankers"):
        estimate_eta_from_rankers(a, a, qid, log_a, log_b)


def test_clicks_in_a_query_of_one_document_are_left_out_of_the_click_file(tmp_path):
    """Such a click has no pair: the file would be refused by rank_learn --clicks."""
    X, y, qid = letor_like(n_queries=20, seed=10)
    X, y, qid = np.vstack([X, X[:1]]), np.r_[y, 2.0], np.r_[qid, 999]     # a lone relevant doc
    log = simulate_clicks(X @ np.ones(X.shape[1]), y, qid, 5000, seed=2)
    assert (qid[log.row] == 999).any()
    path = tmp_path / "clicks.dat"
    written = write_click_file(str(path), X, qid, log)
    data = load_svmlight(str(path), costs=True)
    assert written == len(np.unique(data.qid))
    assert all((data.qid == q).sum() > 1 for q in np.unique(data.qid))
    Xc, yc, qc, wc = click_training_data(X, qid, log)
    assert len(yc) == len(data.y)


def test_svm_proprank_c_is_the_learners_own_weight_normaliser(tmp_path):
    """click_weights' scale is what pair_weights divides the query weights by (one definition,
    data.validation.query_weight_scale): so a learner at C × scale on the weights minimises
    svm_proprank's objective at C; scale_c puts that C in the learner."""
    from rankfast.clicks import click_weights, scale_c
    from rankfast.data.queries import Queries
    from rankfast.data.validation import pair_weights, preferred_documents, preferred_means
    rng = np.random.default_rng(3)
    qid = np.repeat(np.arange(1, 7), 4)
    y = np.zeros(len(qid))
    y[::4] = 1                                                   # one click per query
    cost = np.where(y > 0, rng.uniform(1, 20, len(y)), np.nan)
    path = tmp_path / "clicks.dat"
    X = rng.normal(size=(len(y), 3))
    with open(path, "w") as out:
        for i in range(len(y)):
            weight = "" if np.isnan(cost[i]) else f" cost:{float(cost[i])!r}"
            out.write(f"{int(y[i])} qid:{qid[i]}{weight} "
                      + " ".join(f"{j + 1}:{float(X[i, j])!r}" for j in range(3)) + "\n")
    dataset = load_svmlight(str(path), costs=True)
    weight, scale = click_weights(dataset)
    queries = Queries(qid)
    means = preferred_means(weight, queries, preferred_documents(y, queries))
    np.testing.assert_allclose(scale, means.mean(), rtol=1e-15)
    np.testing.assert_allclose(pair_weights(weight, queries, y).query * scale, means, rtol=1e-14)
    learner = RankSVM(C=[0.5, 2.0])
    scale_c(learner, scale)
    assert learner.C == [0.5 * scale, 2.0 * scale]


def test_scale_c_scales_every_c_a_learner_trains_with():
    from rankfast import KernelApproxLearner
    from rankfast.clicks import scale_c
    from rankfast.errors import UsageError
    from rankfast.model_selection import GridSearch
    kernel = KernelApproxLearner(RankSVM(C=3.0))
    scale_c(kernel, 2.0)
    assert kernel.base_learner.C == 6.0
    search = GridSearch(KernelApproxLearner(RankSVM()), {"base_learner__C": [1.0, 4.0]})
    scale_c(search, 0.5)
    assert search.grid["base_learner__C"] == [0.5, 2.0]
    with pytest.raises(UsageError, match="beyond floating point"):
        scale_c(RankSVM(C=1e300), 1e10)
    with pytest.raises(UsageError, match="a learner with a 'C'"):
        scale_c(object(), 2.0)


def test_click_weights_of_a_file_read_without_costs_says_how_to_read_it(tmp_path):
    from rankfast.clicks import click_weights
    from rankfast.errors import UsageError
    path = tmp_path / "clicks.dat"
    path.write_text("1 qid:1 cost:4 1:1\n0 qid:1 1:0\n")
    with pytest.raises(UsageError, match="costs=True"):
        click_weights(load_svmlight(str(path)))
    weight, scale = click_weights(load_svmlight(str(path), costs=True))
    assert weight.tolist() == [4.0, 1.0] and scale == 4.0
