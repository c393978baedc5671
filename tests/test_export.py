"""rank_export and rankfast.export: each format read back against the model file, ONNX
Runtime against rank_classify, refusals and atomic output.

The weights are checked bit for bit against the numbers of the model file's own
text (read here, independently of rankfast's reader), as float32 (what the
plugins and Solr parse) and as float64 (what RankLib and Python parse).  The
ONNX tests need onnx and onnxruntime (the test extra) and skip, saying so,
without them.
"""
import json
import os
import sys

import numpy as np
import pytest

from rankfast import InputError, UsageError, load_svmlight, read_model
from rankfast.cli.classify import classify_main
from rankfast.cli.export import main
from rankfast.cli.learn import learn_main
from rankfast.errors import MissingDependencyError
from rankfast.export import FORMATS, read_feature_names, to_json

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
TRAIN, TEST = os.path.join(EXAMPLES, "train.dat"), os.path.join(EXAMPLES, "test.dat")
LINEAR_FORMATS = ("es-ltr", "opensearch-ltr", "solr-ltr", "ranklib")

# rank_learn options of each model the tests export (the examples have 20 features).
TRAINED = {
    "linear": [],
    "zscore": ["--normalize", "zscore"],
    "query": ["--normalize", "query"],
    "log": ["--normalize", "log"],
    "rbf": ["-t", "2", "-g", "0.1", "--landmarks", "60"],
    "poly": ["-t", "1", "-d", "2", "-s", "0.5", "-r", "1", "--landmarks", "40"],
    "sigmoid": ["-t", "3", "-s", "0.1", "-r", "0", "--landmarks", "40"],
    "rff": ["-t", "2", "-g", "0.1", "--approx", "rff", "--landmarks", "60"],
    "rbf_query": ["-t", "2", "-g", "0.1", "--landmarks", "60", "--normalize", "query"],
    "rff_log": ["-t", "2", "-g", "0.1", "--approx", "rff", "--landmarks", "60", "--normalize", "log"],
    "rbf_zscore": ["-t", "2", "-g", "0.05", "--landmarks", "60", "--normalize", "zscore"],
    "rff_zscore": ["-t", "2", "-g", "0.05", "--approx", "rff", "--landmarks", "60",
                   "--normalize", "zscore"],
}
NAMES = [f"feature_{i}" for i in range(1, 20)] + ["größe"]      # one name is not ASCII


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Model files trained by rank_learn on examples/train.dat, by TRAINED's key."""
    folder = tmp_path_factory.mktemp("models")
    paths = {}
    for key, options in TRAINED.items():
        paths[key] = str(folder / f"{key}.dat")
        assert learn_main(["-v", "0", *options, TRAIN, paths[key]]) == 0
    return paths


@pytest.fixture
def names_file(tmp_path):
    path = tmp_path / "features.txt"
    path.write_text("".join(name + "\n" for name in NAMES), encoding="utf-8")
    return str(path)


def file_weights(path):
    """{feature: weight text} of a linear model file's support vector line, read from its text."""
    lines = open(path, encoding="utf-8").read().splitlines()
    assert lines[1].split()[0] == "0" and len(lines) == 12           # linear, one SV
    words = lines[11].split("#", 1)[0].split()
    assert words[0] == "1"
    return {int(i): v for i, v in (word.split(":") for word in words[1:])}


def assert_bit_for_bit(exported, path, minimum=10):
    """exported ({feature: weight}) holds the model file's weights, float32 and float64 alike."""
    text = file_weights(path)
    expected = {i: np.float32(value) for i, value in text.items() if np.float32(value) != 0}
    assert sorted(exported) == sorted(expected) and len(expected) >= minimum
    got = np.array([exported[i] for i in sorted(expected)], dtype=np.float64)
    want = np.array([expected[i] for i in sorted(expected)], dtype=np.float32)
    np.testing.assert_array_equal(got.view(np.uint64), want.astype(np.float64).view(np.uint64))
    np.testing.assert_array_equal(got.astype(np.float32).view(np.uint32), want.view(np.uint32))


