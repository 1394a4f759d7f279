"""numpy's counting functions on Tensors: histogram, bincount, digitize, isin and unique.

Their integer and boolean results have no derivative, but they are recorded (comparisons and sums
of booleans), so jit, trace and vmap follow the data: a bin count is Σ (x >= edge) differences, a
digit the number of edges below x, membership an ``any`` of equalities (O(len(x) · len(bins))
comparisons). The weights of ``histogram`` and ``bincount`` are differentiable (a weighted count is
linear in them). Results whose shape depends on the values (``unique``, ``bincount``'s length,
``histogram`` with bins named by a rule such as 'auto') read the numbers, so inside jit or trace they
raise :class:`TracingError`, as ``np.nonzero`` does; eagerly they return what numpy returns
(``unique``'s values gathered from the Tensor: the derivative goes to each value's first occurrence).

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> counts, edges = np.histogram(ad.Tensor([0.0, 0.5, 1.0, 1.0]), bins=2)
    >>> counts.value, edges.value
    (array([1, 3]), array([0. , 0.5, 1. ]))
"""

from __future__ import annotations

import numpy as np

from ..core import Tensor, concrete
from .elementwise import (add, astype, divide, equal, greater, greater_equal, less, less_equal,
                          multiply, subtract, where)
from .indexing import concatenate, index_add, take
from .mathfuncs import isnan
from .numeric import any, diff as numeric_diff
from .reductions import max, min
from .structure import reshape, sum


from .editing import _dtype, _shape, _tensor  # (one copy of the small operand helpers)


def _flat(x):
    return reshape(_tensor(x), (-1,))


def _counted(x, edges, compare):
    """For each edge, Σ compare(x, edge) over x (integers): shape (len(edges),)."""
    return sum(astype(compare(reshape(_flat(x), (-1, 1)), reshape(_tensor(edges), (1, -1))), np.intp), 0)


def _weighted(x, edges, compare, weights):
    hits = compare(reshape(_flat(x), (-1, 1)), reshape(_tensor(edges), (1, -1)))
    return sum(where(hits, reshape(_flat(weights), (-1, 1)), np.zeros((), _dtype(weights))), 0)


def _linspace(first, last, num, dtype):
    """np.linspace(first, last, num) with recorded ends, numpy's own steps (so its values, bit for bit)."""
    div = num - 1
    delta = subtract(last, first)
    step = divide(delta, np.asarray(div, dtype))
    ramp = np.arange(0, num, dtype=dtype)
    # numpy divides first where the step underflows to 0.
    y = add(where(equal(step, 0.0), multiply(ramp / np.asarray(div, dtype), delta), multiply(ramp, step)), first)
    return concatenate([y[:-1], reshape(last, (1,))], 0)


def _edges(name, a, bins, range_):
    if isinstance(bins, str):
        # A rule ('auto', 'fd', ...) sets the number of bins from the values: it reads them.
        values = concrete(a, f"np.{name} with bins={bins!r}")
        return Tensor(np.histogram_bin_edges(values, bins, range_))
    if np.ndim(bins) == 1:
        edges = bins if isinstance(bins, Tensor) else np.asarray(bins)
        if not isinstance(edges, Tensor) and np.any(edges[:-1] > edges[1:]):
            raise ValueError("`bins` must increase monotonically, when an array")
        return _tensor(edges)
    n = int(bins)
    if n < 1:
        raise ValueError("`bins` must be positive, when an integer")
    # numpy's bin type: a's float type (its min and max are the ends), float64 for integers.
    dtype = _dtype(a) if np.issubdtype(_dtype(a), np.inexact) else np.dtype(np.float64)
    if range_ is not None:
        first, last = float(range_[0]), float(range_[1])
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if first == last:
            first, last = first - 0.5, last + 0.5
        return Tensor(np.linspace(first, last, n + 1, dtype=dtype))
    flat = _flat(a)
    if not isinstance(a, Tensor) or not a.shape or flat.shape[0] == 0:
        return Tensor(np.histogram_bin_edges(concrete(a, f"np.{name}"), n))
    first, last = min(flat), max(flat)
    if not isinstance(first, Tensor) or first.dtype != dtype:
        first, last = astype(first, dtype), astype(last, dtype)
    same = equal(first, last)
    first, last = where(same, subtract(first, 0.5), first), where(same, add(last, 0.5), last)
    return _linspace(first, last, n + 1, dtype)


