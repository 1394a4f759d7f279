"""The one mapping table: primitive name -> the standard ONNX operators computing it.

A rule is ``rule(b, node, args) -> name``: ``b`` is the :class:`Builder`,
``node`` the :class:`ProgramNode` (its params, shape and dtype), ``args`` the
operands as :class:`Value`; it returns the name of an ONNX value with the
node's shape and dtype. Rules only emit operators: constants they add are
static parameters of the program (shapes, axes, index arrays), never computed
values.

Where ONNX Runtime's CPU kernels have no float64 version of an operator
(Conv, ConvTranspose, Tan, Atan, Sinh, ...), the rule spells the function
with operators that do, so that float64 programs run to 1e-10.
"""

from __future__ import annotations

import math

import numpy as np

from ..primitives.mathfuncs import cody_erf, cody_erfc
from ._build import INT64_MIN, Builder, Value

RULES: dict = {}

# Primitives with no ONNX equivalent: the reason is part of the error message.
UNSUPPORTED: dict[str, str] = {
    "inv": "ONNX has no matrix inverse operator",
    "solve": "ONNX has no linear solve operator",
    "cholesky": "ONNX has no Cholesky factorisation operator",
    "eigh": "ONNX has no eigendecomposition operator",
    "svd": "ONNX has no singular value decomposition operator",
    "qr": "ONNX has no QR factorisation operator",
    "cofactor_derivative": "ONNX has no SVD operator (det's second derivative)",
    "cofactor": "ONNX has no matrix inverse nor SVD operator (the cofactor matrix is det's derivative)",
    "linear_scan": "ONNX's Scan would loop in the graph (it is cumprod's derivative, chosen by the values)",
    "svd_reciprocal": "svd's derivative, which ONNX cannot raise (nor has it svd)",
    "svd_complement_unused": "the check of a full_matrices svd's derivative, which ONNX cannot raise (nor has it svd)",
    "qr_full_rank": "the rank check of qr's derivative, which ONNX cannot raise (nor has it qr)",
    "pinv": "ONNX has no pseudo-inverse operator",
    "gcd": "ONNX has no gcd operator (Euclid's algorithm would loop in the graph)",
    "lcm": "ONNX has no lcm operator (it needs gcd, which Euclid's algorithm computes in a loop)",
    "dropout_mask": "ONNX's random operators take their seed as an attribute, not an input (export the "
                    "model in eval mode: dropout is then the identity)",
}


def rule(*names):
    def register(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return register


def _out(node, name) -> Value:
    return Value(name, node.shape, node.dtype)


def _all_as(b: Builder, args, dtype) -> list[Value]:
    return [b.cast(a, dtype) for a in args]


def _common(args) -> np.dtype:
    return np.result_type(*[a.dtype for a in args])

# ------------------------------------------------------------ elementwise


_SAME_OP = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "negative": "Neg",
            "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "tanh": "Tanh", "logistic": "Sigmoid",
            "relu": "Relu", "sign": "Sign", "abs": "Abs", "maximum": "Max", "minimum": "Min",
            "sin": "Sin", "cos": "Cos", "floor": "Floor", "ceil": "Ceil", "reciprocal": "Reciprocal",
            "identity": "Identity", "stop_gradient": "Identity", "checked_indices": "Identity",
            "checked_mask": "Identity",
            "matmul": "MatMul"}


def _same(op_type):
    def emit(b, node, args):
        return b.op(op_type, _all_as(b, args, node.dtype), hint=_hint(node))
    return emit


for _name, _op in _SAME_OP.items():
    RULES[_name] = _same(_op)

# ONNX's Add/Mul/Max/Min take no booleans (onnx.checker refuses them); on booleans numpy's
# x+y and max are logical or, x*y and min logical and, which ONNX's Or/And compute.
_BOOL_OP = {"add": "Or", "maximum": "Or", "multiply": "And", "minimum": "And"}


def _same_or_logical(name, op_type):
    same, logical = _same(op_type), _same(_BOOL_OP[name])

    def emit(b, node, args):
        return (logical if node.dtype == np.bool_ else same)(b, node, args)
    return emit


for _name in ("add", "multiply"):
    RULES[_name] = _same_or_logical(_name, _SAME_OP[_name])

# ONNX Runtime's CPU Max/Min have no int16/uint16 kernels (measured on every integer dtype:
# tests/test_onnx_export_dtypes.py); int32 holds both exactly, so the extremum is taken there.
_NO_ORT_MAX_MIN = {np.dtype(np.int16), np.dtype(np.uint16)}


def _extremum(b, op_type, xs, dtype, hint=None):
    """ONNX ``Max``/``Min`` of ``xs`` (all of ``dtype``), cast through int32 where ONNX Runtime needs it."""
    if np.dtype(dtype) not in _NO_ORT_MAX_MIN:
        return b.op(op_type, xs, hint=hint)
    wide = b.op(op_type, [b.cast(x, np.int32) for x in xs])
    return b.op("Cast", [wide], to=b.tensor_type(dtype), hint=hint)


@rule("relu")
def _relu(b, node, args):
    # ONNX Runtime has no int64 Relu kernel (measured; the other integer types are moved by cast_around).
    if node.dtype == np.int64:
        return b.op("Max", [args[0], b.scalar(0, np.int64)], hint=_hint(node))
    return b.op("Relu", [b.cast(args[0], node.dtype)], hint=_hint(node))


@rule("maximum", "minimum")
def _maximum_minimum(b, node, args):
    if node.dtype == np.bool_:
        return _same(_BOOL_OP[node.op])(b, node, args)
    return _extremum(b, _SAME_OP[node.op], _all_as(b, args, node.dtype), node.dtype, hint=_hint(node))


def _hint(node) -> str:
    return f"{node.op}{node.index}"


_COMPARE = {"equal": "Equal", "less": "Less", "less_equal": "LessOrEqual", "greater": "Greater",
            "greater_equal": "GreaterOrEqual"}


def _compare(op_type):
    def emit(b, node, args):
        return b.op(op_type, _all_as(b, args, _common(args)), hint=_hint(node))
    return emit


for _name, _op in _COMPARE.items():
    RULES[_name] = _compare(_op)


@rule("not_equal")
def _not_equal(b, node, args):
    return b.op("Not", [b.op("Equal", _all_as(b, args, _common(args)))], hint=_hint(node))


@rule("square")
def _square(b, node, args):
    x = b.cast(args[0], node.dtype)
    return b.op("Mul", [x, x], hint=_hint(node))


@rule("power")
def _power(b, node, args):
    x = b.cast(args[0], node.dtype)
    if node.dtype.kind in "iu":
        e = node.params.get("exponent")
        return _integer_power(b, x, b.cast(args[1], node.dtype) if e is None else int(e), node, _hint(node))
    if "exponent" in node.params and node.params["exponent"] is not None:
        e = node.params["exponent"]
        edtype = node.dtype if node.dtype.kind == "f" or isinstance(e, float) else np.int64
        return b.op("Pow", [x, b.scalar(e, edtype)], hint=_hint(node))
    return b.op("Pow", [x, b.cast(args[1], node.dtype)], hint=_hint(node))


def _integer_power(b, x: Value, e, node, hint) -> str:
    """x ** e on integers by repeated squaring, whose Mul wraps as numpy's power does: ONNX Runtime's
    integer Pow goes through double (3 ** 41 in int64 came back as -2**63), and ONNX's Pow takes no
    8/16-bit or unsigned base. ``e`` is an int, or a Value of non-negative exponents (numpy refuses
    negative ones), whose bits are read one per step."""
    if isinstance(e, int):
        out, base = None, x.name
        while e:
            if e & 1:
                out = base if out is None else b.op("Mul", [out, base])
            e >>= 1
            if e:
                base = b.op("Mul", [base, base])
        if out is None:   # x ** 0
            return b.op("Expand", [b.scalar(1, node.dtype), b.ints(node.shape)], hint=hint)
        return b.op("Identity", [out], hint=hint)
    one, two = b.scalar(1, node.dtype), b.scalar(2, node.dtype)
    out, base, rest = one, x.name, e.name
    for _ in range(8 * node.dtype.itemsize - (node.dtype.kind == "i")):
        odd = b.op("Equal", [b.op("Mod", [rest, two]), one])
        out = b.op("Where", [odd, b.op("Mul", [out, base]), out])
        base, rest = b.op("Mul", [base, base]), b.op("Div", [rest, two])
    return b.op("Expand", [out, b.ints(node.shape)], hint=hint)


