"""Randomness as a pure function of a seed: dropout's mask.

A program runs again on new arguments (``jit``), a checkpointed function runs
again for its backward pass, and ``vmap`` maps a function over examples: a
random draw inside any of them must be a function of an input, or the program
would keep one call's numbers (or the backward would differentiate another
mask than the forward used). So the mask is a primitive of the operand and an
integer ``seed`` operand, ``dropout_mask(x, seed)``: the same seed gives the same
mask, a jitted function given a new seed each step draws a new one.

Where the seed comes from (:func:`seed_for`): an explicit ``seed``; else the
innermost :func:`random_seed` block, whose k-th dropout call uses stream k of
its seed (the seed may be an argument of a jitted function); else, outside
any program-recording transformation, a fresh draw from a NumPy Generator.
"""

from __future__ import annotations

import contextlib

import numpy as np

from .. import core, trace_state
from ..core import Tensor, apply
from ..errors import AutogradDagError, ShapeError, TracingError, located, user_source
from ..modes import modes
from .registry import defprim
from .shapes import fmt
from .structure import broadcast_to

# ---------------------------------------------------------------- dropout_mask


def _entropy(seed) -> int:
    """An integer seed as SeedSequence entropy (non-negative: an int64 is read as its 64 bits)."""
    return int(np.asarray(seed, np.int64).view(np.uint64))


def _check_seed(seed) -> None:
    # jit passes a Python int argument as a float64 input: an integral float is that int.
    if seed.dtype.kind in "iu":
        return
    if seed.dtype.kind != "f" or not np.all(np.isfinite(seed) & (seed == np.round(seed))):
        raise ShapeError(f"dropout_mask: Expect: integer seeds. Actual: dtype {seed.dtype}"
                         + (f", values {np.array2string(seed, threshold=6)}" if seed.dtype.kind == "f" else ""))


def _dropout_mask_impl(x, seed, *, p, stream):
    # The mask of x[i…] comes from seed[i…] (seed's shape is a prefix of x's: vmap over seeds).
    _check_seed(seed)
    if x.dtype.kind != "f":  # (an integer mask could not hold 1/(1 − p))
        raise ShapeError(f"dropout_mask: Expect: a floating-point operand. Actual: dtype {x.dtype}")
    rest = x.shape[seed.ndim:]
    scale = x.dtype.type(1.0 / (1.0 - p))
    mask = np.empty(x.shape, x.dtype)
    for i in np.ndindex(seed.shape):
        # float64 uniforms for every dtype: a float32 model drops what the float64 one does.
        u = np.random.default_rng([stream, _entropy(seed[i])]).random(rest)
        mask[i] = (u >= p) * scale
    return mask


def _dropout_mask_rule(x, seed, *, p, stream):
    if np.dtype(seed.dtype).kind not in "iuf":
        raise ShapeError(f"dropout_mask: Expect: integer seeds. Actual: dtype {seed.dtype}")
    if tuple(x.shape[:seed.ndim]) != tuple(seed.shape):
        raise ShapeError(f"dropout_mask: Expect: a seed whose shape is a prefix of the operand's "
                         f"(one seed per leading entry). Actual: operand {fmt(x.shape)}, seed {fmt(seed.shape)}")
    return tuple(x.shape), x.dtype


def _dropout_mask_batch(prim, args, batched, *, p, stream):
    x, seed = args
    if batched[1]:  # a seed per example: each draws its own mask
        if not batched[0]:
            x = broadcast_to(x, (seed.shape[0],) + tuple(x.shape))
        return apply(prim, x, seed, p=p, stream=stream)
    # One seed for every example: the same mask for each, as the function gives one example.
    # (x gives only the shape and dtype: an example of zeros, not x[0], which an empty batch lacks.)
    example = Tensor(np.broadcast_to(np.zeros((), x.dtype), tuple(x.shape[1:])))
    return broadcast_to(apply(prim, example, seed, p=p, stream=stream), x.shape)


DROPOUT_MASK = defprim(
    "dropout_mask", _dropout_mask_impl,
    vjp=lambda ct, out, x, seed, *, p, stream: (None, None),  # (no JVP: both inputs are nondiff)
    shape=_dropout_mask_rule, nondiff=(0, 1), batch=_dropout_mask_batch)


def dropout_mask(x, seed, p: float, stream: int = 0) -> Tensor:
    """Dropout's scaled mask: 1/(1 − p) where a uniform draw is ≥ p (probability 1 − p), else 0.

    A pure function of ``seed`` (an integer; its shape a prefix of x's, one
    seed per leading entry) and ``stream``: the same seed gives the same mask.
    ``x`` gives only the shape and dtype and gets no derivative.
    Shapes: x (*s), seed (*s[:k]) -> (*s), x's dtype.
    Example: ``ad.primitives.random.dropout_mask(np.ones(4), 0, 0.5).value`` holds 0s and 2s.
    """
    p = float(p)
    if not 0.0 <= p < 1.0:
        raise ShapeError(f"dropout: Expect: a drop probability p in [0, 1). Actual: p = {p}"
                         f"{located(user_source())}")
    if not isinstance(seed, Tensor):
        seed = np.asarray(seed)
    return apply(DROPOUT_MASK, x, seed, p=p, stream=int(stream))

# ----------------------------------------------------------------- seeds

# This thread's modes hold the open random_seed blocks (``seed_blocks``, innermost last: [seed,
# the number of streams used, the number of program-recording transformations (jit, trace, vmap)
# open when the block was]) and the depth of the functions being run twice (``replayed``:
# ad.checkpoint's forward and replay).


@contextlib.contextmanager
def random_seed(seed):
    """Context manager: the dropout calls inside draw their masks from ``seed``, the k-th from stream k.

    ``seed`` is an int, or a 0-d integer Tensor — an argument of a jitted
    function, so that each step draws new masks from the program traced once:
    ``with ad.random_seed(step_seed): loss = model_loss(...)``.
    """
    blocks = modes().seed_blocks
    block = [seed, 0, trace_state.program_depth()]
    blocks.append(block)
    try:
        yield
    finally:
        blocks.remove(block)


@contextlib.contextmanager
def replayed():
    """Context manager for a function that runs again later (ad.checkpoint): its draws must repeat."""
    m = modes()
    m.replayed += 1
    try:
        yield
    finally:
        m.replayed -= 1


def seed_for(what: str, rng: np.random.Generator) -> tuple:
    """``(seed, stream)`` for one random operation ``what`` with no explicit seed (see the module docstring)."""
    m = modes()
    if m.replayed:
        raise AutogradDagError(
            f"{what} inside ad.checkpoint needs an explicit seed=: the function runs again for the "
            f"backward pass and must draw the same mask both times{located(user_source())}")
    block = m.seed_blocks[-1] if m.seed_blocks else None
    # A block opened outside the jit being traced, with a seed that is not its input, would freeze too.
    if block is not None and (block[2] == trace_state.program_depth() or core.traced(block[0])):
        block[1] += 1
        return block[0], block[1] - 1
    if trace_state.program_depth():
        raise TracingError(
            f"{what} inside {trace_state.innermost_program()} needs a seed that is an input: a seed drawn "
            f"now would be kept by the program and give the same mask on every call. Pass a seed "
            f"argument and wrap the model in `with ad.random_seed(seed):`, or pass seed= to the "
            f"call{located(user_source())}")
    return int(rng.integers(0, 2**63 - 1)), 0
