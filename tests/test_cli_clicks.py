"""rank_learn --clicks, svm_proprank_learn and rank_simulate_clicks: svm_proprank's files,
weights at their usual meaning, bad click logs refused at their line with no model written."""

import os

import numpy as np
import pytest
from data_makers import letor_like_queries as letor_like

from rankfast import RankSVM, RankSVML1, dump_svmlight, load_svmlight, read_model
from rankfast.cli.clicks import simulate_main
from rankfast.cli.learn import learn_main


def click_file(tmp_path, n_queries=30, seed=0):
    """A small svm_proprank training file: per query one click (target 1, cost:) among
    unclicked documents (target 0, no cost)."""
    rng = np.random.default_rng(seed)
    lines, X, y, qid, weight = [], [], [], [], []
    for q in range(1, n_queries + 1):
        size = int(rng.integers(3, 9))
        clicked = int(rng.integers(0, size))
        for i in range(size):
            x = rng.normal(size=4)
            cost = float(1 + rng.integers(0, 8)) if i == clicked else None
            feats = " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(x.tolist()))
            lines.append(f"{int(i == clicked)} qid:{q}" + (f" cost:{cost!r}" if cost else "")
                         + f" {feats}\n")
            X.append(x)
            y.append(float(i == clicked))
            qid.append(q)
            weight.append(cost or 1.0)
    path = tmp_path / "clicks.dat"
    path.write_text("".join(lines))
    return path, np.array(X), np.array(y), np.array(qid), np.array(weight)


@pytest.mark.parametrize("algo, learner", [("svmrank", RankSVML1), ("prsvm", RankSVM)])
def test_clicks_train_svm_proprank_objective(tmp_path, algo, learner):
    path, X, y, qid, weight = click_file(tmp_path)
    model = tmp_path / "model"
    assert learn_main(["-a", algo, "--clicks", "-c", "3", "-v", "0", str(path), str(model)]) == 0
    # svm_proprank: the loss of each query times C / queries times its click's cost; the
    # learners normalise weights to mean 1, so that is C times the mean cost
    clicks = weight[y == 1]
    expected = learner(C=3.0 * clicks.mean()).fit(X, y, qid, sample_weight=weight)
    np.testing.assert_allclose(read_model(str(model)).weights, expected.weights_, rtol=1e-5,
                               atol=1e-7)       # float32 features and 8 digits in the file


def test_without_clicks_cost_is_read_and_ignored_as_svm_rank_does(tmp_path):
    path, X, y, qid, _ = click_file(tmp_path)
    plain = tmp_path / "plain.dat"
    dump_svmlight(X, y, qid, str(plain))
    one, two = tmp_path / "m1", tmp_path / "m2"
    assert learn_main(["-c", "1", "-v", "0", str(path), str(one)]) == 0
    assert learn_main(["-c", "1", "-v", "0", str(plain), str(two)]) == 0
    assert one.read_text() == two.read_text().replace(str(plain), str(path))


def test_svm_proprank_learn_is_rank_learn_on_clicks_with_svm_rank_objective(tmp_path,
                                                                            monkeypatch):
    from rankfast import cli
    path, *_ = click_file(tmp_path)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    assert learn_main(["-a", "svmrank", "--clicks", "-c", "2", "-v", "0", str(path),
                       str(ours)]) == 0
    monkeypatch.setattr("sys.argv", ["svm_proprank_learn", "-c", "2", "-v", "0", str(path),
                                     str(theirs)])
    with pytest.raises(SystemExit) as end:
        cli.proprank_learn_command()
    assert end.value.code == 0 and ours.read_text() == theirs.read_text()


