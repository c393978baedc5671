"""``rank_classify``: svm_rank_classify's command line, a test file scored, its summary.

A linear model scores the file as it streams (no numpy, no scipy: start-up in
milliseconds); a kernel or random Fourier model reads the whole file first.
"""
from __future__ import annotations

import array
import collections
import os
import sys
import time

from .. import __version__
from .._kernels._predict import format_scores, linear_scores_rows
from .._kernels.threads import resolve_n_jobs
from ..errors import InputError, UsageError
from ..io._model_text import read_model_file, single_vector_weights  # no numpy: start-up
from ..io.files import atomic_output, check_output
from .clicks import check_click_source, click_estimates, read_click_log
from .data import group_note, local_workers, no_documents_error, refuse_pattern, split_query_note, with_groups
from .options import CLASSIFY_OPTIONS, CLASSIFY_SWITCHES, GROUP_HELP, cluster_requested, parse_args
from .output import (
    ClusterRun,
    ReadProgress,
    hold_threads,
    print_note,
    progress,
    run,
    svmlight_read_documents,
    svmlight_read_model,
    write,
)

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any

    import numpy as np

    from .._typing import Vector

CLASSIFY_HELP = f"""rank_classify {__version__}: a drop-in for svm_rank_classify

   usage: rank_classify [options] example_file model_file [output_file]

Arguments:
         example_file-> documents to score ('-' reads standard input)
         model_file  -> model written by rank_learn or svm_rank_learn
         output_file -> one score per line (default svm_predictions)
Options:
         -?, --help  -> this help (and -h: svm_rank_classify has no -h option)
         --version   -> print the version and exit
         -v [0..3]   -> verbosity level (default 2)
         -y [0..3]   -> verbosity level for svm_light (default 0): from 1 on,
                        the lines svm_rank's svm_light prints while reading
                        the model and the examples
         --metrics   -> also print NDCG@k, ERR@k, P@k, MAP, MRR and pairwise
                        accuracy (LETOR 4.0 conventions: a query with fewer
                        than k documents scores 0 at NDCG@k)
         --ndcg-at k[,k...] -> cut-offs for --metrics (default 10)
         --ndcg letor|standard -> NDCG convention of --metrics (default letor)
         --clicks    -> a click log (svm_proprank's): also print svm_proprank's
                        SNIPS estimate of the clicks' average rank (0 = top,
                        ties against the click) and rankfast's counterfactual
                        estimates of the relevant results' rank (1 = top) and DCG
         -j, --threads int -> threads (default 0: every core this process may
                        use; never more) reading and scoring (same predictions)
         --scheduler ADDRESS, --workers N -> score on a Dask cluster (an
                        existing one, or N local worker processes);
                        example_file may then be a quoted glob, scored in
                        sorted file order (needs rankfast[dask])
""" + GROUP_HELP + """                        The summary and --metrics use these queries; the
                        predictions do not depend on them
"""


NOTE_BLOCK = ("NOTE: The loss reported above is the fraction of swapped pairs averaged over\n"
              "      all rankings. The zero/one-error is fraction of perfectly correct\n"
              "      rankings!\n")


PROPRANK_HELP = f"""svm_proprank_classify {__version__}: a drop-in for Propensity SVM-rank's
svm_proprank_classify (Joachims, Swaminathan & Schnabel 2017)

   usage: svm_proprank_classify [options] example_file model_file [output_file]

It is rank_classify --clicks with svm_proprank's output: svm_rank_classify's
summary, then the SNIPS estimate of the clicked documents' average rank (0 =
top, ties counted against the click).  example_file is a click log (a query per
click: target 1 and cost: on the clicked document, a line without cost:
weighs 1).  rank_classify's options, as follows, all work.

""" + CLASSIFY_HELP


def classify_main(argv: Any = None) -> int:
    """``rank_classify``: run it on argv (default sys.argv[1:]); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    return run("rank_classify", _classify, argv, CLASSIFY_HELP)


def proprank_classify_main(argv: Any = None) -> int:
    """``svm_proprank_classify``: rank_classify --clicks on argv (default sys.argv[1:]) with
    svm_proprank's stdout (no rankfast line after its own); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    return run("svm_proprank_classify", lambda args: _classify(args, proprank=True), argv,
               PROPRANK_HELP)


