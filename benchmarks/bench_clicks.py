"""Learning from simulated clicks: the experiment of Joachims, Swaminathan & Schnabel (WSDM 2017, §6).

On the shared labelled data (MQ2008's five folds and the MSLR-WEB sample), a
logging ranker trained on 1% of the training queries orders the results;
simulated users examine rank r with probability (1/r)^eta (eta = 1) and click
an examined result with probability 1 if it is relevant (the upper half of
the grade scale: MQ2008 ≥ 1 of 0..2, MSLR ≥ 2 of 0..4) and epsilon- = 0.1 if
not.  As the number of sessions grows, the learner trained on the clicks
weighted by their inverse propensity (Propensity SVM-rank: ``-a svmrank
--clicks``; ``--learner prsvm`` for the squared hinge) is set beside the same
learner on the same clicks unweighted (every click 1: the naive click model),
the logging ranker, and the full-information learner trained on the labels.

Each learner's C is chosen from ``--c-grid`` without labels, by the
inverse-propensity estimate of the average rank of relevant results on
clicks simulated on the validation queries (rankfast.clicks.counterfactual_metrics);
the full-information learner's C by validation NDCG@10 on the labels.  The
test figures are NDCG@10 (LETOR's convention) and the average rank of the
relevant results, pooled over the folds' test queries.  ``gap closed`` is
(clicks − logging) / (full − logging) in NDCG@10.

The timing part (``--timing-only`` for it alone) runs whole processes in turn
on the largest MQ2008 click file: ``rank_learn -a svmrank --clicks`` alone or,
with ``--svm-rank DIR``, beside ``svm_rank_learn -c`` (which reads cost: and
ignores it: the same pairs unweighted), and with ``--svm-proprank DIR``
rankfast's ``svm_proprank_learn`` beside the real one at the same ``-c``, with
both models' svm_proprank objective on the file.  Then, on a click file of
the MSLR sample's raw features (``--raw-sessions`` sessions; features spanning
1e-3..2.3e8, where cutting planes stall), ``-a svmrank --clicks`` beside
``-a prsvm --clicks``.  ``--plot FILE`` draws the curves (matplotlib).
Nothing is asserted.
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import anchors  # noqa: E402
import mq2008  # noqa: E402

import rankfast  # noqa: E402
from rankfast import RankSVM, RankSVML1, metrics, objective  # noqa: E402
from rankfast.clicks import (  # noqa: E402
    click_training_data,
    click_weights,
    counterfactual_metrics,
    relevant_rank_metrics,
    simulate_clicks,
    write_click_file,
)

WORK = ROOT / "benchmarks" / "_work" / "clicks"
LEARNERS = {"svmrank": RankSVML1, "prsvm": RankSVM}


def splits(args):
    """(name, train, vali, test, relevant_at, normalize): MQ2008's folds (LETOR's
    QueryLevelNorm already), the MSLR sample (raw features: normalised per query)."""
    for k in args.folds:
        train, vali, test = mq2008.fold(k)
        yield f"MQ2008 fold {k}", train, vali, test, 1.0, "none"
    if args.mslr:
        folder = ROOT.parent / "shared" / "data" / "mslr_web_fold1_5k"
        train = rankfast.load_svmlight(str(folder / "train.5k.txt.gz"), n_features=136)
        test = rankfast.load_svmlight(str(folder / "test.5k.txt.gz"), n_features=136)
        # no validation file: the training file's last quarter of queries validates
        ids = np.unique(train.qid)
        held = np.isin(train.qid, ids[(3 * len(ids)) // 4:])
        yield ("MSLR sample", train.subset(np.flatnonzero(~held)),
               train.subset(np.flatnonzero(held)), test, 2.0, "query")


def logging_ranker(train, seed, normalize):
    """RankSVM (C = 1) on 1% of the training queries (at least one), drawn with seed."""
    ids = np.unique(train.qid)
    few = np.random.default_rng(seed).choice(ids, max(1, len(ids) // 100), replace=False)
    rows = np.flatnonzero(np.isin(train.qid, few))
    return RankSVM(C=1.0, normalize=normalize).fit(train.X[rows], train.y[rows], train.qid[rows])


def test_figures(model, test, relevant_at):
    scores = model.predict(test.X, test.qid)
    return (metrics.ndcg(scores, test.y, test.qid, k=10),
            relevant_rank_metrics(scores, test.y, test.qid, relevant_at).average_rank,
            scores)


def full_information(learner, train, vali, grid, normalize):
    """The learner on the labels, C by validation NDCG@10."""
    best = None
    for C in grid:
        model = learner(C=C, normalize=normalize).fit(train.X, train.y, train.qid)
        value = metrics.ndcg(model.predict(vali.X, vali.qid), vali.y, vali.qid, k=10)
        if best is None or value > best[0]:
            best = (value, model)
    return best[1]


def click_learner(learner, train, vali, train_log, vali_log, eta, grid, fit_seconds, normalize):
    """The learner on the clicks weighted with propensities of eta (0: naive), C by the
    validation clicks' inverse-propensity estimate of the average rank of relevant results."""
    X, y, qid, w = click_training_data(train.X, train.qid, train_log, eta=eta)
    VX, vy, vq, vw = click_training_data(vali.X, vali.qid, vali_log, eta=1.0)
    best = None
    for C in grid:
        start = time.process_time()
        model = learner(C=C, normalize=normalize).fit(X, y, qid, sample_weight=w)
        fit_seconds.append(time.process_time() - start)
        estimate = counterfactual_metrics(model.predict(VX, vq), vy, vq, vw).average_rank
        if best is None or estimate < best[0]:
            best = (estimate, model)
    return best[1]


