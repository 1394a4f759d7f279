"""Solves, inverses and determinants: ``inv``, ``solve``, ``det``, ``slogdet``; ``matrix_power``, ``tensorinv``, ``tensorsolve``.

Every function is batched over leading axes, as numpy's: an operand of shape
(..., m, n) is a stack of matrices. ``det``'s derivative is the cofactor
matrix, a primitive of its own (``cofactor``, with ``cofactor_derivative`` for
the Hessian), exact at any rank; ``slogdet`` is two primitives:
``logabsdet`` (differentiable) and ``slogdet_sign`` (piecewise constant, no
derivative). ``matrix_power``, ``tensorinv`` and ``tensorsolve`` are
composites (matmul, inv and solve around reshapes).

All rules are written with primitive functions (matmul, solve, the
primitives here, ...), so the derivative is a recorded program that is
differentiated again (second order).
"""

from __future__ import annotations

import builtins

import numpy as np

from ...core import Tensor, apply
from ...errors import ShapeError
from ..elementwise import add, astype, multiply, negative, subtract, where
from ..mathfuncs import isnan
from ..batch import leading_axes, lift_rank
from ..registry import defprim
from ..shapes import fmt, normalize_axis
from ..structure import broadcast_to, reshape, sum, sum_to_shape, transpose
from .base import (SlogdetResult, _Aval, _dtype_of, _eye, _float_dtype, _linalg_error, _require_matrix,
                   _shape_of, _square_rule, _T)
from .products import matmul


# ------------------------------------------------------------------ inv


def _inv_impl(a, *, singular: str = "raise"):
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        if singular == "raise":
            raise _linalg_error("inv", "invertible matrices", "a singular matrix", a.shape) from None
    # singular="nan" (cond's): NaN for each singular matrix of the stack, as numpy.linalg.cond's inverse.
    n = a.shape[-1]
    flat = a.reshape((-1, n, n))
    out = np.empty(flat.shape, _float_dtype(a.dtype))
    for i, m in enumerate(flat):
        try:
            out[i] = np.linalg.inv(m)
        except np.linalg.LinAlgError:
            out[i] = np.nan
    return out.reshape(a.shape)


def _inverse_read(out, singular: str = "raise"):
    # A singular matrix's NaN inverse (singular="nan") has no derivative; read as 0, so that its
    # NaN does not reach the cotangents of the other matrices of a stack (cond(a)[1] of a stack
    # whose matrix 0 is singular: a NaN gradient for matrix 0 where it is 0).
    return out if singular == "raise" else where(isnan(out), 0.0, out)


def _inv_vjp(ct, out, a, **params):
    out = _inverse_read(out, **params)
    return (negative(matmul(_T(out), matmul(ct, _T(out)))),)


def _inv_jvp(t, out, a, **params):
    out = _inverse_read(out, **params)
    return negative(matmul(out, matmul(t[0], out)))


# Hand-written pair: nonlinear; both rules reuse the output A⁻¹ (two matmuls), no second inversion.
INV = defprim("inv", _inv_impl, vjp=_inv_vjp, jvp=_inv_jvp, shape=_square_rule("inv"), batch=leading_axes)


def inv(a) -> Tensor:
    """The inverse of a square matrix (batched), as ``np.linalg.inv``.

    Shapes: (..., n, n) -> (..., n, n). A singular matrix raises :class:`ShapeError`.
    Derivative: d(A⁻¹) = -A⁻¹ dA A⁻¹.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.inv(ad.Tensor([[2.0, 0.0], [0.0, 4.0]])).value
        array([[0.5 , 0.  ],
               [0.  , 0.25]])
    """
    _require_matrix("inv", _shape_of(a), square=True)
    return apply(INV, a)

# ---------------------------------------------------------------- solve


def _solve_rule(a, b):
    _require_matrix("solve", a.shape, square=True)
    n = a.shape[-1]
    if b.ndim == 0 or (b.ndim == 1 and b.shape[0] != n) or (b.ndim > 1 and b.shape[-2] != n):
        raise ShapeError(f"solve: Expect: b of shape ({n},) or (..., {n}, k) for a of shape {fmt(a.shape)}. "
                         f"Actual: b of shape {fmt(b.shape)}")
    if b.ndim == 1:
        return tuple(a.shape[:-2]) + (n,), np.result_type(_float_dtype(a.dtype), _float_dtype(b.dtype))
    try:
        batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    except ValueError:
        raise ShapeError(f"solve: Expect: batch dimensions that broadcast together. Actual: a of shape "
                         f"{fmt(a.shape)}, b of shape {fmt(b.shape)}") from None
    return batch + tuple(b.shape[-2:]), np.result_type(_float_dtype(a.dtype), _float_dtype(b.dtype))


