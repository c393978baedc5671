"""What the programs show and how they end: streams, progress, notes, signals, exit status.

This module and the programs' modules (learn_cli, classify_cli, export_cli)
are the only ones that print or exit.  Data and model errors print one line
on stderr and exit 1; usage errors exit 2 (svm_rank exits 0); SIGTERM ends a
run as Ctrl-C does (143 and 130).  Output to a closed pipe or a full device
never ends a run with a traceback.
"""
from __future__ import annotations

# signal's C core: the public module wraps it in enums, and importing enum costs ~7 ms a run
import _signal
import errno
import os
import sys
import time
import warnings

from .. import __version__
from .._kernels.threads import resolve_n_jobs
from ..errors import RankfastError, UsageError
from ..io.files import deferred_outputs
from .options import HelpRequested, VersionRequested, in_flags

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

# numpy, scipy and the learners are imported where a run needs them: classifying
# with a linear model needs none of them (start-up in milliseconds).
# numpy's floating-point warnings ("overflow encountered in multiply", ...) are
# dropped for every run, as np.errstate(all="ignore") would drop them, without
# importing numpy for runs that do not use it; and without a warnings filter,
# whose message pattern would import re (~7 ms a run) to compile it.
_FLOATING_POINT_WARNINGS = ("overflow encountered", "invalid value encountered",
                            "divide by zero encountered", "underflow encountered")


def run(program: str, body: Any, argv: Any, help_text: Any) -> int:
    """Call body(argv); turn rankfast's exceptions into one stderr line and an exit status.

    numpy's floating-point warnings are off: an overflow that matters ends in
    one of rankfast's own errors (weights not finite, kernel overflows), not
    in numpy's RuntimeWarning lines.  Other warnings (scipy's LinAlgWarning)
    become one note each (_warning_note).  SIGTERM ends the run as Ctrl-C
    does (temporary files removed), with exit status 143 instead of 130.
    The outputs the run finishes are put in place when it ends with status 0
    (rankfast.io.files.deferred_outputs): a run that fails or is interrupted
    at any point leaves every output as it was.
    """
    _reserve_standard_streams()
    _stdout_error[0] = None
    _running[:] = [program]
    with _terminate_as_interrupt(), warnings.catch_warnings():
        warnings.showwarning = _warning_printer(program)
        _warnings_never_raise()
        try:
            with deferred_outputs() as outputs:     # in place only once the run has succeeded
                status = body(argv)
                if status:
                    outputs.discard()
        except HelpRequested:
            write(help_text() if callable(help_text) else help_text)
            status = 0
        except VersionRequested:
            write(f"{program} (rankfast) {__version__}\n")
            status = 0
        except UsageError as exc:
            write("")
            _say(f"{program}: {in_flags(str(exc))}\nTry '{program} -?' for the list of options.")
            status = 2
        except RankfastError as exc:
            _end_open_line()
            _say(f"{program}: {in_flags(str(exc))}")
            status = 1
        except MemoryError:
            _end_open_line()
            _say(f"{program}: out of memory")
            status = 1
        except _Terminated:
            _end_open_line()
            _say(f"{program}: terminated")
            status = 128 + _signal.SIGTERM
        except KeyboardInterrupt:
            _end_open_line()
            _say(f"{program}: interrupted")
            status = 130
    _release_threads()
    if _stdout_error[0] is not None:
        _say(f"{program}: standard output: {_stdout_error[0]}; what followed was not printed")
    _running.clear()
    return status


_running: list = []       # the program run() runs: its notes carry its name (svm_proprank_learn)


# Thread libraries' environment variables: each is read once, when its library loads.
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "BLIS_NUM_THREADS")


_BLAS_VARIABLES = _THREAD_VARIABLES[1:]      # all but OpenMP's

_THREAD_TIMEOUT = "OPENBLAS_THREAD_TIMEOUT"    # log2 of the cycles its idle threads spin

_held_threads: list = []          # how to undo hold_threads, once the run is over


