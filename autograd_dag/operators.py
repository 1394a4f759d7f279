"""Wire numpy-style operators and methods onto :class:`Tensor`, in one place.

``core`` defines the Tensor record without operators or ``backward``, so that
the primitive families and the sweeps (which import ``core``) never import
each other through Tensor methods; this module, above them all, attaches
them — the only place a class gets methods from a module above it. It also
lets numpy functions such as ``np.exp(t)`` dispatch to the recorded primitives.
"""

from __future__ import annotations

import numpy as np

from . import core
from .autodiff import backward
from .core import Tensor
from .errors import AutogradDagError, NotDifferentiableError, ShapeError, user_source, located
from .primitives import elementwise as ew
from .primitives.shapes import normalize_axis
from .ufunc_methods import ufunc_method
from .primitives import (arrangement, arrays, editing, indexing, integer, linalg, mathfuncs, numeric,
                         reductions, structure)


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

Tensor.backward = backward
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
    shown = repr(index) if len(repr(index)) <= 30 else "..."
    raise AutogradDagError(
        f"t[{shown}] = ... on a Tensor of shape {self.shape}: Tensors cannot be changed in place (a recorded "
        f"node must keep its value); build a new one, e.g. ad.where(mask, value, t), or ad.index_add(...) "
        f"to add into selected entries{located(user_source())}")


Tensor.__iter__ = _iter
Tensor.__setitem__ = _setitem


# Integer operators as numpy's (primitives/integer.py): t // 2, 3 // t, divmod(t, 2), t << 1, 2 << t, t >> 1,
# and bitwise &, |, ^, ~ of integers and of boolean masks (m1 & m2). Recorded primitives, so that jit, vmap and
# the exports trace them (they raised "unsupported operand type(s)", and & | ^ ~ took booleans only); t //= 2
# rebinds t to a new Tensor, as t += 1 does (Python falls back to __floordiv__).
_INTEGER = {"__floordiv__": integer.floor_divide, "__divmod__": integer.divmod, "__lshift__": integer.left_shift,
            "__rshift__": integer.right_shift, "__and__": integer.bitwise_and, "__or__": integer.bitwise_or,
            "__xor__": integer.bitwise_xor}
for _name, _fn in _INTEGER.items():
    setattr(Tensor, _name, _fn)
    setattr(Tensor, "__r" + _name[2:], _swap(_fn))
Tensor.__invert__ = integer.invert

# Methods named as numpy's ndarray names them.
def _in_dtype(x, dtype):
    # numpy casts the entries to dtype= before it accumulates: np.sum([0.6, 0.6], dtype=int) is 0,
    # not int(1.2) = 1 (and a float32 sum of float64 entries adds float32 numbers).
    return x if dtype is None else ew.astype(x, dtype)


def _as_dtype(result, dtype):
    # (mean and var of integers are floats: numpy casts the quotient back to dtype=.)
    return result if dtype is None or result.dtype == np.dtype(dtype) else ew.astype(result, dtype)


def _refuse(name, out=None, unused=()):
    # numpy's functions (np.sum(t), np.max(t, 0, None, True)) pass out=None, positionally or by
    # keyword: that is accepted. An array to write into, or initial=/where=, has no meaning for
    # a recorded node (it makes a new Tensor), so it is refused by name.
    given = sorted(unused) + (["out="] if out is not None else [])
    if given:
        raise AutogradDagError(f"{name}: {', '.join(given)} not supported on Tensors (a recorded operation "
                               f"returns a new Tensor; use the result){located(user_source())}")


def _reduction_method(fn):
    # ndarray.sum, .mean and .prod: (axis, dtype, out, keepdims), as numpy orders them.
    def method(self, axis=None, dtype=None, out=None, keepdims=False, **unused):
        _refuse(fn.__name__, out, unused)
        return _as_dtype(fn(_in_dtype(self, dtype), axis, keepdims=keepdims), dtype)
    method.__name__ = fn.__name__
    return method


def _extremum_method(fn):
    # ndarray.max and .min take no dtype: (axis, out, keepdims), as numpy orders them,
    # so t.max(0, None, True) keeps the axis (it read True as out= before).
    def method(self, axis=None, out=None, keepdims=False, **unused):
        _refuse(fn.__name__, out, unused)
        return fn(self, axis, keepdims=keepdims)
    method.__name__ = fn.__name__
    return method


