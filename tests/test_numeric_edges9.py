"""Numeric edges (9): derivatives that were wrong or inaccurate, compared with independent references.

* d(x**y)/dy: NaN where x < 0 (not real), 0 at x = 0 for y ≥ 0, NaN at x = 0 for y < 0; by every
  route (grad, eager backward, jit, jvp, hessian, vmap, the ONNX export of the gradient) against
  PyTorch and JAX.
* the logistic's derivative for |x| large, against mpmath (σ(x)·σ(−x) in 50 digits).
* erfc and the exact gelu in float32 for x ≪ 0, against mpmath.
* pad of int64 with a constant above 2**53, comparisons with out-of-range Python ints, Tensor("abc").
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_dag as ad

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = jax.numpy
mp = pytest.importorskip("mpmath")
mp.mp.dps = 50

# --------------------------------------------------------------- d(x**y)/dy

# x < 0 with integer and fractional y, x = ±0 with y > 0, = 0, < 0, x > 0.
_PX = np.array([-2.0, -2.0, -1.5, -0.0, 0.0, 0.0, 0.0, -0.0, 2.0, 0.5])
_PY = np.array([2.0, 0.5, -1.0, 1.0, 2.0, 0.0, -1.0, -0.5, 0.5, -1.0])


def _torch_dy(x, y):
    X, Y = torch.tensor(x), torch.tensor(y, requires_grad=True)
    (X ** Y).sum().backward()
    return Y.grad.numpy()


def _jax_dy(x, y):
    with jax.enable_x64(True):
        return np.asarray(jax.grad(lambda y: jnp.sum(jnp.power(x, y)))(y))


def _expected_dy(x, y):
    """The reference: JAX's values. PyTorch agrees but at x = 0, y < 0, where it gives ±inf (asserted)."""
    expected = _jax_dy(x, y)
    theirs = _torch_dy(x, y)
    agree = ~((x == 0) & (y < 0))
    np.testing.assert_allclose(theirs[agree], expected[agree], rtol=1e-15)
    assert np.isinf(theirs[~agree]).all() and np.isnan(expected[~agree]).all()
    return expected


def _assert_same(actual, expected):
    # Same NaN positions; elsewhere values of log and power rounded once or twice: 1e-14 relative.
    actual = np.asarray(actual)
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    np.testing.assert_allclose(actual, expected, rtol=1e-14, atol=0)


def _power_sum(x, y):
    return ad.sum(ad.power(x, y))


@pytest.fixture(autouse=False)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def test_power_exponent_derivative_by_grad_and_backward(quiet):
    expected = _expected_dy(_PX, _PY)
    assert np.isnan(expected[:3]).all() and (expected[3:6] == 0).all()   # the cases this file is about
    _assert_same(ad.grad(_power_sum, argnums=1)(_PX, _PY), expected)
    y = ad.Tensor(_PY, requires_grad=True)
    _power_sum(ad.Tensor(_PX), y).backward()
    _assert_same(y.grad, expected)
    _assert_same(ad.jit(ad.grad(_power_sum, argnums=1))(_PX, _PY), expected)


def test_power_exponent_derivative_forward_mode_and_vmap(quiet):
    expected = _expected_dy(_PX, _PY)
    _, tangent = ad.jvp(lambda y: ad.power(_PX, y), (_PY,), (np.ones_like(_PY),))
    _assert_same(tangent, expected)
    per_row = ad.vmap(ad.grad(lambda x, y: ad.power(x, y), argnums=1))(_PX, _PY)
    _assert_same(per_row, expected)


def test_power_exponent_second_derivative(quiet):
    # d²(x**y)/dy² = x**y·log²x: NaN for x < 0 (JAX and PyTorch too).
    x, y = np.array([-2.0, 3.0]), np.array([2.0, 1.5])
    ours = np.diag(ad.hessian(lambda y: _power_sum(x, y))(y))
    with jax.enable_x64(True):
        theirs = np.diag(np.asarray(jax.hessian(lambda y: jnp.sum(jnp.power(x, y)))(y)))
    assert np.isnan(theirs[0])
    _assert_same(ours, theirs)


def test_power_exponent_derivative_exported_to_onnx(quiet):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    expected = _expected_dy(_PX, _PY)
    model = ad.onnx.export(ad.trace(ad.grad(_power_sum, argnums=1), _PX, _PY))
    got = ad.onnx.run(model, _PX, _PY)
    _assert_same(got[0] if isinstance(got, (list, tuple)) else got, expected)

