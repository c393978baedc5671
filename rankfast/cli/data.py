"""The programs' data files: read with progress and notes, queries from group files.

Shared by rank_learn and rank_classify: an empty file is an error, a query
whose lines are not contiguous is noted, a file without qids takes its
queries from its group file, and a glob pattern needs a cluster.
"""
from __future__ import annotations

import array
import os

from ..errors import InputError, UsageError
from .output import ReadProgress, print_note, progress, svmlight_read_documents

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any


def split_query_note(program: str, path: str, qid: int) -> None:
    print_note(program, f"{path}: the lines of qid {qid} are not contiguous; grouping each "
                   f"query's lines (svm_rank would stop here)")


def no_documents_error(path: str) -> InputError:
    """An empty data file is an error: there is nothing to learn from or to evaluate."""
    return InputError(path, None, "no documents (the file is empty or holds only blank "
                                  "and comment lines)")


def load_dataset(path: str, verbosity: int, program: str, svmlight_verbosity: int = 0,
                 group_path: Any = None, n_jobs: int | None = None, dtype: str = "float64",
                 costs: bool = False) -> Any:
    from ..io.svmlight import load_svmlight
    dataset = load_svmlight(path, progress=ReadProgress(program, path, verbosity), n_jobs=n_jobs,
                            dtype=dtype, costs=costs)
    if dataset.n_documents == 0:
        raise no_documents_error(path)
    progress(svmlight_read_documents(dataset.n_documents), svmlight_verbosity, end="")
    qid = dataset.noncontiguous_qid()
    if qid is not None:
        split_query_note(program, path, qid)
    if costs:                            # before a group file numbers the queries from 0
        check_click_log(dataset, path, group_path)
    dataset, note = with_groups(dataset, path, group_path)
    group_note(note, verbosity, program)
    return dataset


def check_click_log(dataset: Any, path: str, group_path: Any) -> None:
    """InputError for a click log's queries: a click without a qid in a file with qids
    (rankfast.clicks.log.check_click_queries); a file without any qid and without a group
    file is not a click log (a query per click, qid:N: svm_proprank cannot read it either)."""
    from ..clicks.log import check_click_queries
    check_click_queries(dataset)
    if (dataset.qid != 0).any() or group_path is not None:
        return
    from ..io.groups import group_sidecar
    if group_sidecar(path) is None:
        raise InputError(path, None, "no line has a qid: a click log gives each click's query "
                                     "as qid:N (svm_proprank's files), or its queries in a "
                                     "group file (--group)")


def with_groups(dataset: Any, path: str, group_path: Any) -> Any:
    """(dataset, note): the queries of a whole file, from its group file if it has no qids.

    ``group_path`` (--group) or ``path.query`` / ``path.group`` beside the data
    file holds one query size a line (LightGBM's / XGBoost's convention); the
    rule is rankfast.io.groups.QueryGroups', as for rank_classify's stream.  The
    note (or None) is for -v 1.
    """
    import dataclasses  # not at module level: rank_classify's stream never needs it

    import numpy as np

    from ..io.groups import QueryGroups
    groups = QueryGroups(path, group_path)
    qid = groups.qid(np.ascontiguousarray(dataset.qid))
    note = groups.finish()
    if isinstance(qid, array.array):
        dataset = dataclasses.replace(dataset, qid=np.frombuffer(qid, dtype=np.int64))
    return dataset, note


def group_note(note: Any, verbosity: int, program: str) -> None:
    if note is not None and verbosity >= 1:
        print_note(program, note)


def local_workers(options: dict[str, Any], program: str, verbosity: int) -> int | None:
    """--workers N, at most the cores this process may run on (a note says so when N is more)."""
    workers = options.get("workers")
    if workers is None:
        return None
    from ..dask import max_local_workers
    cores = max_local_workers()
    if workers > cores:
        if verbosity >= 1:
            print_note(program, f"--workers {workers}: starting {cores} (the cores this process "
                           f"may run on; more would only compete for them)")
        workers = cores
    return workers


def refuse_pattern(path: str) -> None:
    """A glob pattern naming no file is an error without a cluster (a literal name is read as is)."""
    if not any(c in path for c in "*?["):
        return                          # not a pattern (and glob stays unimported)
    import glob
    if glob.has_magic(path) and not os.path.exists(path):
        raise UsageError(f"{path!r}: a pattern of files needs --workers N or --scheduler ADDRESS")
