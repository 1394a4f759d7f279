"""ONNX reductions, normalisations and index-returning reductions (ArgMax, TopK, CumSum)."""

from __future__ import annotations

import numpy as np

from ..primitives.registry import PRIMITIVES
from ..primitives import elementwise as el, fused, indexing, numeric, reductions as red, structure as st
from ..primitives.arrays import flip, pad
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


def _reduction(fn, pre=None, post=None):
    """A Reduce* handler: ``post(fn(pre(x)))`` over the node's axes (ReduceL1 is sum after abs)."""
    def handler(c):
        x = c.arg(0)
        axes = _reduce_axes(c, x)
        y = x if pre is None else pre(x)
        if axes != ():
            keepdims = bool(c.attr("keepdims", 1))
            if fn in (red.max, red.min) and 0 in [_shape(x)[a] for a in (range(_ndim(x)) if axes is None else axes)]:
                return _empty_extremum(fn is red.max, x.dtype, _reduced_shape(_shape(x), axes, keepdims))
            y = fn(y, axes, keepdims=keepdims)
        out = y if post is None else post(y)
        # ONNX reduces in the input's type (numpy sums int32 into int64, averages ints into floats).
        return out if out.dtype == x.dtype else el.astype(out, x.dtype)
    return handler


def _reduced_shape(shape, axes, keepdims):
    axes = range(len(shape)) if axes is None else axes
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)


def _empty_extremum(is_max, dtype, shape):
    # The maximum of nothing is the identity of max: the lowest value of the type (-inf, False).
    if dtype.kind == "b":
        fill = not is_max
    elif dtype.kind in "iu":
        fill = np.iinfo(dtype).min if is_max else np.iinfo(dtype).max
    else:
        fill = -np.inf if is_max else np.inf
    return np.full(shape, fill, dtype=dtype)


for _op, _fn in _REDUCE.items():
    HANDLERS[_op] = _reduction(_fn)
HANDLERS["ReduceL1"] = _reduction(st.sum, pre=el.abs)
HANDLERS["ReduceSumSquare"] = _reduction(st.sum, pre=lambda x: el.multiply(x, x))
HANDLERS["ReduceLogSum"] = _reduction(st.sum, post=el.log)


@handles("Mean")
def _mean_variadic(c):
    out = c.arg(0)
    for i in range(1, len(c.node.input)):
        out = el.add(out, c.arg(i))
    n = len(c.node.input)
    return out if n == 1 else el.divide(out, np.asarray(n, dtype=out.dtype))


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


@handles("Softmax", "LogSoftmax", "Hardmax")
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
    if op_type == "Hardmax":
        hot = fused.argmax(x, axis)     # one-hot; ties go to the first index, as ONNX's
        return hot if hot.dtype == x.dtype else el.astype(hot, x.dtype)
    if op_type == "Softmax":
        return fused.softargmax(x, axis)
    # log_softargmax shifts by the maximum first: x − logsumexp(x) rounded the sum at x's magnitude
    # (−3.44043 for −3.44019 at x ~ 1e4 in float32).
    return log_softargmax(x, axis)


@handles("BatchNormalization")
def _batch_norm(c):
    x, scale, bias, mean, var = (c.arg(i) for i in range(5))
    training = c.attr("training_mode", 0) if c.opset >= 14 else len([o for o in c.node.output if o]) > 1
    if training and c.opset < 14:
        # Opsets 6-13 signal training by extra outputs (saved mean and inverse deviation), a different contract.
        raise OnnxImportError(f"onnx.load: BatchNormalization in training mode at opset {c.opset} (outputs "
                              f"saved_mean/saved_var) is not supported; opset 14's training_mode=1 is")
    shape = (-1,) + (1,) * (_ndim(x) - 2)
    eps = c.attr("epsilon", 1e-5)
    if not training:
        inv = el.divide(st.reshape(scale, shape), el.sqrt(el.add(st.reshape(var, shape), eps)))
        return el.add(el.multiply(el.subtract(x, st.reshape(mean, shape)), inv), st.reshape(bias, shape))
    # Training (opset 14+): normalise by the batch's statistics (over every axis but the channel's,
    # the variance the population one) and return the running statistics moved towards them.
    axes = (0,) + tuple(range(2, _ndim(x)))
    batch_mean = red.mean(x, axes, keepdims=True)
    centred = el.subtract(x, batch_mean)
    batch_var = red.mean(el.multiply(centred, centred), axes, keepdims=True)
    y = el.add(el.multiply(el.divide(centred, el.sqrt(el.add(batch_var, eps))), st.reshape(scale, shape)),
               st.reshape(bias, shape))
    momentum = c.attr("momentum", 0.9)
    running = [el.add(el.multiply(stat, momentum), el.multiply(st.reshape(batch, _shape(stat)), 1.0 - momentum))
               for stat, batch in ((mean, batch_mean), (var, batch_var))]
    return (y, *running)


@handles("ArgMax", "ArgMin")
def _argmax(c):
    x = c.arg(0)
    axis = c.attr("axis", 0) % _ndim(x)
    last = c.attr("select_last_index", 0)
    # The last of tied extrema is the first one of x reversed along the axis.
    hot = (fused.argmax if c.node.op_type == "ArgMax" else fused.argmin)(flip(x, axis) if last else x, axis)
    n = _shape(x)[axis]
    positions = np.arange(n, dtype=np.float64)[::-1 if last else 1].reshape(
        [n if i == axis else 1 for i in range(_ndim(x))])
    index = st.sum(el.multiply(hot, positions), axis, keepdims=bool(c.attr("keepdims", 1)))
    return el.astype(index, np.int64)


@handles("CumSum")
def _cumsum(c):
    x = c.arg(0)
    axis = int(np.asarray(c.static(1, "axis"))) % _ndim(x)
    reverse = bool(c.attr("reverse", 0))
    if c.attr("exclusive", 0):
        # Exclusive sums are inclusive sums of x shifted one place (a 0 in front) along the sum's
        # direction: exact, where subtracting x from the inclusive sums would round.
        n = _shape(x)[axis]
        width = [(0, 0)] * _ndim(x)
        width[axis] = (0, 1) if reverse else (1, 0)
        keep = [slice(None)] * _ndim(x)
        keep[axis] = slice(1, n + 1) if reverse else slice(0, n)
        x = indexing.getitem(pad(x, width), tuple(keep))
    out = PRIMITIVES["cumsum"](x, axis=axis, reverse=reverse)
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
    if x.dtype.kind in "iu" and x.dtype != np.int64:
        # Sort an int64 image of x that keeps its order (ONNX Runtime's TopK, which an exported argsort
        # becomes, has no kernel for uint64 and the small integer types). uint64 is shifted by 2**63
        # first: u + 2**63 wraps to u - 2**63 (mod 2**64), which int64 holds.
        key = el.astype(el.add(x, np.uint64(2**63)) if x.dtype == np.uint64 else x, np.int64)
    if c.attr("largest", 1):
        # -x wraps on integers (-min is min): -1 - x cannot (it is ~x, a bijection onto int64's range).
        key = el.subtract(np.int64(-1), key) if key.dtype.kind in "iu" else el.negative(x)
    order = numeric.argsort(key, axis)
    lead = (slice(None),) * axis
    order = indexing.getitem(order, lead + (slice(0, k),))
    return numeric.take_along_axis(x, order, axis), el.astype(order, np.int64)
