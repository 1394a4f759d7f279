"""The one tracer and the one walk: record a Python function on fresh input nodes, and walk what it recorded.

Every transformation starts the same way: flatten the arguments, replace the
leaves it works on by fresh input Tensors, call the function while operations
record, and flatten what it returns. :func:`record` does that once for
``trace``, ``jit``, ``vjp``, ``grad``, ``value_and_grad``, ``jvp`` and
``vmap``; each transformation only says which leaves become inputs and how
(:func:`slot_input` for the derivatives, :func:`program_input` for programs).

It also decides whether the transformation must *record* its own work (its
derivative sweep, its batched nodes) instead of computing bare values: when
its arguments are Tensors, or when its function read an input of an enclosing
transformation through a closure (:func:`depends_on_outer`) — otherwise that
enclosing transformation would see a constant and a zero derivative.

:func:`topological_nodes` is the one walk over recorded nodes: the reverse
and forward sweeps, ``vmap`` and program extraction all use it. (The eager
``backward()`` alone needs none: it visits nodes newest first by their
``serial``, as it reaches them; see ``autodiff.reverse_sweep``.)
"""

from __future__ import annotations

import contextlib
from operator import attrgetter
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from . import trace_state
from .core import Tensor, _set_recording
from .errors import (AutogradDagError, ChangedInPlaceError, GraphFreedError, NotDifferentiableError,
                     user_source, located)
from .graph import paused_gc, reachable, topological_sort
from .primitives.structure import identity
from .tree import flatten, unflatten


_requires_grad = attrgetter("requires_grad")


class Recording(NamedTuple):
    """What :func:`record` returns.

    ``slots[p]``: the input Tensors made for argument p (in leaf order; empty
    for an argument left as it was); ``inputs``: all of them, in order;
    ``outputs``: the function's result leaves as Tensors, ``out_tree`` their
    structure; ``result``: what ``f`` returned (less ``aux``); ``aux``: the
    auxiliary result (``has_aux``); ``nested``: whether the transformation
    must record its own work; ``inner``: the ids of the inputs of the
    transformations ``f`` ran itself.
    """

    slots: list
    inputs: list
    outputs: list
    out_tree: Any
    result: Any
    aux: Any
    nested: bool
    inner: frozenset = frozenset()


def record(f: Callable, args: tuple, make_input: Callable[[int, Any], Tensor | None], *, what: str,
           has_aux: bool = False, reused: bool = False, kwargs: dict | None = None) -> Recording:
    """Call ``f(*args, **kwargs)`` recording, each leaf of argument p replaced by ``make_input(p, leaf)``.

    ``reused``: the recording becomes a program run again on other arguments
    (jit, trace, vmap), so the inputs' numbers may not be read (``core.concrete``).
    The one tracer: every transformation, and ``checkpoint``'s replay, records through it.

    ``make_input`` returns the input Tensor for a leaf, or None to pass it unchanged; keyword
    argument j is position ``len(args) + j`` (``slots`` too). Shapes: as ``f``'s.
    """
    slots, rebuilt, nested = [], [], False
    for position, arg in enumerate((*args, *kwargs.values()) if kwargs else args):
        leaves, tree = flatten(arg)
        made, new_leaves = [], []
        for leaf in leaves:
            nested = nested or isinstance(leaf, Tensor)
            t = make_input(position, leaf)
            if t is not None:
                made.append(t)
                leaf = t
            new_leaves.append(leaf)
        slots.append(made)
        rebuilt.append(unflatten(tree, new_leaves))
    inputs = [t for made in slots for t in made]
    # inner: the inputs of the transformations f runs itself (an inner grad's slots)
    inner: set[int] = set()
    with tracing(inputs, reused_as=what if reused else None, collect=inner):
        out = f(*rebuilt[:len(args)], **dict(zip(kwargs, rebuilt[len(args):]))) if kwargs else f(*rebuilt)
    aux = None
    if has_aux:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise AutogradDagError(f"{what}(has_aux=True): f must return a pair (output, aux); "
                                   f"got {type(out).__name__}"
                                   + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else ""))
        out, aux = out
    leaves, out_tree = flatten(out)
    if any(o is None for o in leaves):
        # Usually a forgotten ``return``; Tensor(None) would only say "cannot make a numeric array".
        fname = getattr(f, "__name__", "f")
        raise AutogradDagError(f"{what}: {fname} returned None{' (inside its result)' if out is not None else ''}"
                               f"; it must return a Tensor (or a tuple, list or dict of them): a missing "
                               f"return statement?{located(_definition_site(f))}")
    outputs = [o if isinstance(o, Tensor) else Tensor(o) for o in leaves]
    nested = nested or depends_on_outer(outputs, inputs)
    return Recording(slots, inputs, outputs, out_tree, out, aux, nested, frozenset(inner))


