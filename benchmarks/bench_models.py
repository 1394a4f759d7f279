"""Whole-model training steps (issues 13, 30): forward + backward against hand-written numpy and the peers.

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
traced once), ``torch`` (PyTorch CPU, when installed), ``jax`` (``jax.jit(jax.value_and_grad(f))``,
when installed), for the scalar MLP ``micrograd`` (when installed) and, for the MLP,
``products``: the numpy step's eight matrix products alone, the floor under every row (timed,
not checked).  Timings are interleaved (one call of every row per round), with ``gc.collect()``
and a short pause outside the timed region; the table shows the median, the inter-quartile
range and the minimum, and the ratio of medians to the numpy row (to micrograd for the scalar
MLP).  ``peak MiB`` is the tracemalloc high-water mark of one step (numpy reports its buffers to
tracemalloc; not available for torch and jax; for jit, counting the arrays its executor keeps
between calls; not measured for the scalar demo, whose numpy step is vectorised), and ``mem ×``
its ratio to the numpy row.  ``faults`` is the median number of
minor page faults per call: glibc gives the top of its heap back to the system when enough of
it is free, and then every page of the next step's arrays is faulted in again (~15,000 per
Transformer step, ~25 ms of the numpy row's 100 at default threads).

Two tables (``make bench`` prints both, then issue 30's goals from both; ``--threads`` picks one):

* ONE CORE (``--threads 1``): the process pinned to one CPU and every library on one thread
  (``ad.set_num_threads(1)``, numpy's BLAS, ``torch.set_num_threads(1)``, XLA's flags: alone they
  left it two cores).  Every row runs in this one process: with one thread nothing spins.  Which
  row pays for heap trimming depends on which one frees the top of the heap, i.e. on the order
  the rows run in; ``--keep-heap`` asks glibc (mallopt) to keep its heap and to serve large
  arrays from it, for every row alike, so the rows compare their computation only.
* DEFAULT THREADS (``--threads 0``): what a user gets who sets nothing — ours at
  ``ad.get_num_threads()`` (every core; it sets numpy's BLAS through threadpoolctl), numpy's
  own BLAS default, ``torch.get_num_threads()``'s default, XLA's defaults.  Here the rows must
  not share a process, nor each other's cores (``--isolate``, the default unless ``--threads 1``):
  each row kind runs in a process of its own (``--worker``), driven in the same interleaved
  rounds over pipes, and a row is timed only once no thread of any other row's process is
  running.  Measured on the 2-core machine (LeNet float64, flock'd): after each of our rows and
  the numpy row, OpenBLAS's idle thread spins (sched_yield) for 96 ms before it sleeps, torch's
  OpenMP threads for 4-5 ms, XLA's for ~1 ms — longer than the 20 ms pause, so in one process
  the next row ran beside a spinning thread (torch 8.6-9.0 ms there, 8.0-8.5 alone), and torch
  and jax in the process changed who faulted (0 faults for every row with them loaded, 850-3,900
  per numpy and eager step without).  The default-threads table does not keep the heap:
  in a process of its own a row's faults are its own steady state, within a few % of the same
  count every run (Transformer float64: numpy 15,846, eager 11,500-12,100, jit 7,900-8,400, torch
  ~1,800-2,000, jax ~17,000), not an artifact of row order, and they are what a user running that
  library alone pays; ``--keep-heap`` there shows the computation alone (Transformer float64:
  numpy 98-103 -> 72-76 ms, jit 78-84 -> 62-64 ms; jax's faults stay: XLA maps its own memory).

Each table ends with the share of the machine's CPU time other processes used meanwhile
(a few % or more: the figures are disturbed).  The run ends with issue 30's goals beside this
run's ratios, each marked met or not: jit at default threads <= PyTorch and <= JAX, eager at
default threads <= 1.10x PyTorch, jit on one core <= the numpy step (the MLP: <= 1.05x its
products), peak memory of eager and jit <= 1.2x numpy's (from the default-threads table).

Run:  python benchmarks/bench_models.py [--quick] [--models mlp,lenet] [--dtypes float64]
      [--repeat 15] [--threads 1|0|N] [--isolate|--no-isolate] [--no-peers] [--keep-heap]
      [--json out.json]
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


@contextlib.contextmanager
def limit_threads(n: int):
    """Context manager: our operations and numpy's BLAS on ``n`` threads (``ad.num_threads``), then restored.

    On a loaded machine a multi-threaded BLAS can be 100x slower than one thread (its
    threads spin waiting for each other), so the one-core table gives every library one thread.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        blas = contextlib.nullcontext()
    else:
        blas = threadpool_limits(limits=None, user_api="blas")   # restores BLAS's own setting on exit
    with blas, ad.num_threads(n):
        yield


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
        wrapper = nn.Logits(self.model)

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


