"""Elementwise primitives: arithmetic, the book's activations, comparisons, where.

Kink conventions (fixed and tested exactly): relu'(0) = 0, step'(x) = 0,
|x|'(0) = 0, and ``maximum``/``minimum`` split the gradient evenly between tied
operands. Seed 001 §4.4 fixes the values (relu(0) = 0, step(0) = 1) but no
derivative at a kink — its case split "u for u ≥ 0" would even suggest
relu'(0) = 1 —, so these derivatives are this library's choice (relu'(0) = 0 as
in PyTorch and JAX), not the seed's.
"""

from __future__ import annotations

import numpy as np

from ..core import Tensor, apply
from ..inlined import operation
from ..errors import ShapeError
from .batch import elementwise as elementwise_batch
from .registry import defprim
from .shapes import broadcast
from .structure import broadcast_to, sum_to_shape, unary_batch

# Derivative rules get operands as Tensors and return Tensors (or None for a
# zero contribution); these two helpers keep the rules one line each.


def _unb(ct, x):
    """Cotangent ``ct`` summed back to operand ``x``'s shape."""
    # (Most operands were not broadcast: no call then, on the sweep's hot path.)
    return ct if ct.shape == x.shape else sum_to_shape(ct, x.shape)


def _tangent_sum(out, *terms):
    """Sum of the non-None tangent terms, broadcast to the output's shape."""
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else add(total, term)
    if total is None:
        return None
    return broadcast_to(total, out.shape)


def _typed(name, dtype_of):
    """The broadcasting rule, with the output dtype the implementation really gives."""
    rule = broadcast(name)

    def typed(*operands, **params):
        shape, dtype = rule(*operands, **params)
        return shape, np.dtype(dtype_of(dtype))
    return typed


def _to_float(dtype):
    # numpy's promotion in exp, log, tanh, ...: integers become the smallest float that holds them.
    return np.result_type(dtype, np.float16)


def _float_or_float64(dtype):
    # true_divide and step: floats are kept, anything else becomes float64.
    return dtype if dtype.kind in "fc" else np.float64


def _elementwise(name, impl, vjp, jvp, dtype_of=None, reads=None):
    shape = broadcast(name) if dtype_of is None else _typed(name, dtype_of)
    return defprim(name, impl, vjp=vjp, jvp=jvp, shape=shape, batch=elementwise_batch, reads=reads)


def _neg_or_none(t):
    return None if t is None else negative(t)

# ------------------------------------------------------------- arithmetic


ADD = _elementwise("add", np.add,
              (lambda ct, out, x, y: _unb(ct, x), lambda ct, out, x, y: _unb(ct, y)),
              lambda t, out, x, y: _tangent_sum(out, t[0], t[1]), reads=())
SUBTRACT = _elementwise("subtract", np.subtract,
                   (lambda ct, out, x, y: _unb(ct, x), lambda ct, out, x, y: _unb(negative(ct), y)),
                   lambda t, out, x, y: _tangent_sum(out, t[0], _neg_or_none(t[1])), reads=())
MULTIPLY = _elementwise(
    "multiply", np.multiply,
    (lambda ct, out, x, y: _unb(multiply(ct, y), x), lambda ct, out, x, y: _unb(multiply(ct, x), y)),
    lambda t, out, x, y: _tangent_sum(out, (None if t[0] is None else multiply(t[0], y)),
                                      (None if t[1] is None else multiply(x, t[1]))))
DIVIDE = _elementwise(
    "divide", np.true_divide,
    (lambda ct, out, x, y: _unb(divide(ct, y), x),
     lambda ct, out, x, y: _unb(negative(divide(multiply(ct, out), y)), y)),
    lambda t, out, x, y: _tangent_sum(out, (None if t[0] is None else divide(t[0], y)),
                                      (None if t[1] is None else negative(divide(multiply(t[1], out), y)))),
    dtype_of=_float_or_float64)
NEGATIVE = _elementwise("negative", np.negative,
                  lambda ct, out, x: (negative(ct),),
                  lambda t, out, x: negative(t[0]))


