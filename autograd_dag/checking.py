"""Gradient verification: analytic derivatives against central finite differences.

``check_grads(f, args)`` compares reverse mode (VJP) and forward mode (JVP)
with central differences in float64. By default it compares random
projections, one argument at a time (⟨u, J v⟩ numerically against
⟨vjp(u), v⟩ and ⟨u, jvp(v)⟩): cheap and, with probability one, sensitive to
any wrong entry. When a projection disagrees it computes the Jacobian of that
argument entry by entry and reports the worst entries, so the message says
*where* the derivative is wrong, not just that it is.
"""

from __future__ import annotations

import inspect
from typing import Callable, Sequence

import numpy as np

from .autodiff import jvp, vjp
from .tracing import refuse_complex
from .core import Tensor, no_grad
from .errors import AutogradDagError, GradientCheckError, MissingRuleError
from .tree import flatten, leaf_paths, unflatten

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
    with no_grad():
        return [o.astype(np.float64) if o.dtype == np.bool_ else o
                for o in _values(f(*unflatten(arg_td, [Tensor(x) for x in leaves])))]


def _float_leaves(leaves) -> list[int]:
    return [i for i, x in enumerate(leaves) if np.asarray(x).dtype.kind == "f"]


def _refuse_complex_leaves(leaves, what: str) -> None:
    # A complex argument would be perturbed along the real axis only (or not
    # at all), so a wrong derivative could pass: refuse it, as grad does.
    for i, x in enumerate(leaves):
        refuse_complex(x.value if isinstance(x, Tensor) else x, f"{what}: argument leaf {i}")


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
    t_leaves, _ = flatten(tuple(tangents))
    _refuse_complex_leaves(leaves, "numerical_jvp")
    plus = [np.asarray(x, dtype=np.float64) + eps * np.asarray(t) if np.asarray(x).dtype.kind == "f"
            else np.asarray(x) for x, t in zip(leaves, t_leaves)]
    minus = [np.asarray(x, dtype=np.float64) - eps * np.asarray(t) if np.asarray(x).dtype.kind == "f"
             else np.asarray(x) for x, t in zip(leaves, t_leaves)]
    return [(a - b) / (2 * eps) for a, b in zip(_evaluate(f, td, plus), _evaluate(f, td, minus))]


def numerical_grad(f: Callable, args: Sequence, eps: float | None = None) -> tuple:
    """Central-difference gradient of a scalar ``f`` w.r.t. every float argument.

    The step for entry i is ``eps · max(1, |x_i|)`` (``eps`` default 1e-6).
    Shapes: one array per argument, of that argument's shape (None for
    non-float arguments).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.numerical_grad(lambda x: (x ** 2).sum(), (np.array([1.0, 2.0]),))[0].round(5)
        array([2., 4.])
    """
    eps = DEFAULT_EPS if eps is None else eps
    leaves, td = flatten(tuple(args))
    leaves = [np.asarray(x) for x in leaves]
    _refuse_complex_leaves(leaves, "numerical_grad")
    out = _evaluate(f, td, leaves)
    if len(out) != 1 or out[0].size != 1:
        raise AutogradDagError("numerical_grad: f must return one scalar; use numerical_jvp otherwise")
    # The gradient of a scalar is the one row of its Jacobian.
    grads = [_numerical_jacobian(f, td, leaves, i, eps).reshape(x.shape) if x.dtype.kind == "f" else None
             for i, x in enumerate(leaves)]
    return unflatten(td, grads)


def _numerical_jacobian(f, td, leaves, i, eps) -> np.ndarray:
    """Rows: output entries (all outputs flattened); columns: entries of argument i."""
    x = np.asarray(leaves[i], dtype=np.float64)
    steps = eps * _step_scale(x)
    cols = []
    for j in np.ndindex(x.shape):
        shifted = list(leaves)
        xp = x.copy()
        xp[j] += steps[j]
        shifted[i] = xp
        fp = np.concatenate([o.ravel() for o in _evaluate(f, td, shifted)])
        xm = x.copy()
        xm[j] -= steps[j]
        shifted[i] = xm
        fm = np.concatenate([o.ravel() for o in _evaluate(f, td, shifted)])
        cols.append((fp - fm) / (2 * steps[j]))
    return np.stack(cols, axis=1) if cols else np.zeros((0, 0))


