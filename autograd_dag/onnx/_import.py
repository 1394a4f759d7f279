"""ONNX model -> Program, for the operators the library has primitives for.

Each ONNX node is replayed with the library's own operations on Tensors, so
the nodes are recorded exactly as user code would record them: the resulting
:class:`Program` executes on numpy, differentiates and renders. Operands that
must be static (shapes, axes, slice bounds, pads, K of TopK) have to be
initializers or ``Constant`` nodes.
"""

from __future__ import annotations

import os

import numpy as np

from ..core import Tensor
from ..errors import AutogradDagError
from ..program import Program
from ..tracing import program_input, tracing
from ..primitives import structure as st
from ._export import require_onnx
from ._ops import HANDLERS, OnnxImportError, _Ctx, _np_dtype
# Each module registers its operators' handlers in HANDLERS when imported.
from . import (_ops_elementwise, _ops_structure, _ops_reductions, _ops_indexing, _ops_conv,  # noqa: F401,E402
               _ops_recurrent, _ops_activations, _ops_resize, _ops_nn)


SUPPORTED_ONNX_OPS = sorted(HANDLERS)


def load(model_or_path, *, name: str | None = None) -> Program:
    """An ONNX model (a path, bytes or a ModelProto) as a :class:`Program`.

    Graph inputs become program inputs (same names, shapes and dtypes: they
    must be static), initializers become named constants, and every node is
    replayed with the library's operations, so the program executes on numpy,
    differentiates (``ad.grad_program``) and renders. An operator outside
    :data:`SUPPORTED_ONNX_OPS` raises :class:`OnnxImportError` listing every
    missing one. Shapes: as the model's inputs and outputs.

    Example (needs onnx; not run as a doctest)::

        prog = ad.onnx.load("model.onnx")
        ad.render(prog, view="bipartite").render("model")
    """
    onnx = require_onnx()
    source = "the bytes given" if isinstance(model_or_path, bytes) else repr(os.fspath(model_or_path)) \
        if isinstance(model_or_path, (str, os.PathLike)) else None
    try:
        if isinstance(model_or_path, onnx.ModelProto):
            model = model_or_path
        elif isinstance(model_or_path, bytes):
            model = onnx.load_from_string(model_or_path)
        else:
            model = onnx.load(os.fspath(model_or_path))
    except OSError as exc:
        raise OnnxImportError(f"onnx.load: cannot read {source}: {exc.strerror or exc}") from None
    except Exception as exc:  # protobuf's DecodeError and kin: not an ONNX file
        raise OnnxImportError(f"onnx.load: {source} is not an ONNX model ({type(exc).__name__}: "
                              f"{str(exc)[:200]})") from None
    if not model.graph.output:
        # Protobuf reads an empty (or foreign) file as an empty model without complaint.
        raise OnnxImportError(f"onnx.load: {source or 'the model'} is not an ONNX model with a graph: it has "
                              f"no outputs")
    graph = model.graph
    missing = sorted({n.op_type for n in graph.node if n.op_type not in HANDLERS}
                     | {f"{n.domain}:{n.op_type}" for n in graph.node if n.domain not in ("", "ai.onnx")})
    if missing:
        raise OnnxImportError(f"onnx.load: the model uses {len(missing)} operator(s) autograd_dag cannot "
                              f"express: {', '.join(missing)}")
    consts = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
    # Operators changed meaning across opsets (Softmax's axis, Clip's and Pad's attributes).
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                 onnx.defs.onnx_opset_version())
    inputs = []
    for vi in graph.input:
        if vi.name in consts:
            continue
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        if any(d is None for d in dims):
            raise OnnxImportError(f"onnx.load: input '{vi.name}' has a symbolic shape {dims}; only static "
                                  f"shapes can be imported")
        inputs.append(program_input(np.zeros(dims, dtype=_np_dtype(onnx, tt.elem_type)), vi.name))
    env: dict = {t.name: t for t in inputs}
    for key, value in consts.items():
        env[key] = Tensor(value, name=key)
    # The inputs hold placeholder zeros: numpy's warnings about their values (log 0) mean nothing.
    with tracing(inputs), np.errstate(all="ignore"):
        for node in graph.node:
            ctx = _Ctx(onnx, node, env, consts, opset)
            try:
                result = HANDLERS[node.op_type](ctx)
            except OnnxImportError:
                raise
            except AutogradDagError as exc:
                raise OnnxImportError(f"onnx.load: node '{node.name}' ({node.op_type}): {exc}") from None
            results = result if isinstance(result, tuple) else (result,)
            for out_name, r in zip(node.output, results):
                if not out_name:
                    continue
                if isinstance(r, np.ndarray):
                    consts[out_name] = r
                    r = Tensor(r, name=out_name)
                elif isinstance(r, Tensor) and not r.requires_grad and r.prim is None:
                    consts[out_name] = r.value
                env[out_name] = r
        outputs = []
        # By id, in a set: a scan of the inputs per output was O(inputs × outputs)
        # (22 s to load a model with 10,000 of each).
        input_ids = {id(i) for i in inputs}
        for vi in graph.output:
            t = env[vi.name]
            if not isinstance(t, Tensor) or id(t) in input_ids:
                t = st.identity(t)
            t.name = vi.name
            outputs.append(t)
    single = len(outputs) == 1
    return Program.from_outputs(tuple(inputs), outputs[0] if single else tuple(outputs),
                                name=name or graph.name or "model")
