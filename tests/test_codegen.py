"""The generated executor (autograd_dag.codegen) against the loop it replaces from a program's second call.

Results are compared with ``==``: the generated code makes the loop's numpy
calls, on the same operands with the same parameters, in the same order, each
value freed at the same step, in the same process and thread setting; any
difference is a bug, not rounding. Each comparison also checks that the code
did run (``program._generated.function``).
"""

from __future__ import annotations

import importlib.util
import pathlib
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autograd_dag as ad
from autograd_dag import codegen, execution, scheduling
from autograd_dag.testing import strategies as ads
from autograd_dag.testing.strategies import X_SHAPE, Y_SHAPE
from tests.helpers import assert_identical

FEW = settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
BIG = (200, 100)   # 160 kB of float64: above execution.MIN_BYTES, so results may be written into operands


def program_of(jitted):
    (program, _), = jitted.programs.values()
    return program


def loop_and_generated(f, *args):
    """``f(*args)`` run by the loop, then by the generated code (``f``: a Program or a traced jit function)."""
    program = f if isinstance(f, ad.Program) else program_of(f)
    program._generated = None   # (compiled before: compiled again)
    before = codegen.FROM_CALL
    try:
        codegen.FROM_CALL = 10 ** 9
        loop = f(*args)
        assert program._generated.function is None
        codegen.FROM_CALL = 1
        generated = f(*args)
        assert program._generated.function is not None, "the generated code did not run"
    finally:
        codegen.FROM_CALL = before
    return loop, generated


# ------------------------------------------------------------- same results

@FEW
@given(recipe=ads.recipes(min_size=3, max_size=12), seed=st.integers(0, 2**16), threads=st.sampled_from([1, 2]))
def test_random_programs_and_their_gradients_give_the_loops_results(recipe, seed, threads):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1.5, 1.5, X_SHAPE), rng.uniform(-1.5, 1.5, Y_SHAPE)
    plan = recipe.resolved(x, y)
    step = ad.jit(ad.value_and_grad(lambda x, y: ad.sum(plan(x, y)), argnums=(0, 1)))
    # (On 2 threads every node of 2 or more elements is split: the split forms run in the code too.)
    with ad.num_threads(threads), scheduling.inter_op(False), ad.parallel.grains(cheap=1, transcendental=1,
                                                                                reduction=1):
        step(x, y)   # traces
        assert_identical(*loop_and_generated(step, x, y))


