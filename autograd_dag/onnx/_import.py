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
from ..primitives.registry import PRIMITIVES
from ..program import Program
from ..tracing import program_input, tracing
from ..primitives import (conv, elementwise as el, fused, indexing, mathfuncs, numeric, reductions as red,
                          structure as st)
from ..primitives.arrays import pad
from ..primitives.linalg import einsum, matmul
from ..nn.functional import log_softargmax
from ._export import require_onnx


class OnnxImportError(AutogradDagError):
    """An ONNX model uses an operator (or a form of one) the library cannot express."""


HANDLERS: dict = {}


def handles(*ops):
    def register(fn):
        for op in ops:
            HANDLERS[op] = fn
        return fn
    return register


class _Ctx:
    def __init__(self, onnx, node, env, consts, opset: int):
        self.onnx, self.node, self.env, self.consts, self.opset = onnx, node, env, consts, opset
        self.attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    def arg(self, i):
        if i >= len(self.node.input) or not self.node.input[i]:
            return None
        return self.env[self.node.input[i]]

    def static(self, i, what: str):
        """Input i as a numpy array known when the model is loaded."""
        if i >= len(self.node.input) or not self.node.input[i]:
            return None
        name = self.node.input[i]
        if name not in self.consts:
            raise OnnxImportError(f"onnx.load: node '{self.node.name or self.node.op_type}' ({self.node.op_type}) "
                                  f"takes its {what} from '{name}', which is computed; only constant "
                                  f"{what}s can be imported")
        return self.consts[name]

    def attr(self, key, default=None):
        value = self.attrs.get(key, default)
        return value.decode() if isinstance(value, bytes) else value


def _shape(x) -> tuple:
    return tuple(np.shape(x.value if isinstance(x, Tensor) else x))


def _ndim(x) -> int:
    return len(_shape(x))


def _np_dtype(onnx, tensor_type: int) -> np.dtype:
    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor_type))

# ----------------------------------------------------------- elementwise


_BINARY = {"Add": el.add, "Sub": el.subtract, "Mul": el.multiply,
           "Equal": el.equal, "Less": el.less, "LessOrEqual": el.less_equal, "Greater": el.greater,
           "GreaterOrEqual": el.greater_equal, "MatMul": matmul}
_UNARY = {"Neg": el.negative, "Exp": el.exp, "Log": el.log, "Sqrt": el.sqrt, "Tanh": el.tanh,
          "Sigmoid": el.logistic, "Relu": el.relu, "Sign": el.sign, "Abs": el.abs, "Sin": mathfuncs.sin,
          "Cos": mathfuncs.cos, "Floor": mathfuncs.floor, "Ceil": mathfuncs.ceil, "Reciprocal": mathfuncs.reciprocal,
          "Tan": mathfuncs.tan, "Asin": mathfuncs.arcsin, "Acos": mathfuncs.arccos, "Atan": mathfuncs.arctan,
          "Sinh": mathfuncs.sinh, "Cosh": mathfuncs.cosh, "Asinh": mathfuncs.arcsinh,
          "Acosh": mathfuncs.arccosh, "Atanh": mathfuncs.arctanh, "Round": mathfuncs.round,
          "IsNaN": mathfuncs.isnan, "Softplus": el.softplus}


def _binary(fn):
    def handler(c):
        x, y = c.arg(0), c.arg(1)
        return fn(x, y)
    return handler


def _unary(fn):
    return lambda c: fn(c.arg(0))


for _op, _fn in _BINARY.items():
    HANDLERS[_op] = _binary(_fn)
for _op, _fn in _UNARY.items():
    HANDLERS[_op] = _unary(_fn)


@handles("Pow")
def _pow(c):
    x, y = c.arg(0), c.arg(1)
    # Z has the base's type whatever the exponent's: numpy would promote float32 ** int64 to float64.
    if x.dtype.kind == "f":
        return el.power(x, y if y.dtype == x.dtype else el.astype(y, x.dtype))
    z = el.power(x, y)
    return z if z.dtype == x.dtype else el.astype(z, x.dtype)


@handles("Div")
def _div(c):
    x, y = c.arg(0), c.arg(1)
    dtype = np.result_type(x.dtype, y.dtype)
    if dtype.kind not in "iu":
        return el.divide(x, y)
    # Integer Div truncates toward zero and stays integer (C's x / y), where divide gives floats.
    q = _truncated_quotient(x, y, dtype)
    if dtype != np.int64:
        # Up to 32 bits the float64 quotient is exact; uint64 beyond 2**53 stays approximate
        # (its wrapping remainder cannot be corrected this way).
        return q
    # Beyond 2**53 the float64 quotient is off by up to ~2**11: correct it with exact (wrapping)
    # integer arithmetic, once by the quotient of the small remainder, then by one step.
    q = el.add(q, _truncated_quotient(el.subtract(x, el.multiply(q, y)), y, dtype))
    r = el.subtract(x, el.multiply(q, y))
    # The remainder must have x's sign and be smaller than |y|.
    ay, nonneg = el.abs(y), el.greater_equal(x, 0)
    up = el.where(nonneg, el.greater_equal(r, ay), el.greater(r, 0))
    down = el.where(nonneg, el.less(r, 0), el.less_equal(r, el.negative(ay)))
    step = el.multiply(el.sign(y), el.subtract(el.astype(up, dtype), el.astype(down, dtype)))
    return el.add(q, step)


