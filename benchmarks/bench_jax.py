"""Our ``ad.jit`` training step against the same step lowered to JAX (``ad.jax.lower``) under ``jax.jit``.

The models of ``bench_models.py`` (its workloads, built by its code; its scalar micrograd demo only
with ``--models micrograd``: its 194,795-node step did not finish compiling in XLA within 3 minutes and
14 GB): for each, one step of
forward + backward (the loss and every parameter's gradient) traced once with ``ad.jit`` (row
``ours``, numpy) and the same program lowered with ``ad.jax.lower`` and compiled by ``jax.jit``
(row ``lowered``; its inputs already on the device, as a training loop keeps them). Each pair is
checked (largest difference of loss and gradients, relative to each array's largest entry) and
timed interleaved; the table shows medians, the ratio lowered/ours, and the compile times: our
trace (the first ``ad.jit`` call) and XLA's (lower + compile).

Three phases, each in its own process since XLA reads its thread flags once: ``one core`` (the
process pinned to one CPU with ``os.sched_setaffinity``, numpy's BLAS on one thread, XLA with
``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``, as bench_models.py does),
``default threads`` (no pinning, every library's default), and ``mesh`` — the data-parallel
TransformerLM of ``examples/data_parallel_lm.py`` (its full configuration, a few steps) over 8
simulated host devices: tokens per second and compile time.

Run:  PYTHONPATH=. python benchmarks/bench_jax.py [--models mlp,transformer] [--dtypes float64]
      [--repeat 9] [--mesh-steps 20] [--phases one-core,default,mesh] [--json out.json]
Needs jax (``pip install 'autograd-dag[jax]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ONE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
MODELS = ("micrograd", "mlp", "transformer", "lenet")
# micrograd's scalar demo is a program of 194,795 0-d nodes: lowered, XLA compiled it for over 3 minutes,
# growing past 14 GB (60 % of this machine), without finishing; it runs only when asked for (--models).
DEFAULT_MODELS = ("mlp", "transformer", "lenet")


def _max_rel_diff(ours, theirs) -> float:
    import jax
    # jax's leaf order for both (it sorts dict keys; jax.jit returns dicts sorted)
    a, b = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(a) == len(b)
    worst = 0.0
    for x, y in zip(a, b):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        worst = max(worst, float(np.abs(x - y).max() / max(np.abs(x).max(), 1e-300)))
    return worst


def measure_models(models, dtypes, repeat: int) -> list[dict]:
    """The ours/lowered pair of each model and dtype in this process (its threads as set by the caller)."""
    import jax
    jax.config.update("jax_enable_x64", True)
    import autograd_dag as ad
    sys.path.insert(0, HERE)
    import bench_models as bm
    workloads = {w.name: w for w in (bm.MicrogradWorkload, bm.MLPWorkload, bm.TransformerWorkload,
                                     bm.LeNetWorkload)}
    rows = []
    for name in models:
        for dtype in dtypes:
            if name == "micrograd" and dtype != "float64":
                continue  # (bench_models runs the scalar demo in float64 only)
            w = workloads[name](np.dtype(dtype))
            step, args = w.jit_step()
            t0 = time.perf_counter()
            ours = step(*args)
            trace = time.perf_counter() - t0
            t0 = time.perf_counter()
            lowered = jax.jit(ad.jax.lower(step, *args))
            dev_args = jax.device_put(args)
            compiled = lowered.lower(*dev_args).compile()
            compile_s = time.perf_counter() - t0
            theirs = jax.block_until_ready(compiled(*dev_args))
            err = _max_rel_diff(ours, theirs)
            times = {"ours": [], "lowered": []}
            for _ in range(repeat):  # interleaved: one call of each per round
                t0 = time.perf_counter()
                step(*args)
                times["ours"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                jax.block_until_ready(compiled(*dev_args))
                times["lowered"].append(time.perf_counter() - t0)
            ((program, _),) = step.programs.values()
            rows.append({"model": name, "dtype": dtype, "nodes": len(program.nodes),
                         "ours_ms": 1e3 * float(np.median(times["ours"])),
                         "lowered_ms": 1e3 * float(np.median(times["lowered"])),
                         "trace_s": trace, "xla_compile_s": compile_s, "max_rel_diff": err})
            print(f"  {name} {dtype}: ours {rows[-1]['ours_ms']:.2f} ms, lowered {rows[-1]['lowered_ms']:.2f} ms",
                  file=sys.stderr)
    return rows


def measure_mesh(steps: int) -> dict:
    """The data-parallel example's full configuration over the mesh of this process's devices."""
    sys.path.insert(0, os.path.dirname(HERE))
    from examples import data_parallel_lm
    r = data_parallel_lm.run(steps=steps, out=os.path.join("out", "bench_jax"), show_progress=False, verbose=False)
    return {k: r[k] for k in ("devices", "platform", "batch", "length", "steps", "dtype", "compile_seconds",
                              "seconds", "tokens_per_second", "jax")}


def child(args) -> None:
    """One phase, in this process: prints its JSON on stdout."""
    if args.phase == "one-core":
        from bench_models import limit_threads, pin_to_one_cpu  # noqa: F401  (same helpers as bench_models)
        cpu = pin_to_one_cpu()
        with limit_threads(1):
            out = {"cpu": cpu, "rows": measure_models(args.models.split(","), args.dtypes.split(","), args.repeat)}
    elif args.phase == "default":
        out = {"rows": measure_models(args.models.split(","), args.dtypes.split(","), args.repeat)}
    else:
        out = measure_mesh(args.mesh_steps)
    import jax
    out["jax"] = jax.__version__
    print(json.dumps(out))


def run_phase(phase: str, args) -> dict:
    env = dict(os.environ)
    root = os.path.dirname(HERE)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, HERE, env.get("PYTHONPATH")) if p)
    if phase == "one-core":
        env["XLA_FLAGS"] = ONE_THREAD_XLA
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = "1"
    elif phase == "mesh":
        env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    else:
        env.pop("XLA_FLAGS", None)
    env.setdefault("JAX_PLATFORMS", "cpu")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--phase", phase, "--models", args.models,
           "--dtypes", args.dtypes, "--repeat", str(args.repeat), "--mesh-steps", str(args.mesh_steps)]
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    if proc.returncode:
        raise SystemExit(f"bench_jax: phase {phase} failed ({proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def print_table(report: dict) -> None:
    print(f"jax {report['jax']}, numpy {np.__version__}, {os.cpu_count()} CPUs")
    for phase in ("one-core", "default"):
        if phase not in report:
            continue
        title = ("one core (pinned to CPU %s, one thread each)" % report[phase].get("cpu") if phase == "one-core"
                 else "default threads (no pinning)")
        print(f"\n{title}: median ms per training step (loss + all gradients)")
        print(f"  {'model':<12}{'dtype':<9}{'nodes':>7}{'ours ms':>10}{'lowered ms':>12}{'lowered/ours':>14}"
              f"{'trace s':>9}{'XLA compile s':>15}{'max rel diff':>14}")
        for r in report[phase]["rows"]:
            print(f"  {r['model']:<12}{r['dtype']:<9}{r['nodes']:>7}{r['ours_ms']:>10.2f}{r['lowered_ms']:>12.2f}"
                  f"{r['lowered_ms'] / r['ours_ms']:>14.2f}{r['trace_s']:>9.2f}{r['xla_compile_s']:>15.2f}"
                  f"{r['max_rel_diff']:>14.1e}")
        if "micrograd" not in {r["model"] for r in report[phase]["rows"]}:
            print("  (micrograd's scalar demo not lowered: its 194,795 0-d nodes did not compile in XLA within "
                  "3 min and 14 GB; --models micrograd tries)")
    if "mesh" in report:
        m = report["mesh"]
        print(f"\ndata-parallel TransformerLM (examples/data_parallel_lm.py, {m['dtype']}, batch {m['batch']}×"
              f"{m['length']}) over {m['devices']} simulated {m['platform']} devices: {m['steps']} steps in "
              f"{m['seconds']:.2f} s, {m['tokens_per_second']:.0f} tokens/s "
              f"({m['steps'] / m['seconds']:.1f} steps/s); XLA compile {m['compile_seconds']:.2f} s")


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(DEFAULT_MODELS), help=f"some of {','.join(MODELS)}")
    p.add_argument("--dtypes", default="float64,float32")
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--mesh-steps", type=int, default=20)
    p.add_argument("--phases", default="one-core,default,mesh")
    p.add_argument("--json", default=None, help="also write the report here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args)
        return {}
    try:
        import jax  # noqa: F401  (only to fail early with a clear message)
    except ImportError:
        raise SystemExit("bench_jax needs jax: pip install 'autograd-dag[jax]'") from None
    report = {}
    for phase in args.phases.split(","):
        report[phase] = run_phase(phase, args)
        report["jax"] = report[phase]["jax"]
    print_table(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return report


if __name__ == "__main__":
    main()