# The rows in table order; the peers' rows are made by add_peers when the peer is installed.
ROWS = ("numpy", "eager", "jit", "products", "torch", "jax", "micrograd")
PEER_ROWS = ("torch", "jax", "micrograd")


def add_peers(w: Workload, peers: dict) -> None:
    torch = peers.get("torch")
    if torch is not None and hasattr(w, "torch_step"):
        w.rows["torch"] = w.torch_step(torch)
    jax = peers.get("jax")
    if jax is not None and hasattr(w, "jax_step") and (w.dtype == np.float32 or peers.get("jax_x64")):
        w.rows["jax"] = w.jax_step(jax, jax.numpy)
    if peers.get("micrograd") is not None and hasattr(w, "micrograd_step") and w.dtype == np.float64:
        w.rows["micrograd"] = w.micrograd_step(peers["micrograd"])


def load_peers(threads: int, only=PEER_ROWS) -> dict:
    """Import the peers named in ``only`` that are installed, on ``threads`` threads (0: their own defaults)."""
    peers: dict = {}
    if "torch" in only:
        try:
            import torch
            if threads:
                torch.set_num_threads(threads)
            torch.set_default_dtype(torch.float64)
            peers["torch"] = torch
        except ImportError:
            pass
    if "jax" in only:
        try:
            if threads == 1:
                os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
            import jax
            jax.config.update("jax_enable_x64", True)
            jax.config.update("jax_platforms", "cpu")
            peers["jax"], peers["jax_x64"] = jax, True
        except ImportError:
            pass
    if "micrograd" in only:
        try:
            from micrograd.engine import Value
            peers["micrograd"] = Value
        except ImportError:
            pass
    return peers


def thread_settings(peers: dict) -> str:
    """What every library runs on in this process, for the table's header."""
    text = f"numpy's BLAS {blas_threads()} threads, ours ad.get_num_threads() {ad.get_num_threads()}"
    if "torch" in peers:
        text += f", torch {peers['torch'].__version__} ({peers['torch'].get_num_threads()} threads)"
    if "jax" in peers:
        text += f", jax {peers['jax'].__version__} (XLA_FLAGS {os.environ.get('XLA_FLAGS', 'unset')!r})"
    return text


def check(w: Workload, only=None) -> dict:
    """The rows' gradients (those in ``only``, default all) against the hand-written numpy ones; the worst error per row."""
    ref_loss, ref = w.rows["numpy"]()
    tol = 1e-10 if w.dtype == np.float64 else 2e-3
    errors = {}
    for name, fn in w.rows.items():
        if name in ("numpy", "products") or (only is not None and name not in only):
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


def row_memory(w: Workload, name: str) -> int:
    """One step's peak bytes for the rows that report to tracemalloc (numpy, eager, jit)."""
    return peak_bytes(None, fresh_jit=w.make_jit()) if name == "jit" else peak_bytes(w.rows[name])


def time_once(fn, pause: float) -> tuple:
    """(seconds, minor page faults) of one call, after a collection and a pause outside the timed region."""
    gc.collect()
    time.sleep(pause)
    f0 = minor_faults()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0, minor_faults() - f0


