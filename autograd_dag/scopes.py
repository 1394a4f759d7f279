"""Name scopes and attribution: the ``scope`` and ``source`` every recorded node is stamped with.

:func:`name_scope` opens a named scope (the layer library opens one per module
call; the renderer draws them as clusters). While a derivative rule records
(``create_graph``), the sweeps attribute its nodes to the forward node being
differentiated (:func:`attributed_to`, :func:`attribute`), so that a gradient
program's nodes point at the user's line and layer. ``core.apply`` reads the
two fields below (this thread's modes, ``modes.py``) on every operation; only
this module writes them: ``scope``, the names in force, and ``source_override``,
while a derivative rule records (create_graph) the forward node's source line
its nodes are attributed to (None: the user's line).
"""

from __future__ import annotations

import contextlib

from .modes import _per_thread


@contextlib.contextmanager
def name_scope(name: str):
    """Context manager: nodes recorded inside carry ``name`` in their scope.

    Scopes nest (``("encoder", "layer0", "attention")``); the renderer draws
    them as clusters and the layer library opens one per module call. A scope
    is the calling thread's (modes.py).

    Example:
        >>> import autograd_dag as ad
        >>> with ad.name_scope("block"):
        ...     y = ad.Tensor([1.0]) + 1
        >>> y.scope
        ('block',)
    """
    m = _per_thread.modes
    previous = m.scope
    m.scope = previous + (str(name),)
    try:
        yield
    finally:
        m.scope = previous


@contextlib.contextmanager
def attributed_to(source, scope: tuple[str, ...]):
    """Context manager: nodes recorded inside get ``source`` and ``scope`` (those of a forward node).

    The differentiation sweeps use it so that a gradient program's nodes point
    at the user's line (and layer) whose derivative they compute.
    """
    m = _per_thread.modes
    previous = m.source_override, m.scope
    m.source_override, m.scope = source, scope
    try:
        yield
    finally:
        m.source_override, m.scope = previous


def attribute(source, scope: tuple[str, ...]) -> tuple:
    """Attribute the nodes recorded from now on to ``source`` and ``scope``; returns the previous pair.

    The reverse sweep calls it once per node it differentiates (a context
    manager per node would cost more than many rules); it restores the
    returned pair when it is done.
    """
    m = _per_thread.modes
    previous = m.source_override, m.scope
    m.source_override, m.scope = source, scope
    return previous


def attribution() -> tuple:
    """The ``(source, scope)`` pair new nodes are attributed to (source None: the caller's line)."""
    m = _per_thread.modes
    return m.source_override, m.scope


def current_scope() -> tuple[str, ...]:
    """The tuple of ``name_scope`` names in force, outermost first.

    Example:
        >>> import autograd_dag as ad
        >>> with ad.name_scope("encoder"), ad.name_scope("layer0"):
        ...     ad.current_scope()
        ('encoder', 'layer0')
    """
    return _per_thread.modes.scope
