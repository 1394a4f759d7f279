"""Turning DOT source into files: the ``dot`` check, timeouts, formats from file suffixes.

Building DOT source never needs Graphviz; laying it out does. When ``dot`` is
missing every path here raises :class:`GraphvizNotFoundError` with install
instructions instead of the ``graphviz`` package's ``ExecutableNotFound``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings

import graphviz

from ..errors import GraphvizNotFoundError, RenderError, located, user_source

DEFAULT_TIMEOUT = 60.0

# Suffixes whose format is the DOT text itself: writing them never runs dot.
SOURCE_FORMATS = ("dot", "gv")
IMAGE_FORMATS = ("svg", "png", "pdf", "jpg", "jpeg", "gif", "ps", "eps", "json", "xdot", "plain")
# Formats of a fixed pixel size: Graphviz shrinks a large picture to fit them.
BITMAP_FORMATS = ("png", "jpg", "jpeg", "gif", "bmp", "tif", "tiff", "webp")


class GraphvizWarning(UserWarning):
    """Graphviz laid the picture out but said something on the way (shown, never hidden)."""

INSTALL_HINT = (
    "Graphviz's `dot` program was not found on PATH; it is needed to lay out the picture. "
    "Install Graphviz: `apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS), "
    "`conda install graphviz` (conda), or see https://graphviz.org/download/. "
    "Without it, `.source` (or saving to a .dot file) still gives the DOT text, "
    "and `print(program)` shows the program as text.")


def require_dot(engine: str = "dot") -> str:
    """The path of Graphviz's ``engine`` program; raises :class:`GraphvizNotFoundError` if absent."""
    path = shutil.which(engine)
    if path is None:
        raise GraphvizNotFoundError(INSTALL_HINT.replace("`dot`", f"`{engine}`"))
    return path