def hold_threads(n_jobs: int | None, blas_threads: int | None = None) -> None:
    """-j N: the BLAS and OpenMP libraries get at most N threads too, for the whole run.

    ``blas_threads``: a cap on the BLAS libraries' threads alone, with or without -j
    (rank_learn: one, for every learner; rankfast's own kernels keep -j's threads).
    OpenBLAS's products on two threads round differently from one: a Nyström model at
    -j 2 differed from -j 1 in its last digits, and so did PRSVM's and RankRLS's on the
    raw MSLR sample where threadpoolctl, which the fits use to hold BLAS to one thread
    (rankfast._kernels.threads.blas_single_thread), is not installed (numpy and scipy
    alone), since -j N gave BLAS N threads.

    rankfast's own kernels and reader take their threads from -j
    (resolve_n_jobs); numpy's and scipy's BLAS start a thread per core when
    they load, and use them in the products outside rankfast's kernels (the
    learners' dense algebra, kernel maps, cross-validation's scoring), so
    that ``-j 1`` used more than one core.  The programs import numpy late:
    the libraries' variables are set before it loads (and set back after the
    run).  When main() is called from Python with numpy already loaded,
    threadpoolctl (when installed) limits the loaded libraries instead.

    With or without -j, OpenBLAS's threads go to sleep as soon as a
    product is done (OPENBLAS_THREAD_TIMEOUT=4, its least, unless the
    environment sets it) instead of spinning for 2**28 cycles, about a tenth
    of a second, after loading and after every product, on the cores that
    rankfast's own threads use.  On 100k x 50 with two cores (medians of
    farm-bench pairs against OPENBLAS_THREAD_TIMEOUT=28), CPU seconds: prsvm
    0.32 where 0.40, rankncg 0.54 where 0.82, rankrls 0.41 where 0.61, greedy
    1.10 where 1.40, Nystrom 3.47 where 4.23; wall 4-21% less.
    """
    if "numpy" not in sys.modules and _THREAD_TIMEOUT not in os.environ:
        os.environ[_THREAD_TIMEOUT] = "4"
        _held_threads.append(lambda: _restore_variable(_THREAD_TIMEOUT, None))
    if n_jobs is None and blas_threads is None:
        return
    threads = resolve_n_jobs(n_jobs)
    blas = threads if blas_threads is None else min(threads, blas_threads)
    limits = {name: blas if name in _BLAS_VARIABLES else threads for name in _THREAD_VARIABLES
              if n_jobs is not None or name in _BLAS_VARIABLES}
    if "numpy" not in sys.modules:
        for name, limit in limits.items():
            given = os.environ.get(name)
            if not (given and given.isascii() and given.isdigit() and len(given) < 10
                    and 0 < int(given) <= limit):
                os.environ[name] = str(limit)
                _held_threads.append(lambda name=name, given=given: _restore_variable(name, given))
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                 # the libraries keep their own setting
        return
    if n_jobs is not None:
        _held_threads.append(threadpool_limits(limits=threads).restore_original_limits)
    if blas != threads or n_jobs is None:
        _held_threads.append(threadpool_limits(limits=blas, user_api="blas")
                             .restore_original_limits)


def _restore_variable(name, value):
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def _release_threads():
    while _held_threads:
        _held_threads.pop()()


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program stands so that cleanups run as for Ctrl-C."""


class _terminate_as_interrupt:
    """Turn SIGTERM into _Terminated while the block runs (main thread only)."""

    def __enter__(self):
        try:
            self._previous = _signal.signal(_signal.SIGTERM, self._handler)
            self._installed = True
        except ValueError:                   # not the main thread: leave SIGTERM alone
            self._installed = False

    def __exit__(self, *_):
        if self._installed:                  # None: a handler set outside Python, not restorable
            previous = _signal.SIG_DFL if self._previous is None else self._previous
            _signal.signal(_signal.SIGTERM, previous)

    @staticmethod
    def _handler(signum, frame):
        raise _Terminated()


def _reserve_standard_streams():
    """Point closed descriptors 0, 1, 2 at os.devnull.

    A program started with ``>&-`` or ``<&-`` would otherwise get descriptor
    1 (or 0, 2) for the next file it opens, and anything written to "standard
    output" from C code would land in the model file.  sys.stdin / sys.stdout
    stay None: reading '-' is then an error ("standard input is closed") and
    the output meant for the terminal goes nowhere.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, os.O_RDWR)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)


def _warnings_never_raise():
    """Filters that would raise a warning (``-W error``, ``PYTHONWARNINGS=error``) show it instead.

    A run ends in its own errors, never in a warning's traceback; the other
    filters keep their places (an earlier ``ignore`` still wins).
    """
    kept = list(warnings.filters)
    if not any(action == "error" for action, *_ in kept):
        return
    warnings.resetwarnings()
    for action, message, category, module, lineno in kept:     # patterns compiled, or str
        warnings.filterwarnings("default" if action == "error" else action,
                                getattr(message, "pattern", message or ""), category,
                                getattr(module, "pattern", module or ""), lineno, append=True)


