"""The thread pool, the threads setting, and large operations split over it (parallel.py, splitting.py).

Every test that splits runs with more than one thread forced and grains
shrunk (``parallel.grains``), and checks that a split really happened, so
none passes by running whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import autograd_dag as ad
from autograd_dag import parallel, splitting
from autograd_dag.errors import AutogradDagError

TINY = dict(cheap=64, transcendental=64, reduction=64)


def blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


@pytest.fixture
def chunks(monkeypatch):
    """The chunks each split call of splitting.py ran, as lists of (start, stop, thread name)."""
    calls: list[list] = []

    def spy(fn, n, **kw):
        seen: list = []
        calls.append(seen)

        def recorded(a, b):
            seen.append((a, b, threading.current_thread().name))
            return fn(a, b)
        return parallel.run_chunks(recorded, n, **kw)
    monkeypatch.setattr(splitting, "run_chunks", spy)
    return calls


# ------------------------------------------------------------------ the setting


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_set_num_threads_refuses_what_is_not_a_positive_whole_number(bad):
    before = ad.get_num_threads()
    with pytest.raises(AutogradDagError, match="positive whole number"):
        ad.set_num_threads(bad)
    assert ad.get_num_threads() == before


def test_num_threads_sets_blas_threads_and_restores_both_even_after_an_error():
    before = ad.get_num_threads()
    with pytest.raises(ZeroDivisionError):
        with ad.num_threads(1):
            assert ad.get_num_threads() == 1 and blas_threads() == {1}
            1 / 0
    assert ad.get_num_threads() == before
    with ad.num_threads(3):
        assert ad.get_num_threads() == 3 and blas_threads() == {3}
    assert ad.get_num_threads() == before and blas_threads() == {before}


@pytest.mark.parametrize("env, expected", [
    ({"AUTOGRAD_DAG_NUM_THREADS": "3"}, "3"),
    ({"OMP_NUM_THREADS": "5,2"}, "5"),
    ({"AUTOGRAD_DAG_NUM_THREADS": "4", "OMP_NUM_THREADS": "1"}, "4"),   # ours first
    ({"AUTOGRAD_DAG_NUM_THREADS": "two"}, "AUTOGRAD_DAG_NUM_THREADS='two': expected a positive whole number"),
])
def test_the_default_comes_from_the_environment(env, expected):
    clean = {k: v for k, v in os.environ.items() if k not in ("AUTOGRAD_DAG_NUM_THREADS", "OMP_NUM_THREADS")}
    proc = subprocess.run([sys.executable, "-c", "import autograd_dag as ad; print(ad.get_num_threads())"],
                          env={**clean, **env}, capture_output=True, text=True)
    assert expected in proc.stdout + proc.stderr


def test_set_num_threads_none_restores_the_default():
    with ad.num_threads(1):
        ad.set_num_threads(None)
        assert ad.get_num_threads() == parallel._default_threads()


def test_grains_refuses_an_unknown_kind_and_restores():
    before = dict(parallel.GRAINS)
    with pytest.raises(AutogradDagError, match="kinds of work"):
        with parallel.grains(cheep=1):
            pass
    with parallel.grains(cheap=5):
        assert parallel.GRAINS["cheap"] == 5
    assert parallel.GRAINS == before


# ------------------------------------------------------------------ run_chunks


@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("n", [128, 1000, 4096, 100_003])
def test_run_chunks_covers_the_range_once_in_aligned_chunks(threads, n):
    seen = []
    with ad.num_threads(threads):
        parallel.run_chunks(lambda a, b: seen.append((a, b)), n, grain=64)
    seen.sort()
    assert seen[0][0] == 0 and seen[-1][1] == n
    assert all(b == c for (_, b), (c, _) in zip(seen, seen[1:]))      # disjoint and contiguous
    assert all(a % parallel.ALIGN == 0 and b > a for a, b in seen)
    assert len(seen) == min(threads, n // 64)


def test_below_twice_the_grain_or_on_one_thread_the_call_runs_whole():
    seen = []
    with ad.num_threads(2):
        parallel.run_chunks(lambda a, b: seen.append((a, b)), 1000, grain=501)
    with ad.num_threads(1):
        parallel.run_chunks(lambda a, b: seen.append((a, b)), 1000, grain=1)
    assert seen == [(0, 1000), (0, 1000)]


def test_every_chunk_finishes_before_run_chunks_returns_and_an_error_is_raised_after_them():
    finished = []

    def fn(a, b):
        if a:   # not the caller's first chunk: raised on whichever thread runs it
            raise ValueError(f"chunk {a}")
        threading.Event().wait(0.05)
        finished.append(a)
    with ad.num_threads(2), pytest.raises(ValueError, match="chunk 512"):
        parallel.run_chunks(fn, 1024, grain=64)
    assert finished == [0]


def test_chunks_run_on_the_pools_threads_and_a_nested_call_there_runs_whole():
    inner, names = [], set()
    gate = threading.Barrier(2, timeout=10)   # both chunks at once: one is on a worker

    def outer(a, b):
        names.add(threading.current_thread().name)
        gate.wait()
        parallel.run_chunks(lambda c, d: inner.append((threading.current_thread().name, c, d)), 4096, grain=64)
    with ad.num_threads(2):
        parallel.run_chunks(outer, 4096, grain=64)
    assert len(names) == 2
    on_worker = [(c, d) for name, c, d in inner if name.startswith("autograd_dag-")]
    assert on_worker == [(0, 4096)]


def test_a_change_of_threads_resizes_the_pool():
    with ad.num_threads(4):
        parallel.run_chunks(lambda a, b: None, 4096, grain=64)
        assert parallel._pool.size == 3
    with ad.num_threads(2):
        parallel.run_chunks(lambda a, b: None, 4096, grain=64)
        assert parallel._pool.size == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_makes_its_own_pool():
    # In a fresh interpreter: forking this one (which may hold JAX's threads) could deadlock the child.
    code = """if True:
        import os, threading, autograd_dag as ad
        from autograd_dag import parallel

        def both_threads():
            names = set()
            gate = threading.Barrier(2, timeout=10)   # both chunks at once: one is on a worker

            def fn(a, b):
                names.add(threading.current_thread().name)
                gate.wait()
            parallel.run_chunks(fn, 4096, grain=64)
            return len(names) == 2

        with ad.num_threads(2):
            assert both_threads()          # the parent's pool exists
            pid = os.fork()
            if pid == 0:                   # its workers do not exist here: a new pool runs the chunks
                os._exit(0 if both_threads() and parallel._pool.pid == os.getpid() else 3)
            _, status = os.waitpid(pid, 0)
            print(os.waitstatus_to_exitcode(status))"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "0", proc.stderr


