"""The layer library: each module against an independent numpy computation of the seed's formula,
gradient checks with respect to inputs and parameters, batch norm's modes, residual identity,
module bookkeeping, state dicts and .npz files."""

import os

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn
from autograd_dag.nn import functional as F
from autograd_dag.jitting import retrace_jit

RNG = np.random.default_rng(1234)


def rand(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


def check_module(module, x, **kw):
    """ad.check_grads of module(x) with respect to x and every parameter (float64)."""
    names = [n for n, _ in module.named_parameters()]
    values = [p.value for _, p in module.named_parameters()]

    def f(x, *params):
        return nn.functional_call(module, dict(zip(names, params)), x)
    f.__name__ = type(module).__name__
    ad.check_grads(f, (x, *values), **kw)


# ----------------------------------------------------------- numpy references

def np_softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_lse(z, axis=-1, gamma=1.0):
    m = (z / gamma).max(axis=axis, keepdims=True)
    return gamma * (np.log(np.exp(z / gamma - m).sum(axis=axis)) + m.squeeze(axis))


def np_conv2d(x, w, b, padding):
    """Direct loops over output pixels: the seed's Conv2d(X; W, b), independent of the library's stride tricks."""
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, c, h, wd = xp.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1))
    for a in range(h - kh + 1):
        for bb in range(wd - kw + 1):
            out[:, :, a, bb] = np.einsum("ncij,ocij->no", xp[:, :, a:a + kh, bb:bb + kw], w)
    return out + b[None, :, None, None]