@rule("step")
def _step(b, node, args):
    x = args[0]
    ge = b.op("GreaterOrEqual", [x, b.scalar(0, x.dtype)])
    return b.op("Cast", [ge], to=b.tensor_type(node.dtype), hint=_hint(node))


@rule("tie_weights")
def _tie_weights(b, node, args):
    x, y = _all_as(b, args, _common(args))
    gt = b.cast(Value(b.op("Greater", [x, y]), node.shape, np.bool_), node.dtype)
    eq = b.cast(Value(b.op("Equal", [x, y]), node.shape, np.bool_), node.dtype)
    half = b.op("Mul", [eq, b.scalar(0.5, node.dtype)])
    return b.op("Add", [gt, half], hint=_hint(node))


@rule("where")
def _where(b, node, args):
    cond = b.cast(args[0], np.bool_)
    x, y = _all_as(b, args[1:], node.dtype)
    if np.dtype(node.dtype) == np.bool_:
        # ONNX Runtime has no Where kernel for booleans (clip's derivative selects them): (c ∧ x) ∨ (¬c ∧ y).
        kept = b.op("And", [cond, x], hint=_hint(node))
        other = b.op("And", [b.op("Not", [cond], hint=_hint(node)), y], hint=_hint(node))
        return b.op("Or", [kept, other], hint=_hint(node))
    return b.op("Where", [cond, x, y], hint=_hint(node))


