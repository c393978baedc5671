"""Distributed training (rankfast.dask) equals one-process training, on a local cluster of processes.

The objective is checked by a brute-force pair sum over the concatenated files,
independent of both code paths.
"""
import os
import signal

import numpy as np
import pytest
import scipy.special

pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

from pathlib import Path  # noqa: E402

from program_runs import launch  # noqa: E402
from shared_paths import DATA  # noqa: E402

import rankfast  # noqa: E402
from rankfast import (  # noqa: E402
    InputError,
    RankNCG,
    RankRLS,
    RankSVM,
    UsageError,
    read_model,  # noqa: E402
)
from rankfast import dask as rdask  # noqa: E402
from rankfast.cli.classify import classify_main  # noqa: E402
from rankfast.cli.learn import learn_main  # noqa: E402
from rankfast.losses.erfc_pairs import KAPPA  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def cluster():
    """Two one-thread worker processes on the loopback, stopped after the module (or after 5 min)."""
    def hung(signum, frame):
        raise TimeoutError("tests/test_dask.py ran for over 5 minutes")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(300)
    running = rdask.local_client(2)
    try:
        with running as client:
            yield running.cluster, client
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def client(cluster):
    return cluster[1]


def _lines(rng, n_queries, n_features=15, first_qid=1):
    """Random documents; feature n_features + 1 is constant within each query (its qid's)."""
    lines = []
    for q in range(n_queries):
        for _ in range(int(rng.integers(1, 9))):
            features = " ".join(f"{j + 1}:{rng.normal():.6g}" for j in range(n_features)
                                if rng.random() < 0.5)
            lines.append(f"{int(rng.integers(0, 4))} qid:{first_qid + q} {features} "
                         f"{n_features + 1}:{3.5 * (first_qid + q)}\n")
    return lines


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Files with queries split across them, a file of one query, an empty file, a query in two
    non-adjacent files; and the concatenation of them all, in sorted order."""
    rng = np.random.default_rng(16)
    lines = _lines(rng, 45)
    qid_of = [int(line.split()[1][4:]) for line in lines]
    cut = [i for i in range(1, len(lines)) if qid_of[i] == qid_of[i - 1]]   # inside a query
    a, b = cut[10], cut[len(cut) // 2]
    one_query = _lines(rng, 1, first_qid=1000)
    late = [lines[0]]                               # qid 1 again, in the last file
    files = [lines[:a], lines[a:b], [], one_query, lines[b:] + late]
    directory = tmp_path_factory.mktemp("shards")
    for i, content in enumerate(files):
        (directory / f"train-{i}.dat").write_text("".join(content))
    (directory / "all.dat").write_text("".join(sum(files, [])))
    return directory, rankfast.load_svmlight(str(directory / "all.dat"))


def _pairs(data):
    """(i, j, weight of query) for every pair with y_i > y_j of a query (and its query index)."""
    out = []
    qids = np.unique(data.qid)
    for k, q in enumerate(qids):
        rows = np.flatnonzero(data.qid == q)
        for i in rows:
            for j in rows:
                if data.y[i] > data.y[j]:
                    out.append((i, j, k))
    return np.array(out).reshape(-1, 3), len(qids)


def objective(kind, w_full, data, C, loss=1):
    """Brute force: ½‖w‖² + Σ_q c_q Σ_pairs loss, w given on every feature."""
    s = data.X @ w_full
    pairs, Q = _pairs(data)
    count = np.bincount(pairs[:, 2], minlength=Q)
    c = C / Q / (np.maximum(count[pairs[:, 2]], 1) if loss == 2 else 1)
    t = s[pairs[:, 0]] - s[pairs[:, 1]]
    if kind == "prsvm":
        terms = np.maximum(0.0, 1.0 - t) ** 2
    elif kind == "rankncg":
        x = KAPPA * t
        terms = (np.exp(-x * x) / np.sqrt(np.pi) - x * scipy.special.erfc(x)) / (2 * KAPPA)
    else:                                   # rankrls: every pair, ties included, both orders /2
        return _rankrls_objective(w_full, data, C, s, Q)
    return 0.5 * w_full @ w_full + float(np.sum(c * terms))


def _rankrls_objective(w, data, C, s, Q):
    total = 0.0
    for q in np.unique(data.qid):
        rows = np.flatnonzero(data.qid == q)
        r = data.y[rows] - s[rows]
        total += 0.5 * float(((r[:, None] - r[None, :]) ** 2).sum())
    return 0.5 * w @ w + C / Q * total


def _full(learner, width):
    w = np.zeros(width)
    w[learner.feature_ids_ - 1] = learner.weights_
    return w


@pytest.mark.parametrize("kind, make", [
    ("prsvm", lambda: RankSVM(C=3.0, tol=1e-9)),
    ("prsvm", lambda: RankSVM(C=3.0, loss=2, tol=1e-9)),
    ("rankncg", lambda: RankNCG(C=3.0, tol=1e-8, erfc="direct")),
    ("rankrls", lambda: RankRLS(C=3.0, solver="dense")),
    ("rankrls", lambda: RankRLS(C=3.0, solver="cg", tol=1e-10)),
])
def test_same_objective_and_weights_as_one_process(client, shards, kind, make):
    directory, data = shards
    spread = rdask.fit(make(), str(directory / "train-*.dat"), client)
    single = make().fit(data.X, data.y, data.qid)
    assert spread.summary_ == rdask._shards.Summary(data.n_documents, data.n_features,
                                            len(np.unique(data.qid)), 5)
    np.testing.assert_array_equal(spread.feature_ids_, single.feature_ids_)
    loss = getattr(single, "loss", 1)
    f_spread = objective(kind, _full(spread, data.n_features), data, 3.0, loss)
    f_single = objective(kind, _full(single, data.n_features), data, 3.0, loss)
    assert abs(f_spread - f_single) <= 1e-9 * abs(f_single)
    if kind == "prsvm":
        assert abs(spread.result_.f - f_single) <= 1e-9 * f_single
    np.testing.assert_allclose(spread.weights_, single.weights_, rtol=1e-7,
                               atol=1e-9 * np.abs(single.weights_).max())
    assert spread.coef_[15] == single.coef_[15] == 0.0      # constant within queries cut apart
    assert spread.traffic_.rounds >= 1
    assert spread.n_features_in_ == single.n_features_in_          # predict as after fit
    np.testing.assert_allclose(spread.predict(data.X), single.predict(data.X), rtol=1e-6,
                               atol=1e-8 * np.abs(single.predict(data.X)).max())


def test_straddling_queries_are_assembled_whole(client, shards):
    directory, data = shards
    parts = rdask.ShardedData(client, str(directory / "train-*.dat"))
    assert parts.n_straddling >= 3          # the two cuts and qid 1 in the first and last files
    qids = [np.unique(p.qid) for p in client.gather(parts.parts)]
    everything = np.concatenate(qids)
    assert len(everything) == len(np.unique(everything)) == len(np.unique(data.qid))
    assert sum(parts.shard_sizes) == data.n_documents == parts.summary.n_documents


def test_dask_arrays_give_the_same_model(client, shards):
    import dask.array as da
    _, data = shards
    X = data.X.toarray()
    cuts = (40, 31, 50, X.shape[0] - 121)   # chunk edges inside queries
    source = (da.from_array(X, chunks=(cuts, X.shape[1])), da.from_array(data.y, chunks=(cuts,)),
              da.from_array(data.qid, chunks=(cuts,)))
    spread = rdask.fit(RankRLS(C=3.0), source, client)
    single = RankRLS(C=3.0).fit(data.X, data.y, data.qid)
    np.testing.assert_allclose(spread.weights_, single.weights_, rtol=1e-9, atol=1e-12)


def test_dask_dataframe_gives_the_same_model(client, shards):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    _, data = shards
    X = data.X.toarray()
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame.insert(0, "qid", data.qid)
    frame["label"] = data.y                 # any position: the other columns are the features
    spread = rdask.fit(RankRLS(C=3.0), dd.from_pandas(frame, npartitions=3), client)
    single = RankRLS(C=3.0).fit(data.X, data.y, data.qid)
    np.testing.assert_allclose(spread.weights_, single.weights_, rtol=1e-9, atol=1e-12)
    with pytest.raises(UsageError):
        rdask.fit(RankRLS(C=3.0), dd.from_pandas(frame, npartitions=3), client, qid="query")


def test_unreadable_file_is_input_error_with_line(client, shards, tmp_path):
    directory, _ = shards
    bad = tmp_path / "bad.dat"
    bad.write_text("1 qid:1 1:0.5\n2 qid:1 1:0.25\n1 qid:2 1:abc\n")
    with pytest.raises(InputError) as caught:
        rdask.fit(RankSVM(C=1.0), [str(directory / "train-0.dat"), str(bad)], client)
    assert (caught.value.path, caught.value.line) == (str(bad), 3)
    with pytest.raises(InputError):
        rdask.fit(RankSVM(C=1.0), str(tmp_path / "missing-*.dat"), client)


def test_learners_without_a_distributed_fit_are_refused():
    from rankfast import GreedyRankRLS
    with pytest.raises(UsageError, match="offers prsvm, rankncg and rankrls .linear., not greedy"):
        rdask.check_learner(GreedyRankRLS(C=1.0))
    with pytest.raises(UsageError):
        rdask.check_learner(RankSVM(C=[0.1, 1.0]))


def test_a_learner_written_elsewhere_trains_on_the_cluster_by_its_hooks(client, shards):
    """Distributed training asks a learner only for its hooks: a learner defined here (its
    objective the squared hinge at half of C) trains on the cluster as in one process."""
    from rankfast.learners._base import PathRanker
    from rankfast.losses.squared_hinge import SquaredHingeObjective
    from rankfast.optimize.newton import minimize

    class HalfCHinge(PathRanker):
        name = "half-c hinge"
        objective_type = SquaredHingeObjective

        def __init__(self, C=1.0, loss=1, tol=1e-9):
            self.C, self.loss, self.tol = C, loss, tol

        def _objective(self, problem, C):
            return SquaredHingeObjective(problem.X, problem.y, problem.starts,
                                         problem.query_weights(C / 2, self.loss), problem.n_threads)

        def _minimize(self, objective, w0, log=None):
            result = minimize(objective, w0, tol=self.tol, log=log)
            return result.w, result

    directory, data = shards
    assert rdask.trains_on_shards(HalfCHinge())
    spread = rdask.fit(HalfCHinge(C=3.0), str(directory / "train-*.dat"), client)
    single = HalfCHinge(C=3.0).fit(data.X, data.y, data.qid)
    halved = RankSVM(C=1.5, tol=1e-9).fit(data.X, data.y, data.qid)
    for other in (single, halved):
        np.testing.assert_allclose(spread.weights_, other.weights_, rtol=1e-7,
                                   atol=1e-9 * np.abs(other.weights_).max())


def test_cli_learn_and_classify_on_the_cluster(cluster, shards, tmp_path, capsys):
    local, _ = cluster
    directory, _ = shards
    pattern = str(directory / "train-*.dat")
    model_spread, model_single = tmp_path / "spread.model", tmp_path / "single.model"
    assert learn_main(["--scheduler", local.scheduler_address, "-c", "3",
                           pattern, str(model_spread)]) == 0
    assert learn_main(["-c", "3", str(directory / "all.dat"), str(model_single)]) == 0
    spread = rankfast.read_model(str(model_spread))
    single = rankfast.read_model(str(model_single))
    assert spread.highest_feature_index == single.highest_feature_index
    np.testing.assert_allclose(spread.weights, single.weights, rtol=1e-6)
    capsys.readouterr()
    predictions = tmp_path / "predictions"
    assert classify_main(["--scheduler", local.scheduler_address, pattern,
                              str(model_single), str(predictions)]) == 0
    spread_out = capsys.readouterr().out
    assert classify_main([str(directory / "all.dat"), str(model_single),
                              str(tmp_path / "expected")]) == 0
    single_out = capsys.readouterr().out
    assert predictions.read_bytes() == (tmp_path / "expected").read_bytes()
    assert spread_out.split("Average loss")[1] == single_out.split("Average loss")[1]


def test_cli_errors(cluster, shards, tmp_path, capsys):
    local, _ = cluster
    directory, _ = shards
    bad = tmp_path / "bad-1.dat"
    bad.write_text("1 qid:1 1:0.5\n1 qid:1 0:1\n")
    assert learn_main(["--scheduler", local.scheduler_address, str(tmp_path / "bad-*.dat"),
                           str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}:2:" in err
    assert not (tmp_path / "m").exists()
    assert learn_main([str(directory / "train-*.dat"), str(tmp_path / "m")]) == 2
    assert "--workers" in capsys.readouterr().err
    assert learn_main(["--scheduler", "x", "--workers", "2", "a", "b"]) == 2
    assert learn_main(["--workers", "2", "-a", "greedy", "a", "b"]) == 2


def test_cli_workers_starts_a_local_cluster(shards, tmp_path):
    directory, data = shards
    model = tmp_path / "model"
    assert learn_main(["--workers", "1", "-a", "rankrls", "-c", "3", "-v", "0",
                           str(directory / "train-*.dat"), str(model)]) == 0
    single = RankRLS(C=3.0).fit(data.X, data.y, data.qid).to_model(n_features=data.n_features)
    np.testing.assert_allclose(rankfast.read_model(str(model)).weights, single.weights, rtol=1e-6)


@pytest.mark.parametrize("make, shard_class", [
    (lambda: RankSVM(C=3.0, tol=1e-9), "_ShardObjective"),
    (lambda: RankNCG(C=3.0, tol=1e-8, erfc="direct"), "_ShardObjective"),
])
def test_killing_a_worker_mid_fit_gives_the_same_model(cluster, shards, make, shard_class):
    """A worker process is killed after the first iteration: its shards are re-read elsewhere
    (the nanny restarts the process) and the step repeated; the model is the same."""
    local, client = cluster
    directory, data = shards
    pattern = str(directory / "train-*.dat")
    reference = make().fit(data.X, data.y, data.qid)
    killed = []

    def log(text, level=1):
        if text.startswith("Iter 1:") and not killed:
            holding = [address for address, keys in client.has_what().items()
                       if any(key.startswith(shard_class) for key in map(str, keys))]
            pids = client.run(os.getpid, workers=holding[:1])
            for pid in pids.values():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    spread = rdask.fit(make(), pattern, client, log=log)
    assert killed and spread.traffic_.repeated_steps >= 1
    np.testing.assert_allclose(spread.weights_, reference.weights_, rtol=1e-7,
                               atol=1e-9 * np.abs(reference.weights_).max())


@pytest.mark.parametrize("kind, make", [("prsvm", lambda: RankSVM(C=1.0)),
                                        ("rankncg", lambda: RankNCG(C=1.0))])
def test_raw_mslr_strengthens_the_preconditioner_on_the_cluster_too(client, kind, make, tmp_path):
    """Raw, correlated features: the driver sums the shards' XᵀLX when the diagonal is not
    enough, as one process does, and stops as early and as close to the optimum (the
    weights themselves are ill-determined along the features' near-dependences)."""
    folder = DATA / "mslr_web_fold1_5k"
    if not folder.exists():
        pytest.skip(f"{folder} is not available (../shared is read in place)")
    data = rankfast.load_svmlight(str(folder / "train.5k.txt.gz"), n_features=136)
    cuts = np.searchsorted(data.qid, [data.qid[1700], data.qid[3400]])      # whole queries
    for i, rows in enumerate(np.split(np.arange(len(data.qid)), cuts)):
        rankfast.dump_svmlight(data.features[rows], data.y[rows], data.qid[rows],
                               path=str(tmp_path / f"part-{i}.dat"))
    spread = rdask.fit(make(), str(tmp_path / "part-*.dat"), client)
    single = make().fit(data.features, data.y, data.qid)
    assert abs(spread.result_.iterations - single.result_.iterations) <= 5
    assert single.result_.iterations <= 60          # the diagonal alone: hundreds (test_real_data)
    f_spread = objective(kind, _full(spread, 136), data, 1.0)
    f_single = objective(kind, _full(single, 136), data, 1.0)
    assert abs(f_spread - f_single) <= 1e-5 * f_single


def test_a_missing_distributed_is_a_missing_dependency_naming_the_extra(monkeypatch):
    import builtins

    from rankfast.dask import cluster_client
    from rankfast.errors import MissingDependencyError
    real_import = builtins.__import__

    def without_distributed(name, *args, **kwargs):
        if name == "distributed" or name.startswith("distributed."):
            raise ImportError("No module named 'distributed'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_distributed)
    with pytest.raises(MissingDependencyError, match=r"pip install 'rankfast\[dask\]'"):
        cluster_client(workers=1)


@pytest.mark.parametrize("make", [
    lambda: RankSVM(C=3.0, tol=1e-9),
    lambda: RankNCG(C=3.0, tol=1e-8, erfc="direct"),
    lambda: RankRLS(C=3.0, solver="dense"),
    lambda: RankRLS(C=3.0, solver="cg", tol=1e-10),
])
def test_query_weights_train_the_one_process_weighted_model(client, shards, make):
    """sample_weight={qid: w}: each shard weighs its queries as fit(..., sample_weight) does."""
    directory, data = shards
    qids = np.unique(data.qid)
    weights = np.resize([1.0, 2.0, 0.0, 0.5], len(qids))
    weight_of = {int(q): float(w) for q, w in zip(qids, weights)}
    weight_of[123456] = 7.0                         # a query the data does not have: ignored
    spread = rdask.fit(make(), str(directory / "train-*.dat"), client, sample_weight=weight_of)
    single = make().fit(data.X, data.y, data.qid,
                        sample_weight=[weight_of[int(q)] for q in data.qid])
    plain = make().fit(data.X, data.y, data.qid)
    np.testing.assert_array_equal(spread.feature_ids_, single.feature_ids_)
    np.testing.assert_allclose(spread.weights_, single.weights_, rtol=1e-7, atol=1e-9)
    assert not np.allclose(spread.weights_, plain.weights_, rtol=1e-4)


@pytest.mark.parametrize("weights, error, message", [
    ({1: 1.0}, ValueError, "no weight for query"),
    ("weights.txt", UsageError, "maps each query id to its weight"),
    ({1: -1.0}, ValueError, "non-negative"),
])
def test_bad_query_weights_are_refused(client, shards, weights, error, message):
    directory, data = shards
    if isinstance(weights, dict) and weights.get(1) == -1.0:
        weights = {int(q): -1.0 for q in np.unique(data.qid)}
    with pytest.raises(error, match=message):
        rdask.fit(RankSVM(C=1.0), str(directory / "train-*.dat"), client, sample_weight=weights)


@pytest.mark.parametrize("algorithm", ["rankrls", "rankncg"])
def test_workers_train_rankrls_and_rankncg_from_one_file(tmp_path, algorithm):
    """rankrls on one file: scipy refused the one shard's unaligned (unpickled) Gram matrix;
    rankncg: to_model needed C_, which the distributed fit did not set (both tracebacks)."""
    pytest.importorskip("distributed")
    import numpy as np
    result = launch("rank_learn", "-v", "0", "--workers", "1", "-a", algorithm, "-c", "3",
                    EXAMPLES / "train.dat", tmp_path / "cluster")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert learn_main(["-v", "0", "-a", algorithm, "-c", "3", str(EXAMPLES / "train.dat"),
                       str(tmp_path / "local")]) == 0
    cluster, local = read_model(str(tmp_path / "cluster")), read_model(str(tmp_path / "local"))
    np.testing.assert_allclose(cluster.weights, local.weights, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("make", [lambda: RankSVM(C=2.0, tol=1e-9),
                                  lambda: RankNCG(C=2.0, tol=1e-7)])
def test_clicks_train_the_one_process_click_model(client, tmp_path, make):
    """A click log in files (queries split across files, two clicks of different weights in
    some queries, costs near 1e300): the model of fit with the costs as sample_weight."""
    rng = np.random.default_rng(7)
    lines = []
    for q in range(1, 41):
        size = int(rng.integers(3, 9))
        clicked = set(rng.choice(size, 1 + (q % 3 == 0), replace=False).tolist())
        for i in range(size):
            cost = f" cost:{float(rng.uniform(1, 9)) * 1e300!r}" if i in clicked else ""
            features = " ".join(f"{j + 1}:{rng.normal():.6g}" for j in range(6))
            lines.append(f"{int(i in clicked)} qid:{q}{cost} {features}\n")
    cut = [len(lines) // 3 + 1, 2 * len(lines) // 3 + 1]
    paths = []
    for k, part in enumerate((lines[:cut[0]], lines[cut[0]:cut[1]], lines[cut[1]:])):
        path = tmp_path / f"clicks{k}.dat"
        path.write_text("".join(part))
        paths.append(str(path))
    whole = tmp_path / "all.dat"
    whole.write_text("".join(lines))
    data = rankfast.load_svmlight(str(whole), costs=True)
    weight = np.where(np.isnan(data.cost), 1.0, data.cost)
    expected = make().fit(data.X, data.y, data.qid, sample_weight=weight)
    distributed = rdask.fit(make(), paths, client, clicks=True)
    np.testing.assert_allclose(distributed.weights_, expected.weights_, rtol=1e-6, atol=1e-9)
    # svm_proprank's C: the loss times C / queries times each cost, i.e. C times the mean
    # click weight (rank_learn --clicks' -c); C / that mean gives the model above again
    scale = distributed.click_scale_
    assert scale == pytest.approx(np.mean([weight[(data.qid == q) & (data.y == 1)].mean()
                                           for q in np.unique(data.qid)]), rel=1e-12)
    proprank = make().set_params(C=2.0 / scale)
    rdask.fit(proprank, paths, client, clicks=True, proprank_c=True)
    assert proprank.C_ == pytest.approx(2.0)
    np.testing.assert_allclose(proprank.weights_, expected.weights_, rtol=1e-5, atol=1e-8)
    with pytest.raises(UsageError, match="not both"):
        rdask.fit(make(), paths, client, clicks=True, sample_weight={1: 1.0})


def test_rank_learn_clicks_on_the_cluster_writes_the_one_process_model(cluster, tmp_path):
    """rank_learn --clicks --workers: svm_proprank's -c and the click log read by the workers;
    the same model file (weights to svm_rank's 8 digits) as one process."""
    rng = np.random.default_rng(3)
    lines = []
    for q in range(1, 31):
        size = int(rng.integers(3, 8))
        clicked = int(rng.integers(0, size))
        for i in range(size):
            cost = f" cost:{float(rng.integers(1, 9))!r}" if i == clicked else ""
            features = " ".join(f"{j + 1}:{rng.normal():.6g}" for j in range(4))
            lines.append(f"{int(i == clicked)} qid:{q}{cost} {features}\n")
    path = tmp_path / "clicks.dat"
    path.write_text("".join(lines))
    one, two = tmp_path / "one.model", tmp_path / "two.model"
    assert learn_main(["--clicks", "--clip", "0.2", "-c", "3", "-e", "1e-9", "-v", "0", str(path),
                       str(one)]) == 0
    local, _ = cluster
    assert learn_main(["--clicks", "--clip", "0.2", "-c", "3", "-e", "1e-9", "--scheduler",
                       local.scheduler_address, "-v", "0", str(path), str(two)]) == 0
    w1, w2 = rankfast.read_model(str(one)).weights, rankfast.read_model(str(two)).weights
    np.testing.assert_allclose(w2, w1, rtol=1e-6, atol=1e-8)


def test_clicks_on_the_cluster_refuse_what_one_process_refuses_and_no_more(client, tmp_path):
    """Document weights (two clicks of different costs in a query) are refused by rankrls, as
    in one process; a query whose click ends one file and whose other documents start the
    next is whole once the shards are assembled; proprank_c leaves the parameter C as given."""
    rng = np.random.default_rng(9)
    lines = []
    for q in range(1, 21):
        size = int(rng.integers(4, 8))
        clicked = {0, 1}
        for i in range(size):
            cost = f" cost:{float(rng.integers(1, 9))!r}" if i in clicked else ""
            features = " ".join(f"{j + 1}:{rng.normal():.6g}" for j in range(4))
            lines.append(f"{int(i in clicked)} qid:{q}{cost} {features}\n")
    cut = next(i for i, line in enumerate(lines) if line.startswith("1 qid:10 "))
    paths = []
    for k, part in enumerate((lines[:cut + 2], lines[cut + 2:])):     # qid 10's clicks end file 0
        path = tmp_path / f"c{k}.dat"
        path.write_text("".join(part))
        paths.append(str(path))
    with pytest.raises(ValueError, match="rankrls"):
        rdask.fit(rankfast.RankRLS(C=1.0), paths, client, clicks=True)
    learner = RankSVM(C=0.5)
    rdask.fit(learner, paths, client, clicks=True, proprank_c=True)
    rdask.fit(learner, paths, client, clicks=True, proprank_c=True)
    assert learner.C == 0.5 and learner.C_ == pytest.approx(0.5 * learner.click_scale_)
