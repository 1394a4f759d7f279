"""Import of ONNX reductions, normalisations and indexing operators (issue 28): the forms the
importer refused or lacked, each a one-node model built with onnx.helper, compared with an
independent numpy computation of the operator's definition (``onnx.defs.get_schema(op).doc``),
exported back and run on ONNX Runtime, and its gradient checked where it is differentiable.
Forms that cannot be imported exactly are refused with an error naming operator and attribute.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import autograd_dag as ad  # noqa: E402
from tests.test_onnx_import_defects_b import _one_node  # noqa: E402 - the one-node model builder

_F, _D, _I64, _I32 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.INT32
_RNG = np.random.default_rng(28)




def _outputs(prog, *args):
    out = prog(*args)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _run_both(model, *args):
    """The loaded program's outputs on numpy, after checking ONNX Runtime gives the same on its export."""
    prog = ad.onnx.load(model)
    ours = _outputs(prog, *args)
    pytest.importorskip("onnxruntime")
    theirs = ad.onnx.run(ad.onnx.export(prog), *args)
    for a, b in zip(ours, theirs):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        if np.asarray(a).dtype.kind in "fc":
            # Two engines (numpy, ONNX Runtime) may round sums in different orders.
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(b, a)
    return ours


def _keep(axis, shape, keepdims):
    return shape if keepdims else tuple(d for i, d in enumerate(shape) if i != axis)

# ------------------------------------------------------------------ ArgMax / ArgMin


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis, keepdims", [(1, 1), (-1, 0), (0, 1)])
def test_argmax_select_last_index_picks_the_last_of_tied_extrema(op, axis, keepdims):
    # Integers with many ties: the first and the last index differ in most rows.
    x = _RNG.integers(0, 3, (4, 5, 3)).astype(np.int32)
    ref = np.flip(x, axis)
    ref = x.shape[axis] - 1 - (np.argmax(ref, axis) if op == "ArgMax" else np.argmin(ref, axis))
    ref = np.expand_dims(ref, axis) if keepdims else ref
    model = _one_node(op, [("x", _I32, x.shape)], [("y", _I64, ref.shape)], axis=axis, keepdims=keepdims,
                      select_last_index=1)
    (y,) = _run_both(model, x)
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, ref)
    first = _one_node(op, [("x", _I32, x.shape)], [("y", _I64, ref.shape)], axis=axis, keepdims=keepdims)
    assert (ad.onnx.load(first)(x) != y).any()   # the data tell the two rules apart

# ------------------------------------------------------------------ CumSum


@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("dtype, elem", [(np.float64, _D), (np.int32, _I32)])
def test_cumsum_exclusive_and_reverse(reverse, dtype, elem):
    x = (_RNG.standard_normal((3, 5)) * 10).astype(dtype)
    # The definition: y[j] = sum of x[i] for i < j (exclusive), i > j with reverse.
    ref = np.zeros_like(x)
    for j in range(5):
        cols = range(j + 1, 5) if reverse else range(j)
        for i in cols:
            ref[:, j] += x[:, i]
    model = _one_node("CumSum", [("x", elem, x.shape)], [("y", elem, x.shape)],
                      inits=[("axis", np.int64(1))], exclusive=1, reverse=reverse)
    (y,) = _run_both(model, x)
    assert y.dtype == dtype
    if dtype == np.int32:
        np.testing.assert_array_equal(y, ref)
    else:
        # The loop above adds in another order than cumsum does.
        np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)
        ad.check_grads(lambda t: ad.onnx.load(model)(t), (x,), order=2)

# ------------------------------------------------------------------ Reduce*


_REDUCE_REF = {"ReduceL1": lambda x, a, k: np.sum(np.abs(x), a, keepdims=k),
               "ReduceSumSquare": lambda x, a, k: np.sum(x * x, a, keepdims=k),
               "ReduceLogSum": lambda x, a, k: np.log(np.sum(x, a, keepdims=k))}


@pytest.mark.parametrize("op", list(_REDUCE_REF))
@pytest.mark.parametrize("axes, keepdims", [((1,), 1), ((0, -1), 0), (None, 1), ((), 1)])
def test_new_reductions_match_their_definition(op, axes, keepdims):
    x = _RNG.uniform(0.5, 2.0, (3, 4, 2)) * (1 if op == "ReduceLogSum" else _RNG.choice([-1, 1], (3, 4, 2)))
    ref_axes = None if axes is None else tuple(a % 3 for a in axes)
    if axes == ():
        # noop_with_empty_axes: the elementwise part alone.
        ref = _REDUCE_REF[op](x[..., None], -1, False)
    else:
        ref = _REDUCE_REF[op](x, ref_axes, bool(keepdims))
    inits = [] if axes is None else [("axes", np.asarray(axes, np.int64))]
    extra = {"noop_with_empty_axes": 1} if axes == () else {}
    model = _one_node(op, [("x", _D, x.shape)], [("y", _D, ref.shape)], inits=inits, keepdims=keepdims, **extra)
    (y,) = _run_both(model, x)
    np.testing.assert_allclose(y, ref, rtol=1e-12)
    ad.check_grads(lambda t: ad.onnx.load(model)(t), (x,), order=2)


