"""Norms: the one ``norm`` (``ad.norm`` and ``ad.linalg.norm``), ``matrix_norm``, ``vector_norm``, ``cond``.

Composites of recorded primitives: the 2-norm and the Frobenius norm are the
``norm`` primitive (a reduction, in :mod:`..numeric`), the other vector norms
sums and maxima of |x|, the spectral and nuclear norms the singular values of
:mod:`.decompositions`.
"""

from __future__ import annotations

import math

import numpy as np

from ...core import Tensor, apply
from ...errors import ShapeError
from ..elementwise import abs, astype, divide, equal, multiply, not_equal, power, sqrt, where
from ..indexing import stack
from ..mathfuncs import isnan
from ..numeric import NORM, _count, any as any_along
from ..reductions import _float_dtype, _ndim, max, min
from ..shapes import fmt, normalize_axes, normalize_axis
from ..structure import reshape, sum, transpose
from .base import _require_matrix, _shape_of
from .solves import INV
from .decompositions import svdvals


# ------------------------------------------------------------------- norm


def norm(x, ord=None, axis=None, keepdims: bool = False) -> Tensor:  # noqa: A002 - numpy's name
    """Vector and matrix norms with every ``ord`` of ``np.linalg.norm`` (batched over other axes).

    The one norm: ``ad.norm``, ``ad.linalg.norm`` and ``np.linalg.norm`` on a
    Tensor are this function. A composite of recorded primitives. Vector (1-D, or an int ``axis``):
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
        >>> ad.grad(ad.norm)(np.array([3.0, 4.0]))
        array([0.6, 0.8])
    """
    if isinstance(x, (list, tuple)) and any(isinstance(v, Tensor) for v in x):
        x = stack(list(x))      # numpy would convert the list, losing the derivatives
    x = _inexact(x)             # the matrix norms' |x| sums would wrap in an integer type
    shape = _shape_of(x)
    nd = len(shape)
    matrix_axes = (tuple(range(nd)) if axis is None and nd == 2 and ord is not None
                   else tuple(axis) if isinstance(axis, (tuple, list)) and len(axis) == 2 else None)
    if matrix_axes is None or ord in (None, "fro"):
        return _vector_or_frobenius_norm(x, ord, axis, keepdims)
    axes = tuple(normalize_axis("norm", a, nd) for a in matrix_axes)
    if axes[0] == axes[1]:
        raise ShapeError(f"norm: Expect: two different axes for a matrix norm. Actual: axis={axis!r}")
    out = _matrix_norm(x, ord, axes, nd)
    if keepdims:
        out = reshape(out, tuple(1 if i in axes else d for i, d in enumerate(shape)))
    return out


def _inexact(x):
    """x with integer and boolean entries as float64, as ``np.linalg.norm`` converts them.

    |x|, x**p and their sums in the operand's own integer type wrap (|-128| is
    -128 in int8), so a norm computed there is silently wrong.
    """
    dtype = x.dtype if isinstance(x, (Tensor, np.ndarray)) else np.asarray(x).dtype
    return x if dtype.kind in "fc" else astype(x, np.float64)


def _vector_or_frobenius_norm(x, ord=None, axis=None, keepdims: bool = False) -> Tensor:  # noqa: A002
    """Vector norms (ord 2, 1, ∞, -∞, 0 or any p) and the Frobenius norm: :func:`norm` but its other matrix norms.

    ``axis=None``: the 2-norm of all entries (``ord`` None), or for a matrix
    ``ord='fro'``; an int ``axis``: vector norms along it; a pair of axes: the
    Frobenius norm (``ord`` None or 'fro'). The 2-norm and the Frobenius norm
    are the ``norm`` primitive; the others sums and maxima of |x|.
    Shapes: (*s) -> s without the reduced axes (kept as 1 with ``keepdims``).
    """
    x = _inexact(x)
    ndim = _ndim(x)
    if axis is None:
        if ord is None or (ord == "fro" and ndim == 2):
            axes = tuple(range(ndim))
        elif ndim == 1:
            axes = (0,)
        elif ndim == 2:
            axes = (0, 1)
        else:
            raise ShapeError(f"norm: Expect: a vector or a matrix for ord={ord!r} with axis=None. "
                             f"Actual: {ndim} dimensions")
    else:
        axes = normalize_axes("norm", axis, ndim)
        if len(axes) not in (1, 2) or (len(axes) == 2 and not isinstance(axis, (tuple, list))):
            raise ShapeError(f"norm: Expect: one axis (vector norm) or two (matrix norm). Actual: {axis!r}")
    keepdims = bool(keepdims)
    matrix = len(axes) == 2 if axis is not None else (ord is not None and ndim == 2)
    if matrix:
        # The Frobenius norm does not depend on the order of the two axes. (The other matrix
        # orders went to _matrix_norm in norm.)
        return apply(NORM, x, axis=axes, keepdims=keepdims)
    if ord is None or ord == 2:
        return apply(NORM, x, axis=axes, keepdims=keepdims)
    if isinstance(ord, str):
        raise ShapeError(f"norm: Expect: a numeric order for a vector norm. Actual: ord={ord!r}")
    if ord == math.inf:
        if _count(x, axes) == 0:
            return sum(abs(x), axes, keepdims=keepdims)   # numpy 2: the largest of no |x_i| is 0 (-inf has no such value)
        return max(abs(x), axes, keepdims=keepdims)
    if ord == -math.inf:
        return min(abs(x), axes, keepdims=keepdims)
    if ord == 0:
        return sum(astype(not_equal(x, 0.0), _float_dtype(x.dtype)), axes, keepdims=keepdims)
    if ord == 1:
        return sum(abs(x), axes, keepdims=keepdims)
    p = float(ord)
    total = sum(power(abs(x), p), axes, keepdims=keepdims)
    # A zero slice: norm 0 with gradient 0 (a subgradient, as the 2-norm's); total**(1/p)
    # has an infinite derivative at 0, and ∞ · 0 from |x|**p gave NaN.
    zero = equal(total, 0.0)
    return where(zero, 0.0, power(where(zero, 1.0, total), 1.0 / p))


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
