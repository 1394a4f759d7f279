"""Where a training step's time goes: the jit program of a bench_models workload, node by node.

Runs the program of ``ad.jit(ad.value_and_grad(loss))`` the way the executor does
(writing into dying operands, freeing after last use), timing each node; each node's
figure is its minimum over the rounds (robust on a shared machine). Prints the total,
the time by primitive and by name scope (blocks folded together), and the slowest nodes
with their operand shapes.

Run:  python benchmarks/profile_step.py [--model transformer] [--dtype float64] [--rounds 15] [--top 30]
"""

from __future__ import annotations

import argparse
import collections
import gc
import time

import numpy as np

import bench_models as bm
from autograd_dag.execution import disposable
from autograd_dag.tree import flatten


def jit_program(w):
    """The traced program of workload ``w``'s jit row, and its flattened input arrays."""
    run = w.make_jit()
    run()  # traces
    jitted = next(c.cell_contents for c in run.__closure__ if hasattr(c.cell_contents, "programs"))
    (program, _), = jitted.programs.values()
    leaves, _ = flatten((w.params(),) + tuple(w.data()))
    return program, [np.asarray(x) for x in leaves]


def profile(program, arrays, rounds: int) -> np.ndarray:
    """Seconds per node (rounds × steps), run as ``Program.__call__`` runs them."""
    initial, steps = program._plan()
    times = np.zeros((rounds, len(steps)))
    for r in range(rounds):
        values = list(initial)
        for k, a in zip(program.inputs, arrays):
            values[k] = a
        gc.collect()
        for i, (k, impl, parents, params, frees, inplace) in enumerate(steps):
            t0 = time.perf_counter()
            if inplace is not None and disposable(values, inplace):
                values[k] = impl(*[values[p] for p in parents], out=values[inplace], **(params or {}))
            else:
                values[k] = impl(*[values[p] for p in parents], **(params or {}))
            times[r, i] = time.perf_counter() - t0
            for p in frees:
                values[p] = None
    return times


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="transformer", choices=[n for n in bm.WORKLOADS if n != "micrograd"])
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)
    with bm.limit_threads(1):
        w = bm.WORKLOADS[args.model](np.dtype(args.dtype))
        program, arrays = jit_program(w)
        times = profile(program, arrays, args.rounds)
    _, steps = program._plan()
    best = times.min(axis=0) * 1e3
    nodes = [program.nodes[s[0]] for s in steps]
    print(f"{args.model} {args.dtype}: {len(steps)} nodes, sum of per-node minima {best.sum():.2f} ms "
          f"(fastest round {times.sum(axis=1).min() * 1e3:.2f} ms)")
    by_prim, by_scope = collections.Counter(), collections.Counter()
    for node, t in zip(nodes, best):
        by_prim[node.prim.name] += t
        by_scope["/".join(s for s in (node.scope or ()) if not s.startswith("block.")) or "-"] += t
    print("by primitive:", ", ".join(f"{k} {v:.2f}" for k, v in by_prim.most_common()))
    print("by scope:", ", ".join(f"{k} {v:.2f}" for k, v in by_scope.most_common()))
    for i in np.argsort(-best)[:args.top]:
        node = nodes[i]
        shapes = " ".join("x".join(map(str, program.nodes[p].shape)) or "()" for p in node.parents)
        print(f"  %{node.index:<5}{node.prim.name:<28}{best[i]:7.3f} ms  {'/'.join(node.scope or ()):<30} {shapes}")


if __name__ == "__main__":
    main()
