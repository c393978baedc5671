"""The data on a Dask cluster: files or frames read on the workers, routed to shards by query.

Every query lives whole on one shard (qids hashed by Fibonacci hashing), so
each shard computes its part of a pairwise objective alone; results are
summed in shard order, so a fit gives the same bits however the work was spread.
"""
from __future__ import annotations

import dataclasses
import glob
import operator
import os

import numpy as np
import scipy.sparse as sp

from ..data.queries import group_rows
from ..data.sparse import CSR
from ..errors import InputError, RankfastError, UsageError
from ..io.svmlight import load_svmlight

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    import pandas as pd

HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)       # Fibonacci hashing of qids to shards
MAX_RETRIES = 5


class StaleShard(Exception):
    """A shard was asked for a step whose state it does not hold (it was recomputed)."""


class ShardReadError(Exception):
    """InputError raised on a worker, in a form that pickles (file, line, reason)."""


@dataclasses.dataclass
class Summary:
    """What the driver knows of the distributed data set."""

    n_documents: int
    n_features: int
    n_queries: int
    n_shards: int


# ------------------------------------------------------------------ inputs

def expand_sources(source: Any) -> Any:
    """File names of ``source``: a glob pattern (sorted matches) or a list of names and patterns.

    Raises InputError for a pattern that matches nothing.
    """
    patterns = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files = []
    for pattern in (os.fspath(p) for p in patterns):
        if pattern == "-":
            raise UsageError("the workers cannot read standard input: give files")
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern))
            if not matches:
                raise InputError(pattern, None, "no file matches this pattern")
            files.extend(matches)
        else:
            files.append(pattern)
    if not files:
        raise UsageError("no input files given")
    return files


def _data_bytes(obj, depth=0):
    """Bytes of the arrays (dense or sparse) among an object's attributes: what Dask should see.

    Dask sizes objects it does not know by sys.getsizeof; without this a shard of
    gigabytes would look like a few bytes to its memory manager and work stealing.
    """
    total = 0
    for value in vars(obj).values():
        if isinstance(value, np.ndarray):
            total += value.nbytes
        elif sp.issparse(value):
            total += sum(getattr(value, a).nbytes for a in ("data", "indices", "indptr")
                         if hasattr(value, a))
        elif depth < 2 and hasattr(value, "__dict__") and not isinstance(value, type):
            total += _data_bytes(value, depth + 1)
    return total


@dataclasses.dataclass
class _Part:
    """Documents of a shard: X (CSR, width = its highest feature index), y, qid, and on a
    click log each document's weight (its cost:, 1 without one; else None)."""

    X: sp.csr_matrix
    y: np.ndarray
    qid: np.ndarray
    weight: np.ndarray | None = None

    def __sizeof__(self):
        return _data_bytes(self)


def _read_part(path, clicks=False, clip=None):
    """Task: one SVMlight file as a _Part (InputError → ShardReadError, which pickles); with
    ``clicks``, a click log whose clicks weigh their cost: (rankfast.clicks.log)."""
    try:
        ds = load_svmlight(path, costs=clicks)
        weight = None
        if clicks:                  # a query may go on in another file: no click is judged
            from ..clicks.log import click_weights  # on half of it (check_preferred)
            weight = click_weights(ds, clip, check_preferred=False)[0]
    except InputError as exc:
        raise ShardReadError(exc.path, exc.line, exc.reason) from None
    return _Part(ds.X, ds.y, ds.qid, weight)


def _array_part(X, y, qid):
    """Task: a row block of dask arrays as a _Part (ValueError unless finite and aligned)."""
    from ..learners._linear import check_training_input  # as the learners' fit checks
    X = np.asarray(X, dtype=np.float64)
    check_training_input(X, y, qid)
    return _Part(sp.csr_matrix(X), np.asarray(y, dtype=np.float64).ravel(),
                 np.asarray(qid).ravel().astype(np.int64))


def _frame_part(frame, label, qid):
    """Task: a partition of a dask DataFrame as a _Part (every other column a feature, in order)."""
    features = [c for c in frame.columns if c not in (label, qid)]
    return _array_part(frame[features].to_numpy(dtype=np.float64), frame[label].to_numpy(),
                       frame[qid].to_numpy())


