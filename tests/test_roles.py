"""Roles, not strings: what a program and its nodes are is data set where they are made, read by the renderer.

``Program.kind`` is a :class:`ProgramKind` (a str enum: users' strings still compare
and construct); a gradient output knows which input it is the gradient of, and a
gradient program's nodes know which of them are the backward pass, whatever they are
named (the renderer used to read both from a ``d…/d…`` name and a constant 1).
"""

from __future__ import annotations

import ast
import functools
import pathlib
import re
import sys
import weakref
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.circuits import Circuit, gradient_circuit, variables
from autograd_dag.kinds import ProgramKind
from autograd_dag.program import NodeKind, Program
from autograd_dag.render.budget import backward_pass
from autograd_dag.render.drill import BACKWARD_SCOPE, scope_names


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


# ------------------------------------------------------------ roles of nodes

GRADIENT_FILL = "#f7cdd6"   # styles.py's fill of the "gradient (output)" role
OUTPUT_FILL = "#c9efcf"     # and of a plain "output"


def node_line(graph, k: int) -> str:
    """The DOT statement of program node ``k`` in the DAG view."""
    return next(line for line in graph.body if line.lstrip().startswith(f"n{k} "))


def svg_text(graph) -> str:
    """The text of the picture as dot lays it out (Graphviz runs for real)."""
    root = ET.fromstring(graph.pipe(format="svg"))
    return "\n".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))


def test_each_gradient_output_knows_which_input_it_is_the_gradient_of():
    prog = ad.trace(lambda x, n, y: ad.sum(x * ad.exp(y)), np.ones(2), np.array([3]), np.ones(2))
    g = ad.grad_program(prog, wrt=(2, 0))
    assert [g.nodes[k].gradient_of for k in g.outputs] == [2, 0]
    v = ad.grad_program(prog, with_value=True)
    assert [v.nodes[k].gradient_of for k in v.outputs] == [None, 0, 2]   # the value is no gradient
    assert all(n.gradient_of is None for n in prog.nodes)
    x, y = variables("x y")
    c = gradient_circuit(Circuit.from_outputs((x + y) * (x + y) + 3 * x)).to_program()
    assert [c.nodes[k].gradient_of for k in c.outputs] == [None, 0, 1]


def test_a_users_name_that_reads_like_a_derivative_does_not_make_a_gradient():
    # The renderer took every output of a gradient program named d…/d… for a gradient.
    def f(x):
        loss = ad.sum(ad.exp(x))
        loss.name = "dx/dy"
        return loss
    g = ad.grad_program(ad.trace(f, np.ones(3)), with_value=True)
    value, grad = g.outputs
    assert g.nodes[value].name == "dx/dy"
    graph = ad.render(g)
    assert OUTPUT_FILL in node_line(graph, value) and GRADIENT_FILL not in node_line(graph, value)
    assert GRADIENT_FILL in node_line(graph, grad)


def test_a_renamed_gradient_is_still_drawn_as_one():
    g = ad.grad_program(ad.trace(lambda x, w: ad.sum(ad.tanh(x @ w)), np.ones((2, 3)), np.ones((3, 4))))
    for k, name in zip(g.outputs, ["velocity", "x"]):
        g.nodes[k].name = name
    graph = ad.render(g)
    for k in g.outputs:
        assert GRADIENT_FILL in node_line(graph, k) and "peripheries=2" in node_line(graph, k)
    text = svg_text(graph)
    assert "gradient (output)" in text and "velocity" in text


def test_the_backward_pass_is_what_the_seed_reaches_not_a_constant_one_that_looks_like_it():
    # A forward constant 1 (x * 1.0) outside every scope reached a gradient through fewer nodes
    # than the real seed, and was taken for it: the backward pass was one multiply.
    g = ad.grad_program(ad.trace(lambda x: ad.sum(x * 1.0 + 1.0), np.ones(3)))
    backward = backward_pass(g)
    assert sorted(str(g.nodes[k].op) for k in backward) == ["broadcast_to", "constant", "multiply", "reshape"]
    forward_one = next(k for k in g.nodes[g.outputs[0]].parents if k not in backward)
    assert g.nodes[forward_one].op is NodeKind.CONSTANT and g.nodes[forward_one].value == 1
    assert [g.nodes[k].in_backward_pass for k in range(len(g))] == [k in backward for k in range(len(g))]


def test_a_gradient_program_made_inside_a_name_scope_keeps_its_backward_pass():
    # The seed is recorded under the caller's scope; the guess wanted a seed outside every scope.
    prog = ad.trace(lambda x: ad.sum(ad.exp(x)), np.ones(3))
    with ad.name_scope("step"):
        g = ad.grad_program(prog)
    assert {str(g.nodes[k].op) for k in backward_pass(g)} == {"constant", "reshape", "broadcast_to", "multiply"}
    assert any(s[:1] == (BACKWARD_SCOPE,) for s in scope_names(g))


def test_roles_survive_common_subexpression_elimination_and_stay_off_other_programs():
    g = ad.grad_program(ad.trace(lambda x: ad.sum(ad.cos(x) * ad.sin(x)), np.ones(3)))
    again = g.without_common_subexpressions()
    assert [again.nodes[k].gradient_of for k in again.outputs] == [0]
    assert backward_pass(again) == backward_pass(g) != set()
    assert backward_pass(ad.trace(lambda x: ad.sum(x * 1.0), np.ones(3))) == set()


# ------------------------------------------------------- axis names, owned by named

