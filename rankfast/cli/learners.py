"""Which learner ``rank_learn -a ALGO`` builds, from svm_rank's flags.

The learners, their names and the parameters each takes are rankfast.learners.registry's
table; here each parameter is read from its flag (LEARNER_PARAMETERS).  Each learner's
module is imported only when it is asked for, so a run pays the start-up time of what
it uses.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import UsageError
from ..learners import registry
from .options import LEARN_OPTIONS

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

# Options that only tune svm_rank's cutting-plane / QP solver: accepted, ignored
# (-k is also greedy's number of features, and used as that by a learner that takes k).
QP_ONLY_OPTIONS = ("-w", "-k", "-f", "-b", "-n", "-q", "-m", "-h")


def _c(options):
    values = options.get("C", [0.01])
    return values if len(values) > 1 else values[0]


def _cv(options):
    """The learners' cross-validation parameters from --folds (or --valid's ValidationSet, as
    "validation"), --cv-metric, --cv-rule, --ndcg, --seed."""
    clicks = bool(options.get("clicks"))     # a click's instance: its DCG, however few documents
    metric = options.get("cv_metric", "ndcg" if clicks else "ndcg@10")
    convention = options.get("ndcg", "standard" if clicks else "letor")
    if clicks:                               # a tie counts against the click, as svm_proprank's
        from ..model_selection import Metric
        metric = dataclasses.replace(Metric.parse(metric, convention), ties="against")
    return {"cv": options.get("validation", options.get("folds")),
            "cv_metric": metric,
            "cv_rule": options.get("cv_rule", "best"),
            "cv_convention": convention,
            "random_state": options.get("seed", 0)}


#: The options (rankfast.cli.options.LEARN_OPTIONS' names) that set a learner's parameter:
#: {option: parameter}.  A learner takes those its entry in rankfast.learners.registry lists
#: (the others keep the class's defaults), and a note says when a flag sets none of its.
LEARNER_PARAMETERS = {"C": "C", "loss": "loss", "epsilon": "tol", "max_iter": "max_iter", "k": "k",
                      "erfc": "erfc", "erfc_eps": "erfc_eps", "n_jobs": "n_jobs",
                      "normalize": "normalize"}

#: Bounds the programs put on a parameter: rankrls runs its conjugate gradient to a relative
#: residual of at most 1e-6, however loose -e is (fitted_notes says so when it matters).
AT_MOST = {("rankrls", "tol"): 1e-6}


def build_learner(name: str, options: dict[str, Any]) -> Any:
    """The learner ``-a name``, its parameters (rankfast.learners.registry) set from the options
    given: C from -c (default 0.01), the cross-validation's from --folds, --cv-metric, ... (_cv)."""
    entry = registry.learner(name)
    option_of = {parameter: option for option, parameter in LEARNER_PARAMETERS.items()}
    params: dict[str, Any] = {"C": _c(options)}
    for parameter in entry.parameters:
        if parameter in registry.CROSS_VALIDATION or parameter == "C":
            continue
        if parameter not in option_of:
            raise ValueError(f"learner {name!r}: rank_learn has no flag for its parameter "
                             f"{parameter!r} (rankfast.cli.learners.LEARNER_PARAMETERS)")
        if option_of[parameter] in options:
            value = options[option_of[parameter]]
            bound = AT_MOST.get((name, parameter))
            params[parameter] = value if bound is None else min(value, bound)
    if "cv" in entry.parameters:
        params.update(_cv(options))
    return entry.load()(**params)


# Options that only matter when a grid is cross-validated (a -c list, or a -g list).
CV_OPTIONS = ("--folds", "--valid", "--cv-metric", "--cv-rule")


