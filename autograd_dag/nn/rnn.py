"""Recurrent networks (§4.7): pluggable cells and the four setups, unrolled iteratively.

A *cell* is the state update z_l = g(x_l, z_{l-1}); its parameters are shared
by every step. Cells here: the book's one-hidden-layer MLP (:class:`MLPCell`),
the Elman cell (:class:`ElmanCell`, PyTorch's ``RNNCell``), :class:`GRUCell`
and :class:`LSTMCell` with PyTorch's gate equations and parameter layout.
Every cell's state is ONE vector per sample (the LSTM's is the concatenation
[h; c]), so the setups treat all cells alike; ``cell.output(z)`` is the part a
head or a pooling reads (h).

The setups (seed 001 §4.7), batch-first, shapes (batch, length, features):

* :class:`VectorToSequence` (§4.7.1): z_l = g(x, z_{l-1}), p_l = h(z_l);
* :class:`SequenceToVector` (§4.7.2): s_l = γ(x_l, s_{l-1}), p = pooling(s_{1:L})
  with pooling 'last', 'mean' or 'max' (coordinate-wise);
* :class:`SequenceToSequence` (§4.7.3, aligned): p_l = h(s_l);
* :class:`EncoderDecoder` (§4.7.4, unaligned): c = pooling(s_{1:L}),
  z_l = g(c, p_{l-1}, z_{l-1}), p_l = h(z_l), an EOS token, teacher forcing,
  and the ``start_state`` / ``step`` interface of :mod:`.decoding`.

There is no padding mask: every sequence of a batch has the batch's length L
(group sequences by length, or run them one by one). Padded steps would
enter the recursion, and 'last', 'mean' and 'max' pooling would read them
(PyTorch's ``pack_padded_sequence`` has no counterpart here). Layers are
single-direction and single-layer; stack :class:`RNN` modules for depth.

Each setup holds a learnable initial state z₀ (zeros at first). Unrolling is
a Python loop, so the recorded program is a long chain and both the forward
pass and ``backward()`` (iterative in the core) handle 10,000 steps. The
input's share of every step is projected at once for the whole sequence and
cut into steps by :func:`autograd_dag.unstack`, whose backward costs
O(L), eager or recorded (benchmarks/bench_rnn_long.py). Each step
records inside ``ad.name_scope("step<l>")``: a rendering shows one cluster per
step, and ``depth=`` folds the identical steps.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> from autograd_dag import nn
    >>> model = nn.SequenceToVector(nn.GRUCell(3, 8, rng=0), pooling="mean", head=nn.Linear(8, 2, rng=0))
    >>> x = np.random.default_rng(0).normal(size=(4, 5, 3))      # (batch, length, features)
    >>> loss = nn.functional.cross_entropy(model(x), np.array([0, 1, 1, 0]))
    >>> loss.backward()
    >>> model(x).shape, model.encoder.cell.weight_hh.grad.shape
    ((4, 2), (24, 8))
"""

from __future__ import annotations

import math

import numpy as np

from ..core import Tensor, name_scope, no_grad
from ..errors import AutogradDagError, ShapeError
from ..primitives.elementwise import add, logistic, multiply, relu, subtract, tanh
from ..primitives.indexing import concatenate, getitem, one_hot, stack, unstack
from ..primitives.linalg import matmul
from ..primitives.reductions import max as _max
from ..primitives.reductions import mean as _mean
from ..primitives.structure import broadcast_to, expand_dims, transpose
from . import decoding
from . import functional as F
from . import init as _init
from .layers import Linear
from .module import Module, Parameter

__all__ = ["RecurrentCell", "MLPCell", "ElmanCell", "GRUCell", "LSTMCell", "make_cell", "RNN",
           "pool", "POOLINGS", "VectorToSequence", "SequenceToVector", "SequenceToSequence",
           "EncoderDecoder"]

POOLINGS = ("last", "mean", "max")


