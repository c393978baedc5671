"""The two programs, ``rank_learn`` and ``rank_classify``: svm_rank's flags, files and output.

This is the only module that prints or exits.  Data and model errors print
one line on stderr and exit 1; usage errors exit 2 (svm_rank exits 0).
"""
import array
import collections
import errno
import math
import os
import sys
import time
import warnings

# signal's C core: the public module wraps it in enums, and importing enum costs ~7 ms a run
import _signal

from . import __version__
from ._predict import format_scores, linear_scores_rows
from ._threads import resolve_n_jobs
from .errors import InputError, RankfastError, UsageError
from .files import atomic_output, check_output
from .modelfile import read_model_file, single_vector_weights

# numpy, scipy and the learners are imported where a run needs them: classifying
# with a linear model needs none of them (start-up in milliseconds).
# numpy's floating-point warnings ("overflow encountered in multiply", ...) are
# dropped for every run, as np.errstate(all="ignore") would drop them, without
# importing numpy for runs that do not use it; and without a warnings filter,
# whose message pattern would import re (~7 ms a run) to compile it.
_FLOATING_POINT_WARNINGS = ("overflow encountered", "invalid value encountered",
                            "divide by zero encountered", "underflow encountered")

GROUP_HELP = """Queries of a file without qids:
         --group FILE -> query sizes, one a line (LightGBM / XGBoost); by default
                        example_file.query or example_file.group if one exists;
                        with neither, the whole file is one ranking
"""

LEARN_HELP = """rank_learn {version}: learning to rank, a drop-in for svm_rank_learn

   usage: rank_learn [options] example_file [model_file]

Arguments:
         example_file-> file with training data ('-' reads standard input;
                        .gz, .bz2 and .xz files are read transparently)
         model_file  -> file to store the learned model in (default svm_struct_model)
General options:
         -?, --help  -> this help (so is -h without a value: -h int is
                        svm_rank's QP option, see the end)
         --version   -> print the version and exit
         -v [0..3]   -> verbosity level (default 1; 0 still prints the
                        training set properties, as svm_rank does; 1 prints
                        cross-validation progress about once a second, 2
                        every fold and C)
         -y [0..3]   -> verbosity level for svm_light (default 0): from 1 on,
                        the lines svm_rank's svm_light prints while reading
                        the examples and writing the model (its QP solver's
                        lines have no counterpart here)
         -j, --threads int
                     -> threads (default 0: every core this process may use;
                        never more), in every learner and every phase (-j 1:
                        one thread); the model file is the same for any number
Learning options:
         -a algo     -> learner (default prsvm): {learners}
                        (in any case). svm_rank's -a FILE (write the alphas
                        to FILE) is accepted: no alphas are written (a note
                        says so) and prsvm is trained
         -c float    -> C: trade-off between training error and margin
                        (default 0.01), scaled as in svm_rank: the loss
                        is multiplied by C / (number of queries).
                        A comma-separated list picks C by cross-validation
                        and prints the table (see Model selection options)
         -l [1,2]    -> 1: every pair counts once (default);
                        2: each query's pairs are averaged (svm_rank's
                           fraction of swapped pairs)
         -e float    -> tolerance of the stopping rule (default 0.001)
         -# int      -> maximum number of iterations of the learner
         -k int|auto -> greedy: number of features to select (default auto:
                        until the leave-query-out error stops falling)
         --normalize none|query|zscore|log
                     -> normalise the features before training (default
                        none, as svm_rank): query = per query and feature
                        (x-min)/(max-min) as LETOR's QueryLevelNorm, applied
                        again by rank_classify (not by svm_rank_classify);
                        zscore = each feature / its standard deviation,
                        folded into the weights (a plain svm_rank model);
                        log = sign(x) log(1+|x|), applied like query
         --erfc fast|direct, --erfc-eps float
                     -> rankncg: fast erfc transform (default, accuracy
                        1e-6) or the exact O(m^2) gradient
         -p [1,2]    -> 1 with the default learner: svm_rank's own objective,
                        the L1 hinge (-a svmrank, with a note); otherwise
                        accepted, as rankfast's learners fix their own loss
         -o 2        -> accepted (margin rescaling, svm_rank's default);
                        -o 1 (slack rescaling) is refused, as svm_rank
                        fails on it
Kernel options (non-linear ranking by kernel approximation):
         -t int      -> 0: linear (default), 1: polynomial (s a*b+c)^d,
                        2: radial basis function exp(-gamma ||a-b||^2),
                        3: sigmoid tanh(s a*b + c); 4 (user defined) is refused
         -d int -g float -s float -r float
                     -> kernel parameters, as in svm_rank; with -t 2, a
                        comma-separated -g list is cross-validated, crossed
                        with the -c list
         -u string   -> accepted and ignored (parameter of svm_rank's
                        user-defined kernel)
         --approx nystrom|rff
                     -> Nystrom landmarks (default) or random Fourier
                        features (RBF only)
         --landmarks int
                     -> number of landmarks or random features (default 500)
         --seed int  -> seed of the landmark sample or the random features,
                        and of the cross-validation folds, 0..4294967295
                        (default 0)
Model selection options (with a list of -c values, or of -g values with -t 2):
         --folds K|loqo
                     -> K folds of queries, shuffled by --seed (default 5;
                        rankrls: loqo, exact leave-query-out); a file with
                        a single ranking is split by its documents
         --valid FILE
                     -> instead of folds, train each value on the whole
                        training file and score FILE (LETOR's vali.txt);
                        the model written is a plain fit at the chosen value
         --cv-metric ndcg@k|map|err@k|pairs
                     -> selection metric (default ndcg@10); pairs: pair
                        accuracy of the held-out documents
         --cv-rule best|1se
                     -> best: highest mean (default); 1se: the smallest C
                        within one standard error of the best mean
         --ndcg letor|standard
                     -> NDCG convention (default letor: LETOR 4.0's script)
         --weights FILE
                     -> per-query weights, one number a line, per line of
                        the training file (the same within a query) or
                        per query (LightGBM's .weight); 2 counts a query
                        twice (in the fits and folds of a -c list too)
         --plot FILE.png|FILE.svg
                     -> draw the CV curve, rankrls's regularisation path or
                        greedy's selection (needs matplotlib: rankfast[plot])
{group_help}svm_rank's QP solver options -w [0..4,9] -f -b -n -q -m -h int, and -k with
a learner other than greedy, are accepted, checked and ignored.
Distributed training (prsvm, rankncg, rankrls; needs rankfast[dask]):
         --scheduler ADDRESS -> train on the Dask cluster at ADDRESS
         --workers N -> train on a new local cluster of N worker processes
                        With either, example_file may be a quoted glob
                        ('train-*.dat'): each worker reads its own files.
"""

