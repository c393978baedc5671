"""Query group files (LightGBM / XGBoost): FILE.query or FILE.group beside a file without qids.

Issue 13, item 3: grouped by the sidecar (note at -v 1), ``--group FILE`` names
one, sizes that do not add up are an error naming both files, and a file with
neither trains as one ranking with a note.
"""
import re

import numpy as np
import pytest

from rankfast import load_svmlight, read_model
from rankfast.cli import learn_main
from rankfast.data import group_sidecar, group_to_qid, read_group_file
from rankfast.errors import InputError
from rankfast.ranksvm import RankSVM


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
    # the same model as from the file with qids
    with_qids = RankSVM(C=1.0).fit(dataset.X, dataset.y, dataset.qid).to_model(
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
    with_qids = RankSVM(C=1.0).fit(dataset.X, dataset.y, dataset.qid)
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
