"""Optimizers against updates computed by hand, and the learning-rate schedules."""

import math

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn, optim


def param(values):
    return nn.Parameter(np.array(values, dtype=np.float64))


def set_grad(p, g):
    p.grad = ad.Tensor(np.array(g, dtype=np.float64))


def test_sgd_plain_step():
    p = param([1.0, -2.0])
    opt = optim.SGD([p], lr=0.1)
    set_grad(p, [0.5, 1.0])
    opt.step()
    np.testing.assert_allclose(p.value, [1.0 - 0.05, -2.0 - 0.1])


def test_sgd_momentum_and_weight_decay_two_steps():
    p = param([1.0])
    opt = optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    set_grad(p, [2.0])
    opt.step()
    g1 = 2.0 + 0.01 * 1.0                     # weight decay adds λ·p
    v1 = g1                                   # the first step starts the buffer at g
    p1 = 1.0 - 0.1 * v1
    np.testing.assert_allclose(p.value, [p1])
    set_grad(p, [-1.0])
    opt.step()
    g2 = -1.0 + 0.01 * p1
    v2 = 0.9 * v1 + g2
    np.testing.assert_allclose(p.value, [p1 - 0.1 * v2])


def test_sgd_nesterov():
    p = param([0.0])
    opt = optim.SGD([p], lr=1.0, momentum=0.5, nesterov=True)
    set_grad(p, [1.0])
    opt.step()
    np.testing.assert_allclose(p.value, [-(1.0 + 0.5 * 1.0)])
    set_grad(p, [1.0])
    opt.step()
    v2 = 0.5 * 1.0 + 1.0
    np.testing.assert_allclose(p.value, [-1.5 - (1.0 + 0.5 * v2)])
    with pytest.raises(ad.AutogradDagError, match="nesterov"):
        optim.SGD([p], lr=1.0, nesterov=True)


def adam_by_hand(p, grads, lr, b1, b2, eps, wd=0.0, decoupled=False):
    m = v = 0.0
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p = p * (1 - lr * wd)
        else:
            g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** t)) / (math.sqrt(v / (1 - b2 ** t)) + eps)
    return p


@pytest.mark.parametrize("cls, wd, decoupled", [(optim.Adam, 0.0, False), (optim.Adam, 0.1, False),
                                                 (optim.AdamW, 0.1, True)])
def test_adam_and_adamw_three_steps(cls, wd, decoupled):
    grads = [0.3, -1.2, 0.7]
    p = param([1.5])
    opt = cls([p], lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=wd)
    for g in grads:
        set_grad(p, [g])
        opt.step()
    expected = adam_by_hand(1.5, grads, 0.01, 0.8, 0.95, 1e-6, wd, decoupled)
    np.testing.assert_allclose(p.value, [expected], rtol=1e-12)


def test_adam_first_step_moves_by_lr():
    # m̂ = g and v̂ = g² at t = 1, so the first step is lr·sign(g) (up to ε).
    p = param([0.0, 0.0])
    opt = optim.Adam([p], lr=0.5)
    set_grad(p, [3.0, -0.02])
    opt.step()
    np.testing.assert_allclose(p.value, [-0.5, 0.5], rtol=1e-5)


def test_zero_grad_and_parameters_without_gradient():
    a, b = param([1.0]), param([2.0])
    opt = optim.SGD([a, b], lr=1.0)
    set_grad(a, [1.0])
    opt.step()
    np.testing.assert_array_equal(b.value, [2.0])  # no gradient: untouched
    np.testing.assert_array_equal(a.value, [0.0])
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_optimizer_rejects_bad_parameters():
    with pytest.raises(ad.AutogradDagError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ad.AutogradDagError, match="requires_grad"):
        optim.Adam([ad.Tensor([1.0])])


def test_optimizer_refuses_a_parameter_listed_twice():
    # Listed twice, it would take two updates per step: 1 - 2·0.1 instead of 1 - 0.1.
    p = param([1.0])
    with pytest.raises(ad.AutogradDagError, match="parameters 0 and 2 are the same Tensor"):
        optim.SGD([p, param([2.0]), p], lr=0.1)
    tied = nn.Linear(2, 2, rng=0)
    opt = optim.SGD(tied.parameters() + [param([0.0])], lr=0.1)  # a shared parameter is listed once
    assert len(opt.params) == 3


def test_training_a_linear_model_reduces_the_loss():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3
    model = nn.Linear(3, 1, rng=0)
    for opt in (optim.SGD(model.parameters(), lr=0.1, momentum=0.9), optim.Adam(model.parameters(), lr=0.05)):
        for _ in range(200):
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert float(loss.value) < 1e-4
    np.testing.assert_allclose(model.weight.value, [[1.0, -2.0, 0.5]], atol=1e-2)


def test_float32_parameters_stay_float32():
    p = nn.Parameter(np.ones(2, dtype=np.float32))
    opt = optim.AdamW([p], lr=0.1)
    p.grad = ad.Tensor(np.ones(2, dtype=np.float32))
    opt.step()
    assert p.value.dtype == np.float32


