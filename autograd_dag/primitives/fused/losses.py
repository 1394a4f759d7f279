"""Softmax cross-entropy against class indices: one primitive forward, one backward.

``softmax_cross_entropy(z, t)`` is lse(z) − z[t] along the last axis, row by
row (``nn.functional.cross_entropy`` with class indices). Written with
logsumexp, take_along_axis and subtract it made four arrays of z's size on
the way back (z − lse, its exponential, that times the cotangent, the
scattered one-hot) and a fifth for their sum; its VJP here is one primitive,
``softmax_cross_entropy_grad(ct, z, loss, t)`` = (softargmax(z) − onehot(t))·ct,
that makes one: exp(z − lse) in place, minus 1 at each row's class, times ct.
Both work on the shifted scores z − c (c the maximum): log Σ exp(z − c) is read
back from the loss as loss + (z[t] − c), so the sum is not taken again, and
lse itself (of z's magnitude, and its rounding) is never formed. The backward
primitive has its own derivative rules (in Tensor operations), so second
derivatives go through it like any other.
"""

from __future__ import annotations

import numpy as np

from ...core import Tensor, apply
from ...errors import ShapeError
from ..batch import materialize
from ..elementwise import add, multiply, subtract
from ..numeric import _check_along, take_along_axis
from ..reductions import _float_dtype
from ..registry import defprim
from ..rowsplit import run_rows, splits
from ..shapes import fmt
from ..structure import reshape, sum
from .softmax import _common_shift, _row_sums, _shifted, _softargmax_jacobian, softargmax


def _check(name: str, z_shape, idx) -> None:
    if len(z_shape) < 1 or z_shape[-1] == 0:
        raise ShapeError(f"{name}: Expect: scores with a non-empty class axis (..., C). Actual: shape "
                         f"{fmt(z_shape)}")
    if tuple(idx.shape) != tuple(z_shape[:-1]):
        raise ShapeError(f"{name}: Expect: class indices of shape {fmt(z_shape[:-1])} for scores of shape "
                         f"{fmt(z_shape)}. Actual: indices of shape {fmt(idx.shape)}")


def _column(idx: np.ndarray) -> np.ndarray:
    return idx[..., None]


def _log_sum(e: np.ndarray) -> np.ndarray:
    """log Σ exp(e) over the last axis, kept as size 1, for e = z − c already shifted (e is not changed)."""
    with np.errstate(divide="ignore"):  # an all −inf row: −inf
        return np.log(_row_sums(np.exp(e), (e.ndim - 1,)))


# Both directions work on the shifted scores z − c and never form lse = c + log Σ exp(z − c) itself:
# at |z| ~ 1e4 in float32, lse carries an absolute rounding error of ~5e-4 (its ulp), which
# lse − z[t] and exp(z − lse) passed on (gradients off by 3e-4 relative; PyTorch's by 1e-7).


def _gathered(a, col):
    """``np.take_along_axis(a, col, -1)``: the entries at ``col`` on the last axis, copied.

    The same gather done by one fancy index over the rows of a contiguous ``a`` (every loss of every
    step: np.take_along_axis builds an index array per axis in Python each call).
    """
    if (type(a) is np.ndarray and type(col) is np.ndarray and a.ndim > 1 and a.shape[-1] and a.flags.c_contiguous
            and col.shape == a.shape[:-1] + (1,) and col.dtype.kind in "iu"):
        rows = a.reshape(-1, a.shape[-1])
        return rows[np.arange(rows.shape[0])[:, None], col.reshape(-1, 1)].reshape(col.shape)
    return np.take_along_axis(a, col, -1)


def _ce_impl(z, idx):
    _check("softmax_cross_entropy", z.shape, idx)
    col = _column(idx)
    _check_along("softmax_cross_entropy", z.shape, col, z.ndim - 1, z.shape[-1])
    z = z if np.issubdtype(z.dtype, np.inexact) else z.astype(np.float64)
    c = _common_shift(z, z)
    if c is not None and c == 0:  # no shift: exp of z itself, in one pass (e is this call's own)
        picked, e = _gathered(z, col), np.exp(z)
    else:
        e, _ = _shifted(z, (-1,), 1.0, common=c)
        picked = _gathered(e, col)
        np.exp(e, out=e)  # (e is this call's own: no second array of z's size)
    with np.errstate(divide="ignore"):  # an all −inf row: −inf
        return (np.log(_row_sums(e, (e.ndim - 1,))) - picked)[..., 0]


def _split(name, z) -> bool:
    return splits(name, z) and isinstance(z, np.ndarray) and z.ndim > 1 and z.flags.c_contiguous


