"""Program passes: rewrite a program's node list into a smaller one computing the same outputs.

Common-subexpression elimination merges nodes that apply the same primitive,
with the same static parameters, to the same operands: a gradient program
recomputes ``tanh(x)`` or ``cos(x)`` once per use in the forward code, and
``jit`` would run each copy. Primitives are pure functions of their operands
and parameters, so the merge is exact. Constants are merged only when they
are the same array: two equal arrays may be changed apart later (a closure
constant is read at every call).

:func:`refuse_inputs_as_constants` is a check, not a rewrite: a program that
would reuse one call's data as a constant is refused.

The passes work on any nodes with ``index``, ``prim``, ``parents``,
``params``, ``value`` and ``op`` (a program's), so they sit below :mod:`program`.
"""

from __future__ import annotations

import copy
from typing import Any, Sequence

import numpy as np

from .errors import TracingError, located
from .execution import buffer_of


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
    merged = merged_into.__getitem__
    for node in nodes:
        k = node.index
        merged_into.append(k)
        if node.prim is None:
            continue
        key = (node.prim, tuple(map(merged, node.parents)), _params_key(node.params))
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


# Parameter values keyed by themselves and their exact type, without _value_key's general
# walk: nearly every parameter of a long program (an axis, a shape, a getitem's index) is
# one of these, and the general key cost a third of the pass on a 1,000-step LSTM's gradient.
_PLAIN = frozenset({int, str, bool, type(None)})


def _params_key(params: dict | None) -> tuple:
    """A hashable stand-in for static parameters: values by equality, arrays and other unhashables by identity."""
    if not params:
        return ()
    items = []
    for name, v in params.items():
        kind = type(v)
        if kind in _PLAIN or (kind is tuple and all(type(e) is int for e in v)):
            # The type too: 1, 1.0 and True are equal keys in a dict but not the same parameter.
            items.append((name, kind, v))
        else:
            items.append((name, _value_key(v)))
    if len(items) > 1:
        items.sort()  # the names differ, so only they are compared
    return tuple(items)


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


def refuse_inputs_as_constants(program, inputs: Sequence, what: str) -> None:
    """Raise :class:`TracingError` if a constant of ``program`` is an input's array (or a view of it).

    ``inputs``: the Tensors the program was traced with, in the order of
    ``program.inputs``. Such a constant was made from an input's value during
    tracing (``t.value`` fed back into an operation) and would hold this
    call's numbers on every later call. :func:`core.concrete` refuses such
    reads in the library and in numpy conversions; this catches the rest
    that share the input's memory.
    """
    by_buffer: dict[int, list] = {}
    for k, t in zip(program.inputs, inputs):
        by_buffer.setdefault(id(buffer_of(t.value)), []).append((k, t.value))
    input_nodes = set(program.inputs)
    for node in program.nodes:
        if node.prim is not None or node.index in input_nodes or not isinstance(node.value, np.ndarray):
            continue
        for k, array in by_buffer.get(id(buffer_of(node.value)), ()):
            if np.may_share_memory(node.value, array):
                user = next((n for n in program.nodes if node.index in n.parents), node)
                raise TracingError(
                    f"{what}: a constant of the program ({node.type_str()}, read by '{user.op}') holds the "
                    f"numbers of input {program.nodes[k].name!r}: it was read while tracing (t.value) and "
                    f"would be reused on every later call. Compute with the input through ad operations; "
                    f"for a fixed array, close over a copy{located(user.source)}")
