"""``svm_proprank_learn`` and ``rank_simulate_clicks``: learning from clicks on the command line.

``svm_proprank_learn`` is rank_learn as Propensity SVM-rank: svm_rank's
objective (``-a svmrank``) on the clicks of svm_proprank's training file,
each weighing its ``cost:`` (``--clicks``); every rank_learn flag works.
``rank_simulate_clicks`` makes such a file from any labelled SVMlight file and
a logging ranker's model (rankfast.clicks.simulate).
"""
from __future__ import annotations

import sys

from .. import __version__
from ..errors import InputError, UsageError
from .data import load_dataset, refuse_pattern
from .options import _at_least, _between, _number, _propensity_clip, parse_args
from .output import progress, run

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

SIMULATE_HELP = f"""rank_simulate_clicks {__version__}: clicks of a logging ranker's users, as
svm_proprank's training file (Joachims, Swaminathan & Schnabel 2017, §6)

   usage: rank_simulate_clicks [options] labelled_file logging_model click_file

Arguments:
         labelled_file -> SVMlight file with relevance labels and qids
         logging_model -> model file of the ranker that ordered the results
                          (rank_learn's or svm_rank_learn's, linear)
         click_file    -> the click log written: per clicked document a query
                          of its own, the click with target 1 and cost: its
                          inverse propensity, the other documents with target 0
Options:
         -n int        -> sessions, each on a query drawn uniformly (default 10000)
         --eta float   -> examination p(rank) = (1/rank)^eta (default 1)
         --eps-plus float, --eps-minus float
                       -> click probability of an examined relevant /
                          non-relevant result (default 1 and 0.1)
         --relevant float
                       -> a label at least this is relevant (default 1)
         --top-k int   -> results shown per session (default: all)
         --weights-eta float
                       -> eta of the propensities written as cost: (default
                          --eta; 0: every click weighs 1, the naive log)
         --clip float  -> a floor on the propensity written, in (0, 1]
         --raw         -> one query per click (default: the clicks on one
                          document summed into one query, scaled so that
                          svm_proprank's objective at any -c is the same)
         --seed int    -> seed of the simulation (default 0)
         -v [0..1]     -> verbosity (default 1)
"""


def check_click_source(test_path: str, distributed: bool) -> None:
    """rank_classify --clicks reads its file a second time, in one process (UsageError)."""
    if distributed:
        raise UsageError("--clicks is not available with --scheduler or --workers")
    if test_path == "-":
        raise UsageError("--clicks reads the click log twice: give a file, not standard input")


def read_click_log(test_path: str, group_path: Any = None) -> tuple[Any, Any]:
    """rank_classify --clicks: (the click log at test_path, each document's weight), read
    and checked as rank_learn --clicks checks it (before any output is written)."""
    from ..clicks.log import click_weights
    from ..io.svmlight import load_svmlight
    from .data import check_click_log, no_documents_error, with_groups
    data = load_svmlight(test_path, costs=True)
    if data.n_documents == 0:
        raise no_documents_error(test_path)
    check_click_log(data, test_path, group_path)
    data, _ = with_groups(data, test_path, group_path)
    weight, _ = click_weights(data, check_queries=False)   # InputError at a bad click's line
    return data, weight


# svm_proprank_classify's last line: the SNIPS estimate of the clicked documents' 0-based rank.
SNIPS_LINE = ("Avg Rank of Positive Examples: {:6.2f} "
              "(via SNIPS Estimator [Swaminathan & Joachims, 2015d])\n")


def click_estimates(log: Any, weight: Any, model_path: str) -> tuple[str, str]:
    """rank_classify --clicks: (svm_proprank's SNIPS line, rankfast's line) of the model's
    counterfactual figures on the click log and weights read by read_click_log.

    svm_proprank's figure is the clicks' cost-weighted mean of the number of other documents
    of their query scored at or above them (ties count against the click), over the sum of
    the costs; rankfast's average rank is the same plus 1 (1 = top), beside the DCG."""
    import numpy as np

    from ..clicks.evaluate import counterfactual_metrics
    from ..io.model_files import read_model
    scores = read_model(model_path).predict(log.features, log.qid)
    try:
        figures = counterfactual_metrics(scores, log.y, log.qid, weight)
    except ValueError as exc:
        raise InputError(log.path, None, str(exc)) from None
    clicks = int(np.count_nonzero(log.y > 0))
    own = (f"Counterfactual estimates over {clicks} clicked documents (each weighing its "
           f"cost:): average rank of the relevant results {figures.average_rank:.4f}, DCG per "
           f"relevant result {figures.dcg:.4f}\n")
    return SNIPS_LINE.format(figures.average_rank - 1.0), own


def simulate_main(argv: Any = None) -> int:
    """``rank_simulate_clicks`` on argv (default sys.argv[1:]); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    return run("rank_simulate_clicks", _simulate, argv, SIMULATE_HELP)


def _probability(text, flag):
    value = _number(text, float, flag)
    if not 0 <= value <= 1:
        raise UsageError(f"{flag} must be a probability in [0, 1] (got {text})")
    return value


def _non_negative(text, flag):
    value = _number(text, float, flag)
    if value < 0:
        raise UsageError(f"{flag} must be at least 0 (got {text})")
    return value


SIMULATE_OPTIONS = {
    "-n": ("sessions", _between(0, 2**62)), "--eta": ("eta", _non_negative),
    "--eps-plus": ("eps_plus", _probability), "--eps-minus": ("eps_minus", _probability),
    "--relevant": ("relevant", lambda t, f: _number(t, float, f)),
    "--top-k": ("top_k", _at_least(1)), "--weights-eta": ("weights_eta", _non_negative),
    "--clip": ("clip", _propensity_clip), "--seed": ("seed", _between(0, 2**32 - 1)),
    "-v": ("verbosity", _between(0, 1)),
}


def _simulate(argv):
    options, _, positional = parse_args(argv, SIMULATE_OPTIONS, {"--raw": "raw"}, 3,
                                        "rank_simulate_clicks")
    if len(positional) < 3:
        raise UsageError("not enough input parameters: rank_simulate_clicks [options] "
                         "labelled_file logging_model click_file")
    data_path, model_path, out_path = positional
    refuse_pattern(data_path)
    verbosity = options.get("verbosity", 1)
    from ..clicks.simulate import simulate_clicks, write_click_file
    from ..io.files import check_output
    from ..io.model_files import read_model
    check_output(out_path, (data_path, model_path))
    model = read_model(model_path)
    dataset = load_dataset(data_path, verbosity, "rank_simulate_clicks")
    scores = model.predict(dataset.features, dataset.qid)
    log = simulate_clicks(scores, dataset.y, dataset.qid, options.get("sessions", 10000),
                          options.get("eta", 1.0), options.get("eps_plus", 1.0),
                          options.get("eps_minus", 0.1), options.get("top_k"),
                          options.get("relevant", 1.0), options.get("seed", 0))
    if log.n_clicks == 0:
        raise InputError(data_path, None, f"{log.n_sessions} sessions gave no click: simulate "
                                          f"more sessions (-n) or check --relevant")
    try:
        written = write_click_file(out_path, dataset.features, dataset.qid, log,
                                   options.get("weights_eta"), options.get("clip"),
                                   aggregate=not options.get("raw", False))
    except ValueError as exc:         # propensities that underflow to 0 without --clip
        raise UsageError(f"--weights-eta {options.get('weights_eta')}: {exc}") from None
    progress(f"{log.n_sessions} sessions, {log.n_clicks} clicks on {len(set(log.row.tolist()))} "
             f"documents: {written} click queries written to {out_path}", verbosity)
    return 0
