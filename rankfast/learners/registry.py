"""The one table of learners: each ``rank_learn -a`` name, its class and the parameters
the programs set.

Everything that lists the learners reads it: ``rank_learn`` (``-a``'s names, its help,
the notes on flags a learner does not use: rankfast.cli.learners), rankfast's exports,
rankfast.sklearn's estimators and the messages that name learners.  The table says where
each class is and what the messages and the help say of it (whether it weighs documents,
whether it trains on a Dask cluster), so that reading it imports no learner: ``rank_learn
-?`` and ``-a``'s check of a name stay quick.  ``Learner.load`` checks that the class says
the same (its ``document_weights``; an ``objective_type`` with a ``protocol``, which
rankfast.dask sums over shards).  The kernel approximation (``rank_learn -t 1..3``) wraps
any learner: its classes are listed beside them (``KERNEL_APPROXIMATION``).

A new learner is its module in rankfast/learners/ and one ``register`` call at the end
of this file::

    register("mylearner", "rankfast.learners.mylearner", "MyRanker", COMMON + STOPPING,
             title="My ranker", distributed=True)

after which ``rank_learn -a mylearner`` trains it, ``rankfast.MyRanker`` and
``rankfast.sklearn.MyRanker`` are it (the latter with scikit-learn's BaseEstimator as
a further base) and the messages name it.  Code outside the package (a plugin, a
test) registers the same way, and ``unregister`` takes the entry out again.

Examples
--------
>>> from rankfast.learners import registry
>>> registry.names()
['prsvm', 'svmrank', 'rankncg', 'rankrls', 'greedy']
>>> entry = registry.learner("greedy")
>>> entry.load().__name__, "k" in entry.parameters
('GreedyRankRLS', True)
"""
from __future__ import annotations

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

#: The parameters rankfast's learners all take: svm_rank's C and loss, the threads and the
#: normalisation of the features (C is the one every entry must list).
COMMON = ("C", "loss", "n_jobs", "normalize")
#: An iterative solver's stopping rule: the tolerance and the cap on iterations.
STOPPING = ("tol", "max_iter")
#: A learner that cross-validates a list of C itself (rank_learn searches the list of
#: one without them from outside, rankfast.model_selection.GridSearch).
CROSS_VALIDATION = ("cv", "cv_metric", "cv_rule", "cv_convention", "random_state")

#: The estimators beside the learners, exported as they are: the kernel approximation
#: that ``rank_learn -t 1..3`` trains a learner on, and its two feature maps
#: ((class name, module) pairs).
KERNEL_APPROXIMATION = (("KernelApproxLearner", "rankfast.learners.kernel_approx"),
                        ("NystroemMap", "rankfast.learners.kernel_approx"),
                        ("RandomFourierMap", "rankfast.learners.kernel_approx"))


class Learner:
    """One entry of the table (made by ``register``).

    Attributes
    ----------
    name : str
        ``rank_learn -a``'s value (lower case), and the class's ``name`` (the model
        file's ``algorithm``).
    module, class_name : str
        Where the class is: ``load()`` imports it.
    parameters : tuple of str
        The constructor parameters rank_learn sets from its flags (the others keep the
        class's defaults); C among them.
    title : str
        The learner's name in a plot's title.
    document_weights : bool
        Whether its sample_weight may weigh documents (clicks), as the class's
        ``document_weights`` says.
    distributed : bool
        Whether it trains on a Dask cluster (rank_learn --scheduler, --workers): its
        class's ``objective_type`` has a ``protocol``.
    """

    __slots__ = ("name", "module", "class_name", "parameters", "title", "document_weights",
                 "distributed")

    def __init__(self, name: str, module: str, class_name: str, parameters: tuple[str, ...],
                 title: str, document_weights: bool, distributed: bool) -> None:
        self.name, self.module, self.class_name = name, module, class_name
        self.parameters, self.title = parameters, title
        self.document_weights, self.distributed = document_weights, distributed

    def load(self) -> Any:
        """The learner's class (its module imported on first use); ValueError if the class
        does not do what the entry says (document_weights, distributed)."""
        cls = load_class(self.module, self.class_name)
        does = (bool(getattr(cls, "document_weights", False)),
                getattr(getattr(cls, "objective_type", None), "protocol", None) is not None)
        if does != (self.document_weights, self.distributed):
            raise ValueError(f"the entry of {self.name!r} says document_weights="
                             f"{self.document_weights}, distributed={self.distributed}; its class "
                             f"{self.class_name} says {does[0]}, {does[1]}")
        return cls

    def __repr__(self) -> str:
        return (f"Learner({self.name!r}, {self.module!r}, {self.class_name!r}, "
                f"{self.parameters!r}, title={self.title!r}, "
                f"document_weights={self.document_weights}, distributed={self.distributed})")


_LEARNERS: dict[str, Learner] = {}            # by name, in the order registered