def _analytic_jacobian(f, td, leaves, i, mode, out_shapes, out_td) -> np.ndarray:
    x = np.asarray(leaves[i])
    n_out = sum(int(np.prod(s, dtype=np.int64)) for s in out_shapes)
    if mode == "rev":
        _, f_vjp = vjp(lambda *a: f(*a), *unflatten(td, leaves))
        rows = []
        for r in range(n_out):
            flat = np.zeros(n_out)
            flat[r] = 1.0
            cts, offset = [], 0
            for s in out_shapes:
                size = int(np.prod(s, dtype=np.int64))
                cts.append(flat[offset:offset + size].reshape(s))
                offset += size
            cts_tree = unflatten(out_td, cts)
            g_leaves, _ = flatten(f_vjp(cts_tree))
            rows.append(np.asarray(g_leaves[i], dtype=np.float64).ravel())
        return np.stack(rows) if rows else np.zeros((0, x.size))
    cols = []
    for j in np.ndindex(x.shape):
        tangents = [np.zeros(np.shape(leaf)) for leaf in leaves]
        tangents[i] = np.zeros(x.shape)
        tangents[i][j] = 1.0
        _, tout = jvp(f, unflatten(td, leaves), unflatten(td, tangents))
        cols.append(np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in flatten(tout)[0]]))
    return np.stack(cols, axis=1) if cols else np.zeros((n_out, 0))


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


def _worst_entries(analytic, numeric, out_shapes, x_shape, atol, rtol, k=5) -> list[str]:
    err = np.abs(analytic - numeric)
    scale = np.maximum(np.abs(analytic), np.abs(numeric))
    excess = err - (atol + rtol * scale)
    order = np.argsort(excess, axis=None)[::-1][:k]
    lines = []
    boundaries = np.cumsum([0] + [int(np.prod(s, dtype=np.int64)) for s in out_shapes])
    for flat in order:
        r, c = np.unravel_index(flat, analytic.shape)
        if excess[r, c] <= 0:
            break
        o = int(np.searchsorted(boundaries, r, side="right") - 1)
        out_idx = np.unravel_index(r - boundaries[o], out_shapes[o]) if out_shapes[o] else ()
        in_idx = np.unravel_index(c, x_shape) if x_shape else ()
        rel = err[r, c] / scale[r, c] if scale[r, c] > 0 else np.inf
        out_label = f"output {o} " if len(out_shapes) > 1 else "output "
        lines.append(f"    d {out_label}{tuple(int(v) for v in out_idx)} / d input {tuple(int(v) for v in in_idx)}: "
                     f"analytic {analytic[r, c]: .6e}, numeric {numeric[r, c]: .6e}, "
                     f"abs err {err[r, c]:.2e}, rel err {rel:.2e}")
    return lines


