"""GloVe (seed 003 §13.1): word vectors fitted to the logarithms of global co-occurrence counts.

Pennington et al. (2014) count X_ij, how often word j occurs within a window
around word i (each occurrence weighted 1/distance), and minimise

    J = Σ_{i,j: X_ij > 0} f(X_ij) (w_iᵀw̃_j + b_i + b̃_j − log X_ij)²,
    f(x) = min(1, (x / x_max)^α),  x_max = 100, α = 3/4.

Two notes on the seed's text. It names the weighting f but never defines it:
the definition above is the original paper's. And its "w_iᵀw_j = log p(i|j)"
drops the tilde: the model pairs a word vector w_i with a separate *context*
vector w̃_j, w_iᵀw̃_j + b_i + b̃_j ≈ log X_ij, and log p(i|j) differs from
log X_ij only by the term −log X_j, absorbed into the bias. Pairs with
X_ij = 0 are skipped (log 0 is undefined, and f(0) = 0 anyway). The word
vectors reported at the end are w + w̃, as in the paper.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..core import Tensor, concrete
from ..errors import AutogradDagError, ShapeError
from ..primitives.indexing import take
from ..primitives.structure import sum as _sum
from . import init as _init
from .embedding import Embedding, WordVectors, check_ids, vocabulary_words
from .module import Module, Parameter
from .word2vec import _check_window, _flatten

__all__ = ["Cooccurrence", "cooccurrence_counts", "glove_weighting", "glove_loss", "GloVe"]


class Cooccurrence(NamedTuple):
    """The nonzero co-occurrence counts X_ij as three aligned arrays, sorted by (i, j).

    Shapes: rows (P,) int64, cols (P,) int64, counts (P,) float64; ``size`` is V.
    """

    rows: np.ndarray
    cols: np.ndarray
    counts: np.ndarray
    size: int

    def dense(self) -> np.ndarray:
        """X as a (V, V) array (for small vocabularies)."""
        x = np.zeros((self.size, self.size))
        x[self.rows, self.cols] = self.counts
        return x


def cooccurrence_counts(sentences: Sequence, vocab_size: int, window: int = 10, distance_weighting: bool = True,
                        ignore: Sequence[int] = ()) -> Cooccurrence:
    """X_ij = Σ over occurrences of j within ``window`` words of i (same sentence) of 1/distance.

    Symmetric (j before or after i both count), as in the original GloVe.
    With ``distance_weighting=False`` every co-occurrence counts 1. Ids in
    ``ignore`` (e.g. padding or ``[UNK]``) neither count nor are counted.
    Shapes: sentences of ids in [0, V) -> :class:`Cooccurrence` of the P nonzero pairs.

    Example:
        >>> from autograd_dag import nn
        >>> x = nn.cooccurrence_counts([[0, 1, 2]], vocab_size=3, window=2)
        >>> x.dense().tolist()
        [[0.0, 1.0, 0.5], [1.0, 0.0, 1.0], [0.5, 1.0, 0.0]]
    """
    m = _check_window("cooccurrence_counts", window)
    ids, sentence = _flatten(sentences)
    check_ids("cooccurrence_counts", ids, vocab_size)
    ok = ~np.isin(ids, np.asarray(list(ignore), dtype=np.int64))
    keys, weights = [], []
    for d in range(1, m + 1):
        t = np.arange(len(ids) - d) if len(ids) > d else np.zeros(0, np.int64)
        t = t[(sentence[t] == sentence[t + d]) & ok[t] & ok[t + d]]
        w = 1.0 / d if distance_weighting else 1.0
        a, b = ids[t], ids[t + d]
        # Both directions: i before j and j before i.
        keys.extend([a * vocab_size + b, b * vocab_size + a])
        weights.extend([np.full(len(t), w), np.full(len(t), w)])
    if not keys:
        empty = np.zeros(0, np.int64)
        return Cooccurrence(empty, empty.copy(), np.zeros(0), int(vocab_size))
    keys_all, weights_all = np.concatenate(keys), np.concatenate(weights)
    unique, inverse = np.unique(keys_all, return_inverse=True)
    counts = np.bincount(inverse, weights=weights_all, minlength=len(unique))
    return Cooccurrence(unique // vocab_size, unique % vocab_size, counts, int(vocab_size))


def glove_weighting(x, x_max: float = 100.0, alpha: float = 0.75) -> np.ndarray:
    """f(x) = min(1, (x / x_max)^α): small counts weigh less, counts at or above x_max weigh 1.

    Shapes: (*s) -> (*s). Example: ``glove_weighting([25., 100., 400.]).round(4).tolist() == [0.3536, 1.0, 1.0]``.
    """
    x = np.asarray(x, dtype=np.float64)
    if x_max <= 0 or alpha < 0:
        raise AutogradDagError(f"glove_weighting: Expect: x_max > 0 and alpha >= 0. "
                               f"Actual: x_max={x_max}, alpha={alpha}")
    return np.minimum(1.0, (x / x_max) ** alpha)


def _pairs(cooc, size: int):
    """(rows, cols, counts) of the positive entries of a Cooccurrence, a triple, or a dense (V, V) matrix."""
    # Which pairs are positive decides the loss's terms: numbers, refused for a traced input.
    cooc = concrete(cooc, "glove_loss's choice of the positive co-occurrence pairs")
    if isinstance(cooc, Cooccurrence) or isinstance(cooc, tuple) and len(cooc) in (3, 4):
        rows, cols, counts = (np.asarray(a) for a in tuple(cooc)[:3])
        counts = counts.astype(np.float64)
        if not rows.shape == cols.shape == counts.shape or rows.ndim != 1:
            raise ShapeError(f"glove_loss: Expect: rows, cols and counts of one shape (P,). Actual: "
                             f"{rows.shape}, {cols.shape}, {counts.shape}")
    else:
        x = np.asarray(cooc, dtype=np.float64)
        if x.shape != (size, size):
            raise ShapeError(f"glove_loss: Expect: a dense co-occurrence matrix of shape ({size}, {size}) or "
                             f"(rows, cols, counts). Actual: shape {x.shape}")
        rows, cols = np.nonzero(x)
        counts = x[rows, cols]
    if np.any(counts < 0) or not np.all(np.isfinite(counts)):
        raise ShapeError("glove_loss: Expect: finite co-occurrence counts >= 0. Actual: a negative or "
                         "non-finite count")
    keep = counts > 0  # log 0 is undefined; f(0) = 0 would weigh the term out anyway
    return (check_ids("glove_loss", rows[keep], size), check_ids("glove_loss", cols[keep], size), counts[keep])


def glove_loss(w, w_tilde, b, b_tilde, cooc, x_max: float = 100.0, alpha: float = 0.75,
               reduction: str = "sum") -> Tensor:
    """J = Σ_{X_ij > 0} f(X_ij)(w_iᵀw̃_j + b_i + b̃_j − log X_ij)², zero counts skipped.

    ``cooc`` is a :class:`Cooccurrence` (or a (rows, cols, counts) triple, a
    minibatch of pairs) or a dense (V, V) matrix. ``reduction='mean'``
    divides by the number of pairs (for minibatches), ``'none'`` returns the
    terms. Shapes: w, w_tilde (V, d); b, b_tilde (V,) -> ().

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> z = np.zeros((2, 3))
        >>> x = np.array([[0., np.e], [100 * np.e, 0.]])  # f = (e/100)^0.75 and 1; zeros skipped
        >>> j = nn.glove_loss(z, z, np.zeros(2), np.zeros(2), x)
        >>> bool(np.isclose(j.value, (np.e / 100) ** 0.75 * 1 + 1 * np.log(100 * np.e) ** 2))
        True
    """
    size = np.shape(w.value if isinstance(w, Tensor) else w)[0]
    for name, t, shape in (("w", w, None), ("w_tilde", w_tilde, None), ("b", b, (size,)),
                           ("b_tilde", b_tilde, (size,))):
        got = tuple(np.shape(t.value if isinstance(t, Tensor) else t))
        want = shape or (size, np.shape(w.value if isinstance(w, Tensor) else w)[-1])
        if got != want:
            raise ShapeError(f"glove_loss: Expect: {name} of shape {want} (w is (V, d), b and b_tilde (V,)). "
                             f"Actual: {got}")
    rows, cols, counts = _pairs(cooc, size)
    # The data in the parameters' precision: a float32 model's loss and gradients stay float32.
    dtype = np.result_type(*(t.dtype if isinstance(t, Tensor) else np.asarray(t).dtype
                             for t in (w, w_tilde, b, b_tilde)))
    dtype = dtype if dtype.kind == "f" else np.dtype(np.float64)
    weights = glove_weighting(counts, x_max, alpha).astype(dtype)
    fit = (_sum(take(w, rows) * take(w_tilde, cols), axis=-1) + take(b, rows) + take(b_tilde, cols)
           - np.log(counts).astype(dtype))
    terms = fit * fit * weights
    if reduction == "sum":
        return _sum(terms)
    if reduction == "mean":
        return _sum(terms) * (1.0 / max(len(counts), 1))
    if reduction == "none":
        return terms
    raise AutogradDagError(f"glove_loss: reduction must be 'mean', 'sum' or 'none'; got {reduction!r}")


class GloVe(Module):
    """GloVe's parameters: word vectors w, context vectors w̃ and their biases b, b̃.

    ``vocab`` is a Vocabulary, a sequence of words, or the size V. Vectors
    start uniform in ±0.5/d and biases at zero, as in the reference code.
    Shapes: w, w̃ (V, d); b, b̃ (V,); :meth:`loss` -> ().

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> model = nn.GloVe(["x", "y", "z"], 4, rng=0)
        >>> j = model.loss(nn.cooccurrence_counts([[0, 1, 2, 0]], 3, window=2))
        >>> j.backward()
        >>> model.b.grad.shape, model.word_vectors().vectors.shape
        ((3,), (3, 4))
    """

    def __init__(self, vocab, dim: int, *, x_max: float = 100.0, alpha: float = 0.75, rng=None,
                 dtype=np.float64):
        super().__init__()
        self.words = vocabulary_words(vocab)
        size = len(self.words) if self.words is not None else vocab
        gen = _init.as_generator(rng)
        self.w = Embedding(size, dim, std=0.0, dtype=dtype)
        self.w_tilde = Embedding(size, dim, std=0.0, dtype=dtype)
        d = self.w.embedding_dim
        self.w.weight.value[...] = gen.uniform(-0.5 / d, 0.5 / d, (size, d))
        self.w_tilde.weight.value[...] = gen.uniform(-0.5 / d, 0.5 / d, (size, d))
        self.b = Parameter(np.zeros(size, dtype=dtype))
        self.b_tilde = Parameter(np.zeros(size, dtype=dtype))
        glove_weighting(1.0, x_max, alpha)  # validates x_max and alpha now rather than at the first loss
        self.x_max, self.alpha = float(x_max), float(alpha)

    def loss(self, cooc, reduction: str = "sum") -> Tensor:
        """J over the pairs of ``cooc`` (all of X, or a minibatch of (rows, cols, counts))."""
        return glove_loss(self.w.weight, self.w_tilde.weight, self.b, self.b_tilde, cooc, self.x_max,
                          self.alpha, reduction)

    def forward(self, cooc, reduction: str = "sum") -> Tensor:
        return self.loss(cooc, reduction)

    def vectors(self) -> np.ndarray:
        """w + w̃, the paper's final word vectors. Shapes: (V, d)."""
        return self.w.weight.value + self.w_tilde.weight.value

    def word_vectors(self) -> WordVectors:
        """The vectors w + w̃ with the words, for :meth:`WordVectors.most_similar` and analogies."""
        if self.words is None:
            raise AutogradDagError("GloVe: built from a vocabulary size, so it has no words; pass a "
                                   "Vocabulary or a list of words")
        return WordVectors(self.vectors(), self.words)

    def most_similar(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The k words whose vectors w + w̃ are closest to ``word``'s by cosine similarity."""
        return self.word_vectors().most_similar(word, k)

    def analogy(self, a: str, b: str, c: str, k: int = 1) -> list[tuple[str, float]]:
        """The k words closest to a − b + c."""
        return self.word_vectors().analogy(a, b, c, k)

    def extra_repr(self) -> str:
        return f"{self.w.num_embeddings}, {self.w.embedding_dim}, x_max={self.x_max}, alpha={self.alpha}"
