"""Peak memory of one training step (issue 13): at most 1.2x the same step written by hand in numpy.

The models and the numpy versions are those of ``benchmarks/bench_models.py``
(MLP 784-512-512-10 at batch 256; seed 000's Transformer LM at batch 16 x 64);
memory is tracemalloc's high-water mark, which counts numpy's buffers. It is a
count of bytes, not a timing, so it is the same on a loaded machine.
"""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

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
