"""rankfast's estimators as scikit-learn estimators (``pip install rankfast[sklearn]``).

The learners of rankfast.learners.prsvm, rankncg, rankrls, svmrank and kernels
implement scikit-learn's protocol themselves (rankfast._estimator: parameters,
tags, metadata requests), so that ``rank_learn`` and ``rank_classify`` never
import scikit-learn, a second of start-up.  The classes here are those
learners with scikit-learn's ``BaseEstimator`` as a further base, the shape of
LightGBM's ``sklearn.py`` around its core: ``check_estimator`` and
scikit-learn's ``isinstance`` tests see scikit-learn estimators, and pickles
record scikit-learn's version.  Parameters, attributes and results are those
of the classes they extend.  There is one for every estimator of
rankfast.learners.registry's table, made from it when first asked for
(``wrapper``): a learner registered has its estimator here too.  ``ESTIMATORS``
holds them all, in the table's order.

Queries reach ``fit`` and the scorers through scikit-learn's metadata routing.
Turn it on, request ``qid`` from the estimator and pass it to the search::

    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold
    from rankfast.metrics import ndcg_scorer
    from rankfast.sklearn import RankSVM

    sklearn.set_config(enable_metadata_routing=True)
    search = GridSearchCV(RankSVM().set_fit_request(qid=True), {"C": [0.01, 0.1, 1.0]},
                          cv=GroupKFold(5), scoring=ndcg_scorer(10))
    search.fit(X, y, groups=qid, qid=qid)          # folds of whole queries, scored per query

Without the request, scikit-learn raises UnsetMetadataPassedError; without
routing, the scorer gets no qid and raises ValueError for a model trained on
several queries (rankfast.data.validation.scoring_queries).  Rows given without qid or
group are one ranking, as svm_rank reads a file without qids; inside a
scikit-learn search such a fit emits rankfast.learners._base.OneRankingWarning.

``sample_weight`` is per query (rankfast.data.validation.query_sample_weights): a weight
of 2 is the query twice, with one C or a list of C; for prsvm, svmrank and rankncg
weights that differ within a query weigh the pairs each document is preferred in, as
a click's inverse propensity does (rankfast.data.validation.pair_weights,
rankfast.clicks); the other learners refuse them (ValueError).  ``check_estimator``
passes every estimator but for two checks declared expected failures: its
sample-weight equivalence checks (dense and sparse) require integer weights on the
rows of one ranking (they pass no qid) to equal repeated documents.  A query weight of
2 divides C by one more query and doubles that query's loss, and a document weight of 2
doubles the pairs it is preferred in, where repeating a document also repeats the pairs
it is the lower side of.  fit never writes into the weights it is given
(check_sample_weights_not_overwritten passes; read-only arrays are tested).

Examples
--------
>>> import numpy as np
>>> from sklearn.base import BaseEstimator
>>> from rankfast.sklearn import RankSVM
>>> X = np.array([[3.0], [2.0], [1.0], [1.0], [2.0], [3.0]])
>>> y, qid = [2, 1, 0, 0, 1, 2], [1, 1, 1, 2, 2, 2]
>>> ranker = RankSVM(C=1.0).fit(X, y, qid)
>>> isinstance(ranker, BaseEstimator), ranker.__sklearn_tags__().estimator_type
(True, 'ranker')
"""
try:
    from sklearn.base import BaseEstimator
except ImportError as exc:                       # pragma: no cover - only without scikit-learn
    raise ImportError("rankfast.sklearn needs scikit-learn: pip install rankfast[sklearn] "
                      "(the learners of rankfast.learners.prsvm, ... work without it)") from exc

from .learners import registry

_WRAPPERS: dict = {}                             # {rankfast's class: its scikit-learn estimator}


def _doc(core):
    return (f"{core.__name__} of {core.__module__} as a scikit-learn estimator (a subclass "
            f"that also inherits sklearn.base.BaseEstimator).\n\n{core.__doc__}")


def wrapper(core: type) -> type:
    """``core`` with scikit-learn's BaseEstimator as a further base: the class of this module
    named as ``core`` (where pickles find it), its docstring ``core``'s; made once.

    Written out, ``class RankSVM(prsvm.RankSVM, BaseEstimator): __doc__ = _doc(prsvm.RankSVM)``
    for every estimator of rankfast.learners.registry's table: made from the table instead,
    so that a learner registered is here too.  Parameters (``get_params``, ``clone``) are
    those of ``core``'s constructor.
    """
    if core not in _WRAPPERS:
        _WRAPPERS[core] = type(core.__name__, (core, BaseEstimator),
                               {"__doc__": _doc(core), "__module__": __name__,
                                "__qualname__": core.__name__})
    return _WRAPPERS[core]


def __getattr__(name: str) -> object:
    """The estimators of rankfast.learners.registry's table, as they stand when asked for:
    each class by its name, ``ESTIMATORS`` (all of them, in the table's order) and
    ``__all__``."""
    estimators = registry.exported()
    if name in estimators:
        return wrapper(registry.load_class(estimators[name], name))
    if name == "ESTIMATORS":
        return tuple(wrapper(registry.load_class(module, class_name))
                     for class_name, module in estimators.items())
    if name == "__all__":
        return sorted(["EXPECTED_FAILED_CHECKS", "expected_failed_checks", *estimators])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(registry.exported()) | {"ESTIMATORS"})


#: scikit-learn's checks that ranking weights fail by design: they equate an integer weight
#: on some rows of the one ranking they pass with repeating those rows, but a weight is per
#: query, or (prsvm, svmrank) on the pairs a row is preferred in, and a repeated row also
#: repeats the pairs it is the lower side of:
#: check_estimator(RankSVM(), expected_failed_checks=EXPECTED_FAILED_CHECKS).
EXPECTED_FAILED_CHECKS = dict.fromkeys(
    ["check_sample_weight_equivalence_on_dense_data",
     "check_sample_weight_equivalence_on_sparse_data"],
    "sample_weight weighs queries or preferred documents; repeating a row repeats its pairs")


def expected_failed_checks(estimator: object) -> dict:
    """EXPECTED_FAILED_CHECKS for an estimator whose fit takes sample_weight, else none (the maps)."""
    import inspect
    fit = getattr(estimator, "fit", None)
    takes_weights = fit is not None and "sample_weight" in inspect.signature(fit).parameters
    return dict(EXPECTED_FAILED_CHECKS) if takes_weights else {}
