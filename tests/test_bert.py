"""BERT (seed 003 §13.3) and the classification token (§13.2): data, model against numpy, losses, padding, grads.

The numpy reference reads every parameter from ``state_dict()`` and writes
BERT out by hand: the three embeddings summed and normalised, post-norm
encoder blocks with biases, the MLM head scoring against the token
embedding matrix (tied), the NSP head on the pooled ``[CLS]`` output.
"""

import math

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn, text
from autograd_dag.nn import functional as F

RNG = np.random.default_rng(0)
WORDS = [f"w{i}" for i in range(40)]


def vocab_of(words=WORDS):
    return text.Vocabulary.build([words])


def randomise(model, rng, scale=0.3):
    for p in model.parameters():
        p.value[...] = p.value + scale * rng.normal(size=p.shape)
    return model


def binomial_ok(count, n, p, sigmas=5.0):
    """``count`` successes in ``n`` draws is within ``sigmas`` standard deviations of n·p."""
    return abs(count - n * p) <= sigmas * math.sqrt(n * p * (1 - p))

# ----------------------------------------------------------------- data


def test_masking_selects_15_percent_of_ordinary_tokens_never_specials():
    vocab = vocab_of()
    rng = np.random.default_rng(1)
    cls, sep, pad, mask = (vocab.id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]"))
    rows = []
    for _ in range(400):
        n_a, n_b, n_pad = rng.integers(3, 12, size=3)
        rows.append([cls] + list(rng.integers(6, len(vocab), n_a)) + [sep] + list(rng.integers(6, len(vocab), n_b))
                    + [sep] + [pad] * int(n_pad))
    width = max(map(len, rows))
    ids = np.array([r + [pad] * (width - len(r)) for r in rows])
    special = np.isin(ids, [cls, sep, pad])
    for strategy in ("mask", "bert"):
        m = text.mask_tokens(ids, vocab, rng, strategy=strategy)
        assert not m.selected[special].any()
        n_ordinary = int((~special).sum())
        assert binomial_ok(int(m.selected.sum()), n_ordinary, 0.15)
        np.testing.assert_array_equal(m.targets, ids)
        # Positions not selected are never corrupted.
        np.testing.assert_array_equal(m.inputs[~m.selected], ids[~m.selected])
    m = text.mask_tokens(ids, vocab, rng)
    assert (m.inputs[m.selected] == mask).all()      # the seed's rule: every selected token is [MASK]


def test_bert_strategy_splits_selected_tokens_80_10_10():
    vocab = vocab_of()
    ordinary = len(vocab) - len(vocab.specials)
    ids = np.random.default_rng(2).integers(6, len(vocab), size=(200, 100))
    m = text.mask_tokens(ids, vocab, np.random.default_rng(3), rate=0.5, strategy="bert")
    n = int(m.selected.sum())
    got, orig = m.inputs[m.selected], ids[m.selected]
    masked = got == vocab.id("[MASK]")
    unchanged = got == orig
    replaced = ~masked & ~unchanged
    assert binomial_ok(int(masked.sum()), n, 0.8)
    # A random replacement equals the original one time in `ordinary`.
    assert binomial_ok(int(unchanged.sum()), n, 0.1 + 0.1 / ordinary)
    assert binomial_ok(int(replaced.sum()), n, 0.1 * (1 - 1 / ordinary))
    assert (got[replaced] >= len(vocab.specials)).all()  # random tokens are ordinary ones
    with pytest.raises(text.TextError, match="strategy"):
        text.mask_tokens(ids, vocab, strategy="80/10/10")


def test_nsp_pairs_are_half_consecutive_half_random_from_other_documents():
    docs = [[np.array([100 * d + i]) for i in range(5 + d)] for d in range(6)]
    pairs = text.sentence_pairs(docs, 4000, np.random.default_rng(4))
    labels = np.array([y for _, _, y in pairs])
    assert binomial_ok(int(labels.sum()), len(labels), 0.5)
    for a, b, y in pairs:
        if y == 1:
            assert b[0] == a[0] + 1                 # the next sentence of the same document
        else:
            assert b[0] // 100 != a[0] // 100        # a sentence of another document
    with pytest.raises(text.TextError, match="two or more sentences"):
        text.sentence_pairs([[np.array([1])]], 2)


