"""Adversarial calls of jit's fast paths: threads, aliasing, changing arguments, failures, long programs.

Each test calls a jitted function (or a Program) the way a user might and a
reviewer feared it would break: from several Python threads at once, with
aliased or odd arrays, between failing calls. Results are compared with an
independent numpy computation or the serial (one-thread, eager) result;
tolerances say why they are not ``==``.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np
import pytest

import autograd_dag as ad


@pytest.fixture
def switch_often():
    """Python threads switch every microsecond: races between them show in a few calls."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def on_threads(fn, n: int) -> list:
    """``fn(t)`` on ``n`` threads started together; their exceptions, re-raised here, first first."""
    barrier = threading.Barrier(n)
    errors = []

    def run(t):
        try:
            barrier.wait()
            fn(t)
        except BaseException as exc:   # (re-raised on the test's thread)
            errors.append(exc)
    threads = [threading.Thread(target=run, args=(t,)) for t in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def _in_a_child(fn) -> int:
    """The exit code of a forked child running ``fn()`` (0 when it returns True), killed after 10 s."""
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if fn() else 3)
        except BaseException:
            os._exit(4)
    deadline = time.monotonic() + 10.0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return -9
        time.sleep(0.01)


def _elsewhere(request) -> bool:
    """Run this test again alone in a fresh interpreter (True: done there, and passed); False inside it.

    The fork tests fork the process running them: in a pytest worker that has loaded JAX or
    PyTorch, whose threads may hold locks of their own at the fork, the child could hang for
    reasons not ours. A fresh interpreter holds numpy and this library only.
    """
    if os.environ.get("AUTOGRAD_DAG_FRESH_TEST") == request.node.name:
        return False
    import subprocess
    env = dict(os.environ, AUTOGRAD_DAG_FRESH_TEST=request.node.name)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          f"{__file__}::{request.node.name}"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return True


# ------------------------------------------------------------------ threads

class NodesPausedAtPlanning(list):
    """A program's node list whose iteration by ``Program._plan`` itself waits for another thread's call.

    The first call plans the program (``plan_steps``), then lists its
    constants, iterating the nodes: a call on another thread landing then
    must find either no plan (and make its own) or the whole plan. It found
    the steps published before the constants' list (None): a TypeError.
    """

    def __init__(self, nodes, call):
        super().__init__(nodes)
        self.call, self.paused, self.done = call, False, threading.Event()

    def __iter__(self):
        if (not self.paused and threading.current_thread() is threading.main_thread()
                and sys._getframe(1).f_code.co_name == "_plan"):
            self.paused = True
            other = threading.Thread(target=lambda: (self.call(), self.done.set()))
            other.start()
            other.join(5.0)
        return super().__iter__()


def test_a_call_on_another_thread_while_the_first_call_plans_gets_the_whole_plan():
    x = np.arange(4.0)
    prog = ad.trace(lambda x: ad.exp(x) * 2.0 + 1.0, x)
    results = []
    prog.nodes = NodesPausedAtPlanning(prog.nodes, lambda: results.append(prog(x)))
    for _ in range(2):   # (the second plan: iterated after the first plan was published, in the old order)
        prog._steps = None
        prog.nodes.paused = False
        results.append(prog(x))
    assert prog.nodes.done.is_set() and len(results) == 4, "the call on the other thread failed"
    for r in results:
        np.testing.assert_array_equal(r, np.exp(x) * 2.0 + 1.0)   # (the same numpy calls)


def _loss(w, x):
    h = ad.tanh(x @ w)
    for _ in range(5):
        h = ad.sin(h) * 1.5 + h
    return ad.sum(h * h)


