"""Batching rules (``vmap``): each primitive on operands that carry a leading batch axis.

A rule is ``rule(prim, args, batched, **params)``: ``args`` are the primitive's
operands, ``batched[i]`` says whether operand i has an extra leading axis of
the batch size B, and the rule returns the primitive's result for every
example at once, with the batch axis leading. Rules call primitive functions,
so a batched computation records and differentiates like any other.

Most primitives need one of the few rules below: elementwise operations align
the ranks of their operands; reductions and the structural primitives shift
their axis parameters past the batch axis. The families pass them to
``defprim(batch=...)`` next to their VJP and JVP.
"""

from __future__ import annotations

from ..core import Primitive, apply
from .structure import broadcast_to, reshape, transpose


def batch_size(args, batched) -> int:
    for a, b in zip(args, batched):
        if b:
            return a.shape[0]
    raise ValueError("a batching rule was called without a batched operand")


def lift_rank(x, rank: int):
    """A batched ``x`` with size-1 axes inserted after the batch axis up to ``rank`` example axes.

    Broadcasting aligns trailing axes, so an example of lower rank than its
    fellow operands must not let the batch axis meet one of their axes.
    """
    missing = rank - (x.ndim - 1)
    if missing <= 0:
        return x
    return reshape(x, (x.shape[0],) + (1,) * missing + tuple(x.shape[1:]))


def materialize(x, size: int):
    """An unbatched operand repeated along a new leading batch axis (a broadcast view)."""
    return broadcast_to(x, (size,) + tuple(x.shape))


def move_batch_axis(x, source: int):
    """``x`` with its axis ``source`` moved to the front."""
    if source == 0:
        return x
    axes = (source,) + tuple(i for i in range(x.ndim) if i != source)
    return transpose(x, axes)


def elementwise(prim: Primitive, args, batched, **params):
    """The rule of an elementwise (broadcasting) primitive: align ranks, then apply it."""
    rank = max(a.ndim - b for a, b in zip(args, batched))
    lifted = [lift_rank(a, rank) if b else a for a, b in zip(args, batched)]
    return apply(prim, *lifted, **params)


def leading_axes(prim: Primitive, args, batched, **params):
    """The rule of a primitive that maps over every leading axis its operands share (pooling, stacked linear algebra).

    The batch axis is one more such axis: an operand shared by the batch is
    repeated along it (a broadcast view), so that every operand carries it.
    Not a fold into the first axis (:func:`merge_batch`): an example of
    max_pool2d may be a bare (H, W). Shapes: operands (B, *s_i) or (*s_i) ->
    (B, *the example's result shape).
    Example: ``max_pool2d_scatter``'s cotangents batched, its input x shared
    (the Jacobian of max_pool2d): x becomes (B, *x.shape) and the rule is one call.
    """
    size = batch_size(args, batched)
    return apply(prim, *[a if b else materialize(a, size) for a, b in zip(args, batched)], **params)


def shift_axis(name: str = "axis"):
    """The rule of a one-operand primitive whose ``name`` parameter (int, tuple or None) counts axes."""
    def rule(prim: Primitive, args, batched, **params):
        axis = params[name]
        if axis is None:
            shifted = tuple(range(1, args[0].ndim))
        elif isinstance(axis, tuple):
            shifted = tuple(a + 1 for a in axis)
        else:
            shifted = axis + 1
        return apply(prim, *args, **{**params, name: shifted})
    return rule


def merge_batch(*merged: int):
    """The rule of a primitive that already maps over its operands' first axis (conv2d's N).

    The operands at positions ``merged`` fold the batch axis into their first
    axis (B·N), the primitive runs once, and the result is split again. Any
    other operand must be unbatched; otherwise the rule returns
    ``NotImplemented`` and ``vmap`` loops over the batch.
    """
    def rule(prim: Primitive, args, batched, **params):
        if any(b for i, b in enumerate(batched) if i not in merged):
            return NotImplemented
        size = batch_size(args, batched)
        folded, n = [], None
        for i, (a, b) in enumerate(zip(args, batched)):
            if i in merged:
                a = a if b else materialize(a, size)
                n = a.shape[1]  # each example's N: the result's first axis too
                a = reshape(a, (size * n,) + tuple(a.shape[2:]))
            folded.append(a)
        out = apply(prim, *folded, **params)
        # (Not out.shape[0] // size: an empty batch divided by zero.)
        return reshape(out, (size, n) + tuple(out.shape[1:]))
    return rule