def histogram(a, bins=10, range=None, density=None, weights=None) -> tuple:  # noqa: A002 - numpy's name
    """(counts, bin edges) of the entries of ``a``, as ``np.histogram`` (last bin closed).

    Counts are recorded comparisons against the edges (no derivative); with ``weights`` (a Tensor
    too) each entry adds its weight, differentiable in the weights. Edges from the data (bins an
    integer, no range) are recorded from min and max. Shapes: (*s) -> (bins,), (bins + 1,).
    """
    if isinstance(bins, str) and weights is not None:
        raise TypeError("Automated estimation of the number of bins is not supported for weighted data")
    edges = _edges("histogram", a, bins, range)
    if weights is not None and _shape(weights) != _shape(a):
        raise ValueError("weights should have the same shape as a.")
    inner = edges[:-1] if isinstance(edges, Tensor) else edges[:-1]
    if weights is None:
        at_least = _counted(a, inner, greater_equal)
        beyond = _counted(a, edges[-1:], greater)
    else:
        at_least = _weighted(a, inner, greater_equal, weights)
        beyond = _weighted(a, edges[-1:], greater, weights)
    # count_i = #(x >= e_i) − #(x >= e_{i+1}), the last bin closed: its upper count is #(x > e_n).
    upper = concatenate([at_least[1:], beyond], 0)
    counts = subtract(at_least, upper)
    if density:
        widths = astype(numeric_diff(edges), np.float64)
        counts = divide(divide(counts, widths), sum(counts))
    return counts, edges


def bincount(x, weights=None, minlength: int = 0) -> Tensor:
    """The number of occurrences of each value 0, 1, … in the non-negative integers x, as ``np.bincount``.

    With ``weights`` (differentiable) the sum of the weights at each value (float64). The length
    max(x) + 1 reads x's numbers (TracingError inside jit when x comes from an input).
    Shapes: (n,) -> (max(max(x) + 1, minlength),).
    """
    index = np.asarray(concrete(x, "np.bincount (its length is max(x) + 1)"))
    length = np.bincount(index, minlength=minlength).shape[0]
    if weights is None:
        return Tensor(np.bincount(index, minlength=minlength))
    if _shape(weights) != index.shape:
        raise ValueError("The weights and list don't have the same length.")
    return index_add(astype(_tensor(weights), np.float64), (length,), index)


def digitize(x, bins, right: bool = False) -> Tensor:
    """The index of the bin of each x, as ``np.digitize`` (bins increasing or decreasing).

    Recorded as the number of edges below (or above) x; NaN goes past the last edge, as numpy.
    No derivative. Shapes: (*s), (n,) -> (*s) (integers).
    """
    edges = np.asarray(concrete(bins, "np.digitize's bins (is it increasing?)"))
    if edges.ndim != 1:
        raise ValueError("object too deep for desired array")
    increasing = edges.size < 2 or bool(np.all(edges[1:] >= edges[:-1]))
    if not increasing and not np.all(edges[1:] <= edges[:-1]):
        raise ValueError("bins must be monotonically increasing or decreasing")
    xs = reshape(_tensor(x), _shape(x) + (1,))
    if increasing:
        below = less(edges, xs) if right else less_equal(edges, xs)
        count = sum(astype(below, np.intp), -1)
        return where(isnan(_tensor(x)), np.intp(edges.size), count)
    above = greater_equal(edges, xs) if right else greater(edges, xs)
    return sum(astype(above, np.intp), -1)


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *, kind=None) -> Tensor:
    """Whether each entry of ``element`` is among ``test_elements``, as ``np.isin`` (recorded equalities).

    Shapes: (*s), (*t) -> (*s) (booleans).
    """
    found = any(equal(reshape(_tensor(element), _shape(element) + (1,)), reshape(_flat(test_elements), (1,) * len(_shape(element)) + (-1,))), -1)
    return equal(found, False) if invert else found


def unique(ar, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis=None, *, equal_nan: bool = True, sorted: bool = True):  # noqa: A002 - numpy's name
    """The sorted distinct values of ``ar`` (and numpy's optional index, inverse and counts), as ``np.unique``.

    Reads the numbers (TracingError inside jit); the values are gathered from the Tensor, so the
    derivative goes to each value's first occurrence.
    """
    values = concrete(ar, "np.unique (its length depends on the values)")
    found = np.unique(values, return_index=True, return_inverse=return_inverse, return_counts=return_counts,
                      axis=axis, equal_nan=equal_nan, sorted=sorted)
    first = found[1]
    gathered = take(_flat(ar), first, 0) if axis is None else take(_tensor(ar), first, axis)
    extras = ([first] if return_index else []) + list(found[2:])
    return tuple([gathered] + extras) if extras else gathered
