"""numpy's statistics as composites: quantile, percentile (every numpy method), nanquantile,
nanpercentile and nanmedian, average, cov, corrcoef, and nanprod, nanvar, nanstd, nancumsum,
nancumprod.

No new primitive: each is a sort, gathers at constant (or recorded) indices and arithmetic,
so derivative, JVP and batching rules come from those (JAX's conventions: a quantile's derivative
goes to the two order statistics it interpolates, weights γ and 1 − γ, ties in the stable sort's
order; an entry of the lerp at γ = 0 sends all of it to the lower one).

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> float(np.quantile(ad.Tensor([3.0, 1.0, 2.0, 5.0, 4.0]), 0.3).value)
    2.2
    >>> ad.grad(lambda t: np.quantile(t, 0.3))(np.array([3.0, 1.0, 2.0, 5.0, 4.0]))
    array([0.2, 0. , 0.8, 0. , 0. ])
"""

from __future__ import annotations

import math

import numpy as np

from ..core import Tensor
from ..errors import AutogradDagError, located, user_source


def _numpy_quantiles():
    """numpy's own quantile helpers (index, γ and method table), so values are numpy's to the bit.

    Private numpy API (numpy 2's ``numpy.lib._function_base_impl``): imported on first use, so the
    library still imports where it is missing (numpy 1.x), and a quantile there says why it cannot run.
    """
    try:
        from numpy.lib import _function_base_impl as helpers
        for name in ("_QuantileMethods", "_get_indexes", "_get_gamma", "_quantile_is_valid"):
            getattr(helpers, name)
    except (ImportError, AttributeError):
        raise AutogradDagError(f"np.quantile on Tensors needs numpy 2's quantile helpers (numpy.lib."
                               f"_function_base_impl); this numpy {np.__version__} has none{located(user_source())}")
    return helpers
from .elementwise import add, astype, divide, equal, greater_equal, less, minimum, multiply, sqrt, subtract, where
from .indexing import concatenate, take, take_along_axis
from .mathfuncs import clip, floor, isnan
from .numeric import any, cumprod, cumsum, prod, sort
from .reductions import mean
from .shapes import normalize_axes
from .structure import broadcast_to, reshape, sum, transpose
from .arrays import diagonal
from .linalg import matmul


def _shape(x) -> tuple:
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)


def _dtype(x) -> np.dtype:
    return x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype


def _cast(x, dtype):
    return x if dtype is None or _dtype(x) == np.dtype(dtype) else astype(x, dtype)


def _rows(name, a, axis):
    """(a with the reduced axes merged last: shape rest + (n,), rest, n, axes)."""
    shape = _shape(a)
    axes = normalize_axes(name, axis, len(shape))
    rest = [d for d in range(len(shape)) if d not in axes]
    order = tuple(rest) + axes
    moved = a if order == tuple(range(len(shape))) else transpose(a, order)
    n = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    return reshape(moved, tuple(shape[d] for d in rest) + (n,)), tuple(shape[d] for d in rest), n, axes


def _finish(result, q_shape, rest_shape, shape, axes, keepdims):
    """rest + q.shape -> q.shape + rest (numpy puts q's axes first), kept axes as 1 with keepdims."""
    r, k = len(rest_shape), len(q_shape)
    if k and r:
        result = transpose(result, tuple(range(r, r + k)) + tuple(range(r)))
    kept = tuple(1 if d in axes else s for d, s in enumerate(shape)) if keepdims else rest_shape
    return reshape(result, tuple(q_shape) + kept)


def _lerp(lo, hi, gamma, weak=False):
    # numpy's _lerp, so the values are numpy's to the last bit: from the nearer end. A weak (Python) γ
    # and 1 − γ are rounded to the values' float type first, as numpy multiplies by them.
    span = subtract(hi, lo)
    if isinstance(gamma, float):
        return subtract(hi, multiply(span, 1.0 - gamma)) if gamma >= 0.5 else add(lo, multiply(span, gamma))
    rest = subtract(1.0, gamma)
    if weak and _dtype(span) != _dtype(gamma):
        gamma, rest = astype(gamma, _dtype(span)), astype(rest, _dtype(span))
    return where(greater_equal(gamma, 0.5), subtract(hi, multiply(span, rest)), add(lo, multiply(span, gamma)))


