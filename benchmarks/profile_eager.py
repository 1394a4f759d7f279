"""Where the eager step's time goes beside the jit step's: forward and backward, by primitive.

Both modes run the same primitives and VJP rules, so the difference is elsewhere; this
script measures it. The eager row (record, then ``loss.backward()``): its forward and its
backward timed apart, and the backward by the primitive of each visited node (its VJP rule
and the adding of its cotangents into its parents' sums). The jit row
(``ad.jit(ad.value_and_grad(loss))``): its program's nodes timed as the executor runs them
(profile_step.py's loop: per-node medians, no executor overhead), split at the loss node
into forward and backward, by primitive (the backward nodes are the operations the VJP
rules recorded). The eager step again with every primitive's implementation timed: its
forward and backward split into the numpy work (the kernels the jit's nodes run, by
primitive) and the Python between them (modules, recording, the sweep), which the jit does
not run. Then both whole steps with the row-wise splitting of the fused primitives
(primitives/rowsplit.py) and splitting.py's on and off, interleaved: what splitting costs
or gains in each mode.

BLAS and the pool at their default threads unless ``--threads``; medians over ``--rounds``.

Run:  python benchmarks/profile_eager.py [--model transformer] [--dtype float64] [--rounds 15] [--threads 0]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gc
import time
import types

import numpy as np

import bench_models as bm
import profile_step
from autograd_dag import autodiff, core, parallel
from autograd_dag.primitives import rowsplit


def eager_profile(w, rounds: int) -> tuple[float, float, dict]:
    """Medians of the eager step's forward and backward (ms), and of its backward's time by primitive."""
    visit, spent = autodiff._Sweep.visit, collections.Counter()

    def timed(self, t, ct=None):
        t0 = time.perf_counter()
        visit(self, t, ct)
        spent[t.prim.name] += time.perf_counter() - t0
    fwd, bwd, by_prim = [], [], collections.defaultdict(list)
    autodiff._Sweep.visit = timed
    try:
        for r in range(rounds + 2):   # (two warm-up steps)
            for _, p in w.named:
                p.grad = None
            spent.clear()
            t0 = time.perf_counter()
            loss = w.loss_of_model()
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            del loss
            if r >= 2:
                fwd.append(t1 - t0)
                bwd.append(t2 - t1)
                for k, v in spent.items():
                    by_prim[k].append(v)
    finally:
        autodiff._Sweep.visit = visit
    return (np.median(fwd) * 1e3, np.median(bwd) * 1e3,
            {k: float(np.median(v + [0.0] * (rounds - len(v)))) * 1e3 for k, v in by_prim.items()})


def jit_profile(w, rounds: int) -> tuple[collections.Counter, collections.Counter]:
    """The jit program's per-node medians (ms) summed by primitive, forward nodes and backward nodes apart."""
    program, arrays = profile_step.jit_program(w)
    times, _ = profile_step.profile(program, arrays, rounds)
    _, steps = program._plan()
    loss = program.outputs[0]
    fwd, bwd = collections.Counter(), collections.Counter()
    for (k, *_), t in zip(steps, np.median(times, axis=0) * 1e3):
        node = program.nodes[k]
        (fwd if node.index <= loss else bwd)[node.prim.name] += t
    return fwd, bwd


@contextlib.contextmanager
def timed_kernels(spent: collections.Counter, phase: list):
    """Every primitive's implementation timed into ``spent[phase[0], name]`` (the inlined elementwise functions' too).

    The numpy work of a step, apart from the Python around it. Entered after the jit program
    is planned, whose steps hold the implementations themselves (its in-place writes and
    split ufuncs stay as they run).
    """
    perf, saved, cells = time.perf_counter, {}, []

    def timer(prim, impl):
        def timed(*args, **params):
            t0 = perf()
            try:
                return impl(*args, **params)
            finally:
                spent[phase[0], prim.name] += perf() - t0
        return timed
    for o in gc.get_objects():
        if type(o) is core.Primitive and id(o) not in saved:
            saved[id(o)] = (o, o.impl)
            o.impl = timer(o, o.impl)
    by_impl = {id(impl): prim for prim, impl in saved.values()}
    for o in gc.get_objects():   # inlined.operation's closures hold their primitive's impl
        if type(o) is types.FunctionType and o.__code__.co_name == "op" and "impl" in o.__code__.co_freevars:
            cell = o.__closure__[o.__code__.co_freevars.index("impl")]
            prim = by_impl.get(id(cell.cell_contents))
            if prim is not None:
                cells.append((cell, cell.cell_contents))
                cell.cell_contents = prim.impl
    add = autodiff._Sweep.add   # the eager sweep's own sums of cotangents (the jit's are add nodes)

    def timed_add(self, pid, previous, g):
        t0 = perf()
        add(self, pid, previous, g)
        spent[phase[0], "add"] += perf() - t0
    autodiff._Sweep.add = timed_add
    try:
        yield
    finally:
        autodiff._Sweep.add = add
        for prim, impl in saved.values():
            prim.impl = impl
        for cell, impl in cells:
            cell.cell_contents = impl


