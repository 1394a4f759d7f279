"""Import of ONNX convolution and pooling (issue 28): Conv, ConvTranspose, MaxPool, AveragePool, LpPool.

Each case is a one-node model built with onnx.helper, loaded with ``ad.onnx.load`` and compared with a
direct numpy loop over the operator's definition (``onnx.defs.get_schema(op).doc``: each output is the
sum, maximum or average of the input entries its window reads); then the loaded program is exported
and run on ONNX Runtime, and its gradient checked against finite differences.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import autograd_dag as ad  # noqa: E402

_D, _F = TensorProto.DOUBLE, TensorProto.FLOAT


def _model(op, x_shape, out_shapes, *, inits=(), elem=_D, out_elems=None, **attrs):
    names = [f"y{i}" for i in range(len(out_shapes))]
    node = helper.make_node(op, ["x"] + [k for k, _ in inits], names, **attrs)
    out_elems = out_elems or [elem] * len(out_shapes)
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info("x", elem, list(x_shape))],
                              [helper.make_tensor_value_info(n, e, list(s))
                               for n, e, s in zip(names, out_elems, out_shapes)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _outputs(prog, *args):
    out = prog(*args)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _round_trip(prog, x, expected, rtol=1e-12):
    """The loaded program, exported and run on ONNX Runtime, gives the definition's values again."""
    pytest.importorskip("onnxruntime")
    from autograd_dag.onnx._run import run
    back = run(ad.onnx.export(prog), x)
    for b, e in zip(back, expected):
        # ONNX Runtime sums in its own order: a tolerance (float64), exact for integers.
        np.testing.assert_allclose(b, e, rtol=rtol, atol=rtol)

# ----------------------------------------------------------- references


