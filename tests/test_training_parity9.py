"""Training code as PyTorch users write it, against torch 2.x step by step (session 9): parameter groups,
the optimizers' options, schedulers per group, and cross_entropy's weight / label_smoothing / ignore_index.

Trajectory tolerances: float64, 20 steps of the same formulas on the same numbers; the two libraries
differ in the order of a few roundings per step (and our gradients come from our own backward pass), so
the parameters agree to rounding amplified over the steps: rtol 1e-10 leaves three orders of headroom over
what is observed (~1e-13) and is far below any formula difference (a missing or extra term moves them by >1e-4).
"""

import math

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn, optim
from autograd_dag.nn import functional as F

torch = pytest.importorskip("torch")


def _model_pair(sizes=(3, 5, 4, 2)):
    """Our nn.MLP (tanh) and a float64 torch.nn.Sequential with the same weights."""
    model = nn.MLP(list(sizes), activation="tanh", rng=0)
    layers = []
    for k, ours in enumerate(model.layers):
        layer = torch.nn.Linear(*ours.weight.shape[::-1]).double()
        with torch.no_grad():
            layer.weight.copy_(torch.tensor(ours.weight.value))
            layer.bias.copy_(torch.tensor(ours.bias.value))
        layers += [layer] + ([torch.nn.Tanh()] if k < len(model.layers) - 1 else [])
    return model, torch.nn.Sequential(*layers)


def _batch(n=16, d=3, classes=2, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.integers(0, classes, n)


def _groups(model, net, kw_first, kw_second):
    """Two groups: the first layer (the 'encoder') and the rest (the 'head'), each with its own options."""
    ours = [{"params": model.layers[0].parameters(), **kw_first},
            {"params": [p for layer in model.layers[1:] for p in layer.parameters()], **kw_second}]
    theirs = [{"params": list(net[0].parameters()), **kw_first},
              {"params": [p for layer in list(net)[1:] for p in layer.parameters()], **kw_second}]
    return ours, theirs


def _step(model, net, opt, topt, x, y):
    opt.zero_grad()
    topt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    torch.nn.functional.cross_entropy(net(torch.tensor(x)), torch.tensor(y)).backward()
    opt.step()
    topt.step()


def _assert_same(model, net, rtol=1e-10):
    for ours, theirs in zip(model.parameters(), net.parameters()):
        np.testing.assert_allclose(ours.value, theirs.detach().numpy(), rtol=rtol, atol=1e-13)

# ------------------------------------------------------------- parameter groups


def test_parameter_groups_train_as_pytorchs_with_per_group_lambdas_and_an_lr_edited_mid_run():
    # Before: "parameter groups ... are not supported; make one optimizer per group".
    model, net = _model_pair()
    x, y = _batch()
    ours, theirs = _groups(model, net, {}, {"lr": 1e-3, "momentum": 0.5})
    opt = optim.SGD(ours, lr=1e-1, momentum=0.9)
    topt = torch.optim.SGD(theirs, lr=1e-1, momentum=0.9)
    lambdas = [lambda s: 0.9 ** s, lambda s: 1.0 / (1 + s)]
    sched, tsched = optim.LambdaLR(opt, lambdas), torch.optim.lr_scheduler.LambdaLR(topt, lambdas)
    assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in topt.param_groups] == [0.1, 1e-3]
    assert [g["momentum"] for g in opt.param_groups] == [0.9, 0.5]
    for step in range(20):
        if step == 10:  # a user's edit takes effect at the next step (the scheduler resets it at its next step)
            opt.param_groups[1]["momentum"] = topt.param_groups[1]["momentum"] = 0.0
            opt.param_groups[0]["lr"] = topt.param_groups[0]["lr"] = 0.5
        _step(model, net, opt, topt, x, y)
        if step != 10:
            sched.step()
            tsched.step()
        assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-15)
        assert [g["lr"] for g in opt.param_groups] == pytest.approx([g["lr"] for g in topt.param_groups], rel=1e-15)
    _assert_same(model, net)


