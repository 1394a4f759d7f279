"""Straight-line Python for a program's plan: the executor of programs called again (``jit``'s).

``Program.__call__``'s loop (Algorithm 4.1, the reference) reads each step's
tuple, indexes a list of values and walks the step's frees: on the per-op chain
of ``bench_overhead.py`` (2,000 ops on 10-element arrays) a third of its time.
From a program's second call with a plan, that plan is compiled instead into a
Python function over locals, as torch.fx's ``GraphModule`` writes Python:
inputs are its arguments, constants its globals (bound once, when it is
compiled), one line per step (``v12 = i3(v10, v11); del v10`` where the loop
frees ``values[10]``), and it returns the outputs. The calls are the loop's,
with the same operands and parameters, in the same order, each value freed at
the same step: results are the loop's bit for bit. See the code with
:func:`source`.

Kept from the loop:

* In-place writes: a step with an ``inplace`` operand writes into it only when
  :func:`disposable` holds, the loop's test on the references a local has.
* Errors: a failing step raises :func:`~autograd_dag.execution.step_error`'s
  error, as the loop does (its line in the generated code gives the step, the
  frame's locals its operands); warnings turned into errors pass untouched.
* Programs run with inter-op scheduling keep their path (``Program.__call__``
  does not ask for code then), and programs of more than :data:`MAX_STEPS`
  steps keep the loop: writing and compiling the code costs 15 to 25 µs a step
  and, while compiling, 5 kB a step (the syntax tree), against 0.1 to 0.2 µs a
  step saved per call. A million-node program would take 20 s and 5 GB.
"""

from __future__ import annotations

import keyword
import re
from sys import getrefcount

import numpy as np

from .execution import step_error

# Programs with more steps run in the loop: at most about a second and 250 MB to compile (the docstring).
MAX_STEPS = 50_000
# The call with one plan from which its code runs: a program run once never pays for compiling.
FROM_CALL = 2


class Generated:
    """A plan's compiled function, or its calls so far while it has none."""

    __slots__ = ("steps", "calls", "function")

    def __init__(self, steps):
        self.steps, self.calls, self.function = steps, 0, None


def generated(program, initial: list, steps: list):
    """The compiled function of ``program``'s plan (``initial``, ``steps``), or None: run the loop.

    None on the first ``FROM_CALL - 1`` calls with this plan and for programs
    longer than :data:`MAX_STEPS`; the plan is remade when ``parallel.epoch``
    changes, and its code with it.
    """
    entry = program._generated
    if entry is None or entry.steps is not steps:
        entry = program._generated = Generated(steps)
    if entry.function is None:
        entry.calls += 1
        if entry.calls < FROM_CALL or len(steps) > MAX_STEPS:
            return None
        entry.function = _compile(program, initial, steps)
    return entry


def run(program, entry: Generated, args) -> tuple:
    """The outputs of ``entry``'s function on ``args``; a failing step raises what the loop raises."""
    try:
        return entry.function(*args)
    except (Warning, FloatingPointError):
        raise  # warnings turned into errors by the user stay theirs
    except Exception as exc:
        found = _failed_step(program, entry, exc)
        if found is None:
            raise
        k, values = found
        raise step_error(program, k, values, exc) from None


def disposable(v) -> bool:
    """:func:`~autograd_dag.execution.disposable` for a local of the generated code: the same test, the same counts.

    Then no view of ``v``, no caller and no other node can see it change.
    """
    # References: the generated function's local, this parameter and getrefcount's argument (as
    # the loop's list, its ``v`` and the argument): a second local, the caller's array, a
    # constant (its node and the plan hold it) or a live view make it more (tests/test_codegen.py).
    if type(v) is not np.ndarray or getrefcount(v) != 3:
        return False
    base = v.base
    # References to the base: the view, ``base`` and getrefcount's argument.
    if base is not None and (type(base) is not np.ndarray or base.base is not None or getrefcount(base) != 3):
        return False
    flags = v.flags
    return flags.writeable and flags.c_contiguous


def source(program) -> str:
    """The Python the program's plan runs as from its second call (compiled or not, at any length).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x: ad.exp(x) * 2.0, np.zeros(3))
        >>> print(ad.codegen.source(prog))
        def f(v0):
            v1 = i0(v0); del v0
            v3 = i1(v1, c2); del v1
            return (v3,)
    """
    initial, steps = program._plan()
    return _source(program, initial, steps)[0]


def _source(program, initial, steps) -> tuple[str, dict]:
    """The function's text (step j on line j + 2: FIRST_LINE) and its globals."""
    names: dict = {}   # global name -> object
    impl_names: dict[int, str] = {}
    inputs = set(program.inputs)

    def name(k: int) -> str:
        if k not in inputs and program.nodes[k].prim is None:   # a constant: bound once, as a global
            names[f"c{k}"] = initial[k]
            return f"c{k}"
        return f"v{k}"

    lines = [f"def {_identifier(program.name)}({', '.join(f'v{k}' for k in program.inputs)}):"]
    for k, impl, parents, params, frees, inplace in steps:
        f = impl_names.get(id(impl))
        if f is None:
            f = impl_names[id(impl)] = f"i{len(impl_names)}"
            names[f] = impl
        operands = ", ".join(map(name, parents))
        kwargs = ""
        if params:
            names[f"p{k}"] = params
            kwargs = f", **p{k}"
        call = f"{f}({operands}{kwargs})"
        if inplace is not None:
            # The loop's choice, made on the same references (disposable above).
            call = f"{f}({operands}, out=v{inplace}{kwargs}) if disposable(v{inplace}) else {call}"
        line = f"    v{k} = {call}"
        dead = [f"v{p}" for p in frees if name(p)[0] == "v"]   # (a global is no local to free)
        if dead:
            line += f"; del {', '.join(dead)}"
        lines.append(line)
    outputs = "".join(f"{name(k)}, " for k in program.outputs)
    lines.append(f"    return ({outputs.rstrip(' ')})")
    names["disposable"] = disposable
    return "\n".join(lines) + "\n", names


FIRST_LINE = 2   # the line of the first step in the generated code (the def is line 1)


def _identifier(name: str) -> str:
    """The program's name as the function's, unless it is no identifier or names a global of the code."""
    out = re.sub(r"\W", "_", name)
    if not out.isidentifier() or keyword.iskeyword(out) or re.fullmatch(r"[icpv]\d+|disposable", out):
        out = f"f_{out}"
    return out


def _compile(program, initial, steps):
    text, names = _source(program, initial, steps)
    filename = f"<program {program.name!r}, generated {id(steps):x}>"
    namespace = dict(names)
    exec(compile(text, filename, "exec"), namespace)
    return namespace[_identifier(program.name)]


def _failed_step(program, entry: Generated, exc: BaseException):
    """``(k, values)``: the failing step's node and the values the loop would have held then; or None."""
    code = entry.function.__code__
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code is not code:
        tb = tb.tb_next
    if tb is None:
        return None
    index = tb.tb_lineno - FIRST_LINE
    if not 0 <= index < len(entry.steps):
        return None
    initial, _ = program._plan()
    values = list(initial)
    for local, value in tb.tb_frame.f_locals.items():
        if local[0] == "v" and local[1:].isdigit():
            values[int(local[1:])] = value
    return entry.steps[index][0], values
