"""Tests of autograd_dag.dag.Graph: the bare DAG of book §4.1."""

from __future__ import annotations

import inspect
import itertools
import random
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autograd_dag as ad
from autograd_dag.errors import CycleError
from autograd_dag.dag import Graph
from autograd_dag.graph_algorithms import (FUNCTION, VARIABLE, is_chain, subgraph, to_bipartite,
                                           topological_orders)

BOOK_DAG = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)]


# --------------------------------------------------------------------------- references


def reference_closure(vertices, edges):
    """Pairs (i, j) joined by a path of at least one edge (Floyd–Warshall style)."""
    reach = {v: set() for v in vertices}
    for i, j in edges:
        reach[i].add(j)
    for k in vertices:
        for i in vertices:
            if k in reach[i]:
                reach[i] |= reach[k]
    return reach


def reference_min_index_order(vertices, edges):
    """Kahn by brute force: repeatedly take the earliest-inserted ready vertex."""
    remaining = list(vertices)
    parents = {v: {i for i, j in edges if j == v} for v in vertices}
    done, order = set(), []
    while remaining:
        v = next(v for v in remaining if parents[v] <= done)
        remaining.remove(v)
        done.add(v)
        order.append(v)
    return order


def reference_depth_first_order(vertices, edges):
    """Recursive depth-first search over parents: each vertex right after its last parent is placed."""
    parents = {v: list(dict.fromkeys(i for i, j in edges if j == v)) for v in vertices}
    order = []

    def place(v):
        if v not in order:
            for p in parents[v]:
                place(p)
            order.append(v)

    for v in vertices:
        place(v)
    return order


def all_orders_brute_force(vertices, edges):
    return {
        p
        for p in itertools.permutations(vertices)
        if all(p.index(i) < p.index(j) for i, j in edges)
    }


def assert_valid_order(g, order):
    assert sorted(order, key=repr) == sorted(g.vertices, key=repr)
    assert len(order) == len(set(order)) == len(g)
    position = {v: k for k, v in enumerate(order)}
    for i, j in g.edges:
        assert position[i] < position[j], (i, j)


def snapshot(g):
    return (
        g.vertices,
        g.edges,
        {v: g.parents(v) for v in g.vertices},
        {v: g.children(v) for v in g.vertices},
    )


# --------------------------------------------------------------------------- book examples


def test_computation_chain_is_a_chain_with_a_total_order():
    g = Graph.from_edges([(0, 1), (1, 2), (2, 3)])
    assert is_chain(g)
    assert g.topological_order() == [0, 1, 2, 3]
    assert list(topological_orders(g)) == [(0, 1, 2, 3)]
    assert g.roots() == [0] and g.leaves() == [3]
    # total order: any two vertices are linked by a path one way
    for a, b in itertools.combinations(range(4), 2):
        assert g.has_path(a, b) and not g.has_path(b, a)


def test_chain_inserted_backwards_is_still_a_chain():
    g = Graph.from_edges([(2, 3), (1, 2), (0, 1)])
    assert g.vertices == [2, 3, 1, 0]
    assert is_chain(g)
    assert g.topological_order() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "edges, vertices",
    [
        ([(0, 1), (1, 2), (0, 2)], ()),  # shortcut: totally ordered, but 2 reads 0
        ([(0, 1), (0, 2)], ()),  # fork
        ([(0, 2), (1, 2)], ()),  # join: two roots
        ([(0, 1)], (5,)),  # isolated vertex
        ([], (0, 1)),  # two vertices, no edge
    ],
)
def test_non_chains(edges, vertices):
    assert not is_chain(Graph.from_edges(edges, vertices=vertices))


def test_empty_and_single_vertex_graphs_are_chains():
    assert is_chain(Graph())
    assert is_chain(Graph.from_edges([], vertices=["x"]))


