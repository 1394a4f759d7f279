"""Import regressions of issue 28 (wrong values with no error): Dropout, ConvTranspose, Cast to float8.

Each case is a one-node model built with onnx.helper, run through ``ad.onnx.load`` and compared with
a numpy computation of the operator's definition (``onnx.defs.get_schema(op).doc``), or refused with
an error naming the operator and attribute.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import autograd_dag as ad  # noqa: E402


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
    return out if isinstance(out, (tuple, list)) else (out,)

# ------------------------------------------------------------------ Dropout


_F = TensorProto.FLOAT
_DROPOUT_OUT = [("y", _F, [3, 4]), ("mask", TensorProto.BOOL, [3, 4])]


def test_dropout_in_training_mode_is_refused_not_returned_unscaled():
    # ONNX: training_mode=True drops at random and scales by 1/(1 - ratio); the importer returned x.
    model = _one_node("Dropout", [("x", _F, [3, 4])], _DROPOUT_OUT,
                      inits=[("ratio", np.float32(0.5)), ("training_mode", np.bool_(True))])
    with pytest.raises(ad.onnx.OnnxImportError, match=r"Dropout.*training_mode"):
        ad.onnx.load(model)


@pytest.mark.parametrize("ratio, training", [(0.5, False), (0.0, True), (0.0, False)])
def test_dropout_that_drops_nothing_is_the_identity_with_an_all_true_mask(ratio, training):
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    model = _one_node("Dropout", [("x", _F, [3, 4])], _DROPOUT_OUT,
                      inits=[("ratio", np.float32(ratio)), ("training_mode", np.bool_(training))])
    y, mask = _outputs(ad.onnx.load(model), x)
    # The spec: output = x * mask / (1 - ratio) with mask all true (ratio 0 or inference).
    np.testing.assert_array_equal(y, x)
    assert np.asarray(mask).dtype == np.bool_ and np.asarray(mask).all()


def test_dropout_training_mode_defaults_to_ratio_one_half_and_old_opsets_read_is_test():
    # No ratio input: ONNX's default 0.5, so training mode still drops (refused).
    node = helper.make_node("Dropout", ["x", "", "training_mode"], ["y"])
    graph = helper.make_graph([node], "d", [helper.make_tensor_value_info("x", _F, [3, 4])],
                              [helper.make_tensor_value_info("y", _F, [3, 4])],
                              [numpy_helper.from_array(np.array(True), "training_mode")])
    with pytest.raises(ad.onnx.OnnxImportError, match=r"Dropout.*training_mode.*0\.5"):
        ad.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    # Opset 6: is_test=0 (the default) is training.
    with pytest.raises(ad.onnx.OnnxImportError, match=r"Dropout"):
        ad.onnx.load(_one_node("Dropout", [("x", _F, [3, 4])], [("y", _F, [3, 4])], opset=6, ratio=0.25))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (y,) = _outputs(ad.onnx.load(_one_node("Dropout", [("x", _F, [3, 4])], [("y", _F, [3, 4])], opset=6,
                                           is_test=1)), x)
    np.testing.assert_array_equal(y, x)

# ------------------------------------------------------------ ConvTranspose


def _conv_transpose_reference(x, w, bias, strides, begin, end, output_padding):
    """The spec's definition, by scattering: every x[n, c, i] adds x * W[c, m, :] at i * stride."""
    rank = x.ndim - 2
    full = [(x.shape[2 + a] - 1) * strides[a] + w.shape[2 + a] + output_padding[a] for a in range(rank)]
    y = np.zeros((x.shape[0], w.shape[1], *full))
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            for i in np.ndindex(*x.shape[2:]):
                at = tuple(slice(i[a] * strides[a], i[a] * strides[a] + w.shape[2 + a]) for a in range(rank))
                y[(n, slice(None)) + at] += x[(n, c) + i] * w[c]
    # Pads crop the ends; a negative pad (output_shape larger than the result) adds zeros.
    for a in range(rank):
        size = full[a] - begin[a] - end[a]
        lo, hi = max(begin[a], 0), min(full[a], begin[a] + size)
        kept = np.take(y, np.arange(lo, hi), axis=2 + a)
        widths = [(0, 0)] * y.ndim
        widths[2 + a] = (lo - begin[a], begin[a] + size - hi)
        y = np.pad(kept, widths)
    if bias is not None:
        y = y + bias.reshape((-1,) + (1,) * rank)
    return y