def test_nsp_negatives_come_from_the_only_document_when_the_others_are_empty():
    # Empty documents (e.g. left by filtering) used to make the negative draw wait forever
    # for a sentence of another document.
    docs = [[np.array([0]), np.array([1]), np.array([2])], [], []]
    pairs = text.sentence_pairs(docs, 400, np.random.default_rng(0))
    negatives = [(int(a[0]), int(b[0])) for a, b, y in pairs if y == 0]
    assert binomial_ok(len(negatives), len(pairs), 0.5)
    assert all(b != a + 1 for a, b in negatives)  # never the true successor
    assert {b for _, b in negatives} == {0, 1, 2}


def test_pack_pair_and_batch_layout():
    vocab = vocab_of()
    a, b = vocab.encode(WORDS[:6]), vocab.encode(WORDS[6:8])
    ids, seg = text.pack_pair(a, b, vocab, max_length=8)
    # The longer sentence is cut: 3 + 2 tokens and the three markers.
    assert vocab.decode(ids) == ["[CLS]"] + WORDS[:3] + ["[SEP]"] + WORDS[6:8] + ["[SEP]"]
    assert seg.tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    docs = [[vocab.encode(WORDS[i:i + 1 + i % 4]) for i in range(0, 20, 2)], [vocab.encode(WORDS[20:25])] * 3]
    batch = text.pretraining_batch(docs, vocab, 16, np.random.default_rng(5), max_length=12)
    assert batch.tokens.shape[1] <= 12
    assert (batch.tokens[:, 0] == vocab.id("[CLS]")).all()
    lengths = batch.padding_mask.sum(1)
    assert np.array_equal(batch.padding_mask, np.arange(batch.tokens.shape[1]) < lengths[:, None])
    assert (batch.segments[~batch.padding_mask] == 0).all()
    assert not batch.mlm_selected[~batch.padding_mask].any()

# ------------------------------------------------------- numpy reference


def np_layernorm(X, gamma, beta, eps=1e-5):
    mu = X.mean(-1, keepdims=True)
    return (X - mu) / np.sqrt(((X - mu) ** 2).mean(-1, keepdims=True) + eps) * gamma + beta


