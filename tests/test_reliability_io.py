"""Issue 11 (reading side): files that change while read, strict model numbers,
corrupt compressed input, empty inputs, long tokens, BOMs, progress, large models."""
import bz2
import gzip
import lzma
import os
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from shared_paths import REFERENCE, require

from rankfast import InputError, LinearModel, load_svmlight, read_model, write_model
from rankfast._kernels import _svmlight
from rankfast.cli import output as cli_output
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main
from rankfast.io import model_files as model_module
from rankfast.io._stream import ERR_FULL
from rankfast.io.model_files import format_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE3 = REFERENCE / "example3"


def run_python(code, limit_bytes=None):
    """Run code in a fresh interpreter (a crash is a failed test, not a dead pytest)."""
    def limit():
        if limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, preexec_fn=limit, timeout=120)


def data_lines(n, seed=0):
    rng = np.random.default_rng(seed)
    return "".join(f"{rng.integers(0, 3)} qid:{i // 10 + 1} 1:{rng.random():.6f} "
                   f"3:{rng.random():.6f} 7:{rng.random():.6f}\n" for i in range(n))


# ---------------------------------------------------------------- item 2

@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_file_growing_while_it_is_read_is_read_whole_not_overflowed(tmp_path, n_jobs):
    """One thread and several read a file once, their arrays growing as blocks need: lines
    appended while they read (a log still being written) are read too, into room made for
    them."""
    path = tmp_path / "growing.dat"
    path.write_text(data_lines(20))
    more = tmp_path / "more.dat"
    more.write_text(data_lines(5000, 1))
    result = run_python(f"""
        import numpy as np
        from rankfast.io import _threaded, svmlight as data
        blocks = data._blocks
        def blocks_then_grow(*args, **kwargs):
            for k, block in enumerate(blocks(*args, **kwargs)):
                if k == 0:
                    with open({str(path)!r}, "a") as log:
                        log.write(open({str(more)!r}).read())
                yield block
        data._blocks = _threaded._blocks = blocks_then_grow
        grown = data.load_svmlight({str(path)!r}, chunk_bytes=256, n_jobs={n_jobs})
        data._blocks = _threaded._blocks = blocks
        again = data.load_svmlight({str(path)!r}, n_jobs=1)
        same = all(np.array_equal(a, b) for a, b in [
            (grown.y, again.y), (grown.qid, again.qid), (grown.line, again.line),
            (grown.features.indptr, again.features.indptr),
            (grown.features.indices, again.features.indices),
            (grown.features.data, again.features.data)])
        print(grown.n_documents, same)
        """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["5020", "True"]


def test_the_parser_never_writes_past_the_arrays_it_is_given():
    text = data_lines(50).encode()
    guard = 12345.0
    labels = np.full(13, guard)
    values = np.full(23, guard)
    qids, lines = np.zeros(10, np.int64), np.zeros(10, np.int64)
    indptr, indices = np.zeros(11, np.int64), np.zeros(20, np.int32)
    rows, nnz, error, error_line, _, _, consumed, _ = _svmlight.parse_into(
        text, 0, 0, labels[:10], qids, lines, indptr, indices, values[:20])
    assert error == ERR_FULL and (rows, nnz) == (6, 18) and error_line == 6
    assert consumed == len("".join(data_lines(50).splitlines(True)[:6]))
    assert (labels[10:] == guard).all() and (values[20:] == guard).all()
    assert labels[:6].tolist() == load_svmlight_bytes(text).y[:6].tolist()


def load_svmlight_bytes(text):
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".dat", delete=False) as f:
        f.write(text)
    try:
        return load_svmlight(f.name)
    finally:
        os.unlink(f.name)


# ---------------------------------------------------------------- items 3 and 4

def model_text(highest="6", alpha_line="1 1:1.5 4:-2 #", kernel="0", n_sv="2"):
    return (f"SVM-light Version V6.20\n{kernel} # kernel type\n3 # kernel parameter -d \n"
            f"1 # kernel parameter -g \n1 # kernel parameter -s \n1 # kernel parameter -r \n"
            f"empty# kernel parameter -u \n{highest} # highest feature index \n"
            f"8 # number of training documents \n{n_sv} # number of support vectors plus 1 \n"
            f"0 # threshold b, each following line is a SV (starting with alpha*y)\n"
            f"{alpha_line}\n")


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


# ---------------------------------------------------------------- item 5

def corrupt(kind, payload):
    packed = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind](payload)
    broken = bytearray(packed)
    middle = len(broken) // 2
    broken[middle:middle + 16] = bytes(16 * [0x55])
    return bytes(broken)


