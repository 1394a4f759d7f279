"""numpy's floating-point functions as composites: cbrt, float_power, copysign, heaviside, ldexp,
frexp, modf, spacing and angle (of real Tensors).

Each is written with recorded primitives (no new primitive: the derivative, JVP and batching rules
of the parts give theirs), so each runs under jit, trace and vmap. Derivatives follow JAX's jnp:

* ``cbrt'(x) = 1 / (3 cbrt(x)²)``, +inf at 0 (as JAX). The value is |x|^(1/3) with the sign of x,
  corrected by one Newton step held out of the derivative, so it equals numpy's to 1 ulp.
* ``copysign(x, y)``: ∂/∂x = ±sign(x) (0 at x = 0, as ``abs``; JAX's 1 there), ∂/∂y = 0.
* ``heaviside(x, h0)``: ∂/∂x = 0; ∂/∂h0 = 1 where x = 0 (as JAX).
* ``ldexp(x, i) = x·2^i``: ∂/∂x = 2^i; ``frexp`` and ``modf``: mantissa' = 2^-e, fraction' = 1,
  the exponent and the integral part have derivative 0; ``spacing`` and ``angle`` are constant.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> np.cbrt(ad.Tensor([-8.0, 27.0])).value
    array([-2.,  3.])
    >>> ad.grad(lambda x: ad.sum(np.cbrt(x)))(np.array([8.0]))
    array([0.08333333])
"""

from __future__ import annotations

import math

import numpy as np

from ..core import Tensor
from .elementwise import (abs, add, astype, divide, equal, greater, less, multiply, negative, power,
                          sign, stop_gradient, subtract, where)
from .mathfuncs import arctan2, exp2, floor, isinf, isnan, log2, trunc, isfinite


def _dtype(x):
    return x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype


def _numpy_dtype(ufunc, *operands):
    """The dtype numpy's ufunc gives for these operands (Python scalars stay weak, as numpy's)."""
    dummies = [o if isinstance(o, (int, float, bool)) else np.zeros((0,), _dtype(o)) for o in operands]
    with np.errstate(all="ignore"):
        return ufunc(*dummies).dtype if len(dummies) > 1 or ufunc.nout == 1 else ufunc(*dummies)[0].dtype


def _floated(x, dtype):
    return x if _dtype(x) == dtype else astype(x, dtype)


def cbrt(x) -> Tensor:
    """The real cube root elementwise, as ``np.cbrt``; derivative 1/(3 cbrt(x)²), +inf at 0 (JAX's).

    Shapes: (*s) -> (*s). Example: ``np.cbrt(ad.Tensor([-8.0])).value`` is ``[-2.]``.
    """
    dtype = _numpy_dtype(np.cbrt, x)
    x = _floated(x, np.float64)                 # (float32 is rooted in float64 and rounded once)
    negative_x = less(x, 0.0)
    # Both branches see a safe operand, so the unused one's derivative (inf at 0) never meets a 0 cotangent.
    root = where(negative_x, negative(power(where(negative_x, negative(x), 1.0), 1.0 / 3.0)),
                 power(where(negative_x, 1.0, x), 1.0 / 3.0))
    return _floated(subtract(root, stop_gradient(_newton_step(x, root))), dtype)


def _newton_step(x, root):
    """(y³ − x) / (3y²) at y = x ** (1/3): subtracted, it brings y to numpy's correctly rounded root.

    Held out of the derivative (the step's own derivative vanishes at the root); 0 at 0, inf and NaN.
    Far from 1, x and y are scaled by exact powers of two (2^∓900, 2^∓300) so that y³ neither
    underflows into subnormals (losing digits) nor overflows.
    """
    ordinary = multiply(isfinite(root), greater(abs(root), 0.0))
    small, large = less(abs(x), 2.0 ** -600), greater(abs(x), 2.0 ** 600)
    scale_x = where(small, 2.0 ** 900, where(large, 2.0 ** -900, 1.0))
    scale_y = where(small, 2.0 ** 300, where(large, 2.0 ** -300, 1.0))
    y = multiply(where(ordinary, root, 1.0), scale_y)
    xs = multiply(where(ordinary, x, 1.0), scale_x)
    step = divide(subtract(multiply(multiply(y, y), y), xs), multiply(3.0, multiply(y, y)))
    return where(ordinary, divide(step, scale_y), 0.0)


