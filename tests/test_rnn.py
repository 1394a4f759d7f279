"""Recurrent networks (seed 001 §4.7): every cell against its published equations written out in numpy,
every setup's forward pass against a numpy unrolling, every pooling, gradient checks with respect to
inputs and parameters, teacher forcing, the decoding interface, long sequences and name scopes."""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn
from autograd_dag.nn import functional as F

RNG = np.random.default_rng(2024)


def rand(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


def params(module):
    return {name: p.value for name, p in module.named_parameters()}


def check_module(module, *inputs, fixed=(), **kw):
    """ad.check_grads of module(*inputs, *fixed) with respect to the inputs and every parameter."""
    names = [n for n, _ in module.named_parameters()]
    values = [p.value for _, p in module.named_parameters()]
    k = len(inputs)

    def f(*args):
        return nn.functional_call(module, dict(zip(names, args[k:])), *args[:k], *fixed)
    f.__name__ = type(module).__name__
    ad.check_grads(f, (*inputs, *values), **kw)


def randomize(module, scale=0.5):
    """Nonzero values everywhere (z₀, start vectors and biases start at zero)."""
    for p in module.parameters():
        p.value = rand(*p.shape, scale=scale)
    return module


# ------------------------------------------------- the published equations in numpy

def sigma(u):
    return 1.0 / (1.0 + np.exp(-u))


def np_mlp_cell(P, x, z):
    """The book: z' = tanh(W₂ tanh(W₁ [x; z] + b₁) + b₂)."""
    W1 = np.concatenate([P["input_weight"], P["state_weight"]], axis=1)
    hidden = np.tanh(np.concatenate([x, z], axis=-1) @ W1.T + P["bias"])
    return np.tanh(hidden @ P["output_layer.weight"].T + P["output_layer.bias"])


def np_elman_cell(P, x, h, act=np.tanh):
    return act(x @ P["weight_ih"].T + P["bias_ih"] + h @ P["weight_hh"].T + P["bias_hh"])


def np_gru_cell(P, x, h):
    """PyTorch's GRUCell documentation, gate by gate."""
    W_ir, W_iz, W_in = np.split(P["weight_ih"], 3)
    W_hr, W_hz, W_hn = np.split(P["weight_hh"], 3)
    b_ir, b_iz, b_in = np.split(P["bias_ih"], 3)
    b_hr, b_hz, b_hn = np.split(P["bias_hh"], 3)
    r = sigma(x @ W_ir.T + b_ir + h @ W_hr.T + b_hr)
    z = sigma(x @ W_iz.T + b_iz + h @ W_hz.T + b_hz)
    n = np.tanh(x @ W_in.T + b_in + r * (h @ W_hn.T + b_hn))
    return (1 - z) * n + z * h


def np_lstm_cell(P, x, state):
    """PyTorch's LSTMCell documentation; the state is [h; c]."""
    h, c = np.split(state, 2, axis=-1)
    W_ii, W_if, W_ig, W_io = np.split(P["weight_ih"], 4)
    W_hi, W_hf, W_hg, W_ho = np.split(P["weight_hh"], 4)
    b_ii, b_if, b_ig, b_io = np.split(P["bias_ih"], 4)
    b_hi, b_hf, b_hg, b_ho = np.split(P["bias_hh"], 4)
    i = sigma(x @ W_ii.T + b_ii + h @ W_hi.T + b_hi)
    f = sigma(x @ W_if.T + b_if + h @ W_hf.T + b_hf)
    g = np.tanh(x @ W_ig.T + b_ig + h @ W_hg.T + b_hg)
    o = sigma(x @ W_io.T + b_io + h @ W_ho.T + b_ho)
    c2 = f * c + i * g
    return np.concatenate([o * np.tanh(c2), c2], axis=-1)


CELLS = {
    "mlp": (lambda d, h: nn.MLPCell(d, h, width=5, rng=0), np_mlp_cell),
    "elman": (lambda d, h: nn.ElmanCell(d, h, rng=0), np_elman_cell),
    "gru": (lambda d, h: nn.GRUCell(d, h, rng=0), np_gru_cell),
    "lstm": (lambda d, h: nn.LSTMCell(d, h, rng=0), np_lstm_cell),
}


def sub(P, prefix):
    return {k[len(prefix):]: v for k, v in P.items() if k.startswith(prefix)}


def np_unroll(cell_fn, P, xs, z0):
    """[z_1..z_L] of z_l = g(x_l, z_{l-1}) for a batch xs (B, L, D)."""
    z, states = np.broadcast_to(z0, (xs.shape[0], z0.shape[-1])), []
    for l in range(xs.shape[1]):
        z = cell_fn(P, xs[:, l], z)
        states.append(z)
    return states


def hidden(states, kind, H):
    return [z[:, :H] for z in states] if kind == "lstm" else list(states)


def np_pool(hs, pooling):
    a = np.stack(hs, axis=1)
    return {"last": a[:, -1], "mean": a.mean(axis=1), "max": a.max(axis=1)}[pooling]


# ------------------------------------------------------------------------ cells


@pytest.mark.parametrize("kind", CELLS)
def test_cell_matches_its_equations(kind):
    make, ref = CELLS[kind]
    cell = randomize(make(3, 4))
    x, z = rand(5, 3), rand(5, cell.state_size, scale=0.5)
    np.testing.assert_allclose(cell(x, z).value, ref(params(cell), x, z), rtol=1e-12, atol=1e-14)


def test_elman_relu_and_pytorch_parameter_layout():
    cell = randomize(nn.ElmanCell(3, 4, nonlinearity="relu", rng=0))
    x, h = rand(5, 3), rand(5, 4)
    np.testing.assert_allclose(cell(x, h).value, np_elman_cell(params(cell), x, h, lambda u: np.maximum(u, 0)),
                               rtol=1e-12)
    gru, lstm = nn.GRUCell(3, 4, rng=0), nn.LSTMCell(3, 4, rng=0)
    assert [(n, p.shape) for n, p in gru.named_parameters()] == [
        ("weight_ih", (12, 3)), ("weight_hh", (12, 4)), ("bias_ih", (12,)), ("bias_hh", (12,))]
    assert lstm.weight_ih.shape == (16, 3) and lstm.state_size == 8 and lstm.hidden_size == 4
    bound = 1 / np.sqrt(4)  # PyTorch's U(-1/√H, 1/√H)
    assert all(np.abs(p.value).max() <= bound for p in lstm.parameters())
    with pytest.raises(ad.AutogradDagError, match="nonlinearity"):
        nn.ElmanCell(3, 4, nonlinearity="sigmoid")


@pytest.mark.parametrize("kind", CELLS)
def test_cell_gradients_inputs_state_parameters(kind):
    make, _ = CELLS[kind]
    cell = randomize(make(3, 2))
    check_module(cell, rand(2, 3), rand(2, cell.state_size, scale=0.5))


def test_cell_second_order_gradients_on_a_tiny_case():
    for cell in (nn.GRUCell(2, 2, rng=1), nn.LSTMCell(1, 1, rng=1), nn.MLPCell(1, 2, width=2, rng=1)):
        randomize(cell)
        check_module(cell, rand(1, cell.input_size), rand(1, cell.state_size, scale=0.5), order=2)


def test_setups_second_order_gradients_on_tiny_cases():
    check_module(randomize(nn.SequenceToVector(nn.ElmanCell(1, 1, rng=0), pooling="mean")), rand(1, 2, 1), order=2)
    model = randomize(nn.EncoderDecoder(nn.ElmanCell(1, 1, rng=0), nn.ElmanCell(1 + 2, 1, rng=1), vocab_size=2,
                                        eos=1, rng=2))
    check_module(model, rand(1, 2, 1), fixed=(np.array([[0, 1]]),), order=2)


def test_make_cell_and_shape_errors():
    assert isinstance(nn.make_cell("lstm", 3, 4, rng=0), nn.LSTMCell)
    cell = nn.make_cell("gru", 3, 4, rng=0)
    assert nn.make_cell(cell, 0, 0) is cell
    with pytest.raises(ad.AutogradDagError, match="unknown cell 'conv'"):
        nn.make_cell("conv", 3, 4)
    with pytest.raises(ad.ShapeError, match=r"GRUCell: Expect: input \(batch, 3\). Actual: shape \(2, 5\)"):
        cell(np.ones((2, 5)), np.zeros((2, 4)))
    with pytest.raises(ad.ShapeError, match=r"state \(batch, 4\)"):
        cell(np.ones((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ad.ShapeError, match=r"\(batch, length, 3\). Actual: shape \(2, 3\)"):
        nn.RNN(cell)(np.ones((2, 3)))

# ------------------------------------------------------------------------ setups


@pytest.mark.parametrize("kind", CELLS)
def test_rnn_unrolls_from_the_learnable_initial_state(kind):
    make, ref = CELLS[kind]
    rnn = randomize(nn.RNN(make(3, 4)))
    xs = rand(2, 6, 3)
    P = params(rnn)
    states = np_unroll(ref, sub(P, "cell."), xs, P["z0"])
    np.testing.assert_allclose(rnn(xs).value, np.stack(hidden(states, kind, 4), axis=1), rtol=1e-12)
    z0 = rand(2, rnn.cell.state_size)
    states = np_unroll(ref, sub(P, "cell."), xs, z0)
    np.testing.assert_allclose(rnn(xs, z0=z0).value, np.stack(hidden(states, kind, 4), axis=1), rtol=1e-12)


@pytest.mark.parametrize("pooling", ["last", "mean", "max"])
@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_sequence_to_vector_each_pooling(kind, pooling):
    make, ref = CELLS[kind]
    model = randomize(nn.SequenceToVector(make(3, 4), pooling=pooling, head=nn.Linear(4, 2, rng=0)))
    xs = rand(5, 7, 3)
    P = params(model)
    states = np_unroll(ref, sub(P, "encoder.cell."), xs, P["encoder.z0"])
    pooled = np_pool(hidden(states, kind, 4), pooling)
    np.testing.assert_allclose(model.encode(xs).value, pooled, rtol=1e-12)
    np.testing.assert_allclose(model(xs).value, pooled @ P["head.weight"].T + P["head.bias"], rtol=1e-12)
    check_module(nn.SequenceToVector(randomize(make(2, 2)), pooling=pooling), rand(2, 3, 2))


def test_pool_function_and_errors():
    hs = [ad.Tensor([[1.0, 4.0]]), ad.Tensor([[3.0, 2.0]])]
    assert nn.pool(hs, "max").value.tolist() == [[3.0, 4.0]]
    assert nn.pool(hs, "mean").value.tolist() == [[2.0, 3.0]]
    assert nn.pool(ad.stack(hs, axis=1), "last").value.tolist() == [[3.0, 2.0]]
    with pytest.raises(ad.AutogradDagError, match="pooling must be one of"):
        nn.SequenceToVector(nn.ElmanCell(2, 2), pooling="sum")


def test_aligned_sequence_to_sequence():
    model = randomize(nn.SequenceToSequence(nn.LSTMCell(3, 4, rng=0), head=nn.Linear(4, 5, rng=1)))
    xs = rand(2, 6, 3)
    P = params(model)
    hs = np.stack(hidden(np_unroll(np_lstm_cell, sub(P, "encoder.cell."), xs, P["encoder.z0"]), "lstm", 4), 1)
    np.testing.assert_allclose(model(xs).value, hs @ P["head.weight"].T + P["head.bias"], rtol=1e-12)
    check_module(randomize(nn.SequenceToSequence(nn.GRUCell(2, 2, rng=0), head=nn.Linear(2, 2, rng=0))),
                 rand(2, 3, 2))


def test_vector_to_sequence_feeds_the_same_input_every_step():
    model = randomize(nn.VectorToSequence(nn.MLPCell(3, 4, width=6, rng=0), head=nn.Linear(4, 2, rng=1),
                                          length=5))
    x = rand(3, 3)
    P = params(model)
    z, ps = np.broadcast_to(P["decoder.z0"], (3, 4)), []
    for _ in range(5):
        z = np_mlp_cell(sub(P, "decoder.cell."), x, z)
        ps.append(z @ P["head.weight"].T + P["head.bias"])
    np.testing.assert_allclose(model(x).value, np.stack(ps, axis=1), rtol=1e-12)
    assert model(x, length=2).shape == (3, 2, 2)
    check_module(randomize(nn.VectorToSequence(nn.ElmanCell(2, 2, rng=0), length=3)), rand(2, 2))
    with pytest.raises(ad.ShapeError, match=r"VectorToSequence: Expect: input vectors \(batch, 3\)"):
        model(np.ones((2, 4, 3)))


def np_encoder_decoder(P, kind_enc, kind_dec, source, target, vocab, H, pooling):
    """Logits of §4.7.4 with teacher forcing: c = pooling(encoder), decoder fed [c; one-hot(previous)]."""
    enc_fn, dec_fn = CELLS[kind_enc][1], CELLS[kind_dec][1]
    c = np_pool(hidden(np_unroll(enc_fn, sub(P, "encoder.cell."), source, P["encoder.z0"]), kind_enc, H), pooling)
    B, L = target.shape
    z = np.broadcast_to(P["decoder.z0"], (B, P["decoder.z0"].shape[0]))
    logits = []
    for l in range(L):
        prev = np.broadcast_to(P["start"], (B, vocab)) if l == 0 else np.eye(vocab)[target[:, l - 1]]
        z = dec_fn(sub(P, "decoder.cell."), np.concatenate([c, prev], axis=-1), z)
        h = z[:, :H] if kind_dec == "lstm" else z
        logits.append(h @ P["head.weight"].T + P["head.bias"])
    return np.stack(logits, axis=1)


@pytest.mark.parametrize("kinds,pooling", [(("gru", "gru"), "last"), (("lstm", "elman"), "mean"),
                                           (("elman", "lstm"), "max")])
def test_encoder_decoder_teacher_forcing_matches_numpy(kinds, pooling):
    V, H = 4, 3
    enc, dec = CELLS[kinds[0]][0](5, H), CELLS[kinds[1]][0](H + V, H)
    model = randomize(nn.EncoderDecoder(enc, dec, vocab_size=V, eos=V - 1, pooling=pooling, rng=0))
    source, target = rand(3, 4, 5), RNG.integers(0, V, size=(3, 6))
    ref = np_encoder_decoder(params(model), *kinds, source, target, V, H, pooling)
    np.testing.assert_allclose(model(source, target).value, ref, rtol=1e-11)
    # the loss: cross-entropy averaged over batch and positions
    log_p = ref - np.log(np.exp(ref).sum(-1, keepdims=True))
    expected = -np.take_along_axis(log_p, target[..., None], -1).mean()
    np.testing.assert_allclose(model.loss(source, target).value, expected, rtol=1e-12)


def test_encoder_decoder_gradients_and_loss_gradients():
    V = 3
    model = randomize(nn.EncoderDecoder(nn.GRUCell(2, 2, rng=0), nn.ElmanCell(2 + V, 2, rng=1), vocab_size=V,
                                        eos=0, pooling="mean", rng=2))
    target = np.array([[1, 2, 0], [2, 2, 0]])
    check_module(model, rand(2, 3, 2), fixed=(target,))
    names = [n for n, _ in model.named_parameters()]
    assert "start" in names and "decoder.z0" in names and "encoder.z0" in names
    # every parameter, the start vector and both z₀ included, receives a nonzero gradient from the loss
    model.loss(rand(2, 3, 2), target).backward()
    assert all(np.abs(p.grad.value).max() > 0 for p in model.parameters())


def test_teacher_forcing_feeds_the_true_previous_token_and_step_agrees():
    V = 5
    model = randomize(nn.EncoderDecoder(nn.LSTMCell(3, 4, rng=0), nn.GRUCell(4 + V, 4, rng=1), vocab_size=V,
                                        eos=4, rng=2))
    source = rand(1, 3, 3)
    target = np.array([[2, 0, 1, 4]])
    logits = model(source, target).value[0]
    # Position l depends on target[:l] only: changing a later token leaves earlier logits alone.
    changed = target.copy()
    changed[0, 2] = 3
    other = model(source, changed).value[0]
    np.testing.assert_allclose(other[:3], logits[:3], rtol=1e-13)
    assert not np.allclose(other[3], logits[3])
    # Stepping the decoder with the true tokens reproduces the teacher-forced logits.
    state, token, stepped = model.start_state(source[0]), model.bos, []
    for t in target[0]:
        out, state = model.step(state, token)
        stepped.append(out)
        token = t
    np.testing.assert_allclose(np.array(stepped), logits, rtol=1e-12)
    with pytest.raises(ad.AutogradDagError, match="token 9"):
        model.step(state, 9)


def test_encoder_decoder_checks_sizes_and_tokens():
    with pytest.raises(ad.ShapeError, match=r"H_enc \+ vocab_size = 4 \+ 5 = 9.*Actual: input size 4"):
        nn.EncoderDecoder(nn.GRUCell(3, 4), nn.GRUCell(4, 4), vocab_size=5, eos=4)
    with pytest.raises(ad.AutogradDagError, match="eos must be a token in"):
        nn.EncoderDecoder(nn.GRUCell(3, 4), nn.GRUCell(9, 4), vocab_size=5, eos=5)
    model = nn.EncoderDecoder(nn.GRUCell(3, 4), nn.GRUCell(9, 4), vocab_size=5, eos=4)
    with pytest.raises(ad.ShapeError, match=r"target tokens in \[0, 5\)"):
        model(np.ones((1, 2, 3)), np.array([[7]]))
    with pytest.raises(ad.ShapeError, match="integer targets"):
        model(np.ones((1, 2, 3)), np.array([[0.5]]))


def test_trained_encoder_decoder_learns_to_copy_and_generates_with_eos():
    """A small copy task: teacher forcing drives the loss down, greedy and beam reproduce the source."""
    V, eos = 4, 3  # tokens 0..2 and eos
    model = nn.EncoderDecoder(nn.GRUCell(3, 16, rng=0), nn.GRUCell(16 + V, 16, rng=1), vocab_size=V,
                              eos=eos, rng=2)
    opt = ad.optim.Adam(model.parameters(), lr=0.03)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(150):
        seqs = rng.integers(0, 3, size=(16, 2))
        loss = model.loss(np.eye(3)[seqs], np.concatenate([seqs, np.full((16, 1), eos)], axis=1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.value))
    assert losses[-1] < 0.1 * losses[0]
    for seq in ([0, 1], [2, 2], [1, 0]):
        assert model.generate(np.eye(3)[seq], max_len=6) == seq
        assert model.generate(np.eye(3)[seq], max_len=6, method="beam", width=3) == seq

# ------------------------------------------------------------ long sequences, scopes


def test_ten_thousand_steps_train_and_differentiate_without_recursion():
    model = nn.SequenceToVector(nn.ElmanCell(1, 3, rng=0), pooling="mean", head=nn.Linear(3, 2, rng=0))
    opt = ad.optim.SGD(model.parameters(), lr=0.1)
    x = ad.Tensor(rand(1, 10_000, 1), requires_grad=True)
    loss = F.cross_entropy(model(x), np.array([1]))
    opt.zero_grad()
    loss.backward()
    assert x.grad.shape == (1, 10_000, 1) and np.all(np.isfinite(x.grad.value))
    assert np.abs(model.encoder.cell.weight_hh.grad.value).max() > 0
    before = float(loss.value)
    opt.step()
    with ad.no_grad():
        assert float(F.cross_entropy(model(x), np.array([1])).value) < before


def test_long_sequence_gradient_is_exact_through_the_joined_steps():
    """70 steps cut by ad.unstack, their cotangents joined in a recorded sweep: the gradient must still be exact."""
    cell = randomize(nn.ElmanCell(1, 2, rng=0))
    check_module(nn.SequenceToVector(cell, pooling="max"), rand(1, 70, 1, scale=0.3), modes=("rev",))


def test_each_step_records_in_its_own_name_scope():
    model = nn.EncoderDecoder(nn.GRUCell(2, 3, rng=0), nn.GRUCell(3 + 4, 3, rng=1), vocab_size=4, eos=3)
    program = ad.trace(lambda x: model.loss(x, np.array([[1, 2, 3]])), rand(1, 5, 2))
    scopes = {node.scope for node in program if not isinstance(node.op, ad.NodeKind)}
    assert {("encoder", f"step{l}") for l in range(5)} <= scopes
    assert {("decoder", f"step{l}") for l in range(3)} <= scopes
    assert ("encoder", "step5") not in scopes
    classifier = nn.SequenceToVector(nn.LSTMCell(2, 3, rng=0), pooling="max", head=nn.Linear(3, 2, rng=0))
    program = ad.trace(lambda x: classifier(x), rand(2, 4, 2))
    scopes = {node.scope for node in program}
    assert {("encoder", "step0"), ("encoder", "step3"), ("pooling",), ("head",)} <= scopes


@pytest.mark.parametrize("kind", ["elman", "gru", "lstm"])
def test_unrolled_cells_follow_pytorch(kind):
    """A hand loop over torch.nn.RNNCell / GRUCell / LSTMCell with the same weights and initial state."""
    torch = pytest.importorskip("torch")
    B, L, D, H = 3, 5, 4, 6
    cell = nn.make_cell(kind, D, H, rng=1)
    ref = {"elman": torch.nn.RNNCell, "gru": torch.nn.GRUCell, "lstm": torch.nn.LSTMCell}[kind](D, H, dtype=torch.float64)
    with torch.no_grad():
        for name, p in ref.named_parameters():
            p.copy_(torch.tensor(getattr(cell, name).value))
    model = nn.SequenceToVector(cell, pooling="mean")
    model.encoder.z0.value[...] = rand(cell.state_size)
    x, w = rand(B, L, D), rand(B, H)
    (model(x) * w).sum().backward()
    z0 = torch.tensor(model.encoder.z0.value, requires_grad=True)
    state = (z0[:H].expand(B, H), z0[H:].expand(B, H)) if kind == "lstm" else z0.expand(B, H)
    hs = []
    for l in range(L):
        state = ref(torch.tensor(x[:, l]), state)
        hs.append(state[0] if kind == "lstm" else state)
    (torch.stack(hs, 1).mean(1) * torch.tensor(w)).sum().backward()
    for name, p in ref.named_parameters():
        np.testing.assert_allclose(getattr(cell, name).grad.value, p.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model.encoder.z0.grad.value, z0.grad.numpy(), rtol=1e-10, atol=1e-12)