def _total_padding_pads(x, w, strides, output_padding, output_shape):
    # The spec (NOTSET): total = stride*(in-1) + output_padding + kernel - output_shape,
    # begin = total - total // 2, end = total // 2 (floor division, as ONNX's reference implementation).
    total = [strides[a] * (x.shape[2 + a] - 1) + output_padding[a] + w.shape[2 + a] - output_shape[a]
             for a in range(len(output_shape))]
    return [t - t // 2 for t in total], [t // 2 for t in total]


_CONV_T_CASES = [
    # (x shape, w shape, attributes)
    ((1, 1, 3, 3), (1, 2, 3, 3), dict(strides=[3, 2], output_shape=[10, 8])),  # the spec's example
    ((2, 2, 3, 4), (2, 3, 3, 2), dict(strides=[2, 1], output_shape=[6, 4])),  # odd total: asymmetric
    ((1, 2, 3, 3), (2, 1, 2, 2), dict(strides=[2, 2], output_shape=[7, 5], output_padding=[1, 0])),
    ((2, 2, 5), (2, 3, 3), dict(strides=[2], pads=[1, 2], output_padding=[1])),  # 1-D
    ((1, 1, 4), (1, 2, 3), dict(strides=[3], output_shape=[11])),  # 1-D, output_shape
    ((1, 2, 4), (2, 2, 2), dict()),  # 1-D, defaults
    ((1, 2, 3, 3), (2, 2, 3, 3), dict(strides=[2, 2], pads=[0, 1, 2, 1])),  # asymmetric pads
]


@pytest.mark.parametrize("x_shape, w_shape, attrs", _CONV_T_CASES)
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv_transpose_honours_output_shape_and_one_dimension(x_shape, w_shape, attrs, with_bias):
    rng = np.random.default_rng(len(x_shape) + x_shape[-1])
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    bias = rng.standard_normal(w_shape[1]) if with_bias else None
    rank = len(x_shape) - 2
    strides = attrs.get("strides", [1] * rank)
    output_padding = attrs.get("output_padding", [0] * rank)
    if "output_shape" in attrs:
        begin, end = _total_padding_pads(x, w, strides, output_padding, attrs["output_shape"])
    else:
        pads = attrs.get("pads", [0] * 2 * rank)
        begin, end = pads[:rank], pads[rank:]
    expected = _conv_transpose_reference(x, w, bias, strides, begin, end, output_padding)
    if "output_shape" in attrs:
        assert list(expected.shape[2:]) == attrs["output_shape"]
    inits = [("w", w)] + ([("b", bias)] if with_bias else [])
    model = _one_node("ConvTranspose", [("x", TensorProto.DOUBLE, list(x_shape))],
                      [("y", TensorProto.DOUBLE, list(expected.shape))], inits=inits, **attrs)
    prog = ad.onnx.load(model)
    (y,) = _outputs(prog, x)
    assert y.shape == expected.shape
    # Two summation orders of the same products (float64): a tolerance, not ==.
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)
    ad.check_grads(lambda x: prog(x), (x,), modes=("rev",))  # the crop and the zero extension differentiate


def test_conv_transpose_refuses_output_shape_with_pads():
    # The spec says pads are then ignored, ONNX's reference implementation uses both: refuse, not guess.
    model = _one_node("ConvTranspose", [("x", _F, [1, 1, 3, 3])], [("y", _F, [1, 1, 6, 6])],
                      inits=[("w", np.ones((1, 1, 3, 3), np.float32))], output_shape=[6, 6], pads=[1, 1, 1, 1])
    with pytest.raises(ad.onnx.OnnxImportError, match=r"ConvTranspose.*output_shape.*pads"):
        ad.onnx.load(model)

