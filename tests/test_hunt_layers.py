"""Defects found by an adversarial hunt (layers, ONNX, interop, gradient checking), each against a reference."""

import numpy as np
import pytest

import autograd_dag as ad


def test_from_torch_embedding_keeps_torchs_padding_and_frequency_gradients():
    """aten.embedding's padding_idx and scale_grad_by_freq change only the gradient: they were ignored."""
    torch = pytest.importorskip("torch")
    idx = torch.tensor([[1, 2, 1, 4], [0, 1, 2, 2]])
    w = np.random.default_rng(0).standard_normal((2, 4, 3))
    for kwargs in ({"padding_idx": 1}, {"scale_grad_by_freq": True}, {"padding_idx": 2, "scale_grad_by_freq": True}):
        torch.manual_seed(0)
        m = torch.nn.Embedding(5, 3, **kwargs).double()
        prog = ad.from_torch(m, idx)
        table = m.weight.detach().numpy().copy()
        out = m(idx)
        (out * torch.tensor(w)).sum().backward()
        # Same rows gathered and summed in the same order on both sides: rounding-level agreement.
        np.testing.assert_allclose(prog(idx.numpy(), table), out.detach().numpy(), rtol=1e-15, atol=0)
        grad = ad.grad(lambda t: ad.sum(prog(idx.numpy(), t) * w))(table)
        np.testing.assert_allclose(np.asarray(getattr(grad, "value", grad)), m.weight.grad.numpy(),
                                   rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("label, fn, dtype", [
    ("int floor division", lambda t, a: t.div(a, 2, rounding_mode="floor"), np.int64),
    ("int trunc division", lambda t, a: t.div(a, -3, rounding_mode="trunc"), np.int64),
    ("int // int", lambda t, a: a // 2, np.int64),
    ("int / int", lambda t, a: a / 2, np.float32),
    ("int + float scalar", lambda t, a: a + 1.5, np.float32),
    ("int ** float scalar", lambda t, a: a.abs() ** 0.5, np.float32),
    ("clamp of ints by a float", lambda t, a: t.clamp(a, min=0.5), np.float32),
    ("int tensor * float32 tensor", lambda t, a: a * t.ones(3), np.float32),
    ("full with a float value", lambda t, a: a + t.full((2, 3), 1.5), np.float32),
    ("where of two Python floats", lambda t, a: t.where(a > 0, 1.0, 0.0), np.float32),
])
def test_from_torch_gives_torchs_result_dtypes(label, fn, dtype):
    """numpy promotes int64 with float32 to float64 and divides integers to float64; torch does neither."""
    torch = pytest.importorskip("torch")
    x = np.array([[-7, 2, 7], [1, -5, 4]], np.int64)
    got = ad.from_torch(lambda a: fn(torch, a), torch.tensor(x))(x)
    expected = fn(torch, torch.tensor(x)).numpy()
    assert got.dtype == expected.dtype == dtype, label
    np.testing.assert_array_equal(got, expected)  # small integers and halves: exact in every dtype here



def test_from_jax_divides_integers_as_lax_does():
    """lax.div of integers rounds toward zero to integers: it replayed as numpy's true division (-3.5, float64)."""
    jax = pytest.importorskip("jax")
    x = np.array([[-7, 2, 7], [1, -5, 4]], np.int32)
    for f in (lambda a: jax.lax.div(a, 2), lambda a: a // -3, lambda a: a % 3):
        expected = np.asarray(f(x))
        got = ad.from_jax(f, x)(x)
        assert got.dtype == expected.dtype == np.int32
        np.testing.assert_array_equal(got, expected)  # integers: exact


def test_a_disagreement_within_the_differences_rounding_is_not_called_a_kink():
    """f = sum(x) + 1e8 is smooth: its differences at h = 1e-6 carry rounding ~ 1e-16·1e8/1e-6, which the
    report blamed on a kink ("f is not differentiable here"); it now names the rounding. A real kink still is one."""
    x = np.random.default_rng(0).standard_normal((3, 4))
    with pytest.raises(ad.GradientCheckError) as caught:
        ad.check_grads(lambda x: ad.sum(x) + 1e8, (x,), modes=("rev",))
    assert "within the rounding of the finite differences" in str(caught.value)
    assert "on a kink" not in str(caught.value)
    with pytest.raises(ad.GradientCheckError) as caught:
        ad.check_grads(lambda x: ad.relu(x), (np.array([0.0, 1.0]),), modes=("rev",))
    assert "on a kink" in str(caught.value) and "rounding" not in str(caught.value)


def test_an_exported_where_of_booleans_runs_on_onnx_runtime():
    """ONNX Runtime has no boolean Where kernel: clip's gradient program (a where of booleans) did not run."""
    pytest.importorskip("onnxruntime")
    from autograd_dag.onnx import run
    c, a, b = np.array([True, False, False, True]), np.array([True, True, False, False]), np.array([False, True, True, False])
    prog = ad.trace(lambda c, a, b: ad.where(c, a, b), c, a, b)
    got = run(ad.onnx.export(prog), c, a, b)[0]
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, np.where(c, a, b))
    x = np.array([-1.0, 2.0, 0.0, 3.5, -4.0])  # on both bounds, inside, outside
    grad = ad.trace(lambda x: ad.grad(lambda z: ad.sum(ad.clip(z, -1.0, 2.0)))(x), x)
    np.testing.assert_array_equal(run(ad.onnx.export(grad), x)[0], grad(x))  # 0/1 entries: exact


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exported_arctan2_at_signed_zeros_is_numpys(dtype):
    """arctan2(±0, −0) is ±π (numpy, C99); the export gave 0 (it read the sign of y only)."""
    pytest.importorskip("onnxruntime")
    from autograd_dag.onnx import run
    y = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 0.0, -0.0], dtype)
    x = np.array([-0.0, -0.0, 0.0, 0.0, -0.0, -0.0, -1.0, -1.0], dtype)
    prog = ad.trace(lambda y, x: ad.arctan2(y, x), y, x)
    got = run(ad.onnx.export(prog), y, x)[0]
    # The exact values ±π, ±π/2, 0 in the dtype: equality (ONNX Runtime's Where returns +0 for a selected −0,
    # so the sign of a zero result is not compared).
    np.testing.assert_array_equal(got, np.arctan2(y, x))