@pytest.mark.parametrize("make", [lambda o: optim.StepLR(o, 3, 0.5), lambda o: optim.LambdaLR(o, lambda s: 0.8 ** s)])
def test_every_scheduler_acts_on_every_group_from_its_own_base_rate(make):
    model, _ = _model_pair()
    opt = optim.Adam([{"params": model.layers[0].parameters(), "lr": 0.4},
                      {"params": model.layers[1].parameters()}], lr=0.1)
    sched = make(opt)
    for _ in range(7):
        sched.step()
    factor = 0.5 ** 2 if isinstance(sched, optim.StepLR) else 0.8 ** 7
    np.testing.assert_allclose(sched.get_last_lr(), [0.4 * factor, 0.1 * factor], rtol=1e-15)
    cos = optim.CosineAnnealingLR(opt, T_max=4)  # a second scheduler keeps the first one's base rates
    assert cos.base_lrs == [0.4, 0.1] and cos.get_last_lr() == [0.4, 0.1]


def test_add_param_group_mid_run_trains_as_pytorchs_and_refuses_a_parameter_already_in_a_group():
    model, net = _model_pair()
    x, y = _batch()
    opt = optim.AdamW(model.layers[0].parameters(), lr=0.05)
    topt = torch.optim.AdamW(list(net[0].parameters()), lr=0.05)
    for step in range(20):
        if step == 5:  # unfreeze the rest with its own rate
            opt.add_param_group({"params": [p for layer in model.layers[1:] for p in layer.parameters()],
                                 "lr": 0.01, "weight_decay": 0.0})
            topt.add_param_group({"params": [p for layer in list(net)[1:] for p in layer.parameters()],
                                  "lr": 0.01, "weight_decay": 0.0})
        _step(model, net, opt, topt, x, y)
    _assert_same(model, net)
    with pytest.raises(ad.AutogradDagError, match=r"parameters 0 \(in parameter group 0\) and 6 are the same"):
        opt.add_param_group({"params": [model.layers[0].weight]})
    assert len(opt.param_groups) == 2 and len(opt.state) == 6  # nothing taken


def test_a_parameter_in_two_groups_is_refused_as_pytorch_refuses_it():
    model, net = _model_pair()
    with pytest.raises(ValueError):
        torch.optim.SGD([{"params": list(net[0].parameters())}, {"params": [net[0].weight]}], lr=0.1)
    with pytest.raises(ad.AutogradDagError, match=r"parameters 0 \(in parameter group 0\) and 2 are the same"):
        optim.SGD([{"params": model.layers[0].parameters()}, {"params": [model.layers[0].weight]}], lr=0.1)
    with pytest.raises(ad.AutogradDagError, match="mixes Tensors and parameter groups"):
        optim.SGD([model.layers[0].weight, {"params": [model.layers[0].bias]}], lr=0.1)
    with pytest.raises(ad.AutogradDagError, match="is a set"):
        optim.SGD([{"params": set(model.layers[0].parameters())}], lr=0.1)


def test_lr_of_an_optimizer_whose_groups_differ_is_an_error_naming_param_groups():
    model, _ = _model_pair()
    opt = optim.SGD([{"params": model.layers[0].parameters()}, {"params": model.layers[1].parameters(), "lr": 1}],
                    lr=0.1)
    with pytest.raises(ad.AutogradDagError, match=r"different learning rates \[0.1, 1.0\].*param_groups"):
        opt.lr
    opt.param_groups[1]["lr"] = 0.1
    opt.lr = 0.2  # equal rates: one lr, set in every group
    assert [g["lr"] for g in opt.param_groups] == [0.2, 0.2]
    opt.param_groups[0]["lr"] = -1.0
    with pytest.raises(ad.AutogradDagError, match="lr must be >= 0; got -1.0"):
        opt.step()


@pytest.mark.parametrize("name, kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                      ("Adam", dict(lr=0.01, amsgrad=True)),
                                      ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
                                      ("Adagrad", dict(lr=0.1, lr_decay=0.01))])
