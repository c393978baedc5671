#!/usr/bin/env python3
"""Distributed PRSVM (rankfast.dask) on a local cluster against one process, and the traffic per step.

    python benchmarks/bench_dask.py [--sizes 2M] [--workers 2] [--shards 8] [--features 20]
    python benchmarks/bench_dask.py --sizes 2M,10M        # 10M: ~2.2 GB of text, minutes

Data: dense N(0,1) features, 50 documents per query, relevance 0-4 from a noisy
linear utility (as bench_prsvm.py), written as ``--shards`` SVMlight files cut every
n / shards lines (plus 16: inside a query), so queries straddle the files; into a temporary directory removed
at the end.  For each size, printed:

* one process: reading the files, PRSVM's fit (-c 1, -e 1e-3), Newton iterations,
  seconds per Newton step, and the per-document cost of one loss+gradient pass
  and one Hessian-vector pass (SquaredHingeObjective on all the data);
* ``--workers`` processes (LocalCluster on 127.0.0.1, one thread each): reading and
  re-assembling the shards on the workers, the optimisation, rounds of tasks and
  bytes per Newton step (d-vectors counted by the driver, both directions, and
  distributed's own count of bytes the workers sent), and the ratio to one process;
* the estimate of one Newton step for 10^9 documents on 100 workers (see
  benchmarks/README.md for how it is made and what bounds it).

On this shared 2-core machine two worker processes and the driver compete with
other jobs for the cores: read the figures as a lower bound of what the cluster
does.  Nothing is asserted.
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))          # this checkout's rankfast, even if another is installed

import rankfast  # noqa: E402
from rankfast import RankSVM  # noqa: E402
from rankfast import dask as rdask  # noqa: E402
from rankfast.learners._linear import query_weights, training_arrays  # noqa: E402
from rankfast.losses.squared_hinge import SquaredHingeObjective  # noqa: E402

SIZES = {"200k": 200_000, "2M": 2_000_000, "10M": 10_000_000}
DOCS_PER_QUERY = 50


def write_shards(n_docs, n_shards, features, directory, seed=1, block=100_000):
    """n_docs documents in n_shards files cut every n_docs / n_shards lines (queries straddle)."""
    rng = np.random.default_rng(seed)
    w_true = np.random.default_rng(12345).normal(size=features)
    fmt = "{} qid:{} " + " ".join(f"{j + 1}:{{:.5g}}" for j in range(features)) + "\n"
    bounds = np.linspace(0, n_docs, n_shards + 1).astype(np.int64)
    bounds[1:-1] += DOCS_PER_QUERY // 3             # cut inside a query
    paths = []
    for i in range(n_shards):
        path = directory / f"shard-{i:03d}.dat"
        with open(path, "w") as out:
            for start in range(bounds[i], bounds[i + 1], block):
                m = min(block, bounds[i + 1] - start)
                X = rng.normal(size=(m, features))
                s = X @ w_true
                rel = np.digitize(s / s.std() + rng.normal(size=m), [-1.0, 0.0, 1.0, 2.0])
                qid = (start + np.arange(m)) // DOCS_PER_QUERY + 1
                rows = X.tolist()
                out.write("".join(fmt.format(rel[k], qid[k], *rows[k]) for k in range(m)))
        paths.append(str(path))
    return paths


def one_process(paths, C):
    started, cpu = time.perf_counter(), time.process_time()
    parts = [rankfast.load_svmlight(p) for p in paths]
    width = max(p.n_features for p in parts)
    X = sp.vstack([sp.csr_matrix((p.X.data, p.X.indices, p.X.indptr), shape=(p.X.shape[0], width))
                   for p in parts], format="csr")
    y = np.concatenate([p.y for p in parts])
    qid = np.concatenate([p.qid for p in parts])
    read, read_cpu = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    learner = RankSVM(C=C).fit(X, y, qid)
    fit, fit_cpu = time.perf_counter() - started, time.process_time() - cpu
    # per-document cost (CPU) of the passes a Newton step is made of
    Xg, yg, starts, _ = training_arrays(X, y, qid)
    objective = SquaredHingeObjective(Xg, yg, starts, query_weights(yg, starts, C, 1))
    w = learner.weights_
    cpu = time.process_time()
    objective.value_grad(w)
    value_grad = time.process_time() - cpu
    cpu = time.process_time()
    objective.hessvec(w)
    hessvec = time.process_time() - cpu
    return learner, read, read_cpu, fit, fit_cpu, value_grad / len(y), hessvec / len(y)


def sent_by_workers(client):
    return sum(client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total).values())


def _cpu_seconds():
    import os
    times = os.times()
    return times.user + times.system


def distributed_run(paths, C, client):
    """(fitted learner, bytes the workers sent, CPU seconds of each worker, of the driver)."""
    before = sent_by_workers(client)
    cpu_before = client.run(_cpu_seconds)
    driver = time.process_time()
    learner = rdask.fit(RankSVM(C=C), paths, client)
    driver = time.process_time() - driver
    cpu = client.run(_cpu_seconds)
    workers = sorted(cpu[w] - cpu_before[w] for w in cpu)
    return learner, sent_by_workers(client) - before, workers, driver


def round_latency(client, n_tasks, repeats=20):
    """Seconds for one round of n_tasks trivial tasks on held data (submit + gather)."""
    held = client.scatter(list(range(n_tasks)))
    vector = np.zeros(8)
    started = time.perf_counter()
    for _ in range(repeats):
        client.gather([client.submit(_echo, h, vector, pure=False) for h in held])
    return (time.perf_counter() - started) / repeats


def _echo(held, vector):
    return vector


def estimate(per_doc_pass, rounds_per_step, d, seconds_per_task, n_docs=1e9, workers=100,
             bandwidth=1.25e9, add_seconds=1e-9):
    """(compute, driver, scheduling) seconds of one Newton step for n_docs on workers.

    compute: each worker's share of the documents times the per-document cost of
    one pass, once per round; driver: per round, one d-vector each way per
    worker through the driver's link (10 Gb/s) and the driver adding them up;
    scheduling: per round, one task per worker at the given per-task overhead.
    """
    compute = n_docs / workers * per_doc_pass * rounds_per_step
    driver = rounds_per_step * workers * d * (2 * 8 / bandwidth + add_seconds)
    scheduling = rounds_per_step * workers * seconds_per_task
    return compute, driver, scheduling


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2M", help="comma-separated: 200k, 2M, 10M")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("-c", type=float, default=1.0)
    args = parser.parse_args(argv)
    try:
        import distributed  # noqa: F401  (and dask, which it imports)
    except ImportError:
        print("bench_dask: skipped: dask and distributed are not installed "
              "(pip install 'rankfast[dask]')")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench_dask-") as tmp, \
            rdask.local_client(args.workers) as client:
        latency = round_latency(client, args.shards)
        print(f"one round of {args.shards} trivial tasks (submit + gather): {1e3 * latency:.1f} ms")
        for label in args.sizes.split(","):
            n = SIZES[label]
            directory = Path(tmp) / label
            directory.mkdir()
            started = time.perf_counter()
            paths = write_shards(n, args.shards, args.features, directory)
            print(f"\n{label}: {n} documents, {args.features} features, {args.shards} shards "
                  f"(written in {time.perf_counter() - started:.1f} s)")
            single, read, read_cpu, fit, fit_cpu, vg_doc, hv_doc = one_process(paths, args.c)
            steps = single.result_.iterations
            print(f"  one process: read {read:.1f} s ({read_cpu:.1f} s CPU), fit {fit:.2f} s "
                  f"({fit_cpu:.2f} s CPU), "
                  f"{steps} Newton steps, {fit / steps:.3f} s/step; CPU per document: "
                  f"loss+gradient {1e9 * vg_doc:.0f} ns, Hessian-vector {1e9 * hv_doc:.0f} ns")
            spread, worker_bytes, worker_cpu, driver_cpu = distributed_run(paths, args.c, client)
            t = spread.traffic_
            optimise = spread.fit_seconds_ - spread.data_seconds_
            dsteps = spread.result_.iterations
            gap = abs(spread.result_.f - single.result_.f) / single.result_.f
            print(f"  --workers {args.workers}: read+assemble {spread.data_seconds_:.1f} s, "
                  f"optimise {optimise:.2f} s, {dsteps} Newton steps, "
                  f"{optimise / dsteps:.3f} s/step ({optimise / fit:.2f}x one process's fit; "
                  f"whole {spread.fit_seconds_:.1f} s vs {read + fit:.1f} s); "
                  f"objective gap {gap:.1e}")
            print(f"    CPU, reading included: workers {', '.join(f'{c:.1f}' for c in worker_cpu)} s "
                  f"(the busiest {worker_cpu[-1] / (read_cpu + fit_cpu):.2f}x one process's "
                  f"read+fit CPU {read_cpu + fit_cpu:.1f} s), driver {driver_cpu:.2f} s")
            print(f"    per Newton step: {t.rounds / dsteps:.1f} rounds, driver sent "
                  f"{t.sent / dsteps / 1e3:.1f} kB and received {t.received / dsteps / 1e3:.1f} kB "
                  f"({len(spread.feature_ids_)} weights x 8 B = {8 * len(spread.feature_ids_)} B "
                  f"per d-vector); the workers sent {worker_bytes / 1e6:.2f} MB in all "
                  f"(distributed's count: each shard's distinct qids once, 8 B per query, the "
                  f"rows of the {spread.summary_.n_shards - 1} cut queries, and the step results)")
            per_pass = (vg_doc + hv_doc) / 2
            print(f"  estimate, 1e9 documents on 100 workers ({per_pass * 1e9:.0f} ns per document "
                  f"and pass, {t.rounds / dsteps:.1f} rounds per step, 10 Gb/s at the driver; "
                  f"scheduling at the {1e3 * latency / args.shards:.1f} ms per task measured "
                  f"here / at 1 ms per task):")
            for d in (len(spread.feature_ids_), 10_000, 1_000_000, 10_000_000):
                c, dr, here = estimate(per_pass, t.rounds / dsteps, d, latency / args.shards)
                _, _, typical = estimate(per_pass, t.rounds / dsteps, d, 1e-3)
                print(f"    d = {d:>8}: one Newton step {c + dr + typical:6.1f} s = compute "
                      f"{c:.1f} s + driver {dr:.2f} s + scheduling {typical:.2f} s "
                      f"({here:.2f} s at this box's latency)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