CLASSIFY_HELP = f"""rank_classify {__version__}: a drop-in for svm_rank_classify

   usage: rank_classify [options] example_file model_file [output_file]

Arguments:
         example_file-> documents to score ('-' reads standard input)
         model_file  -> model written by rank_learn or svm_rank_learn
         output_file -> one score per line (default svm_predictions)
Options:
         -?, --help  -> this help (and -h: svm_rank_classify has no -h option)
         --version   -> print the version and exit
         -v [0..3]   -> verbosity level (default 2)
         -y [0..3]   -> verbosity level for svm_light (default 0): from 1 on,
                        the lines svm_rank's svm_light prints while reading
                        the model and the examples
         --metrics   -> also print NDCG@k, ERR@k, P@k, MAP, MRR and pairwise
                        accuracy (LETOR 4.0 conventions: a query with fewer
                        than k documents scores 0 at NDCG@k)
         --ndcg-at k[,k...] -> cut-offs for --metrics (default 10)
         --ndcg letor|standard -> NDCG convention of --metrics (default letor)
         -j, --threads int -> threads (default 0: every core this process may
                        use; never more) reading and scoring (same predictions)
         --scheduler ADDRESS, --workers N -> score on a Dask cluster (an
                        existing one, or N local worker processes);
                        example_file may then be a quoted glob, scored in
                        sorted file order (needs rankfast[dask])
""" + GROUP_HELP + """                        The summary and --metrics use these queries; the
                        predictions do not depend on them
"""

NOTE_BLOCK = ("NOTE: The loss reported above is the fraction of swapped pairs averaged over\n"
              "      all rankings. The zero/one-error is fraction of perfectly correct\n"
              "      rankings!\n")


def _positive_float(text, flag):
    value = _number(text, float, flag)
    if not value > 0:
        raise UsageError(f"{flag} must be greater than zero (got {text})")
    return value


def _number(text, kind, flag):
    """An option's number, read with the data files' grammar (rankfast._svmlight).

    Integers are [+-]digits within ±(2**63 - 1); numbers are strtod's decimal
    forms, finite.  Python's int() and float() would also take '1_0', other
    scripts' digits ('٣') and surrounding blanks, and int() refuses more
    than 4300 digits with a ValueError of its own.
    """
    from . import _svmlight
    token = text.encode("utf-8", "replace")
    value = (_svmlight.integer_of if kind is int else _svmlight.number_of)(token)
    if value is None:
        if kind is int and token.lstrip(b"+-").isdigit():
            bound = "at least -" if token.startswith(b"-") else "at most "
            raise UsageError(f"{flag} must be {bound}9223372036854775807 (got {_shown(text)})")
        raise UsageError(f"{flag} expects {'an integer' if kind is int else 'a number'}, "
                         f"got {_shown(text)!r}")
    if kind is float and not math.isfinite(value):
        raise UsageError(f"{flag} must be finite (got {_shown(text)})")
    return value


