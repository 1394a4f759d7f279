"""Keeping the C heap's pages between calls of a program, so that each call does not fault them in again.

numpy takes its arrays from the C library's ``malloc``. glibc's gives the top
of its heap back to the system (``sbrk``) when more than its trim threshold
is free there, and a program that frees its intermediates as it goes ends
every call with its whole working set free at the top: the heap shrinks, and
the next call faults every page of its arrays in again (a minor page fault:
the kernel maps and zeroes 4 KiB). On the seed-000 Transformer step that was
7,900-8,400 faults per call: a loop of its jit step took 66-69 ms a call on
this 2-core VM, 48 ms with the pages kept (benchmarks/bench_step_loop.py).

:func:`keep` raises glibc's trim threshold to a program's planned high-water
mark (:func:`planned_peak`; twice that, and 64 MiB at least), so the pages
freed at the end of one call stay mapped for the next: a program's later
calls reach the same peak, so the process's peak memory (resident set) does
not grow; it only stops dropping between calls. It also fixes glibc's mmap threshold at 32 MiB (glibc's own ceiling
for it), so arrays up to that size come from the heap from the first call
rather than after glibc has seen one that large freed. Both are process-wide
``mallopt`` settings; they only ever grow, and at most to :data:`MAX_KEEP`.
Elsewhere than glibc, or with ``AUTOGRAD_DAG_KEEP_HEAP=0`` in the environment,
nothing is changed.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> from autograd_dag import heap
    >>> step = ad.jit(ad.grad(lambda w: ad.tanh(w).sum()))
    >>> g = step(np.ones((512, 512)))   # planning its program raised glibc's trim threshold
    >>> heap.kept() == 0 or heap.kept() >= heap.MIN_KEEP   # 0 where the C library is not glibc
    True
"""

from __future__ import annotations

import ctypes
import math
import os


# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
# Arrays up to this size come from the heap: glibc's ceiling for its dynamic mmap threshold
# on 64-bit systems (mallopt refuses more). Larger arrays are mapped and unmapped each time.
MMAP_THRESHOLD = 32 << 20
# The least and the most free memory the heap is asked to keep at its top, whatever the
# program: glibc's own rule reaches the least (twice its largest mmap threshold) by itself.
MIN_KEEP, MAX_KEEP = 2 * MMAP_THRESHOLD, 1 << 30

_kept = 0          # the trim threshold set so far (0: not yet)
_mallopt = None    # libc's mallopt, once found; False where there is none


def _find_mallopt():
    global _mallopt
    if _mallopt is None:
        _mallopt = False
        if os.environ.get("AUTOGRAD_DAG_KEEP_HEAP", "").strip() != "0" and _is_glibc():
            try:
                _mallopt = ctypes.CDLL(None).mallopt
                _mallopt.argtypes, _mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
            except (OSError, AttributeError):
                _mallopt = False
    return _mallopt


def _is_glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (AttributeError, ValueError, OSError):
        return False


def keep(nbytes: int) -> int:
    """Let the heap keep twice ``nbytes`` free at its top between calls; returns the threshold now set.

    ``nbytes``: a program's planned high-water mark (:func:`planned_peak`).
    The threshold only grows (the largest program planned so far decides),
    up to :data:`MAX_KEEP`. Returns 0 where nothing is set (not glibc, or
    ``AUTOGRAD_DAG_KEEP_HEAP=0``).

    Example:
        >>> from autograd_dag import heap
        >>> t = heap.keep(8 << 20)   # from now on glibc keeps 64 MiB (MIN_KEEP) or more at its heap's top
        >>> t == 0 or t >= 64 << 20
        True
    """
    global _kept
    # Twice the plan's figure, as glibc's own rule sets the threshold to twice the largest block
    # it has unmapped: the heap grows past the live bytes (blocks too small for the next array;
    # an implementation's own temporaries, as convolution's columns), the Transformer step's top
    # 37.5 MiB free after a call against its plan's 35.8. At least glibc's own ceiling for that
    # rule: a lower threshold than glibc had reached made LeNet's step fault 900-1,900 pages a
    # call, against none before.
    want = min(max(2 * int(nbytes), MIN_KEEP), MAX_KEEP)
    if want <= _kept:
        return _kept
    mallopt = _find_mallopt()
    if not mallopt:
        return 0
    # The mmap threshold first: setting either parameter ends glibc's dynamic adjustment of
    # both, which would otherwise leave arrays over 128 KiB mapped afresh on every call.
    if mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD, want):
        _kept = want
    return _kept


def kept() -> int:
    """The trim threshold :func:`keep` has set so far in this process (0: none).

    Example:
        >>> from autograd_dag import heap
        >>> heap.kept() >= 0
        True
    """
    return _kept


def planned_peak(nodes, steps) -> int:
    """The most bytes a program's results hold at once, by its plan: an estimate from shapes and liveness.

    ``nodes``: the program's nodes; ``steps``: its plan
    (:func:`~autograd_dag.execution.plan_steps`). Every result counts as a new
    array until its last use (a view too: more than it holds), except one the
    plan writes into a dying operand, which takes that operand's bytes over
    (fewer if, when run, the operand is shared and a new array is made).
    Inputs and constants are not counted: the call does not allocate them.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> from autograd_dag.execution import plan_steps
        >>> p = ad.trace(lambda x: ad.exp(ad.exp(x)), np.ones(1000))
        >>> planned_peak(p.nodes, plan_steps(p.nodes, p.outputs))   # two arrays of 8,000 bytes at most
        16000
    """
    held: dict[int, int] = {}
    pop, prod = held.pop, math.prod
    live = peak = 0
    for k, _, _, _, frees, inplace in steps:
        if inplace is not None:
            # Written into a dying operand when that operand is the executor's alone (else a new array).
            live -= pop(inplace, 0)
        node = nodes[k]
        live += (size := prod(node.shape) * node.dtype.itemsize)
        held[k] = size
        if live > peak:
            peak = live
        for p in frees:
            live -= pop(p, 0)
    return peak
