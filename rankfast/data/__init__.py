"""The data a learner trains on, between the files (rankfast.io) and the learners.

* ``queries``: queries as arrays (where each starts, its rows, group sizes to ids);
* ``sparse``: compressed sparse rows without scipy (``CSR``), what the reader fills;
* ``validation``: the Python boundary, features, labels, queries and weights checked once
  (``TrainingData``, ``query_sample_weights``, ``pair_weights``);
* ``normalize``: feature normalisation (``--normalize``: query, zscore, log).
"""
