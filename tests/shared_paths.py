"""Where the shared reference material lives (read in place, never copied)."""
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
REFERENCE = SHARED / "reference" / "svm_rank"
PROPRANK_REFERENCE = SHARED / "reference" / "svm_proprank"
DATA = SHARED / "data"


def require(path):
    """Skip the calling test, naming what is missing, when the shared folder is absent."""
    if not path.exists():
        pytest.skip(f"{path} is not available (../shared is read in place)")
    return path