# ------------------------------------------------------------------ split operations


def _operands(case, dtype):
    rng = np.random.default_rng(1)
    x = rng.uniform(0.1, 3.0, (37, 515)).astype(dtype)
    return {
        "contiguous": (x, rng.uniform(0.1, 3.0, x.shape).astype(dtype)),
        "row broadcast": (x, rng.uniform(0.1, 3.0, 515).astype(dtype)),
        "column broadcast": (x, rng.uniform(0.1, 3.0, (37, 1)).astype(dtype)),
        "transposed": (np.asfortranarray(x), x[::-1]),
        "scalar": (x, dtype(1.5)),
    }[case]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", ["contiguous", "row broadcast", "column broadcast", "transposed", "scalar"])
@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.maximum, np.true_divide, np.power, np.arctan2])
def test_a_split_binary_ufunc_is_the_unsplit_one_bit_for_bit(ufunc, case, dtype, chunks):
    x, y = _operands(case, dtype)
    expected = ufunc(x, y)
    split = splitting.split_ufunc(ufunc, expected.shape, expected.dtype)
    with ad.num_threads(3), parallel.grains(**TINY):
        got = split(x, y)
    assert len(chunks[-1]) == 3
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.parametrize("ufunc", [np.exp, np.log, np.tanh, np.sin, np.sqrt, np.negative, np.expm1])
def test_a_split_unary_ufunc_is_the_unsplit_one_bit_for_bit_also_in_place(ufunc, chunks):
    x = np.random.default_rng(2).uniform(0.1, 3.0, 100_001)
    expected = ufunc(x)
    split = splitting.split_ufunc(ufunc, x.shape, x.dtype)
    with ad.num_threads(2), parallel.grains(**TINY):
        assert np.array_equal(split(x), expected)
        y = x.copy()
        assert split(y, out=y) is y and np.array_equal(y, expected)
    assert len(chunks) == 2 and all(len(c) == 2 for c in chunks)