@operation(ADD)
def add(x, y) -> Tensor:
    """x + y, broadcasting. Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.add(ad.Tensor([1., 2.]), 10.).value`` is ``[11., 12.]``.
    """
    return apply(ADD, x, y)


@operation(SUBTRACT)
def subtract(x, y) -> Tensor:
    """x - y, broadcasting. Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.subtract(ad.Tensor([[1.], [2.]]), ad.Tensor([1., 2.])).shape`` is ``(2, 2)``.
    """
    return apply(SUBTRACT, x, y)


@operation(MULTIPLY)
def multiply(x, y) -> Tensor:
    """x * y elementwise, broadcasting. Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.multiply(ad.Tensor([1., 2.]), ad.Tensor([3., 4.])).value`` is ``[3., 8.]``.
    """
    return apply(MULTIPLY, x, y)


@operation(DIVIDE)
def divide(x, y) -> Tensor:
    """x / y elementwise, broadcasting. Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.divide(ad.Tensor([1., 2.]), 4.).value`` is ``[.25, .5]``.
    """
    return apply(DIVIDE, x, y)


@operation(NEGATIVE)
def negative(x) -> Tensor:
    """-x. Shapes: (*s) -> (*s).

    Example: ``ad.negative(ad.Tensor([1., -2.])).value`` is ``[-1., 2.]``.
    """
    return apply(NEGATIVE, x)

# ------------------------------------------------------------------ power
# ``power`` takes either a static exponent (``x ** 3``: the exponent is a
# parameter, so integer powers stay exact and circuits can read them) or a
# Tensor exponent (``x ** y``: differentiable in both).


def _power_impl(x, y=None, *, exponent=None):
    if exponent is not None:
        # ndarray ** 2 is np.square for an integer 2 or a float array, and np.square's dtype
        # differs from np.power's for a bool x (int8 where bool ** 2.0 is float64): the Tensor
        # gives what numpy's own x ** exponent gives.
        square = exponent == 2 and (type(exponent) is int or x.dtype.kind in "fc")
        return np.square(x) if square else np.power(x, exponent)
    return np.power(x, y)


def _power_rule(x, y=None, *, exponent=None):
    if exponent is None:
        return broadcast("power")(x, y)
    # The static exponent's dtype is the implementation's own on an empty array (bool ** 2 is
    # int8, bool ** 2.0 float64, float32 ** 2.0 float32): one rule, not a second table.
    return tuple(x.shape), _power_impl(np.empty(0, x.dtype), exponent=exponent).dtype


def _static_power_derivative(x, exponent):
    """d/dx x**exponent for a static exponent other than 0 and 1: x·2 for the square, no power(x, 1) node."""
    return multiply(x, exponent) if exponent == 2 else multiply(power(x, exponent - 1), exponent)


def _power_x_derivative(x, y):
    """y·x^(y−1) for a Tensor exponent.

    Where x = 0 and y = 0 the power is x⁰ = 1 near x, so the derivative is 0, but
    the product would be 0·0⁻¹ = NaN (exponents such as arange(n) meet x = 0 there):
    the exponent is taken as 1 at that point only, giving 0·0⁰ = 0.
    """
    corner = multiply(equal(x, 0.0), equal(y, 0.0))
    return multiply(y, power(x, subtract(where(corner, 1.0, y), 1.0)))


def _power_vjp(ct, out, x, y=None, *, exponent=None):
    if exponent is not None:
        if exponent == 0:
            return (None,)
        if exponent == 1:
            return (ct,)
        return (multiply(ct, _static_power_derivative(x, exponent)),)
    dx = multiply(ct, _power_x_derivative(x, y))
    return (_unb(dx, x), _unb(multiply(ct, multiply(out, _safe_log(x))), y))


def _power_jvp(t, out, x, y=None, *, exponent=None):
    if exponent is not None:
        if exponent == 0:
            return None
        if exponent == 1:
            return t[0]
        return multiply(t[0], _static_power_derivative(x, exponent))
    tx = None if t[0] is None else multiply(t[0], _power_x_derivative(x, y))
    ty = None if t[1] is None else multiply(t[1], multiply(out, _safe_log(x)))
    return _tangent_sum(out, tx, ty)


