"""Program -> ONNX ModelProto, through the mapping table of :mod:`._table`."""

from __future__ import annotations

import functools
import os
from importlib import metadata
from typing import Any

import numpy as np

from ..errors import AutogradDagError
from ..primitives.registry import PRIMITIVES
from ..program import Program, trace
from ._build import Builder, Value, sanitize
from ._table import RULES, UNSUPPORTED

# The opset the exporter writes by default: ONNX Runtime 1.17+ runs it, and
# every operator the table uses has its current definition there.
DEFAULT_OPSET = 21
MIN_OPSET = 18  # reductions take their axes as an input from opset 18 on


class OnnxExportError(AutogradDagError):
    """A program cannot be written as ONNX (an unsupported primitive, dtype or opset)."""


class UnsupportedPrimitiveError(OnnxExportError):
    """The program uses primitives without an ONNX mapping; ``missing`` lists them."""

    def __init__(self, message: str, missing: list[str]):
        super().__init__(message)
        self.missing = list(missing)


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


def _check_dtypes(program: Program) -> None:
    bad = sorted({str(n.dtype) for n in program.nodes if n.dtype not in _ONNX_DTYPES})
    if bad:
        raise OnnxExportError(f"onnx.export: program '{program.name}' has values of dtype {', '.join(bad)}, "
                              f"which ONNX cannot hold (float16/32/64, integers and bool can)")


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


def to_model(program: Program, *, opset: int = DEFAULT_OPSET, doc: str = "") -> Any:
    """Translate ``program`` into an ONNX ModelProto (nothing is written, nothing is evaluated)."""
    onnx = require_onnx()
    if not MIN_OPSET <= opset <= onnx.defs.onnx_opset_version():
        raise OnnxExportError(f"onnx.export: opset {opset} is not available; use {MIN_OPSET}.."
                              f"{onnx.defs.onnx_opset_version()} (default {DEFAULT_OPSET})")
    _check_supported(program)
    _check_dtypes(program)
    helper = onnx.helper
    b = Builder(onnx)
    values: dict[int, Value] = {}
    graph_inputs = []
    # Program names first, so that intermediates never take them.
    out_names = {}
    for pos, k in enumerate(program.outputs):
        node = program.nodes[k]
        base = node.name if node.name and k not in program.inputs else (
            "output" if len(program.outputs) == 1 else f"output_{pos}")
        out_names[pos] = b.fresh(base)
    for pos, k in enumerate(program.inputs):
        node = program.nodes[k]
        name = b.fresh(node.name or f"input_{pos}")
        values[k] = Value(name, node.shape, node.dtype)
        graph_inputs.append(helper.make_tensor_value_info(name, b.tensor_type(node.dtype), list(node.shape)))
    for node in program.nodes:
        if node.index in values:
            continue
        if node.prim is None:
            value = np.asarray(node.value, dtype=node.dtype)
            name = b.const(value, name=b.fresh(node.name or f"const_{node.index}"))
            values[node.index] = Value(name, node.shape, node.dtype)
            continue
        b.prefix = f"{node.op}{node.index}"
        args = [values[p] for p in node.parents]
        out = RULES[node.op](b, node, args)
        values[node.index] = Value(out, node.shape, node.dtype)
    graph_outputs = []
    for pos, k in enumerate(program.outputs):
        node = program.nodes[k]
        name = out_names[pos]
        b.op("Identity", [values[k]], outputs=[name])
        graph_outputs.append(helper.make_tensor_value_info(name, b.tensor_type(node.dtype), list(node.shape)))
    graph = helper.make_graph(b.nodes, sanitize(program.name), graph_inputs, graph_outputs, b.initializers,
                              doc_string=doc)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="autograd_dag", producer_version=_version())
    model.ir_version = min(model.ir_version, 10)  # what ONNX Runtime 1.17+ reads
    return model


@functools.lru_cache(maxsize=None)
def _version() -> str:
    try:
        return metadata.version("autograd-dag")
    except Exception:  # noqa: BLE001 - a missing distribution only leaves the field generic
        return "0"


def export(program_or_fn, *example_args, path: str | os.PathLike | None = None, opset: int = DEFAULT_OPSET,
           name: str | None = None, check: bool = True):
    """A :class:`Program` (or a function traced on example arguments) as an ONNX ``ModelProto``.

    Every primitive is written with standard ONNX operators (one mapping table,
    :data:`autograd_dag.onnx.RULES`); inputs, outputs and constants keep the
    program's names. A primitive with no mapping raises
    :class:`UnsupportedPrimitiveError` naming every missing one, before
    anything is written. With ``path`` the model is also saved there; with
    ``check`` it passes ``onnx.checker.check_model(full_check=True)`` first.
    Shapes: the model's inputs and outputs have the program's shapes and dtypes
    (float32 and float64 both; integer and bool inputs too).

    Example (needs the ``onnx`` package; not run as a doctest)::

        import numpy as np, autograd_dag as ad
        model = ad.onnx.export(lambda x, w: ad.tanh(x @ w), np.ones((2, 3)), np.ones((3, 4)))
        [i.name for i in model.graph.input]   # ['x', 'w']
    """
    onnx = require_onnx()
    program = as_program(program_or_fn, example_args, name)
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
