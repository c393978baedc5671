"""rankfast.cli.learners: -a's table of learners, and the notes a learner adds after fitting."""

from pathlib import Path

import numpy as np
import pytest

from rankfast import RankSVML1, read_model
from rankfast.cli.learn import learn_main
from rankfast.cli.learners import make_learner
from rankfast.cli.options import LEARN_OPTIONS

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_unknown_algorithm_is_taken_as_svm_rank_alpha_file(tmp_path, capsys):
    assert learn_main(["-a", "alphas.txt", "-c", "1", str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 0
    assert "alpha file, which rankfast does not write" in capsys.readouterr().err
    assert not (tmp_path / "alphas.txt").exists()


@pytest.mark.parametrize("value, name", [("RankRLS", "rankrls"), ("rankRLS", "rankrls"),
                                         ("PRSVM", "prsvm"), ("Greedy", "greedy")])
def test_learner_names_are_case_insensitive(tmp_path, capsys, small, value, name):
    model = tmp_path / "m"
    assert learn_main(["-a", value, "-k", "1", str(small), str(model)]) == 0
    assert read_model(str(model)).metadata["algorithm"] == name
    err = capsys.readouterr().err
    assert "alpha file" not in err
    assert ("-k" in err) == (name != "greedy")      # -k is greedy's own option


@pytest.mark.parametrize("value, suggestion", [("greed", "greedy"), ("rankrl", "rankrls"),
                                               ("prsv", "prsvm"), ("RankNG", "rankncg")])
def test_a_mistyped_learner_is_a_usage_error(tmp_path, capsys, small, value, suggestion):
    assert learn_main(["-v", "0", "-a", value, str(small), str(tmp_path / "m")]) == 2
    assert capsys.readouterr().err == (
        f"rank_learn: unknown learner '{value}' (did you mean {suggestion}?)\n"
        f"Try 'rank_learn -?' for the list of options.\n")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("value", ["alphas.txt", "alphas", "rankrls.alpha", "out/greedy"])
def test_other_values_are_svm_rank_alpha_files(tmp_path, capsys, small, value):
    model = tmp_path / "m"
    assert learn_main(["-a", value, str(small), str(model)]) == 0
    assert f"-a {value}: not a learner" in capsys.readouterr().err
    assert read_model(str(model)).metadata["algorithm"] == "prsvm"


@pytest.mark.parametrize("args, note", [
    (["-a", "greedy", "-k", "1", "-e", "0.1"], "-e has no effect with -a greedy"),
    (["-a", "greedy", "-k", "1", "-#", "3"], "-# has no effect with -a greedy"),
    (["--erfc", "direct"], "--erfc has no effect with -a prsvm"),
])
def test_options_a_learner_does_not_use_get_a_note(args, note):
    from rankfast.cli.learners import make_learner
    from rankfast.cli.options import parse_args
    options, given, _ = parse_args(args + ["train.dat"], LEARN_OPTIONS, {}, 2, "rank_learn")
    _, notes = make_learner(options, given)
    assert any(note in n for n in notes), notes


@pytest.mark.parametrize("args, note", [
    (["-e", "1e-9", "-#", "5"], "rank_learn: note: -e and -# have no effect: rankrls solved exactly"),
    (["-e", "0.1"], "rank_learn: note: -e has no effect: rankrls solved exactly"),
    ([], None),
])
def test_rankrls_says_when_its_exact_solver_did_not_use_e_or_the_iteration_cap(tmp_path, capsys,
                                                                                small, args, note):
    assert learn_main(["-a", "rankrls"] + args + [str(small), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert (note in err) if note else ("no effect" not in err)


def test_rankrls_says_its_conjugate_gradient_does_not_use_a_looser_e():
    from rankfast import RankRLS
    from rankfast.cli.learners import fitted_notes
    from rankfast.cli.options import parse_args
    options, given, _ = parse_args(["-e", "0.1", "x"], LEARN_OPTIONS, {}, 2, "rank_learn")
    wide = RankRLS(solver="cg").fit([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [0, 1, 2], [1, 1, 1])
    assert [n for n in fitted_notes(wide, options, given) if "a looser -e is not used" in n]
    options, given, _ = parse_args(["-e", "1e-8", "x"], LEARN_OPTIONS, {}, 2, "rank_learn")
    assert fitted_notes(wide, options, given) == []


def test_greedy_says_when_fewer_features_than_k_can_change_a_ranking(tmp_path, capsys):
    """Feature 2 is constant within each query and feature 4 empty: -k 4 selects 2 of them."""
    data = tmp_path / "train.dat"
    data.write_text("2 qid:1 1:0.5 2:7 3:1\n1 qid:1 1:0.1 2:7 3:3\n0 qid:1 1:0.2 2:7 3:2\n"
                    "1 qid:2 1:0.9 2:3 3:0 4:0\n0 qid:2 1:0.3 2:3 3:2\n")
    assert learn_main(["-a", "greedy", "-k", "4", str(data), str(tmp_path / "m")]) == 0
    assert ("rank_learn: note: -k 4: greedy selected 2, every feature that can change a ranking"
            in capsys.readouterr().err)
    assert learn_main(["-a", "greedy", "-k", "2", str(data), str(tmp_path / "m")]) == 0
    assert "greedy selected" not in capsys.readouterr().err


def test_svmrank_says_when_the_written_model_is_far_above_its_objective():
    """On agaricus as one ranking at -c 100 the file's 8-digit weights put 112k of 522k margin
    pairs on the other side: objective 2.48 as written, 1.654 printed.  The note compares the
    two; here the solver's value is set below the written one to see it fire."""
    import types

    from rankfast import Dataset
    from rankfast.cli.learners import model_notes
    rng = np.random.default_rng(5)
    X, y, qid = rng.normal(size=(60, 3)), rng.integers(0, 3, 60).astype(float), np.arange(60) // 6
    learner = RankSVML1(C=1.0).fit(X, y, qid)
    model = learner.to_model()
    dataset = Dataset(X, y, qid, np.arange(1, 61))
    from rankfast import objective
    written = objective(model, dataset, 1.0, 1, p=1)
    for solver_f, noted in ((written, False), (written / 1.01, True)):
        stub = types.SimpleNamespace(C=1.0, result_=types.SimpleNamespace(f=solver_f))
        notes = model_notes(model, dataset, {}, stub)
        assert bool(notes) == noted and (not noted or "as written is" in notes[0])


def test_p1_selects_svmrank_with_a_note():
    learner, notes = make_learner({"slack_norm": 1}, ["-p"])
    assert learner.name == "svmrank" and any("svmrank" in note for note in notes)
    learner, notes = make_learner({"slack_norm": 1, "algorithm": "prsvm"}, ["-a", "-p"])
    assert learner.name == "prsvm" and any("-p has no effect" in note for note in notes)
    learner, notes = make_learner({"algorithm": "svmrank", "epsilon": 0.01, "max_iter": 7},
                                  ["-a", "-e", "-#"])
    assert (learner.tol, learner.max_iter) == (0.01, 7) and not notes
