"""Gradient verification: analytic derivatives against central finite differences.

``check_grads(f, args)`` compares reverse mode (VJP) and forward mode (JVP)
with central differences in float64. By default it compares random
projections, one argument at a time (⟨u, J v⟩ numerically against
⟨vjp(u), v⟩ and ⟨u, jvp(v)⟩, the other arguments constants), then forward
mode once more with every argument moving: cheap and, with probability one,
sensitive to any wrong entry. A second projection weights each output entry by
its own tolerance, 1 / (atol + rtol·|(J v)_r|) (one more backward sweep in
reverse mode, free in forward mode), so that an error confined to entries far
smaller than the others is not lost under the large ones' tolerance.
When a projection disagrees it computes the Jacobian of that
argument entry by entry and reports the worst entries, so the message says
*where* the derivative is wrong, not just that it is.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from . import numdiff
from .autodiff import jvp, vjp
from .batched_checking import batched_failures
from .check_records import note_comparison, recorded
from .tracing import refuse_complex
from .core import Tensor, no_grad
from .errors import AutogradDagError, GradientCheckError, MissingRuleError
from .tree import flatten, leaf_paths, leaves_like, unflatten

DEFAULT_EPS = 1e-6
DEFAULT_ATOL = 1e-6
DEFAULT_RTOL = 1e-5
# Entry-by-entry reports are limited to Jacobians of at most this many entries.
MAX_REPORT_ENTRIES = 200_000


def _values(out) -> list[np.ndarray]:
    leaves, _ = flatten(out)
    return [np.asarray(o.value if isinstance(o, Tensor) else o) for o in leaves]


def _evaluate(f: Callable, arg_td, leaves) -> list[np.ndarray]:
    # Boolean outputs (comparisons) are differenced as 0/1: numpy cannot subtract bools.
    # A step may leave f's domain (sqrt at 1e-7): the NaN is the check's to judge and report,
    # and numpy's warning, an error under pytest's -W error, crashed a check that passes.
    with no_grad(), np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return [o.astype(np.float64) if o.dtype == np.bool_ else o
                for o in _values(f(*unflatten(arg_td, _as_arguments(leaves))))]


def _is_float_leaf(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind == "f"


def _as_leaf(x):
    """A float leaf as a float array (it is checked); any other leaf exactly as the caller gave it.

    An int, a string, None or a function is held fixed, and f must get it as it
    is: wrapped in a Tensor, ``range(n)`` and ``act(x)`` failed, and
    ``opt is None`` was False.
    """
    v = x.value if isinstance(x, Tensor) else x
    if isinstance(v, float):
        return np.asarray(v, dtype=np.float64)
    if isinstance(v, (np.ndarray, np.floating)) and v.dtype.kind == "f":
        return np.asarray(v)
    return x


def _as_arguments(leaves) -> list:
    """The leaves f is called with: float arrays as constant Tensors, the others as given."""
    return [Tensor(x) if _is_float_leaf(x) else x for x in leaves]


def _float_leaves(leaves) -> list[int]:
    return [i for i, x in enumerate(leaves) if _is_float_leaf(x)]


def _refuse_complex_leaves(leaves, what: str) -> None:
    # A complex argument would be perturbed along the real axis only (or not
    # at all), so a wrong derivative could pass: refuse it, as grad does.
    for i, x in enumerate(leaves):
        refuse_complex(x.value if isinstance(x, Tensor) else x, f"{what}: argument leaf {i}")


def _size(shape) -> int:
    """The number of entries of an array of this shape, as a Python int (the product of no axes is 1)."""
    return int(np.prod(shape, dtype=np.int64))


def _step_scale(x: np.ndarray) -> np.ndarray:
    # A step relative to the input's magnitude keeps the rounding error of
    # f(x ± h) small compared with h·f' for large |x|.
    return np.maximum(1.0, np.abs(x))


def numerical_jvp(f: Callable, args: Sequence, tangents: Sequence, eps: float = DEFAULT_EPS) -> list:
    """Central-difference directional derivative (f(x + εt) − f(x − εt)) / 2ε.

    Shapes: ``args`` and ``tangents`` tuples of the same structure; returns a
    list with one array per output leaf.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.numerical_jvp(lambda x: x * x, (np.array([3.0]),), (np.array([1.0]),))[0].round(6)
        array([6.])
    """
    leaves, td = flatten(tuple(args))
    leaves = [_as_leaf(x) for x in leaves]
    t_leaves = leaves_like(tuple(tangents), td, "numerical_jvp: the tangents", "arguments")
    _refuse_complex_leaves(leaves, "numerical_jvp")
    plus, minus = (_evaluate(f, td, _moved_along(leaves, t_leaves, step)) for step in (eps, -eps))
    return [(a - b) / (2 * eps) for a, b in zip(plus, minus)]


def _moved_along(leaves, t_leaves, step) -> list[np.ndarray]:
    """The float leaves moved by step·t in float64: one side of a central difference.

    The other leaves (indices, masks) cannot move and are passed unchanged.
    """
    return [np.asarray(x, dtype=np.float64) + step * np.asarray(t) if _is_float_leaf(x)
            else x for x, t in zip(leaves, t_leaves)]


def numerical_grad(f: Callable, args: Sequence, eps: float | None = None) -> tuple:
    """Central-difference gradient of a scalar ``f`` w.r.t. every float argument.

    By default (``eps=None``) each entry gets its own step, chosen among 16 with
    Richardson's extrapolation by :func:`autograd_dag.numdiff.gradient` (32 evaluations
    per entry; accurate to about 1e-11 near singularities and for badly scaled x, where
    a fixed step misses by 1e-3: benchmarks/bench_numdiff.py). With ``eps``, the step
    for entry i is ``eps · max(1, |x_i|)``, and the differences at that step and half of
    it are extrapolated (Richardson) to O(step⁴): 4 evaluations per entry.
    Shapes: one array per argument, of that argument's shape (None for
    non-float arguments).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.numerical_grad(lambda x: (x ** 2).sum(), (np.array([1.0, 2.0]),))[0].round(5)
        array([2., 4.])
    """
    leaves, td = flatten(tuple(args))
    leaves = [_as_leaf(x) for x in leaves]
    _refuse_complex_leaves(leaves, "numerical_grad")
    out = _evaluate(f, td, leaves)
    if len(out) != 1 or out[0].size != 1:
        raise AutogradDagError("numerical_grad: f must return one scalar; use numerical_jvp otherwise")
    if eps is None:
        return numdiff.gradient(lambda *a: _evaluate(f, td, flatten(a)[0]), tuple(unflatten(td, leaves))).value
    # The gradient of a scalar is the one row of its Jacobian.
    grads = [_numerical_jacobian(f, td, leaves, i, eps).reshape(x.shape) if _is_float_leaf(x) else None
             for i, x in enumerate(leaves)]
    return unflatten(td, grads)


def _extrapolated(coarse, fine):
    """Richardson's extrapolation of central differences at steps h and h/2: (4·D(h/2) − D(h))/3.

    Their h² error terms cancel, leaving O(h⁴). The step grows with |x| (to keep the
    rounding of f(x ± h) small), so without it sin at x = 2e4 (h = 2e-2) was differenced
    7e-5 off, a false alarm at rtol 1e-5.
    """
    return (4.0 * fine - coarse) / 3.0


def _numerical_jacobian(f, td, leaves, i, eps) -> np.ndarray:
    """Rows: output entries (all outputs flattened); columns: entries of argument i."""
    return _difference_jacobians(f, td, leaves, i, eps, one_sided=False)[0]


def _difference_jacobians(f, td, leaves, i, eps, one_sided: bool) -> tuple[np.ndarray, ...]:
    """The central-difference Jacobian of argument i, and with ``one_sided`` the backward and forward ones
    and the rounding bound of a one-sided difference.

    The one-sided Jacobians (f(x) − f(x − h))/h and (f(x + h) − f(x))/h reuse the
    central difference's evaluations (plus f(x)): where they disagree, f has a
    kink at x and no derivative is there to check, unless they differ by no more
    than their rounding, precision·(|f(x)| + |f(x ± h)|)/h: f's values large against
    their change over a step (f = sum(x) + 1e8) make every difference that noisy.
    """
    x = np.asarray(leaves[i], dtype=np.float64)
    steps = eps * _step_scale(x)
    f0 = np.concatenate([o.ravel() for o in _evaluate(f, td, leaves)]) if one_sided else None
    precision = np.finfo(f0.dtype if one_sided and f0.dtype.kind == "f" else np.float64).eps
    central, left, right, rounding = [], [], [], []
    for j in np.ndindex(x.shape):
        fp, fm, fp2, fm2 = (_evaluate_flat_moved(f, td, leaves, i, j, step)
                            for step in (steps[j], -steps[j], steps[j] / 2, -steps[j] / 2))
        central.append(_extrapolated((fp - fm) / (2 * steps[j]), (fp2 - fm2) / steps[j]))
        if one_sided:
            left.append((f0 - fm) / steps[j])
            right.append((fp - f0) / steps[j])
            rounding.append(precision * (np.abs(f0) + np.maximum(np.abs(fp), np.abs(fm))) / steps[j])
    if not central:
        return (np.zeros((0, 0)),) * (4 if one_sided else 1)
    return tuple(np.stack(cols, axis=1) for cols in ((central, left, right, rounding) if one_sided else (central,)))


def _evaluate_flat_moved(f, td, leaves, i, j, step) -> np.ndarray:
    """f's outputs as one vector, entry j of argument i moved by step: one side of a Jacobian column."""
    moved = list(leaves)
    moved[i] = np.array(leaves[i], dtype=np.float64)
    moved[i][j] += step
    return np.concatenate([o.ravel() for o in _evaluate(f, td, moved)])