def _shape(x) -> tuple:
    return tuple(np.shape(x.value if isinstance(x, Tensor) else x))


def _uniform(shape, bound, rng, dtype):
    return _init.uniform(shape, bound, rng=rng, dtype=dtype)

# ------------------------------------------------------------------ cells


class RecurrentCell(Module):
    """Base class of cells: one state update z' = g(x, z) with parameters shared across steps.

    A cell splits its update in two so that unrolling pays the input's share
    once for the whole sequence: :meth:`project` maps inputs (any leading
    axes) to what the update needs of them (e.g. W_ih x + b_ih), and
    :meth:`recur` combines one step's projection with the state. Calling the
    cell does both for one step.

    Attributes: ``input_size`` D, ``hidden_size`` H (the width of
    :meth:`output`), ``state_size`` S (H, or 2H for the LSTM).
    Shapes: ``cell(x, z)``: x (B, D), z (B, S) -> (B, S).
    Example: ``nn.ElmanCell(3, 4, rng=0)(np.ones((2, 3)), np.zeros((2, 4))).shape == (2, 4)``.
    """

    input_size: int
    hidden_size: int
    state_size: int

    def project(self, x):
        """The input's share of the update. Shapes: (..., D) -> (..., P)."""
        raise NotImplementedError

    def recur(self, px, z):
        """One step from a projected input. Shapes: px (B, P), z (B, S) -> (B, S)."""
        raise NotImplementedError

    def output(self, z):
        """The part of the state that heads and poolings read (h). Shapes: (B, S) -> (B, H)."""
        return z

    def forward(self, x, z):
        x_shape, z_shape = _shape(x), _shape(z)
        if len(x_shape) < 1 or x_shape[-1] != self.input_size:
            raise ShapeError(f"{type(self).__name__}: Expect: input (batch, {self.input_size}). "
                             f"Actual: shape {x_shape}")
        if len(z_shape) < 1 or z_shape[-1] != self.state_size:
            raise ShapeError(f"{type(self).__name__}: Expect: state (batch, {self.state_size}). "
                             f"Actual: shape {z_shape}")
        return self.recur(self.project(x), z)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}"