def register(name: str, module: str, class_name: str, parameters: tuple[str, ...] = COMMON,
             title: str | None = None, document_weights: bool = False,
             distributed: bool = False) -> Learner:
    """Add a learner to the table, and return its entry.

    Parameters
    ----------
    name : str
        ``rank_learn -a``'s value: lower-case letters, digits and underscores; the
        class's ``name`` attribute is the same.
    module : str
        The module of the class, in full (``"rankfast.learners.prsvm"``); imported
        only when the class is asked for.
    class_name : str
        The class, a rankfast.learners._base.LinearRanker (or one with ``fit``,
        ``predict``, ``to_model`` and ``check_parameters``).  rankfast and
        rankfast.sklearn export it under this name.
    parameters : tuple of str, default COMMON
        The constructor parameters that rank_learn sets from its flags (its
        table rankfast.cli.learners.LEARNER_PARAMETERS); "C" must be one.  Add
        STOPPING for a tolerance and an iteration cap, CROSS_VALIDATION for a
        learner that cross-validates a list of C itself.
    title : str, optional
        The learner's name in plots (default ``class_name``).
    document_weights : bool, default False
        True for a class whose ``document_weights`` is True (sample_weight may differ
        within a query: a click's weight on the pairs its document is preferred in).
    distributed : bool, default False
        True for a class that trains on a Dask cluster: its ``objective_type`` has a
        ``protocol`` (rankfast.dask).

    Returns
    -------
    Learner

    Raises
    ------
    ValueError
        For a name that is taken or not lower-case letters, digits and underscores,
        a class name another entry exports, or parameters without "C".

    Examples
    --------
    >>> from rankfast.learners import registry
    >>> entry = registry.register("copy_of_prsvm", "rankfast.learners.prsvm", "RankSVM")
    Traceback (most recent call last):
    ...
    ValueError: the class name 'RankSVM' is exported already (by prsvm)
    """
    if not (name and name.replace("_", "a").isalnum() and name.isascii() and name == name.lower()):
        raise ValueError(f"a learner's name is lower-case letters, digits and underscores "
                         f"(got {name!r})")
    if name in _LEARNERS:
        raise ValueError(f"the learner {name!r} is registered already")
    for other in _LEARNERS.values():
        if other.class_name == class_name:
            raise ValueError(f"the class name {class_name!r} is exported already (by {other.name})")
    if class_name in dict(KERNEL_APPROXIMATION):
        raise ValueError(f"the class name {class_name!r} is exported already")
    parameters = tuple(parameters)
    if "C" not in parameters:
        raise ValueError(f"every learner takes C, svm_rank's trade-off: add it to the "
                         f"parameters of {name!r}")
    entry = Learner(name, module, class_name, parameters, class_name if title is None else title,
                    document_weights, distributed)
    _LEARNERS[name] = entry
    return entry


def unregister(name: str) -> None:
    """Take a learner out of the table (KeyError if it is not in it)."""
    del _LEARNERS[name]


def learner(name: str) -> Learner:
    """The entry of ``-a name`` (KeyError if no learner has that name)."""
    return _LEARNERS[name]


def learners() -> list[Learner]:
    """Every entry, in the order registered (rank_learn's help lists them in this order)."""
    return list(_LEARNERS.values())


def names() -> list[str]:
    """The learners' names, ``rank_learn -a``'s values."""
    return list(_LEARNERS)


def exported() -> dict[str, str]:
    """{class name: module} of every estimator rankfast and rankfast.sklearn export: the
    learners' classes, then the kernel approximation's."""
    return {**{entry.class_name: entry.module for entry in _LEARNERS.values()},
            **dict(KERNEL_APPROXIMATION)}


def load_class(module: str, class_name: str) -> Any:
    """The class ``class_name`` of ``module``, imported on first use."""
    import importlib
    return getattr(importlib.import_module(module), class_name)


def enumeration(words: list[str]) -> str:
    """Names as a sentence lists them: "a", "a and b", "a, b and c"."""
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


# The learners, in the order rank_learn's help and rankfast's documentation list them.
register("prsvm", "rankfast.learners.prsvm", "RankSVM", COMMON + STOPPING + CROSS_VALIDATION,
         title="RankSVM (prsvm)", document_weights=True, distributed=True)
register("svmrank", "rankfast.learners.svmrank", "RankSVML1", COMMON + STOPPING,
         title="svm_rank's L1-hinge RankSVM (svmrank)", document_weights=True)
register("rankncg", "rankfast.learners.rankncg", "RankNCG",
         COMMON + STOPPING + ("erfc", "erfc_eps") + CROSS_VALIDATION, title="RankNCG",
         document_weights=True, distributed=True)
register("rankrls", "rankfast.learners.rankrls", "RankRLS", COMMON + STOPPING + CROSS_VALIDATION,
         title="RankRLS", distributed=True)
register("greedy", "rankfast.learners.greedy", "GreedyRankRLS", COMMON + ("k",) + CROSS_VALIDATION,
         title="Greedy RankRLS")
