"""Elementwise primitives, derivative from partials (1 of 2): arithmetic, exp/log/sqrt/tanh, the
book's activations, maximum/minimum, comparisons, where, stop_gradient, astype; and
:func:`defelementwise`, which states each one's derivative once.

Each primitive here and in ``mathfuncs.py`` gives one partial derivative
∂out/∂input per input; its VJP (un-broadcast ∂out/∂input × cotangent, per
input) and its JVP (Σ ∂out/∂input × tangent) both follow from them. This module
holds what the operators and the layers use; ``mathfuncs.py`` numpy's other math
functions (trigonometric, hyperbolic, log/exp variants, rounding, clip, ...):
a new elementwise primitive goes there, unless a module below it needs it.

Kink conventions (fixed and tested exactly): relu'(0) = 0, step'(x) = 0,
|x|'(0) = 0, and ``maximum``/``minimum`` split the gradient evenly between tied
operands. Seed 001 §4.4 fixes the values (relu(0) = 0, step(0) = 1) but no
derivative at a kink — its case split "u for u ≥ 0" would even suggest
relu'(0) = 1 —, so these derivatives are this library's choice (relu'(0) = 0 as
in PyTorch and JAX), not the seed's.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..core import Primitive, Tensor, apply
from ..inlined import operation
from ..errors import AutogradDagError, ShapeError
from .batch import elementwise as elementwise_batch
from .registry import OUT, defprim
from .shapes import broadcast
from .structure import broadcast_to, sum_to_shape, unary_batch

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


# ----------------------------------------------- derivative from partials
# A partial derivative is stated as its product with the incoming derivative,
# g ↦ g · ∂out/∂input (g a cotangent or a tangent): ``divide`` then writes
# g / y (one node, rounded once, not g · (1/y)), and a mask selects with
# ``where`` instead of multiplying by an array of zeros and ones.


class _Constant:
    """A constant partial derivative: the incoming derivative passes through, no node multiplies it."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


ONE = _Constant("ONE")              # ∂out/∂input = 1: the derivative passes unchanged (add)
MINUS_ONE = _Constant("MINUS_ONE")  # ∂out/∂input = -1: it passes negated (subtract, negative)


def _passed(g, out, *inputs, **params):
    return g


def _negated(g, out, *inputs, **params):
    return negative(g)


def _takes_params(impl) -> bool:
    """Whether ``impl`` takes keyword parameters (a ufunc takes operands only)."""
    if isinstance(impl, np.ufunc):
        return False
    return any(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in inspect.signature(impl).parameters.values())


def _vjp_part(partial, position: int, arity: int, keywords: bool):
    """The VJP rule of input ``position``: ``partial`` of the cotangent, summed back to the input's shape."""
    if partial is None:
        return None
    if arity == 1 and not isinstance(partial, _Constant):
        return partial  # (the one operand has the output's shape: nothing to sum)
    if arity == 2 and not keywords:
        # Binary rules spelled out: they run for most nodes of a backward sweep, where operands
        # passed as a tuple and parameters as a dict measured 0.1 µs more per call.
        if partial is ONE:
            if position == 0:
                return lambda ct, out, x, y: ct if ct.shape == x.shape else sum_to_shape(ct, x.shape)
            return lambda ct, out, x, y: ct if ct.shape == y.shape else sum_to_shape(ct, y.shape)
        scale = _negated if partial is MINUS_ONE else partial

        def binary_part(ct, out, x, y):
            g = scale(ct, out, x, y)
            shape = y.shape if position else x.shape
            return g if g is None or g.shape == shape else sum_to_shape(g, shape)
        return binary_part
    scale = _passed if partial is ONE else _negated if partial is MINUS_ONE else partial

    def part(ct, out, *inputs, **params):
        g = scale(ct, out, *inputs, **params)
        shape = inputs[position].shape
        return g if g is None or g.shape == shape else sum_to_shape(g, shape)
    return part


def _jvp(partials):
    """The JVP rule: Σ partial(tangent) over the inputs with a tangent, broadcast to the output's shape."""
    if all(p is None for p in partials):
        return lambda tangents, out, *inputs, **params: None
    if len(partials) == 1 and not isinstance(partials[0], _Constant):
        partial = partials[0]
        return lambda tangents, out, x, **params: partial(tangents[0], out, x, **params)

    def jvp(tangents, out, *inputs, **params):
        total = None
        for partial, t in zip(partials, tangents):
            if t is None or partial is None:
                continue
            term = t if partial is ONE else negative(t) if partial is MINUS_ONE else partial(t, out, *inputs, **params)
            if term is not None:
                total = term if total is None else add(total, term)
        return total if total is None or total.shape == out.shape else broadcast_to(total, out.shape)
    return jvp