def _solve_impl(a, b):
    _solve_rule(a, b)
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise _linalg_error("solve", "an invertible matrix a", "a singular matrix a", a.shape) from None


def _as_columns(x, vector: bool):
    return reshape(x, tuple(x.shape) + (1,)) if vector else x


def _solve_vjp(ct, out, a, b):
    vector = b.ndim == 1
    b_m = tuple(b.shape) + (1,) if vector else tuple(b.shape)
    gb_m = solve(_T(a), _as_columns(ct, vector))
    gb = sum_to_shape(gb_m, b_m)
    ga = sum_to_shape(negative(matmul(gb_m, _T(_as_columns(out, vector)))), tuple(a.shape))
    return ga, (reshape(gb, tuple(b.shape)) if vector else gb)


def _solve_jvp(t, out, a, b):
    ta, tb = t
    vector = b.ndim == 1
    x_m = _as_columns(out, vector)
    rhs = None
    if tb is not None:
        rhs = broadcast_to(_as_columns(tb, vector), tuple(x_m.shape))
    if ta is not None:
        term = negative(matmul(ta, x_m))
        rhs = term if rhs is None else add(rhs, term)
    result = solve(a, rhs)
    return reshape(result, tuple(out.shape)) if vector else result


def _solve_batch(prim, args, batched):
    # A vector b becomes a column, so that a batched b is never read as a matrix;
    # then both examples are lifted to one rank so that the batch axes meet.
    a, b = args
    vector = b.ndim - batched[1] == 1
    if vector:
        b = reshape(b, tuple(b.shape) + (1,))
    rank = builtins.max(a.ndim - batched[0], b.ndim - batched[1])
    out = apply(prim, lift_rank(a, rank) if batched[0] else a, lift_rank(b, rank) if batched[1] else b)
    return reshape(out, tuple(out.shape[:-1])) if vector else out


# Hand-written pair: linear in b only; both reuse x and one more solve, never A⁻¹ (stable for ill-conditioned a).
SOLVE = defprim("solve", _solve_impl, vjp=_solve_vjp, jvp=_solve_jvp, shape=_solve_rule, batch=_solve_batch)


def solve(a, b) -> Tensor:
    """The solution x of a x = b (batched), as ``np.linalg.solve``.

    Shapes: a (..., n, n); b (n,) -> (..., n), or b (..., n, k) -> (..., n, k)
    with the batch dimensions broadcast (numpy 2 semantics: b is a vector
    only when it is 1-D). A singular ``a`` raises :class:`ShapeError`.
    Derivatives: b̄ = a⁻ᵀ x̄, ā = -b̄ xᵀ; dx = a⁻¹(db - da x).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.solve(ad.Tensor([[2.0, 0.0], [0.0, 4.0]]), ad.Tensor([1.0, 1.0])).value
        array([0.5 , 0.25])
    """
    _solve_rule(_Aval(a), _Aval(b))
    return apply(SOLVE, a, b)

# ------------------------------------------------------------------ det


def _cofactor_by_svd(a):
    """Cofactors of a stack (..., n, n) from A = U S Vᵀ: det(U) det(Vᵀ) U diag(Π_{j≠i} s_j) Vᵀ."""
    u, s, vh = np.linalg.svd(a)
    ones = np.ones(s.shape[:-1] + (1,), s.dtype)
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)       # Π_{j<i} s_j
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]   # Π_{j>i} s_j
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return sign[..., None, None] * ((u * (before * after)[..., None, :]) @ vh)


