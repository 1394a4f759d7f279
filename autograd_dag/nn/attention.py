"""Attention (seed 001 §4.8.1, seed 000's SelfAtt, seed 003): masks, positional encodings, multi-head attention.

``attention(Q, K, V, mask, scale)`` is softargmax(Q Kᵀ·scale + M) V, the row
of a query being a distribution over the keys. Seed 001 writes the mask as a
Hadamard product ``(Q Kᵀ) ∘ M`` with entries −∞; multiplying a score by −∞
gives −∞ or +∞ depending on its sign and NaN for a zero score, so the mask
here is **additive** (0 keeps an entry, −∞ removes it), as in seed 000 and the
named-tensor paper's definition it refers to. The default scale is 1/√d_key
(seed 000's ``/√|key|``); ``scale=1.0`` gives seed 001's unscaled form.

Everything is built from public Tensor operations (matmul, softargmax, add,
sin, cos, ...), batched over the heads: no Python loop over heads.
"""

from __future__ import annotations

import numpy as np

from ..core import Tensor, name_scope, tracer_of
from ..errors import ShapeError
from ..primitives.elementwise import add, multiply, where
from ..primitives.mathfuncs import cos, sin
from ..primitives.indexing import checked_mask, dead_rows_error
from ..primitives.linalg import matmul
from ..primitives.fused import masked_softargmax, softargmax
from ..primitives.structure import reshape, swapaxes, transpose
from . import init as _init
from .module import Module, Parameter

__all__ = ["attention", "causal_mask", "positional_encoding", "MultiHeadAttention"]


def causal_mask(n_queries: int, n_keys: int | None = None, dtype=np.float64) -> np.ndarray:
    """The additive causal mask: 0 where a query may see a key (key position ≤ query position), else −∞.

    Rows are queries, columns keys (the layout of Q Kᵀ). Seed 000 writes the
    same mask with the axes the other way round, M_{seq(i), seq'(j)} = 0 if
    i ≤ j else −∞ with seq indexing keys and seq' queries: ``causal_mask(n)[j, i]``
    is that M_{seq(i), seq'(j)}. With ``n_keys`` > ``n_queries`` the queries are the
    last ``n_queries`` positions of ``n_keys`` (incremental decoding).
    Shapes: -> (n_queries, n_keys).

    Example:
        >>> from autograd_dag import nn
        >>> nn.causal_mask(3)
        array([[  0., -inf, -inf],
               [  0.,   0., -inf],
               [  0.,   0.,   0.]])
    """
    n_keys = n_queries if n_keys is None else int(n_keys)
    if n_queries < 0 or n_keys < n_queries:
        raise ShapeError(f"causal_mask: Expect: 0 <= n_queries <= n_keys. Actual: n_queries={n_queries}, "
                         f"n_keys={n_keys}")
    query_pos = np.arange(n_queries)[:, None] + (n_keys - n_queries)
    key_pos = np.arange(n_keys)[None, :]
    return np.where(key_pos <= query_pos, 0.0, -np.inf).astype(dtype)


def positional_encoding(positions, dim: int, dtype=np.float64):
    """Sinusoidal positional encodings P (seeds 000 and 003): one row of ``dim`` numbers per position.

    ``positions`` is a length n (positions 0, ..., n−1), an integer array of
    0-indexed positions, or a Tensor of positions, in which case P is computed
    inside the program with ``sin`` and ``cos`` (differentiable in the positions).

    Seed 003 (0-indexed position pos and pair index i) writes
    PE(pos, 2i) = sin(pos / 10000^{2i/d}), PE(pos, 2i+1) = cos(pos / 10000^{2i/d});
    seed 000 (1-indexed position p and column i) writes
    P_{p,i} = sin((p−1) / 10000^{(i−1)/d}) for odd i, cos((p−1) / 10000^{(i−2)/d}) for even i.
    With pos = p − 1 and 0-indexed column c = i − 1 both say: column c holds
    sin (c even) or cos (c odd) of pos / 10000^{(c − c mod 2)/d}. The two
    conventions differ in how they count, not in the matrix.
    Shapes: positions (n,) -> (n, dim); a Tensor of shape (*s) -> (*s, dim).

    Example:
        >>> from autograd_dag import nn
        >>> nn.positional_encoding(2, 4).round(4)
        array([[0.    , 1.    , 0.    , 1.    ],
               [0.8415, 0.5403, 0.01  , 1.    ]])
    """
    dim = int(dim)
    if dim < 1:
        raise ShapeError(f"positional_encoding: Expect: dim >= 1. Actual: {dim}")
    column = np.arange(dim)
    rates = (10000.0 ** (-(column - column % 2) / dim)).astype(dtype)
    is_sin = column % 2 == 0
    if isinstance(positions, Tensor):
        angles = multiply(reshape(positions, positions.shape + (1,)), rates)
        return where(is_sin, sin(angles), cos(angles))
    if np.ndim(positions) == 0:
        positions = np.arange(int(positions))
    angles = np.asarray(positions, dtype=dtype)[..., None] * rates
    return np.where(is_sin, np.sin(angles), np.cos(angles)).astype(dtype)


