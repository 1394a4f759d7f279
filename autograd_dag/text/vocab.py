"""A vocabulary: tokens ↔ integer ids, with special tokens and frequency cut-offs.

Ids are assigned deterministically: the special tokens first (``[PAD]`` is
id 0, so zero-filled id arrays are padding), then the kept tokens by
decreasing count, ties broken alphabetically, so the same text always gives
the same ids.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

import numpy as np

from ..errors import TextError

__all__ = ["PAD", "UNK", "CLS", "SEP", "MASK", "EOS", "SPECIAL_TOKENS", "Vocabulary", "TextError"]

PAD, UNK, CLS, SEP, MASK, EOS = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[EOS]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK, EOS)


class Vocabulary:
    """Tokens and their ids, their corpus counts, and the special tokens.

    ``tokens[i]`` is the token of id i; ``counts[i]`` how often id i occurs in
    the text the vocabulary was built from, once encoded: ``[UNK]`` counts the
    tokens cut by ``min_count`` or ``max_size`` (they encode to it), the other
    special tokens count only where the text spells them. Unknown tokens
    encode to the id of ``[UNK]``.

    Shapes: :meth:`encode` takes a sequence of n tokens and returns int64 ids
    of shape (n,); :meth:`decode` takes ids of any shape (flattened) and
    returns a list of tokens.

    Example:
        >>> from autograd_dag.text import Vocabulary
        >>> v = Vocabulary.build([["a", "rose", "is", "a", "rose"], ["is", "it"]], min_count=2)
        >>> v.tokens[6:]
        ['a', 'is', 'rose']
        >>> v.encode(["a", "tulip"]).tolist(), v.decode([8, 1])
        ([6, 1], ['rose', '[UNK]'])
    """

    def __init__(self, tokens: Sequence[str], counts: Sequence[int] | None = None,
                 specials: Sequence[str] = SPECIAL_TOKENS):
        self.tokens: list[str] = [str(t) for t in tokens]
        self.specials: tuple[str, ...] = tuple(specials)
        if counts is None:
            counts = [0] * len(self.tokens)
        self.counts = np.asarray(counts, dtype=np.int64)
        if self.counts.shape != (len(self.tokens),):
            raise TextError(f"Vocabulary: Expect: one count per token ({len(self.tokens)}). "
                            f"Actual: {self.counts.shape[0] if self.counts.ndim else 'a scalar'}")
        self._ids: dict[str, int] = {}
        for i, t in enumerate(self.tokens):
            if t in self._ids:
                raise TextError(f"Vocabulary: token {t!r} appears twice (ids {self._ids[t]} and {i})")
            self._ids[t] = i
        missing = [s for s in self.specials if s not in self._ids]
        if missing:
            raise TextError(f"Vocabulary: the special tokens {missing} are not among the tokens")

    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]], min_count: int = 1, max_size: int | None = None,
              specials: Sequence[str] = SPECIAL_TOKENS) -> "Vocabulary":
        """The vocabulary of tokenized sentences, keeping tokens seen at least ``min_count`` times.

        ``max_size`` caps the number of ids (special tokens included) by keeping
        the most frequent tokens. A token spelled like a special token is
        counted as that special token, and the tokens cut off are counted as
        ``[UNK]``, which they encode to: ``counts`` are the frequencies of the
        encoded text, as subsampling and negative sampling need them.
        Example: ``Vocabulary.build([["x", "y", "x"]]).tokens[-2:] == ['x', 'y']``.
        """
        if isinstance(min_count, bool) or not isinstance(min_count, (int, np.integer)) or min_count < 1:
            raise TextError(f"Vocabulary.build: Expect: min_count a positive integer. Actual: {min_count!r}")
        specials = tuple(specials)
        if max_size is not None and max_size < len(specials):
            raise TextError(f"Vocabulary.build: Expect: max_size at least the {len(specials)} special "
                            f"tokens. Actual: {max_size}")
        if isinstance(sentences, str):
            raise TextError("Vocabulary.build: Expect: tokenized sentences (lists of tokens). "
                            "Actual: a string; tokenize it first")
        counter: Counter = Counter()
        for sentence in sentences:
            if isinstance(sentence, str):
                raise TextError("Vocabulary.build: Expect: tokenized sentences (lists of tokens). "
                                f"Actual: the string {sentence[:40]!r}")
            counter.update(sentence)
        special_set = set(specials)
        kept = sorted(((t, c) for t, c in counter.items() if c >= min_count and t not in special_set),
                      key=lambda tc: (-tc[1], tc[0]))
        if max_size is not None:
            kept = kept[:max_size - len(specials)]
        tokens = list(specials) + [t for t, _ in kept]
        # The cut tokens occur in the encoded text as [UNK]; without them its frequency
        # would read 0 (never subsampled, never a negative) and every other share too high.
        cut = sum(c for t, c in counter.items() if t not in special_set) - sum(c for _, c in kept)
        counts = [counter.get(s, 0) + (cut if s == UNK else 0) for s in specials] + [c for _, c in kept]
        return cls(tokens, counts, specials)

    # ------------------------------------------------------------- lookups

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token) -> bool:
        return token in self._ids

    def __iter__(self):
        return iter(self.tokens)

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} tokens, {len(self.specials)} special)"

    def id(self, token: str, strict: bool = False) -> int:
        """The id of ``token``; an unknown token gives the ``[UNK]`` id (or TextError with ``strict``)."""
        i = self._ids.get(token)
        if i is not None:
            return i
        if strict or UNK not in self._ids:
            raise TextError(f"Vocabulary: unknown token {token!r} ({len(self)} tokens"
                            f"{'' if UNK in self._ids else ', no [UNK] token'})")
        return self._ids[UNK]

    def token(self, i: int) -> str:
        """The token of id ``i``."""
        if not -len(self) <= int(i) < len(self):
            raise TextError(f"Vocabulary: id {int(i)} is out of range for {len(self)} tokens")
        return self.tokens[int(i)]

    @property
    def pad_id(self) -> int:
        return self.id(PAD, strict=True)

    @property
    def unk_id(self) -> int:
        return self.id(UNK, strict=True)

    @property
    def special_ids(self) -> np.ndarray:
        """Ids of the special tokens, shape (number of specials,)."""
        return np.array([self._ids[s] for s in self.specials], dtype=np.int64)

    def encode(self, tokens: Sequence[str]) -> np.ndarray:
        """Ids of ``tokens`` (unknown ones as ``[UNK]``). Shapes: n tokens -> (n,) int64."""
        if isinstance(tokens, str):
            raise TextError("Vocabulary.encode: Expect: a sequence of tokens. Actual: a string; "
                            "use a tokenizer's encode for raw text")
        unk = self._ids.get(UNK)
        ids = [self._ids.get(t, unk) for t in tokens]
        if unk is None and None in ids:
            bad = next(t for t, i in zip(tokens, ids) if i is None)
            raise TextError(f"Vocabulary.encode: unknown token {bad!r} and no [UNK] token")
        return np.array(ids, dtype=np.int64)

    def decode(self, ids, skip: Sequence[str] = ()) -> list[str]:
        """Tokens of ``ids`` (any integer array, read flat), leaving out the tokens in ``skip``."""
        arr = np.asarray(ids)
        if arr.size and arr.dtype.kind not in "iu":
            raise TextError(f"Vocabulary.decode: Expect: integer ids. Actual: dtype {arr.dtype}")
        arr = arr.reshape(-1).astype(np.int64)
        if arr.size and (arr.min() < 0 or arr.max() >= len(self)):
            bad = int(arr.min() if arr.min() < 0 else arr.max())
            raise TextError(f"Vocabulary.decode: id {bad} is out of range for {len(self)} tokens. "
                            f"Expect: ids in [0, {len(self)})")
        skip = set(skip)
        return [t for t in (self.tokens[i] for i in arr.tolist()) if t not in skip]

    # --------------------------------------------------------- persistence

    def to_dict(self) -> dict:
        """A JSON-ready description; ``Vocabulary.from_dict`` restores it."""
        return {"tokens": list(self.tokens), "counts": self.counts.tolist(), "specials": list(self.specials)}

    @classmethod
    def from_dict(cls, d: dict) -> "Vocabulary":
        """The vocabulary described by :meth:`to_dict`."""
        try:
            return cls(d["tokens"], d.get("counts"), d.get("specials", SPECIAL_TOKENS))
        except (KeyError, TypeError) as exc:
            raise TextError(f"Vocabulary.from_dict: Expect: a dict with 'tokens' (and 'counts', "
                            f"'specials'). Actual: {type(d).__name__} ({exc})") from None
