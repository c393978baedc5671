"""rankfast.io.model_files: svm_rank's model file format, written and read back exactly, and
every malformed or truncated model refused with its line."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
import svmlight_reference as ref
from data_makers import FUZZ, model_text, mutated, ranking_data
from data_makers import letor_like_with_query_level_columns as letor_like
from fit_helpers import rff_learner
from hypothesis import example, given
from hypothesis import strategies as st
from program_runs import run_python
from shared_paths import REFERENCE, require

from rankfast import (
    InputError,
    KernelModel,
    LinearModel,
    RankSVM,
    RFFModel,
    load_svmlight,
    read_model,
    write_model,
)
from rankfast.io import model_files as model_module
from rankfast.io._model_text import RFF_VERSION_LINE
from rankfast.io.model_files import format_model, format_rff_model, parse_rff_model

SV = b"1 1:1.5 3:-0.25 10:2e-3 #"


EXAMPLE3 = REFERENCE / "example3"


HEADER = [b"SVM-light Version V6.20", b"0 # kernel type", b"3 # kernel parameter -d ",
          b"1 # kernel parameter -g ", b"1 # kernel parameter -s ", b"1 # kernel parameter -r ",
          b"empty# kernel parameter -u ", b"11 # highest feature index ",
          b"8 # number of training documents ", b"2 # number of support vectors plus 1 ",
          b"0.25 # threshold b, each following line is a SV (starting with alpha*y)"]


def reference_model(text):
    """(bias, {feature: weight}) of a linear model text, or the line of its first fault."""
    lines = text.split(b"\n")
    if len(lines) < 12 or lines[0].strip() != HEADER[0]:
        return None
    values = []
    for number, kind in ((2, int), (8, int), (10, int), (11, float), (4, float), (5, float),
                         (6, float), (3, int), (9, int)):
        words = lines[number - 1].split(b"#", 1)[0].split()
        token = words[0] if words else b""
        value = (ref.unsigned(token.lstrip(b"-"), 2**63 - 1) if kind is int
                 else ref.number(token))
        if value is None or (kind is float and not math.isfinite(value)):
            return number
        values.append(-value if kind is int and token.startswith(b"-") else value)
    kernel, highest, sv_plus_one, bias = values[:4]
    if kernel != 0:
        return None                         # the fuzz keeps to linear models
    if not 1 <= highest <= 2**31:
        return 8
    if sv_plus_one < 1:
        return 10
    try:
        rows = ref.parse(b"\n".join(lines[11:]))
    except ref.Bad as bad:
        return 11 + bad.line
    if len(rows) != sv_plus_one - 1:
        return "count"
    weights = {}
    for alpha, _, features in rows:
        for index, value in features:
            if index > highest:
                return "highest"
            weights[index] = weights.get(index, 0.0) + alpha * float(np.float32(value))
    return bias, {k: v for k, v in weights.items() if v != 0}


@st.composite
def model_texts(draw):
    header = list(HEADER)
    target = draw(st.integers(1, 11))
    header[target - 1] = draw(mutated([header[target - 1]], newlines=False))
    return b"\n".join(header + [draw(mutated([SV]))]) + b"\n"


@FUZZ
@given(text=model_texts())
@example(text=b"\n".join(HEADER[:7] + [b"1_0 # highest feature index"] + HEADER[8:] + [SV]))
def test_mutated_model_files_read_as_the_reference_says(tmp_path, text):
    path = tmp_path / "model.dat"
    path.write_bytes(text)
    expected = reference_model(text)
    try:
        model = read_model(str(path))
    except InputError as exc:
        assert not isinstance(expected, tuple), f"refused a valid model: {exc}"
        if isinstance(expected, int):
            assert exc.line == expected
        return
    if expected is None:                    # a kernel type or layout the fuzz does not model
        return
    assert isinstance(expected, tuple), f"accepted a bad model (reference: {expected})"
    bias, weights = expected
    assert model.bias == bias
    assert model.feature_ids.tolist() == sorted(weights)
    assert model.weights.tolist() == [weights[k] for k in sorted(weights)]


def test_rff_file_is_refused_by_svm_light_readers():
    """svm_rank_classify reads 'SVM-light Version %s' and stops unless it is V6.20."""
    X, y, qid = ranking_data(queries=10)
    text = format_rff_model(rff_learner(X, y, qid).to_model())
    first = text.split("\n", 1)[0]
    assert first == RFF_VERSION_LINE and not first.startswith("SVM-light Version")


def on_line(number, change):
    """A mutation of the file's text that rewrites its line ``number`` (1-based)."""
    def mutate(text):
        lines = text.split("\n")
        lines[number - 1] = change(lines[number - 1])
        return "\n".join(lines)
    return mutate


