"""More numpy functions on Tensors: their entries in the dispatch tables of :mod:`.operators`.

Each numpy function here maps to a composite of recorded primitives (``primitives/floats.py``,
``statistics.py``, ``polynomial.py``, ``editing.py``), so it runs eagerly, under jit, trace and vmap,
and differentiates; this module only reads numpy's arguments and refuses those with no meaning
for a recorded node (``out=``), naming them.
"""

from __future__ import annotations

import numpy as np

from .core import Tensor
from .operators import NUMPY_FUNCTIONS, _UFUNCS, _as_dtype, _as_tensor, _in_dtype, _np_ptp, _refuse
from .primitives import counting, editing, floats, polynomial, statistics
from .primitives import elementwise as ew
from .primitives.indexing import unstack



_UFUNCS.update({
    np.cbrt: floats.cbrt, np.float_power: floats.float_power, np.copysign: floats.copysign,
    np.heaviside: floats.heaviside, np.ldexp: floats.ldexp, np.frexp: floats.frexp, np.modf: floats.modf,
    np.spacing: floats.spacing,
})
NUMPY_FUNCTIONS.update({np.angle: floats.angle})


def _np_quantile(name, fn):
    def call(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             weights=None, interpolation=None):
        # overwrite_input lets numpy scribble on a; a Tensor never changes, so it is moot.
        _refuse(f"np.{name}", out, ["weights="] if weights is not None else [])
        return fn(a, q, axis, method=interpolation or method, keepdims=keepdims)
    return call


def _np_nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _refuse("np.nanmedian", out)
    return statistics.nanmedian(a, axis, keepdims=keepdims)


def _np_average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    return statistics.average(a, axis, weights, returned, keepdims=keepdims)


def _np_nan_moment(name, fn):
    def call(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **unused):
        _refuse(f"np.{name}", out, {k: v for k, v in unused.items() if v is not None})
        return _as_dtype(fn(_in_dtype(_as_tensor(a), dtype), axis, ddof=ddof, keepdims=keepdims), dtype)
    return call


def _np_nanprod(a, axis=None, dtype=None, out=None, keepdims=False, **unused):
    _refuse("np.nanprod", out, unused)
    return _as_dtype(statistics.nanprod(_in_dtype(_as_tensor(a), dtype), axis, keepdims=keepdims), dtype)


def _np_nan_scan(name, fn):
    def call(a, axis=None, dtype=None, out=None):
        _refuse(f"np.{name}", out)
        return _as_dtype(fn(_in_dtype(_as_tensor(a), dtype), axis), dtype)
    return call


NUMPY_FUNCTIONS.update({
    np.quantile: _np_quantile("quantile", statistics.quantile),
    np.percentile: _np_quantile("percentile", statistics.percentile),
    np.nanquantile: _np_quantile("nanquantile", statistics.nanquantile),
    np.nanpercentile: _np_quantile("nanpercentile", statistics.nanpercentile),
    np.nanmedian: _np_nanmedian, np.average: _np_average, np.cov: statistics.cov,
    np.corrcoef: lambda x, y=None, rowvar=True, *, dtype=None, **_legacy: statistics.corrcoef(x, y, rowvar, dtype=dtype),
    np.nanvar: _np_nan_moment("nanvar", statistics.nanvar), np.nanstd: _np_nan_moment("nanstd", statistics.nanstd),
    np.nanprod: _np_nanprod,
    np.nancumsum: _np_nan_scan("nancumsum", statistics.nancumsum),
    np.nancumprod: _np_nan_scan("nancumprod", statistics.nancumprod),
})


NUMPY_FUNCTIONS.update({
    np.convolve: polynomial.convolve, np.correlate: polynomial.correlate, np.vander: polynomial.vander,
    np.polyval: polynomial.polyval, np.interp: polynomial.interp,
})


def _np_cumulative(name, fn):
    def call(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        _refuse(f"np.{name}", out)
        return _as_dtype(fn(_in_dtype(_as_tensor(x), dtype), axis=axis, include_initial=include_initial), dtype)
    return call


def _np_astype(x, dtype, /, *, copy=True, device=None):
    return x if not copy and x.dtype == np.dtype(dtype) else ew.astype(x, dtype)



NUMPY_FUNCTIONS.update({
    np.sum: lambda a, *args, **kwargs: Tensor.sum(_as_tensor(a), *args, **kwargs),
    np.mean: lambda a, *args, **kwargs: Tensor.mean(_as_tensor(a), *args, **kwargs),
    np.resize: editing.resize, np.delete: editing.delete, np.insert: editing.insert,
    np.meshgrid: editing.meshgrid, np.vdot: editing.vdot, np.ptp: _np_ptp,
})
for _name in ("cumulative_sum", "cumulative_prod", "unstack", "astype"):
    if hasattr(np, _name):                                    # numpy 2
        NUMPY_FUNCTIONS[getattr(np, _name)] = {
            "cumulative_sum": _np_cumulative("cumulative_sum", editing.cumulative_sum),
            "cumulative_prod": _np_cumulative("cumulative_prod", editing.cumulative_prod),
            "unstack": lambda x, /, *, axis=0: tuple(unstack(x, axis=axis)),
            "astype": _np_astype}[_name]


def _np_histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002 - numpy's name
    return counting.histogram(a, bins, range, density, weights)


NUMPY_FUNCTIONS.update({
    np.histogram: _np_histogram, np.bincount: counting.bincount, np.digitize: counting.digitize,
    np.isin: counting.isin, np.unique: counting.unique,
})
