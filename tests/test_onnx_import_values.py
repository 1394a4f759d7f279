"""Importer defects that gave wrong values with no error (issue 28): each is a one-node model built
with onnx.helper, loaded with ``ad.onnx.load`` and compared with an independent numpy computation of
the ONNX operator's definition (the spec's text, not ONNX Runtime).

Needs the ``onnx`` package; skipped, saying so, without it.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")

import autograd_dag as ad  # noqa: E402
from onnx import helper  # noqa: E402


def _model(op, args, outputs=("y",), opset=21, inits=(), **attrs):
    """A one-node model: inputs x0, x1, ... for ``args`` (a None arg is an empty input name),
    initializers ``inits`` ((name, array) pairs, appended to the node's inputs)."""
    names = [f"x{i}" if a is not None else "" for i, a in enumerate(args)]
    info = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in zip(names, args) if a is not None]
    node = helper.make_node(op, names + [n for n, _ in inits], list(outputs), **attrs)
    graph = helper.make_graph([node], "g", info, [helper.make_tensor_value_info(o, 0, None) for o in outputs],
                              [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run(model, *args):
    out = ad.onnx.load(model)(*[a for a in args if a is not None])
    return out if isinstance(out, tuple) else (out,)


# ------------------------------------------------------------------ Shape


def _shape_spec(shape, start=None, end=None):
    # The spec: negative axes count from the back, then both are clamped to [0, r].
    r = len(shape)
    start = 0 if start is None else start
    end = r if end is None else end
    start, end = (min(max(a + r if a < 0 else a, 0), r) for a in (start, end))
    return np.array(shape[start:end], dtype=np.int64)


@pytest.mark.parametrize("attrs", [{}, {"start": 1, "end": 2}, {"start": -1}, {"end": -1}, {"start": 1},
                                   {"start": -10}, {"end": 10}, {"start": -10, "end": 10}, {"start": 2, "end": 1},
                                   {"start": 5}, {"end": -5}, {"start": -2, "end": -1}])
def test_shape_slices_by_start_and_end(attrs):
    x = np.zeros((3, 4, 5), np.float32)
    (got,) = _run(_model("Shape", [x], **attrs), x)
    expected = _shape_spec(x.shape, attrs.get("start"), attrs.get("end"))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
    if attrs == {"start": 1, "end": 2}:
        np.testing.assert_array_equal(got, [4])   # the issue's reproduction

# ------------------------------------------------------------- reductions

_REDUCE_SPEC = {
    "ReduceSum": lambda x, a, k: np.sum(x, a, keepdims=k), "ReduceMean": lambda x, a, k: np.mean(x, a, keepdims=k),
    "ReduceMax": lambda x, a, k: np.max(x, a, keepdims=k), "ReduceMin": lambda x, a, k: np.min(x, a, keepdims=k),
    "ReduceProd": lambda x, a, k: np.prod(x, a, keepdims=k),
    "ReduceL2": lambda x, a, k: np.sqrt(np.sum(x * x, a, keepdims=k)),
    "ReduceLogSumExp": lambda x, a, k: np.log(np.sum(np.exp(x), a, keepdims=k)),
}
# The opset where axes became an input (and noop_with_empty_axes appeared).
_AXES_INPUT_SINCE = {op: 13 if op == "ReduceSum" else 18 for op in _REDUCE_SPEC}


@pytest.mark.parametrize("op", sorted(_REDUCE_SPEC))
@pytest.mark.parametrize("axes", ["omitted", "empty", "given"])
@pytest.mark.parametrize("noop", [None, 0, 1])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions_with_empty_axes_reduce_everything_or_nothing(op, axes, noop, keepdims):
    # The spec: axes omitted or empty reduce over every axis, unless noop_with_empty_axes=1, when
    # the input comes back unchanged (numpy's axis=None and axis=(), computed in float64).
    x = np.random.default_rng(1).uniform(-1.5, 1.5, (2, 3, 4)).astype(np.float32)
    attrs = {"keepdims": keepdims} | ({} if noop is None else {"noop_with_empty_axes": noop})
    inits = {"omitted": [], "empty": [("axes", np.zeros(0, np.int64))],
             "given": [("axes", np.array([0, -1], np.int64))]}[axes]
    (got,) = _run(_model(op, [x], inits=inits, opset=_AXES_INPUT_SINCE[op], **attrs), x)
    a = (0, 2) if axes == "given" else () if noop else None
    expected = _REDUCE_SPEC[op](x.astype(np.float64), a, bool(keepdims))
    assert got.dtype == x.dtype and got.shape == expected.shape
    # float32 arithmetic against a float64 reference over at most 24 terms.
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", sorted(set(_REDUCE_SPEC) - {"ReduceSum"}))
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions_without_axes_attribute_reduce_everything_before_opset_18(op, keepdims):
    x = np.random.default_rng(2).uniform(-1.5, 1.5, (2, 3, 4)).astype(np.float32)
    (got,) = _run(_model(op, [x], opset=13, keepdims=keepdims), x)
    expected = _REDUCE_SPEC[op](x.astype(np.float64), None, bool(keepdims))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)  # float32 against float64


@pytest.mark.parametrize("op", sorted(_REDUCE_SPEC))
def test_reductions_of_a_scalar_are_the_scalar_reduced_once(op):
    x = np.array(-0.7, np.float32)
    (got,) = _run(_model(op, [x], opset=18), x)
    expected = _REDUCE_SPEC[op](x.astype(np.float64), None, True)
    assert got.shape == ()
    np.testing.assert_allclose(got, expected, rtol=1e-6)  # one float32 operation against float64

# ------------------------------------------------------------------- TopK


def _topk_spec(x, k, largest):
    # The spec on a 1-D input: the k largest (smallest), ties to the lower index, compared as
    # Python numbers (which neither wrap nor round).
    order = sorted(range(len(x)), key=lambda i: (-int(x[i]) if largest else int(x[i]), i))[:k]
    return x[order], np.array(order, np.int64)


_I64 = np.iinfo(np.int64)


@pytest.mark.parametrize("x", [
    np.array([0, 3, 1, 2], np.uint64),             # the issue's reproduction: -x wrapped
    np.array([0, 255, 1, 254, 0], np.uint8),
    np.array([2**64 - 1, 2**64 - 2, 0, 2**64 - 1], np.uint64),   # beyond float64's 2**53
    np.array([_I64.min, 5, _I64.min, 0, _I64.max], np.int64),      # -min overflows to min
    np.array([-128, 127, -128, 0], np.int8),
    np.array([2**62 + 1, 2**62, 2**62 + 1, -(2**62)], np.int64),
], ids=lambda x: f"{x.dtype}{x.tolist()}")
@pytest.mark.parametrize("largest", [1, 0])
def test_topk_of_integers_at_the_ends_of_their_range(x, largest):
    k = len(x) - 1
    values, indices = _run(_model("TopK", [x], outputs=("v", "i"), inits=[("k", np.array([k], np.int64))],
                                  largest=largest), x)
    expected_values, expected_indices = _topk_spec(x, k, largest)
    assert values.dtype == x.dtype and indices.dtype == np.int64
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(indices, expected_indices)
    if x.dtype == np.uint64 and x.tolist() == [0, 3, 1, 2] and largest:
        np.testing.assert_array_equal(values[:2], [3, 2])

# ------------------------------------------------------------- LogSoftmax


def _log_softmax_spec(x, axis):
    # The spec, x - log(sum(exp(x))), in float64 after the (exact) shift by the maximum.
    x = x.astype(np.float64)
    z = x - np.max(x, axis, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis, keepdims=True))


