"""The training objective of a linear model on a dataset, as svm_rank (p = 1) or PRSVM (p = 2) defines it."""
from __future__ import annotations

import numpy as np

from ..data.queries import group_rows
from ..losses.hinge import HingeLoss
from ._linear import check_loss, linear_scores, query_weights

TYPE_CHECKING = False              # typing is imported by type checkers only
if TYPE_CHECKING:
    from typing import Any



def objective(model: Any, data: Any, C: Any, loss: int = 1, p: int = 1,
              sample_weight: Any = None) -> float:
    """½‖w‖² + Σ_q c_q Σ_{(i,j) ∈ P_q} v_i max(0, 1 − wᵀ(x_i − x_j))^p of a linear model.

    c_q = C / Q (``loss=1``) or C / (Q |P_q|) (``loss=2``), Q the number of
    queries of ``data``: svm_rank's objective with p = 1 (its "pval" for the
    training set), PRSVM's with p = 2.  v_i is the preferred document's
    ``sample_weight`` as given, not normalised (1 without it): with a click
    log's weights (rankfast.clicks.click_weights) and p = 1, svm_proprank's
    objective.  Pairs are counted in O(n log n), never formed.

    Parameters
    ----------
    model : rankfast.LinearModel
        E.g. ``rankfast.read_model(path)`` of svm_rank's or rankfast's model file;
        its weights are used as stored (float32 values, as svm_rank_classify does).
    data : rankfast.Dataset
        Documents with labels and query ids (``rankfast.load_svmlight``).
    C : float
        svm_rank's -c.
    loss : {1, 2}
        svm_rank's -l.
    p : {1, 2}
        1: hinge (svm_rank's objective); 2: squared hinge (PRSVM's).
    sample_weight : array-like, shape (n_documents,), optional
        Each document's weight on the pairs where it is the preferred one.

    Returns
    -------
    float
    """
    check_loss(loss)
    if p not in (1, 2):
        raise ValueError(f"p must be 1 or 2 (got {p!r})")
    if not hasattr(model, "feature_ids"):
        raise TypeError("objective needs a linear model (rankfast.LinearModel)")
    features = getattr(data, "features", None)      # a Dataset's own CSR: no scipy needed
    scores = linear_scores(data.X if features is None else features, model.feature_ids,
                           model.weights)
    y = np.asarray(data.y, dtype=np.float64)
    perm, starts = group_rows(data.qid)
    weight = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if perm is not None:
        scores, y = scores[perm], y[perm]
        weight = None if weight is None else weight[perm]
    value, _ = HingeLoss(y, starts, query_weights(y, starts, C, loss), power=p,
                         doc_weight=weight)(scores)
    return 0.5 * float(model.weights @ model.weights) + value
