"""rank_learn and rank_classify end to end: golden stdout, files, exit codes."""

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from program_runs import without_runtime
from shared_paths import REFERENCE, require

from rankfast import read_model
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main

ROOT = Path(__file__).resolve().parents[1]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


GOLDEN = [("example3", "test.dat", f"model_c{c}.dat", f"pred_test_c{c}.txt", f"classify_test_c{c}.stdout", [])
          for c in ("0.01", "1", "3", "20", "3_l2", "3_t2")]


GOLDEN += [("example3", "train.dat", f"model_c{c}.dat", f"pred_train_c{c}.txt",
            f"classify_train_c{c}.stdout", [])
           for c in ("0.01", "1", "3", "20")]


GOLDEN += [("example3", "test.dat", "model_c3.dat", f"pred_test_c3_v{v}.txt", f"classify_test_c3_v{v}.stdout",
            ["-v", v]) for v in ("0", "3")]


GOLDEN += [("synthetic", f"{k}_test.dat.gz", f"{k}_c{c}.model", f"{k}_c{c}.test.pred.gz",
            f"{k}_classify_c{c}.stdout", []) for k in ("dense", "sparse") for c in ("0.01", "1", "20")]


@pytest.mark.parametrize("folder, data, model, pred, stdout, flags", GOLDEN, ids=lambda v: str(v))
def test_classify_matches_svm_rank_byte_for_byte(tmp_path, capsys, folder, data, model, pred, stdout, flags):
    base = require(REFERENCE / folder)
    out = tmp_path / "predictions"
    assert classify_main(flags + [str(base / data), str(base / model), str(out)]) == 0
    expected = gzip.open(base / pred, "rb").read() if pred.endswith(".gz") else (base / pred).read_bytes()
    assert out.read_bytes() == expected
    assert without_runtime(capsys.readouterr().out) == without_runtime((base / stdout).read_text())