def _parts(client, source, label, qid_column, clicks=False, clip=None):
    """Futures of the shards' _Parts: files read on the workers, or dask array / DataFrame chunks."""
    import dask
    if clicks and not isinstance(source, (str, list)):
        raise UsageError("clicks are read from svm_proprank's files (each click's cost:): "
                         "give the files")
    if hasattr(source, "to_delayed") and hasattr(source, "columns"):       # dask DataFrame
        for column in (label, qid_column):
            if column not in source.columns:
                raise UsageError(f"the DataFrame has no column {column!r}")
        return client.compute([dask.delayed(_frame_part)(frame, label, qid_column)
                               for frame in source.to_delayed()])
    if isinstance(source, tuple) and len(source) == 3 and hasattr(source[0], "to_delayed"):
        X, y, qid = source
        X = X.rechunk({1: -1})
        blocks = X.to_delayed().ravel()
        ys = y.rechunk((X.chunks[0],)).to_delayed().ravel()
        qs = qid.rechunk((X.chunks[0],)).to_delayed().ravel()
        return client.compute([dask.delayed(_array_part)(b, yb, qb)
                               for b, yb, qb in zip(blocks, ys, qs)])
    files = expand_sources(source)
    return [client.submit(_read_part, path, clicks, clip, pure=False) for path in files]


def _owner(qid, n_shards):
    """Shard that assembles each (straddling) query: a multiplicative hash of its qid."""
    h = (np.asarray(qid, dtype=np.int64).view(np.uint64) * HASH_MULTIPLIER) >> np.uint64(32)
    return (h % np.uint64(n_shards)).astype(np.int64)


def _qid_buckets(part, n_shards):
    """Task: the shard's distinct qids, split into n_shards buckets by _owner."""
    qids = np.unique(part.qid)
    owner = _owner(qids, n_shards)
    return tuple(qids[owner == b] for b in range(n_shards))


def _straddling(*bucket_of_shard):
    """Task: (qids held by more than one shard, for each the shards holding it as a bool matrix)."""
    everything = np.concatenate([np.zeros(0, dtype=np.int64)] + list(bucket_of_shard))
    values, counts = np.unique(everything, return_counts=True)
    shared = values[counts > 1]
    holds = np.array([np.isin(shared, b) for b in bucket_of_shard]).reshape(len(bucket_of_shard), -1)
    return shared, holds


def _route(part, shared, n_shards):
    """Task: {None: rows this shard keeps, j: its rows of straddling queries that shard j assembles}."""
    mask = np.isin(part.qid, shared)
    pieces = {None: _subset(part, np.flatnonzero(~mask))}
    rows = np.flatnonzero(mask)
    owner = _owner(part.qid[rows], n_shards)
    for j in np.unique(owner):
        pieces[int(j)] = _subset(part, rows[owner == j])
    return pieces


def _subset(part, rows):
    return _Part(part.X[rows], part.y[rows], part.qid[rows],
                 None if part.weight is None else part.weight[rows])


def _assemble(*pieces):
    """Task: the pieces stacked in order (shard order: each query keeps its file order)."""
    pieces = [p for p in pieces if p is not None]
    width = max((p.X.shape[1] for p in pieces), default=0)
    X = sp.vstack([sp.csr_matrix((p.X.data, p.X.indices, p.X.indptr), shape=(p.X.shape[0], width))
                   for p in pieces], format="csr") if pieces else sp.csr_matrix((0, 0))
    weighted = any(p.weight is not None for p in pieces)
    weight = np.concatenate([np.ones(len(p.y)) if p.weight is None else p.weight
                             for p in pieces]) if weighted else None
    return _Part(X, np.concatenate([p.y for p in pieces]),
                 np.concatenate([p.qid for p in pieces]).astype(np.int64), weight)


def _describe(part):
    """Task: (documents, queries, highest feature index, columns used, columns whose values
    differ within one of its queries) of an assembled shard (it holds whole queries)."""
    from ..learners._linear import varying_columns  # the columns the learners' fit keeps
    X = part.X
    used = np.unique(X.indices[:X.nnz]).astype(np.int64)
    perm, starts = group_rows(part.qid)
    varies = varying_columns(CSR(X.data[:X.nnz], X.indices[:X.nnz], X.indptr, X.shape), starts,
                             perm)
    return X.shape[0], len(np.unique(part.qid)), X.shape[1], used, np.flatnonzero(varies)


