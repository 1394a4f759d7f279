"""float32 end to end (issue 13): a float32 model stays float32 in every primitive, gradient and optimizer state.

Each of the benchmark's four models (at small sizes) runs one training step in
float32: every recorded node whose value is floating point must be float32
(integer token and label arrays and boolean masks are not floating point), and
so must every gradient — eager and ``ad.jit(ad.value_and_grad)`` — and every
array of optimizer state after a step of SGD with momentum and of Adam.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn, optim
from autograd_dag.autodiff import topological_nodes
from autograd_dag.nn import functional as F
from autograd_dag.program import NodeKind
from autograd_dag.nn import Logits

F32 = np.dtype(np.float32)


def _mlp():
    rng = np.random.default_rng(0)
    model = nn.MLP([12, 16, 16, 5], activation="relu", rng=0, dtype=np.float32)
    return model, rng.standard_normal((8, 12)).astype(np.float32), rng.integers(0, 5, 8), F.cross_entropy


def _transformer():
    rng = np.random.default_rng(0)
    model = Logits(nn.TransformerLM(11, d_model=8, heads=2, hidden=16, layers=2, rng=0, dtype=np.float32))
    tokens = rng.integers(0, 11, (3, 6))
    return model, tokens[:, :-1], tokens[:, 1:], F.cross_entropy


def _lenet():
    rng = np.random.default_rng(0)
    d = np.float32
    model = nn.Sequential(
        nn.Conv2d(1, 2, 3, rng=1, dtype=d), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(2, 3, 3, padding=1, rng=2, dtype=d), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(3 * 2 * 2, 7, init="he", rng=3, dtype=d), nn.ReLU(),
        nn.Linear(7, 6, init="he", rng=4, dtype=d), nn.ReLU(), nn.Linear(6, 4, rng=5, dtype=d))
    return model, rng.standard_normal((4, 1, 10, 10)).astype(d), rng.integers(0, 4, 4), F.cross_entropy


def _scalar_mlp():
    """micrograd's demo in miniature: 0-d float32 weights, max-margin loss and an L2 term."""
    rng = np.random.default_rng(0)

    class Scalars(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = [nn.Parameter(np.float32(v)) for v in rng.uniform(-1, 1, 2 * 3 + 3)]
            self.b = [nn.Parameter(np.zeros((), np.float32)) for _ in range(4)]

        def forward(self, X):
            losses = []
            for row in X:
                h = [ad.relu(sum((self.w[2 * j + i] * float(row[i]) for i in range(2)), self.b[j]))
                     for j in range(3)]
                losses.append(sum((self.w[6 + j] * h[j] for j in range(3)), self.b[3]))
            return losses

    def loss(scores, y):
        margins = [ad.relu(1.0 + -float(yi) * s) for s, yi in zip(scores, y)]
        return sum(margins) * (1.0 / len(margins)) + 1e-4 * sum(p * p for p in model.parameters())

    model = Scalars()
    return model, rng.standard_normal((5, 2)), rng.choice([-1, 1], 5), loss


def _regression():
    """A float32 model against float64 targets (numpy's default): the data takes the model's precision."""
    rng = np.random.default_rng(0)
    model = nn.MLP([3, 8, 2], activation="tanh", rng=0, dtype=np.float32)
    return model, rng.standard_normal((6, 3)).astype(np.float32), rng.standard_normal((6, 2)), F.mse_loss


def _glove():
    """GloVe's loss is the model's output; its data (log X_ij, f(X_ij)) is float64 numpy."""
    model = nn.GloVe(6, 4, rng=0, dtype=np.float32)
    return model, nn.cooccurrence_counts([[0, 1, 2, 3, 4, 5, 1, 2]], 6, window=3), None, lambda j, _: j


MODELS = {"mlp": _mlp, "transformer": _transformer, "lenet": _lenet, "scalar_mlp": _scalar_mlp,
          "regression": _regression, "glove": _glove}


def _float_nodes(loss):
    return [t for t in topological_nodes([loss]) if t.value.dtype.kind in "fc"]


@pytest.mark.parametrize("name", list(MODELS))
def test_training_step_stays_float32(name):
    model, x, y, loss_fn = MODELS[name]()
    loss = loss_fn(model(x), y)
    nodes = _float_nodes(loss)
    wrong = sorted({f"{t.prim.name if t.prim else 'leaf'}:{t.value.dtype}" for t in nodes if t.value.dtype != F32})
    assert not wrong, f"{name}: nodes not float32: {wrong}"
    assert len(nodes) > 10
    loss.backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None and p.grad.dtype == F32, (pname, p.grad and p.grad.dtype)
    for opt in (optim.SGD(model.parameters(), lr=0.01, momentum=0.9), optim.Adam(model.parameters(), lr=1e-3)):
        opt.step()
        opt.step()
        for pname, p in model.named_parameters():
            assert p.value.dtype == F32, (type(opt).__name__, pname, p.value.dtype)
        for state in opt.state:
            for key, value in state.items():
                if isinstance(value, np.ndarray):
                    assert value.dtype == F32, (type(opt).__name__, key, value.dtype)


@pytest.mark.parametrize("name", ["mlp", "transformer", "lenet"])
def test_jit_gradient_program_stays_float32(name):
    model, x, y, loss_fn = MODELS[name]()
    params = {k: p.value for k, p in model.named_parameters()}

    def f(params, x, y):
        return loss_fn(nn.functional_call(model, params, x), y)
    step = ad.jit(ad.value_and_grad(f))
    loss, grads = step(params, x, y)
    assert np.asarray(loss).dtype == F32
    assert {k: np.asarray(g).dtype for k, g in grads.items()} == {k: F32 for k in params}
    # Every node of the traced gradient program computes in float32 too.
    ((program, _),) = step.programs.values()
    wrong = sorted({f"{node.op}:{node.dtype}" for node in program
                    if node.dtype is not None and np.dtype(node.dtype).kind in "fc" and np.dtype(node.dtype) != F32})
    assert not wrong, f"{name}: program nodes not float32: {wrong}"


def test_jit_gives_a_python_float_argument_the_dtype_of_the_float_arrays():
    # A learning rate passed as a Python float: the float32 step stays float32, equal to the eager one
    # (a float64 input lr made every array it touched float64).
    def step(w, x, lr):
        return w - lr * ad.grad(lambda w: ad.sum(ad.tanh(x @ w)))(w)
    w, x = np.linspace(-1, 1, 3).astype(np.float32), np.ones((2, 3), np.float32)
    fast = ad.jit(step)
    out = fast(w, x, 0.1)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.asarray(step(w, x, 0.1)))
    assert fast(w.astype(np.float64), x.astype(np.float64), 0.1).dtype == np.float64
    assert ad.jit(lambda n, a: a * n)(np.arange(3), 0.5).dtype == np.float64   # beside integers: float64
    assert ad.jit(lambda a: ad.sin(a))(0.5).dtype == np.float64                   # alone: float64


