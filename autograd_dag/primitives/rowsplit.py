"""Row-wise primitives split over the thread pool: each chunk of rows computed whole on one thread.

The fused primitives (softargmax, masked_softargmax, their Jacobian,
layer_norm's standardisation and its Jacobian, the cross-entropy's gradient)
do the same work on every row (every matrix) of their input; a chunk of rows
is a complete smaller instance of the operation, written into its rows of a
preallocated result, numpy releasing the GIL in each call. So a split result
is the unsplit one: rows are computed by the same calls on the same numbers,
and a quantity of the whole array (softargmax's common shift) is taken once
before splitting. (Bit for bit with OpenBLAS's SkylakeX, Haswell and
Sandybridge kernels; the row sums are BLAS products of fewer rows, which
another BLAS may block differently, by a few ulps.)

:data:`GRAIN` holds, per primitive, the least number of elements worth a
chunk of its own; below twice that (or on one thread) nothing is split and
the primitive runs its one-thread code unchanged. Tests lower a grain to
force splitting.
"""

from __future__ import annotations

from .. import parallel

# The least number of float64 elements (of 8 bytes: GRAIN × 8 bytes of any dtype) per chunk: nothing is
# split below twice this. Measured on this 2-vCPU VM
# (float64, ms, the minimum of 7 interleaved rounds, unsplit against split at ad.num_threads(2), BLAS on 2
# threads; benchmarks/bench_fused_threads.py and sizes around it, under the CPU lock). A dispatch costs
# ~85 µs (waking the sleeping worker), so only the Transformer's sizes and above gain:
#   layer_norm            (512, 128) 0.177 → 0.188; (1024, 128) 0.348 → 0.289; (2048, 128) 0.793 → 0.536
#   standardize_jacobian  (512, 128) 0.224 → 0.326; (1024, 128) 0.465 → 0.417; (2048, 128) 1.170 → 0.726
#   masked_softargmax     131,072: 0.380 → 0.427; 262,144 (16x4x64x64): 0.787 → 0.629
#   softargmax_jacobian   131,072: 0.210 → 0.208; 262,144: 0.520 → 0.337
#   softargmax            262,144: 0.610 → 0.515
#   cross-entropy grad    (512, 256) 0.335 → 0.369; (1024, 256) 0.762 → 0.659; (2048, 256) 1.557 → 1.080
# Not split (slower split, same measurements): standardized_sum (16x64x128: 0.200 → 0.260, its BLAS
# matrix–vector product already on two threads), the cross-entropy's forward (16x64x256: 0.466 → 0.505),
# a batched matmul (16x4x64x32 @ 16x4x32x64: 0.256 → 0.318) and linear's bias/relu epilogue
# (1024x512: 1.079 → 1.183 for linear, 1.346 → 1.246 for linear_relu: no gain beyond noise).
# Round 2 (i30-G): in a training step these splits lose. The seed-000 Transformer's step in a loop
# (benchmarks/bench_step_loop.py --rows jit, default threads = 2, under the CPU lock) took 52.1/54.4 ms
# median with the grains above against 50.6/52.7 ms with nothing split (float64), 25.7/27.1 against
# 24.7/24.8 ms (float32), and the eager step lost 2.5 ms to them (benchmarks/profile_eager.py, splitting
# on vs off): a step's row-wise operand was just written by the thread that runs the
# primitive and sits in its core's L2 cache (1-2 MB), and the other core's chunk fetches it from L3.
# The isolated figures above ran the same array over and over, warm in both cores' caches. So the grains
# are now 262,144 float64 elements (2 MiB) for every row-wise primitive: split only from 4 MiB, as
# parallel.GRAINS splits elementwise work only from ~524,288 float64 items; and counted in bytes
# (GRAIN × 8), so float32 splits from twice as many elements (a float32 row costs half as much).
GRAIN = {
    "layer_norm": 262144,
    "standardize_jacobian": 262144,
    "softmax_cross_entropy_grad": 262144,
    "masked_softargmax": 262144,
    "softargmax_jacobian": 262144,
    "softargmax": 262144,
}


def splits(name: str, x) -> bool:
    """Whether ``name``'s work over array x is split (at least two grains of bytes, more than one thread).

    The first test of a split path: cheap, so that a small input pays ~0.2 µs before its old code.
    Example: ``splits("layer_norm", np.ones((64, 64, 128)))`` is True on two threads or more.
    """
    return getattr(x, "nbytes", 0) >= 16 * GRAIN[name] and parallel.get_num_threads() > 1


def run_rows(name: str, fn, rows: int, row_size: int) -> None:
    """``fn(start, stop)`` over chunks of ``range(rows)``, each row ``row_size`` elements, split by ``GRAIN[name]``.

    Chunks start at multiples of 64 rows (run_chunks' alignment): a kernel that
    works on blocks of rows (a matrix–vector product over them) meets every row
    in the block it does in an unsplit call.
    Shapes: ``fn`` writes rows [start, stop) of its result.

    Example:
        >>> import numpy as np
        >>> x = np.arange(6.0 * 65536).reshape(-1, 6); y = np.empty_like(x)
        >>> run_rows("layer_norm", lambda a, b: np.cumsum(x[a:b], axis=1, out=y[a:b]), len(x), 6)
        >>> bool((y == np.cumsum(x, axis=1)).all())
        True
    """
    grain = -(-GRAIN[name] // max(row_size, 1))
    parallel.run_chunks(fn, rows, grain=grain)


def run_items(name: str, fn, items: int, item_size: int) -> None:
    """``fn(start, stop)`` over chunks of ``range(items)`` starting at any item (a stack of matrices).

    Shapes: ``fn`` writes items [start, stop) of its result, each ``item_size`` elements.
    Example: ``run_items("masked_softargmax", lambda a, b: np.exp(s[a:b], out=e[a:b]), len(s), s[0].size)``.
    """
    grain = -(-GRAIN[name] // max(item_size, 1))
    parallel.run_chunks(fn, items, grain=grain, align=1)
