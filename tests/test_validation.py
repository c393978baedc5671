"""Choosing C on a validation set: LETOR's protocol (issue 24 item 4).

rank_learn --valid FILE with a -c list (and -g with -t 2) trains every value on the
training file, scores FILE, prints the table (its queries are the folds), applies the
rule and writes a plain fit at the chosen value; in Python the same is
``cv=rankfast.model_selection.ValidationSet(X, y, qid)``.
"""
import copy
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from shared_paths import DATA, require

from rankfast import (
    GreedyRankRLS,
    KernelApproxLearner,
    KernelParams,
    RankNCG,
    RankRLS,
    RankSVM,
    RankSVML1,
    dump_svmlight,
    metrics,
    read_model,
)
from rankfast.cli.learn import learn_main
from rankfast.model_selection import CVResult, ValidationSet

CS = [0.001, 0.01, 0.1, 1.0, 10.0]


def letor_like(n_queries, seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(6, 15, size=n_queries)
    qid = np.repeat(np.arange(1, n_queries + 1), sizes)
    X = rng.normal(size=(len(qid), 5))
    y = np.digitize(X @ [1.5, -1.0, 0.5, 0.0, 0.2] + 1.5 * rng.normal(size=len(qid)), [0.5, 1.5])
    return X, y.astype(float), qid


def test_every_c_is_trained_on_all_of_train_and_scored_on_the_validation_queries():
    X, y, qid = letor_like(30, 0)
    Xv, yv, qv = letor_like(12, 1)
    ranker = RankSVM(C=CS, cv=ValidationSet(Xv, yv, qv)).fit(X, y, qid)
    result = ranker.cv_result_
    assert result.validation and result.folds == "validation set, 12 queries"
    expected = np.array([metrics.ndcg(RankSVM(C=C).fit(X, y, qid).predict(Xv), yv, qv, k=10,
                                      per_query=True) for C in CS])
    np.testing.assert_allclose(result.values[:, :, 0], expected, rtol=1e-6, atol=1e-9)
    assert ranker.C_ == CS[int(np.argmax(expected.mean(axis=1)))]
    # the model is a plain fit at the chosen value
    np.testing.assert_array_equal(ranker.weights_, RankSVM(C=ranker.C_).fit(X, y, qid).weights_)
    # the 1se rule's standard error is over the validation queries
    np.testing.assert_allclose(result.se[:, 0], expected.std(axis=1, ddof=1) / np.sqrt(12))
    one_se = RankSVM(C=CS, cv=ValidationSet(Xv, yv, qv), cv_rule="1se").fit(X, y, qid)
    best = int(np.argmax(expected.mean(axis=1)))
    within = expected.mean(axis=1) >= expected.mean(axis=1)[best] - result.se[best, 0]
    assert one_se.C_ == CS[int(np.flatnonzero(within)[0])]


def test_rankrls_and_a_learner_of_one_c_choose_on_the_validation_set_too():
    from rankfast.model_selection import GridSearch
    X, y, qid = letor_like(30, 2)
    Xv, yv, qv = letor_like(10, 3)
    valid = ValidationSet(Xv, yv, qv)
    rls = RankRLS(C=CS, cv=valid).fit(X, y, qid)
    expected = [metrics.ndcg(RankRLS(C=C).fit(X, y, qid).predict(Xv), yv, qv, k=10) for C in CS]
    np.testing.assert_allclose(rls.cv_result_.mean[:, 0], expected, rtol=1e-9)
    np.testing.assert_allclose(rls.weights_, RankRLS(C=rls.C_).fit(X, y, qid).weights_,
                               rtol=1e-8, atol=1e-12)
    search = GridSearch(RankSVML1(), {"C": CS}, cv=valid).fit(X, y, qid)
    assert search.cv_result_.validation
    np.testing.assert_array_equal(search.weights_,
                                  RankSVML1(C=search.C_).fit(X, y, qid).weights_)


def test_a_validation_set_is_checked_and_shared_not_copied():
    X, y, qid = letor_like(5, 4)
    with pytest.raises(ValueError, match="NaN or infinity"):
        ValidationSet(np.full((3, 2), np.nan), [1, 0, 1], [1, 1, 1])
    with pytest.raises(ValueError, match="rows but y has"):
        ValidationSet(X, y[:-1], qid)
    valid = ValidationSet(X, y, qid)
    assert copy.deepcopy(RankSVM(cv=valid)).cv is valid


def _write(path, X, y, qid):
    dump_svmlight(X, y, qid, path=str(path))
    return str(path)


@pytest.mark.parametrize("flags, plain", [
    (["-c", "0.001,0.1,10"], []),
    (["-a", "svmrank", "-c", "0.001,0.1,10"], ["-a", "svmrank"]),
    (["-a", "rankrls", "-c", "0.001,0.1,10", "--cv-rule", "1se"], ["-a", "rankrls"]),
    (["-t", "2", "-g", "0.1,1", "-c", "0.1,10", "--landmarks", "30"],
     ["-t", "2", "--landmarks", "30"]),
    (["-t", "2", "-g", "0.5", "-c", "0.1,10", "--landmarks", "30"],
     ["-t", "2", "--landmarks", "30"]),
], ids=["prsvm", "svmrank", "rankrls-1se", "rbf-grid", "rbf-c-list"])
def test_rank_learn_valid_writes_a_plain_fit_at_the_chosen_value(tmp_path, capsys, flags, plain):
    train = _write(tmp_path / "train.txt", *letor_like(30, 5))
    vali = _write(tmp_path / "vali.txt", *letor_like(12, 6))
    assert learn_main(flags + ["--valid", vali, train, str(tmp_path / "model")]) == 0
    out = capsys.readouterr().out
    assert "Reading validation examples...done" in out
    assert f"Validation ({vali}, 12 queries): mean ± sd over its queries" in out
    chosen = read_model(str(tmp_path / "model")).metadata
    values = {"C": chosen["C"]}
    if "gamma" in chosen or "-g" in flags:
        chosen_line = [line for line in out.splitlines() if line.endswith("<- chosen")][0]
        values["gamma"] = chosen_line.split()[0]
    again = plain + ["-c", str(values["C"])] + (["-g", values["gamma"]] if "gamma" in values
                                                 else [])
    assert learn_main(["-v", "0"] + again + [train, str(tmp_path / "plain")]) == 0
    model, alone = read_model(str(tmp_path / "model")), read_model(str(tmp_path / "plain"))
    if hasattr(model, "weights"):
        np.testing.assert_allclose(model.weights, alone.weights, rtol=1e-6, atol=1e-9)
    else:
        np.testing.assert_array_equal(model.alphas, alone.alphas)


def test_rank_learn_valid_notes_and_refusals(tmp_path, capsys):
    train = _write(tmp_path / "train.txt", *letor_like(10, 7))
    vali = _write(tmp_path / "vali.txt", *letor_like(4, 8))
    assert learn_main(["-c", "1", "--valid", vali, train, str(tmp_path / "m")]) == 0
    captured = capsys.readouterr()
    assert "--valid has no effect without a list of -c" in captured.err
    assert "Reading validation examples" not in captured.out
    assert learn_main(["-c", "0.1,1", "--folds", "3", "--valid", vali, train,
                       str(tmp_path / "m")]) == 0
    assert "--folds has no effect with --valid" in capsys.readouterr().err
    (tmp_path / "bad.txt").write_text("1 qid:1 1:nan\n")
    assert learn_main(["-c", "0.1,1", "--valid", str(tmp_path / "bad.txt"), train,
                       str(tmp_path / "m")]) == 1
    assert "bad.txt" in capsys.readouterr().err
    assert learn_main(["-c", "0.1,1", "--valid", str(tmp_path / "missing.txt"), train,
                       str(tmp_path / "m")]) == 1


def test_the_plot_of_a_validation(tmp_path):
    pytest.importorskip("matplotlib")
    train = _write(tmp_path / "train.txt", *letor_like(10, 9))
    vali = _write(tmp_path / "vali.txt", *letor_like(4, 10))
    assert learn_main(["-v", "0", "-c", "0.01,1", "--valid", vali, "--plot",
                       str(tmp_path / "curve.png"), train, str(tmp_path / "m")]) == 0
    assert (tmp_path / "curve.png").stat().st_size > 1000


def test_a_cv_result_says_validation_in_its_header():
    result = CVResult([{"C": 1.0}, {"C": 2.0}], [metrics_column()], np.ones((2, 3, 1)),
                      "vali.txt, 3 queries", validation=True)
    assert result.format().startswith("Validation (vali.txt, 3 queries): mean ± sd over its "
                                      "queries")


def metrics_column():
    from rankfast.model_selection import Metric
    return Metric.parse("ndcg@10")


def test_the_letor_example_runs_the_protocol_on_mq2008_in_one_command(tmp_path):
    """examples/letor_mq2008.sh: train on S1-S3, choose C on S4, test on S5."""
    mq = require(DATA / "mq2008")
    script = Path(__file__).resolve().parents[1] / "examples" / "letor_mq2008.sh"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    done = subprocess.run(["sh", str(script), str(mq), str(tmp_path)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Validation (" in done.stdout and "157 queries" in done.stdout
    assert "<- chosen" in done.stdout and "NDCG@10 (LETOR): " in done.stdout
    model = read_model(str(tmp_path / "model.dat"))
    assert model.metadata["grid"] == "0.001,0.01,0.1,1,10,100"


# ---------------------------------------------------------------- fit(eval_set=...) as XGBRanker

@pytest.mark.parametrize("make", [
    lambda: RankSVM(C=1.0), lambda: RankSVML1(C=1.0), lambda: RankRLS(C=1.0, cv_metric="map"),
    lambda: RankNCG(C=1.0), lambda: GreedyRankRLS(C=1.0, k=2),
    lambda: KernelApproxLearner(RankSVM(C=1.0), KernelParams(kernel=2, gamma=0.5), landmarks=20)],
    ids=["RankSVM", "RankSVML1", "RankRLS-map", "RankNCG", "GreedyRankRLS", "Nystroem"])
def test_eval_set_records_evals_result_as_xgbranker(make):
    X, y, qid = letor_like(20, 11)
    Xv, yv, qv = letor_like(8, 12)
    Xt, yt, qt = letor_like(6, 13)
    sizes = np.unique(qt, return_counts=True)[1]
    ranker = make().fit(X, y, qid, eval_set=[(Xv, yv), (Xt, yt)], eval_qid=[qv, None],
                        eval_group=[None, sizes])
    plain = make().fit(X, y, qid)
    np.testing.assert_array_equal(ranker.weights_, plain.weights_)      # only recorded
    assert list(ranker.evals_result_) == ["validation_0", "validation_1"]
    first = list(ranker.evals_result_["validation_0"])
    assert first[0] == getattr(ranker, "cv_metric", "ndcg@10")
    assert set(first) >= {"ndcg@10", "map", "err@10", "pairs"}
    for name, (Xe, ye, qe) in (("validation_0", (Xv, yv, qv)), ("validation_1", (Xt, yt, qt))):
        scores = plain.predict(Xe)
        assert ranker.evals_result_[name]["ndcg@10"] == [metrics.ndcg(scores, ye, qe, k=10)]
        assert ranker.evals_result_[name]["map"] == [metrics.mean_average_precision(scores, ye,
                                                                                     qe)]
    assert not hasattr(plain, "evals_result_")
    assert not hasattr(ranker.fit(X, y, qid), "evals_result_")          # a refit without


def test_eval_set_is_checked():
    X, y, qid = letor_like(5, 14)
    with pytest.raises(ValueError, match="one entry per eval_set pair"):
        RankSVM().fit(X, y, qid, eval_set=[(X, y)], eval_qid=[qid, qid])
    with pytest.raises(ValueError, match="eval_set\\[0\\]'s X contains NaN"):
        RankSVM().fit(X, y, qid, eval_set=[(np.full_like(X, np.nan), y)], eval_qid=[qid])
    with pytest.raises(ValueError, match="which is not given"):
        RankSVM().fit(X, y, qid, eval_qid=[qid])
