"""The programs' option grammar: svm_rank's flags, each value's check, and the parser.

``rank_learn``, ``rank_classify`` and ``rank_export`` read their command lines
here: a flag and its value as two words anywhere on the line (or attached to a
one-letter flag, ``-c3``), numbers in the data files' strict grammar, and a
UsageError (exit status 2) naming the flag for any value out of range.
"""
from __future__ import annotations

import math

from ..errors import UsageError

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

GROUP_HELP = """Queries of a file without qids:
         --group FILE -> query sizes, one a line (LightGBM / XGBoost); by default
                        example_file.query or example_file.group if one exists
                        (for F.gz, .bz2, .xz also F.query, F.group); with
                        neither, the whole file is one ranking
"""


#: The flag of each parameter that the library's messages name in quotes ('C', 'loss', ...):
#: the library speaks its parameters, the programs add their flags (in_flags).
PARAMETER_FLAGS = {"C": "-c", "loss": "-l", "tol": "-e", "max_iter": "-#", "k": "-k",
                   "gamma": "-g", "normalize": "--normalize", "erfc": "--erfc",
                   "erfc_eps": "--erfc-eps", "landmarks": "--landmarks", "approx": "--approx",
                   "format": "--format"}


def in_flags(text: str) -> str:
    """A library message in the programs' words: each quoted parameter ('C', or 'C' = 0.5)
    becomes its flag (-c, or -c 0.5)."""
    if "'" not in text:
        return text
    for name, flag in PARAMETER_FLAGS.items():
        text = text.replace(f"'{name}' = ", f"{flag} ").replace(f"'{name}'", flag)
    return text


def _positive_float(text, flag):
    value = _number(text, float, flag)
    if not value > 0:
        raise UsageError(f"{flag} must be greater than zero (got {text})")
    return value


def _number(text, kind, flag):
    """An option's number, read with the data files' grammar (rankfast._kernels._svmlight).

    Integers are [+-]digits within ±(2**63 - 1); numbers are strtod's decimal
    forms, finite.  Python's int() and float() would also take '1_0', other
    scripts' digits ('٣') and surrounding blanks, and int() refuses more
    than 4300 digits with a ValueError of its own.
    """
    from .._kernels import _svmlight
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


def any_text(text: str, flag: str) -> str:
    return text


def one_of_words(*allowed: Any) -> Any:
    def check(text, flag):
        if text not in allowed:
            raise UsageError(f"{flag} must be {' or '.join(allowed)} (got {text!r})")
        return text
    return check


def _folds(text, flag):
    return "loqo" if text == "loqo" else _at_least(2)(text, flag)


def _cv_metric(text, flag):
    from ..model_selection import Metric
    try:
        return Metric.parse(text).key
    except UsageError:
        raise UsageError(f"{flag} must be ndcg@k, map, err@k or pairs (got {text!r})") from None


def _plot_file(text, flag):
    from ..plot import plot_format
    plot_format(text)
    return text


def _propensity_clip(text, flag):
    value = _number(text, float, flag)
    if not 0 < value <= 1:
        raise UsageError(f"{flag} is a floor on the propensity, in (0, 1] (got {text})")
    return value


LEARN_OPTIONS = {
    "-c": ("C", _c_list), "-e": ("epsilon", _positive_float), "-l": ("loss", _choice((1, 2))),
    "-p": ("slack_norm", _choice((1, 2))), "-o": ("rescaling", _choice((1, 2))),
    "-w": ("qp_algorithm", _choice((0, 1, 2, 3, 4, 9))), "-k": ("k", _k_value),
    "-f": ("qp_cache", _at_least(1)), "-b": ("qp_refresh", _at_least(1)),
    "-n": ("qp_new", _at_least(1)), "-q": ("qp_size", _at_least(2)),
    "-m": ("qp_memory", _at_least(1)), "-h": ("qp_shrink", _at_least(1)),
    "-#": ("max_iter", _at_least(1)), "-t": ("kernel", _choice((0, 1, 2, 3, 4))),
    "-d": ("degree", lambda t, f: _number(t, int, f)),
    "-g": ("gamma", lambda t, f: ["auto"] if t == "auto" else
           [_number(part, float, f) for part in t.split(",")]),
    "-s": ("coef_lin", lambda t, f: _number(t, float, f)),
    "-r": ("coef_const", lambda t, f: _number(t, float, f)), "-u": ("custom", any_text),
    "-v": ("verbosity", _choice((0, 1, 2, 3))), "-y": ("svmlight_verbosity", _choice((0, 1, 2, 3))),
    "-a": ("algorithm", any_text),
    "--approx": ("approx", any_text), "--landmarks": ("landmarks", _at_least(1)),
    "--seed": ("seed", _between(0, 2**32 - 1)),       # numpy's seeds are non-negative
    "--erfc": ("erfc", any_text), "--erfc-eps": ("erfc_eps", _positive_float),
    "--folds": ("folds", _folds), "--cv-metric": ("cv_metric", _cv_metric),
    "--valid": ("valid", any_text), "--weights": ("weights", any_text),
    "--cv-rule": ("cv_rule", one_of_words("best", "1se")),
    "--ndcg": ("ndcg", one_of_words("letor", "standard")),
    "--plot": ("plot", _plot_file),
    "-j": ("n_jobs", _at_least(0)), "--threads": ("n_jobs", _at_least(0)),
    "--group": ("group", any_text),
    "--scheduler": ("scheduler", any_text), "--workers": ("workers", _at_least(1)),
    "--normalize": ("normalize", one_of_words("none", "query", "zscore", "log")),
    "--clip": ("clip", _propensity_clip),
}


LEARN_SWITCHES = {"--clicks": "clicks"}


CLASSIFY_OPTIONS = {
    "-v": ("verbosity", _choice((0, 1, 2, 3))), "-y": ("svmlight_verbosity", _choice((0, 1, 2, 3))),
    "--ndcg-at": ("ndcg_at", lambda t, f: [_at_least(1)(part, f) for part in t.split(",")]),
    "--ndcg": ("ndcg", one_of_words("letor", "standard")),
    "-j": ("n_jobs", _at_least(0)), "--threads": ("n_jobs", _at_least(0)),
    "--group": ("group", any_text),
    "--scheduler": ("scheduler", any_text), "--workers": ("workers", _at_least(1)),
}


CLASSIFY_SWITCHES = {"--metrics": "metrics", "--clicks": "clicks"}


def parse_args(argv: list[str], table: dict[str, Any], switches: dict[str, str], max_positional: int,
               program: str) -> tuple[dict[str, Any], list[str], list[str]]:
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
            raise HelpRequested()
        if word == "--version":
            raise VersionRequested()
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


class HelpRequested(Exception):
    pass


class VersionRequested(Exception):
    pass


def cluster_requested(options: dict[str, Any]) -> bool:
    """Whether --scheduler or --workers asks for a Dask cluster (not both)."""
    if "scheduler" in options and "workers" in options:
        raise UsageError("give --scheduler ADDRESS or --workers N, not both")
    distributed = "scheduler" in options or "workers" in options
    if distributed and "group" in options:
        raise UsageError("--group cannot be used with --scheduler or --workers (the workers "
                         "group their files' documents by qid)")
    return distributed
