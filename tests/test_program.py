"""Programs (seed 001 §4.1): building, printing, executing by Algorithm 4.1, errors, scale."""

from __future__ import annotations

import gc
import math
import re
import weakref

import numpy as np
import pytest

import autograd_dag as ad
from tests import helpers
from autograd_dag.graph_algorithms import is_chain, topological_orders
from autograd_dag.program import NodeKind, Program, ProgramNode
from autograd_dag.passes import common_subexpressions


def line_of(marker: str) -> int:
    return helpers.line_of(marker, __name__)


def book_f(x1, x2):
    return x2 * ad.exp(x1) * ad.sqrt(x1 + x2 * ad.exp(x1))  # MARK-book-f

# ------------------------------------------------------- the book's examples


def test_computation_chain():
    # s1 = f1(s0), ..., sK = fK(sK-1): each node has exactly its predecessor as parent.
    def chain(x):
        s1 = ad.tanh(x)
        s2 = ad.exp(s1)
        s3 = ad.sqrt(s2)
        return ad.log(s3)

    prog = ad.trace(chain, np.zeros(3))
    assert [n.op for n in prog] == [NodeKind.INPUT, "tanh", "exp", "sqrt", "log"]
    assert [prog.parents(k) for k in range(5)] == [(), (0,), (1,), (2,), (3,)]
    assert is_chain(prog.to_graph())
    assert prog.roots() == [0] and prog.leaves() == [4] and len(prog) == 5 and prog.num_edges == 4
    x = np.array([-1.0, 0.5, 2.0])
    np.testing.assert_allclose(prog(x), np.tanh(x) / 2, rtol=1e-15)  # log √(e^t) = t/2


def test_dag_program_with_two_topological_orders():
    # Node 0 feeds 1 and 2, both feed 3, which feeds 4: orders (0,1,2,3,4) and (0,2,1,3,4).
    g = ad.Graph.from_edges([(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)])
    assert list(topological_orders(g)) == [(0, 1, 2, 3, 4), (0, 2, 1, 3, 4)]
    assert not is_chain(g)
    prog = Program.from_graph(g, {1: "exp", 2: "tanh", 3: "multiply", 4: "negative"}, {0: np.zeros(2)},
                              outputs=[4])
    assert [n.op for n in prog] == [NodeKind.INPUT, "exp", "tanh", "multiply", "negative"]
    assert prog.parents(3) == (1, 2) and prog.children(0) == [1, 2]
    assert prog.roots() == [0] and prog.leaves() == [4] and prog.num_edges == 5
    x = np.array([0.3, -1.2])
    (out,) = prog(x)
    np.testing.assert_allclose(out, -np.exp(x) * np.tanh(x), rtol=1e-15)
    # The same program numbered in the other topological order (tanh before exp) computes the same.
    P = ad.PRIMITIVES
    other = Program([ProgramNode(0, NodeKind.INPUT, None, (), None, (2,), np.float64),
                     ProgramNode(1, "tanh", P["tanh"], (0,), None, (2,), np.float64),
                     ProgramNode(2, "exp", P["exp"], (0,), None, (2,), np.float64),
                     ProgramNode(3, "multiply", P["multiply"], (2, 1), None, (2,), np.float64),
                     ProgramNode(4, "negative", P["negative"], (3,), None, (2,), np.float64)], [0], [4])
    np.testing.assert_allclose(other(x), out, rtol=1e-15)


def test_book_function_program():
    prog = ad.trace(book_f, 1.0, 2.0)
    assert len(prog.inputs) == 2 and prog.op_counts()["exp"] == 2
    for x1, x2 in [(1.0, 2.0), (0.0, 0.5), (2.0, 0.1)]:
        expected = x2 * math.exp(x1) * math.sqrt(x1 + x2 * math.exp(x1))
        assert float(prog(np.float64(x1), np.float64(x2))) == pytest.approx(expected, rel=1e-15)


def test_from_graph_with_one_leaf_returns_one_array():
    g = ad.Graph.from_edges([("x", "e"), ("e", "m"), ("x", "m")])
    prog = Program.from_graph(g, {"e": "exp", "m": "multiply"}, {"x": np.ones(2)})
    out = prog(np.array([0.0, 1.0]))
    assert isinstance(out, np.ndarray)

# ---------------------------------------------------------------- printing


