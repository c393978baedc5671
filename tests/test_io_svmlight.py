"""rankfast.io.svmlight: reading and writing svmlight files (float32 and float64 values, the
threaded reader, errors naming the line, progress, dump_svmlight's refusals)."""

import gzip
import math
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import svmlight_reference as ref
from data_makers import FUZZ, bits, data_lines, mutated
from hypothesis import example, given
from hypothesis import strategies as st
from program_runs import run_python
from shared_paths import REFERENCE, require

from rankfast import InputError, load_svmlight, read_model
from rankfast._kernels import _svmlight
from rankfast.io import _stream as reader
from rankfast.io._stream import ERR_FULL
from rankfast.io.model_files import format_model

ROOT = Path(__file__).resolve().parents[1]


FLT_MAX = float(np.finfo(np.float32).max)


ERR_VALUE_FLOAT32 = 14


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


EXAMPLE3 = REFERENCE / "example3"


def random_file(rng, n_lines):
    """Lines of every kind the parser meets, with values across (and beyond) float32's range."""
    kinds = [lambda: f"{rng.normal():.9g}",
             lambda: f"{rng.normal() * 10.0 ** rng.integers(-50, 38):.17g}",
             lambda: f"{rng.integers(-1000, 1000)}",
             lambda: f"{rng.random():.3f}e{rng.integers(-46, -30)}",      # subnormal or 0
             lambda: rng.choice(["0", "-0", "1e-50", "-1e-46", "3.4028235e38",
                                 "-3.4028235e+38", "1.401298464324817e-45", "0x1.fffffep127",
                                 "0x1p-149", "0x1p-150", "7e-46", "1.17549435e-38"]),
             lambda: "1" + "0" * int(rng.integers(15, 30)) + "." + "9" * int(rng.integers(1, 9))]
    lines = []
    for i in range(n_lines):
        r = rng.random()
        if r < 0.05:
            lines.append(rng.choice(["", "   ", "# a comment", "\t"]))
            continue
        features = sorted(set(rng.integers(1, 60, size=rng.integers(0, 12)).tolist()))
        tokens = [f"{rng.integers(0, 4)}", f"qid:{i // 7 + 1}"]
        tokens += [f"{'+' if rng.random() < 0.05 else ''}{j}:{kinds[rng.integers(len(kinds))]()}"
                   for j in features]
        tail = " # doc" if rng.random() < 0.2 else ""
        lines.append(" ".join(tokens) + tail)
    return ("\n".join(lines) + ("\n" if rng.random() < 0.5 else "")).encode()


def parse(buf, dtype, rows=None, entries=None, first_line=0):
    newlines, colons = _svmlight.count_bytes_of(buf)
    rows = newlines + 1 if rows is None else rows
    entries = max(colons, 1) if entries is None else entries
    y, qid, line = np.empty(rows), np.empty(rows, np.int64), np.empty(rows, np.int64)
    indptr, indices = np.zeros(rows + 1, np.int64), np.empty(entries, np.int32)
    values = np.empty(entries, dtype)
    result = _svmlight.parse_into(buf, 0, 0, y, qid, line, indptr, indices, values,
                                  None, None, first_line)
    n, nnz = result[:2]
    return result, (y[:n], qid[:n], line[:n], indptr[:n + 1], indices[:nnz]), values[:nnz]


@pytest.mark.parametrize("seed", range(4))
def test_float32_parse_is_the_float64_parse_rounded(seed):
    rng = np.random.default_rng(seed)
    buf = random_file(rng, 400)
    result64, arrays64, values64 = parse(buf, np.float64)
    result32, arrays32, values32 = parse(buf, np.float32)
    assert result64[2] == 0 and result32 == result64
    for a, b in zip(arrays32, arrays64):
        assert bits(a) == bits(b)
    assert values32.dtype == np.float32
    assert bits(values32) == bits(values64.astype(np.float32))
    assert np.isfinite(values32).all()
    rounded = values64.astype(np.float32)
    assert ((rounded == 0) & (values64 != 0)).any()                  # some underflow to 0,
    assert ((rounded != 0) & (np.abs(rounded) < 1.1754944e-38)).any()  # some to subnormals


@pytest.mark.parametrize("token, expected", [
    ("3.4028235e38", np.finfo(np.float32).max),                # how float32's largest prints
    ("-3.4028235677973362e38", -np.finfo(np.float32).max),     # just below the rounding midpoint
    ("1e-46", 0.0),                                            # underflows to zero
    ("-1e-46", -0.0),
    ("1e-40", np.float32(1e-40)),                              # subnormal
    ("0x1p-149", np.float32(2.0 ** -149)),
])
def test_float32_edges_are_accepted(token, expected):
    result, _, values = parse(f"1 qid:1 1:{token}\n".encode(), np.float32)
    assert result[2] == 0
    assert bits(values) == bits(np.array([expected], np.float32))