def kernel_split(w, rounds: int) -> tuple[dict, dict]:
    """Medians (ms) of the eager step's forward and backward with their time inside primitives' numpy work,
    and that time by (phase, primitive)."""
    spent, phase, walls = collections.Counter(), ["warm-up"], collections.defaultdict(list)
    kernels, by_prim = collections.defaultdict(list), collections.defaultdict(list)
    with timed_kernels(spent, phase):
        for r in range(rounds + 2):
            for _, p in w.named:
                p.grad = None
            spent.clear()
            t0 = time.perf_counter()
            phase[0] = "forward"
            loss = w.loss_of_model()
            t1 = time.perf_counter()
            phase[0] = "backward"
            loss.backward()
            del loss
            t2 = time.perf_counter()
            if r >= 2:
                walls["forward"].append(t1 - t0)
                walls["backward"].append(t2 - t1)
                for ph in ("forward", "backward"):
                    kernels[ph].append(sum(v for (p, _), v in spent.items() if p == ph))
                for key, v in spent.items():
                    by_prim[key].append(v)
    return ({ph: (np.median(walls[ph]) * 1e3, np.median(kernels[ph]) * 1e3) for ph in walls},
            {k: float(np.median(v + [0.0] * (rounds - len(v)))) * 1e3 for k, v in by_prim.items()})


@contextlib.contextmanager
def splitting(on: bool):
    """Splitting as set (``on``), or off: every grain out of reach."""
    saved = dict(rowsplit.GRAIN), dict(parallel.GRAINS)
    if not on:
        rowsplit.GRAIN.update({k: 1 << 60 for k in rowsplit.GRAIN})
        parallel.GRAINS.update({k: 1 << 60 for k in parallel.GRAINS})
    parallel._changed()   # (the jit plan is made again: its split steps follow the grains)
    try:
        yield
    finally:
        rowsplit.GRAIN.update(saved[0])
        parallel.GRAINS.update(saved[1])
        parallel._changed()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="transformer", choices=[n for n in bm.WORKLOADS if n != "micrograd"])
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=0, help="BLAS threads (default 0: as they are)")
    args = ap.parse_args(argv)
    limit = bm.limit_threads(args.threads) if args.threads else contextlib.nullcontext()
    with limit:
        w = bm.WORKLOADS[args.model](np.dtype(args.dtype))
        w.build()
        print(f"{w.title} — {args.dtype}; BLAS threads {bm.blas_threads()}, "
              f"ad.get_num_threads() {parallel.get_num_threads()}; medians of {args.rounds}")
        e_fwd, e_bwd, e_prims = eager_profile(w, args.rounds)
        j_fwd, j_bwd = jit_profile(w, args.rounds)
        print(f"eager: forward {e_fwd:.2f} ms, backward {e_bwd:.2f} ms (step {e_fwd + e_bwd:.2f})")
        print(f"jit nodes: forward {sum(j_fwd.values()):.2f} ms, backward {sum(j_bwd.values()):.2f} ms")
        print("eager backward, by the visited node's primitive (its VJP and the adding of its cotangents):")
        print("  " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(e_prims.items(), key=lambda kv: -kv[1])))
        print("jit forward nodes:  " + ", ".join(f"{k} {v:.2f}" for k, v in j_fwd.most_common()))
        print("jit backward nodes: " + ", ".join(f"{k} {v:.2f}" for k, v in j_bwd.most_common()))
        split, by_prim = kernel_split(w, args.rounds)
        print("eager, inside the primitives' numpy work / between it (Python: modules, recording, the sweep): "
              + "; ".join(f"{ph} {wall:.2f} ms = {k:.2f} + {wall - k:.2f}" for ph, (wall, k) in split.items()))
        for ph in ("forward", "backward"):
            print(f"  eager {ph} kernels: " + ", ".join(
                f"{name} {v:.2f}" for (p, name), v in sorted(by_prim.items(), key=lambda kv: -kv[1]) if p == ph))
        steps = collections.defaultdict(list)
        for _ in range(4):
            for on in (True, False):
                with splitting(on):
                    for row in ("eager", "jit"):
                        fn = w.rows[row]
                        fn()
                        fn()
                        for _ in range(max(args.rounds // 3, 3)):
                            t0 = time.perf_counter()
                            fn()
                            steps[row, on].append(time.perf_counter() - t0)
        print("whole steps, splitting on / off (interleaved): " + ", ".join(
            f"{row} {np.median(steps[row, True]) * 1e3:.2f} / {np.median(steps[row, False]) * 1e3:.2f} ms"
            for row in ("eager", "jit")))


if __name__ == "__main__":
    main()
