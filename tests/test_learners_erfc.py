"""rankfast.losses.erfc: the fast erfc sums against the direct sum, within eps."""

import math

import numpy as np
import pytest
import reference_impl as reference
from scipy.special import erfc, erfcinv

from rankfast import erfc_sum
from rankfast._kernels import _erfc
from rankfast.losses.erfc import erfc_parameters

EPSILONS = [1e-2, 1e-4, 1e-6, 1e-9, 1e-12]


DENSE, SORTED = -1, 0          # dense_limit of the kernel: default, or force the sorted layout


def relative_error(fast, exact, weights):
    """max_j |Ê − E| / Σ|q|, the quantity the transform bounds by eps."""
    if len(exact) == 0 or len(weights) == 0:
        return 0.0
    return float(np.max(np.abs(fast - exact)) / np.sum(np.abs(weights)))


def within(error, eps):
    """error ≤ eps, allowing for rounding (the bound is for exact arithmetic)."""
    return error <= eps * (1.0 + 1e-9) + 1e-14


def kernel(z, q, y, eps, layout):
    w, h, coef, L, gap = erfc_parameters(eps).kernel_args()
    out = np.full(len(y), np.nan)
    _erfc.fast_sum(np.ascontiguousarray(z, dtype=float), np.ascontiguousarray(q, dtype=float),
                   np.ascontiguousarray(y, dtype=float), w, h, coef, L, gap, layout, out)
    return out


@pytest.mark.parametrize("eps", EPSILONS + [0.5, 0.99])
def test_parameters_follow_section_5_8(eps):
    P = erfc_parameters(eps)
    a = erfcinv(eps)
    assert P.r_x == pytest.approx(0.1 * a)
    assert P.r == pytest.approx(a + 2 * P.r_x)
    assert P.h == pytest.approx(math.pi / (3 * (P.r + erfcinv(eps / 2))))
    assert P.p == max(1, math.ceil(erfcinv(math.sqrt(math.pi) * P.h * eps / 4) / (2 * P.h)))
    n = 2 * np.arange(P.p) + 1
    assert np.allclose(P.coef, 4 / math.pi * np.exp(-(n * P.h) ** 2) / n)
    # L cells of width 2 r_x reach erfcinv(eps); one more reaches r
    assert P.L * 2 * P.r_x == pytest.approx(a)
    assert (P.L + 1) * 2 * P.r_x == pytest.approx(P.r)


def test_parameters_of_the_paper_example():
    """The paper (Fig. 4): about 12 terms give 1e-6 on [-4, 4]; here p = 15 (reach 4.15)."""
    assert erfc_parameters(1e-6).p == 15