def test_check_module_leaves_a_training_batch_norms_running_statistics_as_they_were():
    """Each of check_module's ~90 evaluations updated the running statistics (num_batches_tracked 0 -> 45)."""
    from autograd_dag import nn
    model = nn.Sequential(nn.Linear(4, 3, rng=0), nn.BatchNorm(3), nn.Tanh())
    x = np.random.default_rng(1).standard_normal((6, 4))
    before = {name: np.array(b, copy=True) for name, b in model.named_buffers()}
    arrays = [b for _, b in model.named_buffers()]
    assert nn.check_module(model, x).ok
    for name, b in model.named_buffers():
        np.testing.assert_array_equal(b, before[name], err_msg=name)  # restored copies: exact
    assert all(a is b for a, (_, b) in zip(arrays, model.named_buffers()))  # the same arrays (jit reads them)
    model(x)  # and the next training step updates them once, as without the check
    assert int(model[1].num_batches_tracked) == 1


def test_from_torch_tied_weights_are_one_input_with_torchs_summed_gradient():
    """torch.export gives each name of a tied weight a placeholder: the program took it twice (3 parameters
    where named_parameters() has 2), and each input's gradient was one use's share of torch's."""
    torch = pytest.importorskip("torch")

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.out = torch.nn.Embedding(6, 4), torch.nn.Linear(4, 6, bias=False)
            self.out.weight = self.emb.weight

        def forward(self, idx):
            return self.out(torch.tanh(self.emb(idx))).sum(-1)

    torch.manual_seed(0)
    model, idx = Tied().double(), torch.tensor([[1, 2, 2, 5]])
    prog = ad.from_torch(model, idx)
    assert [prog.nodes[k].name for k in prog.inputs] == ["idx", "emb.weight"]
    table = model.emb.weight.detach().numpy().copy()
    w = np.random.default_rng(0).standard_normal((1, 4))
    (model(idx) * torch.tensor(w)).sum().backward()
    grad = ad.grad(lambda t: ad.sum(prog(idx.numpy(), t) * w))(table)
    # Two uses summed in float64 on both sides, in possibly different orders: rounding level.
    np.testing.assert_allclose(np.asarray(getattr(grad, "value", grad)), model.emb.weight.grad.numpy(),
                               rtol=1e-12, atol=1e-14)


def test_layers_nested_two_containers_deep_are_refused_not_silently_dropped():
    """A list of lists of layers was searched one level deep: its parameters were missing from parameters()
    (never trained, never saved) and eval() left its Dropout training; now that is an error naming the place."""
    from autograd_dag import nn

    class Grid(nn.Module):
        def __init__(self):
            super().__init__()
            self.sizes = [[1, 2], (3, 4)]          # plain nested data stays allowed
            self.grid = [[nn.Linear(2, 2, rng=0), nn.Dropout(0.5)]]

        def forward(self, x):
            return self.grid[0][1](self.grid[0][0](x))

    with pytest.raises(ad.AutogradDagError, match=r"Grid\.grid\[0\] is a list holding modules.*ModuleList"):
        Grid().parameters()

    class Flat(nn.Module):
        def __init__(self):
            super().__init__()
            self.sizes = [[1, 2], (3, 4)]
            self.grid = nn.ModuleList([nn.ModuleList([nn.Linear(2, 2, rng=0), nn.Dropout(0.5)])])

    flat = Flat()
    assert [n for n, _ in flat.named_parameters()] == ["grid.0.0.weight", "grid.0.0.bias"]
    assert flat.eval().grid[0][1].training is False
