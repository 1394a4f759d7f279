"""heap.py: a program's plan keeps glibc's heap between its calls, so that later calls fault no pages in."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import heap
from autograd_dag.execution import plan_steps


def _peak(program) -> int:
    return heap.planned_peak(program.nodes, plan_steps(program.nodes, program.outputs))


def test_planned_peak_counts_live_results_until_their_last_use():
    n = 100_000  # 800,000 bytes a float64 array: over execution.MIN_BYTES, so writes into dying operands
    x = np.ones(n)
    # exp(x) dies at the sin (written into), sin(exp) at the add: at most two arrays at once
    # (the add's result and y), although three results are made.
    p = ad.trace(lambda x: ad.sin(ad.exp(x)) + ad.cos(x), x)
    assert _peak(p) == 2 * 8 * n
    # Nothing dies early: all three results live to the end.
    q = ad.trace(lambda x: (ad.exp(x), ad.sin(x), ad.cos(x)), x)
    assert _peak(q) == 3 * 8 * n


def test_planned_peak_of_a_write_into_a_dying_operand_takes_its_bytes_over():
    x = np.ones(100_000)
    p = ad.trace(lambda x: ad.exp(ad.exp(ad.exp(x))), x)
    steps = plan_steps(p.nodes, p.outputs)
    assert [s[5] is not None for s in steps] == [False, True, True]   # the plan writes in place twice
    assert heap.planned_peak(p.nodes, steps) == 8 * 100_000


def test_keep_only_grows_and_is_capped(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_mallopt", lambda param, value: calls.append((param, value)) or 1)
    monkeypatch.setattr(heap, "_kept", 0)
    assert heap.keep(1 << 20) == heap.MIN_KEEP       # glibc's own ceiling at least
    assert calls == [(heap.M_MMAP_THRESHOLD, heap.MMAP_THRESHOLD), (heap.M_TRIM_THRESHOLD, heap.MIN_KEEP)]
    assert heap.keep(100 << 20) == 200 << 20          # twice the planned peak
    assert calls[-1] == (heap.M_TRIM_THRESHOLD, 200 << 20)
    assert heap.keep(50 << 20) == 200 << 20 and len(calls) == 4    # a smaller program changes nothing
    assert heap.keep(1 << 40) == heap.MAX_KEEP
    assert calls[-1] == (heap.M_TRIM_THRESHOLD, heap.MAX_KEEP)


def test_keep_sets_nothing_where_mallopt_refuses(monkeypatch):
    monkeypatch.setattr(heap, "_mallopt", lambda param, value: 0)
    monkeypatch.setattr(heap, "_kept", 0)
    assert heap.keep(10 << 20) == 0 and heap.kept() == 0


# A loop of jit calls whose results are dropped, as a training loop's are: the faults of the
# fourth call, in a fresh interpreter (the heap settings are process-wide).
_LOOP = textwrap.dedent("""
    import resource, numpy as np, autograd_dag as ad
    step = ad.jit(ad.grad(lambda w, x: ad.tanh(ad.tanh(x @ w) @ w.T).sum()))
    w, x = np.full((512, 512), 0.01), np.ones((4096, 512))       # 16 MiB intermediates
    for _ in range(3):
        step(w, x)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    step(w, x)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


def _faults(env_value):
    env = dict(os.environ)
    env.pop("AUTOGRAD_DAG_KEEP_HEAP", None)
    if env_value is not None:
        env["AUTOGRAD_DAG_KEEP_HEAP"] = env_value
    env["AUTOGRAD_DAG_NUM_THREADS"] = "1"   # the faults of the main thread's heap only
    out = subprocess.run([sys.executable, "-c", _LOOP], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.skipif(not heap._is_glibc() or not sys.platform.startswith("linux"), reason="glibc's heap only")
def test_later_calls_of_a_jit_step_fault_no_pages_in():
    kept, dropped = _faults(None), _faults("0")
    # Without: every call faults its arrays' pages in again (2,000-2,500 faults measured: numpy
    # asks for huge pages on arrays this large, so fewer faults than 4 KiB pages). With: none.
    assert dropped > 1000, dropped
    assert kept < 100, (kept, dropped)