def _shown(text, limit=60):
    """An option's value as a message quotes it: at most ``limit`` characters."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _choice(allowed):
    def check(text, flag):
        value = _number(text, int, flag)
        if value not in allowed:
            raise UsageError(f"{flag} must be one of {', '.join(map(str, allowed))} (got {text})")
        return value
    return check


def _at_least(low):
    def check(text, flag):
        value = _number(text, int, flag)
        if value < low:
            raise UsageError(f"{flag} must be at least {low} (got {text})")
        return value
    return check


def _between(low, high):
    def check(text, flag):
        value = _number(text, int, flag)
        if not low <= value <= high:
            raise UsageError(f"{flag} must be between {low} and {high} (got {text})")
        return value
    return check


def _c_list(text, flag):
    return [_positive_float(part, flag) for part in text.split(",")]


def _k_value(text, flag):
    if text == "auto":
        return "auto"
    return _at_least(1)(text, flag)


def _text(text, flag):
    return text


def _words(*allowed):
    def check(text, flag):
        if text not in allowed:
            raise UsageError(f"{flag} must be {' or '.join(allowed)} (got {text!r})")
        return text
    return check


def _folds(text, flag):
    return "loqo" if text == "loqo" else _at_least(2)(text, flag)


def _cv_metric(text, flag):
    from .model_selection import Metric
    try:
        return Metric.parse(text).key
    except UsageError:
        raise UsageError(f"{flag} must be ndcg@k, map, err@k or pairs (got {text!r})") from None


def _plot_file(text, flag):
    from .plot import plot_format
    plot_format(text)
    return text


LEARN_OPTIONS = {
    "-c": ("C", _c_list), "-e": ("epsilon", _positive_float), "-l": ("loss", _choice((1, 2))),
    "-p": ("slack_norm", _choice((1, 2))), "-o": ("rescaling", _choice((1, 2))),
    "-w": ("qp_algorithm", _choice((0, 1, 2, 3, 4, 9))), "-k": ("k", _k_value),
    "-f": ("qp_cache", _at_least(1)), "-b": ("qp_refresh", _at_least(1)),
    "-n": ("qp_new", _at_least(1)), "-q": ("qp_size", _at_least(2)),
    "-m": ("qp_memory", _at_least(1)), "-h": ("qp_shrink", _at_least(1)),
    "-#": ("max_iter", _at_least(1)), "-t": ("kernel", _choice((0, 1, 2, 3, 4))),
    "-d": ("degree", lambda t, f: _number(t, int, f)), "-g": ("gamma", lambda t, f: [_number(part, float, f) for part in t.split(",")]),
    "-s": ("coef_lin", lambda t, f: _number(t, float, f)),
    "-r": ("coef_const", lambda t, f: _number(t, float, f)), "-u": ("custom", _text),
    "-v": ("verbosity", _choice((0, 1, 2, 3))), "-y": ("svmlight_verbosity", _choice((0, 1, 2, 3))),
    "-a": ("algorithm", _text),
    "--approx": ("approx", _text), "--landmarks": ("landmarks", _at_least(1)),
    "--seed": ("seed", _between(0, 2**32 - 1)),       # numpy's seeds are non-negative
    "--erfc": ("erfc", _text), "--erfc-eps": ("erfc_eps", _positive_float),
    "--folds": ("folds", _folds), "--cv-metric": ("cv_metric", _cv_metric),
    "--valid": ("valid", _text), "--weights": ("weights", _text),
    "--cv-rule": ("cv_rule", _words("best", "1se")), "--ndcg": ("ndcg", _words("letor", "standard")),
    "--plot": ("plot", _plot_file),
    "-j": ("n_jobs", _at_least(0)), "--threads": ("n_jobs", _at_least(0)),
    "--group": ("group", _text),
    "--scheduler": ("scheduler", _text), "--workers": ("workers", _at_least(1)),
    "--normalize": ("normalize", _words("none", "query", "zscore", "log")),
}

CLASSIFY_OPTIONS = {
    "-v": ("verbosity", _choice((0, 1, 2, 3))), "-y": ("svmlight_verbosity", _choice((0, 1, 2, 3))),
    "--ndcg-at": ("ndcg_at", lambda t, f: [_at_least(1)(part, f) for part in t.split(",")]),
    "--ndcg": ("ndcg", _words("letor", "standard")),
    "-j": ("n_jobs", _at_least(0)), "--threads": ("n_jobs", _at_least(0)),
    "--group": ("group", _text),
    "--scheduler": ("scheduler", _text), "--workers": ("workers", _at_least(1)),
}
CLASSIFY_SWITCHES = {"--metrics": "metrics"}


def parse_args(argv, table, switches, max_positional, program):
    """svm_rank-style options: a flag and its value as two words, anywhere on the line.

    A value may also be attached to a one-letter flag (``-c3``).  Returns
    (options, given flags in order, positional arguments).

    ``-?`` and ``--help`` are the help in both programs.  ``-h`` is too where
    it cannot be svm_rank's: rank_classify has no -h option, and rank_learn's
    ``-h int`` (svm_rank_learn's QP shrinking setting, which scripts pass) is
    help only when no value follows it.
    """
    options, given, positional = {}, [], []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in ("-?", "--help") or (word == "-h" and ("-h" not in table or i + 1 == len(argv))):
            raise _HelpRequested()
        if word == "--version":
            raise _VersionRequested()
        if word == "--":
            positional.extend(argv[i + 1:])
            break
        if word.startswith("-") and word != "-":
            if word in switches:
                options[switches[word]] = True
                given.append(word)
                i += 1
                continue
            flag, value = word, None
            if word not in table and not word.startswith("--") and word[:2] in table:
                flag, value = word[:2], word[2:]
            if flag not in table:
                raise UsageError(f"unrecognized option {word}")
            if value is None:
                if i + 1 >= len(argv):
                    raise UsageError(f"option {flag} needs a value")
                value = argv[i + 1]
                i += 1
            name, convert = table[flag]
            options[name] = convert(value, flag)
            given.append(flag)
        else:
            positional.append(word)
        i += 1
    if len(positional) > max_positional:
        raise UsageError(f"unexpected argument {positional[max_positional]!r}")
    return options, given, positional


class _HelpRequested(Exception):
    pass


class _VersionRequested(Exception):
    pass


def _learn_help():
    from .learners import LEARNERS
    return LEARN_HELP.format(version=__version__, learners=", ".join(LEARNERS),
                             group_help=GROUP_HELP)


def _run(program, body, argv, help_text):
    """Call body(argv); turn rankfast's exceptions into one stderr line and an exit status.

    numpy's floating-point warnings are off: an overflow that matters ends in
    one of rankfast's own errors (weights not finite, kernel overflows), not
    in numpy's RuntimeWarning lines.  Other warnings (scipy's LinAlgWarning)
    become one note each (_warning_note).  SIGTERM ends the run as Ctrl-C
    does (temporary files removed), with exit status 143 instead of 130.
    """
    _reserve_standard_streams()
    _stdout_error[0] = None
    with _terminate_as_interrupt(), warnings.catch_warnings():
        warnings.showwarning = _warning_printer(program)
        try:
            status = body(argv)
        except _HelpRequested:
            _write(help_text() if callable(help_text) else help_text)
            status = 0
        except _VersionRequested:
            _write(f"{program} (rankfast) {__version__}\n")
            status = 0
        except UsageError as exc:
            _write("")
            _say(f"{program}: {exc}\nTry '{program} -?' for the list of options.")
            status = 2
        except RankfastError as exc:
            _end_open_line()
            _say(f"{program}: {exc}")
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
    return status


# Thread libraries' environment variables: each is read once, when its library loads.
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "BLIS_NUM_THREADS")
_held_threads = []          # how to undo _hold_threads, once the run is over


def _hold_threads(n_jobs):
    """-j N: the BLAS and OpenMP libraries get at most N threads too, for the whole run.

    rankfast's own kernels and reader take their threads from -j
    (resolve_n_jobs); numpy's and scipy's BLAS start a thread per core when
    they load, and use them in the products outside rankfast's kernels (the
    learners' dense algebra, kernel maps, cross-validation's scoring), so
    that ``-j 1`` used more than one core.  The programs import numpy late:
    the libraries' variables are set before it loads (and set back after the
    run).  When main() is called from Python with numpy already loaded,
    threadpoolctl (when installed) limits the loaded libraries instead.
    """
    if n_jobs is None:
        return
    threads = resolve_n_jobs(n_jobs)
    if "numpy" not in sys.modules:
        for name in _THREAD_VARIABLES:
            given = os.environ.get(name)
            if not (given and given.isascii() and given.isdigit() and len(given) < 10
                    and 0 < int(given) <= threads):
                os.environ[name] = str(threads)
                _held_threads.append(lambda name=name, given=given: _restore_variable(name, given))
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                 # the libraries keep their own setting
        return
    _held_threads.append(threadpool_limits(limits=threads).restore_original_limits)


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


def _warning_printer(program):
    """warnings.showwarning for a run: numpy's floating-point warnings dropped, the rest notes."""
    def show(message, category, *_, **__):
        if not (issubclass(category, RuntimeWarning)
                and str(message).startswith(_FLOATING_POINT_WARNINGS)):
            _note(program, _warning_note(message))
    return show


def _warning_note(message):
    """A library warning in a few words and what to change (scipy's come with rcond values)."""
    text = str(message)
    if "ill-conditioned" in text:
        import re                      # here: every run would pay ~5 ms to import it
        rcond = re.search(r"rcond\s*=\s*([-+.eE0-9]+\d)", text)
        where = f" (reciprocal condition number {float(rcond.group(1)):.2g})" if rcond else ""
        return (f"the linear system is ill-conditioned{where}, so the weights may be "
                f"inaccurate: a smaller -c (more regularisation) or rescaled features avoid it")
    return text


def _note(program, text):
    _end_open_line()
    _say(f"{program}: note: {text}")


_open_line = [False]
_stdout_error = [None]      # why standard output failed (other than a closed pipe), if it did


def _write(text):
    """Write text to stdout and flush it; carry on silently once stdout has gone away.

    ``rank_learn ... | head -1`` closes the pipe while the program still has
    progress to print, but the model or predictions must still be written
    and the exit status stay 0.  The same holds for a full device
    (``> /dev/full``), which _run reports in one line at the end, and for a
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


def _progress(text, verbosity, level=1, end="\n"):
    """Print text + end at verbosity ≥ level, remembering whether a line is left open."""
    text += end
    if verbosity >= level and text:
        _write(text)
        _open_line[0] = not text.endswith("\n")


def _end_open_line():
    if _open_line[0]:
        _write("\n")
        _open_line[0] = False


# svm_rank's -y sets the verbosity of the SVM-light code inside it.  From 1 on,
# SVM-light's reader and writer (svm_common.c: read_documents, read_model,
# write_model) print the lines below; those of its QP solver have no
# counterpart in rankfast.  They are printed once the step has succeeded.

def _svmlight_read_documents(n_documents):
    """read_documents' lines: a count every 100 examples, then the total."""
    counts = "".join(f"{k}.." for k in range(100, n_documents + 1, 100))
    return (f"Scanning examples...done\n"
            f"Reading examples into memory...{counts}OK. ({n_documents} examples read)\n")


def _svmlight_read_model(file):
    """read_model's line for a modelfile.ModelFile, or "" for rankfast's random Fourier models.

    A linear model has one support vector: the compacted "1 idx:w ..." line
    svm_rank_learn and rank_learn write.
    """
    if file.rff is not None:
        return ""
    return f"Reading model...OK. ({1 if file.kernel == 0 else len(file.alphas)} support vectors read)\n"


