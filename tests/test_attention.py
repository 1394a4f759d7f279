"""Attention, masks, positional encodings and multi-head attention against the seeds' formulas in numpy.

Each reference below is written from the seed's equation (loops over
positions, heads and keys; softargmax as exp / Σ exp), never from the code
under test.
"""

import math

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn

# ------------------------------------------------------- numpy references


def ref_pe_seed000(n, d):
    """P_{p,i} = sin((p−1)/10000^{(i−1)/d}) for odd i, cos((p−1)/10000^{(i−2)/d}) for even i; p, i from 1."""
    P = np.zeros((n, d))
    for p in range(1, n + 1):
        for i in range(1, d + 1):
            if i % 2 == 1:
                P[p - 1, i - 1] = math.sin((p - 1) / 10000 ** ((i - 1) / d))
            else:
                P[p - 1, i - 1] = math.cos((p - 1) / 10000 ** ((i - 2) / d))
    return P


def ref_pe_seed003(n, d):
    """PE(pos, 2i) = sin(pos/10000^{2i/d}), PE(pos, 2i+1) = cos(pos/10000^{2i/d}); pos, i from 0."""
    P = np.zeros((n, d))
    for pos in range(n):
        for i in range((d + 1) // 2):
            P[pos, 2 * i] = math.sin(pos / 10000 ** (2 * i / d))
            if 2 * i + 1 < d:
                P[pos, 2 * i + 1] = math.cos(pos / 10000 ** (2 * i / d))
    return P


def ref_softargmax_rows(S):
    out = np.zeros_like(S)
    for idx in np.ndindex(S.shape[:-1]):
        row = S[idx]
        e = np.array([math.exp(s - max(row)) if s != -np.inf else 0.0 for s in row])
        out[idx] = e / e.sum()
    return out


def ref_attention(Q, K, V, M=None, scale=None):
    """softargmax_keys(Σ_key Q K · scale + M) ·_keys V, by explicit sums over the key axis."""
    dk = Q.shape[-1]
    scale = 1 / math.sqrt(dk) if scale is None else scale
    Lq, Lk = Q.shape[-2], K.shape[-2]
    S = np.zeros(Q.shape[:-2] + (Lq, Lk))
    for idx in np.ndindex(Q.shape[:-2]):
        for a in range(Lq):
            for b in range(Lk):
                S[idx + (a, b)] = sum(Q[idx + (a, c)] * K[idx + (b, c)] for c in range(dk)) * scale
    if M is not None:
        S = S + M
    A = ref_softargmax_rows(S)
    out = np.zeros(Q.shape[:-2] + (Lq, V.shape[-1]))
    for idx in np.ndindex(Q.shape[:-2]):
        for a in range(Lq):
            out[idx + (a,)] = sum(A[idx + (a, b)] * V[idx + (b,)] for b in range(Lk))
    return out, A


def ref_multihead(X, Y, W_Q, W_K, W_V, W_O, M=None, b=None):
    """Seed 000's SelfAtt with Y = X (CrossAtt otherwise): per head h, Q_h = X W_Q[h], ..., Σ_h A_h W_O[h]."""
    heads = W_Q.shape[0]
    out = np.zeros(X.shape[:-1] + (W_O.shape[-1],))
    for h in range(heads):
        Q, K, V = X @ W_Q[h], Y @ W_K[h], Y @ W_V[h]
        if b is not None:
            Q, K, V = Q + b["b_Q"][h], K + b["b_K"][h], V + b["b_V"][h]
        A, _ = ref_attention(Q, K, V, M)
        out = out + A @ W_O[h]
    return out if b is None else out + b["b_O"]

# ------------------------------------------------------- positional encodings


@pytest.mark.parametrize("n, d", [(7, 8), (5, 6), (3, 5), (1, 1), (50, 16)])
def test_positional_encoding_matches_both_seed_conventions(n, d):
    P = nn.positional_encoding(n, d)
    np.testing.assert_allclose(P, ref_pe_seed000(n, d), rtol=0, atol=1e-12)
    np.testing.assert_allclose(P, ref_pe_seed003(n, d), rtol=0, atol=1e-12)


def test_positional_encoding_inside_a_program_records_sin_and_cos():
    pos = ad.Tensor(np.array([0.0, 3.0, 7.5]))
    P = nn.positional_encoding(pos, 6)
    np.testing.assert_allclose(P.value, nn.positional_encoding(np.array([0.0, 3.0, 7.5]), 6), atol=1e-14)
    program = ad.trace(lambda p: nn.positional_encoding(p, 6), np.array([0.0, 3.0, 7.5]))
    ops = {node.op for node in program.nodes}
    assert {"sin", "cos"} <= ops
    ad.check_grads(lambda p: nn.positional_encoding(p, 6), (np.array([0.0, 3.0, 7.5]),), order=2)

# ------------------------------------------------------------- causal mask


@pytest.mark.parametrize("n", [1, 2, 5])
def test_causal_mask_is_the_seed_pattern(n):
    # Seed 000: M_{seq(i), seq'(j)} = 0 if i <= j else -inf, seq = keys, seq' = queries.
    M = np.array([[0.0 if i <= j else -np.inf for j in range(n)] for i in range(n)])
    got = nn.causal_mask(n)
    assert got.shape == (n, n)
    np.testing.assert_array_equal(got.T, M)  # rows of causal_mask are queries
    assert np.all(got[np.tril_indices(n)] == 0.0) and np.all(np.isneginf(got[np.triu_indices(n, 1)]))


def test_causal_mask_with_more_keys_puts_the_queries_last():
    got = nn.causal_mask(2, 4)
    np.testing.assert_array_equal(got, [[0, 0, 0, -np.inf], [0, 0, 0, 0]])
    with pytest.raises(ad.ShapeError):
        nn.causal_mask(3, 2)

# --------------------------------------------------------------- attention


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("scale", [None, 1.0, 0.3])
@pytest.mark.parametrize("lq, lk", [(4, 4), (2, 5), (6, 3)])
def test_attention_matches_the_formula(scale, lq, lk):
    Q, K, V = RNG.normal(size=(2, lq, 3)), RNG.normal(size=(2, lk, 3)), RNG.normal(size=(2, lk, 4))
    out, A = nn.attention(Q, K, V, scale=scale, return_weights=True)
    ref_out, ref_A = ref_attention(Q, K, V, scale=scale)
    np.testing.assert_allclose(out.value, ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(A.value, ref_A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(A.value.sum(-1), 1.0)


def test_attention_with_causal_mask_and_boolean_mask_agree():
    Q, K, V = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))
    M = nn.causal_mask(5)
    out, A = nn.attention(Q, K, V, mask=M, return_weights=True)
    ref_out, ref_A = ref_attention(Q, K, V, M)
    np.testing.assert_allclose(out.value, ref_out, atol=1e-12)
    assert np.all(A.value[np.triu_indices(5, 1)] == 0.0)
    out_bool = nn.attention(Q, K, V, mask=np.tril(np.ones((5, 5), bool)))
    np.testing.assert_array_equal(out_bool.value, out.value)


def test_attention_is_the_unscaled_book_form_with_scale_one():
    x = RNG.normal(size=(4, 3))
    A = nn.attention(x, x, x, scale=1.0, return_weights=True)[1].value
    G = x @ x.T  # 001 §4.8.2: softargmax of the Gram matrix, row-wise
    np.testing.assert_allclose(A, np.exp(G) / np.exp(G).sum(1, keepdims=True), atol=1e-12)


def test_fully_masked_row_raises_naming_the_row():
    Q = K = V = RNG.normal(size=(3, 2))
    M = np.zeros((3, 3))
    M[1] = -np.inf
    with pytest.raises(ad.ShapeError, match="query row 1 has every key masked"):
        nn.attention(Q, K, V, mask=M)
    batched = np.zeros((2, 3, 3))
    batched[1, 2] = -np.inf
    with pytest.raises(ad.ShapeError, match=r"query row 2 of batch index \(1,\)"):
        nn.attention(np.ones((2, 3, 2)), np.ones((2, 3, 2)), np.ones((2, 3, 2)), mask=batched)


def test_attention_shape_errors():
    with pytest.raises(ad.ShapeError, match="d_key"):
        nn.attention(np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 4)))
    with pytest.raises(ad.ShapeError, match="broadcastable"):
        nn.attention(np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 1)), mask=np.zeros((2, 3)))


