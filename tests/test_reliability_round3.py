"""Issue 25 (reliability, third round): the defects an outside fuzz-and-fault run found on
17fd399.  Each test here failed on 17fd399 and names the issue's item it covers."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from data_makers import SMALL
from program_runs import launch

from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main

ROOT = Path(__file__).resolve().parents[1]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


CLASSIFY_COUNTS = ["-v", "-y", "--ndcg-at", "-j", "--threads", "--workers"]


def test_rank_classify_refuses_a_cut_model_naming_file_and_line(models, tmp_path, capsys):
    content = models["linear"].read_bytes()
    cut = tmp_path / "cut"
    cut.write_bytes(content[:len(content) - 40])        # inside the support vector line
    predictions = tmp_path / "p"
    assert classify_main([str(EXAMPLES / "test.dat"), str(cut), str(predictions)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rank_classify: {cut}:12: ") and "cut short" in err
    assert err.count("\n") == 1 and not predictions.exists()


NO_QIDS = ("3 1:1 2:0.5\n2 1:0.5 2:1\n1 1:0 2:0.2\n"
           "2 1:0.9 2:0.1\n1 1:0.3 2:0.8\n0 1:0.1 2:0.1\n")


@pytest.fixture
def no_qids(tmp_path):
    data = tmp_path / "d.dat"
    data.write_text(NO_QIDS)
    return data


def run_both(data, tmp_path, models, *flags):
    """[(status, stderr)] of rank_learn and of rank_classify (a linear model) run on data."""
    results = []
    for program, args in (("rank_learn", [data, tmp_path / "m"]),
                          ("rank_classify", [data, models["linear"], tmp_path / "p"])):
        result = launch(program, *flags, *args)
        results.append((result.returncode, result.stderr))
    return results


@pytest.mark.parametrize("where", ["sidecar", "--group"])
@pytest.mark.parametrize("token, says", [
    ("9" * 5000, ":2: group size '" + "9" * 40 + "... (5000 bytes)' is not a positive integer"),
    ("1" + "0" * 19, ":2: group size '1" + "0" * 19 + "' is not a positive integer"),
    ("0" * 4400 + "3", None),                 # leading zeros: a size of 3, as the data grammar
], ids=["5000 digits", "10**19", "leading zeros"])
def test_a_huge_group_size_is_one_line_in_both_programs(no_qids, tmp_path, models, where, token,
                                                        says):
    group = tmp_path / ("d.dat.query" if where == "sidecar" else "sizes")
    group.write_text(f"3\n{token}\n")
    flags = ["--group", str(group)] if where == "--group" else []
    for status, err in run_both(no_qids, tmp_path, models, *flags):
        if says is None:
            assert status == 0 and "Traceback" not in err, err[-3000:]
            continue
        assert status == 1 and err.count("\n") == 1 and "Traceback" not in err, err[-3000:]
        assert f"{group}{says}" in err
    if says is not None:
        assert not (tmp_path / "m").exists() and not (tmp_path / "p").exists()


@pytest.mark.parametrize("content", [b"\xef\xbb\xbf3\n3\n", b"\xef\xbb\xbf3\r\n3\r\n", b"3\r\n3"],
                         ids=["bom", "bom crlf", "crlf"])
def test_group_files_skip_a_bom_and_accept_crlf(no_qids, tmp_path, models, content):
    (tmp_path / "d.dat.group").write_bytes(content)
    for status, err in run_both(no_qids, tmp_path, models, "-v", "1"):
        assert status == 0, err
        assert "2 queries from" in err
    from rankfast.io.groups import read_group_file
    assert list(read_group_file(str(tmp_path / "d.dat.group"))) == [3, 3]


def test_a_corrupt_compressed_group_file_is_one_line(no_qids, tmp_path, models):
    import gzip
    packed = gzip.compress(b"3\n3\n" * 1000)
    (tmp_path / "d.dat.query").write_bytes(packed[:len(packed) // 2])
    for status, err in run_both(no_qids, tmp_path, models):
        assert status == 1 and err.count("\n") == 1 and "Traceback" not in err, err[-3000:]
        assert f"{tmp_path / 'd.dat.query'}: cannot read" in err


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


def test_the_largest_cut_offs_are_computed(tmp_path, capsys, models):
    big = "9223372036854775807"
    assert classify_main(["--metrics", "--ndcg-at", f"{big},3", str(EXAMPLES / "test.dat"),
                          str(models["linear"]), str(tmp_path / "p")]) == 0
    captured = capsys.readouterr()
    assert f"NDCG@{big} (LETOR): 0.0000" in captured.out and f"ERR@{big}: 0." in captured.out
    assert f"NDCG@{big} (LETOR) is the same for every ranking" in captured.err
    assert learn_main(["-c", "1,2", "--cv-metric", f"ndcg@{big}", str(EXAMPLES / "train.dat"),
                       str(tmp_path / "m")]) == 0
    captured = capsys.readouterr()       # LETOR's NDCG@k is 0 for every query: pairs choose
    assert "chosen by pair accuracy" in captured.out and f"NDCG@{big} (LETOR)" in captured.out
    assert f"every query has fewer than {big} documents" in captured.err


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


def test_a_usage_error_while_training_stays_exit_2(tmp_path, capsys, monkeypatch):
    from rankfast import RankSVM, UsageError

    def refuse(self, *args, **kwargs):
        raise UsageError("a setting the learner refuses")
    monkeypatch.setattr(RankSVM, "_fit_checked", refuse)      # the entry rank_learn calls
    assert learn_main([str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 2
    assert "rank_learn: a setting the learner refuses" in capsys.readouterr().err


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
    from rankfast._threads import available_cores
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


def slow_training_file(path):
    """Big queries for rankncg's direct O(m^2) erfc sums: seconds of training on the workers."""
    import numpy as np
    rng = np.random.default_rng(2)
    with open(path, "w") as f:
        for q in range(8):
            x = rng.random((6000, 10))
            labels = rng.integers(0, 5, 6000)
            f.writelines(f"{labels[i]} qid:{q + 1} " +
                         " ".join(f"{j + 1}:{x[i, j]:.4f}" for j in range(10)) + "\n"
                         for i in range(6000))