def experiment(args):
    learner = LEARNERS[args.learner]
    rows = {}
    fit_seconds = []
    for seed, (name, train, vali, test, relevant_at, normalize) in enumerate(splits(args), 1):
        logging = logging_ranker(train, seed, normalize)
        full = full_information(learner, train, vali, args.c_grid, normalize)
        base = test_figures(logging, test, relevant_at)
        best = test_figures(full, test, relevant_at)
        train_scores = logging.predict(train.X, train.qid)
        vali_scores = logging.predict(vali.X, vali.qid)
        share = len(np.unique(vali.qid)) / len(np.unique(train.qid))
        print(f"{name}: {len(np.unique(train.qid))} training queries, logging ranker on "
              f"{max(1, len(np.unique(train.qid)) // 100)}: test NDCG@10 {base[0]:.4f}, "
              f"full information {best[0]:.4f}", flush=True)
        for n in args.sessions:
            log = simulate_clicks(train_scores, train.y, train.qid, n, eta=1.0, eps_minus=0.1,
                                  relevant_at=relevant_at, seed=seed)
            vlog = simulate_clicks(vali_scores, vali.y, vali.qid, max(1, int(n * share)),
                                   eta=1.0, eps_minus=0.1, relevant_at=relevant_at,
                                   seed=1000 + seed)
            if log.n_clicks == 0 or vlog.n_clicks == 0:
                continue
            for eta, kind in ((1.0, "propensity"), (0.0, "naive")):
                model = click_learner(learner, train, vali, log, vlog, eta, args.c_grid,
                                      fit_seconds, normalize)
                ndcg, rank, _ = test_figures(model, test, relevant_at)
                rows.setdefault((name, n), {})[kind] = (ndcg, rank, log.n_clicks)
            rows[(name, n)]["logging"] = base[:2]
            rows[(name, n)]["full"] = best[:2]
    return rows, fit_seconds


def summary(rows, sessions):
    """Per number of sessions: means over the splits (MQ2008 folds and MSLR apart)."""
    table = []
    for group in ("MQ2008", "MSLR"):
        for n in sessions:
            cells = [v for (name, m), v in rows.items() if name.startswith(group) and m == n]
            if not cells or any("propensity" not in c for c in cells):
                continue
            mean = {kind: tuple(np.mean([c[kind][i] for c in cells]) for i in range(2))
                    for kind in ("propensity", "naive", "logging", "full")}
            clicks = np.mean([c["propensity"][2] for c in cells])
            gap = {kind: (mean[kind][0] - mean["logging"][0]) /
                   (mean["full"][0] - mean["logging"][0]) for kind in ("propensity", "naive")}
            table.append((group, n, clicks, mean, gap))
    return table