def test_cyclic_unchecked_graph_is_not_a_chain():
    # n - 1 edges, one root, every degree <= 1, but 2 <-> 3 is a cycle off the path
    g = Graph.from_edges([(0, 1), (2, 3), (3, 2)], check=False)
    assert not is_chain(g)
    assert not is_chain(Graph.from_edges([(0, 0)], check=False))
    # every vertex has at most one child and the walk from the root would loop forever
    assert not is_chain(Graph.from_edges([(0, 1), (1, 2), (2, 1)], check=False))


def test_book_dag_has_exactly_two_topological_orders():
    g = Graph.from_edges(BOOK_DAG)
    assert set(topological_orders(g)) == {(0, 1, 2, 3, 4), (0, 2, 1, 3, 4)}
    assert list(topological_orders(g)) == [(0, 1, 2, 3, 4), (0, 2, 1, 3, 4)]
    assert g.topological_order() == [0, 1, 2, 3, 4]
    assert not is_chain(g)


def test_book_dag_structure():
    g = Graph.from_edges(BOOK_DAG)
    assert len(g) == 5 and g.num_edges == 5
    assert g.vertices == [0, 1, 2, 3, 4]
    assert g.edges == BOOK_DAG
    assert g.parents(3) == [1, 2]
    assert g.parents(0) == []
    assert g.children(0) == [1, 2]
    assert g.children(4) == []
    assert g.roots() == [0]
    assert g.leaves() == [4]
    assert g.ancestors(3) == {0, 1, 2}
    assert g.ancestors(0) == set()
    assert g.descendants(1) == {3, 4}
    assert g.descendants(4) == set()
    assert g.has_path(0, 4) and g.has_path(2, 4)
    assert not g.has_path(1, 2) and not g.has_path(2, 1)
    assert not g.has_path(4, 0)
    assert g.has_edge(1, 3) and not g.has_edge(0, 3) and not g.has_edge(3, 1)
    assert repr(g) == "Graph(5 vertices, 5 edges)"


def test_a_path_has_at_least_one_edge():
    # §4.1.2: a path from i to j is i -> j_1 -> ... -> j_m -> j; from v to v that is a cycle.
    g = Graph.from_edges([(0, 1)], vertices=["lonely"])
    assert not g.has_path(0, 0) and not g.has_path(1, 1)
    assert not g.has_path("lonely", "lonely")
    cyclic = Graph.from_edges([(0, 1), (1, 0)], check=False)
    assert cyclic.has_path(0, 0)


def test_parents_and_children_keep_insertion_order():
    g = Graph()
    g.add_edge("z", "out")
    g.add_edge("a", "out")
    g.add_edge("m", "out")
    g.add_edge("z", "b")
    assert g.parents("out") == ["z", "a", "m"]
    assert g.children("z") == ["out", "b"]
    assert g.roots() == ["z", "a", "m"]
    assert g.leaves() == ["out", "b"]


def test_returned_lists_are_copies():
    g = Graph.from_edges([(0, 1)])
    g.parents(1).append(99)
    g.children(0).clear()
    g.vertices.append(7)
    g.edges.clear()
    assert g.parents(1) == [0] and g.children(0) == [1]
    assert g.vertices == [0, 1] and g.edges == [(0, 1)]


def test_missing_vertex_raises_key_error_naming_it():
    g = Graph.from_edges([(0, 1)])
    for call in (g.parents, g.children, g.ancestors, g.descendants):
        with pytest.raises(KeyError, match="'ghost' is not in the graph"):
            call("ghost")
    with pytest.raises(KeyError, match="ghost"):
        g.has_path(0, "ghost")
    with pytest.raises(KeyError, match="ghost"):
        subgraph(g, [0, "ghost"])


def test_add_vertex_is_idempotent_and_contains():
    g = Graph()
    g.add_vertex("a")
    g.add_vertex("b")
    g.add_vertex("a")
    assert g.vertices == ["a", "b"]
    assert len(g) == 2
    assert "a" in g and "c" not in g
    assert [1, 2] not in g  # unhashable: simply not a vertex
    assert list(g) == ["a", "b"]
    assert repr(Graph.from_edges([], vertices=[1])) == "Graph(1 vertex, 0 edges)"


