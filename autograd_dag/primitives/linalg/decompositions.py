"""Decompositions: cholesky, eigh (eigvalsh), svd (svdvals), qr; pinv and lstsq, made from the SVD.

Every function is batched over leading axes, as numpy's: an operand of shape
(..., m, n) is a stack of matrices.

Design of the decompositions with several outputs (eigh, svd, qr): a
primitive returns one array, so each decomposition is **one primitive whose
output packs its factors**, flattened and concatenated along a last axis
(shape (..., total)). The public function splits the packed array with
``getitem`` and ``reshape`` (recorded, linear, differentiable), so the
decomposition runs once and each factor is an ordinary Tensor. The VJP gets
the packed cotangent, splits it the same way, and applies the factor
formulas; the JVP returns the packed tangent.

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
  non-square matrix adds extra columns of u (rows of vh), an arbitrary basis of a complement:
  a loss that does not use them (S, u[:, :k]) is differentiated as with the thin SVD (PyTorch's
  convention; JAX refuses), a VJP through them raises :class:`UndefinedDerivativeError`, and
  the JVP gives NaN there.
* ``qr`` (mode 'reduced', 'r', or 'complete' for a wide or square matrix) needs
  a full-rank leading square block: where it is rank-deficient to working
  precision (min |r_ii| <= k·eps·‖R_kk‖_F, R_kk the k×k block, k = min(m, n)) the
  derivative raises :class:`UndefinedDerivativeError`, as Q is not unique there.
* ``pinv``'s derivative is the constant-rank formula (Golub & Pereyra) with numpy's
  tolerance; an explicit ``rcond`` goes through ``svd``.
"""

from __future__ import annotations

import builtins

import numpy as np

from ...core import Tensor, apply, parameter, traced
from ...errors import ShapeError, UndefinedDerivativeError
from ..elementwise import add, astype, divide, equal, greater, multiply, negative, subtract, where
from ..indexing import concatenate, getitem
from ..reductions import max
from ..batch import leading_axes
from ..registry import defprim
from ..shapes import fmt
from ..structure import reshape, sum
from .base import (EighResult, QRResult, SVDResult, _diag_matrix, _diag_part, _dtype_of, _eye, _float_dtype,
                   _linalg_error, _lower_reader_adjoint, _lower_reader_tangent, _np_pack, _pack,
                   _require_matrix, _safe_reciprocal, _shape_of, _square_rule, _T, _tril_mask, _unpack)
from .products import matmul
from .solves import solve


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


# Hand-written pair: LAPACK's cholesky has no composite to derive from; closed forms in L and two solves.
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


# Hand-written pair: LAPACK's eigh has no composite to derive from; closed forms in the factors, O(n³).
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


def _complement_unused_impl(g_extra, g_thin, *, factor):
    # The cotangent of the extra columns of u (rows of vh) that full_matrices=True adds to a
    # non-square matrix's factors: any orthonormal basis of a complement, not a function of a.
    # A loss that does not read them (S, or u[:, :k]) has a derivative; one that does, none.
    if np.any(g_extra != 0):
        at = tuple(int(i) for i in np.argwhere(g_extra != 0)[0])
        raise UndefinedDerivativeError(
            f"svd: full_matrices=True gives a non-square matrix's {factor} extra "
            f"{'columns' if factor == 'u' else 'rows'} beyond min(m, n), an arbitrary basis of a "
            f"complement that has no derivative, and the loss uses them (nonzero cotangent at index {at} "
            f"of those). Use full_matrices=False, or only the first min(m, n) of them")
    return g_thin.view()


# Hand-written pair: passes g_thin through (identity rules) after refusing a used g_extra (nondiff).
SVD_COMPLEMENT_UNUSED = defprim(
    "svd_complement_unused", _complement_unused_impl,
    vjp=lambda ct, out, g_extra, g_thin, *, factor: (None, ct),
    jvp=lambda t, out, g_extra, g_thin, *, factor: t[1],
    shape=lambda g_extra, g_thin, *, factor: (tuple(g_thin.shape), g_thin.dtype),
    nondiff=(0,), batch=leading_axes)


def _thin_factors(u, vh, gu, gvh, k):
    """u, vh and their cotangents cut to the first k = min(m, n) columns of u and rows of vh.

    The cut-off part of a cotangent must be zero (checked when the VJP runs: ``svd_complement_unused``).
    """
    cut_u, extra_u = (Ellipsis, slice(None), slice(None, k)), (Ellipsis, slice(None), slice(k, None))
    cut_vh, extra_vh = (Ellipsis, slice(None, k), slice(None)), (Ellipsis, slice(k, None), slice(None))
    gu = apply(SVD_COMPLEMENT_UNUSED, getitem(gu, extra_u), getitem(gu, cut_u), factor="u")
    gvh = apply(SVD_COMPLEMENT_UNUSED, getitem(gvh, extra_vh), getitem(gvh, cut_vh), factor="vh")
    return getitem(u, cut_u), getitem(vh, cut_vh), gu, gvh


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