def weighted(path):
    """The model file's features with a non-zero weight, in index order."""
    return sorted(i for i, value in file_weights(path).items() if np.float32(value) != 0)


def export(args, capsys):
    status = main(args)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# ------------------------------------------------------------------ search-engine formats

@pytest.mark.parametrize("fmt", ["es-ltr", "opensearch-ltr"])
@pytest.mark.parametrize("key", ["linear", "zscore"])
def test_ltr_plugin_body_round_trips_the_weights(models, names_file, tmp_path, capsys, fmt, key):
    out = tmp_path / "model.json"
    status, stdout, stderr = export(["--format", fmt, "--feature-names", names_file,
                                     "--name", "my_linear_model", models[key], str(out)], capsys)
    assert (status, stdout, stderr) == (0, "", "")
    body = json.loads(out.read_text(encoding="utf-8"))
    assert list(body) == ["model"] and list(body["model"]) == ["name", "model"]
    assert body["model"]["name"] == "my_linear_model"
    assert body["model"]["model"]["type"] == "model/linear"
    definition = body["model"]["model"]["definition"]
    assert isinstance(definition, str)                  # the documented form: a JSON string
    weights = json.loads(definition)
    ids = weighted(models[key])
    assert list(weights) == [NAMES[i - 1] for i in ids]         # named, in index order
    assert_bit_for_bit({i: weights[NAMES[i - 1]] for i in ids}, models[key])


def test_es_and_opensearch_bodies_are_the_same(models, tmp_path):
    paths = [tmp_path / "es.json", tmp_path / "os.json"]
    for fmt, path in zip(("es-ltr", "opensearch-ltr"), paths):
        assert main(["--format", fmt, "--name", "m", models["linear"], str(path)]) == 0
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_solr_linear_model_round_trips_the_weights(models, names_file, tmp_path, capsys):
    out = tmp_path / "model.json"
    status, _, stderr = export(["--format", "solr-ltr", "--feature-names", names_file,
                                "--name", "myModelName", models["linear"], str(out)], capsys)
    assert (status, stderr) == (0, "")
    body = json.loads(out.read_text(encoding="utf-8"))
    assert list(body) == ["class", "name", "features", "params"]
    assert body["class"] == "org.apache.solr.ltr.model.LinearModel"
    assert body["name"] == "myModelName"
    ids = weighted(models["linear"])
    assert body["features"] == [{"name": NAMES[i - 1]} for i in ids]
    assert list(body["params"]) == ["weights"]
    weights = body["params"]["weights"]
    assert list(weights) == [NAMES[i - 1] for i in ids]  # Solr wants a weight for every feature
    assert_bit_for_bit({i: weights[NAMES[i - 1]] for i in ids}, models["linear"])


def ranklib_weights(text):
    """RankLib's CoorAscent.loadFromString: skip blank and '##' lines, then 'fid:w' pairs."""
    for line in text.split("\n"):
        line = line.strip()
        if not line or line.startswith("##"):
            continue
        pairs = [word for word in line.split("#")[0].split(" ") if word]
        return {int(word[:word.index(":")]): float(word[word.rindex(":") + 1:]) for word in pairs}
    raise AssertionError("no weight line")


def test_ranklib_coordinate_ascent_round_trips_the_weights(models, tmp_path, capsys):
    out = tmp_path / "model.txt"
    status, _, stderr = export(["--format", "ranklib", models["linear"], str(out)], capsys)
    assert (status, stderr) == (0, "")
    text = out.read_text(encoding="ascii")
    assert text.split("\n")[0] == "## Coordinate Ascent"    # RankerFactory reads the name here
    weights = ranklib_weights(text)
    assert list(weights) == weighted(models["linear"])      # ordinals: 1 = the first feature
    assert_bit_for_bit(weights, models["linear"])