def test_print_format_one_line_per_node():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((256, 5)), rng.standard_normal((5, 10))

    def model(x, w):
        h = ad.matmul(x, w)  # MARK-matmul
        return ad.relu(h).sum(axis=1)  # MARK-relu

    prog = ad.trace(model, x, w)
    lines = str(prog).splitlines()
    assert lines[0] == "def model(%0: float64[256,5], %1: float64[5,10]):"
    assert lines[1] == f"  %2 = matmul(%0, %1)  : float64[256,10]  # test_program.py:{line_of('MARK-matmul')}"
    assert lines[2] == f"  %3 = relu(%2)  : float64[256,10]  # test_program.py:{line_of('MARK-relu')}"
    assert lines[3] == (f"  %4 = sum(%3, axis=(1,), keepdims=False)  : float64[256]  "
                        f"# test_program.py:{line_of('MARK-relu')}")
    assert lines[4] == "  return %4"
    assert len(lines) == len(prog) - len(prog.inputs) + 2
    # Every node line has the documented shape.
    pattern = re.compile(r"^  %\d+ = \w+\((%\d+(, )?)*.*\)  : \w+\[[\d,]*\]  # [\w.]+:\d+$")
    for line in str(ad.trace(book_f, 1.0, 2.0)).splitlines()[1:-1]:
        assert pattern.match(line), line
    assert "test_program.py:" + str(line_of("MARK-book-f")) in str(ad.trace(book_f, 1.0, 2.0))
    assert repr(prog) == "<Program model: 2 input(s), 5 nodes, 4 edges, 1 output(s)>"


def test_print_constants_and_multiple_outputs():
    prog = ad.trace(lambda x: (x * 2.5, x + np.ones(3)), np.zeros(3))
    text = str(prog)
    assert "= constant 2.5  : float64[]" in text
    assert "= constant array[3]  : float64[3]" in text
    assert text.splitlines()[-1] == "  return (%2, %4)"

# ------------------------------------------------------------- execution


def test_reexecution_on_new_inputs_equals_calling_the_function():
    def f(x, W, b):
        h = ad.tanh(ad.matmul(x, W) + b)
        return ad.logsumexp(h, axis=-1).sum() + ad.maximum(h, 0.1).mean()

    rng = np.random.default_rng(1)
    example = (rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal(5))
    prog = ad.trace(f, *example)
    for seed in range(3):
        r = np.random.default_rng(10 + seed)
        new = (r.standard_normal((4, 3)), r.standard_normal((3, 5)), r.standard_normal(5))
        np.testing.assert_allclose(prog(*new), f(*[ad.Tensor(a) for a in new]).value, rtol=1e-14)
    # Called on Tensors it records again, so it can be differentiated.
    g = ad.grad(lambda W: prog(example[0], W, example[2]))(example[1])
    np.testing.assert_allclose(g, ad.grad(lambda W: f(example[0], W, example[2]))(example[1]), rtol=1e-14)


def test_multiple_inputs_and_outputs():
    def f(a, b, c):
        s = a * b
        return s + c, ad.exp(s).sum(), c

    a, b, c = np.array([1.0, 2.0]), np.array([3.0, -1.0]), np.array([0.5, 0.5])
    prog = ad.trace(f, a, b, c)
    assert prog.inputs == (0, 1, 2) and len(prog.outputs) == 3
    assert [prog[k].name for k in prog.inputs] == ["a", "b", "c"]
    out = prog(a + 1, b, c * 2)
    assert isinstance(out, tuple) and len(out) == 3
    np.testing.assert_allclose(out[0], (a + 1) * b + c * 2)
    np.testing.assert_allclose(out[1], np.exp((a + 1) * b).sum())
    np.testing.assert_array_equal(out[2], c * 2)  # an input returned as an output
    # A function returning a 1-tuple gives a program returning a 1-tuple.
    assert isinstance(ad.trace(lambda x: (x * 2.0,), a)(a), tuple)


def test_a_primitive_may_be_named_like_a_node_kind():
    # Node kinds are NodeKind members, never strings: a primitive called "input"
    # is a function node like any other, listed, run and differentiated as one.
    from autograd_dag.primitives.registry import PRIMITIVES, USER_PRIMITIVES
    double = ad.primitive("input", lambda x: 2.0 * x, vjp=lambda ct, out, x: (2.0 * ct,),
                          jvp=lambda t, out, x: 2.0 * t[0])
    try:
        prog = ad.trace(lambda x: double(x), np.ones(2))
        assert [n.op for n in prog] == [NodeKind.INPUT, "input"] and prog.inputs == (0,)
        assert str(prog).splitlines()[1].startswith("  %1 = input(%0)  : float64[2]")
        assert prog.op_counts() == {"input": 2}  # counts go by name
        assert np.allclose(prog(np.arange(2.0)), [0.0, 2.0])
        assert np.allclose(ad.grad_program(ad.trace(lambda x: double(x).sum(), np.ones(2)))(np.ones(2)), 2.0)
    finally:
        del PRIMITIVES["input"]
        USER_PRIMITIVES.discard("input")


