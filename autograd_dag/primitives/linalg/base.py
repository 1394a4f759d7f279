"""What the linear-algebra modules share: numpy 2's result types, matrix checks, the packing of factors.

No primitive is defined here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core import Tensor
from ...errors import ShapeError
from ..elementwise import add, divide, multiply, not_equal, where
from ..indexing import concatenate, getitem
from ..shapes import fmt
from ..structure import reshape, sum, swapaxes


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


class _Aval:
    """Shape and dtype of an operand, for calling a shape rule before applying."""

    def __init__(self, x):
        v = x.value if isinstance(x, Tensor) else np.asarray(x)
        self.shape, self.dtype, self.ndim = v.shape, v.dtype, v.ndim


def _dtype_of(x):
    return x.dtype if isinstance(x, (Tensor, np.ndarray)) else np.asarray(x).dtype
