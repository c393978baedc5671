"""Choosing C on a validation set: LETOR's protocol (issue 24 item 4).

rank_learn --valid FILE with a -c list (and -g with -t 2) trains every value on the
training file, scores FILE, prints the table (its queries are the folds), applies the
rule and writes a plain fit at the chosen value; in Python the same is
``cv=rankfast.model_selection.ValidationSet(X, y, qid)``.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from data_makers import letor_like_queries as letor_like
from shared_paths import DATA, require

from rankfast import dump_svmlight, read_model
from rankfast.cli.learn import learn_main


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
