"""rankfast.cli.options: both programs' flags, their values, help texts, -j and --workers."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from program_runs import launch

from rankfast.cli.classify import CLASSIFY_HELP, classify_main
from rankfast.cli.learn import _learn_help, learn_main
from rankfast.cli.options import CLASSIFY_OPTIONS, CLASSIFY_SWITCHES, LEARN_OPTIONS

ROOT = Path(__file__).resolve().parents[1]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


CLASSIFY_COUNTS = ["-v", "-y", "--ndcg-at", "-j", "--threads", "--workers"]


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


def test_help_flags_in_both_programs(capsys):
    for main, argv in ((learn_main, ["-h"]), (learn_main, ["--help"]), (learn_main, ["-?"]),
                       (classify_main, ["-h"]), (classify_main, ["--help"]),
                       (classify_main, ["-?"])):
        assert main(argv) == 0
        assert "usage:" in capsys.readouterr().out


def test_learn_h_with_a_value_stays_svm_rank_s_qp_option(small, tmp_path, capsys):
    assert learn_main(["-h", "5", str(small), str(tmp_path / "m")]) == 0
    assert "-h only tunes svm_rank's QP solver" in capsys.readouterr().err


LEARN_COUNTS = ["-l", "-p", "-o", "-w", "-k", "-f", "-b", "-n", "-q", "-m", "-h", "-#", "-t", "-d",
                "-v", "-y", "--landmarks", "--seed", "--folds", "-j", "--threads", "--workers"]


NOT_INTEGERS = {"1_0": "expects an integer, got '1_0'", "\u0663": "expects an integer",
                "\u00b2": "expects an integer", " 3": "expects an integer",
                "9223372036854775808": "must be at most 9223372036854775807",
                "9" * 5000: "must be at most 9223372036854775807 (got 999"}


def usage_error(capsys, main, argv):
    """main(argv) must end in a usage error: returns its stderr (checked to be the two lines)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "Traceback" not in err and "Try '" in err, err
    return err


@pytest.mark.parametrize("value", list(NOT_INTEGERS), ids=["1_0", "arabic 3", "superscript 2",
                                                          "blank 3", "2**63", "5000 digits"])
def test_every_count_option_reads_the_data_files_integers(tmp_path, capsys, value):
    missing = str(tmp_path / "missing.dat")          # a usage error comes before any data
    for flag in LEARN_COUNTS:
        err = usage_error(capsys, learn_main, [flag, value, missing, str(tmp_path / "m")])
        assert f"rank_learn: {flag} {NOT_INTEGERS[value]}" in err, (flag, err)
        assert len(err) < 300
    for flag in CLASSIFY_COUNTS:
        err = usage_error(capsys, classify_main, [flag, value, missing, missing,
                                                  str(tmp_path / "p")])
        assert f"rank_classify: {flag} {NOT_INTEGERS[value]}" in err, (flag, err)


@pytest.mark.parametrize("flag", ["-c", "-e", "-g", "-s", "-r", "--erfc-eps"])
@pytest.mark.parametrize("value", ["1_0", "\u0663", " 1"])
def test_every_number_option_reads_the_data_files_numbers(tmp_path, capsys, flag, value):
    err = usage_error(capsys, learn_main, [flag, value, str(tmp_path / "missing.dat")])
    assert f"rank_learn: {flag} expects a number, got {value!r}" in err


@pytest.mark.parametrize("metric", ["ndcg@99999999999999999999999", "err@9223372036854775808",
                                    "ndcg@\u00b2", "ndcg@\u0663", "ndcg@1_0", "err@0",
                                    "ndcg@" + "9" * 5000])
def test_cv_metric_cut_offs_are_usage_errors_before_the_data(tmp_path, capsys, metric):
    err = usage_error(capsys, learn_main, ["-c", "1,2", "--cv-metric", metric,
                                           str(tmp_path / "missing.dat")])
    assert "rank_learn: --cv-metric must be ndcg@k, map, err@k or pairs" in err
    from rankfast import UsageError
    from rankfast.model_selection import Metric
    with pytest.raises(UsageError):
        Metric.parse(metric)


def test_a_huge_j_gives_the_same_model_and_predictions(tmp_path):
    for j in ("1", "1000000"):
        assert learn_main(["-v", "0", "-j", j, str(EXAMPLES / "train.dat"),
                           str(tmp_path / f"m{j}")]) == 0
        assert classify_main(["-v", "0", "-j", j, str(EXAMPLES / "test.dat"),
                              str(tmp_path / f"m{j}"), str(tmp_path / f"p{j}")]) == 0
    assert (tmp_path / "m1").read_bytes() == (tmp_path / "m1000000").read_bytes()
    assert (tmp_path / "p1").read_bytes() == (tmp_path / "p1000000").read_bytes()


def test_a_huge_j_under_an_address_space_limit_is_not_a_thread_failure(tmp_path):
    """libgomp aborted with 'Thread creation failed' when -j 1000000 met ulimit -v."""
    import resource
    path = tmp_path / "d.dat"
    path.write_bytes((EXAMPLES / "train.dat").read_bytes() * 40)     # 9 MB: 9 blocks of 1 MB

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))
    result = launch("rank_learn", "-v", "0", "-j", "1000000", path, tmp_path / "m",
                    preexec_fn=limit)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "m").exists()


THREAD_COUNT = """
import os, sys
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main
main = learn_main if sys.argv[1] == "learn" else classify_main
status = main(sys.argv[2:])
print("threads:", status, len(os.listdir("/proc/self/task")), file=sys.stderr)
"""


