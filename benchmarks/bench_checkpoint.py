"""Checkpointing trades compute for memory: peak memory and time of a deep MLP's backward.

A residual MLP of ``--depth`` blocks (each: x + tanh(x W + b)) on a
(batch, width) input, forward + backward, three ways:
  plain       every intermediate kept for backward;
  checkpoint  each block wrapped in ``ad.checkpoint`` (only block inputs kept,
              each block's forward recomputed during backward);
  numpy       the same forward alone in numpy, as a memory floor.
Peak memory is measured with tracemalloc (numpy reports its buffers to it).

Run:  python benchmarks/bench_checkpoint.py [--depth 32] [--width 256] [--batch 256]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

import autograd_dag as ad


def block(x, w, b):
    return x + ad.tanh(x @ w + b)


def run(params, x0, use_checkpoint: bool):
    x = ad.Tensor(x0)
    f = ad.checkpoint(block) if use_checkpoint else block
    for w, b in params:
        x = f(x, w, b)
    loss = (x * x).mean()
    loss.backward()
    return float(loss.value), [w.grad.value for w, _ in params]


def numpy_forward(params, x0):
    x = x0
    for w, b in params:
        x = x + np.tanh(x @ w.value + b.value)
    return x


def measure(fn, repeat: int = 3):
    """(result, best seconds of ``repeat`` plain runs, peak MiB of one traced run).

    Time and memory come from separate runs: tracemalloc slows every
    allocation, which would distort the time.
    """
    elapsed = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        elapsed = min(elapsed, time.perf_counter() - t0)
    tracemalloc.start()
    result = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, elapsed, peak / 2**20


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=32)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    params = [(ad.Tensor(rng.standard_normal((args.width, args.width)) / np.sqrt(args.width),
                         requires_grad=True),
               ad.Tensor(np.zeros(args.width), requires_grad=True)) for _ in range(args.depth)]
    x0 = rng.standard_normal((args.batch, args.width))

    def fresh_run(use_checkpoint):
        for w, b in params:
            w.zero_grad()
            b.zero_grad()
        return run(params, x0, use_checkpoint)

    (plain_loss, plain_grads), t_plain, m_plain = measure(lambda: fresh_run(False))
    (ck_loss, ck_grads), t_ck, m_ck = measure(lambda: fresh_run(True))
    _, t_np, m_np = measure(lambda: numpy_forward(params, x0))
    # Same numbers either way, or the comparison means nothing.
    assert np.isclose(plain_loss, ck_loss)
    assert all(np.allclose(a, b) for a, b in zip(plain_grads, ck_grads))

    act_mb = args.batch * args.width * 8 / 2**20
    print(f"Residual MLP: depth {args.depth}, width {args.width}, batch {args.batch} "
          f"(one activation = {act_mb:.2f} MiB; weights {args.depth * args.width ** 2 * 8 / 2**20:.1f} MiB)\n")
    print(f"{'variant':<34}{'peak MiB':>10}{'seconds':>10}")
    print("-" * 54)
    print(f"{'forward+backward, plain':<34}{m_plain:>10.1f}{t_plain:>10.2f}")
    print(f"{'forward+backward, ad.checkpoint':<34}{m_ck:>10.1f}{t_ck:>10.2f}")
    print(f"{'numpy forward only (floor)':<34}{m_np:>10.1f}{t_np:>10.2f}")
    print(f"\ncheckpoint: {m_plain / m_ck:.1f}x less peak memory for {t_ck / t_plain:.2f}x the time; "
          f"gradients identical")


if __name__ == "__main__":
    main()
