"""Reverse and forward mode on recorded programs, and the APIs built on them.

Reverse mode (the book's Algorithm 8.5): the recorded nodes are put in
topological order, then for k = K..1 node k's VJP maps its cotangent r_k to
contributions that are *added* into its parents' cotangents (fan-out rule).
Forward mode (Algorithm 8.4): in topological order, t_k = Σ_j ∂_j f_k [t_parent_j].

The VJP and JVP rules are Tensor operations, so when the sweep records
(``create_graph``, or any transformation nested inside another) the gradient
is itself a recorded program: it executes, differentiates again and renders.
When nothing records, the same rules run on bare values and each cotangent is
freed as soon as it has been consumed.
"""

from __future__ import annotations

import contextlib
import operator
import os
import threading
from heapq import heappop, heappush
from typing import Any, Callable, Sequence

import numpy as np

from . import core
from .core import Primitive, Tensor, _recording_as, apply, bare_values, check_finite
from .graph import paused_gc, reachable
from .heap import keep
from .errors import (AutogradDagError, MissingRuleError, NotDifferentiableError,
                     UndefinedDerivativeError, user_source, located)
from .primitives import elementwise as ew
from .passes import refuse_inputs_as_constants
from .kinds import ProgramKind
from .modes import modes
from .program import NodeKind, Program
from . import tracing
from .tracing import changed_since_recorded, graph_freed, refuse_complex, slot_input, topological_nodes, values_of
from .tree import flatten, leaves_like, unflatten

_NO_PARAMS: dict = {}
# (A C-level getter: the sweep reads the values of every node's parents.)
_value = operator.attrgetter("value")


def _accumulate(table: dict, key: int, value) -> None:
    previous = table.get(key)
    table[key] = value if previous is None else ew.add(previous, value)


class _Piece:
    """A recorded cotangent kept aside by a primitive's ``vjp_piece`` slot, with the function joining such pieces."""
    __slots__ = ("join", "piece")

    def __init__(self, join: Callable, piece):
        self.join, self.piece = join, piece


class _Collected:
    """A recorded cotangent still being summed: the running total, and the pieces kept aside.

    The pieces wait until their node is visited, when their primitive's join
    makes few Tensors of them (getitem's adjacent slabs join into one
    ``concatenate``): the L steps ``x[:, l]`` of a sequence cost O(L), not L
    arrays of x's size. Every other contribution is added on arrival, so a
    weight used at every step keeps one running sum.
    """
    __slots__ = ("total", "pieces")

    def __init__(self, total):
        self.total, self.pieces = total, []


def _recorded_add(previous, g):
    """``previous + g`` in a recorded sweep (``previous`` None for a first contribution)."""
    if type(g) is _Piece:
        if type(previous) is not _Collected:
            previous = _Collected(previous)
        previous.pieces.append(g)
        return previous
    if type(previous) is _Collected:
        previous.total = g if previous.total is None else ew.add(previous.total, g)
        return previous
    return g if previous is None else ew.add(previous, g)


def _recorded_total(ct):
    """A recorded cotangent as one Tensor: a :class:`_Collected` sum is added up, its pieces joined."""
    if type(ct) is not _Collected:
        return ct
    total = ct.total
    by_join: dict = {}
    for g in ct.pieces:
        by_join.setdefault(g.join, []).append(g.piece)
    for join, pieces in by_join.items():
        for term in join(pieces):
            total = term if total is None else ew.add(total, term)
    return total


def _ones_like(t: Tensor) -> Tensor:
    return Tensor(np.ones(t.shape, dtype=t.dtype))


def _value_of(x):
    """The plain array of a Tensor or an array (what the bare sweeps carry)."""
    return x.value if type(x) is Tensor else x


def _sweep_context(record: bool):
    return _recording_as(True) if record else bare_values()


def rule_error(prim: Primitive, rule: str, exc: Exception, node: Tensor, record: bool) -> Exception:
    """The error for a derivative rule that raised: say whose rule, and why it may have failed.

    A rule that runs on recorded Tensors (``record``: a derivative being
    differentiated again) but was written with numpy fails there only.
    """
    if isinstance(exc, UndefinedDerivativeError):
        # (raised by a primitive's check on the values: name the line that recorded the node)
        return exc if " (at " in str(exc) else UndefinedDerivativeError(f"{exc}{located(node.source)}")
    if isinstance(exc, (Warning, FloatingPointError)) or (
            isinstance(exc, AutogradDagError) and not (record and isinstance(exc, NotDifferentiableError))):
        return exc  # warnings the user made errors, and the library's own errors, pass unchanged
    detail = f"{type(exc).__name__}: {exc}"
    if record:
        return NotDifferentiableError(
            f"the {rule} rule of '{prim.name}' failed on recorded Tensors, which differentiating it "
            f"again needs ({detail}). Write the rule with ad operations (ad.multiply, ad.exp, ...), "
            f"not numpy functions on .value, to make it differentiable again{located(node.source)}")
    return AutogradDagError(f"the {rule} rule of '{prim.name}' raised {detail}{located(node.source)}")


def _relevant(order: list[Tensor], stop: set[int], leaves_are_targets: bool) -> set[int]:
    """Ids of the nodes that are a target (in ``stop``, or a leaf requiring a gradient
    when ``leaves_are_targets``) or lie on a path from one; ``order`` is topological."""
    relevant: set[int] = set()
    for t in order:
        tid = id(t)
        if tid in stop or (leaves_are_targets and t.prim is None and t.requires_grad):
            relevant.add(tid)
        elif t.parents:
            for p in t.parents:
                if id(p) in relevant:
                    relevant.add(tid)
                    break
    return relevant


def _refuse_missing_rules(order: list[Tensor], relevant: set[int] | None) -> None:
    """Raise for a node on a differentiated path whose primitive has no VJP rule.

    Done before the sweep starts: a sweep stopped halfway would leave the graph
    half-freed. ``relevant`` None: the eager sweep, where requires_grad tells.
    """
    for t in order:
        if t.parents and t.prim.vjp is None and (t.requires_grad if relevant is None else id(t) in relevant):
            raise MissingRuleError(f"'{t.prim.name}' has no VJP rule; cannot differentiate "
                                   f"through it{located(t.source)}", "VJP", t.prim.name)