def test_features_are_named_by_index_without_names(models, tmp_path):
    out = tmp_path / "model.json"
    assert main(["--format", "solr-ltr", models["linear"], str(out)]) == 0
    body = json.loads(out.read_text())
    ids = weighted(models["linear"])
    assert [f["name"] for f in body["features"]] == [str(i) for i in ids]
    assert body["name"] == "linear"                          # the model file's name
    assert_bit_for_bit({int(k): w for k, w in body["params"]["weights"].items()},
                       models["linear"])


def test_more_names_than_features_are_the_feature_sets_others(models, tmp_path):
    names = tmp_path / "names.txt"
    names.write_text("\n".join(NAMES + ["extra_a", "extra_b"]) + "\n")
    out = tmp_path / "model.json"
    assert main(["--format", "solr-ltr", "--feature-names", str(names), models["linear"],
                 str(out)]) == 0
    weights = json.loads(out.read_text())["params"]["weights"]
    assert "extra_a" not in weights and "extra_b" not in weights      # weigh 0: not listed
    assert_bit_for_bit({NAMES.index(k) + 1: w for k, w in weights.items()}, models["linear"])


def test_a_hashed_feature_space_stays_small():
    from rankfast import LinearModel
    model = LinearModel([5, 2**31 - 1], [0.5, -0.25], bias=3.0, highest_feature_index=2**31)
    body = json.loads(model.to_json("es-ltr", name="hashed"))
    assert json.loads(body["model"]["model"]["definition"]) == {"5": 0.5, "2147483647": -0.25}
    assert ranklib_weights(model.to_json("ranklib")) == {5: 0.5, 2**31 - 1: -0.25}


def test_a_model_without_weights_is_still_a_ranklib_model():
    from rankfast import LinearModel
    text = LinearModel.from_dense([0.0, 0.0]).to_json("ranklib")
    assert text.split("\n")[0] == "## Coordinate Ascent" and ranklib_weights(text) == {1: 0.0}


def test_python_api_gives_the_programs_bytes(models, names_file, tmp_path):
    model = read_model(models["linear"])
    for fmt in LINEAR_FORMATS:
        out = tmp_path / f"{fmt}.out"
        assert main(["--format", fmt, "--feature-names", names_file, "--name", "m",
                     models["linear"], str(out)]) == 0
        assert model.to_json(format=fmt, feature_names=NAMES, name="m") == \
            out.read_text(encoding="utf-8")


# ------------------------------------------------------------------ refusals

@pytest.mark.parametrize("fmt", LINEAR_FORMATS)
@pytest.mark.parametrize("key, why", [
    ("rbf", "a kernel model (RBF kernel, Nyström) is not linear in the features"),
    ("poly", "a kernel model (polynomial kernel, Nyström) is not linear in the features"),
    ("rff", "a random Fourier feature model (RBF kernel) is not linear in the features"),
    ("query", "trained with --normalize query"),
    ("log", "trained with --normalize log"),
])
def test_linear_formats_refuse_what_they_cannot_hold(models, tmp_path, capsys, fmt, key, why):
    out = tmp_path / "model.out"
    out.write_text("old content\n")
    status, stdout, stderr = export(["--format", fmt, models[key], str(out)], capsys)
    assert status == 2
    lines = stderr.splitlines()
    assert lines[0].startswith(f"rank_export: {models[key]}: ")
    assert why in lines[0] and "export it with --format onnx" in lines[0]
    assert fmt in lines[0]
    assert lines[1] == "Try 'rank_export -?' for the list of options."
    assert out.read_text() == "old content\n"                 # untouched
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".rankfast-")]


def test_refusal_creates_no_file(models, tmp_path):
    out = tmp_path / "model.json"
    assert main(["--format", "es-ltr", models["rbf"], str(out)]) == 2
    assert os.listdir(tmp_path) == []


