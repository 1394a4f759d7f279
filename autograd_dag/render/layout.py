"""Keeping Graphviz fast on large programs: layout limits and long-edge references.

Measured with ``benchmarks/bench_render.py``: ``dot`` spends its time on the
*virtual nodes* it inserts along every edge that spans several ranks (one
per rank crossed), in crossing minimisation and in the network-simplex pass
that places nodes horizontally. A gradient program, whose backward half
reuses forward values, or a long accumulation has thousands of such ranks:
with Graphviz's default limits a 1,000-op program did not finish within 60 s
in either view (``bench_render.py --baseline``). Two measures bring any program under a few seconds:

* the longest edges are replaced, above a budget of virtual nodes, by a small
  *reference* node next to the consumer (``→ %12 exp``), like an off-page
  connector in a circuit diagram;
* the iteration limits ``nslimit``/``nslimit1``/``mclimit`` are lowered for
  large graphs (small ones keep Graphviz's best quality).

Since the node budget (:mod:`.budget`) a default picture has at most 200 boxes, and
these settings no longer decide its time: ``benchmarks/render_scale.py --settings``
(Graphviz 2.43) lays out every default picture of its cases (16 to 61 boxes) in
0.02-0.06 s under Graphviz's defaults and under each setting alone, so pictures up
to ``SMALL_GRAPH`` keep Graphviz's defaults. They matter when every node is drawn
(``max_nodes=None``) or one depth is forced; one setting at a time, ``dot -Tsvg``:

=======================  ================  ================  =====================
setting                  random, 6,610 gv  random bipartite  40-block grad depth=1
                         nodes (flat DAG)  12,247 gv nodes   1,265 gv nodes (DAG)
=======================  ================  ================  =====================
defaults of 2.43         > 30 s            > 30 s            > 30 s
nslimit=0.2 alone        8.7 s             16.2 s            27.2 s
mclimit, searchsize,     > 30 s each       > 30 s each       > 30 s each
splines=line/ortho,
newrank=false,
remincross=false alone
the limits below         4.6 s             15.3 s            26.8 s
=======================  ================  ================  =====================

Only the network-simplex limit matters; the others together with it gain a little
more, which is why they are kept. On the last graph dot 2.43 then dies of a
segmentation fault (signal 11 after 25 s): the budget, not a setting, is the cure.
"""

from __future__ import annotations

from ..graph import topological_sort
from .labels import html, small
from .scene import Scene, VEdge, VNode

# Graphs up to this many nodes keep Graphviz's default (best) layout effort.
SMALL_GRAPH = 300


def graph_attributes(num_nodes: int, num_edges: int) -> dict:
    """Layout attributes for a graph of this size (see the module docstring)."""
    attrs = {"ranksep": "0.3", "nodesep": "0.2"}
    if num_nodes > SMALL_GRAPH:
        # Iteration limits, scaled per node by Graphviz: quality degrades
        # gracefully while the time stops growing quadratically.
        attrs.update(nslimit="0.5", nslimit1="2", mclimit="0.3", searchsize="20")
    if num_nodes > 4 * SMALL_GRAPH:
        attrs.update(nslimit="0.2", mclimit="0.1", remincross="false")
    return attrs


def estimate_ranks(scene: Scene) -> dict[str, int]:
    """Approximate ``dot`` ranks: longest path from the sources, sources sunk next to their first use."""
    ids = [n.id for n in scene.nodes]
    parents: dict[str, list[str]] = {i: [] for i in ids}
    children: dict[str, list[str]] = {i: [] for i in ids}
    for e in scene.edges:
        parents[e.dst].append(e.src)
        children[e.src].append(e.dst)
    # Collapsing interleaved scopes can make cycles: the edge closing one is skipped.
    order = topological_sort(ids, parents.__getitem__, check=False)
    rank: dict[str, int] = {}
    for v in order:
        rank[v] = 1 + max((rank[p] for p in parents[v] if p in rank and parents[p]), default=0) \
            if parents[v] else 0
    for v in ids:
        if not parents[v] and children[v]:
            rank[v] = max(0, min(rank[c] for c in children[v]) - 1)
    return rank


def add_references(scene: Scene, budget: int | None = None) -> int:
    """Replace the longest edges by reference stubs until the virtual-node estimate fits ``budget``.

    Returns the number of edges replaced. The default budget is the number
    of nodes (at least 1,500): small and ordinary programs are left intact.
    """
    if budget is None:
        budget = max(1500, len(scene.nodes))
    rank = estimate_ranks(scene)
    spans = [max(0, rank[e.dst] - rank[e.src] - 1) for e in scene.edges]
    total = sum(spans)
    if total <= budget:
        return 0
    by_id = {n.id: n for n in scene.nodes}
    replaced = 0
    for idx in sorted(range(len(scene.edges)), key=lambda i: (-spans[i], i)):
        if total <= budget or spans[idx] <= 2:
            break
        edge = scene.edges[idx]
        src, dst = by_id[edge.src], by_id[edge.dst]
        ref = VNode(f"r{idx}", "reference", "<" + small(html("\u2192 " + src.short, 40), "#666666", 9) + ">",
                    dst.scope, src.members, src.short, src.tooltip)
        scene.nodes.append(ref)
        scene.edges[idx] = VEdge(ref.id, edge.dst, edge.pairs, edge.label, {"style": "dashed"})
        total -= spans[idx]
        replaced += 1
    return replaced