Tensor.sum = _reduction_method(structure.sum)
Tensor.mean = _reduction_method(reductions.mean)
Tensor.max = _extremum_method(reductions.max)
Tensor.min = _extremum_method(reductions.min)
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


# numpy's ndarray methods for the everyday functions.
Tensor.prod = _reduction_method(numeric.prod)
# (ndarray.any and .all take (axis, dtype, out, keepdims) positionally, unlike their documentation.)
Tensor.any = _reduction_method(numeric.any)
Tensor.all = _reduction_method(numeric.all)


def _moment_method(fn):
    def method(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **unused):
        _refuse(fn.__name__, out, unused)
        return _as_dtype(fn(_in_dtype(self, dtype), axis, ddof=ddof, keepdims=keepdims), dtype)
    method.__name__ = fn.__name__
    return method


Tensor.std = _moment_method(numeric.std)
Tensor.var = _moment_method(reductions.var)


def _scan_method(fn):
    def method(self, axis=None, dtype=None, out=None):
        _refuse(fn.__name__, out)
        return _as_dtype(fn(_in_dtype(self, dtype), axis), dtype)
    method.__name__ = fn.__name__
    return method


Tensor.cumsum = _scan_method(numeric.cumsum)
Tensor.cumprod = _scan_method(numeric.cumprod)
Tensor.clip = lambda self, min=None, max=None: mathfuncs.clip(self, min, max)  # noqa: A002
Tensor.round = lambda self, decimals=0: mathfuncs.round(self, decimals)
Tensor.__round__ = lambda self, ndigits=None: mathfuncs.round(self, ndigits or 0)
Tensor.dot = arrays.dot
Tensor.trace = lambda self, offset=0, axis1=0, axis2=1: arrays.trace(self, offset, axis1, axis2)
Tensor.diagonal = arrays.diagonal
Tensor.repeat = arrays.repeat
Tensor.conj = mathfuncs.conj
Tensor.conjugate = mathfuncs.conj
Tensor.real = property(mathfuncs.real)
Tensor.imag = property(mathfuncs.imag)
Tensor.__mod__ = mathfuncs.mod
Tensor.__rmod__ = _swap(mathfuncs.mod)
Tensor.argsort = lambda self, axis=-1: numeric.argsort(self, axis)


def _index_method(fn):
    # As ndarray's: the integer index (plain numpy values, no derivative), like np.argmax(t).
    # ad.argmax / ad.argmin give the one-hot encoding of §4.4.4 instead.
    # keepdims is keyword-only, as in ndarray.argmax.
    def method(self, axis=None, out=None, *, keepdims=False):
        _refuse(f"Tensor.{fn.__name__}", out)
        return fn(core.concrete(self, f"Tensor.{fn.__name__}"), axis=axis, keepdims=keepdims)
    method.__name__ = fn.__name__
    return method


Tensor.argmax = _index_method(np.argmax)
Tensor.argmin = _index_method(np.argmin)


def _sort_in_place(self, axis=-1, kind=None, order=None):
    raise AutogradDagError(
        "t.sort() would sort in place, as ndarray.sort does, but a Tensor cannot change (its node keeps its "
        "value); use s = np.sort(t) or s = ad.sort(t), whose gradient follows the permutation"
        f"{located(user_source())}")


Tensor.sort = _sort_in_place


def _copy(a, order="K", subok=False):
    # A Tensor never changes in place (its node keeps its value), so a copy is the value itself: one
    # identity node, derivative one, as jnp.copy under jit. (t.copy().value is t.value's array.)
    return structure.identity(a) if isinstance(a, Tensor) else np.copy(a, order=order)


def _matrix_transpose(self):
    if self.ndim < 2:
        raise ShapeError(f"t.mT: Expect: a Tensor of 2 or more axes (a stack of matrices). Actual: shape "
                         f"{self.shape}{located(user_source())}")
    return structure.swapaxes(self, -1, -2)


