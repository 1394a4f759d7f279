"""One workload's training step called in a loop, as a training loop calls it: time, page faults, memory.

bench_models interleaves its rows, so each row runs after the others, whose
arrays (the eager row's kept gradients) can hold the top of the C heap: a row
then pays no page faults it would pay alone. Here each row runs alone in a
loop (results dropped, no pause, no gc.collect), as a user's loop runs it,
and the table shows its minor page faults per call and the process's
resident set after the loop (the memory kept between calls) beside its
high-water mark (``maxrss``, the whole process's so far).

Rows run one after another in one process, in the order given (``--rows``),
after a warm-up of two calls each; BLAS and torch at their default threads
unless ``--threads``.

Run:  python benchmarks/bench_step_loop.py [--model transformer] [--dtype float64] [--calls 20]
      [--rows jit,eager,numpy,torch] [--threads 0]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

import bench_models as bm


def rss_mib() -> float:
    """The resident set of this process now, in MiB (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * resource.getpagesize() / 2**20
    except OSError:
        return 0.0


def loop(fn, calls: int) -> tuple[list, list]:
    """Seconds and minor faults of each of ``calls`` calls of ``fn`` (after two warm-up calls)."""
    fn()
    fn()
    times, faults = [], []
    for _ in range(calls):
        f0 = bm.minor_faults()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        faults.append(bm.minor_faults() - f0)
    return times, faults


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="transformer", choices=[n for n in bm.WORKLOADS if n != "micrograd"])
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--rows", default="jit", help="comma-separated: jit, eager, numpy, torch")
    ap.add_argument("--threads", type=int, default=0, help="BLAS and torch threads (default 0: as they are)")
    args = ap.parse_args(argv)
    limit = bm.limit_threads(args.threads) if args.threads else None
    if limit is not None:
        limit.__enter__()
    rows = args.rows.split(",")
    peers = bm.load_peers(bm.blas_threads()) if "torch" in rows else {}
    w = bm.WORKLOADS[args.model](np.dtype(args.dtype))
    bm.add_peers(w, peers)
    print(f"{w.title} — {args.dtype}; BLAS threads {bm.blas_threads()}; {args.calls} calls in a loop per row")
    print(f"  {'row':<8}{'median ms':>11}{'min ms':>9}{'faults':>8}{'rss MiB':>9}{'maxrss MiB':>12}")
    for name in rows:
        times, faults = loop(w.rows[name], args.calls)
        print(f"  {name:<8}{np.median(times) * 1e3:>11.2f}{min(times) * 1e3:>9.2f}{int(np.median(faults)):>8}"
              f"{rss_mib():>9.0f}{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:>12.0f}")


if __name__ == "__main__":
    main()
