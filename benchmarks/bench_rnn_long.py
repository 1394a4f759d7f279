"""A 10,000-step LSTM, forward + backward: how the per-step slices of the sequence are cut matters.

The input projection of the whole sequence, (B, L, 4H), is computed at once and
cut into its L time steps. The derivative of one slice alone is a zero array of
the sequence's shape with the slice's cotangent added in (O(L²) for all L); the
eager ``backward()`` adds each slice's cotangent into one buffer (``vjp_into``)
and a recorded sweep (``--recorded``: ``ad.jit(ad.value_and_grad)``, whose
gradient program is recorded) joins them into one ``concatenate``, O(L) both:

  per step     x[:, l] for each l straight from the sequence (what ``ad.unstack`` does);
  √L chunks    through chunks of about √L steps (nn/rnn.py before ``ad.unstack``).

Model: ``nn.SequenceToVector(nn.LSTMCell(8, 32), pooling="mean")`` + Linear(32, 2),
batch 4, cross-entropy; float64; single-threaded BLAS. Best of ``--repeat`` runs,
in CPU seconds of this process (``time.process_time``: on the shared machine the
wall clock mostly measures the other processes) and in wall-clock seconds.

Run:  python benchmarks/bench_rnn_long.py [--length 10000] [--repeat 2] [--recorded]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import autograd_dag as ad
from autograd_dag import nn
from autograd_dag.nn import rnn
from autograd_dag.primitives.indexing import getitem


def per_step(x, axis=1):
    return [getitem(x, (slice(None), l)) for l in range(x.shape[1])]


def sqrt_chunks(x, axis=1):
    """The slicing nn/rnn.py used before ad.unstack (its `_time_steps`)."""
    length = x.shape[1]
    if length <= 64:
        return per_step(x)
    size = int(math.ceil(math.sqrt(length)))
    steps = []
    for start in range(0, length, size):
        chunk = getitem(x, (slice(None), slice(start, min(start + size, length))))
        steps.extend(getitem(chunk, (slice(None), j)) for j in range(chunk.shape[1]))
    return steps


STRATEGIES = {"per step (ad.unstack)": per_step, "√L chunks": sqrt_chunks}


def lstm_workload(length: int):
    """The model, the functional loss(params, x), params, x and labels of the benchmark (fixed seeds).

    (Also bench_compile.py's LSTM case.)
    """
    rng = np.random.default_rng(0)
    model = nn.SequenceToVector(nn.LSTMCell(8, 32, rng=0), pooling="mean", head=nn.Linear(32, 2, rng=0))
    x = rng.standard_normal((4, length, 8))
    labels = np.array([0, 1, 0, 1])
    params = {name: p.value for name, p in model.named_parameters()}

    def loss(params, x):
        return nn.functional.cross_entropy(nn.functional_call(model, params, x), labels)
    return model, loss, params, x, labels


def measure(strategy, length: int, repeat: int, recorded: bool):
    """Best CPU and wall seconds of (forward, backward), and weight_ih's gradient.

    Recorded: (trace + first run, a later run) of ``ad.jit(ad.value_and_grad)``.
    """
    model, loss, params, x, labels = lstm_workload(length)
    original = rnn.unstack
    rnn.unstack = strategy
    best = [float("inf")] * 4  # CPU first part, CPU second part, wall first, wall second
    try:
        for _ in range(repeat):
            model.zero_grad()
            c0, t0 = time.process_time(), time.perf_counter()
            if recorded:
                step = ad.jit(ad.value_and_grad(loss))
                step(params, x)
            else:
                value = nn.functional.cross_entropy(model(x), labels)
            c1, t1 = time.process_time(), time.perf_counter()
            if recorded:
                _, grads = step(params, x)
            else:
                value.backward()
            c2, t2 = time.process_time(), time.perf_counter()
            best = [min(b, v) for b, v in zip(best, (c1 - c0, c2 - c1, t1 - t0, t2 - t1))]
    finally:
        rnn.unstack = original
    return best, grads["encoder.cell.weight_ih"] if recorded else model.encoder.cell.weight_ih.grad.value


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--length", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--recorded", action="store_true",
                   help="time ad.jit(ad.value_and_grad): trace (a recorded backward sweep) + first run, then a run")
    args = p.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits
        limit = threadpool_limits(limits=1, user_api="blas")
    except ImportError:
        limit = None
    print(f"LSTM(8 -> 32), batch 4, L = {args.length:,}: seconds, best of {args.repeat}\n")
    first, second = ("trace + first run", "a run") if args.recorded else ("forward", "backward")
    print(f"| slicing | {first} CPU s | {second} CPU s | total CPU s | total wall s |")
    print("|---|---|---|---|---|")
    reference = None
    for name, strategy in STRATEGIES.items():
        (f, b, wf, wb), grad = measure(strategy, args.length, args.repeat, args.recorded)
        if reference is None:
            reference = grad
        assert np.allclose(grad, reference, rtol=1e-10, atol=1e-12), f"{name}: a different gradient"
        print(f"| {name} | {f:.2f} | {b:.2f} | {f + b:.2f} | {wf + wb:.2f} |", flush=True)
    if limit is not None:
        limit.restore_original_limits()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
