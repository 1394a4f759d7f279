"""Reductions: mean, max, min (and the composite var).

Seed 001 §4.4.2. Conventions fixed and tested exactly: ``max``/``min`` split
the gradient evenly among all tied extrema. The book's vector activations
(logsumexp, softargmax, argmax) and layer_norm are fused model primitives, in
:mod:`.fused`.

``sum`` lives in :mod:`structure` (its derivative is broadcasting); ``var`` is a
composite of the primitives here, not a primitive.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ..core import Tensor, apply
from ..errors import ShapeError
from .elementwise import astype, divide, equal, multiply, subtract
from .batch import shift_axis
from .registry import defprim
from .shapes import fmt, normalize_axes, reduced_shape
from .structure import broadcast_to, reshape, sum


def _ndim(x) -> int:
    return np.ndim(x.value if isinstance(x, Tensor) else x)


def _float_dtype(dtype) -> np.dtype:
    # Integer operands reduce to float64, as numpy's mean does.
    return np.dtype(dtype) if np.dtype(dtype).kind in "fc" else np.dtype(np.float64)


def _kept(t, x_shape, axis, keepdims):
    """``t`` (shaped like a reduction's output) with the reduced axes kept as 1."""
    if keepdims:
        return t
    shape = reduced_shape(x_shape, axis, True)
    return t if t.shape == shape else reshape(t, shape)


def _reduction_rule(name, nonempty=False):
    def rule(x, *, axis, keepdims):
        if nonempty and builtins.any(x.shape[a] == 0 for a in axis):
            raise ShapeError(f"{name}: Expect: a non-empty axis to reduce (it has no identity). "
                             f"Actual: shape {fmt(x.shape)} reduced over axis {axis}")
        dtype = _float_dtype(x.dtype) if name == "mean" else x.dtype
        return reduced_shape(x.shape, axis, keepdims), dtype
    return rule

# ------------------------------------------------------------------- mean


def _mean_scale(x_shape, axis) -> float:
    n = math.prod(int(x_shape[a]) for a in axis)
    # An empty reduction has an empty input: the cotangent is empty, any scale does.
    return 1.0 / builtins.max(n, 1)


def _mean_impl(x, *, axis, keepdims):
    if builtins.any(x.shape[a] == 0 for a in axis):
        # The mean of nothing is undefined: NaN, as numpy, without its warning.
        shape = reduced_shape(x.shape, axis, keepdims)
        return np.full(shape, np.nan, dtype=_float_dtype(x.dtype))
    return np.mean(x, axis=axis, keepdims=keepdims)


def _mean_transpose(ct, x, *, axis, keepdims):
    from_ct = _kept(ct, x.shape, axis, keepdims)
    return multiply(broadcast_to(from_ct, x.shape), _mean_scale(x.shape, axis))


# Linear (the mean of nothing, NaN, aside: its tangent is NaN too where numpy's is undefined).
MEAN = defprim("mean", _mean_impl, transpose=(_mean_transpose,), shape=_reduction_rule("mean"),
               batch=shift_axis())


def mean(x, /, axis=None, *, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over ``axis`` (None: all axes; int or tuple).

    Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``).
    The mean over an empty axis is NaN.
    Example: ``ad.mean(ad.Tensor([[1., 2.], [3., 4.]]), axis=0).value`` is ``[2., 3.]``.
    """
    return apply(MEAN, x, axis=normalize_axes("mean", axis, _ndim(x)), keepdims=bool(keepdims))


def var(x, /, axis=None, *, keepdims: bool = False, ddof: int = 0) -> Tensor:
    """Variance over ``axis``: Σ (x - mean)² / (N - ddof), as ``np.var`` (population variance by default).

    A composite of mean, subtract and multiply, so it records several nodes.
    Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``).
    Example: ``ad.var(ad.Tensor([1., 3.])).value`` is ``1.0``; with ``ddof=1`` it is ``2.0``.
    """
    centred = subtract(x, mean(x, axis, keepdims=True))
    out = mean(multiply(centred, centred), axis, keepdims=keepdims)
    if ddof:
        shape = np.shape(x.value if isinstance(x, Tensor) else x)
        n = int(np.prod([shape[a] for a in normalize_axes("var", axis, len(shape))], dtype=np.int64))
        out = multiply(out, n / (n - ddof) if n > ddof else math.inf)
    return out

# -------------------------------------------------------------- max / min


def _extremum_weights(x, out, axis, keepdims):
    """1/(number of ties) at each position equal to the extremum, else 0.

    Built from ``equal`` (a recorded comparison without derivative), so the
    weights are constants to every higher derivative, as they should be.
    """
    hit = astype(equal(x, _kept(out, x.shape, axis, keepdims)), _float_dtype(x.dtype))
    return divide(hit, sum(hit, axis, keepdims=True))


def _extremum_vjp(ct, out, x, *, axis, keepdims):
    w = _extremum_weights(x, out, axis, keepdims)
    return (multiply(w, _kept(ct, x.shape, axis, keepdims)),)


def _extremum_jvp(t, out, x, *, axis, keepdims):
    w = _extremum_weights(x, out, axis, keepdims)
    return sum(multiply(t[0], w), axis, keepdims=keepdims)


MAX = defprim("max", lambda x, *, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
              vjp=_extremum_vjp, jvp=_extremum_jvp, shape=_reduction_rule("max", nonempty=True),
              batch=shift_axis())
MIN = defprim("min", lambda x, *, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
              vjp=_extremum_vjp, jvp=_extremum_jvp, shape=_reduction_rule("min", nonempty=True),
              batch=shift_axis())


def max(x, /, axis=None, *, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Maximum over ``axis`` (max pooling, §4.4.2); ties share the gradient evenly.

    Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``);
    the reduced axes must be non-empty.
    Example: the gradient of ``ad.max(ad.Tensor([1., 3., 3.]))`` is ``[0, .5, .5]``.
    """
    return apply(MAX, x, axis=normalize_axes("max", axis, _ndim(x)), keepdims=bool(keepdims))


def min(x, /, axis=None, *, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Minimum over ``axis``; ties share the gradient evenly.

    Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``);
    the reduced axes must be non-empty.
    Example: ``ad.min(ad.Tensor([[1., 5.], [4., 2.]]), axis=1).value`` is ``[1., 2.]``.
    """
    return apply(MIN, x, axis=normalize_axes("min", axis, _ndim(x)), keepdims=bool(keepdims))
