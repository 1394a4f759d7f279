"""English text that every CPython already has, split into sentences; no download, ever.

Two sources ship with the interpreter:

* ``pydoc_data.topics``: the Python Language Reference topics that ``help()``
  shows (79 topics on 3.11, 2,462 sentences after cleaning);
* the standard library's docstrings, read from the ``.py`` source files with
  :func:`ast.get_docstring` — nothing is imported, so no module's import side
  effects run — skipping test suites, IDLE, the turtle demos and installed
  third-party packages (13,747 sentences on 3.11).

Both are read in sorted order, so every call returns the same sentences in
the same order. Results are cached in memory for the life of the process
(the docstrings take a couple of seconds to parse); nothing is written to
disk. A user's own text file goes through the same cleaning with
:func:`read_sentences`.

The cleaning keeps prose and drops what is not: section headings and their
underlines, literal blocks (the indented block after a paragraph ending in
a colon), doctest sessions, grammar rules, and sentences that are mostly
symbols.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import sysconfig
import warnings
from typing import Sequence

from .vocab import TextError

__all__ = ["split_sentences", "text_sentences", "read_sentences", "pydoc_sentences", "docstring_sentences",
           "documentation_sentences", "stdlib_source_files"]

# Directories of the standard library that hold no documentation prose of
# their own (test suites, demo programs, the IDE, grammar test data) or are
# not the standard library at all (installed packages).
SKIPPED_DIRS = frozenset({"test", "tests", "idle_test", "idlelib", "turtledemo", "site-packages",
                          "dist-packages", "__pycache__", "lib2to3", "ensurepip", "pydoc_data",
                          "venv", "Tools", "demo", "Demo"})

_UNDERLINE = re.compile(r"^\s*([=\-*~^#+`'\"])\1{2,}\s*$")
_BULLET = re.compile(r"^\s*(?:[*\-•+]|\d+[.)]|\([a-z0-9]\))\s+")
# reST roles (:func:`x`), emphasis markers (*k*, **bold**), footnote references ([5]).
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:(?=`)")
_MARKUP = re.compile(r"\*+|``|`|\[\d+\]|\[#\w*\]_?")
_SPACES = re.compile(r"\s+")
_CODE_CHARS = set("=(){}[]<>;_@#$%^&|\\~")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})

# Words that end in a full stop without ending the sentence.
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "mr", "mrs", "dr", "no", "st", "approx", "resp",
                            "fig", "eq", "sec", "ch", "vol", "al", "ca", "incl", "viz", "a.k.a"})
_BOUNDARY = re.compile(r"[.!?][\"')\]]*\s+")
_WORDLIKE = re.compile(r"^[(\"']*[A-Za-z][a-z'\-]*[.,;:!?)\"']*$")


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences at . ! ? followed by a capitalised word, not after abbreviations.

    Whitespace inside a sentence is collapsed to single spaces. Shapes: one
    string -> a list of strings.

    Example:
        >>> from autograd_dag.text import split_sentences
        >>> split_sentences("Lists are mutable, e.g. by append. Tuples are not!  Why?")
        ['Lists are mutable, e.g. by append.', 'Tuples are not!', 'Why?']
    """
    text = _SPACES.sub(" ", text).strip()
    sentences, start = [], 0
    for m in _BOUNDARY.finditer(text):
        after = text[m.end():m.end() + 1]
        if not (after.isupper() or after.isdigit() or after in "\"'("):
            continue
        words = text[start:m.start()].rsplit(" ", 1)
        last = words[-1].lower().lstrip("(\"'")
        if text[m.start()] == "." and (last in _ABBREVIATIONS or len(last) == 1 and last.isalpha()):
            # "e.g. This" or an initial ("J. Smith") is not the end of a sentence.
            continue
        sentences.append(text[start:m.end()].strip())
        start = m.end()
    if start < len(text):
        sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def _paragraphs(text: str) -> list[tuple[int, list[str]]]:
    """(indentation, lines) of each paragraph; headings (a title over an underline) are dropped."""
    paragraphs: list[tuple[int, list[str]]] = []
    current: list[str] = []

    def flush():
        if current:
            paragraphs.append((len(current[0]) - len(current[0].lstrip()), list(current)))
            current.clear()

    for line in text.expandtabs(8).splitlines():
        if not line.strip():
            flush()
        elif _UNDERLINE.match(line):
            # The line above an underline is a heading, not prose.
            if current:
                current.pop()
            flush()
        else:
            if _BULLET.match(line):
                flush()
            current.append(line.rstrip())
    flush()
    return paragraphs


