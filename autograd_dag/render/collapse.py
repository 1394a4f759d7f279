"""Readability passes over a program before it is drawn.

* Scalar constants are *inlined*: shown in their consumers' labels
  (``multiply(·, 2)``) instead of as separate nodes.
* ``depth=k``: name scopes nested deeper than ``k`` levels are *collapsed*,
  one node per scope at level ``k + 1``, showing its input and output shapes.
  Parameters and constants used only inside a collapsed scope go with it.
* Repeated identical sibling scopes (``layer0``, ``layer1``, ... with the same
  ops, shapes and wiring) are *folded* into one node, ``layer × N``, unless
  folding would draw a cycle.

The result is a :class:`Grouping`: which program nodes are hidden, and which
belong to which group. The views turn it into Graphviz nodes.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from ..program import NodeKind, Program

_TRAILING_INDEX = re.compile(r"[\s_.\-]*\d+$")


class Group:
    """A collapsed name scope (``count == 1``) or ``count`` folded sibling scopes.

    ``path`` is the scope tuple (``("encoder", "layer0")``), ``members`` the
    program node indices inside, ascending; the group is drawn in the cluster
    of ``path[:-1]``. ``chunk``: a contiguous run of the topological order the
    budget cut (titled ``ops %120–%239``), not a scope.
    """

    __slots__ = ("path", "members", "count", "title", "last_name", "chunk")

    def __init__(self, path: tuple, members: list[int], count: int = 1, title: str | None = None,
                 chunk: bool = False):
        self.path = path
        self.members = members
        self.count = count
        self.chunk = chunk
        self.title = title if title is not None else path[-1][0]
        self.last_name = path[-1][0]  # of the last scope folded into it (its own when count == 1)

    @property
    def parent_scope(self) -> tuple:
        return self.path[:-1]

    def __repr__(self) -> str:
        return f"<Group {self.title!r}: {len(self.members)} nodes>"


class Grouping:
    """Which program nodes are drawn, inlined, or inside a group.

    ``inlined``: scalar constants shown in their consumers' labels.
    ``owner[k]``: the index in ``groups`` of node k's group, or ``None``.
    ``scopes[k]``: node k's scope instance path (see :func:`scope_instances`).
    """

    def __init__(self, program: Program, inlined: frozenset, owner: list, groups: list[Group],
                 depth: int | None, scopes: list[tuple], opened: set | None = None):
        self.program = program
        self.scopes = scopes
        self.inlined = inlined
        self.owner = owner
        self.groups = groups
        self.depth = depth
        # Scope instance paths drawn open (as clusters) when the collapse depth is chosen per
        # branch (see render.budget); every other scope is collapsed. None: ``depth`` decides.
        self.opened = opened
        # In the bipartite view, a group with more outputs than this draws one variable node for
        # all of them (a partition of an unscoped program can have dozens); None: one per output.
        self.merge_outputs_above: int | None = None

    def cluster_of(self, k: int) -> tuple:
        """The cluster path node k is drawn in: its scope, cut where the first collapsed scope begins."""
        scope = self.scopes[k]
        if self.opened is not None:
            i = 0
            while i < len(scope) and scope[:i + 1] in self.opened:
                i += 1
            return scope[:i]
        return scope if self.depth is None else scope[:self.depth]

    def output_variables(self, gi: int) -> int:
        """How many variable nodes the bipartite view draws for group ``gi``'s outputs."""
        n = len(self.group_outputs(gi))
        limit = self.merge_outputs_above
        return 1 if limit is not None and n > limit else n

    def drawn(self, k: int) -> bool:
        """Whether node k is drawn as its own node (not inlined, not in a group)."""
        return k not in self.inlined and self.owner[k] is None

    def group_outputs(self, gi: int) -> list[int]:
        """Members of group ``gi`` used outside it (or program outputs), ascending."""
        program, owner = self.program, self.owner
        outputs = set(program.outputs)
        return [k for k in self.groups[gi].members
                if k in outputs or any(owner[c] != gi for c in program.children(k))]

    def group_inputs(self, gi: int) -> list[int]:
        """Drawn or grouped nodes outside group ``gi`` that its members use, ascending."""
        program, owner = self.program, self.owner
        found = {p for k in self.groups[gi].members for p in program.nodes[k].parents
                 if owner[p] != gi and p not in self.inlined}
        return sorted(found)

    def count_nodes(self, view: str) -> int:
        """How many Graphviz nodes ``view`` will draw (before long-edge references)."""
        program = self.program
        if view == "dag":
            return sum(1 for k in range(len(program.nodes)) if self.drawn(k)) + len(self.groups)
        n = sum(1 if not program.nodes[k].parents else 2
                for k in range(len(program.nodes)) if self.drawn(k))
        return n + sum(1 + self.output_variables(gi) for gi in range(len(self.groups)))


