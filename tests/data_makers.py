"""Data the tests train and read: generated rankings, svmlight and model texts, fuzzed files."""

import bz2
import gzip
import lzma

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from rankfast import dump_svmlight

ALPHABET = b"0123456789:.+-eExpq id#\t\r\nna_\xef\x00"


SCALES = 10.0 ** np.array([-3.0, -1.0, 0.0, 2.0, 4.0, 6.0, 7.0, 8.0])


WEIGHT_OF = {10: 1, 11: 2, 12: 1, 13: 0, 14: 3, 15: 1}     # 13 left out, 14 three times


SMALL = ("3 qid:1 1:1 2:0.5\n2 qid:1 1:0.5 2:1\n1 qid:1 1:0 2:0.2\n"
         "2 qid:2 1:0.9 2:0.1\n1 qid:2 1:0.3 2:0.8\n0 qid:2 1:0.1 2:0.1\n")


def bits(a):
    """The bytes of an array, so that -0.0 != 0.0 and NaNs compare as bits."""
    a = np.ascontiguousarray(a)
    return a.view(np.uint8).tobytes()


def random_csr(rng, n, d, density=0.4, empty_rows=True):
    """float32 CSR with every kind of value (subnormals, large, negative), some rows empty."""
    X = sp.random(n, d, density=density, format="csr", random_state=rng, dtype=np.float64)
    X.data = (rng.normal(size=X.nnz) * 10.0 ** rng.integers(-44, 38, size=X.nnz)).astype(np.float32)
    if empty_rows and n > 2:
        X = X.tolil()
        for i in {0, n - 1, *rng.integers(0, n, size=n // 5).tolist()}:
            X.rows[i], X.data[i] = [], []
        X = X.tocsr()
    X.sort_indices()
    return X


FUZZ = settings(derandomize=True, max_examples=100, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@st.composite
def mutated(draw, lines, newlines=True):
    text = bytearray(b"\n".join(draw(st.lists(st.sampled_from(lines), min_size=1,
                                                max_size=8 if newlines else 1))))
    for _ in range(draw(st.integers(0, 4))):
        position = draw(st.integers(0, len(text)))
        byte = draw(st.sampled_from(ALPHABET if newlines else ALPHABET.replace(b"\n", b"")))
        action = draw(st.sampled_from(["insert", "replace", "delete"]))
        if action == "insert" or not text or position == len(text):
            text[position:position] = bytes([byte])
        elif action == "replace":
            text[position] = byte
        else:
            del text[position]
    return bytes(text)


def ranking_data(queries=40, per_query=12, d=6, seed=1):
    """Documents whose relevance falls with the distance to a centre: no linear ranker gets it."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((queries * per_query, d)) * 64) / 64        # float32-exact values
    distance = ((X - 0.5) ** 2).sum(axis=1)
    y = np.digitize(-distance, np.quantile(-distance, [0.5, 0.8])).astype(float)
    qid = np.repeat(np.arange(1, queries + 1), per_query)
    return X, y, qid


def raw_scale_features(rng, n=300):
    """LETOR-like raw features: counts in the hundreds of millions beside fractions."""
    return np.column_stack([rng.uniform(0, 2e8, n), rng.uniform(0, 1, n), rng.integers(0, 50, n)])


def interleaved_queries(seed, sizes=(6, 9, 4, 12, 7, 5, 10, 8, 11, 6), d=5, levels=3):
    """Queries of uneven sizes, interleaved rows, labels with some signal."""
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(len(sizes)) * 3 + 10, sizes)
    n = len(qid)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, levels, size=n) + (X[:, 0] > 0.3)
    perm = rng.permutation(n)
    return X[perm], y[perm].astype(np.float64), qid[perm]


def raw_data(seed=0, n=120, d=6, negative=False):
    rng = np.random.default_rng(seed)
    X = rng.lognormal(size=(n, d)) * 10.0 ** rng.uniform(-3, 8, size=d)
    X[rng.random((n, d)) < 0.3] = 0.0                        # sparse-like
    if negative:
        X[:, 1] -= X[:, 1].mean()
    X[:, 2] = 7.0                                            # constant: max = min
    qid = np.sort(rng.integers(0, 9, size=n))
    qid[-1] = 99                                             # a one-document query
    y = rng.integers(0, 3, size=n).astype(np.float64)
    return X, y, qid


def write_data(path, X, y, qid):
    dump_svmlight(X, y, qid=qid, path=str(path))


def letor_like_with_query_level_columns(seed=0):
    """Raw features with LETOR's query-level columns: large values, constant within each query."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 25, size=40)
    qid = np.repeat(np.arange(len(sizes)) * 3 + 11, sizes)
    n = len(qid)
    X = rng.normal(size=(n, 6)) * [1.0, 30.0, 0.01, 1.0, 1.0, 100.0]
    level = rng.gamma(2.0, 60.0, size=(len(sizes), 3))
    X[:, [1, 3, 4]] = level[np.repeat(np.arange(len(sizes)), sizes)]    # query-constant
    y = np.digitize(X[:, 0] - 0.5 * X[:, 2] * 100 + X[:, 5] / 100 + rng.normal(size=n),
                    [-1.0, 0.5, 1.5]).astype(float)
    return X, y, qid


def uneven_queries(seed, sizes=(1, 5, 2, 12, 3, 1, 11, 4), d=6, levels=3, shuffle=True):
    """Uneven queries (one-document ones included), tied labels, a constant feature,
    an all-zero feature, rows of different queries interleaved."""
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(len(sizes)) * 7 + 3, sizes)
    n = len(qid)
    X = rng.normal(size=(n, d))
    X[:, 1] = 2.5                                   # constant (non-zero) feature
    X[:, d - 1] = 0.0                               # never occurs: not a feature at all
    y = rng.integers(0, levels, size=n).astype(np.float64)
    y += X[:, 0] > 0.5                              # some signal
    if shuffle:
        perm = rng.permutation(n)
        X, y, qid = X[perm], y[perm], qid[perm]
    return X, y, qid


def data_lines(n, seed=0):
    rng = np.random.default_rng(seed)
    return "".join(f"{rng.integers(0, 3)} qid:{i // 10 + 1} 1:{rng.random():.6f} "
                   f"3:{rng.random():.6f} 7:{rng.random():.6f}\n" for i in range(n))


def model_text(highest="6", alpha_line="1 1:1.5 4:-2 #", kernel="0", n_sv="2"):
    return (f"SVM-light Version V6.20\n{kernel} # kernel type\n3 # kernel parameter -d \n"
            f"1 # kernel parameter -g \n1 # kernel parameter -s \n1 # kernel parameter -r \n"
            f"empty# kernel parameter -u \n{highest} # highest feature index \n"
            f"8 # number of training documents \n{n_sv} # number of support vectors plus 1 \n"
            f"0 # threshold b, each following line is a SV (starting with alpha*y)\n"
            f"{alpha_line}\n")


def corrupt(kind, payload):
    packed = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind](payload)
    broken = bytearray(packed)
    middle = len(broken) // 2
    broken[middle:middle + 16] = bytes(16 * [0x55])
    return bytes(broken)


def api_data():
    import numpy as np
    rng = np.random.default_rng(0)
    return (rng.random((40, 5)), rng.integers(0, 3, 40).astype(float),
            np.repeat(np.arange(8), 5))


def documents(seed=0, n=40, d=6):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 2)
    X[:, [1, 4]] = 0.0                                  # two empty columns
    X[rng.random(size=(n, d)) < 0.3] = 0.0
    qid = rng.integers(1, 6, size=n)                    # rows of a query not contiguous
    y = rng.integers(0, 3, size=n).astype(float)
    return X, y, qid


