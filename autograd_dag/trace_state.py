"""The tracer's state: which transformations are running now, and on which inputs.

One owner, one writer. The state is the stack of the transformations whose
function is running (``grad``, ``vjp``, ``jvp``, ``vmap``, ``jit``, ``trace``,
a checkpoint's replay), each with the ids of its input Tensors; the sub-stack
of those that record a program to run again on other arguments (``jit``,
``trace``, ``vmap``), whose inputs' numbers must not be read; and the open
collections of inputs that ``tracing.record`` keeps for an enclosing
transformation. Only :mod:`autograd_dag.tracing` changes it, through
:func:`enter` and :func:`leave`; everyone else reads it through the functions
below.

Why a module of its own, *below* ``core`` (imports point down, see
``tests/test_layers.py``): the tracer records through ``core.apply`` and so
stands above ``core``, but ``core`` must ask the state questions itself — on
every operation that lifts an ndarray operand (is a program being recorded?
then the operand is not copied) and whenever a Tensor's numbers are read
(``concrete``, which ``float(t)``, ``t.item()``, ``bool(t)`` and
``np.asarray(t)`` call: does this value depend on a program's input?). Kept
in ``core`` the state would be written from above; kept in ``tracing`` it
could not be read from ``core``. Here it knows nodes only as objects with a
``parents`` tuple and imports nothing of the library but graph's walk, so
``core``'s Tensor-typed entry points (``concrete``, ``tracer_of``, ``traced``)
are a few lines each that read it.

The state is this thread's (``modes.py``): a transformation running on one
thread is not running on another. ``core`` reads ``recording_programs``'s
truth from the modes directly on its hot path, where a function call would
cost more than the test; only this module changes the three lists.
"""

from __future__ import annotations

from typing import Iterable

from .graph import reachable
from .modes import _per_thread

# This thread's modes hold the three lists (modes.Modes):
# ``active``: per running transformation, outermost first, the ids of its inputs, whether it
#   records a program, and the set it collects inner transformations' inputs in (or None). An
#   inner transformation whose result depends on an outer one's input (a closure over it) must
#   record its own sweep, so that the outer one can differentiate through it
#   (tracing.depends_on_outer).
# ``recording_programs``: ``(input ids, name)`` of each running transformation that records a
#   program run again on other arguments (``'jit'``, ``'trace'``, ``'vmap'``), outermost first;
#   empty when none does. Reading the numbers of one of their inputs would freeze them into the
#   program.
# ``sinks``: the open collections of the input ids of every transformation started inside them.


def enter(inputs: Iterable, reused_as: str | None = None, collect: set | None = None) -> None:
    """A transformation starts running its function with ``inputs`` (Tensors) as its inputs; :func:`leave` ends it.

    ``reused_as``: the transformation's name when what it records becomes a
    program run again on other arguments. ``collect``: a set that gathers the
    input ids of every transformation started inside this one (``tracing.record``
    tells the leaves a function made itself, an inner ``grad``'s slots, from
    those it read from outside). Called by ``tracing.tracing`` only, which
    pairs it with :func:`leave` (two calls, not a context manager: every
    ``grad``/``vmap`` call pays for this).
    """
    m = _per_thread.modes
    ids = frozenset(id(t) for t in inputs)
    for sink in m.sinks:
        sink.update(ids)
    m.active.append((ids, reused_as is not None, collect))
    if reused_as is not None:
        m.recording_programs.append((ids, reused_as))
    if collect is not None:
        m.sinks.append(collect)


def leave() -> None:
    """The innermost running transformation's function has returned (or raised): undo its :func:`enter`."""
    m = _per_thread.modes
    _, program, collect = m.active.pop()
    if program:
        m.recording_programs.pop()
    if collect is not None:
        m.sinks.remove(collect)


def transforming() -> bool:
    """Whether the function of some transformation (``grad``, ``vmap``, ``jit``, ...) is running now."""
    return bool(_per_thread.modes.active)


def enclosing_inputs() -> frozenset[int]:
    """The ids of the inputs of every transformation running now (empty at the top level)."""
    return frozenset().union(*[ids for ids, _, _ in _per_thread.modes.active])


def program_depth() -> int:
    """How many program-recording transformations (``jit``, ``trace``, ``vmap``) are running now."""
    return len(_per_thread.modes.recording_programs)


def innermost_program() -> str | None:
    """The name of the innermost program-recording transformation running now, or None."""
    programs = _per_thread.modes.recording_programs
    return programs[-1][1] if programs else None


def program_behind(node) -> str | None:
    """The name of the innermost program-recording transformation one of whose inputs ``node`` depends on, or None.

    ``node`` is a recorded node (a Tensor: its ``parents`` are followed). The
    walk is paid only when numbers are read while such a transformation
    records: rare, and bounded by the recorded graph.

    Example: ``program_behind(ad.Tensor(1.0))`` is None outside ``jit``/``trace``/``vmap``.
    """
    programs = _per_thread.modes.recording_programs
    if not programs:
        return None
    found = reachable([node], lambda u: u.parents or ())
    for ids, name in reversed(programs):
        if any(id(u) in ids for u in found):
            return name
    return None