# -------------------------------------------------------------- Cast to float8

# name: (mantissa bits, smallest normal exponent, largest finite value, has ±Inf, has -0): the types' tables.
_FLOAT8 = {"FLOAT8E4M3FN": (3, -6, 448.0, False, True), "FLOAT8E4M3FNUZ": (3, -7, 240.0, False, False),
           "FLOAT8E5M2": (2, -14, 57344.0, True, True), "FLOAT8E5M2FNUZ": (2, -15, 57344.0, False, False)}


def _float8_reference(x, name, saturate):
    """The spec's Cast to a float8 type, as float64: round to nearest even, then its out-of-range table."""
    mantissa, min_exp, fmax, has_inf, has_negative_zero = _FLOAT8[name]
    x = np.asarray(x, np.float64)
    finite = np.isfinite(x)
    a = np.abs(np.where(finite, x, 0.0))
    exponent = np.maximum(np.frexp(a)[1] - 1, min_exp)  # (subnormals share the smallest exponent's step)
    step = np.ldexp(1.0, exponent - mantissa)
    q = np.copysign(np.round(a / step) * step, x)  # np.round: half to even
    over = ~np.isnan(x) & (~finite | (np.abs(q) > fmax))
    if saturate:
        q[over] = np.copysign(fmax, x[over])
    else:
        q[over] = np.copysign(np.inf, x[over]) if has_inf else np.nan
    q[np.isnan(x)] = np.nan
    if not has_negative_zero:
        q[q == 0] = 0.0
    return q


_SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 1000.0, -1000.0, 448.0, 449.0, 464.0, 465.0, 470.0, 480.0,
            239.0, 241.0, 247.0, 248.0, 250.0, 3.3, -3.3, 0.1, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10, 2.0 ** -17,
            2.0 ** -18, 1e-5, 57344.0, 61439.0, 61440.0, 1e5, -1e5, 1.0625, 1.1875, 17.0, 19.0]


@pytest.mark.parametrize("name", sorted(_FLOAT8))
@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("source", [np.float32, np.float64])
def test_cast_to_float8_follows_the_saturate_tables(name, saturate, source):
    rng = np.random.default_rng(5)
    x = np.concatenate([_SPECIAL, rng.standard_normal(200) * 10.0 ** rng.integers(-5, 6, 200)]).astype(source)
    model = _one_node("Cast", [("x", TensorProto.FLOAT if source == np.float32 else TensorProto.DOUBLE, [x.size])],
                      [("y", getattr(TensorProto, name), [x.size])], to=getattr(TensorProto, name),
                      saturate=saturate)
    (y,) = _outputs(ad.onnx.load(model), x)
    expected = _float8_reference(x, name, saturate)
    got = np.asarray(y).astype(np.float64)  # float8 -> float64 is exact
    np.testing.assert_array_equal(got, expected)  # (NaNs compare equal here)
    same = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(got[same]), np.signbit(expected[same]))


def test_cast_to_float8_saturates_the_issues_example():
    model = _one_node("Cast", [("x", _F, [1])], [("y", TensorProto.FLOAT8E4M3FN, [1])], to=TensorProto.FLOAT8E4M3FN)
    (y,) = _outputs(ad.onnx.load(model), np.array([1000.0], np.float32))
    assert np.asarray(y).astype(np.float32).tolist() == [448.0]


def test_cast_to_float8e8m0_rounds_up_by_default():
    # Its default round_mode is 'up', which a plain cast (to nearest) does not do: it was refused; it is
    # now implemented (tests/test_onnx_dtypes_roundtrip.py checks every mode), and 1.1 gives 2, not 1.
    model = _one_node("Cast", [("x", _F, [2])], [("y", TensorProto.FLOAT8E8M0, [2])], opset=24,
                      to=TensorProto.FLOAT8E8M0)
    got = ad.onnx.load(model)(np.array([1.1, 4.0], np.float32))
    np.testing.assert_array_equal(got.astype(np.float32), [2.0, 4.0])
