"""Issue 28: operands that fix a shape, given as graph inputs; constant folding; nothing half-built.

ONNX lets a model take Reshape's shape, Slice's starts, TopK's K... as graph inputs (its own node
tests do). ``ad.onnx.load(model, constants=...)`` specialises the program on their values, as
``jax.jit`` does on static arguments; ``ad.onnx.load_function`` does so per call. Each model is
built with onnx.helper and compared with numpy's computation of the operator's definition.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import autograd_dag as ad  # noqa: E402
from autograd_dag import core, trace_state  # noqa: E402
from autograd_dag.modes import modes  # noqa: E402
from autograd_dag.onnx import _ops  # noqa: E402

_D, _I = TensorProto.DOUBLE, TensorProto.INT64


def _model(nodes, inputs, outputs, *, inits=(), opset=21):
    """``inputs``/``outputs``: (name, elem type, shape); ``inits``: (name, array)."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _input_names(prog):
    return [prog.nodes[k].name for k in prog.inputs]


def _reshape_model():
    return _model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")],
                  [("x", _D, [2, 3]), ("shape", _I, [2])], [("y", _D, None)])


_X = np.arange(6.0).reshape(2, 3) / 7.0


# ------------------------------------------------------------------ load(constants=...)


def test_a_shape_given_as_a_graph_input_is_refused_naming_the_input_and_how_to_give_it():
    with pytest.raises(ad.onnx.OnnxImportError) as info:
        ad.onnx.load(_reshape_model())
    message = str(info.value)
    for part in ("'shape'", "the shape of node 'r' (Reshape)", "constants=", "load_function"):
        assert part in message


def test_load_with_the_value_specialises_the_program_on_it():
    prog = ad.onnx.load(_reshape_model(), constants={"shape": np.array([3, -1])})
    # The shape is baked in: no longer an input, so the program cannot be called with another one.
    assert _input_names(prog) == ["x"]
    np.testing.assert_array_equal(prog(_X), _X.reshape(3, 2))
    ad.check_grads(lambda x: prog(x), (_X,), modes=("rev",))


def test_an_input_given_but_not_needed_statically_stays_an_input():
    # As jit: only the static arguments are specialised on; the data input keeps being an input.
    prog = ad.onnx.load(_reshape_model(), constants={"x": np.ones((2, 3)), "shape": [6, 1]})
    assert _input_names(prog) == ["x"]
    np.testing.assert_array_equal(prog(_X), _X.reshape(6, 1))


def test_every_missing_value_is_named_at_once_with_its_operator():
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
             helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk", axis=-1),
             helper.make_node("ReduceSum", ["x", "axes"], ["s"], name="sum"),
             helper.make_node("Unsqueeze", ["r", "axes2"], ["u"], name="behind")]
    model = _model(nodes, [("x", _D, [2, 3]), ("shape", _I, [2]), ("k", _I, [1]), ("axes", _I, [1]),
                           ("axes2", _I, [1])],
                   [("values", _D, None), ("indices", _I, None), ("s", _D, None), ("u", _D, None)])
    with pytest.raises(ad.onnx.OnnxImportError) as info:
        ad.onnx.load(model)
    message = str(info.value)
    assert "3 graph input(s)" in message
    for part in ("'shape' (the shape of node 'reshape' (Reshape))", "'k' (the K of node 'topk' (TopK))",
                 "'axes' (the axes of node 'sum' (ReduceSum))",
                 # Unsqueeze reads Reshape's result, which cannot be made yet: said, not hidden.
                 "1 node(s) reading results that need them were not replayed"):
        assert part in message
    # Given those, the one behind them is named, and only it; values given but not needed stay unused.
    with pytest.raises(ad.onnx.OnnxImportError, match=r"1 graph input\(s\).*'axes2' \(the axes of node 'behind'"):
        ad.onnx.load(model, constants={"shape": [3, 2], "axes": [0], "k": [1]})
    prog = ad.onnx.load(model, constants={"shape": [3, 2], "axes": [0], "k": [1], "axes2": [1]})
    assert _input_names(prog) == ["x"]
    values, indices, s, u = prog(_X)
    np.testing.assert_array_equal(values, _X.max(axis=-1, keepdims=True))
    np.testing.assert_array_equal(indices, _X.argmax(axis=-1)[:, None])
    np.testing.assert_array_equal(s, _X.sum(axis=0, keepdims=True))
    np.testing.assert_array_equal(u, _X.reshape(3, 1, 2))


