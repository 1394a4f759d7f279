"""Whole-model training steps (issue 13): forward + backward against hand-written numpy and the peers.

Four models, each one step of forward + backward (the loss and every parameter's gradient):

* ``micrograd``  micrograd's demo: a scalar MLP 2-16-16-1 on 100 two-moons points, every
                 weight a 0-d Tensor, max-margin loss + L2 (built and differentiated scalar by
                 scalar, as micrograd does it); reported as a ratio to micrograd.
* ``mlp``        MLP 784-512-512-10, ReLU, softmax cross-entropy, batch 256.
* ``transformer`` seed 000's Transformer LM: 2 post-LN blocks, d 128, 4 heads, FFN 512,
                 vocab 256, T 64, batch 16, tied output matrix, cross-entropy.
* ``lenet``      LeNet: conv 6@5×5, relu, pool 2, conv 16@5×5, relu, pool 2, 120, 84, 10;
                 batch 64 of 1×28×28.

Rows per model and dtype (float64 and float32): ``numpy`` (forward and backward written by
hand in this file: the practical limit; its gradients are checked against ours to 1e-10 in
float64), ``eager`` (record, then ``loss.backward()``), ``jit`` (``ad.jit(ad.value_and_grad(f))``,
traced once), ``torch`` (PyTorch CPU with as many threads as numpy's BLAS, when installed),
``jax`` (``jax.jit(jax.value_and_grad(f))``, when installed), for the scalar MLP
``micrograd`` (when installed) and, for the MLP, ``products``: the numpy step's eight matrix
products alone, the floor under every row (timed, not checked).  Timings are interleaved (one call of every row per round),
with ``gc.collect()`` and a short pause outside the timed region; the table shows the median,
the inter-quartile range and the minimum, and the ratio of medians to the numpy row (to
micrograd for the scalar MLP).  numpy's BLAS, torch and XLA run on ONE thread by default
(``--threads``), the process pinned to one CPU (XLA's thread flags alone left it two): on a shared machine a two-thread OpenBLAS measured 100x slower on these
products, its threads spinning for each other.  ``peak MiB`` is the
tracemalloc high-water mark of one step (numpy reports its buffers to tracemalloc; not
available for torch and jax; for jit, counting the arrays its executor keeps between calls),
and ``mem ×`` its ratio to the numpy row.  ``faults`` is the median number of minor page faults
per call: glibc gives the top of its heap back to the system when enough of it is free, and
then every page of the next step's arrays is faulted in again (~15,000 per Transformer step,
the larger part of a step's time on a loaded machine); which row pays for it depends on which
one frees the top of the heap, i.e. on the order the rows run in (the eager row's parameter
gradients, kept between its calls, hold the heap for the rows after it).  ``--keep-heap``
asks glibc (mallopt) to keep its heap and to serve large arrays from it, for every row alike:
the rows then compare their computation, without the page faults.  The run ends with issue 13's
goals beside this run's ratios, each marked met or not.

Run:  python benchmarks/bench_models.py [--quick] [--models mlp,lenet] [--dtypes float64]
      [--repeat 15] [--threads 1] [--no-peers] [--keep-heap] [--json out.json]
(``make bench`` runs it with the other benchmarks.)
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import functools
import gc
import json
import math
import os
import platform
import random
import sys
import time
import tracemalloc

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import autograd_dag as ad
from autograd_dag import nn
from autograd_dag.nn import functional as F

SEED = 0


def blas_threads() -> int:
    """The number of threads numpy's BLAS uses now."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return 1
    counts = [i.get("num_threads", 1) for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(counts) if counts else 1


def minor_faults() -> int:
    """Minor page faults of this process so far (0 where ``resource`` is missing)."""
    try:
        import resource
    except ImportError:
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def keep_heap() -> bool:
    """Ask glibc to keep its heap (no trimming) and to serve large arrays from it (no mmap).

    Applies to every row alike; False where the C library is not glibc.
    """
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(mallopt(m_trim_threshold, 1 << 30)) and bool(mallopt(m_mmap_threshold, 1 << 25))


def limit_threads(n: int):
    """Context manager: numpy's BLAS on ``n`` threads (a no-op without threadpoolctl).

    On a loaded machine a multi-threaded BLAS can be 100x slower than one thread (its
    threads spin waiting for each other), so the default is one thread for every library.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


def pin_to_one_cpu() -> int | None:
    """Run this process on one CPU only (Linux); returns it, or None where affinity cannot be set.

    Thread settings alone do not keep every peer on one core: jax 0.10's XLA
    ran a 256x784 @ 784x512 product in 1.66 ms of wall time and 2.64 ms of CPU
    time with ``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``
    (2.05 ms and 2.05 ms pinned, numpy's own 2.06 ms), so its row was measured on two cores.
    """
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpu = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


# ------------------------------------------------------------ helpers


def _ce_forward_backward(z: np.ndarray, labels: np.ndarray):
    """Mean softmax cross-entropy over the rows of z (N, C) and its gradient."""
    m = z.max(axis=-1, keepdims=True)
    e = np.exp(z - m)
    s = e.sum(axis=-1, keepdims=True)
    rows = np.arange(z.shape[0])
    loss = np.mean(np.log(s[:, 0]) + m[:, 0] - z[rows, labels])
    dz = e / s
    dz[rows, labels] -= 1.0
    dz /= z.shape[0]
    return loss, dz


def _compare(name: str, ours: dict, ref: dict, tol: float) -> float:
    """Largest |ours − ref| / max(1, |ref|max) over the parameters; raises past ``tol``."""
    worst = 0.0
    for key, r in ref.items():
        o = np.asarray(ours[key])
        if o.shape != r.shape:
            raise AssertionError(f"{name}: gradient of {key} has shape {o.shape}, numpy's {r.shape}")
        err = float(np.max(np.abs(o.astype(np.float64) - r))) / max(1.0, float(np.max(np.abs(r))))
        worst = max(worst, err)
    if worst > tol:
        raise AssertionError(f"{name}: gradients differ from the hand-written numpy ones by {worst:.3g} > {tol:g}")
    return worst


class Workload:
    """A model, its data and the implementations of one training step."""

    name = ""
    title = ""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self.rows = {}          # row name -> callable returning (loss, grads dict)

    @functools.cached_property
    def named(self) -> list:
        """The model's (name, parameter) pairs, listed once: each row's bookkeeping is a loop
        over this list, as the torch row's is over its dict (a walk of the module tree per
        step, as zero_grad() and named_parameters() make, measured 0.06 ms each)."""
        return list(self.model.named_parameters())

    def params(self) -> dict:
        return {k: p.value for k, p in self.named}

    def eager_grads(self) -> tuple:
        for _, p in self.named:
            p.grad = None
        loss = self.loss_of_model()
        loss.backward()
        return loss.value, {k: p.grad.value for k, p in self.named}

    def jit_step(self):
        """Our ``ad.jit`` training step (not yet traced) and its arguments: ``step(*args) -> (loss, grads)``."""
        def f(params, *data):
            return self.loss_of(nn.functional_call(self.model, params, *data[:1]), *data[1:])
        return ad.jit(ad.value_and_grad(f)), (self.params(), *self.data())

    def make_jit(self):
        step, (_, *data) = self.jit_step()

        def run():
            return step(self.params(), *data)
        return run

    def build(self) -> None:
        self.rows["numpy"] = lambda: self.numpy_step(self.params())
        self.rows["eager"] = self.eager_grads
        self.rows["jit"] = self.make_jit()

    def data(self):
        return self.x, self.y

    def loss_of(self, logits, y):
        return F.cross_entropy(logits, y)

    def loss_of_model(self):
        x, *rest = self.data()
        return self.loss_of(self.model(x), *rest)


# ------------------------------------------------------------ MLP 784-512-512-10


class MLPWorkload(Workload):
    name = "mlp"
    title = "MLP 784-512-512-10 relu, softmax cross-entropy, batch 256"

    def __init__(self, dtype):
        super().__init__(dtype)
        rng = np.random.default_rng(SEED)
        self.model = nn.MLP([784, 512, 512, 10], activation="relu", rng=SEED, dtype=self.dtype)
        self.x = rng.standard_normal((256, 784)).astype(self.dtype)
        self.y = rng.integers(0, 10, 256)
        self.build()

    def numpy_step(self, p):
        x, y = self.x, self.y
        W = [p[f"layers.{i}.weight"] for i in range(3)]
        b = [p[f"layers.{i}.bias"] for i in range(3)]
        h1 = np.maximum(x @ W[0].T + b[0], 0)
        h2 = np.maximum(h1 @ W[1].T + b[1], 0)
        z = h2 @ W[2].T + b[2]
        loss, dz = _ce_forward_backward(z, y)
        g = {"layers.2.weight": dz.T @ h2, "layers.2.bias": dz.sum(0)}
        dh = (dz @ W[2]) * (h2 > 0)
        g["layers.1.weight"], g["layers.1.bias"] = dh.T @ h1, dh.sum(0)
        dh = (dh @ W[1]) * (h1 > 0)
        g["layers.0.weight"], g["layers.0.bias"] = dh.T @ x, dh.sum(0)
        return loss, g

    def products_step(self):
        """The numpy step's matrix products alone, on operands of the same shapes and layouts.

        Every row does these eight GEMMs (the MLP's step is little else), so on one
        BLAS thread this row is the floor under all of them.
        """
        p = self.params()
        x, (W0, W1, W2) = self.x, (p[f"layers.{i}.weight"] for i in range(3))
        h1 = x @ W0.T
        h2 = h1 @ W1.T
        dz = h2 @ W2.T                    # stands in for the loss's cotangent (same shape)
        g2, dh = dz.T @ h2, dz @ W2
        g1, dh = dh.T @ h1, dh @ W1
        return g2, g1, dh.T @ x

    def torch_step(self, torch):
        p = {k: torch.tensor(v, requires_grad=True) for k, v in self.params().items()}
        x, y = torch.tensor(self.x), torch.tensor(self.y)
        fn = torch.nn.functional

        def run():
            for t in p.values():
                t.grad = None
            h = fn.relu(fn.linear(x, p["layers.0.weight"], p["layers.0.bias"]))
            h = fn.relu(fn.linear(h, p["layers.1.weight"], p["layers.1.bias"]))
            loss = fn.cross_entropy(fn.linear(h, p["layers.2.weight"], p["layers.2.bias"]), y)
            loss.backward()
            return loss.item(), {k: t.grad.numpy() for k, t in p.items()}
        return run

    def jax_step(self, jax, jnp):
        x, y = jnp.asarray(self.x), jnp.asarray(self.y)

        def f(p):
            h = jax.nn.relu(x @ p["layers.0.weight"].T + p["layers.0.bias"])
            h = jax.nn.relu(h @ p["layers.1.weight"].T + p["layers.1.bias"])
            z = h @ p["layers.2.weight"].T + p["layers.2.bias"]
            return jnp.mean(jax.nn.logsumexp(z, -1) - jnp.take_along_axis(z, y[:, None], -1)[:, 0])
        return _jax_runner(jax, f, self.params())


def _jax_runner(jax, f, params):
    step = jax.jit(jax.value_and_grad(f))
    p = {k: jax.numpy.asarray(v) for k, v in params.items()}

    def run():
        loss, g = step(p)
        jax.block_until_ready(g)
        return float(loss), {k: np.asarray(v) for k, v in g.items()}
    return run


# ------------------------------------------------------------ Transformer LM (seed 000)


def _layer_norm_fwd(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    c = x - mu
    var = (c * c).mean(-1, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    xhat = c * inv
    return xhat * gamma + beta, (xhat, inv)


def _layer_norm_bwd(dy, gamma, saved):
    xhat, inv = saved
    dxhat = dy * gamma
    dx = inv * (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    flat = dy.reshape(-1, dy.shape[-1])
    return dx, (flat * xhat.reshape(flat.shape)).sum(0), flat.sum(0)


class TransformerWorkload(Workload):
    name = "transformer"
    title = "Transformer LM (seed 000): 2 post-LN blocks, d 128, 4 heads, FFN 512, vocab 256, T 64, batch 16"

    V, D, H, FF, T, B, L = 256, 128, 4, 512, 64, 16, 2

    def __init__(self, dtype):
        super().__init__(dtype)
        self.model = nn.TransformerLM(self.V, d_model=self.D, heads=self.H, hidden=self.FF, layers=self.L,
                                      rng=SEED, dtype=self.dtype)
        tokens = np.random.default_rng(SEED + 1).integers(0, self.V, (self.B, self.T + 1))
        self.inputs, self.targets = tokens[:, :-1], tokens[:, 1:]
        self.P = nn.positional_encoding(self.T, self.D, dtype=self.dtype)
        self.M = nn.causal_mask(self.T, dtype=self.dtype)
        self.build()

    def data(self):
        return self.inputs, self.targets

    def loss_of_model(self):
        return F.cross_entropy(self.model.logits(self.inputs), self.targets)

    def jit_step(self):
        wrapper = _Logits(self.model)

        def loss(params, tokens, targets):
            # functional_call runs forward() (the probabilities); the loss needs the logits.
            return F.cross_entropy(nn.functional_call(wrapper, {"inner." + k: v for k, v in params.items()},
                                                      tokens), targets)
        return ad.jit(ad.value_and_grad(loss)), (self.params(), self.inputs, self.targets)

    def make_jit(self):
        step, _ = self.jit_step()

        def run():
            return step(self.params(), self.inputs, self.targets)
        return run

    def numpy_step(self, p):
        B, T, D, H = self.B, self.T, self.D, self.H
        k = D // H
        E = p["E"]
        ids = self.inputs
        x = E[ids] * math.sqrt(D) + self.P                     # (B, T, D)
        saved = []
        for l in range(self.L):
            pre = f"block.{l}."
            WQ = p[pre + "attention.W_Q"].transpose(1, 0, 2).reshape(D, D)
            WK = p[pre + "attention.W_K"].transpose(1, 0, 2).reshape(D, D)
            WV = p[pre + "attention.W_V"].transpose(1, 0, 2).reshape(D, D)
            WO = p[pre + "attention.W_O"].reshape(D, D)
            X = x.reshape(-1, D)
            qkv = X @ np.concatenate([WQ, WK, WV], axis=1)    # (BT, 3D)
            Q, K, Vv = (qkv[:, i * D:(i + 1) * D].reshape(B, T, H, k).transpose(0, 2, 1, 3) for i in range(3))
            S = Q @ K.transpose(0, 1, 3, 2) * (1.0 / math.sqrt(k)) + self.M
            A = np.exp(S - S.max(-1, keepdims=True))
            A /= A.sum(-1, keepdims=True)
            O = (A @ Vv).transpose(0, 2, 1, 3).reshape(-1, D)
            Y = O @ WO
            t, ln1 = _layer_norm_fwd(Y + X, p[pre + "norm1.gamma"], p[pre + "norm1.beta"], 1e-5)
            W1, b1, W2, b2 = (p[pre + "ffn." + n] for n in ("W1", "b1", "W2", "b2"))
            hpre = t @ W1.T + b1
            h = np.maximum(hpre, 0)
            out, ln2 = _layer_norm_fwd(h @ W2.T + b2 + t, p[pre + "norm2.gamma"], p[pre + "norm2.beta"], 1e-5)
            saved.append((X, qkv, Q, K, Vv, A, O, WQ, WK, WV, WO, ln1, t, h, ln2))
            x = out.reshape(B, T, D)
        X = x.reshape(-1, D)
        z = X @ E.T
        loss, dz = _ce_forward_backward(z, self.targets.reshape(-1))
        g = {"E": dz.T @ X}
        dx = dz @ E
        for l in reversed(range(self.L)):
            pre = f"block.{l}."
            X, qkv, Q, K, Vv, A, O, WQ, WK, WV, WO, ln1, t, h, ln2 = saved[l]
            W1, W2 = p[pre + "ffn.W1"], p[pre + "ffn.W2"]
            dres, g[pre + "norm2.gamma"], g[pre + "norm2.beta"] = _layer_norm_bwd(dx, p[pre + "norm2.gamma"], ln2)
            g[pre + "ffn.W2"], g[pre + "ffn.b2"] = dres.T @ h, dres.sum(0)
            dh = (dres @ W2) * (h > 0)
            g[pre + "ffn.W1"], g[pre + "ffn.b1"] = dh.T @ t, dh.sum(0)
            dt = dh @ W1 + dres
            dres, g[pre + "norm1.gamma"], g[pre + "norm1.beta"] = _layer_norm_bwd(dt, p[pre + "norm1.gamma"], ln1)
            g[pre + "attention.W_O"] = (O.T @ dres).reshape(H, k, D)
            dO = (dres @ WO.T).reshape(B, T, H, k).transpose(0, 2, 1, 3)
            dA = dO @ Vv.transpose(0, 1, 3, 2)
            dV = A.transpose(0, 1, 3, 2) @ dO
            dS = A * (dA - (dA * A).sum(-1, keepdims=True)) * (1.0 / math.sqrt(k))
            dQ, dK = dS @ K, dS.transpose(0, 1, 3, 2) @ Q
            dqkv = np.concatenate([d.transpose(0, 2, 1, 3).reshape(-1, D) for d in (dQ, dK, dV)], axis=1)
            dW = X.T @ dqkv
            for i, n in enumerate(("W_Q", "W_K", "W_V")):
                g[pre + "attention." + n] = dW[:, i * D:(i + 1) * D].reshape(D, H, k).transpose(1, 0, 2)
            dx = dqkv @ np.concatenate([WQ, WK, WV], axis=1).T + dres
        dx = dx.reshape(B, T, D) * math.sqrt(D)
        gE = g["E"]
        np.add.at(gE, ids.reshape(-1), dx.reshape(-1, D))
        return loss, g

    def torch_step(self, torch):
        p = {k: torch.tensor(v, requires_grad=True) for k, v in self.params().items()}
        ids, tg = torch.tensor(self.inputs), torch.tensor(self.targets)
        P, M = torch.tensor(self.P), torch.tensor(self.M)
        fn = torch.nn.functional
        B, T, D, H = self.B, self.T, self.D, self.H
        k = D // H

        def run():
            for t in p.values():
                t.grad = None
            x = p["E"][ids] * math.sqrt(D) + P
            for l in range(self.L):
                pre = f"block.{l}."

                def proj(name):
                    W = p[pre + "attention." + name].transpose(0, 1).reshape(D, D)
                    return (x.reshape(-1, D) @ W).reshape(B, T, H, k).transpose(1, 2)
                Q, K, Vv = proj("W_Q"), proj("W_K"), proj("W_V")
                A = torch.softmax(Q @ K.transpose(-1, -2) / math.sqrt(k) + M, -1)
                Y = (A @ Vv).transpose(1, 2).reshape(B, T, D) @ p[pre + "attention.W_O"].reshape(D, D)
                t = fn.layer_norm(Y + x, (D,), p[pre + "norm1.gamma"], p[pre + "norm1.beta"], 1e-5)
                f = fn.linear(fn.relu(fn.linear(t, p[pre + "ffn.W1"], p[pre + "ffn.b1"])),
                              p[pre + "ffn.W2"], p[pre + "ffn.b2"])
                x = fn.layer_norm(f + t, (D,), p[pre + "norm2.gamma"], p[pre + "norm2.beta"], 1e-5)
            loss = fn.cross_entropy((x @ p["E"].T).reshape(-1, self.V), tg.reshape(-1))
            loss.backward()
            return loss.item(), {k: t.grad.numpy() for k, t in p.items()}
        return run

    def jax_step(self, jax, jnp):
        ids, tg = jnp.asarray(self.inputs), jnp.asarray(self.targets)
        P, M = jnp.asarray(self.P), jnp.asarray(self.M)
        B, T, D, H = self.B, self.T, self.D, self.H
        k = D // H

        def ln(x, g, b):
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            return (x - mu) / jnp.sqrt(var + 1e-5) * g + b

        def f(p):
            x = p["E"][ids] * math.sqrt(D) + P
            for l in range(self.L):
                pre = f"block.{l}."

                def proj(name):
                    W = p[pre + "attention." + name].transpose(1, 0, 2).reshape(D, D)
                    return (x.reshape(-1, D) @ W).reshape(B, T, H, k).transpose(0, 2, 1, 3)
                Q, K, Vv = proj("W_Q"), proj("W_K"), proj("W_V")
                A = jax.nn.softmax(Q @ K.transpose(0, 1, 3, 2) / math.sqrt(k) + M, -1)
                Y = (A @ Vv).transpose(0, 2, 1, 3).reshape(B, T, D) @ p[pre + "attention.W_O"].reshape(D, D)
                t = ln(Y + x, p[pre + "norm1.gamma"], p[pre + "norm1.beta"])
                hh = jax.nn.relu(t @ p[pre + "ffn.W1"].T + p[pre + "ffn.b1"])
                x = ln(hh @ p[pre + "ffn.W2"].T + p[pre + "ffn.b2"] + t, p[pre + "norm2.gamma"], p[pre + "norm2.beta"])
            z = (x @ p["E"].T).reshape(-1, self.V)
            return jnp.mean(jax.nn.logsumexp(z, -1) - jnp.take_along_axis(z, tg.reshape(-1, 1), -1)[:, 0])
        return _jax_runner(jax, f, self.params())


class _Logits(nn.Module):
    """A model whose forward is ``inner.logits`` (for functional_call, which runs ``forward``)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, t):
        return self.inner.logits(t)


# ------------------------------------------------------------ LeNet


def _im2col(x, kh, kw):
    """(N, C, H, W) -> rows (N·Ho·Wo, C·kh·kw) of every kernel-sized window (one copy)."""
    win = sliding_window_view(x, (kh, kw), axis=(2, 3))            # (N, C, Ho, Wo, kh, kw)
    n, c, ho, wo = win.shape[:4]
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(n * ho * wo, c * kh * kw), (n, ho, wo)


def _col2im(dcols, x_shape, kh, kw, ho, wo):
    n, c, h, w = x_shape
    d = dcols.reshape(n, ho, wo, c, kh, kw)
    dx = np.zeros((n, h, w, c), dtype=dcols.dtype)
    for i in range(kh):
        for j in range(kw):
            dx[:, i:i + ho, j:j + wo, :] += d[:, :, :, :, i, j]
    return dx.transpose(0, 3, 1, 2)


def _pool_fwd(x):
    n, c, h, w = x.shape
    win = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
    k = win.argmax(-1)
    return np.take_along_axis(win, k[..., None], -1)[..., 0], k


def _pool_bwd(dy, k, shape):
    n, c, h, w = shape
    d = np.zeros(dy.shape + (4,), dtype=dy.dtype)
    np.put_along_axis(d, k[..., None], dy[..., None], -1)
    return d.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(shape)


class LeNetWorkload(Workload):
    name = "lenet"
    title = "LeNet (conv 6@5×5, relu, pool 2, conv 16@5×5, relu, pool 2, 120, 84, 10), batch 64, 1×28×28"

    def __init__(self, dtype):
        super().__init__(dtype)
        rng = np.random.default_rng(SEED)
        g = np.random.default_rng(SEED + 2)
        d = self.dtype
        self.model = nn.Sequential(
            nn.Conv2d(1, 6, 5, rng=g, dtype=d), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5, rng=g, dtype=d), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(256, 120, init="he", rng=g, dtype=d), nn.ReLU(),
            nn.Linear(120, 84, init="he", rng=g, dtype=d), nn.ReLU(),
            nn.Linear(84, 10, rng=g, dtype=d))
        self.x = rng.standard_normal((64, 1, 28, 28)).astype(d)
        self.y = rng.integers(0, 10, 64)
        self.build()

    def numpy_step(self, p):
        x, y = self.x, self.y
        W1, b1, W2, b2 = p["0.weight"], p["0.bias"], p["3.weight"], p["3.bias"]
        c1, (n, h1, w1) = _im2col(x, 5, 5)
        a1 = (c1 @ W1.reshape(6, -1).T + b1).reshape(n, h1, w1, 6).transpose(0, 3, 1, 2)
        r1 = np.maximum(a1, 0)
        p1, k1 = _pool_fwd(r1)
        c2, (_, h2, w2) = _im2col(p1, 5, 5)
        a2 = (c2 @ W2.reshape(16, -1).T + b2).reshape(n, h2, w2, 16).transpose(0, 3, 1, 2)
        r2 = np.maximum(a2, 0)
        p2, k2 = _pool_fwd(r2)
        f = p2.reshape(n, -1)
        Ws = [p[f"{i}.weight"] for i in (7, 9, 11)]
        bs = [p[f"{i}.bias"] for i in (7, 9, 11)]
        f1 = np.maximum(f @ Ws[0].T + bs[0], 0)
        f2 = np.maximum(f1 @ Ws[1].T + bs[1], 0)
        z = f2 @ Ws[2].T + bs[2]
        loss, dz = _ce_forward_backward(z, y)
        g = {"11.weight": dz.T @ f2, "11.bias": dz.sum(0)}
        dh = (dz @ Ws[2]) * (f2 > 0)
        g["9.weight"], g["9.bias"] = dh.T @ f1, dh.sum(0)
        dh = (dh @ Ws[1]) * (f1 > 0)
        g["7.weight"], g["7.bias"] = dh.T @ f, dh.sum(0)
        df = dh @ Ws[0]
        da2 = _pool_bwd(df.reshape(p2.shape), k2, r2.shape) * (a2 > 0)
        rows2 = da2.transpose(0, 2, 3, 1).reshape(-1, 16)
        g["3.weight"], g["3.bias"] = (rows2.T @ c2).reshape(W2.shape), rows2.sum(0)
        dp1 = _col2im(rows2 @ W2.reshape(16, -1), p1.shape, 5, 5, h2, w2)
        da1 = _pool_bwd(dp1, k1, r1.shape) * (a1 > 0)
        rows1 = da1.transpose(0, 2, 3, 1).reshape(-1, 6)
        g["0.weight"], g["0.bias"] = (rows1.T @ c1).reshape(W1.shape), rows1.sum(0)
        return loss, g

    def torch_step(self, torch):
        p = {k: torch.tensor(v, requires_grad=True) for k, v in self.params().items()}
        x, y = torch.tensor(self.x), torch.tensor(self.y)
        fn = torch.nn.functional

        def run():
            for t in p.values():
                t.grad = None
            h = fn.max_pool2d(fn.relu(fn.conv2d(x, p["0.weight"], p["0.bias"])), 2)
            h = fn.max_pool2d(fn.relu(fn.conv2d(h, p["3.weight"], p["3.bias"])), 2).flatten(1)
            h = fn.relu(fn.linear(h, p["7.weight"], p["7.bias"]))
            h = fn.relu(fn.linear(h, p["9.weight"], p["9.bias"]))
            loss = fn.cross_entropy(fn.linear(h, p["11.weight"], p["11.bias"]), y)
            loss.backward()
            return loss.item(), {k: t.grad.numpy() for k, t in p.items()}
        return run

    def jax_step(self, jax, jnp):
        x, y = jnp.asarray(self.x), jnp.asarray(self.y)
        lax = jax.lax

        def conv(h, W, b):
            return lax.conv_general_dilated(h, W, (1, 1), "VALID") + b[None, :, None, None]

        def pool(h):
            return lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

        def f(p):
            h = pool(jax.nn.relu(conv(x, p["0.weight"], p["0.bias"])))
            h = pool(jax.nn.relu(conv(h, p["3.weight"], p["3.bias"]))).reshape(x.shape[0], -1)
            h = jax.nn.relu(h @ p["7.weight"].T + p["7.bias"])
            h = jax.nn.relu(h @ p["9.weight"].T + p["9.bias"])
            z = h @ p["11.weight"].T + p["11.bias"]
            return jnp.mean(jax.nn.logsumexp(z, -1) - jnp.take_along_axis(z, y[:, None], -1)[:, 0])
        return _jax_runner(jax, f, self.params())


