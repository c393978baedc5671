"""ERR@k, MRR and P@k against brute-force twins; the standard NDCG against scikit-learn."""

from pathlib import Path

import numpy as np
import pytest

from rankfast import load_svmlight, metrics
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


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
