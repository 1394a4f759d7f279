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