def test_duplicate_edges_are_ignored():
    g = Graph()
    g.add_edge(0, 1)
    g.add_edge(0, 1)
    g.add_edge(1, 2)
    g.add_edge(0, 1)
    assert g.edges == [(0, 1), (1, 2)]
    assert g.num_edges == 2
    assert g.parents(1) == [0] and g.children(0) == [1]
    h = Graph.from_edges([(0, 1), (0, 1), [1, 2], (1, 2)], check=False)
    assert h.edges == [(0, 1), (1, 2)]
    assert h.parents(2) == [1]


def test_from_edges_adds_given_vertices_first():
    g = Graph.from_edges([(1, 2)], vertices=[2, "iso"])
    assert g.vertices == [2, "iso", 1]
    assert g.roots() == ["iso", 1]
    assert g.topological_order() == [1, 2, "iso"]  # 2 first, right after its parent


# --------------------------------------------------------------------------- cycles


def test_closing_edge_raises_cycle_error_naming_the_cycle():
    g = Graph.from_edges([("a", "b"), ("b", "c")])
    before = snapshot(g)
    with pytest.raises(CycleError) as info:
        g.add_edge("c", "a")
    assert str(info.value) == "adding edge c -> a would close the cycle a -> b -> c -> a"
    assert info.value.cycle == ["a", "b", "c", "a"]
    assert snapshot(g) == before
    assert g.is_acyclic()


def test_cycle_error_reports_a_shortest_cycle():
    # two paths from a to d; BFS must name the short one
    g = Graph.from_edges([("a", "x"), ("x", "y"), ("y", "d"), ("a", "d")])
    with pytest.raises(CycleError) as info:
        g.add_edge("d", "a")
    assert info.value.cycle == ["a", "d", "a"]


def test_self_loop_is_a_cycle_and_adds_nothing():
    g = Graph.from_edges([("a", "b")])
    before = snapshot(g)
    with pytest.raises(CycleError) as info:
        g.add_edge("a", "a")
    assert str(info.value) == "adding edge a -> a would close the cycle a -> a"
    assert info.value.cycle == ["a", "a"]
    with pytest.raises(CycleError):
        g.add_edge("new", "new")
    assert "new" not in g
    assert snapshot(g) == before


def test_cycle_error_is_a_library_and_value_error():
    g = Graph.from_edges([(0, 1)])
    with pytest.raises(ValueError):
        g.add_edge(1, 0)


def test_from_edges_checked_rejects_a_cycle():
    with pytest.raises(CycleError) as info:
        Graph.from_edges([(1, 2), (2, 3), (3, 1)])
    assert info.value.cycle == [1, 2, 3, 1]


def test_unchecked_cycle_is_reported_by_topological_order():
    g = Graph.from_edges([(0, 1), (1, 2), (2, 3), (3, 1), (3, 4)], check=False)
    assert len(g) == 5 and g.num_edges == 5
    assert not g.is_acyclic()
    assert g.find_cycle() == [1, 2, 3, 1]
    with pytest.raises(CycleError) as info:
        g.topological_order()
    assert info.value.cycle == [1, 2, 3, 1]
    assert "1 -> 2 -> 3 -> 1" in str(info.value)
    with pytest.raises(CycleError):
        list(topological_orders(g))


def test_ancestors_and_descendants_exclude_the_vertex_even_on_a_cycle():
    g = Graph.from_edges([(0, 1), (1, 2), (2, 1)], check=False)
    assert g.descendants(1) == {2}
    assert g.ancestors(1) == {0, 2}
    assert g.descendants(0) == {1, 2}


def test_unchecked_self_loop():
    g = Graph.from_edges([(0, 1), (1, 1)], check=False)
    assert g.find_cycle() == [1, 1]
    with pytest.raises(CycleError, match="1 -> 1"):
        g.topological_order()


