"""Distributed training on a Dask cluster: the one-process objective, summed over workers.

A learner trains here when it is an objective and a solver (rankfast.learners._base.
LinearRanker): ½‖w‖² plus a sum over queries, so its value, gradient, Hessian-vector
products, line searches or normal equations are sums of per-query parts.  Each worker
holds whole queries (a *shard*) and the learner's own objective over them, built by
the hook one process builds it with (``_objective``); the driver runs the learner's
solver (``_minimize``) on the sum of the shards' objectives, one driver per solver
protocol (rankfast.dask._objectives: Newton, nonlinear CG, normal equations), which the
objective's class names.  Only d-vectors cross the network per step (a closed form's
dense solve: one d × d matrix per shard, once); the documents never pass through the
driver.  A new learner trains on a cluster by offering these hooks in its own module.

Exactly the one-process objective: c_q = C / Q and λ = Q / (2C) use the global
number of queries Q, every shard works in the global space of the features that
occur (the columns one process keeps), and the driver adds the parts in shard
order.  A shard's part is its objective's value (gradient, product) minus the
regulariser ½‖w‖² (w, v), which the driver adds once: the result equals the
one-process objective up to rounding (tests check 1e-9 relative).

Query weights.  ``fit(..., sample_weight={qid: weight})`` weighs each query's
term as the learners' ``sample_weight`` does (rankfast.data.validation.query_sample_weights):
the driver sums the weights of the data's queries shard by shard (each query is
whole on one shard) and every shard's objective multiplies its queries' terms by
w_q Q / Σ_r w_r, the one-process multipliers (Problem.weight).  A mapping, not an array of
rows: it names queries, whichever file or chunk holds their rows.

Data.  ``fit(learner, source, client)`` takes a list or glob of SVMlight files
(each read on a worker by rankfast.load_svmlight; glob expanded on the driver and
sorted, one shard per file, the files visible to every worker at the same path),
dask arrays ``(X, y, qid)`` chunked along rows, or a dask DataFrame with label and
qid columns (one shard per chunk or partition).  Every task on a shard runs on the
worker that read it (loosely: elsewhere if that worker died).  A query
whose rows lie in several shards is re-assembled on one of them: the shards send
their query ids, split into S buckets by a hash of the qid, to S small tasks that
find the qids held by more than one shard (the *straddling* queries); each goes to
the shard its hash names, and only the rows of straddling queries move, worker to
worker, in shard order (so each query keeps its file order).  No global sort,
nothing dropped; empty shards are left out.

Faults.  Each shard is a future computed from the files by pure tasks, so when a
worker dies Dask recomputes the shards it held on another worker (re-reading their
files).  The per-step state a shard keeps (scores at the current iterate, the line
search's direction) is tagged with the driver's step number; a recomputed shard
finds its tag missing and raises ``StaleShard``, and the driver recomputes every
shard's state at the current iterate and repeats the step.  A file that cannot be
read raises rankfast.errors.InputError (file:line) on the driver.

Requires ``dask`` and ``distributed`` (``pip install rankfast[dask]``); rankfast
itself must be importable on the workers.
"""
from __future__ import annotations

import os
import time

import numpy as np

from ..errors import InputError, MissingDependencyError, RankfastError, UsageError
from ._objectives import PROTOCOLS, train
from ._shards import (
    ShardedData,
    _read_part,
    click_scale,
    expand_sources,
    gather,
    query_multipliers,
)

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    import pandas as pd

    from .._typing import Log


# ----------------------------------------------------------------- driver

