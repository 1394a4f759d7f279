"""Nested arguments: flatten tuples, lists and dicts of arrays to a list and back.

The functional transformations accept such structures and return gradients
in the same structure.
"""

from __future__ import annotations

from typing import Any

from .errors import AutogradDagError

_LEAF = "leaf"


def _kind_of(x) -> str | None:
    if isinstance(x, tuple):
        # A named tuple (np.linalg.eigh's EighResult) keeps its class through flatten/unflatten.
        return "namedtuple" if hasattr(x, "_fields") else "tuple"
    if isinstance(x, list):
        return "list"
    if isinstance(x, dict):
        return "dict"
    return None


def flatten(tree: Any) -> tuple[list, Any]:
    """``(leaves, treedef)`` of a nested tuple/list/dict; anything else is a leaf.

    Iterative, so deeply nested structures do not hit the recursion limit.

    Example:
        >>> leaves, td = flatten({"w": 1, "b": (2, 3)})
        >>> leaves, unflatten(td, [10, 20, 30])
        ([1, 2, 3], {'w': 10, 'b': (20, 30)})
    """
    leaves: list = []
    # A treedef is built bottom-up; a stack of (node, child iterator, defs so far).
    kind_of = _kind_of
    k = kind_of(tree)
    if k is None:
        return [tree], _LEAF
    root_keys = _keys_of(tree, k)
    root_children = [tree[key] for key in root_keys] if k == "dict" else list(tree)
    stack = [(k, root_keys, root_children, 0, [])]
    while True:
        kind, keys, children, i, defs = stack[-1]
        if i == len(children):
            stack.pop()
            node_def = (kind, tuple(keys) if isinstance(keys, list) else keys, tuple(defs))
            if not stack:
                return leaves, node_def
            stack[-1][4].append(node_def)
            continue
        stack[-1] = (kind, keys, children, i + 1, defs)
        child = children[i]
        ck = kind_of(child)
        if ck is None:
            leaves.append(child)
            defs.append(_LEAF)
        else:
            ckeys = _keys_of(child, ck)
            cchildren = [child[key] for key in ckeys] if ck == "dict" else list(child)
            stack.append((ck, ckeys, cchildren, 0, []))


def _keys_of(node, kind):
    """A dict's keys, a named tuple's class (to rebuild it), None for a tuple or list."""
    if kind == "dict":
        return list(node.keys())
    return type(node) if kind == "namedtuple" else None


def leaves_like(tree: Any, treedef: Any, what: str, like: str) -> list:
    """The leaves of ``tree`` matched to the structure ``treedef`` of another tree (``like``).

    A tangent or a cotangent goes with its primal or output by position and dict key,
    never by the order of its leaves alone: a dict written in another key order is read by
    key, and a different structure (a missing key, another length, a leaf for a tuple) is
    refused, naming where (before: its leaves were paired in order, silently misassigned).
    Tuples, named tuples and lists stand for each other.

    Example:
        >>> _, td = flatten({"w": 1, "b": 2})
        >>> leaves_like({"b": 20, "w": 10}, td, "tangent", "primal")
        [10, 20]
    """
    leaves: list = []
    # A path is kept as (parent path, label) links and spelled out only for an error:
    # a tuple per node copied its parent's, O(depth²) time and memory for a deep tree.
    stack = [(tree, treedef, None)]
    while stack:
        node, node_def, path = stack.pop()
        kind = _kind_of(node)
        if node_def == _LEAF:
            if kind is not None:
                _mismatch(what, like, path, "an array", f"a {kind}")
            leaves.append(node)
            continue
        def_kind, keys, child_defs = node_def
        if def_kind == "dict":
            if kind != "dict" or set(node) != set(keys):
                got = f"a dict with keys {sorted(map(str, node))}" if kind == "dict" else _described(node, kind)
                _mismatch(what, like, path, f"a dict with keys {sorted(map(str, keys))}", got)
            labels, children = keys, [node[key] for key in keys]
        else:
            if kind not in ("tuple", "namedtuple", "list") or len(node) != len(child_defs):
                _mismatch(what, like, path, f"a {def_kind} of {len(child_defs)}", _described(node, kind))
            labels, children = range(len(node)), list(node)
        stack.extend(reversed([(c, d, (path, label)) for c, d, label in zip(children, child_defs, labels)]))
    return leaves


