"""Time the default render of large programs, each view: the node budget and the ``dot`` settings.

Run: ``python benchmarks/render_scale.py`` (``--settings`` also times ``dot`` on each
case's DOT with other layout attributes; ``--max-nodes N`` changes the budget,
``--max-nodes 0`` draws every node, ``--depth 1`` collapses one depth for the whole
program as the renderer did before the budget; ``--only NAME`` picks cases; ``--site DIR``
instead writes each case's drill-down site, ``ad.render_site``, into ``DIR/<case>/`` and
prints its pages, most boxes on a page and seconds).
Cases (issue 25): a 40-block ``nn.TransformerLM``'s forward program and gradient
program (with respect to its parameters, ~4,500 nodes), and a random 5,639-node
program without scopes (``bench_render.random_program``). Prints one row per case and view:
Graphviz nodes and edges drawn, seconds to build the DOT, seconds of ``dot -Tsvg``,
and the SVG's size in pixels (at 96 dpi, as a browser shows it at 100 %).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import autograd_dag as ad  # noqa: E402
from autograd_dag import nn  # noqa: E402
from autograd_dag.render import as_program, render  # noqa: E402
from bench_render import drawn, random_program  # noqa: E402

SETTINGS = {
    "defaults of 2.43": {},
    "nslimit=0.2": {"nslimit": "0.2", "nslimit1": "0.2"},
    "mclimit=0.1": {"mclimit": "0.1"},
    "searchsize=20": {"searchsize": "20"},
    "splines=line": {"splines": "line"},
    "splines=ortho": {"splines": "ortho"},
    "newrank=false": {"newrank": "false"},
    "remincross=false": {"remincross": "false"},
    "all limits": {"nslimit": "0.2", "nslimit1": "0.2", "mclimit": "0.1", "searchsize": "20",
                   "remincross": "false"},
}
LAYOUT_KEYS = ("nslimit", "nslimit1", "mclimit", "searchsize", "remincross", "splines")


def transformer_programs(layers: int = 40):
    model = nn.TransformerLM(vocab_size=12, d_model=8, heads=2, hidden=16, layers=layers, rng=0)
    tokens = np.array([[1, 5, 2, 7, 3], [4, 4, 9, 0, 11]])
    loss = nn.functional.cross_entropy(model.logits(tokens[:, :-1]), tokens[:, 1:])
    forward = as_program(loss, parameters_as_inputs=True)
    return forward, ad.grad_program(forward)


def cases():
    forward, gradient = transformer_programs()
    yield "lm40_forward", forward
    yield "lm40_gradient", gradient
    program = random_program(5674)
    yield f"random_{len(program.nodes)}", program


def run_dot(source: str, timeout: float):
    t0 = time.perf_counter()
    try:
        out = subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None
    seconds = time.perf_counter() - t0
    m = re.search(rb'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"', out.stdout)
    size = (round(float(m.group(1)) * 96 / 72), round(float(m.group(2)) * 96 / 72)) if m else None
    return seconds, size


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-nodes", type=int, default=None, help="budget (default: render's); 0: none")
    parser.add_argument("--depth", type=int, default=None, help="collapse every scope below this depth instead")
    parser.add_argument("--only", default=None, help="cases whose name contains this")
    parser.add_argument("--settings", action="store_true", help="also time dot under other layout settings")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--site", default=None, help="write each case's drill-down site under this directory")
    args = parser.parse_args(argv)
    if args.site is not None:
        return sites(args)
    options = {} if args.max_nodes is None else {"max_nodes": args.max_nodes or None}
    if args.depth is not None:
        options["depth"] = args.depth
    version = subprocess.run(["dot", "-V"], capture_output=True, text=True).stderr.strip()
    print(version)
    print(f"{'program':<15}{'nodes':>7} {'view':<10}{'gv nodes':>9}{'gv edges':>9}{'DOT (s)':>9}"
          f"{'dot -Tsvg (s)':>14}{'SVG px':>13}")
    for name, program in cases():
        if args.only and args.only not in name:
            continue
        for view in ("dag", "bipartite"):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                graph = render(program, view, **options)
            source = graph.source
            t1 = time.perf_counter()
            nodes, edges = drawn(graph)
            seconds, size = run_dot(source, args.timeout)
            shown = f"> {args.timeout:.0f}" if seconds is None else f"{seconds:.2f}"
            px = "" if size is None else f"{size[0]}x{size[1]}"
            print(f"{name:<15}{len(program.nodes):>7} {view:<10}{nodes:>9}{edges:>9}{t1 - t0:>9.2f}{shown:>14}"
                  f"{px:>13}", flush=True)
            if args.settings:
                for label, attrs in SETTINGS.items():
                    g = graph.copy()
                    for key in LAYOUT_KEYS:
                        g.graph_attr.pop(key, None)
                    g.graph_attr.update(attrs)
                    s, _ = run_dot(g.source, args.timeout)
                    print(f"{'':<33}{label:<24}{'> %.0f' % args.timeout if s is None else '%.2f' % s:>14}",
                          flush=True)


def sites(args) -> None:
    version = subprocess.run(["dot", "-V"], capture_output=True, text=True).stderr.strip()
    print(version)
    print(f"{'program':<15}{'nodes':>7}{'pages':>7}{'SVG files':>10}{'most boxes':>11}{'seconds':>9}")
    for name, program in cases():
        if args.only and args.only not in name:
            continue
        budget = {} if args.max_nodes is None else {"max_nodes": args.max_nodes}
        t0 = time.perf_counter()
        site = ad.render_site(program, os.path.join(args.site, name), **budget)
        seconds = time.perf_counter() - t0
        most = max(n for page in site.pages for n in page.boxes.values())
        files = sum(len(page.files) for page in site.pages)
        print(f"{name:<15}{len(program.nodes):>7}{len(site.pages):>7}{files:>10}{most:>11}{seconds:>9.2f}",
              flush=True)


if __name__ == "__main__":
    main()
