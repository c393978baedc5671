"""The SVMlight reader: what it accepts, what it rejects and where, and exact round trips."""
import bz2
import gzip
import io
import itertools
import lzma
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from rankfast import InputError, dump_svmlight, load_svmlight


def write(tmp_path, text, name="data.dat", mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, newline="")
    return str(path)


def test_basic_line_grammar(tmp_path):
    path = write(tmp_path, "# a comment\n"
                           "3 qid:1 1:1 2:0.5 # doc a\n"
                           "\n"
                           "   \t \n"
                           "  # indented comment\n"
                           "2\tqid:1\t2:-1e-2  7:0x10\r\n"
                           "1 sid:4 cost:2.5 3:.5 qid:2\n"
                           "0 4:+2")
    data = load_svmlight(path, comments=True)
    assert data.X.shape == (4, 7)
    np.testing.assert_array_equal(data.y, [3, 2, 1, 0])
    np.testing.assert_array_equal(data.qid, [1, 1, 2, 0])
    np.testing.assert_array_equal(data.line, [2, 6, 7, 8])
    assert data.comments == [" doc a", "", "", ""]
    dense = data.X.toarray()
    assert dense[0, :2].tolist() == [1.0, 0.5]
    assert dense[1, 1] == -0.01 and dense[1, 6] == 16.0
    assert dense[2, 2] == 0.5 and dense[3, 3] == 2.0


def test_empty_and_comment_only_files(tmp_path):
    for text in ("", "\n\n", "# only\n#comments\n"):
        data = load_svmlight(write(tmp_path, text))
        assert data.X.shape == (0, 0) and len(data.y) == 0


@pytest.mark.parametrize("line, token, reason", [
    ("abc qid:1 1:1", "abc", "target"),
    ("qid:1 1:1", "qid:1", "target"),
    ("nan qid:1 1:1", "nan", "target"),
    ("1 qid:1 1:nan", "1:nan", "not finite"),
    ("1 qid:1 1:inf", "1:inf", "not finite"),
    ("1 qid:1 1:1e999", "1:1e999", "not finite"),
    ("1 qid:1 0:1", "0:1", "outside"),
    ("1 qid:1 -1:1", "-1:1", "outside"),
    ("1 qid:1 2147483648:1", "2147483648:1", "outside"),
    ("1 qid:1 2:1 1:1", "1:1", "increase"),
    ("1 qid:1 1:1 1:2", "1:2", "increase"),
    ("1 qid:1 1:", "1:", "not a number"),
    ("1 qid:1 1:abc", "1:abc", "not a number"),
    ("1 qid:1 1:0.5abc", "1:0.5abc", "not a number"),
    ("1 qid:1 1 : 2", "1", "index:value"),
    ("1 qid:-1 1:1", "qid:-1", "qid"),
    ("1 qid:1.5 1:1", "qid:1.5", "qid"),
    ("1 qid: 1:1", "qid:", "qid"),
    ("1 qid:1 qid:2 1:1", "qid:2", "second qid"),
    ("1 qid:1 x:1", "x:1", "not an integer"),
    ("1 qid:1 1e2:1", "1e2:1", "not an integer"),
])
def test_rejected_lines_name_file_line_and_token(tmp_path, line, token, reason):
    path = write(tmp_path, "# header\n\n2 qid:1 1:1\n" + line + "\n3 qid:1 1:2\n")
    with pytest.raises(InputError) as info:
        load_svmlight(path)
    err = info.value
    assert err.path == path and err.line == 4
    assert repr(token) in str(err) and reason in str(err)
    assert str(err).startswith(f"{path}:4: ")


@pytest.mark.parametrize("text, line", [
    ("1 qid:1 1:1 # doc a\r0 qid:1 1:0 # doc b\r2 qid:2 1:1 # c\r", 1),   # LETOR-like
    ("1 qid:1 1:1 2:0\r0 qid:1 1:0 2:1\r", 1),                            # no comments
    ("# header\r1 qid:1 1:1\r0 qid:1 1:2\r", 1),                          # a comment line first
    ("2 qid:1 1:1\n1 qid:1 1:3 # x\r -1 qid:1 1:2\r", 2),                  # mixed line ends
])
@pytest.mark.usefixtures("every_block_counts")
def test_lines_ended_by_a_carriage_return_alone_are_refused(tmp_path, text, line):
    """Such a file (old Mac OS) is one line whose first comment swallowed the rest: it was
    read as one document.  svm_rank refuses it too ('Parsing error in line 1!')."""
    for chunk in (5, 1 << 20):
        with pytest.raises(InputError, match="end in CR alone") as info:
            load_svmlight(write(tmp_path, text), chunk_bytes=chunk)
        assert info.value.line == line


