"""ONNX export and import of the narrow dtypes (bfloat16, float8, float4, int4, int2, strings), Cast,
CastLike and the integer dtypes ONNX Runtime lacks kernels for (issue 28, dtypes part).

Each case is compared with an independent numpy / ml_dtypes computation of the ONNX definition, and
the exported program with ONNX Runtime's result."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
pytest.importorskip("onnxruntime", reason="ONNX tests need 'onnxruntime': pip install 'autograd-dag[onnx]'")
ml_dtypes = pytest.importorskip("ml_dtypes", reason="the narrow dtypes are ml_dtypes arrays")

import autograd_dag as ad  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402


def _model(op_type, inputs, outputs, opset=25, **attrs):
    """A one-node model: ``inputs``/``outputs`` are [(name, TensorProto type, shape)]."""
    node = helper.make_node(op_type, [n for n, _, _ in inputs], [n for n, _, _ in outputs], **attrs)
    graph = helper.make_graph([node], op_type.lower(), [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _served(program, *args):
    """Export (checked by onnx.checker), run on ONNX Runtime."""
    return ad.onnx.run(ad.onnx.export(program), *args)


def _same(got, expected):
    """Bit-exact equality (NaN equal to NaN) for any dtype, ml_dtypes' included."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.dtype)
    if expected.dtype.kind in "OU":
        assert got.tolist() == expected.tolist()
        return
    g, e = got.astype(np.float64), expected.astype(np.float64)
    assert np.array_equal(g, e, equal_nan=True), (got, expected)


_VALUES = np.array([0.0, -0.0, 1.0, -2.5, 0.3, 3.75, 6.0, -7.0, 1.5e-3], np.float32)
_RUNNABLE = ["bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
             "int4", "uint4", "int2", "uint2"]


@pytest.mark.parametrize("name", _RUNNABLE)
def test_narrow_dtype_values_cross_onnx_runtime_both_ways(name):
    # These dtypes were refused on export; they now go in and out of ONNX Runtime as raw (packed) bytes.
    # (A program returning such an input unchanged would need ONNX Runtime's Identity, which has no
    # int4/int2/float8e8m0 kernel: the run is refused naming it.)
    dtype = np.dtype(getattr(ml_dtypes, name))
    u = np.abs(_VALUES) if name.startswith("u") or name.endswith("e8m0fnu") else _VALUES
    with np.errstate(all="ignore"):
        x = u.astype(dtype)
    out = _served(ad.trace(lambda t, v: (ad.astype(t, np.float32), ad.astype(v, dtype)), x, u), x, u)
    _same(out[0], x.astype(np.float32))
    _same(out[1], x)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"])
def test_astype_to_float8_exports_the_non_saturating_cast(name):
    # astype (ml_dtypes) gives NaN or ±Inf beyond the range; ONNX's Cast saturates by default, so the
    # export writes saturate=0 (it wrote none: ONNX Runtime gave ±max where the program gave NaN).
    dtype = np.dtype(getattr(ml_dtypes, name))
    x = np.array([0.0, 1.0, -3.3, 1e6, -1e6, np.inf, -np.inf, np.nan, 300.0, 1e-9], np.float32)
    with np.errstate(all="ignore"):
        expected = x.astype(dtype)
    _same(_served(ad.trace(lambda t: ad.astype(t, dtype), x), x)[0], expected)


@pytest.mark.parametrize("name", ["int4", "uint4", "int2", "uint2"])
@pytest.mark.parametrize("source", [np.float32, np.float16])
def test_float_to_sub_byte_integer_export_truncates_and_zeroes_out_of_range(name, source):
    # ml_dtypes truncates and gives 0 beyond the range; ONNX Runtime's Cast rounds and wraps (ONNX leaves
    # out-of-range undefined): 2.5 -> int4 was 3 and -9 was 7 after the round trip.
    dtype = np.dtype(getattr(ml_dtypes, name))
    info = ml_dtypes.iinfo(dtype)
    x = np.array([-9, -8.5, -8, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 7.9, 8, 15.5, 16, 1e4, np.nan, np.inf],
                 source)
    t = np.trunc(x.astype(np.float64))
    with np.errstate(all="ignore"):
        expected = np.where((t >= info.min) & (t <= info.max), t, 0).astype(np.int8).astype(dtype)
    _same(_served(ad.trace(lambda v: ad.astype(v, dtype), x), x)[0], expected)


def test_strings_round_trip_through_equal():
    model = _model("Equal", [("a", TensorProto.STRING, [3]), ("b", TensorProto.STRING, [3])],
                   [("y", TensorProto.BOOL, [3])])
    a, b = np.array(["x", "yy", ""], object), np.array(["x", "y", ""], object)
    program = ad.onnx.load(model)
    np.testing.assert_array_equal(program(a, b), [True, False, True])
    np.testing.assert_array_equal(_served(program, a, b)[0], [True, False, True])


def test_float4_export_is_valid_onnx_and_runtime_refusal_names_the_kernel():
    # ONNX Runtime has no CPU Cast kernel for float4e2m1: the model is written (onnx.checker passes at
    # opset 23), and running it says which kernel is missing instead of raising ONNX Runtime's error.
    x = np.array([0.5, -6.0, 1.5], ml_dtypes.float4_e2m1fn)
    model = ad.onnx.export(ad.trace(lambda t: ad.astype(t, np.float32), x))
    assert model.opset_import[0].version >= 23
    with pytest.raises(ad.onnx.OnnxExportError, match=r"no CPU kernel.*Cast"):
        ad.onnx.run(model, x)


def test_explicit_opset_below_a_dtypes_first_is_refused():
    x = np.zeros(2, ml_dtypes.int2)
    with pytest.raises(ad.onnx.OnnxExportError, match=r"int2.*opset 25.*opset 21"):
        ad.onnx.export(ad.trace(lambda t: t, x), opset=21)