def measure(w: Workload, repeat: int, pause: float) -> dict:
    names = list(w.rows)
    for fn in w.rows.values():   # warm-up (jit traces here)
        fn()
    times: dict = {n: [] for n in names}
    faults: dict = {n: [] for n in names}
    for r in range(repeat):
        order = names if r % 2 == 0 else names[::-1]
        for n in order:
            t, f = time_once(w.rows[n], pause)
            times[n].append(t)
            faults[n].append(f)
    return times, faults


def cpu_seconds(pids=()) -> tuple:
    """(CPU seconds used by the whole machine, by this process and ``pids``) so far; (0, 0) off Linux."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        with open("/proc/stat") as fh:
            user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fh.readline().split()[1:9])
        ours = 0
        for pid in (os.getpid(), *pids):
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            ours += int(fields[11]) + int(fields[12])       # utime, stime (every thread)
    except (OSError, ValueError):
        return 0.0, 0.0
    return (user + nice + system + irq + softirq + steal) / tick, ours / tick


def running_threads(pids) -> int:
    """How many threads of the processes ``pids`` are running or runnable now (Linux; 0 elsewhere)."""
    count = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return 0
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/stat") as fh:
                    count += fh.read().rsplit(")", 1)[1].split()[0] == "R"
            except OSError:      # the thread ended
                pass
    return count


def wait_until_quiet(pids, limit: float = 2.0) -> float:
    """Wait (up to ``limit`` s) until no thread of ``pids`` runs; returns the seconds waited.

    After its step a library's threads spin a while before they sleep (OpenBLAS's
    for up to 2**28 cycles, with sched_yield); in a process of their own they would
    take a core from the next row, which a user running that row's library alone never sees.
    """
    t0 = time.perf_counter()
    while running_threads(pids) and time.perf_counter() - t0 < limit:
        time.sleep(0.001)
    return time.perf_counter() - t0


class Worker:
    """One row kind in a process of its own (``--worker ROW``), its step timed when the driver asks.

    The driver and the workers speak one JSON object a line over the worker's stdin and stdout;
    a worker's other output goes to its stderr.
    """

    def __init__(self, row: str, args):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", row, "--threads", str(args.threads)]
        import subprocess
        self.row = row
        self.proc = subprocess.Popen(cmd + (["--keep-heap"] if args.keep_heap else []),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def send(self, **cmd) -> None:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def reply(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"bench_models worker {self.row!r} ended (exit code {self.proc.wait()})")
        out = json.loads(line)
        if "failed" in out:
            raise RuntimeError(f"bench_models worker {self.row!r}: {out['failed']}")
        return out

    def ask(self, **cmd) -> dict:
        self.send(**cmd)
        return self.reply()

    def close(self) -> None:
        try:
            self.send(op="quit")
        except (BrokenPipeError, ValueError):
            pass
        self.proc.wait()


def worker_main(args) -> None:
    """The loop of a ``--worker ROW`` process: hello, then setup / time / memory commands until quit."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)            # XLA's and torch's own prints go to stderr, not into the protocol

    def say(**out):
        proto.write(json.dumps(out) + "\n")

    row = args.worker
    kept = keep_heap() if args.keep_heap else False
    peers = load_peers(args.threads, only=(row,)) if row in PEER_ROWS else {}
    say(settings=thread_settings(peers), kept=kept)
    w = fn = None
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["op"] == "quit":
                return
            if cmd["op"] == "setup":
                w = fn = None
                gc.collect()
                random.seed(SEED)
                w = WORKLOADS[cmd["model"]](np.dtype(cmd["dtype"]))
                add_peers(w, peers)
                if hasattr(w, "products_step"):
                    w.rows["products"] = w.products_step   # timed, not checked: it is no gradient
                if row not in w.rows:
                    say(absent=True)
                    continue
                error = check(w, only=(row,)).get(row)
                fn = w.rows[row]
                fn()                 # warm-up (jit traces here)
                say(error=error)
            elif cmd["op"] == "time":
                t, f = time_once(fn, cmd["pause"])
                say(t=t, faults=f)
            elif cmd["op"] == "memory":
                say(bytes=row_memory(w, row))
        except Exception as exc:  # the driver raises it, naming the row
            import traceback
            say(failed=f"{exc!r}\n{traceback.format_exc()}")


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
    ap.add_argument("--threads", type=int, default=None,
                    help="1: the process pinned to one CPU, every library on one thread; N > 1: every library "
                         "on N threads; 0: each library's default threads; default: both tables, 1 then 0")
    ap.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=None,
                    help="time each row in a process of its own, in interleaved rounds (default: unless --threads 1)")
    ap.add_argument("--worker", choices=ROWS, help=argparse.SUPPRESS)
    ap.add_argument("--no-goals", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:          # (pinned already, if the driver was: affinity is inherited)
        with limit_threads(args.threads) if args.threads else contextlib.nullcontext():
            worker_main(args)
        return {}
    if args.threads is None:
        return run_both(args, sys.argv[1:] if argv is None else list(argv))
    if args.isolate is None:
        args.isolate = args.threads != 1
    args.cpu = pin_to_one_cpu() if args.threads == 1 else None
    if args.threads:
        with limit_threads(args.threads):
            return run(args)
    return run(args)


def run_both(args, argv: list) -> dict:
    """Both tables, each in a process of its own (pinning is per process), then the goals from both."""
    import subprocess
    import tempfile
    argv = [a for i, a in enumerate(argv) if a != "--json" and (i == 0 or argv[i - 1] != "--json")
            and not a.startswith("--json=")]
    reports = {}
    with tempfile.TemporaryDirectory() as tmp:
        for key, threads in (("one_core", 1), ("default", 0)):
            out = os.path.join(tmp, key + ".json")
            subprocess.run([sys.executable, os.path.abspath(__file__), *argv, "--threads", str(threads),
                            "--json", out, "--no-goals"], check=True)
            sys.stdout.flush()
            with open(out) as fh:
                reports[key] = json.load(fh)
    print_goals(reports["one_core"], reports["default"])
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(reports, fh, indent=1)
    return reports


def print_table(title: str, times: dict, faults: dict, mem: dict, errors: dict, key: str, report: dict) -> None:
    """One model and dtype: a line per row (median, IQR, min, ratio, faults, memory, gradient error)."""
    ref_row = "micrograd" if key.startswith("micrograd/") and "micrograd" in times else "numpy"
    print(title + (" (ratios to micrograd)" if ref_row == "micrograd" else ""))
    print(f"  {'row':<10}{'median ms':>11}{'IQR ms':>9}{'min ms':>9}{'×':>9}{'faults':>8}{'peak MiB':>10}"
          f"{'mem ×':>8}  max grad err")
    base = float(np.median(times["numpy"]))
    ref_med = float(np.median(times[ref_row]))
    for n, ts in times.items():
        med = float(np.median(ts))
        q1, q3 = np.percentile(ts, [25, 75])
        m = mem.get(n)
        print(f"  {n:<10}{med * 1e3:>11.2f}{(q3 - q1) * 1e3:>9.2f}{min(ts) * 1e3:>9.2f}{med / ref_med:>9.2f}"
              f"{int(np.median(faults[n])):>8}"
              + (f"{m / 2**20:>10.1f}{m / mem['numpy']:>8.2f}" if m is not None else f"{'':>18}")
              + (f"  {errors[n]:.1e}" if errors.get(n) is not None else ""))
        report[f"{key}/{n}"] = {"median_ms": med * 1e3, "iqr_ms": (q3 - q1) * 1e3,
                                "min_ms": min(ts) * 1e3, "faults": int(np.median(faults[n])),
                                "ratio": med / ref_med, "ratio_numpy": med / base,
                                "peak_mib": None if m is None else m / 2**20}
    print()


def cases(args):
    """The (model, dtype) pairs of this run."""
    for name in args.models.split(","):
        for dt in args.dtypes.split(","):
            if name == "micrograd" and np.dtype(dt) != np.float64:
                continue  # micrograd's Values are Python floats: its rows are ratios to it, float64 only
            yield name, dt


def run(args) -> dict:
    repeat = args.repeat or (3 if args.quick else 15)
    pause = 0.02 if not args.quick else 0.005
    kept = keep_heap() if args.keep_heap else False
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
          f"{os.cpu_count()} CPUs")
    if args.threads == 1:
        print(f"ONE CORE: every row pinned to CPU {args.cpu}, every library on one thread")
    elif args.threads:
        print(f"{args.threads} THREADS for every library")
    else:
        print("DEFAULT THREADS: every library at its own default")
    workers = []
    if args.isolate:
        rows = [r for r in ROWS if not (args.no_peers and r in PEER_ROWS)]
        workers = [Worker(r, args) for r in rows]
        hello = {wk.row: wk.reply() for wk in workers}
        print(f"Python {platform.python_version()}, numpy {np.__version__}; each row in a process of its own: "
              + "; ".join(f"{r} row: {h['settings']}" for r, h in hello.items() if r in ("numpy", "jit", "torch", "jax")))
        kept = all(h["kept"] for h in hello.values()) if args.keep_heap else False
    else:
        peers = {} if args.no_peers else load_peers(args.threads)
        print(f"Python {platform.python_version()}, numpy {np.__version__}, {thread_settings(peers)}")
    print(f"median of {repeat} interleaved rounds (ms), IQR; × = median / numpy's median"
          + ("; glibc heap kept (--keep-heap)" if kept else "") + "\n")
    report: dict = {}
    pids = [wk.proc.pid for wk in workers]
    start, wall = cpu_seconds(pids), time.perf_counter()
    try:
        for name, dt in cases(args):
            title = f"{WORKLOADS[name].title} — {dt}"
            if args.isolate:
                times, faults, mem, errors = measure_isolated(workers, name, dt, repeat, pause,
                                                              args.no_memory or name == "micrograd")
            else:
                random.seed(SEED)
                w = WORKLOADS[name](np.dtype(dt))
                add_peers(w, peers)
                errors = check(w)
                if hasattr(w, "products_step"):
                    w.rows["products"] = w.products_step   # timed, not checked: it is no gradient
                times, faults = measure(w, repeat, pause)
                mem = {} if args.no_memory or name == "micrograd" else {
                    n: row_memory(w, n) for n in ("numpy", "eager", "jit")}
            print_table(title, times, faults, mem, errors, f"{name}/{dt}", report)
        end = cpu_seconds(pids)
    finally:
        for wk in workers:
            wk.close()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    others = max(0.0, (end[0] - start[0]) - (end[1] - start[1])) / (time.perf_counter() - wall) / (os.cpu_count() or 1)
    print(f"Other processes used {100 * others:.1f} % of the machine's {os.cpu_count()} CPUs during this table"
          " (above a few %, the figures are disturbed).\n")
    report["threads"], report["other_load"], report["cpus"] = args.threads, others, cpus
    if not args.no_goals:
        print_goals(report if args.threads == 1 else None, report if args.threads == 0 else None)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return report


