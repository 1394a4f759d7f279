"""Time ``Graph.topological_order()`` against a plain deque Kahn in Python and ``networkx.topological_sort``.

Usage::

    python benchmarks/bench_toposort.py [--sizes 10000 100000 1000000] [--repeat 5]

Graph kinds, all with the same edges given to every contender:

* ``chain``       -- 0 -> 1 -> ... -> n-1, vertices inserted in order;
* ``dag``         -- each vertex k >= 1 gets two random parents among 0..k-1
                     (about 2 parents on average, duplicates dropped), inserted in order;
* ``dag-shuffled``-- the same kind of DAG with its vertices and its edges inserted
                     in random order (issue 13's row: ``ours / kahn`` there, goal <= 1).

A second table times the same search walking recorded Tensors
(``tracing.topological_nodes``, what every ``backward()`` starts with) behind a
chain of ``--walk`` operations (multiply by a constant, add a constant, tanh),
in nanoseconds per operation: as ``backward()`` walks (only nodes that require a
gradient) and as the transformations do (every node, behind a stop set).

``Graph`` sorts a graph whose insertion order is already topological in O(n)
(it tracks that as edges are added); the ``ours search`` column times the
depth-first search (``graph.topological_sort``) on the same graph with that
shortcut switched off, which is what every graph with out-of-order insertions
pays. ``kahn`` is the textbook algorithm written plainly in Python (a deque
of ready vertices, in-degrees in a dict) over adjacency dicts built beforehand.

Construction is timed once and shown separately. The sorts are timed in
``--repeat`` interleaved rounds (ours, ours search, kahn, networkx in turn)
and the median is shown. The ratios divide by the plain Kahn sort measured in
the same rounds: ``ours / kahn`` uses the ``ours sort`` column, below 1 means
ours is faster.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections import deque

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import autograd_dag as ad  # noqa: E402
from autograd_dag.dag import Graph  # noqa: E402
from autograd_dag.graph import topological_sort  # noqa: E402
from autograd_dag.tracing import topological_nodes  # noqa: E402

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
    rng = np.random.default_rng(seed + 1)
    return [edges[k] for k in rng.permutation(len(edges))], rng.permutation(n).tolist()


KINDS = {"chain": chain_edges, "dag": dag_edges, "dag-shuffled": shuffled_dag_edges}


def plain_kahn(parents: dict, children: dict) -> list:
    """Kahn's algorithm as a textbook writes it: a FIFO of the vertices whose parents are all placed."""
    indegree = {v: len(p) for v, p in parents.items()}
    ready = deque(v for v, d in indegree.items() if d == 0)
    order = []
    while ready:
        v = ready.popleft()
        order.append(v)
        for c in children[v]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    return order


def adjacency(vertices, edges):
    parents: dict = {v: [] for v in vertices}
    children: dict = {v: [] for v in vertices}
    for i, j in dict.fromkeys(edges):
        parents[j].append(i)
        children[i].append(j)
    return parents, children


def once(fn):
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def interleaved(contenders: dict, repeat: int) -> dict:
    """Median wall time of each contender over ``repeat`` rounds that run them in turn."""
    times: dict = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            times[name].append(once(fn)[0])
    return {name: statistics.median(t) for name, t in times.items()}


def fmt(seconds) -> str:
    return "n/a" if seconds is None else f"{seconds:.4f}"


def run(sizes, repeat):
    header = (
        f"{'size':>9}  {'kind':<13}{'edges':>9}  {'ours build':>10}  {'ours sort':>10}  {'ours search':>11}  "
        f"{'kahn':>8}  {'nx sort':>8}  {'ours / kahn':>11}  {'nx / kahn':>9}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        for kind, make in KINDS.items():
            edges, vertices = make(n)
            build, g = once(lambda: Graph.from_edges(edges, vertices=vertices, check=False))
            parents, children = adjacency(vertices, edges)
            # The search behind topological_order when the insertion order is not topological.
            search = (lambda: topological_sort(g, g._parents.__getitem__))
            contenders = {"ours": g.topological_order, "search": search,
                          "kahn": lambda: plain_kahn(parents, children)}
            if nx is not None:
                G = nx.DiGraph()
                G.add_nodes_from(vertices)
                G.add_edges_from(edges)
                contenders["nx"] = lambda: list(nx.topological_sort(G))
            order = g.topological_order()
            assert search() == order and len(order) == n
            assert len(plain_kahn(parents, children)) == n
            t = interleaved(contenders, repeat)
            nx_sort = t.get("nx")
            nx_ratio = "n/a" if nx_sort is None else f"{nx_sort / t['kahn']:.2f}"
            print(
                f"{n:>9}  {kind:<13}{g.num_edges:>9}  {fmt(build):>10}  {fmt(t['ours']):>10}  "
                f"{fmt(t['search']):>11}  {fmt(t['kahn']):>8}  {fmt(nx_sort):>8}  "
                f"{t['ours'] / t['kahn']:>11.2f}  {nx_ratio:>9}",
                flush=True,
            )
            del edges, vertices, g, order, parents, children, contenders
            if nx is not None:
                del G


def run_walk(sizes, repeat):
    print(f"\n{'recorded ops':>12}  {'backward walk ns/op':>19}  {'full walk ns/op':>15}")
    for n in sizes:
        x = ad.Tensor(np.ones(1), requires_grad=True)
        y = x
        for k in range(n):
            y = y * 0.5 if k % 3 == 0 else (y + 0.1 if k % 3 == 1 else ad.tanh(y))
        t = interleaved({"backward": lambda: topological_nodes([y], prune_constant=True),
                         "full": lambda: topological_nodes([y], stop={id(x)})}, repeat)
        print(f"{n:>12}  {t['backward'] / n * 1e9:>19.0f}  {t['full'] / n * 1e9:>15.0f}", flush=True)
        del x, y


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**4, 10**5, 10**6])
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds; the median is shown")
    parser.add_argument("--walk", type=int, nargs="*", default=[2000, 10**6],
                        help="lengths of the recorded chains walked (none: skip)")
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, networkx {nx.__version__ if nx else 'n/a'}")
    print("seconds (median of interleaved rounds); ours / kahn = our sort time / plain deque Kahn's "
          "(issue 13's goal: <= 1.0 on dag-shuffled)\n")
    run(args.sizes, args.repeat)
    if args.walk:
        run_walk(args.walk, args.repeat)


if __name__ == "__main__":
    main()