def test_a_static_operand_computed_from_an_input_specialises_on_that_input():
    nodes = [helper.make_node("Add", ["k", "one"], ["k1"]),
             helper.make_node("TopK", ["x", "k1"], ["v", "i"], axis=1)]
    model = _model(nodes, [("x", _D, [2, 3]), ("k", _I, [1])], [("v", _D, None), ("i", _I, None)],
                   inits=[("one", np.array([1]))])
    with pytest.raises(ad.onnx.OnnxImportError, match=r"'k' \(the K of TopK node #1, through 'k1'\)"):
        ad.onnx.load(model)
    prog = ad.onnx.load(model, constants={"k": np.array([1]), "x": _X})
    assert _input_names(prog) == ["x"]
    v, _ = prog(_X)
    np.testing.assert_array_equal(v, -np.sort(-_X, axis=1)[:, :2])


def test_an_integer_input_passed_through_identity_is_not_taken_for_a_constant():
    # An integer program input is a leaf that requires no gradient: Identity's result was taken
    # for a constant (the input's placeholder zeros), and Reshape read 0 = "keep the dimension":
    # the program returned x unchanged whatever 'shape' was.
    nodes = [helper.make_node("Identity", ["shape"], ["s"]), helper.make_node("Reshape", ["x", "s"], ["y"])]
    model = _model(nodes, [("x", _D, [2, 3]), ("shape", _I, [2])], [("y", _D, None)])
    with pytest.raises(ad.onnx.OnnxImportError, match=r"'shape' \(the shape of Reshape node #1, through 's'\)"):
        ad.onnx.load(model)
    assert ad.onnx.load(model, constants={"shape": [3, 2]})(_X).shape == (3, 2)


@pytest.mark.parametrize("op, operands, what", [
    ("Slice", {"starts": [1], "ends": [3], "axes": [1], "steps": [1]}, "starts"),
    ("Expand", {"shape": [2, 2, 3]}, "shape"),
    ("Unsqueeze", {"axes": [0]}, "axes"),
    ("CumSum", {"axis": np.array(1)}, "axis"),
])
def test_each_static_operand_as_a_graph_input(op, operands, what):
    names = list(operands)
    model = _model([helper.make_node(op, ["x", *names], ["y"])],
                   [("x", _D, [2, 3])] + [(n, _I, list(np.shape(v))) for n, v in operands.items()],
                   [("y", _D, None)])
    with pytest.raises(ad.onnx.OnnxImportError, match=f"the {what} of {op}"):
        ad.onnx.load(model)
    got = ad.onnx.load(model, constants=operands)(_X)
    expected = {"Slice": lambda: _X[:, 1:3], "Expand": lambda: np.broadcast_to(_X, (2, 2, 3)),
                "Unsqueeze": lambda: _X[None], "CumSum": lambda: np.cumsum(_X, axis=1)}[op]()
    np.testing.assert_allclose(got, expected, rtol=1e-15)


def test_range_bounds_given_as_graph_inputs():
    model = _model([helper.make_node("Range", ["start", "limit", "delta"], ["y"])],
                   [("start", _D, []), ("limit", _D, []), ("delta", _D, [])], [("y", _D, None)])
    prog = ad.onnx.load(model, constants={"start": np.array(1.0), "limit": np.array(2.0),
                                          "delta": np.array(0.25)})
    assert prog.inputs == ()
    np.testing.assert_array_equal(prog(), np.arange(1.0, 2.0, 0.25))


def test_given_values_are_checked_against_the_declared_inputs():
    with pytest.raises(ad.onnx.OnnxImportError, match=r"names \['shap'\], not graph inputs.*\['x', 'shape'\]"):
        ad.onnx.load(_reshape_model(), constants={"shap": [3, 2]})
    with pytest.raises(ad.onnx.OnnxImportError, match=r"constants\['shape'\] has shape \(3,\).*\[2\]"):
        ad.onnx.load(_reshape_model(), constants={"shape": [3, 2, 1]})
    with pytest.raises(ad.onnx.OnnxImportError, match=r"constants\['shape'\] is float64.*int64"):
        ad.onnx.load(_reshape_model(), constants={"shape": [3.5, 2.0]})
    # An exact conversion (a Python list of int32 values, floats holding integers) is fine.
    assert ad.onnx.load(_reshape_model(), constants={"shape": np.array([3.0, 2.0])})(_X).shape == (3, 2)


def test_a_value_given_replaces_the_default_of_an_input_with_an_initializer():
    # Before IR 4 initializers were also graph inputs: defaults the caller may override.
    model = _reshape_model()
    model.graph.initializer.append(numpy_helper.from_array(np.array([6, 1]), "shape"))
    assert ad.onnx.load(model)(_X).shape == (6, 1)
    assert ad.onnx.load(model, constants={"shape": [3, 2]})(_X).shape == (3, 2)