def measure_isolated(workers: list, name: str, dt: str, repeat: int, pause: float, no_memory: bool):
    """Like measure(), each row timed in its worker process: one call of every row per round, in turn."""
    for wk in workers:
        wk.send(op="setup", model=name, dtype=dt)
    replies = {wk.row: wk.reply() for wk in workers}
    present = [wk for wk in workers if not replies[wk.row].get("absent")]
    errors = {wk.row: replies[wk.row].get("error") for wk in present}
    times: dict = {wk.row: [] for wk in present}
    faults: dict = {wk.row: [] for wk in present}
    waits: dict = {wk.row: [] for wk in present}    # after each row: how long its threads ran on
    prev = None
    for r in range(repeat):
        for wk in (present if r % 2 == 0 else present[::-1]):
            waited = wait_until_quiet([o.proc.pid for o in workers])
            if prev is not None:
                waits[prev].append(waited)
            out = wk.ask(op="time", pause=pause)
            prev = wk.row
            times[wk.row].append(out["t"])
            faults[wk.row].append(out["faults"])
    mem = {} if no_memory else {wk.row: wk.ask(op="memory")["bytes"] for wk in present
                                if wk.row in ("numpy", "eager", "jit")}
    if os.environ.get("BENCH_MODELS_WAITS"):
        print("  waits after each row (median, max ms): " + ", ".join(
            f"{k} {np.median(v) * 1e3:.1f}/{max(v) * 1e3:.1f}" for k, v in waits.items() if v), file=sys.stderr)
    return times, faults, mem, errors