def _safe_log(x):
    # d(x**y)/dy = x**y log x: defined as 0 where x <= 0 (the power is then
    # an integer power or NaN anyway), so that no NaN leaks into the gradient.
    positive = greater(x, 0.0)
    return where(positive, log(where(positive, x, 1.0)), 0.0)


POWER = defprim("power", _power_impl, vjp=_power_vjp, jvp=_power_jvp, shape=_power_rule,
                batch=elementwise_batch)


def power(x, y) -> Tensor:
    """x ** y. A Python number ``y`` is a static exponent; a Tensor ``y`` is differentiable.

    Shapes: (*a), (*b) -> broadcast(a, b). Example: ``ad.power(x, 3)`` is x³.
    """
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        return apply(POWER, x, exponent=y)
    return apply(POWER, x, y)

# --------------------------------------------------------- transcendental


EXP = _elementwise("exp", np.exp, lambda ct, out, x: (multiply(ct, out),),
             lambda t, out, x: multiply(t[0], out), dtype_of=_to_float)
LOG = _elementwise("log", np.log, lambda ct, out, x: (divide(ct, x),),
             lambda t, out, x: divide(t[0], x), dtype_of=_to_float)
SQRT = _elementwise("sqrt", np.sqrt, lambda ct, out, x: (divide(ct, multiply(out, 2.0)),),
              lambda t, out, x: divide(t[0], multiply(out, 2.0)), dtype_of=_to_float)
TANH = _elementwise("tanh", np.tanh,
              lambda ct, out, x: (multiply(ct, subtract(1.0, multiply(out, out))),),
              lambda t, out, x: multiply(t[0], subtract(1.0, multiply(out, out))), dtype_of=_to_float)


@operation(EXP)
def exp(x) -> Tensor:
    """e**x elementwise. Shapes: (*s) -> (*s).

    Example: ``ad.exp(ad.Tensor([0.])).value`` is ``[1.]``.
    """
    return apply(EXP, x)


@operation(LOG)
def log(x) -> Tensor:
    """Natural logarithm elementwise. Shapes: (*s) -> (*s).

    Example: ``ad.log(ad.Tensor([1.])).value`` is ``[0.]``.
    """
    return apply(LOG, x)


@operation(SQRT)
def sqrt(x) -> Tensor:
    """Square root elementwise. Shapes: (*s) -> (*s).

    Example: ``ad.sqrt(ad.Tensor([4., 9.])).value`` is ``[2., 3.]``.
    """
    return apply(SQRT, x)


@operation(TANH)
def tanh(x) -> Tensor:
    """Hyperbolic tangent elementwise. Shapes: (*s) -> (*s).

    Example: ``ad.tanh(ad.Tensor([0.])).value`` is ``[0.]``.
    """
    return apply(TANH, x)

# ------------------------------------------------------------ activations


def _logistic_impl(x):
    # Stable on both sides: exp of a non-positive number never overflows.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(np.result_type(x, np.float16), copy=False)


def _relu_mask(out):
    # relu'(0) = 0: the mask is x > 0, strictly, which is relu(x) > 0: read from
    # the output, the derivative does not keep x (a program then writes relu
    # into its dying input). Left boolean: multiplying by it keeps the
    # cotangent's dtype, and saves a cast of the whole array.
    return greater(out, 0.0)


LOGISTIC = _elementwise("logistic", _logistic_impl,
                  lambda ct, out, x: (multiply(ct, multiply(out, subtract(1.0, out))),),
                  lambda t, out, x: multiply(t[0], multiply(out, subtract(1.0, out))), dtype_of=_to_float)
# From this many elements of float32 / float64 on, relu compares x with an array of zeros.
_RELU_ZEROS_FROM = 4096