class _ReadProgress:
    """load_svmlight's progress callback: '<program>: reading <path>: N MB' on stderr.

    At verbosity >= 1, at most one line per ``interval`` seconds, the first
    one ``interval`` seconds after reading began: a small file prints nothing
    (svm_rank prints dots while it reads).
    """

    def __init__(self, program, path, verbosity, interval=1.0, clock=time.monotonic):
        self.program, self.path, self.verbosity = program, path, verbosity
        self.interval, self.clock = interval, clock
        self.last = clock()

    def __call__(self, bytes_read):
        now = self.clock()
        if self.verbosity >= 1 and now - self.last >= self.interval:
            self.last = now
            _say(f"{self.program}: reading {self.path}: {bytes_read / 1e6:.0f} MB")


def _split_query_note(program, path, qid):
    _note(program, f"{path}: the lines of qid {qid} are not contiguous; grouping each "
                   f"query's lines (svm_rank would stop here)")


def _no_documents(path):
    """An empty data file is an error: there is nothing to learn from or to evaluate."""
    return InputError(path, None, "no documents (the file is empty or holds only blank "
                                  "and comment lines)")


def _load(path, verbosity, program, svmlight_verbosity=0, group_path=None, n_jobs=None,
          dtype="float64"):
    from .data import load_svmlight
    dataset = load_svmlight(path, progress=_ReadProgress(program, path, verbosity), n_jobs=n_jobs,
                            dtype=dtype)
    if dataset.n_documents == 0:
        raise _no_documents(path)
    _progress(_svmlight_read_documents(dataset.n_documents), svmlight_verbosity, end="")
    qid = dataset.noncontiguous_qid()
    if qid is not None:
        _split_query_note(program, path, qid)
    dataset, note = _with_groups(dataset, path, group_path)
    _group_note(note, verbosity, program)
    return dataset


def _with_groups(dataset, path, group_path):
    """(dataset, note): the queries of a whole file, from its group file if it has no qids.

    ``group_path`` (--group) or ``path.query`` / ``path.group`` beside the data
    file holds one query size a line (LightGBM's / XGBoost's convention); the
    rule is rankfast.groups.QueryGroups', as for rank_classify's stream.  The
    note (or None) is for -v 1.
    """
    import dataclasses           # not at module level: rank_classify's stream never needs it

    import numpy as np
    from .groups import QueryGroups
    groups = QueryGroups(path, group_path)
    qid = groups.qid(np.ascontiguousarray(dataset.qid))
    note = groups.finish()
    if isinstance(qid, array.array):
        dataset = dataclasses.replace(dataset, qid=np.frombuffer(qid, dtype=np.int64))
    return dataset, note


def _group_note(note, verbosity, program):
    if note is not None and verbosity >= 1:
        _note(program, note)


# ---------------------------------------------------------------- rank_learn

def learn_main(argv=None):
    """``rank_learn``: run it on argv (default sys.argv[1:]); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    return _run("rank_learn", _learn, argv, _learn_help)


def learn_command():
    """The ``rank_learn`` program (console entry point): learn_main, then the process ends."""
    _end_process(learn_main())


def classify_command():
    """The ``rank_classify`` program (console entry point): classify_main, then the process ends."""
    _end_process(classify_main())


def _end_process(status):
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
    if _ClusterRun.interrupted:
        _ClusterRun.stop_workers()
    if _ClusterRun.interrupted or (getattr(atexit, "_ncallbacks", lambda: 1)() == 0
                                   and (threading is None or threading.active_count() == 1)):
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):      # gone: _write has reported it if it mattered
                pass
        os._exit(status)
    sys.exit(status)


def _learn(argv):
    options, given, positional = parse_args(argv, LEARN_OPTIONS, {}, 2, "rank_learn")
    _hold_threads(options.get("n_jobs"))               # before numpy is imported, if it is not
    from .learners import make_learner, model_notes
    if not positional:
        raise UsageError("not enough input parameters: rank_learn [options] example_file [model_file]")
    train_path = positional[0]
    model_path = positional[1] if len(positional) > 1 else "svm_struct_model"
    verbosity = options.get("verbosity", 1)
    svmlight_verbosity = options.get("svmlight_verbosity", 0)
    learner, notes = make_learner(options, given)
    for note in notes:
        if verbosity >= 1:
            _note("rank_learn", note)
    check_output(model_path)                      # before the work, not after it
    if "plot" in options:
        from . import plot
        plot.require_matplotlib()
        check_output(options["plot"])
    if _distributed(options):
        if options.get("normalize", "none") != "none":
            raise UsageError("--normalize is not available with --scheduler/--workers; "
                             "normalise the files first")
        for flag, name in (("--valid", "valid"), ("--weights", "weights")):
            if name in options:
                raise UsageError(f"{flag} is not available with --scheduler or --workers")
        return _learn_distributed(learner, train_path, model_path, options)
    _refuse_pattern(train_path)

    _progress("Reading training examples...", verbosity, end="")
    # Feature values as svm_rank holds them (floats): the same model inputs, 8 bytes a
    # value, and a value beyond float's range refused at its line.
    dataset = _load(train_path, verbosity, "rank_learn", svmlight_verbosity,
                    options.get("group"), options.get("n_jobs"), dtype="float32")
    _progress("done", verbosity)
    from .data import count_distinct
    n_queries = count_distinct(dataset.qid)       # the learners group each query's rows
    _progress(f"Training set properties: {dataset.n_features} features, {n_queries} rankings, "
              f"{dataset.n_documents} examples", verbosity, level=0)
    if verbosity >= 1 and options.get("normalize", "none") == "none":
        _scale_note(dataset.features)
    if "valid" in options and max(len(options.get("C", ())), len(options.get("gamma", ()))) > 1:
        learner = _validated_learner(options, given, verbosity, svmlight_verbosity)
    weights = {} if "weights" not in options else {
        "sample_weight": _query_weights(options["weights"], dataset.qid)}

    def log(text, level=1):
        _progress(text, verbosity, level)

    from .model import format_model
    start = time.process_time()
    try:
        learner.fit(dataset.features, dataset.y, dataset.qid, log=log, **weights)
        model = learner.to_model(n_features=dataset.n_features, n_documents=dataset.n_documents)
        text = format_model(model)
    except UsageError:
        raise                           # a ValueError too (errors.UsageError): exit 2
    except ValueError as exc:
        # The learners raise ValueError for data they cannot learn from (too
        # few queries to cross-validate, no document to draw landmarks from,
        # weights the model file cannot hold, numpy's and scipy's linear
        # algebra failing): a fault of the training file (or of its scale),
        # not of the command line.  The model is formatted here too, so that
        # whatever it cannot hold is reported the same way.
        raise InputError(train_path, None, _linear_algebra_reason(exc)) from None
    _progress(f"Runtime in cpu-seconds: {time.process_time() - start:.2f}", verbosity)
    _print_cv_table(learner, verbosity)
    for note in model_notes(model, dataset, options):
        if verbosity >= 1:
            _note("rank_learn", note)
    _progress("Writing learned model...", verbosity, end="")
    with atomic_output(model_path) as out:
        out.write(text)
        if "plot" in options:           # before the model is in place: a plot that cannot be
            from . import plot          # written (a full device) leaves no model either
            plot.save(plot.selection_figure(learner), options["plot"])
    _progress("Writing model file...done", svmlight_verbosity)
    _progress("done", verbosity)
    if "plot" in options:
        _progress(f"Wrote the plot to {options['plot']}", verbosity)
    return 0


SCALE_SPREAD_NOTE = 1e4      # features whose largest values differ by more: suggest --normalize


def _scale_note(features):
    """A note when the features' scales differ by more than SCALE_SPREAD_NOTE."""
    from .normalize import scale_spread
    spread = scale_spread(features)
    if spread > SCALE_SPREAD_NOTE:
        _note("rank_learn", f"the features' largest values differ by a factor of {spread:.2g}; "
                            f"--normalize query (per query, as LETOR), zscore or log may "
                            f"train a better model")