def layout(source: str, fmt: str = "svg", *, engine: str = "dot", timeout: float | None = DEFAULT_TIMEOUT,
           size_hint: str = "") -> bytes:
    """Run Graphviz on DOT ``source`` and return the ``fmt`` output bytes.

    Raises :class:`GraphvizNotFoundError` without ``dot``, :class:`RenderError`
    when Graphviz fails or exceeds ``timeout`` seconds.

    Example:
        >>> layout("digraph { a -> b }", "svg")[:5]  # doctest: +SKIP
        b'<?xml'
    """
    exe = require_dot(engine)
    try:
        proc = subprocess.run([exe, f"-T{fmt}"], input=source.encode("utf-8"), capture_output=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RenderError(
            f"render: Graphviz did not finish laying out the graph{size_hint} within {timeout} s; "
            f"collapse name scopes with depth=..., lower max_nodes=..., or pass a larger timeout=") from None
    except FileNotFoundError:  # removed between the which() and the run
        raise GraphvizNotFoundError(INSTALL_HINT) from None
    message = proc.stderr.decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        raise RenderError(f"render: Graphviz failed to produce {fmt!r}{size_hint}: {message[:2000]}")
    scaled = re.search(r"Scaling by ([0-9.]+)", message)
    if scaled and fmt.split(":")[0] in BITMAP_FORMATS:
        raise RenderError(
            f"render: the picture{size_hint} is too large for a {fmt.split(':')[0].upper()} bitmap: Graphviz "
            f"would shrink it by {float(scaled.group(1)):.2f} to fit, leaving its text illegible. Write SVG or "
            f"PDF instead (no size limit), or collapse name scopes with depth=... (--depth on the command line)")
    if message:
        warnings.warn(f"Graphviz ({fmt}{size_hint}): {message[:2000]}", GraphvizWarning, stacklevel=2)
    return proc.stdout


def check_path(path, caller: str = "render") -> str:
    """``path`` as a str; a path that is none (3, None) is refused at the user's line, not by os.fspath's TypeError."""
    if not isinstance(path, (str, os.PathLike)):
        raise RenderError(f"{caller}: the file to write must be a path (str or pathlib.Path) such as 'out/f.svg', "
                          f"got {type(path).__name__} {path!r}{located(user_source())}")
    return os.fspath(path)


def check_target(path: str, caller: str) -> None:
    """Refuse, before any layout, a file name that is a directory (``out/``, or a folder that exists)."""
    if path.endswith((os.sep, "/")) or os.path.isdir(path):
        raise RenderError(f"{caller}: cannot write {path!r}: it is a directory; give a file name in it, "
                          f"e.g. {os.path.join(path, 'graph.svg')!r}")


def write_file(path: str, data, caller: str = "render") -> str:
    """Write ``data`` (bytes or str, UTF-8) to ``path``, creating its folder; returns ``path``.

    An existing file is replaced (as ``graphviz`` and ``savefig`` do). A path that cannot be
    written (a folder on the way that is a file, a directory, no permission) raises
    :class:`RenderError` naming the path and what to do, never a bare ``OSError``.
    """
    check_target(path, caller)
    try:
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as exc:
        raise RenderError(f"{caller}: cannot write {path!r}: {_why(path, exc)}") from None
    return path


def make_folder(directory: str, caller: str) -> str:
    """``os.makedirs(directory, exist_ok=True)``, an ``OSError`` raised as :class:`RenderError`."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise RenderError(f"{caller}: cannot make the folder {directory!r}: {_why(directory, exc)}") from None
    return directory


def _why(path: str, exc: OSError) -> str:
    # The part of the path that is a file, where a folder is needed (makedirs says only "File exists").
    head = os.path.dirname(os.path.abspath(path)) if not isinstance(exc, FileExistsError) else os.path.abspath(path)
    while head and not os.path.exists(head) and os.path.dirname(head) != head:
        head = os.path.dirname(head)
    if isinstance(exc, (FileExistsError, NotADirectoryError)) and os.path.isfile(head):
        return f"{head!r} is a file, not a folder; choose another folder, or move that file away"
    if isinstance(exc, IsADirectoryError):
        return f"it is a directory; give a file name in it, e.g. {os.path.join(path, 'graph.svg')!r}"
    if isinstance(exc, PermissionError):
        return "permission denied; choose a folder you can write to"
    return f"{exc.strerror or exc}; choose another path"


def format_from_path(path, format: str | None = None) -> str:
    """The output format: ``format`` if given, else the file suffix (``out.svg`` -> ``svg``)."""
    path = check_path(path)
    if format:
        if not isinstance(format, str) or format.lower().split(":")[0] not in SOURCE_FORMATS + IMAGE_FORMATS:
            # Graphviz would be run first, then fail with a list of its 60 formats.
            raise RenderError(f"render: unknown output format {format!r} (format=) for {path!r}; use one of "
                              f"{', '.join(SOURCE_FORMATS + IMAGE_FORMATS)}")
        return format.lower()
    suffix = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    if not suffix:
        raise RenderError(f"render: cannot tell the format of {os.fspath(path)!r}: give it a suffix "
                          f"(.svg, .png, .pdf, .dot) or pass format=")
    if suffix not in SOURCE_FORMATS + IMAGE_FORMATS:
        raise RenderError(f"render: unknown output format {suffix!r} for {os.fspath(path)!r}; "
                          f"use one of {', '.join(SOURCE_FORMATS + IMAGE_FORMATS)}")
    return suffix


class RenderedGraph(graphviz.Digraph):
    """A ``graphviz.Digraph`` of a program, with a layout ``timeout`` and clear errors.

    Everything of ``graphviz.Digraph`` works (``.source``, ``.pipe()``,
    Jupyter display). Differences: ``.render("out.svg")`` writes that file in
    the format of its suffix (``.dot`` writes the source, without Graphviz);
    laying out is stopped after ``timeout`` seconds; a missing ``dot`` raises
    :class:`GraphvizNotFoundError` explaining how to install Graphviz.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> g = ad.render(ad.trace(ad.exp, np.ones(2)))
        >>> g.source.startswith("digraph")
        True
    """

    def __init__(self, *args, timeout: float | None = DEFAULT_TIMEOUT, **kwargs):
        super().__init__(*args, **kwargs)
        self.timeout = timeout

    def _copy_kwargs(self, **kwargs):
        kwargs.setdefault("timeout", self.timeout)
        return super()._copy_kwargs(**kwargs)

    def _size_hint(self) -> str:
        nodes = sum(1 for line in self.body if "[" in line and "->" not in line)
        return f" (about {nodes} nodes)"

    def pipe(self, format=None, renderer=None, formatter=None, neato_no_op=None, quiet=False, *,
             engine=None, encoding=None):
        """The laid-out graph as bytes (or str with ``encoding``), in ``format`` (default svg)."""
        fmt = (format or "svg").lower()
        if fmt in SOURCE_FORMATS:
            data = self.source.encode("utf-8")
        else:
            full = ":".join(x for x in (fmt, renderer, formatter) if x)
            data = layout(self.source, full, engine=engine or self.engine, timeout=self.timeout,
                          size_hint=self._size_hint())
        return data.decode(encoding) if encoding else data

    def render(self, filename=None, directory=None, view=False, cleanup=False, format=None, *args,
               outfile=None, **kwargs):
        """Write the picture: ``render("out.svg")`` writes ``out.svg`` in the format of its suffix.

        ``directory`` is joined in front; ``view`` opens the file; no DOT source
        is left beside it. A name whose suffix is not a format (``out.xyz``, ``out``)
        is refused, naming the formats, unless ``format=`` is given: then, as
        ``graphviz.Digraph.render``, the source goes to ``filename`` and the
        picture to ``filename.format``. Returns the path written.
        Example: ``ad.render(program).render("out.svg")``.
        """
        suffix = None if filename is None else os.path.splitext(check_path(filename))[1].lstrip(".").lower()
        if suffix is not None and suffix not in SOURCE_FORMATS + IMAGE_FORMATS and format is None:
            # graphviz would write the source to this name and the picture to name.pdf, silently
            raise RenderError(f"render: cannot tell the format of {os.fspath(filename)!r}: give it one of the "
                              f"suffixes {', '.join('.' + f for f in IMAGE_FORMATS + SOURCE_FORMATS)}, or "
                              f"pass format= (graphviz's form: the source to the name, the picture to "
                              f"name.format){located(user_source())}")
        if suffix in SOURCE_FORMATS + IMAGE_FORMATS and not args and outfile is None and not kwargs:
            path = save(self, os.path.join(os.fspath(directory), os.fspath(filename)) if directory else filename,
                        format=format)
            if view:
                graphviz.view(path)
            return path
        if suffix in IMAGE_FORMATS and outfile is None:
            # graphviz's own options (engine=, renderer=, ...): still the picture at the name, no source left
            outfile = os.path.join(os.fspath(directory), os.fspath(filename)) if directory else filename
            filename, directory, cleanup = None, None, True
        require_dot(kwargs.get("engine") or self.engine)
        try:
            # Keywords only: graphviz deprecates passing these positionally.
            kwargs.update(zip(("renderer", "formatter", "neato_no_op", "quiet", "quiet_view"), args))
            return super().render(filename, directory=directory, view=view, cleanup=cleanup,
                                  format=format, outfile=outfile, **kwargs)
        except graphviz.ExecutableNotFound:
            raise GraphvizNotFoundError(INSTALL_HINT) from None
        except OSError as exc:
            where = exc.filename or outfile or filename
            raise RenderError(f"render: cannot write {where!r}: {_why(os.fspath(where), exc)}") from None

    def save(self, filename=None, directory=None, *, skip_existing=False):
        """``save("model.html")`` writes the interactive view (:func:`~autograd_dag.render.api.render_html`)
        of the program drawn; any other name, as ``graphviz``, the DOT source. Returns the path."""
        path = filename if directory is None or filename is None else os.path.join(os.fspath(directory),
                                                                                   os.fspath(filename))
        if path is not None and os.fspath(path).lower().endswith(".html") and hasattr(self, "html_view"):
            return self.html_view().save(path)
        try:
            return super().save(filename, directory=directory, skip_existing=skip_existing)
        except OSError as exc:
            where = exc.filename or path
            raise RenderError(f"save: cannot write {where!r}: {_why(os.fspath(where), exc)}") from None

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        # Jupyter must not show a traceback for a missing dot: text instead.
        if shutil.which(self.engine) is None:
            return {"text/plain": INSTALL_HINT}
        return super()._repr_mimebundle_(include=include, exclude=exclude, **kwargs)


def save(graph: graphviz.Digraph, path, *, format: str | None = None, timeout: float | None = None) -> str:
    """Write ``graph`` to ``path`` in the format of its suffix (svg, png, pdf, dot...); returns the path.

    ``.dot``/``.gv`` write the DOT source and need no Graphviz.

    Example:
        >>> import numpy as np, autograd_dag as ad, tempfile, os
        >>> g = ad.render(ad.trace(ad.exp, np.ones(2)))
        >>> save(g, os.path.join(tempfile.mkdtemp(), "exp.dot")).endswith("exp.dot")
        True
    """
    path = check_path(path)
    check_target(path, "render")
    fmt = format_from_path(path, format)
    if fmt in SOURCE_FORMATS:
        data = graph.source.encode("utf-8")
    else:
        t = timeout if timeout is not None else getattr(graph, "timeout", DEFAULT_TIMEOUT)
        hint = graph._size_hint() if isinstance(graph, RenderedGraph) else ""
        data = layout(graph.source, fmt, engine=graph.engine, timeout=t, size_hint=hint)
    return write_file(path, data)
