"""numpy's float64 exp on −∞ against ordinary numbers: why the softargmax family masks after exp.

A 0/−∞ attention mask added before ``exp`` sends −∞ through numpy's exp, whose AVX-512
loop takes a slow path for it (3–6× an ordinary number's time on the project's Xeon);
without AVX-512 (``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR"``) there is no
difference. Best of 15 runs in CPU seconds of this process (the machine is shared).

Run: ``python benchmarks/exp_of_minus_inf.py``
"""

import time

import numpy as np


def best(a: np.ndarray, repeat: int = 15) -> float:
    out = np.empty_like(a)
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        np.exp(a, out=out)
        times.append(time.process_time() - t0)
    return min(times)


if __name__ == "__main__":
    n = 10 ** 6
    minus_inf, normal = best(np.full(n, -np.inf)), best(np.random.default_rng(0).standard_normal(n))
    print(f"numpy {np.__version__}: exp of 10^6 × −inf {minus_inf * 1e3:.1f} ms, of 10^6 normal numbers "
          f"{normal * 1e3:.1f} ms: {minus_inf / normal:.1f}×")