def print_table(table, learner):
    print(f"\n-a {learner}: test NDCG@10 / average rank of relevant results (lower is better), "
          f"means over the splits; gap closed = (clicks - logging) / (full - logging) in NDCG@10")
    print(f"{'data':7} {'sessions':>9} {'clicks':>9} | {'propensity':>15} {'gap':>6} | "
          f"{'naive':>15} {'gap':>6} | {'logging':>15} | {'full info':>15}")
    for group, n, clicks, mean, gap in table:
        def cell(kind):
            return f"{mean[kind][0]:.4f} / {mean[kind][1]:5.2f}"
        print(f"{group:7} {n:>9} {clicks:>9.0f} | {cell('propensity')} {gap['propensity']:>6.0%} | "
              f"{cell('naive')} {gap['naive']:>6.0%} | {cell('logging')} | {cell('full')}")


def plot(table, path, learner):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = sorted({row[0] for row in table})
    fig, axes = plt.subplots(1, len(groups), figsize=(5.5 * len(groups), 4), squeeze=False)
    for ax, group in zip(axes[0], groups):
        part = [row for row in table if row[0] == group]
        clicks = [row[2] for row in part]
        for kind, style in (("propensity", "o-"), ("naive", "s--")):
            ax.plot(clicks, [row[3][kind][0] for row in part], style,
                    label=f"{kind}-weighted clicks" if kind == "propensity" else "naive clicks")
        for kind, style in (("full", ":"), ("logging", "-.")):
            ax.axhline(part[0][3][kind][0], linestyle=style, color="grey",
                       label="full information" if kind == "full" else "logging ranker")
        ax.set_xscale("log")
        ax.set_xlabel("training clicks")
        ax.set_ylabel("test NDCG@10")
        ax.set_title(f"{group}: -a {learner}, eta = 1, eps- = 0.1")
        ax.legend(fontsize=8)
    fig.tight_layout()
    rankfast.plot.save(fig, path)


def timing(args, table_sessions):
    """Whole processes in turn on click files (see the module docstring)."""
    train, _, _ = mq2008.fold(1)
    n = max(table_sessions)
    log, path, instances = click_file(train, "none", n, "clicks.dat")
    C = str(args.timing_c)
    print(f"\nTraining time on the clicks of {n} MQ2008 sessions ({log.n_clicks} clicks, "
          f"{instances} click queries, {os.path.getsize(path) / 1e6:.1f} MB), -c {C}, whole "
          f"processes, {anchors.load()}:")
    ours = rank_learn("svmrank", C, path)
    programs = anchors.svm_rank(args)
    if programs is None:
        runs = anchors.in_turn([("rank_learn", ours)], args.repeat)
        print(f"  rank_learn -a svmrank --clicks: {anchors.figures(runs['rank_learn'])} "
              f"({anchors.median(runs['rank_learn'], 'cpu') / log.n_clicks * 1e6:.2f} "
              f"us cpu per click); no --svm-rank DIR: svm_rank not run")
    else:
        theirs = [programs[0], "-c", C, "-v", "0", str(path), str(WORK / "theirs.model")]
        runs = anchors.in_turn([("rank_learn", ours), ("svm_rank_learn", theirs)], args.repeat)
        for name in ("rank_learn", "svm_rank_learn"):
            print(f"  {name:15} {anchors.figures(runs[name])}, "
                  f"{anchors.median(runs[name], 'cpu') / log.n_clicks * 1e6:.2f} us cpu per click")
        print(f"  rank_learn is {anchors.ratios(runs['rank_learn'], runs['svm_rank_learn'])} "
              f"(svm_rank unweighted: it ignores cost:)")
    proprank_timing(args, path, C)
    if args.raw_sessions:
        raw_mslr_timing(args)


def click_file(train, normalize, sessions, name, relevant_at=1.0):
    """(click log, path, click queries): sessions simulated on train's documents as the
    logging ranker (seed 1) orders them, written to WORK / name with train's features."""
    logging = logging_ranker(train, 1, normalize)
    log = simulate_clicks(logging.predict(train.X, train.qid), train.y, train.qid, sessions,
                          eta=1.0, eps_minus=0.1, relevant_at=relevant_at, seed=1)
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / name
    return log, path, write_click_file(str(path), train.X, train.qid, log)


def rank_learn(algorithm, C, path):
    """The argv of rank_learn -a algorithm --clicks -c C on the click file path."""
    return [sys.executable, str(ROOT / "rank_learn"), "-a", algorithm, "--clicks", "-c", C,
            "-v", "0", str(path), str(WORK / f"ours-{algorithm}.model")]


