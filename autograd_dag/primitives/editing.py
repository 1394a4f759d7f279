"""numpy's array editing as composites: resize, delete, insert, meshgrid, cumulative_sum and
cumulative_prod (numpy 2, with include_initial), vdot, ptp, and sums and means with where=.

``resize``, ``delete`` and ``insert`` run numpy's own function on an array of entry labels, so the
positions follow numpy's rules for every form of their arguments, then gather the Tensor's entries
at those labels (one ``take``: its derivative scatters back; an entry deleted gets 0, one repeated
by ``resize`` the sum). The positions are constants of the program, fixed by the shapes.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> np.delete(ad.Tensor([1.0, 2.0, 3.0]), 1).value
    array([1., 3.])
    >>> np.insert(ad.Tensor([1.0, 2.0]), 1, 9.0).value
    array([1., 9., 2.])
"""

from __future__ import annotations

import numpy as np

from ..core import Tensor, concrete
from ..errors import AutogradDagError, located, user_source
from .elementwise import astype, divide, subtract, where
from .arrays import dot
from .indexing import concatenate, take
from .numeric import cumprod, cumsum
from .reductions import max, min
from .shapes import normalize_axes, normalize_axis
from .structure import broadcast_to, reshape, sum


def _shape(x) -> tuple:
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)


def _dtype(x) -> np.dtype:
    return x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(np.asarray(x))


def _gathered(x, labels: np.ndarray) -> Tensor:
    """x's entries (flattened, C order) at ``labels``: one recorded gather."""
    return take(reshape(_tensor(x), (-1,)), labels.astype(np.intp), 0)


def _labels(x) -> np.ndarray:
    return np.arange(int(np.prod(_shape(x), dtype=np.int64)), dtype=np.intp).reshape(_shape(x))


def _positions(name, obj):
    # Indices and masks are numbers (no derivative); inside jit they must not come from an input.
    return concrete(obj, f"np.{name}'s positions") if isinstance(obj, Tensor) else obj


def resize(a, new_shape) -> Tensor:
    """``a``'s entries repeated in C order to fill ``new_shape``, as ``np.resize``.

    Shapes: (*s) -> new_shape. Example: ``np.resize(ad.Tensor([1.0, 2.0]), 3).value`` is ``[1., 2., 1.]``.
    """
    if int(np.prod(_shape(a), dtype=np.int64)) == 0:
        return _tensor(np.resize(np.zeros(_shape(a), _dtype(a)), new_shape))
    return _gathered(a, np.resize(_labels(a), new_shape))


def delete(arr, obj, axis=None) -> Tensor:
    """``arr`` without the entries (or slices along ``axis``) ``obj`` names, as ``np.delete``.

    Shapes: (*s) -> s with fewer entries along ``axis`` (flattened first when axis is None).
    Example: ``np.delete(ad.Tensor([[1.0, 2.0], [3.0, 4.0]]), 0, axis=1).value`` is ``[[2.], [4.]]``.
    """
    return _gathered(arr, np.delete(_labels(arr), _positions("delete", obj), axis))