def _quantiles(name, q, scale=None):
    if isinstance(q, Tensor):
        raise AutogradDagError(f"np.{name} on a Tensor: q must be numbers, not a Tensor (no derivative with "
                               f"respect to q){located(user_source())}")
    weak = isinstance(q, (int, float)) and not isinstance(q, bool)
    q = np.true_divide(q, scale) if scale is not None else np.asanyarray(q)
    q = np.asanyarray(q)
    if not _numpy_quantiles()._quantile_is_valid(q):
        raise ValueError(f"np.{name}: quantiles must be in the range [0, 1]" if scale is None
                         else f"np.{name}: percentiles must be in the range [0, 100]")
    return q, weak


def _numbers(q):
    return q.value if isinstance(q, Tensor) else q


def _result_dtype(fn, a, q, method):
    # numpy's dtype rules (a weak Python q keeps float32; an integer q keeps integers exact), on one entry.
    try:
        with np.errstate(all="ignore"):
            return fn(np.zeros(1, _dtype(a)), q, method=method).dtype
    except (ValueError, TypeError):
        return None


def quantile(a, q, axis=None, *, method: str = "linear", keepdims: bool = False, _name="quantile",
             _scale=None) -> Tensor:
    """The q-th quantiles of ``a`` over ``axis``, as ``np.quantile`` (every numpy method).

    The slices are sorted and the two order statistics around numpy's virtual index combined by
    numpy's lerp; the derivative goes to them (γ and 1 − γ). A slice holding NaN gives NaN.
    Shapes: (*s), q (*k) -> k + s without the reduced axes. Example:
    ``np.quantile(ad.Tensor([1.0, 2.0, 3.0]), 0.5).value`` is ``2.0``.
    """
    dtype = _result_dtype(np.percentile if _scale else np.quantile, a, _numbers(q), method)
    q, weak = _quantiles(_name, q, _scale)
    helpers = _numpy_quantiles()
    props = helpers._QuantileMethods.get(method)
    if props is None:
        raise ValueError(f"np.{_name}: {method!r} is not a valid method. Use one of: {list(helpers._QuantileMethods)}")
    shape = _shape(a)
    rows, rest, n, axes = _rows(_name, a, axis)
    if n == 0:
        raise IndexError(f"np.{_name}: the reduced axes of a Tensor of shape {shape} are empty")
    ordered = sort(rows, -1)
    index = np.asanyarray(props["get_virtual_index"](n, q))
    if props["fix_gamma"] is None or (method == "linear" and np.issubdtype(index.dtype, np.integer)):
        result = take(ordered, index.astype(np.intp), -1)
    else:
        lower, upper = helpers._get_indexes(np.zeros(0, np.float64), index, n)
        gamma = helpers._get_gamma(index, lower, props)
        result = _lerp(take(ordered, lower, -1), take(ordered, upper, -1), float(gamma) if weak else gamma)
    if np.issubdtype(_dtype(a), np.inexact):
        nan = any(isnan(rows), -1)
        result = where(reshape(nan, rest + (1,) * q.ndim), math.nan, result)
    return _cast(_finish(result, q.shape, rest, shape, axes, keepdims), dtype)


def percentile(a, q, axis=None, *, method: str = "linear", keepdims: bool = False) -> Tensor:
    """The q-th percentiles (q in [0, 100]) over ``axis``, as ``np.percentile``: ``quantile(a, q / 100)``.

    Shapes as :func:`quantile`. Example: ``np.percentile(ad.Tensor([1.0, 2.0, 3.0]), 50).value`` is ``2.0``.
    """
    return quantile(a, q, axis, method=method, keepdims=keepdims, _name="percentile", _scale=100)


def _valid_counts(rows):
    return sum(astype(equal(isnan(rows), False), np.float64), -1, keepdims=True)


def nanquantile(a, q, axis=None, *, method: str = "linear", keepdims: bool = False, _name="nanquantile",
                _scale=None) -> Tensor:
    """The q-th quantiles over ``axis`` ignoring NaN, as ``np.nanquantile`` (method 'linear').

    Each slice's count of numbers is recorded (so jit follows the data); an all-NaN slice is NaN.
    Shapes as :func:`quantile`. Example: ``np.nanquantile(ad.Tensor([1.0, np.nan, 3.0]), 0.5).value`` is ``2.0``.
    """
    if not np.issubdtype(_dtype(a), np.inexact):
        return quantile(a, q, axis, method=method, keepdims=keepdims, _name=_name, _scale=_scale)
    if method != "linear":
        raise AutogradDagError(f"np.{_name} on a Tensor: method={method!r} is not supported (only 'linear')"
                               f"{located(user_source())}")
    dtype = _result_dtype(np.nanpercentile if _scale else np.nanquantile, a, _numbers(q), method)
    q, weak = _quantiles(_name, q, _scale)
    shape = _shape(a)
    rows, rest, n, axes = _rows(_name, a, axis)
    ordered = sort(rows, -1)                                  # NaN sorts last
    count = _valid_counts(rows)                               # rest + (1,)
    last = subtract(count, 1.0)
    index = multiply(last, q.reshape(-1))                     # rest + (Q,): numpy's (n - 1) * q
    lower = minimum(floor(index), where(less(last, 0.0), 0.0, last))
    upper = minimum(add(lower, 1.0), where(less(last, 0.0), 0.0, last))
    gamma = subtract(index, lower)
    result = _lerp(take_along_axis(ordered, astype(lower, np.intp), -1),
                   take_along_axis(ordered, astype(upper, np.intp), -1), gamma,
                   weak and np.issubdtype(_dtype(a), np.floating))
    result = where(equal(count, 0.0), math.nan, result)
    result = reshape(result, rest + q.shape)
    return _cast(_finish(result, q.shape, rest, shape, axes, keepdims), dtype)


