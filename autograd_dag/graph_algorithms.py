"""The book's other questions about a DAG (§4.1), which programs never ask.

Every topological order, whether a graph is a computation chain, its
bipartite form and its induced subgraphs. They read a
:class:`~autograd_dag.dag.Graph` through its public methods and build new
ones with ``Graph.from_edges``, one layer above the DAG core that programs
stand on (:mod:`autograd_dag.graph`). Every walk is iterative.

>>> from autograd_dag.dag import Graph
>>> g = Graph.from_edges([(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)])
>>> list(topological_orders(g)), is_chain(g), is_chain(subgraph(g, [0, 1, 3, 4]))
([(0, 1, 2, 3, 4), (0, 2, 1, 3, 4)], False, True)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Any

from autograd_dag.dag import Graph

__all__ = ["FUNCTION", "VARIABLE", "is_chain", "subgraph", "to_bipartite", "topological_orders"]

#: Kind tag of a function vertex ``("f", k)`` in :func:`to_bipartite`.
FUNCTION = "f"
#: Kind tag of a variable vertex ``("s", k)`` in :func:`to_bipartite`.
VARIABLE = "s"


def topological_orders(g: Graph, limit: int | None = None) -> Iterator[tuple]:
    """Generate every topological order of ``g`` (as tuples), at most ``limit`` of them.

    Orders come in lexicographic order of insertion indices (the first one
    takes the earliest-inserted ready vertex at every step). The number of
    orders can grow factorially with the number of vertices: meant for small
    graphs, or use ``limit``. An empty graph has exactly one (empty) order.
    Raises ``CycleError`` if the graph has a cycle.

    >>> list(topological_orders(Graph.from_edges([(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)])))
    [(0, 1, 2, 3, 4), (0, 2, 1, 3, 4)]
    >>> list(topological_orders(Graph.from_edges([], vertices="abc"), limit=2))
    [('a', 'b', 'c'), ('a', 'c', 'b')]
    """
    if limit is not None and limit <= 0:
        return
    g.topological_order()  # raises CycleError naming a cycle
    n = len(g)
    if n == 0:
        yield ()
        return
    vertices = list(g)
    index = {v: k for k, v in enumerate(vertices)}
    children = [[index[c] for c in g.children(v)] for v in vertices]
    indegree = [len(g.parents(v)) for v in vertices]
    # The ready vertices are one set shared by every depth (a Fenwick tree over insertion
    # indices: add, remove and "next ready after k" in O(log n)); a choice is undone on the
    # way back. A copy of the ready list per depth made even the first order O(n·width)
    # time and memory (108 s for a 90,000-vertex fan-in/fan-out DAG).
    tree = [0] * (n + 1)
    size = 0
    top_bit = 1 << n.bit_length()

    def update(k: int, delta: int) -> None:
        k += 1
        while k <= n:
            tree[k] += delta
            k += k & -k

    def next_ready(k: int) -> int | None:
        """The smallest ready index above k (k = -1: the first)."""
        before, i = 0, k + 1
        while i > 0:
            before += tree[i]
            i -= i & -i
        if before == size:
            return None
        # Descend to the (before + 1)-th ready index.
        pos, remaining, step = 0, before + 1, top_bit
        while step:
            if pos + step <= n and tree[pos + step] < remaining:
                pos += step
                remaining -= tree[pos]
            step >>= 1
        return pos

    for k, d in enumerate(indegree):
        if d == 0:
            update(k, 1)
            size += 1
    order: list = []
    count = 0
    # Each frame: the last index tried at that depth, and whether it is still chosen.
    stack: list[list[Any]] = [[-1, False]]
    while stack:
        frame = stack[-1]
        if frame[1]:
            # Undo the choice made at this depth before trying the next one.
            v = frame[0]
            for c in children[v]:
                if indegree[c] == 0:
                    update(c, -1)
                    size -= 1
                indegree[c] += 1
            update(v, 1)
            size += 1
            order.pop()
            frame[1] = False
        v = next_ready(frame[0])
        if v is None:
            stack.pop()
            continue
        frame[0], frame[1] = v, True
        update(v, -1)
        size -= 1
        order.append(vertices[v])
        for c in children[v]:
            indegree[c] -= 1
            if indegree[c] == 0:
                update(c, 1)
                size += 1
        if len(order) == n:
            yield tuple(order)
            count += 1
            if limit is not None and count >= limit:
                return
        else:
            stack.append([-1, False])


def is_chain(g: Graph) -> bool:
    """Whether ``g`` is a computation chain (§4.1.1): one path through every vertex.

    True when the vertices can be listed ``v0 -> v1 -> ... -> vK`` with
    exactly those ``K`` edges, so each vertex reads only its predecessor.
    A graph with a shortcut edge (``0 -> 1 -> 2`` plus ``0 -> 2``) is
    totally ordered too but is not a chain, since ``2`` also reads ``0``.
    An empty or one-vertex graph is a chain.

    >>> is_chain(Graph.from_edges([(0, 1), (1, 2), (2, 3)])), is_chain(Graph.from_edges([(0, 1), (0, 2)]))
    (True, False)
    """
    n, m = len(g), g.num_edges
    if n <= 1:
        return m == 0
    if m != n - 1:
        return False
    roots = g.roots()
    if len(roots) != 1:
        return False
    # One root and n - 1 edges leave every other vertex exactly one parent,
    # so no cycle is reachable from the root and this walk ends.
    v, visited = roots[0], 1
    while children := g.children(v):
        if len(children) != 1:
            return False
        v = children[0]
        visited += 1
    return visited == n


def to_bipartite(g: Graph) -> Graph:
    """The bipartite form of §4.1.3: separate function and variable vertices.

    Every vertex ``k`` becomes a variable vertex ``("s", k)``; every
    non-root ``k`` also becomes a function vertex ``("f", k)`` with edge
    ``("f", k) -> ("s", k)`` (roots are inputs: a variable with no function).
    Every edge ``i -> j`` becomes ``("s", i) -> ("f", j)``. Vertices are
    ``(kind, k)`` tuples, ``kind`` being :data:`FUNCTION` (``"f"``) or
    :data:`VARIABLE` (``"s"``); ``f_k, s_k`` sit where ``k`` sat and parents
    and children keep their order. With ``n`` vertices, ``r`` roots and ``m``
    edges the result has ``2n - r`` vertices and ``(n - r) + m`` edges.

    >>> b = to_bipartite(Graph.from_edges([(0, 1), (0, 2), (1, 2)]))
    >>> b.vertices
    [('s', 0), ('f', 1), ('s', 1), ('f', 2), ('s', 2)]
    >>> b.parents(("f", 2))
    [('s', 0), ('s', 1)]
    """
    # Each (kind, k) tuple is made once and reused: tuples re-hash on every dict lookup.
    var = {k: (VARIABLE, k) for k in g}
    fun = {k: (FUNCTION, k) for k in g if g.parents(k)}
    vertices = []
    for k, sk in var.items():
        if k in fun:
            vertices.append(fun[k])
        vertices.append(sk)
    # g's edge order is the order of every parent list and every child list.
    edges = [(var[i], fun[j]) for i, j in g.edges] + [(fk, var[k]) for k, fk in fun.items()]
    return Graph.from_edges(edges, vertices=vertices, check=False)


def subgraph(g: Graph, vertices: Iterable[Hashable]) -> Graph:
    """The subgraph of ``g`` induced by ``vertices``: them and the edges among them.

    Vertices and edges keep ``g``'s insertion order, whatever the order of
    ``vertices``. Raises ``KeyError`` for a vertex not in the graph.

    >>> subgraph(Graph.from_edges([(0, 1), (1, 2), (0, 2)]), [2, 0]).edges
    [(0, 2)]
    """
    keep = set()
    for v in vertices:
        if v not in g:
            raise KeyError(f"vertex {v!r} is not in the graph")
        keep.add(v)
    return Graph.from_edges([(i, j) for i, j in g.edges if i in keep and j in keep],
                            vertices=[v for v in g if v in keep], check=False)