def np_maxpool(x, k):
    n, c, h, w = x.shape
    return x[:, :, :h // k * k, :w // k * k].reshape(n, c, h // k, k, w // k, k).max(axis=(3, 5))

# ------------------------------------------------------------------ Linear, MLP


def test_linear_matches_affine_formula_and_gradients():
    lin = nn.Linear(4, 3, rng=0)
    x = rand(5, 4)
    W, b = lin.weight.value, lin.bias.value
    np.testing.assert_allclose(lin(x).value, x @ W.T + b, rtol=1e-12)
    assert lin.weight.shape == (3, 4) and lin.bias.shape == (3,)
    check_module(lin, x)
    check_module(nn.Linear(4, 2, bias=False, rng=1), rand(3, 4))


def test_linear_rejects_wrong_width():
    with pytest.raises(ad.ShapeError, match=r"Linear\(4, 3\).*\(\.\.\., 4\).*\(5, 2\)"):
        nn.Linear(4, 3, rng=0)(np.ones((5, 2)))


def test_mlp_is_the_chain_of_affine_layers_and_activations():
    mlp = nn.MLP([3, 5, 4, 2], activation="tanh", output_activation="softargmax", rng=0)
    x = rand(6, 3)
    s = x
    Ws = [(layer.weight.value, layer.bias.value) for layer in mlp.layers]
    for W, b in Ws[:-1]:
        s = np.tanh(s @ W.T + b)
    logits = s @ Ws[-1][0].T + Ws[-1][1]
    np.testing.assert_allclose(mlp.logits(x).value, logits, rtol=1e-12)
    np.testing.assert_allclose(mlp(x).value, np_softmax(logits), rtol=1e-12)  # the output_activation asked for
    np.testing.assert_allclose(mlp.predict_proba(x).value, np_softmax(logits), rtol=1e-12)
    plain = nn.MLP([3, 5, 4, 2], activation="tanh", rng=0)  # by default: logits, like every model
    np.testing.assert_allclose(plain(x).value, logits, rtol=1e-12)
    np.testing.assert_array_equal(plain.predict(x), np.argmax(logits, axis=-1))
    check_module(mlp, x)


def test_mlp_relu_gradients_and_parameter_count():
    mlp = nn.MLP([2, 6, 3], rng=3)
    assert mlp.num_parameters() == 2 * 6 + 6 + 6 * 3 + 3
    assert [n for n, _ in mlp.named_parameters()] == ["layers.0.weight", "layers.0.bias",
                                                      "layers.1.weight", "layers.1.bias"]
    check_module(mlp, rand(4, 2))


def test_logistic_regression_is_softargmax_of_affine():
    model = nn.LogisticRegression(3, 4, rng=0)
    x = rand(5, 3)
    W, b = model.linear.weight.value, model.linear.bias.value
    np.testing.assert_allclose(model(x).value, x @ W.T + b, rtol=1e-12)  # logits, like every model
    np.testing.assert_allclose(model.predict_proba(x).value, np_softmax(x @ W.T + b), rtol=1e-12)
    np.testing.assert_allclose(model.predict_proba(x).value.sum(-1), 1.0)
    check_module(model, x)

# ------------------------------------------------------------------ activations


@pytest.mark.parametrize("name, module, ref", [
    ("relu", nn.ReLU, lambda u: np.maximum(u, 0)),
    ("softplus", nn.Softplus, lambda u: np.log1p(np.exp(u))),
    ("step", nn.Step, lambda u: (u >= 0).astype(float)),
    ("logistic", nn.Logistic, lambda u: 1 / (1 + np.exp(-u))),
    ("tanh", nn.Tanh, np.tanh),
])
def test_scalar_activations_match_formulas(name, module, ref):
    u = np.array([-3.0, -0.5, 0.0, 0.7, 2.5])
    np.testing.assert_allclose(getattr(F, name)(ad.Tensor(u)).value, ref(u), rtol=1e-12)
    np.testing.assert_allclose(module()(u).value, ref(u), rtol=1e-12)
    x = np.array([-2.0, -0.3, 0.4, 1.1])  # away from the kinks of relu and step
    ad.check_grads(lambda x: module()(x), (x,))


def test_sigmoid_and_softmax_are_aliases():
    assert nn.Sigmoid is nn.Logistic and nn.Softmax is nn.Softargmax
    assert F.sigmoid is F.logistic and F.softmax is F.softargmax


def test_softargmax_argmax_and_temperature():
    u = rand(3, 5)
    np.testing.assert_allclose(F.softargmax(ad.Tensor(u)).value, np_softmax(u), rtol=1e-12)
    np.testing.assert_allclose(nn.Softargmax(gamma=0.5)(u).value, np_softmax(u / 0.5), rtol=1e-12)
    np.testing.assert_allclose(F.softargmax(ad.Tensor(u), axis=0).value, np_softmax(u, axis=0), rtol=1e-12)
    onehot = np.eye(5)[u.argmax(-1)]
    np.testing.assert_array_equal(F.argmax(ad.Tensor(u)).value, onehot)
    np.testing.assert_array_equal(nn.Argmax()(u).value, onehot)
    np.testing.assert_array_equal(F.softargmax(ad.Tensor(u), gamma=0).value, onehot)
    # [softargmax((u, 0))]_1 = logistic(u) (§4.4.4)
    np.testing.assert_allclose(F.softargmax(ad.Tensor([0.8, 0.0])).value[0], 1 / (1 + np.exp(-0.8)))
    ad.check_grads(lambda x: nn.Softargmax(gamma=0.7)(x), (u,))


def test_max_and_logsumexp_with_temperature():
    u = rand(4, 6)
    np.testing.assert_allclose(F.max(ad.Tensor(u)).value, u.max(-1))
    np.testing.assert_allclose(nn.Max()(u).value, u.max(-1))
    for gamma in (0.1, 1.0, 3.0):
        soft = F.max(ad.Tensor(u), gamma=gamma).value
        np.testing.assert_allclose(soft, np_lse(u, gamma=gamma), rtol=1e-12)
        np.testing.assert_allclose(nn.LogSumExp(gamma=gamma)(u).value, np_lse(u, gamma=gamma), rtol=1e-12)
        # max(u) <= lse_γ(u) <= max(u) + γ log M (§4.4.2)
        assert np.all(u.max(-1) <= soft + 1e-12) and np.all(soft <= u.max(-1) + gamma * np.log(6) + 1e-12)
    # lse((u, 0)) = softplus(u)
    np.testing.assert_allclose(F.logsumexp(ad.Tensor([1.3, 0.0])).value, np.log1p(np.exp(1.3)))
    np.testing.assert_allclose(F.log_softargmax(ad.Tensor(u)).value, np.log(np_softmax(u)), rtol=1e-10)
    ad.check_grads(lambda x: F.logsumexp(x, gamma=0.5), (u,))
    ad.check_grads(lambda x: F.log_softargmax(x, gamma=2.0), (u,))


def test_activation_by_name_and_unknown_name():
    assert F.get_activation("ReLU") is F.relu and F.get_activation(None) is F.identity
    with pytest.raises(ad.AutogradDagError, match="unknown activation 'swishy'"):
        nn.MLP([2, 2], activation="swishy")

# ----------------------------------------------------------------------- losses


def test_mse_loss():
    p, t = rand(4, 3), rand(4, 3)
    np.testing.assert_allclose(F.mse_loss(ad.Tensor(p), t).value, np.mean((p - t) ** 2))
    np.testing.assert_allclose(F.mse_loss(ad.Tensor(p), t, reduction="sum").value, np.sum((p - t) ** 2))
    assert F.mse_loss(ad.Tensor(p), t, reduction="none").shape == (4, 3)
    ad.check_grads(lambda p, t: F.mse_loss(p, t), (p, t))
    with pytest.raises(ad.ShapeError, match="mse_loss"):
        F.mse_loss(ad.Tensor(p), np.ones((2, 5)))


def test_cross_entropy_and_nll_match_log_softmax():
    z, y = rand(5, 4), np.array([0, 3, 1, 1, 2])
    ref = -np.log(np_softmax(z))[np.arange(5), y]
    np.testing.assert_allclose(F.cross_entropy(ad.Tensor(z), y).value, ref.mean(), rtol=1e-12)
    np.testing.assert_allclose(F.cross_entropy(ad.Tensor(z), y, reduction="none").value, ref, rtol=1e-12)
    np.testing.assert_allclose(F.nll_loss(F.log_softargmax(ad.Tensor(z)), y).value, ref.mean(), rtol=1e-12)
    probs = np_softmax(rand(5, 4))
    np.testing.assert_allclose(F.cross_entropy(ad.Tensor(z), probs).value,
                               -(probs * np.log(np_softmax(z))).sum(-1).mean(), rtol=1e-12)
    ad.check_grads(lambda z: F.cross_entropy(z, y), (z,))
    ad.check_grads(lambda z, p: F.cross_entropy(z, p), (z, probs))
    ad.check_grads(lambda z: F.nll_loss(z, y, reduction="sum"), (z,))


def test_cross_entropy_and_nll_ignore_index():
    # As PyTorch's: ignored positions add nothing, send no gradient, and "mean" is over the others.
    z, y = rand(6, 4), np.array([0, -100, 3, 1, -100, 2])
    keep = y != -100
    ref = np.where(keep, -np.log(np_softmax(z))[np.arange(6), np.where(keep, y, 0)], 0.0)
    for loss in (lambda z, y, **kw: F.cross_entropy(z, y, **kw),
                 lambda z, y, **kw: F.nll_loss(F.log_softargmax(z), y, **kw)):
        np.testing.assert_allclose(loss(ad.Tensor(z), y, ignore_index=-100).value, ref.sum() / 4, rtol=1e-12)
        np.testing.assert_allclose(loss(ad.Tensor(z), y, ignore_index=-100, reduction="sum").value, ref.sum(),
                                   rtol=1e-12)
        np.testing.assert_allclose(loss(ad.Tensor(z), y, ignore_index=-100, reduction="none").value, ref,
                                   rtol=1e-12)
        g = ad.grad(lambda z: loss(z, y, ignore_index=-100))(z)
        np.testing.assert_array_equal(g[~keep], 0.0)
        ad.check_grads(lambda z: loss(z, y, ignore_index=-100), (z,))
        # Every position ignored: 0/0, as PyTorch gives.
        with np.errstate(invalid="ignore"):
            assert np.isnan(loss(ad.Tensor(z), np.full(6, -100), ignore_index=-100).value)
    # An infinite logit at an ignored position does not leak a NaN into the loss or the gradient.
    z_inf = z.copy()
    z_inf[1] = [-np.inf, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(F.cross_entropy(ad.Tensor(z_inf), y, ignore_index=-100).value, ref.sum() / 4,
                               rtol=1e-12)
    # Under jit the ignored positions follow each call's targets.
    step = ad.jit(ad.value_and_grad(lambda z, y: F.cross_entropy(z, y, ignore_index=-100)))
    step(z, y)
    y2 = np.array([-100, 2, 3, 1, 0, -100])
    np.testing.assert_allclose(step(z, y2)[0], F.cross_entropy(ad.Tensor(z), y2, ignore_index=-100).value,
                               rtol=1e-12)
    # Without ignore_index a negative label is an error that names the fix.
    with pytest.raises(ad.ShapeError, match=r"index -100 is out of range .* pass ignore_index=-100"):
        F.cross_entropy(ad.Tensor(z), y)
    with pytest.raises(ad.AutogradDagError, match="ignore_index applies to integer class indices"):
        F.cross_entropy(ad.Tensor(z), np_softmax(z), ignore_index=-100)


def test_cross_entropy_is_stable_at_huge_logits():
    z = ad.Tensor(np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 0.0]]), requires_grad=True)
    loss = F.cross_entropy(z, np.array([0, 0]), reduction="none")
    np.testing.assert_array_equal(loss.value, [0.0, 2e4])
    loss.sum().backward()
    np.testing.assert_allclose(z.grad.value, [[0, 0, 0], [-1, 1, 0]], atol=1e-300)
    assert np.all(np.isfinite(z.grad.value))


