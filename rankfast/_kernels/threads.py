"""How many threads a fit or a scoring run uses, and how its work is split among them.

Three jobs, all about threads:

* :func:`resolve_n_jobs` turns an estimator's ``n_jobs`` (rank_learn's ``-j``)
  into a number of threads: ``None`` or 0 → the cores this process may run on
  (``os.sched_getaffinity``), a negative value counts back from them as joblib
  does (−1 → all, −2 → all but one), 1 → serial; fewer for small data.
* :func:`query_chunks` splits contiguous queries into chunks of similar work.
  The split depends on the data only, never on the number of threads: each
  chunk writes its own partial sums and the kernels add them in chunk order,
  so every result, and every model file, is the same bits for any ``n_jobs``.
* :func:`blas_single_thread` holds the BLAS library (OpenBLAS, MKL) to one
  thread while a fit runs.  The hot products (X v, Xᵀu) are rankfast's own
  threaded kernels; BLAS is left the small dense algebra (d × d), and its
  results depend on its number of threads (OpenBLAS 0.3.31: Xᵀu with 1, 2 and
  3 threads gives three different last bits, and so does eigh at d = 300), so
  one fixed count, one, keeps models identical for any ``n_jobs``; it also
  keeps BLAS's threads from competing with the kernels' OpenMP threads.  It
  needs ``threadpoolctl`` (an optional import; scikit-learn brings it).
  Without it BLAS keeps its own setting, the same for every ``n_jobs`` (so
  the models are still identical across ``n_jobs``): ``OPENBLAS_NUM_THREADS``
  / ``OMP_NUM_THREADS`` are read once, when numpy loads BLAS, so they cannot
  be set from here; set them before starting Python.
"""
from __future__ import annotations

import operator
import os

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    import numpy as np
    from numpy.typing import ArrayLike

CHUNK_DOCUMENTS = 4096      # documents per chunk of queries (a whole query is never split)
MIN_ENTRIES_PER_THREAD = 1 << 15   # stored entries a thread must get to pay for waking it
BLOCK_ROWS = 2048           # rows per block of the dense and narrow sparse products Xᵀu


def available_cores() -> int:
    """The number of cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                     # not Linux
        return os.cpu_count() or 1


def resolve_n_jobs(n_jobs: int | None, entries: int | None = None) -> int:
    """Number of threads for ``n_jobs``: None or 0 → all cores, −k → cores + 1 − k (≥ 1).

    Never more than the cores this process may run on: threads beyond them
    only compete for the same cores, and each parsing thread holds a block of
    the file in flight (``-j 1000000`` would start a thread per megabyte of a
    file, and fail where the address space is limited).

    With ``entries``, the stored entries of the data the threads go over
    (:func:`stored_entries`), no more than one thread per
    MIN_ENTRIES_PER_THREAD of them: a fit calls its kernels hundreds of times,
    and on a small file waking OpenMP's threads for each call costs more than
    the work (a 60-line file trained 2.4 ms slower on two threads than on one).
    Results never depend on the number of threads.
    """
    try:
        if isinstance(n_jobs, bool):
            raise TypeError
        n_jobs = 0 if n_jobs is None else operator.index(n_jobs)     # int, numpy integers
    except TypeError:
        raise ValueError(f"n_jobs must be an integer or None (got {n_jobs!r})") from None
    if n_jobs == 0:
        threads = available_cores()
    elif n_jobs < 0:
        threads = max(available_cores() + 1 + n_jobs, 1)
    else:
        threads = min(n_jobs, available_cores())
    if entries is not None:
        threads = max(1, min(threads, entries // MIN_ENTRIES_PER_THREAD))
    return threads


def stored_entries(X: Any) -> int:
    """The entries kernels read of X: X.nnz for a sparse matrix, X.size for an array."""
    nnz = getattr(X, "nnz", None)
    return X.size if nnz is None else nnz


def query_chunks(starts: ArrayLike, documents: int = CHUNK_DOCUMENTS) -> np.ndarray:
    """Indices into ``starts`` delimiting chunks of whole queries of about ``documents`` rows.

    Chunk c covers queries chunks[c]:chunks[c+1] (rows starts[chunks[c]]:starts[chunks[c+1]]).
    A chunk closes at the first query boundary at or past a multiple of ``documents``
    rows, so it depends on the data alone.
    """
    import numpy as np  # here: rank_classify imports this module lean
    starts = np.asarray(starts, dtype=np.int64)
    n_queries = len(starts) - 1
    if n_queries <= 0:
        return np.zeros(1, dtype=np.int64)
    # query q ends a chunk when the multiple of `documents` below its end differs from its start's
    ends = starts[1:] // documents
    cut = np.flatnonzero(ends[:-1] != ends[1:]) + 1 if n_queries > 1 else np.zeros(0, np.int64)
    return np.concatenate(([0], cut, [n_queries])).astype(np.int64)


def blas_single_thread(function: Any) -> Any:
    """Decorator: BLAS keeps to one thread while ``function`` runs (no-op without threadpoolctl)."""
    import functools  # here: rank_classify imports this module lean

    @functools.wraps(function)
    def held(*args, **kwargs):
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            return function(*args, **kwargs)
        with threadpool_limits(limits=1, user_api="blas"):
            return function(*args, **kwargs)
    return held


def each_block(work: Any, blocks: Any, n_threads: int) -> None:
    """work(block) for every block of ``blocks``, ``n_threads`` of them at a time (in order on one).

    For Python-level blocks whose calls release the GIL (BLAS, the kernels): each block is
    the same calls at any number of threads, so with BLAS held to one thread
    (:func:`blas_single_thread`) the results are the same bits for any ``n_jobs``.
    """
    blocks = list(blocks)
    if n_threads > 1 and len(blocks) > 1:
        from concurrent.futures import ThreadPoolExecutor  # here: rank_classify imports this module lean
        with ThreadPoolExecutor(min(n_threads, len(blocks))) as pool:
            list(pool.map(work, blocks))
    else:
        for block in blocks:
            work(block)


def load_openmp_runtime(environ: Any = os.environ) -> None:
    """Load the kernels' OpenMP runtime with passive waiting, and leave the environment as it was.

    The runtime reads ``OMP_WAIT_POLICY`` once, when it loads: with ``PASSIVE``
    its threads sleep between parallel regions instead of spinning (GNU
    OpenMP spins for a while by default), so they leave the cores to the
    Python code between kernel calls.  On a busy 2-core machine, training
    500k × 50 with PRSVM at ``-j 2`` took 25 % less CPU (median of 7 runs;
    6 % less at a load of 2); at ``-j 1`` it made no difference.  The
    variable is set only while one of rankfast's OpenMP kernels loads the
    runtime, then removed: other
    libraries that bring their own OpenMP runtime, and child processes,
    see the environment the user gave.  An explicit ``OMP_WAIT_POLICY``
    wins.  A runtime that another library loaded first keeps its setting.
    """
    given = "OMP_WAIT_POLICY" in environ
    if not given:
        environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        from . import _predict  # noqa: F401  (links the OpenMP runtime when built with it)
    finally:
        if not given:
            environ.pop("OMP_WAIT_POLICY", None)
