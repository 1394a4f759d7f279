"""A node budget per picture: the collapse depth chosen per branch of the scope tree.

A picture of a few thousand boxes is neither legible nor laid out by ``dot`` in
seconds. :func:`budget_grouping` draws a program in at most ``budget`` Graphviz
nodes (not counting the legend and long-edge reference stubs):

1. every top-level name scope starts collapsed (repeated blocks fold into
   ``block × 40``, even with other pieces of scope between them); a gradient
   program's backward pass is put in a scope of its own (:func:`backward_pass`),
   so that its blocks fold too;
2. collapsed scopes are opened, biggest first, while the picture stays within
   the budget: identical siblings (same base name, same size) open together or
   not at all, so a stack is never drawn half open; a lone big scope opens;
3. when the nodes drawn outside any scope still exceed the budget (a program
   recorded without scopes: random, built by hand, an unrolled recurrence),
   each cluster's loose nodes are cut into contiguous chunks of the program's
   topological order, each drawn as one group box (``ops %120–%239``) with
   its boundary edges. Chunks of a topological order never form a cycle among
   themselves;
4. boxes side by side (fed by the same boxes, feeding the same boxes) in a
   crowded cluster are pooled into one (``160 inputs``), or the picture grows
   wide instead of tall.

Every group box names how many program nodes it holds (see
:meth:`~autograd_dag.render.scene.Labeller.group_label`), so nothing is lost.
"""

from __future__ import annotations

import heapq

from ..program import Program
from .collapse import Group, Grouping, _base_name, adopted_scopes, group_nodes
from .scene import crossing_edges

# 200 boxes: the largest hand-sized programs of the gallery (BERT's 163 boxes, an unrolled
# GRU's 145 in the bipartite view) are still drawn in full, and dot lays out 200 boxes in
# well under a second. Large programs collapse far below it: benchmarks/render_scale.py
# draws a 40-block Transformer's gradient program in 33 boxes (61 bipartite), 1,869 x 1,915 px.
DEFAULT_BUDGET = 200

# Opening scopes costs one grouping pass per trial (30 ms at 4,500 nodes): at most this many.
MAX_TRIALS = 24

# Contiguous chunks of a topological order form a chain: one rank each, about 100 px
# tall (a group box of four lines and the space between ranks). At most this many per
# cluster keep the picture within 4,000 px on its long side.
MAX_CHUNKS = 30

# Edges between chunks that pass over others are drawn through every rank between: more
# than this many over one rank made a random program's picture 6,500 px wide.
MAX_PASSING = 60

# Sources all sit on the top rank: more than this many loose ones in a cluster are pooled.
MAX_ROW = 16

# A chunk of an unscoped program in the bipartite view draws its outputs as one
# variable node above this many (a random program's chunk feeds dozens of later ones).
POOL_OUTPUTS_ABOVE = 3


def budget_grouping(program: Program, view: str, budget: int, *, fold: bool = True,
                    inline_constants: bool = True) -> Grouping:
    """The grouping that draws ``program`` in ``view`` with at most ``budget`` nodes (when it can).

    Takes a :class:`Program`, ``view`` ("dag" or "bipartite") and ``budget`` >= 1;
    returns a :class:`Grouping` whose ``count_nodes(view)`` is at most ``budget``
    unless one chunk per cluster is still too many (a budget of a few boxes).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> def f(x):
        ...     for i in range(40):
        ...         with ad.name_scope(f"block{i}"):
        ...             x = ad.tanh(x * 2.0) + x
        ...     return ad.sum(x)
        >>> g = budget_grouping(ad.trace(f, np.ones(2)), "dag", 10)
        >>> [grp.title for grp in g.groups], g.count_nodes("dag") <= 10
        (['block × 40'], True)
    """
    backward = backward_pass(program)
    names = [("backward pass",) + n.scope if n.index in backward else n.scope for n in program.nodes]
    scopes = adopted_scopes(program, names=names)

    def build(opened: set, pool: bool = True) -> Grouping:
        grouping = group_nodes(program, fold=fold, inline_constants=inline_constants, opened=opened,
                               scopes=scopes, fold_across=True)
        if pool:
            _pool_parallel(program, grouping)
        if view == "bipartite":
            grouping.merge_outputs_above = POOL_OUTPUTS_ABOVE
        return grouping

    opened: set = set()
    best = build(opened)
    count = best.count_nodes(view)
    # Candidates: classes of identical collapsed siblings, biggest first.
    heap: list = []
    tried: set = set()

    def push(groups: list[Group], parent: tuple | None) -> None:
        classes: dict[tuple, list[tuple]] = {}
        for g in groups:
            if g.count != 1 or len(g.members) < 3 or (parent is not None and g.parent_scope != parent):
                continue  # a fold stays one box; a cluster around one or two nodes says nothing more
            key = (g.parent_scope, _base_name(g.path[-1][0]), len(g.members))
            classes.setdefault(key, []).append(g.path)
        for key, paths in classes.items():
            if key not in tried:
                tried.add(key)
                heapq.heappush(heap, (-key[2] * len(paths), len(tried), paths))

    push(best.groups, None)
    trials = 0
    while heap and trials < MAX_TRIALS:
        _, _, paths = heapq.heappop(heap)
        trial = opened | set(paths)
        candidate = build(trial)
        trials += 1
        n = candidate.count_nodes(view)
        if n <= budget:
            opened, best, count = trial, candidate, n
            for path in paths:
                push(best.groups, path)
    if count > budget:
        best = _chunk_loose_nodes(program, best, view, budget, build, opened)
    return best