def test_reduce_sum_square_and_l1_keep_integers():
    x = _RNG.integers(-50, 50, (3, 4)).astype(np.int32)
    for op, ref in (("ReduceL1", np.abs(x).sum(1, keepdims=True)), ("ReduceSumSquare", (x * x).sum(1, keepdims=True))):
        model = _one_node(op, [("x", _I32, x.shape)], [("y", _I32, ref.shape)], inits=[("axes", np.int64([1]))])
        (y,) = _run_both(model, x)
        assert y.dtype == np.int32
        np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("op, fill", [("ReduceMax", -np.inf), ("ReduceMin", np.inf)])
def test_reduce_max_min_over_an_empty_axis_is_the_identity(op, fill):
    # ONNX (opset 18+): reducing an empty set gives max's/min's identity, -inf/+inf (False/True for bool).
    x = np.zeros((2, 0, 4), np.float32)
    model = _one_node(op, [("x", _F, x.shape)], [("y", _F, (2, 1, 4))], inits=[("axes", np.int64([1]))])
    (y,) = _outputs(ad.onnx.load(model), x)
    np.testing.assert_array_equal(y, np.full((2, 1, 4), fill, np.float32))
    b = np.zeros((2, 0, 4), np.bool_)
    model = _one_node(op, [("x", TensorProto.BOOL, b.shape)], [("y", TensorProto.BOOL, (2, 4))],
                      inits=[("axes", np.int64([1]))], keepdims=0)
    (y,) = _outputs(ad.onnx.load(model), b)
    np.testing.assert_array_equal(y, np.full((2, 4), op == "ReduceMin"))


def test_mean_of_several_inputs_broadcasts():
    a, b, c = _RNG.standard_normal((2, 3)), _RNG.standard_normal((3,)), _RNG.standard_normal((1, 3))
    model = _one_node("Mean", [("a", _D, a.shape), ("b", _D, b.shape), ("c", _D, c.shape)], [("y", _D, (2, 3))])
    (y,) = _run_both(model, a, b, c)
    np.testing.assert_allclose(y, (a + b + c) / 3, rtol=1e-15)
    ad.check_grads(lambda *t: ad.onnx.load(model)(*t), (a, b, c), order=2)


@pytest.mark.parametrize("axis, opset", [(1, 13), (-1, 13), (0, 13), (1, 11)])
def test_hardmax_is_one_hot_at_the_first_maximum(axis, opset):
    x = _RNG.integers(0, 3, (3, 4, 2)).astype(np.float32)     # ties
    if opset < 13:
        # Before opset 13 the input is coerced to 2-D at axis and the one-hot spans the whole row.
        flat = x.reshape(3, 8)
        ref = np.eye(8, dtype=np.float32)[np.argmax(flat, 1)].reshape(x.shape)
    else:
        moved = np.moveaxis(x, axis, -1)
        ref = np.moveaxis(np.eye(moved.shape[-1], dtype=np.float32)[np.argmax(moved, -1)], -1, axis)
    model = _one_node("Hardmax", [("x", _F, x.shape)], [("y", _F, x.shape)], opset=opset, axis=axis)
    (y,) = _run_both(model, x)
    np.testing.assert_array_equal(y, ref)

# ------------------------------------------------------------------ BatchNormalization


