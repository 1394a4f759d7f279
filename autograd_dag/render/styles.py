"""How each kind of node looks: roles, their shapes and colours, the legend, highlighting.

A node's *role* says what it is in the program: ``input``, ``parameter``
(requires grad), ``constant``, ``intermediate``, ``output``, ``gradient``
(an output of a gradient program), ``group`` (a collapsed or folded name
scope) and ``reference`` (a stub standing for a far-away producer, drawn
instead of a very long edge). The bipartite view adds ``function``.
"""

from __future__ import annotations

import zlib

from .labels import html

FONT = "Helvetica"

# fill colour, border colour: chosen to stay distinguishable in greyscale
# print too (inputs and outputs darkest, intermediates white).
ROLE_COLORS = {
    "input": ("#cfe3f7", "#2b6cb0"),
    "parameter": ("#fde2c0", "#c05621"),
    "constant": ("#ececec", "#777777"),
    "intermediate": ("#ffffff", "#444444"),
    "output": ("#c9efcf", "#2f855a"),
    "gradient": ("#f7cdd6", "#b83250"),
    "group": ("#e6def7", "#6b46c1"),
    "function": ("#f4f4f4", "#444444"),
    "reference": ("#ffffff", "#999999"),
}

ROLE_TEXT = {
    "input": "input",
    "parameter": "parameter (requires grad)",
    "constant": "constant",
    "intermediate": "intermediate",
    "output": "output",
    "gradient": "gradient (output)",
    "group": "collapsed scope",
    "function": "function",
    "reference": "reference to a far node",
}

# Shapes in the DAG view, where one node is both f_k and s_k (seed 001 §4.1.3).
DAG_SHAPES = {
    "input": "ellipse",
    "parameter": "cylinder",
    "constant": "note",
    "intermediate": "box",
    "output": "box",
    "gradient": "box",
    "group": "box3d",
    "reference": "plaintext",
}

# Shapes in the bipartite view: every variable an ellipse, every function a box.
BIPARTITE_SHAPES = {
    "input": "ellipse",
    "parameter": "ellipse",
    "constant": "ellipse",
    "intermediate": "ellipse",
    "output": "ellipse",
    "gradient": "ellipse",
    "function": "box",
    "group": "box3d",
    "reference": "plaintext",
}

# Qualitative palette for color_by="op" (light fills, black text stays readable).
OP_PALETTE = ("#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f", "#cab2d6", "#ffff99", "#8dd3c7",
              "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5", "#d9d9d9",
              "#bc80bd", "#ccebc5", "#ffed6f", "#c7e9c0")

HIGHLIGHT_COLOR = "#d62728"
DIM_FILL = "#f7f7f7"
DIM_LINE = "#cccccc"
DIM_TEXT = "#aaaaaa"
EDGE_COLOR = "#555555"


def op_color(op) -> str:
    """The fill colour of primitive ``op`` (or a hand-built graph's vertex kind) under ``color_by="op"``.

    Fixed per name across runs."""
    # crc32 rather than hash(): Python salts str hashes per process, and the
    # DOT output must be identical from run to run.
    return OP_PALETTE[zlib.crc32(str(op).encode("utf-8", "replace")) % len(OP_PALETTE)]


def node_attrs(role: str, view: str, fill: str | None = None) -> dict:
    """DOT attributes (shape, style, colours, peripheries) of a node with ``role`` in ``view``."""
    shapes = DAG_SHAPES if view == "dag" else BIPARTITE_SHAPES
    default_fill, line = ROLE_COLORS[role]
    shape = shapes[role]
    attrs = {"shape": shape, "fillcolor": fill or default_fill, "color": line}
    if role == "reference":
        attrs.update(style="dashed", fontcolor="#777777")
        return attrs
    style = ["filled"]
    if shape == "box" and role != "function":
        style.append("rounded")
    attrs["style"] = ",".join(style)
    if role in ("output", "gradient"):
        attrs["peripheries"] = "2"
        attrs["penwidth"] = "1.5"
    return attrs


def legend_label(view: str, roles: list[str], ops: list[tuple[str, str]] | None = None,
                 highlighted: str | None = None) -> str:
    """The HTML-like label of the legend node: one row per role drawn (and per op colour).

    ``highlighted``: what the highlighted nodes are, when some are (a row then
    explains the bold outline and the dimmed rest).
    """
    rows = ['<TR><TD COLSPAN="2"><B>legend</B></TD></TR>']
    shapes = DAG_SHAPES if view == "dag" else BIPARTITE_SHAPES
    for role in roles:
        fill, line = ROLE_COLORS[role]
        rows.append(f'<TR><TD BGCOLOR="{fill}" COLOR="{line}" BORDER="1" WIDTH="18"> </TD>'
                    f'<TD ALIGN="LEFT">{html(ROLE_TEXT[role])} '
                    f'<FONT POINT-SIZE="8" COLOR="#777777">({shapes[role]})</FONT></TD></TR>')
    for op, fill in ops or ():
        rows.append(f'<TR><TD BGCOLOR="{fill}" BORDER="1" WIDTH="18"> </TD>'
                    f'<TD ALIGN="LEFT">{html(op, 32)}</TD></TR>')
    if highlighted is not None:
        rows.append(f'<TR><TD BGCOLOR="#ffffff" COLOR="{HIGHLIGHT_COLOR}" BORDER="2" WIDTH="18"> </TD>'
                    f'<TD ALIGN="LEFT">{html(highlighted, 90)}</TD></TR>')
    return ('<<TABLE BORDER="1" COLOR="#999999" CELLBORDER="0" CELLSPACING="3" CELLPADDING="2">'
            + "".join(rows) + "</TABLE>>")