def test_first_calls_of_a_jit_function_on_four_threads_give_the_serial_results(switch_often):
    # The four threads record at once: the tracer's state is the process's, so they pushed and
    # popped each other's transformations (about 1 call in 10 gave wrong gradients or Tensors).
    rng = np.random.default_rng(0)
    ws, xs = rng.standard_normal((4, 6, 5)), rng.standard_normal((4, 7, 6))
    serial = [ad.value_and_grad(_loss)(w, x) for w, x in zip(ws, xs)]
    for _ in range(20):
        step = ad.jit(ad.value_and_grad(_loss))

        def calls(t):
            for rep in range(4):
                i = (t + rep) % 4
                value, grad = step(ws[i], xs[i])
                assert type(value) is np.ndarray and type(grad) is np.ndarray
                # (The same numpy calls in another order of nodes: equal within rounding.)
                np.testing.assert_allclose(value, serial[i][0], rtol=1e-12)
                np.testing.assert_allclose(grad, serial[i][1], rtol=1e-12, atol=1e-12)
        on_threads(calls, 4)
        assert len(step.programs) == 1


def test_a_traced_signature_called_while_another_thread_records_runs_its_program():
    # A call whose program exists, made while another thread records this function on a new
    # signature, took the recording for its own: it recorded through f and returned a Tensor.
    recording, called = threading.Event(), threading.Event()

    def f(x):
        if x.shape == (3,):   # the new signature: wait (at most 0.2 s) for the other call
            recording.set()
            called.wait(0.2)
        return ad.exp(x) + 1.0
    jf = ad.jit(f)
    x = np.arange(2.0)
    jf(x)                     # traced
    got = []

    def other():
        recording.wait(5.0)
        got.append(jf(x))
        called.set()
    thread = threading.Thread(target=other)
    thread.start()
    np.testing.assert_array_equal(jf(np.zeros(3)), np.exp(np.zeros(3)) + 1.0)
    thread.join(5.0)
    assert type(got[0]) is np.ndarray
    np.testing.assert_array_equal(got[0], np.exp(x) + 1.0)


# ------------------------------------------------------------------- fork

@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_child_forked_while_another_thread_holds_the_library_locks_can_record_and_split(request):
    if _elsewhere(request):
        return
    # Forked while a thread held jit's recording lock and the pool's guard, the child got both
    # held by a thread it does not have: its first recording, or first split call, hung.
    from autograd_dag import jitting, parallel
    held, release = threading.Event(), threading.Event()

    def holder():
        with jitting._recording, parallel._pool_guard:
            held.set()
            release.wait(10.0)
    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(5.0)
    try:
        def child():
            x = np.linspace(0.0, 1.0, 4096)
            with ad.num_threads(2), parallel.grains(transcendental=64):
                y = ad.jit(lambda x: ad.exp(x) + 1.0)(x)
            return bool(np.allclose(y, np.exp(x) + 1.0, rtol=1e-15))   # (exp split or not: the same calls)
        assert _in_a_child(child) == 0
    finally:
        release.set()
        thread.join()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_pool_chunk_calling_a_jit_function_while_its_caller_records_does_not_hang(request):
    if _elsewhere(request):
        return
    # An operation of the recorded function splits over the pool and each chunk calls a jit
    # function: the worker must not wait for the recording thread, which waits for its chunk.
    # (Run in a forked child: a hang there is a failure, not a hung suite.)
    from autograd_dag import parallel

    def child():
        inner = ad.jit(lambda x: ad.exp(x) + 1.0)

        def impl(x):
            out = np.empty_like(x)

            def chunk(a, b):
                if parallel.on_worker():
                    worker_ran.set()
                else:   # (the caller's chunk: let a worker take the other)
                    worker_ran.wait(1.0)
                out[a:b] = inner(x[a:b])
            parallel.run_chunks(chunk, len(x), grain=64, align=1)
            return out
        worker_ran = threading.Event()
        pexp = ad.primitive("pexp_adversarial", impl, vjp=lambda ct, out, x: (ct * (out - 1.0),), replace=True)
        x = np.linspace(0.0, 1.0, 256)
        inner(x[:128])
        ok = True
        with ad.num_threads(2):
            for _ in range(3):
                worker_ran.clear()
                g = ad.jit(ad.grad(lambda x: ad.sum(pexp(x))))
                # exp on the same numbers by the same calls (recorded or run): equal
                ok = ok and bool(np.allclose(g(x), np.exp(x), rtol=1e-15)) and worker_ran.is_set()
        return ok
    assert _in_a_child(child) == 0


