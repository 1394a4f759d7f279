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

from . import core
from .core import Tensor
from .errors import AutogradDagError, NotDifferentiableError, user_source, where
from .primitives import elementwise as ew
from .primitives import arrangement, indexing, linalg, linalg_family, reductions, structure


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
Tensor.ravel = arrangement.ravel
Tensor.squeeze = lambda self, axis=None: structure.squeeze(self, axis)


def _reshape_method(self, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return structure.reshape(self, shape)


Tensor.reshape = _reshape_method

# numpy on Tensors. ``np.exp(t)``, ``np.concatenate([t, u])`` record the same
# primitives as ``ad.exp``, ``ad.concatenate``. A numpy function with no rule
# would otherwise convert the Tensor to an array and silently lose its
# derivative; it raises instead when that derivative exists (the Tensor
# requires a gradient and operations are recorded), and runs on the values
# otherwise (constants, no_grad).

# ufuncs -> the primitive function that computes them.
_UFUNCS = {
    np.add: ew.add, np.subtract: ew.subtract, np.multiply: ew.multiply,
    np.true_divide: ew.divide, np.negative: ew.negative, np.power: ew.power,
    np.exp: ew.exp, np.log: ew.log, np.sqrt: ew.sqrt, np.tanh: ew.tanh,
    np.absolute: ew.abs, np.sign: ew.sign, np.maximum: ew.maximum, np.minimum: ew.minimum,
    np.equal: ew.equal, np.not_equal: ew.not_equal, np.less: ew.less,
    np.less_equal: ew.less_equal, np.greater: ew.greater, np.greater_equal: ew.greater_equal,
    np.matmul: linalg.matmul,
}


def _reduction(method):
    # numpy's reductions pass their keywords (axis, dtype, out, keepdims) on;
    # the method refuses the ones a recorded node cannot honour.
    return lambda a, *args, **kwargs: method(_as_tensor(a), *args, **kwargs)


def _as_tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x)


def _np_reshape(a, shape=None, order="C", *, newshape=None):
    if order != "C":
        raise AutogradDagError(f"np.reshape on a Tensor: order={order!r} is not supported (only 'C')")
    return structure.reshape(a, newshape if shape is None else shape)


def _stack_kwargs(name, kwargs):
    # numpy's defaults (dtype=None, casting='same_kind') change nothing; other values are refused.
    given = {k: v for k, v in kwargs.items() if not (k == "dtype" and v is None)
             and not (k == "casting" and v == "same_kind")}
    if given:
        raise AutogradDagError(f"{name} on Tensors: {', '.join(sorted(given))} not supported")


def _c_order(name, order):
    if order not in ("C", "A", "K"):
        raise AutogradDagError(f"{name} on a Tensor: order={order!r} is not supported (only 'C')")


def _np_concatenate(arrays, axis=0, **kwargs):
    if kwargs:
        raise AutogradDagError(f"np.concatenate on Tensors: {', '.join(sorted(kwargs))} not supported")
    return indexing.concatenate(list(arrays), axis)


def _np_stack(arrays, axis=0, **kwargs):
    if kwargs:
        raise AutogradDagError(f"np.stack on Tensors: {', '.join(sorted(kwargs))} not supported")
    return indexing.stack(list(arrays), axis)


# numpy functions (``__array_function__``) -> what computes them on Tensors.
# Families add their entries here as they gain primitives.
NUMPY_FUNCTIONS = {
    np.sum: _reduction(Tensor.sum), np.mean: _reduction(Tensor.mean),
    np.max: _reduction(Tensor.max), np.amax: _reduction(Tensor.max),
    np.min: _reduction(Tensor.min), np.amin: _reduction(Tensor.min),
    np.reshape: _np_reshape,
    np.transpose: lambda a, axes=None: structure.transpose(a, axes),
    np.swapaxes: lambda a, axis1, axis2: structure.swapaxes(a, axis1, axis2), np.squeeze: structure.squeeze,
    np.expand_dims: structure.expand_dims, np.broadcast_to: structure.broadcast_to,
    np.concatenate: _np_concatenate, np.stack: _np_stack,
    np.where: ew.where, np.einsum: linalg.einsum,
    np.take: lambda a, indices, axis=None: indexing.take(
        a if axis is not None else structure.reshape(a, (-1,)), indices, 0 if axis is None else axis),
    # numpy.linalg (ad.linalg)
    np.linalg.solve: linalg_family.solve, np.linalg.inv: linalg_family.inv,
    np.linalg.det: linalg_family.det, np.linalg.slogdet: linalg_family.slogdet,
    np.linalg.cholesky: linalg_family.cholesky, np.linalg.eigh: linalg_family.eigh,
    np.linalg.svd: linalg_family.svd, np.linalg.qr: linalg_family.qr, np.linalg.pinv: linalg_family.pinv,
    np.linalg.norm: linalg_family.norm, np.linalg.matrix_power: linalg_family.matrix_power,
    np.linalg.matmul: linalg.matmul,
    # joining and rearranging (composites of the primitives above)
    np.hstack: lambda tup, **kw: _stack_kwargs("np.hstack", kw) or arrangement.hstack(tup),
    np.vstack: lambda tup, **kw: _stack_kwargs("np.vstack", kw) or arrangement.vstack(tup),
    np.dstack: arrangement.dstack, np.column_stack: arrangement.column_stack,
    np.append: arrangement.append, np.atleast_1d: arrangement.atleast_1d,
    np.atleast_2d: arrangement.atleast_2d, np.atleast_3d: arrangement.atleast_3d,
    np.ravel: lambda a, order="C": _c_order("np.ravel", order) or arrangement.ravel(a),
    np.diag: arrangement.diag, np.kron: arrangement.kron, np.inner: arrangement.inner,
    np.cross: arrangement.cross, np.rot90: arrangement.rot90, np.flipud: arrangement.flipud,
    np.fliplr: arrangement.fliplr, np.select: arrangement.select,
    np.moveaxis: arrangement.moveaxis, np.rollaxis: arrangement.rollaxis,
    np.array_split: arrangement.array_split, np.hsplit: arrangement.hsplit, np.vsplit: arrangement.vsplit,
    np.dsplit: arrangement.dsplit, np.gradient: arrangement.gradient,
    np.partition: lambda a, kth, axis=-1, kind="introselect", order=None: arrangement.partition(a, kth, axis),
}
NUMPY_FUNCTIONS.update({
    np.linalg.eigvalsh: linalg_family.eigvalsh, np.linalg.multi_dot: linalg_family.multi_dot,
    np.linalg.cond: linalg_family.cond, np.linalg.tensorinv: linalg_family.tensorinv,
    np.linalg.tensorsolve: linalg_family.tensorsolve,
    np.linalg.lstsq: lambda a, b, rcond=None: linalg_family.lstsq(a, b, rcond),
})
# numpy 2 additions to numpy.linalg.
for _name in ("trace", "svdvals", "matrix_norm", "vector_norm", "diagonal", "matrix_transpose", "vecdot",
              "outer"):
    if hasattr(np.linalg, _name):
        NUMPY_FUNCTIONS[getattr(np.linalg, _name)] = getattr(linalg_family, _name)
