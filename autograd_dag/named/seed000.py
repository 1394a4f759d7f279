"""Seed 000 line by line: the Transformer language model and LeNet in named-tensor notation.

Each line of :meth:`TransformerLM.__call__`, :meth:`LeNet.__call__` and the
functions they call is one equation of seed 000 (``examples_long.tex``,
§Transformer and §LeNet), with the equation in a comment beside it. The
models are equal, to rounding, to the positional ones in :mod:`autograd_dag.nn`
with the same parameters (:meth:`TransformerLM.from_positional`,
:meth:`LeNet.from_positional`; tested to 1e-12).

Corrections of the seed, as the positional models make them:

* FFN: b^{l,2} ∈ ℝ^layer (the seed prints ℝ^hidden; it is added to a vector over layer).
* LayerNorm: ε = 1e-5 under the square root of standardize (the seed leaves ε out).
* SelfAtt divides the scores by √|key| (the seed's Attention, defined in §attention of the paper).
* MaxPool^l = MaxPool2d_{ph^l, ph^l}: square windows of side ph^l (``pools``).

Axis names: ``seq``, ``seq'``, ``vocab``, ``layer``, ``heads``, ``key``, ``val``,
``hidden`` (Transformer); ``batch``, ``chans``, ``chans'``, ``height``,
``width``, ``kh``, ``kw``, ``layer``, ``hidden``, ``classes`` (LeNet).
"""

from __future__ import annotations

import math

import numpy as np

from ..core import name_scope, no_grad
from ..errors import ShapeError
from .tensor import (NamedTensor, conv2d, cos, max_pool2d, ndot, relu, sin, softmax, split, standardize,
                     where)

__all__ = ["TransformerLM", "LeNet", "one_hot", "positional_encoding", "causal_mask", "attention"]


# The seed's flattening order: (height, width, chans) → layer.
HWC = ("height", "width", "chans")


def one_hot(tokens, vocab: int) -> NamedTensor:
    """I ∈ {0, 1}^{seq × vocab} (Σ_vocab I = 1) from token indices; a leading batch axis becomes ``batch``.

    Shapes: tokens (L,) -> seq:L × vocab; (B, L) -> batch:B × seq:L × vocab.
    Example: ``one_hot(np.array([2, 0]), 3).value`` is ``[[0, 0, 1], [1, 0, 0]]`` (as floats).
    """
    tokens = np.asarray(tokens)
    if tokens.dtype.kind not in "iu" or tokens.ndim not in (1, 2):
        raise ShapeError(f"one_hot: Expect: integer tokens of shape (L,) or (B, L). Actual: dtype {tokens.dtype}, "
                         f"shape {tokens.shape}")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab):
        # numpy's indexing would read −1 as the last row: a silent one-hot of another token.
        bad = int(tokens.min() if tokens.min() < 0 else tokens.max())
        raise ShapeError(f"one_hot: token {bad} is out of range. Expect: tokens in [0, {vocab}). "
                         f"Actual: tokens in [{int(tokens.min())}, {int(tokens.max())}]")
    names = ("seq", "vocab") if tokens.ndim == 1 else ("batch", "seq", "vocab")
    return NamedTensor(np.eye(vocab)[tokens], names, name="I")


def positional_encoding(seq: int, layer: int) -> NamedTensor:
    """P ∈ ℝ^{seq × layer}, seed 000's formula written with named tensors (1-indexed p and i).

    Computed without recording: P is a constant of the program.
    Example: ``positional_encoding(2, 4).align("seq", "layer").value[1].round(4)`` is ``[0.8415, 0.5403, 0.01, 1.]``.
    """
    with no_grad():
        p = NamedTensor(np.arange(1.0, seq + 1.0), "seq")
        i = NamedTensor(np.arange(1.0, layer + 1.0), "layer")
        odd = NamedTensor(np.arange(1, layer + 1) % 2 == 1, "layer")
        # P_{seq(p), layer(i)} = sin((p−1)/10000^{(i−1)/|layer|}) if i is odd,
        #                        cos((p−1)/10000^{(i−2)/|layer|}) if i is even
        P = where(odd, sin((p - 1) / 10000.0 ** ((i - 1) / layer)), cos((p - 1) / 10000.0 ** ((i - 2) / layer)))
    P.name = "P"
    return P