def test_python_api_refusals_are_usage_errors(models):
    with pytest.raises(UsageError, match="not linear"):
        read_model(models["rbf"]).to_json(format="solr-ltr")
    with pytest.raises(UsageError, match="'normalize' query"):
        read_model(models["query"]).to_json(format="ranklib")
    with pytest.raises(UsageError, match="format must be one of"):
        read_model(models["linear"]).to_json(format="xgboost")
    with pytest.raises(ValueError):                        # UsageError is a ValueError
        to_json(read_model(models["linear"]), "onnx")


@pytest.mark.parametrize("content, line, reason", [
    ("a\nb\na\n", 3, "feature name 'a' is also on line 1"),
    ("a\n\nb\n", 2, "empty feature name (one name a line, in feature index order)"),
    ("", None, "no feature names"),
])
def test_bad_feature_names_are_input_errors(models, tmp_path, capsys, content, line, reason):
    names = tmp_path / "names.txt"
    names.write_text(content)
    out = tmp_path / "model.json"
    status, _, stderr = export(["--format", "es-ltr", "--feature-names", str(names),
                                models["linear"], str(out)], capsys)
    where = f"{names}:{line}" if line else f"{names}"
    assert (status, stderr) == (1, f"rank_export: {where}: {reason}\n")
    assert not out.exists()
    with pytest.raises(InputError):
        read_feature_names(str(names))


def test_too_few_feature_names_are_an_input_error(models, tmp_path, capsys):
    names = tmp_path / "names.txt"
    names.write_text("a\nb\nc\n")
    out = tmp_path / "model.json"
    status, _, stderr = export(["--format", "solr-ltr", "--feature-names", str(names),
                                models["linear"], str(out)], capsys)
    assert status == 1
    assert stderr.startswith(f"rank_export: {names}: 3 feature names, but the model weighs "
                             f"features up to 20")
    assert not out.exists()


def test_feature_names_keep_utf8_and_drop_blanks_and_crlf(tmp_path):
    names = tmp_path / "names.txt"
    names.write_bytes("\ufefftitle \r\n größe\r\n".encode("utf-8"))
    assert read_feature_names(str(names)) == ["title", "größe"]