def _scattered_into(prim: Primitive, ct, out, args: list, params: dict, source: Tensor,
                    cts: dict, owned: set) -> bool:
    """Add a scatter's cotangent (getitem, take) into its input's cotangent sum in place, if there is one.

    Only into a sum the sweep owns, of the result's dtype: then many slices of
    one array (``x[:, t]`` in a loop over t) cost O(slice) each, not O(x).
    False: nothing was done, the VJP runs as usual.
    """
    key = id(source)
    buffer = cts.get(key)
    if buffer is None or key not in owned or np.result_type(buffer, ct) != buffer.dtype:
        return False
    prim.vjp_into(buffer, ct, out, *args, **params)
    return True


def _refuse_changed_parents(t: Tensor, what: str) -> None:
    """Refuse node ``t`` if a parent was changed in place after ``t`` was recorded (core.changed_in_place)."""
    for p in t.parents:
        if p.serial < t.serial:  # (no parent is newer than its child otherwise)
            raise changed_since_recorded(p, t, what)


def _queue(t: Tensor, heap: list, waiting: dict, leaves: dict) -> None:
    """Queue ``t``, which just got its first cotangent, in the eager sweep: a node on the heap, a leaf aside."""
    if t.parents:
        heappush(heap, t.serial)
        waiting[t.serial] = t
    elif t.parents is None:
        raise graph_freed(t, "backward")
    else:
        leaves[id(t)] = t


def _wrong_rule_output(prim: Primitive, grads, t: Tensor) -> AutogradDagError:
    """The error for a VJP rule that returned no tuple, or one with the wrong number of cotangents."""
    n = len(t.parents)
    if type(grads) is not tuple and type(grads) is not list:
        return AutogradDagError(
            f"the VJP rule of '{prim.name}' returned a {type(grads).__name__}; it must return a tuple "
            f"with one cotangent per input ({n}), None for an input without one, e.g. "
            f"(ct * 2.0,){located(t.source)}")
    # Too few ended in a bare IndexError; too many were dropped unseen.
    return AutogradDagError(
        f"the VJP rule of '{prim.name}' returned {len(grads)} cotangent{'s' * (len(grads) != 1)} for "
        f"{n} input{'s' * (n != 1)}; it must return one per input, None for an input without one"
        f"{located(t.source)}")


def _fitted(g, p: Tensor, i: int, t: Tensor, record: bool):
    """Cotangent ``g`` of parent ``p`` (input ``i`` of ``t``) whose shape or dtype differs from p's: cast, or refused.

    A :class:`_Piece` passes as it is (its primitive's join makes it of p's shape).
    """
    if type(g) is _Piece:
        return g
    if not hasattr(g, "shape"):  # a Python number: no shape, and no dtype to keep
        raise AutogradDagError(
            f"VJP of '{t.prim.name}' returned a {type(g).__name__} as the cotangent of input {i}; it must be "
            f"a Tensor (or array) of the input's shape {p.shape}, e.g. ct * 2.0{located(t.source)}")
    if g.shape != p.value.shape:
        raise AutogradDagError(f"VJP of '{t.prim.name}' returned a cotangent of shape {g.shape} for an "
                               f"input of shape {p.shape}{located(t.source)}")
    # An input numpy promoted (float32 beside a float64 constant): its cotangent is a
    # float32 array too, as the input's own would be.
    dtype = p.value.dtype
    if g.dtype != dtype and dtype.kind == "f":
        return ew.astype(g, dtype) if record else g.astype(dtype)
    return g


def _piece(prim: Primitive, ct, out, args, params: dict | None) -> tuple:
    """A recorded node's cotangents: ``(piece,)``, its one input's kept aside by its primitive's ``vjp_piece``
    (joined with its likes when that input's sum is complete), or else the VJP's."""
    piece = prim.vjp_piece(ct, out, *args, **(params or _NO_PARAMS))
    if piece is not None:
        return (_Piece(*piece),)
    return prim.vjp(ct, out, *args, **params) if params else prim.vjp(ct, out, *args)