# astype is numpy's (ml_dtypes') cast. To float8 it rounds to nearest even with NaN/±Inf beyond the range
# (ONNX's saturate=0); to float8e8m0 it rounds to nearest, ties up, with NaN beyond (round_mode
# 'nearest', saturate=0). From a float to the 2- and 4-bit integers it truncates and gives 0 when the
# truncated value is out of range, where ONNX leaves that undefined and ONNX Runtime rounds and wraps:
# the exporter zeroes those values first, so that the Cast only meets values it holds.
_SUB_BYTE_INTS = {"int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1), "uint2": (0, 3)}


@rule("astype")
def _astype(b, node, args):
    x, to = args[0], np.dtype(node.dtype)
    if x.dtype == to:
        return b.op("Identity", [x], hint=_hint(node))
    attrs = {}
    if to.name.startswith("float8"):
        attrs = {"saturate": 0, "round_mode": "nearest"} if to.name == "float8_e8m0fnu" else {"saturate": 0}
    elif to.name in _SUB_BYTE_INTS and x.dtype.kind in "fV":
        lo, hi = _SUB_BYTE_INTS[to.name]
        if x.dtype.kind == "V" or x.dtype.itemsize < 4:  # (bounds and comparisons exact in float32)
            x = b.cast(x, np.float32)
        inside = b.op("And", [b.op("Greater", [x, b.scalar(lo - 1, x.dtype)]),
                              b.op("Less", [x, b.scalar(hi + 1, x.dtype)])])   # NaN: outside
        kept = b.op("Where", [inside, x, b.scalar(0, x.dtype)])
        x = Value(b.op("Cast", [kept], to=b.tensor_type(np.int32)), x.shape, np.int32)  # truncates
    return b.op("Cast", [x], to=b.tensor_type(to), hint=_hint(node), **attrs)


def _log1p(b, x: Value) -> str:
    """log(1 + x) accurate for small x (Goldberg): log(u)·x/(u − 1) with u = 1 + x."""
    one = b.scalar(1, x.dtype)
    u = b.op("Add", [x, one])
    d = b.op("Sub", [u, one])
    ratio = b.op("Div", [b.op("Mul", [b.op("Log", [u]), x]), d])
    return b.op("Where", [b.op("Equal", [d, b.scalar(0, x.dtype)]), x, ratio])


def _expm1(b, x: Value) -> str:
    """e^x − 1 accurate for small x (Kahan): (u − 1)·x/log(u) with u = e^x."""
    one = b.scalar(1, x.dtype)
    u = b.op("Exp", [x])
    um1 = b.op("Sub", [u, one])
    ratio = b.op("Div", [b.op("Mul", [um1, x]), b.op("Log", [u])])
    small = b.op("Where", [b.op("Equal", [u, one]), x, ratio])
    # u = 0 (x very negative) gives -1; u = inf gives inf.
    return b.op("Where", [b.op("Or", [b.op("Equal", [u, b.scalar(0, x.dtype)]), b.op("IsInf", [u])]), um1, small])


@rule("log1p")
def _log1p_rule(b, node, args):
    return _log1p(b, b.cast(args[0], node.dtype))


@rule("expm1")
def _expm1_rule(b, node, args):
    return _expm1(b, b.cast(args[0], node.dtype))


@rule("logistic_slope")
def _logistic_slope(b, node, args):
    x = b.cast(args[0], node.dtype)
    return b.op("Mul", [b.op("Sigmoid", [x]), b.op("Sigmoid", [b.op("Neg", [x])])], hint=_hint(node))


@rule("softplus")
def _softplus(b, node, args):
    x = b.cast(args[0], node.dtype)
    tail = Value(b.op("Exp", [b.op("Neg", [b.op("Abs", [x])])]), x.shape, x.dtype)
    return b.op("Add", [b.op("Relu", [x]), _log1p(b, tail)], hint=_hint(node))


@rule("log2", "log10")
def _log_base(b, node, args):
    x = b.cast(args[0], node.dtype)
    base = 2.0 if node.op == "log2" else 10.0
    return b.op("Div", [b.op("Log", [x]), b.scalar(math.log(base), node.dtype)], hint=_hint(node))


@rule("exp2")
def _exp2(b, node, args):
    return b.op("Pow", [b.scalar(2.0, node.dtype), b.cast(args[0], node.dtype)], hint=_hint(node))


@rule("trunc")
def _trunc(b, node, args):
    x = b.cast(args[0], node.dtype)
    neg = b.op("Less", [x, b.scalar(0, node.dtype)])
    return b.op("Where", [neg, b.op("Ceil", [x]), b.op("Floor", [x])], hint=_hint(node))


@rule("round")
def _round(b, node, args):
    x = b.cast(args[0], node.dtype)
    d = int(node.params.get("decimals", 0))
    if d == 0:
        return b.op("Round", [x], hint=_hint(node))
    # numpy: rint(x·10^d)/10^d, and for d < 0: rint(x/10^-d)·10^-d.
    if d > 0:
        s = b.scalar(10.0 ** d, node.dtype)
        return b.op("Div", [b.op("Round", [b.op("Mul", [x, s])]), s], hint=_hint(node))
    s = b.scalar(10.0 ** -d, node.dtype)
    return b.op("Mul", [b.op("Round", [b.op("Div", [x, s])]), s], hint=_hint(node))

# ----------------------------------------- inverse trigonometric, hyperbolic


def _newton(b, x: Value, seed_op: str, f_op: str, df) -> str:
    """float64 f⁻¹(x) from a float32 seed (ONNX Runtime has no float64 kernel) and two Newton steps."""
    seed = b.cast(Value(b.op(seed_op, [b.cast(x, np.float32)]), x.shape, np.float32), x.dtype).name
    for _ in range(2):
        residual = b.op("Sub", [b.op(f_op, [seed]), x])
        seed = b.op("Sub", [seed, b.op("Div", [residual, df(seed)])])
    return seed


def _float32_native(node) -> bool:
    return node.dtype == np.float32


@rule("tan")
def _tan(b, node, args):
    x = b.cast(args[0], node.dtype)
    if _float32_native(node):
        return b.op("Tan", [x], hint=_hint(node))
    return b.op("Div", [b.op("Sin", [x]), b.op("Cos", [x])], hint=_hint(node))


@rule("arctan")
def _arctan(b, node, args):
    x = b.cast(args[0], node.dtype)
    if _float32_native(node):
        return b.op("Atan", [x], hint=_hint(node))
    return _atan64(b, x)


def _atan64(b, x: Value) -> str:
    # Newton on g(y) = sin y − x cos y (root: tan y = x), g'(y) = cos y + x sin y.
    seed = b.cast(Value(b.op("Atan", [b.cast(x, np.float32)]), x.shape, np.float32), x.dtype).name
    for _ in range(2):
        s, c = b.op("Sin", [seed]), b.op("Cos", [seed])
        g = b.op("Sub", [s, b.op("Mul", [x, c])])
        dg = b.op("Add", [c, b.op("Mul", [x, s])])
        seed = b.op("Sub", [seed, b.op("Div", [g, dg])])
    # At ±inf the Newton step is inf/inf: arctan(±inf) = ±π/2.
    edge = b.op("Mul", [b.op("Sign", [x]), b.scalar(math.pi / 2, x.dtype)])
    return b.op("Where", [b.op("IsInf", [x]), edge, seed])


@rule("arcsin")
def _arcsin(b, node, args):
    x = b.cast(args[0], node.dtype)
    if _float32_native(node):
        return b.op("Asin", [x], hint=_hint(node))
    return _newton(b, x, "Asin", "Sin", lambda y: b.op("Cos", [y]))


@rule("arccos")
def _arccos(b, node, args):
    x = b.cast(args[0], node.dtype)
    if _float32_native(node):
        return b.op("Acos", [x], hint=_hint(node))
    return _newton(b, x, "Acos", "Cos", lambda y: b.op("Neg", [b.op("Sin", [y])]))


@rule("sinh", "cosh")
def _sinh_cosh(b, node, args):
    x = b.cast(args[0], node.dtype)
    if _float32_native(node):
        return b.op("Sinh" if node.op == "sinh" else "Cosh", [x], hint=_hint(node))
    if node.op == "cosh":
        total = b.op("Add", [b.op("Exp", [x]), b.op("Exp", [b.op("Neg", [x])])])
    else:
        neg = Value(b.op("Neg", [x]), x.shape, x.dtype)
        total = b.op("Sub", [_expm1(b, x), _expm1(b, neg)])
    return b.op("Mul", [total, b.scalar(0.5, node.dtype)], hint=_hint(node))


@rule("arcsinh")
def _arcsinh(b, node, args):
    x = b.cast(args[0], node.dtype)
    if _float32_native(node):
        return b.op("Asinh", [x], hint=_hint(node))
    # sign(x)·log1p(|x| + x²/(1 + sqrt(1 + x²)))
    one = b.scalar(1, x.dtype)
    a = b.op("Abs", [x])
    x2 = b.op("Mul", [x, x])
    inner = b.op("Add", [a, b.op("Div", [x2, b.op("Add", [one, b.op("Sqrt", [b.op("Add", [one, x2])])])])])
    return b.op("Mul", [b.op("Sign", [x]), _log1p(b, Value(inner, x.shape, x.dtype))], hint=_hint(node))


def _onnx_arithmetic(b, dtype):
    """The arithmetic of :func:`cody_erf` / :func:`cody_erfc` as ONNX operators on ``dtype``."""
    def emit(op_type):
        return lambda *vs: b.op(op_type, [b.scalar(v, dtype) if isinstance(v, float) else v for v in vs])
    ops = dict(abs="Abs", add="Add", sub="Sub", mul="Mul", div="Div", exp="Exp", floor="Floor", neg="Neg",
               gt="Greater", le="LessOrEqual", lt="Less", where="Where")
    return type("OnnxArithmetic", (), {k: staticmethod(emit(v)) for k, v in ops.items()})


@rule("erf")
def _erf(b, node, args):
    x = b.cast(args[0], node.dtype)
    if node.dtype != np.float64:
        return b.op("Erf", [x], hint=_hint(node))
    # ONNX Runtime has no float64 Erf kernel: the primitive's own algorithm, spelled in ONNX operators.
    return cody_erf(x.name, _onnx_arithmetic(b, x.dtype))


@rule("erfc")
def _erfc(b, node, args):
    # ONNX has no Erfc, and 1 − Erf(x) cancels for x ≫ 0 (all digits lost from x = 4 in float32): the
    # primitive's own algorithm in float64 operators, as the primitive computes it, then rounded once.
    x = b.cast(args[0], np.float64)
    out = Value(cody_erfc(x.name, _onnx_arithmetic(b, x.dtype)), x.shape, np.float64)
    return b.cast(out, node.dtype).name


@rule("arccosh")
def _arccosh(b, node, args):
    x = b.cast(args[0], node.dtype)
    if _float32_native(node):
        return b.op("Acosh", [x], hint=_hint(node))
    # log1p((x − 1) + sqrt((x − 1)(x + 1)))
    one = b.scalar(1, x.dtype)
    xm = b.op("Sub", [x, one])
    inner = b.op("Add", [xm, b.op("Sqrt", [b.op("Mul", [xm, b.op("Add", [x, one])])])])
    return _log1p(b, Value(inner, x.shape, x.dtype))


@rule("arctanh")
def _arctanh(b, node, args):
    x = b.cast(args[0], node.dtype)
    if _float32_native(node):
        return b.op("Atanh", [x], hint=_hint(node))
    # ½·log1p(2x/(1 − x))
    ratio = b.op("Div", [b.op("Add", [x, x]), b.op("Sub", [b.scalar(1, x.dtype), x])])
    return b.op("Mul", [_log1p(b, Value(ratio, x.shape, x.dtype)), b.scalar(0.5, x.dtype)], hint=_hint(node))


@rule("arctan2")
def _arctan2(b, node, args):
    y, x = _all_as(b, args, node.dtype)
    dt = node.dtype
    q = Value(b.op("Div", [y, x]), node.shape, dt)
    base = b.op("Atan", [q]) if _float32_native(node) else _atan64(b, q)
    zero, pi = b.scalar(0, dt), b.scalar(math.pi, dt)
    # y's sign bit, as numpy reads it left of the origin: arctan2(−0, −1) = −π. A zero's sign is
    # its reciprocal's (±inf).
    positive_zero = b.op("And", [b.op("Equal", [y, zero]), b.op("Greater", [b.op("Reciprocal", [y]), zero])])
    y_nonneg = b.op("Or", [b.op("Greater", [y, zero]), positive_zero])
    left = b.op("Where", [y_nonneg, b.op("Add", [base, pi]), b.op("Sub", [base, pi])])
    on_axis = b.op("Mul", [b.op("Sign", [y]), b.scalar(math.pi / 2, dt)])
    res = b.op("Where", [b.op("Less", [x, zero]), left, on_axis])
    res = b.op("Where", [b.op("Greater", [x, zero]), base, res])
    # y = ±0 and x = −0 (0/0 above): ±π, as numpy reads x's sign bit too.
    minus_zero_x = b.op("And", [b.op("Equal", [x, zero]), b.op("Less", [b.op("Reciprocal", [x]), zero])])
    res = b.op("Where", [b.op("And", [minus_zero_x, b.op("Equal", [y, zero])]),
                         b.op("Where", [y_nonneg, pi, b.op("Neg", [pi])]), res])
    # Both infinite: y/x is NaN; numpy gives ±π/4 (x = +inf) or ±3π/4 (x = −inf).
    corner = b.op("Mul", [b.op("Sign", [y]), b.op("Where", [b.op("Greater", [x, zero]), b.scalar(math.pi / 4, dt),
                                                               b.scalar(3 * math.pi / 4, dt)])])
    both = b.op("And", [b.op("IsInf", [y]), b.op("IsInf", [x])])
    return b.op("Where", [both, corner, res], hint=_hint(node))


@rule("hypot")
def _hypot(b, node, args):
    # m·√(1 + (n/m)²), m = max(|x|, |y|), n = min: x² + y² would overflow past 1e154 (and
    # underflow below 1e-154) where numpy's hypot does not; hypot(±inf, nan) is inf, as numpy's.
    x, y = _all_as(b, args, node.dtype)
    dt = node.dtype
    ax, ay = b.op("Abs", [x]), b.op("Abs", [y])
    m, n = b.op("Max", [ax, ay]), b.op("Min", [ax, ay])
    zero, one = b.scalar(0, dt), b.scalar(1, dt)
    r = b.op("Div", [n, b.op("Where", [b.op("Equal", [m, zero]), one, m])])
    out = b.op("Mul", [m, b.op("Sqrt", [b.op("Add", [one, b.op("Mul", [r, r])])])])
    infinite = b.op("Or", [b.op("IsInf", [x]), b.op("IsInf", [y])])
    return b.op("Where", [infinite, b.scalar(np.inf, dt), out], hint=_hint(node))


@rule("logaddexp", "logaddexp2")
def _logaddexp(b, node, args):
    x, y = _all_as(b, args, node.dtype)
    dt = node.dtype
    m = b.op("Max", [x, y])
    d = b.op("Neg", [b.op("Abs", [b.op("Sub", [x, y])])])
    if node.op == "logaddexp":
        tail = _log1p(b, Value(b.op("Exp", [d]), node.shape, dt))
    else:
        p = Value(b.op("Pow", [b.scalar(2.0, dt), d]), node.shape, dt)
        tail = b.op("Div", [_log1p(b, p), b.scalar(math.log(2.0), dt)])
    # Equal arguments give x + log 2 (numpy's case): x − y is NaN when both are the same infinity,
    # and logaddexp(−inf, −inf) is −inf, the log of a zero probability.
    twice = b.op("Add", [x, b.scalar(math.log(2.0) if node.op == "logaddexp" else 1.0, dt)])
    return b.op("Where", [b.op("Equal", [x, y]), twice, b.op("Add", [m, tail])], hint=_hint(node))


@rule("mod")
def _mod(b, node, args):
    x, y = _all_as(b, args, node.dtype)
    if node.dtype.kind != "f":
        return b.op("Mod", [x, y], fmod=0, hint=_hint(node))
    # numpy: r = fmod(x, y), moved into y's sign when it is not zero.
    r = b.op("Mod", [x, y], fmod=1)
    zero = b.scalar(0, node.dtype)
    flip = b.op("And", [b.op("Not", [b.op("Equal", [r, zero])]),
                        b.op("Xor", [b.op("Less", [r, zero]), b.op("Less", [y, zero])])])
    return b.op("Where", [flip, b.op("Add", [r, y]), r], hint=_hint(node))


@rule("fmod")
def _fmod(b, node, args):
    x, y = _all_as(b, args, node.dtype)
    # ONNX's fmod=1 is C's fmod, numpy's for floats and integers alike.
    return b.op("Mod", [x, y], fmod=1, hint=_hint(node))


# ------------------------------------------------------------ integers (primitives/integer.py)

@rule("floor_divide")
def _floor_divide(b, node, args):
    x, y = _all_as(b, args, node.dtype)
    return (_float_floor_divide if node.dtype.kind == "f" else _integer_floor_divide)(b, x, y, node.dtype, _hint(node))


def _float_floor_divide(b, x, y, dt, hint) -> str:
    # numpy's npy_divmod, not Floor(x / y): (x - fmod(x, y)) / y moved down where the remainder and y differ
    # in sign, then snapped to the nearest integer (1.0 // 0.1 is 9, floor(1.0 / 0.1) is 10); x / y where y == 0.
    zero, one = b.scalar(0, dt), b.scalar(1, dt)
    r = b.op("Mod", [x, y], fmod=1)
    div = b.op("Div", [b.op("Sub", [x, r]), y])
    down = b.op("And", [b.op("Not", [b.op("Equal", [r, zero])]),
                        b.op("Xor", [b.op("Less", [y, zero]), b.op("Less", [r, zero])])])
    div = b.op("Where", [down, b.op("Sub", [div, one]), div])
    low = b.op("Floor", [div])
    near = b.op("Where", [b.op("Greater", [b.op("Sub", [div, low]), b.scalar(0.5, dt)]), b.op("Add", [low, one]), low])
    # A zero quotient takes the sign of x / y (numpy's copysign(0, x / y); x / y is finite there: 0·(x / y)).
    quotient = b.op("Div", [x, y])
    near = b.op("Where", [b.op("Equal", [div, zero]), b.op("Mul", [quotient, zero]), near])
    return b.op("Where", [b.op("Equal", [y, zero]), quotient, near], hint=hint)


def _integer_floor_divide(b, x, y, dt, hint) -> str:
    # ONNX's integer Div truncates and traps on y == 0 (and on INT_MIN / -1): those divisors are replaced by 1,
    # numpy's results (0, and -x wrapped) put back; the truncated quotient moves down where the remainder
    # and y differ in sign.
    zero, one = b.scalar(0, dt), b.scalar(1, dt)
    by_zero = b.op("Equal", [y, zero])
    traps = by_zero if dt.kind == "u" else b.op("Or", [by_zero, b.op("Equal", [y, b.scalar(-1, dt)])])
    safe = b.op("Where", [traps, one, y])
    q = b.op("Div", [x, safe])
    if dt.kind == "i":
        r = b.op("Mod", [x, safe], fmod=1)
        down = b.op("And", [b.op("Not", [b.op("Equal", [r, zero])]),
                            b.op("Xor", [b.op("Less", [safe, zero]), b.op("Less", [r, zero])])])
        q = b.op("Sub", [q, b.op("Cast", [down], to=b.tensor_type(dt))])
        q = b.op("Where", [b.op("Equal", [y, b.scalar(-1, dt)]), b.op("Sub", [zero, x]), q])
    return b.op("Where", [by_zero, zero, q], hint=hint)


_BITWISE = {"bitwise_and": ("And", "BitwiseAnd"), "bitwise_or": ("Or", "BitwiseOr"),
            "bitwise_xor": ("Xor", "BitwiseXor"), "invert": ("Not", "BitwiseNot")}


@rule(*_BITWISE)
def _bitwise(b, node, args):
    # Booleans: ONNX's logical operators (its Bitwise* take integers only).
    return b.op(_BITWISE[node.op][node.dtype != np.bool_], _all_as(b, args, node.dtype), hint=_hint(node))


@rule("left_shift", "right_shift")
def _shift(b, node, args):
    # ONNX's BitShift takes unsigned integers only (and, as numpy, gives 0 past the width): a signed x is
    # shifted as the unsigned integer of its bits; a negative one shifted right fills with ones, ~(~x >> s).
    x, s = _all_as(b, args, node.dtype)
    direction = "LEFT" if node.op == "left_shift" else "RIGHT"
    if node.dtype.kind == "u":
        return b.op("BitShift", [x, s], direction=direction, hint=_hint(node))
    u, to = np.dtype(f"uint{8 * node.dtype.itemsize}"), b.tensor_type(node.dtype)
    ux, us = b.cast(x, u), b.cast(s, u)
    out = b.op("Cast", [b.op("BitShift", [ux, us], direction=direction)], to=to)
    if direction == "LEFT":
        return b.op("Identity", [out], hint=_hint(node))
    # (selected after the cast back: ONNX Runtime has no uint64 Where)
    ones = b.op("Cast", [b.op("BitwiseNot", [b.op("BitShift", [b.op("BitwiseNot", [ux]), us], direction="RIGHT")])],
                to=to)
    return b.op("Where", [b.op("Less", [x, b.scalar(0, node.dtype)]), ones, out], hint=_hint(node))


@rule("fmax", "fmin")
def _fextremum(b, node, args):
    op_type = "Max" if node.op == "fmax" else "Min"
    if node.dtype.kind != "f":  # no NaN to skip; ONNX's IsNaN takes floats only
        if node.dtype == np.bool_:
            op_type = "Or" if op_type == "Max" else "And"
            return b.op(op_type, _all_as(b, args, node.dtype), hint=_hint(node))
        return _extremum(b, op_type, _all_as(b, args, node.dtype), node.dtype, hint=_hint(node))
    x, y = _all_as(b, args, node.dtype)
    m = _extremum(b, op_type, [x, y], node.dtype)
    m = b.op("Where", [b.op("IsNaN", [x]), y, m])
    return b.op("Where", [b.op("IsNaN", [y]), x, m], hint=_hint(node))


@rule("clip")
def _clip(b, node, args):
    x, lo, hi = _all_as(b, args, node.dtype)
    return _extremum(b, "Min", [Value(_extremum(b, "Max", [x, lo], node.dtype), x.shape, node.dtype), hi],
                     node.dtype, hint=_hint(node))


@rule("nan_to_num")
def _nan_to_num(b, node, args):
    x = b.cast(args[0], node.dtype)
    if node.dtype.kind != "f":
        return b.op("Identity", [x], hint=_hint(node))
    info = np.finfo(node.dtype)
    p = node.params
    posinf = info.max if p.get("posinf") is None else p["posinf"]
    neginf = info.min if p.get("neginf") is None else p["neginf"]
    dt = node.dtype
    out = b.op("Where", [b.op("IsInf", [x], detect_negative=0), b.scalar(posinf, dt), x])
    out = b.op("Where", [b.op("IsInf", [x], detect_positive=0), b.scalar(neginf, dt), out])
    return b.op("Where", [b.op("IsNaN", [x]), b.scalar(p.get("nan", 0.0), dt), out], hint=_hint(node))


@rule("isnan", "isinf", "isfinite")
def _tests(b, node, args):
    x = args[0]
    if x.dtype.kind != "f":
        full = np.full(x.shape, node.op == "isfinite")
        return b.op("Identity", [b.const(full, "test")], hint=_hint(node))
    if node.op == "isnan":
        return b.op("IsNaN", [x], hint=_hint(node))
    if node.op == "isinf":
        return b.op("IsInf", [x], hint=_hint(node))
    return b.op("Not", [b.op("Or", [b.op("IsNaN", [x]), b.op("IsInf", [x])])], hint=_hint(node))

# -------------------------------------------------------------- structure


@rule("reshape")
def _reshape(b, node, args):
    return b.op("Reshape", [args[0], b.ints(node.shape)], hint=_hint(node))


@rule("transpose")
def _transpose(b, node, args):
    if len(node.params["axes"]) < 2:
        return b.op("Identity", [args[0]], hint=_hint(node))
    return b.op("Transpose", [args[0]], perm=list(node.params["axes"]), hint=_hint(node))


@rule("broadcast_to")
def _broadcast_to(b, node, args):
    return b.op("Expand", [args[0], b.ints(node.shape)], hint=_hint(node))


def _reduce(b, op_type, x: Value, axes, keepdims: bool, hint=None) -> str:
    if not axes:
        return b.op("Identity", [x], hint=hint)
    return b.op(op_type, [x, b.ints(axes)], keepdims=int(keepdims), hint=hint)


@rule("sum", "mean", "max", "min", "prod")
def _reduction(b, node, args):
    op_type = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
               "prod": "ReduceProd"}[node.op]
    x = b.cast(args[0], node.dtype)
    axes, keepdims = node.params["axis"], node.params["keepdims"]
    if node.op in ("max", "min") and axes and x.dtype.kind == "f":
        # ONNX Runtime's ReduceMax/Min skip NaN, numpy's propagate it: add the sum of the NaN
        # entries (0 without any), so that a diverged value is not hidden.
        out = Value(_reduce(b, op_type, x, axes, keepdims), node.shape, x.dtype)
        nans = Value(b.op("Where", [b.op("IsNaN", [x]), x, b.scalar(0, x.dtype)]), x.shape, x.dtype)
        return b.op("Add", [out, _reduce(b, "ReduceSum", nans, axes, keepdims)], hint=_hint(node))
    if node.op in ("sum", "prod") and axes and x.dtype.kind in "iu":
        return _exact_integer_reduce(b, "Add" if node.op == "sum" else "Mul", x, axes, keepdims, _hint(node))
    return _reduce(b, op_type, x, axes, keepdims, _hint(node))


