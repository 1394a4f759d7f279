"""BERT's pretraining data (seed 003 §13.3): sentence pairs for NSP, masked tokens for MLM, padded batches.

Everything here is numpy on integer ids; the model that reads the batches is
:class:`autograd_dag.nn.BERT`.

* :func:`sentence_pairs`: (A, B, is_next) triples, half of them two
  consecutive sentences of a document (is_next = 1), half a sentence and a
  random sentence of the corpus (is_next = 0);
* :func:`pack_pair`: ``[CLS] A [SEP] B [SEP]`` with segment ids 0 … 0 1 … 1;
* :func:`mask_tokens`: the MLM corruption — 15 % of the ordinary tokens
  selected, replaced by ``[MASK]`` (the seed's rule, ``strategy="mask"``) or
  by the original BERT's 80 % ``[MASK]`` / 10 % random token / 10 % unchanged
  (``strategy="bert"``);
* :func:`pretraining_batch`: all of it for a batch, padded with ``[PAD]``.

Example:
    >>> import numpy as np
    >>> from autograd_dag import text
    >>> vocab = text.Vocabulary.build([["a", "b", "c", "d"]])
    >>> docs = [[vocab.encode(["a", "b"]), vocab.encode(["c"])], [vocab.encode(["d", "a"])]]
    >>> batch = text.pretraining_batch(docs, vocab, 4, np.random.default_rng(0))
    >>> batch.tokens.shape == batch.segments.shape == batch.padding_mask.shape
    True
    >>> sorted(set(batch.nsp_labels.tolist())) <= [0, 1]
    True
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from .vocab import CLS, MASK, PAD, SEP, TextError, Vocabulary

__all__ = ["MaskedTokens", "PretrainingBatch", "mask_tokens", "sentence_pairs", "pack_pair",
           "pretraining_batch"]

MASK_STRATEGIES = ("mask", "bert")


class MaskedTokens(NamedTuple):
    """The result of :func:`mask_tokens`; all three arrays have the shape of the input ids.

    ``inputs``: the corrupted ids the model reads; ``targets``: the original
    ids (the MLM labels); ``selected``: True where the loss is computed.
    """

    inputs: np.ndarray
    targets: np.ndarray
    selected: np.ndarray


class PretrainingBatch(NamedTuple):
    """One BERT batch (:func:`pretraining_batch`). Shapes: (B, L) arrays and (B,) labels.

    ``tokens`` (int64, masked for MLM), ``segments`` (int64, 0 for ``[CLS] A [SEP]``,
    1 for ``B [SEP]`` and 0 on padding), ``padding_mask`` (bool, True at real
    tokens), ``mlm_targets`` (int64, the original ids), ``mlm_selected`` (bool,
    the positions that count in the MLM loss), ``nsp_labels`` (int64, 1 when
    B follows A in its document).
    """

    tokens: np.ndarray
    segments: np.ndarray
    padding_mask: np.ndarray
    mlm_targets: np.ndarray
    mlm_selected: np.ndarray
    nsp_labels: np.ndarray


def _ordinary_ids(vocab: Vocabulary) -> np.ndarray:
    """Ids that are not special tokens: the candidates of the 10 % random replacement."""
    special = set(vocab.special_ids.tolist())
    return np.array([i for i in range(len(vocab)) if i not in special], dtype=np.int64)


def mask_tokens(ids, vocab: Vocabulary, rng=None, rate: float = 0.15, strategy: str = "mask",
                never=None) -> MaskedTokens:
    """MLM corruption: select each maskable token with probability ``rate`` and replace it.

    ``strategy="mask"`` (the default, seed 003: "substituting it to a special
    [MASK] token") replaces every selected token by ``[MASK]``;
    ``strategy="bert"`` follows Devlin et al. (2019): of the selected tokens
    80 % become ``[MASK]``, 10 % a random ordinary token (uniform over the
    non-special ids), 10 % stay unchanged — they are still predicted, so the
    model cannot learn that an unmasked token is always right.
    Selection is independent per token (the count is binomial: 15 % on
    average). Special tokens are never selected: ``never`` (ids) defaults to
    every special token of ``vocab`` except ``[UNK]`` — ``[CLS]``, ``[SEP]``,
    ``[PAD]`` among them.
    Shapes: ids (...) ints -> MaskedTokens of three arrays shaped like ids.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import text
        >>> vocab = text.Vocabulary.build([["x", "y"]])
        >>> ids = vocab.encode(["[CLS]", "x", "y", "x", "[SEP]"])
        >>> m = text.mask_tokens(ids, vocab, np.random.default_rng(1), rate=0.5)
        >>> m.selected.tolist(), vocab.decode(m.inputs)
        ([False, False, True, False, False], ['[CLS]', 'x', '[MASK]', 'x', '[SEP]'])
    """
    if strategy not in MASK_STRATEGIES:
        raise TextError(f"mask_tokens: Expect: strategy 'mask' (seed 003: every selected token becomes [MASK]) "
                        f"or 'bert' (80/10/10). Actual: {strategy!r}")
    if not 0.0 <= float(rate) <= 1.0:
        raise TextError(f"mask_tokens: Expect: a selection rate in [0, 1]. Actual: {rate!r}")
    ids = np.asarray(ids)
    if ids.size and ids.dtype.kind not in "iu":
        raise TextError(f"mask_tokens: Expect: integer token ids. Actual: dtype {ids.dtype}")
    ids = ids.astype(np.int64, copy=False)
    rng = np.random.default_rng(rng)
    if never is None:
        never = [i for i, t in zip(vocab.special_ids.tolist(), vocab.specials) if t != "[UNK]"]
    maskable = ~np.isin(ids, np.asarray(list(never), dtype=np.int64))
    selected = maskable & (rng.random(ids.shape) < rate)
    inputs = ids.copy()
    mask_id = vocab.id(MASK, strict=True)
    if strategy == "mask":
        inputs[selected] = mask_id
    else:
        # One uniform draw per selected token decides its fate: [0, .8) mask, [.8, .9) random, [.9, 1) keep.
        u = rng.random(ids.shape)
        to_mask = selected & (u < 0.8)
        to_random = selected & (u >= 0.8) & (u < 0.9)
        inputs[to_mask] = mask_id
        ordinary = _ordinary_ids(vocab)
        if ordinary.size == 0:
            raise TextError("mask_tokens: strategy 'bert' needs ordinary (non-special) tokens to draw random "
                            "replacements from; the vocabulary has only special tokens")
        inputs[to_random] = rng.choice(ordinary, size=int(to_random.sum()))
    return MaskedTokens(inputs, ids.copy(), selected)


def _check_documents(name: str, documents) -> list[list[np.ndarray]]:
    docs = [[np.asarray(s, dtype=np.int64) for s in doc] for doc in documents]
    if not any(len(doc) >= 2 for doc in docs):
        raise TextError(f"{name}: Expect: documents as lists of sentences (id arrays), at least one document "
                        f"with two or more sentences to draw consecutive pairs from. Actual: "
                        f"{len(docs)} document(s) with {[len(d) for d in docs][:10]} sentences")
    return docs


def sentence_pairs(documents: Sequence[Sequence], n: int, rng=None) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """``n`` NSP examples (A, B, is_next): half consecutive sentences, half a random second sentence.

    ``documents`` is a list of documents, each a list of sentences (id
    arrays); "consecutive" means B follows A in the same document. An
    example is positive (is_next = 1) with probability ½. For a negative
    one B is a sentence drawn uniformly from the corpus (seed 003: "randomly
    chosen from the corpus"), taken from another document when there is
    more than one document has sentences (as in the original BERT), so B is
    never A's true successor.
    Returns a list of n (A (a,), B (b,), is_next) triples.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import text
        >>> docs = [[np.array([6]), np.array([7]), np.array([8])], [np.array([9]), np.array([10])]]
        >>> pairs = text.sentence_pairs(docs, 4, np.random.default_rng(0))
        >>> [(int(a[0]), int(b[0]), y) for a, b, y in pairs]
        [(9, 10, 1), (7, 8, 1), (6, 9, 0), (9, 8, 0)]
    """
    docs = _check_documents("sentence_pairs", documents)
    rng = np.random.default_rng(rng)
    # A is drawn among sentences that have a successor; every such sentence equally likely.
    firsts = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc) - 1)]
    everywhere = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc))]
    # Counting documents, not documents with sentences, made the draw below wait forever
    # for a sentence of another document when the others were all empty.
    elsewhere = len({e for e, _ in everywhere}) > 1
    pairs = []
    for _ in range(int(n)):
        d, i = firsts[rng.integers(len(firsts))]
        if rng.random() < 0.5:
            pairs.append((docs[d][i], docs[d][i + 1], 1))
            continue
        while True:
            e, j = everywhere[rng.integers(len(everywhere))]
            if (e != d if elsewhere else j != i + 1):
                break
        pairs.append((docs[d][i], docs[e][j], 0))
    return pairs


def pack_pair(a, b, vocab: Vocabulary, max_length: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``[CLS] A [SEP] B [SEP]`` and its segment ids (0 up to the first ``[SEP]``, then 1).

    With ``max_length``, the longer of A and B loses its last token until
    the pair fits (BERT's ``truncate_seq_pair``), so both keep their starts.
    Shapes: a (n_a,), b (n_b,) -> ids (L,), segments (L,) with L = n_a + n_b + 3.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import text
        >>> vocab = text.Vocabulary.build([["x", "y"]])
        >>> ids, seg = text.pack_pair(vocab.encode(["x", "y"]), vocab.encode(["y"]), vocab)
        >>> vocab.decode(ids), seg.tolist()
        (['[CLS]', 'x', 'y', '[SEP]', 'y', '[SEP]'], [0, 0, 0, 0, 1, 1])
    """
    a, b = list(np.asarray(a, dtype=np.int64)), list(np.asarray(b, dtype=np.int64))
    if max_length is not None:
        if max_length < 5:
            raise TextError(f"pack_pair: Expect: max_length >= 5 ([CLS], [SEP] twice and a token of each "
                            f"sentence). Actual: {max_length}")
        while len(a) + len(b) + 3 > max_length:
            (a if len(a) >= len(b) else b).pop()
    cls, sep = vocab.id(CLS, strict=True), vocab.id(SEP, strict=True)
    ids = np.array([cls] + a + [sep] + b + [sep], dtype=np.int64)
    segments = np.zeros(len(ids), dtype=np.int64)
    segments[len(a) + 2:] = 1
    return ids, segments


def pretraining_batch(documents: Sequence[Sequence], vocab: Vocabulary, batch_size: int, rng=None,
                      max_length: int | None = 64, rate: float = 0.15, strategy: str = "mask",
                      pairs=None) -> PretrainingBatch:
    """A padded BERT batch: NSP pairs packed as ``[CLS] A [SEP] B [SEP]``, MLM-masked, ``[PAD]``-filled.

    ``pairs`` (a list of (A, B, is_next), e.g. a fixed held-out set) replaces
    the random draw from ``documents``. Padding goes to the right, up to the
    longest packed pair; padded positions have segment 0, are never selected
    for MLM, and are False in ``padding_mask``. ``rate`` and ``strategy`` are
    :func:`mask_tokens`'s.
    Shapes: -> PretrainingBatch of (batch_size, L) arrays and (batch_size,) labels.
    """
    rng = np.random.default_rng(rng)
    if pairs is None:
        pairs = sentence_pairs(documents, batch_size, rng)
    packed = [pack_pair(a, b, vocab, max_length) for a, b, _ in pairs]
    width = max(len(ids) for ids, _ in packed)
    pad = vocab.id(PAD, strict=True)
    tokens = np.full((len(packed), width), pad, dtype=np.int64)
    segments = np.zeros((len(packed), width), dtype=np.int64)
    for row, (ids, seg) in enumerate(packed):
        tokens[row, :len(ids)] = ids
        segments[row, :len(seg)] = seg
    masked = mask_tokens(tokens, vocab, rng, rate, strategy)
    return PretrainingBatch(masked.inputs, segments, tokens != pad, masked.targets, masked.selected,
                            np.array([y for _, _, y in pairs], dtype=np.int64))
