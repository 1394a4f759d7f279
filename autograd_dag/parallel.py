"""Threads for one operation: the pool that large numpy calls are split over, and the one setting.

numpy releases the GIL inside its ufunc loops, reductions and copies, and its
BLAS runs its own threads; so a large elementwise operation split into chunks
along its leading axis runs on every core, as PyTorch's intra-op parallelism
does, with no compiled code of ours. :func:`set_num_threads` is the one
setting (like ``torch.set_num_threads``): it sizes this pool and, through
``threadpoolctl``, numpy's BLAS. The default is every core this process may
run on (followed if the process is pinned later), or
``AUTOGRAD_DAG_NUM_THREADS`` (then ``OMP_NUM_THREADS``) if set.

:func:`run_chunks` is what operations call: ``fn(start, stop)`` over the
chunks of ``range(n)``, one per thread, each claimed by whichever thread is
free: the caller's at once, the pool's workers as they wake (a late worker's
chunk is run by the caller). A call made on a worker runs whole (one level
of splitting: a worker never waits for another worker), and so does a call
below its grain (:data:`GRAINS`, measured per kind of work). Chunks start at multiples of :data:`ALIGN` items, so that an
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
import contextvars
import itertools
import os
import queue
import threading
import time
from typing import Callable

from threadpoolctl import threadpool_limits

from .errors import AutogradDagError

# Chunk starts are multiples of this many items (64 float64 = 8 cache lines: no two
# threads write one line, and vector loops see the elements where an unsplit call does).
ALIGN = 64
# Chunks per thread: the caller claims chunks until none is left, so a worker that wakes
# late (or whose core runs another process) costs at most one chunk's wait at the end.
CHUNKS_PER_THREAD = 1
# Seconds the caller spins (yielding its core) for a worker's last chunk before sleeping.
SPIN = 0.002

# Grains: the least number of items per thread worth splitting an operation for, by the kind of
# work; a call is split from twice its grain on 2 threads. Measured on this 2-vCPU VM (float64,
# `python benchmarks/bench_parallel.py --threads 2`, medians of 31 calls interleaved with the
# one-thread call, each split call finding its worker asleep as in a program's step):
#   cheap (add, multiply, maximum):  0.67-0.77x at 262,144 items, 1.14-1.21x at 524,288, 1.39-1.45x at 2**20;
#   transcendental (exp, log, tanh): 0.77-0.82x at 262,144, 1.13-1.32x at 524,288, 1.31-1.55x at 2**20;
#   reductions (sum/max over the last axis of 128, sum over axis 0, sum of all):
#       0.90-1.24x at 2**20, 1.11-1.63x at 2**21.
# The dispatch (waking a worker on the other vCPU: ~15 us of the caller's time, the worker running
# ~25-40 us later) is what they pay for; tests shrink them with :func:`grains`.
GRAINS = {
    "cheap": 1 << 18,
    "transcendental": 1 << 18,
    "reduction": 1 << 20,
}


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
    return _cores()


def _cores() -> int:
    """The number of cores this process may run on now."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _follows_cores() -> bool:
    """Whether the setting is the default taken from the cores (no variable, no set_num_threads(n))."""
    return not any(os.environ.get(var, "").strip() for var in ("AUTOGRAD_DAG_NUM_THREADS", "OMP_NUM_THREADS"))


_threads = _default_threads()
# The default follows the cores: a process pinned to one core after this import (as
# bench_models.py pins itself) splits nothing, instead of running two threads on one core.
_following = _follows_cores()
# Bumped by every change of the setting or of GRAINS: a program's cached plan, whose large
# steps are split, is made again when it differs.
epoch = 0
_local = threading.local()   # .worker: this thread is one of the pool's


class _Pool:
    """``size`` daemon threads, each taking a :class:`_Job` from one queue and joining in its chunks."""

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
            # In the caller's context: numpy's errstate (a context variable) holds in the chunks too.
            if job.context.copy().run(job.run):
                job.done.release()

    def close(self) -> None:
        for _ in range(self.size):
            self.jobs.put(None)


class _Job:
    """One split call: its chunks, claimed one at a time by whichever thread is free.

    The caller starts on the chunks at once and a worker joins when it wakes.
    Waking a thread on another, idle vCPU is slow on this VM: the waker spends
    ~15 µs in the wake and the woken thread runs ~25-40 µs later
    (``SimpleQueue.put``/``get`` with the two threads pinned to two cores).
    When each thread owned a fixed half, every call paid two such wakes (~85
    µs even for empty chunks) and the caller slept while a late worker's half
    waited. Claiming (``next`` on a counter, atomic under the GIL) lets the
    caller run the chunks of a worker that is late or whose core is busy with
    another process: an empty call costs ~3 µs. The thread finishing the
    last chunk releases ``done``.
    """

    __slots__ = ("fn", "bounds", "count", "claim", "finish", "done", "error", "context", "joined")

    def __init__(self, fn, bounds: list[int]):
        self.fn = fn
        self.bounds = bounds
        self.count = len(bounds) - 1
        self.claim = itertools.count().__next__
        self.finish = itertools.count(1).__next__
        self.done = threading.Lock()
        self.done.acquire()
        self.error = None
        self.context = contextvars.copy_context()
        self.joined = False

    def run(self) -> bool:
        """Run chunks until none is left; whether this thread finished the last one."""
        fn, bounds, count = self.fn, self.bounds, self.count
        last = False
        k = self.claim()
        while k < count:
            if self.error is None:   # after an error the remaining chunks are only counted
                try:
                    fn(bounds[k], bounds[k + 1])
                except BaseException as exc:  # handed to the caller, which raises it
                    if self.error is None:
                        self.error = exc
            if self.finish() == count:
                last = True
            k = self.claim()
        return last

    def wait(self) -> None:
        """Return when every chunk has finished (a chunk another thread runs: spin a little, then sleep)."""
        done = self.done
        if done.acquire(False):
            return
        # A worker is inside its last chunk: yielding keeps this core awake and hands the GIL
        # over when the chunk ends. (Sleeping on the lock instead, the scheduler came to put the
        # worker on the caller's core, and exp on 2**20 float64 ran at 0.93x one thread's time.)
        deadline = time.perf_counter() + SPIN
        while time.perf_counter() < deadline:
            os.sched_yield()
            if done.acquire(False):
                return
        done.acquire()

    def join(self) -> None:
        """Return when every chunk has run, running those no worker has taken yet here (``error`` then says how)."""
        if not self.joined:
            if not self.run():
                self.wait()
            self.joined = True


