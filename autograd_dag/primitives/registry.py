"""The table of primitives by name, and ``defprim`` which fills it.

Adding a primitive means one ``defprim`` call in its family module and one
line in the test table of its family (``tests/cases_<family>.py``, e.g.
``tests/cases_elementwise.py``); nothing else changes.
"""

from __future__ import annotations

import warnings
from typing import Callable

from ..core import Primitive
from ..errors import AutogradDagError, user_source, where

PRIMITIVES: dict[str, Primitive] = {}
# Names defined through ad.primitive (a user's): these may be redefined, as a
# re-run notebook cell does; the built-ins may not be shadowed.
USER_PRIMITIVES: set[str] = set()
# The kinds of program nodes that are not primitives (``ProgramNode.op``).
RESERVED = frozenset({"input", "constant", "parameter"})


def defprim(name: str, impl: Callable, *, vjp: Callable | tuple | None = None, jvp: Callable | None = None,
            shape: Callable | None = None, nondiff: tuple[int, ...] = (), linear: bool = False,
            replace: bool = False, user: bool = False, batch: Callable | None = None) -> Primitive:
    """Create a :class:`Primitive`, register it under ``name`` and return it.

    ``user=True`` (``ad.primitive``) marks a user's primitive: defining one
    again under the same name replaces it with a warning (``replace=True``
    silences the warning). A built-in name is never shadowed by a user.
    """
    if name in RESERVED:
        raise AutogradDagError(f"ad.primitive: {name!r} names a kind of program node (input, constant, "
                               f"parameter); pick another name")
    if name in PRIMITIVES and not replace:
        if not user:
            raise AutogradDagError(f"a built-in primitive named {name!r} is defined twice")
        if name not in USER_PRIMITIVES:
            raise AutogradDagError(f"ad.primitive: {name!r} is a built-in primitive and cannot be "
                                   f"redefined; pick another name")
        warnings.warn(f"ad.primitive: redefining primitive {name!r} (pass replace=True to say it is "
                      f"meant){where(user_source())}", stacklevel=2)
    elif name in PRIMITIVES and name not in USER_PRIMITIVES and user:
        raise AutogradDagError(f"ad.primitive: {name!r} is a built-in primitive and cannot be "
                               f"redefined; pick another name")
    prim = Primitive(name, impl, vjp=vjp, jvp=jvp, shape=shape, nondiff=nondiff, linear=linear, batch=batch)
    PRIMITIVES[name] = prim
    if user:
        USER_PRIMITIVES.add(name)
    return prim