def test_a_value_given_fixes_a_symbolic_input_shape():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [("x", _D, ["batch", 3])], [("y", _D, None)])
    with pytest.raises(ad.onnx.OnnxImportError, match="symbolic shape.*constants="):
        ad.onnx.load(model)
    prog = ad.onnx.load(model, constants={"x": np.ones((5, 3))})
    assert _input_names(prog) == ["x"] and prog(-_X[:1].repeat(5, 0)).shape == (5, 3)


# ------------------------------------------------------------------ constant folding


def test_a_shape_computed_from_constants_and_input_shapes_is_folded():
    # The form exporters write: Shape -> Gather -> Concat -> Reshape (here x of (2, 3, 4) -> (2, 12)).
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
             helper.make_node("Unsqueeze", ["batch", "axes0"], ["b1"]),
             helper.make_node("Mul", ["s", "s"], ["s2"]),      # an elementwise node of known values
             helper.make_node("Slice", ["s2", "one", "big"], ["tail"]),
             helper.make_node("ReduceProd", ["tail"], ["n"], keepdims=1),
             helper.make_node("Sqrt", ["n_f"], ["root"]),       # unused: dead code must not hurt
             helper.make_node("Cast", ["n"], ["n_f"], to=TensorProto.DOUBLE),
             helper.make_node("Div", ["n", "n_div"], ["cols"]),
             helper.make_node("Concat", ["b1", "cols"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    nodes = nodes[:6] + nodes[7:]  # (Sqrt would read n_f before it is made)
    model = _model(nodes, [("x", _D, [2, 3, 4])], [("y", _D, None)],
                   inits=[("zero", np.array(0)), ("axes0", np.array([0])), ("one", np.array([1])),
                          ("big", np.array([9])), ("n_div", np.array([12]))])
    x = np.arange(24.0).reshape(2, 3, 4)
    prog = ad.onnx.load(model)
    np.testing.assert_array_equal(prog(x), x.reshape(2, 12))   # (3*3 * 4*4) / 12 = 12
    ad.check_grads(lambda t: prog(t), (x,), modes=("rev",))


def test_torchscripts_zero_initial_state_of_a_recurrent_layer_is_folded():
    # torch.onnx (TorchScript) writes an LSTM/GRU's zero state as
    # Expand(0, Concat([1], Unsqueeze(Gather(Shape(x), 0)), [5])): refused before folding.
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
             helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"]),
             helper.make_node("Concat", ["one", "b1", "five"], ["shape"], axis=0),
             helper.make_node("Expand", ["zero_f", "shape"], ["h0"]),
             helper.make_node("Add", ["h0", "y"], ["out"])]
    model = _model(nodes, [("x", _D, [4, 3]), ("y", _D, [1, 4, 5])], [("out", _D, None)],
                   inits=[("zero", np.array(0)), ("axes0", np.array([0])), ("one", np.array([1])),
                          ("five", np.array([5])), ("zero_f", np.array(0.0))])
    prog = ad.onnx.load(model)
    y = np.arange(20.0).reshape(1, 4, 5)
    np.testing.assert_array_equal(prog(np.ones((4, 3)), y), y)


def test_a_shape_computed_from_an_input_value_without_a_value_is_refused_clearly():
    # Reshape to the shape of x's values: value-dependent, refused naming x.
    nodes = [helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT64),
             helper.make_node("Reshape", ["x", "xi"], ["y"])]
    model = _model(nodes, [("x", _D, [2])], [("y", _D, None)])
    with pytest.raises(ad.onnx.OnnxImportError, match=r"'x' \(the shape of Reshape node #1, through 'xi'\)"):
        ad.onnx.load(model)
    # Given, x is static (its value fixes the shape): the program has no input left.
    prog = ad.onnx.load(model, constants={"x": np.array([2.0, 1.0])})
    assert prog.inputs == () and prog().shape == (2, 1)


def test_a_shape_drawn_at_random_is_refused_naming_the_random_node(monkeypatch):
    # No random operator is imported yet; one that is must not be folded into a constant.
    # (Its draw has RandomUniform's type, float32, cast to Unsqueeze's int64 axes.)
    monkeypatch.setitem(_ops.HANDLERS, "RandomUniform", lambda c: np.ones(1, np.float32))
    nodes = [helper.make_node("RandomUniform", [], ["u"], name="draw", shape=[1]),
             helper.make_node("Cast", ["u"], ["ui"], to=TensorProto.INT64),
             helper.make_node("Unsqueeze", ["x", "ui"], ["y"])]
    model = _model(nodes, [("x", _D, [2])], [("y", _D, None)])
    with pytest.raises(ad.onnx.OnnxImportError, match=r"node 'draw' \(RandomUniform\) draws at random"):
        ad.onnx.load(model)


# ------------------------------------------------------------------ load_function