def make_learner(options: dict[str, Any], given: Any) -> tuple[Any, list[str]]:
    """The learner the options ask for, and notes for the user (list of str).

    svm_rank's own ``-a FILE`` wrote the alphas to FILE; here ``-a`` names
    the learner (in any case), so any other value is taken as that file: it
    is not written, and the default learner is used.  A value close to a
    learner's name is a typo, not a file, and is refused (see _learner_name).
    """
    notes: list[str] = []
    algorithm = _learner_name(options.get("algorithm", "prsvm"), notes,
                              options.get("fallback_algorithm", "prsvm"))
    if options.get("slack_norm") == 1 and "-a" not in given:
        algorithm = "svmrank"
        notes.append("-p 1: training svm_rank's own objective, the L1 hinge (-a svmrank)")
    if options.get("rescaling") == 1:
        raise UsageError("-o 1 (slack rescaling) is not available for ranking "
                         "(svm_rank_learn fails on it too); use -o 2")
    for flag in ("-p", "-o"):
        if flag in given and not (flag == "-p" and algorithm == "svmrank"
                                  and options.get("slack_norm") == 1):
            notes.append(f"{flag} has no effect: {algorithm} fixes its own loss")
    parameters = registry.learner(algorithm).parameters
    ignored = list(dict.fromkeys(flag for flag in given if flag in QP_ONLY_OPTIONS and
                                 not (flag == "-k" and "k" in parameters)))
    if ignored:
        verb = "tunes" if len(ignored) == 1 else "tune"
        notes.append(f"{' '.join(ignored)} only {verb} svm_rank's QP solver; accepted and ignored")
    for flag in dict.fromkeys(given):
        parameter = LEARNER_PARAMETERS.get(LEARN_OPTIONS.get(flag, ("",))[0])
        if parameter is not None and flag not in QP_ONLY_OPTIONS and parameter not in parameters:
            notes.append(f"{flag} has no effect with -a {algorithm}")
    kernel = options.get("kernel", 0)
    if kernel == 4:
        raise UsageError("-t 4 (user-defined kernel) is not supported")
    gammas = options.get("gamma", [1.0])
    if len(gammas) > 1 and kernel not in (2,):
        raise UsageError("a -g list needs the RBF kernel (-t 2)")
    grid = len(options.get("C", [])) > 1 or len(gammas) > 1
    if not grid:
        for flag in given:
            if flag in CV_OPTIONS:
                notes.append(f"{flag} has no effect without a list of -c (or -g) values")
    if "--plot" in given and not (grid or (algorithm == "greedy" and kernel == 0)):
        raise UsageError("--plot draws a cross-validation (a list of -c values) or greedy's "
                         "selection (-a greedy): give one of them")
    if grid and "--valid" in given and "--folds" in given:
        notes.append("--folds has no effect with --valid: the validation file scores the grid")
    elif grid and options.get("folds") == "loqo" and (algorithm != "rankrls" or len(gammas) > 1):
        notes.append(f"--folds loqo: {algorithm} is refitted once per query "
                     f"(only rankrls computes leave-query-out exactly)")
    # with a kernel the documents are normalised before the map, not the mapped features
    learner = build_learner(algorithm, options if kernel == 0 else {**options, "normalize": "none"})
    searched_outside = len(options.get("C", [])) > 1 and "cv" not in parameters
    if not searched_outside:                 # before the data is read
        learner.check_parameters()           # (a search checks each C's learner as it fits it)
    if searched_outside and len(gammas) == 1:
        # a learner without a C list of its own: cross-validated from outside
        from ..model_selection import GridSearch
        learner = GridSearch(learner, {"C": options["C"]}, **_cv(options))
    if kernel == 0:
        for flag in ("--approx", "--landmarks", "--seed"):
            if flag in given and not (flag == "--seed" and grid):     # --seed: the folds too
                notes.append(f"{flag} has no effect with the linear kernel (-t 0)")
        return learner, notes
    from ..learners.kernel_approx import KernelApproxLearner
    params = kernel_params(options)
    for gamma in gammas:
        notes.extend(_kernel_notes(dataclasses.replace(params, gamma=gamma)))
    try:                                         # every gamma's parameters checked now
        kernel_learners = [KernelApproxLearner(learner, dataclasses.replace(params, gamma=gamma),
                                               options.get("approx", "nystrom"),
                                               options.get("landmarks", 500), options.get("seed", 0),
                                               options.get("normalize", "none"))
                           for gamma in gammas]
        for each in kernel_learners:
            each.check_parameters()
        learner = kernel_learners[0]
    except ValueError as exc:
        raise UsageError(f"-t {kernel}: {exc}") from None
    if len(gammas) > 1 or ("valid" in options and grid):
        # (a C list alone would cross-validate the base learner on the mapped training file;
        # a validation file must be mapped by each model's own map: the grid is searched outside)
        from ..model_selection import GridSearch
        learner = GridSearch(learner, {"kernel__gamma": gammas,
                                       "base_learner__C": options.get("C", [0.01])}, **_cv(options))
    return learner, notes


def kernel_params(options: dict[str, Any], gamma: float | None = None) -> Any:
    """The KernelParams of svm_rank's -t -d -g -s -r (``gamma``: one of a -g list; default its first)."""
    from ..models import KernelParams
    return KernelParams(options.get("kernel", 0), options.get("degree", 3),
                        options.get("gamma", [1.0])[0] if gamma is None else gamma,
                        options.get("coef_lin", 1.0), options.get("coef_const", 1.0))


def _learner_name(value, notes, fallback="prsvm"):
    """The learner ``-a value`` names; svm_rank's alpha file (with a note) means ``fallback``
    (prsvm; svm_proprank_learn's svmrank).

    Names are case-insensitive.  A value that is none of them but close to
    one (``greed``, ``rankrl``) is a mistyped learner: silently training
    prsvm instead would hide the mistake, so it is a usage error.  A value
    with a dot or a path separator is always a file name (``rankrls.alpha``).
    """
    name, names = value.lower(), registry.names()
    if name in names:
        return name
    close = []
    if not any(c in value for c in "./\\"):
        import difflib  # here: only an unknown name needs it (2 ms to import)
        close = difflib.get_close_matches(name, names, n=1)     # similarity ≥ 0.6
    if close:
        raise UsageError(f"unknown learner {value!r} (did you mean {close[0]}?)")
    notes.append(f"-a {value}: not a learner ({', '.join(names)}); taken as "
                 f"svm_rank's alpha file, which rankfast does not write; using {fallback}")
    return fallback


