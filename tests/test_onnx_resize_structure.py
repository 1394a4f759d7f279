"""ONNX Resize/Upsample and the layout operators of image models (Tile, Trilu, OneHot, EyeLike,
DepthToSpace, SpaceToDepth, CenterCropPad) loaded with ``ad.onnx.load`` (issue 28): each one-node model,
built with onnx.helper, is compared with an independent numpy computation of the operator's definition
(the spec's text: scalar loops, not the importer's gathers), its loaded program is checked by finite
differences where it is differentiable, and exported back and run on ONNX Runtime.

Needs the ``onnx`` package; skipped, saying so, without it.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")

import autograd_dag as ad  # noqa: E402
from onnx import helper  # noqa: E402


def _model(op, x, inits=(), opset=19, **attrs):
    """A one-node model of ``op`` on input x (dtype and shape of the array x); the node's other
    inputs are initializers ``inits`` ((name, array) pairs; a None array is an empty input name)."""
    info = [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)]
    names = ["x"] + [n if v is not None else "" for n, v in inits]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", info, [helper.make_tensor_value_info("y", 0, None)],
                              [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in inits if v is not None])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _round_trip(prog, x, expected, rtol, atol):
    """The loaded program exported and run on ONNX Runtime gives the same values."""
    pytest.importorskip("onnxruntime", reason="the round trip needs onnxruntime")
    (back,) = ad.onnx.run(ad.onnx.export(prog), x)
    np.testing.assert_allclose(back, expected, rtol=rtol, atol=atol)

# ---------------------------------------------------------------- Resize: the spec, one axis at a time


def _source(mode, y, scale, n_in, n_out, roi):
    """The spec's coordinate transformations (Resize-19), for output index y. align_corners divides by
    the length before rounding, as ONNX's reference and node tests do (ONNX Runtime: the rounded one)."""
    length = n_in * scale                 # the output length before rounding
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        return n_in / 2 * (1 - n_out / length) + (y + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (y + 0.5) / scale - 0.5 if n_out > 1 else 0.0
    if mode == "align_corners":
        return 0.0 if length == 1 else y * (n_in - 1) / (length - 1)
    if mode == "asymmetric":
        return y / scale
    start, end = roi                      # tf_crop_and_resize
    if length == 1:
        return (end - start) * (n_in - 1) / 2 + start * (n_in - 1)
    return start * (n_in - 1) + y * (end - start) * (n_in - 1) / (length - 1)


def _kernel(mode, t, a):
    t = abs(t)
    if mode == "linear":
        return max(0.0, 1 - t)
    if t <= 1:
        return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
    return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a if t < 2 else 0.0


def _resize_1d(v, n_out, scale, *, mode, coord, nearest_mode, antialias, a, exclude_outside, roi, extrapolation):
    n_in = len(v)
    out = np.empty(n_out)
    for y in range(n_out):
        x = _source(coord, y, scale, n_in, n_out, roi)
        if coord == "tf_crop_and_resize" and not 0 <= x <= n_in - 1:
            out[y] = extrapolation
            continue
        if mode == "nearest":
            i = {"round_prefer_floor": math.ceil(x - 0.5), "round_prefer_ceil": math.floor(x + 0.5),
                 "floor": math.floor(x), "ceil": math.ceil(x)}[nearest_mode]
            out[y] = v[min(max(i, 0), n_in - 1)]
            continue
        # Every input position i weighs kernel((i - x) * s): the kernel, stretched by 1/s when antialiasing.
        s = min(scale, 1.0) if antialias else 1.0
        reach = int(math.ceil(2 / s)) + 2
        taps = [(i, _kernel(mode, (i - x) * s, a)) for i in range(math.floor(x) - reach, math.floor(x) + reach + 1)]
        if exclude_outside:
            taps = [(i, w if 0 <= i < n_in else 0.0) for i, w in taps]
        total = sum(w for _, w in taps)
        if not (antialias or exclude_outside):
            total = 1.0           # the plain kernels' weights sum to 1 already
        out[y] = sum(w * v[min(max(i, 0), n_in - 1)] for i, w in taps) / total
    return out


def _resize_spec(x, *, scales=None, sizes=None, axes=None, roi=None, mode="nearest", coord="half_pixel",
                 nearest_mode="round_prefer_floor", antialias=0, a=-0.75, exclude_outside=0, extrapolation=0.0,
                 policy="stretch"):
    r = x.ndim
    axes = list(range(r)) if axes is None else [d % r for d in axes]
    if sizes is not None:
        out = dict(zip(axes, sizes))
        scale = {d: out[d] / x.shape[d] for d in axes}
        if policy != "stretch":
            s = (min if policy == "not_larger" else max)(scale.values())
            scale = {d: s for d in axes}
            out = {d: math.floor(s * x.shape[d] + 0.5) for d in axes}
    else:
        scale = {d: float(s) for d, s in zip(axes, np.asarray(scales, np.float32))}
        out = {d: math.floor(scale[d] * x.shape[d]) for d in axes}
    roi = None if roi is None else np.asarray(roi, np.float32).tolist()     # as the model stores it
    rois = {d: (roi[i], roi[i + len(axes)]) for i, d in enumerate(axes)} if roi is not None else {}
    y = x.astype(np.float64)
    if any(out[d] == 0 for d in axes):
        return np.zeros([out.get(d, n) for d, n in enumerate(x.shape)], x.dtype)
    for d in axes:
        y = np.apply_along_axis(_resize_1d, d, y, out[d], scale[d], mode=mode, coord=coord,
                                nearest_mode=nearest_mode, antialias=antialias, a=a,
                                exclude_outside=exclude_outside, roi=rois.get(d), extrapolation=extrapolation)
    return y.astype(x.dtype)


def _resize_model(x, *, scales=None, sizes=None, roi=None, opset=19, **attrs):
    inits = [("roi", None if roi is None else np.asarray(roi, np.float32)),
             ("scales", None if scales is None else np.asarray(scales, np.float32)),
             ("sizes", None if sizes is None else np.asarray(sizes, np.int64))]
    while inits[-1][1] is None:
        inits.pop()
    return _model("Resize", x, inits, opset=opset, **attrs)


_SPEC_KEYS = {"coordinate_transformation_mode": "coord", "cubic_coeff_a": "a", "extrapolation_value": "extrapolation",
              "keep_aspect_ratio_policy": "policy"}


def _check_resize(x, rtol=1e-5, atol=1e-6, roundtrip=True, **kw):
    prog = ad.onnx.load(_resize_model(x, **kw))
    got = prog(x)
    spec = _resize_spec(x, **{_SPEC_KEYS.get(k, k): v for k, v in kw.items() if k != "opset"})
    assert got.dtype == x.dtype and got.shape == spec.shape
    # Float32: the importer sums the taps in float32, the spec reference in float64.
    np.testing.assert_allclose(got, spec, rtol=rtol, atol=atol)
    if roundtrip:
        _round_trip(prog, x, spec, rtol, atol)
    return prog


_X = np.random.default_rng(0).standard_normal((1, 2, 4, 5)).astype(np.float32)
_COORDS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("coord", _COORDS)
@pytest.mark.parametrize("scales", [[1, 1, 2.0, 1.5], [1, 1, 0.6, 0.5], [1, 1, 1.7, 0.8]])
def test_resize_nearest_matches_the_spec(nearest_mode, coord, scales):
    _check_resize(_X, scales=scales, mode="nearest", coordinate_transformation_mode=coord, nearest_mode=nearest_mode)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("coord", _COORDS)
@pytest.mark.parametrize("size", [(1, 2, 7, 3), (1, 2, 3, 8), (1, 2, 1, 1), (1, 2, 4, 5)])
def test_resize_linear_and_cubic_match_the_spec(mode, coord, size):
    _check_resize(_X, sizes=size, mode=mode, coordinate_transformation_mode=coord)


@pytest.mark.parametrize("mode,a,exclude", [("linear", -0.75, 0), ("cubic", -0.75, 0), ("cubic", -0.5, 1),
                                            ("cubic", -0.75, 1)])
@pytest.mark.parametrize("scales", [[1, 1, 0.5, 0.6], [1, 1, 0.3, 2.0], [1, 1, 0.75, 1.0]])
def test_resize_antialias_and_exclude_outside_match_the_spec(mode, a, exclude, scales):
    _check_resize(_X, scales=scales, mode=mode, antialias=1, cubic_coeff_a=a, exclude_outside=exclude)
    _check_resize(_X, scales=scales, mode=mode, cubic_coeff_a=a, exclude_outside=exclude)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_tf_crop_and_resize_extrapolates_outside_the_roi(mode):
    roi = [0, 0, -0.2, 0.4, 1, 1, 0.6, 1.3]      # reaches outside the input on both ends
    _check_resize(_X, sizes=[1, 2, 5, 6], roi=roi, mode=mode, coordinate_transformation_mode="tf_crop_and_resize",
                  extrapolation_value=7.5)
    # With axes, the roi names only those axes.
    _check_resize(_X, sizes=[6, 5], axes=[3, 2], roi=[0.4, -0.2, 1.3, 0.6], mode=mode,
                  coordinate_transformation_mode="tf_crop_and_resize")


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
@pytest.mark.parametrize("axes", [None, [2, 3], [3, -2]])
def test_resize_keep_aspect_ratio_policy_and_axes(policy, axes):
    sizes = [1, 2, 7, 6] if axes is None else [7, 6] if axes == [2, 3] else [6, 7]
    _check_resize(_X, sizes=sizes, axes=axes, mode="linear", keep_aspect_ratio_policy=policy)
    if policy == "stretch":
        scales = [1, 1, 1.5, 0.6] if axes is None else [1.5, 0.6] if axes == [2, 3] else [0.6, 1.5]
        _check_resize(_X, scales=scales, axes=axes, mode="nearest")


def test_resize_nearest_copies_integers_and_opset_11_reads_an_empty_scales():
    x = np.arange(20, dtype=np.int64).reshape(1, 1, 4, 5)
    _check_resize(x, sizes=[1, 1, 7, 3], mode="nearest", nearest_mode="round_prefer_ceil")
    # Resize-11 takes (X, roi, scales, sizes) with empty roi and scales when sizes are given.
    model = _model("Resize", _X, [("roi", np.zeros(0, np.float32)), ("scales", np.zeros(0, np.float32)),
                                  ("sizes", np.array([1, 2, 6, 9], np.int64))], opset=11, mode="linear")
    np.testing.assert_allclose(ad.onnx.load(model)(_X), _resize_spec(_X, sizes=[1, 2, 6, 9], mode="linear"),
                               rtol=1e-5, atol=1e-6)


def test_resize_to_an_empty_axis_gives_an_empty_output():
    for mode in ("nearest", "linear", "cubic"):
        _check_resize(_X, sizes=[1, 2, 0, 3], mode=mode, roundtrip=False)
        _check_resize(_X, scales=[1, 1, 0.2, 1], mode=mode, roundtrip=False)


def test_resize_float64_program_differentiates():
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 5))
    for kw in ({"mode": "linear", "sizes": [1, 2, 7, 3]}, {"mode": "cubic", "scales": [1, 1, 0.5, 1.5], "antialias": 1},
               {"mode": "nearest", "scales": [1, 1, 2, 0.6]},
               {"mode": "linear", "sizes": [1, 2, 5, 6], "roi": [0, 0, -0.2, 0.4, 1, 1, 0.6, 1.3],
                "coordinate_transformation_mode": "tf_crop_and_resize"}):
        prog = _check_resize(x, rtol=1e-12, atol=1e-12, **kw)
        ad.check_grads(prog, (x,), order=2)