def _query_weights(path, qid):
    """--weights FILE as per-query weights of the training file's queries (InputError on FILE)."""
    from .base import query_sample_weights
    from .data import read_weight_file
    try:
        return query_sample_weights(read_weight_file(path), qid)
    except ValueError as exc:
        raise InputError(path, None, str(exc)) from None


def _validated_learner(options, given, verbosity, svmlight_verbosity):
    """The learner with --valid's file as its validation set (read after the training file)."""
    from .learners import make_learner
    from .model_selection import ValidationSet
    path = options["valid"]
    _refuse_pattern(path)
    _progress("Reading validation examples...", verbosity, end="")
    valid = _load(path, verbosity, "rank_learn", svmlight_verbosity, None,
                  options.get("n_jobs"), dtype="float32")
    _progress("done", verbosity)
    try:
        validation = ValidationSet(valid.features, valid.y, valid.qid, name=path)
    except ValueError as exc:
        raise InputError(path, None, str(exc)) from None
    return make_learner({**options, "validation": validation}, given)[0]


def _print_cv_table(learner, verbosity):
    """The cross-validation table of a learner given a grid (stdout, from -v 1)."""
    from .base import cv_result_of
    result = cv_result_of(learner)
    if result is not None:
        _progress(result.format(), verbosity, end="")


def _linear_algebra_reason(exc):
    """A learner's ValueError as the user should read it: numpy's and scipy's own words explained."""
    import numpy as np
    text = str(exc)
    if isinstance(exc, np.linalg.LinAlgError) or "must not contain infs or NaNs" in text:
        return (f"the linear algebra failed ({text.rstrip('.')}): the feature values or the "
                f"kernel values are too large for it; rescale the features, or use a smaller "
                f"-c or smaller kernel parameters")
    return text


def _distributed(options):
    """Whether --scheduler or --workers asks for a Dask cluster (not both)."""
    if "scheduler" in options and "workers" in options:
        raise UsageError("give --scheduler ADDRESS or --workers N, not both")
    distributed = "scheduler" in options or "workers" in options
    if distributed and "group" in options:
        raise UsageError("--group cannot be used with --scheduler or --workers (the workers "
                         "group their files' documents by qid)")
    return distributed


class _ClusterRun:
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
    be set, an interrupt leaving the block marks the run for _end_process,
    which does the same.  The cluster's and asyncio's log lines are silenced
    for the run, and the worker processes are started with standard error on
    os.devnull: a Ctrl-C sent to the process group would have each of them
    print its KeyboardInterrupt (a task's error reaches the driver, which
    reports it).
    """

    interrupted = False

    def __init__(self, program, options, workers):
        self.program, self.scheduler, self.workers = program, options.get("scheduler"), workers
        self.handlers, self.stderr = {}, None
        _ClusterRun.interrupted = False

    def __enter__(self):
        import logging

        from . import dask as cluster
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
            _ClusterRun.interrupted = isinstance(exc, KeyboardInterrupt)
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
                _ClusterRun.interrupted = True
                return False
            try:
                return self.manager.__exit__(kind, value, traceback)
            except KeyboardInterrupt:
                _ClusterRun.interrupted = True
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
        _ClusterRun.stop_workers()
        os._exit(128 + signum)

    @staticmethod
    def stop_workers():
        """Kill this process's worker processes (a local cluster's), at once."""
        multiprocessing = sys.modules.get("multiprocessing")
        if multiprocessing is None:
            return
        for child in multiprocessing.active_children():
            try:
                child.kill()
            except (OSError, ValueError, AttributeError):
                pass


def _local_workers(options, program, verbosity):
    """--workers N, at most the cores this process may run on (a note says so when N is more)."""
    workers = options.get("workers")
    if workers is None:
        return None
    from .dask import max_local_workers
    cores = max_local_workers()
    if workers > cores:
        if verbosity >= 1:
            _note(program, f"--workers {workers}: starting {cores} (the cores this process "
                           f"may run on; more would only compete for them)")
        workers = cores
    return workers


def _refuse_pattern(path):
    """A glob pattern naming no file is an error without a cluster (a literal name is read as is)."""
    if not any(c in path for c in "*?["):
        return                          # not a pattern (and glob stays unimported)
    import glob
    if glob.has_magic(path) and not os.path.exists(path):
        raise UsageError(f"{path!r}: a pattern of files needs --workers N or --scheduler ADDRESS")


def _learn_distributed(learner, train_path, model_path, options):
    """rank_learn --scheduler/--workers: train on a Dask cluster (rankfast.dask.fit)."""
    from . import dask as cluster
    from .model import format_model
    verbosity = options.get("verbosity", 1)
    cluster.check_learner(learner)

    def log(text, level=1):
        _progress(text, verbosity, level)

    with _ClusterRun("rank_learn", options,
                     _local_workers(options, "rank_learn", verbosity)) as client:
        _progress(f"Training on a Dask cluster ({len(client.scheduler_info()['workers'])} workers)",
                  verbosity)
        try:
            cluster.fit(learner, train_path, client, log=log)
            summary = learner.summary_
            model = learner.to_model(n_features=summary.n_features, n_documents=summary.n_documents)
            text = format_model(model)
        except UsageError:
            raise
        except ValueError as exc:                 # as in _learn
            raise InputError(train_path, None, _linear_algebra_reason(exc)) from None
    _progress(f"Training set properties: {summary.n_features} features, {summary.n_queries} "
              f"rankings, {summary.n_documents} examples", verbosity, level=0)
    _progress(f"Runtime in seconds (wall clock, cluster): {learner.fit_seconds_:.2f}", verbosity)
    _progress("Writing learned model...", verbosity, end="")
    with atomic_output(model_path) as out:
        out.write(text)
    _progress("done", verbosity)
    return 0


# ------------------------------------------------------------- rank_classify

def classify_main(argv=None):
    """``rank_classify``: run it on argv (default sys.argv[1:]); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    return _run("rank_classify", _classify, argv, CLASSIFY_HELP)


