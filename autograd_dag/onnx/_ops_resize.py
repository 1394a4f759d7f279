"""ONNX Resize/Upsample and the layout operators exported image models use (Tile, Trilu, OneHot,
EyeLike, DepthToSpace, SpaceToDepth, CenterCropPad), with static sizes, scales and repeats.

Resize is separable: along each resized axis, output position y reads the input at a source
coordinate x(y) (the coordinate transformation), through a few taps (the interpolation kernel).
The taps and their weights depend only on the shapes and attributes, so they are computed here
with numpy once and the node becomes ``take`` (a gather with a static index array), a multiply
by the static weights and a sum over the taps: primitives that differentiate and export.
"""

from __future__ import annotations

import math

import numpy as np

from ..primitives import elementwise as el, indexing, structure as st
from ..primitives.arrays import pad, tile, tril, triu
from ._ops import OnnxImportError, handles, _shape, _ndim, _np_dtype

_COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                     "tf_crop_and_resize", "tf_half_pixel_for_nn")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _refuse(c, what: str):
    raise OnnxImportError(f"onnx.load: node '{c.node.name or c.node.op_type}' ({c.node.op_type}): {what}")


def _source_coordinates(mode, y, scale, n_in, n_out, roi):
    """Where output positions ``y`` read along one axis (float64; the spec's formulas, in its order of
    operations, so ties such as x = 2.5 fall as they do in ONNX's reference), and which of them
    lie outside the input (tf_crop_and_resize's extrapolated positions, else None).

    align_corners divides by the output length before rounding (``scale * n_in``), as ONNX's
    reference and its node tests do; ONNX Runtime divides by the rounded length, so the two
    differ when a scale gives a fractional length (test_resize_downsample_scales_*_align_corners).
    pytorch_half_pixel reads position 0 for an output of length 1, as the spec's text and ONNX
    Runtime say (ONNX's reference reads -0.5, which differs for cubic).
    """
    width = scale * n_in          # the output length before rounding
    if mode == "align_corners":
        return (np.zeros(n_out) if width == 1 else y * (n_in - 1) / (width - 1)), None
    if mode == "asymmetric":
        return y / scale, None
    if mode == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale, None
    if mode == "pytorch_half_pixel":
        return (np.zeros(n_out) if n_out == 1 else (y + 0.5) / scale - 0.5), None
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    if mode == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / width)
        return offset + (y + 0.5) / scale - 0.5, None
    # tf_crop_and_resize: the output spans the region of interest [start, end] (fractions of n_in - 1).
    start, end = roi
    x = np.full(n_out, (end - start) * (n_in - 1) / 2) if width == 1 \
        else y * (end - start) * (n_in - 1) / (width - 1)
    x = x + start * (n_in - 1)
    return x, (x < 0) | (x > n_in - 1)


def _cubic(t, a):
    """Keys' cubic convolution kernel with parameter a, at |t|."""
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def _taps(x, n_in, *, mode, nearest_mode, scale, antialias, cubic_a, exclude_outside):
    """(indices (n_out, k), weights (n_out, k)) of the input entries each output position mixes.

    Nearest: one tap. Linear and cubic: taps at base + j around x, where base is the integer below x
    (for an integral x, the one below it, with ratio 1: ONNX's convention, which makes the windows
    and the ties agree with its reference); antialias widens the kernel by 1/scale when
    downsampling and normalises its weights. Taps outside the input read the nearest edge entry,
    as the spec's edge padding; exclude_outside gives them weight 0 instead.
    """
    if mode == "nearest":
        low = np.floor(x)
        frac = x - low
        up = {"round_prefer_floor": frac > 0.5, "round_prefer_ceil": frac >= 0.5,
              "floor": np.zeros(x.shape, bool), "ceil": frac > 0}[nearest_mode]
        return np.clip(low + up, 0, n_in - 1).astype(np.int64)[:, None], None
    base = np.floor(x)
    base = np.where(base == x, base - 1, base)
    ratio = x - base                                   # in (0, 1]
    s = min(scale, 1.0) if antialias else 1.0
    start = int(np.floor((-1 if mode == "linear" else -2) / s) + 1)
    j = np.arange(start, 2 - start)                    # 2 - 2 * start taps
    t = (j[None, :] - ratio[:, None]) * s
    w = np.clip(1 - np.abs(t), 0, 1) if mode == "linear" else _cubic(t, cubic_a)
    if antialias:
        w = w / w.sum(axis=1, keepdims=True)
    idx = base[:, None].astype(np.int64) + j[None, :]
    if exclude_outside:
        w = np.where((idx < 0) | (idx >= n_in), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, n_in - 1), w