def _classify(argv, proprank=False):
    options, _, positional = parse_args(argv, CLASSIFY_OPTIONS, CLASSIFY_SWITCHES, 3,
                                        "rank_classify")
    if proprank:
        options["clicks"] = True
    hold_threads(options.get("n_jobs"))
    if len(positional) < 2:
        raise UsageError("not enough input parameters: "
                         "rank_classify [options] example_file model_file [output_file]")
    test_path, model_path = positional[:2]
    output_path = positional[2] if len(positional) > 2 else "svm_predictions"
    check_output(output_path, (test_path, model_path))   # before the work, not after it
    distributed = cluster_requested(options)
    verbosity = options.get("verbosity", 2)
    svmlight_verbosity = options.get("svmlight_verbosity", 0)
    cutoffs = (_MetricSettings(options.get("ndcg_at", [10]), options.get("ndcg", "letor"))
               if options.get("metrics") else None)

    progress("Reading model...", verbosity, end="")
    file = read_model_file(model_path)
    progress(svmlight_read_model(file), svmlight_verbosity, end="")
    progress("done.", verbosity)
    normalize = file.metadata.get("normalize", "none")
    if normalize not in ("none", "zscore", "query", "log"):
        raise InputError(model_path, None, f"the model asks for normalize={normalize}, which "
                                           f"this rank_classify cannot apply (a newer rankfast?)")
    click_log = None                               # (documents, weights) with --clicks
    if options.get("clicks"):                      # read and checked before any output
        check_click_source(test_path, distributed)
        click_log = read_click_log(test_path, options.get("group"))
    if distributed:
        if normalize in ("query", "log"):
            raise UsageError(f"a model trained with --normalize {normalize} is not available "
                             f"with --scheduler/--workers")
        from ..io.model_files import model_of
        return _classify_distributed(model_of(file), test_path, output_path, options)
    refuse_pattern(test_path)
    progress("Reading test examples...", verbosity, end="")
    linear = file.kernel == 0 and file.rff is None
    if normalize in ("query", "log") and linear:
        n_documents, runtime, queries, note = _classify_normalized(
            file, normalize, test_path, output_path, verbosity, cutoffs, options.get("group"))
    elif linear:
        n_documents, runtime, queries, note = _classify_stream(
            file, test_path, output_path, verbosity, cutoffs,
            options.get("n_jobs"), options.get("group"))
    else:
        n_documents, runtime, queries, note = _classify_batch(
            file, test_path, output_path, verbosity, cutoffs, options.get("group"),
            options.get("n_jobs"))
    progress(svmlight_read_documents(n_documents), svmlight_verbosity, end="")
    if queries.split_qid is not None:
        split_query_note("rank_classify", test_path, queries.split_qid)
        if queries.split_scored_by_runs:              # a pipe, or an output written in place
            print_note("rank_classify", f"{test_path}: --normalize query scored each run of "
                                        f"qid {queries.split_qid}'s lines as its own query (the "
                                        f"summary and --metrics group the whole query)")
    progress("done.", verbosity)
    group_note(note, verbosity, "rank_classify")       # after svm_rank's line, kept whole
    if n_documents > 1 and queries.first_score is not None and not queries.scores_vary:
        print_note("rank_classify", _same_scores_note(queries.first_score, normalize))
    progress("Classifying test examples...", verbosity, end="")
    progress("done", verbosity)
    progress(f"Runtime (without IO) in cpu-seconds: {runtime:.2f}", verbosity)
    write(_summary_lines(queries.swapped, queries.pairs, verbosity))
    estimates = None if click_log is None else click_estimates(*click_log, model_path)
    if estimates is not None:
        write(estimates[0])                           # svm_proprank_classify's line
    if cutoffs is not None:
        _write_metrics(queries.swapped, queries.pairs, queries.figures, cutoffs)
    if estimates is not None and not proprank:
        write(estimates[1])
    return 0


