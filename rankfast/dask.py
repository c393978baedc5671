"""Distributed training on a Dask cluster: the one-process objective, summed over workers.

Every linear learner here minimises ½‖w‖² plus a sum over queries, so its value,
gradient, Hessian-vector products (PRSVM, RankNCG) and normal equations (RankRLS)
are sums of per-query parts.  Each worker holds whole queries (a *shard*) and the
estimator's own objective class over them (rankfast.ranksvm.SquaredHingeObjective,
rankfast.rankncg.ErfcPairObjective, RankRLS's centring and normal-equation
operator); the driver runs the same optimiser as one process (rankfast.newton.
minimize, rankfast.rankncg.nonlinear_cg, a Cholesky solve or
rankfast.newton.conjugate_gradient) and asks the shards for their parts.  Only
d-vectors cross the network per step (RankRLS's dense solver: one d × d matrix per
shard, once); the documents never pass through the driver.

Exactly the one-process objective: c_q = C / Q and λ = Q / (2C) use the global
number of queries Q, every shard works in the global space of the features that
occur (the columns one process keeps), and the driver adds the parts in shard
order.  A shard's part is its objective's value (gradient, product) minus the
regulariser ½‖w‖² (w, v), which the driver adds once: the result equals the
one-process objective up to rounding (tests check 1e-9 relative).

Query weights.  ``fit(..., sample_weight={qid: weight})`` weighs each query's
term as the learners' ``sample_weight`` does (rankfast.base.query_sample_weights):
the driver sums the weights of the data's queries shard by shard (each query is
whole on one shard) and every shard multiplies its queries' c_q (α_q for RankRLS)
by w_q Q / Σ_r w_r, the one-process multipliers.  A mapping, not an array of
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

import dataclasses
import glob
import operator
import os
import time

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .csr import CSR
from .data import group_rows, load_svmlight
from .errors import InputError, MissingDependencyError, RankfastError, UsageError
from .precondition import StrengtheningPreconditioner

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    from ._typing import Log, Vector

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
    """Documents of a shard: X (CSR, width = its highest feature index), y, qid."""

    X: sp.csr_matrix
    y: np.ndarray
    qid: np.ndarray

    def __sizeof__(self):
        return _data_bytes(self)


def _read_part(path):
    """Task: one SVMlight file as a _Part (InputError → ShardReadError, which pickles)."""
    try:
        ds = load_svmlight(path)
    except InputError as exc:
        raise ShardReadError(exc.path, exc.line, exc.reason) from None
    return _Part(ds.X, ds.y, ds.qid)


def _array_part(X, y, qid):
    """Task: a row block of dask arrays as a _Part (ValueError unless finite and aligned)."""
    from .linear import check_training_input
    X = np.asarray(X, dtype=np.float64)
    check_training_input(X, y, qid)
    return _Part(sp.csr_matrix(X), np.asarray(y, dtype=np.float64).ravel(),
                 np.asarray(qid).ravel().astype(np.int64))


def _frame_part(frame, label, qid):
    """Task: a partition of a dask DataFrame as a _Part (every other column a feature, in order)."""
    features = [c for c in frame.columns if c not in (label, qid)]
    return _array_part(frame[features].to_numpy(dtype=np.float64), frame[label].to_numpy(),
                       frame[qid].to_numpy())


def _parts(client, source, label, qid_column):
    """Futures of the shards' _Parts: files read on the workers, or dask array / DataFrame chunks."""
    import dask
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
    return [client.submit(_read_part, path, pure=False) for path in files]


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
    return _Part(part.X[rows], part.y[rows], part.qid[rows])


def _assemble(*pieces):
    """Task: the pieces stacked in order (shard order: each query keeps its file order)."""
    pieces = [p for p in pieces if p is not None]
    width = max((p.X.shape[1] for p in pieces), default=0)
    X = sp.vstack([sp.csr_matrix((p.X.data, p.X.indices, p.X.indptr), shape=(p.X.shape[0], width))
                   for p in pieces], format="csr") if pieces else sp.csr_matrix((0, 0))
    return _Part(X, np.concatenate([p.y for p in pieces]),
                 np.concatenate([p.qid for p in pieces]).astype(np.int64))


def _describe(part):
    """Task: (documents, queries, highest feature index, columns used, columns whose values
    differ within one of its queries) of an assembled shard (it holds whole queries)."""
    from .linear import varying_columns
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
    ids, values = table
    perm, starts = group_rows(part.qid)
    qid = part.qid if perm is None else part.qid[perm]
    return values[np.searchsorted(ids, qid[starts[:-1]])]


