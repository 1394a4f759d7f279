"""The classification token (seed 003 §13.2) and BERT (§13.3): encoder-only Transformers with a [CLS] output.

* :func:`insert_cls` and :class:`TransformerClassifier`: a :class:`TransformerEncoder`
  classifier that adds a learned classification vector to each input sequence
  and classifies from that position's output. Seed 003 says the token is
  *appended*; BERT *prepends* it. Both work (``cls_position="prepend"``, the
  default, or ``"append"``): with bidirectional attention the position only
  changes which positional encoding the token gets. An appended token goes
  right after each sequence's last real token, not after the padding, so a
  padded batch gives each sequence the output it gets alone.
* :class:`BERT`: token + segment + position embeddings, a bidirectional
  :class:`TransformerEncoder` (no mask but padding), and its two pretraining
  heads: masked language modelling (:class:`MLMHead`, output projection tied
  to the token embeddings) and next-sentence prediction (binary, on the
  ``[CLS]`` output through the pooler). :meth:`BERT.loss` sums the two losses
  of a :class:`~autograd_dag.text.PretrainingBatch`.
* :class:`BERTClassifier`: the pretrained encoder's ``[CLS]`` classifier, for fine-tuning.

Where this BERT differs from Devlin et al. (2019), and why: the encoder is
this library's post-norm block (seed 000) with relu in the feed-forward
layer and the MLM transform (GELU is not a primitive here); dropout is off
unless ``dropout=`` is given (the models are tiny and trained briefly;
Devlin et al. use 0.1, on the embeddings and each sub-layer's output).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import Tensor, concrete, name_scope, no_grad
from ..errors import ShapeError
from ..primitives.elementwise import add, relu, tanh
from ..primitives.indexing import concatenate, getitem, take
from ..primitives.linalg import matmul
from ..primitives.structure import broadcast_to, reshape, transpose
from . import functional as F
from . import init as _init
from .attention import positional_encoding
from .embedding import Embedding, check_ids
from .layers import Classifier, Dropout, Linear
from .module import Module, Parameter
from .norm import LayerNorm
from .transformer import TransformerEncoder

__all__ = ["CLS_POSITIONS", "insert_cls", "TransformerClassifier", "BERT", "BERTLoss", "MLMHead",
           "BERTClassifier"]

CLS_POSITIONS = ("prepend", "append")


def _shape(x) -> tuple:
    return tuple(x.shape) if isinstance(x, Tensor) else tuple(np.shape(x))


def _lengths_of(name: str, padding_mask, batch: int, length: int) -> np.ndarray:
    """Each row's number of real tokens, checking the mask is (B, L) booleans padded on the right."""
    m = np.asarray(padding_mask.value if isinstance(padding_mask, Tensor) else padding_mask)
    if m.dtype != bool or m.shape != (batch, length):
        raise ShapeError(f"{name}: Expect: a padding mask of booleans of shape ({batch}, {length}), True at "
                         f"real tokens. Actual: dtype {m.dtype}, shape {m.shape}")
    lengths = m.sum(axis=1)
    if not np.array_equal(m, np.arange(length)[None, :] < lengths[:, None]):
        row = int(np.flatnonzero((m != (np.arange(length)[None, :] < lengths[:, None])).any(axis=1))[0])
        raise ShapeError(f"{name}: Expect: padding on the right (each mask row True … True False … False). "
                         f"Actual: row {row} is {m[row].astype(int).tolist()}")
    return lengths


