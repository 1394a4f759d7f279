"""``vmap``: the batching transformation, a pass over recorded nodes.

``vmap(f)(xs)`` computes ``stack([f(x) for x in xs])`` without the loop:
``f`` is recorded once on one example, then every recorded node that depends
on the batched inputs is applied again through its primitive's batching rule
(``Primitive.batch``, written next to its VJP and JVP), on operands that
carry a leading batch axis. Nodes that do not depend on the inputs (constants,
values read from a closure) are kept as they are, unbatched; they still carry
their own derivatives, so ``grad(lambda w: ... vmap(lambda x: f(w, x))(xs))``
differentiates through ``w``.

Because the pass runs primitives like user code does, batched computations
record, differentiate and trace: ``vmap(grad(f))`` gives per-example
gradients, ``grad(vmap(f))``, ``jit(vmap(f))`` and ``vmap(vmap(f))`` compose.
A primitive without a rule (or a case its rule does not cover, such as a
convolution whose weights are batched) falls back to a loop over the batch,
with a one-time warning naming it.
"""

from __future__ import annotations

import contextlib
import operator
import warnings
from typing import Callable

import numpy as np

from .autodiff import grad, placeholder, select_arguments, vjp
from .core import Primitive, Tensor, _recording_as, apply, attributed_to
from .errors import AutogradDagError, ShapeError, user_source, located
from .primitives import indexing, structure
from .tracing import depends_on_a_leaf, program_input, record, topological_nodes
from .tree import flatten, unflatten

# Primitives already reported as looping (the warning is given once each).
_LOOPED: set[str] = set()


def vmap(f: Callable, in_axes=0, out_axes=0, axis_size: int | None = None) -> Callable:
    """``f`` mapped over an axis of its arguments: ``vmap(f)(xs)[i] == f(xs[i])``.

    ``in_axes``: the batched axis of every argument (an int), or one entry
    per positional argument (an int, or None for an argument shared by all
    examples); an entry applies to every array inside a nested argument, or
    is itself a tuple, list or dict matching the argument's structure (a
    prefix of it, as in JAX: ``in_axes=((0, None), 0)`` for ``f((xs, w), ys)``).
    Keyword arguments are always batched along their leading axis (axis 0),
    as in JAX: ``in_axes`` covers the positional arguments only, so pass a
    shared argument positionally with ``None``.
    ``out_axes``: where the batch axis goes in the outputs (an int, one per
    output leaf, or a tree matching f's result, as ``in_axes``). ``axis_size``:
    the batch size, needed when no argument is batched (then every output is
    f's, repeated). Python control flow in ``f`` must not depend on the
    values (as with ``jit``): ``f`` is recorded once, on the first example.
    As a loop would, the results carry the gradient of a Tensor requiring
    one that ``f`` reads from a closure (a parameter), for ``backward()``.

    Shapes: an argument of shape (..., B, ...) with its batch axis at
    ``in_axes`` (a keyword argument: (B, ...)) -> outputs of f's shapes with B
    inserted at ``out_axes``.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> per_example = ad.vmap(ad.grad(lambda w, x: ad.sum(ad.tanh(x @ w))), in_axes=(None, 0))
        >>> per_example(np.ones(3), np.eye(3)).shape     # one gradient per row of x
        (3, 3)
        >>> ad.vmap(lambda w, x: x @ w, in_axes=(None,))(np.ones(3), x=np.ones((5, 3))).shape  # x: (5, 3)
        (5,)
    """
    return _vmap(f, in_axes, out_axes, keep_leaves=True, axis_size=axis_size)


