"""Grains: the least size worth splitting, per kind of work, measured.

For each operation and size: the plain numpy call (one thread) against the
split call of :mod:`autograd_dag.splitting` on ``--threads`` threads (default:
``ad.get_num_threads()``), medians of interleaved repeats; then per kind of
work the least size from which every operation of the kind gains at least
``--gain`` (1.10x) at that size and every larger one, and the grain that
means (items per thread: a call is split from twice the grain on 2 threads).
``autograd_dag.parallel.GRAINS`` quotes these figures. Also the cost of an
empty ``run_chunks`` (the dispatch alone).

Run:  flock /tmp/i30/cpu.lock python benchmarks/bench_parallel.py [--threads 2] [--repeat 41] [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import autograd_dag as ad
from autograd_dag import parallel, splitting

ELEMENTWISE = {
    "cheap": [("add", np.add, 2), ("multiply", np.multiply, 2), ("maximum", np.maximum, 2)],
    "transcendental": [("exp", np.exp, 1), ("log", np.log, 1), ("tanh", np.tanh, 1)],
}
# (name, primitive name, impl, axis): a kept leading axis (rows) and a reduced one (partial sums).
REDUCTIONS = [
    ("sum(axis=-1)", "sum", lambda x, *, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims), (1,)),
    ("max(axis=-1)", "max", lambda x, *, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims), (1,)),
    ("sum(axis=0)", "sum", lambda x, *, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims), (0,)),
    ("sum()", "sum", lambda x, *, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims), (0, 1)),
]
ROW = 128   # reductions run on (size / 128, 128) arrays: the Transformer's d_model rows


def medians(one, split, repeat: int) -> tuple[float, float]:
    """Median seconds of ``one()`` and ``split()``, run alternately (A, B, A, B...) after a warm-up."""
    one(), split()
    a, b = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        one()
        t1 = time.perf_counter()
        split()
        a.append(t1 - t0)
        b.append(time.perf_counter() - t1)
    return float(np.median(a)), float(np.median(b))


def measure(sizes, threads: int, repeat: int):
    rng = np.random.default_rng(0)
    rows = []
    with ad.num_threads(threads), parallel.grains(cheap=64, transcendental=64, reduction=64):
        for size in sizes:
            x = rng.uniform(0.5, 2.0, size)
            y = rng.uniform(0.5, 2.0, size)
            out = np.empty(size)
            for kind, ops in ELEMENTWISE.items():
                for name, ufunc, arity in ops:
                    split = splitting.split_ufunc(ufunc, x.shape, x.dtype)
                    args = (x, y)[:arity]
                    one, many = medians(lambda: ufunc(*args, out=out), lambda: split(*args, out=out), repeat)
                    rows.append((kind, name, size, one, many))
            m = x.reshape(size // ROW, ROW)
            for name, prim, impl, axis in REDUCTIONS:
                out_shape = tuple(d for k, d in enumerate(m.shape) if k not in axis)
                split = splitting.split_reduction(prim, impl, m.shape, out_shape, m.dtype)
                one, many = medians(lambda: impl(m, axis=axis, keepdims=False),
                                    lambda: split(m, axis=axis, keepdims=False), repeat)
                rows.append(("reduction", name, size, one, many))
    return rows


def least_sizes(rows, gain: float) -> dict[str, int | None]:
    """Per kind, the least size from which every operation of the kind gains ``gain`` (None: none does)."""
    found = {}
    for kind in ("cheap", "transcendental", "reduction"):
        sizes = sorted({r[2] for r in rows if r[0] == kind})
        ok = {s: all(r[3] / r[4] >= gain for r in rows if r[0] == kind and r[2] == s) for s in sizes}
        least = None
        for s in reversed(sizes):
            if not ok[s]:
                break
            least = s
        found[kind] = least
    return found


def dispatch_cost(threads: int, repeat: int = 2000) -> float:
    """Median seconds of an empty ``run_chunks`` split in two."""
    with ad.num_threads(threads):
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            parallel.run_chunks(lambda a, b: None, 1024, grain=64)
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=ad.get_num_threads())
    parser.add_argument("--repeat", type=int, default=41)
    parser.add_argument("--gain", type=float, default=1.10)
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    args = parser.parse_args(argv)
    sizes = [1 << k for k in range(14, 23)]
    repeat = args.repeat
    if args.quick:
        sizes, repeat = sizes[::2], min(repeat, 11)
    threads = args.threads
    print(f"threads: {threads} (ad.get_num_threads() {ad.get_num_threads()}, {len(parallel.os.sched_getaffinity(0))} "
          f"cores allowed), float64, medians of {repeat} interleaved repeats")
    print(f"empty run_chunks on {threads} threads: {dispatch_cost(threads) * 1e6:.1f} us")
    rows = measure(sizes, threads, repeat)
    least = least_sizes(rows, args.gain)
    print(f"{'kind':15} {'op':13} {'size':>9} {'1 thread':>10} {f'{threads} threads':>10} {'speedup':>8}  grain")
    for kind, name, size, one, many in rows:
        grain = "" if least[kind] is None else f"{least[kind] // threads:,}"
        print(f"{kind:15} {name:13} {size:9,} {one * 1e6:8.1f}us {many * 1e6:8.1f}us {one / many:7.2f}x  {grain}")
    print(f"least size gaining {args.gain:.2f}x at it and above (grain = size / threads):")
    for kind, size in least.items():
        text = "none measured" if size is None else f"{size:,} items (grain {size // threads:,})"
        print(f"  {kind:15} {text}   library: GRAINS[{kind!r}] = {parallel.GRAINS[kind]:,}")


if __name__ == "__main__":
    main()
