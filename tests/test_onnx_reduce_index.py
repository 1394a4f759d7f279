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

_F, _D, _I64, _I32 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.INT32
_RNG = np.random.default_rng(28)


def _one_node(op, inputs, outputs, *, inits=(), opset=21, **attrs):
    """A model of one node; ``inputs``/``outputs`` are (name, elem type, shape), ``inits`` (name, array)."""
    node = helper.make_node(op, [name for name, *_ in inputs] + [name for name, _ in inits],
                            [name for name, *_ in outputs], **attrs)
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


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
