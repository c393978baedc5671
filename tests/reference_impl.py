"""Slow twins of rankfast's kernels and metrics, used as test oracles.

Plain NumPy / Python, written for obviousness, not speed: pairs are enumerated
explicitly (O(pairs) or O(n²)).  Never call these from library code.

Conventions shared with the kernels: query q of the ``starts`` layout holds the
documents ``starts[q]:starts[q+1]`` and has weight ``weight[q]``; a pair (i, j)
has ``labels[i] > labels[j]`` and is active iff ``s[j] > s[i] - 1.0``.
"""
import numpy as np
from scipy.special import erfc, log_expit


def _active_pairs(scores, labels, lo, hi):
    """Index arrays (i, j) of the active pairs of the query scores[lo:hi], i preferred."""
    s = np.asarray(scores[lo:hi], dtype=np.float64)
    y = np.asarray(labels[lo:hi])
    i, j = np.nonzero((y[:, None] > y[None, :]) & (s[None, :] > s[:, None] - 1.0))
    return i + lo, j + lo


def squared_hinge_pairs(scores, labels, starts, weight, doc_weight=None):
    """(L, dL/ds) with L = Σ_q c_q Σ_{active (i, j)} v_i (1 − s_i + s_j)², pairs enumerated
    (v: doc_weight, all 1 when None)."""
    scores = np.asarray(scores, dtype=np.float64)
    v = np.ones(len(scores)) if doc_weight is None else np.asarray(doc_weight, dtype=np.float64)
    grad = np.zeros(len(scores))
    loss = 0.0
    for q in range(len(starts) - 1):
        i, j = _active_pairs(scores, labels, starts[q], starts[q + 1])
        r = 1.0 - scores[i] + scores[j]
        c = weight[q] * v[i]
        loss += np.sum(c * r * r)
        np.add.at(grad, i, -2.0 * c * r)
        np.add.at(grad, j, 2.0 * c * r)
    return float(loss), grad


def squared_hinge_hessvec_pairs(scores, labels, starts, weight, d, doc_weight=None):
    """Generalized Hessian of squared_hinge_pairs times d: Σ_active 2 c_q v_i (e_i − e_j)(d_i − d_j)."""
    d = np.asarray(d, dtype=np.float64)
    v = np.ones(len(d)) if doc_weight is None else np.asarray(doc_weight, dtype=np.float64)
    out = np.zeros(len(d))
    for q in range(len(starts) - 1):
        i, j = _active_pairs(scores, labels, starts[q], starts[q + 1])
        diff = 2.0 * weight[q] * v[i] * (d[i] - d[j])
        np.add.at(out, i, diff)
        np.add.at(out, j, -diff)
    return out


def hinge_pairs(scores, labels, starts, weight, doc_weight=None):
    """(L, a subgradient) with L = Σ_q c_q Σ_{active (i, j)} v_i (1 − s_i + s_j), pairs enumerated."""
    scores = np.asarray(scores, dtype=np.float64)
    v = np.ones(len(scores)) if doc_weight is None else np.asarray(doc_weight, dtype=np.float64)
    grad = np.zeros(len(scores))
    loss = 0.0
    for q in range(len(starts) - 1):
        i, j = _active_pairs(scores, labels, starts[q], starts[q + 1])
        c = weight[q] * v[i]
        loss += np.sum(c * (1.0 - scores[i] + scores[j]))
        np.add.at(grad, i, -c)
        np.add.at(grad, j, c)
    return float(loss), grad


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
    """Per-query (swapped, pairs): a pair is swapped unless the higher label has the strictly higher score.

    NaN is one value below every number (rankfast.metrics' rule): it ties NaN.
    """
    swapped, pairs = [], []
    for docs in _queries(qid):
        ns = npairs = 0
        for i in docs:
            for j in docs:
                if labels[i] > labels[j]:
                    npairs += 1
                    if not _score_key(scores[i]) > _score_key(scores[j]):
                        ns += 1
        swapped.append(ns)
        pairs.append(npairs)
    return np.array(swapped, dtype=np.int64), np.array(pairs, dtype=np.int64)


def _score_key(score):
    """A sort key with NaN as one value below every number (-inf included)."""
    return (0, 0.0) if score != score else (1, score)


def _by_decreasing_score(scores, docs):
    """docs sorted by decreasing score (NaN last), ties in file order (Python's sort is stable)."""
    return sorted(docs, key=lambda i: _score_key(scores[i]), reverse=True)    # reverse keeps ties' order


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