class _Sweep:
    """What both reverse sweeps carry from node to node, and the visit of one node they share.

    ``cts`` maps ``id(t)`` to t's cotangent sum so far; ``owned`` holds the
    ids whose sum the sweep allocated and only ``cts`` holds (not a VJP's
    output, which may alias its ``ct`` or a forward value): those sums grow in
    place as further fan-out contributions arrive. ``relevant``: the ids of
    the nodes needing a cotangent, or None when ``requires_grad`` tells (the
    eager sweep). ``retained``: the non-leaves whose cotangent the user asked
    to keep (Tensor.retain_grad), or None. ``heap``, ``waiting``, ``leaves``:
    the eager sweep's queue (:func:`_queue`), None in the program sweep.
    ``zeroed``: the parents whose VJP gave no cotangent (a zero: sign, round).
    """
    __slots__ = ("cts", "owned", "results", "relevant", "retained", "record", "retain_graph",
                 "anomaly", "outer", "last_change", "what", "heap", "waiting", "leaves", "zeroed", "hot")

    def __init__(self, relevant: set[int] | None, retained: dict | None, *, record: bool,
                 retain_graph: bool, what: str, queue: bool):
        self.cts: dict[int, Any] = {}
        self.owned: set[int] = set()
        self.results: dict[int, tuple] = {}
        self.relevant, self.retained, self.what = relevant, retained, what
        self.record, self.retain_graph = record, retain_graph
        self.anomaly = core.anomaly_enabled()
        self.outer = core.attribution()
        self.last_change = core._last_change
        self.heap, self.waiting, self.leaves = ([], {}, {}) if queue else (None, None, None)
        self.zeroed: list[Tensor] = []
        # What visit reads at every node, unpacked there in one step (fewer bytecodes per node
        # than an attribute each: the per-op chain's backward is this loop).
        self.hot = (self.cts, self.owned, relevant, record, self.anomaly, retained, self.last_change,
                    self.heap, self.waiting)

    def seed(self, outputs: Sequence[Tensor], cotangents: Sequence) -> None:
        """Start the sums at the outputs that need a cotangent (None: ones), queued in the eager sweep."""
        record, relevant = self.record, self.relevant
        for o, c in zip(outputs, cotangents):
            if o.requires_grad if relevant is None else id(o) in relevant:
                if c is None:
                    c = np.ones(o.shape, dtype=o.dtype)
                _accumulate(self.cts, id(o), (c if isinstance(c, Tensor) else Tensor(c)) if record
                            else _value_of(c))
        if self.heap is not None:
            for o in outputs:
                if id(o) in self.cts:
                    _queue(o, self.heap, self.waiting, self.leaves)

    def total(self, t: Tensor, ct):
        """``t``'s complete recorded cotangent as one Tensor, its adding up attributed to ``t``."""
        if type(ct) is not _Collected:
            return ct
        core.attribute(t.source, t.scope)
        ct = _recorded_total(ct)
        core.attribute(*self.outer)
        return ct

    def add(self, pid: int, previous, g) -> None:
        """Add ``g`` into the sum ``previous`` of node ``pid`` (not its first contribution)."""
        if self.record:
            self.cts[pid] = _recorded_add(previous, g)
        elif pid in self.owned and g.dtype == previous.dtype:
            # A sum this sweep made and nothing else holds: add in place.
            np.add(previous, g, out=previous)
        else:
            total = previous + g
            self.cts[pid] = total
            if type(total) is np.ndarray:  # (a 0-d sum comes back a numpy scalar)
                self.owned.add(pid)

    def scattered(self, t: Tensor, ct, out, args: list) -> bool:
        """Whether ``t``'s cotangent went into its input's sum in place (:func:`_scattered_into`); then ``t`` is done."""
        if not _scattered_into(t.prim, ct, out, args, t.params or _NO_PARAMS, t.parents[0], self.cts, self.owned):
            return False
        if self.anomaly:
            check_finite(ct, "gradient from the VJP", node=t)
        if not self.retain_graph:
            t.parents = None
        return True

    def visit(self, t: Tensor, ct=None) -> None:
        """Node ``t`` with its complete cotangent ``ct`` (None: popped here): the one place a VJP rule is called.

        Its cotangents, checked and cast to the parents' shapes and floating dtypes, are added
        into the sums of the parents needing one (``vjp_parts``: only their rules run); a parent
        reached first is queued (eager sweep). Unless ``retain_graph``, ``t`` then drops its parents.
        """
        cts, owned, relevant, record, anomaly, retained, last_change, heap, waiting = self.hot
        if ct is None:  # (the eager sweep: popping lets values go as soon as nothing else holds them)
            ct = self.total(t, cts.pop(id(t))) if record else cts.pop(id(t))
        if owned:
            owned.discard(id(t))
        if retained and id(t) in retained and retained[id(t)]() is t:
            self.results[id(t)] = (t, ct)
        if t.serial > last_change:  # recorded before a change in place: were its parents changed?
            _refuse_changed_parents(t, self.what)
        prim, parents, params = t.prim, t.parents, t.params  # (params None when empty)
        if record:
            args, out = parents, t
            core.attribute(t.source, t.scope)
        else:  # (one and two operands spelled out: list(map(_value, parents)) took 0.2 µs a node)
            args = ([parents[0].value, parents[1].value] if len(parents) == 2 else
                    [parents[0].value] if len(parents) == 1 else list(map(_value, parents)))
            out = t.value
            if prim.vjp_into is not None and self.scattered(t, ct, out, args):
                return
        parts = prim.vjp_parts
        if parts is None:
            try:
                if record and prim.vjp_piece is not None and not anomaly:
                    grads = _piece(prim, ct, out, args, params)
                else:
                    grads = prim.vjp(ct, out, *args, **params) if params else prim.vjp(ct, out, *args)
            except Exception as exc:
                raise rule_error(prim, "VJP", exc, t, record) from exc
            if type(grads) is not tuple and type(grads) is not list or len(grads) != len(parents):
                raise _wrong_rule_output(prim, grads, t)
        nondiff = prim.nondiff
        for i, p in enumerate(parents):
            if not (p.requires_grad if relevant is None else id(p) in relevant) or i in nondiff:
                continue
            if parts is None:
                g = grads[i]
            elif (part := parts[i]) is None:  # the rule of this input only (None: a zero derivative)
                g = None
            else:
                try:  # (one or two operands without parameters passed one by one: 0.1 µs less than *args)
                    g = (part(ct, out, *args, **params) if params else part(ct, out, args[0], args[1]) if len(args)
                         == 2 else part(ct, out, args[0]) if len(args) == 1 else part(ct, out, *args))
                except Exception as exc:
                    raise rule_error(prim, "VJP", exc, t, record) from exc
            if g is None:
                self.zeroed.append(p)   # (the eager sweep gives the leaves behind p zeros)
                continue
            if type(g) is Tensor and not record:
                g = g.value
            try:  # (builtin dtypes are shared objects: the identity test keeps the common case cheap)
                if g.shape != (v := p.value).shape or g.dtype is not v.dtype:
                    g = _fitted(g, p, i, t, record)
            except AttributeError:  # a piece, or a Python number
                g = _fitted(g, p, i, t, record)
            if anomaly:
                check_finite(g, "gradient from the VJP", node=t)
            pid = id(p)
            previous = cts.get(pid)
            if previous is None:
                cts[pid] = _recorded_add(None, g) if record else g
                if prim.vjp_into is not None and not record:
                    owned.add(pid)  # (a scatter's cotangent is a fresh array)
                if heap is not None and p.parents:
                    heappush(heap, p.serial)
                    waiting[p.serial] = p
                elif heap is not None:
                    _queue(p, heap, waiting, self.leaves)
            else:
                self.add(pid, previous, g)
        if record:
            core.attribute(*self.outer)
        if not self.retain_graph:
            t.parents = None


def reverse_sweep(outputs: Sequence[Tensor], cotangents: Sequence,
                  wrt: Sequence[Tensor] | None, *, create_graph: bool, retain_graph: bool) -> dict[int, tuple]:
    """Algorithm 8.5 over the recorded graph; returns ``{id(t): (t, cotangent)}`` for ``wrt``.

    With ``wrt=None`` every leaf that requires a gradient is a target (the
    eager ``backward()``: :func:`eager_sweep`); otherwise :func:`program_sweep`.
    With ``create_graph`` the VJP rules record (the cotangents are Tensors);
    otherwise they run on plain arrays and the cotangents are ndarrays. Unless
    ``retain_graph``, each visited node drops its parents (and with them the
    saved forward values) once its VJP has run.
    """
    if wrt is None:
        return eager_sweep(outputs, cotangents, create_graph=create_graph, retain_graph=retain_graph)
    return program_sweep(outputs, cotangents, wrt, create_graph=create_graph, retain_graph=retain_graph)


