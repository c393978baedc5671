"""Fuzzing the readers: mutated data and model files either parse exactly as a slow
independent parser says, or fail with one InputError naming the right line."""
import math

import numpy as np
import pytest
import svmlight_reference as ref
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rankfast import InputError, load_svmlight, read_model

VALID = [
    b"2 qid:1 1:0.5 3:-1.25e-3 10:7 # doc a",
    b"0 qid:1 2:1 3:0x1.8p1 4:.5",
    b"1 qid:2 sid:3 cost:0.5 1:1e2 2:-0",
    b"-1.5 qid:2 5:3",
    b"3\tqid:3\t1:2\t2:4\r",
    b"  # an indented comment",
    b"",
    b"1 qid:3 7:1",
]
ALPHABET = b"0123456789:.+-eExpq id#\t\r\nna_\xef\x00"
FUZZ = settings(derandomize=True, max_examples=100, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@st.composite
def mutated(draw, lines, newlines=True):
    text = bytearray(b"\n".join(draw(st.lists(st.sampled_from(lines), min_size=1,
                                                max_size=8 if newlines else 1))))
    for _ in range(draw(st.integers(0, 4))):
        position = draw(st.integers(0, len(text)))
        byte = draw(st.sampled_from(ALPHABET if newlines else ALPHABET.replace(b"\n", b"")))
        action = draw(st.sampled_from(["insert", "replace", "delete"]))
        if action == "insert" or not text or position == len(text):
            text[position:position] = bytes([byte])
        elif action == "replace":
            text[position] = byte
        else:
            del text[position]
    return bytes(text)


def same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.usefixtures("every_block_counts")
@FUZZ
@given(text=mutated(VALID), chunk=st.sampled_from([1 << 20, 16]))
@example(text=b"\xef\xbb\xbf1 qid:1 1:1\n2 qid:1 2:1_0", chunk=16)
def test_mutated_data_files_parse_as_the_reference_says(tmp_path, text, chunk):
    path = tmp_path / "fuzz.dat"
    path.write_bytes(text)
    try:
        expected = ref.parse(text)
    except ref.Bad as bad:
        with pytest.raises(InputError) as info:
            load_svmlight(str(path), chunk_bytes=chunk)
        assert info.value.line == bad.line and info.value.path == str(path)
        return
    ds = load_svmlight(str(path), chunk_bytes=chunk)
    assert ds.y.tolist() == [row[0] for row in expected]
    assert ds.qid.tolist() == [row[1] for row in expected]
    for i, (_, _, features) in enumerate(expected):
        lo, hi = ds.X.indptr[i], ds.X.indptr[i + 1]
        assert (ds.X.indices[lo:hi] + 1).tolist() == [f for f, _ in features]
        assert all(same(a, b) for a, (_, b) in zip(ds.X.data[lo:hi].tolist(), features))


HEADER = [b"SVM-light Version V6.20", b"0 # kernel type", b"3 # kernel parameter -d ",
          b"1 # kernel parameter -g ", b"1 # kernel parameter -s ", b"1 # kernel parameter -r ",
          b"empty# kernel parameter -u ", b"11 # highest feature index ",
          b"8 # number of training documents ", b"2 # number of support vectors plus 1 ",
          b"0.25 # threshold b, each following line is a SV (starting with alpha*y)"]
SV = b"1 1:1.5 3:-0.25 10:2e-3 #"


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