def _exact_integer_reduce(b, op_type: str, x: Value, axes, keepdims: bool, hint) -> str:
    """An integer sum/product over ``axes`` as a tree of halves (Slice, then Add or Mul), which wraps as
    numpy's does: ONNX Runtime's ReduceSum/ReduceProd accumulate integers in double (int64 sums lose
    digits beyond 2**53, and an overflow saturates instead of wrapping)."""
    name, shape = x.name, list(x.shape)
    for axis in axes:
        n = shape[axis]
        while n > 1:
            half = n // 2
            lo, hi = (b.op("Slice", [name, b.ints([start]), b.ints([start + half]), b.ints([axis])])
                      for start in (0, half))
            paired = b.op(op_type, [lo, hi])
            if n % 2:
                rest = b.op("Slice", [name, b.ints([n - 1]), b.ints([n]), b.ints([axis])])
                paired = b.op("Concat", [paired, rest], axis=axis)
            name, n = paired, half + n % 2
        shape[axis] = 1
        if n == 0:   # an empty axis: the sum's 0, the product's 1
            name = b.op("Expand", [b.scalar(0 if op_type == "Add" else 1, x.dtype), b.ints(shape)])
    out = tuple(d for a, d in enumerate(shape) if keepdims or a not in axes)
    return b.op("Identity" if keepdims else "Reshape", [name] if keepdims else [name, b.ints(out)], hint=hint)


