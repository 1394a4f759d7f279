"""Elementwise primitives, derivative from partials (2 of 2): numpy's everyday math functions.

Trigonometric (sin, cos, tan, ...) and hyperbolic, log/exp variants, square and
reciprocal, rounding, clip, mod, hypot, logaddexp, fmax/fmin, nan_to_num, the
finiteness tests, and real/imag/conj for real Tensors. Each primitive states its
partial derivatives once (:func:`~autograd_dag.primitives.elementwise.defelementwise`,
written with primitive functions so that they differentiate again), except where a
composite is exact and as fast (``deg2rad`` is a multiplication, ``fabs`` is ``abs``,
``sinc`` a series near 0). A new elementwise primitive goes here, unless a module
below this one needs it (then ``elementwise.py``).

Conventions, fixed and tested exactly:

* ``floor``, ``ceil``, ``round``, ``rint`` and ``trunc`` are piecewise constant:
  their derivative is 0 everywhere (also at the jumps, where none exists).
* ``clip(x, lo, hi)``: the derivative goes to ``x`` where lo <= x <= hi (bounds
  included), to ``lo`` where x < lo and to ``hi`` where x > hi (``lo <= hi`` is
  assumed, as the derivative of numpy's result is then meaningful).
* ``hypot(0, 0)`` has derivative 0 (the subgradient of the norm at 0).
* ``mod(x, y) = x - floor(x / y)·y``: ∂/∂x = 1, ∂/∂y = -floor(x / y), away from the jumps.
* ``fmax``/``fmin`` follow ``maximum``/``minimum`` (ties split evenly) and send
  the whole derivative to the non-NaN operand.
* ``nan_to_num`` passes the derivative where x is finite and 0 where it was replaced.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> ad.clip(ad.Tensor([-2.0, 0.5, 3.0]), 0.0, 1.0).value
    array([0. , 0.5, 1. ])
    >>> ad.grad(lambda t: ad.sum(ad.clip(t, 0.0, 1.0)))(np.array([-2.0, 1.0, 3.0]))
    array([0., 1., 0.])
    >>> np.tan(ad.Tensor([0.0])).prim.name       # numpy's ufunc records the primitive
    'tan'
"""

from __future__ import annotations

import math

import numpy as np

from ..core import Tensor, apply, parameter
from ..inlined import operation
from ..errors import AutogradDagError, ShapeError
from .elementwise import (ONE, TIE_WEIGHTS, _to_float, abs, add, astype, defelementwise, divide, equal, exp,
                          greater, less, lowest_finite, multiply, negative, sqrt, subtract, where)
from .indexing import numpy_operand
from .registry import OUT
from .shapes import broadcast

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _numpy_dtype(impl):
    """The output dtype numpy really gives, found on empty operands (only when a rule runs)."""
    def dtype_of(*dtypes):
        with np.errstate(all="ignore"):
            return impl(*[np.zeros((0,), d) for d in dtypes]).dtype
    return dtype_of


def _rule(name, impl):
    shape = broadcast(name)

    def rule(*operands, **params):
        out_shape, _ = shape(*operands)
        return out_shape, _numpy_dtype(lambda *a: impl(*a, **params))(*[o.dtype for o in operands])
    return rule


def _unary(name, impl, partial, reads):
    """A unary primitive whose partial derivative is ``partial(g, out, x)`` = g · f'(x)."""
    return defelementwise(name, impl, (partial,), reads=reads, shape=_rule(name, impl))


def _constant(name, impl):
    """A piecewise-constant unary primitive: derivative 0 everywhere."""
    return defelementwise(name, impl, (None,), shape=_rule(name, impl))


def _one_minus_square(x):
    return subtract(1.0, square(x))

# ------------------------------------------------------ trigonometric
# Used by the sinusoidal positional encodings of the Transformer, which can
# then be computed inside a program (from a Tensor of positions).

SIN = defelementwise("sin", np.sin, (lambda g, out, x: multiply(g, cos(x)),), reads=(0,), dtype_of=_to_float)
COS = defelementwise("cos", np.cos, (lambda g, out, x: negative(multiply(g, sin(x))),), reads=(0,),
                     dtype_of=_to_float)


@operation(SIN)
def sin(x) -> Tensor:
    """Sine elementwise (radians); sin' = cos. Shapes: (*s) -> (*s).

    Example: ``ad.sin(ad.Tensor([0.])).value`` is ``[0.]``.
    """
    return apply(SIN, x)


@operation(COS)
def cos(x) -> Tensor:
    """Cosine elementwise (radians); cos' = −sin. Shapes: (*s) -> (*s).

    Example: ``ad.cos(ad.Tensor([0.])).value`` is ``[1.]``.
    """
    return apply(COS, x)


TAN = _unary("tan", np.tan, lambda g, out, x: multiply(g, add(1.0, square(out))), (OUT,))
ARCSIN = _unary("arcsin", np.arcsin, lambda g, out, x: divide(g, sqrt(_one_minus_square(x))), (0,))
ARCCOS = _unary("arccos", np.arccos, lambda g, out, x: negative(divide(g, sqrt(_one_minus_square(x)))), (0,))
ARCTAN = _unary("arctan", np.arctan, lambda g, out, x: divide(g, add(1.0, square(x))), (0,))
SINH = _unary("sinh", np.sinh, lambda g, out, x: multiply(g, cosh(x)), (0,))
COSH = _unary("cosh", np.cosh, lambda g, out, x: multiply(g, sinh(x)), (0,))
ARCSINH = _unary("arcsinh", np.arcsinh, lambda g, out, x: divide(g, sqrt(add(square(x), 1.0))), (0,))
ARCCOSH = _unary("arccosh", np.arccosh, lambda g, out, x: divide(g, sqrt(subtract(square(x), 1.0))), (0,))
ARCTANH = _unary("arctanh", np.arctanh, lambda g, out, x: divide(g, _one_minus_square(x)), (0,))


