"""Would splitting pay if waking a worker were free? A pool whose worker spins instead of sleeping.

Our pool's worker sleeps on a queue; on this VM (nested virtualisation, the guest's halt
polling off) waking it costs 25-100 µs, which is why nothing below ~524,288 elements is
split (autograd_dag/parallel.py). OpenMP runtimes (PyTorch's) keep idle workers spinning in
user space instead. This experiment gives one worker that spins the same way, with the GIL
released: it waits in glibc's ``pthread_spin_lock`` (called through ctypes, which drops the
GIL), and a dispatch is one ``pthread_spin_unlock`` by the caller. It then times, at one
BLAS thread (a spinning worker would starve BLAS's own threads):

* an empty dispatch and back, queue pool against the spinning worker;
* kernels whole, and split in two halves over the spinning worker: one numpy call per half
  (exp over 262,144 float32) and row-wise kernels of many calls per half (layer norm and its
  Jacobian on the Transformer's (16, 64, 128) float32), each call boundary a GIL handoff;
* with ``--step``, the seed-000 Transformer's float32 jit step, nothing split against every
  elementwise, reduction and row-wise node of at least ``--grain`` elements split over it.

Measured 2026-12-02 15:40 on the 2-vCPU AMD EPYC Zen 4 VM (``--step``, medians): an empty dispatch
4.4 µs (queue) / 4.6 µs (spinning); exp 124.5 µs whole, 92.3 split (1.35x); layer_norm 145.9 whole,
182.3 split (0.80x); standardize_jacobian 285.8 whole, 303.7 split (0.94x); the step 45.9 / 48.3 ms
with nothing split, 50.2 / 49.8 ms split from 16,384 elements (an earlier run in the same hour: 43.9-48.6
against 47.5-54.4). Only a kernel of one numpy call gains; the row-wise kernels, whose chunks hand the
GIL back and forth between their calls, lose even with a free wake, and so does the step. So the grains stay (see README "Threads").

Linux with glibc only (``pthread_spin_*`` through ctypes); elsewhere the script says so.
Run:  python benchmarks/exp_spin_wake.py [--repeat 300] [--step] [--grain 16384]
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import importlib
import sys
import threading
import time

import numpy as np
from threadpoolctl import threadpool_limits

from autograd_dag import parallel, splitting
from autograd_dag.primitives import rowsplit


class SpinningWorker:
    """One daemon thread that waits for work spinning in ``pthread_spin_lock`` (GIL released)."""

    def __init__(self):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        self.lock, self.unlock = libc.pthread_spin_lock, libc.pthread_spin_unlock
        self.go, self.done = ctypes.c_int(), ctypes.c_int()
        self.pgo, self.pdone = ctypes.byref(self.go), ctypes.byref(self.done)
        libc.pthread_spin_init(self.pgo, 0)   # glibc on x86 marks "free" as 1: initialise, never assume
        libc.pthread_spin_init(self.pdone, 0)
        self.lock(self.pgo)     # held by the caller: no work
        self.lock(self.pdone)   # released by the worker after each piece of work
        self.work = None
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        parallel._local.worker = True   # a split call made here runs whole, as on the pool's workers
        while True:
            self.lock(self.pgo)         # each dispatch releases go once, each pass takes it once
            fn, start, stop = self.work
            fn(start, stop)
            self.unlock(self.pdone)

    def run_chunks(self, fn, n, *, grain, align=parallel.ALIGN):
        """parallel.run_chunks's contract on two threads: halves, the second on the spinning worker."""
        if n < 2 * max(grain, 1) or n < 2 * align or getattr(parallel._local, "worker", False):
            fn(0, n)
            return
        middle = parallel.chunk_bounds(n, 2, align)[1]
        self.work = (fn, middle, n)
        self.unlock(self.pgo)
        fn(0, middle)
        self.lock(self.pdone)