def _same_scores_note(score, normalize):
    """Why every document of a test file may have got the same score."""
    causes = ("its weights are all 0, or each query here has one document (--normalize query "
              "maps a feature constant within a query to 0)" if normalize == "query" else
              "its weights are all 0, or its kernel is about 0 between these documents and its "
              "support vectors (see rank_learn's note on -g)")
    return f"every document got the same score ({score:.8g}): the model ranks nothing here: {causes}"


def _linear_weights(file):
    """(feature ids, weights) of a linear model file, as rank_classify scores with them.

    One support vector (what svm_rank and rank_learn write): in compiled
    code, without numpy; several (SVM-light's own linear models): through
    rankfast.models's accumulation.
    """
    if len(file.alphas) == 1:
        return single_vector_weights(file.alphas[0], file.indices, file.values)
    from ..io.model_files import model_of
    model = model_of(file)
    return model.feature_ids, model.weights


def _classify_stream(file, test_path, output_path, verbosity, cutoffs, n_jobs=1,
                     group_path=None):
    """Score the test file block by block, writing each block's predictions as it goes.

    Each block's rows are scored on n_jobs threads, fewer for a small block
    (resolve_n_jobs); the scores are the same for any number.
    A file without qids is grouped by its group file as the rows go by
    (rankfast.io.groups.QueryGroups); its errors leave no output.  Returns
    (documents, runtime, _QueryFigures, the group file's note or None).

    Memory: one block of documents, the current query's scores and labels,
    and per-query figures (see _QueryFigures).
    """
    from ..io._stream import iter_svmlight  # rows without numpy or scipy: start-up, memory
    from ..io.groups import QueryGroups
    ids, weights = _linear_weights(file)
    groups = QueryGroups(test_path, group_path)
    queries = _QueryFigures(cutoffs, keep_documents=not _rereadable(test_path))
    runtime = 0.0
    n_documents = 0
    scores = array.array("d")
    with atomic_output(output_path, "wb") as out:
        for block in iter_svmlight(test_path, progress=ReadProgress("rank_classify", test_path,
                                                                     verbosity)):
            n = len(block)
            if len(scores) < n:
                scores = array.array("d", bytes(8 * n))
            start = time.process_time()
            linear_scores_rows(block.indptr, block.indices, block.values, ids, weights,
                               file.bias, memoryview(scores)[:n],
                               resolve_n_jobs(n_jobs, len(block.values)))
            runtime += time.process_time() - start
            out.write(format_scores(memoryview(scores)[:n]))
            by = groups.qid(block.qid)
            if groups.regrouped:
                queries.regroup()
            queries.add(memoryview(scores)[:n], block.y, block.qid, by)
            n_documents += n
        if n_documents == 0:
            raise no_documents_error(test_path)
        note = groups.finish()
        queries.finish(lambda: _rescored(file, test_path, n_jobs))
    return n_documents, runtime, queries, note


