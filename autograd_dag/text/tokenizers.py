"""Word and character tokenizers: text ↔ tokens ↔ ids through a :class:`Vocabulary`.

A tokenizer splits text into tokens (:meth:`~Tokenizer.split`), joins tokens
back into text (:meth:`~Tokenizer.join`), learns a vocabulary from texts
(:meth:`~Tokenizer.fit`), and encodes/decodes with it, optionally adding the
``[CLS]``/``[SEP]``/``[EOS]`` markers and padding a batch with ``[PAD]``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable, Sequence

import numpy as np

from .vocab import CLS, EOS, PAD, SEP, SPECIAL_TOKENS, UNK, TextError, Vocabulary

__all__ = ["Tokenizer", "WordTokenizer", "CharTokenizer"]


class Tokenizer:
    """Base class: ``split``/``join`` define the tokens; a fitted ``vocab`` maps them to ids.

    Subclasses define :meth:`split` and :meth:`join`. Shapes: :meth:`encode`
    returns int64 ids of shape (n,); :meth:`encode_batch` (B, T) ids and the
    lengths (B,).
    """

    def __init__(self, vocab: Vocabulary | None = None):
        self.vocab = vocab

    def split(self, text: str) -> list[str]:
        raise NotImplementedError

    def join(self, tokens: Sequence[str]) -> str:
        raise NotImplementedError

    def fit(self, texts: Iterable[str], min_count: int = 1, max_size: int | None = None,
            specials: Sequence[str] = SPECIAL_TOKENS) -> "Tokenizer":
        """Build ``self.vocab`` from raw texts with the given frequency cut-offs; returns self."""
        if isinstance(texts, str):
            # A single string would be read as one text per character.
            texts = [texts]
        self.vocab = Vocabulary.build((self.split(t) for t in texts), min_count, max_size, specials)
        return self

    def _vocab(self, what: str) -> Vocabulary:
        if self.vocab is None:
            raise TextError(f"{type(self).__name__}.{what}: no vocabulary yet; call fit(texts) or pass vocab=")
        return self.vocab

    def encode(self, text: str, cls_sep: bool = False, eos: bool = False) -> np.ndarray:
        """Ids of the tokens of ``text``: ``[CLS] … [SEP]`` around them with ``cls_sep``, ``[EOS]`` after with ``eos``.

        Shapes: text -> (n,) int64.
        """
        return self._vocab("encode").encode(self._marked(self.split(self._text(text)), cls_sep, eos))

    def _text(self, text):
        if not isinstance(text, str):
            raise TextError(f"{type(self).__name__}.encode: Expect: a string. "
                            f"Actual: {type(text).__name__}")
        return text

    @staticmethod
    def _marked(tokens: list[str], cls_sep: bool, eos: bool) -> list[str]:
        if cls_sep:
            tokens = [CLS] + tokens + [SEP]
        if eos:
            tokens = tokens + [EOS]
        return tokens

    def decode(self, ids, skip_special: bool = True) -> str:
        """The text of ``ids``; special tokens other than ``[UNK]`` are left out with ``skip_special``."""
        vocab = self._vocab("decode")
        skip = [s for s in vocab.specials if s != UNK] if skip_special else []
        return self.join(vocab.decode(ids, skip=skip))

    def encode_batch(self, texts: Sequence[str], max_length: int | None = None, cls_sep: bool = False,
                     eos: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Encode several texts into one ``[PAD]``-filled array, truncated to ``max_length`` ids.

        Truncation drops a text's last tokens, never its markers: with
        ``cls_sep`` a long text still ends with ``[SEP]`` (and ``[EOS]``), as
        BERT's tokenizers truncate, so ``max_length`` must leave room for the
        markers and a token.
        Shapes: B texts -> (ids (B, T) int64, lengths (B,) int64), T the longest
        (or ``max_length``).
        Example: ``WordTokenizer().fit(["a b", "a"]).encode_batch(["a b", "a"])[1].tolist() == [2, 1]``.
        """
        room = None
        if max_length is not None:
            markers = 2 * bool(cls_sep) + bool(eos)
            if max_length < markers + 1:
                raise TextError(f"{type(self).__name__}.encode_batch: Expect: max_length >= {markers + 1} (the "
                                f"{markers} marker(s) and a token). Actual: {max_length}")
            room = max_length - markers
        vocab = self._vocab("encode_batch")
        # Cutting the marked ids instead dropped the closing [SEP] / [EOS] of every long text.
        encoded = [vocab.encode(self._marked(self.split(self._text(t))[:room], cls_sep, eos)) for t in texts]
        lengths = np.array([len(e) for e in encoded], dtype=np.int64)
        width = int(lengths.max()) if len(encoded) else 0
        ids = np.full((len(encoded), width), self._vocab("encode_batch").id(PAD, strict=True), dtype=np.int64)
        for row, e in zip(ids, encoded):
            row[:len(e)] = e
        return ids, lengths

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab={self.vocab!r})"