@pytest.mark.parametrize("line, reason", [
    ("1 qid:2 cost:0 1:1\n", "cost:0: a click's cost is its weight"),
    ("1 qid:2 cost:-3 1:1\n", "cost:-3: a click's cost is its weight"),
    ("1 cost:2 1:1\n", "a click on no query"),
    ("0 qid:3 1:1\n", "qid 3 has no click"),
    ("1 qid:2 cost:nan 1:1\n", "cost must be a finite number"),
])
def test_bad_clicks_exit_1_naming_file_and_line_and_write_nothing(tmp_path, capsys, line, reason):
    path = tmp_path / "clicks.dat"
    path.write_text("1 qid:1 cost:2 1:1\n0 qid:1 1:0\n" + line + "0 qid:2 1:0.5\n")
    model = tmp_path / "model"
    assert learn_main(["--clicks", str(path), str(model)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rank_learn: {path}:3: ") and reason in err and "Traceback" not in err
    assert not model.exists() and os.listdir(tmp_path) == ["clicks.dat"]


def test_a_file_without_costs_trains_unweighted_as_svm_proprank_does(tmp_path, capsys):
    """A line without cost: weighs 1 (SVM-light's default): svm_proprank trains such a file
    as svm_rank would; it was refused here ("not a click log")."""
    path, X, y, qid, _ = click_file(tmp_path)
    plain = tmp_path / "plain.dat"
    dump_svmlight(X, y, qid, str(plain))
    clicks, unweighted = tmp_path / "clicks.model", tmp_path / "svm_rank.model"
    assert learn_main(["-a", "svmrank", "--clicks", "-c", "2", str(plain), str(clicks)]) == 0
    assert "none has a cost:, so each weighs 1" in capsys.readouterr().err
    assert learn_main(["-a", "svmrank", "-c", "2", "-v", "0", str(plain), str(unweighted)]) == 0
    np.testing.assert_allclose(read_model(str(clicks)).weights,
                               read_model(str(unweighted)).weights, rtol=1e-6, atol=1e-8)


def test_a_click_log_without_queries_is_refused(tmp_path, capsys):
    """It was merged into one ranking with a note; svm_proprank cannot read it either."""
    path = tmp_path / "clicks.dat"
    path.write_text("1 cost:2 1:1\n0 1:0\n0 1:2\n")
    model = tmp_path / "m"
    assert learn_main(["--clicks", str(path), str(model)]) == 1
    assert f"rank_learn: {path}: no line has a qid" in capsys.readouterr().err
    assert not model.exists()
    (tmp_path / "clicks.dat.query").write_text("3\n")      # a group file gives the queries
    assert learn_main(["--clicks", "-v", "0", str(path), str(model)]) == 0


def test_one_document_queries_train_as_in_svm_proprank(tmp_path):
    """A query of one click and nothing else has no pair: it weighs nothing, and counts among
    the queries (n in svm_proprank's C/n), as there."""
    path = tmp_path / "clicks.dat"
    path.write_text("1 qid:1 cost:0.5 1:1 2:0\n0 qid:1 1:0 2:1\n1 qid:2 cost:5 1:0 2:3\n")
    model = tmp_path / "m"
    assert learn_main(["-a", "svmrank", "--clicks", "-c", "1", "-v", "0", str(path),
                       str(model)]) == 0
    # min ½‖w‖² + 1/2 · 0.5 · max(0, 1 − (w1 − w2)): w = (0.25, −0.25), inside the margin
    # (with n = 1, the one query with a pair: (0.5, −0.5))
    np.testing.assert_allclose(read_model(str(model)).weights, [0.25, -0.25], atol=1e-3)


@pytest.mark.parametrize("argv, message", [
    (["--clip", "0.1"], "give --clicks too"),
    (["--clicks", "--clip", "0"], "--clip is a floor on the propensity"),
    (["--clicks", "--clip", "2"], "--clip is a floor on the propensity"),
    (["--clicks", "--weights", "w.txt"], "not both"),
])
def test_click_flags_are_checked(tmp_path, capsys, argv, message):
    path, *_ = click_file(tmp_path)
    assert learn_main(argv + [str(path), str(tmp_path / "m")]) == 2
    assert message in capsys.readouterr().err


def test_clip_bounds_each_click_weight(tmp_path):
    path, X, y, qid, weight = click_file(tmp_path)
    model = tmp_path / "model"
    assert learn_main(["--clicks", "--clip", "0.25", "-c", "1", "-v", "0", str(path),
                       str(model)]) == 0
    clipped = np.minimum(weight, 4.0)
    expected = RankSVM(C=clipped[y == 1].mean()).fit(X, y, qid, sample_weight=clipped)
    np.testing.assert_allclose(read_model(str(model)).weights, expected.weights_, rtol=1e-5,
                               atol=1e-7)       # float32 features and 8 digits in the file


def test_rank_simulate_clicks_writes_a_reproducible_click_log(tmp_path, capsys):
    X, y, qid = letor_like(n_queries=40, seed=1)
    data, logging = tmp_path / "train.dat", tmp_path / "logging.model"
    dump_svmlight(X, y, qid, str(data))
    assert learn_main(["-c", "1", "-v", "0", str(data), str(logging)]) == 0
    one, two = tmp_path / "c1.dat", tmp_path / "c2.dat"
    for out in (one, two):
        assert simulate_main(["-n", "2000", "--seed", "3", "-v", "0", str(data), str(logging),
                              str(out)]) == 0
    assert one.read_bytes() == two.read_bytes()
    log = load_svmlight(str(one), costs=True)
    assert set(np.unique(log.y)) == {0.0, 1.0} and (log.cost[log.y == 1] > 0).all()
    model = tmp_path / "from_clicks"
    assert learn_main(["--clicks", "-v", "0", str(one), str(model)]) == 0
    assert simulate_main(["-n", "-1", str(data), str(logging), str(tmp_path / "c3")]) == 2
    assert simulate_main(["--eps-minus", "2", str(data), str(logging), str(tmp_path / "c3")]) == 2
    assert not (tmp_path / "c3").exists()


def test_valid_clicks_choose_c_by_the_inverse_propensity_estimate(tmp_path, capsys):
    path, *_ = click_file(tmp_path, n_queries=40, seed=1)
    valid, X, y, qid, weight = click_file(tmp_path / "v" if (tmp_path / "v").mkdir() is None
                                          else tmp_path, n_queries=20, seed=2)
    model = tmp_path / "model"
    assert learn_main(["--clicks", "-c", "0.1,10", "--valid", str(valid), "-v", "1",
                       str(path), str(model)]) == 0
    out = capsys.readouterr().out
    assert "20 queries" in out and model.exists()
    from rankfast.model_selection import ValidationSet
    weighted = ValidationSet(X, y, qid, sample_weight=weight)
    np.testing.assert_allclose(weighted.query_weights * weight[y == 1].mean(), weight[y == 1])



def test_classify_clicks_prints_the_counterfactual_estimates(tmp_path, capsys):
    from rankfast.cli.classify import classify_main
    from rankfast.clicks import counterfactual_metrics
    path, X, y, qid, weight = click_file(tmp_path)
    model = tmp_path / "model"
    assert learn_main(["--clicks", "-c", "1", "-v", "0", str(path), str(model)]) == 0
    capsys.readouterr()
    assert classify_main(["--clicks", "-v", "0", str(path), str(model),
                          str(tmp_path / "pred")]) == 0
    out = capsys.readouterr().out
    scores = read_model(str(model)).predict(X)
    expected = counterfactual_metrics(scores, y, qid, weight)
    assert f"over {int((y == 1).sum())} clicked documents" in out
    assert f"relevant results {expected.average_rank:.4f}" in out
    assert f"DCG per relevant result {expected.dcg:.4f}" in out
    assert classify_main(["--clicks", "-", str(model), str(tmp_path / "p2")]) == 2


def multi_click_file(tmp_path, n_queries=30, seed=5):
    """Queries with two clicks of different costs (weights that differ among preferred
    documents): what only the learners of document weights take."""
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(1, n_queries + 1):
        size = int(rng.integers(4, 9))
        clicked = set(rng.choice(size, 2, replace=False).tolist())
        for i in range(size):
            cost = f" cost:{float(rng.integers(1, 9))!r}" if i in clicked else ""
            feats = " ".join(f"{j + 1}:{rng.normal():.6g}" for j in range(4))
            lines.append(f"{int(i in clicked)} qid:{q}{cost} {feats}\n")
    path = tmp_path / "multi.dat"
    path.write_text("".join(lines))
    return path


def test_a_validation_file_scores_the_document_weighted_fits(tmp_path):
    """--valid: each C of the grid is fitted with the document weights, as the final fit."""
    from rankfast.model_selection import ValidationSet, cross_validate
    train = load_svmlight(str(multi_click_file(tmp_path)), costs=True)
    valid_path = tmp_path / "v"
    valid_path.mkdir()
    valid = load_svmlight(str(multi_click_file(valid_path, seed=6)), costs=True)
    weight = np.where(np.isnan(train.cost), 1.0, train.cost)
    vset = ValidationSet(valid.X, valid.y, valid.qid)
    table = cross_validate(RankSVM(), train.X, train.y, train.qid, {"C": [0.1, 10.0]}, cv=vset,
                           metric="ndcg", convention="standard", sample_weight=weight)
    from rankfast import metrics
    for i, C in enumerate((0.1, 10.0)):
        scores = RankSVM(C=C).fit(train.X, train.y, train.qid, sample_weight=weight).predict(
            valid.X)
        assert table.mean[i, 0] == pytest.approx(metrics.ndcg(scores, valid.y, valid.qid, k=None,
                                                              convention="standard"))


def test_grids_take_svm_proprank_s_c_too(tmp_path, capsys):
    path, X, y, qid, weight = click_file(tmp_path, n_queries=60)
    model = tmp_path / "model"
    assert learn_main(["-a", "svmrank", "--clicks", "-c", "0.1,1", "-v", "1", str(path),
                       str(model)]) == 0
    assert "the learner's C is -c times" in capsys.readouterr().err
    assert learn_main(["--clicks", "-t", "2", "-g", "0.1,1", "--landmarks", "20", "-c", "1",
                       "-v", "0", str(path), str(tmp_path / "rbf")]) == 0


def test_clicks_cross_validate_each_click_by_its_dcg_by_default(tmp_path, capsys):
    """A click instance often has fewer than 10 documents: LETOR's NDCG@10 would score it 0."""
    path, *_ = click_file(tmp_path, n_queries=60)
    assert learn_main(["--clicks", "-c", "0.1,1", "-v", "1", str(path),
                       str(tmp_path / "m")]) == 0
    header = [line for line in capsys.readouterr().out.splitlines() if "pair accuracy" in line]
    assert header and header[0].split()[1:3] == ["NDCG", "(standard)"]


def test_clicks_in_a_file_whose_queries_come_from_a_group_file(tmp_path):
    lines = ["1 cost:2 1:1 2:0\n", "0 1:0 2:1\n", "0 1:0.5 2:0.5\n",
             "0 1:0 2:0\n", "1 cost:3 1:1 2:1\n"]
    path = tmp_path / "g.dat"
    path.write_text("".join(lines))
    (tmp_path / "g.dat.query").write_text("3\n2\n")
    assert learn_main(["--clicks", "-c", "1", "-v", "0", str(path), str(tmp_path / "m")]) == 0


def test_click_mistakes_on_the_command_line_are_usage_errors(tmp_path, capsys):
    from rankfast.cli.classify import classify_main
    path, *_ = click_file(tmp_path)
    model = tmp_path / "model"
    assert learn_main(["--clip", "0.1", "--workers", "2", str(path), str(model)]) == 2
    assert learn_main(["-c", "1", "-v", "0", str(path), str(model)]) == 0
    assert classify_main(["--clicks", "--workers", "2", str(path), str(model)]) == 2
    no_clicks = tmp_path / "none.dat"
    no_clicks.write_text("0 qid:1 cost:2 1:1\n0 qid:1 1:2\n")
    assert classify_main(["--clicks", str(no_clicks), str(model), str(tmp_path / "p")]) == 1
    assert "Traceback" not in capsys.readouterr().err
    labelled = tmp_path / "train.dat"
    X, y, qid = letor_like(n_queries=20, seed=1)
    dump_svmlight(X, y, qid, str(labelled))
    assert simulate_main(["--weights-eta", "400", "-n", "2000", str(labelled), str(model),
                          str(tmp_path / "c.dat")]) == 2
    assert simulate_main(["--weights-eta", "400", "--clip", "0.01", "-n", "2000", "-v", "0",
                          str(labelled), str(model), str(tmp_path / "c.dat")]) == 0


def test_valid_click_log_counts_ties_against_the_click(tmp_path, capsys):
    """A model that lacks the validation log's features scores every document alike: with the
    clicks first in the file, the table rated that ranker NDCG 1.0 (ties in file order),
    where rank_classify --clicks rates it worst; ties now count against the click."""
    train, *_ = click_file(tmp_path)
    valid = tmp_path / "valid.dat"
    valid.write_text("1 qid:1 cost:1 9:1\n0 qid:1 9:2\n0 qid:1 9:0\n"
                     "1 qid:2 cost:2 9:1\n0 qid:2 9:3\n")
    assert learn_main(["--clicks", "-c", "1,10", "--valid", str(valid), str(train),
                       str(tmp_path / "m")]) == 0
    table = capsys.readouterr().out.split("Validation (")[1].splitlines()
    # each click last in its query: DCG 1/log2(4) and 1/log2(3), the second click weighing 2
    worst = (1 / np.log2(4) + 2 / np.log2(3)) / 3
    assert [float(row.split()[1]) for row in table[2:4]] == [round(worst, 4)] * 2


def test_click_grids_show_the_c_typed_and_the_table_s_mean(tmp_path, capsys):
    """With --clicks -c 1,10 --valid, the progress line showed the unweighted mean and both it
    and the table the learner's internal C (-c times the clicks' mean weight)."""
    train, *_ = click_file(tmp_path)
    (tmp_path / "valid").mkdir()
    valid, *_ = click_file(tmp_path / "valid", seed=3)
    assert learn_main(["--clicks", "-c", "1,10", "-v", "2", "--valid", str(valid), str(train),
                       str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    progress = {line.split("C = ")[1].split(":")[0]: float(line.split(") ")[1].split()[0])
                for line in out.splitlines() if line.startswith("CV ")}
    rows = out.split("Validation (")[1].splitlines()[2:4]
    table = {row.split()[0]: float(row.split()[1]) for row in rows}
    assert sorted(progress) == sorted(table) == ["1", "10"]
    assert progress == table
