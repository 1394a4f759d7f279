"""Embedding tables: rows looked up by integer ids, and trained word vectors queried by cosine similarity.

A lookup is ``ad.take(weight, ids)``, whose VJP is ``take_add``: the gradient
of the table adds each looked-up row's cotangent into that row (repeated ids
accumulate), never a dense one-hot matrix product.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core import Tensor
from ..errors import AutogradDagError, ShapeError
from ..primitives.elementwise import equal, stop_gradient, where
from ..primitives.indexing import checked_indices, take
from ..primitives.structure import reshape
from . import init as _init
from .module import Module, Parameter

__all__ = ["Embedding", "WordVectors", "check_ids", "vocabulary_words"]


def check_ids(name: str, ids, size: int):
    """``ids`` as an int64 array after checking they are integers in [0, size); else ShapeError naming ``name``.

    An integer Tensor is checked and returned as it is: inside ``jit`` it is an
    input of the program, whose numbers change from call to call (the checks
    see the traced call's).
    Shapes: any -> the same shape. Example: ``check_ids("Embedding(5, 2)", [1, 4], 5).dtype == np.int64``.
    """
    arr = np.asarray(ids.value if isinstance(ids, Tensor) else ids)
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise ShapeError(f"{name}: Expect: integer ids. Actual: dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= size:
            bad = lo if lo < 0 else hi
            raise ShapeError(f"{name}: id {bad} is out of range. Expect: ids in [0, {size}). "
                             f"Actual: ids in [{lo}, {hi}]")
    if isinstance(ids, Tensor) and arr.dtype.kind in "iu":
        # A Tensor's numbers may change from call to call (a jit input): checked on every run too.
        return checked_indices(ids, size, name, f"{size} ids")
    return arr


class Embedding(Module):
    """A table of ``num_embeddings`` learned vectors of size ``embedding_dim``, looked up by id.

    ``weight`` has shape (num_embeddings, embedding_dim), initialised N(0, σ²)
    with σ = ``std`` (1 by default, as in PyTorch). With ``padding_idx``, that
    row starts at zero and positions holding it output the row and send it no
    gradient, so ``[PAD]`` does not learn from its lookups (as PyTorch's: a
    padding row loaded or tied to a trained output matrix is output as it is). Ids must be integers in
    [0, num_embeddings): negative ids are refused rather than counted from the
    end, since a −1 id is nearly always a bug in the data.

    Shapes: ids (*s) ints -> (*s, embedding_dim).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> emb = nn.Embedding(10, 4, padding_idx=0, rng=0)
        >>> out = emb(np.array([[3, 0], [3, 9]]))
        >>> out.shape, float(abs(out.value[0, 1]).sum())
        ((2, 2, 4), 0.0)
        >>> out.sum().backward()
        >>> emb.weight.grad.value[3].tolist()  # id 3 was looked up twice
        [2.0, 2.0, 2.0, 2.0]
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None, *,
                 std: float = 1.0, rng=None, dtype=np.float64):
        super().__init__()
        for what, v in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise AutogradDagError(f"Embedding: Expect: {what} a positive integer. Actual: {v!r}")
        self.num_embeddings = int(num_embeddings)
        self.embedding_dim = int(embedding_dim)
        if padding_idx is not None and not 0 <= padding_idx < self.num_embeddings:
            raise AutogradDagError(f"Embedding: Expect: padding_idx in [0, {self.num_embeddings}). "
                                   f"Actual: {padding_idx}")
        self.padding_idx = padding_idx
        table = _init.as_generator(rng).normal(0.0, std, (self.num_embeddings, self.embedding_dim))
        if padding_idx is not None:
            table[padding_idx] = 0.0
        self.weight = Parameter(table.astype(dtype))

    def forward(self, ids) -> Tensor:
        ids = check_ids(f"Embedding({self.num_embeddings}, {self.embedding_dim})", ids, self.num_embeddings)
        out = take(self.weight, ids, axis=0)
        if self.padding_idx is None:
            return out
        # As PyTorch: the padding row's value is looked up (zero unless loaded or tied
        # weights changed it), its gradient stopped. Before, the output was multiplied by a
        # 0/1 mask: a nonzero padding row (a loaded table, a tied output matrix) gave zeros.
        # Tensor ids may be a jit input, whose padding changes from call to call: always masked.
        if isinstance(ids, Tensor):
            pad = reshape(equal(ids, np.asarray(self.padding_idx, ids.dtype)), tuple(ids.shape) + (1,))
            return where(pad, stop_gradient(out), out)
        if np.any(ids == self.padding_idx):
            out = where((ids == self.padding_idx)[..., None], stop_gradient(out), out)
        return out

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