def _vmap(f: Callable, in_axes, out_axes, *, keep_leaves: bool, axis_size: int | None = None) -> Callable:
    """:func:`vmap`; ``keep_leaves``: record when f reads a leaf requiring a gradient from a closure."""
    fname = getattr(f, "__name__", "f")

    def wrapped(*args, **kwargs):
        # Keyword arguments: positions after the positional ones, batched along axis 0 (JAX's rule).
        specs = _argument_axes(in_axes, len(args), bool(kwargs), axis_size is not None) + [0] * len(kwargs)
        labels = [f"argument {p}" for p in range(len(args))] + [f"keyword argument '{k}'" for k in kwargs]
        # Each leaf's axis (an entry may be a tree of axes: JAX's pytree in_axes).
        leaf_axes = [_leaf_axes(spec, arg, label) for spec, arg, label in zip(specs, (*args, *kwargs.values()), labels)]
        size = _batch_size([(x, axis, label) for arg, axes_, label in zip((*args, *kwargs.values()), leaf_axes, labels)
                            for x, axis in zip(flatten(arg)[0], axes_)], axis_size)
        env: dict[int, Tensor] = {}  # node id -> its batched value
        pending = [iter(axes_) for axes_ in leaf_axes]   # (record asks for each leaf in flatten's order)

        def make_input(position, x):
            axis = next(pending[position])
            if axis is None:
                # Shared arrays become constants, so Tensor methods work on them as on the examples.
                return Tensor(x) if isinstance(x, np.ndarray) else None
            batched = _batch_first(x, axis)
            # An empty batch has no example to record on: a stand-in of an example's shape that
            # inv, solve or lstsq take as they would a real example (zeros are singular), and
            # zeros for indices (in range for every non-empty axis).
            value = batched.value[0] if size else (
                placeholder(batched.shape[1:], batched.dtype) if batched.dtype.kind == "f"
                else np.zeros(batched.shape[1:], batched.dtype))
            example = program_input(value, getattr(x, "name", None) or "x")
            env[id(example)] = batched
            return example

        # An empty batch records f on a stand-in: the values are never returned, so neither are their warnings.
        with np.errstate(all="ignore") if size == 0 else contextlib.nullcontext():
            rec = record(f, args, make_input, what="vmap", reused=True, kwargs=kwargs)
        out_tensors, out_td = rec.outputs, rec.out_tree
        record_nodes = rec.nested or (keep_leaves and depends_on_a_leaf(out_tensors, rec.inputs, rec.inner))
        order = topological_nodes(out_tensors, stop=set(env))
        with _recording_as(record_nodes):
            for t in order:
                parents = t.parents
                if not parents or id(t) in env:
                    continue
                flags = [id(p) in env for p in parents]
                if not any(flags):
                    continue
                operands = [env[id(p)] if b else p for p, b in zip(parents, flags)]
                with attributed_to(t.source, t.scope):
                    env[id(t)] = _apply_batched(t.prim, operands, flags, t.params or {})
            results = [o if axis is None and id(o) not in env else
                       _place(env[id(o)] if id(o) in env else structure.broadcast_to(o, (size,) + o.shape), axis)
                       for o, axis in zip(out_tensors, _output_axes(out_axes, len(out_tensors), rec.result))]
        if not record_nodes:
            results = [np.asarray(r.value) for r in results]
        return unflatten(out_td, results)

    wrapped.__name__ = f"vmap_{fname}"
    wrapped.__doc__ = f.__doc__
    return wrapped


def _argument_axes(in_axes, n: int, keywords: bool = False, sized: bool = False) -> list:
    if in_axes is None or isinstance(in_axes, int):
        return [in_axes] * n
    axes = list(in_axes)
    if len(axes) != n or not all(a is None or isinstance(a, (int, tuple, list, dict)) for a in axes):
        raise AutogradDagError(f"vmap: in_axes={in_axes!r} must be an int, None, or one int/None per "
                               f"positional argument ({n} given"
                               f"{'; keyword arguments are always batched along axis 0' if keywords else ''}"
                               f"; an entry may also be a tree of them, of its argument's structure)"
                               f"{located(user_source())}")
    if all(a is None for a in axes) and not keywords and not sized:   # (sized: axis_size given)
        raise AutogradDagError(f"vmap: in_axes={in_axes!r} batches no argument{located(user_source())}")
    return axes


