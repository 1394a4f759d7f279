"""Transformers: seed 000's language model, an encoder (for BERT-style models) and seed 003's encoder–decoder.

* :class:`TransformerLM` is seed 000's autoregressive Transformer, equation by
  equation (post-norm blocks, tied embedding and output matrix E).
* :class:`TransformerBlock` (self-attention + feed-forward, each inside a
  residual and a LayerNorm) is that model's block; :class:`TransformerEncoder`
  stacks them without a causal mask (with an optional padding mask).
* :class:`TransformerDecoderBlock` adds cross-attention over an encoder's
  output; :class:`Transformer` is seed 003's encoder–decoder.

Decoding protocol (shared with the recurrent encoder–decoder and used by the
decoding functions): ``state = model.start_state(source)`` and
``logits, state = model.step(state, token)``, with ``logits`` a numpy array of
shape (vocab,) for the next token. ``step`` caches each layer's keys and
values (the state is never modified in place, so a beam may branch from it)
and runs without recording (``ad.no_grad``); it agrees with the full forward
pass, position by position.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ..core import Tensor, name_scope, no_grad
from ..errors import AutogradDagError, ShapeError
from ..primitives.arrays import constant
from ..primitives.elementwise import add, multiply
from ..primitives.indexing import concatenate, take
from ..primitives.fused import linear_relu, softargmax
from ..primitives.linalg import linear, matmul
from ..primitives.structure import reshape, transpose
from . import init as _init
from .attention import MultiHeadAttention, additive_scores, causal_mask, positional_encoding
from .embedding import check_ids
from .layers import Dropout, Linear
from .module import Module, Parameter
from .norm import LayerNorm

__all__ = ["FeedForward", "TransformerBlock", "TransformerEncoder", "TransformerDecoderBlock",
           "TransformerDecoder", "TransformerLM", "Transformer", "DecoderState"]


class FeedForward(Module):
    """Seed 000's position-wise FFN: W2 ·_hidden relu(W1 ·_layer X + b1) + b2.

    Parameters W1 (hidden, d_model), b1 (hidden), W2 (d_model, hidden),
    b2 (d_model) (the seed prints b2 ∈ ℝ^hidden, a typo: it is added to a
    vector of size d_model). Positions are flattened into one matrix product.
    Shapes: (..., d_model) -> (..., d_model).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> nn.FeedForward(4, 16, rng=0)(np.ones((2, 3, 4))).shape
        (2, 3, 4)
    """

    def __init__(self, d_model: int, hidden: int, *, rng=None, dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        self.d_model = _init.size("FeedForward", "d_model", d_model)
        self.hidden = _init.size("FeedForward", "hidden", hidden)
        self.W1 = Parameter(_init.he_normal((self.hidden, self.d_model), rng=rng, dtype=dtype))
        self.b1 = Parameter(np.zeros(self.hidden, dtype=dtype))
        self.W2 = Parameter(_init.glorot_uniform((self.d_model, self.hidden), rng=rng, dtype=dtype))
        self.b2 = Parameter(np.zeros(self.d_model, dtype=dtype))

    def forward(self, x):
        shape = tuple(np.shape(x))
        if not shape or shape[-1] != self.d_model:
            raise ShapeError(f"FeedForward(d_model={self.d_model}): Expect: input (..., {self.d_model}). "
                             f"Actual: shape {shape}")
        flat = reshape(x, (-1, self.d_model))
        # Each product with its bias added (and the first's relu applied) in place: one array each.
        h = linear_relu(flat, self.W1, self.b1)
        return reshape(linear(h, self.W2, self.b2), shape)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, hidden={self.hidden}"


class TransformerBlock(Module):
    """One post-norm block of seed 000: T = LayerNorm(SelfAtt(X) + X); X' = LayerNorm(FFN(T) + T).

    Sub-modules ``attention`` (:class:`MultiHeadAttention`, no biases as in the
    seed unless ``bias``), ``norm1``, ``ffn`` (:class:`FeedForward`), ``norm2``
    (LayerNorm with ε = 1e-5 under the square root). ``mask`` is passed to the
    attention: :func:`causal_mask` in a language model, a padding mask or None
    in an encoder. ``dropout`` p > 0 adds ``drop`` (:class:`Dropout`) on each
    sub-layer's output before its residual sum, as in Vaswani et al. (training
    mode only; :meth:`step` decodes without it).
    Shapes: (..., L, d_model) -> (..., L, d_model).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> nn.TransformerBlock(8, heads=2, hidden=16, rng=0)(np.ones((3, 8)), mask=nn.causal_mask(3)).shape
        (3, 8)
    """

    def __init__(self, d_model: int, heads: int, hidden: int, d_key: int | None = None, d_val: int | None = None,
                 bias: bool = False, eps: float = 1e-5, *, dropout: float = 0.0, rng=None, dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        self.attention = MultiHeadAttention(d_model, heads, d_key, d_val, bias=bias, rng=rng, dtype=dtype)
        self.norm1 = LayerNorm(d_model, eps=eps, dtype=dtype)
        self.ffn = FeedForward(d_model, hidden, rng=rng, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=eps, dtype=dtype)
        self.drop = Dropout(dropout, rng=rng) if dropout else None

    def _dropped(self, y):
        return y if self.drop is None else self.drop(y)

    # return_weights is keyword-only: PyTorch's third argument is src_key_padding_mask, which read
    # as a flag was silently ignored (a one-element mask) or failed inside numpy.
    def forward(self, x, mask=None, *, return_weights: bool = False):
        a, weights = self.attention(x, mask=mask, return_weights=True)
        t = self.norm1(add(self._dropped(a), x))
        out = self.norm2(add(self._dropped(self.ffn(t)), t))
        return (out, weights) if return_weights else out

    def step(self, x, cache):
        """One new position ``x`` given the cached (K, V) of the earlier ones; returns (output, new cache).

        The new query attends to every cached position and itself, which is
        what the causal mask allows it. Shapes: x (B, 1, d_model); cache
        (K, V) of shape (B, heads, t, d_key / d_val) or None.
        """
        q = self.attention.project_queries(x)
        k, v = self.attention.project_keys_values(x)
        if cache is not None:
            k, v = concatenate([cache[0], k], axis=-2), concatenate([cache[1], v], axis=-2)
        t = self.norm1(add(self.attention.attend(q, k, v), x))
        return self.norm2(add(self.ffn(t), t)), (k, v)


def _padding_to_additive(padding_mask, dtype=np.float64):
    """A boolean (B, L) mask, True at real tokens, as an additive key mask (B, 1, L)."""
    if padding_mask is None:
        return None
    m = np.asarray(padding_mask.value if isinstance(padding_mask, Tensor) else padding_mask)
    if m.dtype != bool or m.ndim != 2:
        raise ShapeError(f"padding mask: Expect: booleans of shape (batch, length), True at real tokens. "
                         f"Actual: dtype {m.dtype}, shape {m.shape}")
    if isinstance(padding_mask, Tensor):
        return reshape(additive_scores(padding_mask, dtype), (m.shape[0], 1, m.shape[1]))
    return np.where(m, 0.0, -np.inf).astype(dtype)[:, None, :]


class TransformerEncoder(Module):
    """A stack of ``layers`` :class:`TransformerBlock`s without a causal mask (every position sees every other).

    The encoder of seed 003 and of BERT (bidirectional, no masking); its input
    is already embedded. ``padding_mask`` (batch, L) booleans, True at real
    tokens, keeps padded positions out of every key set (a sequence that is
    all padding raises); it is keyword-only (PyTorch's second argument is an
    (L, L) attention mask). Blocks are attribute ``block`` (``block.0``, ...), so a
    rendering at ``depth=0`` folds them into "block × L".
    Shapes: (B, L, d_model) [or (L, d_model)] -> same shape.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> enc = nn.TransformerEncoder(8, heads=2, hidden=16, layers=2, rng=0)
        >>> mask = np.array([[True, True, False], [True, True, True]])
        >>> enc(np.ones((2, 3, 8)), padding_mask=mask).shape
        (2, 3, 8)
    """

    def __init__(self, d_model: int, heads: int, hidden: int, layers: int, d_key: int | None = None,
                 d_val: int | None = None, bias: bool = False, eps: float = 1e-5, *, dropout: float = 0.0,
                 rng=None, dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        self.d_model = int(d_model)
        self.block = [TransformerBlock(d_model, heads, hidden, d_key, d_val, bias, eps, dropout=dropout, rng=rng,
                                       dtype=dtype) for _ in range(int(layers))]

    # Keyword-only: PyTorch's TransformerEncoder(src, mask) takes an (L, L) attention mask in this
    # position, which read as a (batch, L) padding mask (True = real) gave other outputs silently when B = L.
    def forward(self, x, *, padding_mask=None):
        dtype = x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype
        mask = _padding_to_additive(padding_mask, dtype if dtype.kind == "f" else np.float64)
        for block in self.block:
            x = block(x, mask=mask)
        return x


class TransformerDecoderBlock(Module):
    """A post-norm decoder block (seed 003): causal self-attention, cross-attention over the encoder, FFN.

    T¹ = LayerNorm(SelfAtt(X, causal) + X); T² = LayerNorm(CrossAtt(T¹, memory) + T¹);
    X' = LayerNorm(FFN(T²) + T²), each LayerNorm as in seed 000.
    Sub-modules ``self_attention``, ``norm1``, ``cross_attention``, ``norm2``, ``ffn``, ``norm3``.
    ``memory_mask`` (keyword-only: PyTorch's third argument is the target's mask)
    masks the memory's keys in the cross-attention; the self-attention is always causal.
    Shapes: x (B, L, d_model), memory (B, L_src, d_model) -> (B, L, d_model).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> blk = nn.TransformerDecoderBlock(8, heads=2, hidden=16, rng=0)
        >>> blk(np.ones((1, 3, 8)), np.ones((1, 5, 8))).shape
        (1, 3, 8)
    """

    def __init__(self, d_model: int, heads: int, hidden: int, d_key: int | None = None, d_val: int | None = None,
                 bias: bool = False, eps: float = 1e-5, *, rng=None, dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        self.self_attention = MultiHeadAttention(d_model, heads, d_key, d_val, bias=bias, rng=rng, dtype=dtype)
        self.norm1 = LayerNorm(d_model, eps=eps, dtype=dtype)
        self.cross_attention = MultiHeadAttention(d_model, heads, d_key, d_val, bias=bias, rng=rng, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=eps, dtype=dtype)
        self.ffn = FeedForward(d_model, hidden, rng=rng, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=eps, dtype=dtype)

    # Keyword-only: PyTorch's TransformerDecoderLayer(tgt, memory, tgt_mask) takes the causal mask here,
    # which as memory_mask masked the cross-attention instead (silently when L = L_src).
    def forward(self, x, memory, *, memory_mask=None):
        length = np.shape(x)[-2]
        t1 = self.norm1(add(self.self_attention(x, mask=causal_mask(length)), x))
        t2 = self.norm2(add(self.cross_attention(t1, memory, mask=memory_mask), t1))
        return self.norm3(add(self.ffn(t2), t2))

    def step(self, x, cache, memory_kv, memory_mask=None):
        """One new target position given cached self-attention (K, V) and the memory's (K, V)."""
        attn = self.self_attention
        q = attn.project_queries(x)
        k, v = attn.project_keys_values(x)
        if cache is not None:
            k, v = concatenate([cache[0], k], axis=-2), concatenate([cache[1], v], axis=-2)
        t1 = self.norm1(add(attn.attend(q, k, v), x))
        cross = self.cross_attention
        t2 = self.norm2(add(cross.attend(cross.project_queries(t1), *memory_kv, mask=memory_mask), t1))
        return self.norm3(add(self.ffn(t2), t2)), (k, v)


