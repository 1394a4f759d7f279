"""Label text for the renderer: escaping user strings and formatting shapes, values, params
(the formatting shared with ``print(program)`` lives in :mod:`autograd_dag.formatting`).

Every label is a Graphviz HTML-like label (``<...>``), so markup such as bold op
names is possible and every user string passes through :func:`html` first. The
escaping was checked against ``dot -Tsvg``: the result is valid DOT and valid
SVG XML for names holding ``<``, ``>``, ``&``, quotes, backslashes, newlines,
control characters or any non-ASCII text.
"""

from __future__ import annotations

import re

import numpy as np

from ..formatting import format_param as param_str
from ..formatting import format_shape as shape_str
from ..formatting import format_source as source_str  # noqa: F401  (re-exported for the views)
from ..formatting import format_value as value_str  # noqa: F401  (re-exported for the views)

# Characters that XML 1.0 forbids even as character references, plus the C1
# controls and lone surrogates that a Python str may carry (from filenames).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_MAX_TEXT = 80


def html(text, limit: int = _MAX_TEXT) -> str:
    """Escape ``text`` for a Graphviz HTML-like label; newlines become ``<BR/>``.

    Takes any object (``str()`` of it) and returns markup-safe text; longer
    than ``limit`` characters it is cut with an ellipsis.

    Example:
        >>> html('<lambda> & "x"\\\\y')
        '&lt;lambda&gt; &amp; &quot;x&quot;\\\\\\\\y'
    """
    s = str(text)
    if limit and len(s) > limit:
        s = s[: limit - 1] + "\u2026"
    s = s.replace("\t", " ").replace("\r\n", "\n").replace("\r", "\n")
    s = _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else "\ufffd", s)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    if s and s.strip("]") == "":
        # Graphviz 2.43 rejects a label text of just "]" or "]]" ("<B>]</B>": a syntax error); a
        # character reference passes. (Only then: "]" inside longer text, as in "[3]", is fine.)
        s = "&#93;" * len(s)
    # Graphviz expands escString sequences (\N, \G, \\) even inside HTML
    # labels, after decoding entities: doubling is the only way to keep one.
    s = s.replace("\\", "\\\\")
    # Non-ASCII as character references: valid whatever charset the DOT file is read with.
    s = "".join(c if ord(c) < 128 else f"&#{ord(c)};" for c in s)
    return s.replace("\n", "<BR/>")


_NAME_PIECE = re.compile(r"[^./_ \-]*[./_ \-]?")


def name_html(text, width: int = 40, limit: int = 240) -> str:
    """A user's name (parameter, node, scope) escaped for an HTML-like label, whole, wrapped at ``width``.

    Names are what tell two nodes apart (``...out_proj.weight`` and
    ``...out_proj.bias``), so they are never cut at the end: a long one is
    broken into lines after ``.``, ``/``, ``_``, ``-`` or a space. Only a name
    longer than ``limit`` loses its middle (``…``), keeping both ends.

    Example:
        >>> name_html("encoder.layers.11.self_attn.out_proj.weight", 24)
        'encoder.layers.11.self_<BR/>attn.out_proj.weight'
    """
    s = str(text)
    if len(s) > limit:
        s = s[: limit // 2 - 1] + "\u2026" + s[len(s) - limit // 2:]
    lines: list[str] = []
    for paragraph in s.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = ""
        for piece in _NAME_PIECE.findall(paragraph):
            while len(piece) > width:  # a piece with no separator in it: cut where it must
                if line:
                    lines.append(line)
                    line = ""
                lines.append(piece[:width])
                piece = piece[width:]
            if line and len(line) + len(piece) > width:
                lines.append(line)
                line = ""
            line += piece
        lines.append(line)
    return "<BR/>".join(html(line, 0) for line in lines)


def plain(text, limit: int = 200) -> str:
    """Escape ``text`` for a quoted (non-HTML) DOT attribute such as ``tooltip``.

    Backslashes are doubled, newlines become ``\\n``, control characters are
    dropped; the caller wraps the result in ``graphviz.nohtml`` so that a
    string like ``<lambda>`` is never mistaken for an HTML label.
    """
    s = str(text)
    if limit and len(s) > limit:
        s = s[: limit - 1] + "\u2026"
    s = _UNSAFE.sub("", s.replace("\r", ""))
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def bold(text: str) -> str:
    """Already-escaped ``text`` in bold; empty text stays empty (Graphviz rejects ``<B></B>``, as an empty
    name, title or scope gave)."""
    return f"<B>{text}</B>" if text else ""


def small(text: str, color: str = "#555555", size: int = 9) -> str:
    """Already-escaped ``text`` in a small grey font (empty text stays empty: Graphviz rejects an empty FONT)."""
    return f'<FONT POINT-SIZE="{size}" COLOR="{color}">{text}</FONT>' if text else ""




def constant_str(value, max_size: int = 8) -> str:
    """A constant's value for its node: every element of a small array (``[1, 2.5, -3]``), else
    ``value_str``'s ``2`` or ``array[3,4]``. Two constants of one shape then read differently.

    Example:
        >>> constant_str(np.array([[1.0, 2.5], [-3.0, 1e-8]]))
        '[[1, 2.5], [-3, 1e-08]]'
    """
    v = np.asarray(value)
    if v.size <= 1 or v.size > max_size or v.dtype.kind not in "biuf":
        return value_str(value)
    return np.array2string(v, separator=", ", formatter={"all": value_str}, threshold=max_size + 1,
                           max_line_width=10 ** 6).replace("\n", "")


def type_str(shape, dtype, show_shapes: bool = True, show_dtypes: bool = True) -> str:
    """``float64[3,4]``, ``[3,4]``, ``float64`` or ``""`` as asked."""
    return (str(np.dtype(dtype)) if show_dtypes else "") + (shape_str(shape) if show_shapes else "")


def params_str(params: dict, limit: int = 48) -> str:
    """``axis=1, keepdims=True`` for a node's params, cut at ``limit`` characters."""
    text = ", ".join(f"{k}={param_str(v)}" for k, v in params.items())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