def test_cross_entropy_target_errors():
    with pytest.raises(ad.ShapeError, match=r"class indices of shape \(5,\).*\(4,\)"):
        F.cross_entropy(ad.Tensor(rand(5, 3)), np.zeros(4, dtype=int))
    with pytest.raises(ad.ShapeError, match="class probabilities of shape"):
        F.cross_entropy(ad.Tensor(rand(5, 3)), np.zeros((5, 2)))
    with pytest.raises(ad.AutogradDagError, match="reduction"):
        F.cross_entropy(ad.Tensor(rand(2, 3)), np.array([0, 1]), reduction="avg")


def test_binary_cross_entropy_with_logits():
    z, y = rand(6), (rand(6) > 0).astype(float)
    s = 1 / (1 + np.exp(-z))
    ref = -(y * np.log(s) + (1 - y) * np.log(1 - s))
    np.testing.assert_allclose(F.binary_cross_entropy_with_logits(ad.Tensor(z), y).value, ref.mean(),
                               rtol=1e-12)
    big = F.binary_cross_entropy_with_logits(ad.Tensor([1e4, -1e4, 1e4]), np.array([0.0, 1.0, 1.0]),
                                             reduction="none")
    np.testing.assert_array_equal(big.value, [1e4, 1e4, 0.0])
    ad.check_grads(lambda z: F.binary_cross_entropy_with_logits(z, y), (z,))

# ---------------------------------------------------------------- normalization


def np_batchnorm(x, gamma, beta, eps, axes):
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    shape = [1] * x.ndim
    shape[1] = -1
    return (x - mu) / np.sqrt(var + eps) * gamma.reshape(shape) + beta.reshape(shape)


@pytest.mark.parametrize("shape, axes", [((8, 3), (0,)), ((4, 3, 5, 2), (0, 2, 3))])
def test_batchnorm_train_uses_batch_statistics(shape, axes):
    bn = nn.BatchNorm(3)
    bn.gamma.value[:] = [1.5, -0.5, 2.0]
    bn.beta.value[:] = [0.1, 0.2, -0.3]
    x = rand(*shape, scale=3.0) + 2.0
    np.testing.assert_allclose(bn(x).value, np_batchnorm(x, bn.gamma.value, bn.beta.value, 1e-5, axes),
                               rtol=1e-10, atol=1e-12)
    check_module(bn, x)


def test_batchnorm_running_statistics_and_eval_mode():
    bn = nn.BatchNorm(2, momentum=0.25)
    x1, x2 = rand(6, 2) + 1.0, rand(6, 2) * 2.0 - 1.0
    bn(x1)
    bn(x2)
    mean, var = np.zeros(2), np.ones(2)
    for x in (x1, x2):
        mean = 0.75 * mean + 0.25 * x.mean(0)
        var = 0.75 * var + 0.25 * x.var(0, ddof=1)  # unbiased, as PyTorch keeps it
    np.testing.assert_allclose(bn.running_mean, mean, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var, var, rtol=1e-12)
    assert int(bn.num_batches_tracked) == 2
    bn.eval()
    assert not bn.training
    single = rand(1, 2)
    np.testing.assert_allclose(bn(single).value, (single - mean) / np.sqrt(var + 1e-5), rtol=1e-12)
    before = bn.running_mean.copy()
    bn(rand(6, 2))
    np.testing.assert_array_equal(bn.running_mean, before)  # eval() never updates the statistics
    check_module(bn, rand(3, 2))
    bn.train()
    with pytest.raises(ad.ShapeError, match="more than one value per feature"):
        bn(single)


def test_batchnorm_rejects_wrong_channels():
    with pytest.raises(ad.ShapeError, match=r"BatchNorm\(3\).*\(4, 5\)"):
        nn.BatchNorm(3)(np.ones((4, 5)))


@pytest.mark.parametrize("shape, normalized", [((4, 6), 6), ((2, 3, 4), (3, 4))])
def test_layernorm_over_trailing_axes(shape, normalized):
    ln = nn.LayerNorm(normalized)
    ln.gamma.value[...] = rand(*ln.gamma.shape)
    ln.beta.value[...] = rand(*ln.beta.shape)
    x = rand(*shape, scale=2.0) + 1.0
    axes = tuple(range(x.ndim - ln.gamma.ndim, x.ndim))
    ref = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5) * ln.gamma.value \
        + ln.beta.value
    np.testing.assert_allclose(ln(x).value, ref, rtol=1e-10, atol=1e-12)
    ln.eval()
    np.testing.assert_allclose(ln(x).value, ref, rtol=1e-10, atol=1e-12)  # no train/eval difference
    check_module(ln, x)
    with pytest.raises(ad.ShapeError, match="LayerNorm"):
        ln(np.ones((2, 7)))

# --------------------------------------------------------------------- residual


def test_residual_adds_skip_connection_and_optional_activation():
    h = nn.Linear(3, 3, rng=0)
    x = rand(4, 3)
    W, b = h.weight.value, h.bias.value
    np.testing.assert_allclose(nn.Residual(h)(x).value, x + x @ W.T + b, rtol=1e-12)
    np.testing.assert_allclose(nn.Residual(h, activation="relu")(x).value, np.maximum(x + x @ W.T + b, 0),
                               rtol=1e-12)
    check_module(nn.Residual(h, activation="tanh"), x)
    with pytest.raises(ad.ShapeError, match="keep the input's shape"):
        nn.Residual(nn.Linear(3, 2, rng=0))(x)


def test_book_residual_block_formula_and_gradients():
    block = nn.ResidualBlock(3, hidden=5, activation="tanh", rng=0)
    x = rand(4, 3)
    W, b = block.h.inner.weight.value, block.h.inner.bias.value
    C, d = block.h.outer.weight.value, block.h.outer.bias.value
    d[:] = rand(3)
    np.testing.assert_allclose(block(x).value, x + np.tanh(x @ W.T + b) @ C.T + d, rtol=1e-12)
    assert C.shape == (3, 5) and W.shape == (5, 3)
    check_module(block, x)


