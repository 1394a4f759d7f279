"""One thread against two for the row-wise primitives split over the pool, at the Transformer's shapes.

Times each primitive's impl (ms, minimum over 7 interleaved rounds of --repeat calls) at
``ad.num_threads(1)``, and at ``ad.num_threads(2)`` (the pool's threads and numpy's BLAS threads
both) unsplit (every grain made huge: the one-thread code, BLAS on two threads) and split (every
grain made small: the library's own grains split none of these shapes, since splitting them made
a whole training step slower; see rowsplit.py).
On a tree without ``ad.num_threads`` (before issue 30) only BLAS threads are set.

Run:  python benchmarks/bench_fused_threads.py [--repeat 10] [--only layer_norm]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import time

import numpy as np

import autograd_dag as ad


def threads(n):
    if hasattr(ad, "num_threads"):
        return ad.num_threads(n)
    from threadpoolctl import threadpool_limits
    return threadpool_limits(limits=n, user_api="blas")


def cases():
    rng = np.random.default_rng(0)
    sm = importlib.import_module("autograd_dag.primitives.fused.softmax")
    ln = importlib.import_module("autograd_dag.primitives.fused.layer_norm")
    ce = importlib.import_module("autograd_dag.primitives.fused.losses")
    lr = importlib.import_module("autograd_dag.primitives.fused.linear_relu")
    pr = importlib.import_module("autograd_dag.primitives.linalg.products")
    x = rng.standard_normal((16, 64, 128)); v = rng.standard_normal(x.shape)
    g, b = rng.standard_normal(128), rng.standard_normal(128)
    s = rng.standard_normal((16, 4, 64, 64)); mask = np.triu(np.full((64, 64), -np.inf), 1)
    y = sm._softargmax_impl(s, axis=(3,), gamma=1.0); w4 = rng.standard_normal(s.shape)
    z = rng.standard_normal((16, 64, 256)); idx = rng.integers(0, 256, (16, 64)); ct = rng.standard_normal((16, 64))
    loss = ce._ce_impl(z, idx)
    h = rng.standard_normal((16, 64, 128)); w1, b1 = rng.standard_normal((512, 128)), rng.standard_normal(512)
    q = rng.standard_normal((16, 4, 64, 32)); k = rng.standard_normal((16, 4, 32, 64))
    return {
        "layer_norm 16x64x128": lambda: ln._layer_norm_impl(x, g, b, axes=(-1,), eps=1e-5),
        "standardize_jacobian 16x64x128": lambda: ln._standardize_jacobian_impl(v, x, axes=(-1,), eps=1e-5),
        "standardized_sum 16x64x128": lambda: ln._standardized_sum_impl(v, x, axes=(-1,), eps=1e-5),
        "softargmax 16x4x64x64": lambda: sm._softargmax_impl(s, axis=(3,), gamma=1.0),
        "masked_softargmax 16x4x64x64": lambda: sm._masked_softargmax_impl(s, mask, axis=(3,), scale=0.125),
        "softargmax_jacobian 16x4x64x64": lambda: sm._jacobian_impl(w4, y, axis=(3,), scale=0.125),
        "softmax_cross_entropy 16x64x256": lambda: ce._ce_impl(z, idx),
        "softmax_cross_entropy_grad 16x64x256": lambda: ce._ce_grad_impl(ct, z, loss, idx),
        "linear_relu 1024x128 @ 512x128": lambda: lr._linear_relu_impl(h, w1, b1),
        "linear 1024x128 @ 512x128": lambda: pr._linear_impl(h, w1, b1),
        "matmul 16x4x64x32 @ 16x4x32x64": lambda: pr._matmul_impl(q, k),
    }


def best(f, repeat):
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter(); f(); t = min(t, time.perf_counter() - t0)
    return t


@contextlib.contextmanager
def grains(size: int):
    """Every row-wise primitive's grain set to ``size`` (the library's grains split nothing at these shapes)."""
    try:
        rowsplit = importlib.import_module("autograd_dag.primitives.rowsplit")
    except ImportError:
        yield
        return
    saved = dict(rowsplit.GRAIN)
    rowsplit.GRAIN.update((k, size) for k in saved)
    try:
        yield
    finally:
        rowsplit.GRAIN.update(saved)


def unsplit():
    """Grains too large to split anything (the one-thread code, BLAS still on its threads)."""
    return grains(1 << 60)


def split():
    """Grains small enough that every case splits (8,192 float64 elements a chunk at least)."""
    return grains(8192)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10, help="calls per round (7 interleaved rounds)")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--keep-heap", action="store_true", help="glibc keeps its heap (bench_models.keep_heap)")
    args = ap.parse_args(argv)
    if args.keep_heap:
        import bench_models
        print("kept heap:", bench_models.keep_heap())
    settings = {"1 thread": (1, contextlib.nullcontext), "2 unsplit": (2, unsplit), "2 split": (2, split)}
    for name, f in cases().items():
        if args.only not in name:
            continue
        times = dict.fromkeys(settings, float("inf"))
        for _ in range(7):  # interleaved rounds, the minimum of each setting's calls
            for key, (n, ctx) in settings.items():
                with threads(n), ctx():
                    f()
                    times[key] = min(times[key], best(f, args.repeat))
        print(f"{name:<38}" + "".join(f"{k} {t * 1e3:6.3f}  " for k, t in times.items())
              + f"split/unsplit {times['2 split'] / times['2 unsplit']:5.2f}")


if __name__ == "__main__":
    main()
