"""Numerical derivatives with adaptive steps and Richardson extrapolation, with an error estimate per entry.

The method is numdifftools' (Brodtkorb & D'Errico): for each input entry, central
differences D(h) at a geometric sequence of steps h_k = h_max·r^-k (r = 2.5, 16 steps),
h_max = 4·eps^(1/7)·max(|x|, 1) (eps: the argument's dtype's machine epsilon);
Richardson's extrapolation over neighbouring steps cancels the h², h⁴ (…) terms
of D's error; each extrapolated value gets an error estimate, the difference
with its neighbour (truncation) plus the rounding of f amplified by 1/h; and per
Jacobian entry the value with the least estimate is kept. So every entry gets the
step that suits it: a large step where f is smooth (little rounding), a small one
near a singularity (little truncation), whatever the scale of x or of f.

f takes and returns plain numpy arrays (pytrees of them); no Tensor is needed.
Each Jacobian costs 1 + 2·num_steps·(number of input entries) evaluations of f.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from .core import Tensor
from .errors import AutogradDagError
from .tree import flatten, unflatten

# The steps go down from MAX_STEP_FACTOR·eps**(1/7)·max(|x|, 1) (2.3e-2 in float64: about where the
# rounding (eps/h) and the truncation left by two extrapolations (h⁶) of a well-scaled f balance)
# by STEP_RATIO, NUM_STEPS of them, to 2.4e-8 in float64: an f scaled far more steeply than x
# (sin(1e6·x)) or a singularity 1e-5 away still gets steps that resolve it. Tuned on
# benchmarks/bench_numdiff.py (ratio 4 with 10 steps: 3e-13 on exp instead of 3e-14).
MAX_STEP_FACTOR = 4.0
STEP_RATIO = 2.5
NUM_STEPS = 16
RICHARDSON_TERMS = 2
# Each evaluation of f is taken to carry a rounding error of up to this many eps·|f|:
# f is usually many operations, each rounding once.
ROUNDING_ULPS = 10.0


class Estimate(NamedTuple):
    """A numerical derivative: ``value``, an ``error`` estimate of the same structure, and f's evaluation count."""
    value: Any
    error: Any
    evaluations: int


def _as_array(x):
    return np.asarray(x.value if isinstance(x, Tensor) else x)


