"""Elementwise derivative rules (issue 26): recording, reverse and forward mode per operation.

Chains of 2,000 operations on 10-element float64 arrays, so that the figures are the
rules' bookkeeping, not numpy's work: ``mul/add/tanh`` (bench_overhead.py's chain) and
``sub/div/max/relu/sin`` (a rule of every form: a negated constant partial, a quotient
reading the output, tie weights, a mask from the output, a partial reading the input).
Times are process CPU time (``time.process_time``): on a shared machine wall time
mostly measures the other processes. Run once per tree and compare:

    PYTHONPATH=/path/to/tree python benchmarks/bench_elementwise.py [--ops 2000] [--repeat 25]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import autograd_dag as ad

SIZE = 10


def chain_mul_add_tanh(x, c, d, n_ops):
    for k in range(n_ops):
        r = k % 3
        x = ad.multiply(x, c) if r == 0 else ad.add(x, d) if r == 1 else ad.tanh(x)
    return x


def chain_mixed(x, c, d, n_ops):
    for k in range(n_ops):
        r = k % 5
        if r == 0:
            x = ad.subtract(x, d)
        elif r == 1:
            x = ad.divide(x, 1.5)
        elif r == 2:
            x = ad.maximum(x, d)
        elif r == 3:
            x = ad.relu(x)
        else:
            x = ad.sin(x)
    return x


def cpu_best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def measure(chain, n_ops: int, repeat: int) -> tuple[float, float, float]:
    """(record, backward, forward mode) µs per operation, best of ``repeat``."""
    x0 = np.random.default_rng(0).standard_normal(SIZE)
    c, d = ad.Tensor(np.full(SIZE, 0.9)), ad.Tensor(np.full(SIZE, 0.1))
    record = backward = float("inf")
    for _ in range(repeat):
        x = ad.Tensor(x0, requires_grad=True)
        t0 = time.process_time()
        y = chain(x, c, d, n_ops).sum()
        t1 = time.process_time()
        y.backward()
        t2 = time.process_time()
        record, backward = min(record, t1 - t0), min(backward, t2 - t1)
    forward = cpu_best(lambda: ad.jvp(lambda v: chain(v, c, d, n_ops).sum(), (x0,), (np.ones(SIZE),)), repeat)
    return record / n_ops * 1e6, backward / n_ops * 1e6, forward / n_ops * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args(argv)
    print(f"Chains of {args.ops} ops on {SIZE}-element float64 arrays, best of {args.repeat}, "
          f"CPU µs per op ({ad.__file__})\n")
    print(f"{'chain':<22}{'record':>10}{'backward':>10}{'jvp':>10}")
    for name, chain in (("mul/add/tanh", chain_mul_add_tanh), ("sub/div/max/relu/sin", chain_mixed)):
        record, backward, forward = measure(chain, args.ops, args.repeat)
        print(f"{name:<22}{record:>10.2f}{backward:>10.2f}{forward:>10.2f}")


if __name__ == "__main__":
    main()