def nanpercentile(a, q, axis=None, *, method: str = "linear", keepdims: bool = False) -> Tensor:
    """The q-th percentiles ignoring NaN, as ``np.nanpercentile``: ``nanquantile(a, q / 100)``."""
    return nanquantile(a, q, axis, method=method, keepdims=keepdims, _name="nanpercentile", _scale=100)


def nanmedian(a, axis=None, *, keepdims: bool = False) -> Tensor:
    """The median over ``axis`` ignoring NaN, as ``np.nanmedian`` (the mean of the two middle numbers
    for an even count, numpy's formula). An all-NaN slice is NaN. Shapes as ``median``.

    Example: ``np.nanmedian(ad.Tensor([4.0, np.nan, 1.0, 2.0])).value`` is ``2.0``.
    """
    if not np.issubdtype(_dtype(a), np.inexact):
        a = astype(a, np.float64)
    shape = _shape(a)
    rows, rest, n, axes = _rows("nanmedian", a, axis)
    ordered = sort(rows, -1)
    count = _valid_counts(rows)
    half = floor(multiply(count, 0.5))
    upper = astype(minimum(half, where(equal(count, 0.0), 0.0, subtract(count, 1.0))), np.intp)
    lower = astype(where(equal(count, 0.0), 0.0, subtract(half, 1.0)), np.intp)
    hi = take_along_axis(ordered, upper, -1)
    odd = equal(subtract(count, multiply(half, 2.0)), 1.0)
    mid = where(odd, hi, multiply(add(take_along_axis(ordered, where(odd, upper, lower), -1), hi), 0.5))
    mid = where(equal(count, 0.0), math.nan, mid)
    return _finish(reshape(mid, rest), (), rest, shape, axes, keepdims)


def average(a, axis=None, weights=None, returned: bool = False, *, keepdims: bool = False):
    """The weighted mean over ``axis``, as ``np.average``: Σ a·w / Σ w (w may be 1-D along one axis).

    Differentiable in ``a`` and in ``weights``. With ``returned`` also Σ w (broadcast to the result).
    Shapes: (*s) -> s without the reduced axes. Example:
    ``np.average(ad.Tensor([1.0, 3.0]), weights=[3.0, 1.0]).value`` is ``1.5``.
    """
    shape = _shape(a)
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        scale = float(int(np.prod(shape, dtype=np.int64)) / max(int(np.prod(_shape(avg), dtype=np.int64)), 1))
        return (avg, _cast(broadcast_to(np.asarray(scale), _shape(avg)), avg.dtype)) if returned else avg
    wdtype = _dtype(weights)
    base = np.result_type(_dtype(a), wdtype, "f8") if _dtype(a).kind in "iub" else np.result_type(_dtype(a), wdtype)
    w = weights if isinstance(weights, Tensor) else np.asarray(weights)
    if _shape(w) != shape:
        if axis is None or len(_shape(w)) != 1 or _shape(w)[0] != shape[axis]:
            raise ValueError(f"np.average: weights of shape {_shape(w)} differ from a's {shape}; 1-D weights "
                             f"need axis= and the length of that axis")
        axis = normalize_axes("average", axis, len(shape))[0]
        w = reshape(w, tuple(-1 if d == axis else 1 for d in range(len(shape))))
        w = broadcast_to(w, shape)
    w = _cast(w if isinstance(w, Tensor) else Tensor(w), base)
    total = sum(w, axis, keepdims=keepdims)
    if not isinstance(weights, Tensor) and np.any(total.value == 0.0):
        raise ZeroDivisionError("np.average: weights sum to zero, can't be normalized")
    avg = divide(sum(multiply(_cast(a, base), w), axis, keepdims=keepdims), total)
    return (avg, broadcast_to(total, _shape(avg))) if returned else avg


