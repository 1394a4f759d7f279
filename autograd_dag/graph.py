"""The library's walks over a DAG, written once (book §4.1.2): a topological order and reachability.

Each walks over a callback that gives a vertex's parents (or children), so
the same code orders the Tensors recorded by operations, a program's nodes,
the renderer's scenes and a hand-built :class:`~autograd_dag.dag.Graph`:
:func:`topological_sort` (which names a cycle if it meets one) and
:func:`reachable`. Both are iterative, so graphs with millions of vertices
never hit Python's recursion limit. The bare DAG itself (vertices, edges,
parents, children, roots, leaves, paths, cycles refused) is
:mod:`autograd_dag.dag`; the book's other questions (every topological order,
chains, the bipartite form) are in :mod:`autograd_dag.graph_algorithms`.

>>> parents = {0: [], 1: [0], 2: [0], 3: [1, 2], 4: [3]}
>>> topological_sort([4], parents.__getitem__), sorted(reachable([3], parents.__getitem__))
([0, 1, 2, 3, 4], [0, 1, 2, 3])
"""

from __future__ import annotations

import gc
import os
import threading
from contextlib import contextmanager
from collections.abc import Callable, Iterable
from typing import Any

from autograd_dag.errors import CycleError

__all__ = ["paused_gc", "reachable", "topological_sort"]


def topological_sort(starts: Iterable, parents: Callable[[Any], Iterable], check: bool = True) -> list:
    """Every vertex reachable from ``starts`` through ``parents``, each after all of its parents.

    The library's one topological sort: :meth:`Graph.topological_order`, the
    walk over recorded Tensors (``tracing.topological_nodes``: every sweep,
    ``vmap``, program extraction) and the renderer's layout all call it.
    Depth-first and iterative: the starts are taken in order, each vertex's
    parents in the order ``parents(v)`` gives them, and a vertex comes right
    after its last parent is placed. So the order is deterministic, and a
    ``starts`` listing every vertex in an order that is already topological
    comes back unchanged. Vertices key a dict (Tensors hash by identity).
    O(n + m) time.

    A cycle raises :class:`CycleError` naming it (``check=True``); with
    ``check=False`` the edge that would close it is skipped instead (the
    renderer's collapsed groups may form cycles; recorded Tensors cannot, and
    skip the test).

    >>> parents = {"x": [], "y": ["x"], "z": ["y", "x"], "w": ["z"]}
    >>> topological_sort(["z", "w"], parents.__getitem__)
    ['x', 'y', 'z', 'w']
    """
    order: list = []
    # False while the vertex is on the current path, True once it is placed.
    state: dict = {}
    path: list = []  # from a start up through parents; each vertex reads the next
    pending: list = []  # the unvisited parents of each path vertex below the top one
    for start in starts:
        if start in state:
            continue
        state[start] = False
        path.append(start)
        top = iter(parents(start))  # the top vertex's unvisited parents
        while True:
            for p in top:
                if p not in state:
                    state[p] = False
                    path.append(p)
                    pending.append(top)
                    top = iter(parents(p))
                    break
                if check and state[p] is False:  # p is on the path: the top vertex reads it
                    raise _cycle_error("the graph has a cycle ", [p, *reversed(path[path.index(p) + 1:]), p],
                                       ", so it has no topological order")
            else:
                v = path.pop()
                state[v] = True
                order.append(v)
                if not pending:
                    break
                top = pending.pop()
    return order


def reachable(starts: Iterable, successors: Callable[[Any], Iterable]) -> dict:
    """The vertices reachable from ``starts`` (themselves included), each mapped to the one it was reached from.

    The library's one reachability walk (paths, ancestors, descendants, the
    cycle check of :meth:`Graph.add_edge`, what a traced function depends
    on). Breadth-first and iterative, so following the map back from a
    vertex to a start (which maps to None) gives a shortest path; the map
    lists vertices in the order they were reached.

    >>> children = {0: [1, 2], 1: [3], 2: [3], 3: []}
    >>> reachable([1, 2], children.__getitem__)
    {1: None, 2: None, 3: 1}
    """
    came_from = dict.fromkeys(starts)
    queue = list(came_from)
    for v in queue:
        for c in successors(v):
            if c not in came_from:
                came_from[c] = v
                queue.append(c)
    return came_from


@contextmanager
def paused_gc():
    """Context manager: no automatic cyclic garbage collection inside (``gc.collect()`` still works).

    Building or sweeping a big graph allocates many objects and no reference
    cycles; the collector would only re-scan the growing graph again and
    again (measured: 716 ms -> 270 ms recording a 65,000-node graph).
    """
    # One count of open pauses across threads, under a lock: with a check-then-disable per
    # thread, a thread could read "disabled" while another paused, and nobody re-enabled.
    global _pauses, _was_enabled
    with _pause_lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
        _pauses += 1
        gc.disable()
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()


_pause_lock = threading.Lock()
_pauses, _was_enabled = 0, False


def _after_fork_in_child() -> None:
    global _pause_lock   # forked while another thread held it: the child's copy would stay held
    _pause_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _cycle_error(before: str, cycle: list, after: str = "", keep: int = 8) -> CycleError:
    # A cycle in a big graph can have millions of vertices; the message shows
    # both ends and the full list stays in CycleError.cycle.
    parts = [str(v) for v in cycle] if len(cycle) <= 2 * keep + 1 else (
        [str(v) for v in cycle[:keep]] + [f"... ({len(cycle) - 2 * keep} more) ..."]
        + [str(v) for v in cycle[-keep:]])
    return CycleError(before + " -> ".join(parts) + after, cycle=cycle)