def _truncated_quotient(x, y, dtype):
    info = np.iinfo(dtype)
    # float(2**63 - 1) is 2**63, which does not cast back: stay below it (the correction adds the rest).
    hi = float(info.max) if int(float(info.max)) <= info.max else np.nextafter(float(info.max), 0.0)
    return el.astype(mathfuncs.clip(mathfuncs.trunc(el.divide(x, y)), float(info.min), hi), dtype)


@handles("Identity")
def _identity(c):
    return c.arg(0)


@handles("Max", "Min")
def _max_min(c):
    fn = el.maximum if c.node.op_type == "Max" else el.minimum
    out = c.arg(0)
    for i in range(1, len(c.node.input)):
        out = fn(out, c.arg(i))
    return out


@handles("Sum")
def _sum_variadic(c):
    out = c.arg(0)
    for i in range(1, len(c.node.input)):
        out = el.add(out, c.arg(i))
    return out


@handles("Not")
def _not(c):
    return el.equal(c.arg(0), np.asarray(False))


@handles("And")
def _and(c):
    return el.multiply(c.arg(0), c.arg(1))


@handles("Or")
def _or(c):
    return el.add(c.arg(0), c.arg(1))


@handles("Xor")
def _xor(c):
    return el.not_equal(c.arg(0), c.arg(1))


@handles("IsInf")
def _isinf(c):
    x = c.arg(0)
    out = mathfuncs.isinf(x)
    if not c.attr("detect_positive", 1):
        out = el.multiply(out, el.less(x, 0.0))
    if not c.attr("detect_negative", 1):
        out = el.multiply(out, el.greater(x, 0.0))
    return out


# The float8 types' largest finite values. Casting to them (through ml_dtypes, which onnx requires)
# rounds to nearest even and gives NaN or ±Inf beyond the range, as the spec's saturate=0 table;
# saturate=1 (the default) wants ±this instead: clipping first gives it.
_FLOAT8_MAX = {"FLOAT8E4M3FN": 448.0, "FLOAT8E4M3FNUZ": 240.0, "FLOAT8E5M2": 57344.0, "FLOAT8E5M2FNUZ": 57344.0}


@handles("Cast")
def _cast(c):
    x, to = c.arg(0), c.attr("to")
    name = c.onnx.TensorProto.DataType.Name(to)
    if name.startswith("FLOAT8") and name not in _FLOAT8_MAX:
        # (FLOAT8E8M0 rounds by round_mode, 'up' by default: a cast to nearest would be wrong.)
        raise OnnxImportError(f"onnx.load: Cast to {name} is not supported")
    if name in _FLOAT8_MAX and c.attr("saturate", 1):
        if np.dtype(x.dtype) not in (np.float16, np.float32, np.float64):
            x = el.astype(x, np.float32)  # (exact for every value inside the float8 ranges)
        bound = np.asarray(_FLOAT8_MAX[name], x.dtype)
        x = mathfuncs.clip(x, -bound, bound)  # ±Inf to ±max too; NaN stays NaN
    return el.astype(x, _np_dtype(c.onnx, to))


@handles("Where")
def _where(c):
    return el.where(c.arg(0), c.arg(1), c.arg(2))


@handles("Mod")
def _mod(c):
    x, y = c.arg(0), c.arg(1)
    r = mathfuncs.mod(x, y)
    if not c.attr("fmod", 0):
        return r
    # fmod: the remainder takes x's sign.
    wrong = el.multiply(el.not_equal(r, 0.0), el.not_equal(el.less(r, 0.0), el.less(x, 0.0)))
    return el.where(wrong, el.subtract(r, y), r)


@handles("Clip")
def _clip(c):
    x, lo, hi = c.arg(0), c.arg(1), c.arg(2)
    if c.opset < 11:
        # Before opset 11 the bounds were attributes (defaults: the float range).
        lo, hi = c.attr("min", -np.inf), c.attr("max", np.inf)
    if lo is None and hi is None:
        return x    # an omitted bound is the type's own end: no bound clips nothing (clip refuses it)
    return mathfuncs.clip(x, lo, hi)


