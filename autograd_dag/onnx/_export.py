"""Program -> ONNX ModelProto, through the mapping table of :mod:`._table`."""

from __future__ import annotations

import copy
import functools
import os
from importlib import metadata
from typing import Any

import numpy as np

from ..primitives.registry import PRIMITIVES
from ..jitting import trace
from ..program import Program
from ._build import AROUND_DTYPES, NARROW_FLOATS, Builder, SymDim, Value, cast_around, sanitize
from ._dynamic import dynamic_plan, first_difference
from ._errors import OnnxExportError, UnsupportedPrimitiveError
from ._table import RULES, UNSUPPORTED

# The opset the exporter writes by default: ONNX Runtime 1.17+ runs it, and
# every operator the table uses has its current definition there.
DEFAULT_OPSET = 21
MIN_OPSET = 18  # reductions take their axes as an input from opset 18 on


def require_onnx():
    """The ``onnx`` module, or a library error saying how to install it."""
    try:
        import onnx  # the optional dependency is looked up only when export or load is called
    except ImportError:
        raise OnnxExportError("autograd_dag.onnx needs the 'onnx' package: "
                              "pip install 'autograd-dag[onnx]' (or pip install onnx onnxruntime)") from None
    return onnx


def supported_primitives() -> list[str]:
    """Names of the primitives the exporter maps to ONNX operators, sorted.

    Shapes: none (a list of names). Example:
        >>> import autograd_dag as ad
        >>> "conv2d" in ad.onnx.supported_primitives(), "svd" in ad.onnx.supported_primitives()
        (True, False)
    """
    return sorted(n for n in PRIMITIVES if n in RULES)


def unsupported_primitives() -> dict[str, str]:
    """Registered primitives with no ONNX mapping, each with the reason.

    Shapes: none (a dict of names). Example:
        >>> import autograd_dag as ad
        >>> ad.onnx.unsupported_primitives()["inv"]
        'ONNX has no matrix inverse operator'
    """
    return {n: UNSUPPORTED.get(n, "no ONNX mapping has been written for it")
            for n in sorted(PRIMITIVES) if n not in RULES}


def _check_supported(program: Program) -> None:
    missing = sorted({n.op for n in program.nodes if n.prim is not None and n.op not in RULES})
    if missing:
        reasons = "; ".join(f"{m} ({UNSUPPORTED.get(m, 'no ONNX mapping')})" for m in missing)
        raise UnsupportedPrimitiveError(
            f"onnx.export: program '{program.name}' uses {len(missing)} primitive(s) with no ONNX "
            f"operator: {reasons}. Supported: {len(RULES)} primitives (ad.onnx.supported_primitives())",
            missing)


_ONNX_DTYPES = {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32,
                                      np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_)}
# The ml_dtypes formats ONNX holds (bfloat16, float8, float4, int4, int2) with the first opset whose
# operators take them (before it, even Cast/Identity refuse them); str and object values are ONNX strings.
_NARROW_OPSET = {"bfloat16": 13, "float8_e4m3fn": 19, "float8_e4m3fnuz": 19, "float8_e5m2": 19,
                 "float8_e5m2fnuz": 19, "int4": 21, "uint4": 21, "float4_e2m1fn": 23, "float8_e8m0fnu": 24,
                 "int2": 25, "uint2": 25}


def _needed_opset(dtype: np.dtype) -> int | None:
    """The first opset that holds ``dtype``; None when the exporter cannot write it."""
    if dtype in _ONNX_DTYPES or dtype.kind in "OU":
        return MIN_OPSET
    return _NARROW_OPSET.get(dtype.name)


