"""Jacobians and Hessians: ``ad.jacobian`` (vmap of the VJP) against one reverse sweep per output entry.

The row-by-row loop is what ``ad.jacobian`` did before ``vmap``: one ``vjp``
call per unit cotangent. Both run after one forward pass. Prints a table of
median times (ms) over interleaved repeats and checks both give the same
matrix.

    python benchmarks/bench_jacobian.py
"""

from __future__ import annotations

import gc
import time

import numpy as np

import autograd_dag as ad


def rows_by_loop(f, x):
    out, f_vjp = ad.vjp(f, x)
    out = np.asarray(out)
    rows = []
    for i in range(out.size):
        e = np.zeros(out.size)
        e[i] = 1.0
        rows.append(f_vjp(e.reshape(out.shape))[0])
    return np.stack(rows).reshape(out.shape + x.shape)


def workloads(rng):
    for n in (16, 64, 256):
        W1, W2 = rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal((n, n)) / np.sqrt(n)
        x = rng.standard_normal(n)
        mlp = lambda x, W1=W1, W2=W2: ad.tanh(W2 @ ad.tanh(W1 @ x))  # noqa: E731
        yield f"Jacobian of a 2-layer tanh MLP, {n} -> {n}", mlp, x
    n = 32
    A = rng.standard_normal((n, n)) / np.sqrt(n)
    x = rng.standard_normal(n)
    energy = lambda x: ad.sum(ad.tanh(A @ x) ** 2) + ad.sum(x ** 4)  # noqa: E731
    yield f"Hessian of a scalar energy, n = {n}", ad.grad(energy), x


def median_ms(fn, repeats):
    times = []
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def main():
    rng = np.random.default_rng(0)
    print(f"{'workload':<46}{'row by row':>12}{'vmap':>10}{'speed-up':>10}")
    for label, f, x in workloads(rng):
        a, b = rows_by_loop(f, x), ad.jacobian(f)(x)
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12), label
        loop_times, vmap_times = [], []
        for _ in range(5):  # interleaved, so a busy moment hits both
            loop_times.append(median_ms(lambda: rows_by_loop(f, x), 1))
            vmap_times.append(median_ms(lambda: ad.jacobian(f)(x), 1))
        lt, vt = float(np.median(loop_times)), float(np.median(vmap_times))
        print(f"{label:<46}{lt:>10.1f}ms{vt:>8.1f}ms{lt / vt:>9.1f}x")


if __name__ == "__main__":
    main()
