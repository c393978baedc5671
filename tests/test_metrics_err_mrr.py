"""ERR@k, MRR and P@k against brute-force twins; the standard NDCG against scikit-learn."""
from pathlib import Path

import numpy as np
import pytest

from rankfast import load_svmlight, metrics
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def cases():
    rng = np.random.default_rng(2024)
    out = []
    for _trial in range(6):
        n_queries = int(rng.integers(1, 10))
        sizes = rng.integers(1, 25, size=n_queries)
        qid = np.repeat(rng.choice(np.arange(1, 500), n_queries, replace=False), sizes)
        rng.shuffle(qid)                                    # queries interleaved
        labels = rng.integers(-1, 4, size=len(qid)).astype(np.float64)
        labels[qid == qid[0]] = 0.0                         # a query without relevant documents
        scores = np.round(rng.normal(size=len(qid)), 1)     # ties, kept in file order
        out.append((scores, labels, qid))
    out.append((np.array([0.2, 0.2, 0.2]), np.array([0.0, 2.0, 1.0]), np.array([7, 7, 7])))
    out.append((np.array([1.0]), np.array([3.0]), np.array([1])))
    return out


CASES = cases()


def ranked_labels(scores, labels, qid):
    """Per query (order of first appearance), its labels by decreasing score, ties in file order."""
    out = []
    for q in dict.fromkeys(np.asarray(qid).tolist()):
        rows = [i for i in range(len(qid)) if qid[i] == q]
        rows.sort(key=lambda i: -scores[i])                 # stable: file order on ties
        out.append([labels[i] for i in rows])
    return out


def err_brute(scores, labels, qid, k, gmax):
    values = []
    for ranked in ranked_labels(scores, labels, qid):
        total, p_continue = 0.0, 1.0
        for r, g in enumerate(ranked[:k] if k else ranked, start=1):
            R = (2.0 ** max(g, 0.0) - 1.0) / 2.0 ** gmax
            total += p_continue * R / r
            p_continue *= 1.0 - R
        values.append(total)
    return np.array(values)


@pytest.mark.parametrize("k", [1, 3, 10, None])
@pytest.mark.parametrize("scores, labels, qid", CASES)
def test_err_matches_brute(scores, labels, qid, k):
    gmax = max(labels.max(), 0.0)
    got = metrics.err(scores, labels, qid, k=k, per_query=True)
    np.testing.assert_allclose(got, err_brute(scores, labels, qid, k, gmax), rtol=1e-12, atol=1e-15)
    fixed = metrics.err(scores, labels, qid, k=k, max_grade=4.0)
    assert fixed == pytest.approx(err_brute(scores, labels, qid, k, 4.0).mean(), rel=1e-12)


@pytest.mark.parametrize("scores, labels, qid", CASES)
def test_mrr_matches_brute(scores, labels, qid):
    expected = [next((1.0 / r for r, g in enumerate(ranked, 1) if g > 0), 0.0)
                for ranked in ranked_labels(scores, labels, qid)]
    np.testing.assert_allclose(metrics.reciprocal_rank(scores, labels, qid, per_query=True), expected,
                               rtol=1e-15)
    relevant = [e for e, ranked in zip(expected, ranked_labels(scores, labels, qid))
                if any(g > 0 for g in ranked)]
    skipped = metrics.reciprocal_rank(scores, labels, qid, skip_no_relevant=True)
    assert skipped == pytest.approx(np.mean(relevant)) if relevant else np.isnan(skipped)


@pytest.mark.parametrize("k", [1, 5, 30])
@pytest.mark.parametrize("scores, labels, qid", CASES)
def test_precision_at_k_matches_brute(scores, labels, qid, k):
    expected = [sum(g > 0 for g in ranked[:k]) / k for ranked in ranked_labels(scores, labels, qid)]
    np.testing.assert_allclose(metrics.precision_at(scores, labels, qid, k=k, per_query=True),
                               expected, rtol=1e-15)


def test_err_by_hand():
    # labels 2, 0, 1 with g_max 2: R = 3/4, 0, 1/4
    got = metrics.err([3.0, 2.0, 1.0], [2.0, 0.0, 1.0], [1, 1, 1])
    assert got == pytest.approx(0.75 / 1 + (1 - 0.75) * 0.0 / 2 + (1 - 0.75) * (1 - 0.0) * 0.25 / 3)


@pytest.mark.parametrize("k", [1, 3, 10, None])
def test_standard_ndcg_matches_scikit_learn(k):
    """sklearn's ndcg_score takes gains as given: pass 2^label − 1; scores without ties."""
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    for size in (2, 5, 9, 20):
        labels = rng.integers(0, 4, size=size).astype(float)
        labels[0] = 2.0                                     # at least one relevant document
        scores = rng.normal(size=size)
        ours = metrics.ndcg(scores, labels, np.ones(size), k=k, convention="standard")
        theirs = sk.ndcg_score([2.0 ** labels - 1.0], [scores], k=k)
        assert ours == pytest.approx(theirs, rel=1e-12)


