"""ONNX models a user can serve: buffers are constants, batch axes can be dynamic, the CLI names itself.

Each expected value is the library's eager result on the other batch (numpy underneath), compared
with ONNX Runtime's within a float tolerance: the two run different kernels (BLAS products,
exp/log, summation order), so equality to the last bit is not the point.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
ort = pytest.importorskip("onnxruntime",
                          reason="ONNX tests need 'onnxruntime': pip install 'autograd-dag[onnx]'")

import autograd_dag as ad  # noqa: E402
from autograd_dag import nn  # noqa: E402
from autograd_dag.cli import main  # noqa: E402
from autograd_dag.onnx import OnnxExportError  # noqa: E402
from autograd_dag.program import NodeKind  # noqa: E402
from autograd_dag.render import as_program  # noqa: E402

# float64 results of two engines: products and exp/log in a different order, a few ulps apart;
# 1e-9 relative leaves room for the softmax and layer norm of a small Transformer.
RTOL64 = 1e-9
# float32: ONNX Runtime's and numpy's kernels differ by a few float32 ulps per operation.
RTOL32, ATOL32 = 2e-5, 1e-6

_LM_TARGET = '''
import numpy as np, autograd_dag as ad

def lm_logits():
    model = ad.nn.TransformerLM(11, d_model=8, heads=2, hidden=16, layers=1, rng=0)
    return model.logits(np.array([[1, 2, 3, 4], [5, 6, 7, 8]]))
'''


def _dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def _lm(dtype=np.float64):
    return nn.TransformerLM(11, d_model=8, heads=2, hidden=16, layers=1, rng=0, dtype=dtype)


# ------------------------------------------------------------- buffers are constants


def test_cli_export_of_an_eager_transformer_keeps_the_positional_table_a_constant(tmp_path, capsys):
    src = tmp_path / "lm.py"
    src.write_text(_LM_TARGET)
    path = tmp_path / "lm.onnx"
    assert main(["export", f"{src}:lm_logits", "-o", str(path)]) == 0, capsys.readouterr().err
    model = onnx.load(path)
    assert [i.name for i in model.graph.input] == ["tokens"]
    assert "P" in [t.name for t in model.graph.initializer]
    tokens = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    expected = _lm().logits(tokens).value
    np.testing.assert_allclose(ad.onnx.run(model, tokens)[0], expected, rtol=RTOL64, atol=1e-12)


def test_positional_table_is_drawn_as_a_constant():
    logits = _lm().logits(np.array([[1, 2, 3]]))
    program = as_program(logits)
    kinds = {program.nodes[k].name: program.nodes[k].op for k in range(len(program.nodes))
             if not program.nodes[k].parents}
    assert kinds["P"] is NodeKind.CONSTANT
    assert [program.nodes[k].name for k in program.inputs] == ["tokens"]
    assert "<I>P</I>" in ad.render(program).source


def test_batch_norm_running_statistics_are_constants_of_an_eager_program():
    bn = nn.BatchNorm1d(3)
    bn.eval()
    x = ad.Tensor(np.random.default_rng(0).standard_normal((4, 3)), name="x")
    program = as_program(bn(x))
    assert [program.nodes[k].name for k in program.inputs] == ["x"]
    roots = {n.name: n.op for n in program.nodes if not n.parents}
    assert roots["running_mean"] is NodeKind.CONSTANT and roots["running_var"] is NodeKind.CONSTANT


# ------------------------------------------------------------- dynamic axes


def test_mlp_exported_at_batch_8_serves_batch_3():
    model = nn.MLP([5, 7, 4], activation="relu", rng=0, dtype=np.float32)
    x8 = np.random.default_rng(1).standard_normal((8, 5)).astype(np.float32)
    exported = ad.onnx.export(lambda images: model.predict_proba(images), x8,
                              dynamic_axes={"images": {0: "batch"}})
    assert _dims(exported.graph.input[0]) == ["batch", 5]
    assert _dims(exported.graph.output[0]) == ["batch", 4]
    x3 = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    with ad.no_grad():
        expected = model.predict_proba(ad.Tensor(x3)).value
    served = ad.onnx.run(exported, x3)[0]
    assert served.shape == (3, 4)
    np.testing.assert_allclose(served, expected, rtol=RTOL32, atol=ATOL32)


def test_transformer_lm_exported_at_batch_2_serves_batch_3_and_1():
    lm = _lm()
    program = ad.onnx.forward_program(lm, np.array([[1, 2, 3, 4], [5, 6, 7, 8]]), method="logits")
    exported = ad.onnx.export(program, dynamic_axes={"input": {0: "batch"}})
    session = ad.onnx.session(exported)
    for tokens in (np.array([[1, 2, 3, 4], [4, 3, 2, 1], [0, 10, 5, 5]]), np.array([[9, 9, 1, 0]])):
        np.testing.assert_allclose(ad.onnx.run(session, tokens)[0], lm.logits(tokens).value, rtol=RTOL64,
                                   atol=1e-12)


@pytest.mark.parametrize("kind", ["lenet", "gru"])
def test_convolutions_and_recurrences_exported_at_one_batch_serve_another(kind):
    rng = np.random.default_rng(0)
    if kind == "lenet":   # conv, pooling and flattening reshapes of (N, C, H, W)
        model = nn.LeNet(in_channels=1, image_size=8, num_classes=10, channels=(4, 8), kernel_sizes=(3, 3),
                         paddings=(1, 1), pools=(2, 2), hidden=16, rng=0)
        example, other = rng.standard_normal((4, 1, 8, 8)), rng.standard_normal((3, 1, 8, 8))
    else:                 # a recurrence over time from an initial state per sequence
        model = nn.RNN(nn.GRUCell(3, 4, rng=0))
        example, other = rng.standard_normal((5, 6, 3)), rng.standard_normal((2, 6, 3))
    exported = ad.onnx.export(ad.onnx.forward_program(model, example), dynamic_axes={"input": {0: "batch"}})
    model.eval()
    with ad.no_grad():
        expected = model(ad.Tensor(other)).value
    np.testing.assert_allclose(ad.onnx.run(exported, other)[0], expected, rtol=RTOL64, atol=1e-12)


def test_a_constant_shaped_by_the_batch_follows_it():
    w = np.random.default_rng(0).standard_normal((3, 4))

    def f(x):
        h0 = ad.zeros((x.shape[0], 4))   # an initial state of the batch's size, uniform along it
        return ad.tanh(x @ w + h0 + 1.0).sum(axis=-1)
    exported = ad.onnx.export(f, np.ones((6, 3)), dynamic_axes={"x": {0: "n"}})
    x = np.random.default_rng(1).standard_normal((2, 3))
    np.testing.assert_allclose(ad.onnx.run(exported, x)[0], np.tanh(x @ w + 1.0).sum(axis=-1), rtol=RTOL64)


def test_two_dynamic_axes_and_a_flattening_reshape():
    w = np.random.default_rng(0).standard_normal((3, 2))

    def f(x):
        b, t, d = x.shape
        return ad.reshape(ad.reshape(x, (b * t, d)) @ w, (b, t, 2))
    exported = ad.onnx.export(f, np.ones((4, 5, 3)), dynamic_axes={"x": {0: "batch", 1: "time"}})
    assert _dims(exported.graph.output[0]) == ["batch", "time", 2]
    x = np.random.default_rng(1).standard_normal((2, 7, 3))
    np.testing.assert_allclose(ad.onnx.run(exported, x)[0], x @ w, rtol=RTOL64)


def test_a_constant_that_varies_along_a_dynamic_axis_is_refused():
    def f(x):
        return x + np.arange(x.shape[0], dtype=np.float64)[:, None]
    with pytest.raises(OnnxExportError, match=r"batch.*axis 0 of 'x'|axis 0 of 'x'.*batch"):
        ad.onnx.export(f, np.ones((4, 3)), dynamic_axes={"x": {0: "batch"}})


def test_a_size_the_function_derives_from_the_batch_is_refused_not_baked():
    # Each would export "fine" at the traced batch and compute wrong values at another one.
    cases = [(lambda x: x[: x.shape[0] // 2], "not a multiple of 'batch'"),          # a rounded slice end
             (lambda x: x.sum() / x.shape[0], "writes a size of the axis as a constant"),  # 1/B as a number
             (lambda x: x[0] if x.shape[0] > 5 else ad.sum(x, axis=0), "not the same program")]
    for f, message in cases:
        with pytest.raises(OnnxExportError, match=message):
            ad.onnx.export(f, np.ones((4, 3)), dynamic_axes={"x": {0: "batch"}})


def test_torch_style_list_of_axes_and_a_shared_axis_name():
    w = np.random.default_rng(0).standard_normal((3, 3))
    exported = ad.onnx.export(lambda x, y: x @ w + y, np.ones((4, 3)), np.ones((4, 3)),
                              dynamic_axes={"x": [0], "y": {0: "x_dynamic_axes_1"}})
    assert _dims(exported.graph.input[0]) == ["x_dynamic_axes_1", 3]
    x, y = np.random.default_rng(1).standard_normal((2, 6, 3))
    np.testing.assert_allclose(ad.onnx.run(exported, x, y)[0], x @ w + y, rtol=RTOL64)


def test_dynamic_axes_name_unknown_inputs_and_axes_clearly():
    with pytest.raises(OnnxExportError, match=r"'y'.*inputs.*x"):
        ad.onnx.export(lambda x: x * 2.0, np.ones((4, 3)), dynamic_axes={"y": {0: "batch"}})
    with pytest.raises(OnnxExportError, match=r"axis 2.*\(4, 3\)"):
        ad.onnx.export(lambda x: x * 2.0, np.ones((4, 3)), dynamic_axes={"x": {2: "batch"}})


def test_dynamic_axes_of_a_bare_program_say_how_to_export_it():
    program = ad.trace(lambda x: x * 2.0, np.ones((4, 3)))
    with pytest.raises(OnnxExportError, match="export the function"):
        ad.onnx.export(program, dynamic_axes={"x": {0: "batch"}})


# ------------------------------------------------------------- the command line


def test_cli_export_errors_name_the_export_subcommand(tmp_path, capsys):
    assert main(["export", str(tmp_path / "missing.py") + ":f", "-o", str(tmp_path / "f.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autograd-dag: error: export: no such file"), err
    src = tmp_path / "target.py"
    src.write_text("def f():\n    return 1 / 0\n\ndef three():\n    return 3\n")
    assert main(["export", f"{src}:g"]) == 2
    assert capsys.readouterr().err.startswith("autograd-dag: error: export: module")
    assert main(["export", f"{src}:f"]) == 2
    assert capsys.readouterr().err.startswith("autograd-dag: error: export: ")
    assert main(["export", f"{src}:three"]) == 2
    assert capsys.readouterr().err.startswith("autograd-dag: error: export: expected a Program")
    assert main(["render", f"{src}:g"]) == 2
    assert capsys.readouterr().err.startswith("autograd-dag: error: render: module")