def test_upsample_nearest_and_linear_repeat_as_the_spec_says():
    x = np.random.default_rng(2).standard_normal((1, 1, 2, 3)).astype(np.float32)
    scales = np.array([1, 1, 2, 3], np.float32)
    prog = ad.onnx.load(_model("Upsample", x, [("scales", scales)], opset=9, mode="nearest"))
    expected = np.repeat(np.repeat(x, 2, axis=2), 3, axis=3)      # the spec: y[i] = x[floor(i / scale)]
    np.testing.assert_array_equal(prog(x), expected)
    _round_trip(prog, x, expected, 0, 0)
    prog7 = ad.onnx.load(_model("Upsample", x, opset=7, mode="linear", scales=[1.0, 1.0, 2.0, 3.0]))
    np.testing.assert_allclose(prog7(x), _resize_spec(x, scales=scales, mode="linear", coord="asymmetric"),
                               rtol=1e-5, atol=1e-6)
    # The spec's worked example of bilinear upsampling: [[1, 2], [3, 4]] by (2, 4).
    ex = np.array([[[[1, 2], [3, 4]]]], np.float32)
    prog = ad.onnx.load(_model("Upsample", ex, [("scales", np.array([1, 1, 2, 4], np.float32))], opset=9,
                               mode="linear"))
    np.testing.assert_allclose(prog(ex)[0, 0], [[1, 1.25, 1.5, 1.75, 2, 2, 2, 2], [2, 2.25, 2.5, 2.75, 3, 3, 3, 3],
                                               [3, 3.25, 3.5, 3.75, 4, 4, 4, 4], [3, 3.25, 3.5, 3.75, 4, 4, 4, 4]])