def test_unchecked_cycle_against_insertion_order_is_found():
    # every edge but one goes "forward"; the cycle must still be caught
    g = Graph.from_edges([(0, 1), (1, 2), (2, 0)], vertices=[0, 1, 2], check=False)
    assert g.find_cycle() == [0, 1, 2, 0]
    assert not g.is_acyclic()


def test_acyclic_graph_has_no_cycle():
    g = Graph.from_edges(BOOK_DAG, vertices=[4, 3, 2, 1, 0], check=False)
    assert g.find_cycle() is None
    assert g.is_acyclic()


def test_long_cycle_message_is_truncated_but_cycle_is_complete():
    n = 1000
    g = Graph.from_edges([(k, (k + 1) % n) for k in range(n)], check=False)
    with pytest.raises(CycleError) as info:
        g.topological_order()
    assert info.value.cycle == list(range(n)) + [0]
    message = str(info.value)
    assert len(message) < 200
    assert "0 -> 1 -> 2" in message and "(985 more)" in message and "999 -> 0" in message


# --------------------------------------------------------------------------- determinism


def test_ties_are_broken_by_insertion_order():
    g = Graph()
    for v in ["c", "b", "a"]:
        g.add_vertex(v)
    assert g.topological_order() == ["c", "b", "a"]

    diamond = Graph.from_edges([(0, 2), (0, 1), (2, 3), (1, 3)])
    assert diamond.vertices == [0, 2, 1, 3]
    assert diamond.topological_order() == [0, 2, 1, 3]

    # 3 and 1 are ready together after 0; 3 was inserted first
    g = Graph.from_edges([(0, 1), (0, 3), (1, 2)], vertices=[3, 2, 0])
    assert g.topological_order() == [0, 3, 1, 2]


def test_topological_order_is_repeatable():
    rng = random.Random(7)
    edges = [(a, b) for a in range(30) for b in range(a + 1, 30) if rng.random() < 0.2]
    rng.shuffle(edges)
    orders = {tuple(Graph.from_edges(edges).topological_order()) for _ in range(5)}
    assert len(orders) == 1


def test_topological_orders_limit_and_empty_graph():
    g = Graph.from_edges([], vertices="abc")
    assert len(list(topological_orders(g))) == 6
    assert list(topological_orders(g, limit=2)) == [("a", "b", "c"), ("a", "c", "b")]
    assert list(topological_orders(g, limit=0)) == []
    assert list(topological_orders(Graph())) == [()]
    assert Graph().topological_order() == []


# --------------------------------------------------------------------------- other forms


def test_bipartite_form_of_the_book_dag():
    g = Graph.from_edges(BOOK_DAG)
    b = to_bipartite(g)
    assert b.vertices == [
        ("s", 0),
        ("f", 1), ("s", 1),
        ("f", 2), ("s", 2),
        ("f", 3), ("s", 3),
        ("f", 4), ("s", 4),
    ]  # fmt: skip
    assert len(b) == 2 * 5 - 1
    assert b.num_edges == (5 - 1) + 5
    assert b.parents(("f", 3)) == [("s", 1), ("s", 2)]
    assert b.children(("f", 3)) == [("s", 3)]
    assert b.parents(("s", 3)) == [("f", 3)]
    assert b.children(("s", 0)) == [("f", 1), ("f", 2)]
    assert b.roots() == [("s", 0)]
    assert b.leaves() == [("s", 4)]
    for i, j in b.edges:
        assert i[0] != j[0]  # bipartite: edges only join different kinds
    assert [k for kind, k in b.topological_order() if kind == VARIABLE] == [0, 1, 2, 3, 4]
    assert FUNCTION == "f" and VARIABLE == "s"


def test_bipartite_of_several_roots_and_unchecked_cycle():
    g = Graph.from_edges([("x", "add"), ("y", "add")], vertices=["iso"])
    b = to_bipartite(g)
    assert b.roots() == [("s", "iso"), ("s", "x"), ("s", "y")]
    assert len(b) == 2 * 4 - 3 and b.num_edges == 1 + 2
    cyclic = to_bipartite(Graph.from_edges([(0, 1), (1, 0)], check=False))
    assert not cyclic.is_acyclic()
    assert cyclic.find_cycle() == [("f", 0), ("s", 0), ("f", 1), ("s", 1), ("f", 0)]


