"""Time the renderer: DOT generation and Graphviz layout (``dot -Tsvg``), both views.

Run: ``python benchmarks/bench_render.py`` (add ``--quick`` for the small
cases only). Prints the date and versions (numpy, Graphviz), then one row per program and
view: wall time of DOT generation and of ``dot -Tsvg``, and the CPU time ``dot``
used (the figure to compare on a shared machine). The target (issue 4) is
≤ 5 s for any program with default settings; Graphviz's own defaults took
13 s (DAG) and 97 s (bipartite) on a 1,000-op program.

Cases:
  * ``random_100`` / ``random_1000``: random programs whose output sums many
    intermediates (long edges everywhere: the worst case for ``dot``);
  * ``chain_1000``: the gallery's unrolled recurrence (shared weights);
  * ``grad_chain_500``: the gradient program of a 500-op recurrence (its
    backward half reuses forward values: long edges, ~1,100 ops);
  * ``mlp`` and, when the layer library has them, ``nn.LeNet``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import autograd_dag as ad  # noqa: E402
from autograd_dag.render import as_program, render  # noqa: E402
from autograd_dag.gallery import chain_program, mlp_program  # noqa: E402
from autograd_dag.render.output import layout  # noqa: E402


def random_program(n_ops: int, seed: int = 0, window: int = 30, every: int = 5) -> ad.Program:
    """``n_ops`` random elementwise ops on 3-vectors; the output adds every ``every``-th value."""
    rng = random.Random(seed)

    def f(x, y):
        vals = [x, y]
        while len(vals) < n_ops * 4 // 5:
            a = vals[-1 - rng.randrange(min(len(vals), window))]
            b = vals[-1 - rng.randrange(min(len(vals), window))]
            op = rng.choice("+*-tes")
            vals.append({"+": lambda: a + b, "*": lambda: a * b, "-": lambda: a - b,
                         "t": lambda: ad.tanh(a), "e": lambda: ad.exp(ad.tanh(a)),
                         "s": lambda: a + ad.sum(b)}[op]())
        acc = vals[-1]
        for v in vals[2::every]:
            acc = acc + v
        return ad.sum(acc)
    with np.errstate(all="ignore"):
        return ad.trace(f, np.ones(3), np.ones(3))


def cases(quick: bool):
    yield "random_100", random_program(100)
    yield "mlp", mlp_program()
    if quick:
        return
    yield "random_1000", random_program(1000)
    yield "chain_1000", chain_program(1000)
    yield "grad_chain_500", ad.grad_program(chain_program(500))
    try:
        from autograd_dag import nn
        from autograd_dag.nn import functional as F
        model = nn.LeNet(rng=0) if hasattr(nn, "LeNet") else None
    except Exception:  # the layer library is optional for this benchmark
        model = None
    if model is not None:
        x = ad.Tensor(np.zeros((2, 1, 28, 28)), name="images")
        yield "nn.LeNet", as_program(F.cross_entropy(model(x), np.array([0, 1])))


def _children_cpu() -> float:
    """CPU seconds used so far by finished child processes (the ``dot`` runs): unlike wall time, not
    inflated when other work shares the machine's cores."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def versions() -> str:
    """The date and the versions the figures depend on, printed above the table (the README quotes them)."""
    dot = subprocess.run(["dot", "-V"], capture_output=True, text=True).stderr.strip()
    return (f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, Python {sys.version.split()[0]}, "
            f"numpy {np.__version__}, {dot}, load average {os.getloadavg()[0]:.1f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small cases only")
    parser.add_argument("--baseline", action="store_true",
                        help="also time Graphviz's default settings (no layout limits, no references; "
                             "60 s timeout per layout)")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds of wall time allowed per layout (a loaded machine stretches it; default 600)")
    args = parser.parse_args(argv)
    print(versions())
    print(f"{'program':<16}{'ops':>6} {'view':<10}{'gv nodes':>9}{'gv edges':>9}{'DOT (s)':>9}{'dot -Tsvg (s)':>15}"
          f"{'dot CPU (s)':>13}" + (f"{'defaults (s)':>14}" if args.baseline else ""))
    for name, program in cases(args.quick):
        ops = sum(1 for n in program.nodes if n.parents)
        for view in ("dag", "bipartite"):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                graph = render(program, view)
            source = graph.source
            cpu = _children_cpu()
            t1 = time.perf_counter()
            layout(source, "svg", timeout=args.timeout)
            t2 = time.perf_counter()
            cpu = _children_cpu() - cpu
            nodes = sum(1 for line in graph.body if "[" in line and "->" not in line and "\tgraph" not in line)
            edges = sum(1 for line in graph.body if "->" in line)
            row = f"{name:<16}{ops:>6} {view:<10}{nodes:>9}{edges:>9}{t1 - t0:>9.3f}{t2 - t1:>15.2f}{cpu:>13.2f}"
            if args.baseline:
                naive = render(program, view, long_edges="keep", max_nodes=None)
                for key in ("nslimit", "nslimit1", "mclimit", "searchsize", "remincross", "newrank"):
                    naive.graph_attr.pop(key, None)
                t3 = time.perf_counter()
                try:
                    layout(naive.source, "svg", timeout=60)
                    row += f"{time.perf_counter() - t3:>14.2f}"
                except ad.RenderError:
                    row += f"{'> 60':>14}"
            print(row, flush=True)


if __name__ == "__main__":
    main()
