"""rank_learn (rankfast.cli.learn): its output, notes, errors and exit codes, the C lists and
cross-validation it runs, --valid, --plot, --normalize and the weights files."""

import os
import re
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from data_makers import SMALL, raw_data, write_data
from data_makers import letor_like_queries as letor_like
from data_makers import raw_scale_features as _raw_scale_features
from data_makers import weighted_queries as data
from fit_helpers import Recorder
from program_runs import check_figure_file as check_file
from program_runs import launch_bytes as launch
from program_runs import leftovers, svm_rank_pval
from reference_impl import brute_query_min_max
from shared_paths import REFERENCE, require

import rankfast
from rankfast import GreedyRankRLS, RankRLS, RankSVM, dump_svmlight, plot, read_model
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main
from rankfast.data.normalize import Normalizer
from rankfast.errors import MissingDependencyError
from rankfast.model_selection import ValidationSet

ROOT = Path(__file__).resolve().parents[1]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


EXAMPLE3 = REFERENCE / "example3"


WEIGHT_OF = {10: 1, 11: 2, 12: 1, 13: 0, 14: 3, 15: 1}     # 13 left out, 14 three times


CS = [0.03, 0.3, 3.0]


M = "ndcg@5"            # the queries have 7 documents: LETOR's NDCG@10 is 0 for each