def _kernel_notes(params):
    """Notes on kernel parameters that svm_rank accepts but that give no kernel."""
    notes = []
    if params.kernel == 2 and params.gamma != "auto" and params.gamma <= 0:
        what = ("every kernel value is 1: the model is constant" if params.gamma == 0 else
                "exp(-g ||a-b||^2) then grows with the distance and is not a kernel")
        notes.append(f"-g {params.gamma:g}: the RBF kernel needs g > 0; {what}")
    if params.kernel == 1 and params.degree < 1:
        what = ("every kernel value is 1: the model is constant" if params.degree == 0 else
                "(s a*b + r)^d is then not a kernel and is infinite where s a*b + r = 0")
        notes.append(f"-d {params.degree}: the polynomial kernel needs d >= 1; {what}")
    return notes


def fitted_notes(learner: Any, options: dict[str, Any], given: Any) -> list[str]:
    """Notes on options the fitted learner did not use.

    rankrls's -e and -# bound the conjugate gradient it runs on wide sparse
    data (``solver_`` "cg", to a relative residual of at most 1e-6); its
    dense solver is exact and uses neither.  greedy's -k is a most: it selects no
    feature that cannot change a ranking.  A kernel map's learner is asked for its
    base learner (``learner_``).
    """
    base = getattr(learner, "learner_", learner)
    k, selected = getattr(base, "k", None), getattr(base, "selected_", None)
    if isinstance(k, (int, np.integer)) and selected is not None and len(selected) < k:
        return [f"-k {k}: greedy selected {len(selected)}, every feature that can change a "
                f"ranking (the others are empty or constant within every query)"]
    solver = getattr(base, "solver_", None)
    flags = [flag for flag in ("-e", "-#") if flag in given]
    if solver == "dense" and flags:
        return [f"{' and '.join(flags)} {'has' if len(flags) == 1 else 'have'} no effect: rankrls "
                f"solved exactly (its dense solver; its conjugate gradient, for wide sparse data, "
                f"is what -e and -# bound)"]
    if solver == "cg" and options.get("epsilon", 0.0) > 1e-6:
        return ["-e: rankrls runs its conjugate gradient to a relative residual of at most 1e-6; "
                "a looser -e is not used"]
    return []


def model_notes(model: Any, dataset: Any, options: dict[str, Any], learner: Any = None,
                sample_weight: Any = None) -> list[str]:
    """Notes on a trained model: an all-zero model although there are pairs to order (C too
    small); svm_rank's objective of the model as written far above the solver's (with
    ``sample_weight``, --clicks' weights, svm_proprank's: the weighted one at -c)."""
    values = model.alphas if hasattr(model, "alphas") else model.weights
    if np.any(values):
        return _written_objective_notes(model, dataset, options, learner, sample_weight)
    from ..metrics import swapped_pairs
    _, pairs = swapped_pairs(np.zeros(dataset.n_documents), dataset.y, dataset.qid)
    if not pairs.sum():
        return []                       # nothing to learn: zero is the right model
    c = model.metadata.get("C") or ",".join(f"{c:g}" for c in options.get("C", [0.01]))
    return [f"the model is all zero (every document scores 0): C = {c} is too small for "
            f"these features; use a larger -c"]


def _written_objective_notes(model, dataset, options, learner, sample_weight=None):
    """svmrank: the model file holds weights to 8 significant digits (svm_rank's format), read
    back as float32; on data with many pairs at the margin that rounding moves pairs across
    it and raises the hinge objective well above the solver's (XGBoost's agaricus as one
    ranking at -c 100: 2.48 against 1.654).  Said when it is over 1e-3 above; only for svm_rank's
    own objective on the raw features and unweighted queries (or --clicks' weights, with
    svm_proprank's objective at the -c given, which equals the solver's at its scaled C), where
    the file's model can be evaluated on the training file as it stands."""
    result = getattr(learner, "result_", None)
    if (model.metadata.get("algorithm") != "svmrank" or getattr(result, "f", None) is None
            or options.get("normalize", "none") != "none" or "weights" in options
            or not hasattr(model, "feature_ids")):
        return []
    from ..learners.objectives import objective
    C = getattr(learner, "C_", getattr(learner, "C", None))
    if not isinstance(C, (int, float)):
        return []
    if sample_weight is not None:           # the solver's C is -c times the clicks' scale
        given = options.get("C", [0.01])
        if len(given) != 1:
            return []
        C = given[0]
    written = objective(model, dataset, float(C), options.get("loss", 1), p=1,
                        sample_weight=sample_weight)
    if not written > result.f * (1.0 + 1e-3):
        return []
    name = "svm_proprank's" if sample_weight is not None else "svm_rank's"
    return [f"the model file holds the weights to 8 significant digits (svm_rank's format), "
            f"which put pairs that sit at the margin on its other side: {name} objective "
            f"of the model as written is {written:.8g}, {written / result.f - 1.0:.1%} above "
            f"the solver's {result.f:.8g}"]
