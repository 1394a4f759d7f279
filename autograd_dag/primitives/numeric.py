"""Cumulative operations, products, norms, sorting and the boolean reductions.

Primitives: ``cumsum``, ``cumprod`` (each with a ``reverse`` direction, so
that each is the other direction's transpose), ``prod``, ``norm`` (the 2-norm
over any axes; the one ``norm`` function, every ``ord``, is in
:mod:`.linalg.norms`), ``sort``, ``argsort``, ``any`` and ``all`` (``argmin`` is with
``argmax``, in :mod:`.fused`; ``take_along_axis`` and ``put_along_axis_add``, which sort's
rules use, are in :mod:`.indexing`, with the other gathers). ``std``, ``diff``, ``median``
and the NaN-ignoring ``nansum``, ``nanmean``,
``nanmax`` and ``nanmin`` are composites of primitives (exact, and as fast).

Conventions, fixed and tested exactly:

* Products and zeros: the derivative of ``prod`` is the product of the other
  entries, computed with exclusive cumulative products (no division), so one
  zero and two zeros in a slice give the exact gradient (second derivatives
  too). ``cumprod``'s rules divide nothing either: the derivative is the
  recurrence x̄_j = P_j T_j, T_j = ct_j + x_{j+1} T_{j+1} (P_j the product of
  the entries before j), one ``linear_scan`` primitive that picks, on the
  values each time it runs, three numpy passes (while the running products are
  normal numbers) or an exact doubling scan. So zeros (any number, second
  derivatives too) and running products that underflow to 0 or overflow give
  the exact derivative (short of a product of up to half a slice overflowing
  against a tiny nonzero term, where the doubling gives inf). (A sweep that records
  nothing divides out / x_k directly while every output is a normal number:
  the same derivative, several times faster. ``prod`` likewise.)
* ``norm`` at 0: the 2-norm's gradient at x = 0 is 0 (a subgradient), the
  1-norm's is 0 there too (|x|'(0) = 0), and the ∞-norm's splits evenly among
  the tied largest |x_i| (as ``max``). ``std`` of a constant slice likewise has
  gradient 0.
* ``sort``: the gradient goes back through the permutation that sorts x
  (stable: tied entries keep their order, so the first of equal entries gets
  the first sorted slot's derivative).
* ``argsort``, ``any`` and ``all`` have no derivative.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> ad.grad(ad.prod)(np.array([2.0, 0.0, 3.0]))
    array([0., 6., 0.])
    >>> ad.grad(lambda t: ad.sum(ad.sort(t) * np.array([0.0, 0.0, 1.0])))(np.array([3.0, 1.0, 2.0]))
    array([1., 0., 0.])
    >>> float(np.linalg.norm(ad.Tensor([3.0, 4.0])).value)
    5.0
    >>> ad.cumsum(ad.Tensor([1.0, 2.0, 3.0])).value
    array([1., 3., 6.])
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ..core import Tensor, apply
from ..errors import ShapeError
from .elementwise import add, astype, divide, equal, multiply, not_equal, subtract, where
from .indexing import (PUT_ALONG_AXIS_ADD, _check_along, concatenate, getitem, numpy_operand,  # noqa: F401 (numeric's names too)
                       put_along_axis_add, take_along_axis)
from .mathfuncs import _safe_denominator, isinf, isnan
from .reductions import _float_dtype, _kept, _ndim, max, mean, min
from .batch import materialize, shift_axis
from .registry import defprim
from .shapes import fmt, normalize_axes, normalize_axis, reduced_shape
from .structure import broadcast_to, reshape, sum, transpose


def _flat(x):
    """x as a vector (for ``axis=None``)."""
    return reshape(x, (-1,))

# ------------------------------------------------------------------ cumsum


def _cum_impl(fn):
    def impl(x, *, axis, reverse):
        if not reverse:
            return fn(x, axis=axis)
        return np.flip(fn(np.flip(x, axis), axis=axis), axis)
    return impl


def _cumsum_dtype(dtype):
    return np.cumsum(np.zeros((0,), dtype)).dtype


CUMSUM = defprim(
    "cumsum", _cum_impl(np.cumsum),
    transpose=(lambda ct, x, *, axis, reverse: _cumsum(ct, axis, not reverse),),
    shape=lambda x, *, axis, reverse: (tuple(x.shape), _cumsum_dtype(x.dtype)), batch=shift_axis())


def _cumsum(x, axis, reverse=False):
    return apply(CUMSUM, x, axis=axis, reverse=reverse)


def cumsum(x, /, axis=None) -> Tensor:
    """Cumulative sum along ``axis`` (None: of the flattened tensor), as ``np.cumsum``.

    Its VJP is the cumulative sum in the other direction.
    Shapes: (*s) -> (*s), or (size,) for ``axis=None``.
    Example: ``ad.cumsum(ad.Tensor([1., 2., 3.])).value`` is ``[1., 3., 6.]``.
    """
    if axis is None:
        return _cumsum(_flat(x), 0)
    return _cumsum(x, normalize_axis("cumsum", axis, _ndim(x)))

# ----------------------------------------------------------------- cumprod


def _bare_representable(out) -> bool:
    """Whether ``out`` is a plain array (a sweep that records nothing) of normal, finite numbers.

    Only then may a rule divide a product by one of its factors: a zero (an entry
    0, or a product underflowed), a subnormal (a product that lost its digits) or
    an infinity in ``out`` makes out / x_k differ from the product of the others.
    A recorded rule becomes part of a program that will run on other values, so it
    never chooses its formula by the values.
    """
    return type(out) is np.ndarray and out.dtype.kind == "f" and bool(np.all(_normal(out)))


def _normal(a: np.ndarray) -> np.ndarray:
    """Where the real ``a`` is a normal number (neither 0, subnormal, inf nor NaN)."""
    magnitude, info = np.abs(a), np.finfo(a.dtype)
    return (magnitude >= info.tiny) & (magnitude <= info.max)


def _shifted(x, axis, reverse, fill):
    """x moved one place along ``axis`` (towards the end, or the start if ``reverse``), ``fill`` entering."""
    n = x.shape[axis]
    if n == 0:
        return x
    lead = (slice(None),) * axis
    edge = broadcast_to(np.asarray(fill, x.dtype), x.shape[:axis] + (1,) + x.shape[axis + 1:])
    if reverse:
        return concatenate([getitem(x, lead + (slice(1, n),)), edge], axis)
    return concatenate([edge, getitem(x, lead + (slice(0, n - 1),))], axis)


def _times_keeping_zeros(p, y):
    """p·y, and 0 where y is 0 even if p overflowed to ±inf (inf·0 would be NaN).

    Only p's infinities facing a zero are replaced, so the derivative with respect
    to y stays p wherever p is finite (second derivatives through masked cotangents).
    """
    return multiply(where(isinf(p), where(equal(y, 0.0), 0.0, p), p), y)


def _scan_doubling(a, b):
    """y_i = b_i + a_i y_{i-1} along the last axis by doubling (Hillis–Steele), in numpy.

    After the step of span d, y_i sums the b_k of the 2d entries ending at i, each
    times the a_l between k and i, and a_i holds the product of those a. log2(n)
    whole-array steps of multiplications and additions: no division, so zeros and
    under/overflowed products stay exact (an overflowed window facing a 0 adds 0).
    """
    y, window = b.copy(), a.copy()
    n, span = a.shape[-1], 1
    while span < n:
        factor = window[..., span:]
        factor = np.where(np.isinf(factor) & (y[..., :-span] == 0), 0.0, factor)
        y[..., span:] = y[..., span:] + factor * y[..., :-span]
        window[..., span:] = window[..., span:] * window[..., :-span]
        span *= 2
    return y


def _linear_scan_impl(a, b, *, axis, reverse):
    dtype = np.result_type(a.dtype, b.dtype, np.float16)
    a, b = np.moveaxis(a.astype(dtype), axis, -1), np.moveaxis(b.astype(dtype), axis, -1)
    if reverse:
        a, b = a[..., ::-1], b[..., ::-1]
    if a.shape[-1] == 0:
        return np.moveaxis(b.copy(), -1, axis)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        # y_i = C_i Σ_{k<=i} b_k / C_k with C the running product of a (a_0 unused): three
        # numpy passes, exact while every C_k is a normal number; else doubling.
        running = np.cumprod(np.concatenate([np.ones_like(a[..., :1]), a[..., 1:]], -1), -1)
        magnitude = np.abs(running)
        if (magnitude >= np.finfo(dtype).tiny).all() and (magnitude <= np.finfo(dtype).max).all():
            y = running * np.cumsum(b / running, -1)
        else:
            y = _scan_doubling(a, b)
    if reverse:
        y = y[..., ::-1]
    return np.ascontiguousarray(np.moveaxis(y, -1, axis))


def _linear_scan_vjp(ct, out, a, b, *, axis, reverse):
    # The transpose runs the other way with the coefficients moved one place:
    # λ_j = ȳ_j + a_{j+1} λ_{j+1}; then b̄ = λ and ā_i = λ_i y_{i-1}.
    lam = _linear_scan(_shifted(a, axis, not reverse, 0.0), ct, axis, not reverse)
    return multiply(lam, _shifted(out, axis, reverse, 0.0)), lam


def _linear_scan_jvp(t, out, a, b, *, axis, reverse):
    # dy_i = a_i dy_{i-1} + (da_i y_{i-1} + db_i): the same recurrence.
    ta, tb = t
    source = tb
    if ta is not None:
        term = multiply(ta, _shifted(out, axis, reverse, 0.0))
        source = term if source is None else add(source, term)
    return _linear_scan(a, source, axis, reverse)


def _linear_scan_rule(a, b, *, axis, reverse):
    if tuple(a.shape) != tuple(b.shape):
        raise ShapeError(f"linear_scan: Expect: coefficients a and terms b of one shape. "
                         f"Actual: a {fmt(a.shape)}, b {fmt(b.shape)}")
    return tuple(a.shape), np.result_type(a.dtype, b.dtype, np.float16)


def _linear_scan_batch(prim, args, batched, *, axis, reverse):
    size = builtins.next(x.shape[0] for x, flag in zip(args, batched) if flag)
    a, b = (x if flag else materialize(x, size) for x, flag in zip(args, batched))
    return apply(prim, a, b, axis=axis + 1, reverse=reverse)


LINEAR_SCAN = defprim("linear_scan", _linear_scan_impl, vjp=_linear_scan_vjp, jvp=_linear_scan_jvp,
                      shape=_linear_scan_rule, batch=_linear_scan_batch)


def _linear_scan(a, b, axis, reverse):
    """y with y_i = b_i + a_i y_{i-1} along ``axis`` (y_{i+1} if ``reverse``; 0 before the first).

    One primitive (``linear_scan``), so that the choice between the three-pass formula
    and the exact doubling is made on the values each time it runs, in a program too.
    Shapes: a, b (*s) -> (*s).
    """
    return apply(LINEAR_SCAN, a, b, axis=axis, reverse=reverse)


def _cumprod_vjp(ct, out, x, *, axis, reverse):
    if _bare_representable(out):
        return (divide(_cumsum(multiply(ct, out), axis, not reverse), x),)
    # ∂out_i/∂x_j is the product of x_k, k <= i, k != j: x̄_j = P_j T_j with P_j the product of
    # the entries before j and T_j = ct_j + x_{j+1} T_{j+1} (the other way round if reverse).
    before = _exclusive(x, axis, reverse)
    return (_times_keeping_zeros(before, _linear_scan(_shifted(x, axis, not reverse, 0.0), ct, axis, not reverse)),)


def _cumprod_jvp(t, out, x, *, axis, reverse):
    if _bare_representable(out):
        return multiply(out, _cumsum(divide(t[0], x), axis, reverse))
    # d out_i = x_i d out_{i-1} + t_i P_i, P_i the product of the entries before i.
    return _linear_scan(x, _times_keeping_zeros(_exclusive(x, axis, reverse), t[0]), axis, reverse)


CUMPROD = defprim(
    "cumprod", _cum_impl(np.cumprod), vjp=_cumprod_vjp, jvp=_cumprod_jvp,
    shape=lambda x, *, axis, reverse: (tuple(x.shape), _cumsum_dtype(x.dtype)), batch=shift_axis())


def _cumprod(x, axis, reverse=False):
    return apply(CUMPROD, x, axis=axis, reverse=reverse)


def cumprod(x, /, axis=None) -> Tensor:
    """Cumulative product along ``axis`` (None: of the flattened tensor), as ``np.cumprod``.

    Zeros and under/overflowed running products are differentiated exactly: see the module notes.
    Shapes: (*s) -> (*s), or (size,) for ``axis=None``.
    Example: ``ad.cumprod(ad.Tensor([1., 2., 3.])).value`` is ``[1., 2., 6.]``.
    """
    if axis is None:
        return _cumprod(_flat(x), 0)
    return _cumprod(x, normalize_axis("cumprod", axis, _ndim(x)))

# -------------------------------------------------------------------- prod


def _exclusive(x, axis, reverse):
    """Product of the entries strictly before (after, if ``reverse``) each one along ``axis``."""
    n = x.shape[axis]
    lead = (slice(None),) * axis
    one = broadcast_to(np.ones((), x.dtype), x.shape[:axis] + (1,) + x.shape[axis + 1:])
    if reverse:
        shifted = concatenate([getitem(x, lead + (slice(1, n),)), one], axis)
    else:
        shifted = concatenate([one, getitem(x, lead + (slice(0, n - 1),))], axis)
    return _cumprod(shifted, axis, reverse)


def _others_product(x, axis, out, keepdims):
    """∏_{j≠i} x_j along the reduced axes, for each i (no division: exact with zeros)."""
    if builtins.any(x.shape[a] == 0 for a in axis):
        return broadcast_to(np.ones((), x.dtype), x.shape)
    if _bare_representable(out):
        return divide(_kept(out, x.shape, axis, keepdims), x)
    if len(axis) == 1:
        a = axis[0]
        return multiply(_exclusive(x, a, False), _exclusive(x, a, True))
    # Several axes: move them last, flatten them into one, and come back.
    rest = [a for a in range(x.ndim) if a not in axis]
    perm = rest + list(axis)
    moved = transpose(x, perm) if perm != list(range(x.ndim)) else x
    flat = reshape(moved, tuple(x.shape[a] for a in rest) + (-1,))
    last = flat.ndim - 1
    others = reshape(multiply(_exclusive(flat, last, False), _exclusive(flat, last, True)), moved.shape)
    return transpose(others, tuple(np.argsort(perm))) if perm != list(range(x.ndim)) else others


def _prod_vjp(ct, out, x, *, axis, keepdims):
    return (multiply(_kept(ct, x.shape, axis, keepdims), _others_product(x, axis, out, keepdims)),)


def _prod_jvp(t, out, x, *, axis, keepdims):
    return sum(multiply(t[0], _others_product(x, axis, out, keepdims)), axis, keepdims=keepdims)


def _prod_rule(x, *, axis, keepdims):
    return reduced_shape(x.shape, axis, keepdims), np.prod(np.zeros((0,), x.dtype)).dtype


PROD = defprim("prod", lambda x, *, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
               vjp=_prod_vjp, jvp=_prod_jvp, shape=_prod_rule, batch=shift_axis())


def prod(x, /, axis=None, *, keepdims: bool = False) -> Tensor:
    """Product over ``axis`` (None: all axes; int or tuple); the product of nothing is 1.

    The gradient of entry i is the product of the others (exact with zeros:
    one zero gets the product of the rest, two zeros make every entry's 0).
    Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``).
    Example: the gradient of ``ad.prod(x)`` at x = ``[2., 0., 3.]`` is ``[0., 6., 0.]``.
    """
    return apply(PROD, x, axis=normalize_axes("prod", axis, _ndim(x)), keepdims=bool(keepdims))

# -------------------------------------------------------------------- norm


def _norm_impl(x, *, axis, keepdims):
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)
    with np.errstate(over="ignore", under="ignore"):
        squares = np.sum(x * x, axis=axis, keepdims=keepdims)
    if x.dtype.kind == "f" and not np.all(_normal(squares)):
        return _rescaled_norm(x, squares, axis, keepdims)
    return np.sqrt(squares)


def _rescaled_norm(x, squares, axis, keepdims):
    """The 2-norm where Σ x² under- or overflowed, as BLAS's nrm2 computes it: m·‖x / m‖, m = max |x_i|.

    numpy's (and PyTorch's) sqrt(Σ x²) is 0 for x = [1e-200, 1e-200] and inf for
    [1e200, 1e200], where the norm is a normal number, and loses digits where Σ x²
    is subnormal (3e-5 relative at entries of 1e-160); and with it the gradient
    x / ‖x‖ (0 instead of [0.707, 0.707]). Only those slices change: the others
    keep numpy's value to the last bit, and a slice of zeros, or with an inf or
    NaN, keeps its 0, inf or NaN.
    """
    m = np.max(np.abs(x), axis=axis, keepdims=True, initial=0.0)   # (an empty slice: 0, kept as it is)
    usable = np.isfinite(m) & (m > 0)
    scale = np.where(usable, m, 1.0).astype(x.dtype)
    with np.errstate(over="ignore", under="ignore"):
        rescaled = m * np.sqrt(np.sum(np.square(x / scale), axis=axis, keepdims=True))
    if not keepdims:
        rescaled, usable = np.squeeze(rescaled, axis), np.squeeze(usable, axis)
    return np.where(usable & ~_normal(squares), rescaled, np.sqrt(squares)).astype(squares.dtype)


def _norm_vjp(ct, out, x, *, axis, keepdims):
    scaled = multiply(x, _kept(ct, x.shape, axis, keepdims))
    return (divide(scaled, _safe_denominator(_kept(out, x.shape, axis, keepdims))),)


def _norm_jvp(t, out, x, *, axis, keepdims):
    return divide(sum(multiply(t[0], x), axis, keepdims=keepdims), _safe_denominator(out))


# Hand-written pair: x/‖x‖ from the output and 0 at x = 0 (a subgradient), where sqrt(Σx²) gives 0/0.
NORM = defprim("norm", _norm_impl, vjp=_norm_vjp, jvp=_norm_jvp,
               shape=lambda x, *, axis, keepdims: (reduced_shape(x.shape, axis, keepdims),
                                                    _float_dtype(x.dtype)), batch=shift_axis())

# --------------------------------------------------------------- std, var


def _count(x, axes) -> int:
    shape = np.shape(x.value if isinstance(x, Tensor) else x)
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def std(x, /, axis=None, *, ddof: int = 0, keepdims: bool = False) -> Tensor:
    """Standard deviation over ``axis``: √(Σ (x - mean)² / (N - ddof)), as ``np.std``.

    A composite: the 2-norm of the centred entries (so a constant slice has
    gradient 0, the norm's convention at 0) over √(N - ddof).
    Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``).
    Example: ``ad.std(ad.Tensor([1., 3.])).value`` is ``1.0``.
    """
    axes = normalize_axes("std", axis, _ndim(x))
    centred = subtract(x, mean(x, axes, keepdims=True))
    dof = builtins.max(_count(x, axes) - ddof, 0)
    scale = 1.0 / math.sqrt(dof) if dof > 0 else math.inf
    return multiply(apply(NORM, centred, axis=axes, keepdims=bool(keepdims)), scale)

# ------------------------------------------------------------------- diff


def diff(x, /, n: int = 1, axis: int = -1, prepend=None, append=None) -> Tensor:
    """The n-th forward difference along ``axis``, as ``np.diff`` (a composite of slices and subtract).

    Shapes: (..., m, ...) -> (..., m - n, ...) (plus the ``prepend``/``append`` lengths).
    Example: ``ad.diff(ad.Tensor([1., 4., 9.])).value`` is ``[3., 5.]``.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ShapeError(f"diff: Expect: a non-negative integer order n. Actual: {n!r}")
    ndim = _ndim(x)
    if ndim == 0:
        raise ShapeError("diff: Expect: an operand with at least one axis. Actual: a 0-d operand")
    axis = normalize_axis("diff", axis, ndim)
    if prepend is not None or append is not None:
        shape = list(np.shape(x.value if isinstance(x, Tensor) else x))
        shape[axis] = 1

        def part(extra):
            # A scalar is repeated along the other axes, as numpy does (which reads a Python
            # number or list with np.asarray: diff(int_t, prepend=0) stays int64).
            extra = numpy_operand(extra)
            return broadcast_to(extra, tuple(shape)) if _ndim(extra) == 0 else extra
        x = concatenate(([] if prepend is None else [part(prepend)]) + [x]
                        + ([] if append is None else [part(append)]), axis)
    lead = (slice(None),) * axis
    for _ in range(int(n)):
        m = x.shape[axis]
        if m == 0:
            break
        # (numpy's diff of booleans is "changed": not_equal, as bool subtraction is refused)
        step = not_equal if x.dtype == np.bool_ else subtract
        x = step(getitem(x, lead + (slice(1, None),)), getitem(x, lead + (slice(None, m - 1),)))
    return x

