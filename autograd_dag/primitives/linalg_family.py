"""The numpy.linalg family: solve, inv, det, slogdet, cholesky, eigh, svd, qr, pinv.

Every function is batched over leading axes, as numpy's: an operand of shape
(..., m, n) is a stack of matrices.

Design of the decompositions with several outputs (eigh, svd, qr): a
primitive returns one array, so each decomposition is **one primitive whose
output packs its factors**, flattened and concatenated along a last axis
(shape (..., total)). The public function splits the packed array with
``getitem`` and ``reshape`` (recorded, linear, differentiable), so the
decomposition runs once and each factor is an ordinary Tensor. The VJP gets
the packed cotangent, splits it the same way, and applies the factor
formulas; the JVP returns the packed tangent. ``slogdet`` is two primitives:
``logabsdet`` (differentiable) and ``slogdet_sign`` (piecewise constant, no
derivative).

All rules are written with primitive functions (matmul, solve, the
primitives here, ...), so the derivative is a recorded program that is
differentiated again (second order).

Conventions, documented where they matter:

* ``cholesky`` and ``eigh`` read only the lower triangle (numpy's ``UPLO='L'``),
  so their derivatives with respect to the strict upper triangle are zero and
  the lower triangle carries the symmetric contributions of both.
* ``eigh`` is differentiable where the eigenvalues are distinct; the
  eigenvector terms of two equal eigenvalues are taken as zero (so that a
  function of the eigenvalues alone still gets its correct gradient at a
  degenerate point); the eigenvectors themselves are not unique there. Second
  derivatives need distinct eigenvalues even for a function of the eigenvalues
  alone: at a repeated one the eigenvalues have only one-sided derivatives (the
  Hessian of Σ λᵢ³ at A = I comes out wrong, by up to 4 on a 3×3), and no local
  rule can recover the limit.
* ``svd`` likewise needs distinct, non-zero singular values for the factor
  derivatives; the singular values alone (``compute_uv=False``, ``norm``) are
  differentiable wherever they are distinct. Of a non-square matrix with a
  singular value 0 to working precision (<= max(m, n)·eps·s_max), the extra
  factor column is not unique: a VJP that uses it raises
  :class:`UndefinedDerivativeError`, and the JVP gives NaN in that column. ``full_matrices=True`` on a
  non-square matrix has non-unique extra columns: its value is computed, its
  derivative raises :class:`NotDifferentiableError`.
* ``qr`` (mode 'reduced', 'r', or 'complete' for a wide or square matrix) needs
  a full-rank leading square block: where it is rank-deficient to working
  precision (min |r_ii| <= k·eps·‖R_kk‖_F, R_kk the k×k block, k = min(m, n)) the
  derivative raises :class:`UndefinedDerivativeError`, as Q is not unique there.
* ``pinv``'s derivative is the constant-rank formula (Golub & Pereyra) with numpy's
  tolerance; an explicit ``rcond`` goes through ``svd``.
"""

from __future__ import annotations

import builtins
import math
from typing import NamedTuple

import numpy as np

from ..core import Tensor, apply, parameter, traced
from ..errors import NotDifferentiableError, ShapeError, UndefinedDerivativeError
from .elementwise import (abs, add, astype, divide, equal, greater, multiply, negative, not_equal, sqrt,
                          subtract, where)
from .arrays import diagonal as numpy_diagonal, trace as numpy_trace
from .indexing import concatenate, getitem, stack
from .linalg import matmul
from .mathfuncs import isnan
from .numeric import _inexact, any as any_along, norm as vector_or_frobenius_norm
from .reductions import max, min
from .batch import leading_axes, lift_rank
from .registry import defprim
from .shapes import fmt, normalize_axis
from .structure import broadcast_to, reshape, sum, sum_to_shape, swapaxes, transpose


# numpy 2's result types (numpy.linalg returns these named tuples): same names and fields, so
# ``np.linalg.eigh(t).eigenvalues`` reads as on arrays, and unpacking as a tuple still works.
class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


def _T(x):
    return swapaxes(x, -1, -2)


def _shape_of(x) -> tuple[int, ...]:
    return tuple(np.shape(x.value if isinstance(x, Tensor) else x))


def _require_matrix(name: str, shape, square: bool = False) -> None:
    if len(shape) < 2:
        raise ShapeError(f"{name}: Expect: a matrix or a stack of matrices (at least 2 dimensions). "
                         f"Actual: shape {fmt(shape)}")
    if square and shape[-1] != shape[-2]:
        raise ShapeError(f"{name}: Expect: square matrices (..., n, n). Actual: shape {fmt(shape)}")


def _float_dtype(dtype):
    return np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64)


def _square_rule(name):
    def rule(a, **params):
        _require_matrix(name, a.shape, square=True)
        return tuple(a.shape), _float_dtype(a.dtype)
    return rule


def _linalg_error(name: str, what: str, actual: str, shape):
    return ShapeError(f"{name}: Expect: {what}. Actual: {actual} (operand of shape {fmt(shape)})")


def _eye(n: int, dtype=np.float64) -> np.ndarray:
    return np.eye(n, dtype=dtype)


def _tril_mask(n: int, k: int = 0, dtype=np.float64) -> np.ndarray:
    return np.tril(np.ones((n, n), dtype=dtype), k)


def _safe_reciprocal(d):
    """1/d where d != 0, else 0 (for the degenerate-spectrum conventions)."""
    nonzero = not_equal(d, 0.0)
    return where(nonzero, divide(1.0, where(nonzero, d, 1.0)), 0.0)


def _lower_reader_adjoint(m):
    """Cotangent of A for a function that reads only A's lower triangle.

    ``m`` is the cotangent as if A were free and symmetric: its symmetric part
    Σ goes to the diagonal once and to the strict lower triangle twice.
    """
    n = m.shape[-1]
    sym = multiply(add(m, _T(m)), 0.5)
    return multiply(sym, 2.0 * _tril_mask(n, -1, m.dtype) + _eye(n, m.dtype))


def _lower_reader_tangent(t):
    """The symmetric matrix a function reading A's lower triangle sees when A moves by ``t``."""
    n = t.shape[-1]
    strict = multiply(t, _tril_mask(n, -1, t.dtype))
    return add(add(strict, _T(strict)), multiply(t, _eye(n, t.dtype)))