@pytest.mark.parametrize("name, impl", [
    ("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min)])
@pytest.mark.parametrize("axis", [(1,), (2,), (1, 2), (0,), (0, 2), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_a_split_reduction_keeping_the_leading_axis_is_exact_else_within_rounding(name, impl, axis, keepdims,
                                                                                 chunks):
    x = np.random.default_rng(3).uniform(-1.0, 2.0, (301, 7, 13))
    expected = impl(x, axis=axis, keepdims=keepdims)
    split = splitting.split_reduction(name, lambda v, **kw: impl(v, **kw), x.shape, expected.shape, x.dtype)
    with ad.num_threads(4), parallel.grains(**TINY):
        got = split(x, axis=axis, keepdims=keepdims)
        again = split(x, axis=axis, keepdims=keepdims)
    assert len(chunks[-1]) == 4
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert np.array_equal(got, again)    # the same chunks combined in the same order on every call
    if 0 not in axis or name in ("max", "min"):
        assert np.array_equal(got, expected)
    else:
        # Partial sums of chunks of rows combined in order: another summation order than numpy's
        # pairwise one, so equal within a few ulps of the sum of magnitudes (here ~2,000 terms of ~1).
        assert np.allclose(got, expected, rtol=1e-13, atol=1e-12)


def _steps_named(program, prefix):
    _, steps = program._plan()
    return [getattr(s[1], "__name__", "") for s in steps if getattr(s[1], "__name__", "").startswith(prefix)]


def test_jit_splits_large_elementwise_steps_and_reductions_and_replans_when_threads_change(chunks):
    x = np.random.default_rng(4).uniform(0.1, 2.0, (64, 300))
    f = lambda x: (ad.tanh(x) * x + ad.exp(x), ad.sum(x * x, axis=1), ad.sum(ad.log(x), axis=0))
    program = ad.trace(f, x)
    expected = (np.tanh(x) * x + np.exp(x), np.sum(x * x, axis=1), np.sum(np.log(x), axis=0))
    with ad.num_threads(2), parallel.grains(**TINY):
        got = program(x)
        assert sorted(set(_steps_named(program, "split_"))) == [
            "split_add", "split_exp", "split_log", "split_multiply", "split_sum", "split_tanh"]
        assert len(chunks) == 8 and all(len(c) == 2 for c in chunks)
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    assert np.allclose(got[2], expected[2], rtol=1e-13)   # partial sums over the rows (see above)
    with ad.num_threads(1):
        assert _steps_named(program, "split_") == []
        assert all(np.array_equal(a, b) for a, b in zip(program(x)[:2], expected))


def test_a_split_step_writes_into_its_dying_operand_and_the_operand_stays_unseen():
    x = np.random.default_rng(5).uniform(0.1, 2.0, (256, 300))
    program = ad.trace(lambda x: ad.exp(x * 2.0) + 1.0, x)
    with ad.num_threads(2), parallel.grains(**TINY):
        _, steps = program._plan()
        assert any(s[5] is not None and s[1].__name__.startswith("split_") for s in steps)
        before = x.copy()
        assert np.array_equal(program(x), np.exp(x * 2.0) + 1.0)
        assert np.array_equal(x, before)


def refuse(kind, flag):
    raise ValueError(f"{kind}: refused")


def test_an_error_in_a_chunk_surfaces_as_in_an_unsplit_call():
    x = np.linspace(1.0, 2.0, 4096)
    program = ad.trace(lambda x: ad.log(x) * 2.0, x)
    x[-1] = 0.0     # in the last chunk, run by a worker or by the caller
    with ad.num_threads(2), parallel.grains(**TINY):
        assert _steps_named(program, "split_")
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):   # the caller's errstate holds
            program(x)
        with ad.num_threads(1), np.errstate(divide="call", call=refuse):   # unsplit: the error we expect
            with pytest.raises(AutogradDagError) as whole:
                program(x)
        with np.errstate(divide="call", call=refuse), pytest.raises(AutogradDagError) as split:
            program(x)
    assert "log" in str(split.value) and str(split.value) == str(whole.value)


def test_chunks_on_workers_run_in_the_callers_context_numpys_errstate_included():
    seen = {}
    gate = threading.Barrier(2, timeout=10)   # both chunks at once: one is on a worker

    def fn(a, b):
        gate.wait()
        seen[threading.current_thread().name] = np.geterr()["divide"]
    with ad.num_threads(2), np.errstate(divide="raise"):
        parallel.run_chunks(fn, 4096, grain=64)
    assert len(seen) == 2 and set(seen.values()) == {"raise"}


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="affinity")
def test_the_default_splits_nothing_once_the_process_is_pinned_to_one_core_a_chosen_setting_still_does():
    code = """if True:
        import os, autograd_dag as ad
        from autograd_dag import parallel
        seen = []
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        for n in (None, 2, None):
            with ad.num_threads(n):
                starts = []
                parallel.run_chunks(lambda a, b: starts.append(a), 4096, grain=64)
                seen.append(sorted(starts))
        print(seen)"""
    clean = {k: v for k, v in os.environ.items() if k not in ("AUTOGRAD_DAG_NUM_THREADS", "OMP_NUM_THREADS")}
    proc = subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[[0], [0, 2048], [0]]"


def test_jit_splits_a_relus_mask_and_its_product_and_leaves_mixed_float_dtypes_whole():
    x = np.random.default_rng(6).normal(size=(256, 300))
    program = ad.trace(lambda x: (x > 0.0) * x, x)
    mixed = ad.trace(lambda x, y: x * y, x, x.astype(np.float32))
    with ad.num_threads(2), parallel.grains(**TINY):
        assert sorted(_steps_named(program, "split_")) == ["split_greater", "split_multiply"]
        assert np.array_equal(program(x), (x > 0.0) * x)
        assert _steps_named(mixed, "split_") == []