def _ce_grad_impl(ct, z, loss, idx, *, out=None):
    # ``out`` (from the program executor) is z itself when the scores die here, as they do in a
    # training step's gradient program: z − c is written over them (the shift is read first).
    _check("softmax_cross_entropy_grad", z.shape, idx)
    col = _column(idx)
    dtype = np.result_type(ct.dtype, loss.dtype, _float_dtype(z.dtype))
    if (dtype == z.dtype and (out is None or out is z) and isinstance(z, np.ndarray) and z.ndim > 1
            and z.flags.c_contiguous):
        offset = _offsets(ct, z, loss, col)
        if offset is not None:
            return _ce_grad_rows(z, offset, col, ct, out)
    if _split("softmax_cross_entropy_grad", z) and dtype == z.dtype and (out is None or out is z):
        common = _common_shift(z, z)
        if common is not None:
            # The sums are read back from the loss for every row or for none, as in the unsplit call:
            # decided over all rows first (z[t] − c is what (z − c)[t] is).
            log_sum = loss[..., None] + (np.take_along_axis(z, col, -1) - common)
            if np.all(np.isfinite(log_sum)):
                return _ce_grad_split(ct, z, log_sum, col, common, out)
    return _ce_grad_whole(ct, z, loss, col, dtype, out)


# The largest |score| for the one-pass gradient (_offsets): the exponent's rounding grows with |lse|.
_ONE_PASS_BOUND = 16.0


def _offsets(ct, z, loss, col):
    """Each row's o = lse − log ct (kept as size 1), when every |z| ≤ 16 and every ct > 0; else None.

    Then (softargmax(z) − onehot)·ct is exp(z − o) − ct·onehot: one subtraction and one exponential
    over z where the general path takes five passes (shift, − log Σ, exp, one-hot, × ct). lse = loss + z[t]
    is read back from the loss. The exponent then carries the rounding of o (~|o| ulp), where the general
    path's carries that of z − c and log Σ exp(z − c): the bound on |z| keeps the two alike (the reason the
    general path never forms lse: at |z| ~ 1e4 in float32 its ulp is 1e-3), and keeps exp far from
    overflow and underflow. Scores of a network at initialisation and in training are well inside it.
    """
    if not (z.size and -_ONE_PASS_BOUND <= np.min(z) and np.max(z) <= _ONE_PASS_BOUND
            and np.all(ct > 0) and np.all(np.isfinite(ct))):
        return None
    with np.errstate(divide="ignore"):
        offset = (loss + _gathered(z, col)[..., 0]) - np.log(ct)
    return offset[..., None] if np.all(np.isfinite(offset)) else None


def _ce_grad_rows(z, offset, col, ct, out):
    """exp(z − o) − ct·onehot(t) row by row into out (z itself, or fresh), the rows split over the pool."""
    n = z.shape[-1]
    if out is None:
        out = np.empty_like(z)
    z2, o2, off2, col2, ct2 = (a.reshape(-1, n if a is z or a is out else 1) for a in (z, out, offset, col, ct))

    def rows(a, b):  # each chunk of rows: the same calls as the whole (bit for bit the unsplit result)
        g = np.subtract(z2[a:b], off2[a:b], out=o2[a:b])
        np.exp(g, out=g)
        c = col2[a:b]
        np.put_along_axis(g, c, np.take_along_axis(g, c, -1) - ct2[a:b], -1)
    if _split("softmax_cross_entropy_grad", z):
        run_rows("softmax_cross_entropy_grad", rows, z2.shape[0], n)
    else:
        rows(0, z2.shape[0])
    return out


def _ce_grad_split(ct, z, log_sum, col, common, out):
    n = z.shape[-1]
    if out is None:
        out = np.empty_like(z)
    z2, o2, ls2, col2, ct2 = (a.reshape(-1, n if a is z or a is out else 1) for a in (z, out, log_sum, col, ct))

    def rows(a, b):  # the unsplit call's steps on rows a:b
        g = np.subtract(z2[a:b], common, out=o2[a:b])
        g -= ls2[a:b]
        np.exp(g, out=g)
        c = col2[a:b]
        np.put_along_axis(g, c, np.take_along_axis(g, c, -1) - 1, -1)
        g *= ct2[a:b]
    run_rows("softmax_cross_entropy_grad", rows, z2.shape[0], n)
    return out


def _ce_grad_whole(ct, z, loss, col, dtype, out):
    g, _ = _shifted(z, (-1,), 1.0, out=out)    # the one array of z's size: z − c
    g = g.astype(dtype, copy=False)
    log_sum = loss[..., None] + np.take_along_axis(g, col, -1)
    if not np.all(np.isfinite(log_sum)):
        log_sum = _log_sum(g)  # an infinite loss or target score: the sum cannot be read back from them
    g -= log_sum
    np.exp(g, out=g)                           # softargmax(z), as exp(z − lse) (logsumexp's VJP)
    np.put_along_axis(g, col, np.take_along_axis(g, col, -1) - 1, -1)
    g *= ct[..., None]
    return g


def _picked(x, idx):
    """x[..., idx]: each row's entry at its class, as recorded operations. Shapes: (..., C), (...) -> (...)."""
    return reshape(take_along_axis(x, reshape(idx, tuple(idx.shape) + (1,)), -1), tuple(idx.shape))