def defelementwise(name: str, impl, partials: tuple, *, reads: tuple | None = None, dtype_of=None,
                   shape=None, nondiff: tuple[int, ...] = (), batch=elementwise_batch) -> Primitive:
    """Register an elementwise primitive whose VJP and JVP both follow from its partial derivatives.

    ``partials`` has one entry per input: ``scale(g, out, *inputs, **params)``
    returning g · ∂out/∂input with primitive functions (so that the derivative
    differentiates again; None for 0 there), or :data:`ONE` / :data:`MINUS_ONE`
    for ±1 (no node multiplies by them), or None for 0 everywhere. The VJP of
    input i is ``scale_i(ct)`` summed back to the input's shape; the JVP is
    Σ scale_i(tangent_i), broadcast to the output's shape.
    ``reads``: the input positions, and ``OUT`` for the output, whose values the
    partials read (only those are kept for them); required when a partial is a
    function, () otherwise. Shapes: (*a), (*b), ... -> broadcast(a, b, ...), the
    output dtype ``dtype_of(dtype)`` when given; or the rule ``shape`` itself.

    Example:
        >>> import autograd_dag as ad
        >>> ad.PRIMITIVES["subtract"].partials, ad.PRIMITIVES["subtract"].reads
        ((ONE, MINUS_ONE), ())
        >>> ad.PRIMITIVES["divide"].reads          # g / y and -g · out / y
        (1, 'out')
        >>> ad.grad(lambda x: ad.divide(1.0, x))(2.0)
        array(-0.25)
    """
    partials = tuple(partials)
    functions = [p for p in partials if p is not None and not isinstance(p, _Constant)]
    if reads is None:
        if functions:
            raise AutogradDagError(f"defelementwise({name!r}): a partial derivative is a function: declare what "
                                   f"it reads (reads=(positions..., OUT))")
        reads = ()
    if shape is None:
        shape = broadcast(name) if dtype_of is None else _typed(name, dtype_of)
    keywords = _takes_params(impl)
    parts = tuple(_vjp_part(p, i, len(partials), keywords) for i, p in enumerate(partials))
    return defprim(name, impl, vjp=parts, jvp=_jvp(partials), shape=shape, nondiff=nondiff, batch=batch,
                   reads=tuple(reads), partials=partials)

# ------------------------------------------------------------- arithmetic


ADD = defelementwise("add", np.add, (ONE, ONE))
SUBTRACT = defelementwise("subtract", np.subtract, (ONE, MINUS_ONE))
MULTIPLY = defelementwise("multiply", np.multiply,
                          (lambda g, out, x, y: multiply(g, y), lambda g, out, x, y: multiply(g, x)), reads=(0, 1))
DIVIDE = defelementwise("divide", np.true_divide,
                        (lambda g, out, x, y: divide(g, y),
                         lambda g, out, x, y: negative(divide(multiply(g, out), y))),
                        reads=(1, OUT), dtype_of=_float_or_float64)
NEGATIVE = defelementwise("negative", np.negative, (MINUS_ONE,))


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


def _power_partial_x(g, out, x, y=None, *, exponent=None):
    if exponent is None:
        return multiply(g, _power_x_derivative(x, y))
    if exponent == 0:
        return None
    return g if exponent == 1 else multiply(g, _static_power_derivative(x, exponent))


def _power_partial_y(g, out, x, y):  # (only a Tensor exponent is an input)
    return multiply(g, multiply(out, _log_base(x, y)))


def _log_base(x, y):
    """log x, the factor of d(x**y)/dy = x**y·log x, where it is one; NaN where the derivative is not real.

    x < 0: (−2)**y is not real off the integers, so no derivative (NaN, as PyTorch and JAX).
    x = 0 (either sign), y ≥ 0: 0 (PyTorch and JAX agree): for y > 0, 0**y is 0 on a neighbourhood
    of y, so 0 is the true derivative; at y = 0 (0**0 = 1, a jump) it is their shared convention.
    x = 0, y < 0: 0**y is +inf on a neighbourhood of y, inf − inf has no value: NaN, as JAX
    (PyTorch gives ±inf with the sign of the zero, the limit of x**y·log x along x, not along y).
    The masks keep log off x ≤ 0, so no "invalid value" warning is raised.
    """
    positive = greater(x, 0.0)
    at_zero = where(multiply(equal(x, 0.0), greater_equal(y, 0.0)), 0.0, np.nan)
    return where(positive, log(where(positive, x, 1.0)), at_zero)


POWER = defelementwise("power", _power_impl, (_power_partial_x, _power_partial_y), reads=(0, 1, OUT),
                       shape=_power_rule)