def _analytic_jacobian(f, td, leaves, i, mode, out_shapes, out_td) -> np.ndarray:
    x = np.asarray(leaves[i])
    n_out = sum(_size(s) for s in out_shapes)
    if mode == "rev":
        _, f_vjp = vjp(lambda *a: f(*a), *unflatten(td, leaves))
        rows = []
        for r in range(n_out):
            flat = np.zeros(n_out)
            flat[r] = 1.0
            cts, offset = [], 0
            for s in out_shapes:
                size = _size(s)
                cts.append(flat[offset:offset + size].reshape(s))
                offset += size
            cts_tree = unflatten(out_td, cts)
            g_leaves, _ = flatten(f_vjp(cts_tree))
            rows.append(np.asarray(g_leaves[i], dtype=np.float64).ravel())
        return np.stack(rows) if rows else np.zeros((0, x.size))
    cols = []
    alone = _of_one_leaf(lambda *a: f(*unflatten(td, list(a))), leaves, i)
    for j in np.ndindex(x.shape):
        unit = np.zeros(x.shape)
        unit[j] = 1.0
        _, tout = jvp(alone, (leaves[i],), (unit,))
        cols.append(np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in flatten(tout)[0]]))
    return np.stack(cols, axis=1) if cols else np.zeros((n_out, 0))


def _of_one_leaf(f: Callable, leaves, i) -> Callable:
    """f(*leaves) as a function of leaf i alone, the others constants (Tensors that need no gradient).

    Forward mode checks each argument this way: the JVP rules then get no tangent
    (None) for the other operands, the branch a rule takes when an operand is a
    constant (``mul(x, W)``); all the arguments together are checked once more
    (:func:`_joint_failure`), the branch with every tangent given.
    """
    # Constant Tensors, not arrays: f may call Tensor methods on them (a.dot(b)).
    fixed = _as_arguments(leaves)

    def alone(x):
        return f(*fixed[:i], x, *fixed[i + 1:])
    return alone


def _on_floats(f: Callable, td, leaves, float_idx) -> Callable:
    """f as a function of its float leaves only; the others (indices, masks) are held fixed.

    ``vjp``/``jvp`` turn every argument they get into a float input, which
    would break an integer index; so only the float leaves are passed to them.
    """
    def g(*floats):
        full = list(leaves)
        for k, x in zip(float_idx, floats):
            full[k] = x
        return f(*unflatten(td, full))
    g.__name__ = getattr(f, "__name__", "f")
    return g


def _describe_arg(names, path, x) -> str:
    # ``path``: the argument's position, then the keys down to the leaf in a nested argument.
    i = path[0]
    label = f"argument {i}" + (f" ('{names[i]}')" if names and i < len(names) and names[i] else "")
    label += "".join(f"[{key!r}]" for key in path[1:])
    return f"{label}, shape {tuple(np.shape(x))}, {np.asarray(x).dtype}"


def _kinks(left, right, rounding, atol, rtol) -> np.ndarray:
    """Entries where the one-sided differences disagree (by far more than their truncation error): kinks.

    Each side of a smooth f is off by about h·|f''|/2 (h = 1e-6 by default), so a
    gap ten times the tolerance is a jump in the derivative, as relu's at 0; unless
    it is within twice the sides' ``rounding`` (each side's is at most that): noise.
    """
    scale = np.maximum(np.abs(left), np.abs(right))
    gap = np.abs(left - right)
    return (gap > 10 * (atol + rtol * scale)) & (gap > 4 * rounding)


def _kink_note(analytic: float, left: float, right: float, atol, rtol) -> str:
    """What a report says of an entry on a kink: the two one-sided derivatives, and which one the rule took."""
    def near(a, b):
        return abs(a - b) <= atol + rtol * max(abs(a), abs(b))
    side = ("the left one" if near(analytic, left) else "the right one" if near(analytic, right)
            else "neither")
    return (f"\n      on a kink: one-sided derivatives {left: .6e} (left) and {right: .6e} (right); the "
            f"analytic value is {side}. f is not differentiable here (or has a kink or a steep bend "
            f"within a step, eps * max(1, |x|), of here): check at a point off the kink")


def _rounding_note(rounding: float) -> str:
    """What a report says of an entry whose disagreement is within the differences' rounding."""
    return (f"\n      within the rounding of the finite differences (about {rounding:.1e}): f's values are "
            f"large against their change over a step (a large constant or offset in f), so differences "
            f"cannot check this entry to the tolerance; subtract the offset, or give a larger eps or "
            f"looser atol/rtol")