def causal_mask(seq: int) -> NamedTensor:
    """M ∈ ℝ^{seq × seq'}: M_{seq(i), seq'(j)} = 0 if i ≤ j, −∞ otherwise (key i, query j); a constant.

    Example: ``causal_mask(2).align("seq'", "seq").value`` is ``[[0, -inf], [0, 0]]``.
    """
    with no_grad():
        i = NamedTensor(np.arange(seq), "seq")
        j = NamedTensor(np.arange(seq), "seq'")
        M = where(i <= j, 0.0, -np.inf)                      # M_{seq(i), seq'(j)} = 0 if i ≤ j else −∞
    M.name = "M"
    return M


def attention(Q, K, V, M) -> NamedTensor:
    """Attention(Q, K, V, M) = softmax_seq((Q ⊙_key K)/√|key| + M) ⊙_seq V.

    Shapes: Q (heads, seq', key), K (heads, seq, key), V (heads, seq, val), M (seq, seq')
    -> (heads, seq', val) (any other axes, such as batch, are carried along).
    """
    return ndot(softmax(ndot(Q, K, "key") / math.sqrt(K.size("key")) + M, "seq"), V, "seq")


def _named(t, names) -> NamedTensor:
    return NamedTensor(t, names)


class TransformerLM:
    """Seed 000's Transformer language model in named form: one line per equation.

    ``params`` maps seed names to NamedTensors: ``E`` (vocab × layer) and, per
    block l (0-indexed here), ``WQ``, ``WK`` (heads × layer × key), ``WV``
    (heads × layer × val), ``WO`` (heads × val × layer), ``W1`` (hidden ×
    layer), ``b1`` (hidden), ``W2`` (layer × hidden), ``b2`` (layer),
    ``gamma``, ``beta``, ``gamma'``, ``beta'`` (layer), under keys ``"l.WQ"``...
    Input: I, one-hot rows (seq × vocab, optionally batch); output O
    (vocab × seq [× batch]), a distribution over vocab per position.
    Shapes: I (batch, seq, vocab) -> O (batch, seq, vocab), by name.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> from autograd_dag.named import seed000
        >>> lm = nn.TransformerLM(vocab_size=7, d_model=8, heads=2, hidden=16, layers=2, rng=0)
        >>> named_lm = seed000.TransformerLM.from_positional(lm)
        >>> O = named_lm(seed000.one_hot(np.array([[1, 2, 3]]), 7))
        >>> bool(np.allclose(O.align("batch", "seq", "vocab").value, lm(np.array([[1, 2, 3]])).value, atol=1e-12))
        True
    """

    def __init__(self, params: dict, layers: int, eps: float = 1e-5):
        self.params = dict(params)
        self.layers = int(layers)
        self.eps = float(eps)

    @classmethod
    def from_positional(cls, model) -> "TransformerLM":
        """The named model sharing ``model``'s Parameters (nn.TransformerLM): gradients reach them.

        Every positional layout already lists the seed's axes in order, so
        each parameter is the same Tensor with names put on it.
        """
        p = {"E": _named(model.E, "vocab layer")}
        for l, block in enumerate(model.block):
            att, ffn = block.attention, block.ffn
            if att.b_O is not None:
                raise ShapeError("seed000.TransformerLM: Expect: attention without biases (seed 000). "
                                 "Actual: bias=True")
            p.update({f"{l}.WQ": _named(att.W_Q, "heads layer key"), f"{l}.WK": _named(att.W_K, "heads layer key"),
                      f"{l}.WV": _named(att.W_V, "heads layer val"), f"{l}.WO": _named(att.W_O, "heads val layer"),
                      f"{l}.W1": _named(ffn.W1, "hidden layer"), f"{l}.b1": _named(ffn.b1, "hidden"),
                      f"{l}.W2": _named(ffn.W2, "layer hidden"), f"{l}.b2": _named(ffn.b2, "layer"),
                      f"{l}.gamma": _named(block.norm1.gamma, "layer"),
                      f"{l}.beta": _named(block.norm1.beta, "layer"),
                      f"{l}.gamma'": _named(block.norm2.gamma, "layer"),
                      f"{l}.beta'": _named(block.norm2.beta, "layer")})
        return cls(p, len(model.block), block.norm1.eps if model.block else 1e-5)

    def layer_norm(self, l: int, prime: str, X) -> NamedTensor:
        """LayerNorm^l (``prime=""``) or LayerNorm^{l'} (``prime="'"``). Shapes: X -> X."""
        gamma, beta = self.params[f"{l}.gamma{prime}"], self.params[f"{l}.beta{prime}"]
        with name_scope("norm2" if prime else "norm1"):
            return standardize(X, "layer", self.eps) * gamma + beta  # LayerNorm(X) = standardize_layer(X) ⊙ γ + β

    def self_att(self, l: int, X) -> NamedTensor:
        """SelfAtt^l. Shapes: X (seq, layer) -> (seq, layer), other axes carried along."""
        with name_scope("attention"):
            return self._self_att(l, X)

    def _self_att(self, l: int, X) -> NamedTensor:
        p = self.params
        Q = ndot(p[f"{l}.WQ"], X.rename({"seq": "seq'"}), "layer")  # Q = W^{l,Q} ⊙_layer X_{seq→seq'}
        K = ndot(p[f"{l}.WK"], X, "layer")                          # K = W^{l,K} ⊙_layer X
        V = ndot(p[f"{l}.WV"], X, "layer")                          # V = W^{l,V} ⊙_layer X
        M = causal_mask(X.size("seq"))                              # M_{seq(i), seq'(j)} = 0 if i ≤ j else −∞
        A = attention(Q, K, V, M).rename({"seq'": "seq"})           # Attention(Q, K, V, M)_{seq'→seq}
        return ndot(p[f"{l}.WO"], A, ("heads", "val"))              # Y = W^{l,O} ⊙_{heads, val} Attention(...)

    def ffn(self, l: int, X) -> NamedTensor:
        """FFN^l. Shapes: X (layer) -> (layer), other axes carried along."""
        p = self.params
        with name_scope("ffn"):
            X1 = relu(ndot(p[f"{l}.W1"], X, "layer") + p[f"{l}.b1"])  # X¹ = relu(W^{l,1} ⊙_layer X + b^{l,1})
            return ndot(p[f"{l}.W2"], X1, "hidden") + p[f"{l}.b2"]    # X² = W^{l,2} ⊙_hidden X¹ + b^{l,2}

    def hidden_states(self, I) -> NamedTensor:
        """X^L. Shapes: I (batch, seq, vocab) -> (batch, seq, layer), by name."""
        E = self.params["E"]
        with name_scope("embedding"):
            W = ndot(E, I, "vocab") * math.sqrt(E.size("layer"))    # W = (E ⊙_vocab I) √|layer|
            P = positional_encoding(I.size("seq"), E.size("layer")) # P ∈ ℝ^{seq × layer}
            X = W + P                                               # X⁰ = W + P
        for l in range(self.layers):
            X = self.block(l, X)
        return X

    def block(self, l: int, X) -> NamedTensor:
        """Block l: X^{l−1} -> X^l. Shapes: X (seq, layer) -> (seq, layer), other axes carried along."""
        with name_scope(f"block.{l}"):
            T = self.layer_norm(l, "", self.self_att(l, X) + X)  # T^l = LayerNorm^l(SelfAtt^l(X^{l−1}) + X^{l−1})
            return self.layer_norm(l, "'", self.ffn(l, T) + T)   # X^l = LayerNorm^{l'}(FFN^l(T^l) + T^l)

    def logits(self, I) -> NamedTensor:
        """E ⊙_layer X^L, the scores before the softmax. Shapes: I -> (batch, seq, vocab), by name."""
        X = self.hidden_states(I)
        with name_scope("logits"):
            return ndot(self.params["E"], X, "layer")               # E ⊙_layer X^L

    def __call__(self, I) -> NamedTensor:
        return softmax(self.logits(I), "vocab")                     # O = softmax_vocab(E ⊙_layer X^L)


