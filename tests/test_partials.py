"""Elementwise primitives state their derivative once, and declare what it reads.

Every primitive of ``primitives/elementwise.py`` and ``primitives/mathfuncs.py``
is made by ``defelementwise`` from its partial derivatives (the exceptions are
listed with their reason), so its VJP and JVP cannot disagree; its ``reads``
declaration says which inputs, and whether the output, the partials read (the
values recording and the executor may keep for them).

The declaration is checked by poisoning: on every case of the primitive table
(tests/cases_*.py) that records the primitive, the VJP of each input and the
JVP are computed once on the node's true operands and again with every operand
the primitive does not declare replaced (by NaN, and by other numbers); the
results must be identical. A rule that reads an undeclared operand gives other
numbers (a test of the checker itself shows it does).
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.core import Primitive
from autograd_dag.primitives import elementwise, mathfuncs
from autograd_dag.primitives.elementwise import MINUS_ONE, ONE
from autograd_dag.primitives.registry import OUT
from tests.test_primitives_table import ALL_CASES, case_id, make_args

# Elementwise primitives with a hand-written VJP and JVP, and why.
HAND_WRITTEN = {
    "astype": "its VJP casts to the input's dtype, its JVP to the output's: a map between dtypes",
}

ELEMENTWISE = sorted({v for m in (elementwise, mathfuncs) for k, v in vars(m).items()
                      if k.isupper() and isinstance(v, Primitive)}, key=lambda p: p.name)


def test_every_elementwise_primitive_states_partials():
    by_hand = {p.name for p in ELEMENTWISE if p.partials is None}
    assert by_hand == set(HAND_WRITTEN)
    assert len(ELEMENTWISE) > 60  # (the modules were read: sin, tan, clip, ... are all there)
    for prim in ELEMENTWISE:
        if prim.partials is None:
            continue
        assert prim.vjp_parts is not None and len(prim.vjp_parts) == len(prim.partials), prim.name
        assert set(prim.reads) <= set(range(len(prim.partials))) | {OUT}, prim.name
        if all(p is None or p is ONE or p is MINUS_ONE for p in prim.partials):
            assert prim.reads == (), f"{prim.name}: constant partials read nothing"


def test_constant_partials_record_no_multiplication():
    # add, subtract, negative pass the cotangent on (negated): no multiply node, no array of ones.
    x, y = ad.Tensor(np.ones((2, 3))), ad.Tensor(np.ones((2, 3)))
    ct, out = ad.Tensor(np.arange(6.0).reshape(2, 3)), ad.add(x, y)
    add, subtract, negative = (ad.PRIMITIVES[n] for n in ("add", "subtract", "negative"))
    assert add.vjp_parts[0](ct, out, x, y) is ct and add.vjp_parts[1](ct, out, x, y) is ct
    assert subtract.vjp_parts[0](ct, out, x, y) is ct
    for g in (subtract.vjp_parts[1](ct, out, x, y), negative.vjp_parts[0](ct, out, x)):
        assert g.prim is negative and g.parents == (ct,)
    tangent = add.jvp((ct, ct), out, x, y)
    assert tangent.prim is add and tangent.parents == (ct, ct)
    assert subtract.jvp((ct, None), out, x, y) is ct
    for name in ("step", "sign", "floor", "round", "stop_gradient", "isnan"):
        prim = ad.PRIMITIVES[name]
        assert prim.vjp_parts == (None,) and prim.jvp((ct,), out, x) is None, name


def _node_of(out: ad.Tensor, prim: Primitive) -> ad.Tensor | None:
    stack, seen = [out], set()
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t.prim is prim:
            return t
        stack.extend(t.parents or ())
    return None


def _poisons(value: np.ndarray) -> list[np.ndarray]:
    """Values of ``value``'s shape and dtype that differ from it everywhere (where the dtype allows)."""
    if value.dtype.kind == "b":
        return [~value]
    if value.dtype.kind in "iu":
        return [value + 1, value - 3]
    return [np.full_like(value, np.nan), value * 1.37 + 0.61, -value - 2.0]