def _cofactor_impl(a):
    # det(A)·A⁻ᵀ where det is a normal number (accurate even near singular: the errors of
    # the two factors cancel); the SVD formula where A is singular (inv raises) or det
    # under/overflows (diag(1e-170, 1e-170, 1e-5): det underflows to 0, cofactor 1e-175).
    a = np.asarray(a, dtype=_float_dtype(a.dtype))
    n = a.shape[-1]
    if a.size == 0:
        return np.zeros_like(a)   # (before the reshape: -1 is undetermined for 0×0 matrices)
    flat = a.reshape((-1, n, n))
    det = np.linalg.det(flat)
    normal = np.isfinite(det) & (np.abs(det) >= np.finfo(a.dtype).tiny)
    cof = np.empty_like(flat)
    if normal.any():
        cof[normal] = det[normal][:, None, None] * np.swapaxes(np.linalg.inv(flat[normal]), -1, -2)
    if not normal.all():
        cof[~normal] = _cofactor_by_svd(flat[~normal])
    return cof.reshape(a.shape)


def _cofactor_derivative_impl(a, t):
    # d cof(A)[T], the Hessian of det applied to T, from A = U S Vᵀ: cof(U M Vᵀ) =
    # det(U) det(V) U cof(M) Vᵀ, and at M = S diagonal, with E = Uᵀ T V and
    # P_ij = Π_{l≠i,j} s_l: d cof(S)[E]_ii = Σ_{k≠i} P_ik E_kk, d cof(S)[E]_ij = -P_ij E_ji.
    # Exact at any rank (a polynomial's derivative), where det·(...)/det or A⁻¹ lose
    # digits as A nears singular (1% off at a gap of 1e-14).
    dtype = _float_dtype(np.result_type(a.dtype, t.dtype))
    a, t = a.astype(dtype), t.astype(dtype)
    n = a.shape[-1]
    if a.size == 0 or n == 0:
        return np.zeros(np.broadcast_shapes(a.shape, t.shape), dtype)
    u, s, vh = np.linalg.svd(a)
    e = np.swapaxes(u, -1, -2) @ t @ np.swapaxes(vh, -1, -2)
    eye = np.eye(n, dtype=bool)
    rows = np.where(eye, 1.0, s[..., None, :]).astype(dtype)                # row i: s with s_i as 1
    ones = np.ones(rows.shape[:-1] + (1,), dtype)
    before = np.cumprod(np.concatenate([ones, rows[..., :-1]], -1), -1)
    after = np.cumprod(np.concatenate([ones, rows[..., :0:-1]], -1), -1)[..., ::-1]
    pairs = np.where(eye, 0.0, before * after)                              # P_ij, 0 on the diagonal
    diagonal = np.einsum("...ik,...k->...i", pairs, np.diagonal(e, axis1=-2, axis2=-1))
    d = diagonal[..., None] * eye - pairs * np.swapaxes(e, -1, -2)
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return (sign[..., None, None] * (u @ d @ vh)).astype(dtype)


def _cofactor_derivative_vjp(ct, out, a, t):
    # In t: the Hessian is symmetric, so the transpose of T ↦ H[T] is itself. In a: the
    # third derivative, from H[T] = tr(A⁻¹T) C - C Tᵀ A⁻ᵀ (C = cof A), where A is invertible.
    inv_a = inv(a)
    c = apply(COFACTOR, a)
    inv_t = _T(inv_a)
    batch = tuple(a.shape[:-2]) + (1, 1)
    trace = reshape(sum(multiply(inv_t, t), (-2, -1)), batch)                 # tr(A⁻¹ T)
    g_dot_c = reshape(sum(multiply(ct, c), (-2, -1)), batch)
    ga = negative(multiply(g_dot_c, _T(matmul(inv_a, matmul(t, inv_a)))))
    ga = add(ga, multiply(trace, _cofactor_derivative(a, ct)))
    ga = subtract(ga, _cofactor_derivative(a, matmul(ct, matmul(inv_a, t))))
    ga = add(ga, matmul(inv_t, matmul(_T(ct), matmul(c, matmul(_T(t), inv_t)))))
    return ga, _cofactor_derivative(a, ct)


def _cofactor_derivative_jvp(tangents, out, a, t):
    ta, tt = tangents
    result = None if tt is None else _cofactor_derivative(a, tt)
    if ta is not None:
        inv_a = inv(a)
        c = apply(COFACTOR, a)
        inv_t = _T(inv_a)
        batch = tuple(a.shape[:-2]) + (1, 1)
        trace = reshape(sum(multiply(inv_t, t), (-2, -1)), batch)
        d_trace = negative(reshape(sum(multiply(_T(matmul(inv_a, matmul(ta, inv_a))), t), (-2, -1)), batch))
        h = _cofactor_derivative(a, ta)
        term = add(multiply(d_trace, c), multiply(trace, h))
        term = subtract(term, matmul(h, matmul(_T(t), inv_t)))
        term = add(term, matmul(c, matmul(_T(t), matmul(inv_t, matmul(_T(ta), inv_t)))))
        result = term if result is None else add(result, term)
    return result