def _output_labels(out_td, n: int) -> list[str]:
    """``output 1``, ``output ['aux'][0]``: each output leaf named by its place in f's result."""
    labels = []
    for path in leaf_paths(unflatten(out_td, list(range(n)))):
        if path and isinstance(path[0], int):
            head, path = f"output {path[0]}", path[1:]
        else:
            head = "output "
        labels.append(head + "".join(f"[{key!r}]" for key in path))
    return labels


def _worst_entries(analytic, numeric, out_shapes, x_shape, atol, rtol, k=5, sides=None,
                   out_labels=None) -> list[str]:
    """The k entries furthest outside the tolerance, non-finite ones first; ``sides``: (left, right) differences
    and their rounding (see :func:`_difference_jacobians`)."""
    err = np.abs(analytic - numeric)
    scale = np.maximum(np.abs(analytic), np.abs(numeric))
    excess = err - (atol + rtol * scale)
    excess[~(np.isfinite(analytic) & np.isfinite(numeric))] = np.inf
    kinks = None if sides is None else _kinks(*sides, atol, rtol)
    order = np.argsort(excess, axis=None)[::-1][:k]
    lines = []
    boundaries = np.cumsum([0] + [_size(s) for s in out_shapes])
    for flat in order:
        r, c = np.unravel_index(flat, analytic.shape)
        if excess[r, c] <= 0:
            break
        o = int(np.searchsorted(boundaries, r, side="right") - 1)
        out_idx = np.unravel_index(r - boundaries[o], out_shapes[o]) if out_shapes[o] else ()
        in_idx = np.unravel_index(c, x_shape) if x_shape else ()
        rel = err[r, c] / scale[r, c] if scale[r, c] > 0 else np.inf
        out_label = (out_labels[o].rstrip() + " " if out_labels is not None and len(out_shapes) > 1
                     else f"output {o} " if len(out_shapes) > 1 else "output ")
        lines.append(f"    d {out_label}{tuple(int(v) for v in out_idx)} / d input {tuple(int(v) for v in in_idx)}: "
                     f"analytic {analytic[r, c]: .6e}, numeric {numeric[r, c]: .6e}, "
                     f"abs err {err[r, c]:.2e}, rel err {rel:.2e}"
                     + (_kink_note(analytic[r, c], sides[0][r, c], sides[1][r, c], atol, rtol)
                        if kinks is not None and kinks[r, c] else
                        # (the central difference's rounding is about 1.5 times a side's)
                        _rounding_note(2 * sides[2][r, c])
                        if sides is not None and err[r, c] <= 2 * sides[2][r, c] else ""))
    return lines


# How a report names each mode and the projection it compares with finite differences.
_MODE_LABELS = {"rev": "reverse mode (VJP)", "fwd": "forward mode (JVP)"}
_PROJECTIONS = {"rev": "<vjp(u), v>", "fwd": "<u, jvp(v)>"}


class _Tolerances(NamedTuple):
    """The finite-difference step and the allowed error atol + rtol·|value|, defaults filled in."""
    eps: float
    atol: float
    rtol: float


@dataclass(frozen=True)
class _Point:
    """What every comparison at one point shares: f on its float leaves, and the random output weights u."""
    f: Callable            # f of the float leaves; the other leaves are held fixed (see _on_floats)
    floats: list           # the float leaves, where the derivatives are taken
    floats_td: Any         # treedef of tuple(floats)
    out_td: Any
    out_shapes: list[tuple]
    us: list[np.ndarray]   # u, one array per output leaf
    u_tree: Any            # u in the structure of f's output, as vjp takes it
    values: list           # f's outputs at the widened point (their size bounds the differences' rounding)
    wide: list             # the float leaves in float64: the finite differences' point (see _widened)

    @property
    def precision(self) -> float:
        """The machine epsilon the finite differences round at: of f's outputs at the widened point."""
        return _precision(self.values)


class _DerivativeUnusable(Exception):
    """A derivative that cannot be compared (not computable, wrong shape): a failed check, not a crash."""


def _checked_leaves(args, modes, atol, rtol) -> tuple[list[np.ndarray], Any, list[tuple]]:
    """The arguments' leaves as arrays, with their treedef and paths; refuses what the check cannot judge."""
    if not isinstance(args, (tuple, list)):
        raise AutogradDagError("check_grads: args must be a tuple of arguments, e.g. (x,) or (x, w)")
    for m in modes:
        if m not in ("rev", "fwd"):
            raise AutogradDagError(f"check_grads: unknown mode {m!r}; use 'rev' and/or 'fwd'")
    leaves, td = flatten(tuple(args))
    paths = leaf_paths(tuple(args))
    # Python floats become float64 leaves, so that they are checked too; a Python int
    # stays an integer (an exponent, an index, a count), held fixed like an int array.
    leaves = [_as_leaf(x) for x in leaves]
    _refuse_complex_leaves(leaves, "check_grads")
    _refuse_low_precision(leaves, atol, rtol)
    if not _float_leaves(leaves):
        # Nothing would be compared, and a check that compares nothing must not pass.
        raise AutogradDagError(
            f"check_grads: no floating-point argument to check (the arguments' dtypes are "
            f"{', '.join(sorted({str(np.asarray(x).dtype) for x in leaves})) or 'none'}); integer "
            f"arguments (indices, labels, exponents) are held fixed: pass the point as floats, "
            f"e.g. 2.0 or x.astype(np.float64)")
    return leaves, td, paths


def _checked_options(f, order, modes, eps, atol, rtol) -> tuple[str, ...]:
    """The modes as a tuple; refuses options under which the check would compare nothing, or pass anything.

    A NaN tolerance makes every comparison false (a wrong derivative passes); no
    mode, or order 0, compares nothing: a check that compares nothing must not pass.
    """
    if not callable(f):
        raise AutogradDagError(f"check_grads: f must be callable, got {type(f).__name__}")
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
        raise AutogradDagError(f"check_grads: order must be a whole number >= 1 (1: first derivatives, "
                               f"2: also second), got {order!r}")
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    if not modes:
        raise AutogradDagError("check_grads: modes is empty, so nothing would be checked; use ('rev', 'fwd'), "
                               "('rev',) or ('fwd',)")
    for name, value, low in (("eps", eps, "> 0"), ("atol", atol, ">= 0"), ("rtol", rtol, ">= 0")):
        if value is None:
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not np.isfinite(number) or number < 0 or (name == "eps" and number == 0):
            raise AutogradDagError(f"check_grads: {name} must be a finite number {low}, got {value!r}")
    return modes


def _refuse_low_precision(leaves, atol, rtol) -> None:
    """Default tolerances are meant for float64 and float32 (:func:`_default_tolerances`): float16 and
    bfloat16 need tolerances the caller chose."""
    low = [x.dtype for x in leaves if _is_float_leaf(x) and x.dtype.itemsize < 4]
    if low and (atol is None or rtol is None):
        raise AutogradDagError(
            f"check_grads: inputs of dtype {low[0]} were given. Central differences in that precision "
            f"cannot separate a wrong derivative from rounding error (the rounding error of f(x±h)/2h is "
            f"about machine-eps/h). Check in float64 (x.astype(np.float64)), or pass atol= and rtol= "
            f"explicitly if you accept loose tolerances")


