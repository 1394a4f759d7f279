"""Program passes: rewrite a program's node list into a smaller one computing the same outputs.

Common-subexpression elimination merges nodes that apply the same primitive,
with the same static parameters, to the same operands: a gradient program
recomputes ``tanh(x)`` or ``cos(x)`` once per use in the forward code, and
``jit`` would run each copy. Primitives are pure functions of their operands
and parameters, so the merge is exact. Constants are merged only when they
are the same array: two equal arrays may be changed apart later (a closure
constant is read at every call).

The pass works on any nodes with ``index``, ``prim``, ``parents``,
``params`` and ``op`` (a program's), so it sits below :mod:`program`.
"""

from __future__ import annotations

import copy
from typing import Any, Sequence


def common_subexpressions(nodes: Sequence, inputs: Sequence[int], outputs: Sequence[int]) -> tuple[list, dict]:
    """The nodes with each repeated computation kept once, renumbered; and the map old index -> new.

    A node is a repeat of an earlier one when both apply the same primitive,
    with equal static parameters, to the same (already merged) operands.
    Roots are never merged, and neither is an output node with another
    output (each output keeps its own array). Nodes that no output needs
    any more are dropped, except the ``inputs``. The map sends every kept or
    merged node to the new index of the node computing its value.
    Shapes: the outputs' shapes and values are unchanged.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x: ad.sin(x) * ad.sin(x), np.ones(2))
        >>> len(prog), len(prog.without_common_subexpressions())
        (4, 3)
    """
    is_output = set(outputs)
    seen: dict = {}
    merged_into: list[int] = []          # old index -> the old index computing its value
    for node in nodes:
        k = node.index
        merged_into.append(k)
        if node.prim is None:
            continue
        key = (node.prim, tuple(merged_into[p] for p in node.parents), _params_key(node.params))
        first = seen.get(key)
        if first is None or (k in is_output and first in is_output):
            seen.setdefault(key, k)
        else:
            merged_into[k] = first
    needed = _needed(nodes, [merged_into[k] for k in outputs], merged_into) | set(inputs)
    new_index: dict[int, int] = {}
    kept = []
    for node in nodes:
        if merged_into[node.index] != node.index or node.index not in needed:
            continue
        new = copy.copy(node)
        new.index = len(kept)
        new.parents = tuple(new_index[merged_into[p]] for p in node.parents)
        new_index[node.index] = new.index
        kept.append(new)
    return kept, {k: new_index[m] for k, m in enumerate(merged_into) if m in new_index}


def _needed(nodes: Sequence, starts: list[int], merged_into: list[int]) -> set[int]:
    """The (merged) nodes the outputs ``starts`` depend on: one backward pass over the node order."""
    needed = set(starts)
    for node in reversed(nodes):
        if node.index in needed:
            needed.update(merged_into[p] for p in node.parents)
    return needed


def _params_key(params: dict | None) -> tuple:
    """A hashable stand-in for static parameters: values by equality, arrays and other unhashables by identity."""
    if not params:
        return ()
    return tuple(sorted((name, _value_key(v)) for name, v in params.items()))


def _value_key(value: Any):
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_value_key(v) for v in value))
    if isinstance(value, slice):
        return (slice, _value_key(value.start), _value_key(value.stop), _value_key(value.step))
    if isinstance(value, float):
        return (float, repr(value))      # 0.0 and -0.0 are equal, but not the same parameter
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    # The type too: 1, 1.0 and True are equal keys in a dict but not the same parameter.
    return (type(value), value)