def test_residual_block_with_zero_C_and_d_is_the_identity():
    block = nn.ResidualBlock(4, hidden=7, rng=0)
    block.h.outer.weight.value[...] = 0.0
    block.h.outer.bias.value[...] = 0.0
    x = rand(5, 4) * 10
    np.testing.assert_array_equal(block(x).value, x)
    np.testing.assert_array_equal(nn.ResidualBlock(4, zero_init=True, rng=1)(x).value, x)
    # with the extra activation a(s + h(s)) = a(s): the identity where relu is
    np.testing.assert_array_equal(nn.ResidualBlock(4, outer_activation="relu", zero_init=True, rng=1)(x).value,
                                  np.maximum(x, 0))

# ----------------------------------------------------------------- convolution


def test_conv2d_matches_direct_loops_and_gradients():
    conv = nn.Conv2d(2, 3, 3, padding=1, rng=0)
    conv.bias.value[:] = rand(3)
    x = rand(2, 2, 5, 4)
    np.testing.assert_allclose(conv(x).value, np_conv2d(x, conv.weight.value, conv.bias.value, 1), rtol=1e-10)
    assert conv.output_size((5, 4)) == (5, 4)
    check_module(conv, x)


def test_maxpool_and_flatten():
    x = rand(2, 3, 4, 6)
    np.testing.assert_array_equal(nn.MaxPool2d(2)(x).value, np_maxpool(x, 2))
    np.testing.assert_array_equal(nn.Flatten()(x).value, x.reshape(2, -1))
    ad.check_grads(lambda x: nn.MaxPool2d(2)(x), (x,))


def test_lenet_is_seed_000_formula():
    net = nn.LeNet(in_channels=1, image_size=8, num_classes=4, channels=(2, 3), kernel_sizes=(3, 3),
                   paddings=(1, 1), hidden=5, rng=0)
    for p in net.parameters():
        if p.ndim == 1:
            p.value[:] = rand(*p.shape) * 0.1
    x = rand(2, 1, 8, 8)
    c1, c2, f3, f4 = net.conv1, net.conv2, net.fc3, net.fc4
    t1 = np.maximum(np_conv2d(x, c1.weight.value, c1.bias.value, 1), 0)
    x1 = np_maxpool(t1, 2)
    t2 = np.maximum(np_conv2d(x1, c2.weight.value, c2.bias.value, 1), 0)
    x2 = np_maxpool(t2, 2).reshape(2, -1)
    x3 = np.maximum(x2 @ f3.weight.value.T + f3.bias.value, 0)
    logits = x3 @ f4.weight.value.T + f4.bias.value
    np.testing.assert_allclose(net(x).value, logits, rtol=1e-10)
    np.testing.assert_allclose(net.logits(x).value, logits, rtol=1e-10)
    np.testing.assert_allclose(net.predict_proba(x).value, np_softmax(logits), rtol=1e-10)
    assert net.features == 3 * 2 * 2
    check_module(net, x)


def test_lenet_default_is_classic_28x28_and_checks_input():
    net = nn.LeNet(rng=0)
    assert net.features == 16 * 4 * 4 and net.fc3.out_features == 120  # no padding, as in seed 000
    assert net.conv1.padding == (0, 0) and net.conv2.padding == (0, 0)
    assert nn.LeNet(paddings=(2, 0), rng=0).features == 16 * 5 * 5  # padding stays an option
    assert net(np.zeros((1, 1, 28, 28))).shape == (1, 10)
    with pytest.raises(ad.ShapeError, match=r"LeNet: Expect: images \(B, 1, 28, 28\)"):
        net(np.zeros((1, 1, 8, 8)))
    with pytest.raises(ad.ShapeError, match="image size"):
        nn.LeNet(image_size=4)

# ------------------------------------------------------------- module machinery


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.array(2.0))
        self.blocks = [nn.Linear(2, 2, rng=0), nn.Linear(2, 2, rng=1)]
        self.head = nn.Sequential(nn.Linear(2, 3, rng=2), nn.ReLU())
        self.norm = nn.BatchNorm(3)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.norm(self.head(x * self.scale))


def test_parameters_found_by_attribute_and_in_lists():
    m = Tiny()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias",
                     "head.0.weight", "head.0.bias", "norm.gamma", "norm.beta"]
    assert m.num_parameters() == 1 + (4 + 2) * 2 + (6 + 3) + (3 + 3)
    assert all(p.requires_grad for p in m.parameters())
    shared = nn.Sequential(m.blocks[0], m.blocks[0])
    assert len(shared.parameters()) == 2  # a shared layer counts once


def test_repr_is_a_tree():
    text = repr(Tiny())
    assert "(blocks.0): Linear(2, 2, bias=True)" in text
    assert "(head): Sequential(" in text and "    (0): Linear(2, 3, bias=True)" in text
    assert "(norm): BatchNorm(3" in text


def test_train_eval_and_zero_grad_reach_every_module():
    m = Tiny()
    m.eval()
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    F.mse_loss(m(rand(4, 2)), np.zeros((4, 3))).backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_calls_record_name_scopes_per_layer():
    m = Tiny()
    program = ad.trace(lambda x: m(x), rand(4, 2))
    scopes = {node.scope for node in program if not isinstance(node.op, ad.NodeKind)}
    assert ("blocks.0",) in scopes and ("blocks.1",) in scopes and ("norm",) in scopes
    assert ("head", "Linear0") in scopes and ("head", "ReLU1") in scopes
    named = {node.name for node in program if node.op is ad.NodeKind.PARAMETER}
    assert {"blocks.0.weight", "norm.gamma", "scale"} <= named


