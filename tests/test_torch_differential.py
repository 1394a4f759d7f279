"""Layers, losses and schedules against PyTorch with the same weights and inputs (float64).

The modules here document PyTorch's semantics (or PyTorch's layout), so their
values and every gradient must agree with torch's to rounding. Skipped where
torch is not installed (CI); each formula also has a numpy test in test_nn.py.
"""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn, optim
from autograd_dag.nn import functional as F

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(2024)


def _backward_both(ours, theirs):
    """Backward of Σ w·out on both sides with one random w."""
    w = RNG.standard_normal(theirs.shape)
    (ours * w).sum().backward()
    (theirs * torch.tensor(w)).sum().backward()


@pytest.mark.parametrize("cin, cout, kernel, stride, padding, hw, batch", [
    (2, 3, (3, 2), (2, 1), (1, 0), (7, 6), 1), (1, 2, 3, 2, 1, (5, 5), 2), (3, 4, (1, 3), (1, 2), (0, 2), (4, 9), 3),
    (9, 2, 2, 3, 0, (8, 20), 1), (6, 5, (5, 4), (3, 2), (2, 1), (11, 17), 2),
])
def test_conv2d(cin, cout, kernel, stride, padding, hw, batch):
    conv = nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, rng=0)
    conv.bias.value[...] = RNG.standard_normal(cout)
    ref = torch.nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(conv.weight.value))
        ref.bias.copy_(torch.tensor(conv.bias.value))
    x = RNG.standard_normal((batch, cin) + hw)
    xa, xt = ad.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = conv(xa), ref(xt)
    _backward_both(out, tout)
    np.testing.assert_allclose(out.value, tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    for ours, theirs in ((xa, xt), (conv.weight, ref.weight), (conv.bias, ref.bias)):
        np.testing.assert_allclose(ours.grad.value, theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("window, stride, hw", [(2, 1, (5, 5)), (3, 2, (7, 6)), ((2, 3), (1, 2), (5, 8)),
                                                (2, 3, (7, 7))])
def test_max_pool_with_ties_and_overlapping_windows(window, stride, hw):
    x = RNG.integers(0, 3, size=(2, 3) + hw).astype(float)  # many ties: the first maximum takes the gradient
    xa, xt = ad.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = nn.MaxPool2d(window, stride)(xa), torch.nn.functional.max_pool2d(xt, window, stride)
    _backward_both(out, tout)
    np.testing.assert_array_equal(out.value, tout.detach().numpy())
    np.testing.assert_allclose(xa.grad.value, xt.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape, normalized, eps, affine", [
    ((2, 5), 5, 1e-5, True), ((2, 3, 4), (3, 4), 1e-3, True), ((1, 1, 6), (1, 6), 0.5, False),
    ((3, 2, 2, 2), (2, 2, 2), 1e-5, True),
])
def test_layer_norm(shape, normalized, eps, affine):
    ln = nn.LayerNorm(normalized, eps=eps, elementwise_affine=affine)
    ref = torch.nn.LayerNorm(normalized, eps=eps, elementwise_affine=affine, dtype=torch.float64)
    if affine:
        ln.gamma.value[...], ln.beta.value[...] = RNG.standard_normal((2,) + ln.gamma.shape)
        with torch.no_grad():
            ref.weight.copy_(torch.tensor(ln.gamma.value))
            ref.bias.copy_(torch.tensor(ln.beta.value))
    x = RNG.standard_normal(shape) * 3 + 1
    xa, xt = ad.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = ln(xa), ref(xt)
    _backward_both(out, tout)
    np.testing.assert_allclose(out.value, tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(xa.grad.value, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    if affine:
        np.testing.assert_allclose(ln.gamma.grad.value, ref.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ln.beta.grad.value, ref.bias.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_embedding_with_repeated_ids_and_padding():
    for padding_idx in (None, 2):
        emb = nn.Embedding(7, 3, padding_idx=padding_idx, rng=0)
        ref = torch.nn.Embedding(7, 3, padding_idx=padding_idx, dtype=torch.float64)
        with torch.no_grad():
            ref.weight.copy_(torch.tensor(emb.weight.value))
        ids = np.array([[1, 1, 6], [2, 2, 1]])
        out, tout = emb(ids), ref(torch.tensor(ids))
        _backward_both(out, tout)
        np.testing.assert_allclose(out.value, tout.detach().numpy(), rtol=1e-15)
        np.testing.assert_allclose(emb.weight.grad.value, ref.weight.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("batch", [1, 6])
def test_cross_entropy_and_nll_with_class_indices_and_ignore_index(reduction, batch):
    z = RNG.standard_normal((batch, 2, 4)) * 3
    y = RNG.integers(0, 4, (batch, 2))
    y[0, 1] = -100
    for ours, theirs in ((lambda z: F.cross_entropy(z, y, reduction, ignore_index=-100),
                          lambda z: torch.nn.functional.cross_entropy(z.permute(0, 2, 1), torch.tensor(y),
                                                                      reduction=reduction)),
                         (lambda z: F.nll_loss(F.log_softmax(z), y, reduction, ignore_index=-100),
                          lambda z: torch.nn.functional.nll_loss(torch.log_softmax(z, -1).permute(0, 2, 1),
                                                                 torch.tensor(y), reduction=reduction))):
        za, zt = ad.Tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
        out, tout = ours(za), theirs(zt)
        _backward_both(out, tout)
        np.testing.assert_allclose(out.value, tout.detach().numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(za.grad.value, zt.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, args", [("CosineAnnealingLR", (20, 0.01)), ("StepLR", (3, 0.5)),
                                        ("LambdaLR", (lambda s: 0.9 ** s,))])
def test_schedules_step_by_step(name, args, steps=20):
    # CosineAnnealingLR only within T_max: after it, ours stays at eta_min (documented), torch's rises again.
    opt = optim.SGD([nn.Parameter(np.zeros(1))], lr=0.5)
    topt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.5)
    sched, tsched = getattr(optim, name)(opt, *args), getattr(torch.optim.lr_scheduler, name)(topt, *args)
    rates, torch_rates = [opt.lr], [topt.param_groups[0]["lr"]]
    for _ in range(steps):
        topt.step()
        sched.step()
        tsched.step()
        rates.append(opt.lr)
        torch_rates.append(topt.param_groups[0]["lr"])
    np.testing.assert_allclose(rates, torch_rates, rtol=1e-12, atol=1e-15)