def inlinable_constants(program: Program) -> frozenset:
    """Scalar constants that are not outputs: drawn inside their consumers' labels."""
    outputs = set(program.outputs)
    return frozenset(n.index for n in program.nodes
                     if n.op is NodeKind.CONSTANT and n.value is not None and np.size(n.value) == 1
                     and n.index not in outputs and program.children(n.index))


def scope_instances(program: Program, names: list[tuple] | None = None) -> list[tuple]:
    """Each node's scope as a path of *instances* ``((name, first_node), ...)``.

    A scope entered several times (a module called three times opens
    ``name_scope("activation")`` three times) gives separate instances: at
    each level, the nodes sharing a scope are split into the weakly connected
    pieces that the edges inside that scope form. Each piece is named after its
    scope and numbered by its first node, so the result is deterministic.
    ``names[k]`` replaces node k's scope names when given.
    """
    nodes = program.nodes
    if names is None:
        names = [n.scope for n in nodes]
    paths: list[tuple] = [() for _ in nodes]
    for level in range(1, max((len(s) for s in names), default=0) + 1):
        parent: dict = {}

        def find(k):
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k

        key = {}
        for node in nodes:
            if len(names[node.index]) >= level:
                key[node.index] = (paths[node.index], names[node.index][level - 1])
                parent[node.index] = node.index
        for node in nodes:
            j = node.index
            if j not in key:
                continue
            for p in node.parents:
                if p in key and key[p] == key[j]:
                    a, b = find(p), find(j)
                    if a != b:
                        parent[max(a, b)] = min(a, b)
        for k in key:
            paths[k] = paths[k] + ((names[k][level - 1], find(k)),)
    return paths


def max_scope_depth(program: Program) -> int:
    """The deepest name-scope nesting in ``program`` (0 when no scope is used)."""
    return max((len(n.scope) for n in program.nodes), default=0)


def group_nodes(program: Program, depth: int | None = None, *, fold: bool = True,
                inline_constants: bool = True, opened: set | None = None,
                scopes: list[tuple] | None = None, fold_across: bool = False) -> Grouping:
    """Inline scalar constants, collapse scopes deeper than ``depth`` and fold repeats.

    Takes a :class:`Program`; returns a :class:`Grouping`. ``depth=None``
    collapses nothing; ``depth=0`` collapses every top-level scope. ``opened``
    (a set of scope instance paths, see :func:`scope_instances`) chooses per
    branch instead: a scope is drawn open when it and every scope around it
    are in ``opened``, else collapsed. ``scopes`` passes the paths already
    computed (with parameters adopted into their layer's scope) to save a pass.
    ``fold_across``: identical siblings fold even when other siblings lie between them.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> def f(x):
        ...     for i in range(3):
        ...         with ad.name_scope(f"layer{i}"):
        ...             x = ad.tanh(x * 2.0)
        ...     return x
        >>> g = group_nodes(ad.trace(f, np.ones(2)), depth=0)
        >>> [grp.title for grp in g.groups]
        ['layer × 3']
    """
    nodes = program.nodes
    inlined = inlinable_constants(program) if inline_constants else frozenset()
    owner: list[int | None] = [None] * len(nodes)
    groups: list[Group] = []
    if scopes is None:
        scopes = adopted_scopes(program)
    if opened is not None:
        depth = None
    if depth is not None or opened is not None:
        if depth is not None and depth < 0:
            depth = 0
        by_path: dict[tuple, int] = {}
        for node in nodes:
            if node.index in inlined or node.op is NodeKind.INPUT:
                continue
            if opened is None:
                if len(node.scope) <= depth:
                    continue
                cut = depth + 1
            else:
                if not node.parents:
                    continue  # parameters and constants go with the scope using them (_absorb_roots)
                scope, cut = scopes[node.index], 1
                while cut <= len(scope) and scope[:cut] in opened:
                    cut += 1
                if cut > len(scope):
                    continue
            path = scopes[node.index][:cut]
            gi = by_path.get(path)
            if gi is None:
                gi = by_path[path] = len(groups)
                groups.append(Group(path, []))
            groups[gi].members.append(node.index)
            owner[node.index] = gi
        _absorb_roots(program, inlined, owner, groups)
        if fold and len(groups) > 1:
            groups = _fold(program, inlined, owner, groups, fold_across)
    return Grouping(program, inlined, owner, groups, depth, scopes, opened)