def vocabulary_words(vocab) -> list[str] | None:
    """The words of ``vocab`` by id: from a Vocabulary (its ``tokens``), a sequence of strings, or None for an int.

    Example: ``vocabulary_words(["a", "b"]) == ['a', 'b']``.
    """
    if vocab is None or isinstance(vocab, (int, np.integer)):
        return None
    expect = "vocabulary: Expect: a Vocabulary, a sequence of words, or a size. Actual: "
    try:
        words = list(getattr(vocab, "tokens", vocab))
    except TypeError:
        raise AutogradDagError(f"{expect}{type(vocab).__name__} {vocab!r}") from None
    bad = [w for w in words if not isinstance(w, str)]
    if bad:
        raise AutogradDagError(f"{expect}a {type(vocab).__name__} holding {type(bad[0]).__name__} {bad[0]!r}")
    return words


class WordVectors:
    """Trained word vectors with cosine-similarity queries: neighbours and analogies.

    ``vectors`` has shape (V, d), row i the vector of ``words[i]``. Rows of
    zero length (special tokens such as ``[PAD]`` that never trained) and
    words starting with ``[`` are never returned as answers.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.nn import WordVectors
        >>> wv = WordVectors(np.array([[1., 0], [.9, .1], [0, 1], [-1, 0]]), ["cat", "dog", "car", "tac"])
        >>> [w for w, _ in wv.most_similar("cat", k=2)]
        ['dog', 'car']
        >>> wv.analogy("dog", "cat", "tac", k=1)[0][0]  # dog − cat + tac
        'car'
    """

    def __init__(self, vectors, words: Sequence[str]):
        self.vectors = np.asarray(vectors.value if isinstance(vectors, Tensor) else vectors, dtype=np.float64)
        self.words = list(words)
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.words):
            raise ShapeError(f"WordVectors: Expect: vectors of shape ({len(self.words)}, d), one row per word. "
                             f"Actual: {self.vectors.shape}")
        self.index = {w: i for i, w in enumerate(self.words)}
        norms = np.linalg.norm(self.vectors, axis=1, keepdims=True)
        self._unit = np.divide(self.vectors, norms, out=np.zeros_like(self.vectors), where=norms > 0)
        self._answerable = (norms[:, 0] > 0) & np.array([not w.startswith("[") for w in self.words], dtype=bool)

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word) -> bool:
        return word in self.index

    def __getitem__(self, word: str) -> np.ndarray:
        """The vector of ``word``, shape (d,)."""
        return self.vectors[self._id(word)]

    def _id(self, word: str) -> int:
        try:
            return self.index[word]
        except KeyError:
            raise AutogradDagError(f"WordVectors: the word {word!r} is not in the vocabulary "
                                   f"({len(self.words)} words)") from None

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two words' vectors, in [−1, 1]."""
        return float(self._unit[self._id(a)] @ self._unit[self._id(b)])

    def nearest(self, query: np.ndarray, k: int = 10, exclude: Sequence[str] = ()) -> list[tuple[str, float]]:
        """The k words whose vectors have the largest cosine similarity to ``query`` (shape (d,))."""
        query = np.asarray(query, dtype=np.float64)
        if query.shape != (self.vectors.shape[1],):
            raise ShapeError(f"WordVectors.nearest: Expect: a query of shape ({self.vectors.shape[1]},). "
                             f"Actual: {query.shape}")
        n = np.linalg.norm(query)
        scores = self._unit @ (query / n if n > 0 else query)
        allowed = self._answerable.copy()
        for w in exclude:
            allowed[self._id(w)] = False
        scores = np.where(allowed, scores, -np.inf)
        k = int(min(k, allowed.sum()))
        if k == 0:
            return []
        # argpartition finds the k-th best score, O(V); every word that ties with it competes,
        # then a sort by (score, id) keeps k: ties broken by id, also at the cut (argpartition
        # alone would keep whichever tied words it happened to place first).
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        top = np.flatnonzero(scores >= kth)
        top = top[np.lexsort((top, -scores[top]))][:k]
        return [(self.words[i], float(scores[i])) for i in top]

    def most_similar(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The k nearest other words to ``word`` by cosine similarity, as (word, similarity), best first."""
        return self.nearest(self._unit[self._id(word)], k, exclude=(word,))

    def analogy(self, a: str, b: str, c: str, k: int = 1) -> list[tuple[str, float]]:
        """The words nearest to a − b + c ("king − man + woman ≈ queen"), a, b and c themselves excluded.

        The three vectors are normalised first (3CosAdd of Mikolov et al.), so
        a frequent word's long vector does not dominate.
        """
        query = self._unit[self._id(a)] - self._unit[self._id(b)] + self._unit[self._id(c)]
        return self.nearest(query, k, exclude=(a, b, c))

    def __repr__(self) -> str:
        return f"WordVectors({len(self.words)} words, dim {self.vectors.shape[1]})"