@pytest.mark.parametrize("program, flags", [
    ("learn", ["-a", "prsvm"]), ("learn", ["-a", "svmrank", "-c", "100"]),
    ("learn", ["-a", "rankncg"]), ("learn", ["-a", "rankrls"]), ("learn", ["-a", "greedy"]),
    ("learn", ["-c", "1,2"]), ("learn", ["-a", "rankrls", "-c", "1,2"]),
    ("learn", ["-t", "2", "-g", "0.1", "--landmarks", "12"]),
    ("classify", ["rbf"]), ("classify", ["linear"]), ("classify", ["rff"]),
], ids=["prsvm", "svmrank", "rankncg", "rankrls", "greedy", "prsvm cv", "rankrls cv", "nystrom",
        "classify rbf", "classify linear", "classify rff"])
def test_j1_runs_on_one_thread_in_every_learner_and_phase(tmp_path, models, program, flags):
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("needs /proc/self/task (Linux)")
    if program == "learn":
        args = ["-v", "0", "-j", "1", *flags, EXAMPLES / "train.dat", tmp_path / "m"]
    else:
        args = ["-v", "0", "-j", "1", "--metrics", EXAMPLES / "test.dat", models[flags[0]],
                tmp_path / "p"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(name, None)
    result = subprocess.run([sys.executable, "-c", THREAD_COUNT, program, *map(str, args)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.stderr.splitlines()[-1] == "threads: 0 1", result.stderr[-2000:]


def test_j1_holds_blas_to_one_thread_when_numpy_is_loaded(tmp_path, monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from rankfast import RankSVML1
    seen = []
    fit = RankSVML1._fit_checked                  # the entry rank_learn calls

    def spy(self, *args, **kwargs):
        seen.extend(info["num_threads"] for info in threadpoolctl.threadpool_info())
        return fit(self, *args, **kwargs)
    monkeypatch.setattr(RankSVML1, "_fit_checked", spy)
    before = [info["num_threads"] for info in threadpoolctl.threadpool_info()]
    assert learn_main(["-v", "0", "-j", "1", "-a", "svmrank", str(EXAMPLES / "train.dat"),
                       str(tmp_path / "m")]) == 0
    assert seen and set(seen) == {1}
    assert [info["num_threads"] for info in threadpoolctl.threadpool_info()] == before


IDLE_BLAS = """
import os, sys, time
from rankfast.cli.output import _release_threads, hold_threads
hold_threads(None if sys.argv[1] == "none" else int(sys.argv[1]))
held = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
import numpy
start = time.process_time()
time.sleep(0.3)                                    # OpenBLAS's threads, idle since they started
idle = time.process_time() - start
_release_threads()
print(held, os.environ.get("OPENBLAS_THREAD_TIMEOUT"), idle)
"""


@pytest.mark.parametrize("jobs", ["none", "2"])
def test_the_programs_do_not_let_blas_threads_spin(jobs):
    """rank_learn and rank_classify (hold_threads, before numpy loads) set OpenBLAS's
    spin to its least for the run, with or without -j, then put the variable back: its
    idle threads then take no CPU, where by default they spin about 0.1 s after loading
    and after every product, on the cores rankfast's threads use.  A value in the
    environment is kept."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_THREAD_TIMEOUT", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env["PYTHONPATH"] = str(ROOT)

    def child(**extra):
        done = subprocess.run([sys.executable, "-c", IDLE_BLAS, jobs], capture_output=True,
                              text=True, env={**env, **extra}, timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        held, after, idle = done.stdout.split()
        return held, after, float(idle)

    held, after, idle = child()
    assert (held, after) == ("4", "None")
    assert idle < 0.02                       # default: 0.05 s on two cores
    assert child(OPENBLAS_THREAD_TIMEOUT="28")[:2] == ("28", "28")


def test_j_with_svmrank_has_no_false_note(tmp_path, capsys):
    assert learn_main(["-j", "1", "-a", "svmrank", str(EXAMPLES / "train.dat"),
                       str(tmp_path / "m")]) == 0
    assert "-j has no effect" not in capsys.readouterr().err


@pytest.mark.parametrize("program", ["rank_learn", "rank_classify"])
def test_a_huge_worker_count_starts_the_cores_at_once(tmp_path, models, program):
    pytest.importorskip("distributed")
    from rankfast._kernels.threads import available_cores
    if program == "rank_learn":
        args = ["-c", "3", EXAMPLES / "train.dat", tmp_path / "out"]
    else:
        args = [EXAMPLES / "test.dat", models["linear"], tmp_path / "out"]
    result = launch(program, "--workers", "100000", *args, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    cores = available_cores()
    assert result.stderr == (f"{program}: note: --workers 100000: starting {cores} (the cores "
                             f"this process may run on; more would only compete for them)\n")
    assert (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["\u00b2", "9" * 5000, "", "4"])
def test_j_with_any_thread_variable_in_the_environment(tmp_path, value):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS=value)
    result = subprocess.run([sys.executable, str(ROOT / "rank_learn"), "-v", "0", "-j", "1",
                             str(EXAMPLES / "train.dat"), str(tmp_path / "m")],
                            capture_output=True, text=True, env=env, timeout=120)
    # (libgomp itself complains of an invalid value when it loads, before rankfast runs)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "rank_learn:" not in result.stderr and (tmp_path / "m").exists()
