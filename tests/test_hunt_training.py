"""Training as a PyTorch user does it, against torch.optim and torch.nn step by step (defect hunt 7)."""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn, optim


def _torch_mlp(model, torch):
    """A torch.nn.Sequential with ``model``'s (an nn.MLP of two layers, tanh) weights, in float64."""
    first, second = model.layers
    net = torch.nn.Sequential(torch.nn.Linear(*first.weight.shape[::-1]), torch.nn.Tanh(),
                              torch.nn.Linear(*second.weight.shape[::-1])).double()
    with torch.no_grad():
        for layer, ours in ((net[0], first), (net[2], second)):
            layer.weight.copy_(torch.tensor(ours.weight.value))
            layer.bias.copy_(torch.tensor(ours.bias.value))
    return net


def _batch():
    rng = np.random.default_rng(1)
    return rng.standard_normal((16, 3)), rng.integers(0, 2, 16)


@pytest.mark.parametrize("name, kw", [("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
                                      ("AdamW", dict(lr=0.01, weight_decay=0.1))])
def test_a_frozen_layer_is_taken_by_the_optimizer_and_left_as_pytorch_leaves_it(name, kw):
    # Fine-tuning: freeze the first layer, pass model.parameters() to the optimizer. Before, the
    # optimizer refused the frozen parameter ("not a leaf Tensor with requires_grad=True"); PyTorch
    # takes it and never moves it (it has no gradient).
    torch = pytest.importorskip("torch")
    model = nn.MLP([3, 5, 2], activation="tanh", rng=0)
    net = _torch_mlp(model, torch)
    frozen = model.layers[0].weight.value.copy()
    for p in model.layers[0].parameters():
        p.requires_grad = False
    net[0].requires_grad_(False)
    opt, topt = getattr(optim, name)(model.parameters(), **kw), getattr(torch.optim, name)(net.parameters(), **kw)
    x, y = _batch()
    for _ in range(5):
        opt.zero_grad()
        topt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        torch.nn.functional.cross_entropy(net(torch.tensor(x)), torch.tensor(y)).backward()
        opt.step()
        topt.step()
    np.testing.assert_array_equal(model.layers[0].weight.value, frozen)
    assert model.layers[0].weight.grad is None
    for ours, theirs in zip(model.parameters(), net.parameters()):
        # float64, 5 steps of the same formulas: rounding differences only (a few ulps of O(1) values)
        np.testing.assert_allclose(ours.value, theirs.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_a_constant_tensor_is_still_refused_with_its_flags_named():
    with pytest.raises(ad.AutogradDagError, match="requires_grad=False"):
        optim.SGD([ad.Tensor([1.0])], lr=0.1)