def test_from_outputs_and_graph_queries():
    x = ad.Tensor([1.0, 2.0], name="x")
    y = ad.Tensor([3.0, 4.0], name="y")
    w = ad.Tensor([0.5, 0.5], requires_grad=True, name="w")
    s = x * y
    t = ad.exp(s) + w
    u = s.sum()
    prog = Program.from_outputs((x, y), (t, u))
    ops = [str(n.op) for n in prog]  # roots by their kind's name
    assert ops[:2] == ["input", "input"] and sorted(ops[2:]) == sorted(["multiply", "exp", "parameter", "add",
                                                                         "sum"])
    k_mul, k_exp, k_par, k_add, k_sum = (ops.index(o) for o in ["multiply", "exp", "parameter", "add", "sum"])
    assert prog.parents(k_mul) == (0, 1) and prog.parents(k_add) == (k_exp, k_par)
    assert prog.children(k_mul) == sorted([k_exp, k_sum])
    assert prog.roots() == [0, 1, k_par] and sorted(prog.leaves()) == sorted([k_add, k_sum])
    assert len(prog) == 7 and prog.num_edges == 2 + 1 + 2 + 1
    assert prog.outputs == (k_add, k_sum)
    np.testing.assert_allclose(prog(np.ones(2), np.ones(2))[0], np.exp(1.0) + 0.5)
    # A single Tensor in and out: a single array out.
    single = Program.from_outputs(x, ad.exp(x))
    assert single.outputs == (1,) and isinstance(single(np.zeros(2)), np.ndarray)
    # History behind an input is cut there.
    cut = Program.from_outputs(s, ad.exp(s))
    assert [n.op for n in cut] == [NodeKind.INPUT, "exp"]
    # The bare DAG agrees with the program's parents.
    graph = prog.to_graph()
    assert sorted(graph.edges) == sorted((p, n.index) for n in prog for p in n.parents)


def test_from_graph_with_params_and_explicit_outputs():
    g = ad.Graph.from_edges([("x", "t"), ("t", "s"), ("x", "m"), ("s", "m")])
    prog = Program.from_graph(g, {"t": "tanh", "s": "sum", "m": ad.PRIMITIVES["multiply"]},
                              {"x": np.zeros((2, 3))}, outputs=["m", "s"],
                              params={"s": {"axis": (1,), "keepdims": True}})
    x = np.arange(6.0).reshape(2, 3) / 10
    m, s = prog(x)
    np.testing.assert_allclose(s, np.tanh(x).sum(1, keepdims=True), rtol=1e-15)
    np.testing.assert_allclose(m, x * np.tanh(x).sum(1, keepdims=True), rtol=1e-15)
    with pytest.raises(ad.ProgramInputError, match="'t'.*neither an input"):
        Program.from_graph(g, {"s": "sum", "m": "multiply"}, {"x": np.zeros(2)})
    with pytest.raises(ad.ProgramInputError, match="no_such_op"):
        Program.from_graph(g, {"t": "no_such_op", "s": "sum", "m": "multiply"}, {"x": np.zeros(2)})
    # x * x: the second edge x -> m is not kept. The error named only multiply's arity and shapes.
    square = ad.Graph.from_edges([("x", "m"), ("x", "m")])
    with pytest.raises(ad.ProgramInputError, match=r"vertex 'm' applies multiply to its parents \['x'\].*one edge per"):
        Program.from_graph(square, {"m": "multiply"}, {"x": np.zeros(2)})

# ------------------------------------------------------------------ errors


def _live_tensors() -> int:
    gc.collect()
    return sum(isinstance(o, ad.Tensor) for o in gc.get_objects())


def test_shape_error_names_op_shapes_and_this_line_and_records_nothing():
    a = ad.Tensor(np.ones((2, 3)), requires_grad=True)
    b = ad.Tensor(np.ones((4, 5)))
    before = _live_tensors()
    with pytest.raises(ad.ShapeError) as err:
        ad.matmul(a, b)  # MARK-bad-matmul
    message = str(err.value)
    assert "matmul" in message and "(2, 3)" in message and "(4, 5)" in message
    assert "Expect" in message and "Actual" in message
    assert f"test_program.py:{line_of('MARK-bad-matmul')}" in message
    # (The user's file path is left out: a checkout under a directory named like numpy would match.)
    words = message.replace(__file__, "test_program.py")
    assert "Traceback" not in words and "numpy" not in words.lower()
    del err
    assert _live_tensors() == before  # no node left behind
    assert a.parents == () and a.grad is None
    # Inside a traced function: the error names the user's line, and no program comes out.

    def bad(x, y):
        h = ad.exp(x)
        return h + y  # MARK-bad-add

    with pytest.raises(ad.ShapeError) as err:
        ad.trace(bad, np.ones((2, 3)), np.ones(4))
    message = str(err.value)
    assert "add" in message and "(2, 3)" in message and "(4,)" in message
    assert f"test_program.py:{line_of('MARK-bad-add')}" in message
    # A bad axis and a bad reshape are caught at the operation too.
    with pytest.raises(ad.ShapeError, match=r"sum.*axis 2.*test_program\.py"):
        ad.sum(a, axis=2)
    with pytest.raises(ad.ShapeError, match=r"reshape.*\(4,\).*test_program\.py"):
        ad.reshape(a, (4,))


