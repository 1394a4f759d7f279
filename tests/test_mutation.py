"""Mutation test: a deliberately wrong derivative rule must make check_grads fail.

For every case of the primitive table (tests/cases_*.py) whose primitive has a
differentiable input, two copies of the primitive are registered through the
public ``ad.primitive``: one whose VJP is wrong (the correct cotangent × 1.1
plus a small constant) and one whose JVP is wrong in the same way; the other
rule and the implementation are the original ones. The case's function is
traced into a program, every node of that primitive is swapped for the copy,
and the program is replayed (recorded again) under ``ad.check_grads``: the
wrong VJP must be caught in reverse mode and the wrong JVP in forward mode.
A linear or bilinear primitive states only its transpose, from which both
rules are derived: its wrong VJP is made by declaring the copy with a wrong
transpose (× 1.1 plus a constant, per input), so the mutation goes through
the declaration and the derivation, as a slip in a transpose would.
The catch rate must be 100 %; the unmutated program must pass (otherwise
"caught" would mean nothing).

Excluded, with the reason: cases whose differentiable arguments or output are
empty (a derivative with no entries cannot be wrong), and primitives that
declare every input nondiff (comparisons, tie_weights, argmax, one_hot,
stop_gradient: the drivers never call their rules), and ``identity``, which
programs skip (a transformation's per-slot input node computes nothing), so
no traced node is there to swap; the table checks its rules directly; and
``partition``, which a trace records as a sort (an arrangement chosen on the
traced numbers would be reused on every call), so no getitem node is there to
swap; its eager getitem is mutated through the other getitem cases.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.program import Program, ProgramNode
from tests.test_primitives_table import ALL_CASES, case_id, closure, make_args

WRONG_SCALE = 1.1
WRONG_SHIFT = 1e-3
_counter = itertools.count()


def _mutable(case) -> bool:
    args = make_args(case)
    g, wrt_args = closure(case, args)
    if case.prim == "identity" or case_id(case) == "getitem-partition" or not wrt_args \
            or any(a.size == 0 for a in wrt_args):
        return False
    out = g(*[ad.Tensor(a) for a in wrt_args])
    if out.size == 0:
        return False
    prim = ad.PRIMITIVES[case.prim]
    node = out if out.prim is prim else None
    n_inputs = len(node.parents) if node is not None else 1
    return not set(range(n_inputs)) <= set(prim.nondiff)


MUTATION_CASES = [c for c in ALL_CASES if _mutable(c)]
IDS = [case_id(c) for c in MUTATION_CASES]


def _shift(shape) -> ad.Tensor:
    return ad.Tensor(np.full(shape, WRONG_SHIFT))


def wrong_vjp_of(original: ad.Primitive):
    def vjp(ct, out, *inputs, **params):
        right = original.vjp(ct, out, *inputs, **params)
        return tuple(None if i in original.nondiff
                     else _shift(x.shape) if g is None
                     else ad.add(ad.multiply(g, WRONG_SCALE), _shift(x.shape))
                     for i, (g, x) in enumerate(zip(right, inputs)))
    return vjp


def wrong_jvp_of(original: ad.Primitive):
    def jvp(tangents, out, *inputs, **params):
        right = original.jvp(tangents, out, *inputs, **params)
        return _shift(out.shape) if right is None else ad.add(ad.multiply(right, WRONG_SCALE), _shift(out.shape))
    return jvp


def _wrong_transpose_rule(rule, i):
    def wrong(ct, *inputs, **params):
        return ad.add(ad.multiply(rule(ct, *inputs, **params), WRONG_SCALE), _shift(inputs[i].shape))
    return wrong


def wrong_transpose_of(original: ad.Primitive):
    """``original``'s declared transpose with every input's cotangent made wrong."""
    declared = original.transpose
    if isinstance(declared, tuple):
        return tuple(None if rule is None else _wrong_transpose_rule(rule, i) for i, rule in enumerate(declared))

    def wrong(ct, *inputs, **params):
        return tuple(None if g is None else ad.add(ad.multiply(g, WRONG_SCALE), _shift(x.shape))
                     for g, x in zip(declared(ct, *inputs, **params), inputs))
    return wrong


def register_copy(original: ad.Primitive, which: str) -> ad.Primitive:
    """A copy of ``original`` under a fresh name, with its VJP or its JVP made wrong."""
    name = f"{original.name}_wrong_{which}_{os.getpid()}_{next(_counter)}"
    if which == "vjp" and original.transpose is not None:
        # (The JVP stays the original's: pad's is its own, not derived.)
        return ad.primitive(name, original.impl, transpose=wrong_transpose_of(original),
                            bilinear=original.bilinear, jvp=original.jvp, shape=original.shape,
                            nondiff=original.nondiff, replace=True).prim
    vjp = wrong_vjp_of(original) if which == "vjp" else original.vjp
    jvp = wrong_jvp_of(original) if which == "jvp" else original.jvp
    op = ad.primitive(name, original.impl, vjp=vjp, jvp=jvp, shape=original.shape,
                      nondiff=original.nondiff, replace=True)
    return op.prim


def swapped(program: Program, name: str, prim: ad.Primitive) -> Program:
    """``program`` with every node of primitive ``name`` applying ``prim`` instead."""
    nodes = [n if n.op != name else
             ProgramNode(n.index, prim.name, prim, n.parents, n.params, n.shape, n.dtype,
                         name=n.name, source=n.source, scope=n.scope, value=n.value)
             for n in program.nodes]
    assert any(n.prim is prim for n in nodes), f"no '{name}' node in the traced program"
    return Program(nodes, program.inputs, program.outputs, name=program.name,
                   single_output=program.single_output)


def as_function(program: Program):
    """A function of Tensors that records the program's nodes again (so the drivers see them)."""
    def f(*args):
        return program(*[a if isinstance(a, ad.Tensor) else ad.Tensor(a) for a in args])
    f.__name__ = program.name
    return f


def _setup(case):
    g, wrt_args = closure(case, make_args(case))
    return ad.trace(g, *wrt_args), wrt_args


def test_there_is_something_to_mutate():
    assert len(MUTATION_CASES) > 150
    prims = {c.prim for c in MUTATION_CASES}
    assert {"add", "power", "logistic", "where", "sum", "matmul", "conv2d", "max_pool2d", "getitem"} <= prims
    declared = {p for p in prims if ad.PRIMITIVES[p].transpose is not None}
    assert {"sum", "reshape", "getitem", "take", "concatenate", "conv2d"} <= declared


@pytest.mark.parametrize("case", MUTATION_CASES, ids=IDS)
def test_unmutated_replay_passes(case):
    program, wrt_args = _setup(case)
    ad.check_grads(as_function(program), wrt_args)


@pytest.mark.parametrize("which,mode,label", [("vjp", "rev", "reverse mode"), ("jvp", "fwd", "forward mode")],
                         ids=["wrong_vjp", "wrong_jvp"])
@pytest.mark.parametrize("case", MUTATION_CASES, ids=IDS)
def test_wrong_rule_is_caught(case, which, mode, label):
    program, wrt_args = _setup(case)
    original = ad.PRIMITIVES[case.prim]
    copy = register_copy(original, which)
    try:
        f = as_function(swapped(program, case.prim, copy))
        with pytest.raises(ad.GradientCheckError) as caught:
            ad.check_grads(f, wrt_args, modes=(mode,))
        assert label in str(caught.value)
        # The other mode uses the original rule, so it still passes.
        ad.check_grads(f, wrt_args, modes=("fwd" if mode == "rev" else "rev",))
    finally:
        del ad.PRIMITIVES[copy.name]