def test_load_function_specialises_on_each_calls_static_values():
    f = ad.onnx.load_function(_reshape_model())
    assert f.input_names == ["x", "shape"]
    np.testing.assert_array_equal(f(_X, np.array([3, 2])), _X.reshape(3, 2))
    np.testing.assert_array_equal(f(_X, shape=np.array([6, 1])), _X.reshape(6, 1))
    assert len(f.programs) == 2
    # The same static value again: the cached program, not a new load.
    prog = f.program(2 * _X, np.array([3, 2]))
    assert len(f.programs) == 2 and prog is f.program(_X, [3, 2])
    assert _input_names(prog) == ["x"]
    ad.check_grads(lambda x: prog(x), (_X,), modes=("rev",))
    # Called on Tensors it records, so a function calling it differentiates.
    ad.check_grads(lambda x: f(x, np.array([3, 2])) * 2.0, (_X,), modes=("rev", "fwd"))
    # Inside jit, a static value computed from the traced arguments would be frozen: refused.
    with pytest.raises(ad.TracingError, match="input 'shape' \\(it fixes a shape\\)"):
        ad.jit(lambda x, s: f(x, s))(_X, np.array([3, 2]))
    with pytest.raises(ad.onnx.OnnxImportError, match=r"missing input\(s\) \['shape'\]"):
        f(_X)
    with pytest.raises(ad.onnx.OnnxImportError, match="'y' is not an input"):
        f(_X, y=1)


def test_load_function_of_a_model_without_static_inputs_loads_once_per_shape():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [("x", _D, ["n"])], [("y", _D, None)])
    f = ad.onnx.load_function(model)
    np.testing.assert_array_equal(f(np.array([-1.0, 2.0])), [0.0, 2.0])
    np.testing.assert_array_equal(f(np.array([3.0, -2.0])), [3.0, 0.0])
    np.testing.assert_array_equal(f(np.array([3.0])), [3.0])
    assert len(f.programs) == 2


# ------------------------------------------------------------------ nothing half-built


def _global_state():
    m = modes()
    return (list(m.active), list(m.recording_programs), list(m.sinks),
            core.is_recording(), gc.isenabled(), np.geterr(), dict(_ops.HANDLERS))


def test_every_missing_operator_is_named_at_once_and_nothing_changes():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("StringNormalizer", ["a"], ["b"]),
             helper.make_node("NoSuchOp", ["b"], ["c"]), helper.make_node("StringNormalizer", ["c"], ["d"]),
             helper.make_node("Custom", ["d"], ["y"], domain="com.example")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", _D, [2])],
                              [helper.make_tensor_value_info("y", _D, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.example", 1)])
    before = _global_state()
    with pytest.raises(ad.onnx.OnnxImportError, match=r"3 operator\(s\).*: NoSuchOp, StringNormalizer, com\.example:Custom$"):
        ad.onnx.load(model)
    assert _global_state() == before


def _chain_with_a_failure_in_the_middle():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="first"),
             helper.make_node("Reshape", ["a", "bad"], ["b"], name="middle"),   # 6 values into 5
             helper.make_node("Relu", ["b"], ["y"], name="last")]
    return _model(nodes, [("x", _D, [2, 3])], [("y", _D, None)], inits=[("bad", np.array([5]))])


def test_a_node_failing_mid_graph_is_named_and_leaves_no_state_behind():
    before = _global_state()
    with pytest.raises(ad.onnx.OnnxImportError, match=r"node 'middle' \(Reshape\)"):
        ad.onnx.load(_chain_with_a_failure_in_the_middle())
    assert _global_state() == before
    # The library still records and runs normally afterwards.
    assert ad.grad(lambda t: (t * t).sum())(np.ones(2)).tolist() == [2.0, 2.0]


def test_a_refusal_or_a_crash_in_a_handler_names_its_node(monkeypatch):
    def refuse(c):
        raise ad.onnx.OnnxImportError("onnx.load: Relu with this form is not supported")
    monkeypatch.setitem(_ops.HANDLERS, "Relu", refuse)
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="act")], [("x", _D, [2])], [("y", _D, None)])
    with pytest.raises(ad.onnx.OnnxImportError, match=r"not supported \(at node 'act' \(Relu\)\)"):
        ad.onnx.load(model)

    def crash(c):
        raise IndexError("a defect")
    monkeypatch.setitem(_ops.HANDLERS, "Relu", crash)
    before = _global_state()
    with pytest.raises(IndexError) as info:
        ad.onnx.load(model)
    # A defect stays an IndexError (not disguised as a refusal) but says where it happened.
    assert any("node 'act' (Relu)" in note for note in info.value.__notes__)
    monkeypatch.undo()
    assert _global_state()[:-1] == before[:-1]