def _relu_impl(x, *, out=None):
    # A zero of x's own dtype keeps ints and bools as they are; ``out`` lets the
    # program executor write into x itself when x dies here (execution.py).
    if x.size < _RELU_ZEROS_FROM or (x.dtype != np.float32 and x.dtype != np.float64):
        return np.maximum(x, x.dtype.type(0), out=out)
    # numpy's maximum has no SIMD loop for a scalar (stride-0) operand: against
    # an array of zeros, allocated and then written in place, it is 2x faster
    # (LeNet's first relu, 64x6x24x24 float32: 0.039 ms against 0.082; float64
    # 0.072 against 0.099). The same ufunc: the same values, NaN and -0.0 included.
    zeros = np.zeros_like(x)
    return np.maximum(x, zeros, out=zeros if out is None else out)


RELU = _elementwise("relu", _relu_impl,
              lambda ct, out, x: (multiply(ct, _relu_mask(out)),),
              lambda t, out, x: multiply(t[0], _relu_mask(out)))
SOFTPLUS = _elementwise("softplus", lambda x: np.logaddexp(np.zeros((), x.dtype), x),
                  lambda ct, out, x: (multiply(ct, logistic(x)),),
                  lambda t, out, x: multiply(t[0], logistic(x)), dtype_of=_to_float)
STEP = _elementwise("step", lambda x: (x >= 0).astype(x.dtype if x.dtype.kind == "f" else np.float64),
              lambda ct, out, x: (None,), lambda t, out, x: None,
              dtype_of=_float_or_float64)
SIGN = _elementwise("sign", np.sign, lambda ct, out, x: (None,), lambda t, out, x: None)
ABS = _elementwise("abs", np.abs, lambda ct, out, x: (multiply(ct, sign(x)),),
             lambda t, out, x: multiply(t[0], sign(x)))


@operation(LOGISTIC)
def logistic(x) -> Tensor:
    """The logistic sigmoid 1 / (1 + e^-x), computed stably (alias ``sigmoid``). Shapes: (*s) -> (*s).

    Example: ``ad.logistic(ad.Tensor([0.])).value`` is ``[.5]``.
    """
    return apply(LOGISTIC, x)


sigmoid = logistic


@operation(RELU)
def relu(x) -> Tensor:
    """max(x, 0) elementwise; relu'(0) = 0. Shapes: (*s) -> (*s).

    Example: ``ad.relu(ad.Tensor([-1., 0., 2.])).value`` is ``[0., 0., 2.]``; its gradient is ``[0., 0., 1.]``.
    """
    return apply(RELU, x)


@operation(SOFTPLUS)
def softplus(x) -> Tensor:
    """log(1 + e^x) elementwise, computed stably. Shapes: (*s) -> (*s).

    Example: ``ad.softplus(ad.Tensor([0.])).value`` is ``[log 2]``.
    """
    return apply(SOFTPLUS, x)


@operation(STEP)
def step(x) -> Tensor:
    """Heaviside step: 1 where x >= 0, else 0; derivative 0 everywhere. Shapes: (*s) -> (*s).

    Example: ``ad.step(ad.Tensor([-1., 0., 2.])).value`` is ``[0., 1., 1.]``.
    """
    return apply(STEP, x)


@operation(SIGN)
def sign(x) -> Tensor:
    """-1, 0 or 1 elementwise; derivative 0. Shapes: (*s) -> (*s).

    Example: ``ad.sign(ad.Tensor([-3., 0., 2.])).value`` is ``[-1., 0., 1.]``.
    """
    return apply(SIGN, x)


@operation(ABS)
def abs(x) -> Tensor:  # noqa: A001 - numpy's name
    """|x| elementwise; |x|'(0) = 0. Shapes: (*s) -> (*s).

    Example: ``ad.abs(ad.Tensor([-3., 2.])).value`` is ``[3., 2.]``.
    """
    return apply(ABS, x)

# ------------------------------------------------------ maximum / minimum


def _tie_weights_impl(x, y):
    # Weight of x in max(x, y): 1 where x wins, 1/2 at a tie, 0 where y wins.
    dtype = np.result_type(x, y, np.float16)
    return ((x > y) + 0.5 * (x == y)).astype(dtype, copy=False)