def _argument_names(f: Callable) -> list[str] | None:
    """f's parameter names, so that a report says ('w') and not only argument 1; None if f has no signature."""
    try:
        return [p.name for p in inspect.signature(f).parameters.values()]
    except (TypeError, ValueError):
        return None


def _checked_outputs(f: Callable, td, leaves, fname, loose: bool) -> tuple[Any, list[tuple], list]:
    """f's output treedef and leaf shapes, which size u and the Jacobians, and its outputs at the point.

    A complex output is refused, and so is an f that gives two different values at
    the same point (random numbers inside it, a layer in training mode that draws a
    mask): its finite differences would measure the noise, not the derivative. A
    float32/16 output is refused unless the tolerances were given (``loose``), as
    such inputs are: its rounding swamps the differences. A float32 one is checked at
    float32's tolerances (:func:`_default_tolerances`).
    """
    with no_grad():
        out = f(*unflatten(td, _as_arguments(leaves)))
    out_td = flatten(out)[1]
    out_vals = _values(out)
    for k, o in enumerate(out_vals):
        refuse_complex(o, f"check_grads: output leaf {k}")
        _refuse_non_numbers(o, k, f"check_grads({fname})")
        if o.dtype.kind == "f" and o.dtype.itemsize < 4 and not loose:
            raise AutogradDagError(
                f"check_grads({fname}): output leaf {k} is {o.dtype}: central "
                f"differences of {o.dtype} values cannot separate a wrong derivative from rounding error. "
                f"Compute f in float64 (an operation or a primitive's implementation casts down), or pass "
                f"atol= and rtol= explicitly if you accept loose tolerances")
    for k, (a, b) in enumerate(zip(out_vals, _evaluate(f, td, leaves))):
        # Bit for bit on purpose: the same code on the same numbers rounds the same way on any
        # CPU, so a difference is randomness inside f, not rounding.
        if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            raise GradientCheckError(
                f"check_grads({fname}): f gives different values at the same point (output leaf {k}, "
                f"largest change {np.max(np.abs(a.astype(np.float64) - b)):.3e}), so finite differences "
                f"cannot measure its derivative. Random numbers inside f? Fix them (a seeded generator "
                f"made inside f) or check the model in eval() mode")
    return out_td, [o.shape for o in out_vals], out_vals


def _refuse_non_numbers(o: np.ndarray, k: int, what: str) -> None:
    """An output leaf that is not numbers (None, a string) cannot be differenced: say which one, not TypeError.

    f returning (loss, None) crashed the check with "unsupported operand type(s) for -: 'NoneType'".
    """
    if o.dtype.kind not in "biufc":
        shown = repr(o.item()) if o.size == 1 else f"an array of shape {o.shape}"
        raise AutogradDagError(f"{what}: output leaf {k} is {shown} ({o.dtype}), not numbers, so it has no "
                               f"derivative to check; return only arrays and Tensors (e.g. lambda *a: f(*a)[0])")


# The default tolerances of a check in float32 (its inputs, or f's outputs). The analytic derivatives
# are computed in float32, each entry rounded at a few ε32·(its terms) ~ 1e-6 in an ordinary chain;
# sqrt(ε32) = 3.5e-4 leaves two decades above that and is 30 times below a rule 1 % off (jax's
# check_grads takes 2e-3 for float32, as its differences are float32 at step 1e-4: ε32/1e-4 = 1e-3).
FLOAT32_TOLERANCE = float(np.sqrt(np.finfo(np.float32).eps))


def _default_tolerances(eps, atol, rtol, leaves, outputs, values) -> _Tolerances:
    """The step and tolerances the caller left out, from the precision of the derivatives and of the differences.

    ``outputs``: f at the user's point (the precision the derivatives are computed in, with the float
    leaves'); ``values``: f at the point widened to float64 (:func:`_widened`), the differences'
    precision. Differences in float64 (f computes in float64 when given it) keep float64's step 1e-6;
    an f that casts to float32 itself is differenced at ε32^(1/3) = 4.9e-3, where rounding
    (ε32·|f|/h) and Richardson's truncation (h⁴) balance, with atol grown by |f| for that rounding
    (3·ε32^(2/3)·|f| = 7e-5·|f|, under 3.5e-4·|f|), as check_gradient does.
    """
    analytic = _precision([x for x in leaves if _is_float_leaf(x)] + list(outputs))
    differences = _precision(values)
    if analytic <= np.finfo(np.float64).eps and differences <= np.finfo(np.float64).eps:
        return _Tolerances(DEFAULT_EPS if eps is None else eps, DEFAULT_ATOL if atol is None else atol,
                           DEFAULT_RTOL if rtol is None else rtol)
    loose = max(FLOAT32_TOLERANCE, float(np.sqrt(analytic)))
    size = max([1.0] + [float(np.max(np.abs(v), initial=0.0)) for v in values if np.asarray(v).dtype.kind == "f"])
    wide = differences <= np.finfo(np.float64).eps
    step = DEFAULT_EPS if wide else float(differences ** (1 / 3))
    return _Tolerances(step if eps is None else eps, (loose if wide else loose * size) if atol is None else atol,
                       loose if rtol is None else rtol)


def _point(f: Callable, td, leaves, float_idx, out_td, out_shapes, us, values) -> _Point:
    """Bundle f on its float leaves with u, once per check, for the comparisons of every argument and mode."""
    floats = [leaves[k] for k in float_idx]
    return _Point(_on_floats(f, td, leaves, float_idx), floats, flatten(tuple(floats))[1], out_td,
                  list(out_shapes), us, unflatten(out_td, us), values, _widened(floats))


def _widened(leaves) -> list:
    """The float leaves in float64, the others as given: where the finite differences are taken.

    The differences move x in float64 anyway (x32 + h is not a float32), so a float32 f that
    computes in float64 when given float64 (numpy's promotion: ours do) is differenced in
    float64, and f(x) itself, the one-sided differences' centre, must be float64 too: a
    float32 f(x) against float64 f(x ± h) is off by ε32·|f| / h ~ 0.1 at h = 1e-6.
    """
    return [np.asarray(x, dtype=np.float64) if _is_float_leaf(x) else x for x in leaves]


def _one_leaf_tangents(leaves, i, t) -> list[np.ndarray]:
    """Tangents moving leaf i along t, every other leaf still: derivatives are checked one argument at a time."""
    tangents = [np.zeros(np.shape(leaf)) for leaf in leaves]
    tangents[i] = t
    return tangents


def _numeric_directional(p: _Point, tangents, eps) -> list[np.ndarray]:
    """J v by central differences (extrapolated), one array per output leaf."""
    coarse, fine = (numerical_jvp(p.f, p.floats, tangents, step) for step in (eps, eps / 2))
    return [_extrapolated(c, d) for c, d in zip(coarse, fine)]


def _numeric_projection(p: _Point, tangents, eps) -> float:
    """⟨u, J v⟩ by central differences (extrapolated): the reference value both modes are compared with."""
    return sum(float(np.sum(u * d)) for u, d in zip(p.us, _numeric_directional(p, tangents, eps)))


