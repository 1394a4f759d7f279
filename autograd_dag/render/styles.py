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
    # A scope's picture (render(scope=)): values crossing its boundary, and the way back up.
    "boundary input": ("#fff3b0", "#8a6d00"),
    "boundary output": ("#fff3b0", "#8a6d00"),
    "parent link": ("#ffffff", "#1a56db"),
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
    "boundary input": "boundary input (from outside the scope)",
    "boundary output": "boundary output (used outside the scope)",
    "parent link": "link to the scope around",
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
    "boundary input": "invhouse",
    "boundary output": "house",
    "parent link": "box",
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
    "boundary input": "invhouse",
    "boundary output": "house",
    "parent link": "box",
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
    if role == "boundary input" or role == "boundary output":
        attrs["style"] = "filled,bold"
    if role == "parent link":
        attrs.update(style="rounded,dashed", fontcolor=line)
    if role in ("output", "gradient", "boundary output"):
        attrs["peripheries"] = "2"
        attrs["penwidth"] = "1.5"
    return attrs


def legend_label(view: str, roles: list[str], ops: list[tuple[str, str]] | None = None,
                 highlighted: str | None = None, extra_rows: list[str] = (),
                 role_fill: str | None = None) -> str:
    """The HTML-like label of the legend node: one row per role drawn (and per op colour).

    ``highlighted``: what the highlighted nodes are, when some are (a row then
    explains the bold outline and the dimmed rest). ``extra_rows``: further
    two-column rows at the end (an overlay's colour bar, :func:`colorbar_rows`).
    ``role_fill``: one fill for every role's swatch (an overlay owns the fills;
    roles keep their borders and shapes).
    """
    rows = ['<TR><TD COLSPAN="2"><B>legend</B></TD></TR>']
    shapes = DAG_SHAPES if view == "dag" else BIPARTITE_SHAPES
    for role in roles:
        fill, line = ROLE_COLORS[role]
        fill = role_fill or fill
        rows.append(f'<TR><TD BGCOLOR="{fill}" COLOR="{line}" BORDER="1" WIDTH="18"> </TD>'
                    f'<TD ALIGN="LEFT">{html(ROLE_TEXT[role])} '
                    f'<FONT POINT-SIZE="8" COLOR="#777777">({shapes[role]})</FONT></TD></TR>')
    for op, fill in ops or ():
        rows.append(f'<TR><TD BGCOLOR="{fill}" BORDER="1" WIDTH="18"> </TD>'
                    f'<TD ALIGN="LEFT">{html(op, 32)}</TD></TR>')
    if highlighted is not None:
        rows.append(f'<TR><TD BGCOLOR="#ffffff" COLOR="{HIGHLIGHT_COLOR}" BORDER="2" WIDTH="18"> </TD>'
                    f'<TD ALIGN="LEFT">{html(highlighted, 90)}</TD></TR>')
    rows.extend(extra_rows)
    return ('<<TABLE BORDER="1" COLOR="#999999" CELLBORDER="0" CELLSPACING="3" CELLPADDING="2">'
            + "".join(rows) + "</TABLE>>")


# ---------------------------------------------------------------- overlays

# matplotlib's viridis sampled at 17 evenly spaced points: perceptually uniform, ordered in
# lightness (so the order of the numbers survives greyscale print) and readable by the colour-blind.
VIRIDIS = ("#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e",
           "#21918c", "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219",
           "#fde725")
# A node with no number on an overlaid picture: light and colourless, outside the scale.
NEUTRAL_FILL = "#f4f4f4"
OUTLINE_COLOR = "#ff2a00"


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def sequential_color(t: float) -> str:
    """The colour at ``t`` in [0, 1] of the overlay scale (viridis: dark purple at 0, yellow at 1).

    Linear interpolation between the 17 samples in sRGB; ``t`` is clipped to [0, 1].

    Example:
        >>> sequential_color(0.0), sequential_color(1.0)
        ('#440154', '#fde725')
    """
    t = min(max(float(t), 0.0), 1.0) * (len(VIRIDIS) - 1)
    i = min(int(t), len(VIRIDIS) - 2)
    f = t - i
    a, b = _rgb(VIRIDIS[i]), _rgb(VIRIDIS[i + 1])
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))


def is_dark(color: str) -> bool:
    """Whether black text would be hard to read on ``color`` (relative luminance below 0.3)."""
    def linear(c: int) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = map(linear, _rgb(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.3


def colorbar_rows(title: str, ticks: list[str], *, cells: int = 12, notes: list[str] = (),
                  outline: str | None = None) -> list[str]:
    """Legend rows of an overlay: its title, a colour bar of ``cells`` cells with ``ticks`` under it
    (evenly spaced, first at the low end), a neutral swatch for nodes without a number, ``notes``
    (already plain text) and, with ``outline``, a row explaining the outlined nodes."""
    bar = "".join(f'<TD BGCOLOR="{sequential_color(i / (cells - 1))}" WIDTH="14" HEIGHT="14"> </TD>'
                  for i in range(cells))
    span, extra = divmod(cells, len(ticks))
    labels = []
    for i, tick in enumerate(ticks):
        align = "LEFT" if i == 0 else "RIGHT" if i == len(ticks) - 1 else "CENTER"
        width = span + (extra if i == len(ticks) - 1 else 0)
        labels.append(f'<TD COLSPAN="{width}" ALIGN="{align}"><FONT POINT-SIZE="9">{html(tick, 20)}</FONT></TD>')
    table = ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0">'
             f'<TR>{bar}</TR><TR>{"".join(labels)}</TR></TABLE>')
    rows = [f'<TR><TD COLSPAN="2" ALIGN="LEFT"><B>{html(title, 80)}</B></TD></TR>',
            f'<TR><TD COLSPAN="2">{table}</TD></TR>',
            f'<TR><TD BGCOLOR="{NEUTRAL_FILL}" BORDER="1" WIDTH="18"> </TD>'
            f'<TD ALIGN="LEFT">no value</TD></TR>']
    rows += [f'<TR><TD COLSPAN="2" ALIGN="LEFT"><FONT POINT-SIZE="9">{html(note, 90)}</FONT></TD></TR>'
             for note in notes]
    if outline is not None:
        rows.append(f'<TR><TD BGCOLOR="#ffffff" COLOR="{OUTLINE_COLOR}" BORDER="3" WIDTH="18"> </TD>'
                    f'<TD ALIGN="LEFT">{html(outline, 90)}</TD></TR>')
    return rows