def test_attention_gradients_with_mask_no_nan():
    Q, K, V = RNG.normal(size=(2, 4, 3)), RNG.normal(size=(2, 5, 3)), RNG.normal(size=(2, 5, 2))
    M = nn.causal_mask(4, 5)
    ad.check_grads(lambda q, k, v: nn.attention(q, k, v, mask=M), (Q, K, V))
    small_mask = nn.causal_mask(2, 3)
    ad.check_grads(lambda q, k, v: nn.attention(q, k, v, mask=small_mask, scale=1.0),
                   (Q[:1, :2], K[:1, :3], V[:1, :3]), order=2)
    g = ad.grad(lambda q: nn.attention(q, K, V, mask=M).sum())(Q)
    assert np.all(np.isfinite(g))

# ----------------------------------------------------- multi-head attention


def mha_params(mha):
    return {n: p.value for n, p in mha.named_parameters()}


def test_multihead_with_one_head_is_single_head_attention():
    mha = nn.MultiHeadAttention(6, heads=1, rng=1)
    X = RNG.normal(size=(2, 4, 6))
    p = mha_params(mha)
    A = nn.attention(X @ p["W_Q"][0], X @ p["W_K"][0], X @ p["W_V"][0], mask=nn.causal_mask(4)).value
    np.testing.assert_allclose(mha(X, mask=nn.causal_mask(4)).value, A @ p["W_O"][0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bias", [False, True])
def test_multihead_matches_seed_formula(bias):
    mha = nn.MultiHeadAttention(6, heads=3, d_key=4, d_val=5, bias=bias, rng=2)
    if bias:
        for name in ("b_Q", "b_K", "b_V", "b_O"):
            getattr(mha, name).value[...] = RNG.normal(size=getattr(mha, name).shape)
    p = mha_params(mha)
    X = RNG.normal(size=(2, 4, 6))
    M = nn.causal_mask(4)
    ref = ref_multihead(X, X, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], M, p if bias else None)
    np.testing.assert_allclose(mha(X, mask=M).value, ref, rtol=1e-11, atol=1e-12)
    assert p["W_Q"].shape == (3, 6, 4) and p["W_V"].shape == (3, 6, 5) and p["W_O"].shape == (3, 5, 6)


def test_multihead_cross_attention_lq_differs_from_lk():
    mha = nn.MultiHeadAttention(4, heads=2, rng=3)
    p = mha_params(mha)
    X, Y = RNG.normal(size=(3, 4)), RNG.normal(size=(7, 4))
    out = mha(X, memory=Y)
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out.value, ref_multihead(X, Y, p["W_Q"], p["W_K"], p["W_V"], p["W_O"]),
                               rtol=1e-11, atol=1e-12)