# ------------------------------------------------------------ micrograd's demo (scalars)


def make_moons(n: int, noise: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """sklearn's two interleaving half circles (written here to need no sklearn)."""
    n_out, n_in = n // 2, n - n // 2
    t_out, t_in = np.linspace(0, np.pi, n_out), np.linspace(0, np.pi, n_in)
    X = np.vstack([np.stack([np.cos(t_out), np.sin(t_out)], 1),
                   np.stack([1 - np.cos(t_in), 1 - np.sin(t_in) - 0.5], 1)])
    y = np.concatenate([np.zeros(n_out, int), np.ones(n_in, int)])
    return X + noise * rng.standard_normal(X.shape), y


class MicrogradWorkload(Workload):
    """The demo of micrograd's README, each scalar a node, in every library that can take it."""

    name = "micrograd"
    title = "micrograd demo: scalar MLP 2-16-16-1, 100 points, max-margin + L2 (build + backward)"
    sizes = (2, 16, 16, 1)

    def __init__(self, dtype):
        super().__init__(dtype)
        rng = np.random.default_rng(SEED)
        X, y = make_moons(100, 0.1, rng)
        self.X = X.astype(self.dtype)
        self.yy = (y * 2 - 1).astype(self.dtype)
        self.W = [rng.uniform(-1, 1, (b, a)).astype(self.dtype) for a, b in zip(self.sizes, self.sizes[1:])]
        self.b = [np.zeros(b, dtype=self.dtype) for b in self.sizes[1:]]
        # Our parameters: one 0-d Tensor per scalar, as micrograd's Values.
        self.pt = [[[ad.Tensor(np.array(v), requires_grad=True) for v in row] for row in W] for W in self.W]
        self.pb = [[ad.Tensor(np.array(v), requires_grad=True) for v in bb] for bb in self.b]
        self.rows["numpy"] = lambda: self.numpy_step()
        self.rows["eager"] = self.eager_step
        self.rows["jit"] = self.make_jit()

    def params(self):
        return {f"W{i}": W for i, W in enumerate(self.W)} | {f"b{i}": b for i, b in enumerate(self.b)}

    def scalar_loss(self, W, b, X, yy, one):
        """micrograd's demo loss on nested lists of scalars (W[l][j][i], b[l][j]); ``one`` is 1.0."""
        n_layers = len(W)
        losses = []
        for xrow, yi in zip(X, yy):
            act = list(xrow)
            for li in range(n_layers):
                act = [sum((wi * xi for wi, xi in zip(wrow, act)), bj) for wrow, bj in zip(W[li], b[li])]
                if li != n_layers - 1:
                    act = [a.relu() if hasattr(a, "relu") else ad.relu(a) for a in act]
            score = act[0]
            m = one + -yi * score
            losses.append(m.relu() if hasattr(m, "relu") else ad.relu(m))
        data_loss = sum(losses) * (1.0 / len(losses))
        params = [w for Wl in W for row in Wl for w in row] + [bj for bl in b for bj in bl]
        reg_loss = 1e-4 * sum(p * p for p in params)
        return data_loss + reg_loss

    def eager_step(self):
        params = [w for Wl in self.pt for row in Wl for w in row] + [bj for bl in self.pb for bj in bl]
        for p in params:
            p.grad = None
        X = [[float(v) for v in row] for row in self.X]
        loss = self.scalar_loss(self.pt, self.pb, X, [float(v) for v in self.yy], 1.0)
        loss.backward()
        return loss.value, {f"W{l}": np.array([[w.grad.value for w in row] for row in Wl])
                            for l, Wl in enumerate(self.pt)} | \
            {f"b{l}": np.array([bj.grad.value for bj in bl]) for l, bl in enumerate(self.pb)}

    def jit_step(self):
        X = [[float(v) for v in row] for row in self.X]
        yy = [float(v) for v in self.yy]

        def f(W, b):
            return self.scalar_loss(W, b, X, yy, 1.0)
        Wn = [[[np.array(v) for v in row] for row in W] for W in self.W]
        bn = [[np.array(v) for v in bb] for bb in self.b]
        return ad.jit(ad.value_and_grad(f, argnums=(0, 1))), (Wn, bn)

    def make_jit(self):
        step, (Wn, bn) = self.jit_step()

        def run():
            loss, (gW, gb) = step(Wn, bn)
            return loss, {f"W{l}": np.array([[float(w) for w in row] for row in Wl]) for l, Wl in enumerate(gW)} | \
                {f"b{l}": np.array([float(v) for v in bl]) for l, bl in enumerate(gb)}
        return run

    def numpy_step(self):
        """The same loss vectorised over the 100 points, gradient by hand."""
        X, yy = self.X, self.yy
        (W0, W1, W2), (b0, b1, b2) = self.W, self.b
        a0 = X @ W0.T + b0
        h0 = np.maximum(a0, 0)
        a1 = h0 @ W1.T + b1
        h1 = np.maximum(a1, 0)
        s = (h1 @ W2.T + b2)[:, 0]
        m = 1.0 - yy * s
        n = len(yy)
        loss = np.maximum(m, 0).sum() / n + 1e-4 * sum((W * W).sum() + (b * b).sum() for W, b in zip(self.W, self.b))
        ds = (-((m > 0) * yy) / n)[:, None]
        g = {"W2": ds.T @ h1 + 2e-4 * W2, "b2": ds.sum(0) + 2e-4 * b2}
        dh = (ds @ W2) * (a1 > 0)
        g["W1"], g["b1"] = dh.T @ h0 + 2e-4 * W1, dh.sum(0) + 2e-4 * b1
        dh = (dh @ W1) * (a0 > 0)
        g["W0"], g["b0"] = dh.T @ X + 2e-4 * W0, dh.sum(0) + 2e-4 * b0
        return loss, g

    def micrograd_step(self, Value):
        W = [[[Value(float(v)) for v in row] for row in Wl] for Wl in self.W]
        b = [[Value(float(v)) for v in bb] for bb in self.b]
        X = [[float(v) for v in row] for row in self.X]
        yy = [float(v) for v in self.yy]
        params = [w for Wl in W for row in Wl for w in row] + [bj for bl in b for bj in bl]
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 100_000))

        def run():
            for p in params:
                p.grad = 0.0
            loss = self.scalar_loss(W, b, [[Value(v) for v in row] for row in X], yy, 1.0)
            loss.backward()
            return loss.data, {f"W{l}": np.array([[w.grad for w in row] for row in Wl]) for l, Wl in enumerate(W)} | \
                {f"b{l}": np.array([bj.grad for bj in bl]) for l, bl in enumerate(b)}
        return run

    def torch_step(self, torch):
        W = [[[torch.tensor(float(v), dtype=torch.float64 if self.dtype == np.float64 else torch.float32,
                            requires_grad=True) for v in row] for row in Wl] for Wl in self.W]
        b = [[torch.tensor(float(v), dtype=W[0][0][0].dtype, requires_grad=True) for v in bb] for bb in self.b]
        X = [[float(v) for v in row] for row in self.X]
        yy = [float(v) for v in self.yy]
        params = [w for Wl in W for row in Wl for w in row] + [bj for bl in b for bj in bl]

        def run():
            for p in params:
                p.grad = None
            loss = _torch_scalar_loss(torch, W, b, X, yy)
            loss.backward()
            return loss.item(), {f"W{l}": np.array([[w.grad.item() for w in row] for row in Wl])
                                 for l, Wl in enumerate(W)} | \
                {f"b{l}": np.array([bj.grad.item() for bj in bl]) for l, bl in enumerate(b)}
        return run


