"""--normalize and normalize=: the transforms against brute force, folding, and rank_classify."""
import functools
import io
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from rankfast import (
    GreedyRankRLS,
    RankNCG,
    RankRLS,
    RankSVM,
    RankSVML1,
    dump_svmlight,
    load_svmlight,
    read_model,
)
from rankfast.cli.classify import classify_main
from rankfast.cli.learn import learn_main
from rankfast.data.normalize import Normalizer, log_transform, normalized_scores, query_min_max


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


@pytest.mark.parametrize("negative", [False, True])
def test_query_min_max_matches_brute_force_dense_and_sparse(negative):
    X, _, qid = raw_data(negative=negative)
    expected = brute_query_min_max(X, qid)
    np.testing.assert_allclose(query_min_max(X, qid), expected, rtol=1e-12, atol=1e-15)
    sparse = query_min_max(sp.csr_matrix(X), qid)
    dense = sparse.toarray() if hasattr(sparse, "toarray") else sparse
    np.testing.assert_allclose(dense, expected, rtol=1e-12, atol=1e-15)


def test_query_min_max_rows_of_a_query_need_not_be_contiguous():
    X, _, qid = raw_data()
    order = np.random.default_rng(1).permutation(len(qid))
    np.testing.assert_allclose(query_min_max(X[order], qid[order]),
                               brute_query_min_max(X, qid)[order], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("values, index", [(np.float64, np.int32), (np.float32, np.int64)])
def test_query_min_max_sparse_kernel_matches_brute_force(seed, values, index):
    """Random CSR: negative columns whose absent zeros must be stored, explicit zeros,
    empty rows, one-document queries, rows out of query order and out of column order;
    the result equals the dense brute force exactly, and stores no more than it must."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 60)), int(rng.integers(1, 9))
    X = np.where(rng.random((n, d)) < 0.5, 0.0, rng.normal(size=(n, d)) * 10.0 ** rng.integers(-2, 6, d))
    X[:, 0] = np.abs(X[:, 0])                                # a non-negative column
    X[rng.random(n) < 0.1] = 0.0                             # empty rows
    X = X.astype(values)
    qid = rng.integers(0, max(1, n // 4), n)                 # not contiguous, some of one document
    csr = sp.csr_matrix(X)
    csr.data[rng.random(csr.nnz) < 0.1] = 0.0                # explicit zeros
    for row in range(n):                                     # columns out of order within rows
        lo, hi = csr.indptr[row], csr.indptr[row + 1]
        flip = rng.permutation(hi - lo)
        csr.indices[lo:hi], csr.data[lo:hi] = csr.indices[lo:hi][flip], csr.data[lo:hi][flip]
    csr.indices, csr.indptr = csr.indices.astype(index), csr.indptr.astype(index)
    X = csr.toarray()
    expected = brute_query_min_max(X.astype(np.float64), qid)
    result = query_min_max(csr, qid)
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result.toarray(), expected)
    absent = ~_stored(csr)                                   # zeros that only scaling can store
    assert result.nnz == csr.nnz + np.count_nonzero(expected[absent])
    np.testing.assert_array_equal(query_min_max(X, qid), expected)   # the dense kernel


def _stored(csr):
    mask = np.zeros(csr.shape, dtype=bool)
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    mask[rows, csr.indices] = True
    return mask


def test_query_min_max_of_no_rows_and_no_columns():
    for shape in ((0, 3), (4, 0)):
        X = np.zeros(shape)
        qid = np.arange(shape[0])
        assert query_min_max(X, qid).shape == shape
        assert query_min_max(sp.csr_matrix(X), qid).shape == shape


def test_log_keeps_signs_and_zeros():
    values = np.array([-1e8, -1.0, 0.0, 1e-3, 2.3e8])
    np.testing.assert_allclose(log_transform(values), np.sign(values) * np.log1p(np.abs(values)))
    assert log_transform(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("make", [lambda k: RankSVM(C=1.0, normalize=k, tol=1e-10),
                                  lambda k: RankNCG(C=1.0, normalize=k, tol=1e-10,
                                                    erfc="direct"),
                                  lambda k: RankSVML1(C=1.0, normalize=k, tol=1e-8),
                                  lambda k: RankRLS(C=1.0, normalize=k)])
def test_zscore_is_folded_into_the_weights(make):
    """normalize="zscore" scores raw X as the plain learner scores X / σ."""
    X, y, qid = raw_data()
    folded = make("zscore").fit(X, y, qid)
    sigma = X.std(axis=0)
    scaled = np.where(sigma > 0, X / np.where(sigma > 0, sigma, 1.0), 0.0)
    plain = make("none").fit(scaled, y, qid)
    np.testing.assert_allclose(folded.predict(X), plain.predict(scaled), rtol=1e-6,
                               atol=1e-9 * np.abs(plain.predict(scaled)).max())
    assert folded.to_model().metadata["normalize"] == "zscore"


@pytest.mark.parametrize("kind, transform", [("query", brute_query_min_max),
                                             ("log", lambda X, qid: log_transform(X))])
def test_query_and_log_models_normalise_what_they_score(kind, transform):
    X, y, qid = raw_data()
    model = RankSVM(C=1.0, normalize=kind).fit(X, y, qid)
    plain = RankSVM(C=1.0).fit(transform(X, qid), y, qid)
    np.testing.assert_allclose(model.weights_, plain.weights_, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(model.predict(X, qid), plain.predict(transform(X, qid)),
                               rtol=1e-9, atol=1e-12)
    stored = model.to_model()                       # the file's float32 weights
    assert stored.metadata["normalize"] == kind
    np.testing.assert_allclose(stored.predict(X, qid), model.predict(X, qid), rtol=1e-5,
                               atol=1e-6 * np.abs(model.predict(X, qid)).max())


def test_query_model_needs_the_queries():
    X, y, qid = raw_data()
    model = RankSVM(C=1.0, normalize="query").fit(X, y, qid)
    with pytest.raises(ValueError, match="qid"):
        model.predict(X)
    with pytest.raises(ValueError, match="qid"):
        model.to_model().predict(X)


def test_cross_validation_normalises_once():
    """A C list under normalize="log" cross-validates on the transformed data, as given once."""
    X, y, qid = raw_data(n=300)
    model = RankSVM(C=[0.1, 1.0, 10.0], normalize="log", cv=3).fit(X, y, qid)
    plain = RankSVM(C=[0.1, 1.0, 10.0], cv=3).fit(log_transform(X), y, qid)
    assert model.C_ == plain.C_
    np.testing.assert_allclose(model.cv_result_.values, plain.cv_result_.values)


def test_greedy_accepts_normalize():
    X, y, qid = raw_data(n=300)
    model = GreedyRankRLS(C=1.0, k=3, normalize="query").fit(X, y, qid)
    plain = GreedyRankRLS(C=1.0, k=3).fit(brute_query_min_max(X, qid), y, qid)
    np.testing.assert_array_equal(model.feature_ids_, plain.feature_ids_)


def test_normalized_scores_are_sparse_exact():
    """O(nnz) scores of a query equal scoring its densified, normalised rows."""
    X, _, qid = raw_data(negative=True)
    rows = np.flatnonzero(qid == qid[0])
    part = sp.csr_matrix(X[rows])
    ids = np.array([1, 2, 3, 5], dtype=np.int64)              # feature 4 and 6 weigh nothing
    weights = np.array([0.5, -2.0, 3.0, 1e-3])
    got = normalized_scores(part.indptr, part.indices, part.data, ids, weights, 0.25, "query")
    dense = brute_query_min_max(part.toarray().astype(np.float32).astype(np.float64),
                                np.zeros(len(rows)))
    expected = dense[:, ids - 1] @ weights - 0.25
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def write_data(path, X, y, qid):
    dump_svmlight(X, y, qid=qid, path=str(path))


@pytest.mark.parametrize("kind", ["query", "log"])
def test_rank_classify_applies_the_model_s_normalisation(tmp_path, capsys, monkeypatch, kind):
    X, y, qid = raw_data(n=200)
    train, test = tmp_path / "train.dat", tmp_path / "test.dat"
    write_data(train, X[:150], y[:150], qid[:150])
    write_data(test, X[150:], y[150:], qid[150:])
    model_path, predictions = tmp_path / "model", tmp_path / "predictions"
    assert learn_main(["-c", "1", "--normalize", kind, str(train), str(model_path)]) == 0
    header = model_path.read_text().splitlines()[1]
    assert f"normalize={kind}" in header and "not svm_rank_classify" in header
    # blocks of 7 documents: queries straddle them and are put back together
    from rankfast.io import _stream as reader
    monkeypatch.setattr(reader, "iter_svmlight", functools.partial(reader.iter_svmlight, rows=7))
    assert classify_main([str(test), str(model_path), str(predictions)]) == 0
    got = np.loadtxt(predictions)
    stored = read_model(str(model_path))
    from rankfast import load_svmlight
    data = load_svmlight(str(test))
    np.testing.assert_allclose(got, stored.predict(data.X, data.qid), atol=1e-7)
    fitted = RankSVM(C=1.0, normalize=kind).fit(
        load_svmlight(str(train), dtype="float32").features, y[:150], qid[:150])
    np.testing.assert_allclose(got, fitted.predict(data.X, data.qid), rtol=1e-5, atol=1e-6)


def test_zscore_model_file_is_plain(tmp_path):
    X, y, qid = raw_data()
    train, model_path = tmp_path / "train.dat", tmp_path / "model"
    write_data(train, X, y, qid)
    assert learn_main(["-c", "1", "--normalize", "zscore", str(train), str(model_path)]) == 0
    assert "normalize" not in model_path.read_text().splitlines()[1]
    model = read_model(str(model_path))
    fitted = RankSVM(C=1.0, normalize="zscore").fit(X.astype(np.float32), y, qid)
    np.testing.assert_allclose(model.predict(X), fitted.predict(X), rtol=1e-5,
                               atol=1e-6 * np.abs(fitted.predict(X)).max())


def test_rank_classify_refuses_a_normalisation_it_does_not_know(tmp_path, capsys):
    X, y, qid = raw_data()
    train, model_path = tmp_path / "train.dat", tmp_path / "model"
    write_data(train, X, y, qid)
    assert learn_main(["-c", "1", "--normalize", "log", str(train), str(model_path)]) == 0
    model_path.write_text(model_path.read_text().replace("normalize=log", "normalize=rank"))
    predictions = tmp_path / "predictions"
    assert classify_main([str(train), str(model_path), str(predictions)]) == 1
    err = capsys.readouterr().err
    assert str(model_path) in err and "normalize=rank" in err and "Traceback" not in err
    assert not predictions.exists()


def test_normalize_usage_errors(tmp_path, capsys):
    X, y, qid = raw_data()
    train = tmp_path / "train.dat"
    write_data(train, X, y, qid)
    assert learn_main(["--normalize", "minmax", str(train), str(tmp_path / "m")]) == 2
    assert learn_main(["--normalize", "zscore", "-t", "2", str(train), str(tmp_path / "m")]) == 2
    assert "with -t 1, 2 or 3 use --normalize query or log" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
    with pytest.raises(Exception, match="normalize"):
        Normalizer("minmax")


def test_a_note_suggests_normalize_when_scales_differ(tmp_path, capsys):
    X, y, qid = raw_data()
    train = tmp_path / "train.dat"
    write_data(train, X, y, qid)
    assert learn_main(["-v", "1", str(train), str(tmp_path / "m")]) == 0
    assert "--normalize" in capsys.readouterr().err
    write_data(train, brute_query_min_max(X, qid), y, qid)
    assert learn_main(["-v", "1", str(train), str(tmp_path / "m")]) == 0
    assert "--normalize" not in capsys.readouterr().err


def test_scale_spread_is_the_ratio_of_the_columns_largest_magnitudes():
    from rankfast.data.normalize import scale_spread
    from rankfast.data.sparse import CSR
    X, _, _ = raw_data(negative=True)
    largest = np.abs(X).max(axis=0)
    expected = largest[largest > 0].max() / largest[largest > 0].min()
    assert scale_spread(X) == pytest.approx(expected, rel=1e-12)
    sparse = sp.csr_matrix(X)
    assert scale_spread(sparse) == pytest.approx(expected, rel=1e-12)
    wide = CSR(sparse.data, sparse.indices.astype(np.int64), sparse.indptr.astype(np.int64),
               (X.shape[0], 2**40))                      # the unique path: no array of 2^40
    assert scale_spread(wide) == pytest.approx(expected, rel=1e-12)


def test_score_scorers_and_grid_search_give_a_per_query_model_its_queries():
    from rankfast import RankSVM
    from rankfast.metrics import map_scorer, mean_average_precision, ndcg, ndcg_scorer
    from rankfast.model_selection import GridSearch
    rng = np.random.default_rng(13)
    X = rng.uniform(0, 1, (60, 3)) * [1.0, 1e6, 10.0]
    y = (X[:, 0] > 0.5).astype(float)
    qid = np.repeat(np.arange(6), 10)
    ranker = RankSVM(C=1.0, normalize="query").fit(X, y, qid)
    expected = ndcg(ranker.predict(X, qid), y, qid, k=10)
    assert ranker.score(X, y, qid) == pytest.approx(expected)
    assert ranker.score(X, y, group=[10] * 6) == pytest.approx(expected)
    scores = ranker.predict(X, qid)
    assert ndcg_scorer(10)(ranker, X, y, qid=qid) == pytest.approx(ndcg(scores, y, qid, k=10))
    assert map_scorer()(ranker, X, y, qid=qid) == pytest.approx(mean_average_precision(scores, y, qid))
    search = GridSearch(RankSVM(normalize="query"), {"C": [0.1, 1.0]}, cv=3).fit(X, y, qid)
    np.testing.assert_array_equal(search.predict(X, qid), search.best_estimator_.predict(X, qid))
    assert ndcg_scorer(10)(search, X, y, qid=qid) == pytest.approx(
        ndcg(search.predict(X, qid), y, qid, k=10))
    with pytest.raises(ValueError, match="qid must hold one query id per row"):
        ranker.to_model().predict(X, qid[:-1])


def test_rank_classify_normalises_a_split_query_whole_where_it_can(tmp_path, capsys, monkeypatch):
    X, y, qid = raw_data(n=120)
    train, test = tmp_path / "train.dat", tmp_path / "test.dat"
    write_data(train, X, y, qid)
    split = np.r_[np.arange(0, 10), np.arange(60, 70), np.arange(10, 20)]      # qid 0's lines, twice
    with pytest.warns(UserWarning, match="svm_rank_learn refuses it"):   # on purpose
        write_data(test, X[split], y[split],
                   np.r_[np.zeros(10), np.ones(10), np.zeros(10)].astype(int))
    assert learn_main(["-v", "0", "--normalize", "query", str(train), str(tmp_path / "m")]) == 0
    capsys.readouterr()
    assert classify_main([str(test), str(tmp_path / "m"), str(tmp_path / "p")]) == 0
    err = capsys.readouterr().err
    assert "the lines of qid 0 are not contiguous" in err and "--normalize query scored" not in err
    data = load_svmlight(str(test))
    whole = read_model(str(tmp_path / "m")).predict(data.X, data.qid)      # qid 0 as one query
    np.testing.assert_allclose(np.loadtxt(tmp_path / "p"), whole, rtol=0, atol=5e-9)
    runs = read_model(str(tmp_path / "m")).predict(data.X, [0] * 10 + [1] * 10 + [2] * 10)
    assert np.abs(whole - runs).max() > 1e-3                                # and it matters
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(test.read_bytes()))))
    assert classify_main(["-", str(tmp_path / "m"), str(tmp_path / "p_pipe")]) == 0
    assert "--normalize query scored each run of qid 0's lines as its own query" in \
        capsys.readouterr().err                                         # a pipe: read once
    np.testing.assert_allclose(np.loadtxt(tmp_path / "p_pipe"), runs, rtol=0, atol=5e-9)


@pytest.mark.parametrize("values", [np.float32, np.float64])
def test_zscore_scales_of_sparse_columns_match_numpy_std(values):
    """σ per column of a CSR (absent entries count as 0) as numpy's two-pass std gives it,
    also for a column of large mean and small spread, where E[x²] − E[x]² cancels
    (1e8 ± 0.01 in float64: the one-pass formula gave σ = 0)."""
    from rankfast.data.normalize import Normalizer
    rng = np.random.default_rng(7)
    X = np.where(rng.random((300, 5)) < 0.4, 0.0, rng.normal(size=(300, 5)) * [1, 1e-3, 1e6, 5, 1])
    X[:, 3] = 1e8 + rng.normal(size=300) * 0.01                # stored in every row
    X[:, 4] = 0.0                                              # nothing stored: σ 0
    X = X.astype(values)
    expected = X.astype(np.float64).std(axis=0)
    scale = Normalizer("zscore").fit(sp.csr_matrix(X)).scale
    np.testing.assert_allclose(scale, expected, rtol=1e-9, atol=0)
    assert scale[4] == 0.0


def test_query_min_max_of_a_huge_feature_index_takes_memory_of_the_entries():
    """A file naming feature 2**31 - 1: the kernels' scratch (one value a column) is for the
    columns that occur, not for every index up to it (2**31 of them: 16 GB)."""
    from rankfast.data.sparse import CSR
    wide = 2**31 - 1
    data = np.array([1.0, 2.0, 3.0, -3.0, 1.0])
    indices = np.array([0, 4, 0, wide - 1, 4], dtype=np.int64)
    X = CSR(data, indices, np.array([0, 2, 4, 5]), (3, wide))
    scaled = query_min_max(X, [1, 1, 1])
    used = [0, 4, wide - 1]
    dense = np.zeros((3, 3))
    rows = np.repeat(np.arange(3), np.diff(X.indptr))
    dense[rows, [used.index(j) for j in indices]] = data
    expected = brute_query_min_max(dense, np.array([1, 1, 1]))
    got = np.zeros((3, 3))
    rows = np.repeat(np.arange(3), np.diff(scaled.indptr))
    got[rows, [used.index(j) for j in scaled.indices]] = scaled.data
    np.testing.assert_array_equal(got, expected)
    assert scaled.shape == (3, wide) and scaled.nnz == 7      # two absent zeros of column 2**31 - 2


def test_query_min_max_and_zscore_of_rows_taken_from_a_larger_csr():
    """indptr[0] > 0 and strided data: the entries before the rows are not the rows'."""
    from rankfast.data.sparse import CSR
    parent = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 9.0], [4.0, 0.0], [5.0, 7.0]])
    full = sp.csr_matrix(parent)
    strided = np.repeat(full.data, 2)[::2]                     # the same values, strided
    part = CSR(strided, full.indices, full.indptr[3:], (2, 2))  # rows 3 and 4 of the parent
    np.testing.assert_array_equal(query_min_max(part, [1, 1]).toarray(),
                                  brute_query_min_max(parent[3:], np.array([1, 1])))
    np.testing.assert_allclose(Normalizer("zscore").fit(part).scale, parent[3:].std(axis=0),
                               rtol=1e-12)


def test_query_min_max_refuses_query_ids_that_do_not_match_the_rows():
    with pytest.raises(ValueError, match="2 query ids for 3 rows"):
        query_min_max(np.arange(6.0).reshape(3, 2), [1, 1])
    with pytest.raises(ValueError, match="4 query ids for 3 rows"):
        query_min_max(sp.csr_matrix(np.eye(3)), [1, 1, 1, 1])


def test_query_min_max_takes_a_list_of_lists():
    np.testing.assert_array_equal(query_min_max([[1, 2], [3, 0], [5, 5]], [1, 1, 2]),
                                  [[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
