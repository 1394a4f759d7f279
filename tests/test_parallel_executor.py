"""Inter-op parallelism (autograd_dag.scheduling): a program run with independent nodes on the pool.

Every comparison is ``==``: the parallel executor makes the serial loop's
numpy calls on the same operands, only on another thread. Hand-offs are
forced (``inter_op(True, min_cost=0)``: every node with independent work after
it) on 2 or 4 threads, and workers are slowed down (each handed-off node starts
late) so that the calling thread runs as far ahead as it can: a value freed, or
an operand written into, while a pending node still reads it would show.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import autograd_dag as ad
from autograd_dag import execution, nn, scheduling
from autograd_dag.testing import strategies as ads
from autograd_dag.testing.strategies import X_SHAPE, Y_SHAPE
from autograd_dag.nn import Logits
from tests.helpers import assert_identical

FEW = settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def slow_workers(monkeypatch):
    """Each handed-off node starts 2 ms late (the caller meanwhile runs every step it can)."""
    run = scheduling._Pending.run

    def late(self):
        time.sleep(0.002)
        run(self)
    monkeypatch.setattr(scheduling._Pending, "run", late)


def program_of(jitted):
    (program, _), = jitted.programs.values()
    return program


def both_ways(jitted, *args, threads=2):
    """(serial results, parallel results, the parallel schedule) of ``jitted`` on ``args``."""
    with ad.num_threads(threads):
        with scheduling.inter_op(False):
            serial = jitted(*args)
        with scheduling.inter_op(True, min_cost=0):
            par = jitted(*args)
    return serial, par, program_of(jitted)._inter_op_schedule


# ----------------------------------------------------------- random programs

@FEW
@given(recipe=ads.recipes(min_size=3, max_size=10), seed=st.integers(0, 2**16), threads=st.sampled_from([2, 4]))
def test_random_programs_and_their_gradients_give_the_serial_results(recipe, seed, threads):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1.5, 1.5, X_SHAPE), rng.uniform(-1.5, 1.5, Y_SHAPE)
    plan = recipe.resolved(x, y)
    step = ad.jit(ad.value_and_grad(lambda x, y: ad.sum(plan(x, y)), argnums=(0, 1)))
    serial, par, schedule = both_ways(step, x, y, threads=threads)
    assume(schedule is not None and schedule.handed_off)   # (most draws hand some node off)
    assert_identical(serial, par)


def large_program(seed: int, n_ops: int = 14):
    """A function of x, y (96, 128) of elementwise ops, reshapes and transposes (views) over random
    earlier values: operands large enough (96 KiB) to be written into when they die."""
    rng = np.random.default_rng(seed)
    choices = rng.integers(0, 7, n_ops)
    picks = rng.integers(0, 1 << 30, (n_ops, 2))

    def f(x, y):
        vals = [x, y]
        for c, (i, j) in zip(choices, picks):
            a, b = vals[i % len(vals)], vals[-1 - j % min(len(vals), 4)]
            if c == 0:
                v = a + b
            elif c == 1:
                v = a * b
            elif c == 2:
                v = ad.tanh(a)
            elif c == 3:
                v = ad.exp(-a * a)
            elif c == 4:
                v = ad.reshape(ad.transpose(a), (96, 128)) * 0.5   # a view's base dying under it
            elif c == 5:
                v = ad.reshape(a, (128, 96)).T + b                 # views of views
            else:
                v = ad.sin(a) - b
            vals.append(v)
        return ad.sum(vals[-1] * vals[-2]) + ad.sum(ad.tanh(vals[len(vals) // 2]))
    return f


@pytest.mark.parametrize("seed", range(12))
def test_in_place_writes_and_frees_stay_correct_with_workers_lagging(seed, slow_workers):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((96, 128)), rng.standard_normal((96, 128))
    step = ad.jit(ad.value_and_grad(large_program(seed), argnums=(0, 1)))
    serial, par, schedule = both_ways(step, x, y, threads=2 + 2 * (seed % 2))
    assert schedule.handed_off
    assert any(s[5] is not None for s, _, _ in schedule.entries)   # the plan writes into operands
    assert_identical(serial, par)


# --------------------------------------------- a pending node's operand, not overwritten

def reads_then_dies(x):
    a = ad.exp(x * 0.5)
    b = ad.tanh(a)          # handed off: reads a
    v = ad.reshape(a, (128, 96))
    c = ad.sin(v) * 2.0     # independent of b
    d = a * 3.0             # a's last use: written into a if a were the list's alone
    return b, c, d


def reference(x):
    a = np.exp(x * 0.5)
    return np.tanh(a), np.sin(a.reshape(128, 96)) * 2.0, a * 3.0


def test_an_operand_a_pending_node_reads_is_not_written_into(slow_workers):
    x = np.random.default_rng(0).standard_normal((96, 128))
    f = ad.jit(reads_then_dies)
    serial, par, schedule = both_ways(f, x)
    program = program_of(f)
    tanh = next(i for i, (s, _, _) in enumerate(schedule.entries) if program.nodes[s[0]].prim.name == "tanh")
    assert tanh in schedule.handed_off
    assert any(s[5] is not None for s, _, _ in schedule.entries)   # the last multiply may write into a
    assert_identical(serial, par)
    assert_identical(par, reference(x))


def test_the_in_place_test_fails_when_disposable_ignores_pending_nodes(slow_workers, monkeypatch):
    """The test above can fail: with a check that sees only the list, the multiply overwrites a under tanh."""
    def list_only(values, k):
        v = values[k]
        return type(v) is np.ndarray and v.base is None and v.flags.writeable and v.flags.c_contiguous
    monkeypatch.setattr(scheduling, "disposable", list_only)
    x = np.random.default_rng(0).standard_normal((96, 128))
    f = ad.jit(reads_then_dies)
    with ad.num_threads(2), scheduling.inter_op(True, min_cost=0):
        f(x)
        b, _, _ = f(x)
    assert not np.array_equal(b, np.tanh(np.exp(x * 0.5)))


# --------------------------------------------------------------- a transformer step

def test_a_transformer_steps_gradients_equal_the_serial_ones(slow_workers):
    # bench_models' step, smaller: Q/K/V products, attention heads, weight and data gradients.
    model = Logits(nn.TransformerLM(40, d_model=64, heads=4, hidden=128, layers=2, rng=0))
    tokens = np.random.default_rng(1).integers(0, 40, (8, 33))
    params = {k: p.value for k, p in model.named_parameters()}

    def loss(params, tokens, targets):
        return nn.functional.cross_entropy(nn.functional_call(model, params, tokens), targets)
    step = ad.jit(ad.value_and_grad(loss))
    for threads in (2, 4):
        serial, par, schedule = both_ways(step, params, tokens[:, :-1], tokens[:, 1:], threads=threads)
        assert len(schedule.handed_off) >= 10
        assert any(s[5] is not None for s, _, _ in schedule.entries)
        assert_identical(serial, par)


# ---------------------------------------------------------------------- errors

def _fragile(x, *, limit):
    if x.max() > limit:
        raise ValueError(f"a value above {limit}")
    return x * 1.0


fragile = ad.primitive("fragile_inter_op", _fragile, vjp=lambda ct, out, x, limit: (ct,), replace=True)


def two_fragile_nodes(x, y):
    a = x * 1.0
    b = fragile(a, limit=1.0)         # handed off
    c = ad.exp(a) * y                 # a's last use: freed while b is pending
    d = fragile(c, limit=10.0)        # inline
    return b + ad.tanh(d)


def raised(f, *args, threads, parallel):
    with ad.num_threads(threads), scheduling.inter_op(parallel, min_cost=0):
        with pytest.raises(Exception) as info:
            f(*args)
    return info


@pytest.mark.parametrize("threads", [2, 4])
@pytest.mark.parametrize("scale, y, fails", [(2.0, 1.0, 0), (2.0, 10.0, 0), (1.0, 10.0, 1)],
                         ids=["handed-off", "both: the first reported", "inline"])
def test_a_failing_node_is_reported_as_the_serial_loop_reports_it(scale, y, fails, threads, slow_workers):
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    g = ad.jit(two_fragile_nodes)
    with ad.num_threads(threads), scheduling.inter_op(True, min_cost=0):
        g(x, 1.0)   # traced on values that pass
    program = program_of(g)
    schedule = program._inter_op_schedule
    fragile_at = [i for i, (s, _, _) in enumerate(schedule.entries)
                  if program.nodes[s[0]].prim.name == "fragile_inter_op"]
    assert fragile_at[0] in schedule.handed_off and fragile_at[1] not in schedule.handed_off
    serial = raised(g, x * scale, y, threads=threads, parallel=False)
    par = raised(g, x * scale, y, threads=threads, parallel=True)
    assert type(par.value) is type(serial.value) and isinstance(par.value, ad.AutogradDagError)
    assert str(par.value) == str(serial.value)
    node = program.nodes[schedule.entries[fragile_at[fails]][0][0]]
    assert f"node %{node.index}: fragile_inter_op(float64[3, 4]" in str(par.value)   # its operand's shape
    assert "test_parallel_executor.py" in str(par.value)                              # the user's line


def test_errstate_reaches_handed_off_nodes(slow_workers):
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    x[1, 1] = 0.0

    def f(x):
        a = x * 1.0
        b = 1.0 / a          # handed off: divides by zero
        c = ad.tanh(a) * 2.0
        return b + c
    g = ad.jit(f)
    with ad.num_threads(2), scheduling.inter_op(True, min_cost=0), np.errstate(divide="ignore"):
        assert np.isinf(g(x)[1, 1])
        assert program_of(g)._inter_op_schedule.handed_off
    for parallel in (False, True):
        with ad.num_threads(2), scheduling.inter_op(parallel, min_cost=0), np.errstate(divide="raise"):
            with pytest.raises(FloatingPointError):
                g(x)


# ------------------------------------------------------------------ the switch

def test_one_thread_or_off_runs_the_serial_loop_and_auto_follows_the_setting(monkeypatch):
    f = ad.jit(lambda x: ad.sum(ad.tanh(x)) + ad.sum(ad.exp(x)))
    x = np.ones((4, 4))
    f(x)
    program = program_of(f)
    steps = program._plan()[1]
    for threads, mode in ((1, True), (2, False)):
        with ad.num_threads(threads), scheduling.inter_op(mode, min_cost=0):
            assert scheduling.schedule_for(program, steps) is None
    with ad.num_threads(2), scheduling.inter_op(True, min_cost=0):
        assert scheduling.schedule_for(program, steps) is not None
    for auto in (True, False):
        monkeypatch.setattr(scheduling, "AUTO", auto)
        with ad.num_threads(2), scheduling.inter_op(None, min_cost=0):
            assert (scheduling.schedule_for(program, steps) is not None) == auto


def test_the_default_cost_hands_off_only_heavy_nodes_beside_heavy_work():
    small, large = np.ones((8, 8)), np.ones((64, 96, 96))   # a stack of products BLAS does not split
    with ad.num_threads(2), scheduling.inter_op(True):
        f = ad.jit(lambda a, b: ad.sum(a @ a) + ad.sum(b @ b))
        f(small, small)
        assert scheduling.schedule_for(program_of(f), program_of(f)._plan()[1]) is None

        def two_products(a, b):
            p, q = a @ a, b @ b      # the first handed off, the second beside it
            return ad.sum(p) + ad.sum(q)
        g = ad.jit(two_products)
        np.testing.assert_array_equal(g(large, large), np.sum(large @ large) * 2)
        schedule = program_of(g)._inter_op_schedule
        names = [program_of(g).nodes[schedule.entries[i][0][0]].prim.name for i in schedule.handed_off]
        assert names[0] == "matmul" and set(names) <= {"matmul", "sum"}