@operation(TAN)
def tan(x) -> Tensor:
    """Tangent elementwise; tan' = 1 + tan². Shapes: (*s) -> (*s).

    Example: ``ad.tan(ad.Tensor([0.])).value`` is ``[0.]``.
    """
    return apply(TAN, x)


@operation(ARCSIN)
def arcsin(x) -> Tensor:
    """Inverse sine elementwise, for x in [-1, 1]; arcsin' = 1/√(1 - x²). Shapes: (*s) -> (*s).

    Example: ``ad.arcsin(ad.Tensor([1.])).value`` is ``[π/2]``.
    """
    return apply(ARCSIN, x)


@operation(ARCCOS)
def arccos(x) -> Tensor:
    """Inverse cosine elementwise, for x in [-1, 1]; arccos' = -1/√(1 - x²). Shapes: (*s) -> (*s).

    Example: ``ad.arccos(ad.Tensor([1.])).value`` is ``[0.]``.
    """
    return apply(ARCCOS, x)


@operation(ARCTAN)
def arctan(x) -> Tensor:
    """Inverse tangent elementwise; arctan' = 1/(1 + x²). Shapes: (*s) -> (*s).

    Example: ``ad.arctan(ad.Tensor([1.])).value`` is ``[π/4]``.
    """
    return apply(ARCTAN, x)


@operation(SINH)
def sinh(x) -> Tensor:
    """Hyperbolic sine elementwise; sinh' = cosh. Shapes: (*s) -> (*s).

    Example: ``ad.sinh(ad.Tensor([0.])).value`` is ``[0.]``.
    """
    return apply(SINH, x)


@operation(COSH)
def cosh(x) -> Tensor:
    """Hyperbolic cosine elementwise; cosh' = sinh. Shapes: (*s) -> (*s).

    Example: ``ad.cosh(ad.Tensor([0.])).value`` is ``[1.]``.
    """
    return apply(COSH, x)


@operation(ARCSINH)
def arcsinh(x) -> Tensor:
    """Inverse hyperbolic sine elementwise; arcsinh' = 1/√(x² + 1). Shapes: (*s) -> (*s).

    Example: ``ad.arcsinh(ad.Tensor([0.])).value`` is ``[0.]``.
    """
    return apply(ARCSINH, x)


@operation(ARCCOSH)
def arccosh(x) -> Tensor:
    """Inverse hyperbolic cosine elementwise, for x >= 1; arccosh' = 1/√(x² - 1). Shapes: (*s) -> (*s).

    Example: ``ad.arccosh(ad.Tensor([1.])).value`` is ``[0.]``.
    """
    return apply(ARCCOSH, x)


@operation(ARCTANH)
def arctanh(x) -> Tensor:
    """Inverse hyperbolic tangent elementwise, for |x| < 1; arctanh' = 1/(1 - x²). Shapes: (*s) -> (*s).

    Example: ``ad.arctanh(ad.Tensor([0.])).value`` is ``[0.]``.
    """
    return apply(ARCTANH, x)


def _as_ufunc_float(x):
    # numpy's deg2rad and rad2deg, like exp, compute integers and booleans in the smallest float that
    # holds them (float16 for int8, uint8 and bool); times a Python float they became float64.
    dtype = x.dtype if isinstance(x, (Tensor, np.ndarray, np.generic)) else None
    return astype(x, _to_float(dtype)) if dtype is not None and dtype.kind in "biu" else x


def deg2rad(x) -> Tensor:
    """Degrees to radians: x · π/180 (a multiplication). Shapes: (*s) -> (*s).

    Example: ``ad.deg2rad(ad.Tensor([180.])).value`` is ``[π]``.
    """
    return multiply(_as_ufunc_float(x), math.pi / 180.0)


def rad2deg(x) -> Tensor:
    """Radians to degrees: x · 180/π (a multiplication). Shapes: (*s) -> (*s).

    Example: ``ad.rad2deg(ad.Tensor([np.pi])).value`` is ``[180.]``.
    """
    return multiply(_as_ufunc_float(x), 180.0 / math.pi)


radians = deg2rad
degrees = rad2deg

# ------------------------------------------------------------ log / exp


LOG1P = _unary("log1p", np.log1p, lambda g, out, x: divide(g, add(x, 1.0)), (0,))
# expm1' = eˣ from x, not out + 1 (PyTorch's and JAX's): for x ≪ 0, out + 1 rounds to 0 (x = −40: 0 for 4e-18)
EXPM1 = _unary("expm1", np.expm1, lambda g, out, x: multiply(g, exp(x)), (0,))
LOG2 = _unary("log2", np.log2, lambda g, out, x: divide(g, multiply(x, _LN2)), (0,))
LOG10 = _unary("log10", np.log10, lambda g, out, x: divide(g, multiply(x, _LN10)), (0,))
EXP2 = _unary("exp2", np.exp2, lambda g, out, x: multiply(g, multiply(out, _LN2)), (OUT,))