def _diag_part(x):
    """The diagonal of the last two axes as a vector: (..., n, n) -> (..., n)."""
    return sum(multiply(x, _eye(x.shape[-1], x.dtype)), -1)


def _diag_matrix(v):
    """A vector as a diagonal matrix: (..., n) -> (..., n, n)."""
    n = v.shape[-1]
    return multiply(reshape(v, tuple(v.shape) + (1,)), _eye(n, v.dtype))

# -------------------------------------------------------------- packing


def _pack(parts, batch):
    """Factors (each (*batch, *core)) flattened and joined along one last axis."""
    return concatenate([reshape(p, tuple(batch) + (_core_size(p.shape, batch),)) for p in parts], -1)


def _unpack(packed, batch, cores):
    """The factors of a packed array: inverse of :func:`_pack`."""
    batch = tuple(batch)
    out, start = [], 0
    lead = (Ellipsis,)
    for core in cores:
        size = int(np.prod(core, dtype=np.int64))
        part = getitem(packed, lead + (slice(start, start + size),))
        out.append(reshape(part, batch + tuple(core)))
        start += size
    return out


def _np_pack(arrays, batch):
    return np.concatenate([np.reshape(a, tuple(batch) + (_core_size(a.shape, batch),)) for a in arrays], axis=-1)


def _core_size(shape, batch) -> int:
    # Not -1 in the reshape: an empty stack of matrices (a batch axis of 0) leaves it undetermined.
    return int(np.prod(shape[len(tuple(batch)):], dtype=np.int64))

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


class _Aval:
    """Shape and dtype of an operand, for calling a shape rule before applying."""

    def __init__(self, x):
        v = x.value if isinstance(x, Tensor) else np.asarray(x)
        self.shape, self.dtype, self.ndim = v.shape, v.dtype, v.ndim

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


COFACTOR_DERIVATIVE = defprim("cofactor_derivative", _cofactor_derivative_impl, vjp=_cofactor_derivative_vjp,
                              jvp=_cofactor_derivative_jvp,
                              shape=lambda a, t: (tuple(np.broadcast_shapes(a.shape, t.shape)),
                                                  _float_dtype(np.result_type(a.dtype, t.dtype))),
                              batch=leading_axes)


def _cofactor_derivative(a, t):
    """The Hessian of det at a applied to t (both (..., n, n)): d cof(a)[t]."""
    return apply(COFACTOR_DERIVATIVE, a, t)


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


LOGABSDET = defprim("logabsdet", lambda a: np.asarray(np.linalg.slogdet(a)[1]),
                    vjp=_logabsdet_vjp, jvp=_logabsdet_jvp, shape=_det_rule,
                    batch=leading_axes)