def test_batch_normalization_in_training_mode_returns_y_and_running_statistics():
    x = _RNG.standard_normal((4, 3, 2, 2)) * 3 + 1
    scale, bias = _RNG.uniform(0.5, 1.5, 3), _RNG.standard_normal(3)
    mean, var = _RNG.standard_normal(3), _RNG.uniform(0.5, 1.5, 3)
    # ONNX holds float attributes in float32: the reference uses the same numbers.
    eps, momentum = float(np.float32(1e-3)), float(np.float32(0.8))
    # The spec: batch statistics over every axis but the channel's (population variance) normalise
    # x; running_mean = mean * momentum + batch_mean * (1 - momentum), running_var likewise.
    bm, bv = x.mean((0, 2, 3)), x.var((0, 2, 3))
    ch = (1, 3, 1, 1)
    ref_y = (x - bm.reshape(ch)) / np.sqrt(bv.reshape(ch) + eps) * scale.reshape(ch) + bias.reshape(ch)
    model = _one_node("BatchNormalization", [("x", _D, x.shape), ("s", _D, [3]), ("b", _D, [3]),
                                             ("m", _D, [3]), ("v", _D, [3])],
                      [("y", _D, x.shape), ("rm", _D, [3]), ("rv", _D, [3])],
                      training_mode=1, epsilon=eps, momentum=momentum)
    y, rm, rv = _run_both(model, x, scale, bias, mean, var)
    np.testing.assert_allclose(y, ref_y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rm, mean * momentum + bm * (1 - momentum), rtol=1e-12)
    np.testing.assert_allclose(rv, var * momentum + bv * (1 - momentum), rtol=1e-12)
    prog = ad.onnx.load(model)
    ad.check_grads(lambda *t: ad.sum(prog(*t)[0] * np.cos(np.arange(48.0)).reshape(x.shape)) + ad.sum(prog(*t)[2]),
                   (x, scale, bias, mean, var), order=2)


def test_batch_normalization_training_outputs_of_old_opsets_are_refused():
    model = _one_node("BatchNormalization", [("x", _F, [2, 3]), ("s", _F, [3]), ("b", _F, [3]),
                                             ("m", _F, [3]), ("v", _F, [3])],
                      [("y", _F, [2, 3]), ("rm", _F, [3]), ("rv", _F, [3])], opset=9)
    with pytest.raises(ad.onnx.OnnxImportError, match=r"BatchNormalization.*training.*opset 9"):
        ad.onnx.load(model)

# ------------------------------------------------------------------ ScatterElements / ScatterND

_COMBINE = {"none": lambda a, u: u, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter_elements_ref(data, idx, upd, axis, reduction):
    # The definition's loop: every index in order, the axis coordinate replaced by the index.
    out = data.copy()
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[axis] = idx[p] % data.shape[axis]
        out[tuple(q)] = _COMBINE[reduction](out[tuple(q)], upd[p])
    return out


def _scatter_nd_ref(data, idx, upd, reduction):
    out = data.copy()
    for p in np.ndindex(*idx.shape[:-1]):
        q = tuple(int(i) % d for i, d in zip(idx[p], data.shape))
        out[q] = _COMBINE[reduction](out[q], upd[p])
    return out


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, -1])
def test_scatter_elements_reductions_with_repeated_and_negative_indices(reduction, axis):
    data = _RNG.standard_normal((3, 4))
    idx = _RNG.integers(-3, 3, (2, 3)) if axis == 0 else _RNG.integers(-4, 4, (3, 2))
    if reduction == "none":
        # ONNX leaves repeated indices undefined without a reduction: distinct ones per line.
        idx = np.array([[0, -1, 2], [1, 0, -2]]) if axis == 0 else np.array([[3, 0], [-1, 1], [2, -4]])
    upd = _RNG.standard_normal(idx.shape)
    ref = _scatter_elements_ref(data, idx, upd, axis, reduction)
    model = _one_node("ScatterElements", [("d", _D, data.shape), ("u", _D, upd.shape)], [("y", _D, data.shape)],
                      inits=[("i", idx.astype(np.int64))], axis=axis, reduction=reduction)
    model.graph.node[0].input[:] = ["d", "i", "u"]
    (y,) = _run_both(model, data, upd)
    # The same products, maxima and sums in the definition's order: bit-for-bit but for 'add'
    # (one sum of a row's updates added to the data, where the loop adds them one by one).
    np.testing.assert_allclose(y, ref, rtol=1e-15 if reduction == "add" else 0, atol=1e-15 if reduction == "add" else 0)
    ad.check_grads(lambda d, u: ad.onnx.load(model)(d, u), (data, upd), order=2)