def test_classify_extra_metrics(tmp_path, capsys):
    base = require(REFERENCE / "example3")
    assert classify_main(["--metrics", "--ndcg-at", "1,3", str(base / "test.dat"),
                          str(base / "model_c3.dat"), str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"NDCG@1 \(LETOR\): 1.0000\nNDCG@3 \(LETOR\): 1.0000\nERR@1: 0\.\d{4}\n"
                     r"ERR@3: 0\.\d{4}\nP@1: 1.0000\nP@3: 1.0000\nMAP: 1.0000\nMRR: 1.0000\n"
                     r"Pairwise accuracy: 1.0000\n", out)          # ERR < 1: R = (2^g - 1)/2^gmax


def test_learn_then_classify_on_examples(tmp_path, capsys):
    model = tmp_path / "model.dat"
    assert learn_main(["-c", "0.01", str(EXAMPLES / "train.dat"), str(model)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Reading training examples...done\n"
                          "Training set properties: 20 features, 120 rankings, 2666 examples\n")
    assert re.search(r"^Iter 1: ", out, re.M) and out.endswith("Writing learned model...done\n")
    text = model.read_text()
    assert text.startswith("SVM-light Version V6.20\n0 # kernel type\n")
    assert "21 # highest feature index \n2666 # number of training documents \n" in text
    assert re.search(r"#rankfast version=\S+ algorithm=prsvm C=0.01 l=1 e=0.001\n$", text)
    preds = tmp_path / "preds"
    assert classify_main([str(EXAMPLES / "test.dat"), str(model), str(preds)]) == 0
    loss = float(re.search(r"Average loss on test set: ([0-9.]+)", capsys.readouterr().out).group(1))
    assert loss < 0.12
    assert len(preds.read_text().splitlines()) == 987


def test_learning_is_deterministic(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for path in (first, second):
        assert learn_main(["-v", "0", "-c", "1", str(EXAMPLES / "train.dat"), str(path)]) == 0
    assert first.read_bytes() == second.read_bytes()


def test_default_output_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert learn_main(["-v", "0", str(EXAMPLES / "train.dat")]) == 0
    assert classify_main(["-v", "0", str(EXAMPLES / "test.dat"), "svm_struct_model"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["svm_predictions", "svm_struct_model"]


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


@pytest.mark.parametrize("argv", [[], ["x"], ["-z", "x", "y"], ["-v", "x", "y"], ["a", "b", "c", "d"]])
def test_classify_usage_errors_exit_2(capsys, argv):
    assert classify_main(argv) == 2
    assert capsys.readouterr().err.startswith("rank_classify: ")


def test_help_exits_0(capsys):
    assert learn_main(["-?"]) == 0 and "usage: rank_learn" in capsys.readouterr().out
    assert classify_main(["-h"]) == 0 and "usage: rank_classify" in capsys.readouterr().out


def test_bad_data_exits_1_names_line_and_writes_nothing(tmp_path, capsys):
    train = tmp_path / "train.dat"
    train.write_text("1 qid:1 1:1\n\n2 qid:1 1:abc\n")
    model = tmp_path / "model.dat"
    assert learn_main([str(train), str(model)]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"rank_learn: {train}:3: feature value in '1:abc' is not a number\n"
    assert not model.exists() and sorted(os.listdir(tmp_path)) == ["train.dat"]


def test_classify_errors_keep_old_predictions(tmp_path, capsys):
    base = require(REFERENCE / "example3")
    preds = tmp_path / "preds"
    preds.write_text("old\n")
    bad_model = tmp_path / "bad.dat"
    bad_model.write_text("SVM-light Version V6.01\n")
    assert classify_main([str(base / "test.dat"), str(bad_model), str(preds)]) == 1
    assert "bad.dat:1: not an SVM-light V6.20 model file" in capsys.readouterr().err
    assert preds.read_text() == "old\n"
    bad_model.write_bytes(b"\x7fELF\x02\xd0\xef\xbf\xbd\n")                # a binary file
    assert classify_main([str(base / "test.dat"), str(bad_model), str(preds)]) == 1
    assert "(first line '\\x7fELF\\x02\\xd0\\ufffd', expected" in capsys.readouterr().err
    assert classify_main([str(base / "test.dat"), str(base / "model_c3.dat"),
                          str(tmp_path / "missing" / "p")]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_noncontiguous_queries_are_grouped_with_a_note(tmp_path, capsys):
    train = tmp_path / "train.dat"
    train.write_text("2 qid:1 1:1 2:0\n1 qid:2 1:0 2:1\n0 qid:1 1:0 2:0\n2 qid:2 1:1 2:1\n")
    assert learn_main(["-c", "1", str(train), str(tmp_path / "m")]) == 0
    captured = capsys.readouterr()
    assert "qid 1 are not contiguous" in captured.err
    assert "2 features, 2 rankings, 4 examples" in captured.out


def test_unknown_algorithm_is_taken_as_svm_rank_alpha_file(tmp_path, capsys):
    assert learn_main(["-a", "alphas.txt", "-c", "1", str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 0
    assert "alpha file, which rankfast does not write" in capsys.readouterr().err
    assert not (tmp_path / "alphas.txt").exists()


def test_launchers_run_from_the_checkout(tmp_path):
    model = tmp_path / "m"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    learn = subprocess.run([sys.executable, str(ROOT / "rank_learn"), "-v", "0", str(EXAMPLES / "train.dat"),
                            str(model)], capture_output=True, text=True, env=env)
    assert learn.returncode == 0, learn.stderr
    classify = subprocess.run([sys.executable, str(ROOT / "rank_classify"), str(EXAMPLES / "test.dat"),
                               str(model), str(tmp_path / "p")], capture_output=True, text=True, env=env)
    assert classify.returncode == 0 and "Average loss on test set" in classify.stdout


def test_examples_are_reproducible(tmp_path):
    subprocess.run([sys.executable, str(EXAMPLES / "make_examples.py"), str(tmp_path)], check=True,
                   capture_output=True)
    for name in ("train.dat", "test.dat", "features.txt"):
        assert (tmp_path / name).read_bytes() == (EXAMPLES / name).read_bytes()


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