def _classify_normalized(file, kind, test_path, output_path, verbosity, cutoffs,
                         group_path=None):
    """Score a model trained with --normalize query or log, one query at a time.

    Returns what _classify_stream returns.  Memory: one block of documents and
    the current query's rows (``query`` normalises each contiguous run of a
    query id, or of a group file's group, over its rows).  A query whose lines
    come back after another's is scored again whole (the file read a second
    time, the predictions written again), unless the input is a pipe or the
    output a device: then each run stays its own query, and a note says so.
    """
    import numpy as np

    from ..data.normalize import normalized_scores
    from ..io._stream import iter_svmlight  # rows without numpy or scipy: start-up, memory
    from ..io.groups import QueryGroups
    ids, weights = _linear_weights(file)
    ids, weights = np.asarray(ids, dtype=np.int64), np.asarray(weights, dtype=np.float64)
    groups = QueryGroups(test_path, group_path)
    queries = _QueryFigures(cutoffs, keep_documents=not _rereadable(test_path))
    runtime, n_documents = 0.0, 0
    pending = None              # (lengths, indices, values, y, qid, by) of the open query

    def score(part):
        lengths, indices, values, y, qid, by = part
        indptr = np.concatenate(([0], np.cumsum(lengths)))
        return normalized_scores(indptr, indices, values, ids, weights, file.bias, kind), part

    def emit(scored, out):
        scores, (_, _, _, y, qid, by) = scored
        scores = np.ascontiguousarray(scores)
        out.write(format_scores(scores))
        queries.add(scores, y, qid, by)

    with atomic_output(output_path, "wb") as out:
        for block in iter_svmlight(test_path, progress=ReadProgress("rank_classify", test_path,
                                                                     verbosity)):
            n = len(block)
            indptr = np.asarray(block.indptr)[:n + 1]
            by = groups.qid(block.qid)
            if groups.regrouped:
                queries.regroup()
            key = np.asarray(block.qid if by is None else by).copy()
            part = (np.diff(indptr), np.asarray(block.indices)[:indptr[-1]].copy(),
                    np.asarray(block.values)[:indptr[-1]].copy(), np.asarray(block.y).copy(),
                    np.asarray(block.qid).copy(), None if by is None else key)
            start = time.process_time()
            runs = np.flatnonzero(np.diff(key)) + 1 if kind == "query" else np.array([], int)
            cuts = np.concatenate(([0], runs, [n]))
            for a, b in zip(cuts[:-1], cuts[1:]):
                piece = _rows_of(part, a, b)
                if pending is not None and a == 0 and kind == "query" and _same_query(pending, piece):
                    piece = _joined(pending, piece)
                elif pending is not None:
                    emit(score(pending), out)
                pending = piece
            runtime += time.process_time() - start
            n_documents += n
        if pending is not None:
            emit(score(pending), out)
        if n_documents == 0:
            raise no_documents_error(test_path)
        note = groups.finish()
        rescored = None
        if kind == "query" and queries.split_qid is not None and not groups.regrouped:
            # a query's lines came back after another's: normalise whole queries, as predict
            # does, where the input can be read again and the output written again
            if _rereadable(test_path) and out.seekable():
                start = time.process_time()
                rescored = _rescored(file, test_path)
                runtime += time.process_time() - start
                out.seek(0)
                out.truncate()
                out.write(format_scores(np.ascontiguousarray(rescored[0])))
            else:
                queries.split_scored_by_runs = True
        queries.finish(lambda: rescored or _rescored(file, test_path))
    return n_documents, runtime, queries, note


def _rows_of(part, a, b):
    import numpy as np
    lengths, indices, values, y, qid, by = part
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    lo, hi = offsets[a], offsets[b]
    return (lengths[a:b], indices[lo:hi], values[lo:hi], y[a:b], qid[a:b],
            None if by is None else by[a:b])


def _same_query(first, second):
    key_first = first[4] if first[5] is None else first[5]
    key_second = second[4] if second[5] is None else second[5]
    return len(key_first) and len(key_second) and key_first[-1] == key_second[0]


def _joined(first, second):
    import numpy as np
    return tuple(None if a is None else np.concatenate((a, b)) for a, b in zip(first, second))


def _classify_batch(file, test_path, output_path, verbosity, cutoffs, group_path=None,
                    n_jobs=None):
    """Kernel and random Fourier models: read the whole test file, then score it
    (normalised first, with its queries, as the model's metadata says).

    Returns what _classify_stream returns.
    """
    from ..io.model_files import model_of
    from ..io.svmlight import load_svmlight
    model = model_of(file)
    dataset = load_svmlight(test_path, progress=ReadProgress("rank_classify", test_path,
                                                              verbosity), n_jobs=n_jobs)
    if dataset.n_documents == 0:
        raise no_documents_error(test_path)
    dataset, note = with_groups(dataset, test_path, group_path)
    start = time.process_time()
    threads = {"n_jobs": n_jobs} if model.kind == "kernel" else {}    # svm_rank's arithmetic
    scores = model.predict(dataset.features, dataset.qid, **threads)
    runtime = time.process_time() - start
    with atomic_output(output_path) as out:
        write_predictions(scores, out)
    queries = _QueryFigures(cutoffs, keep_documents=True)
    queries.add(scores, dataset.y, dataset.qid)
    queries.finish(None)
    return dataset.n_documents, runtime, queries, note