def _resize_axis(x, axis, idx, w, outside, extrapolation):
    ndim = _ndim(x)
    if w is None:
        y = indexing.take(x, idx[:, 0], axis)
    else:
        work = np.dtype(x.dtype)
        gathered = indexing.take(x, idx, axis)                        # (..., n_out, k, ...)
        weights = w.astype(work).reshape(w.shape + (1,) * (ndim - axis - 1))
        y = st.sum(el.multiply(gathered, weights), axis=axis + 1)
    if outside is not None and outside.any():
        mask = outside.reshape(outside.shape + (1,) * (ndim - axis - 1))
        y = el.where(mask, np.asarray(extrapolation, dtype=y.dtype), y)
    return y


def _resize(c, x, *, scales, sizes, roi, mode, coordinate_mode, nearest_mode, axes=None, antialias=0,
            cubic_a=-0.75, exclude_outside=0, extrapolation=0.0, policy="stretch"):
    shape = _shape(x)
    r = len(shape)
    if mode not in ("nearest", "linear", "cubic"):
        _refuse(c, f"mode={mode!r} is not a Resize mode (nearest, linear, cubic)")
    if coordinate_mode not in _COORDINATE_MODES:
        _refuse(c, f"coordinate_transformation_mode={coordinate_mode!r} is not supported "
                   f"({', '.join(_COORDINATE_MODES)} are)")
    if mode == "nearest" and nearest_mode not in _NEAREST_MODES:
        _refuse(c, f"nearest_mode={nearest_mode!r} is not supported ({', '.join(_NEAREST_MODES)} are)")
    if mode == "nearest" and antialias:
        _refuse(c, "antialias=1 is defined for linear and cubic modes only, not mode='nearest'")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        _refuse(c, f"keep_aspect_ratio_policy={policy!r} is not supported (stretch, not_larger, not_smaller)")
    dtype = np.dtype(x.dtype)
    if mode != "nearest" and dtype not in (np.float32, np.float64):
        # The spec leaves the rounding of an interpolated integer open (and half floats would need a
        # wider accumulator): only the nearest mode, which copies entries, takes other types.
        _refuse(c, f"mode={mode!r} on {dtype} input is not supported (float32 and float64 are; "
                   f"mode='nearest' takes any type)")
    if sizes is not None and (np.asarray(sizes) < 0).any():
        _refuse(c, f"sizes={np.asarray(sizes).tolist()} must be non-negative")
    if (scales is None) == (sizes is None):
        _refuse(c, "exactly one of scales and sizes must be given (non-empty)")
    axes = list(range(r)) if axes is None else [int(a) % r for a in axes]
    if len(set(axes)) != len(axes):
        _refuse(c, f"axes={axes} repeats an axis")
    given = np.asarray(scales if sizes is None else sizes).reshape(-1)
    if len(given) != len(axes):
        _refuse(c, f"{'scales' if sizes is None else 'sizes'} has {len(given)} entries for {len(axes)} axes")
    if roi is not None and len(roi) == 2 * len(axes) and len(axes) != r:
        full = [0.0] * r + [1.0] * r
        for i, a in enumerate(axes):
            full[a], full[r + a] = roi[i], roi[len(axes) + i]
        roi = full
    if coordinate_mode == "tf_crop_and_resize" and (roi is None or len(roi) != 2 * r):
        _refuse(c, "coordinate_transformation_mode='tf_crop_and_resize' needs a roi of 2 entries per axis")
    if coordinate_mode == "tf_crop_and_resize" and sizes is None \
            and any((roi[a], roi[a + r]) != (0, 1) for a in axes):
        # The spec's floor(n * (end - start) * scale) and ONNX's reference floor(n * scale) disagree.
        _refuse(c, "coordinate_transformation_mode='tf_crop_and_resize' with scales (not sizes) and a roi "
                   "other than [0, 1] is not supported: the output length is ambiguous")
    if sizes is not None:
        out = list(shape)
        for a, n in zip(axes, given):
            out[a] = int(n)
        scale = [out[a] / shape[a] if shape[a] else 1.0 for a in range(r)]
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(scale[a] for a in axes)
            scale = [s if a in axes else 1.0 for a in range(r)]
            out = [int(s * shape[a] + 0.5) if a in axes else shape[a] for a in range(r)]   # round half up
    else:
        if (given <= 0).any():
            _refuse(c, f"scales={given.tolist()} must be positive")
        # The spec's floor(input length * scale), with the scale as the model stores it (float32).
        scale, out = [1.0] * r, list(shape)
        for a, s in zip(axes, given):
            scale[a], out[a] = float(s), int(s * np.array(shape[a]))
    for a in axes:
        n_in, n_out = shape[a], out[a]
        axis_roi = None if roi is None else (float(roi[a]), float(roi[a + r]))
        trivial_roi = axis_roi is None or (math.isclose(axis_roi[0], 0.0) and math.isclose(axis_roi[1], 1.0))
        if math.isclose(scale[a], 1.0) and n_out == n_in and trivial_roi:
            continue
        if n_in == 0 and n_out:
            _refuse(c, f"axis {a} is empty: it cannot be resized to {n_out} entries")
        xs, outside = _source_coordinates(coordinate_mode, np.arange(n_out, dtype=np.float64), scale[a],
                                          n_in, n_out, axis_roi)
        idx, w = _taps(xs, n_in, mode=mode, nearest_mode=nearest_mode, scale=scale[a], antialias=antialias,
                       cubic_a=cubic_a, exclude_outside=exclude_outside)
        x = _resize_axis(x, a, idx, w, outside, extrapolation)
    return x