def _same_pads(size, kernel, strides, dilations, auto):
    begin, end = [], []
    for n, k, s, d in zip(size, kernel, strides, dilations):
        total = max((-(-n // s) - 1) * s + d * (k - 1) + 1 - n, 0)
        lo, hi = total // 2, total - total // 2
        begin.append(lo if auto == "SAME_UPPER" else hi)
        end.append(hi if auto == "SAME_UPPER" else lo)
    return begin, end


def _conv_ref(x, w, strides, dilations, begin, end, groups):
    """out[n, o, p] = Σ_{c in o's group, i} w[o, c, i] · x[n, c, p·s + i·d − begin] (0 outside x)."""
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    size, kernel = x.shape[2:], w.shape[2:]
    out = [(sz + b + e - d * (k - 1) - 1) // s + 1
           for sz, k, s, d, b, e in zip(size, kernel, strides, dilations, begin, end)]
    y = np.zeros((n, o) + tuple(out))
    for oc in range(o):
        g = oc // (o // groups)
        for p in itertools.product(*map(range, out)):
            total = np.zeros(n)
            for ci in range(cg):
                for i in itertools.product(*map(range, kernel)):
                    q = [pa * s + ia * d - b for pa, ia, s, d, b in zip(p, i, strides, dilations, begin)]
                    if all(0 <= qa < sz for qa, sz in zip(q, size)):
                        total = total + w[(oc, ci) + i] * x[(slice(None), g * cg + ci) + tuple(q)]
            y[(slice(None), oc) + p] = total
    return y


def _conv_transpose_ref(x, w, strides, dilations, output_padding, begin, end, groups):
    """full[n, g·og + o, a·s + i·d] += x[n, c, a] · w[c, o, i] over c in group g; then crop the pads."""
    n, c = x.shape[:2]
    og = w.shape[1]
    size, kernel = x.shape[2:], w.shape[2:]
    full = [(sz - 1) * s + d * (k - 1) + 1 + op
            for sz, k, s, d, op in zip(size, kernel, strides, dilations, output_padding)]
    y = np.zeros((n, og * groups) + tuple(full))
    for ci in range(c):
        g = ci // (c // groups)
        for a in itertools.product(*map(range, size)):
            for i in itertools.product(*map(range, kernel)):
                q = tuple(aa * s + ia * d for aa, ia, s, d in zip(a, i, strides, dilations))
                for o in range(og):
                    y[(slice(None), g * og + o) + q] += x[(slice(None), ci) + a] * w[(ci, o) + i]
    return y[(slice(None),) * 2 + tuple(slice(b, f - e) for b, e, f in zip(begin, end, full))]


def _pool_ref(x, kind, kernel, strides, dilations, begin, end, ceil_mode=False, count_include_pad=False, p=2,
              storage_order=0):
    """Each output reads x[p·s + i·d − begin] over the kernel; positions outside x are pads (ignored by
    max; counted by the average if count_include_pad and inside the explicit pads)."""
    n, c = x.shape[:2]
    size = x.shape[2:]
    out = []
    for sz, k, s, d, b, e in zip(size, kernel, strides, dilations, begin, end):
        span = sz + b + e - d * (k - 1) - 1
        m = -(-span // s) + 1 if ceil_mode else span // s + 1
        if ceil_mode and (m - 1) * s >= sz + b:
            m -= 1
        out.append(m)
    y = np.zeros((n, c) + tuple(out))
    idx = np.zeros(y.shape, dtype=np.int64)
    for nn, cc in itertools.product(range(n), range(c)):
        for pos in itertools.product(*map(range, out)):
            vals, where, count = [], [], 0
            for i in itertools.product(*map(range, kernel)):
                q = [pa * s + ia * d - b for pa, ia, s, d, b in zip(pos, i, strides, dilations, begin)]
                if all(0 <= qa < sz for qa, sz in zip(q, size)):
                    vals.append(x[(nn, cc) + tuple(q)])
                    where.append(np.ravel_multi_index(q, size, order="F" if storage_order else "C"))
                    count += 1
                elif count_include_pad and all(-b <= qa < sz + e for qa, sz, b, e in zip(q, size, begin, end)):
                    count += 1
            vals = np.array(vals)
            if kind == "max":
                y[(nn, cc) + pos] = vals.max()
                idx[(nn, cc) + pos] = (nn * c + cc) * int(np.prod(size)) + where[int(np.argmax(vals))]
            elif kind == "avg":
                y[(nn, cc) + pos] = vals.sum() / count
            else:
                y[(nn, cc) + pos] = (np.abs(vals) ** p).sum() ** (1.0 / p)
    return y.astype(x.dtype), idx

# ------------------------------------------------------------------- Conv


_CONV_CASES = {
    "1d": ((2, 2, 7), (3, 2, 3), {}),
    "1d_dilated_strided_asymmetric": ((1, 2, 9), (2, 2, 3), dict(dilations=[2], strides=[2], pads=[1, 2])),
    "2d_dilated": ((1, 2, 7, 6), (3, 2, 3, 2), dict(dilations=[2, 3])),
    "2d_dilated_height_only": ((1, 2, 7, 6), (3, 2, 3, 2), dict(dilations=[2, 1], pads=[1, 0, 0, 1])),
    "2d_asymmetric_pads": ((1, 2, 5, 5), (2, 2, 3, 3), dict(pads=[0, 1, 2, 0], strides=[2, 1])),
    "2d_groups": ((2, 4, 5, 5), (6, 2, 3, 3), dict(group=2, pads=[1, 1, 1, 1])),
    "2d_groups_dilated": ((1, 6, 7, 7), (3, 2, 2, 2), dict(group=3, dilations=[2, 2], strides=[2, 1])),
    "2d_depthwise": ((2, 3, 6, 5), (3, 1, 3, 3), dict(group=3, pads=[1, 1, 1, 1], strides=[2, 2])),
    "2d_depthwise_multiplier": ((1, 2, 5, 5), (4, 1, 2, 3), dict(group=2, dilations=[1, 2])),
    "2d_same_upper": ((1, 1, 5, 6), (2, 1, 3, 2), dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    "2d_same_lower": ((1, 1, 5, 6), (2, 1, 3, 2), dict(auto_pad="SAME_LOWER", strides=[2, 2])),
    "2d_same_lower_dilated": ((1, 1, 6, 6), (1, 1, 3, 3), dict(auto_pad="SAME_LOWER", dilations=[2, 2])),
    "2d_valid": ((1, 1, 5, 6), (2, 1, 3, 2), dict(auto_pad="VALID", strides=[2, 2])),
    "3d": ((1, 2, 4, 5, 4), (2, 2, 2, 3, 2), dict(pads=[1, 0, 1, 0, 1, 1], strides=[2, 1, 1])),
    "3d_dilated_groups": ((1, 4, 5, 5, 5), (2, 2, 2, 2, 2), dict(dilations=[2, 1, 2], group=2)),
}


def _conv_geometry(x_shape, w_shape, attrs):
    rank = len(x_shape) - 2
    strides, dilations = attrs.get("strides", [1] * rank), attrs.get("dilations", [1] * rank)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto.startswith("SAME"):
        begin, end = _same_pads(x_shape[2:], w_shape[2:], strides, dilations, auto)
    else:
        pads = attrs.get("pads", [0] * 2 * rank)
        begin, end = pads[:rank], pads[rank:]
    return strides, dilations, begin, end


@pytest.mark.parametrize("case", sorted(_CONV_CASES))
def test_conv_forms(case):
    x_shape, w_shape, attrs = _CONV_CASES[case]
    rng = np.random.default_rng(len(case))
    x, w, b = rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(w_shape[0])
    strides, dilations, begin, end = _conv_geometry(x_shape, w_shape, attrs)
    expected = _conv_ref(x, w, strides, dilations, begin, end, attrs.get("group", 1)) + \
        b.reshape((-1,) + (1,) * (len(x_shape) - 2))
    prog = ad.onnx.load(_model("Conv", x_shape, [expected.shape], inits=[("w", w), ("b", b)], **attrs))
    (y,) = _outputs(prog, x)
    # Two summation orders of the same products (float64): a tolerance, not ==.
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)
    _round_trip(prog, x, [expected])
    ad.check_grads(lambda x: prog(x), (x,), modes=("rev", "fwd"))


@pytest.mark.parametrize("case", ["2d_groups_dilated", "2d_depthwise_multiplier", "3d_dilated_groups"])
def test_conv_weight_gradient(case):
    """The kernel's gradient of a grouped, dilated convolution (the slices of w differentiate)."""
    x_shape, w_shape, attrs = _CONV_CASES[case]
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    strides, dilations, begin, end = _conv_geometry(x_shape, w_shape, attrs)
    out = _conv_ref(x, w, strides, dilations, begin, end, attrs.get("group", 1)).shape
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", _D, list(x_shape)),
                               helper.make_tensor_value_info("w", _D, list(w_shape))],
                              [helper.make_tensor_value_info("y", _D, list(out))])
    prog = ad.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    ad.check_grads(lambda x, w: prog(x, w), (x, w), modes=("rev",))


def test_dilated_conv_skips_the_entries_it_does_not_read():
    """An infinite input entry that no dilated window reads leaves the result finite: a kernel
    dilated by inserting zeros would multiply it by 0 (NaN)."""
    x = np.zeros((1, 1, 5, 5))
    x[0, 0, 1, 1] = np.inf                                   # read by no window of a 3x3 kernel dilated by 2
    w = np.ones((1, 1, 3, 3))
    prog = ad.onnx.load(_model("Conv", x.shape, [(1, 1, 1, 1)], inits=[("w", w)], dilations=[2, 2]))
    (y,) = _outputs(prog, x)
    np.testing.assert_array_equal(y, np.zeros((1, 1, 1, 1)))
    x[0, 0, 2, 2] = -np.inf                                  # read by it: -inf, not NaN
    assert _outputs(prog, x)[0].item() == -np.inf


def test_conv_refusals_name_the_attribute():
    with pytest.raises(ad.onnx.OnnxImportError, match=r"Conv over 4 spatial axes"):
        ad.onnx.load(_model("Conv", (1, 1, 2, 2, 2, 2), [(1, 1, 1, 1, 1, 1)],
                            inits=[("w", np.ones((1, 1, 2, 2, 2, 2)))]))
    with pytest.raises(ad.onnx.OnnxImportError, match=r"Conv with group=3"):
        ad.onnx.load(_model("Conv", (1, 4, 3, 3), [(1, 3, 3, 3)], inits=[("w", np.ones((3, 1, 1, 1)))], group=3))

# --------------------------------------------------------- ConvTranspose


_CONV_T_CASES = {
    "1d_dilated": ((1, 2, 4), (2, 3, 3), dict(dilations=[2], strides=[2])),
    "2d_dilated": ((1, 1, 3, 3), (1, 2, 2, 2), dict(dilations=[2, 2])),
    "2d_dilated_height_pads": ((1, 2, 3, 4), (2, 1, 3, 2), dict(dilations=[2, 1], strides=[1, 2], pads=[1, 0, 2, 1])),
    "2d_groups": ((2, 4, 3, 3), (4, 3, 3, 3), dict(group=2, strides=[2, 2], output_padding=[1, 0])),
    "2d_depthwise_dilated": ((1, 3, 3, 3), (3, 1, 2, 2), dict(group=3, dilations=[2, 3])),
    "2d_same_upper": ((1, 1, 3, 4), (1, 2, 3, 3), dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    "2d_same_lower": ((1, 1, 3, 4), (1, 2, 3, 3), dict(auto_pad="SAME_LOWER", strides=[2, 2])),
    "2d_valid": ((1, 1, 3, 4), (1, 2, 3, 3), dict(auto_pad="VALID", strides=[2, 1])),
    "3d": ((1, 2, 2, 3, 2), (2, 2, 2, 2, 3), dict(strides=[2, 1, 2], pads=[0, 1, 0, 1, 0, 2])),
    "3d_dilated_output_padding": ((1, 1, 2, 2, 3), (1, 2, 2, 2, 2),
                                  dict(strides=[2, 2, 1], dilations=[1, 2, 2], output_padding=[1, 1, 0])),
}


@pytest.mark.parametrize("case", sorted(_CONV_T_CASES))
def test_conv_transpose_forms(case):
    x_shape, w_shape, attrs = _CONV_T_CASES[case]
    rank = len(x_shape) - 2
    rng = np.random.default_rng(len(case) + 7)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    groups = attrs.get("group", 1)
    b = rng.standard_normal(w_shape[1] * groups)
    strides, dilations = attrs.get("strides", [1] * rank), attrs.get("dilations", [1] * rank)
    output_padding = attrs.get("output_padding", [0] * rank)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto.startswith("SAME"):   # the spec: output shape = input shape · stride, total pad split
        total = [(n - 1) * s + d * (k - 1) + 1 + op - n * s
                 for n, k, s, d, op in zip(x_shape[2:], w_shape[2:], strides, dilations, output_padding)]
        small, large = [t // 2 for t in total], [t - t // 2 for t in total]
        begin, end = (small, large) if auto == "SAME_UPPER" else (large, small)
    else:
        pads = attrs.get("pads", [0] * 2 * rank)
        begin, end = pads[:rank], pads[rank:]
    expected = _conv_transpose_ref(x, w, strides, dilations, output_padding, begin, end, groups) + \
        b.reshape((-1,) + (1,) * rank)
    if auto.startswith("SAME"):
        assert list(expected.shape[2:]) == [n * s for n, s in zip(x_shape[2:], strides)]
    prog = ad.onnx.load(_model("ConvTranspose", x_shape, [expected.shape], inits=[("w", w), ("b", b)], **attrs))
    (y,) = _outputs(prog, x)
    # Two summation orders of the same products (float64): a tolerance, not ==.
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)
    _round_trip(prog, x, [expected])
    ad.check_grads(lambda x: prog(x), (x,), modes=("rev", "fwd"))

def test_dilated_conv_transpose_adds_nothing_where_an_entry_does_not_reach():
    """An infinite input entry reaches only the outputs its dilated kernel places it at; the others
    stay finite (no NaN from 0·inf: each kernel position's term is added at its own places)."""
    x = np.arange(4.0).reshape(1, 1, 2, 2)
    x[0, 0, 0, 0] = np.inf
    w = np.ones((1, 1, 2, 2))
    prog = ad.onnx.load(_model("ConvTranspose", x.shape, [(1, 1, 4, 4)], inits=[("w", w)], dilations=[2, 2]))
    (y,) = _outputs(prog, x)
    expected = _conv_transpose_ref(x, w, [1, 1], [2, 2], [0, 0], [0, 0], [0, 0], 1)
    assert np.isinf(expected).sum() == 4 and not np.isnan(expected).any()
    np.testing.assert_array_equal(y, expected)   # sums of at most one product each here: exact


# -------------------------------------------------------------- pooling


_POOL_CASES = {
    "1d": ((1, 2, 7), dict(kernel_shape=[3], strides=[2])),
    "2d_pads": ((1, 2, 5, 5), dict(kernel_shape=[3, 3], pads=[1, 2, 2, 0], strides=[2, 2])),
    "2d_ceil": ((1, 1, 6, 7), dict(kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1)),
    "2d_ceil_pads": ((1, 1, 4, 4), dict(kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1)),
    "2d_dilated": ((1, 1, 7, 6), dict(kernel_shape=[2, 3], dilations=[3, 2])),
    "2d_dilated_width_ceil": ((1, 1, 6, 7), dict(kernel_shape=[2, 2], dilations=[1, 2], strides=[2, 2],
                                                 ceil_mode=1)),
    "2d_same_upper": ((1, 1, 5, 4), dict(kernel_shape=[2, 3], strides=[2, 1], auto_pad="SAME_UPPER")),
    "2d_same_lower": ((1, 1, 5, 4), dict(kernel_shape=[2, 3], strides=[2, 1], auto_pad="SAME_LOWER")),
    "2d_valid": ((1, 1, 5, 4), dict(kernel_shape=[2, 3], strides=[2, 1], auto_pad="VALID")),
    "3d": ((1, 2, 4, 5, 3), dict(kernel_shape=[2, 3, 2], strides=[2, 1, 1], pads=[1, 0, 0, 0, 1, 1])),
    "3d_dilated_ceil": ((1, 1, 5, 5, 5), dict(kernel_shape=[2, 2, 2], dilations=[2, 1, 2], strides=[2, 2, 2],
                                              ceil_mode=1)),
}


def _pool_geometry(x_shape, attrs):
    rank = len(x_shape) - 2
    kernel = attrs["kernel_shape"]
    strides, dilations = attrs.get("strides", [1] * rank), attrs.get("dilations", [1] * rank)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto.startswith("SAME"):
        begin, end = _same_pads(x_shape[2:], kernel, strides, dilations, auto)
    else:
        pads = attrs.get("pads", [0] * 2 * rank)
        begin, end = pads[:rank], pads[rank:]
    return dict(kernel=kernel, strides=strides, dilations=dilations, begin=begin, end=end,
                ceil_mode=bool(attrs.get("ceil_mode", 0)))


@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("case", sorted(_POOL_CASES))
def test_max_pool_forms_and_indices(case, storage_order):
    x_shape, attrs = _POOL_CASES[case]
    x = np.random.default_rng(len(case)).permutation(np.prod(x_shape)).reshape(x_shape).astype(np.float64)
    expected, indices = _pool_ref(x, "max", storage_order=storage_order, **_pool_geometry(x_shape, attrs))
    prog = ad.onnx.load(_model("MaxPool", x_shape, [expected.shape] * 2, out_elems=[_D, TensorProto.INT64],
                               storage_order=storage_order, **attrs))
    y, i = _outputs(prog, x)
    np.testing.assert_array_equal(y, expected)      # a maximum is one of the entries: exact
    assert i.dtype == np.int64
    np.testing.assert_array_equal(i, indices)
    _round_trip(prog, x, [expected, indices])
    if storage_order == 0:   # distinct entries: no ties, so max pooling is differentiable at x
        values = ad.onnx.load(_model("MaxPool", x_shape, [expected.shape], **attrs))
        ad.check_grads(lambda x: values(x), (x,), modes=("rev", "fwd"))


def test_max_pool_of_integers_pads_with_the_least_integer():
    x = np.array([[[[3, 250], [7, 0]]]], dtype=np.uint8)
    prog = ad.onnx.load(_model("MaxPool", x.shape, [(1, 1, 2, 2)], elem=TensorProto.UINT8, kernel_shape=[2, 2],
                               pads=[1, 1, 0, 0]))
    (y,) = _outputs(prog, x)
    assert y.dtype == np.uint8
    np.testing.assert_array_equal(y, [[[[3, 250], [7, 250]]]])


@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("case", sorted(_POOL_CASES))
def test_average_pool_forms(case, count_include_pad):
    x_shape, attrs = _POOL_CASES[case]
    x = np.random.default_rng(len(case)).standard_normal(x_shape)
    expected, _ = _pool_ref(x, "avg", count_include_pad=count_include_pad, **_pool_geometry(x_shape, attrs))
    prog = ad.onnx.load(_model("AveragePool", x_shape, [expected.shape], count_include_pad=count_include_pad,
                               **attrs))
    (y,) = _outputs(prog, x)
    # Two summation orders (float64): a tolerance, not ==.
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)
    _round_trip(prog, x, [expected])
    ad.check_grads(lambda x: prog(x), (x,), modes=("rev", "fwd"))


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("case", ["1d", "2d_pads", "2d_dilated", "3d"])
def test_lp_pool_forms(case, p):
    x_shape, attrs = _POOL_CASES[case]
    x = np.random.default_rng(len(case)).standard_normal(x_shape) + 3.0   # away from |x|'s kink at 0
    expected, _ = _pool_ref(x, "lp", p=p, **_pool_geometry(x_shape, attrs))
    prog = ad.onnx.load(_model("LpPool", x_shape, [expected.shape], p=p, **attrs))
    (y,) = _outputs(prog, x)
    # Power and root in two orders of summation (float64): a tolerance, not ==.
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)
    _round_trip(prog, x, [expected], rtol=1e-10)
    ad.check_grads(lambda x: prog(x), (x,), modes=("rev",))


def test_global_lp_pool():
    x = np.random.default_rng(3).standard_normal((2, 3, 4, 5))
    prog = ad.onnx.load(_model("GlobalLpPool", x.shape, [(2, 3, 1, 1)], p=3))
    (y,) = _outputs(prog, x)
    expected = (np.abs(x) ** 3).sum(axis=(2, 3), keepdims=True) ** (1 / 3)
    np.testing.assert_allclose(y, expected, rtol=1e-12)   # summation order: a tolerance
    _round_trip(prog, x, [expected], rtol=1e-10)


def test_pool_refusals_name_the_attribute():
    with pytest.raises(ad.onnx.OnnxImportError, match=r"MaxPool with auto_pad=BOGUS"):
        ad.onnx.load(_model("MaxPool", (1, 1, 4, 4), [(1, 1, 2, 2)], kernel_shape=[2, 2], auto_pad="BOGUS"))
    with pytest.raises(ad.onnx.OnnxImportError, match=r"AveragePool over 4 spatial axes"):
        ad.onnx.load(_model("AveragePool", (1, 1, 2, 2, 2, 2), [(1, 1, 1, 1, 1, 1)], kernel_shape=[2, 2, 2, 2]))
    with pytest.raises(ad.onnx.OnnxImportError, match=r"MaxPool with negative pads"):
        ad.onnx.load(_model("MaxPool", (1, 1, 4, 4), [(1, 1, 2, 2)], kernel_shape=[2, 2], pads=[-1, 0, 0, 0]))


def test_max_pool_indices_never_name_a_pad():
    """A window of -inf entries and pads (pads ignored, as -inf) names its first entry of x, not the
    pad (nor the pad's place clipped into x: row 0 here, which a window dilated by 2 does not read)."""
    x = np.full((1, 1, 3, 2), -np.inf)
    x[0, 0, 2, 1] = 1.0
    prog = ad.onnx.load(_model("MaxPool", x.shape, [(1, 1, 2, 2)] * 2, out_elems=[_D, TensorProto.INT64],
                               kernel_shape=[2, 1], dilations=[2, 1], pads=[1, 0, 0, 0]))
    y, i = _outputs(prog, x)
    np.testing.assert_array_equal(y, [[[[-np.inf, -np.inf], [-np.inf, 1.0]]]])
    # Window (0, j) reads a pad and x[1, j]; window (1, j) reads x[0, j] and x[2, j].
    np.testing.assert_array_equal(i, [[[[2, 3], [0, 5]]]])
    _round_trip(prog, x, [y, i])
