"""ONNX gathers, slices, scatters and tensor products (Einsum, Gemm)."""

from __future__ import annotations

import numpy as np

from ..primitives.registry import PRIMITIVES
from ..primitives import elementwise as el, indexing, numeric, structure as st
from ..primitives.linalg import einsum, matmul
from ._ops import OnnxImportError, handles, _shape, _ndim


@handles("Gather")
def _gather(c):
    table, idx = c.arg(0), c.arg(1)
    return indexing.take(table, idx, c.attr("axis", 0) % _ndim(table))


@handles("GatherElements")
def _gather_elements(c):
    x = c.arg(0)
    return numeric.take_along_axis(x, c.arg(1), c.attr("axis", 0) % _ndim(x))


@handles("Slice")
def _slice(c):
    x = c.arg(0)
    s = _shape(x)
    if c.opset < 10:
        # Before opset 10 starts, ends and axes were attributes, and there were no steps.
        starts, ends, axes, steps = c.attr("starts"), c.attr("ends"), c.attr("axes"), None
    else:
        starts, ends = c.static(1, "starts"), c.static(2, "ends")
        axes, steps = c.static(3, "axes"), c.static(4, "steps")
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * len(s)
    for start, end, a, step in zip(starts, ends, axes, steps):
        a, start, end, step = int(a) % len(s), int(start), int(end), int(step)
        d = s[a]
        start = min(max(start + d if start < 0 else start, 0), d - (step < 0))
        if end < -d:
            end = None if step < 0 else 0
        else:
            end = min(end + d if end < 0 else end, d)
        index[a] = slice(start, end, step)
    return indexing.getitem(x, tuple(index))


@handles("ScatterND")
def _scatter_nd(c):
    data, idx, updates = c.arg(0), c.arg(1), c.arg(2)
    if c.attr("reduction", "none") != "add" or _shape(idx)[-1] != 1:
        raise OnnxImportError("onnx.load: ScatterND is supported with reduction='add' and one index "
                              "coordinate (indices of shape (..., 1))")
    idx = st.reshape(idx, _shape(idx)[:-1])
    added = indexing.take_add(updates, idx, _shape(data)[0], 0)
    return el.add(data, added)


@handles("ScatterElements")
def _scatter_elements(c):
    data, idx, updates = c.arg(0), c.arg(1), c.arg(2)
    if c.attr("reduction", "none") != "add":
        raise OnnxImportError("onnx.load: ScatterElements is supported with reduction='add'")
    axis = c.attr("axis", 0) % _ndim(data)
    return el.add(data, numeric.put_along_axis_add(updates, idx, _shape(data), axis))


@handles("Einsum")
def _einsum(c):
    args = [c.arg(i) for i in range(len(c.node.input))]
    dtype = np.dtype(args[0].dtype)
    if dtype.type.__module__.startswith("ml_dtypes") and dtype.name.startswith(("bfloat", "float")):
        # numpy has no einsum on bfloat16 (or float8): like onnx's reference, accumulate in float32
        # and round once.
        out = einsum(c.attr("equation").replace(" ", ""), *[el.astype(a, np.float32) for a in args])
        return el.astype(out, dtype)
    return einsum(c.attr("equation").replace(" ", ""), *args)


@handles("Det")
def _det(c):
    return PRIMITIVES["det"](c.arg(0))


@handles("Gemm")
def _gemm(c):
    a, b, bias = c.arg(0), c.arg(1), c.arg(2)
    if c.attr("transA", 0):
        a = st.transpose(a)
    if c.attr("transB", 0):
        b = st.transpose(b)
    out = matmul(a, b)
    if c.attr("alpha", 1.0) != 1.0:
        out = el.multiply(out, np.asarray(c.attr("alpha"), dtype=np.result_type(out.dtype)))
    if bias is not None:
        beta = c.attr("beta", 1.0)
        out = el.add(out, bias if beta == 1.0 else el.multiply(bias, beta))
    return out
