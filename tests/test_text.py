"""The text toolkit: vocabulary, tokenizers, sentence splitting, and the built-in corpus reader."""

import contextlib
import io
import os
import sys

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import text
from autograd_dag.text import corpus

TRAIN = ["The cat sat on the mat.", "The dog sat on the log!", "A cat and a dog."]


# ----------------------------------------------------------------- vocabulary

def test_vocabulary_orders_specials_then_count_then_alphabet():
    v = text.Vocabulary.build([["b", "a", "c", "a"], ["b", "d"]])
    assert v.tokens[:6] == list(text.SPECIAL_TOKENS)
    assert v.pad_id == 0 and v.unk_id == 1
    assert v.tokens[6:] == ["a", "b", "c", "d"]  # a, b twice; c, d once; ties alphabetical
    assert v.counts[6:].tolist() == [2, 2, 1, 1]
    assert v.counts[:6].tolist() == [0] * 6


def test_vocabulary_cutoffs():
    sentences = [["a"] * 5 + ["b"] * 3 + ["c"] * 2 + ["d"]]
    assert text.Vocabulary.build(sentences, min_count=2).tokens[6:] == ["a", "b", "c"]
    assert text.Vocabulary.build(sentences, max_size=8).tokens[6:] == ["a", "b"]
    with pytest.raises(text.TextError, match="min_count"):
        text.Vocabulary.build(sentences, min_count=0)
    with pytest.raises(text.TextError, match="max_size"):
        text.Vocabulary.build(sentences, max_size=3)


@pytest.mark.parametrize("cut", [{"min_count": 2}, {"max_size": 8}])
def test_vocabulary_counts_are_the_frequencies_of_the_encoded_text(cut):
    # Subsampling and negative sampling read counts[i] as id i's frequency in the encoded corpus:
    # the tokens cut by min_count / max_size are [UNK] there, so [UNK] must count them.
    sentences = [["a"] * 5 + ["b"] * 3 + ["c"] * 2 + ["d", "e"], ["[CLS]", "b", "f", "[UNK]"]]
    v = text.Vocabulary.build(sentences, **cut)
    encoded = np.concatenate([v.encode(s) for s in sentences])
    assert v.counts.tolist() == np.bincount(encoded, minlength=len(v)).tolist()
    assert v.counts.sum() == sum(len(s) for s in sentences)


def test_vocabulary_encode_decode_and_errors():
    v = text.Vocabulary.build([["x", "y"]])
    ids = v.encode(["y", "zzz", "x"])
    assert ids.dtype == np.int64 and ids.tolist() == [v.id("y"), v.unk_id, v.id("x")]
    assert v.decode(ids) == ["y", "[UNK]", "x"]
    assert v.decode(np.array([[v.pad_id, v.id("x")]]), skip=["[PAD]"]) == ["x"]
    with pytest.raises(text.TextError, match="out of range"):
        v.decode([len(v)])
    with pytest.raises(text.TextError, match="unknown token 'zzz'"):
        v.id("zzz", strict=True)
    with pytest.raises(text.TextError, match="tokenize it first"):
        text.Vocabulary.build("a string")
    assert issubclass(text.TextError, ad.AutogradDagError)
    assert text.Vocabulary.from_dict(v.to_dict()).tokens == v.tokens


# ----------------------------------------------------------------- tokenizers

def test_word_tokenizer_round_trip_on_unseen_text_with_unk():
    tok = text.WordTokenizer().fit(TRAIN)
    assert tok.split("Don't panic, Arthur!") == ["don't", "panic", ",", "arthur", "!"]
    # Seen words come back as written (lower-cased), unseen ones as [UNK].
    assert tok.decode(tok.encode("The dog sat on the mat.")) == "the dog sat on the mat."
    assert tok.decode(tok.encode("The zebra sat on a sofa!")) == "the [UNK] sat on a [UNK]!"
    ids = tok.encode("the cat", cls_sep=True, eos=True)
    assert tok.vocab.decode(ids) == ["[CLS]", "the", "cat", "[SEP]", "[EOS]"]
    assert tok.decode(ids) == "the cat"
    assert tok.decode(ids, skip_special=False) == "[CLS] the cat [SEP] [EOS]"


def test_word_tokenizer_without_punctuation_and_case():
    tok = text.WordTokenizer(lowercase=False, punctuation=False)
    assert tok.split("Hello, World (again).") == ["Hello", "World", "again"]


def test_char_tokenizer_round_trip():
    tok = text.CharTokenizer().fit(["hello world"])
    assert tok.decode(tok.encode("low order")) == "low order"
    assert tok.decode(tok.encode("Low!")) == "[UNK]ow[UNK]"


def test_encode_batch_pads_with_pad_id():
    tok = text.WordTokenizer().fit(TRAIN)
    ids, lengths = tok.encode_batch(["the cat sat", "a dog", "the"], cls_sep=True)
    assert ids.shape == (3, 5) and lengths.tolist() == [5, 4, 3]
    assert (ids[1, 4:] == tok.vocab.pad_id).all() and (ids[2, 3:] == 0).all()
    ids, lengths = tok.encode_batch(["the cat sat on the mat"], max_length=3)
    assert ids.shape == (1, 3) and lengths.tolist() == [3]


def test_tokenizer_needs_a_vocabulary():
    with pytest.raises(text.TextError, match="fit"):
        text.WordTokenizer().encode("hello")


# ----------------------------------------------------------------- sentences