@contextlib.contextmanager
def tracing(inputs, reused_as: str | None = None, collect: set | None = None):
    """Context manager: run a transformation's function, recording, with ``inputs`` (Tensors) as its inputs.

    ``reused_as``: the transformation's name when the recording becomes a
    program run again on other arguments (then ``core.concrete`` refuses to
    read the inputs' values). ``collect``: a set that gathers the input ids
    of the transformations started inside. The one writer of
    :mod:`~autograd_dag.trace_state`; the garbage collector pauses meanwhile
    (a recording makes many objects and frees none).

    Example: ``with tracing([x]): y = ad.sin(x)`` records ``y`` with ``x`` as an input.
    """
    previous = _set_recording(True)
    trace_state.enter(inputs, reused_as, collect)
    try:
        with paused_gc():
            yield
    finally:
        trace_state.leave()
        _set_recording(*previous)


def _definition_site(f: Callable) -> tuple[str, int] | None:
    """``(filename, first line)`` of a Python function ``f``, or the user's current line."""
    code = getattr(f, "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else user_source()


def slot_input(x, what: str) -> Tensor:
    """The Tensor a derivative is taken with respect to, for one argument leaf.

    Always a fresh node, so that results keyed by Tensor identity belong to
    this slot alone: an outer Tensor passed in two slots, or also read from a
    closure, gets one identity node per slot (the outer sweep sees through
    it). Float inputs are marked as requiring a gradient, which is what lets
    numpy's conversion refuse them (see ``Tensor.__array__``). Integer arrays
    (indices, labels) stay integer: inputs with a zero derivative.
    """
    refuse_complex(x, what)
    if isinstance(x, Tensor):
        t = identity(x)
        t.name = x.name
    else:
        t = Tensor(x)
    if t.value.dtype.kind == "f":
        t.requires_grad = True
    return t


def program_input(value, name: str) -> Tensor:
    """A program input: float inputs are marked as requiring a gradient.

    The program is a function of them, so a numpy conversion that would bake
    their current value into it as a constant is refused (``Tensor.__array__``).
    """
    t = Tensor(value.value if isinstance(value, Tensor) else value, name=name)
    if t.value.dtype.kind == "f":
        t.requires_grad = True
    return t


def refuse_complex(value, what: str) -> None:
    """Raise :class:`NotDifferentiableError` if ``value`` (an array or Tensor) is complex.

    Complex derivatives need a convention (JAX's and PyTorch's differ) and
    rules written for it; the rules here are real. Refusing is better than
    a derivative that silently drops the imaginary direction.
    """
    dtype = value.dtype if isinstance(value, (Tensor, np.ndarray)) else np.asarray(value).dtype
    if dtype.kind == "c":
        raise NotDifferentiableError(
            f"{what} is complex ({dtype}); autograd_dag differentiates real numbers only: split "
            f"complex numbers into their real and imaginary parts (z.real, z.imag){located(user_source())}")


def depends_on_outer(outputs, inputs) -> bool:
    """Whether ``outputs`` depend on an input of an enclosing transformation, other than via ``inputs``.

    Then the transformation at hand must record its derivative (and return
    Tensors), or the enclosing one would see a constant: a silently zero
    derivative of ``w`` in ``grad(lambda w: grad(lambda x: f(x, w))(x0))``.
    Free at the top level, where no transformation encloses this one.
    """
    if not trace_state.transforming():
        return False
    outer = trace_state.enclosing_inputs()
    stop = {id(t) for t in inputs}
    # Inside jit, trace or vmap the outer inputs' *values* matter, not only their derivatives:
    # bare numbers computed from an integer one (an index, a count: nothing requiring a
    # gradient) would be a constant of that program, the first call's (the first example's)
    # for every later one. So every parent is followed there; elsewhere only the differentiated.
    along = None if trace_state.program_depth() else _requires_grad
    return any(id(t) in outer and id(t) not in stop for t in _behind(outputs, stop, along))


def _behind(outputs, stop, along: Callable[[Tensor], bool] | None = None) -> dict:
    """The recorded nodes behind ``outputs`` (themselves included), not walking behind the ids in ``stop``.

    With ``along``, only through nodes it accepts (``_requires_grad``: the
    differentiated ones). The tracer's one reachability walk: graph's
    :func:`~autograd_dag.graph.reachable` (iterative, so a chain of 10⁶ nodes
    is walked without recursion), keyed by node in the order reached.

    Example: ``_behind([y], {id(x)})`` holds ``y``, ``x`` and what lies between, not what is behind ``x``.
    """
    if along is None:
        return reachable(outputs, lambda t: () if id(t) in stop else t.parents or ())
    return reachable(filter(along, outputs), lambda t: () if id(t) in stop else filter(along, t.parents or ()))


def outer_traced_leaf(outputs, inputs=()) -> tuple[Tensor, str] | None:
    """A leaf behind ``outputs`` (not passing through ``inputs``) that is an input of an enclosing
    ``jit``, ``trace`` or ``vmap`` being recorded, with that transformation's name; or None.

    Code that turns what it reads into numbers (a checkpointed block, a program of its
    own) would keep such a leaf's values for every later call of the enclosing program.
    Free when no such transformation records.
    """
    if not trace_state.program_depth():
        return None
    for t in topological_nodes(outputs, {id(t) for t in inputs}):
        if not t.parents and (transformation := trace_state.program_behind(t)) is not None:
            return t, transformation
    return None


def depends_on_a_leaf(outputs, inputs, inner: frozenset = frozenset()) -> bool:
    """Whether ``outputs`` depend on a leaf that requires a gradient, other than ``inputs`` (and ``inner``, ids).

    Such a leaf is a parameter read from a closure (or an enclosing
    transformation's input). A transformation that is not a derivative
    (``vmap``, a loop without the loop) must then record, so that its results
    carry that leaf's gradient as the loop's would; returning arrays would
    drop it silently from a later ``backward()``. The leaves an inner
    transformation made itself (``Recording.inner``: the slots of ``grad`` in
    ``vmap(lambda v: hvp(f, x, v))``) are no parameter of the caller's.
    """
    stop = {id(t) for t in inputs} | inner
    return any(not t.parents and id(t) not in stop for t in _behind(outputs, stop, _requires_grad))


def values_of(tree, nested: bool):
    """``tree`` with its Tensors as arrays, unless ``nested`` (then Tensors stay, to be differentiated)."""
    if nested:
        return tree
    leaves, structure = flatten(tree)
    return unflatten(structure, [np.asarray(x.value) if isinstance(x, Tensor) else x for x in leaves])


def topological_nodes(outputs: Sequence[Tensor], stop=frozenset(), prune_constant: bool = False,
                      what: str = "backward") -> list[Tensor]:
    """Recorded nodes behind ``outputs``, parents before children (:func:`~autograd_dag.graph.topological_sort`).

    Parents are visited in argument order, so the order is deterministic:
    programs renumber them in the order they were recorded. The walk does not go behind
    Tensors whose id is in ``stop``; with ``prune_constant`` it skips nodes
    that do not require a gradient. ``what`` names the caller in the error
    for a graph freed by ``backward()``.
    """
    keep = _requires_grad if not stop else (lambda p: p.requires_grad or id(p) in stop)

    def parents(t):
        if id(t) in stop:
            return ()
        ps = t.parents
        if ps is None:
            raise graph_freed(t, what)
        return filter(keep, ps) if prune_constant else ps

    # A node only ever reads older ones: no cycle to look for.
    return topological_sort(filter(keep, outputs) if prune_constant else outputs, parents, check=False)


def changed_since_recorded(p: Tensor, t: Tensor, what: str) -> ChangedInPlaceError:
    """The error for a node ``t`` recorded before its input ``p`` was changed in place (core.changed_in_place)."""
    subject = f"'{p.name}' (shape {p.shape})" if p.name else f"a leaf of shape {p.shape}"
    return ChangedInPlaceError(
        f"{what}: {subject} was changed in place (an optimizer's step(), load_state_dict, ad.changed_in_place) "
        f"after '{t.prim.name}'{located(t.source)} was recorded with its old value, so this graph "
        f"cannot be differentiated any more; record the forward pass again after the change (or call "
        f"backward() before step())")


def graph_freed(t: Tensor, what: str) -> GraphFreedError:
    """The error for a walk that reached ``t`` after a ``backward()`` freed the graph behind it."""
    return GraphFreedError(
        f"{what}: the graph behind '{t.prim.name}'{located(t.source)} was already freed by a "
        f"previous backward(); pass retain_graph=True to the first backward() to keep it")