def _check_dtypes(program: Program, onnx, opset: int | None) -> int:
    """The opset to write (``opset``, or the default raised to what the program's dtypes need)."""
    dtypes = {n.dtype for n in program.nodes}
    bad = sorted((d for d in dtypes if _needed_opset(d) is None), key=str)
    if bad:
        # ONNX has complex types, but not the exporter's operators on them.
        def has(dtype) -> bool:
            try:
                onnx.helper.np_dtype_to_tensor_dtype(dtype)
                return True
            except (KeyError, TypeError, ValueError):
                return False
        which = "; ".join(f"dtype {d} ({'ONNX has' if has(d) else 'ONNX has no tensor type for it'})"
                          for d in bad)
        raise OnnxExportError(f"onnx.export: program '{program.name}' has values of {which}: autograd_dag "
                              f"does not support exporting these dtypes (it exports bool, integers down to "
                              f"int2, floats from float4 to float64, and strings)")
    need, which = max((_needed_opset(d), str(d)) for d in dtypes) if dtypes else (MIN_OPSET, "")
    if opset is None:
        return max(DEFAULT_OPSET, need)
    if opset < need:
        raise OnnxExportError(f"onnx.export: program '{program.name}' has values of dtype {which}, which ONNX "
                              f"holds from opset {need} on; opset {opset} was asked for")
    return opset


def as_program(program_or_fn, example_args, name=None) -> Program:
    if isinstance(program_or_fn, Program):
        if example_args:
            raise OnnxExportError("onnx.export: example arguments are for a function; a Program already "
                                  "has its input shapes")
        return program_or_fn
    if callable(program_or_fn):
        if not example_args:
            raise OnnxExportError("onnx.export: a function needs example arguments to be traced on")
        return trace(program_or_fn, *example_args, name=name)
    raise OnnxExportError(f"onnx.export: expected a Program or a function, got {type(program_or_fn).__name__}")


def to_model(program: Program, *, opset: int | None = None, doc: str = "") -> Any:
    """Translate ``program`` into an ONNX ModelProto (nothing is written, nothing is evaluated)."""
    return build_model(program, opset=opset, doc=doc)


def build_model(program: Program, *, opset: int | None = None, doc: str = "", shapes=None, dims=None) -> Any:
    """:func:`to_model`, with dynamic axes: ``shapes[k]`` is node k's shape with :class:`SymDim` sizes
    and ``dims`` maps each symbol to (input position, axis) its runtime size is read from."""
    onnx = require_onnx()
    if opset is not None and not MIN_OPSET <= opset <= onnx.defs.onnx_opset_version():
        raise OnnxExportError(f"onnx.export: opset {opset} is not available; use {MIN_OPSET}.."
                              f"{onnx.defs.onnx_opset_version()} (default {DEFAULT_OPSET})")
    _check_supported(program)
    opset = _check_dtypes(program, onnx, opset)
    helper = onnx.helper
    b = Builder(onnx)
    values: dict[int, Value] = {}
    graph_inputs = []
    nodes = program.nodes
    if shapes is not None:
        nodes = [copy.copy(n) for n in nodes]
        for n in nodes:
            n.shape = shapes[n.index]
    # Program names first, so that intermediates never take them.
    out_names = {}
    for pos, k in enumerate(program.outputs):
        node = nodes[k]
        base = node.name if node.name and k not in program.inputs else (
            "output" if len(program.outputs) == 1 else f"output_{pos}")
        out_names[pos] = b.fresh(base)
    for pos, k in enumerate(program.inputs):
        node = nodes[k]
        name = b.fresh(node.name or f"input_{pos}")
        values[k] = Value(name, node.shape, node.dtype)
        graph_inputs.append(helper.make_tensor_value_info(name, b.tensor_type(node.dtype), _dims(node.shape)))
    b.dims = {sym: (values[program.inputs[pos]].name, axis) for sym, (pos, axis) in (dims or {}).items()}
    for node in nodes:
        if node.index in values:
            continue
        if node.prim is None:
            value = np.asarray(node.value, dtype=node.dtype)
            if any(isinstance(d, SymDim) for d in node.shape):
                name = _expanded_constant(b, node, value)
            else:
                name = b.const(value, name=b.fresh(node.name or f"const_{node.index}"))
            values[node.index] = Value(name, node.shape, node.dtype)
            continue
        b.prefix = f"{node.op}{node.index}"
        args = [values[p] for p in node.parents]
        if node.op != "astype" and any(v.dtype.name in NARROW_FLOATS for v in args + [node]):
            out = _on_float32(b, node, args)
        else:
            out = RULES[node.op](b, node, args)
        values[node.index] = Value(out, node.shape, node.dtype)
    graph_outputs = []
    for pos, k in enumerate(program.outputs):
        node = nodes[k]
        name = out_names[pos]
        b.op("Identity", [values[k]], outputs=[name])
        graph_outputs.append(helper.make_tensor_value_info(name, b.tensor_type(node.dtype), _dims(node.shape)))
    graph = helper.make_graph(b.nodes, sanitize(program.name), graph_inputs, graph_outputs, b.initializers,
                              doc_string=doc)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="autograd_dag", producer_version=_version())
    if any(n.dtype.name in AROUND_DTYPES for n in program.nodes):
        cast_around(onnx, model)
    # IR 10 is what ONNX Runtime 1.17+ reads; the opsets of float4, float8e8m0 and int2 need later ones.
    model.ir_version = min(model.ir_version, max(10, helper.find_min_ir_version_for(model.opset_import)))
    return model