def _leaf_axes(spec, arg, label: str) -> list:
    """The batch axis of each leaf of ``arg`` (in flatten's order) from its in_axes entry ``spec``: an int
    or None for every leaf, or a tuple, list or dict of the argument's structure (a prefix of it)."""
    if spec is None or isinstance(spec, int):
        return [spec] * len(flatten(arg)[0])
    if isinstance(spec, dict) and isinstance(arg, dict) and set(spec) == set(arg):
        return [a for key in arg for a in _leaf_axes(spec[key], arg[key], f"{label}[{key!r}]")]
    if isinstance(spec, (tuple, list)) and isinstance(arg, (tuple, list)) and len(spec) == len(arg):
        return [a for i, (s, x) in enumerate(zip(spec, arg)) for a in _leaf_axes(s, x, f"{label}[{i}]")]
    shape = (f"a {type(arg).__name__} of {len(arg)}" if isinstance(arg, (tuple, list)) else
             f"a dict with keys {sorted(map(str, arg))}" if isinstance(arg, dict) else "an array")
    raise AutogradDagError(f"vmap: in_axes entry {spec!r} for {label} does not match its structure ({shape}); "
                           f"give an int or None for all its arrays, or a tree of the argument's structure"
                           f"{located(user_source())}")


def _output_axes(out_axes, n: int, result) -> list:
    """The batch axis of each of the ``n`` output leaves: ``out_axes`` an int or None for all, one per
    leaf, or (as JAX's) a tree matching f's ``result`` (a prefix of it: ``{"s": 0, "d": 1}`` for a dict)."""
    if out_axes is None or isinstance(out_axes, int):
        return [out_axes] * n
    if isinstance(out_axes, (tuple, list)) and len(out_axes) == n and all(
            a is None or isinstance(a, int) for a in out_axes):
        return list(out_axes)
    try:
        return _leaf_axes(out_axes, result, "the output")
    except AutogradDagError:   # (a dict out_axes raised TypeError: '<=' between 'int' and 'str')
        raise AutogradDagError(f"vmap: out_axes={out_axes!r} must be an int, one per output leaf ({n}), or a "
                               f"tree matching f's output{located(user_source())}") from None


def _batch_size(flat, axis_size: int | None = None) -> int:
    """The batch size of ``flat``, ``(leaf, its axis, its argument's label)`` triples: one for all
    (and ``axis_size``, when given)."""
    sizes: dict = {}
    for x, axis, label in flat:
        if axis is None:
            continue
        shape = np.shape(x.value if isinstance(x, Tensor) else x)
        if not -len(shape) <= axis < len(shape):
            keyword = (" (a keyword argument is always batched along axis 0, as in JAX; pass an argument shared "
                       "by all examples positionally, with in_axes None)" if label.startswith("keyword") else "")
            raise ShapeError(f"vmap: in_axes {axis} for {label} of shape {shape}{keyword}{located(user_source())}")
        sizes.setdefault(shape[axis], label)
    if axis_size is not None:
        sizes.setdefault(operator.index(axis_size), "axis_size")
    if not sizes:
        raise AutogradDagError(f"vmap: no argument is batched (in_axes are all None){located(user_source())}")
    if len(sizes) > 1:
        raise ShapeError(f"vmap: the batched axes have different sizes "
                         f"({', '.join(f'{size} for {label}' for size, label in sizes.items())}); every batched "
                         f"argument needs the same batch size{located(user_source())}")
    return next(iter(sizes))


def _batch_first(x, axis: int) -> Tensor:
    """The argument as a Tensor with its batch axis first (recorded when ``x`` is a Tensor)."""
    if isinstance(x, Tensor):
        return structure.transpose(x, _to_front(x.ndim, axis)) if axis % x.ndim else x
    array = np.asarray(x)
    return Tensor(np.moveaxis(array, axis, 0) if axis % array.ndim else array)