def _np_compress(condition, a, axis=None, out=None):
    # The entries where condition holds, along axis (a flattened first if None), as np.compress: a take
    # of the true positions, so its derivative scatters back. condition's numbers decide the shape.
    _refuse("np.compress", out)
    keep = np.asarray(core.concrete(condition, "np.compress") if isinstance(condition, Tensor) else condition)
    if keep.ndim != 1:
        raise ShapeError(f"np.compress: Expect: a 1-d condition. Actual: shape {keep.shape}{located(user_source())}")
    a = _as_tensor(a)
    a = structure.reshape(a, (-1,)) if axis is None else a
    return indexing.take(a, np.flatnonzero(keep), axis=0 if axis is None else axis)


Tensor.copy = lambda self, order="C": structure.identity(self)   # ndarray.copy(order)
Tensor.mT = property(_matrix_transpose)
Tensor.nbytes = property(lambda self: self.size * self.dtype.itemsize)
Tensor.itemsize = property(lambda self: self.dtype.itemsize)
Tensor.take = lambda self, indices, axis=None, out=None, mode="raise": _np_take(self, indices, axis, out, mode)
Tensor.compress = lambda self, condition, axis=None, out=None: _np_compress(condition, self, axis, out)
Tensor.searchsorted = lambda self, v, side="left", sorter=None: np.searchsorted(self, v, side=side, sorter=sorter)

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


def _np_take(a, indices, axis, out, mode):
    # numpy's mode='wrap' and 'clip' move out-of-range indices in (they raised TypeError: mode);
    # 'raise' is take's own range check.
    _refuse("np.take", out)
    a, axis = (a, axis) if axis is not None else (structure.reshape(a, (-1,)), 0)
    if mode not in ("raise", "wrap", "clip"):
        raise AutogradDagError(f"np.take on a Tensor: mode={mode!r} is not one of 'raise', 'wrap', 'clip'")
    if mode != "raise":
        shape = np.shape(a)
        n = shape[normalize_axis("take", axis, len(shape))]
        i = indices if isinstance(indices, Tensor) else np.asarray(indices)
        indices = mathfuncs.mod(i, n) if mode == "wrap" else mathfuncs.clip(i, 0, n - 1)
    return indexing.take(a, indices, axis)


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
    # (np.where(condition) alone is np.nonzero(condition): it raised "missing 2 required arguments")
    np.where: lambda condition, *xy: ew.where(condition, *xy) if xy else np.nonzero(condition),
    np.einsum: linalg.einsum,
    np.take: lambda a, indices, axis=None, out=None, mode="raise": _np_take(a, indices, axis, out, mode),
    np.copy: _copy, np.compress: _np_compress,
    # numpy.linalg (ad.linalg)
    np.linalg.solve: linalg.solve, np.linalg.inv: linalg.inv,
    np.linalg.det: linalg.det, np.linalg.slogdet: linalg.slogdet,
    np.linalg.cholesky: linalg.cholesky, np.linalg.eigh: linalg.eigh,
    np.linalg.svd: linalg.svd, np.linalg.qr: linalg.qr, np.linalg.pinv: linalg.pinv,
    np.linalg.norm: linalg.norm, np.linalg.matrix_power: linalg.matrix_power,
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
    np.hsplit: arrangement.hsplit, np.vsplit: arrangement.vsplit,
    np.dsplit: arrangement.dsplit, np.gradient: arrangement.gradient,
    np.partition: lambda a, kth, axis=-1, kind="introselect", order=None: arrangement.partition(a, kth, axis),
}
NUMPY_FUNCTIONS.update({
    np.linalg.eigvalsh: linalg.eigvalsh, np.linalg.multi_dot: linalg.multi_dot,
    np.linalg.cond: linalg.cond, np.linalg.tensorinv: linalg.tensorinv,
    np.linalg.tensorsolve: linalg.tensorsolve,
    np.linalg.lstsq: lambda a, b, rcond=None: linalg.lstsq(a, b, rcond),
})
# numpy 2 additions to numpy.linalg.
for _name in ("trace", "svdvals", "matrix_norm", "vector_norm", "diagonal", "matrix_transpose", "vecdot",
              "outer"):
    if hasattr(np.linalg, _name):
        NUMPY_FUNCTIONS[getattr(np.linalg, _name)] = getattr(linalg, _name)