def _analytic_projector(p: _Point, pos, mode, v, tangents, fname) -> Callable[[list], float]:
    """(us, direction=v) ↦ ⟨vjp(us), v⟩ or ⟨us, jvp(v)⟩ of float argument pos, from the mode's rules.

    Its ``gradient()`` is vjp(u) of argument pos, which sets the per-input weights
    (:func:`_per_input_failure`).

    The function is run forward once (the JVP once), so a second projection costs a
    backward sweep (nothing, in forward mode). A derivative of the wrong shape could
    still give the right projection by broadcasting, so shapes are checked first; it
    and an uncomputable derivative raise _DerivativeUnusable. A missing rule stops
    the whole check.
    """
    def guarded(compute):
        try:
            return compute()
        except MissingRuleError as exc:
            raise _missing_rule_error(exc, fname) from None
        except AutogradDagError as exc:
            # The drivers refuse a rule that returns a wrong shape.
            raise _DerivativeUnusable(f"the derivative could not be computed: {exc}") from None

    def derivative_of(compute, expected) -> list[np.ndarray]:
        derivative = guarded(compute)
        got = [d.shape for d in derivative]
        if got != expected:
            raise _DerivativeUnusable(f"the derivative has shape {', '.join(map(str, got))}; expected "
                                      f"{', '.join(map(str, expected))}")
        return derivative

    if mode == "rev":
        f_vjp = guarded(lambda: vjp(p.f, *p.floats)[1])

        def gradient(us) -> np.ndarray:
            return derivative_of(lambda: [np.asarray(f_vjp(unflatten(p.out_td, us))[pos], dtype=np.float64)],
                                 [np.shape(p.floats[pos])])[0]

        def reverse(us, direction=None) -> float:
            return float(np.sum(gradient(us) * (v if direction is None else direction)))
        reverse.gradient = lambda: gradient(p.us)
        return reverse

    def tangent_out(t) -> list[np.ndarray]:
        return derivative_of(lambda: [np.asarray(o) for o in flatten(
            jvp(_of_one_leaf(p.f, p.floats, pos), (p.floats[pos],), (t,))[1])[0]], list(p.out_shapes))
    tout = tangent_out(tangents[pos])

    def forward(us, direction=None) -> float:
        return sum(float(np.sum(u * t)) for u, t in zip(us, tout if direction is None else tangent_out(direction)))
    # The per-input weights need |vjp(u)| only as a scale: where there is no VJP rule they are skipped.
    forward.gradient = lambda: np.asarray(vjp(p.f, *p.floats)[1](p.u_tree)[pos], dtype=np.float64)
    return forward


def _missing_rule_error(exc: MissingRuleError, fname) -> GradientCheckError:
    """A missing rule is not a wrong derivative: the error says which mode can still be checked."""
    other = "rev" if exc.rule == "JVP" else "fwd"
    return GradientCheckError(
        f"check_grads({fname}): no {exc.rule} rule for '{exc.primitive}', so "
        f"{'forward' if exc.rule == 'JVP' else 'reverse'} mode cannot be checked; pass "
        f"modes=({other!r},) to check the other mode only")


def _projection_line(analytic: float, numeric: float, tol: _Tolerances) -> tuple[bool, str]:
    """Whether the projections disagree (a non-finite analytic one always does), and by how much."""
    err = abs(analytic - numeric)
    allowed = tol.atol + tol.rtol * max((abs(v) for v in (analytic, numeric) if np.isfinite(v)), default=0.0)
    line = (f"    projection: analytic {analytic: .6e}, numeric {numeric: .6e}, abs err {err:.2e} "
            f"(tolerance {allowed:.2e} = atol {tol.atol:g} + rtol {tol.rtol:g} * |value|)")
    note_comparison(err if np.isfinite(numeric) else np.inf, allowed)
    if not np.isfinite(numeric):
        # Nothing to compare with is not agreement: f is undefined (or infinite) within a step of x.
        return True, line + ("\n    the finite differences are not finite: f is NaN or infinite within a step "
                             "(eps * max(1, |x|)) of this point, so its derivative cannot be checked here; "
                             "check at a point inside f's domain")
    return not np.isfinite(analytic) or err > allowed, line


def _jacobian_lines(p: _Point, pos, mode, tol: _Tolerances) -> tuple[bool, list[str]]:
    """Compare argument pos's Jacobian entry by entry, so that the report says where a derivative is wrong."""
    J_num, *sides = _difference_jacobians(p.f, p.floats_td, p.wide, pos, tol.eps, one_sided=True)
    J_ana = _analytic_jacobian(p.f, p.floats_td, p.floats, pos, mode, p.out_shapes, p.out_td)
    out_flat = np.concatenate([np.ravel(o) for o in p.values] + [np.zeros(0)])
    J_num = _second_look(p.f, p.floats_td, p.wide, pos, J_ana, J_num, tol, p.precision, out_flat)
    return _entry_comparison(J_ana, J_num, tuple(sides), p.out_shapes, np.shape(p.floats[pos]), p.out_td, tol)


def _precision(values) -> float:
    """The machine epsilon of the lowest float precision among ``values`` (float64's if none is float)."""
    return max([float(np.finfo(np.asarray(o).dtype).eps) for o in values if np.asarray(o).dtype.kind == "f"]
               + [float(np.finfo(np.float64).eps)])


def _second_look(f, td, leaves, i, J_ana, J_num, tol: _Tolerances, precision: float, out_flat) -> np.ndarray:
    """J_num with the entries that disagree with J_ana replaced where a second look at them is believed.

    As for a projection (:func:`_agrees_at_a_finer_step`): first differences at a step
    FINER_STEP times smaller, believed where their rounding bound 3·precision·|f_r| / step
    is a tenth of the disagreement they settle (a kink within a step of x); then, per
    column still in doubt, numdiff's adaptive steps, believed (agreeing or not: the report
    then shows the better value) where their error estimate is a tenth of the entry's
    tolerance: an f whose values are large against an entry's change over the step
    (sum(x⁴) at |x| ~ 16, off by 1.3e-5 on a derivative of 0.43) or that is NaN within a
    step (sqrt at 1e-7). A wrong entry disagrees at every step, so it stays.
    """
    bad = _entry_bad(J_ana, J_num, tol) & np.isfinite(J_ana)
    if not bad.any():
        return J_num
    x = np.asarray(leaves[i])
    finite = bad & np.isfinite(J_num)
    if finite.any():
        step = tol.eps * FINER_STEP
        J_fine = _difference_jacobians(f, td, leaves, i, step, one_sided=False)[0]
        scale = _step_scale(np.asarray(x, dtype=np.float64)).ravel()
        noise = 3 * precision * np.abs(out_flat)[:, None] / (step * scale)
        believed = finite & (noise <= 0.1 * np.abs(J_ana - J_num)) & ~_entry_bad(J_ana, J_fine, tol)
        J_num = np.where(believed, J_fine, J_num)
        bad &= ~believed
    J_num = np.array(J_num, dtype=np.float64)
    for c in np.flatnonzero(bad.any(axis=0)):
        j = np.unravel_index(c, x.shape) if x.shape else ()

        def column(s, j=j):
            moved = list(leaves)
            moved[i] = np.array(x)
            moved[i][j] = s
            return np.concatenate([o.ravel() for o in _evaluate(f, td, moved)])
        est = numdiff.derivative(column, x[j], num_steps=24)   # down to 1.6e-11·max(1, |x|), as for a projection
        allowed = tol.atol + tol.rtol * np.abs(J_ana[:, c])
        # Believed whether or not it agrees: the report then shows the better numeric value.
        J_num[:, c] = np.where(bad[:, c] & (est.error <= 0.1 * allowed), est.value, J_num[:, c])
    return J_num