def eager_sweep(outputs: Sequence[Tensor], cotangents: Sequence, *, create_graph: bool,
                retain_graph: bool) -> dict[int, tuple]:
    """``backward()``'s sweep: every leaf requiring a gradient is a target, and so are retained nodes.

    No walk before the sweep: a node is queued when its first cotangent
    contribution arrives and visited newest first (smallest ``serial``, a
    min-heap of plain ints: cheap to compare). Every child of a node is newer
    than it, so all of a node's contributions are in when it is visited.
    ``requires_grad`` says which nodes lie on a path from a target. Leaves
    only collect their sums. A primitive without a VJP rule is still refused
    before anything is freed.
    """
    if core._without_vjp:
        _refuse_missing_rules(topological_nodes(outputs, set(), True), None)
    sweep = _Sweep(None, core._retained, record=create_graph, retain_graph=retain_graph, what="backward",
                   queue=True)
    sweep.seed(outputs, cotangents)
    cts, heap, waiting, record = sweep.cts, sweep.heap, sweep.waiting, create_graph
    try:
        with paused_gc(), _sweep_context(record):
            visit = sweep.visit
            while heap:  # (only nodes with parents are queued)
                visit(waiting.pop(heappop(heap)))
            for lid, leaf in sweep.leaves.items():
                sweep.results[lid] = (leaf, _recorded_total(cts[lid]) if record else cts[lid])
            if sweep.zeroed:
                _zero_leaves(sweep)
    finally:
        # Recorded derivative nodes were attributed to the forward node they
        # differentiate (source line and name scope); restore the caller's.
        core.attribute(*sweep.outer)
    return sweep.results


def _zero_leaves(sweep: _Sweep) -> None:
    """A zero gradient for each leaf requiring one that is behind ``sweep.zeroed`` and got none.

    A leaf whose every path to the output runs through an operation of zero
    derivative (sign, round, floor) has the gradient zero, as PyTorch's
    backward() and ``ad.grad`` give it, not None (``w.grad.value`` raised, and an
    optimizer skipped its weight decay). Walked only when such an operation ran;
    visited nodes have dropped their parents, so the walk stays in the part of
    the graph the sweep did not reach (a leaf behind a visited node got its sum).
    """
    for u in reachable(sweep.zeroed, lambda u: u.parents or ()):
        if u.prim is None and u.requires_grad and id(u) not in sweep.results:
            zero = np.zeros(u.shape, dtype=u.dtype)
            sweep.results[id(u)] = (u, Tensor(zero) if sweep.record else zero)


def program_sweep(outputs: Sequence[Tensor], cotangents: Sequence, wrt: Sequence[Tensor], *,
                  create_graph: bool, retain_graph: bool) -> dict[int, tuple]:
    """The sweep of grad, vjp and grad_program: from ``outputs`` to the targets ``wrt``, in reverse topological order.

    Only the nodes on a path from a target (``relevant``) get a cotangent; the
    sweep stops at the targets, which may be nodes as well as leaves.
    """
    stop = {id(t) for t in wrt}
    order = topological_nodes(outputs, stop)
    relevant = _relevant(order, stop, False)
    _refuse_missing_rules(order, relevant)
    sweep = _Sweep(relevant, None, record=create_graph, retain_graph=retain_graph, what="grad", queue=False)
    sweep.seed(outputs, cotangents)
    results, record = sweep.results, create_graph
    try:
        with paused_gc(), _sweep_context(record):
            pop_ct, visit = sweep.cts.pop, sweep.visit
            while order:
                t = order.pop()
                tid = id(t)
                ct = pop_ct(tid, None)  # (popping lets values go as soon as nothing else holds them)
                if ct is None:
                    continue
                if record:
                    ct = sweep.total(t, ct)
                if not t.parents or tid in stop:
                    results[tid] = (t, ct)
                else:
                    visit(t, ct)
    finally:
        core.attribute(*sweep.outer)  # (restores the caller's attribution, as in eager_sweep)
    return results


def forward_sweep(outputs: Sequence[Tensor], primals: Sequence[Tensor], tangents: Sequence,
                  *, create_graph: bool) -> dict[int, Any]:
    """Algorithm 8.4 over the recorded graph; returns ``{id(t): tangent}`` for reached nodes.

    With ``create_graph`` the JVP rules record (tangents are Tensors); otherwise
    they run on plain arrays.
    """
    stop = {id(p) for p in primals}
    tan: dict[int, Any] = {}
    anomaly = core.anomaly_enabled()
    with _sweep_context(create_graph):
        for p, t in zip(primals, tangents):
            _accumulate(tan, id(p), t if create_graph else _value_of(t))
        for t in topological_nodes(outputs, stop):
            if id(t) in stop or not t.parents:
                continue
            prim = t.prim
            ts = tuple(None if i in prim.nondiff else tan.get(id(p)) for i, p in enumerate(t.parents))
            if all(x is None for x in ts):
                continue
            if prim.jvp is None:
                raise MissingRuleError(f"'{prim.name}' has no JVP rule; cannot differentiate "
                                       f"through it in forward mode{located(t.source)}", "JVP", prim.name)
            try:
                if create_graph:
                    out = prim.jvp(ts, t, *t.parents, **(t.params or {}))
                else:
                    out = prim.jvp(ts, t.value, *[p.value for p in t.parents], **(t.params or {}))
            except Exception as exc:
                raise rule_error(prim, "JVP", exc, t, create_graph) from exc
            if out is not None:
                if not create_graph:
                    out = _value_of(out)
                if np.shape(out) != t.shape:
                    raise AutogradDagError(f"JVP of '{prim.name}' returned a tangent of shape {np.shape(out)} "
                                           f"for an output of shape {t.shape}{located(t.source)}")
                if getattr(out, "dtype", None) != t.dtype and t.dtype.kind == "f":
                    # A tangent has its primal's dtype (JAX's rule): x32 + i64 is float64 (numpy's
                    # promotion), but add's JVP passed x's float32 tangent on, and what followed
                    # summed it in float32. (The reverse sweep casts cotangents likewise: _fitted.)
                    out = ew.astype(out, t.dtype) if create_graph else np.asarray(out, dtype=t.dtype)
                if anomaly:
                    check_finite(out, "tangent from the JVP", node=t)
                tan[id(t)] = out
    return tan

