"""Training as a PyTorch user does it, against torch.optim and torch.nn step by step (defect hunt 7)."""

import math

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


@pytest.mark.parametrize("name, kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                      ("Adam", dict(lr=0.01, weight_decay=0.1)),
                                      ("AdamW", dict(lr=0.01))])
def test_training_resumed_from_state_dicts_follows_the_uninterrupted_trajectory(name, kw):
    # Before, optimizers and schedulers had no state_dict: a resumed Adam restarted its moments and
    # bias correction (step 1 again), a different trajectory from the one PyTorch resumes on.
    torch = pytest.importorskip("torch")
    x, y = _batch()

    def train(model, opt, sched, steps):
        for _ in range(steps):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            sched.step()

    def fresh():
        model = nn.MLP([3, 5, 2], activation="tanh", rng=0)
        opt = getattr(optim, name)(model.parameters(), **kw)
        return model, opt, optim.StepLR(opt, 3, 0.5)

    model, opt, sched = fresh()
    net = _torch_mlp(model, torch)
    topt = getattr(torch.optim, name)(net.parameters(), **kw)
    tsched = torch.optim.lr_scheduler.StepLR(topt, 3, 0.5)
    train(model, opt, sched, 4)
    saved = model.state_dict(), opt.state_dict(), sched.state_dict()
    train(model, opt, sched, 4)
    model2, opt2, sched2 = fresh()
    model2.load_state_dict(saved[0])
    opt2.load_state_dict(saved[1])
    sched2.load_state_dict(saved[2])
    train(model2, opt2, sched2, 4)
    for _ in range(8):
        topt.zero_grad()
        torch.nn.functional.cross_entropy(net(torch.tensor(x)), torch.tensor(y)).backward()
        topt.step()
        tsched.step()
    assert opt2.lr == opt.lr == tsched.get_last_lr()[0]
    for a, b, t in zip(model.parameters(), model2.parameters(), net.parameters()):
        np.testing.assert_array_equal(b.value, a.value)  # the same operations on the same numbers
        # against PyTorch: float64, 8 steps of the same formulas, rounding differences only
        np.testing.assert_allclose(b.value, t.detach().numpy(), rtol=1e-11, atol=1e-12)


def test_optimizer_state_of_another_shape_is_refused_before_anything_is_taken():
    a, b = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(3))
    opt = optim.Adam([a, b], lr=0.1)
    a.grad, b.grad = ad.Tensor(np.ones(2)), ad.Tensor(np.ones(3))
    opt.step()
    other = optim.Adam([nn.Parameter(np.ones(3)), nn.Parameter(np.ones(3))], lr=0.5)
    with pytest.raises(ad.AutogradDagError, match=r"state 'm' of parameter 0 has shape \(2,\).*\(3,\)"):
        other.load_state_dict(opt.state_dict())
    assert other.state == [{}, {}] and other.lr == 0.5


def test_cosine_schedule_ends_at_min_lr_at_step_total_also_when_the_warmup_fills_it():
    # warmup = total = 4: steps 0..3 warm up to base_lr; step 4 is past the schedule. Before it was
    # base_lr (1.0) and only step 5 min_lr, one step later than with any shorter warm-up.
    lrs = [optim.cosine_schedule(s, 4, 1.0, 0.1, warmup=4) for s in range(7)]
    assert lrs == [0.25, 0.5, 0.75, 1.0, 0.1, 0.1, 0.1]
    assert [optim.cosine_schedule(s, 5, 1.0, 0.1, warmup=4) for s in (3, 4, 5, 9)] == [1.0, 1.0, 0.1, 0.1]
    p = nn.Parameter(np.zeros(1))
    sched = optim.CosineAnnealingLR(optim.SGD([p], lr=2.0), T_max=3, eta_min=0.5, warmup=3)
    assert [sched.step() for _ in range(4)] == [2.0 * 2 / 3, 2.0, 0.5, 0.5]  # before: [.., 2.0, 2.0, 0.5]


def _npy(descr: str, shape: tuple, payload: bytes) -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".ljust(117) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + payload


def test_an_array_cut_short_in_a_saved_file_is_called_truncated_not_pickled(tmp_path):
    # A weight whose header promises 6 float64 but holds 2: before, "a pickled object array ...
    # refusing to unpickle it", which sends the user looking for pickle in a file of plain floats.
    import zipfile
    path = tmp_path / "short.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("weight.npy", _npy("<f8", (2, 3), bytes(16)))
        archive.writestr("bias.npy", _npy("<f8", (2,), bytes(16)))
    with pytest.raises(ad.SerializationError, match="key 'weight' is truncated or corrupt") as caught:
        nn.Linear(3, 2).load(path)
    assert "pickle" not in str(caught.value)
    with zipfile.ZipFile(tmp_path / "objects.npz", "w") as archive:   # a real object array: still named so
        archive.writestr("weight.npy", _npy("|O", (2, 3), b"\x80\x04N."))
    with pytest.raises(ad.SerializationError, match="pickled object array"):
        nn.Linear(3, 2).load(tmp_path / "objects.npz")