@pytest.mark.parametrize("token", [
    "3.4028235677973366e38",          # FLT_MAX + half an ulp: rounds to inf
    "-3.5e38", "1e39", "4e38", "1.7976931348623157e308", "0x1p128", "-0x1.ffffffp127",
    "340282356779733661637539395458142568448",           # the midpoint, long digits (strtod)
    "+1e300",
])
@pytest.mark.parametrize("plus", ["", "+"])            # '+3:': the parser's slow path
def test_a_value_beyond_float32_is_an_error_at_its_line(token, plus):
    body = (f"1 qid:1 1:0.5 2:1\n# comment\n\n0 qid:1 1:{FLT_MAX!r}\n"
            f"2 qid:2 1:1 {plus}3:{token} 4:1\n3 qid:2 1:1\n")
    buf = body.encode()
    result64, _, values64 = parse(buf, np.float64)
    assert result64[2] == 0 and len(values64) == 7
    result32, (y, *_), values32 = parse(buf, np.float32, first_line=11)
    rows, nnz, error, error_line, start, end, consumed, max_index = result32
    assert error == ERR_VALUE_FLOAT32
    assert max_index == 2                    # of the two rows kept, not of the bad line's 4:1
    assert error_line == 4                   # 0-based within buf: the file's fifth line
    assert buf[start:end] == f"{plus}3:{token}".encode()
    assert rows == 2 and y.tolist() == [1.0, 0.0]        # nnz counts the bad line's 1:1 too
    assert bits(values32[:3]) == bits(np.array([0.5, 1, FLT_MAX], np.float32))
    message = reader.reason(error, buf[start:end])
    assert f"{plus}3:{token}" in message and "single precision" in message
    assert reader.reason(error, buf[start:end], "alpha") == message


def test_the_float32_parser_never_writes_past_the_arrays():
    buf = "".join(f"1 qid:{i} 1:{i}.5 2:-{i} 3:1e-3\n" for i in range(50)).encode()
    guard = np.float32(12345.0)
    values = np.full(23, guard, np.float32)
    y, qid, line = np.empty(10), np.empty(10, np.int64), np.empty(10, np.int64)
    indptr, indices = np.zeros(11, np.int64), np.zeros(20, np.int32)
    rows, nnz, error, error_line, _, _, consumed, _ = _svmlight.parse_into(
        buf, 0, 0, y, qid, line, indptr, indices, values[:20])
    assert error == reader.ERR_FULL and (rows, nnz) == (6, 18) and error_line == 6
    assert (values[20:] == guard).all()
    assert bits(values[:18]) == bits(np.array([[i + 0.5, -float(i), 1e-3] for i in range(6)],
                                              np.float32).ravel())


def test_parse_into_takes_array_floats_without_importing_numpy():
    code = """
        import array, sys
        from rankfast._kernels import _svmlight
        arrays = [array.array(t, bytes(8 * 4)) for t in "dqqq"]
        indptr = array.array("q", bytes(8 * 5))
        indices, values = array.array("i", bytes(4 * 4)), array.array("f", bytes(4 * 4))
        y, qid, line = arrays[:3]
        r = _svmlight.parse_into(b"1 qid:3 1:0.1 2:5e-46\\n2 qid:3 4:4e38\\n", 0, 0, y, qid, line,
                                 indptr, indices, values)
        print(r[:4], values[0] == array.array("f", [0.1])[0], values[1], "numpy" in sys.modules)
        """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["(1,", "2,", "14,", "1)", "True", "0.0", "False"]


def test_parse_into_refuses_other_value_types():
    buf = b"1 qid:1 1:1\n"
    for values in (np.empty(4, np.float16), np.empty(4, np.int32), np.empty(8, np.float64)[::2],
                   np.empty(4, ">f4")):
        with pytest.raises(ValueError):
            _svmlight.parse_into(buf, 0, 0, np.empty(2), np.empty(2, np.int64),
                                 np.empty(2, np.int64), np.zeros(3, np.int64),
                                 np.empty(4, np.int32), values)