def test_resuming_with_groups_is_bit_identical_and_restores_each_groups_hyperparameters(name, kw):
    x, y = _batch()

    def fresh():
        model, net = _model_pair()
        groups = [{"params": model.layers[0].parameters(), "lr": kw["lr"] / 2},
                  {"params": [p for layer in model.layers[1:] for p in layer.parameters()]}]
        opt = getattr(optim, name)(groups, **kw)
        return model, opt, optim.LambdaLR(opt, [lambda s: 0.9 ** s, lambda s: 0.5 ** (s // 3)])

    def train(model, opt, sched, steps):
        for _ in range(steps):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
            sched.step()

    model, opt, sched = fresh()
    train(model, opt, sched, 4)
    opt.param_groups[1]["weight_decay"] = 0.01  # edited by hand: the state_dict carries it
    saved = model.state_dict(), opt.state_dict(), sched.state_dict()
    assert [g["params"] for g in saved[1]["param_groups"]] == [[0, 1], [2, 3, 4, 5]]
    train(model, opt, sched, 6)
    model2, opt2, sched2 = fresh()
    model2.load_state_dict(saved[0])
    opt2.load_state_dict(saved[1])
    sched2.load_state_dict(saved[2])
    assert opt2.param_groups[1]["weight_decay"] == 0.01
    train(model2, opt2, sched2, 6)
    for a, b in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(b.value, a.value)  # the same operations on the same numbers
    assert [g["lr"] for g in opt2.param_groups] == [g["lr"] for g in opt.param_groups]


def test_a_state_dict_of_other_groups_is_refused_before_anything_is_taken():
    model, _ = _model_pair()
    one = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    two = optim.SGD([{"params": model.layers[0].parameters()}, {"params": model.layers[1].parameters()},
                     {"params": model.layers[2].parameters()}], lr=0.3)
    with pytest.raises(ad.AutogradDagError, match="the state has 1 parameter groups, this optimizer 3"):
        two.load_state_dict(one.state_dict())
    swapped = optim.SGD([{"params": model.layers[0].parameters() + model.layers[1].parameters()},
                         {"params": model.layers[2].parameters()}], lr=0.2)
    state = swapped.state_dict()
    state["param_groups"] = state["param_groups"][::-1]
    with pytest.raises(ad.AutogradDagError, match="parameter group 0 of the state has 2 parameters, this "
                                                  "optimizer's 4"):
        swapped.load_state_dict(state)
    assert two.lr == 0.3 and swapped.lr == 0.2
    two.load_state_dict({"lr": 0.7, "steps": 3, "state": {}})  # the layout before groups: its lr in every group
    assert [g["lr"] for g in two.param_groups] == [0.7, 0.7, 0.7] and two.steps == 3

# ------------------------------------------------------------- options of each optimizer


CONFIGS = [
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.01, maximize=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.9), weight_decay=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.02, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.02, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.02, maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.01, momentum=0.8, centered=True)),
    ("RMSprop", dict(lr=0.01, centered=True, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.01, initial_accumulator_value=0.1, eps=1e-8)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
]


@pytest.mark.parametrize("name, kw", CONFIGS)
def test_twenty_steps_of_each_optimizer_option_follow_pytorch(name, kw):
    model, net = _model_pair()
    x, y = _batch()
    opt, topt = getattr(optim, name)(model.parameters(), **kw), getattr(torch.optim, name)(net.parameters(), **kw)
    for _ in range(20):
        _step(model, net, opt, topt, x, y)
    _assert_same(model, net)
    start = _model_pair()[0]
    moved = max(np.abs(a.value - b.value).max() for a, b in zip(model.parameters(), start.parameters()))
    assert moved > 1e-3  # the test trains


def test_amsgrad_divides_by_the_largest_second_moment_so_far():
    # One parameter, gradients 1 then 0: v falls, AMSGrad keeps v_max = 0.001 (numpy reference).
    p = nn.Parameter(np.zeros(1))
    opt = optim.Adam([p], lr=1.0, betas=(0.9, 0.999), eps=0.0, amsgrad=True)
    for g in (1.0, 0.0):
        p.grad = ad.Tensor(np.array([g]))
        opt.step()
    m, v_max = 0.1 * 0.9, 0.001
    expected = -0.1 / 0.1 / math.sqrt(0.001 / 0.001) - (m / (1 - 0.81)) / math.sqrt(v_max / (1 - 0.999 ** 2))
    np.testing.assert_allclose(p.value, [expected], rtol=1e-14)  # a few roundings of O(1) numbers


@pytest.mark.parametrize("name, kw, match", [
    ("SGD", dict(differentiable=True), "differentiable=True is not supported"),
    ("Adam", dict(capturable=True), "capturable=True .* not supported"),
    ("RMSprop", dict(differentiable=True), "differentiable=True"),
    ("Adagrad", dict(lr_decay=-1.0), "lr_decay must be >= 0"),
    ("RMSprop", dict(alpha=-0.5), "alpha must be >= 0"),
])
def test_options_without_a_meaning_here_are_refused_by_name(name, kw, match):
    with pytest.raises(ad.AutogradDagError, match=match):
        getattr(optim, name)([nn.Parameter(np.ones(2))], **kw)


def test_float32_parameters_stay_float32_in_the_new_optimizers():
    for make in (lambda ps: optim.RMSprop(ps, centered=True, momentum=0.9), lambda ps: optim.Adagrad(ps),
                 lambda ps: optim.Adam(ps, amsgrad=True)):
        p = nn.Parameter(np.ones(3, dtype=np.float32))
        opt = make([p])
        p.grad = ad.Tensor(np.full(3, 0.5, dtype=np.float32))
        opt.step()
        assert p.value.dtype == np.float32 and all(v.dtype == np.float32 for st in opt.state for v in st.values()
                                                    if isinstance(v, np.ndarray))

# ------------------------------------------------------------- cross_entropy's options

LOSS_RNG = np.random.default_rng(9)
Z = LOSS_RNG.standard_normal((6, 5, 4))            # ours (N, L, C); torch's (N, C, L) by moving the class axis
Y = LOSS_RNG.integers(0, 4, (6, 5))
Y[0, 1] = Y[3, 4] = Y[5, 0] = -100
W = LOSS_RNG.uniform(0.2, 3.0, 4)
P = LOSS_RNG.dirichlet(np.ones(4), (6, 5))


def _torch_ce(z, target, **kw):
    """torch's cross_entropy of our (..., C) scores, with the class axis moved to torch's axis 1."""
    zt = torch.tensor(z, requires_grad=True)
    t = torch.tensor(target)
    loss = torch.nn.functional.cross_entropy(torch.movedim(zt, -1, 1), torch.movedim(t, -1, 1) if t.is_floating_point()
                                             else t, **kw)
    return loss, zt


def _grad_of(loss, z):
    (g,) = torch.autograd.grad(loss.sum(), z)
    return g.numpy()


OPTIONS = [dict(weight=w, label_smoothing=ls, reduction=red)
           for w in (None, W) for ls in (0.0, 0.25, 1.0) for red in ("mean", "sum", "none")
           if w is not None or ls]


@pytest.mark.parametrize("ignore", [None, -100])
@pytest.mark.parametrize("kw", OPTIONS, ids=lambda kw: f"w{kw['weight'] is not None}-ls{kw['label_smoothing']}-"
                                                       f"{kw['reduction']}")
def test_cross_entropy_with_weight_and_label_smoothing_equals_pytorchs_value_and_gradient(kw, ignore):
    # Before: "class or element weights ... are not supported" / unexpected keyword label_smoothing.
    y = Y if ignore is not None else np.abs(Y) % 4
    ours_kw = dict(kw, weight=kw["weight"])
    z = ad.Tensor(Z.copy(), requires_grad=True)
    loss = F.cross_entropy(z, y, kw["reduction"], ignore, weight=ours_kw["weight"],
                           label_smoothing=kw["label_smoothing"])
    tkw = dict(kw, weight=None if kw["weight"] is None else torch.tensor(kw["weight"]))
    tloss, zt = _torch_ce(Z, y, **tkw)
    # float64: sums of ≤ 120 terms of O(1) taken in another order, a few ulps of the result
    np.testing.assert_allclose(loss.value, tloss.detach().numpy(), rtol=1e-13, atol=1e-14)
    loss.sum().backward() if kw["reduction"] == "none" else loss.backward()
    np.testing.assert_allclose(z.grad.value, _grad_of(tloss, zt), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kw", [dict(label_smoothing=0.3), dict(weight=W), dict(weight=W, label_smoothing=0.1,
                                                                                 reduction="sum")])