def _rereadable(path):
    return path != "-" and os.path.isfile(path)


def _rescored(file, path, n_jobs=None):
    """(scores, labels, qid) of a whole test file, read again (non-contiguous queries)."""
    from ..io.model_files import model_of
    from ..io.svmlight import load_svmlight
    dataset = load_svmlight(path, n_jobs=n_jobs)
    return model_of(file).predict(dataset.features, dataset.qid), dataset.y, dataset.qid


class _QueryFigures:
    """Per-query figures of a stream of scored documents: swapped pairs (and --metrics' figures).

    Runs of documents with equal qid are gathered (a run may span blocks);
    finished runs are evaluated in batches and only their per-query figures
    are kept, so memory grows with the number of queries, not of documents.
    Swapped pairs are counted by _swapped.count_swapped_runs (no numpy);
    --metrics evaluates each batch with rankfast.metrics.  A qid whose lines
    come back after another query's (not contiguous) needs its documents
    together: at finish(), the figures are computed again by rankfast.metrics
    from ``rescore()`` (the file read a second time) or, for an input that
    cannot be read twice (a pipe), from the documents kept on the way
    (``keep_documents``: 24 bytes a document).  The same happens after
    regroup(): rows were gathered by group numbers that the file's qids,
    seen later, overrule (rankfast.io.groups.QueryGroups.regrouped).
    """

    BATCH = 1 << 16

    def __init__(self, cutoffs, keep_documents):
        self.cutoffs = cutoffs
        self.kept = (array.array("d"), array.array("d"), array.array("q")) if keep_documents else None
        self.seen = set()
        self.split_qid = None
        self.split_scored_by_runs = False           # --normalize query could not rescore it
        self.regrouped = False
        self.current = None                         # qid of the run being gathered
        self.batch = (array.array("d"), array.array("d"), array.array("q"))
        self.starts = array.array("q", [0])          # run starts within the batch
        self.swapped, self.pairs = array.array("q"), array.array("q")
        self.figures = {}                           # --metrics: per-query figures by name
        self.first_score = None                     # the first document's score
        self.scores_vary = False                    # whether any other differs from it

    def add(self, scores, labels, qid, by=None):
        """Documents in file order (any buffers of float64, float64, int64).

        ``by`` (int64): the query numbers to gather them by instead of ``qid``.
        """
        scores, labels, qid = (memoryview(_contiguous(a)) for a in (scores, labels, qid))
        if not self.scores_vary and len(scores):
            self._compare_scores(scores)
        if self.kept is not None:
            for kept, new in zip(self.kept, (scores, labels, qid)):
                kept.frombytes(new.cast("B"))
        if self.split_qid is not None or self.regrouped:
            return
        qid = qid if by is None else memoryview(_contiguous(by))
        from .._kernels._swapped import run_starts
        starts = array.array("q", bytes(8 * len(qid)))
        base = len(self.batch[0])
        for i in starts[:run_starts(qid, starts)]:   # a loop over the block's runs, not its rows
            q = qid[i]
            if q != self.current:
                if base + i > self.starts[-1]:         # the run before it closes
                    self.starts.append(base + i)
                if q in self.seen:
                    self.split_qid = q
                    return
                self.seen.add(q)
                self.current = q
        for batch, new in zip(self.batch, (scores, labels, qid)):
            batch.frombytes(new.cast("B"))
        if base + len(qid) >= self.BATCH:
            self._evaluate()

    def _compare_scores(self, scores):
        """Whether a score differs from the first: in a Python loop that ends at the first
        that does, the second document of a model that ranks anything."""
        if self.first_score is None:
            self.first_score = scores[0]
        first = self.first_score
        for score in scores:
            if score != first:
                self.scores_vary = True
                return

    def _close_run(self):
        if len(self.batch[0]) > self.starts[-1]:
            self.starts.append(len(self.batch[0]))

    def _evaluate(self):
        """Figures of the finished runs in the batch; the open run (if any) stays in it."""
        runs = len(self.starts) - 1
        if runs == 0:
            return
        end = self.starts[-1]
        scores, labels, qid = (memoryview(a)[:end] for a in self.batch)
        if self.cutoffs is None:
            from .._kernels._swapped import count_swapped_runs
            swapped = array.array("q", bytes(8 * runs))
            pairs = array.array("q", bytes(8 * runs))
            count_swapped_runs(scores, labels, self.starts, swapped, pairs)
            self._keep(swapped, pairs)
        else:
            self._keep(*_figures(scores, labels, qid, self.cutoffs))
        scores = labels = qid = None                # the views go before the arrays change
        self.batch = tuple(_tail(a, end) for a in self.batch)
        self.starts = array.array("q", [0])

    def _keep(self, swapped, pairs, figures=None):
        self.swapped.extend(int(v) for v in swapped)
        self.pairs.extend(int(v) for v in pairs)
        for name, new in (figures or {}).items():
            self.figures.setdefault(name, []).extend(new.tolist())

    def regroup(self):
        """Forget the figures: finish() computes them again from the file's qids."""
        self.regrouped = True

    def finish(self, rescore):
        """Evaluate what is left; recompute everything if a query was not contiguous."""
        if self.split_qid is None and not self.regrouped:
            self._close_run()
            self._evaluate()
            return
        if self.kept is not None:
            scores, labels, qid = self.kept
        else:
            scores, labels, qid = rescore()
        if self.regrouped:
            from ..data.queries import noncontiguous_qid
            self.split_qid = noncontiguous_qid(qid)
        self.swapped, self.pairs = array.array("q"), array.array("q")
        self.figures = {}
        self.first_score, self.scores_vary = None, False      # the scores as written
        if len(scores):
            self._compare_scores(scores)
        self._keep(*_figures(scores, labels, qid, self.cutoffs))