@rule("norm")
def _norm(b, node, args):
    x = b.cast(args[0], node.dtype)
    sq = Value(b.op("Mul", [x, x]), x.shape, x.dtype)
    return b.op("Sqrt", [_reduce(b, "ReduceSum", sq, node.params["axis"], node.params["keepdims"])],
                hint=_hint(node))


def _standardized(b, node, x):
    """(x − μ, √(σ² + ε), the axes) over the trailing axes of layer norm's ``node``, as the primitives compute them."""
    axes = b.ints(node.params["axes"])
    d = b.op("Sub", [x, b.op("ReduceMean", [x, axes], keepdims=1)])
    var = b.op("ReduceMean", [b.op("Mul", [d, d]), axes], keepdims=1)
    return d, b.op("Sqrt", [b.op("Add", [var, b.scalar(node.params["eps"], node.dtype)])]), axes


@rule("layer_norm")
def _layer_norm(b, node, args):
    # (x − μ) / √(σ² + ε) · γ + β over the trailing axes, as the primitive computes it.
    x, gamma, beta = (b.cast(a, node.dtype) for a in args)
    d, scale, _ = _standardized(b, node, x)
    return b.op("Add", [b.op("Mul", [b.op("Div", [d, scale]), gamma]), beta], hint=_hint(node))


@rule("standardize_jacobian")
def _standardize_jacobian(b, node, args):
    # (v − mean v − x̂·mean(v ⊙ x̂)) / √(σ² + ε), x̂ = (x − μ)/√(σ² + ε) over the trailing axes.
    v, x = _all_as(b, args, node.dtype)
    d, scale, axes = _standardized(b, node, x)
    xhat = b.op("Div", [d, scale])
    dot = b.op("ReduceMean", [b.op("Mul", [v, xhat]), axes], keepdims=1)
    g = b.op("Sub", [b.op("Sub", [v, b.op("ReduceMean", [v, axes], keepdims=1)]), b.op("Mul", [xhat, dot])])
    return b.op("Div", [g, scale], hint=_hint(node))


@rule("standardized_sum")
def _standardized_sum(b, node, args):
    # Σ over the leading axes of ct ⊙ x̂, x̂ = (x − μ)/√(σ² + ε) over the trailing axes.
    ct, x = _all_as(b, args, node.dtype)
    d, scale, _ = _standardized(b, node, x)
    product = b.op("Mul", [ct, b.op("Div", [d, scale])])
    leading = list(range(x.ndim - len(node.params["axes"])))
    if not leading:
        return b.op("Identity", [product], hint=_hint(node))
    return b.op("ReduceSum", [product, b.ints(leading)], keepdims=0, hint=_hint(node))


@rule("any", "all")
def _any_all(b, node, args):
    x = args[0]
    truth = b.cast(x, np.bool_)
    if node.op == "all":
        truth = Value(b.op("Not", [truth]), x.shape, np.bool_)
    count = Value(_reduce(b, "ReduceSum", b.cast(truth, np.int64), node.params["axis"],
                          node.params["keepdims"]), node.shape, np.int64)
    cmp = "Greater" if node.op == "any" else "Equal"
    return b.op(cmp, [count, b.scalar(0, np.int64)], hint=_hint(node))


def _shifted(b, x: Value, axis, gamma):
    """((x − c)/γ, c) with c the max over ``axis`` (kept), 0 where not finite: the stable shift.

    Shifted before the division, as the primitive does: x/γ overflows for γ < 1 near the largest float.
    """
    c = b.op("ReduceMax", [x, b.ints(axis)], keepdims=1)
    finite = b.op("Not", [b.op("Or", [b.op("IsNaN", [c]), b.op("IsInf", [c])])])
    c = b.op("Where", [finite, c, b.scalar(0, x.dtype)])
    z = b.op("Sub", [x, c])
    if gamma != 1.0:
        z = b.op("Div", [z, b.scalar(gamma, x.dtype)])
    return z, c


@rule("logsumexp")
def _logsumexp(b, node, args):
    x = b.cast(args[0], node.dtype)
    axis, gamma = node.params["axis"], float(node.params["gamma"])
    z, c = _shifted(b, x, axis, gamma)
    out = b.op("Log", [b.op("ReduceSum", [b.op("Exp", [z]), b.ints(axis)], keepdims=1)])
    if gamma != 1.0:
        out = b.op("Mul", [out, b.scalar(gamma, node.dtype)])
    out = b.op("Add", [out, c])  # lse_γ(x) = γ·lse((x − c)/γ) + c
    if not node.params["keepdims"]:
        out = b.reshape(out, node.shape)
    return b.op("Identity", [out], hint=_hint(node))


@rule("softargmax")
def _softargmax(b, node, args):
    x = b.cast(args[0], node.dtype)
    axis = node.params["axis"]
    z, _ = _shifted(b, x, axis, float(node.params["gamma"]))
    e = b.op("Exp", [z])
    return b.op("Div", [e, b.op("ReduceSum", [e, b.ints(axis)], keepdims=1)], hint=_hint(node))


