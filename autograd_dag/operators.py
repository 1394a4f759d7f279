"""Wire numpy-style operators and methods onto :class:`Tensor`, in one place.

(``backward`` and ``zero_grad`` are attached by :mod:`autograd_dag.autodiff`,
which defines them, since this module sits below it.)

``core`` defines the Tensor record without operators, so that the primitive
families (which import ``core``) never import each other through Tensor
methods; this module, above all families, attaches them. It also lets numpy
functions such as ``np.exp(t)`` dispatch to the recorded primitives.
"""

from __future__ import annotations

import numpy as np

from .core import Tensor
from .errors import AutogradDagError
from .primitives import elementwise as ew
from .primitives import indexing, linalg, reductions, structure


def _swap(fn):
    return lambda self, other: fn(other, self)


_BINARY = {
    "__add__": ew.add, "__sub__": ew.subtract, "__mul__": ew.multiply,
    "__truediv__": ew.divide, "__pow__": ew.power, "__matmul__": linalg.matmul,
    "__lt__": ew.less, "__le__": ew.less_equal, "__gt__": ew.greater,
    "__ge__": ew.greater_equal, "__eq__": ew.equal, "__ne__": ew.not_equal,
}
_REFLECTED = {
    "__radd__": ew.add, "__rsub__": ew.subtract, "__rmul__": ew.multiply,
    "__rtruediv__": ew.divide, "__rpow__": ew.power, "__rmatmul__": linalg.matmul,
}

for _name, _fn in _BINARY.items():
    setattr(Tensor, _name, _fn)
for _name, _fn in _REFLECTED.items():
    setattr(Tensor, _name, _swap(_fn))

Tensor.__neg__ = ew.negative
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = ew.abs
Tensor.__getitem__ = indexing.getitem


def _iter(self):
    # Python would otherwise iterate by calling __getitem__ until IndexError;
    # each row is a recorded getitem, as with t[0], t[1], ...
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d Tensor")
    return (indexing.getitem(self, i) for i in range(self.shape[0]))


def _setitem(self, index, value):
    raise AutogradDagError(
        "Tensors cannot be changed in place (a recorded node must keep its value); build a new one, "
        "e.g. ad.where(mask, value, t), or ad.index_add(...) to add into selected entries")


Tensor.__iter__ = _iter
Tensor.__setitem__ = _setitem

# Methods named as numpy's ndarray names them.
def _reduction_method(fn):
    # numpy's functions (np.sum(t), np.mean(t)) call the method with out=None
    # and dtype=None; anything else has no meaning for a recorded node.
    def method(self, axis=None, dtype=None, out=None, keepdims=False, **unused):
        if out is not None or unused:
            given = sorted(unused) + (["out"] if out is not None else [])
            raise AutogradDagError(f"{fn.__name__}: {', '.join(given)} not supported on Tensors "
                                   f"(a reduction records a new node)")
        result = fn(self, axis, keepdims)
        return result if dtype is None else ew.astype(result, dtype)
    method.__name__ = fn.__name__
    return method


Tensor.sum = _reduction_method(structure.sum)
Tensor.mean = _reduction_method(reductions.mean)
Tensor.max = _reduction_method(reductions.max)
Tensor.min = _reduction_method(reductions.min)
Tensor.exp = ew.exp
Tensor.log = ew.log
Tensor.sqrt = ew.sqrt
Tensor.tanh = ew.tanh
Tensor.relu = ew.relu
Tensor.astype = ew.astype
Tensor.transpose = lambda self, *axes: structure.transpose(
    self, axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None))
Tensor.T = property(lambda self: structure.transpose(self))
Tensor.swapaxes = structure.swapaxes
Tensor.flatten = lambda self: structure.reshape(self, (-1,))


def _reshape_method(self, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return structure.reshape(self, shape)


Tensor.reshape = _reshape_method

# numpy functions on Tensors record the same primitives as ``ad.<name>``.
_UFUNCS = {
    np.add: ew.add, np.subtract: ew.subtract, np.multiply: ew.multiply,
    np.true_divide: ew.divide, np.negative: ew.negative, np.power: ew.power,
    np.exp: ew.exp, np.log: ew.log, np.sqrt: ew.sqrt, np.tanh: ew.tanh,
    np.absolute: ew.abs, np.sign: ew.sign, np.maximum: ew.maximum, np.minimum: ew.minimum,
    np.equal: ew.equal, np.not_equal: ew.not_equal, np.less: ew.less,
    np.less_equal: ew.less_equal, np.greater: ew.greater, np.greater_equal: ew.greater_equal,
    np.matmul: linalg.matmul,
    np.sin: ew.sin, np.cos: ew.cos,
}


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    fn = _UFUNCS.get(ufunc)
    if fn is None or method != "__call__" or kwargs:
        return NotImplemented
    return fn(*inputs)


Tensor.__array_ufunc__ = _array_ufunc