# ---------------------------------------------------------- sort, argsort


def _argsort_impl(x, *, axis):
    return np.argsort(x, axis=axis, kind="stable")


ARGSORT = defprim(
    "argsort", _argsort_impl, transpose=(),  # (no differentiable input: the zero map, nothing to state)
    shape=lambda x, *, axis: (tuple(x.shape), np.dtype(np.intp)), nondiff=(0,), batch=shift_axis())


def argsort(x, /, axis=-1) -> Tensor:
    """The indices that sort ``x`` along ``axis`` (stable: ties keep their order); no derivative.

    ``axis=None`` sorts the flattened tensor. Shapes: (*s) -> (*s) of integers.
    Example: ``ad.argsort(ad.Tensor([3., 1., 2.])).value`` is ``[1, 2, 0]``.
    """
    if axis is None:
        return apply(ARGSORT, _flat(x), axis=0)
    return apply(ARGSORT, x, axis=normalize_axis("argsort", axis, _ndim(x)))


def _sort_vjp(ct, out, x, *, axis):
    # The sorting permutation: each slot's cotangent goes back to the entry it came from.
    return (apply(PUT_ALONG_AXIS_ADD, ct, apply(ARGSORT, x, axis=axis), shape=tuple(x.shape), axis=axis,
                  unique=True),)