def _entry_bad(J_ana, J_num, tol: _Tolerances) -> np.ndarray:
    """The entries outside atol + rtol·|value|; a non-finite entry on either side is one (NaN compares as neither)."""
    return ~(np.isfinite(J_ana) & np.isfinite(J_num)) | (
        np.abs(J_ana - J_num) > tol.atol + tol.rtol * np.maximum(np.abs(J_ana), np.abs(J_num)))


def _entry_comparison(J_ana, J_num, sides, out_shapes, x_shape, out_td, tol: _Tolerances) -> tuple[bool, list[str]]:
    """Whether any entry of an analytic Jacobian (ours, or a user's: checking_user) disagrees; the report's lines."""
    note_comparison(np.abs(J_ana - J_num), tol.atol + tol.rtol * np.maximum(np.abs(J_ana), np.abs(J_num)))
    entry_bad = _entry_bad(J_ana, J_num, tol)
    lines = [f"    {int(entry_bad.sum())} of {entry_bad.size} Jacobian entries disagree; worst:"]
    return bool(entry_bad.any()), lines + _worst_entries(J_ana, J_num, out_shapes, x_shape, tol.atol, tol.rtol,
                                                         sides=sides,
                                                         out_labels=_output_labels(out_td, len(out_shapes)))


_NOT_LINEAR = {
    "rev": ("    every entry agrees when computed with a unit cotangent, but not with the random one u: "
            "a VJP rule is not linear in its cotangent (it ignores ct, or uses it other than as a "
            "factor)"),
    "fwd": ("    every entry agrees when computed with a unit tangent, but not with the random one v: "
            "a JVP rule is not linear in its tangent (it ignores t, or uses it other than as a factor)"),
}


# How much smaller the step of the second look is (see _agrees_at_a_finer_step).
FINER_STEP = 1e-3


def _agrees_at_a_finer_step(analytic: float, numeric: float, finer: Callable[[], tuple[float, float]],
                            tol: _Tolerances, adaptive: Callable[[], tuple[float, float]] | None = None) -> bool:
    """Whether differences at a step FINER_STEP times smaller agree with ``analytic``.

    A step straddles a kink lying within it (|x| at x = 1e-8 with the step 1e-6) or
    a wiggle narrower than it, and the differences then miss a derivative that is
    right. A wrong derivative disagrees at every step; on the kink itself the
    central difference is the mean of the one-sided ones at every step, so it
    still fails there. ``finer`` computes the projection and a bound on its rounding
    error only when they are needed: the finer step is believed only where that
    error is a tenth of the disagreement it settles, so that a derivative wrong
    by more than the tolerance cannot pass on rounding noise. Failing that, the
    projection by ``adaptive`` steps (:func:`_adaptive_projection`) settles it where its
    error estimate is a tenth of the tolerance: a step that leaves f's domain (sqrt
    at 1e-7, where the differences were NaN) or that suits no fixed step.
    """
    if not np.isfinite(analytic):
        return False
    if np.isfinite(numeric):
        value, noise = finer()
        if noise <= 0.1 * abs(numeric - analytic) and not _projection_line(analytic, value, tol)[0]:
            return True
    if adaptive is None:
        return False
    value, error = adaptive()
    return error <= 0.1 * (tol.atol + tol.rtol * abs(analytic)) and not _projection_line(analytic, value, tol)[0]


def _finer_projection(p: _Point, tangents, tol: _Tolerances) -> Callable[[], tuple[float, float]]:
    """The projection at the finer step and its rounding-error bound 3·ε·Σ|u f| / step (computed once)."""
    def compute() -> tuple[float, float]:
        step = tol.eps * FINER_STEP
        size = sum(float(np.sum(np.abs(u) * np.abs(np.asarray(o, dtype=np.float64))))
                   for u, o in zip(p.us, p.values))
        # Richardson's (4·D(h/2) − D(h))/3 triples the rounding of one central difference.
        return _numeric_projection(p, tangents, step), 3 * p.precision * size / step
    return _once(compute)


def _adaptive_projection(p: _Point, tangents) -> tuple[float, float]:
    """⟨u, J v⟩ by numdiff's adaptive steps, and its error estimate (49 evaluations of f).

    The terms u_r·f_r are differenced apart, so that each is given its own rounding
    error: of their sum, which may cancel, the estimate would be too small. 24 steps
    (numdiff's default 16), down to 1.6e-11·v: a few of them must fit in f's domain.
    """
    est = numdiff.derivative(lambda t: np.concatenate([np.ravel(u * o) for u, o in zip(p.us, _evaluate(
        p.f, p.floats_td, _moved_along(p.floats, tangents, t)))] + [np.zeros(0)]), 0.0, num_steps=24)
    return float(np.sum(est.value)), float(np.sum(est.error))


def _per_entry_weights(p: _Point, jv: list[np.ndarray], tol: _Tolerances) -> list[np.ndarray]:
    """u scaled per output entry by 1 / (atol + rtol·|(J v)_r|), each entry's own tolerance.

    With u itself, an error confined to output entries far smaller than the others
    adds u_r·err_r to ⟨u, J v⟩, below the tolerance rtol·|⟨u, J v⟩| that the large
    entries set: a VJP wrong by 100% in an entry of size 1e-5 passed. Weighted, every
    entry counts in units of its own tolerance, as in the entry-by-entry comparison.
    """
    return [np.sign(u) / (tol.atol + tol.rtol * np.abs(d)) for u, d in zip(p.us, jv)]


def _per_entry_failure(p: _Point, project, tangents, jv, tol: _Tolerances) -> str | None:
    """The per-entry weighted projection's report; None when it agrees (one more VJP in reverse mode).

    Each correct entry's difference is within its tolerance, i.e. within 1 once weighted,
    and in practice far within it; a weighted disagreement beyond 1 plus the weighted
    rounding bound of the differences (3·ε·|f_r|/eps per entry) is an entry that is wrong.
    The differences at a finer step settle a truncation error, as for the projection.
    """
    weights = _per_entry_weights(p, jv, tol)
    try:
        analytic = project(weights)
    except _DerivativeUnusable as exc:
        return f"    {exc}"

    size = sum(float(np.sum(np.abs(w) * np.abs(np.asarray(o, dtype=np.float64))))
               for w, o in zip(weights, p.values))

    def weighted(directional) -> float:
        return sum(float(np.sum(w * d)) for w, d in zip(weights, directional))

    numeric = weighted(jv)
    allowed = 1.0 + 3 * p.precision * size / tol.eps
    if abs(analytic - numeric) <= allowed:
        return None
    if np.isfinite(analytic) and np.isfinite(numeric):
        # Believed only where its own rounding is a tenth of the disagreement it settles.
        finer_step = tol.eps * FINER_STEP
        finer_rounding = 3 * p.precision * size / finer_step
        if (finer_rounding <= 0.1 * abs(analytic - numeric) and abs(
                analytic - weighted(_numeric_directional(p, tangents, finer_step))) <= 1.0 + finer_rounding):
            return None
    return (f"    per-entry projection (each output entry's weight 1 / (atol + rtol·|(J v)_r|), its own "
            f"tolerance): analytic {analytic: .6e}, numeric {numeric: .6e}, difference "
            f"{abs(analytic - numeric):.2e} > {allowed:.2e} allowed: a derivative entry far smaller than the "
            f"others is wrong (the plain projection, dominated by the large entries, agrees)")


