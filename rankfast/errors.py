"""The exceptions rankfast raises; only the command-line layer turns them into exits."""
from __future__ import annotations

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any



class RankfastError(Exception):
    """Base class of every error rankfast reports to a user."""


class InputError(RankfastError):
    """A data or model file that cannot be used, with the place that shows why.

    Parameters
    ----------
    path : str
        The file ('-' for standard input).
    line : int or None
        1-based physical line number, or None when the error concerns the whole file.
    reason : str
        What is wrong, in a few words.
    """

    def __init__(self, path: str, line: Any, reason: Any) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {reason}")


class UsageError(RankfastError, ValueError):
    """Options or arguments that do not make sense (the programs exit with 2).

    Also a ValueError: scikit-learn's convention for a parameter out of range,
    so that code written for scikit-learn's estimators catches it.
    """


class MissingDependencyError(RankfastError):
    """An optional package a feature needs is not installed (the message gives the pip command)."""
