"""From a :class:`Scene` to a :class:`RenderedGraph`: clusters, highlighting, legend, DOT."""

from __future__ import annotations

import re

import graphviz

from ..kinds import ProgramKind
from .labels import bold, html, name_html, small
from .layout import graph_attributes
from .output import RenderedGraph
from .scene import RETURNED_TEXT, Scene, output_role
from .styles import (DIM_FILL, DIM_LINE, DIM_TEXT, EDGE_COLOR, FONT, HIGHLIGHT_COLOR, NEUTRAL_FILL, ROLE_COLORS,
                     legend_label, node_attrs, op_color)

_ROLE_ORDER = ("input", "boundary input", "parameter", "constant", "function", "intermediate", "output", "gradient",
               "boundary output", "group", "reference")

# The picture's subtitle names what kind of program it draws.
_KIND_TITLES = {ProgramKind.PROGRAM: "program", ProgramKind.GRADIENT: "gradient program",
                ProgramKind.CIRCUIT: "arithmetic circuit", ProgramKind.GRAPH: "graph",
                ProgramKind.GRADIENT_CIRCUIT: "gradient circuit (f and its partial derivatives)"}


def emit(scene: Scene, *, rankdir: str = "TB", highlight: set | None = None, legend: bool = True,
         color_by: str = "role", title: str | None = None, timeout: float | None = None,
         extra_graph_attrs: dict | None = None, note: str | None = None,
         legend_rows: list[str] = ()) -> RenderedGraph:
    """Build the Graphviz digraph of ``scene``; deterministic for a given program and options.

    ``legend_rows``: further rows of the legend (an overlay's colour bar)."""
    program = scene.program
    graph_attr = {"rankdir": rankdir, "fontname": FONT, "fontsize": "12", "labelloc": "t",
                  "newrank": "true"}
    graph_attr.update(graph_attributes(len(scene.nodes), len(scene.edges)))
    graph_attr.update(extra_graph_attrs or {})
    heading = title if title is not None else program.name
    kind = _KIND_TITLES[program.kind]
    heading = bold(name_html(heading, 60))  # title="" draws no heading line
    graph_attr["label"] = ("<" + (heading + "<BR/>" if heading else "")
                           + small(html(f"{kind}: {len(program.nodes)} nodes, {program.num_edges} edges, "
                                        f"{scene.view} view"))
                           + (f"<BR/>{small(html(note, 120), '#b83250')}" if note else "") + ">")
    node_attr = {"fontname": FONT, "fontsize": "11", "margin": "0.1,0.04", "height": "0.3"}
    edge_attr = {"color": EDGE_COLOR, "arrowsize": "0.6", "fontname": FONT, "fontsize": "8"}
    name = re.sub(r"[^A-Za-z0-9_]", "_", program.name) or "program"
    g = RenderedGraph(name=name, graph_attr=graph_attr, node_attr=node_attr, edge_attr=edge_attr,
                      timeout=timeout)

    # Cluster paths in order of first appearance: stable cluster ids.
    members: dict[tuple, list] = {(): []}
    order: list[tuple] = []
    for node in scene.nodes:
        for i in range(1, len(node.scope) + 1):
            path = node.scope[:i]
            if path not in members:
                members[path] = []
                order.append(path)
        members[node.scope].append(node)
    cluster_id = {path: f"cluster_{i}" for i, path in enumerate(order)}
    subclusters: dict[tuple, list[tuple]] = {}
    for path in order:
        subclusters.setdefault(path[:-1], []).append(path)

    def add_nodes(container, path: tuple) -> None:
        for node in members[path]:
            attrs = node_attrs(node.role, scene.view)
            attrs.update(node.attrs)
            if highlight is not None:
                if highlight.intersection(node.members):
                    attrs.update(penwidth="2.5", color=HIGHLIGHT_COLOR)
                else:
                    attrs.update(fillcolor=DIM_FILL, color=DIM_LINE, fontcolor=DIM_TEXT)
            if node.tooltip:
                attrs["tooltip"] = graphviz.nohtml(node.tooltip)
            container.node(node.id, label=node.label, **attrs)

    # Clusters nested as deep as the name scopes, with an explicit stack: a nested function
    # calling itself recursed once per scope level, and its closure cell referred to itself,
    # so every render left the scene behind as cyclic garbage for the collector.
    # A cluster joins its parent when its own subclusters are done (graphviz copies it then).
    add_nodes(g, ())
    stack = [(g, iter(subclusters.get((), ())), None)]
    while stack:
        container, subs, joined = stack[-1]
        sub = next(subs, None)
        if sub is None:
            stack.pop()
            if joined is not None:
                joined.__exit__(None, None, None)
            continue
        joined = container.subgraph(name=cluster_id[sub])
        c = joined.__enter__()
        title = name_html(sub[-1][0], 50)  # a scope named "" has no title: Graphviz rejects <B></B> and <>
        c.attr(style="dashed,rounded", color="#888888", fontcolor="#444444", fontsize="10", labeljust="l",
               **({"label": f"<<B>{title}</B>>"} if title else {}))
        add_nodes(c, sub)
        stack.append((c, iter(subclusters.get(sub, ())), joined))
    for edge in scene.edges:
        attrs = dict(edge.attrs)
        if edge.label:
            attrs["label"] = f"<{html(edge.label, 40)}>"
        if highlight is not None:
            if any(i in highlight and j in highlight for i, j in edge.pairs):
                attrs.update(penwidth="2.5", color=HIGHLIGHT_COLOR)
            else:
                attrs.update(color=DIM_LINE)
        g.edge(edge.src, edge.dst, **attrs)
    if legend:
        present = {n.role for n in scene.nodes}
        outputs = set(program.outputs)
        for n in scene.nodes:
            if n.role == "group":  # a collapsed scope holding an output wears the output's double border
                present.update(output_role(program, k) for k in outputs.intersection(n.members))
        roles = [r for r in _ROLE_ORDER if r in present and r in ROLE_COLORS]
        rows = list(legend_rows)
        if any(n.role in ("input", "parameter", "constant") and outputs.intersection(n.members) for n in scene.nodes):
            rows = [f'<TR><TD COLSPAN="2" ALIGN="LEFT">{html(RETURNED_TEXT, 0)}</TD></TR>', *legend_rows]
        ops = None
        if color_by == "op":
            seen: dict[str, str] = {}
            for k in sorted({m for n in scene.nodes if n.role in ("function", "intermediate", "output",
                                                                  "gradient") for m in n.members}):
                op = program.nodes[k].op
                if program.nodes[k].parents and op not in seen and len(seen) < 16:
                    seen[op] = op_color(op)
            ops = list(seen.items())
        g.node("legend", label=legend_label(scene.view, roles, ops,
                                            None if highlight is None else _highlight_text(program, highlight),
                                            rows, role_fill=NEUTRAL_FILL if legend_rows else None),
               shape="plaintext", margin="0")
    return g


def _highlight_text(program, chosen: set) -> str:
    """The legend's words for the highlighted nodes: the path they form, when they form one."""
    def label(k: int) -> str:
        node = program.nodes[k]
        return f"%{k} {node.name}" if node.name else f"%{k} {node.op}"
    children: dict[int, list[int]] = {}
    for node in program.nodes:
        for p in node.parents:
            children.setdefault(p, []).append(node.index)
    starts = [k for k in sorted(chosen) if not any(p in chosen for p in program.nodes[k].parents)]
    ends = [k for k in sorted(chosen) if not any(c in chosen for c in children.get(k, ()))]
    if len(chosen) > 1 and len(starts) == 1 and len(ends) == 1:
        return (f"highlighted: every path from {label(starts[0])} to {label(ends[0])} "
                f"({len(chosen)} nodes); the rest dimmed")
    return f"highlighted: {len(chosen)} chosen node{'s' * (len(chosen) != 1)}; the rest dimmed"