# ------------------------------------------------------------- eager API


def backward(self: Tensor, grad=None, create_graph: bool = False, retain_graph: bool = False) -> None:
    """Fill ``.grad`` of every leaf with ``requires_grad=True`` behind this Tensor.

    Gradients accumulate across calls (``zero_grad()`` resets them), as in
    PyTorch. ``grad`` is the output cotangent (default: ones, for a scalar
    loss). With ``create_graph=True`` the gradients are recorded Tensors, so
    they can be differentiated again; the graph is then kept. Otherwise the
    graph's saved values are freed unless ``retain_graph=True``.

    Example:
        >>> import autograd_dag as ad
        >>> x = ad.Tensor([3.0], requires_grad=True)
        >>> (x * x).sum().backward()
        >>> x.grad.value
        array([6.])
    """
    if not self.requires_grad:
        raise AutogradDagError("backward: this Tensor does not require a gradient; mark an input with "
                               f"requires_grad=True (and don't compute it inside no_grad()){located(user_source())}")
    if grad is None:
        if self.size != 1:
            raise AutogradDagError(f"backward: grad can be implicitly created only for a scalar output; "
                                   f"this output has shape {self.shape}. Pass grad= of that shape"
                                   f"{located(user_source())}")
        ct = _ones_like(self)
    else:
        ct = grad if isinstance(grad, Tensor) else Tensor(np.asarray(grad, dtype=self.dtype))
        if ct.shape != self.shape:
            raise AutogradDagError(f"backward: grad has shape {ct.shape}, expected {self.shape}"
                                   f"{located(user_source())}")
    # A training loop's next step allocates what this one frees: glibc keeps those pages for it
    # (heap.py; its least threshold, 64 MiB: the tape's size is not known here without a walk).
    keep(0)
    grads = reverse_sweep([self], [ct], None, create_graph=create_graph,
                          retain_graph=retain_graph or create_graph)
    source = None if create_graph else user_source()   # (each new .grad is a leaf made on the user's line)
    with _recording_as(create_graph), _accumulating:
        for leaf, g in grads.values():
            if not create_graph:
                g = _grad_leaf(_value_of(g), source)
            leaf.grad = g if leaf.grad is None else ew.add(leaf.grad, g)


# backward() on several threads into shared leaves (a model the threads share) adds every
# gradient, as PyTorch's accumulation does: .grad's read-add-write is one thread's at a time.
_accumulating = threading.Lock()


def _after_fork() -> None:
    global _accumulating   # forked while another thread held it: the child's copy would stay held
    _accumulating = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)


def _grad_leaf(value, source) -> Tensor:
    """``Tensor(value)`` made where ``source`` (the user's line) was found once: what ``Tensor.__init__``
    makes of an array without ``requires_grad``, without a walk of the frames per gradient."""
    t = core._leaf(core.as_array(value))
    t.source = source
    return t


def zero_grad(tensors) -> None:
    """Reset ``.grad`` to None on each Tensor of an iterable. Shapes: any.

    Example:
        >>> import autograd_dag as ad
        >>> x = ad.Tensor([1.0], requires_grad=True)
        >>> (x * x).sum().backward()
        >>> ad.zero_grad([x])
        >>> x.grad is None
        True
    """
    for t in tensors:
        t.grad = None


# -------------------------------------------------------- functional API


def _nested(leaves) -> bool:
    return any(isinstance(x, Tensor) for x in leaves)


def _refuse_complex_outputs(outputs, what: str) -> None:
    for i, o in enumerate(outputs):
        refuse_complex(o, f"{what}: output {i}")


def _like(value, ref: Tensor, what: str, ref_what: str) -> Tensor:
    """``value`` (a cotangent or tangent) as a Tensor of ``ref``'s dtype, with ``ref``'s shape checked."""
    if not isinstance(value, Tensor):
        value = Tensor(np.asarray(value, dtype=ref.dtype))
    elif value.dtype != ref.dtype and value.dtype.kind == "f" and ref.dtype.kind == "f":
        # A Tensor (an outer transformation's) is cast as an array is, recorded: a float64
        # tangent of a float32 primal made every tangent of a float32 function float64.
        value = ew.astype(value, ref.dtype)
    if value.shape != ref.shape:
        raise AutogradDagError(f"{what} of shape {value.shape} for a {ref_what} of shape {ref.shape}")
    return value


def _zeros_for(t: Tensor, nested: bool):
    z = np.zeros(t.shape, dtype=t.dtype)
    return Tensor(z) if nested else z


def _finish(t, nested: bool):
    return t if nested else np.asarray(_value_of(t))


def _weak_slot(args, chosen) -> Callable:
    """``slot_input`` for the leaves of the arguments at positions ``chosen``, a Python number weak.

    A Python float, int or bool takes the floating dtype of the arguments' arrays (float64
    without any), as numpy 2 promotes a Python number and as the call f(w32, 3.0) computes: its
    slot was a float64 input, so ad.jvp(f, (w32, 3.0), ...) and vjp computed in float64 (JAX's:
    float32). ``jit`` takes its arguments so (jitting._arguments_as_arrays).
    """
    weak: list = []   # (found at the first Python number: most calls have none, and need no walk)

    def make(position, leaf, what):
        if position not in chosen:
            return None
        if type(leaf) in (float, int, bool):
            if not weak:
                floats = [np.dtype(x.dtype) for x in flatten(tuple(args))[0]
                          if isinstance(x, (Tensor, np.ndarray, np.generic)) and np.dtype(x.dtype).kind == "f"]
                weak.append(np.result_type(*floats) if floats else np.dtype(np.float64))
            leaf = np.array(leaf, weak[0])
        return slot_input(leaf, what)
    return make