# Hand-written pair: argsort(x) gathers the tangent and scatters the cotangent; sort is not linear in x.
SORT = defprim(
    # The sorted values do not depend on stability (numpy's default sort is faster); the
    # permutation of the rules does, and argsort is stable.
    "sort", lambda x, *, axis: np.sort(x, axis=axis), vjp=_sort_vjp,
    jvp=lambda t, out, x, *, axis: take_along_axis(t[0], apply(ARGSORT, x, axis=axis), axis),
    shape=lambda x, *, axis: (tuple(x.shape), x.dtype), batch=shift_axis())


def sort(x, /, axis=-1) -> Tensor:
    """x sorted along ``axis`` (None: flattened), as ``np.sort``; the gradient follows the permutation.

    Tied entries keep their order (a stable sort), so each gets the derivative
    of the slot it lands in. Shapes: (*s) -> (*s).
    Example: ``ad.sort(ad.Tensor([3., 1., 2.])).value`` is ``[1., 2., 3.]``; the gradient of
    ``(ad.sort(x) * [0., 0., 1.]).sum()`` at that x is ``[1., 0., 0.]``.
    """
    if axis is None:
        return apply(SORT, _flat(x), axis=0)
    return apply(SORT, x, axis=normalize_axis("sort", axis, _ndim(x)))