def _weight_table(sample_weight):
    """(sorted int64 query ids, their float64 weights) of a mapping qid → weight (dict, Series)."""
    items = sample_weight.items() if hasattr(sample_weight, "items") else None
    if items is None or isinstance(sample_weight, str):
        raise UsageError("sample_weight for distributed training maps each query id to its "
                         "weight (a dict or a pandas Series indexed by qid)")
    pairs = list(items)
    ids = np.array([key for key, _ in pairs]).reshape(-1)
    values = np.array([value for _, value in pairs]).reshape(-1)
    if ids.dtype.kind not in "iub" or values.dtype.kind not in "iubf":
        raise ValueError("sample_weight must map integer query ids to numbers")
    ids, values = ids.astype(np.int64), values.astype(np.float64)
    if len(np.unique(ids)) != len(ids):
        raise ValueError("sample_weight names a query id twice")
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError("sample_weight must be finite and non-negative")
    order = np.argsort(ids)
    return ids[order], values[order]


def _query_weight_sum(part, ids, values):
    """Task: (Σ of the weights of the shard's queries, a query id without weight or None)."""
    qids = np.unique(part.qid)
    at = np.minimum(np.searchsorted(ids, qids), max(len(ids) - 1, 0))
    found = (ids[at] == qids) if len(ids) else np.zeros(len(qids), dtype=bool)
    missing = qids[~found]
    return float(values[at[found]].sum()), (int(missing[0]) if len(missing) else None)


def _query_multipliers(part, table):
    """The multiplier of each query of the shard, in _grouped's order (None without weights)."""
    if table is None:
        return None
    if isinstance(table, ClickScale):
        return _click_weights(part, table)[0]
    ids, values = table
    perm, starts = group_rows(part.qid)
    qid = part.qid if perm is None else part.qid[perm]
    return values[np.searchsorted(ids, qid[starts[:-1]])]


def document_weights(part: Any, table: Any) -> np.ndarray | None:
    """Each document's weight as the preferred side of a pair, in _grouped's order (None: 1)."""
    return _click_weights(part, table)[1] if isinstance(table, ClickScale) else None


@dataclasses.dataclass(frozen=True)
class ClickScale:
    """How the shards weigh a click log's queries (rankfast.data.validation.pair_weights, over
    every shard): weights scaled by 2**-exponent, each query's mean weight over its preferred
    documents times ``factor`` = Q / their sum; ``mean`` is that sum over Q, unscaled."""

    exponent: int
    factor: float
    mean: float


def _click_weights(part, scale):
    """(query multipliers, document weights or None), in _grouped's order, of a click shard."""
    from ..data.queries import Queries
    from ..data.validation import preferred_weights
    perm, _ = group_rows(part.qid)
    weight = np.ldexp(part.weight, -scale.exponent)
    y, qid = part.y, part.qid
    if perm is not None:
        weight, y, qid = weight[perm], y[perm], qid[perm]
    means, document = preferred_weights(weight, Queries(qid), y)
    return means * scale.factor, document


def _largest_weight(part):
    return float(part.weight.max()) if part.weight is not None and len(part.weight) else 0.0


def _click_sum(part, exponent):
    """Task: Σ over the shard's queries of their mean preferred weight (scaled by 2**-exponent)."""
    from ..data.queries import Queries
    from ..data.validation import preferred_documents, preferred_means
    queries = Queries(part.qid)
    weight = np.ldexp(part.weight, -exponent)
    return float(preferred_means(weight, queries, preferred_documents(part.y, queries)).sum())


def click_scale(client: Any, data: Any) -> ClickScale:
    """The ClickScale of a click log on the cluster: two rounds, one number from each shard."""
    largest = max(gather(client, [client.submit(_largest_weight, part, **_on(where))
                                  for part, where in zip(data.parts, data.places)]), default=0.0)
    exponent = int(np.frexp(largest)[1]) if largest > 0 else 0
    total = _ordered_sum(gather(client, [client.submit(_click_sum, part, exponent, **_on(where))
                                         for part, where in zip(data.parts, data.places)]))
    if not total > 0:
        raise ValueError("every click weighs zero, nothing to train on")
    Q = data.summary.n_queries
    return ClickScale(exponent, Q / total, float(np.ldexp(total / Q, exponent)))