def third_word(replacement):
    return lambda line: " ".join(line.split(" ")[:2] + [replacement] + line.split(" ")[3:])


@pytest.mark.parametrize("mutate, line, message", [
    (on_line(1, lambda l: "rankfast RFF model V3"), 1, "not a rankfast RFF"),
    (on_line(2, lambda l: "1 # kernel type"), 2, "kernel type must be 2"),
    (on_line(3, lambda l: "x" + l[1:]), 3, "-g"),
    (on_line(6, lambda l: "65" + l[2:]), 71, "announces 65"),
    (lambda t: "\n".join(t.split("\n")[:4]), 4, "ends inside its header"),
    (on_line(8, lambda l: l.split(" ", 1)[1]), 8, "7 numbers, expected 8"),
    (on_line(9, third_word("nan")), 9, "not finite"),
    (on_line(10, third_word("1.5x")), 10, "not a number"),
    (on_line(11, lambda l: l[:-2]), 11, "'#'"),
])
def test_malformed_rff_files_name_the_line(mutate, line, message):
    X, y, qid = ranking_data(queries=10)
    text = format_rff_model(rff_learner(X, y, qid).to_model(n_features=X.shape[1]))
    with pytest.raises(InputError) as info:
        parse_rff_model(mutate(text), "bad.dat")
    assert info.value.line == line and message in str(info.value), str(info.value)


def test_rff_model_goes_through_write_and_read_model(tmp_path):
    X, y, qid = ranking_data(queries=10)
    model = rff_learner(X, y, qid).to_model(n_features=X.shape[1])
    path = tmp_path / "rff.dat"
    write_model(model, str(path))
    assert path.read_text() == format_rff_model(model)
    back = read_model(str(path))
    assert isinstance(back, RFFModel)
    assert back.predict(X).tobytes() == model.predict(X).tobytes()


def test_linear_model_file_layout_matches_svm_rank(tmp_path):
    reference = require(EXAMPLE3 / "model_c3.dat").read_text().splitlines(keepends=True)
    model = read_model(str(EXAMPLE3 / "model_c3.dat"))
    assert isinstance(model, LinearModel)
    assert model.highest_feature_index == 6 and model.n_documents == 8
    assert model.feature_ids.tolist() == [1, 2, 3, 4, 5]
    mine = format_model(model).splitlines(keepends=True)
    assert mine[:11] == reference[:11]           # header, trailing spaces included
    assert mine[11].startswith("1 1:1.521512 2:-0.05749705") and mine[11].endswith(" #\n")
    words = [w.split(":") for w in mine[11].split()[1:-1]]
    ref_words = [w.split(":") for w in reference[11].split()[1:-1]]
    assert [(i, np.float32(v)) for i, v in words] == [(i, np.float32(v)) for i, v in ref_words]


def test_linear_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(0)
    w = (rng.normal(size=50) * 10.0 ** rng.integers(-20, 20, size=50)).astype(np.float32)
    w[::7] = 0.0
    model = LinearModel.from_dense(w, bias=0.25, n_documents=99,
                                   metadata={"version": "x", "algorithm": "prsvm", "C": 0.01})
    path = tmp_path / "m.dat"
    write_model(model, str(path))
    back = read_model(str(path))
    assert back.weights.tobytes() == model.weights.tobytes()
    assert back.feature_ids.tolist() == (np.flatnonzero(w) + 1).tolist()
    assert back.bias == 0.25 and back.highest_feature_index == 51 and back.n_documents == 99
    assert back.metadata == {"version": "x", "algorithm": "prsvm", "C": "0.01"}
    assert format_model(back) == path.read_text()
    assert "0 # kernel type\n" in path.read_text()