def query_multipliers(client: Any, data: Any, sample_weight: Vector) -> Any:
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

    def __init__(self, client: Any, source: Any, label: str = "label", qid: str = "qid") -> None:
        self.client = client
        parts = _parts(client, source, label, qid)
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


class _Stepper:
    """Calls a step on every shard; on StaleShard, restores the shards' state and repeats it."""

    def __init__(self, shards):
        self.shards = shards
        self.repeats = 0

    def call(self, function, *args):
        for _ in range(MAX_RETRIES):
            try:
                return self.shards.map(function, *args)
            except StaleShard:
                self.repeats += 1
                self.shards.locate()
                try:
                    self.restore()
                except StaleShard:
                    continue
        raise RankfastError(f"a step failed {MAX_RETRIES} times: the cluster keeps losing shards")

    def restore(self):
        """Recompute every shard's per-step state (subclasses)."""


def _check(shard, tag):
    if shard.tag != tag:
        raise StaleShard(tag)


# ------------------------------------------------------------------ PRSVM

class _SquaredHingePart:
    """A shard's SquaredHingeObjective and the step it is at (worker side)."""

    __sizeof__ = _data_bytes

    def __init__(self, part, used, n_queries, C, loss, table=None):
        from .base import weighted
        from .ranksvm import SquaredHingeObjective, query_weights
        X, y, starts = _grouped(part, used)
        self.objective = SquaredHingeObjective(
            X, y, starts, weighted(query_weights(y, starts, C, loss, n_queries),
                                   _query_multipliers(part, table)))
        self.tag, self.phi = None, None

    def __getstate__(self):                     # a copy moved elsewhere holds no step
        return {"objective": self.objective, "tag": None, "phi": None}


def _hinge_value_grad(shard, tag, w):
    """The shard's loss and its gradient at w (its objective minus ½‖w‖², w)."""
    f, g = shard.objective.value_grad(w)
    shard.tag, shard.phi = tag, None
    return f - 0.5 * (w @ w), g - w


def _hinge_diagonal(shard):
    """The shard's part of the Hessian diagonal with every pair active (no ½‖w‖² term)."""
    return shard.objective.pair_diagonal


def _pair_gram(shard):
    """The shard's XᵀLX: its part of the full preconditioner."""
    return shard.objective.preconditioner.gram()


def _stored_entries(shard):
    return shard.objective.preconditioner.stored_entries()


class _Strengthened(StrengtheningPreconditioner):
    """The driver's preconditioner: the shards' summed diagonal, then (when the solver asks and
    it is cheap) the summed I + scale · XᵀLX: one round of tasks, a d × d matrix from each shard."""

    def __init__(self, shards, diagonal, scale):
        super().__init__(diagonal, scale)
        self.shards = shards

    def stored_entries(self):
        return _ordered_sum(self.shards.map(_stored_entries))

    def gram(self):
        return _ordered_sum(self.shards.map(_pair_gram))


def _hinge_hessvec(shard, tag, v):
    _check(shard, tag)
    return shard.objective.hessvec(v) - v


def _hinge_line(shard, tag, w, d):
    _check(shard, tag)
    shard.phi = (shard.objective.line(w, d), w @ w, w @ d, d @ d)


def _hinge_phi(shard, tag, t):
    """The shard's loss at w + t d (phi(t) minus its regulariser term)."""
    _check(shard, tag)
    if shard.phi is None:
        raise StaleShard(tag)
    phi, ww, wd, dd = shard.phi
    return phi(t) - 0.5 * (ww + 2.0 * t * wd + t * t * dd)