def test_cross_entropy_with_probability_targets_and_options_equals_pytorchs(kw):
    red = kw.pop("reduction", "mean")
    z = ad.Tensor(Z.copy(), requires_grad=True)
    loss = F.cross_entropy(z, P, red, **kw)
    tloss, zt = _torch_ce(Z, P, reduction=red, **{k: torch.tensor(v) if k == "weight" else v for k, v in kw.items()})
    np.testing.assert_allclose(loss.value, tloss.detach().numpy(), rtol=1e-13)  # rounding of O(1) sums
    loss.backward()
    np.testing.assert_allclose(z.grad.value, _grad_of(tloss, zt), rtol=1e-12, atol=1e-15)


def test_cross_entropy_options_in_float32_stay_float32_and_match_pytorch():
    z = ad.Tensor(Z.astype(np.float32), requires_grad=True)
    loss = F.cross_entropy(z, Y, ignore_index=-100, weight=W, label_smoothing=0.1)
    assert loss.dtype == np.float32
    loss.backward()
    assert z.grad.dtype == np.float32
    tz = torch.tensor(Z.astype(np.float32), requires_grad=True)
    tloss = torch.nn.functional.cross_entropy(torch.movedim(tz, -1, 1), torch.tensor(Y),
                                              weight=torch.tensor(W.astype(np.float32)), label_smoothing=0.1)
    tloss.backward()
    # float32: a few ulps (1.2e-7) of O(1) sums
    np.testing.assert_allclose(loss.value, tloss.item(), rtol=2e-6)
    np.testing.assert_allclose(z.grad.value, tz.grad.numpy(), rtol=1e-5, atol=1e-7)


