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