def _class_column(b, idx: Value) -> str:
    """Class indices (...) as an int64 column (..., 1) for GatherElements along the last axis."""
    return b.op("Unsqueeze", [_int64(b, idx), b.ints([-1])])


@rule("softmax_cross_entropy")
def _softmax_cross_entropy(b, node, args):
    # lse(z) − z[t] along the last axis, as the primitive computes it.
    z = b.cast(args[0], node.dtype)
    axis = (len(z.shape) - 1,)
    shifted, c = _shifted(b, z, axis, 1.0)
    lse = b.op("Add", [b.op("Log", [b.op("ReduceSum", [b.op("Exp", [shifted]), b.ints(axis)], keepdims=1)]), c])
    picked = b.op("GatherElements", [z, _class_column(b, args[1])], axis=axis[0])
    return b.op("Reshape", [b.op("Sub", [lse, picked]), b.ints(node.shape)], hint=_hint(node))


@rule("softmax_cross_entropy_grad")
def _softmax_cross_entropy_grad(b, node, args):
    # (softargmax(z) − onehot(t))·ct along the last axis (softargmax recomputed: the same value).
    ct, z = b.cast(args[0], node.dtype), b.cast(args[1], node.dtype)
    axis = (len(z.shape) - 1,)
    e = b.op("Exp", [_shifted(b, z, axis, 1.0)[0]])
    p = b.op("Div", [e, b.op("ReduceSum", [e, b.ints(axis)], keepdims=1)])
    hit = b.op("Equal", [_class_column(b, args[3]), b.const(np.arange(z.shape[-1], dtype=np.int64), "classes")])
    diff = b.op("Sub", [p, b.op("Cast", [hit], to=b.tensor_type(node.dtype))])
    return b.op("Mul", [diff, b.op("Unsqueeze", [ct, b.ints([-1])])], hint=_hint(node))


@rule("softargmax_jacobian")
def _softargmax_jacobian(b, node, args):
    # scale · y ⊙ (v − Σ v⊙y) over the axes.
    v, y = _all_as(b, args, node.dtype)
    dots = b.op("ReduceSum", [b.op("Mul", [v, y]), b.ints(node.params["axis"])], keepdims=1)
    g = b.op("Mul", [y, b.op("Sub", [v, dots])])
    return b.op("Mul", [g, b.scalar(node.params["scale"], node.dtype)], hint=_hint(node))


@rule("masked_softargmax")
def _masked_softargmax(b, node, args):
    x, mask = _all_as(b, args, node.dtype)
    z = b.op("Add", [b.op("Mul", [x, b.scalar(node.params["scale"], node.dtype)]), mask])
    shifted, _ = _shifted(b, Value(z, node.shape, node.dtype), node.params["axis"], 1.0)
    e = b.op("Exp", [shifted])
    return b.op("Div", [e, b.op("ReduceSum", [e, b.ints(node.params["axis"])], keepdims=1)], hint=_hint(node))


@rule("argmax", "argmin")
def _argmax(b, node, args):
    x, axis = args[0], node.params["axis"]
    op_type = "ArgMax" if node.op == "argmax" else "ArgMin"
    if axis is None:
        flat = Value(b.reshape(x, (-1,)), (int(np.prod(x.shape)),), x.dtype)
        hot = _one_hot_along(b, flat, 0, op_type, node.dtype)
        return b.op("Reshape", [hot, b.ints(node.shape)], hint=_hint(node))
    return b.op("Identity", [_one_hot_along(b, x, axis, op_type, node.dtype)], hint=_hint(node))


def _one_hot_along(b, x: Value, axis: int, op_type: str, dtype) -> str:
    k = b.op(op_type, [x], axis=axis, keepdims=1, select_last_index=0)
    if x.dtype.kind == "f":
        # numpy's argmax and argmin stop at the first NaN; ONNX Runtime's skip NaN.
        nan = b.op("Cast", [b.op("IsNaN", [x])], to=b.tensor_type(np.int32))
        has_nan = b.op("Greater", [b.op("ReduceMax", [nan, b.ints([axis])], keepdims=1), b.scalar(0, np.int32)])
        first_nan = b.op("ArgMax", [nan], axis=axis, keepdims=1, select_last_index=0)
        k = b.op("Where", [has_nan, first_nan, k])
    n = x.shape[axis]
    positions = np.arange(n, dtype=np.int64).reshape([n if i == axis else 1 for i in range(x.ndim)])
    return b.op("Cast", [b.op("Equal", [k, b.const(positions, "positions")])], to=b.tensor_type(dtype))


@rule("cumsum")
def _cumsum(b, node, args):
    x = b.cast(args[0], node.dtype)
    return b.op("CumSum", [x, b.const(np.asarray(node.params["axis"], np.int64), "axis")],
                reverse=int(node.params["reverse"]), hint=_hint(node))


@rule("cumprod")
def _cumprod(b, node, args):
    # ∏_{j <= i} x_j as a product over a masked square: exact, O(n²) memory along the axis.
    x = b.cast(args[0], node.dtype)
    axis, n = node.params["axis"], node.shape[node.params["axis"]]
    perm = [i for i in range(x.ndim) if i != axis] + [axis]
    moved = b.op("Transpose", [x], perm=perm)
    expanded = b.op("Unsqueeze", [moved, b.ints([-2])])
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    mask = (j >= i) if node.params["reverse"] else (j <= i)
    masked = b.op("Where", [b.const(mask, "mask"), expanded, b.scalar(1, node.dtype)])
    prod = b.op("ReduceProd", [masked, b.ints([-1])], keepdims=0)
    return b.op("Transpose", [prod], perm=list(np.argsort(perm)), hint=_hint(node))


@rule("sort", "argsort")
def _sort(b, node, args):
    x, axis = args[0], node.params["axis"]
    values, indices = b.op("TopK", [x, b.ints([x.shape[axis]])], outputs=2, axis=axis, largest=0, sorted=1)
    if node.op == "sort":
        return b.op("Identity", [values], hint=_hint(node))
    return b.op("Cast", [indices], to=b.tensor_type(node.dtype), hint=_hint(node))

# --------------------------------------------------------------- indexing


def _is_basic(index) -> bool:
    return not any(isinstance(i, np.ndarray) for i in index)


def _expand_ellipsis(index, ndim):
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    out = []
    for item in index:
        if item is Ellipsis:
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(item)
    if Ellipsis not in index:
        out.extend([slice(None)] * (ndim - consumed))
    return out


def _flat_positions(shape, index) -> np.ndarray:
    """Where each entry of ``zeros(shape)[index]`` comes from, as flat positions (numpy's own indexing)."""
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)[index]


@rule("getitem")
def _getitem(b, node, args):
    x, index = args[0], node.params["index"]
    if not _is_basic(index):
        flat = b.reshape(x, (-1,))
        return b.op("Gather", [flat, b.const(_flat_positions(x.shape, index), "positions")], axis=0,
                    hint=_hint(node))
    starts, ends, axes, steps = [], [], [], []
    axis = 0
    for item in _expand_ellipsis(index, x.ndim):
        if item is None:
            continue
        d = x.shape[axis]
        if isinstance(item, int):
            i = item + d if item < 0 else item
            starts.append(i), ends.append(i + 1), axes.append(axis), steps.append(1)
        else:
            start, stop, step = item.indices(d)
            if (start, stop, step) != (0, d, 1):
                if step < 0 and stop < 0:
                    stop = INT64_MIN
                starts.append(start), ends.append(stop), axes.append(axis), steps.append(step)
        axis += 1
    out = x.name
    if axes:
        out = b.op("Slice", [x, b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)])
    return b.op("Reshape", [out, b.ints(node.shape)], hint=_hint(node))


def _scatter_add_flat(b, updates: Value, positions: np.ndarray | str, size: int, dtype) -> str:
    """Zeros of length ``size`` with ``updates`` (flattened) added at ``positions`` (repeats accumulate)."""
    idx = positions if isinstance(positions, str) else b.const(positions.reshape(-1, 1), "positions")
    flat = b.reshape(updates, (-1,))
    return b.op("ScatterND", [b.zeros((size,), dtype), idx, flat], reduction="add")


@rule("index_add")
def _index_add(b, node, args):
    shape, index = node.params["shape"], node.params["index"]
    positions = _flat_positions(shape, index)
    size = int(np.prod(shape, dtype=np.int64))
    out = _scatter_add_flat(b, args[0], positions, size, node.dtype)
    return b.op("Reshape", [out, b.ints(shape)], hint=_hint(node))