class NewtonObjective(_Stepper):
    """PRSVM's objective for rankfast.newton.minimize: ½‖w‖² plus the shards' losses.

    value_grad, hessvec and line have the meaning of rankfast.newton's
    protocol; each is one round of tasks, one per shard, sending one d-vector
    (or a number) to each and receiving one d-vector (or a number) from each.
    """

    curvature_floor = 1.0          # ½‖w‖² plus a convex loss: rankfast.newton certifies with it

    def __init__(self, shards: Any) -> None:
        super().__init__(shards)
        self.tag, self.w = 0, None
        self.direction: Any = None
        # as SquaredHingeObjective's: the shards' parts of the pair diagonal, then of I + 2XᵀLX
        self.preconditioner = _Strengthened(
            shards, 1.0 + _ordered_sum(shards.map(_hinge_diagonal)), 2.0)

    def precondition(self, r: Any) -> Any:
        return self.preconditioner(r)

    def strengthen(self) -> Any:
        return self.preconditioner.strengthen()

    def value_grad(self, w: Vector) -> Any:
        self.tag += 1
        self.w, self.direction = w.copy(), None
        parts = self.shards.map(_hinge_value_grad, self.tag, w)
        return (0.5 * (w @ w) + _ordered_sum(p[0] for p in parts),
                w + _ordered_sum(p[1] for p in parts))

    def hessvec(self, v: Vector) -> Any:
        return v + _ordered_sum(self.call(_hinge_hessvec, self.tag, v))

    def line(self, w: Vector, d: Vector) -> Any:
        self.direction = (w.copy(), d.copy())
        self.call(_hinge_line, self.tag, w, d)
        ww, wd, dd = w @ w, w @ d, d @ d

        def phi(t):
            return 0.5 * (ww + 2.0 * t * wd + t * t * dd) + _ordered_sum(
                self.call(_hinge_phi, self.tag, t))
        return phi

    def restore(self) -> None:
        self.shards.map(_hinge_value_grad, self.tag, self.w)
        if self.direction is not None:
            self.shards.map(_hinge_line, self.tag, *self.direction)


def _fit_prsvm(learner, data, client, log, table=None):
    from .linear import check_loss
    from .newton import minimize
    check_loss(learner.loss)
    shards = Shards(client, _SquaredHingePart, data, data.used,
                    data.summary.n_queries, float(learner.C), learner.loss, table)
    objective = NewtonObjective(shards)
    learner.result_ = minimize(objective, np.zeros(len(data.used)), tol=learner.tol,
                               max_iter=learner.max_iter, log=log)
    learner.C_ = learner.C
    if log is not None:
        result = learner.result_
        log(f"Newton: {result.message} after {result.iterations} iterations "
            f"({result.cg_iterations} CG steps), objective {result.f:.8g}", 1)
    return learner.result_.w, shards.traffic(objective.repeats)


# ---------------------------------------------------------------- RankNCG

class _ErfcPart:
    """A shard's ErfcPairObjective, its point (scores, γ) and line (X d, trial γ's) (worker side)."""

    __sizeof__ = _data_bytes

    def __init__(self, part, used, n_queries, C, loss, eps, fast, table=None):
        from .base import weighted
        from .rankncg import ErfcPairObjective
        from .ranksvm import query_weights
        X, y, starts = _grouped(part, used)
        # never strengthened here: the driver sums the shards' parts (_Strengthened)
        self.objective = ErfcPairObjective(
            X, y, starts, weighted(query_weights(y, starts, C, loss, n_queries),
                                   _query_multipliers(part, table)), eps, fast,
            preconditioner="diagonal")
        self.refined = 0                # the driver's refine() calls this objective has had
        self.tag = self.scores = self.gamma = self.sd = None
        self.gammas = {}

    def __getstate__(self):
        return {"objective": self.objective, "refined": self.refined, "tag": None,
                "scores": None, "gamma": None, "sd": None, "gammas": {}}


def _erfc_constants(shard):
    """(Σ_pairs c_q (x_lj − x_kj)² per column, |X|ᵀδ): the parts of the preconditioner and error bound."""
    from .rankncg import PSI2_MAX
    ob = shard.objective
    pair_squares = (1.0 / ob.inverse_diagonal - 1.0) / PSI2_MAX
    return pair_squares, ob.products.rmatvec(ob.delta, entries="abs")


def _erfc_refine(shard, times):
    """The shard's fast sums refined ``times`` times since it was built (ErfcPairObjective.refine:
    a shard recomputed after a lost worker starts again from the first accuracy);
    (whether the last refinement did anything, eps, the shard's |X|ᵀδ)."""
    ob = shard.objective
    refined = True
    while shard.refined < times:
        refined = ob.refine()
        shard.refined += 1
    return refined, ob.eps, ob.products.rmatvec(ob.delta, entries="abs")


def _erfc_point(shard, tag, w):
    """Xᵀγ at w, keeping the scores and γ as the shard's point ``tag``."""
    ob = shard.objective
    shard.scores = ob.products.matvec(w)
    shard.gamma = ob.score_gradient(shard.scores)
    shard.tag, shard.sd, shard.gammas = tag, None, {}
    return ob.products.rmatvec(shard.gamma)