# -------------------------------------------------------------- any, all


def _boolean_reduction(name, fn):
    return defprim(name, lambda x, *, axis, keepdims: fn(x, axis=axis, keepdims=keepdims),
                   transpose=(),
                   shape=lambda x, *, axis, keepdims: (reduced_shape(x.shape, axis, keepdims),
                                                       np.dtype(np.bool_)),
                   nondiff=(0,), batch=shift_axis())


ANY = _boolean_reduction("any", np.any)
ALL = _boolean_reduction("all", np.all)


def any(x, /, axis=None, *, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Whether any entry is nonzero over ``axis`` (bool, no derivative).

    Shapes: (*s) -> s without the reduced axes. Example: ``ad.any(ad.Tensor([0., 2.])).value`` is ``True``.
    """
    return apply(ANY, x, axis=normalize_axes("any", axis, _ndim(x)), keepdims=bool(keepdims))


def all(x, /, axis=None, *, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Whether every entry is nonzero over ``axis`` (bool, no derivative).

    Shapes: (*s) -> s without the reduced axes. Example: ``ad.all(ad.Tensor([0., 2.])).value`` is ``False``.
    """
    return apply(ALL, x, axis=normalize_axes("all", axis, _ndim(x)), keepdims=bool(keepdims))

# ---------------------------------------------- median and the NaN-ignoring reductions


def _shape(x) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)


