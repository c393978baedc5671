"""Fitted learners and objectives the tests of several modules compare with."""

import numpy as np
from data_makers import starts_of
from reference_impl import erfc_rank_objective_pairs

from rankfast import KernelApproxLearner, KernelParams, RankNCG, RankRLS, RankSVM, RankSVML1
from rankfast.learners._linear import query_weights


def rff_learner(X, y, qid, seed=7):
    return KernelApproxLearner(RankSVM(C=1.0), KernelParams(2, gamma=2.0), "rff",
                               landmarks=64, seed=seed).fit(X, y, qid)


class Recorder:
    """A minimal estimator (fit/predict, no fit_path) that records what each fit saw."""

    seen = []

    def __init__(self, C=1.0):
        self.C = C

    def fit(self, X, y, qid):
        Recorder.seen.append((self.C, frozenset(np.asarray(qid).tolist()), len(y)))
        self.w = np.linalg.lstsq(X, y, rcond=None)[0] * self.C
        return self

    def predict(self, X):
        return X @ self.w


def fitted_on_mslr(learner, C, data, tight):
    if learner == "prsvm":
        model = RankSVM(C=C, tol=1e-10 if tight else 1e-3, max_iter=500)
    elif learner == "rankncg":
        model = RankNCG(C=C, tol=1e-9, max_iter=20000) if tight else RankNCG(C=C)
    elif learner == "svmrank":
        model = (RankSVML1(C=C, tol=1e-6, solver="smoothing") if tight else RankSVML1(C=C))
    else:
        model = RankRLS(C=C, solver="dense" if tight else "cg")
    return model.fit(data.features, data.y, data.qid)


def objective_at(learner, model, X, y, qid):
    """The learner's training objective at the model's weights."""
    if learner in ("prsvm", "svmrank"):
        return model.result_.f
    w = model.coef_
    starts = starts_of(qid)
    weight = query_weights(y, starts, model.C_, 1)
    if learner == "rankncg":
        return erfc_rank_objective_pairs(X, y, starts, weight, w)
    r = y - X @ w                              # rankrls: Σ_q c_q Σ_{i<j} (r_i − r_j)²
    total = 0.0
    for q in range(len(starts) - 1):
        part = r[starts[q]:starts[q + 1]]
        total += weight[q] * (len(part) * (part @ part) - part.sum() ** 2)
    return 0.5 * (w @ w) + total
