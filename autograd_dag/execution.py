"""The execution plan of a program: when each value is freed, and which results overwrite a dying operand.

Algorithm 4.1 runs the nodes in order; the plan adds its bookkeeping, made
once per program: every intermediate is released after its last use, and an
elementwise result is written (``out=``) into an operand that dies at that
node, as numpy's own temporary elision does for ``a + b``. Only arrays nothing
else can see are written into (:func:`disposable`).

(Keeping freed arrays in pools for later nodes and later calls was measured
and dropped: it held the MLP step's peak memory at 1.26x the hand-written
numpy step's, against 1.00x without, for no steady gain in time.)
"""

from __future__ import annotations

import inspect
import math
import sys

import numpy as np

from . import parallel, splitting
from .core import as_array, operation_error
from .errors import UndefinedDerivativeError, located
from .heap import keep, planned_peak
from .splitting import REDUCTIONS, split_reduction, split_ufunc

# Results smaller than this are not written into dying operands: below it the
# checks cost more than the allocation (the per-op chain of 10-element arrays
# ran at 3.4 instead of 1.1 µs per op), and malloc serves such blocks from its
# own free lists without touching the system.
MIN_BYTES = 1 << 16


def plan_steps(nodes, outputs) -> list[tuple]:
    """One step per function node of ``nodes`` (a program's, in order); ``outputs`` are never freed.

    A step is ``(k, impl, parents, params, frees, inplace)``:

    * ``frees``: the values whose last use is node k (outputs are kept):
      Algorithm 4.1 with every intermediate released as early as possible.
      In a traced gradient the backward nodes are the operations the VJP
      rules recorded, so a forward value's readers there are exactly the
      rules that read its numbers (what ``Primitive.reads`` declares, per
      input and more coarsely): none is kept for a rule that does not read it.
    * ``inplace``: a parent dying at node k, of the result's shape and dtype,
      whose array the result overwrites (``out=``) when the step runs and the
      array is the executor's alone (:func:`disposable`); or None.
    """
    # Liveness in one backward pass: going backward, a value's first reader is its last use.
    # (A last-use map and a list of frees per node cost twice as much on long programs, where
    # jit's first call pays for the plan.) Constants are never freed: the program keeps their
    # arrays, so dropping the executor's reference released nothing and cost a store per use
    # (2 % of the per-op chain's jit time, bench_overhead.py).
    live = set(outputs) | {n.index for n in nodes if n.prim is None and n.value is not None}
    frees_at = []
    for n in reversed(nodes):
        parents = n.parents
        if len(parents) > 1:
            # Each value once (x * x), oldest first: in the parents' order instead, later calls
            # of a 6,000-step chain's gradient ran 2 % more instructions (callgrind), the
            # allocators' free lists handing the next results other blocks.
            frees_at.append(sorted({p for p in parents if p not in live}))
        else:
            frees_at.append([p for p in parents if p not in live])
        live.update(parents)
    frees_at.reverse()
    # The steps and their tuples are made forward, in the order the executor reads them (tuples
    # made in the backward pass lay in memory against the executor's order: later calls of a
    # 100,000-step chain ran 4 % slower).
    writes_into_operand: dict = {}
    threads = parallel.get_num_threads()
    steps = []
    for n, frees in zip(nodes, frees_at):
        if n.prim is None:
            continue
        impl = n.prim.impl
        writes = writes_into_operand.get(id(impl))
        if writes is None:
            writes = writes_into_operand[id(impl)] = _writes_into_operand(impl)
        inplace = None
        if writes and frees and "out" not in n.params and _nbytes(n) >= MIN_BYTES:
            inplace = _dying_operand(nodes, n, frees)
        if threads > 1 and (type(impl) is np.ufunc or n.prim.name in REDUCTIONS):
            impl = _split(nodes, n, impl)
        steps.append((n.index, impl, n.parents, n.params or None, tuple(frees), inplace))
    # Later calls reach this call's high-water mark again: the C heap keeps its pages for them
    # instead of returning them at the end of each call and faulting them in again (heap.py).
    keep(planned_peak(nodes, steps))
    return steps


# Primitives whose result is always a new array, as a ufunc's is: never an operand nor a view of one
# (each checked over the primitive table's cases, tests/test_hunt_consistency.py). The others (reshape,
# transpose, getitem, astype, stop_gradient, einsum, a fused kernel given ``out=``) may return an
# operand's memory; a primitive missing here only costs a copy of an output it computes.
FRESH = frozenset({
    "sum", "mean", "max", "min", "prod", "all", "any", "norm", "logsumexp", "cumsum", "cumprod",
    "matmul", "linear", "linear_relu", "conv2d", "conv2d_bias", "relu", "logistic", "softplus", "erf", "erfc", "logistic_slope",
    "power", "clip", "round", "nan_to_num", "where", "concatenate", "pad", "roll", "take", "one_hot",
    "argmax", "argmin", "argsort", "softargmax", "layer_norm", "det", "inv", "solve", "tie_weights", "step",
})


def shared_outputs(nodes, outputs) -> frozenset[int]:
    """The positions of the ``outputs`` that may share memory with an input, a constant or an earlier output.

    Decided once per program from the nodes alone. An output computed by a
    ufunc or a :data:`FRESH` primitive owns its array; one computed by another
    primitive may be (a view of) an operand, and so on back. The program
    returns a copy of each of these: a jit output is the caller's own, as
    ``jax.jit``'s are fresh buffers (``jit(lambda t: t)(a)`` was ``a`` itself,
    and ``lambda t: (t, t)`` gave one array twice).
    """
    roots: dict[int, frozenset] = {}   # node -> the nodes whose arrays its array may be
    seen: set[int] = set()            # the roots of the outputs returned as they are
    shared = set()
    for position, k in enumerate(outputs):
        mine = _roots(nodes, k, roots)
        if seen & mine or any(nodes[j].prim is None for j in mine):
            shared.add(position)   # (its copy is new: it adds nothing to ``seen``)
        else:
            seen |= mine
    return frozenset(shared)