def unscaled(one_ranking, seed=0):
    """(X, y, qid): 8 correlated features scaled by 1e-3..1e8, graded labels."""
    rng = np.random.default_rng(seed)
    sizes = [1500] if one_ranking else list(rng.integers(3, 30, size=60))
    n = int(sum(sizes))
    latent = rng.normal(size=(n, 3))
    mixing = rng.normal(size=(3, 8))
    X = latent @ mixing + 0.3 * rng.normal(size=(n, 8))
    X[:, 6] = np.exp(X[:, 6])                                   # heavy-tailed counts
    X[:, 7] = np.abs(X[:, 7]) ** 3
    X *= SCALES
    utility = latent @ np.array([1.0, -0.5, 0.3]) + 0.5 * rng.normal(size=n)
    y = np.digitize(utility, np.quantile(utility, [0.5, 0.75, 0.9, 0.97])).astype(np.float64)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    return X, y, qid


def starts_of(qid):
    return np.r_[0, np.flatnonzero(np.diff(qid)) + 1, len(qid)]


def letor_like_queries(n_queries, seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(6, 15, size=n_queries)
    qid = np.repeat(np.arange(1, n_queries + 1), sizes)
    X = rng.normal(size=(len(qid), 5))
    y = np.digitize(X @ [1.5, -1.0, 0.5, 0.0, 0.2] + 1.5 * rng.normal(size=len(qid)), [0.5, 1.5])
    return X, y.astype(float), qid


def weighted_queries(seed=0, d=4):
    rng = np.random.default_rng(seed)
    qid = np.repeat(sorted(WEIGHT_OF), 7)
    X = rng.normal(size=(len(qid), d))
    y = np.floor(np.clip(X @ rng.normal(size=d) + rng.normal(size=len(qid)), -1, 2.9) + 1)
    return X, y, qid


def repeated(X, y, qid):
    """The data with each query as many times as its weight, copy k of query q as qid 100k + q."""
    parts = [np.flatnonzero(qid == q) for q, w in WEIGHT_OF.items() for _ in range(w)]
    copy = [k for q, w in WEIGHT_OF.items() for k in range(w)]
    rows = np.concatenate(parts)
    ids = np.concatenate([np.full(len(p), 100 * k + qid[p[0]]) for p, k in zip(parts, copy)])
    return X[rows], y[rows], ids


def row_weights(qid):
    return np.array([WEIGHT_OF[q] for q in qid], dtype=np.float64)