def _optional_static(c, i, what):
    v = c.static(i, what)
    return None if v is None or np.size(v) == 0 else np.asarray(v)


@handles("Resize")
def _resize_op(c):
    x = c.arg(0)
    if c.opset < 11:
        # Resize-10: (X, scales), asymmetric coordinates, as Upsample.
        return _upsample(c)
    return _resize(c, x, roi=_optional_static(c, 1, "roi"), scales=_optional_static(c, 2, "scales"),
                   sizes=_optional_static(c, 3, "sizes"), mode=c.attr("mode", "nearest"),
                   coordinate_mode=c.attr("coordinate_transformation_mode", "half_pixel"),
                   nearest_mode=c.attr("nearest_mode", "round_prefer_floor"), axes=c.attr("axes"),
                   antialias=c.attr("antialias", 0), cubic_a=c.attr("cubic_coeff_a", -0.75),
                   exclude_outside=c.attr("exclude_outside", 0),
                   extrapolation=c.attr("extrapolation_value", 0.0),
                   policy=c.attr("keep_aspect_ratio_policy", "stretch"))


@handles("Upsample")
def _upsample(c):
    x = c.arg(0)
    scales = c.attr("scales") if c.opset < 9 else c.static(1, "scales")
    scales = np.asarray(scales, dtype=np.float32)
    mode = c.attr("mode", "nearest")
    if mode == "bilinear":                     # Upsample-7's name for linear
        mode = "linear"
    if mode not in ("nearest", "linear"):
        _refuse(c, f"mode={mode!r} is not supported (nearest, linear)")
    if mode == "nearest" and (scales < 1).any():
        # Before Resize-11 the rounding of a downsampled nearest position was unspecified.
        _refuse(c, f"mode='nearest' with scales {scales.tolist()} below 1 (downsampling) is not supported "
                   f"before opset 11")
    return _resize(c, x, scales=scales, sizes=None, roi=None, mode=mode, coordinate_mode="asymmetric",
                   nearest_mode="floor")


@handles("Tile")
def _tile(c):
    return tile(c.arg(0), tuple(int(r) for r in c.static(1, "repeats")))


