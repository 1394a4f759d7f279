"""Embeddings, word2vec and GloVe against independent numpy computations written here."""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn

# A 5-word toy corpus (ids 1..5; id 0 is [PAD] and never occurs) in two sentences.
SENTENCES = [[1, 2, 3, 4, 5, 2], [3, 1, 4]]
V, D = 6, 3


@pytest.fixture
def tables():
    rng = np.random.default_rng(3)
    return rng.normal(0, 0.7, (V, D)), rng.normal(0, 0.7, (V, D))


def log_softmax(z):
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


def numpy_skipgram_log_likelihood(v, u, sentences, m):
    """log L(θ) = Σ_t Σ_{−m≤j≤m, j≠0} log p(w_{t+j} | w_t), by explicit loops."""
    total = 0.0
    for s in sentences:
        for t in range(len(s)):
            for j in range(-m, m + 1):
                if j != 0 and 0 <= t + j < len(s):
                    total += log_softmax(u @ v[s[t]])[s[t + j]]
    return total


def numpy_cbow_log_likelihood(v, u, sentences, m):
    """Σ_t log p(w_t | mean of the context words' v), by explicit loops."""
    total = 0.0
    for s in sentences:
        for t in range(len(s)):
            ctx = [s[t + j] for j in range(-m, m + 1) if j != 0 and 0 <= t + j < len(s)]
            if ctx:
                total += log_softmax(u @ v[ctx].mean(axis=0))[s[t]]
    return total


def log_sigmoid(x):
    return -np.log1p(np.exp(-x))


# --------------------------------------------------------------- objectives

@pytest.mark.parametrize("m", [1, 2])
def test_skipgram_full_softmax_log_likelihood(tables, m):
    v, u = tables
    centres, contexts = nn.skipgram_pairs(SENTENCES, m)
    got = nn.skipgram_log_likelihood(v, u, centres, contexts)
    assert np.isclose(got.value, numpy_skipgram_log_likelihood(v, u, SENTENCES, m), rtol=1e-12)
    model = nn.SkipGram(V, D)
    model.input_embeddings.weight.value[...] = v
    model.output_embeddings.weight.value[...] = u
    assert np.isclose(model.loss(centres, contexts).value, -got.value / len(centres))


@pytest.mark.parametrize("m", [1, 2])
def test_cbow_full_softmax_log_likelihood(tables, m):
    v, u = tables
    contexts, mask, centres = nn.cbow_windows(SENTENCES, m)
    got = nn.cbow_log_likelihood(v, u, contexts, centres, mask)
    assert np.isclose(got.value, numpy_cbow_log_likelihood(v, u, SENTENCES, m), rtol=1e-12)
    model = nn.CBOW(V, D)
    model.input_embeddings.weight.value[...] = v
    model.output_embeddings.weight.value[...] = u
    assert np.isclose(model.loss(contexts, centres, mask=mask).value, -got.value / len(centres))


def test_negative_sampling_loss(tables):
    v, u = tables
    centres, contexts = np.array([1, 2, 3, 3]), np.array([2, 3, 1, 5])
    negatives = np.array([[4, 5], [1, 1], [2, 4], [3, 5]])  # a repeated negative counts twice
    expect = np.mean([-log_sigmoid(u[o] @ v[c]) - sum(log_sigmoid(-u[k] @ v[c]) for k in ks)
                      for c, o, ks in zip(centres, contexts, negatives)])
    assert np.isclose(nn.sgns_loss(v, u, centres, contexts, negatives).value, expect, rtol=1e-12)
    # CBOW's negative sampling uses the mean context vector as h.
    ctx = np.array([[1, 2], [3, 0]])
    mask = np.array([[1.0, 1.0], [1.0, 0.0]])
    h = np.stack([v[[1, 2]].mean(0), v[3]])
    expect = np.sum([-log_sigmoid(u[o] @ hh) - sum(log_sigmoid(-u[k] @ hh) for k in ks)
                     for hh, o, ks in zip(h, [4, 5], [[1, 2], [3, 3]])])
    got = nn.negative_sampling_loss(nn.cbow_hidden(v, ctx, mask), u, np.array([4, 5]), np.array([[1, 2], [3, 3]]),
                                    reduction="sum")
    assert np.isclose(got.value, expect, rtol=1e-12)


def test_negative_sampling_is_stable_for_large_scores():
    v = np.full((3, 2), 30.0)
    u = np.full((3, 2), 30.0)  # scores 1800: σ rounds to 1, log σ(−x) must not be −inf
    loss = nn.sgns_loss(v, u, np.array([0]), np.array([1]), np.array([[2]]))
    assert np.isclose(loss.value, 1800.0)


