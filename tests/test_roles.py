"""Roles, not strings: what a program and its nodes are is data set where they are made, read by the renderer.

``Program.kind`` is a :class:`ProgramKind` (a str enum: users' strings still compare
and construct); a gradient output knows which input it is the gradient of, and a
gradient program's nodes know which of them are the backward pass, whatever they are
named (the renderer used to read both from a ``d…/d…`` name and a constant 1).
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.circuits import Circuit, gradient_circuit, variables
from autograd_dag.program import Program, ProgramKind


def square_sum():
    return ad.trace(lambda x: ad.sum(x * x), np.ones(3))


# ------------------------------------------------------------------ Program.kind


def test_kind_is_an_enum_that_users_strings_still_construct_and_compare():
    g = ad.grad_program(square_sum())
    assert g.kind is ProgramKind.GRADIENT and g.kind == "gradient" and str(g.kind) == "gradient"
    p = Program(g.nodes, g.inputs, g.outputs, kind="circuit")
    assert p.kind is ProgramKind.CIRCUIT
    p.kind = "gradient_circuit"   # assigned as a string, read as the enum (the renderer compares with `is`)
    assert p.kind is ProgramKind.GRADIENT_CIRCUIT
    assert square_sum().kind is ProgramKind.PROGRAM
    x, y = variables("x y")
    assert gradient_circuit(Circuit.from_outputs(x * y)).to_program().kind is ProgramKind.GRADIENT_CIRCUIT
    assert Circuit.from_outputs(x * y).to_program().kind is ProgramKind.CIRCUIT


def test_an_unknown_kind_is_refused_not_drawn_as_a_plain_program():
    g = square_sum()
    with pytest.raises(ad.AutogradDagError, match=r"kind='gradiant'.*'gradient'"):
        Program(g.nodes, g.inputs, g.outputs, kind="gradiant")
    with pytest.raises(ad.AutogradDagError, match="kind='circuits'"):
        g.kind = "circuits"
    assert g.kind is ProgramKind.PROGRAM
