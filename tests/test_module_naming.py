"""Parameters named by their path from the module the user called, on every method, and frozen per graph.

The user's call of any method of a module (``model(x)``, ``model.logits(x)``,
a subclass's own method) names every parameter by its dotted path from that
module, so that programs and pictures show "fc3.weight" and draw each layer as
a cluster; a graph keeps the names it was recorded under. The first tests make
each kind of change to the module tree after a call (guards for any cache of
those names).
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn


class _Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(2, 2, rng=0)]
        self.head = nn.Linear(2, 1, rng=1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def _names(model):
    return sorted(p.name for p in model.parameters())


def test_a_root_call_names_parameters_after_every_kind_of_change():
    """Each change below happens after a call; the next call must name by dotted path again."""
    model, x = _Stack(), np.ones((3, 2))
    spare, other = nn.Linear(2, 2, rng=2), nn.Linear(2, 2, rng=3)   # made before the calls
    model(x)
    assert _names(model) == ["head.bias", "head.weight", "layers.0.bias", "layers.0.weight"]
    # A layer appended to a plain list: no __setattr__ sees it (its parameters keep their short names until the call).
    model.layers.append(spare)
    assert model.layers[1].weight.name == "weight"
    model(x)
    assert model.layers[1].weight.name == "layers.1.weight"
    # A list item replaced in place, the old one freed: the new one is named.
    model.layers[0] = other
    model(x)
    assert model.layers[0].bias.name == "layers.0.bias"
    # A name the user overwrote is given back, as on every root call.
    model.head.weight.name = "mine"
    model(x)
    assert model.head.weight.name == "head.weight"
    # An attribute deleted, then a new parameter under a new attribute of a layer.
    del model.head
    model.head = nn.Linear(2, 1, rng=4)
    model.head.extra = nn.Parameter(np.zeros(1))
    model(x)
    assert model.head.extra.name == "head.extra"
    assert _names(model) == sorted(["head.bias", "head.weight", "head.extra", "layers.0.bias",
                                    "layers.0.weight", "layers.1.bias", "layers.1.weight"])


def test_functional_call_then_a_call_names_the_module_own_parameters():
    model, x = _Stack(), np.ones((3, 2))
    model(x)
    given = ad.Tensor(np.ones((1, 2)))
    nn.functional_call(model, {"head.weight": given}, x)
    assert given.name is None               # a substituted Tensor is not the module's parameter
    model(x)
    assert model.head.weight.name == "head.weight"


# ------------------------------------------- names and clusters on every method (issue 24, item 4)

def _parameter_names(out) -> list[str]:
    """The names a program recorded from ``out`` gives its parameter nodes, in program order."""
    program = ad.Program.from_outputs((), out)
    return [n.name for n in program.nodes if n.op is ad.NodeKind.PARAMETER]


def _expected(model, out) -> list[str]:
    """Each parameter node's dotted path in ``model`` (found by its array, not by the program's name)."""
    path = {id(p.value): name for name, p in model.named_parameters()}
    program = ad.Program.from_outputs((), out)
    return [path[id(n.value)] for n in program.nodes if n.op is ad.NodeKind.PARAMETER]


MLP_NAMES = ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"]


@pytest.mark.parametrize("method", ["logits", "predict_proba", "call"])
def test_mlp_methods_name_parameters_by_path_and_draw_layer_clusters(method):
    # MLP.logits named them weight, bias, weight, bias and drew no layer cluster: the Linear layers in
    # the list were each called as a root (only __call__ named and scoped the children).
    m, x = nn.MLP([3, 4, 2], rng=0), np.zeros((1, 3))
    out = m(x) if method == "call" else getattr(m, method)(x)
    assert sorted(_parameter_names(out)) == sorted(MLP_NAMES)
    program = ad.Program.from_outputs((), out)
    assert {n.scope for n in program.nodes if n.op == "matmul"} == {("layers.0",), ("layers.1",)}
    source = ad.render(out).source
    assert "<B>layers.0</B>" in source and "<B>layers.1</B>" in source
    assert all(name in source for name in MLP_NAMES)
    svg = ad.render(out).pipe(format="svg").decode()          # dot runs for real
    assert svg.count('class="cluster"') == 3 and "layers.1.weight" in svg   # the two layers, the activation


def test_a_layer_called_alone_is_named_from_itself_and_the_model_graph_keeps_its_names():
    m, x = nn.MLP([3, 4, 2], rng=0), np.zeros((1, 3))
    whole = m.logits(x)
    alone = m.layers[0](x)
    assert sorted(_parameter_names(alone)) == ["bias", "weight"]
    assert sorted(_parameter_names(whole)) == sorted(MLP_NAMES)


class _Net(nn.Module):
    """Sub-modules in a plain attribute, a list and a dict, and methods of its own."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(2, 3, rng=0)
        self.blocks = [nn.Linear(3, 3, rng=1), nn.Linear(3, 3, rng=2)]
        self.heads = {"cls": nn.Linear(3, 2, rng=3), "reg": nn.Linear(3, 1, rng=4)}
        self.scale = nn.Parameter(np.ones(3))

    def encode(self, x):
        h = self.enc(x) * self.scale
        for block in self.blocks:
            h = ad.tanh(block(h))
        return h

    def classify(self, x):
        return self.heads["cls"](self.encode(x))

    def forward(self, x):
        h = self.encode(x)
        return self.heads["cls"](h).sum() + self.heads["reg"](h).sum()