def _looks_like_code(lines: list[str], joined: str) -> bool:
    first = lines[0].lstrip()
    if first.startswith((">>>", "...", "$ ", "%")) or "::=" in joined:
        return True
    symbols = sum(ch in _CODE_CHARS for ch in joined)
    return symbols > 0.06 * len(joined)


def _is_prose_sentence(s: str) -> bool:
    if not (s[0].isupper() or s[0] in "\"'(") or s.rstrip("\"')")[-1:] not in (".", "!", "?"):
        return False
    words = s.split()
    if len(words) < 3:
        return False
    return sum(bool(_WORDLIKE.match(w)) for w in words) >= 0.7 * len(words)


def text_sentences(text: str) -> list[str]:
    """The prose sentences of a plain-text or reStructuredText document.

    Paragraphs are separated by blank lines (and list bullets); headings,
    literal blocks, doctests and symbol-heavy paragraphs are dropped;
    reST roles, ``**``, backticks and footnote marks are removed; curly quotes
    become straight ones. A sentence is kept when it starts with a capital
    letter, ends with . ! or ?, has at least three words and is mostly words.

    Example:
        >>> from autograd_dag.text import text_sentences
        >>> doc = "Title\\n=====\\n\\nUse a list:\\n\\n   x = [1, 2]\\n\\nLists grow on demand. See :func:`len` too."
        >>> text_sentences(doc)
        ['Lists grow on demand.', 'See len too.']
    """
    if not isinstance(text, str):
        raise TextError(f"text_sentences: Expect: a string. Actual: {type(text).__name__}")
    out: list[str] = []
    literal_indent = None
    for indent, lines in _paragraphs(text.translate(_QUOTES)):
        if literal_indent is not None:
            if indent > literal_indent:
                # Inside the literal block introduced by "...:" (reST's "::").
                continue
            literal_indent = None
        joined = " ".join(line.strip() for line in lines)
        if joined.endswith(":"):
            literal_indent = indent
        if _looks_like_code(lines, joined):
            continue
        joined = _MARKUP.sub("", _ROLE.sub("", joined))
        joined = _BULLET.sub("", joined)
        out.extend(s for s in split_sentences(joined) if _is_prose_sentence(s))
    return out


def read_sentences(path: str | os.PathLike, encoding: str = "utf-8") -> list[str]:
    """The prose sentences of a user's text file, cleaned exactly like the built-in corpus.

    Raises TextError if the file cannot be read.
    Example: ``read_sentences("my_notes.txt")[:3]``.
    """
    try:
        with open(path, encoding=encoding, errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        raise TextError(f"read_sentences: cannot read {os.fspath(path)!r}: {exc.strerror or exc}") from None
    return text_sentences(text)


@functools.lru_cache(maxsize=None)
def _pydoc_sentences(topics: tuple[str, ...] | None) -> tuple[str, ...]:
    # Imported on first use, not with the package: it is half a megabyte of
    # text that most users of autograd_dag never read.
    from pydoc_data.topics import topics as all_topics
    names = sorted(all_topics) if topics is None else topics
    unknown = [t for t in names if t not in all_topics]
    if unknown:
        raise TextError(f"pydoc_sentences: unknown topics {unknown}; known ones: {sorted(all_topics)[:8]} … "
                        f"({len(all_topics)} in all)")
    out: list[str] = []
    for name in names:
        out.extend(text_sentences(all_topics[name]))
    return tuple(out)


def pydoc_sentences(topics: Sequence[str] | None = None) -> list[str]:
    """Sentences of the Python Language Reference topics in ``pydoc_data.topics``, topics sorted by name.

    ``topics`` picks some of them (e.g. ``["class", "for"]``); default all.
    Example: ``pydoc_sentences(["assert"])[0]`` is 'These equivalences assume that "__debug__" and …'.
    """
    return list(_pydoc_sentences(None if topics is None else tuple(topics)))


def _stdlib_root() -> str:
    root = sysconfig.get_paths().get("stdlib")
    if not root or not os.path.isfile(os.path.join(root, "os.py")):
        root = os.path.dirname(os.__file__)
    return root


def stdlib_source_files(modules: Sequence[str] | None = None) -> list[str]:
    """Paths of the standard library's ``.py`` files, sorted, without the skipped directories.

    ``modules`` restricts them to some top-level modules or packages
    (``["json", "collections"]``). Example: ``stdlib_source_files(["json"])[0].endswith("__init__.py")``.
    """
    root = _stdlib_root()
    if modules is not None:
        starts = []
        for name in modules:
            path = os.path.join(root, *name.split("."))
            if os.path.isdir(path):
                starts.append(path)
            elif os.path.isfile(path + ".py"):
                starts.append(path + ".py")
            else:
                raise TextError(f"stdlib_source_files: no standard-library module {name!r} under {root}")
    else:
        starts = [root]
    files: list[str] = []
    for start in starts:
        if os.path.isfile(start):
            files.append(start)
            continue
        for folder, dirs, names in os.walk(start):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith((".", "config-")))
            files.extend(os.path.join(folder, n) for n in sorted(names)
                         if n.endswith(".py") and not n.startswith("test_"))
    return files