def _on_float32(b: Builder, node, args) -> str:
    """``node``'s rule on float32 in place of bfloat16/float8/float4, rounded back once: what ml_dtypes
    does for each operation (a rule of several ONNX nodes would otherwise round after each)."""
    wide = copy.copy(node)
    if node.dtype.name in NARROW_FLOATS:
        wide.dtype = np.dtype(np.float32)
    out = RULES[node.op](b, wide, [b.cast(a, np.float32) if a.dtype.name in NARROW_FLOATS else a for a in args])
    if wide.dtype == node.dtype:
        return out
    return RULES["astype"](b, node, [Value(out, node.shape, np.float32)])


def _dims(shape) -> list:
    """A value's shape for the model's signature: dynamic sizes by name (``dim_param``)."""
    return [d.label if isinstance(d, SymDim) else int(d) for d in shape]


def _expanded_constant(b: Builder, node, value: np.ndarray) -> str:
    """A constant whose shape follows dynamic axes: one slice of it, expanded to the runtime shape.

    Only a constant that repeats along those axes (an initial state of zeros,
    a broadcast row) has a value at another size; any other is refused.
    """
    axes = tuple(a for a, d in enumerate(node.shape) if isinstance(d, SymDim))
    row = value[tuple(slice(0, 1) if a in axes else slice(None) for a in range(value.ndim))]
    if not np.array_equal(np.broadcast_to(row, value.shape), value, equal_nan=value.dtype.kind in "fc"):
        a = next(a for a in axes if not np.array_equal(
            np.broadcast_to(value.take([0], axis=a), value.shape), value, equal_nan=value.dtype.kind in "fc"))
        dim = node.shape[a]
        sources = ", ".join(f"'{sym}' (axis {b.dims[sym][1]} of '{b.dims[sym][0]}')" for sym in dim.symbols)
        raise OnnxExportError(
            f"onnx.export: constant '{node.name or f'%{node.index}'}' (shape {tuple(int(d) for d in node.shape)}) "
            f"varies along its axis {a}, whose size follows the dynamic axis {sources}: its values at the "
            f"example's size say nothing of another size. Compute it from the inputs, or leave that axis fixed")
    name = b.const(row, name=b.fresh(f"{node.name or f'const_{node.index}'}_row"))
    return b.op("Expand", [name, b.ints(node.shape)], hint=node.name or f"const_{node.index}")


@functools.lru_cache(maxsize=None)
def _version() -> str:
    try:
        return metadata.version("autograd-dag")
    except Exception:  # noqa: BLE001 - a missing distribution only leaves the field generic
        return "0"


