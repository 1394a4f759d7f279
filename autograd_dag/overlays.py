"""Passes that run a program and give a number per node, for ``ad.render(p, overlay=...)``.

The renderer never evaluates anything: these passes do, and hand it an
:class:`~autograd_dag.render.overlay.Overlay` (a mapping ``{node index: number}``
with the options of its colour scale).

* :func:`gradient_norms`: the norm of the loss's gradient with respect to
  every node's value, from a real backward pass: where a gradient vanishes
  or explodes in a deep network.
* :func:`value_stats`: a statistic of each node's value (largest magnitude,
  range, mean, standard deviation, root mean square).
* :func:`nonfinite`: how many entries of each value are NaN or ±inf; the
  first non-finite node in topological order is outlined.
* :func:`saved_bytes`: the bytes of each value the recorded graph keeps for
  backward.
* :func:`profile`: seconds each node's function takes, from timed runs.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> prog = ad.trace(lambda x: ad.tanh(ad.tanh(x)).sum(), np.ones(3))
    >>> norms = ad.overlays.gradient_norms(prog, np.ones(3))
    >>> [round(norms[k], 4) for k in sorted(norms)]
    [0.4276, 1.0181, 1.7321, 1.0]
    >>> g = ad.render(prog, overlay=norms)
"""

from __future__ import annotations

import math
import statistics
import time

import numpy as np

from .core import Tensor, _recording_as, apply, attributed_to
from .errors import RenderError
from .program import NodeKind, Program
from .render.overlay import Overlay

__all__ = ["gradient_norms", "value_stats", "nonfinite", "saved_bytes", "profile", "Overlay"]


def _name(program: Program, k: int) -> str:
    node = program.nodes[k]
    return f"%{k} {node.name} ({node.op})" if node.name else f"%{k} {node.op}"


def _all_values(program: Program, args) -> list:
    """Every node's value, by Algorithm 4.1 (the program's own executor) with every node kept as an output."""
    keep = Program(program.nodes, program.inputs, range(len(program.nodes)), name=program.name,
                   single_output=False, kind=program.kind)
    # Non-finite values are what nonfinite() looks for; numpy's warnings about them are noise here.
    with np.errstate(all="ignore"):
        return list(keep(*args))


def gradient_norms(program: Program, *args, ord=2, cotangent=None) -> Overlay:
    """The norm of the gradient of ``program``'s output with respect to each node's value.

    Runs the program on ``args`` (arrays for its inputs) recording every node,
    with its parameters and floating-point inputs requiring a gradient, then
    one backward pass keeping every node's cotangent. Node k gets
    ``np.linalg.norm(dL/ds_k, ord)`` of its flattened gradient (``ord=2``:
    the Euclidean norm). Nodes the output does not depend on through a
    differentiated leaf get no number (drawn neutral); nodes whose gradient
    holds NaN or inf get none either and are outlined. A program with one
    non-scalar output is differentiated with a cotangent of ones (the
    gradient of its sum) unless ``cotangent`` is given.

    Returns an :class:`Overlay` (log scale when the norms span decades;
    collapsed scopes show the largest norm of their members).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x, w: (x * w).sum(), np.ones(2), np.array([3.0, 4.0]))
        >>> norms = ad.overlays.gradient_norms(prog, np.ones(2), np.array([3.0, 4.0]))
        >>> norms[0], norms[1], norms[3]   # |w|, |x|, d out/d out
        (5.0, 1.4142135623730951, 1.0)
    """
    if len(program.outputs) != 1:
        raise RenderError(f"gradient_norms: program '{program.name}' has {len(program.outputs)} outputs; "
                          f"it needs exactly one (a loss) to differentiate")
    checked = program._check_inputs(args)
    tensors: list[Tensor | None] = [None] * len(program.nodes)
    for k, a in zip(program.inputs, checked):
        value = a.value if isinstance(a, Tensor) else a
        tensors[k] = Tensor(value, requires_grad=np.dtype(value.dtype).kind in "fc")
    with _recording_as(True):
        for node in program.nodes:
            k = node.index
            if node.prim is None:
                if node.op is not NodeKind.INPUT:
                    tensors[k] = Tensor(node.value, requires_grad=node.op is NodeKind.PARAMETER)
                continue
            with attributed_to(node.source, node.scope):
                tensors[k] = apply(node.prim, *[tensors[p] for p in node.parents], **node.params)
            tensors[k].retain_grad()
        out = tensors[program.outputs[0]]
        if not out.requires_grad:
            raise RenderError(f"gradient_norms: the output of program '{program.name}' depends on no "
                              f"parameter and no floating-point input: there is no gradient to draw")
        with np.errstate(all="ignore"):
            out.backward(np.ones(out.shape, out.dtype) if cotangent is None else cotangent)
    values, outline = {}, []
    for k, t in enumerate(tensors):
        if t is None or t.grad is None:
            continue
        g = np.asarray(t.grad.value if isinstance(t.grad, Tensor) else t.grad)
        if not np.all(np.isfinite(g)):
            outline.append(k)
            continue
        values[k] = float(np.linalg.norm(g.ravel(), ord)) if g.size else 0.0
    text = (f"non-finite gradient: {len(outline)} node{'s' * (len(outline) != 1)}, "
            f"last in topological order {_name(program, outline[-1])}") if outline else None
    return Overlay(values, label=f"gradient norm \u2016\u2202L/\u2202node\u2016 (ord={ord})", scale="auto",
                   aggregate="max", outline=outline, outline_text=text)