@pytest.mark.usefixtures("every_block_counts")
def test_the_parallel_reader_takes_float32_arrays(tmp_path):
    """load_svmlight on threads (_read_in_threads: _parse_at, _Arrays.place) with float32 values:
    the same rows, values rounded, and the beyond-float32 error at its file line (first in
    file order), as one thread reads them."""
    rng = np.random.default_rng(9)
    text = random_file(rng, 3000)
    path = tmp_path / "f32.dat"
    path.write_bytes(text)

    def read(dtype, n_jobs):
        return load_svmlight(str(path), n_jobs=n_jobs, dtype=dtype, chunk_bytes=len(text) // 7)

    a64, a32, one32 = read(np.float64, 2), read(np.float32, 2), read(np.float32, 1)
    assert a32.n_documents == a64.n_documents > 2000 and a32.X.nnz == a64.X.nnz
    assert bits(a32.features.indptr) == bits(a64.features.indptr) == bits(one32.features.indptr)
    assert bits(a32.line) == bits(a64.line) == bits(one32.line)
    assert bits(a32.features.data) == bits(a64.features.data.astype(np.float32))
    assert bits(a32.features.data) == bits(one32.features.data)

    lines = text.split(b"\n")
    bad = [k for k in (2100, 900) if lines[k].strip() and not lines[k].startswith(b"#")]
    for k in bad:
        lines[k] = lines[k].split(b"#")[0].rstrip() + b" 99:1e39"
    text = b"\n".join(lines)
    path.write_bytes(text)
    for n_jobs in (1, 2):
        with pytest.raises(InputError) as caught:
            read(np.float32, n_jobs)
        assert caught.value.line == min(bad) + 1 and "99:1e39" in str(caught.value)


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


def test_threads_are_capped_at_the_cores(tmp_path, started_threads):
    import numpy as np

    import rankfast
    from rankfast._kernels import threads as _threads
    cores = _threads.available_cores()
    assert _threads.resolve_n_jobs(10**6) == cores == _threads.resolve_n_jobs(10**6, 10**12)
    started = started_threads
    path = tmp_path / "d.dat"
    path.write_bytes((EXAMPLES / "train.dat").read_bytes() * 4)
    many = rankfast.load_svmlight(str(path), n_jobs=10**6, chunk_bytes=4096)
    one = rankfast.load_svmlight(str(path), n_jobs=1)
    assert 1 < len(started) <= cores or cores == 1 and not started
    np.testing.assert_array_equal(many.X.toarray(), one.X.toarray())


def test_dump_svmlight_warns_of_a_file_svm_rank_would_refuse(tmp_path):
    from rankfast import dump_svmlight, load_svmlight
    path = tmp_path / "out.dat"
    with pytest.warns(UserWarning, match="svm_rank_learn refuses it"):
        dump_svmlight(np.eye(3), [1, 0, 1], [2, 1, 1], str(path))
    assert load_svmlight(str(path)).qid.tolist() == [2, 1, 1]      # rankfast reads it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dump_svmlight(np.eye(3), [1, 0, 1], [1, 1, 2], str(path))


@pytest.mark.parametrize("qid, message", [
    (np.array(["a", "b"]), "number the queries first"),
    (np.array([0.5, 1.0]), "number the queries first"),
    (np.array([-1, 2]), "N non-negative"),
])
def test_dump_svmlight_refuses_query_ids_it_cannot_write(qid, message):
    """String qids ended in numpy's "invalid literal for int()"; 0.5 became 0 silently."""
    import io

    from rankfast import dump_svmlight
    with pytest.raises(ValueError, match=message):
        dump_svmlight(np.eye(2), [1, 0], qid, stream=io.StringIO())


@pytest.mark.parametrize("n_jobs", [1, 2, 3])
def test_costs_are_read_on_request_in_one_thread_or_several(tmp_path, n_jobs, every_block_counts,
                                                            started_threads):
    """cost: per line (NaN without one), the same in blocks on any number of threads, with
    blank and comment lines between them (rows placed down); without costs=True, None."""
    rng = np.random.default_rng(n_jobs)
    lines, costs = [], []
    for i in range(3000):
        if i % 97 == 0:
            lines.append("# a comment line\n\n")
        cost = float(rng.uniform(0.1, 9.0)) if rng.random() < 0.3 else None
        costs.append(np.nan if cost is None else cost)
        lines.append(f"{i % 3} qid:{i // 7 + 1}" + (f" cost:{cost!r}" if cost else "")
                     + f" 1:{float(rng.random())!r}\n")
    path = tmp_path / "clicks.dat"
    path.write_text("".join(lines))
    data = load_svmlight(str(path), costs=True, n_jobs=n_jobs, chunk_bytes=4096)
    np.testing.assert_array_equal(data.cost, costs)
    assert (len(started_threads) > 0) == (n_jobs > 1)
    assert load_svmlight(str(path), n_jobs=n_jobs, chunk_bytes=4096).cost is None
    assert np.array_equal(data.subset([2, 0]).cost, np.array(costs)[[2, 0]], equal_nan=True)
