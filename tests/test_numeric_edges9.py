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