def truncated(kind, payload):
    packed = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind](payload)
    return packed[:len(packed) * 2 // 3]


def bad_block(kind, payload):
    """A deflate block of the reserved type 3 (zlib.error: invalid block type)."""
    packed = bytearray(gzip.compress(payload))
    packed[10] = 0xff                     # first byte after gzip's 10-byte header
    return bytes(packed)


@pytest.mark.parametrize("kind, damage", [(kind, damage) for kind in ("gz", "bz2", "xz")
                                          for damage in (corrupt, truncated)]
                         + [("gz", bad_block)])
def test_corrupt_compressed_data_and_model_files_are_input_errors(tmp_path, kind, damage):
    payload = data_lines(3000).encode()
    path = tmp_path / f"data.{kind}"
    path.write_bytes(damage(kind, payload))
    with pytest.raises(InputError) as info:
        load_svmlight(str(path))
    assert info.value.path == str(path)
    text = (EXAMPLE3 / "model_c3.dat").read_text() if (EXAMPLE3 / "model_c3.dat").exists() \
        else model_text()
    model_path = tmp_path / f"model.{kind}"
    model_path.write_bytes(damage(kind, (text + "#" * 20000 + "\n").encode()))
    with pytest.raises(InputError) as info:
        read_model(str(model_path))
    assert info.value.path == str(model_path)


def test_rank_classify_names_a_corrupt_gzip_file(tmp_path, capsys):
    require(EXAMPLE3)
    path = tmp_path / "test.dat.gz"
    path.write_bytes(corrupt("gz", data_lines(3000).encode()))
    rc = classify_main([str(path), str(EXAMPLE3 / "model_c3.dat"), str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith(f"rank_classify: {path}: cannot read") and "Traceback" not in err
    assert err.count("\n") == 1 and not (tmp_path / "p").exists()


# ---------------------------------------------------------------- item 9

@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n  # and another\n"])
def test_empty_training_and_test_files_are_errors_naming_the_file(tmp_path, capsys, content):
    require(EXAMPLE3)
    path = tmp_path / "empty.dat"
    path.write_text(content)
    assert load_svmlight(str(path)).n_documents == 0         # the API still reads it
    rc = learn_main([str(path), str(tmp_path / "model")])
    err = capsys.readouterr().err
    assert rc == 1 and f"{path}: no documents" in err and not (tmp_path / "model").exists()
    rc = classify_main([str(path), str(EXAMPLE3 / "model_c3.dat"), str(tmp_path / "pred")])
    out, err = capsys.readouterr()
    assert rc == 1 and f"{path}: no documents" in err and "nan" not in out
    assert not (tmp_path / "pred").exists()


# ---------------------------------------------------------------- item 12 (parts)

def test_rank_classify_v0_prints_what_svm_rank_prints(tmp_path, capsys):
    reference = require(EXAMPLE3 / "classify_test_c3_v0.stdout").read_text()
    rc = classify_main(["-v", "0", str(EXAMPLE3 / "test.dat"), str(EXAMPLE3 / "model_c3.dat"),
                            str(tmp_path / "p")])
    assert rc == 0 and capsys.readouterr().out == reference      # svm_rank keeps the NOTE


@pytest.mark.parametrize("line", ["1 qid:1 1:{big}\n", "{big} qid:1 1:2\n", "1 qid:{big}\n",
                                  "1 qid:1 1:2 {big}\n"])
def test_error_messages_quote_at_most_60_characters_of_a_token(tmp_path, line):
    big = "7" * 50 + "x" * 200000
    path = tmp_path / "long.dat"
    path.write_text("1 qid:1 1:1\n" + line.format(big=big))
    with pytest.raises(InputError) as info:
        load_svmlight(str(path))
    message = str(info.value)
    assert info.value.line == 2 and len(message) < 400 and "... (" in message
    assert "bytes)" in message


def test_a_model_header_line_is_quoted_in_part(tmp_path):
    path = tmp_path / "m.dat"
    path.write_text(model_text(highest="x" * 100000))
    with pytest.raises(InputError) as info:
        read_model(str(path))
    assert len(str(info.value)) < 400


def test_a_utf8_bom_is_skipped_in_data_and_model_files(tmp_path):
    require(EXAMPLE3)
    plain = load_svmlight(str(EXAMPLE3 / "train.dat"))
    path = tmp_path / "bom.dat"
    path.write_bytes(b"\xef\xbb\xbf" + (EXAMPLE3 / "train.dat").read_bytes())
    for chunk in (7, 1 << 20):
        with_bom = load_svmlight(str(path), chunk_bytes=chunk)
        assert (with_bom.X != plain.X).nnz == 0 and with_bom.y.tolist() == plain.y.tolist()
        assert with_bom.line.tolist() == plain.line.tolist()
    gz = tmp_path / "bom.dat.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert load_svmlight(str(gz)).y.tolist() == plain.y.tolist()
    model_path = tmp_path / "bom_model.dat"
    model_path.write_bytes(b"\xef\xbb\xbf" + (EXAMPLE3 / "model_c3.dat").read_bytes())
    assert format_model(read_model(str(model_path))) == \
        format_model(read_model(str(EXAMPLE3 / "model_c3.dat")))


def test_out_of_address_space_is_not_reported_as_missing_kernels():
    result = run_python("import rankfast.io.svmlight", limit_bytes=50_000_000)
    assert "compiled kernels are missing" not in result.stderr
    result = run_python("import rankfast; print('imported')", limit_bytes=50_000_000)
    assert "compiled kernels are missing" not in result.stderr


# ---------------------------------------------------------------- item 14

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


# ---------------------------------------------------------------- also wanted: progress

def test_load_svmlight_reports_progress_in_bytes(tmp_path):
    path = tmp_path / "d.dat"
    path.write_text(data_lines(500))
    seen = []
    load_svmlight(str(path), chunk_bytes=1000, progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == path.stat().st_size and len(seen) > 5
    gz = tmp_path / "d.dat.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    seen = []
    load_svmlight(str(gz), chunk_bytes=1000, progress=seen.append)
    assert seen[-1] == path.stat().st_size


def test_read_progress_lines_are_rate_limited_and_quiet_for_small_files(capsys):
    now = [0.0]
    progress = cli_output.ReadProgress("rank_learn", "big.dat", 1, clock=lambda: now[0])
    for step in range(1, 41):            # 40 reads, 0.25 s apart
        now[0] = step * 0.25
        progress(step * 32_000_000)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 10 and err[0] == "rank_learn: reading big.dat: 128 MB"
    quick = cli_output.ReadProgress("rank_learn", "small.dat", 1, clock=lambda: 0.5)
    quick(1000)
    silent = cli_output.ReadProgress("rank_learn", "big.dat", 0, clock=lambda: now[0])
    now[0] += 5
    silent(10)
    assert capsys.readouterr().err == ""