def backward_pass(program: Program) -> set[int]:
    """The nodes of a gradient program's backward pass: the seed ``1`` of the reverse sweep and what depends on it.

    Takes a :class:`Program`; returns the indices of the nodes ``grad_program`` marked
    ``in_backward_pass`` (empty for other programs). The backward pass reuses the scopes of the forward pass
    (the derivative of a block is recorded in the block's scope), so a block's two
    halves would be one box, with edges into it from the blocks after it (its
    gradient) and before it (its input): a cycle through the whole stack, which also
    keeps identical blocks from folding. Drawn apart (the backward half inside a
    scope of its own), a 40-block stack is ``block × 40`` forward and again backward.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> g = ad.grad_program(ad.trace(lambda x: ad.sum(ad.exp(x)), np.ones(2)))
        >>> sorted(str(g.nodes[k].op) for k in backward_pass(g))
        ['broadcast_to', 'constant', 'multiply', 'reshape']
    """
    return {node.index for node in program.nodes if node.in_backward_pass}


def _chunk_loose_nodes(program: Program, grouping: Grouping, view: str, budget: int, build, opened) -> Grouping:
    # Nodes drawn on their own, per cluster, in program (topological) order. Chunks are cut before parallel boxes are pooled: a pool of nodes lying inside a chunk's
    # range of the order would draw a cycle between the two.
    grouping = build(opened, False)
    loose: dict[tuple, list[int]] = {}
    for node in program.nodes:
        k = node.index
        if grouping.drawn(k):
            loose.setdefault(grouping.cluster_of(k), []).append(k)
    count = grouping.count_nodes(view)
    chunked: dict[tuple, int] = {}
    # Biggest clusters first; each gets as many chunks as the budget left allows.
    for cluster in sorted(loose, key=lambda c: -len(loose[c])):
        ks = loose[cluster]
        weight = sum(1 if view == "dag" or not program.nodes[k].parents else 2 for k in ks)
        per_chunk = 1 if view == "dag" else 1 + POOL_OUTPUTS_ABOVE  # a box and its output variables
        rest = count - weight
        chunks = max(1, min(len(ks) // 2, (budget - rest) // per_chunk, MAX_CHUNKS // (1 if view == "dag" else 2)))
        while True:
            chunked[cluster] = chunks
            candidate = _pool_parallel(program, _apply_chunks(program, build(opened, False), view, loose, chunked))
            n = candidate.count_nodes(view)
            passing = _most_passing(program, candidate, cluster)
            if (n <= budget and passing <= MAX_PASSING) or chunks == 1:
                break
            # Passing edges grow as the square of the chunks when every chunk feeds every later one.
            shrink = min(budget / n, (MAX_PASSING / passing) ** 0.5 if passing else 1.0)
            chunks = max(1, min(chunks - 1, int(chunks * shrink)))
        grouping, count = candidate, n
        if count <= budget:
            break
    return grouping


def _most_passing(program: Program, grouping: Grouping, cluster: tuple) -> int:
    """The most edges between chunks of ``cluster`` passing over one chunk (chunks in order, one rank each)."""
    owner, groups = grouping.owner, grouping.groups
    chunk = {gi: i for i, gi in enumerate(gi for gi, g in enumerate(groups)
                                          if g.parent_scope == cluster and g.chunk)}
    pairs = set()
    for p, j, _ in crossing_edges(grouping):
        a, b = chunk.get(owner[p]), chunk.get(owner[j])
        if a is not None and b is not None and b > a + 1:
            pairs.add((a, b))
    over = [0] * (len(chunk) + 1)   # a difference array: +1 over a + 1 .. b - 1
    for a, b in pairs:
        over[a + 1] += 1
        over[b] -= 1
    most = run = 0
    for x in over:
        run += x
        most = max(most, run)
    return most


def _pool_parallel(program: Program, grouping: Grouping) -> Grouping:
    # Boxes side by side on one rank make a picture wide, not tall: the 160 weights of a
    # 40-block stack (all used by its forward and backward halves) drew a row 44,000 px
    # wide, and the 80 weight gradients of its layer norms a row of 18,000 px. In a cluster
    # of more than MAX_ROW boxes, boxes fed by the same boxes and feeding the same boxes
    # ("parallel": the same place in the picture) become one box ("160 inputs").
    owner = grouping.owner

    def unit(k: int) -> tuple:
        return ("g", owner[k]) if owner[k] is not None else ("n", k)

    ins: dict[tuple, set] = {}
    outs: dict[tuple, set] = {}
    for p, j, _ in crossing_edges(grouping):
        a, b = unit(p), unit(j)
        outs.setdefault(a, set()).add(b)
        ins.setdefault(b, set()).add(a)
    units = [("n", node.index) for node in program.nodes if grouping.drawn(node.index)]
    units += [("g", gi) for gi in range(len(grouping.groups))]
    cluster = {u: grouping.cluster_of(u[1]) if u[0] == "n" else grouping.groups[u[1]].parent_scope
               for u in units}
    per_cluster: dict[tuple, int] = {}
    for u in units:
        per_cluster[cluster[u]] = per_cluster.get(cluster[u], 0) + 1
    outputs = set(program.outputs)
    classes: dict[tuple, list[tuple]] = {}
    for u in units:
        if per_cluster[cluster[u]] <= MAX_ROW or (u[0] == "n" and u[1] in outputs):
            continue
        if u[0] == "g" and grouping.groups[u[1]].count > 1:
            continue  # a folded stack keeps its own box
        key = (cluster[u], frozenset(ins.get(u, ())), frozenset(outs.get(u, ())))
        classes.setdefault(key, []).append(u)
    new = []
    for (where, _, _), members in classes.items():
        if len(members) < 2:
            continue
        nodes = sorted(k for kind, x in members
                       for k in ([x] if kind == "n" else grouping.groups[x].members))
        titles = {program.nodes[x].op.value if kind == "n" and not program.nodes[x].parents else
                  "op" if kind == "n" else _base_name(grouping.groups[x].title) for kind, x in members}
        word = titles.pop() if len(titles) == 1 else "box"
        title = f"{len(members)} {word}{'es' if word.endswith('x') else 's'}"
        new.append(Group(where + ((title, nodes[0]),), nodes, title=title))
    return _add_groups(grouping, new)


def _apply_chunks(program: Program, grouping: Grouping, view: str, loose: dict, chunked: dict) -> Grouping:
    new = []
    for cluster, chunks in chunked.items():
        ks = loose[cluster]
        size = -(-len(ks) // chunks)
        for start in range(0, len(ks), size):
            members = ks[start:start + size]
            if len(members) == 1 and not program.nodes[members[0]].parents:
                continue  # a chunk of one root says less than the root's own box
            title = f"ops %{members[0]}\u2013%{members[-1]}"
            new.append(Group(cluster + ((title, members[0]),), list(members), title=title, chunk=True))
    return _add_groups(grouping, new)


def _add_groups(grouping: Grouping, new: list[Group]) -> Grouping:
    """Add groups of nodes drawn on their own or in the groups they replace; groups renumbered in order of
    first node, as folding does."""
    if not new:
        return grouping
    owner = grouping.owner
    replaced = {owner[k] for group in new for k in group.members if owner[k] is not None}
    groups = [g for gi, g in enumerate(grouping.groups) if gi not in replaced]
    renumber = {old: new for new, old in enumerate(gi for gi in range(len(grouping.groups)) if gi not in replaced)}
    owner[:] = [None if gi is None or gi in replaced else renumber[gi] for gi in owner]
    for group in new:
        gi = len(groups)
        groups.append(group)
        for k in group.members:
            owner[k] = gi
    order = sorted(range(len(groups)), key=lambda gi: groups[gi].members[0])
    renumber = {old: new for new, old in enumerate(order)}
    grouping.groups = [groups[gi] for gi in order]
    grouping.owner = [None if gi is None else renumber[gi] for gi in owner]
    return grouping
