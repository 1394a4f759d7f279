"""Hunt 9: named tensors, forward mode / higher order, recurrent layers and masked attention.

Every check compares against an independent reference: numpy einsum formulas on positional
arrays, JAX (x64) for forward mode and higher derivatives, PyTorch for RNN/GRU/LSTM and
MultiheadAttention with copied weights. Tolerances: float64 results of two code paths that sum
in different orders agree to ~1e-12 relative; 1e-9 leaves room for the conditioning of the
linear-algebra cases (well-conditioned inputs, cond < 10).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import named, nn
from autograd_dag.errors import ShapeError
from autograd_dag.named import NamedTensor, ndot, seed000
from autograd_dag.primitives.fused import layer_norm, masked_softargmax

TOL = dict(rtol=1e-9, atol=1e-10)  # float64, two summation orders (see the module docstring)


def _stored(rng, sizes, names, order):
    """A random array A (axes ``names``) and a NamedTensor holding it in the storage order ``order``."""
    A = rng.normal(size=sizes)
    return A, NamedTensor(A.transpose([names.index(n) for n in order]).copy(), order, requires_grad=True)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


# ------------------------------------------------------------ masked_softargmax's mask dtype

@pytest.mark.parametrize("mask", [np.array([[True, False, True]]), np.array([[1, 0, 1]])], ids=["bool", "int"])
def test_masked_softargmax_refuses_keep_masks(mask):
    # Added as numbers, True/1 raised the kept scores by 1 and masked nothing: softmax([1, 5, 2] + [1, 0, 1])
    # was returned for a mask meant to remove the middle key (0.047 / 0.95 / 0.13 instead of 0.27 / 0 / 0.73).
    with pytest.raises(ShapeError, match=r"masked_softargmax: Expect: an additive float mask"):
        masked_softargmax(ad.Tensor([[1.0, 5.0, 2.0]]), mask)
    with pytest.raises(ShapeError, match=r"additive float mask"):
        ad.jit(lambda x, m: masked_softargmax(x, m))(np.ones((1, 3)), mask)


def test_masked_softargmax_additive_mask_still_works():
    x = np.array([[1.0, 5.0, 2.0]])
    got = masked_softargmax(ad.Tensor(x), np.array([[0.0, -np.inf, 0.0]]), scale=0.5).value
    e = np.exp(0.5 * np.array([1.0, 2.0]))
    np.testing.assert_allclose(got, [[e[0] / e.sum(), 0.0, e[1] / e.sum()]], **TOL)
    # A Python scalar 0 (no mask) stays accepted.
    np.testing.assert_allclose(masked_softargmax(ad.Tensor(x), 0).value, _softmax(x, -1), **TOL)


# ------------------------------------------------------------------- named tensors vs einsum

def test_named_ops_match_einsum_whatever_the_storage_order():
    rng = np.random.default_rng(0)
    A, a = _stored(rng, (2, 3, 4, 5), ["b", "h", "k", "v"], ["v", "k", "b", "h"])
    B, b = _stored(rng, (2, 4, 5, 6), ["b", "k", "v", "s"], ["s", "b", "v", "k"])
    np.testing.assert_allclose(ndot(a, b, ("k", "v")).align("b", "h", "s").value,
                               np.einsum("bhkv,bkvs->bhs", A, B), **TOL)
    np.testing.assert_allclose(named.softmax(a, "k").align("b", "h", "k", "v").value, _softmax(A, 2), **TOL)
    mu = A.mean(1, keepdims=True)
    np.testing.assert_allclose(named.standardize(a, "h").align("b", "h", "k", "v").value,
                               (A - mu) / np.sqrt(((A - mu) ** 2).mean(1, keepdims=True) + 1e-5), **TOL)
    np.testing.assert_allclose(named.flatten(a, ("k", "b"), "L").align("h", "v", "L").value,
                               A.transpose(1, 3, 2, 0).reshape(3, 5, 8), **TOL)
    np.testing.assert_allclose(a.index(h=-1, v=slice(None, None, -2)).align("b", "k", "v").value,
                               A[:, -1, :, ::-2], **TOL)
    C, c = _stored(rng, (4, 7), ["k", "z"], ["z", "k"])
    np.testing.assert_allclose((c - a).align("b", "h", "k", "v", "z").value,
                               C[None, None, :, None, :] - A[..., None], **TOL)


@pytest.mark.usefixtures("jax_x64")
def test_named_seed_attention_matches_numpy_formula():
    rng = np.random.default_rng(1)
    H, S, K, V = 2, 5, 3, 4
    Q, q = _stored(rng, (H, S, K), ["heads", "seq'", "key"], ["key", "seq'", "heads"])
    Kk, k = _stored(rng, (H, S, K), ["heads", "seq", "key"], ["seq", "heads", "key"])
    Vv, v = _stored(rng, (H, S, V), ["heads", "seq", "val"], ["val", "heads", "seq"])
    out = seed000.attention(q, k, v, seed000.causal_mask(S))
    M = np.where(np.arange(S)[:, None] <= np.arange(S)[None, :], 0.0, -np.inf)  # M[seq i, seq' j]
    P = _softmax(np.einsum("hjk,hik->hij", Q, Kk) / math.sqrt(K) + M, 1)
    np.testing.assert_allclose(out.align("heads", "seq'", "val").value, np.einsum("hij,hiv->hjv", P, Vv), **TOL)
    # Its gradient w.r.t. the queries, by JAX on the positional formula.
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    W = rng.normal(size=(H, S, V))

    def f(Qj):
        Pj = jax.nn.softmax(jnp.einsum("hjk,hik->hij", Qj, Kk) / math.sqrt(K) + M, axis=1)
        return jnp.sum(jnp.einsum("hij,hiv->hjv", Pj, Vv) * W)
    (out * NamedTensor(W, "heads seq' val")).nsum(("heads", "seq'", "val")).backward()
    np.testing.assert_allclose(q.grad.align("heads", "seq'", "key").value, np.asarray(jax.grad(f)(Q)), **TOL)


# ----------------------------------------------------------- forward mode and higher order vs JAX

def _jax():
    jax = pytest.importorskip("jax")
    return jax, jax.numpy     # (float64: the jax_x64 fixture of the tests that call this)


def _cases(jnp, jax):
    rng = np.random.default_rng(2)
    spd = lambda lib, b: b @ lib.swapaxes(b, -1, -2) + 3.0 * np.eye(3)  # noqa: E731
    return {
        "layer_norm": (lambda x: layer_norm(x, x[0], 1.0, axes=(-2, -1)),
                       lambda x: (x - x.mean((-2, -1), keepdims=True))
                       / jnp.sqrt(x.var((-2, -1), keepdims=True) + 1e-5) * x[0] + 1.0, rng.normal(size=(2, 3, 4))),
        "masked_softargmax": (lambda x: masked_softargmax(x, np.where(np.tril(np.ones((4, 4))) > 0, 0.0, -np.inf),
                                                          axis=-1, scale=0.5),
                              lambda x: jax.nn.softmax(jnp.where(jnp.tril(jnp.ones((4, 4))) > 0, 0.5 * x, -jnp.inf),
                                                       axis=-1), rng.normal(size=(4, 4))),
        "det": (ad.linalg.det, jnp.linalg.det, rng.normal(size=(2, 3, 3))),
        "cholesky": (lambda b: ad.linalg.cholesky(spd(ad, b)), lambda b: jnp.linalg.cholesky(spd(jnp, b)),
                     rng.normal(size=(3, 3))),
        "solve_bcast": (lambda a: ad.linalg.solve(a + 3 * np.eye(3), a[0, :, :2]),
                        lambda a: jnp.linalg.solve(a + 3 * jnp.eye(3), a[0, :, :2]), rng.normal(size=(2, 3, 3))),
        "eigh": (lambda b: ad.linalg.eigh(b + ad.swapaxes(b, -1, -2))[1] ** 2,
                 lambda b: jnp.linalg.eigh(b + jnp.swapaxes(b, -1, -2))[1] ** 2, rng.normal(size=(3, 3))),
        "max_pool": (lambda x: ad.max_pool2d(x, 2) ** 2,
                     lambda x: jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2),
                                                     "VALID") ** 2, rng.normal(size=(1, 2, 4, 4))),
        "cumprod": (lambda x: ad.cumprod(x, axis=-2), lambda x: jnp.cumprod(x, axis=-2), rng.normal(size=(3, 2))),
    }


@pytest.mark.usefixtures("jax_x64")
@pytest.mark.parametrize("case", ["layer_norm", "masked_softargmax", "det", "cholesky", "solve_bcast", "eigh",
                                  "max_pool", "cumprod"])
def test_forward_and_higher_order_match_jax(case):
    jax, jnp = _jax()
    fa, fj, x = _cases(jnp, jax)[case]
    rng = np.random.default_rng(3)
    v = rng.normal(size=x.shape)
    W = rng.normal(size=np.shape(fj(x)))
    sa = lambda z: ad.sum(fa(z) * W)  # noqa: E731
    sj = lambda z: jnp.sum(fj(z) * W)  # noqa: E731
    np.testing.assert_allclose(np.asarray(ad.jvp(fa, (x,), (v,))[1]), jax.jvp(fj, (x,), (v,))[1], **TOL)
    hvp_j = np.asarray(jax.jvp(jax.grad(sj), (x,), (v,))[1])
    np.testing.assert_allclose(np.asarray(ad.hvp(sa, x, v)), hvp_j, **TOL)                 # forward over reverse
    H = np.asarray(ad.hessian(sa)(x)).reshape(x.size, x.size)                              # reverse over reverse
    np.testing.assert_allclose(H @ v.ravel(), hvp_j.ravel(), **TOL)
    third = ad.grad(lambda z: ad.sum(ad.grad(lambda y: ad.sum(ad.grad(sa)(y) * v))(z) * v))(x)
    third_j = jax.grad(lambda z: jnp.vdot(jax.jvp(jax.grad(sj), (z,), (v,))[1], v))(x)
    np.testing.assert_allclose(np.asarray(getattr(third, "value", third)), third_j, rtol=1e-8, atol=1e-9)


# ------------------------------------------------------------------- recurrent layers vs torch

@pytest.mark.parametrize("kind", ["elman", "gru", "lstm"])
@pytest.mark.parametrize("length", [1, 4])
def test_rnn_matches_torch_with_initial_state(kind, length):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    D, H, B = 3, 5, 2
    cell = nn.make_cell(kind, D, H, rng=1)
    tm = {"elman": torch.nn.RNN, "gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[kind](D, H, batch_first=True).double()
    for ours, theirs in (("weight_ih", "weight_ih_l0"), ("weight_hh", "weight_hh_l0"), ("bias_ih", "bias_ih_l0"),
                         ("bias_hh", "bias_hh_l0")):
        getattr(tm, theirs).data = torch.tensor(getattr(cell, ours).value)
    x, h0, c0 = rng.normal(size=(B, length, D)), rng.normal(size=(B, H)), rng.normal(size=(B, H))
    z0 = np.concatenate([h0, c0], -1) if kind == "lstm" else h0
    xt = torch.tensor(x, requires_grad=True)
    out_t = tm(xt, (torch.tensor(h0[None]), torch.tensor(c0[None])) if kind == "lstm" else torch.tensor(h0[None]))[0]
    xa = ad.Tensor(x, requires_grad=True)
    out = nn.RNN(cell)(xa, z0)
    W = rng.normal(size=out.shape)
    (out_t * torch.tensor(W)).sum().backward()
    ad.sum(out * W).backward()
    np.testing.assert_allclose(out.value, out_t.detach().numpy(), **TOL)
    np.testing.assert_allclose(xa.grad, xt.grad.numpy(), **TOL)
    np.testing.assert_allclose(cell.weight_hh.grad, tm.weight_hh_l0.grad.numpy(), **TOL)


def test_multihead_attention_key_padding_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    B, L, S, d, h = 2, 4, 5, 6, 3
    m = nn.MultiHeadAttention(d, h, rng=1)
    t = torch.nn.MultiheadAttention(d, h, bias=False, batch_first=True).double()
    flat = lambda W: W.value.transpose(1, 0, 2).reshape(d, -1).T  # noqa: E731  (heads·key, d_model)
    t.in_proj_weight.data = torch.tensor(np.concatenate([flat(m.W_Q), flat(m.W_K), flat(m.W_V)]))
    t.out_proj.weight.data = torch.tensor(m.W_O.value.reshape(-1, d).T.copy())
    x, mem = rng.normal(size=(B, L, d)), rng.normal(size=(B, S, d))
    pad = np.zeros((B, S), bool)
    pad[0, 3:], pad[1, 4:] = True, True                                   # torch: True = padding
    ours = m(x, mem, mask=~pad[:, None, :]).value                         # ours: True = attend
    theirs = t(torch.tensor(x), torch.tensor(mem), torch.tensor(mem), key_padding_mask=torch.tensor(pad))[0]
    np.testing.assert_allclose(ours, theirs.detach().numpy(), **TOL)
    # A fully masked query row: torch returns NaN, we raise naming the row.
    keep = np.ones((B, L, L), bool)
    keep[0, 1] = False
    with pytest.raises(ShapeError, match="query row 1"):
        m(x, mask=keep)
