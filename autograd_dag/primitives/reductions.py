"""Reductions and the book's vector activations: mean, max, min, logsumexp, softargmax, argmax, layer_norm.

Seed 001 §4.4.2 and §4.4.4. Conventions fixed and tested exactly:
``max``/``min`` split the gradient evenly among all tied extrema; ``argmax``
returns the one-hot vector of the first maximum and has zero derivative;
``logsumexp`` and ``softargmax`` take a temperature ``gamma > 0``
(lse_γ(u) = γ·lse(u/γ), softargmax_γ(u) = softargmax(u/γ)) and subtract the
maximum before exponentiating, so that large inputs never overflow.

``sum`` lives in :mod:`structure` (its derivative is broadcasting); ``var`` is a
composite of the primitives here, not a primitive.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ..core import Tensor, apply, parameter
from ..errors import ShapeError
from .elementwise import add, astype, divide, equal, exp, lowest_finite, maximum, multiply, negative, sqrt, subtract
from .batch import elementwise as elementwise_batch
from .batch import lift_rank, materialize, shift_axis
from .registry import defprim
from .shapes import broadcast, fmt, normalize_axes, normalize_axis, reduced_shape
from .structure import broadcast_to, reshape, sum, sum_to_shape


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


def _check_gamma(name: str, gamma) -> float:
    gamma = parameter(gamma, f"{name}'s temperature gamma")
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        g = float("nan")
    if not (g > 0.0 and math.isfinite(g)):
        raise ShapeError(f"{name}: Expect: a finite temperature gamma > 0. Actual: gamma={gamma!r}")
    return g


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
    n = int(np.prod([x_shape[a] for a in axis], dtype=np.int64))
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

# ------------------------------------------------- logsumexp, softargmax


def _shifted(x, axis, gamma, out=None):
    """((x − c)/γ, c) with c the max of x over ``axis`` (kept), 0 where it is not finite.

    The shift is what makes exp never overflow (§4.4.2: lse(u) = lse(u − c) + c);
    it is taken before dividing by γ, as x/γ overflows for γ < 1 and |x| near
    the largest float (lse_γ([1e308, 1e308]) was inf). An all −inf slice, an
    +inf entry or an empty axis is shifted by 0 instead, so that the results
    are −inf, +inf and −inf rather than NaN. c may instead be one number for
    every slice (:func:`_common_shift`). The first result is a fresh array, or
    ``out`` (which may be x itself).
    """
    z = x
    if not np.issubdtype(z.dtype, np.inexact):
        z = z.astype(np.float64)
    c = _common_shift(z, z, gamma)
    if c is None:
        c = np.max(z, axis=axis, keepdims=True, initial=-np.inf)
        c = np.where(np.isfinite(c), c, np.zeros((), z.dtype))
    shifted = np.subtract(z, c, out=out)
    if gamma != 1.0:
        with np.errstate(over="ignore"):  # an entry far below the max becomes −inf: exp gives its 0
            shifted = np.divide(shifted, gamma, out=shifted)
    return shifted, c


def _common_shift(lo, hi, gamma=1.0):
    """One shift c for every slice, the largest entry, when every entry lies within a safe range of it; or None.

    ``lo`` and ``hi`` hold the lowest and highest entries (arrays, or the
    same array). The shift only keeps exp from overflowing (the results do
    not depend on it), and a slice's own maximum is what keeps its sum from
    underflowing: a common c does both when max − min is at most half the
    exponent range (exp(−range) is then a normal number, and an entry small
    enough to be lost is lost against its slice's sum either way). Two passes
    over the whole array instead of a maximum per slice and a subtraction per
    slice (numpy loops over short slices one at a time: 4x slower per entry).
    """
    if not np.size(lo) or not np.issubdtype(np.result_type(lo), np.floating):
        return None
    top, bottom = np.max(hi), np.min(lo)
    # (top − bottom)/γ is the spread of the exponents.
    if np.isfinite(top) and np.isfinite(bottom) and top - bottom <= _SAFE_RANGE[np.result_type(hi).type] * gamma:
        return top
    return None


# Half of log(largest number): the spread of exponents a common shift allows.
_SAFE_RANGE = {t: float(np.log(np.finfo(t).max)) / 2 for t in (np.float16, np.float32, np.float64, np.longdouble)}


def _row_sums(e, axis):
    """Σ e over ``axis``, kept as size 1; over the last axis of a contiguous array as one matrix–vector product."""
    if axis == (e.ndim - 1,) and e.flags.c_contiguous and e.ndim > 1 and e.size:
        n = e.shape[-1]
        return np.matmul(e.reshape(-1, n), np.ones(n, e.dtype)).reshape(e.shape[:-1] + (1,))
    return np.sum(e, axis=axis, keepdims=True)


def _lse_impl(x, *, axis, keepdims, gamma):
    z, c = _shifted(x, axis, gamma)
    with np.errstate(divide="ignore"):  # log(0) = -inf for an empty or all -inf slice
        # z is a fresh array (x − c): exponentiate it in place.
        out = np.log(_row_sums(np.exp(z, out=z), axis))
    # lse_γ(x) = γ·lse((x − c)/γ) + c: c is in x's units (see _shifted).
    out = (out * gamma if gamma != 1.0 else out) + c
    return out if keepdims else np.squeeze(out, axis=axis)


def _lse_gradient(out, x, axis, keepdims, gamma):
    """∇ lse_γ(x) = softargmax(x/γ) (§4.4.4), as exp((x − lse_γ(x))/γ) from the output.

    A subtraction, an exponential and a normalization, where softargmax itself would
    also take the maximum and shift. x − lse ≤ 0, so nothing overflows; a slice whose
    lse is +inf gives NaN, as softargmax does there, one whose lse is −inf (all
    entries −inf) gives 0.
    """
    kept = _kept(lowest_finite(out), x.shape, axis, keepdims)
    shifted = subtract(x, kept)
    e = exp(shifted if gamma == 1.0 else multiply(shifted, 1.0 / gamma))
    # lse_γ is rounded to its ulp, which exceeds γ·log M for a small γ (or a large x):
    # that error scales a whole slice by one factor exp(δ) (|δ| ≤ 2 log M), and dividing by
    # the slice's sum removes it — unnormalized, [1e6, 1e6] at γ = 1e-10 gave [1, 1]. An all
    # −inf slice sums to 0: divided by the smallest normal number it stays 0.
    total = sum(e, axis, keepdims=True)
    return divide(e, maximum(total, float(np.finfo(_float_dtype(out.dtype)).tiny)))


def _lse_vjp(ct, out, x, *, axis, keepdims, gamma):
    return (multiply(_lse_gradient(out, x, axis, keepdims, gamma), _kept(ct, x.shape, axis, keepdims)),)


def _lse_jvp(t, out, x, *, axis, keepdims, gamma):
    return sum(multiply(t[0], _lse_gradient(out, x, axis, keepdims, gamma)), axis, keepdims=keepdims)


def _lse_rule(x, *, axis, keepdims, gamma):
    return reduced_shape(x.shape, axis, keepdims), _float_dtype(x.dtype)


LOGSUMEXP = defprim("logsumexp", _lse_impl, vjp=_lse_vjp, jvp=_lse_jvp, shape=_lse_rule, batch=shift_axis())


def logsumexp(x, axis=-1, keepdims: bool = False, gamma: float = 1.0) -> Tensor:
    """Log-sum-exp with temperature: γ·log Σ exp(x/γ) over ``axis``, computed stably.

    A soft maximum (§4.4.2): max(x) <= logsumexp(x, gamma=γ) <= max(x) + γ·log M.
    Its gradient is ``softargmax(x, axis, gamma)``. The logsumexp of an empty
    axis is -inf.
    Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``).
    Example: ``ad.logsumexp(ad.Tensor([0., 0.])).value`` is ``log 2``.
    """
    g = _check_gamma("logsumexp", gamma)
    return apply(LOGSUMEXP, x, axis=normalize_axes("logsumexp", axis, _ndim(x)),
                 keepdims=bool(keepdims), gamma=g)


def _softargmax_impl(x, *, axis, gamma, out=None):
    # ``out`` lets the program executor give x itself when x dies here (execution.py).
    z, _ = _shifted(x, axis, gamma, out)
    e = np.exp(z, out=z)  # z is a fresh array (x − c) or out: one array of x's size in all
    with np.errstate(invalid="ignore"):  # an all -inf slice has no distribution: NaN
        e /= _row_sums(e, axis)
    return e


def _row_dots(v, y, axis):
    """Σ v⊙y over ``axis``, kept as size 1; over the last axis as a batched product (no array of v's size)."""
    if axis == (np.ndim(v) - 1,) and np.shape(v) == np.shape(y):
        return np.matmul(v[..., None, :], y[..., :, None])[..., 0]
    return np.sum(v * y, axis=axis, keepdims=True)


def _jacobian_impl(v, y, *, axis, scale, out=None):
    # One array of v's size, written in place: (v − Σ v⊙y), then ⊙ y, then · scale. ``out`` (from the
    # program executor) may be v, written over once Σ v⊙y is read, or y, written last.
    dots = _row_dots(v, y, axis)
    if out is y:
        g = np.multiply(np.subtract(v, dots), y, out=out)
    else:
        g = np.subtract(v, dots, out=out, dtype=np.result_type(v, y))
        g *= y
    if scale != 1.0:
        g *= scale
    return g


def _jacobian_vjp_y(w, g, v, y, *, axis, scale):
    # ∂/∂y_k of Σ_i w_i·c·y_i(v_i − s), s = Σ v⊙y: c·[w_k(v_k − s) − v_k Σ w⊙y].
    s = sum(multiply(v, y), axis, keepdims=True)
    r = sum(multiply(w, y), axis, keepdims=True)
    d = subtract(multiply(w, subtract(v, s)), multiply(v, r))
    return sum_to_shape(d if scale == 1.0 else multiply(d, scale), y.shape)


def _jacobian_jvp(t, g, v, y, *, axis, scale):
    tv, ty = t
    total = None if tv is None else apply(SOFTARGMAX_JACOBIAN, tv, y, axis=axis, scale=scale)
    if ty is not None:
        s = sum(multiply(v, y), axis, keepdims=True)
        d = subtract(multiply(ty, subtract(v, s)), multiply(y, sum(multiply(v, ty), axis, keepdims=True)))
        d = d if scale == 1.0 else multiply(d, scale)
        total = d if total is None else add(total, d)
    return broadcast_to(total, g.shape)


def _jacobian_batch(prim, args, batched, *, axis, scale):
    rank = builtins.max(a.ndim - b for a, b in zip(args, batched))
    lifted = [lift_rank(a, rank) if b else a for a, b in zip(args, batched)]
    return apply(prim, *lifted, axis=tuple(a + 1 for a in axis), scale=scale)


_jacobian_rule = broadcast("softargmax_jacobian")  # v and y broadcast together, as an elementwise product


# J v for J = scale·(diag(y) − y yᵀ) along ``axis``: softargmax's Jacobian (symmetric) at its output y,
# the VJP and the JVP of softargmax, masked_softargmax and the cross-entropy's backward primitive.
# One primitive: one array of v's size instead of four.
SOFTARGMAX_JACOBIAN = defprim(
    "softargmax_jacobian", _jacobian_impl,
    vjp=(lambda w, g, v, y, *, axis, scale: sum_to_shape(apply(SOFTARGMAX_JACOBIAN, w, y, axis=axis, scale=scale),
                                                          v.shape),
         _jacobian_vjp_y),
    jvp=_jacobian_jvp, shape=_jacobian_rule, batch=_jacobian_batch)


def _softargmax_jacobian(v, out, axis, gamma):
    """J v for J the (symmetric) Jacobian of softargmax_γ: y ⊙ (v − Σ v⊙y) / γ, as one primitive."""
    return apply(SOFTARGMAX_JACOBIAN, v, out, axis=tuple(axis), scale=1.0 / gamma)


def softargmax_jacobian(v, y, axis=-1, scale: float = 1.0) -> Tensor:
    """scale · y ⊙ (v − Σ v⊙y) over ``axis``: softargmax's (symmetric) Jacobian at its output y, applied to v.

    The derivative rules of softargmax (its VJP and JVP) are this product.
    Shapes: v and y broadcast together -> the broadcast shape.
    Example: ``softargmax_jacobian(ad.Tensor([1., 0.]), np.array([.5, .5])).value`` is ``[.25, -.25]``.
    """
    return apply(SOFTARGMAX_JACOBIAN, v, y, axis=normalize_axes("softargmax_jacobian", axis, builtins.max(
        _ndim(v), _ndim(y))), scale=float(parameter(scale, "softargmax_jacobian's scale")))


SOFTARGMAX = defprim(
    "softargmax", _softargmax_impl,
    vjp=lambda ct, out, x, *, axis, gamma: (_softargmax_jacobian(ct, out, axis, gamma),),
    jvp=lambda t, out, x, *, axis, gamma: _softargmax_jacobian(t[0], out, axis, gamma),
    shape=lambda x, *, axis, gamma: (tuple(x.shape), _float_dtype(x.dtype)), batch=shift_axis())


def softargmax(x, axis=-1, gamma: float = 1.0) -> Tensor:
    """Softargmax exp(x/γ) / Σ exp(x/γ) over ``axis`` (§4.4.4), computed stably.

    The differentiable relaxation of :func:`argmax` (commonly called softmax)
    and the gradient of :func:`logsumexp`; mathematically the result lies in the
    relative interior of the probability simplex along ``axis`` (§4.4.4), but in
    float64 the largest entry rounds to 1 once the gap to the others exceeds
    ~37γ, and the others to 0 past ~745γ: ``softargmax([0., 1000.])`` is
    exactly ``[0., 1.]``.
    Shapes: (*s) -> (*s).
    Example: ``ad.softargmax(ad.Tensor([0., 0.])).value`` is ``[.5, .5]``.
    """
    g = _check_gamma("softargmax", gamma)
    return apply(SOFTARGMAX, x, axis=normalize_axes("softargmax", axis, _ndim(x)), gamma=g)


softmax = softargmax


def _masked_softargmax_impl(x, mask, *, axis, scale, out=None):
    # One array in all: scale·x, then the mask, the shift, exp and the division in
    # place (``out`` may be x itself when it dies here, as for softargmax).
    dtype = _float_dtype(np.result_type(x, mask))
    if out is None:
        out = np.empty(np.shape(x), dtype=dtype)
    z = np.multiply(x, scale, out=out, dtype=dtype)
    mask = np.asarray(mask, dtype=dtype)
    keep = mask == 0
    c = _common_shift(z, z) if np.all(keep | (mask == -np.inf)) else None
    if c is not None:
        # A mask of 0 and −∞ only (causal, padding): exp(z − c) then zeros where −∞, a product with the
        # (small) 0/1 mask. numpy's float64 exp is 2.5x slower on an array holding −∞.
        z -= c
        np.exp(z, out=z)
        z *= keep.astype(dtype)
    else:
        z += mask
        c = np.max(z, axis=axis, keepdims=True, initial=-np.inf)
        z -= np.where(np.isfinite(c), c, np.zeros((), z.dtype))
        np.exp(z, out=z)
    with np.errstate(invalid="ignore"):  # an all −inf row has no distribution: NaN
        z /= _row_sums(z, axis)
    return z


def _masked_softargmax_vjp_x(ct, out, x, mask, *, axis, scale):
    return _softargmax_jacobian(ct, out, axis, 1.0 / scale)


def _masked_softargmax_vjp_mask(ct, out, x, mask, *, axis, scale):
    return sum_to_shape(_softargmax_jacobian(ct, out, axis, 1.0), mask.shape)


def _masked_softargmax_jvp(t, out, x, mask, *, axis, scale):
    tx, tm = t
    v = multiply(tx, scale) if tx is not None else None
    if tm is not None:
        v = tm if v is None else add(v, tm)
    return _softargmax_jacobian(broadcast_to(v, out.shape), out, axis, 1.0)


def _masked_softargmax_rule(x, mask, *, axis, scale):
    shape = tuple(x.shape)
    try:
        full = np.broadcast_shapes(shape, tuple(mask.shape))
    except ValueError:
        full = None
    if full != shape:
        raise ShapeError(f"masked_softargmax: Expect: a mask broadcastable to the scores' shape {fmt(shape)}. "
                         f"Actual: mask of shape {fmt(mask.shape)}")
    return shape, _float_dtype(np.result_type(x.dtype, mask.dtype))


def _masked_softargmax_batch(prim, args, batched, *, axis, scale):
    x, mask = args
    if not batched[0]:
        x = materialize(x, mask.shape[0])  # the result has the batch axis: so must the scores
    if batched[1]:
        mask = lift_rank(mask, x.ndim - 1)
    return apply(prim, x, mask, axis=tuple(a + 1 for a in axis), scale=scale)


MASKED_SOFTARGMAX = defprim(
    "masked_softargmax", _masked_softargmax_impl, vjp=(_masked_softargmax_vjp_x, _masked_softargmax_vjp_mask),
    jvp=_masked_softargmax_jvp, shape=_masked_softargmax_rule, batch=_masked_softargmax_batch,
    reads=())  # (the rules read the output: an attention mask is not copied per call)


def masked_softargmax(x, mask, axis=-1, scale: float = 1.0) -> Tensor:
    """softargmax(scale·x + mask) over ``axis``, as one primitive: attention's weights from its scores.

    ``mask`` is additive and broadcasts to x's shape without widening it (0
    keeps an entry, −∞ removes it). Where scores scaled, masked and normalized
    by three primitives kept three arrays of the scores' size, this keeps one.
    Shapes: x (*s), mask broadcastable to s -> (*s).
    Example: ``masked_softargmax(ad.Tensor([1., 5.]), np.array([0., -np.inf])).value`` is ``[1., 0.]``.
    """
    scale = float(parameter(scale, "masked_softargmax's scale"))
    if not (math.isfinite(scale) and scale != 0.0):
        raise ShapeError(f"masked_softargmax: Expect: a finite, non-zero scale. Actual: scale={scale!r}")
    return apply(MASKED_SOFTARGMAX, x, mask, axis=normalize_axes("masked_softargmax", axis, _ndim(x)),
                 scale=scale)

# ----------------------------------------------------------------- argmax


def one_hot_position(pick):
    """The impl of argmax-like primitives: a one-hot of ``pick``'s index (np.argmax, np.argmin) along ``axis``."""
    def impl(x, *, axis):
        out = np.zeros(x.shape, dtype=_float_dtype(x.dtype))
        if axis is None:
            out.flat[pick(x)] = 1  # numpy picks the first of tied extrema
        else:
            np.put_along_axis(out, pick(x, axis=axis, keepdims=True), 1, axis=axis)
        return out
    return impl


_argmax_impl = one_hot_position(np.argmax)


def _argmax_rule(x, *, axis):
    if (x.size == 0) if axis is None else (x.shape[axis] == 0):
        raise ShapeError(f"argmax: Expect: a non-empty axis. Actual: shape {fmt(x.shape)}, axis {axis}")
    return tuple(x.shape), _float_dtype(x.dtype)


def _argmax_batch(prim, args, batched, *, axis):
    x = args[0]
    if axis is not None:
        return apply(prim, x, axis=axis + 1)
    # The first maximum of each whole example: flatten the example axes.
    flat = reshape(x, (x.shape[0], int(np.prod(x.shape[1:], dtype=np.int64))))
    return reshape(apply(prim, flat, axis=1), x.shape)


ARGMAX = defprim("argmax", _argmax_impl, vjp=lambda ct, out, x, *, axis: (None,),
                 jvp=lambda t, out, x, *, axis: None, shape=_argmax_rule, nondiff=(0,), batch=_argmax_batch)


def argmax(x, /, axis=-1) -> Tensor:
    """One-hot encoding of the position of the maximum along ``axis`` (§4.4.4).

    Ties go to the first index; ``axis=None`` takes the maximum of all entries.
    Piecewise constant, so its derivative is zero (no gradient flows).
    Shapes: (*s) -> (*s), a float array of 0s and 1s.
    Example: ``ad.argmax(ad.Tensor([1., 3., 3.])).value`` is ``[0., 1., 0.]``.
    """
    ndim = _ndim(x)
    if axis is not None or ndim == 1:
        # One spelling per operation: for a vector, None and 0 are the same.
        axis = normalize_axis("argmax", 0 if axis is None else axis, ndim)
    return apply(ARGMAX, x, axis=axis)

# ------------------------------------------------------------ layer_norm


def _means(x, axes):
    """The mean of x over its trailing ``axes``, kept; over the last axis as a matrix–vector product."""
    if axes == (-1,) and x.ndim > 1:
        return _row_sums(x, (x.ndim - 1,)) / x.shape[-1]
    return np.mean(x, axis=axes, keepdims=True)


def _layer_norm_impl(x, gamma, beta, *, axes, eps, out=None):
    # ``out`` (from the program executor) is x itself when x dies here, as it does where a
    # gradient program recomputes x̂ for γ's cotangent: x − μ is written over x (μ read first).
    dtype = _float_dtype(np.result_type(x, gamma, beta))
    x = x.astype(dtype, copy=False)
    out = np.subtract(x, _means(x, axes), out=out)  # the one array of x's size; the rest works in place
    if axes == (-1,):  # Σ (x − μ)² per row as a batched product: no second array of x's size
        var = _row_dots(out, out, (out.ndim - 1,))
        var /= out.shape[-1]
    else:
        var = np.mean(np.square(out), axis=axes, keepdims=True)
    var += eps
    np.sqrt(var, out=var)
    out /= var
    for operand, ufunc, identity in ((gamma, np.multiply, 1), (beta, np.add, 0)):
        if np.ndim(operand) == 0 and operand == identity:  # x̂ itself (the derivative rules' γ = 1, β = 0)
            continue
        if np.broadcast_shapes(out.shape, operand.shape) == out.shape:
            ufunc(out, operand, out=out)
        else:
            out = ufunc(out, operand)
    return out


def _standardize_jacobian_impl(v, x, *, axes, eps, out=None):
    # J v for J = ∂x̂/∂x (symmetric) at x: (v − mean v − x̂·mean(v ⊙ x̂)) / √(σ² + ε), with x̂ recomputed
    # from x. One array of the result's size: c = x − μ, scaled by the row factor, then + v − mean v, ÷ √.
    # ``out`` (from the program executor) may be x (c is computed there) or v (written over once read).
    dtype = _float_dtype(np.result_type(v, x))
    x = x.astype(dtype, copy=False)
    c = np.subtract(x, _means(x, axes), out=out if out is x else None)
    last = (c.ndim - 1,)
    rows = axes == (-1,) and np.shape(v) == c.shape
    var = _row_dots(c, c, last) / c.shape[-1] if axes == (-1,) else np.mean(np.square(c), axis=axes, keepdims=True)
    var += eps
    inv = np.sqrt(var, out=var)
    np.divide(1.0, inv, out=inv)
    # mean(v ⊙ x̂) = inv · mean(v ⊙ c): the row factor of c is −inv² · mean(v ⊙ c).
    vc = _row_dots(v, c, last) / c.shape[-1] if rows else np.mean(v * c, axis=axes, keepdims=True)
    vc *= -inv * inv
    vbar = _means(v, axes)
    if out is not None and out is v:
        v -= vbar
        v += np.multiply(c, vc, out=c)
        v *= inv
        return v
    shape = np.broadcast_shapes(np.shape(v), c.shape)
    g = np.multiply(c, vc, out=c) if np.broadcast_shapes(c.shape, vc.shape) == c.shape == shape \
        else np.multiply(c, vc, dtype=dtype)
    g += v
    g -= vbar
    g *= inv
    return g


def _standardize_parts(x, axes, eps):
    """(c, s) of x over ``axes``: c = x − μ and s = 1/√(σ² + ε), as recorded Tensor operations."""
    c = subtract(x, mean(x, axes, keepdims=True))
    return c, divide(1.0, sqrt(add(mean(multiply(c, c), axes, keepdims=True), eps)))


def _standardize_jacobian_vjp_x(w, g, v, x, *, axes, eps):
    # g = s·v̄ − s³·m·c with v̄ = v − mean v, m = mean(v ⊙ c). With a₁ = mean(w ⊙ v̄), a₂ = mean(w ⊙ c),
    # ∂⟨w, g⟩/∂c = s³(3s²·m·a₂ − a₁)·c − s³·a₂·v̄ − s³·m·w, then centred (c = x − μ): w becomes w − mean w.
    c, s = _standardize_parts(x, axes, eps)
    vbar = subtract(v, mean(v, axes, keepdims=True))
    m = mean(multiply(v, c), axes, keepdims=True)
    a1 = mean(multiply(w, vbar), axes, keepdims=True)
    a2 = mean(multiply(w, c), axes, keepdims=True)
    s2 = multiply(s, s)
    s3 = multiply(s2, s)
    coef_c = multiply(s3, subtract(multiply(multiply(s2, m), multiply(a2, 3.0)), a1))
    wbar = subtract(w, mean(w, axes, keepdims=True))
    d = subtract(subtract(multiply(c, coef_c), multiply(vbar, multiply(s3, a2))), multiply(wbar, multiply(s3, m)))
    return sum_to_shape(d, x.shape)


def _standardize_jacobian_jvp(t, g, v, x, *, axes, eps):
    tv, tx = t
    total = None if tv is None else apply(STANDARDIZE_JACOBIAN, tv, x, axes=axes, eps=eps)
    if tx is not None:
        # dg = ds·v̄ − 3s²·ds·m·c − s³·dm·c − s³·m·dc with dc = tx − mean tx, ds = −s³·mean(c ⊙ dc),
        # dm = mean(v̄ ⊙ dc) (v̄ and c are centred).
        c, s = _standardize_parts(x, axes, eps)
        vbar = subtract(v, mean(v, axes, keepdims=True))
        m = mean(multiply(v, c), axes, keepdims=True)
        dc = subtract(tx, mean(tx, axes, keepdims=True))
        s2 = multiply(s, s)
        s3 = multiply(s2, s)
        ds = multiply(s3, mean(multiply(c, dc), axes, keepdims=True))  # −ds
        dm = mean(multiply(vbar, dc), axes, keepdims=True)
        coef_c = subtract(multiply(multiply(s2, m), multiply(ds, 3.0)), multiply(s3, dm))
        d = subtract(add(multiply(c, coef_c), multiply(vbar, negative(ds))), multiply(dc, multiply(s3, m)))
        total = d if total is None else add(total, d)
    return broadcast_to(total, g.shape)


def _standardize_jacobian_rule(v, x, *, axes, eps):
    shape, dtype = _broadcast_standardize_jacobian(v, x)
    return shape, _float_dtype(dtype)


_broadcast_standardize_jacobian = broadcast("standardize_jacobian")


# J v for J = ∂x̂/∂x, x̂ = (x − μ)/√(σ² + ε) over the trailing ``axes``: layer_norm's VJP and JVP in
# x. One primitive (x̂ recomputed inside, one array of v's size) instead of seventeen nodes.
STANDARDIZE_JACOBIAN = defprim(
    "standardize_jacobian", _standardize_jacobian_impl,
    vjp=(lambda w, g, v, x, *, axes, eps: sum_to_shape(apply(STANDARDIZE_JACOBIAN, w, x, axes=axes, eps=eps),
                                                        v.shape),
         _standardize_jacobian_vjp_x),
    jvp=_standardize_jacobian_jvp, shape=_standardize_jacobian_rule, batch=elementwise_batch)


def standardize_jacobian(v, x, axes=-1, eps: float = 1e-5) -> Tensor:
    """J v for J = ∂x̂/∂x (symmetric), x̂ = (x − μ)/√(σ² + ε) standardised over x's trailing ``axes``.

    (v − mean v − x̂·mean(v ⊙ x̂)) / √(σ² + ε): the derivative rules of :func:`layer_norm` in x.
    Shapes: v and x broadcast together -> the broadcast shape.
    Example: ``standardize_jacobian(ad.Tensor([1., 0.]), np.array([1., 3.]), eps=0.0).value`` is ``[0., 0.]``.
    """
    return apply(STANDARDIZE_JACOBIAN, v, x, axes=_trailing_axes("standardize_jacobian", axes, builtins.max(
        _ndim(v), _ndim(x))), eps=float(parameter(eps, "standardize_jacobian's eps")))


def _standardized_sum_impl(ct, x, *, axes, eps):
    # Σ over x's leading axes of ct ⊙ x̂ with x̂ = (x − μ)·s, s = 1/√(σ² + ε) per row: one array of x's
    # size (c = x − μ, then ct ⊙ c in place) and the rows weighted by s in one matrix–vector product,
    # where x̂ itself, ct ⊙ x̂ and a sum over the leading axes took three arrays and a pass more.
    dtype = _float_dtype(np.result_type(ct, x))
    x = x.astype(dtype, copy=False)
    k = len(axes)
    c = np.subtract(x, _means(x, axes), dtype=dtype)
    if axes == (-1,):
        var = _row_dots(c, c, (c.ndim - 1,))
        var /= c.shape[-1]
    else:
        var = np.mean(np.square(c), axis=axes, keepdims=True)
    var += eps
    s = np.sqrt(var, out=var)
    np.divide(1.0, s, out=s)
    c *= ct
    inner = x.shape[x.ndim - k:]
    rows = math.prod(x.shape[:x.ndim - k])
    return np.matmul(s.reshape(rows), c.reshape(rows, math.prod(inner))).reshape(inner)


def _leading_axes(x, axes) -> tuple[int, ...]:
    return tuple(range(x.ndim - len(axes)))


def _standardized_sum_vjp(w, out, ct, x, *, axes, eps):
    # Linear in ct: the cotangent of ct is w ⊙ x̂ (w broadcast over the rows); in x it is Jᵀ(ct ⊙ w)
    # with J = ∂x̂/∂x symmetric.
    return (multiply(w, _xhat(x, axes, eps)),
            apply(STANDARDIZE_JACOBIAN, multiply(ct, w), x, axes=axes, eps=eps))


def _standardized_sum_jvp(t, out, ct, x, *, axes, eps):
    tct, tx = t
    total = None if tct is None else apply(STANDARDIZED_SUM, tct, x, axes=axes, eps=eps)
    if tx is not None:
        d = sum(multiply(ct, apply(STANDARDIZE_JACOBIAN, tx, x, axes=axes, eps=eps)), _leading_axes(x, axes))
        total = d if total is None else add(total, d)
    return total


def _standardized_sum_rule(ct, x, *, axes, eps):
    if tuple(ct.shape) != tuple(x.shape) or x.ndim < len(axes):
        raise ShapeError(f"standardized_sum: Expect: a cotangent of the input's shape, with at least "
                         f"{len(axes)} axes. Actual: ct {fmt(ct.shape)}, x {fmt(x.shape)}")
    return tuple(x.shape[x.ndim - len(axes):]), _float_dtype(np.result_type(ct.dtype, x.dtype))


def _standardized_sum_batch(prim, args, batched, *, axes, eps):
    # The batch axis is one more leading axis, which must not be summed: the composed form, per example.
    size = next(a.shape[0] for a, b in zip(args, batched) if b)
    ct, x = (a if b else materialize(a, size) for a, b in zip(args, batched))
    return sum(multiply(ct, _xhat(x, axes, eps)), tuple(range(1, x.ndim - len(axes))))


# Σ over the leading axes of ct ⊙ x̂, x̂ standardised over the trailing ``axes``: layer_norm's VJP in γ
# (of the normalised shape), x̂ recomputed inside.
STANDARDIZED_SUM = defprim(
    "standardized_sum", _standardized_sum_impl, vjp=_standardized_sum_vjp, jvp=_standardized_sum_jvp,
    shape=_standardized_sum_rule, batch=_standardized_sum_batch)


def standardized_sum(ct, x, axes=-1, eps: float = 1e-5) -> Tensor:
    """Σ over x's leading axes of ct ⊙ x̂, x̂ = (x − μ)/√(σ² + ε) standardised over x's trailing ``axes``.

    The cotangent of :func:`layer_norm`'s γ (of the standardised shape), as one
    primitive that recomputes x̂ inside and keeps no array of x's size.
    Shapes: ct and x (..., *n) -> (*n).
    Example: ``standardized_sum(np.ones((2, 2)), np.array([[1., 3.], [0., 2.]]), eps=0.0).value`` is ``[-2., 2.]``.
    """
    return apply(STANDARDIZED_SUM, ct, x, axes=_trailing_axes("standardized_sum", axes, builtins.max(
        _ndim(ct), _ndim(x))), eps=float(parameter(eps, "standardized_sum's eps")))


def _layer_norm_vjp_gamma(ct, out, x, gamma, beta, *, axes, eps):
    if tuple(ct.shape) == tuple(x.shape) and tuple(gamma.shape) == tuple(x.shape[x.ndim - len(axes):]):
        return apply(STANDARDIZED_SUM, ct, x, axes=axes, eps=eps)
    return sum_to_shape(multiply(ct, _xhat(x, axes, eps)), gamma.shape)


def _xhat(x, axes, eps):
    """x̂ = (x − μ)/√(σ² + ε) as one layer_norm node (γ = 1, β = 0 of x's dtype: float32 stays float32)."""
    dtype = _float_dtype(x.dtype)
    return apply(LAYER_NORM, x, np.ones((), dtype), np.zeros((), dtype), axes=axes, eps=eps)


def _layer_norm_vjp_x(ct, out, x, gamma, beta, *, axes, eps):
    # x̂ is recomputed from x (inside the one primitive) rather than kept from the forward pass:
    # the forward then keeps one array (its output) instead of five.
    return sum_to_shape(apply(STANDARDIZE_JACOBIAN, multiply(ct, gamma), x, axes=axes, eps=eps), x.shape)


def _layer_norm_jvp(t, out, x, gamma, beta, *, axes, eps):
    tx, tg, tb = t
    terms = []
    if tx is not None:
        terms.append(multiply(apply(STANDARDIZE_JACOBIAN, tx, x, axes=axes, eps=eps), gamma))
    if tg is not None:
        terms.append(multiply(_xhat(x, axes, eps), tg))
    if tb is not None:
        terms.append(tb)
    total = terms[0]
    for term in terms[1:]:
        total = add(total, term)
    return broadcast_to(total, out.shape)


def _layer_norm_rule(x, gamma, beta, *, axes, eps):
    if x.ndim < len(axes):
        raise ShapeError(f"layer_norm: Expect: an input with at least {len(axes)} axes. Actual: shape "
                         f"{fmt(x.shape)}")
    try:
        shape = np.broadcast_shapes(tuple(x.shape), tuple(gamma.shape), tuple(beta.shape))
    except ValueError:
        raise ShapeError(f"layer_norm: Expect: gamma and beta broadcastable with the input. Actual: input "
                         f"{fmt(x.shape)}, gamma {fmt(gamma.shape)}, beta {fmt(beta.shape)}") from None
    return shape, _float_dtype(np.result_type(x.dtype, gamma.dtype, beta.dtype))


LAYER_NORM = defprim(
    "layer_norm", _layer_norm_impl,
    vjp=(_layer_norm_vjp_x,
         _layer_norm_vjp_gamma,
         lambda ct, out, x, gamma, beta, *, axes, eps: sum_to_shape(ct, beta.shape)),
    jvp=_layer_norm_jvp, shape=_layer_norm_rule, batch=elementwise_batch)


def layer_norm(x, gamma=1.0, beta=0.0, axes=-1, eps: float = 1e-5) -> Tensor:
    """γ ⊙ (x − μ) / √(σ² + ε) + β with μ, σ² the mean and variance of x over its trailing ``axes``.

    One primitive for LayerNorm's forward pass (§4.5.2): it keeps only its output
    for the backward pass, which recomputes x̂ (the composed form keeps five
    arrays of x's size). ``axes`` (an int or tuple of NEGATIVE axes, the last ones)
    are the standardised axes; gamma and beta broadcast against x (usually of
    the standardised shape). ε goes under the square root, as in PyTorch.
    Shapes: x (..., *n), gamma and beta broadcastable to it -> x's shape (broadcast).
    Not exported as ``ad.*``; ``nn.LayerNorm`` calls it, and ``nn.functional.layer_norm``
    wraps it with PyTorch's signature (normalized_shape, weight, bias, eps).
    Example: ``layer_norm(ad.Tensor([1., 3.]), eps=0.0).value`` is ``[-1., 1.]``.
    """
    return apply(LAYER_NORM, x, gamma, beta, axes=_trailing_axes("layer_norm", axes, _ndim(x)),
                 eps=float(parameter(eps, "layer_norm's eps")))


def _trailing_axes(name: str, axes, ndim: int) -> tuple[int, ...]:
    """``axes`` (an int or tuple) as the sorted tuple of negative axes it names, which must be the last ones."""
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    if not axes or any(not isinstance(a, (int, np.integer)) or a >= 0 or a < -ndim for a in axes):
        raise ShapeError(f"{name}: Expect: axes a non-empty tuple of negative (trailing) axes of an input "
                         f"with {ndim} axes. Actual: {axes!r}")
    axes = tuple(sorted({int(a) for a in axes}))
    if axes != tuple(range(-len(axes), 0)):
        raise ShapeError(f"{name}: Expect: the LAST axes, e.g. (-2, -1). Actual: {axes!r}")
    return axes