def _classify(argv):
    options, _, positional = parse_args(argv, CLASSIFY_OPTIONS, CLASSIFY_SWITCHES, 3,
                                        "rank_classify")
    _hold_threads(options.get("n_jobs"))
    if len(positional) < 2:
        raise UsageError("not enough input parameters: "
                         "rank_classify [options] example_file model_file [output_file]")
    test_path, model_path = positional[:2]
    output_path = positional[2] if len(positional) > 2 else "svm_predictions"
    check_output(output_path)                     # before the work, not after it
    distributed = _distributed(options)
    verbosity = options.get("verbosity", 2)
    svmlight_verbosity = options.get("svmlight_verbosity", 0)
    cutoffs = (_MetricSettings(options.get("ndcg_at", [10]), options.get("ndcg", "letor"))
               if options.get("metrics") else None)

    _progress("Reading model...", verbosity, end="")
    file = read_model_file(model_path)
    _progress(_svmlight_read_model(file), svmlight_verbosity, end="")
    _progress("done.", verbosity)
    normalize = file.metadata.get("normalize", "none")
    if normalize not in ("none", "zscore", "query", "log"):
        raise InputError(model_path, None, f"the model asks for normalize={normalize}, which "
                                           f"this rank_classify cannot apply (a newer rankfast?)")
    if distributed:
        if normalize in ("query", "log"):
            raise UsageError(f"a model trained with --normalize {normalize} is not available "
                             f"with --scheduler/--workers")
        from .model import model_of
        return _classify_distributed(model_of(file), test_path, output_path, options)
    _refuse_pattern(test_path)
    _progress("Reading test examples...", verbosity, end="")
    if normalize in ("query", "log"):
        n_documents, runtime, queries, note = _classify_normalized(
            file, normalize, test_path, output_path, verbosity, cutoffs, options.get("group"))
    elif file.kernel == 0 and file.rff is None:
        n_documents, runtime, queries, note = _classify_stream(
            file, test_path, output_path, verbosity, cutoffs,
            options.get("n_jobs"), options.get("group"))
    else:
        n_documents, runtime, queries, note = _classify_batch(
            file, test_path, output_path, verbosity, cutoffs, options.get("group"),
            options.get("n_jobs"))
    _progress(_svmlight_read_documents(n_documents), svmlight_verbosity, end="")
    if queries.split_qid is not None:
        _split_query_note("rank_classify", test_path, queries.split_qid)
    _progress("done.", verbosity)
    _group_note(note, verbosity, "rank_classify")       # after svm_rank's line, kept whole
    _progress("Classifying test examples...", verbosity, end="")
    _progress("done", verbosity)
    _progress(f"Runtime (without IO) in cpu-seconds: {runtime:.2f}", verbosity)
    _write(_summary_lines(queries.swapped, queries.pairs, verbosity))
    if cutoffs is not None:
        _write(_metrics_lines(queries.swapped, queries.pairs, queries.figures, cutoffs))
    return 0


def _linear_weights(file):
    """(feature ids, weights) of a linear model file, as rank_classify scores with them.

    One support vector (what svm_rank and rank_learn write): in compiled
    code, without numpy; several (SVM-light's own linear models): through
    rankfast.model's accumulation.
    """
    if len(file.alphas) == 1:
        return single_vector_weights(file.alphas[0], file.indices, file.values)
    from .model import model_of
    model = model_of(file)
    return model.feature_ids, model.weights


def _classify_stream(file, test_path, output_path, verbosity, cutoffs, n_jobs=1,
                     group_path=None):
    """Score the test file block by block, writing each block's predictions as it goes.

    Each block's rows are scored on n_jobs threads, fewer for a small block
    (resolve_n_jobs); the scores are the same for any number.
    A file without qids is grouped by its group file as the rows go by
    (rankfast.groups.QueryGroups); its errors leave no output.  Returns
    (documents, runtime, _QueryFigures, the group file's note or None).

    Memory: one block of documents, the current query's scores and labels,
    and per-query figures (see _QueryFigures).
    """
    from .groups import QueryGroups
    from .reader import iter_svmlight
    ids, weights = _linear_weights(file)
    groups = QueryGroups(test_path, group_path)
    queries = _QueryFigures(cutoffs, keep_documents=not _rereadable(test_path))
    runtime = 0.0
    n_documents = 0
    scores = array.array("d")
    with atomic_output(output_path, "wb") as out:
        for block in iter_svmlight(test_path, progress=_ReadProgress("rank_classify", test_path,
                                                                     verbosity)):
            n = len(block)
            if len(scores) < n:
                scores = array.array("d", bytes(8 * n))
            start = time.process_time()
            linear_scores_rows(block.indptr, block.indices, block.values, ids, weights,
                               file.bias, memoryview(scores)[:n],
                               resolve_n_jobs(n_jobs, len(block.values)))
            runtime += time.process_time() - start
            out.write(format_scores(memoryview(scores)[:n]))
            by = groups.qid(block.qid)
            if groups.regrouped:
                queries.regroup()
            queries.add(memoryview(scores)[:n], block.y, block.qid, by)
            n_documents += n
        if n_documents == 0:
            raise _no_documents(test_path)
        note = groups.finish()
        queries.finish(lambda: _rescored(file, test_path, n_jobs))
    return n_documents, runtime, queries, note


def _classify_normalized(file, kind, test_path, output_path, verbosity, cutoffs,
                         group_path=None):
    """Score a model trained with --normalize query or log, one query at a time.

    Returns what _classify_stream returns.  Memory: one block of documents and
    the current query's rows (``query`` normalises each contiguous run of a
    query id, or of a group file's group, over its rows).
    """
    import numpy as np
    from .groups import QueryGroups
    from .normalize import normalized_scores
    from .reader import iter_svmlight
    ids, weights = _linear_weights(file)
    ids, weights = np.asarray(ids, dtype=np.int64), np.asarray(weights, dtype=np.float64)
    groups = QueryGroups(test_path, group_path)
    queries = _QueryFigures(cutoffs, keep_documents=not _rereadable(test_path))
    runtime, n_documents = 0.0, 0
    pending = None              # (lengths, indices, values, y, qid, by) of the open query

    def score(part):
        lengths, indices, values, y, qid, by = part
        indptr = np.concatenate(([0], np.cumsum(lengths)))
        return normalized_scores(indptr, indices, values, ids, weights, file.bias, kind), part

    def emit(scored, out):
        scores, (_, _, _, y, qid, by) = scored
        scores = np.ascontiguousarray(scores)
        out.write(format_scores(scores))
        queries.add(scores, y, qid, by)

    with atomic_output(output_path, "wb") as out:
        for block in iter_svmlight(test_path, progress=_ReadProgress("rank_classify", test_path,
                                                                     verbosity)):
            n = len(block)
            indptr = np.asarray(block.indptr)[:n + 1]
            by = groups.qid(block.qid)
            if groups.regrouped:
                queries.regroup()
            key = np.asarray(block.qid if by is None else by).copy()
            part = (np.diff(indptr), np.asarray(block.indices)[:indptr[-1]].copy(),
                    np.asarray(block.values)[:indptr[-1]].copy(), np.asarray(block.y).copy(),
                    np.asarray(block.qid).copy(), None if by is None else key)
            start = time.process_time()
            runs = np.flatnonzero(np.diff(key)) + 1 if kind == "query" else np.array([], int)
            cuts = np.concatenate(([0], runs, [n]))
            for a, b in zip(cuts[:-1], cuts[1:]):
                piece = _rows_of(part, a, b)
                if pending is not None and a == 0 and kind == "query" and _same_query(pending, piece):
                    piece = _joined(pending, piece)
                elif pending is not None:
                    emit(score(pending), out)
                pending = piece
            runtime += time.process_time() - start
            n_documents += n
        if pending is not None:
            emit(score(pending), out)
        if n_documents == 0:
            raise _no_documents(test_path)
        note = groups.finish()
        queries.finish(lambda: _rescored(file, test_path))
    return n_documents, runtime, queries, note