@rule("concatenate")
def _concatenate(b, node, args):
    return b.op("Concat", _all_as(b, args, node.dtype), axis=node.params["axis"], hint=_hint(node))


def _int64(b, v: Value) -> Value:
    return b.cast(v, np.int64)


@rule("take")
def _take(b, node, args):
    return b.op("Gather", [args[0], _int64(b, args[1])], axis=node.params["axis"], hint=_hint(node))


@rule("take_add")
def _take_add(b, node, args):
    ct, indices = args
    size, axis = node.params["size"], node.params["axis"]
    a = int(np.prod(ct.shape[:axis], dtype=np.int64))
    i = int(np.prod(indices.shape, dtype=np.int64))
    rest = int(np.prod(ct.shape[axis + indices.ndim:], dtype=np.int64))
    blocks = b.op("Transpose", [b.reshape(ct, (a, i, rest))], perm=[1, 0, 2])           # (I, A, R)
    idx = b.op("Mod", [b.reshape(_int64(b, indices), (i, 1)), b.scalar(size, np.int64)], fmod=0)
    summed = b.op("ScatterND", [b.zeros((size, a, rest), node.dtype), idx, blocks], reduction="add")
    back = b.op("Transpose", [summed], perm=[1, 0, 2])
    return b.op("Reshape", [back, b.ints(node.shape)], hint=_hint(node))


def _along_shape(x_shape, idx_shape, axis):
    shape = list(np.broadcast_shapes(tuple(1 if i == axis else d for i, d in enumerate(x_shape)),
                                     tuple(1 if i == axis else d for i, d in enumerate(idx_shape))))
    shape[axis] = idx_shape[axis]
    return tuple(shape)


def _expand_to(b, v: Value, shape) -> Value:
    if tuple(v.shape) == tuple(shape):
        return v
    return Value(b.op("Expand", [v, b.ints(shape)]), shape, v.dtype)


@rule("take_along_axis")
def _take_along_axis(b, node, args):
    x, idx = args
    axis = node.params["axis"]
    full = node.shape
    x = _expand_to(b, x, full[:axis] + (x.shape[axis],) + full[axis + 1:])
    idx = _expand_to(b, _int64(b, idx), full)
    idx = b.op("Mod", [idx, b.scalar(x.shape[axis], np.int64)], fmod=0)
    return b.op("GatherElements", [x, idx], axis=axis, hint=_hint(node))


@rule("put_along_axis_add")
def _put_along_axis_add(b, node, args):
    v, idx = args
    shape, axis = node.params["shape"], node.params["axis"]
    full = _along_shape(shape, idx.shape, axis)
    target = tuple(shape[axis] if i == axis else d for i, d in enumerate(full))
    idx = _expand_to(b, _int64(b, idx), full)
    idx = b.op("Mod", [idx, b.scalar(shape[axis], np.int64)], fmod=0)
    out = b.op("ScatterElements", [b.zeros(target, node.dtype), idx, b.cast(v, node.dtype)], axis=axis,
               reduction="add")
    # Axes of size 1 that the indices broadcast: every value there lands on the one entry.
    summed = tuple(i for i, (d, s) in enumerate(zip(target, shape)) if d != s)
    return _reduce(b, "ReduceSum", Value(out, target, node.dtype), summed, True, _hint(node))


@rule("one_hot")
def _one_hot(b, node, args):
    n = node.params["num_classes"]
    idx = b.op("Unsqueeze", [_int64(b, args[0]), b.ints([-1])])
    hit = b.op("Equal", [idx, b.const(np.arange(n, dtype=np.int64), "classes")])
    return b.op("Cast", [hit], to=b.tensor_type(node.dtype), hint=_hint(node))


@rule("pad")
def _pad(b, node, args):
    x = args[0]
    pw = node.params["pad_width"]
    pads = [p[0] for p in pw] + [p[1] for p in pw]
    return b.op("Pad", [x, b.ints(pads), b.scalar(node.params["value"], x.dtype)], mode="constant",
                hint=_hint(node))


@rule("flip")
def _flip(b, node, args):
    axes = list(node.params["axis"])
    if not axes:
        return b.op("Identity", [args[0]], hint=_hint(node))
    k = len(axes)
    return b.op("Slice", [args[0], b.ints([-1] * k), b.ints([INT64_MIN] * k), b.ints(axes), b.ints([-1] * k)],
                hint=_hint(node))


@rule("roll")
def _roll(b, node, args):
    x, shift, axis = args[0], node.params["shift"], node.params["axis"]
    if axis is None:
        flat = Value(b.reshape(x, (-1,)), (int(np.prod(x.shape)),), x.dtype)
        rolled = _roll_axes(b, flat, [(int(np.sum(shift)), 0)])
        return b.op("Reshape", [rolled, b.ints(node.shape)], hint=_hint(node))
    shifts = shift if isinstance(shift, tuple) else (shift,)
    axes = axis if isinstance(axis, tuple) else (axis,)
    pairs = list(zip(np.broadcast_to(shifts, np.broadcast_shapes((len(shifts),), (len(axes),))),
                     np.broadcast_to(axes, np.broadcast_shapes((len(shifts),), (len(axes),)))))
    return b.op("Identity", [_roll_axes(b, x, [(int(s), int(a)) for s, a in pairs])], hint=_hint(node))


def _roll_axes(b, x: Value, pairs) -> str:
    out = x.name
    for s, a in pairs:
        a = a % x.ndim
        n = x.shape[a]
        if n == 0 or s % n == 0:
            continue
        s %= n
        tail = b.op("Slice", [out, b.ints([n - s]), b.ints([n]), b.ints([a])])
        head = b.op("Slice", [out, b.ints([0]), b.ints([n - s]), b.ints([a])])
        out = b.op("Concat", [tail, head], axis=a)
    return out


@rule("linear")
def _linear(b, node, args):
    x, w, bias = _all_as(b, args, node.dtype)
    product = b.op("MatMul", [x, b.op("Transpose", [w], perm=[1, 0])])
    return b.op("Add", [product, bias], hint=_hint(node))


@rule("linear_relu")
def _linear_relu(b, node, args):
    return b.op("Relu", [_linear(b, node, args)], hint=_hint(node))


@rule("einsum")
def _einsum(b, node, args):
    # numpy broadcasts size-1 axes (and the axes under "..."); ONNX's Einsum wants them expanded.
    spec = node.params["subscripts"]
    terms = spec.split("->")[0].split(",")
    args = _all_as(b, args, node.dtype)
    sizes: dict = {}
    ellipses = []
    for term, a in zip(terms, args):
        letters = term.replace("...", "")
        n_ell = a.ndim - len(letters)
        ellipses.append(a.shape[:n_ell] if "..." in term else ())
        named = a.shape[n_ell:] if term.startswith("...") else a.shape[:len(letters)] if "..." not in term else None
        if named is None:  # "..." in the middle: letters before and after it
            before, after = term.split("...")
            named = a.shape[:len(before)] + a.shape[a.ndim - len(after):]
        for letter, d in zip(letters, named):
            sizes[letter] = max(sizes.get(letter, 1), d)
    ell = np.broadcast_shapes(*ellipses) if ellipses else ()
    expanded = []
    for term, a in zip(terms, args):
        if "..." in term:
            before, after = term.split("...")
            target = tuple(sizes[c] for c in before) + tuple(ell) + tuple(sizes[c] for c in after)
        else:
            target = tuple(sizes[c] for c in term)
        expanded.append(_expand_to(b, a, target) if a.shape != target else a)
    return b.op("Einsum", expanded, equation=spec, hint=_hint(node))

# ------------------------------------------------------------ linear algebra


@rule("det")
def _det(b, node, args):
    return b.op("Det", [b.cast(args[0], node.dtype)], hint=_hint(node))


@rule("logabsdet")
def _logabsdet(b, node, args):
    return b.op("Log", [b.op("Abs", [b.op("Det", [b.cast(args[0], node.dtype)])])], hint=_hint(node))


@rule("slogdet_sign")
def _slogdet_sign(b, node, args):
    return b.op("Sign", [b.op("Det", [b.cast(args[0], node.dtype)])], hint=_hint(node))

# ------------------------------------------------ convolution and pooling