def test_learning_is_deterministic(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for path in (first, second):
        assert learn_main(["-v", "0", "-c", "1", str(EXAMPLES / "train.dat"), str(path)]) == 0
    assert first.read_bytes() == second.read_bytes()


@pytest.mark.parametrize("argv", [
    [], ["-c"], ["-c", "0", "x"], ["-c", "-1", "x"], ["-c", "abc", "x"], ["-e", "0", "x"],
    ["-l", "0", "x"], ["-l", "3", "x"], ["-p", "3", "x"], ["-o", "3", "x"], ["-o", "1", "x"],
    ["-q", "1", "x"], ["-h", "0", "x"], ["-w", "5", "x"], ["-z", "x"], ["--b", "1", "x"],
    ["x", "y", "z"], ["-t", "4", "x"], ["--folds", "1", "x"], ["-v", "7", "x"],
])
def test_learn_usage_errors_exit_2(tmp_path, capsys, argv):
    assert learn_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rank_learn: ") and "Try 'rank_learn -?'" in err
    assert "Traceback" not in err


def test_bad_data_exits_1_names_line_and_writes_nothing(tmp_path, capsys):
    train = tmp_path / "train.dat"
    train.write_text("1 qid:1 1:1\n\n2 qid:1 1:abc\n")
    model = tmp_path / "model.dat"
    assert learn_main([str(train), str(model)]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"rank_learn: {train}:3: feature value in '1:abc' is not a number\n"
    assert not model.exists() and sorted(os.listdir(tmp_path)) == ["train.dat"]


def test_noncontiguous_queries_are_grouped_with_a_note(tmp_path, capsys):
    train = tmp_path / "train.dat"
    train.write_text("2 qid:1 1:1 2:0\n1 qid:2 1:0 2:1\n0 qid:1 1:0 2:0\n2 qid:2 1:1 2:1\n")
    assert learn_main(["-c", "1", str(train), str(tmp_path / "m")]) == 0
    captured = capsys.readouterr()
    assert "qid 1 are not contiguous" in captured.err
    assert "2 features, 2 rankings, 4 examples" in captured.out


def test_rankrls_with_a_c_list_prints_the_cv_table(tmp_path, capsys):
    model = tmp_path / "m"
    assert learn_main(["-a", "rankrls", "-c", "0.01,0.1,1,10", str(EXAMPLES / "train.dat"), str(model)]) == 0
    out = capsys.readouterr().out
    assert "LQO pair loss" in out and out.count("<- chosen") == 1
    chosen = re.search(r"^\s*(\S+)\s.*<- chosen", out, re.M).group(1)
    meta = read_model(str(model)).metadata
    assert meta["algorithm"] == "rankrls" and float(meta["C"]) == float(chosen)
    assert meta["grid"] == "0.01,0.1,1,10"


def test_prsvm_with_a_c_list_cross_validates(tmp_path, capsys):
    model = tmp_path / "m"
    assert learn_main(["-c", "0.01,1", str(EXAMPLES / "train.dat"), str(model)]) == 0
    assert "(5 folds of queries, seed 0)" in capsys.readouterr().out
    assert read_model(str(model)).metadata["grid"] == "0.01,1"


def test_greedy_selects_k_features_and_records_them(tmp_path, capsys):
    model = tmp_path / "m"
    assert learn_main(["-a", "greedy", "-k", "4", str(EXAMPLES / "train.dat"), str(model)]) == 0
    out = capsys.readouterr().out
    steps = re.findall(r"Greedy step \d+: feature (\d+), LQO error", out)
    assert len(steps) == 4
    loaded = read_model(str(model))
    assert loaded.metadata["selected"] == ",".join(steps)
    assert sorted(loaded.feature_ids.tolist()) == sorted(map(int, steps))
    assert "-k only tune" not in capsys.readouterr().err


def test_rankncg_trains_on_one_ranking_without_qids(tmp_path, capsys):
    single = tmp_path / "single.dat"
    single.write_text("".join(re.sub(r" qid:\d+", "", line) for line in
                              (EXAMPLES / "train.dat").read_text().splitlines(keepends=True)[:600]))
    model = tmp_path / "m"
    assert learn_main(["-a", "rankncg", "-c", "1", str(single), str(model)]) == 0
    assert "20 features, 1 rankings, 600 examples" in capsys.readouterr().out
    assert read_model(str(model)).metadata["algorithm"] == "rankncg"
    assert classify_main(["--metrics", str(single), str(model), str(tmp_path / "p")]) == 0
    accuracy = float(re.search(r"Pairwise accuracy: ([0-9.]+)", capsys.readouterr().out).group(1))
    assert accuracy > 0.85


@pytest.mark.parametrize("argv", [["-a", "rankncg", "--erfc", "slow", "x"],
                                  ["-a", "rankncg", "--erfc-eps", "2", "x"]])
def test_rankncg_bad_erfc_options_are_usage_errors(capsys, argv):
    assert learn_main(argv) == 2


@pytest.mark.parametrize("argv", [
    ["-t", "2", "--seed", "-1"], ["-t", "2", "--approx", "rff", "--seed", "-1"],
    ["-t", "2", "--seed", str(2**32)], ["-t", "2", "--seed", "1.5"],
    ["-t", "2", "--landmarks", "0"], ["-t", "2", "--landmarks", "-5"],
])
def test_bad_kernel_approximation_values_are_usage_errors(tmp_path, capsys, small, argv):
    assert learn_main(argv + [str(small), str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rank_learn: {argv[-2]} ") and "Try 'rank_learn -?'" in err


def test_largest_seed_is_accepted(tmp_path, small):
    assert learn_main(["-v", "0", "-t", "2", "--seed", str(2**32 - 1), str(small),
                       str(tmp_path / "m")]) == 0


@pytest.mark.parametrize("flags, note", [(["-w", "1"], "-w only tunes svm_rank's QP solver"),
                                         (["-w", "1", "-f", "5"], "-w -f only tune svm_rank's QP solver")])
def test_ignored_qp_flags_note_is_grammatical(tmp_path, capsys, small, flags, note):
    assert learn_main(flags + [str(small), str(tmp_path / "m")]) == 0
    assert f"rank_learn: note: {note}; accepted and ignored\n" in capsys.readouterr().err


def test_cross_validation_on_one_query_names_the_training_file(tmp_path, capsys):
    # Needs the learners to raise ValueError for too few queries (not UsageError).
    one = tmp_path / "one.dat"
    one.write_text("2 qid:1 1:1 2:0\n1 qid:1 1:0 2:1\n0 qid:1 1:0 2:0\n")
    assert learn_main(["-v", "0", "-c", "0.1,1", str(one), str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rank_learn: {one}: ") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "m").exists()


def test_a_value_error_while_training_is_a_data_error(tmp_path, capsys, small, monkeypatch):
    class Refuses:
        def fit(self, X, y, qid, log=None):
            raise ValueError("these documents cannot be learned from")

    monkeypatch.setattr("rankfast.cli.learners.make_learner", lambda options, given: (Refuses(), []))
    assert learn_main(["-v", "0", str(small), str(tmp_path / "m")]) == 1
    assert capsys.readouterr().err == (f"rank_learn: {small}: these documents cannot be "
                                       f"learned from\n")


def test_learn_y1_prints_svm_light_reader_and_writer_lines(tmp_path, capsys, monkeypatch):
    case = require(REFERENCE / "edge_cases" / "opt_y1")
    shutil.copyfile(case / "train.dat", tmp_path / "train.dat")
    monkeypatch.chdir(tmp_path)
    assert learn_main(["-c", "3", "-y", "1", "train.dat", "model.dat"]) == 0
    ours = capsys.readouterr().out.splitlines(keepends=True)
    golden = (case / "stdout.txt").read_text().splitlines(keepends=True)
    # Reading and writing are svm_rank's lines; its QP solver's lines in between are not.
    assert ours[:4] == golden[:4]
    assert golden[3].startswith("Training set properties: ")
    assert ours[-2:] == golden[-2:] == ["Writing learned model...Writing model file...done\n", "done\n"]


def test_y_counts_every_hundred_examples_as_svm_light_does(tmp_path, capsys):
    # SVM-light's read_documents prints "%ld.." after every 100th example.
    train = tmp_path / "train.dat"
    train.write_text("".join(f"{i % 3} qid:{i // 10} 1:{i}\n" for i in range(250)))
    assert learn_main(["-v", "0", "-y", "1", str(train), str(tmp_path / "m")]) == 0
    assert capsys.readouterr().out.startswith(
        "Scanning examples...done\nReading examples into memory...100..200..OK. (250 examples read)\n"
        "Training set properties: 1 features, 25 rankings, 250 examples\n")


def _data(tmp_path):
    rng = np.random.default_rng(0)
    qid = np.repeat([1, 2, 3, 4], 8)
    X = rng.normal(size=(32, 3))
    y = (X @ [1.0, -1.0, 0.5] + rng.normal(size=32) > 0).astype(float)
    path = tmp_path / "train.txt"
    dump_svmlight(X, y, qid, path=str(path))
    return X, y, qid, str(path)


@pytest.mark.parametrize("per", ["query", "line"])
def test_weights_file_trains_as_the_api_with_sample_weight(tmp_path, per):
    X, y, qid, train = _data(tmp_path)
    per_query = np.array([1.0, 2.0, 0.5, 1.0])
    weights = per_query if per == "query" else np.repeat(per_query, 8)
    (tmp_path / "train.weight").write_text("".join(f"{w}\n" for w in weights))
    assert learn_main(["-v", "0", "-c", "1", "--weights", str(tmp_path / "train.weight"), train,
                       str(tmp_path / "model")]) == 0
    expected = RankSVM(C=1.0).fit(X, y, qid, sample_weight=per_query)
    model = read_model(str(tmp_path / "model"))
    np.testing.assert_allclose(model.weights, expected.weights_, rtol=1e-6)
    assert learn_main(["-v", "0", "-c", "1", train, str(tmp_path / "plain")]) == 0
    assert not np.allclose(read_model(str(tmp_path / "plain")).weights, model.weights)


@pytest.mark.parametrize("content, flags, status, message", [
    ("1\n2\nx\n", [], 1, "weight.txt:3: weight 'x' is not a finite number >= 0"),
    ("1\n-2\n1\n1\n", [], 1, "weight.txt:2"),
    ("1\n2\n", [], 1, "one weight per row \\(32\\) or per query \\(4\\)"),
    ("1\n1\n2\n", ["-c", "0.1,1"], 1, "weight.txt: sample_weight must hold one weight per row"),
])
def test_bad_weights_files_and_uses_are_refused(tmp_path, capsys, content, flags, status,
                                                message):
    _, _, _, train = _data(tmp_path)
    (tmp_path / "weight.txt").write_text(content)
    assert learn_main(flags + ["--weights", str(tmp_path / "weight.txt"), train,
                               str(tmp_path / "model")]) == status
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "model").exists()


@pytest.mark.parametrize("kernel", ["0", "1", "2", "3"])
@pytest.mark.parametrize("algorithm", ["prsvm", "rankncg", "rankrls", "greedy"])
def test_a_feature_beyond_float32_is_one_clean_error(tmp_path, capsys, kernel, algorithm):
    data, model = tmp_path / "d.dat", tmp_path / "m"
    data.write_text("3 qid:1 1:4e38 2:1\n2 qid:1 1:1 2:0.5\n1 qid:1 1:2 2:0\n"
                    "2 qid:2 1:1 2:1\n1 qid:2 1:3 2:0\n")
    assert learn_main(["-v", "0", "-t", kernel, "-a", algorithm, str(data), str(model)]) == 1
    err = capsys.readouterr().err
    assert err == (f"rank_learn: {data}:1: feature value in '1:4e38' is beyond single precision "
                   f"(svm_rank stores feature values as 4-byte floats, at most 3.4028235e+38 in "
                   f"magnitude): rescale the features\n")
    assert not model.exists() and leftovers(tmp_path) == []


def test_a_model_that_cannot_be_formatted_is_a_clean_error(small, tmp_path, capsys, monkeypatch):
    """Whatever the model file cannot hold is reported like the learners' errors, no traceback."""
    from rankfast.learners import kernel_approx as kernels
    monkeypatch.setattr(kernels, "with_width", lambda Z, width: Z * np.float64(1e39))
    assert learn_main(["-v", "0", "-t", "3", str(small), str(tmp_path / "m")]) == 1
    assert capsys.readouterr().err.startswith(f"rank_learn: {small}: cannot write ")
    assert not (tmp_path / "m").exists()


def test_features_of_wildly_different_scales_no_longer_make_rankrls_ill_conditioned(tmp_path):
    # This file once gave scipy's ill-conditioning warning (rcond ~1e-24); the normal
    # equations are now solved scaled to a unit diagonal, where the scales do not matter.
    data = tmp_path / "ill.dat"
    data.write_text("3 qid:1 1:1e15 2:1\n2 qid:1 1:0 2:0.5\n1 qid:1 1:3e14 2:0\n"
                    "2 qid:2 1:1e15 2:1\n1 qid:2 1:0 2:0\n")
    run = launch("rank_learn", "-v", "0", "-a", "rankrls", "-c", "1e12", data, tmp_path / "m",
                 capture_output=True, text=True)
    assert run.returncode == 0 and run.stderr == "", run.stderr


def test_greedy_names_c_when_c_is_the_cause(tmp_path, capsys):
    data = tmp_path / "d.dat"
    data.write_text(SMALL)
    assert learn_main(["-v", "0", "-a", "greedy", "-c", "1e30", str(data), str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    assert "C = 1e+30 is too large" in err and "use -c " in err


def test_weights_below_float32_name_c(small, tmp_path, capsys):
    assert learn_main(["-v", "0", "-a", "rankrls", "-c", "1e-300", str(small),
                       str(tmp_path / "m")]) == 1
    assert "C is too small for these features; use a larger -c" in capsys.readouterr().err


def test_linear_algebra_failures_are_explained():
    from rankfast.cli.learn import _linear_algebra_reason
    text = _linear_algebra_reason(np.linalg.LinAlgError("Eigenvalues did not converge"))
    assert "Eigenvalues did not converge" in text and "rescale the features" in text
    text = _linear_algebra_reason(ValueError("array must not contain infs or NaNs"))
    assert "rescale the features" in text


@pytest.mark.parametrize("where", ["missing/m", "dir", "readonly"])
def test_an_unwritable_model_path_fails_before_training(small, tmp_path, capsys, where):
    (tmp_path / "dir").mkdir()
    (tmp_path / "readonly").write_text("old\n")
    (tmp_path / "readonly").chmod(0o444)
    out = tmp_path / where
    assert learn_main([str(small), str(out)]) == 1
    captured = capsys.readouterr()
    assert "Training set properties" not in captured.out
    assert captured.err.startswith(f"rank_learn: {out}: cannot write")
    assert (tmp_path / "readonly").read_text() == "old\n"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("flags, says", [
    (["-t", "2", "-g", "-1"], "-g -1: the RBF kernel needs g > 0"),
    (["-t", "1", "-d", "-3"], "-d -3: the polynomial kernel needs d >= 1")])
def test_kernel_parameters_that_give_no_kernel_have_a_note(small, tmp_path, capsys, flags, says):
    learn_main([*flags, "--landmarks", "4", str(small), str(tmp_path / "m")])
    assert f"rank_learn: note: {says}" in capsys.readouterr().err
    learn_main(["-v", "0", *flags, "--landmarks", "4", str(small), str(tmp_path / "m")])
    assert "note" not in capsys.readouterr().err


def test_an_all_zero_model_says_c_is_too_small(small, tmp_path, capsys):
    model = tmp_path / "m"
    assert learn_main(["-c", "1e-300", str(small), str(model)]) == 0
    assert ("rank_learn: note: the model is all zero (every document scores 0): C = 1e-300 is "
            "too small for these features; use a larger -c") in capsys.readouterr().err
    assert learn_main(["-c", "1", str(small), str(model)]) == 0
    assert "note" not in capsys.readouterr().err


def test_rank_learn_notes_a_saturated_kernel_and_how_to_scale_for_kernels(tmp_path, capsys):
    from rankfast import dump_svmlight
    from rankfast.cli.learn import learn_main
    rng = np.random.default_rng(6)
    X = _raw_scale_features(rng, 200)
    y = rng.integers(0, 3, 200).astype(float)
    path = tmp_path / "raw.dat"
    dump_svmlight(X, y, np.repeat(np.arange(20), 10), str(path))
    assert learn_main(["-t", "2", str(path), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert "note: -g 1: the RBF kernel" in err and \
        "scale the features (--normalize zscore, query or log)" in err
    assert "--normalize zscore, query (per query, as LETOR) or log may train a better model" in err
    assert learn_main(["-t", "2", "--normalize", "query", str(path), str(tmp_path / "m")]) == 0
    assert "note" not in capsys.readouterr().err                  # scaled per query: not saturated
    assert learn_main(["-t", "2", "--normalize", "log", str(path), str(tmp_path / "m")]) == 0
    assert "note" not in capsys.readouterr().err
    assert learn_main(["-t", "2", "-g", "1000", "--normalize", "log", str(path),
                       str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err                       # saturated although normalised: -g only
    assert "the RBF kernel" in err and "try -g near" in err and "--normalize" not in err
    assert learn_main(["-t", "2", "-g", "1e-18,1", str(path), str(tmp_path / "m")]) == 0
    assert "the RBF kernel" not in capsys.readouterr().err             # the smallest -g is fine
    assert learn_main(["-v", "0", "-t", "3", str(path), str(tmp_path / "m")]) == 0
    assert capsys.readouterr().err == ""
    assert learn_main([str(path), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert "--normalize query (per query, as LETOR)" in err and "kernel" not in err


def _cv_lines(out):
    return re.findall(r"^CV (\d)/6: .* \(elapsed (\S+) s, ETA .* s\)$", out, re.M)


@pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")
def test_rank_learn_prints_cv_progress_about_once_a_second(tmp_path, capsys):
    train, model = str(EXAMPLES / "train.dat"), str(tmp_path / "m")
    assert learn_main(["-c", "0.01,1", "--folds", "3", "-v", "2", train, model]) == 0
    assert [int(done) for done, _ in _cv_lines(capsys.readouterr().out)] == [1, 2, 3, 4, 5, 6]
    assert learn_main(["-c", "0.01,1", "--folds", "3", train, model]) == 0      # -v 1
    lines = _cv_lines(capsys.readouterr().out)
    assert lines[0][0] == "1" and lines[-1][0] == "6"
    elapsed = [float(seconds) for _, seconds in lines[:-1]]
    assert all(b - a >= 0.9 for a, b in zip(elapsed, elapsed[1:]))   # printed to 0.1 s


@pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")
def test_rank_learn_cross_validates_a_single_ranking(tmp_path, capsys):
    data, model = tmp_path / "one.dat", tmp_path / "model"
    lines = (EXAMPLES / "train.dat").read_text().splitlines(keepends=True)[:200]
    data.write_text("".join(re.sub(r" qid:\d+", "", line) for line in lines))
    for algorithm in ("rankrls", "prsvm", "rankncg"):
        assert learn_main(["-a", algorithm, "-c", "0.1,1", "--folds", "3", str(data), str(model)]) == 0
        out = capsys.readouterr().out
        assert "3 folds of the documents of the single ranking, seed 0" in out
        assert out.count("<- chosen") == 1
    assert learn_main(["-a", "rankrls", "-c", "0.1,1", "--folds", "loqo", str(data), str(model)]) == 1
    assert "leave-query-out cross-validation needs at least 2 queries" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")
def test_rank_learn_cv_options(tmp_path, capsys):
    model = tmp_path / "m"
    train = str(EXAMPLES / "train.dat")
    assert learn_main(["-c", "0.01,1", "--folds", "3", "--cv-metric", "map", "--cv-rule", "1se",
                       "--seed", "9", "-v", "2", train, str(model)]) == 0
    out = capsys.readouterr().out
    assert "Cross-validation (3 folds of queries, seed 9)" in out
    assert "chosen by MAP, one-standard-error rule" in out
    assert len(re.findall(r"^CV \d/6: fold \d/3, C = \S+: MAP \d\.\d{4} \(elapsed .* s, ETA .* s\)$",
                          out, re.M)) == 6
    header = [line for line in out.splitlines() if line.lstrip().startswith("C ")][0]
    assert header.split()[:2] == ["C", "MAP"] and "NDCG@10 (LETOR)" in header
    assert learn_main(["-c", "0.01,1", "--ndcg", "standard", "-v", "0", train, str(model)]) == 0
    assert capsys.readouterr().out.count("NDCG@10 (standard)") == 0       # -v 0: no table
    assert learn_main(["-c", "0.01,1", "--ndcg", "standard", train, str(model)]) == 0
    assert "chosen by NDCG@10 (standard)" in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")
def test_rank_learn_seed_changes_the_folds(tmp_path, capsys):
    tables = []
    for seed in ("0", "0", "5"):
        assert learn_main(["-c", "0.01,1", "--folds", "3", "--seed", seed, "-v", "2",
                           str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 0
        out = capsys.readouterr().out
        tables.append(re.findall(r"^CV .* (\S+) \(elapsed", out, re.M))
    assert len(tables[0]) == 6 and tables[0] == tables[1] and tables[0] != tables[2]


@pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")
@pytest.mark.parametrize("argv, message", [
    (["--cv-metric", "auc"], "--cv-metric must be ndcg@k, map, err@k or pairs"),
    (["--cv-rule", "2se"], "--cv-rule must be best or 1se"),
    (["--folds", "1"], "--folds must be at least 2"),
    (["--ndcg", "trec"], "--ndcg must be letor or standard"),
    (["--plot", "x.pdf"], "must end in .png or .svg"),
    (["-c", "1", "--plot", "x.png"], "--plot draws a cross-validation"),
    (["-t", "1", "-g", "0.1,1"], "a -g list needs the RBF kernel"),
])
def test_rank_learn_cv_usage_errors(tmp_path, capsys, argv, message):
    assert learn_main(argv + [str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


@pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")
def test_rank_learn_notes_cv_options_without_a_grid_and_loqo_refits(tmp_path, capsys):
    train, model = str(EXAMPLES / "train.dat"), str(tmp_path / "m")
    assert learn_main(["-c", "1", "--folds", "3", train, model]) == 0
    assert "--folds has no effect without a list of -c" in capsys.readouterr().err
    assert learn_main(["-a", "rankrls", "-c", "0.1,1", "--folds", "loqo", train, model]) == 0
    captured = capsys.readouterr()
    assert "exact leave-query-out, 120 queries" in captured.out and "refitted" not in captured.err
    small = tmp_path / "small.dat"
    small.write_text("".join((EXAMPLES / "train.dat").read_text().splitlines(keepends=True)[:150]))
    assert learn_main(["-c", "0.1,1", "--folds", "loqo", str(small), model]) == 0
    captured = capsys.readouterr()
    assert "prsvm is refitted once per query" in captured.err
    assert re.search(r"Cross-validation \(leave-query-out \((\d+) queries\)\)", captured.out)


@pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")
def test_rank_learn_gamma_list(tmp_path, capsys):
    model = tmp_path / "m"
    assert learn_main(["-t", "2", "-g", "0.1,1", "-c", "0.1,1", "--landmarks", "15", "--folds", "2",
                       "-a", "rankrls", str(EXAMPLES / "test.dat"), str(model)]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\s*(\S+)\s+(\S+)\s+\d\.\d{4} ±", out, re.M)
    assert rows == [("0.1", "0.1"), ("0.1", "1"), ("1", "0.1"), ("1", "1")]
    chosen = re.search(r"^\s*(\S+)\s+(\S+)\s.*<- chosen", out, re.M).groups()
    meta = read_model(str(model)).metadata
    assert float(meta["C"]) == float(chosen[1]) and meta["gamma_grid"] == "0.1,1.0"


class PlainRanker(Recorder):
    """A linear learner with fit/predict/to_model and no C list of its own (as a new learner)."""

    name = "plain"

    def fit(self, X, y, qid, log=None):
        super().fit(X.toarray() if hasattr(X, "toarray") else X, y, qid)
        self.feature_ids_, self.weights_ = np.arange(1, X.shape[1] + 1), self.w
        return self

    def predict(self, X):
        return np.asarray(X @ self.w).ravel()

    def to_model(self, n_features=None, n_documents=0):
        from rankfast.learners._linear import linear_model
        return linear_model(self, n_features, n_documents, {"C": self.C})


@pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")
def test_a_learner_without_c_lists_is_cross_validated_from_outside(tmp_path, capsys):
    from rankfast.learners import registry
    registry.register("plain", __name__, "PlainRanker", ("C",))
    model = tmp_path / "m"
    try:
        assert learn_main(["-a", "plain", "-c", "0.5,2", "--folds", "3",
                           str(EXAMPLES / "train.dat"), str(model)]) == 0
    finally:
        registry.unregister("plain")
    out = capsys.readouterr().out
    chosen = re.search(r"^\s*(\S+)\s.*<- chosen", out, re.M).group(1)
    meta = read_model(str(model)).metadata
    assert "3 folds of queries, seed 0" in out and float(meta["C"]) == float(chosen)
    assert meta["C_grid"] == "0.5,2.0"


@pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")
def test_svmrank_takes_a_c_list_from_the_command_line(tmp_path, capsys):
    model = tmp_path / "m"
    assert learn_main(["-a", "svmrank", "-c", "0.01,1", "--folds", "2", str(EXAMPLES / "train.dat"),
                       str(model)]) == 0
    out = capsys.readouterr().out
    chosen = re.search(r"^\s*(\S+)\s.*<- chosen", out, re.M).group(1)
    meta = read_model(str(model)).metadata
    assert meta["algorithm"] == "svmrank" and float(meta["C"]) == float(chosen)


@pytest.mark.filterwarnings("ignore:.*so its column cannot tell the models apart")
def test_rank_learn_help_says_how_often_cv_progress_prints(capsys):
    assert learn_main(["-?"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "1 prints cross-validation progress about once a second, 2 every fold and C" in help_text


def test_zscore_model_file_is_plain(tmp_path):
    X, y, qid = raw_data()
    train, model_path = tmp_path / "train.dat", tmp_path / "model"
    write_data(train, X, y, qid)
    assert learn_main(["-c", "1", "--normalize", "zscore", str(train), str(model_path)]) == 0
    assert "normalize" not in model_path.read_text().splitlines()[1]
    model = read_model(str(model_path))
    fitted = RankSVM(C=1.0, normalize="zscore").fit(X.astype(np.float32), y, qid)
    np.testing.assert_allclose(model.predict(X), fitted.predict(X), rtol=1e-5,
                               atol=1e-6 * np.abs(fitted.predict(X)).max())


def test_normalize_usage_errors(tmp_path, capsys):
    X, y, qid = raw_data()
    train = tmp_path / "train.dat"
    write_data(train, X, y, qid)
    assert learn_main(["--normalize", "minmax", str(train), str(tmp_path / "m")]) == 2
    assert not (tmp_path / "m").exists()
    with pytest.raises(Exception, match="normalize"):
        Normalizer("minmax")


def test_a_note_suggests_normalize_when_scales_differ(tmp_path, capsys):
    X, y, qid = raw_data()
    train = tmp_path / "train.dat"
    write_data(train, X, y, qid)
    assert learn_main(["-v", "1", str(train), str(tmp_path / "m")]) == 0
    assert "--normalize" in capsys.readouterr().err
    write_data(train, brute_query_min_max(X, qid), y, qid)
    assert learn_main(["-v", "1", str(train), str(tmp_path / "m")]) == 0
    assert "--normalize" not in capsys.readouterr().err


@pytest.mark.usefixtures("needs_matplotlib")
def test_rank_learn_plot(tmp_path, capsys):
    out = tmp_path / "cv.png"
    assert learn_main(["-c", "0.01,1", "--folds", "3", "--plot", str(out),
                       str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 0
    check_file(out, "png")
    assert f"Wrote the plot to {out}" in capsys.readouterr().out
    greedy = tmp_path / "greedy.svg"
    assert learn_main(["-a", "greedy", "-k", "3", "--plot", str(greedy),
                       str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 0
    check_file(greedy, "svg")


def test_rank_learn_says_when_matplotlib_is_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)       # import fails
    with pytest.raises(MissingDependencyError, match=r"pip install rankfast\[plot\]"):
        plot.require_matplotlib()
    assert learn_main(["-c", "0.01,1", "--plot", str(tmp_path / "cv.png"),
                       str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    assert err == "rank_learn: plotting needs matplotlib: pip install rankfast[plot]\n"
    assert not (tmp_path / "m").exists() and not (tmp_path / "cv.png").exists()


@pytest.mark.usefixtures("needs_matplotlib")
def test_rank_learn_checks_the_plot_path_before_training(tmp_path, capsys):
    missing = tmp_path / "no" / "cv.png"
    assert learn_main(["-c", "0.01,1", "--plot", str(missing), str(EXAMPLES / "train.dat"),
                       str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rank_learn: {missing}: cannot write") and not (tmp_path / "m").exists()


@pytest.mark.usefixtures("needs_matplotlib")
def test_rank_learn_plot_title_names_the_learner(tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(plot, "save", lambda figure, path: drawn.append(figure))
    assert learn_main(["-a", "rankncg", "-c", "0.1,1", "--folds", "3", "-v", "0", "--plot",
                       str(tmp_path / "cv.png"), str(EXAMPLES / "train.dat"),
                       str(tmp_path / "m")]) == 0
    assert drawn[0].axes[0].get_title().startswith("RankNCG — Cross-validation: 3 folds")


def test_huge_feature_index_trains_without_allocating_per_index(tmp_path):
    train = tmp_path / "train.dat"
    train.write_text("2 qid:1 1:1 2147483647:1\n1 qid:1 2:1\n0 qid:1 1:0.5 3:1\n"
                     "1 qid:2 2147483647:0.5\n0 qid:2 3:2\n")
    tracemalloc.start()
    assert learn_main(["-v", "0", "-c", "10", str(train), str(tmp_path / "m")]) == 0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50e6
    text = (tmp_path / "m").read_text()
    assert "2147483648 # highest feature index" in text and " 2147483647:" in text


def test_rank_learn_on_features_beyond_float_range_fails_cleanly(tmp_path, capsys):
    data, model = tmp_path / "h.dat", tmp_path / "m"
    data.write_text("1 qid:1 1:1e150 2:3e150\n0 qid:1 1:2e150 2:1e150\n"
                    "1 qid:2 1:1e150\n0 qid:2 2:1e150\n")
    for algorithm in ("prsvm", "rankncg", "rankrls"):
        assert learn_main(["-v", "0", "-a", algorithm, str(data), str(model)]) == 1
        err = capsys.readouterr().err
        assert str(data) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert not model.exists()


def test_an_overflowing_run_prints_one_line_and_no_numpy_warnings(tmp_path):
    import subprocess
    import sys
    data = tmp_path / "h.dat"
    data.write_text("1 qid:1 1:1e150 2:3e150\n0 qid:1 1:2e150 2:1e150\n")
    run = subprocess.run([sys.executable, "-c", "import sys; from rankfast.cli.learn import learn_main; "
                          "sys.exit(learn_main())", "-v", "0", str(data), str(tmp_path / "m")],
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        f"rank_learn: {data}:1: feature value in '1:1e150' is beyond single precision (svm_rank "
        f"stores feature values as 4-byte floats, at most 3.4028235e+38 in magnitude): rescale "
        f"the features"]


@pytest.mark.parametrize("C", ["1e308", "1.7e308", "1e300", "1e30", "1e14"])
def test_greedy_advises_a_finite_c_that_passes(tmp_path, capsys, C):
    import math
    import re
    data = tmp_path / "d.dat"
    data.write_text(SMALL)
    assert learn_main(["-v", "0", "-a", "greedy", "-c", C, str(data), str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    advice = re.search(r"use -c (\S+) or less", err).group(1)      # rank_learn's words
    assert math.isfinite(float(advice)) and 0 < float(advice) < float(C), err
    assert learn_main(["-v", "0", "-a", "greedy", "-c", advice, str(data),
                       str(tmp_path / "m")]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_a_plot_that_cannot_be_written_leaves_no_model(tmp_path, capsys, suffix):
    pytest.importorskip("matplotlib")
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    plot = tmp_path / f"curve.{suffix}"
    os.symlink("/dev/full", plot)
    model = tmp_path / "m"
    assert learn_main(["-v", "0", "-c", "1,2", "--plot", str(plot), str(EXAMPLES / "train.dat"),
                       str(model)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rank_learn: {plot}: cannot write: ") and err.count("\n") == 1
    assert not model.exists() and sorted(p.name for p in tmp_path.iterdir()) == [plot.name]


def test_rank_learn_says_why_its_model_is_all_zero(tmp_path, capsys):
    data = tmp_path / "train.dat"
    data.write_text("1 qid:1 1:1 2:0\n0 qid:2 1:0 2:1\n2 qid:3 1:1 2:1\n")
    assert learn_main([str(data), str(tmp_path / "model")]) == 0
    assert ("rank_learn: note: RankSVM.fit: no query has two documents with different labels "
            "(each of the 3 documents is a query of its own" in capsys.readouterr().err)


def test_a_learner_stopped_by_its_iteration_cap_says_so(tmp_path, capsys):
    """The cap printed one progress line among many and exited 0: an audit's prsvm stopped
    35% above the optimum at the old default cap of 100 (now svm_rank's 100000)."""
    assert RankSVM().max_iter == 100000
    data = tmp_path / "train.dat"
    rng = np.random.default_rng(2)
    data.write_text("".join(f"{rng.integers(0, 3)} qid:{i // 10} 1:{rng.normal():.4f} "
                            f"2:{rng.normal():.4f}\n" for i in range(60)))
    assert learn_main(["-#", "1", "-e", "1e-12", str(data), str(tmp_path / "m")]) == 0
    assert ("rank_learn: note: RankSVM.fit stopped before its tolerance was met (iteration "
            "limit reached after 1 iterations): the model may be far from the optimum; raise "
            "-#" in capsys.readouterr().err)
    assert learn_main([str(data), str(tmp_path / "m")]) == 0
    assert "stopped before its tolerance" not in capsys.readouterr().err


def test_cross_validation_notes_a_column_no_ranking_changes_and_a_choice_at_an_end(tmp_path,
                                                                                  capsys):
    """MAP is 1 in every row when every label is above 0 (MovieLens' half stars); and a best C
    at an end of the list may lie beyond it.  Both passed without a word."""
    rng = np.random.default_rng(4)
    data = tmp_path / "train.dat"
    data.write_text("".join(f"{rng.integers(3, 9)} qid:{i // 12 + 1} 1:{rng.random():.3f} "
                            f"2:{rng.random():.3f}\n" for i in range(240)))
    assert learn_main(["-c", "1e-6,1e-5,1e-4", str(data), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert ("rank_learn: note: MAP is the same for every ranking of the held-out queries: every "
            "query has only relevant documents (label > 0), so its column cannot tell the models "
            "apart") in err
    assert "rank_learn: note: the chosen C = " in err and "extend the list beyond it" in err
    assert learn_main(["-c", "1e-6,1e-5,1e-4", "--cv-rule", "1se", str(data),
                       str(tmp_path / "m")]) == 0
    assert "extend the list" not in capsys.readouterr().err


def test_rank_learn_imports_only_the_learner_it_runs(tmp_path):
    require(EXAMPLE3)
    code = ("import sys\nfrom rankfast.cli.learn import learn_main\n"
            "rc = learn_main(sys.argv[1:])\n"
            "print(' '.join(sorted(sys.modules)), file=sys.stderr)\nsys.exit(rc)\n")
    result = subprocess.run(
        [sys.executable, "-c", code, "-v", "0", "-c", "1", str(EXAMPLE3 / "train.dat"),
         str(tmp_path / "model")], capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert result.returncode == 0, result.stderr
    modules = set(result.stderr.split())
    assert "rankfast.learners.prsvm" in modules
    assert not modules & {"rankfast.learners.kernel_approx", "rankfast.learners.rankrls",
                          "rankfast.learners.greedy", "rankfast.learners.rankncg",
                          "rankfast.losses.erfc", "rankfast.learners.svmrank", "scipy.linalg",
                          "scipy.special"}


def test_rank_learn_p1_trains_svm_ranks_objective(tmp_path, capsys):
    folder = require(REFERENCE / "example3")
    assert learn_main(["-c", "3", "-p", "1", str(folder / "train.dat"),
                       str(tmp_path / "model.dat")]) == 0
    out, err = capsys.readouterr()
    assert "-a svmrank" in err and "certified duality gap" in out
    model = rankfast.read_model(tmp_path / "model.dat")
    assert model.metadata["algorithm"] == "svmrank"
    train = rankfast.load_svmlight(folder / "train.dat")
    assert rankfast.objective(model, train, 3.0) <= svm_rank_pval(folder / "learn_c3.stdout")


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


def test_a_validation_file_without_relevant_documents_is_refused(tmp_path, capsys):
    """It gave a table of NDCG 0 and pair accuracy nan, the first C "chosen", and no note."""
    valid = tmp_path / "valid.dat"
    valid.write_text("".join("0" + line[line.index(" "):]
                             for line in (EXAMPLES / "test.dat").read_text().splitlines(True)
                             if line[0].isdigit()))
    model = tmp_path / "m"
    assert learn_main(["-c", "0.1,1", "--valid", str(valid), str(EXAMPLES / "train.dat"),
                       str(model)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rank_learn: {valid}: the validation set has no relevant document")
    assert not model.exists()


def test_zscore_kernel_models_are_applied_by_rank_classify(tmp_path, capsys):
    """-t 2 --normalize zscore: the deviations travel in the model (scale=), rank_classify
    applies them (it was refused: zscore folded into linear weights only)."""
    from rankfast import read_model
    X, y, qid = raw_data(n=200)
    train, test, model = tmp_path / "train.dat", tmp_path / "test.dat", tmp_path / "m"
    write_data(train, X[:150], y[:150], qid[:150])
    write_data(test, X[150:], y[150:], qid[150:])
    assert learn_main(["-t", "2", "-g", "0.2", "--normalize", "zscore", "-c", "1",
                       "--landmarks", "50", str(train), str(model)]) == 0
    assert "the RBF kernel" not in capsys.readouterr().err      # not saturated once scaled
    predictions = tmp_path / "p"
    assert classify_main(["-v", "0", str(test), str(model), str(predictions)]) == 0
    from rankfast import load_svmlight
    data = load_svmlight(str(test))
    np.testing.assert_allclose(np.loadtxt(predictions),
                               read_model(str(model)).predict(data.features, data.qid),
                               atol=1e-8)


@pytest.mark.parametrize("normalize", ["none", "zscore"])
def test_g_auto_is_the_median_heuristic_printed_and_written(tmp_path, capsys, normalize):
    """-g auto: 1 / the median ||a-b||^2 over the pairs of distinct training documents (all
    of them below 256), normalised as --normalize says; the model's header holds it."""
    X, y, qid = raw_data(n=150)
    train, model = tmp_path / "train.dat", tmp_path / "m"
    write_data(train, X, y, qid)
    assert learn_main(["-t", "2", "-g", "auto", "--normalize", normalize, "-c", "1",
                       "--landmarks", "30", str(train), str(model)]) == 0
    out = capsys.readouterr().out
    X = load_svmlight_features(train)                  # the values as rank_learn reads them
    if normalize == "zscore":
        X = X / np.where(X.std(axis=0) > 0, X.std(axis=0), np.inf)
    squares = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)[np.triu_indices(len(X), 1)]
    expected = 1.0 / np.median(squares[squares > 0])
    gamma = float(model.read_text().splitlines()[3].split()[0])
    assert gamma == pytest.approx(expected, rel=1e-5)
    assert f"-g {gamma:g} (auto: 1 / the median ||a-b||^2" in out


def load_svmlight_features(path):
    from rankfast import load_svmlight
    data = load_svmlight(str(path), dtype="float32")
    features = data.features
    return (features.toarray() if hasattr(features, "toarray") else
            np.asarray(data.X.toarray())).astype(np.float64)


@pytest.mark.parametrize("argv", [["-g", "auto"], ["-t", "1", "-g", "auto"],
                                  ["-t", "2", "-g", "auto", "--workers", "1"]])
def test_g_auto_needs_the_rbf_kernel_in_one_process(tmp_path, capsys, argv):
    X, y, qid = raw_data()
    train = tmp_path / "train.dat"
    write_data(train, X, y, qid)
    assert learn_main(argv + [str(train), str(tmp_path / "m")]) == 2
    assert "-g auto" in capsys.readouterr().err and not (tmp_path / "m").exists()