def test_subgraph_is_induced_and_keeps_order():
    g = Graph.from_edges(BOOK_DAG)
    h = subgraph(g, [4, 3, 1, 0])
    assert h.vertices == [0, 1, 3, 4]
    assert h.edges == [(0, 1), (1, 3), (3, 4)]
    assert is_chain(h)
    assert g.num_edges == 5  # untouched


def test_copy_is_independent():
    g = Graph.from_edges(BOOK_DAG)
    h = g.copy()
    h.add_edge(4, 5)
    h.add_edge(0, 4)
    assert g.vertices == [0, 1, 2, 3, 4] and g.edges == BOOK_DAG
    assert g.children(4) == [] and g.parents(4) == [3]
    assert h.children(4) == [5] and h.parents(4) == [3, 0]
    with pytest.raises(CycleError):
        h.add_edge(5, 0)


# --------------------------------------------------------------------------- properties


@st.composite
def labelled_dags(draw, max_vertices=12):
    """(vertices in insertion order, edges in insertion order) of a random DAG.

    Vertices get random labels; edges go from a lower to a higher label, so
    the graph is acyclic whatever order things are inserted in.
    """
    n = draw(st.integers(0, max_vertices))
    labels = draw(st.permutations(range(n)))
    vertex = st.integers(0, max(n - 1, 0))
    pairs = draw(st.lists(st.tuples(vertex, vertex), max_size=3 * n)) if n else []
    edges = [(a, b) for a, b in pairs if labels[a] < labels[b]]
    edges = draw(st.permutations(edges))
    vertices = draw(st.permutations(range(n)))
    isolated_first = draw(st.booleans())
    return (list(vertices) if isolated_first else []), edges, n


@settings(max_examples=200, deadline=None)
@given(labelled_dags())
def test_random_dag_orders_respect_every_edge(dag):
    vertices, edges, n = dag
    g = Graph()
    for v in vertices:
        g.add_vertex(v)
    for i, j in edges:
        g.add_edge(i, j)  # never raises: labels increase along edges
    unchecked = Graph.from_edges(edges, vertices=vertices, check=False)
    assert unchecked.vertices == g.vertices and unchecked.edges == g.edges

    order = g.topological_order()
    assert_valid_order(g, order)
    assert order == reference_depth_first_order(g.vertices, g.edges)
    assert unchecked.topological_order() == order
    assert g.is_acyclic() and g.find_cycle() is None
    assert g.num_edges == len(set(edges))

    closure = reference_closure(g.vertices, g.edges)
    for v in g.vertices:
        assert g.descendants(v) == closure[v]
        assert g.ancestors(v) == {u for u in g.vertices if v in closure[u]}
        assert g.parents(v) == list(dict.fromkeys(i for i, j in edges if j == v))
        assert g.children(v) == list(dict.fromkeys(j for i, j in edges if i == v))
    for a in g.vertices:
        for b in g.vertices:
            assert g.has_path(a, b) == (b in closure[a])
    assert g.roots() == [v for v in g.vertices if not g.parents(v)]
    assert g.leaves() == [v for v in g.vertices if not g.children(v)]


@settings(max_examples=150, deadline=None)
@given(labelled_dags(max_vertices=6))
def test_topological_orders_are_exactly_all_valid_orders(dag):
    vertices, edges, n = dag
    g = Graph.from_edges(edges, vertices=vertices)
    orders = list(topological_orders(g))
    assert len(orders) == len(set(orders))
    assert set(orders) == all_orders_brute_force(g.vertices, g.edges)
    assert orders[0] == tuple(reference_min_index_order(g.vertices, g.edges))
    assert tuple(g.topological_order()) in orders
    index = {v: k for k, v in enumerate(g.vertices)}
    keys = [[index[v] for v in o] for o in orders]
    assert keys == sorted(keys)
    assert list(topological_orders(g, limit=1)) == orders[:1]


