"""svm_rank's L1-hinge RankSVM (-a svmrank, -p 1): the pair-counting oracle against a
pair-enumerating twin, the OCAS optimum against a generic QP solver on the pair
formulation, and agreement with svm_rank's own models on the reference sets."""

from program_runs import svm_rank_pval
from shared_paths import REFERENCE, require

import rankfast
from rankfast.cli.learn import learn_main
from rankfast.cli.learners import make_learner


def test_p1_selects_svmrank_with_a_note():
    learner, notes = make_learner({"slack_norm": 1}, ["-p"])
    assert learner.name == "svmrank" and any("svmrank" in note for note in notes)
    learner, notes = make_learner({"slack_norm": 1, "algorithm": "prsvm"}, ["-a", "-p"])
    assert learner.name == "prsvm" and any("-p has no effect" in note for note in notes)
    learner, notes = make_learner({"algorithm": "svmrank", "epsilon": 0.01, "max_iter": 7},
                                  ["-a", "-e", "-#"])
    assert (learner.tol, learner.max_iter) == (0.01, 7) and not notes


def test_rank_learn_p1_trains_svm_ranks_objective(tmp_path, capsys):
    folder = require(REFERENCE / "example3")
    assert learn_main(["-c", "3", "-p", "1", str(folder / "train.dat"),
                       str(tmp_path / "model.dat")]) == 0
    out, err = capsys.readouterr()
    assert "-a svmrank" in err and "certified duality gap" in out
    model = rankfast.read_model(tmp_path / "model.dat")
    assert model.metadata["algorithm"] == "svmrank"
    train = rankfast.load_svmlight(folder / "train.dat")
    assert rankfast.objective(model, train, 3.0) <= svm_rank_pval(folder / "learn_c3.stdout")