SLOGDET_SIGN = defprim("slogdet_sign", lambda a: np.asarray(np.linalg.slogdet(a)[0]),
                       vjp=lambda ct, out, a: (None,), jvp=lambda t, out, a: None,
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

# ------------------------------------------------------------- cholesky


def _cholesky_impl(a):
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        raise _linalg_error("cholesky", "symmetric positive-definite matrices",
                            "a matrix that is not positive definite", a.shape) from None


def _phi(x):
    """The lower triangle of x with its diagonal halved."""
    n = x.shape[-1]
    return multiply(x, _tril_mask(n, -1, x.dtype) + 0.5 * _eye(n, x.dtype))


def _cholesky_vjp(ct, out, a):
    # Murray (2016): Ā = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹, symmetrised, then read on the lower triangle.
    p = _phi(matmul(_T(out), ct))
    z = solve(_T(out), p)
    m = _T(solve(_T(out), _T(z)))
    return (_lower_reader_adjoint(m),)


def _cholesky_jvp(t, out, a):
    ds = _lower_reader_tangent(t[0])
    y = solve(out, ds)                 # L⁻¹ dS
    inner = _T(solve(out, _T(y)))      # L⁻¹ dS L⁻ᵀ
    return matmul(out, _phi(inner))


CHOLESKY = defprim("cholesky", _cholesky_impl, vjp=_cholesky_vjp, jvp=_cholesky_jvp,
                   shape=_square_rule("cholesky"),
                   batch=leading_axes)


def cholesky(a, *, upper: bool = False) -> Tensor:
    """The lower Cholesky factor L of a symmetric positive-definite matrix (a = L Lᵀ), batched.

    ``upper=True`` returns the upper factor U = Lᵀ (numpy 2's keyword).
    Reads only the lower triangle of ``a`` (the upper one with ``upper=True``),
    as ``np.linalg.cholesky``; its derivative with respect to the other strict
    triangle is zero. A matrix that is not positive definite raises
    :class:`ShapeError`.
    Shapes: (..., n, n) -> (..., n, n).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.cholesky(ad.Tensor([[4.0, 2.0], [2.0, 2.0]])).value
        array([[2., 0.],
               [1., 1.]])
    """
    _require_matrix("cholesky", _shape_of(a), square=True)
    if upper:   # numpy's upper factor reads the upper triangle: the lower factor of aᵀ, transposed
        return _T(apply(CHOLESKY, _T(a)))
    return apply(CHOLESKY, a)

# ----------------------------------------------------------------- eigh


def _eigh_impl(a):
    w, v = np.linalg.eigh(a)
    return _np_pack([w, v], a.shape[:-2])


def _eigh_rule(a):
    _require_matrix("eigh", a.shape, square=True)
    n = a.shape[-1]
    return tuple(a.shape[:-2]) + (n + n * n,), _float_dtype(a.dtype)


def _eigh_parts(packed, n):
    return _unpack(packed, tuple(packed.shape[:-1]), [(n,), (n, n)])


def _gap_reciprocal(w):
    """F[i, j] = 1/(w[j] - w[i]) off the diagonal, 0 on it and where two values are equal."""
    wj = reshape(w, tuple(w.shape[:-1]) + (1, w.shape[-1]))
    wi = reshape(w, tuple(w.shape) + (1,))
    return _safe_reciprocal(subtract(wj, wi))


def _eigh_vjp(ct, out, a):
    n = a.shape[-1]
    w, v = _eigh_parts(out, n)
    gw, gv = _eigh_parts(ct, n)
    f = _gap_reciprocal(w)
    inner = add(_diag_matrix(gw), multiply(f, matmul(_T(v), gv)))
    m = matmul(v, matmul(inner, _T(v)))
    return (_lower_reader_adjoint(m),)


def _eigh_jvp(t, out, a):
    n = a.shape[-1]
    w, v = _eigh_parts(out, n)
    p = matmul(_T(v), matmul(_lower_reader_tangent(t[0]), v))
    dw = _diag_part(p)
    dv = matmul(v, multiply(_gap_reciprocal(w), p))
    return _pack([dw, dv], tuple(out.shape[:-1]))


EIGH = defprim("eigh", _eigh_impl, vjp=_eigh_vjp, jvp=_eigh_jvp, shape=_eigh_rule,
               batch=leading_axes)


def eigh(a, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix (batched), as ``np.linalg.eigh``.

    Returns numpy 2's named tuple ``EighResult(eigenvalues, eigenvectors)``,
    ``(w, v)`` with a = v diag(w) vᵀ. One primitive
    computes both (packed, see the module docstring). Only the lower triangle is
    read (``UPLO='L'``; ``'U'`` reads the upper one, by transposing).
    Degenerate eigenvalues: the first derivative is exact for functions of the
    eigenvalues (second derivatives need distinct ones, see the module notes);
    eigenvector derivatives need distinct eigenvalues (the
    eigenvectors of a repeated eigenvalue are not unique; their coupling term is
    taken as zero).
    Shapes: (..., n, n) -> ((..., n), (..., n, n)).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> w, v = ad.linalg.eigh(ad.Tensor([[2.0, 0.0], [0.0, 1.0]]))
        >>> w.value
        array([1., 2.])
        >>> np.linalg.eigh(ad.Tensor([[2.0, 0.0], [0.0, 1.0]])).eigenvalues.value
        array([1., 2.])
    """
    shape = _shape_of(a)
    _require_matrix("eigh", shape, square=True)
    if UPLO not in ("L", "U"):
        raise ShapeError(f"eigh: Expect: UPLO 'L' or 'U'. Actual: {UPLO!r}")
    if UPLO == "U":
        a = _T(a)
    n = shape[-1]
    return EighResult(*_eigh_parts(apply(EIGH, a), n))

# ------------------------------------------------------------------ svd


def _svd_impl(a, *, full_matrices):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return _np_pack([u, s, vh], a.shape[:-2])


def _svd_cores(m, n, full_matrices):
    k = builtins.min(m, n)
    if full_matrices:
        return [(m, m), (k,), (n, n)]
    return [(m, k), (k,), (k, n)]


def _svd_rule(a, *, full_matrices):
    _require_matrix("svd", a.shape)
    m, n = a.shape[-2:]
    total = builtins.sum(int(np.prod(c)) for c in _svd_cores(m, n, full_matrices))
    return tuple(a.shape[:-2]) + (total,), _float_dtype(a.dtype)


def _svd_parts(packed, m, n, full_matrices):
    return _unpack(packed, tuple(packed.shape[:-1]), _svd_cores(m, n, full_matrices))


def _svd_check(m, n, full_matrices):
    if full_matrices and m != n:
        raise NotDifferentiableError(
            f"svd: full_matrices=True on a {m}x{n} matrix has extra singular vectors that are not "
            f"unique, so they have no derivative; use full_matrices=False")


def _svd_reciprocal_impl(s, proj, *, rule):
    # 1/s_i, for the terms (I - u uᵀ) g diag(1/s) of a non-square matrix's factors. At a
    # singular value that is 0 to working precision (numpy's matrix_rank tolerance) that
    # factor's column is not unique (any unit vector of a complement of dimension >= 2),
    # so it has no derivative: where the projected g of that column is nonzero, the VJP
    # refuses, and the JVP (which cannot tell whether u or vh is used at all: svdvals
    # runs through it too) gives NaN in that column; where it is zero, the term is 0.
    dtype = _float_dtype(np.result_type(s.dtype, proj.dtype))
    s = s.astype(dtype)
    eps = np.finfo(dtype).eps
    tol = builtins.max(proj.shape[-2:]) * eps * np.max(s, axis=-1, initial=0.0, keepdims=True)
    zero = s <= tol
    column = np.sqrt(np.sum(np.square(proj), axis=-2))
    used = zero & (column > 0)
    with np.errstate(divide="ignore"):
        inverse = np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, s))
    if used.any():
        if rule == "VJP":
            at = tuple(int(i) for i in np.argwhere(used)[0])
            raise UndefinedDerivativeError(
                f"svd: the derivative of a non-square matrix's U or Vh needs non-zero singular values. "
                f"Actual: singular value {at[-1]} is {float(s[at]):.3g} <= max(m, n)·eps·s_max = "
                f"{float(np.broadcast_to(tol, s.shape)[at]):.3g} (index {at} of S of shape {fmt(s.shape)}), "
                f"and the loss uses that singular vector: it is not unique at a rank-deficient matrix. The "
                f"singular values alone (svdvals, norm) stay differentiable there")
        inverse = np.where(used, np.nan, inverse)
    return inverse.astype(dtype)


SVD_RECIPROCAL = defprim(
    "svd_reciprocal", _svd_reciprocal_impl,
    vjp=lambda ct, out, s, proj, *, rule: (negative(multiply(ct, multiply(out, out))), None),
    jvp=lambda t, out, s, proj, *, rule: None if t[0] is None else negative(multiply(t[0], multiply(out, out))),
    shape=lambda s, proj, *, rule: (tuple(s.shape), _float_dtype(np.result_type(s.dtype, proj.dtype))),
    nondiff=(1,), batch=leading_axes)


def _svd_reciprocal(s, proj, rule):
    """1/s as a row (..., 1, k), refusing (VJP) or NaN (JVP) where s is 0 and ``proj`` uses it."""
    inverse = apply(SVD_RECIPROCAL, s, proj, rule=rule)
    return reshape(inverse, tuple(s.shape[:-1]) + (1, s.shape[-1]))


def _svd_vjp(ct, out, a, *, full_matrices):
    m, n = a.shape[-2:]
    _svd_check(m, n, full_matrices)
    k = builtins.min(m, n)
    u, s, vh = _svd_parts(out, m, n, full_matrices)
    gu, gs, gvh = _svd_parts(ct, m, n, full_matrices)
    v, gv = _T(vh), _T(gvh)
    s_row = reshape(s, tuple(s.shape[:-1]) + (1, k))
    s_col = reshape(s, tuple(s.shape) + (1,))
    f = _gap_reciprocal(multiply(s, s))
    utgu = matmul(_T(u), gu)
    vtgv = matmul(_T(v), gv)
    inner = multiply(multiply(f, subtract(utgu, _T(utgu))), s_row)
    inner = add(inner, _diag_matrix(gs))
    inner = add(inner, multiply(s_col, multiply(f, subtract(vtgv, _T(vtgv)))))
    ga = matmul(u, matmul(inner, vh))
    if m > k:   # (I - u uᵀ) gu diag(1/s) vᵀ
        proj = subtract(gu, matmul(u, utgu))
        ga = add(ga, matmul(multiply(proj, _svd_reciprocal(s, proj, "VJP")), vh))
    if n > k:   # u diag(1/s) gvᵀ (I - v vᵀ)
        proj = subtract(gv, matmul(v, vtgv))
        ga = add(ga, matmul(multiply(u, _svd_reciprocal(s, proj, "VJP")), _T(proj)))
    return (ga,)


def _svd_jvp(t, out, a, *, full_matrices):
    m, n = a.shape[-2:]
    _svd_check(m, n, full_matrices)
    k = builtins.min(m, n)
    da = t[0]
    u, s, vh = _svd_parts(out, m, n, full_matrices)
    v = _T(vh)
    s_row = reshape(s, tuple(s.shape[:-1]) + (1, k))
    s_col = reshape(s, tuple(s.shape) + (1,))
    f = _gap_reciprocal(multiply(s, s))
    dav = matmul(da, v)
    p = matmul(_T(u), dav)                       # uᵀ dA v
    ds = _diag_part(p)
    du = matmul(u, multiply(f, add(multiply(p, s_row), multiply(s_col, _T(p)))))
    dv = matmul(v, multiply(f, add(multiply(s_col, p), multiply(_T(p), s_row))))
    if m > k:
        proj = subtract(dav, matmul(u, p))
        du = add(du, multiply(proj, _svd_reciprocal(s, proj, "JVP")))
    if n > k:
        proj = subtract(matmul(_T(da), u), matmul(v, _T(p)))
        dv = add(dv, multiply(proj, _svd_reciprocal(s, proj, "JVP")))
    return _pack([du, ds, _T(dv)], tuple(out.shape[:-1]))


SVD = defprim("svd", _svd_impl, vjp=_svd_vjp, jvp=_svd_jvp, shape=_svd_rule,
              batch=leading_axes)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition a = u diag(s) vh (batched), as ``np.linalg.svd``.

    Returns numpy 2's named tuple ``SVDResult(U, S, Vh)``, or ``s`` alone with
    ``compute_uv=False``. One primitive computes the three factors (packed, see
    the module docstring). Derivatives of u and vh need distinct non-zero
    singular values; the singular values alone are differentiable wherever they
    are distinct. ``full_matrices=True`` (numpy's default) on a non-square
    matrix: value only (its extra columns are not unique); pass
    ``full_matrices=False`` to differentiate.
    Shapes: (..., m, n) -> (..., m, k), (..., k), (..., k, n) with k = min(m, n)
    (u (..., m, m) and vh (..., n, n) with full_matrices=True).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.svd(ad.Tensor([[3.0, 0.0], [0.0, -2.0]]), compute_uv=False).value
        array([3., 2.])
        >>> ad.linalg.svd(ad.Tensor([[3.0, 0.0], [0.0, -2.0]])).S.value
        array([3., 2.])
    """
    shape = _shape_of(a)
    _require_matrix("svd", shape)
    if hermitian:
        raise ShapeError("svd: Expect: hermitian=False (the general algorithm). Actual: hermitian=True")
    m, n = shape[-2:]
    full = bool(full_matrices) and compute_uv and m != n
    u, s, vh = _svd_parts(apply(SVD, a, full_matrices=full), m, n, full)
    return SVDResult(u, s, vh) if compute_uv else s


def svdvals(a) -> Tensor:
    """The singular values, descending (batched), as ``np.linalg.svdvals``.

    Shapes: (..., m, n) -> (..., min(m, n)).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.svdvals(ad.Tensor([[0.0, 2.0], [1.0, 0.0]])).value
        array([2., 1.])
    """
    return svd(a, compute_uv=False)

# ------------------------------------------------------------------- qr


def _qr_impl(a):
    q, r = np.linalg.qr(a)
    return _np_pack([q, r], a.shape[:-2])


def _qr_cores(m, n):
    k = builtins.min(m, n)
    return [(m, k), (k, n)]


def _qr_rule(a):
    _require_matrix("qr", a.shape)
    m, n = a.shape[-2:]
    k = builtins.min(m, n)
    return tuple(a.shape[:-2]) + (m * k + k * n,), _float_dtype(a.dtype)


def _copyltu(x):
    n = x.shape[-1]
    strict = multiply(x, _tril_mask(n, -1, x.dtype))
    return add(add(strict, _T(strict)), multiply(x, _eye(n, x.dtype)))


def _qr_full_rank_impl(r):
    """r (..., k, k), upper triangular, itself if it has full rank to working precision; else raise."""
    # A triangular block's smallest |r_ii| bounds its smallest singular value from above:
    # at or below k·eps·‖R‖_F (numpy's matrix_rank tolerance, in the Frobenius norm) it is
    # rank-deficient to working precision, Q is not a continuous function of A there, and
    # the solves with R in the rules would return rounding noise scaled by 1/r_ii instead
    # of raising. (Checked in a primitive, so that a program recorded on full-rank values
    # refuses too.)
    k = r.shape[-1]
    if r.size == 0:
        return r
    smallest = np.min(np.abs(np.diagonal(r, axis1=-2, axis2=-1)), axis=-1)
    tol = k * np.finfo(r.dtype).eps * np.sqrt(np.sum(np.square(r), axis=(-2, -1)))
    deficient = smallest <= tol
    if deficient.any():
        at = np.argwhere(deficient)[0] if deficient.ndim else ()
        where = f" (matrix {tuple(int(i) for i in at)} of the stack)" if len(at) else ""
        raise UndefinedDerivativeError(
            f"qr: the derivative of A = QR needs A's leading {k}x{k} block of full rank (R's diagonal "
            f"away from 0). Actual: min |R_ii| = {float(smallest[tuple(at)]):.3g} <= k·eps·‖R_kk‖_F "
            f"= {float(tol[tuple(at)]):.3g}{where}, R_kk of shape {fmt(r.shape)}: Q is not unique at a "
            f"rank-deficient A, so neither factor has a derivative there")
    return r


QR_FULL_RANK = defprim("qr_full_rank", _qr_full_rank_impl,
                       vjp=lambda ct, out, r: (ct,), jvp=lambda t, out, r: t[0],
                       shape=lambda r: (tuple(r.shape), r.dtype), batch=leading_axes)


def _qr_tall_vjp(q, r, gq, gr):
    """Ā for A = QR with A (m, n), m >= n (Walter & Lehmann; arXiv 2009.10071)."""
    r = apply(QR_FULL_RANK, r)
    mm = subtract(matmul(r, _T(gr)), matmul(_T(gq), q))
    b = add(gq, matmul(q, _copyltu(mm)))
    return _T(solve(r, _T(b)))                 # b R⁻ᵀ


def _qr_tall_jvp(q, r, da):
    """(dQ, dR) for A = QR with A (m, n), m >= n."""
    n = r.shape[-1]
    r = apply(QR_FULL_RANK, r)   # (the square R of a tall or square A; U of a wide one)
    dar = _T(solve(_T(r), _T(da)))             # dA R⁻¹
    c = matmul(_T(q), dar)
    low = multiply(c, _tril_mask(n, -1, c.dtype))
    omega = subtract(low, _T(low))
    c_up = subtract(c, omega)
    return subtract(dar, matmul(q, c_up)), matmul(c_up, r)


def _qr_vjp(ct, out, a):
    m, n = a.shape[-2:]
    q, r = _unpack(out, tuple(out.shape[:-1]), _qr_cores(m, n))
    gq, gr = _unpack(ct, tuple(ct.shape[:-1]), _qr_cores(m, n))
    if m >= n:
        return (_qr_tall_vjp(q, r, gq, gr),)
    # Wide: A = [X | Y], R = [U | V] with X = QU square and V = Qᵀ Y.
    u = getitem(r, (Ellipsis, slice(None), slice(0, m)))
    y = getitem(a, (Ellipsis, slice(None), slice(m, None)))
    gu = getitem(gr, (Ellipsis, slice(None), slice(0, m)))
    gv = getitem(gr, (Ellipsis, slice(None), slice(m, None)))
    gx = _qr_tall_vjp(q, u, add(gq, matmul(y, _T(gv))), gu)
    gy = matmul(q, gv)
    return (concatenate([gx, gy], -1),)


def _qr_jvp(t, out, a):
    m, n = a.shape[-2:]
    da = t[0]
    q, r = _unpack(out, tuple(out.shape[:-1]), _qr_cores(m, n))
    batch = tuple(out.shape[:-1])
    if m >= n:
        dq, dr = _qr_tall_jvp(q, r, da)
        return _pack([dq, dr], batch)
    u = getitem(r, (Ellipsis, slice(None), slice(0, m)))
    y = getitem(a, (Ellipsis, slice(None), slice(m, None)))
    dx = getitem(da, (Ellipsis, slice(None), slice(0, m)))
    dy = getitem(da, (Ellipsis, slice(None), slice(m, None)))
    dq, du = _qr_tall_jvp(q, u, dx)
    dv = add(matmul(_T(dq), y), matmul(_T(q), dy))
    return _pack([dq, concatenate([du, dv], -1)], batch)


QR = defprim("qr", _qr_impl, vjp=_qr_vjp, jvp=_qr_jvp, shape=_qr_rule,
             batch=leading_axes)


def qr(a, mode: str = "reduced"):
    """QR decomposition a = q r with q orthonormal columns and r upper triangular (batched).

    As ``np.linalg.qr``: mode 'reduced' (default) returns numpy 2's named tuple
    ``QRResult(Q, R)``, ``(q, r)`` with
    q (..., m, k), r (..., k, n), k = min(m, n); 'r' returns r alone;
    'complete' is accepted where it equals 'reduced' (m <= n). One primitive
    computes both factors (packed). Differentiable where the leading k×k block
    of a has full rank (r's diagonal is non-zero); at a rank-deficient block the
    derivative raises :class:`UndefinedDerivativeError` (as PyTorch and JAX
    leave it undefined).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> q, r = ad.linalg.qr(ad.Tensor([[3.0, 1.0], [4.0, 2.0]]))
        >>> np.allclose((q @ r).value, [[3.0, 1.0], [4.0, 2.0]])
        True
        >>> np.linalg.qr(ad.Tensor([[3.0, 1.0], [4.0, 2.0]])).R.shape
        (2, 2)
    """
    shape = _shape_of(a)
    _require_matrix("qr", shape)
    m, n = shape[-2:]
    if mode not in ("reduced", "r", "complete") or (mode == "complete" and m > n):
        raise ShapeError(f"qr: Expect: mode 'reduced', 'r', or 'complete' for a matrix with m <= n. "
                         f"Actual: mode={mode!r} for shape {fmt(shape)}")
    q, r = _unpack(apply(QR, a), tuple(shape[:-2]), _qr_cores(m, n))
    return r if mode == "r" else QRResult(q, r)

# ----------------------------------------------------------------- pinv


def _pinv_rule(a):
    _require_matrix("pinv", a.shape)
    return tuple(a.shape[:-2]) + (a.shape[-1], a.shape[-2]), _float_dtype(a.dtype)


def _pinv_vjp(ct, out, a):
    # Ā = -Xᵀ G Xᵀ + (I - A X) Gᵀ X Xᵀ + Xᵀ X Gᵀ (I - X A), X = A⁺ (constant rank).
    x, g = out, ct
    m, n = a.shape[-2:]
    ax = subtract(_eye(m, x.dtype), matmul(a, x))
    xa = subtract(_eye(n, x.dtype), matmul(x, a))
    term1 = negative(matmul(_T(x), matmul(g, _T(x))))
    term2 = matmul(ax, matmul(_T(g), matmul(x, _T(x))))
    term3 = matmul(matmul(_T(x), x), matmul(_T(g), xa))
    return (add(add(term1, term2), term3),)


def _pinv_jvp(t, out, a):
    # dX = -X dA X + X Xᵀ dAᵀ (I - A X) + (I - X A) dAᵀ Xᵀ X.
    x, da = out, t[0]
    m, n = a.shape[-2:]
    ax = subtract(_eye(m, x.dtype), matmul(a, x))
    xa = subtract(_eye(n, x.dtype), matmul(x, a))
    term1 = negative(matmul(x, matmul(da, x)))
    term2 = matmul(matmul(x, _T(x)), matmul(_T(da), ax))
    term3 = matmul(xa, matmul(_T(da), matmul(_T(x), x)))
    return add(add(term1, term2), term3)


# numpy's own tolerance (rcond=None) drops only singular values that are zero to
# rounding: the rank is constant nearby and the Golub–Pereyra formula is exact.
PINV = defprim("pinv", np.linalg.pinv, vjp=_pinv_vjp, jvp=_pinv_jvp, shape=_pinv_rule,
              batch=leading_axes)


def _truncated_pinv(a, rcond):
    """A⁺ from the singular values above ``rcond`` · the largest, as numpy computes it.

    A larger ``rcond`` drops non-zero singular values: the result is then not the
    pseudo-inverse of a matrix of constant rank, and its derivative has terms
    1/(sᵢ² − sⱼ²) between kept and dropped values that the constant-rank formula
    leaves out. Through ``svd`` it gets them. Which values are kept follows the
    data (a recorded comparison), and carries no derivative.
    """
    u, s, vh = svd(a, full_matrices=False)
    keep = greater(s, multiply(max(s, axis=-1, keepdims=True), rcond))
    inv_s = where(keep, divide(1.0, where(keep, s, 1.0)), 0.0)
    return matmul(multiply(_T(vh), reshape(inv_s, tuple(inv_s.shape[:-1]) + (1, inv_s.shape[-1]))), _T(u))


def _hermitian_part(a):
    """The symmetric matrix of a's lower triangle: what numpy's ``hermitian=True`` reads."""
    lower = np.tril(np.ones(_shape_of(a)[-2:], _float_dtype(_dtype_of(a))))
    return add(multiply(a, lower), _T(multiply(a, lower - _eye(len(lower), lower.dtype))))


def pinv(a, rcond=None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse (batched), as ``np.linalg.pinv``.

    Shapes: (..., m, n) -> (..., n, m). With numpy's tolerance (``rcond=None``)
    the derivative is the constant-rank formula (Golub & Pereyra 1973): exact
    where small perturbations keep the rank. An explicit ``rcond`` may drop
    non-zero singular values: the pseudo-inverse is then computed, and
    differentiated, through ``svd`` (distinct singular values needed).
    ``hermitian=True`` reads the lower triangle only, as numpy's.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.pinv(ad.Tensor([[1.0, 0.0], [0.0, 0.0]])).value
        array([[1., 0.],
               [0., 0.]])
    """
    shape = _shape_of(a)
    _require_matrix("pinv", shape, square=bool(hermitian))
    if hermitian:
        a = _hermitian_part(a)
    if rcond is None or 0 in shape[-2:]:
        return apply(PINV, a)
    return _truncated_pinv(a, float(parameter(rcond, "pinv's rcond")))

# ----------------------------------------- composites: norm, matrix_power, trace


def norm(x, ord=None, axis=None, keepdims: bool = False) -> Tensor:  # noqa: A002 - numpy's name
    """Vector and matrix norms with every ``ord`` of ``np.linalg.norm`` (batched over other axes).

    A composite of recorded primitives. Vector (1-D, or an int ``axis``):
    ord None/2 (Euclidean), inf, -inf, 0 (count of non-zeros, no derivative),
    1, and any other p: (Σ|x|^p)^(1/p). Matrix (2-D with ``axis=None``, or a
    2-tuple ``axis``): None/'fro' (Frobenius), 'nuc' (sum of singular values),
    2 / -2 (largest / smallest singular value), 1 / -1 (max / min column sum of
    |x|), inf / -inf (max / min row sum). With ``ord=None`` and ``axis=None``
    any operand gets the 2-norm of its flattened entries, as numpy.
    Derivatives: |x|'(0) = 0; max/min split ties evenly; a vector p-norm (p >= 1)
    of a zero slice has gradient 0 (a subgradient).
    Shapes: (*s) -> s without the normed axes (kept as 1 with ``keepdims``).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> float(ad.linalg.norm(ad.Tensor([3.0, 4.0])).value)
        5.0
        >>> float(ad.linalg.norm(ad.Tensor([[1.0, -2.0], [3.0, 4.0]]), 1).value)
        6.0
    """
    if isinstance(x, (list, tuple)) and any(isinstance(v, Tensor) for v in x):
        x = stack(list(x))      # numpy would convert the list, losing the derivatives
    x = _inexact(x)             # the matrix norms' |x| sums would wrap in an integer type
    shape = _shape_of(x)
    nd = len(shape)
    matrix_axes = (tuple(range(nd)) if axis is None and nd == 2 and ord is not None
                   else tuple(axis) if isinstance(axis, (tuple, list)) and len(axis) == 2 else None)
    if matrix_axes is None or ord in (None, "fro"):
        # Vector norms and the Frobenius norm: one implementation, ad.norm's.
        return vector_or_frobenius_norm(x, ord, axis, keepdims)
    axes = tuple(normalize_axis("norm", a, nd) for a in matrix_axes)
    if axes[0] == axes[1]:
        raise ShapeError(f"norm: Expect: two different axes for a matrix norm. Actual: axis={axis!r}")
    out = _matrix_norm(x, ord, axes, nd)
    if keepdims:
        out = reshape(out, tuple(1 if i in axes else d for i, d in enumerate(shape)))
    return out


def _dtype_of(x):
    return x.dtype if isinstance(x, (Tensor, np.ndarray)) else np.asarray(x).dtype


def _matrix_norm(x, ord, axes, nd):
    row, col = axes
    if ord is None or ord == "fro":
        return sqrt(sum(multiply(x, x), axes))
    if ord in ("nuc", 2, -2):
        # Move the two axes last, then the singular values of each matrix.
        rest = [i for i in range(nd) if i not in axes]
        s = svdvals(transpose(x, tuple(rest) + (row, col)))
        if ord == "nuc":
            return sum(s, -1)
        return max(s, -1) if ord == 2 else min(s, -1)
    if isinstance(ord, str):
        raise ShapeError(f"norm: Expect: ord None, 'fro', 'nuc', 1, -1, 2, -2, inf or -inf for a matrix "
                         f"norm. Actual: ord={ord!r}")
    if ord in (1, -1):
        sums = sum(abs(x), row, keepdims=True)   # column sums
        pick = max if ord == 1 else min
        return reshape(pick(sums, (row, col)), _reduced(x, axes))
    if ord in (np.inf, -np.inf):
        sums = sum(abs(x), col, keepdims=True)   # row sums
        pick = max if ord == np.inf else min
        return reshape(pick(sums, (row, col)), _reduced(x, axes))
    raise ShapeError(f"norm: Expect: ord None, 'fro', 'nuc', 1, -1, 2, -2, inf or -inf for a matrix "
                     f"norm. Actual: ord={ord!r}")


def _reduced(x, axes):
    return tuple(d for i, d in enumerate(_shape_of(x)) if i not in axes)


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


def trace(x, *, offset: int = 0, dtype=None) -> Tensor:
    """Sum of the diagonal of the last two axes (batched), as ``np.linalg.trace``.

    ``offset`` picks a diagonal above (> 0) or below (< 0) the main one.
    ``ad.trace(x, offset, -2, -1)``, the one trace (a getitem summed).
    Shapes: (..., m, n) -> (...).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> float(ad.linalg.trace(ad.Tensor([[1.0, 2.0], [3.0, 4.0]])).value)
        5.0
    """
    shape = _shape_of(x)
    _require_matrix("trace", shape)
    out = numpy_trace(x, offset, -2, -1)
    return out if dtype is None else astype(out, dtype)


# ------------------------------------------- more of numpy.linalg, as composites


def eigvalsh(a, UPLO: str = "L") -> Tensor:
    """The eigenvalues (ascending) of a symmetric matrix, batched, as ``np.linalg.eigvalsh``.

    The first factor of :func:`eigh`; exact first derivatives at repeated eigenvalues too
    (second derivatives need distinct eigenvalues).
    Shapes: (..., n, n) -> (..., n).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.eigvalsh(ad.Tensor([[2.0, 1.0], [1.0, 2.0]])).value
        array([1., 3.])
    """
    return eigh(a, UPLO)[0]


def matrix_norm(x, *, keepdims: bool = False, ord="fro") -> Tensor:  # noqa: A002 - numpy's name
    """The matrix norm of the last two axes (batched), as ``np.linalg.matrix_norm``: :func:`norm` with axis (-2, -1).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.matrix_norm(ad.Tensor(np.ones((2, 2, 2)))).value
        array([2., 2.])
    """
    return norm(x, ord, axis=(-2, -1), keepdims=keepdims)


def vector_norm(x, *, axis=None, keepdims: bool = False, ord=2) -> Tensor:  # noqa: A002 - numpy's name
    """The vector norm over ``axis`` (all entries when None, any ndim), as ``np.linalg.vector_norm``.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> float(ad.linalg.vector_norm(ad.Tensor(np.full((2, 2), 0.5))).value)
        1.0
    """
    shape = _shape_of(x)
    if axis is None:
        out = norm(reshape(x, (-1,)), ord, axis=0)
        return reshape(out, (1,) * len(shape)) if keepdims else out
    if isinstance(axis, (tuple, list)) and len(axis) != 1:
        axes = tuple(normalize_axis("vector_norm", a, len(shape)) for a in axis)
        rest = tuple(i for i in range(len(shape)) if i not in axes)
        moved = reshape(transpose(x, rest + axes), tuple(shape[i] for i in rest) + (-1,))
        out = norm(moved, ord, axis=-1)
        if keepdims:
            out = reshape(out, tuple(1 if i in axes else d for i, d in enumerate(shape)))
        return out
    return norm(x, ord, axis=axis if not isinstance(axis, (tuple, list)) else axis[0], keepdims=keepdims)


def multi_dot(arrays) -> Tensor:
    """The product of a chain of matrices, as ``np.linalg.multi_dot`` (a chain of matmuls, left to right).

    The first array may be 1-D (a row vector) and the last 1-D (a column vector).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.multi_dot([ad.Tensor(np.eye(2)), ad.Tensor([[1.0], [2.0]]), ad.Tensor([[3.0]])]).value
        array([[3.],
               [6.]])
    """
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ShapeError(f"multi_dot: Expect: at least two arrays. Actual: {len(arrays)}")
    # As numpy: only the first and the last may be vectors; a vector in the middle, or a
    # stack of matrices, would make a different product.
    for i, x in enumerate(arrays):
        nd = len(_shape_of(x))
        if nd != 2 and not (nd == 1 and i in (0, len(arrays) - 1)):
            raise ShapeError(f"multi_dot: Expect: 2-D arrays (the first and last may be 1-D). "
                             f"Actual: array {i} of shape {fmt(_shape_of(x))}")
    out = arrays[0]
    for nxt in arrays[1:]:
        out = matmul(out, nxt)
    return out


def cond(x, p=None) -> Tensor:
    """The condition number (batched), as ``np.linalg.cond``.

    p None/2: largest / smallest singular value; -2: the reverse; otherwise
    norm(x, p) · norm(inv(x), p) of square matrices. As numpy, a singular matrix
    has cond inf (for p='nuc' too, where numpy raises "SVD did not converge"
    from the inverse it could not form), and one holding a NaN has NaN; empty
    matrices are refused. Shapes: (..., m, n) -> (...).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> float(ad.linalg.cond(ad.Tensor([[2.0, 0.0], [0.0, 0.5]])).value)
        4.0
    """
    shape = _shape_of(x)
    _require_matrix("cond", shape)
    if shape[-1] * shape[-2] == 0 and int(np.prod(shape)) == 0:
        raise ShapeError(f"cond: Expect: non-empty matrices (numpy: not defined on empty arrays). "
                         f"Actual: shape {fmt(shape)}")
    # As numpy's: a singular matrix (0/0 for the zero matrix's ratio; an inverse that does not
    # exist, not an error) has cond inf, unless the matrix itself holds a NaN (then NaN).
    with np.errstate(divide="ignore", invalid="ignore"):
        if p is None or (not isinstance(p, str) and p in (2, -2)):
            s = svdvals(x)
            big, small = max(s, -1), min(s, -1)
            num, den = (big, small) if p != -2 else (small, big)
            zero = equal(den, 0.0)
            # (the denominator of a singular matrix replaced: 0 · 1/0 in the quotient's VJP was NaN)
            return where(zero, math.inf, divide(num, where(zero, 1.0, den)))
        _require_matrix("cond", shape, square=True)
        inverse = apply(INV, x, singular="nan")
        singular = any_along(isnan(inverse), (-2, -1))
        # The singular ones' NaN inverse is kept out of the norm (numpy's 'nuc' raised on it,
        # "SVD did not converge") and out of the regular ones' gradient.
        inverse = where(reshape(singular, tuple(singular.shape) + (1, 1)), 0.0, inverse)
        r = multiply(norm(x, p, axis=(-2, -1)), norm(inverse, p, axis=(-2, -1)))
        return where(singular, where(any_along(isnan(x), (-2, -1)), math.nan, math.inf), r)


def diagonal(x, *, offset: int = 0) -> Tensor:
    """The ``offset`` diagonal of the last two axes (batched), as ``np.linalg.diagonal``: ``ad.diagonal(x, offset, -2, -1)``.

    Shapes: (..., m, n) -> (..., d).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.diagonal(ad.Tensor([[1.0, 2.0], [3.0, 4.0]])).value
        array([1., 4.])
    """
    _require_matrix("diagonal", _shape_of(x))
    return numpy_diagonal(x, offset, -2, -1)


def matrix_transpose(x) -> Tensor:
    """The last two axes exchanged (batched), as ``np.linalg.matrix_transpose``.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.matrix_transpose(ad.Tensor(np.zeros((4, 2, 3)))).shape
        (4, 3, 2)
    """
    _require_matrix("matrix_transpose", _shape_of(x))
    return _T(x)


def vecdot(x1, x2, *, axis: int = -1) -> Tensor:
    """The dot product of vectors along ``axis``, broadcasting the rest, as ``np.linalg.vecdot`` (real).

    Shapes: (..., n), (..., n) -> (...).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> float(ad.linalg.vecdot(ad.Tensor([1.0, 2.0]), ad.Tensor([3.0, 4.0])).value)
        11.0
    """
    return sum(multiply(x1, x2), axis)


def outer(x1, x2) -> Tensor:
    """The outer product of two vectors, as ``np.linalg.outer`` (a broadcast multiply).

    Shapes: (m,), (n,) -> (m, n).

    Example:
        >>> import autograd_dag as ad
        >>> ad.linalg.outer(ad.Tensor([1.0, 2.0]), ad.Tensor([3.0, 4.0])).value
        array([[3., 4.],
               [6., 8.]])
    """
    s1, s2 = _shape_of(x1), _shape_of(x2)
    if len(s1) != 1 or len(s2) != 1:
        raise ShapeError(f"outer: Expect: two vectors. Actual: shapes {fmt(s1)} and {fmt(s2)}")
    return multiply(reshape(x1, s1 + (1,)), reshape(x2, (1,) + s2))


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


def lstsq(a, b, rcond=None):
    """The least-squares solution of a x = b, as ``np.linalg.lstsq``: ``(x, residuals, rank, s)``.

    x = pinv(a) b (the minimum-norm solution, differentiable where the rank is
    constant); residuals are the squared residual norms per column when a has
    full column rank and more rows than columns (else empty); rank is an int
    (no derivative); s the singular values. Inside ``jit``, ``trace`` or
    ``vmap`` (a computed from their input) the rank is a recorded int64 Tensor
    that follows the data, and the residuals of a tall a are NaN where numpy
    would return none (a rank-deficient a).
    Shapes: a (m, n), b (m,) or (m, k).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> x = ad.linalg.lstsq(ad.Tensor([[1.0], [1.0]]), ad.Tensor([1.0, 3.0]))[0]
        >>> x.value
        array([2.])
    """
    sa, sb = _shape_of(a), _shape_of(b)
    if len(sa) != 2 or len(sb) not in (1, 2) or sb[0] != sa[0]:
        raise ShapeError(f"lstsq: Expect: a (m, n) and b (m,) or (m, k). Actual: a {fmt(sa)}, b {fmt(sb)}")
    pinv_a = pinv(a) if rcond is None else pinv(a, rcond=rcond)
    x = matmul(pinv_a, b)
    s = svdvals(a)
    m, n = sa
    if traced(a):
        # Inside jit, trace or vmap, a's numbers are this call's only: the rank is
        # recorded (it follows the data), and so is whether residuals exist, as NaN
        # where numpy returns none (a rank-deficient a); reading the numbers here froze
        # the first call's rank into every later call.
        rank = _recorded_rank(s, m, n, rcond)
    else:
        a_value = a.value if isinstance(a, Tensor) else np.asarray(a)
        rank = int(np.linalg.matrix_rank(a_value, tol=None if rcond is None else
                                         rcond * np.max(np.linalg.svd(a_value, compute_uv=False), initial=0.0)))
    if m > n and (isinstance(rank, Tensor) or rank == n):
        r = subtract(matmul(a, x), b)
        residuals = sum(multiply(r, r), 0)
        if len(sb) == 1:
            residuals = reshape(residuals, (1,))
        if isinstance(rank, Tensor):
            residuals = where(equal(rank, n), residuals, np.nan)
    else:
        residuals = Tensor(np.zeros((0,), dtype=_float_dtype(_dtype_of(a))))
    return x, residuals, rank, s


def _recorded_rank(s, m, n, rcond):
    """The number of singular values above numpy's lstsq tolerance, by recorded operations (an int64 Tensor)."""
    if builtins.min(m, n) == 0:
        return Tensor(np.zeros((), np.int64))
    ratio = np.finfo(_float_dtype(s.dtype)).eps * builtins.max(m, n) if rcond is None else float(rcond)
    kept = greater(s, multiply(max(s, -1, keepdims=True), ratio))
    return sum(astype(kept, np.int64), -1)
