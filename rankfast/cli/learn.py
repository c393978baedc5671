"""``rank_learn``: svm_rank_learn's command line, a learner fitted, its model file written."""
from __future__ import annotations

import sys
import time

from .. import __version__
from ..errors import InputError, UsageError
from ..io.files import atomic_output, check_output
from .data import load_dataset, local_workers, refuse_pattern
from .options import (
    GROUP_HELP,
    LEARN_OPTIONS,
    LEARN_SWITCHES,
    cluster_requested,
    in_flags,
    parse_args,
)
from .output import ClusterRun, hold_threads, print_note, progress, run

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

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
         -g auto     -> with -t 2: gamma by the median heuristic, 1 / the
                        median ||a-b||^2 of 256 training documents (seeded by
                        --seed), normalised as --normalize says; printed and
                        written in the model (-g 1, svm_rank's default, is
                        kept when -g is not given)
         --normalize none|query|zscore|log
                     -> normalise the features before training (default
                        none, as svm_rank): query = per query and feature
                        (x-min)/(max-min) as LETOR's QueryLevelNorm, applied
                        again by rank_classify (not by svm_rank_classify);
                        zscore = each feature / its standard deviation
                        over the training documents: with -t 0 folded into
                        the weights (a plain svm_rank model); with -t 1, 2,
                        3 recorded in the model (scale=) and applied by
                        rank_classify (not by svm_rank_classify);
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
         --clicks    -> learn from clicks, svm_proprank's training file: a
                        line's cost: is its click's weight (inverse
                        propensity); each pair weighs its preferred
                        document's cost; -c is svm_proprank's (the loss
                        times C / queries times the cost). Without
                        --clicks cost: is read and ignored, as svm_rank
                        does. -a svmrank --clicks is svm_proprank_learn
         --clip float
                     -> with --clicks: a floor on the propensity in (0, 1]:
                        no line's cost: counts more than 1/float (clip a
                        file of summed clicks when simulating it)
                        (with --clicks, a --valid FILE is a click log too:
                        its NDCG is the inverse-propensity estimate of DCG)
         --plot FILE.png|FILE.svg
                     -> draw the CV curve, rankrls's regularisation path or
                        greedy's selection (needs matplotlib: rankfast[plot])
{group_help}svm_rank's QP solver options -w [0..4,9] -f -b -n -q -m -h int, and -k with
a learner other than greedy, are accepted, checked and ignored.
Distributed training ({on_shards}; needs rankfast[dask]):
         --scheduler ADDRESS -> train on the Dask cluster at ADDRESS
         --workers N -> train on a new local cluster of N worker processes
                        With either, example_file may be a quoted glob
                        ('train-*.dat'): each worker reads its own files
                        (click logs too, with --clicks and --clip).
"""


def _learn_help():
    from ..learners import registry
    on_shards = [entry.name for entry in registry.learners() if entry.distributed]
    return LEARN_HELP.format(version=__version__, learners=", ".join(registry.names()),
                             on_shards=", ".join(on_shards), group_help=GROUP_HELP)


def learn_main(argv: Any = None) -> int:
    """``rank_learn``: run it on argv (default sys.argv[1:]); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    return run("rank_learn", _learn, argv, _learn_help)


PROPRANK_DEFAULTS = {"algorithm": "svmrank", "clicks": True, "fallback_algorithm": "svmrank"}

PROPRANK_HEADER = """svm_proprank_learn {version}: learning from clicks, a drop-in for Propensity
SVM-rank's svm_proprank_learn (Joachims, Swaminathan & Schnabel 2017)

   usage: svm_proprank_learn [options] example_file [model_file]

It is rank_learn -a svmrank --clicks: svm_proprank's objective on the clicks of
its training file (target 1, cost: the click's inverse propensity; a line
without cost: weighs 1), each click's slack times its cost, -c on svm_proprank's
scale.  -a FILE (svm_proprank's alpha file) is accepted, not written, and keeps
svm_rank's objective; -a names another learner as in rank_learn.  rank_learn's
options, as follows, all work.

"""