def insert_cls(x, cls, position: str = "prepend", padding_mask=None):
    """Add the classification vector ``cls`` to every sequence of ``x``; return (x', mask', cls index).

    ``position="prepend"`` puts it first (BERT); ``"append"`` puts it right
    after each sequence's last real token (seed 003: "appended to the input
    sequence"), which for a padded row is before its padding, so that the
    position the token gets does not depend on how much the batch was padded.
    ``padding_mask`` (B, L) booleans, True at real tokens and padded on the
    right (default: all real); the returned mask covers the new token too.
    Shapes: x (B, L, d), cls (d,) -> x' (B, L + 1, d), mask' (B, L + 1) bool, index (B,) int64.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> x = np.arange(8.0).reshape(2, 2, 2)
        >>> mask = np.array([[True, False], [True, True]])
        >>> out, m, at = nn.insert_cls(x, np.array([-1.0, -1.0]), "append", mask)
        >>> out.value[:, :, 0].tolist(), m.tolist(), at.tolist()
        ([[0.0, -1.0, 2.0], [4.0, 6.0, -1.0]], [[True, True, False], [True, True, True]], [1, 2])
    """
    if position not in CLS_POSITIONS:
        raise ShapeError(f"insert_cls: Expect: position 'prepend' (BERT) or 'append' (seed 003). "
                         f"Actual: {position!r}")
    shape = _shape(x)
    if len(shape) != 3 or _shape(cls) != shape[-1:]:
        raise ShapeError(f"insert_cls: Expect: x (batch, length, d) and cls (d,). Actual: x {shape}, "
                         f"cls {_shape(cls)}")
    batch, length, d = shape
    lengths = (np.full(batch, length, dtype=np.int64) if padding_mask is None
               else _lengths_of("insert_cls", padding_mask, batch, length))
    column = broadcast_to(reshape(cls, (1, 1, d)), (batch, 1, d))
    if position == "prepend":
        # A Tensor mask may be a jit input: the new mask is an operation on it.
        new_mask = (concatenate([np.ones((batch, 1), bool), padding_mask], axis=1)
                    if isinstance(padding_mask, Tensor) else np.arange(length + 1)[None, :] <= lengths[:, None])
        return concatenate([column, x], axis=1), new_mask, np.zeros(batch, dtype=np.int64)
    # Appended, [CLS] goes where each row's real tokens end: a layout made
    # from the numbers, which a mask traced by jit cannot give (refused there).
    concrete(padding_mask, "insert_cls('append')'s layout of the padded rows")
    new_mask = np.arange(length + 1)[None, :] <= lengths[:, None]
    joined = concatenate([x, column], axis=1)
    if np.all(lengths == length):
        return joined, new_mask, lengths.astype(np.int64)
    # Row b reads its real tokens, then the [CLS] column (index L), then its padding.
    idx = np.arange(length + 1)[None, :].repeat(batch, axis=0)
    order = np.where(idx < lengths[:, None], idx, np.where(idx == lengths[:, None], length, idx - 1))
    return getitem(joined, (np.arange(batch)[:, None], order)), new_mask, lengths.astype(np.int64)


def _token_ids(name: str, tokens, vocab: int) -> tuple:
    """(B, L) ids (int64, or the integer Tensor given) and whether a batch axis was added to an (L,) input."""
    ids = check_ids(name, tokens, vocab)
    if ids.ndim == 1:
        return ids[None, :], True
    if ids.ndim != 2:
        raise ShapeError(f"{name}: Expect: token ids of shape (L,) or (B, L). Actual: shape {ids.shape}")
    return ids, False