# Hand-written pair: linear in t only; the rules are det's third derivative, in closed form through A⁻¹.
COFACTOR_DERIVATIVE = defprim("cofactor_derivative", _cofactor_derivative_impl, vjp=_cofactor_derivative_vjp,
                              jvp=_cofactor_derivative_jvp,
                              shape=lambda a, t: (tuple(np.broadcast_shapes(a.shape, t.shape)),
                                                  _float_dtype(np.result_type(a.dtype, t.dtype))),
                              batch=leading_axes)


def _cofactor_derivative(a, t):
    """The Hessian of det at a applied to t (both (..., n, n)): d cof(a)[t]."""
    return apply(COFACTOR_DERIVATIVE, a, t)


# Hand-written pair: det's Hessian from the SVD, exact at any rank; det·A⁻ᵀ terms lose digits near singular A.
COFACTOR = defprim("cofactor", _cofactor_impl,
                   vjp=lambda ct, out, a: (_cofactor_derivative(a, ct),),   # (a Hessian: symmetric)
                   jvp=lambda t, out, a: _cofactor_derivative(a, t[0]),
                   shape=_square_rule("cofactor"), batch=leading_axes)


def _det_vjp(ct, out, a):
    return (multiply(reshape(ct, tuple(out.shape) + (1, 1)), apply(COFACTOR, a)),)


def _det_jvp(t, out, a):
    return sum(multiply(apply(COFACTOR, a), t[0]), (-2, -1))


def _det_rule(a):
    _require_matrix("det", a.shape, square=True)
    return tuple(a.shape[:-2]), _float_dtype(a.dtype)


# Hand-written pair: the cofactor primitive, exact at singular A, where det(A)·A⁻ᵀ from the output is 0·inf.
DET = defprim("det", lambda a: np.asarray(np.linalg.det(a)), vjp=_det_vjp, jvp=_det_jvp, shape=_det_rule,
              batch=leading_axes)


def det(a) -> Tensor:
    """The determinant (batched), as ``np.linalg.det``.

    Shapes: (..., n, n) -> (...). Derivative: the cofactor matrix, det A · A⁻ᵀ
    where det A is a normal number and from the SVD elsewhere (singular A, or a
    det that under/overflows), so the gradient is exact at any rank; the second
    derivative (the Hessian, from the SVD) too. Third derivatives need an
    invertible A (at a singular one they raise).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> round(float(ad.linalg.det(ad.Tensor([[2.0, 1.0], [1.0, 3.0]])).value), 12)
        5.0
    """
    _require_matrix("det", _shape_of(a), square=True)
    return apply(DET, a)

# -------------------------------------------------------------- slogdet


def _logabsdet_vjp(ct, out, a):
    return (multiply(reshape(ct, tuple(out.shape) + (1, 1)), _T(inv(a))),)


def _logabsdet_jvp(t, out, a):
    return sum(multiply(_T(inv(a)), t[0]), (-2, -1))


# Hand-written pair: the closed form A⁻ᵀ (one inverse); LAPACK's LU has no recorded composite to derive from.
LOGABSDET = defprim("logabsdet", lambda a: np.asarray(np.linalg.slogdet(a)[1]),
                    vjp=_logabsdet_vjp, jvp=_logabsdet_jvp, shape=_det_rule,
                    batch=leading_axes)
SLOGDET_SIGN = defprim("slogdet_sign", lambda a: np.asarray(np.linalg.slogdet(a)[0]),
                       vjp=lambda ct, out, a: (None,),  # (no JVP: a is nondiff)
                       shape=_det_rule, nondiff=(0,),
                       batch=leading_axes)