def proprank_learn_main(argv: Any = None) -> int:
    """``svm_proprank_learn``: rank_learn -a svmrank --clicks on argv (default sys.argv[1:]),
    under its own name; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv

    def help_text():
        return PROPRANK_HEADER.format(version=__version__) + _learn_help()
    return run("svm_proprank_learn", lambda args: _learn(args, PROPRANK_DEFAULTS), argv,
               help_text)


def _learn(argv, defaults=None):
    options, given, positional = parse_args(argv, LEARN_OPTIONS, LEARN_SWITCHES, 2, "rank_learn")
    options = {**(defaults or {}), **options}
    if defaults is PROPRANK_DEFAULTS and options.get("loss", 1) != 1:
        # svm_proprank has one loss, its -l 1; any other -l trains the same model there
        print_note("svm_proprank_learn", f"-l {options['loss']}: svm_proprank has one loss, "
                                         f"the IPS-weighted rank of the clicks (-l 1), which it "
                                         f"trains for any -l: so does this")
        options["loss"] = 1
    # before numpy is imported, if it is not; BLAS on one thread for every learner (same bits at
    # any -j, with or without threadpoolctl: rankfast.cli.output.hold_threads)
    hold_threads(options.get("n_jobs"), 1)
    from .learners import fitted_notes, make_learner, model_notes
    if not positional:
        raise UsageError("not enough input parameters: rank_learn [options] example_file [model_file]")
    train_path = positional[0]
    model_path = positional[1] if len(positional) > 1 else "svm_struct_model"
    verbosity = options.get("verbosity", 1)
    svmlight_verbosity = options.get("svmlight_verbosity", 0)
    auto_gamma = options.get("gamma") == ["auto"]   # made a number from the data by the map
    if auto_gamma and options.get("kernel", 0) != 2:
        raise UsageError("-g auto needs the RBF kernel (-t 2)")
    learner, notes = make_learner(options, given)
    for note in notes:
        if verbosity >= 1:
            print_note("rank_learn", note)
    check_output(model_path, (train_path,))       # before the work, not after it
    if "plot" in options:
        from .. import plot
        plot.require_matplotlib()
        check_output(options["plot"], (train_path, model_path))
    if "clip" in options and "clicks" not in options:
        raise UsageError("--clip is a floor on the clicks' propensities: give --clicks too")
    if cluster_requested(options):
        if auto_gamma:
            raise UsageError("-g auto is not available with --scheduler/--workers; give -g")
        if options.get("normalize", "none") != "none":
            raise UsageError("--normalize is not available with --scheduler/--workers; "
                             "normalise the files first")
        for flag, name in (("--valid", "valid"), ("--weights", "weights")):
            if name in options:
                raise UsageError(f"{flag} is not available with --scheduler or --workers")
        return _learn_distributed(learner, train_path, model_path, options, given)
    refuse_pattern(train_path)
    if "clicks" in options and "weights" in options:
        raise UsageError("give --clicks (each click weighs its cost:) or --weights (per-query "
                         "weights), not both")

    progress("Reading training examples...", verbosity, end="")
    # Feature values as svm_rank holds them (floats): the same model inputs, 8 bytes a
    # value, and a value beyond float's range refused at its line.
    dataset = load_dataset(train_path, verbosity, "rank_learn", svmlight_verbosity,
                           options.get("group"), options.get("n_jobs"), dtype="float32",
                           costs=bool(options.get("clicks")))
    progress("done", verbosity)
    from ..data.queries import count_distinct
    n_queries = count_distinct(dataset.qid)       # the learners group each query's rows
    progress(f"Training set properties: {dataset.n_features} features, {n_queries} rankings, "
              f"{dataset.n_documents} examples", verbosity, level=0)
    if verbosity >= 1 and options.get("normalize", "none") == "none":
        _scale_note(dataset.features, options.get("kernel", 0))
    if verbosity >= 1 and options.get("kernel", 0) in (2, 3) and not auto_gamma:
        _saturation_note(dataset, options)
    if "valid" in options and max(len(options.get("C", ())), len(options.get("gamma", ()))) > 1:
        learner = _validated_learner(options, given, verbosity, svmlight_verbosity)
    weights = {} if "weights" not in options else {
        "sample_weight": _query_weights(options["weights"], dataset.qid)}
    click_weight, c_scale = None, 1.0   # c_scale: the learner's C over the -c typed (--clicks)
    if options.get("clicks"):
        click_weight, c_scale = _click_weights(learner, dataset, options, verbosity)
        weights = {"sample_weight": click_weight}

    def log(text, level=1):
        progress(in_flags(_typed_c(text, c_scale)), verbosity, level)

    from ..io.model_files import format_model
    from ..model_selection import takes_training_data
    start = time.process_time()
    try:
        if takes_training_data(learner):    # the reader's result, checked: no second pass
            learner.fit_data(dataset.training_data(learner.sparse_float32), log=log, **weights)
        else:                               # any other learner registered: fit's arrays
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
    progress(f"Runtime in cpu-seconds: {time.process_time() - start:.2f}", verbosity)
    _print_cv_table(learner, verbosity, c_scale)
    for note in fitted_notes(learner, options, given) + model_notes(model, dataset, options,
                                                                    learner, click_weight):
        if verbosity >= 1:
            print_note("rank_learn", note)
    progress("Writing learned model...", verbosity, end="")
    with atomic_output(model_path) as out:
        out.write(text)
        if "plot" in options:           # before the model is in place: a plot that cannot be
            from .. import plot  # written (a full device) leaves no model either
            plot.save(plot.selection_figure(learner), options["plot"])
    progress("Writing model file...done", svmlight_verbosity)
    progress("done", verbosity)
    if "plot" in options:
        progress(f"Wrote the plot to {options['plot']}", verbosity)
    return 0


SCALE_SPREAD_NOTE = 1e4      # features whose largest values differ by more: suggest --normalize


def _scale_note(features, kernel):
    """A note when the features' scales differ by more than SCALE_SPREAD_NOTE."""
    from ..data.normalize import scale_spread
    spread = scale_spread(features)
    if spread <= SCALE_SPREAD_NOTE:
        return
    kinds = "query (per query, as LETOR), zscore or log" if kernel == 0 else \
        "zscore, query (per query, as LETOR) or log"
    print_note("rank_learn", f"the features' largest values differ by a factor of {spread:.2g}; "
                             f"--normalize {kinds} may train a better model")


