"""The bare directed acyclic graph (DAG) a user builds by hand (book §4.1.2).

A :class:`Graph` holds hashable vertices and directed edges ``i -> j`` meaning
"``j`` depends on ``i``". It knows nothing about values, functions or tensors:
it answers questions about structure (parents, children, roots, leaves, paths,
a topological order, cycles) and refuses edges that would close a cycle. Its
walks are the library's only ones (:mod:`autograd_dag.graph`), so graphs with
millions of vertices never hit Python's recursion limit. The book's other
questions (every topological order, chains, the bipartite form) are in
:mod:`autograd_dag.graph_algorithms`; ``Program.to_graph`` and
``Program.from_graph`` convert between a program and a Graph.

>>> g = Graph.from_edges([(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)])
>>> g.topological_order(), g.ancestors(3) == {0, 1, 2}
([0, 1, 2, 3, 4], True)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator

from autograd_dag.errors import AutogradDagError, CycleError, GraphError, MissingVertexError
from autograd_dag.graph import _cycle_error, paused_gc, reachable, topological_sort

__all__ = ["Graph"]


def _malformed_edge(edges, exc: Exception) -> GraphError:
    """The error naming the first edge that is not a pair of hashable vertices (``exc`` said only how it failed)."""
    for k, e in enumerate(edges):
        problem = None
        if isinstance(e, str) or not isinstance(e, (tuple, list)) or len(e) != 2:
            problem = "an edge must be a pair (i, j) of vertices"
        else:
            try:
                hash(e[0]), hash(e[1])
            except TypeError as err:
                problem = f"its vertices must be hashable ({err})"
        if problem is not None:
            return GraphError(f"Graph.from_edges: edge {k} is {e!r}: {problem}")
    return GraphError(f"Graph.from_edges: {type(exc).__name__}: {exc}")


class Graph:
    """A directed acyclic graph over hashable vertices, in insertion order.

    An edge ``(i, j)`` (written ``i -> j``) says that ``j`` depends on ``i``:
    ``i`` is a parent of ``j`` and ``j`` a child of ``i``. Vertices, edges,
    parents and children are always reported in the order they were inserted,
    so every answer is deterministic.

    Adding an edge that would close a cycle raises
    :class:`~autograd_dag.errors.CycleError` naming the cycle and leaves the
    graph unchanged. The only way to hold a cyclic graph is
    ``Graph.from_edges(..., check=False)``; its :meth:`topological_order` then
    raises ``CycleError``.

    >>> g = Graph()
    >>> g.add_edge("x", "y")
    >>> g.add_edge("y", "z")
    >>> g
    Graph(3 vertices, 2 edges)
    >>> g.parents("z"), g.children("x"), g.roots(), g.leaves()
    (['y'], ['y'], ['x'], ['z'])
    """

    __slots__ = ("_parents", "_children", "_index", "_edges", "_in_order")

    def __init__(self) -> None:
        """Create an empty graph.

        >>> len(Graph())
        0
        """
        self._parents: dict[Hashable, list] = {}
        self._children: dict[Hashable, list] = {}
        # Insertion index of each vertex, to tell whether an edge goes forward.
        self._index: dict[Hashable, int] = {}
        # Edges in insertion order. Duplicates are caught by scanning the
        # shorter of children[i] / parents[j] instead of keeping an edge set:
        # a set would cost ~40% more memory, and on the usual graphs (a new
        # vertex reading a few old ones) one of the two lists is tiny.
        self._edges: list[tuple] = []
        # True while every edge goes from an earlier-inserted vertex to a later
        # one: then the insertion order is the topological order and sorting
        # costs O(n). Programs are usually built this way.
        self._in_order = True

    # ------------------------------------------------------------------ building

    def add_vertex(self, v: Hashable) -> None:
        """Add vertex ``v`` with no edges; adding an existing vertex does nothing.

        Takes any hashable value; returns None.

        >>> g = Graph()
        >>> g.add_vertex("a"); g.add_vertex("a")
        >>> g.vertices
        ['a']
        """
        if v not in self._index:
            self._index[v] = len(self._index)
            self._parents[v] = []
            self._children[v] = []

    def add_edge(self, i: Hashable, j: Hashable) -> None:
        """Add the edge ``i -> j`` (``j`` depends on ``i``), adding missing vertices.

        A duplicate edge is ignored. An edge that would close a cycle (a path
        ``j -> ... -> i`` already exists, or ``i == j``) raises ``CycleError``
        whose ``cycle`` lists the cycle's vertices in order with the first
        repeated at the end; the graph, including its vertex set, is then left
        exactly as it was.

        >>> g = Graph.from_edges([("a", "b"), ("b", "c")])
        >>> try:
        ...     g.add_edge("c", "a")
        ... except CycleError as err:
        ...     print(err); print(err.cycle)
        adding edge c -> a would close the cycle a -> b -> c -> a
        ['a', 'b', 'c', 'a']
        >>> g.num_edges
        2
        """
        if self.has_edge(i, j):
            return
        cycle = [i, i] if i == j else None
        # A cycle needs a path j -> ... -> i, so j must have children and i
        # parents; in the usual program-building case (a new vertex j reading
        # older ones) this skips the search entirely.
        if cycle is None and i in self._index and j in self._index and self._children[j] and self._parents[i]:
            came_from = reachable([j], self._children.__getitem__)
            if i in came_from:
                cycle = [i]
                while cycle[-1] != j:
                    cycle.append(came_from[cycle[-1]])
                cycle = [*reversed(cycle), j]
        if cycle is not None:
            raise _cycle_error(f"adding edge {i} -> {j} would close the cycle ", cycle)
        self.add_vertex(i)
        self.add_vertex(j)
        self._edges.append((i, j))
        self._children[i].append(j)
        self._parents[j].append(i)
        if self._in_order and self._index[i] >= self._index[j]:
            self._in_order = False

    @classmethod
    def from_edges(
        cls,
        edges: Iterable[tuple[Hashable, Hashable]],
        vertices: Iterable[Hashable] = (),
        check: bool = True,
    ) -> "Graph":
        """Build a graph from ``vertices`` (added first, in order) and ``edges``.

        Takes an iterable of ``(i, j)`` pairs and an optional iterable of
        vertices (useful for isolated vertices or to fix the insertion order);
        returns a new ``Graph``. With ``check=True`` every edge goes through
        :meth:`add_edge`, so a cycle raises ``CycleError``. ``check=False``
        skips the per-edge cycle search (the fast path for large graphs); a
        cycle is then only reported by :meth:`topological_order`,
        :meth:`find_cycle` or :meth:`is_acyclic`.

        >>> Graph.from_edges([(1, 2)], vertices=[0, 2]).vertices
        [0, 2, 1]
        >>> Graph.from_edges([(0, 1), (1, 0)], check=False).find_cycle()
        [0, 1, 0]
        """
        g = cls()
        vertices = list(vertices)
        for v in vertices:
            g.add_vertex(v)
        edges = edges if isinstance(edges, (list, tuple)) else list(edges)
        try:
            with paused_gc():  # (roughly triples the build time of a 10**6-vertex graph otherwise)
                g._add_edges_unchecked(edges)
        except (ValueError, TypeError) as exc:
            if isinstance(exc, AutogradDagError):
                raise
            # Looked for only after a failure: the loop above stays as fast as it was.
            raise _malformed_edge(edges, exc) from None
        if check and not g.is_acyclic():
            g._raise_first_cycle(vertices, edges)
        return g

    @classmethod
    def _raise_first_cycle(cls, vertices, edges: list) -> None:
        # One search for the whole graph, not one per edge (that was O(V·E): 17 s for a
        # 18,000-edge fan-in/fan-out DAG); only when it finds a cycle is the first edge that
        # closes one looked for, by halving, so the error is add_edge's own.
        def prefix(k: int) -> "Graph":
            g = cls()
            for v in vertices:
                g.add_vertex(v)
            g._add_edges_unchecked(edges[:k])
            return g

        acyclic, cyclic = 0, len(edges)
        while cyclic - acyclic > 1:
            mid = (acyclic + cyclic) // 2
            if prefix(mid).is_acyclic():
                acyclic = mid
            else:
                cyclic = mid
        prefix(acyclic).add_edge(*edges[acyclic])
        raise AssertionError("unreachable: the edge closes a cycle")  # pragma: no cover

    def _add_edges_unchecked(self, edges: Iterable[tuple[Hashable, Hashable]]) -> None:
        # (A str edge "ab" would unpack into a -> b: refused by the check below, only
        # run for edges that are not tuples.)
        parents, children, index = self._parents, self._children, self._index
        edge_list = self._edges
        in_order = self._in_order
        # Inlined and exception-driven: this loop is the whole cost of building
        # a large graph, and a vertex is new only once.
        for e in edges:
            i, j = e
            if type(e) is not tuple:
                if isinstance(e, str):
                    raise ValueError("a string is not an edge")
                e = (i, j)
            try:
                ci = children[i]
            except KeyError:
                index[i] = len(index)
                parents[i] = []
                ci = children[i] = []
            try:
                pj = parents[j]
            except KeyError:
                # A vertex created by this edge comes after i: no duplicate
                # possible and the insertion order still holds.
                index[j] = len(index)
                parents[j] = [i]
                children[j] = []
                ci.append(j)
                edge_list.append(e)
                continue
            if (j in ci) if len(ci) <= len(pj) else (i in pj):
                continue
            if in_order and index[i] >= index[j]:
                in_order = False
            ci.append(j)
            pj.append(i)
            edge_list.append(e)
        self._in_order = in_order

    def copy(self) -> "Graph":
        """Return an independent copy (vertices themselves are shared, not copied).

        >>> g = Graph.from_edges([(0, 1)])
        >>> h = g.copy(); h.add_edge(1, 2)
        >>> len(g), len(h)
        (2, 3)
        """
        h = type(self)()
        h._index = dict(self._index)
        h._parents = {v: list(p) for v, p in self._parents.items()}
        h._children = {v: list(c) for v, c in self._children.items()}
        h._edges = list(self._edges)
        h._in_order = self._in_order
        return h

    # ------------------------------------------------------------------ basic queries

    @property
    def vertices(self) -> list:
        """All vertices in insertion order (a new list).

        >>> Graph.from_edges([(2, 1)]).vertices
        [2, 1]
        """
        return list(self._index)

    @property
    def edges(self) -> list[tuple]:
        """All edges ``(i, j)`` in insertion order (a new list).

        >>> Graph.from_edges([(0, 2), (0, 1)]).edges
        [(0, 2), (0, 1)]
        """
        return list(self._edges)

    @property
    def num_edges(self) -> int:
        """The number of edges (a property, like ``vertices`` and ``edges``).

        >>> Graph.from_edges([(0, 1), (0, 1), (1, 2)]).num_edges
        2
        """
        return len(self._edges)

    def has_edge(self, i: Hashable, j: Hashable) -> bool:
        """Whether the edge ``i -> j`` is in the graph (False if either vertex is missing).

        Costs O(min(#children(i), #parents(j))).

        >>> g = Graph.from_edges([(0, 1)])
        >>> g.has_edge(0, 1), g.has_edge(1, 0), g.has_edge(0, 7)
        (True, False, False)
        """
        try:
            ci = self._children[i]
            pj = self._parents[j]
        except (KeyError, TypeError):
            return False
        return (j in ci) if len(ci) <= len(pj) else (i in pj)

    def __len__(self) -> int:
        """The number of vertices.

        >>> len(Graph.from_edges([(0, 1)]))
        2
        """
        return len(self._index)

    def __contains__(self, v: object) -> bool:
        """Whether ``v`` is a vertex (unhashable values are simply not vertices).

        >>> 1 in Graph.from_edges([(0, 1)]), 5 in Graph.from_edges([(0, 1)])
        (True, False)
        """
        try:
            return v in self._index
        except TypeError:
            return False

    def __iter__(self) -> Iterator:
        """Iterate over the vertices in insertion order.

        >>> list(Graph.from_edges([("b", "a")]))
        ['b', 'a']
        """
        return iter(self._index)

    def __repr__(self) -> str:
        """``Graph(n vertices, m edges)``.

        >>> Graph.from_edges([(0, 1), (1, 2)])
        Graph(3 vertices, 2 edges)
        """
        n, m = len(self._index), len(self._edges)
        return (
            f"{type(self).__name__}({n} vert{'ex' if n == 1 else 'ices'}, "
            f"{m} edge{'' if m == 1 else 's'})"
        )

    def _require(self, v: Hashable) -> None:
        if v not in self._index:
            raise MissingVertexError(f"vertex {v!r} is not in the graph")

    def parents(self, j: Hashable) -> list:
        """The vertices ``i`` with an edge ``i -> j``, in insertion order (a new list).

        Raises ``KeyError`` if ``j`` is not a vertex.

        >>> Graph.from_edges([(1, 3), (0, 3)]).parents(3)
        [1, 0]
        """
        self._require(j)
        return list(self._parents[j])

    def children(self, i: Hashable) -> list:
        """The vertices ``j`` with an edge ``i -> j``, in insertion order (a new list).

        Raises ``KeyError`` if ``i`` is not a vertex.

        >>> Graph.from_edges([(0, 2), (0, 1)]).children(0)
        [2, 1]
        """
        self._require(i)
        return list(self._children[i])

    def roots(self) -> list:
        """Vertices without parents (the program's inputs), in insertion order.

        >>> Graph.from_edges([(0, 2), (1, 2)]).roots()
        [0, 1]
        """
        return [v for v, p in self._parents.items() if not p]

    def leaves(self) -> list:
        """Vertices without children (the program's outputs), in insertion order: the book's leaves.

        (Not :attr:`Tensor.is_leaf <autograd_dag.Tensor.is_leaf>`, which keeps
        PyTorch's meaning, a Tensor no operation made: a root of the program.)

        >>> Graph.from_edges([(0, 1), (0, 2)]).leaves()
        [1, 2]
        """
        return [v for v, c in self._children.items() if not c]

    # ------------------------------------------------------------------ paths

    def has_path(self, i: Hashable, j: Hashable) -> bool:
        """Whether there is a path from ``i`` to ``j``: ``i -> j_1 -> ... -> j_m -> j``, m ≥ 0.

        A path has at least one edge (§4.1.2: the sequence j_1..j_m may be
        empty, the edges into j may not), so in a DAG ``has_path(v, v)`` is
        False: a path from a vertex to itself is a cycle. Raises ``KeyError``
        if either vertex is missing.

        >>> g = Graph.from_edges([(0, 1), (1, 2)])
        >>> g.has_path(0, 2), g.has_path(2, 0), g.has_path(1, 1)
        (True, False, False)
        """
        self._require(i)
        self._require(j)
        return j in reachable(self._children[i], self._children.__getitem__)

    def ancestors(self, v: Hashable) -> set:
        """All vertices with a path to ``v``, excluding ``v`` itself.

        Raises ``KeyError`` if ``v`` is missing.

        >>> sorted(Graph.from_edges([(0, 1), (1, 2), (3, 2)]).ancestors(2))
        [0, 1, 3]
        """
        self._require(v)
        # v itself is only reachable through a cycle, which a checked graph never has.
        return reachable(self._parents[v], self._parents.__getitem__).keys() - {v}

    def descendants(self, v: Hashable) -> set:
        """All vertices reachable from ``v``, excluding ``v`` itself.

        Raises ``KeyError`` if ``v`` is missing.

        >>> sorted(Graph.from_edges([(0, 1), (1, 2), (3, 2)]).descendants(0))
        [1, 2]
        """
        self._require(v)
        return reachable(self._children[v], self._children.__getitem__).keys() - {v}

    # ------------------------------------------------------------------ orders and cycles

    def topological_order(self) -> list:
        """A topological order of all vertices: every edge ``i -> j`` has ``i`` before ``j``.

        :func:`topological_sort` from every vertex in insertion order: a
        vertex comes right after its last parent (parents taken in insertion
        order), so the result is deterministic and equals the insertion order
        whenever that order is already topological. O(n + m). Raises
        ``CycleError`` naming a cycle if the graph has one.

        >>> g = Graph.from_edges([(0, 2), (1, 2), (2, 3)], vertices=[3, 1, 0])
        >>> g.topological_order()
        [0, 1, 2, 3]
        """
        if self._in_order:
            return list(self._index)  # what the search returns, without searching
        return topological_sort(self._index, self._parents.__getitem__)

    def find_cycle(self) -> list | None:
        """One directed cycle ``[v0, v1, ..., v0]`` (first vertex repeated), or None.

        The first cycle the search of :meth:`topological_order` meets, so the
        answer is deterministic. A checked graph never has a cycle; this is for
        graphs built with ``from_edges(..., check=False)``.

        >>> Graph.from_edges([(0, 1), (1, 2), (2, 1)], check=False).find_cycle()
        [1, 2, 1]
        >>> Graph.from_edges([(0, 1)]).find_cycle() is None
        True
        """
        try:
            self.topological_order()
        except CycleError as err:
            return err.cycle
        return None

    def is_acyclic(self) -> bool:
        """Whether the graph has no directed cycle (always True unless built with ``check=False``).

        >>> Graph.from_edges([(0, 1)]).is_acyclic()
        True
        >>> Graph.from_edges([(0, 0)], check=False).is_acyclic()
        False
        """
        return self.find_cycle() is None