def test_empty_linear_model(tmp_path):
    model = LinearModel.from_dense(np.zeros(3))
    path = tmp_path / "m.dat"
    write_model(model, str(path))
    assert path.read_text().splitlines()[-1] == "1 #"
    assert read_model(str(path)).predict(sp.csr_matrix(np.ones((2, 3)))).tolist() == [0.0, 0.0]


def test_kernel_model_round_trip_and_svm_rank_kernel_file(tmp_path):
    ref = read_model(str(require(EXAMPLE3 / "model_c3_t2.dat")))
    assert isinstance(ref, KernelModel)
    assert ref.kernel.kernel == 2 and ref.kernel.gamma == 0.5
    path = tmp_path / "k.dat"
    write_model(ref, str(path))
    back = read_model(str(path))
    X = load_svmlight(str(EXAMPLE3 / "test.dat")).X
    np.testing.assert_array_equal(back.predict(X), ref.predict(X))


@pytest.mark.parametrize("mutate, line, message", [
    (lambda t: t.replace("V6.20", "V6.01", 1), 1, "V6.20"),
    (lambda t: t.replace("0 # kernel type", "x # kernel type"), 2, "kernel type"),
    (lambda t: t.replace("0 # kernel type", "9 # kernel type"), 2, "unknown kernel"),
    (lambda t: t.replace("6 # highest", "3 # highest"), 12, "highest feature index"),
    (lambda t: t.replace("2 # number of support", "3 # number of support"), 13, "support vector lines"),
    (lambda t: t.replace("1 1:1.521512", "1 1:abc"), 12, "1:abc"),
    (lambda t: "\n".join(t.split("\n")[:5]), 5, "header"),
])
def test_malformed_model_files_name_the_line(tmp_path, mutate, line, message):
    text = require(EXAMPLE3 / "model_c3.dat").read_text()
    path = tmp_path / "bad.dat"
    path.write_text(mutate(text))
    with pytest.raises(InputError) as info:
        read_model(str(path))
    assert info.value.line == line and message in str(info.value)


def test_failed_write_leaves_previous_file(tmp_path):
    path = tmp_path / "m.dat"
    path.write_text("previous")
    bad = LinearModel.from_dense(np.array([1.0, np.nan]))
    with pytest.raises(ValueError):
        write_model(bad, str(path))
    assert path.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["m.dat"]
    with pytest.raises(InputError, match="cannot write"):
        write_model(LinearModel.from_dense(np.ones(2)), str(tmp_path / "no" / "m.dat"))


def test_the_model_file_leaves_them_out_as_svm_rank_does(tmp_path):
    from rankfast import write_model
    X, y, qid = letor_like(2)
    path = tmp_path / "model"
    write_model(RankSVM(C=1.0).fit(X, y, qid).to_model(), str(path))
    support_vector = path.read_text().splitlines()[-1].split()
    features = [int(token.split(":")[0]) for token in support_vector[1:] if ":" in token
                and not token.startswith("qid")]
    assert features == [1, 3, 6]


