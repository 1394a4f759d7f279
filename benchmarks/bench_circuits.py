"""Benchmark: arithmetic circuits scale linearly in the number of gates.

Builds a deep circuit (a Horner-like chain s ← s·y + x, with fan-out on x and y) of
10^3, 10^4 and 10^5 gates and times each phase: build (Python operators on circuit
variables), size + depth, evaluate (Algorithm 4.1, floats), evaluate over a numpy
vector of 1000 points, simplify, and the gradient circuit (reverse-mode program
transformation + read back + simplify). Prints CPU seconds per phase and µs per gate:
constant µs per gate across rows means linear scaling.

Run: ``PYTHONPATH=. python benchmarks/bench_circuits.py [--quick]``
"""

from __future__ import annotations

import sys
import time

import numpy as np

from autograd_dag.circuits import Circuit, gradient_circuit, simplify, variables


def build(n_gates: int) -> Circuit:
    """A depth-n chain: s ← s·y + x (two gates per step), plus a ×1 every 10 steps for simplify to remove."""
    x, y = variables("x y")
    s = x
    steps = n_gates // 2
    for i in range(steps):
        s = s * y + x
        if i % 10 == 0:
            s = s * 1
    return Circuit.from_outputs(s)


def timed(fn):
    # CPU seconds of this process: single-threaded Python, so on a shared machine the wall clock
    # measures the other processes' load, not the circuit.
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def run(sizes) -> list:
    rows = []
    for n in sizes:
        c, t_build = timed(lambda: build(n))
        (_, _), t_measure = timed(lambda: (c.size, c.depth))
        _, t_eval = timed(lambda: c.evaluate(x=1.0, y=0.5))
        pts = np.linspace(-1, 1, 1000)
        _, t_vec = timed(lambda: c.evaluate(x=pts, y=pts))
        s, t_simplify = timed(lambda: simplify(c))
        g, t_grad = timed(lambda: gradient_circuit(c))
        rows.append(
            {
                "gates": c.num_gates,
                "size": c.size,
                "depth": c.depth,
                "build": t_build,
                "size+depth": t_measure,
                "evaluate": t_eval,
                "evaluate[1000]": t_vec,
                "simplify": t_simplify,
                "gradient": t_grad,
                "grad ratio": g.ratio,
                "simplified gates": s.num_gates,
            }
        )
    return rows


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    sizes = [1_000, 10_000] if "--quick" in argv else [1_000, 10_000, 100_000]
    rows = run(sizes)
    phases = ["build", "size+depth", "evaluate", "evaluate[1000]", "simplify", "gradient"]
    print(f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, Python {sys.version.split()[0]}, numpy {np.__version__}")
    print("CPU seconds per phase")
    head = f"{'gates':>8} {'size':>8} {'depth':>8} " + " ".join(f"{p:>14}" for p in phases) + f" {'grad ratio':>10}"
    print(head)
    for r in rows:
        print(
            f"{r['gates']:>8} {r['size']:>8} {r['depth']:>8} "
            + " ".join(f"{r[p]:>14.4f}" for p in phases)
            + f" {r['grad ratio']:>10.3f}"
        )
    print("\nmicroseconds per gate (flat = linear scaling)")
    print(f"{'gates':>8} " + " ".join(f"{p:>14}" for p in phases))
    for r in rows:
        print(f"{r['gates']:>8} " + " ".join(f"{1e6 * r[p] / r['gates']:>14.3f}" for p in phases))


if __name__ == "__main__":
    main()
