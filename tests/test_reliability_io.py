"""Issue 11 (reading side): files that change while read, strict model numbers,
corrupt compressed input, empty inputs, long tokens, BOMs, progress, large models."""

import pytest
from data_makers import corrupt, data_lines
from shared_paths import REFERENCE, require

from rankfast import load_svmlight
from rankfast.cli import output as cli_output
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main

EXAMPLE3 = REFERENCE / "example3"


def test_rank_classify_names_a_corrupt_gzip_file(tmp_path, capsys):
    require(EXAMPLE3)
    path = tmp_path / "test.dat.gz"
    path.write_bytes(corrupt("gz", data_lines(3000).encode()))
    rc = classify_main([str(path), str(EXAMPLE3 / "model_c3.dat"), str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith(f"rank_classify: {path}: cannot read") and "Traceback" not in err
    assert err.count("\n") == 1 and not (tmp_path / "p").exists()


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


def test_rank_classify_v0_prints_what_svm_rank_prints(tmp_path, capsys):
    reference = require(EXAMPLE3 / "classify_test_c3_v0.stdout").read_text()
    rc = classify_main(["-v", "0", str(EXAMPLE3 / "test.dat"), str(EXAMPLE3 / "model_c3.dat"),
                            str(tmp_path / "p")])
    assert rc == 0 and capsys.readouterr().out == reference      # svm_rank keeps the NOTE


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