def _described(node, kind) -> str:
    return "an array" if kind is None else f"a {kind} of {len(node)}"


def _mismatch(what: str, like: str, links, expected: str, got: str) -> None:
    path = _spelled(links)
    where = "at " + "".join(f"[{p!r}]" for p in path) if path else "at the top"
    raise AutogradDagError(f"{what} and the {like} differ in structure {where}: "
                           f"expected {expected}, got {got}")


def leaf_paths(tree: Any) -> list[tuple]:
    """The path (positions and keys) from the root to each leaf, in :func:`flatten` order.

    Example:
        >>> leaf_paths(({"w": 1, "b": (2, 3)}, 4))
        [(0, 'w'), (0, 'b', 0), (0, 'b', 1), (1,)]
    """
    paths: list[tuple] = []
    # (parent path, key) links, spelled out at the leaves only: a tuple per container
    # copied its parent's, O(depth²) for a tree nested deep around a single leaf.
    stack = [(None, tree)]
    while stack:
        links, node = stack.pop()
        kind = _kind_of(node)
        if kind is None:
            paths.append(_spelled(links))
            continue
        items = node.items() if kind == "dict" else enumerate(node)
        stack.extend(reversed([((links, key), child) for key, child in items]))
    return paths


def _spelled(links) -> tuple:
    """The path a chain of (parent, label) links stands for, root first."""
    path = []
    while links is not None:
        links, label = links
        path.append(label)
    path.reverse()
    return tuple(path)


def structure_key(treedef: Any) -> tuple:
    """A flat, hashable key equal for equal treedefs: one ``(kind, keys, arity)`` entry per container, pre-order.

    A treedef is nested as deep as its tree, and hashing or comparing nested tuples
    recurses in C: a jit cache keyed by the treedef itself crashed the interpreter
    (segmentation fault) for an argument nested 100,000 deep.

    Example:
        >>> structure_key(flatten({"w": 1, "b": (2, 3)})[1])
        (('dict', ('w', 'b'), 2), 'leaf', ('tuple', None, 2), 'leaf', 'leaf')
    """
    entries: list = []
    stack = [treedef]
    while stack:
        node_def = stack.pop()
        if node_def == _LEAF:
            entries.append(_LEAF)
            continue
        kind, keys, child_defs = node_def
        entries.append((kind, keys, len(child_defs)))
        stack.extend(reversed(child_defs))
    return tuple(entries)


def unflatten(treedef: Any, leaves) -> Any:
    """Rebuild the structure described by ``treedef`` from ``leaves``."""
    it = iter(leaves)
    if treedef == _LEAF:
        return next(it)
    # Post-order over the treedef with an explicit stack.
    stack = [(treedef, 0, [])]
    while True:
        node_def, i, built = stack[-1]
        kind, keys, child_defs = node_def
        if i == len(child_defs):
            stack.pop()
            if kind == "tuple":
                value = tuple(built)
            elif kind == "namedtuple":
                value = keys(*built)
            elif kind == "list":
                value = list(built)
            else:
                value = dict(zip(keys, built))
            if not stack:
                return value
            stack[-1][2].append(value)
            continue
        stack[-1] = (node_def, i + 1, built)
        cdef = child_defs[i]
        if cdef == _LEAF:
            built.append(next(it))
        else:
            stack.append((cdef, 0, []))


def tree_map(fn, tree: Any) -> Any:
    """Apply ``fn`` to every leaf, keeping the structure."""
    leaves, td = flatten(tree)
    return unflatten(td, [fn(x) for x in leaves])