if hasattr(np.linalg, "cross"):
    NUMPY_FUNCTIONS[np.linalg.cross] = arrangement.linalg_cross

# numpy functions whose results carry no derivative (shapes, indices,
# booleans): they run on the values, whatever the Tensor.
NUMPY_VALUE_FUNCTIONS = {
    np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj, np.argmax, np.argmin,
    np.argsort, np.nonzero, np.flatnonzero, np.argwhere, np.count_nonzero, np.searchsorted,
    np.array_equal, np.array_equiv, np.allclose, np.isclose, np.may_share_memory, np.shares_memory,
    np.isscalar, np.any, np.all, np.linalg.matrix_rank,
}
# Those of them that read only shapes and dtypes, never the numbers: free inside jit, trace and vmap.
_METADATA_FUNCTIONS = {np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj,
                       np.isscalar, np.may_share_memory, np.shares_memory}
# ufuncs likewise (booleans and integer-valued results).
_VALUE_UFUNCS = {np.isfinite, np.isnan, np.isinf, np.signbit, np.logical_and, np.logical_or,
                 np.logical_not, np.logical_xor}

# numpy's everyday functions (primitives/mathfuncs.py, numeric.py, arrays.py).
_UFUNCS.update({
    np.bitwise_and: integer.bitwise_and, np.bitwise_or: integer.bitwise_or, np.bitwise_xor: integer.bitwise_xor,
    np.invert: integer.invert, np.left_shift: integer.left_shift, np.right_shift: integer.right_shift,
    np.floor_divide: integer.floor_divide, np.divmod: integer.divmod, np.gcd: integer.gcd, np.lcm: integer.lcm,
    np.sin: mathfuncs.sin, np.cos: mathfuncs.cos,
    np.tan: mathfuncs.tan, np.arcsin: mathfuncs.arcsin, np.arccos: mathfuncs.arccos,
    np.arctan: mathfuncs.arctan, np.arctan2: mathfuncs.arctan2, np.sinh: mathfuncs.sinh,
    np.cosh: mathfuncs.cosh, np.arcsinh: mathfuncs.arcsinh, np.arccosh: mathfuncs.arccosh,
    np.arctanh: mathfuncs.arctanh, np.log1p: mathfuncs.log1p, np.expm1: mathfuncs.expm1,
    np.log2: mathfuncs.log2, np.log10: mathfuncs.log10, np.exp2: mathfuncs.exp2,
    np.square: mathfuncs.square, np.reciprocal: mathfuncs.reciprocal, np.hypot: mathfuncs.hypot,
    np.logaddexp: mathfuncs.logaddexp, np.logaddexp2: mathfuncs.logaddexp2,
    np.floor: mathfuncs.floor, np.ceil: mathfuncs.ceil, np.trunc: mathfuncs.trunc,
    np.rint: mathfuncs.rint, np.fmax: mathfuncs.fmax, np.fmin: mathfuncs.fmin, np.fabs: ew.abs,
    np.deg2rad: mathfuncs.deg2rad, np.radians: mathfuncs.deg2rad, np.rad2deg: mathfuncs.rad2deg,
    np.degrees: mathfuncs.rad2deg, np.remainder: mathfuncs.mod, np.conjugate: mathfuncs.conj,
    np.fmod: mathfuncs.fmod,
})


def _np_clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):  # noqa: A002
    _refuse("np.clip", out, kwargs)
    return mathfuncs.clip(a, a_min if a_min is not None else min, a_max if a_max is not None else max)


def _np_cumulative(name, fn):
    def call(a, axis=None, dtype=None, out=None):        # np.cumsum's order
        _refuse(f"np.{name}", out)
        return _as_dtype(fn(_in_dtype(_as_tensor(a), dtype), axis), dtype)
    return call


def _np_round(name):
    def call(a, decimals=0, out=None):
        _refuse(f"np.{name}", out)
        return mathfuncs.round(a, decimals)
    return call


def _np_trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _refuse("np.trace", out)
    return _as_dtype(arrays.trace(_in_dtype(_as_tensor(a), dtype), offset, axis1, axis2), dtype)


def _np_product(name, fn):
    def call(a, b, out=None):                              # np.dot and np.outer: (a, b, out)
        _refuse(f"np.{name}", out)
        return fn(a, b)
    return call


