"""A stack of matrices against one matrix: numpy's matmul (one BLAS call per matrix) against one product.

``ad.matmul`` (and ``linear``) multiply a C-contiguous stack (..., m, k) by a
matrix (k, n) as one (… · m, k) × (k, n) product. This prints both ways for the
Transformer's feed-forward layers of bench_models (16 sequences of 64 tokens,
d_model 128, hidden 512), best of ``--repeat`` timings of 5 calls, one BLAS thread.

A second table: the six products of the Transformer's attention over 64
(batch × heads) matrices, in the layouts the step gives them (heads split by a
reshape and swapaxes view, Kᵀ and Vᵀ swapaxes views), by numpy's matmul and by
ad.matmul's implementation (which copies a stack of small transposed matrices
C-ordered first); glibc's heap kept, as a program keeps it.

Run:  python benchmarks/bench_matmul_stack.py [--repeat 25]
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np

from autograd_dag.primitives.linalg.products import _matmul_impl


def best_ms(f, repeat: int) -> float:
    f()
    return min(timeit.repeat(f, number=5, repeat=repeat)) / 5 * 1e3


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=25)
    args = p.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits
        limit = threadpool_limits(limits=1, user_api="blas")
    except ImportError:
        limit = None
    rng = np.random.default_rng(0)
    print("| product | dtype | np.matmul on the stack ms | one product (ad.matmul) ms | ratio |")
    print("|---|---|---|---|---|")
    for dtype in (np.float64, np.float32):
        for (b, t, k), n in (((16, 64, 128), 512), ((16, 64, 512), 128)):
            x = rng.standard_normal((b, t, k)).astype(dtype)
            w = rng.standard_normal((n, k)).astype(dtype)
            stacked = best_ms(lambda: np.matmul(x, w.T), args.repeat)
            ours = best_ms(lambda: _matmul_impl(x, w.T), args.repeat)
            assert np.allclose(np.matmul(x, w.T), _matmul_impl(x, w.T), rtol=1e-4 if dtype == np.float32 else 1e-12)
            print(f"| ({b}, {t}, {k}) @ ({k}, {n}) | {np.dtype(dtype).name} | {stacked:.2f} | {ours:.2f} | "
                  f"{ours / stacked:.2f} |")
    attention_products(rng, args.repeat)
    if limit is not None:
        limit.restore_original_limits()
    return 0


def attention_products(rng, repeat: int) -> None:
    from autograd_dag import heap
    heap.keep(64 << 20)
    B, H, T, dh = 16, 4, 64, 32

    def heads():
        return rng.standard_normal((B, T, H, dh)).swapaxes(1, 2)
    Q, K, V, ct = heads(), heads(), heads(), heads()
    A, dS = rng.standard_normal((B, H, T, T)), rng.standard_normal((B, H, T, T))
    T_ = lambda x: x.swapaxes(-1, -2)
    cases = (("scores Q Kᵀ", Q, T_(K)), ("A V", A, V), ("dA = ct Vᵀ", ct, T_(V)), ("dV = Aᵀ ct", T_(A), ct),
             ("dQ = dS K", dS, K), ("dKᵀ = Qᵀ dS", T_(Q), dS))
    print("\n| attention product, 64 matrices | np.matmul ms | ad.matmul's impl ms | ratio |")
    print("|---|---|---|---|")
    total = [0.0, 0.0]
    for name, a, b in cases:
        plain = best_ms(lambda: np.matmul(a, b), repeat)
        ours = best_ms(lambda: _matmul_impl(a, b), repeat)
        assert np.allclose(np.matmul(a, b), _matmul_impl(a, b), rtol=1e-12, atol=1e-12)
        total[0] += plain
        total[1] += ours
        print(f"| {name} {a.shape[-2:]} @ {b.shape[-2:]} | {plain:.3f} | {ours:.3f} | {ours / plain:.2f} |")
    print(f"| all six | {total[0]:.3f} | {total[1]:.3f} | {total[1] / total[0]:.2f} |")


if __name__ == "__main__":
    raise SystemExit(main())
