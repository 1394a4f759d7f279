"""Recording a hand-built :class:`~autograd_dag.dag.Graph` whose vertices name primitives (``Program.from_graph``).

Each vertex is applied, in topological order, to its parents by the
primitive ``ops`` names for it; the Tensors recorded become the program as
any recording does (``Program.from_outputs``).
"""

from __future__ import annotations

from .core import Primitive, Tensor, _recording_as
from .dag import Graph
from .errors import AutogradDagError, ProgramInputError
from .primitives.registry import PRIMITIVES


def record_graph(graph: Graph, ops: dict, inputs: dict, outputs=None, params: dict | None = None) -> tuple:
    """``(input Tensors, output Tensor or tuple of them)`` recorded from ``graph``: see ``Program.from_graph``.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> g = ad.Graph.from_edges([("x", "e")])
        >>> (x,), e = record_graph(g, {"e": "exp"}, {"x": np.zeros(2)})
        >>> e.prim.name, e.parents == (x,)
        ('exp', True)
    """
    params = params or {}
    tensors: dict = {}
    for v, value in inputs.items():
        if v not in graph:
            raise ProgramInputError(f"Program.from_graph: input {v!r} is not a vertex of the graph")
        if graph.parents(v):
            # Its in-edges would be dropped silently: the program would not have the graph's shape.
            raise ProgramInputError(f"Program.from_graph: input {v!r} has parents {graph.parents(v)} in "
                                    f"the graph; an input must be a root (give it a primitive in ops "
                                    f"instead, or remove its in-edges)")
        tensors[v] = Tensor(value, name=str(v))
    for v in [] if outputs is None else outputs:
        if v not in graph:
            raise ProgramInputError(f"Program.from_graph: output {v!r} is not a vertex of the graph")
    # A key naming no vertex (a typo) or an input was ignored: params={"S": {"axis": 0}} for
    # vertex "s" summed over every axis, a wrong value without a word.
    for what, table in (("ops", ops), ("params", params)):
        for v in table:
            if v not in graph or v in tensors:
                where = "an input (its value is given, not computed)" if v in tensors else "not a vertex of the graph"
                raise ProgramInputError(f"Program.from_graph: {what} names {v!r}, which is {where}; {what} "
                                        f"maps the graph's non-input vertices")
    with _recording_as(True):
        for v in graph.topological_order():
            if v in tensors:
                continue
            op = ops.get(v)
            if op is None:
                raise ProgramInputError(f"Program.from_graph: vertex {v!r} is neither an input nor "
                                        f"given a primitive in ops")
            prim = op if isinstance(op, Primitive) else PRIMITIVES.get(op)
            if prim is None:
                raise ProgramInputError(f"Program.from_graph: vertex {v!r} names unknown primitive {op!r}")
            parents = graph.parents(v)
            try:
                operands = [tensors[p] for p in parents]
                out = prim(*operands, **params.get(v, {}))   # (through its public function: see core)
            except AutogradDagError as exc:
                # The operation's message names shapes, not the vertex nor where its operands came from.
                raise ProgramInputError(
                    f"Program.from_graph: vertex {v!r} applies {prim.name} to its parents {parents} (its "
                    f"in-edges in insertion order; a Graph keeps one edge per pair of vertices, so an "
                    f"operand used twice needs a vertex of its own) and params {params.get(v, {})}: "
                    f"{exc}") from None
            out.name = str(v)
            tensors[v] = out
    outs = graph.leaves() if outputs is None else list(outputs)
    # One leaf (by default) gives a program returning one array, as trace() does.
    result = tensors[outs[0]] if outputs is None and len(outs) == 1 else tuple(tensors[v] for v in outs)
    return tuple(tensors[v] for v in inputs), result
