"""The row-wise kernels' faster formulations against independent references (float32 and float64).

masked_softargmax with a 0/−∞ mask exponentiates in base 2 (scale·log₂e folded into the scaling,
numpy's exp2 instead of exp): it must be as accurate as the natural-base formula, measured against a
long-double reference; and every other case (an additive mask, a spread too wide for one shift, scores
whose base-2 scaling would overflow) keeps the natural path.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

softmax = importlib.import_module("autograd_dag.primitives.fused.softmax")

rng = np.random.default_rng(32)


def _reference(x, mask, scale):
    """softargmax(scale·x + mask) over the last axis in long double (x86: 64-bit mantissa)."""
    z = np.longdouble(scale) * x.astype(np.longdouble) + mask.astype(np.longdouble)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _natural(x, mask, scale, dtype):
    """The same in ``dtype`` with numpy's exp (the formula before base 2): the accuracy to match."""
    z = np.multiply(x, scale, dtype=dtype) + mask.astype(dtype)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True, dtype=dtype)


def _rel_error(y, ref, dtype):
    """The largest |y − ref| / ref over entries ref of at least the smallest normal number, in eps of ``dtype``."""
    big = ref >= np.finfo(dtype).tiny
    return float(np.max(np.abs(y.astype(np.longdouble)[big] - ref[big]) / ref[big]) / np.finfo(dtype).eps)


CAUSAL = np.triu(np.full((32, 32), -np.inf), 1)
PADDING = np.where(np.arange(32) < 27, 0.0, -np.inf)[None, :] * np.ones((32, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
# scale·x of N(offset, sd²): within ±44 (float32's safe range) with no shift, then beyond it, shifted by its top.
@pytest.mark.parametrize("sd, offset", [(1.0, 0.0), (3.0, 0.0), (2.0, 100.0)])
@pytest.mark.parametrize("scale", [0.17677669529663687, -0.3])  # 1/√32, as attention's; not powers of 2
@pytest.mark.parametrize("mask", [CAUSAL, PADDING], ids=["causal", "padding"])
def test_base2_masked_softargmax_is_as_accurate_as_exp(dtype, sd, offset, scale, mask):
    x = ((rng.standard_normal((4, 3, 32, 32)) * sd + offset) / scale).astype(dtype)
    m = mask.astype(dtype)
    assert softmax._base2_shift(x, m, m == 0, scale, dtype) is not None  # the base-2 path is the one tested
    got = softmax._masked_softargmax_impl(x, m, axis=(3,), scale=scale)
    ref = _reference(x, m, scale)
    assert got.dtype == dtype and np.array_equal(got == 0, ref == 0)  # masked entries exactly 0
    # Both formulas round z = scale·x (or scale·log₂e·x) once, which costs ~|z|/2 ulps in exp(z); the
    # base-2 one must stay within 1.5x the natural one's error (plus 4 eps for the exponentials' own).
    assert _rel_error(got, ref, dtype) <= 1.5 * _rel_error(_natural(x, m, scale, dtype), ref, dtype) + 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_softargmax_keeps_exp_where_base2_does_not_serve(dtype):
    big = np.finfo(dtype).max * 0.9  # 0.9·big is finite, 0.9·log₂e·big is not: one common shift in base e
    x = np.array([[big, big, big], [1.0, 2.0, 3.0]], dtype)
    m = np.array([0.0, 0.0, -np.inf], dtype)
    assert softmax._base2_shift(x[:1], m, m == 0, 0.9, dtype) is None
    np.testing.assert_array_equal(softmax._masked_softargmax_impl(x[:1], m, axis=(1,), scale=0.9), [[0.5, 0.5, 0]])
    np.testing.assert_allclose(softmax._masked_softargmax_impl(x, m, axis=(1,), scale=0.9),  # (no single shift)
                               [[0.5, 0.5, 0], [np.exp(-0.9) / (1 + np.exp(-0.9)), 1 / (1 + np.exp(-0.9)), 0]],
                               rtol=4 * np.finfo(dtype).eps, atol=0)  # a few roundings of exp and the sum
    # A power-of-2 scale (x·scale exact, x·scale·log₂e not): the natural path, exact in its scaling.
    x = ((rng.standard_normal((2, 32, 32)) * 2 + 100) / -2.0).astype(dtype)
    assert softmax._base2_shift(x, CAUSAL.astype(dtype), CAUSAL == 0, -2.0, dtype) is None
    ref = _reference(x, CAUSAL, -2.0)
    # (~2 eps measured over five seeds; the base-2 formula gave 81 eps on such scores)
    assert _rel_error(softmax._masked_softargmax_impl(x, CAUSAL.astype(dtype), axis=(2,), scale=-2.0), ref, dtype) <= 8
    # An additive mask (not 0/−∞) and a spread no single shift serves: the natural, row-shifted path.
    x = rng.standard_normal((3, 16)).astype(dtype)
    additive = rng.standard_normal(16).astype(dtype)
    assert softmax._base2_shift(x, additive, additive == 0, 0.3, dtype) is None
    wide = (x * 1000).astype(dtype)
    assert softmax._base2_shift(wide, np.zeros(16, dtype), np.ones(16, bool), 0.3, dtype) is None
    for xs, ms in ((x, additive), (wide, np.zeros(16, dtype))):
        ref = _reference(xs, ms, 0.3)
        assert _rel_error(softmax._masked_softargmax_impl(xs, ms, axis=(1,), scale=0.3), ref, dtype) <= \
            1.5 * _rel_error(_natural(xs, ms, 0.3, dtype), ref, dtype) + 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (5, 3), (16, 4, 8, 64), (4, 128)])
@pytest.mark.parametrize("vecdot", [True, False], ids=["vecdot", "numpy<2"])
def test_row_dots_against_a_long_double_sum(monkeypatch, dtype, shape, vecdot):
    # np.vecdot where numpy has it (2.0 on), else the batched product: both sum each row in dtype, so
    # within (n/2 + 2) eps of the row's Σ|v⊙y| (a recursive or blocked sum of n terms; BLAS's is blocked).
    if not vecdot:
        monkeypatch.setattr(softmax, "_vecdot", None)
    v = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(shape).astype(dtype)[..., ::-1]  # a non-contiguous operand too
    got = softmax._row_dots(v, y, (len(shape) - 1,))
    want = np.sum(v.astype(np.longdouble) * y, axis=-1, keepdims=True)
    bound = np.sum(np.abs(v.astype(np.longdouble) * y), axis=-1, keepdims=True) * (shape[-1] / 2 + 2) * np.finfo(dtype).eps
    assert got.dtype == dtype and got.shape == shape[:-1] + (1,)
    assert np.all(np.abs(got - want) <= bound)