_pool: _Pool | None = None
_pool_guard = threading.Lock()


def _after_fork_in_child() -> None:
    # A fork while another thread made the pool left the child a held lock: its first split call hung.
    global _pool_guard
    _pool_guard = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


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


def on_worker() -> bool:
    """Whether this thread is one of the pool's workers (running a chunk for another thread)."""
    return getattr(_local, "worker", False)


def get_num_threads() -> int:
    """The number of threads an operation is split over (and numpy's BLAS runs on, once set)."""
    return _threads


def set_num_threads(n: int | None = None) -> None:
    """Run each large operation on ``n`` threads, and numpy's BLAS on ``n`` threads.

    ``None`` restores the default: every core this process may run on (or
    ``AUTOGRAD_DAG_NUM_THREADS``). One thread runs everything as plain numpy
    calls. BLAS threads are set through ``threadpoolctl``.

    Example:
        >>> import autograd_dag as ad
        >>> ad.set_num_threads(1); ad.get_num_threads()
        1
        >>> ad.set_num_threads()
    """
    global _threads, _following
    _following = n is None and _follows_cores()
    if n is None:
        n = _default_threads()
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise AutogradDagError(f"set_num_threads({n!r}): expected a positive whole number of threads, or None")
    _threads = n
    _changed()
    _set_blas_threads(n)


def _changed() -> None:
    """After a change of the setting or the grains: programs make their plans again."""
    global epoch
    epoch += 1


def _set_blas_threads(n: int) -> None:
    threadpool_limits(limits=n, user_api="blas")


@contextlib.contextmanager
def num_threads(n: int | None):
    """``with ad.num_threads(1):`` runs the block on ``n`` threads, then restores the setting."""
    before = None if _following else _threads
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(before)


@contextlib.contextmanager
def grains(**sizes: int):
    """``with grains(cheap=64):`` splits smaller operations in the block (tests), then restores :data:`GRAINS`.

    Example:
        >>> import autograd_dag as ad
        >>> with ad.parallel.grains(cheap=64):
        ...     ad.parallel.GRAINS["cheap"]
        64
    """
    unknown = set(sizes) - set(GRAINS)
    if unknown:
        raise AutogradDagError(f"grains({', '.join(sorted(unknown))}=...): the kinds of work are {sorted(GRAINS)}")
    before = dict(GRAINS)
    GRAINS.update(sizes)
    _changed()
    try:
        yield
    finally:
        GRAINS.clear()
        GRAINS.update(before)
        _changed()


def submit(fn: Callable[[], object]) -> _Job:
    """Start ``fn()`` on a worker of the pool; the job's ``join()`` returns once it has run.

    ``join()`` runs ``fn`` on the calling thread if no worker has taken it yet
    (a worker waking late costs no wait), and leaves its exception in the job's
    ``error`` (None if it returned). Used by the inter-op executor (scheduling).
    """
    job = _Job(lambda start, stop: fn(), [0, 1])
    _workers().jobs.put(job)
    return job


def chunk_bounds(n: int, parts: int, align: int = ALIGN) -> list[int]:
    """``parts + 1`` increasing bounds splitting ``range(n)`` evenly, inner ones multiples of ``align``."""
    bounds = [0]
    for k in range(1, parts):
        bounds.append(min(n, (n * k // parts + align // 2) // align * align))
    bounds.append(n)
    return bounds


def run_chunks(fn: Callable[[int, int], object], n: int, *, grain: int, align: int = ALIGN) -> None:
    """Call ``fn(start, stop)`` over chunks of ``range(n)``, on the pool's threads and this one.

    ``grain``: the least number of items worth a thread of its own (below
    ``2 * grain`` nothing is split). The chunks are fixed by ``n`` and the
    number of threads (``chunk_bounds``), not by which thread runs them, so a
    reduction combining per-chunk results in order is deterministic. ``fn``
    must release the GIL for its work (numpy's loops do) and write disjoint
    parts of its result; its first exception, if any, is raised here after
    every chunk has finished (chunks after it are skipped). ``align``: chunk
    starts are multiples of it (1 for rows of a larger array).
    """
    parts = min(_threads, n // max(grain, 1))
    if parts <= 1 or getattr(_local, "worker", False) or n < 2 * align:
        fn(0, n)
        return
    if _following:
        parts = min(parts, _cores())   # (a system call: only large calls come here)
        if parts <= 1:
            fn(0, n)
            return
    pool = _workers()
    job = _Job(fn, chunk_bounds(n, min(parts * CHUNKS_PER_THREAD, n // align), align))
    for _ in range(parts - 1):
        pool.jobs.put(job)
    if not job.run():
        job.wait()   # every chunk finishes before we return: none writes into a result we gave back
    if job.error is not None:
        raise job.error