@pytest.mark.parametrize("highest, message", [
    ("1_0", "highest feature index: expected an integer"),
    ("\u0663", "highest feature index: expected an integer"),
    (str(2**63), "highest feature index: expected an integer"),
    (str(2**40), "outside 1 .. 2147483648"),
    ("0", "outside 1 .. 2147483648"),
    ("-3", "outside 1 .. 2147483648"),
])
@pytest.mark.parametrize("kernel", ["0", "2"])
def test_model_header_numbers_use_the_data_grammar(tmp_path, highest, message, kernel):
    path = tmp_path / "m.dat"
    path.write_text(model_text(highest=highest, kernel=kernel), encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_model(str(path))
    assert info.value.line == 8 and message in str(info.value) and "m.dat:8" in str(info.value)


@pytest.mark.parametrize("line, text, message", [
    (4, "1_0 # kernel parameter -g \n", "kernel parameter -g: expected a number"),
    (11, "0x # threshold b\n", "threshold b: expected a number"),
    (11, "nan # threshold b\n", "threshold b is not finite"),
    (10, "2.0 # number of support vectors plus 1 \n", "expected an integer"),
])
def test_other_header_lines_are_strict_too(tmp_path, line, text, message):
    lines = model_text().splitlines(True)
    lines[line - 1] = text
    path = tmp_path / "m.dat"
    path.write_text("".join(lines))
    with pytest.raises(InputError) as info:
        read_model(str(path))
    assert info.value.line == line and message in str(info.value)


def test_kernel_models_with_support_vectors_beyond_the_highest_index_are_refused(tmp_path):
    path = tmp_path / "m.dat"
    path.write_text(model_text(highest="3", kernel="2", alpha_line="0.5 1:1 4:2 #"))
    with pytest.raises(InputError, match="feature 4 is above the highest feature index 3") as info:
        read_model(str(path))
    assert info.value.line == 12
    path.write_text(model_text(highest="4", kernel="2", alpha_line="0.5 1:1 4:2 #"))
    assert read_model(str(path)).support_vectors.shape == (1, 4)


def rff_text(highest=3, rows=("0.5 1 0.25 -1 #",), m=None):
    m = len(rows) if m is None else m
    return (f"rankfast RFF model V1\n2 # kernel type\n0.5 # kernel parameter -g\n"
            f"{highest} # highest feature index\n4 # number of training documents\n"
            f"{m} # number of random features m\n0 # threshold b, ...\n" + "\n".join(rows) + "\n")


@pytest.mark.parametrize("text, line, message", [
    (rff_text(highest=10**12), 4, "outside 1 .. 2147483648"),
    (rff_text(highest=2**64), 4, "expected an integer"),
    (rff_text(highest=2**31, m=2**40), 8, "random feature lines"),
    (rff_text(highest=2**31), 8, "2147483649"),
    (rff_text(rows=("0.5 1 1_0 -1 #",)), 8, "not a number: '1_0'"),
    (rff_text(rows=("0.5 1 \u0663 -1 #",)), 8, "not a number"),
    (rff_text(rows=("0.5 1 1e999 -1 #",)), 8, "not finite"),
])
def test_rff_model_numbers_and_sizes_are_checked_before_allocating(tmp_path, text, line, message):
    path = tmp_path / "rff.dat"
    path.write_text(text, encoding="utf-8")
    result = run_python(f"""
        from rankfast import read_model, InputError
        try:
            read_model({str(path)!r})
        except InputError as exc:
            print("InputError", exc.line, exc)
        """, limit_bytes=1 << 30)
    assert result.returncode == 0 and result.stderr == "", result.stderr[-2000:]
    assert result.stdout.startswith(f"InputError {line} ") and message in result.stdout


def test_a_model_header_line_is_quoted_in_part(tmp_path):
    path = tmp_path / "m.dat"
    path.write_text(model_text(highest="x" * 100000))
    with pytest.raises(InputError) as info:
        read_model(str(path))
    assert len(str(info.value)) < 400


def num32_58eeb25(v):
    """_num32 as 58eeb25 wrote it, one value at a time (the oracle)."""
    single = np.float32(v)
    short = str(single)
    if np.float32(float(short)) != single:
        short = repr(float(single))
    return short[:-2] if short.endswith(".0") else short


def test_model_numbers_are_formatted_in_bulk_exactly_as_before():
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**32, 60000, dtype=np.uint64).astype(np.uint32)
    random_bits = bits.view(np.float32)
    values = np.concatenate([
        random_bits[np.isfinite(random_bits)].astype(np.float64),
        rng.standard_normal(20000) * 10.0 ** rng.integers(-8, 8, 20000),
        2.0 ** np.arange(-149, 128), -(2.0 ** np.arange(-149, 128)),
        [0.0, -0.0, 1e-4, 1e6, 999999.94, 1e16, 1e-45, 3.4028235e38, 0.1, 1.0 / 3, 5e-324]])
    ids = np.arange(1, len(values) + 1)
    expected = " ".join(f"{i}:{num32_58eeb25(v)}" for i, v in zip(ids, values))
    assert model_module._pairs(ids, values) == expected