class MLPCell(RecurrentCell):
    """The book's cell: a one-hidden-layer MLP of the concatenated input and state (§4.7.1).

    z' = a_out(W₂ a(W₁ [x; z] + b₁) + b₂), with W₁ = [W_x  W_z] stored as
    ``input_weight`` (width, D) and ``state_weight`` (width, H); ``output_layer``
    is the Linear W₂, b₂. ``activation`` a and ``output_activation`` a_out
    default to tanh: a bounded state keeps a long recursion from blowing up.
    Shapes: x (B, D), z (B, H) -> (B, H).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> cell = nn.MLPCell(3, 4, width=16, rng=0)
        >>> cell(np.ones((2, 3)), np.zeros((2, 4))).shape
        (2, 4)
    """

    def __init__(self, input_size: int, hidden_size: int, width: int | None = None, *,
                 activation="tanh", output_activation="tanh", rng=None, dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        self.input_size = _init.size("MLPCell", "input_size", input_size)
        self.hidden_size = _init.size("MLPCell", "hidden_size", hidden_size)
        self.state_size = self.hidden_size
        self.width = _init.size("MLPCell", "width", width) if width is not None else 2 * self.hidden_size
        w1 = _init.glorot_uniform((self.width, self.input_size + self.hidden_size), rng=rng, dtype=dtype)
        self.input_weight = Parameter(w1[:, :self.input_size])
        self.state_weight = Parameter(w1[:, self.input_size:])
        self.bias = Parameter(np.zeros(self.width, dtype=dtype))
        self.output_layer = Linear(self.width, self.hidden_size, rng=rng, dtype=dtype)
        self.activation = F.get_activation(activation)
        self.output_activation = F.get_activation(output_activation)

    def project(self, x):
        return add(matmul(x, transpose(self.input_weight)), self.bias)

    def recur(self, px, z):
        hidden = self.activation(add(px, matmul(z, transpose(self.state_weight))))
        return self.output_activation(self.output_layer(hidden))

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, width={self.width}"


class _GatedCell(RecurrentCell):
    """PyTorch's layout: weight_ih (G·H, D), weight_hh (G·H, H), bias_ih, bias_hh (G·H,), all U(−1/√H, 1/√H)."""

    gates = 1

    def __init__(self, input_size: int, hidden_size: int, *, bias: bool = True, rng=None, dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        name = type(self).__name__
        self.input_size = _init.size(name, "input_size", input_size)
        self.hidden_size = _init.size(name, "hidden_size", hidden_size)
        if self.input_size < 1 or self.hidden_size < 1:
            raise ShapeError(f"{type(self).__name__}: Expect: positive sizes. Actual: input_size "
                             f"{input_size}, hidden_size {hidden_size}")
        self.state_size = self.hidden_size
        g, h, bound = self.gates * self.hidden_size, self.hidden_size, 1.0 / math.sqrt(self.hidden_size)
        self.weight_ih = Parameter(_uniform((g, self.input_size), bound, rng, dtype))
        self.weight_hh = Parameter(_uniform((g, h), bound, rng, dtype))
        self.bias_ih = Parameter(_uniform((g,), bound, rng, dtype)) if bias else None
        self.bias_hh = Parameter(_uniform((g,), bound, rng, dtype)) if bias else None

    def project(self, x):
        out = matmul(x, transpose(self.weight_ih))
        return out if self.bias_ih is None else add(out, self.bias_ih)

    def _hidden_part(self, h):
        out = matmul(h, transpose(self.weight_hh))
        return out if self.bias_hh is None else add(out, self.bias_hh)


class ElmanCell(_GatedCell):
    """Elman cell (PyTorch ``RNNCell``): h' = a(W_ih x + b_ih + W_hh h + b_hh), a = tanh or relu.

    Shapes: x (B, D), h (B, H) -> (B, H).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> nn.ElmanCell(3, 4, rng=0)(np.ones((2, 3)), np.zeros((2, 4))).shape
        (2, 4)
    """

    def __init__(self, input_size: int, hidden_size: int, *, nonlinearity: str = "tanh", bias: bool = True,
                 rng=None, dtype=np.float64):
        if nonlinearity not in ("tanh", "relu"):
            raise AutogradDagError(f"ElmanCell: nonlinearity must be 'tanh' or 'relu'; got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias=bias, rng=rng, dtype=dtype)
        self.nonlinearity = nonlinearity

    def recur(self, px, z):
        u = add(px, self._hidden_part(z))
        return tanh(u) if self.nonlinearity == "tanh" else relu(u)


class GRUCell(_GatedCell):
    """Gated recurrent unit with PyTorch's equations (gates stacked r, z, n in the weights):

    r = σ(W_ir x + b_ir + W_hr h + b_hr),  z = σ(W_iz x + b_iz + W_hz h + b_hz),
    n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),  h' = (1 − z) ⊙ n + z ⊙ h.

    The reset gate multiplies W_hn h + b_hn, after the product (PyTorch's and
    cuDNN's form); Cho et al. (2014) reset h before it, tanh(W_in x + W_hn (r ⊙ h) + b):
    the two differ, and weights copied from a model of the other form give
    other outputs. z interpolates towards the old state (z = 1 keeps h).

    Shapes: x (B, D), h (B, H) -> (B, H); weight_ih (3H, D), weight_hh (3H, H).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> nn.GRUCell(3, 4, rng=0)(np.ones((2, 3)), np.zeros((2, 4))).shape
        (2, 4)
    """

    gates = 3

    def recur(self, px, z):
        H = self.hidden_size
        ph = self._hidden_part(z)
        rz = logistic(add(getitem(px, (Ellipsis, slice(0, 2 * H))), getitem(ph, (Ellipsis, slice(0, 2 * H)))))
        r, u = getitem(rz, (Ellipsis, slice(0, H))), getitem(rz, (Ellipsis, slice(H, 2 * H)))
        n = tanh(add(getitem(px, (Ellipsis, slice(2 * H, 3 * H))),
                     multiply(r, getitem(ph, (Ellipsis, slice(2 * H, 3 * H))))))
        return add(n, multiply(u, subtract(z, n)))  # (1 − z) n + z h, one product fewer


class LSTMCell(_GatedCell):
    """Long short-term memory with PyTorch's equations (gates stacked i, f, g, o in the weights):

    i = σ(W_ii x + b_ii + W_hi h + b_hi), f = σ(…f…), g = tanh(…g…), o = σ(…o…),
    c' = f ⊙ c + i ⊙ g,  h' = o ⊙ tanh(c').

    The state is the concatenation z = [h; c] of width 2H (one vector, as in the
    book), and :meth:`output` returns h. Shapes: x (B, D), z (B, 2H) -> (B, 2H).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> cell = nn.LSTMCell(3, 4, rng=0)
        >>> z = cell(np.ones((2, 3)), np.zeros((2, 8)))
        >>> z.shape, cell.output(z).shape
        ((2, 8), (2, 4))
    """

    gates = 4

    def __init__(self, input_size: int, hidden_size: int, *, bias: bool = True, rng=None, dtype=np.float64):
        super().__init__(input_size, hidden_size, bias=bias, rng=rng, dtype=dtype)
        self.state_size = 2 * self.hidden_size

    def output(self, z):
        return getitem(z, (Ellipsis, slice(0, self.hidden_size)))

    def recur(self, px, z):
        H = self.hidden_size
        h, c = getitem(z, (Ellipsis, slice(0, H))), getitem(z, (Ellipsis, slice(H, 2 * H)))
        gates = add(px, self._hidden_part(h))
        i_f = logistic(getitem(gates, (Ellipsis, slice(0, 2 * H))))
        g = tanh(getitem(gates, (Ellipsis, slice(2 * H, 3 * H))))
        o = logistic(getitem(gates, (Ellipsis, slice(3 * H, 4 * H))))
        c = add(multiply(getitem(i_f, (Ellipsis, slice(H, 2 * H))), c),
                multiply(getitem(i_f, (Ellipsis, slice(0, H))), g))
        return concatenate([multiply(o, tanh(c)), c], axis=-1)


_CELLS = {"mlp": MLPCell, "elman": ElmanCell, "rnn": ElmanCell, "tanh": ElmanCell, "gru": GRUCell,
          "lstm": LSTMCell}


def make_cell(kind, input_size: int, hidden_size: int, **kwargs) -> RecurrentCell:
    """A cell by name: 'mlp' (the book's), 'elman' (alias 'rnn', 'tanh'), 'gru' or 'lstm'.

    A :class:`RecurrentCell` instance is returned as it is. ``kwargs`` (``rng``,
    ``dtype``, ...) go to the constructor.
    Example: ``make_cell("gru", 3, 8, rng=0).weight_ih.shape == (24, 3)``.
    """
    if isinstance(kind, RecurrentCell):
        return kind
    try:
        cls = _CELLS[str(kind).lower()]
    except KeyError:
        raise AutogradDagError(f"make_cell: unknown cell {kind!r}; choose one of {sorted(_CELLS)} "
                               f"or pass a RecurrentCell") from None
    return cls(input_size, hidden_size, **kwargs)

# ---------------------------------------------------------------- unrolling


def _check_sequence(name: str, xs, features: int) -> tuple:
    shape = _shape(xs)
    if len(shape) != 3 or shape[-1] != features:
        raise ShapeError(f"{name}: Expect: a batch of sequences (batch, length, {features}). "
                         f"Actual: shape {shape}")
    if shape[1] < 1:
        raise ShapeError(f"{name}: Expect: sequences of length >= 1. Actual: shape {shape}")
    return shape


class RNN(Module):
    """A cell unrolled over a sequence from a learnable initial state z₀ (the recursion of §4.7.2).

    ``forward(xs)`` returns every step's output h_l = cell.output(z_l);
    :meth:`unroll` the states z_1..z_L. ``z0`` (state_size,) starts at zeros;
    pass ``z0=`` to start from another state (B, S).
    Shapes: xs (B, L, D) -> (B, L, H).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> rnn = nn.RNN(nn.LSTMCell(3, 4, rng=0))
        >>> rnn(np.ones((2, 5, 3))).shape
        (2, 5, 4)
    """

    def __init__(self, cell: RecurrentCell):
        super().__init__()
        if not isinstance(cell, RecurrentCell):
            raise AutogradDagError(f"RNN: expected a RecurrentCell (MLPCell, ElmanCell, GRUCell, LSTMCell); "
                                   f"got {type(cell).__name__}")
        self.cell = cell
        dtypes = [p.dtype for p in cell.parameters()]
        self.z0 = Parameter(np.zeros(cell.state_size, dtype=dtypes[0] if dtypes else np.float64))

    def initial_state(self, batch: int):
        """z₀ broadcast to the batch. Shapes: -> (batch, S)."""
        return broadcast_to(self.z0, (int(batch), self.cell.state_size))

    def unroll(self, xs, z0=None) -> list:
        """The states [z_1, ..., z_L], each (B, S), of z_l = g(x_l, z_{l-1})."""
        B, L, _ = _check_sequence(type(self).__name__, xs, self.cell.input_size)
        z = self.initial_state(B) if z0 is None else z0
        if _shape(z) != (B, self.cell.state_size):
            raise ShapeError(f"{type(self).__name__}: Expect: initial state ({B}, {self.cell.state_size}). "
                             f"Actual: shape {_shape(z)}")
        with name_scope("input_projection"):
            projected = self.cell.project(xs)
            steps = unstack(projected, axis=1)
        states = []
        for l, px in enumerate(steps):
            with name_scope(f"step{l}"):
                z = self.cell.recur(px, z)
            states.append(z)
        return states

    def outputs(self, states) -> list:
        """cell.output of each state: [h_1, ..., h_L], each (B, H)."""
        if self.cell.output.__func__ is RecurrentCell.output:
            return list(states)
        return [self.cell.output(z) for z in states]

    def forward(self, xs, z0=None):
        return stack(self.outputs(self.unroll(xs, z0)), axis=1)


def pool(hs, pooling: str):
    """Reduce the outputs h_1..h_L (a list of (B, H), or a (B, L, H) Tensor) to one vector per sample.

    'last': h_L; 'mean': (1/L) Σ h_l; 'max': coordinate-wise max_l h_l
    (ties share the gradient). Shapes: L × (B, H) -> (B, H).
    Example: ``pool([ad.Tensor([[1., 4.]]), ad.Tensor([[3., 2.]])], "max").value`` is ``[[3., 4.]]``.
    """
    if pooling not in POOLINGS:
        raise AutogradDagError(f"pool: pooling must be one of {POOLINGS}; got {pooling!r}")
    if isinstance(hs, (list, tuple)):
        if pooling == "last":
            return hs[-1]
        hs = stack(hs, axis=1)
    if pooling == "last":
        return getitem(hs, (slice(None), -1))
    return _mean(hs, axis=1) if pooling == "mean" else _max(hs, axis=1)

# ---------------------------------------------------------------- the setups


class SequenceToVector(Module):
    """Sequence to vector (§4.7.2): s_l = γ(x_l, s_{l-1}), p = head(pooling(h_{1:L})).

    ``pooling`` is 'last', 'mean' or 'max' (coordinate-wise), over all L steps:
    the sequences of a batch share their length (no padding mask); ``head`` (a
    module, e.g. ``Linear(H, classes)``, or None for the pooled vector itself)
    maps it to the output. :meth:`encode` returns the pooled vector.
    Shapes: xs (B, L, D) -> (B, M) (M = H without a head).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> enc = nn.SequenceToVector(nn.ElmanCell(3, 4, rng=0), pooling="max")
        >>> enc(np.ones((2, 5, 3))).shape
        (2, 4)
    """

    def __init__(self, cell: RecurrentCell, pooling: str = "last", head: Module | None = None):
        super().__init__()
        if pooling not in POOLINGS:
            raise AutogradDagError(f"SequenceToVector: pooling must be one of {POOLINGS}; got {pooling!r}")
        self.encoder = RNN(cell)
        self.pooling = pooling
        self.head = head

    def encode(self, xs):
        """pooling(h_{1:L}). Shapes: (B, L, D) -> (B, H)."""
        with name_scope("encoder"):
            states = self.encoder.unroll(xs)
        with name_scope("pooling"):
            return pool(self.encoder.outputs(states), self.pooling)

    def forward(self, xs):
        encoded = self.encode(xs)
        return encoded if self.head is None else self.head(encoded)

    def logits(self, xs):
        """The same as calling the model (for training loops that ask for logits)."""
        return self(xs)

    def extra_repr(self) -> str:
        return f"pooling={self.pooling!r}"


class SequenceToSequence(Module):
    """Aligned sequence to sequence (§4.7.3): s_l = γ(x_l, s_{l-1}), p_l = h(s_l), one output per input.

    ``head`` (applied to every h_l at once; None for the outputs themselves).
    Shapes: xs (B, L, D) -> (B, L, M).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> tagger = nn.SequenceToSequence(nn.GRUCell(3, 8, rng=0), head=nn.Linear(8, 5, rng=0))
        >>> tagger(np.ones((2, 6, 3))).shape
        (2, 6, 5)
    """

    def __init__(self, cell: RecurrentCell, head: Module | None = None):
        super().__init__()
        self.encoder = RNN(cell)
        self.head = head

    def forward(self, xs):
        hs = self.encoder(xs)
        return hs if self.head is None else self.head(hs)


class VectorToSequence(Module):
    """Vector to sequence (§4.7.1): z_l = g(x, z_{l-1}), p_l = h(z_l) for l = 1..L.

    The same input x enters every step (no feedback of p_{l-1}, as in the
    book's 4.7.1; :class:`EncoderDecoder` adds it). ``length`` is the default
    number of steps L; pass ``length=`` to the call to change it.
    Shapes: x (B, D) -> (B, L, M).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> gen = nn.VectorToSequence(nn.MLPCell(3, 4, rng=0), head=nn.Linear(4, 2, rng=0), length=6)
        >>> gen(np.ones((5, 3))).shape
        (5, 6, 2)
    """

    def __init__(self, cell: RecurrentCell, head: Module | None = None, length: int = 1):
        super().__init__()
        self.decoder = RNN(cell)
        self.head = head
        self.length = int(length)

    def forward(self, x, length: int | None = None):
        length = self.length if length is None else int(length)
        shape = _shape(x)
        if len(shape) != 2 or shape[-1] != self.decoder.cell.input_size:
            raise ShapeError(f"VectorToSequence: Expect: input vectors (batch, {self.decoder.cell.input_size}). "
                             f"Actual: shape {shape}")
        if length < 1:
            raise ShapeError(f"VectorToSequence: Expect: length >= 1. Actual: {length}")
        cell = self.decoder.cell
        with name_scope("decoder"):
            with name_scope("input_projection"):
                px = cell.project(x)  # the same input every step: projected once
            z = self.decoder.initial_state(shape[0])
            hs = []
            for l in range(length):
                with name_scope(f"step{l}"):
                    z = cell.recur(px, z)
                hs.append(z)
            hs = stack(self.decoder.outputs(hs), axis=1)
        return hs if self.head is None else self.head(hs)

    def extra_repr(self) -> str:
        return f"length={self.length}"


class EncoderDecoder(Module):
    """Unaligned sequence to sequence (§4.7.4): an encoder, a context, and a decoder fed its own outputs.

        s_l = γ(x_l, s_{l-1}),  c = pooling(h^enc_{1:L}),
        z_l = g([c; p_{l-1}], z_{l-1}),  logits_l = W h^dec_l + b  (l = 1..L').

    The output tokens 0..vocab_size−1 include ``eos``, which ends a generated
    sequence. p_{l-1} is the previous token as a one-hot vector (so the
    decoder's input weights act as an embedding). The seed leaves p₀ undefined
    and 4.7.1 omits this feedback: here p₀ is a learnable ``start`` vector
    (vocab_size,), used where the token is ``bos`` (= vocab_size, a marker
    outside the vocabulary). The decoder cell's input size must be
    H_enc + vocab_size.

    Training uses teacher forcing: :meth:`forward` (source, target) feeds the
    true previous target token, not the predicted one. Generation uses
    :meth:`start_state` and :meth:`step` with :mod:`autograd_dag.nn.decoding`
    (or :meth:`generate`). All targets of a batch share their length (end each
    with ``eos``; group sequences by length).
    Shapes: source (B, L, D), target (B, L') ints -> logits (B, L', vocab_size).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> model = nn.EncoderDecoder(nn.GRUCell(5, 8, rng=0), nn.GRUCell(8 + 4, 8, rng=1),
        ...                           vocab_size=4, eos=3, rng=2)
        >>> source = np.eye(5)[[[0, 1, 2]]]                    # (1, 3, 5): one sequence of 3 one-hots
        >>> model(source, np.array([[2, 1, 3]])).shape         # teacher forcing, target ends with eos
        (1, 3, 4)
        >>> out = model.generate(source[0], max_len=5)        # greedy; a list of ints, eos left out
        >>> len(out) <= 5 and all(0 <= t < 3 for t in out)
        True
    """

    def __init__(self, encoder_cell: RecurrentCell, decoder_cell: RecurrentCell, vocab_size: int, *,
                 eos: int, pooling: str = "last", rng=None):
        super().__init__()
        self.vocab_size = int(vocab_size)
        if not 0 <= int(eos) < self.vocab_size:
            raise AutogradDagError(f"EncoderDecoder: eos must be a token in [0, {self.vocab_size}); got {eos}")
        if pooling not in POOLINGS:
            raise AutogradDagError(f"EncoderDecoder: pooling must be one of {POOLINGS}; got {pooling!r}")
        need = encoder_cell.hidden_size + self.vocab_size
        if decoder_cell.input_size != need:
            raise ShapeError(f"EncoderDecoder: Expect: a decoder cell with input size H_enc + vocab_size = "
                             f"{encoder_cell.hidden_size} + {self.vocab_size} = {need} (context and previous "
                             f"token). Actual: input size {decoder_cell.input_size}")
        self.eos, self.bos, self.pooling = int(eos), self.vocab_size, pooling
        self.encoder = RNN(encoder_cell)
        self.decoder = RNN(decoder_cell)
        dtype = self.decoder.z0.dtype
        self.start = Parameter(np.zeros(self.vocab_size, dtype=dtype))
        self.head = Linear(decoder_cell.hidden_size, self.vocab_size, rng=rng, dtype=dtype)

    def context(self, source):
        """c = pooling of the encoder's outputs. Shapes: (B, L, D) -> (B, H_enc)."""
        with name_scope("encoder"):
            states = self.encoder.unroll(source)
            with name_scope("pooling"):
                return pool(self.encoder.outputs(states), self.pooling)

    def _previous(self, tokens, batch: int):
        """p_{l-1} for a step: the start vector, or one-hot tokens (B,) -> (B, vocab)."""
        if tokens is None:
            return broadcast_to(self.start, (batch, self.vocab_size))
        return one_hot(tokens, self.vocab_size, dtype=self.start.dtype)

    def forward(self, source, target):
        # Checked on this call's numbers; a Tensor target stays one (a jit input).
        value = np.asarray(target.value if isinstance(target, Tensor) else target)
        B = _check_sequence("EncoderDecoder", source, self.encoder.cell.input_size)[0]
        if value.ndim != 2 or value.shape[0] != B or value.dtype.kind not in "iu" or value.shape[1] < 1:
            raise ShapeError(f"EncoderDecoder: Expect: integer targets (batch={B}, length >= 1). "
                             f"Actual: shape {value.shape}, dtype {value.dtype}")
        if value.size and (value.min() < 0 or value.max() >= self.vocab_size):
            raise ShapeError(f"EncoderDecoder: Expect: target tokens in [0, {self.vocab_size}). Actual: "
                             f"values from {value.min()} to {value.max()}")
        if not isinstance(target, Tensor):
            target = value
        c = self.context(source)
        L = target.shape[1]
        with name_scope("decoder"):
            with name_scope("inputs"):
                start = broadcast_to(self.start, (B, 1, self.vocab_size))
                previous = start if L == 1 else concatenate(
                    [start, one_hot(target[:, :-1], self.vocab_size, dtype=self.start.dtype)], axis=1)
                context = broadcast_to(expand_dims(c, 1), (B, L, c.shape[-1]))
                inputs = concatenate([context, previous], axis=-1)
            hs = self.decoder.outputs(self.decoder.unroll(inputs))
            logits = self.head(stack(hs, axis=1))
        return logits

    def loss(self, source, target):
        """Teacher-forced cross-entropy, averaged over the batch and the L' target positions. Shapes: -> ()."""
        return F.cross_entropy(self(source, target), target)

    # ------------------------------------------------------- decoding interface

    def start_state(self, source=None):
        """The decoding state for one source sequence (L, D) (or (1, L, D)): (context, z₀), unrecorded."""
        if source is None:
            raise AutogradDagError("EncoderDecoder.start_state: a source sequence (L, D) is needed")
        source = np.asarray(source.value if isinstance(source, Tensor) else source)
        if source.ndim == 2:
            source = source[None]
        with no_grad():
            c = self.context(source)
            return c, self.decoder.initial_state(1)

    def step(self, state, token: int):
        """One decoder step: feed ``token`` (``bos`` for the start vector); returns (logits (vocab,), new state)."""
        c, z = state
        token = int(token)
        if token != self.bos and not 0 <= token < self.vocab_size:
            raise AutogradDagError(f"EncoderDecoder.step: token {token} is neither in [0, {self.vocab_size}) "
                                   f"nor bos={self.bos}")
        with no_grad():
            prev = self._previous(None if token == self.bos else np.array([token]), 1)
            z = self.decoder.cell(concatenate([c, prev], axis=-1), z)
            logits = self.head(self.decoder.cell.output(z))
        return np.asarray(logits.value[0]), (c, z)

    def generate(self, source, *, max_len: int, method: str = "greedy", **kwargs) -> list[int]:
        """Decode one source sequence (L, D): 'greedy', 'beam' (``width``, ``length_penalty``) or 'sample'.

        Returns the tokens without bos and without eos (see :mod:`.decoding`).
        """
        was_training = self.training
        self.eval()
        try:
            state = self.start_state(source)
            fn = {"greedy": decoding.greedy, "beam": decoding.beam_search, "sample": decoding.sample}.get(method)
            if fn is None:
                raise AutogradDagError(f"EncoderDecoder.generate: method must be 'greedy', 'beam' or 'sample'; "
                                       f"got {method!r}")
            return fn(self.step, state, bos=self.bos, eos=self.eos, max_len=max_len, **kwargs)
        finally:
            self.train(was_training)

    def extra_repr(self) -> str:
        return f"vocab_size={self.vocab_size}, eos={self.eos}, pooling={self.pooling!r}"