@handles("Dropout")
def _dropout(c):
    # Only the identity forms: a random drop baked into a loaded program would repeat one mask on
    # every run, and no conformance data can check a random output.
    if c.opset < 7:
        training, ratio = not c.attr("is_test", 0), c.attr("ratio", 0.5)
    elif c.opset < 12:
        training, ratio = False, 0.0  # (opsets 7-11: Dropout is the identity at inference)
    else:
        mode, r = c.static(2, "training_mode"), c.static(1, "ratio")
        training = mode is not None and bool(np.asarray(mode))
        ratio = 0.5 if r is None else float(np.asarray(r))
    if training and ratio != 0.0:
        raise OnnxImportError(f"onnx.load: Dropout with training_mode=True (ratio {ratio:g}) is not supported: "
                              f"its random drop cannot be imported; load the model for inference "
                              f"(training_mode=False) or add dropout with ad.nn.functional.dropout")
    return (c.arg(0), np.ones(_shape(c.arg(0)), dtype=np.bool_)) if len(c.node.output) > 1 else c.arg(0)


@handles("LeakyRelu")
def _leaky_relu(c):
    x = c.arg(0)
    return el.where(el.greater(x, 0.0), x, el.multiply(x, c.attr("alpha", 0.01)))


@handles("Elu")
def _elu(c):
    x = c.arg(0)
    return el.where(el.greater(x, 0.0), x, el.multiply(mathfuncs.expm1(x), c.attr("alpha", 1.0)))


@handles("HardSigmoid")
def _hard_sigmoid(c):
    x = c.arg(0)
    return mathfuncs.clip(el.add(el.multiply(x, c.attr("alpha", 0.2)), c.attr("beta", 0.5)), 0.0, 1.0)


@handles("BatchNormalization")
def _batch_norm(c):
    if c.attr("training_mode", 0):
        raise OnnxImportError("onnx.load: BatchNormalization in training mode is not supported")
    x, scale, bias, mean, var = (c.arg(i) for i in range(5))
    shape = (-1,) + (1,) * (_ndim(x) - 2)
    inv = el.divide(st.reshape(scale, shape), el.sqrt(el.add(st.reshape(var, shape), c.attr("epsilon", 1e-5))))
    return el.add(el.multiply(el.subtract(x, st.reshape(mean, shape)), inv), st.reshape(bias, shape))


