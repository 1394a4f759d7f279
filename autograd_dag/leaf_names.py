"""Names of leaves frozen when they are read: a name scope that carries them.

A module's parameters are named by their path from the module the user
called (``layers.0.weight``), and the same Parameter is named differently
through another module (``inner.layers.0.weight`` once wrapped). A picture of a
graph must show the name the parameter had when the graph was recorded, not
the latest: so the module call records the names with the scope every node
made inside it already carries (no cost per operation), and a program reads a
leaf's name from the scope of the first node that read it.
"""

from __future__ import annotations

__all__ = ["NamedScope", "leaf_name"]


class NamedScope(tuple):
    """A name scope (a tuple of scope names) carrying ``names``: ``{id(leaf): (leaf, name)}``.

    Nested scopes keep the names (``scope + ("block",)`` is a NamedScope);
    otherwise it is the plain tuple it equals (hash, comparison, slicing, repr).
    Pickled, it is that plain tuple.

    Example:
        >>> import autograd_dag as ad
        >>> from autograd_dag.leaf_names import NamedScope, leaf_name
        >>> w = ad.Tensor([1.0], requires_grad=True, name="weight")
        >>> scope = NamedScope(("net",), {id(w): (w, "layers.0.weight")}) + ("layers.0",)
        >>> scope, leaf_name(w, scope), leaf_name(w, ("net",))
        (('net', 'layers.0'), 'layers.0.weight', 'weight')
    """

    def __new__(cls, scope, names: dict):
        self = super().__new__(cls, scope)
        self.names = names
        return self

    def __add__(self, other):
        return NamedScope(tuple.__add__(self, other), self.names)

    def __reduce__(self):
        return tuple, (tuple(self),)


def leaf_name(leaf, scope) -> str | None:
    """The name of ``leaf`` as a node recorded in ``scope`` read it: the scope's name for it, else ``leaf.name``.

    ``leaf`` is a Tensor of any shape; ``scope`` a node's scope (a plain tuple carries no names).
    Example: ``leaf_name(w, ("net",))`` is ``w.name``; see :class:`NamedScope` for one that carries names.
    """
    if type(scope) is NamedScope:
        hit = scope.names.get(id(leaf))
        if hit is not None and hit[0] is leaf:
            return hit[1]
    return leaf.name