def _per_input_failure(p: _Point, pos, project, v, tol: _Tolerances) -> str | None:
    """The per-input weighted projection's report; None when it agrees (one JVP or VJP, four evaluations of f).

    The mirror of :func:`_per_entry_failure` on the argument's side: with v, an error
    confined to an entry j of the gradient g = vjp(u) far smaller than the others
    adds v_j·err_j to ⟨g, v⟩, below the tolerance the large entries set: a gradient
    of sum(x·[1e3, 1, 1, 1e-4, 1]) wrong by 100% in entry 3 passed. The direction
    t_j = sign(v_j) / (atol + rtol·|g_j|), scaled down so that no entry moves further
    than v's would (max(1, |x_j|)), counts each entry in units of its own tolerance;
    one entry off by its tolerance moves the projection by ``unit``.
    """
    x = np.asarray(p.floats[pos], dtype=np.float64)
    if x.size < 2:
        return None   # one entry: the plain projection is already that entry's own comparison
    try:
        g = np.asarray(project.gradient(), dtype=np.float64)
    except (AutogradDagError, _DerivativeUnusable):
        return None   # no gradient to weight by (no VJP rule in a forward-only check): nothing to add
    weights = 1.0 / (tol.atol + tol.rtol * np.abs(g))
    if g.shape != x.shape or not np.all(np.isfinite(weights)):
        return None   # a wrong shape or a non-finite gradient fails elsewhere
    unit = 1.0 / float(np.max(weights / _step_scale(x)))
    t = np.sign(v) * weights * unit
    try:
        analytic = project(p.us, t)
    except _DerivativeUnusable as exc:
        return f"    {exc}"
    tangents = _one_leaf_tangents(p.floats, pos, t)
    numeric = _numeric_projection(p, tangents, tol.eps)
    # The differences' rounding, 3·ε·Σ|u f| / step with f rounded to numdiff.ROUNDING_ULPS ulps (a sum of
    # exp over [-20, 20], |f| ~ 8e8, was off by 0.2 where one ulp bounds 0.05): unit is far below it there
    size = sum(float(np.sum(np.abs(u) * np.abs(np.asarray(o, dtype=np.float64)))) for u, o in zip(p.us, p.values))
    # (in the outputs' own precision: an f that casts to float32 rounds at 1e-7)
    precision = numdiff.ROUNDING_ULPS * p.precision
    allowed = unit + 3 * precision * size / tol.eps
    if abs(analytic - numeric) <= allowed:
        return None
    if np.isfinite(analytic) and np.isfinite(numeric):
        # As for the per-output weights: the finer step, believed where its rounding is a tenth of the gap.
        finer_step = tol.eps * FINER_STEP
        finer_rounding = 3 * precision * size / finer_step
        if (finer_rounding <= 0.1 * abs(analytic - numeric)
                and abs(analytic - _numeric_projection(p, tangents, finer_step)) <= unit + finer_rounding):
            return None
    return (f"    per-input projection (each argument entry's weight 1 / (atol + rtol·|g_j|), g = vjp(u), its "
            f"own tolerance): analytic {analytic: .6e}, numeric {numeric: .6e}, difference "
            f"{abs(analytic - numeric):.2e} > {allowed:.2e} allowed: a derivative entry far smaller than the "
            f"others is wrong (the plain projection, dominated by the large entries, agrees)")


def _mode_failure(p: _Point, pos, mode, v, tangents, numeric, tol: _Tolerances, full, fname,
                  finer: Callable[[], tuple[float, float]], jv: list[np.ndarray]) -> str | None:
    """The report on float argument pos in one mode; None when it agrees with finite differences."""
    try:
        project = _analytic_projector(p, pos, mode, v, tangents, fname)
        analytic = project(p.us)
    except _DerivativeUnusable as exc:
        return f"    {exc}"
    bad, line = _projection_line(analytic, numeric, tol)
    if bad and _agrees_at_a_finer_step(analytic, numeric, finer, tol,
                                                    lambda: _adaptive_projection(p, tangents)):
        return None
    weak = None
    if not bad and not full:
        weak = _per_entry_failure(p, project, tangents, jv, tol) or _per_input_failure(p, pos, project, v, tol)
        if weak is None:
            return None
        bad, line = True, weak
    if not (bad or full):
        return None
    lines = [line]
    # Entry-by-entry Jacobians cost one evaluation per entry: only small ones are compared.
    if sum(_size(s) for s in p.out_shapes) * np.size(p.floats[pos]) <= MAX_REPORT_ENTRIES:
        entries_bad, entry_lines = _jacobian_lines(p, pos, mode, tol)
        if weak is not None and not entries_bad:
            return None   # every entry agrees after all: the weighted sum of small differences misled
        if bad and not entries_bad:
            # The entries are computed with unit cotangents (tangents); a rule that ignores
            # or squares them gets every entry right and only the random projection wrong,
            # and "0 of n entries disagree" alone would not say what is wrong.
            entry_lines = [entry_lines[0].replace("; worst:", ""), _NOT_LINEAR[mode]]
        bad, lines = bad or entries_bad, lines + entry_lines
    return "\n".join(lines) if bad else None


def _joint_failure(p: _Point, vs: list, tol: _Tolerances, fname) -> str | None:
    """Forward mode with every float argument moved at once (``vs``), as jax's check_grads does.

    Each argument alone gives the other operands no tangent; here every JVP rule
    gets all of them, and must add their contributions (a rule that keeps only
    ``t[0]`` when both are given is caught here, and gives wrong ``hvp`` s).
    """
    numeric = _numeric_projection(p, vs, tol.eps)
    try:
        _, tout = jvp(p.f, tuple(p.floats), tuple(vs))
    except MissingRuleError as exc:
        raise _missing_rule_error(exc, fname) from None
    except AutogradDagError as exc:
        return f"    the derivative could not be computed: {exc}"
    analytic = sum(float(np.sum(u * np.asarray(t, dtype=np.float64))) for u, t in zip(p.us, flatten(tout)[0]))
    bad, line = _projection_line(analytic, numeric, tol)
    if bad and _agrees_at_a_finer_step(analytic, numeric, _finer_projection(p, vs, tol), tol,
                                       lambda: _adaptive_projection(p, vs)):
        return None
    return line if bad else None


def _once(compute: Callable[[], Any]) -> Callable[[], Any]:
    """``compute`` run on the first call only (both modes of one argument share the finer projection)."""
    cache: list = []

    def value() -> float:
        if not cache:
            cache.append(compute())
        return cache[0]
    return value


