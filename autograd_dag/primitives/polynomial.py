"""numpy's 1-D signal and polynomial functions as composites: convolve, correlate, vander, polyval, interp.

No new primitive: ``convolve`` and ``correlate`` gather the sliding windows of the zero-padded
longer signal at constant indices (one gather) and multiply them by the other signal (one matrix
product), so both operands are differentiable and batching comes from those rules (memory
len(output) × len(shorter)). ``vander`` is numpy's running product, ``polyval`` Horner's rule, and
``interp`` a recorded comparison count (the segment of each x, so jit follows the data), two gathers
and a lerp: O(len(x) · len(xp)) comparisons. Derivatives as JAX's: ``interp`` at a knot takes the
slope of the segment to its right (the last segment's at xp[-1]), 0 outside [xp[0], xp[-1]].

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> np.convolve(ad.Tensor([1.0, 2.0, 3.0]), [0.0, 1.0, 0.5]).value
    array([0. , 1. , 2.5, 4. , 1.5])
    >>> float(np.interp(ad.Tensor(1.5), [1.0, 2.0], [10.0, 20.0]).value)
    15.0
"""

from __future__ import annotations

import numpy as np

from ..core import Tensor
from ..errors import AutogradDagError, ShapeError, located, user_source
from .elementwise import add, astype, divide, equal, greater, greater_equal, less, multiply, subtract, where
from .arrays import pad
from .indexing import concatenate, getitem, take
from .linalg import matmul
from .numeric import cumprod
from .structure import broadcast_to, reshape, sum


def _shape(x) -> tuple:
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)


def _dtype(x) -> np.dtype:
    return x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype


def _vector(name, x, what):
    x = x if isinstance(x, Tensor) else np.asarray(x)
    if len(_shape(x)) == 0:
        x = reshape(x, (1,)) if isinstance(x, Tensor) else x.reshape(1)
    if len(_shape(x)) != 1:
        raise ShapeError(f"np.{name}: {what} must be 1-D, got shape {_shape(x)}{located(user_source())}")
    if _shape(x)[0] == 0:
        raise ValueError(f"{what} cannot be empty")
    return x


def _full_correlation(a, v, start, length):
    """Entries start .. start+length of the full correlation z_k = Σ_n a[n + k − (M − 1)] v[n]."""
    m = _shape(v)[0]
    padded = pad(a if isinstance(a, Tensor) else Tensor(a), ((m - 1, m - 1),))
    windows = take(padded, np.arange(start, start + length)[:, None] + np.arange(m)[None, :], 0)
    out = matmul(windows, v if isinstance(v, Tensor) else np.asarray(v))
    dtype = np.result_type(_dtype(a), _dtype(v))
    return out if _dtype(out) == dtype else astype(out, dtype)


def _mode(name, mode):
    modes = {"full": "full", "same": "same", "valid": "valid", 0: "valid", 1: "same", 2: "full"}
    if mode not in modes:
        raise ValueError(f"np.{name}: mode must be one of 'full', 'same', 'valid', got {mode!r}")
    return modes[mode]


