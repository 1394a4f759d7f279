"""Elementwise ONNX operators: arithmetic, comparisons, logic, casts, activations."""

from __future__ import annotations

import numpy as np

from ..primitives import elementwise as el, indexing, integer, mathfuncs, reductions as red, structure as st
from ..primitives.linalg import matmul
from ._ops import HANDLERS, OnnxImportError, handles, _shape, _ndim, _np_dtype


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


# (ONNX's Bitwise* take integers of one type, BitShift unsigned ones: numpy's ufuncs compute them as ONNX does.)
HANDLERS.update({"BitwiseAnd": _binary(integer.bitwise_and), "BitwiseOr": _binary(integer.bitwise_or),
                 "BitwiseXor": _binary(integer.bitwise_xor), "BitwiseNot": _unary(integer.invert)})


@handles("BitShift")
def _bit_shift(c):
    shift = integer.left_shift if c.attr("direction", "LEFT") == "LEFT" else integer.right_shift
    return shift(c.arg(0), c.arg(1))


@handles("IsInf")
def _isinf(c):
    x = c.arg(0)
    out = mathfuncs.isinf(x)
    if not c.attr("detect_positive", 1):
        out = el.multiply(out, el.less(x, 0.0))
    if not c.attr("detect_negative", 1):
        out = el.multiply(out, el.greater(x, 0.0))
    return out


# The float8 types' largest finite values (float8e8m0 rounds its own way, below). Casting to them
# (through ml_dtypes, which onnx requires) rounds to nearest even and gives NaN or ±Inf beyond the
# range, as the spec's saturate=0 table; saturate=1 (the default) wants ±this instead: clipping first
# gives it.
_FLOAT8_MAX = {"FLOAT8E4M3FN": 448.0, "FLOAT8E4M3FNUZ": 240.0, "FLOAT8E5M2": 57344.0, "FLOAT8E5M2FNUZ": 57344.0}


@handles("Cast")
def _cast(c):
    return _cast_to(c, c.arg(0), c.attr("to"))


@handles("CastLike")
def _cast_like(c):
    like = c.arg(1)
    return _cast_to(c, c.arg(0), c.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(like.dtype)))


def _cast_to(c, x, to):
    """Cast/CastLike of ``x`` to the TensorProto type ``to``, with the node's saturate and round_mode."""
    name = c.onnx.TensorProto.DataType.Name(to)
    if name == "FLOAT8E8M0":
        return _to_e8m0(x, c.attr("round_mode", "up"), c.attr("saturate", 1))
    if name in _FLOAT8_MAX and c.attr("saturate", 1):
        if np.dtype(x.dtype) not in (np.float16, np.float32, np.float64):
            x = el.astype(x, np.float32)  # (exact for every value inside the float8 ranges)
        bound = np.asarray(_FLOAT8_MAX[name], x.dtype)
        x = mathfuncs.clip(x, -bound, bound)  # ±Inf to ±max too; NaN stays NaN
    return el.astype(x, _np_dtype(c.onnx, to))


def _to_e8m0(x, mode: str, saturate):
    """Cast to float8e8m0 (a power of two, 2**-127 .. 2**127) as onnx's reference does it on float32 bits:
    |x|'s exponent, raised by one when mode 'up' finds a fraction, or 'nearest' one >= 1/2; below 2**-126
    (zero, subnormals) 2**-127 or 2**-126 by the same rules. Saturation keeps 2**127; ±Inf gives 2**127 with
    saturate (the spec's table; onnx's reference gives NaN), NaN otherwise; NaN stays NaN."""
    import ml_dtypes  # noqa: PLC0415 - onnx requires it, and only onnx models reach this
    if mode not in ("up", "down", "nearest"):
        raise OnnxImportError(f"onnx.load: Cast to FLOAT8E8M0 with round_mode={mode!r} is not supported "
                              f"(ONNX defines 'up', 'down' and 'nearest')")
    e8m0 = np.dtype(ml_dtypes.float8_e8m0fnu)
    a = el.astype(mathfuncs.abs(el.astype(x, np.float32)), np.float64)   # (the reference's float32, exactly)
    top = np.float64(2.0 ** 127)
    capped = mathfuncs.clip(a, None, top)
    # p: the largest power of two <= a (for a >= 2**-126). ml_dtypes' own cast to e8m0 rounds to nearest,
    # to p or 2p, and both are exact in float64.
    q = el.astype(el.astype(el.astype(capped, np.float32), e8m0), np.float64)
    p = el.where(el.greater(q, capped), el.multiply(q, 0.5), q)
    tiny = np.float64(2.0 ** -126)
    if mode == "up":
        normal = el.where(el.greater(a, p), el.multiply(p, 2.0), p)
        small = el.where(el.equal(a, 0.0), np.float64(2.0 ** -127), tiny)
    elif mode == "down":
        normal, small = p, np.float64(2.0 ** -127)
    else:
        normal = el.where(el.greater_equal(a, el.multiply(p, 1.5)), el.multiply(p, 2.0), p)
        small = el.where(el.greater(a, np.float64(2.0 ** -127)), tiny, np.float64(2.0 ** -127))
    r = el.where(el.less(a, tiny), small, normal)
    if saturate:
        r = mathfuncs.clip(r, None, top)   # (Inf too; NaN stays NaN)
    else:
        r = el.where(mathfuncs.isinf(a), np.float64(np.inf), r)   # ('down' found 2**127 for Inf)
    # 2**128 and Inf (without saturate) become NaN in the cast.
    return el.astype(el.astype(r, np.float32), e8m0)


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

