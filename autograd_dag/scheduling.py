"""Inter-op parallelism: a program's independent heavy nodes run on the pool while the calling thread goes on.

The serial executor (``Program.__call__``) runs the steps of
:func:`~autograd_dag.execution.plan_steps` one after another. Here the
calling thread runs ahead instead: a heavy step (a batched matrix product, a
large elementwise or reduction node; estimated from its shapes at plan time)
is handed to a worker of :mod:`autograd_dag.parallel`'s pool, and the calling
thread keeps running the steps that follow, waiting for the pending value only
at the first step that reads it. This is the ready queue of TensorFlow's and
ONNX Runtime's graph executors, flattened at plan time into the program's own
order: the trace already puts the independent products side by side (Q, K, V;
a product's two cotangents in the backward pass).

Correctness rests on what the serial plan already checks:

* **Freeing.** A pending task holds its own operands, so emptying a list slot
  frees nothing early; a handed-off step's own frees wait until it is joined
  (its operands are there again if it failed, for the error message).
* **In-place writes.** ``disposable`` counts references: an operand a pending
  task reads, or a view of whose base it reads, has more than the list's, so
  no step writes into it while the task runs (the task drops its operands only
  after its numpy call returned). A handed-off step writes into a dying operand
  only when it was the list's alone at hand-off, as the serial loop checks.
* **Errors.** When a step fails, every pending task is waited for and the
  first failing node in program order is reported by
  :func:`~autograd_dag.execution.step_error`, as the serial loop reports it.
  Each task runs in a copy of the caller's context (numpy's ``errstate``).

When: :func:`inter_op` (default ``None``: automatic, which is off until it is
measured to gain; see ``AUTO``). With one thread the serial loop runs unchanged.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> from autograd_dag import scheduling
    >>> f = ad.jit(lambda a, b: ad.sum(a @ a) + ad.sum(b @ b))
    >>> a = np.ones((4, 4)); b = np.eye(4)
    >>> with ad.num_threads(2), scheduling.inter_op(True, min_cost=0):
    ...     float(f(a, b))
    68.0
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from . import parallel
from .execution import disposable, step_error

# Automatic use (inter_op(None)): off, as measured on this 2-core VM at 2 threads (BLAS on 2):
# the Transformer step (float64) hands off 10 nodes (batched attention products, layer-norm
# Jacobians, bias sums) and ran 1.02-1.03x the serial loop (paired medians of 41 interleaved
# calls; the caller never waited at a join, but its own steps slowed by more than the ~5 ms the
# worker took off it), and the GEMMs that dominate the step already use both cores through BLAS.
# The MLP and LeNet steps have no node worth handing off. Worth trying with more cores.
AUTO = False

# A step is handed off only if its estimated time and the time of the independent steps that
# follow it (what the calling thread does meanwhile) both exceed this: a sleeping worker
# starts 25-140 µs after it is woken on this VM (parallel.py).
MIN_COST_NS = 150_000.0
# Throughput estimates for one core (float64, this VM): a GEMM's flops, and bytes moved by
# elementwise work (an add on 131,072 doubles: 3 MiB in ~0.12 ms).
FLOPS_PER_NS = 50.0
BYTES_PER_NS = 20.0
# A product larger than this (m·n·k of one BLAS call) is split over the cores by BLAS itself:
# with BLAS on more than one thread it is neither handed off nor counted as overlap.
BLAS_SPLITS = 1 << 20

# Views (a reshape of a contiguous array, a transpose): nothing to hand off.
_VIEWS = {"reshape", "transpose", "broadcast_to", "identity"}
_PRODUCTS = {"matmul", "linear", "linear_relu", "einsum", "conv2d", "conv2d_input_grad", "conv2d_weight_grad"}

_mode: bool | None = None
_min_cost = MIN_COST_NS


@contextlib.contextmanager
def inter_op(enabled: bool | None, *, min_cost: float | None = None):
    """``with scheduling.inter_op(True):`` runs jitted programs with independent nodes in parallel.

    ``enabled``: True (when ``get_num_threads() > 1``), False (never), None
    (automatic: :data:`AUTO`). ``min_cost``: the least estimated nanoseconds
    a node, and the work beside it, must take to be handed off (default
    :data:`MIN_COST_NS`; 0 hands off every node that has independent work
    after it, as tests do). Restores the previous setting on exit.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> from autograd_dag import scheduling
        >>> f = ad.jit(lambda x: ad.sum(ad.tanh(x)) * ad.sum(ad.exp(x)))
        >>> with ad.num_threads(2), scheduling.inter_op(True, min_cost=0):
        ...     float(f(np.zeros((2, 3))))
        0.0
    """
    global _mode, _min_cost
    before = _mode, _min_cost
    _mode, _min_cost = enabled, MIN_COST_NS if min_cost is None else float(min_cost)
    try:
        yield
    finally:
        _mode, _min_cost = before


class Schedule:
    """One entry per step, in program order: ``(step, handed_off, joins)``.

    ``joins``: the positions of handed-off steps whose values must be in place
    before this step runs (the first step reading each, or the last entry).
    """

    __slots__ = ("entries", "handed_off", "final_joins", "key")

    def __init__(self, entries, handed_off, final_joins, key):
        self.entries, self.handed_off, self.final_joins, self.key = entries, handed_off, final_joins, key


def schedule_for(program, steps: list) -> Schedule | None:
    """The schedule to run ``program``'s ``steps`` with at the current setting, or None for the serial loop.

    Made once per program and setting (``threads``, ``inter_op``) and kept.
    """
    if not (AUTO if _mode is None else _mode):
        return None
    threads = parallel.get_num_threads()
    if threads < 2:
        return None
    key = (steps, threads, _min_cost)   # (the plan's list itself: compared by identity)
    cached = getattr(program, "_inter_op_schedule", None)
    if cached is not None and cached.key[0] is steps and cached.key[1:] == key[1:]:
        return cached if cached.handed_off else None
    schedule = plan_schedule(program.nodes, steps, threads - 1, _min_cost)
    schedule.key = key
    program._inter_op_schedule = schedule
    return schedule if schedule.handed_off else None


def _cost_ns(nodes, node) -> tuple[float, bool]:
    """The estimated time of ``node`` on one core, and whether BLAS splits it itself."""
    if node.prim.name in _VIEWS:
        return 0.0, False
    parents = [nodes[p] for p in node.parents]
    size = math.prod(node.shape)
    nbytes = (size + sum(math.prod(p.shape) for p in parents)) * np.dtype(node.dtype).itemsize
    cost = nbytes / BYTES_PER_NS
    if node.prim.name in _PRODUCTS and len(parents) >= 2:
        a, b = parents[0].shape, parents[1].shape
        if node.prim.name in ("matmul", "linear", "linear_relu") and a:
            k = a[-1]
            flops = 2.0 * size * k
            # One BLAS call per matrix of the stack when both operands are stacks (numpy's loop).
            calls = math.prod(node.shape[:-2]) if len(a) > 2 and len(b) > 2 else 1
            per_call = size * k / max(calls, 1)
        else:   # einsum, convolutions: the geometric mean of the three sizes, as for a product
            flops = 2.0 * math.sqrt(float(math.prod(a)) * math.prod(b) * size)
            per_call = flops / 2
        return cost + flops / FLOPS_PER_NS, per_call >= BLAS_SPLITS
    return cost, False


def plan_schedule(nodes, steps: list, workers: int, min_cost: float) -> Schedule:
    """Which steps to hand off, on ``workers`` workers, and where each is joined.

    A simulation in program order with the estimated costs: a step is handed
    off when a worker is idle at that point, its cost and the cost of the
    steps before its first reader (the calling thread's work meanwhile: none
    of them depends on it) both reach ``min_cost``, and BLAS does not already
    spread it over the cores. A pending value is waited for at its first
    reader, or before the next product BLAS spreads, whichever comes first.

    Example (two products the size of attention heads, BLAS does not split them):
        >>> import numpy as np, autograd_dag as ad
        >>> from autograd_dag import scheduling
        >>> def f(a, b):
        ...     p, q = a @ a, b @ b
        ...     return ad.sum(p) + ad.sum(q)
        >>> prog = ad.trace(f, np.ones((16, 8, 32, 32)), np.ones((16, 8, 32, 32)))
        >>> _, steps = prog._plan()
        >>> s = scheduling.plan_schedule(prog.nodes, steps, 1, scheduling.MIN_COST_NS)
        >>> [prog.nodes[steps[i][0]].prim.name for i in s.handed_off]
        ['matmul']
    """
    blas_many = parallel.get_num_threads() > 1
    position = {}
    costs, split_by_blas = [], []
    for i, step in enumerate(steps):
        position[step[0]] = i
        cost, by_blas = _cost_ns(nodes, nodes[step[0]])
        costs.append(cost)
        split_by_blas.append(by_blas and blas_many)
    # The first reader of each step's value (len(steps): an output, or never read).
    first_reader = [len(steps)] * len(steps)
    for i in range(len(steps) - 1, -1, -1):
        for p in steps[i][2]:
            j = position.get(p)
            if j is not None:
                first_reader[j] = i
    # Beside a step: the calling thread's work until the first reader or the next product BLAS
    # spreads over the cores (which then has no core to spare: measured, the pair ran slower).
    prefix = [0.0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    next_split = [len(steps)] * (len(steps) + 1)
    for i in range(len(steps) - 1, -1, -1):
        next_split[i] = i if split_by_blas[i] else next_split[i + 1]
    joins_at: dict[int, list[int]] = {}
    done_at: dict[int, float] = {}
    idle_at = [0.0] * workers   # when each worker finishes what it was given
    now = 0.0                   # the calling thread's clock
    for i in range(len(steps)):
        for j in joins_at.get(i, ()):
            now = max(now, done_at[j])
        reader = min(first_reader[i], next_split[i + 1])
        w = min(range(workers), key=idle_at.__getitem__)
        if (idle_at[w] <= now and not split_by_blas[i] and reader > i + 1
                and costs[i] >= min_cost and prefix[reader] - prefix[i + 1] >= min_cost):
            done_at[i] = idle_at[w] = now + costs[i]
            # Joined before the next product BLAS spreads (it wants both cores), if not read before.
            joins_at.setdefault(reader, []).append(i)
        else:
            now += costs[i]
    entries = [(step, i in done_at, tuple(joins_at.get(i, ()))) for i, step in enumerate(steps)]
    return Schedule(entries, tuple(done_at), tuple(joins_at.get(len(steps), ())), None)


class _Pending:
    """A handed-off step, run on a worker of :mod:`parallel`'s pool (``parallel.submit``), in the caller's context.

    It holds the step's operands until its numpy call returned (they count
    against ``disposable``), then only its result, until the step is joined.
    A failed step keeps its operands, for the error message.
    """

    __slots__ = ("position", "step", "args", "kwargs", "result", "job")

    def __init__(self, position, step, args, params, out):
        self.position, self.step, self.args, self.result = position, step, args, None
        self.kwargs = dict(params or {})
        if out is not None:
            self.kwargs["out"] = out
        self.job = parallel.submit(self.run)

    def run(self) -> None:
        result = self.step[1](*self.args, **self.kwargs)
        self.args = self.kwargs = None   # the worker keeps nothing of the step's operands
        self.result = result

    def wait(self) -> None:
        self.job.join()


def run_schedule(program, schedule: Schedule, values: list) -> None:
    """Run every step of ``schedule`` on ``values`` (the program's, inputs and constants set), as the serial loop does.

    Raises a failing node's error as ``Program.__call__`` does; the results are
    the serial loop's, bit for bit (the same numpy calls on the same operands).
    """
    pending: dict[int, _Pending] = {}
    position = -1
    try:
        for position, (step, handed_off, joins) in enumerate(schedule.entries):
            for j in joins:
                _join(program, pending, j, values)
            k, impl, parents, params, frees, inplace = step
            if handed_off:
                # Checked before the operand list exists (it would count as a reference).
                out = values[inplace] if inplace is not None and disposable(values, inplace) else None
                pending[position] = _Pending(position, step, [values[p] for p in parents], params, out)
                out = None
                continue
            if inplace is not None and disposable(values, inplace):
                values[k] = impl(*[values[p] for p in parents], out=values[inplace], **(params or {}))
            else:
                values[k] = impl(*[values[p] for p in parents], **(params or {}))
            for p in frees:
                values[p] = None
        for j in schedule.final_joins:
            _join(program, pending, j, values)
    except _Failed as failed:
        _raise_first(program, pending, failed.position, failed.step, failed.exc, values)
    except Exception as exc:
        _raise_first(program, pending, position, schedule.entries[position][0], exc, values)
    finally:
        for p in pending.values():   # on an error: nothing keeps running after we return
            p.wait()


class _Failed(Exception):
    def __init__(self, position, step, exc):
        self.position, self.step, self.exc = position, step, exc


def _join(program, pending: dict, position: int, values: list) -> None:
    p = pending[position]
    p.wait()
    if p.job.error is not None:
        raise _Failed(position, p.step, p.job.error)
    del pending[position]
    k, frees = p.step[0], p.step[4]
    values[k], p.result = p.result, None
    for q in frees:
        values[q] = None


def _raise_first(program, pending: dict, position: int, step, exc: BaseException, values: list):
    """Raise the error of the first failing node in program order: ``step``'s, or a pending earlier one's."""
    for p in sorted(pending.values(), key=lambda p: p.position):
        p.wait()
        if p.job.error is not None and p.position <= position:   # (a failed join: itself)
            position, step, exc = p.position, p.step, p.job.error
            for q, a in zip(step[2], p.args):   # its operands, for the message
                values[q] = a
            break
    if isinstance(exc, (Warning, FloatingPointError)) or not isinstance(exc, Exception):
        raise exc from None  # warnings turned into errors by the user stay theirs
    raise step_error(program, step[0], values, exc) from None
