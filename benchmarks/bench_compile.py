"""What ``ad.jit``'s first call costs on long programs, phase by phase, beside a later call.

The first call of ``ad.jit(ad.value_and_grad(loss))`` for a new input signature
records ``loss`` and its reverse sweep, extracts the program
(``Program.from_outputs``, then the check that no constant holds an input's
numbers), merges repeated computations (``without_common_subexpressions``),
makes the executor's plan (``Program._plan``) and runs it once. This script
does those phases one after the other, as ``jit`` does, and times each:

  LSTM L      ``nn.SequenceToVector(nn.LSTMCell(8, 32), pooling="mean", head=nn.Linear(32, 2))``,
              batch 4, cross-entropy, the parameters as a dict argument;
  chain N     N elementwise operations on a vector of 16 (``sin``, then ``* 0.999``, repeated).

Figures are the best of ``--repeat`` runs in CPU seconds of this process
(``time.process_time``: on the shared machine the wall clock mostly measures
the other processes); BLAS limited to one thread.

Run:  python benchmarks/bench_compile.py [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np

import autograd_dag as ad
from autograd_dag.passes import refuse_inputs_as_constants
from autograd_dag.program import Program
from autograd_dag.tracing import program_input, record
from autograd_dag.tree import flatten, unflatten
from bench_rnn_long import lstm_workload

PHASES = ("trace + sweep", "from_outputs", "CSE", "plan", "first run")


def lstm_case(length: int):
    _, loss, params, x, _ = lstm_workload(length)
    return loss, (params, x)


def chain_case(n: int):
    def loss(x):
        for _ in range(n // 2):
            x = ad.sin(x) * 0.999
        return ad.sum(x)
    return loss, (np.linspace(-1.0, 1.0, 16),)


def phases(f, args) -> tuple[list[float], float, int]:
    """CPU seconds of each of jit's first-call phases, of a later call, and the program's length."""
    leaves, treedef = flatten(args)
    arrays = list(leaves)
    clock = time.process_time
    times = []
    t0 = clock()
    count = iter(range(len(arrays)))
    rec = record(f, unflatten(treedef, arrays), lambda i, value: program_input(value, f"x{next(count)}"),
                 what="jit", reused=True)
    times.append(clock() - t0)
    t0 = clock()
    program = Program.from_outputs(tuple(rec.inputs), tuple(rec.outputs))
    refuse_inputs_as_constants(program, rec.inputs, "jit")
    times.append(clock() - t0)
    t0 = clock()
    program = program.without_common_subexpressions()
    times.append(clock() - t0)
    t0 = clock()
    program._plan()
    times.append(clock() - t0)
    t0 = clock()
    first = program(*arrays)
    times.append(clock() - t0)
    t0 = clock()
    later = program(*arrays)
    later_time = clock() - t0
    # The phases must compute what jit computes: the same results on a fresh jit.
    reference = flatten(ad.jit(f)(*args))[0]
    for a, b, c in zip(flatten(first)[0], flatten(later)[0], reference):
        assert np.array_equal(a, b) and np.array_equal(a, c), "the phases computed something else than jit"
    return times, later_time, len(program)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="LSTM L = 250 and a chain of 20,000 only")
    args = p.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits
        limit = threadpool_limits(limits=1, user_api="blas")
    except ImportError:
        limit = None
    cases = [("LSTM L=250", lstm_case(250))]
    if args.quick:
        cases.append(("chain 20,000", chain_case(20_000)))
    else:
        cases += [("LSTM L=1000", lstm_case(1000)), ("chain 100,000", chain_case(100_000))]
    print(f"ad.jit(ad.value_and_grad(loss)): first-call phases, CPU seconds, best of {args.repeat}\n")
    print("| case | nodes | " + " | ".join(PHASES) + " | first call | later call |")
    print("|---|---|" + "---|" * (len(PHASES) + 2))
    for name, (loss, inputs) in cases:
        f = ad.value_and_grad(loss)
        best, best_later, length = [float("inf")] * len(PHASES), float("inf"), 0
        for _ in range(args.repeat):
            gc.collect()
            times, later, length = phases(f, inputs)
            best = [min(b, t) for b, t in zip(best, times)]
            best_later = min(best_later, later)
        cells = " | ".join(f"{t:.3f}" for t in best)
        print(f"| {name} | {length:,} | {cells} | {sum(best):.3f} | {best_later:.4f} |", flush=True)
    if limit is not None:
        limit.restore_original_limits()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