def _torch_scalar_loss(torch, W, b, X, yy):
    relu = torch.relu
    losses = []
    for xrow, yi in zip(X, yy):
        act = list(xrow)
        for li in range(len(W)):
            act = [sum((wi * xi for wi, xi in zip(wrow, act)), bj) for wrow, bj in zip(W[li], b[li])]
            if li != len(W) - 1:
                act = [relu(a) for a in act]
        losses.append(relu(1.0 + -yi * act[0]))
    data_loss = sum(losses) * (1.0 / len(losses))
    params = [w for Wl in W for row in Wl for w in row] + [bj for bl in b for bj in bl]
    return data_loss + 1e-4 * sum(p * p for p in params)


# ------------------------------------------------------------ measuring

WORKLOADS = {w.name: w for w in (MicrogradWorkload, MLPWorkload, TransformerWorkload, LeNetWorkload)}


def add_peers(w: Workload, peers: dict) -> None:
    torch = peers.get("torch")
    if torch is not None and hasattr(w, "torch_step"):
        w.rows["torch"] = w.torch_step(torch)
    jax = peers.get("jax")
    if jax is not None and hasattr(w, "jax_step") and (w.dtype == np.float32 or peers.get("jax_x64")):
        w.rows["jax"] = w.jax_step(jax, jax.numpy)
    if peers.get("micrograd") is not None and hasattr(w, "micrograd_step") and w.dtype == np.float64:
        w.rows["micrograd"] = w.micrograd_step(peers["micrograd"])