@handles("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(c):
    x = c.arg(0)
    axes = tuple(range(2, _ndim(x)))
    return (red.mean if c.node.op_type == "GlobalAveragePool" else red.max)(x, axes, keepdims=True)


@handles("Split")
def _split(c):
    x = c.arg(0)
    axis = c.attr("axis", 0) % _ndim(x)
    sizes = c.attr("split")
    if sizes is None and len(c.node.input) > 1 and c.node.input[1]:
        sizes = c.static(1, "split sizes")
    n = _shape(x)[axis]
    if sizes is None:
        k = len(c.node.output)
        step = -(-n // k)
        sizes = [min(step, n - i * step) for i in range(k)]
    lead, out, start = (slice(None),) * axis, [], 0
    for size in sizes:
        out.append(indexing.getitem(x, lead + (slice(start, start + int(size)),)))
        start += int(size)
    return tuple(out)


@handles("Range")
def _range(c):
    start, limit, delta = (np.asarray(c.static(i, "bound")) for i in range(3))
    return np.arange(start, limit, delta).astype(np.result_type(start, limit, delta))


@handles("Size")
def _size(c):
    return np.asarray(int(np.prod(_shape(c.arg(0)), dtype=np.int64)), dtype=np.int64)


@handles("Erf")
def _unsupported_erf(c):
    raise OnnxImportError("onnx.load: Erf has no primitive in autograd_dag")

# -------------------------------------------------------------- structure


def _axes(c, ndim, *, attr="axes", index=1):
    axes = c.attr(attr)
    if axes is None and len(c.node.input) > index and c.node.input[index]:
        axes = c.static(index, "axes")
    if axes is None:
        return None
    return tuple(int(a) % ndim for a in np.asarray(axes).reshape(-1))


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
    if c.attr("mode", "constant") != "constant":
        raise OnnxImportError(f"onnx.load: Pad mode {c.attr('mode')!r} is not supported (constant is)")
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
    return pad(x, width, constant_values=0.0 if value is None else float(np.asarray(value).reshape(-1)[0]))

# ------------------------------------------------------------- reductions


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

# --------------------------------------------------------------- indexing


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
    return einsum(c.attr("equation").replace(" ", ""), *[c.arg(i) for i in range(len(c.node.input))])


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

# ----------------------------------------------- convolution and pooling


def _plain(c, what):
    if any(d != 1 for d in c.attr("dilations", [1, 1])) or c.attr("group", 1) != 1:
        raise OnnxImportError(f"onnx.load: {what} with dilations or groups is not supported")
    if c.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise OnnxImportError(f"onnx.load: {what} with auto_pad={c.attr('auto_pad')} is not supported")
    pads = c.attr("pads", [0, 0, 0, 0])
    if list(pads[:2]) != list(pads[2:]):
        raise OnnxImportError(f"onnx.load: {what} with asymmetric pads {list(pads)} is not supported")
    return tuple(c.attr("strides", [1, 1])), tuple(pads[:2])


@handles("Conv")
def _conv(c):
    x, w, bias = c.arg(0), c.arg(1), c.arg(2)
    stride, padding = _plain(c, "Conv")
    out = conv.conv2d(x, w, stride, padding)
    if bias is not None:
        out = el.add(out, st.reshape(bias, (-1, 1, 1)))
    return out


@handles("ConvTranspose")
def _conv_transpose(c):
    g, w, bias = c.arg(0), c.arg(1), c.arg(2)
    rank = _ndim(w) - 2
    if rank not in (1, 2):
        raise OnnxImportError(f"onnx.load: ConvTranspose over {rank} spatial axes is not supported (1 and 2 are)")
    if any(d != 1 for d in c.attr("dilations", [1] * rank)) or c.attr("group", 1) != 1:
        raise OnnxImportError("onnx.load: ConvTranspose with dilations or groups is not supported")
    if c.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise OnnxImportError(f"onnx.load: ConvTranspose with auto_pad={c.attr('auto_pad')} is not supported")
    stride, extra = list(c.attr("strides", [1] * rank)), list(c.attr("output_padding", [0] * rank))
    kernel, size = _shape(w)[2:], _shape(g)[2:]
    full = [(size[a] - 1) * stride[a] + kernel[a] + extra[a] for a in range(rank)]
    if c.attr("output_shape") is not None:
        if any(c.attr("pads", [])):
            # The spec ignores pads then, ONNX's reference implementation applies them: no guess.
            raise OnnxImportError("onnx.load: ConvTranspose with both output_shape and pads is not supported")
        # The spec's pads for output_shape (floor division, as the reference: a negative total, an
        # output_shape beyond the result, extends the end with zeros).
        total = [full[a] - int(c.attr("output_shape")[a]) for a in range(rank)]
        begin, end = [t - t // 2 for t in total], [t // 2 for t in total]
    else:
        pads = list(c.attr("pads", [0] * 2 * rank))
        begin, end = pads[:rank], pads[rank:]
    if rank == 1:  # as 2-D with a height of 1
        g, w = st.reshape(g, _shape(g)[:2] + (1,) + size), st.reshape(w, _shape(w)[:2] + (1,) + kernel)
        stride, full, begin, end = [1] + stride, [1] + full, [0] + begin, [0] + end
    if begin == end and min(begin) >= 0:
        out = conv.conv2d_input_grad(g, w, tuple(f - 2 * b for f, b in zip(full, begin)), stride, tuple(begin))
    else:
        # conv2d_input_grad pads both ends alike: compute the whole result, then crop (or extend) each end.
        out = conv.conv2d_input_grad(g, w, tuple(full), stride, 0)
        if min(begin + end) < 0:
            out = pad(out, [(0, 0), (0, 0)] + [(max(-b, 0), max(-e, 0)) for b, e in zip(begin, end)])
        out = indexing.getitem(out, (slice(None),) * 2 + tuple(
            slice(max(b, 0), max(b, 0) + f - b - e) for f, b, e in zip(full, begin, end)))
    if rank == 1:
        out = st.reshape(out, _shape(out)[:2] + _shape(out)[3:])
    if bias is not None:
        out = el.add(out, st.reshape(bias, (-1,) + (1,) * rank))
    return out


@handles("MaxPool")
def _max_pool(c):
    if any(c.attr("pads", [0, 0, 0, 0])) or c.attr("ceil_mode", 0) or len(c.node.output) > 1:
        raise OnnxImportError("onnx.load: MaxPool with pads, ceil_mode or an indices output is not supported")
    if any(d != 1 for d in c.attr("dilations", [1, 1])):
        raise OnnxImportError("onnx.load: MaxPool with dilations is not supported")
    if c.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        # SAME_* pads the input: pooling it unpadded would give a smaller output, silently.
        raise OnnxImportError(f"onnx.load: MaxPool with auto_pad={c.attr('auto_pad')} is not supported")
    window = tuple(c.attr("kernel_shape"))
    return conv.max_pool2d(c.arg(0), window, tuple(c.attr("strides", [1, 1])))


SUPPORTED_ONNX_OPS = sorted(op for op in HANDLERS if op != "Erf")


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
    missing = sorted({n.op_type for n in graph.node if n.op_type not in HANDLERS or n.op_type == "Erf"}
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
