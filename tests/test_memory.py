"""Peak memory of one training step (issue 13): at most 1.2x the same step written by hand in numpy.

The models and the numpy versions are those of ``benchmarks/bench_models.py``
(MLP 784-512-512-10 at batch 256; seed 000's Transformer LM at batch 16 x 64);
memory is tracemalloc's high-water mark, which counts numpy's buffers. It is a
count of bytes, not a timing, so it is the same on a loaded machine.
"""

from __future__ import annotations

import gc
import importlib.util
import pathlib
import tracemalloc

import numpy as np
import pytest

import autograd_dag as ad

_PATH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "bench_models.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_models", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["mlp", "transformer"])
def test_eager_step_peak_memory_within_1_2x_of_numpy(name):
    bench = _bench()
    w = bench.WORKLOADS[name](np.float64)
    for row in ("numpy", "eager", "jit"):
        w.rows[row]()  # warm-up (jit traces)
    numpy_peak = bench.peak_bytes(w.rows["numpy"])
    for row in ("eager", "jit"):
        ratio = bench.peak_bytes(w.rows[row]) / numpy_peak
        assert ratio <= 1.2, f"{name}/{row}: peak memory {ratio:.2f}x the hand-written numpy step's"


def test_eager_sweep_holds_no_cotangent_past_its_node():
    # cumsum's VJP (one rule for all inputs) allocates x's cotangent; the per-input rules of the
    # tanh nodes after it in the sweep must not keep it alive (a variable left holding the last
    # rule's results did: 4 arrays of x's size at the peak instead of 3, LeNet's eager step 11.6
    # -> 12.9 MiB once its relus had per-input rules).
    n = 200_000
    x = ad.Tensor(np.ones(n), requires_grad=True)
    h = x
    for _ in range(3):
        h = ad.tanh(h)
    loss = ad.sum(ad.cumsum(h, axis=0))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    loss.backward()
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    # (the cotangent in flight, the next one, and the rule's 1 - tanh² temporary; 0.2 for small objects)
    assert peak / x.value.nbytes <= 3.2


def test_jit_gradient_frees_a_value_no_rule_reads_at_its_forward_reader():
    """Issue 26, item 2: in a traced gradient the backward part reads a forward value only where a
    rule read it when it was recorded, so the executor (which frees after the last reader) drops
    x @ W at the add that consumes it: add's VJP reads neither operand (reads=()), tanh's reads its
    output, matmul's reads x and W. Were forward values kept for the backward part, as the eager
    graph keeps them for its nodes, x @ W would live until the end of the gradient."""
    import autograd_dag as ad

    rng = np.random.default_rng(0)
    x, W, b = rng.standard_normal((8, 5)), rng.standard_normal((5, 3)), rng.standard_normal(3)
    step = ad.jit(ad.grad(lambda x, W, b: ad.tanh(x @ W + b).sum(), argnums=(0, 1, 2)))
    step(x, W, b)
    (program, _), = step.programs.values()
    x_node, w_node = program.inputs[:2]
    (product,) = [n.index for n in program.nodes if n.op == "matmul" and n.parents == (x_node, w_node)]
    (consumer,) = [n.index for n in program.nodes if product in n.parents]
    assert program.nodes[consumer].op == "add"
    _, steps = program._plan()
    freed_at = [k for k, _, _, _, frees, _ in steps if product in frees]
    assert freed_at == [consumer]
