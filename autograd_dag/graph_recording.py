"""Recording a hand-built :class:`~autograd_dag.dag.Graph` whose vertices name primitives (``Program.from_graph``).

Each vertex is applied, in topological order, to its parents by the
primitive ``ops`` names for it; the Tensors recorded become the program as
any recording does (``Program.from_outputs``).
"""

from __future__ import annotations

import inspect
import sys
from typing import Callable

from .core import Primitive, Tensor, _recording_as, apply, check_operand_count
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
                out = _through_public_function(prim, operands, params.get(v, {}))
                if out is None:
                    check_operand_count(prim, operands, params.get(v, {}))
                    out = apply(prim, *operands, **params.get(v, {}))
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


def _positional_names(fn: Callable, n: int) -> list[str] | None:
    """The names of ``fn``'s first ``n`` parameters if each takes one positional argument, else None."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())[:n]
    except (TypeError, ValueError):
        return None
    if len(parameters) < n or any(q.kind not in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD) for q in parameters):
        return None
    return [q.name for q in parameters]


def _takes_any_number(fn: Callable) -> bool:
    """Whether ``fn``'s first parameter is ``*args``."""
    try:
        first = next(iter(inspect.signature(fn).parameters.values()), None)
    except (TypeError, ValueError):
        return False
    return first is not None and first.kind is first.VAR_POSITIONAL


def _through_public_function(prim: Primitive, operands: list, params: dict) -> Tensor | None:
    """``prim`` applied by its public function (``sum`` for the primitive ``sum``), or None.

    The public function turns parameters as a user writes them (``axis=-1``,
    ``axis=None``, ``keepdims`` left out) into the form the primitive records and
    its derivative rules read (``axis=(1,)``, ``keepdims=False``); given to the
    primitive raw they computed the value but broke its gradient. Only a result
    that is this primitive applied to these operands is taken.
    """
    module_name = getattr(prim.impl, "__module__", None) or ""
    if not module_name.startswith(__package__ + "."):
        return None  # a user's primitive: a function of that name in their module may be anything
    public = getattr(sys.modules.get(module_name), prim.name, None)
    if not callable(public) or public is prim.impl or isinstance(public, Primitive):
        return None
    # The parents must land on the same parameters in both: ad.concatenate(tensors, axis)
    # would read a second parent as its axis. A primitive taking any number of operands
    # (concatenate's *xs) is the public function given them as one list.
    if _takes_any_number(prim.impl):
        args = [list(operands)]
        if _positional_names(public, 1) is None:
            return None
    else:
        args = operands
        names = _positional_names(prim.impl, len(operands))
        if names is None or names != _positional_names(public, len(operands)):
            return None
    try:
        out = public(*args, **params)
    except TypeError as exc:  # its signature differs from the primitive's parameters: apply it raw
        if isinstance(exc, AutogradDagError):  # (the library's own, a user's mistake: say it)
            raise
        return None
    if (isinstance(out, Tensor) and out.prim is prim and out.parents is not None
            and len(out.parents) == len(operands) and all(a is b for a, b in zip(out.parents, operands))):
        return out
    return None