def vjp(f: Callable, *args, has_aux: bool = False) -> tuple:
    """``(f(*args), vjp_fn)`` where ``vjp_fn(ct)`` returns ⟨ct, ∂f⟩ for each argument.

    Arguments may be arrays, scalars, Tensors or nested tuples/lists/dicts of
    them; cotangents come back in the same structure. On numpy inputs the
    results are numpy arrays; inside another transformation they are
    recorded Tensors. With ``has_aux=True``, ``f`` returns ``(out, aux)`` and
    the result is ``(out, vjp_fn, aux)``; ``aux`` is not differentiated
    (JAX's convention).

    Shapes: ``ct`` has f's output structure and shapes; ``vjp_fn(ct)`` returns
    a tuple with one entry per argument.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> out, f_vjp = ad.vjp(lambda x: x * x, np.array([1.0, 2.0]))
        >>> f_vjp(np.ones(2))
        (array([2., 4.]),)
    """
    make = _weak_slot(args, range(len(args)))
    rec = tracing.record(f, args, lambda position, leaf: make(position, leaf, "vjp: input"), what="vjp", has_aux=has_aux)
    inputs, out_leaves, out_td, nested = rec.inputs, rec.outputs, rec.out_tree, rec.nested
    _refuse_complex_outputs(out_leaves, "vjp")
    arg_td = flatten(args)[1]

    def vjp_fn(ct):
        ct_leaves = leaves_like(ct, out_td, "vjp: the cotangent", "output")
        cts = [_like(c, o, "vjp: cotangent", "output") for o, c in zip(out_leaves, ct_leaves)]
        inner_nested = nested or _nested(ct_leaves)
        grads = reverse_sweep(out_leaves, cts, inputs, create_graph=inner_nested, retain_graph=True)
        result = [_finish(grads[id(t)][1], inner_nested) if id(t) in grads else _zeros_for(t, inner_nested)
                  for t in inputs]
        return unflatten(arg_td, result)

    out_value = unflatten(out_td, [_finish(o, nested) for o in out_leaves])
    if has_aux:
        return out_value, vjp_fn, values_of(rec.aux, nested)
    return out_value, vjp_fn


def select_arguments(args: tuple, argnums, kwargs=None):
    """``(single, nums)`` for ``argnums``, an int or a tuple (or list) of ints, as JAX takes them.

    ``argnums`` counts positional arguments only: keyword arguments (``kwargs``) are passed to f
    and never differentiated, as in JAX.
    """
    def is_int(n):
        return isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_))
    single = is_int(argnums)
    if not single and not (isinstance(argnums, (tuple, list)) and all(is_int(n) for n in argnums)):
        raise AutogradDagError(f"argnums must be an int or a tuple of ints; got {argnums!r}"
                               f"{located(user_source())}")
    nums = (int(argnums),) if single else tuple(int(n) for n in argnums)
    for n in nums:
        if not -len(args) <= n < len(args):
            raise AutogradDagError(
                f"argnums={argnums!r} but the function got {len(args)} positional argument(s)"
                + (f" and keyword argument(s) {', '.join(map(repr, kwargs))}, which are never differentiated "
                   f"(argnums counts positional arguments, as in JAX): pass the one to differentiate "
                   f"positionally" if kwargs else "") + located(user_source()))
    if len({n % len(args) for n in nums}) != len(nums):
        raise AutogradDagError(f"argnums={argnums!r} names an argument twice")
    return single, nums