def _rows_of(part, a, b):
    import numpy as np
    lengths, indices, values, y, qid, by = part
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    lo, hi = offsets[a], offsets[b]
    return (lengths[a:b], indices[lo:hi], values[lo:hi], y[a:b], qid[a:b],
            None if by is None else by[a:b])


def _same_query(first, second):
    key_first = first[4] if first[5] is None else first[5]
    key_second = second[4] if second[5] is None else second[5]
    return len(key_first) and len(key_second) and key_first[-1] == key_second[0]


def _joined(first, second):
    import numpy as np
    return tuple(None if a is None else np.concatenate((a, b)) for a, b in zip(first, second))


def _classify_batch(file, test_path, output_path, verbosity, cutoffs, group_path=None,
                    n_jobs=None):
    """Kernel and random Fourier models: read the whole test file, then score it.

    Returns what _classify_stream returns.
    """
    from .data import load_svmlight
    from .model import model_of
    model = model_of(file)
    dataset = load_svmlight(test_path, progress=_ReadProgress("rank_classify", test_path,
                                                              verbosity), n_jobs=n_jobs)
    if dataset.n_documents == 0:
        raise _no_documents(test_path)
    dataset, note = _with_groups(dataset, test_path, group_path)
    start = time.process_time()
    scores = model.predict(dataset.features)
    runtime = time.process_time() - start
    with atomic_output(output_path) as out:
        write_predictions(scores, out)
    queries = _QueryFigures(cutoffs, keep_documents=True)
    queries.add(scores, dataset.y, dataset.qid)
    queries.finish(None)
    return dataset.n_documents, runtime, queries, note


def _rereadable(path):
    return path != "-" and os.path.isfile(path)


def _rescored(file, path, n_jobs=None):
    """(scores, labels, qid) of a whole test file, read again (non-contiguous queries)."""
    from .data import load_svmlight
    from .model import model_of
    dataset = load_svmlight(path, n_jobs=n_jobs)
    return model_of(file).predict(dataset.features, dataset.qid), dataset.y, dataset.qid


class _QueryFigures:
    """Per-query figures of a stream of scored documents: swapped pairs (and --metrics' figures).

    Runs of documents with equal qid are gathered (a run may span blocks);
    finished runs are evaluated in batches and only their per-query figures
    are kept, so memory grows with the number of queries, not of documents.
    Swapped pairs are counted by _swapped.count_swapped_runs (no numpy);
    --metrics evaluates each batch with rankfast.metrics.  A qid whose lines
    come back after another query's (not contiguous) needs its documents
    together: at finish(), the figures are computed again by rankfast.metrics
    from ``rescore()`` (the file read a second time) or, for an input that
    cannot be read twice (a pipe), from the documents kept on the way
    (``keep_documents``: 24 bytes a document).  The same happens after
    regroup(): rows were gathered by group numbers that the file's qids,
    seen later, overrule (rankfast.groups.QueryGroups.regrouped).
    """

    BATCH = 1 << 16

    def __init__(self, cutoffs, keep_documents):
        self.cutoffs = cutoffs
        self.kept = (array.array("d"), array.array("d"), array.array("q")) if keep_documents else None
        self.seen = set()
        self.split_qid = None
        self.regrouped = False
        self.current = None                         # qid of the run being gathered
        self.batch = (array.array("d"), array.array("d"), array.array("q"))
        self.starts = array.array("q", [0])          # run starts within the batch
        self.swapped, self.pairs = array.array("q"), array.array("q")
        self.figures = {}                           # --metrics: per-query figures by name

    def add(self, scores, labels, qid, by=None):
        """Documents in file order (any buffers of float64, float64, int64).

        ``by`` (int64): the query numbers to gather them by instead of ``qid``.
        """
        scores, labels, qid = (memoryview(_contiguous(a)) for a in (scores, labels, qid))
        if self.kept is not None:
            for kept, new in zip(self.kept, (scores, labels, qid)):
                kept.frombytes(new.cast("B"))
        if self.split_qid is not None or self.regrouped:
            return
        qid = qid if by is None else memoryview(_contiguous(by))
        from ._swapped import run_starts
        starts = array.array("q", bytes(8 * len(qid)))
        begin = 0
        for i in starts[:run_starts(qid, starts)]:
            q = qid[i]
            if q != self.current:
                self._append(scores, labels, qid, begin, i)
                begin = i
                self._close_run()
                if q in self.seen:
                    self.split_qid = q
                    return
                self.seen.add(q)
                self.current = q
        self._append(scores, labels, qid, begin, len(qid))

    def _append(self, scores, labels, qid, begin, end):
        for batch, new in zip(self.batch, (scores, labels, qid)):
            batch.frombytes(new[begin:end].cast("B"))

    def _close_run(self):
        if len(self.batch[0]) > self.starts[-1]:
            self.starts.append(len(self.batch[0]))
            if len(self.batch[0]) >= self.BATCH:
                self._evaluate()

    def _evaluate(self):
        """Figures of the finished runs in the batch; the batch is emptied."""
        runs = len(self.starts) - 1
        if runs == 0:
            return
        scores, labels, qid = self.batch
        if self.cutoffs is None:
            from ._swapped import count_swapped_runs
            swapped = array.array("q", bytes(8 * runs))
            pairs = array.array("q", bytes(8 * runs))
            count_swapped_runs(scores, labels, self.starts, swapped, pairs)
            self._keep(swapped, pairs)
        else:
            self._keep(*_figures(scores, labels, qid, self.cutoffs))
        self.batch = (array.array("d"), array.array("d"), array.array("q"))
        self.starts = array.array("q", [0])

    def _keep(self, swapped, pairs, figures=None):
        self.swapped.extend(int(v) for v in swapped)
        self.pairs.extend(int(v) for v in pairs)
        for name, new in (figures or {}).items():
            self.figures.setdefault(name, []).extend(new.tolist())

    def regroup(self):
        """Forget the figures: finish() computes them again from the file's qids."""
        self.regrouped = True

    def finish(self, rescore):
        """Evaluate what is left; recompute everything if a query was not contiguous."""
        if self.split_qid is None and not self.regrouped:
            self._close_run()
            self._evaluate()
            return
        if self.kept is not None:
            scores, labels, qid = self.kept
        else:
            scores, labels, qid = rescore()
        if self.regrouped:
            from .data import noncontiguous_qid
            self.split_qid = noncontiguous_qid(qid)
        self.swapped, self.pairs = array.array("q"), array.array("q")
        self.figures = {}
        self._keep(*_figures(scores, labels, qid, self.cutoffs))


