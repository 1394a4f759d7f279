"""Where a training step's time goes: the jit program of a bench_models workload, node by node.

Runs the program of ``ad.jit(ad.value_and_grad(loss))`` the way the executor does
(writing into dying operands, freeing after last use), timing each node and counting its
minor page faults; BLAS on one thread unless ``--threads`` (0: numpy's default); each node's
figure is its minimum over the rounds (robust on a shared machine). Prints the total,
the time by primitive and by name scope (blocks folded together), and the slowest nodes
with their operand shapes.

With ``--torch``, the step's time by family of operations (matrix products by their sizes)
beside PyTorch's step measured by torch.profiler, largest gap first.

Run:  python benchmarks/profile_step.py [--model transformer] [--dtype float64] [--rounds 15] [--top 30]
      [--threads 1] [--torch]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
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


def profile(program, arrays, rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """Seconds and minor page faults per node (each rounds × steps), run as ``Program.__call__`` runs them."""
    initial, steps = program._plan()
    times = np.zeros((rounds, len(steps)))
    faults = np.zeros((rounds, len(steps)), dtype=np.int64)
    for r in range(rounds):
        values = list(initial)
        for k, a in zip(program.inputs, arrays):
            values[k] = a
        gc.collect()
        for i, (k, impl, parents, params, frees, inplace) in enumerate(steps):
            f0 = bm.minor_faults()
            t0 = time.perf_counter()
            if inplace is not None and disposable(values, inplace):
                values[k] = impl(*[values[p] for p in parents], out=values[inplace], **(params or {}))
            else:
                values[k] = impl(*[values[p] for p in parents], **(params or {}))
            times[r, i] = time.perf_counter() - t0
            faults[r, i] = bm.minor_faults() - f0
            for p in frees:
                values[p] = None
    return times, faults


# Families of operations, to set our nodes beside PyTorch's ATen operators (--torch). Matrix
# products are keyed by their sizes instead (batch × the three sizes, sorted, so that a product
# and the products of its gradient, which share them, fall together).
OUR_FAMILIES = {
    "softmax (ours: + mask, scale)": ("masked_softargmax", "softargmax", "softargmax_jacobian", "softmax"),
    "layer norm": ("layer_norm", "standardize_jacobian", "standardized_sum"),
    "cross-entropy": ("softmax_cross_entropy", "softmax_cross_entropy_grad", "mean"),
    "embedding": ("take", "take_add", "checked_indices"),
    "copies and views": ("reshape", "transpose", "broadcast_to", "concatenate", "swapaxes"),
    "sums (bias gradients)": ("sum",),
}
TORCH_FAMILIES = {
    "softmax (ours: + mask, scale)": ("_softmax", "_softmax_backward_data"),
    "layer norm": ("native_layer_norm", "native_layer_norm_backward"),
    "cross-entropy": ("_log_softmax", "_log_softmax_backward_data", "nll_loss_forward", "nll_loss_backward"),
    "embedding": ("index", "index_put_", "_index_put_impl_", "embedding_dense_backward", "index_add_"),
    "copies and views": ("copy_", "clone", "contiguous", "view", "reshape", "_reshape_alias", "transpose", "t",
                         "expand", "as_strided", "_unsafe_view", "permute", "unsqueeze", "squeeze", "select",
                         "slice", "detach"),
    "sums (bias gradients)": ("sum",),
    "elementwise": ("add", "add_", "mul", "div", "sub", "threshold_backward", "clamp_min", "relu", "fill_",
                    "zero_", "where", "gt"),
}


def _gemm(batch: int, m: int, k: int, n: int) -> str:
    return "matmul " + (f"{batch}*" if batch > 1 else "") + "x".join(map(str, sorted((m, k, n))))


def our_family(program, node) -> str:
    """The family of one of our nodes (a matrix product: its sizes)."""
    name = node.prim.name
    shapes = [program.nodes[p].shape for p in node.parents]
    if name == "matmul" and len(shapes[0]) >= 2 and len(shapes[1]) >= 2:
        a, b = shapes[0], shapes[1]
        return _gemm(int(np.prod(np.broadcast_shapes(a[:-2], b[:-2]))), a[-2], a[-1], b[-1])
    if name in ("linear", "linear_relu"):   # x (..., k), W (n, k)
        x, w = shapes[0], shapes[1]
        return _gemm(1, int(np.prod(x[:-1])), x[-1], w[0])
    for family, names in OUR_FAMILIES.items():
        if name in names:
            return family
    return "elementwise"


def torch_family(name: str, shapes: list) -> str:
    """The family of an operator in torch.profiler's table (with its input shapes)."""
    if not name.startswith("aten::"):
        return "torch: autograd engine"
    op = name[len("aten::"):]
    if op in ("mm", "bmm") and len(shapes) >= 2:
        a, b = shapes[0], shapes[1]
        return _gemm(a[0] if op == "bmm" else 1, a[-2], a[-1], b[-1])
    if op == "addmm" and len(shapes) >= 3:
        a, b = shapes[1], shapes[2]
        return _gemm(1, a[0], a[1], b[1])
    for family, names in TORCH_FAMILIES.items():
        if op in names:
            return family
    return "torch: allocation, other ATen"