def adopted_scopes(program: Program, names: list[tuple] | None = None) -> list[tuple]:
    """:func:`scope_instances` (of ``names``), with each parameter or constant used by one scope instance
    moved into it."""
    scopes = scope_instances(program, names)
    _adopt_roots(program, scopes)
    return scopes


def _adopt_roots(program, scopes: list[tuple]) -> None:
    # A layer's parameters are created outside its name scope (at construction)
    # but belong to it: one used by a single scope instance is drawn inside
    # that layer's cluster, as _absorb_roots puts it inside a collapsed layer.
    outputs = set(program.outputs)
    for node in program.nodes:
        k = node.index
        if node.parents or node.op is NodeKind.INPUT or scopes[k] or k in outputs:
            continue
        users = {scopes[c] for c in program.children(k)}
        if len(users) == 1:
            scopes[k] = users.pop()


def _absorb_roots(program, inlined, owner, groups) -> None:
    # A parameter or constant used only inside one collapsed scope is part of
    # that layer (its weights); drawing it outside would clutter the picture.
    outputs = set(program.outputs)
    for node in program.nodes:
        k = node.index
        if node.parents or node.op is NodeKind.INPUT or k in inlined or owner[k] is not None or k in outputs:
            continue
        owners = {owner[c] for c in program.children(k)}
        if len(owners) == 1:
            (gi,) = owners
            if gi is not None:
                owner[k] = gi
                groups[gi].members.append(k)
    for g in groups:
        g.members.sort()


def _base_name(name: str) -> str:
    return _TRAILING_INDEX.sub("", name) or name


def exact_key(value) -> tuple:
    """A hashable key that two values share only when they are equal in type, dtype, shape and every element.

    Takes a constant's value or a node's params (numbers, arrays, slices, tuples,
    lists, dicts of them); arrays enter by a digest of their bytes, so a large
    constant costs one pass over its memory. Labels round (``1.0000001`` is drawn
    ``1``) and summarise (``array[5]``); folding compares these keys instead, so
    two blocks that differ anywhere never fold.

    Example:
        >>> exact_key(1.0) == exact_key(1.0000001), exact_key((0, slice(1, 3))) == exact_key((0, slice(1, 3)))
        (False, True)
    """
    parts: list = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (np.ndarray, np.generic)):
            a = np.ascontiguousarray(v)
            data = repr(a.tolist()).encode() if a.dtype.hasobject else a.tobytes()
            parts.append(("array", a.dtype.str, a.shape, hashlib.blake2b(data, digest_size=16).digest()))
        elif isinstance(v, (tuple, list)):
            parts.append((type(v).__name__, len(v)))
            stack.extend(reversed(v))
        elif isinstance(v, dict):
            parts.append(("dict", tuple(map(repr, v))))
            stack.extend(reversed(list(v.values())))
        else:
            parts.append((type(v).__name__, repr(v)))  # repr of a float is exact (round-trips)
    return tuple(parts)


def _signature(program, inlined, group: Group) -> tuple:
    # Two scopes fold when their nodes match one for one: op, type, params,
    # constants' values, wiring inside the scope, and the types (or inlined
    # values) coming in. Values and params are compared exactly, never by
    # their (rounded, summarised) label text: a fold must not hide a difference.
    pos = {k: i for i, k in enumerate(group.members)}
    depth = len(group.path)
    entries = []
    for k in group.members:
        node = program.nodes[k]
        args: list[object] = []
        for p in node.parents:
            if p in pos:
                args.append(pos[p])
            elif p in inlined:
                args.append(("c", exact_key(program.nodes[p].value)))
            else:
                args.append(("x", program.nodes[p].shape, str(program.nodes[p].dtype)))
        value = exact_key(node.value) if node.op is NodeKind.CONSTANT else None
        entries.append((node.op, node.shape, str(node.dtype), exact_key(node.params), value,
                        tuple(args), tuple(node.scope[depth:])))
    return (_base_name(group.path[-1][0]), tuple(entries))