class TransformerClassifier(Classifier):
    """A :class:`TransformerEncoder` classifier reading a learned classification token (seed 003 §13.2).

    Tokens are embedded (``embedding``, N(0, 1) rows, ``[PAD]`` row zero), the
    learned vector ``cls`` (d_model,) is inserted by :func:`insert_cls` at
    ``cls_position`` — ``"prepend"`` (default, as BERT) or ``"append"`` (as seed
    003 words it) —, sinusoidal positional encodings are added, the encoder
    runs with a padding mask (``padding_mask`` if given, else ``tokens != pad_id``),
    and ``output`` (Linear d_model -> num_classes) maps the classification
    token's output embedding to logits.
    Shapes: tokens (B, L) ints -> logits (B, num_classes); (L,) -> (num_classes,).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> model = nn.TransformerClassifier(10, 3, d_model=8, heads=2, layers=1, rng=0)
        >>> model(np.array([[4, 5, 6], [7, 8, 0]])).shape  # the second row is padded
        (2, 3)
        >>> nn.TransformerClassifier(10, 3, d_model=8, heads=2, cls_position="append", rng=0).cls.shape
        (8,)
    """

    def __init__(self, vocab_size: int, num_classes: int, d_model: int = 64, heads: int = 4,
                 hidden: int | None = None, layers: int = 2, cls_position: str = "prepend",
                 pad_id: int | None = 0, eps: float = 1e-5, *, rng=None, dtype=np.float64):
        super().__init__()
        if cls_position not in CLS_POSITIONS:
            raise ShapeError(f"TransformerClassifier: Expect: cls_position 'prepend' (BERT) or 'append' "
                             f"(seed 003). Actual: {cls_position!r}")
        rng = _init.as_generator(rng)
        self.vocab_size, self.num_classes, self.d_model = int(vocab_size), int(num_classes), int(d_model)
        self.cls_position, self.pad_id = cls_position, pad_id
        hidden = 4 * self.d_model if hidden is None else int(hidden)
        self.embedding = Embedding(self.vocab_size, self.d_model, padding_idx=pad_id, rng=rng, dtype=dtype)
        self.cls = Parameter(rng.standard_normal(self.d_model).astype(dtype))
        self.encoder = TransformerEncoder(self.d_model, heads, hidden, layers, eps=eps, rng=rng, dtype=dtype)
        self.output = Linear(self.d_model, self.num_classes, rng=rng, dtype=dtype)

    def encode(self, tokens, padding_mask=None) -> tuple[Tensor, np.ndarray]:
        """The encoder output with the classification token and that token's index per row.

        Shapes: tokens (B, L) -> ((B, L + 1, d_model), (B,) int64).
        """
        ids, _ = _token_ids("TransformerClassifier", tokens, self.vocab_size)
        if padding_mask is None and self.pad_id is not None:
            padding_mask = ids != self.pad_id
        x = self.embedding(ids)
        x, mask, at = insert_cls(x, self.cls, self.cls_position, padding_mask)
        x = add(x, positional_encoding(ids.shape[1] + 1, self.d_model, dtype=self.cls.dtype))
        return self.encoder(x, padding_mask=mask), at

    def forward(self, tokens, padding_mask=None) -> Tensor:
        single = np.ndim(tokens.value if isinstance(tokens, Tensor) else tokens) == 1
        h, at = self.encode(tokens, padding_mask)
        logits = self.output(getitem(h, (np.arange(len(at)), at)))
        return logits[0] if single else logits

    def extra_repr(self) -> str:
        return (f"vocab_size={self.vocab_size}, num_classes={self.num_classes}, d_model={self.d_model}, "
                f"cls_position={self.cls_position!r}")


class MLMHead(Module):
    """BERT's masked-LM head: transform (Linear, relu, LayerNorm), then scores against the tied embeddings.

    logits = LayerNorm(relu(h W_tᵀ + b_t)) Eᵀ + b with E the token embedding
    matrix (vocab, d_model), passed in at call time so that the model holds
    it once (tied: one parameter, trained by both its uses). Parameters
    ``transform.weight`` (d, d), ``transform.bias`` (d), ``norm.gamma``,
    ``norm.beta`` (d), ``bias`` (vocab).
    Shapes: h (N, d_model), E (vocab, d_model) -> (N, vocab).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> nn.MLMHead(4, 10, rng=0)(np.ones((3, 4)), np.ones((10, 4))).shape
        (3, 10)
    """

    def __init__(self, d_model: int, vocab_size: int, eps: float = 1e-5, *, rng=None, dtype=np.float64):
        super().__init__()
        self.transform = Linear(d_model, d_model, init="he", rng=rng, dtype=dtype)
        self.norm = LayerNorm(d_model, eps=eps, dtype=dtype)
        self.bias = Parameter(np.zeros(int(vocab_size), dtype=dtype))

    def forward(self, h, E) -> Tensor:
        t = self.norm(relu(self.transform(h)))
        return add(matmul(t, transpose(E)), self.bias)


