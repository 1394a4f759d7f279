"""A built-in primitive applied through its public function, the form a user writes.

``ad.sum(x, axis=-1)`` records the primitive ``sum`` with ``axis=(1,)`` and
``keepdims=False``: the public function puts the parameters in the form the
primitive's derivative and ``vmap`` rules read. A primitive applied with the
user's form (calling the object, ``ad.PRIMITIVES["flip"](x, axis=-1)``, or
naming it in a hand-built DAG, ``Program.from_graph``) computed the value but
broke the gradient, and under ``vmap`` flipped the batch axis instead. Both
routes come here. Bottom layer: nothing of the core is imported; the result is
recognised by its ``prim`` and ``parents``.
"""
from __future__ import annotations

import inspect
import sys
from typing import Callable

from .errors import AutogradDagError

# (primitive, operand count) -> (public function, whether it takes the operands as one list) or None.
_resolved: dict = {}


def through_public_function(prim, operands, params: dict):
    """``prim`` applied to ``operands`` by its public function (``sum`` for ``sum``), or None.

    None when the primitive has no public function of the same parameters, or
    when that function's result is not this primitive applied to these operands
    (``ad.sum(x, axis=())`` is ``x`` itself): the caller then applies ``prim`` as given.
    """
    key = (prim, len(operands))
    entry = _resolved.get(key, False)
    if entry is False:
        entry = _resolved[key] = _public_function(prim, len(operands))
    if entry is None:
        return None
    public, as_list = entry
    try:
        out = public(list(operands), **params) if as_list else public(*operands, **params)
    except TypeError as exc:  # its signature differs from the primitive's parameters: apply it raw
        if isinstance(exc, AutogradDagError):  # (the library's own, a user's mistake: say it)
            raise
        return None
    parents = getattr(out, "parents", None)
    # Each parent is its operand, or (an ndarray or number given) a constant Tensor made of it.
    if (getattr(out, "prim", None) is prim and parents is not None and len(parents) == len(operands)
            and all(p is x or type(p) is not type(x) for p, x in zip(parents, operands))):
        return out
    return None


def _public_function(prim, n: int) -> tuple | None:
    """The public function of ``prim`` taking ``n`` operands where the primitive does, or None."""
    module_name = getattr(prim.impl, "__module__", None) or ""
    if not module_name.startswith(__package__ + "."):
        return None  # a user's primitive: a function of that name in their module may be anything
    public = getattr(sys.modules.get(module_name), prim.name, None)
    if not callable(public) or public is prim.impl or type(public) is type(prim):
        return None
    # The operands must land on the same parameters in both: ad.concatenate(tensors, axis)
    # would read a second operand as its axis. A primitive taking any number of operands
    # (concatenate's *xs) is the public function given them as one list.
    if _takes_any_number(prim.impl):
        return (public, True) if _positional_names(public, 1) is not None else None
    names = _positional_names(prim.impl, n)
    return (public, False) if names is not None and names == _positional_names(public, n) else None


def _positional_names(fn: Callable, n: int) -> list[str] | None:
    """The names of ``fn``'s first ``n`` parameters if each takes one positional argument, else None."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())[:n]
    except (TypeError, ValueError):
        return None
    if len(parameters) < n or any(q.kind not in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD) for q in parameters):
        return None
    return [q.name for q in parameters]


def _takes_any_number(fn: Callable) -> bool:
    """Whether ``fn``'s first parameter is ``*args``."""
    try:
        first = next(iter(inspect.signature(fn).parameters.values()), None)
    except (TypeError, ValueError):
        return False
    return first is not None and first.kind is first.VAR_POSITIONAL