def _tail(values, start):
    """A new array.array of values[start:]."""
    tail = array.array(values.typecode)
    tail.frombytes(memoryview(values)[start:].cast("B"))
    return tail


def _contiguous(values):
    """values as a C-contiguous buffer of its own type (numpy arrays may be strided)."""
    if isinstance(values, (array.array, memoryview)):
        return values
    import numpy as np
    return np.ascontiguousarray(values)


# rank_classify --metrics: the cut-offs (--ndcg-at) and the NDCG convention (--ndcg).
# (collections.namedtuple, not typing.NamedTuple: typing costs 4 ms to import.)
_MetricSettings = collections.namedtuple("_MetricSettings", "cutoffs convention")


def _figures(scores, labels, qid, cutoffs) -> Any:
    """(swapped, pairs[, figures]), queries in first-seen order.

    With --metrics settings (``cutoffs``, a _MetricSettings), figures by name,
    each an array: per query "ndcg@k", "p@k" (every cut-off k), "ap", "rr";
    ERR@k needs the whole file's highest label, so "top@k" holds each query's
    k best-scored labels in ranked order ("count@k" how many) and "grade" the
    highest label of these documents, for _metrics_lines to finish.  Also,
    per query, "alike:<name>" whether the figure (ERR@k as "alike:err@k") is
    the same for every order of its documents (rankfast.metrics.
    alike_in_every_order), and its "size", "relevant" documents and
    "one_label", which say why (rankfast.metrics.why_alike).  One sort of the
    scores serves every figure, and one each the best and the worst order.
    """
    import numpy as np

    from .. import metrics
    from ..data.queries import query_index
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    labels, qid = np.asarray(labels, dtype=np.float64), np.asarray(qid)
    index = query_index(qid)
    ranked = metrics.ranking(scores, labels, qid, index)
    swapped, pairs = metrics.swapped_pairs_of(ranked, scores, labels)
    if cutoffs is None:
        return swapped, pairs
    grade = metrics.highest_grade(labels)
    figures = _ranked_figures(ranked, cutoffs)
    figures["grade"] = np.array([grade])
    best, worst = (_ranked_figures(metrics.ranking(ordering, labels, qid, index), cutoffs, grade)
                   for ordering in (labels, -labels))      # scores of the best and worst orders
    for name, values in best.items():
        figures[f"alike:{name}"] = values == worst[name]
    facts = metrics.query_facts(labels, qid, index)
    figures["size"], figures["relevant"], figures["one_label"] = facts
    return swapped, pairs, figures