def test_a_carriage_return_inside_a_comment_or_between_tokens_is_kept_as_svm_rank_keeps_it(
        tmp_path):
    data = load_svmlight(write(tmp_path, "1 qid:1 1:1 # title\rline two\r\n"
                                         "0 qid:1 1:0\r2:1 +3:1\r\n"), comments=True)
    assert data.X.toarray().tolist() == [[1, 0, 0], [0, 1, 1]]
    assert data.comments == [" title\rline two", ""]


def test_error_line_numbers_across_chunk_boundaries(tmp_path):
    lines = [f"{k % 3} qid:{k // 10} 1:{k} 2:0.25 # doc {k}\n" for k in range(500)]
    lines[377] = "1 qid:37 1:1 1:2\n"
    path = write(tmp_path, "".join(lines))
    for chunk in (7, 64, 1000, 1 << 20):
        with pytest.raises(InputError) as info:
            load_svmlight(path, chunk_bytes=chunk)
        assert info.value.line == 378


def test_chunked_reading_equals_whole_reading(tmp_path):
    rng = np.random.default_rng(0)
    text = "".join(f"{rng.integers(0, 5)} qid:{k // 7} " +
                   " ".join(f"{j}:{rng.normal():.6g}" for j in sorted(rng.choice(40, 5, replace=False) + 1)) +
                   (" # c%d" % k if k % 3 else "") + ("\r\n" if k % 5 == 0 else "\n")
                   for k in range(300))
    path = write(tmp_path, text + "4 qid:99 3:1")       # last line without newline
    whole = load_svmlight(path, comments=True)
    assert whole.n_documents == 301
    for chunk in (1, 13, 100, 4096):
        part = load_svmlight(path, comments=True, chunk_bytes=chunk)
        assert (part.X != whole.X).nnz == 0
        np.testing.assert_array_equal(part.y, whole.y)
        np.testing.assert_array_equal(part.qid, whole.qid)
        np.testing.assert_array_equal(part.line, whole.line)
        assert part.comments == whole.comments


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.usefixtures("every_block_counts")
def test_the_width_is_the_highest_index_on_any_line_chunk_and_thread(tmp_path, seed):
    """The parser reports each block's highest index; the Dataset's width is the file's."""
    rng = np.random.default_rng(seed)
    top = int(rng.choice([1, 3, 50, 100_000]))
    lines = []
    for k in range(int(rng.integers(1, 400))):
        kind = rng.integers(0, 10)
        if kind == 0:
            lines.append("# a comment 7:9\n" if k % 2 else "\n")
            continue
        indices = np.sort(rng.choice(top, int(rng.integers(0, min(top, 6) + 1)), replace=False)) + 1
        features = " ".join(f"{j}:{rng.normal():.3g}" for j in indices)
        lines.append(f"{rng.integers(0, 3)} qid:{k // 9} {features}"
                     + (" # 12345:6" if kind == 1 else "") + "\n")
    text = "".join(lines)
    highest = max((int(token.split(":")[0]) for line in lines if not line.startswith("#")
                    for token in line.split("#")[0].split()[2:]), default=0)
    path = write(tmp_path, text)
    for n_jobs, chunk in [(1, 1 << 20), (1, 37), (2, 4096), (3, 512)]:
        data = load_svmlight(path, n_jobs=n_jobs, chunk_bytes=chunk)
        assert data.n_features == highest
        assert load_svmlight(path, n_jobs=n_jobs, chunk_bytes=chunk,
                             n_features=highest + 5).n_features == highest + 5