def _shape_of(x) -> tuple:
    return tuple(x.shape) if isinstance(x, Tensor) else tuple(np.shape(x))


def _additive(mask, dtype) -> Tensor | np.ndarray:
    """A mask as additive scores: booleans (True = attend) become 0 / −∞; numbers are used as they are.

    A Tensor mask is converted by an operation, so that inside ``jit`` it stays
    an input of the program rather than this call's numbers. Any other dtype
    (integers) is refused, as PyTorch refuses it: a 1/0 keep-mask read as
    scores would add 1 to the kept keys and 0 to the others, masking nothing.
    """
    kind = (mask.dtype if isinstance(mask, Tensor) else np.asarray(mask).dtype).kind
    if kind not in "bf":
        shape = _shape_of(mask)
        raise ShapeError(f"attention: Expect: a mask of booleans (True = attend) or of additive float scores "
                         f"(0 keeps, -inf removes). Actual: a mask of dtype "
                         f"{(mask.dtype if isinstance(mask, Tensor) else np.asarray(mask).dtype)}, shape {shape}; "
                         f"a 0/1 mask read as scores would mask nothing: pass it as booleans (mask != 0)")
    if isinstance(mask, Tensor):
        return additive_scores(mask, dtype) if mask.dtype == bool else mask
    mask = np.asarray(mask)
    if mask.dtype == bool:
        return np.where(mask, 0.0, -np.inf).astype(dtype)
    return mask.astype(dtype, copy=False)


def additive_scores(mask: Tensor, dtype) -> Tensor:
    """A boolean Tensor mask (True = attend) as scores 0 / −∞ of ``dtype``. Shapes: any -> the same."""
    dtype = np.dtype(dtype)
    return where(mask, np.zeros((), dtype), np.full((), -np.inf, dtype))


def _fits(shape: tuple, scores_shape: tuple) -> bool:
    """Whether ``shape`` broadcasts to ``scores_shape`` without widening it (np.broadcast_shapes gives it back)."""
    if len(shape) > len(scores_shape):
        return False
    for d, s in zip(reversed(shape), reversed(scores_shape)):
        if d != s and d != 1:
            return False
    return True


def _check_rows(mask, scores_shape: tuple) -> None:
    """Raise when some query row has every key masked (softargmax would give NaN)."""
    value = mask.value if isinstance(mask, Tensor) else mask
    if type(value) is np.ndarray and value.ndim and value.dtype.kind == "f" and _fits(value.shape, scores_shape):
        # The common case (a float mask, a causal one, every call of every attention layer): the
        # checks below without numpy's Python wrappers (x == -inf is isneginf for a real float).
        if scores_shape[-1] == 0 or not (value == -np.inf).all(axis=-1).any():
            return
    try:
        full_shape = np.broadcast_shapes(np.shape(value), scores_shape)
    except ValueError:
        raise ShapeError(f"attention: Expect: a mask broadcastable to the scores' shape {scores_shape} "
                         f"(..., L_q, L_k). Actual: mask of shape {np.shape(value)}") from None
    if full_shape != scores_shape:
        raise ShapeError(f"attention: Expect: a mask broadcastable to the scores' shape {scores_shape} "
                         f"(..., L_q, L_k). Actual: mask of shape {np.shape(value)} widens it to {full_shape}")
    if full_shape[-1] == 0:
        return
    # A row is dead in the broadcast mask exactly when it is dead in the mask
    # itself (broadcasting repeats rows and entries): test the mask, (L_q, L_k)
    # for a causal one, not the (batch, heads, L_q, L_k) it broadcasts to.
    if not np.any(np.all(np.isneginf(np.atleast_1d(value)), axis=-1)):
        return
    full = np.broadcast_to(value, full_shape)
    raise dead_rows_error("attention", np.all(np.isneginf(full), axis=-1), f"for scores of shape {scores_shape}")


