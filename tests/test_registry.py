"""rankfast.learners.registry: the one table of learners, read by rank_learn -a, rankfast's
exports, rankfast.sklearn and the messages; a learner registered in process is all of these,
and gone again once unregistered."""
import inspect
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

import rankfast
from rankfast import read_model
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main
from rankfast.learners import registry
from rankfast.learners._base import LinearRanker
from rankfast.learners._linear import linear_model

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def centred(values, starts):
    """Each query's rows less their query's mean (starts: the queries' first rows, and n)."""
    out = np.array(values, dtype=np.float64)
    for a, b in zip(starts[:-1], starts[1:]):
        out[a:b] -= out[a:b].mean(axis=0)
    return out


class ToyRanker(LinearRanker):
    """Least squares on the labels less their query's mean: minimises
    ½‖X̃w − ỹ‖² + ‖w‖² / (2C) (X̃, ỹ centred within each query) by one solve of
    (X̃ᵀX̃ + I/C) w = X̃ᵀỹ; O(n d² + d³).  A learner as a plugin would write it."""

    name = "toy"

    def __init__(self, C=0.01, loss=1, n_jobs=None, normalize="none"):
        self.C, self.loss, self.n_jobs, self.normalize = C, loss, n_jobs, normalize

    def _solve(self, problem, C, w0=None, log=None):
        X = problem.X.toarray() if hasattr(problem.X, "toarray") else np.asarray(problem.X)
        Xc, yc = centred(X, problem.starts), centred(problem.y, problem.starts)
        return np.linalg.solve(Xc.T @ Xc + np.eye(X.shape[1]) / C, Xc.T @ yc), None

    def to_model(self, n_features=None, n_documents=None):
        return linear_model(self, n_features, n_documents, {"C": self.C_, "l": self.loss})


@pytest.fixture
def toy():
    entry = registry.register("toy", __name__, "ToyRanker", registry.COMMON, title="Toy least squares")
    try:
        yield entry
    finally:
        registry.unregister("toy")
    assert "toy" not in registry.names()


def test_rank_learn_a_toy_trains_the_registered_learner_and_writes_its_model(tmp_path, capsys, toy):
    model = tmp_path / "model"
    assert learn_main(["-v", "0", "-a", "toy", "-c", "2", str(EXAMPLES / "train.dat"), str(model)]) == 0
    assert capsys.readouterr().err == ""
    written = read_model(str(model))
    assert written.metadata["algorithm"] == "toy" and float(written.metadata["C"]) == 2.0
    # the closed form, computed here from the file as the learner never sees it
    data = rankfast.load_svmlight(str(EXAMPLES / "train.dat"))
    X, y, qid = data.features, data.y, data.qid
    order = np.argsort(qid, kind="stable")
    X, y, qid = X.toarray()[order], np.asarray(y)[order], np.asarray(qid)[order]
    starts = np.r_[np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]]), len(qid)]
    Xc, yc = centred(X, starts), centred(y, starts)
    w = np.linalg.solve(Xc.T @ Xc + np.eye(X.shape[1]) / 2.0, Xc.T @ yc)
    dense = np.zeros(X.shape[1])
    dense[written.feature_ids - 1] = written.weights
    np.testing.assert_allclose(dense, w, rtol=1e-6, atol=1e-7)      # the file's float32
    assert classify_main(["--metrics", str(EXAMPLES / "test.dat"), str(model),
                          str(tmp_path / "pred")]) == 0
    accuracy = float(re.search(r"Pairwise accuracy: ([0-9.]+)", capsys.readouterr().out).group(1))
    assert accuracy > 0.6