# ---------------------------------------------------------------- RankRLS and greedy RankRLS
# Slow twins of RankRLS and greedy RankRLS (rankfast.learners.rankrls), used as test oracles.
#
# Pairs are enumerated explicitly and every leave-query-out model is retrained
# from scratch.  Conventions as in rankfast.learners.rankrls: queries in order of first
# appearance; the objective ½‖w‖² + Σ_q c_q Σ_{i<j ∈ q} (y_i − y_j − wᵀ(x_i − x_j))²
# with c_q = (C/Q)·β_q, β_q = 1 (loss 1) or 1/(m_q(m_q − 1)/2) (loss 2); a
# held-out query's loss is Σ_{i<j} β_q (r_i − r_j)², r = y − Xw.  ``query_weight``
# (sample weights as multipliers of mean 1, rankfast.learners._base.query_sample_weights)
# multiplies c_q; a held-out query's loss stays its own, unweighted.

def rankrls_pair_weights(qid, C, loss, query_weight=None):
    """c_q of each query (order of first appearance): C/Q, divided by the pair count for loss 2."""
    queries = _queries(qid)
    c = np.full(len(queries), C / max(len(queries), 1))
    if query_weight is not None:
        c = c * np.asarray(query_weight, dtype=np.float64)
    if loss == 2:
        for q, docs in enumerate(queries):
            m = len(docs)
            c[q] = c[q] / (m * (m - 1) / 2) if m > 1 else 0.0
    return queries, c


def rankrls_pairs(X, y, qid, C, loss=1, skip=None, query_weight=None):
    """RankRLS weights by enumerating every pair: (I + 2 Σ c_q D_qᵀD_q) w = 2 Σ c_q D_qᵀ t_q.

    D_q holds x_i − x_j and t_q holds y_i − y_j for the pairs i < j of query q;
    query ``skip`` (an index in order of first appearance) is left out with the
    weights of the others unchanged (the same λ).
    """
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    queries, c = rankrls_pair_weights(qid, C, loss, query_weight)
    d = X.shape[1]
    A = np.eye(d)
    b = np.zeros(d)
    for q, docs in enumerate(queries):
        if q == skip:
            continue
        for a_, i in enumerate(docs):
            for j in docs[a_ + 1:]:
                diff = X[i] - X[j]
                A += 2.0 * c[q] * np.outer(diff, diff)
                b += 2.0 * c[q] * (y[i] - y[j]) * diff
    return np.linalg.solve(A, b)


def rankrls_lqo_retrain(X, y, qid, C, loss=1, query_weight=None):
    """(held-out scores, held-out pair loss per query): one RankRLS retrained without each query."""
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    queries, c = rankrls_pair_weights(qid, 1.0, loss)
    Q = len(queries)
    scores = np.zeros(len(y))
    losses = np.zeros(Q)
    for q, docs in enumerate(queries):
        w = rankrls_pairs(X, y, qid, C, loss, skip=q, query_weight=query_weight)
        s = X[docs] @ w
        scores[docs] = s
        r = y[docs] - s
        beta = c[q] * Q                      # 1, or 1 / pairs of q
        losses[q] = sum(beta * (r[a_] - r[b_]) ** 2
                        for a_ in range(len(docs)) for b_ in range(a_ + 1, len(docs)))
    return scores, losses


def greedy_rankrls_naive(X, y, qid, C, loss=1, k=1, query_weight=None):
    """Greedy selection by retraining: (selected 0-based columns, LQO error after each step).

    Each step tries every unselected column, computes the LQO error (mean
    held-out pair loss per query) of RankRLS on the selected columns plus
    that one by retraining without each query, and keeps the first minimum.
    Columns constant within every query (all-zero ones included) are no
    candidates, as in rankfast.  With ``query_weight`` the fits are weighted
    and the LQO error is the weighted mean of the held-out losses.
    """
    weight = None if query_weight is None else np.asarray(query_weight, dtype=np.float64)
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    candidates = [i for i in range(X.shape[1])
                  if any(np.ptp(X[docs, i]) > 0 for docs in _queries(qid))]
    selected, errors = [], []
    for _ in range(min(k, len(candidates))):
        best, best_error = None, np.inf
        for i in candidates:
            if i in selected:
                continue
            _, losses = rankrls_lqo_retrain(X[:, selected + [i]], y, qid, C, loss, query_weight)
            error = losses.mean() if query_weight is None else weight @ losses / weight.sum()
            if error < best_error:
                best, best_error = i, error
        selected.append(best)
        errors.append(best_error)
    return selected, np.array(errors)


# ---------------------------------------------------------------- erfc sums and RankNCG
# Slow twins of the erfc kernels and of RankNCG's objective, used as test oracles.
#
# Plain NumPy / SciPy, written for obviousness: the erfc sum is the O(NM) double sum,
# pairs are enumerated explicitly.  (To be merged with the twins above.)
#
# Conventions as in rankfast.learners.rankncg: query q holds documents ``starts[q]:starts[q+1]``
# and has weight ``weight[q]``; a pair (l, k) of one query has ``labels[l] > labels[k]``
# (l preferred); d = s_l − s_k with s = X w; κ = √3 / (π √2).

KAPPA = np.sqrt(3.0) / (np.pi * np.sqrt(2.0))


