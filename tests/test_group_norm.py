"""GroupNorm, InstanceNorm2d and group_norm against PyTorch's (values and gradients in x, γ, β), and
against the formula written here in numpy. Before: missing."""

import numpy as np
import pytest

import autograd_dag as ad

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def _formula(x, groups, gamma, beta, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    xhat = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    shape = (c,) + (1,) * (x.ndim - 2)
    return xhat * gamma.reshape(shape) + beta.reshape(shape)


@pytest.mark.parametrize("shape, groups", [((3, 4, 5, 5), 2), ((2, 6, 7), 3), ((2, 4, 3, 3), 1), ((2, 4, 3, 3), 4)])
def test_group_norm_is_the_formula_and_torchs(shape, groups):
    x, gamma, beta = rng.normal(size=shape), rng.normal(size=shape[1]), rng.normal(size=shape[1])
    ours = ad.nn.group_norm(x, groups, gamma, beta)
    # mean and variance summed in another order: ulps of the O(1) results
    np.testing.assert_allclose(ours.value, _formula(x, groups, gamma, beta), rtol=1e-12, atol=1e-12)
    ts = [torch.tensor(a, requires_grad=True) for a in (x, gamma, beta)]
    out = torch.nn.functional.group_norm(ts[0], groups, ts[1], ts[2])
    w = rng.normal(size=shape)
    (out * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours.value, out.detach().numpy(), rtol=1e-12, atol=1e-12)
    grads = ad.grad(lambda a, g, b: ad.sum(w * ad.nn.group_norm(a, groups, g, b)), argnums=(0, 1, 2))(x, gamma, beta)
    for ours_g, t in zip(grads, ts):
        np.testing.assert_allclose(ours_g, t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_modules_match_torchs_and_refuse_bad_settings():
    x = rng.normal(size=(2, 4, 5, 5))
    np.testing.assert_allclose(ad.nn.GroupNorm(2, 4)(x).value,
                               torch.nn.GroupNorm(2, 4, dtype=torch.float64)(torch.tensor(x)).detach().numpy(),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ad.nn.InstanceNorm2d(4)(x).value,
                               torch.nn.InstanceNorm2d(4)(torch.tensor(x)).detach().numpy(), rtol=1e-12, atol=1e-12)
    assert ad.nn.InstanceNorm2d(4).gamma is None and ad.nn.InstanceNorm2d(4, affine=True).gamma.shape == (4,)
    np.testing.assert_allclose(ad.jit(lambda a: ad.nn.GroupNorm(2, 4)(a))(x), ad.nn.GroupNorm(2, 4)(x).value,
                               rtol=1e-13, atol=1e-13)
    with pytest.raises(ad.ShapeError, match="divisible"):
        ad.nn.GroupNorm(3, 4)
    with pytest.raises(ad.ShapeError, match="input \\(N, 4"):
        ad.nn.GroupNorm(2, 4)(np.ones((2, 3, 4)))
    with pytest.raises(ad.ShapeError, match="track_running_stats"):
        ad.nn.InstanceNorm2d(4, track_running_stats=True)