if hasattr(np.linalg, "cross"):
    NUMPY_FUNCTIONS[np.linalg.cross] = lambda x1, x2, axis=-1: arrangement.cross(x1, x2, axis=axis)

# numpy functions whose results carry no derivative (shapes, indices,
# booleans): they run on the values, whatever the Tensor.
NUMPY_VALUE_FUNCTIONS = {
    np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj, np.argmax, np.argmin,
    np.argsort, np.nonzero, np.flatnonzero, np.argwhere, np.count_nonzero, np.searchsorted,
    np.array_equal, np.array_equiv, np.allclose, np.isclose, np.may_share_memory, np.shares_memory,
    np.isscalar, np.any, np.all, np.linalg.matrix_rank,
}
# ufuncs likewise (booleans and integer-valued results).
_VALUE_UFUNCS = {np.isfinite, np.isnan, np.isinf, np.signbit, np.logical_and, np.logical_or,
                 np.logical_not, np.logical_xor}


def _values(x):
    """``x`` with every Tensor replaced by its array (inside lists, tuples and dicts too)."""
    if isinstance(x, Tensor):
        return x.value
    if isinstance(x, (list, tuple)):
        return type(x)(_values(v) for v in x)
    if isinstance(x, dict):
        return {k: _values(v) for k, v in x.items()}
    return x


def _differentiable(x) -> bool:
    """Whether ``x`` holds a Tensor whose derivative a conversion would lose."""
    if isinstance(x, Tensor):
        return x.requires_grad and core.is_recording()
    if isinstance(x, (list, tuple)):
        return any(_differentiable(v) for v in x)
    if isinstance(x, dict):
        return any(_differentiable(v) for v in x.values())
    return False


def _numpy_name(func) -> str:
    module = getattr(func, "__module__", None) or "numpy"
    module = "np" + module[len("numpy"):] if module.startswith("numpy") else module
    return f"{module}.{getattr(func, '__name__', repr(func))}".replace("np.core.", "np.")


def _no_rule(name: str, detail: str = "") -> NotDifferentiableError:
    return NotDifferentiableError(
        f"{name} has no rule for Tensors{detail}; running it on the values would silently lose the "
        f"derivative. Use the ad operation that computes it, or define one with ad.primitive "
        f"(take the number out explicitly with t.value if no derivative is wanted){where(user_source())}")


def _on_values(func, args, kwargs):
    # ``func`` sees arrays only, so numpy does not dispatch back to Tensor.
    return func(*_values(args), **_values(kwargs))


def _array_function(self, func, types, args, kwargs):
    fn = NUMPY_FUNCTIONS.get(func)
    if fn is not None:
        return fn(*args, **kwargs)
    if func in NUMPY_VALUE_FUNCTIONS or not (_differentiable(args) or _differentiable(kwargs)):
        return _on_values(func, args, kwargs)
    raise _no_rule(_numpy_name(func))


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    fn = _UFUNCS.get(ufunc)
    if fn is not None and method == "__call__" and not kwargs:
        return fn(*inputs)
    if ufunc in _VALUE_UFUNCS or not (_differentiable(inputs) or _differentiable(kwargs)):
        return getattr(ufunc, method)(*_values(inputs), **_values(kwargs))
    name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    if fn is not None:
        raise _no_rule(name, f" with {', '.join(sorted(kwargs))}" if kwargs else f" (method {method!r})")
    raise _no_rule(name)


Tensor.__array_ufunc__ = _array_ufunc
Tensor.__array_function__ = _array_function
