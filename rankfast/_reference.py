"""Slow twins of rankfast's kernels and metrics, used as test oracles.

Plain NumPy / Python, written for obviousness, not speed: pairs are enumerated
explicitly (O(pairs) or O(n²)).  Never call these from library code.

Conventions shared with the kernels: query q of the ``starts`` layout holds the
documents ``starts[q]:starts[q+1]`` and has weight ``weight[q]``; a pair (i, j)
has ``labels[i] > labels[j]`` and is active iff ``s[j] > s[i] - 1.0``.
"""
import numpy as np


def _active_pairs(scores, labels, lo, hi):
    """Index arrays (i, j) of the active pairs of the query scores[lo:hi], i preferred."""
    s = np.asarray(scores[lo:hi], dtype=np.float64)
    y = np.asarray(labels[lo:hi])
    i, j = np.nonzero((y[:, None] > y[None, :]) & (s[None, :] > s[:, None] - 1.0))
    return i + lo, j + lo


def squared_hinge_pairs(scores, labels, starts, weight):
    """(L, dL/ds) with L = Σ_q c_q Σ_{active (i, j)} (1 − s_i + s_j)², pairs enumerated."""
    scores = np.asarray(scores, dtype=np.float64)
    grad = np.zeros(len(scores))
    loss = 0.0
    for q in range(len(starts) - 1):
        i, j = _active_pairs(scores, labels, starts[q], starts[q + 1])
        r = 1.0 - scores[i] + scores[j]
        loss += weight[q] * np.sum(r * r)
        np.add.at(grad, i, -2.0 * weight[q] * r)
        np.add.at(grad, j, 2.0 * weight[q] * r)
    return float(loss), grad


def squared_hinge_hessvec_pairs(scores, labels, starts, weight, d):
    """Generalized Hessian of squared_hinge_pairs times d: Σ_active 2 c_q (e_i − e_j)(d_i − d_j)."""
    d = np.asarray(d, dtype=np.float64)
    out = np.zeros(len(d))
    for q in range(len(starts) - 1):
        i, j = _active_pairs(scores, labels, starts[q], starts[q + 1])
        diff = 2.0 * weight[q] * (d[i] - d[j])
        np.add.at(out, i, diff)
        np.add.at(out, j, -diff)
    return out


def prsvm_objective_pairs(X, y, starts, weight, w):
    """Primal RankSVM objective ½‖w‖² + Σ_q c_q Σ_{active pairs} (1 − s_i + s_j)², s = X w."""
    w = np.asarray(w, dtype=np.float64)
    s = np.asarray(X @ w, dtype=np.float64).ravel()
    loss, _ = squared_hinge_pairs(s, y, starts, weight)
    return 0.5 * float(w @ w) + loss


def _queries(qid):
    """Lists of document indices, one per query, queries in order of first appearance."""
    groups = {}
    for i, q in enumerate(np.asarray(qid).tolist()):
        groups.setdefault(q, []).append(i)
    return list(groups.values())


def swapped_pairs_brute(scores, labels, qid):
    """Per-query (swapped, pairs): a pair is swapped unless the higher label has the strictly higher score."""
    swapped, pairs = [], []
    for docs in _queries(qid):
        ns = npairs = 0
        for i in docs:
            for j in docs:
                if labels[i] > labels[j]:
                    npairs += 1
                    if not scores[i] > scores[j]:
                        ns += 1
        swapped.append(ns)
        pairs.append(npairs)
    return np.array(swapped, dtype=np.int64), np.array(pairs, dtype=np.int64)


def _by_decreasing_score(scores, docs):
    """docs sorted by decreasing score, ties in file order (Python's sort is stable)."""
    return sorted(docs, key=lambda i: -scores[i])


def ndcg_brute(scores, labels, qid, k, convention="standard"):
    """Per-query NDCG@k (k None: whole list), gain 2^max(label, 0) − 1.

    "standard": discount 1/log2(1 + position).  "letor": Eval-Score-4.0.pl
    literally: DCG accumulated position by position (positions 1 and 2
    undiscounted, then log(2)/log(position)), NDCG@k 0 when the query has
    fewer than k documents.
    """
    values = []
    for docs in _queries(qid):
        ranked = [labels[i] for i in _by_decreasing_score(scores, docs)]
        ideal = sorted((labels[i] for i in docs), reverse=True)
        cut = len(docs) if k is None else k
        if convention == "letor" and len(docs) < cut:
            values.append(0.0)
            continue

        def dcg(ls):
            total = 0.0
            for pos, lab in enumerate(ls[:cut], start=1):
                gain = 2.0 ** max(float(lab), 0.0) - 1.0
                if convention == "letor":
                    total += gain if pos <= 2 else gain * np.log(2.0) / np.log(pos)
                else:
                    total += gain / np.log2(1.0 + pos)
            return total

        best = dcg(ideal)
        values.append(dcg(ranked) / best if best != 0 else 0.0)
    return np.array(values, dtype=np.float64)


def average_precision_brute(scores, labels, qid):
    """Per-query average precision, label > 0 relevant, 0 for a query without relevant documents."""
    values = []
    for docs in _queries(qid):
        hits = 0
        precisions = []
        for pos, i in enumerate(_by_decreasing_score(scores, docs), start=1):
            if labels[i] > 0:
                hits += 1
                precisions.append(hits / pos)
        values.append(sum(precisions) / len(precisions) if precisions else 0.0)
    return np.array(values, dtype=np.float64)
