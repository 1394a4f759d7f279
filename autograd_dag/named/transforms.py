"""Transformations by name: gradients, gradient checks and programs whose arguments are NamedTensors.

Each function here wraps its positional counterpart (``ad.grad``,
``ad.value_and_grad``, ``ad.check_grads``, ``ad.trace``): NamedTensor
arguments go in as their Tensors (storage order), ``f`` sees NamedTensors
again, and what comes out — gradients, outputs — carries the names of the
argument or output it belongs to. Nothing below this layer knows about names.

:func:`trace` and :func:`program_of` record the axis names of every node a
NamedTensor computed in named's table (:func:`attach_axes`,
:func:`program_axes`, in :mod:`.tensor`), which the renderer below reads through the hook
:func:`autograd_dag.render.axes.register_axis_names` (``ad.render(program)``
then draws ``seq:5 × layer:8`` instead of ``[5,8]``).
"""

from __future__ import annotations

import inspect
from typing import Callable, Sequence

from .. import autodiff as _autodiff
from .. import checking as _checking
from ..core import Tensor
from ..program import Program
from ..jitting import trace as _trace
from ..tree import flatten, unflatten
from .tensor import AxisNameError, NamedTensor, _wrap, attach_axes, node_axes, program_axes, program_of

__all__ = ["grad", "value_and_grad", "check_grads", "trace", "program_of", "node_axes", "grad_program",
           "attach_axes", "program_axes"]

def _positional(x: NamedTensor, values: bool):
    """x's Tensor, or its array when it has no history to differentiate through (or ``values``).

    A Tensor argument makes the positional transformation differentiate in
    nested mode (its results are Tensors), as ``ad.grad`` does for Tensors.
    """
    t = x.tensor
    return t.value if values or (t.prim is None and not t.requires_grad) else t


def _strip(tree, values: bool = False):
    """(leaves with NamedTensors replaced by their Tensors (or arrays), names per leaf, treedef)."""
    leaves, td = flatten(tree)
    names = [x.names if isinstance(x, NamedTensor) else None for x in leaves]
    raw = [_positional(x, values) if isinstance(x, NamedTensor) else x for x in leaves]
    return raw, names, td


def _dress(leaves, names):
    """Leaves with names given back (arrays become constant Tensors)."""
    out = []
    for x, n in zip(leaves, names):
        if n is None:
            out.append(x)
        else:
            out.append(_wrap(x if isinstance(x, Tensor) else Tensor(x), n))
    return out


def _unname_output(out, op: str):
    """f's output for the positional transformation: a NamedTensor becomes its Tensor."""
    # Every leaf of a tuple, list or dict (a dict of NamedTensors reached the positional trace,
    # whose Tensor(...) of a NamedTensor raised "positional ad functions have no names").
    leaves, td = flatten(out)
    return unflatten(td, [o.tensor if isinstance(o, NamedTensor) else o for o in leaves])


def _named_args(f: Callable, args, op: str, kwargs: dict | None = None):
    """(positional args, f on positional args, the names of every argument leaf per argument, keyword args).

    Keyword arguments go in and come back to ``f`` as positional ones do (their NamedTensors as Tensors).
    """
    per_arg = [_strip(a) for a in args]
    raw_args = [unflatten(td, raw) for raw, _, td in per_arg]
    per_kw = {k: _strip(v) for k, v in (kwargs or {}).items()}
    raw_kwargs = {k: unflatten(td, raw) for k, (raw, _, td) in per_kw.items()}

    def dressed(x, names):
        leaves, td = flatten(x)
        return unflatten(td, _dress(leaves, names))

    def positional(*xs, **kw):
        return f(*[dressed(x, names) for x, (_, names, _td) in zip(xs, per_arg)],
                 **{k: dressed(v, per_kw[k][1]) for k, v in kw.items()})
    return raw_args, positional, per_arg, raw_kwargs


