"""PyTorch's other activations and losses (nn/activations.py, F.l1_loss ...): values and derivatives
against torch's own, at random points and exactly at each kink (where the derivative is a convention).
Before: none of them existed (AttributeError)."""

import numpy as np
import pytest

import autograd_dag as ad

torch = pytest.importorskip("torch")
F = ad.nn.functional
TF = torch.nn.functional

# (ours, torch's, kinks where the derivative is a convention)
ACTIVATIONS = {
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), lambda x: TF.leaky_relu(x, 0.1), [0.0]),
    "elu": (lambda x: F.elu(x, 1.5), lambda x: TF.elu(x, 1.5), [0.0]),
    "selu": (F.selu, TF.selu, [0.0]),
    "celu": (lambda x: F.celu(x, 0.7), lambda x: TF.celu(x, 0.7), [0.0]),
    "silu": (F.silu, TF.silu, []),
    "mish": (F.mish, TF.mish, []),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: TF.hardtanh(x, -0.5, 2.0), [-0.5, 2.0]),
    "relu6": (F.relu6, TF.relu6, [0.0, 6.0]),
    "hardsigmoid": (F.hardsigmoid, TF.hardsigmoid, [-3.0, 3.0]),
    "hardswish": (F.hardswish, TF.hardswish, []),   # at ±3: JAX's convention, see the test below
    "softsign": (F.softsign, TF.softsign, [0.0]),
    "logsigmoid": (F.logsigmoid, TF.logsigmoid, []),
    "tanhshrink": (F.tanhshrink, TF.tanhshrink, []),
    "softshrink": (lambda x: F.softshrink(x, 0.3), lambda x: TF.softshrink(x, 0.3), [-0.3, 0.3]),
    "hardshrink": (lambda x: F.hardshrink(x, 0.3), lambda x: TF.hardshrink(x, 0.3), [-0.3, 0.3]),
    "glu": (F.glu, TF.glu, []),
}


# torch's float64 backward kernels of these round a constant to float32 (1/α of celu, 1/6 of
# hardsigmoid): 2e-7 relative apart; ours is checked against the exact formula below.
FLOAT32_CONSTANTS = {"celu": 3e-7, "hardsigmoid": 1e-7}


def test_celu_and_hardsigmoid_derivatives_are_the_formulas():
    x = _points([])
    inside = np.abs(x) < 3
    np.testing.assert_allclose(ad.grad(lambda a: ad.sum(F.hardsigmoid(a)))(x), np.where(inside, 1 / 6, 0.0),
                               rtol=1e-15)
    np.testing.assert_allclose(ad.grad(lambda a: ad.sum(F.celu(a, 0.7)))(x),
                               np.where(x > 0, 1.0, np.exp(np.minimum(x, 0) / 0.7)), rtol=1e-14)


def _points(kinks):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(scale=3.0, size=40), kinks, [-40.0, -8.0, 8.0, 40.0]])
    return x if len(x) % 2 == 0 else np.append(x, 0.25)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_values_and_derivatives_are_torchs(name):
    ours, theirs, kinks = ACTIVATIONS[name]
    x = _points(kinks)
    t = torch.tensor(x, requires_grad=True)
    out_t = theirs(t)
    w = np.random.default_rng(1).normal(size=tuple(out_t.shape))
    (out_t * torch.tensor(w)).sum().backward()
    value = ours(ad.Tensor(x)).value
    # exp, tanh and log1p of torch's and numpy's libm: a few ulps apart
    np.testing.assert_allclose(value, out_t.detach().numpy(), rtol=1e-13, atol=1e-15)
    g = ad.grad(lambda a: ad.sum(w * ours(a)))(x)
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=FLOAT32_CONSTANTS.get(name, 1e-12), atol=1e-15)
    assert np.all(np.isfinite(g))
    assert ours(ad.Tensor(x.astype(np.float32))).dtype == np.float32


def test_hardswish_at_its_kinks_takes_the_product_rule_as_jax_does():
    jax = pytest.importorskip("jax")
    x = np.array([-3.0, 3.0])
    g = ad.grad(lambda a: ad.sum(F.hardswish(a)))(x)
    np.testing.assert_array_equal(g, [0.0, 1.0])
    np.testing.assert_array_equal(jax.vmap(jax.grad(jax.nn.hard_swish))(x), g)


def test_second_derivatives_through_where_are_finite_far_out():
    # the exponential branch not taken is computed at min(x, 0): no inf·0 in the Hessian
    x = np.array([-50.0, 800.0])
    for f in (F.elu, F.selu, F.celu):
        h = ad.hessian(lambda a: ad.sum(f(a)))(x)
        assert np.all(np.isfinite(h))


LOSSES = {
    "l1": (lambda p, y: F.l1_loss(p, y), lambda p, y: TF.l1_loss(p, y)),
    "l1 sum": (lambda p, y: F.l1_loss(p, y, "sum"), lambda p, y: TF.l1_loss(p, y, reduction="sum")),
    "huber": (lambda p, y: F.huber_loss(p, y, delta=0.7), lambda p, y: TF.huber_loss(p, y, delta=0.7)),
    "smooth_l1": (lambda p, y: F.smooth_l1_loss(p, y, beta=0.4), lambda p, y: TF.smooth_l1_loss(p, y, beta=0.4)),
    "smooth_l1 beta 0": (lambda p, y: F.smooth_l1_loss(p, y, "none", beta=0.0),
                         lambda p, y: TF.smooth_l1_loss(p, y, reduction="none", beta=0.0)),
}