def _loss_fn(target=Y):
    return lambda z: F.cross_entropy(z, target, ignore_index=-100, weight=W, label_smoothing=0.2)


def _central_differences(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (float(np.asarray(f(x + e))) - float(np.asarray(f(x - e)))) / (2 * h)
    return g


def test_the_gradient_of_the_weighted_smoothed_loss_is_the_same_on_every_route():
    f = _loss_fn()
    tloss, zt = _torch_ce(Z, Y, ignore_index=-100, weight=torch.tensor(W), label_smoothing=0.2)
    reference = _grad_of(tloss, zt)
    z = ad.Tensor(Z.copy(), requires_grad=True)
    f(z).backward()
    routes = {"eager": z.grad.value, "grad": ad.grad(f)(Z), "jit": ad.jit(ad.grad(f))(Z),
              "vmap": ad.vmap(ad.grad(f))(np.stack([Z, Z]))[1]}
    for name, g in routes.items():
        np.testing.assert_allclose(np.asarray(g), reference, rtol=1e-12, atol=1e-15, err_msg=name)
    # central differences, h = 1e-6 on O(1) scores: truncation ~h² and cancellation ~1e-16/h ≈ 1e-10
    np.testing.assert_allclose(_central_differences(f, Z), reference, atol=1e-8)


def test_the_second_derivative_of_the_weighted_smoothed_loss_is_pytorchs():
    z = Z[:2, :3]
    y = Y[:2, :3]  # holds one ignored position
    f = _loss_fn(y)
    hessian = np.asarray(ad.hessian(f)(z))

    def tf(zt):
        return torch.nn.functional.cross_entropy(torch.movedim(zt, -1, 1), torch.tensor(y), ignore_index=-100,
                                                 weight=torch.tensor(W), label_smoothing=0.2)
    reference = torch.autograd.functional.hessian(tf, torch.tensor(z)).numpy()
    np.testing.assert_allclose(hessian, reference, rtol=1e-11, atol=1e-14)  # rounding of O(1) products
    # and against differences of our gradient (h = 1e-5: truncation h² ~ 1e-10)
    v = LOSS_RNG.standard_normal(z.shape)
    g = ad.grad(f)
    hv = (np.asarray(g(z + 1e-5 * v)) - np.asarray(g(z - 1e-5 * v))) / 2e-5
    np.testing.assert_allclose(np.tensordot(hessian, v, z.ndim), hv, atol=1e-8)


def test_a_jit_program_takes_the_target_and_its_ignored_positions_as_inputs():
    program = ad.jit(lambda z, y: F.cross_entropy(z, y, ignore_index=-100, weight=W, label_smoothing=0.1))
    for target in (Y, np.where(Y == -100, 0, -100)):   # the second call ignores other positions
        expected, _ = _torch_ce(Z, target, ignore_index=-100, weight=torch.tensor(W), label_smoothing=0.1)
        np.testing.assert_allclose(np.asarray(program(Z, target)), expected.item(), rtol=1e-13)


def test_the_options_add_their_operations_and_the_plain_call_keeps_the_one_fused_primitive():
    def prims(**kw):
        program = ad.trace(lambda z: F.cross_entropy(z, np.abs(Y) % 4, **kw), Z)
        return [node.prim.name for node in program.nodes if node.prim is not None]
    plain, weighted = prims(), prims(weight=W)
    assert "softmax_cross_entropy" in plain and "logsumexp" not in plain and "take" not in plain, plain
    assert "softmax_cross_entropy" in weighted and "take" in weighted and "logsumexp" not in weighted, weighted
    assert "logsumexp" in prims(label_smoothing=0.1)


def test_nll_loss_with_weight_equals_pytorchs():
    log_p = ad.Tensor(np.asarray(F.log_softargmax(ad.Tensor(Z)).value), requires_grad=True)
    for red in ("mean", "sum", "none"):
        loss = F.nll_loss(log_p, Y, red, -100, weight=W)
        lt = torch.tensor(log_p.value, requires_grad=True)
        tloss = torch.nn.functional.nll_loss(torch.movedim(lt, -1, 1), torch.tensor(Y), weight=torch.tensor(W),
                                             reduction=red)
        np.testing.assert_allclose(loss.value, tloss.detach().numpy(), rtol=1e-13, atol=1e-15)
        log_p.grad = None
        loss.sum().backward()
        np.testing.assert_allclose(log_p.grad.value, _grad_of(tloss, lt), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("weight, pos_weight", [(None, np.array([0.5, 2.0, 3.0])), (np.array([1.0, 0.0, 2.0]), None),
                                                (LOSS_RNG.uniform(0, 2, (4, 3)), np.array([4.0, 1.0, 0.25]))])
def test_binary_cross_entropy_with_logits_weight_and_pos_weight_equal_pytorchs(weight, pos_weight):
    x = 4 * LOSS_RNG.standard_normal((4, 3))
    y = LOSS_RNG.uniform(0, 1, (4, 3))
    for red in ("mean", "sum", "none"):
        z = ad.Tensor(x.copy(), requires_grad=True)
        loss = F.binary_cross_entropy_with_logits(z, y, red, weight=weight, pos_weight=pos_weight)
        zt = torch.tensor(x, requires_grad=True)
        tloss = torch.nn.functional.binary_cross_entropy_with_logits(
            zt, torch.tensor(y), reduction=red, weight=None if weight is None else torch.tensor(weight),
            pos_weight=None if pos_weight is None else torch.tensor(pos_weight))
        # float64: log1p/exp of O(4) numbers in another arrangement, a few ulps
        np.testing.assert_allclose(loss.value, tloss.detach().numpy(), rtol=1e-13, atol=1e-15)
        loss.sum().backward()
        np.testing.assert_allclose(z.grad.value, _grad_of(tloss, zt), rtol=1e-12, atol=1e-15)


def test_loss_modules_equal_pytorchs_with_its_defaults():
    z = ad.Tensor(Z.copy(), requires_grad=True)
    loss = nn.CrossEntropyLoss(W, label_smoothing=0.05)(z, Y)   # ignore_index −100 by default, as PyTorch
    tloss, zt = _torch_ce(Z, Y, weight=torch.tensor(W), label_smoothing=0.05)
    np.testing.assert_allclose(loss.value, tloss.item(), rtol=1e-13)
    loss.backward()
    np.testing.assert_allclose(z.grad.value, _grad_of(tloss, zt), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(nn.CrossEntropyLoss()(Z, P).value, _torch_ce(Z, P)[0].item(), rtol=1e-13)
    log_p = np.asarray(F.log_softargmax(ad.Tensor(Z)).value)
    np.testing.assert_allclose(nn.NLLLoss(W, reduction="sum")(log_p, Y).value,
                               torch.nn.functional.nll_loss(torch.movedim(torch.tensor(log_p), -1, 1), torch.tensor(Y),
                                                            weight=torch.tensor(W), reduction="sum").item(), rtol=1e-13)
    x, y = Z[..., 0], (Y > 1).astype(float)
    np.testing.assert_allclose(nn.BCEWithLogitsLoss(pos_weight=np.full(5, 3.0))(x, y).value,
                               torch.nn.BCEWithLogitsLoss(pos_weight=torch.full((5,), 3.0, dtype=torch.float64))(
                                   torch.tensor(x), torch.tensor(y)).item(), rtol=1e-13)
    assert list(nn.CrossEntropyLoss(W).state_dict()) == ["weight"]  # a buffer, as PyTorch's


def test_training_with_the_loss_options_and_groups_follows_pytorch():
    model, net = _model_pair((3, 6, 4))
    x, y = _batch(classes=4)
    y[[2, 9]] = -100
    w = np.array([0.5, 1.0, 2.0, 1.5])
    ours, theirs = _groups(model, net, {"lr": 0.05}, {"weight_decay": 0.01})
    opt, topt = optim.Adam(ours, lr=0.02, amsgrad=True), torch.optim.Adam(theirs, lr=0.02, amsgrad=True)
    loss, tloss = nn.CrossEntropyLoss(w, label_smoothing=0.1), torch.nn.CrossEntropyLoss(torch.tensor(w),
                                                                                          label_smoothing=0.1)
    for _ in range(20):
        opt.zero_grad()
        topt.zero_grad()
        loss(model(x), y).backward()
        tloss(net(torch.tensor(x)), torch.tensor(y)).backward()
        opt.step()
        topt.step()
    _assert_same(model, net)


@pytest.mark.parametrize("call, match", [
    (lambda: F.cross_entropy(Z, Y, W), r"reduction must be .*give them as cross_entropy\(\.\.\., weight=w\)"),
    (lambda: F.cross_entropy(Z, Y, weight=W[:3]), r"class weights of shape \(4,\).*weight of shape \(3,\)"),
    (lambda: F.cross_entropy(Z, Y, label_smoothing=1.5), r"label_smoothing must be a number in \[0, 1\].*1.5"),
    (lambda: F.nll_loss(Z, Y, weight=np.ones((4, 1))), r"nll_loss: Expect: class weights of shape \(4,\)"),
    (lambda: F.binary_cross_entropy_with_logits(Z, P, pos_weight=np.ones(5)),
     r"pos_weight broadcastable to the logits' shape \(6, 5, 4\).*\(5,\)"),
])
def test_bad_loss_options_are_refused_by_name(call, match):
    with pytest.raises(ad.AutogradDagError, match=match):
        call()