def test_embedding_outputs_a_loaded_padding_row_as_pytorch_and_sends_it_no_gradient():
    # A table from a trained model (or tied to an output matrix) has a nonzero padding row:
    # PyTorch looks it up and only stops its gradient. Before, the lookup was masked to zeros.
    torch = pytest.importorskip("torch")
    emb = nn.Embedding(6, 3, padding_idx=2, rng=0)
    ref = torch.nn.Embedding(6, 3, padding_idx=2, dtype=torch.float64)
    table = np.random.default_rng(3).standard_normal((6, 3))      # row 2 nonzero, as loaded
    emb.load_state_dict({"weight": table})
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(table))
    ids = np.array([[2, 1, 1], [5, 2, 0]])
    g = np.random.default_rng(4).standard_normal((2, 3, 3))
    tout = ref(torch.tensor(ids))
    (tout * torch.tensor(g)).sum().backward()
    for given in (ids, ad.Tensor(ids)):     # an ndarray, and a Tensor (a jit input's path)
        emb.zero_grad()
        out = emb(given)
        (out * g).sum().backward()
        np.testing.assert_array_equal(out.value, tout.detach().numpy())   # a lookup: exact
        # sums of the same few products: rounding differences only
        np.testing.assert_allclose(emb.weight.grad.value, ref.weight.grad.numpy(), rtol=1e-14, atol=1e-15)
        assert not emb.weight.grad.value[2].any()
    lookup = ad.jit(lambda i: emb(i))
    lookup(np.array([0, 1]))
    np.testing.assert_array_equal(lookup(np.array([2, 2])), table[[2, 2]])   # the traced program too


@pytest.mark.parametrize("norm_type, max_norm", [(2.0, 0.5), (1.0, 0.3), (float("inf"), 0.05), (2.0, 1e3)])
def test_clip_grad_norm_scales_all_gradients_by_their_total_norm_as_pytorch(norm_type, max_norm):
    # Before, there was no gradient clipping: a PyTorch training loop's clip_grad_norm_ had no counterpart.
    torch = pytest.importorskip("torch")
    model = nn.MLP([3, 5, 2], activation="tanh", rng=0)
    net = _torch_mlp(model, torch)
    x, y = _batch()
    nn.functional.cross_entropy(model(x), y).backward()
    torch.nn.functional.cross_entropy(net(torch.tensor(x)), torch.tensor(y)).backward()
    model.layers[1].bias.grad = None          # skipped by both
    net[2].bias.grad = None
    total = optim.clip_grad_norm_(model.parameters(), max_norm, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm, norm_type)
    # norms of a few dozen float64 entries, summed in another order: rounding differences only
    assert math.isclose(total, float(ttotal), rel_tol=1e-13)
    for p, t in zip(model.parameters(), net.parameters()):
        assert (p.grad is None) == (t.grad is None)
        if p.grad is not None:
            np.testing.assert_allclose(p.grad.value, t.grad.numpy(), rtol=1e-13, atol=1e-16)


def test_clipping_gradients_that_share_one_array_scales_each_once():
    a, b = nn.Parameter(np.ones(3)), nn.Parameter(np.ones(3))
    (a + b).sum().backward()                  # both gradients may be one array
    total = optim.clip_grad_norm_([a, b], 1.0)
    assert math.isclose(total, math.sqrt(6.0), rel_tol=1e-15)
    scale = 1.0 / (math.sqrt(6.0) + 1e-6)
    np.testing.assert_allclose(a.grad.value, scale, rtol=1e-15)
    np.testing.assert_allclose(b.grad.value, scale, rtol=1e-15)
    a.grad, b.grad = ad.Tensor(np.array([3.0, -0.2, -7.0])), None
    optim.clip_grad_value_([a, b], 0.5)
    np.testing.assert_array_equal(a.grad.value, [0.5, -0.2, -0.5])
    assert b.grad is None


def test_module_requires_grad_apply_and_zero_grad_to_zeros_as_pytorch():
    # Before: Module had no requires_grad_ nor apply (AttributeError), and zero_grad(set_to_none=False)
    # was a TypeError. Zeros, unlike None, are a gradient: SGD with momentum keeps moving the parameter.
    torch = pytest.importorskip("torch")
    model = nn.MLP([3, 5, 2], activation="tanh", rng=0)
    net = _torch_mlp(model, torch)
    assert model.layers[0].requires_grad_(False) is model.layers[0]
    net[0].requires_grad_(False)
    assert [p.requires_grad for p in model.parameters()] == [p.requires_grad for p in net.parameters()]
    seen, tseen = [], []
    nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Sequential(nn.Linear(2, 2), nn.ReLU())).apply(
        lambda m: seen.append(type(m).__name__))
    torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh(), torch.nn.Sequential(
        torch.nn.Linear(2, 2), torch.nn.ReLU())).apply(lambda m: tseen.append(type(m).__name__))
    assert seen == tseen == ["Linear", "Tanh", "Linear", "ReLU", "Sequential", "Sequential"]
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    x, y = _batch()
    for step in range(3):
        if step:   # after the first step: zeros, not None
            opt.zero_grad(set_to_none=False)
            topt.zero_grad(set_to_none=False)
        if step < 2:
            nn.functional.cross_entropy(model(x), y).backward()
            torch.nn.functional.cross_entropy(net(torch.tensor(x)), torch.tensor(y)).backward()
        opt.step()
        topt.step()
    for p, t in zip(model.parameters(), net.parameters()):
        # float64, 3 steps of the same formulas: rounding differences only
        np.testing.assert_allclose(p.value, t.detach().numpy(), rtol=1e-12, atol=1e-13)
    model.zero_grad(set_to_none=False)
    assert not model.layers[1].weight.grad.value.any() and model.layers[0].weight.grad is None


def test_a_parameter_group_without_params_is_refused_with_its_keys():
    # Parameter groups are supported now (tests/test_training_parity9.py); a dict without 'params' is not one.
    with pytest.raises(ad.AutogradDagError, match=r"a dict with the key 'params'.*keys \['lr'\]"):
        optim.SGD([{"lr": 0.1}], lr=0.01)
