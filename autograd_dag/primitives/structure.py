"""Structural primitives: identity, reshape, transpose, broadcast_to and sum.

What goes here: the linear primitives that move or add up entries without
choosing them by index (those are in :mod:`indexing`). Each is declared by its
transpose alone (``defprim(..., transpose=...)``: the JVP is the primitive on
the tangent, the VJP the transpose on the cotangent, and no rule reads a
value), and the transposes are one another: reshape and transpose are their
own (with the inverse shape or permutation), broadcasting and summing are each
other's. :func:`sum_to_shape`, the one un-broadcasting helper every
broadcasting primitive uses, is built from them.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import Tensor, apply
from ..errors import ShapeError
from ..modes import _per_thread
from .registry import defprim
from .shapes import fmt, normalize_axes, normalize_axis, reduced_shape

# --------------------------------------------------------------- identity

# The transformations differentiate with respect to a fresh node per argument
# slot: the sweeps key cotangents and tangents by Tensor identity, so an outer
# Tensor used directly as an input would merge two slots that hold it
# (f(x, x)) or a slot with a closure that reads it (perturbation confusion,
# x * grad(lambda y: x * y)(x)). Program extraction skips these nodes.
def unary_batch(prim, args, batched, **params):
    """The batching rule of a one-operand primitive that maps example by example: apply it."""
    return apply(prim, *args, **params)


IDENTITY = defprim(
    # Linear, but by hand: the derived rules would record an identity node per
    # derivative, and programs skip identity nodes (they are per-slot inputs).
    "identity", lambda x: x,
    vjp=lambda ct, out, x: (ct,),
    jvp=lambda t, out, x: t[0],
    shape=lambda x: (x.shape, x.dtype), batch=unary_batch)


def identity(x) -> Tensor:
    """A new node holding ``x``'s value, with derivative one.

    Shapes: (*s) -> (*s). Example: ``identity(x).parents == (x,)`` for a Tensor ``x``.
    """
    return apply(IDENTITY, x)

# ---------------------------------------------------------------- reshape


def _reshape_rule(x, *, shape):
    if int(np.prod(shape, dtype=np.int64)) != x.size:
        raise ShapeError(f"reshape: Expect: a shape with {x.size} elements (from {fmt(x.shape)}). "
                         f"Actual: {fmt(shape)} has {int(np.prod(shape, dtype=np.int64))}")
    return tuple(shape), x.dtype


RESHAPE = defprim(
    # (the method: np.reshape's dispatch costs more than the view itself)
    "reshape", lambda x, *, shape: x.reshape(shape) if type(x) is np.ndarray else np.reshape(x, shape),
    # x.shape is a valid shape for ct's size: no checks (the eager sweep runs this for every reshape).
    # In a bare sweep (the eager backward()) the impl is called directly, as apply's bare branch would.
    transpose=(lambda ct, x, *, shape: RESHAPE.impl(ct, shape=x.shape) if _per_thread.modes.bare and type(ct) is np.ndarray
               else apply(RESHAPE, ct, shape=tuple(x.shape)),),
    shape=_reshape_rule,
    batch=lambda prim, args, batched, *, shape: reshape(args[0], (args[0].shape[0],) + shape))


def reshape(x, shape) -> Tensor:
    """``x`` with a new shape of the same size; one entry may be -1.

    Shapes: (*s) -> shape. Example: ``ad.reshape(ad.Tensor(np.ones(6)), (2, 3)).shape == (2, 3)``.
    """
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(shape)
    size = x.size if isinstance(x, (Tensor, np.ndarray)) else np.size(x)
    for d in shape:  # (a loop, not all() of a generator: every reshape of a module and a VJP asks)
        if type(d) is not int or d < 0:
            break
    else:
        if math.prod(shape) == size:
            return apply(RESHAPE, x, shape=shape)  # the common case, checked at once
    if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < -1 for d in shape) \
            or shape.count(-1) > 1:
        raise ShapeError(f"reshape: Expect: non-negative integer sizes, at most one of them -1. "
                          f"Actual: {shape!r}")
    shape = tuple(int(d) for d in shape)
    if shape.count(-1) == 1:
        known = math.prod(d for d in shape if d != -1)  # (np.prod of a list: 4.6 µs)
        if known == 0 or size % known:
            raise ShapeError(f"reshape: cannot infer -1 in {fmt(shape)} for {size} elements")
        shape = tuple(size // known if d == -1 else d for d in shape)
    return apply(RESHAPE, x, shape=shape)


def expand_dims(x, /, axis) -> Tensor:
    """Insert size-1 axes at ``axis`` (an int or a tuple, positions in the result, as numpy's) (a reshape).

    Shapes: (*s) -> s with a 1 at each of the positions.
    Example: ``ad.expand_dims(ad.Tensor(np.ones((2, 3))), 1).shape == (2, 1, 3)``.
    """
    shape = np.shape(x.value if isinstance(x, Tensor) else x)
    count = len(axis) if isinstance(axis, (tuple, list)) else 1
    positions = normalize_axes("expand_dims", axis, len(shape) + count)
    rest = iter(shape)
    return reshape(x, tuple(1 if i in positions else next(rest) for i in range(len(shape) + count)))


def squeeze(x, /, axis=None) -> Tensor:
    """Remove size-1 axes (all, or those named) (a reshape). Shapes: (*s) -> s without them.

    Example: ``ad.squeeze(ad.Tensor(np.ones((2, 1, 3)))).shape == (2, 3)``.
    """
    shape = np.shape(x.value if isinstance(x, Tensor) else x)
    axes = normalize_axes("squeeze", axis, len(shape))
    if axis is None:
        axes = tuple(i for i in axes if shape[i] == 1)
    for a in axes:
        if shape[a] != 1:
            raise ShapeError(f"squeeze: Expect: axis {a} of size 1. Actual: shape {fmt(shape)}")
    return reshape(x, tuple(d for i, d in enumerate(shape) if i not in axes))

# -------------------------------------------------------------- transpose


def _transpose_rule(x, *, axes):
    if sorted(axes) != list(range(x.ndim)):
        raise ShapeError(f"transpose: Expect: a permutation of {list(range(x.ndim))}. Actual: {list(axes)}")
    return tuple(x.shape[a] for a in axes), x.dtype


TRANSPOSE = defprim(
    "transpose", lambda x, *, axes: x.transpose(axes) if type(x) is np.ndarray else np.transpose(x, axes),
    transpose=(lambda ct, x, *, axes: TRANSPOSE.impl(ct, axes=_inverse(axes)) if _per_thread.modes.bare and type(ct) is np.ndarray
               else apply(TRANSPOSE, ct, axes=_inverse(axes)),),
    shape=_transpose_rule,
    batch=lambda prim, args, batched, *, axes: transpose(args[0], (0,) + tuple(a + 1 for a in axes)))


def _inverse(axes: tuple) -> tuple:
    """The inverse permutation of ``axes``."""
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return tuple(inverse)


def transpose(x, /, axes=None) -> Tensor:
    """Permute the axes (reverse them by default), as ``np.transpose``.

    Shapes: (d0, ..., dn) -> (d_axes[0], ...). Example: ``ad.transpose(m).shape == m.shape[::-1]``.
    """
    ndim = np.ndim(x.value if isinstance(x, Tensor) else x)
    axes = tuple(range(ndim))[::-1] if axes is None else tuple(normalize_axis("transpose", a, ndim) for a in axes)
    if sorted(axes) != list(range(ndim)):
        raise ShapeError(f"transpose: Expect: a permutation of {list(range(ndim))}. Actual: {list(axes)}")
    return apply(TRANSPOSE, x, axes=axes)


def swapaxes(x, /, axis1: int, axis2: int) -> Tensor:
    """Exchange two axes (a transpose). Shapes: (..., da, ..., db, ...) -> (..., db, ..., da, ...).

    Example: ``ad.swapaxes(ad.Tensor(np.ones((2, 3, 4))), 0, 2).shape == (4, 3, 2)``.
    """
    ndim = np.ndim(x.value if isinstance(x, Tensor) else x)
    a, b = normalize_axis("swapaxes", axis1, ndim), normalize_axis("swapaxes", axis2, ndim)
    axes = list(range(ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return apply(TRANSPOSE, x, axes=tuple(axes))  # a permutation already: no checks

# ----------------------------------------------------------- broadcast_to


def _broadcast_to_rule(x, *, shape):
    try:
        if np.broadcast_shapes(tuple(x.shape), shape) != tuple(shape):
            raise ValueError
    except ValueError:
        raise ShapeError(f"broadcast_to: Expect: a shape that {fmt(x.shape)} broadcasts to. "
                         f"Actual: {fmt(shape)}") from None
    return tuple(shape), x.dtype


def _broadcast_to_batch(prim, args, batched, *, shape):
    x = args[0]
    missing = len(shape) - (x.ndim - 1)  # size-1 axes after the batch axis, as broadcasting prepends them
    if missing:
        x = reshape(x, (x.shape[0],) + (1,) * missing + tuple(x.shape[1:]))
    return broadcast_to(x, (x.shape[0],) + tuple(shape))


BROADCAST_TO = defprim(
    "broadcast_to", lambda x, *, shape: np.broadcast_to(x, shape),
    transpose=(lambda ct, x, *, shape: sum_to_shape(ct, x.shape),),
    shape=_broadcast_to_rule, batch=_broadcast_to_batch)


def broadcast_to(x, /, shape) -> Tensor:
    """``x`` broadcast to ``shape`` (numpy rules). Shapes: (*s) -> shape.

    The value is a read-only numpy view: no copy is made.
    Example: ``ad.broadcast_to(ad.Tensor([1., 2.]), (3, 2)).shape == (3, 2)``.
    """
    shape = tuple(int(d) for d in shape)
    if isinstance(x, Tensor) and x.shape == shape:
        return x
    return apply(BROADCAST_TO, x, shape=shape)

# -------------------------------------------------------------------- sum


def _sum_impl(x, *, axis, keepdims):
    # Over leading axes of a contiguous float array (a bias's cotangent summed over the rows): a
    # row of ones times the rows, one BLAS matrix–vector product. numpy adds the rows one at a time
    # (a loop per row): (1024, 128) float32 took 30-38 µs against 10-13, float64 43-50 against 24;
    # (1024, 512) float32 58-84 against 42-49, float64 93-127 against 55-86 (one and two BLAS threads,
    # benchmarks/bench_sum_rows.py). Both add in the array's dtype; BLAS associates differently
    # (within rounding), and an all −0.0 column sums to +0.0. Not past _SUM_ROWS_COLUMNS columns:
    # OpenBLAS's float32 product over (8, 10⁶) took 7.8 ms against numpy's 1.9. Nor under
    # _SUM_ROWS_FROM elements, tested first: a (4, 3) sum took 5.1 µs this way against 3.5 (the
    # tests and the row of ones cost more than the adds), and small sums are every broadcast's VJP.
    if (type(x) is np.ndarray and x.size >= _SUM_ROWS_FROM and x.dtype.char in "fd" and axis
            and axis == tuple(range(len(axis)))
            and len(axis) < x.ndim and x.flags.c_contiguous
            and math.prod(x.shape[len(axis):]) <= _SUM_ROWS_COLUMNS):
        rows = math.prod(x.shape[:len(axis)])
        out = np.matmul(np.ones(rows, x.dtype), x.reshape(rows, -1))
        return out.reshape((1,) * len(axis) + x.shape[len(axis):] if keepdims else x.shape[len(axis):])
    if type(x) is np.ndarray:  # (what np.sum calls for an ndarray, without its Python wrapper)
        return np.add.reduce(x, axis=axis, keepdims=keepdims)
    return np.sum(x, axis=axis, keepdims=keepdims)


# The widest rows (elements after the summed axes) summed by a BLAS product (measured up to 16 × 262,144).
_SUM_ROWS_COLUMNS = 1 << 18
# The fewest elements summed by it: from (16, 64) on, ones @ x was faster (2.7 µs against 3.7, float32 and float64).
_SUM_ROWS_FROM = 1024


def _sum_rule(x, *, axis, keepdims):
    return reduced_shape(x.shape, axis, keepdims), x.dtype


def _sum_transpose(ct, x, *, axis, keepdims):
    if not keepdims:
        ct = reshape(ct, reduced_shape(x.shape, axis, True))
    return broadcast_to(ct, x.shape)


SUM = defprim(
    "sum", _sum_impl,
    transpose=(_sum_transpose,),
    shape=_sum_rule,
    batch=lambda prim, args, batched, *, axis, keepdims: apply(
        prim, args[0], axis=tuple(a + 1 for a in axis), keepdims=keepdims))


def sum(x, /, axis=None, *, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Sum over ``axis`` (None: all axes; int or tuple).

    Shapes: (*s) -> s without the summed axes (kept as 1 with ``keepdims``).
    Example: ``ad.sum(ad.Tensor(np.ones((2, 3))), axis=0).shape == (3,)``.
    """
    ndim = np.ndim(x.value if isinstance(x, Tensor) else x)
    return apply(SUM, x, axis=normalize_axes("sum", axis, ndim), keepdims=bool(keepdims))


def sum_to_shape(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum a cotangent back to an operand's ``shape`` after broadcasting.

    The one un-broadcasting helper: every broadcasting primitive's VJP calls it.
    Leading axes that broadcasting added are summed away; axes where ``shape``
    has 1 are summed and kept. Shapes: (*s) -> shape, where shape broadcasts to s.
    Example: ``ad.sum_to_shape(ad.Tensor(np.ones((3, 2))), (1, 2)).value`` is ``[[3., 3.]]``.
    """
    shape = tuple(shape)
    if x.shape == shape:
        return x
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and x.shape[lead + i] != 1)
    if _per_thread.modes.bare and type(x) is np.ndarray:
        # A bare sweep (every broadcasting VJP of the eager backward()): the impls apply's bare
        # branch would reach, called directly; ``axes`` is sorted and non-negative already.
        if axes:
            x = SUM.impl(x, axis=axes, keepdims=False)
        return x if x.shape == shape else RESHAPE.impl(x, shape=shape)
    if axes:
        x = sum(x, axes)
    if x.shape != shape:
        x = reshape(x, shape)
    return x
