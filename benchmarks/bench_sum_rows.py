"""A sum over the leading axes (a bias's cotangent): numpy's ``np.sum(x, 0)`` against one BLAS product ``ones @ x``.

``ad.sum`` over the leading axes of a contiguous float32/float64 array takes
the product (primitives/structure.py). This prints both ways for rows of the
Transformer's and MLP's widths, medians of ``--repeat`` timings of 30 calls,
at one BLAS thread and at BLAS's default threads.

Run:  python benchmarks/bench_sum_rows.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits


def median_us(f, repeat: int) -> float:
    f()
    return float(np.median(timeit.repeat(f, number=30, repeat=repeat))) / 30 * 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    default = max((i.get("num_threads", 1) for i in threadpool_info() if i.get("user_api") == "blas"), default=1)
    print("| BLAS threads | dtype | shape | np.sum(x, 0) µs | ones @ x µs | ratio |")
    print("|---|---|---|---|---|---|")
    for threads in sorted({1, default}):
        with threadpool_limits(threads, user_api="blas"):
            for dtype in (np.float32, np.float64):
                for shape in ((64, 128), (1024, 128), (1024, 512), (4096, 512)):
                    x = rng.standard_normal(shape).astype(dtype)
                    ones = np.ones(shape[0], dtype)
                    a, b = median_us(lambda: np.sum(x, 0), args.repeat), median_us(lambda: ones @ x, args.repeat)
                    print(f"| {threads} | {np.dtype(dtype).name} | {shape} | {a:.0f} | {b:.0f} | {b / a:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