def _np_sort(a, axis=-1, kind=None, order=None, stable=None):
    if order is not None:
        raise AutogradDagError("np.sort on a Tensor: order= (structured arrays) is not supported")
    return numeric.sort(a, axis)


def _np_pad(array, pad_width, mode="constant", **kwargs):
    # numpy accepts only the keywords of the mode it pads in (constant_values with 'constant',
    # reflect_type with 'reflect' and 'symmetric') and raises ValueError for the others.
    allowed = {"constant": {"constant_values"}, "reflect": {"reflect_type"}, "symmetric": {"reflect_type"}}
    unknown = set(kwargs) - allowed.get(mode, set())
    if unknown:
        raise AutogradDagError(f"np.pad on a Tensor: {', '.join(sorted(unknown))} not supported with "
                               f"mode={mode!r}{located(user_source())}")
    return arrays.pad(array, pad_width, mode, constant_values=kwargs.get("constant_values", 0.0),
                      reflect_type=kwargs.get("reflect_type", "even"))


def _np_median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    # overwrite_input only lets numpy scribble on a; a Tensor is never changed, so it is moot.
    _refuse("np.median", out)
    return numeric.median(a, axis, keepdims=keepdims)


def _np_nan_reduction(name, fn, takes_dtype):
    # numpy's orders: nansum and nanmean (a, axis, dtype, out, keepdims, ...),
    # nanmax and nanmin (a, axis, out, keepdims, ...).
    def call(a, axis=None, *args, **kwargs):
        names = ("dtype", "out", "keepdims") if takes_dtype else ("out", "keepdims")
        given = dict(zip(names, args), **kwargs)
        dtype, out, keepdims = given.pop("dtype", None), given.pop("out", None), given.pop("keepdims", False)
        _refuse(f"np.{name}", out, given)
        return _as_dtype(fn(_in_dtype(_as_tensor(a), dtype), axis, keepdims=keepdims), dtype)
    return call


def _like(a, dtype, shape):
    # numpy's shape= replaces a's shape; its dtype stays unless dtype= is given.
    return a if shape is None else np.empty(shape, a.dtype if dtype is None else dtype)


def _np_like(fn):
    def call(a, dtype=None, order="K", subok=True, shape=None, **kwargs):
        return fn(_like(a, dtype, shape), dtype)
    return call


def _np_full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return arrays.full_like(_like(a, dtype, shape), fill_value, dtype)


NUMPY_FUNCTIONS.update({
    np.clip: _np_clip, np.prod: _reduction(lambda a, *args, **kw: Tensor.prod(a, *args, **kw)),
    np.std: _reduction(lambda a, *args, **kw: Tensor.std(a, *args, **kw)),
    np.var: _reduction(lambda a, *args, **kw: Tensor.var(a, *args, **kw)),
    np.cumsum: _np_cumulative("cumsum", numeric.cumsum), np.cumprod: _np_cumulative("cumprod", numeric.cumprod),
    np.diff: numeric.diff, np.sort: _np_sort, np.take_along_axis: numeric.take_along_axis,
    np.pad: _np_pad, np.flip: arrays.flip, np.roll: arrays.roll, np.tile: arrays.tile,
    np.repeat: arrays.repeat, np.split: arrays.split, np.array_split: arrays.array_split, np.diagonal: arrays.diagonal,
    np.trace: _np_trace, np.triu: arrays.triu, np.tril: arrays.tril,
    np.outer: _np_product("outer", arrays.outer), np.dot: _np_product("dot", arrays.dot),
    np.tensordot: arrays.tensordot,
    np.round: _np_round("round"), np.around: _np_round("around"),
    np.nan_to_num: mathfuncs.nan_to_num, np.real: mathfuncs.real, np.imag: mathfuncs.imag,
    np.zeros_like: _np_like(arrays.zeros_like), np.ones_like: _np_like(arrays.ones_like),
    np.full_like: _np_full_like, np.sinc: mathfuncs.sinc,
    np.median: _np_median, np.nansum: _np_nan_reduction("nansum", numeric.nansum, True),
    np.nanmean: _np_nan_reduction("nanmean", numeric.nanmean, True),
    np.nanmax: _np_nan_reduction("nanmax", numeric.nanmax, False),
    np.nanmin: _np_nan_reduction("nanmin", numeric.nanmin, False),
})