def load_peers(threads: int) -> dict:
    peers: dict = {}
    try:
        import torch
        torch.set_num_threads(threads)
        torch.set_default_dtype(torch.float64)
        peers["torch"] = torch
    except ImportError:
        pass
    try:
        if threads == 1:
            os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
        import jax
        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        peers["jax"], peers["jax_x64"] = jax, True
    except ImportError:
        pass
    try:
        from micrograd.engine import Value
        peers["micrograd"] = Value
    except ImportError:
        pass
    return peers


def check(w: Workload) -> dict:
    """Every row's gradients against the hand-written numpy ones; returns the worst error per row."""
    ref_loss, ref = w.rows["numpy"]()
    tol = 1e-10 if w.dtype == np.float64 else 2e-3
    errors = {}
    for name, fn in w.rows.items():
        if name == "numpy":
            continue
        loss, grads = fn()
        if abs(float(loss) - float(ref_loss)) > tol * max(1.0, abs(float(ref_loss))):
            raise AssertionError(f"{w.name}/{name}: loss {float(loss)!r} != numpy's {float(ref_loss)!r}")
        errors[name] = _compare(f"{w.name}/{name}", grads, ref, tol)
    return errors


def peak_bytes(fn, *, fresh_jit=None) -> int:
    """The tracemalloc high-water mark of one call of ``fn``, over what was allocated before it.

    ``fresh_jit``: a new jit row (not yet traced); it is called twice under
    tracemalloc and the second call's peak counts from before the first, so the
    arrays the executor keeps between calls (its spare arrays) count too.
    """
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        if fresh_jit is not None:
            fresh_jit()          # traces, runs, leaves its spare arrays with the program
            gc.collect()
            fn = fresh_jit
        tracemalloc.reset_peak()
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del out
    return peak - base


