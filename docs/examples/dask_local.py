"""Train on a local Dask cluster that listens on the loopback interface only and stops by itself.

    python docs/examples/dask_local.py

Splits the example data (examples/train.dat) into two shard files, starts two
one-thread worker processes on 127.0.0.1 (no dashboard), trains PRSVM on the
shards with ``rankfast.dask.fit``, scores them on the workers, and compares the
model with a one-process fit on the same documents.  Leaving the ``with`` block
closes the client and stops the cluster and its workers.  Needs
``pip install "rankfast[dask]"``.
"""
import logging
import os
import tempfile
from pathlib import Path

import numpy as np

import rankfast
from rankfast import RankSVM, metrics
from rankfast import dask as rdask

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def write_shards(folder, n_shards=2):
    """The example file cut into n_shards files of whole queries; their sorted glob."""
    data = rankfast.load_svmlight(str(EXAMPLES / "train.dat"))
    queries = np.unique(data.qid)
    X = data.X.toarray()
    for i, part in enumerate(np.array_split(queries, n_shards)):
        rows = np.isin(data.qid, part)
        rankfast.dump_svmlight(X[rows], data.y[rows], data.qid[rows],
                               path=os.path.join(folder, f"train-{i}.dat"))
    return os.path.join(folder, "train-*.dat"), data


def main():
    import dask
    from distributed import Client, LocalCluster

    with tempfile.TemporaryDirectory() as folder:           # the shard files, removed at the end
        pattern, data = write_shards(folder)
        with dask.config.set({"distributed.scheduler.work-stealing": False}):   # shards stay put
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   host="127.0.0.1",                  # loopback only
                                   dashboard_address=None,
                                   scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                                   silence_logs=logging.ERROR)
        with cluster, Client(cluster) as client:
            client.wait_for_workers(2, timeout=60)
            learner = rdask.fit(RankSVM(C=1.0), pattern, client)
            scores, y, qid = rdask.predict(learner.to_model(n_features=learner.summary_.n_features),
                                           pattern, client)
    # Here the client is closed and the cluster's processes have stopped.

    alone = RankSVM(C=1.0).fit(data.features, data.y, data.qid)
    gap = np.max(np.abs(learner.coef_ - alone.coef_)) / np.max(np.abs(alone.coef_))
    print(f"{learner.summary_.n_queries} queries on 2 workers; weights within {gap:.1e} "
          f"(relative) of one process; {len(scores)} documents scored on the cluster, "
          f"NDCG@10 {metrics.ndcg(scores, y, qid, k=10):.4f}")
    return gap


if __name__ == "__main__":
    main()