NET = ["enc.weight", "enc.bias", "scale", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight",
       "blocks.1.bias", "heads.cls.weight", "heads.cls.bias"]


def test_user_methods_name_attributes_lists_and_dicts_by_path():
    net, x = _Net(), np.ones((4, 2))
    # A module in a dict is a sub-module: its parameters are trained and saved like the others.
    assert [n for n, _ in net.named_parameters()] == ["scale", "enc.weight", "enc.bias", "blocks.0.weight",
                                                      "blocks.0.bias", "blocks.1.weight", "blocks.1.bias",
                                                      "heads.cls.weight", "heads.cls.bias", "heads.reg.weight",
                                                      "heads.reg.bias"]
    assert "heads.reg.bias" in net.state_dict()
    assert sorted(_parameter_names(net.classify(x))) == sorted(NET)
    assert sorted(_parameter_names(net.encode(x))) == sorted(NET[:7])
    assert sorted(_parameter_names(net(x))) == sorted(NET + ["heads.reg.weight", "heads.reg.bias"])
    program = ad.Program.from_outputs((), net.classify(x))
    assert {n.scope for n in program.nodes if n.op == "matmul"} == {("enc",), ("blocks.0",), ("blocks.1",),
                                                                    ("heads.cls",)}
    source = ad.render(net.classify(x)).source
    for cluster in ("enc", "blocks.0", "blocks.1", "heads.cls"):
        assert f"<B>{cluster}</B>" in source, cluster


