"""Defects where two routes to one result disagreed (trace and jit, jit and numpy's aliasing, a circuit
and its picture) or a formula lost accuracy (gelu's tanh form), one test each.

Each test failed before its fix; its comment names what was wrong.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad


def _input_dtypes(prog):
    return [np.dtype(prog.nodes[k].dtype) for k in prog.inputs]


def test_trace_gives_a_python_number_the_dtype_of_the_float_arrays_as_jit_does():
    # ad.trace(f, x32, 2.0) made the Python number a float64 input, so the program computed and returned
    # float64 beside float32 arrays, where ad.jit(f)(x32, 2.0), numpy 2 and jax.jit stay float32.
    def f(x, s):
        return ad.tanh(x * s) + s
    x = np.array([0.5, -1.25, 2.0], np.float32)
    for s in (2.0, 2, True):
        prog = ad.trace(f, x, s)
        assert _input_dtypes(prog) == [np.float32, np.float32], s
        out = prog(x, 3.0)                                   # runs with a Python number: float32
        assert out.dtype == np.float32
        expected = ad.jit(f)(x, 3.0)
        assert expected.dtype == np.float32
        # (the same float32 operations on the same values: exact)
        np.testing.assert_array_equal(out, expected)
    # jax.jit, the reference for weak types: a Python float beside float32 gives float32.
    jax = pytest.importorskip("jax")
    assert np.dtype(jax.jit(lambda a, b: jax.numpy.tanh(a * b) + b)(x, 2.0).dtype) == np.float32
    # In a dict of parameters as well; beside float64 arrays, and alone: float64, as before.
    prog = ad.trace(lambda p, s: p["w"] * p["k"] * s, {"w": x, "k": 2}, 0.5)
    assert _input_dtypes(prog) == [np.float32] * 3
    assert _input_dtypes(ad.trace(f, x.astype(np.float64), 2.0)) == [np.float64] * 2
    assert _input_dtypes(ad.trace(f, 1.0, 2.0)) == [np.float64] * 2
    # A list of numbers is an array, strong as numpy's np.asarray([..]): float64.
    assert _input_dtypes(ad.trace(f, x, [1.0, 2.0, 3.0])) == [np.float32, np.float64]


# ---------------------------------------------------------------- jit outputs are the caller's own arrays
# JAX's jit returns fresh buffers (jax.jit(lambda t: t)(a) is a new array, and (t, t) two of them);
# numpy users write into results (g -= lr * ..., h[...] = 0). So a jit (or program) output shares no
# memory with the caller's inputs, the program's constants or another output of the call, and no later
# call writes into it. ad.jit(lambda t: t)(a) was a itself, and (t, t) one array twice.

BIG = 1 << 14   # float64 elements: 128 KiB, above execution.MIN_BYTES, so results overwrite dying operands


def _calls(f, *args, n=3):
    """n calls' outputs as flat lists (the first runs the plan's loop, the later ones its generated code)."""
    outs = []
    for _ in range(n):
        out = f(*args)
        outs.append(list(out.values()) if isinstance(out, dict) else list(out) if isinstance(out, tuple) else [out])
    return outs


def _assert_own(outputs, holders):
    for i, o in enumerate(outputs):
        assert isinstance(o, np.ndarray)
        for h in holders:
            assert not np.shares_memory(o, h), (i, "shares memory with an input or a constant")
        for j in range(i):
            assert not np.shares_memory(o, outputs[j]), (i, j, "two outputs share memory")


@pytest.mark.parametrize("f", [
    lambda t: t,
    lambda t: ad.reshape(t, (-1,)),
    lambda t: ad.transpose(t),
    lambda t: t[1:],
    lambda t: ad.stop_gradient(t),
    lambda t: t.astype(np.float64),
    lambda t: (t, t),
    lambda t: (t * 2.0, t * 2.0),                                  # one node after CSE
    lambda t: (t * 2.0, ad.reshape(t * 2.0, (-1,))),               # an output and a view of it
    lambda t: {"a": ad.transpose(t), "b": ad.sum(t, axis=0), "c": t},
], ids=["identity", "reshape", "transpose", "slice", "stop_gradient", "astype", "pair", "cse_pair",
        "view_of_output", "dict"])
def test_a_jit_output_shares_no_memory_with_the_inputs_or_another_output(f):
    a = np.arange(12.0).reshape(3, 4)
    kept = a.copy()
    for outputs in _calls(ad.jit(f), a) + _calls(ad.trace(f, a), a):
        _assert_own(outputs, [a])
        for o in outputs:
            o[...] = -7.0          # the caller writes into what it got: its input stays
        np.testing.assert_array_equal(a, kept)
    # And the other way: writing into the input after the call leaves the output as it was.
    out = ad.jit(lambda t: t)(a)
    a[0, 0] = 100.0
    assert out[0, 0] == 0.0


def test_a_jit_output_is_not_a_closure_constant_and_a_later_call_never_overwrites_it():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(BIG)
    w_kept = w.copy()

    def f(x):
        y = ad.exp(x) * 2.0 + 1.0          # elementwise chain: each result overwrites a dying operand
        z = ad.tanh(y) - x
        return y, z, ad.reshape(ad.Tensor(w), (-1,)), ad.sin(z) + w
    fast = ad.jit(f)
    xs = [rng.standard_normal(BIG) for _ in range(4)]
    held = []
    for x in xs:
        outputs = _calls(fast, x, n=1)[0]
        _assert_own(outputs, [x, w])
        held.append((outputs, [o.copy() for o in outputs]))
    for outputs, copies in held:       # the later calls wrote into none of the earlier results
        for o, c in zip(outputs, copies):
            np.testing.assert_array_equal(o, c)
    np.testing.assert_array_equal(w, w_kept)
    held[0][0][2][:] = 0.0               # the caller zeroes the returned constant: w and later calls keep theirs
    np.testing.assert_array_equal(w, w_kept)
    np.testing.assert_array_equal(fast(xs[0])[2], w_kept)
    # The numbers (numpy, float64: the same operations in the same order).
    y = np.exp(xs[-1]) * 2.0 + 1.0
    np.testing.assert_allclose(held[-1][0][1], np.tanh(y) - xs[-1], rtol=1e-15)


def test_only_outputs_that_may_share_memory_are_copied():
    # Decided once per program (execution.shared_outputs): a fresh result is returned as computed.
    x = np.ones((2, 3))
    for f, shared in [(lambda t: ad.exp(t), set()), (lambda t: ad.sum(t), set()), (lambda t: t @ t.T, set()),
                      (lambda t: (t, ad.exp(t)), {0}), (lambda t: (lambda e: (e, e))(ad.exp(t)), {1}),
                      (lambda t: (lambda e: (e, ad.transpose(e)))(ad.exp(t)), {1})]:
        prog = ad.trace(f, x)
        prog._plan()
        assert set(prog._shared) == shared


def _table_cases():
    from tests.test_primitives_table import ALL_CASES, case_id
    return ALL_CASES, [case_id(c) for c in ALL_CASES]


@pytest.mark.parametrize("case", _table_cases()[0], ids=_table_cases()[1])
def test_no_primitive_hands_a_jit_caller_memory_it_does_not_own(case):
    # Every case of the primitive table under jit, its arguments as inputs and (closure) as constants:
    # this is what checks execution.FRESH, the primitives trusted to return new arrays.
    from tests.test_primitives_table import closure, make_args
    args = make_args(case)
    for f, call_args, holders in [(case.fn, args, args)]:
        try:
            outs = _calls(ad.jit(f), *call_args, n=2)
        except ad.AutogradDagError:
            pytest.skip("not jit-able with these arguments as inputs")
        for outputs in outs:
            _assert_own([np.asarray(o) for o in outputs], [a for a in holders if isinstance(a, np.ndarray)])
    g, wrt_args = closure(case, args)
    fixed = [a for a in args if isinstance(a, np.ndarray)]
    for outputs in _calls(ad.jit(g), *wrt_args, n=2):
        _assert_own(outputs, list(wrt_args) + fixed)


# ---------------------------------------------------------------- gelu's tanh form in the negative tail

_C = np.sqrt(2.0 / np.pi)


def _gelu_tanh_ref(x):
    """float64 numpy: x·σ(2u) = x/2·(1 + tanh u), u = √(2/π)(x + 0.044715x³), and its derivative."""
    u = _C * (x + 0.044715 * x ** 3)
    s = 1.0 / (1.0 + np.exp(-2.0 * u))
    return x * s, s + x * s * (1.0 - s) * 2.0 * _C * (1.0 + 3 * 0.044715 * x ** 2)


def test_gelu_tanh_is_accurate_relative_to_its_value_in_the_negative_tail():
    # 0.5·x·(1 + tanh(u)) in float32 lost 30 % of the value at x = −5 (1 + tanh(u) cancels; PyTorch's too)
    # and all of it from −6 on; x·σ(2u) is the same function without the cancellation.
    from autograd_dag.nn import functional as F
    x = np.concatenate([np.linspace(-10, 10, 201), [-5.0, -7.5]]).astype(np.float32)
    x = x[x != 0]
    x64 = x.astype(np.float64)
    value, slope = _gelu_tanh_ref(x64)
    eps = np.finfo(np.float32).eps
    # Tolerance: a few float32 roundings times the condition number |x·f'/f| of the value (≤ 230 at
    # x = −10, where σ(2u) ~ e^-87), and |x·f''/f'| of the derivative (large near its root x ≈ −0.75).
    cond = np.abs(x64 * slope / value)
    h = 1e-6
    slope2 = (_gelu_tanh_ref(x64 + h)[1] - _gelu_tanh_ref(x64 - h)[1]) / (2 * h)
    cond_slope = np.abs(x64 * slope2 / slope)
    for route in (lambda t: F.gelu(ad.Tensor(t), approximate="tanh").value,
                  ad.jit(lambda t: F.gelu(t, approximate="tanh"))):
        got = route(x)
        assert got.dtype == np.float32
        np.testing.assert_array_less(np.abs(got / value - 1), 4 * eps * (1 + cond))
        assert abs(got[x == -5.0][0] / value[x64 == -5.0][0] - 1) < 1e-5
    grad = ad.grad(lambda t: ad.sum(F.gelu(t, approximate="tanh")))(x)
    assert grad.dtype == np.float32
    np.testing.assert_array_less(np.abs(grad / slope - 1), 64 * eps * (1 + cond_slope))
    # float64: the derivative against central differences of the forward (step 1e-6: truncation
    # ~h²·f''' ≈ 1e-12, rounding ~eps64·|f|/h ≈ 1e-9 absolute).
    grad64 = ad.grad(lambda t: ad.sum(F.gelu(t, approximate="tanh")))(x64)
    fwd = lambda t: F.gelu(ad.Tensor(t), approximate="tanh").value
    np.testing.assert_allclose(grad64, (fwd(x64 + h) - fwd(x64 - h)) / (2 * h), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(grad64, slope, rtol=1e-12, atol=1e-300)


def test_gelu_exact_form_keeps_its_documented_absolute_accuracy():
    # x/2·(1 + erf(x/√2)), as PyTorch and ONNX define it: 1 + erf cancels for x ≪ 0, so the float32 error
    # is a few ulps of |x|/2 (absolute), not of the tiny value (documented; PyTorch's float32 is worse).
    from math import erfc
    from autograd_dag.nn import functional as F
    x = np.linspace(-10, 10, 201).astype(np.float32)
    ref = np.array([0.5 * v * erfc(-v / np.sqrt(2.0)) for v in x.astype(np.float64)])
    got = F.gelu(ad.Tensor(x)).value
    np.testing.assert_allclose(got, ref, rtol=4 * np.finfo(np.float32).eps,
                               atol=2 * np.finfo(np.float32).eps * float(np.abs(x).max()))


# ---------------------------------------------------------------- a circuit's picture has size edges

def _edges_laid_out_by_dot(obj) -> int:
    """The edges in Graphviz's own layout of ``ad.render(obj)`` (``dot -Tjson``), the legend has none."""
    import json
    import shutil
    import subprocess
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    laid = subprocess.run(["dot", "-Tjson"], input=ad.render(obj).source, capture_output=True, text=True,
                          check=True, timeout=60).stdout
    return len(json.loads(laid).get("edges", []))


