"""The row-wise fused primitives split over the thread pool (primitives/rowsplit.py): the split result is
the unsplit one bit for bit, in-place (out=) writes included, and small inputs are never split.

Every comparison runs the same primitive at ``ad.num_threads(1)`` and at 2 and 4 threads with grains
lowered so that splitting really happens (each test checks that it did), and compares with ``==``:
a chunk of rows is the same numpy calls on the same numbers.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import parallel
from autograd_dag.primitives import rowsplit

softmax = importlib.import_module("autograd_dag.primitives.fused.softmax")
layer_norm = importlib.import_module("autograd_dag.primitives.fused.layer_norm")
losses = importlib.import_module("autograd_dag.primitives.fused.losses")


@pytest.fixture
def small_grains(monkeypatch):
    """Grains of 64 elements (splitting inputs of a few rows), and a record of every split's chunk count."""
    monkeypatch.setattr(rowsplit, "GRAIN", dict.fromkeys(rowsplit.GRAIN, 64))
    calls = []
    run_chunks = parallel.run_chunks

    def counting(fn, n, *, grain, **align):
        calls.append(min(parallel.get_num_threads(), n // max(grain, 1)))
        return run_chunks(fn, n, grain=grain, **align)
    monkeypatch.setattr(parallel, "run_chunks", counting)
    return calls


def assert_split_equal(got, want):
    """The same non-finite entries, and the finite ones within 16 ulps of the largest.

    Each chunk runs the unsplit code on its rows, but these kernels sum rows as BLAS
    matrix–vector products, and a chunk's product is a shorter matrix (and BLAS may run on
    another number of threads): a BLAS may block it differently. (Equal bit for bit with
    OpenBLAS's SkylakeX, Haswell and Sandybridge kernels; a split convolution's products were
    not, on Haswell: tests/test_parallel_conv.py.)
    """
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.where(finite, 0, got), np.where(finite, 0, want))
    scale = max(1.0, float(np.abs(want[finite]).max(initial=0.0)))
    np.testing.assert_allclose(got[finite], want[finite], rtol=0, atol=16 * np.finfo(want.dtype).eps * scale)


def same_at_every_thread_count(f, calls):
    """f() at 1, 2 and 4 threads: the same arrays (:func:`assert_split_equal`), and split (≥ 2 chunks) at 2 and 4."""
    calls.clear()
    with ad.num_threads(1):
        want = f()
    assert not calls, "one thread must not split"
    for n in (2, 4):
        calls.clear()
        with ad.num_threads(n):
            got = f()
        assert calls and max(calls) >= 2, f"not split at {n} threads"
        assert_split_equal(got, want)
    return want


rng = np.random.default_rng(30)
# 200 rows: not a multiple of 64 (the last chunk is short); 37 classes/features: not a vector width.
SHAPES = [(200, 37), (5, 40, 16), (3, 2, 70, 9)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("gamma", [1.0, 0.3])
@pytest.mark.parametrize("spread", [1.0, 1e3])  # 1e3: no common shift, each row's own maximum
def test_softargmax_split_is_the_unsplit_result(small_grains, shape, gamma, spread):
    x = rng.standard_normal(shape) * spread
    x[1] = -np.inf   # a row with no distribution: NaN either way
    with np.errstate(invalid="ignore"):
        same_at_every_thread_count(lambda: softmax._softargmax_impl(x, axis=(x.ndim - 1,), gamma=gamma),
                                   small_grains)


def test_softargmax_split_writes_into_its_dying_input(small_grains):
    x = rng.standard_normal((300, 20)).astype(np.float32)

    def in_place():
        y = x.copy()
        out = softmax._softargmax_impl(y, axis=(1,), gamma=1.0, out=y)
        assert out is y
        return out
    want = same_at_every_thread_count(in_place, small_grains)
    np.testing.assert_array_equal(want, softmax._softargmax_impl(x, axis=(1,), gamma=1.0))


@pytest.mark.parametrize("scale", [0.125, -3.0])
@pytest.mark.parametrize("mask_kind", ["causal", "causal 4-d", "additive", "row"])
def test_masked_softargmax_split_is_the_unsplit_result(small_grains, scale, mask_kind):
    x = rng.standard_normal((6, 3, 24, 24))
    causal = np.triu(np.full((24, 24), -np.inf), 1)
    mask = {"causal": causal, "causal 4-d": causal[None, None],
            "additive": causal + rng.standard_normal((24, 24)), "row": np.where(rng.random(24) < .3, -np.inf, 0.)}[
        mask_kind]
    same_at_every_thread_count(lambda: softmax._masked_softargmax_impl(x, mask, axis=(3,), scale=scale),
                               small_grains)


def test_masked_softargmax_split_writes_into_its_dying_scores(small_grains):
    x = rng.standard_normal((4, 2, 32, 32)) * 50
    mask = np.triu(np.full((32, 32), -np.inf), 1)

    def in_place():
        y = x.copy()
        out = softmax._masked_softargmax_impl(y, mask, axis=(3,), scale=0.5, out=y)
        assert out is y
        return out
    same_at_every_thread_count(in_place, small_grains)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("into", [None, "v", "y"])
def test_softargmax_jacobian_split_is_the_unsplit_result(small_grains, shape, into):
    v = rng.standard_normal(shape)
    y = softmax._softargmax_impl(rng.standard_normal(shape), axis=(len(shape) - 1,), gamma=1.0)

    def run():
        vv, yy = v.copy(), y.copy()
        out = {None: None, "v": vv, "y": yy}[into]
        g = softmax._jacobian_impl(vv, yy, axis=(len(shape) - 1,), scale=0.7, out=out)
        assert out is None or g is out
        return g
    same_at_every_thread_count(run, small_grains)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", ["none", "vectors"])
@pytest.mark.parametrize("in_place", [False, True])
def test_layer_norm_split_is_the_unsplit_result(small_grains, shape, affine, in_place):
    x = rng.standard_normal(shape) * 3 + 1
    n = shape[-1]
    gamma, beta = (np.float64(1.0), np.float64(0.0)) if affine == "none" else (rng.random(n), rng.random(n))

    def run():
        xx = x.copy()
        out = layer_norm._layer_norm_impl(xx, gamma, beta, axes=(-1,), eps=1e-5, out=xx if in_place else None)
        assert out is xx if in_place else out is not xx
        return out
    same_at_every_thread_count(run, small_grains)


def test_layer_norm_split_promotes_float32_rows_to_gamma_dtype(small_grains):
    x, gamma = rng.standard_normal((130, 16)).astype(np.float32), rng.random(16)
    out = same_at_every_thread_count(
        lambda: layer_norm._layer_norm_impl(x, gamma, np.zeros(16), axes=(-1,), eps=1e-5), small_grains)
    assert out.dtype == np.float64


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("into", [None, "v", "x"])
def test_standardize_jacobian_split_is_the_unsplit_result(small_grains, shape, into):
    v, x = rng.standard_normal(shape), rng.standard_normal(shape) * 2

    def run():
        vv, xx = v.copy(), x.copy()
        out = {None: None, "v": vv, "x": xx}[into]
        g = layer_norm._standardize_jacobian_impl(vv, xx, axes=(-1,), eps=1e-5, out=out)
        assert out is None or g is out
        return g
    same_at_every_thread_count(run, small_grains)


@pytest.mark.parametrize("shape", [(200, 37), (5, 40, 16)])
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("ct_kind", ["signed", "positive"])  # positive: exp(z − (lse − log ct)), one pass
def test_cross_entropy_grad_split_is_the_unsplit_result(small_grains, shape, in_place, ct_kind):
    z = rng.standard_normal(shape) * 4
    idx = rng.integers(0, shape[-1], shape[:-1])
    ct = rng.standard_normal(shape[:-1])
    ct = np.abs(ct) if ct_kind == "positive" else ct
    loss = losses._ce_impl(z, idx)

    def run():
        zz = z.copy()
        out = losses._ce_grad_impl(ct, zz, loss, idx, out=zz if in_place else None)
        assert (out is zz) == in_place
        return out
    same_at_every_thread_count(run, small_grains)


def test_cross_entropy_grad_with_an_infinite_loss_is_not_split(small_grains):
    # A row whose loss is inf: the sums are recomputed for every row (the unsplit rule), so nothing is split.
    z = rng.standard_normal((200, 10))
    z[3, 0] = -np.inf
    idx = np.zeros(200, dtype=np.int64)
    loss = losses._ce_impl(z, idx)
    assert np.isinf(loss[3])
    with ad.num_threads(1), np.errstate(invalid="ignore"):  # inf − inf, then the sums recomputed
        want = losses._ce_grad_impl(np.ones(200), z, loss, idx)
    with ad.num_threads(2), np.errstate(invalid="ignore"):
        got = losses._ce_grad_impl(np.ones(200), z, loss, idx)
    assert not small_grains
    np.testing.assert_array_equal(got, want)


def test_small_inputs_are_never_split():
    # The measured grains: the one-thread code for anything below twice a grain, at any thread count.
    calls = []
    run_chunks = parallel.run_chunks
    parallel.run_chunks = lambda *a, **k: calls.append(a)
    try:
        with ad.num_threads(4):
            x = rng.standard_normal((64, 128))
            layer_norm._layer_norm_impl(x, 1.0, 0.0, axes=(-1,), eps=1e-5)
            layer_norm._standardize_jacobian_impl(x, x, axes=(-1,), eps=1e-5)
            softmax._softargmax_impl(x, axis=(1,), gamma=1.0)
            softmax._masked_softargmax_impl(x[None], np.zeros((64, 128)), axis=(2,), scale=1.0)
    finally:
        parallel.run_chunks = run_chunks
    assert not calls


def test_a_jitted_attention_step_is_the_same_on_one_and_two_threads(small_grains):
    # Through the executor (dying operands given as out=, liveness freeing) and the derivative rules.
    q = rng.standard_normal((2, 3, 16, 8))
    mask = np.triu(np.full((16, 16), -np.inf), 1)
    w = rng.standard_normal((8, 8))
    idx = rng.integers(0, 8, (2, 3, 16))

    def loss(q, w):
        s = ad.matmul(q, ad.swapaxes(q, -1, -2))
        p = softmax.masked_softargmax(s, mask, scale=0.35)
        h = layer_norm.layer_norm(ad.matmul(ad.matmul(p, q), w))
        return ad.sum(losses.softmax_cross_entropy(h, idx))
    step = ad.jit(ad.value_and_grad(loss, argnums=(0, 1)))
    with ad.num_threads(1):
        want = step(q, w)
    small_grains.clear()
    with ad.num_threads(2):
        got = step(q, w)
    assert small_grains and max(small_grains) >= 2
    for a, b in zip(ad.tree.flatten(want)[0], ad.tree.flatten(got)[0]):
        assert_split_equal(b, a)


@pytest.mark.parametrize("dtype, ulps", [(np.float64, 64), (np.float32, 64)])
def test_cross_entropy_grad_in_one_pass_is_the_general_path_within_rounding(dtype, ulps):
    # ct > 0 and |z| <= 16: exp(z − (lse − log ct)) − ct at the class; a negated ct takes the general
    # path (shift, − log Σ, exp, one-hot, × ct). The two round differently: the exponent of the one-pass
    # form carries the rounding of lse − log ct (~|lse| + |log ct| ≈ 30 ulp here), hence the tolerance.
    z = (rng.standard_normal((300, 40)) * 5).clip(-16, 16).astype(dtype)
    idx = rng.integers(0, 40, 300)
    ct = (rng.random(300) + 1e-3).astype(dtype)
    loss = losses._ce_impl(z, idx)
    assert losses._offsets(ct, z, loss, idx[:, None]) is not None          # the one-pass path is taken
    assert losses._offsets(-ct, z, loss, idx[:, None]) is None
    one_pass = losses._ce_grad_impl(ct, z, loss, idx)
    general = -losses._ce_grad_impl(-ct, z, loss, idx)
    assert one_pass.dtype == general.dtype == dtype
    np.testing.assert_allclose(one_pass, general, rtol=0, atol=ulps * np.finfo(dtype).eps * np.abs(general).max())
    assert np.abs(z).max() == 16 and losses._offsets(ct, z * 2, loss, idx[:, None]) is None  # |z| to 32: general
