"""Batched derivative checks: ``vmap`` of the VJP (and JVP) against the per-example loop.

As torch's ``gradcheck(check_batched_grad=True)``: a batch of random
cotangents (tangents) is pushed through the VJP (JVP) once with :func:`vmap`
and once in a Python loop, and the two must agree. Finite differences cannot
see this: the derivative may be right for one cotangent and wrong for a
batch of them, when the batching rule of a primitive that the VJP (JVP)
runs mixes the examples (or drops the batch axis).
``check_grads(..., batched=True)`` calls :func:`batched_failures`.
"""

from __future__ import annotations

import warnings
from typing import Callable, Sequence

import numpy as np

from .autodiff import jvp, vjp
from .batching import vmap
from .core import Tensor
from .errors import AutogradDagError
from .tree import flatten, unflatten

# Examples in a batch: torch draws 2; 3 also tells "the first example" from "every other one".
BATCH = 3


def _arrays(tree) -> list[np.ndarray]:
    return [np.asarray(t.value if isinstance(t, Tensor) else t, dtype=np.float64) for t in flatten(tree)[0]]


def _first_difference(batched: list[np.ndarray], looped: list[list[np.ndarray]], atol: float, rtol: float,
                      labels: Sequence[str]) -> str | None:
    """Where vmap's result and the loop's differ: the example, the leaf and the entry, worst first; None when they agree.

    ``batched[k]`` has the batch axis first; ``looped[b][k]`` is example b's leaf k.
    """
    for k, label in enumerate(labels):
        stacked = np.stack([example[k] for example in looped])
        got = batched[k]
        if got.shape != stacked.shape:
            return f"    {label}: vmap gives shape {got.shape}, the loop {stacked.shape} (batch axis first)"
        err = np.abs(got - stacked)
        # Two summation orders of one derivative round differently, by ~1e-15 relative: far within tol.
        excess = err - (atol + rtol * np.maximum(np.abs(got), np.abs(stacked)))
        excess[~(np.isfinite(got) & np.isfinite(stacked)) & (np.isfinite(got) | np.isfinite(stacked))] = np.inf
        if not (excess > 0).any():
            continue
        where = np.unravel_index(int(np.argmax(excess)), excess.shape)
        b, entry = int(where[0]), tuple(int(i) for i in where[1:])
        bad_examples = sorted({int(i) for i in np.argwhere(excess > 0)[:, 0]})
        return (f"    example {b} of {len(looped)}, {label}, entry {entry}: vmap {got[where]: .6e}, "
                f"loop {stacked[where]: .6e}, abs err {err[where]:.2e}; {int((excess > 0).sum())} of "
                f"{excess.size} entries differ, in examples {bad_examples}: the batching rule of a primitive "
                f"that the derivative runs is wrong")
    return None


def batched_failures(f: Callable, floats: Sequence[np.ndarray], out_shapes: Sequence[tuple], out_td,
                     modes: Sequence[str], atol: float, rtol: float, seed: int,
                     arg_labels: Sequence[str]) -> list[str]:
    """The reports of ``vmap`` of f's VJP and JVP disagreeing with the per-example loop (empty when they agree).

    ``f`` takes the float arguments ``floats`` (one array each) and returns
    outputs of shapes ``out_shapes`` (structure ``out_td``); ``arg_labels``
    names each argument in a report. Reverse mode: BATCH random cotangents
    u (shape (BATCH, *out_shape) per output) through ``vmap(vjp_fn)`` and
    ``[vjp_fn(u[b]) for b]``, compared per argument. Forward mode, per
    argument (the others constants): BATCH random tangents through
    ``vmap(v ↦ jvp(f, x, v))`` and the loop, compared per output.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> from autograd_dag.batched_checking import batched_failures
        >>> from autograd_dag.tree import flatten
        >>> out_td = flatten(np.ones(3))[1]     # f returns one array
        >>> batched_failures(lambda x: ad.tanh(x), [np.ones(3)], [(3,)], out_td, ("rev", "fwd"),
        ...                  1e-6, 1e-5, 0, ["argument 0"])
        []
    """
    rng = np.random.default_rng(seed)
    failures = []
    out_labels = [f"output {k}" if len(out_shapes) > 1 else "output" for k in range(len(out_shapes))]
    # A primitive without a batching rule is looped by vmap, which is what it is compared with: not news here.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="vmap: .* has no batching rule")
        if "rev" in modes:
            _, f_vjp = vjp(f, *floats)
            us = [rng.standard_normal((BATCH,) + tuple(s)) for s in out_shapes]
            report = _compare(lambda *u: f_vjp(unflatten(out_td, list(u))), us, atol, rtol,
                              [f"d/d {label}" for label in arg_labels])
            if report:
                failures.append(f"  batched reverse mode (VJP): vmap over {BATCH} random cotangents u "
                                f"against the loop:\n{report}")
        if "fwd" in modes:
            for pos, label in enumerate(arg_labels):
                x = floats[pos]

                def alone(xi, pos=pos):
                    return f(*floats[:pos], xi, *floats[pos + 1:])

                vs = [rng.standard_normal((BATCH,) + np.shape(x))]
                report = _compare(lambda v, alone=alone, x=x: jvp(alone, (x,), (v,))[1], vs, atol, rtol,
                                  [f"{o} along {label}" for o in out_labels])
                if report:
                    failures.append(f"  {label}, batched forward mode (JVP): vmap over {BATCH} random "
                                    f"tangents v against the loop:\n{report}")
    return failures


def _compare(derivative: Callable, batch: list[np.ndarray], atol: float, rtol: float,
             labels: Sequence[str]) -> str | None:
    """``vmap(derivative)(*batch)`` against ``[derivative(*examples b)]``; the report, or None when they agree."""
    try:
        batched = _arrays(vmap(derivative)(*batch))
    except AutogradDagError as exc:
        return f"    vmap of the derivative failed: {exc}"
    looped = [_arrays(derivative(*[u[b] for u in batch])) for b in range(BATCH)]
    return _first_difference(batched, looped, atol, rtol, labels)