def test_rank_learn_knows_the_toy_by_name_in_its_help_its_notes_and_its_suggestions(
        tmp_path, capsys, toy):
    assert learn_main(["-?"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "-a algo -> learner (default prsvm): prsvm, svmrank, rankncg, rankrls, greedy, toy" in help_text
    assert "Distributed training (prsvm, rankncg, rankrls;" in help_text     # not the toy
    assert learn_main(["-a", "TOY", "-e", "0.1", "-k", "3", "-j", "1",
                       str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "rank_learn: note: -k only tunes svm_rank's QP solver; accepted and ignored",
        "rank_learn: note: -e has no effect with -a toy"]
    assert learn_main(["-v", "0", "-a", "tyo", str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 2
    assert "unknown learner 'tyo' (did you mean toy?)" in capsys.readouterr().err


def test_the_toy_is_exported_by_rankfast_and_rankfast_sklearn(toy):
    sklearn = pytest.importorskip("sklearn")
    import rankfast.sklearn as wrappers
    assert rankfast.ToyRanker is ToyRanker and toy.load() is ToyRanker
    assert "ToyRanker" in rankfast.__all__ and "ToyRanker" in dir(rankfast)
    wrapped = wrappers.ToyRanker
    assert wrapped is wrappers.ToyRanker and wrapped in wrappers.ESTIMATORS
    assert "ToyRanker" in wrappers.__all__ and "ToyRanker" in dir(wrappers)
    assert issubclass(wrapped, ToyRanker) and issubclass(wrapped, sklearn.base.BaseEstimator)
    assert wrapped.__module__ == "rankfast.sklearn" and wrapped.__doc__.startswith(
        "ToyRanker of " + __name__ + " as a scikit-learn estimator")
    estimator = wrapped(C=3.0)
    assert estimator.get_params() == ToyRanker(C=3.0).get_params()
    assert sklearn.base.clone(estimator).get_params() == estimator.get_params()
    data = rankfast.load_svmlight(str(EXAMPLES / "train.dat"))
    X, y, qid = data.features, data.y, data.qid
    fitted = pickle.loads(pickle.dumps(estimator.fit(X, y, qid)))
    assert type(fitted) is wrapped
    np.testing.assert_array_equal(fitted.predict(X), estimator.predict(X))
    from rankfast.plot import learner_title
    assert learner_title(estimator) == "Toy least squares"


def test_an_unregistered_learner_is_gone_everywhere(tmp_path, capsys):
    registry.register("toy", __name__, "ToyRanker")
    registry.unregister("toy")
    assert "toy" not in registry.names() and "ToyRanker" not in rankfast.__all__
    assert not hasattr(rankfast, "ToyRanker") and "ToyRanker" not in dir(rankfast)
    assert learn_main(["-a", "toy", str(EXAMPLES / "train.dat"), str(tmp_path / "m")]) == 0
    assert "-a toy: not a learner (prsvm, svmrank, rankncg, rankrls, greedy)" in capsys.readouterr().err
    pytest.importorskip("sklearn")
    import rankfast.sklearn as wrappers
    assert not hasattr(wrappers, "ToyRanker") and len(wrappers.ESTIMATORS) == 8


@pytest.mark.parametrize("args, message", [
    (("prsvm", "m", "Other"), "'prsvm' is registered already"),
    (("Toy", "m", "Other"), "lower-case letters, digits and underscores"),
    (("to.y", "m", "Other"), "lower-case letters, digits and underscores"),
    (("toy", "m", "RankSVM"), "'RankSVM' is exported already (by prsvm)"),
    (("toy", "m", "NystroemMap"), "'NystroemMap' is exported already"),
    (("toy", "m", "Other", ("loss",)), "every learner takes C"),
])
def test_register_refuses_what_would_clash(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        registry.register(*args)
    assert registry.names() == ["prsvm", "svmrank", "rankncg", "rankrls", "greedy"]


def test_a_parameter_without_a_flag_is_named_when_the_learner_is_built(toy):
    from rankfast.cli.learners import build_learner
    registry.unregister("toy")
    registry.register("toy", __name__, "ToyRanker", ("C", "alpha"))
    with pytest.raises(ValueError, match="rank_learn has no flag for its parameter 'alpha'"):
        build_learner("toy", {})


@pytest.mark.parametrize("entry", registry.learners(), ids=lambda entry: entry.name)
def test_each_entry_names_its_class_and_parameters_the_class_takes(entry):
    cls = entry.load()
    assert cls.name == entry.name and cls.__name__ == entry.class_name
    assert getattr(rankfast, entry.class_name) is cls
    assert set(entry.parameters) <= set(inspect.signature(cls).parameters)
    assert ("cv" in entry.parameters) == hasattr(cls(), "cv_rule")


def test_the_entries_say_what_their_classes_do():
    from rankfast.dask import trains_on_shards
    for entry in registry.learners():
        cls = entry.load()
        assert entry.document_weights == cls.document_weights
        assert entry.distributed == trains_on_shards(cls)
    assert [e.name for e in registry.learners() if e.document_weights] == ["prsvm", "svmrank", "rankncg"]
    assert [e.name for e in registry.learners() if e.distributed] == ["prsvm", "rankncg", "rankrls"]
    assert list(registry.exported())[-3:] == ["KernelApproxLearner", "NystroemMap", "RandomFourierMap"]


def test_an_entry_that_says_otherwise_than_its_class_is_refused_when_loaded(toy):
    registry.unregister("toy")
    registry.register("toy", __name__, "ToyRanker", document_weights=True)
    with pytest.raises(ValueError, match="the entry of 'toy' says document_weights=True, "
                                         "distributed=False; its class ToyRanker says False, False"):
        registry.learner("toy").load()
