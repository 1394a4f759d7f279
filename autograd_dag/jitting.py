"""``trace`` and ``jit``: record a Python function once as a :class:`~autograd_dag.program.Program`, and run it.

:func:`trace` records ``f`` on example arguments (through the one tracer,
:func:`~autograd_dag.tracing.record`) and returns the program; :func:`jit`
does so once per input signature and then runs the program (Algorithm 4.1,
``Program.__call__``) on later arguments. :func:`retrace_jit` bumps the
counter that makes every jit function record again. The program model and
its executor are in :mod:`autograd_dag.program`; this module only builds
programs from functions. (Named ``jitting``, not ``jit``: a module ``jit``
would be shadowed by the function ``ad.jit``, and ``import autograd_dag.jit as m``
would give the function.)
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import operator
import os
import threading
from typing import Callable

import numpy as np

from . import parallel, trace_state
from .core import Tensor, as_array
from .errors import AutogradDagError, TracingError, user_source, located
from .passes import refuse_inputs_as_constants
from .program import Program
from .tracing import outer_traced_leaf, program_input, record
from .tree import flatten, leaf_paths, structure_key, unflatten


def trace(f: Callable, *example_args, name: str | None = None, **example_kwargs) -> Program:
    """Record ``f`` on example arguments and return its :class:`Program`.

    Each positional argument (an array, a scalar, a list of numbers or a
    Tensor) becomes one program input, named after ``f``'s parameter; a dict
    (of arrays, or of further dicts: a model's parameters) becomes one input
    per entry, named by its path (``params.fc1.weight``). Keyword arguments
    are inputs as under :func:`jit`: named by the keyword (``scale``;
    ``params.w`` inside a dict), after the positional ones, sorted by name
    (``f`` gets them so; call the program with them by name, ``prog(x, scale=2.0)``).
    ``name`` names the program, so it cannot be one of ``f``'s keywords here.
    ``f`` returns a Tensor, or a tuple, list or dict of them: one program output per Tensor.
    A Python number (float, int or bool) becomes an input of the floating dtype
    of the array arguments, as under :func:`jit` and numpy's promotion
    (``trace(f, x32, 2.0)`` has a float32 input and result; float64 without
    floating arrays); a list of numbers is a float64 array.
    Shapes: the program's inputs and outputs have the shapes of the example
    arguments and of ``f``'s results on them.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> f = lambda x1, x2: x2 * ad.exp(x1) * ad.sqrt(x1 + x2 * ad.exp(x1))
        >>> prog = ad.trace(f, 1.0, 2.0)
        >>> len(prog.inputs), len(prog)
        (2, 9)
        >>> prog = ad.trace(lambda x, scale=1.0: scale * ad.sum(x), np.ones(3), scale=2.0)   # x: (3,)
        >>> [prog.nodes[k].name for k in prog.inputs], float(prog(np.ones(3), scale=0.5))
        (['x', 'scale'], 1.5)
    """
    try:
        names = [p.name for p in inspect.signature(f).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    keywords = sorted(example_kwargs)   # (as jit passes them: sorted by name)
    _refuse_non_numeric((*example_args, *(example_kwargs[k] for k in keywords)), "trace",
                        list(range(len(example_args))) + keywords)
    # A list of numbers is one array, not a tree; a dict is a tree of inputs, one per leaf.
    args = tuple(a if isinstance(a, dict) or type(a) in _PYTHON_NUMBERS else a.value if isinstance(a, Tensor)
                 else as_array(a) for a in (*example_args, *(example_kwargs[k] for k in keywords)))
    # Python numbers weak, as jit takes them: trace(f, x32, 2.0) gave a float64 input and result.
    leaves, treedef = flatten(args)
    args = unflatten(treedef, _arguments_as_arrays([x.value if isinstance(x, Tensor) else x for x in leaves]))
    names = names[:len(example_args)] + [f"x{p}" for p in range(len(names), len(example_args))] + keywords
    labels = iter([".".join([names[p[0]], *map(str, p[1:])]) for p in leaf_paths(args)])
    args = tuple(_as_arrays(a) for a in args)
    with _turn():
        rec = record(f, args[:len(example_args)], lambda i, value: program_input(value, next(labels)),
                     what="trace", reused=True, kwargs=dict(zip(keywords, args[len(example_args):])))
    fname = name or getattr(f, "__name__", "f")
    if fname == "<lambda>":
        fname = "f"
    # Traced inside jit/trace/vmap, a value of that transformation read from a closure would be a
    # constant of this program: the enclosing one's first call (first example) for every later one.
    found = outer_traced_leaf(rec.outputs, rec.inputs)
    if found is not None:
        t, transformation = found
        raise TracingError(f"trace: '{fname}' reads a Tensor of shape {t.shape} ({t.dtype}) computed from an "
                           f"input of {transformation}, from outside its arguments; its program would keep "
                           f"this call's values as a constant. Pass it as an argument of '{fname}'"
                           f"{located(user_source())}")
    prog = Program.from_outputs(tuple(rec.inputs), tuple(rec.outputs), name=fname)
    refuse_inputs_as_constants(prog, rec.inputs, "trace")
    prog.single_output = not isinstance(rec.result, (tuple, list, dict))
    return prog


def _as_arrays(tree):
    """``tree`` with each leaf an ndarray (a Tensor's value; a number or a list of numbers as float64)."""
    leaves, treedef = flatten(tree)
    return unflatten(treedef, [x.value if isinstance(x, Tensor) else as_array(x) for x in leaves])


# Held while jit or trace records a function. The tracer's state (trace_state's stack of running
# transformations, core's recording flag) is the process's, not a thread's: the first calls of one
# jit function on 4 threads recorded at once, pushing and popping each other's transformations
# (wrong gradients), and a call of a traced signature on another thread meanwhile took the
# recording for its own and returned Tensors (tests/test_jit_adversarial.py). Reentrant: f may call
# jit functions. Only recording takes it: a call running a traced program never waits.
_recording = threading.RLock()


def _after_fork_in_child() -> None:
    # A fork while another thread recorded left the child a lock no thread of it would release:
    # its first recording hung (tests/test_jit_adversarial.py).
    global _recording
    _recording = threading.RLock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _turn():
    """The recording lock to hold while recording; on a worker of the thread pool, none.

    A worker runs chunks for a thread that may be recording (an operation of
    ``f`` split over the pool, whose chunks call a jit function) and waits
    for them: a worker waiting for that thread's lock hung both.
    """
    return contextlib.nullcontext() if parallel.on_worker() else _recording

# The state ``ad.jit``'s programs were traced under, beyond their arguments and the
# arrays they read in place: bumped by retrace_jit() when that changes.
_trace_epoch = 0


def retrace_jit() -> None:
    """Make every ``ad.jit`` function trace again on its next call.

    A program is recorded once per input signature; what ``f`` read from outside
    its arguments is fixed in it then (the modes of the modules it calls, the
    arrays it closes over by identity). ``Module.train()``/``eval()`` call this
    when a mode changes, ``load_state_dict`` when it has to replace an array
    rather than copy into it, and a module when one of its parameters, buffers
    or layers is replaced by assignment; call it after rebinding such an array
    yourself (``p.value = ...``).
    """
    global _trace_epoch
    _trace_epoch += 1


def _refuse_non_numeric(args: tuple, what: str, where: list | None = None) -> None:
    """Refuse an argument jit or trace would make a program input although it is no number.

    A string became a string array (``getattr(ad, act)`` then got a Tensor), a
    function "a numeric array of a function": both are settings of f, fixed when
    it is traced, so the way to pass them is a closure (or, to jit, a static
    argument). ``where``: each argument's position, or its name for a keyword
    argument (default: positions 0, 1, ...).
    """
    for position, arg in enumerate(args):
        for leaf in flatten(arg)[0]:
            if isinstance(leaf, (str, bytes)) or leaf is None or (
                    callable(leaf) and not isinstance(leaf, (Tensor, np.ndarray, np.generic))):
                at = position if where is None else where[position]
                shown = repr(leaf) if len(repr(leaf)) <= 40 else type(leaf).__name__
                static = f"static_argnames={at!r}" if isinstance(at, str) else f"static_argnums={at}"
                raise TracingError(
                    f"{what}: {_argument_label(at)} is {type(leaf).__name__} ({shown}), not a number or an array: "
                    f"{what}'s arguments become the program's inputs. A setting fixed when f is traced "
                    f"(a name, a function, None) is passed by a closure: close over it, "
                    f"{what}(lambda x: f(x, {f'{at}=' if isinstance(at, str) else ''}{shown})"
                    f"{', x' if what == 'trace' else ''})"
                    f"{f', or mark it static: ad.jit(f, {static})' if what == 'jit' else ''}{located(user_source())}")


def _argument_label(at) -> str:
    """``argument 1`` for a position, ``keyword argument 'scale'`` for a name."""
    return f"keyword argument {at!r}" if isinstance(at, str) else f"argument {at}"


# Python numbers: weak, as numpy 2 and an eager call take them (a bool or int too: ``as_array``
# makes them floats, and a float64 input ``step`` made ``w32 * step`` float64 under jit only).
_PYTHON_NUMBERS = (float, int, bool)


def _arguments_as_arrays(leaves: list) -> list:
    """jit's arguments as arrays: a Python number takes the floating dtype of the array arguments.

    As numpy 2 promotes a Python number (weakly), so that a float32 model's step
    ``step(params32, x32, lr)`` stays float32 (a float64 input ``lr`` turned every
    array it touched float64). Without floating arrays it is float64.
    """
    arrays = [None if type(x) in _PYTHON_NUMBERS else as_array(x) for x in leaves]
    if len(arrays) == sum(a is not None for a in arrays):
        return arrays
    floats = [a.dtype for a in arrays if a is not None and a.dtype.kind == "f"]
    weak = np.result_type(*floats) if floats else np.float64
    return [np.array(x, weak) if a is None else a for x, a in zip(leaves, arrays)]


def jit(f: Callable | None = None, *, static_argnums=None, static_argnames=None) -> Callable:
    """``f`` traced once per input signature into a :class:`Program`, then run as that program.

    The first call with given shapes and dtypes records ``f`` (Python control
    flow is fixed then, as with ``jax.jit``); every later call executes the
    program on numpy arrays (Algorithm 4.1): no Tensors are made and nothing
    is recorded, so the per-operation cost is little more than numpy's. It
    composes with the transformations: ``ad.jit(ad.grad(loss))`` traces the
    gradient program once. Arguments may be nested tuples/lists/dicts of
    arrays; arrays that ``f`` reads from outside (closures) become constants
    of the program, read by identity: changes made in place (an optimizer's
    step) are seen, a rebound name is not, so pass everything that changes
    between calls as an argument. A module switched by ``train()``/``eval()``,
    reloaded by ``load_state_dict`` or given a new parameter, buffer or layer
    (``model.head = nn.Linear(...)``) makes every jit function trace again
    (:func:`retrace_jit`). Called on arrays, it returns numpy arrays, which
    carry no derivative: a Tensor that ``f`` reads from a closure (a model's
    weight) gets no gradient through them, so train with the parameters as
    arguments (``ad.jit(ad.value_and_grad(loss))(params, x, y)``); called on
    Tensors, it records ``f`` as usual. The arrays it returns are the caller's own, as
    ``jax.jit``'s are fresh buffers: none shares memory with an argument, a closure's
    array or another output (``jit(lambda t: (t, t))`` returns two copies), and no
    later call writes into them. A Python float argument (a learning rate)
    is an input of the floating dtype of the array arguments (float32 beside a
    float32 model), as numpy promotes a Python number (an int or a bool as well: they
    are floats here, as ``Tensor(3)`` is). ``.programs`` holds the traced
    programs by signature.

    Keyword arguments are inputs as positional ones are (their values are
    never frozen into the program); the signature holds their names, so the
    order they are passed in does not matter (``f`` gets them sorted by name,
    as from ``jax.jit``). ``static_argnums`` (positions; a negative one counts
    from the end of the call's positional arguments) and ``static_argnames``
    (names) mark arguments passed to ``f`` as the Python values they are — a
    layer count, an activation's name, a flag for Python control flow: each
    distinct value (it must be hashable) traces ``f`` once and is part of the
    signature in ``.programs``. Each completes the other from ``f``'s signature,
    so a static parameter is static passed either way. Used as a decorator with
    options: ``@functools.partial(ad.jit, static_argnames="n")`` or
    ``@ad.jit(static_argnames="n")``.

    Shapes: as ``f``'s.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> fast_grad = ad.jit(ad.grad(lambda w, x: ad.tanh(x @ w).sum()))
        >>> g = fast_grad(np.ones(3), np.eye(3))          # traces, then runs the program
        >>> bool(np.allclose(g, fast_grad(np.ones(3), np.eye(3))))  # runs the program only
        True
        >>> len(fast_grad.programs)
        1
        >>> def power_sum(x, n, scale=1.0):                # x: (3,), n: a static int, scale: ()
        ...     for _ in range(n - 1):
        ...         x = x * x
        ...     return scale * ad.sum(x)
        >>> step = ad.jit(power_sum, static_argnames="n")
        >>> float(step(np.full(3, 2.0), n=2, scale=0.5)), float(step(np.full(3, 2.0), n=3, scale=0.5))
        (6.0, 24.0)
        >>> len(step.programs)                            # one program per value of n
        2
    """
    if f is None:   # @ad.jit(static_argnames=...): the decorator with these options
        return functools.partial(jit, static_argnums=static_argnums, static_argnames=static_argnames)
    fname = getattr(f, "__name__", "f")
    statics = _static_arguments(f, fname, static_argnums, static_argnames)
    programs: dict = {}
    traced_in = [_trace_epoch]  # the epoch the programs were recorded in

    def wrapped(*args, **kwargs):
        if kwargs:
            return _call_with_keywords(f, fname, programs, traced_in, statics, args, kwargs)
        leaves, treedef = flatten(args)
        if any(isinstance(x, Tensor) for x in leaves):
            return f(*args)  # inside another transformation: let it record through f
        if trace_state.transforming():
            # Another thread's jit or trace recording (then waited for here) or this thread's own.
            with _turn():
                if trace_state.transforming():
                    return f(*args)  # inside another transformation: let it record through f
        if traced_in[0] != _trace_epoch:
            programs.clear()  # recorded under a state that has changed since (retrace_jit)
            traced_in[0] = _trace_epoch
        _refuse_non_numeric(args, "jit")
        arrays = _arguments_as_arrays(leaves)
        key = (structure_key(treedef), tuple((a.shape, a.dtype.str) for a in arrays))
        entry = programs.get(key)
        if entry is None:
            with _turn():
                entry = programs.get(key)   # recorded by another thread meanwhile?
                if entry is None:
                    entry = programs[key] = _recorded(f, fname, unflatten(treedef, arrays))
        program, out_treedef = entry
        return unflatten(out_treedef, list(program(*arrays)))

    def with_statics(*args, **kwargs):   # (every call may hold a static argument)
        return _call_with_keywords(f, fname, programs, traced_in, statics, args, kwargs)

    jitted = with_statics if statics[0] or statics[1] else wrapped
    jitted.__name__ = f"jit_{fname}"
    jitted.__doc__ = f.__doc__
    jitted.programs = programs
    return jitted


def _call_with_keywords(f, fname: str, programs: dict, traced_in: list, statics: tuple, args: tuple, kwargs: dict):
    """A jit call with keyword or static arguments (a call with neither keeps ``jit``'s short path).

    The dynamic arguments — positional ones, then keyword ones sorted by name —
    are flattened into the program's inputs; the signature adds the keyword
    names and the static arguments' values (with their types: ``1`` and ``1.0``
    trace apart, as ``range(n)`` takes one only).
    """
    nums, names, name_of = statics
    fixed = {n + len(args) if n < 0 else n for n in nums} & set(range(len(args)))
    order = sorted(kwargs)
    dynamic_names = [k for k in order if k not in names]
    where = [i for i in range(len(args)) if i not in fixed] + dynamic_names
    dynamic = tuple(args[i] if isinstance(i, int) else kwargs[i] for i in where)
    leaves, treedef = flatten(dynamic)
    if any(isinstance(x, Tensor) for x in leaves):
        return f(*args, **kwargs)  # inside another transformation: let it record through f
    if trace_state.transforming():
        with _turn():   # (as jit's short path)
            if trace_state.transforming():
                return f(*args, **kwargs)
    if traced_in[0] != _trace_epoch:
        programs.clear()
        traced_in[0] = _trace_epoch
    _refuse_non_numeric(dynamic, "jit", where)
    # Keyed by name where f's signature has one (f(x, 3) and f(x, n=3) run one program), sorted.
    static_values = tuple(sorted([(name_of.get(i, i), type(args[i]), args[i]) for i in fixed] + [
        (k, type(kwargs[k]), kwargs[k]) for k in order if k in names], key=lambda entry: str(entry[0])))
    arrays = _arguments_as_arrays(leaves)
    key = (structure_key(treedef), tuple((a.shape, a.dtype.str) for a in arrays), tuple(dynamic_names), static_values)
    try:
        entry = programs.get(key)
    except TypeError as exc:
        raise _unhashable(static_values, fname, exc) from None
    if entry is None:
        with _turn():
            entry = programs.get(key)   # recorded by another thread meanwhile?
            if entry is None:
                inputs = iter(unflatten(treedef, arrays))
                positional = tuple(args[i] if i in fixed else next(inputs) for i in range(len(args)))
                keywords = {k: kwargs[k] if k in names else next(inputs) for k in order}
                unchanged = fixed | {len(args) + j for j, k in enumerate(order) if k in names}
                entry = programs[key] = _recorded(f, fname, positional, keywords, unchanged)
    program, out_treedef = entry
    return unflatten(out_treedef, list(program(*arrays)))


def _unhashable(static_values: tuple, fname: str, exc: Exception) -> Exception:
    """The error for a static argument jit cannot key its programs by (the first one that is not hashable)."""
    for at, _, value in static_values:
        try:
            hash(value)
        except TypeError as reason:
            shown = repr(value) if len(repr(value)) <= 40 else type(value).__name__
            return TracingError(
                f"jit: static argument {at!r} of {fname} is {type(value).__name__} ({shown}), which is "
                f"not hashable ({reason}); jit keeps one program per value of a static argument, keyed by it. "
                f"Pass a hashable value (a tuple for a list), or leave the argument out of static_argnums and "
                f"static_argnames to make it an input of the program{located(user_source())}")
    return exc


def _as_tuple(value, kind: type, option: str) -> tuple:
    """``static_argnums`` (ints) or ``static_argnames`` (strings) as a tuple: one, or an iterable of them."""
    if value is None:
        return ()
    items = (value,) if isinstance(value, (int, str)) else value
    try:
        items = tuple(items)
        if kind is int:
            return tuple(operator.index(n) for n in items)
    except TypeError:
        items = None
    if items is None or not all(isinstance(x, kind) for x in items):
        raise AutogradDagError(f"jit: {option}={value!r} must be {'an int' if kind is int else 'a str'} or a "
                               f"sequence of them{located(user_source())}")
    return items


def _static_arguments(f: Callable, fname: str, static_argnums, static_argnames) -> tuple[tuple, frozenset, dict]:
    """jit's static arguments: ``(positions, names, {position: its name})``, checked against ``f``'s signature and each completed
    from the other, as ``jax.jit`` does (a parameter made static by position is static passed by name too).

    A position beyond ``f``'s positional parameters, or a name that is none of its
    keyword parameters, is refused (unless ``f`` takes ``*args`` or ``**kwargs``).
    Negative positions count from the end of each call's positional arguments (JAX's rule).
    """
    nums = _as_tuple(static_argnums, int, "static_argnums")
    names = _as_tuple(static_argnames, str, "static_argnames")
    if not nums and not names:
        return (), frozenset(), {}
    try:
        parameters = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):   # (a builtin without a signature: nothing to check against)
        return nums, frozenset(names), {}
    P = inspect.Parameter
    kinds = {p.kind for p in parameters}
    positional = [p.name for p in parameters if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    shown = f"{fname}{inspect.signature(f)}"
    if P.VAR_POSITIONAL not in kinds and any(not -len(positional) <= n < len(positional) for n in nums):
        raise AutogradDagError(f"jit: static_argnums={static_argnums!r}, but {shown} takes {len(positional)} "
                               f"positional argument(s){located(user_source())}")
    for name in names:
        kind = next((p.kind for p in parameters if p.name == name), None)
        if kind is P.POSITIONAL_ONLY or (kind is None and P.VAR_KEYWORD not in kinds):
            raise AutogradDagError(
                f"jit: static_argnames={static_argnames!r} names {name!r}, which "
                f"{'is positional-only: use static_argnums' if kind is not None else 'is not a parameter'} of {shown}"
                f"{located(user_source())}")
    by_position = [(i, p.name) for i, p in enumerate(parameters) if p.kind is P.POSITIONAL_OR_KEYWORD]
    return (tuple(sorted(set(nums) | {i for i, name in by_position if name in names})),
            frozenset(names) | {name for i, name in by_position if i in nums}, dict(by_position))


def _recorded(f, fname: str, args: tuple, kwargs: dict | None = None, unchanged=frozenset()) -> tuple:
    """jit's entry for one signature: ``f`` recorded on ``args`` and ``kwargs``, trees of arrays (its program,
    its outputs' structure); the arguments at the positions in ``unchanged`` (static ones; keyword argument j
    is position ``len(args) + j``) are passed as they are."""
    count = itertools.count()
    names = list(kwargs or ())
    # A keyword argument's inputs are named by it (``scale``; ``params.w`` inside a dict), as trace names them.
    paths = {k: iter([".".join([k, *map(str, p)]) for p in leaf_paths(v)]) for k, v in (kwargs or {}).items()}

    def make_input(position, value):
        if position in unchanged:
            return None
        return program_input(value, f"x{next(count)}" if position < len(args) else next(paths[names[position - len(args)]]))
    rec = record(f, args, make_input, what="jit", reused=True, kwargs=kwargs)
    program = Program.from_outputs(tuple(rec.inputs), tuple(rec.outputs), name=fname)
    refuse_inputs_as_constants(program, rec.inputs, "jit")
    return program.without_common_subexpressions(), rec.out_tree