def power(x, y) -> Tensor:
    """x ** y. A Python number ``y`` is a static exponent; a Tensor ``y`` is differentiable.

    Shapes: (*a), (*b) -> broadcast(a, b). Example: ``ad.power(x, 3)`` is x³.
    """
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        return apply(POWER, x, exponent=y)
    return apply(POWER, x, y)

# --------------------------------------------------------- transcendental


EXP = defelementwise("exp", np.exp, (lambda g, out, x: multiply(g, out),), reads=(OUT,), dtype_of=_to_float)
LOG = defelementwise("log", np.log, (lambda g, out, x: divide(g, x),), reads=(0,), dtype_of=_to_float)
SQRT = defelementwise("sqrt", np.sqrt, (lambda g, out, x: divide(g, multiply(out, 2.0)),), reads=(OUT,),
                      dtype_of=_to_float)
TANH = defelementwise("tanh", np.tanh, (lambda g, out, x: multiply(g, subtract(1.0, multiply(out, out))),),
                      reads=(OUT,), dtype_of=_to_float)


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


def _logistic_slope_impl(x):
    # σ'(x) = σ(x)·σ(−x) = e/(1 + e)², e = e^−|x|: accurate relative to itself for every x. σ·(1 − σ), read
    # from the output, cancelled for x ≫ 0: the slope was 0 from x = 17 in float32 (37 in float64) where it
    # is e^−x, and 9e-3 off at x = 12 in float32 (1e-12 in float64).
    e = np.exp(-np.abs(x))
    return (e / np.square(1.0 + e)).astype(np.result_type(x, np.float16), copy=False)


# Its derivative: σ'·(σ(−x) − σ(x)) = σ'·tanh(−x/2), without the difference's cancellation.
LOGISTIC_SLOPE = defelementwise("logistic_slope", _logistic_slope_impl,
                                (lambda g, out, x: multiply(g, multiply(out, tanh(multiply(x, -0.5)))),),
                                reads=(0, OUT), dtype_of=_to_float)
LOGISTIC = defelementwise("logistic", _logistic_impl,
                          (lambda g, out, x: multiply(g, logistic_slope(x)),), reads=(0,), dtype_of=_to_float)
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


RELU = defelementwise("relu", _relu_impl, (lambda g, out, x: multiply(g, _relu_mask(out)),), reads=(OUT,))
SOFTPLUS = defelementwise("softplus", lambda x: np.logaddexp(np.zeros((), x.dtype), x),
                          (lambda g, out, x: multiply(g, logistic(x)),), reads=(0,), dtype_of=_to_float)
STEP = defelementwise("step", lambda x: (x >= 0).astype(x.dtype if x.dtype.kind == "f" else np.float64),
                      (None,), dtype_of=_float_or_float64)
SIGN = defelementwise("sign", np.sign, (None,))
ABS = defelementwise("abs", np.abs, (lambda g, out, x: multiply(g, sign(x)),), reads=(0,))


@operation(LOGISTIC)
def logistic(x) -> Tensor:
    """The logistic sigmoid 1 / (1 + e^-x), computed stably (alias ``sigmoid``). Shapes: (*s) -> (*s).

    Example: ``ad.logistic(ad.Tensor([0.])).value`` is ``[.5]``.
    """
    return apply(LOGISTIC, x)


sigmoid = logistic


@operation(LOGISTIC_SLOPE)
def logistic_slope(x) -> Tensor:
    """σ'(x) = σ(x)·σ(−x), the logistic's derivative, accurate for |x| large too. Shapes: (*s) -> (*s).

    Example: ``logistic_slope(ad.Tensor([0.])).value`` is ``[.25]``.
    """
    return apply(LOGISTIC_SLOPE, x)


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


TIE_WEIGHTS = defelementwise("tie_weights", _tie_weights_impl, (None, None), nondiff=(0, 1))
# The weight of the winner of max(x, y) is w = tie_weights(x, y), the loser's 1 - w (of min: swapped).
MAXIMUM = defelementwise("maximum", np.maximum,
                         (lambda g, out, x, y: multiply(g, apply(TIE_WEIGHTS, x, y)),
                          lambda g, out, x, y: multiply(g, subtract(1.0, apply(TIE_WEIGHTS, x, y)))), reads=(0, 1))
MINIMUM = defelementwise("minimum", np.minimum,
                         (lambda g, out, x, y: multiply(g, apply(TIE_WEIGHTS, y, x)),
                          lambda g, out, x, y: multiply(g, subtract(1.0, apply(TIE_WEIGHTS, y, x)))), reads=(0, 1))


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
    return defelementwise(name, impl, (None, None), dtype_of=lambda d: np.bool_, nondiff=(0, 1))