def erfc_sum_direct(sources, weights, targets):
    """E(y_j) = Σ_i q_i erfc(y_j − z_i) by the double sum (SciPy's erfc)."""
    z = np.asarray(sources, dtype=np.float64)
    q = np.asarray(weights, dtype=np.float64)
    y = np.asarray(targets, dtype=np.float64)
    out = np.zeros(len(y))
    with np.errstate(over="ignore"):         # y − z = ±inf is fine: erfc gives 0 or 2
        for a in range(0, len(y), 256):
            out[a:a + 256] = erfc(y[a:a + 256, None] - z[None, :]) @ q
    return out


def ierfc(x):
    """∫_x^∞ erfc(t) dt = e^{−x²}/√π − x erfc(x)."""
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-x * x) / np.sqrt(np.pi) - x * erfc(x)


def erfc_pair_loss(d):
    """ψ(d) = ∫_d^∞ ½ erfc(κu) du = ierfc(κd) / (2κ), the loss whose derivative is −½ erfc(κd)."""
    return ierfc(KAPPA * np.asarray(d, dtype=np.float64)) / (2.0 * KAPPA)


def pairs(labels, starts):
    """Index arrays (l, k, query) of every pair with labels[l] > labels[k] in one query."""
    ls, ks, qs = [], [], []
    for q in range(len(starts) - 1):
        lo, hi = starts[q], starts[q + 1]
        y = np.asarray(labels[lo:hi])
        l, k = np.nonzero(y[:, None] > y[None, :])
        ls.append(l + lo)
        ks.append(k + lo)
        qs.append(np.full(len(l), q))
    if not ls:
        return (np.zeros(0, dtype=np.int64),) * 3
    return np.concatenate(ls), np.concatenate(ks), np.concatenate(qs)


def erfc_rank_objective_pairs(X, labels, starts, weight, w, doc_weight=None):
    """RankNCG's objective ½‖w‖² + Σ_q c_q Σ_pairs v_l ψ(s_l − s_k), pairs enumerated
    (v: doc_weight, all 1 when None)."""
    w = np.asarray(w, dtype=np.float64)
    s = np.asarray(X @ w, dtype=np.float64).ravel()
    l, k, q = pairs(labels, starts)
    v = np.ones(len(s)) if doc_weight is None else np.asarray(doc_weight, dtype=np.float64)
    return 0.5 * float(w @ w) + float(np.sum(np.asarray(weight)[q] * v[l]
                                             * erfc_pair_loss(s[l] - s[k])))


def erfc_rank_gradient_pairs(X, labels, starts, weight, w):
    """Gradient of erfc_rank_objective_pairs: w + Xᵀγ, γ from the pairs one by one."""
    w = np.asarray(w, dtype=np.float64)
    s = np.asarray(X @ w, dtype=np.float64).ravel()
    l, k, q = pairs(labels, starts)
    slope = -0.5 * np.asarray(weight)[q] * erfc(KAPPA * (s[l] - s[k]))   # ψ'(s_l − s_k)
    gamma = np.zeros(len(s))
    np.add.at(gamma, l, slope)
    np.add.at(gamma, k, -slope)
    return w + np.asarray(X.T @ gamma).ravel()


def logistic_rank_objective_pairs(X, labels, starts, weight, w):
    """The paper's eq. 8 as a minimisation: ½‖w‖² + Σ_q c_q Σ_pairs −log σ(s_l − s_k)."""
    w = np.asarray(w, dtype=np.float64)
    s = np.asarray(X @ w, dtype=np.float64).ravel()
    l, k, q = pairs(labels, starts)
    return 0.5 * float(w @ w) - float(np.sum(np.asarray(weight)[q] * log_expit(s[l] - s[k])))


def other_level_sums_brute(z, labels, starts):
    """Σ over documents k of i's query with a different label of erfc(z_i − z_k), for each i."""
    z = np.asarray(z, dtype=np.float64)
    out = np.zeros(len(z))
    for q in range(len(starts) - 1):
        lo, hi = starts[q], starts[q + 1]
        y = np.asarray(labels[lo:hi])
        other = y[:, None] != y[None, :]
        out[lo:hi] = np.sum(np.where(other, erfc(z[lo:hi, None] - z[None, lo:hi]), 0.0), axis=1)
    return out


def brute_query_min_max(X, qid):
    X = np.asarray(X, dtype=np.float64)
    out = np.zeros_like(X)
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        for j in range(X.shape[1]):
            column = X[rows, j]
            low, high = column.min(), column.max()
            out[rows, j] = (column - low) / (high - low) if high > low else 0.0
    return out


def pairs_of_weighted(y, starts, weight):
    """Every pair (i, j, c_q) of a query with y_i > y_j, enumerated."""
    out = []
    for q in range(len(starts) - 1):
        docs = range(starts[q], starts[q + 1])
        out += [(i, j, weight[q]) for i in docs for j in docs if y[i] > y[j]]
    return out
