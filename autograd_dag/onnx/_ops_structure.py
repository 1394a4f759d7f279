"""ONNX operators that reshape, join, split or create arrays (static operands)."""

from __future__ import annotations

import numpy as np

from ..primitives import indexing, structure as st
from ..primitives.arrays import pad
from ._ops import OnnxImportError, handles, _shape, _ndim, _axes



@handles("Reshape")
def _reshape(c):
    x = c.arg(0)
    shape = [int(d) for d in c.static(1, "shape")]
    if not c.attr("allowzero", 0):
        shape = [_shape(x)[i] if d == 0 else d for i, d in enumerate(shape)]
    return st.reshape(x, tuple(shape))


@handles("Flatten")
def _flatten(c):
    x = c.arg(0)
    s = _shape(x)
    a = c.attr("axis", 1)
    a = a + len(s) if a < 0 else a     # in [-r, r]: -1 keeps the last axis apart
    return st.reshape(x, (int(np.prod(s[:a], dtype=np.int64)), int(np.prod(s[a:], dtype=np.int64))))


@handles("Squeeze", "Unsqueeze")
def _squeeze(c):
    x = c.arg(0)
    s = list(_shape(x))
    if c.node.op_type == "Squeeze":
        axes = _axes(c, len(s))
        keep = [d for i, d in enumerate(s) if not (d == 1 and (axes is None or i in axes))]
        return st.reshape(x, tuple(keep))
    axes = c.attr("axes")
    if axes is None:
        axes = c.static(1, "axes")
    n = len(s) + len(np.asarray(axes).reshape(-1))
    for a in sorted(int(a) % n for a in np.asarray(axes).reshape(-1)):
        s.insert(a, 1)
    return st.reshape(x, tuple(s))


@handles("Transpose")
def _transpose(c):
    x = c.arg(0)
    perm = c.attr("perm")
    return st.transpose(x, None if perm is None else tuple(perm))


@handles("Expand")
def _expand(c):
    x = c.arg(0)
    shape = np.broadcast_shapes(_shape(x), tuple(int(d) for d in c.static(1, "shape")))
    return st.broadcast_to(x, shape)


@handles("Concat")
def _concat(c):
    return indexing.concatenate([c.arg(i) for i in range(len(c.node.input))], axis=c.attr("axis"))


@handles("Shape")
def _shape_op(c):
    s = _shape(c.arg(0))
    # Opset 15's start/end (negative from the back, then clamped to [0, r]) are Python's slice bounds.
    return np.asarray(s[c.attr("start", 0):c.attr("end", len(s))], dtype=np.int64)


@handles("ConstantOfShape")
def _constant_of_shape(c):
    value = c.attr("value")
    fill = c.onnx.numpy_helper.to_array(value) if value is not None else np.zeros(1, np.float32)
    return np.full(tuple(int(d) for d in c.static(0, "shape")), fill.reshape(-1)[0], dtype=fill.dtype)


@handles("Constant")
def _constant(c):
    if "value" in c.attrs:
        return c.onnx.numpy_helper.to_array(c.attrs["value"])
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                       ("value_ints", np.int64)):
        if key in c.attrs:
            return np.asarray(c.attrs[key], dtype=dtype)
    raise OnnxImportError(f"onnx.load: Constant node '{c.node.name}' has an unsupported value attribute")


@handles("Pad")
def _pad(c):
    x = c.arg(0)
    mode = c.attr("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise OnnxImportError(f"onnx.load: Pad mode {mode!r} is not supported (constant, edge, reflect and "
                              f"wrap are)")
    if c.opset < 11:
        # Before opset 11 pads and value were attributes.
        pads, value = [int(p) for p in c.attr("pads")], c.attr("value", 0.0)
    else:
        pads, value = [int(p) for p in c.static(1, "pads")], c.static(2, "constant value")
    n = _ndim(x)
    axes = _axes(c, n, attr="__none__", index=3) or tuple(range(n))
    width = [(0, 0)] * n
    for k, a in enumerate(axes):
        width[a] = (pads[k], pads[k + len(axes)])
    if min(pads, default=0) < 0:
        # Negative pads remove entries. In constant mode cropping a side and padding the other commute.
        if mode != "constant":
            raise OnnxImportError(f"onnx.load: Pad with negative pads {pads} in mode {mode!r} is not supported "
                                  f"(constant mode crops)")
        x = indexing.getitem(x, tuple(slice(max(-b, 0), d - max(-e, 0)) for (b, e), d in zip(width, _shape(x))))
        width = [(max(b, 0), max(e, 0)) for b, e in width]
    if mode != "constant":
        # ONNX's edge, reflect and wrap are numpy's modes of the same names.
        return pad(x, width, mode)
    return pad(x, width, constant_values=0.0 if value is None else float(np.asarray(value).reshape(-1)[0]))