def _saturation_note(dataset, options):
    """A note when the RBF or sigmoid kernel (the smallest -g) is saturated on the training
    documents, normalised as --normalize says."""
    from .learners import kernel_params
    from .notes import saturation_note
    note = saturation_note(kernel_params(options, min(options.get("gamma", [1.0]))),
                           dataset.features, options.get("seed", 0),
                           options.get("normalize", "none"), dataset.qid)
    if note:
        print_note("rank_learn", note)


def _click_weights(learner, dataset, options, verbosity):
    """--clicks: (each document's weight, its cost:; the scale of the learner's C, made
    svm_proprank's)."""
    from ..clicks.log import click_count, click_weights, scale_c
    weight, scale = click_weights(dataset, options.get("clip"), check_queries=False)
    scale_c(learner, scale)
    if verbosity >= 1:
        clicks, costed = click_count(dataset)
        costs = ("none has a cost:, so each weighs 1 (svm_proprank's default)" if not costed
                 else f"{costed} with cost:")
        print_note("rank_learn", f"--clicks: {clicks} clicks, {costs}; the click weights "
                                 f"average {scale:.6g} per query, so the learner's C is -c "
                                 f"times {scale:.6g} (svm_proprank's -c)")
    return weight, scale


def _query_weights(path, qid):
    """--weights FILE as per-query weights of the training file's queries (InputError on FILE)."""
    from ..data.validation import query_sample_weights
    from ..io.groups import read_weight_file
    try:
        return query_sample_weights(read_weight_file(path), qid)
    except ValueError as exc:
        raise InputError(path, None, str(exc)) from None