@pytest.mark.parametrize("mode,nearest_mode,antialias,exclude", [
    ("nearest", "round_prefer_floor", 0, 0), ("nearest", "round_prefer_ceil", 0, 0), ("nearest", "floor", 0, 0),
    ("nearest", "ceil", 0, 0), ("linear", None, 0, 0), ("linear", None, 1, 0), ("linear", None, 1, 1),
    ("cubic", None, 0, 0), ("cubic", None, 0, 1), ("cubic", None, 1, 0), ("cubic", None, 1, 1)])
@pytest.mark.parametrize("coord", _COORDS)
def test_resize_agrees_with_onnxruntime(mode, nearest_mode, antialias, exclude, coord):
    # ONNX Runtime computes the source coordinates in float32, the spec's reference (and the importer)
    # in float64: where a coordinate falls exactly on an integer (an output of length 1 read from the
    # centre, say) floor and ceil may then differ, so these sizes avoid such ties.
    pytest.importorskip("onnxruntime", reason="a cross-check against ONNX Runtime's Resize kernel")
    x = np.random.default_rng(3).standard_normal((2, 3, 9, 7)).astype(np.float32)
    for size in [(4, 3), (13, 11), (9, 7), (2, 16)]:
        attrs = {"mode": mode, "coordinate_transformation_mode": coord, "antialias": antialias,
                 "exclude_outside": exclude} | ({"nearest_mode": nearest_mode} if nearest_mode else {})
        model = _resize_model(x, sizes=[2, 3, *size], **attrs)
        model.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.FLOAT
        # Two float32 computations summing the taps in different orders.
        np.testing.assert_allclose(ad.onnx.load(model)(x), ad.onnx.run(model, x)[0], rtol=1e-5, atol=1e-5,
                                   err_msg=f"{attrs} {size}")