def fit(learner: Any, source: Any, client: Any, log: Log = None, label: str = "label",
        qid: str = "qid", sample_weight: Mapping[int, float] | pd.Series | None = None,
        clicks: bool = False, proprank_c: bool = False, clip: float | None = None) -> Any:
    """Train a linear learner on a Dask cluster: the same model as ``learner.fit`` on all the data.

    Parameters
    ----------
    learner : linear learner
        One that is an objective and a solver (``objective_type``; see
        rankfast.learners._base.LinearRanker).  Its parameters (one C) say what to
        train; it is fitted in place.
    source : str, list of str, tuple of dask arrays (X, y, qid), or dask DataFrame
        SVMlight files (glob patterns allowed; one shard per file, in sorted
        order), each read by a worker; dask arrays chunked along rows (one
        shard per chunk); or a dask DataFrame (one shard per partition) with
        columns ``label`` and ``qid``, every other column a feature, in order.
    client : distributed.Client
    log : callable(text, level), optional
        Progress lines, as the learners' ``fit``.
    label, qid : str
        A DataFrame source's label and query-id columns.
    sample_weight : mapping of int to float, optional
        Each query's weight (a dict or a pandas Series indexed by query id;
        every query of the data needs one, others are ignored): the model of
        ``learner.fit(..., sample_weight=...)`` on all the data, a weight of
        2 being the query twice.
    clicks : bool
        The files are click logs in svm_proprank's format: each click weighs its
        ``cost:`` on the pairs it is preferred in, the model of ``learner.fit``
        with those weights as ``sample_weight`` (rankfast.clicks; files only,
        not with sample_weight).
    proprank_c : bool
        With clicks: the learner's C is svm_proprank's (the loss times C / queries
        times each click's cost): it trains at C times the clicks' mean weight
        (``click_scale_``; ``C_`` is that), as ``rank_learn --clicks`` means ``-c``;
        the parameter C is left as given.
    clip : float, optional
        With clicks: a floor on the propensities (no click weighs more than 1/clip).

    Returns
    -------
    learner
        Fitted: ``feature_ids_``, ``weights_``, ``to_model()`` as after ``fit``,
        plus ``summary_`` (Summary: documents, features, queries, shards),
        ``traffic_`` (Traffic), ``fit_seconds_`` (all of it) and
        ``data_seconds_`` (reading and re-assembling the shards).

    Raises
    ------
    InputError
        A file that cannot be read (file:line), or no documents at all.
    UsageError
        A learner or option distributed training does not offer (greedy,
        kernels, a list of C).
    ValueError
        sample_weight without a weight for some query, negative, not finite
        or all zero.
    """
    check_learner(learner)
    learner.check_parameters()                          # as its fit checks them first
    started = time.perf_counter()
    if clicks and sample_weight is not None:
        raise UsageError("give clicks (each click weighs its cost:) or sample_weight, not both")
    data = ShardedData(client, source, label, qid, clicks, clip)
    assembled = time.perf_counter()
    if data.summary.n_documents == 0:
        raise InputError(_describe_source(source), None, "no documents to train on")
    if log is not None:
        s = data.summary
        log(f"Shards: {s.n_shards} inputs, {len(data.parts)} non-empty shards, "
            f"{data.n_straddling} queries re-assembled across shards", 1)
    table: Any
    given_C = learner.C
    if clicks:
        table = click_scale(client, data)
        learner.click_scale_ = table.mean
        if proprank_c:                  # trained at C times the mean; the parameter is left as given
            from ..clicks.log import scale_c
            scale_c(learner, table.mean)
    else:
        table = query_multipliers(client, data, sample_weight)
    try:
        w, learner.traffic_ = train(learner, data, client, log, table)
    finally:
        learner.C = given_C
    from ..learners._linear import warn_if_stopped_early  # the learners' fit's warning
    warn_if_stopped_early(learner, getattr(learner, "result_", None))
    learner.feature_ids_ = data.used + 1
    learner.weights_ = np.where(data.varies, w, 0.0)    # as linear.without_query_constant
    learner.n_features_in_ = data.summary.n_features     # predict checks dense X against it
    learner._fit_documents = data.summary.n_documents     # the model file's training documents
    learner.summary_ = data.summary
    learner.fit_seconds_ = time.perf_counter() - started
    learner.data_seconds_ = assembled - started
    return learner


