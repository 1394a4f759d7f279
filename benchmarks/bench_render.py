"""Time the default render (the node budget), both views, SVG and PNG: DOT build and Graphviz layout.

Run: ``python benchmarks/bench_render.py`` (add ``--quick`` for the small
cases only). Prints the date, load average and versions (numpy, Graphviz), then one row per
program and view: boxes drawn (Graphviz nodes), wall time of building the DOT, of
``dot -Tsvg`` and of ``dot -Tpng``, the CPU time both ``dot`` runs used (the figure to
compare on a shared machine) and the image's size in pixels (the PNG's; the SVG's at
96 dpi, as a browser shows it at 100 %, when no PNG could be written). The targets
(issue 25): <= 5 s per view for a 40-block TransformerLM's gradient program and a
5,000-node random program, <= 15 s for a 10^5-node program.

Cases (issue 25, item 5):
  * ``random_100`` and ``mlp`` (``--quick``);
  * ``random_943`` and ``grad_random_943``: a random program of 943 ops whose output
    sums many intermediates (long edges everywhere: the worst case for ``dot``) and its
    gradient program;
  * ``random_5639``: a ~5,000-node random program without scopes;
  * ``lm40_forward`` / ``lm40_gradient``: a 40-block ``nn.TransformerLM``'s loss and its
    gradient program (``render_scale.transformer_programs``);
  * ``random_10^5``: a random program of about 100,000 nodes.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import re
import resource
import struct
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import autograd_dag as ad  # noqa: E402
from autograd_dag.render import render  # noqa: E402
from autograd_dag.gallery import mlp_program  # noqa: E402
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
    """(name, program) pairs, built one at a time (the 10^5-node program takes seconds to trace)."""
    yield "random_100", random_program(100)
    yield "mlp", mlp_program()
    if quick:
        return
    # render_scale imports random_program from here: imported late, not at the top, to avoid a cycle
    from render_scale import transformer_programs
    program = random_program(1000)
    yield "random_943", program
    yield "grad_random_943", ad.grad_program(program)
    yield "random_5639", random_program(5674)
    forward, gradient = transformer_programs(40)
    yield "lm40_forward", forward
    yield "lm40_gradient", gradient
    yield "random_10^5", random_program(100_000)


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


def drawn(graph) -> tuple[int, int]:
    """Boxes (Graphviz nodes) and edges in a rendered ``graph``'s DOT body."""
    nodes = sum(1 for line in graph.body if "[" in line and "->" not in line and "\tgraph" not in line
                and not line.lstrip().startswith(("label=", "style=", "color=", "fontcolor=", "fontsize=")))
    return nodes, sum(1 for line in graph.body if "->" in line)


def svg_pixels(svg: bytes):
    """(width, height) of an SVG at 96 dpi (a browser at 100 %), or None."""
    m = re.search(rb'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"', svg)
    return (round(float(m.group(1)) * 96 / 72), round(float(m.group(2)) * 96 / 72)) if m else None


def png_pixels(png: bytes):
    """(width, height) from a PNG's IHDR chunk."""
    return struct.unpack(">II", png[16:24])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small cases only")
    parser.add_argument("--only", default=None, help="cases whose name contains this")
    parser.add_argument("--baseline", action="store_true",
                        help="also time Graphviz's default settings (no layout limits, no references; "
                             "60 s timeout per layout)")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds of wall time allowed per layout (a loaded machine stretches it; default 600)")
    args = parser.parse_args(argv)
    print(versions())
    print(f"{'program':<16}{'nodes':>7} {'view':<10}{'boxes':>6}{'edges':>6}{'DOT (s)':>8}{'svg (s)':>8}"
          f"{'png (s)':>8}{'dot CPU (s)':>12}{'pixels':>12}" + (f"{'defaults (s)':>14}" if args.baseline else ""))
    for name, program in cases(args.quick):
        if args.only and args.only not in name:
            continue
        for view in ("dag", "bipartite"):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                graph = render(program, view)
            source = graph.source
            cpu = _children_cpu()
            t1 = time.perf_counter()
            svg = layout(source, "svg", timeout=args.timeout)
            t2 = time.perf_counter()
            try:
                size = png_pixels(layout(source, "png", timeout=args.timeout))
            except ad.RenderError:  # too large for a legible bitmap: report the SVG's size, starred
                size = svg_pixels(svg)
                size = None if size is None else (f"{size[0]}x{size[1]}*",)
            t3 = time.perf_counter()
            cpu = _children_cpu() - cpu
            nodes, edges = drawn(graph)
            px = "" if size is None else size[0] if len(size) == 1 else f"{size[0]}x{size[1]}"
            row = (f"{name:<16}{len(program.nodes):>7} {view:<10}{nodes:>6}{edges:>6}{t1 - t0:>8.2f}{t2 - t1:>8.2f}"
                   f"{t3 - t2:>8.2f}{cpu:>12.2f}{px:>12}")
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