def _other_mode_hints(modes, failures) -> list[str]:
    """When one mode agrees everywhere, the other mode's rule is the one to fix: say so."""
    return [f"  {_MODE_LABELS[mode]} agrees with finite differences for every argument: "
            f"look at the {other} rule(s)"
            for mode, other in (("rev", "JVP"), ("fwd", "VJP"))
            if mode in modes and len(modes) == 2 and not any(_MODE_LABELS[mode] in f for f in failures)]


def _projected_derivative(f: Callable, td, float_idx, u_tree, fname) -> Callable:
    """a ↦ vjp(u) of f at a (u fixed), the function whose derivatives order ≥ 2 checks."""
    def derivative(*a):
        a_leaves = flatten(a)[0]
        _, f_vjp = vjp(_on_floats(f, td, a_leaves, float_idx), *[a_leaves[k] for k in float_idx])
        return tuple(f_vjp(u_tree))
    derivative.__name__ = f"d{fname}"
    return derivative


def _tangent_derivative(f: Callable, td, float_idx, tangents, fname) -> Callable:
    """a ↦ jvp(v) of f at a (v fixed): the function whose derivatives check the JVP rules' own derivatives.

    Reverse-over-forward (``grad`` of a ``jvp``) and forward-over-forward
    differentiate the operations a JVP rule records, which the derivative of
    the VJP (:func:`_projected_derivative`) never runs.
    """
    def derivative(*a):
        a_leaves = flatten(a)[0]
        _, tout = jvp(_on_floats(f, td, a_leaves, float_idx), tuple(a_leaves[k] for k in float_idx),
                      tuple(tangents))
        return tout
    derivative.__name__ = f"d{fname}"
    return derivative


@recorded
def check_grads(f: Callable, args: Sequence, order: int = 1, modes: Sequence[str] = ("rev", "fwd"),
                eps: float | None = None, atol: float | None = None, rtol: float | None = None,
                full: bool = False, seed: int = 0, names: Sequence[str] | None = None,
                batched: bool = False) -> None:
    """Check f's reverse- and forward-mode derivatives against central differences.

    ``args`` is a tuple of arrays (or nested structures); every float
    argument is checked, integer ones are held fixed. By default each
    argument is checked through random projections (and two weighted ones that
    give each output entry and each argument entry its own tolerance);
    ``full=True`` compares the whole Jacobian entry by entry. A disagreement is
    looked at again (a 1000 times finer step, then numdiff's adaptive steps)
    before it fails, in either case. ``order=2`` also checks the
    derivatives of the derivatives: of the VJP (``"rev"`` in ``modes``) and of
    the JVP (``"fwd"``), in each of ``modes``, as ``jax.test_util.check_grads``. Defaults: float64
    eps 1e-6, atol 1e-6, rtol 1e-5. Float32 inputs (or outputs): the derivatives are
    computed in float32 and the finite differences in float64 where f computes in
    float64 when given it (else in float32 at step 4.9e-3, atol times max(1, |f|)),
    compared at atol = rtol = sqrt(ε32) = 3.5e-4 (:func:`_default_tolerances`). float16
    is refused unless ``atol`` and ``rtol`` are given.
    ``batched=True`` also compares ``vmap`` of the VJP/JVP over random
    cotangents/tangents with the per-example loop (first order; see
    :mod:`autograd_dag.batched_checking`), as torch's ``check_batched_grad``.

    Raises :class:`GradientCheckError` naming the argument, the mode, and the
    worst entries (index, analytic, numeric, absolute and relative error).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.check_grads(lambda x, w: ad.tanh(x @ w).sum(),
        ...                (np.ones((2, 3)), np.full((3, 4), 0.1)))
    """
    modes = _checked_options(f, order, modes, eps, atol, rtol)
    leaves, td, paths = _checked_leaves(args, modes, atol, rtol)
    fname = getattr(f, "__name__", "f")
    names = _argument_names(f) if names is None else names
    out_td, out_shapes, outputs = _checked_outputs(f, td, leaves, fname, atol is not None and rtol is not None)
    values = _evaluate(f, td, _widened(leaves))
    tol = _default_tolerances(eps, atol, rtol, leaves, outputs, values)
    # A seed fixes the projections through the order of the draws: u for every output, then v per argument.
    rng = np.random.default_rng(seed)
    float_idx = _float_leaves(leaves)
    p = _point(f, td, leaves, float_idx, out_td, out_shapes, [rng.standard_normal(s) for s in out_shapes], values)
    failures: list[str] = []
    vs = []
    for pos, i in enumerate(float_idx):
        x = np.asarray(leaves[i], dtype=np.float64)
        v = rng.standard_normal(x.shape) * _step_scale(x)
        vs.append(v)
        tangents = _one_leaf_tangents(p.floats, pos, v)
        jv = _numeric_directional(p, tangents, tol.eps)
        numeric = sum(float(np.sum(u * d)) for u, d in zip(p.us, jv))
        finer = _finer_projection(p, tangents, tol)
        for mode in modes:
            failure = _mode_failure(p, pos, mode, v, tangents, numeric, tol, full, fname, finer, jv)
            if failure:
                failures.append(f"  {_describe_arg(names, paths[i], leaves[i])}, "
                                f"{_MODE_LABELS[mode]}: {_PROJECTIONS[mode]}:\n{failure}")
    if "fwd" in modes and len(vs) > 1 and not failures:
        failure = _joint_failure(p, vs, tol, fname)
        if failure:
            failures.append(f"  all {len(vs)} float arguments moved together, {_MODE_LABELS['fwd']}: "
                            f"{_PROJECTIONS['fwd']}:\n{failure}\n    each argument alone agrees: a JVP rule "
                            f"combines the tangents of its operands wrongly")
    if batched:
        failures += batched_failures(p.f, p.floats, p.out_shapes, p.out_td, modes, tol.atol, tol.rtol, seed,
                                     [_describe_arg(names, paths[i], leaves[i]) for i in float_idx])
    if failures:
        raise GradientCheckError(f"check_grads({fname}): analytic and numerical derivatives disagree\n"
                                 + "\n".join(failures + _other_mode_hints(modes, failures)))
    if order < 2:
        return
    # As jax.test_util.check_grads: each mode's derivative, as a function of the point, is
    # checked in turn, so that every rule that runs at order 2 (the VJP's and the JVP's) is.
    derivatives = []
    if "rev" in modes:
        derivatives.append((_projected_derivative(f, td, float_idx, p.u_tree, fname),
                            f"<u, ∂{fname}> (u random, reverse mode)"))
    if "fwd" in modes:
        vs = [rng.standard_normal(np.shape(x)) for x in p.floats]
        derivatives.append((_tangent_derivative(f, td, float_idx, vs, fname),
                            f"∂{fname}·v (v random, forward mode)"))
    for k, (derivative, what) in enumerate(derivatives):
        try:
            check_grads(derivative, tuple(unflatten(td, leaves)), order=order - 1, modes=modes, eps=tol.eps,
                        atol=tol.atol, rtol=tol.rtol, full=full, seed=seed + 1 + k, names=names)
        except GradientCheckError as exc:
            raise GradientCheckError(f"check_grads({fname}, order {order}): the derivative "
                                     f"{what} is itself wrongly differentiated:\n{exc}") from None
