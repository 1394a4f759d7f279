"""avg_pool2d and adaptive_avg_pool2d (and their modules) against PyTorch's: values, gradients,
padding with and without counting it, uneven adaptive bins; jit and vmap. Before: missing."""

import numpy as np
import pytest

import autograd_dag as ad

torch = pytest.importorskip("torch")
TF = torch.nn.functional
X = np.random.default_rng(0).normal(size=(2, 3, 7, 6))

AVG = [dict(window=2), dict(window=3, stride=2, padding=1), dict(window=(3, 2), stride=(1, 2), padding=(1, 0)),
       dict(window=(3, 2), stride=(1, 2), padding=(1, 1), count_include_pad=False), dict(window=(7, 6))]
ADAPTIVE = [1, (3, 2), (7, 6), (4, 4), (5, 3), (2, 5)]


def _compare(ours, theirs):
    t = torch.tensor(X, requires_grad=True)
    out = theirs(t)
    w = np.random.default_rng(1).normal(size=tuple(out.shape))
    (out * torch.tensor(w)).sum().backward()
    # sums of a few doubles in another order than torch's: ulps apart
    np.testing.assert_allclose(ours(ad.Tensor(X)).value, out.detach().numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(ad.grad(lambda a: ad.sum(w * ours(a)))(X), t.grad.numpy(), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kw", AVG, ids=str)
def test_avg_pool2d_is_torchs(kw):
    torch_kw = {"kernel_size": kw["window"], "stride": kw.get("stride"), "padding": kw.get("padding", 0),
                "count_include_pad": kw.get("count_include_pad", True)}
    _compare(lambda a: ad.avg_pool2d(a, **kw), lambda t: TF.avg_pool2d(t, **torch_kw))


@pytest.mark.parametrize("size", ADAPTIVE, ids=str)
def test_adaptive_avg_pool2d_is_torchs(size):
    _compare(lambda a: ad.adaptive_avg_pool2d(a, size), lambda t: TF.adaptive_avg_pool2d(t, size))


def test_modules_jit_and_vmap():
    pool = ad.nn.AvgPool2d(3, 2, 1)
    expected = TF.avg_pool2d(torch.tensor(X), 3, 2, 1).numpy()
    # sums of nine doubles in another order: ulps of the entries, not of a mean that cancels to 2e-4
    np.testing.assert_allclose(ad.jit(lambda a: pool(a))(X), expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(ad.vmap(lambda a: pool(a))(X), expected, rtol=1e-13, atol=1e-15)
    gap = ad.nn.AdaptiveAvgPool2d(1)
    np.testing.assert_allclose(gap(X).value, X.mean(axis=(2, 3), keepdims=True), rtol=1e-13)


def test_bad_settings_are_refused_with_the_shapes():
    with pytest.raises(ad.ShapeError, match="padding at most half"):
        ad.avg_pool2d(X, 2, padding=2)
    with pytest.raises(ad.ShapeError, match="at least the window"):
        ad.avg_pool2d(X, 8)
    with pytest.raises(ad.AutogradDagError):
        ad.nn.AdaptiveAvgPool2d(0)
