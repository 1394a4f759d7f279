"""``vmap(checkpoint(mlp))`` on a batch of 64 small MLP examples: forward, and forward + backward (grad w.r.t. W1).

Checkpoint's batching rule makes one batched node (forward and replay batched); before it, vmap looped
(one checkpoint node per example). A/B against another checkout, interleaved in one locked command:

    flock /tmp/i30/cpu.lock bash -c 'for i in 1 2 3; do
        PYTHONPATH=/work/wt/base python benchmarks/bench_vmap_checkpoint.py base
        PYTHONPATH=$PWD python benchmarks/bench_vmap_checkpoint.py new; done'

2026-12-03: base forward 1.62-1.91 ms, grad 9.3-12.3 ms; new forward 0.25-0.32 ms, grad 0.59-0.73 ms
(medians of 30 calls; the three interleaved rounds' ranges).
"""

import sys
import time
import warnings

import numpy as np

import autograd_dag as ad

warnings.simplefilter("ignore")   # (the loop's one-time "no batching rule" warning, on a checkout without it)
rng = np.random.default_rng(0)
B, D, H = 64, 16, 32
W1, b1, W2 = rng.normal(size=(D, H)) / 4, rng.normal(size=H), rng.normal(size=(H, 4)) / 4
xs = rng.normal(size=(B, D))


def mlp(x, W1, b1, W2):
    return ad.tanh(ad.tanh(x @ W1 + b1) @ W2)


def forward():
    return ad.vmap(ad.checkpoint(mlp), in_axes=(0, None, None, None))(xs, W1, b1, W2)


def gradient():
    return ad.grad(lambda W: ad.sum(ad.vmap(ad.checkpoint(mlp), in_axes=(0, None, None, None))(xs, W, b1, W2) ** 2))(W1)


def median_ms(fn, n: int = 30) -> float:
    fn()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


if __name__ == "__main__":
    label = sys.argv[1] if len(sys.argv) > 1 else "run"
    print(f"{label} forward {median_ms(forward):.3f} ms  grad {median_ms(gradient):.3f} ms")
