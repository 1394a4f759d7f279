"""A small text toolkit: tokenizers, a vocabulary, and a corpus reader; no download, ever.

It knows nothing of Tensors or differentiation: it turns text into integer
ids (numpy arrays) for the embedding layers in :mod:`autograd_dag.nn`, and
ids back into text.

* :class:`Vocabulary`: tokens ↔ ids with the special tokens ``[PAD]`` (id 0),
  ``[UNK]``, ``[CLS]``, ``[SEP]``, ``[MASK]``, ``[EOS]`` and frequency cut-offs;
* :class:`WordTokenizer`, :class:`CharTokenizer`: split/join, ``fit``,
  ``encode``/``decode``, padded batches;
* the corpus reader: English sentences from Python's own documentation
  (``pydoc_data.topics``) and the standard library's docstrings
  (:func:`documentation_sentences`), or from a user's file
  (:func:`read_sentences`), cleaned the same way;
* BERT's pretraining data (:mod:`~autograd_dag.text.pretraining`): NSP sentence
  pairs, MLM masking, padded ``[CLS] A [SEP] B [SEP]`` batches.

Example:
    >>> from autograd_dag import text
    >>> sentences = text.pydoc_sentences(["class"])
    >>> sentences[0]
    'A class definition is an executable statement.'
    >>> tok = text.WordTokenizer(punctuation=False).fit(sentences, min_count=2)
    >>> tok.decode(tok.encode("A class definition defines a zyzzyva"))
    'a class definition [UNK] a [UNK]'
"""

from .corpus import (docstring_sentences, documentation_sentences, pydoc_sentences, read_sentences,
                     split_sentences, stdlib_source_files, text_sentences)
from .pretraining import (MaskedTokens, PretrainingBatch, mask_tokens, pack_pair, pretraining_batch,
                          sentence_pairs)
from .tokenizers import CharTokenizer, Tokenizer, WordTokenizer
from .vocab import CLS, EOS, MASK, PAD, SEP, SPECIAL_TOKENS, UNK, TextError, Vocabulary

__all__ = ["Vocabulary", "TextError", "PAD", "UNK", "CLS", "SEP", "MASK", "EOS", "SPECIAL_TOKENS",
           "Tokenizer", "WordTokenizer", "CharTokenizer", "split_sentences", "text_sentences",
           "read_sentences", "pydoc_sentences", "docstring_sentences", "documentation_sentences",
           "stdlib_source_files", "MaskedTokens", "PretrainingBatch", "mask_tokens", "sentence_pairs",
           "pack_pair", "pretraining_batch"]