def _contiguous(values):
    """values as a C-contiguous buffer of its own type (numpy arrays may be strided)."""
    if isinstance(values, (array.array, memoryview)):
        return values
    import numpy as np
    return np.ascontiguousarray(values)


# rank_classify --metrics: the cut-offs (--ndcg-at) and the NDCG convention (--ndcg).
# (collections.namedtuple, not typing.NamedTuple: typing costs 4 ms to import.)
_MetricSettings = collections.namedtuple("_MetricSettings", "cutoffs convention")


def _figures(scores, labels, qid, cutoffs):
    """(swapped, pairs[, figures]), queries in first-seen order.

    With --metrics settings (``cutoffs``, a _MetricSettings), figures by name,
    each an array: per query "ndcg@k", "p@k" (every cut-off k), "ap", "rr";
    ERR@k needs the whole file's highest label, so "top@k" holds each query's
    k best-scored labels in ranked order ("count@k" how many) and "grade" the
    highest label of these documents, for _metrics_lines to finish.
    """
    import numpy as np

    from . import metrics
    scores, labels, qid = np.asarray(scores), np.asarray(labels), np.asarray(qid)
    swapped, pairs = metrics.swapped_pairs(scores, labels, qid)
    if cutoffs is None:
        return swapped, pairs
    figures = {"ap": metrics.mean_average_precision(scores, labels, qid, per_query=True),
               "rr": metrics.reciprocal_rank(scores, labels, qid, per_query=True),
               "grade": np.array([np.max(labels, initial=0.0)])}
    for k in cutoffs.cutoffs:
        figures[f"ndcg@{k}"] = metrics.ndcg(scores, labels, qid, k=k, per_query=True,
                                            convention=cutoffs.convention)
        figures[f"p@{k}"] = metrics.precision_at(scores, labels, qid, k=k, per_query=True)
        top, starts = metrics.top_labels(scores, labels, qid, k)
        figures[f"top@{k}"], figures[f"count@{k}"] = top, np.diff(starts)
    return swapped, pairs, figures


def _classify_distributed(model, test_path, output_path, options):
    """rank_classify --scheduler/--workers: files scored on a Dask cluster, in sorted file order."""
    from . import dask as cluster
    verbosity = options.get("verbosity", 2)
    _progress("Classifying test examples on the cluster...", verbosity, end="")
    with _ClusterRun("rank_classify", options,
                     _local_workers(options, "rank_classify", verbosity)) as client:
        scores, labels, qid = cluster.predict(model, test_path, client)
    with atomic_output(output_path) as out:
        write_predictions(scores, out)
    _progress("done", verbosity)
    _write(classify_summary(scores, labels, qid, verbosity))
    if options.get("metrics"):
        _write(metrics_report(scores, labels, qid, options.get("ndcg_at", [10]),
                              options.get("ndcg", "letor")))
    return 0


def write_predictions(scores, out, chunk=1 << 16):
    """One score per line in svm_rank's '%.8f' format."""
    import numpy as np
    for start in range(0, len(scores), chunk):
        out.write(format_scores(np.ascontiguousarray(scores[start:start + chunk],
                                                     dtype=np.float64)).decode("ascii"))


def _c_float(value, spec):
    """printf-like formatting that prints nan as glibc does for 0.0/0 ('-nan')."""
    if value != value:
        width = int(spec.split(".")[0] or 0)
        return "-nan".rjust(width)
    return ("%" + spec + "f") % value


def _float32(value):
    """value rounded to float32 (svm_rank keeps these figures in floats)."""
    return array.array("f", [value])[0]


def classify_summary(scores, labels, qid, verbosity=2):
    """svm_rank_classify's summary lines for these scores."""
    return _summary_lines(*_figures(scores, labels, qid, None), verbosity)


def _summary_lines(swapped, pairs, verbosity=2):
    """svm_rank_classify's summary lines from per-query swapped and total pair counts."""
    fractions = [s / p if p > 0 else 0.0 for s, p in zip(swapped, pairs)]
    n = len(fractions)
    total = 0.0
    for fraction in fractions:                # in query order, as svm_rank_classify sums
        total += fraction
    incorrect = sum(1 for fraction in fractions if fraction > 0)
    avgloss = _float32(total / n) if n else float("nan")
    zero_one = _float32(100.0 * incorrect / n) if n else float("nan")
    percent = 100.0 * total / n if n else float("nan")
    lines = []
    if verbosity >= 1:
        lines.append(f"Average loss on test set: {_c_float(avgloss, '.4')}\n")
        lines.append(f"Zero/one-error on test set: {_c_float(zero_one, '.2')}% "
                     f"({n - incorrect} correct, {incorrect} incorrect, {n} total)\n")
    lines.append(NOTE_BLOCK)
    lines.append(f"Total Num Swappedpairs  : {_c_float(float(sum(swapped)), '6.0')}\n")
    lines.append(f"Avg Swappedpairs Percent: {_c_float(percent, '6.2')}\n")
    return "".join(lines)


def metrics_report(scores, labels, qid, cutoffs=(10,), convention="letor"):
    """rankfast's extra evaluation lines (--metrics); NDCG labelled with its convention."""
    settings = _MetricSettings(list(cutoffs), convention)
    return _metrics_lines(*_figures(scores, labels, qid, settings), settings)


def _metrics_lines(swapped, pairs, figures, settings):
    """NDCG@k (its convention named), ERR@k, P@k, MAP, MRR, pair accuracy from per-query figures."""
    import numpy as np

    from . import metrics

    def mean(values):
        values = np.asarray(values, dtype=np.float64)
        return float(values.mean()) if len(values) else float("nan")
    total = int(sum(int(p) for p in pairs))
    accuracy = 1.0 - int(sum(int(s) for s in swapped)) / total if total else float("nan")
    name = metrics.ndcg_label(settings.convention)
    grade = max(max(figures.get("grade", ()), default=0.0), 0.0)     # ERR's g_max: the file's
    lines = [f"NDCG@{k} ({name}): {mean(figures.get(f'ndcg@{k}', ())):.4f}\n"
             for k in settings.cutoffs]
    for k in settings.cutoffs:
        starts = np.concatenate(([0], np.cumsum(figures.get(f"count@{k}", ()), dtype=np.int64)))
        err = metrics.err_of_ranked(figures.get(f"top@{k}", ()), starts, grade)
        lines.append(f"ERR@{k}: {mean(err):.4f}\n")
    lines += [f"P@{k}: {mean(figures.get(f'p@{k}', ())):.4f}\n" for k in settings.cutoffs]
    lines.append(f"MAP: {mean(figures.get('ap', ())):.4f}\n")
    lines.append(f"MRR: {mean(figures.get('rr', ())):.4f}\n")
    lines.append(f"Pairwise accuracy: {accuracy:.4f}\n")
    return "".join(lines)