def _kept_shape(shape, axes) -> tuple[int, ...]:
    return tuple(1 if a in axes else d for a, d in enumerate(shape))


def _is_inexact(x) -> bool:
    return np.issubdtype(x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype, np.inexact)


def median(x, /, axis=None, *, keepdims: bool = False) -> Tensor:
    """The median over ``axis`` (None: all axes; int or tuple), as ``np.median``.

    A composite: the reduced axes are moved last and merged, the slices sorted,
    and the middle entry taken (the average of the two middle ones for an even
    count). The derivative is therefore numpy-consistent: it goes to the middle
    entry, half to each of the two middle entries for an even count, and among
    tied entries to the one the stable sort puts in the middle slot(s). A slice
    holding NaN has median NaN (derivative 0); an empty one NaN, as numpy (which
    warns). Integers give float64, as numpy.
    Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> np.median(ad.Tensor([[3.0, 1.0, 2.0], [4.0, 6.0, 5.0]]), axis=1).value
        array([2., 5.])
        >>> ad.grad(lambda t: ad.median(t))(np.array([4.0, 1.0, 3.0, 2.0]))    # (2 + 3) / 2
        array([0. , 0. , 0.5, 0.5])
    """
    shape = _shape(x)
    axes = normalize_axes("median", axis, len(shape))
    if not _is_inexact(x):
        x = astype(x, np.float64)
    out_shape = _kept_shape(shape, axes) if keepdims else reduced_shape(shape, axes, False)
    n = _count(x, axes)
    if n == 0:
        return mean(x, axes, keepdims=keepdims)
    rest = [a for a in range(len(shape)) if a not in axes]
    order = tuple(rest) + axes
    moved = x if order == tuple(range(len(shape))) else transpose(x, order)
    rows = reshape(moved, tuple(shape[a] for a in rest) + (n,))
    ordered = sort(rows, -1)
    k = n // 2
    mid = getitem(ordered, (Ellipsis, k))
    if n % 2 == 0:
        mid = multiply(add(getitem(ordered, (Ellipsis, k - 1)), mid), 0.5)
    # The sort puts NaN last, so the middle slots would hold numbers: numpy's median is NaN there.
    mid = where(any(isnan(rows), -1), math.nan, mid)
    return reshape(mid, out_shape)


