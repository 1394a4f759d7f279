"""Defect hunt 9 of the renderer's errors: every RenderError names the user's line, and a file that
cannot be written is a RenderError naming the path and what to do, never a bare OSError."""

from __future__ import annotations

import inspect
import os
import shutil

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.cli import main


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno


def _program():
    return ad.trace(lambda x, y: ad.exp(x) * y, np.ones(2), np.ones(2))


def _at_this_line(info, line) -> None:
    assert str(info.value).endswith(f"(at {__file__}:{line})"), str(info.value)


def test_render_option_mistakes_name_the_users_line(tmp_path):
    p = _program()
    mistakes = []
    with pytest.raises(ad.RenderError, match="view must be one of") as info:
        line = _line(); ad.render(p, "tree")  # noqa: E702  (the mistake and its line number together)
    mistakes.append((info, line))
    with pytest.raises(ad.RenderError, match="depth must be a whole number") as info:
        line = _line(); ad.render(p, depth=-1)  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.RenderError, match="rankdir must be") as info:
        line = _line(); ad.render(p, rankdir="XY")  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.RenderError, match="max_nodes must be a whole number") as info:
        line = _line(); ad.render(p, max_nodes=0)  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.RenderError, match="has no scope 'nope'") as info:
        line = _line(); ad.render(p, scope="nope")  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.RenderError, match="highlight node %99 does not exist") as info:
        line = _line(); ad.render(p, highlight=99)  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.RenderError, match="expected a Program") as info:
        line = _line(); ad.render(3)  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.RenderError, match="values must be a mapping") as info:
        line = _line(); ad.render(p, overlay=3)  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.RenderError, match="has the number nan") as info:
        line = _line(); ad.render(p, overlay={0: float("nan")})  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.RenderError, match="unknown output format 'xyz'") as info:
        line = _line(); ad.render_to(p, tmp_path / "f.xyz")  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.RenderError, match="no path from") as info:
        line = _line(); ad.highlight_path(p, 3, 0)  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.RenderError, match="unknown options") as info:
        line = _line(); ad.render_site(p, tmp_path / "site", colour="red")  # noqa: E702
    mistakes.append((info, line))
    assert len(mistakes) == 12
    for info, line in mistakes:
        _at_this_line(info, line)


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot (to take it away)")
def test_missing_dot_names_the_users_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH without dot
    p = _program()
    with pytest.raises(ad.GraphvizNotFoundError, match="apt-get install graphviz") as info:
        line = _line(); ad.render_to(p, tmp_path / "f.svg")  # noqa: E702
    _at_this_line(info, line)
    assert not (tmp_path / "f.svg").exists()


def test_a_folder_that_is_a_file_is_a_render_error_naming_it(tmp_path):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file where a folder is wanted")
    p = _program()
    for suffix in ("dot", "html"):  # .dot needs no Graphviz; .html writes the interactive page
        if suffix == "html" and shutil.which("dot") is None:
            continue
        target = blocker / f"f.{suffix}"
        with pytest.raises(ad.RenderError, match="is a file, not a folder") as info:
            line = _line(); ad.render_to(p, target)  # noqa: E702
        assert repr(str(target)) in str(info.value) and repr(str(blocker)) in str(info.value)
        _at_this_line(info, line)
    with pytest.raises(ad.RenderError, match="is a file, not a folder") as info:
        line = _line(); ad.render(p).render(str(blocker / "g.dot"))  # noqa: E702
    _at_this_line(info, line)
    with pytest.raises(ad.RenderError, match="cannot make the folder") as info:
        line = _line(); ad.render_site(p, blocker, view="dag")  # noqa: E702
    _at_this_line(info, line)
    assert blocker.read_text() == "a file where a folder is wanted"


def test_a_directory_as_the_file_is_refused_before_layout(tmp_path):
    folder = tmp_path / "out.svg"
    folder.mkdir()
    p = _program()
    for target in (folder, str(tmp_path) + os.sep):
        with pytest.raises(ad.RenderError, match="is a directory; give a file name in it") as info:
            line = _line(); ad.render_to(p, target)  # noqa: E702
        _at_this_line(info, line)


def test_an_existing_file_is_replaced(tmp_path):
    target = tmp_path / "f.dot"
    target.write_text("old")
    assert ad.render_to(_program(), target) == str(target)
    assert target.read_text().startswith("digraph")


def test_unknown_format_keyword_is_refused_naming_the_formats(tmp_path):
    # Graphviz was run first, then failed listing its sixty formats.
    with pytest.raises(ad.RenderError, match=r"unknown output format 'svgz?x' \(format=\).*svg, png, pdf") as info:
        line = _line(); ad.render_to(_program(), tmp_path / "f.svg", format="svgx")  # noqa: E702
    _at_this_line(info, line)


def test_highlight_of_a_float_is_a_render_error():
    # list(1.5) raised "TypeError: 'float' object is not iterable".
    with pytest.raises(ad.RenderError, match="highlight must be node indices or names, got float") as info:
        line = _line(); ad.render(_program(), highlight=1.5)  # noqa: E702
    _at_this_line(info, line)


def test_flags_that_are_not_booleans_are_refused():
    # show_shapes="no" is truthy: the shapes were drawn.
    for flag in ("show_shapes", "show_dtypes", "legend", "fold", "inline_constants"):
        with pytest.raises(ad.RenderError, match=f"{flag} must be True or False, got str 'no'") as info:
            line = _line(); ad.render(_program(), **{flag: "no"})  # noqa: E702
        _at_this_line(info, line)
    p = _program()
    assert ad.render(p, show_shapes=np.bool_(False)).source == ad.render(p, show_shapes=False).source


def test_cli_errors_do_not_name_the_launchers_line(tmp_path, capsys):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("")
    assert main(["render", "autograd_dag.gallery:book_program", "-o", str(blocker / "f.dot")]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and "(at " not in err, err
