"""ONNX export and import: every primitive of the table alone on ONNX Runtime, gradient
programs, the LeNet and TransformerLM models, the round trip, the command line.

Needs the ``onnx`` and ``onnxruntime`` packages (``pip install 'autograd-dag[onnx]'``;
``make test`` installs them); the module is skipped, saying so, without them.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
ort = pytest.importorskip("onnxruntime",
                          reason="ONNX tests need 'onnxruntime': pip install 'autograd-dag[onnx]'")

import autograd_dag as ad  # noqa: E402
from autograd_dag.onnx import UnsupportedPrimitiveError  # noqa: E402
from tests.test_primitives_table import ALL_CASES, case_id, closure, make_args, wrt_positions  # noqa: E402

# ONNX Runtime's CPU kernels for Det exist in float32 only: those cases run in float32.
FLOAT32_ONLY = {"det", "logabsdet", "slogdet_sign"}


def _program(case):
    """The case's primitive as a program: its float arguments are inputs, the others constants."""
    args = make_args(case)
    if wrt_positions(case, args):
        g, wrt_args = closure(case, args)
    else:
        def g(*xs):
            return case.fn(*xs)
        g.__name__ = case_id(case).replace("-", "_")
        wrt_args = tuple(np.asarray(a) for a in args)
    if case.prim in FLOAT32_ONLY:
        wrt_args = tuple(a.astype(np.float32) for a in wrt_args)
    return ad.trace(g, *wrt_args), wrt_args


def _uses_unsupported(program) -> list[str]:
    return sorted({n.op for n in program.nodes if n.prim is not None and n.op not in ad.onnx.RULES})


def _combined(programs) -> tuple[ad.Program, list[tuple[int, int]]]:
    """Many programs side by side as one (one export, one session, one run for the whole table).

    Returns the program and, per part, the span of its outputs.
    """
    nodes, inputs, outputs, spans = [], [], [], []
    for prog in programs:
        off = len(nodes)
        for n in prog.nodes:
            nodes.append(ad.ProgramNode(n.index + off, n.op, n.prim, tuple(p + off for p in n.parents), n.params,
                                        n.shape, n.dtype, name=n.name, value=n.value))
        inputs += [k + off for k in prog.inputs]
        spans.append((len(outputs), len(outputs) + len(prog.outputs)))
        outputs += [k + off for k in prog.outputs]
    return ad.Program(nodes, inputs, outputs, name="table", single_output=False), spans


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


class _Table:
    """Every supported case exported once as one model, run once on ONNX Runtime, loaded back once."""

    def __init__(self, items):
        # items: (case id, program, args)
        self.items = {cid: (prog, args) for cid, prog, args in items}
        supported = [(cid, prog, args) for cid, prog, args in items if not _uses_unsupported(prog)]
        program, spans = _combined([prog for _, prog, _ in supported])
        self.model = ad.onnx.export(program)  # check_model(full_check=True) runs inside
        flat_args = [a for _, _, args in supported for a in args]
        served = ad.onnx.run(self.model, *flat_args)
        with np.errstate(all="ignore"):  # cases at NaN and infinities on purpose
            loaded = _as_tuple(ad.onnx.load(self.model)(*flat_args))
        self.served = {cid: served[a:b] for (cid, _, _), (a, b) in zip(supported, spans)}
        self.loaded = {cid: loaded[a:b] for (cid, _, _), (a, b) in zip(supported, spans)}

    def check(self, cid, results, *, float_tol):
        prog, args = self.items[cid]
        with np.errstate(all="ignore"):  # cases at NaN and infinities on purpose
            expected = _as_tuple(prog(*args))
        got = results[cid]
        assert len(got) == len(expected)
        for e, g in zip(expected, got):
            e = np.asarray(e)
            assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
            if e.dtype.kind == "f":
                tol = 1e-5 if e.dtype == np.float32 else float_tol
                np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
            else:
                np.testing.assert_array_equal(g, e)


@pytest.fixture(scope="module")
def table64():
    return _Table([(case_id(c),) + _program(c) for c in ALL_CASES])


