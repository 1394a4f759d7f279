"""Instructions of one training step of a bench_models workload, by callgrind (deterministic on a shared machine).

Runs the workload's row (numpy by hand, eager or jit) under ``valgrind --tool=callgrind``
twice, after a warm-up step, with 0 and with ``--steps`` more steps; the difference divided
by the steps is one step's instructions, printed with the functions that take the most of
them (OpenBLAS's GEMM kernel, exp, memset, the interpreter...).

``--model chain``: one "step" is one operation of bench_overhead's chain (multiply, add,
tanh on 10-element float64 arrays), eagerly recorded (row ``record``) or recorded and then
differentiated by ``backward()`` (row ``backward``); use ``--steps 3000``.

Run:  python benchmarks/step_instructions.py [--model transformer] [--dtype float64]
          [--rows numpy,eager,jit] [--steps 1] [--top 8]
      python benchmarks/step_instructions.py --model chain --rows record,backward --steps 3000
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def run_chain(row: str, ops: int) -> None:
    """(Inside valgrind.) A warm-up chain of 30 operations, then one of ``ops`` (and its backward)."""
    import numpy as np
    import autograd_dag as ad
    x = np.random.default_rng(0).standard_normal(10)
    c, d = np.full(10, 0.9), np.full(10, 0.1)
    for n in (30, ops):
        y = ad.Tensor(x, requires_grad=True)
        for k in range(n):
            y = ad.multiply(y, c) if k % 3 == 0 else ad.add(y, d) if k % 3 == 1 else ad.tanh(y)
        if row == "backward":
            y.sum().backward()


def run_steps(model: str, dtype: str, row: str, steps: int) -> None:
    """(Inside valgrind.) One warm-up step of ``row``, then ``steps`` more."""
    if model == "chain":
        return run_chain(row, steps)
    sys.path.insert(0, str(HERE))
    import numpy as np
    import bench_models as bm
    with bm.limit_threads(1):
        w = bm.WORKLOADS[model](np.dtype(dtype))
        step = {"numpy": lambda: w.numpy_step(w.params()), "eager": w.eager_grads, "jit": w.make_jit()}[row]
        step()
        for _ in range(steps):
            step()


def by_function(out_file: str) -> dict[str, int]:
    """Exclusive instructions per function from a callgrind output file."""
    text = subprocess.run(["callgrind_annotate", "--threshold=100", out_file], capture_output=True,
                          text=True, check=True).stdout
    counts: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(\S.*?)(?: \[.*\])?$", line)
        if m:
            name = m.group(2).split(":")[-1]
            counts[name] = counts.get(name, 0) + int(m.group(1).replace(",", ""))
    return counts


def measure(model: str, dtype: str, row: str, steps: int) -> dict[str, int]:
    """Instructions per step by function (the key "PROGRAM TOTALS" is the total)."""
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (0, steps):
            out = os.path.join(tmp, f"{row}_{n}.out")
            env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                            __file__, "--inside", model, dtype, row, str(n)],
                           check=True, env=env, capture_output=True)
            runs.append(by_function(out))
    before, after = runs
    return {k: (after.get(k, 0) - before.get(k, 0)) // steps for k in set(before) | set(after)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--inside":
        run_steps(argv[1], argv[2], argv[3], int(argv[4]))
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="transformer", choices=["mlp", "transformer", "lenet", "chain"])
    p.add_argument("--dtype", default="float64")
    p.add_argument("--rows", default="numpy,eager,jit")
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--top", type=int, default=8)
    args = p.parse_args(argv)
    unit, scale = ("operation", 1e3) if args.model == "chain" else ("step", 1e6)
    print(f"{args.model} {args.dtype}: instructions of one {unit} ({'thousands' if scale == 1e3 else 'millions'}), "
          f"callgrind\n")
    print("| row | total | " + " | ".join(f"top {i + 1}" for i in range(args.top)) + " |")
    print("|---|---|" + "---|" * args.top)
    for row in args.rows.split(","):
        counts = measure(args.model, args.dtype, row, args.steps)
        total = counts.pop("PROGRAM TOTALS", 0)
        top = sorted(counts.items(), key=lambda kv: -kv[1])[:args.top]
        print(f"| {row} | {total / scale:.1f} | " + " | ".join(f"{name} {n / scale:.1f}" for name, n in top)
              + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
