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
def test_a_child_forked_while_another_thread_holds_the_library_locks_can_record_and_split():
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
def test_a_pool_chunk_calling_a_jit_function_while_its_caller_records_does_not_hang():
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