def test_counting_lines_and_feature_colons_matches_a_byte_by_byte_count():
    """count_bytes_of (32 bytes at a time with AVX2) against a plain count, cut anywhere."""
    from rankfast._kernels import _svmlight
    rng = np.random.default_rng(3)
    alphabet = np.frombuffer(b"\n:0123456789 q#/\xff\x00", dtype=np.uint8)

    def by_byte(buf, prev):
        before = bytes([prev]) + buf[:-1]
        return (buf.count(b"\n"),
                sum(c == 58 and 48 <= b <= 57 for c, b in zip(buf, before)))

    for n in [0, 1, 2, 31, 32, 33, 34, 64, 65, 8160, 8161, 8162, 8193, 70_000]:
        buf = rng.choice(alphabet, n).tobytes()
        for prev in (0, 48, 57, 58):
            assert _svmlight.count_bytes_of(buf, prev) == by_byte(buf, prev)
        cut = n // 3
        head, tail = _svmlight.count_bytes_of(buf[:cut]), _svmlight.count_bytes_of(
            buf[cut:], buf[cut - 1] if cut else 0)
        assert (head[0] + tail[0], head[1] + tail[1]) == by_byte(buf, 0)


def test_a_long_number_ending_a_block_is_read_within_the_block():
    """Over 19 digits are read again (long_decimal): up to the block's end, not into the
    bytes after it (a block is a view of a buffer that holds older data beyond it)."""
    from rankfast._kernels import _svmlight
    line = b"1 1:1234567890123456789012345"                 # the file's last line, no newline
    for dtype in (np.float64, np.float32):
        y, qid, lines = np.empty(1), np.empty(1, np.int64), np.empty(1, np.int64)
        indptr, indices, values = np.zeros(2, np.int64), np.empty(1, np.int32), np.empty(1, dtype)
        result = _svmlight.parse_into(memoryview(line + b"999")[:len(line)], 0, 0, y, qid, lines,
                                      indptr, indices, values)
        assert result[:3] == (1, 1, 0)
        assert values[0] == dtype(1234567890123456789012345.0)


QID_LINES = ["1 qid:0 1:1", "1 qid:007 2:1", "1 qid:123456789012345678 1:1",
             "1 qid:9223372036854775807 1:1", "1 qid:9223372036854775808 1:1",
             "1 qid:99999999999999999999 1:1", "1 qid:12x 1:1", "1 qid:1:2 1:1", "1 qid: 1:1",
             "1 qid:+3 1:1", "1 qid:-3 1:1", "1 qid:4#c", "1 qid:5\t1:1", "1 qid:6\r",
             "1 qid:7 qid:8 1:1", "1  qid:9 1:1", "1\tqid:10 1:1", "1 qid:11", "1 qid:",
             "1 qidx:1 1:1", "1 1:1 qid:12", "1 qid:13 1:1 qid:14", "1 sid:2 qid:15 1:1"]


@pytest.mark.parametrize("line", QID_LINES)
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.usefixtures("every_block_counts")
def test_qids_read_as_the_reference_reads_them(tmp_path, line, last):
    """' qid:digits' after the target is read on a shorter path than other tokens:
    the same qid, or the same error line, for any qid, neighbour and block end."""
    import svmlight_reference as ref
    text = ("2 qid:1 1:1\n" + line + ("" if last else "\n3 qid:1 1:2\n")).encode()
    path = write(tmp_path, text, mode="wb")
    try:
        expected = ref.parse(text)
    except ref.Bad as bad:
        for chunk in (1 << 20, 5):
            with pytest.raises(InputError) as info:
                load_svmlight(path, chunk_bytes=chunk)
            assert info.value.line == bad.line == 2
        return
    for chunk in (1 << 20, 5):
        data = load_svmlight(path, chunk_bytes=chunk)
        assert data.qid.tolist() == [row[1] for row in expected]
        assert data.X.indices.tolist() == [f - 1 for row in expected for f, _ in row[2]]


@pytest.mark.usefixtures("every_block_counts")
def test_threaded_blocks_read_on_when_a_spare_buffer_just_holds_the_unfinished_line(tmp_path):
    """A spare buffer as long as the line left over has no room to read into: a read of
    nothing there meant the end of the file, and the rest of the file was lost."""
    from rankfast.io._stream import _blocks
    data = b"1 2:345\n1 1:2345 2:1\n3 1:1\n"
    blocks = _blocks(io.BytesIO(data), "x", bytearray(16), spare=[bytearray(8)])
    assert b"".join(bytes(block) for block in blocks) == data
    path = write(tmp_path, "3 \n0 1:0 2:8 3:6 4:3\n2 1:5\n8 1:3 2:2\n")
    one = load_svmlight(path, n_jobs=1)
    for chunk in (6, 8, 12):
        two = load_svmlight(path, n_jobs=2, chunk_bytes=chunk)
        assert (two.X != one.X).nnz == 0 and two.X.shape == one.X.shape == (4, 4)