def test_rank_classify_metrics_name_the_ndcg_convention(tmp_path, capsys):
    examples = EXAMPLES
    model = tmp_path / "m"
    assert learn_main(["-v", "0", str(examples / "train.dat"), str(model)]) == 0
    capsys.readouterr()
    for convention, label in (("standard", "standard"), ("letor", "LETOR")):
        assert classify_main(["--metrics", "--ndcg", convention, "--ndcg-at", "5",
                              str(examples / "test.dat"), str(model), str(tmp_path / "p")]) == 0
        out = capsys.readouterr().out
        scores = np.loadtxt(tmp_path / "p")
        test = load_svmlight(str(examples / "test.dat"))
        value = metrics.ndcg(scores, test.y, test.qid, k=5, convention=convention)
        assert f"NDCG@5 ({label}): {value:.4f}\n" in out
        assert f"ERR@5: {metrics.err(scores, test.y, test.qid, k=5):.4f}\n" in out
        assert f"MRR: {metrics.reciprocal_rank(scores, test.y, test.qid):.4f}\n" in out


@pytest.mark.parametrize("contiguous", [True, False])
def test_streamed_metrics_equal_the_whole_file_figures(tmp_path, capsys, monkeypatch, contiguous):
    """Small batches (and a query split in the file) give the figures of rankfast.metrics."""
    from rankfast.cli import classify as classify_cli
    monkeypatch.setattr(classify_cli._QueryFigures, "BATCH", 7)
    lines = (EXAMPLES / "test.dat").read_text().splitlines(keepends=True)[:300]
    if not contiguous:
        lines = lines[20:] + lines[:20]                   # the first query's lines split in two
        lines = lines[:150] + lines[280:] + lines[150:280]
    data, model = tmp_path / "t.dat", tmp_path / "m"
    data.write_text("".join(lines))
    assert learn_main(["-v", "0", str(EXAMPLES / "train.dat"), str(model)]) == 0
    assert classify_main(["--metrics", "--ndcg-at", "3,10", str(data), str(model),
                          str(tmp_path / "p")]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert ("are not contiguous" in captured.err) == (not contiguous)
    test = load_svmlight(str(data))
    expected = classify_cli.metrics_report(np.loadtxt(tmp_path / "p"), test.y, test.qid, [3, 10])
    assert expected in out and "ERR@10: " in expected and "NDCG@3 (LETOR): " in expected


def test_both_programs_say_which_figures_no_ranking_could_change(tmp_path, capsys):
    """Queries of 4 documents with graded labels 1-3: LETOR's NDCG@10 is 0 and P@10, MAP and MRR
    are 1 whatever the model.  rank_learn chooses C by pair accuracy and says why;
    rank_classify --metrics prints the figures and a note on each group of alike ones."""
    rng = np.random.default_rng(3)
    lines = []
    for q in range(40):
        for _ in range(4):
            x = rng.normal(size=3)
            label = 1 + int(np.clip(np.round(x[0] + 0.5 * rng.normal()), 0, 2))
            lines.append(f"{label} qid:{q} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x)))
    train = tmp_path / "train.dat"
    train.write_text("\n".join(lines) + "\n")
    assert learn_main(["-c", "0.001,1,1000", str(train), str(tmp_path / "m")]) == 0
    captured = capsys.readouterr()
    assert ("rank_learn: note: NDCG@10 (LETOR) is the same for every ranking of the held-out "
            "queries: every query has fewer than 10 documents") in captured.err
    assert "chosen by pair accuracy" in captured.out
    assert classify_main(["--metrics", "--ndcg-at", "3,10", str(train), str(tmp_path / "m"),
                          str(tmp_path / "p")]) == 0
    captured = capsys.readouterr()
    assert "NDCG@10 (LETOR): 0.0000" in captured.out and "MAP: 1.0000" in captured.out
    notes = [line for line in captured.err.splitlines() if "is the same" in line or
             "are the same" in line]
    assert notes == [
        "rank_classify: note: NDCG@10 (LETOR) is the same for every ranking of these 40 queries: "
        "every query has fewer than 10 documents (LETOR's NDCG@10 scores such a query 0; the "
        "standard convention evaluates it over its whole list)",
        "rank_classify: note: P@3, P@10, MAP and MRR are the same for every ranking of these 40 "
        "queries: every query has only relevant documents (label > 0)"]
    assert classify_main(["--metrics", "--ndcg", "standard", str(train), str(tmp_path / "m"),
                          str(tmp_path / "p")]) == 0
    assert "NDCG@10 (standard)" not in capsys.readouterr().err          # it can tell models apart