class BERTLoss(NamedTuple):
    """The pretraining loss and its parts (scalar Tensors): ``total = mlm + nsp``.

    ``mlm_correct``/``mlm_count`` and ``nsp_correct``/``nsp_count`` count the
    right argmax predictions, for accuracies without a second forward pass.
    """

    total: Tensor
    mlm: Tensor
    nsp: Tensor
    mlm_correct: int
    mlm_count: int
    nsp_correct: int
    nsp_count: int


class BERT(Module):
    """BERT (seed 003 §13.3): an encoder-only, bidirectional Transformer with MLM and NSP heads.

    Input ``[CLS] A [SEP] B [SEP]`` (see :func:`autograd_dag.text.pretraining_batch`).
    Each position's input is the sum of three learned embeddings, then a
    LayerNorm (``embedding_norm``) as in BERT:

        X⁰ = LayerNorm(token_embedding[t] + segment_embedding[s] + position_embedding[p])

    then ``encoder`` (:class:`TransformerEncoder`, post-norm blocks with
    biases, no mask except padding: every token sees both directions).
    Heads, each in its own scope (a rendering shows one cluster per head):

    * ``mlm_head`` (:class:`MLMHead`): scores over the vocabulary at the
      selected positions, the output matrix tied to ``token_embedding.weight``;
    * ``pooler`` (tanh(Linear)) on the ``[CLS]`` output, then ``nsp_head``
      (Linear d_model -> 2): logit 1 says "B follows A".

    ``padding_mask`` defaults to ``tokens != pad_id``; ``segments`` to zeros.
    Sequences are at most ``max_length`` long (the learned positions).
    Shapes: tokens, segments (B, L) -> hidden states (B, L, d_model); MLM
    logits (N_selected, vocab) or (B, L, vocab); NSP logits (B, 2).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn, text
        >>> vocab = text.Vocabulary.build([["a", "b", "c"]])
        >>> bert = nn.BERT(len(vocab), d_model=8, heads=2, layers=1, max_length=16, rng=0)
        >>> docs = [[vocab.encode(["a", "b"]), vocab.encode(["c", "a"]), vocab.encode(["b"])]]
        >>> batch = text.pretraining_batch(docs, vocab, 4, np.random.default_rng(0), rate=0.3)
        >>> loss = bert.loss(batch)
        >>> loss.total.shape, bool(np.isclose(loss.total.value, loss.mlm.value + loss.nsp.value))
        ((), True)
        >>> mlm, nsp = bert(batch.tokens, batch.segments)
        >>> mlm.shape[-1] == len(vocab), nsp.shape
        (True, (4, 2))
    """

    def __init__(self, vocab_size: int, d_model: int = 64, heads: int = 4, hidden: int | None = None,
                 layers: int = 2, max_length: int = 128, num_segments: int = 2, pad_id: int | None = 0,
                 eps: float = 1e-5, *, dropout: float = 0.0, rng=None, dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        self.vocab_size, self.d_model, self.max_length = int(vocab_size), int(d_model), int(max_length)
        self.pad_id = pad_id
        hidden = 4 * self.d_model if hidden is None else int(hidden)
        # Rows of norm ~1: the LayerNorm after the sum fixes the scale anyway, and
        # tied output scores h·E start at order 1.
        std = self.d_model ** -0.5
        self.token_embedding = Embedding(self.vocab_size, self.d_model, padding_idx=pad_id, std=std, rng=rng,
                                         dtype=dtype)
        self.segment_embedding = Embedding(int(num_segments), self.d_model, std=std, rng=rng, dtype=dtype)
        self.position_embedding = Embedding(self.max_length, self.d_model, std=std, rng=rng, dtype=dtype)
        # Learned, as in BERT, but starting from seed 003's sinusoids (rows of norm ~0.7, like the
        # tokens'): an offset to a neighbour is then a fixed linear map of the encoding, and attention
        # to the previous or next word is learned quickly.
        self.position_embedding.weight.value[...] = positional_encoding(self.max_length, self.d_model,
                                                                        dtype=dtype) * std
        self.embedding_norm = LayerNorm(self.d_model, eps=eps, dtype=dtype)
        self.embedding_drop = Dropout(dropout, rng=rng) if dropout else None
        self.encoder = TransformerEncoder(self.d_model, heads, hidden, layers, bias=True, eps=eps, dropout=dropout,
                                          rng=rng, dtype=dtype)
        self.mlm_head = MLMHead(self.d_model, self.vocab_size, eps=eps, rng=rng, dtype=dtype)
        self.pooler = Linear(self.d_model, self.d_model, rng=rng, dtype=dtype)
        self.nsp_head = Linear(self.d_model, 2, rng=rng, dtype=dtype)

    # ------------------------------------------------------------ encoder

    def _inputs(self, tokens, segments, padding_mask):
        ids, _ = _token_ids("BERT", tokens, self.vocab_size)
        batch, length = ids.shape
        if length > self.max_length:
            raise ShapeError(f"BERT: Expect: sequences of at most max_length={self.max_length} tokens (the "
                             f"learned positions). Actual: length {length}")
        if segments is None:
            segments = np.zeros(ids.shape, np.int64)
        segments = check_ids("BERT segments", segments, self.segment_embedding.num_embeddings)
        segments = segments[None, :] if segments.ndim == 1 else segments
        if segments.shape != ids.shape:
            raise ShapeError(f"BERT: Expect: segment ids of the tokens' shape {ids.shape}. "
                             f"Actual: {segments.shape}")
        if padding_mask is None:
            padding_mask = (ids != self.pad_id) if self.pad_id is not None else np.ones(ids.shape, bool)
        return ids, segments, padding_mask

    def hidden_states(self, tokens, segments=None, padding_mask=None) -> Tensor:
        """The encoder's output embeddings. Shapes: tokens, segments (B, L) [or (L,)] -> (B, L, d_model)."""
        ids, segments, padding_mask = self._inputs(tokens, segments, padding_mask)
        with name_scope("embeddings"):
            x = add(add(self.token_embedding(ids), self.segment_embedding(segments)),
                    self.position_embedding(np.arange(ids.shape[1])))
            x = self.embedding_norm(x)
            if self.embedding_drop is not None:
                x = self.embedding_drop(x)
        return self.encoder(x, padding_mask=padding_mask)

    # -------------------------------------------------------------- heads

    def mlm_logits(self, hidden, selected=None) -> Tensor:
        """Vocabulary scores at the ``selected`` positions (B, L) booleans, in row-major order, or everywhere.

        Only the selected rows go through the head: the other positions'
        scores are never computed. Shapes: hidden (B, L, d) -> (N_selected, vocab),
        or (B, L, vocab) when ``selected`` is None.
        """
        shape = _shape(hidden)
        flat = reshape(hidden, (-1, shape[-1]))
        if selected is not None:
            selected = np.asarray(selected)
            if selected.dtype != bool or selected.shape != shape[:-1]:
                raise ShapeError(f"BERT.mlm_logits: Expect: selected positions as booleans of shape "
                                 f"{shape[:-1]}. Actual: dtype {selected.dtype}, shape {selected.shape}")
            flat = take(flat, np.flatnonzero(selected), axis=0)
        logits = self.mlm_head(flat, self.token_embedding.weight)
        return logits if selected is not None else reshape(logits, shape[:-1] + (self.vocab_size,))

    def pooled(self, hidden) -> Tensor:
        """tanh(W h_[CLS] + b): the pooled ``[CLS]`` output. Shapes: (B, L, d) -> (B, d)."""
        return tanh(self.pooler(hidden[:, 0]))

    def nsp_logits(self, hidden) -> Tensor:
        """Next-sentence scores from the ``[CLS]`` output (index 1: "consecutive"). Shapes: (B, L, d) -> (B, 2)."""
        return self.nsp_head(self.pooled(hidden))

    def forward(self, tokens, segments=None, padding_mask=None, selected=None) -> tuple[Tensor, Tensor]:
        """(MLM logits, NSP logits); ``selected`` as in :meth:`mlm_logits`. Shapes: (B, L) -> ((…, vocab), (B, 2))."""
        hidden = self.hidden_states(tokens, segments, padding_mask)
        return self.mlm_logits(hidden, selected), self.nsp_logits(hidden)

    def loss(self, batch) -> BERTLoss:
        """MLM cross-entropy (mean over the selected positions only) + NSP cross-entropy (mean over pairs).

        ``batch`` is a :class:`~autograd_dag.text.PretrainingBatch` (or any
        object with its fields). A batch without any selected position has an
        MLM loss of 0 (nothing to predict), not NaN.
        """
        selected = np.asarray(batch.mlm_selected)
        hidden = self.hidden_states(batch.tokens, batch.segments, batch.padding_mask)
        nsp_logits = self.nsp_logits(hidden)
        mlm_logits = self.mlm_logits(hidden, selected) if selected.any() else None
        with name_scope("loss"):
            nsp = F.cross_entropy(nsp_logits, batch.nsp_labels)
            if mlm_logits is not None:
                targets = np.asarray(batch.mlm_targets)[selected]
                mlm = F.cross_entropy(mlm_logits, targets)
            else:
                mlm = Tensor(np.zeros((), dtype=nsp.dtype))
            total = add(mlm, nsp)
        nsp_correct = int(np.sum(np.argmax(nsp_logits.value, -1) == batch.nsp_labels))
        mlm_correct = 0 if mlm_logits is None else int(np.sum(np.argmax(mlm_logits.value, -1) == targets))
        return BERTLoss(total, mlm, nsp, mlm_correct, int(selected.sum()), nsp_correct, len(batch.nsp_labels))

    def evaluate(self, batch) -> BERTLoss:
        """:meth:`loss` without recording and without dropout (for held-out batches); the mode is restored.

        A held-out loss computed in training mode would drop random units (with
        ``dropout`` > 0): a different number on every call, and draws taken from
        the training's dropout generator.
        """
        with self.evaluating(), no_grad():
            return self.loss(batch)

    def extra_repr(self) -> str:
        return (f"vocab_size={self.vocab_size}, d_model={self.d_model}, layers={len(self.encoder.block)}, "
                f"max_length={self.max_length}")


class BERTClassifier(Classifier):
    """A sentence classifier on a (pretrained) :class:`BERT`: logits = W · pooled ``[CLS]`` output + b.

    The way BERT is fine-tuned: the whole encoder trains along with the new
    ``output`` layer (Linear d_model -> num_classes); the MLM and NSP heads are
    unused. Inputs are ``[CLS] sentence [SEP]`` (``tokenizer.encode(s, cls_sep=True)``),
    padded with ``[PAD]``; segments default to zeros.
    Shapes: tokens (B, L) -> logits (B, num_classes).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> clf = nn.BERTClassifier(nn.BERT(12, d_model=8, heads=2, layers=1, max_length=8, rng=0), 3, rng=0)
        >>> clf(np.array([[2, 7, 8, 3], [2, 9, 3, 0]])).shape
        (2, 3)
    """

    def __init__(self, bert: BERT, num_classes: int, *, rng=None):
        super().__init__()
        self.bert = bert
        self.num_classes = int(num_classes)
        self.output = Linear(bert.d_model, self.num_classes, rng=rng, dtype=bert.token_embedding.weight.dtype)

    def forward(self, tokens, segments=None, padding_mask=None) -> Tensor:
        hidden = self.bert.hidden_states(tokens, segments, padding_mask)
        return self.output(self.bert.pooled(hidden))
