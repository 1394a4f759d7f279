"""Axis names for the picture: programs recorded with named tensors draw ``seq:5 × layer:8``, not ``[5,8]``.

Programs hold primitives, which know nothing about names. The named-tensor
layer (:mod:`autograd_dag.named`) records, for a program it builds, which
node's axes carry which names, and attaches that table here; ``render`` reads
it (or takes ``axes=`` explicitly). A program without a table is drawn as before.
"""

from __future__ import annotations

import weakref

_ATTACHED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def attach_axes(program, axes: dict) -> None:
    """Record ``{node index: axis names}`` for ``program`` (kept as long as the program lives).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(ad.exp, np.ones((2, 3)))
        >>> attach_axes(prog, {0: ("seq", "layer"), 1: ("seq", "layer")})
        >>> program_axes(prog)[1]
        ('seq', 'layer')
    """
    _ATTACHED[program] = {int(k): tuple(v) for k, v in axes.items()}


def program_axes(program) -> dict:
    """The ``{node index: axis names}`` attached to ``program`` (empty if none)."""
    try:
        return _ATTACHED.get(program, {})
    except TypeError:
        return {}


def axes_shape_str(shape, names) -> str:
    """``seq:64 × layer:128`` for a shape and its axis names (``scalar`` for none).

    Example:
        >>> axes_shape_str((64, 128), ("seq", "layer"))
        'seq:64 × layer:128'
    """
    return " \u00d7 ".join(f"{n}:{d}" for n, d in zip(names, shape)) or "scalar"