@operation(LOG1P)
def log1p(x) -> Tensor:
    """log(1 + x) elementwise, accurate for small x; log1p' = 1/(1 + x). Shapes: (*s) -> (*s).

    Example: ``ad.log1p(ad.Tensor([0.])).value`` is ``[0.]``.
    """
    return apply(LOG1P, x)


@operation(EXPM1)
def expm1(x) -> Tensor:
    """e**x - 1 elementwise, accurate for small x; expm1' = e**x. Shapes: (*s) -> (*s).

    Example: ``ad.expm1(ad.Tensor([0.])).value`` is ``[0.]``.
    """
    return apply(EXPM1, x)


@operation(LOG2)
def log2(x) -> Tensor:
    """Base-2 logarithm elementwise (exact at powers of 2, as numpy's). Shapes: (*s) -> (*s).

    Example: ``ad.log2(ad.Tensor([8.])).value`` is ``[3.]``.
    """
    return apply(LOG2, x)


@operation(LOG10)
def log10(x) -> Tensor:
    """Base-10 logarithm elementwise (exact at powers of 10, as numpy's). Shapes: (*s) -> (*s).

    Example: ``ad.log10(ad.Tensor([1000.])).value`` is ``[3.]``.
    """
    return apply(LOG10, x)


@operation(EXP2)
def exp2(x) -> Tensor:
    """2**x elementwise; exp2' = 2**x · ln 2. Shapes: (*s) -> (*s).

    Example: ``ad.exp2(ad.Tensor([3.])).value`` is ``[8.]``.
    """
    return apply(EXP2, x)

# ---------------------------------------------------- square, reciprocal


SQUARE = _unary("square", np.square, lambda g, out, x: multiply(g, multiply(x, 2.0)), (0,))
# numpy's reciprocal of an integer is C integer division (1 / 2 is 0, 1 / -1 is -1), an integer
# result: kept as numpy gives it, since code written for arrays must get the same numbers
# (integers have no derivative, so the rule below never sees them).
RECIPROCAL = _unary("reciprocal", np.reciprocal, lambda g, out, x: negative(multiply(g, square(out))), (OUT,))


@operation(SQUARE)
def square(x) -> Tensor:
    """x² elementwise (one node, cheaper than x * x). Shapes: (*s) -> (*s).

    Example: ``ad.square(ad.Tensor([-3.])).value`` is ``[9.]``.
    """
    return apply(SQUARE, x)


@operation(RECIPROCAL)
def reciprocal(x) -> Tensor:
    """1/x elementwise; reciprocal' = -1/x². Shapes: (*s) -> (*s).

    As ``np.reciprocal``: integers give numpy's integer result, truncated
    (``ad.reciprocal(ad.Tensor([1, 2, -1])).value`` is ``[1, 0, -1]``, int64);
    convert with ``x.astype(float)`` for 1/x.

    Example: ``ad.reciprocal(ad.Tensor([4.])).value`` is ``[.25]``.
    """
    return apply(RECIPROCAL, x)

# -------------------------------------------------------------- rounding


def _round_impl(x, *, decimals=0):
    return np.round(x, decimals)


FLOOR = _constant("floor", np.floor)
CEIL = _constant("ceil", np.ceil)
TRUNC = _constant("trunc", np.trunc)
ROUND = _constant("round", _round_impl)


@operation(FLOOR)
def floor(x) -> Tensor:
    """Largest integer <= x, elementwise; derivative 0 everywhere (documented convention).

    Shapes: (*s) -> (*s). Example: ``ad.floor(ad.Tensor([-1.5, 1.5])).value`` is ``[-2., 1.]``.
    """
    return apply(FLOOR, x)


@operation(CEIL)
def ceil(x) -> Tensor:
    """Smallest integer >= x, elementwise; derivative 0 everywhere (documented convention).

    Shapes: (*s) -> (*s). Example: ``ad.ceil(ad.Tensor([-1.5, 1.5])).value`` is ``[-1., 2.]``.
    """
    return apply(CEIL, x)


@operation(TRUNC)
def trunc(x) -> Tensor:
    """x rounded towards zero, elementwise; derivative 0 everywhere. Shapes: (*s) -> (*s).

    Example: ``ad.trunc(ad.Tensor([-1.5, 1.5])).value`` is ``[-1., 1.]``.
    """
    return apply(TRUNC, x)


def round(x, /, decimals: int = 0) -> Tensor:  # noqa: A001 - numpy's name
    """x rounded to ``decimals`` places (halves to even, as numpy); derivative 0 everywhere.

    Shapes: (*s) -> (*s). Example: ``ad.round(ad.Tensor([0.5, 1.5, 2.26]), 1).value`` is ``[0.5, 1.5, 2.3]``.
    """
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise ShapeError(f"round: Expect: an integer number of decimals. Actual: {decimals!r}")
    return apply(ROUND, x, decimals=int(decimals))


def rint(x) -> Tensor:
    """x rounded to the nearest integer (halves to even); derivative 0 everywhere. Shapes: (*s) -> (*s).

    As ``np.rint`` (a float ufunc), integers and booleans give floats: float64 for int32/int64,
    float16 for int8/uint8/bool (``np.round`` keeps their dtype).

    Example: ``ad.rint(ad.Tensor([0.5, 1.7])).value`` is ``[0., 2.]``.
    """
    dtype = x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype
    if not np.issubdtype(dtype, np.inexact):
        x = astype(x, np.rint(np.zeros(0, dtype)).dtype)
    return apply(ROUND, x, decimals=0)


around = round