def proprank_timing(args, path, C):
    """rankfast's svm_proprank_learn beside the real one, and both models' objective."""
    programs = anchors.svm_proprank(args)
    if programs is None:
        print("  no --svm-proprank DIR: svm_proprank not run")
        return
    models = {name: WORK / f"{name}.model" for name in ("ours-proprank", "theirs-proprank")}
    ours = [sys.executable, str(ROOT / "svm_proprank_learn"), "-c", C, "-v", "0", str(path),
            str(models["ours-proprank"])]
    theirs = [programs[0], "-c", C, "-v", "0", str(path), str(models["theirs-proprank"])]
    runs = anchors.in_turn([("svm_proprank_learn (rankfast)", ours),
                            ("svm_proprank_learn", theirs)], args.repeat)
    data = rankfast.load_svmlight(str(path), costs=True)
    weight, _ = click_weights(data, check_queries=False)
    for name, model in zip(runs, models.values()):
        value = objective(rankfast.read_model(str(model)), data, float(C), sample_weight=weight)
        print(f"  {name:30} {anchors.figures(runs[name])}, svm_proprank's objective {value:.6f}")
    print(f"  rankfast's is {anchors.ratios(*runs.values())}")


def raw_mslr_timing(args):
    """-a svmrank --clicks beside -a prsvm --clicks on the MSLR sample's raw features."""
    folder = ROOT.parent / "shared" / "data" / "mslr_web_fold1_5k"
    train = rankfast.load_svmlight(str(folder / "train.5k.txt.gz"), n_features=136)
    log, path, instances = click_file(train, "query", args.raw_sessions, "raw-mslr-clicks.dat",
                                      relevant_at=2.0)
    C = str(args.timing_c)
    print(f"\nOn raw MSLR features: the clicks of {args.raw_sessions} sessions ({log.n_clicks} "
          f"clicks, {instances} click queries, {os.path.getsize(path) / 1e6:.1f} MB), -c {C}, "
          f"{anchors.load()}:")
    runs = anchors.in_turn([("-a svmrank", rank_learn("svmrank", C, path)),
                            ("-a prsvm", rank_learn("prsvm", C, path))], args.repeat)
    for name in runs:
        print(f"  rank_learn {name} --clicks {anchors.figures(runs[name])}")
    print(f"  -a svmrank takes {1 / anchors.ratio(runs['-a svmrank'], runs['-a prsvm'], 'cpu'):.2f}x "
          f"-a prsvm's cpu, {1 / anchors.ratio(runs['-a svmrank'], runs['-a prsvm'], 'wall'):.2f}x "
          f"its wall time")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=lambda t: [int(float(v)) for v in t.split(",")],
                        default=[300, 1000, 3000, 10000, 30000, 100000, 300000, 1000000])
    parser.add_argument("--folds", type=lambda t: [int(v) for v in t.split(",")],
                        default=[1, 2, 3, 4, 5])
    parser.add_argument("--no-mslr", dest="mslr", action="store_false")
    parser.add_argument("--learner", choices=sorted(LEARNERS), default="svmrank")
    parser.add_argument("--c-grid", type=lambda t: [float(v) for v in t.split(",")],
                        default=[0.01, 0.1, 1.0, 10.0, 100.0])
    parser.add_argument("--plot", metavar="FILE", help="draw the curves (png or svg)")
    parser.add_argument("--timing-c", type=float, default=1.0)
    parser.add_argument("--raw-sessions", type=int, default=125000,
                        help="sessions of the raw MSLR click file (125,000: ~191k clicks, 816 MB; "
                        "0 skips it)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-timing", dest="timing", action="store_false")
    parser.add_argument("--timing-only", action="store_true", help="skip the curves")
    anchors.add_arguments(parser)
    args = parser.parse_args()
    if args.plot:
        try:
            rankfast.plot.require_matplotlib()      # before the experiment, not after it
        except rankfast.errors.MissingDependencyError as exc:
            parser.error(f"--plot: {exc}")
    if not args.timing_only:
        rows, fit_seconds = experiment(args)
        table = summary(rows, args.sessions)
        print_table(table, args.learner)
        print(f"\n{len(fit_seconds)} fits on clicks: median {np.median(fit_seconds):.3f} s cpu, "
              f"largest {max(fit_seconds):.3f} s")
        if args.plot:
            plot(table, args.plot, args.learner)
            print(f"wrote {args.plot}")
    if args.timing or args.timing_only:
        timing(args, args.sessions)


if __name__ == "__main__":
    main()