def attention(Q, K, V, mask=None, scale: float | None = None, return_weights: bool = False):
    """softargmax(Q Kᵀ·scale + M) V: each query's output is a convex combination of the values (001 §4.8.1).

    ``mask`` M is additive, broadcastable to (..., L_q, L_k): 0 keeps an entry,
    −∞ removes it (a boolean mask is read as True = attend). Seed 001 writes
    a Hadamard product with −∞, which removes only positive scores (a negative
    one becomes +∞ and the row NaN, a zero one NaN); the additive form is the
    one seed 000 uses. A query row whose keys are all masked raises
    :class:`ShapeError` naming the row. ``scale`` defaults to 1/√d_key;
    ``scale=1.0`` is seed 001's unscaled form. L_q may differ from L_k
    (cross-attention). With ``return_weights`` the attention matrix A is
    returned too.
    Shapes: Q (..., L_q, d_key), K (..., L_k, d_key), V (..., L_k, d_val) -> (..., L_q, d_val)
    [and A (..., L_q, L_k)].

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> x = np.eye(3)
        >>> out, A = nn.attention(x, x, x, mask=nn.causal_mask(3), scale=1.0, return_weights=True)
        >>> A.value[1].round(3)
        array([0.269, 0.731, 0.   ])
    """
    sq, sk, sv = _shape_of(Q), _shape_of(K), _shape_of(V)
    if len(sq) < 2 or len(sk) < 2 or len(sv) < 2:
        raise ShapeError(f"attention: Expect: Q (..., L_q, d_key), K (..., L_k, d_key), V (..., L_k, d_val) "
                         f"with at least 2 axes each. Actual: Q {sq}, K {sk}, V {sv}")
    if sq[-1] != sk[-1] or sk[-2] != sv[-2]:
        raise ShapeError(f"attention: Expect: Q and K with the same d_key and K, V with the same L_k. "
                         f"Actual: Q {sq}, K {sk}, V {sv}")
    if scale is None:
        scale = 1.0 / np.sqrt(sk[-1]) if sk[-1] else 1.0
    if mask is not None:
        scores = matmul(Q, swapaxes(K, -1, -2))
        mask = _additive(mask, scores.dtype)
        _check_rows(mask, tuple(scores.shape))
        if tracer_of(mask) is not None:
            # A jit input's numbers change from call to call, and vmap records its first example:
            # _check_rows saw those numbers only. A node of the program checks every run's.
            mask = checked_mask(mask, "attention")
        # Scaled, masked and normalized by one primitive: one array of the
        # scores' size kept for the backward pass, not three.
        weights = masked_softargmax(scores, mask, -1, float(scale))
        out = matmul(weights, V)
        return (out, weights) if return_weights else out
    if scale != 1.0 and sk[-2] > sq[-1]:
        # Scale the queries (L_q × d_key) rather than the scores (L_q × L_k): a
        # smaller array made, and kept for the backward pass.
        scores = matmul(multiply(Q, float(scale)), swapaxes(K, -1, -2))
    else:
        scores = matmul(Q, swapaxes(K, -1, -2))
        if scale != 1.0:
            scores = multiply(scores, float(scale))
    weights = softargmax(scores, -1)
    out = matmul(weights, V)
    return (out, weights) if return_weights else out