def _observations(m, rowvar, dtype):
    x = m if isinstance(m, Tensor) else Tensor(np.asarray(m))
    if len(_shape(x)) > 2:
        raise ValueError(f"np.cov: m has more than 2 dimensions (shape {_shape(x)})")
    x = _cast(x, dtype)
    x = reshape(x, (1, -1)) if len(_shape(x)) < 2 else x
    return transpose(x) if not rowvar and _shape(x)[0] != 1 else x


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof=None, fweights=None, aweights=None, *,
        dtype=None) -> Tensor:
    """The covariance matrix of the variables (rows; columns with rowvar=False), as ``np.cov``.

    (X − mean)(X − mean)ᵀ / (N − ddof). Weights (fweights, aweights) are not supported.
    Shapes: (k, N) -> (k, k) (a single variable: ()). Example:
    ``np.cov(ad.Tensor([[0.0, 1.0, 2.0]])).value`` is ``1.0``.
    """
    if fweights is not None or aweights is not None:
        raise AutogradDagError(f"np.cov on Tensors: fweights and aweights are not supported{located(user_source())}")
    if ddof is not None and ddof != int(ddof):
        raise ValueError("np.cov: ddof must be integer")
    dtype = np.result_type(_dtype(m), np.float64) if dtype is None else np.dtype(dtype)
    x = _observations(m, rowvar, dtype)
    if y is not None:
        x = concatenate([x, _observations(y, rowvar, dtype)], 0)
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    fact = max(_shape(x)[1] - ddof, 0)
    centred = subtract(x, mean(x, 1, keepdims=True))
    c = multiply(matmul(centred, transpose(centred)), np.true_divide(1, fact) if fact else math.inf)
    return reshape(c, ()) if _shape(c) == (1, 1) else c


def corrcoef(x, y=None, rowvar: bool = True, *, dtype=None) -> Tensor:
    """Pearson correlation coefficients, as ``np.corrcoef``: cov / (σ_i σ_j), clipped to [-1, 1].

    Shapes: (k, N) -> (k, k). Example: ``np.corrcoef(ad.Tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).value``
    is ``[[1., -1.], [-1., 1.]]``.
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if len(_shape(c)) == 0:
        return divide(c, c)
    std = sqrt(diagonal(c))
    c = divide(divide(c, reshape(std, (-1, 1))), reshape(std, (1, -1)))
    return clip(c, -1.0, 1.0)


def _nan_filled(x, fill):
    return where(isnan(x), fill, x) if np.issubdtype(_dtype(x), np.inexact) else x


def nanprod(a, axis=None, *, keepdims: bool = False) -> Tensor:
    """The product over ``axis`` with NaN counted as 1, as ``np.nanprod``; derivative 0 at NaN entries."""
    return prod(_nan_filled(a, 1.0), axis, keepdims=keepdims)


def nancumsum(a, axis=None) -> Tensor:
    """Cumulative sum with NaN counted as 0, as ``np.nancumsum``."""
    return cumsum(_nan_filled(a, 0.0), axis)


def nancumprod(a, axis=None) -> Tensor:
    """Cumulative product with NaN counted as 1, as ``np.nancumprod``."""
    return cumprod(_nan_filled(a, 1.0), axis)


def nanvar(a, axis=None, *, ddof=0, keepdims: bool = False) -> Tensor:
    """The variance of the numbers over ``axis`` ignoring NaN, as ``np.nanvar``: Σ (x − mean)² / (count − ddof).

    NaN entries get derivative 0; a slice with count <= ddof gives NaN (or inf), as numpy.
    """
    if not np.issubdtype(_dtype(a), np.inexact):
        a = astype(a, np.float64)
    axes = normalize_axes("nanvar", axis, len(_shape(a)))
    nan = isnan(a)
    count = sum(astype(equal(nan, False), _dtype(a)), axes, keepdims=True)
    filled = where(nan, 0.0, a)
    centred = where(nan, 0.0, subtract(filled, divide(sum(filled, axes, keepdims=True), count)))
    dof = subtract(count, float(ddof))
    out = divide(sum(multiply(centred, centred), axes, keepdims=True), where(less(dof, 0.0), 0.0, dof))
    return out if keepdims else reshape(out, tuple(s for d, s in enumerate(_shape(a)) if d not in axes))


def nanstd(a, axis=None, *, ddof=0, keepdims: bool = False) -> Tensor:
    """The standard deviation ignoring NaN, as ``np.nanstd``: √nanvar."""
    return sqrt(nanvar(a, axis, ddof=ddof, keepdims=keepdims))
