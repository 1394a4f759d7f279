"""Axis names for the picture: programs recorded with named tensors draw ``seq:5 × layer:8``, not ``[5,8]``.

Programs hold primitives, which know nothing about names. The named-tensor
layer (:mod:`autograd_dag.named`, above the renderer) keeps, for each program it
builds, which node's axes carry which names; when imported it gives the
renderer the function that reads its table (:func:`register_axis_names`), and
``render`` asks it through :func:`axis_names` (or takes ``axes=`` explicitly).
A program nobody has names for is drawn with plain shapes.
"""

from __future__ import annotations

from typing import Callable

_SOURCES: list[Callable] = []


def register_axis_names(source: Callable) -> None:
    """The hook a layer above uses to name axes in pictures: ``render`` will ask ``source(program)``.

    ``source`` takes a Program and returns ``{node index: axis names}`` (a tuple
    of names per axis; empty when it knows none). :mod:`autograd_dag.named`
    registers its table this way; registering the same source again does nothing.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> from autograd_dag.named.transforms import attach_axes, program_axes
        >>> program_axes in _SOURCES   # registered when autograd_dag.named was imported
        True
        >>> prog = ad.trace(ad.exp, np.ones((2, 3)))
        >>> attach_axes(prog, {1: ("seq", "layer")})
        >>> axis_names(prog)[1], axis_names(ad.trace(ad.exp, np.ones(2)))
        (('seq', 'layer'), {})
    """
    if source not in _SOURCES:
        _SOURCES.append(source)


def axis_names(program) -> dict:
    """``{node index: axis names}`` of ``program``: the first registered source that knows any (empty if none).

    Shapes: one tuple of names per node that has them, as long as that node's shape.
    """
    for source in _SOURCES:
        found = source(program)
        if found:
            return found
    return {}


def axes_shape_str(shape, names) -> str:
    """``seq:64 × layer:128`` for a shape and its axis names (``scalar`` for none).

    Example:
        >>> axes_shape_str((64, 128), ("seq", "layer"))
        'seq:64 × layer:128'
    """
    return " \u00d7 ".join(f"{n}:{d}" for n, d in zip(names, shape)) or "scalar"
