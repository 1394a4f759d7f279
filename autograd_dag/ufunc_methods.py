"""numpy's ufunc methods on Tensors: ``np.add.reduce``, ``np.multiply.accumulate``, ``np.maximum.outer``.

Each method is the reduction, running reduction or broadcast call it names, so it records
through the numpy function numpy documents it as (``np.add.reduce(t, axis)`` is
``np.sum(t, axis)`` with reduce's own default ``axis=0``) and gets that function's derivative,
vmap and jit rules, written once there. A method or ufunc not listed here keeps the refusal
(``NotDifferentiableError``): running it on the values would lose the derivative.
"""

from __future__ import annotations

import numpy as np

from .core import Tensor
from .primitives.fused.softmax import logsumexp
from .primitives.structure import reshape

_NO_VALUE = np._NoValue  # numpy's "not given" for reduce's initial=

# ufunc -> the function computing its reduce over axis (numpy's signature: a, axis, dtype, keepdims).
_REDUCE = {
    np.add: np.sum, np.multiply: np.prod, np.maximum: np.max, np.minimum: np.min,
    np.fmax: np.nanmax, np.fmin: np.nanmin,  # fmax skips NaN as nanmax does (NaN only if all are)
}
_ACCUMULATE = {np.add: np.cumsum, np.multiply: np.cumprod}
_TAKES_DTYPE = (np.sum, np.prod, np.cumsum, np.cumprod)


def ufunc_method(ufunc, method: str, inputs: tuple, kwargs: dict):
    """The recorded result of ``ufunc.method(*inputs, **kwargs)``, or None if there is no rule.

    Shapes: as numpy's. Example: ``np.maximum.reduce(t, axis=1)`` is ``ad.max(t, axis=1)``.
    """
    if method == "reduce" and len(inputs) == 1:
        return _reduce(ufunc, inputs[0], **kwargs)
    if method == "accumulate" and len(inputs) == 1 and ufunc in _ACCUMULATE:
        return _accumulate(ufunc, inputs[0], **kwargs)
    if method == "outer" and len(inputs) == 2 and not kwargs:
        a, b = inputs
        # a's axes first, then b's: a reshaped to a.shape + (1,) * b.ndim broadcasts against b.
        shape = np.shape(a) + (1,) * np.ndim(b)
        return ufunc(reshape(a, shape) if isinstance(a, Tensor) else np.reshape(a, shape), b)
    return None


def _reduce(ufunc, a, axis=0, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=True):
    if out is not None or initial is not _NO_VALUE or where is not True:
        return None   # refused by the caller, naming the keyword
    if ufunc is np.logaddexp:   # log(Σ exp): what logaddexp folded over the axis computes
        if dtype is not None:
            return None
        return logsumexp(a, axis=axis, keepdims=keepdims)
    fn = _REDUCE.get(ufunc)
    if fn is None or (dtype is not None and fn not in _TAKES_DTYPE):
        return None
    extra = {"dtype": dtype} if dtype is not None else {}
    return fn(a, axis=axis, keepdims=keepdims, **extra)


def _accumulate(ufunc, a, axis=0, dtype=None, out=None):
    if out is not None:
        return None
    extra = {"dtype": dtype} if dtype is not None else {}
    return _ACCUMULATE[ufunc](a, axis=axis, **extra)