def numpy_glove_j(w, wt, b, bt, x, x_max=100.0, alpha=0.75):
    total = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] > 0:
                f = (x[i, j] / x_max) ** alpha if x[i, j] < x_max else 1.0
                total += f * (w[i] @ wt[j] + b[i] + bt[j] - np.log(x[i, j])) ** 2
    return total


def test_glove_weighting_below_at_and_above_x_max():
    f = nn.glove_weighting(np.array([0.0, 1.0, 50.0, 100.0, 250.0]))
    assert np.allclose(f, [0.0, 0.01 ** 0.75, 0.5 ** 0.75, 1.0, 1.0])
    assert np.allclose(nn.glove_weighting([2.0, 8.0], x_max=4.0, alpha=0.5), [np.sqrt(0.5), 1.0])


def test_glove_loss_skips_zero_counts(tables):
    w, wt = tables
    rng = np.random.default_rng(1)
    b, bt = rng.normal(size=V), rng.normal(size=V)
    x = np.zeros((V, V))
    x[1, 2], x[2, 1], x[3, 4], x[4, 4], x[5, 1] = 0.5, 30.0, 100.0, 250.0, 1.0  # below, at, above x_max
    expect = numpy_glove_j(w, wt, b, bt, x)
    assert np.isfinite(expect)
    assert np.isclose(nn.glove_loss(w, wt, b, bt, x).value, expect, rtol=1e-12)
    rows, cols = np.nonzero(x)
    # Explicit zero-count pairs in the triple form are skipped too (log 0 would be −inf).
    rows0, cols0 = np.concatenate([rows, [0, 2]]), np.concatenate([cols, [0, 3]])
    counts0 = np.concatenate([x[rows, cols], [0.0, 0.0]])
    assert np.isclose(nn.glove_loss(w, wt, b, bt, (rows0, cols0, counts0)).value, expect, rtol=1e-12)
    assert np.isclose(nn.glove_loss(w, wt, b, bt, x, reduction="mean").value, expect / 5)
    model = nn.GloVe(V, D)
    model.w.weight.value[...], model.w_tilde.weight.value[...] = w, wt
    model.b.value[...], model.b_tilde.value[...] = b, bt
    assert np.isclose(model.loss(x).value, expect)
    assert np.allclose(model.vectors(), w + wt)


def test_cooccurrence_counts_weighted_by_inverse_distance():
    m = 2
    x = nn.cooccurrence_counts(SENTENCES, V, window=m).dense()
    expect = np.zeros((V, V))
    for s in SENTENCES:
        for t in range(len(s)):
            for j in range(-m, m + 1):
                if j != 0 and 0 <= t + j < len(s):
                    expect[s[t], s[t + j]] += 1.0 / abs(j)
    assert np.allclose(x, expect) and np.allclose(x, x.T)
    plain = nn.cooccurrence_counts(SENTENCES, V, window=m, distance_weighting=False).dense()
    assert plain[1, 3] == 1 + 1  # "1 2 3" in sentence 1 (distance 2), "3 1" in sentence 2
    ignored = nn.cooccurrence_counts(SENTENCES, V, window=m, ignore=[2]).dense()
    assert ignored[2].sum() == 0 and ignored[:, 2].sum() == 0 and ignored[1, 3] == x[1, 3]


def test_skipgram_pairs_and_cbow_windows_stay_inside_sentences():
    c, o = nn.skipgram_pairs(SENTENCES, 1)
    expect = sorted((s[t], s[t + j]) for s in SENTENCES for t in range(len(s)) for j in (-1, 1)
                    if 0 <= t + j < len(s))
    assert sorted(zip(c.tolist(), o.tolist())) == expect
    contexts, mask, centres = nn.cbow_windows([[4], [1, 2]], 1)
    assert centres.tolist() == [1, 2]  # the one-word sentence has no context
    assert contexts.tolist() == [[0, 2], [1, 0]] and mask.tolist() == [[0, 1], [1, 0]]


# ------------------------------------------------------ gradient checks

def test_check_grads_skipgram_and_cbow_both_tables(tables):
    centres, contexts = nn.skipgram_pairs(SENTENCES, 2)
    ad.check_grads(lambda v, u: nn.skipgram_log_likelihood(v, u, centres, contexts), tables,
                   names=["input_table", "output_table"])
    ctx, mask, ctr = nn.cbow_windows(SENTENCES, 2)
    ad.check_grads(lambda v, u: nn.cbow_log_likelihood(v, u, ctx, ctr, mask), tables,
                   names=["input_table", "output_table"])