def measure(w: Workload, repeat: int, pause: float) -> dict:
    names = list(w.rows)
    for fn in w.rows.values():   # warm-up (jit traces here)
        fn()
    times: dict = {n: [] for n in names}
    faults: dict = {n: [] for n in names}
    gc_was = gc.isenabled()
    for r in range(repeat):
        order = names if r % 2 == 0 else names[::-1]
        for n in order:
            gc.collect()
            time.sleep(pause)
            f0 = minor_faults()
            t0 = time.perf_counter()
            w.rows[n]()
            times[n].append(time.perf_counter() - t0)
            faults[n].append(minor_faults() - f0)
    if gc_was:
        gc.enable()
    return times, faults


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 repeats: a fast look")
    ap.add_argument("--repeat", type=int, default=None, help="interleaved rounds (default 15, --quick 3)")
    ap.add_argument("--models", default=",".join(WORKLOADS), help="comma-separated: " + ",".join(WORKLOADS))
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--no-peers", action="store_true", help="skip torch, jax and micrograd")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--keep-heap", action="store_true",
                    help="glibc keeps its heap for every row (mallopt): no page faults from heap trimming")
    ap.add_argument("--json", help="write the raw timings here")
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS threads for numpy, and torch/XLA threads (default 1; 0: leave numpy's as is)")
    args = ap.parse_args(argv)
    args.cpu = pin_to_one_cpu() if args.threads == 1 else None
    if args.threads:
        with limit_threads(args.threads):
            return run(args)
    return run(args)


def run(args) -> dict:
    repeat = args.repeat or (3 if args.quick else 15)
    kept = keep_heap() if args.keep_heap else False
    threads = blas_threads()
    peers = {} if args.no_peers else load_peers(threads)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"Python {platform.python_version()}, numpy {np.__version__}, BLAS threads {threads}"
          + (f", torch {peers['torch'].__version__} ({threads} threads)" if "torch" in peers else "")
          + (f", jax {peers['jax'].__version__}" if "jax" in peers else "")
          + (f"; every row pinned to CPU {args.cpu}" if args.cpu is not None else ""))
    print(f"median of {repeat} interleaved rounds (ms), IQR; × = median / numpy's median"
          + ("; glibc heap kept (--keep-heap)" if kept else "") + "\n")
    report: dict = {}
    for name in args.models.split(","):
        for dt in args.dtypes.split(","):
            if name == "micrograd" and np.dtype(dt) != np.float64:
                continue  # micrograd's Values are Python floats: its rows are ratios to it, float64 only
            random.seed(SEED)
            w = WORKLOADS[name](np.dtype(dt))
            add_peers(w, peers)
            errors = check(w)
            if hasattr(w, "products_step"):
                w.rows["products"] = w.products_step   # timed, not checked: it is no gradient
            times, faults = measure(w, repeat, 0.02 if not args.quick else 0.005)
            mem = {}
            if not args.no_memory:
                for n in ("numpy", "eager"):
                    mem[n] = peak_bytes(w.rows[n])
                mem["jit"] = peak_bytes(None, fresh_jit=w.make_jit())
            base = float(np.median(times["numpy"]))
            ref_row = "micrograd" if name == "micrograd" and "micrograd" in times else "numpy"
            print(f"{w.title} — {dt}" + (" (ratios to micrograd)" if ref_row == "micrograd" else ""))
            print(f"  {'row':<10}{'median ms':>11}{'IQR ms':>9}{'min ms':>9}{'×':>9}{'faults':>8}{'peak MiB':>10}"
                  f"{'mem ×':>8}  max grad err")
            ref_med = float(np.median(times[ref_row]))
            for n, ts in times.items():
                med = float(np.median(ts))
                q1, q3 = np.percentile(ts, [25, 75])
                m = mem.get(n)
                print(f"  {n:<10}{med * 1e3:>11.2f}{(q3 - q1) * 1e3:>9.2f}{min(ts) * 1e3:>9.2f}{med / ref_med:>9.2f}"
                      f"{int(np.median(faults[n])):>8}"
                      + (f"{m / 2**20:>10.1f}{m / mem['numpy']:>8.2f}" if m is not None else f"{'':>18}")
                      + (f"  {errors[n]:.1e}" if n in errors else ""))
                report[f"{name}/{dt}/{n}"] = {"median_ms": med * 1e3, "iqr_ms": (q3 - q1) * 1e3,
                                              "min_ms": min(ts) * 1e3, "faults": int(np.median(faults[n])),
                                              "ratio": med / ref_med, "ratio_numpy": med / base,
                                              "peak_mib": None if m is None else m / 2**20}
            print()
    print_goals(report)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return report