# ------------------------------------------------------------------ copies

def test_a_deep_copy_of_a_program_runs_on_its_own_constants():
    # The copy kept the original's generated code, whose globals are the original's constants.
    import copy
    c = np.ones(3)
    prog = ad.trace(lambda x: x * c + 1.0, np.zeros(3))
    for _ in range(3):   # (the generated code from the second call)
        prog(np.ones(3))
    twin = copy.deepcopy(prog)
    c[:] = 5.0           # the original's constant, changed in place: the copy holds its own
    for _ in range(3):
        np.testing.assert_array_equal(twin(np.ones(3)), np.full(3, 2.0))
        np.testing.assert_array_equal(prog(np.ones(3)), np.full(3, 6.0))


def test_a_deep_copy_of_a_program_hands_out_copies_of_its_constants():
    # The copy's plan held the ids of the original's constants: its own, an output, was handed out
    # as it is and the caller's change stuck in every later call.
    import copy
    hessian = ad.jit(ad.hessian(lambda v: ad.sum(v * v)))
    v = np.ones(3)
    hessian(v)
    (prog, _), = hessian.programs.values()
    twin = copy.deepcopy(prog)
    for _ in range(3):
        out = np.asarray(twin(v)[0])
        np.testing.assert_array_equal(out, 2.0 * np.eye(3))
        out -= 100.0


# ------------------------------------------------ the fast paths, probed (guards)

@pytest.fixture
def split_small():
    """Two threads, every splittable operation split from a few hundred elements."""
    from autograd_dag import parallel
    from autograd_dag.primitives import rowsplit
    saved = dict(rowsplit.GRAIN)
    rowsplit.GRAIN.update({name: 8 for name in saved})
    try:
        with ad.num_threads(2), parallel.grains(cheap=64, transcendental=64, reduction=64):
            yield
    finally:
        rowsplit.GRAIN.update(saved)


def _model(x, w):
    h = ad.tanh(x @ w) + x[:, :32] * 0.5
    s = ad.softargmax(h * 2.0, axis=-1)
    return ad.sum(s * h, axis=0), ad.mean(ad.exp(-h * h)), ad.max(h, axis=1)


def _model_numpy(x, w):
    h = np.tanh(x @ w) + x[:, :32] * 0.5
    z = h * 2.0
    e = np.exp(z - z.max(-1, keepdims=True))
    s = e / e.sum(-1, keepdims=True)
    return (s * h).sum(0), np.exp(-h * h).mean(), h.max(1)


@pytest.mark.parametrize("split", [False, True])
def test_split_steps_on_three_threads_at_once_give_numpys_results(split, switch_often, request):
    if split:
        request.getfixturevalue("split_small")
    rng = np.random.default_rng(1)
    xs, w = rng.standard_normal((3, 256, 64)), rng.standard_normal((64, 32))
    expected = [_model_numpy(x, w) for x in xs]
    step = ad.jit(_model)
    step(xs[0], w)

    def calls(t):
        for rep in range(30):
            i = (t + rep) % 3
            for got, want in zip(step(xs[i], w), expected[i]):
                # (Split reductions add in another order; BLAS and numpy's own sums: within rounding.)
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    on_threads(calls, 3)