def test_axis_names_live_in_named_and_reach_the_picture_through_the_renderers_hook(monkeypatch):
    from autograd_dag import named
    from autograd_dag.named import transforms
    from autograd_dag.render import axes as render_axes
    X = named.NamedTensor(np.ones((5, 8)), "seq layer", name="X")
    prog = named.trace(lambda X: X.softmax("layer"), X)
    assert transforms.program_axes(prog)[0] == ("seq", "layer") and named.program_axes is transforms.program_axes
    assert "seq:5" in ad.render(prog).source
    # The renderer keeps no table of its own: with no source registered it draws plain shapes.
    assert not [name for name, v in vars(render_axes).items()
                if not name.startswith("__") and isinstance(v, (dict, weakref.WeakKeyDictionary))]
    monkeypatch.setattr(render_axes, "_SOURCES", [])
    assert "seq:5" not in ad.render(prog).source and "[5,8]" in ad.render(prog).source
    # Any layer above may name axes the same way.
    plain = ad.trace(ad.exp, np.ones((2, 3)))
    render_axes.register_axis_names(lambda p: {0: ("row", "col"), 1: ("row", "col")} if p is plain else {})
    render_axes.register_axis_names(transforms.program_axes)
    render_axes.register_axis_names(transforms.program_axes)   # once is enough
    assert len(render_axes._SOURCES) == 2
    assert "row:2" in ad.render(plain).source and "seq:5" in ad.render(prog).source


# ------------------------------------------------ no method replaced from above

def test_programs_display_is_a_method_of_its_own_that_reads_the_views_registered_with_it(monkeypatch):
    from autograd_dag import displays
    render = sys.modules["autograd_dag.render"]   # (ad.render is the function)
    # Defined where Program is, not assigned by the renderer.
    assert Program._repr_mimebundle_.__module__ == "autograd_dag.program"
    assert Program.__dict__["_repr_mimebundle_"] is Program._repr_mimebundle_
    prog = ad.trace(lambda a, b: a / b, np.ones(2), np.ones(2))
    calls = []

    def counted(program, wanted):
        calls.append(program)
        return {"image/svg+xml": "<svg/>"} if wanted("image/svg+xml") else {}
    monkeypatch.setattr(displays, "_DISPLAYS", [counted])
    assert prog._repr_mimebundle_() == {"text/plain": str(prog), "image/svg+xml": "<svg/>"}
    assert prog._repr_mimebundle_(exclude=["image/svg+xml"]) == {"text/plain": str(prog)}
    assert prog._repr_mimebundle_(include=["image/svg+xml"]) == {"image/svg+xml": "<svg/>"}
    assert calls == [prog] * 3
    monkeypatch.setattr(displays, "_DISPLAYS", [])   # without the renderer: the listing alone
    assert prog._repr_mimebundle_() == {"text/plain": str(prog)}
    monkeypatch.undo()
    assert render._picture in displays._DISPLAYS
    svg = prog._repr_mimebundle_(include=["image/svg+xml"])["image/svg+xml"]   # dot runs for real
    assert ET.fromstring(svg.encode()).tag == "{http://www.w3.org/2000/svg}svg" and "a / b" in svg


ROOT = pathlib.Path(ad.__file__).parent


@functools.cache
def _library_classes() -> frozenset[str]:
    """Every class the library defines. (Built on first use, not at import: parsing the library
    cost each xdist worker ~1 s of its collection.)"""
    return frozenset(n.name for path in ROOT.rglob("*.py")
                     for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.ClassDef))


def _assigned_classes(path: pathlib.Path) -> list[str]:
    """``Class.attr = …`` and ``setattr(Class, …)`` statements in ``path`` that reach a class of another module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = [t.value for t in node.targets if isinstance(t, ast.Attribute)]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
              and node.args):
            targets = [node.args[0]]
        for t in targets:
            if isinstance(t, ast.Name) and t.id in _library_classes() and t.id not in own:
                found.append(f"{path.name}:{node.lineno} {t.id}")
    return found


def test_only_operators_installs_methods_on_a_class_from_outside_its_module():
    # (Program._repr_mimebundle_ was replaced by render, NamedTensor.to_program by named.transforms.)
    found = [hit for path in sorted(ROOT.rglob("*.py")) if path.name != "operators.py"
             for hit in _assigned_classes(path)]
    assert found == []
    assert _assigned_classes(ROOT / "operators.py")   # (the scan sees them where they are)


def test_a_users_scope_titled_like_a_chunk_is_not_renumbered_as_one():
    # A chunk of the topological order (a box the budget cuts) was told from a scope by its
    # title starting "ops %": a user's scope of that name was retitled with node numbers.
    def f(x):
        with ad.name_scope("outer"):
            with ad.name_scope("ops %1"):
                x = ad.tanh(ad.exp(x) * 2.0)
            x = ad.sin(x)
        return ad.sum(x)
    source = ad.render(ad.trace(f, np.ones(3)), scope="outer", depth=0).source
    assert "<B>ops %1</B>" in source and "&#8211;" not in source

    def g(x):
        y = ad.exp(x)
        with ad.name_scope("outer"):
            for _ in range(6):
                y = ad.sin(y) * 2.0
        return ad.sum(y)
    program = ad.trace(g, np.ones(2))
    last = max(n.index for n in program.nodes if n.scope == ("outer",))
    with pytest.warns(UserWarning, match="more than max_nodes=3"):
        chunked = ad.render(program, scope="outer", max_nodes=3).source
    # Real chunks of a scope's picture are titled with the whole program's node numbers.
    titles = re.findall(r"ops %\d+&#8211;%(\d+)", chunked)
    assert len(titles) > 1 and int(titles[-1]) == last
