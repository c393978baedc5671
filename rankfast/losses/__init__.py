"""The losses the solvers minimise: one class per objective, each meeting a protocol of
rankfast.optimize.protocols, so that a new loss is one class usable by every solver
whose protocol it meets.

``squared_hinge`` (PRSVM's squared hinge: Newton), ``hinge`` (svm_rank's hinge for the
cutting planes, its Huber smoothings for Newton), ``erfc_pairs`` (RankNCG's pairwise
log-sigmoid through the fast erfc sums of ``erfc``: nonlinear CG), on the products with X
and the pair sums of ``products``, each query's order by score of ``query_order`` (sorted
from the last one) and the preconditioners of ``pair_preconditioner`` (the Hessian at
w = 0, from pairs and queries).  The learners (rankfast.learners) choose
a loss, its weights and a solver; rankfast.learners.objectives, by contrast, evaluates a
written model's objective.
"""