def test_writing_and_reading_a_linear_model_is_not_per_weight(tmp_path, monkeypatch):
    rng = np.random.default_rng(4)
    w = rng.standard_normal(50000)
    model = LinearModel(np.arange(1, 50001), w, 0.5, 50001)
    calls = {"num32": 0, "unique": 0}
    real_num32, real_unique = model_module._num32, np.unique

    def counting_num32(v):
        calls["num32"] += 1
        return real_num32(v)

    def counting_unique(*args, **kwargs):
        calls["unique"] += 1
        return real_unique(*args, **kwargs)
    monkeypatch.setattr(model_module, "_num32", counting_num32)
    monkeypatch.setattr(np, "unique", counting_unique)
    path = tmp_path / "m.dat"
    write_model(model, str(path))
    back = read_model(str(path))
    assert calls == {"num32": 0, "unique": 0}
    assert back.weights.tolist() == np.float32(w).astype(np.float64).tolist()
    assert path.read_text().split("\n")[11].startswith("1 1:" + num32_58eeb25(w[0]) + " 2:")


@pytest.mark.parametrize("kind", ["linear", "rbf", "rff"])
def test_every_truncation_of_a_model_file_is_refused(models, tmp_path, kind):
    content = models[kind].read_bytes()
    cut = tmp_path / "cut"
    accepted = []
    for size in range(len(content)):
        cut.write_bytes(content[:size])
        try:
            read_model(str(cut))
        except InputError as exc:
            assert exc.path == str(cut) and exc.line is not None, (size, str(exc))
        else:
            accepted.append(size)
    assert accepted == []
    cut.write_bytes(content)
    read_model(str(cut))


def test_a_support_vector_line_without_its_hash_is_refused(models, tmp_path):
    lines = models["rbf"].read_text().splitlines(True)
    lines[13] = lines[13].split("#")[0].rstrip() + "\n"       # the third support vector
    path = tmp_path / "m"
    path.write_text("".join(lines))
    with pytest.raises(InputError, match="does not end with '#'") as info:
        read_model(str(path))
    assert info.value.line == 14


def _normalising_models(tmp_path):
    """{kind: path} of models trained with normalize="query", as rankfast writes them."""
    from rankfast import KernelApproxLearner, KernelParams
    X, y, qid = ranking_data(queries=8, d=4)
    paths = {}
    for kind, learner in (
            ("linear", RankSVM(C=1.0, normalize="query")),
            ("nystrom", KernelApproxLearner(RankSVM(C=1.0), KernelParams(2, gamma=2.0),
                                            landmarks=6, normalize="query")),
            ("rff", KernelApproxLearner(RankSVM(C=1.0), KernelParams(2, gamma=2.0), "rff",
                                        landmarks=6, normalize="query"))):
        paths[kind] = tmp_path / f"{kind}.dat"
        write_model(learner.fit(X, y, qid).to_model(), str(paths[kind]))
    return paths