def _ranked_figures(ranked, cutoffs, grade=None):
    """Per-query figures of a rankfast.metrics.Ranking (see _figures); with ``grade``, ERR@k
    ("err@k") at that g_max instead of the top labels."""
    import numpy as np

    from .. import metrics
    figures = {"ap": metrics.average_precision_of(ranked), "rr": metrics.reciprocal_rank_of(ranked)}
    for k in cutoffs.cutoffs:
        figures[f"ndcg@{k}"] = metrics.ndcg_of(ranked, k, cutoffs.convention)
        figures[f"p@{k}"] = metrics.precision_of(ranked, k)
        top, starts = metrics.top_of(ranked, k)
        if grade is None:
            figures[f"top@{k}"], figures[f"count@{k}"] = top, np.diff(starts)
        else:
            figures[f"err@{k}"] = metrics.err_of_ranked(top, starts, grade)
    return figures


def _classify_distributed(model, test_path, output_path, options):
    """rank_classify --scheduler/--workers: files scored on a Dask cluster, in sorted file order."""
    from .. import dask as cluster
    verbosity = options.get("verbosity", 2)
    progress("Classifying test examples on the cluster...", verbosity, end="")
    with ClusterRun("rank_classify", options,
                     local_workers(options, "rank_classify", verbosity)) as client:
        scores, labels, qid = cluster.predict(model, test_path, client)
    with atomic_output(output_path) as out:
        write_predictions(scores, out)
    progress("done", verbosity)
    write(classify_summary(scores, labels, qid, verbosity))
    if options.get("metrics"):
        settings = _MetricSettings(options.get("ndcg_at", [10]), options.get("ndcg", "letor"))
        _write_metrics(*_figures(scores, labels, qid, settings), settings)
    return 0


def write_predictions(scores: Vector, out: Any, chunk: int = 1 << 16) -> None:
    """One score per line in svm_rank's '%.8f' format."""
    import numpy as np
    for start in range(0, len(scores), chunk):
        out.write(format_scores(np.ascontiguousarray(scores[start:start + chunk],
                                                     dtype=np.float64)).decode("ascii"))


def _c_float(value, spec):
    """printf-like formatting that prints nan as glibc does for 0.0/0 ('-nan')."""
    if value != value:
        width = int(spec.split(".")[0] or 0)
        return "-nan".rjust(width)
    return ("%" + spec + "f") % value


def _float32(value):
    """value rounded to float32 (svm_rank keeps these figures in floats)."""
    return array.array("f", [value])[0]


def classify_summary(scores: Vector, labels: Vector, qid: np.ndarray, verbosity: int = 2) -> str:
    """svm_rank_classify's summary lines for these scores."""
    swapped, pairs = _figures(scores, labels, qid, None)
    return _summary_lines(swapped, pairs, verbosity)


def _summary_lines(swapped, pairs, verbosity=2):
    """svm_rank_classify's summary lines from per-query swapped and total pair counts."""
    fractions = [s / p if p > 0 else 0.0 for s, p in zip(swapped, pairs)]
    n = len(fractions)
    total = 0.0
    for fraction in fractions:                # in query order, as svm_rank_classify sums
        total += fraction
    incorrect = sum(1 for fraction in fractions if fraction > 0)
    avgloss = _float32(total / n) if n else float("nan")
    zero_one = _float32(100.0 * incorrect / n) if n else float("nan")
    percent = 100.0 * total / n if n else float("nan")
    lines = []
    if verbosity >= 1:
        lines.append(f"Average loss on test set: {_c_float(avgloss, '.4')}\n")
        lines.append(f"Zero/one-error on test set: {_c_float(zero_one, '.2')}% "
                     f"({n - incorrect} correct, {incorrect} incorrect, {n} total)\n")
    lines.append(NOTE_BLOCK)
    lines.append(f"Total Num Swappedpairs  : {_c_float(float(sum(swapped)), '6.0')}\n")
    lines.append(f"Avg Swappedpairs Percent: {_c_float(percent, '6.2')}\n")
    return "".join(lines)