def _window_positions(hw, kernel, stride) -> np.ndarray:
    """(P, K): flat (row-major) input positions of each output position's window."""
    h, w = hw
    kh, kw = kernel
    ho, wo = (h - kh) // stride[0] + 1, (w - kw) // stride[1] + 1
    rows = (np.arange(ho) * stride[0])[:, None, None, None] + np.arange(kh)[None, None, :, None]
    cols = (np.arange(wo) * stride[1])[None, :, None, None] + np.arange(kw)[None, None, None, :]
    return (rows * w + cols).reshape(ho * wo, kh * kw).astype(np.int64)


def _columns(b, x: Value, kernel, stride) -> tuple[str, tuple]:
    """x (..., H, W) -> its windows (..., P, K) by one Gather; returns (name, (Ho, Wo))."""
    h, w = x.shape[-2:]
    lead = x.shape[:-2]
    flat = b.reshape(x, lead + (h * w,))
    idx = _window_positions((h, w), kernel, stride)
    ho, wo = (h - kernel[0]) // stride[0] + 1, (w - kernel[1]) // stride[1] + 1
    return b.op("Gather", [flat, b.const(idx, "windows")], axis=len(lead)), (ho, wo)


def _uncolumns(b, cols: str, lead, hw, kernel, stride, dtype) -> str:
    """The transpose of :func:`_columns`: (..., P, K) windows summed back into (..., H, W)."""
    h, w = hw
    idx = _window_positions(hw, kernel, stride).reshape(-1, 1)
    m = int(np.prod(lead, dtype=np.int64))
    p_k = idx.shape[0]
    moved = b.op("Transpose", [b.reshape(cols, (m, p_k))], perm=[1, 0])              # (P·K, M)
    summed = b.op("ScatterND", [b.zeros((h * w, m), dtype), b.const(idx, "windows"), moved], reduction="add")
    return b.reshape(b.op("Transpose", [summed], perm=[1, 0]), tuple(lead) + (h, w))


def _padded(b, x: Value, padding) -> Value:
    if tuple(padding) == (0, 0):
        return x
    ph, pw = padding
    pads = [0, 0, ph, pw, 0, 0, ph, pw]
    shape = x.shape[:2] + (x.shape[2] + 2 * ph, x.shape[3] + 2 * pw)
    return Value(b.op("Pad", [x, b.ints(pads), b.scalar(0, x.dtype)], mode="constant"), shape, x.dtype)


@rule("conv2d")
def _conv2d(b, node, args):
    return _convolution(b, node, *_all_as(b, args, node.dtype))


@rule("conv2d_bias")
def _conv2d_bias(b, node, args):
    return _convolution(b, node, *_all_as(b, args, node.dtype))


def _convolution(b, node, x, w, bias=None):
    """ONNX's Conv in float32 (its bias input included); in float64, which onnxruntime's Conv
    lacks, the windows contracted by an Einsum and the bias added per channel."""
    stride, padding = node.params["stride"], node.params["padding"]
    kernel = w.shape[2:]
    if node.dtype == np.float32:
        return b.op("Conv", [x, w] + ([] if bias is None else [bias]), strides=list(stride),
                    pads=[padding[0], padding[1]] * 2, kernel_shape=list(kernel), hint=_hint(node))
    cols, _ = _columns(b, _padded(b, x, padding), kernel, stride)                     # (N, C, P, K)
    wk = b.reshape(w, w.shape[:2] + (kernel[0] * kernel[1],))                          # (O, C, K)
    out = b.op("Einsum", [cols, wk], equation="ncpk,ock->nop")
    if bias is not None:
        out = b.op("Add", [out, b.reshape(bias, bias.shape + (1,))])                    # (N, O, P) + (O, 1)
    return b.op("Reshape", [out, b.ints(node.shape)], hint=_hint(node))


@rule("conv2d_input_grad")
def _conv2d_input_grad(b, node, args):
    g, w = _all_as(b, args, node.dtype)
    stride, padding, in_hw = node.params["stride"], node.params["padding"], node.params["in_hw"]
    kernel = w.shape[2:]
    n, o, ho, wo = g.shape
    c = w.shape[1]
    hp, wp = in_hw[0] + 2 * padding[0], in_hw[1] + 2 * padding[1]
    if node.dtype == np.float32:
        extra = [hp - ((ho - 1) * stride[0] + kernel[0]), wp - ((wo - 1) * stride[1] + kernel[1])]
        return b.op("ConvTranspose", [g, w], strides=list(stride), pads=[padding[0], padding[1]] * 2,
                    kernel_shape=list(kernel), output_padding=extra, hint=_hint(node))
    gf = b.reshape(g, (n, o, ho * wo))
    wk = b.reshape(w, (o, c, kernel[0] * kernel[1]))
    cols = b.op("Einsum", [gf, wk], equation="nop,ock->ncpk")
    full = _uncolumns(b, cols, (n, c), (hp, wp), kernel, stride, node.dtype)
    if tuple(padding) == (0, 0):
        return b.op("Identity", [full], hint=_hint(node))
    ph, pw = padding
    return b.op("Slice", [full, b.ints([ph, pw]), b.ints([ph + in_hw[0], pw + in_hw[1]]), b.ints([2, 3])],
                hint=_hint(node))


@rule("conv2d_weight_grad")
def _conv2d_weight_grad(b, node, args):
    x, g = _all_as(b, args, node.dtype)
    stride, padding, kernel = node.params["stride"], node.params["padding"], node.params["kernel"]
    n, o, ho, wo = g.shape
    cols, _ = _columns(b, _padded(b, x, padding), kernel, stride)                     # (N, C, P', K)
    # Windows that the output does not cover (a cotangent smaller than the full grid) are dropped.
    xp_shape = (x.shape[2] + 2 * padding[0], x.shape[3] + 2 * padding[1])
    full_ho = (xp_shape[0] - kernel[0]) // stride[0] + 1
    full_wo = (xp_shape[1] - kernel[1]) // stride[1] + 1
    if (full_ho, full_wo) != (ho, wo):
        keep = (np.arange(full_ho)[:ho, None] * full_wo + np.arange(full_wo)[None, :wo]).reshape(-1)
        cols = b.op("Gather", [cols, b.const(keep.astype(np.int64), "kept")], axis=2)
    gf = b.reshape(g, (n, o, ho * wo))
    out = b.op("Einsum", [cols, gf], equation="ncpk,nop->ock")
    return b.op("Reshape", [out, b.ints(node.shape)], hint=_hint(node))


def _pool_first_max(b, x: Value, window, stride):
    """(one-hot of each window's first maximum (..., P, K) in x's dtype, (Ho, Wo))."""
    cols, hw = _columns(b, x, window, stride)
    k = window[0] * window[1]
    first = b.op("ArgMax", [cols], axis=-1, keepdims=1, select_last_index=0)
    hot = b.op("Equal", [first, b.const(np.arange(k, dtype=np.int64), "window_positions")])
    return b.op("Cast", [hot], to=b.tensor_type(x.dtype)), hw


@rule("max_pool2d")
def _max_pool2d(b, node, args):
    x = args[0]
    window, stride = node.params["window"], node.params["stride"]
    if x.ndim == 4 and x.dtype in (np.float32, np.float64):
        return b.op("MaxPool", [x], kernel_shape=list(window), strides=list(stride), hint=_hint(node))
    cols, _ = _columns(b, x, window, stride)
    out = b.op("ReduceMax", [cols, b.ints([-1])], keepdims=0)
    return b.op("Reshape", [out, b.ints(node.shape)], hint=_hint(node))


@rule("max_pool2d_scatter")
def _max_pool2d_scatter(b, node, args):
    ct, x = args
    window, stride = node.params["window"], node.params["stride"]
    hot, (ho, wo) = _pool_first_max(b, b.cast(x, x.dtype), window, stride)
    lead = x.shape[:-2]
    ctf = b.reshape(b.cast(ct, node.dtype), lead + (ho * wo, 1))
    cols = b.op("Mul", [b.cast(Value(hot, (), x.dtype), node.dtype), ctf])
    return b.op("Identity", [_uncolumns(b, cols, lead, x.shape[-2:], window, stride, node.dtype)],
                hint=_hint(node))


@rule("max_pool2d_gather")
def _max_pool2d_gather(b, node, args):
    c, x = args
    window, stride = node.params["window"], node.params["stride"]
    hot, _ = _pool_first_max(b, x, window, stride)
    ccols, _ = _columns(b, c, window, stride)
    picked = b.op("ReduceSum", [b.op("Mul", [ccols, b.cast(Value(hot, (), x.dtype), c.dtype)]), b.ints([-1])],
                  keepdims=0)
    return b.op("Reshape", [picked, b.ints(node.shape)], hint=_hint(node))
