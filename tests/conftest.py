"""Fixtures shared by the test modules."""
import pytest

from shared_paths import REFERENCE, require


@pytest.fixture(scope="session")
def svm_rank_reference():
    """The golden svm_rank outputs in ../shared/reference/svm_rank, read in place."""
    return require(REFERENCE)
