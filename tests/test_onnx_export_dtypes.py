"""ONNX export of values whose dtype the ONNX operators or ONNX Runtime's kernels treat apart:
booleans under ``*``/``+``, 16-bit integers under ``Max``/``Min``, and the dtypes the export refuses.
Each case is checked against numpy's own definition of the operation (issue 28, export side)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
pytest.importorskip("onnxruntime", reason="ONNX tests need 'onnxruntime': pip install 'autograd-dag[onnx]'")

import autograd_dag as ad  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402


def _one_node_model(op_type, inputs, output, **attrs):
    """A one-node ONNX model: ``inputs`` is [(name, TensorProto type, shape)], ``output`` likewise."""
    node = helper.make_node(op_type, [n for n, _, _ in inputs], [output[0]], **attrs)
    graph = helper.make_graph([node], op_type.lower(), [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*output)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _served(program, *args):
    """Export, check with ONNX's full checker, run on ONNX Runtime."""
    model = ad.onnx.export(program)
    onnx.checker.check_model(model, full_check=True)
    return ad.onnx.run(model, *args)


_A = np.array([[True, False, True, False]] * 2)
_B = np.array([[True, True, False, False], [False, False, True, True]])


def test_boolean_times_and_plus_export_as_and_or():
    # bool*bool and bool+bool were written as ONNX Mul/Add on tensor(bool), which onnx.checker rejects
    # ("A typestr: T, has unsupported type: tensor(bool)"): the export failed. numpy computes them as
    # logical and/or; ONNX's And/Or do the same.
    program = ad.trace(lambda x, y: (x * y, x + y, ad.maximum(x, y), ad.minimum(x, y)), _A, _B)
    ours = program(_A, _B)
    served = _served(program, _A, _B)
    expected = (np.logical_and(_A, _B), np.logical_or(_A, _B), np.logical_or(_A, _B), np.logical_and(_A, _B))
    for k, (e, o, s) in enumerate(zip(expected, ours, served)):
        assert s.dtype == np.bool_ and o.dtype == np.bool_, k
        np.testing.assert_array_equal(o, e, err_msg=f"library, output {k}")
        np.testing.assert_array_equal(s, e, err_msg=f"onnxruntime, output {k}")


@pytest.mark.parametrize("op_type, inputs, attrs, expected", [
    ("And", (_A, _B), {}, np.logical_and(_A, _B)),
    ("Or", (_A, _B), {}, np.logical_or(_A, _B)),
    ("IsInf", (np.array([-np.inf, np.inf, 0.0, np.nan, -1.0], np.float32),), {"detect_negative": 0},
     np.array([False, True, False, False, False])),
    ("IsInf", (np.array([-np.inf, np.inf, 0.0, np.nan, -1.0], np.float32),), {"detect_positive": 0},
     np.array([True, False, False, False, False])),
    ("Mod", (np.array([5.5, -5.5, 5.5, -5.5, 3.0], np.float32), np.array([2.0, 2.0, -2.0, -2.0, 1.5], np.float32)),
     {"fmod": 1}, np.fmod(np.array([5.5, -5.5, 5.5, -5.5, 3.0], np.float32),
                          np.array([2.0, 2.0, -2.0, -2.0, 1.5], np.float32))),
], ids=["And", "Or", "IsInf-positive", "IsInf-negative", "Mod-fmod"])
def test_logical_one_node_models_survive_the_round_trip(op_type, inputs, attrs, expected):
    # These load as products and sums of booleans; re-exporting them failed onnx.checker.
    names = [f"x{k}" for k in range(len(inputs))]
    types = [helper.np_dtype_to_tensor_dtype(a.dtype) for a in inputs]
    model = _one_node_model(op_type, [(n, t, a.shape) for n, t, a in zip(names, types, inputs)],
                            ("y", helper.np_dtype_to_tensor_dtype(expected.dtype), expected.shape), **attrs)
    loaded = ad.onnx.load(model)
    np.testing.assert_array_equal(loaded(*inputs), expected)
    served = _served(loaded, *inputs)[0]
    assert served.dtype == expected.dtype
    np.testing.assert_array_equal(served, expected)