def test_scatter_elements_on_integers_is_exact():
    data = _RNG.integers(-5, 5, (3, 3)).astype(np.int32)
    idx, upd = np.array([[1, 0, 2], [1, 1, 0]]), _RNG.integers(-5, 5, (2, 3)).astype(np.int32)
    for reduction in ("mul", "max", "min"):
        model = _one_node("ScatterElements", [("d", _I32, data.shape), ("u", _I32, upd.shape)],
                          [("y", _I32, data.shape)], inits=[("i", idx)], reduction=reduction)
        model.graph.node[0].input[:] = ["d", "i", "u"]
        (y,) = _run_both(model, data, upd)
        assert y.dtype == np.int32
        np.testing.assert_array_equal(y, _scatter_elements_ref(data, idx, upd, 0, reduction))


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_scatter_nd_reductions_with_index_tuples(reduction, k):
    data = _RNG.standard_normal((3, 4, 2))
    if reduction == "none":
        idx = np.array([[0, -1, 1], [2, 0, 0], [1, 3, -1]])[:, :k]   # distinct tuples
    else:
        idx = np.stack([_RNG.integers(-d, d, 5) for d in data.shape[:k]], -1)
        idx = np.concatenate([idx, idx[:2]])                       # repeats meet in one place
    upd = _RNG.standard_normal(idx.shape[:-1] + data.shape[k:])
    ref = _scatter_nd_ref(data, idx, upd, reduction)
    model = _one_node("ScatterND", [("d", _D, data.shape), ("u", _D, upd.shape)], [("y", _D, data.shape)],
                      inits=[("i", idx.astype(np.int64))], reduction=reduction)
    model.graph.node[0].input[:] = ["d", "i", "u"]
    (y,) = _run_both(model, data, upd)
    np.testing.assert_allclose(y, ref, rtol=1e-15 if reduction == "add" else 0, atol=1e-15 if reduction == "add" else 0)
    ad.check_grads(lambda d, u: ad.onnx.load(model)(d, u), (data, upd), order=2)


def test_scatter_nd_add_with_computed_index_tuples():
    # Indices that are a graph input stay an input of the program with reduction='add'.
    data, idx = _RNG.standard_normal((3, 4)), np.array([[0, 1], [2, -1], [0, 1]])
    upd = _RNG.standard_normal(3)
    model = _one_node("ScatterND", [("d", _D, data.shape), ("i", _I64, idx.shape), ("u", _D, upd.shape)],
                      [("y", _D, data.shape)], reduction="add")
    (y,) = _run_both(model, data, idx, upd)
    np.testing.assert_allclose(y, _scatter_nd_ref(data, idx, upd, "add"), rtol=1e-15, atol=1e-15)


def test_scatter_with_computed_indices_and_no_sum_is_refused():
    model = _one_node("ScatterElements", [("d", _F, [3]), ("i", _I64, [2]), ("u", _F, [2])], [("y", _F, [3])],
                      reduction="max")
    with pytest.raises(ad.onnx.OnnxImportError, match="ScatterElements|'i'"):
        ad.onnx.load(model)

# ------------------------------------------------------------------ GatherND, Compress, NonZero


def _gather_nd_ref(data, idx, b):
    out = np.empty(idx.shape[:-1] + data.shape[b + idx.shape[-1]:], data.dtype)
    for p in np.ndindex(*idx.shape[:-1]):
        out[p] = data[p[:b] + tuple(int(i) for i in idx[p])]
    return out


@pytest.mark.parametrize("b, k, constant", [(0, 1, True), (0, 2, False), (0, 3, True), (1, 1, False), (1, 2, True)])
def test_gather_nd_with_batch_dims(b, k, constant):
    data = _RNG.standard_normal((2, 3, 4, 2))
    idx = np.stack([_RNG.integers(-d, d, (2, 5)) for d in data.shape[b:b + k]], -1)
    ref = _gather_nd_ref(data, idx, b)
    if constant:
        model = _one_node("GatherND", [("d", _D, data.shape)], [("y", _D, ref.shape)], inits=[("i", idx)],
                          batch_dims=b)
        args = (data,)
    else:
        model = _one_node("GatherND", [("d", _D, data.shape), ("i", _I64, idx.shape)], [("y", _D, ref.shape)],
                          batch_dims=b)
        args = (data, idx)
    (y,) = _run_both(model, *args)
    np.testing.assert_array_equal(y, ref)
    ad.check_grads(lambda d: ad.onnx.load(model)(d, *args[1:]), (data,), order=2)


@pytest.mark.parametrize("axis", [None, 0, -1])
def test_compress_with_a_constant_condition(axis):
    x = _RNG.standard_normal((3, 4))
    cond = np.array([True, False, True])       # shorter than the axis: the rest is dropped
    ref = np.compress(cond, x, axis)
    extra = {} if axis is None else {"axis": axis}
    model = _one_node("Compress", [("x", _D, x.shape)], [("y", _D, ref.shape)], inits=[("c", cond)], **extra)
    (y,) = _run_both(model, x)
    np.testing.assert_array_equal(y, ref)
    ad.check_grads(lambda t: ad.onnx.load(model)(t), (x,), order=2)


