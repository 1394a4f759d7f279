"""Large elementwise ufunc calls and reductions split over the pool, giving the unsplit result.

numpy releases the GIL inside a ufunc's loop, so ``ufunc(x[a:b], out=y[a:b])``
on two threads runs on two cores. An elementwise call is split into chunks of
its flattened arrays when every operand is C-contiguous of the result's shape
(chunk starts aligned as :func:`~autograd_dag.parallel.run_chunks` aligns
them, so the vector loops meet each element where the unsplit call does: the
result is the same bit for bit), else into rows of its leading axis, operands
broadcast along that axis passed whole. A reduction keeping the leading axis
is split into rows, each reduced as the unsplit call reduces it (exactly
equal); one over the leading axis reduces each chunk and combines the
partial results in chunk order (another summation order: equal within
rounding, and the same on every call for a given number of threads).

Below its grain (:data:`~autograd_dag.parallel.GRAINS`, per kind of work)
or on one thread, a call is the plain numpy call.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> x = np.linspace(0, 1, 1 << 16)
    >>> add = ad.splitting.split_ufunc(np.add, x.shape, x.dtype)
    >>> with ad.num_threads(2), ad.parallel.grains(cheap=1024):
    ...     bool((add(x, 1.0) == x + 1.0).all())
    True
"""

from __future__ import annotations

import math

import numpy as np

from . import parallel
from .parallel import GRAINS, run_chunks

# Ufuncs doing a few cycles of work per item: memory-bound, so their grain is larger than that
# of the transcendental ones (exp, log, tanh, sin, ...), whose loops are 5-20x slower per item.
CHEAP = frozenset({
    np.add, np.subtract, np.multiply, np.true_divide, np.negative, np.positive, np.absolute, np.square,
    np.maximum, np.minimum, np.fmax, np.fmin, np.sign, np.copysign, np.floor, np.ceil, np.rint, np.trunc,
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not, np.isnan, np.isinf, np.isfinite,
})

# Reductions split here: the primitive's name and the ufunc combining partial results.
REDUCTIONS = {"sum": np.add, "mean": np.add, "max": np.maximum, "min": np.minimum}


def kind_of(ufunc: np.ufunc) -> str:
    """The kind of work of ``ufunc`` (a key of :data:`~autograd_dag.parallel.GRAINS`)."""
    return "cheap" if ufunc in CHEAP else "transcendental"


def split_ufunc(ufunc: np.ufunc, shape: tuple[int, ...], dtype) -> callable:
    """``ufunc`` for operands broadcasting to ``shape`` (result ``dtype``), split over the pool when large.

    Returns ``impl(*operands, out=None)``: the result (``out`` when given: it
    may be one of the operands, as an in-place step writes). Operands are
    arrays or scalars of the result's dtype.
    """
    kind = kind_of(ufunc)
    size = math.prod(shape)
    dtype = np.dtype(dtype)

    def impl(*operands, out=None):
        grain = GRAINS[kind]
        if parallel._threads < 2 or size < 2 * grain:
            return ufunc(*operands) if out is None else ufunc(*operands, out=out)
        if out is None:
            out = np.empty(shape, dtype)
        elementwise_chunks(ufunc, operands, out, grain)
        return out
    impl.__name__ = impl.__qualname__ = f"split_{ufunc.__name__}"
    return impl


def elementwise_chunks(ufunc: np.ufunc, operands, out: np.ndarray, grain: int) -> None:
    """``ufunc(*operands, out=out)`` over chunks run by :func:`~autograd_dag.parallel.run_chunks`."""
    shape = out.shape
    arrays = [isinstance(v, np.ndarray) and v.ndim > 0 for v in operands]
    if out.flags.c_contiguous and all(not a or (v.shape == shape and v.flags.c_contiguous)
                                      for v, a in zip(operands, arrays)):
        flat = out.reshape(-1)
        parts = [v.reshape(-1) if a else v for v, a in zip(operands, arrays)]

        def chunk(start, stop):
            ufunc(*[v[start:stop] if a else v for v, a in zip(parts, arrays)], out=flat[start:stop])
        run_chunks(chunk, flat.size, grain=grain)
        return
    rows = shape[0]
    # An operand of fewer axes, or of one row, is broadcast along the rows: passed whole.
    sliced = [a and v.ndim == len(shape) and v.shape[0] == rows for v, a in zip(operands, arrays)]

    def row_chunk(start, stop):
        ufunc(*[v[start:stop] if s else v for v, s in zip(operands, sliced)], out=out[start:stop])
    run_chunks(row_chunk, rows, grain=-(-grain // max(out.size // max(rows, 1), 1)), align=1)


def split_reduction(name: str, impl, in_shape: tuple[int, ...], out_shape: tuple[int, ...], dtype) -> callable:
    """The reduction ``name`` (``impl(x, *, axis, keepdims)``) of an ``in_shape`` array, split when large.

    Returns ``split(x, *, axis, keepdims)``. Rows of the leading axis when it
    is kept (each reduced by ``impl``: the unsplit result exactly); else each
    chunk's partial result, combined in chunk order.
    """
    combine = REDUCTIONS[name]
    size = math.prod(in_shape)
    dtype = np.dtype(dtype)

    def split(x, *, axis, keepdims):
        grain = GRAINS["reduction"]
        if parallel._threads < 2 or size < 2 * grain or x.ndim == 0:
            return impl(x, axis=axis, keepdims=keepdims)
        rows = x.shape[0]
        row_grain = -(-grain // max(size // max(rows, 1), 1))
        if 0 not in axis:
            out = np.empty(out_shape, dtype)

            def kept(start, stop):
                out[start:stop] = impl(x[start:stop], axis=axis, keepdims=keepdims)
            run_chunks(kept, rows, grain=row_grain, align=1)
            return out
        partials = {}
        reduce = np.sum if name == "mean" else impl

        def part(start, stop):
            partials[start] = reduce(x[start:stop], axis=axis, keepdims=True)
        run_chunks(part, rows, grain=row_grain, align=1)
        total = None
        for start in sorted(partials):   # chunk order: the same sum on every call
            total = partials[start] if total is None else combine(total, partials[start], out=total)
        if name == "mean":
            total = np.true_divide(total, math.prod(in_shape[a] for a in axis), out=total)
        return total if keepdims else total.reshape(out_shape)
    split.__name__ = split.__qualname__ = f"split_{name}"
    return split