class _RunWalk:
    """Whether merging a run of sibling groups, grown one group at a time, closes a directed cycle.

    One walk per run, extended as the run grows: the nodes reached from the merged set
    are kept, so each node is expanded once per run (a fresh walk per candidate made
    folding N sibling scopes O(N²): 30 s to draw a 3,000-block chain's gradient).
    """

    def __init__(self, program, owner, groups, members: set):
        self.program, self.owner, self.groups = program, owner, groups
        self.members: set[int] = set()
        # Nodes outside the run reached from it through nodes outside it: a path
        # from the run back into it through one of these closes a cycle.
        self.outside: set[int] = set()
        self.expanded: set[int] = set()
        self.deferred: list[int] = []     # above the run's highest member: expanded once it grows
        self.top = -1
        self.add(members)

    def add(self, new: set) -> bool:
        """Merge ``new`` into the run; False if that would close a cycle (the walk is then spent)."""
        program, owner, groups, outside = self.program, self.owner, self.groups, self.outside
        nodes = program.nodes
        if any(p in outside and p not in new for k in new for p in nodes[k].parents):
            return False                   # the run reaches ``new`` through a node outside both
        members = self.members
        members |= new
        # A node of ``new`` reached from the run is now inside it; what was reached through
        # it is reached again from its children, so the rest of the walk stays valid.
        outside -= new
        # Edges go from lower to higher index, so a path leaving the merged set and
        # re-entering it only needs the nodes below its highest member expanded.
        self.top = top = max(self.top, max(new))
        queue = []
        for k in new:
            for c in program.children(k):
                if c not in members and c not in outside:
                    outside.add(c)
                    queue.append(c)
        keep = []
        for c in self.deferred:
            if c in outside:
                (queue if c <= top else keep).append(c)
        self.deferred = keep
        expanded = self.expanded
        while queue:
            c = queue.pop()
            if c > top:
                self.deferred.append(c)
                continue
            gi = owner[c]
            successors = program.children(c)
            if gi is not None and gi not in expanded:
                # A group is one node once drawn: reaching one member reaches all.
                expanded.add(gi)
                successors = [*successors, *(m for m in groups[gi].members if m not in members)]
            for d in successors:
                if d in members:
                    return False
                if d not in outside:
                    outside.add(d)
                    queue.append(d)
        return True


def _fold(program, inlined, owner, groups: list[Group], across: bool = False) -> list[Group]:
    signatures = [_signature(program, inlined, g) for g in groups]
    by_parent: dict[tuple, list[int]] = {}
    for gi, g in enumerate(groups):
        by_parent.setdefault(g.parent_scope, []).append(gi)
    merged_into = list(range(len(groups)))
    for siblings in by_parent.values():
        if across:
            ids: dict[tuple, int] = {}
            same: dict[int, list[int]] = {}
            place: dict[int, int] = {}
            for gi in siblings:
                kin = same.setdefault(ids.setdefault(signatures[gi], len(ids)), [])
                place[gi] = len(kin)
                kin.append(gi)
            used: set[int] = set()
        i = 0
        while i < len(siblings):
            if across and siblings[i] in used:
                i += 1
                continue
            run = [siblings[i]]
            members = set(groups[siblings[i]].members)
            walk = None
            j = i + 1
            # ``across``: the next sibling of the same signature, wherever it is (the 40 backward
            # halves of a block stack are interleaved with small pieces of the same scopes).
            if across:
                kin = same[ids[signatures[run[0]]]]
                later = iter(kin[place[run[0]] + 1:])
            while True:
                if across:
                    nxt = next(later, None)
                    if nxt is None:
                        break
                    if nxt in used:
                        continue
                elif j < len(siblings) and signatures[siblings[j]] == signatures[run[0]]:
                    nxt = siblings[j]
                else:
                    break
                if walk is None:
                    walk = _RunWalk(program, owner, groups, members)
                new = set(groups[nxt].members)
                if not walk.add(new):
                    break
                run.append(nxt)
                members |= new          # in place: a new set per step was O(N²) again
                j += 1
            if across:
                used.update(run)
                j = i + 1
            if len(run) > 1:
                first = groups[run[0]]
                first.members = sorted(members)
                first.count = len(run)
                first.title = f"{signatures[run[0]][0]} \u00d7 {len(run)}"
                first.last_name = groups[run[-1]].path[-1][0]
                for gi in run[1:]:
                    merged_into[gi] = run[0]
                for k in first.members:
                    owner[k] = run[0]
            i = j
    # Renumber the surviving groups in order of their first node: stable ids.
    keep = sorted({merged_into[gi] for gi in range(len(groups))}, key=lambda gi: groups[gi].members[0])
    renumber = {old: new for new, old in enumerate(keep)}
    for k, gi in enumerate(owner):
        if gi is not None:
            owner[k] = renumber[merged_into[gi]]
    return [groups[gi] for gi in keep]
