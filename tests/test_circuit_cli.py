"""The ``autograd-dag circuit`` command and circuits drawn through the renderer."""

import xml.etree.ElementTree as ET

import autograd_dag as ad
from autograd_dag import circuits
from autograd_dag.cli import main


def test_circuit_command_prints_the_measures(capsys):
    assert main(["circuit", "(x + y) * (x + y) + 3*x"]) == 0
    out = capsys.readouterr().out
    assert "size 8 (edges), 4 gates (2 +, 2 \u00d7), depth 3" in out  # x + y computed once
    assert "polynomial: x^2 + 2*x*y + y^2 + 3*x  (degree 2)" in out
    assert "size 12, ratio S(f, grad f) / S(f) = 1.50" in out
    assert "df/dx = 2*x + 2*y + 3" in out and "df/dy = 2*x + 2*y" in out


def test_circuit_command_points_at_the_bad_column(capsys):
    assert main(["circuit", "x + y $ 2"]) == 2
    err = capsys.readouterr().err
    lines = err.splitlines()
    caret_line = lines[-1]
    assert caret_line.strip() == "^"
    # The caret stands under the '$' in the echoed expression.
    assert lines[-2][caret_line.index("^")] == "$"


def test_circuit_families_table(capsys):
    assert main(["circuit", "--families"]) == 0
    out = capsys.readouterr().out
    assert "Horner" in out and "repeated squaring" in out and "dynamic programming" in out
    assert " no" not in out.replace("not", "")  # every row's polynomials are equal


def test_circuit_renders_with_gate_symbols(tmp_path, capsys):
    path = tmp_path / "c.svg"
    assert main(["circuit", "x*y + x", "-o", str(path), "--grad"]) == 0
    root = ET.parse(path).getroot()
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "+" in texts and "\u00d7" in texts
    assert any("gradient circuit" in (t or "") for t in texts)


def test_render_accepts_a_circuit_and_draws_every_node():
    c = circuits.parse("(x + y) * (x + y) + 3*x")
    program = c.to_program()
    graph = ad.render(c, legend=False)
    drawn = [line for line in graph.source.splitlines()
             if line.strip()[:1] == "n" and line.strip()[1:2].isdigit() and "->" not in line]
    assert len(drawn) == len(program.nodes)  # constants stay roots, not inlined
    assert graph.source.count("->") == program.num_edges


def test_circuit_refuses_a_constant_that_is_not_a_finite_float(capsys):
    # 1e400 became inf with numpy's RuntimeWarning only: "polynomial: inf*x", "df/dx = inf".
    for expression in ["1e400*x", "10**400*x + y", "1e200*1e200*x"]:
        assert main(["circuit", expression]) == 2
        err = capsys.readouterr().err
        assert "autograd-dag: error:" in err and "finite" in err, err
    assert main(["circuit", "1e300*x"]) == 0
    assert "polynomial: 1e+300*x" in capsys.readouterr().out