@pytest.mark.parametrize("attrs,inits,message", [
    ({"mode": "nearest", "antialias": 1}, {"scales": [1, 1, 0.5, 0.5]}, "antialias=1"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_half_pixel"}, {"scales": [1, 1, 2, 2]},
     "coordinate_transformation_mode='tf_half_pixel'"),
    ({"mode": "area"}, {"scales": [1, 1, 2, 2]}, "mode='area'"),
    ({"mode": "nearest", "nearest_mode": "round"}, {"scales": [1, 1, 2, 2]}, "nearest_mode='round'"),
    ({"mode": "linear", "keep_aspect_ratio_policy": "fit"}, {"sizes": [1, 2, 3, 3]}, "keep_aspect_ratio_policy='fit'"),
    ({"mode": "linear"}, {"scales": [1, 1, 2, 2], "sizes": [1, 2, 3, 3]}, "exactly one of scales and sizes"),
    ({"mode": "linear"}, {"scales": [2, 2]}, "scales has 2 entries for 4 axes"),
    ({"mode": "linear"}, {"sizes": [1, 2, -3, 3]}, "sizes=[1, 2, -3, 3] must be non-negative"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
     {"scales": [1, 1, 2, 2], "roi": [0, 0, 0.2, 0, 1, 1, 0.8, 1]}, "with scales (not sizes) and a roi"),
])
def test_resize_refuses_what_it_cannot_reproduce_naming_the_attribute(attrs, inits, message):
    with pytest.raises(ad.onnx.OnnxImportError, match="Resize.*" + re.escape(message)):
        ad.onnx.load(_resize_model(_X, **inits, **attrs))