_INTEGERS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.mark.parametrize("dtype", _INTEGERS, ids=[np.dtype(t).name for t in _INTEGERS])
def test_integer_maximum_minimum_and_clip_run_on_onnxruntime(dtype):
    # ONNX Runtime has no int16/uint16 kernel for Max/Min (NOT_IMPLEMENTED: "Could not find an
    # implementation for Max(13)"), so exported maximum, minimum and clip of those did not run.
    # Every integer dtype, at its extremes: values must come back exact.
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, 0, 5, 3, info.max], dtype)
    y = np.array([info.max, info.min, 1, 2, 3, info.max - 1], dtype)
    lo, hi = dtype(2), dtype(4)
    program = ad.trace(lambda a, c: (ad.maximum(a, c), ad.minimum(a, c), ad.clip(a, lo, hi)), x, y)
    expected = (np.maximum(x, y), np.minimum(x, y), np.clip(x, lo, hi))
    for k, (e, s) in enumerate(zip(expected, _served(program, x, y))):
        assert s.dtype == np.dtype(dtype), (k, s.dtype)
        np.testing.assert_array_equal(s, e, err_msg=f"output {k}")


@pytest.mark.parametrize("dtype", [np.int16, np.uint16], ids=["int16", "uint16"])
def test_sixteen_bit_max_of_three_inputs_survives_the_round_trip(dtype):
    inputs = [np.array([1, 7, 3], dtype), np.array([4, 2, 9], dtype), np.array([5, 5, 0], dtype)]
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    for op_type, fn in (("Max", np.maximum), ("Min", np.minimum)):
        model = _one_node_model(op_type, [(f"x{k}", t, (3,)) for k in range(3)], ("y", t, (3,)))
        expected = fn(fn(inputs[0], inputs[1]), inputs[2])
        served = _served(ad.onnx.load(model), *inputs)[0]
        assert served.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(served, expected)


def test_export_writes_the_narrow_dtypes_onnx_has():
    # These were refused ("autograd_dag does not support exporting these dtypes"); they are now written
    # (tests/test_onnx_dtypes_roundtrip.py checks their values through ONNX Runtime): a complex value
    # is what is still refused, saying ONNX has the type.
    program = ad.trace(lambda t: t, np.zeros(3, np.complex64))
    with pytest.raises(ad.onnx.OnnxExportError) as err:
        ad.onnx.export(program)
    assert "dtype complex64 (ONNX has)" in str(err.value), str(err.value)
    assert "autograd_dag does not support exporting" in str(err.value)


def test_export_refuses_a_dtype_onnx_has_no_type_for_saying_so():
    program = ad.trace(lambda t: t, np.zeros(3, "datetime64[s]"))
    with pytest.raises(ad.onnx.OnnxExportError, match=r"datetime64\[s\].*ONNX has no tensor type for it"):
        ad.onnx.export(program)


@pytest.mark.parametrize("dtype", _INTEGERS + [np.bool_], ids=[np.dtype(t).name for t in _INTEGERS + [np.bool_]])
def test_integer_and_boolean_fmax_fmin_export(dtype):
    # fmax/fmin were written with IsNaN guards, which ONNX defines on floats only: onnx.checker
    # refused the model for every integer dtype. Integers and booleans have no NaN.
    if dtype is np.bool_:
        x, y = _A[0], _B[0]
    else:
        info = np.iinfo(dtype)
        x = np.array([info.min, info.max, 0, 5], dtype)
        y = np.array([info.max, info.min, 1, 2], dtype)
    program = ad.trace(lambda a, c: (ad.fmax(a, c), ad.fmin(a, c)), x, y)
    for k, (e, s) in enumerate(zip((np.fmax(x, y), np.fmin(x, y)), _served(program, x, y))):
        assert s.dtype == np.dtype(dtype), (k, s.dtype)
        np.testing.assert_array_equal(s, e, err_msg=f"output {k}")
