"""rank_learn --weights FILE: per-query weights from a side file."""
import re

import numpy as np
import pytest

from rankfast import RankSVM, dump_svmlight, read_model
from rankfast.cli.learn import learn_main


def _data(tmp_path):
    rng = np.random.default_rng(0)
    qid = np.repeat([1, 2, 3, 4], 8)
    X = rng.normal(size=(32, 3))
    y = (X @ [1.0, -1.0, 0.5] + rng.normal(size=32) > 0).astype(float)
    path = tmp_path / "train.txt"
    dump_svmlight(X, y, qid, path=str(path))
    return X, y, qid, str(path)


@pytest.mark.parametrize("per", ["query", "line"])
def test_weights_file_trains_as_the_api_with_sample_weight(tmp_path, per):
    X, y, qid, train = _data(tmp_path)
    per_query = np.array([1.0, 2.0, 0.5, 1.0])
    weights = per_query if per == "query" else np.repeat(per_query, 8)
    (tmp_path / "train.weight").write_text("".join(f"{w}\n" for w in weights))
    assert learn_main(["-v", "0", "-c", "1", "--weights", str(tmp_path / "train.weight"), train,
                       str(tmp_path / "model")]) == 0
    expected = RankSVM(C=1.0).fit(X, y, qid, sample_weight=per_query)
    model = read_model(str(tmp_path / "model"))
    np.testing.assert_allclose(model.weights, expected.weights_, rtol=1e-6)
    assert learn_main(["-v", "0", "-c", "1", train, str(tmp_path / "plain")]) == 0
    assert not np.allclose(read_model(str(tmp_path / "plain")).weights, model.weights)


@pytest.mark.parametrize("content, flags, status, message", [
    ("1\n2\nx\n", [], 1, "weight.txt:3: weight 'x' is not a finite number >= 0"),
    ("1\n-2\n1\n1\n", [], 1, "weight.txt:2"),
    ("1\n2\n", [], 1, "one weight per row \\(32\\) or per query \\(4\\)"),
    ("1\n1\n2\n", ["-c", "0.1,1"], 1, "weight.txt: sample_weight must hold one weight per row"),
])
def test_bad_weights_files_and_uses_are_refused(tmp_path, capsys, content, flags, status,
                                                message):
    _, _, _, train = _data(tmp_path)
    (tmp_path / "weight.txt").write_text(content)
    assert learn_main(flags + ["--weights", str(tmp_path / "weight.txt"), train,
                               str(tmp_path / "model")]) == status
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "model").exists()