# ------------------------------------------------------------ erfc, exact gelu


def _mp_erfc(x):
    return np.array([float(mp.erfc(mp.mpf(float(v)))) for v in np.ravel(x)]).reshape(np.shape(x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_erfc_is_accurate_relative_to_its_value(dtype):
    x = np.concatenate([np.linspace(-6, 26, 321), [0.0, 0.46875, -0.46875, 4.0, -4.0]]).astype(dtype)
    got = ad.erfc(ad.Tensor(x)).value
    ref = _mp_erfc(x)
    assert got.dtype == dtype
    # float64: Cody's approximation, a few ulps (measured 3) plus exp(−x²)'s; float32: computed in float64
    # and rounded once, so within one float32 ulp (where the float32 value is normal).
    normal = ref > np.finfo(dtype).tiny
    tol = 8 * np.finfo(np.float64).eps if dtype == np.float64 else np.finfo(np.float32).eps
    np.testing.assert_allclose(got[normal], ref[normal].astype(dtype), rtol=tol, atol=0)
    np.testing.assert_array_equal(ad.erfc(ad.Tensor([np.inf, -np.inf])).value, [0.0, 2.0])
    assert np.isnan(ad.erfc(ad.Tensor([np.nan])).value).all()


def test_erfc_derivatives_and_lowerings():
    x = np.array([-2.0, -0.3, 0.0, 0.4, 1.0, 5.0])
    want = -2 / np.sqrt(np.pi) * np.exp(-x * x)
    np.testing.assert_allclose(ad.grad(lambda t: ad.sum(ad.erfc(t)))(x), want, rtol=1e-15)
    np.testing.assert_allclose(ad.jvp(ad.erfc, (x,), (np.ones_like(x),))[1], want, rtol=1e-15)
    np.testing.assert_allclose(ad.vmap(ad.grad(ad.erfc))(x), want, rtol=1e-15)
    ad.check_grads(ad.erfc, (x,), order=2)
    with jax.enable_x64(True):   # the JAX lowering, against jax.scipy's erfc (its own algorithm: 1e-14)
        lowered = np.asarray(ad.jax.lower(ad.trace(ad.erfc, x))(x))
        np.testing.assert_allclose(lowered, np.asarray(jax.scipy.special.erfc(x)), rtol=1e-14)
    np.testing.assert_allclose(ad.erfc(ad.Tensor(x)).value, torch.special.erfc(torch.tensor(x)).numpy(), rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_erfc_exported_to_onnx_keeps_the_tail(dtype):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    x = np.array([-5.0, -1.0, 0.0, 0.2, 1.0, 4.0, 9.0, 20.0], dtype)
    got = ad.onnx.run(ad.onnx.export(ad.trace(ad.erfc, x)), x)
    got = got[0] if isinstance(got, (list, tuple)) else got
    assert got.dtype == dtype
    # 1 − Erf(x) would give 0 from x = 4 in float32 and 6 in float64: the export computes erfc itself.
    np.testing.assert_allclose(got, _mp_erfc(x).astype(dtype), rtol=8 * np.finfo(dtype).eps, atol=0)


def _mp_gelu_and_slope(x):
    def phi(t):
        return mp.exp(-t * t / 2) / mp.sqrt(2 * mp.pi)
    values, slopes = [], []
    for v in np.ravel(x):
        t = mp.mpf(float(v))
        big_phi = mp.erfc(-t / mp.sqrt(2)) / 2
        values.append(float(t * big_phi))
        slopes.append(float(big_phi + t * phi(t)))
    return np.array(values), np.array(slopes)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exact_gelu_and_its_derivative_for_x_far_below_zero(dtype):
    from autograd_dag.nn import functional as F
    x = np.array([-8.0, -5.0, -3.0, -1.0, 0.5, 2.0], dtype)
    value, slope = _mp_gelu_and_slope(x)
    # The old x/2·(1 + erf(x/√2)) lost 1.6 % (value) and 0.16 % (derivative) at x = −5 in float32, all of it
    # from x = −5.9. Now a few roundings times the condition number ≤ x² + 2 (66 at x = −8).
    tol = 4 * 66 * np.finfo(dtype).eps
    np.testing.assert_allclose(F.gelu(ad.Tensor(x)).value, value.astype(dtype), rtol=tol, atol=0)
    np.testing.assert_allclose(ad.grad(lambda t: ad.sum(F.gelu(t)))(x), slope.astype(dtype), rtol=tol, atol=0)

# ---------------------------------------------- integers: pad, comparisons, refused values


def test_pad_int64_with_a_constant_above_2_to_53_is_exact():
    x = np.arange(3, dtype=np.int64)
    for value in (2 ** 53 + 1, -(2 ** 62) - 1, np.int64(2 ** 63 - 1)):
        want = np.pad(x, 1, constant_values=value)
        np.testing.assert_array_equal(ad.pad(ad.Tensor(x), 1, constant_values=value).value, want)
        np.testing.assert_array_equal(ad.jit(lambda t: ad.pad(t, 1, constant_values=value))(x), want)
    u = np.arange(3, dtype=np.uint64)
    np.testing.assert_array_equal(ad.pad(ad.Tensor(u), 1, constant_values=2 ** 64 - 1).value,
                                  np.pad(u, 1, constant_values=2 ** 64 - 1))


_BEYOND = [(np.int8, "<", 1000), (np.int8, "!=", 300), (np.uint8, "==", -1), (np.uint8, ">=", -5),
           (np.int64, ">", 2 ** 70), (np.int64, "<=", -(2 ** 70)), (np.uint64, "<", -1), (np.int16, ">", -40000)]


@pytest.mark.parametrize("dtype, op, number", _BEYOND)
def test_integer_tensor_compared_with_an_int_beyond_its_dtype(dtype, op, number):
    a = np.array([0, 1, np.iinfo(dtype).max, np.iinfo(dtype).min], dtype)
    ops = {"<": lambda p, q: p < q, "<=": lambda p, q: p <= q, ">": lambda p, q: p > q, ">=": lambda p, q: p >= q,
           "==": lambda p, q: p == q, "!=": lambda p, q: p != q}
    compare = ops[op]
    want, mirrored = compare(a, number), compare(number, a)   # numpy 2's answers
    np.testing.assert_array_equal(compare(ad.Tensor(a), number).value, want)
    np.testing.assert_array_equal(compare(number, ad.Tensor(a)).value, mirrored)
    np.testing.assert_array_equal(ad.jit(lambda t: compare(t, number))(a), want)
    np.testing.assert_array_equal(ad.trace(lambda t: compare(number, t), a)(a), mirrored)
    np.testing.assert_array_equal(ad.vmap(lambda t: compare(t, number))(a.reshape(2, 2)), want.reshape(2, 2))


def test_arithmetic_with_an_int_beyond_the_dtype_still_refused():
    with pytest.raises(ad.AutogradDagError, match=r"1000.*int8.*test_numeric_edges9"):
        ad.Tensor(np.ones(2, np.int8)) + 1000     # numpy 2 raises OverflowError here too


# (An ndarray of strings or objects stays accepted: ONNX programs carry string tensors as inputs.)
@pytest.mark.parametrize("value", ["abc", b"xy"])
def test_strings_and_objects_are_not_tensors(value):
    with pytest.raises(TypeError):
        torch.tensor(value)                       # (the reference refuses them too)
    with pytest.raises(ad.AutogradDagError, match=r"cannot make a numeric array.*dtype.*test_numeric_edges9"):
        ad.Tensor(value)

# ------------------------------------------------------------ the logistic's derivative


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_logistic_derivative_is_accurate_for_large_x(dtype):
    x = np.array([-80.0, -30.0, -5.0, 0.0, 3.0, 12.0, 17.0, 20.0, 30.0, 40.0, 80.0], dtype)
    ref = np.array([float(mp.exp(-mp.mpf(float(v))) / (1 + mp.exp(-mp.mpf(float(v)))) ** 2) for v in x])
    # σ·(1 − σ) gave 0 from x = 17 (float32) / 37 (float64): now a few roundings of exp and a division.
    tol = 4 * np.finfo(dtype).eps
    for got in (ad.grad(lambda t: ad.sum(ad.logistic(t)))(x), ad.jvp(ad.logistic, (x,), (np.ones_like(x),))[1],
                ad.jit(ad.grad(lambda t: ad.sum(ad.sigmoid(t))))(x)):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, ref.astype(dtype), rtol=tol, atol=0)
    # The second derivative σ'·tanh(−x/2), against mpmath's derivative of σ'.
    second = np.diag(ad.hessian(lambda t: ad.sum(ad.logistic(t)))(x.astype(np.float64)))
    ref2 = np.array([float(mp.diff(lambda t: mp.exp(-t) / (1 + mp.exp(-t)) ** 2, mp.mpf(float(v)))) for v in x])
    np.testing.assert_allclose(second, ref2, rtol=1e-14, atol=0)
