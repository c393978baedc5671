"""Issue 25 (reliability, third round): the defects an outside fuzz-and-fault run found on
17fd399.  Each test here failed on 17fd399 and names the issue's item it covers."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rankfast import InputError, read_model
from rankfast.cli import classify_main, learn_main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def launch(program, *args, timeout=300, **kwargs):
    """Run ./rank_learn or ./rank_classify on this checkout; returns CompletedProcess (text)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(ROOT / program), *map(str, args)], env=env,
                          timeout=timeout, capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Model files rank_learn writes from examples/train.dat: linear, RBF (Nystrom), RFF."""
    folder = tmp_path_factory.mktemp("models")
    made = {}
    for name, flags in (("linear", []), ("rbf", ["-t", "2", "-g", "0.1", "--landmarks", "12"]),
                        ("rff", ["-t", "2", "-g", "0.1", "--approx", "rff",
                                 "--landmarks", "6"])):
        path = folder / name
        assert learn_main(["-v", "0", "-c", "3", *flags, str(EXAMPLES / "train.dat"),
                           str(path)]) == 0
        made[name] = path
    return made


# ------------------------------------------------------------ 1. truncated model files

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


def test_rank_classify_refuses_a_cut_model_naming_file_and_line(models, tmp_path, capsys):
    content = models["linear"].read_bytes()
    cut = tmp_path / "cut"
    cut.write_bytes(content[:len(content) - 40])        # inside the support vector line
    predictions = tmp_path / "p"
    assert classify_main([str(EXAMPLES / "test.dat"), str(cut), str(predictions)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rank_classify: {cut}:12: ") and "cut short" in err
    assert err.count("\n") == 1 and not predictions.exists()


def test_a_support_vector_line_without_its_hash_is_refused(models, tmp_path):
    lines = models["rbf"].read_text().splitlines(True)
    lines[13] = lines[13].split("#")[0].rstrip() + "\n"       # the third support vector
    path = tmp_path / "m"
    path.write_text("".join(lines))
    with pytest.raises(InputError, match="does not end with '#'") as info:
        read_model(str(path))
    assert info.value.line == 14