def fabs(x) -> Tensor:
    """|x| elementwise (numpy's float absolute value: the ``abs`` primitive); |x|'(0) = 0.

    Shapes: (*s) -> (*s). Example: ``ad.fabs(ad.Tensor([-2.])).value`` is ``[2.]``.
    """
    return abs(x)

# ------------------------------------------------------- binary functions


def _binary(name, impl, partial_x, partial_y, reads):
    """A broadcasting binary primitive; ``partial_x(g, out, x, y)`` is g · ∂f/∂x, likewise ``partial_y``."""
    return defelementwise(name, impl, (partial_x, partial_y), reads=reads, shape=_rule(name, impl))


def _safe_denominator(d):
    """``d`` with its zeros replaced by +inf, so that a finite numerator over it gives 0 there."""
    return where(equal(d, 0.0), math.inf, d)


def _squared_radius(x, y):
    return add(square(x), square(y))


ARCTAN2 = _binary("arctan2", np.arctan2,
                  lambda g, out, y, x: divide(multiply(g, x), _squared_radius(x, y)),
                  lambda g, out, y, x: negative(divide(multiply(g, y), _squared_radius(x, y))), (0, 1))
HYPOT = _binary("hypot", np.hypot,
                lambda g, out, x, y: divide(multiply(g, x), _safe_denominator(out)),
                lambda g, out, x, y: divide(multiply(g, y), _safe_denominator(out)), (0, 1, OUT))


def _log_weight(x, out):
    """x − out, the log of x's weight in logaddexp(x, y) = out: 0 where x = +inf (then out = +inf).

    There inf − inf was NaN, where the derivative is 1 (PyTorch's and JAX's); an out of
    −inf is raised to the lowest finite number (:func:`lowest_finite`: derivative 0 there).
    """
    infinite = equal(x, math.inf)   # (both sides zeroed there: inf − inf is never computed, nor warned about)
    return subtract(where(infinite, 0.0, x), where(infinite, 0.0, lowest_finite(out)))


LOGADDEXP = _binary("logaddexp", np.logaddexp,
                    lambda g, out, x, y: multiply(g, exp(_log_weight(x, out))),
                    lambda g, out, x, y: multiply(g, exp(_log_weight(y, out))), (0, 1, OUT))
LOGADDEXP2 = _binary("logaddexp2", np.logaddexp2,
                     lambda g, out, x, y: multiply(g, exp2(_log_weight(x, out))),
                     lambda g, out, x, y: multiply(g, exp2(_log_weight(y, out))), (0, 1, OUT))
MOD = _binary("mod", np.mod, ONE, lambda g, out, x, y: negative(multiply(g, floor(divide(x, y)))), (0, 1))


@operation(ARCTAN2)
def arctan2(y, x) -> Tensor:
    """The angle of the point (x, y), elementwise, in (-π, π]; broadcasting.

    ∂/∂y = x/(x² + y²), ∂/∂x = -y/(x² + y²). Shapes: (*a), (*b) -> broadcast(a, b).
    Example: ``ad.arctan2(ad.Tensor([1.]), ad.Tensor([1.])).value`` is ``[π/4]``.
    """
    return apply(ARCTAN2, y, x)


@operation(HYPOT)
def hypot(x, y) -> Tensor:
    """√(x² + y²) elementwise, without overflow; broadcasting. Its derivative at (0, 0) is 0.

    Shapes: (*a), (*b) -> broadcast(a, b). Example: ``ad.hypot(ad.Tensor([3.]), 4.).value`` is ``[5.]``.
    """
    return apply(HYPOT, x, y)


@operation(LOGADDEXP)
def logaddexp(x, y) -> Tensor:
    """log(e**x + e**y) elementwise, computed stably; broadcasting. Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.logaddexp(ad.Tensor([0.]), 0.).value`` is ``[log 2]``.
    """
    return apply(LOGADDEXP, x, y)


@operation(LOGADDEXP2)
def logaddexp2(x, y) -> Tensor:
    """log2(2**x + 2**y) elementwise, computed stably; broadcasting. Shapes: (*a), (*b) -> broadcast(a, b).

    Example: ``ad.logaddexp2(ad.Tensor([1.]), 1.).value`` is ``[2.]``.
    """
    return apply(LOGADDEXP2, x, y)


@operation(MOD)
def mod(x, y) -> Tensor:
    """x mod y with the sign of y (numpy's ``%``): x - floor(x/y)·y; broadcasting.

    Away from the jumps ∂/∂x = 1 and ∂/∂y = -floor(x/y); at a jump the
    one-sided derivative of the right side is used.
    Shapes: (*a), (*b) -> broadcast(a, b). Example: ``ad.mod(ad.Tensor([-1., 7.]), 3.).value`` is ``[2., 1.]``.
    """
    return apply(MOD, x, y)


remainder = mod

# numpy's fmod is C's: the remainder has the sign of x (x - trunc(x/y)·y). A primitive, not a
# composite: x - trunc(x/y)·y rounds differently from C's exact fmod for large quotients.
FMOD = _binary("fmod", np.fmod, ONE, lambda g, out, x, y: negative(multiply(g, trunc(divide(x, y)))), (0, 1))


@operation(FMOD)
def fmod(x, y) -> Tensor:
    """x mod y with the sign of x (C's fmod, ``np.fmod``): x - trunc(x/y)·y; broadcasting.

    Away from the jumps ∂/∂x = 1 and ∂/∂y = -trunc(x/y). Integers give numpy's
    integer result. Shapes: (*a), (*b) -> broadcast(a, b).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.fmod(ad.Tensor([-7.0, 7.0]), 3.0).value      # ad.mod gives [2., 1.]
        array([-1.,  1.])
        >>> np.fmod(ad.Tensor([5.5]), -2.0).value
        array([1.5])
    """
    return apply(FMOD, x, y)

