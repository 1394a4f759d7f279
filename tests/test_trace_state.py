"""The tracer's state has one owner: ``trace_state`` holds it, ``tracing`` alone changes it.

Before, the stacks of running transformations were ``core`` globals that four
modules appended to, popped and indexed; a forgotten pop there would leave a
transformation "running" for every later operation. Read from the source with
``ast``, as ``test_layers.py`` reads the imports.
"""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import trace_state
from autograd_dag.modes import modes

ROOT = pathlib.Path(__file__).resolve().parent.parent / "autograd_dag"

WRITERS = {"enter", "leave"}
MUTATORS = {"append", "pop", "remove", "clear", "extend", "insert", "__setitem__", "__delitem__"}
STACKS = {"recording_programs", "active", "sinks"}   # trace_state's lists, kept in each thread's modes


def writes_in(path: pathlib.Path) -> list[str]:
    """The places in ``path`` that change trace_state: its writers called, its lists mutated, a private name read."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Name) and base.id == "trace_state" and (
                    node.attr in WRITERS or node.attr.startswith("_")):
                found.append(f"{path.name}:{node.lineno} trace_state.{node.attr}")
            if node.attr in MUTATORS and (
                    (isinstance(base, ast.Name) and base.id in STACKS)
                    or (isinstance(base, ast.Attribute) and base.attr in STACKS)):
                found.append(f"{path.name}:{node.lineno} {getattr(base, 'attr', getattr(base, 'id', ''))}.{node.attr}")
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)
                            and sub.value.id == "trace_state"):
                        found.append(f"{path.name}:{node.lineno} trace_state.{sub.attr} =")
                    elif isinstance(sub, ast.Attribute) and sub.attr in STACKS:
                        found.append(f"{path.name}:{node.lineno} .{sub.attr} =")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("trace_state"):
            found += [f"{path.name}:{node.lineno} imports {a.name}" for a in node.names
                      if a.name in WRITERS or a.name.startswith("_")]
    return found


def test_only_tracing_writes_the_trace_state():
    # (modes.py makes each thread's empty lists: storage, not a writer.)
    outside = [w for path in sorted(ROOT.rglob("*.py"))
               if path.name not in ("tracing.py", "trace_state.py", "modes.py") for w in writes_in(path)]
    assert outside == []
    # The check sees the writes that are there (it is not blind).
    assert any("trace_state.enter" in w for w in writes_in(ROOT / "tracing.py"))
    assert any("trace_state.leave" in w for w in writes_in(ROOT / "tracing.py"))
    assert any("recording_programs.append" in w for w in writes_in(ROOT / "trace_state.py"))


def test_the_state_is_empty_again_after_a_transformation_raises():
    def broken(x):
        ad.sin(x)
        raise ValueError("inside")

    for transformation in (ad.grad, ad.jit, ad.vmap, lambda f: ad.checkpoint(f)):
        with pytest.raises(ValueError, match="inside"):
            transformation(broken)(np.ones(3))
    with pytest.raises(ValueError, match="inside"):
        ad.grad(lambda x: ad.jit(broken)(x))(np.ones(3))
    assert not trace_state.transforming() and modes().recording_programs == [] and modes().sinks == []
    assert trace_state.program_depth() == 0 and trace_state.innermost_program() is None


def test_the_state_reads_what_is_running():
    seen = []

    def f(x):
        seen.append((trace_state.transforming(), trace_state.innermost_program(), trace_state.program_depth(),
                     trace_state.program_behind(x), trace_state.program_behind(ad.Tensor(1.0))))
        return ad.sin(x).sum()

    ad.jit(ad.grad(f))(np.ones(2))
    # jit records grad's function: both run; jit is the program being recorded, and x is behind it
    # (grad's slot is an identity of jit's input); a fresh constant is behind none.
    assert seen == [(True, "jit", 1, "jit", None)]
    assert not trace_state.transforming()