def _roots(nodes, k: int, roots: dict) -> frozenset:
    """``k`` and the nodes whose arrays node k's array may view (through primitives not :data:`FRESH`)."""
    stack = [k]
    while stack:   # (iterative: a chain of 100,000 reshapes)
        j = stack[-1]
        n = nodes[j]
        if j in roots:
            stack.pop()
        elif n.prim is None or "out" not in (n.params or ()) and (
                type(n.prim.impl) is np.ufunc and n.prim.impl.nout == 1 or n.prim.name in FRESH):
            roots[stack.pop()] = frozenset((j,))
        elif missing := [p for p in n.parents if p not in roots]:
            stack += missing
        else:
            roots[stack.pop()] = frozenset((j,)).union(*(roots[p] for p in n.parents))
    return roots[k]


def _split(nodes, node, impl):
    """``impl``, or for a large float elementwise ufunc or reduction its split form (:mod:`.splitting`).

    Only nodes at least twice their grain are split (the split form checks
    the grain and the threads again on each call). Operands are of one float
    dtype, or bool (a relu's mask); the result of that dtype or bool (a
    comparison): numpy picks the same loop with the preallocated result as
    without, and casts nothing into it.
    """
    dtype = np.dtype(node.dtype)
    operands = {np.dtype(nodes[p].dtype) for p in node.parents} - {np.dtype(bool)}
    if not (operands <= {dtype} and dtype.kind == "f" or len(operands) == 1 and operands.pop().kind == "f"
            and dtype.kind == "b"):
        return impl
    size = math.prod(node.shape)
    if isinstance(impl, np.ufunc):
        if impl.nout == 1 and impl.signature is None and size >= 2 * parallel.GRAINS[splitting.kind_of(impl)]:
            return split_ufunc(impl, tuple(node.shape), dtype)
        return impl
    name = node.prim.name
    if name in REDUCTIONS and len(node.parents) == 1 and "out" not in node.params and dtype.kind == "f" \
            and np.dtype(nodes[node.parents[0]].dtype) == dtype:
        shape = tuple(nodes[node.parents[0]].shape)
        if math.prod(shape) >= 2 * parallel.GRAINS["reduction"]:
            return split_reduction(name, impl, shape, tuple(node.shape), dtype)
    return impl


def _nbytes(node) -> int:
    return math.prod(node.shape) * np.dtype(node.dtype).itemsize


def _dying_operand(nodes, node, dying: tuple[int, ...]) -> int | None:
    """A parent of ``node`` dying there, computed by a node, of the result's shape and dtype; or None."""
    for p in node.parents:
        parent = nodes[p]
        if p in dying and parent.prim is not None and parent.shape == node.shape and parent.dtype == node.dtype:
            return p
    return None


def disposable(values: list, k: int) -> bool:
    """Whether ``values[k]`` is a C-contiguous array that nothing but this list refers to, nor sees the memory of.

    Then no view of it, no caller and no other node can see it change: a step
    may write its result into it. (A view holds a reference to its base, so an
    array with a live view has more references.) A view qualifies when its
    base owns its memory and is held by the view alone, as a reshaped product
    is before the residual added to it.
    """
    v = values[k]
    # References: the list, ``v`` and getrefcount's argument.
    if type(v) is not np.ndarray or sys.getrefcount(v) != 3:
        return False
    base = v.base
    # References to the base: the view, ``base`` and getrefcount's argument.
    if base is not None and (type(base) is not np.ndarray or base.base is not None or sys.getrefcount(base) != 3):
        return False
    flags = v.flags
    return flags.writeable and flags.c_contiguous


def buffer_of(array: np.ndarray) -> np.ndarray:
    """The array whose memory ``array`` views (itself if it owns its data)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _writes_into_operand(impl) -> bool:
    """Whether ``impl`` may be given one of its own operands as ``out=``.

    An elementwise numpy ufunc with one output may (a generalized one, such as
    matmul, may not); a Python implementation declaring a keyword-only ``out``
    promises to write its result there and to accept one of its operands.
    """
    if isinstance(impl, np.ufunc):
        return impl.nout == 1 and impl.signature is None
    try:
        param = inspect.signature(impl).parameters.get("out")
    except (TypeError, ValueError):
        return False
    return param is not None and param.kind is param.KEYWORD_ONLY


def step_error(program, k: int, values: list, exc: Exception) -> Exception:
    """The error to raise for ``exc``, raised by node ``k`` of ``program`` on ``values`` (its operands still there).

    It names the program, the node and the user's line the node was recorded
    at; an operation's error is the library's, with its operands' shapes.
    """
    node = program.nodes[k]
    if isinstance(exc, UndefinedDerivativeError):   # a check on the values: keep its kind and words
        return UndefinedDerivativeError(f"program '{program.name}': node %{node.index}: {exc}{located(node.source)}")
    args = [as_array(values[p]) for p in node.parents]
    error = operation_error(node.prim, args, node.params, exc)
    return type(error)(f"program '{program.name}': node %{node.index}: {error.detail}{located(node.source)}")