class TransformerDecoder(Module):
    """A stack of ``layers`` :class:`TransformerDecoderBlock`s (attribute ``block``).

    Shapes: x (B, L, d_model), memory (B, L_src, d_model) -> (B, L, d_model).
    Example: ``nn.TransformerDecoder(8, 2, 16, 2, rng=0)(np.ones((1, 3, 8)), np.ones((1, 4, 8))).shape == (1, 3, 8)``.
    """

    def __init__(self, d_model: int, heads: int, hidden: int, layers: int, d_key: int | None = None,
                 d_val: int | None = None, bias: bool = False, eps: float = 1e-5, *, rng=None, dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        self.block = [TransformerDecoderBlock(d_model, heads, hidden, d_key, d_val, bias, eps, rng=rng,
                                              dtype=dtype) for _ in range(int(layers))]

    def forward(self, x, memory, *, memory_mask=None):  # keyword-only, as TransformerDecoderBlock's
        for block in self.block:
            x = block(x, memory, memory_mask=memory_mask)
        return x


class DecoderState(NamedTuple):
    """What :meth:`TransformerLM.step` and :meth:`Transformer.step` carry from one token to the next.

    ``position``: 0-indexed position of the next token; ``caches``: per block,
    the (K, V) Tensors of the positions so far (or None); ``memory``: per
    decoder block, the encoder output's (K, V) (encoder–decoder only);
    ``memory_mask``: the source padding mask (or None).
    """

    position: int
    caches: tuple
    memory: tuple | None = None
    memory_mask: np.ndarray | None = None


def _token_input(name: str, tokens, vocab: int):
    """``tokens`` as (int indices, None) or (None, float one-hot I); a Tensor stays a Tensor (a jit input)."""
    value = tokens.value if isinstance(tokens, Tensor) else np.asarray(tokens)
    if value.dtype.kind in "iu":
        if value.ndim not in (1, 2):
            raise ShapeError(f"{name}: Expect: token indices of shape (L,) or (B, L). Actual: shape {value.shape}")
        # In [0, vocab), on every run of a jit program too: numpy's take would read −1 as the last row.
        return check_ids(name, tokens, vocab), None
    if value.dtype.kind == "f":
        if value.ndim not in (2, 3) or value.shape[-1] != vocab:
            raise ShapeError(f"{name}: Expect: one-hot rows I of shape (L, {vocab}) or (B, L, {vocab}). "
                             f"Actual: shape {value.shape}")
        return None, tokens
    raise ShapeError(f"{name}: Expect: integer token indices or float one-hot rows. Actual: dtype {value.dtype}")


def _embed(E: Parameter, ids, one_hot, scale: float, positions) -> Tensor:
    """(E ·_vocab I)·√d + P: a row gather for indices, the product with I for one-hot rows."""
    with name_scope("embedding"):
        if ids is not None:
            w = take(E, ids if isinstance(ids, Tensor) else Tensor(ids, name="tokens"), axis=0)
        else:
            w = matmul(one_hot, E)
        # A table of the model's, not the user's data: a constant of the picture and of ONNX.
        P = constant(_positions_table(positions, E.shape[1], E.dtype) if isinstance(positions, (int, np.integer))
                     else positional_encoding(positions, E.shape[1], dtype=E.dtype), name="P")
        return add(multiply(w, float(scale)), P)


@functools.lru_cache(maxsize=16)
def _read_only(make, *args) -> np.ndarray:
    table = make(*args)
    table.flags.writeable = False
    return table


def _positions_table(length: int, dim: int, dtype) -> np.ndarray:
    """:func:`positional_encoding` of ``length`` positions, computed once per (length, dim, dtype) and read-only.

    The eager step computed it on every call (sin and cos of 8,192 numbers:
    0.10 ms of the seed-000 step at d 128, T 64); read-only, no caller can
    change the shared table, and an operation does not copy it for the backward pass.
    """
    return _read_only(positional_encoding, int(length), int(dim), np.dtype(dtype))


def _causal_table(length: int, dtype) -> np.ndarray:
    """:func:`causal_mask` (length, length), once per (length, dtype) and read-only (as :func:`_positions_table`).

    Computed every call it took 0.04 ms of the seed-000 step, and masked_softargmax copied the
    writeable mask for the backward pass (core._kept).
    """
    return _read_only(causal_mask, int(length), None, np.dtype(dtype))


def _tied_logits(x, E: Parameter) -> Tensor:
    """E ·_layer X for every position, as one (B·L, d) × (d, vocab) product."""
    with name_scope("logits"):
        shape = tuple(x.shape)
        flat = reshape(x, (-1, shape[-1]))
        return reshape(matmul(flat, transpose(E)), shape[:-1] + (E.shape[0],))


class TransformerLM(Module):
    """Seed 000's Transformer language model, equation by equation (post-norm).

    Seed 000, line by line, and where each line is computed:

    * I ∈ {0,1}^{seq×vocab}, W = (E ·_vocab I)·√|layer| — ``take(E, tokens)·√d``, the same as the
      product with the one-hot I (a float one-hot input is multiplied as written).
    * P_{p,i} = sin((p−1)/10000^{(i−1)/|layer|}) (i odd), cos((p−1)/10000^{(i−2)/|layer|}) (i even)
      — :func:`positional_encoding`, a constant of the program.
    * X⁰ = W + P — scope ``embedding``.
    * T^l = LayerNorm^l(SelfAtt^l(X^{l−1}) + X^{l−1}) — ``block.{l-1}``: ``attention``, ``norm1``.
    * X^l = LayerNorm^{l'}(FFN^l(T^l) + T^l) — ``block.{l-1}``: ``ffn``, ``norm2``.
    * SelfAtt: Q = W^{l,Q} ·_layer X, K = W^{l,K} ·_layer X, V = W^{l,V} ·_layer X,
      Y = W^{l,O} ·_{heads,val} softargmax_seq((Q ⊙_key K)/√|key| + M) ⊙_seq V — :class:`MultiHeadAttention`
      without biases; M = :func:`causal_mask` (each query sees itself and earlier positions).
    * FFN: X² = W^{l,2} ·_hidden relu(W^{l,1} ·_layer X + b^{l,1}) + b^{l,2} — :class:`FeedForward`
      (b^{l,2} ∈ ℝ^layer; the seed's ℝ^hidden is a typo).
    * LayerNorm^l(X) = standardize_layer(X) ⊙ γ^l + β^l — :class:`LayerNorm`, ε = 1e-5 under the root.
    * O = softargmax_vocab(E ·_layer X^L) — :meth:`logits` is E ·_layer X^L (scope ``logits``, tied E);
      :meth:`forward` returns O, the probabilities (unlike the library's other models, whose call gives
      logits): a loss takes ``lm.logits(tokens)``, never ``lm(tokens)``.

    Parameters (``state_dict()`` names): ``E`` (vocab, d_model); per block
    ``block.{l}.attention.W_Q``, ``W_K`` (heads, d_model, d_key), ``W_V``
    (heads, d_model, d_val), ``W_O`` (heads, d_val, d_model); ``block.{l}.ffn.W1``
    (hidden, d_model), ``b1`` (hidden), ``W2`` (d_model, hidden), ``b2``
    (d_model); ``block.{l}.norm1.gamma``, ``beta``, ``block.{l}.norm2.gamma``,
    ``beta`` (d_model). d_key = d_val = d_model / heads unless given.
    Input: token indices (L,) or (B, L), or one-hot rows I (…, L, vocab).
    ``dropout`` (default 0, as the seed) is each block's (:class:`TransformerBlock`).
    Shapes: tokens (B, L) -> probabilities O (B, L, vocab) (position t predicts token t + 1).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> lm = nn.TransformerLM(vocab_size=11, d_model=8, heads=2, hidden=16, layers=2, rng=0)
        >>> lm(np.array([[1, 2, 3]])).shape
        (1, 3, 11)
        >>> list(lm.state_dict())[:4]
        ['E', 'block.0.attention.W_Q', 'block.0.attention.W_K', 'block.0.attention.W_V']
    """

    def __init__(self, vocab_size: int, d_model: int = 64, heads: int = 4, hidden: int | None = None,
                 layers: int = 2, d_key: int | None = None, d_val: int | None = None, eps: float = 1e-5, *,
                 dropout: float = 0.0, rng=None, dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        self.vocab_size, self.d_model, self.heads = int(vocab_size), int(d_model), int(heads)
        self.hidden = int(hidden) if hidden is not None else 4 * self.d_model
        # E·√d then has entries of variance 1, the scale of the positional encodings.
        self.E = Parameter((rng.standard_normal((self.vocab_size, self.d_model)) / np.sqrt(self.d_model))
                           .astype(dtype))
        self.block = [TransformerBlock(self.d_model, self.heads, self.hidden, d_key, d_val, False, eps,
                                       dropout=dropout, rng=rng, dtype=dtype) for _ in range(int(layers))]

    def hidden_states(self, tokens, return_weights: bool = False):
        """X^L (and, with ``return_weights``, each block's attention weights (B, heads, L, L)).

        Shapes: tokens (B, L) -> (B, L, d_model); (L,) -> (L, d_model).
        """
        ids, one_hot = _token_input("TransformerLM", tokens, self.vocab_size)
        length = ids.shape[-1] if ids is not None else np.shape(getattr(one_hot, "value", one_hot))[-2]
        x = _embed(self.E, ids, one_hot, np.sqrt(self.d_model), length)
        mask = _causal_table(length, self.E.dtype)
        weights = []
        for block in self.block:
            x, w = block(x, mask=mask, return_weights=True)
            weights.append(w)
        return (x, weights) if return_weights else x

    def logits(self, tokens) -> Tensor:
        """E ·_layer X^L: next-token scores for training with cross-entropy. Shapes: (B, L) -> (B, L, vocab)."""
        return _tied_logits(self.hidden_states(tokens), self.E)

    def forward(self, tokens) -> Tensor:
        return softargmax(self.logits(tokens), -1)

    def attention_maps(self, tokens) -> list[np.ndarray]:
        """Each block's attention weights, computed without recording and without dropout (eval mode).

        The mode is restored after; in training mode with ``dropout`` the maps of
        every block after the first would change from call to call.
        Shapes: (B, L) -> [(B, heads, L, L)].
        """
        with self.evaluating(), no_grad():
            _, weights = self.hidden_states(tokens, return_weights=True)
        return [w.value for w in weights]

    # --------------------------------------------------------------- decoding

    def start_state(self, source=None) -> DecoderState:
        """The state before any token; ``source`` (optional token indices) is a prefix consumed first."""
        state = DecoderState(0, (None,) * len(self.block))
        for token in ([] if source is None else np.asarray(source).reshape(-1)):
            _, state = self.step(state, int(token))
        return state

    def step(self, state: DecoderState, token: int) -> tuple[np.ndarray, DecoderState]:
        """Consume ``token`` at ``state.position``; return the next token's logits (vocab,) and the new state."""
        with no_grad():
            ids = check_ids("TransformerLM.step", np.array([[int(token)]]), self.vocab_size)
            x = _embed(self.E, ids, None, np.sqrt(self.d_model), np.array([state.position]))
            caches = []
            for block, cache in zip(self.block, state.caches):
                x, cache = block.step(x, cache)
                caches.append(cache)
            logits = _tied_logits(x, self.E).value[0, 0]
        return logits, DecoderState(state.position + 1, tuple(caches))

    def extra_repr(self) -> str:
        return (f"vocab_size={self.vocab_size}, d_model={self.d_model}, heads={self.heads}, "
                f"hidden={self.hidden}, layers={len(self.block)}")


class Logits(Module):
    """A language model with its ``logits`` as ``forward``: what a cross-entropy loss takes.

    ``TransformerLM(tokens)`` gives probabilities, but ``nn.functional_call``,
    ``ad.onnx.training_step_program`` and other code that runs a module's
    ``forward`` need the scores. Wrapping the model shares its parameters, named
    ``"inner." + name`` here. Shapes: as ``inner.logits`` ((B, L) -> (B, L, vocab)
    for a :class:`TransformerLM`).
    Example: ``nn.functional_call(nn.Logits(lm), {"inner.E": E}, tokens)`` is ``lm.logits(tokens)``
    with the embedding table E.
    """

    def __init__(self, inner: Module):
        super().__init__()
        if not callable(getattr(inner, "logits", None)):
            raise AutogradDagError(f"Logits: Expect: a model with a logits method. Actual: {type(inner).__name__}")
        self.inner = inner

    def forward(self, *args, **kwargs) -> Tensor:
        return self.inner.logits(*args, **kwargs)


class Transformer(Module):
    """Seed 003's encoder–decoder Transformer: encoder stack, decoder stack, output projection.

    Source and target tokens are embedded with their own matrices ``E_source``,
    ``E_target`` (scaled by √d_model) plus seed 003's positional encodings
    PE(pos, 2i) = sin(pos/10000^{2i/d}), PE(pos, 2i+1) = cos(pos/10000^{2i/d}),
    0-indexed. Seed 000 counts from 1 (p − 1 and i − 1 in its formula): the
    matrices are the same (see :func:`positional_encoding`). The encoder
    (:class:`TransformerEncoder`, no mask) reads the source; the decoder
    (:class:`TransformerDecoder`, causal self-attention and cross-attention over
    the encoder output) reads the target shifted right; ``output`` (a Linear
    layer) gives the target vocabulary's scores. ``source_mask`` (B, L_src)
    booleans, True at real tokens, hides source padding from both attentions.
    Calling the model gives the probabilities (as :class:`TransformerLM`'s call);
    a loss takes :meth:`logits`.
    Shapes: source (B, L_src), target (B, L_tgt) -> (B, L_tgt, target_vocab).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> model = nn.Transformer(7, 9, d_model=8, heads=2, hidden=16, layers=1, rng=0)
        >>> model.logits(np.array([[1, 2, 3, 4]]), np.array([[0, 5]])).shape
        (1, 2, 9)
    """

    def __init__(self, source_vocab: int, target_vocab: int, d_model: int = 64, heads: int = 4,
                 hidden: int | None = None, layers: int = 2, decoder_layers: int | None = None,
                 bias: bool = False, eps: float = 1e-5, *, rng=None, dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        self.source_vocab, self.target_vocab, self.d_model = int(source_vocab), int(target_vocab), int(d_model)
        hidden = int(hidden) if hidden is not None else 4 * self.d_model
        decoder_layers = layers if decoder_layers is None else decoder_layers
        scale = 1.0 / np.sqrt(self.d_model)
        self.E_source = Parameter((rng.standard_normal((self.source_vocab, self.d_model)) * scale).astype(dtype))
        self.E_target = Parameter((rng.standard_normal((self.target_vocab, self.d_model)) * scale).astype(dtype))
        self.encoder = TransformerEncoder(d_model, heads, hidden, layers, bias=bias, eps=eps, rng=rng, dtype=dtype)
        self.decoder = TransformerDecoder(d_model, heads, hidden, decoder_layers, bias=bias, eps=eps, rng=rng,
                                          dtype=dtype)
        self.output = Linear(d_model, target_vocab, rng=rng, dtype=dtype)

    def _embed(self, E, tokens, name, positions=None):
        ids, one_hot = _token_input(name, tokens, E.shape[0])
        if ids is None:
            raise ShapeError(f"{name}: Expect: integer token indices. Actual: float input")
        if ids.ndim == 1:
            ids = ids[None, :]
        positions = ids.shape[-1] if positions is None else positions
        return _embed(E, ids, None, np.sqrt(self.d_model), positions)

    def encode(self, source, source_mask=None) -> Tensor:
        """The encoder output (memory). Shapes: (B, L_src) -> (B, L_src, d_model)."""
        return self.encoder(self._embed(self.E_source, source, "Transformer source"), padding_mask=source_mask)

    def decode(self, target, memory, source_mask=None) -> Tensor:
        """Target-vocabulary scores given the memory. Shapes: (B, L_tgt), (B, L_src, d) -> (B, L_tgt, vocab)."""
        x = self._embed(self.E_target, target, "Transformer target")
        x = self.decoder(x, memory, memory_mask=_padding_to_additive(source_mask))
        return self.output(x)

    def logits(self, source, target, source_mask=None) -> Tensor:
        """Scores for each target position (teacher forcing: ``target`` is the shifted-right target)."""
        return self.decode(target, self.encode(source, source_mask), source_mask)

    def forward(self, source, target, source_mask=None) -> Tensor:
        return softargmax(self.logits(source, target, source_mask), -1)

    def start_state(self, source=None, source_mask=None) -> DecoderState:
        """Encode one source sequence (L_src,) and precompute each decoder block's cross-attention (K, V)."""
        if source is None:
            raise ShapeError("Transformer.start_state: Expect: a source sequence of token indices. Actual: None")
        with no_grad():
            memory = self.encode(np.asarray(source).reshape(1, -1), source_mask)
            memory_kv = tuple(tuple(block.cross_attention.project_keys_values(memory))
                              for block in self.decoder.block)
        return DecoderState(0, (None,) * len(self.decoder.block), memory_kv, _padding_to_additive(source_mask))

    def step(self, state: DecoderState, token: int) -> tuple[np.ndarray, DecoderState]:
        """Consume target ``token``; return the next target token's logits (target_vocab,) and the new state."""
        with no_grad():
            x = self._embed(self.E_target, np.array([[int(token)]]), "Transformer target",
                            np.array([state.position]))
            caches = []
            for block, cache, kv in zip(self.decoder.block, state.caches, state.memory):
                x, cache = block.step(x, cache, kv, state.memory_mask)
                caches.append(cache)
            logits = self.output(x).value[0, 0]
        return logits, DecoderState(state.position + 1, tuple(caches), state.memory, state.memory_mask)