def _is_float(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind == "f"


def _checked_leaves(what: str, f: Callable, args) -> tuple[list, Any]:
    if not callable(f):
        raise AutogradDagError(f"{what}: f must be callable, got {type(f).__name__}")
    if not isinstance(args, (tuple, list)):
        raise AutogradDagError(f"{what}: args must be a tuple of arguments, e.g. (x,) or (x, w); "
                               f"got {type(args).__name__}")
    leaves, td = flatten(tuple(args))
    out = []
    for k, x in enumerate(leaves):
        if isinstance(x, float):
            x = np.asarray(x, dtype=np.float64)
        elif isinstance(x, (np.ndarray, np.generic, Tensor)):
            x = _as_array(x)
            if x.dtype.kind == "c":
                raise AutogradDagError(f"{what}: argument leaf {k} is complex ({x.dtype}); only real "
                                       f"arguments are differentiated (pass the real and imaginary parts)")
        out.append(x)
    if not any(_is_float(x) for x in out):
        raise AutogradDagError(f"{what}: no floating-point argument to differentiate (integer arguments "
                               f"are held fixed); pass the point as floats, e.g. x.astype(np.float64)")
    return out, td


def _checked_options(what: str, order, step_ratio, num_steps, richardson_terms) -> int:
    """The number of Richardson levels; refuses options that leave nothing to extrapolate or estimate."""
    if order not in (2, 4) or isinstance(order, bool):
        raise AutogradDagError(f"{what}: order must be 2 or 4 (the central difference's error order), "
                               f"got {order!r}")
    if not (isinstance(step_ratio, (int, float)) and np.isfinite(step_ratio) and step_ratio > 1):
        raise AutogradDagError(f"{what}: step_ratio must be a finite number > 1, got {step_ratio!r}")
    # An order-4 difference is the order-2 one extrapolated once: one more level.
    levels = richardson_terms + (order == 4)
    if isinstance(richardson_terms, bool) or not isinstance(richardson_terms, int) or richardson_terms < 0:
        raise AutogradDagError(f"{what}: richardson_terms must be a whole number >= 0, got {richardson_terms!r}")
    # Each level uses one more step; the error estimate compares two neighbours.
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < levels + 2:
        raise AutogradDagError(f"{what}: num_steps must be a whole number >= {levels + 2} (richardson_terms "
                               f"{richardson_terms}, order {order}, and two values to estimate the error), "
                               f"got {num_steps!r}")
    return levels


def _evaluate(what: str, f: Callable, td, leaves) -> tuple[list[np.ndarray], Any]:
    out_leaves, out_td = flatten(f(*unflatten(td, leaves)))
    values = []
    for k, o in enumerate(out_leaves):
        o = _as_array(o)
        if o.dtype.kind == "c":
            raise AutogradDagError(f"{what}: output leaf {k} is complex ({o.dtype}); only real outputs are "
                                   f"differentiated")
        if o.dtype.kind not in "fiub":
            raise AutogradDagError(f"{what}: output leaf {k} is not a number array (dtype {o.dtype})")
        values.append(o)
    return values, out_td


def _flat(values) -> np.ndarray:
    return np.concatenate([np.asarray(o, dtype=np.float64).ravel() for o in values]) if values else np.zeros(0)


def _extrapolate(D: np.ndarray, ratio: float, levels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Richardson's table over the steps (axis 0, increasing): the last level, the one below it at the same
    steps, and the rounding amplification.

    Level m cancels the h^(2m) term: (r^(2m)·R(h) − R(r·h)) / (r^(2m) − 1). It costs one step
    per level; the factor returned is Σ|weights| of the combination, by which the
    rounding error of one difference grows (referred to the smallest step used).
    """
    R, below, amp = D, D, np.ones(1)
    for m in range(1, levels + 1):
        c = ratio ** (2 * m)
        below, R = R, (c * R[:-1] - R[1:]) / (c - 1)
        # Rounding of D(h) ~ 1/h: the neighbour at r·h rounds r times less.
        amp = (c * amp + amp / ratio) / (c - 1)
    return R, below[:len(R)], amp


def _column(what, f, td, leaves, i, j, out_size, ratio, num_steps, levels, base_step):
    """Entry j of float argument i: the best extrapolated derivative of every output entry, and its error estimate."""
    x = leaves[i]
    dtype = x.dtype
    xj = x[j]
    h_max = (MAX_STEP_FACTOR * np.finfo(dtype).eps ** (1 / 7) if base_step is None else base_step) * max(abs(float(xj)), 1.0)
    D, noise = [], []
    for k in range(num_steps):
        h = h_max * ratio ** (k - num_steps + 1)   # increasing, as _extrapolate reads them
        sides = []
        for s in (h, -h):
            moved = x.copy()
            moved[j] = dtype.type(xj + s)   # rounded to the argument's dtype
            sides.append(moved)
        # The step actually taken: the moved entries are exact in float64.
        width = float(sides[0][j]) - float(sides[1][j])
        # A large step may leave f's domain (log, sqrt near 0): its NaN is discarded by the step
        # choice, so numpy's warning would only alarm.
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            plus, minus = (_evaluate(what, f, td, leaves[:i] + [m] + leaves[i + 1:])[0] for m in sides)
            fp, fm = _flat(plus), _flat(minus)
            if fp.size != out_size:
                raise AutogradDagError(f"{what}: f's output changed size from {out_size} to {fp.size} when its "
                                       f"input moved; the Jacobian needs outputs of a fixed shape")
            D.append((fp - fm) / width if width > 0 else np.full(out_size, np.nan))
            out_eps = max([np.finfo(o.dtype).eps for o in plus if o.dtype.kind == "f"], default=np.finfo(np.float64).eps)
            noise.append(ROUNDING_ULPS * out_eps * np.maximum(np.abs(fp), np.abs(fm)) / max(width, np.finfo(float).tiny))
    D, noise = np.array(D), np.array(noise)
    with np.errstate(invalid="ignore", over="ignore"):   # inf − inf of steps outside the domain: NaN, discarded
        R, below, amp = _extrapolate(D, ratio, levels)
        # The gap to the neighbour at the larger step; where that one is not finite (its step
        # left f's domain) or there is none, the gap to the level below (its error, larger).
        truncation = np.abs(np.concatenate([R[:-1] - R[1:], np.full((1,) + R.shape[1:], np.nan)]))
        truncation = np.where(np.isfinite(truncation), truncation, np.abs(R - below) if levels else np.inf)
        err = truncation + amp * noise[:len(R)]
    err = np.where(np.isfinite(R) & np.isfinite(err), err, np.inf)
    best = np.argmin(err, axis=0)
    cols = np.arange(out_size)
    value, error = R[best, cols], err[best, cols]
    # Where no step gave a finite value, say so with NaN (error inf) rather than pick one.
    value = np.where(np.isfinite(error), value, np.nan)
    return value, error


def jacobian(f: Callable, args: Sequence, *, order: int = 2, step_ratio: float = STEP_RATIO,
             num_steps: int = NUM_STEPS, richardson_terms: int = RICHARDSON_TERMS,
             base_step: float | None = None) -> Estimate:
    """The Jacobian of f at ``args`` by adaptive central differences, with an error estimate per entry.

    ``f(*args)`` returns an array or a pytree of arrays; ``args`` is a tuple of
    arrays or pytrees of them (plain numpy; Tensors are read as their values).
    Integer leaves are held fixed. Float32 arguments are moved in float32, and
    steps and rounding estimates come from their dtype's eps.

    Shapes: ``value`` and ``error`` have f's output structure; each output leaf
    holds the arguments' structure, whose leaves are arrays of shape
    ``out.shape + arg.shape`` (None for a non-float argument), as
    ``jax.jacobian(f, argnums=all)``. ``error`` bounds ``|value − exact|`` in
    practice (it is the gap between neighbouring extrapolations plus the rounding of f
    amplified by 1/h; inf where no step gave a finite value, and value NaN there).

    Options: ``order`` 2 or 4 (of the central difference), ``richardson_terms``
    (extrapolation levels on top of it), ``num_steps`` steps h_max·step_ratio^-k,
    ``base_step`` h_max relative to max(|x|, 1) (default 4·eps^(1/7)).

    Example:
        >>> import numpy as np
        >>> from autograd_dag.numdiff import jacobian
        >>> est = jacobian(lambda x: np.sin(x), (np.array([0.0, 1.0]),))
        >>> np.round(est.value[0], 12)
        array([[1.        , 0.        ],
               [0.        , 0.54030231]])
        >>> bool(np.all(est.error[0] < 1e-9)), est.evaluations
        (True, 65)
    """
    parts = _jacobians("jacobian", f, args, order, step_ratio, num_steps, richardson_terms, base_step)
    leaves, td, out_td, out_shapes = parts.leaves, parts.td, parts.out_td, parts.out_shapes

    def regroup(per_arg):
        # Rows of output leaf o, as o.shape + x.shape for each argument leaf x.
        return unflatten(out_td, [
            unflatten(td, [None if M is None else M[parts.bounds[o]:parts.bounds[o + 1]].reshape(
                out_shapes[o] + leaves[i].shape) for i, M in enumerate(per_arg)])
            for o in range(len(out_shapes))])
    return Estimate(regroup(parts.values), regroup(parts.errors), parts.evaluations)


class _Parts(NamedTuple):
    leaves: list
    td: Any
    out_td: Any
    out_shapes: list
    bounds: np.ndarray      # where each output leaf's rows start in the flat Jacobian
    values: list            # per argument leaf: (output entries, argument entries) or None
    errors: list
    evaluations: int


def _jacobians(what, f, args, order, step_ratio, num_steps, richardson_terms, base_step) -> _Parts:
    """The flat Jacobian (all outputs' entries by the argument's entries) of each float argument leaf."""
    levels = _checked_options(what, order, step_ratio, num_steps, richardson_terms)
    if base_step is not None and not (isinstance(base_step, (int, float)) and np.isfinite(base_step)
                                      and base_step > 0):
        raise AutogradDagError(f"{what}: base_step must be a finite number > 0, got {base_step!r}")
    leaves, td = _checked_leaves(what, f, args)
    values, out_td = _evaluate(what, f, td, leaves)
    out_shapes = [o.shape for o in values]
    bounds = np.cumsum([0] + [int(np.prod(s, dtype=np.int64)) for s in out_shapes])
    out_size = int(bounds[-1])
    per_arg_value, per_arg_error = [], []
    evaluations = 1
    for i, x in enumerate(leaves):
        if not _is_float(x):
            per_arg_value.append(None)
            per_arg_error.append(None)
            continue
        cols = [_column(what, f, td, leaves, i, j, out_size, step_ratio, num_steps, levels, base_step)
                for j in np.ndindex(x.shape)]
        evaluations += 2 * num_steps * len(cols)
        per_arg_value.append(np.stack([c[0] for c in cols], axis=1) if cols else np.zeros((out_size, 0)))
        per_arg_error.append(np.stack([c[1] for c in cols], axis=1) if cols else np.zeros((out_size, 0)))
    return _Parts(leaves, td, out_td, out_shapes, bounds, per_arg_value, per_arg_error, evaluations)


def gradient(f: Callable, args: Sequence, *, order: int = 2, step_ratio: float = STEP_RATIO,
             num_steps: int = NUM_STEPS, richardson_terms: int = RICHARDSON_TERMS,
             base_step: float | None = None) -> Estimate:
    """The gradient of a scalar f w.r.t. every float argument, with an error estimate per entry.

    Shapes: ``value`` and ``error`` have the structure of ``args`` (None for
    non-float leaves), each leaf the shape of its argument. Options as :func:`jacobian`.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.numdiff import gradient
        >>> np.round(gradient(lambda x: np.sum(x ** 3), (np.array([1.0, 2.0]),)).value[0], 10)
        array([ 3., 12.])
    """
    parts = _jacobians("gradient", f, args, order, step_ratio, num_steps, richardson_terms, base_step)
    if len(parts.out_shapes) != 1 or parts.bounds[-1] != 1:
        raise AutogradDagError(f"gradient: f must return one scalar, got outputs of shapes "
                               f"{[tuple(s) for s in parts.out_shapes]}; use jacobian for other outputs")

    def shaped(per_arg):
        return unflatten(parts.td, [None if M is None else M.reshape(x.shape)
                                    for M, x in zip(per_arg, parts.leaves)])
    return Estimate(shaped(parts.values), shaped(parts.errors), parts.evaluations)


def derivative(f: Callable, x, *, order: int = 2, step_ratio: float = STEP_RATIO, num_steps: int = NUM_STEPS,
               richardson_terms: int = RICHARDSON_TERMS, base_step: float | None = None) -> Estimate:
    """f'(x) for a scalar x: ``value`` and ``error`` of f's output shape (structure). Options as :func:`jacobian`.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.numdiff import derivative
        >>> round(float(derivative(np.exp, 1.0).value), 12)
        2.718281828459
    """
    x = np.asarray(x, dtype=np.float64) if isinstance(x, (int, float)) else _as_array(x)
    if x.ndim != 0:
        raise AutogradDagError(f"derivative: x must be a scalar, got shape {x.shape}; use jacobian for arrays")
    parts = _jacobians("derivative", f, (x,), order, step_ratio, num_steps, richardson_terms, base_step)

    def shaped(M):
        return unflatten(parts.out_td, [M[parts.bounds[o]:parts.bounds[o + 1]].reshape(s)
                                        for o, s in enumerate(parts.out_shapes)])
    return Estimate(shaped(parts.values[0]), shaped(parts.errors[0]), parts.evaluations)