@handles("Trilu")
def _trilu(c):
    k = c.static(1, "k")
    k = 0 if k is None else int(np.asarray(k).reshape(()))
    return (triu if c.attr("upper", 1) else tril)(c.arg(0), k)


@handles("EyeLike")
def _eye_like(c):
    s = _shape(c.arg(0))
    if len(s) != 2:
        _refuse(c, f"the input must be 2-D; it has shape {s}")
    dtype = c.attr("dtype")
    dtype = np.dtype(c.arg(0).dtype) if dtype is None else _np_dtype(c.onnx, dtype)
    return np.eye(s[0], s[1], c.attr("k", 0), dtype=dtype)


@handles("OneHot")
def _one_hot(c):
    indices, values = c.arg(0), c.arg(2)
    depth = int(np.asarray(c.static(1, "depth")).reshape(()))
    if depth < 1:
        _refuse(c, f"depth={depth} must be positive")
    s = _shape(indices)
    axis = c.attr("axis", -1)
    axis = axis + len(s) + 1 if axis < 0 else axis
    if np.dtype(indices.dtype).kind not in "iu":
        indices = el.astype(indices, np.int64)       # the spec: other types are cast to int64 first
    # In-range negative indices count from the end; indices outside [-depth, depth) match nothing.
    indices = el.where(el.less(indices, 0), el.add(indices, np.asarray(depth, indices.dtype)), indices)
    indices = st.reshape(indices, s[:axis] + (1,) + s[axis:])
    classes = np.arange(depth).reshape((depth,) + (1,) * (len(s) - axis))
    hot = el.equal(indices, classes)
    return el.where(hot, indexing.getitem(values, 1), indexing.getitem(values, 0))


def _blocks(c):
    x = c.arg(0)
    if _ndim(x) != 4:
        _refuse(c, f"the input must be 4-D (N, C, H, W); it has shape {_shape(x)}")
    mode = c.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        _refuse(c, f"mode={mode!r} is not supported (DCR, CRD)")
    return x, _shape(x), int(c.attr("blocksize")), mode


@handles("DepthToSpace")
def _depth_to_space(c):
    x, (b, ch, h, w), k, mode = _blocks(c)
    if ch % (k * k):
        _refuse(c, f"{ch} channels do not divide into blocks of {k}x{k}")
    if mode == "DCR":
        y = st.transpose(st.reshape(x, (b, k, k, ch // (k * k), h, w)), (0, 3, 4, 1, 5, 2))
    else:
        y = st.transpose(st.reshape(x, (b, ch // (k * k), k, k, h, w)), (0, 1, 4, 2, 5, 3))
    return st.reshape(y, (b, ch // (k * k), h * k, w * k))


@handles("SpaceToDepth")
def _space_to_depth(c):
    x, (b, ch, h, w), k, mode = _blocks(c)
    if h % k or w % k:
        _refuse(c, f"spatial shape {(h, w)} does not divide into blocks of {k}x{k}")
    y = st.reshape(x, (b, ch, h // k, k, w // k, k))
    y = st.transpose(y, (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4))
    return st.reshape(y, (b, ch * k * k, h // k, w // k))


@handles("CenterCropPad")
def _center_crop_pad(c):
    x = c.arg(0)
    s = _shape(x)
    target = [int(d) for d in np.asarray(c.static(1, "shape")).reshape(-1)]
    axes = c.attr("axes")
    axes = list(range(len(s))) if axes is None else [int(a) % len(s) for a in axes]
    if len(axes) != len(target):
        _refuse(c, f"shape has {len(target)} entries for {len(axes)} axes")
    crop = [slice(None)] * len(s)
    widths = [(0, 0)] * len(s)
    for a, n in zip(axes, target):
        # The centred window starts at floor(difference / 2): an odd extra entry goes at the end.
        if n < s[a]:
            start = (s[a] - n) // 2
            crop[a] = slice(start, start + n)
        elif n > s[a]:
            widths[a] = ((n - s[a]) // 2, n - s[a] - (n - s[a]) // 2)
    if any(sl != slice(None) for sl in crop):
        x = indexing.getitem(x, tuple(crop))
    if any(w != (0, 0) for w in widths):
        x = pad(x, widths)
    return x