_STATS = {
    "absmax": lambda v: np.max(np.abs(v)),
    "range": lambda v: np.max(v) - np.min(v),
    "min": np.min,
    "max": np.max,
    "mean": np.mean,
    "std": np.std,
    "rms": lambda v: np.sqrt(np.mean(np.square(v))),
}


def value_stats(program: Program, *args, stat: str = "absmax") -> Overlay:
    """A statistic of every node's value from one run of ``program`` on ``args``.

    ``stat``: ``"absmax"`` (largest magnitude), ``"range"`` (max − min),
    ``"min"``, ``"max"``, ``"mean"``, ``"std"`` or ``"rms"``, over the finite
    entries of the value. Empty values get no number; values holding NaN or inf
    get none and are outlined (see :func:`nonfinite`). Collapsed scopes show
    the largest statistic of their members.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x: ad.exp(x) - 1.0, np.zeros(2))
        >>> r = ad.overlays.value_stats(prog, np.array([0.0, 2.0]), stat="range")
        >>> round(r[0], 3), round(r[3], 3)
        (2.0, 6.389)
    """
    if stat not in _STATS:
        raise RenderError(f"value_stats: stat must be one of {tuple(_STATS)}, got {stat!r}")
    values, outline = {}, []
    for k, v in enumerate(_all_values(program, args)):
        v = np.asarray(v)
        if v.size == 0 or v.dtype.kind not in "biuf":
            continue
        v = v.astype(np.float64)
        if not np.all(np.isfinite(v)):
            outline.append(k)
            continue
        values[k] = float(_STATS[stat](v))
    text = f"non-finite value: first {_name(program, outline[0])}" if outline else None
    return Overlay(values, label=f"value {stat}", scale="linear" if stat in ("min", "max", "mean") else "auto",
                   aggregate="max", outline=outline, outline_text=text)


def nonfinite(program: Program, *args) -> Overlay:
    """How many entries of each node's value are NaN or ±inf, from one run of ``program`` on ``args``.

    Every node gets its count (0 when finite); the first node in topological
    order holding a non-finite value is outlined (where the trouble starts:
    every later one may only inherit it), and the legend names it.
    ``overlay.first`` is its index (None when every value is finite).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x: ad.exp(ad.log(x) * 2.0), np.ones(2))
        >>> o = ad.overlays.nonfinite(prog, np.array([1.0, -1.0]))
        >>> o.first, [o[k] for k in sorted(o)]
        (1, [0.0, 1.0, 0.0, 1.0, 1.0])
    """
    values = {}
    first = None
    for k, v in enumerate(_all_values(program, args)):
        v = np.asarray(v)
        bad = int(np.count_nonzero(~np.isfinite(v))) if v.dtype.kind in "fc" else 0
        values[k] = float(bad)
        if bad and first is None:
            first = k
    overlay = Overlay(values, label="non-finite entries (NaN, \u00b1inf)", scale="linear", aggregate="sum",
                      outline=() if first is None else (first,),
                      outline_text=None if first is None else f"first non-finite: {_name(program, first)}")
    overlay.first = first
    return overlay