@pytest.mark.parametrize("split", [False, True])
def test_odd_arguments_and_held_results_across_calls(split, request):
    # Inputs aliased, views of each other, strided, Fortran-order, read-only; each result kept by the
    # caller across the next calls (large enough, 150 kB, for results written into dying operands).
    if split:
        request.getfixturevalue("split_small")
    rng = np.random.default_rng(2)
    big = rng.standard_normal((600, 192))
    a, b = big[:300, :64].copy(), big[300:, 64:128].copy()
    read_only = a.copy()
    read_only.flags.writeable = False
    cases = {"plain": (a, b), "same": (a, a), "overlapping views": (big[:300, :64], big[1:301, :64]),
             "strided": (big[::2, ::3], big[1::2, ::3]), "fortran": (np.asfortranarray(a), b),
             "negative strides": (a[::-1, ::-1].copy()[::-1, ::-1], b), "read-only": (read_only, b)}

    def f(a, b):
        c = ad.exp(a) * b + a
        d = ad.tanh(c) - b * 0.5
        return ad.sum(d * d, axis=0), ad.softargmax(d, axis=-1) * 2.0, c

    def numpy_f(a, b):
        c = np.exp(a) * b + a
        d = np.tanh(c) - b * 0.5
        e = np.exp(d - d.max(-1, keepdims=True))
        return (d * d).sum(0), e / e.sum(-1, keepdims=True) * 2.0, c
    jf = ad.jit(f)
    for name, (x, y) in cases.items():
        x_before, y_before = x.copy(), y.copy()
        expected = numpy_f(x_before, y_before)
        held = []
        for _ in range(3):   # the loop, then the generated code
            out = jf(x, y)
            held.append((out, [o.copy() for o in out]))
            for got, want in zip(out, expected):
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14, err_msg=name)
        np.testing.assert_array_equal(x, x_before, err_msg=name)
        np.testing.assert_array_equal(y, y_before, err_msg=name)
        for out, copies in held:
            for o, c in zip(out, copies):
                np.testing.assert_array_equal(o, c, err_msg=f"{name}: a result the caller held changed")


def test_a_failing_call_leaves_nothing_behind_for_the_next(split_small):
    def check(x):
        if np.any(x > 1e6):
            raise ValueError("too big")
        return x.copy()
    checked = ad.primitive("checked_adversarial", check, vjp=lambda ct, out, x: (ct,), replace=True)

    def f(x, y):
        a = ad.exp(x) * 2.0
        c = ad.log(checked(a + y)) * ad.tanh(a)
        return ad.sum(c, axis=0), c * 3.0
    rng = np.random.default_rng(3)
    x, y = rng.uniform(0, 1, (300, 64)), rng.uniform(0, 1, (300, 64))
    a = np.exp(x) * 2.0
    c = np.log(a + y) * np.tanh(a)
    jf = ad.jit(f)
    too_big = y.copy()
    too_big[5, 5] = 1e7
    for _ in range(3):
        for got, want in zip(jf(x, y), (c.sum(0), c * 3.0)):
            np.testing.assert_allclose(got, want, rtol=1e-12)
        with pytest.raises(ValueError, match="too big"):
            jf(x, too_big)
        with np.errstate(all="raise"), pytest.raises(FloatingPointError):
            jf(x, np.full_like(y, -100.0))        # log of a negative number, split over the pool


def test_a_long_chain_runs_without_recursion_holding_two_arrays_at_once():
    # 120,000 nodes: beyond codegen.MAX_STEPS (the loop on every call), no recursion anywhere.
    from autograd_dag.heap import planned_peak
    def f(x):
        for _ in range(60_000):
            x = x * 1.0000001 + 1e-9
        return x
    x = np.ones(4)
    expected = x.copy()
    for _ in range(60_000):
        expected = expected * 1.0000001 + 1e-9
    jf = ad.jit(f)
    for _ in range(2):
        np.testing.assert_array_equal(jf(x), expected)   # (the same numpy calls in the same order)
    (program, _), = jf.programs.values()
    assert planned_peak(program.nodes, program._plan()[1]) == 2 * x.nbytes   # each freed after its one use



def test_overlapping_pauses_of_the_collector_keep_it_off_until_the_last_ends():
    # Two threads' pauses overlap without nesting (A starts, B starts, A ends, B ends). Each pause
    # read gc.isenabled() and restored what it read: A's end switched the collector on inside B's
    # pause, and B, having read "off", never switched it back on when B disabled after A's end.
    import gc
    from autograd_dag.graph import paused_gc
    assert gc.isenabled()
    a, b = paused_gc(), paused_gc()
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)
    assert not gc.isenabled()   # B's pause is still open
    b.__exit__(None, None, None)
    assert gc.isenabled()
