"""The DAG view (seed 001 §4.1.3, Fig. 4.3): one node per function f_k and its output s_k."""

from __future__ import annotations

from .collapse import Grouping

from .scene import Labeller, Scene, VNode, crossing_edges, join_lines
from .styles import op_color


def dag_scene(grouping: Grouping, labeller: Labeller, *, edge_labels: str | None = None,
              color_by: str = "role") -> Scene:
    """The DAG view of a grouped program: node ``n{k}`` per drawn node, ``g{i}`` per group.

    With nothing collapsed or inlined it has exactly one node per program node
    and one edge per parent reference (``program.num_edges``).
    """
    program = grouping.program
    scene = Scene(program, grouping, "dag")
    owner = grouping.owner
    placed: set[int] = set()
    for node in program.nodes:
        k = node.index
        if k in grouping.inlined:
            continue
        gi = owner[k]
        if gi is not None:
            if gi not in placed:
                placed.add(gi)
                group = grouping.groups[gi]
                # A program output inside a collapsed scope has no node of its own here: the
                # group carries the output's double border (and names it), or no node says it.
                held = labeller.group_outputs(gi)
                scene.add_node(VNode(f"g{gi}", "group", labeller.group_label(gi, mark_outputs=True),
                                     group.parent_scope, tuple(group.members), group.title,
                                     labeller.group_tooltip(gi),
                                     {"peripheries": "2", "penwidth": "1.5"} if held else None))
            continue
        role = labeller.role(k)
        label = join_lines(labeller.title(k), labeller.params(k), labeller.name(k), labeller.info(k))
        fill = op_color(node.op) if color_by == "op" and node.parents else None
        scene.add_node(VNode(f"n{k}", role, label, labeller.scope_of(k), (k,), labeller.short(k),
                             labeller.tooltip(k), {"fillcolor": fill} if fill else labeller.returned_root(k)))
    for p, j, i in crossing_edges(grouping):
        src = f"g{owner[p]}" if owner[p] is not None else f"n{p}"
        dst = f"g{owner[j]}" if owner[j] is not None else f"n{j}"
        if owner[j] is None:
            edge_label = labeller.edge_label(p, j, i, edge_labels == "shape")
        else:
            edge_label = labeller.shape_text(p) if edge_labels == "shape" else None
        # Edges touching a group are merged per pair of drawn nodes; plain
        # edges stay one per parent reference, so x * x shows two arrows.
        scene.add_edge(src, dst, (p, j), edge_label, merge=owner[p] is not None or owner[j] is not None)
    return scene