def test_program_input_errors_name_the_input():
    prog = ad.trace(lambda image, weights: ad.matmul(image, weights), np.ones((2, 3)), np.ones((3, 4)))
    with pytest.raises(ad.ProgramInputError, match=r"takes 2 input\(s\) \(image, weights\); got 1"):
        prog(np.ones((2, 3)))
    with pytest.raises(ad.ProgramInputError, match=r"input 1 \('weights'\) expects shape \(3, 4\), got \(3, 5\)"):
        prog(np.ones((2, 3)), np.ones((3, 5)))
    with pytest.raises(ad.ProgramInputError, match=r"input 0 \('image'\) expects dtype float64, got complex128"):
        prog(np.ones((2, 3), complex), np.ones((3, 4)))
    with pytest.raises(ad.ProgramInputError, match="'image'.*float64.*<U1"):
        prog(np.full((2, 3), "a"), np.ones((3, 4)))


def test_program_refuses_integer_inputs_that_do_not_fit_its_dtype():
    """An int8 program given int64 values wrapped them around (300 became 44), silently."""
    prog = ad.trace(lambda x: x + 1, np.zeros(2, np.int8))
    with pytest.raises(ad.ProgramInputError, match=r"input 0 \('x'\) expects dtype int8, got int64 values outside"):
        prog(np.array([300, 5]))
    out = prog(np.array([-128, 5]))
    assert out.dtype == np.int8 and out.tolist() == [-127, 6]


def test_cycle_errors_name_the_cycle_and_change_nothing():
    g = ad.Graph.from_edges([("a", "b"), ("b", "c")])
    with pytest.raises(ad.CycleError) as err:
        g.add_edge("c", "a")
    assert err.value.cycle == ["a", "b", "c", "a"]
    assert "a -> b -> c -> a" in str(err.value)
    assert g.edges == [("a", "b"), ("b", "c")]
    cyclic = ad.Graph.from_edges([("x", "p"), ("p", "q"), ("q", "p")], check=False)
    with pytest.raises(ad.CycleError) as err:
        Program.from_graph(cyclic, {"p": "exp", "q": "exp"}, {"x": np.ones(1)})
    assert set(err.value.cycle) == {"p", "q"}
    # Nodes out of topological order are refused when a program is built.
    exp = ad.PRIMITIVES["exp"]
    with pytest.raises(ad.AutogradDagError, match="topological order"):
        Program([ProgramNode(0, NodeKind.INPUT, None, (), None, (1,), np.float64),
                 ProgramNode(1, "exp", exp, (2,), None, (1,), np.float64),
                 ProgramNode(2, "exp", exp, (0,), None, (1,), np.float64)], [0], [1])

# ------------------------------------------------------- freeing values


def test_intermediate_values_are_freed_after_their_last_use():
    outputs: list = []   # weak references to every value the probe produced
    alive_seen: list = []

    def probe_impl(*xs):
        alive_seen.append(sum(r() is not None for r in outputs))
        out = sum(xs) + 1.0
        outputs.append(weakref.ref(out))
        return out

    probe = ad.primitive("test_program_probe", probe_impl, replace=True)

    def f(x):
        a = probe(x)       # a is used by b and by d
        b = probe(a)
        c = probe(b)
        d = probe(c, a)    # last use of a and c
        e = probe(d)
        return probe(e)

    prog = ad.trace(f, np.zeros(3))
    outputs.clear(), alive_seen.clear()
    result = prog(np.zeros(3))
    np.testing.assert_array_equal(result, np.full(3, 7.0))
    # When each node runs, only values still needed later are alive:
    #   a: none; b: a; c: a, b; d: a, c; e: d; out: e.
    assert alive_seen == [0, 1, 2, 2, 1, 1]
    del result
    gc.collect()
    assert all(r() is None for r in outputs)
    # The plan behind it: each value (the input's too) is dropped right after
    # its last use; outputs never.
    chain = ad.trace(lambda x: ad.exp(ad.exp(ad.exp(x))), np.zeros(1))
    assert [step[4] for step in chain._plan()[1]] == [(0,), (1,), (2,)]  # one step per function node
    kept = ad.trace(lambda x: (ad.exp(x), ad.exp(ad.exp(x))), np.zeros(1))
    assert [n.op for n in kept] == [NodeKind.INPUT, "exp", "exp", "exp"] and kept.outputs == (1, 3)
    # The input is used by nodes 1 and 2; node 1 is an output, so it is never freed.
    assert [step[4] for step in kept._plan()[1]] == [(), (0,), (2,)]