def median_us(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e6


def kernels(worker: SpinningWorker, repeat: int) -> None:
    layer_norm = importlib.import_module("autograd_dag.primitives.fused.layer_norm")
    rng = np.random.default_rng(0)
    x, v = (rng.standard_normal((16, 64, 128)).astype(np.float32) for _ in range(2))
    gamma, beta = np.ones(128, np.float32), np.zeros(128, np.float32)
    a = rng.standard_normal(1 << 18).astype(np.float32)
    out = np.empty_like(a)
    nothing = lambda start, stop: None
    print(f"empty dispatch: queue pool {median_us(lambda: parallel.run_chunks(nothing, 1 << 12, grain=1), repeat):.1f} µs, "
          f"spinning worker {median_us(lambda: worker.run_chunks(nothing, 1 << 12, grain=1), repeat):.1f} µs")
    cases = [
        ("exp, 262,144 float32 (one call a half)",
         lambda run: run(lambda i, j: np.exp(a[i:j], out=out[i:j]), a.size, grain=1 << 14)),
        ("layer_norm (16, 64, 128) float32",
         lambda run: layer_norm._layer_norm_impl(x, gamma, beta, axes=(-1,), eps=1e-5)),
        ("standardize_jacobian (16, 64, 128) float32",
         lambda run: layer_norm._standardize_jacobian_impl(v, x, axes=(-1,), eps=1e-5)),
    ]
    for name, case in cases:
        with split_over(worker, 1 << 13):
            split = median_us(lambda: case(worker.run_chunks), repeat)
        whole = median_us(lambda: case(lambda fn, n, **_: fn(0, n)), repeat)
        print(f"{name:<46} whole {whole:7.1f} µs   split {split:7.1f} µs   ({whole / split:.2f}x)")


class split_over:
    """Within the block, every split path runs over ``worker`` from ``grain`` elements (row-wise: half of it)."""

    def __init__(self, worker, grain):
        self.worker, self.grain = worker, grain

    def __enter__(self):
        self.saved = parallel.run_chunks, splitting.run_chunks, dict(parallel.GRAINS), dict(rowsplit.GRAIN)
        parallel.run_chunks = splitting.run_chunks = self.worker.run_chunks
        parallel.GRAINS.update(cheap=self.grain, transcendental=self.grain, reduction=self.grain)
        rowsplit.GRAIN.update({k: self.grain // 2 for k in rowsplit.GRAIN})
        parallel._changed()   # programs plan again with the new grains

    def __exit__(self, *exc):
        parallel.run_chunks, splitting.run_chunks, grains, row_grains = self.saved
        parallel.GRAINS.update(grains)
        rowsplit.GRAIN.update(row_grains)
        parallel._changed()


def step(worker: SpinningWorker, grain: int, rounds: int = 25) -> None:
    sys.path.insert(0, "benchmarks")
    import bench_models as bm
    w = bm.WORKLOADS["transformer"](np.dtype("float32"))
    fn = w.rows["jit"]

    def median_ms():
        for _ in range(3):
            fn()
        times = []
        for _ in range(rounds):
            gc.collect()
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return float(np.median(times)) * 1e3

    for _ in range(2):
        whole = median_ms()
        with split_over(worker, grain):
            split = median_ms()
        print(f"Transformer float32 jit step: nothing split {whole:.2f} ms, split from {grain:,} {split:.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=300)
    ap.add_argument("--step", action="store_true", help="also the Transformer's float32 jit step")
    ap.add_argument("--grain", type=int, default=1 << 14)
    args = ap.parse_args()
    if not sys.platform.startswith("linux"):
        print("exp_spin_wake: needs glibc's pthread_spin_lock (Linux); nothing measured")
        return
    worker = SpinningWorker()
    with threadpool_limits(1, user_api="blas"):
        kernels(worker, args.repeat)
        if args.step:
            step(worker, args.grain)


if __name__ == "__main__":
    main()