def export(program_or_fn, *example_args, path: str | os.PathLike | None = None, opset: int | None = None,
           name: str | None = None, check: bool = True, dynamic_axes: dict | None = None):
    """A :class:`Program` (or a function traced on example arguments) as an ONNX ``ModelProto``.

    Every primitive is written with standard ONNX operators (one mapping table,
    :data:`autograd_dag.onnx.RULES`); inputs, outputs and constants keep the
    program's names. A primitive with no mapping raises
    :class:`UnsupportedPrimitiveError` naming every missing one, before
    anything is written. With ``path`` the model is also saved there; with
    ``check`` it passes ``onnx.checker.check_model(full_check=True)`` first.
    Shapes: the model's inputs and outputs have the program's shapes and dtypes
    (float32 and float64 both; integer and bool inputs too; the ml_dtypes
    formats bfloat16, float8, float4, int4 and int2, and strings as object arrays).
    ``opset`` defaults to :data:`DEFAULT_OPSET`, raised where a dtype needs a
    later one (float4: 23, float8e8m0: 24, int2: 25).

    ``dynamic_axes`` (as ``torch.onnx.export`` takes it: ``{"x": {0: "batch"}}``,
    or ``{"x": [0]}``) makes those input axes, and every size inside the model
    that follows them (Reshape targets, outputs, constants repeated along the
    batch), the input's runtime size: a model traced at batch 8 serves batch 3.
    It traces the function again with each axis 2n + 1 long to find them, so it
    needs the function and its example arguments (or a program made by
    :func:`forward_program` / :func:`training_step_program`); a program whose
    operations or constants change with the size raises :class:`OnnxExportError`.

    Example (needs the ``onnx`` package; not run as a doctest)::

        import numpy as np, autograd_dag as ad
        model = ad.onnx.export(lambda x, w: ad.tanh(x @ w), np.ones((2, 3)), np.ones((3, 4)))
        [i.name for i in model.graph.input]   # ['x', 'w']
        served = ad.onnx.export(lambda x, w: ad.tanh(x @ w), np.ones((8, 3)), np.ones((3, 4)),
                                dynamic_axes={"x": {0: "batch"}})
        ad.onnx.run(served, np.ones((3, 3)), np.ones((3, 4)))[0].shape   # (3, 4)
    """
    onnx = require_onnx()
    program = as_program(program_or_fn, example_args, name)
    if dynamic_axes:
        model = _dynamic_model(program_or_fn, example_args, program, dynamic_axes, opset, name)
    else:
        model = to_model(program, opset=opset)
    if check:
        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception as exc:  # noqa: BLE001 - onnx raises several kinds; one library error here
            raise OnnxExportError(f"onnx.export: the model written for program '{program.name}' fails "
                                  f"onnx.checker: {exc}") from None
    if path is not None:
        tmp = f"{os.fspath(path)}.partial"
        onnx.save(model, tmp)
        os.replace(tmp, path)  # a failure leaves no half-written file at path
    return model


def _dynamic_model(program_or_fn, example_args, program: Program, dynamic_axes, opset: int | None, name):
    """The model with ``dynamic_axes``; the translations of the traces at two sizes must be one graph."""
    dims, shapes, others = dynamic_plan(program_or_fn, example_args, program, dynamic_axes, name)
    model = build_model(program, opset=opset, shapes=shapes, dims=dims)
    for sym, sizes, other, other_shapes in others:
        again = build_model(other, opset=opset, shapes=other_shapes, dims=dims)
        if again.graph != model.graph:
            raise OnnxExportError(
                f"onnx.export: with '{sym}' dynamic, the models written at '{sym}' = {sizes[0]} and {sizes[1]} "
                f"differ in {first_difference(model, again)}: that rule writes a size of the axis as a constant, "
                f"so the model would compute wrong values at another size; leave '{sym}' fixed (or export one "
                f"model per size)")
    return model
