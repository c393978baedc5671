"""Learning to rank from clicks: propensities, a click simulator and counterfactual evaluation.

Clicks are biased by position: a result is clicked only if it was examined,
and results further down are examined less.  Weighting each click by the
inverse of the probability that its position was examined (its propensity)
makes the empirical risk of a ranking an unbiased estimate of its risk on
the true relevances (Joachims, Swaminathan & Schnabel, "Unbiased
Learning-to-Rank with Biased Feedback", WSDM 2017).  Propensity SVM-rank
(``svm_proprank_learn``) is the Ranking SVM on these weighted clicks; here
``rank_learn --clicks`` (and ``svm_proprank_learn``), or any learner that
weighs documents (``RankSVM``, ``RankSVML1``) with ``sample_weight``:

* ``propensity``: the position-based model p(rank) = (1/rank)^eta and clipping;
* ``bias``: eta estimated from swap interventions or from the logs of two rankers;
* ``simulate``: a seeded click simulator (position-based examination, noise
  epsilon+ / epsilon- on binarised relevance) writing svm_proprank's files;
* ``evaluate``: the inverse-propensity estimates of a ranker's average rank
  of relevant results and DCG from a click log, beside the true figures;
* ``log``: a click log read from svm_proprank's file (``click_weights``) and
  svm_proprank's C for a learner trained on its weights (``scale_c``).
"""
from __future__ import annotations

from .bias import estimate_eta, estimate_eta_from_rankers
from .evaluate import counterfactual_metrics, relevant_rank_metrics
from .log import click_weights, scale_c
from .propensity import clipped_weights, position_propensity
from .simulate import (
    ClickLog,
    click_training_data,
    simulate_clicks,
    swap_intervention_clicks,
    write_click_file,
)

__all__ = ["ClickLog", "click_training_data", "click_weights", "clipped_weights",
           "counterfactual_metrics",
           "estimate_eta", "estimate_eta_from_rankers",
           "position_propensity", "relevant_rank_metrics", "scale_c", "simulate_clicks",
           "swap_intervention_clicks", "write_click_file"]