@pytest.mark.parametrize("opset, axis", [(13, -1), (13, 0), (11, 0)])
@pytest.mark.parametrize("offset", [0.0, 1e4, -1e4, 3e7])
def test_log_softmax_keeps_its_digits_on_large_float32_inputs(opset, axis, offset):
    x = (offset + np.arange(12, dtype=np.float64).reshape(3, 4) * np.array([1.0, 0.5, 0.25, 2.0])).astype(
        np.float32)
    (got,) = _run(_model("LogSoftmax", [x], opset=opset, axis=axis), x)
    if opset < 13:
        expected = _log_softmax_spec(x.reshape(1, 12), 1).reshape(3, 4)   # coerced to 2-D at axis 0
    else:
        expected = _log_softmax_spec(x, axis)
    assert got.dtype == np.float32
    # float32's precision at the result's magnitude (|y| <= 25 here: a few ulps of 2e-6), not at
    # the input's (1e4 + 1 rounds to 1e-3, which x - logsumexp(x) carried into the result).
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_log_softmax_of_the_issue_reproduction():
    x = np.array([1e4, 1e4 + 1, 1e4 + 2, 1e4 + 3], np.float32)
    (got,) = _run(_model("LogSoftmax", [x], opset=13), x)
    # -3.44019..., the float32 result was -3.44043 (within 1e-6 relative of float64 now).
    np.testing.assert_allclose(got[0], -3.4401896985, rtol=1e-6)

# ------------------------------------------------------------------- Clip


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("bounds", ["none", "max only", "min only", "both"])
def test_clip_without_bounds_is_the_identity(dtype, bounds):
    # The spec: an omitted bound is the type's lowest (highest) value, so no bound clips nothing.
    x = np.array([[0, 7, 3], [200, 1, 100]], dtype)
    lo = np.asarray(2, dtype) if bounds in ("min only", "both") else None
    hi = np.asarray(90, dtype) if bounds in ("max only", "both") else None
    names = ["x", "lo" if lo is not None else "", "hi" if hi is not None else ""]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Clip", names, ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype),
                                                                          x.shape)],
                              [helper.make_tensor_value_info("y", 0, None)],
                              [onnx.numpy_helper.from_array(v, n) for n, v in (("lo", lo), ("hi", hi)) if v is not None])
    (got,) = _run(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), x)
    expected = x.copy()
    if lo is not None:
        expected[expected < lo] = lo
    if hi is not None:
        expected[expected > hi] = hi
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, expected)