# ----------------------------------------------------------------- sinc

# Below this |πx| sinc is its Taylor polynomial, so that every derivative at and near 0 is right
# (sin(πx)/(πx) has a removable singularity: its recorded derivative would divide 0 by 0). The
# first omitted term, (πx)^10/11!, is below 3e-28 there: the value equals numpy's to rounding.
_SINC_SERIES_BELOW = 1e-2


def sinc(x) -> Tensor:
    """The normalised sinc, sin(πx)/(πx) with sinc(0) = 1, elementwise, as ``np.sinc``.

    Differentiable everywhere (sinc'(0) = 0, sinc''(0) = -π²/3): a composite
    that uses the Taylor polynomial to (πx)^8 for |πx| < 1e-2 and
    sin(πx)/(πx) elsewhere. Integers give float64. Shapes: (*s) -> (*s).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.sinc(ad.Tensor([0.0, 0.5, 1.0])).value.round(6)
        array([1.     , 0.63662, 0.     ])
        >>> float(ad.grad(lambda t: ad.sinc(t))(1.0))      # (cos(π) - sinc(1)) / 1
        -1.0
    """
    y = multiply(x, math.pi)
    near_zero = less(abs(y), _SINC_SERIES_BELOW)
    y2 = square(y)
    # 1 - y²/3! + y⁴/5! - y⁶/7! + y⁸/9!, in Horner form.
    series = add(1.0, multiply(y2, add(-1.0 / 6.0, multiply(y2, add(1.0 / 120.0, multiply(
        y2, add(-1.0 / 5040.0, multiply(y2, 1.0 / 362880.0))))))))
    safe = where(near_zero, 1.0, y)     # keeps the unused branch (and its derivative) finite at 0
    return where(near_zero, series, divide(sin(safe), safe))

# ------------------------------------------------------------------ erf

# W. J. Cody, "Rational Chebyshev approximations for the error function", Math. Comp. 23 (1969),
# 631–637, with the coefficients and steps of his CALERF (netlib specfun, 1990): near-minimax rational
# functions good to 18 digits on |x| <= 0.46875 (erf), 0.46875 < |x| <= 4 and |x| > 4 (erfc), with
# exp(−x²) taken as exp(−s²)·exp(−(x − s)(x + s)), s = ⌊16x⌋/16 exact, so that no digit of x² is lost.
_ERF_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02, 3.20937758913846947e03,
          1.85777706184603153e-1)
_ERF_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03, 2.84423683343917062e03)
_ERF_C = (5.64188496988670089e-1, 8.88314979438837594e0, 6.61191906371416295e01, 2.98635138197400131e02,
          8.81952221241769090e02, 1.71204761263407058e03, 2.05107837782607147e03, 1.23033935479799725e03,
          2.15311535474403846e-8)
_ERF_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02, 1.62138957456669019e03,
          3.29079923573345963e03, 4.36261909014324716e03, 3.43936767414372164e03, 1.23033935480374942e03)
_ERF_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1, 1.60837851487422766e-2,
          6.58749161529837803e-4, 1.63153871373020978e-2)
_ERF_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1, 6.05183413124413191e-2,
          2.33520497626869185e-3)
_ERF_SMALL = 0.46875
_ERF_ONE_PAST = 27.0  # erfc(x) underflows past 26.55: erf is 1; keeps ∞ out of x − ⌊16x⌋/16
_ERFC_ZERO_PAST = 28.0  # erfc(x) underflows to 0 in float64 before x = 27.3; keeps ∞ out as above
_SQRT_PI_INV = 0.56418958354775628695
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


class _NumpyArithmetic:
    """The arithmetic the pieces of :func:`cody_erf` are written in, on numpy arrays (the ONNX exporter
    has its own)."""
    abs, add, sub, mul, div, exp, floor, neg = (np.abs, np.add, np.subtract, np.multiply, np.divide, np.exp,
                                                np.floor, np.negative)
    gt, le, lt, where = np.greater, np.less_equal, np.less, np.where


def _erf_small(x, k):
    """erf(x) for |x| <= 0.46875: x·A(x²)/B(x²)."""
    z = k.mul(x, x)
    num, den = k.mul(_ERF_A[4], z), z
    for a, b in zip(_ERF_A[:3], _ERF_B[:3]):
        num, den = k.mul(k.add(num, a), z), k.mul(k.add(den, b), z)
    return k.div(k.mul(x, k.add(num, _ERF_A[3])), k.add(den, _ERF_B[3]))


def _erfc_middle(y, k):
    """erfc(y)·exp(y²) for 0.46875 < y <= 4: C(y)/D(y)."""
    num, den = k.mul(_ERF_C[8], y), y
    for c, d in zip(_ERF_C[:7], _ERF_D[:7]):
        num, den = k.mul(k.add(num, c), y), k.mul(k.add(den, d), y)
    return k.div(k.add(num, _ERF_C[7]), k.add(den, _ERF_D[7]))


def _erfc_tail(y, k):
    """erfc(y)·exp(y²) for y > 4: (1/√π − w·P(w)/Q(w))/y, w = 1/y²."""
    w = k.div(1.0, k.mul(y, y))
    num, den = k.mul(_ERF_P[5], w), w
    for p, q in zip(_ERF_P[:4], _ERF_Q[:4]):
        num, den = k.mul(k.add(num, p), w), k.mul(k.add(den, q), w)
    return k.div(k.sub(_SQRT_PI_INV, k.div(k.mul(w, k.add(num, _ERF_P[4])), k.add(den, _ERF_Q[4]))), y)