@functools.lru_cache(maxsize=None)
def _docstring_sentences(modules: tuple[str, ...] | None) -> tuple[str, ...]:
    out: list[str] = []
    seen: set[str] = set()
    for path in stdlib_source_files(modules):
        try:
            with open(path, "rb") as fh:
                source = fh.read()
            with warnings.catch_warnings():
                # Old escapes in some modules' strings warn when parsed; they are not ours to fix.
                warnings.simplefilter("ignore")
                tree = ast.parse(source, filename=path)
        except (OSError, SyntaxError, ValueError):
            continue
        for node in _documented_nodes(tree):
            doc = ast.get_docstring(node)
            # Inherited boilerplate ("Return repr(self).") repeats many times: keep it once.
            if doc and doc not in seen:
                seen.add(doc)
                out.extend(text_sentences(doc))
    return tuple(out)


_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _documented_nodes(tree: ast.AST):
    """Modules, classes and functions in source order, visiting statements only.

    A docstring is always the first statement of a body, so expressions never
    need a visit; ``ast.walk`` would visit them all and take twice as long.
    """
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, _DOCUMENTED):
            yield node
        children = []
        for field in _STATEMENT_LISTS:
            children.extend(getattr(node, field, ()))
        stack.extend(reversed(children))


def docstring_sentences(modules: Sequence[str] | None = None) -> list[str]:
    """Sentences of the standard library's docstrings (module, class and function), read without importing.

    Files are read in sorted path order and each docstring's text only once.
    ``modules`` restricts the modules read (``["json"]``); default the whole
    standard library except tests, IDLE, demos and third-party packages.
    Example: ``docstring_sentences(["json"])[0]`` starts 'JSON (JavaScript Object Notation) …'.
    """
    return list(_docstring_sentences(None if modules is None else tuple(modules)))


def documentation_sentences(sources: Sequence[str] = ("pydoc", "docstrings"),
                            modules: Sequence[str] | None = None) -> list[str]:
    """The built-in English corpus: the pydoc topics' sentences, then the docstrings'.

    ``sources`` picks ``"pydoc"`` and/or ``"docstrings"``; ``modules`` restricts the docstrings.
    On CPython 3.11.7 the full corpus is 16,209 sentences (223,547 words), 2,462 of them from pydoc.

    Example:
        >>> from autograd_dag.text import documentation_sentences
        >>> sentences = documentation_sentences(["pydoc"])
        >>> len(sentences) > 1000, sentences == documentation_sentences(["pydoc"])
        (True, True)
    """
    if isinstance(sources, str):
        sources = [sources]
    unknown = [s for s in sources if s not in ("pydoc", "docstrings")]
    if unknown:
        raise TextError(f"documentation_sentences: Expect: sources among 'pydoc', 'docstrings'. Actual: {unknown}")
    out: list[str] = []
    if "pydoc" in sources:
        out.extend(pydoc_sentences())
    if "docstrings" in sources:
        out.extend(docstring_sentences(modules))
    return out
