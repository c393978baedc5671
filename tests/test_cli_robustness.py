"""rank_learn / rank_classify when things go wrong around them.

A reader that closes stdout early, mistyped learner names, option values that
used to reach numpy, the help text against the option tables, data that a
learner cannot train on, and svm_rank's -y (SVM-light's own reader lines).
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from shared_paths import REFERENCE, require

from rankfast import read_model
from rankfast.cli.classify import CLASSIFY_HELP, classify_main
from rankfast.cli.learn import _learn_help, learn_main
from rankfast.cli.options import CLASSIFY_OPTIONS, CLASSIFY_SWITCHES, LEARN_OPTIONS

ROOT = Path(__file__).resolve().parents[1]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_with_closed_stdout(program, *args):
    """Run a launcher whose stdout is a pipe nobody reads: the read end is closed at once."""
    read_end, write_end = os.pipe()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with subprocess.Popen([sys.executable, str(ROOT / program), *map(str, args)],
                          stdout=write_end, stderr=subprocess.PIPE, env=env) as proc:
        os.close(read_end)
        os.close(write_end)
        _, err = proc.communicate(timeout=300)
    return proc.returncode, err.decode()


def test_learn_writes_its_model_when_stdout_is_closed(tmp_path):
    model = tmp_path / "m"
    rc, err = run_with_closed_stdout("rank_learn", "-c", "3", "-y", "1", EXAMPLES / "train.dat", model)
    assert (rc, err) == (0, "")
    expected = tmp_path / "expected"
    assert learn_main(["-v", "0", "-c", "3", str(EXAMPLES / "train.dat"), str(expected)]) == 0
    assert model.read_bytes() == expected.read_bytes()


def test_classify_writes_its_predictions_when_stdout_is_closed(tmp_path):
    model, preds, expected = tmp_path / "m", tmp_path / "p", tmp_path / "expected"
    assert learn_main(["-v", "0", "-c", "3", str(EXAMPLES / "train.dat"), str(model)]) == 0
    rc, err = run_with_closed_stdout("rank_classify", "--metrics", EXAMPLES / "test.dat", model, preds)
    assert (rc, err) == (0, "")
    assert classify_main(["-v", "0", str(EXAMPLES / "test.dat"), str(model), str(expected)]) == 0
    assert preds.read_bytes() == expected.read_bytes()


def test_numpy_floating_point_warnings_are_dropped_and_other_warnings_are_notes(capsys):
    import warnings

    import numpy as np

    from rankfast.cli import output as cli_output

    def body(argv):
        with np.errstate(all="warn"):
            np.array([1e300]) * 1e300                   # overflow encountered in multiply
            np.array([0.0]) / 0.0                       # invalid value encountered in divide
            np.array([1.0]) / 0.0                       # divide by zero encountered in divide
            np.array([1e-300]) * 1e-300                 # (underflow: ignored by default)
        warnings.warn("something else to know", UserWarning, stacklevel=1)
        return 0

    assert cli_output.run("rank_learn", body, [], "") == 0
    assert capsys.readouterr().err == "rank_learn: note: something else to know\n"


def test_help_into_a_closed_pipe_exits_0():
    rc, err = run_with_closed_stdout("rank_learn", "-?")
    assert (rc, err) == (0, "")


@pytest.mark.parametrize("value, name", [("RankRLS", "rankrls"), ("rankRLS", "rankrls"),
                                         ("PRSVM", "prsvm"), ("Greedy", "greedy")])
def test_learner_names_are_case_insensitive(tmp_path, capsys, small, value, name):
    model = tmp_path / "m"
    assert learn_main(["-a", value, "-k", "1", str(small), str(model)]) == 0
    assert read_model(str(model)).metadata["algorithm"] == name
    err = capsys.readouterr().err
    assert "alpha file" not in err
    assert ("-k" in err) == (name != "greedy")      # -k is greedy's own option


@pytest.mark.parametrize("value, suggestion", [("greed", "greedy"), ("rankrl", "rankrls"),
                                               ("prsv", "prsvm"), ("RankNG", "rankncg")])
def test_a_mistyped_learner_is_a_usage_error(tmp_path, capsys, small, value, suggestion):
    assert learn_main(["-v", "0", "-a", value, str(small), str(tmp_path / "m")]) == 2
    assert capsys.readouterr().err == (
        f"rank_learn: unknown learner '{value}' (did you mean {suggestion}?)\n"
        f"Try 'rank_learn -?' for the list of options.\n")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("value", ["alphas.txt", "alphas", "rankrls.alpha", "out/greedy"])
def test_other_values_are_svm_rank_alpha_files(tmp_path, capsys, small, value):
    model = tmp_path / "m"
    assert learn_main(["-a", value, str(small), str(model)]) == 0
    assert f"-a {value}: not a learner" in capsys.readouterr().err
    assert read_model(str(model)).metadata["algorithm"] == "prsvm"


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


def _mentions(text, flag):
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def test_learn_help_lists_every_option_accurately():
    text = _learn_help()
    assert [flag for flag in LEARN_OPTIONS if not _mentions(text, flag)] == []
    assert "-o [1,2]" not in text and re.search(r"-o 1 .*refused", text, re.S)
    assert "-a FILE" in text
    qp = text[text.index("QP solver options"):]
    assert "-k" not in qp or "greedy" in qp     # greedy's -k is not a QP option


def test_classify_help_lists_every_option():
    missing = [flag for flag in list(CLASSIFY_OPTIONS) + list(CLASSIFY_SWITCHES)
               if not _mentions(CLASSIFY_HELP, flag)]
    assert missing == []


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


def test_classify_y3_matches_svm_rank_stdout(tmp_path, capsys):
    case = require(REFERENCE / "edge_cases" / "cls_verbosity3")
    argv = (case / "cmd.txt").read_text().split()[1:]
    assert argv == ["-v", "3", "-y", "3", "test.dat", "model.dat", "predictions"]
    assert classify_main(argv[:4] + [str(case / "test.dat"), str(case / "model.dat"),
                                     str(tmp_path / "predictions")]) == 0

    def comparable(text):
        return re.sub(r"Runtime \(without IO\) in cpu-seconds: [0-9.]+\n", "", text)
    assert comparable(capsys.readouterr().out) == comparable((case / "stdout.txt").read_text())
    assert (tmp_path / "predictions").read_bytes() == (case / "predictions").read_bytes()


def test_y_counts_every_hundred_examples_as_svm_light_does(tmp_path, capsys):
    # SVM-light's read_documents prints "%ld.." after every 100th example.
    train = tmp_path / "train.dat"
    train.write_text("".join(f"{i % 3} qid:{i // 10} 1:{i}\n" for i in range(250)))
    assert learn_main(["-v", "0", "-y", "1", str(train), str(tmp_path / "m")]) == 0
    assert capsys.readouterr().out.startswith(
        "Scanning examples...done\nReading examples into memory...100..200..OK. (250 examples read)\n"
        "Training set properties: 1 features, 25 rankings, 250 examples\n")


def test_y_with_a_random_fourier_model_prints_no_svm_light_model_line(tmp_path, capsys, small):
    model = tmp_path / "m"
    assert learn_main(["-v", "0", "-t", "2", "--approx", "rff", "--landmarks", "8", str(small),
                       str(model)]) == 0
    capsys.readouterr()
    assert classify_main(["-y", "1", str(small), str(model), str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Reading model...done.\nReading test examples...Scanning examples...done\n"
                          "Reading examples into memory...OK. (6 examples read)\ndone.\n")


@pytest.mark.parametrize("args, note", [
    (["-a", "greedy", "-k", "1", "-e", "0.1"], "-e has no effect with -a greedy"),
    (["-a", "greedy", "-k", "1", "-#", "3"], "-# has no effect with -a greedy"),
    (["--erfc", "direct"], "--erfc has no effect with -a prsvm"),
])
def test_options_a_learner_does_not_use_get_a_note(args, note):
    from rankfast.cli.learners import make_learner
    from rankfast.cli.options import parse_args
    options, given, _ = parse_args(args + ["train.dat"], LEARN_OPTIONS, {}, 2, "rank_learn")
    _, notes = make_learner(options, given)
    assert any(note in n for n in notes), notes


@pytest.mark.parametrize("args, note", [
    (["-e", "1e-9", "-#", "5"], "rank_learn: note: -e and -# have no effect: rankrls solved exactly"),
    (["-e", "0.1"], "rank_learn: note: -e has no effect: rankrls solved exactly"),
    ([], None),
])
def test_rankrls_says_when_its_exact_solver_did_not_use_e_or_the_iteration_cap(tmp_path, capsys,
                                                                                small, args, note):
    assert learn_main(["-a", "rankrls"] + args + [str(small), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert (note in err) if note else ("no effect" not in err)


def test_rankrls_says_its_conjugate_gradient_does_not_use_a_looser_e():
    from rankfast import RankRLS
    from rankfast.cli.learners import fitted_notes
    from rankfast.cli.options import parse_args
    options, given, _ = parse_args(["-e", "0.1", "x"], LEARN_OPTIONS, {}, 2, "rank_learn")
    wide = RankRLS(solver="cg").fit([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [0, 1, 2], [1, 1, 1])
    assert [n for n in fitted_notes(wide, options, given) if "a looser -e is not used" in n]
    options, given, _ = parse_args(["-e", "1e-8", "x"], LEARN_OPTIONS, {}, 2, "rank_learn")
    assert fitted_notes(wide, options, given) == []


def test_greedy_says_when_fewer_features_than_k_can_change_a_ranking(tmp_path, capsys):
    """Feature 2 is constant within each query and feature 4 empty: -k 4 selects 2 of them."""
    data = tmp_path / "train.dat"
    data.write_text("2 qid:1 1:0.5 2:7 3:1\n1 qid:1 1:0.1 2:7 3:3\n0 qid:1 1:0.2 2:7 3:2\n"
                    "1 qid:2 1:0.9 2:3 3:0 4:0\n0 qid:2 1:0.3 2:3 3:2\n")
    assert learn_main(["-a", "greedy", "-k", "4", str(data), str(tmp_path / "m")]) == 0
    assert ("rank_learn: note: -k 4: greedy selected 2, every feature that can change a ranking"
            in capsys.readouterr().err)
    assert learn_main(["-a", "greedy", "-k", "2", str(data), str(tmp_path / "m")]) == 0
    assert "greedy selected" not in capsys.readouterr().err


def test_warnings_turned_into_errors_are_notes_not_tracebacks(tmp_path, small):
    """PYTHONWARNINGS=error (or -W error) made rank_learn end in a warning's traceback: the
    queries of SMALL are shorter than 10 documents, so the CV metric warns."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="error")
    done = subprocess.run([sys.executable, str(ROOT / "rank_learn"), "-c", "0.1,1", str(small),
                           str(tmp_path / "m")], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "rank_learn: note: NDCG@10 (LETOR) is the same for every ranking" in done.stderr
    assert (tmp_path / "m").exists()