def test_nonzero_of_a_constant_is_folded_and_of_an_input_refused():
    x = np.array([[1, 0], [3, 4]], np.int32)
    node = helper.make_node("NonZero", ["c"], ["y"])
    graph = helper.make_graph([node], "nz", [], [helper.make_tensor_value_info("y", _I64, [2, 3])],
                              [numpy_helper.from_array(x, "c")])
    prog = ad.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    np.testing.assert_array_equal(prog(), np.array(np.nonzero(x)))
    model = _one_node("NonZero", [("x", _I32, x.shape)], [("y", _I64, [2, 3])])
    with pytest.raises(ad.onnx.OnnxImportError, match="NonZero|'x'"):
        ad.onnx.load(model)

# ------------------------------------------------------------------ Pad, Identity, Einsum


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_pad_modes_edge_reflect_wrap(mode):
    x = _RNG.standard_normal((3, 4))
    pads = np.array([1, 2, 2, 1], np.int64)       # (begin0, begin1, end0, end1)
    ref = np.pad(x, [(1, 2), (2, 1)], mode)
    model = _one_node("Pad", [("x", _D, x.shape)], [("y", _D, ref.shape)], inits=[("pads", pads)], mode=mode)
    (y,) = _run_both(model, x)
    np.testing.assert_array_equal(y, ref)
    ad.check_grads(lambda t: ad.onnx.load(model)(t), (x,), order=2)


def test_identity_of_a_sequence_is_refused_clearly():
    seq = helper.make_tensor_sequence_value_info
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "id",
                              [seq("x", _F, [2])], [seq("y", _F, [2])])
    with pytest.raises(ad.onnx.OnnxImportError, match="not a tensor"):
        ad.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))


def test_einsum_on_bfloat16_sums_in_float32():
    bf16 = pytest.importorskip("ml_dtypes").bfloat16
    a, b = _RNG.standard_normal((2, 3)).astype(bf16), _RNG.standard_normal((3, 4)).astype(bf16)
    model = _one_node("Einsum", [("a", TensorProto.BFLOAT16, a.shape), ("b", TensorProto.BFLOAT16, b.shape)],
                      [("y", TensorProto.BFLOAT16, (2, 4))], equation="ij,jk->ik")
    (y,) = _outputs(ad.onnx.load(model), a, b)
    assert y.dtype == bf16
    np.testing.assert_array_equal(y, (a.astype(np.float32) @ b.astype(np.float32)).astype(bf16))

# ------------------------------------------------------------------ TopK


@pytest.mark.parametrize("dtype, elem", [(np.uint64, TensorProto.UINT64), (np.int8, TensorProto.INT8),
                                         (np.uint32, TensorProto.UINT32), (np.int64, _I64)])
@pytest.mark.parametrize("largest", [0, 1])
def test_topk_on_integer_types_runs_on_onnxruntime_and_keeps_order(dtype, elem, largest):
    info = np.iinfo(dtype)
    # The extremes of the type (uint64 on both sides of 2**63) and ties.
    x = np.array([[info.max, 0, 3, info.min, 3, info.max - 1], [1, 1, info.max, 2, info.min, 0]], dtype)
    if dtype == np.uint64:
        x[0, 2] = np.uint64(2**63)
        x[0, 4] = np.uint64(2**63 - 1)
    k = 4
    # Stable order of the values (decreasing if largest), ties to the lower index.
    order = np.stack([sorted(range(6), key=lambda j: (-int(r[j]) if largest else int(r[j]), j)) for r in x])[:, :k]
    model = _one_node("TopK", [("x", elem, x.shape)], [("v", elem, (2, k)), ("i", _I64, (2, k))],
                      inits=[("k", np.int64([k]))], largest=largest)
    v, i = _run_both(model, x)
    np.testing.assert_array_equal(i, order)
    np.testing.assert_array_equal(v, np.take_along_axis(x, order, 1))


def test_pad_with_negative_pads_crops_in_constant_mode_and_is_refused_otherwise():
    x = _RNG.standard_normal((4, 5))
    pads = np.array([-1, 2, 1, -2], np.int64)     # crop 1 row in front, pad 2 columns in front, ...
    ref = np.pad(x[1:, :3], [(0, 1), (2, 0)], constant_values=1.5)
    model = _one_node("Pad", [("x", _D, x.shape)], [("y", _D, ref.shape)],
                      inits=[("pads", pads), ("v", np.float64(1.5))])
    (y,) = _run_both(model, x)
    np.testing.assert_array_equal(y, ref)
    model = _one_node("Pad", [("x", _D, x.shape)], [("y", _D, ref.shape)], inits=[("pads", pads)], mode="edge")
    with pytest.raises(ad.onnx.OnnxImportError, match="Pad with negative pads.*'edge'"):
        ad.onnx.load(model)
