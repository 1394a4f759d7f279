"""word2vec (seed 003 §13.1): skip-gram and CBOW, with the full-softmax likelihood and negative sampling.

Both models keep two tables, as Mikolov et al.: input vectors v_w (the word
as centre, or as context in CBOW) and output vectors u_w (the word as the
thing predicted). The probability of a word o given a hidden vector h is the
softargmax over the whole vocabulary,

    p(o | h) = exp(u_oᵀh) / Σ_w exp(u_wᵀh),

with h = v_c for skip-gram (predict each context word from the centre word
c) and h = the mean of the context words' v for CBOW (predict the centre
word from its context). The seed's objective is the likelihood

    L(θ) = ∏_t ∏_{−m≤j≤m, j≠0} p(w_{t+j} | w_t; θ)

over the positions t of the corpus (the seed writes the outer product over
i = 1..N but indexes t: the evident intent is one factor per position).
:func:`skipgram_log_likelihood` computes log L exactly; it costs O(V) per
pair. Negative sampling (:func:`negative_sampling_loss`) is the fast
objective: for each true pair, push σ(u_oᵀh) to 1 and σ(u_kᵀh) to 0 for k
words drawn from the unigram distribution raised to the power 3/4.

Every loss is built from public Tensor operations; the lookups are
``ad.take``, whose gradient scatter-adds into the looked-up rows.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core import Tensor
from ..errors import AutogradDagError, ShapeError
from ..primitives.elementwise import softplus
from ..primitives.indexing import take
from ..primitives.linalg import matmul
from ..primitives.fused import logsumexp
from ..primitives.reductions import mean
from ..primitives.structure import expand_dims, sum as _sum, transpose
from . import init as _init
from .embedding import Embedding, WordVectors, check_ids, vocabulary_words
from .module import Module

__all__ = ["skipgram_log_likelihood", "cbow_log_likelihood", "negative_sampling_loss", "sgns_loss",
           "cbow_hidden", "skipgram_pairs", "cbow_windows", "subsample", "NegativeSampler", "Word2Vec",
           "SkipGram", "CBOW"]


def _table_size(name: str, table) -> int:
    shape = np.shape(table.value if isinstance(table, Tensor) else table)
    if len(shape) != 2:
        raise ShapeError(f"{name}: Expect: an embedding table of shape (V, d). Actual: shape {tuple(shape)}")
    return shape[0]


def _ids(name: str, ids, size: int, shape_of: str, expect_ndim: int):
    arr = check_ids(name, ids, size)
    if arr.ndim != expect_ndim:
        raise ShapeError(f"{name}: Expect: {shape_of}. Actual: ids of shape {arr.shape}")
    # An integer Tensor comes back as it is (a jit input stays one, and a
    # rendered program labels a named input "centres" rather than "array[4]").
    return arr


def _count(ids) -> int:
    """Number of examples in an id array (at least 1, so an empty batch averages to 0, not NaN)."""
    shape = np.shape(ids.value if isinstance(ids, Tensor) else ids)
    return max(shape[0] if shape else 1, 1)


def _reduce(loss: Tensor, reduction: str, name: str) -> Tensor:
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return _sum(loss)
    if reduction == "none":
        return loss
    raise AutogradDagError(f"{name}: reduction must be 'mean', 'sum' or 'none'; got {reduction!r}")

# ------------------------------------------------------------ objectives


def full_softmax_log_probs(hidden, output_table, targets) -> Tensor:
    """log p(target | hidden) = u_targetᵀh − log Σ_w exp(u_wᵀh), over the whole vocabulary.

    Shapes: hidden (N, d), output_table (V, d), targets (N,) ints -> (N,).
    """
    size = _table_size("full_softmax_log_probs", output_table)
    targets = _ids("full_softmax_log_probs", targets, size, "targets of shape (N,)", 1)
    scores = matmul(hidden, transpose(output_table))  # (N, V): one score per word of the vocabulary
    # The target's score by a row lookup: no dense one-hot (N, V) matrix.
    target_scores = _sum(take(output_table, targets) * hidden, axis=-1)
    return target_scores - logsumexp(scores, axis=-1)


def skipgram_log_likelihood(input_table, output_table, centres, contexts) -> Tensor:
    """log L = Σ over (centre c, context o) pairs of log p(o | c) with the full softmax (exact, O(V) per pair).

    p(o | c) = exp(u_oᵀv_c) / Σ_w exp(u_wᵀv_c), v = ``input_table``, u = ``output_table``.
    Pass every pair within the window (:func:`skipgram_pairs`) to get the
    seed's log L(θ). Shapes: tables (V, d); centres, contexts (N,) ints -> ().

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> v, u = np.zeros((4, 3)), np.zeros((4, 3))  # all words equally likely
        >>> ll = nn.skipgram_log_likelihood(v, u, np.array([0, 1]), np.array([1, 2]))
        >>> bool(np.isclose(ll.value, 2 * np.log(1 / 4)))
        True
    """
    size = _table_size("skipgram_log_likelihood", input_table)
    centres = _ids("skipgram_log_likelihood", centres, size, "centres of shape (N,)", 1)
    hidden = take(input_table, centres)
    return _sum(full_softmax_log_probs(hidden, output_table, contexts))


def cbow_hidden(input_table, contexts, mask=None) -> Tensor:
    """CBOW's hidden vector: the mean of the context words' input vectors (masked positions left out).

    Shapes: input_table (V, d); contexts (N, C) ints; mask (N, C) of 0/1 (or
    None: all used) -> (N, d). A row whose mask is all zero raises ShapeError.
    """
    size = _table_size("cbow_hidden", input_table)
    contexts = _ids("cbow_hidden", contexts, size, "contexts of shape (N, C)", 2)
    vectors = take(input_table, contexts)  # (N, C, d)
    if mask is None:
        return mean(vectors, axis=1)
    mask = np.asarray(mask, dtype=vectors.dtype)
    if mask.shape != contexts.shape:
        raise ShapeError(f"cbow_hidden: Expect: a mask of the contexts' shape {contexts.shape}. "
                         f"Actual: {mask.shape}")
    counts = mask.sum(axis=1, keepdims=True)
    if np.any(counts == 0):
        raise ShapeError(f"cbow_hidden: row {int(np.argmax(counts[:, 0] == 0))} has no context word "
                         f"(its mask is all zero)")
    weights = (mask / counts)[..., None]  # a constant: the mask is data, not a parameter
    return _sum(vectors * weights, axis=1)


def cbow_log_likelihood(input_table, output_table, contexts, centres, mask=None) -> Tensor:
    """Σ_t log p(w_t | context of t): CBOW's full-softmax log-likelihood (exact, O(V) per example).

    p(c | context) = exp(u_cᵀh) / Σ_w exp(u_wᵀh) with h the mean of the
    context words' input vectors. Shapes: tables (V, d); contexts (N, C)
    ints; centres (N,) ints; mask (N, C) or None -> ().

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> v, u = np.zeros((4, 3)), np.zeros((4, 3))
        >>> ll = nn.cbow_log_likelihood(v, u, np.array([[1, 2]]), np.array([0]))
        >>> bool(np.isclose(ll.value, np.log(1 / 4)))
        True
    """
    return _sum(full_softmax_log_probs(cbow_hidden(input_table, contexts, mask), output_table, centres))


def negative_sampling_loss(hidden, output_table, targets, negatives, reduction: str = "mean") -> Tensor:
    """−log σ(u_oᵀh) − Σ_k log σ(−u_kᵀh) per example: the true word o against k sampled negatives.

    Written as softplus(−u_oᵀh) + Σ_k softplus(u_kᵀh), which is the same and
    never takes the log of a rounded-to-zero σ. Shapes: hidden (N, d);
    output_table (V, d); targets (N,) ints; negatives (N, k) ints -> ()
    (or (N,) with ``reduction='none'``).
    """
    size = _table_size("negative_sampling_loss", output_table)
    targets = _ids("negative_sampling_loss", targets, size, "targets of shape (N,)", 1)
    negatives = _ids("negative_sampling_loss", negatives, size, "negatives of shape (N, k)", 2)
    n = np.shape(hidden.value if isinstance(hidden, Tensor) else hidden)[0]
    if targets.shape[0] != n or negatives.shape[0] != n:
        raise ShapeError(f"negative_sampling_loss: Expect: N = {n} targets and N rows of negatives (one per "
                         f"hidden vector). Actual: targets {targets.shape}, negatives {negatives.shape}")
    positive = _sum(take(output_table, targets) * hidden, axis=-1)  # (N,)
    negative = _sum(take(output_table, negatives) * expand_dims(hidden, 1), axis=-1)  # (N, k)
    loss = softplus(-positive) + _sum(softplus(negative), axis=-1)
    return _reduce(loss, reduction, "negative_sampling_loss")


def sgns_loss(input_table, output_table, centres, contexts, negatives, reduction: str = "mean") -> Tensor:
    """Skip-gram with negative sampling: :func:`negative_sampling_loss` with h = v_centre.

    Shapes: tables (V, d); centres, contexts (N,) ints; negatives (N, k) ints -> ().

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> v, u = np.zeros((4, 3)), np.zeros((4, 3))  # every σ is 1/2
        >>> loss = nn.sgns_loss(v, u, np.array([0]), np.array([1]), np.array([[2, 3]]))
        >>> bool(np.isclose(loss.value, 3 * np.log(2)))
        True
    """
    size = _table_size("sgns_loss", input_table)
    centres = _ids("sgns_loss", centres, size, "centres of shape (N,)", 1)
    return negative_sampling_loss(take(input_table, centres), output_table, contexts, negatives, reduction)

# ------------------------------------------------------ training data


def _flatten(sentences) -> tuple[np.ndarray, np.ndarray]:
    """All ids in one array, and each id's sentence number."""
    arrays = [np.asarray(s, dtype=np.int64).reshape(-1) for s in sentences]
    if not arrays:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ids = np.concatenate(arrays)
    sentence = np.repeat(np.arange(len(arrays)), [len(a) for a in arrays])
    return ids, sentence


