"""The table of primitives by name, and ``defprim`` which fills it.

Adding a primitive means one ``defprim`` call in its family module and one
line in the test table of its family (``tests/cases_<family>.py``, e.g.
``tests/cases_elementwise.py``); nothing else changes.
"""

from __future__ import annotations

from typing import Callable

from ..core import Primitive
from ..errors import AutogradDagError

PRIMITIVES: dict[str, Primitive] = {}


def defprim(name: str, impl: Callable, *, vjp: Callable | tuple | None = None, jvp: Callable | None = None,
            shape: Callable | None = None, nondiff: tuple[int, ...] = (), linear: bool = False,
            replace: bool = False) -> Primitive:
    """Create a :class:`Primitive`, register it under ``name`` and return it.

    ``replace=True`` allows a user to redefine a custom primitive; built-in
    names are never silently shadowed.
    """
    if name in PRIMITIVES and not replace:
        raise AutogradDagError(f"defprim: a primitive named {name!r} already exists; "
                               f"pick another name or pass replace=True")
    prim = Primitive(name, impl, vjp=vjp, jvp=jvp, shape=shape, nondiff=nondiff, linear=linear)
    PRIMITIVES[name] = prim
    return prim
