"""Model selection: folds over queries, cross-validation tables, the selection rule.

Folds (``cv``)
--------------
* an int K: the queries (numbered by first appearance) are shuffled by
  ``random_state`` (numpy's default_rng) and the query at shuffled position j
  goes to fold j mod K (K becomes Q when there are fewer queries).  A file
  with a single ranking is split by its documents instead, shuffled the same
  way; each held-out fold is then scored as a ranking of its own documents.
* ``"loqo"``: every query is a fold of its own.  RankRLS computes this
  exactly from one eigendecomposition; any other learner is refitted Q times.
* any object with ``split(X, y, groups)`` yielding (train, test) row indices,
  as scikit-learn's splitters do (GroupKFold, GroupShuffleSplit, ...); it is
  called with groups = qid.  Or a list (tuple) of such (train, test) pairs,
  scikit-learn's other form of ``cv``.
* a ValidationSet(X, y, qid): LETOR's protocol (train on train.txt, choose
  on vali.txt), ``rank_learn --valid FILE``.  Every row of the grid is
  trained on all the training documents and scores the validation set; its
  queries are the table's folds (mean ± sd over them; the 1se rule's
  standard error is sd / √Q of the validation queries).

The folds depend only on the queries, K and the seed, so every value of C
(and of any other parameter of the grid) is scored on the same folds.  A
fold's model is trained as rank_learn would train it on a file of the
training folds alone (svm_rank's C / Q with Q the training queries); only
RankRLS's exact leave-query-out keeps the λ = Q / (2C) of all the queries.

Table
-----
For every row of the grid and every fold, the model trained on the other
folds scores the held-out documents, which are evaluated by the selection
metric (``metric``: ``ndcg@k``, ``map``, ``err@k`` or ``pairs``) and, beside
it, NDCG@k, MAP, ERR@k and pair accuracy (rankfast.metrics; pair accuracy
is the fraction of the held-out part's pairs ranked strictly right, the
Wilcoxon–Mann–Whitney statistic of a single ranking).  A fold's value is the
mean over its queries (pair accuracy: pooled over them).  The table shows,
per row, the mean over folds ± the standard deviation over folds (ddof 1);
a fold where a metric is undefined (no held-out pair) is left out of it.

Query weights (``sample_weight``, rankfast.data.validation.query_sample_weights) weigh
the table as they weigh the fits, so that a weight of 2 is the query twice:
each fold's model is fitted on its training queries' weights, and a fold's
value is the mean over its held-out queries with each query counted w_q
times (pair accuracy: pairs pooled with those weights); the folds count once
each.  Where every query is a fold (RankRLS's exact leave-query-out), the
folds are weighted by w_q instead: weighted mean and sd, and a standard
error over the effective number of queries (Σw)²/Σw² (CVResult.weights).
A validation set's queries are not weighted.

Selection rule (``rule``)
-------------------------
``"best"``: the row with the highest mean of the selection metric, ties to
the smaller C.  ``"1se"``, the one-standard-error rule (Breiman, Friedman,
Olshen & Stone 1984; Hastie, Tibshirani & Friedman, The Elements of
Statistical Learning, sect. 7.10): the smallest C, i.e. the most
regularised model, whose mean is at least the best mean minus the best
row's standard error sd / √K (K the folds on which the metric is defined);
among rows with that C, the highest mean.

Warm starts: an estimator with ``fit_path(X, y, qid, Cs)`` (yielding a
fitted copy per C, ascending) is trained along the C path of each fold,
each C started from the previous optimum; any other estimator with
``fit(X, y, qid)`` and ``predict(X)`` is refitted per C.
"""
from ._scoring import CONVENTIONS, DEFAULT_METRIC, Column, Metric, table_columns, table_metrics
from ._search import GridSearch, takes_training_data
from ._split import DEFAULT_FOLDS, Folds, SplitQueryWarning, ValidationSet, make_folds
from ._validation import (
    RULES,
    CVResult,
    Progress,
    check_settings,
    choose,
    cross_validate,
    cv_result_of,
    fitted_linear,
    grid_rows,
    held_out_result,
    select_c,
    settings,
    training_data,
    with_params,
)

__all__ = ["CONVENTIONS", "DEFAULT_FOLDS", "DEFAULT_METRIC", "RULES", "CVResult", "Column", "Folds",
           "GridSearch", "Metric", "Progress", "SplitQueryWarning", "ValidationSet", "check_settings",
           "choose", "cross_validate", "cv_result_of", "fitted_linear", "grid_rows", "held_out_result",
           "make_folds", "select_c", "settings", "table_columns", "table_metrics", "takes_training_data",
           "training_data",
           "with_params"]