def _exp_minus_square(y, k):
    """exp(−y²) as exp(−s²)·exp(−(y − s)(y + s)), s = ⌊16y⌋/16: s² is exact, so no digit of y² is lost."""
    s = k.div(k.floor(k.mul(y, 16.0)), 16.0)
    return k.mul(k.exp(k.neg(k.mul(s, s))), k.exp(k.neg(k.mul(k.sub(y, s), k.add(y, s)))))


def cody_erf(x, k):
    """erf(x) by Cody's rational approximations with the operations of ``k``, every range computed and
    then selected elementwise: the ONNX export of float64 programs (ONNX Runtime has no float64 Erf
    kernel). The primitive evaluates each element's range only (:func:`_erf_impl`)."""
    y = k.abs(x)
    y = k.where(k.gt(y, _ERF_ONE_PAST), _ERF_ONE_PAST, y)
    erfc = k.mul(_exp_minus_square(y, k), k.where(k.le(y, 4.0), _erfc_middle(y, k), _erfc_tail(y, k)))
    large = k.add(k.sub(0.5, erfc), 0.5)
    return k.where(k.le(y, _ERF_SMALL), _erf_small(x, k), k.where(k.lt(x, 0.0), k.neg(large), large))


def cody_erfc(x, k):
    """erfc(x) = 1 − erf(x) as :func:`cody_erf` (every range computed, then selected): accurate relative to
    the result for x ≫ 0 too, where 1 − erf(x) cancels (the ONNX export; ONNX has no Erfc)."""
    y = k.abs(x)
    tail = k.mul(_exp_minus_square(k.where(k.gt(y, _ERFC_ZERO_PAST), _ERFC_ZERO_PAST, y), k),
                 k.where(k.le(y, 4.0), _erfc_middle(y, k), _erfc_tail(y, k)))
    large = k.where(k.lt(x, 0.0), k.sub(2.0, tail), tail)
    return k.where(k.le(y, _ERF_SMALL), k.sub(1.0, _erf_small(x, k)), large)


# Elements per block of _erf_impl: its ~40 temporaries per element then stay in the CPU's cache (on the
# whole array at once, each of them went through memory: 40x np.tanh's time, 10x with blocks).
_ERF_BLOCK = 1 << 14


def _erf_block(x, out):
    k = _NumpyArithmetic
    y = np.abs(x)
    small = y <= _ERF_SMALL
    out[small] = _erf_small(x[small], k)
    large = ~small                                   # NaN included: it stays NaN below
    y = np.minimum(y[large], _ERF_ONE_PAST)
    middle = y <= 4.0
    ratio = np.empty_like(y)
    ratio[middle] = _erfc_middle(y[middle], k)
    ratio[~middle] = _erfc_tail(y[~middle], k)
    out[large] = np.copysign((0.5 - _exp_minus_square(y, k) * ratio) + 0.5, x[large])


def _erfc_block(x, out):
    k = _NumpyArithmetic
    y = np.abs(x)
    small = y <= _ERF_SMALL
    out[small] = 1.0 - _erf_small(x[small], k)      # in [0.5, 1.5]: the subtraction loses nothing
    large = ~small                                   # NaN included: it stays NaN below
    x = x[large]
    y = np.minimum(y[large], _ERFC_ZERO_PAST)
    middle = y <= 4.0
    ratio = np.empty_like(y)
    ratio[middle] = _erfc_middle(y[middle], k)
    ratio[~middle] = _erfc_tail(y[~middle], k)
    tail = _exp_minus_square(y, k) * ratio           # erfc(|x|), relative to itself
    out[large] = np.where(x < 0.0, 2.0 - tail, tail)


def _cody_dtype(name):
    def dtype_of(dtype):
        if dtype.kind == "c":   # the impl would drop the imaginary part
            raise AutogradDagError(f"{name}: Expect: a real operand. Actual: dtype {dtype} ({name} of complex "
                                   f"numbers is not implemented)")
        return _to_float(dtype)
    return dtype_of


_erf_dtype, _erfc_dtype = _cody_dtype("erf"), _cody_dtype("erfc")


def _cody_impl(block, dtype_of):
    def impl(x):
        # float16/float32 are computed in float64 and rounded once: correctly rounded but for rare ties.
        # Each element is computed in its own range only (cody_erf, for ONNX, computes all three).
        x = np.asarray(x)
        shape, dtype = x.shape, dtype_of(x.dtype)
        x = x.astype(np.float64, copy=False).reshape(-1)
        out = np.empty_like(x)
        with np.errstate(all="ignore"):
            for start in range(0, x.size, _ERF_BLOCK):
                block(x[start:start + _ERF_BLOCK], out[start:start + _ERF_BLOCK])
        return out.reshape(shape).astype(dtype, copy=False)
    return impl


_erf_impl = _cody_impl(_erf_block, _erf_dtype)
_erfc_impl = _cody_impl(_erfc_block, _erfc_dtype)


def _gaussian(x, scale):
    """scale·e^(−x²): ±(2/√π)·e^(−x²) is the derivative of erf and erfc."""
    return multiply(exp(negative(square(x))), scale)


