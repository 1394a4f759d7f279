"""The modes every operation reads before it records: one set per thread.

Whether operations record (``no_grad``), whether they run on bare arrays (the
sweeps of a ``backward()`` without ``create_graph``), the name scope and the
sweeps' attribution, anomaly mode, the tracer's stack of running
transformations, the module call being named and the dropout seed blocks.
Each thread has its own, as PyTorch's grad mode and JAX's trace state are
per thread: two threads running ``backward()``, ``ad.grad`` or ``vmap`` at
once must not see each other's ``no_grad`` or sweep (with one process-wide
set, eager gradients on four threads were wrong in 31 of 160 calls). A new
thread starts from the defaults below, not from its creator's modes.

Storage only: each field has one owner module that writes it (named beside
it) and says what it means. The bottom of the import layers, so that every
owner can read it.

Why one object of slots in a ``threading.local`` rather than a thread-local
per field: ``core.apply`` reads several of them on every operation, and one
thread-local lookup (about 40 ns, ``benchmarks/bench_overhead.py``) followed
by slot reads costs less than one thread-local lookup per field.
"""

from __future__ import annotations

import threading


class Modes:
    """The modes of one thread; see the module docstring. Read with ``_per_thread.modes`` (or :func:`modes`)."""

    __slots__ = ("recording", "bare", "stand_in", "scope", "source_override", "anomaly",
                 "active", "recording_programs", "sinks", "naming", "seed_blocks", "replayed")

    def __init__(self) -> None:
        self.recording = True            # core: operations record nodes (False in no_grad)
        self.bare = False                # core: primitives on ndarrays return ndarrays (bare sweeps)
        self.stand_in = None             # core/autodiff: grad_program's placeholder values
        self.scope: tuple[str, ...] = ()  # scopes: the name_scope names in force
        self.source_override = None      # scopes: the sweeps' attribution of recorded nodes
        self.anomaly = False             # anomaly: detect_anomaly in force
        self.active: list = []           # trace_state: the running transformations
        self.recording_programs: list = []  # trace_state: those recording a program
        self.sinks: list = []            # trace_state: open collections of inner inputs
        self.naming = None               # nn.module: the module call being named
        self.seed_blocks: list = []      # primitives.random: open random_seed blocks
        self.replayed = 0                # primitives.random: depth of ad.checkpoint replays


class _PerThread(threading.local):
    def __init__(self) -> None:  # run once in each thread, on its first read
        self.modes = Modes()


_per_thread = _PerThread()


def modes() -> Modes:
    """This thread's modes.

    Example:
        >>> import autograd_dag as ad
        >>> from autograd_dag.modes import modes
        >>> with ad.no_grad():
        ...     modes().recording
        False
    """
    return _per_thread.modes