def _rules(prim: Primitive, out, inputs, params, ct, tangents, wrt):
    """The VJP of every input in ``wrt`` and the JVP, as arrays (None for a zero)."""
    with ad.no_grad():
        results = [prim.vjp_parts[i](ct, out, *inputs, **params) if prim.vjp_parts[i] is not None else None
                   for i in wrt]
        results.append(prim.jvp(tangents, out, *inputs, **params))
    return [None if r is None else np.asarray(r.value if isinstance(r, ad.Tensor) else r) for r in results]


def undeclared_reads(prim: Primitive, node: ad.Tensor, seed: int = 0) -> list[str]:
    """The operands (input positions, 'out') whose poisoning changes ``prim``'s rules at ``node``."""
    rng = np.random.default_rng(seed)
    values = [p.value for p in node.parents]
    params = node.params or {}
    wrt = [i for i, v in enumerate(values) if i not in prim.nondiff and v.dtype.kind == "f"]
    ct = ad.Tensor(rng.standard_normal(node.shape).astype(node.dtype))
    tangents = tuple(ad.Tensor(rng.standard_normal(v.shape).astype(v.dtype)) if i in wrt else None
                     for i, v in enumerate(values))

    def run(replaced: dict) -> list:
        inputs = [ad.Tensor(replaced.get(i, v)) for i, v in enumerate(values)]
        out = ad.Tensor(replaced.get(OUT, node.value))
        with np.errstate(all="ignore"):
            return _rules(prim, out, inputs, params, ct, tangents, wrt)

    truth = run({})
    undeclared = [k for k in [*range(len(values)), OUT] if k not in prim.reads]
    wrong = []
    for k in undeclared:
        original = node.value if k == OUT else values[k]
        with np.errstate(all="ignore"):
            poisons = _poisons(original)
        for poison in poisons:
            got = run({k: poison})
            # The same rule on the same numbers (only an unread operand differs): equal to the bit.
            if any((a is None) != (b is None) or (a is not None and not np.array_equal(a, b, equal_nan=True))
                   for a, b in zip(truth, got)):
                wrong.append(f"input {k}" if k != OUT else "out")
                break
    return wrong


POISON_CASES = [c for c in ALL_CASES if ad.PRIMITIVES[c.prim].partials is not None]


@pytest.mark.parametrize("case", POISON_CASES, ids=[case_id(c) for c in POISON_CASES])
def test_rules_read_only_what_they_declare(case):
    prim = ad.PRIMITIVES[case.prim]
    args = make_args(case)
    node = _node_of(case.fn(*[ad.Tensor(a, requires_grad=np.asarray(a).dtype.kind == "f") for a in args]), prim)
    assert node is not None, f"{case_id(case)} does not record {case.prim}"
    assert undeclared_reads(prim, node) == [], f"{case.prim} declares reads={prim.reads}"


@pytest.mark.parametrize("name, too_narrow, caught", [
    ("multiply", (0,), ["input 1"]),       # ∂/∂x = y
    ("divide", (1,), ["out"]),             # ∂/∂y = -out / y
    ("exp", (), ["out"]),
    ("abs", (), ["input 0"]),
    ("where", (), ["input 0"]),            # the condition
    ("clip", (0, 1, 2), ["out"]),
])
def test_the_poison_check_catches_an_undeclared_read(name, too_narrow, caught):
    real = ad.PRIMITIVES[name]
    liar = Primitive(name, real.impl, vjp=real.vjp_parts, jvp=real.jvp, nondiff=real.nondiff, reads=too_narrow,
                     partials=real.partials)
    case = next(c for c in ALL_CASES if c.prim == name and all(np.asarray(a).size for a in make_args(c)))
    args = make_args(case)
    node = _node_of(case.fn(*[ad.Tensor(a, requires_grad=np.asarray(a).dtype.kind == "f") for a in args]), real)
    assert set(caught) <= set(undeclared_reads(liar, node))