class _Outer(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.out = nn.Linear(2, 1, rng=5)

    def score(self, x):
        return self.out(self.inner.classify(x))          # nested: a method of a sub-module's method

    def forward(self, x):
        return self.out(self.inner(x).reshape(1, 1) * np.ones((1, 2)))


def test_nested_method_calls_name_by_the_path_from_the_outermost_module():
    outer, x = _Outer(_Net()), np.ones((4, 2))
    assert sorted(_parameter_names(outer.score(x))) == sorted(["inner." + n for n in NET] + ["out.weight",
                                                                                            "out.bias"])
    program = ad.Program.from_outputs((), outer.score(x))
    assert {n.scope for n in program.nodes if n.op == "matmul"} >= {("enc",), ("blocks.1",), ("out",)}
    # The inner module called alone again: named from itself.
    assert sorted(_parameter_names(outer.inner.classify(x))) == sorted(NET)


class _Wrap(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def logits(self, x):
        return self.inner.logits(x)


def test_wrapping_a_module_does_not_rename_a_graph_recorded_before():
    lm, x = nn.MLP([3, 4, 2], rng=0), np.zeros((1, 3))
    before = lm.logits(x)
    wrapper = _Wrap(lm)                                  # the wrap, after the record
    assert sorted(_parameter_names(before)) == sorted(MLP_NAMES)
    through = wrapper.logits(x)                          # recorded through the wrapper: its paths
    assert sorted(_parameter_names(through)) == sorted("inner." + n for n in MLP_NAMES)
    source = ad.render(before).source                    # still, after the wrapper's call
    assert sorted(_parameter_names(before)) == sorted(MLP_NAMES)
    assert "layers.0.weight" in source and "inner." not in source
    assert "inner.layers.0.weight" in ad.render(through).source
    # A graph holding both records draws each parameter once, by the name of its first reader.
    both = ad.Program.from_outputs((), (before, through))
    assert sorted(n.name for n in both.nodes if n.op is ad.NodeKind.PARAMETER) == sorted(MLP_NAMES)


@pytest.mark.parametrize("method", ["logits", "hidden_states", "call"])
def test_transformer_lm_methods_name_every_parameter_by_path(method):
    lm = nn.TransformerLM(10, d_model=8, heads=2, hidden=16, layers=2, rng=0)
    tokens = np.array([[1, 2, 3]])
    out = lm(tokens) if method == "call" else getattr(lm, method)(tokens)
    names = _parameter_names(out)
    assert names == _expected(lm, out)
    assert "block.1.attention.W_Q" in names and "block.0.norm2.gamma" in names


def test_transformer_encode_decode_name_every_parameter_by_path():
    model = nn.Transformer(7, 6, d_model=8, heads=2, hidden=16, layers=1, rng=0)
    src, tgt = np.array([[1, 2, 3]]), np.array([[0, 1]])
    memory = model.encode(src)
    for out in (memory, model.decode(tgt, memory), model.logits(src, tgt)):
        names = _parameter_names(out)
        assert names == _expected(model, out)
    assert any(n.startswith("encoder.block.0.") for n in _parameter_names(memory))
    assert any(n.startswith("decoder.block.0.") for n in _parameter_names(model.decode(tgt, memory)))


def test_bert_methods_name_every_parameter_by_path():
    bert = nn.BERT(12, d_model=8, heads=2, hidden=16, layers=1, max_length=8, rng=0)
    tokens = np.array([[2, 6, 7, 3, 8, 3]])
    hidden = bert.hidden_states(tokens)
    for out in (hidden, bert.mlm_logits(hidden), bert.nsp_logits(hidden), bert.pooled(hidden)):
        assert _parameter_names(out) == _expected(bert, out)
    assert "token_embedding.weight" in _parameter_names(hidden)
    assert "encoder.block.0.attention.W_Q" in _parameter_names(hidden)
    clf = nn.BERTClassifier(bert, 3, rng=1)
    for out in (clf.logits(tokens), clf.predict_proba(tokens)):
        names = _parameter_names(out)
        assert names == _expected(clf, out) and "bert.encoder.block.0.attention.W_Q" in names


def test_transformer_classifier_encode_names_every_parameter_by_path():
    model = nn.TransformerClassifier(12, 3, d_model=8, heads=2, hidden=16, layers=1, rng=0)
    out = model.encode(np.array([[2, 6, 7]]))[0]
    names = _parameter_names(out)
    assert names == _expected(model, out) and "encoder.block.0.ffn.W1" in names and "cls" in names


def test_a_module_in_a_dict_is_trained_and_substituted_like_the_others():
    net, x = _Net(), np.random.default_rng(0).standard_normal((4, 2))
    W = np.random.default_rng(1).standard_normal((2, 3))
    # The same network in numpy, with heads["cls"].weight replaced by W.
    h = (x @ net.enc.weight.value.T + net.enc.bias.value) * net.scale.value
    for block in net.blocks:
        h = np.tanh(h @ block.weight.value.T + block.bias.value)
    reg = net.heads["reg"]
    expected = (h @ W.T + net.heads["cls"].bias.value).sum() + (h @ reg.weight.value.T + reg.bias.value).sum()
    got = nn.functional_call(net, {"heads.cls.weight": W}, x)
    np.testing.assert_allclose(got.value, expected, rtol=1e-12)   # (sums of products in another order)
    assert isinstance(net.heads["cls"].weight, nn.Parameter)      # restored
    net(x).backward()
    # d/d b_reg of sum(h W_reg^T + b_reg) is the number of rows.
    np.testing.assert_array_equal(net.heads["reg"].bias.grad, [4.0])


def test_a_failing_method_leaves_no_naming_or_scope_behind():
    net = _Net()
    try:
        net.classify(np.ones((4, 5)))                    # wrong width: Linear refuses it
    except ad.AutogradDagError:
        pass
    else:
        raise AssertionError("expected a ShapeError")
    assert ad.current_scope() == ()
    m = nn.MLP([3, 4, 2], rng=0)
    assert sorted(_parameter_names(m.logits(np.zeros((1, 3))))) == sorted(MLP_NAMES)


class _Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(3, 2, rng=7)

    def distill(self, x, student):
        return self.head(x) - student.classify(x[:, :2])     # a module that is not a sub-module


def test_a_module_passed_in_is_named_from_itself_and_the_callers_by_their_path():
    teacher, student = _Teacher(), _Net()
    out = teacher.distill(np.ones((4, 3)), student)
    assert sorted(_parameter_names(out)) == sorted(NET + ["head.weight", "head.bias"])


def test_trace_of_a_method_and_forward_called_directly_name_by_path():
    m, x = nn.MLP([3, 4, 2], rng=0), np.zeros((1, 3))
    program = ad.trace(lambda x: m.predict_proba(x), x)
    assert sorted(n.name for n in program.nodes if n.op is ad.NodeKind.PARAMETER) == sorted(MLP_NAMES)
    seq = nn.Sequential(nn.Linear(3, 4, rng=0), nn.ReLU(), nn.Linear(4, 2, rng=1))
    out = seq.forward(x)
    assert sorted(_parameter_names(out)) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert "<B>Linear0</B>" in ad.render(out).source


def test_parameters_drawn_as_inputs_keep_the_names_of_the_record():
    from autograd_dag.render import as_program
    lm, x = nn.MLP([3, 4, 2], rng=0), np.zeros((1, 3))
    before = lm.logits(x)
    _Wrap(lm).logits(x)                                  # renames the parameters themselves
    assert lm.layers[0].weight.name == "inner.layers.0.weight"
    program = as_program(before, parameters_as_inputs=True)
    assert sorted(program.nodes[k].name for k in program.inputs) == sorted(MLP_NAMES)
