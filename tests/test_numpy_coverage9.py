"""numpy functions users call on Tensors that were refused ("np.X has no rule for Tensors"):
values and dtypes against numpy itself, derivatives against central differences (float64) and
JAX's jnp, a jit and a vmap case each, and the errors for what stays refused.

Tolerances: 0 (bit-equal) where our composite does numpy's own arithmetic in numpy's order;
otherwise the reason is stated (a sum or product accumulated in another order: 1e-12 relative
in float64, 1e-5 in float32; cbrt: numpy's libm against a pow plus a Newton step, 1 ulp).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_dag as ad

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
# Float64 in JAX for the comparisons, restored after each test (tests/conftest.py's jax_x64): set for the
# whole process, it changed other files' JAX integer results (from_jax tests failed by test order).
pytestmark = pytest.mark.usefixtures("jax_x64")

RNG = np.random.default_rng(9)
X = RNG.normal(size=(4, 5)) * 3
XN = X.copy()
XN[0, 1] = XN[2, :2] = XN[3, :] = np.nan


def T(a):
    """A Tensor that requires a gradient when it can (an integer Tensor that did would become float64)."""
    a = np.asarray(a)
    return ad.Tensor(a, requires_grad=np.issubdtype(a.dtype, np.floating))


def value(r):
    assert isinstance(r, ad.Tensor), f"expected a recorded Tensor, got {type(r).__name__}"
    return r.value


def same(ours, theirs, rtol=0.0, _inner=False):
    """``ours`` (a Tensor, or a tuple led by one) equal numpy's ``theirs`` in dtype, shape and value.

    (Only later members of a tuple, such as unique's counts, may be plain arrays, as numpy's are.)
    """
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for k, (o, t) in enumerate(zip(ours, theirs)):
            same(o, t, rtol, _inner=k > 0)
        return
    got = ours if _inner and isinstance(ours, np.ndarray) else value(ours)
    theirs = np.asarray(theirs)
    assert got.dtype == theirs.dtype and got.shape == theirs.shape, (got.dtype, theirs.dtype, got.shape, theirs.shape)
    if rtol == 0.0:
        np.testing.assert_array_equal(got, theirs)
    else:
        np.testing.assert_allclose(got, theirs, rtol=rtol, atol=rtol)


def quiet(f, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return f(*args, **kwargs)


# ---------------------------------------------------------------------------- floating point


SPECIAL = np.array([0.0, -0.0, 1.0, 8.0, -27.0, 0.5, 5e-324, 2.2e-308, np.inf, -np.inf, np.nan, 3.7e300, -1e-300])
WIDE = np.concatenate([RNG.normal(size=300) * 10.0 ** RNG.integers(-300, 300, 300), SPECIAL])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", [np.spacing, np.angle, lambda x: np.angle(x, deg=True), lambda x: np.frexp(x),
                                lambda x: np.modf(x), lambda x: np.ldexp(x, np.int64(-30)),
                                lambda x: np.ldexp(x, np.array([3, -1100, 1000, 0] * 78 + [1])[:x.size])])
def test_bit_exact_float_functions(fn, dtype):
    x = WIDE.astype(dtype)
    same(quiet(fn, T(x)), quiet(fn, x))


@pytest.mark.parametrize("dtype, ulps", [(np.float64, 2), (np.float32, 2)])
def test_cbrt_within_an_ulp_of_numpys(dtype, ulps):
    # numpy calls libm's cbrt (float32's itself is off by one: cbrt(27f) = 2.9999998); ours is a pow
    # corrected by a Newton step. 1 ulp apart with numpy's AVX-512 pow; 2 in float64 with its baseline
    # (no AVX2) loops, NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR".
    x = WIDE.astype(dtype)
    got, want = value(quiet(np.cbrt, T(x))), np.cbrt(x)
    assert got.dtype == want.dtype
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    assert np.all(np.abs(got[finite] - want[finite]) <= ulps * np.spacing(np.abs(want[finite]).astype(dtype)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("fn", [np.copysign, np.heaviside, np.float_power])
def test_binary_float_functions(fn, dtype):
    x = (WIDE[:40] if dtype != np.int64 else X.ravel() * 5).astype(dtype)[:, None]
    # float_power is ad.power in float64: np.power squares for an exponent 2 where float_power's C pow
    # rounds once more (1 ulp apart); ad.power(-inf, 0.5) is NaN, as np.power's, where pow gives inf.
    tol = 4e-16 if fn is np.float_power else 0.0
    if fn is np.float_power:
        x = np.abs(x)
    y = np.array([-1.5, 0.0, -0.0, 2.0, np.nan, np.inf]).astype(dtype if dtype != np.int64 else np.float64)
    same(quiet(fn, T(x), y), quiet(fn, x, y), tol)
    same(quiet(fn, T(x), 0.5), quiet(fn, x, 0.5), tol)
    same(quiet(fn, x, T(y)), quiet(fn, x, y), tol)


def test_float_functions_derivatives_match_jax():
    x = np.array([-3.0, -0.7, 0.4, 2.5, 8.0])
    pairs = [(np.cbrt, jnp.cbrt), (lambda t: np.copysign(t, -1.0), lambda t: jnp.copysign(t, -1.0)),
             (lambda t: np.float_power(t * t, 1.5), lambda t: jnp.float_power(t * t, 1.5)),
             (lambda t: np.ldexp(t, 3), lambda t: jnp.ldexp(t, 3)), (lambda t: np.frexp(t)[0], lambda t: jnp.frexp(t)[0]),
             (lambda t: np.modf(t)[0], lambda t: jnp.modf(t)[0]), (lambda t: np.modf(t)[1], lambda t: jnp.modf(t)[1]),
             (lambda t: np.heaviside(t, 0.5), lambda t: jnp.heaviside(t, 0.5)), (np.angle, jnp.angle)]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ad.grad(lambda t: ad.sum(ours(t)))(x), jax.grad(lambda t: theirs(t).sum())(x),
                                   rtol=1e-13, atol=1e-15)


def test_float_function_edges_follow_jax():
    assert ad.grad(lambda t: np.cbrt(t))(0.0) == np.inf == jax.grad(jnp.cbrt)(0.0)
    # heaviside's h0 gets the derivative where x = 0; copysign's sign operand none
    h = ad.grad(lambda h0: ad.sum(np.heaviside(np.array([-1.0, 0.0, 0.0, 2.0]), h0)))(np.float64(0.5))
    assert h == 2.0
    g = ad.grad(lambda y: ad.sum(np.copysign(np.array([2.0, -3.0]), y)))(np.array([-1.0, 1.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0])
    np.testing.assert_array_equal(ad.grad(lambda y: np.float_power(0.0, y))(2.0), jax.grad(lambda y: jnp.float_power(0.0, y))(2.0))


def test_float_functions_check_grads():
    x = np.array([-2.3, -0.6, 0.45, 1.7, 5.2])       # (off the integers, where modf jumps)
    for f in (np.cbrt, lambda t: np.float_power(t * t, 0.75), lambda t: np.copysign(t, np.array([1.0, -1.0, 1.0, -1.0, 1.0])),
              lambda t: np.ldexp(t, 5), lambda t: np.frexp(t)[0], lambda t: np.modf(t)[0]):
        ad.check_grads(f, (x,))


# ---------------------------------------------------------------------------- statistics

METHODS = ["linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf", "averaged_inverted_cdf",
           "closest_observation", "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased",
           "normal_unbiased"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_quantile_bit_equal_to_numpy(method, dtype):
    # the same order statistics and numpy's own lerp (from the nearer end, weak q in float32): 0 tolerance
    x = (X * 4).astype(dtype)
    for q in (0.3, [0.0, 0.25, 0.5, 1.0], 1, np.float32(0.7)):
        for axis, keepdims in ((None, False), (1, True), ((0, 1), False), (0, False)):
            same(np.quantile(T(x), q, axis=axis, method=method, keepdims=keepdims),
                 np.quantile(x, q, axis=axis, method=method, keepdims=keepdims))
    same(np.percentile(T(x), [10, 90], axis=1, method=method), np.percentile(x, [10, 90], axis=1, method=method))


def test_quantile_of_a_slice_with_nan_is_nan_and_nan_variants_skip_it():
    same(np.quantile(T(XN), 0.4, axis=1), np.quantile(XN, 0.4, axis=1))
    for dtype in (np.float64, np.float32):
        xn = XN.astype(dtype)
        for axis in (None, 0, 1):
            same(quiet(np.nanquantile, T(xn), [0.1, 0.5], axis=axis), quiet(np.nanquantile, xn, [0.1, 0.5], axis=axis))
            same(quiet(np.nanpercentile, T(xn), 30, axis=axis), quiet(np.nanpercentile, xn, 30, axis=axis))
            same(quiet(np.nanmedian, T(xn), axis=axis), quiet(np.nanmedian, xn, axis=axis))
            tol = 1e-12 if dtype == np.float64 else 1e-5      # sums in another order
            for fn in (np.nanvar, np.nanstd):
                same(quiet(fn, T(xn), axis=axis, ddof=1), quiet(fn, xn, axis=axis, ddof=1), tol)
            same(np.nanprod(T(xn), axis=axis), np.nanprod(xn, axis=axis), tol)
        for fn in (np.nancumsum, np.nancumprod):
            same(fn(T(xn), axis=1), fn(xn, axis=1), 1e-12 if dtype == np.float64 else 1e-5)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_derivative_matches_jax(method):
    x = np.array([3.0, 1.0, 2.0, 5.0, 4.0, 1.0, 2.5])
    for q in (0.3, 0.5, [0.1, 0.77]):
        ours = ad.grad(lambda t: ad.sum(np.quantile(t, q, method=method)))(x)
        np.testing.assert_allclose(ours, jax.grad(lambda t: jnp.quantile(t, jnp.asarray(q), method=method).sum())(x))


def test_nan_statistics_derivatives_match_jax():
    x = np.array([3.0, np.nan, 1.0, 2.0, 5.0, 4.0, np.nan])
    for ours, theirs in ((lambda t: np.nanquantile(t, [0.3, 0.5]), lambda t: jnp.nanquantile(t, jnp.array([0.3, 0.5]))),
                         (np.nanmedian, jnp.nanmedian), (np.nanvar, jnp.nanvar), (np.nanprod, jnp.nanprod)):
        np.testing.assert_allclose(ad.grad(lambda t: ad.sum(ours(t)))(x), jax.grad(lambda t: theirs(t).sum())(x),
                                   rtol=1e-12, atol=1e-15)


def test_average_cov_corrcoef_values():
    w = RNG.random(5)
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-6), (np.int64, 1e-12)):   # other summation order
        x = (X * 3).astype(dtype)
        same(np.average(T(x), axis=1, weights=w), np.average(x, axis=1, weights=w), tol)
        same(np.average(T(x), axis=0, weights=np.abs(x)), np.average(x, axis=0, weights=np.abs(x)), tol)
        same(np.average(T(x), axis=1, weights=w, returned=True), np.average(x, axis=1, weights=w, returned=True), tol)
        same(np.average(T(x)), np.average(x), tol)
        for rowvar in (True, False):
            for bias in (False, True):
                same(np.cov(T(x), rowvar=rowvar, bias=bias), np.cov(x, rowvar=rowvar, bias=bias), 1e-12)
            same(np.corrcoef(T(x), rowvar=rowvar), np.corrcoef(x, rowvar=rowvar), 1e-12)
        same(np.cov(T(x[0]), x[1]), np.cov(x[0], x[1]), 1e-12)
        same(np.cov(T(x[0]), ddof=0), np.cov(x[0], ddof=0), 1e-12)


def test_average_cov_corrcoef_derivatives():
    y = X[:3]
    weights = np.arange(9.0).reshape(3, 3)
    np.testing.assert_allclose(ad.grad(lambda t: ad.sum(np.cov(t) * weights))(y),
                               jax.grad(lambda t: (jnp.cov(t) * weights).sum())(y), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ad.grad(lambda t: ad.sum(np.corrcoef(t) * weights))(y),
                               jax.grad(lambda t: (jnp.corrcoef(t) * weights).sum())(y), rtol=1e-10, atol=1e-12)
    w = RNG.random(5) + 0.5
    ga = ad.grad(lambda t, u: ad.sum(np.average(t, axis=1, weights=u)), (0, 1))(y, w)
    ja = jax.grad(lambda t, u: jnp.average(t, axis=1, weights=u).sum(), (0, 1))(y, w)
    for o, j in zip(ga, ja):
        np.testing.assert_allclose(o, j, rtol=1e-12)
    ad.check_grads(lambda t: np.cov(t), (y,))
    ad.check_grads(lambda t: np.corrcoef(t)[0, 1:], (y,))
    ad.check_grads(lambda t: np.quantile(t, [0.2, 0.65], axis=1), (y,))


# ---------------------------------------------------------------------------- polynomial


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 1e-5), (np.int64, 0)])
def test_convolve_correlate_every_length_and_mode(dtype, tol):
    # a matrix product of the windows against numpy's direct loops: sums in another order
    for n in range(1, 6):
        for m in range(1, 6):
            a, v = (RNG.normal(size=n) * 4).astype(dtype), (RNG.normal(size=m) * 4).astype(dtype)
            for mode in ("full", "same", "valid"):
                for fn in (np.convolve, np.correlate):
                    same(fn(T(a), v, mode), fn(a, v, mode), tol)
                    same(fn(a, T(v), mode), fn(a, v, mode), tol)


def test_vander_polyval_interp_values():
    for dtype in (np.float64, np.float32, np.int64):
        x = (X[0] * 3).astype(dtype)
        for n in (None, 0, 1, 3):
            for increasing in (False, True):
                same(np.vander(T(x), n, increasing), np.vander(x, n, increasing))
        same(np.polyval([1.5, -2, 3], T(x)), np.polyval([1.5, -2, 3], x))
        same(np.polyval(T(np.array([1.5, -2, 3]).astype(dtype)), x), np.polyval(np.array([1.5, -2, 3]).astype(dtype), x))
    xp, fp = np.sort(RNG.normal(size=8)), RNG.normal(size=8)
    x = np.concatenate([RNG.normal(size=30) * 2, xp, [np.inf, -np.inf, np.nan]])
    for left, right in ((None, None), (-5.0, 7.0)):
        same(np.interp(T(x), xp, fp, left, right), np.interp(x, xp, fp, left, right))      # numpy's formula: exact
        same(np.interp(x, xp, T(fp), left, right), np.interp(x, xp, fp, left, right))
    same(np.interp(T(x.astype(np.float32)), xp, fp), np.interp(x.astype(np.float32), xp, fp))
    same(np.interp(T(x), xp[:1], fp[:1]), np.interp(x, xp[:1], fp[:1]))
    same(np.interp(T(0.3), xp, fp), np.interp(0.3, xp, fp))


def test_polynomial_derivatives_match_jax():
    xp, fp = np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 2.0])
    x = np.array([0.0, 1.0, 0.5, 2.0, 3.0, -1.0, 1.7])          # knots take the right segment's slope
    args = [x, xp, fp]
    for k in range(3):
        ours = ad.grad(lambda t: ad.sum(np.interp(*[t if i == k else args[i] for i in range(3)])))(args[k])
        theirs = jax.grad(lambda t: jnp.interp(*[t if i == k else args[i] for i in range(3)]).sum())(args[k])
        np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-15)
    a, v = RNG.normal(size=6), RNG.normal(size=3)
    for mode in ("full", "same", "valid"):
        for ours, theirs in ((np.convolve, jnp.convolve), (np.correlate, jnp.correlate)):
            w = RNG.normal(size=len(ours(a, v, mode)))
            g = ad.grad(lambda s, t: ad.sum(ours(s, t, mode) * w), (0, 1))(a, v)
            j = jax.grad(lambda s, t: (theirs(s, t, mode) * w).sum(), (0, 1))(a, v)
            np.testing.assert_allclose(g[0], j[0], rtol=1e-12)
            np.testing.assert_allclose(g[1], j[1], rtol=1e-12)
    np.testing.assert_allclose(ad.grad(lambda t: ad.sum(np.vander(t, 4)))(a), jax.grad(lambda t: jnp.vander(t, 4).sum())(a))
    g = ad.grad(lambda p, t: ad.sum(np.polyval(p, t)), (0, 1))(v, a)
    j = jax.grad(lambda p, t: jnp.polyval(p, t).sum(), (0, 1))(v, a)
    np.testing.assert_allclose(g[0], j[0], rtol=1e-12)
    np.testing.assert_allclose(g[1], j[1], rtol=1e-12)
    ad.check_grads(lambda s, t: np.convolve(s, t, "same"), (a, v))
    ad.check_grads(lambda t: np.interp(np.array([0.3, 1.2, 1.9]), xp, t), (fp,))


# ---------------------------------------------------------------------------- editing


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_array_editing_values(dtype):
    x = (X * 5).astype(dtype)
    t = T(x)
    for shape in (3, (2, 2), (5, 7), (0,)):
        same(np.resize(t, shape), np.resize(x, shape))
    for obj, axis in ((1, None), ([0, 2], 1), (slice(0, 3, 2), 1), (-1, 0), (np.array([True, False, True, False]), 0)):
        same(np.delete(t, obj, axis), np.delete(x, obj, axis))
    for obj, values, axis in ((1, 9.5, None), (1, [1, 2, 3, 4, 5], 0), ([0, 2], [7, 8], 1), ([1], [[1], [2], [3], [4]], 1),
                              (slice(0, 2), 5, 1), ([1, 1], [5, 6], None)):
        same(np.insert(t, obj, values, axis), np.insert(x, obj, values, axis))
        same(np.insert(t, obj, T(np.asarray(values, float)), axis), np.insert(x, obj, np.asarray(values, float), axis))
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            same(np.meshgrid(t[0], t[1, :3], t[2, :2], indexing=indexing, sparse=sparse),
                 np.meshgrid(x[0], x[1, :3], x[2, :2], indexing=indexing, sparse=sparse))
    for fn in (np.cumulative_sum, np.cumulative_prod):
        for axis in (0, 1):
            same(fn(t, axis=axis, include_initial=True), fn(x, axis=axis, include_initial=True), 1e-12)
        same(fn(t[0]), fn(x[0]), 1e-12)
    same(np.unstack(t, axis=1), np.unstack(x, axis=1))
    same(np.astype(t, np.float32), np.astype(x, np.float32))
    same(np.vdot(t, x), np.vdot(x, x), 1e-6)
    same(np.ptp(t, axis=1), np.ptp(x, axis=1))
    same(t.ptp(), np.ptp(x))
    mask = x > 0
    for axis in (None, 0, 1):
        same(np.sum(t, axis=axis, where=mask), np.sum(x, axis=axis, where=mask), 1e-6)
        same(np.mean(t, axis=axis, where=t > 0), np.mean(x, axis=axis, where=mask), 1e-6)
        same(t.mean(axis=axis, where=mask), x.mean(axis=axis, where=mask), 1e-6)
        same(np.sum(t, axis=axis, initial=3), np.sum(x, axis=axis, initial=3), 1e-6)
    np.testing.assert_array_equal(t.nonzero(), x.nonzero())
    assert t.tolist() == x.tolist()


def test_array_editing_derivatives():
    x = X[:3, :4]
    ad.check_grads(lambda t: np.resize(t, (5, 4)), (x,))
    ad.check_grads(lambda t: np.delete(t, [0, 2], axis=1), (x,))
    ad.check_grads(lambda t, v: np.insert(t, [1, 3], v, axis=1), (x, np.array([0.5, -1.5])))
    ad.check_grads(lambda t: np.meshgrid(t[0], t[1])[0] * np.meshgrid(t[0], t[1])[1], (x,))
    ad.check_grads(lambda t: np.cumulative_prod(t, axis=1, include_initial=True), (x,))
    ad.check_grads(lambda t: np.vdot(t, t * t), (x,))
    ad.check_grads(lambda t: np.mean(t, axis=1, where=x > 0), (x,))
    np.testing.assert_array_equal(ad.grad(lambda t: np.ptp(t))(np.array([1.0, 5.0, -2.0])), [0.0, 1.0, -1.0])


# ---------------------------------------------------------------------------- counting


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_counting_values(dtype):
    x = (X * 5).astype(dtype)
    x.flat[3] = x.flat[5]
    t = T(x)
    for bins in (10, 1, 3, [-5, 0, 1, 2, 7], "auto", "fd"):
        for rng in (None, (-2, 3)):
            same(np.histogram(t, bins, rng), np.histogram(x, bins, rng))
            same(np.histogram(t, bins, rng, density=True), np.histogram(x, bins, rng, density=True), 1e-12)
            if not isinstance(bins, str):
                w = RNG.random(x.shape)
                same(np.histogram(t, bins, rng, weights=T(w)), np.histogram(x, bins, rng, weights=w), 1e-12)
    same(np.histogram(T(np.ones(4, dtype))), np.histogram(np.ones(4, dtype)))
    for bins, right in (([-3, 0, 2.5], False), ([-3, 0, 2.5], True), ([2.5, 0, -3], False), ([2.5, 0, -3], True)):
        same(np.digitize(t, bins, right), np.digitize(x, bins, right))
    same(np.isin(t, x[0]), np.isin(x, x[0]))
    same(np.isin(t, x[0], invert=True), np.isin(x, x[0], invert=True))
    for kwargs in ({}, {"return_index": True}, {"return_inverse": True, "return_counts": True}):
        same(np.unique(t, **kwargs), np.unique(x, **kwargs))
    doubled = np.concatenate([x, x[:2]])
    same(np.unique(T(doubled), axis=0, return_counts=True), np.unique(doubled, axis=0, return_counts=True))
    i = RNG.integers(0, 5, 9)
    same(np.bincount(i, weights=T(x.ravel()[:9].astype(float)), minlength=7), np.bincount(i, weights=x.ravel()[:9], minlength=7), 1e-12)
    same(np.bincount(T(i)), np.bincount(i))


def test_counting_nan_as_numpy():
    xn = np.array([1.0, np.nan, 3.0, -np.inf, np.inf, np.nan])
    same(np.digitize(T(xn), [0, 2]), np.digitize(xn, [0, 2]))
    same(np.digitize(T(xn), [2, 0]), np.digitize(xn, [2, 0]))
    same(np.unique(T(xn), return_index=True), np.unique(xn, return_index=True))
    same(np.isin(T(xn), [np.nan, 3]), np.isin(xn, [np.nan, 3]))
    same(np.histogram(T(xn), 3, (0, 4)), np.histogram(xn, 3, (0, 4)))


def test_weights_are_differentiable_counts_are_not():
    x, w = X[0], X[1] ** 2
    g = ad.grad(lambda u: ad.sum(np.histogram(x, 3, weights=u)[0] * np.arange(3.0)))(w)
    np.testing.assert_array_equal(g, np.digitize(x, np.histogram(x, 3)[1][1:-1]).astype(float))
    i = np.array([0, 2, 2, 1])
    np.testing.assert_array_equal(ad.grad(lambda u: ad.sum(np.bincount(i, weights=u) * np.arange(3.0)))(w[:4]), [0, 2, 2, 1])
    g = ad.grad(lambda t: ad.sum(np.unique(t) * np.arange(3.0)))(np.array([2.0, 1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [1.0, 0.0, 0.0, 2.0])     # each value's first occurrence


# ---------------------------------------------------------------------------- jit and vmap

XP, FP = np.sort(RNG.normal(size=5)), RNG.normal(size=5)
SAMPLES = [
    lambda t: np.cbrt(t), lambda t: np.frexp(t)[0], lambda t: np.spacing(t), lambda t: np.copysign(t, -t),
    lambda t: np.heaviside(t, 0.5), lambda t: np.modf(t)[0],
    lambda t: np.quantile(t, [0.2, 0.9], axis=1), lambda t: np.nanquantile(t, 0.4, axis=1),
    lambda t: np.nanmedian(t, axis=1), lambda t: np.cov(t), lambda t: np.corrcoef(t), lambda t: np.nanstd(t, axis=1),
    lambda t: np.average(t, axis=1, weights=t[0] ** 2),
    lambda t: np.convolve(t[0], t[1, :3], "same"), lambda t: np.correlate(t[0], t[1], "full"),
    lambda t: np.vander(t[0], 3), lambda t: np.polyval(t[0, :3], t[1]), lambda t: np.interp(t, XP, FP),
    lambda t: np.interp(XP, XP, t[0]), lambda t: np.resize(t, (4, 5)), lambda t: np.delete(t, [0, 2], 1),
    lambda t: np.insert(t, 1, t[0], 0), lambda t: np.meshgrid(t[0], t[1])[1],
    lambda t: np.cumulative_prod(t, axis=1, include_initial=True), lambda t: np.vdot(t, t),
    lambda t: np.mean(t, axis=1, where=t > 0), lambda t: np.histogram(t, 4)[0], lambda t: np.histogram(t, 4)[1],
    lambda t: np.histogram(t[0], 3, weights=t[1] ** 2)[0], lambda t: np.digitize(t, [-1, 0, 1]),
    lambda t: np.isin(t, t[0]), lambda t: np.bincount(np.array([0, 2, 2, 1, 0]), weights=t[0]),
]


@pytest.mark.parametrize("k", range(len(SAMPLES)))
def test_jit_and_vmap_follow_the_data(k):
    f = SAMPLES[k]
    x = RNG.normal(size=(3, 5))
    x[1, 2] = np.nan if k in (7, 8, 11) else x[1, 2]
    eager = [quiet(lambda: f(ad.Tensor(a)).value) for a in (x, 2 * x)]
    jitted = ad.jit(f)
    for a, e in zip((x, 2 * x), eager):
        np.testing.assert_allclose(quiet(jitted, a), e, rtol=1e-13, equal_nan=True)
    batched = quiet(ad.vmap(f), np.stack([x, 2 * x]))
    for b, e in zip(batched, eager):
        np.testing.assert_allclose(b, e, rtol=1e-13, equal_nan=True)


# ---------------------------------------------------------------------------- refused


@pytest.mark.parametrize("call, what", [
    (lambda t: np.unique(t), "np.unique"), (lambda t: np.histogram(t, "auto"), "bins='auto'"),
    (lambda t: np.bincount(ad.astype(t > 0, np.int64)), "np.bincount"), (lambda t: t.nonzero(), "Tensor.nonzero"),
    (lambda t: np.delete(t, ad.astype(t[:1] > 0, np.int64)), "np.delete"),
])
def test_shapes_from_the_values_raise_tracing_error(call, what):
    with pytest.raises(ad.TracingError, match=what.replace("(", r"\(")):
        ad.jit(call)(X[0])


@pytest.mark.parametrize("call, message", [
    (lambda t: np.quantile(t, 0.5, out=np.zeros(())), "np.quantile: out="),
    (lambda t: np.quantile(t, ad.Tensor(0.5)), "q must be numbers"),
    (lambda t: np.quantile(t, 1.5), r"range \[0, 1\]"),
    (lambda t: np.nanquantile(t, 0.5, method="lower"), "only 'linear'"),
    (lambda t: np.cov(t, fweights=[1, 2, 3, 4, 5]), "fweights"),
    (lambda t: np.interp(t, [0.0, 1.0], [1.0, 2.0], period=2.0), "period="),
    (lambda t: np.ldexp(t, 1.5), "exponent must be integers"),
    (lambda t: np.digitize(t, [0.0, 2.0, 1.0]), "monotonically"),
    (lambda t: np.histogram(t, "auto", weights=t), "weighted"),
    (lambda t: np.cumulative_sum(ad.reshape(t, (5, 1))), "axis must be specified"),
])
def test_refused_arguments_name_the_operation(call, message):
    with pytest.raises(Exception, match=message):
        call(T(X[0]))
