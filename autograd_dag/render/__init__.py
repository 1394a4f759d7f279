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
from ..program import Program
from .api import as_program, highlight_path, render, render_html, render_site, render_to
from .output import RenderedGraph, save

_program_text_bundle = Program._repr_mimebundle_


def _program_mimebundle(self, include=None, exclude=None):
    """Jupyter display of a Program: its DAG as SVG (when ``dot`` exists) beside the text listing,
    each only when ``include``/``exclude`` (MIME types, as IPython passes them) let it in."""
    bundle = _program_text_bundle(self, include, exclude)
    if include is not None:
        bundle = {k: v for k, v in bundle.items() if k in include}
    if exclude is not None:
        bundle = {k: v for k, v in bundle.items() if k not in exclude}
    # A frontend that leaves SVG out (a text-only export) must not wait for a layout.
    wanted = (include is None or "image/svg+xml" in include) and not (exclude and "image/svg+xml" in exclude)
    if wanted and shutil.which("dot") is not None and len(self.nodes) <= 2000:
        try:
            bundle["image/svg+xml"] = render(self).pipe(format="svg").decode("utf-8")
        except (AutogradDagError, graphviz.ExecutableNotFound, graphviz.CalledProcessError,
                subprocess.TimeoutExpired, OSError):
            pass  # the display falls back to the text listing
    return bundle


Program._repr_mimebundle_ = _program_mimebundle

__all__ = ["render", "render_to", "render_site", "render_html", "highlight_path", "as_program", "RenderedGraph", "save"]