def torch_profile(w, steps: int = 10) -> tuple[dict, float]:
    """Milliseconds of self CPU time per family in one step of ``w``'s torch row (torch.profiler), and its wall time."""
    import torch
    from torch.profiler import ProfilerActivity, profile as tprofile
    run = w.torch_step(torch)
    for _ in range(5):
        run()
    walls = []
    for _ in range(steps):
        t0 = time.perf_counter()
        run()
        walls.append(time.perf_counter() - t0)
    with tprofile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(steps):
            run()
    families = collections.Counter()
    for e in prof.key_averages(group_by_input_shape=True):
        families[torch_family(e.key, e.input_shapes or [])] += e.self_cpu_time_total / 1e3 / steps
    return families, float(np.median(walls)) * 1e3


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="transformer", choices=[n for n in bm.WORKLOADS if n != "micrograd"])
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS (and torch) threads (default 1; 0: as they are, numpy's default)")
    ap.add_argument("--torch", action="store_true",
                    help="beside PyTorch's step (torch.profiler), family by family, largest gap first")
    args = ap.parse_args(argv)
    limit = bm.limit_threads(args.threads) if args.threads else contextlib.nullcontext()
    with limit:
        w = bm.WORKLOADS[args.model](np.dtype(args.dtype))
        program, arrays = jit_program(w)
        times, faults = profile(program, arrays, args.rounds)
        if args.torch:
            import torch
            torch.set_num_threads(bm.blas_threads())
            torch.set_default_dtype(torch.float64)
            theirs, torch_wall = torch_profile(w)
        threads = bm.blas_threads()
    _, steps = program._plan()
    best = times.min(axis=0) * 1e3
    nodes = [program.nodes[s[0]] for s in steps]
    print(f"{args.model} {args.dtype}, BLAS threads {threads}: {len(steps)} nodes, sum of per-node minima "
          f"{best.sum():.2f} ms (fastest round {times.sum(axis=1).min() * 1e3:.2f} ms), "
          f"minor page faults per round {int(np.median(faults.sum(axis=1)))}")
    by_prim, by_scope = collections.Counter(), collections.Counter()
    for node, t in zip(nodes, best):
        by_prim[node.prim.name] += t
        by_scope["/".join(s for s in (node.scope or ()) if not s.startswith("block.")) or "-"] += t
    print("by primitive:", ", ".join(f"{k} {v:.2f}" for k, v in by_prim.most_common()))
    print("by scope:", ", ".join(f"{k} {v:.2f}" for k, v in by_scope.most_common()))
    node_faults = np.median(faults, axis=0)
    for i in np.argsort(-best)[:args.top]:
        node = nodes[i]
        shapes = " ".join("x".join(map(str, program.nodes[p].shape)) or "()" for p in node.parents)
        print(f"  %{node.index:<5}{node.prim.name:<28}{best[i]:7.3f} ms {int(node_faults[i]):6d} faults  "
              f"{'/'.join(node.scope or ()):<30} {shapes}")
    if args.torch:
        # Medians per node here (typical, as the profiler's means are), minima above.
        ours = collections.Counter()
        for node, t in zip(nodes, np.median(times, axis=0) * 1e3):
            ours[our_family(program, node)] += t
        rows = sorted(set(ours) | set(theirs), key=lambda f: theirs.get(f, 0) - ours.get(f, 0))
        print(f"\nbeside PyTorch {torch.__version__} ({torch.get_num_threads()} threads; its step "
              f"{torch_wall:.2f} ms unprofiled): ms per step, our nodes' medians, torch.profiler's self CPU time")
        print(f"  {'family':<36}{'ours':>8}{'torch':>8}{'gap':>8}")
        for f in rows[:15]:
            print(f"  {f:<36}{ours.get(f, 0):8.2f}{theirs.get(f, 0):8.2f}{ours.get(f, 0) - theirs.get(f, 0):8.2f}")
        rest = rows[15:]
        print(f"  {'(the rest)':<36}{sum(ours.get(f, 0) for f in rest):8.2f}{sum(theirs.get(f, 0) for f in rest):8.2f}")
        print(f"  {'total':<36}{sum(ours.values()):8.2f}{sum(theirs.values()):8.2f}"
              f"{sum(ours.values()) - sum(theirs.values()):8.2f}")


if __name__ == "__main__":
    main()