def slogdet(a) -> SlogdetResult:
    """``(sign, log|det a|)`` (batched), as ``np.linalg.slogdet``.

    Two primitives: ``slogdet_sign`` (piecewise constant, no derivative) and
    ``logabsdet`` (derivative A⁻ᵀ, like log det). Returns numpy 2's named tuple
    ``SlogdetResult(sign, logabsdet)``.
    Shapes: (..., n, n) -> ((...), (...)).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> sign, logdet = ad.linalg.slogdet(ad.Tensor([[-2.0, 0.0], [0.0, 1.0]]))
        >>> float(sign.value), round(float(logdet.value), 6)
        (-1.0, 0.693147)
        >>> round(float(ad.linalg.slogdet(ad.Tensor([[2.0]])).logabsdet.value), 6)
        0.693147
    """
    _require_matrix("slogdet", _shape_of(a), square=True)
    return SlogdetResult(apply(SLOGDET_SIGN, a), apply(LOGABSDET, a))


def matrix_power(a, n: int) -> Tensor:
    """a raised to the integer power n by repeated squaring (batched), as ``np.linalg.matrix_power``.

    A composite of matmul (and inv for n < 0); n = 0 gives the identity
    (derivative zero) in a's dtype, integer too, as numpy. Shapes: (..., m, m) -> (..., m, m).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.matrix_power(ad.Tensor([[1.0, 1.0], [0.0, 1.0]]), 3).value
        array([[1., 3.],
               [0., 1.]])
    """
    shape = _shape_of(a)
    _require_matrix("matrix_power", shape, square=True)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ShapeError(f"matrix_power: Expect: an integer exponent. Actual: {n!r}")
    n = int(n)
    if n == 0:
        dtype = _dtype_of(a)
        if not np.issubdtype(dtype, np.inexact):
            # numpy's identity keeps an integer or boolean a's dtype (a * 0.0 made it float64).
            return astype(add(multiply(a, 0), _eye(shape[-1], dtype)), dtype)
        return add(multiply(a, 0.0), _eye(shape[-1], _float_dtype(dtype)))
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def tensorinv(a, ind: int = 2) -> Tensor:
    """The inverse of a tensor for ``tensordot`` over its first ``ind`` axes, as ``np.linalg.tensorinv``.

    A reshape to a square matrix, :func:`inv`, and a reshape back.
    Shapes: a.shape[:ind] + a.shape[ind:] -> a.shape[ind:] + a.shape[:ind].

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.tensorinv(ad.Tensor(np.eye(4).reshape(4, 2, 2)), ind=1).shape
        (2, 2, 4)
    """
    shape = _shape_of(a)
    if ind <= 0:
        raise ShapeError(f"tensorinv: Expect: ind > 0. Actual: {ind}")
    rows = int(np.prod(shape[:ind], dtype=np.int64))
    cols = int(np.prod(shape[ind:], dtype=np.int64))
    if rows != cols:
        raise ShapeError(f"tensorinv: Expect: prod(a.shape[:ind]) == prod(a.shape[ind:]). Actual: "
                         f"{rows} and {cols} for shape {fmt(shape)}, ind={ind}")
    return reshape(inv(reshape(a, (rows, cols))), tuple(shape[ind:]) + tuple(shape[:ind]))


def tensorsolve(a, b, axes=None) -> Tensor:
    """The x with tensordot(a, x, x.ndim) == b, as ``np.linalg.tensorsolve`` (reshapes around :func:`solve`).

    Shapes: a (*b.shape, *x.shape) with prod(x.shape) == prod(b.shape), b -> x.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.tensorsolve(ad.Tensor(np.eye(4).reshape(2, 2, 4)), ad.Tensor(np.ones((2, 2)))).shape
        (4,)
    """
    if axes is not None:
        nd = len(_shape_of(a))
        moved = [normalize_axis("tensorsolve", k, nd) for k in axes]
        order = [k for k in range(nd) if k not in moved] + moved
        a = transpose(a, tuple(order))
    sa, sb = _shape_of(a), _shape_of(b)
    x_shape = sa[len(sb):]
    n = int(np.prod(x_shape, dtype=np.int64))
    if sa[:len(sb)] != sb or int(np.prod(sb, dtype=np.int64)) != n:
        raise ShapeError(f"tensorsolve: Expect: a of shape b.shape + x.shape with as many entries in x as "
                         f"in b. Actual: a {fmt(sa)}, b {fmt(sb)}")
    return reshape(solve(reshape(a, (n, n)), reshape(b, (n,))), x_shape)