def float_power(x1, x2) -> Tensor:
    """x1 ** x2 computed in float64 at least (complex stays complex), as ``np.float_power``.

    Derivatives as ``power``'s (JAX's). Shapes: (*a), (*b) -> broadcast(a, b).
    Example: ``np.float_power(ad.Tensor([2], ), 3).value`` is ``[8.]``.
    """
    dtype = _numpy_dtype(np.float_power, x1, x2)
    return power(_floated(x1, dtype) if not isinstance(x1, (int, float)) else float(x1),
                 _floated(x2, dtype) if not isinstance(x2, (int, float)) else float(x2))


def signbit(x) -> Tensor:
    """Whether the sign bit of x is set, recorded (so a trace follows it): x < 0, or x = -0.0.

    (The sign of a NaN is not seen: NaN gives False.) Shapes: (*s) -> (*s).
    """
    if not isinstance(x, Tensor):
        return np.signbit(x)
    if _dtype(x).kind in "iub":
        return less(x, 0)
    with np.errstate(divide="ignore"):
        # -0.0 is the one number equal to 0 whose reciprocal is negative (-inf).
        return add(less(x, 0.0), multiply(equal(x, 0.0), less(divide(1.0, where(equal(x, 0.0), x, 1.0)), 0.0)))


def copysign(x1, x2) -> Tensor:
    """|x1| with the sign of x2, elementwise, as ``np.copysign``.

    ∂/∂x1 = ±sign(x1) (0 at x1 = 0, as ``abs``); ∂/∂x2 = 0. Shapes: (*a), (*b) -> broadcast(a, b).
    Example: ``np.copysign(ad.Tensor([2.0]), -1.0).value`` is ``[-2.]``.
    """
    dtype = _numpy_dtype(np.copysign, x1, x2)
    magnitude = abs(_floated(x1, dtype) if not isinstance(x1, (int, float)) else float(x1))
    return where(signbit(x2), negative(magnitude), magnitude)


def heaviside(x1, x2) -> Tensor:
    """The step function, 0 for x1 < 0, x2 at 0, 1 above (NaN at NaN), as ``np.heaviside``.

    ∂/∂x1 = 0; ∂/∂x2 = 1 where x1 = 0. Shapes: (*a), (*b) -> broadcast(a, b).
    Example: ``np.heaviside(ad.Tensor([-1.0, 0.0, 2.0]), 0.5).value`` is ``[0., 0.5, 1.]``.
    """
    dtype = _numpy_dtype(np.heaviside, x1, x2)
    x1 = _floated(x1, dtype)
    h0 = _floated(x2, dtype) if not isinstance(x2, (int, float)) else x2
    step = where(less(x1, 0.0), 0.0, where(greater(x1, 0.0), 1.0, h0))
    return _floated(where(isnan(x1), math.nan, step), dtype)


def _times_power_of_two(x, exponent):
    # 2**e alone over/underflows for |e| > 1022 while x·2**e may not: two factors, each representable.
    half = floor(multiply(exponent, 0.5)) if isinstance(exponent, Tensor) else np.floor_divide(exponent, 2)
    rest = subtract(exponent, half) if isinstance(exponent, Tensor) else np.subtract(exponent, half)
    return multiply(multiply(x, exp2(_floated(half, np.float64))), exp2(_floated(rest, np.float64)))


def ldexp(x1, x2) -> Tensor:
    """x1 · 2**x2 elementwise (x2 integers), as ``np.ldexp``; ∂/∂x1 = 2**x2.

    Shapes: (*a), (*b) -> broadcast(a, b). Example: ``np.ldexp(ad.Tensor([1.5]), 3).value`` is ``[12.]``.
    """
    if _dtype(x2).kind not in "iub":
        raise TypeError(f"np.ldexp on a Tensor: the exponent must be integers, got {_dtype(x2)}")
    dtype = _numpy_dtype(np.ldexp, x1, x2)
    return _floated(_times_power_of_two(_floated(x1, dtype), x2), dtype)