def _erfc_line(shard, tag, d):
    """Along d from the point: (Σ |X d| δ, Σ c n_other (Xd − query means)², slope parts at 0)."""
    _check(shard, tag)
    ob = shard.objective
    shard.sd = ob.products.matvec(d)
    shard.gammas = {0.0: shard.gamma}
    sizes = np.maximum(np.diff(ob.starts), 1)
    mean = np.bincount(ob.qidx, weights=shard.sd, minlength=len(sizes)) / sizes
    centred = shard.sd - mean[ob.qidx]
    return (float(np.abs(shard.sd) @ ob.delta), float(ob.c * ob.n_other @ (centred * centred)),
            _erfc_slope(shard, tag, 0.0))


def _erfc_slope(shard, tag, t):
    """(Σ X d ∘ γ(t), Σ |X d ∘ γ(t)|, documents) at w + t d."""
    _check(shard, tag)
    if shard.sd is None:
        raise StaleShard(tag)
    gamma = shard.gammas.get(t)
    if gamma is None:
        gamma = shard.objective.score_gradient(shard.scores + t * shard.sd)
        shard.gammas[t] = gamma
    products = shard.sd * gamma
    return float(products.sum()), float(np.abs(products).sum()), len(products)


def _erfc_move(shard, tag, new_tag, t):
    """Xᵀγ at w + t d, which becomes the shard's point ``new_tag``."""
    _check(shard, tag)
    if shard.sd is None:
        raise StaleShard(tag)
    scores = shard.scores + t * shard.sd
    gamma = shard.gammas.get(t)
    if gamma is None:
        gamma = shard.objective.score_gradient(scores)
    shard.tag, shard.scores, shard.gamma, shard.sd, shard.gammas = new_tag, scores, gamma, None, {}
    return shard.objective.products.rmatvec(gamma)


@dataclasses.dataclass
class _Point:
    w: np.ndarray
    g: np.ndarray
    tag: int


class ErfcObjective(_Stepper):
    """RankNCG's objective for rankfast.rankncg.nonlinear_cg: ½‖w‖² plus the shards' erfc losses.

    ``point``, ``precondition``, ``line`` and ``gradient_error`` as
    ErfcPairObjective's, with every sum over documents a sum of the shards'.
    """

    def __init__(self, shards: Any) -> None:
        from .rankncg import PSI2_MAX
        super().__init__(shards)
        parts = shards.map(_erfc_constants)
        self.preconditioner = _Strengthened(
            shards, 1.0 + PSI2_MAX * _ordered_sum(p[0] for p in parts), PSI2_MAX)
        self.error_vector = _ordered_sum(p[1] for p in parts)
        self.refined = 0                # refinements of the shards' fast sums (refine)
        self.tag = 0
        self.current: Any = None
        self.direction: Any = None

    def _new_tag(self):
        self.tag += 1
        return self.tag

    def point(self, w: Vector) -> Any:
        tag = self._new_tag()
        self.current, self.direction = (tag, w.copy()), None
        return _Point(w, w + _ordered_sum(self.shards.map(_erfc_point, tag, w)), tag)

    def precondition(self, g: Any) -> Any:
        return self.preconditioner(g)

    def strengthen(self) -> Any:
        return self.preconditioner.strengthen()

    def refine(self) -> Any:
        """The shards' fast sums 1e4 times more accurate, as ErfcPairObjective.refine."""
        self.refined += 1
        parts = list(self.shards.map(_erfc_refine, self.refined))
        self.error_vector = _ordered_sum(p[2] for p in parts)
        self.eps = parts[0][1]
        return all(p[0] for p in parts)

    def gradient_error(self) -> Any:
        return self.error_vector

    def line(self, point: Any, d: Vector) -> Any:
        return _ErfcLine(self, point, d)

    def restore(self) -> None:
        tag, w = self.current
        if self.refined:
            self.shards.map(_erfc_refine, self.refined)
        self.shards.map(_erfc_point, tag, w)
        if self.direction is not None:
            self.shards.map(_erfc_line, tag, self.direction)


