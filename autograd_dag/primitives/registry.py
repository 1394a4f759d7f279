"""The table of primitives by name, ``defprim`` which fills it, and ``primitive`` for users.

Adding a primitive means one ``defprim`` call (``defelementwise`` for an elementwise one,
from its partial derivatives) in its family module and one
line in the test table of its family (``tests/cases_<family>.py``, e.g.
``tests/cases_elementwise.py``); nothing else changes.

A derivative is stated once. A *linear* primitive (reshape, getitem, sum,
concatenate, ...) declares only its ``transpose``: its JVP is the primitive
itself applied to the tangents and its VJP the transpose applied to the
cotangent (JAX's ``deflinear``, HIPS autograd's ``def_linear``). A *bilinear*
one (matmul, conv2d, ...) declares the transpose in each operand and
``bilinear=True``: its JVP is f(ṫx, y) + f(x, ṫy) (JAX's ``defbilinear``).
The rest give ``vjp`` and ``jvp`` by hand. See :func:`linear_rules`.
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np

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
            transpose: Callable | tuple | None = None, bilinear: bool = False,
            partials: tuple | None = None) -> Primitive:
    """Create a :class:`Primitive`, register it under ``name`` and return it.

    ``transpose`` (with ``bilinear``) declares a linear or bilinear primitive,
    whose VJP and JVP follow from it (:func:`linear_rules`); ``jvp`` may still
    be given to replace the derived one (an affine primitive: pad with a constant).

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
    if transpose is not None:
        if vjp is not None:
            raise AutogradDagError(f"primitive {name!r}: give its transpose or its VJP, not both")
        vjp, derived_jvp, default_reads = linear_rules(transpose, bilinear, tuple(nondiff))
        reads = default_reads if reads is None else reads
    elif bilinear:
        raise AutogradDagError(f"primitive {name!r}: bilinear=True needs the transpose in each operand")
    prim = Primitive(name, impl, vjp=vjp, jvp=jvp, shape=shape, nondiff=nondiff, batch=batch,
                     vjp_into=vjp_into, reads=reads, transpose=transpose, bilinear=bilinear,
                     partials=partials)
    if transpose is not None and jvp is None:
        prim.jvp = derived_jvp(prim)
    PRIMITIVES[name] = prim
    if user:
        USER_PRIMITIVES.add(name)
    return prim


def linear_rules(transpose: Callable | tuple, bilinear: bool, nondiff: tuple[int, ...]):
    """The VJP, a maker of the JVP, and the ``reads`` of a primitive declared by its transpose.

    ``transpose`` has the VJP's form without ``out``: a tuple with one rule per
    input, ``rule(ct, *inputs, **params) -> that input's cotangent`` (None for
    an input without one), or one function returning such a tuple (for a
    variadic primitive such as concatenate). The rules see the inputs for their
    shapes; the differentiable inputs' numbers are read by no rule, so eager
    recording keeps no copy of them (``reads``: only the nondiff inputs, such
    as integer indices, which choose where the entries go).

    Linear (``bilinear=False``): f is linear in its differentiable inputs
    jointly (the others are fixed: indices, the positions max pooling chose).
    JVP: f applied to the tangents, a zero in place of a missing one, so it
    differentiates again as f does. VJP: the transpose applied to the cotangent.

    Bilinear: f is linear in each differentiable input with the others fixed
    (matmul, conv2d). JVP: Σ_i f(..., ṫ_i, ...), the other inputs at their
    values; VJP: the transpose in each operand, which reads the other operands
    (``reads`` all inputs).

    No differentiable input (every input in ``nondiff``: argsort, one_hot, the
    checks of indices): ``transpose=()``, the zero map, whose rules are never
    called; nothing is read, so nothing is copied on record.

    Shapes: ct is shaped like the output; each rule returns an input's shape.

    Example (a transpose pair, each declaring the other, as sum and broadcast_to do):
        >>> import numpy as np, autograd_dag as ad
        >>> twice = ad.primitive("twice_doc", lambda x: np.concatenate([x, x]),
        ...                      transpose=(lambda ct, x: fold(ct),))
        >>> fold = ad.primitive("fold_doc", lambda y: y[:len(y) // 2] + y[len(y) // 2:],
        ...                     transpose=(lambda ct, y: twice(ct),))
        >>> ad.grad(lambda x: ad.sum(twice(x) * np.arange(4.0)))(np.ones(2))
        array([2., 4.])
        >>> ad.jvp(twice, (np.ones(2),), (np.array([1.0, 2.0]),))[1]
        array([1., 2., 1., 2.])

    A bilinear one, the outer product of two vectors:
        >>> outer = ad.primitive("outer_doc", np.multiply.outer, bilinear=True, transpose=(
        ...     lambda ct, a, b: ad.matmul(ct, b), lambda ct, a, b: ad.matmul(a, ct)))
        >>> ad.grad(lambda a: ad.sum(outer(a, np.array([1.0, 2.0]))))(np.ones(3))
        array([3., 3., 3.])
    """
    if not callable(transpose) and len(transpose) == 0:
        return _no_cotangents, lambda prim: _no_tangent, ()
    if isinstance(transpose, (tuple, list)):
        vjp = tuple(None if rule is None else _from_transpose(rule) for rule in transpose)
    else:
        vjp = _from_transpose(transpose)
    if bilinear:
        return vjp, lambda prim: _bilinear_jvp(prim, nondiff), None
    return vjp, lambda prim: _linear_jvp(prim, nondiff), nondiff