TIE_WEIGHTS = defprim("tie_weights", _tie_weights_impl, vjp=lambda ct, out, x, y: (None, None),
                      jvp=lambda t, out, x, y: None, shape=broadcast("tie_weights"), nondiff=(0, 1),
                      batch=elementwise_batch)


def _pairwise_extremum_vjp(first_wins):
    def vjp(ct, out, x, y):
        wx = apply(TIE_WEIGHTS, *first_wins(x, y))
        return (_unb(multiply(ct, wx), x), _unb(multiply(ct, subtract(1.0, wx)), y))
    return vjp


def _extremum_jvp(first_wins):
    def jvp(t, out, x, y):
        wx = apply(TIE_WEIGHTS, *first_wins(x, y))
        return _tangent_sum(out, (None if t[0] is None else multiply(t[0], wx)),
                            (None if t[1] is None else multiply(t[1], subtract(1.0, wx))))
    return jvp


MAXIMUM = _elementwise("maximum", np.maximum, _pairwise_extremum_vjp(lambda x, y: (x, y)),
                  _extremum_jvp(lambda x, y: (x, y)))
MINIMUM = _elementwise("minimum", np.minimum, _pairwise_extremum_vjp(lambda x, y: (y, x)),
                  _extremum_jvp(lambda x, y: (y, x)))


@operation(MAXIMUM)
def maximum(x, y) -> Tensor:
    """Elementwise max; at ties the gradient is split evenly. Shapes: (*a), (*b) -> broadcast(a, b).

    Example: the gradient of ``ad.maximum(x, 1.).sum()`` at x = ``[0., 1., 2.]`` is ``[0., .5, 1.]``.
    """
    return apply(MAXIMUM, x, y)


@operation(MINIMUM)
def minimum(x, y) -> Tensor:
    """Elementwise min; at ties the gradient is split evenly. Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.minimum(ad.Tensor([1., 5.]), 3.).value`` is ``[1., 3.]``.
    """
    return apply(MINIMUM, x, y)

# ---------------------------------------------------- comparisons, where


def lowest_finite(lse):
    """``lse`` (a log-sum-exp's output) with −inf raised to its dtype's lowest finite number.

    The derivative of a log-sum-exp is exp(x − lse); over entries that are all
    −inf, lse is −inf whatever finite step they take (derivative 0), but x − lse
    is −inf + inf = NaN, and 0 · NaN poisons even a loss that masks the slice
    out. Against the lowest finite number, x − lse is −inf and exp gives 0;
    every other lse is unchanged. One ``maximum`` node in a recorded rule (it
    runs again on other values); a plain array is copied only when it holds −inf.
    Shapes: (*s) -> (*s).
    For instance [−inf, 0.0] in float64 becomes [−1.797…e308, 0.0].
    """
    floor = float(np.finfo(lse.dtype).min)
    if type(lse) is np.ndarray and not np.isneginf(lse).any():
        return lse
    return maximum(lse, floor)


def _comparison(name, impl):
    return defprim(name, impl, vjp=lambda ct, out, x, y: (None, None),
                   jvp=lambda t, out, x, y: None, shape=_typed(name, lambda d: np.bool_), nondiff=(0, 1),
                   batch=elementwise_batch)


EQUAL = _comparison("equal", np.equal)
NOT_EQUAL = _comparison("not_equal", np.not_equal)
LESS = _comparison("less", np.less)
LESS_EQUAL = _comparison("less_equal", np.less_equal)
GREATER = _comparison("greater", np.greater)
GREATER_EQUAL = _comparison("greater_equal", np.greater_equal)


@operation(EQUAL)
def equal(x, y) -> Tensor:
    """x == y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.equal(ad.Tensor([1., 2.]), 2.).value`` is ``[False, True]``.
    """
    return apply(EQUAL, x, y)


@operation(NOT_EQUAL)
def not_equal(x, y) -> Tensor:
    """x != y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.not_equal(ad.Tensor([1., 2.]), 2.).value`` is ``[True, False]``.
    """
    return apply(NOT_EQUAL, x, y)