def np_softmax(S):
    e = np.exp(S - S.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_block(s, p, X, keep):
    """One post-norm encoder block with biases; ``keep`` (L,) booleans: the keys every query may see."""
    g = lambda name: s[f"{p}.{name}"]  # noqa: E731
    heads = g("attention.W_Q").shape[0]
    out = np.zeros_like(X)
    for h in range(heads):
        Q = X @ g("attention.W_Q")[h] + g("attention.b_Q")[h]
        K = X @ g("attention.W_K")[h] + g("attention.b_K")[h]
        V = X @ g("attention.W_V")[h] + g("attention.b_V")[h]
        S = Q @ K.T / math.sqrt(Q.shape[-1]) + np.where(keep, 0.0, -np.inf)
        out += np_softmax(S) @ V @ g("attention.W_O")[h]
    T = np_layernorm(out + g("attention.b_O") + X, g("norm1.gamma"), g("norm1.beta"))
    F_ = np.maximum(T @ g("ffn.W1").T + g("ffn.b1"), 0) @ g("ffn.W2").T + g("ffn.b2")
    return np_layernorm(F_ + T, g("norm2.gamma"), g("norm2.beta"))


def np_bert(s, tokens, segments, keep, layers):
    """(hidden (L, d), MLM logits (L, vocab), NSP logits (2,)) of one sequence."""
    E = s["token_embedding.weight"]
    X = E[tokens] + s["segment_embedding.weight"][segments] + s["position_embedding.weight"][:len(tokens)]
    X = np_layernorm(X, s["embedding_norm.gamma"], s["embedding_norm.beta"])
    for l in range(layers):
        X = np_block(s, f"encoder.block.{l}", X, keep)
    t = np.maximum(X @ s["mlm_head.transform.weight"].T + s["mlm_head.transform.bias"], 0)
    t = np_layernorm(t, s["mlm_head.norm.gamma"], s["mlm_head.norm.beta"])
    mlm = t @ E.T + s["mlm_head.bias"]                   # tied: the token embedding matrix itself
    pooled = np.tanh(s["pooler.weight"] @ X[0] + s["pooler.bias"])
    nsp = s["nsp_head.weight"] @ pooled + s["nsp_head.bias"]
    return X, mlm, nsp


def tiny_bert(seed=0, vocab=None, layers=2):
    size = len(vocab) if vocab is not None else 20
    return randomise(nn.BERT(size, d_model=8, heads=2, hidden=12, layers=layers, max_length=16, rng=seed),
                     np.random.default_rng(seed))


def test_bert_forward_matches_numpy():
    bert = tiny_bert()
    s = bert.state_dict()
    assert not any("mlm_head" in k and k.endswith("weight") and "transform" not in k for k in s)  # no 2nd matrix
    tokens = np.array([[2, 7, 9, 3, 11, 12, 3, 0, 0], [2, 8, 3, 14, 15, 16, 17, 18, 3]])
    segments = np.array([[0, 0, 0, 0, 1, 1, 1, 0, 0], [0, 0, 0, 1, 1, 1, 1, 1, 1]])
    mlm, nsp = bert(tokens, segments)
    hidden = bert.hidden_states(tokens, segments).value
    for b in range(2):
        keep = tokens[b] != 0
        X, ref_mlm, ref_nsp = np_bert(s, tokens[b], segments[b], keep, 2)
        np.testing.assert_allclose(hidden[b][keep], X[keep], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(mlm.value[b][keep], ref_mlm[keep], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(nsp.value[b], ref_nsp, rtol=1e-10, atol=1e-12)
    # Only the selected rows go through the MLM head, in row-major order.
    selected = np.zeros(tokens.shape, bool)
    selected[0, 2], selected[1, 5], selected[1, 1] = True, True, True
    np.testing.assert_allclose(bert(tokens, segments, selected=selected)[0].value, mlm.value[selected], atol=1e-12)


def test_mlm_loss_counts_only_selected_positions():
    vocab = vocab_of(WORDS[:14])
    bert = tiny_bert(vocab=vocab)
    docs = [[vocab.encode(WORDS[i:i + 3]) for i in range(0, 12, 2)]]
    batch = text.pretraining_batch(docs, vocab, 6, np.random.default_rng(6), rate=0.4)
    assert batch.mlm_selected.any() and (~batch.mlm_selected & batch.padding_mask).any()
    loss = bert.loss(batch)
    # Changing the target of an unselected position changes nothing ...
    targets = batch.mlm_targets.copy()
    targets[~batch.mlm_selected] = (targets[~batch.mlm_selected] + 1) % len(vocab)
    same = bert.loss(batch._replace(mlm_targets=targets))
    assert same.mlm.value == loss.mlm.value and same.total.value == loss.total.value
    # ... changing a selected one does.
    targets = batch.mlm_targets.copy()
    r, c = np.argwhere(batch.mlm_selected)[0]
    targets[r, c] = (targets[r, c] + 1) % len(vocab)
    assert bert.loss(batch._replace(mlm_targets=targets)).mlm.value != loss.mlm.value
    # The loss is the mean cross-entropy at the selected positions plus the NSP cross-entropy.
    mlm, nsp = bert(batch.tokens, batch.segments, selected=batch.mlm_selected)
    expected = (F.cross_entropy(mlm, batch.mlm_targets[batch.mlm_selected]).value
                + F.cross_entropy(nsp, batch.nsp_labels).value)
    np.testing.assert_allclose(loss.total.value, expected, rtol=1e-12)
    assert loss.mlm_count == int(batch.mlm_selected.sum()) and loss.nsp_count == 6
    # No selected position: MLM contributes 0, not NaN.
    empty = bert.loss(batch._replace(mlm_selected=np.zeros_like(batch.mlm_selected)))
    assert empty.mlm.value == 0.0 and np.isfinite(empty.total.value)


def test_padded_batch_matches_sequences_run_one_by_one():
    bert = tiny_bert(seed=1)
    seqs = [np.array([2, 5, 6, 3, 7, 3]), np.array([2, 9, 3, 10, 3]), np.array([2, 11, 12, 13, 3, 14, 15, 3])]
    segs = [np.array([0, 0, 0, 0, 1, 1]), np.array([0, 0, 0, 1, 1]), np.array([0, 0, 0, 0, 0, 1, 1, 1])]
    width = max(map(len, seqs))
    tokens = np.zeros((3, width), np.int64)
    segments = np.zeros((3, width), np.int64)
    for i, (t, g) in enumerate(zip(seqs, segs)):
        tokens[i, :len(t)], segments[i, :len(g)] = t, g
    mlm, nsp = bert(tokens, segments)
    for i, (t, g) in enumerate(zip(seqs, segs)):
        one_mlm, one_nsp = bert(t[None], g[None])
        np.testing.assert_allclose(mlm.value[i, :len(t)], one_mlm.value[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(nsp.value[i], one_nsp.value[0], rtol=1e-10, atol=1e-12)


def test_check_grads_of_the_bert_loss():
    vocab = vocab_of(WORDS[:10])
    bert = tiny_bert(seed=2, vocab=vocab, layers=1)
    docs = [[vocab.encode(WORDS[i:i + 2]) for i in range(0, 10, 2)], [vocab.encode(WORDS[3:6])] * 2]
    batch = text.pretraining_batch(docs, vocab, 3, np.random.default_rng(7), rate=0.5)
    names = ["token_embedding.weight", "segment_embedding.weight", "encoder.block.0.attention.W_Q",
             "encoder.block.0.attention.b_O", "mlm_head.bias", "nsp_head.weight"]
    params = dict(bert.named_parameters())

    class Loss(nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self):
            return self.bert.loss(batch).total

    wrapper = Loss()
    ad.check_grads(lambda *ps: nn.functional_call(wrapper, {f"bert.{n}": p for n, p in zip(names, ps)}),
                   tuple(params[n].value for n in names))


def test_bert_classifier_and_errors():
    bert = tiny_bert(seed=3)
    clf = nn.BERTClassifier(bert, 4, rng=0)
    tokens = np.array([[2, 5, 6, 3], [2, 7, 3, 0]])
    logits = clf(tokens)
    assert logits.shape == (2, 4)
    # The classifier reads the pooled [CLS] output of the same encoder.
    pooled = bert.pooled(bert.hidden_states(tokens)).value
    np.testing.assert_allclose(logits.value, pooled @ clf.output.weight.value.T + clf.output.bias.value)
    F.cross_entropy(logits, np.array([1, 3])).backward()
    assert bert.encoder.block[0].ffn.W1.grad is not None       # fine-tuning trains the encoder too
    with pytest.raises(ad.ShapeError, match="max_length=16"):
        bert(np.ones((1, 17), np.int64))
    with pytest.raises(ad.ShapeError, match="segment ids"):
        bert(tokens, np.zeros((2, 3), np.int64))
    with pytest.raises(ad.ShapeError, match="out of range"):
        bert(np.array([[2, 99]]))

# ------------------------------------------------------ classification token


def test_insert_cls_positions():
    x = RNG.normal(size=(3, 4, 2))
    cls = np.array([10.0, 20.0])
    mask = np.array([[True, True, True, True], [True, True, False, False], [True, False, False, False]])
    out, m, at = nn.insert_cls(x, cls, "prepend", mask)
    assert at.tolist() == [0, 0, 0] and (out.value[:, 0] == cls).all()
    np.testing.assert_array_equal(out.value[:, 1:], x)
    assert m.sum(1).tolist() == [5, 3, 2]
    out, m, at = nn.insert_cls(x, cls, "append", mask)
    assert at.tolist() == [4, 2, 1]                         # right after each row's last real token
    for b, n in enumerate([4, 2, 1]):
        np.testing.assert_array_equal(out.value[b, :n], x[b, :n])
        np.testing.assert_array_equal(out.value[b, n], cls)
        np.testing.assert_array_equal(out.value[b, n + 1:], x[b, n:])
    assert m.sum(1).tolist() == [5, 3, 2]
    with pytest.raises(ad.ShapeError, match="padding on the right"):
        nn.insert_cls(x, cls, "append", mask[:, ::-1])
    with pytest.raises(ad.ShapeError, match="'prepend'"):
        nn.insert_cls(x, cls, "middle")


@pytest.mark.parametrize("position", ["prepend", "append"])
def test_transformer_classifier_reads_the_cls_output(position):
    model = randomise(nn.TransformerClassifier(12, 3, d_model=8, heads=2, hidden=10, layers=2,
                                               cls_position=position, rng=4), np.random.default_rng(8))
    seqs = [np.array([4, 5, 6, 7]), np.array([8, 9]), np.array([10, 11, 5])]
    tokens = np.zeros((3, 4), np.int64)
    for i, s in enumerate(seqs):
        tokens[i, :len(s)] = s
    logits = model(tokens)
    for i, s in enumerate(seqs):
        # A padded batch gives each sequence the logits it gets alone.
        np.testing.assert_allclose(logits.value[i], model(s).value, rtol=1e-10, atol=1e-12)
        # By hand: insert the vector, add the encodings, run the encoder, read the token's row.
        e = model.embedding.weight.value[s]
        x = np.concatenate([model.cls.value[None], e] if position == "prepend" else [e, model.cls.value[None]])
        x = x + nn.positional_encoding(len(s) + 1, 8)
        h = model.encoder(x[None]).value[0]
        row = h[0] if position == "prepend" else h[-1]
        np.testing.assert_allclose(logits.value[i], model.output(row).value, rtol=1e-10, atol=1e-12)
    F.cross_entropy(logits, np.array([0, 1, 2])).backward()
    assert np.abs(model.cls.grad.value).sum() > 0


def test_transformer_classifier_positions_differ_and_bad_position_raises():
    kwargs = dict(d_model=8, heads=2, hidden=10, layers=1, rng=5)
    a = nn.TransformerClassifier(12, 3, cls_position="prepend", **kwargs)
    b = nn.TransformerClassifier(12, 3, cls_position="append", **kwargs)
    b.load_state_dict(a.state_dict())
    tokens = np.array([[4, 5, 6]])
    assert not np.allclose(a(tokens).value, b(tokens).value)   # same weights, other position
    with pytest.raises(ad.ShapeError, match="cls_position"):
        nn.TransformerClassifier(12, 3, cls_position="end")

# ------------------------------------------------------------- rendering


def test_bert_renders_clusters_per_block_and_head():
    bert = nn.BERT(12, d_model=8, heads=2, hidden=16, layers=2, max_length=8, rng=0)
    tokens = np.array([[2, 6, 7, 3, 8, 3], [2, 9, 3, 10, 3, 0]])
    selected = np.zeros(tokens.shape, bool)
    selected[0, 1] = selected[1, 3] = True
    batch = text.PretrainingBatch(tokens, np.array([[0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 1, 0]]), tokens != 0,
                                  tokens, selected, np.array([1, 0]))
    source = ad.render(bert.loss(batch).total).source
    for cluster in ("embeddings", "encoder", "block.0", "block.1", "mlm_head", "pooler", "nsp_head", "loss"):
        assert f"<B>{cluster}</B>" in source, cluster
    assert source.count("<B>2 heads</B>") == 2                 # the attention heads of each block
    # One level down the identical blocks fold, the heads stay apart.
    folded = ad.render(bert.loss(batch).total, depth=1).source
    assert "block &#215; 2" in folded and "<B>block.1</B>" not in folded and "<B>mlm_head</B>" in folded
    assert "block.0..block.1 (2 folded)" in folded  # the folded node's tooltip names the range


def test_evaluate_is_the_loss_without_dropout_and_keeps_the_mode():
    # evaluate ("for held-out batches") ran in whatever mode the model was in: during training, with
    # dropout > 0, a held-out loss with random units dropped, different on every call.
    vocab = vocab_of(WORDS[:12])
    docs = [[vocab.encode(WORDS[i:i + 3]) for i in range(0, 12, 3)]]
    batch = text.pretraining_batch(docs, vocab, 4, np.random.default_rng(3), rate=0.4)
    dropped = nn.BERT(len(vocab), d_model=8, heads=2, layers=1, max_length=16, dropout=0.5, rng=0)
    plain = nn.BERT(len(vocab), d_model=8, heads=2, layers=1, max_length=16, rng=1)
    plain.load_state_dict(dropped.state_dict())
    want = plain.loss(batch)        # no dropout layer at all: the deterministic loss
    assert dropped.training
    for _ in range(2):
        got = dropped.evaluate(batch)
        np.testing.assert_allclose(got.total.value, want.total.value, rtol=1e-12)
        assert (got.mlm_correct, got.nsp_correct) == (want.mlm_correct, want.nsp_correct)
    assert dropped.training      # the training mode is restored
    dropped.eval()
    dropped.evaluate(batch)
    assert not dropped.training