def check_grads(f: Callable, args: Sequence, order: int = 1, modes: Sequence[str] = ("rev", "fwd"),
                eps: float | None = None, atol: float | None = None, rtol: float | None = None,
                full: bool = False, seed: int = 0, names: Sequence[str] | None = None) -> None:
    """Check f's reverse- and forward-mode derivatives against central differences.

    ``args`` is a tuple of arrays (or nested structures); every float
    argument is checked, integer ones are held fixed. By default each
    argument is checked through random projections; ``full=True`` compares
    the whole Jacobian entry by entry. ``order=2`` also checks the
    derivatives of the derivatives. Inputs must be float64: float32/16
    finite differences are too coarse to tell a wrong derivative from
    rounding, so they are refused unless ``atol`` and ``rtol`` are given.

    Raises :class:`GradientCheckError` naming the argument, the mode, and the
    worst entries (index, analytic, numeric, absolute and relative error).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.check_grads(lambda x, w: ad.tanh(x @ w).sum(),
        ...                (np.ones((2, 3)), np.full((3, 4), 0.1)))
    """
    if not isinstance(args, (tuple, list)):
        raise AutogradDagError("check_grads: args must be a tuple of arguments, e.g. (x,) or (x, w)")
    for m in modes:
        if m not in ("rev", "fwd"):
            raise AutogradDagError(f"check_grads: unknown mode {m!r}; use 'rev' and/or 'fwd'")
    leaves, td = flatten(tuple(args))
    paths = leaf_paths(tuple(args))
    leaves = [x.value if isinstance(x, Tensor) else np.asarray(x, dtype=np.float64)
              if isinstance(x, (int, float, list)) else np.asarray(x) for x in leaves]
    _refuse_complex_leaves(leaves, "check_grads")
    low = [np.asarray(x).dtype for x in leaves if np.asarray(x).dtype.kind == "f"
           and np.asarray(x).dtype.itemsize < 8]
    if low and (atol is None or rtol is None):
        raise AutogradDagError(
            f"check_grads: inputs of dtype {low[0]} were given. Central differences in that precision "
            f"cannot separate a wrong derivative from rounding error (the rounding error of f(x±h)/2h is "
            f"about machine-eps/h). Check in float64 (x.astype(np.float64)), or pass atol= and rtol= "
            f"explicitly if you accept loose tolerances")
    eps = DEFAULT_EPS if eps is None else eps
    atol = DEFAULT_ATOL if atol is None else atol
    rtol = DEFAULT_RTOL if rtol is None else rtol
    fname = getattr(f, "__name__", "f")
    if names is None:
        try:
            names = [p.name for p in inspect.signature(f).parameters.values()]
        except (TypeError, ValueError):
            names = None
    with no_grad():
        out = f(*unflatten(td, [Tensor(x) for x in leaves]))
    out_td = flatten(out)[1]
    out_vals = _values(out)
    for k, o in enumerate(out_vals):
        refuse_complex(o, f"check_grads: output leaf {k}")
    out_shapes = [o.shape for o in out_vals]
    rng = np.random.default_rng(seed)
    float_idx = _float_leaves(leaves)
    us = [rng.standard_normal(s) for s in out_shapes]
    u_tree = unflatten(out_td, us)
    failures: list[str] = []
    f_floats = _on_floats(f, td, leaves, float_idx)
    floats = [leaves[k] for k in float_idx]
    floats_td = flatten(tuple(floats))[1]
    for pos, i in enumerate(float_idx):
        x = np.asarray(leaves[i], dtype=np.float64)
        v = rng.standard_normal(x.shape) * _step_scale(x)
        tangents = [np.zeros(np.shape(leaf)) for leaf in floats]
        tangents[pos] = v
        numeric = sum(float(np.sum(u * n)) for u, n in
                      zip(us, numerical_jvp(f_floats, floats, tangents, eps)))
        for mode in modes:
            # A derivative of the wrong shape could still give the right
            # projection by broadcasting: shapes are checked first.
            what = "reverse mode (VJP): <vjp(u), v>" if mode == "rev" else "forward mode (JVP): <u, jvp(v)>"
            try:
                if mode == "rev":
                    _, f_vjp = vjp(f_floats, *floats)
                    g = np.asarray(f_vjp(u_tree)[pos], dtype=np.float64)
                    got, expected = [g.shape], [x.shape]
                else:
                    _, tout = jvp(f_floats, tuple(floats), tuple(tangents))
                    t_leaves = [np.asarray(t) for t in flatten(tout)[0]]
                    got, expected = [t.shape for t in t_leaves], list(out_shapes)
            except MissingRuleError as exc:
                other = "rev" if exc.rule == "JVP" else "fwd"
                raise GradientCheckError(
                    f"check_grads({fname}): no {exc.rule} rule for '{exc.primitive}', so "
                    f"{'forward' if exc.rule == 'JVP' else 'reverse'} mode cannot be checked; pass "
                    f"modes=({other!r},) to check the other mode only") from None
            except AutogradDagError as exc:
                # The drivers refuse a rule that returns a wrong shape: that is
                # a failed check of this argument and mode, not a crash.
                failures.append(f"  {_describe_arg(names, paths[i], leaves[i])}, {what}:\n"
                                f"    the derivative could not be computed: {exc}")
                continue
            if got != expected:
                failures.append(f"  {_describe_arg(names, paths[i], leaves[i])}, {what}:\n"
                                f"    the derivative has shape {', '.join(map(str, got))}; expected "
                                f"{', '.join(map(str, expected))}")
                continue
            if mode == "rev":
                analytic = float(np.sum(g * v))
            else:
                analytic = sum(float(np.sum(u * t)) for u, t in zip(us, t_leaves))
            err = abs(analytic - numeric)
            tol = atol + rtol * max(abs(analytic), abs(numeric))
            bad_projection = not np.isfinite(analytic) or err > tol
            if not (bad_projection or full):
                continue
            report = [f"  {_describe_arg(names, paths[i], leaves[i])}, {what}:",
                      f"    projection: analytic {analytic: .6e}, numeric {numeric: .6e}, abs err {err:.2e} "
                      f"(tolerance {tol:.2e} = atol {atol:g} + rtol {rtol:g} * |value|)"]
            n_out = sum(o.size for o in out_vals)
            if n_out * x.size <= MAX_REPORT_ENTRIES:
                J_num = _numerical_jacobian(f_floats, floats_td, floats, pos, eps)
                J_ana = _analytic_jacobian(f_floats, floats_td, floats, pos, mode, out_shapes, out_td)
                entry_err = np.abs(J_ana - J_num)
                entry_bad = entry_err > atol + rtol * np.maximum(np.abs(J_ana), np.abs(J_num))
                if not (bad_projection or entry_bad.any() or not np.all(np.isfinite(J_ana))):
                    continue
                report.append(f"    {int(entry_bad.sum())} of {entry_bad.size} Jacobian entries disagree; worst:")
                report += _worst_entries(J_ana, J_num, out_shapes, x.shape, atol, rtol)
            elif not bad_projection:
                continue
            failures.append("\n".join(report))
    if failures:
        # When one mode agrees everywhere, the other mode's rule is the one to fix.
        for mode, rule, other in (("rev", "VJP", "JVP"), ("fwd", "JVP", "VJP")):
            label = "reverse mode (VJP)" if mode == "rev" else "forward mode (JVP)"
            if mode in modes and len(modes) == 2 and not any(label in f for f in failures):
                failures.append(f"  {label} agrees with finite differences for every argument: "
                                f"look at the {other} rule(s)")
        raise GradientCheckError(f"check_grads({fname}): analytic and numerical derivatives "
                                 f"disagree\n" + "\n".join(failures))
    if order >= 2:
        def derivative(*a):
            a_leaves = flatten(a)[0]
            _, f_vjp = vjp(_on_floats(f, td, a_leaves, float_idx), *[a_leaves[k] for k in float_idx])
            return tuple(f_vjp(u_tree))
        derivative.__name__ = f"d{fname}"
        try:
            check_grads(derivative, tuple(unflatten(td, leaves)), order=order - 1, modes=modes, eps=eps,
                        atol=atol, rtol=rtol, full=full, seed=seed + 1, names=names)
        except GradientCheckError as exc:
            raise GradientCheckError(f"check_grads({fname}, order {order}): the derivative "
                                     f"<u, ∂{fname}> (u random) is itself wrongly differentiated:\n{exc}") from None