@pytest.mark.parametrize("data", [b"", b"\xef", b"\xef\xbb", b"\xef\xbb\xbf1 1:2\n"])
def test_the_byte_order_mark_is_looked_for_in_bytes_read_only(data):
    """The buffer is not initialised: bytes past what was read may hold a BOM's."""
    from rankfast.io._stream import _blocks
    buffer = bytearray(b"\xef\xbb\xbf" * 6)
    got = b"".join(bytes(block) for block in _blocks(io.BytesIO(data), "x", buffer))
    assert got == data.removeprefix(b"\xef\xbb\xbf")


def test_one_pass_reading_grows_its_arrays_to_what_the_file_holds(tmp_path):
    """One thread and two read a file once: their arrays are sized from the first block
    and grow when later lines need more (here ten times as many features a line, and
    lines of a tenth the length); plain and compressed files give the dataset that
    exactly sized arrays (the whole file as one block) give, and the arrays end fitted
    to it."""
    rng = np.random.default_rng(4)
    sparse = [f"{k % 3} qid:{k // 10} 7:{rng.random():.6f} # a longer comment {k:06d}\n"
              for k in range(400)]
    dense = [f"{k % 2} qid:{k // 10} " + " ".join(f"{j}:{rng.random():.3f}" for j in range(1, 11))
             + "\n" for k in range(400, 900)]
    short = [f"{k % 2} 1:{k % 10}\n" for k in range(900, 5000)]
    text = "".join(sparse + dense + short)
    path = write(tmp_path, text)
    with gzip.open(tmp_path / "data.dat.gz", "wt") as out:
        out.write(text)
    exact = load_svmlight(path, n_jobs=1, chunk_bytes=len(text) + 1)
    for source, n_jobs in itertools.product((path, str(tmp_path / "data.dat.gz")), (1, 2)):
        for chunk in (512, 4096, 1 << 20):
            for comments in (False, True):
                one = load_svmlight(source, n_jobs=n_jobs, chunk_bytes=chunk, comments=comments)
                assert one.n_documents == 5000 and one.X.nnz == exact.X.nnz
                for a, b in [(one.y, exact.y), (one.qid, exact.qid), (one.line, exact.line),
                             (one.features.indptr, exact.features.indptr),
                             (one.features.indices, exact.features.indices),
                             (one.features.data, exact.features.data)]:
                    np.testing.assert_array_equal(a, b)
                for a in (one.y, one.qid, one.line, one.features.indices, one.features.data):
                    assert len(a.base) == len(a)        # the buffer fitted: nothing left over
                if comments:
                    assert one.comments[3] == " a longer comment 000003" and one.comments[-1] == ""


def test_one_pass_reading_falls_back_to_what_a_block_needs_when_a_guess_is_refused(
        tmp_path, monkeypatch):
    """Room guessed for the rest of a file that the system refuses (MemoryError) is not
    an error: the arrays grow by what each block needs instead, to the same dataset, on
    one thread and on two."""
    from rankfast._kernels import _svmlight
    from rankfast.io import svmlight as data
    rng = np.random.default_rng(8)
    text = "".join(f"{k % 3} qid:{k // 10} " + " ".join(f"{j}:{rng.random():.4f}" for j in
                                                        range(1, 1 + k % 7)) + "\n"
                   for k in range(3000))
    path = write(tmp_path, text)
    exact = load_svmlight(path, n_jobs=1, chunk_bytes=len(text) + 1)
    limit = max(exact.n_documents + 1, exact.X.nnz)
    resize, refused = _svmlight.resize_array, []

    def refusing(array, n):
        if n > limit:
            refused.append(n)
            raise MemoryError
        resize(array, n)

    monkeypatch.setattr(data._svmlight, "resize_array", refusing)
    for n_jobs in (1, 2):
        refused.clear()
        one = load_svmlight(path, n_jobs=n_jobs, chunk_bytes=1024)
        assert refused
        for a, b in [(one.y, exact.y), (one.qid, exact.qid), (one.line, exact.line),
                     (one.features.indptr, exact.features.indptr),
                     (one.features.indices, exact.features.indices),
                     (one.features.data, exact.features.data)]:
            np.testing.assert_array_equal(a, b)