def test_module_without_super_init_is_explained():
    class Broken(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(np.ones(2))
    with pytest.raises(ad.AutogradDagError, match=r"super\(\).__init__\(\)"):
        Broken()


def test_functional_call_substitutes_and_restores():
    lin = nn.Linear(2, 1, rng=0)
    W = lin.weight
    out = nn.functional_call(lin, {"weight": np.zeros((1, 2)), "bias": np.ones(1)}, np.ones((3, 2)))
    np.testing.assert_array_equal(out.value, np.ones((3, 1)))
    assert lin.weight is W
    with pytest.raises(ad.AutogradDagError, match="no parameter.*'wieght'"):
        nn.functional_call(lin, {"wieght": np.zeros((1, 2))}, np.ones((3, 2)))


class TiedOutput(nn.Module):
    """An output layer sharing the embedding table: one Parameter held at two attributes."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 3, rng=0)
        self.out = nn.Linear(3, 5, bias=False, rng=1)
        self.out.weight = self.emb.weight

    def forward(self, ids):
        return self.out(self.emb(ids))


def test_functional_call_replaces_a_tied_parameter_everywhere():
    m = TiedOutput()
    ids = np.array([1, 2, 3, 1])
    assert [n for n, _ in m.named_parameters()] == ["emb.weight"]
    W = rand(5, 3)
    # numpy reference: f(W) = Σ_k <W[ids_k], s> with s = Σ_r W[r]; row ids_k gets s, every row Σ_k W[ids_k].
    expected_value = (W[ids] @ W.T).sum()
    expected_grad = np.zeros_like(W)
    np.add.at(expected_grad, ids, W.sum(axis=0))
    expected_grad += W[ids].sum(axis=0)
    for name in ("emb.weight", "out.weight"):  # either name of the tied parameter
        f = lambda W: nn.functional_call(m, {name: W}, ids).sum()
        np.testing.assert_allclose(f(W).value, expected_value, rtol=1e-12)
        np.testing.assert_allclose(ad.grad(f)(W), expected_grad, rtol=1e-12)
    assert m.out.weight is m.emb.weight  # restored, still tied
    with pytest.raises(ad.AutogradDagError, match="one tied parameter"):
        nn.functional_call(m, {"emb.weight": W, "out.weight": W + 1}, ids)

# ---------------------------------------------------------------------- init


def test_glorot_and_he_statistics_and_seeding():
    w = nn.init.glorot_uniform((200, 300), rng=0)
    bound = np.sqrt(6 / 500)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    np.testing.assert_allclose(w.var(), 2 / 500, rtol=0.05)
    h = nn.init.he_normal((300, 200), rng=np.random.default_rng(1))
    np.testing.assert_allclose(h.std(), np.sqrt(2 / 200), rtol=0.05)
    np.testing.assert_allclose(nn.init.glorot_normal((400, 100), rng=2).std(), np.sqrt(2 / 500), rtol=0.05)
    assert nn.init.fans((6, 1, 5, 5)) == (25, 150)
    np.testing.assert_array_equal(nn.Linear(3, 2, rng=7).weight.value, nn.Linear(3, 2, rng=7).weight.value)
    assert nn.Linear(3, 2, dtype=np.float32, rng=0).weight.dtype == np.float32
    with pytest.raises(ad.AutogradDagError, match="rng must be"):
        nn.init.as_generator("seed")

# ----------------------------------------------------------- state dicts, files


def test_state_dict_round_trip_including_buffers(tmp_path):
    a, b = Tiny(), Tiny()
    for p in a.parameters():
        p.value[...] = rand(*p.shape)
    a(rand(8, 2))  # moves the running statistics
    x = rand(3, 2)
    b.load_state_dict(a.state_dict())
    a.eval(), b.eval()
    np.testing.assert_array_equal(a(x).value, b(x).value)
    assert set(a.state_dict()) >= {"norm.running_mean", "norm.running_var", "norm.num_batches_tracked"}
    c = Tiny().eval()
    path = a.save(tmp_path / "tiny")
    assert path.endswith(".npz") and os.path.exists(path)
    c.load(path)
    np.testing.assert_array_equal(c(x).value, a(x).value)
    np.testing.assert_array_equal(c.norm.running_var, a.norm.running_var)


def test_load_state_dict_errors_name_the_key_and_leave_the_model_unchanged():
    m = nn.MLP([2, 3, 1], rng=0)
    before = {k: v.copy() for k, v in m.state_dict().items()}
    bad = m.state_dict()
    bad["layers.0.bias"] = np.zeros(4)
    bad["layers.0.weight"] = np.ones((3, 2))
    with pytest.raises(ad.SerializationError, match=r"'layers.0.bias'.*shape \(4,\).*\(3,\)"):
        m.load_state_dict(bad)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    missing = m.state_dict()
    del missing["layers.1.weight"]
    missing["extra"] = np.ones(1)
    with pytest.raises(ad.SerializationError, match=r"missing key\(s\) \['layers.1.weight'\].*unexpected "
                                                    r"key\(s\) \['extra'\]"):
        m.load_state_dict(missing)
    m.load_state_dict({"layers.0.bias": np.ones(3)}, strict=False)
    np.testing.assert_array_equal(m.layers[0].bias.value, np.ones(3))


def test_load_refuses_pickled_and_mismatched_files(tmp_path):
    m = nn.Linear(2, 3, rng=0)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, weight=np.array([{"evil": 1}, None], dtype=object), bias=np.zeros(3))
    with pytest.raises(ad.SerializationError, match="pickled"):
        m.load(pickled)
    other = nn.MLP([2, 3], rng=0).save(tmp_path / "mlp.npz")
    with pytest.raises(ad.SerializationError, match=r"missing key\(s\) \['weight', 'bias'\].*saved from a MLP"):
        m.load(other)
    wrong = nn.Linear(2, 4, rng=0).save(tmp_path / "wide.npz")
    with pytest.raises(ad.SerializationError, match=r"'weight'.*\(4, 2\).*\(3, 2\)"):
        m.load(wrong)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file at all")
    with pytest.raises(ad.SerializationError, match="junk.npz"):
        m.load(junk)
    with pytest.raises(ad.SerializationError, match="no such file"):
        m.load(tmp_path / "absent.npz")


def test_float32_model_trains_in_float32():
    net = nn.MLP([4, 8, 3], rng=0, dtype=np.float32)
    loss = F.cross_entropy(net(np.ones((2, 4), dtype=np.float32)), np.array([0, 2]))
    assert loss.dtype == np.float32
    loss.backward()
    assert net.layers[0].weight.grad.dtype == np.float32


def test_assigning_a_plain_tensor_over_a_parameter_is_refused():
    # It would silently leave parameters(), the optimizer and the state dict (PyTorch refuses too).
    lin = nn.Linear(2, 2, rng=0)
    for value in (ad.Tensor(np.ones((2, 2)), requires_grad=True), np.ones((2, 2))):
        with pytest.raises(ad.AutogradDagError, match=r"Linear.weight is a parameter: assign an nn.Parameter"):
            lin.weight = value
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    lin.weight = nn.Parameter(np.ones((2, 2)))
    lin.bias = None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    np.testing.assert_array_equal(lin(np.ones((1, 2))).value, [[2.0, 2.0]])


def test_jit_traces_again_when_a_module_gets_a_new_parameter_or_layer():
    # A jit program reads the arrays it closed over by identity: a replaced parameter or layer
    # (a new head for fine-tuning) must not leave it computing with the old one.
    model = nn.Sequential(nn.Linear(2, 3, rng=0), nn.Linear(3, 2, rng=1))
    f = ad.jit(lambda x: model(x))
    x = rand(4, 2)
    np.testing.assert_allclose(f(x), model(x).value)
    model[0].weight = nn.Parameter(rand(3, 2))
    np.testing.assert_allclose(f(x), model(x).value)
    model._items[1] = nn.Linear(3, 2, rng=5)  # a list item: not an assignment the module sees
    retrace_jit()
    np.testing.assert_allclose(f(x), model(x).value)
    res = nn.Residual(nn.Linear(2, 2, rng=0))
    g = ad.jit(lambda x: res(x))
    g(x)
    res.h = nn.Linear(2, 2, rng=3)
    np.testing.assert_allclose(g(x), res(x).value)
    bn = nn.BatchNorm(2).eval()
    h = ad.jit(lambda x: bn(x))
    h(x)
    bn.running_mean = np.ones(2)
    np.testing.assert_allclose(h(x), bn(x).value)


@pytest.mark.parametrize("shape, affine", [((6, 4), True), ((5, 4, 3, 2), False), ((3, 4, 7), True)])
def test_batch_norm_follows_pytorch_over_steps_and_modes(shape, affine):
    """Outputs, input gradients and running statistics (momentum, unbiased variance) after three steps, then eval."""
    torch = pytest.importorskip("torch")
    bn = nn.BatchNorm(4, eps=1e-3, momentum=0.3, affine=affine)
    ref = (torch.nn.BatchNorm2d if len(shape) == 4 else torch.nn.BatchNorm1d)(
        4, eps=1e-3, momentum=0.3, affine=affine, dtype=torch.float64)
    if affine:
        bn.gamma.value[...], bn.beta.value[...] = rand(4), rand(4)
        with torch.no_grad():
            ref.weight.copy_(torch.tensor(bn.gamma.value))
            ref.bias.copy_(torch.tensor(bn.beta.value))
    for mode in ("train", "train", "train", "eval"):
        bn.train(mode == "train")
        ref.train(mode == "train")
        x, w = rand(*shape, scale=3.0) + 2.0, rand(*shape)
        xa, tx = ad.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out, tout = bn(xa), ref(tx)
        (out * w).sum().backward()
        (tout * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(out.value, tout.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(xa.grad.value, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(bn.running_mean, ref.running_mean.numpy(), rtol=1e-12)
        np.testing.assert_allclose(bn.running_var, ref.running_var.numpy(), rtol=1e-12)
    assert int(bn.num_batches_tracked) == int(ref.num_batches_tracked) == 3


def test_batch_norm_in_training_mode_under_vmap_is_refused():
    # vmap records one example: the running statistics moved once, by example 0's batch, for all of them.
    bn = nn.BatchNorm(3, momentum=0.5)
    batches = rand(4, 5, 3) + np.arange(4)[:, None, None]
    with pytest.raises(ad.TracingError, match=r"BatchNorm\(3\): vmap .* training mode"):
        ad.vmap(lambda x: bn(x))(batches)
    np.testing.assert_array_equal(bn.running_mean, np.zeros(3))
    assert int(bn.num_batches_tracked) == 0
    bn.eval()  # the running statistics are read, not written: per-example outputs as one at a time
    out = ad.vmap(lambda x: bn(x))(batches)
    for i in range(4):
        np.testing.assert_allclose(out.value[i], bn(batches[i]).value, rtol=1e-12)


def test_functional_layer_norm_takes_pytorchs_arguments():
    # F.layer_norm(x, (d,)) read (d,) as γ before: the output came out multiplied by d.
    x, w, b = rand(3, 2, 4), rand(2, 4), rand(2, 4)
    mu = x.mean(axis=(-2, -1), keepdims=True)
    var = x.var(axis=(-2, -1), keepdims=True)
    np.testing.assert_allclose(F.layer_norm(x, (2, 4), w, b, eps=1e-3).value,
                               (x - mu) / np.sqrt(var + 1e-3) * w + b, rtol=1e-12)
    mu, var = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
    np.testing.assert_allclose(F.layer_norm(x, (4,)).value, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-12)
    np.testing.assert_allclose(F.layer_norm(x, 4).value, nn.LayerNorm(4)(x).value, rtol=1e-12)
    for bad in ((3,), np.ones(4), (4.0,)):
        with pytest.raises(ad.ShapeError, match="layer_norm: Expect: normalized_shape"):
            F.layer_norm(x, bad)


def test_losses_name_pytorchs_class_weights_argument_as_unsupported():
    z, y = rand(4, 3), np.array([0, 1, 2, 1])
    for loss in (lambda: F.cross_entropy(z, y, np.ones(3)), lambda: F.nll_loss(z, y, ad.Tensor(np.ones(3))),
                 lambda: F.cross_entropy(z, y, np.ones(3), ignore_index=1),
                 lambda: F.binary_cross_entropy_with_logits(z, np.ones((4, 3)), np.ones((4, 3)))):
        with pytest.raises(ad.AutogradDagError, match="class or element weights, PyTorch's third argument"):
            loss()


def test_conv2d_bias_is_keyword_only():
    # PyTorch's Conv2d(in, out, k, stride, padding, dilation): a sixth positional 2 was read as bias=2.
    with pytest.raises(TypeError):
        nn.Conv2d(1, 2, 3, 1, 1, 2)
    assert nn.Conv2d(1, 2, 3, 1, 1, bias=False, rng=0).bias is None


def test_load_refuses_complex_values_for_real_parameters_and_a_directory(tmp_path):
    # Complex arrays were cast into the float weights with numpy's ComplexWarning only:
    # the imaginary parts were dropped and the model loaded silently different.
    m = nn.Linear(2, 3, rng=0)
    before = {k: v.copy() for k, v in m.state_dict().items()}
    state = {k: v + 1j for k, v in m.state_dict().items()}
    with pytest.raises(ad.SerializationError, match=r"'weight'.*complex128.*float64"):
        m.load_state_dict(state)
    np.savez(tmp_path / "complex.npz", **state)
    with pytest.raises(ad.SerializationError, match=r"complex"):
        m.load(tmp_path / "complex.npz")
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    with pytest.raises(ad.SerializationError, match=r"not a file"):
        m.load(tmp_path)


@pytest.mark.parametrize("make, what", [
    (lambda: nn.Conv2d(1, 1, 3, padding=1.5, rng=0), "padding"),
    (lambda: nn.Conv2d(1, 1, 3, stride=1.5, rng=0), "stride"),
    (lambda: nn.Conv2d(1, 1, 2.5, rng=0), "kernel_size"),
    (lambda: nn.Conv2d(1, 1, 3, padding="same", rng=0), "padding"),
    (lambda: nn.MaxPool2d(2.5), "window"),
    (lambda: nn.MaxPool2d(2, stride=(1, 1.5)), "stride"),
])
def test_conv_and_pool_sizes_must_be_ints_not_truncated(make, what):
    # Conv2d(1, 1, 3, padding=1.5) ran with padding 1 (int() truncation): a 6x6 image came out 6x6,
    # not an error; PyTorch refuses a float size too.
    with pytest.raises(ad.ShapeError, match=what):
        make()


def test_conv_with_numpy_int_sizes_matches_direct_loops():
    conv = nn.Conv2d(2, 3, np.int64(3), padding=(np.int32(1), 1), rng=0)
    x = rand(1, 2, 4, 5)
    np.testing.assert_allclose(conv(x).value, np_conv2d(x, conv.weight.value, conv.bias.value, 1), rtol=1e-10)
    assert nn.MaxPool2d(np.int64(2)).window == (2, 2)


@pytest.mark.parametrize("target", [[[1.0, 1.0, 0.0, 0.0]], [[0.3, 0.3, 0.3, 0.0]], [[0.0, 0.5, 0.0, 0.0]]])
def test_cross_entropy_with_class_probabilities_not_summing_to_one(target):
    # −Σ t log softargmax(z): lse(z) − ⟨t, z⟩ assumed Σt = 1 and gave −0.54 for the multi-hot [1, 1, 0, 0]
    # (a negative cross-entropy), and the target's gradient lacked its −lse(z) term.
    z = np.array([[1.0, 2.0, 0.5, -1.0]])
    t = np.array(target)
    log_p = z - np.log(np.exp(z).sum(-1, keepdims=True))
    np.testing.assert_allclose(F.cross_entropy(z, t).value, -(t * log_p).sum(-1).mean(), rtol=1e-14)
    np.testing.assert_allclose(F.cross_entropy(z, t).value, F.nll_loss(F.log_softmax(z), t).value, rtol=1e-14)
    grad_t = ad.grad(lambda t: F.cross_entropy(z, t))(t)
    np.testing.assert_allclose(grad_t, -log_p, rtol=1e-13)           # ∂/∂t of −Σ t log p
    p = np.exp(log_p)
    grad_z = ad.grad(lambda z: F.cross_entropy(z, t))(z)
    np.testing.assert_allclose(grad_z, t.sum(-1, keepdims=True) * p - t, rtol=1e-13)
    ad.check_grads(lambda z, t: F.cross_entropy(z, t, reduction="sum"), (z, t))


def test_cross_entropy_with_class_probabilities_follows_pytorch():
    torch = pytest.importorskip("torch")
    z = rand(5, 4)
    t = np.abs(rand(5, 4))  # unnormalized: blended, multi-hot or smoothed labels
    for reduction in ("mean", "sum", "none"):
        za, ta = ad.Tensor(z, requires_grad=True), ad.Tensor(t, requires_grad=True)
        zt, tt = torch.tensor(z, requires_grad=True), torch.tensor(t, requires_grad=True)
        loss, ref = F.cross_entropy(za, ta, reduction=reduction), torch.nn.functional.cross_entropy(
            zt, tt, reduction=reduction)
        w = rand(*ref.shape)
        (loss * w).sum().backward()
        (ref * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(loss.value, ref.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(za.grad.value, zt.grad.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(ta.grad.value, tt.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_batch_norm_momentum_none_is_the_cumulative_average():
    # PyTorch's BatchNorm(momentum=None): running statistics are the plain mean of every batch's so far.
    # Here it raised a bare TypeError from float(None).
    bn = nn.BatchNorm(3, momentum=None)
    batches = [rand(5, 3, 2) * 2 + 1 for _ in range(4)]
    for x in batches:
        bn(x)
    means = [x.mean(axis=(0, 2)) for x in batches]
    variances = [x.var(axis=(0, 2), ddof=1) for x in batches]
    np.testing.assert_allclose(bn.running_mean, np.mean(means, axis=0), rtol=1e-12)
    np.testing.assert_allclose(bn.running_var, np.mean(variances, axis=0), rtol=1e-12)
    x = rand(2, 3, 2)
    ref = (x - bn.running_mean[:, None]) / np.sqrt(bn.running_var[:, None] + 1e-5)
    np.testing.assert_allclose(bn.eval()(x).value, ref, rtol=1e-12)


def test_batch_norm_momentum_none_follows_pytorch():
    torch = pytest.importorskip("torch")
    bn, ref = nn.BatchNorm(4, momentum=None), torch.nn.BatchNorm1d(4, momentum=None, dtype=torch.float64)
    for _ in range(3):
        x = rand(6, 4, scale=2.0)
        np.testing.assert_allclose(bn(x).value, ref(torch.tensor(x)).detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bn.running_mean, ref.running_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(bn.running_var, ref.running_var.numpy(), rtol=1e-12)


@pytest.mark.parametrize("offset", [1e3, 1e4, 1e5])
def test_float32_cross_entropy_keeps_its_precision_at_large_logits(offset):
    # lse = c + log Σ exp(z − c) at |z| ~ 1e4 in float32 rounds by ~5e-4; lse − z[t] and exp(z − lse)
    # carried that into the loss and the gradient (3e-4 relative at 1e4, 2e-3 at 1e5; PyTorch 1e-7).
    rng = np.random.default_rng(0)
    z = (offset + rng.standard_normal((64, 10))).astype(np.float32)
    y = rng.integers(0, 10, 64)
    z64 = z.astype(np.float64)                      # the float32 numbers, exactly, in float64
    log_p = z64 - z64.max(-1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
    loss_ref = -log_p[np.arange(64), y].mean()
    grad_ref = (np.exp(log_p) - np.eye(10)[y]) / 64
    loss, grad = ad.value_and_grad(lambda z: F.cross_entropy(z, y))(z)
    assert loss.dtype == grad.dtype == np.float32
    assert abs(float(loss) - loss_ref) < 1e-5 * loss_ref
    assert np.abs(grad - grad_ref).max() < 1e-5 * np.abs(grad_ref).max()


def test_float32_cross_entropy_at_large_logits_follows_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    z = (1e4 + rng.standard_normal((32, 7))).astype(np.float32)
    y = rng.integers(0, 7, 32)
    zt = torch.tensor(z, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(zt, torch.tensor(y))
    ref.backward()
    loss, grad = ad.value_and_grad(lambda z: F.cross_entropy(z, y))(z)
    np.testing.assert_allclose(float(loss), ref.item(), rtol=1e-5)
    np.testing.assert_allclose(grad, zt.grad.numpy(), rtol=0, atol=1e-5 * np.abs(zt.grad.numpy()).max())


@pytest.mark.parametrize("offset", [1e3, 1e4])
def test_float32_log_softmax_and_soft_target_cross_entropy_keep_their_precision(offset):
    # x − lse(x) rounded lse at x's magnitude: log_softmax off by 5e-4 at 1e4 in float32 (PyTorch 3e-7),
    # and cross_entropy with class probabilities (lse − ⟨t, z⟩) likewise.
    rng = np.random.default_rng(2)
    z = (offset + rng.standard_normal((32, 6))).astype(np.float32)
    t = rng.dirichlet(np.ones(6), 32)
    z64 = z.astype(np.float64)
    log_p = z64 - z64.max(-1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
    out = F.log_softmax(z).value
    assert out.dtype == np.float32 and np.abs(out - log_p).max() < 2e-6
    loss, grad = ad.value_and_grad(lambda z: F.cross_entropy(z, t))(z)
    assert abs(float(loss) - (-(t * log_p).sum(-1).mean())) < 2e-6
    np.testing.assert_allclose(grad, (np.exp(log_p) - t) / 32, rtol=0, atol=1e-6 / 32)
    # The derivative rules still see log softargmax: its Jacobian-vector products in float64.
    x = rng.standard_normal((3, 4))
    ad.check_grads(lambda x: F.log_softmax(x, gamma=0.7), (x,), order=2)


def test_float32_log_softmax_at_large_logits_follows_pytorch():
    torch = pytest.importorskip("torch")
    z = (1e4 + np.random.default_rng(3).standard_normal((16, 5))).astype(np.float32)
    w = np.random.default_rng(4).standard_normal((16, 5)).astype(np.float32)
    zt = torch.tensor(z, requires_grad=True)
    ref = torch.log_softmax(zt, -1)
    (ref * torch.tensor(w)).sum().backward()
    out, grad = ad.value_and_grad(lambda z: ad.sum(F.log_softmax(z) * w))(z)
    np.testing.assert_allclose(F.log_softmax(z).value, ref.detach().numpy(), rtol=0, atol=2e-6)
    np.testing.assert_allclose(grad, zt.grad.numpy(), rtol=0, atol=1e-5)


def test_functional_layer_norm_refuses_a_weight_or_bias_not_of_normalized_shape():
    # F.layer_norm(x, (2, 4), weight of shape (4,)) broadcast the weight silently (PyTorch refuses it),
    # as did a per-sample (3, 2, 4) one.
    x = rand(3, 2, 4)
    for kw in (dict(weight=rand(4)), dict(bias=rand(1, 4)), dict(weight=rand(3, 2, 4)), dict(bias=ad.Tensor(rand(4)))):
        with pytest.raises(ad.ShapeError, match="of shape normalized_shape \\(2, 4\\)"):
            F.layer_norm(x, (2, 4), **kw)
    w, b = rand(2, 4), rand(2, 4)
    mu, var = x.mean(axis=(-2, -1), keepdims=True), x.var(axis=(-2, -1), keepdims=True)
    np.testing.assert_allclose(F.layer_norm(x, (2, 4), ad.Tensor(w), b).value, (x - mu) / np.sqrt(var + 1e-5) * w + b,
                               rtol=1e-12)


@pytest.mark.parametrize("make, what", [
    (lambda: nn.Linear(3, 7 * 1.5, rng=0), "out_features"), (lambda: nn.BatchNorm(3.5), "num_features"),
    (lambda: nn.LayerNorm((2, 2.5)), "normalized_shape"), (lambda: nn.MultiHeadAttention(8, 2.5, rng=0), "heads"),
    (lambda: nn.GRUCell(3, 4.5, rng=0), "hidden_size"), (lambda: nn.MLPCell(3, 4, width=7.5, rng=0), "width"),
    (lambda: nn.TransformerBlock(8, 2, 7 * 1.5, rng=0), "hidden"), (lambda: nn.Linear("3", 2, rng=0), "in_features"),
])
def test_fractional_layer_sizes_are_refused_not_floored(make, what):
    # Linear(3, 7 * 1.5) built 10 outputs (int() floors 10.5) without a word; PyTorch refuses a float size.
    with pytest.raises(ad.ShapeError, match=f"{what} a whole number"):
        make()


def test_whole_float_layer_sizes_still_work():
    lin = nn.Linear(4.0, 6 / 2, rng=0)
    x = rand(2, 4)
    assert lin.weight.shape == (3, 4)
    np.testing.assert_allclose(lin(x).value, x @ lin.weight.value.T + lin.bias.value, rtol=1e-12)
    assert nn.LayerNorm(np.int64(4)).normalized_shape == (4,)


def test_predict_runs_in_eval_mode_and_restores_each_modules_mode():
    # predict of a model in training mode dropped units (a different class on every call) and
    # normalised by the batch's own statistics; scikit-learn's and Keras's predict do neither.
    rng = np.random.default_rng(0)
    net = nn.MLP([4, 32, 3], activation="relu", rng=1)
    drop = nn.Dropout(0.9)
    model = nn.Sequential(nn.Linear(4, 4, rng=2), nn.BatchNorm(4), drop, net)
    model.__class__ = type("SeqClassifier", (nn.Sequential, nn.Classifier), {})
    x = rng.standard_normal((5, 4)) * 3 + 1
    model[1].running_mean[...] = 0.5  # (not the batch's mean: eval and train modes differ)
    # Independent numpy: the same layers by hand with running statistics and no dropout.
    lin, bn = model[0], model[1]
    h = x @ lin.weight.value.T + lin.bias.value
    h = (h - bn.running_mean) / np.sqrt(bn.running_var + bn.eps) * bn.gamma.value + bn.beta.value
    for layer in net.layers:
        h = h @ layer.weight.value.T + layer.bias.value
        if layer is not net.layers[-1]:
            h = np.maximum(h, 0.0)
    expected = np.argmax(h, axis=-1)
    for _ in range(3):
        np.testing.assert_array_equal(model.predict(x), expected)
    assert all(m.training for m in model.modules())  # the mode is back


def test_evaluating_restores_mixed_modes_even_after_an_error():
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.BatchNorm(2))
    model[2].eval()
    with pytest.raises(ZeroDivisionError):
        with model.evaluating():
            assert not any(m.training for m in model.modules())
            raise ZeroDivisionError
    assert [m.training for m in model.modules()] == [True, True, True, False]


def test_save_to_a_directory_is_refused_and_writes_nothing(tmp_path):
    # model.save("runs") with runs/ a directory wrote runs.npz beside it; "runs/" wrote runs/.npz.
    (tmp_path / "runs").mkdir()
    model = nn.Linear(2, 3, rng=0)
    for path in (tmp_path / "runs", str(tmp_path / "runs") + os.sep):
        with pytest.raises(ad.SerializationError, match=r"is a directory.*runs.*model\.npz"):
            model.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"] and not list((tmp_path / "runs").iterdir())
    assert model.save(tmp_path / "runs" / "model") == str(tmp_path / "runs" / "model.npz")