@settings(max_examples=150, deadline=None)
@given(labelled_dags(max_vertices=6))
def test_is_chain_matches_definition(dag):
    vertices, edges, n = dag
    g = Graph.from_edges(edges, vertices=vertices)
    edge_set = set(g.edges)
    expected = any(
        edge_set == set(zip(p, p[1:])) for p in itertools.permutations(g.vertices)
    )
    assert is_chain(g) == expected


@settings(max_examples=200, deadline=None)
@given(labelled_dags(), st.data())
def test_closing_a_cycle_fails_cleanly(dag, data):
    vertices, edges, n = dag
    g = Graph.from_edges(edges, vertices=vertices)
    linked = [(a, b) for a in g.vertices for b in g.descendants(a)]
    if not linked:
        return
    a, b = data.draw(st.sampled_from(linked))
    before = snapshot(g)
    with pytest.raises(CycleError) as info:
        g.add_edge(b, a)
    cycle = info.value.cycle
    assert cycle[0] == cycle[-1] == a and cycle[-2] == b
    assert len(set(cycle[:-1])) == len(cycle) - 1
    for i, j in zip(cycle[:-2], cycle[1:-1]):
        assert g.has_edge(i, j)
    assert f"adding edge {b} -> {a} would close the cycle" in str(info.value)
    assert snapshot(g) == before


@settings(max_examples=200, deadline=None)
@given(labelled_dags())
def test_bipartite_counts(dag):
    vertices, edges, n = dag
    g = Graph.from_edges(edges, vertices=vertices)
    n, r, m = len(g), len(g.roots()), g.num_edges
    b = to_bipartite(g)
    assert len(b) == 2 * n - r
    assert b.num_edges == (n - r) + m
    assert b.is_acyclic()
    for v in b.vertices:
        kind, k = v
        if kind == FUNCTION:
            assert b.children(v) == [(VARIABLE, k)]
            assert b.parents(v) == [(VARIABLE, i) for i in g.parents(k)]
        else:
            assert b.children(v) == [(FUNCTION, c) for c in g.children(k)]
    assert_valid_order(b, b.topological_order())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=20))
def test_unchecked_graphs_cycle_detection_agrees(edges):
    g = Graph.from_edges(edges, check=False)
    closure = reference_closure(g.vertices, g.edges)
    acyclic = not any(v in closure[v] for v in g.vertices)
    assert g.is_acyclic() == acyclic
    cycle = g.find_cycle()
    assert (cycle is None) == acyclic
    if acyclic:
        assert_valid_order(g, g.topological_order())
    else:
        assert cycle[0] == cycle[-1]
        assert len(set(cycle[:-1])) == len(cycle) - 1
        for i, j in zip(cycle, cycle[1:]):
            assert g.has_edge(i, j)
        with pytest.raises(CycleError) as info:
            g.topological_order()
        assert info.value.cycle == cycle


# --------------------------------------------------------------------------- no recursion


def test_every_walk_works_with_a_tiny_recursion_limit():
    n = 3000
    # inserted backwards so that no insertion-order shortcut applies
    chain = Graph.from_edges([(k, k + 1) for k in reversed(range(n))], check=False)
    cyclic = Graph.from_edges([(k, (k + 1) % n) for k in reversed(range(n))], check=False)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 40)
    try:
        order = chain.topological_order()
        assert chain.is_acyclic() and chain.find_cycle() is None
        assert is_chain(chain)
        assert len(chain.descendants(0)) == n
        assert len(chain.ancestors(n)) == n
        assert chain.has_path(0, n)
        assert len(next(topological_orders(chain))) == n + 1
        with pytest.raises(CycleError):
            chain.add_edge(n, 0)
        assert len(cyclic.find_cycle()) == n + 1
        assert not cyclic.is_acyclic()
        assert len(to_bipartite(chain)) == 2 * (n + 1) - 1
    finally:
        sys.setrecursionlimit(old)
    assert order == list(range(n + 1))