def _class_axis(z) -> tuple[int]:
    return (z.ndim - 1,)


def _ce_jvp(t, out, z, idx):
    # ⟨t, softargmax(z)⟩ − t[idx] per row.
    tz = t[0]
    return subtract(sum(multiply(tz, softargmax(z, -1)), -1), _picked(tz, idx))


def _grad_vjp_ct(w, out, ct, z, loss, idx):
    # ∂/∂ct of (p − onehot)·ct: ⟨w, p⟩ − w[idx] per row.
    return subtract(sum(multiply(w, softargmax(z, -1)), -1), _picked(w, idx))


def _grad_vjp_z(w, out, ct, z, loss, idx):
    # ∂/∂z of (p − onehot)·ct: Jᵀ(w·ct) with J softargmax's (symmetric) Jacobian.
    u = multiply(w, reshape(ct, tuple(ct.shape) + (1,)))
    return _softargmax_jacobian(u, softargmax(z, -1), _class_axis(z), 1.0)


def _grad_jvp(t, out, ct, z, loss, idx):
    tct, tz = t[0], t[1]
    terms = []
    if tct is not None:
        terms.append(apply(SOFTMAX_CROSS_ENTROPY_GRAD, tct, z, loss, idx))
    if tz is not None:
        p = softargmax(z, -1)
        terms.append(multiply(_softargmax_jacobian(tz, p, _class_axis(z), 1.0), reshape(ct, tuple(ct.shape) + (1,))))
    total = terms[0]
    for term in terms[1:]:
        total = add(total, term)
    return total


def _rows_batch(prim, args, batched, **params):
    # Every operand has the rows' leading axes: a batch axis is one more of them.
    size = next(a.shape[0] for a, b in zip(args, batched) if b)
    return apply(prim, *[a if b else materialize(a, size) for a, b in zip(args, batched)], **params)


def _ce_rule(z, idx):
    if idx.dtype.kind not in "iu":
        raise ShapeError(f"softmax_cross_entropy: Expect: integer class indices. Actual: dtype {idx.dtype}")
    _check("softmax_cross_entropy", tuple(z.shape), idx)
    return tuple(z.shape[:-1]), _float_dtype(z.dtype)


def _grad_rule(ct, z, loss, idx):
    _check("softmax_cross_entropy_grad", tuple(z.shape), idx)
    if tuple(ct.shape) != tuple(idx.shape) or tuple(loss.shape) != tuple(idx.shape):
        raise ShapeError(f"softmax_cross_entropy_grad: Expect: a cotangent and a loss of shape "
                         f"{fmt(idx.shape)}. Actual: {fmt(ct.shape)} and {fmt(loss.shape)}")
    return tuple(z.shape), np.result_type(ct.dtype, loss.dtype, _float_dtype(z.dtype))


# Hand-written pair: linear in ct, not in z; closed forms through softargmax_jacobian.
SOFTMAX_CROSS_ENTROPY_GRAD = defprim(
    "softmax_cross_entropy_grad", _ce_grad_impl, vjp=(_grad_vjp_ct, _grad_vjp_z, None, None), jvp=_grad_jvp,
    shape=_grad_rule, nondiff=(2, 3), batch=_rows_batch)

# Hand-written pair: the VJP is one softmax_cross_entropy_grad node: one array where the composite made five.
SOFTMAX_CROSS_ENTROPY = defprim(
    "softmax_cross_entropy", _ce_impl,
    vjp=lambda ct, out, z, idx: (apply(SOFTMAX_CROSS_ENTROPY_GRAD, ct, z, out, idx), None),
    jvp=_ce_jvp, shape=_ce_rule, nondiff=(1,), batch=_rows_batch)


def softmax_cross_entropy(z, indices) -> Tensor:
    """lse(z) − z[indices] along the last axis: each row's cross-entropy against its class (no reduction).

    ``indices`` are integers in [0, C) without derivative. The backward pass is
    one primitive, :func:`softmax_cross_entropy_grad`.
    Shapes: z (..., C), indices (...) -> (...).
    Example: ``softmax_cross_entropy(ad.Tensor([[0., 0.]]), np.array([1])).value`` is ``[log 2]``.
    """
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
    return apply(SOFTMAX_CROSS_ENTROPY, z, indices)


def softmax_cross_entropy_grad(ct, z, loss, indices) -> Tensor:
    """(softargmax(z) − onehot(indices))·ct along the last axis: the VJP of :func:`softmax_cross_entropy`.

    ``loss`` must be ``softmax_cross_entropy(z, indices)`` (the sum of exponentials is read back from it);
    it carries no derivative (the value does not depend on it).
    Shapes: ct (...), z (..., C), loss (...), indices (...) -> (..., C).
    """
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
    return apply(SOFTMAX_CROSS_ENTROPY_GRAD, ct, z, loss, indices)
