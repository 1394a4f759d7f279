"""Regressions from an adversarial hunt for wrong results in graphs, circuits, text and the CLI."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.errors import ProgramInputError


# ------------------------------------------------------------------ hand-built DAGs (Program.from_graph)
def test_from_graph_refuses_params_and_ops_for_no_vertex_or_an_input():
    # params={"S": ...} for vertex "s" was ignored: the sum ran over every axis and gave 6.0
    # instead of the column sums [2, 2, 2], without a word. Keys naming an input were ignored too.
    g = ad.Graph.from_edges([("x", "s")])
    x = np.ones((2, 3))
    good = ad.Program.from_graph(g, {"s": "sum"}, {"x": x}, params={"s": {"axis": 0}})
    np.testing.assert_array_equal(good(x), x.sum(axis=0))  # exact: sums of ones
    for ops, params, key in [({"s": "sum"}, {"S": {"axis": 0}}, "'S'"),
                             ({"s": "sum"}, {"x": {"axis": 0}}, "'x'"),
                             ({"s": "sum", "t": "exp"}, None, "'t'"),
                             ({"s": "sum", "x": "exp"}, None, "'x'")]:
        with pytest.raises(ProgramInputError, match=f"names {key}, which is"):
            ad.Program.from_graph(g, ops, {"x": x}, params=params)



def test_from_graph_refuses_an_operand_given_as_a_parameter():
    # clip's bounds are operands; given as params the value was right (np.clip takes them as
    # keywords) but the recorded clip had one operand where its rules read three, and its
    # gradient raised "<lambda>() got an unexpected keyword argument 'a_min'".
    x = np.array([[-2.0, 0.25, 3.0]])
    g = ad.Graph.from_edges([("x", "c")])
    with pytest.raises(ProgramInputError, match=r"vertex 'c' .* clip takes a_min, a_max as operand"):
        ad.Program.from_graph(g, {"c": "clip"}, {"x": x}, params={"c": {"a_min": -0.5, "a_max": 0.5}})
    # calling the primitive itself took the same path
    from autograd_dag.errors import AutogradDagError
    from autograd_dag.primitives.registry import PRIMITIVES
    with pytest.raises(AutogradDagError, match=r"clip takes a_min as operand.*operands are \['a', 'a_min', 'a_max'\]"):
        PRIMITIVES["clip"](ad.Tensor(x, requires_grad=True), a_min=-0.5)
    # as in-edges it runs and differentiates as ad.clip does (exact: the gradient is a 0/1 mask)
    g = ad.Graph.from_edges([("x", "c"), ("lo", "c"), ("hi", "c")])
    lo, hi = np.array(-0.5), np.array(0.5)
    prog = ad.Program.from_graph(g, {"c": "clip"}, {"x": x, "lo": lo, "hi": hi})
    np.testing.assert_array_equal(prog(x, lo, hi), np.clip(x, -0.5, 0.5))
    got = ad.grad(lambda t: ad.sum(prog(t, lo, hi)))(x)
    want = ad.grad(lambda t: ad.sum(ad.clip(t, -0.5, 0.5)))(x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [[0.0, 1.0, 0.0]])


def test_from_graph_concatenate_with_a_negative_axis_differentiates():
    # concatenate's primitive takes *xs, so its public function (one list of tensors) was never
    # used and axis=-1 was recorded raw: the value was right, but the gradient raised "VJP of
    # 'concatenate' returned a cotangent of shape (2, 6) for an input of shape (2, 3)".
    a, b = np.arange(6.0).reshape(2, 3), np.arange(4.0).reshape(2, 2)
    g = ad.Graph.from_edges([("a", "c"), ("b", "c")])
    prog = ad.Program.from_graph(g, {"c": "concatenate"}, {"a": a, "b": b}, params={"c": {"axis": -1}})
    assert [n.op for n in prog.nodes if n.parents] == ["concatenate"]  # still one node for the vertex
    np.testing.assert_array_equal(prog(a, b), np.concatenate([a, b], axis=-1))
    # d/da, d/db of sum(c * c) are 2a, 2b: exact in float64 (doubling small integers)
    ga, gb = ad.grad(lambda u, v: ad.sum(prog(u, v) * prog(u, v)), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga, 2 * a)
    np.testing.assert_array_equal(gb, 2 * b)

# ------------------------------------------------------------------ text
@pytest.mark.parametrize("text, words", [
    ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),                 # Devanagari vowel signs and virama are marks
    ("cafe\u0301 au lait.", ["cafe\u0301", "au", "lait", "."]),  # a decomposed é; the "." stays apart
    ("\u0130stanbul", ["i\u0307stanbul"]),                # "İ".lower() is i + combining dot
])
def test_word_tokenizer_keeps_combining_marks_inside_words(text, words):
    # \w does not match combining marks: each one cut its word, "हिन्दी" was six tokens and
    # join gave back "ह ि न ् द ी". Independent reference: words are the space-separated pieces.
    tok = ad.text.WordTokenizer()
    assert tok.split(text) == words
    assert tok.join(tok.split(text)) == text.lower()
    fitted = ad.text.WordTokenizer().fit([text])
    assert fitted.decode(fitted.encode(text)) == text.lower()


# ------------------------------------------------------------------ the CLI
def test_cli_names_the_users_line_for_a_library_error_without_one(tmp_path, capsys):
    # A library error raised in the user's function whose message names no line
    # (Program.from_graph's) was printed without the user's file:line.
    from autograd_dag.cli import main
    script = tmp_path / "user_graph.py"
    script.write_text("import numpy as np\nimport autograd_dag as ad\n\n\ndef build():\n"
                      "    g = ad.Graph.from_edges([('x', 'e')])\n"
                      "    return ad.Program.from_graph(g, {'e': 'nonexistent_op'}, {'x': np.ones(2)})\n")
    assert main(["render", f"{script}:build", "-o", str(tmp_path / "out.dot")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autograd-dag: error:") and "unknown primitive 'nonexistent_op'" in err
    assert "(at user_graph.py:7)" in err


# ------------------------------------------------------------------ circuits
def test_gradient_circuit_keeps_constants_float64_cannot_hold():
    # The gradient is built by a float64 program; constants were mapped back by their float64
    # value, so 2**60 + 1 came back as the float 2**60 (f and df/dx both off by one), and a
    # float 1/3 beside a Fraction 1/3 became that Fraction (f no longer the circuit's polynomial).
    from fractions import Fraction
    from autograd_dag.circuits import Circuit, Polynomial, gradient_circuit, variables
    x, y = variables("x y")
    big = 2**60 + 1
    f, dx = gradient_circuit(Circuit.from_outputs(big * x * x)).circuit.to_polynomial()
    assert f == Polynomial({(("x", 2),): big}) and dx == Polynomial({(("x", 1),): 2 * big})
    assert isinstance(dx.coefficient({"x": 1}), int)
    third = 1 / 3  # a float, not exactly 1/3
    f, dx, dy = gradient_circuit(Circuit.from_outputs(Fraction(1, 3) * x + third * y)).circuit.to_polynomial()
    assert f == Polynomial({(("x", 1),): Fraction(1, 3), (("y", 1),): third})
    assert dx == Fraction(1, 3) and dy == third and isinstance(dy.coefficient(), float)


# ------------------------------------------------------------------ pictures
def _labels(dot_source: str) -> dict:
    """{node id: label text} parsed from DOT source (the renderer's HTML-like labels)."""
    import re
    return {m.group(1): m.group(2) for m in re.finditer(r"^\s*(n\d+) \[label=<(.*?)> ", dot_source, re.M)}


def test_gradient_circuit_picture_says_which_derivative_a_variable_or_constant_is():
    # d(x·y)/dx = y and d(x·y)/dy = x are the input nodes themselves: their boxes read "x" and
    # "y" with no word that x is df/dy, so a reader took the box "x" for df/dx. The two
    # derivatives of x + y are one constant node "1", which named neither.
    import subprocess
    from autograd_dag.circuits import Circuit, gradient_circuit, variables
    x, y = variables("x y")
    prog = gradient_circuit(Circuit.from_outputs(x * y)).to_program()
    assert [prog.nodes[k].name for k in prog.outputs[1:]] == ["y", "x"]  # df/dx is y, df/dy is x
    source = ad.render(prog).source
    labels = _labels(source)
    assert "<I>df/dy</I>" in labels["n0"] and "<I>df/dx</I>" in labels["n1"]
    assert "<I>f</I>" in labels["n2"]
    prog = gradient_circuit(Circuit.from_outputs(x + y)).to_program()
    (k,) = set(prog.outputs[1:])
    assert "<I>df/dx, df/dy</I>" in _labels(ad.render(prog).source)[f"n{k}"]
    assert subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True).returncode == 0


