"""Issue 11's faults around the programs: NaN scores, broken standard streams, outputs that
cannot be written, SIGTERM, features beyond float32, raw library messages, notes and -h.

Each test failed (or hung) on 58eeb25's code.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from data_makers import SMALL
from program_runs import leftovers

from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main

ROOT = Path(__file__).resolve().parents[1]


LINEAR_MODEL = ("SVM-light Version V6.20\n0 # kernel type\n3 # kernel parameter -d \n"
                "1 # kernel parameter -g \n1 # kernel parameter -s \n1 # kernel parameter -r \n"
                "empty# kernel parameter -u \n2 # highest feature index \n"
                "1 # number of training documents \n2 # number of support vectors plus 1 \n"
                "0 # threshold b, each following line is a SV (starting with alpha*y)\n{sv} #\n")


def launch(program, *args, timeout=120, **kwargs):
    """Run ./rank_learn or ./rank_classify on this checkout; returns CompletedProcess (bytes)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(ROOT / program), *map(str, args)], env=env,
                          timeout=timeout, **kwargs)


def test_nan_scores_end_rank_classify(tmp_path):
    """The issue's reproducer: w = 1e39 is inf in float32, inf * 0 = NaN; it hung forever."""
    model, test, preds = tmp_path / "m", tmp_path / "t", tmp_path / "p"
    model.write_text(LINEAR_MODEL.format(sv="1 1:1e39"))
    test.write_text("1 qid:1 1:0\n")
    run = launch("rank_classify", "--metrics", test, model, preds, capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert preds.read_text() == "-nan\n"                     # svm_rank's output for NaN
    assert b"Total Num Swappedpairs  :      0" in run.stdout


def test_nan_scores_rank_last_in_the_summary(tmp_path):
    """Two documents of one query: the higher label scores NaN (swapped), then finite (right)."""
    from rankfast.cli.classify import classify_summary
    nan = float("nan")
    swapped = classify_summary(np.array([nan, 0.0]), np.array([2.0, 1.0]), np.array([1, 1]))
    right = classify_summary(np.array([0.0, nan]), np.array([2.0, 1.0]), np.array([1, 1]))
    assert "Total Num Swappedpairs  :      1" in swapped
    assert "Total Num Swappedpairs  :      0" in right


def test_learn_to_a_full_stdout_still_writes_the_model(small, tmp_path):
    model, expected = tmp_path / "m", tmp_path / "expected"
    with open("/dev/full", "wb") as full:
        run = launch("rank_learn", small, model, stdout=full, stderr=subprocess.PIPE)
    err = run.stderr.decode()
    assert run.returncode == 0 and "Traceback" not in err
    assert err.splitlines() == ["rank_learn: standard output: No space left on device; "
                                "what followed was not printed"]
    assert learn_main(["-v", "0", str(small), str(expected)]) == 0
    assert model.read_bytes() == expected.read_bytes()


def test_learn_with_stdout_closed_writes_the_model(small, tmp_path):
    model = tmp_path / "m"
    run = launch("rank_learn", small, model, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                 preexec_fn=lambda: os.close(1))
    assert (run.returncode, run.stderr) == (0, b"")
    assert model.read_text().startswith("SVM-light Version V6.20\n")


def test_learn_from_a_closed_stdin_is_a_clean_error(tmp_path):
    run = launch("rank_learn", "-", tmp_path / "m", capture_output=True,
                 preexec_fn=lambda: os.close(0))
    assert run.returncode == 1
    assert run.stderr.decode() == "rank_learn: -: standard input is closed\n"
    assert not (tmp_path / "m").exists()


def test_errors_with_stderr_closed_go_nowhere(tmp_path):
    """print(file=None) used to put the error line on stdout."""
    bad = tmp_path / "bad.dat"
    bad.write_text("1 qid:1 1:abc\n")
    run = launch("rank_learn", "-v", "0", bad, tmp_path / "m", stdout=subprocess.PIPE,
                 stderr=subprocess.DEVNULL, preexec_fn=lambda: os.close(2))
    assert run.returncode == 1
    assert b"bad.dat" not in run.stdout


def test_a_full_stderr_does_not_lose_the_model(small, tmp_path):
    """A note on a full stderr used to raise OSError before the model was written."""
    model = tmp_path / "m"
    with open("/dev/full", "wb") as full:
        run = launch("rank_learn", "-v", "1", "-p", "1", small, model,
                     stdout=subprocess.DEVNULL, stderr=full)
    assert run.returncode == 0
    assert model.exists()


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


def test_an_ill_conditioned_solve_is_one_note_saying_what_to_change():
    from rankfast.cli.output import _warning_note
    note = _warning_note("An ill-conditioned matrix detected: slice 0 has rcond = 5.2e-24.")
    assert note.startswith("the linear system is ill-conditioned (reciprocal condition "
                           "number 5.2e-24)")
    assert "a smaller -c" in note


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


def test_an_unwritable_prediction_path_fails_before_classifying(small, tmp_path, capsys):
    model = tmp_path / "m"
    assert learn_main(["-v", "0", str(small), str(model)]) == 0
    out = tmp_path / "missing" / "p"
    assert classify_main([str(small), str(model), str(out)]) == 1
    captured = capsys.readouterr()
    assert "Reading model" not in captured.out and "cannot write" in captured.err


def test_sigterm_while_writing_removes_the_temporary_file(small, tmp_path):
    """os.replace is held up; SIGTERM then arrives with the temporary file complete."""
    model = tmp_path / "m"
    code = ("import os, sys, time\n"
            "real = os.replace\n"
            "def slow(a, b):\n"
            "    sys.stderr.write('renaming\\n'); sys.stderr.flush(); time.sleep(60); real(a, b)\n"
            "os.replace = slow\n"
            "from rankfast.cli.learn import learn_main\n"
            f"sys.exit(learn_main(['-v', '0', {str(small)!r}, {str(model)!r}]))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr.readline() == "renaming\n"
        assert len(leftovers(tmp_path)) == 1
        proc.send_signal(signal.SIGTERM)
        err = proc.stderr.read()
        status = proc.wait(timeout=60)
    assert (status, err) == (143, "rank_learn: terminated\n")
    assert leftovers(tmp_path) == [] and not model.exists()


def test_help_flags_in_both_programs(capsys):
    for main, argv in ((learn_main, ["-h"]), (learn_main, ["--help"]), (learn_main, ["-?"]),
                       (classify_main, ["-h"]), (classify_main, ["--help"]),
                       (classify_main, ["-?"])):
        assert main(argv) == 0
        assert "usage:" in capsys.readouterr().out


def test_learn_h_with_a_value_stays_svm_rank_s_qp_option(small, tmp_path, capsys):
    assert learn_main(["-h", "5", str(small), str(tmp_path / "m")]) == 0
    assert "-h only tunes svm_rank's QP solver" in capsys.readouterr().err


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