def insert(arr, obj, values, axis=None) -> Tensor:
    """``arr`` with ``values`` inserted before the positions ``obj``, as ``np.insert`` (values cast to
    arr's dtype). Differentiable in ``arr`` and ``values``.

    Shapes: (*s) -> s with more entries along ``axis`` (flattened first when axis is None).
    Example: ``np.insert(ad.Tensor([[1.0], [2.0]]), 1, 0.0, axis=1).value`` is ``[[1., 0.], [2., 0.]]``.
    """
    obj = _positions("insert", obj)
    # numpy broadcasts values by its own rules: labels of values' entries, inserted the same way, follow them.
    value_labels = np.arange(int(np.prod(_shape(values), dtype=np.int64)), dtype=np.intp).reshape(_shape(values))
    kept = np.insert(_labels(arr), obj, np.full(_shape(values), -1, np.intp), axis)
    placed = np.insert(np.full(_shape(arr), -1, np.intp), obj, value_labels, axis)
    values = _tensor(values)
    if _dtype(values) != _dtype(arr):
        values = astype(values, _dtype(arr))
    if value_labels.size == 0:
        return _gathered(arr, kept)
    from_arr = _gathered(arr, np.maximum(kept, 0)) if int(np.prod(_shape(arr))) else _tensor(np.zeros(kept.shape, _dtype(arr)))
    return where(placed >= 0, _gathered(values, np.maximum(placed, 0)), from_arr)


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> tuple:
    """Coordinate matrices from coordinate vectors, as ``np.meshgrid`` (a tuple of Tensors).

    Each output is a reshape of one input, broadcast unless ``sparse``.
    Shapes: (n1,), ..., (nk,) -> k arrays of (n2, n1, n3, ...) ('xy') or (n1, ..., nk) ('ij').
    Example: ``[g.shape for g in np.meshgrid(ad.Tensor([1.0, 2.0]), ad.Tensor([3.0, 4.0, 5.0]))]`` is ``[(3, 2), (3, 2)]``.
    """
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    shapes = []
    for i, x in enumerate(xi):
        s = [1] * ndim
        s[i] = -1
        if indexing == "xy" and ndim > 1 and i < 2:
            s[0], s[1] = s[1], s[0]
        shapes.append(tuple(s))
    grids = [reshape(_tensor(x), s) for x, s in zip(xi, shapes)]
    if sparse:
        return tuple(grids)
    full = np.broadcast_shapes(*[g.shape for g in grids])
    return tuple(broadcast_to(g, full) for g in grids)


def _cumulative(name, fn, fill):
    def scan(x, /, *, axis=None, include_initial: bool = False) -> Tensor:
        shape = _shape(x)
        if axis is None:
            if len(shape) > 1:
                raise ValueError(f"np.{name}: axis must be specified for arrays with more than one dimension "
                                 f"(shape {shape})")
            axis = 0
        axis = normalize_axis(name, axis, len(shape))
        out = fn(x, axis) if shape[axis] else _tensor(x)
        if not include_initial:
            return out
        first = tuple(1 if d == axis else n for d, n in enumerate(shape))
        return concatenate([_tensor(np.full(first, fill, _dtype(out))), out], axis)
    scan.__name__ = name
    scan.__doc__ = (f"The running {'sum' if fill == 0 else 'product'} along ``axis``, as ``np.{name}`` "
                    f"(numpy 2); include_initial starts with {fill}. Shapes: (*s) -> (*s) (one more along "
                    f"axis with include_initial).")
    return scan


cumulative_sum = _cumulative("cumulative_sum", cumsum, 0)
cumulative_prod = _cumulative("cumulative_prod", cumprod, 1)


def vdot(a, b) -> Tensor:
    """The dot product of the flattened operands, as ``np.vdot`` (real Tensors). Shapes: (*a), (*b) -> ()."""
    if _dtype(a).kind == "c" or _dtype(b).kind == "c":
        raise AutogradDagError(f"np.vdot on Tensors: complex operands are not supported{located(user_source())}")
    return dot(reshape(_tensor(a), (-1,)), reshape(_tensor(b), (-1,)))


def ptp(a, axis=None, *, keepdims: bool = False) -> Tensor:
    """max − min over ``axis`` ("peak to peak"), as ``np.ptp``; the derivative splits among tied extremes."""
    return subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def masked_sum(a, axis=None, *, where_mask, keepdims: bool = False) -> Tensor:
    """Σ of the entries where ``where_mask`` holds (numpy's ``where=`` of sum), recorded; 0 elsewhere."""
    a = _tensor(a)
    zero = np.zeros((), _dtype(a))
    return sum(where(where_mask, a, zero), normalize_axes("sum", axis, a.ndim), keepdims=keepdims)


def masked_mean(a, axis=None, *, where_mask, keepdims: bool = False) -> Tensor:
    """The mean of the entries where ``where_mask`` holds (numpy's ``where=`` of mean); NaN where none."""
    a = _tensor(a)
    axes = normalize_axes("mean", axis, a.ndim)
    kind = _dtype(a)
    total = masked_sum(astype(a, np.float64) if kind.kind in "iub" else a, axes, where_mask=where_mask,
                       keepdims=keepdims)
    count = sum(astype(broadcast_to(where_mask, a.shape), total.dtype), axes, keepdims=keepdims)
    return divide(total, count)
