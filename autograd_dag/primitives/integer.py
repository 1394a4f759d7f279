"""Elementwise primitives of integers: floor division, shifts, bitwise and/or/xor/not, gcd and lcm.

numpy's ufuncs computed on the values (``t // 2``, ``t << 1``, ``t & 0xF``,
``np.gcd(t, 12)``), recorded like every other elementwise primitive, so that
jit, trace, vmap, checkpoint, the ONNX export and ``ad.jax.lower`` see them.
Values and dtypes are numpy 2's (Python numbers are weak: ``int8 << 1`` stays
int8); an integer division by zero gives 0 with numpy's RuntimeWarning.

Derivatives, as JAX and PyTorch define them:

* ``floor_divide`` is piecewise constant: derivative 0 in both operands
  (``jax.grad(lambda x: x // 2.)`` is 0; torch's ``div(rounding_mode='floor')``
  gives 0 too; ``torch.floor_divide`` has none). ``divmod(x, y)`` is
  ``(x // y, x % y)``: ``%`` is ``mod`` (∂/∂x = 1, ∂/∂y = -floor(x/y)).
* Shifts, bitwise operations, gcd and lcm take integers (or booleans) only and
  give integers: no derivative flows through them (``nondiff``, like the
  comparisons). Float operands are refused with a :class:`DTypeError` (a
  TypeError, as numpy's) naming the operation, the dtypes and the user's line.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> t = ad.Tensor(np.array([-7, 7, 12], np.int8))
    >>> (t // 2).value, (t << 1).value, (t & 6).value, (~t).value
    (array([-4,  3,  6], dtype=int8), array([-14,  14,  24], dtype=int8), array([0, 6, 4], dtype=int8), array([  6,  -8, -13], dtype=int8))
"""

from __future__ import annotations

import numpy as np

from ..core import Tensor, apply
from ..errors import DTypeError
from ..inlined import operation
from .elementwise import defelementwise
from .mathfuncs import mod
from .shapes import broadcast


def _rule(name, impl, integers_only: bool):
    """Broadcast shapes; numpy's own output dtype (found on empty operands); floats refused where numpy does."""
    shape = broadcast(name)

    def rule(*operands, **params):
        out_shape, _ = shape(*operands)
        dtypes = [np.dtype(o.dtype) for o in operands]
        if integers_only and any(d.kind not in "biu" for d in dtypes):
            raise DTypeError(f"Expect: integer or boolean operands (numpy's {name} has no rule for floats and "
                             f"raises TypeError). Actual: {', '.join(map(str, dtypes))}")
        with np.errstate(all="ignore"):
            return out_shape, impl(*[np.zeros((0,), d) for d in dtypes]).dtype
    return rule


def _integer(name, impl):
    """A primitive of integers only: integer-valued, no derivative (like the comparisons)."""
    n = impl.nin
    return defelementwise(name, impl, (None,) * n, shape=_rule(name, impl, True), nondiff=tuple(range(n)))


# Piecewise constant: derivative 0 (not nondiff: floats carry a zero derivative, as floor does).
FLOOR_DIVIDE = defelementwise("floor_divide", np.floor_divide, (None, None),
                              shape=_rule("floor_divide", np.floor_divide, False))
LEFT_SHIFT = _integer("left_shift", np.left_shift)
RIGHT_SHIFT = _integer("right_shift", np.right_shift)
BITWISE_AND = _integer("bitwise_and", np.bitwise_and)
BITWISE_OR = _integer("bitwise_or", np.bitwise_or)
BITWISE_XOR = _integer("bitwise_xor", np.bitwise_xor)
INVERT = _integer("invert", np.invert)
GCD = _integer("gcd", np.gcd)
LCM = _integer("lcm", np.lcm)


@operation(FLOOR_DIVIDE)
def floor_divide(x, y) -> Tensor:
    """x // y elementwise (numpy's ``floor_divide``: floor(x / y)); broadcasting.

    Derivative 0 in both operands (JAX's and PyTorch's floor division). Integers
    divided by 0 give 0 with numpy's RuntimeWarning. Shapes: (*a), (*b) -> broadcast(a, b).
    Example: ``ad.floor_divide(ad.Tensor([-7., 7.]), 2.).value`` is ``[-4., 3.]``.
    """
    return apply(FLOOR_DIVIDE, x, y)


def divmod(x, y) -> tuple[Tensor, Tensor]:  # noqa: A001
    """``(x // y, x % y)``, as ``np.divmod`` and Python's ``divmod`` (same values, same dtypes).

    Example: ``[r.value for r in ad.divmod(ad.Tensor([-7]), 2)]`` is ``[[-4], [1]]``.
    """
    return floor_divide(x, y), mod(x, y)


@operation(LEFT_SHIFT)
def left_shift(x, y) -> Tensor:
    """x << y elementwise on integers (numpy's ``left_shift``); no derivative; broadcasting.

    Example: ``ad.left_shift(ad.Tensor([1, -3]).astype(int), 2).value`` is ``[4, -12]``.
    """
    return apply(LEFT_SHIFT, x, y)


@operation(RIGHT_SHIFT)
def right_shift(x, y) -> Tensor:
    """x >> y elementwise on integers (arithmetic for signed, as numpy's ``right_shift``); no derivative.

    Example: ``ad.right_shift(ad.Tensor([16, -16]).astype(int), 2).value`` is ``[4, -4]``.
    """
    return apply(RIGHT_SHIFT, x, y)


@operation(BITWISE_AND)
def bitwise_and(x, y) -> Tensor:
    """x & y elementwise on integers or booleans (numpy's ``bitwise_and``); no derivative.

    Example: ``ad.bitwise_and(ad.Tensor([12, 10]).astype(int), 6).value`` is ``[4, 2]``.
    """
    return apply(BITWISE_AND, x, y)


@operation(BITWISE_OR)
def bitwise_or(x, y) -> Tensor:
    """x | y elementwise on integers or booleans (numpy's ``bitwise_or``); no derivative.

    Example: ``ad.bitwise_or(ad.Tensor([12, 10]).astype(int), 1).value`` is ``[13, 11]``.
    """
    return apply(BITWISE_OR, x, y)


@operation(BITWISE_XOR)
def bitwise_xor(x, y) -> Tensor:
    """x ^ y elementwise on integers or booleans (numpy's ``bitwise_xor``); no derivative.

    Example: ``ad.bitwise_xor(ad.Tensor([12, 10]).astype(int), 6).value`` is ``[10, 12]``.
    """
    return apply(BITWISE_XOR, x, y)


@operation(INVERT)
def invert(x) -> Tensor:
    """~x elementwise: bitwise not of integers, logical not of booleans (numpy's ``invert``); no derivative.

    Example: ``ad.invert(ad.Tensor([0, 5]).astype(int)).value`` is ``[-1, -6]``.
    """
    return apply(INVERT, x)


@operation(GCD)
def gcd(x, y) -> Tensor:
    """Greatest common divisor of integers, elementwise, non-negative (numpy's ``gcd``); no derivative.

    Example: ``ad.gcd(ad.Tensor([12, -18]).astype(int), 8).value`` is ``[4, 2]``.
    """
    return apply(GCD, x, y)


@operation(LCM)
def lcm(x, y) -> Tensor:
    """Least common multiple of integers, elementwise, non-negative (numpy's ``lcm``); no derivative.

    Example: ``ad.lcm(ad.Tensor([4, -6]).astype(int), 10).value`` is ``[20, 30]``.
    """
    return apply(LCM, x, y)


__all__ = ["floor_divide", "divmod", "left_shift", "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor",
           "invert", "gcd", "lcm"]
