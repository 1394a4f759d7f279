"""Grouped and depthwise Conv2d, Conv1d and ConvTranspose2d (conv_family.py) against PyTorch's:
values and gradients with respect to the input, the weights and the bias. Before: no groups,
conv1d or transposed convolution."""

import numpy as np
import pytest

import autograd_dag as ad

torch = pytest.importorskip("torch")
TF = torch.nn.functional
rng = np.random.default_rng(0)


def _compare(ours, theirs, *arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = theirs(*ts)
    w = np.random.default_rng(1).normal(size=tuple(out.shape))
    (out * torch.tensor(w)).sum().backward()
    # sums of products in another order than torch's kernels (MKL/oneDNN): ulps of the entries
    np.testing.assert_allclose(ours(*arrays).value, out.detach().numpy(), rtol=1e-12, atol=1e-12)
    grads = ad.grad(lambda *a: ad.sum(w * ours(*a)), argnums=tuple(range(len(arrays))))(*arrays)
    for g, t in zip(grads, ts):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("groups, stride, padding", [(2, (2, 1), (1, 0)), (4, 1, 1), (1, 2, 0)])
def test_grouped_conv2d_is_torchs(groups, stride, padding):
    x, w, b = rng.normal(size=(2, 4, 7, 6)), rng.normal(size=(8, 4 // groups, 3, 2)), rng.normal(size=8)
    _compare(lambda x, w, b: ad.primitives.conv_family.grouped_conv2d(x, w, stride, padding, groups, b),
             lambda x, w, b: TF.conv2d(x, w, b, stride, padding, groups=groups), x, w, b)


@pytest.mark.parametrize("groups, stride, padding", [(1, 1, 0), (4, 2, 1), (2, 3, 2)])
def test_conv1d_is_torchs(groups, stride, padding):
    x, w, b = rng.normal(size=(2, 4, 11)), rng.normal(size=(8, 4 // groups, 3)), rng.normal(size=8)
    _compare(lambda x, w, b: ad.conv1d(x, w, stride, padding, groups, b),
             lambda x, w, b: TF.conv1d(x, w, b, stride, padding, groups=groups), x, w, b)


@pytest.mark.parametrize("stride, padding, output_padding", [(1, 0, 0), (2, 1, 1), ((2, 3), (1, 0), (0, 2))])
def test_conv_transpose2d_is_torchs(stride, padding, output_padding):
    x, w, b = rng.normal(size=(2, 4, 5, 4)), rng.normal(size=(4, 3, 3, 2)), rng.normal(size=3)
    _compare(lambda x, w, b: ad.conv_transpose2d(x, w, stride, padding, output_padding, b),
             lambda x, w, b: TF.conv_transpose2d(x, w, b, stride, padding, output_padding), x, w, b)


def test_modules_with_torchs_weights_and_transformations():
    depthwise = ad.nn.Conv2d(4, 4, 3, padding=1, groups=4, rng=0)
    theirs = torch.nn.Conv2d(4, 4, 3, padding=1, groups=4, dtype=torch.float64)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(depthwise.weight.value))
        theirs.bias.copy_(torch.tensor(depthwise.bias.value))
    x = rng.normal(size=(3, 4, 6, 6))
    expected = theirs(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(depthwise(x).value, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ad.jit(lambda a: depthwise(a))(x), expected, rtol=1e-12, atol=1e-12)
    batched = ad.vmap(lambda a: depthwise(a[None])[0])(x)   # a Tensor: it depends on the parameters
    np.testing.assert_allclose(batched.value, expected, rtol=1e-12, atol=1e-12)
    up = ad.nn.ConvTranspose2d(4, 2, 2, stride=2, rng=0)
    assert up(x).shape == (3, 2, 12, 12) and up.weight.shape == (4, 2, 2, 2)
    assert ad.nn.Conv1d(4, 6, 3, rng=0)(rng.normal(size=(2, 4, 9))).shape == (2, 6, 7)


def test_bad_shapes_are_refused_naming_them():
    with pytest.raises(ad.ShapeError, match="divisible by groups=3"):
        ad.nn.Conv2d(4, 6, 3, groups=3)
    with pytest.raises(ad.ShapeError, match="output_padding smaller than the stride"):
        ad.conv_transpose2d(np.ones((1, 2, 3, 3)), np.ones((2, 2, 3, 3)), stride=1, output_padding=1)
    with pytest.raises(ad.ShapeError, match="w \\(C, O, kh, kw\\)"):
        ad.conv_transpose2d(np.ones((1, 2, 3, 3)), np.ones((3, 2, 3, 3)))
    with pytest.raises(ad.ShapeError, match="conv1d"):
        ad.conv1d(np.ones((1, 2, 3, 3)), np.ones((2, 2, 3)))


@pytest.mark.parametrize("make, shape", [
    (lambda: torch.nn.Conv1d(4, 8, 3, padding=1, groups=2), (2, 4, 9)),
    (lambda: torch.nn.Conv2d(4, 4, 3, padding=1, groups=4), (2, 4, 6, 6)),
    (lambda: torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1), (2, 4, 5, 5)),
], ids=["conv1d-groups", "depthwise", "transposed"])
def test_from_torch_replays_grouped_1d_and_transposed_convolutions(make, shape):
    torch.manual_seed(0)
    model = make().double()
    x = torch.randn(*shape, dtype=torch.float64)
    prog = ad.from_torch(model, x)                    # refused before: only 2-d, groups=1, not transposed
    params = [p.detach().numpy() for p in model.parameters()]
    np.testing.assert_allclose(prog(x.numpy(), *params), model(x).detach().numpy(), rtol=1e-12, atol=1e-12)
