"""Eager recording and differentiation on several threads at once: each thread has its own modes.

``no_grad``, the bare sweeps of ``backward()``, ``name_scope``, the sweeps'
attribution, ``detect_anomaly``, the tracer's stack (``grad``, ``vmap``,
``jit`` recording), a module call's naming and ``random_seed`` blocks are the
calling thread's (modes.py), as PyTorch's grad mode and JAX's trace state are.
With one set per process a ``no_grad`` or a sweep on one thread changed what
another recorded: eager gradients on four threads were wrong in 31 of 160 calls.

The deterministic tests hold one thread inside a mode (an Event) while
another records; each fails with process-wide modes. The stress test compares
gradients computed on four threads with the same code run on one thread (the
same numpy calls on the same operands: equal bit for bit).
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import core, nn

TIMEOUT = 30  # seconds: a thread stuck waiting fails the test instead of hanging the suite


def _while_held(enter, check):
    """Run ``check()`` on this thread while another thread is inside the context manager ``enter()``."""
    inside, done, errors = threading.Event(), threading.Event(), []

    def hold():
        try:
            with enter():
                inside.set()
                assert done.wait(TIMEOUT)
        except BaseException as exc:   # reported by the main thread
            errors.append(exc)
            inside.set()

    other = threading.Thread(target=hold)
    other.start()
    try:
        assert inside.wait(TIMEOUT)
        return check()
    finally:
        done.set()
        other.join(TIMEOUT)
        assert not errors, errors


def test_no_grad_on_another_thread_does_not_stop_recording_here():
    def check():
        x = ad.Tensor(np.array([1.0, 2.0]), requires_grad=True)
        y = (x * x).sum()
        assert ad.is_recording() and y.requires_grad and y.parents
        y.backward()
        np.testing.assert_array_equal(x.grad.value, [2.0, 4.0])   # 2x, exact in binary

    _while_held(ad.no_grad, check)


def test_bare_values_on_another_thread_do_not_turn_operations_here_into_arrays():
    # The eager backward() runs its rules in bare-value mode: a forward on another
    # thread meanwhile got ndarrays back instead of Tensors (or recorded nothing).
    def check():
        x = ad.Tensor(np.array([3.0]), requires_grad=True)
        y = ad.sin(x) * 2.0
        assert type(y) is ad.Tensor and y.requires_grad
        return y

    assert type(_while_held(core.bare_values, check)) is ad.Tensor


def test_name_scope_and_anomaly_mode_are_the_threads_own():
    def check():
        y = ad.Tensor([1.0]) + 1.0
        assert y.scope == () and ad.current_scope() == ()
        ad.log(ad.Tensor([-1.0]))           # NaN: no AnomalyError here, the mode is the other thread's
        return y

    def scoped_anomaly():
        stack = __import__("contextlib").ExitStack()
        stack.enter_context(ad.name_scope("elsewhere"))
        stack.enter_context(ad.detect_anomaly())
        return stack

    with np.errstate(invalid="ignore"):
        _while_held(scoped_anomaly, check)


def test_a_program_recorded_on_another_thread_does_not_stop_copies_here():
    # While jit records, operands are not copied (read by identity on every call):
    # an eager step on another thread then kept the user's array, and a change to
    # it before backward() changed the gradient.
    inside, done = threading.Event(), threading.Event()

    def traced(x):
        inside.set()
        assert done.wait(TIMEOUT)
        return (x * 2.0).sum()

    other = threading.Thread(target=lambda: ad.jit(traced)(np.ones(2)))
    other.start()
    try:
        assert inside.wait(TIMEOUT)
        data = np.array([1.0, 2.0])
        w = ad.Tensor(np.array([0.5, 0.5]), requires_grad=True)
        loss = (w * data).sum()
        data[...] = 5.0
        loss.backward()
        np.testing.assert_array_equal(w.grad.value, [1.0, 2.0])   # the numbers the forward used
    finally:
        done.set()
        other.join(TIMEOUT)


def test_a_new_thread_starts_recording_whatever_its_creator_is_in():
    seen = []
    with ad.no_grad(), ad.name_scope("outer"):
        t = threading.Thread(target=lambda: seen.append((ad.is_recording(), ad.current_scope())))
        t.start()
        t.join(TIMEOUT)
    assert seen == [(True, ())]


class _Net(nn.Module):
    def __init__(self, rng):
        super().__init__()
        self.fc1 = nn.Linear(5, 8, rng=rng)
        self.fc2 = nn.Linear(8, 1, rng=rng)

    def forward(self, x):
        return self.fc2(ad.tanh(self.fc1(x)))


def _work(seed: int):
    """Eager gradients on one thread's own data: backward(), ad.grad, ad.vmap, a module, dropout."""
    rng = np.random.default_rng(seed)
    net = _Net(rng)
    x = rng.standard_normal((6, 5))
    loss = (net(x) ** 2).mean()
    loss.backward()
    grads = [p.grad.value.copy() for p in net.parameters()]
    net.zero_grad()
    a = rng.standard_normal(4)
    grads.append(np.asarray(ad.grad(lambda v: (ad.exp(ad.sin(v)) * v).sum())(a)))
    grads.append(np.asarray(ad.vmap(ad.grad(lambda v: (v * ad.tanh(v)).sum()))(rng.standard_normal((3, 4)))))
    with ad.random_seed(seed):
        grads.append(np.asarray(ad.grad(lambda v: nn.functional.dropout(v, 0.5).sum())(a)))
    return grads


@pytest.fixture
def switch_often():
    # Python hands the GIL between threads every 5 ms by default: most short steps would run
    # whole. Every microsecond, they interleave inside the sweeps.
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


def test_eager_gradients_on_four_threads_are_those_of_one_thread(switch_often):
    seeds = list(range(8))
    expected = {s: _work(s) for s in seeds}
    results, errors = {}, []

    def run(s):
        try:
            for _ in range(5):
                results.setdefault(s, []).append(_work(s))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in seeds[:4]] + \
              [threading.Thread(target=run, args=(s,)) for s in seeds[4:]]
    for chunk in (threads[:4], threads[4:]):
        for t in chunk:
            t.start()
        for t in chunk:
            t.join(120)
    assert not errors, errors
    wrong = [(s, i) for s in seeds for i, got in enumerate(results[s])
             if not all(np.array_equal(g, e) for g, e in zip(got, expected[s]))]
    assert wrong == []


def test_backward_on_several_threads_adds_every_gradient_into_a_shared_parameter(switch_often):
    # Hogwild-style: threads share the model and call backward() into the same .grad,
    # which PyTorch accumulates under a lock. Read-add-write of .grad on two threads
    # lost one of the two additions when the GIL changed hands between them.
    w = ad.Tensor(np.ones(3), requires_grad=True)
    calls, errors = 300, []

    def run():
        try:
            for _ in range(calls):
                (w * np.array([1.0, 2.0, 3.0])).sum().backward()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    # Small integers: every partial sum is exact in float64, whatever the order of the additions.
    np.testing.assert_array_equal(w.grad.value, 4 * calls * np.array([1.0, 2.0, 3.0]))