@pytest.mark.parametrize("case", ALL_CASES, ids=[case_id(c) for c in ALL_CASES])
def test_every_primitive_alone_on_onnxruntime(case, table64):
    """float64 to 1e-10 (float32 to 1e-5 for Det, which ONNX Runtime has in float32 only)."""
    cid = case_id(case)
    program, _ = table64.items[cid]
    missing = _uses_unsupported(program)
    if missing:
        assert case.prim in ad.onnx.UNSUPPORTED or set(missing) <= set(ad.onnx.UNSUPPORTED)
        with pytest.raises(UnsupportedPrimitiveError) as err:
            ad.onnx.export(program)
        assert err.value.missing == missing and all(m in str(err.value) for m in missing)
        return
    assert case.prim not in ad.onnx.UNSUPPORTED
    table64.check(cid, table64.served, float_tol=1e-10)


@pytest.mark.parametrize("case", ALL_CASES, ids=[case_id(c) for c in ALL_CASES])
def test_round_trip_export_import_execute(case, table64):
    """export -> load -> execute on numpy gives the program's values (and the input names)."""
    cid = case_id(case)
    if cid not in table64.loaded:
        pytest.skip("no ONNX mapping (its error is asserted above)")
    table64.check(cid, table64.loaded, float_tol=1e-10)


def test_round_trip_keeps_names():
    prog = ad.trace(lambda tokens, scale: ad.take(ad.Tensor(np.eye(4), name="table"), tokens) * scale,
                    np.array([1, 3]), 2.0)
    loaded = ad.onnx.load(ad.onnx.export(prog))
    assert [loaded.nodes[k].name for k in loaded.inputs] == ["tokens", "scale"]
    assert any(n.op is ad.NodeKind.CONSTANT and n.name == "table" for n in loaded.nodes)


def test_unsupported_primitives_are_exactly_the_decompositions_and_dropout():
    # Primitives users define with ad.primitive (other tests do) have no mapping either.
    from autograd_dag.primitives.registry import USER_PRIMITIVES
    builtin = set(ad.PRIMITIVES) - USER_PRIMITIVES
    unsupported = set(ad.onnx.unsupported_primitives()) & builtin
    # Met only in derivatives: qr_full_rank (qr's rank check), svd_reciprocal and svd_complement_unused (svd's), cofactor
    # and cofactor_derivative (det's, an inverse or an SVD) and linear_scan (cumprod's, a recurrence).
    assert unsupported == {"inv", "solve", "cholesky", "eigh", "svd", "qr", "qr_full_rank", "pinv", "dropout_mask",
                           "cofactor", "cofactor_derivative", "linear_scan", "svd_reciprocal",
                           "svd_complement_unused",
                           "gcd", "lcm"}   # (Euclid's algorithm: a loop, which ONNX would write as Loop)
    assert set(ad.onnx.supported_primitives()) == builtin - unsupported


def test_unsupported_primitive_names_every_missing_one_and_writes_nothing(tmp_path):
    prog = ad.trace(lambda a, b: ad.sum(ad.linalg.inv(a) + ad.linalg.solve(a, b)), np.eye(3), np.eye(3))
    path = tmp_path / "m.onnx"
    with pytest.raises(UnsupportedPrimitiveError) as err:
        ad.onnx.export(prog, path=path)
    assert err.value.missing == ["inv", "solve"]
    assert "inv" in str(err.value) and "solve" in str(err.value)
    assert not path.exists() and not list(tmp_path.iterdir())
    assert isinstance(err.value, ad.AutogradDagError)


FLOAT_CASES = [c for c in ALL_CASES if all(np.asarray(a).dtype.kind == "f" for a in make_args(c))]


def _program32(case):
    args = tuple(np.asarray(a, dtype=np.float32) for a in make_args(case))

    def g(*xs):
        return case.fn(*xs)
    g.__name__ = case_id(case).replace("-", "_")
    return ad.trace(g, *args), args


@pytest.fixture(scope="module")
def table32():
    return _Table([(case_id(c),) + _program32(c) for c in FLOAT_CASES])


@pytest.mark.parametrize("case", FLOAT_CASES, ids=[case_id(c) for c in FLOAT_CASES])
def test_every_primitive_alone_in_float32(case, table32):
    cid = case_id(case)
    if cid not in table32.served:
        pytest.skip("no ONNX mapping (asserted in float64)")
    table32.check(cid, table32.served, float_tol=1e-5)


# ------------------------------------------------- gradient programs and models

from autograd_dag import nn  # noqa: E402
from autograd_dag.nn import functional as F  # noqa: E402