# --------------------------------------------------------------------------- large graphs
# 10**6 vertices: built with check=False and sorted in a few seconds, with no
# RecursionError; marked slow so a quick run can skip them (-m "not slow").
# Speed itself is measured in benchmarks/bench_toposort.py, not asserted here.

N_LARGE = 10**6


@pytest.mark.slow
def test_large_chain_sorts():
    g = Graph.from_edges(((k, k + 1) for k in range(N_LARGE - 1)), check=False)
    assert len(g) == N_LARGE and g.num_edges == N_LARGE - 1
    order = g.topological_order()
    assert order[:3] == [0, 1, 2] and order[-1] == N_LARGE - 1 and len(order) == N_LARGE
    assert is_chain(g)
    assert len(g.descendants(0)) == N_LARGE - 1


@pytest.mark.slow
def test_large_chain_inserted_backwards_sorts():
    # a 10**6-deep depth-first search
    g = Graph.from_edges(((k, k + 1) for k in reversed(range(N_LARGE - 1))), check=False)
    assert g.topological_order() == list(range(N_LARGE))
    assert g.find_cycle() is None


def test_large_cycle_is_named():
    n = N_LARGE // 10
    g = Graph.from_edges(((k, (k + 1) % n) for k in range(n)), check=False)
    with pytest.raises(CycleError) as info:
        g.topological_order()
    assert info.value.cycle == list(range(n)) + [0]


def random_dag_edges(n, seed):
    """About two random earlier parents per vertex, as numpy arrays (parent, child)."""
    rng = np.random.default_rng(seed)
    child = np.repeat(np.arange(1, n), 2)
    parent = (rng.random(child.size) * child).astype(np.int64)
    return parent, child


def assert_sorted_with_numpy(order, parent, child, n):
    order = np.asarray(order)
    assert order.size == n
    position = np.full(n, -1)
    position[order] = np.arange(n)
    assert (position >= 0).all()  # every vertex exactly once
    assert (position[parent] < position[child]).all()


@pytest.mark.slow
def test_large_random_dag_sorts():
    parent, child = random_dag_edges(N_LARGE, seed=0)
    g = Graph.from_edges(zip(parent.tolist(), child.tolist()), check=False)
    assert len(g) == N_LARGE
    assert_sorted_with_numpy(g.topological_order(), parent, child, N_LARGE)


def test_large_random_dag_with_shuffled_insertion_sorts():
    n = N_LARGE // 10
    parent, child = random_dag_edges(n, seed=1)
    vertices = np.random.default_rng(2).permutation(n).tolist()
    g = Graph.from_edges(zip(parent.tolist(), child.tolist()), vertices=vertices, check=False)
    assert g.vertices == vertices
    order = g.topological_order()
    assert order != list(range(n))  # really searched (no insertion-order shortcut)
    assert_sorted_with_numpy(order, parent, child, n)


@pytest.mark.parametrize("check", [True, False])
@pytest.mark.parametrize("edges, shown", [
    ([("a", "b"), ("a",)], r"edge 1 .*\('a',\)"),
    ([("a", "b", "c")], r"edge 0 .*\('a', 'b', 'c'\)"),
    (["ab"], r"edge 0 .*'ab'"),  # a two-letter string unpacked silently into the edge a -> b
    ([(["x"], "y")], r"edge 0 .*unhashable"),
])
def test_malformed_edges_are_named(edges, shown, check):
    # They raised bare "not enough values to unpack" / "unhashable type" errors, naming no edge.
    with pytest.raises(ad.GraphError, match=shown):
        Graph.from_edges(edges, check=check)


def test_a_missing_vertex_is_the_library_error_and_still_a_key_error():
    g = Graph.from_edges([("a", "b")])
    with pytest.raises(ad.GraphError) as info:
        g.parents("ghost")
    assert isinstance(info.value, KeyError) and str(info.value) == "vertex 'ghost' is not in the graph"


