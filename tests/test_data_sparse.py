"""rankfast.data.sparse: the CSR type, its conversions to and from scipy, and its products."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from rankfast.data.sparse import CSR, as_csr, compact_columns, issparse, scipy_csr
from rankfast.data.validation import check_features

SHAPES = [(0, 3), (1, 1), (1, 5), (7, 1), (30, 12), (200, 40)]


ROOT = Path(__file__).resolve().parents[1]


def random_csr(rng, n, d, density, value_type=np.float64, index_type=np.int32):
    """A CSR with empty rows and columns, duplicates-free, and its dense twin."""
    dense = np.where(rng.random((n, d)) < density, rng.standard_normal((n, d)), 0.0)
    dense = dense.astype(value_type)
    S = sp.csr_matrix(dense)
    X = CSR(S.data, S.indices.astype(index_type), S.indptr.astype(index_type), S.shape)
    return X, dense


@pytest.mark.parametrize("value_type", [np.float32, np.float64])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize("shape", SHAPES)
def test_rows_transpose_and_products_match_dense_numpy(shape, index_type, value_type):
    rng = np.random.default_rng(sum(shape))
    X, dense = random_csr(rng, *shape, density=0.3, value_type=value_type, index_type=index_type)
    assert X.nnz == np.count_nonzero(dense) and X.dtype == value_type
    assert np.array_equal(X.toarray(), dense)
    assert np.array_equal(X.T.toarray(), dense.T)
    assert X.T.shape == dense.T.shape and X.T.indptr.dtype == index_type
    n = shape[0]
    for rows in (rng.permutation(n), rng.integers(0, n, 2 * n) if n else np.zeros(0, int),
                 slice(1, None, 2), np.arange(n) % 3 == 0, [-1] if n else []):
        picked = X[rows]
        assert np.array_equal(picked.toarray(), dense[rows])
        assert picked.dtype == value_type and picked.indices.dtype == index_type
    v = rng.standard_normal(shape[1])
    assert np.allclose(X @ v, dense.astype(np.float64) @ v, rtol=1e-12, atol=1e-12)
    assert np.array_equal(X @ v, sp.csr_matrix(dense.astype(np.float64)) @ v)   # same order of sums


@pytest.mark.parametrize("value_type", [np.float32, np.float64])
def test_group_square_sums_match_the_dense_formula(value_type):
    """Σ_g w_g (Σ_{i in g} x_ij)² with groups in any row order, empty groups and repeated columns."""
    rng = np.random.default_rng(11)
    for n, d in [(1, 1), (9, 4), (60, 25)]:
        X, dense = random_csr(rng, n, d, density=0.4, value_type=value_type)
        order = rng.permutation(n)
        cuts = np.sort(rng.integers(0, n + 1, 4))
        starts = np.concatenate(([0], cuts, [n]))            # some groups are empty
        weights = rng.random(len(starts) - 1)
        expected = np.zeros(d)
        for g in range(len(starts) - 1):
            expected += weights[g] * dense[order[starts[g]:starts[g + 1]]].astype(float).sum(axis=0) ** 2
        assert np.allclose(X.group_square_sums(order, starts, weights), expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("value_type", [np.float32, np.float64])
def test_nested_square_sums_are_the_groups_and_their_outer_groups_sums(value_type):
    """One pass for the groups and the outer groups they make up: the dense formula for each,
    with empty groups, outer groups of one group, and a last group that ends its outer group."""
    rng = np.random.default_rng(12)
    for n, d in [(1, 1), (9, 4), (60, 25)]:
        X, dense = random_csr(rng, n, d, density=0.4, value_type=value_type)
        order = rng.permutation(n)
        cuts = np.sort(rng.integers(0, n + 1, 5))
        starts = np.concatenate(([0], cuts, [n]))
        n_groups = len(starts) - 1
        outer = np.sort(rng.integers(0, 3, n_groups))            # consecutive groups share one
        weights, outer_weights = rng.random(n_groups), rng.random(3)
        rows = [dense[order[starts[g]:starts[g + 1]]].astype(float) for g in range(n_groups)]
        expected = sum(weights[g] * rows[g].sum(axis=0) ** 2 for g in range(n_groups))
        expected_outer = sum(outer_weights[o] * sum(rows[g].sum(axis=0) for g in
                                                    np.flatnonzero(outer == o)) ** 2
                             for o in np.unique(outer))
        got, got_outer = X.nested_square_sums(order, starts, outer, weights, outer_weights)
        assert np.allclose(got, expected, rtol=1e-12, atol=0)
        assert np.allclose(got_outer, expected_outer, rtol=1e-12, atol=0)


def test_transpose_keeps_each_column_in_row_order():
    X = CSR(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1, 0, 1, 1]), np.array([0, 2, 2, 4]), (3, 2))
    T = X.T
    assert T.indptr.tolist() == [0, 1, 4]
    assert T.indices.tolist() == [0, 0, 2, 2] and T.data.tolist() == [2.0, 1.0, 3.0, 4.0]


def test_only_rows_can_be_selected():
    X, _ = random_csr(np.random.default_rng(0), 4, 3, 0.5)
    with pytest.raises(IndexError):
        X[0, 1]
    with pytest.raises(IndexError):
        X[5]
    with pytest.raises(ValueError, match="dimension mismatch"):
        X @ np.ones(4)


def test_scipy_and_csr_convert_both_ways_sharing_arrays():
    S = sp.random(20, 8, density=0.3, format="csr", random_state=1)
    X = as_csr(S)
    assert np.shares_memory(X.data, S.data) and issparse(X) and issparse(S) and not issparse(S.toarray())
    back = X.to_scipy()
    assert np.shares_memory(back.data, S.data) and (back != S).nnz == 0
    assert (scipy_csr(X, dtype=np.float32) != S.astype(np.float32)).nnz == 0
    C = as_csr(S.tocsc())                       # any scipy format
    assert np.array_equal(C.toarray(), S.toarray())


def test_estimators_take_csr_as_they_take_scipy():
    """check_features turns every sparse input into CSR; a learner fits the same model from either."""
    from rankfast import RankSVM
    rng = np.random.default_rng(3)
    S = sp.random(60, 10, density=0.4, format="csr", random_state=3)
    y, qid = rng.integers(0, 3, 60), np.repeat(np.arange(6), 10)[rng.permutation(60)]
    X, _ = check_features(S)
    assert isinstance(X, CSR) and np.shares_memory(X.data, S.data)
    a = RankSVM(C=1.0).fit(S, y, qid)
    b = RankSVM(C=1.0).fit(as_csr(S), y, qid)
    assert np.array_equal(a.weights_, b.weights_) and np.array_equal(a.predict(S), b.predict(as_csr(S)))


def test_compact_columns_drops_empty_columns_without_scipy_types():
    X, dense = random_csr(np.random.default_rng(5), 30, 20, 0.05)
    C, used = compact_columns(X)
    assert isinstance(C, CSR) and np.array_equal(C.toarray(), dense[:, used])
    assert np.array_equal(used, np.flatnonzero(np.abs(dense).sum(axis=0)))


@pytest.mark.parametrize("algorithm", ["prsvm", "svmrank", "rankncg"])
def test_linear_learners_train_from_a_file_without_importing_scipy(tmp_path, algorithm):
    """The start-up guard of rank_learn: scipy costs more to import than a small file to train on.

    The file has queries split in several runs (rows regrouped) and a wide, sparse
    feature space (columns compacted), so every step of the path is taken.
    """
    rng = np.random.default_rng(7)
    lines = [f"{rng.integers(0, 3)} qid:{q} " + " ".join(
        f"{j}:{rng.random():.3f}" for j in sorted(rng.choice(3000, 4, replace=False) + 1))
        for q in rng.integers(1, 5, 80)]
    data = tmp_path / "train.dat"
    data.write_text("\n".join(lines) + "\n")
    code = ("import sys\nfrom rankfast.cli.learn import learn_main\n"
            "rc = learn_main(sys.argv[1:])\n"
            "print(' '.join(sorted(sys.modules)), file=sys.stderr)\nsys.exit(rc)\n")
    result = subprocess.run([sys.executable, "-c", code, "-v", "0", "-a", algorithm, "-c", "1",
                             str(data), str(tmp_path / "model")], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert result.returncode == 0, result.stderr
    modules = set(result.stderr.split())
    assert "rankfast.learners._linear" in modules
    assert not {m for m in modules if m == "scipy" or m.startswith("scipy.")}
    assert "numpy.f2py" not in modules


@pytest.mark.parametrize("n_threads", [1, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_all_finite_finds_any_nan_or_inf(dtype, n_threads, every_thread_counts):
    from rankfast.data.sparse import all_finite
    values = np.arange(100).astype(dtype)
    assert all_finite(values, n_threads) and all_finite(values[:0], n_threads)
    assert all_finite(values.reshape(10, 10), n_threads)
    if dtype != np.int64:
        for bad in (np.nan, np.inf, -np.inf):
            for at in (0, 57, 99):
                spoiled = values.copy()
                spoiled[at] = bad
                assert not all_finite(spoiled, n_threads)
                assert not all_finite(spoiled.reshape(10, 10).T, n_threads)