def test_a_circuit_is_drawn_with_each_gate_at_its_fan_in_so_its_picture_has_size_edges():
    # Circuit.size counts edges (seed 001 §4.1.4: a gate of fan-in k has k). The picture came from
    # to_program, which runs numpy's binary add and multiply: a gate of fan-in 3 was a chain of two
    # nodes, 4 edges, and this circuit of size 9 was drawn with 12.
    from autograd_dag.circuits import Circuit, gradient_circuit
    c = Circuit()
    x, y, z = c.variable("x"), c.variable("y"), c.variable("z")
    s = c.add(x, y, z)
    c.set_outputs(c.add(c.mul(s, x, x), s, 1))      # x twice: two edges, as size counts them
    assert c.size == 9
    assert _edges_laid_out_by_dot(c) == c.size
    source = ad.render(c).source
    assert source.count("%3 = add(%0, %1, %2)") == 1 and "out0" in source
    # A gate no output needs is drawn too (size counts it), and the gradient circuit's picture.
    c.add(x, y, z, 2)
    assert c.size == 13 and _edges_laid_out_by_dot(c) == 13
    grad = gradient_circuit(c)
    assert _edges_laid_out_by_dot(grad) == grad.size == grad.circuit.size
    # Running stays the binary program's: to_program computes the same value.
    assert float(c.to_program()(1.0, 2.0, 3.0)) == c.evaluate({"x": 1, "y": 2, "z": 3}) == 13   # (1 + 2 + 3)·1·1 + 6 + 1