def test_a_float32_input_promoted_by_a_float64_constant_gets_a_float32_gradient():
    # numpy computes x32 · c64 in float64 (the value is float64, as numpy's); the derivative with
    # respect to x32 is still a float32 array, on every route. Its numbers: (1 − tanh²(c·x))·c.
    x = np.array([0.5, -1.0, 2.0], np.float32)
    c = np.array([0.3, 1.7, -0.4])
    expected = (1 - np.tanh(c * x) ** 2) * c

    def f(x):
        return ad.sum(ad.tanh(x * c) + np.linalg.solve(np.eye(3) * 2.0, x))     # (+ Σ x/2)

    routes = {"grad": ad.grad(f)(x), "jit": ad.jit(ad.grad(f))(x),
              "grad_program": ad.grad_program(ad.trace(f, x))(x),
              "vmap": ad.vmap(ad.grad(f))(x[None])[0]}
    for create_graph in (False, True):
        t = ad.Tensor(x, requires_grad=True)
        f(t).backward(create_graph=create_graph)
        routes[f"backward(create_graph={create_graph})"] = t.grad.value
    for route, g in routes.items():
        assert np.asarray(g).dtype == F32, route
        np.testing.assert_allclose(g, expected + 0.5, rtol=1e-6, err_msg=route)


def test_jit_float64_targets_are_cast_inside_the_program():
    """Under jit the float64 targets are an input of the program: cast there, every computed node is float32."""
    model, x, y, loss_fn = _regression()
    params = {k: p.value for k, p in model.named_parameters()}
    step = ad.jit(ad.value_and_grad(lambda params, x, y: loss_fn(nn.functional_call(model, params, x), y)))
    loss, grads = step(params, x, y)
    assert np.asarray(loss).dtype == F32
    assert {k: np.asarray(g).dtype for k, g in grads.items()} == {k: F32 for k in params}
    ((program, _),) = step.programs.values()
    wrong = sorted({f"{node.op}:{node.dtype}" for node in program if node.op is not NodeKind.INPUT
                    and node.dtype is not None and np.dtype(node.dtype).kind in "fc" and np.dtype(node.dtype) != F32})
    assert not wrong, f"program nodes not float32: {wrong}"


def test_a_float64_tensor_tangent_of_a_float32_primal_gives_float32_tangents():
    # A tangent given as an array is cast to its primal's dtype; one given as a Tensor (an outer
    # transformation's) was not, so a float32 function's tangent came back float64.
    x = np.array([0.5, -1.5], np.float32)
    out, tangent = ad.jvp(lambda a: ad.tanh(a) * 2.0, (x,), (ad.Tensor(np.array([1.0, 3.0])),))
    assert out.dtype == np.float32 and tangent.dtype == np.float32
    expected = 2.0 * (1.0 - np.tanh(x.astype(np.float64)) ** 2) * np.array([1.0, 3.0])   # by hand, float64
    np.testing.assert_allclose(tangent.value, expected, rtol=1e-6)
    # Through an outer derivative the cast is recorded: d/du of the tangent is the Jacobian's diagonal.
    g = ad.grad(lambda u: ad.sum(ad.jvp(lambda a: ad.tanh(a) * 2.0, (x,), (u,))[1]))(np.array([1.0, 3.0]))
    np.testing.assert_allclose(g, 2.0 * (1.0 - np.tanh(x.astype(np.float64)) ** 2), rtol=1e-6)