# Hand-written pair: 1/s that refuses a used zero singular value; rules −ct·out² on s only (proj is nondiff).
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
    k = builtins.min(m, n)
    u, s, vh = _svd_parts(out, m, n, full_matrices)
    gu, gs, gvh = _svd_parts(ct, m, n, full_matrices)
    if full_matrices and m != n:   # as PyTorch: the derivative of what the thin SVD has
        u, vh, gu, gvh = _thin_factors(u, vh, gu, gvh, k)
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
    k = builtins.min(m, n)
    da = t[0]
    u, s, vh = _svd_parts(out, m, n, full_matrices)
    if full_matrices and m != n:   # the thin factors' tangents; the extra columns' are NaN (undefined)
        u, vh = getitem(u, (Ellipsis, slice(None), slice(None, k))), getitem(vh, (Ellipsis, slice(None, k), slice(None)))
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
    dvh = _T(dv)
    if full_matrices and m != n:
        du, dvh = _undefined_extra(du, m - k, axis=-1), _undefined_extra(dvh, n - k, axis=-2)
    return _pack([du, ds, dvh], tuple(out.shape[:-1]))


def _undefined_extra(d, count, axis):
    """``d`` with ``count`` NaN columns (axis −1) or rows (axis −2) appended: the extra factor part's tangent."""
    if count == 0:
        return d
    shape = list(d.shape)
    shape[axis] = count
    return concatenate([d, np.full(tuple(shape), np.nan, d.dtype)], axis=axis)


# Hand-written pair: LAPACK's svd has no composite to derive from; closed forms in the factors, O(mn·k).
SVD = defprim("svd", _svd_impl, vjp=_svd_vjp, jvp=_svd_jvp, shape=_svd_rule,
              batch=leading_axes)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition a = u diag(s) vh (batched), as ``np.linalg.svd``.

    Returns numpy 2's named tuple ``SVDResult(U, S, Vh)``, or ``s`` alone with
    ``compute_uv=False``. One primitive computes the three factors (packed, see
    the module docstring). Derivatives of u and vh need distinct non-zero
    singular values; the singular values alone are differentiable wherever they
    are distinct. ``full_matrices=True`` (numpy's default) on a non-square
    matrix: a loss using S or the first min(m, n) columns of u (rows of vh) is
    differentiated; one using the extra ones (not unique) is refused when the
    derivative runs (``UndefinedDerivativeError``).
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


def _qr_full_rank_impl(x, r):
    """x itself where r (..., k, k), upper triangular, has full rank to working precision; else raise."""
    # A triangular block's smallest |r_ii| bounds its smallest singular value from above:
    # at or below k·eps·‖R‖_F (numpy's matrix_rank tolerance, in the Frobenius norm) it is
    # rank-deficient to working precision, Q is not a continuous function of A there, and
    # the solves with R in the rules would return rounding noise scaled by 1/r_ii instead
    # of raising. (Checked in a primitive, so that a program recorded on full-rank values
    # refuses too.)
    k = r.shape[-1]
    if r.size == 0:
        return x
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
    return x


# The identity in x, checking r (nondiff): linear, declared by its transpose (itself), so the derived JVP
# checks r as the VJP does.
QR_FULL_RANK = defprim("qr_full_rank", _qr_full_rank_impl,
                       transpose=(lambda ct, x, r: apply(QR_FULL_RANK, ct, r), None), nondiff=(1,),
                       shape=lambda x, r: (tuple(x.shape), x.dtype), batch=leading_axes)


def _qr_tall_vjp(q, r, gq, gr):
    """Ā for A = QR with A (m, n), m >= n (Walter & Lehmann; arXiv 2009.10071)."""
    r = apply(QR_FULL_RANK, r, r)
    mm = subtract(matmul(r, _T(gr)), matmul(_T(gq), q))
    b = add(gq, matmul(q, _copyltu(mm)))
    return _T(solve(r, _T(b)))                 # b R⁻ᵀ


def _qr_tall_jvp(q, r, da):
    """(dQ, dR) for A = QR with A (m, n), m >= n."""
    n = r.shape[-1]
    r = apply(QR_FULL_RANK, r, r)   # (the square R of a tall or square A; U of a wide one)
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


# Hand-written pair: LAPACK's qr has no composite to derive from; closed forms in Q, R and a triangular solve.
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
# Hand-written pair: no composite to derive from (an SVD inside numpy); Golub–Pereyra's closed form in A⁺, matmuls.
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
