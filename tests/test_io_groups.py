"""rankfast.io.groups: group files (sidecars and explicit), beside files without qids, in both
programs."""

import functools
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from rankfast import InputError, RankSVM, load_svmlight, read_model
from rankfast.cli import classify as classify_cli
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main
from rankfast.data.queries import group_to_qid, query_starts
from rankfast.io import _stream as reader
from rankfast.io.groups import QueryGroups, group_sidecar, read_group_file


def _write_without_qids(path, dataset):
    """The dataset's lines with their qid tokens removed; returns the query sizes."""
    lines = []
    for i in range(dataset.n_documents):
        row = dataset.X[i]
        features = " ".join(f"{j + 1}:{v:.17g}" for j, v in zip(row.indices, row.data))
        lines.append(f"{dataset.y[i]:g} {features}\n")
    path.write_text("".join(lines))
    return np.diff(dataset.query_starts())


@pytest.fixture
def no_qids(tmp_path):
    """examples/train.dat without its qids, and the sizes of its queries."""
    dataset = load_svmlight("examples/train.dat")
    path = tmp_path / "train.txt"
    return path, _write_without_qids(path, dataset), dataset


@pytest.mark.parametrize("suffix", [".query", ".group"])
def test_sidecar_beside_the_file_groups_it(no_qids, tmp_path, capsys, suffix):
    path, sizes, dataset = no_qids
    (tmp_path / ("train.txt" + suffix)).write_text("".join(f"{s}\n" for s in sizes))
    assert learn_main(["-c", "1", str(path), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert f"{len(sizes)} queries from {path}{suffix}" in err
    # the same model as from the file with qids (rank_learn reads values as floats, as svm_rank)
    with_qids = RankSVM(C=1.0).fit(dataset.features.astype(np.float32), dataset.y,
                                   dataset.qid).to_model(
        n_features=dataset.n_features, n_documents=dataset.n_documents)
    np.testing.assert_array_equal(read_model(str(tmp_path / "m")).weights, with_qids.weights)
    assert learn_main(["-v", "0", "-c", "1", str(path), str(tmp_path / "m")]) == 0
    assert capsys.readouterr().err == ""                       # the note is for -v 1 and up


def test_explicit_group_file(no_qids, tmp_path, capsys):
    path, sizes, dataset = no_qids
    groups = tmp_path / "sizes.txt"
    groups.write_text("".join(f"{s}\n" for s in sizes))
    assert learn_main(["-c", "1", "--group", str(groups), str(path), str(tmp_path / "m")]) == 0
    assert f"queries from {groups}" in capsys.readouterr().err
    with_qids = RankSVM(C=1.0).fit(dataset.features.astype(np.float32), dataset.y, dataset.qid)
    np.testing.assert_array_equal(read_model(str(tmp_path / "m")).weights,
                                  with_qids.to_model(n_features=dataset.n_features).weights)


def test_sizes_that_do_not_add_up_name_both_files(no_qids, tmp_path, capsys):
    path, sizes, _ = no_qids
    sidecar = tmp_path / "train.txt.query"
    sidecar.write_text("".join(f"{s}\n" for s in sizes[:-1]))
    model = tmp_path / "m"
    assert learn_main([str(path), str(model)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(sidecar) in err and str(path) in err
    assert re.search(rf"add up to {sizes[:-1].sum()} documents, but .* has {sizes.sum()}", err)
    assert not model.exists()


def test_bad_line_in_a_group_file(no_qids, tmp_path, capsys):
    path, _, _ = no_qids
    (tmp_path / "train.txt.group").write_text("10\n\nabc\n")
    assert learn_main([str(path), str(tmp_path / "m")]) == 1
    assert f"{path}.group:3: group size 'abc' is not a positive integer" in capsys.readouterr().err


def test_without_qids_or_sidecar_one_ranking_with_a_note(no_qids, tmp_path, capsys):
    path, _, dataset = no_qids
    assert learn_main([str(path), str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert f"{dataset.n_documents} documents are one ranking" in err


def test_file_with_qids_keeps_them(tmp_path, capsys):
    data = tmp_path / "train.dat"
    data.write_bytes(open("examples/train.dat", "rb").read())
    (tmp_path / "train.dat.query").write_text("2666\n")          # one group: ignored
    assert learn_main([str(data), str(tmp_path / "m")]) == 0
    assert "has qids: " in capsys.readouterr().err
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("2666\n")
    assert learn_main(["--group", str(wrong), str(data), str(tmp_path / "m")]) == 1
    assert "do not match the qids" in capsys.readouterr().err


def test_library_functions(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("")
    assert group_sidecar(str(path)) is None
    (tmp_path / "d.txt.group").write_text("1\n2\n")
    assert group_sidecar(str(path)) == str(path) + ".group"
    np.testing.assert_array_equal(read_group_file(str(path) + ".group"), [1, 2])
    np.testing.assert_array_equal(group_to_qid([1, 2], 3), [0, 1, 1])
    (tmp_path / "bad").write_text("0\n")
    with pytest.raises(InputError, match="bad:1"):
        read_group_file(str(tmp_path / "bad"))


def test_query_groups_block_by_block_against_whole_arrays(tmp_path):
    """QueryGroups fed in random blocks: group_to_qid's numbers, and the sizes-against-runs check."""
    rng = np.random.default_rng(1)
    data, sidecar = str(tmp_path / "data"), str(tmp_path / "data.query")
    for trial in range(300):
        sizes = rng.integers(1, 6, rng.integers(1, 8))
        n = int(sizes.sum())
        if trial % 3 == 0:
            qid = np.zeros(n, dtype=np.int64)
        elif trial % 3 == 1:
            qid = group_to_qid(sizes, n) * 7 + 1                     # runs that match the sizes
        else:
            qid = rng.integers(0, 3, n).astype(np.int64)              # runs that mostly do not
        cuts = np.union1d(rng.choice(np.arange(1, n), rng.integers(0, n), replace=False), [n])
        with open(sidecar, "w") as f:
            f.write("".join(f"{s}\n" for s in sizes))
        for explicit in (False, True):
            groups = QueryGroups(data, sidecar if explicit else None)
            blocks = list(zip(np.r_[0, cuts[:-1]], cuts))
            parts = [np.asarray(groups.qid(qid[a:b])) for a, b in blocks]
            # group numbers until the first block with a qid, the file's qids from it on
            numbers = group_to_qid(sizes, n)
            for (a, b), part in zip(blocks, parts):
                expected = qid if qid[:b].any() else numbers
                np.testing.assert_array_equal(part, expected[a:b])
            has_qids = bool(qid.any())
            if not has_qids:
                assert groups.finish() == f"{data}: {len(sizes)} queries from {sidecar}"
            elif not explicit:
                assert groups.finish() == f"{data} has qids: {sidecar} is not used"
            elif np.array_equal(np.diff(query_starts(qid)), sizes):
                assert groups.finish() is None
            else:
                with pytest.raises(InputError, match="do not match the qids of"):
                    groups.finish()
            # rows numbered by group before the first qid came (a whole block without qids)
            assert groups.regrouped == (has_qids and not qid[:cuts[0]].any())


@pytest.fixture
def test_no_qids(tmp_path):
    """examples/test.dat without its qids, and the sizes of its queries."""
    path = tmp_path / "test.txt"
    return path, _write_without_qids(path, load_svmlight("examples/test.dat"))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A linear model (streamed by rank_classify) and a Nystrom RBF model (read whole)."""
    folder = tmp_path_factory.mktemp("models")
    linear, kernel = str(folder / "linear"), str(folder / "kernel")
    assert learn_main(["-v", "0", "-c", "1", "examples/train.dat", linear]) == 0
    assert learn_main(["-v", "0", "-c", "1", "-t", "2", "-g", "0.1", "--landmarks", "30",
                       "examples/train.dat", kernel]) == 0
    return {"linear": linear, "kernel": kernel}


@pytest.fixture(params=[8192, 7], ids=["blocks_8192", "blocks_7"])
def block_rows(request, monkeypatch):
    """The default block size, and blocks of 7 rows (groups span blocks)."""
    monkeypatch.setattr(reader, "iter_svmlight",
                        functools.partial(reader.iter_svmlight, rows=request.param,
                                          entries=256 if request.param < 100 else 1 << 18))
    monkeypatch.setattr(classify_cli._QueryFigures, "BATCH", 5 if request.param < 100 else 1 << 16)


def _summary(out):
    """The summary and metrics lines of rank_classify's output (a note breaks the progress line)."""
    return out[out.find("Average loss"):] if "Average loss" in out else out


def _classify(capsys, *argv):
    """(exit status, summary and metrics printed, stderr) of rank_classify --metrics."""
    status = classify_main(["--metrics", "--ndcg-at", "1,10", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, _summary(out), err


@pytest.mark.parametrize("kind", ["linear", "kernel"])
@pytest.mark.parametrize("suffix", [".query", ".group"])
def test_classify_groups_by_the_sidecar_as_by_qids(test_no_qids, tmp_path, capsys, models,
                                                   block_rows, kind, suffix):
    path, sizes = test_no_qids
    model = models[kind]
    status, expected, _ = _classify(capsys, "examples/test.dat", model, tmp_path / "with_qids")
    assert status == 0 and "Zero/one-error" in expected and "NDCG@10" in expected
    status, alone, err = _classify(capsys, path, model, tmp_path / "alone")
    assert status == 0 and alone != expected and "documents are one ranking" in err
    (tmp_path / ("test.txt" + suffix)).write_text("".join(f"{s}\n" for s in sizes))
    status, out, err = _classify(capsys, path, model, tmp_path / "pred")
    assert status == 0 and out == expected
    assert f"rank_classify: note: {path}: {len(sizes)} queries from {path}{suffix}" in err
    assert (tmp_path / "pred").read_text() == (tmp_path / "with_qids").read_text()
    assert classify_main(["-v", "0", str(path), model, str(tmp_path / "pred")]) == 0
    assert capsys.readouterr().err == ""                       # the note is for -v 1 and up


@pytest.mark.parametrize("kind", ["linear", "kernel"])
def test_classify_explicit_group_file(test_no_qids, tmp_path, capsys, models, block_rows, kind):
    path, sizes = test_no_qids
    groups = tmp_path / "sizes.txt"
    groups.write_text("".join(f"{s}\n" for s in sizes))
    _, expected, _ = _classify(capsys, "examples/test.dat", models[kind], tmp_path / "p")
    status, out, err = _classify(capsys, "--group", groups, path, models[kind], tmp_path / "p")
    assert status == 0 and out == expected and f"queries from {groups}" in err


@pytest.mark.parametrize("kind", ["linear", "kernel"])
@pytest.mark.parametrize("change", [-1, +1])
def test_classify_sizes_that_do_not_add_up_leave_no_predictions(test_no_qids, tmp_path, capsys,
                                                                 models, block_rows, kind, change):
    path, sizes = test_no_qids
    sidecar = tmp_path / "test.txt.query"
    wrong = sizes[:-1] if change < 0 else np.r_[sizes, 3]
    sidecar.write_text("".join(f"{s}\n" for s in wrong))
    pred = tmp_path / "pred"
    status, out, err = _classify(capsys, path, models[kind], pred)
    assert status == 1 and "Zero/one" not in out
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err == (f"rank_classify: {sidecar}: the group sizes add up to {wrong.sum()} documents, "
                   f"but {path} has {sizes.sum()}\n")
    assert not pred.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test.txt", "test.txt.query"]
    (tmp_path / "test.txt.query").write_text("10\nx\n")
    assert classify_main([str(path), models[kind], str(pred)]) == 1
    assert capsys.readouterr().err == f"rank_classify: {sidecar}:2: group size 'x' is not a " \
                                      f"positive integer\n"
    assert not pred.exists()


def test_classify_file_with_qids_keeps_them(tmp_path, capsys, models, block_rows):
    data = tmp_path / "test.dat"
    lines = open("examples/test.dat").read().splitlines(True)
    data.write_text("".join(lines))
    _, expected, _ = _classify(capsys, data, models["linear"], tmp_path / "p")
    (tmp_path / "test.dat.query").write_text("987\n")             # one group: not used
    status, out, err = _classify(capsys, data, models["linear"], tmp_path / "p")
    assert status == 0 and out == expected and f"{data} has qids: {data}.query is not used" in err
    status, _, err = _classify(capsys, "--group", tmp_path / "test.dat.query", data,
                               models["linear"], tmp_path / "p")
    assert status == 1 and "the group sizes do not match the qids of" in err
    sizes = np.diff(load_svmlight(str(data)).query_starts())
    (tmp_path / "sizes").write_text("".join(f"{s}\n" for s in sizes))
    assert _classify(capsys, "--group", tmp_path / "sizes", data, models["linear"],
                     tmp_path / "p")[:2] == (0, expected)


@pytest.mark.parametrize("tail", [0, 10])
@pytest.mark.parametrize("pipe", [False, True])
def test_classify_lines_without_qid_before_the_first_qid(tmp_path, capsys, models, block_rows,
                                                         pipe, tail):
    """The qids win over a group file even when they first appear after 14 rows grouped by it.

    With blocks of 7 rows, the first two blocks were already gathered by
    group: the figures are made again from the file's qids (the file read
    again; from standard input, the documents kept).  ``tail`` lines without
    qid at the end make qid 0 non-contiguous.
    """
    lines = open("examples/test.dat").read().splitlines(True)
    cut = len(lines) - tail
    mixed = ([re.sub(r" qid:\d+", "", line) for line in lines[:14]] + lines[14:cut] +
             [re.sub(r" qid:\d+", "", line) for line in lines[cut:]])
    data = tmp_path / "mixed.dat"
    data.write_text("".join(mixed))
    ds = load_svmlight(str(data))
    scores = read_model(models["linear"]).predict(ds.X)
    expected = classify_cli.classify_summary(scores, ds.y, ds.qid) + classify_cli.metrics_report(
        scores, ds.y, ds.qid, (1, 10))
    if pipe:                               # --group must give the runs of equal qid
        sizes = np.diff(query_starts(ds.qid))
        (tmp_path / "sizes").write_text("".join(f"{s}\n" for s in sizes))
        stdin = sys.stdin
        sys.stdin = open(data)
        try:
            status, out, err = _classify(capsys, "--group", tmp_path / "sizes", "-",
                                         models["linear"], tmp_path / "p")
        finally:
            sys.stdin.close()
            sys.stdin = stdin
    else:
        (tmp_path / "mixed.dat.query").write_text("2\n" * 7 + "973\n")
        status, out, err = _classify(capsys, data, models["linear"], tmp_path / "p")
        assert f"{data} has qids: {data}.query is not used" in err
    assert status == 0 and out == expected
    assert ("the lines of qid 0 are not contiguous" in err) == (tail > 0)


def test_classify_standard_input_with_explicit_group(test_no_qids, tmp_path, models):
    path, sizes = test_no_qids
    groups = tmp_path / "sizes"
    groups.write_text("".join(f"{s}\n" for s in sizes))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def run(*argv, data):
        result = subprocess.run(
            [sys.executable, "-c", "import sys; from rankfast.cli.classify import classify_main; "
             "sys.exit(classify_main(sys.argv[1:]))", "--metrics", *map(str, argv)],
            input=data, capture_output=True, env=dict(os.environ, PYTHONPATH=root), timeout=120)
        return result.returncode, _summary(result.stdout.decode()), result.stderr.decode()

    status, expected, _ = run("examples/test.dat", models["linear"], tmp_path / "p1", data=b"")
    assert status == 0
    status, out, err = run("--group", groups, "-", models["linear"], tmp_path / "p2",
                           data=path.read_bytes())
    assert status == 0 and out == expected and f"-: {len(sizes)} queries from {groups}" in err
    assert (tmp_path / "p1").read_text() == (tmp_path / "p2").read_text()
    (tmp_path / "short").write_text("".join(f"{s}\n" for s in sizes[1:]))
    status, out, err = run("--group", tmp_path / "short", "-", models["kernel"], tmp_path / "p3",
                           data=path.read_bytes())
    assert status == 1 and err == (f"rank_classify: {tmp_path / 'short'}: the group sizes add up "
                                   f"to {sizes[1:].sum()} documents, but - has {sizes.sum()}\n")
    assert not (tmp_path / "p3").exists()


@pytest.mark.parametrize("main", [learn_main, classify_main])
def test_group_with_a_cluster_is_a_usage_error(tmp_path, capsys, main):
    argv = ["--workers", "2", "--group", str(tmp_path / "g"), "examples/test.dat", "m"]
    assert main(argv if main is learn_main else argv + ["p"]) == 2
    assert "--group cannot be used with --scheduler or --workers" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_a_compressed_file_finds_the_group_file_named_before_it_was_compressed(tmp_path, suffix,
                                                                                 capsys):
    import bz2
    import gzip
    import lzma
    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}[suffix]
    plain = tmp_path / "rank.train"
    with opener(str(plain) + suffix, "wb") as f:
        f.write(b"2 1:1\n1 1:0.5\n0 1:0\n1 1:2\n0 1:1\n")
    assert group_sidecar(str(plain) + suffix) is None
    assert learn_main([str(plain) + suffix, str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    for candidate in (".gz.query" if suffix == ".gz" else suffix + ".query", ".query", ".group"):
        assert f"rank.train{candidate}" in err                 # the note names every place looked
    (tmp_path / "rank.train.query").write_text("3\n2\n")
    assert group_sidecar(str(plain) + suffix) == str(plain) + ".query"
    (tmp_path / ("rank.train" + suffix + ".group")).write_text("5\n")
    assert group_sidecar(str(plain) + suffix) == str(plain) + suffix + ".group"   # its own first
    os.remove(str(plain) + suffix + ".group")
    assert learn_main([str(plain) + suffix, str(tmp_path / "m")]) == 0
    assert f"rank.train{suffix}: 2 queries from {plain}.query" in capsys.readouterr().err
    assert group_sidecar(str(tmp_path / ".gz")) is None        # a name that is only a suffix


def test_standard_input_without_qids_is_one_ranking_with_a_plain_note():
    groups = QueryGroups("-")
    groups.qid(np.zeros(3, np.int64))
    assert groups.finish() == "- has no qids: its 3 documents are one ranking"
