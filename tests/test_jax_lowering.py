"""Programs lowered to JAX (``ad.jax.lower``): every primitive's rule, measured on the case table, and whole programs.

For each case of the primitive table (tests/test_primitives_table.py), in float64:
(a) the lowered program's value equals ours;
(b) JAX's VJP of the lowered program (``jax.vjp``) equals our VJP (``ad.vjp``) for a random cotangent.
The primitives without a rule are exactly those :data:`autograd_dag.jax.UNSUPPORTED` lists, with reasons.
Then whole programs: a gradient program lowered equals ``jax.grad`` of the lowered forward program (and
ours), under ``jax.jit``; a TransformerLM training step and a vmapped program lower; float32 runs with
64-bit mode off and float64 is refused there.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.nn import Logits
from tests.test_primitives_table import ALL_CASES, case_id, closure, make_args, recorded_ops

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

# Two implementations of the same formula in float64 (numpy's and XLA's: other summation orders, other
# erf/expm1/LAPACK paths, lse's shift): they agree to rounding amplified by the case's conditioning;
# 1e-9 relative leaves three orders of margin over the worst case measured (1.8e-13, conv2d_bias).
RTOL, ATOL = 1e-9, 1e-11


# Float64 in JAX for every comparison here (the fixture is tests/conftest.py's).
pytestmark = pytest.mark.usefixtures("jax_x64")


LOWERED_CASES = [c for c in ALL_CASES if c.prim not in ad.jax.UNSUPPORTED]


def _close(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)
    else:
        np.testing.assert_array_equal(actual, expected)


def _program(case, args) -> ad.Program:
    """The case traced; a primitive the trace leaves out (identity) as a one-node program of its own."""
    prog = ad.trace(case.fn, *args)
    if case.prim in prog.op_counts():
        return prog
    out = case.fn(*[ad.Tensor(a) for a in args])
    assert out.prim.name == case.prim and len(out.parents) == len(args)
    nodes = [ad.ProgramNode(k, ad.NodeKind.INPUT, None, (), None, np.shape(a), np.asarray(a).dtype)
             for k, a in enumerate(args)]
    nodes.append(ad.ProgramNode(len(args), case.prim, out.prim, tuple(range(len(args))), out.params,
                                out.shape, out.dtype))
    return ad.Program(nodes, range(len(args)), [len(args)])


@pytest.mark.parametrize("case", LOWERED_CASES, ids=[case_id(c) for c in LOWERED_CASES])
def test_lowered_value_matches_ours(case):
    args = make_args(case)
    prog = _program(case, args)
    assert case.prim in prog.op_counts() or case_id(case) in OTHER_PRIMITIVE
    ours = prog(*args)
    theirs = jax.jit(ad.jax.lower(prog))(*args)
    assert np.asarray(theirs).dtype == np.asarray(ours).dtype
    _close(theirs, ours)


# Cases whose traced program holds another primitive than the case's (the trace simplifies it).
OTHER_PRIMITIVE = {"getitem-partition": "a slice of sort's result: the trace keeps the sort (np.partition)"}

# Where JAX's autodiff and ours take different conventions at a point where the derivative is a limit: the
# lowering is right (the values agree), JAX's VJP of it is not ours there. Each must really differ (strict).
JAX_CONVENTIONS = {
    "power-tensor_exponent_base_zero": "d(x**y)/dx at x = y = 0: JAX gives y·x**(y−1) = 0·inf = NaN, ours "
                                       "the limit 0 (x⁰ = 1 near x)",
    "svd-full-matrices-values": "JAX's svd has no derivative with full_matrices=True on a non-square matrix "
                                "(NotImplementedError); ours differentiates S as the thin SVD, as PyTorch",
}
GRAD_CASES = [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=JAX_CONVENTIONS[case_id(c)]))
              if case_id(c) in JAX_CONVENTIONS else c
              for c in LOWERED_CASES if closure(c, make_args(c))[1]]


@pytest.mark.parametrize("case", GRAD_CASES,
                         ids=[case_id(c.values[0] if hasattr(c, "values") else c) for c in GRAD_CASES])
def test_jax_vjp_of_lowered_matches_our_vjp(case):
    g, wrt_args = closure(case, make_args(case))
    prog = ad.trace(g, *wrt_args)
    lowered = ad.jax.lower(prog)
    ours_out, our_vjp = ad.vjp(g, *wrt_args)
    ct = np.random.default_rng(1).standard_normal(np.shape(ours_out))

    def value_and_cotangents(ct, *args):
        out, their_vjp = jax.vjp(lowered, *args)
        return out, their_vjp(ct.astype(out.dtype))
    # One compiled function per case: eager jax.vjp compiles each primitive's derivative apart (4x slower).
    out, theirs = jax.jit(value_and_cotangents)(ct, *wrt_args)
    _close(out, ours_out)
    for a, b in zip(theirs, our_vjp(ct)):
        _close(a, b)


def test_every_primitive_is_lowered_or_listed_with_a_reason():
    # Built-ins as registered at import time (a fresh interpreter: tests register custom primitives).
    names = set(subprocess.run([sys.executable, "-c", "import autograd_dag as ad; print(*ad.PRIMITIVES)"],
                               capture_output=True, text=True, check=True).stdout.split())
    assert len(names) > 100
    assert set(ad.jax.UNSUPPORTED) <= names and not set(ad.jax.UNSUPPORTED) & set(ad.jax.RULES)
    assert names - set(ad.jax.RULES) == set(ad.jax.UNSUPPORTED)
    assert all(len(reason) > 20 for reason in ad.jax.UNSUPPORTED.values())
    assert set(ad.jax.UNCHECKED) <= set(ad.jax.RULES)
    # Every rule is exercised by a case above, in the program lowered.
    exercised = set()
    for case in LOWERED_CASES:
        exercised |= set(_program(case, make_args(case)).op_counts())
    assert set(ad.jax.RULES) & names <= exercised


def test_missing_rules_are_all_named_at_once():
    x = np.ones((2, 3))
    prog = ad.trace(lambda x, s: ad.sum(ad.nn.functional.dropout(x, 0.5, seed=s) * ad.exp(x)), x, np.array(3))
    assert "dropout_mask" in prog.op_counts()
    saved = ad.jax.RULES.pop("exp")
    try:
        with pytest.raises(ad.jax.MissingLoweringError) as err:
            ad.jax.lower(prog)
    finally:
        ad.jax.RULES["exp"] = saved
    assert err.value.missing == ["dropout_mask", "exp"]
    assert "host callback" in str(err.value) and "exp (no JAX lowering rule)" in str(err.value)
    assert isinstance(err.value, ad.AutogradDagError)


def _mlp_loss(x, w1, b1, w2, y):
    h = ad.tanh(x @ w1 + b1)
    return ad.mean((h @ w2 - y) ** 2)


def _mlp_args(dtype=np.float64):
    rng = np.random.default_rng(0)
    return tuple(rng.standard_normal(s).astype(dtype) for s in ((5, 4), (4, 6), (6,), (6, 2), (5, 2)))


def test_gradient_program_lowered_equals_jax_grad_of_lowered_forward():
    args = _mlp_args()
    forward = ad.trace(_mlp_loss, *args)
    wrt = (1, 2, 3)
    gradient = ad.grad_program(forward, wrt)
    ours = gradient(*args)
    lowered_gradient = jax.jit(ad.jax.lower(gradient))(*args)
    jax_grad = jax.jit(jax.grad(ad.jax.lower(forward), argnums=wrt))(*args)
    for a, b, c in zip(ours, lowered_gradient, jax_grad):
        _close(b, a)   # our gradient program, run by XLA
        _close(c, a)   # JAX's autodiff of our forward program
    # Second order both ways: JAX differentiates our lowered gradient program.
    hess_ours_lowered = jax.jacfwd(lambda w2: ad.jax.lower(gradient)(*args[:3], w2, args[4])[2])(args[3])
    hess_jax = jax.hessian(lambda w2: ad.jax.lower(forward)(*args[:3], w2, args[4]))(args[3])
    _close(hess_ours_lowered, hess_jax)


def test_multiple_outputs_and_vmapped_programs_lower():
    x = np.random.default_rng(2).standard_normal((7, 3))
    prog = ad.trace(lambda x: (ad.exp(x), ad.sum(x, axis=1)), x)
    a, b = ad.jax.lower(prog)(x)
    _close(a, np.exp(x))
    _close(b, x.sum(1))
    w = np.random.default_rng(3).standard_normal((3, 4))
    batched = ad.trace(ad.vmap(lambda row, w: ad.softmax(row @ w), in_axes=(0, None)), x, w)
    _close(jax.jit(ad.jax.lower(batched))(x, w), batched(x, w))
    # and JAX's vmap of a lowered per-example program
    single = ad.trace(lambda row, w: ad.softmax(row @ w), x[0], w)
    _close(jax.vmap(ad.jax.lower(single), in_axes=(0, None))(x, w), batched(x, w))


def test_float32_runs_without_x64_and_float64_is_refused():
    prog64 = ad.trace(_mlp_loss, *_mlp_args())
    lowered64 = ad.jax.lower(prog64)   # while x64 is on
    jax.config.update("jax_enable_x64", False)
    with pytest.raises(ad.jax.JaxLoweringError, match="64-bit mode is off"):
        lowered64(*_mlp_args())   # switched off since: refused at the call, not computed in float32
    args32 = _mlp_args(np.float32)
    prog32 = ad.trace(_mlp_loss, *args32)
    out = jax.jit(ad.jax.lower(prog32))(*args32)
    assert out.dtype == np.float32
    # float32 both sides, other summation orders: a few ulps of the loss
    np.testing.assert_allclose(out, prog32(*args32), rtol=1e-5)
    with pytest.raises(ad.jax.JaxLoweringError, match="jax_enable_x64"):
        ad.jax.lower(prog64)


def test_wrong_argument_is_a_library_error():
    prog = ad.trace(lambda x: ad.exp(x), np.ones(3))
    with pytest.raises(ad.jax.JaxLoweringError, match=r"shape \(4,\); expected \(3,\)"):
        ad.jax.lower(prog)(np.ones(4))
    with pytest.raises(ad.jax.JaxLoweringError, match="takes 1 argument"):
        ad.jax.lower(prog)(np.ones(3), np.ones(3))
    with pytest.raises(ad.jax.JaxLoweringError, match="expected a Program"):
        ad.jax.lower(3)


def test_import_does_not_import_jax():
    code = "import sys, autograd_dag as ad; ad.jax.supported_primitives(); print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _models(dtype):
    """(name, model, inputs, targets) for the models of benchmarks/bench_models.py, at small sizes."""
    rng = np.random.default_rng(0)
    lm = ad.nn.TransformerLM(32, d_model=16, heads=4, hidden=32, layers=2, rng=0, dtype=dtype)
    tokens = rng.integers(0, 32, (3, 9))
    return [
        ("mlp", ad.nn.MLP([12, 16, 16, 5], activation="relu", rng=0, dtype=dtype),
         rng.standard_normal((8, 12)).astype(dtype), rng.integers(0, 5, 8)),
        ("lenet", ad.nn.LeNet(1, image_size=12, channels=(3, 4), kernel_sizes=(3, 3), hidden=10, rng=0,
                              dtype=dtype),
         rng.standard_normal((4, 1, 12, 12)).astype(dtype), rng.integers(0, 10, 4)),
        ("transformer", Logits(lm), tokens[:, :-1], tokens[:, 1:]),
    ]


def _training_step(model):
    """Our jit-traced training step (value_and_grad of the loss w.r.t. the parameters) and its one program."""
    def loss(params, x, y):
        return ad.nn.functional.cross_entropy(ad.nn.functional_call(model, params, x), y)
    return ad.jit(ad.value_and_grad(loss))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("which", ["mlp", "lenet", "transformer"])
def test_training_step_of_each_model_lowers(which, dtype):
    from autograd_dag.tree import flatten
    name, model, x, y = next(m for m in _models(dtype) if m[0] == which)
    params = {k: p.value for k, p in model.named_parameters()}
    step = _training_step(model)
    loss, grads = step(params, x, y)
    ((program, _),) = step.programs.values()
    leaves, _ = flatten((params, x, y))
    if dtype == np.float32:
        jax.config.update("jax_enable_x64", False)  # as a float32 user runs JAX
    outs = jax.jit(ad.jax.lower(program))(*leaves)
    ours = flatten((loss, grads))[0]
    assert len(outs) == len(ours)
    for a, b in zip(outs, ours):
        assert a.dtype == b.dtype
        if dtype == np.float64:
            _close(a, b)
        else:
            # float32 both sides, other summation orders through a whole backward pass: relative to the
            # largest entry of each gradient, a few hundred ulps
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(b).max())


def test_jax_grad_of_lowered_transformer_loss_equals_our_training_step():
    from autograd_dag.tree import flatten
    _, model, x, y = _models(np.float64)[2]
    params = {k: p.value for k, p in model.named_parameters()}
    step = _training_step(model)
    loss, grads = step(params, x, y)
    forward = ad.trace(lambda *p: ad.nn.functional.cross_entropy(
        ad.nn.functional_call(model, dict(zip(params, p)), x), y), *params.values())
    theirs = jax.jit(jax.value_and_grad(ad.jax.lower(forward), argnums=tuple(range(len(params)))))(
        *params.values())
    _close(theirs[0], loss)
    for a, b in zip(theirs[1], flatten(grads)[0]):
        _close(a, b)


def test_a_function_lowers_with_its_nested_arguments_and_results():
    _, model, x, y = _models(np.float64)[2]
    params = {k: p.value for k, p in model.named_parameters()}
    step = _training_step(model)
    lowered = jax.jit(ad.jax.lower(step, params, x, y))
    loss, grads = lowered(params, x, y)
    our_loss, our_grads = step(params, x, y)
    _close(loss, our_loss)
    assert sorted(grads) == sorted(our_grads)  # (jax.jit returns dicts with their keys sorted)
    for k in grads:
        _close(grads[k], our_grads[k])
    # a plain function is traced as ad.jit traces it
    f = ad.jax.lower(lambda p, x: {"y": ad.tanh(x @ p[0]), "n": ad.sum(p[1])}, [np.ones((3, 2)), np.ones(4)],
                     np.ones((5, 3)))
    out = f([np.full((3, 2), 0.5), np.arange(4.0)], np.ones((5, 3)))
    assert sorted(out) == ["n", "y"]
    _close(out["y"], np.tanh(np.full((5, 2), 1.5)))
    _close(out["n"], 6.0)
    with pytest.raises(ad.AutogradDagError, match="differ in structure at"):
        f([np.ones((3, 2))], np.ones((5, 3)))
    with pytest.raises(ad.jax.JaxLoweringError, match="needs example arguments"):
        ad.jax.lower(lambda x: x)