def test_multihead_has_no_python_loop_over_heads():
    mha = nn.MultiHeadAttention(8, heads=4, rng=0)
    out = mha(ad.Tensor(np.ones((2, 3, 8))), mask=nn.causal_mask(3))
    program = ad.trace(lambda x: mha(x, mask=nn.causal_mask(3)), np.ones((2, 3, 8)))
    ops = [n.op for n in program.nodes]
    # One softargmax node over all heads (masked attention's: scaled, masked and normalized at once).
    assert ops.count("masked_softargmax") == 1 and "softargmax" not in ops and out.shape == (2, 3, 8)


def test_multihead_check_grads_inputs_and_parameters():
    mha = nn.MultiHeadAttention(4, heads=2, bias=True, rng=4)
    names = [n for n, _ in mha.named_parameters()]
    X, Y = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 5, 4))
    M = np.zeros((2, 1, 5))
    M[0, 0, 4] = -np.inf  # a padding mask on one key of the first sequence

    def f(x, y, *params):
        return nn.functional_call(mha, dict(zip(names, params)), x, memory=y, mask=M)
    ad.check_grads(f, (X, Y) + tuple(p.value for p in mha.parameters()))
    small = nn.MultiHeadAttention(2, heads=2, rng=5)
    small_names = [n for n, _ in small.named_parameters()]

    def g(x, *params):
        return nn.functional_call(small, dict(zip(small_names, params)), x, mask=nn.causal_mask(2))
    ad.check_grads(g, (RNG.normal(size=(2, 2)),) + tuple(p.value for p in small.parameters()), order=2)


def test_multihead_shape_errors():
    with pytest.raises(ad.ShapeError, match="heads"):
        nn.MultiHeadAttention(6, heads=4)
    with pytest.raises(ad.ShapeError, match="d_model=6"):
        nn.MultiHeadAttention(6, heads=2)(np.ones((3, 5)))