class MultiHeadAttention(Module):
    """Multi-head attention (seed 000's SelfAtt, seed 003): per-head projections, then an output projection.

    Parameters, in seed 000's shapes: ``W_Q``, ``W_K`` (heads, d_model, d_key),
    ``W_V`` (heads, d_model, d_val), ``W_O`` (heads, d_val, d_model); with
    ``bias=True`` also ``b_Q``, ``b_K`` (heads, d_key), ``b_V`` (heads, d_val)
    and ``b_O`` (d_model). d_key = d_val = d_model / heads unless given.
    Q = W_Q ·_layer X (queries from ``x``), K = W_K ·_layer Y, V = W_V ·_layer Y
    with Y = ``memory`` (default ``x``: self-attention; another sequence:
    cross-attention), then Y_out = W_O ·_{heads, val} Attention(Q, K, V, M).
    The projections run as one matrix product over all heads (the weights
    reshaped to (d_model, heads·d_key)), and attention as batched products
    over (batch, heads); ``mask`` broadcasts to (batch, L_q, L_k) or (L_q, L_k):
    additive scores (0 keeps, −∞ removes) or booleans True where a query may
    attend, as ``torch.nn.functional.scaled_dot_product_attention`` reads them —
    the opposite of ``torch.nn.MultiheadAttention``'s boolean ``attn_mask`` and
    ``key_padding_mask`` (True there removes the key): invert such a mask.
    Called as ``mha(x, memory=None, *, mask=None)``: ``mask`` is keyword-only,
    so PyTorch's ``mha(query, key, value)`` is refused rather than reading the
    values as a mask (for cross-attention pass ``memory`` once, as keys and values).
    Shapes: x (..., L_q, d_model), memory (..., L_k, d_model) -> (..., L_q, d_model).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> mha = nn.MultiHeadAttention(8, heads=2, rng=0)
        >>> [(n, p.shape) for n, p in mha.named_parameters()]
        [('W_Q', (2, 8, 4)), ('W_K', (2, 8, 4)), ('W_V', (2, 8, 4)), ('W_O', (2, 4, 8))]
        >>> mha(np.ones((3, 5, 8)), mask=nn.causal_mask(5)).shape
        (3, 5, 8)
    """

    def __init__(self, d_model: int, heads: int = 1, d_key: int | None = None, d_val: int | None = None,
                 bias: bool = False, *, rng=None, dtype=np.float64):
        super().__init__()
        d_model, heads = _init.size("MultiHeadAttention", "d_model", d_model), \
            _init.size("MultiHeadAttention", "heads", heads)
        if heads < 1 or (d_key is None or d_val is None) and d_model % heads:
            raise ShapeError(f"MultiHeadAttention: Expect: heads >= 1 dividing d_model (or d_key and d_val "
                             f"given). Actual: d_model={d_model}, heads={heads}")
        for what, size in (("d_key", d_key), ("d_val", d_val)):
            if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1):
                # e.g. PyTorch's MultiheadAttention(embed_dim, num_heads, dropout=0.1): int(0.1) was a 0-wide key.
                raise ShapeError(f"MultiHeadAttention: Expect: {what} a positive int (or None: d_model / heads). "
                                 f"Actual: {size!r}")
        self.d_model, self.heads = d_model, heads
        self.d_key = int(d_key) if d_key is not None else d_model // heads
        self.d_val = int(d_val) if d_val is not None else d_model // heads
        rng = _init.as_generator(rng)
        h, d, k, v = heads, d_model, self.d_key, self.d_val
        # Glorot over the flattened maps d -> h·k and h·v -> d.
        self.W_Q = Parameter(_glorot((h, d, k), d, h * k, rng, dtype))
        self.W_K = Parameter(_glorot((h, d, k), d, h * k, rng, dtype))
        self.W_V = Parameter(_glorot((h, d, v), d, h * v, rng, dtype))
        self.W_O = Parameter(_glorot((h, v, d), h * v, d, rng, dtype))
        if bias:
            self.b_Q = Parameter(np.zeros((h, k), dtype))
            self.b_K = Parameter(np.zeros((h, k), dtype))
            self.b_V = Parameter(np.zeros((h, v), dtype))
            self.b_O = Parameter(np.zeros(d, dtype))
        else:
            self.b_Q = self.b_K = self.b_V = self.b_O = None

    def _check(self, x, what: str) -> tuple:
        shape = _shape_of(x)
        if len(shape) < 2 or shape[-1] != self.d_model:
            raise ShapeError(f"MultiHeadAttention(d_model={self.d_model}): Expect: {what} of shape (..., L, "
                             f"{self.d_model}). Actual: shape {shape}")
        return shape

    def _rows(self, x, what: str = "input") -> tuple:
        """x (..., L, d_model) as (rows (·, d_model), leading shape, L): one flattening for every projection."""
        shape = self._check(x, what)
        return reshape(x, (-1, self.d_model)), shape[:-2], shape[-2]

    def _split_heads(self, rows: tuple, W, b, size: int) -> Tensor:
        """x's rows -> (..., heads, L, size): all heads' projections in one matrix product."""
        flat, lead, length = rows
        y = matmul(flat, reshape(transpose(W, (1, 0, 2)), (self.d_model, self.heads * size)))
        if b is not None:
            y = add(y, reshape(b, (self.heads * size,)))
        y = reshape(y, lead + (length, self.heads, size))
        return swapaxes(y, -2, -3)

    def project_queries(self, x) -> Tensor:
        """Q = W_Q ·_layer x per head. Shapes: (..., L_q, d_model) -> (..., heads, L_q, d_key)."""
        return self._split_heads(self._rows(x), self.W_Q, self.b_Q, self.d_key)

    def project_keys_values(self, memory) -> tuple[Tensor, Tensor]:
        """(K, V) per head from ``memory``. Shapes: (..., L_k, d_model) -> (..., heads, L_k, d_key / d_val)."""
        return self._keys_values(self._rows(memory))

    def _keys_values(self, rows: tuple) -> tuple[Tensor, Tensor]:
        return (self._split_heads(rows, self.W_K, self.b_K, self.d_key),
                self._split_heads(rows, self.W_V, self.b_V, self.d_val))

    def attend(self, q, k, v, mask=None, return_weights: bool = False):
        """Attention of projected q, k, v over all heads at once, then the output projection W_O.

        Shapes: q (..., heads, L_q, d_key), k, v (..., heads, L_k, ·) -> (..., L_q, d_model)
        [and the weights (..., heads, L_q, L_k)].
        """
        if mask is not None:
            mask = _additive(mask, np.result_type(_dtype(q), np.float16))
            if len(_shape_of(mask)) >= 3:  # (batch, L_q, L_k): one mask for every head
                mask = reshape(mask, _shape_of(mask)[:-2] + (1,) + _shape_of(mask)[-2:]) \
                    if isinstance(mask, Tensor) else mask[..., None, :, :]
        with name_scope(f"{self.heads} heads"):
            out, weights = attention(q, k, v, mask=mask, return_weights=True)
        shape = _shape_of(out)
        lead, length = shape[:-3], shape[-2]
        merged = reshape(swapaxes(out, -2, -3), (-1, self.heads * self.d_val))
        y = matmul(merged, reshape(self.W_O, (self.heads * self.d_val, self.d_model)))
        if self.b_O is not None:
            y = add(y, self.b_O)
        y = reshape(y, lead + (length, self.d_model))
        return (y, weights) if return_weights else y

    # ``mask`` is keyword-only: PyTorch's MultiheadAttention is called (query, key, value), and
    # m(x, x, x) read the value x as an additive mask (silently, when L_k equals d_model).
    def forward(self, x, memory=None, *, mask=None, return_weights: bool = False):
        rows = self._rows(x)
        q = self._split_heads(rows, self.W_Q, self.b_Q, self.d_key)
        k, v = self._keys_values(rows if memory is None else self._rows(memory))
        return self.attend(q, k, v, mask=mask, return_weights=return_weights)

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, heads={self.heads}, d_key={self.d_key}, d_val={self.d_val}, "
                f"bias={self.b_O is not None}")


def _dtype(x):
    return x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype


def _glorot(shape, fan_in, fan_out, rng, dtype) -> np.ndarray:
    bound = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-bound, bound, size=shape).astype(dtype)