def saved_bytes(program: Program, wrt=None) -> Overlay:
    """The bytes of each node's value that recording keeps for the backward pass, from shapes and dtypes.

    A recorded node holds its operands until backward has used them, so the
    value of node k is kept when k is an operand of a *differentiated* node
    (one with a parameter, or an input in ``wrt``, among its ancestors).
    ``wrt``: indices or names of the inputs to differentiate (default: every
    floating-point input). Nodes whose value is not kept get no number.
    Collapsed scopes show the sum of their members' bytes.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x: ad.exp(x * 2.0).sum(), np.ones(4))
        >>> o = ad.overlays.saved_bytes(prog)
        >>> {k: o[k] for k in sorted(o)}   # x, 2.0, x*2, exp(x*2): 8 bytes per float64
        {0: 32.0, 1: 8.0, 2: 32.0, 3: 32.0}
    """
    if wrt is None:
        differentiated = {k for k in program.inputs if np.dtype(program.nodes[k].dtype).kind in "fc"}
    else:
        names = [wrt] if isinstance(wrt, (int, str, np.integer)) else list(wrt)
        differentiated = set()
        for key in names:
            found = [int(key)] if isinstance(key, (int, np.integer)) else [
                n.index for n in program.nodes if n.name == key]
            if not found or not all(k in program.inputs for k in found):
                raise RenderError(f"saved_bytes: wrt names {key!r}, which is not an input of program "
                                  f"'{program.name}'; its inputs are "
                                  f"{[program.nodes[k].name or k for k in program.inputs]}")
            differentiated.update(found)
    values = {}
    for node in program.nodes:
        if node.op is NodeKind.PARAMETER or any(p in differentiated for p in node.parents):
            differentiated.add(node.index)
            if node.prim is not None:
                for p in node.parents:
                    parent = program.nodes[p]
                    values[p] = float(math.prod(parent.shape) * np.dtype(parent.dtype).itemsize)
    return Overlay(values, label="bytes kept for backward", scale="auto", aggregate="sum", unit="B")


def profile(program: Program, *args, repeat: int = 5) -> Overlay:
    """Seconds each node's function takes: the median over ``repeat`` timed runs of ``program`` on ``args``.

    Each run executes the nodes in topological order (Algorithm 4.1, every
    value kept until the run ends) with a clock read around every function
    node. Every node that computes something gets a time; roots (inputs,
    parameters, constants) compute nothing and get none. The overlay colours
    the bipartite view's function boxes; collapsed scopes show the sum of their
    members' times; ``sum(profile(...).values())`` is the run's total.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x: ad.exp(x) @ x, np.ones((50, 50)))
        >>> times = ad.profile(prog, np.ones((50, 50)), repeat=3)
        >>> sorted(times) == [1, 2] and all(t > 0 for t in times.values())
        True
    """
    if isinstance(repeat, bool) or not isinstance(repeat, (int, np.integer)) or repeat < 1:
        raise RenderError(f"profile: repeat must be a whole number >= 1, got {repeat!r}")
    checked = program._check_inputs(args)
    initial = [None if n.prim is not None or n.op is NodeKind.INPUT else n.value for n in program.nodes]
    for k, a in zip(program.inputs, checked):
        initial[k] = a.value if isinstance(a, Tensor) else a
    steps = [(n.index, n.prim.impl, n.parents, n.params or {}) for n in program.nodes if n.prim is not None]
    runs: dict[int, list[float]] = {k: [] for k, *_ in steps}
    clock = time.perf_counter
    with np.errstate(all="ignore"):
        for _ in range(int(repeat)):
            values = list(initial)
            for k, impl, parents, params in steps:
                operands = [values[p] for p in parents]
                start = clock()
                values[k] = impl(*operands, **params)
                runs[k].append(clock() - start)
    return Overlay({k: statistics.median(ts) for k, ts in runs.items()}, label="time per node",
                   scale="auto", aggregate="sum", target="function", unit="s")