@pytest.mark.parametrize("args, message", [
    (["model.dat", "out.json"], "--format is required: one of onnx, es-ltr, opensearch-ltr, "
                                "solr-ltr, ranklib"),
    (["--format", "xgboost", "model.dat", "out.json"],
     "--format must be onnx or es-ltr or opensearch-ltr or solr-ltr or ranklib (got 'xgboost')"),
    (["--format", "es-ltr", "model.dat"], "not enough input parameters: rank_export --format "
                                          "FORMAT [options] model_file output_file"),
    (["--format", "es-ltr", "a", "b", "c"], "unexpected argument 'c'"),
    (["--format", "es-ltr", "--name", "", "a", "b"], "--name must not be empty"),
    (["--bogus", "a", "b"], "unrecognized option --bogus"),
    (["--format"], "option --format needs a value"),
])
def test_usage_errors_exit_2(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    status, stdout, stderr = export(args, capsys)
    assert (status, stdout) == (2, "")
    assert stderr == f"rank_export: {message}\nTry 'rank_export -?' for the list of options.\n"
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("flag", ["-?", "--help", "-h"])
def test_help(flag, capsys):
    status, stdout, stderr = export([flag], capsys)
    assert (status, stderr) == (0, "")
    assert "usage: rank_export --format FORMAT [options] model_file output_file" in stdout
    for fmt in FORMATS:
        assert fmt in stdout


def test_version(capsys):
    from rankfast import __version__
    assert export(["--version"], capsys) == (0, f"rank_export (rankfast) {__version__}\n", "")


def test_unreadable_model_is_an_input_error_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "model.json"
    missing = tmp_path / "missing.dat"
    status, _, stderr = export(["--format", "es-ltr", str(missing), str(out)], capsys)
    assert (status, stderr) == (1, f"rank_export: {missing}: No such file or directory\n")
    assert not out.exists()
    bad = tmp_path / "bad.dat"
    bad.write_text("not a model\n")
    status, _, stderr = export(["--format", "ranklib", str(bad), str(out)], capsys)
    assert status == 1 and "not an SVM-light V6.20 model file" in stderr
    assert sorted(os.listdir(tmp_path)) == ["bad.dat"]


def test_output_in_a_missing_directory_is_an_input_error(models, tmp_path, capsys):
    out = tmp_path / "no" / "model.json"
    status, _, stderr = export(["--format", "es-ltr", models["linear"], str(out)], capsys)
    assert status == 1 and stderr.startswith(f"rank_export: {out}: cannot write")


def test_failed_write_leaves_the_old_file_and_no_temporary(models, tmp_path, monkeypatch,
                                                          capsys):
    import errno

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    out = tmp_path / "model.json"
    out.write_text("old\n")
    monkeypatch.setattr(os, "fsync", full)            # the disk fills as the file is written
    status, _, stderr = export(["--format", "es-ltr", models["linear"], str(out)], capsys)
    assert (status, stderr) == (1, f"rank_export: {out}: cannot write: No space left on device\n")
    assert out.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["model.json"]


def test_launcher_runs_the_program(models, tmp_path):
    import subprocess
    launcher = os.path.join(os.path.dirname(EXAMPLES), "rank_export")
    out = tmp_path / "model.txt"
    done = subprocess.run([sys.executable, launcher, "--format", "ranklib", models["linear"],
                           str(out)], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert out.read_text().startswith("## Coordinate Ascent\n")


# ------------------------------------------------------------------ ONNX

def test_onnx_without_the_package_says_how_to_install(models, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "onnx", None)            # import onnx fails
    out = tmp_path / "model.onnx"
    status, _, stderr = export(["--format", "onnx", models["linear"], str(out)], capsys)
    assert (status, stderr) == (1, "rank_export: ONNX export needs the onnx package: "
                                   "pip install rankfast[onnx]\n")
    assert not out.exists()
    with pytest.raises(MissingDependencyError):
        read_model(models["linear"]).to_onnx()


@pytest.fixture(scope="module")
def runtime():
    pytest.importorskip("onnx", reason="the ONNX tests need onnx (pip install rankfast[onnx])")
    return pytest.importorskip("onnxruntime", reason="the ONNX tests need onnxruntime "
                                                     "(pip install onnxruntime)")


@pytest.fixture(scope="module")
def test_data():
    data = load_svmlight(TEST)
    X = data.features.toarray() if hasattr(data.features, "toarray") else \
        np.asarray(data.features)
    return X.astype(np.float32), np.asarray(data.qid)


def classified(model_path, tmp_path):
    """rank_classify's predictions on examples/test.dat (its printed '%.8f' numbers)."""
    predictions = tmp_path / "predictions"
    assert classify_main(["-v", "0", TEST, model_path, str(predictions)]) == 0
    return np.loadtxt(predictions)


def onnx_scores(session, X, qid, per_query):
    if not per_query:
        return session.run(None, {"features": X})[0]
    scores = np.empty(len(X))
    for q in np.unique(qid):                       # one query's documents a call
        rows = qid == q
        scores[rows] = session.run(None, {"features": X[rows]})[0]
    return scores


@pytest.mark.parametrize("key", list(TRAINED))
def test_onnx_runtime_reproduces_rank_classify(models, runtime, test_data, tmp_path, capsys,
                                               key):
    out = tmp_path / "model.onnx"
    status, _, stderr = export(["--format", "onnx", models[key], str(out)], capsys)
    assert (status, stderr) == (0, "")
    session = runtime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    (given,), (result,) = session.get_inputs(), session.get_outputs()
    assert (given.name, given.type, given.shape[1]) == ("features", "tensor(float)", 20)
    assert (result.name, result.type) == ("scores", "tensor(double)")
    X, qid = test_data
    scores = onnx_scores(session, X, qid, per_query=key in ("query", "rbf_query"))
    expected = classified(models[key], tmp_path)
    assert scores.shape == expected.shape == (len(X),)
    # 1e-5 relative (to the scores' scale), past the 5e-9 of rank_classify's printed digits
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    # and against the model's own scoring of the same float32 values: rounding only
    model = read_model(models[key])
    direct = model.predict(X.astype(np.float64), qid)          # qid: only a query model uses it
    np.testing.assert_allclose(scores, direct, rtol=1e-10, atol=1e-12 * np.abs(direct).max())


def test_onnx_linear_and_rbf_agree_with_rank_classify_to_its_last_digit(models, runtime,
                                                                        test_data, tmp_path):
    X, qid = test_data
    for key in ("linear", "rbf"):
        out = tmp_path / f"{key}.onnx"
        assert main(["--format", "onnx", models[key], str(out)]) == 0
        session = runtime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
        scores = session.run(None, {"features": X})[0]
        printed = np.array([float(f"{s:.8f}") for s in scores])
        expected = classified(models[key], tmp_path)
        assert np.abs(printed - expected).max() <= 1.0000001e-8   # at most one unit of %.8f
        assert np.mean(printed == expected) > 0.99


def test_onnx_metadata_and_extra_columns(models, runtime, test_data, tmp_path):
    import onnx
    names = tmp_path / "names.txt"
    names.write_text("\n".join(NAMES + ["unused"]) + "\n", encoding="utf-8")
    X, _ = test_data
    wide = np.hstack([X, np.full((len(X), 1), 1e3, dtype=np.float32)])   # ignored column
    for key in ("linear", "rbf", "rff"):
        out = tmp_path / f"{key}.onnx"
        assert main(["--format", "onnx", "--feature-names", str(names), "--name", "ranker",
                     models[key], str(out)]) == 0
        proto = onnx.load(str(out))
        onnx.checker.check_model(proto)
        props = {p.key: p.value for p in proto.metadata_props}
        assert json.loads(props["feature_names"]) == NAMES + ["unused"]
        assert proto.graph.name == "ranker"
        assert proto.opset_import[0].version == 17 and proto.ir_version == 8
        session = runtime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
        assert session.get_inputs()[0].shape[1] == 21
        narrow = tmp_path / f"{key}-narrow.onnx"
        assert main(["--format", "onnx", models[key], str(narrow)]) == 0
        reference = runtime.InferenceSession(str(narrow), providers=["CPUExecutionProvider"])
        np.testing.assert_array_equal(session.run(None, {"features": wide})[0],
                                      reference.run(None, {"features": X})[0])


def test_onnx_query_model_says_one_query_a_call(models, runtime, tmp_path):
    import onnx
    out = tmp_path / "query.onnx"
    assert main(["--format", "onnx", models["query"], str(out)]) == 0
    proto = onnx.load(str(out))
    props = {p.key: p.value for p in proto.metadata_props}
    assert (props["normalize"], props["per_query"]) == ("query", "true")
    assert "one query's documents" in proto.doc_string


def test_onnx_python_api_is_the_programs_graph(models, runtime, names_file, tmp_path):
    for key in ("linear", "rbf", "rff", "query"):
        out = tmp_path / f"{key}.onnx"
        assert main(["--format", "onnx", "--feature-names", names_file, "--name", "m",
                     models[key], str(out)]) == 0
        proto = read_model(models[key]).to_onnx(feature_names=NAMES, name="m")
        assert proto.SerializeToString() == out.read_bytes()


def test_onnx_too_few_names_for_a_kernel_model(models, runtime, tmp_path, capsys):
    names = tmp_path / "names.txt"
    names.write_text("\n".join(NAMES[:19]) + "\n")
    out = tmp_path / "model.onnx"
    status, _, stderr = export(["--format", "onnx", "--feature-names", str(names),
                                models["rbf"], str(out)], capsys)
    assert status == 1
    assert "19 feature names, but the model reads every feature up to 20" in stderr
    assert not out.exists()


def test_pyproject_declares_the_program_and_the_extra():
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+")
    root = os.path.dirname(EXAMPLES)
    with open(os.path.join(root, "pyproject.toml"), "rb") as stream:
        project = tomllib.load(stream)["project"]
    assert project["scripts"]["rank_export"] == "rankfast.cli.export:export_command"
    assert project["optional-dependencies"]["onnx"] == ["onnx>=1.14"]
    import importlib
    module, _, function = project["scripts"]["rank_export"].partition(":")
    assert callable(getattr(importlib.import_module(module), function))
    with open(os.path.join(root, "MANIFEST.in")) as stream:
        included = [line.split()[1:] for line in stream if line.startswith("include ")]
    assert any("rank_export" in names for names in included)


def test_onnx_refuses_a_graph_above_two_gigabytes(runtime):
    from rankfast import LinearModel
    model = LinearModel([5, 2**30], [0.5, -0.25], highest_feature_index=2**30 + 1)
    with pytest.raises(UsageError, match="8.6 GB, above the 2 GB"):
        model.to_onnx()                            # refused before 8 GB are allocated


# ------------------------------------------------------------------ svm_rank's own models

@pytest.mark.parametrize("c", ["0.01", "1", "3", "20"])
def test_svm_rank_linear_models_export_bit_for_bit(svm_rank_reference, tmp_path, c):
    model = str(svm_rank_reference / "example3" / f"model_c{c}.dat")
    out = tmp_path / "model.json"
    assert main(["--format", "es-ltr", model, str(out)]) == 0
    weights = json.loads(json.loads(out.read_text())["model"]["model"]["definition"])
    assert_bit_for_bit({int(k): w for k, w in weights.items()}, model, minimum=1)


@pytest.mark.parametrize("model_name, predictions", [
    ("model_c3.dat", "pred_test_c3.txt"), ("model_c20.dat", "pred_test_c20.txt"),
    ("model_c3_t2.dat", "pred_test_c3_t2.txt"),          # svm_rank's own RBF kernel model
])
def test_onnx_runtime_reproduces_svm_rank_classify(svm_rank_reference, runtime, tmp_path,
                                                   model_name, predictions):
    folder = svm_rank_reference / "example3"
    out = tmp_path / "model.onnx"
    assert main(["--format", "onnx", str(folder / model_name), str(out)]) == 0
    data = load_svmlight(str(folder / "test.dat"))
    X = data.features.toarray() if hasattr(data.features, "toarray") else \
        np.asarray(data.features)
    session = runtime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    scores = session.run(None, {"features": X.astype(np.float32)})[0]
    expected = np.loadtxt(folder / predictions)        # svm_rank_classify's '%.8f' numbers
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=5.000001e-9)


@pytest.mark.parametrize("case", ["opt_t1", "opt_t2", "opt_t3"])
def test_onnx_runtime_scores_svm_rank_kernel_models_as_rank_classify(
        svm_rank_reference, runtime, tmp_path, case):
    folder = svm_rank_reference / "edge_cases" / case     # polynomial, RBF, sigmoid
    out = tmp_path / "model.onnx"
    assert main(["--format", "onnx", str(folder / "model.dat"), str(out)]) == 0
    data = load_svmlight(str(folder / "train.dat"))
    X = data.features.toarray() if hasattr(data.features, "toarray") else \
        np.asarray(data.features)
    session = runtime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    scores = session.run(None, {"features": X[:, :session.get_inputs()[0].shape[1]]
                                .astype(np.float32)})[0]
    predictions = tmp_path / "predictions"
    assert classify_main(["-v", "0", str(folder / "train.dat"), str(folder / "model.dat"),
                          str(predictions)]) == 0
    expected = np.loadtxt(predictions)
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=5.000001e-9)