def nansum(x, /, axis=None, *, keepdims: bool = False) -> Tensor:
    """The sum over ``axis`` with NaN entries counted as 0, as ``np.nansum``.

    The derivative is 1 at every number and 0 at NaN entries. An all-NaN slice
    sums to 0. Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> float(np.nansum(ad.Tensor([1.0, np.nan, 2.0])).value)
        3.0
        >>> ad.grad(lambda t: ad.nansum(t))(np.array([1.0, np.nan, 2.0]))
        array([1., 0., 1.])
    """
    if _is_inexact(x):
        x = where(isnan(x), 0.0, x)
    return sum(x, normalize_axes("nansum", axis, len(_shape(x))), keepdims=keepdims)


def nanmean(x, /, axis=None, *, keepdims: bool = False) -> Tensor:
    """The mean of the entries that are not NaN over ``axis``, as ``np.nanmean``.

    nansum / (number of non-NaN entries): the derivative is 1/count at each
    number and 0 at NaN entries. An all-NaN slice gives NaN (numpy also warns),
    with derivative 0. Integers give float64. Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> np.nanmean(ad.Tensor([[1.0, np.nan], [2.0, 4.0]]), axis=1).value
        array([1., 3.])
    """
    if not _is_inexact(x):
        return mean(x, normalize_axes("nanmean", axis, len(_shape(x))), keepdims=keepdims)
    axes = normalize_axes("nanmean", axis, len(_shape(x)))
    nan = isnan(x)
    count = sum(astype(equal(nan, False), x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype), axes,
                keepdims=keepdims)
    empty = equal(count, 0.0)
    # An all-NaN slice is NaN, by a where rather than 0/0: its derivative (to NaN entries only) stays 0.
    return where(empty, math.nan, divide(sum(where(nan, 0.0, x), axes, keepdims=keepdims), where(empty, 1.0, count)))


