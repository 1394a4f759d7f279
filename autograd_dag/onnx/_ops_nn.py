"""ONNX operators of neural networks: Erf, Gelu and the normalisations (Layer, RMS, Group,
Instance, Lp, MeanVariance).

Each is replayed with the library's operations: LayerNormalization, GroupNormalization and
InstanceNormalization with the fused ``layer_norm`` primitive (over the trailing axes of a
reshaped view), so their gradients are the primitive's exact rules; the others as composites.
``stash_type`` = 1 (the default, and the only value ONNX defines a reference for) computes the
normalisation of a float16 input in float32 and rounds the result back, as ONNX Runtime does.
"""

from __future__ import annotations

import numpy as np

from ..nn.functional import gelu
from ..primitives import elementwise as el, structure as st
from ..primitives.fused import layer_norm
from ..primitives.linalg import norm
from ..primitives.mathfuncs import erf
from ..primitives.reductions import mean
from ._ops import OnnxImportError, handles, _shape, _ndim


def _refuse(c, what: str):
    raise OnnxImportError(f"onnx.load: node '{c.node.name or c.node.op_type}' ({c.node.op_type}): {what}")


@handles("Erf")
def _erf(c):
    return erf(c.arg(0))


@handles("Gelu")
def _gelu(c):
    approximate = c.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        _refuse(c, f"approximate={approximate!r} is not defined (ONNX: 'none' or 'tanh')")
    return gelu(c.arg(0), approximate)


def _stashed(c, x):
    """x in the dtype the statistics are computed in, and that dtype: float32 for a float type narrower
    than float32 (stash_type = 1), x's own otherwise."""
    stash = c.attr("stash_type", 1)
    if stash != 1:
        _refuse(c, f"stash_type={stash} is not supported (only 1: statistics in float32)")
    dtype = np.dtype(x.dtype)
    if dtype.kind == "f" and dtype.itemsize < 4:
        return el.astype(x, np.float32), np.dtype(np.float32)
    return x, dtype


def _as(x, dtype):
    return x if x is None or np.dtype(x.dtype) == dtype else el.astype(x, dtype)


def _normalised_axes(c, x):
    """The axes [axis, rank) of ``axis``, as the negative trailing axes ``layer_norm`` takes."""
    nd = _ndim(x)
    axis = c.attr("axis", -1)
    if not -nd <= axis < nd:
        _refuse(c, f"axis={axis} is outside the input's {nd} axes")
    return tuple(range(axis % nd - nd, 0))


@handles("LayerNormalization")
def _layer_normalization(c):
    x, scale, bias = c.arg(0), c.arg(1), c.arg(2)
    axes = _normalised_axes(c, x)
    eps = float(c.attr("epsilon", 1e-5))
    xs, dtype = _stashed(c, x)
    beta = np.zeros((), dtype) if bias is None else _as(bias, dtype)
    y = _as(layer_norm(xs, _as(scale, dtype), beta, axes, eps), np.dtype(x.dtype))
    wanted = [bool(name) for name in c.node.output[1:3]]
    if not any(wanted):
        return y
    # Mean and InvStdDev (of the input's shape with the normalised axes kept as 1), in the statistics' dtype.
    mu = mean(xs, axes, keepdims=True)
    d = el.subtract(xs, mu)
    inv_std = el.divide(1.0, el.sqrt(el.add(mean(el.multiply(d, d), axes, keepdims=True), eps)))
    return y, mu, inv_std


@handles("RMSNormalization")
def _rms_normalization(c):
    x, scale = c.arg(0), c.arg(1)
    axes = _normalised_axes(c, x)
    xs, _ = _stashed(c, x)
    rms = el.sqrt(el.add(mean(el.multiply(xs, xs), axes, keepdims=True), float(c.attr("epsilon", 1e-5))))
    # As ONNX's definition: the normalised x in x's dtype, then times the scale.
    return el.multiply(_as(el.divide(xs, rms), np.dtype(x.dtype)), scale)


def _channels(c, x):
    shape = _shape(x)
    if len(shape) < 3:
        _refuse(c, f"an input of shape {shape} has no spatial axes (expected (N, C, D1, ...))")
    return shape


@handles("GroupNormalization")
def _group_normalization(c):
    x, scale, bias = c.arg(0), c.arg(1), c.arg(2)
    shape = _channels(c, x)
    n, channels, spatial = shape[0], shape[1], shape[2:]
    groups = c.attr("num_groups")
    if groups is None or groups < 1 or channels % groups:
        _refuse(c, f"num_groups={groups} does not divide the {channels} channels")
    xs, dtype = _stashed(c, x)
    ones = (1,) * len(spatial)
    # Opsets 18-20 scale and bias each group; 21 each channel (of which a group is channels/groups).
    per_group = int(np.prod(_shape(scale))) == groups != channels and c.opset < 21
    affine = (groups, 1) if per_group else (groups, channels // groups)
    grouped = st.reshape(xs, (n, groups, channels // groups) + tuple(spatial))
    y = layer_norm(grouped, st.reshape(_as(scale, dtype), affine + ones), st.reshape(_as(bias, dtype), affine + ones),
                   tuple(range(-len(spatial) - 1, 0)), float(c.attr("epsilon", 1e-5)))
    return _as(st.reshape(y, shape), np.dtype(x.dtype))


@handles("InstanceNormalization")
def _instance_normalization(c):
    x, scale, bias = c.arg(0), c.arg(1), c.arg(2)
    spatial = _channels(c, x)[2:]
    xs, dtype = _stashed(c, x)
    per_channel = (-1,) + (1,) * len(spatial)
    y = layer_norm(xs, st.reshape(_as(scale, dtype), per_channel), st.reshape(_as(bias, dtype), per_channel),
                   tuple(range(-len(spatial), 0)), float(c.attr("epsilon", 1e-5)))
    return _as(y, np.dtype(x.dtype))


@handles("LpNormalization")
def _lp_normalization(c):
    x = c.arg(0)
    p, nd, axis = c.attr("p", 2), _ndim(x), c.attr("axis", -1)
    if p not in (1, 2):
        _refuse(c, f"p={p} is not defined (ONNX: 1 or 2)")
    if not -nd <= axis < nd:
        _refuse(c, f"axis={axis} is outside the input's {nd} axes")
    size = norm(x, p, axis % nd, keepdims=True)
    zero = el.equal(size, 0.0)
    # A zero slice stays zero (ONNX's definition); the safe denominator keeps its gradient finite.
    return el.where(zero, np.zeros((), x.dtype), el.divide(x, el.where(zero, np.ones((), x.dtype), size)))


@handles("MeanVarianceNormalization")
def _mean_variance_normalization(c):
    x = c.arg(0)
    nd = _ndim(x)
    axes = tuple(sorted({int(a) % nd for a in c.attr("axes", [0, 2, 3])}))
    d = el.subtract(x, mean(x, axes, keepdims=True))
    std = el.sqrt(mean(el.multiply(d, d), axes, keepdims=True))
    # (x − E x)/(√E (x − E x)² + 1e-9): ONNX's function body adds 1e-9 to the deviation (its variance,
    # E x² − (E x)², loses digits where the mean is large: the centred form is the same in exact arithmetic).
    return el.divide(d, el.add(std, np.asarray(1e-9, x.dtype)))
