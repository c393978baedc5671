"""rankfast.optimize.ncg: the nonlinear conjugate gradient."""

import numpy as np
from data_makers import unscaled

from rankfast import RankNCG
from rankfast.learners._linear import query_weights


def test_rankncg_warm_start_is_no_slower_than_cold():
    """The tolerance is relative to ‖∇F(0)‖, not to a warm start's small gradient."""
    X, y, qid = unscaled(one_ranking=False, seed=2)
    learner = RankNCG(C=1.0)
    path = list(learner.fit_path(X, y, qid, [0.1, 1.0, 10.0]))
    for C, warm in zip([0.1, 1.0, 10.0], path):
        cold = RankNCG(C=C).fit(X, y, qid)
        warm_scores, cold_scores = warm.predict(X), cold.predict(X)
        assert np.corrcoef(warm_scores, cold_scores)[0, 1] > 0.999
    # the same fits, counted: a warm start from the previous C costs at most a cold fit
    from rankfast.learners._linear import training_arrays
    from rankfast.losses.erfc_pairs import ErfcPairObjective
    from rankfast.optimize.ncg import nonlinear_cg
    Xg, yg, starts, _ = training_arrays(X, y, qid)
    previous = nonlinear_cg(ErfcPairObjective(Xg, yg, starts, query_weights(yg, starts, 1.0, 1),
                                              1e-6, True), np.zeros(Xg.shape[1]))
    objective = ErfcPairObjective(Xg, yg, starts, query_weights(yg, starts, 10.0, 1), 1e-6, True)
    warm = nonlinear_cg(objective, previous.w)
    cold = nonlinear_cg(objective, np.zeros(Xg.shape[1]))
    assert warm.evaluations <= cold.evaluations