def test_resize_refuses_interpolating_integers_and_downsampling_nearest_upsample():
    x = np.arange(20, dtype=np.int32).reshape(1, 1, 4, 5)
    with pytest.raises(ad.onnx.OnnxImportError, match="mode='linear' on int32"):
        ad.onnx.load(_resize_model(x, scales=[1, 1, 2, 2], mode="linear"))
    with pytest.raises(ad.onnx.OnnxImportError, match="Upsample.*below 1"):
        ad.onnx.load(_model("Upsample", _X, [("scales", np.array([1, 1, 0.5, 1], np.float32))], opset=9))

# ------------------------------------------------------------------------- Tile, Trilu, EyeLike, OneHot


def test_tile_repeats_each_axis():
    x = np.random.default_rng(4).standard_normal((2, 3))
    for reps in ([2, 3], [1, 1], [3, 1], [0, 2]):
        prog = ad.onnx.load(_model("Tile", x, [("repeats", np.array(reps, np.int64))], opset=13))
        expected = np.array([[x[i % 2, j % 3] for j in range(3 * reps[1])] for i in range(2 * reps[0])]) \
            .reshape(2 * reps[0], 3 * reps[1])
        np.testing.assert_array_equal(prog(x), expected)
        if 0 not in reps:
            ad.check_grads(prog, (x,), order=2)
            _round_trip(prog, x, expected, 0, 0)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -1, -7, 9])
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 3), (1, 5), (3, 0, 5)])
def test_trilu_keeps_one_triangle(upper, k, shape):
    x = np.random.default_rng(5).integers(-9, 9, shape).astype(np.int64)
    inits = [] if k is None else [("k", np.array(k, np.int64))]
    prog = ad.onnx.load(_model("Trilu", x, inits, opset=14, upper=upper))
    kk = 0 if k is None else k
    i, j = np.indices(shape[-2:])
    keep = (j - i >= kk) if upper else (j - i <= kk)          # the spec: the k-th diagonal and above/below
    np.testing.assert_array_equal(prog(x), np.where(keep, x, 0))
    xf = x.astype(np.float64)
    progf = ad.onnx.load(_model("Trilu", xf, inits, opset=14, upper=upper))
    if xf.size:
        ad.check_grads(progf, (xf,), order=2)
        _round_trip(progf, xf, np.where(keep, xf, 0), 0, 0)


@pytest.mark.parametrize("k", [0, 1, -2, 7])
@pytest.mark.parametrize("dtype", [None, onnx.TensorProto.INT32, onnx.TensorProto.DOUBLE])
def test_eye_like_has_ones_on_the_k_th_diagonal(k, dtype):
    x = np.zeros((3, 5), np.float32)
    attrs = {"k": k} | ({} if dtype is None else {"dtype": dtype})
    got = ad.onnx.load(_model("EyeLike", x, **attrs, opset=22))(x)
    want_dtype = np.float32 if dtype is None else helper.tensor_dtype_to_np_dtype(dtype)
    expected = np.array([[1 if j - i == k else 0 for j in range(5)] for i in range(3)], dtype=want_dtype)
    assert got.dtype == want_dtype
    np.testing.assert_array_equal(got, expected)


def _one_hot_spec(indices, depth, values, axis):
    idx = np.asarray(indices).astype(np.int64)
    axis = axis % (idx.ndim + 1)
    out = np.empty(idx.shape[:axis] + (depth,) + idx.shape[axis:], values.dtype)
    for pos in itertools.product(*map(range, out.shape)):
        i = idx[pos[:axis] + pos[axis + 1:]]
        i = i + depth if -depth <= i < 0 else i
        out[pos] = values[1] if i == pos[axis] else values[0]
    return out