ERF = defelementwise("erf", _erf_impl, (lambda g, out, x: multiply(g, _gaussian(x, _TWO_OVER_SQRT_PI)),),
                     reads=(0,), dtype_of=_erf_dtype)
ERFC = defelementwise("erfc", _erfc_impl, (lambda g, out, x: multiply(g, _gaussian(x, -_TWO_OVER_SQRT_PI)),),
                      reads=(0,), dtype_of=_erfc_dtype)


@operation(ERF)
def erf(x) -> Tensor:
    """The error function (2/√π)∫₀ˣ e^(−t²) dt elementwise; erf' = (2/√π)·e^(−x²). Shapes: (*s) -> (*s).

    Cody's rational approximations (Math. Comp. 1969), to a few ulps of float64;
    float16/float32 are computed in float64 and rounded; integers give floats as ``np.exp``.

    Example:
        >>> import autograd_dag as ad
        >>> ad.erf(ad.Tensor([0.0, 1.0])).value
        array([0.        , 0.84270079])
        >>> float(ad.grad(ad.erf)(0.0))      # 2/√π
        1.1283791670955126
    """
    return apply(ERF, x)


@operation(ERFC)
def erfc(x) -> Tensor:
    """The complementary error function 1 − erf(x) elementwise, as ``scipy.special.erfc``, accurate relative to
    the result for x ≫ 0 too (where 1 − erf(x) would cancel to 0); erfc' = −(2/√π)·e^(−x²).
    Shapes: (*s) -> (*s).

    Cody's rational approximations, as :func:`erf`: float16/float32 computed in float64 and rounded.

    Example:
        >>> import autograd_dag as ad
        >>> ad.erfc(ad.Tensor([0.0, 10.0])).value
        array([1.00000000e+00, 2.08848758e-45])
    """
    return apply(ERFC, x)

# ------------------------------------------------------------ fmax, fmin


def _nan_as(x, fill):
    return where(isnan(x), fill, x)


def _fextremum_weights(x, y, first_wins_for_max):
    # NaN loses: it becomes -inf for fmax (+inf for fmin) before the tie weights.
    fill = -math.inf if first_wins_for_max else math.inf
    a, b = _nan_as(x, fill), _nan_as(y, fill)
    return apply(TIE_WEIGHTS, a, b) if first_wins_for_max else apply(TIE_WEIGHTS, b, a)


def _fextremum(name, impl, is_max):
    def wx(g, out, x, y):
        return multiply(g, _fextremum_weights(x, y, is_max))

    def wy(g, out, x, y):
        return multiply(g, subtract(1.0, _fextremum_weights(x, y, is_max)))
    return _binary(name, impl, wx, wy, (0, 1))


FMAX = _fextremum("fmax", np.fmax, True)
FMIN = _fextremum("fmin", np.fmin, False)


@operation(FMAX)
def fmax(x, y) -> Tensor:
    """Elementwise max ignoring NaN (the other operand wins); ties split the derivative evenly.

    Shapes: (*a), (*b) -> broadcast(a, b). Example: ``ad.fmax(ad.Tensor([np.nan, 1.]), 0.).value`` is ``[0., 1.]``.
    """
    return apply(FMAX, x, y)


@operation(FMIN)
def fmin(x, y) -> Tensor:
    """Elementwise min ignoring NaN (the other operand wins); ties split the derivative evenly.

    Shapes: (*a), (*b) -> broadcast(a, b). Example: ``ad.fmin(ad.Tensor([np.nan, 1.]), 0.).value`` is ``[0., 0.]``.
    """
    return apply(FMIN, x, y)

# ------------------------------------------------------------------ clip


# Where the derivative goes. numpy's clip is min(max(x, a_min), a_max), so where a_min > a_max
# ("crossed") the result is a_max whatever x is: the derivative goes to a_max alone there (a_min <= x
# and x < a_min would send it to x or a_min, or to both bounds). Elsewhere x gets it where
# a_min <= x <= a_max (bounds included: out == x exactly there).
CLIP = defelementwise("clip", np.clip, (
    lambda g, out, x, lo, hi: where(where(greater(lo, hi), False, equal(out, x)), g, 0.0),
    lambda g, out, x, lo, hi: where(where(greater(lo, hi), False, less(x, lo)), g, 0.0),
    lambda g, out, x, lo, hi: where(where(greater(lo, hi), True, greater(x, hi)), g, 0.0)),
    reads=(0, 1, 2, OUT), shape=_rule("clip", np.clip))


def clip(x, /, a_min=None, a_max=None) -> Tensor:
    """x limited to [a_min, a_max] elementwise (None: no bound); bounds may be Tensors.

    The derivative goes to x where a_min <= x <= a_max (bounds included), to
    a_min where x < a_min and to a_max where x > a_max; where a_min > a_max the result
    is a_max (as numpy's), and so is the derivative.
    Shapes: (*s), (*a), (*b) -> broadcast(s, a, b).
    Example: ``ad.clip(ad.Tensor([-2., 0.5, 3.]), 0., 1.).value`` is ``[0., .5, 1.]``; its gradient is ``[0., 1., 0.]``.
    """
    if a_min is None and a_max is None:
        raise ShapeError("clip: Expect: at least one of a_min and a_max. Actual: both None")
    # (a list bound is read as numpy reads it, [200, 0] as int64; a Python number stays weak)
    a_min, a_max = (numpy_operand(b) if isinstance(b, (list, tuple)) else b for b in (a_min, a_max))
    low, high = _clip_extremes(x, a_max if a_min is None else a_min)
    return apply(CLIP, x, low if a_min is None else a_min, high if a_max is None else a_max)