def _check_window(name: str, window) -> int:
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise AutogradDagError(f"{name}: Expect: window m a positive integer. Actual: {window!r}")
    return int(window)


def skipgram_pairs(sentences: Sequence, window: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (centre w_t, context w_{t+j}) pair with 0 < |j| ≤ m inside one sentence.

    Exactly the factors of the seed's L(θ). Pairs come ordered by offset j
    (−m … m), then position. Shapes: sentences of ids -> (centres (P,), contexts (P,)) int64.
    Example: ``skipgram_pairs([[5, 6, 7]], 1)`` is ``([6, 7, 5, 6], [5, 6, 6, 7])``.
    """
    m = _check_window("skipgram_pairs", window)
    ids, sentence = _flatten(sentences)
    centres, contexts = [], []
    for j in [*range(-m, 0), *range(1, m + 1)]:
        t = np.arange(max(0, -j), max(0, len(ids) - max(0, j)))
        t = t[sentence[t] == sentence[t + j]]
        centres.append(ids[t])
        contexts.append(ids[t + j])
    if not centres:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(centres), np.concatenate(contexts)


def cbow_windows(sentences: Sequence, window: int, pad_id: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each position t with at least one context word: its ≤ 2m context ids, their mask, and w_t.

    Context slots outside the sentence hold ``pad_id`` with mask 0.
    Shapes: sentences of ids -> (contexts (N, 2m), mask (N, 2m) float64, centres (N,)).
    Example: ``cbow_windows([[5, 6, 7]], 1)[0].tolist() == [[0, 6], [5, 7], [6, 0]]``.
    """
    m = _check_window("cbow_windows", window)
    ids, sentence = _flatten(sentences)
    offsets = np.array([*range(-m, 0), *range(1, m + 1)])
    pos = np.arange(len(ids))[:, None] + offsets  # (n, 2m)
    inside = (pos >= 0) & (pos < len(ids))
    clipped = np.clip(pos, 0, max(len(ids) - 1, 0))
    valid = inside & (sentence[clipped] == sentence[:, None]) if len(ids) else inside
    contexts = np.where(valid, ids[clipped] if len(ids) else 0, pad_id).astype(np.int64)
    keep = valid.any(axis=1)
    return contexts[keep], valid[keep].astype(np.float64), ids[keep]


def subsample(sentences: Sequence, counts, threshold: float = 1e-4, rng=None) -> list[np.ndarray]:
    """Drop each occurrence of word w with probability 1 − √(t / f(w)) (Mikolov et al. 2013).

    f(w) is w's share of all tokens (from ``counts``, indexed by id) and t the
    ``threshold``: very frequent words ("the", "of") are mostly dropped, which
    speeds training and lets rarer words' contexts count. Shapes: sentences
    of ids -> sentences of ids (each possibly shorter).
    """
    counts = np.asarray(counts, dtype=np.float64)
    freq = counts / max(counts.sum(), 1.0)
    keep_prob = np.minimum(1.0, np.sqrt(threshold / np.maximum(freq, 1e-300)))
    gen = _init.as_generator(rng)
    out = []
    for s in sentences:
        s = np.asarray(s, dtype=np.int64)
        out.append(s[gen.random(len(s)) < keep_prob[s]])
    return out


class NegativeSampler:
    """Draws negative words from the unigram distribution raised to ``power`` (3/4 by default).

    P(w) ∝ count(w)^{3/4}: flatter than the unigram distribution, so rare
    words are drawn more often than their frequency (Mikolov et al. 2013).
    Words with count 0 (special tokens) are never drawn. Draws are independent
    of the example: a negative may be the example's true word (the original C
    code skips such a draw; with a large vocabulary it is rare, and the loss
    then counts it as a negative too).
    Shapes: ``sample((N, k))`` -> (N, k) int64 ids.

    Example:
        >>> from autograd_dag import nn
        >>> s = nn.NegativeSampler([0, 16, 1], rng=0)
        >>> s.probabilities.round(3).tolist()
        [0.0, 0.889, 0.111]
        >>> s.sample((2, 3)).shape
        (2, 3)
    """

    def __init__(self, counts, power: float = 0.75, rng=None):
        counts = np.asarray(counts, dtype=np.float64)
        if counts.ndim != 1 or np.any(counts < 0) or counts.sum() <= 0:
            raise AutogradDagError("NegativeSampler: Expect: non-negative counts per id with a positive total. "
                                   f"Actual: shape {counts.shape}, total {counts.sum() if counts.size else 0}")
        weights = counts ** power
        weights[counts == 0] = 0.0
        self.probabilities = weights / weights.sum()
        self._cdf = np.cumsum(self.probabilities)
        # Rounding can leave the sum short of 1: the last word that can be drawn ends the CDF at 1
        # exactly (not the last id, which may be a count-0 word that a u near 1 would then draw).
        self._cdf[np.flatnonzero(weights)[-1]:] = 1.0
        self.rng = _init.as_generator(rng)

    def sample(self, shape) -> np.ndarray:
        """Ids drawn independently with :attr:`probabilities`; an inverse-CDF lookup, O(log V) each."""
        ids = np.searchsorted(self._cdf, self.rng.random(shape), side="right")
        return np.minimum(ids, len(self._cdf) - 1).astype(np.int64)

# --------------------------------------------------------------- models


class Word2Vec(Module):
    """Base of :class:`SkipGram` and :class:`CBOW`: input and output embedding tables and word queries.

    ``vocab`` is a :class:`~autograd_dag.text.Vocabulary`, a sequence of words
    (id → word), or just the vocabulary size V (then word queries are not
    available). Input vectors start uniform in ±0.5/d and output vectors at
    zero, as in the original word2vec. Shapes: both tables (V, d).
    """

    def __init__(self, vocab, dim: int, *, rng=None, dtype=np.float64):
        super().__init__()
        self.words = vocabulary_words(vocab)
        size = len(self.words) if self.words is not None else vocab
        self.input_embeddings = Embedding(size, dim, std=0.0, dtype=dtype)
        self.output_embeddings = Embedding(size, dim, std=0.0, dtype=dtype)
        d = self.input_embeddings.embedding_dim
        self.input_embeddings.weight.value[...] = _init.as_generator(rng).uniform(-0.5 / d, 0.5 / d, (size, d))

    @property
    def vocab_size(self) -> int:
        return self.input_embeddings.num_embeddings

    def word_vectors(self) -> WordVectors:
        """The input vectors v_w (the usual word2vec embedding) with the words, for queries."""
        if self.words is None:
            raise AutogradDagError(f"{type(self).__name__}: built from a vocabulary size, so it has no words; "
                                   f"pass a Vocabulary or a list of words")
        return WordVectors(self.input_embeddings.weight.value, self.words)

    def most_similar(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The k words whose input vectors are closest to ``word``'s by cosine similarity."""
        return self.word_vectors().most_similar(word, k)

    def analogy(self, a: str, b: str, c: str, k: int = 1) -> list[tuple[str, float]]:
        """The k words closest to a − b + c (e.g. "king" − "man" + "woman")."""
        return self.word_vectors().analogy(a, b, c, k)

    def extra_repr(self) -> str:
        return f"{self.vocab_size}, {self.input_embeddings.embedding_dim}"


class SkipGram(Word2Vec):
    """Skip-gram: predict each context word within the window from the centre word.

    ``log_likelihood`` is the seed's exact log L(θ) over the given pairs;
    ``loss`` is its negative mean (full softmax) or, given negatives, the
    negative-sampling loss. Shapes: centres, contexts (N,) ints; negatives (N, k) ints -> ().

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> model = nn.SkipGram(["[PAD]", "a", "b", "c"], 8, rng=0)
        >>> centres, contexts = nn.skipgram_pairs([[1, 2, 3]], window=1)
        >>> loss = model.loss(centres, contexts, negatives=np.array([[3], [1], [3], [1]]))
        >>> loss.backward()
        >>> model.input_embeddings.weight.grad.shape
        (4, 8)
    """

    def log_likelihood(self, centres, contexts) -> Tensor:
        return skipgram_log_likelihood(self.input_embeddings.weight, self.output_embeddings.weight,
                                       centres, contexts)

    def loss(self, centres, contexts, negatives=None) -> Tensor:
        """Mean over pairs of −log p(o | c) (full softmax), or the negative-sampling loss given negatives."""
        if negatives is None:
            return self.log_likelihood(centres, contexts) * (-1.0 / _count(centres))
        return sgns_loss(self.input_embeddings.weight, self.output_embeddings.weight, centres, contexts,
                         negatives)

    def forward(self, centres, contexts, negatives=None) -> Tensor:
        return self.loss(centres, contexts, negatives)


class CBOW(Word2Vec):
    """Continuous bag of words: predict the centre word from the mean of its context words' input vectors.

    Shapes: contexts (N, C) ints, centres (N,) ints, mask (N, C) or None,
    negatives (N, k) ints -> ().

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> model = nn.CBOW(["[PAD]", "a", "b", "c"], 8, rng=0)
        >>> contexts, mask, centres = nn.cbow_windows([[1, 2, 3]], window=1)
        >>> bool(np.isclose(model.loss(contexts, centres, mask=mask).value, np.log(4)))  # u = 0: uniform
        True
    """

    def log_likelihood(self, contexts, centres, mask=None) -> Tensor:
        return cbow_log_likelihood(self.input_embeddings.weight, self.output_embeddings.weight, contexts,
                                   centres, mask)

    def loss(self, contexts, centres, negatives=None, mask=None) -> Tensor:
        """Mean over examples of −log p(centre | context), or the negative-sampling loss given negatives."""
        if negatives is None:
            return self.log_likelihood(contexts, centres, mask) * (-1.0 / _count(centres))
        hidden = cbow_hidden(self.input_embeddings.weight, contexts, mask)
        return negative_sampling_loss(hidden, self.output_embeddings.weight, centres, negatives)

    def forward(self, contexts, centres, negatives=None, mask=None) -> Tensor:
        return self.loss(contexts, centres, negatives, mask)