def _validated_learner(options, given, verbosity, svmlight_verbosity):
    """The learner with --valid's file as its validation set (read after the training file)."""
    from ..model_selection import ValidationSet
    from .learners import make_learner
    path = options["valid"]
    refuse_pattern(path)
    progress("Reading validation examples...", verbosity, end="")
    clicks = bool(options.get("clicks"))
    valid = load_dataset(path, verbosity, "rank_learn", svmlight_verbosity, None,
                         options.get("n_jobs"), dtype="float32", costs=clicks)
    progress("done", verbosity)
    weight = None
    if clicks:                 # a click log: each query counts its click's inverse propensity
        from ..clicks.log import click_weights
        weight = click_weights(valid, options.get("clip"), check_queries=False)[0]
    try:
        validation = ValidationSet(valid.features, valid.y, valid.qid, name=path,
                                   sample_weight=weight)
    except ValueError as exc:
        raise InputError(path, None, str(exc)) from None
    return make_learner({**options, "validation": validation}, given)[0]


def _typed_c(text, c_scale):
    """A cross-validation progress line with the C's of the -c typed (the learner trains at
    c_scale times them with --clicks: svm_proprank's C)."""
    if c_scale == 1.0 or not text.startswith("CV "):
        return text
    import re  # here: only --clicks grids need it
    return re.sub(r"\bC = ([-+.0-9eEinf]+)", lambda m: f"C = {float(m.group(1)) / c_scale:g}",
                  text)


def _print_cv_table(learner, verbosity, c_scale=1.0):
    """The cross-validation table of a learner given a grid (stdout, from -v 1), its C's those
    of the -c typed (the learner's over c_scale)."""
    import dataclasses

    from ..model_selection import cv_result_of
    result = cv_result_of(learner)
    if result is not None and c_scale != 1.0:
        result = dataclasses.replace(result, params=[
            {**row, "C": row["C"] / c_scale} if "C" in row else row for row in result.params])
    if result is not None:
        progress(result.format(), verbosity, end="")
        note = result.edge_note()
        if note is not None and verbosity >= 1:
            print_note("rank_learn", note)


def _linear_algebra_reason(exc):
    """A learner's ValueError as the user should read it: numpy's and scipy's own words explained."""
    import numpy as np
    text = str(exc)
    if isinstance(exc, np.linalg.LinAlgError) or "must not contain infs or NaNs" in text:
        return (f"the linear algebra failed ({text.rstrip('.')}): the feature values or the "
                f"kernel values are too large for it; rescale the features, or use a smaller "
                f"-c or smaller kernel parameters")
    return text


def _learn_distributed(learner, train_path, model_path, options, given):
    """rank_learn --scheduler/--workers: train on a Dask cluster (rankfast.dask.fit)."""
    from .. import dask as cluster
    from ..io.model_files import format_model
    from .learners import fitted_notes
    verbosity = options.get("verbosity", 1)
    cluster.check_learner(learner)

    def log(text, level=1):
        progress(in_flags(text), verbosity, level)

    with ClusterRun("rank_learn", options,
                     local_workers(options, "rank_learn", verbosity)) as client:
        progress(f"Training on a Dask cluster ({len(client.scheduler_info()['workers'])} workers)",
                  verbosity)
        clicks = bool(options.get("clicks"))
        try:
            cluster.fit(learner, train_path, client, log=log, clicks=clicks, proprank_c=clicks,
                        clip=options.get("clip"))
            summary = learner.summary_
            model = learner.to_model(n_features=summary.n_features, n_documents=summary.n_documents)
            text = format_model(model)
        except UsageError:
            raise
        except ValueError as exc:                 # as in _learn
            raise InputError(train_path, None, _linear_algebra_reason(exc)) from None
    progress(f"Training set properties: {summary.n_features} features, {summary.n_queries} "
              f"rankings, {summary.n_documents} examples", verbosity, level=0)
    progress(f"Runtime in seconds (wall clock, cluster): {learner.fit_seconds_:.2f}", verbosity)
    if clicks and verbosity >= 1:
        scale = learner.click_scale_
        print_note("rank_learn", f"--clicks: the clicks' weights average {scale:.6g} per query, "
                                 f"so the learner's C is -c times {scale:.6g} (svm_proprank's -c)")
    for note in fitted_notes(learner, options, given):
        if verbosity >= 1:
            print_note("rank_learn", note)
    progress("Writing learned model...", verbosity, end="")
    with atomic_output(model_path) as out:
        out.write(text)
    progress("done", verbosity)
    return 0
