"""The execution plan of a program: when each value is freed, and which array each result is written into.

Algorithm 4.1 runs the nodes in order; the plan adds its bookkeeping, made
once per program: every intermediate is released after its last use, and a
result is written (``out=``) into an operand that dies at that node or into an
array of its shape and dtype that an earlier node or run left over. Only
arrays nothing else can see are written into (:func:`disposable`).
"""

from __future__ import annotations

import inspect
import sys

import numpy as np


def plan_steps(nodes, outputs) -> list[tuple]:
    """One step per function node of ``nodes`` (a program's, in order); ``outputs`` are never freed.

    A step is ``(k, impl, parents, params, frees, memory)``, ``memory`` None
    or ``(inplace, take, recycle)``:

    * ``frees``: the values whose last use is node k (outputs are kept):
      Algorithm 4.1 with every intermediate released as early as possible.
    * ``inplace``: a parent dying at node k whose array the result
      overwrites (``out=``), or None: one of the result's shape and dtype,
      when the implementation may be given its own operand as ``out``
      (:func:`out_kind`), as numpy's own temporary elision does for ``a + b``.
    * ``take``: the pool of spare arrays of node k's shape and dtype that
      its implementation may write into (it takes ``out=``), or None.
    * ``recycle``: ``(p, pool, capacity)`` for the freed values that such a
      step could reuse; they go back to their pool instead of to the
      allocator. The pools outlive the call, so that a program run again
      (a training loop) allocates almost nothing: on a loaded machine a
      freshly mapped page costs more than the arithmetic on it. A pool
      never holds more arrays than the program has alive at once.

    Whether an array is really the executor's alone (no view of it, no
    caller, no other node) is checked when the step runs (:func:`disposable`).
    """
    last_use = {}
    for node in nodes:
        for p in node.parents:
            last_use[p] = node.index
    keep = set(outputs)
    frees: list[list[int]] = [[] for _ in nodes]
    for p, k in last_use.items():
        if p not in keep:
            frees[k].append(p)
    kinds: dict = {}
    for n in nodes:
        if n.prim is not None and id(n.prim.impl) not in kinds:
            kinds[id(n.prim.impl)] = out_kind(n.prim.impl)
    # Small results are left to the allocator (see MIN_BYTES).
    kinds_of = {n.index: kinds[id(n.prim.impl)] if n.prim is not None and _nbytes(n) >= MIN_BYTES else 0
                for n in nodes}
    inplace = {n.index: _overwritable(nodes, n, frees[n.index], kinds_of[n.index])
               for n in nodes if n.prim is not None}
    # Nodes that write into a pooled array, by (shape, dtype); the values of
    # those keys are what the pools collect.
    takers = {n.index: (n.shape, n.dtype) for n in nodes
              if n.prim is not None and n.index not in keep and inplace[n.index] is None
              and kinds_of[n.index] and "out" not in n.params}
    keys = set(takers.values())
    capacity: dict = {}
    alive: dict = {}
    for n in nodes:
        key = (n.shape, n.dtype)
        if n.prim is not None and n.index not in keep and key in keys:
            alive[key] = alive.get(key, 0) + 1
            capacity[key] = max(capacity.get(key, 0), alive[key])
        for p in frees[n.index]:
            pkey = (nodes[p].shape, nodes[p].dtype)
            if nodes[p].prim is not None and pkey in keys:
                alive[pkey] -= 1
    pools: dict = {key: [] for key in keys}
    steps = []
    for n in nodes:
        if n.prim is None:
            continue
        recycle = tuple((p, pools[key], capacity[key]) for p in frees[n.index]
                        if nodes[p].prim is not None and (key := (nodes[p].shape, nodes[p].dtype)) in keys)
        take = takers.get(n.index)
        memory = (inplace[n.index], None if take is None else pools[take], recycle)
        steps.append((n.index, n.prim.impl, n.parents, n.params or None, tuple(frees[n.index]),
                      None if memory == (None, None, ()) else memory))
    return steps


# Results smaller than this are not written into dying or spare arrays: below
# it the checks cost more than the allocation (the per-op chain of 10-element
# arrays ran at 3.4 instead of 1.1 µs per op), and malloc serves such blocks
# from its own free lists without touching the system.
MIN_BYTES = 1 << 16


def _nbytes(node) -> int:
    return int(np.prod(node.shape, dtype=np.int64)) * np.dtype(node.dtype).itemsize


def _overwritable(nodes, node, dying: list[int], kind: int) -> int | None:
    """A parent of ``node`` dying there whose array the result can overwrite, or None."""
    if kind != _OWN_OPERAND or "out" in node.params:
        return None
    for p in node.parents:
        parent = nodes[p]
        if p in dying and parent.prim is not None and parent.shape == node.shape and parent.dtype == node.dtype:
            return p
    return None


def disposable(values: list, k: int) -> bool:
    """Whether ``values[k]`` is a C-contiguous array that owns its memory and that nothing but this list refers to.

    Then no view of it, no caller and no other node can see it change: a step
    may write its result into it. (A view holds a reference to its base, so an
    array with a live view has more references; one that does not own its
    memory may be a view of anything.)
    """
    v = values[k]
    # References: the list, ``v`` and getrefcount's argument.
    if type(v) is not np.ndarray or v.base is not None or sys.getrefcount(v) != 3:
        return False
    flags = v.flags
    return flags.writeable and flags.c_contiguous


def spare(pool: list):
    """An array from ``pool``, or None (the implementation then allocates one)."""
    try:
        return pool.pop()
    except IndexError:  # another thread running the same program took the last one
        return None


# How an implementation takes an output array (:func:`out_kind`): not at all, a
# fresh one, or also one of its own operands of the result's shape and dtype.
_FRESH, _OWN_OPERAND = 1, 2


def out_kind(impl) -> int:
    """0, ``_FRESH`` or ``_OWN_OPERAND``: whether ``impl`` can write its result into a given array.

    A numpy ufunc with one output takes ``out=``; an elementwise one may be
    given one of its operands, a generalized one (matmul) may not. A Python
    implementation declaring a keyword-only ``out`` promises both: to write
    its result there and to accept one of its operands as ``out``.
    """
    if isinstance(impl, np.ufunc):
        if impl.nout != 1:
            return 0
        return _OWN_OPERAND if impl.signature is None else _FRESH
    try:
        param = inspect.signature(impl).parameters.get("out")
    except (TypeError, ValueError):
        return 0
    return _OWN_OPERAND if param is not None and param.kind is param.KEYWORD_ONLY else 0