def _warning_printer(program):
    """warnings.showwarning for a run: numpy's floating-point warnings dropped, the rest notes."""
    def show(message, category, *_, **__):
        if not (issubclass(category, RuntimeWarning)
                and str(message).startswith(_FLOATING_POINT_WARNINGS)):
            print_note(program, _warning_note(message))
    return show


def _warning_note(message):
    """A library warning in a few words and what to change (scipy's come with rcond values)."""
    text = str(message)
    if "ill-conditioned" in text:
        import re  # here: every run would pay ~5 ms to import it
        rcond = re.search(r"rcond\s*=\s*([-+.eE0-9]+\d)", text)
        where = f" (reciprocal condition number {float(rcond.group(1)):.2g})" if rcond else ""
        return (f"the linear system is ill-conditioned{where}, so the weights may be "
                f"inaccurate: a smaller -c (more regularisation) or rescaled features avoid it")
    return in_flags(text)


def print_note(program: str, text: str) -> None:
    """``program: note: text`` on stderr; the name is that of the program running, if any (the
    modules rank_learn shares with svm_proprank_learn name rank_learn)."""
    _end_open_line()
    _say(f"{_running[0] if _running else program}: note: {text}")


_open_line = [False]


_stdout_error: list = [None]  # why standard output failed (other than a closed pipe), if it did


def write(text: str) -> None:
    """Write text to stdout and flush it; carry on silently once stdout has gone away.

    ``rank_learn ... | head -1`` closes the pipe while the program still has
    progress to print, but the model or predictions must still be written
    and the exit status stay 0.  The same holds for a full device
    (``> /dev/full``), which run reports in one line at the end, and for a
    closed stdout (``>&-``, sys.stdout is None).  On the first failure the
    stdout file descriptor is pointed at os.devnull: the rest of the output
    (and the interpreter's final flush, which would otherwise print
    "Exception ignored ...") goes nowhere.
    """
    if sys.stdout is None:
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno != errno.EPIPE and _stdout_error[0] is None:
            _stdout_error[0] = exc.strerror or str(exc)
        _silence(sys.stdout)


def _say(text):
    """One line on stderr; nothing (and no traceback) when stderr is closed or full."""
    if sys.stderr is None:
        return
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except OSError:
        _silence(sys.stderr)


def _silence(stream):
    """Point stream's descriptor at os.devnull (its buffered text is then flushed there)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
        stream.flush()
    except (OSError, ValueError):
        pass


def progress(text: str, verbosity: int, level: int = 1, end: str = "\n") -> None:
    """Print text + end at verbosity ≥ level, remembering whether a line is left open."""
    text += end
    if verbosity >= level and text:
        write(text)
        _open_line[0] = not text.endswith("\n")


def _end_open_line():
    if _open_line[0]:
        write("\n")
        _open_line[0] = False


def svmlight_read_documents(n_documents: int) -> str:
    """read_documents' lines: a count every 100 examples, then the total."""
    counts = "".join(f"{k}.." for k in range(100, n_documents + 1, 100))
    return (f"Scanning examples...done\n"
            f"Reading examples into memory...{counts}OK. ({n_documents} examples read)\n")


def svmlight_read_model(file: Any) -> str:
    """read_model's line for a modelfile.ModelFile, or "" for rankfast's random Fourier models.

    A linear model has one support vector: the compacted "1 idx:w ..." line
    svm_rank_learn and rank_learn write.
    """
    if file.rff is not None:
        return ""
    return f"Reading model...OK. ({1 if file.kernel == 0 else len(file.alphas)} support vectors read)\n"


class ReadProgress:
    """load_svmlight's progress callback: '<program>: reading <path>: N MB' on stderr.

    At verbosity >= 1, at most one line per ``interval`` seconds, the first
    one ``interval`` seconds after reading began: a small file prints nothing
    (svm_rank prints dots while it reads).
    """

    def __init__(self, program: str, path: str, verbosity: int, interval: float = 1.0,
                 clock: Any = time.monotonic) -> None:
        self.program, self.path, self.verbosity = program, path, verbosity
        self.interval, self.clock = interval, clock
        self.last = clock()

    def __call__(self, bytes_read: int) -> None:
        now = self.clock()
        if self.verbosity >= 1 and now - self.last >= self.interval:
            self.last = now
            _say(f"{self.program}: reading {self.path}: {bytes_read / 1e6:.0f} MB")