def _values(x, what: str | None):
    """``x`` with every Tensor replaced by its array (inside lists, tuples and dicts too).

    ``what`` names the numpy function reading the numbers (:func:`core.concrete`
    refuses a Tensor computed from a jit/trace/vmap input: its result would be
    this call's, frozen into the program); None for functions that read only
    shapes and dtypes.
    """
    if isinstance(x, Tensor):
        return x.value if what is None else core.concrete(x, what)
    if isinstance(x, (list, tuple)):
        return type(x)(_values(v, what) for v in x)
    if isinstance(x, dict):
        return {k: _values(v, what) for k, v in x.items()}
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
        f"(take the number out explicitly with t.value if no derivative is wanted){located(user_source())}")


def _on_values(func, args, kwargs, what: str | None):
    # ``func`` sees arrays only, so numpy does not dispatch back to Tensor.
    return func(*_values(args, what), **_values(kwargs, what))


def _array_function(self, func, types, args, kwargs):
    fn = NUMPY_FUNCTIONS.get(func)
    if fn is not None:
        return fn(*args, **kwargs)
    if func in _METADATA_FUNCTIONS:
        return _on_values(func, args, kwargs, None)
    if func in NUMPY_VALUE_FUNCTIONS or not (_differentiable(args) or _differentiable(kwargs)):
        return _on_values(func, args, kwargs, _numpy_name(func))
    raise _no_rule(_numpy_name(func))


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    fn = _UFUNCS.get(ufunc)
    if fn is not None and method == "__call__" and not kwargs:
        return fn(*inputs)
    if method != "__call__" and fn is not None:   # np.add.reduce, np.multiply.accumulate, np.maximum.outer
        out = ufunc_method(ufunc, method, inputs, kwargs)
        if out is not None:
            return out
    name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    if ufunc in _VALUE_UFUNCS or not (_differentiable(inputs) or _differentiable(kwargs)):
        return _on_values(getattr(ufunc, method), inputs, kwargs, name)
    if fn is not None:
        raise _no_rule(name, f" with {', '.join(sorted(kwargs))}" if kwargs else f" (method {method!r})")
    raise _no_rule(name)


# numpy's where= and initial= on sums and means, ptp, nonzero and tolist (numpy_more.py's families).
def _np_ptp(a, axis=None, out=None, keepdims=False):
    _refuse("np.ptp", out)
    return editing.ptp(a, axis, keepdims=keepdims)


def _masked(reduce, fn):
    # numpy's where= keeps only the marked entries (sum's initial= is added once): a mask recorded like
    # any operand, so jit and vmap follow it.
    def call(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        if "where" not in kwargs and "initial" not in kwargs:
            return reduce(_as_tensor(a), axis, dtype, out, keepdims, **kwargs)
        mask, initial = kwargs.pop("where", True), kwargs.pop("initial", None)
        _refuse(f"np.{fn.__name__[7:]}", out, kwargs)
        result = _as_dtype(fn(_in_dtype(_as_tensor(a), dtype), axis, where_mask=mask, keepdims=keepdims), dtype)
        return result if initial is None else ew.add(result, initial)
    return call


_tensor_sum, _tensor_mean = Tensor.sum, Tensor.mean
Tensor.sum = _masked(_tensor_sum, editing.masked_sum)
Tensor.mean = _masked(_tensor_mean, editing.masked_mean)
Tensor.sum.__name__, Tensor.mean.__name__ = "sum", "mean"
Tensor.ptp = lambda self, axis=None, out=None, keepdims=False: _np_ptp(self, axis, out, keepdims)
# Integer positions and Python lists: plain numbers, read as np.nonzero(t) and t.value.tolist() read them
# (inside jit their values would be frozen into the program: TracingError, as np.nonzero's).
Tensor.nonzero = lambda self: np.nonzero(core.concrete(self, "Tensor.nonzero"))
Tensor.tolist = lambda self: core.concrete(self, "Tensor.tolist").tolist()


Tensor.__array_ufunc__ = _array_ufunc
Tensor.__array_function__ = _array_function