class _ErfcLine:
    """rankncg._Line's φ'(t) ± error and curvature bounds, from the shards' sums."""

    def __init__(self, objective, point, d):
        from .rankncg import PSI2_MAX
        self.objective, self.start, self.d = objective, point, d
        objective.direction = d.copy()
        parts = objective.call(_erfc_line, point.tag, d)
        self.error = _ordered_sum(p[0] for p in parts)
        self.curvature = 2.0 * PSI2_MAX * _ordered_sum(p[1] for p in parts)
        self.wd, self.dd = float(point.w @ d), float(d @ d)
        self.gammas = {0.0: [p[2] for p in parts]}

    def curvature_bounds(self):
        return self.dd, (self.dd + self.curvature) * (1.0 + 1e-12)

    def slope(self, t):
        from .rankncg import ROUNDING
        parts = self.gammas.get(t)
        if parts is None:
            parts = self.gammas[t] = self.objective.call(_erfc_slope, self.start.tag, t)
        products = _ordered_sum(p[0] for p in parts)
        absolute = _ordered_sum(p[1] for p in parts)
        size = sum(p[2] for p in parts) + len(self.d)
        value = self.wd + t * self.dd + products
        rounding = ROUNDING * size * (abs(self.wd) + t * self.dd + absolute)
        return value, self.error + rounding

    def point(self, t):
        ob = self.objective
        tag = ob._new_tag()
        w = self.start.w + t * self.d
        g = w + _ordered_sum(ob.call(_erfc_move, self.start.tag, tag, t))
        ob.current, ob.direction = (tag, w.copy()), None
        return _Point(w, g, tag)


def _fit_rankncg(learner, data, client, log, table=None):
    from .rankncg import nonlinear_cg
    shards = Shards(client, _ErfcPart, data, data.used, data.summary.n_queries,
                    float(learner.C), learner.loss, learner.erfc_eps, learner.erfc == "fast",
                    table)
    objective = ErfcObjective(shards)
    learner.result_ = nonlinear_cg(objective, np.zeros(len(data.used)), tol=learner.tol,
                                   max_iter=learner.max_iter, log=log)
    learner.C_ = learner.C                              # to_model's metadata, as _fit_prsvm
    if log is not None:
        log(learner.result_.summary(), 1)
    return learner.result_.w, shards.traffic(objective.repeats)


# ---------------------------------------------------------------- RankRLS

def _rls_gram(part, used, loss, table=None):
    """Task: (X̂ᵀX̂, X̂ᵀŷ) of a shard, X̂ = blockdiag(√α_q P_q) X (rankrls.centred)."""
    from .base import weighted
    from .rankrls import centred, query_scale
    X, y, starts = _grouped(part, used)
    alpha = weighted(query_scale(starts, loss), _query_multipliers(part, table))
    Xh = centred(X, starts, alpha)
    yh = centred(y[:, None], starts, alpha).ravel()
    return Xh.T @ Xh, Xh.T @ yh


class _LaplacianPart:
    """A shard's v ↦ XᵀLXv (rankrls._NormalEquations with λ = 0) and XᵀLy (worker side)."""

    __sizeof__ = _data_bytes

    def __init__(self, part, used, loss, table=None):
        from .base import weighted
        from .rankrls import _NormalEquations, query_scale
        X, y, starts = _grouped(part, used)
        alpha = weighted(query_scale(starts, loss), _query_multipliers(part, table))
        self.operator = _NormalEquations(X, starts, alpha, 0.0)
        self.y = y


def _laplacian_setup(shard):
    """(XᵀLy, diag(XᵀLX)) of the shard."""
    with np.errstate(divide="ignore"):
        diagonal = 1.0 / shard.operator.inverse_diag          # 1 / (diag + 0); 1/inf = 0
    return shard.operator.rhs(shard.y), diagonal


def _laplacian_product(shard, v):
    return shard.operator.hessvec(v)