# Issue 13's goal column: (model, what the row is compared with, the bound on that ratio). Memory:
# one step's peak ≤ 1.2× the numpy step's on the MLP and the Transformer.
GOALS = (("micrograd", "micrograd", 0.5), ("mlp", "numpy", 0.95), ("transformer", "numpy", 0.95),
         ("lenet", "torch", 1.0))
MEMORY_GOAL = (("mlp", "transformer"), 1.2)


def print_goals(report: dict) -> None:
    """Each measured row beside its goal in issue 13 (met or not): the scoreboard, from this run's figures."""
    lines = []
    for model, against, bound in GOALS:
        for dt in ("float64", "float32"):
            ref = report.get(f"{model}/{dt}/{against}")
            for mode in ("eager", "jit"):
                row = report.get(f"{model}/{dt}/{mode}")
                if row is None:
                    continue
                if ref is None:
                    lines.append(f"  {model:<12}{dt:<9}{mode:<6} time   vs {against}: not measured ({against} absent)")
                    continue
                ratio = row["median_ms"] / ref["median_ms"]
                lines.append(f"  {model:<12}{dt:<9}{mode:<6} time   {ratio:5.2f}x {against:<10} goal <= {bound:.2f}"
                             f"  {'met' if ratio <= bound else 'NOT met'}")
            if model in MEMORY_GOAL[0] and f"{model}/{dt}/numpy" in report:
                base = report[f"{model}/{dt}/numpy"]["peak_mib"]
                for mode in ("eager", "jit"):
                    peak = report.get(f"{model}/{dt}/{mode}", {}).get("peak_mib")
                    if peak is not None and base:
                        ratio = peak / base
                        lines.append(f"  {model:<12}{dt:<9}{mode:<6} memory {ratio:5.2f}x numpy      "
                                     f"goal <= {MEMORY_GOAL[1]:.2f}  {'met' if ratio <= MEMORY_GOAL[1] else 'NOT met'}")
    if lines:
        print("Issue 13's goals, from this run's medians (ratios under ~0.05 apart are within the noise):")
        print("\n".join(lines))
        print()


if __name__ == "__main__":
    main()