def test_split_sentences_respects_abbreviations_and_dotted_names():
    s = text.split_sentences("Use os.path.join, e.g. for paths. It is portable! Is it? Yes (mostly). "
                             "See J. Smith. 3 more.")
    assert s == ["Use os.path.join, e.g. for paths.", "It is portable!", "Is it?", "Yes (mostly).",
                 "See J. Smith.", "3 more."]


def test_text_sentences_keeps_prose_only():
    doc = ("Heading\n*******\n\nThe first sentence is here.  The second one\nspans two lines.\n\n"
           "Use it like this:\n\n   x = compute(a, b)\n   y = [x for x in range(3)]\n\n"
           ">>> print('doctest')\ndoctest\n\n"
           "   target ::= identifier | \"(\" target \")\"\n\n"
           "Back to **prose** with a footnote [1] and :func:`roles` here.\n")
    assert text.text_sentences(doc) == ["The first sentence is here.", "The second one spans two lines.",
                                        "Back to prose with a footnote and roles here."]


# ----------------------------------------------------------------- corpus

def _looks_english(sentences):
    words = [w for s in sentences for w in s.lower().split()]
    common = sum(w in {"the", "a", "is", "of", "to", "and", "in"} for w in words)
    return common > 0.1 * len(words) and all(s[0].isupper() or s[0] in "\"'(" for s in sentences) \
        and all(s.rstrip("\"')")[-1] in ".!?" for s in sentences)


def test_pydoc_sentences_are_english_and_deterministic():
    first = text.pydoc_sentences()
    assert len(first) > 1500 and _looks_english(first)
    assert "A class definition is an executable statement." in first
    corpus._pydoc_sentences.cache_clear()  # a second read from scratch gives the same list
    assert text.pydoc_sentences() == first
    assert text.pydoc_sentences(["class"]) == [s for s in text.text_sentences(
        __import__("pydoc_data.topics").topics.topics["class"])]
    with pytest.raises(text.TextError, match="unknown topics"):
        text.pydoc_sentences(["no-such-topic"])


def test_docstring_sentences_read_without_importing():
    assert "this" not in sys.modules or pytest.skip("module 'this' already imported")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # Importing `this` prints the Zen of Python; reading its source must not.
        text.docstring_sentences(["this", "json"])
    assert out.getvalue() == "" and "this" not in sys.modules
    json_sentences = text.docstring_sentences(["json"])
    assert json_sentences[0].startswith("JSON (JavaScript Object Notation)")
    assert _looks_english(json_sentences)
    corpus._docstring_sentences.cache_clear()
    assert text.docstring_sentences(["json"]) == json_sentences
    with pytest.raises(text.TextError, match="no standard-library module"):
        text.docstring_sentences(["no_such_module_xyz"])


def test_stdlib_files_skip_tests_and_demos():
    files = text.stdlib_source_files()
    assert files == text.stdlib_source_files() and len(files) > 300
    assert any(f.endswith(os.sep + "os.py") for f in files)
    for f in files:
        parts = set(f.split(os.sep))
        assert not parts & corpus.SKIPPED_DIRS, f
        assert not os.path.basename(f).startswith("test_"), f


def test_whole_documentation_corpus():
    sentences = text.documentation_sentences()
    pydoc = text.pydoc_sentences()
    assert sentences[:len(pydoc)] == pydoc
    assert len(sentences) > len(pydoc) + 5000
    assert _looks_english(sentences[len(pydoc):])
    with pytest.raises(text.TextError, match="sources"):
        text.documentation_sentences(["wikipedia"])


def test_user_file_works_like_the_builtin_corpus(tmp_path):
    from pydoc_data.topics import topics
    path = tmp_path / "notes.txt"
    path.write_text(topics["for"], encoding="utf-8")
    assert text.read_sentences(path) == text.pydoc_sentences(["for"])
    assert text.read_sentences(str(path)) == text.read_sentences(path)
    tok = text.WordTokenizer().fit(text.read_sentences(path))
    assert "iterable" in tok.vocab
    with pytest.raises(text.TextError, match="cannot read"):
        text.read_sentences(tmp_path / "missing.txt")


def test_encode_batch_truncation_keeps_the_markers():
    # Truncating the marked ids cut off [SEP] (and [EOS]): a BERT input without its closing [SEP], a
    # seq2seq target the model never learns to end. The words are truncated, the markers kept.
    tok = text.WordTokenizer().fit(TRAIN)
    v = tok.vocab
    words = "the cat sat on the mat".split()
    ids, lengths = tok.encode_batch(["the cat sat on the mat", "a dog"], max_length=5, cls_sep=True)
    assert ids[0].tolist() == [v.id("[CLS]"), *v.encode(words[:3]).tolist(), v.id("[SEP]")]
    assert ids[1].tolist() == [v.id("[CLS]"), *v.encode(["a", "dog"]).tolist(), v.id("[SEP]"), v.pad_id]
    assert lengths.tolist() == [5, 4]
    ids, lengths = tok.encode_batch(["the cat sat on the mat"], max_length=4, cls_sep=True, eos=True)
    assert ids[0].tolist() == [v.id("[CLS]"), v.id("the"), v.id("[SEP]"), v.id("[EOS]")]
    ids, _ = tok.encode_batch(["the cat sat on the mat"], max_length=3, eos=True)
    assert ids[0].tolist() == [*v.encode(words[:2]).tolist(), v.id("[EOS]")]
    with pytest.raises(text.TextError, match="max_length"):
        tok.encode_batch(["the cat"], max_length=2, cls_sep=True)   # room for the markers only