def _assert_close_all(ours, theirs, dtype):
    ours = ours if isinstance(ours, tuple) else (ours,)
    assert len(ours) == len(theirs)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
    for a, b in zip(ours, theirs):
        assert b.dtype == np.asarray(a).dtype and b.shape == np.asarray(a).shape
        np.testing.assert_allclose(b, a, **tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradient_program_exports_and_runs(dtype):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal((3, 2)).astype(dtype)

    def loss(x, w):
        h = ad.tanh(x @ w)
        return ad.logsumexp(h, axis=-1).sum() + ad.max(ad.softargmax(h * 3.0), axis=0).sum()

    gprog = ad.grad_program(ad.trace(loss, x, w), with_value=True)
    model = ad.onnx.export(gprog)
    assert [o.name for o in model.graph.output][1:] == ["dloss/dx", "dloss/dw"]
    _assert_close_all(gprog(x, w), ad.onnx.run(model, x, w), dtype)


def _lenet(dtype):
    return nn.LeNet(in_channels=1, image_size=8, num_classes=10, channels=(4, 8), kernel_sizes=(3, 3),
                    paddings=(1, 1), pools=(2, 2), hidden=16, rng=0, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lenet_forward_and_training_step(dtype):
    model = _lenet(dtype)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 1, 8, 8)).astype(dtype), rng.integers(0, 10, 6)
    forward = ad.onnx.forward_program(model, x)
    _assert_close_all(forward(x), ad.onnx.run(ad.onnx.export(forward), x), dtype)
    step = ad.onnx.training_step_program(model, F.cross_entropy, x, y)
    exported = ad.onnx.export(step)
    names = [i.name for i in exported.graph.input]
    assert names[:2] == ["x", "y"] and names[2:] == [n for n, _ in model.named_parameters()]
    assert exported.graph.output[0].name == "loss"
    args = [x, y] + [p.value for p in model.parameters()]
    ours = step(*args)
    _assert_close_all(ours, ad.onnx.run(exported, *args), dtype)
    # The program's gradient is the library's: the same as backward() on the model.
    loss = F.cross_entropy(model(ad.Tensor(x)), y)
    loss.backward()
    np.testing.assert_allclose(ours[1], model.parameters()[0].grad.value, rtol=1e-4 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_transformer_lm_forward_and_training_step(dtype):
    lm = nn.TransformerLM(vocab_size=11, d_model=8, heads=2, hidden=16, layers=2, rng=0, dtype=dtype)
    tokens = np.random.default_rng(2).integers(0, 11, (2, 5))
    forward = ad.onnx.forward_program(lm, tokens)
    out = forward(tokens)
    _assert_close_all(out, ad.onnx.run(ad.onnx.export(forward), tokens), out.dtype)

    def lm_loss(logits, targets):
        return F.cross_entropy(logits, targets)
    step = ad.onnx.training_step_program(nn.Logits(lm), lm_loss, tokens[:, :-1], tokens[:, 1:])
    args = [tokens[:, :-1], tokens[:, 1:]] + [p.value for p in lm.parameters()]
    ours = step(*args)
    _assert_close_all(ours, ad.onnx.run(ad.onnx.export(step), *args), np.asarray(ours[0]).dtype)


# ------------------------------------------------------------------ import


def _hand_built_model(dtype):
    """A small CNN written with onnx.helper, as another tool would write it."""
    from onnx import helper, numpy_helper
    rng = np.random.default_rng(0)
    inits = {"W": rng.standard_normal((4, 1, 3, 3)), "B": rng.standard_normal(4),
             "Wfc": rng.standard_normal((16, 10)), "Bfc": rng.standard_normal(10)}
    inits = {k: v.astype(dtype) for k, v in inits.items()}
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    nodes = [
        helper.make_node("Conv", ["image", "W", "B"], ["conv"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["conv"], ["relu"]),
        helper.make_node("MaxPool", ["relu"], ["pool"], kernel_shape=[4, 4], strides=[4, 4]),
        helper.make_node("Flatten", ["pool"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "Wfc", "Bfc"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_cnn", [helper.make_tensor_value_info("image", elem, [2, 1, 8, 8])],
        [helper.make_tensor_value_info("probabilities", elem, [2, 10])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def test_load_a_model_built_elsewhere_runs_differentiates_and_renders(tmp_path):
    model = _hand_built_model(np.float32)  # ONNX Runtime has Conv in float32 only
    path = tmp_path / "tiny.onnx"
    onnx.save(model, path)
    prog32 = ad.onnx.load(path)
    x = np.random.default_rng(1).standard_normal((2, 1, 8, 8))
    np.testing.assert_allclose(prog32(x.astype(np.float32)), ad.onnx.run(model, x.astype(np.float32))[0],
                               rtol=1e-5, atol=1e-6)
    prog = ad.onnx.load(_hand_built_model(np.float64))
    assert prog.name == "tiny_cnn" and [prog.nodes[k].name for k in prog.inputs] == ["image"]
    assert {"conv2d", "max_pool2d", "matmul", "softargmax", "relu"} <= set(prog.op_counts())
    assert any(n.name == "Wfc" and n.op is ad.NodeKind.CONSTANT for n in prog.nodes)
    np.testing.assert_allclose(prog(x), prog32(x.astype(np.float32)), rtol=1e-4, atol=1e-5)
    # Differentiates: the gradient of one probability w.r.t. the image, checked by finite differences.
    scalar = ad.trace(lambda image: prog(image)[0, 3], x)
    ad.check_grads(lambda image: prog(image)[0, 3], (x,), modes=("rev",))
    assert ad.grad_program(scalar)(x).shape == x.shape
    for view in ("dag", "bipartite"):
        assert "conv2d" in ad.render(prog, view=view).source


def test_load_pads_max_pool_with_same_padding():
    """auto_pad=SAME_UPPER pads the input; it was ignored, giving a 4x4 pooling of a 5x5 image
    where ONNX Runtime gives 5x5 (then refused; now padded as the spec says)."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], auto_pad="SAME_UPPER")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 5, 5])])
    x = np.random.default_rng(0).standard_normal((1, 1, 5, 5)).astype(np.float32)
    # SAME_UPPER pads one row and one column at the end: each output is the maximum of x[i:i+2, j:j+2].
    padded = np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1)), constant_values=-np.inf)
    expected = np.max([padded[..., i:i + 5, j:j + 5] for i in range(2) for j in range(2)], axis=0)
    np.testing.assert_array_equal(ad.onnx.load(helper.make_model(graph))(x), expected)


def test_load_names_every_unsupported_operator():
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        # Text operators: the library has no strings (Erf, the example before, is now supported).
        [helper.make_node("StringNormalizer", ["x"], ["e"]), helper.make_node("TfIdfVectorizer", ["e"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.STRING, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    with pytest.raises(ad.onnx.OnnxImportError, match="StringNormalizer, TfIdfVectorizer"):
        ad.onnx.load(helper.make_model(graph))

# ------------------------------------------------------------- command line

from autograd_dag.cli import main  # noqa: E402

_CLI_TARGET = '''
import numpy as np, autograd_dag as ad

def loss():
    rng = np.random.default_rng(0)
    w = ad.Tensor(rng.standard_normal((4, 3)), requires_grad=True, name="w")
    x = ad.Tensor(rng.standard_normal((5, 4)), name="x")
    return ad.logsumexp(ad.tanh(x @ w), axis=-1).sum()

def uses_inv():
    a = ad.Tensor(np.eye(3), name="a")
    return ad.linalg.inv(a).sum()
'''


def test_cli_export_grad_and_render_onnx(tmp_path, capsys):
    src = tmp_path / "target.py"
    src.write_text(_CLI_TARGET)
    model_path, grad_path = tmp_path / "loss.onnx", tmp_path / "loss_grad.onnx"
    assert main(["export", f"{src}:loss", "-o", str(model_path)]) == 0
    assert main(["export", f"{src}:loss", "--grad", "-o", str(grad_path)]) == 0
    assert "ONNX nodes" in capsys.readouterr().out
    grad_model = onnx.load(grad_path)
    assert [i.name for i in grad_model.graph.input] == ["x", "w"]
    assert [o.name for o in grad_model.graph.output] == ["df/dw"]
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    expected = ad.grad(lambda w: ad.logsumexp(ad.tanh(ad.Tensor(x) @ w), axis=-1).sum())(w)
    np.testing.assert_allclose(ad.onnx.run(grad_model, x, w)[0], expected, rtol=1e-10)
    svg = tmp_path / "model.svg"
    assert main(["render", str(grad_path), "-o", str(svg)]) == 0
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert main(["render", str(model_path), "--view", "bipartite", "-o", str(tmp_path / "b.dot")]) == 0
    assert "tanh" in (tmp_path / "b.dot").read_text()


def test_cli_export_errors_are_one_line(tmp_path, capsys):
    src = tmp_path / "target.py"
    src.write_text(_CLI_TARGET)
    out = tmp_path / "inv.onnx"
    assert main(["export", f"{src}:uses_inv", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autograd-dag: error:") and "inv" in err and err.count("\n") == 1
    assert not out.exists()
    assert main(["render", str(tmp_path / "missing.onnx")]) == 2
    assert "no such file" in capsys.readouterr().err

# ---------------------------------------------------------------- example


def test_onnx_digits_example_fast(tmp_path):
    pytest.importorskip("sklearn")
    from examples import onnx_digits
    result = onnx_digits.run(fast=True, out=str(tmp_path), show_progress=False, verbose=False)
    assert result["test_accuracy"] > 0.6 and result["onnx_accuracy"] > 0.6
    assert result["prediction_agreement"] == 1.0
    # Every test image is served, the last partial batch too (the model's batch axis is dynamic).
    from examples import _common as C
    assert result["images"] == len(C.load_digits(seed=0, fast=True, images=False)[3]) == 200
    assert result["max_probability_difference"] < 1e-5
    assert result["train_step_max_relative_difference"] < 1e-5
    assert all(onnx.load(p).graph.node for p in result["paths"])


def test_load_common_inference_operators_match_onnxruntime():
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    inits = {k: v.astype(np.float32) for k, v in {
        "scale": rng.uniform(0.5, 2, 3), "bias": rng.standard_normal(3), "mean": rng.standard_normal(3),
        "var": rng.uniform(0.5, 2, 3), "split": np.array([1, 2])}.items()}
    inits["split"] = inits["split"].astype(np.int64)
    nodes = [
        helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["bn"], epsilon=1e-3),
        helper.make_node("Dropout", ["bn"], ["drop"]),
        helper.make_node("LeakyRelu", ["drop"], ["leaky"], alpha=0.1),
        helper.make_node("Split", ["leaky", "split"], ["a", "b"], axis=1),
        helper.make_node("Elu", ["a"], ["ea"], alpha=0.7),
        helper.make_node("HardSigmoid", ["b"], ["hb"]),
        helper.make_node("GlobalAveragePool", ["hb"], ["gap"]),
        helper.make_node("Concat", ["ea", "b"], ["cat"], axis=1),
        helper.make_node("ReduceMean", ["cat"], ["rm"], keepdims=0),
    ]
    graph = helper.make_graph(nodes, "ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 4])],
                              [helper.make_tensor_value_info("gap", TensorProto.FLOAT, [2, 2, 1, 1]),
                               helper.make_tensor_value_info("rm", TensorProto.FLOAT, [])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    prog = ad.onnx.load(model)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    for ours, theirs in zip(prog(x), ad.onnx.run(model, x)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_export_a_function_on_example_arguments(tmp_path):
    path = tmp_path / "f.onnx"
    x, w = np.ones((2, 3), np.float32), np.full((3, 4), 0.5, np.float32)
    model = ad.onnx.export(lambda x, w: ad.tanh(x @ w), x, w, path=path)
    assert path.exists() and not (tmp_path / "f.onnx.partial").exists()
    assert [i.name for i in model.graph.input] == ["x", "w"]
    assert model.opset_import[0].version == ad.onnx.DEFAULT_OPSET
    onnx.checker.check_model(onnx.load(path), full_check=True)
    np.testing.assert_allclose(ad.onnx.run(str(path), x, w)[0], np.tanh(x @ w), rtol=1e-6)
    with pytest.raises(ad.onnx.OnnxExportError, match="opset 5"):
        ad.onnx.export(lambda x: ad.exp(x), x, opset=5)
    with pytest.raises(ad.onnx.OnnxExportError, match="example arguments"):
        ad.onnx.export(lambda x: ad.exp(x))


def test_forward_program_names_initializers_after_parameters():
    model = nn.MLP([3, 4, 2], rng=0)
    exported = ad.onnx.export(ad.onnx.forward_program(model, np.ones((5, 3))))
    names = {t.name for t in exported.graph.initializer}
    assert {n for n, _ in model.named_parameters()} <= names


@pytest.mark.parametrize("opset, node, shapes", [
    # Flatten's axis is in [-r, r]: -1 was taken modulo r + 1 (flattening everything into one column).
    (17, ("Flatten", ["x"], ["y"], {"axis": -1}), [(2, 3, 4)]),
    (17, ("Flatten", ["x"], ["y"], {"axis": -2}), [(2, 3, 4)]),
    # Integer Div truncates and stays integer; it gave float quotients.
    (17, ("Div", ["x", "y"], ["z"], {}), "int"),
    # ... exactly: int64 beyond 2**53 went through float64 quotients (2**62 + 1 by 7 was off by 36).
    (17, ("Div", ["x", "y"], ["z"], {}), "bigint"),
    # Ties go to the lower index; the reversed ascending sort gave the higher one first.
    (17, ("TopK", ["x", "k"], ["v", "i"], {}), "topk"),
    # Before opset 13 Softmax normalizes over every axis from `axis` (default 1) on.
    (11, ("Softmax", ["x"], ["y"], {}), [(2, 3, 4)]),
    (11, ("LogSoftmax", ["x"], ["y"], {"axis": -2}), [(2, 3, 4)]),
    # Attributes of older opsets were ignored (no clipping) or crashed with a TypeError.
    (6, ("Clip", ["x"], ["y"], {"min": -0.5, "max": 0.25}), [(2, 3, 4)]),
    (2, ("Pad", ["x"], ["y"], {"pads": [0, 1, 0, 0, 2, 1], "value": 1.5}), [(2, 3, 4)]),
    (9, ("Slice", ["x"], ["y"], {"starts": [1, -3], "ends": [3, 100], "axes": [1, 2]}), [(2, 3, 4)]),
    (9, ("TopK", ["x"], ["v", "i"], {"k": 2}), [(5,)]),
    # Reductions keep the input's integer type: ReduceMean of int64 came back float64 (1.83 for 1),
    # ReduceSum of int32 came back int64.
    (17, ("ReduceMean", ["x"], ["y"], {"keepdims": 0}), "int64 matrix"),
    (17, ("ReduceSum", ["x"], ["y"], {"keepdims": 0}), "int32 matrix"),
    # CumSum of int32 came back int64; Clip of int32 with one bound came back float64.
    (17, ("CumSum", ["x", "axis"], ["y"], {}), "int32 matrix"),
    (17, ("Clip", ["x", "low"], ["y"], {}), "int32 matrix"),
    # Pow keeps the base's type: a float32 base with an int64 exponent came back float64.
    (17, ("Pow", ["x", "e"], ["y"], {}), "pow"),
])
def test_load_matches_onnxruntime_on_opset_and_attribute_variants(opset, node, shapes):
    from onnx import TensorProto, helper
    op, ins, outs, attrs = node
    rng = np.random.default_rng(0)
    inits = []
    if shapes == "int":
        args = [np.array([-7, 7, 5, -6], np.int64), np.array([2, -2, 3, 4], np.int64)]
    elif shapes == "bigint":
        args = [np.array([2**62 + 1, -(2**61) - 7, 2**53 + 1, 2**63 - 1, -(2**63), 123456789012345678], np.int64),
                np.array([7, 3, 1, 1, 1, -10], np.int64)]
    elif shapes in ("int64 matrix", "int32 matrix"):
        args = [np.array([[3, -7, 8], [1, 2, 4]], np.int64 if shapes.startswith("int64") else np.int32)]
        inits = {"CumSum": [helper.make_tensor("axis", TensorProto.INT64, [], [1])],
                 "Clip": [helper.make_tensor("low", TensorProto.INT32, [], [0])]}.get(op, [])
        ins = ins[:1]
    elif shapes == "pow":
        args = [rng.standard_normal((2, 3)).astype(np.float32)]
        inits = [helper.make_tensor("e", TensorProto.INT64, [], [3])]
        ins = ins[:1]
    elif shapes == "topk":
        args = [np.array([1.0, 3.0, 3.0, 0.0], np.float32)]
        inits = [helper.make_tensor("k", TensorProto.INT64, [1], [2])]
        ins = ins[:1]
    else:
        args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        if op == "TopK":
            args[0][3] = args[0][1]
    def info(name, a):
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
    graph = helper.make_graph([helper.make_node(op, ins + [t.name for t in inits], outs, **attrs)], "g",
                              [info(n, a) for n, a in zip(ins, args)],
                              [helper.make_tensor_value_info(o, TensorProto.INT64 if o == "i" else
                                                             helper.np_dtype_to_tensor_dtype(args[0].dtype), None)
                               for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    ours, theirs = ad.onnx.load(model)(*args), ad.onnx.run(model, *args)
    ours = ours if isinstance(ours, tuple) else (ours,)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        if a.dtype.kind in "iu":
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exported_programs_keep_numpy_values_at_infinities_and_nan(dtype):
    """Where numpy's function is defined (or NaN) at an edge, the exported model gives the same:
    before, logaddexp(−inf, −inf) was NaN (a zero probability in log space), hypot overflowed
    past 1e154, arctan(±inf) was NaN in float64, and max/min/argmax skipped NaN."""
    inf, nan = np.inf, np.nan
    a = np.array([-inf, inf, 0.0, -inf, 3.0, inf, -inf, -0.0, -0.0, 1.0], dtype)
    c = np.array([-inf, inf, 0.0, 2.0, -inf, inf, inf, -1.0, 1.0, inf], dtype)
    big = np.array([1e300, 3e-300, 0.0, inf, nan, -3.0], np.float64)

    def f(a, c, big, m):
        return (ad.logaddexp(a, c), ad.logaddexp2(a, c), ad.arctan2(a, c), ad.arctan(a), ad.hypot(big, big),
                ad.max(m, axis=1), ad.min(m, axis=0), ad.argmax(m, axis=1), ad.argmin(m, axis=0))
    m = np.array([[1.0, nan, 3.0], [inf, 2.0, nan], [0.5, 1.5, -2.0]], dtype)
    program = ad.trace(f, a, c, big, m)
    with np.errstate(all="ignore"):
        expected = program(a, c, big, m)
    served = ad.onnx.run(ad.onnx.export(program), a, c, big, m)
    for k, (e, s) in enumerate(zip(expected, served)):
        tol = 1e-6 if e.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(s, e, rtol=tol, atol=0, equal_nan=True, err_msg=f"output {k}")


def test_load_refuses_a_file_that_is_not_an_onnx_model(tmp_path, capsys):
    # Garbage gave protobuf's DecodeError as a traceback (the command exited 1, not 2);
    # an empty file loaded as a program with no inputs, nodes or outputs.
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"this is not protobuf \xff\xfe")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    for path in (garbage, empty):
        with pytest.raises(ad.onnx.OnnxImportError, match=f"{path.name}.*not an ONNX model"):
            ad.onnx.load(path)
        assert main(["render", str(path), "-o", str(tmp_path / "out.dot")]) == 2
        assert "autograd-dag: error:" in capsys.readouterr().err
    with pytest.raises(ad.onnx.OnnxImportError, match="not an ONNX model"):
        ad.onnx.load(b"\xff\xfe junk")


def test_exported_temperature_logsumexp_does_not_overflow_near_the_largest_float():
    # The exported graph divided x by γ before shifting by the max, as the primitive did:
    # lse_0.5([1e308, 1e308, 0]) came out inf and softargmax_0.5 NaN. The true values are
    # 1e308 + 0.5·log 2 (= 1e308 in float64) and (1/2, 1/2, 0).
    x = np.array([1e308, 1e308, 0.0])
    lse = ad.onnx.run(ad.onnx.export(lambda t: ad.logsumexp(t, gamma=0.5), x), x)[0]
    p = ad.onnx.run(ad.onnx.export(lambda t: ad.softargmax(t, gamma=0.5), x), x)[0]
    assert float(lse) == 1e308
    np.testing.assert_allclose(p, [0.5, 0.5, 0.0], atol=1e-15)


def test_load_of_many_inputs_and_outputs_does_not_scan_the_inputs_per_output(tmp_path):
    # Each output was compared by identity with every input: O(inputs × outputs),
    # 22 s to load a model with 10,000 of each.
    from tests import helpers
    n = 1500
    xs = [np.full(1, float(i)) for i in range(n)]
    program = ad.trace(lambda *a: [x * 2.0 for x in a], *xs)
    path = str(tmp_path / "wide.onnx")
    ad.onnx.export(program, path=path)
    loaded = {}
    steps = helpers.generator_steps(lambda: loaded.setdefault("p", ad.onnx.load(path)), "_import.py")
    assert steps < 10 * n
    outs = loaded["p"](*xs)
    np.testing.assert_array_equal(np.concatenate(outs), 2.0 * np.arange(n))