def test_compressed_files_and_stdin(tmp_path, monkeypatch):
    text = "2 qid:1 1:1 3:2\n1 qid:1 2:1\n0 qid:2 1:0.5\n"
    plain = load_svmlight(write(tmp_path, text))
    for name, compress in (("d.gz", gzip.compress), ("d.bz2", bz2.compress), ("d.xz", lzma.compress),
                           ("misleading.txt", gzip.compress)):
        data = load_svmlight(write(tmp_path, compress(text.encode()), name, "wb"))
        assert (data.X != plain.X).nnz == 0 and data.y.tolist() == plain.y.tolist()
    for payload in (text.encode(), gzip.compress(text.encode())):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(payload))))
        data = load_svmlight("-")
        assert data.qid.tolist() == [1, 1, 2] and (data.X != plain.X).nnz == 0


def test_gzip_is_read_as_the_gzip_module_reads_it(tmp_path):
    """rankfast.io.files.GzipMembers (zlib a megabyte at a time) gives the gzip module's bytes:
    concatenated members, an empty member, NUL padding after a member, any read size; and
    its errors: a stream cut short (EOFError), a wrong CRC (zlib.error), bytes after a
    member that are not one (OSError), each an InputError naming the file when read."""
    import zlib

    from rankfast.io.files import GzipMembers, open_binary
    rng = np.random.default_rng(3)
    parts = [rng.integers(0, 256, size).astype(np.uint8).tobytes() for size in (0, 1, 70_000)]
    parts.append("".join(f"{k % 3} qid:{k} 1:{k}\n" for k in range(300_000)).encode())  # > 1 MB packed
    packed = b"".join(gzip.compress(p) for p in parts) + b"\0" * 5000 + gzip.compress(parts[1])
    path = write(tmp_path, packed, "m.gz", "wb")
    expected = gzip.decompress(packed)
    with open_binary(path) as stream:
        assert stream.read() == expected
    small = b"".join(gzip.compress(p) for p in parts[:3]) + b"\0" * 3 + gzip.compress(parts[1])
    for size, stream in ((1, small), (7, small), (4096, packed), (1 << 22, packed)):
        expected = gzip.decompress(stream)
        raw = GzipMembers(io.BytesIO(stream))
        pieces, view = [], bytearray(size)
        while True:
            got = raw.readinto(view)
            if not got:
                break
            pieces.append(bytes(view[:got]))
        assert b"".join(pieces) == expected
    whole = gzip.compress(parts[3])
    crc = bytearray(whole)
    crc[-8] ^= 1
    for damaged, error in ((whole[:len(whole) // 2], EOFError), (bytes(crc), zlib.error),
                           (whole + b"\0\0garbage", OSError), (whole[:5], EOFError)):
        with pytest.raises(error):
            GzipMembers(io.BytesIO(damaged)).read()
        with pytest.raises(InputError, match="cannot read"):
            load_svmlight(write(tmp_path, damaged, "bad.gz", "wb"))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match="No such file"):
        load_svmlight(str(tmp_path / "absent.dat"))
    with pytest.raises(InputError, match="directory"):
        load_svmlight(str(tmp_path))


def test_huge_index_allocates_nothing_per_index(tmp_path):
    path = write(tmp_path, "1 qid:1 1:1 2147483647:0.5\n0 qid:1 3:1\n")
    data = load_svmlight(path)
    assert data.X.shape == (2, 2147483647)
    assert data.X.indices.tolist() == [0, 2147483646, 2]
    assert data.X.data.nbytes + data.X.indices.nbytes < 100


def test_wide_line(tmp_path):
    line = "1 qid:1 " + " ".join(f"{j}:{j % 7 + 1}" for j in range(1, 200001)) + "\n"
    data = load_svmlight(write(tmp_path, line + "0 qid:1 1:1\n"))
    assert data.X.shape == (2, 200000) and data.X.nnz == 200001


def test_number_parsing_is_correctly_rounded(tmp_path):
    """The decimal fast path must agree bit for bit with Python's float()."""
    rng = np.random.default_rng(1)
    tokens = []
    for _ in range(4000):
        digits = "".join(rng.choice(list("0123456789"), rng.integers(1, 22)))
        point = rng.integers(0, len(digits) + 1)
        text = digits[:point] + "." + digits[point:] if rng.random() < 0.8 else digits
        if rng.random() < 0.4:
            text += f"e{rng.integers(-330, 330)}"
        if rng.random() < 0.3:
            text = "-" + text
        if text.strip(".-") and float(text) not in (float("inf"), float("-inf")):
            tokens.append(text)
    tokens += ["0.1", "1e22", "1e23", "9007199254740993", "4.9e-324", "2.2250738585072014e-308",
               "0.30000000000000004", "123456789012345678901234567890", "-0", "0x1p-2"]
    body = "".join(f"1 qid:1 1:{t}\n" for t in tokens)
    data = load_svmlight(write(tmp_path, body))
    expected = [float.fromhex(t) if "x" in t else float(t) for t in tokens]
    got = data.X.toarray()[:, 0]
    mismatch = [(t, g, e) for t, g, e in zip(tokens, got, expected)
                if not (g == e and np.signbit(g) == np.signbit(e)) and e != 0]
    assert not mismatch, mismatch[:5]


def test_dump_round_trips_exactly(tmp_path):
    rng = np.random.default_rng(2)
    n, d = 200, 30
    dense = rng.normal(size=(n, d)) * 10.0 ** rng.integers(-300, 300, size=(n, d))
    dense[rng.random((n, d)) < 0.6] = 0.0
    dense[0, :4] = [5e-324, -0.0, 1.0, 0.1 + 0.2]
    X = sp.csr_matrix(dense)
    X.data[:2] = [-0.0, 0.0]          # explicit zeros (one negative) are kept
    y = rng.normal(size=n)
    y[:3] = [0.0, 2.0, -1.5]
    qid = np.repeat(np.arange(20, dtype=np.int64) * 10 ** 15, 10)
    comments = [f"docid = {k}" if k % 2 else "" for k in range(n)]
    path = str(tmp_path / "round.dat")
    dump_svmlight(X, y, qid, path, comments=comments)
    back = load_svmlight(path, comments=True)
    assert back.X.shape == (n, d)
    np.testing.assert_array_equal(back.X.indptr, X.indptr)
    np.testing.assert_array_equal(back.X.indices, X.indices)
    assert back.X.data.tobytes() == X.data.tobytes()          # bit-exact, -0.0 included
    assert back.y.tobytes() == y.tobytes()
    np.testing.assert_array_equal(back.qid, qid)
    assert back.comments == comments
    assert open(path).readline().startswith("0 qid:0 1:-0 3:0 4:0.30000000000000004")


def test_noncontiguous_queries_are_grouped_stably(tmp_path):
    path = write(tmp_path, "2 qid:5 1:1\n1 qid:3 1:2\n0 qid:5 1:3\n1 qid:3 1:4\n2 qid:7 1:5\n")
    data = load_svmlight(path)
    assert data.noncontiguous_qid() == 5
    grouped, perm = data.grouped()
    assert perm.tolist() == [0, 2, 1, 3, 4]
    assert grouped.qid.tolist() == [5, 5, 3, 3, 7]
    assert grouped.line.tolist() == [1, 3, 2, 4, 5]
    assert grouped.grouped()[1] is None


def test_a_seekable_stdin_is_read_from_where_it_stands(tmp_path):
    """A script that consumed a header line hands the rest to both readers (they rewind to
    that point after sizing their buffers or counting, not to the start of the file)."""
    path = tmp_path / "t.dat"
    path.write_text("# header\n2 qid:1 1:1\n1 qid:1 1:0.5\n0 qid:2 2:1\n")
    code = ("import sys; sys.stdin.buffer.readline(); sys.stdin.buffer.readline()\n"
            "from rankfast.io.svmlight import load_svmlight\nfrom rankfast.io._stream import iter_svmlight\n"
            "mode = sys.argv[1]\n"
            "print(load_svmlight('-').y.tolist() if mode == 'load' else "
            "[v for b in iter_svmlight('-') for v in b.y])")
    for mode in ("load", "stream"):
        with open(path, "rb") as stdin:
            run = subprocess.run([sys.executable, "-c", code, mode], stdin=stdin,
                                 capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == "[1.0, 0.0]"


def test_rows_are_allocated_without_zeroing_but_start_at_entry_0():
    from rankfast._kernels import _svmlight
    from rankfast.io._stream import Rows
    for typecode in "dqi":
        made = _svmlight.empty_array(typecode, 1000)
        assert made.typecode == typecode and len(made) == 1000
    rows = Rows(10, 20, comments=True)
    assert rows.indptr[0] == 0 and len(rows.indptr) == 11 and len(rows.values) == 20
    assert len(rows.comment_start) == len(rows.comment_end) == 10


def _resident_bytes():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))


