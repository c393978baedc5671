"""PRSVM as a learner: its optimum against the pair-enumerating twin, flags, memory, quality."""

import re
import tracemalloc

import pytest
from shared_paths import REFERENCE, require

from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main

SYNTHETIC = [(kind, c) for kind in ("dense", "sparse") for c in ("0.01", "1", "20")]


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


@pytest.mark.parametrize("kind, c", SYNTHETIC)
def test_test_loss_is_at_most_svm_rank_plus_0_002(tmp_path, capsys, kind, c):
    base = require(REFERENCE / "synthetic")
    model = tmp_path / "model"
    assert learn_main(["-v", "0", "-c", c, str(base / f"{kind}_train.dat.gz"), str(model)]) == 0
    assert classify_main(["-v", "1", str(base / f"{kind}_test.dat.gz"), str(model), str(tmp_path / "p")]) == 0
    ours = float(re.search(r"Average loss on test set: ([0-9.]+)", capsys.readouterr().out).group(1))
    theirs = float(re.search(r"Average loss on test set: ([0-9.]+)",
                             (base / f"{kind}_classify_c{c}.stdout").read_text()).group(1))
    assert ours <= theirs + 0.002


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