class LeNet:
    """Seed 000's LeNet in named form: one line per equation.

    ``params``: ``W1`` (chans' × chans × kh × kw), ``b1`` (chans'), ``W2``,
    ``b2`` likewise, ``W3`` (hidden × layer, layer = (height, width, chans)
    flattened) or, with ``flatten=False``, the seed's alternative ``W3``
    (hidden × height × width × chans), ``b3`` (hidden), ``W4`` (classes ×
    hidden), ``b4`` (classes); ``pools`` = (ph¹, ph²).
    Shapes: X⁰ (batch, chans, height, width) -> O (batch, classes), by name.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> from autograd_dag.named import NamedTensor, seed000
        >>> net = nn.LeNet(image_size=12, channels=(2, 3), kernel_sizes=(3, 3), hidden=5, rng=0)
        >>> x = np.random.default_rng(0).normal(size=(2, 1, 12, 12))
        >>> O = seed000.LeNet.from_positional(net)(NamedTensor(x, "batch chans height width"))
        >>> bool(np.allclose(O.align("batch", "classes").value, net.predict_proba(x).value, atol=1e-12))
        True
    """

    def __init__(self, params: dict, pools=(2, 2), flatten: bool = True):
        self.params = dict(params)
        self.pools = tuple(int(p) for p in pools)
        self.flatten = bool(flatten)

    @classmethod
    def from_positional(cls, model, flatten: bool = True) -> "LeNet":
        """The named model with ``model``'s parameter values (nn.LeNet, square pools).

        The convolutions and the classifier share ``model``'s Parameters.
        nn.LeNet flattens (chans, height, width); the seed flattens (height,
        width, chans): W³ is re-laid by name (split, then flattened in the
        seed's order), a new leaf holding the same numbers. With
        ``flatten=False`` it is the seed's W³ ∈ hidden × height × width × chans.
        """
        c2 = model.conv2.out_channels
        hw = model.image_size
        for layer in (model.conv1, model.pool1, model.conv2, model.pool2):
            hw = layer.output_size(hw)
        h, w = hw
        with no_grad():
            W3 = split(NamedTensor(model.fc3.weight.value, "hidden layer"), "layer",
                       {"chans": c2, "height": h, "width": w})
            if flatten:
                W3 = W3.flatten(HWC, "layer")
        W3 = NamedTensor(W3.value, W3.names, requires_grad=True, name="W3")
        p = {"W1": _named(model.conv1.weight, "chans' chans kh kw"), "b1": _named(model.conv1.bias, "chans'"),
             "W2": _named(model.conv2.weight, "chans' chans kh kw"), "b2": _named(model.conv2.bias, "chans'"),
             "W3": W3, "b3": _named(model.fc3.bias, "hidden"),
             "W4": _named(model.fc4.weight, "classes hidden"), "b4": _named(model.fc4.bias, "classes")}
        return cls(p, (model.pool1.window[0], model.pool2.window[0]), flatten)

    def conv(self, l: int, X) -> NamedTensor:
        W, b = self.params[f"W{l}"], self.params[f"b{l}"]
        return conv2d(X, W, b).rename({"chans'": "chans"})          # Conv^l(X) = Conv2d(X; W^l, b^l)_{chans'→chans}

    def max_pool(self, l: int, X) -> NamedTensor:
        ph = self.pools[l - 1]
        return max_pool2d(X, ph, ph)                                # MaxPool^l(X) = MaxPool2d_{ph^l, ph^l}(X)

    def logits(self, X0) -> NamedTensor:
        """W⁴ ⊙_hidden X³ + b⁴. Shapes: X⁰ (batch, chans, height, width) -> (batch, classes), by name."""
        p = self.params
        T1 = relu(self.conv(1, X0))                                 # T¹ = relu(Conv¹(X⁰))
        X1 = self.max_pool(1, T1)                                   # X¹ = MaxPool¹(T¹)
        T2 = relu(self.conv(2, X1))                                 # T² = relu(Conv²(X¹))
        if self.flatten:
            X2 = self.max_pool(2, T2).flatten(HWC, "layer")         # X² = MaxPool²(T²)_{(height,width,chans)→layer}
            X3 = relu(ndot(p["W3"], X2, "layer") + p["b3"])         # X³ = relu(W³ ⊙_layer X² + b³)
        else:
            X2 = self.max_pool(2, T2)                               # X² = MaxPool²(T²)
            X3 = relu(ndot(p["W3"], X2, HWC) + p["b3"])             # X³ = relu(W³ ⊙_{height,width,chans} X² + b³)
        return ndot(p["W4"], X3, "hidden") + p["b4"]

    def __call__(self, X0) -> NamedTensor:
        return softmax(self.logits(X0), "classes")                  # O = softmax_classes(W⁴ ⊙_hidden X³ + b⁴)
