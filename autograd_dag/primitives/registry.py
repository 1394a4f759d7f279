"""The table of primitives by name, ``defprim`` which fills it, and ``primitive`` for users.

Adding a primitive means one ``defprim`` call (``defelementwise`` for an elementwise one,
from its partial derivatives) in its family module and one
line in the test table of its family (``tests/cases_<family>.py``, e.g.
``tests/cases_elementwise.py``); nothing else changes.
"""

from __future__ import annotations

import warnings
from typing import Callable

from ..core import Primitive, apply
from ..errors import AutogradDagError, user_source, located

PRIMITIVES: dict[str, Primitive] = {}
# Names defined through ad.primitive (a user's): these may be redefined, as a
# re-run notebook cell does; the built-ins may not be shadowed.
USER_PRIMITIVES: set[str] = set()
# In a primitive's ``reads``, beside input positions: its derivative rules read the output's value.
OUT = "out"


def defprim(name: str, impl: Callable, *, vjp: Callable | tuple | None = None, jvp: Callable | None = None,
            shape: Callable | None = None, nondiff: tuple[int, ...] = (),
            replace: bool = False, user: bool = False, batch: Callable | None = None,
            vjp_into: Callable | None = None, reads: tuple | None = None,
            partials: tuple | None = None) -> Primitive:
    """Create a :class:`Primitive`, register it under ``name`` and return it.

    ``user=True`` (``ad.primitive``) marks a user's primitive: defining one
    again under the same name replaces it with a warning (``replace=True``
    silences the warning). A built-in name is never shadowed by a user.
    ``reads``: the input positions whose numbers the derivative rules read,
    and :data:`OUT` if they read the output (default all): an ndarray
    operand elsewhere is not copied on record. ``partials``: the declaration
    an elementwise primitive's rules were derived from
    (:func:`~autograd_dag.primitives.elementwise.defelementwise`).
    """
    if name in PRIMITIVES and not replace:
        if not user:
            raise AutogradDagError(f"a built-in primitive named {name!r} is defined twice")
        if name not in USER_PRIMITIVES:
            raise AutogradDagError(f"ad.primitive: {name!r} is a built-in primitive and cannot be "
                                   f"redefined; pick another name")
        warnings.warn(f"ad.primitive: redefining primitive {name!r} (pass replace=True to say it is "
                      f"meant){located(user_source())}", stacklevel=2)
    elif name in PRIMITIVES and name not in USER_PRIMITIVES and user:
        raise AutogradDagError(f"ad.primitive: {name!r} is a built-in primitive and cannot be "
                               f"redefined; pick another name")
    prim = Primitive(name, impl, vjp=vjp, jvp=jvp, shape=shape, nondiff=nondiff, batch=batch,
                     vjp_into=vjp_into, reads=reads, partials=partials)
    PRIMITIVES[name] = prim
    if user:
        USER_PRIMITIVES.add(name)
    return prim


def primitive(name: str, impl: Callable | None = None, *, vjp: Callable | None = None,
              jvp: Callable | None = None, shape: Callable | None = None,
              nondiff: tuple[int, ...] = (), replace: bool = False):
    """Define a new primitive with its own rules; returns the function that applies it.

    ``impl(*arrays, **params)`` computes the value with numpy;
    ``vjp(ct, out, *inputs, **params)`` returns one cotangent per input and
    ``jvp(tangents, out, *inputs, **params)`` the output tangent, both with
    ad operations (so that they differentiate again: a rule written with
    numpy works at first order and is refused, with a message naming the
    primitive, at second). Usable as a decorator:
    ``@ad.primitive("cube", vjp=..., jvp=...)``. Defining a name again
    (a re-run notebook cell) replaces the earlier primitive with a warning;
    ``replace=True`` silences it. Built-in names cannot be redefined.
    Shapes: whatever ``impl`` takes and returns; the optional rule
    ``shape(*inputs, **params) -> (shape, dtype)`` states it, to explain a failed call.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> cube = ad.primitive("cube_doc", lambda x: x ** 3,
        ...     vjp=lambda ct, out, x: (ct * 3.0 * x * x,),
        ...     jvp=lambda t, out, x: t[0] * 3.0 * x * x)
        >>> float(ad.grad(lambda x: cube(x))(2.0))
        12.0
    """
    # Checked here, before anything is registered: a rule that is not a function would
    # otherwise fail only when differentiated, far from its definition.
    if not isinstance(name, str) or not name:
        raise AutogradDagError(f"ad.primitive: the name must be a non-empty string, got {name!r}"
                               f"{located(user_source())}")
    for what, rule in (("vjp", vjp), ("jvp", jvp), ("shape", shape)):
        rules = rule if what == "vjp" and isinstance(rule, (tuple, list)) else (rule,)
        if any(r is not None and not callable(r) for r in rules):
            raise AutogradDagError(f"ad.primitive({name!r}): {what} must be a function (or None), got "
                                   f"{rule!r}{located(user_source())}")

    def make(fn: Callable):
        if not callable(fn):
            raise AutogradDagError(f"ad.primitive({name!r}): the implementation must be a function, got "
                                   f"{fn!r}{located(user_source())}")
        prim = defprim(name, fn, vjp=vjp, jvp=jvp, shape=shape, nondiff=nondiff, replace=replace,
                       user=True)

        def op(*args, **params):
            return apply(prim, *args, **params)
        op.__name__ = name
        op.__doc__ = fn.__doc__
        op.prim = prim
        return op
    return make if impl is None else make(impl)
