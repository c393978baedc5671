"""rankfast.io.files: compressed and FIFO inputs, atomic outputs (symlinks, permissions,
failed writes)."""

import bz2
import gzip
import lzma
import os
import stat
import threading

import numpy as np
import pytest
from data_makers import corrupt, data_lines, model_text
from program_runs import leftovers
from shared_paths import REFERENCE

from rankfast import InputError, load_svmlight, read_model
from rankfast.io import files
from rankfast.io.files import atomic_output

DATA = b"3 qid:1 1:1 2:0.5 # a\n1 qid:1 1:0.25 3:2\n2 qid:2 2:1\n"


EXAMPLE3 = REFERENCE / "example3"


def test_the_temporary_file_is_synced_before_the_rename(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append("replace"), real_replace(a, b))[1])
    with files.atomic_output(str(tmp_path / "out")) as out:
        out.write("x\n")
    assert calls == ["fsync", "replace"]


def test_a_read_only_target_is_refused_not_replaced(tmp_path):
    target = tmp_path / "out"
    target.write_text("old\n")
    target.chmod(0o444)
    with pytest.raises(files.InputError, match="read-only"):
        with files.atomic_output(str(target)) as out:
            out.write("new\n")
    assert target.read_text() == "old\n" and leftovers(tmp_path) == []


def feed_fifo(path, payload):
    """Make a FIFO at ``path`` and write ``payload`` into it from a thread."""
    os.mkfifo(path)

    def write():
        with open(path, "wb") as fifo:
            fifo.write(payload)

    thread = threading.Thread(target=write)
    thread.start()
    return thread


def drain_fifo(path, into):
    """Make a FIFO at ``path`` and collect what is written to it in ``into`` (a list)."""
    os.mkfifo(path)

    def read():
        with open(path, "rb") as fifo:
            into.append(fifo.read())

    thread = threading.Thread(target=read)
    thread.start()
    return thread


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_fifo_reads_like_the_file(tmp_path, compress):
    plain = tmp_path / "plain.dat"
    plain.write_bytes(DATA)
    fifo = str(tmp_path / "fifo")
    writer = feed_fifo(fifo, gzip.compress(DATA) if compress else DATA)
    from_fifo = load_svmlight(fifo, comments=True)
    writer.join()
    from_file = load_svmlight(str(plain), comments=True)
    assert (from_fifo.X != from_file.X).nnz == 0
    np.testing.assert_array_equal(from_fifo.y, from_file.y)
    np.testing.assert_array_equal(from_fifo.qid, from_file.qid)
    assert from_fifo.comments == from_file.comments


def test_a_fifo_shorter_than_the_magic_bytes(tmp_path):
    fifo = str(tmp_path / "fifo")
    writer = feed_fifo(fifo, b"1 1:1")
    data = load_svmlight(fifo)
    writer.join()
    assert data.X.toarray().tolist() == [[1.0]]


def test_a_bad_line_in_a_fifo_is_named(tmp_path):
    fifo = str(tmp_path / "fifo")
    writer = feed_fifo(fifo, b"1 qid:1 1:1\n1 qid:1 x:1\n")
    with pytest.raises(InputError) as caught:
        load_svmlight(fifo)
    writer.join()
    assert (caught.value.path, caught.value.line) == (fifo, 2)


def test_output_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("old\n")
    link.symlink_to(target.name)
    with atomic_output(str(link)) as out:
        out.write("new\n")
    assert link.is_symlink()
    assert target.read_text() == "new\n"


def test_a_failed_write_through_a_symlink_leaves_the_target(tmp_path):
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("old\n")
    link.symlink_to(target.name)
    with pytest.raises(RuntimeError):
        with atomic_output(str(link)) as out:
            out.write("half")
            raise RuntimeError("stop")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "target.txt"]


def test_an_existing_output_keeps_its_permissions(tmp_path):
    path = tmp_path / "predictions"
    path.write_text("old\n")
    path.chmod(0o640)
    with atomic_output(str(path)) as out:
        out.write("new\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.read_text() == "new\n"


def test_a_fifo_output_is_written_not_replaced(tmp_path):
    fifo, received = str(tmp_path / "out"), []
    reader = drain_fifo(fifo, received)
    with atomic_output(fifo) as out:
        out.write("1.5\n")
    reader.join()
    assert received == [b"1.5\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_directory_as_output_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="cannot write"):
        with atomic_output(str(tmp_path)) as out:
            out.write("x")


def test_a_failing_disk_write_is_an_input_error_and_leaves_nothing(tmp_path):
    from rankfast.io.files import atomic_output
    path = tmp_path / "out.txt"
    with pytest.raises(InputError, match="cannot write: No space left on device"):
        with atomic_output(str(path)) as out:
            out.write("partial")
            raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "dir").mkdir()
    with pytest.raises(InputError, match="cannot write"):
        with atomic_output(str(tmp_path / "dir")) as out:
            out.write("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]


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