@pytest.mark.parametrize("name", ["mlp", "transformer", "lenet"])
@pytest.mark.parametrize("threads", [1, 2])
def test_model_training_steps_give_the_loops_results(name, threads):
    # bench_models' steps (loss and every weight's gradient); on 2 threads large nodes are split.
    spec = importlib.util.spec_from_file_location(
        "bench_models", pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "bench_models.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    step, args = bench.WORKLOADS[name](np.float32 if threads == 2 else np.float64).jit_step()
    with ad.num_threads(threads), scheduling.inter_op(False), ad.parallel.grains(cheap=4096, transcendental=4096,
                                                                                reduction=4096):
        step(*args)
        loop, generated = loop_and_generated(step, *args)
    assert_identical(loop, generated)
    written = [s for s in program_of(step)._plan()[1] if s[5] is not None]
    assert written or name == "lenet"   # (the in-place choice is exercised on the way)


def test_the_plan_is_compiled_again_when_the_thread_setting_remakes_it():
    x = np.random.default_rng(0).standard_normal((64, 64))
    step = ad.jit(ad.grad(lambda x: ad.sum(ad.tanh(x * 2.0) * x)))
    with ad.num_threads(1), ad.parallel.grains(cheap=256, transcendental=256, reduction=256):
        step(x), step(x)
        program = program_of(step)
        first = program._generated
        assert first.function is not None
    with ad.num_threads(2), scheduling.inter_op(False), ad.parallel.grains(cheap=256, transcendental=256,
                                                                           reduction=256):
        step(x)
        assert program._generated.steps is program._plan()[1] is not first.steps
        loop, generated = loop_and_generated(step, x)
        assert any(s[1] is not f[1] for s, f in zip(program._plan()[1], first.steps))   # split there
    assert_identical(loop, generated)


# ------------------------------------------------------------ in-place writes

def _probe(x, *, keep):
    out = x if keep == "same" else x * 1.0
    _probe.data.append(out.__array_interface__["data"][0])
    return out


_probe.data = []
probe = ad.primitive("codegen_probe", _probe, vjp=lambda ct, out, x, keep: (ct,), replace=True)


@pytest.mark.parametrize("from_call", [10 ** 9, 1], ids=["loop", "generated"])
def test_a_dying_intermediate_is_written_into(from_call, monkeypatch):
    monkeypatch.setattr(codegen, "FROM_CALL", from_call)
    x = np.random.default_rng(0).standard_normal(BIG)
    prog = ad.trace(lambda x: ad.exp(probe(x, keep="copy")), x)   # the probe's result dies at exp
    assert prog._plan()[1][-1][5] is not None
    for _ in range(2):
        _probe.data.clear()
        out = prog(x)
        assert out.__array_interface__["data"][0] == _probe.data[-1]   # exp wrote over the probe's result
        np.testing.assert_array_equal(out, np.exp(x))
    assert (prog._generated.function is not None) == (from_call == 1)


def test_an_array_the_caller_holds_is_never_written_into():
    # The probe returns its operand itself: the dying "intermediate" is the caller's input.
    x = np.random.default_rng(0).standard_normal(BIG)
    kept = x.copy()
    prog = ad.trace(lambda x: ad.exp(probe(x, keep="same")) * 1.0, x)
    assert any(s[5] is not None for s in prog._plan()[1])
    loop, generated = loop_and_generated(prog, x)
    np.testing.assert_array_equal(x, kept)
    assert_identical(loop, generated)
    np.testing.assert_array_equal(generated, np.exp(kept))


def test_a_constant_is_never_written_into():
    c = np.random.default_rng(1).standard_normal(BIG)
    kept = c.copy()
    prog = ad.trace(lambda x: ad.exp(probe(ad.Tensor(c), keep="same")) + x, np.zeros(BIG))
    assert any(s[5] is not None for s in prog._plan()[1]) and any(str(n.op) == "constant" for n in prog.nodes)
    for _ in range(3):
        loop, generated = loop_and_generated(prog, np.zeros(BIG))
        np.testing.assert_array_equal(c, kept)
        assert_identical(loop, generated)


def test_an_array_with_a_live_view_is_never_written_into():
    x = np.random.default_rng(2).standard_normal(BIG)

    def f(x):
        a = probe(x, keep="copy")
        v = ad.transpose(a)            # a view of a, returned
        return v, ad.exp(a)            # a dies at exp, but v still shows it
    prog = ad.trace(f, x)
    assert any(s[5] is not None for s in prog._plan()[1])
    loop, generated = loop_and_generated(prog, x)
    np.testing.assert_array_equal(generated[0], x.T)
    assert not np.shares_memory(generated[0], generated[1])
    assert_identical(loop, generated)


def test_the_generated_test_counts_a_locals_references_as_the_loop_counts_the_lists():
    # codegen.disposable on a local: 3 references (the local, its parameter, getrefcount's argument).
    def caller():
        a = np.ones(4)
        alone = codegen.disposable(a)
        b = a
        shared = codegen.disposable(a)
        del b
        view = a[:2]
        seen = codegen.disposable(a)
        del view
        return alone, shared, seen, codegen.disposable(a), codegen.disposable(np.ones(4)[::2])
    assert caller() == (True, False, False, True, False)
    values = [np.ones(4)]
    assert execution.disposable(values, 0)


# -------------------------------------------------------------------- errors

def _fragile(x, *, limit):
    if x.max() > limit:
        raise ValueError(f"a value above {limit}")
    return x * 1.0


fragile = ad.primitive("codegen_fragile", _fragile, vjp=lambda ct, out, x, limit: (ct,), replace=True)


def two_fragile_nodes(x, y):
    a = x * 1.0
    b = fragile(a, limit=1.0)
    c = ad.exp(a) * y                 # a's last use
    d = fragile(c, limit=10.0)
    return b + ad.tanh(d)


def raised_both_ways(f, *args):
    """The errors ``f(*args)`` raises in the loop and in the generated code."""
    errors = []
    for from_call in (10 ** 9, 1):
        before, codegen.FROM_CALL = codegen.FROM_CALL, from_call
        try:
            with pytest.raises(BaseException) as info:
                f(*args)
        finally:
            codegen.FROM_CALL = before
        errors.append(info.value)
    return errors


@pytest.mark.parametrize("scale, y, node", [(2.0, 1.0, 0), (1.0, 10.0, 1)], ids=["first", "second"])
def test_a_failing_step_raises_what_the_loop_raises(scale, y, node):
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    g = ad.jit(two_fragile_nodes)
    g(x, 1.0)   # traced on values that pass
    loop, generated = raised_both_ways(g, x * scale, y)
    assert program_of(g)._generated.function is not None
    assert type(generated) is type(loop) and isinstance(loop, ad.AutogradDagError)
    assert str(generated) == str(loop)
    program = program_of(g)
    k = [n.index for n in program.nodes if n.op == "codegen_fragile"][node]
    assert f"node %{k}: codegen_fragile(float64[3, 4]" in str(generated)   # its operand's shape
    assert "test_codegen.py" in str(generated)                               # the user's line
    assert generated.__suppress_context__


def test_a_failing_in_place_step_and_an_operation_error_are_reported_alike():
    a = np.random.default_rng(3).standard_normal((3, 3))
    a[:, 0] = 0.0   # singular
    prog = ad.trace(lambda a: ad.exp(ad.linalg.inv(a * 2.0)) + a, np.eye(3))
    loop, generated = raised_both_ways(prog, a)
    assert type(generated) is type(loop) and str(generated) == str(loop)
    assert "inv" in str(generated)


@pytest.mark.parametrize("how", ["errstate", "warnings"])
def test_floating_point_errors_and_warnings_pass_untouched(how):
    x = np.array([1.0, 0.0, 2.0])
    prog = ad.trace(lambda x: ad.tanh(1.0 / (x * 1.0)), np.ones(3))
    with np.errstate(divide="raise" if how == "errstate" else "warn"), warnings.catch_warnings():
        warnings.simplefilter("error")
        loop, generated = raised_both_ways(prog, x)
    assert type(loop) is type(generated) is (FloatingPointError if how == "errstate" else RuntimeWarning)
    assert str(loop) == str(generated)


# ------------------------------------------------------------ when it is not compiled

def test_a_program_run_once_is_never_compiled_and_a_long_one_never(monkeypatch):
    prog = ad.trace(lambda x: ad.tanh(ad.exp(x) * 2.0), np.zeros(3))
    prog(np.ones(3))
    assert prog._generated.function is None       # the first call ran the loop
    prog(np.ones(3))
    assert prog._generated.function is not None   # the second compiled
    monkeypatch.setattr(codegen, "MAX_STEPS", 2)
    long = ad.trace(lambda x: ad.tanh(ad.exp(x) * 2.0), np.zeros(3))
    results = [long(np.ones(3)) for _ in range(3)]
    assert long._generated.function is None
    np.testing.assert_array_equal(results[0], results[2])


def test_programs_run_with_inter_op_scheduling_keep_their_path():
    x = np.random.default_rng(4).standard_normal((3, 4))
    g = ad.jit(lambda x: ad.sum(ad.tanh(x)) * ad.sum(ad.exp(x)))
    with ad.num_threads(2), scheduling.inter_op(True, min_cost=0):
        results = [g(x) for _ in range(3)]
        program = program_of(g)
        assert program._inter_op_schedule.handed_off
    assert program._generated is None
    assert_identical(results[0], results[2])


@pytest.mark.parametrize("name", ["i0", "def", "a-b c", "disposable", "v3", ""])
def test_any_program_name_compiles(name):
    prog = ad.trace(lambda x: ad.exp(x) * 2.0, np.zeros(3), name=name)
    assert_identical(*loop_and_generated(prog, np.ones(3)))


def test_the_source_shows_a_step_per_line_with_its_frees():
    prog = ad.trace(lambda x, y: (ad.exp(x) * y, ad.tanh(y)), np.zeros(3), np.zeros(3))
    lines = codegen.source(prog).splitlines()
    assert lines[0] == "def f(v0, v1):"
    assert len(lines) == 2 + len(prog._plan()[1])
    assert lines[-1].startswith("    return (") and "del v0" in lines[1]
