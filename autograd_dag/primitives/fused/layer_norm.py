"""Layer normalization as one primitive, with the two primitives its derivative rules are made of.

``layer_norm(x, γ, β)`` = γ·(x − μ)/√(σ² + ε) + β over trailing axes;
``standardize_jacobian`` (its derivative in x applied to a vector) and
``standardized_sum`` (the cotangent of γ) keep the rules to one array of x's
size each, where the composite of means and divisions kept several.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ...core import Tensor, apply, parameter
from ...errors import ShapeError
from ..elementwise import add, divide, multiply, negative, sqrt, subtract
from ..batch import elementwise as elementwise_batch
from ..batch import materialize
from ..registry import defprim
from ..rowsplit import run_rows, splits
from ..shapes import broadcast, fmt
from ..structure import broadcast_to, sum, sum_to_shape
from ..reductions import _float_dtype, _ndim, mean
from .softmax import _row_dots, _row_sums


# ------------------------------------------------------------ layer_norm


def _means(x, axes):
    """The mean of x over its trailing ``axes``, kept; over the last axis as a matrix–vector product."""
    if axes == (-1,) and x.ndim > 1:
        return _row_sums(x, (x.ndim - 1,)) / x.shape[-1]
    return np.mean(x, axis=axes, keepdims=True)


def _split_rows(name, x, *others) -> bool:
    """Whether ``name`` over x's last axis is split by rows: x C-contiguous, ``others`` of its shape or a row's."""
    return (splits(name, x) and isinstance(x, np.ndarray) and x.ndim > 1 and x.flags.c_contiguous
            and builtins.all(np.ndim(o) <= 1 or (np.shape(o) == x.shape and o.flags.c_contiguous)
                             for o in others))


def _rows(a, n):
    """a as rows of n (a view), or a itself when it is one row or a number (it broadcasts)."""
    return a.reshape(-1, n) if np.ndim(a) > 1 else a


def _layer_norm_impl(x, gamma, beta, *, axes, eps, out=None):
    # ``out`` (from the program executor) is x itself when x dies here, as it does where a
    # gradient program recomputes x̂ for γ's cotangent: x − μ is written over x (μ read first).
    if _split_rows("layer_norm", x) and axes == (-1,) and np.ndim(gamma) <= 1 and np.ndim(beta) <= 1:
        dtype = _float_dtype(np.result_type(x, gamma, beta))
        if out is None:
            out = np.empty(x.shape, dtype)
        n = x.shape[-1]
        x2, o2 = x.reshape(-1, n), out.reshape(-1, n)

        def rows(a, b):  # the unsplit call on rows a:b (out= the same slice object when out is x)
            xs = x2[a:b]
            _layer_norm_whole(xs, gamma, beta, axes, eps, xs if out is x else o2[a:b])
        run_rows("layer_norm", rows, x2.shape[0], n)
        return out
    return _layer_norm_whole(x, gamma, beta, axes, eps, out)


def _layer_norm_whole(x, gamma, beta, axes, eps, out):
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
    np.divide(1.0, var, out=var)  # times 1/σ: within an ulp of ÷ σ, and numpy's ÷ by a column costs more
    out *= var
    for operand, ufunc, identity in ((gamma, np.multiply, 1), (beta, np.add, 0)):
        if np.ndim(operand) == 0 and operand == identity:  # x̂ itself (the derivative rules' γ = 1, β = 0)
            continue
        if np.shape(operand) in ((), out.shape[-1:]) or np.broadcast_shapes(out.shape, operand.shape) == out.shape:
            ufunc(out, operand, out=out)
        else:
            out = ufunc(out, operand)
    return out


def _standardize_jacobian_impl(v, x, *, axes, eps, out=None):
    # J v for J = ∂x̂/∂x (symmetric) at x: (v − mean v − x̂·mean(v ⊙ x̂)) / √(σ² + ε), with x̂ recomputed
    # from x. One array of the result's size: c = x − μ, scaled by the row factor, then + v − mean v, ÷ √.
    # ``out`` (from the program executor) may be x (c is computed there) or v (written over once read).
    if _split_rows("standardize_jacobian", x, v) and axes == (-1,) and np.shape(v) == np.shape(x):
        dtype = _float_dtype(np.result_type(v, x))
        if out is None:
            out = np.empty(x.shape, dtype)
        n = x.shape[-1]
        v2, x2, o2 = v.reshape(-1, n), x.reshape(-1, n), out.reshape(-1, n)

        def rows(a, b):  # the unsplit call on rows a:b, into its rows of out (c computed there)
            vs, xs = v2[a:b], x2[a:b]
            _standardize_jacobian_whole(vs, xs, axes, eps, vs if out is v else xs if out is x else o2[a:b])
        run_rows("standardize_jacobian", rows, x2.shape[0], n)
        return out
    return _standardize_jacobian_whole(v, x, axes, eps, out)


def _standardize_jacobian_whole(v, x, axes, eps, out):
    dtype = _float_dtype(np.result_type(v, x))
    x = x.astype(dtype, copy=False)
    # c = x − μ goes into out when out is not v (x itself from the executor, or a chunk's rows of the result).
    c = np.subtract(x, _means(x, axes), out=out if out is not None and out is not v else None)
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


# Hand-written pair: linear in v, not in x; closed forms with x̂ recomputed, one array of v's size each.
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


# Hand-written pair: linear in ct, not in x; closed forms with x̂ recomputed.
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


# Hand-written pair: standardize_jacobian and standardized_sum, one node and one array each, not 17 nodes.
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