def correlate(a, v, mode="valid") -> Tensor:
    """The cross-correlation Σ_n a[n + k] v[n] of two 1-D sequences, as ``np.correlate`` (real operands).

    Shapes: (N,), (M,) -> (N + M − 1,) full, (max(N, M),) same, (|N − M| + 1,) valid.
    Example: ``np.correlate(ad.Tensor([1.0, 2.0, 3.0]), [0.0, 1.0, 0.5]).value`` is ``[3.5]``.
    """
    a, v, mode = _vector("correlate", a, "a"), _vector("correlate", v, "v"), _mode("correlate", mode)
    n, m = _shape(a)[0], _shape(v)[0]
    if mode == "full":
        return _full_correlation(a, v, 0, n + m - 1)
    if mode == "valid":
        return _full_correlation(a, v, min(n, m) - 1, abs(n - m) + 1)
    return _full_correlation(a, v, (m - 1) // 2 if n >= m else n // 2, max(n, m))


def convolve(a, v, mode="full") -> Tensor:
    """The discrete linear convolution Σ_n a[n] v[k − n] of two 1-D sequences, as ``np.convolve``.

    Shapes: (N,), (M,) -> (N + M − 1,) full, (max(N, M),) same, (|N − M| + 1,) valid.
    Example: ``np.convolve(ad.Tensor([1.0, 2.0]), [1.0, 1.0]).value`` is ``[1., 3., 2.]``.
    """
    a, v, mode = _vector("convolve", a, "a"), _vector("convolve", v, "v"), _mode("convolve", mode)
    n, m = _shape(a)[0], _shape(v)[0]
    if m > n:
        a, v, n, m = v, a, m, n
    flipped = getitem(v, slice(None, None, -1)) if isinstance(v, Tensor) else v[::-1]
    if mode == "full":
        return _full_correlation(a, flipped, 0, n + m - 1)
    if mode == "valid":
        return _full_correlation(a, flipped, m - 1, n - m + 1)
    return _full_correlation(a, flipped, (m - 1) // 2, n)


def vander(x, N=None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of a 1-D x, columns x**(N−1) … x**0 (increasing: x**0 … x**(N−1)), as ``np.vander``.

    Powers are numpy's running products (a ``cumprod``). Shapes: (n,) -> (n, N).
    Example: ``np.vander(ad.Tensor([2.0, 3.0]), 3).value`` is ``[[4., 2., 1.], [9., 3., 1.]]``.
    """
    if len(_shape(x)) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = _shape(x)[0]
    N = n if N is None else int(N)
    dtype = np.promote_types(_dtype(x), int)
    x = astype(x, dtype) if _dtype(x) != dtype else x
    ones = broadcast_to(np.ones((1, 1), dtype), (n, min(N, 1)))
    columns = [ones] if N else []
    if N > 1:
        columns.append(cumprod(broadcast_to(reshape(x, (n, 1)), (n, N - 1)), 1))
    out = concatenate(columns, 1) if columns else broadcast_to(np.ones((1, 1), dtype), (n, 0))
    return out if increasing else getitem(out, (slice(None), slice(None, None, -1)))


def polyval(p, x) -> Tensor:
    """The polynomial p[0]·x**(n−1) + … + p[n−1] at x by Horner's rule, as ``np.polyval``.

    Differentiable in the coefficients and in x. Shapes: p (n,), x (*s) -> (*s).
    Example: ``np.polyval([1.0, 2.0, 3.0], ad.Tensor([2.0])).value`` is ``[11.]``.
    """
    if not isinstance(p, Tensor):
        p = np.asarray(p)
    if not isinstance(x, Tensor):
        x = np.asanyarray(x)
    y = np.zeros_like(x.value if isinstance(x, Tensor) else x)
    for i in range(_shape(p)[0] if len(_shape(p)) else 0):
        y = add(multiply(y, x), getitem(p, i) if isinstance(p, Tensor) else p[i])
    return y if isinstance(y, Tensor) else Tensor(y)


def _segment(x, xp, n):
    """The index i of xp's segment [xp[i], xp[i+1]] holding x: #(xp <= x) − 1, clipped to 0 .. n − 2.

    Counted by a recorded comparison (no derivative), so a trace follows the data.
    """
    xs = reshape(x, _shape(x) + (1,)) if isinstance(x, Tensor) else np.asarray(x)[..., None]
    count = sum(astype(greater_equal(xs, xp), np.int64), -1)
    below = subtract(count, 1)
    return where(less(below, 0), 0, where(greater(below, n - 2), n - 2, below))


def interp(x, xp, fp, left=None, right=None, period=None) -> Tensor:
    """Piecewise-linear interpolation of the points (xp, fp) at x, as ``np.interp`` (xp increasing).

    Differentiable in x, xp and fp (JAX's conventions); left/right (default fp[0], fp[-1]) outside.
    period= is not supported. Shapes: x (*s), xp (n,), fp (n,) -> (*s).
    Example: ``np.interp(ad.Tensor([0.5]), [0.0, 1.0], [0.0, 2.0]).value`` is ``[1.]``.
    """
    if period is not None:
        raise AutogradDagError(f"np.interp on Tensors: period= is not supported{located(user_source())}")
    xp, fp = _vector("interp", xp, "xp"), _vector("interp", fp, "fp")
    if _shape(xp) != _shape(fp):
        raise ValueError("fp and xp are not of the same length.")
    if _dtype(fp).kind == "c":
        raise AutogradDagError("np.interp on Tensors: complex fp is not supported")
    xp = astype(xp, np.float64) if _dtype(xp) != np.float64 else xp
    fp = astype(fp, np.float64) if _dtype(fp) != np.float64 else fp
    x = astype(x, np.float64) if _dtype(x) != np.float64 else x
    n = _shape(xp)[0]
    first, last = getitem(xp, 0), getitem(xp, n - 1)
    lo_value, hi_value = (getitem(fp, 0) if left is None else left), (getitem(fp, n - 1) if right is None else right)
    if n == 1:
        inside = broadcast_to(getitem(fp, 0), _shape(x))
    else:
        i = _segment(x, xp, n)
        x0, x1, f0, f1 = take(xp, i, 0), take(xp, add(i, 1), 0), take(fp, i, 0), take(fp, add(i, 1), 0)
        dx = subtract(x1, x0)
        # numpy's slope form; a zero-width segment (repeated xp) gives its right value.
        slope = divide(subtract(f1, f0), where(equal(dx, 0.0), 1.0, dx))
        inside = where(equal(dx, 0.0), f1, add(multiply(slope, subtract(x, x0)), f0))
        # At x = xp[-1] numpy gives fp[-1] exactly; written f1 + slope·(x − x1), it keeps the slope's derivative.
        inside = where(equal(x, last), add(f1, multiply(slope, subtract(x, x1))), inside)
    out = where(less(x, first), lo_value, where(greater(x, last), hi_value, inside))
    return out if isinstance(out, Tensor) else Tensor(out)