def check_learner(learner: Any) -> None:
    """UsageError for a learner without an objective per shard (greedy, kernels) or a list of C."""
    from ..learners._linear import c_grid  # C read as the learners read it
    from ..learners.registry import enumeration, learners
    if not trains_on_shards(learner):
        offered = enumeration([entry.name for entry in learners() if entry.distributed])
        raise UsageError(f"distributed training offers {offered} (linear), "
                         f"not {getattr(learner, 'name', type(learner).__name__)}")
    if c_grid(learner.C) is not None:
        raise UsageError("a list of C values (cross-validation) is not available for "
                         "distributed training; give one C")


def trains_on_shards(learner: Any) -> bool:
    """Whether a learner (or learner class) is an objective and a solver whose objective
    class speaks a protocol these drivers sum (rankfast.learners._base.LinearRanker)."""
    return getattr(getattr(learner, "objective_type", None), "protocol", None) in PROTOCOLS


def _describe_source(source):
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    if isinstance(source, tuple) or hasattr(source, "to_delayed"):
        return "dask collection"
    return ", ".join(map(os.fspath, source))


def local_client(n_workers: Any) -> Any:
    """A Client on a new LocalCluster of ``n_workers`` one-thread processes on 127.0.0.1.

    At most max_local_workers() of them: more would only compete for the same
    cores (and --workers 100000 waited forever for its workers to start).

    No dashboard (the scheduler's HTTP endpoint listens on a free loopback
    port), and the cluster's own log lines silenced below CRITICAL (a task's
    error reaches the driver, which reports it); use it as a context manager
    (it stops the cluster on exit).
    """
    import logging

    import dask
    from distributed import Client, LocalCluster
    with dask.config.set({"distributed.scheduler.work-stealing": False}):  # shards stay put
        cluster = LocalCluster(n_workers=min(n_workers, max_local_workers()),
                               threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None,
                               scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                               silence_logs=logging.CRITICAL)
    return _ClientAndCluster(Client(cluster), cluster)


def max_local_workers() -> Any:
    """The most worker processes local_client starts: the cores this process may run on."""
    from .._kernels.threads import available_cores
    return available_cores()


class _ClientAndCluster:
    def __init__(self, client, cluster):
        self.client, self.cluster = client, cluster

    def __enter__(self):
        return self.client

    def __exit__(self, *exc):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def connect(address: Any, timeout: int = 30) -> Any:
    """A Client of the scheduler at ``address``, as a context manager (closed on exit)."""
    from distributed import Client
    try:
        client = Client(address, timeout=timeout)
    except (OSError, ValueError, TypeError) as exc:
        raise RankfastError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    return _ClientAndCluster(client, None)


# ------------------------------------------------------------------ scoring

def _score_file(path, model):
    """Task: (scores, labels, qids) of one file's documents under model."""
    part = _read_part(path)
    return model.predict(part.X), part.y, part.qid


def predict(model: Any, source: Any, client: Any) -> tuple[np.ndarray, ...]:
    """Score SVMlight files on the workers; each worker reads its own files.

    Returns ``(scores, y, qid)`` of all documents, files in the order of
    expand_sources (a glob's matches sorted), lines in file order: what
    rank_classify writes and summarises.  Raises InputError for an
    unreadable file.
    """
    files = expand_sources(source)
    results = gather(client, [client.submit(_score_file, path, model, pure=False)
                              for path in files])
    return tuple(np.concatenate([r[k] for r in results]) for k in range(3))


def cluster_client(scheduler: Any = None, workers: int | None = None) -> Any:
    """A context manager giving a Client: of the scheduler at ``scheduler``, or of a new local cluster.

    ``workers`` > 0 starts a LocalCluster of that many one-thread worker
    processes on 127.0.0.1 (no dashboard), stopped on exit.  Raises
    MissingDependencyError when dask or distributed is missing, RankfastError when the
    scheduler cannot be reached.
    """
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise MissingDependencyError("a Dask cluster needs dask and distributed: "
                                     "pip install 'rankfast[dask]'") from None
    if scheduler is not None:
        return connect(scheduler)
    return local_client(workers)