def metrics_report(scores: Vector, labels: Vector, qid: np.ndarray, cutoffs: Any = (10,),
                   convention: str = "letor") -> str:
    """rankfast's extra evaluation lines (--metrics); NDCG labelled with its convention."""
    settings = _MetricSettings(list(cutoffs), convention)
    swapped, pairs, figures = _figures(scores, labels, qid, settings)
    return _metrics_lines(swapped, pairs, figures, settings)


def _write_metrics(swapped, pairs, figures, settings):
    """--metrics' lines on stdout, and a note for each figure no ranking could change."""
    write(_metrics_lines(swapped, pairs, figures, settings))
    for note in _alike_notes(figures, settings):
        print_note("rank_classify", note)


def _alike_notes(figures, settings):
    """Notes naming the figures that are the same for every ranking of the file's queries, and why.

    Such a figure says nothing of the model (LETOR's NDCG@10 of queries
    shorter than 10 documents is 0; MAP of graded labels 3-8, all relevant, is
    1).  Figures alike for one reason share a note.
    """
    import numpy as np

    from .. import metrics
    facts = metrics.QueryFacts(*(np.asarray(figures.get(name, ()))
                                 for name in ("size", "relevant", "one_label")))
    if not len(facts.sizes):
        return []
    convention = settings.convention
    named = [(f"ndcg@{k}", metrics.ndcg_name(k, convention), "ndcg", k)
             for k in settings.cutoffs]
    named += [(f"err@{k}", f"ERR@{k}", "err", k) for k in settings.cutoffs]
    named += [(f"p@{k}", f"P@{k}", "p", k) for k in settings.cutoffs]
    named += [("ap", "MAP", "map", None), ("rr", "MRR", "mrr", None)]
    by_reason: dict = {}
    for name, label, kind, k in named:
        if np.all(figures.get(f"alike:{name}", False)):
            by_reason.setdefault(metrics.why_alike(kind, facts, k, convention), []).append(label)
    where = metrics.queries_phrase(len(facts.sizes))
    return [metrics.alike_message(labels, where, why) for why, labels in by_reason.items()]


def _metrics_lines(swapped, pairs, figures, settings):
    """NDCG@k (its convention named), ERR@k, P@k, MAP, MRR, pair accuracy from per-query figures."""
    import numpy as np

    from .. import metrics

    def mean(values):
        values = np.asarray(values, dtype=np.float64)
        return float(values.mean()) if len(values) else float("nan")
    total = int(sum(int(p) for p in pairs))
    accuracy = 1.0 - int(sum(int(s) for s in swapped)) / total if total else float("nan")
    grade = max(max(figures.get("grade", ()), default=0.0), 0.0)     # ERR's g_max: the file's
    lines = [f"{metrics.ndcg_name(k, settings.convention)}: {mean(figures.get(f'ndcg@{k}', ())):.4f}\n"
             for k in settings.cutoffs]
    for k in settings.cutoffs:
        starts = np.concatenate(([0], np.cumsum(figures.get(f"count@{k}", ()), dtype=np.int64)))
        err = metrics.err_of_ranked(figures.get(f"top@{k}", ()), starts, grade)
        lines.append(f"ERR@{k}: {mean(err):.4f}\n")
    lines += [f"P@{k}: {mean(figures.get(f'p@{k}', ())):.4f}\n" for k in settings.cutoffs]
    lines.append(f"MAP: {mean(figures.get('ap', ())):.4f}\n")
    lines.append(f"MRR: {mean(figures.get('rr', ())):.4f}\n")
    lines.append(f"Pairwise accuracy: {accuracy:.4f}\n")
    return "".join(lines)