def test_circuit_constants_must_be_finite():
    # inf and nan were accepted as constants: x·inf expanded to "inf*x", its gradient circuit
    # computed nan with a RuntimeWarning only, and equivalent() crashed with OverflowError
    # "cannot convert Infinity to integer ratio". (parse() already refused 1e400.)
    from autograd_dag.circuits import Circuit, Polynomial, constant, equivalent, variables
    from autograd_dag.errors import CircuitError
    x = variables("x")
    for bad in (float("inf"), -float("inf"), float("nan"), np.float64("inf")):
        with pytest.raises(CircuitError, match="not a finite number"):
            x * bad
        with pytest.raises(CircuitError, match="not a finite number"):
            constant(bad)
        with pytest.raises(CircuitError, match="not a finite number"):
            Polynomial({(("x", 1),): bad})
    # float constants multiplied past float64's range: refused on expansion, not printed as inf
    c = Circuit.from_outputs(1e200 * x * 1e200)
    with pytest.raises(CircuitError, match="multiplied past 1.8e308"):
        c.to_polynomial()
    # the random test reads floats as exact rationals, so it still decides (1e200·1e200 = 1e400 exactly)
    assert equivalent(c, 1e200 * (1e200 * x), method="random", seed=0).equivalent
    assert not equivalent(c, 1e200 * x, method="random", seed=0).equivalent
