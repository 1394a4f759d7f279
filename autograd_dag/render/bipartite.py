"""The bipartite view (seed 001 §4.1.3, Fig. 4.4): variables and functions as separate nodes.

Every drawn program node k has a variable ``v{k}`` (an ellipse); every
non-root also has a function ``f{k}`` (a box) with the edge ``f{k} -> v{k}``;
a program edge ``i -> j`` becomes ``v{i} -> f{j}``. With n nodes, r roots and
m edges that is ``2n - r`` nodes and ``(n - r) + m`` edges, as
:func:`~autograd_dag.graph_algorithms.to_bipartite` counts. A collapsed scope
is one function box ``g{i}`` with a variable for each of its outputs.
"""

from __future__ import annotations

from ..program import NodeKind
from .collapse import Grouping
from .labels import html, name_html, small
from .scene import Labeller, Scene, VNode, crossing_edges, join_lines, output_role
from .styles import op_color


def bipartite_scene(grouping: Grouping, labeller: Labeller, *, edge_labels: str | None = None,
                    color_by: str = "role") -> Scene:
    """The bipartite view of a grouped program (see the module docstring for the counts)."""
    program = grouping.program
    scene = Scene(program, grouping, "bipartite")
    owner = grouping.owner
    group_outputs = {gi: set(grouping.group_outputs(gi)) for gi in range(len(grouping.groups))}
    # A group with many outputs (a chunk of an unscoped program) draws them as one variable node.
    limit = grouping.merge_outputs_above
    pooled = {gi for gi, outs in group_outputs.items() if limit is not None and len(outs) > limit}
    placed: set[int] = set()

    def variable(k: int, scope: tuple) -> None:
        node = program.nodes[k]
        if node.op is NodeKind.CONSTANT:
            title = labeller.title(k)
        elif node.name:
            title = labeller.title(k) if node.prim is None else f"<B>{name_html(node.name)}</B>"
        else:
            title = ""
        scene.add_node(VNode(f"v{k}", labeller.role(k), join_lines(title, labeller.info(k)), scope,
                             (k,), labeller.short(k), labeller.tooltip(k), labeller.returned_root(k)))

    for node in program.nodes:
        k = node.index
        if k in grouping.inlined:
            continue
        gi = owner[k]
        if gi is not None:
            group = grouping.groups[gi]
            if gi not in placed:
                placed.add(gi)
                scene.add_node(VNode(f"g{gi}", "group", labeller.group_label(gi), group.parent_scope,
                                     tuple(group.members), group.title, labeller.group_tooltip(gi)))
                if gi in pooled:
                    outs = sorted(group_outputs[gi])
                    # "…" only when values are left out (4 values were listed with one); the program
                    # outputs among them are named, or a reader cannot tell which value is returned.
                    listed = ", ".join(f"%{labeller.number(o)}" for o in outs[:4]) + ", \u2026" * (len(outs) > 4)
                    held = [o for o in outs if o in labeller.outputs]
                    label = small(html(f"{len(outs)} values: {listed}", 60))
                    if len(held) == len(outs):
                        label += "<BR/>" + small(html(f"all returned ({output_role(program, held[0])}s)"), "#222222")
                    elif held:
                        returned = ", ".join(f"%{labeller.number(o)} ({output_role(program, o)})" for o in held[:3])
                        label += "<BR/>" + small(html(f"returns {returned}" + ", \u2026" * (len(held) > 3), 70),
                                                 "#222222")
                    label = "<" + label + ">"
                    role = output_role(program, held[0]) if held else "intermediate"
                    scene.add_node(VNode(f"w{gi}", role, label, group.parent_scope, tuple(outs),
                                         f"{len(outs)} values of {group.title}", labeller.group_tooltip(gi)))
                    scene.add_edge(f"g{gi}", f"w{gi}", (outs[0], outs[0]), None, merge=False)
            if k in group_outputs[gi] and gi not in pooled:
                variable(k, group.parent_scope)
                scene.add_edge(f"g{gi}", f"v{k}", (k, k), None, merge=False)
            continue
        scope = labeller.scope_of(k)
        if node.parents:
            fill = op_color(node.op) if color_by == "op" else None
            label = join_lines(labeller.function_title(k), labeller.params(k))
            scene.add_node(VNode(f"f{k}", "function", label, scope, (k,), labeller.short(k),
                                 labeller.tooltip(k), {"fillcolor": fill} if fill else None))
            variable(k, scope)
            scene.add_edge(f"f{k}", f"v{k}", (k, k), None, merge=False)
        else:
            variable(k, scope)
    for p, j, i in crossing_edges(grouping):
        dst = f"g{owner[j]}" if owner[j] is not None else f"f{j}"
        if owner[p] in pooled:
            scene.add_edge(f"w{owner[p]}", dst, (p, j), None, merge=True)
            continue
        if owner[j] is None:
            edge_label = labeller.edge_label(p, j, i, edge_labels == "shape")
        else:
            edge_label = labeller.shape_text(p) if edge_labels == "shape" else None
        scene.add_edge(f"v{p}", dst, (p, j), edge_label, merge=owner[j] is not None)
    return scene