def _kernel_at_least(major, minor):
    import os
    try:
        release = tuple(int(part) for part in os.uname().release.split("-")[0].split(".")[:2])
    except ValueError:
        return False
    return release >= (major, minor)


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _kernel_at_least(5, 14),
                    reason="MADV_POPULATE_WRITE is Linux 5.14's")
def test_populate_faults_in_the_span_asked_and_keeps_what_is_written():
    """populate makes the pages of an untouched array resident, only within the span (out
    to whole 2 MB pages where the system always gives huge pages) and the array, and
    leaves the items already written as they were."""
    import array

    from rankfast._kernels import _svmlight
    n = 8 << 20                                 # 64 MB of doubles: mapped afresh, untouched
    made = _svmlight.empty_array("d", n)
    made[:1000] = array.array("d", range(1000))
    before = _resident_bytes()
    _svmlight.populate(made, n // 4, n // 2)
    grown = _resident_bytes() - before
    assert 0.9 * (n // 4) * 8 <= grown <= 1.1 * (n // 4) * 8 + (4 << 20)
    _svmlight.populate(made, -5, 2 * n)          # clipped to the array: the rest of it
    grown = _resident_bytes() - before
    assert 0.9 * n * 8 <= grown <= 1.05 * n * 8 + (1 << 20)
    _svmlight.populate(made, 10, 3)              # an empty span: nothing
    assert list(made[:1000]) == list(range(1000))
    made[n - 1] = 2.5                            # the array is still all writable
    assert made[n - 1] == 2.5


def test_count_distinct_counts_as_a_set_does():
    """count_distinct sorts only the first value of each run: runs, repeats, NaNs, empty."""
    from rankfast.data.queries import count_distinct
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 7, 300):
        for values_range in (1, 3, 40):
            qid = np.repeat(rng.integers(0, values_range, n), rng.integers(1, 4, n))
            assert count_distinct(qid) == len(set(qid.tolist()))
            labels = qid.astype(float)
            labels[rng.random(len(labels)) < 0.2] = np.nan        # each NaN is a value of its own
            assert count_distinct(labels) == len(set(labels[~np.isnan(labels)].tolist())) + \
                int(np.isnan(labels).sum())


def test_messages_quote_bytes_that_are_not_utf8_as_escapes(tmp_path):
    from rankfast.io._stream import SHOWN_CHARS, quoted
    assert quoted(b"abc") == "'abc'"
    assert quoted("naïve".encode()) == "'naïve'"
    assert quoted(b"\x7fELF\xef\xbf") == "'\\x7fELF\\xef\\xbf'"
    assert quoted(b"it's\\") == "'it\\'s\\\\'"
    assert quoted(b"\t\x00\xe2\x80\x8b") == "'\\t\\x00\\u200b'"            # not printable: escaped
    assert quoted("\u00a0".encode()) == "'\\u00a0'" != quoted(b"\xa0") == "'\\xa0'"  # NBSP, a byte
    long = b"\xff" * 1000
    assert quoted(long) == "'" + "\\xff" * SHOWN_CHARS + "... (1000 bytes)'"
    assert quoted(b"x" * SHOWN_CHARS) == "'" + "x" * SHOWN_CHARS + "'"
    path = tmp_path / "binary.dat"
    path.write_bytes(b"\x7fELF\x02\x01\xd0 a:b\n")
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, str(root / "rank_learn"), str(path), str(tmp_path / "m")],
                          capture_output=True)
    assert proc.returncode == 1 and not (tmp_path / "m").exists()
    message = proc.stderr.decode("ascii")                 # \xNN escapes only, no raw byte
    assert f"{path}:1: target '\\x7fELF\\x02\\x01\\xd0' is not a number" in message