def _clip_extremes(x, bound):
    """A missing bound of clip: the extremes of the result's dtype (x's promoted with the given bound).

    ±inf would make an integer or boolean x float, which np.clip does not; x's own extremes would cap
    the result where the bound widens it (np.clip(int8_x, 150.5, None) is 150.5, not 127).
    """
    def dtype_of(v):
        return v.dtype if isinstance(v, (Tensor, np.ndarray, np.generic)) else None
    x_dtype = dtype_of(x) or np.asarray(x).dtype
    given = dtype_of(bound)
    dtype = np.result_type(x_dtype, given if given is not None else (
        bound if isinstance(bound, (bool, int, float)) else np.asarray(bound)))  # (a Python number is weak)
    # (0-d arrays of that dtype: as Python numbers they were weak, and took x's dtype beside a numpy scalar)
    extremes = ((False, True) if dtype.kind == "b" else (-math.inf, math.inf) if dtype.kind not in "iu"
                else (np.iinfo(dtype).min, np.iinfo(dtype).max))
    return tuple(np.array(e, dtype) for e in extremes)

# ------------------------------------------------------------ nan_to_num


def _nan_to_num_impl(x, *, nan, posinf, neginf):
    return np.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf)


NAN_TO_NUM = defelementwise("nan_to_num", _nan_to_num_impl, (lambda g, out, x, **p: where(isfinite(x), g, 0.0),),
                            reads=(0,), shape=lambda x, **p: (tuple(x.shape), x.dtype))


def nan_to_num(x, copy: bool = True, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """x with NaN, +inf and -inf replaced by ``nan``, ``posinf``, ``neginf`` (default: 0 and the dtype's extremes).

    The derivative is 1 where x is finite and 0 where an entry was replaced.
    Shapes: (*s) -> (*s). Example: ``ad.nan_to_num(ad.Tensor([np.nan, 1.])).value`` is ``[0., 1.]``.
    """
    def number(v, what):
        return None if v is None else float(parameter(v, f"nan_to_num's {what}"))
    return apply(NAN_TO_NUM, x, nan=number(nan, "nan"), posinf=number(posinf, "posinf"),
                 neginf=number(neginf, "neginf"))

# ------------------------------------------------- finiteness (no derivative)


def _test(name, impl):
    return defelementwise(name, impl, (None,), shape=lambda x: (tuple(x.shape), np.dtype(np.bool_)), nondiff=(0,))


ISFINITE = _test("isfinite", np.isfinite)
ISNAN = _test("isnan", np.isnan)
ISINF = _test("isinf", np.isinf)


@operation(ISFINITE)
def isfinite(x) -> Tensor:
    """Whether each entry is finite (bool, no derivative). Shapes: (*s) -> (*s).

    Example: ``ad.isfinite(ad.Tensor([1., np.inf, np.nan])).value`` is ``[True, False, False]``.
    """
    return apply(ISFINITE, x)


@operation(ISNAN)
def isnan(x) -> Tensor:
    """Whether each entry is NaN (bool, no derivative). Shapes: (*s) -> (*s).

    Example: ``ad.isnan(ad.Tensor([1., np.nan])).value`` is ``[False, True]``.
    """
    return apply(ISNAN, x)


@operation(ISINF)
def isinf(x) -> Tensor:
    """Whether each entry is +inf or -inf (bool, no derivative). Shapes: (*s) -> (*s).

    Example: ``ad.isinf(ad.Tensor([1., -np.inf])).value`` is ``[False, True]``.
    """
    return apply(ISINF, x)

# ------------------------------------------------- real, imag, conj


def _real_only(name, x):
    dtype = x.dtype if isinstance(x, (Tensor, np.ndarray, np.generic)) else np.asarray(x).dtype
    if dtype.kind == "c":
        raise AutogradDagError(f"{name}: autograd_dag differentiates real numbers only; got a complex "
                               f"operand (dtype {dtype}). Pass the real and imaginary parts as two real Tensors")
    return x if isinstance(x, Tensor) else Tensor(x)


def real(x, /) -> Tensor:
    """The real part of a real Tensor: x itself (complex Tensors are refused). Shapes: (*s) -> (*s).

    Example: ``ad.real(t) is t`` for a real Tensor ``t``.
    """
    return _real_only("real", x)


def imag(x, /) -> Tensor:
    """The imaginary part of a real Tensor: a constant of zeros (complex Tensors are refused).

    Shapes: (*s) -> (*s). Example: ``ad.imag(ad.Tensor([1., 2.])).value`` is ``[0., 0.]``.
    """
    x = _real_only("imag", x)
    return Tensor(np.zeros_like(x.value))


def conj(x) -> Tensor:
    """The complex conjugate of a real Tensor: x itself (complex Tensors are refused). Shapes: (*s) -> (*s).

    Example: ``ad.conj(t) is t`` for a real Tensor ``t``.
    """
    return _real_only("conj", x)


conjugate = conj

__all__ = [
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "deg2rad",
    "rad2deg", "radians", "degrees", "log1p", "expm1", "log2", "log10", "exp2", "square", "reciprocal",
    "floor", "ceil", "trunc", "round", "rint", "around", "fabs", "arctan2", "hypot", "logaddexp",
    "logaddexp2", "mod", "remainder", "fmax", "fmin", "clip", "nan_to_num", "isfinite", "isnan", "isinf",
    "real", "imag", "conj", "conjugate", "fmod", "sinc",
]
