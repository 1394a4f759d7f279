"""Time ``Graph.topological_order()`` against ``networkx.topological_sort``.

Usage::

    python benchmarks/bench_toposort.py [--sizes 10000 100000 1000000] [--repeat 3]

Graph kinds, all with the same edges given to both libraries:

* ``chain``       -- 0 -> 1 -> ... -> n-1, vertices inserted in order;
* ``dag``         -- each vertex k >= 1 gets two random parents among 0..k-1
                     (about 2 parents on average, duplicates dropped), inserted in order;
* ``dag-shuffled``-- the same kind of DAG with vertices inserted in random order.

``Graph`` sorts a graph whose insertion order is already topological in O(n)
(it tracks that as edges are added); the ``ours kahn`` column times the general
heap-based Kahn algorithm on the same graph with that shortcut switched off,
which is what every graph with out-of-order insertions pays.

Only the sort is timed in the sort columns (best of ``--repeat`` runs);
construction is timed once and shown separately. ``ratio`` is networkx sort
time divided by ours (``ratio kahn``: divided by ``ours kahn``); above 1
means ours is faster.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from autograd_dag.graph import Graph  # noqa: E402

try:
    import networkx as nx
except ImportError:  # the comparison is optional
    nx = None


def chain_edges(n: int):
    return [(k, k + 1) for k in range(n - 1)], list(range(n))


def dag_edges(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    child = np.repeat(np.arange(1, n), 2)
    parent = (rng.random(child.size) * child).astype(np.int64)
    return list(zip(parent.tolist(), child.tolist())), list(range(n))


def shuffled_dag_edges(n: int, seed: int = 0):
    edges, vertices = dag_edges(n, seed)
    return edges, np.random.default_rng(seed + 1).permutation(n).tolist()


KINDS = {"chain": chain_edges, "dag": dag_edges, "dag-shuffled": shuffled_dag_edges}


def timed(fn, repeat: int = 1):
    """Best wall time of ``repeat`` calls, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def fmt(seconds) -> str:
    return "n/a" if seconds is None else f"{seconds:.4f}"


def run(sizes, repeat):
    header = (
        f"{'size':>9}  {'kind':<13}{'edges':>9}  {'ours build':>10}  {'ours sort':>10}  "
        f"{'ours kahn':>10}  {'nx build':>10}  {'nx sort':>10}  {'ratio':>7}  {'ratio kahn':>9}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        for kind, make in KINDS.items():
            edges, vertices = make(n)
            build, g = timed(lambda: Graph.from_edges(edges, vertices=vertices, check=False))
            ours, order = timed(g.topological_order, repeat)
            assert len(order) == n
            # Switch off the in-order shortcut to time the general algorithm.
            in_order, g._in_order = g._in_order, False
            kahn, order_kahn = timed(g.topological_order, repeat)
            g._in_order = in_order
            assert order_kahn == order
            m = g.num_edges
            del g, order, order_kahn

            nx_build = nx_sort = None
            if nx is not None:

                def build_nx():
                    G = nx.DiGraph()
                    G.add_nodes_from(vertices)
                    G.add_edges_from(edges)
                    return G

                nx_build, G = timed(build_nx)
                nx_sort, nx_order = timed(lambda: list(nx.topological_sort(G)), repeat)
                assert len(nx_order) == n
                del G, nx_order
            ratio = "n/a" if nx_sort is None else f"{nx_sort / ours:.1f}"
            ratio_kahn = "n/a" if nx_sort is None else f"{nx_sort / kahn:.1f}"
            print(
                f"{n:>9}  {kind:<13}{m:>9}  {fmt(build):>10}  {fmt(ours):>10}  "
                f"{fmt(kahn):>10}  {fmt(nx_build):>10}  {fmt(nx_sort):>10}  {ratio:>7}  {ratio_kahn:>9}",
                flush=True,
            )
            del edges, vertices


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**4, 10**5, 10**6])
    parser.add_argument("--repeat", type=int, default=3, help="sort timings: best of this many")
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, networkx {nx.__version__ if nx else 'n/a'}")
    print("seconds; ratio = nx sort / ours sort; ours kahn = heap path with the in-order shortcut off\n")
    run(args.sizes, args.repeat)


if __name__ == "__main__":
    main()
