"""Dynamic axes: a model traced at one batch size that serves any.

A program holds the sizes it was traced at. To learn which sizes follow a
dynamic axis, the function is traced again with that axis 2n + 1 long: a size
that changes in proportion to the axis is ``k × axis`` (a :class:`SymDim`),
written into the model as the input's runtime size (``Shape``) instead of a
constant. What a rule turns into constants of its own is checked the same way:
the models written from the two traces must be the same graph; one that is not
names the rule whose constants depend on the size, and nothing is exported.
The model itself is never run: two traces and their two translations are compared.
"""

from __future__ import annotations

import weakref
from typing import Callable

import numpy as np

from ..core import Tensor
from ..jitting import trace
from ..program import Program
from ._build import SymDim
from ._errors import OnnxExportError

# Programs made by forward_program / training_step_program: how to trace them again on new examples.
_RETRACE: "weakref.WeakKeyDictionary[Program, tuple[Callable[..., Program], tuple]]" = weakref.WeakKeyDictionary()


def remember_retrace(program: Program, retrace: Callable[..., Program], example_args) -> Program:
    """Record how to trace ``program`` again (``retrace(*args)``) and its example arguments; returns it."""
    _RETRACE[program] = (retrace, _arrays(example_args))
    return program


def _arrays(args) -> tuple:
    # A Tensor's numbers (np.asarray of one that requires a gradient is refused while recording).
    return tuple(a.value if isinstance(a, Tensor) else np.asarray(a) for a in args)


def _input_names(program: Program) -> list[str]:
    return [program.nodes[k].name or f"input_{pos}" for pos, k in enumerate(program.inputs)]


def _parse(program: Program, dynamic_axes) -> dict[str, list[tuple[int, int]]]:
    """{symbol: [(input position, axis), ...]}, checked against the program's inputs."""
    if not isinstance(dynamic_axes, dict):
        raise OnnxExportError(f"onnx.export: dynamic_axes must be a dict {{input name: {{axis: name}}}} (or "
                              f"{{input name: [axes]}}), got {type(dynamic_axes).__name__}")
    names = _input_names(program)
    symbols: dict[str, list[tuple[int, int]]] = {}
    for name, axes in dynamic_axes.items():
        if name not in names:
            raise OnnxExportError(f"onnx.export: dynamic_axes names '{name}', which is not an input of "
                                  f"program '{program.name}'; its inputs are {', '.join(map(repr, names))}")
        pos = names.index(name)
        shape = program.nodes[program.inputs[pos]].shape
        if isinstance(axes, (list, tuple)):
            axes = {a: f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}  # torch.onnx's names
        if not isinstance(axes, dict):
            raise OnnxExportError(f"onnx.export: dynamic_axes['{name}'] must be {{axis: name}} or a list of "
                                  f"axes, got {type(axes).__name__}")
        for axis, sym in axes.items():
            if not isinstance(axis, (int, np.integer)) or not -len(shape) <= axis < len(shape):
                raise OnnxExportError(f"onnx.export: dynamic_axes['{name}'] names axis {axis}, but '{name}' "
                                      f"has shape {tuple(shape)}")
            if not isinstance(sym, str) or not sym:
                raise OnnxExportError(f"onnx.export: dynamic_axes['{name}'][{axis}] must name the axis "
                                      f"(a string such as 'batch'), got {sym!r}")
            axis = int(axis) % len(shape)
            if shape[axis] == 0:
                raise OnnxExportError(f"onnx.export: axis {axis} of '{name}' is empty in the example "
                                      f"(shape {tuple(shape)}): trace on a non-empty example to make it dynamic")
            symbols.setdefault(sym, []).append((pos, axis))
    for sym, uses in symbols.items():
        sizes = {program.nodes[program.inputs[p]].shape[a] for p, a in uses}
        if len(sizes) > 1:
            where = ", ".join(f"axis {a} of '{names[p]}' ({program.nodes[program.inputs[p]].shape[a]})"
                              for p, a in uses)
            raise OnnxExportError(f"onnx.export: dynamic axis '{sym}' has different sizes in the example: {where}")
    return symbols


def _retrace_of(program_or_fn, example_args, program: Program, name):
    if isinstance(program_or_fn, Program):
        if program_or_fn not in _RETRACE:
            raise OnnxExportError(
                f"onnx.export: dynamic_axes need to trace the program again at another size, and program "
                f"'{program.name}' holds only the sizes it was traced at: export the function with its example "
                f"arguments instead, ad.onnx.export(fn, *example_args, dynamic_axes=...) (or a program made by "
                f"ad.onnx.forward_program / training_step_program)")
        return _RETRACE[program_or_fn]
    return (lambda *args: trace(program_or_fn, *args, name=name)), _arrays(example_args)


def _resized(args: tuple, uses, size: int) -> tuple:
    """The example arguments with the axes of one symbol resized to ``size`` (rows repeated cyclically)."""
    args = list(args)
    for pos, axis in uses:
        a = args[pos]
        args[pos] = np.take(a, np.arange(size) % a.shape[axis], axis=axis)
    return tuple(args)


