"""Transformer models against a from-scratch numpy version of seed 000 (and of the decoder block of 003).

The numpy references read the parameters from ``state_dict()`` and follow the
seed's equations literally: one-hot I, W = (E·I)√|layer|, P as printed
(1-indexed), X⁰ = W + P, post-norm blocks, LayerNorm with ε under the square
root, FFN with relu, tied output E·X^L and softargmax over the vocabulary.
"""

import math

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn

RNG = np.random.default_rng(0)

# ------------------------------------------------------------ numpy seed 000


def np_softargmax(S, axis=-1):
    e = np.exp(S - S.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_layernorm(X, gamma, beta, eps=1e-5):
    mu = X.mean(-1, keepdims=True)
    var = ((X - mu) ** 2).mean(-1, keepdims=True)
    return (X - mu) / np.sqrt(var + eps) * gamma + beta


def np_positional(n, d):
    P = np.zeros((n, d))
    for p in range(1, n + 1):
        for i in range(1, d + 1):
            P[p - 1, i - 1] = (math.sin((p - 1) / 10000 ** ((i - 1) / d)) if i % 2 else
                               math.cos((p - 1) / 10000 ** ((i - 2) / d)))
    return P


def np_seed_mask(n):
    """M ∈ ℝ^{seq × seq'}: M[i, j] = 0 if i <= j else -inf (i a key, j a query)."""
    return np.array([[0.0 if i <= j else -np.inf for j in range(n)] for i in range(n)])


def np_att(X, Y, W_Q, W_K, W_V, W_O, M_keys_by_queries=None):
    """Y_out = W_O ·_{heads,val} softargmax_seq((Q ⊙_key K)/√|key| + M) ⊙_seq V, by einsum over named axes."""
    Q = np.einsum("hlk,ql->hqk", W_Q, X)          # queries on seq'
    K = np.einsum("hlk,sl->hsk", W_K, Y)          # keys on seq
    V = np.einsum("hlv,sl->hsv", W_V, Y)
    S = np.einsum("hqk,hsk->hsq", Q, K) / math.sqrt(W_Q.shape[-1])   # (heads, seq, seq')
    if M_keys_by_queries is not None:
        S = S + M_keys_by_queries
    A = np_softargmax(S, axis=1)                  # softargmax over seq (the keys)
    H = np.einsum("hsq,hsv->hqv", A, V)
    return np.einsum("hvl,hqv->ql", W_O, H)


def np_ffn(X, W1, b1, W2, b2):
    return np.maximum(X @ W1.T + b1, 0) @ W2.T + b2


def np_transformer_lm(state, tokens, vocab, layers):
    """Seed 000's O for one sequence of token indices."""
    E = state["E"]
    d = E.shape[1]
    n = len(tokens)
    I = np.eye(vocab)[tokens]                      # (seq, vocab) one-hot
    X = (I @ E) * math.sqrt(d) + np_positional(n, d)
    for l in range(layers):
        s = lambda name: state[f"block.{l}.{name}"]  # noqa: E731
        T = np_layernorm(np_att(X, X, s("attention.W_Q"), s("attention.W_K"), s("attention.W_V"),
                                s("attention.W_O"), np_seed_mask(n)) + X, s("norm1.gamma"), s("norm1.beta"))
        X = np_layernorm(np_ffn(T, s("ffn.W1"), s("ffn.b1"), s("ffn.W2"), s("ffn.b2")) + T,
                         s("norm2.gamma"), s("norm2.beta"))
    return np_softargmax(X @ E.T, axis=-1)


def randomise(model, rng, scale=0.5):
    """Give every parameter (LayerNorm γ, β and biases too) random values, so each one is tested."""
    for p in model.parameters():
        p.value[...] = p.value + scale * rng.normal(size=p.shape)
    return model

# ----------------------------------------------------------------- tests


def test_transformer_lm_matches_numpy_seed_000():
    vocab, layers = 11, 2
    lm = randomise(nn.TransformerLM(vocab, d_model=8, heads=2, hidden=12, layers=layers, rng=0), RNG)
    tokens = np.array([[3, 1, 4, 1, 5, 9, 2], [6, 5, 3, 5, 8, 9, 7]])
    O = lm(tokens).value
    state = lm.state_dict()
    for b in range(2):
        np.testing.assert_allclose(O[b], np_transformer_lm(state, tokens[b], vocab, layers), rtol=1e-10,
                                   atol=1e-12)
    np.testing.assert_allclose(O.sum(-1), 1.0)
    # The one-hot input I of the seed gives the same result as indices.
    np.testing.assert_allclose(lm(np.eye(vocab)[tokens]).value, O, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(lm(tokens[0]).value, O[0], rtol=1e-12, atol=1e-14)


def test_transformer_lm_parameter_names_and_shapes_follow_the_seed():
    lm = nn.TransformerLM(13, d_model=12, heads=3, hidden=20, layers=2, rng=0)
    shapes = {k: v.shape for k, v in lm.state_dict().items()}
    expected = {"E": (13, 12)}
    for l in range(2):
        expected.update({
            f"block.{l}.attention.W_Q": (3, 12, 4), f"block.{l}.attention.W_K": (3, 12, 4),
            f"block.{l}.attention.W_V": (3, 12, 4), f"block.{l}.attention.W_O": (3, 4, 12),
            f"block.{l}.norm1.gamma": (12,), f"block.{l}.norm1.beta": (12,),
            f"block.{l}.ffn.W1": (20, 12), f"block.{l}.ffn.b1": (20,),
            f"block.{l}.ffn.W2": (12, 20), f"block.{l}.ffn.b2": (12,),
            f"block.{l}.norm2.gamma": (12,), f"block.{l}.norm2.beta": (12,)})
    assert shapes == expected


def test_transformer_lm_is_causal():
    lm = nn.TransformerLM(7, d_model=8, heads=2, hidden=8, layers=2, rng=1)
    a = lm.logits(np.array([[1, 2, 3, 4, 5]])).value
    b = lm.logits(np.array([[1, 2, 3, 6, 0]])).value
    np.testing.assert_allclose(a[0, :3], b[0, :3], atol=1e-13)
    assert not np.allclose(a[0, 3], b[0, 3])


def test_logits_wraps_a_model_whose_forward_gives_probabilities():
    lm = nn.TransformerLM(7, d_model=8, heads=2, hidden=8, layers=1, rng=1)
    tokens = np.array([[1, 2, 3, 4]])
    wrapped = nn.Logits(lm)
    # The same parameters, under "inner.": functional_call with a new table changes the scores.
    assert [k for k, _ in wrapped.named_parameters()] == ["inner." + k for k, _ in lm.named_parameters()]
    assert np.array_equal(wrapped(tokens).value, lm.logits(tokens).value)
    E = lm.E.value * 2
    with_e = nn.functional_call(wrapped, {"inner.E": E}, tokens).value
    lm.E.value = E
    assert np.array_equal(with_e, lm.logits(tokens).value)
    with pytest.raises(ad.AutogradDagError, match="Logits: Expect: a model with a logits method. Actual: Linear"):
        nn.Logits(nn.Linear(2, 2, rng=0))


def test_feedforward_and_block_match_numpy():
    ffn = randomise(nn.FeedForward(4, 6, rng=0), RNG)
    X = RNG.normal(size=(2, 3, 4))
    p = ffn.state_dict()
    np.testing.assert_allclose(ffn(X).value, np_ffn(X, p["W1"], p["b1"], p["W2"], p["b2"]), atol=1e-12)
    block = randomise(nn.TransformerBlock(4, 2, 6, rng=1), RNG)
    s = block.state_dict()
    X = RNG.normal(size=(5, 4))
    T = np_layernorm(np_att(X, X, s["attention.W_Q"], s["attention.W_K"], s["attention.W_V"], s["attention.W_O"],
                            np_seed_mask(5)) + X, s["norm1.gamma"], s["norm1.beta"])
    ref = np_layernorm(np_ffn(T, s["ffn.W1"], s["ffn.b1"], s["ffn.W2"], s["ffn.b2"]) + T, s["norm2.gamma"],
                       s["norm2.beta"])
    np.testing.assert_allclose(block(X, mask=nn.causal_mask(5)).value, ref, rtol=1e-10, atol=1e-12)


def test_feedforward_keeps_one_hidden_array():
    # The recorded graph holds each node's value until backward: relu(linear(·)) held the
    # pre-activation and the activation, two arrays of (rows, hidden); one primitive holds one.
    ffn = nn.FeedForward(4, 7, rng=0)
    out = ffn(RNG.normal(size=(2, 3, 4)))
    seen, stack, hidden = set(), [out], 0
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        hidden += t.shape == (6, 7) and t.prim is not None
        stack.extend(t.parents or ())
    assert hidden == 1
    p = ffn.state_dict()
    X = RNG.normal(size=(5, 4))
    g = ad.grad(lambda x: ad.sum(ffn(x) ** 2))(X)  # against the formula with the kept pre-activation
    h_pre = X @ p["W1"].T + p["b1"]
    dy = 2 * np_ffn(X, p["W1"], p["b1"], p["W2"], p["b2"])
    np.testing.assert_allclose(g, ((dy @ p["W2"]) * (h_pre > 0)) @ p["W1"], rtol=1e-12)


class _Call(nn.Module):
    """``call(model, *inputs)`` as a module, so functional_call can swap the model's parameters."""

    def __init__(self, model, call):
        super().__init__()
        self.model = model
        self.call = call

    def forward(self, *inputs):
        return self.call(self.model, *inputs)


def _check_module_grads(module, args, call, order=1):
    """check_grads of ``call(module, *args)`` with respect to the inputs and every parameter."""
    wrapper = _Call(module, call)
    names = [n for n, _ in wrapper.named_parameters()]

    def f(*xs):
        inputs, params = xs[:len(args)], xs[len(args):]
        return nn.functional_call(wrapper, dict(zip(names, params)), *inputs)
    ad.check_grads(f, tuple(args) + tuple(p.value for p in wrapper.parameters()), order=order)


def test_check_grads_feedforward_block_and_lm():
    _check_module_grads(randomise(nn.FeedForward(3, 4, rng=0), RNG), [RNG.normal(size=(2, 3))],
                        lambda m, x: m(x), order=2)
    block = randomise(nn.TransformerBlock(4, 2, 5, rng=1), RNG)
    _check_module_grads(block, [RNG.normal(size=(2, 3, 4))], lambda m, x: m(x, mask=nn.causal_mask(3)))
    tiny = randomise(nn.TransformerBlock(2, 1, 2, rng=2), RNG)
    _check_module_grads(tiny, [RNG.normal(size=(2, 2))], lambda m, x: m(x, mask=nn.causal_mask(2)), order=2)
    lm = randomise(nn.TransformerLM(5, d_model=4, heads=2, hidden=6, layers=2, rng=3), RNG, 0.2)
    tokens = np.array([[1, 2, 0, 4]])
    _check_module_grads(lm, [], lambda m: nn.functional.cross_entropy(m.logits(tokens)[:, :-1], tokens[:, 1:]))
    # With respect to the one-hot input too (the seed's I).
    _check_module_grads(lm, [np.eye(5)[tokens]], lambda m, I: m(I))


def test_lm_step_agrees_with_the_full_forward_pass_and_states_branch():
    lm = randomise(nn.TransformerLM(9, d_model=8, heads=2, hidden=10, layers=3, rng=4), RNG, 0.2)
    tokens = np.array([2, 7, 1, 8, 2, 8])
    full = lm.logits(tokens[None]).value[0]
    state = lm.start_state()
    for t, token in enumerate(tokens):
        logits, state = lm.step(state, token)
        assert logits.shape == (9,)
        np.testing.assert_allclose(logits, full[t], rtol=1e-10, atol=1e-12)
    # A state is not modified by stepping from it: two branches from one prefix.
    prefix = lm.start_state(tokens[:3])
    a, _ = lm.step(prefix, 5)
    b, _ = lm.step(prefix, 6)
    a2, _ = lm.step(prefix, 5)
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_allclose(b, lm.logits(np.array([[2, 7, 1, 6]])).value[0, -1], atol=1e-12)
    assert not ad.is_recording() or True  # step leaves recording as it was
    assert ad.is_recording()


def test_step_records_nothing():
    lm = nn.TransformerLM(5, d_model=4, heads=1, hidden=4, layers=1, rng=0)
    logits, state = lm.step(lm.start_state(), 3)
    assert isinstance(logits, np.ndarray)
    k, v = state.caches[0]
    assert k.parents == () and v.parents == ()

# ------------------------------------------------------------- encoder (BERT)


def test_encoder_padding_mask_hides_padded_keys():
    enc = randomise(nn.TransformerEncoder(6, heads=2, hidden=8, layers=2, rng=0), RNG, 0.3)
    X = RNG.normal(size=(1, 5, 6))
    Y = X.copy()
    Y[0, 3:] = RNG.normal(size=(2, 6))        # only the padded positions change
    mask = np.array([[True, True, True, False, False]])
    np.testing.assert_allclose(enc(X, padding_mask=mask).value[0, :3], enc(Y, padding_mask=mask).value[0, :3],
                               atol=1e-12)
    # Without a mask every position sees every other (bidirectional).
    assert not np.allclose(enc(X).value[0, 0], enc(Y).value[0, 0])
    with pytest.raises(ad.ShapeError, match="every key masked"):
        enc(X, padding_mask=np.zeros((1, 5), bool))


def test_encoder_matches_numpy_and_gradients():
    enc = randomise(nn.TransformerEncoder(4, heads=2, hidden=5, layers=2, rng=1), RNG)
    s = enc.state_dict()
    X = RNG.normal(size=(4, 4))
    ref = X
    for l in range(2):
        g = lambda name: s[f"block.{l}.{name}"]  # noqa: E731
        T = np_layernorm(np_att(ref, ref, g("attention.W_Q"), g("attention.W_K"), g("attention.W_V"),
                                g("attention.W_O")) + ref, g("norm1.gamma"), g("norm1.beta"))
        ref = np_layernorm(np_ffn(T, g("ffn.W1"), g("ffn.b1"), g("ffn.W2"), g("ffn.b2")) + T, g("norm2.gamma"),
                           g("norm2.beta"))
    np.testing.assert_allclose(enc(X).value, ref, rtol=1e-10, atol=1e-12)
    mask = np.array([[True, True, False], [True, True, True]])
    _check_module_grads(enc, [RNG.normal(size=(2, 3, 4))], lambda m, x: m(x, padding_mask=mask))

# ------------------------------------------------------ encoder–decoder (003)


def np_encoder_decoder(model, source, target):
    s = model.state_dict()
    d = model.d_model

    def embed(E, tokens):
        return np.eye(E.shape[0])[tokens] @ E * math.sqrt(d) + np_positional(len(tokens), d)

    X = embed(s["E_source"], source)
    for l in range(len(model.encoder.block)):
        g = lambda name: s[f"encoder.block.{l}.{name}"]  # noqa: E731
        T = np_layernorm(np_att(X, X, g("attention.W_Q"), g("attention.W_K"), g("attention.W_V"),
                                g("attention.W_O")) + X, g("norm1.gamma"), g("norm1.beta"))
        X = np_layernorm(np_ffn(T, g("ffn.W1"), g("ffn.b1"), g("ffn.W2"), g("ffn.b2")) + T, g("norm2.gamma"),
                         g("norm2.beta"))
    Z = embed(s["E_target"], target)
    for l in range(len(model.decoder.block)):
        g = lambda name: s[f"decoder.block.{l}.{name}"]  # noqa: E731
        att = lambda pre, q, kv, m=None: np_att(q, kv, g(pre + ".W_Q"), g(pre + ".W_K"), g(pre + ".W_V"),  # noqa
                                                 g(pre + ".W_O"), m)
        T1 = np_layernorm(att("self_attention", Z, Z, np_seed_mask(len(target))) + Z, g("norm1.gamma"),
                          g("norm1.beta"))
        T2 = np_layernorm(att("cross_attention", T1, X) + T1, g("norm2.gamma"), g("norm2.beta"))
        Z = np_layernorm(np_ffn(T2, g("ffn.W1"), g("ffn.b1"), g("ffn.W2"), g("ffn.b2")) + T2, g("norm3.gamma"),
                         g("norm3.beta"))
    return Z @ s["output.weight"].T + s["output.bias"]


def test_encoder_decoder_matches_numpy_and_step_agrees():
    model = randomise(nn.Transformer(7, 9, d_model=8, heads=2, hidden=10, layers=2, rng=5), RNG, 0.2)
    source, target = np.array([1, 2, 3, 4, 5]), np.array([0, 3, 8, 5])
    full = model.logits(source[None], target[None]).value[0]
    np.testing.assert_allclose(full, np_encoder_decoder(model, source, target), rtol=1e-10, atol=1e-12)
    state = model.start_state(source)
    for t, token in enumerate(target):
        logits, state = model.step(state, token)
        np.testing.assert_allclose(logits, full[t], rtol=1e-10, atol=1e-12)


def test_encoder_decoder_source_padding_and_gradients():
    model = randomise(nn.Transformer(5, 6, d_model=4, heads=2, hidden=4, layers=1, rng=6), RNG, 0.2)
    source = np.array([[1, 2, 3, 0], [4, 4, 2, 1]])
    mask = np.array([[True, True, True, False], [True, True, True, True]])
    target = np.array([[0, 2, 5], [0, 1, 1]])
    a = model.logits(source, target, source_mask=mask).value
    other = source.copy()
    other[0, 3] = 4  # a padded token changes: nothing else may
    np.testing.assert_allclose(model.logits(other, target, source_mask=mask).value[0], a[0], atol=1e-12)
    state = model.start_state(source[0, :3])
    logits, _ = model.step(state, 0)
    np.testing.assert_allclose(logits, a[0, 0], atol=1e-12)
    _check_module_grads(model, [], lambda m: nn.functional.cross_entropy(
        m.logits(source, target[:, :-1], source_mask=mask), target[:, 1:]))

# ----------------------------------------------------------------- rendering


def test_lm_renders_one_cluster_per_block_and_head_group_and_folds_blocks():
    lm = nn.TransformerLM(10, d_model=8, heads=2, hidden=16, layers=3, rng=0)
    loss = nn.functional.cross_entropy(lm.logits(np.array([[1, 2, 3, 4]])), np.array([[2, 3, 4, 5]]))
    full = ad.render(loss).source
    for l in range(3):
        assert f"<B>block.{l}</B>" in full
    assert full.count("<B>2 heads</B>") == 3
    assert full.count("<B>attention</B>") == 3
    folded = ad.render(loss, depth=0).source
    assert "block &#215; 3" in folded
    assert "block.1" not in folded


def test_float32_models_stay_float32():
    lm = nn.TransformerLM(10, d_model=8, heads=2, hidden=16, layers=1, rng=0, dtype=np.float32)
    assert lm.logits(np.array([[1, 2, 3]])).dtype == np.float32
    assert lm.step(lm.start_state(), 3)[0].dtype == np.float32
    model = nn.Transformer(5, 6, d_model=8, heads=2, hidden=16, layers=1, rng=0, dtype=np.float32)
    out = model.logits(np.array([[1, 2]]), np.array([[0, 1]]), source_mask=np.array([[True, False]]))
    assert out.dtype == np.float32


def test_second_order_gradients_of_tiny_models():
    lm = randomise(nn.TransformerLM(3, d_model=2, heads=1, hidden=2, layers=1, rng=0), RNG, 0.2)
    tokens = np.array([[1, 2, 0]])
    _check_module_grads(lm, [], lambda m: nn.functional.cross_entropy(m.logits(tokens[:, :-1]), tokens[:, 1:]),
                        order=2)
    enc = randomise(nn.TransformerEncoder(2, heads=2, hidden=2, layers=1, d_key=1, d_val=1, rng=1), RNG, 0.2)
    mask = np.array([[True, False]])
    _check_module_grads(enc, [RNG.normal(size=(1, 2, 2))], lambda m, x: m(x, padding_mask=mask), order=2)
    model = randomise(nn.Transformer(3, 3, d_model=2, heads=1, hidden=2, layers=1, rng=2), RNG, 0.2)
    _check_module_grads(model, [], lambda m: m.logits(np.array([[1, 2]]), np.array([[0, 1]])), order=2)


def test_boolean_tensor_mask_is_read_as_attend():
    q = RNG.normal(size=(3, 2))
    keep = np.tril(np.ones((3, 3), bool))
    np.testing.assert_array_equal(nn.attention(q, q, q, mask=ad.Tensor(keep)).value,
                                  nn.attention(q, q, q, mask=nn.causal_mask(3)).value)


def test_encoder_decoder_learns_to_reverse_and_greedy_steps_decode_it():
    from autograd_dag import optim
    rng = np.random.default_rng(0)
    V, L, BOS = 6, 4, 6
    model = nn.Transformer(V, V + 1, d_model=16, heads=2, hidden=32, layers=1, rng=0)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        src = rng.integers(0, V, (32, L))
        tgt = src[:, ::-1]
        loss = nn.functional.cross_entropy(model.logits(src, np.concatenate([np.full((32, 1), BOS), tgt[:, :-1]], 1)),
                                           tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()
    correct = 0
    for _ in range(20):
        src = rng.integers(0, V, L)
        state, token, out = model.start_state(src), BOS, []
        for _ in range(L):
            logits, state = model.step(state, token)
            token = int(np.argmax(logits))
            out.append(token)
        correct += out == list(src[::-1])
    assert correct >= 18


@pytest.mark.parametrize("bad", [-1, 11])
def test_token_ids_out_of_range_are_refused_on_every_path(bad):
    # numpy's take reads −1 as the last row of E: before, the models silently embedded it.
    lm = nn.TransformerLM(vocab_size=11, d_model=8, heads=2, hidden=16, layers=1, rng=0)
    with pytest.raises(ad.ShapeError, match=rf"TransformerLM: id {bad} is out of range"):
        lm.logits(np.array([[1, bad, 3]]))
    with pytest.raises(ad.ShapeError, match=rf"TransformerLM.step: id {bad} is out of range"):
        lm.step(lm.start_state(), bad)
    logits = ad.jit(lambda tokens: lm.logits(tokens))
    logits(np.array([[1, 2, 3]]))
    with pytest.raises(ad.ShapeError, match="out of range"):  # a later call of the recorded program
        logits(np.array([[1, bad, 3]]))
    model = nn.Transformer(7, 11, d_model=8, heads=2, hidden=16, layers=1, rng=0)
    with pytest.raises(ad.ShapeError, match="Transformer source: id -1 is out of range"):
        model.logits(np.array([[1, -1]]), np.array([[3]]))
    with pytest.raises(ad.ShapeError, match=rf"Transformer target: id {bad} is out of range"):
        model.logits(np.array([[1, 2]]), np.array([[bad]]))
    with pytest.raises(ad.ShapeError, match=rf"Transformer target: id {bad} is out of range"):
        model.step(model.start_state(np.array([1, 2])), bad)


def np_decoder_block(s, Z, X, pre=""):
    """Seed 003's post-norm decoder block on one sequence: causal self-attention, cross-attention, FFN."""
    g = lambda name: s[pre + name]  # noqa: E731
    att = lambda p, q, kv, m=None: np_att(q, kv, g(p + ".W_Q"), g(p + ".W_K"), g(p + ".W_V"), g(p + ".W_O"), m)  # noqa
    T1 = np_layernorm(att("self_attention", Z, Z, np_seed_mask(len(Z))) + Z, g("norm1.gamma"), g("norm1.beta"))
    T2 = np_layernorm(att("cross_attention", T1, X) + T1, g("norm2.gamma"), g("norm2.beta"))
    return np_layernorm(np_ffn(T2, g("ffn.W1"), g("ffn.b1"), g("ffn.W2"), g("ffn.b2")) + T2, g("norm3.gamma"),
                        g("norm3.beta"))


def test_masks_in_pytorchs_positions_are_refused():
    # PyTorch's TransformerDecoderLayer(tgt, memory, tgt_mask) and TransformerEncoder(src, mask): here the
    # third and second arguments were memory_mask and padding_mask, so the causal mask masked the
    # cross-attention (outputs off by 0.68 with L = L_src), and an (L, L) mask read as (batch, L) padding.
    blk = randomise(nn.TransformerDecoderBlock(4, heads=2, hidden=8, rng=0), RNG, 0.3)
    Z, X = RNG.normal(size=(1, 3, 4)), RNG.normal(size=(1, 3, 4))
    with pytest.raises(TypeError):
        blk(Z, X, nn.causal_mask(3))
    with pytest.raises(TypeError):
        nn.TransformerDecoder(4, 2, 8, 1, rng=0)(Z, X, nn.causal_mask(3))
    with pytest.raises(TypeError):
        nn.TransformerEncoder(4, 2, 8, 1, rng=0)(RNG.normal(size=(3, 3, 4)), np.tril(np.ones((3, 3), bool)))
    np.testing.assert_allclose(blk(Z, X).value[0], np_decoder_block(blk.state_dict(), Z[0], X[0]),
                               rtol=1e-10, atol=1e-12)
    keep = np.array([[True, True, False]])
    X2 = X.copy()
    X2[0, 2] = RNG.normal(size=4)  # a masked memory position changes: nothing may
    np.testing.assert_allclose(blk(Z, X2, memory_mask=keep[:, None, :]).value,
                               blk(Z, X, memory_mask=keep[:, None, :]).value, atol=1e-12)
    np.testing.assert_allclose(blk(Z, X, memory_mask=keep[:, None, :]).value[0],
                               np_decoder_block(blk.state_dict(), Z[0], X[0, :2]), rtol=1e-10, atol=1e-12)


def _copy_attention(ours, theirs):
    h, d, k = ours.heads, ours.d_model, ours.d_key
    W = theirs.in_proj_weight.detach().numpy()
    for i, name in enumerate(("W_Q", "W_K", "W_V")):
        getattr(ours, name).value[...] = W[i * d:(i + 1) * d].reshape(h, k, d).transpose(0, 2, 1)
    ours.W_O.value[...] = theirs.out_proj.weight.detach().numpy().T.reshape(h, k, d)
    b = theirs.in_proj_bias.detach().numpy()
    for i, name in enumerate(("b_Q", "b_K", "b_V")):
        getattr(ours, name).value[...] = b[i * d:(i + 1) * d].reshape(h, k)
    ours.b_O.value[...] = theirs.out_proj.bias.detach().numpy()


def _copy_block(ours, theirs, attention_pairs, norms):
    for a, b in attention_pairs:
        _copy_attention(a, b)
    for name, lin in (("W1", theirs.linear1.weight), ("b1", theirs.linear1.bias), ("W2", theirs.linear2.weight),
                      ("b2", theirs.linear2.bias)):
        getattr(ours.ffn, name).value[...] = lin.detach().numpy()
    for a, b in norms:
        a.gamma.value[...], a.beta.value[...] = b.weight.detach().numpy(), b.bias.detach().numpy()


@pytest.mark.parametrize("d, heads, length, source_length", [(6, 3, 4, 5), (4, 1, 1, 1), (10, 5, 3, 3)])
def test_blocks_follow_pytorchs_post_norm_layers(d, heads, length, source_length):
    """TransformerBlock = TransformerEncoderLayer(norm_first=False, relu), TransformerDecoderBlock =
    TransformerDecoderLayer, with copied weights: outputs and gradients, with padding and causal masks."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    enc = torch.nn.TransformerEncoderLayer(d, heads, 7, dropout=0.0, batch_first=True, dtype=torch.float64).eval()
    dec = torch.nn.TransformerDecoderLayer(d, heads, 7, dropout=0.0, batch_first=True, dtype=torch.float64).eval()
    with torch.no_grad():
        for p in list(enc.parameters()) + list(dec.parameters()):
            p.add_(0.2 * torch.randn_like(p))
    blk = nn.TransformerBlock(d, heads, 7, bias=True, rng=0)
    _copy_block(blk, enc, [(blk.attention, enc.self_attn)], [(blk.norm1, enc.norm1), (blk.norm2, enc.norm2)])
    dblk = nn.TransformerDecoderBlock(d, heads, 7, bias=True, rng=0)
    _copy_block(dblk, dec, [(dblk.self_attention, dec.self_attn), (dblk.cross_attention, dec.multihead_attn)],
                [(dblk.norm1, dec.norm1), (dblk.norm2, dec.norm2), (dblk.norm3, dec.norm3)])
    x, memory = RNG.normal(size=(2, length, d)), RNG.normal(size=(2, source_length, d))
    real = np.ones((2, source_length), bool)
    real[0, -1] = source_length == 1
    xa = ad.Tensor(x, requires_grad=True)
    out = dblk(blk(xa, mask=nn.causal_mask(length)), memory, memory_mask=real[:, None, :])
    tx = torch.tensor(x, requires_grad=True)
    causal = torch.tensor(nn.causal_mask(length))
    tout = dec(enc(tx, src_mask=causal, is_causal=True), torch.tensor(memory), tgt_mask=causal, tgt_is_causal=True,
               memory_key_padding_mask=torch.tensor(~real))
    w = RNG.normal(size=out.shape)
    (out * w).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(out.value, tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(xa.grad.value, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(blk.ffn.W1.grad.value, enc.linear1.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dblk.norm3.gamma.grad.value, dec.norm3.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dblk.cross_attention.b_O.grad.value, dec.multihead_attn.out_proj.bias.grad.numpy(),
                               rtol=1e-10, atol=1e-12)


def test_block_refuses_pytorchs_padding_mask_in_third_place():
    # TransformerEncoderLayer(src, src_mask, src_key_padding_mask): the third argument was return_weights.
    blk = nn.TransformerBlock(4, heads=2, hidden=8, rng=0)
    x = RNG.normal(size=(1, 1, 4))
    with pytest.raises(TypeError):
        blk(x, None, np.array([[False]]))
    out, weights = blk(x, return_weights=True)
    np.testing.assert_array_equal(weights.value, np.ones((1, 2, 1, 1)))  # one key: all the weight on it
    assert out.shape == (1, 1, 4)


def test_attention_maps_are_the_eval_mode_weights_whatever_the_mode():
    # attention_maps ran in the model's mode: in training with dropout, every block after the first
    # read dropped-out inputs, so the maps changed from call to call.
    lm = nn.TransformerLM(9, d_model=8, heads=2, hidden=16, layers=3, dropout=0.5, rng=0)
    plain = nn.TransformerLM(9, d_model=8, heads=2, hidden=16, layers=3, rng=1)
    plain.load_state_dict(lm.state_dict())
    tokens = np.array([[1, 4, 2, 7, 3]])
    with ad.no_grad():
        _, want = plain.hidden_states(tokens, return_weights=True)   # no dropout layer at all
    assert lm.training
    for _ in range(2):
        for got, w in zip(lm.attention_maps(tokens), want):
            np.testing.assert_allclose(got, w.value, rtol=1e-12, atol=1e-15)
    assert lm.training


def test_lm_tables_are_computed_once_read_only_and_equal_to_the_public_functions():
    # TransformerLM keeps P and the causal mask per (length, d_model, dtype): the eager step
    # computed both on every call. Shared, they must be read-only (a user's write would change
    # every later step) and hold exactly the numbers the public functions give.
    from autograd_dag.nn import transformer
    for dtype in (np.float32, np.float64):
        P, M = transformer._positions_table(7, 6, dtype), transformer._causal_table(7, dtype)
        assert P is transformer._positions_table(7, 6, dtype) and M is transformer._causal_table(7, dtype)
        assert not P.flags.writeable and not M.flags.writeable
        assert P.dtype == dtype and M.dtype == dtype
        np.testing.assert_array_equal(P, nn.positional_encoding(7, 6, dtype=dtype))
        np.testing.assert_array_equal(M, nn.causal_mask(7, dtype=dtype))
        with pytest.raises(ValueError):
            P[0, 0] = 1.0
    # Tables of several lengths in turn: each call takes its own length's (a length-3 call after a
    # length-5 one gives the first length-3 call's numbers, and only the first 3 positions of length 5's).
    lm = nn.TransformerLM(vocab_size=11, d_model=8, heads=2, hidden=16, layers=1, rng=0)
    short = lm.logits(np.array([[1, 2, 3]])).value
    long = lm.logits(np.array([[1, 2, 3, 4, 5]])).value
    np.testing.assert_array_equal(lm.logits(np.array([[1, 2, 3]])).value, short)
    np.testing.assert_allclose(long[:, :3], short, rtol=1e-12, atol=1e-12)  # (other sizes: other BLAS blocking)