def children_of(pid):
    """Process ids whose parent is pid (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def slow_data(tmp_path_factory):
    pytest.importorskip("distributed")
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc (Linux)")
    path = tmp_path_factory.mktemp("slow") / "train.dat"
    slow_training_file(path)
    return path


@pytest.mark.parametrize("signal_name, status, says", [("SIGINT", 130, "interrupted"),
                                                       ("SIGTERM", 143, "terminated")])
@pytest.mark.parametrize("target", ["process", "group"])
def test_a_signal_under_workers_stops_the_run_at_once(tmp_path, slow_data, signal_name, status,
                                                      says, target):
    import signal
    import time
    model = tmp_path / "m"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(ROOT / "rank_learn"), "--workers", "2",
                             "-a", "rankncg", "--erfc", "direct", "-c", "100", "-e", "1e-12",
                             str(slow_data), str(model)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True, text=True)
    try:
        for line in proc.stdout:                  # the cluster is up and training has begun
            if line.startswith("Training on a Dask cluster"):
                break
        time.sleep(1.0)
        workers = children_of(proc.pid)
        assert proc.poll() is None, "the training ended before the signal: make it longer"
        sent = time.monotonic()
        if target == "group":
            os.killpg(proc.pid, getattr(signal, signal_name))
        else:
            proc.send_signal(getattr(signal, signal_name))
        proc.wait(timeout=60)
        took = time.monotonic() - sent
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stdout.close()
        proc.stderr.close()
    assert (proc.returncode, err) == (status, f"rank_learn: {says}\n")
    assert took < 10, f"{took:.1f} s from the signal to the end"
    assert not model.exists() and sorted(os.listdir(tmp_path)) == []
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workers and not any(alive(pid) for pid in workers)


STARTING = """
import os, signal, sys, threading
import distributed
from rankfast.cli import learn_command
start, SIGNAL = distributed.LocalCluster.__init__, getattr(signal, sys.argv[1])

def interrupted_start(self, *args, **kwargs):      # the signal comes while the workers start
    threading.Timer(0.2, os.kill, (os.getpid(), SIGNAL)).start()
    start(self, *args, **kwargs)
    threading.Event().wait(60)                     # (when the start was quicker than the timer)
distributed.LocalCluster.__init__ = interrupted_start
sys.argv[1:] = sys.argv[2:]
learn_command()
"""


@pytest.mark.parametrize("signal_name, status, says", [("SIGINT", 130, "interrupted"),
                                                       ("SIGTERM", 143, "terminated")])
def test_a_signal_while_the_local_cluster_starts_is_one_line(tmp_path, signal_name, status, says):
    pytest.importorskip("distributed")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", STARTING, signal_name, "--workers", "2",
                             str(EXAMPLES / "train.dat"), str(tmp_path / "m")],
                            capture_output=True, text=True, env=env, timeout=120)
    assert (result.returncode, result.stderr) == (status, f"rank_learn: {says}\n")
    assert not (tmp_path / "m").exists()


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


@pytest.mark.parametrize("program", ["rank_learn", "rank_classify"])
def test_ctrl_c_while_the_launcher_imports_rankfast_is_one_line(tmp_path, program):
    (tmp_path / program).write_bytes((ROOT / program).read_bytes())
    (tmp_path / "rankfast").mkdir()
    (tmp_path / "rankfast" / "__init__.py").write_text("")
    (tmp_path / "rankfast" / "cli.py").write_text("raise KeyboardInterrupt\n")   # as if Ctrl-C
    result = subprocess.run([sys.executable, str(tmp_path / program)], capture_output=True,
                            text=True, timeout=60)
    assert (result.returncode, result.stderr) == (130, f"{program}: interrupted\n")


@pytest.mark.parametrize("value", ["\u00b2", "9" * 5000, "", "4"])
def test_j_with_any_thread_variable_in_the_environment(tmp_path, value):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS=value)
    result = subprocess.run([sys.executable, str(ROOT / "rank_learn"), "-v", "0", "-j", "1",
                             str(EXAMPLES / "train.dat"), str(tmp_path / "m")],
                            capture_output=True, text=True, env=env, timeout=120)
    # (libgomp itself complains of an invalid value when it loads, before rankfast runs)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "rank_learn:" not in result.stderr and (tmp_path / "m").exists()