@pytest.mark.parametrize("name", LOSSES)
def test_regression_losses_are_torchs_with_ties_and_branch_points(name):
    ours, theirs = LOSSES[name]
    rng = np.random.default_rng(2)
    y = rng.normal(size=(4, 5))
    p = y + rng.normal(size=(4, 5))
    p[0, :3] = y[0, :3] + np.array([0.0, 0.7, -0.4])     # a tie, |d| = δ and |d| = β
    t = torch.tensor(p, requires_grad=True)
    out = theirs(t, torch.tensor(y))
    w = np.random.default_rng(3).normal(size=tuple(out.shape))
    (out * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours(ad.Tensor(p), y).value, out.detach().numpy(), rtol=1e-13)
    g = ad.grad(lambda a: ad.sum(w * ours(a, y)))(p)
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_is_torchs_with_zero_targets(reduction, log_target):
    rng = np.random.default_rng(4)
    log_q = np.log(rng.dirichlet(np.ones(5), size=3))
    p = rng.dirichlet(np.ones(5), size=3)
    p[0, 1] = 0.0                                     # 0·log 0 = 0
    target = np.log(p + 1e-3) if log_target else p
    t = torch.tensor(log_q, requires_grad=True)
    out = TF.kl_div(t, torch.tensor(target), reduction=reduction, log_target=log_target)
    w = np.random.default_rng(5).normal(size=tuple(out.shape))
    (out * torch.tensor(w)).sum().backward()
    ours = lambda a: F.kl_div(a, target, reduction, log_target=log_target)   # noqa: E731
    np.testing.assert_allclose(ours(ad.Tensor(log_q)).value, out.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(ad.grad(lambda a: ad.sum(w * ours(a)))(log_q), t.grad.numpy(), rtol=1e-12)


def test_binary_cross_entropy_is_torchs_at_zero_and_one():
    p = np.array([0.0, 1.0, 0.3, 1e-50, 0.999])
    y = np.array([0.0, 1.0, 1.0, 0.0, 0.2])
    t = torch.tensor(p, requires_grad=True)
    TF.binary_cross_entropy(t, torch.tensor(y), reduction="sum").backward()
    np.testing.assert_allclose(F.binary_cross_entropy(ad.Tensor(p), y, "sum").value,
                               TF.binary_cross_entropy(torch.tensor(p), torch.tensor(y), reduction="sum").item(),
                               rtol=1e-13)
    g = ad.grad(lambda a: F.binary_cross_entropy(a, y, "sum"))(p)
    np.testing.assert_allclose(g[[2, 4]], t.grad.numpy()[[2, 4]], rtol=1e-10)
    # With y = 0 the loss is −log(1 − p), derivative 1/(1 − p): 1 at p = 0 and at p = 1e-50 (with y = 1,
    # −log p: −1 at p = 1). torch's backward (p − y)/max(p(1 − p), 1e-12) gives 0 and 1e-38 there.
    np.testing.assert_array_equal(g[[0, 1, 3]], [1.0, -1.0, 1.0])
    np.testing.assert_array_equal(t.grad.numpy()[:2], [0.0, 0.0])
    assert t.grad.numpy()[3] < 1e-30


def test_normalize_cosine_similarity_pairwise_distance_are_torchs():
    rng = np.random.default_rng(6)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    a[1] = 0.0                                        # a zero row: the eps clamps
    cases = [
        (lambda x: F.normalize(x), lambda x: TF.normalize(x, dim=-1)),
        (lambda x: F.normalize(x, p=1.0), lambda x: TF.normalize(x, p=1.0, dim=-1)),
        (lambda x: F.cosine_similarity(x, b), lambda x: TF.cosine_similarity(x, torch.tensor(b), dim=-1)),
        (lambda x: F.pairwise_distance(x, b), lambda x: TF.pairwise_distance(x, torch.tensor(b))),
        (lambda x: F.pairwise_distance(x, b, p=1.0), lambda x: TF.pairwise_distance(x, torch.tensor(b), p=1.0)),
    ]
    for ours, theirs in cases:
        t = torch.tensor(a, requires_grad=True)
        out = theirs(t)
        w = np.random.default_rng(7).normal(size=tuple(out.shape))
        (out * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(ours(ad.Tensor(a)).value, out.detach().numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(ad.grad(lambda x: ad.sum(w * ours(x)))(a), t.grad.numpy(), rtol=1e-10,
                                   atol=1e-13)


def test_modules_take_torchs_arguments():
    assert repr(ad.nn.LeakyReLU(0.2)) == "LeakyReLU(negative_slope=0.2)"
    assert repr(ad.nn.Hardtanh(max_val=3.0)) == "Hardtanh(min_val=-1.0, max_val=3.0)"
    x = np.linspace(-4, 4, 9)
    np.testing.assert_array_equal(ad.nn.ELU(alpha=2.0, inplace=True)(x).value, F.elu(x, 2.0).value)
    np.testing.assert_array_equal(ad.nn.GLU(axis=0)(np.ones((4, 2))).value, F.glu(np.ones((4, 2)), 0).value)
    assert ad.nn.functional.get_activation("silu") is F.silu
    with pytest.raises(ad.AutogradDagError, match="min_val < max_val"):
        ad.nn.Hardtanh(2.0, 1.0)
    with pytest.raises(TypeError, match="negative_slop"):
        ad.nn.LeakyReLU(negative_slop=0.2)
    with pytest.raises(ad.ShapeError, match="even size"):
        F.glu(np.ones(3))


def test_expm1_derivative_keeps_its_relative_accuracy_for_very_negative_x():
    # expm1' = eˣ; computed as expm1(x) + 1 (PyTorch's and JAX's rule) it rounds to 0 for x < −37.
    x = np.array([-40.0, -700.0, 1e-10, 3.0])
    np.testing.assert_allclose(ad.grad(lambda a: ad.sum(ad.expm1(a)))(x), np.exp(x), rtol=1e-15)