def _to_front(ndim: int, axis: int) -> tuple[int, ...]:
    axis %= ndim
    return (axis,) + tuple(i for i in range(ndim) if i != axis)


def _place(x: Tensor, axis):
    """Move the leading batch axis to ``axis`` (None: refused, the output depends on the batch)."""
    if axis is None:
        raise AutogradDagError("vmap: out_axes=None for an output that depends on the batched inputs")
    if not -x.ndim <= axis < x.ndim:
        raise ShapeError(f"vmap: out_axes {axis} for an output of shape {x.shape[1:]} (the batch axis goes "
                         f"in [{-x.ndim}, {x.ndim}))")
    axis %= x.ndim
    if axis == 0:
        return x
    order = list(range(1, x.ndim))
    order.insert(axis, 0)
    return structure.transpose(x, tuple(order))


def _apply_batched(prim: Primitive, operands, flags, params) -> Tensor:
    if prim.batch is not None:
        out = prim.batch(prim, operands, flags, **params)
        if out is not NotImplemented:
            return out
    if prim.name not in _LOOPED:
        _LOOPED.add(prim.name)
        warnings.warn(f"vmap: '{prim.name}' has no batching rule for these operands; looping over the "
                      f"batch (one call per example)", stacklevel=4)
    size = next(o.shape[0] for o, b in zip(operands, flags) if b)
    if size == 0:
        # No example to loop over (stack would get no operand): one on zeros, as vmap records f
        # on for an empty batch, gives the result's shape and dtype.
        with np.errstate(all="ignore"):
            example = apply(prim, *[Tensor(np.zeros(o.shape[1:], o.dtype)) if b else o
                                    for o, b in zip(operands, flags)], **params)
        return structure.broadcast_to(example, (0,) + example.shape)
    outs = [apply(prim, *[indexing.getitem(o, i) if b else o for o, b in zip(operands, flags)], **params)
            for i in range(size)]
    return indexing.stack(outs, 0)


# ---------------------------------------------- Jacobians on vmap