def test_checked_from_edges_of_a_wide_dag_is_one_search_not_one_per_edge(monkeypatch):
    # Every edge into a vertex with children ran its own cycle search: a fan-in/fan-out
    # DAG (s -> a_k -> h -> b_k) walked all the b's once per a -> h edge, O(V·E): 17 s
    # for n = 6,000. Counted in children-list reads, not timed.
    import autograd_dag.dag as graph_module
    n = 2000
    edges = ([("s", ("a", k)) for k in range(n)] + [("h", ("b", k)) for k in range(n)]
             + [(("a", k), "h") for k in range(n)])
    visits = [0]
    walk = graph_module.reachable

    def counted(starts, successors):
        def counting(v):
            visits[0] += 1
            return successors(v)
        return walk(starts, counting)

    monkeypatch.setattr(graph_module, "reachable", counted)
    g = Graph.from_edges(edges)
    assert g.num_edges == 3 * n and len(g) == 2 * n + 2
    assert visits[0] <= 10 * len(edges)
    # A cycle is still refused by the first edge that closes it, naming the cycle.
    # b_3 -> s closes nothing when it comes (no a -> h yet); a_0 -> h is the first that does.
    closing = edges[: n + 5] + [(("b", 3), "s")] + edges[n + 5:]
    with pytest.raises(CycleError) as info:
        Graph.from_edges(closing)
    assert info.value.cycle == ["h", ("b", 3), "s", ("a", 0), "h"]
    assert str(info.value) == "adding edge ('a', 0) -> h would close the cycle h -> ('b', 3) -> s -> ('a', 0) -> h"


def test_first_topological_order_of_a_wide_dag_in_linear_memory():
    # Each depth kept its own copy of the ready list: the first order of a fan-in/fan-out
    # DAG held O(n·width) entries at once (108 s for 90,000 vertices). Measured in memory.
    import tracemalloc
    n = 2000
    g = Graph.from_edges([("s", f"a{k}") for k in range(n)] + [("h", f"b{k}") for k in range(n)]
                         + [(f"a{k}", "h") for k in range(n)], check=False)
    tracemalloc.start()
    try:
        first = next(topological_orders(g))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert first == ("s", *(f"a{k}" for k in range(n)), "h", *(f"b{k}" for k in range(n)))
    assert peak < 4 * 2 ** 20


def test_topological_orders_are_every_valid_permutation_in_lexicographic_order():
    rng = random.Random(3)
    for _ in range(60):
        n = rng.randint(1, 6)
        edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.35]
        rng.shuffle(edges)
        g = Graph.from_edges(edges, vertices=rng.sample(range(n), n))
        position = {v: k for k, v in enumerate(g.vertices)}
        valid = [p for p in itertools.permutations(g.vertices)
                 if all(p.index(i) < p.index(j) for i, j in edges)]
        valid.sort(key=lambda p: [position[v] for v in p])
        assert list(topological_orders(g)) == valid
        assert list(topological_orders(g, limit=2)) == valid[:2]


def test_leaves_are_the_books_vertices_without_children_on_graph_and_program():
    # Seed 001 §4.1.2: "vertices without parents are called roots and vertices without children are
    # called leaves". One name for it (the former `sinks` is gone); Tensor.is_leaf keeps PyTorch's
    # meaning (made by no operation), which is a root of the program, not a leaf.
    g = Graph.from_edges([(0, 1), (0, 2), (1, 3)])
    assert g.leaves() == [2, 3] and g.roots() == [0]
    assert not hasattr(g, "sinks")
    x = ad.Tensor(np.ones(2), requires_grad=True)
    y = ad.tanh(x)
    z = ad.sum(y * 2.0)
    prog = ad.Program.from_outputs((x,), (z, ad.exp(x)))
    assert sorted(prog.leaves()) == sorted(k for k in range(len(prog)) if not prog.children(k))
    assert len(prog.leaves()) == 2 and not hasattr(prog, "sinks")
    assert x.is_leaf and not z.is_leaf and prog.roots()[0] == 0  # the input x (then the constant 2)