# Issue 30's goals: (table, row, what it is compared with, the bound on the ratio of medians).
TIME_GOALS = (("default", "jit", "torch", 1.00), ("default", "jit", "jax", 1.00),
              ("default", "eager", "torch", 1.10), ("one_core", "jit", "numpy", 1.00))
# (micrograd's demo, one core: against micrograd, not numpy; the MLP: against its products, see below)
PRODUCTS_FLOOR = 1.05    # the MLP's jit step, one core: within 5 % of its eight products alone
MEMORY_GOAL = 1.2        # one step's peak (eager and jit) over the numpy step's


def goal_lines(one_core: dict | None, default: dict | None) -> list:
    """Issue 30's goal rows for every model and dtype measured, each 'met' or 'NOT met' from the figures."""
    tables = {"one_core": one_core, "default": default}
    label = {"one_core": "one core", "default": "default threads"}
    seen = [k.rsplit("/", 1)[0] for r in (one_core, default) if r for k in r if k.count("/") == 2]
    lines = []
    for case in dict.fromkeys(seen):
        model, dt = case.split("/")
        for table, mode, against, bound in TIME_GOALS:
            rep = tables[table]
            if rep is None or f"{case}/{mode}" not in rep:
                continue
            note = ""
            if model == "micrograd" and against == "numpy":
                # A graph of 0-d Tensors cannot come near numpy's vectorised step (0.3 ms against
                # ~200 ms): its like for like is micrograd, the graph of scalars it was written for.
                against, note = "micrograd", "  (a graph of scalars: against micrograd)"
            if model == "mlp" and against == "numpy" and f"{case}/products" in rep:
                against, bound = "products", PRODUCTS_FLOOR
            what = f"  {model:<12}{dt:<9}{mode + ', ' + label[table]:<24}"
            ref = rep.get(f"{case}/{against}")
            if ref is None:
                lines.append(f"{what}time   vs {against}: not measured (no {against} row)")
                continue
            ratio = rep[f"{case}/{mode}"]["median_ms"] / ref["median_ms"]
            lines.append(f"{what}time   {ratio:5.2f}x {against:<10} goal <= {bound:.2f}"
                         f"  {'met' if ratio <= bound else 'NOT met'}{note}")
        table = "default" if default is not None else "one_core"
        rep = tables[table]
        base = rep.get(f"{case}/numpy", {}).get("peak_mib")
        for mode in ("eager", "jit"):
            peak = rep.get(f"{case}/{mode}", {}).get("peak_mib")
            if peak is None or not base or model == "micrograd":
                continue   # (micrograd: 0-d Tensors against numpy's vectorised arrays, no like for like)
            ratio = peak / base
            lines.append(f"  {model:<12}{dt:<9}{mode + ', ' + label[table]:<24}memory {ratio:5.2f}x numpy      "
                         f"goal <= {MEMORY_GOAL:.2f}  {'met' if ratio <= MEMORY_GOAL else 'NOT met'}")
    return lines


def print_goals(one_core: dict | None, default: dict | None) -> None:
    """The scoreboard: issue 30's goals beside this run's ratios (the per-op ones are bench_overhead.py's)."""
    lines = goal_lines(one_core, default)
    if lines:
        print("Issue 30's goals, from this run's medians (ratios under ~0.05 apart are within the noise):")
        print("\n".join(lines))
        if default is None or one_core is None:
            print(f"  (rows of the {'default-threads' if default is None else 'one-core'} table: not in this run)")
        print("  (the per-op goals: benchmarks/bench_overhead.py)")
        print()


if __name__ == "__main__":
    main()