def test_reruns_never_change_returned_arrays_inputs_or_views(monkeypatch):
    # The executor writes elementwise results into operands that die at that
    # node (out=): nothing it returned, no view of it and no input may change,
    # in this run or the next. (Small arrays too, here.)
    from autograd_dag import execution
    monkeypatch.setattr(execution, "MIN_BYTES", 0)
    def f(x, w):
        a = x @ w
        v = ad.transpose(a)                   # a view of a, returned
        h = ad.relu(a + 1.0)                  # a dies at the add, but v still shows it
        y = ad.exp(-h) * 2.0                  # relu and exp write into their dying operands
        return v, h * y, ad.sum(y + h)

    rng = np.random.default_rng(0)
    prog = ad.trace(f, np.zeros((5, 4)), np.zeros((4, 3)))
    runs = []
    for _ in range(4):
        x, w = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))
        inputs = (x.copy(), w.copy())
        runs.append((inputs, (x, w), prog(x, w)))
    for (x0, w0), (x, w), got in runs:
        np.testing.assert_array_equal(x, x0)
        np.testing.assert_array_equal(w, w0)
        h = np.maximum(x0 @ w0 + 1.0, 0.0)
        y = np.exp(-h) * 2.0
        for a, b in zip(got, ((x0 @ w0).T, h * y, np.sum(y + h))):
            np.testing.assert_allclose(a, b, rtol=1e-14)
    grad = ad.jit(ad.value_and_grad(lambda w, x: ad.sum(ad.relu(x @ w) * 3.0)))
    x = rng.standard_normal((5, 4))
    results = [grad(rng.standard_normal((4, 3)), x) for _ in range(3)]
    kept = [(float(v), g.copy()) for v, g in results]
    grad(rng.standard_normal((4, 3)), x)
    for (v, g), (v0, g0) in zip(results, kept):
        assert float(v) == v0
        np.testing.assert_array_equal(g, g0)



def _layer_norm_ce_reference(x, gamma, W, labels):
    """Loss and gradients (x, γ, W) of mean CE(layer_norm(x)·γ @ W) in numpy, x̂ kept (no code shared)."""
    mu = x.sum(-1, keepdims=True) / x.shape[-1]
    c = x - mu
    inv = 1.0 / np.sqrt((c * c).sum(-1, keepdims=True) / x.shape[-1] + 1e-5)
    xhat = c * inv
    h = xhat * gamma
    z = h @ W
    e = np.exp(z - z.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    rows = np.arange(len(labels))
    loss = np.mean(-np.log(p[rows, labels]))
    dz = p.copy()
    dz[rows, labels] -= 1.0
    dz /= len(labels)
    dh = dz @ W.T
    dxhat = dh * gamma
    n = x.shape[-1]
    dx = inv * (dxhat - dxhat.sum(-1, keepdims=True) / n - xhat * (dxhat * xhat).sum(-1, keepdims=True) / n)
    return loss, dx, (dh * xhat).sum(0, keepdims=True), h.T @ dz


def test_gradient_program_recomputes_into_dying_operands(monkeypatch):
    # A training step's gradient program recomputes x̂ for γ's cotangent from the LayerNorm's
    # input (γ of shape (1, n): not the normalised shape, which standardized_sum serves), and the
    # cross-entropy's gradient from the scores: both die there, and both results are written
    # over them (no fresh array of their size), with the same numbers.
    from autograd_dag import execution
    from autograd_dag.nn import functional as F
    from autograd_dag.primitives.fused import layer_norm
    monkeypatch.setattr(execution, "MIN_BYTES", 0)

    def loss(x, gamma, W, labels):
        # (x·2: the LayerNorm's input is computed, as a residual sum is; a program input is never written)
        return F.cross_entropy(ad.matmul(layer_norm(x * 2.0, gamma, 0.0), W), labels)

    rng = np.random.default_rng(3)
    step = ad.jit(ad.value_and_grad(loss, argnums=(0, 1, 2)))
    for _ in range(3):  # later calls reuse the plan: the same numbers each time
        x, gamma, W = rng.standard_normal((6, 5)), rng.standard_normal((1, 5)), rng.standard_normal((5, 4))
        labels = rng.integers(0, 4, 6)
        kept = (x.copy(), gamma.copy(), W.copy())
        value, (gx, ggamma, gW) = step(x, gamma, W, labels)
        loss_ref, dx, dgamma, dW = _layer_norm_ce_reference(x * 2.0, gamma, W, labels)
        for got, want in zip((value, gx, ggamma, gW), (loss_ref, dx * 2.0, dgamma, dW)):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
        for a, b in zip((x, gamma, W), kept):
            np.testing.assert_array_equal(a, b)     # the inputs are never written into
    (program, _), = step.programs.values()
    nodes, steps = program.nodes, program._plan()[1]
    written = {nodes[k].prim.name for k, _, parents, _, _, inplace in steps
               if inplace is not None and nodes[inplace].shape == nodes[k].shape}
    assert {"layer_norm", "softmax_cross_entropy_grad"} <= written



def test_layer_norm_gamma_cotangent_is_one_node_without_an_array_of_the_input_size():
    # γ of the normalised shape: its cotangent Σ_rows ct ⊙ x̂ is one standardized_sum node (x̂
    # recomputed inside), where x̂, ct ⊙ x̂ and the sum over the rows were three nodes, two of
    # them arrays of x's size.
    from autograd_dag.primitives.fused import layer_norm
    rng = np.random.default_rng(4)
    x, gamma, beta, w = (rng.standard_normal(s) for s in ((2, 3, 5), (5,), (5,), (2, 3, 5)))
    prog = ad.grad_program(ad.trace(lambda x, g, b: ad.sum(layer_norm(x, g, b) * w), x, gamma, beta))
    ops = [n.op for n in prog]
    assert "standardized_sum" in ops and "layer_norm" not in ops
    assert not [n for n in prog if n.op == "multiply" and tuple(n.shape) == x.shape and
                any(prog.nodes[p].op == "layer_norm" for p in n.parents)]
    gx, ggamma, gbeta = prog(x, gamma, beta)
    mu = x.mean(-1, keepdims=True)
    xhat = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ggamma, (w * xhat).sum((0, 1)), rtol=1e-12)
    np.testing.assert_allclose(gbeta, w.sum((0, 1)), rtol=1e-12)


