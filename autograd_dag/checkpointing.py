"""``checkpoint``: a function recorded as one node, its intermediates recomputed during the backward.

The node's forward runs the function on numbers (nothing recorded, nothing
kept); its VJP and JVP replay the function through the one tracer and sweep
that recording. Under ``vmap`` the node is batched as a whole: its batching
rule makes the checkpoint of the function's ``vmap`` (one batched forward,
one batched replay), not a loop over the examples. (Its own module: it builds
on both the sweeps of :mod:`autodiff` and the batching of :mod:`batching`.)
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from . import core, trace_state, tracing
from .autodiff import _value_of, forward_sweep, reverse_sweep
from .batching import _vmap
from .core import Primitive, Tensor, _recording_as, apply
from .errors import AutogradDagError, NotDifferentiableError, TracingError, user_source, located
from .primitives import random
from .primitives.indexing import concatenate
from .primitives.structure import reshape
from .tracing import slot_input, topological_nodes
from .tree import flatten, unflatten



def _refuse_closure_gradients(result: Tensor, targets: list, name: str, made: set[int] = frozenset()) -> None:
    """Refuse a checkpointed function that read a Tensor requiring a gradient from outside its arguments.

    Its derivative would be silently lost: the checkpoint node's inputs are the
    arguments only (before: a zero gradient for the closure's W). ``made``: ids
    of leaves the function made itself (the slots of a grad inside it).
    """
    stop = {id(t) for t in targets} | made
    for t in topological_nodes([result], stop, prune_constant=True):
        if id(t) not in stop and not t.parents and t.requires_grad:
            _refuse_closure_tensor(t, name, t.source)


def checkpoint(f: Callable) -> Callable:
    """``f`` that stores no intermediates: its forward is recomputed during backward.

    The book's checkpointing trades compute for memory. Everything to be differentiated
    must be passed as an argument (Tensors, or tuples, lists or dicts of them), positional or keyword,
    e.g. ``ad.checkpoint(block)(x, W, b=b)``; the call records one node (operands: the arguments'
    arrays, then the keyword ones'). Under ``vmap`` that node is batched whole (f's vmap, recomputed
    batched), as ``jax.vmap(jax.checkpoint(f))``. A Tensor
    requiring a gradient that ``f`` reads from outside (a closure, a module's
    parameters) is refused with NotDifferentiableError, not silently given none.
    Shapes: those of ``f``: the wrapped function takes and returns what ``f`` does
    (a Tensor, or a tuple, list or dict of Tensors of one dtype).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> g = ad.checkpoint(lambda x: ad.tanh(ad.tanh(x)))
        >>> x = ad.Tensor([0.5], requires_grad=True)
        >>> g(x).sum().backward()
        >>> np.round(x.grad.value, 4)
        array([0.6398])
        >>> W = ad.Tensor(np.ones((3, 2)), requires_grad=True)      # a keyword argument: (3, 2)
        >>> ad.checkpoint(lambda x, W: ad.tanh(x @ W))(np.ones((4, 3)), W=W).sum().backward()
        >>> W.grad.shape
        (3, 2)
    """
    prim, packed = _checkpoint_primitive(f, getattr(f, "__name__", type(f).__name__))
    on_leaves: dict = {}   # the structure of tuple, list or dict arguments -> the checkpoint of f on their leaves

    def wrapped(*args, **kwargs):
        if any(isinstance(a, (tuple, list, dict)) for a in (*args, *kwargs.values())):
            return _with_trees(f, on_leaves, args, kwargs, prim.name)
        if core.is_recording():
            _refuse_unseen_reads(f, args, kwargs, prim.name)
        packed.layout = None
        # Keyword arguments are operands after the positional ones, their names a parameter of the node.
        out = apply(prim, *args, *kwargs.values(), names=tuple(kwargs)) if kwargs else apply(prim, *args)
        return out if packed.layout is None else _unpack(out, packed.layout)
    wrapped.__name__ = prim.name
    return wrapped


def _with_trees(f: Callable, on_leaves: dict, args: tuple, kwargs: dict, name: str):
    """A checkpointed ``f`` called with tuple, list or dict arguments: the checkpoint of f on their leaves,
    one operand each (as JAX's checkpoint takes pytrees; a tuple (x, w) became one ragged array and
    failed), made once per structure."""
    leaves, tree = flatten((args, kwargs))
    if tree not in on_leaves:
        def f_of_leaves(*leaves):
            args, kwargs = unflatten(tree, list(leaves))
            return f(*args, **kwargs)
        f_of_leaves.__name__ = name[len("checkpoint["):-1]
        on_leaves[tree] = checkpoint(f_of_leaves)
    if core.is_recording():   # (f_of_leaves holds f, not what f reads: its own check cannot see them)
        for t in _closure_tensors(f):
            if t.requires_grad:
                _refuse_closure_tensor(t, name, user_source())
    return on_leaves[tree](*leaves)


def _checkpoint_primitive(f: Callable, fname: str) -> tuple[Primitive, threading.local]:
    """The primitive of a checkpointed ``f``, and where its forward leaves the layout of a packed result."""
    name = f"checkpoint[{fname}]"
    # A tuple, list or dict of results is one node all the same: its leaves' numbers packed into
    # one vector, unpacked by wrapped (np.asarray stacked a tuple into one array, and a dict became
    # an array of objects, and the backward failed). The structure f returned is kept per thread.
    packed = threading.local()

    def impl(*arrays, names=()):
        with _recording_as(False), random.replayed():
            out = _keywords_last(f, [Tensor(a) for a in arrays], names)
        if isinstance(out, (tuple, list, dict)):
            packed.layout, vector = _pack(out, name, lambda v: np.concatenate([np.ravel(_value_of(x)) for x in v]))
            return vector
        packed.layout = None
        # (A transformation inside f, on constant arguments, returns numbers here.)
        return out.value if isinstance(out, Tensor) else np.asarray(out)

    def replay(inputs, names):
        # f replayed by the one tracer, as grad records its function: on identity nodes of the
        # recorded inputs when the sweep records (connected to them, one cotangent per slot even
        # if one Tensor fills two), else on fresh leaves; inputs of a transformation either way,
        # so an inner one reading them from a closure records instead of a silent zero derivative.
        with random.replayed():
            rec = tracing.record(packed_f, inputs[:len(inputs) - len(names)], lambda position, x: slot_input(
                x, name), what=name, kwargs=dict(zip(names, inputs[len(inputs) - len(names):])))
        _refuse_closure_gradients(rec.result, rec.inputs, name, rec.inner)
        return rec.inputs, rec.result

    def packed_f(*args, **kwargs):
        out = f(*args, **kwargs)
        if isinstance(out, (tuple, list, dict)):   # packed as impl packs it, recorded
            out = _pack(out, name, lambda v: concatenate([reshape(x, (-1,)) for x in v]))[1]
        return out

    def rule_vjp(ct, out, *inputs, names=()):
        recording = core.is_recording()
        targets, result = replay(inputs, names)
        grads = reverse_sweep([result], [ct], targets, create_graph=recording, retain_graph=recording)
        return tuple(grads[id(t)][1] if id(t) in grads else None for t in targets)

    def rule_jvp(tangents, out, *inputs, names=()):
        recording = core.is_recording()
        targets, result = replay(inputs, names)
        pairs = [(x, t) for x, t in zip(targets, tangents) if t is not None]
        tan = forward_sweep([result], [x for x, _ in pairs], [t for _, t in pairs], create_graph=recording)
        return tan.get(id(result))

    batched: dict = {}   # (operands batched, keyword names) -> the checkpoint of packed_f's vmap, or None

    def rule_batch(_, operands, flags, names=()):
        # One node for the whole batch, its forward and replay batched (before: vmap looped, one
        # checkpoint node per example: 64 recordings and replays for a batch of 64).
        key = (tuple(flags), names)
        if key not in batched:
            batched[key] = _batched_checkpoint(packed_f, fname, *key)
        if batched[key] is not None:
            try:
                return apply(batched[key], *operands)
            except TracingError:
                # f reads its arguments' numbers (Python control flow on them): it cannot be recorded
                # once for the batch, as jax.vmap refuses it; each example runs on its own numbers.
                batched[key] = None
        return NotImplemented

    return Primitive(name, impl, vjp=rule_vjp, jvp=rule_jvp, batch=rule_batch), packed


def _batched_checkpoint(f: Callable, fname: str, flags: tuple, names: tuple) -> Primitive:
    """The checkpoint primitive of ``f``'s vmap over a checkpoint node's operands (those flagged in
    ``flags`` with a leading batch axis, the others shared; the last ``len(names)`` by keyword)."""
    vmapped = _vmap(lambda *operands: _keywords_last(f, list(operands), names),
                    [0 if b else None for b in flags], 0, keep_leaves=True)

    def batched_f(*operands):
        if not core.is_recording():   # the node's forward: on numbers, so vmap returns numbers
            operands = [_value_of(o) for o in operands]
        return vmapped(*operands)
    return _checkpoint_primitive(batched_f, f"vmap_{fname}")[0]


def _keywords_last(f: Callable, operands: list, names: tuple):
    """``f`` called on a checkpoint node's operands: the last ``len(names)`` are its keyword arguments."""
    positional = len(operands) - len(names)
    return f(*operands[:positional], **dict(zip(names, operands[positional:])))


def _refuse_unseen_reads(f: Callable, args: tuple, kwargs: dict, name: str) -> None:
    """Refuse what a checkpointed ``f`` reads that its node would not see (while something records).

    The forward runs unrecorded: a Tensor read from f's closure is seen by no
    derivative (a slot of ad.grad that is not an argument here would get zero).
    """
    for t in _closure_tensors(f):
        if t.requires_grad:
            _refuse_closure_tensor(t, name, user_source())
    if trace_state.program_depth():
        _refuse_traced_reads(f, args, kwargs, name)


def _pack(out, name: str, join: Callable) -> tuple:
    """``(layout, join(leaves))`` for a checkpointed function's tuple, list or dict of results.

    ``layout``: the structure and the leaves' shapes and dtype, for :func:`_unpack`.
    One vector holds one dtype: results of several dtypes are refused.
    """
    leaves, treedef = flatten(out)
    leaves = [x if isinstance(x, Tensor) else np.asarray(x) for x in leaves]
    dtypes = {np.dtype(x.dtype) for x in leaves}
    if len(dtypes) != 1:
        raise AutogradDagError(f"{name}: the function returns {len(leaves)} results of dtypes "
                               f"{sorted(map(str, dtypes)) or 'none'}; a checkpoint returning several "
                               f"results needs one dtype for all (checkpoint them separately)")
    return (treedef, [x.shape for x in leaves]), join(leaves)


def _unpack(vector, layout):
    """The results :func:`_pack` packed into ``vector`` (a Tensor, or an array when nothing records)."""
    treedef, shapes = layout
    leaves, start = [], 0
    for shape in shapes:
        stop = start + int(np.prod(shape, dtype=np.int64))
        leaves.append(vector[start:stop].reshape(shape))
        start = stop
    return unflatten(treedef, leaves)


def _refuse_traced_reads(f: Callable, args: tuple, kwargs: dict, name: str) -> None:
    """Refuse a checkpointed ``f`` that reads a Tensor computed from an input of the jit/trace/vmap being recorded.

    The checkpoint node runs ``f`` on its arguments' numbers; anything else
    ``f`` reads is a number too, so a traced value read from outside (an
    integer index, a mask: nothing requiring a gradient) would be this call's
    on every later call, the first example's for a whole vmap batch. ``f`` is
    recorded once on fresh leaves holding the arguments' values (only while
    such a transformation records, once per trace): a traced leaf behind its
    result was read from outside, through a closure, a global or an attribute.
    """
    with _recording_as(True), random.replayed(), np.errstate(all="ignore"):
        result = _keywords_last(f, [Tensor(a.value if isinstance(a, Tensor) else np.asarray(a))
                                    for a in (*args, *kwargs.values())], tuple(kwargs))
    results = [x for x in flatten(result)[0] if isinstance(x, Tensor)]
    if not results:
        return  # (the checkpoint node refuses it, naming f)
    found = tracing.outer_traced_leaf(results)
    if found is not None:
        t, transformation = found
        what = f"'{t.name}' (shape {t.shape}, {t.dtype})" if t.name else f"a Tensor of shape {t.shape} ({t.dtype})"
        raise TracingError(
            f"{name}: the function reads {what}, computed from an input of {transformation}, from "
            f"outside its arguments; the checkpointed block runs on numbers, so it would keep this "
            f"call's values (the first example's for a whole vmap batch). Pass it as an argument, "
            f"e.g. ad.checkpoint(block)(x, i) with block(x, i){located(user_source())}")


def _closure_tensors(f: Callable) -> list[Tensor]:
    """The Tensors ``f`` holds: in its closure cells (alone, in a list, tuple or dict, or a module's
    parameters) and, for a module or a module's bound method, its parameters.

    What a checkpointed function can read without the checkpoint node knowing;
    a global or an attribute chain is caught at the backward instead (_refuse_closure_gradients).
    """
    held = [getattr(f, "__self__", f)]
    held += [c.cell_contents for c in (getattr(f, "__closure__", None) or ()) if _cell_has_contents(c)]
    found = []
    for obj in held:
        parameters = getattr(obj, "parameters", None)
        if callable(parameters) and not isinstance(obj, Tensor):
            found.extend(t for t in parameters() if isinstance(t, Tensor))
        elif isinstance(obj, Tensor):
            found.append(obj)
        elif isinstance(obj, (list, tuple)):
            found.extend(t for t in obj if isinstance(t, Tensor))
        elif isinstance(obj, dict):
            found.extend(t for t in obj.values() if isinstance(t, Tensor))
    return found


def _cell_has_contents(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a cell not filled yet (a name assigned after the function was made)
        return False
    return True


def _refuse_closure_tensor(t: Tensor, name: str, site) -> None:
    what = f"'{t.name}' (shape {t.shape})" if t.name else f"a Tensor of shape {t.shape}"
    raise NotDifferentiableError(
        f"{name}: the function reads {what}, which requires a gradient, from outside its arguments, "
        f"so its derivative would be lost; pass it as an argument, e.g. ad.checkpoint(block)(x, W) "
        f"with block(x, W){located(site)}")