@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32, np.float32])
def test_one_hot_places_on_and_off_values(axis, idx_dtype):
    indices = np.array([[0, 3, -1], [-4, 5, -6]], idx_dtype)        # in range, negative, and outside [-4, 4)
    values = np.array([-2.0, 3.5])
    info = [helper.make_tensor_value_info("i", helper.np_dtype_to_tensor_dtype(indices.dtype), indices.shape),
            helper.make_tensor_value_info("v", onnx.TensorProto.DOUBLE, [2])]
    node = helper.make_node("OneHot", ["i", "depth", "v"], ["y"], axis=axis)
    graph = helper.make_graph([node], "g", info, [helper.make_tensor_value_info("y", 0, None)],
                              [onnx.numpy_helper.from_array(np.array(4, np.int64), "depth")])
    prog = ad.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]))
    expected = _one_hot_spec(indices, 4, values, axis)
    np.testing.assert_array_equal(prog(indices, values), expected)
    ad.check_grads(lambda v: prog(indices, v), (values,), order=2)     # the on and off values get gradients
    pytest.importorskip("onnxruntime")
    np.testing.assert_array_equal(ad.onnx.run(ad.onnx.export(prog), indices, values)[0], expected)

# ------------------------------------------------------------------- DepthToSpace, SpaceToDepth, CenterCropPad


def _depth_to_space_spec(x, k, mode):
    b, c, h, w = x.shape
    cc = c // (k * k)
    out = np.empty((b, cc, h * k, w * k), x.dtype)
    for n, ch, i, j in itertools.product(range(b), range(cc), range(h * k), range(w * k)):
        bi, bj = i % k, j % k
        src = (bi * k + bj) * cc + ch if mode == "DCR" else ch * k * k + bi * k + bj
        out[n, ch, i, j] = x[n, src, i // k, j // k]
    return out


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("k", [2, 3])
def test_depth_to_space_and_space_to_depth_move_blocks(mode, k):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 2 * k * k, 2, 3))
    prog = ad.onnx.load(_model("DepthToSpace", x, blocksize=k, mode=mode, opset=13))
    expected = _depth_to_space_spec(x, k, mode)
    np.testing.assert_array_equal(prog(x), expected)
    ad.check_grads(prog, (x,), order=2)
    _round_trip(prog, x, expected, 0, 0)
    # SpaceToDepth is DepthToSpace's inverse in the same mode (opset 28 gave it a mode; DCR before).
    prog = ad.onnx.load(_model("SpaceToDepth", expected, blocksize=k, mode=mode, opset=28)) if mode == "CRD" else \
        ad.onnx.load(_model("SpaceToDepth", expected, blocksize=k, opset=13))
    np.testing.assert_array_equal(prog(expected), x)
    ad.check_grads(prog, (expected,), order=2)
    _round_trip(prog, expected, x, 0, 0)


@pytest.mark.parametrize("shape,axes", [([3, 4], None), ([5, 8], None), ([2, 7], None), ([6], [1]), ([7, 1], [-1, 0]),
                                        ([4, 9], [0, 1])])
def test_center_crop_pad_centres_the_window(shape, axes):
    x = np.random.default_rng(7).standard_normal((5, 4))
    prog = ad.onnx.load(_model("CenterCropPad", x, [("shape", np.array(shape, np.int64))], opset=18,
                               **({} if axes is None else {"axes": axes})))
    target = list(x.shape)
    for a, n in zip(range(2) if axes is None else [a % 2 for a in axes], shape):
        target[a] = n
    # The spec: the input and output windows are centred, an odd leftover entry going at the end.
    expected = np.zeros(target)
    for i, j in itertools.product(range(target[0]), range(target[1])):
        si, sj = i + (x.shape[0] - target[0]) // 2 if target[0] <= x.shape[0] else i - (target[0] - x.shape[0]) // 2, \
            j + (x.shape[1] - target[1]) // 2 if target[1] <= x.shape[1] else j - (target[1] - x.shape[1]) // 2
        if 0 <= si < x.shape[0] and 0 <= sj < x.shape[1]:
            expected[i, j] = x[si, sj]
    np.testing.assert_array_equal(prog(x), expected)
    ad.check_grads(prog, (x,), order=2)
    _round_trip(prog, x, expected, 0, 0)


def test_computed_scales_and_repeats_are_refused_naming_the_operand():
    info = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 2, 2]),
            helper.make_tensor_value_info("s", onnx.TensorProto.FLOAT, [4])]
    graph = helper.make_graph([helper.make_node("Resize", ["x", "", "s"], ["y"])], "g", info,
                              [helper.make_tensor_value_info("y", 0, None)])
    with pytest.raises(ad.onnx.OnnxImportError, match=r"'s' \(the scales of Resize"):
        ad.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]))
