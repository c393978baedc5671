"""Fixtures shared by the test modules."""
import pytest
from shared_paths import REFERENCE, require


@pytest.fixture(scope="session")
def svm_rank_reference():
    """The golden svm_rank outputs in ../shared/reference/svm_rank, read in place."""
    return require(REFERENCE)


@pytest.fixture
def every_thread_counts(monkeypatch):
    """Fits use every thread they are given, however small the data (the tests' data is
    small: without this, resolve_n_jobs would give them one thread per 32,768 entries)."""
    from rankfast import _threads
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