# ------------------------------------------------------------------ scale


def _chain_program(n: int) -> Program:
    tanh = ad.PRIMITIVES["tanh"]
    nodes = [ProgramNode(0, NodeKind.INPUT, None, (), None, (), np.float64)]
    nodes += [ProgramNode(k, "tanh", tanh, (k - 1,), None, (), np.float64) for k in range(1, n + 1)]
    return Program(nodes, [0], [n])


def test_million_node_chain_executes():
    n = 1_000_000
    prog = _chain_program(n)
    assert len(prog) == n + 1 and prog.num_edges == n
    out = prog(np.float64(3.0))
    # tanh iterated: x_{k+1} = tanh(x_k) decays like sqrt(3 / (2k)).
    assert float(out) == pytest.approx(math.sqrt(3 / (2 * n)), rel=1e-3)


def test_million_node_random_dag_executes():
    n = 1_000_000
    rng = np.random.default_rng(0)
    ops = ["maximum", "minimum", "tanh", "negative"]
    choice = rng.integers(0, 4, n)
    # Parents: the previous node and a random earlier one within a window of 1000.
    back = rng.integers(1, 1001, n)
    prims = [ad.PRIMITIVES[o] for o in ops]
    nodes = [ProgramNode(0, NodeKind.INPUT, None, (), None, (), np.float64)]
    ref = [0.7]
    for k in range(1, n + 1):
        c = choice[k - 1]
        j = max(0, k - int(back[k - 1]))
        parents = (k - 1, j) if c < 2 else (k - 1,)
        nodes.append(ProgramNode(k, ops[c], prims[c], parents, None, (), np.float64))
        a = ref[k - 1]
        ref.append(max(a, ref[j]) if c == 0 else min(a, ref[j]) if c == 1 else math.tanh(a) if c == 2 else -a)
    prog = Program(nodes, [0], [n])
    assert float(prog(np.float64(0.7))) == pytest.approx(ref[-1], rel=1e-12)  # math.tanh vs np.tanh: ulps


def test_common_subexpressions_merge_only_equal_computations():
    x = np.arange(6.0).reshape(2, 3)

    def f(x):
        a, b = ad.sum(x, axis=0), ad.sum(x, axis=1)          # different parameters: both stay
        c, d = x[:, 1:], x[:, 1:]                            # equal slices: one node
        e = ad.sin(x) * 2.0 + ad.sin(x) * 2.0                # one sin; the two lifted 2.0 stay apart
        return ad.sum(a) + ad.sum(b) + ad.sum(c * d) + ad.sum(e)

    prog = ad.trace(f, x)
    merged = prog.without_common_subexpressions()
    ops = [n.op for n in merged.nodes]
    assert ops.count("sum") == [n.op for n in prog.nodes].count("sum")      # no two sums are alike
    assert ops.count("getitem") == 1 and ops.count("sin") == 1
    assert {n.params["axis"] for n in merged.nodes if n.op == "sum" and n.parents == (0,)} == {(0,), (1,)}
    np.testing.assert_allclose(merged(x), prog(x), rtol=0)


@pytest.mark.parametrize("first, second", [
    (1, True), (1, 1.0), (0, False), (0.0, -0.0), ((1, 2), (True, 2)), ((1, 2), (1.0, 2)),
    ((1, 2), [1, 2]), ((0,), 0), ((), None), (slice(None, 1), slice(None, True)),
    (np.array([1.0]), np.array([1.0])), ("a", np.str_("a")),
])
def test_common_subexpressions_never_merge_parameters_differing_by_type_sign_or_identity(first, second):
    # The pass keys plain parameters (ints, strings, tuples of ints) by value and type without
    # its general walk: parameters that compare equal but are not the same must stay apart.
    prim = ad.PRIMITIVES["sum"]
    nodes = [ProgramNode(0, NodeKind.INPUT, None, (), None, (), np.float64)]
    nodes += [ProgramNode(k, "sum", prim, (0,), {"axis": value, "keepdims": False}, (), np.float64)
              for k, value in ((1, first), (2, second), (3, first))]
    merged, new_index = common_subexpressions(nodes + [
        ProgramNode(4, "add", ad.PRIMITIVES["add"], (1, 2), None, (), np.float64),
        ProgramNode(5, "add", ad.PRIMITIVES["add"], (3, 2), None, (), np.float64)], [0], [4, 5])
    assert [n.op for n in merged].count("sum") == 2      # 1 and 3 merge, 2 does not
    assert new_index[1] == new_index[3] != new_index[2]