def end_process(status: int) -> None:
    """Exit with status, without the interpreter's teardown when nothing waits for it.

    Tearing the interpreter down (every module cleared, a last garbage
    collection) takes ~3 ms, a tenth of a small rank_classify run, to free
    memory that the system frees anyway.  The outputs are closed and on disk
    by now, and the standard streams are flushed here.  When an atexit handler
    or another thread is waiting (dask's clusters, thread pools and logging
    bring them), the usual exit runs instead.
    """
    import atexit
    threading = sys.modules.get("threading")
    if ClusterRun.interrupted:
        ClusterRun.stop_workers()
    if ClusterRun.interrupted or (getattr(atexit, "_ncallbacks", lambda: 1)() == 0
                                   and (threading is None or threading.active_count() == 1)):
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):      # gone: write has reported it if it mattered
                pass
        os._exit(status)
    sys.exit(status)


class ClusterRun:
    """The Dask client of a --scheduler / --workers run (rankfast.dask.cluster_client).

    Ctrl-C and SIGTERM end such a run at once.  While the block runs (no
    output is open then: the model and the predictions are written after
    it), the two signals have a handler of their own, which prints the
    program's one line, kills the local cluster's worker processes and
    exits (130, 143) without the interpreter's teardown: no orderly close of
    the cluster (seconds of waiting for the workers, more under load), no
    atexit close_clusters closing it again with tracebacks, and nothing
    that a KeyboardInterrupt raised inside a finaliser or distributed's own
    code could be lost in.  Outside the main thread, where handlers cannot
    be set, an interrupt leaving the block marks the run for end_process,
    which does the same.  The cluster's and asyncio's log lines are silenced
    for the run, and the worker processes are started with standard error on
    os.devnull: a Ctrl-C sent to the process group would have each of them
    print its KeyboardInterrupt (a task's error reaches the driver, which
    reports it).
    """

    interrupted = False

    def __init__(self, program: str, options: dict[str, Any], workers: int) -> None:
        self.program, self.scheduler, self.workers = program, options.get("scheduler"), workers
        self.handlers: dict = {}
        self.stderr: int | None = None
        ClusterRun.interrupted = False

    def __enter__(self):
        import logging

        from .. import dask as cluster
        for name in ("asyncio", "distributed", "tornado"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        try:
            for signum in (_signal.SIGINT, _signal.SIGTERM):
                self.handlers[signum] = _signal.signal(signum, self._stop)
        except ValueError:                             # not the main thread
            pass
        self.stderr = os.dup(2)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.close(devnull)
            self.manager = cluster.cluster_client(self.scheduler, self.workers)
        except BaseException as exc:
            ClusterRun.interrupted = isinstance(exc, KeyboardInterrupt)
            self._restore_handlers()
            raise
        finally:
            os.dup2(self.stderr, 2)
            os.close(self.stderr)
            self.stderr = None
        return self.manager.__enter__()

    def __exit__(self, kind, value, traceback):
        try:
            if kind is not None and issubclass(kind, KeyboardInterrupt):
                ClusterRun.interrupted = True
                return False
            try:
                return self.manager.__exit__(kind, value, traceback)
            except KeyboardInterrupt:
                ClusterRun.interrupted = True
                raise
        finally:
            self._restore_handlers()

    def _restore_handlers(self):
        while self.handlers:
            signum, previous = self.handlers.popitem()
            _signal.signal(signum, _signal.SIG_DFL if previous is None else previous)

    def _stop(self, signum, frame):
        """The signal handler: one line, the workers killed, the process ended (os._exit)."""
        if self.stderr is not None:                    # the cluster is starting: stderr back
            os.dup2(self.stderr, 2)
        what = "terminated" if signum == _signal.SIGTERM else "interrupted"
        try:                                           # os.write: no buffered stream re-entered
            if _open_line[0] and sys.stdout is not None:
                os.write(sys.stdout.fileno(), b"\n")
            os.write(2, f"{self.program}: {what}\n".encode())
        except (OSError, ValueError):
            pass
        ClusterRun.stop_workers()
        os._exit(128 + signum)

    @staticmethod
    def stop_workers() -> None:
        """Kill this process's worker processes (a local cluster's), at once."""
        multiprocessing = sys.modules.get("multiprocessing")
        if multiprocessing is None:
            return
        for child in multiprocessing.active_children():
            try:
                child.kill()
            except (OSError, ValueError, AttributeError):
                pass