@pytest.mark.parametrize("bias", [False, True])
def test_multihead_follows_pytorch_with_every_kind_of_mask(bias):
    """nn.MultiheadAttention with the same weights: self/cross, causal, boolean, additive and padding masks.

    Ours reads a boolean mask as True = attend; PyTorch's module reads True = removed.
    """
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    d, h, B, Lq, Lk = 8, 2, 2, 4, 6
    mha = nn.MultiHeadAttention(d, h, bias=bias, rng=1)
    for p in mha.parameters():
        p.value[...] = rng.standard_normal(p.shape) * 0.5
    ref = torch.nn.MultiheadAttention(d, h, bias=bias, batch_first=True, dtype=torch.float64)
    k = mha.d_key
    with torch.no_grad():
        flat = [torch.tensor(W.value.transpose(0, 2, 1).reshape(h * k, d)) for W in (mha.W_Q, mha.W_K, mha.W_V)]
        ref.in_proj_weight.copy_(torch.cat(flat))
        ref.out_proj.weight.copy_(torch.tensor(mha.W_O.value.reshape(h * k, d).T))
        if bias:
            ref.in_proj_bias.copy_(torch.tensor(np.concatenate([b.value.ravel() for b in (mha.b_Q, mha.b_K, mha.b_V)])))
            ref.out_proj.bias.copy_(torch.tensor(mha.b_O.value))
    x, memory = rng.standard_normal((B, Lq, d)), rng.standard_normal((B, Lk, d))
    real = np.ones((B, Lk), bool)
    real[0, 4:] = False
    additive = rng.standard_normal((B, Lq, Lk))
    lower = np.tril(np.ones((Lq, Lq), bool))
    cases = [(None, None, {}),
             (None, nn.causal_mask(Lq), dict(attn_mask=torch.tensor(nn.causal_mask(Lq)))),
             (None, lower, dict(attn_mask=torch.tensor(~lower))),
             (memory, real[:, None, :], dict(key_padding_mask=torch.tensor(~real))),
             (memory, ad.Tensor(real[:, None, :]), dict(key_padding_mask=torch.tensor(~real))),
             (memory, additive, dict(attn_mask=torch.tensor(np.repeat(additive, h, axis=0))))]
    for mem, mask, torch_mask in cases:
        xa = ad.Tensor(x, requires_grad=True)
        out = mha(xa, None if mem is None else ad.Tensor(mem), mask=mask)
        w = rng.standard_normal(out.shape)
        mha.zero_grad()
        (out * w).sum().backward()
        tx = torch.tensor(x, requires_grad=True)
        tm = tx if mem is None else torch.tensor(mem)
        ref.zero_grad()
        tout, _ = ref(tx, tm, tm, need_weights=False, **torch_mask)
        (tout * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(out.value, tout.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(xa.grad.value, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(mha.W_O.grad.value.reshape(h * k, d).T, ref.out_proj.weight.grad.numpy(),
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(mha.W_K.grad.value.transpose(0, 2, 1).reshape(h * k, d),
                                   ref.in_proj_weight.grad[d:2 * d].numpy(), rtol=1e-10, atol=1e-12)


def test_multihead_refuses_a_key_width_that_is_not_a_positive_int():
    # PyTorch's MultiheadAttention(embed_dim, num_heads, dropout) written here made d_key = int(0.1) = 0.
    for bad in (0.1, 0, -2, True):
        with pytest.raises(ad.ShapeError, match="d_key a positive int"):
            nn.MultiHeadAttention(8, 2, bad)
    with pytest.raises(ad.ShapeError, match="d_val a positive int"):
        nn.TransformerBlock(8, 2, 16, 4, 0.5)
    assert nn.MultiHeadAttention(8, 2, np.int64(3)).d_key == 3


@pytest.mark.parametrize("as_tensor", [False, True])
def test_integer_masks_are_refused_not_added_to_the_scores(as_tensor):
    # A 0/1 int keep-mask (a tokenizer's attention_mask) was added to the scores as numbers: +1 on
    # the kept keys, +0 on the padding, so the padding was attended to (outputs off by 0.3).
    x = RNG.normal(size=(1, 3, 4))
    keep = np.array([[[1, 1, 0]]])
    mha = nn.MultiHeadAttention(4, heads=2, rng=0)
    wrap = ad.Tensor if as_tensor else np.asarray
    with pytest.raises(ad.ShapeError, match="dtype int64"):
        mha(x, mask=wrap(keep))
    with pytest.raises(ad.ShapeError, match="mask nothing"):
        nn.attention(x, x, x, mask=wrap(np.tril(np.ones((3, 3), np.int64))))
    # The boolean form masks the padded key: the formula's -inf there.
    out = nn.attention(x, x, x, mask=wrap(keep.astype(bool))).value
    ref, A = ref_attention(x, x, x, np.where(keep.astype(bool), 0.0, -np.inf))
    np.testing.assert_allclose(out, ref, atol=1e-12)
    assert np.all(A[..., 2] == 0.0)


def test_multihead_refuses_pytorchs_query_key_value_call():
    # mha(x, x, x), PyTorch's (query, key, value), read the third x as an additive mask: with
    # L_k = d_model it broadcast and the output moved by 0.4, without an error.
    mha = nn.MultiHeadAttention(4, heads=2, rng=0)
    x = RNG.normal(size=(2, 4, 4))
    with pytest.raises(TypeError):
        mha(x, x, x)
    p = mha_params(mha)
    np.testing.assert_allclose(mha(x, x).value, ref_multihead(x, x, p["W_Q"], p["W_K"], p["W_V"], p["W_O"]),
                               rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("transform", ["jit", "vmap"])
def test_fully_masked_row_raises_on_every_run_of_a_traced_mask(transform):
    """A mask that is a jit input changes from call to call, and vmap records on the first example
    only: the dead-row check of the traced numbers let a later call's (or example's) dead row
    through as NaN outputs, where the eager call raises."""
    mha = nn.MultiHeadAttention(4, heads=2, rng=0)
    enc = nn.TransformerEncoder(4, heads=2, hidden=8, layers=1, rng=0)
    x, memory = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 5, 4))
    live = np.ones((2, 5), bool)
    dead = live.copy()
    dead[1] = False                    # sequence 1: every key padded away
    if transform == "jit":
        cross = ad.jit(lambda x, m, keep: mha(x, m, mask=keep[:, None, :]))
        encode = ad.jit(lambda m, keep: enc(m, padding_mask=keep))
        plain = ad.jit(lambda q, k, v, keep: nn.attention(q, k, v, mask=keep))
    else:
        cross = ad.vmap(lambda x, m, keep: mha(x, m, mask=keep[None, :]))
        encode = ad.vmap(lambda m, keep: enc(m[None], padding_mask=keep[None])[0])
        plain = ad.vmap(lambda q, k, v, keep: nn.attention(q, k, v, mask=keep))
    # The live masks give what the eager calls give (numpy: each sequence attends to its 5 keys) ...
    value = lambda out: getattr(out, "value", out)  # noqa: E731  (vmap keeps the parameters' gradient)
    np.testing.assert_allclose(value(cross(x, memory, live)), mha(x, memory).value, rtol=1e-12)
    np.testing.assert_allclose(value(encode(memory, live)), enc(memory).value, rtol=1e-12)
    # ... and a dead row raises, naming it, as eagerly.
    with pytest.raises(ad.ShapeError, match="every key masked"):
        cross(x, memory, dead)
    with pytest.raises(ad.ShapeError, match="every key masked"):
        encode(memory, dead)
    keep = np.ones((2, 3, 5), bool)
    keep[1, 2] = False
    with pytest.raises(ad.ShapeError, match="query row 2"):
        plain(x, memory, memory, keep)
    additive = np.where(keep, 0.0, -np.inf)
    with pytest.raises(ad.ShapeError, match="query row 2"):
        plain(x, memory, memory, additive)


def test_checked_mask_names_the_dead_row_of_boolean_and_additive_masks():
    from autograd_dag.primitives.indexing import checked_mask
    keep = np.ones((2, 3, 4), bool)
    keep[1, 2] = False
    with pytest.raises(ad.ShapeError, match=r"attention: query row 2 of batch index \(1,\) has every key masked"):
        checked_mask(keep, "attention")
    with pytest.raises(ad.ShapeError, match=r"query row 2 of batch index \(1,\)"):
        checked_mask(np.where(keep, 0.0, -np.inf))
    finite = np.where(keep, 0.0, -1e9)       # a large finite penalty removes nothing: no error
    assert checked_mask(finite).value is finite
    assert checked_mask(np.zeros((3, 0))).shape == (3, 0)
    with pytest.raises(ad.ShapeError, match="query row 0"):
        checked_mask(np.array(-np.inf))     # one score for every entry: every key removed