EQUAL = _comparison("equal", np.equal)
NOT_EQUAL = _comparison("not_equal", np.not_equal)
LESS = _comparison("less", np.less)
LESS_EQUAL = _comparison("less_equal", np.less_equal)
GREATER = _comparison("greater", np.greater)
GREATER_EQUAL = _comparison("greater_equal", np.greater_equal)
_MIRRORED = {"less": "greater", "less_equal": "greater_equal", "greater": "less", "greater_equal": "less_equal",
             "equal": "equal", "not_equal": "not_equal"}


def _beyond_range(name, x, y):
    """x <op> y where one is an integer Tensor and the other a Python int its dtype cannot hold (int8 < 1000,
    uint8 == −1), as numpy 2 answers it: every element compares the same way, so the comparison becomes one
    with the dtype's lowest value, always true or always false (it still runs under jit and vmap). None
    otherwise: the weak int then fits, or another rule applies (``weak`` refuses i8 + 1000 as numpy does).
    Reached only when lifting the number failed (inlined.py), not on the common path."""
    if type(x) is int and isinstance(y, Tensor):
        name, x, y = _MIRRORED[name], y, x
    if type(y) is not int or not isinstance(x, Tensor) or x.dtype.kind not in "iu":
        return None
    bounds = np.iinfo(x.dtype)
    if bounds.min <= y <= bounds.max:
        return None
    above = y > bounds.max
    true = name in (("less", "less_equal", "not_equal") if above else ("greater", "greater_equal", "not_equal"))
    lowest = x.dtype.type(bounds.min)
    return apply(GREATER_EQUAL, x, lowest) if true else apply(LESS, x, lowest)


def _compare(prim, x, y):
    out = _beyond_range(prim.name, x, y)
    return apply(prim, x, y) if out is None else out


@operation(EQUAL)
def equal(x, y) -> Tensor:
    """x == y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.equal(ad.Tensor([1., 2.]), 2.).value`` is ``[False, True]``.
    """
    return _compare(EQUAL, x, y)


@operation(NOT_EQUAL)
def not_equal(x, y) -> Tensor:
    """x != y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.not_equal(ad.Tensor([1., 2.]), 2.).value`` is ``[True, False]``.
    """
    return _compare(NOT_EQUAL, x, y)


@operation(LESS)
def less(x, y) -> Tensor:
    """x < y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.less(ad.Tensor([1., 2.]), 2.).value`` is ``[True, False]``.
    """
    return _compare(LESS, x, y)


@operation(LESS_EQUAL)
def less_equal(x, y) -> Tensor:
    """x <= y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.less_equal(ad.Tensor([1., 2.]), 2.).value`` is ``[True, True]``.
    """
    return _compare(LESS_EQUAL, x, y)


@operation(GREATER)
def greater(x, y) -> Tensor:
    """x > y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.greater(ad.Tensor([1., 2.]), 1.).value`` is ``[False, True]``.
    """
    return _compare(GREATER, x, y)


@operation(GREATER_EQUAL)
def greater_equal(x, y) -> Tensor:
    """x >= y elementwise (bool, no gradient). Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.greater_equal(ad.Tensor([1., 2.]), 2.).value`` is ``[False, True]``.
    """
    return _compare(GREATER_EQUAL, x, y)


def _where_rule(cond, x, y):
    shape, _ = broadcast("where")(cond, x, y)
    return shape, np.result_type(x.dtype, y.dtype)


WHERE = defelementwise("where", np.where,
                       (None, lambda g, out, c, x, y: where(c, g, 0.0), lambda g, out, c, x, y: where(c, 0.0, g)),
                       reads=(0,), shape=_where_rule, nondiff=(0,))


def where(cond, x, y) -> Tensor:
    """x where ``cond`` is true, else y (``cond`` gets no gradient). Shapes: (*c), (*a), (*b) -> broadcast(c, a, b).

    Example: ``ad.where(np.array([True, False]), ad.Tensor([1., 2.]), 0.).value`` is ``[1., 0.]``.
    """
    return apply(WHERE, cond, x, y)

# ------------------------------------------------ stop_gradient, astype


STOP_GRADIENT = defelementwise("stop_gradient", lambda x: x, (None,), shape=lambda x: (x.shape, x.dtype),
                               nondiff=(0,), batch=unary_batch)


@operation(STOP_GRADIENT)
def stop_gradient(x) -> Tensor:
    """The value of x, through which no derivative flows. Shapes: (*s) -> (*s).

    Example: ``ad.grad(lambda x: (x * ad.stop_gradient(x)).sum())(np.array([3.]))`` is ``[3.]``, not ``[6.]``.
    """
    return apply(STOP_GRADIENT, x)


# A hand-written pair: the VJP casts back to the input's dtype and the JVP to the output's (a linear
# map between dtypes, not a partial derivative times the cotangent).
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