def _same_structure(base: Program, other: Program, sym: str, sizes: tuple[int, int]) -> None:
    def differs(k, what):
        node = base.nodes[k]
        raise OnnxExportError(
            f"onnx.export: traced with '{sym}' = {sizes[1]} instead of {sizes[0]}, program '{base.name}' is not "
            f"the same program ({what} at node %{k}, {node.op}): its operations depend on that size, so one "
            f"model cannot serve both; leave the axis fixed"
            + (" or trace on an example where it is at least 2" if sizes[0] == 1 else ""))
    if len(base.nodes) != len(other.nodes) or base.inputs != other.inputs or base.outputs != other.outputs:
        k = next((i for i, (a, b) in enumerate(zip(base.nodes, other.nodes)) if a.op != b.op),
                 min(len(base.nodes), len(other.nodes)) - 1)
        differs(k, f"{len(other.nodes)} nodes instead of {len(base.nodes)}")
    for a, b in zip(base.nodes, other.nodes):
        if a.op != b.op or a.parents != b.parents or a.dtype != b.dtype or len(a.shape) != len(b.shape):
            differs(a.index, f"{b.op}{list(b.parents)} {b.dtype}{list(b.shape)} instead of "
                             f"{a.op}{list(a.parents)} {a.dtype}{list(a.shape)}")


def _symbolic_shapes(base: Program, others: dict, base_sizes: dict, new_sizes: dict) -> list[list[tuple]]:
    """For each program traced (the base, then one per symbol), node k's shape with SymDim sizes."""
    factors: list[list[tuple]] = []   # per node, per axis: (k, symbols) or None for a fixed size
    for node in base.nodes:
        per_axis = []
        for axis, size in enumerate(node.shape):
            follows = [sym for sym, prog in others.items() if prog.nodes[node.index].shape[axis] != size]
            for sym in follows:
                new = others[sym].nodes[node.index].shape[axis]
                if new * base_sizes[sym] != size * new_sizes[sym]:
                    raise OnnxExportError(
                        f"onnx.export: axis {axis} of node %{node.index} ({node.op}) is {size} when '{sym}' is "
                        f"{base_sizes[sym]} and {new} when it is {new_sizes[sym]}: not a multiple of '{sym}', "
                        f"so the model cannot compute it from the input's size; leave '{sym}' fixed")
            product = int(np.prod([base_sizes[s] for s in follows], dtype=np.int64))
            if follows and size % product:
                raise OnnxExportError(f"onnx.export: axis {axis} of node %{node.index} ({node.op}) is {size}, "
                                      f"not a whole multiple of {' × '.join(follows)} = {product}")
            per_axis.append((size // product, tuple(follows)) if follows else None)
        factors.append(per_axis)

    def shapes_of(program: Program) -> list[tuple]:
        return [tuple(SymDim(d, *f) if f is not None else d for d, f in zip(node.shape, per_axis))
                for node, per_axis in zip(program.nodes, factors)]
    return [shapes_of(base)] + [shapes_of(prog) for prog in others.values()]


def first_difference(base, other) -> str:
    """Where two translations of the same program differ: the initializer or node, and its rule."""
    b_init = {t.name: t for t in base.graph.initializer}
    o_init = {t.name: t for t in other.graph.initializer}
    for name, t in b_init.items():
        if o_init.get(name) != t:
            user = next((n for n in base.graph.node if name in n.input), None)
            return f"the constant '{name}'" + (f" read by ONNX node '{user.name}'" if user is not None else "")
    for a, b in zip(base.graph.node, other.graph.node):
        if a != b:
            return f"ONNX node '{a.name}' ({a.op_type})"
    return "the graph's signature"


def dynamic_plan(program_or_fn, example_args, program: Program, dynamic_axes, name: str | None):
    """What the export of ``program`` with ``dynamic_axes`` writes, and the traces to check it against.

    Returns ``(dims, shapes, others)``: ``dims`` maps each axis name to the
    (input position, axis) its size is read from, ``shapes[k]`` is node k's
    shape with :class:`SymDim` sizes, and ``others`` holds, per name, ``(name,
    (size, 2·size + 1), the program traced at 2·size + 1, its shapes)``. Raises
    :class:`OnnxExportError` when a size cannot follow the axes (the program
    changes with the size, or a size is no multiple of them).
    """
    symbols = _parse(program, dynamic_axes)
    retrace, args = _retrace_of(program_or_fn, example_args, program, name)
    base_sizes = {sym: program.nodes[program.inputs[uses[0][0]]].shape[uses[0][1]]
                  for sym, uses in symbols.items()}
    # Twice the size and one more: of another parity and scale, so that a size computed from the axis
    # by rounding (x[:n // 2]) changes with it too rather than matching at two neighbours.
    new_sizes = {sym: 2 * size + 1 for sym, size in base_sizes.items()}
    others = {}
    for sym, uses in symbols.items():
        try:
            other = retrace(*_resized(args, uses, new_sizes[sym]))
        except Exception as exc:  # noqa: BLE001 - the user's function at another size: one library error
            raise OnnxExportError(f"onnx.export: tracing '{program.name}' again with '{sym}' = {new_sizes[sym]} "
                                  f"(to find the sizes that follow it) raised {type(exc).__name__}: {exc}") from None
        _same_structure(program, other, sym, (base_sizes[sym], new_sizes[sym]))
        others[sym] = other
    shapes = _symbolic_shapes(program, others, base_sizes, new_sizes)
    dims = {sym: uses[0] for sym, uses in symbols.items()}
    return dims, shapes[0], [(sym, (base_sizes[sym], new_sizes[sym]), other, other_shapes)
                             for (sym, other), other_shapes in zip(others.items(), shapes[1:])]