def value_and_grad(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning ``(f(*args), ∇f)`` for a scalar-valued ``f``.

    ``argnums`` (int or tuple) chooses the arguments differentiated; the
    gradient has that argument's structure (a tuple for a tuple of argnums).
    The chosen arguments must be real floating point: a gradient with
    respect to an integer is refused (as JAX does), never a silent zero.
    With ``has_aux=True``, ``f`` returns ``(value, aux)`` and the result is
    ``((value, aux), ∇f)``. Keyword arguments are passed to ``f`` and not
    differentiated (``argnums`` counts positional arguments, as in JAX).
    Shapes: ``f``'s arguments -> (() value, gradient shaped like the chosen argument(s)).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.value_and_grad(lambda x: (x ** 3).sum())(np.array([2.0]))
        (array(8.), array([12.]))
        >>> ad.value_and_grad(lambda x, scale: (scale * x ** 3).sum())(np.array([2.0]), scale=np.ones(1))
        (array(8.), array([12.]))
    """
    def wrapped(*args, **kwargs):
        single, nums = select_arguments(args, argnums, kwargs)
        nums = tuple(n % len(args) for n in nums)
        for n in nums:
            for i, leaf in enumerate(flatten(args[n])[0]):
                dtype = leaf.dtype if isinstance(leaf, (Tensor, np.ndarray, np.generic)) else np.asarray(leaf).dtype
                if dtype.kind in "biu":
                    raise NotDifferentiableError(
                        f"grad requires real floating-point inputs, but the differentiated argument "
                        f"(argnums={argnums!r}, leaf {i}) has dtype {dtype}. Pass x.astype(float) to "
                        f"differentiate it, or leave an index argument out of argnums{located(user_source())}")
        make = _weak_slot(args, nums)
        rec = tracing.record(f, args, lambda position, leaf: make(position, leaf, "grad: input"),
                             what="grad", has_aux=has_aux, kwargs=kwargs)
        inputs, nested, out = rec.inputs, rec.nested, rec.result
        if not isinstance(out, Tensor):
            raise AutogradDagError(f"grad: f must return a Tensor computed from its inputs; "
                                   f"got {type(out).__name__}{located(user_source())}")
        refuse_complex(out, "grad: the output")
        if out.size != 1:
            raise AutogradDagError(f"grad: f must return a scalar (one element); got shape {out.shape}. "
                                   f"Use ad.vjp or ad.jacobian for vector outputs{located(user_source())}")
        grads = reverse_sweep([out], [_ones_like(out)], inputs, create_graph=nested, retain_graph=nested)
        g = [unflatten(flatten(args[n])[1], [_finish(grads[id(t)][1], nested) if id(t) in grads
                                             else _zeros_for(t, nested) for t in rec.slots[n]]) for n in nums]
        value = _finish(out, nested)
        if has_aux:
            value = (value, values_of(rec.aux, nested))
        return value, (g[0] if single else tuple(g))
    wrapped.__name__ = f"value_and_grad_{getattr(f, '__name__', 'f')}"
    return wrapped


def grad(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """The gradient function of a scalar-valued ``f`` (reverse mode).

    Shapes: the gradient has the shape (and nesting) of the chosen argument.
    Compose freely: ``ad.grad(ad.grad(f))`` is the second derivative. With
    ``has_aux=True``, ``f`` returns ``(value, aux)`` and the result is
    ``(∇f, aux)``. Keyword arguments are passed to ``f`` and not
    differentiated (``argnums`` counts positional arguments, as in JAX).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> float(ad.grad(ad.grad(lambda x: x ** 3))(2.0))
        12.0
        >>> ad.grad(lambda w, x, scale=1.0: scale * ad.sum(x @ w))(np.ones(3), np.eye(2, 3), scale=2.0)
        array([2., 2., 0.])
    """
    return gradient_of(value_and_grad(f, argnums, has_aux), f, has_aux)


def gradient_of(vg: Callable, f: Callable, has_aux: bool) -> Callable:
    """``grad`` from a ``value_and_grad`` function ``vg`` of ``f``: the gradient alone (with aux)."""
    def wrapped(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    wrapped.__name__ = f"grad_{getattr(f, '__name__', 'f')}"
    return wrapped


def jvp(f: Callable, primals: Sequence, tangents: Sequence) -> tuple[Any, Any]:
    """``(f(*primals), ∂f(primals)[tangents])`` by forward mode.

    ``primals`` and ``tangents`` are tuples with the same structure and shapes.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.jvp(lambda x: x * x, (np.array([3.0]),), (np.array([1.0]),))
        (array([9.]), array([6.]))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise AutogradDagError("jvp: primals and tangents must be tuples (one entry per argument)")
    p_leaves, p_td = flatten(tuple(primals))
    t_leaves = leaves_like(tuple(tangents), p_td, "jvp: the tangents", "primals")
    for i, (leaf, t) in enumerate(zip(p_leaves, t_leaves)):
        dtype = leaf.dtype if isinstance(leaf, (Tensor, np.ndarray, np.generic)) else np.asarray(leaf).dtype
        if dtype.kind in "biu" and np.any(_value_of(t)):
            # An integer (an index) has no tangent: a nonzero one took its dtype (0.5 became 0),
            # a silently zero derivative.
            raise NotDifferentiableError(
                f"jvp: primal leaf {i} has dtype {dtype}, so it has no tangent (an index), but its tangent "
                f"is nonzero. Pass x.astype(float) to differentiate it, or a zero tangent"
                f"{located(user_source())}")
    make = _weak_slot(tuple(primals), range(len(primals)))
    rec = tracing.record(f, tuple(primals), lambda position, leaf: make(position, leaf, "jvp: input"), what="jvp")
    inputs, out_leaves, out_td = rec.inputs, rec.outputs, rec.out_tree
    _refuse_complex_outputs(out_leaves, "jvp")
    nested = rec.nested or _nested(t_leaves)
    tans = [_like(t, p, "jvp: tangent", "primal") for p, t in zip(inputs, t_leaves)]
    tan = forward_sweep(out_leaves, inputs, tans, create_graph=nested)
    out_tans = [_finish(tan[id(o)], nested) if id(o) in tan else _zeros_for(o, nested) for o in out_leaves]
    return (unflatten(out_td, [_finish(o, nested) for o in out_leaves]), unflatten(out_td, out_tans))


def hvp(f: Callable, x, v):
    """Hessian-vector product ∇²f(x)·v by forward-over-reverse, without forming ∇²f.

    Shapes: x, v of the same shape -> that shape.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.hvp(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]), np.array([1.0, 0.0]))
        array([6., 0.])
    """
    return jvp(grad(f), (x,), (v,))[1]

# ----------------------------------------------------- gradient programs


def placeholder(shape: tuple, dtype) -> np.ndarray:
    """A value of this shape and dtype to record a function on when its numbers do not matter.

    Ones, plus n on the diagonal of square trailing float matrices: the rules
    of det, inv, solve and cholesky refuse singular or indefinite matrices,
    and a diagonally dominant one is neither. Where a program's operations make
    a singular or rank-deficient matrix of them anyway (x @ x.T of a 2×3 x),
    ``grad_program`` records that operation's check without running it.
    """
    dtype = np.dtype(dtype)
    value = np.ones(shape, dtype=dtype)
    if len(shape) >= 2 and shape[-1] == shape[-2] and dtype.kind == "f":
        value = value + shape[-1] * np.eye(shape[-1], dtype=dtype)
    return value


@contextlib.contextmanager
def _standing_in():
    """Inside: an operation whose implementation raises on its operands records with :func:`_stand_in`'s value.

    For recording on placeholders: a check on values (a singular matrix, a
    masked-out row, an index out of range) that refuses the placeholders is a
    node of the recorded program all the same, and runs on every call's values.
    """
    m = modes()
    previous, m.stand_in = m.stand_in, _stand_in
    try:
        yield
    finally:
        m.stand_in = previous


def _stand_in(prim: Primitive, args, params: dict) -> np.ndarray | None:
    """A placeholder of ``prim``'s output for operands whose values its implementation refused, or None."""
    if prim.shape is None:
        return None
    try:
        shape, dtype = prim.shape(*args, **params)
    except Exception:
        return None  # (the operands themselves are wrong: apply raises the implementation's error)
    return placeholder(shape, dtype)


def _single_position(wrt) -> bool:
    return isinstance(wrt, (int, np.integer)) and not isinstance(wrt, bool)


def grad_program_positions(program: Program, wrt) -> tuple[int, ...]:
    """The input positions ``grad_program(program, wrt)`` differentiates, in its outputs' order: ``wrt``'s,
    or every floating-point input (refusing an integer one, or a ``wrt`` that is not positions)."""
    single = _single_position(wrt)
    n_in = len(program.inputs)
    nodes = [program.nodes[k] for k in program.inputs]
    if wrt is None:
        positions = tuple(p for p, node in enumerate(nodes) if np.dtype(node.dtype).kind == "f")
        if not positions:
            raise NotDifferentiableError(
                f"grad_program: program '{program.name}' has no floating-point input (dtypes "
                f"{', '.join(str(n.dtype) for n in nodes)}): integer inputs are indices, without a gradient")
        return positions
    if single:
        positions = (int(wrt),)
    elif isinstance(wrt, (tuple, list)) and all(isinstance(p, (int, np.integer)) and not isinstance(p, bool)
                                                for p in wrt):
        positions = tuple(int(p) for p in wrt)
    else:
        raise AutogradDagError(f"grad_program: wrt={wrt!r}; expected an input position (an int) or a "
                               f"tuple of them, or None for every floating-point input")
    for p in positions:
        if not 0 <= p < n_in:
            raise AutogradDagError(f"grad_program: wrt={wrt!r} but the program has {n_in} input(s)")
        if np.dtype(nodes[p].dtype).kind != "f":
            raise NotDifferentiableError(
                f"grad_program: input {p} ('{nodes[p].name}') has dtype {nodes[p].dtype}, so it has no "
                f"gradient (an index): leave it out of wrt, or make it float (x.astype(float)) before tracing")
    return positions


def _scalar_program_with_inputs(program) -> Program:
    """``program`` checked to be a Program with one scalar output; its parameters as inputs if it has none."""
    if not isinstance(program, Program):
        hint = ("ad.grad(f) differentiates a Python function, or record it first with ad.trace(f, *args)"
                if callable(program) else "ad.trace(f, *args) records one")
        raise AutogradDagError(f"grad_program: expected a Program (a recorded scalar function); got "
                               f"{type(program).__name__}: {hint}")
    if len(program.outputs) != 1:
        raise AutogradDagError(f"grad_program: the program has {len(program.outputs)} outputs; "
                               f"the gradient needs a single scalar output")
    out_node = program.nodes[program.outputs[0]]
    if int(np.prod(out_node.shape, dtype=np.int64)) != 1:
        raise AutogradDagError(f"grad_program: the output has shape {out_node.shape}; expected a scalar")
    if not program.inputs and any(n.op is NodeKind.PARAMETER for n in program.nodes):
        program = program.parameters_as_inputs()
    n_in = len(program.inputs)
    if n_in == 0:
        raise AutogradDagError(f"grad_program: program '{program.name}' has no inputs and no parameters "
                               f"to differentiate with respect to")
    return program


def grad_program(program: Program, wrt=None, *, with_value: bool = False) -> Program:
    """The program computing the gradient of a scalar ``program`` w.r.t. inputs ``wrt``.

    ``wrt`` is an input position or a tuple of them (default: every floating-point
    input; integer and boolean inputs, such as token ids, are held fixed: they stay
    inputs of the gradient program without a gradient, and naming one in ``wrt``
    raises :class:`NotDifferentiableError`, as ``ad.grad`` does for its ``argnums``).
    A program without inputs whose leaves are parameters (a model's loss
    built from ``Tensor(..., requires_grad=True)``) is differentiated with
    respect to its parameters, which become the gradient program's inputs.
    The result is an ordinary :class:`Program` (kind ``"gradient"``): it runs,
    prints, renders and can be differentiated again; a value the derivative
    rules compute again (``sin(x)`` for the VJP of ``cos``) is computed once
    (:meth:`Program.without_common_subexpressions`). With ``with_value`` its
    first output is the program's value.
    Shapes: a program with one scalar output -> a program with the same inputs and one
    output per ``wrt`` position, shaped like that input.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x: (x * x).sum(), np.ones(3))
        >>> gprog = ad.grad_program(prog)
        >>> gprog(np.array([1.0, 2.0, 3.0]))
        array([2., 4., 6.])
    """
    program = _scalar_program_with_inputs(program)
    single = _single_position(wrt)
    positions = grad_program_positions(program, wrt)
    inputs = [Tensor(placeholder(program.nodes[k].shape, program.nodes[k].dtype), name=program.nodes[k].name)
              for k in program.inputs]
    # The inputs are placeholders: only the recorded structure matters, so
    # numpy's warnings about their values (log 0, 0/0) mean nothing here, and a check
    # that refuses them (inv of the singular x @ x.T of ones) is recorded, not run:
    # it runs on every call's values.
    with _recording_as(True), _standing_in(), np.errstate(all="ignore"):
        out = program(*inputs)
        if isinstance(out, tuple):  # a program returning a 1-tuple
            (out,) = out
        seed = _ones_like(out)
        grads = reverse_sweep([out], [seed], [inputs[p] for p in positions],
                              create_graph=True, retain_graph=True)
        outs = []
        taken: set[int] = set()  # ids of outs: a scan of outs per input was O(inputs²)
        for p in positions:
            g = grads[id(inputs[p])][1] if id(inputs[p]) in grads else None
            if g is None:
                g = ew.multiply(inputs[p], 0.0)
            if g.prim is None or id(g) in taken:
                # A gradient that is an input, the seed, or another input's
                # gradient too (x + y) gets its own node, so that each output
                # has its own name.
                g = ew.multiply(g, 1.0)
            g.name = f"d{program.name}/d{inputs[p].name}"
            outs.append(g)
            taken.add(id(g))
    if with_value:
        outs.insert(0, out)
    result = Program.from_outputs(tuple(inputs), tuple(outs),
                                  name=f"grad_{program.name}", kind=ProgramKind.GRADIENT)
    # A rule that read its operands' numbers would leave the placeholders' in the program.
    refuse_inputs_as_constants(result, inputs, "grad_program")
    result.single_output = len(outs) == 1 and not with_value and (single or wrt is None)
    # Rules recompute forward values they need (cos's VJP makes its own sin(x)): each once, as
    # the book's reverse mode reuses them, so the program runs and renders without repeats.
    result = result.without_common_subexpressions()
    _record_roles(result, seed.value, positions, with_value)
    return result


def _record_roles(program: Program, seed, positions: tuple[int, ...], with_value: bool) -> None:
    """Write on ``program``'s nodes what ``grad_program`` made them: which output is the gradient of which
    input (``gradient_of``), and the backward pass (``in_backward_pass``: ``seed``'s node, the cotangent
    the reverse sweep started from, and every node computed from it), so that no reader (the renderer)
    has to guess them from names or values. Its nodes are its own (copies made by the pass above)."""
    nodes = program.nodes
    for k, p in zip(program.outputs[1:] if with_value else program.outputs, positions):
        nodes[k].gradient_of = p
    reached: set[int] = set()
    for node in nodes:   # parents come before their children
        if (node.value is seed) if node.prim is None else not reached.isdisjoint(node.parents):
            reached.add(node.index)
            node.in_backward_pass = True
