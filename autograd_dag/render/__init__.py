"""Graphviz pictures of programs: the DAG view and the bipartite view (seed 001 §4.1.3).

``render(obj, view="dag" | "bipartite", ...)`` returns a ``graphviz.Digraph``
(a :class:`RenderedGraph`) of a Program, an output Tensor or a gradient
program. Modules: :mod:`.labels` (escaping, label text), :mod:`.styles`
(roles, colours, legend), :mod:`.collapse` (constant inlining, scope
collapse, folding repeats), :mod:`.dag` and :mod:`.bipartite` (the views),
:mod:`.layout` (keeping Graphviz fast), :mod:`.drill` (one scope's picture, linked sites),
:mod:`.emit` (DOT), :mod:`.output`
(files, ``dot`` checks). The gallery in ``viz/`` is built by ``autograd_dag.gallery``.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> prog = ad.trace(lambda x1, x2: x2 * ad.exp(x1), 1.0, 2.0)
    >>> ad.render(prog).source.count("->")
    3
"""

import shutil
import subprocess

import graphviz

from ..errors import AutogradDagError
from ..displays import register_display
from ..program import Program
from .api import as_program, highlight_path, render, render_html, render_site, render_to
from .output import RenderedGraph, save


def _picture(program: Program, wanted) -> dict:
    """A Program's Jupyter view beside its listing: its DAG as SVG, when ``dot`` exists (registered with
    :func:`~autograd_dag.program.register_display`)."""
    # A frontend that leaves SVG out (a text-only export) must not wait for a layout.
    if not wanted("image/svg+xml") or shutil.which("dot") is None or len(program.nodes) > 2000:
        return {}
    try:
        return {"image/svg+xml": render(program).pipe(format="svg").decode("utf-8")}
    except (AutogradDagError, graphviz.ExecutableNotFound, graphviz.CalledProcessError,
            subprocess.TimeoutExpired, OSError):
        return {}  # the display falls back to the text listing


register_display(_picture)

__all__ = ["render", "render_to", "render_site", "render_html", "highlight_path", "as_program", "RenderedGraph", "save"]