def query_multipliers(client: Any, data: Any, sample_weight: Mapping[int, float] | pd.Series | None
                      ) -> tuple[np.ndarray, np.ndarray] | None:
    """(ids, w_q Q / Σ_r w_r) over the data's queries: the table the shards read, or None.

    Raises
    ------
    ValueError
        A query of the data without a weight, or every weight zero.
    """
    if sample_weight is None:
        return None
    ids, values = _weight_table(sample_weight)
    sums = gather(client, [client.submit(_query_weight_sum, part, ids, values, **_on(where))
                           for part, where in zip(data.parts, data.places)])
    missing = [m for _, m in sums if m is not None]
    if missing:
        raise ValueError(f"sample_weight has no weight for query {missing[0]}")
    total = _ordered_sum(s for s, _ in sums)
    if not total > 0:
        raise ValueError("sample_weight: every weight is zero, nothing to train on")
    return ids, values * (data.summary.n_queries / total)


def _grouped(part, used):
    """(X, y, starts): the shard's rows grouped by query, columns in the global space ``used``."""
    X = part.X
    indices = np.searchsorted(used, X.indices[:X.nnz]).astype(np.int32)
    X = CSR(X.data[:X.nnz], indices, X.indptr, (X.shape[0], len(used)))     # as TrainingData holds X
    perm, starts = group_rows(part.qid)
    y = part.y
    if perm is not None:
        X, y = X[perm], y[perm]
    return X, np.ascontiguousarray(y, dtype=np.float64), starts


class ShardedData:
    """Documents spread over a cluster's workers, each query whole on one shard.

    Parameters
    ----------
    client : distributed.Client
    source : str, list of str, tuple of dask arrays (X, y, qid), or dask DataFrame
        SVMlight files (glob patterns expanded, sorted), row-chunked dask
        arrays, or a DataFrame with columns ``label`` and ``qid`` (every other
        column a feature, in order: feature index 1, 2, ...).
    label, qid : str
        The DataFrame's label and query-id columns.

    Attributes
    ----------
    parts : list of distributed.Future
        The non-empty shards (_Part), in shard order.
    places : list of str or None
        The worker that holds each (tasks on a shard are sent there).
    summary : Summary
    used : ndarray of int64
        0-based indices of the columns that hold a non-zero somewhere (the
        columns one-process training keeps).
    varies : ndarray of bool
        For each column of ``used``: whether its values differ within some query
        (the others get weight 0, as in one-process training).
    """

    def __init__(self, client: Any, source: Any, label: str = "label", qid: str = "qid",
                 clicks: bool = False, clip: float | None = None) -> None:
        self.client = client
        parts = _parts(client, source, label, qid, clicks, clip)
        S = len(parts)
        places = _holders(client, parts)             # where each file was read: it stays there
        shared, holds = self._straddling(parts, places)
        assembled = self._assemble(parts, places, shared, holds)
        described = gather(client, [client.submit(_describe, p, **_on(w))
                                    for p, w in zip(assembled, places)])
        keep = [i for i, d in enumerate(described) if d[0] > 0]
        self.parts = [assembled[i] for i in keep]
        self.places = [places[i] for i in keep]
        self.shard_sizes = [described[i][0] for i in keep]
        n_features = max((d[2] for d in described), default=0)
        self.used = np.unique(np.concatenate([np.zeros(0, dtype=np.int64)]
                                             + [d[3] for d in described]))
        self.varies = np.isin(self.used, np.concatenate([np.zeros(0, dtype=np.int64)]
                                                        + [d[4] for d in described]))
        self.summary = Summary(sum(d[0] for d in described), n_features,
                               sum(d[1] for d in described), S)
        self.n_straddling = len(shared)

    def _straddling(self, parts, places):
        client, S = self.client, len(parts)
        if S < 2:
            return np.zeros(0, dtype=np.int64), np.zeros((S, 0), dtype=bool)
        buckets = [client.submit(_qid_buckets, p, S, **_on(w)) for p, w in zip(parts, places)]
        picked = [[client.submit(operator.getitem, b, k, **_on(w)) for k in range(S)]
                  for b, w in zip(buckets, places)]
        found = gather(client, [client.submit(_straddling, *[picked[i][k] for i in range(S)])
                                for k in range(S)])
        shared = np.concatenate([f[0] for f in found])
        holds = np.concatenate([f[1] for f in found], axis=1)
        return shared, holds

    def _assemble(self, parts, places, shared, holds):
        """Each shard's kept rows plus the straddling rows it assembles, in shard order.

        Every task runs on the worker that read the shard it works on; only the
        pieces of straddling queries travel, to the worker of the shard that
        assembles them.
        """
        client, S = self.client, len(parts)
        if len(shared) == 0:
            return parts
        owner = _owner(shared, S)
        routed = {i: client.submit(_route, parts[i], shared, S, **_on(places[i]))
                  for i in range(S) if holds[i].any()}
        out = []
        for j in range(S):
            sources = [i for i in range(S) if holds[i, owner == j].any()]
            base = (client.submit(operator.getitem, routed[j], None, **_on(places[j]))
                    if j in routed else parts[j])
            pieces = [client.submit(operator.getitem, routed[i], j, **_on(places[i]))
                      for i in sources]
            out.append(client.submit(_assemble, base, *pieces, **_on(places[j]))
                       if pieces else base)
        return out


