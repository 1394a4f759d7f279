"""Graphviz pictures of programs: the DAG view and the bipartite view (seed 001 §4.1.3).

``render(obj, view="dag" | "bipartite", ...)`` returns a ``graphviz.Digraph``
(a :class:`RenderedGraph`) of a Program, an output Tensor or a gradient
program. Modules: :mod:`.labels` (escaping, label text), :mod:`.styles`
(roles, colours, legend), :mod:`.collapse` (constant inlining, scope
collapse, folding repeats), :mod:`.dag` and :mod:`.bipartite` (the views),
:mod:`.layout` (keeping Graphviz fast), :mod:`.emit` (DOT), :mod:`.output`
(files, ``dot`` checks). The gallery in ``viz/`` is built by ``autograd_dag.gallery``.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> prog = ad.trace(lambda x1, x2: x2 * ad.exp(x1), 1.0, 2.0)
    >>> ad.render(prog).source.count("->")
    3
"""

from .api import as_program, highlight_path, render, render_to
from .output import RenderedGraph, save

__all__ = ["render", "render_to", "highlight_path", "as_program", "RenderedGraph", "save"]