def _no_cotangents(ct, out, *inputs, **params):
    return (None,) * len(inputs)


def _no_tangent(tangents, out, *inputs, **params):
    return None


def _from_transpose(rule: Callable) -> Callable:
    """A VJP rule ``(ct, out, *inputs, **params)`` from a transpose rule ``(ct, *inputs, **params)``."""
    def vjp(ct, out, *inputs, **params):
        return rule(ct, *inputs, **params)
    return vjp


def _linear_jvp(prim: Primitive, nondiff: tuple[int, ...]) -> Callable:
    """JVP of a primitive linear in its differentiable inputs: the primitive on the tangents."""
    def jvp(tangents, out, *inputs, **params):
        if len(inputs) == 1:
            return apply(prim, tangents[0], **params)
        # Indices and other nondiff inputs stay; a missing tangent is a zero of its input's shape.
        args = [x if i in nondiff else t if t is not None else _zero_tangent(x, out)
                for i, (t, x) in enumerate(zip(tangents, inputs))]
        return apply(prim, *args, **params)
    return jvp


def _zero_tangent(x, out):
    """Zeros shaped like input ``x`` (of x's dtype if inexact, else out's), a broadcast 0: nothing allocated."""
    dtype = x.dtype if x.dtype.kind in "fc" else out.dtype
    return apply(PRIMITIVES["broadcast_to"], np.zeros((), dtype), shape=tuple(x.shape))


def _bilinear_jvp(prim: Primitive, nondiff: tuple[int, ...]) -> Callable:
    """JVP of a primitive linear in each differentiable input: Σ_i f(..., ṫ_i, ...)."""
    def jvp(tangents, out, *inputs, **params):
        total = None
        for i, t in enumerate(tangents):
            if t is None or i in nondiff:
                continue
            term = apply(prim, *inputs[:i], t, *inputs[i + 1:], **params)
            # (Each term has the output's shape: no broadcasting to undo.)
            total = term if total is None else apply(PRIMITIVES["add"], total, term)
        return total
    return jvp


def primitive(name: str, impl: Callable | None = None, *, vjp: Callable | None = None,
              jvp: Callable | None = None, shape: Callable | None = None,
              nondiff: tuple[int, ...] = (), replace: bool = False,
              transpose: Callable | tuple | None = None, bilinear: bool = False):
    """Define a new primitive with its own rules; returns the function that applies it.

    ``impl(*arrays, **params)`` computes the value with numpy;
    ``vjp(ct, out, *inputs, **params)`` returns one cotangent per input and
    ``jvp(tangents, out, *inputs, **params)`` the output tangent, both with
    ad operations (so that they differentiate again: a rule written with
    numpy works at first order and is refused, with a message naming the
    primitive, at second). A linear primitive gives its ``transpose`` instead
    of both (a bilinear one with ``bilinear=True``: see :func:`linear_rules`).
    Usable as a decorator:
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
    for what, rule in (("vjp", vjp), ("jvp", jvp), ("shape", shape), ("transpose", transpose)):
        rules = rule if what in ("vjp", "transpose") and isinstance(rule, (tuple, list)) else (rule,)
        if any(r is not None and not callable(r) for r in rules):
            raise AutogradDagError(f"ad.primitive({name!r}): {what} must be a function (or None), got "
                                   f"{rule!r}{located(user_source())}")

    def make(fn: Callable):
        if not callable(fn):
            raise AutogradDagError(f"ad.primitive({name!r}): the implementation must be a function, got "
                                   f"{fn!r}{located(user_source())}")
        prim = defprim(name, fn, vjp=vjp, jvp=jvp, shape=shape, nondiff=nondiff, replace=replace,
                       user=True, transpose=transpose, bilinear=bilinear)

        def op(*args, **params):
            return apply(prim, *args, **params)
        op.__name__ = name
        op.__doc__ = fn.__doc__
        op.prim = prim
        return op
    return make if impl is None else make(impl)