def test_common_subexpressions_key_does_not_depend_on_keyword_order():
    prim = ad.PRIMITIVES["sum"]
    nodes = [ProgramNode(0, NodeKind.INPUT, None, (), None, (3,), np.float64),
             ProgramNode(1, "sum", prim, (0,), {"axis": (0,), "keepdims": True}, (1,), np.float64),
             ProgramNode(2, "sum", prim, (0,), {"keepdims": True, "axis": (0,)}, (1,), np.float64),
             ProgramNode(3, "add", ad.PRIMITIVES["add"], (1, 2), None, (1,), np.float64)]
    merged, new_index = common_subexpressions(nodes, [0], [3])
    assert new_index[1] == new_index[2] and len(merged) == 3


def test_common_subexpressions_keep_outputs_apart_and_inputs():
    prog = ad.trace(lambda x, unused: (ad.exp(x), ad.exp(x)), np.ones(2), np.ones(3))
    merged = prog.without_common_subexpressions()
    assert len(merged.inputs) == 2
    a, b = merged(np.zeros(2), np.zeros(3))
    assert a is not b and np.array_equal(a, b)


def test_trace_takes_dicts_of_arrays_one_input_per_entry():
    # A model's parameters as a dict: before, the dict became one 0-d object array and the
    # function failed inside with an unrelated getitem error.
    params = {"w": np.arange(6.0).reshape(2, 3), "b": {"shift": np.ones(3)}}

    def step(params, x):
        y = x @ params["w"] + params["b"]["shift"]
        return {"y": y, "total": ad.sum(y)}
    prog = ad.trace(step, params, np.ones((4, 2)))
    assert [prog.nodes[k].name for k in prog.inputs] == ["params.w", "params.b.shift", "x"]
    x = np.random.default_rng(0).standard_normal((4, 2))
    w, shift = np.ones((2, 3)), np.full(3, 0.5)
    y, total = prog(w, shift, x)
    np.testing.assert_allclose(y, x @ w + shift, rtol=1e-15)
    np.testing.assert_allclose(total, (x @ w + shift).sum(), rtol=1e-15)
    # A list of numbers is still one array.
    assert len(ad.trace(lambda v: v * 2.0, [1.0, 2.0]).inputs) == 1


def test_grad_program_computes_each_recomputed_forward_value_once():
    # cos's VJP makes its own sin(x): the gradient program had two sin nodes (and rendered both).
    g = ad.grad_program(ad.trace(lambda x: ad.sum(ad.sin(x) * ad.cos(x)), np.ones(3)))
    assert g.op_counts()["sin"] == 1 and g.op_counts()["cos"] == 1
    x = np.array([0.3, 1.0, -2.0])
    np.testing.assert_allclose(g(x), np.cos(x) ** 2 - np.sin(x) ** 2, rtol=1e-14)
    assert g.kind == "gradient" and g.nodes[g.outputs[0]].name == "df/dx"


def test_from_graph_refuses_an_extra_operand_of_a_ufunc_primitive():
    # exp given two parents ran np.exp(x, y): numpy took y as the array to write
    # into, so the user's example array and every later call's second argument
    # were overwritten with exp(x), and the program returned that silently.
    g = ad.Graph.from_edges([("x", "s"), ("y", "s")])
    y = np.full(2, 5.0)
    with pytest.raises(ad.ProgramInputError, match=r"vertex 's' applies exp.*1 operand.*got 2"):
        Program.from_graph(g, {"s": "exp"}, {"x": np.zeros(2), "y": y})
    np.testing.assert_array_equal(y, [5.0, 5.0])
    # Calling a primitive directly is refused alike.
    with pytest.raises(ad.ShapeError, match=r"exp.*1 operand.*got 2"):
        ad.PRIMITIVES["exp"](ad.Tensor(np.zeros(2)), y)
    np.testing.assert_array_equal(y, [5.0, 5.0])
    with pytest.raises(ad.ShapeError, match=r"add.*2 operands.*got 3"):
        ad.PRIMITIVES["add"](np.zeros(2), np.ones(2), y)
    np.testing.assert_array_equal(y, [5.0, 5.0])


