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
import inspect
import os
import threading
from typing import Callable

import numpy as np

from . import parallel, trace_state
from .core import Tensor, as_array
from .errors import TracingError, user_source, located
from .passes import refuse_inputs_as_constants
from .program import Program
from .tracing import outer_traced_leaf, program_input, record
from .tree import flatten, leaf_paths, structure_key, unflatten


def trace(f: Callable, *example_args, name: str | None = None) -> Program:
    """Record ``f`` on example arguments and return its :class:`Program`.

    Each positional argument (an array, a scalar, a list of numbers or a
    Tensor) becomes one program input, named after ``f``'s parameter; a dict
    (of arrays, or of further dicts: a model's parameters) becomes one input
    per entry, named by its path (``params.fc1.weight``). ``f`` returns a
    Tensor, or a tuple, list or dict of them: one program output per Tensor.
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
    """
    try:
        names = [p.name for p in inspect.signature(f).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    _refuse_non_numeric(example_args, "trace")
    # A list of numbers is one array, not a tree; a dict is a tree of inputs, one per leaf.
    args = tuple(a if isinstance(a, dict) or type(a) in _PYTHON_NUMBERS else a.value if isinstance(a, Tensor)
                 else as_array(a) for a in example_args)
    # Python numbers weak, as jit takes them: trace(f, x32, 2.0) gave a float64 input and result.
    leaves, treedef = flatten(args)
    args = unflatten(treedef, _arguments_as_arrays([x.value if isinstance(x, Tensor) else x for x in leaves]))
    labels = iter([".".join([names[p[0]] if p[0] < len(names) else f"x{p[0]}", *map(str, p[1:])])
                   for p in leaf_paths(args)])
    with _turn():
        rec = record(f, tuple(_as_arrays(a) for a in args), lambda i, value: program_input(value, next(labels)),
                     what="trace", reused=True)
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


def _refuse_non_numeric(args: tuple, what: str) -> None:
    """Refuse an argument jit or trace would make a program input although it is no number.

    A string became a string array (``getattr(ad, act)`` then got a Tensor), a
    function "a numeric array of a function": both are settings of f, fixed when
    it is traced, so the way to pass them is a closure.
    """
    for position, arg in enumerate(args):
        for leaf in flatten(arg)[0]:
            if isinstance(leaf, (str, bytes)) or leaf is None or (
                    callable(leaf) and not isinstance(leaf, (Tensor, np.ndarray, np.generic))):
                shown = repr(leaf) if len(repr(leaf)) <= 40 else type(leaf).__name__
                raise TracingError(
                    f"{what}: argument {position} is {type(leaf).__name__} ({shown}), not a number or an array: "
                    f"{what}'s arguments become the program's inputs. A setting fixed when f is traced "
                    f"(a name, a function, None) is passed by a closure: close over it, "
                    f"{what}(lambda x: f(x, {shown}){', x' if what == 'trace' else ''}){located(user_source())}")


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


def jit(f: Callable) -> Callable:
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

    Shapes: as ``f``'s.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> fast_grad = ad.jit(ad.grad(lambda w, x: ad.tanh(x @ w).sum()))
        >>> g = fast_grad(np.ones(3), np.eye(3))          # traces, then runs the program
        >>> bool(np.allclose(g, fast_grad(np.ones(3), np.eye(3))))  # runs the program only
        True
        >>> len(fast_grad.programs)
        1
    """
    programs: dict = {}
    traced_in = [_trace_epoch]  # the epoch the programs were recorded in
    fname = getattr(f, "__name__", "f")

    def wrapped(*args):
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
                    entry = programs[key] = _recorded(f, fname, treedef, arrays)
        program, out_treedef = entry
        return unflatten(out_treedef, list(program(*arrays)))

    wrapped.__name__ = f"jit_{fname}"
    wrapped.__doc__ = f.__doc__
    wrapped.programs = programs
    return wrapped


def _recorded(f, fname: str, treedef, arrays: list) -> tuple:
    """jit's entry for one signature: ``f`` recorded on ``arrays`` (its program, its outputs' structure)."""
    count = iter(range(len(arrays)))
    rec = record(f, unflatten(treedef, arrays), lambda i, value: program_input(value, f"x{next(count)}"),
                 what="jit", reused=True)
    program = Program.from_outputs(tuple(rec.inputs), tuple(rec.outputs), name=fname)
    refuse_inputs_as_constants(program, rec.inputs, "jit")
    return program.without_common_subexpressions(), rec.out_tree
