"""What a view draws, before it becomes DOT: nodes, edges, and the scopes they sit in.

Both views (:mod:`.dag`, :mod:`.bipartite`) produce a :class:`Scene`; the
passes shared by the views (long-edge references, highlighting, clusters,
legend, emission) work on it without knowing which view made it.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..kinds import ProgramKind
from ..program import NodeKind, Program
from .axes import axes_shape_str
from .labels import bold, constant_str, html, name_html, plain, shape_str, small, source_str, type_str, value_str, params_str
from .collapse import Grouping


class VNode:
    """One Graphviz node: id, role, HTML-like label, cluster path, program nodes it stands for."""

    __slots__ = ("id", "role", "label", "scope", "members", "short", "tooltip", "attrs")

    def __init__(self, id: str, role: str, label: str, scope: tuple, members: tuple,
                 short: str = "", tooltip: str = "", attrs: dict | None = None):
        self.id = id
        self.role = role
        self.label = label
        self.scope = scope
        self.members = members
        self.short = short
        self.tooltip = tooltip
        self.attrs = attrs or {}


class VEdge:
    """One Graphviz edge; ``pairs`` are the program edges ``(i, j)`` it stands for."""

    __slots__ = ("src", "dst", "pairs", "label", "attrs")

    def __init__(self, src: str, dst: str, pairs: list, label: str | None = None,
                 attrs: dict | None = None):
        self.src = src
        self.dst = dst
        self.pairs = pairs
        self.label = label
        self.attrs = attrs or {}


class Scene:
    """Nodes and edges of one view of one program, in a deterministic order."""

    def __init__(self, program: Program, grouping: Grouping, view: str):
        self.program = program
        self.grouping = grouping
        self.view = view
        self.nodes: list[VNode] = []
        self.edges: list[VEdge] = []
        self._group_edges: dict[tuple, VEdge] = {}

    def add_node(self, node: VNode) -> None:
        self.nodes.append(node)

    def add_edge(self, src: str, dst: str, pair: tuple, label: str | None, merge: bool) -> None:
        """Add an edge; with ``merge`` one edge per (src, dst) collects every program edge."""
        if merge:
            edge = self._group_edges.get((src, dst))
            if edge is not None:
                edge.pairs.append(pair)
                if label and edge.label and label not in edge.label.split(" "):
                    edge.label += " " + label
                return
        edge = VEdge(src, dst, [pair], label)
        if merge:
            self._group_edges[(src, dst)] = edge
        self.edges.append(edge)


def crossing_edges(grouping: Grouping):
    """The program edges ``(p, j, i)`` a view draws (``p`` is argument ``i`` of ``j``): not from an
    inlined constant, not inside one group.

    Shared by both views, which differ only in what they name the two ends.
    """
    owner = grouping.owner
    for node in grouping.program.nodes:
        j = node.index
        if j in grouping.inlined:
            continue
        for i, p in enumerate(node.parents):
            if p in grouping.inlined or (owner[p] is not None and owner[p] == owner[j]):
                continue
            yield p, j, i


# Operations whose operands cannot be swapped: each edge into them is labelled
# with the operand it is, and the box shows the formula.
OPERANDS = {
    "subtract": (("a", "b"), "a \u2212 b"),
    "divide": (("a", "b"), "a / b"),
    "matmul": (("a", "b"), "a @ b"),
    "power": (("a", "b"), "a ** b"),
    "where": (("cond", "a", "b"), "cond ? a : b"),
    "greater": (("a", "b"), "a > b"),
    "greater_equal": (("a", "b"), "a \u2265 b"),
    "less": (("a", "b"), "a < b"),
    "less_equal": (("a", "b"), "a \u2264 b"),
}
COMMUTATIVE = {"add", "multiply", "maximum", "minimum", "equal", "not_equal", "vertex", "tie_weights"}


def operand_names(node) -> tuple | None:
    """The names of ``node``'s operands when their order matters (``("a", "b")`` for subtract), else None.

    Operations outside :data:`OPERANDS` with several operands are named after
    their implementation's parameters (``conv2d``: ``x``, ``w``).
    """
    if len(node.parents) < 2 or node.op in COMMUTATIVE:
        return None
    if node.op in OPERANDS:
        names = OPERANDS[node.op][0]
        return names if len(names) == len(node.parents) else None
    if node.prim is None:
        return None
    try:
        params = [q for q in inspect.signature(node.prim.impl).parameters.values()
                  if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    if len(params) < len(node.parents) or params[0].kind == params[0].VAR_POSITIONAL:
        return tuple(str(i) for i in range(len(node.parents)))
    return tuple(q.name for q in params[:len(node.parents)])


def output_role(program: Program, k: int) -> str:
    """The role of output ``k``: ``"gradient"`` for a derivative a gradient program returns, else ``"output"``.

    Read from the node's ``gradient_of``, which ``grad_program`` (and a gradient circuit) sets
    on each derivative it returns; the value returned beside them (``with_value=True``, a
    circuit's f) has none. Names are only shown: a user's ``dx/dy`` is no gradient.
    """
    return "output" if program.nodes[k].gradient_of is None else "gradient"


# The mark of a returned input, parameter or constant: an output's double border on its own shape.
RETURNED = {"peripheries": "2", "penwidth": "1.5"}
RETURNED_TEXT = "double border: returned by the program (an output)"

# An arithmetic circuit's gates are drawn with the book's symbols.
CIRCUIT_GATES = {"add": "+", "multiply": "\u00d7"}
CIRCUIT_KINDS = (ProgramKind.CIRCUIT, ProgramKind.GRADIENT_CIRCUIT)


class Labeller:
    """Label text of program nodes and groups, shared by both views."""

    def __init__(self, program: Program, grouping: Grouping, show_shapes: bool, show_dtypes: bool,
                 axes: dict | None = None, numbers: list[int] | None = None):
        self.program = program
        # The node numbers labels show: a scope's picture (render(scope=)) draws a program of its
        # own but keeps the numbers of the program it was cut from, so %k reads the same in both.
        self.numbers = numbers
        self.grouping = grouping
        self.show_shapes = show_shapes
        self.show_dtypes = show_dtypes
        self.outputs = set(program.outputs)
        # {node index: axis names} of a program recorded with named tensors (see render.axes).
        self.axes = axes or {}
        # A gradient circuit returns f, df/dx1, … (inputs in order): a derivative that is a variable
        # (d(x·y)/dx = y), a constant or another's node too (d(x + y)/dx = d(x + y)/dy = 1) has no name
        # of its own, and its box read "y" or "1" beside no word of which derivative it is.
        self.returned_as: dict[int, list[str]] = {}
        if program.kind is ProgramKind.GRADIENT_CIRCUIT:
            names = ["f"] + [f"df/d{program.nodes[i].name}" for i in program.inputs]
            for pos, k in enumerate(program.outputs[:len(names)]):
                self.returned_as.setdefault(k, []).append(names[pos])

    def _type(self, k: int, show_shapes: bool, show_dtypes: bool) -> str:
        """``float64[3,4]``, or ``float64 seq:3 × layer:4`` when node k's axes have names."""
        node = self.program.nodes[k]
        names = self.axes.get(k)
        if names is None or not show_shapes or len(names) != len(node.shape):
            return type_str(node.shape, node.dtype, show_shapes, show_dtypes)
        text = axes_shape_str(node.shape, names)
        return f"{np.dtype(node.dtype)} {text}" if show_dtypes else text

    def shape_text(self, k: int) -> str:
        """``[3,4]``, or ``seq:3 × layer:4`` when node k's axes have names."""
        node = self.program.nodes[k]
        names = self.axes.get(k)
        if names is None or len(names) != len(node.shape):
            return shape_str(node.shape)
        return axes_shape_str(node.shape, names)

    def role(self, k: int) -> str:
        node = self.program.nodes[k]
        # An input (parameter, constant) the program returns stays one: drawn as an output it was a
        # green box, read as an operation, and the legend had no input. Its double border says returned.
        if node.op in (NodeKind.INPUT, NodeKind.PARAMETER, NodeKind.CONSTANT):
            return node.op.value
        if k in self.outputs:
            return output_role(self.program, k)
        return "intermediate"

    def returned_root(self, k: int) -> dict | None:
        """The double border (an output's) of node k when it is a root the program returns, else None."""
        return dict(RETURNED) if k in self.outputs and not self.program.nodes[k].parents else None

    def number(self, k: int) -> int:
        """The number node k is labelled with (``%k``)."""
        return k if self.numbers is None else self.numbers[k]

    def info(self, k: int) -> str:
        """``%3 float64[3,4]`` in small grey text."""
        t = self._type(k, self.show_shapes, self.show_dtypes)
        return small(html(f"%{self.number(k)} {t}".rstrip()))

    def title(self, k: int) -> str:
        """The bold first line of a root (its name or value) or of a function (op and inlined constants)."""
        node = self.program.nodes[k]
        if node.op is NodeKind.INPUT:
            return f"<B>{name_html(node.name or f'x{k}')}</B>"
        if node.op is NodeKind.PARAMETER:
            return f"<B>{name_html(node.name or 'parameter')}</B>"
        if node.op is NodeKind.CONSTANT:
            text = f"<B>{name_html(constant_str(node.value))}</B>"
            return text + (f"<BR/><I>{name_html(node.name)}</I>" if node.name else "")
        if self.program.kind is ProgramKind.GRAPH:  # a hand-built Graph: its vertices are the labels
            return bold(name_html(node.name))
        inlined = self.grouping.inlined
        op = (CIRCUIT_GATES.get(node.op, node.op) if self.program.kind in CIRCUIT_KINDS else node.op)
        text = f"<B>{html(op, 40)}</B>"
        if any(p in inlined for p in node.parents):
            args = [value_str(self.program.nodes[p].value) if p in inlined else "\u00b7"
                    for p in node.parents]
            text += name_html("(" + ", ".join(args) + ")")  # wrapped, never cut: a value would be lost
        return text

    def params(self, k: int) -> str:
        """Static parameters in small text (and the formula of an operation whose operand order matters)."""
        node = self.program.nodes[k]
        lines = []
        if node.op in OPERANDS and operand_names(node):
            lines.append(small(html(OPERANDS[node.op][1], 60), "#333333"))
        if node.params:
            lines.append(small(html(params_str(node.params), 60), "#333333"))
        return "<BR/>".join(lines)

    def edge_label(self, p: int, j: int, i: int, shapes: bool) -> str | None:
        """The label of the edge from argument ``i`` (node ``p``) into node ``j``: operand name and/or shape."""
        names = operand_names(self.program.nodes[j])
        parts = [names[i]] if names else []
        if shapes:
            parts.append(self.shape_text(p))
        return " ".join(parts) or None

    def name(self, k: int) -> str:
        node = self.program.nodes[k]
        if k in self.returned_as:
            return f'<FONT POINT-SIZE="10"><I>{name_html(", ".join(self.returned_as[k]))}</I></FONT>'
        if node.name and (node.prim is not None or node.parents):   # (a circuit's drawn gate: no primitive)
            return f'<FONT POINT-SIZE="10"><I>{name_html(node.name)}</I></FONT>'
        return ""

    def short(self, k: int) -> str:
        node = self.program.nodes[k]
        return f"%{self.number(k)} {node.name or node.op}"

    def function_title(self, k: int) -> str:
        """The bold line of function f_k's box in the bipartite view."""
        node = self.program.nodes[k]
        if self.program.kind is ProgramKind.GRAPH and node.op is NodeKind.VERTEX:
            return "<B>f</B>" + (f"<SUB>{name_html(node.name)}</SUB>" if node.name else "")
        if self.program.kind is ProgramKind.GRAPH:  # a vertex naming a primitive
            return f"<B>{html(node.op, 40)}</B>"
        return self.title(k)

    def tooltip(self, k: int) -> str:
        node = self.program.nodes[k]
        if self.program.kind is ProgramKind.GRAPH:
            parents = ", ".join(str(self.program.nodes[p].name) for p in node.parents)
            return plain(f"%{k} {node.name}" + (f" <- {parents}" if parents else ""))
        parts = [f"%{self.number(k)} = {node.op}"]
        if node.parents:
            parts[0] += "(" + ", ".join(f"%{self.number(p)}" for p in node.parents) + ")"
        parts.append(f"{node.dtype}{list(node.shape)}")
        if node.name:
            parts.append(str(node.name))
        if node.scope:
            parts.append("/".join(node.scope))
        src = source_str(node.source)
        if src:
            parts.append(src)
        return plain("  ".join(parts))

    def group_outputs(self, gi: int) -> list[int]:
        """The program outputs inside group ``gi``, ascending."""
        return [k for k in self.grouping.groups[gi].members if k in self.outputs]

    def group_label(self, gi: int, mark_outputs: bool = False) -> str:
        """Title, op and parameter counts, in/out types; with ``mark_outputs`` the program outputs it holds
        (the DAG view, where no node of their own is drawn for them)."""
        grouping, program = self.grouping, self.program
        group = grouping.groups[gi]
        lines = [bold(name_html(group.title))]
        ops = sum(1 for k in group.members if program.nodes[k].parents)
        params = [k for k in group.members if program.nodes[k].op is NodeKind.PARAMETER]
        # Folded blocks are identical (that is why they fold) and the in/out types
        # are one block's: so are the counts, with the total beside them.
        n = group.count
        summary = f"{ops} ops" if n == 1 else f"{ops // n} ops each ({ops} in all)"
        if params:
            size = sum(int(_size(program.nodes[k].shape)) for k in params)
            summary += (f", {len(params)} params ({size:,} values)" if n == 1 else
                        f", {len(params) // n} params ({size // n:,} values) each")
        # How many program nodes the box stands for: the boxes of a picture add up to the program.
        lines.append(small(html(f"{len(group.members):,} nodes: {summary}")))
        ins = self._types(grouping.group_inputs(gi))
        outs = self._types(grouping.group_outputs(gi))
        if ins:
            lines.append(small(html("in: " + ins, 70)))
        if outs:
            lines.append(small(html("out: " + outs, 70)))
        held = self.group_outputs(gi) if mark_outputs else []
        if held:
            listed = ", ".join(f"%{self.number(k)} ({output_role(program, k)})" for k in held[:6])
            listed += ", \u2026" if len(held) > 6 else ""
            lines.append(small(html(f"returns {listed}", 70), "#222222"))
        return "<" + "<BR/>".join(line for line in lines if line) + ">"

    def group_tooltip(self, gi: int) -> str:
        group = self.grouping.groups[gi]
        path = "/".join(name for name, _ in group.path)
        if group.count > 1:
            path += f"..{group.last_name} ({group.count} folded)"
        return plain(f"{path}: {len(group.members)} nodes, "
                     f"%{self.number(group.members[0])}..%{self.number(group.members[-1])}")

    def _types(self, ks: list[int]) -> str:
        seen: list[str] = []
        for k in ks:
            t = self._type(k, True, self.show_dtypes)
            if t not in seen:
                seen.append(t)
        if len(seen) > 4:
            seen = seen[:4] + ["\u2026"]
        return ", ".join(seen)

    def scope_of(self, k: int) -> tuple:
        """The cluster path node k is drawn in (cut at the collapse depth)."""
        return self.grouping.cluster_of(k)


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def join_lines(*parts: str) -> str:
    """An HTML-like label from non-empty, already-escaped lines."""
    return "<" + "<BR/>".join(p for p in parts if p) + ">"