def test_from_graph_names_an_output_that_is_not_a_vertex_and_an_input_with_parents():
    g = ad.Graph.from_edges([("x", "e"), ("e", "m"), ("x", "m")])
    with pytest.raises(ad.ProgramInputError, match=r"output 'zz' is not a vertex"):
        Program.from_graph(g, {"e": "exp", "m": "multiply"}, {"x": np.ones(2)}, outputs=["zz"])
    # Making 'e' an input silently dropped its edge x -> e: the program no longer had the graph's shape.
    with pytest.raises(ad.ProgramInputError, match=r"input 'e' has parents \['x'\]"):
        Program.from_graph(g, {"m": "multiply"}, {"x": np.ones(2), "e": np.ones(2)})


def test_a_float32_program_refuses_float64_values_beyond_its_range():
    # 1e40 into a float32 program became inf with numpy's RuntimeWarning only (the
    # narrowing integer cast is refused the same way: 300 into int8).
    prog = ad.trace(lambda x: x * 2, np.ones(2, np.float32))
    big = float(np.finfo(np.float32).max) * 2
    with pytest.raises(ad.ProgramInputError, match=r"input 0 \('x'\) expects dtype float32.*beyond.*3\.4"):
        prog(np.array([1.0, big]))
    with pytest.raises(ad.ProgramInputError, match="beyond"):
        prog(np.array([-big, 1.0]))
    # Values float32 holds (and inf or nan given as such) still run, rounded to float32.
    out = prog(np.array([1e-3, np.inf]))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.array([1e-3, np.inf], np.float32) * 2)


@pytest.mark.parametrize("axis", [-1, 1, (1,), [1], (-1,)])
def test_from_graph_params_as_the_public_function_takes_them(axis):
    # params={"axis": -1} (numpy's way) built and ran, but its gradient failed: the VJP
    # read axis=(-1,) as no axis ("reshape ... (2,) to (2, 3)") and axis=1 as not iterable;
    # axis=None and axis=[1] were refused. They mean what ad.sum(x, axis=...) means.
    g = ad.Graph.from_edges([("x", "s"), ("s", "e"), ("e", "o")])
    prog = Program.from_graph(g, {"s": "sum", "e": "exp", "o": "sum"}, {"x": np.zeros((2, 3))},
                              params={"s": {"axis": axis}, "o": {"axis": None}})
    x = np.arange(6.0).reshape(2, 3) / 10
    np.testing.assert_allclose(prog(x), np.exp(x.sum(axis=1)).sum(), rtol=1e-14)
    np.testing.assert_allclose(ad.grad_program(prog)(x), np.exp(x.sum(axis=1))[:, None] * np.ones((1, 3)),
                               rtol=1e-14)


def test_from_graph_parameters_left_out_take_the_public_defaults():
    # "sum" without params failed: "missing 2 required keyword-only arguments: 'axis' and 'keepdims'".
    g = ad.Graph.from_edges([("x", "e"), ("e", "s")])
    prog = Program.from_graph(g, {"e": "exp", "s": "sum"}, {"x": np.zeros(3)})
    x = np.array([0.1, -0.2, 0.3])
    np.testing.assert_allclose(prog(x), np.exp(x).sum(), rtol=1e-15)
    np.testing.assert_allclose(ad.grad_program(prog)(x), np.exp(x), rtol=1e-15)


def test_from_graph_concatenate_of_two_parents_with_and_without_its_axis():
    # Through ad.concatenate(tensors, axis) the second parent became the axis: "axis
    # Tensor([[1. 1. 1.] ...]) is out of range"; the primitive takes every parent as an operand.
    g = ad.Graph.from_edges([("x", "s"), ("y", "s")])
    x, y = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    prog = Program.from_graph(g, {"s": "concatenate"}, {"x": x, "y": y}, params={"s": {"axis": 1}})
    np.testing.assert_array_equal(prog(x, y), np.concatenate([x, y], axis=1))
    # Left out, the axis is the public function's default (axis=0, as np.concatenate's), as
    # from_graph documents for every parameter.
    prog = Program.from_graph(g, {"s": "concatenate"}, {"x": x, "y": y})
    np.testing.assert_array_equal(prog(x, y), np.concatenate([x, y]))


def test_the_plan_never_frees_a_constant_and_reruns_read_it_again():
    # The program keeps its constants' arrays (Program._plan's initial values): freeing the
    # executor's reference released nothing, so a constant is in no step's frees; the input and
    # the intermediates still are.
    c = np.array([2.0, 3.0])
    prog = ad.trace(lambda x: ad.multiply(ad.exp(ad.multiply(x, c)), c), np.zeros(2))
    constants = {n.index for n in prog.nodes if n.op is NodeKind.CONSTANT}
    assert constants
    frees = [p for step in prog._plan()[1] for p in step[4]]
    assert not constants & set(frees) and set(frees) == {0, 2, 3}  # x, x·c and exp(x·c)
    for x in (np.zeros(2), np.ones(2)):
        np.testing.assert_allclose(prog(x), np.exp(x * c) * c, rtol=1e-15)
