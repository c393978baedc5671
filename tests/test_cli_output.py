"""rankfast.cli.output: the programs' streams, signals and exit status, and the launchers."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from program_runs import launch_bytes as launch
from program_runs import leftovers, read_text, without_runtime
from shared_paths import REFERENCE, require

from rankfast.cli import output as cli_output
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main

ROOT = Path(__file__).resolve().parents[1]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


EXAMPLE3 = REFERENCE / "example3"


def test_launchers_run_from_the_checkout(tmp_path):
    model = tmp_path / "m"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    learn = subprocess.run([sys.executable, str(ROOT / "rank_learn"), "-v", "0", str(EXAMPLES / "train.dat"),
                            str(model)], capture_output=True, text=True, env=env)
    assert learn.returncode == 0, learn.stderr
    classify = subprocess.run([sys.executable, str(ROOT / "rank_classify"), str(EXAMPLES / "test.dat"),
                               str(model), str(tmp_path / "p")], capture_output=True, text=True, env=env)
    assert classify.returncode == 0 and "Average loss on test set" in classify.stdout


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


def test_an_ill_conditioned_solve_is_one_note_saying_what_to_change():
    from rankfast.cli.output import _warning_note
    note = _warning_note("An ill-conditioned matrix detected: slice 0 has rcond = 5.2e-24.")
    assert note.startswith("the linear system is ill-conditioned (reciprocal condition "
                           "number 5.2e-24)")
    assert "a smaller -c" in note


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


def test_read_progress_lines_are_rate_limited_and_quiet_for_small_files(capsys):
    now = [0.0]
    progress = cli_output.ReadProgress("rank_learn", "big.dat", 1, clock=lambda: now[0])
    for step in range(1, 41):            # 40 reads, 0.25 s apart
        now[0] = step * 0.25
        progress(step * 32_000_000)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 10 and err[0] == "rank_learn: reading big.dat: 128 MB"
    quick = cli_output.ReadProgress("rank_learn", "small.dat", 1, clock=lambda: 0.5)
    quick(1000)
    silent = cli_output.ReadProgress("rank_learn", "big.dat", 0, clock=lambda: now[0])
    now[0] += 5
    silent(10)
    assert capsys.readouterr().err == ""


def test_a_usage_error_while_training_stays_exit_2(tmp_path, capsys, monkeypatch):
    from rankfast import RankSVM, UsageError

    def refuse(self, *args, **kwargs):
        raise UsageError("a setting the learner refuses")
    monkeypatch.setattr(RankSVM, "_fit_checked", refuse)      # the entry rank_learn calls
    assert learn_main([str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 2
    assert "rank_learn: a setting the learner refuses" in capsys.readouterr().err


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


@pytest.mark.parametrize("program", ["rank_learn", "rank_classify"])
def test_ctrl_c_while_the_launcher_imports_rankfast_is_one_line(tmp_path, program):
    (tmp_path / program).write_bytes((ROOT / program).read_bytes())
    (tmp_path / "rankfast").mkdir()
    (tmp_path / "rankfast" / "__init__.py").write_text("")
    (tmp_path / "rankfast" / "cli.py").write_text("raise KeyboardInterrupt\n")   # as if Ctrl-C
    result = subprocess.run([sys.executable, str(tmp_path / program)], capture_output=True,
                            text=True, timeout=60)
    assert (result.returncode, result.stderr) == (130, f"{program}: interrupted\n")


def test_the_programs_skip_the_interpreter_teardown_and_lose_nothing(tmp_path):
    """classify_command / learn_command end with os._exit once their files are on disk:
    the exit status, the predictions and the output through a pipe are those of a normal
    exit; with an atexit handler registered, the normal exit runs it.  (-S: no site, whose
    .pth files may register atexit handlers of their own.)"""
    require(EXAMPLE3)
    probe = ("import sys, atexit\n"
             "class Probe:\n"
             "    def __del__(self):\n"
             "        sys.stderr.write('teardown\\n')\n"
             "probe = Probe()\n"
             "if sys.argv.pop(1) == 'atexit':\n"
             "    atexit.register(lambda: sys.stderr.write('atexit\\n'))\n"
             "from rankfast.cli import classify_command\n"
             "classify_command()\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    expected = tmp_path / "expected"
    assert classify_main(["-v", "0", str(EXAMPLE3 / "test.dat"),
                              str(EXAMPLE3 / "model_c3.dat"), str(expected)]) == 0
    for mode in ("plain", "atexit"):
        pred = tmp_path / f"pred_{mode}"
        run = subprocess.run([sys.executable, "-S", "-c", probe, mode, str(EXAMPLE3 / "test.dat"),
                              str(EXAMPLE3 / "model_c3.dat"), str(pred)],
                             capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 0
        assert without_runtime(run.stdout) == \
            without_runtime(read_text(EXAMPLE3 / "classify_test_c3.stdout"))
        assert pred.read_bytes() == expected.read_bytes()
        if mode == "plain":
            assert run.stderr == ""                      # no teardown: Probe.__del__ never ran
        else:
            assert run.stderr.split() == ["atexit", "teardown"]
    failed = subprocess.run([sys.executable, "-S", "-c", probe, "plain",
                             str(tmp_path / "missing.dat"),
                             str(EXAMPLE3 / "model_c3.dat"), str(tmp_path / "p")],
                            capture_output=True, text=True, env=env, timeout=120)
    assert failed.returncode == 1 and "missing.dat" in failed.stderr
    assert "teardown" not in failed.stderr