def gather(client: Any, futures: Any) -> Any:
    """client.gather(futures), with a worker's read error as InputError (file:line) and a
    cluster that keeps losing the work (KilledWorker, cancelled futures) as RankfastError."""
    from concurrent.futures import CancelledError  # distributed's FutureCancelledError is one

    from distributed import KilledWorker
    try:
        return client.gather(futures)
    except ShardReadError as exc:
        raise InputError(*exc.args) from None
    except (KilledWorker, CancelledError) as exc:
        raise RankfastError(f"the Dask cluster lost the work: {exc}") from None


def _holders(client, futures):
    """The worker holding each future's result (waiting for them), or None."""
    from distributed import wait
    wait(futures)
    who = client.who_has(futures)
    return [min(who.get(f.key, ()), default=None) for f in futures]


def _on(worker):
    """submit() options running a task on ``worker`` while it lives (anywhere once it is gone)."""
    return {} if worker is None else {"workers": [worker], "allow_other_workers": True}


# --------------------------------------------------------- running steps

def _ordered_sum(values):
    """Σ values, added left to right (shard order): the same bits on every run."""
    values = list(values)
    total = values[0]
    if isinstance(total, np.ndarray):   # a copy: one shard's array, unpickled from a frame,
        total = total.copy()            # may be unaligned (scipy.linalg.solve refuses it)
    for value in values[1:]:
        total = total + value
    return total


def _nbytes(value):
    """Bytes of the arrays in a (nested tuple of) result(s); 8 per Python number."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return 8 if isinstance(value, (int, float, np.number)) else 0


class Shards:
    """Futures of per-shard objects on the workers, and one task per shard at a time.

    Each call sends its arguments to every shard and gathers one result per
    shard, in shard order.  ``sent`` and ``received`` count the bytes of the
    arrays that crossed between driver and workers (arguments once per shard).
    Tasks are pinned to the worker holding the shard (other workers allowed,
    for when it died), so the shard's data never moves for a step.  Once the
    shards are built, ``data`` lets go of its parts: the workers keep one copy
    of the documents, and Dask can still rebuild a lost shard from its files.
    """

    def __init__(self, client: Any, factory: Any, data: Any, *args: Any) -> None:
        self.client = client
        self.futures = [client.submit(factory, part, *args, pure=False, **_on(where))
                        for part, where in zip(data.parts, data.places)]
        self.sent = self.received = self.calls = 0
        self.locate()
        data.parts = []         # the shards hold the documents now; Dask keeps the recipe

    def locate(self) -> None:
        """Where each shard lives now (after a fault, Dask may have rebuilt it elsewhere)."""
        self.where = _holders(self.client, self.futures)

    def map(self, function: Any, *args: Any) -> Any:
        """[function(shard, *args) for each shard], run on the workers."""
        futures = [self.client.submit(function, shard, *args, pure=False, **_on(where))
                   for shard, where in zip(self.futures, self.where)]
        results = gather(self.client, futures)
        self.calls += 1
        self.sent += len(futures) * sum(_nbytes(a) for a in args)
        self.received += sum(_nbytes(r) for r in results)
        return results

    def traffic(self, repeated_steps: Any) -> Any:
        """Traffic so far."""
        return Traffic(self.calls, self.sent, self.received, repeated_steps)


@dataclasses.dataclass
class Traffic:
    """Rounds of tasks and bytes of arrays between driver and workers during the optimisation."""

    rounds: int
    sent: int
    received: int
    repeated_steps: int