# (model, line edited, text there, its replacement, line the error names, what it says)
CONTRADICTIONS = {
    "trailer names another": ("linear", 12, "normalize=query", "normalize=log", 12,
                              "header names normalize=query \\(line 2\\), but the model's "
                              "metadata says normalize=log"),
    "header names another": ("linear", 2, "normalize=query:", "normalize=log:", 12,
                             "header names normalize=log \\(line 2\\), but the model's metadata "
                             "says normalize=query"),
    "header names none": ("linear", 2, "; rankfast normalize=query:", ":", 12,
                          "header names no normalisation \\(line 2\\), but the model's metadata "
                          "says normalize=query"),
    "trailer names none": ("nystrom", 12, " normalize=query", "", 12,
                           "header names normalize=query \\(line 2\\), but the model's metadata "
                           "says no normalize"),
    "trailer repeats a key": ("linear", 12, "normalize=query", "normalize=query normalize=log", 12,
                              "'normalize' is given twice, as normalize=query and normalize=log"),
    "trailer repeats C": ("nystrom", 12, "C=1", "C=1 C=2", 12, "'C' is given twice"),
    "header repeats a key": ("linear", 2, "normalize=query:", "normalize=query normalize=log:", 2,
                             "'normalize' is given twice"),
    "rff version V1": ("rff", 1, "model V2", "model V1", 8,
                       "'rankfast RFF model V1', for a model that does not normalise its "
                       "input, but the model's metadata says normalize=query"),
    "rff trailer names none": ("rff", 8, " normalize=query", "", 8,
                               "for a model that normalises its input, but the model's metadata "
                               "says no normalize"),
    "rff trailer repeats a key": ("rff", 8, "normalize=query", "normalize=query normalize=log",
                                  8, "'normalize' is given twice"),
}


def _edited(path, number, old, new, out):
    """``path``'s text with ``old`` replaced by ``new`` on 1-based line ``number``, written to ``out``."""
    lines = path.read_text().split("\n")
    assert old in lines[number - 1], (number, lines[number - 1])
    lines[number - 1] = lines[number - 1].replace(old, new)
    out.write_text("\n".join(lines))
    return out


@pytest.mark.parametrize("case", CONTRADICTIONS.values(), ids=CONTRADICTIONS.keys())
def test_a_model_whose_metadata_contradicts_itself_is_refused_at_its_line(tmp_path, case):
    """Issue 48 (4): header and trailer naming different normalisations, or a key given twice
    with different values, were applied silently (the trailer's last value won)."""
    kind, number, old, new, line, says = case
    models = _normalising_models(tmp_path)
    edited = _edited(models[kind], number, old, new, tmp_path / "edited.dat")
    with pytest.raises(InputError, match=says) as info:
        read_model(str(edited))
    assert (info.value.path, info.value.line) == (str(edited), line)


@pytest.mark.parametrize("kind, number", [("linear", 12), ("rff", 8)])
def test_a_metadata_key_repeated_with_the_same_value_is_taken_once(tmp_path, kind, number):
    models = _normalising_models(tmp_path)
    edited = _edited(models[kind], number, "normalize=query", "normalize=query normalize=query",
                     tmp_path / "edited.dat")
    model, again = read_model(str(models[kind])), read_model(str(edited))
    assert again.metadata == model.metadata and again.metadata["normalize"] == "query"
    X, _, qid = ranking_data(queries=3, d=4, seed=2)
    np.testing.assert_array_equal(again.predict(X, qid), model.predict(X, qid))


@pytest.mark.parametrize("case", ["trailer names another", "header names none",
                                  "trailer repeats a key", "rff version V1"])
def test_rank_classify_refuses_a_contradicting_model_and_writes_no_prediction(tmp_path, capsys,
                                                                             case):
    from rankfast import dump_svmlight
    from rankfast.cli.classify import classify_main
    kind, number, old, new, line, says = CONTRADICTIONS[case]
    models = _normalising_models(tmp_path)
    edited = _edited(models[kind], number, old, new, tmp_path / "edited.dat")
    X, y, qid = ranking_data(queries=3, d=4, seed=2)
    test = tmp_path / "test.dat"
    dump_svmlight(X, y, qid, str(test))
    predictions = tmp_path / "predictions"
    predictions.write_bytes(b"0.5\nkept as it was\n")
    capsys.readouterr()
    assert classify_main(["-v", "0", str(test), str(edited), str(predictions)]) == 1
    captured = capsys.readouterr()
    assert f"{edited}:{line}: " in captured.err and "Traceback" not in captured.err
    assert captured.err.count("\n") == 1 and captured.out == ""
    assert predictions.read_bytes() == b"0.5\nkept as it was\n"
    assert classify_main(["-v", "0", str(test), str(models[kind]), str(predictions)]) == 0
