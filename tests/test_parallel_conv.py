"""Convolution and pooling split over threads along the batch give the unsplit results.

Each chunk computes whole images (or, for the channels-last weight gradient, whole
blocks of the summed product, added afterwards in the unsplit order): max pooling is
compared with ``==`` against the same call on one thread, the convolutions (BLAS
products) within a few ulps (:func:`assert_blas_equal`). The grains are
set to 1 so that splitting really happens at these small sizes, and run_chunks is
watched to prove it did.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn, parallel
from autograd_dag.nn import functional as F
from autograd_dag.primitives import conv as C

# (N, C, H, O, k, stride, padding, dtype): LeNet's two layers in both dtypes (channels-first
# forward; channels-first and channels-last/banded gradients), a strided padded layer, a wide one.
LAYERS = [(64, 1, 28, 6, 5, 1, 0, np.float64), (64, 6, 12, 16, 5, 1, 0, np.float64),
          (64, 6, 12, 16, 5, 1, 0, np.float32), (9, 3, 9, 4, 3, 2, 1, np.float64),
          (10, 16, 10, 8, 3, 1, 1, np.float32), (7, 2, 40, 3, 3, 1, 0, np.float64)]


@pytest.fixture
def split_everything(monkeypatch):
    """Grains of 1, and a record of each run_chunks call that split (n, number of chunks)."""
    monkeypatch.setattr(C, "CONV_GRAIN", 1)
    monkeypatch.setattr(C, "POOL_GRAIN", 1)
    splits = []
    run = parallel.run_chunks

    def watched(fn, n, *, grain, **align):
        parts = min(parallel.get_num_threads(), n // max(grain, 1))
        if parts > 1:
            splits.append((n, parts))
        run(fn, n, grain=grain, **align)
    monkeypatch.setattr(parallel, "run_chunks", watched)
    return splits


def _all_ops(x, w, b, g, k, stride, padding):
    kw = {"stride": (stride, stride), "padding": (padding, padding)}
    return {"forward": C._conv2d_bias_impl(x, w, b, **kw),
            "input grad": C._input_grad_impl(g, w, in_hw=x.shape[2:], **kw),
            "weight grad": C._weight_grad_impl(x, g, kernel=(k, k), **kw)}


def assert_blas_equal(split, whole, what=""):
    """Equal within 64 ulps of ``whole``'s largest entry.

    A chunk's products are smaller than the unsplit call's, and BLAS runs on another number
    of threads: BLAS may block them differently. OpenBLAS's Haswell kernels gave a float32
    input gradient a few ulps apart (same arithmetic, other summation order), where the
    SkylakeX kernels gave the same bits.
    """
    scale = max(1.0, float(np.abs(whole).max()))
    np.testing.assert_allclose(split, whole, rtol=0, atol=64 * np.finfo(whole.dtype).eps * scale, err_msg=what)


@pytest.mark.parametrize("threads", [2, 4])
@pytest.mark.parametrize("n, c, h, o, k, stride, padding, dtype", LAYERS)
def test_split_convolution_is_the_unsplit_one(split_everything, threads, n, c, h, o, k, stride,
                                              padding, dtype):
    rng = np.random.default_rng(n * h + c)
    x = rng.standard_normal((n, c, h, h)).astype(dtype)
    w = rng.standard_normal((o, c, k, k)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    ho = (h + 2 * padding - k) // stride + 1
    g = rng.standard_normal((n, o, ho, ho)).astype(dtype)
    with ad.num_threads(1):
        whole = _all_ops(x, w, b, g, k, stride, padding)
    assert not split_everything
    with ad.num_threads(threads):
        split = _all_ops(x, w, b, g, k, stride, padding)
    # Each operation was split; the channels-last weight gradient only in whole blocks of images.
    blocks = not C._channels_last(c, k, ho) or (n * ho * ho > 2 * C._BLOCK and C._BLOCK % (ho * ho) == 0)
    assert len(split_everything) == (3 if blocks else 2)
    for name in whole:
        assert split[name].dtype == whole[name].dtype, name
        assert split[name].shape == whole[name].shape, name
        # Whole images (or whole summed blocks) per chunk: the same arithmetic, BLAS blocking aside.
        assert_blas_equal(split[name], whole[name], name)


@pytest.mark.parametrize("shape, window, stride", [((64, 6, 24, 24), 2, 2), ((5, 3, 9, 7), 3, 2),
                                                   ((4, 2, 2, 8, 8), 2, 3)])
def test_split_max_pool_is_the_unsplit_one_bit_for_bit(split_everything, shape, window, stride):
    rng = np.random.default_rng(len(shape))
    x = rng.integers(-2, 3, shape).astype(np.float64)      # ties everywhere
    x.flat[::11] = np.nan
    params = {"window": (window, window), "stride": (stride, stride)}
    with ad.num_threads(1):
        whole = C._max_pool_impl(x, **params)
    with ad.num_threads(2):
        split = C._max_pool_impl(x, **params)
    assert split_everything
    assert np.array_equal(split, whole, equal_nan=True)


def test_lenet_gradients_on_two_threads_are_those_on_one(split_everything):
    """The LeNet step, eager and jit, split on two threads: the loss and every gradient as on one."""
    rng = np.random.default_rng(3)
    model = nn.Sequential(nn.Conv2d(1, 6, 5, rng=rng), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(6, 16, 5, rng=rng), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(256, 10, rng=rng))
    x = rng.standard_normal((64, 1, 28, 28))
    y = rng.integers(0, 10, 64)
    params = dict(model.named_parameters())

    def loss(p, x):
        return F.cross_entropy(nn.functional_call(model, p, x), y)

    def eager():
        for p in params.values():
            p.grad = None
        value = loss(params, ad.Tensor(x))
        value.backward()
        return [value.value] + [p.grad.value for p in params.values()]

    def jitted(step):
        value, grads = step({k: p.value for k, p in params.items()}, x)
        return [np.asarray(value)] + [np.asarray(grads[k]) for k in params]

    with ad.num_threads(1):
        whole = eager()
        step = ad.jit(ad.value_and_grad(loss))
        whole_jit = jitted(step)
    assert not split_everything
    with ad.num_threads(2):
        split = eager()
        split_jit = jitted(step)
    assert len(split_everything) >= 6
    for a, b in zip(split + split_jit, whole + whole_jit):
        assert_blas_equal(a, b)