def _fit_rankrls(learner, data, client, log, table=None):
    from .linear import check_loss
    from .newton import conjugate_gradient
    from .rankrls import DENSE_MAX_ENTRIES, DENSE_MAX_FEATURES, _check_regularisation
    check_loss(learner.loss)
    if learner.solver not in ("auto", "dense", "cg"):
        raise UsageError(f"solver must be auto, dense or cg (got {learner.solver!r})")
    d, Q = len(data.used), data.summary.n_queries
    learner.C_ = float(learner.C)
    _check_regularisation(Q, [learner.C_])
    lam = Q / (2.0 * learner.C_)
    solver = learner.solver
    if solver == "auto":
        largest = max(data.shard_sizes, default=0)
        solver = "dense" if d <= DENSE_MAX_FEATURES and largest * d <= DENSE_MAX_ENTRIES else "cg"
    learner.solver_, learner.cv_table_, learner.weights_by_C_ = solver, None, None
    learner.cg_iterations_, learner.residual_ = 0, 0.0
    if log is not None:
        log(f"RankRLS: {d} features, {data.summary.n_documents} documents, {Q} queries on "
            f"{len(data.parts)} shards, {solver} solver, λ = Q/(2C) = {lam:.6g}", 1)
    if solver == "dense":
        futures = [client.submit(_rls_gram, part, data.used, learner.loss, table, **_on(where))
                   for part, where in zip(data.parts, data.places)]
        parts = gather(client, futures)
        A = _ordered_sum(p[0] for p in parts)
        b = _ordered_sum(p[1] for p in parts)
        A[np.diag_indices_from(A)] += lam
        return scipy.linalg.solve(A, b, assume_a="pos"), Traffic(1, 0, _nbytes(parts), 0)
    shards = Shards(client, _LaplacianPart, data, data.used, learner.loss, table)
    parts = shards.map(_laplacian_setup)
    b = _ordered_sum(p[0] for p in parts)
    inverse_diagonal = 1.0 / (np.maximum(_ordered_sum(p[1] for p in parts), 0.0) + lam)

    def hessvec(v):
        return _ordered_sum(shards.map(_laplacian_product, v)) + lam * v

    w, iterations, _ = conjugate_gradient(hessvec, b, learner.tol, learner.max_iter,
                                          lambda r: inverse_diagonal * r)
    norm_b = np.linalg.norm(b)
    learner.cg_iterations_ = iterations
    learner.residual_ = float(np.linalg.norm(b - hessvec(w)) / norm_b) if norm_b > 0 else 0.0
    if log is not None:
        log(f"CG: {iterations} iterations, relative residual {learner.residual_:.3g}", 1)
    return w, shards.traffic(0)


# ----------------------------------------------------------------- driver

@dataclasses.dataclass
class Traffic:
    """Rounds of tasks and bytes of arrays between driver and workers during the optimisation."""

    rounds: int
    sent: int
    received: int
    repeated_steps: int


def fit(learner: Any, source: Any, client: Any, log: Log = None, label: str = "label",
        qid: Vector = "qid", sample_weight: Vector = None) -> Any:
    """Train a linear learner on a Dask cluster: the same model as ``learner.fit`` on all the data.

    Parameters
    ----------
    learner : rankfast.ranksvm.RankSVM, rankfast.rankrls.RankRLS or rankfast.rankncg.RankNCG
        Its parameters (one C) say what to train; it is fitted in place.
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
    run = check_learner(learner)
    if hasattr(learner, "check_parameters"):          # RankNCG checks its options in fit
        learner.check_parameters()
    started = time.perf_counter()
    data = ShardedData(client, source, label, qid)
    assembled = time.perf_counter()
    if data.summary.n_documents == 0:
        raise InputError(_describe_source(source), None, "no documents to train on")
    if log is not None:
        s = data.summary
        log(f"Shards: {s.n_shards} inputs, {len(data.parts)} non-empty shards, "
            f"{data.n_straddling} queries re-assembled across shards", 1)
    table = query_multipliers(client, data, sample_weight)
    w, learner.traffic_ = run(learner, data, client, log, table)
    from .linear import warn_if_stopped_early
    warn_if_stopped_early(learner, getattr(learner, "result_", None))
    learner.feature_ids_ = data.used + 1
    learner.weights_ = np.where(data.varies, w, 0.0)    # as linear.without_query_constant
    learner.n_features_in_ = data.summary.n_features     # predict checks dense X against it
    learner._fit_documents = data.summary.n_documents     # the model file's training documents
    learner.summary_ = data.summary
    learner.fit_seconds_ = time.perf_counter() - started
    learner.data_seconds_ = assembled - started
    return learner


def check_learner(learner: Any) -> Any:
    """The distributed fit of this learner; UsageError for one that has none (greedy, kernels)."""
    from .linear import c_grid
    from .rankncg import RankNCG
    from .rankrls import RankRLS
    from .ranksvm import RankSVM
    for kind, run in ((RankSVM, _fit_prsvm), (RankNCG, _fit_rankncg), (RankRLS, _fit_rankrls)):
        if type(learner) is kind:
            if c_grid(learner.C) is not None:
                raise UsageError("a list of C values (cross-validation) is not available for "
                                 "distributed training; give one C")
            return run
    raise UsageError(f"distributed training offers prsvm, rankncg and rankrls (linear), "
                     f"not {getattr(learner, 'name', type(learner).__name__)}")


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
    from ._threads import available_cores
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
        raise MissingDependencyError("--scheduler and --workers need dask and distributed: "
                                     "pip install 'rankfast[dask]'") from None
    if scheduler is not None:
        return connect(scheduler)
    return local_client(workers)
