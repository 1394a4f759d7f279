"""The fast paths taken at LeNet's sizes (issue 13) give the values of their independent formulas.

The primitive table checks each rule on small arrays; the paths below start at
thousands of elements, so they are checked here on arrays past their thresholds,
in float32 and float64, eagerly and in a jit program (which writes into dying operands).
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad


def _relu_formula(x: np.ndarray) -> np.ndarray:
    """max(x, 0) element by element, NaN kept: written with a comparison, not with np.maximum."""
    out = np.zeros_like(x)
    keep = (x > 0) | np.isnan(x)
    out[keep] = x[keep]
    return out


def _special_values(dtype, shape=(64, 6, 5, 5)) -> np.ndarray:
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[:6] = [np.nan, -np.inf, np.inf, -0.0, 0.0, -np.nan]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_of_a_large_array_matches_its_formula(dtype):
    x = _special_values(dtype)
    assert x.size >= 4096
    out = ad.relu(ad.Tensor(x)).value
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, _relu_formula(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_written_into_its_dying_input_in_a_jit_program(dtype):
    x = _special_values(dtype)
    f = ad.jit(lambda v: ad.relu(v * 2.0))
    out = np.asarray(f(x))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, _relu_formula(x * dtype(2.0)))


def test_relu_gradient_of_a_large_array_is_the_step_of_x():
    x = _special_values(np.float64)
    x.reshape(-1)[:6] = [-1.0, 2.0, -3.0, 0.0, 0.5, -0.5]   # finite: the gradient is 1 where x > 0, else 0
    g = ad.grad(lambda v: ad.sum(ad.relu(v) * 3.0))(x)
    np.testing.assert_array_equal(g, np.where(x > 0, 3.0, 0.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_bias_gradient_is_the_cotangent_summed_per_channel(dtype):
    from autograd_dag.primitives.conv import conv2d_bias
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 2, 9, 8)).astype(dtype)
    w = rng.standard_normal((3, 2, 3, 3)).astype(dtype)
    b = rng.standard_normal(3).astype(dtype)
    ct = rng.standard_normal((5, 3, 7, 6)).astype(dtype)
    expect = ct.astype(np.float64).sum(axis=(0, 2, 3))   # the formula, in float64
    loss = lambda b_: ad.sum(conv2d_bias(x, w, b_) * ct)
    for g in (ad.grad(loss)(b), ad.jit(ad.grad(loss))(b)):
        g = np.asarray(g)
        assert g.dtype == dtype
        np.testing.assert_allclose(g, expect, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_conv2d_bias_second_derivatives_through_the_bias_rule():
    from autograd_dag.primitives.conv import conv2d_bias
    rng = np.random.default_rng(2)
    x, w, b = rng.standard_normal((2, 2, 5, 5)), rng.standard_normal((3, 2, 2, 2)), rng.standard_normal(3)
    # Cubic in b (a product of two convolutions' outputs): the Hessian in b is not zero.
    ad.check_grads(lambda x_, b_: ad.sum(conv2d_bias(x_, w, b_) ** 2 * conv2d_bias(x_, w, b_)), (x, b), order=2)


# ------------------------------------------------ convolution weight gradients

from tests.cases_conv import weight_grad_ref   # noqa: E402  (loops over output pixels)


def test_float32_lenet_first_layer_gradients_against_float64():
    from autograd_dag.primitives.conv import conv2d_bias
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 1, 28, 28))
    w, b, ct = rng.standard_normal((6, 1, 5, 5)), rng.standard_normal(6), rng.standard_normal((8, 6, 24, 24))
    f = lambda x_, w_, b_: ad.sum(conv2d_bias(x_, w_, b_) * ct.astype(x_.dtype))
    g32 = ad.grad(f, argnums=(1, 2))(*(a.astype(np.float32) for a in (x, w, b)))
    assert all(g.dtype == np.float32 for g in g32)
    np.testing.assert_allclose(g32[0], weight_grad_ref(x, ct, (5, 5)), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(g32[1], ct.sum(axis=(0, 2, 3)), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_channels_last_weight_gradient_summed_in_blocks_matches_the_loops(dtype):
    # 5 images of 12 x 12 output pixels: 720 rows, two blocks of 256 and a last one of 208.
    from autograd_dag.primitives.conv import _BLOCK, _channels_last, conv2d_weight_grad
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 6, 14, 14)).astype(dtype)
    g = rng.standard_normal((5, 2, 12, 12)).astype(dtype)
    assert _channels_last(6, 3, 12) and 5 * 12 * 12 > 2 * _BLOCK and (5 * 12 * 12) % _BLOCK
    dw = conv2d_weight_grad(x, g, (3, 3)).value
    assert dw.dtype == dtype
    np.testing.assert_allclose(dw, weight_grad_ref(x.astype(np.float64), g.astype(np.float64), (3, 3)),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4 if dtype == np.float32 else 1e-12)