# A word is a run of letters/digits/underscores, with inner apostrophes
# ("don't"); every other non-space character is a token of its own.
_WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def _is_mark(ch: str) -> bool:
    """Whether ``ch`` is a combining mark (Unicode category M*): part of the letter before it."""
    return unicodedata.category(ch)[0] == "M"


def _words(text: str) -> list[str]:
    """``_WORD``'s tokens with combining marks kept inside their words.

    ``\\w`` does not match combining marks (Devanagari vowel signs, the accent of a decomposed
    "é", the dot of a lower-cased "İ"), so each one cut its word in three: "हिन्दी" was six tokens
    and came back from ``join`` as "ह ि न ् द ी". A mark joins the token it touches, and a word
    touching a token that ends in a mark continues it.
    """
    # Its distinct characters cost a fifth of the split: a text without marks splits as before.
    if text.isascii() or not any(_is_mark(c) for c in set(text)):
        return _WORD.findall(text)
    tokens: list[str] = []
    end = -1
    for m in _WORD.finditer(text):
        tok = m.group()
        if (tokens and m.start() == end
                and (_is_mark(tok[0]) or (_is_mark(tokens[-1][-1]) and _WORD_START.match(tok)
                                          and not _PUNCT_START.match(tokens[-1])))):
            tokens[-1] += tok
        else:
            tokens.append(tok)
        end = m.end()
    return tokens


_WORD_START = re.compile(r"\w")
_PUNCT_START = re.compile(r"[^\w\s]")
_NO_SPACE_BEFORE = set(".,;:!?)]}%’”")
_NO_SPACE_AFTER = set("([{$“")


class WordTokenizer(Tokenizer):
    """Words and punctuation marks as tokens, lower-cased by default.

    ``split("Don't panic!")`` is ``["don't", "panic", "!"]``; :meth:`join`
    puts spaces between words but none before closing punctuation, so prose
    written with ordinary spacing comes back unchanged (lower-cased), and an
    unknown word comes back as ``[UNK]``. Punctuation inside a token is split
    and comes back spaced: "well-known", "e.g.", "3.14" and straight double
    quotes join as "well - known", "e. g.", "3. 14", '" quoted "'.

    Example:
        >>> from autograd_dag.text import WordTokenizer
        >>> tok = WordTokenizer().fit(["The cat sat on the mat.", "The dog sat."])
        >>> ids = tok.encode("The cow sat on the mat.")
        >>> tok.decode(ids)
        'the [UNK] sat on the mat.'
    """

    def __init__(self, lowercase: bool = True, punctuation: bool = True, vocab: Vocabulary | None = None):
        super().__init__(vocab)
        self.lowercase = lowercase
        self.punctuation = punctuation

    def split(self, text: str) -> list[str]:
        """Tokens of ``text``: words and (with ``punctuation``) single punctuation marks."""
        if self.lowercase:
            text = text.lower()
        tokens = _words(text)
        if not self.punctuation:
            tokens = [t for t in tokens if t[0].isalnum() or t[0] == "_"]
        return tokens

    def join(self, tokens: Sequence[str]) -> str:
        """Tokens back into text with ordinary spacing around punctuation."""
        out: list[str] = []
        for tok in tokens:
            if out and not (tok in _NO_SPACE_BEFORE or out[-1] in _NO_SPACE_AFTER):
                out.append(" ")
            out.append(tok)
        return "".join(out)


class CharTokenizer(Tokenizer):
    """Single characters as tokens (spaces included), for character-level models.

    Example:
        >>> from autograd_dag.text import CharTokenizer
        >>> tok = CharTokenizer().fit(["hello world"])
        >>> tok.decode(tok.encode("hold ward"))
        'hold w[UNK]rd'
    """

    def __init__(self, lowercase: bool = False, vocab: Vocabulary | None = None):
        super().__init__(vocab)
        self.lowercase = lowercase

    def split(self, text: str) -> list[str]:
        """The characters of ``text``."""
        return list(text.lower() if self.lowercase else text)

    def join(self, tokens: Sequence[str]) -> str:
        """The characters (and ``[UNK]`` markers) concatenated."""
        return "".join(tokens)
