"""Fixtures shared by the test modules."""
from pathlib import Path

import pytest
from data_makers import SMALL
from shared_paths import DATA, REFERENCE, require

import rankfast
from rankfast.cli.learn import learn_main


@pytest.fixture(scope="session")
def svm_rank_reference():
    """The golden svm_rank outputs in ../shared/reference/svm_rank, read in place."""
    return require(REFERENCE)


@pytest.fixture
def every_thread_counts(monkeypatch):
    """Fits use every thread they are given, however small the data (the tests' data is
    small: without this, resolve_n_jobs would give them one thread per 32,768 entries)."""
    from rankfast._kernels import threads as _threads
    monkeypatch.setattr(_threads, "MIN_ENTRIES_PER_THREAD", 1)


@pytest.fixture
def every_block_counts(monkeypatch):
    """Reading uses every thread it is given, however small the file (the tests' files are
    small: without this, a file would get one thread per MIN_BLOCKS_PER_THREAD blocks).
    test_threads.py checks that rule itself."""
    from rankfast.io import svmlight as data
    monkeypatch.setattr(data, "MIN_BLOCKS_PER_THREAD", 1)


@pytest.fixture
def started_threads(monkeypatch):
    """The threads started while the test runs, in order (threading.Thread.start, spied)."""
    import threading
    started = []
    start = threading.Thread.start

    def count_and_start(thread):
        started.append(thread)
        start(thread)
    monkeypatch.setattr(threading.Thread, "start", count_and_start)
    return started


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "train.dat"
    path.write_text(SMALL)
    return path


@pytest.fixture
def needs_matplotlib():
    pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def mslr():
    folder = require(DATA / "mslr_web_fold1_5k")
    return tuple(rankfast.load_svmlight(str(folder / name), n_features=136)
                 for name in ("train.5k.txt.gz", "test.5k.txt.gz"))


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