def test_check_grads_negative_sampling_both_tables(tables):
    centres, contexts = nn.skipgram_pairs(SENTENCES, 1)
    negatives = nn.NegativeSampler([0, 3, 2, 2, 1, 1], rng=0).sample((len(centres), 3))
    ad.check_grads(lambda v, u: nn.sgns_loss(v, u, centres, contexts, negatives), tables,
                   names=["input_table", "output_table"])
    ctx, mask, ctr = nn.cbow_windows(SENTENCES, 1)
    neg = negatives[:len(ctr)]
    ad.check_grads(lambda v, u: nn.negative_sampling_loss(nn.cbow_hidden(v, ctx, mask), u, ctr, neg), tables)


def test_check_grads_glove_all_parameters(tables):
    x = nn.cooccurrence_counts(SENTENCES, V, window=2)
    rng = np.random.default_rng(2)
    ad.check_grads(lambda w, wt, b, bt: nn.glove_loss(w, wt, b, bt, x, x_max=1.5), tables +
                   (rng.normal(size=V), rng.normal(size=V)), names=["w", "w_tilde", "b", "b_tilde"])


def test_lookup_gradient_is_a_scatter_add_not_a_one_hot_product():
    emb = nn.Embedding(5, 2, rng=0)
    ids = np.array([[1, 3], [1, 1]])
    program = ad.trace(lambda t: ad.take(t, ids).sum(), emb.weight.value)
    ops = [n.op for n in ad.grad_program(program).nodes]
    assert "take_add" in ops and "one_hot" not in ops and "matmul" not in ops
    weights = np.arange(8.0).reshape(4, 2)
    emb(ids).__mul__(weights.reshape(2, 2, 2)).sum().backward()
    expect = np.zeros((5, 2))
    np.add.at(expect, ids, weights.reshape(2, 2, 2))
    assert np.array_equal(emb.weight.grad.value, expect)


# ------------------------------------------------------- modules and queries

def test_embedding_padding_and_errors():
    emb = nn.Embedding(4, 3, padding_idx=0, rng=0)
    assert np.all(emb.weight.value[0] == 0)
    out = emb(np.array([0, 2, 0]))
    assert out.shape == (3, 3) and np.all(out.value[[0, 2]] == 0)
    out.sum().backward()
    assert np.all(emb.weight.grad.value[0] == 0) and np.all(emb.weight.grad.value[2] == 1)
    with pytest.raises(ad.ShapeError, match=r"Embedding\(4, 3\): id 4 is out of range"):
        emb(np.array([1, 4]))
    with pytest.raises(ad.ShapeError, match=r"id -1 is out of range"):
        emb(np.array([-1]))
    with pytest.raises(ad.ShapeError, match="integer ids"):
        emb(np.array([1.0]))
    with pytest.raises(ad.AutogradDagError, match="embedding_dim"):
        nn.Embedding(4, 0)
    assert set(emb.state_dict()) == {"weight"}


def test_loss_errors_name_what_is_wrong(tables):
    v, u = tables
    with pytest.raises(ad.ShapeError, match="sgns_loss: id 6 is out of range"):
        nn.sgns_loss(v, u, np.array([6]), np.array([1]), np.array([[2]]))
    with pytest.raises(ad.ShapeError, match=r"negatives of shape \(N, k\)"):
        nn.sgns_loss(v, u, np.array([1]), np.array([1]), np.array([2]))
    with pytest.raises(ad.ShapeError, match="no context word"):
        nn.cbow_hidden(v, np.array([[1, 2]]), np.array([[0.0, 0.0]]))
    with pytest.raises(ad.ShapeError, match=r"dense co-occurrence matrix of shape \(6, 6\)"):
        nn.glove_loss(v, u, np.zeros(V), np.zeros(V), np.ones((3, 3)))
    with pytest.raises(ad.ShapeError, match="b of shape"):
        nn.glove_loss(v, u, np.zeros(V + 1), np.zeros(V), np.ones((V, V)))
    with pytest.raises(ad.AutogradDagError, match="window"):
        nn.skipgram_pairs(SENTENCES, 0)


def test_negative_sampler_follows_unigram_to_the_three_quarters():
    counts = np.array([0, 1000, 100, 10, 0, 1])
    sampler = nn.NegativeSampler(counts, rng=0)
    expect = np.where(counts > 0, counts ** 0.75, 0) / (counts[counts > 0] ** 0.75).sum()
    assert np.allclose(sampler.probabilities, expect)
    draws = sampler.sample((200_000,))
    freq = np.bincount(draws, minlength=len(counts)) / draws.size
    assert freq[0] == 0 and freq[4] == 0  # zero-count ids (special tokens) are never drawn
    assert np.allclose(freq, expect, atol=0.005)