def _nan_extremum(name, fn, fill):
    def reduce(x, /, axis=None, *, keepdims: bool = False) -> Tensor:
        axes = normalize_axes(name, axis, len(_shape(x)))
        if not _is_inexact(x):
            return fn(x, axes, keepdims=keepdims)
        nan = isnan(x)
        # NaN loses every comparison as ∓inf; a slice of NaN only is NaN again, as numpy's (which warns).
        return where(all(nan, axes, keepdims=keepdims), math.nan, fn(where(nan, fill, x), axes, keepdims=keepdims))
    reduce.__name__ = name
    return reduce


nanmax = _nan_extremum("nanmax", max, -math.inf)
nanmax.__doc__ = """The maximum over ``axis`` ignoring NaN entries, as ``np.nanmax``.

    Ties among numbers share the derivative evenly (as ``max``); NaN entries get 0. (In a
    slice whose numbers are all -inf, where the value is -inf, the NaN entries tie with
    them as -inf: the -inf entries get shares 1/count of all, not of the numbers.)
    An all-NaN slice gives NaN (numpy warns); an empty axis raises ShapeError (numpy raises).
    Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> float(np.nanmax(ad.Tensor([1.0, np.nan, 3.0])).value)
        3.0
        >>> ad.grad(lambda t: ad.nanmax(t))(np.array([3.0, np.nan, 3.0]))
        array([0.5, 0. , 0.5])
    """
nanmin = _nan_extremum("nanmin", min, math.inf)
nanmin.__doc__ = """The minimum over ``axis`` ignoring NaN entries, as ``np.nanmin``.

    Ties among numbers share the derivative evenly (as ``min``); NaN entries get 0 (+inf slices as nanmax's -inf).
    An all-NaN slice gives NaN (numpy warns); an empty axis raises ShapeError (numpy raises).
    Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> np.nanmin(ad.Tensor([[1.0, np.nan], [np.nan, -2.0]]), axis=0).value
        array([ 1., -2.])
    """
