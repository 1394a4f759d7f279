"""The softargmax family: logsumexp, softargmax (softmax), its Jacobian, masked_softargmax; argmax, argmin.

Seed 001 §4.4.2 and §4.4.4. ``logsumexp`` is a soft maximum, ``softargmax``
(its gradient) a soft ``argmax``; ``argmax`` and ``argmin`` are their hard
limits as the temperature goes to 0. Conventions fixed and tested exactly:
``argmax`` (``argmin``) returns the one-hot vector of the first maximum
(minimum) and has zero derivative; ``logsumexp`` and ``softargmax`` take a
temperature ``gamma > 0`` (lse_γ(u) = γ·lse(u/γ), softargmax_γ(u) =
softargmax(u/γ)) and subtract the maximum before exponentiating, so that large
inputs never overflow.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ...core import Tensor, apply, parameter
from ...errors import ShapeError
from ..elementwise import add, divide, exp, lowest_finite, maximum, multiply, subtract
from ..batch import lift_rank, materialize, shift_axis
from ..registry import defprim
from ..rowsplit import run_items, run_rows, splits
from ..shapes import broadcast, fmt, normalize_axes, normalize_axis, reduced_shape
from ..structure import broadcast_to, reshape, sum, sum_to_shape
from ..reductions import _float_dtype, _kept, _ndim


def _check_gamma(name: str, gamma) -> float:
    gamma = parameter(gamma, f"{name}'s temperature gamma")
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        g = float("nan")
    if not (g > 0.0 and math.isfinite(g)):
        raise ShapeError(f"{name}: Expect: a finite temperature gamma > 0. Actual: gamma={gamma!r}")
    return g

# ------------------------------------------------- logsumexp, softargmax


_UNSET = object()


def _shifted(x, axis, gamma, out=None, common=_UNSET, exp=False):
    """((x − c)/γ, c) with c the max of x over ``axis`` (kept), 0 where it is not finite.

    The shift is what makes exp never overflow (§4.4.2: lse(u) = lse(u − c) + c);
    it is taken before dividing by γ, as x/γ overflows for γ < 1 and |x| near
    the largest float (lse_γ([1e308, 1e308]) was inf). An all −inf slice, an
    +inf entry or an empty axis is shifted by 0 instead, so that the results
    are −inf, +inf and −inf rather than NaN. c may instead be one number for
    every slice (:func:`_common_shift`). The first result is a fresh array, or
    ``out`` (which may be x itself). ``common``: the common shift (or None),
    when already taken over a whole array of which x is some rows. ``exp``:
    the first result is exp((x − c)/γ) instead (with c = 0 and γ = 1, in one
    pass over x: no subtraction).
    """
    z = x
    if not np.issubdtype(z.dtype, np.inexact):
        z = z.astype(np.float64)
    c = _common_shift(z, z, gamma) if common is _UNSET else common
    if c is None:
        c = np.max(z, axis=axis, keepdims=True, initial=-np.inf)
        c = np.where(np.isfinite(c), c, np.zeros((), z.dtype))
    if np.ndim(c) == 0 and c == 0 and (exp or gamma != 1.0):  # x − 0 is x: no pass for it
        if gamma == 1.0:
            return np.exp(z, out=out), c
        with np.errstate(over="ignore"):
            shifted = np.divide(z, gamma, out=out)
    else:
        shifted = np.subtract(z, c, out=out)
        if gamma != 1.0:
            with np.errstate(over="ignore"):  # an entry far below the max becomes −inf: exp gives its 0
                shifted = np.divide(shifted, gamma, out=shifted)
    if exp:
        np.exp(shifted, out=shifted)
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
    if type(lo) is np.ndarray and type(hi) is np.ndarray:  # (np.max's own reductions, without its wrappers)
        if not lo.size or lo.dtype.kind != "f":
            return None
        top, bottom = np.maximum.reduce(hi, axis=None), np.minimum.reduce(lo, axis=None)
    elif not np.size(lo) or not np.issubdtype(np.result_type(lo), np.floating):
        return None
    else:
        top, bottom = np.max(hi), np.min(lo)
    # (top − bottom)/γ is the spread of the exponents.
    safe = _SAFE_RANGE[np.result_type(hi).type] * gamma
    if np.isfinite(top) and np.isfinite(bottom) and top - bottom <= safe:
        # Every entry within ±safe of 0 needs no shift at all: exp(x/γ) lies in [e^−R, e^R] (R half the
        # exponent range: a normal number, and a sum of n of them overflows only past n = e^R). 0 spares
        # the pass subtracting c, and exp is taken of x itself, unrounded (x − c rounds).
        return 0.0 if -safe <= bottom and top <= safe else top
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
    e, c = _shifted(x, axis, gamma, exp=True)  # a fresh array: exp((x − c)/γ)
    with np.errstate(divide="ignore"):  # log(0) = -inf for an empty or all -inf slice
        out = np.log(_row_sums(e, axis))
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


# Hand-written pair: the gradient exp(x − out) from the output: stable, no shifted exponentials kept.
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


def _last_axis_rows(x, axis) -> bool:
    """Whether x's work along ``axis`` is row by row over a C-contiguous array's last axis (a splittable case)."""
    return isinstance(x, np.ndarray) and axis == (x.ndim - 1,) and x.ndim > 1 and x.flags.c_contiguous


def _softargmax_impl(x, *, axis, gamma, out=None):
    # ``out`` lets the program executor give x itself when x dies here (execution.py).
    if splits("softargmax", x) and _last_axis_rows(x, axis) and np.issubdtype(x.dtype, np.inexact):
        return _softargmax_split(x, axis, gamma, out)
    e, _ = _shifted(x, axis, gamma, out, exp=True)  # a fresh array or out: one array of x's size in all
    return _normalized(e, axis)


def _normalized(e, axis):
    """e divided by its sums over ``axis``, in place.

    A division, not a product with the sum's reciprocal: a row with one entry
    left (a mask) or of equal entries is then exactly one-hot or uniform.
    """
    with np.errstate(invalid="ignore"):  # an all -inf slice has no distribution: NaN
        e /= _row_sums(e, axis)
    return e


def _softargmax_split(x, axis, gamma, out):
    # The common shift over the whole array (as the unsplit call takes it), then each chunk of rows as
    # an unsplit call on those rows, into its rows of the result.
    common = _common_shift(x, x, gamma)
    if out is None:
        out = np.empty_like(x)
    n = x.shape[-1]
    x2, o2 = x.reshape(-1, n), out.reshape(-1, n)

    def rows(a, b):
        e, _ = _shifted(x2[a:b], (1,), gamma, o2[a:b], common, exp=True)
        _normalized(e, (1,))
    run_rows("softargmax", rows, x2.shape[0], n)
    return out


_vecdot = getattr(np, "vecdot", None)  # numpy >= 2.0


def _row_dots(v, y, axis):
    """Σ v⊙y over ``axis``, kept as size 1; over the last axis as a batched product (no array of v's size)."""
    if axis == (np.ndim(v) - 1,) and np.shape(v) == np.shape(y):
        if _vecdot is not None:  # numpy's row-by-row dot: (1024, 128) float32 17 µs, the batched product 24
            return _vecdot(v, y)[..., None]
        return np.matmul(v[..., None, :], y[..., :, None])[..., 0]
    return np.sum(v * y, axis=axis, keepdims=True)


def _jacobian_impl(v, y, *, axis, scale, out=None):
    # One array of v's size, written in place: (v − Σ v⊙y), then ⊙ y, then · scale. ``out`` (from the
    # program executor) may be v, written over once Σ v⊙y is read, or y, written last.
    if (splits("softargmax_jacobian", v) and np.shape(v) == np.shape(y) and _last_axis_rows(v, axis)
            and y.flags.c_contiguous):
        dtype = np.result_type(v, y)
        if out is None:
            out = np.empty(v.shape, dtype)
        n = v.shape[-1]
        v2, y2, o2 = v.reshape(-1, n), y.reshape(-1, n), out.reshape(-1, n)

        def rows(a, b):  # the unsplit call on rows a:b, out= the same slice object when out is v or y
            vs, ys = v2[a:b], y2[a:b]
            o = vs if out is v else ys if out is y else o2[a:b]
            _jacobian_whole(vs, ys, (1,), scale, o)
        run_rows("softargmax_jacobian", rows, v2.shape[0], n)
        return out
    return _jacobian_whole(v, y, axis, scale, out)


def _jacobian_whole(v, y, axis, scale, out):
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


# Hand-written pair: linear in v, not in y; closed forms, one array of v's size each.
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


# Hand-written pair: one softargmax_jacobian node (symmetric Jacobian) from the output: one array, not four.
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
    if (splits("masked_softargmax", x) and _last_axis_rows(x, axis) and x.ndim > 2 and out.flags.c_contiguous
            and builtins.all(d == 1 for d in np.shape(mask)[:-2])):  # one (T, n) mask, as attention's
        return _masked_softargmax_split(x, mask, axis, scale, out, dtype)
    mask = np.asarray(mask, dtype=dtype)
    keep = mask == 0
    c = _base2_shift(x, mask, keep, scale, dtype)
    if c is not None:
        z = np.multiply(x, scale * _LOG2E, out=out, dtype=dtype)
        return _masked_softargmax_rest(z, mask, keep, c, axis, dtype, base2=True)
    z = np.multiply(x, scale, out=out, dtype=dtype)
    c = _common_shift(z, z) if np.all(keep | (mask == -np.inf)) else None
    return _masked_softargmax_rest(z, mask, keep, c, axis, dtype)


# exp(t) = 2^(t·log₂e): with log₂e folded into the scale (the scores are multiplied by it anyway), the
# exponential is numpy's exp2, 97 µs on 262,144 float32 entries against exp's 148 (float64 229 against
# 261). No less accurate where the scale is not a power of 2 (_base2_shift): the product rounds once
# either way, and numpy's float32 exp2 is within 0.98 ulp where its exp is within 2.4.
_LOG2E = float(np.log2(np.e))


def _base2_shift(x, mask, keep, scale, dtype):
    """The common shift of z = scale·log₂e·x (:func:`_common_shift` in base 2), or None: then base e.

    None unless the mask is 0 and −∞ only, one shift serves every row, and the scale is not a power of
    2: for a power of 2 (1, 0.125 = 1/√64) scale·x is exact where scale·log₂e·x would round (~|z|/2
    ulps of exp(z)); otherwise both round once. Taken from x's largest and smallest entries: those of z
    are their products exactly (rounding is monotonic), so z need not be formed first, and a z whose
    base-2 scaling alone would overflow (|scale·x| near the largest float) is never formed.
    """
    if (math.frexp(scale)[0] in (0.5, -0.5) or not np.issubdtype(dtype, np.floating) or not np.size(x)
            or not np.all(keep | (mask == -np.inf))):
        return None
    s = scale * _LOG2E
    top, bottom = np.max(x), np.min(x)
    top, bottom = (top, bottom) if s > 0 else (bottom, top)
    with np.errstate(over="ignore"):  # an infinite product: no common shift (_common_shift)
        return _common_shift(np.multiply(bottom, s, dtype=dtype), np.multiply(top, s, dtype=dtype), _LOG2E)


def _masked_softargmax_rest(z, mask, keep, c, axis, dtype, base2=False):
    """The masked softargmax from z = scale·x on, with the common shift c (or None: each row's own).

    ``base2``: z and c are times log₂e (:func:`_base2_shift`), exponentiated by exp2.
    """
    if c is not None:
        # A mask of 0 and −∞ only (causal, padding): exp(z − c) then zeros where −∞, a product with the
        # (small) 0/1 mask. numpy's float64 exp is 2.5x slower on an array holding −∞. c = 0: no pass.
        if c != 0:
            z -= c
        (np.exp2 if base2 else np.exp)(z, out=z)
        z *= keep.astype(dtype)
    else:
        z += mask
        c = np.max(z, axis=axis, keepdims=True, initial=-np.inf)
        z -= np.where(np.isfinite(c), c, np.zeros((), z.dtype))
        np.exp(z, out=z)
    return _normalized(z, axis)  # an all −inf row has no distribution: NaN


def _masked_softargmax_split(x, mask, axis, scale, out, dtype):
    # The common shift is the unsplit call's (base 2 or e, from x's extremes). Then each chunk of
    # x's matrices (..., T, n) as an unsplit call, against the one (T, n) mask they share.
    mask = np.asarray(mask, dtype=dtype)
    mask = mask.reshape(mask.shape[-2:]) if mask.ndim > 2 else mask
    keep = mask == 0
    c = _base2_shift(x, mask, keep, scale, dtype)
    base2 = c is not None
    if base2:
        scale = scale * _LOG2E
    elif np.all(keep | (mask == -np.inf)) and np.issubdtype(dtype, np.floating):
        # max and min of scale·x are scale·max x and scale·min x exactly (rounding is monotonic), so
        # the whole of scale·x is not formed first.
        top, bottom = np.max(x), np.min(x)
        top, bottom = (top, bottom) if scale > 0 else (bottom, top)
        c = _common_shift(np.multiply(bottom, scale, dtype=dtype), np.multiply(top, scale, dtype=dtype))
    t, n = x.shape[-2:]
    x3, o3 = x.reshape(-1, t, n), out.reshape(-1, t, n)

    def matrices(a, b):
        z = np.multiply(x3[a:b], scale, out=o3[a:b], dtype=dtype)
        _masked_softargmax_rest(z, mask, keep, c, (2,), dtype, base2)
    run_items("masked_softargmax", matrices, x3.shape[0], t * n)
    return out


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


# Hand-written pair: softargmax_jacobian from the output, as softargmax's; the mask's cotangent the same, summed.
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
    dtype = mask.dtype if isinstance(mask, (Tensor, np.ndarray)) else np.asarray(mask).dtype
    if dtype.kind == "b" or (dtype.kind in "iu" and np.ndim(mask) > 0):
        # Added as numbers, a boolean or 0/1 keep-mask adds 1 to the kept scores: it masks nothing.
        raise ShapeError(f"masked_softargmax: Expect: an additive float mask (0 keeps, -inf removes). Actual: a "
                         f"mask of dtype {dtype}, shape {fmt(np.shape(mask))}; a keep-mask (True = attend) is "
                         f"np.where(mask, 0.0, -np.inf) (nn.attention converts booleans itself)")
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


# No JVP (nor for argmin, argsort, slogdet_sign, dropout_mask): every input is nondiff, so forward
# mode never pushes a tangent here.
ARGMAX = defprim("argmax", _argmax_impl, vjp=lambda ct, out, x, *, axis: (None,),
                 shape=_argmax_rule, nondiff=(0,), batch=_argmax_batch)


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

# ------------------------------------------------------------------ argmin


_argmin_impl = one_hot_position(np.argmin)


def _argmin_rule(x, *, axis):
    if (x.size == 0) if axis is None else (x.shape[axis] == 0):
        raise ShapeError(f"argmin: Expect: a non-empty axis. Actual: shape {fmt(x.shape)}, axis {axis}")
    return tuple(x.shape), _float_dtype(x.dtype)


ARGMIN = defprim("argmin", _argmin_impl, vjp=lambda ct, out, x, *, axis: (None,),
                 shape=_argmin_rule, nondiff=(0,), batch=_argmax_batch)


def argmin(x, /, axis=-1) -> Tensor:
    """One-hot encoding of the position of the minimum along ``axis``, as :func:`argmax`.

    Ties go to the first index; ``axis=None`` takes the minimum of all entries.
    No derivative. Shapes: (*s) -> (*s), a float array of 0s and 1s.
    Example: ``ad.argmin(ad.Tensor([3., 1., 1.])).value`` is ``[0., 1., 0.]``.
    """
    ndim = _ndim(x)
    if axis is not None or ndim == 1:
        axis = normalize_axis("argmin", 0 if axis is None else axis, ndim)
    return apply(ARGMIN, x, axis=axis)
