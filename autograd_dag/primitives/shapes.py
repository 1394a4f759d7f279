"""Shape rules shared by the primitive families.

A rule takes the operands (anything with ``.shape`` and ``.dtype``) and the
static parameters, and returns ``(shape, dtype)`` or raises :class:`ShapeError`
in Expect / Actual form. Rules run when numpy refuses an operation (to say
precisely why) and when a program is checked without being run.
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError


def fmt(shape) -> str:
    """A shape as Python writes a tuple: ``(3,)``, ``(2, 3)``."""
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def broadcast(name: str):
    """Rule of an elementwise primitive: operands broadcast together."""
    def rule(*operands, **params):
        shapes = [tuple(o.shape) for o in operands]
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            raise ShapeError(
                f"{name}: operands cannot be broadcast together. Expect: shapes equal or 1 on "
                f"each trailing axis. Actual: {', '.join(fmt(s) for s in shapes)}") from None
        dtype = np.result_type(*[o.dtype for o in operands])
        return shape, dtype
    return rule


def normalize_axes(name: str, axis, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, (int, np.integer, tuple, list)):
        raise ShapeError(f"{name}: axis must be an int or a tuple of ints. Actual: {axis!r}")
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
            raise ShapeError(f"{name}: axis {a!r} is out of range. Expect: an integer in "
                             f"[{-ndim}, {ndim}) for an operand of {ndim} dimensions. Actual: {axis!r}")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"{name}: repeated axis in {axis!r}")
    return tuple(sorted(out))


def normalize_axis(name: str, axis, ndim: int) -> int:
    """One axis as a non-negative int."""
    if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ShapeError(f"{name}: axis {axis!r} is out of range. Expect: an integer in "
                         f"[{-ndim}, {ndim}) for an operand of {ndim} dimensions. Actual: {axis!r}")
    return int(axis) % ndim


def reduced_shape(shape, axes, keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def require_float(name: str, operand) -> None:
    if operand.dtype.kind not in "fc":
        raise ShapeError(f"{name}: Expect: a floating-point operand. Actual: dtype {operand.dtype}")
