"""Threads for one operation: the pool that large numpy calls are split over, and the one setting.

numpy releases the GIL inside its ufunc loops, reductions and copies, and its
BLAS runs its own threads; so a large elementwise operation split into chunks
along its leading axis runs on every core, as PyTorch's intra-op parallelism
does, with no compiled code of ours. :func:`set_num_threads` is the one
setting (like ``torch.set_num_threads``): it sizes this pool and, through
``threadpoolctl``, numpy's BLAS. The default is every core this process may
run on, or ``AUTOGRAD_DAG_NUM_THREADS`` (then ``OMP_NUM_THREADS``) if set.

:func:`run_chunks` is what operations call: ``fn(start, stop)`` over the
chunks of ``range(n)``, the caller's thread taking the first chunk and the
pool's workers the others. A call made on a worker runs whole (one level of
splitting: a worker never waits for another worker), and so does a call
below its grain. Chunks start at multiples of :data:`ALIGN` items, so that an
elementwise loop meets each element in the same place of its vector loop as
an unsplit call does (the split result is the unsplit one, bit for bit).

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> x = np.linspace(0, 1, 1_000_000); y = np.empty_like(x)
    >>> ad.parallel.run_chunks(lambda a, b: np.exp(x[a:b], out=y[a:b]), len(x), grain=65536)
    >>> bool((y == np.exp(x)).all())
    True
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from typing import Callable

from .errors import AutogradDagError

# Chunk starts are multiples of this many items (64 float64 = 8 cache lines: no two
# threads write one line, and vector loops see the elements where an unsplit call does).
ALIGN = 64


def _default_threads() -> int:
    for var in ("AUTOGRAD_DAG_NUM_THREADS", "OMP_NUM_THREADS"):
        text = os.environ.get(var, "").strip()
        if text:
            try:
                n = int(text.split(",")[0])
            except ValueError:
                raise AutogradDagError(f"{var}={text!r}: expected a positive whole number of threads") from None
            if n >= 1:
                return n
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


_threads = _default_threads()
_local = threading.local()   # .worker: this thread is one of the pool's


class _Pool:
    """``size`` daemon threads taking ``(fn, start, stop, task)`` from one queue.

    A task is a lock the caller holds; the worker releases it when its chunk
    is done, and keeps the chunk's exception in ``task.error`` for the caller.
    """

    def __init__(self, size: int):
        self.size = size
        self.pid = os.getpid()
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        for i in range(size):
            threading.Thread(target=self._work, name=f"autograd_dag-{i}", daemon=True).start()

    def _work(self) -> None:
        _local.worker = True
        jobs = self.jobs
        while True:
            job = jobs.get()
            if job is None:
                return
            fn, start, stop, task = job
            try:
                fn(start, stop)
            except BaseException as exc:  # handed to the caller, which raises it
                task.error = exc
            task.release()

    def close(self) -> None:
        for _ in range(self.size):
            self.jobs.put(None)


class _Task:
    """One chunk's completion: a held lock, released by the worker that ran it."""

    __slots__ = ("lock", "error", "release")

    def __init__(self):
        self.lock = threading.Lock()
        self.lock.acquire()
        self.release = self.lock.release
        self.error = None


_pool: _Pool | None = None
_pool_guard = threading.Lock()


def _workers() -> _Pool:
    """The pool of ``get_num_threads() - 1`` workers (made on first use, and again after a fork)."""
    global _pool
    pool = _pool
    if pool is not None and pool.size == _threads - 1 and pool.pid == os.getpid():
        return pool
    with _pool_guard:
        if _pool is None or _pool.size != _threads - 1 or _pool.pid != os.getpid():
            if _pool is not None and _pool.pid == os.getpid():
                _pool.close()
            _pool = _Pool(_threads - 1)
        return _pool


def get_num_threads() -> int:
    """The number of threads an operation is split over (and numpy's BLAS runs on, once set)."""
    return _threads


def set_num_threads(n: int | None = None) -> None:
    """Run each large operation on ``n`` threads, and numpy's BLAS on ``n`` threads.

    ``None`` restores the default: every core this process may run on (or
    ``AUTOGRAD_DAG_NUM_THREADS``). One thread runs everything as plain numpy
    calls. BLAS threads are set through ``threadpoolctl`` when it is installed.

    Example:
        >>> import autograd_dag as ad
        >>> ad.set_num_threads(1); ad.get_num_threads()
        1
        >>> ad.set_num_threads()
    """
    global _threads
    if n is None:
        n = _default_threads()
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise AutogradDagError(f"set_num_threads({n!r}): expected a positive whole number of threads, or None")
    _threads = n
    _set_blas_threads(n)


def _set_blas_threads(n: int) -> None:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # numpy's BLAS keeps its own setting
        return
    threadpool_limits(limits=n, user_api="blas")


@contextlib.contextmanager
def num_threads(n: int | None):
    """``with ad.num_threads(1):`` runs the block on ``n`` threads, then restores the setting."""
    before = _threads
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(before)


def chunk_bounds(n: int, parts: int) -> list[int]:
    """``parts + 1`` increasing bounds splitting ``range(n)`` evenly, inner ones multiples of :data:`ALIGN`."""
    bounds = [0]
    for k in range(1, parts):
        bounds.append(min(n, (n * k // parts + ALIGN // 2) // ALIGN * ALIGN))
    bounds.append(n)
    return bounds


def run_chunks(fn: Callable[[int, int], object], n: int, *, grain: int) -> None:
    """Call ``fn(start, stop)`` over chunks of ``range(n)``, on the pool's threads and this one.

    ``grain``: the least number of items worth a chunk of its own (below
    ``2 * grain`` nothing is split). ``fn`` must release the GIL for its work
    (numpy's loops do) and write disjoint parts of its result; its exception,
    if any, is raised here after every chunk has finished.
    """
    parts = min(_threads, n // max(grain, 1))
    if parts <= 1 or getattr(_local, "worker", False):
        fn(0, n)
        return
    pool = _workers()
    bounds = chunk_bounds(n, parts)
    tasks = []
    for k in range(1, parts):
        task = _Task()
        pool.jobs.put((fn, bounds[k], bounds[k + 1], task))
        tasks.append(task)
    error = None
    try:
        fn(bounds[0], bounds[1])
    except BaseException as exc:
        error = exc
    for task in tasks:   # every chunk finishes before we return: none writes into a result we gave back
        task.lock.acquire()
        error = error or task.error
    if error is not None:
        raise error
