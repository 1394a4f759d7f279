"""ONNX reductions, normalisations and index-returning reductions (ArgMax, TopK, CumSum)."""

from __future__ import annotations

import numpy as np

from ..primitives.registry import PRIMITIVES
from ..primitives import elementwise as el, fused, indexing, numeric, reductions as red, structure as st
from ..nn.functional import log_softargmax
from ._ops import HANDLERS, OnnxImportError, handles, _shape, _ndim, _axes


_REDUCE = {"ReduceSum": st.sum, "ReduceMean": red.mean, "ReduceMax": red.max, "ReduceMin": red.min,
           "ReduceProd": numeric.prod}


def _reduce_axes(c, x):
    """The axes a Reduce* node reduces: a tuple, None for every axis, () for none at all."""
    if _ndim(x) == 0:
        return ()   # a scalar reduces to itself, whatever the axes
    axes = _axes(c, _ndim(x))
    if axes is None or axes == ():
        # Omitted or empty axes reduce everything, unless noop_with_empty_axes (opset 13/18) says none.
        return () if c.attr("noop_with_empty_axes", 0) else None
    return axes


def _reduction(fn):
    def handler(c):
        x = c.arg(0)
        axes = _reduce_axes(c, x)
        if axes == ():
            return x
        out = fn(x, axes, keepdims=bool(c.attr("keepdims", 1)))
        # ONNX reduces in the input's type (numpy sums int32 into int64, averages ints into floats).
        return out if out.dtype == x.dtype else el.astype(out, x.dtype)
    return handler


for _op, _fn in _REDUCE.items():
    HANDLERS[_op] = _reduction(_fn)


@handles("ReduceL2")
def _reduce_l2(c):
    x = c.arg(0)
    axes = _reduce_axes(c, x)
    if axes == ():
        return el.abs(x)    # the square root of one square
    return PRIMITIVES["norm"](x, axis=tuple(range(_ndim(x))) if axes is None else axes,
                              keepdims=bool(c.attr("keepdims", 1)))


@handles("ReduceLogSumExp")
def _reduce_lse(c):
    x = c.arg(0)
    axes = _reduce_axes(c, x)
    if axes == ():
        return x    # the log of one exponential
    return fused.logsumexp(x, tuple(range(_ndim(x))) if axes is None else axes,
                           keepdims=bool(c.attr("keepdims", 1)))


@handles("Softmax", "LogSoftmax")
def _softmax(c):
    x = c.arg(0)
    if c.opset < 13:
        # Before opset 13: the input is coerced to 2-D at ``axis`` (default 1) and normalized over
        # everything from ``axis`` on, not over one axis.
        s = _shape(x)
        a = c.attr("axis", 1)
        a = a + len(s) if a < 0 else a
        flat = st.reshape(x, (int(np.prod(s[:a], dtype=np.int64)), int(np.prod(s[a:], dtype=np.int64))))
        return st.reshape(_normalized(c.node.op_type, flat, 1), s)
    return _normalized(c.node.op_type, x, c.attr("axis", -1))


def _normalized(op_type, x, axis):
    if op_type == "Softmax":
        return fused.softargmax(x, axis)
    # log_softargmax shifts by the maximum first: x − logsumexp(x) rounded the sum at x's magnitude
    # (−3.44043 for −3.44019 at x ~ 1e4 in float32).
    return log_softargmax(x, axis)


@handles("BatchNormalization")
def _batch_norm(c):
    if c.attr("training_mode", 0):
        raise OnnxImportError("onnx.load: BatchNormalization in training mode is not supported")
    x, scale, bias, mean, var = (c.arg(i) for i in range(5))
    shape = (-1,) + (1,) * (_ndim(x) - 2)
    inv = el.divide(st.reshape(scale, shape), el.sqrt(el.add(st.reshape(var, shape), c.attr("epsilon", 1e-5))))
    return el.add(el.multiply(el.subtract(x, st.reshape(mean, shape)), inv), st.reshape(bias, shape))


@handles("ArgMax", "ArgMin")
def _argmax(c):
    x = c.arg(0)
    axis = c.attr("axis", 0) % _ndim(x)
    if c.attr("select_last_index", 0):
        raise OnnxImportError(f"onnx.load: {c.node.op_type} with select_last_index=1 is not supported")
    hot = fused.argmax(x, axis) if c.node.op_type == "ArgMax" else fused.argmin(x, axis)
    n = _shape(x)[axis]
    positions = np.arange(n, dtype=np.float64).reshape([n if i == axis else 1 for i in range(_ndim(x))])
    index = st.sum(el.multiply(hot, positions), axis, keepdims=bool(c.attr("keepdims", 1)))
    return el.astype(index, np.int64)


@handles("CumSum")
def _cumsum(c):
    x = c.arg(0)
    if c.attr("exclusive", 0):
        raise OnnxImportError("onnx.load: CumSum with exclusive=1 is not supported")
    axis = int(np.asarray(c.static(1, "axis"))) % _ndim(x)
    out = PRIMITIVES["cumsum"](x, axis=axis, reverse=bool(c.attr("reverse", 0)))
    return out if out.dtype == x.dtype else el.astype(out, x.dtype)  # numpy sums int32 into int64


@handles("TopK")
def _topk(c):
    x = c.arg(0)
    # Before opset 10, K was an attribute.
    k = int(c.attr("k")) if c.opset < 10 else int(np.asarray(c.static(1, "K")).reshape(-1)[0])
    axis = c.attr("axis", -1) % _ndim(x)
    # Ties go to the lower index (ONNX's rule): a stable sort of a decreasing function of x, not
    # the reverse of x's sort.
    key = x
    if c.attr("largest", 1):
        # -x wraps on integers (unsigned: -3 is huge; signed: -min is min): max - x cannot, with
        # max = -1 for signed types (-1 - x is ~x, a bijection onto the type's range).
        key = el.subtract(np.asarray(-1 if x.dtype.kind == "i" else np.iinfo(x.dtype).max, x.dtype), x) \
            if x.dtype.kind in "iu" else el.negative(x)
    order = numeric.argsort(key, axis)
    lead = (slice(None),) * axis
    order = indexing.getitem(order, lead + (slice(0, k),))
    return numeric.take_along_axis(x, order, axis), el.astype(order, np.int64)
