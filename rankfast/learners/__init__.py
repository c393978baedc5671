"""The learners, one module each, named as ``rank_learn -a`` names them.

``prsvm`` (RankSVM), ``svmrank`` (RankSVML1), ``rankncg`` (RankNCG), ``rankrls``
(RankRLS), ``greedy`` (GreedyRankRLS) and ``kernel_approx`` (KernelApproxLearner,
NystroemMap, RandomFourierMap), on the shared fit of ``_base`` and the linear parts
of ``_linear`` and the losses of rankfast.losses; ``objectives`` (svm_rank's and PRSVM's
objective of a model) beside them.  ``registry`` is the table of them that
``rank_learn -a``, rankfast's exports and rankfast.sklearn read.
"""