def test_negative_sampler_never_draws_a_trailing_zero_count_word():
    # Ten shares of 0.1 sum to 1 − 2⁻⁵³ in floating point: a uniform draw of exactly 1 − 2⁻⁵³
    # (a value numpy's generator can return) fell past the last real word onto the count-0 id.
    sampler = nn.NegativeSampler([1] * 10 + [0], rng=0)

    class Highest:
        def random(self, shape):
            return np.full(shape, 1 - 2.0 ** -53)

    sampler.rng = Highest()
    assert sampler.sample((3,)).tolist() == [9, 9, 9]


def test_subsample_keeps_each_word_with_probability_sqrt_t_over_f():
    counts = np.array([0, 9000, 900, 90, 10])  # shares .9, .09, .009, .001
    sentences = [np.repeat(np.arange(5), counts)] * 100
    kept = np.bincount(np.concatenate(nn.subsample(sentences, counts, threshold=1e-3, rng=0)), minlength=5)
    rate = kept[1:] / (100 * counts[1:])
    expect = np.sqrt(1e-3 / (counts[1:] / counts.sum()))  # 0.033, 0.105, 0.333, then 1.05 -> kept always
    assert np.allclose(rate, np.minimum(1, expect), atol=0.015) and rate[-1] == 1.0


def test_word_vectors_queries():
    words = ["[PAD]", "king", "queen", "man", "woman", "apple"]
    vectors = np.array([[0, 0, 0], [1, 1, 0], [1, 0, 1], [0, 1, 0], [0, 0, 1], [-1, 0.2, 0.1]], dtype=float)
    wv = nn.WordVectors(vectors, words)
    assert wv.analogy("king", "man", "woman")[0][0] == "queen"
    best = wv.most_similar("king", k=10)
    assert [w for w, _ in best][:1] in (["man"], ["queen"]) and "king" not in dict(best)
    assert "[PAD]" not in dict(best) and len(best) == 4
    sims = [s for _, s in best]
    assert sims == sorted(sims, reverse=True)
    assert np.isclose(wv.similarity("man", "woman"), 0.0)
    with pytest.raises(ad.AutogradDagError, match="'pear' is not in the vocabulary"):
        wv.most_similar("pear")


def test_word_vector_ties_at_the_cut_are_broken_by_id():
    # 1000 equal vectors: argpartition alone kept arbitrary tied words (w656, w657, w671).
    wv = nn.WordVectors(np.ones((1000, 3)), [f"w{i}" for i in range(1000)])
    assert [w for w, _ in wv.most_similar("w0", k=3)] == ["w1", "w2", "w3"]
    vectors = np.ones((1000, 2))
    vectors[500] = [1.0, 2.0]  # the one best word first, then the lowest ids of the tie
    wv = nn.WordVectors(vectors, [f"w{i}" for i in range(1000)])
    assert [w for w, _ in wv.nearest(np.array([1.0, 2.0]), k=3)] == ["w500", "w0", "w1"]
    assert wv.nearest(np.array([1.0, 2.0]), k=0) == []


def test_models_train_and_answer_queries():
    # Two groups of words that never share a sentence: after training, each
    # word's nearest neighbour is in its own group.
    rng = np.random.default_rng(0)
    words = ["[PAD]", "a1", "a2", "a3", "b1", "b2", "b3"]
    sentences = [rng.choice([1, 2, 3] if i % 2 else [4, 5, 6], size=8) for i in range(200)]
    counts = np.bincount(np.concatenate(sentences), minlength=len(words))
    model = nn.SkipGram(words, 8, rng=0)
    sampler = nn.NegativeSampler(counts, rng=1)
    opt = ad.optim.Adam(model.parameters(), lr=0.05)
    centres, contexts = nn.skipgram_pairs(sentences, 2)
    losses = []
    for _ in range(60):
        loss = model.loss(centres, contexts, sampler.sample((len(centres), 3)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.value))
    assert losses[-1] < 0.8 * losses[0]
    for w in words[1:]:
        assert model.most_similar(w, 1)[0][0][0] == w[0]
    glove = nn.GloVe(words, 8, x_max=10.0, rng=0)
    x = nn.cooccurrence_counts(sentences, len(words), window=3)
    opt = ad.optim.Adam(glove.parameters(), lr=0.05)
    first = None
    for _ in range(150):
        j = glove.loss(x)
        first = first or float(j.value)
        opt.zero_grad()
        j.backward()
        opt.step()
    assert float(j.value) < 0.1 * first
    assert glove.most_similar("b2", 2)[0][0].startswith("b")