def test_direct_method_equals_numpy_reference():
    rng = np.random.default_rng(1)
    z, q, y = rng.normal(size=400) * 3, rng.normal(size=400), rng.normal(size=300) * 3
    direct = erfc_sum(z, q, y, method="direct")
    assert np.allclose(direct, reference.erfc_sum_direct(z, q, y), rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("eps", EPSILONS)
def test_random_inputs_within_eps(eps):
    rng = np.random.default_rng(int(-math.log10(eps)))
    for _ in range(25):
        n, m = rng.integers(1, 400, size=2)
        scale = rng.choice([1e-3, 0.3, 1.0, 4.0, 30.0])
        z = rng.normal(size=n) * scale + rng.normal() * 10
        y = rng.normal(size=m) * scale + rng.normal() * 10
        q = rng.normal(size=n) * rng.choice([1e-6, 1.0, 1e6])
        exact = reference.erfc_sum_direct(z, q, y)
        assert within(relative_error(erfc_sum(z, q, y, eps), exact, q), eps)


def layouts(rng):
    """(name, sources, weights, targets): the awkward cases."""
    cases = []
    z = 3.3 + rng.normal(size=500) * 1e-3
    cases.append(("one cluster", z, rng.normal(size=500), 3.3 + rng.normal(size=300) * 1e-3))
    z = np.arange(300) * 100.0
    cases.append(("100 apart", z, rng.normal(size=300), z[:250] + rng.normal(size=250) * 3))
    cases.append(("N >> M", rng.normal(size=5000) * 3, rng.normal(size=5000),
                  rng.normal(size=3) * 3))
    cases.append(("M >> N", rng.normal(size=3) * 3, rng.normal(size=3),
                  rng.normal(size=5000) * 3))
    z = np.repeat(rng.normal(size=5), 60)
    cases.append(("repeated", z, rng.normal(size=300), np.repeat(z[::60], 30)))
    cases.append(("targets on sources", z, rng.normal(size=300), z.copy()))
    cases.append(("negative weights", rng.normal(size=400), -rng.uniform(1, 2, size=400),
                  rng.normal(size=200) * 2))
    cases.append(("cancelling weights", np.repeat(rng.normal(size=100), 2),
                  np.tile([1.0, -1.0], 100), rng.normal(size=200)))
    cases.append(("far from zero", 1e6 + rng.normal(size=300), rng.normal(size=300),
                  1e6 + rng.normal(size=300)))
    two_groups = np.concatenate([rng.normal(size=200), 1e9 + rng.normal(size=200)])
    cases.append(("two far groups", two_groups, rng.normal(size=400),
                  np.concatenate([rng.normal(size=100), 1e9 + rng.normal(size=100), [5e8]])))
    extremes = np.array([-1e300, -1e15, 0.0, 1e15, 1e15 + 0.5, 1e300, 1.7e308, -1.7e308])
    cases.append(("huge magnitudes", rng.choice(extremes, size=300), rng.normal(size=300),
                  rng.choice(np.append(extremes, [1.0, 1e15 + 0.25]), size=200)))
    cases.append(("targets beyond sources", rng.normal(size=200), rng.normal(size=200),
                  np.array([-1e3, -7.0, -4.0, 4.0, 7.0, 1e3])))
    cases.append(("uniform wide", rng.uniform(-3e4, 3e4, size=3000), rng.normal(size=3000),
                  rng.uniform(-3e4, 3e4, size=3000)))
    return cases


@pytest.mark.parametrize("eps", [1e-2, 1e-6, 1e-12])
@pytest.mark.parametrize("layout", [DENSE, SORTED])
def test_adversarial_layouts_within_eps(eps, layout):
    for name, z, q, y in layouts(np.random.default_rng(7)):
        exact = reference.erfc_sum_direct(z, q, y)
        error = relative_error(kernel(z, q, y, eps, layout), exact, q)
        assert within(error, eps), (name, error / eps)


def test_both_layouts_agree():
    for name, z, q, y in layouts(np.random.default_rng(8)):
        dense, ordered = kernel(z, q, y, 1e-9, DENSE), kernel(z, q, y, 1e-9, SORTED)
        assert np.abs(dense - ordered).max() <= 2e-9 * np.abs(q).sum(), name


@pytest.mark.parametrize("eps", [0.9, 0.5, 1e-1, 1e-3, 1e-6, 1e-10, 1e-12])
def test_single_source_bound_is_met_at_every_offset(eps):
    """One unit source: the per-source error, ≤ eps everywhere, and nearly reached."""
    worst = 0.0
    for z0 in (0.0, 0.123, -3.3e3, 1e6 + 0.4):
        y = z0 + np.linspace(-12.0, 12.0, 48001)
        worst = max(worst, np.max(np.abs(erfc_sum([z0], [1.0], y, eps) - erfc(y - z0))))
    assert within(worst, eps)
    assert worst > 0.5 * eps           # the far cut-off sits at erfcinv(eps)


def test_large_problem_against_direct_at_sampled_targets():
    rng = np.random.default_rng(11)
    z, y = rng.normal(size=200_000), rng.normal(size=200_000)
    q = rng.uniform(-1, 2, size=200_000)
    fast = erfc_sum(z, q, y, 1e-6)
    pick = rng.choice(len(y), 40, replace=False)
    exact = erfc_sum(z, q, y[pick], method="direct")
    assert within(relative_error(fast[pick], exact, q), 1e-6)


@pytest.mark.parametrize("method", ["fast", "direct"])
def test_no_sources_gives_zeros(method):
    out = erfc_sum([], [], [0.0, 1.0, -5.0], 1e-6, method=method)
    assert out.dtype == np.float64 and np.array_equal(out, np.zeros(3))


@pytest.mark.parametrize("method", ["fast", "direct"])
def test_no_targets_gives_empty(method):
    out = erfc_sum([0.0, 1.0], [1.0, 2.0], [], 1e-6, method=method)
    assert out.shape == (0,) and out.dtype == np.float64


def test_far_sources_count_two_or_zero():
    out = erfc_sum([100.0, -100.0], [3.0, 5.0], [0.0], 1e-6)
    assert out[0] == pytest.approx(2 * 3.0, abs=1e-12)


def test_accepts_lists_and_integers():
    out = erfc_sum([0, 1, 2], [1, 1, 1], [1], 1e-3)
    assert out[0] == pytest.approx(erfc(1) + erfc(0) + erfc(-1), abs=3e-3)


def test_deterministic():
    rng = np.random.default_rng(5)
    z, q, y = rng.normal(size=3000), rng.normal(size=3000), rng.normal(size=3000)
    first = erfc_sum(z, q, y, 1e-8)
    assert np.array_equal(first, erfc_sum(z, q, y, 1e-8))
    assert np.array_equal(kernel(z, q, y, 1e-8, SORTED), kernel(z, q, y, 1e-8, SORTED))


def test_order_of_inputs_does_not_matter_beyond_eps():
    rng = np.random.default_rng(6)
    z, q, y = rng.normal(size=1000), rng.normal(size=1000), rng.normal(size=800)
    perm_s, perm_t = rng.permutation(1000), rng.permutation(800)
    a = erfc_sum(z, q, y, 1e-10)
    b = erfc_sum(z[perm_s], q[perm_s], y[perm_t], 1e-10)
    assert np.abs(a[perm_t] - b).max() <= 2e-10 * np.abs(q).sum()


@pytest.mark.parametrize("args, message", [
    (([[0.0]], [1.0], [0.0]), "one-dimensional"),
    ((0.0, [1.0], [0.0]), "one-dimensional"),
    (([0.0, 1.0], [1.0], [0.0]), "differ in length"),
    (([np.nan], [1.0], [0.0]), "sources must be finite"),
    (([0.0], [np.inf], [0.0]), "weights must be finite"),
    (([0.0], [1.0], [-np.inf]), "targets must be finite"),
])
def test_rejects_bad_arrays(args, message):
    with pytest.raises(ValueError, match=message):
        erfc_sum(*args, 1e-6)


@pytest.mark.parametrize("eps", [0.0, 1.0, -1e-6, 2.0, np.nan, True, "1e-6", None])
def test_rejects_bad_eps(eps):
    with pytest.raises(ValueError, match="eps"):
        erfc_sum([0.0], [1.0], [0.0], eps)


def test_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        erfc_sum([0.0], [1.0], [0.0], 1e-6, method="fmm")


def test_erfcinv_matches_scipy_without_importing_it():
    from scipy.special import erfcinv as scipy_erfcinv

    from rankfast.losses.erfc import erfcinv
    ys = np.concatenate([np.logspace(-300, -1, 600), np.linspace(0.05, 1.0, 200)])
    ours = np.array([erfcinv(float(y)) for y in ys])
    assert np.allclose(ours, scipy_erfcinv(ys), rtol=1e-13, atol=1e-15)
    assert erfcinv(1.0) == 0.0