@operation(LESS)
def less(x, y) -> Tensor:
    """x < y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.less(ad.Tensor([1., 2.]), 2.).value`` is ``[True, False]``.
    """
    return apply(LESS, x, y)


@operation(LESS_EQUAL)
def less_equal(x, y) -> Tensor:
    """x <= y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.less_equal(ad.Tensor([1., 2.]), 2.).value`` is ``[True, True]``.
    """
    return apply(LESS_EQUAL, x, y)


@operation(GREATER)
def greater(x, y) -> Tensor:
    """x > y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.greater(ad.Tensor([1., 2.]), 1.).value`` is ``[False, True]``.
    """
    return apply(GREATER, x, y)


@operation(GREATER_EQUAL)
def greater_equal(x, y) -> Tensor:
    """x >= y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.greater_equal(ad.Tensor([1., 2.]), 2.).value`` is ``[False, True]``.
    """
    return apply(GREATER_EQUAL, x, y)


def _where_vjp(ct, out, cond, x, y):
    return (None, _unb(where(cond, ct, 0.0), x), _unb(where(cond, 0.0, ct), y))


def _where_jvp(t, out, cond, x, y):
    tx = t[1] if t[1] is not None else 0.0
    ty = t[2] if t[2] is not None else 0.0
    return broadcast_to(where(cond, tx, ty), out.shape)


def _where_rule(cond, x, y):
    shape, _ = broadcast("where")(cond, x, y)
    return shape, np.result_type(x.dtype, y.dtype)


WHERE = defprim("where", np.where, vjp=_where_vjp, jvp=_where_jvp, shape=_where_rule, nondiff=(0,),
                batch=elementwise_batch, reads=(0,))


def where(cond, x, y) -> Tensor:
    """x where ``cond`` is true, else y (``cond`` gets no gradient). Shapes: (*c), (*a), (*b) -> broadcast(c, a, b).

    Example: ``ad.where(np.array([True, False]), ad.Tensor([1., 2.]), 0.).value`` is ``[1., 0.]``.
    """
    return apply(WHERE, cond, x, y)

# ------------------------------------------------ stop_gradient, astype


STOP_GRADIENT = defprim("stop_gradient", lambda x: x, vjp=lambda ct, out, x: (None,),
                        jvp=lambda t, out, x: None, shape=lambda x: (x.shape, x.dtype), nondiff=(0,),
                        batch=unary_batch)


@operation(STOP_GRADIENT)
def stop_gradient(x) -> Tensor:
    """The value of x, through which no derivative flows. Shapes: (*s) -> (*s).

    Example: ``ad.grad(lambda x: (x * ad.stop_gradient(x)).sum())(np.array([3.]))`` is ``[3.]``, not ``[6.]``.
    """
    return apply(STOP_GRADIENT, x)


def _astype_vjp(ct, out, x, *, dtype):
    if x.dtype.kind not in "fc" or np.dtype(dtype).kind not in "fc":
        return (None,)
    return (astype(ct, x.dtype),)


def _astype_jvp(t, out, x, *, dtype):
    if np.dtype(dtype).kind not in "fc":
        return None
    return astype(t[0], dtype)


ASTYPE = defprim("astype", lambda x, *, dtype: x.astype(dtype, copy=False), vjp=_astype_vjp,
                 jvp=_astype_jvp, shape=lambda x, *, dtype: (x.shape, np.dtype(dtype)),
                 batch=unary_batch)


def astype(x, dtype) -> Tensor:
    """x converted to ``dtype``; derivatives flow between floating dtypes only.

    Shapes: (*s) -> (*s). Example: ``ad.astype(ad.Tensor([1.5, 2.]), "int64").value`` is ``[1, 2]``.
    """
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise ShapeError(f"astype: Expect: a numpy dtype (np.float32, 'int64', ...). Actual: {dtype!r}") from None
    return apply(ASTYPE, x, dtype=dtype)