def test_schedules():
    p = param([0.0])
    opt = optim.SGD([p], lr=1.0)
    sched = optim.StepLR(opt, step_size=2, gamma=0.5)
    lrs = [opt.lr] + [sched.step() for _ in range(5)]
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    opt2 = optim.SGD([p], lr=2.0)
    cos = optim.CosineAnnealingLR(opt2, T_max=4, eta_min=0.0)
    lrs = [opt2.lr] + [cos.step() for _ in range(5)]
    np.testing.assert_allclose(lrs, [2.0, 1 + math.cos(math.pi / 4), 1.0, 1 - math.cos(math.pi / 4), 0.0, 0.0],
                               atol=1e-12)
    opt3 = optim.SGD([p], lr=0.1)
    lam = optim.LambdaLR(opt3, lambda s: 0.9 ** s)
    lam.step()
    lam.step()
    assert math.isclose(opt3.lr, 0.1 * 0.81)
    assert optim.cosine_schedule(0, 10, 1.0, warmup=4) == 0.25
    assert optim.cosine_schedule(4, 10, 1.0, warmup=4) == 1.0
    assert optim.step_schedule(25, 1.0, 10, 0.5) == 0.25


@pytest.mark.parametrize("name, kw", [
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3)),
])
def test_twenty_steps_follow_pytorch(name, kw):
    """Trajectories of 20 steps under StepLR, one parameter without a gradient at step 7 (skipped, its state kept)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((5, 3)), rng.standard_normal(5)
    w0, c0 = rng.standard_normal(3), rng.standard_normal((2, 2))

    def grads(w, c):  # of |A w − b|² + Σ sin(c)·c, in closed form: the same numbers for both optimizers
        return 2 * A.T @ (A @ w - b), np.sin(c) + c * np.cos(c)
    ours = [param(w0), param(c0)]
    theirs = [torch.tensor(w0.copy(), requires_grad=True), torch.tensor(c0.copy(), requires_grad=True)]
    opt, topt = getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)
    sched, tsched = optim.StepLR(opt, 4, 0.5), torch.optim.lr_scheduler.StepLR(topt, 4, 0.5)
    for step in range(20):
        for p, g in zip(ours, grads(*(p.value for p in ours))):
            p.grad = None if step == 7 and p is ours[1] else ad.Tensor(g)
        for p, g in zip(theirs, grads(*(p.detach().numpy() for p in theirs))):
            p.grad = None if step == 7 and p is theirs[1] else torch.tensor(g)
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
    for p, tp in zip(ours, theirs):
        np.testing.assert_allclose(p.value, tp.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_arguments_in_pytorchs_positional_order():
    # SGD(params, lr, momentum, dampening, weight_decay): before, the fourth was weight_decay,
    # so SGD(params, 0.1, 0.9, 0.5), written for PyTorch, decayed the weights instead of damping.
    p = param([1.0, -2.0])
    opt = optim.SGD([p], 0.1, 0.9, 0.5)
    for _ in range(2):
        p.grad = ad.Tensor(np.array([1.0, 1.0]))
        opt.step()
    # v1 = g, p1 = p0 − 0.1·g; v2 = 0.9·g + 0.5·g = 1.4·g, p2 = p1 − 0.14·g
    np.testing.assert_allclose(p.value, [1.0 - 0.1 - 0.14, -2.0 - 0.1 - 0.14], rtol=1e-15)
    assert (opt.dampening, opt.weight_decay) == (0.5, 0.0)
    with pytest.raises(TypeError):  # PyTorch's fourth argument is last_epoch; warmup is keyword-only
        optim.CosineAnnealingLR(optim.SGD([param([0.0])], 0.1), 10, 0.0, -1)


def test_sgd_default_learning_rate_is_pytorchs():
    # SGD(params) written for PyTorch steps by 1e-3·g; the default was 1e-2, ten times the step.
    p = param([1.0, -2.0])
    opt = optim.SGD([p])
    set_grad(p, [3.0, -4.0])
    opt.step()
    np.testing.assert_allclose(p.value, [1.0 - 1e-3 * 3.0, -2.0 + 1e-3 * 4.0], rtol=1e-15)


def test_default_arguments_match_pytorch():
    torch = pytest.importorskip("torch")
    import inspect
    for name in ("SGD", "Adam", "AdamW"):
        ours = inspect.signature(getattr(optim, name)).parameters
        theirs = inspect.signature(getattr(torch.optim, name)).parameters
        for arg, spec in ours.items():
            if spec.default is not inspect.Parameter.empty:
                assert spec.default == theirs[arg].default, (name, arg)


@pytest.mark.parametrize("make, message", [
    (lambda p: optim.Adam(p, betas=(1.0, 0.999)), r"betas\[0\]"),
    (lambda p: optim.AdamW(p, betas=(0.9, 1.0)), r"betas\[1\]"),
    (lambda p: optim.Adam(p, betas=(-0.1, 0.9)), r"betas\[0\]"),
    (lambda p: optim.Adam(p, eps=-1e-8), "eps"),
    (lambda p: optim.Adam(p, weight_decay=-0.1), "weight_decay"),
    (lambda p: optim.SGD(p, lr=0.1, momentum=-0.5), "momentum"),
    (lambda p: optim.SGD(p, lr=0.1, weight_decay=-1.0), "weight_decay"),
])
def test_optimizers_refuse_hyperparameters_pytorch_refuses(make, message):
    # Adam(betas=(1.0, 0.999)) divided by the bias correction 1 − 1ᵗ = 0: the parameter became NaN at step 1.
    with pytest.raises(ad.AutogradDagError, match=message):
        make([param([1.0])])


def test_adam_with_zero_betas_is_sign_descent():
    # β₁ = β₂ = 0 (the edge of the allowed range): m̂ = g, v̂ = g², so p ← p − lr·g / (|g| + ε).
    p = param([1.0, -2.0])
    opt = optim.Adam([p], lr=0.1, betas=(0.0, 0.0), eps=1e-8)
    set_grad(p, [0.5, -4.0])
    opt.step()
    np.testing.assert_allclose(p.value, [1.0 - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 + 0.1 * 4.0 / (4.0 + 1e-8)], rtol=1e-15)