def _scalar(out, op: str):
    if isinstance(out, NamedTensor):
        if out.names:
            raise AxisNameError(f"{op}: Expect: f to return a scalar (no axes). Actual: a NamedTensor with axes "
                                f"({', '.join(out.names)}); reduce them (nsum, nmean) first")
        return out.tensor
    return out


def value_and_grad(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """``(f(*args), ∇f)`` for a scalar-valued ``f`` of NamedTensors; the gradient has the arguments' names.

    As :func:`autograd_dag.value_and_grad` (``argnums``, ``has_aux``, nested
    arguments, keyword arguments passed to ``f`` and not differentiated), with
    NamedTensor arguments (keyword ones too): ``f`` receives NamedTensors, its
    scalar result may be a NamedTensor without axes, and each gradient leaf
    is a NamedTensor with the names of its argument leaf. A NamedTensor in
    ``aux`` keeps its names.
    Shapes: arguments -> (() value, gradients named like the chosen arguments).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import named
        >>> x = named.NamedTensor(np.array([[1.0, 2.0, 3.0]]), "seq layer")
        >>> v, g = named.value_and_grad(lambda x: (x * x).nsum(("seq", "layer")))(x)
        >>> float(v), g
        (14.0, NamedTensor(seq:1 × layer:3, float64))
        >>> g.align("layer", "seq").value.ravel()
        array([2., 4., 6.])
        >>> w = named.NamedTensor(np.array([1.0, 0.0, 1.0]), "layer")     # a keyword argument: not differentiated
        >>> named.value_and_grad(lambda x, w: (x * w).nsum(("seq", "layer")))(x, w=w)[1].names
        ('seq', 'layer')
    """
    def wrapped(*args, **kwargs):
        raw_args, positional, per_arg, raw_kwargs = _named_args(f, args, "grad", kwargs)
        aux_names: list = []

        def g(*xs, **kw):
            out = positional(*xs, **kw)
            if has_aux:
                value, aux = out
                raw, names, td = _strip(aux)
                aux_names.append((names, td))
                return _scalar(value, "grad"), unflatten(td, raw)
            return _scalar(out, "grad")
        value, grads = _autodiff.value_and_grad(g, argnums, has_aux)(*raw_args, **raw_kwargs)
        if has_aux:
            value, aux = value
            names, td = aux_names[-1]
            leaves, _ = flatten(aux)
            value = (value, unflatten(td, _dress(leaves, names)))
        single = isinstance(argnums, int)
        nums = (argnums,) if single else tuple(argnums)
        named_grads = []
        for n, gr in zip(nums, (grads,) if single else grads):
            _, names, td = per_arg[n % len(args)]
            leaves, _ = flatten(gr)
            named_grads.append(unflatten(td, _dress(leaves, names)))
        return value, (named_grads[0] if single else tuple(named_grads))
    wrapped.__name__ = f"value_and_grad_{getattr(f, '__name__', 'f')}"
    return wrapped


def grad(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """The gradient function of a scalar-valued ``f`` of NamedTensors; gradients keep the arguments' names.

    Shapes: the gradient has the names and sizes of the chosen argument (and its nesting).
    Keyword arguments (NamedTensors or not) are passed to ``f`` and not differentiated.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import named
        >>> W = named.NamedTensor(np.ones((2, 3)), "hidden layer")
        >>> x = named.NamedTensor(np.array([1.0, 2.0, 3.0]), "layer")
        >>> g = named.grad(lambda W: named.ndot(W, x, "layer").nsum("hidden"))(W)
        >>> g.names, g.align("hidden", "layer").value[1]
        (('hidden', 'layer'), array([1., 2., 3.]))
        >>> named.grad(lambda W, x: named.ndot(W, x, "layer").nsum("hidden"))(W, x=x).names  # W (2, 3)
        ('hidden', 'layer')
    """
    return _autodiff.gradient_of(value_and_grad(f, argnums, has_aux), f, has_aux)


def check_grads(f: Callable, args: Sequence, **options) -> None:
    """Check the derivatives of a function of NamedTensors against central differences (``ad.check_grads``).

    ``args`` may hold NamedTensors (float64); ``f`` receives them with their
    names and may return a NamedTensor of any axes. Options as
    :func:`autograd_dag.check_grads` (``order``, ``modes``, ``full``, ...).
    Raises :class:`GradientCheckError` on a mismatch.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import named
        >>> X = named.NamedTensor(np.random.default_rng(0).normal(size=(3, 4)), "seq vocab")
        >>> named.check_grads(lambda X: X.softmax("vocab"), (X,))
    """
    per_arg = [_strip(a, values=True) for a in args]
    raw_args = tuple(unflatten(td, raw) for raw, _, td in per_arg)

    def positional(*xs):
        rebuilt = []
        for x, (_, names, _td) in zip(xs, per_arg):
            leaves, td = flatten(x)
            rebuilt.append(unflatten(td, _dress(leaves, names)))
        return _unname_output(f(*rebuilt), "check_grads")
    positional.__name__ = getattr(f, "__name__", "f")
    _checking.check_grads(positional, raw_args, **options)


def trace(f: Callable, *example_args, name: str | None = None) -> Program:
    """Record ``f`` on NamedTensor (or plain) example arguments: its Program, axis names attached.

    Each argument becomes a program input named after ``f``'s parameter; its
    NamedTensor names are given back to ``f`` and to the picture.
    Shapes: as :func:`autograd_dag.trace`.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import named
        >>> X = named.NamedTensor(np.ones((4, 3)), "seq layer")
        >>> prog = named.trace(lambda X: X.standardize("layer"), X)
        >>> str(prog.nodes[0].op), named.program_axes(prog)[0], named.program_axes(prog)[len(prog.nodes) - 1]
        ('input', ('seq', 'layer'), ('seq', 'layer'))
    """
    names = [a.names if isinstance(a, NamedTensor) else None for a in example_args]
    values = [a.tensor.value if isinstance(a, NamedTensor) else a for a in example_args]
    results: list = []

    def positional(*xs):
        out = f(*[_wrap(x, n) if n is not None else x for x, n in zip(xs, names)])
        results.append(out)
        return _unname_output(out, "trace")
    try:
        positional.__signature__ = inspect.signature(f)
    except (TypeError, ValueError):
        pass
    program = _trace(positional, *values, name=name or (None if getattr(f, "__name__", "<lambda>") == "<lambda>"
                                                           else f.__name__))
    out = results[-1]
    axes = node_axes(program, flatten(out)[0])   # (the program's outputs are f's leaves, in flatten's order)
    for k, n in zip(program.inputs, names):
        if n is not None:
            axes[k] = n
    attach_axes(program, axes)
    return program


def grad_program(program: Program, wrt=None, *, with_value: bool = False) -> Program:
    """``ad.grad_program`` of a named program: its inputs and gradient outputs keep their axis names.

    Shapes: as :func:`autograd_dag.grad_program`; the gradient with respect to
    an input has that input's names (the picture shows them).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import named
        >>> X = named.NamedTensor(np.ones((2, 3)), "seq layer")
        >>> g = named.grad_program(named.trace(lambda X: X.logsumexp("layer").nsum("seq"), X))
        >>> [named.program_axes(g)[k] for k in g.outputs]
        [('seq', 'layer')]
    """
    gradient = _autodiff.grad_program(program, wrt, with_value=with_value)
    axes = program_axes(program)
    if not program.inputs or len(gradient.inputs) != len(program.inputs):
        return gradient
    named_inputs = [axes.get(k) for k in program.inputs]
    found: dict[int, tuple[str, ...]] = {}
    for k, names in zip(gradient.inputs, named_inputs):
        if names is not None:
            found[k] = names
    for k in gradient.outputs:
        i = gradient.nodes[k].gradient_of   # (None for the value returned beside the gradients)
        names = None if i is None else named_inputs[i]
        if names is not None and gradient.nodes[k].shape == program.nodes[program.inputs[i]].shape:
            found.setdefault(k, names)
    attach_axes(gradient, found)
    return gradient
