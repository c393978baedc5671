"""The names of the types in rankfast's annotations; read by type checkers only.

No module imports this one at run time (each imports it under ``if
TYPE_CHECKING``, and its annotations are strings: ``from __future__ import
annotations``), so the programs start without importing ``typing``.

Matrix
    Features, shape (n_documents, n_features): an ndarray, a list of lists, a
    pandas DataFrame, any scipy sparse matrix or a rankfast.data.sparse.CSR.  The
    estimators check and convert it once (rankfast.data.validation).
Vector
    One value per document (labels, query ids, scores) or per query
    (weights): an ndarray, a list, a pandas Series.
Log
    A progress callback, ``log(text, level)``, or None.
"""
from typing import Any, Callable, Optional

Matrix = Any
Vector = Any
Log = Optional[Callable[[str, int], None]]