def jacobian(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """The Jacobian function of ``f``: ``vmap`` of its VJP over the unit cotangents.

    One forward pass, then one batched reverse pass whose batch is the
    output's entries (rather than one reverse pass per entry).
    ``argnums`` is an int or, as in JAX, a tuple of ints: then the result is
    the tuple of the Jacobians w.r.t. those arguments (from the same passes).
    ``f``'s output and arguments may be nested tuples, lists or dicts (as for
    JAX's ``jacrev``): the result has the output's structure, each of its leaves
    the chosen argument's (a tuple over a tuple of argnums). Keyword
    arguments are passed to ``f`` and not differentiated (``argnums`` counts
    positional arguments, as in JAX's ``jacrev``). With ``has_aux``, ``f``
    returns ``(out, aux)`` and the result is ``(jacobian, aux)``, aux not differentiated.
    Shapes: out.shape + arg.shape (a tuple of those for a tuple of argnums).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.jacobian(lambda x: x * x)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
        >>> [j.shape for j in ad.jacobian(lambda x, y: x * y[0], argnums=(0, 1))(np.ones(2), np.ones(3))]
        [(2, 2), (2, 3)]
        >>> ad.jacobian(lambda x, scale: scale * x)(np.ones(2), scale=3.0)   # scale: not differentiated
        array([[3., 0.],
               [0., 3.]])
    """
    def wrapped(*args, **kwargs):
        single, nums = select_arguments(args, argnums, kwargs)
        nums = tuple(n % len(args) for n in nums)

        def f_of(*chosen):
            rebuilt = list(args)
            for n, x in zip(nums, chosen):
                rebuilt[n] = x
            return f(*rebuilt, **kwargs)
        out, f_vjp, *aux = vjp(f_of, *(args[n] for n in nums), has_aux=has_aux)
        # Outputs and arguments may be tuples, lists or dicts, as JAX's jacrev takes them: the
        # Jacobian has the output's structure, each leaf the chosen arguments' (a tuple of them for
        # a tuple of argnums), of shape out_leaf.shape + arg_leaf.shape. (An array took the first
        # output leaf only, and a tuple argument raised AttributeError: no 'reshape'.)
        out_leaves, out_tree = flatten(out)
        nested = any(isinstance(o, Tensor) for o in out_leaves)
        outs = [o.value if isinstance(o, Tensor) else np.asarray(o) for o in out_leaves]
        chosen = [flatten(args[n]) for n in nums]
        x_shapes = [np.shape(x.value if isinstance(x, Tensor) else x) for leaves, _ in chosen for x in leaves]
        sizes = [o.size for o in outs]
        total, ends = sum(sizes), np.cumsum(sizes)
        if total == 0:
            rows = [np.zeros((0,) + s, dtype=outs[0].dtype if outs else np.float64) for s in x_shapes]
        else:
            # One batch of unit cotangents over every output entry: row i is 1 at entry i of the leaf holding it.
            basis = [np.eye(total, dtype=o.dtype)[:, end - o.size:end].reshape((total,) + o.shape)
                     for o, end in zip(outs, ends)]
            # On numbers, the VJP reads its recording's own input, a fresh leaf requiring a gradient:
            # not a parameter whose gradient the rows must carry (the Jacobian is numbers, as grad's
            # result). On a Tensor (nested) the rows are recorded, as grad's are, so that backward()
            # reaches the Tensor through them (before: J was numbers and its derivative was dropped).
            rows = _vmap(lambda *cts: flatten(tuple(f_vjp(unflatten(out_tree, list(cts)))))[0], 0, 0,
                         keep_leaves=nested)(*basis)
        rows = [r if isinstance(r, Tensor) or not nested else Tensor(r) for r in rows]

        def block(r, o, end, s):   # rows of output leaf o, shaped o.shape + s
            r = r[end - o.size:end]
            return structure.reshape(r, o.shape + s) if isinstance(r, Tensor) else r.reshape(o.shape + s)

        def of_leaf(o, end):
            blocks = iter([block(r, o, end, s) for r, s in zip(rows, x_shapes)])
            per_argument = [unflatten(tree, [next(blocks) for _ in leaves]) for leaves, tree in chosen]
            return per_argument[0] if single else tuple(per_argument)
        jac = unflatten(out_tree, [of_leaf(o, end) for o, end in zip(outs, ends)])
        return (jac, aux[0]) if has_aux else jac
    return wrapped


def hessian(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """The Hessian of a scalar ``f``: the Jacobian of its gradient. Shapes: arg.shape * 2.

    For a tuple of argnums the result is nested as JAX's: ``H[i][j]`` is
    ∂²f/∂x_i∂x_j, of shape arg_i.shape + arg_j.shape. Keyword arguments are
    passed to ``f`` and not differentiated, as in JAX. With ``has_aux``, ``f``
    returns ``(value, aux)`` and the result is ``(hessian, aux)``.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.hessian(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
        >>> ad.hessian(lambda x, scale: scale * (x ** 3).sum())(np.array([1.0, 2.0]), scale=0.5)
        array([[3., 0.],
               [0., 6.]])
    """
    if not isinstance(argnums, (tuple, list)):
        return jacobian(grad(f, argnums, has_aux=has_aux), argnums, has_aux=has_aux)

    def wrapped(*args, **kwargs):
        _, nums = select_arguments(args, argnums, kwargs)
        # one Jacobian (over every chosen argument) of each gradient component
        rows = [jacobian(lambda *a, n=n: grad(f, n, has_aux=has_aux)(*a, **kwargs), nums, has_aux=has_aux)(*args)
                for n in nums]
        return (tuple(r[0] for r in rows), rows[0][1]) if has_aux else tuple(rows)
    return wrapped