def _exponent(x):
    """frexp's exponent e (x = m·2**e, 0.5 <= |m| < 1; 0 at 0, inf and NaN), recorded."""
    finite = multiply(isfinite(x), greater(abs(x), 0.0))
    magnitude = where(finite, abs(x), 1.0)
    guess = add(floor(log2(astype(magnitude, np.float64))), 1.0)
    # log2 rounds near powers of two: one step up or down fixes the guess.
    m = abs(_times_power_of_two(astype(magnitude, np.float64), negative(guess)))
    up = astype(add(greater(m, 1.0), equal(m, 1.0)), np.float64)
    guess = add(guess, subtract(up, astype(less(m, 0.5), np.float64)))
    return where(finite, guess, 0.0)


def frexp(x) -> tuple:
    """(mantissa, exponent) with x = mantissa · 2**exponent, 0.5 <= |mantissa| < 1, as ``np.frexp``.

    The mantissa's derivative is 2**-exponent; the exponent (int32) has none.
    Shapes: (*s) -> (*s), (*s). Example: ``np.frexp(ad.Tensor([3.0]))[0].value`` is ``[0.75]``.
    """
    x = _floated(x, _numpy_dtype(np.frexp, x))
    e = stop_gradient(_exponent(x))
    return _floated(_times_power_of_two(x, negative(e)), _dtype(x)), astype(e, np.int32)


def modf(x) -> tuple:
    """(fractional part, integral part), both with the sign of x, as ``np.modf``.

    Derivatives 1 and 0. Shapes: (*s) -> (*s), (*s). Example: ``np.modf(ad.Tensor([-3.5]))`` is ([-0.5], [-3.]).
    """
    x = _floated(x, _numpy_dtype(np.modf, x))
    whole = trunc(x)
    # inf - trunc(inf) is NaN; numpy's fraction of ±inf is ±0.
    return _floated(where(isinf(x), copysign(0.0, x), subtract(x, whole)), _dtype(x)), whole


def spacing(x) -> Tensor:
    """The distance from x to the next float away from 0 (negative for x < 0), as ``np.spacing``.

    No derivative (a step function). Shapes: (*s) -> (*s). Example: ``np.spacing(ad.Tensor([1.0])).value`` is ``[2.2e-16]``.
    """
    dtype = _numpy_dtype(np.spacing, x)
    x = stop_gradient(_floated(x, dtype))
    info = np.finfo(dtype)
    lowest = float(np.log2(info.smallest_subnormal))
    e = _exponent(x)
    exponent = where(greater(subtract(e, float(info.nmant + 1)), lowest), subtract(e, float(info.nmant + 1)), lowest)
    step = _floated(_times_power_of_two(where(signbit(x), -1.0, 1.0), exponent), dtype)
    step = where(equal(x, 0.0), _floated(info.smallest_subnormal, dtype), step)
    return where(isfinite(x), step, math.nan)


def angle(z, deg: bool = False) -> Tensor:
    """The argument of real z: 0 for z >= +0, π for z < 0 and -0.0, NaN at NaN, as ``np.angle``.

    Constant, so derivative 0 (JAX's). Shapes: (*s) -> (*s). Example: ``np.angle(ad.Tensor([-1.0])).value`` is ``[π]``.
    """
    if _dtype(z).kind == "c":
        raise TypeError("np.angle on a Tensor: complex Tensors are not supported (a real Tensor's angle is 0 or π)")
    z = stop_gradient(_floated(z, _numpy_dtype(np.arctan2, 0.0, z)))
    a = arctan2(0.0, z)     # numpy's own formula for real z: arctan2(0, z)
    return multiply(a, 180.0 / math.pi) if deg else a
