"""Check a user's own derivatives: hand-written gradients, Jacobians, VJPs, JVPs and Hessians of plain numpy code.

``check_grads`` checks the derivatives this library computes; the functions here
check derivatives a user wrote by hand (a physics code's gradient, a ``jac=`` for
``scipy.optimize``, a backward pass written for a course). f and the derivative
are plain Python/numpy functions of pytrees of arrays (tuples, lists, dicts);
no Tensor is needed. The hand-written derivative is turned into a Jacobian,
one matrix per float argument leaf (rows: f's output entries, columns: the
argument's entries), and compared entry by entry with central differences
(extrapolated), with check_grads' report: the worst entries with their indices,
hand-written ("analytic") against numeric values, kinks with their one-sided
derivatives, NaN/inf entries first, and a re-look at a finer step where a
difference may have straddled a kink. Where f also runs on Tensors (numpy
dispatch), our autodiff's Jacobian is a third opinion: the report says which
two of {hand-written, autodiff, finite differences} agree, hence who is wrong.

Calling conventions (``args`` is the tuple of f's arguments; with ONE argument
the per-argument level is dropped, so ``grad_f(x)`` returns the gradient
itself, not a 1-tuple, though a 1-tuple is accepted too):

* ``grad_f(*args)`` -> the gradient in the structure of ``args`` (of
  ``args[0]`` for one argument), each leaf of its argument's shape.
* ``jac_f(*args)`` -> for each output leaf of f (in f's output structure), one
  block per argument leaf (in args' structure) of shape ``out.shape + x.shape``:
  one output, one argument: an array of shape ``out.shape + x.shape``.
* ``vjp_f(*args, ct)`` -> ⟨ct, ∂f⟩ in the structure of ``args``; ``ct`` has
  f's output structure and shapes.
* ``jvp_f(*args, tangents)`` -> ∂f·t in f's output structure; ``tangents``
  has args' structure (one tangent per argument; for one argument, the
  tangent itself).
* ``hess_f(*args)`` -> for a scalar f, block (i, j) of shape
  ``x_i.shape + x_j.shape`` nested as args-of-args (one argument: an array of
  shape ``x.shape + x.shape``), as ``jax.hessian``.

Cost: the whole Jacobian is differenced, 4 evaluations of f per argument entry
(check_hessian: about 16·n² for n entries), and the user's VJP (JVP) is called
once per output (argument) entry; autodiff runs only when a comparison fails.

Non-float leaves of ``args`` (indices, labels, flags) are held fixed: the
derivative's entries for them may be anything (``None``), and a tangent for
them is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .autodiff import vjp
from .checking import (DEFAULT_ATOL, DEFAULT_EPS, DEFAULT_RTOL, _Tolerances, _analytic_jacobian,
                       _argument_names, _as_leaf, _checked_options, _describe_arg, _difference_jacobians,
                       _entry_bad, _entry_comparison, _evaluate_flat_moved, _extrapolated, _float_leaves,
                       _is_float_leaf, _kinks, _once, _on_floats, _output_labels, _refuse_complex_leaves,
                       _refuse_non_numbers,
                       _second_look, _size, numerical_grad)
from .check_records import recorded
from .core import Tensor
from .errors import AutogradDagError, GradientCheckError
from .tree import flatten, leaf_paths, unflatten

__all__ = ["check_gradient", "check_jacobian", "check_vjp", "check_jvp", "check_hessian"]

# The finite-difference steps of check_hessian: the gradient is differenced at INNER, and
# differenced again at OUTER. A second difference at float64's 1e-6 would divide the inner
# one's rounding (~1e-16/1e-3) by 1e-6: 1e-7 noise; at 1e-4, 1e-9, and Richardson's
# extrapolation keeps both truncation errors at about step⁴.
HESSIAN_INNER_EPS = 1e-3
HESSIAN_OUTER_EPS = 1e-4


class _Slot:
    """A leaf of an expected structure: the shape it must have (None: anything, a non-float argument's slot)."""

    def __init__(self, shape):
        self.shape = shape

    def __repr__(self) -> str:
        return "any" if self.shape is None else f"array{self.shape}"


def _described(tree) -> str:
    """A structure with each leaf shown by its shape, for 'returned ...; expected ...'."""
    leaves, td = flatten(tree)
    return repr(unflatten(td, [x if isinstance(x, _Slot) else _Slot(np.shape(x)) if x is not None
                               else _Slot(None) for x in leaves]))


@dataclass
class _Check:
    """One point and one f: what every comparison of a user's derivative shares."""
    what: str                 # "check_gradient", ...
    fname: str
    dname: str                # the derivative's name, for the report
    args: tuple               # as the user gave them (the derivative is called with these)
    leaves: list              # args' leaves, floats as arrays
    td: Any
    paths: list
    names: list | None
    float_idx: list[int]
    plain: Callable           # f called with numpy arrays (the machinery passes Tensors)
    out_td: Any
    out_shapes: list[tuple]
    out_flat: np.ndarray      # f's outputs at the point, flattened (their size bounds the rounding)
    tol: _Tolerances
    precision: float          # machine epsilon of the lowest float precision f sees or returns
    reference: Callable | None = None   # what is differenced: plain, or f in float64 (see _widen)

    @property
    def fd_precision(self) -> float:
        """The machine epsilon the differences round at: float64's if f is differenced widened."""
        return float(np.finfo(np.float64).eps) if self.reference is not self.plain else self.precision

    def arg_template(self, slot_of) -> list:
        """Expected structures with the argument level: args', and for one argument args[0]'s too."""
        tree = unflatten(self.td, [slot_of(i) for i in range(len(self.leaves))])
        return [tree[0], tree] if len(self.args) == 1 else [tree]

    def arg_slot(self, i) -> _Slot:
        return _Slot(tuple(np.shape(self.leaves[i])) if i in self.float_idx else None)

    def label(self, i) -> str:
        return _describe_arg(self.names, self.paths[i], self.leaves[i])


def _plain(f: Callable, dtypes: list) -> Callable:
    """f called with numpy arrays; each float leaf in its own dtype (a float32 f computes in float32)."""
    def plain(*a):
        leaves, td = flatten(a)
        values = [x.value if isinstance(x, Tensor) else x for x in leaves]
        return f(*unflatten(td, [np.asarray(v).astype(d) if d is not None else v
                                 for v, d in zip(values, dtypes)]))
    return plain


def _output_values(out) -> list[np.ndarray]:
    # Booleans as 0/1, as check_grads differences them.
    values = [np.asarray(o.value if isinstance(o, Tensor) else o) for o in flatten(out)[0]]
    return [v.astype(np.float64) if v.dtype == np.bool_ else v for v in values]


def _setup(what, f, derivative, args, dname, eps, atol, rtol, names, scalar: bool) -> _Check:
    try:
        _checked_options(f, 1, ("rev",), eps, atol, rtol)
    except AutogradDagError as exc:
        raise AutogradDagError(str(exc).replace("check_grads", what, 1)) from None
    if not callable(derivative):
        raise AutogradDagError(f"{what}: the {dname} function must be callable, got {type(derivative).__name__}")
    if not isinstance(args, (tuple, list)):
        raise AutogradDagError(f"{what}: args must be a tuple of arguments, e.g. (x,) or (x, w)")
    args = tuple(args)
    leaves, td = flatten(args)
    leaves = [_as_leaf(x) for x in leaves]
    _refuse_complex_leaves(leaves, what)
    float_idx = _float_leaves(leaves)
    if not float_idx:
        raise AutogradDagError(f"{what}: no floating-point argument to check; pass the point as floats, "
                               f"e.g. 2.0 or x.astype(np.float64)")
    fname = getattr(f, "__name__", "f")
    plain = _plain(f, [x.dtype if _is_float_leaf(x) else None for x in leaves])
    out = plain(*unflatten(td, leaves))
    out_vals, out_td = _output_values(out), flatten(out)[1]
    again = _output_values(plain(*unflatten(td, leaves)))
    for k, (a, b) in enumerate(zip(out_vals, again)):
        if a.dtype.kind == "c":
            raise AutogradDagError(f"{what}({fname}): output leaf {k} is complex; only real functions are checked")
        _refuse_non_numbers(a, k, f"{what}({fname})")
        # Bit for bit on purpose, as check_grads: the same code on the same numbers rounds the same way.
        if not np.array_equal(a, b, equal_nan=True):
            raise GradientCheckError(f"{what}({fname}): f gives different values at the same point (output "
                                     f"leaf {k}), so finite differences cannot measure its derivative. Random "
                                     f"numbers inside f? Fix them (a seeded generator made inside f)")
    if scalar and (len(out_vals) != 1 or out_vals[0].size != 1):
        raise AutogradDagError(f"{what}({fname}): f must return one scalar; it returned "
                               f"{_described(out)} (use check_jacobian or check_vjp for other outputs)")
    dtypes = [leaves[i].dtype for i in float_idx] + [o.dtype for o in out_vals if o.dtype.kind == "f"]
    precision = max(float(np.finfo(d).eps) for d in dtypes)
    out_flat = np.concatenate([o.astype(np.float64).ravel() for o in out_vals]) if out_vals else np.zeros(0)
    if precision > np.finfo(np.float64).eps:
        # Lower precision: the step that balances rounding (precision/step) against Richardson's
        # truncation, a tolerance of sqrt(precision), and atol grown with |f| since the
        # differences' rounding is precision·|f|/step.
        loose = np.sqrt(precision)
        size = max(1.0, float(np.max(np.abs(out_flat), initial=0.0)))
        tol = _Tolerances(precision ** (1 / 3) if eps is None else eps, loose * size if atol is None else atol,
                          loose if rtol is None else rtol)
    else:
        tol = _Tolerances(DEFAULT_EPS if eps is None else eps, DEFAULT_ATOL if atol is None else atol,
                          DEFAULT_RTOL if rtol is None else rtol)
    c = _Check(what, fname, dname, args, leaves, td, leaf_paths(args),
               _argument_names(f) if names is None else list(names), float_idx, plain, out_td,
               [o.shape for o in out_vals], out_flat, tol, precision, plain)
    if precision > np.finfo(np.float64).eps:
        _widen(c, f, eps, atol)
    return c


def _widen(c: _Check, f: Callable, eps, atol) -> None:
    """A float32 check differences f in float64 (if f computes in float64 when given it), at float64's step.

    Differenced in float32 at ε32^(1/3) = 4.9e-3, a right gradient (-18.598) of a chain of
    log(1 + h²), softmax and tanh at |x| ~ 3 failed: the differences (step 1.5e-2 there) gave
    -18.580, 1.7e-2 off against a tolerance of 8.4e-3. Widened, only the hand-written derivative is
    float32, compared at float32's tolerances (atol = rtol = sqrt(ε32)), as check_grads does.
    """
    reference = _wide(c, f)
    if reference is c.plain:
        return
    c.reference = reference
    c.tol = c.tol._replace(eps=DEFAULT_EPS if eps is None else eps,
                           atol=float(np.sqrt(c.precision)) if atol is None else atol)


def _parsed(c: _Check, result, templates: list, labels: list[str]) -> list:
    """The leaves of the user's ``result``, if its structure is one of ``templates``; shapes checked leaf by leaf."""
    got, got_td = flatten(result)
    expected = None
    for template in templates:
        slots, td = flatten(template)
        if td == got_td:
            expected = slots
            break
    if expected is None:
        raise GradientCheckError(f"{c.what}({c.fname}): {c.dname} returned {_described(result)}; expected "
                                 f"{' or '.join(_described(t) for t in templates)}")
    values = []
    for leaf, slot, label in zip(got, expected, labels):
        if slot.shape is None:
            values.append(None)
            continue
        if tuple(np.shape(leaf)) != slot.shape:
            raise GradientCheckError(f"{c.what}({c.fname}): {c.dname} returned shape {tuple(np.shape(leaf))} "
                                     f"for {label}; expected {slot.shape}")
        try:
            values.append(np.asarray(leaf, dtype=np.float64))
        except (TypeError, ValueError) as exc:
            raise GradientCheckError(f"{c.what}({c.fname}): {c.dname} returned a non-number for {label}: "
                                     f"{exc}") from None
    return values


def _blocks_template(c: _Check, out_slots: list[_Slot], out_td) -> tuple[list, list[str], list[tuple]]:
    """The structures of a Jacobian (per output leaf, per argument leaf), their labels and (k, i) places."""
    n = len(c.leaves)
    labels, places = [], []
    out_labels = _output_labels(out_td, len(out_slots))
    per_out = []
    for k, slot in enumerate(out_slots):
        per_out.append(unflatten(c.td, [_Slot(slot.shape + tuple(np.shape(c.leaves[i])))
                                        if i in c.float_idx and slot.shape is not None else _Slot(None)
                                        for i in range(n)]))
        for i in range(n):
            labels.append(f"the block d {out_labels[k].strip()} (of shape {slot.shape}) / d {c.label(i)}")
            places.append((k, i))
    one_arg = len(c.args) == 1
    templates = [unflatten(out_td, per_out)]
    if one_arg:
        templates.insert(0, unflatten(out_td, [t[0] for t in per_out]))
    return templates, labels, places


def _jacobians_from_blocks(c: _Check, values, places, out_shapes) -> dict[int, np.ndarray]:
    """{float leaf i: Jacobian rows = output entries, columns = entries of leaf i} from the blocks."""
    jac = {}
    for i in c.float_idx:
        size = _size(np.shape(c.leaves[i]))
        rows = [v.reshape(_size(out_shapes[k]), size) for v, (k, j) in zip(values, places) if j == i]
        jac[i] = np.concatenate(rows, axis=0) if rows else np.zeros((0, size))
    return jac


def _finer_look(c: _Check, f_fd, i, J_user, J_num) -> np.ndarray:
    """J_num with the disagreeing entries replaced where a second look is believed (check_grads' re-look:
    a finer step, then numdiff's adaptive steps; see :func:`autograd_dag.checking._second_look`)."""
    return _second_look(f_fd, c.td, c.leaves, i, J_user, J_num, c.tol, c.fd_precision, c.out_flat)


# The second look of check_hessian: both steps times each factor (1: the first look).
HESSIAN_STEP_FACTORS = (0.25, 1.0, 4.0, 16.0, 64.0)


def _hessian_second_look(c: _Check, gradient_at: Callable, i, J_user, J_num) -> np.ndarray:
    """J_num with the disagreeing entries replaced where differences at other steps are believed.

    No fixed pair of steps suits every f: at (1e-3, 1e-4) the rounding of sum(x⁴) at
    |x| ~ 16 (|f| ~ 1e5) is 1.8e-4 on ∂²/∂x₃² = 2.7 (tolerance 2.8e-5), and at steps 10
    times larger sin(10·x) at |x| ~ 10 is off by its truncation. As numdiff does, each
    column in doubt is differenced with both steps times HESSIAN_STEP_FACTORS, and an entry
    takes the value whose gap to the next larger factor's (truncation and rounding both
    show in it) is the least, believed where that gap is a tenth of its tolerance, agreeing
    or not (the report then shows the better value). A wrong entry disagrees at every step.
    """
    bad = _entry_bad(J_user, J_num, c.tol) & np.isfinite(J_user)
    if not bad.any():
        return J_num
    J_num = np.array(J_num, dtype=np.float64)
    x = np.asarray(c.leaves[i], dtype=np.float64)
    allowed = c.tol.atol + c.tol.rtol * np.abs(J_user)
    for col in np.flatnonzero(bad.any(axis=0)):
        j = np.unravel_index(col, x.shape) if x.shape else ()
        values = []
        for k in HESSIAN_STEP_FACTORS:
            if k == 1.0:
                values.append(J_num[:, col])
                continue
            g, step = gradient_at(k), c.tol.eps * k * max(1.0, abs(float(x[j])))
            fp, fm, fp2, fm2 = (_evaluate_flat_moved(g, c.td, c.leaves, i, j, s)
                                for s in (step, -step, step / 2, -step / 2))
            values.append(_extrapolated((fp - fm) / (2 * step), (fp2 - fm2) / step))
        values = np.array(values)
        with np.errstate(invalid="ignore"):
            gaps = np.abs(values[:-1] - values[1:])
        gaps = np.where(np.isfinite(gaps), gaps, np.inf)
        best = np.argmin(gaps, axis=0)
        rows = np.arange(values.shape[1])
        believed = bad[:, col] & (gaps[best, rows] <= 0.1 * allowed[:, col])
        J_num[:, col] = np.where(believed, values[best, rows], J_num[:, col])
    return J_num


def _entry_names(flat_indices, out_shapes, x_shape, out_labels) -> str:
    """``d output (2,) / d input (3, 1)`` for a few (row, column) entries."""
    boundaries = np.cumsum([0] + [_size(s) for s in out_shapes])
    names = []
    for r, col in flat_indices[:3]:
        o = int(np.searchsorted(boundaries, r, side="right") - 1)
        out_idx = np.unravel_index(r - boundaries[o], out_shapes[o]) if out_shapes[o] else ()
        in_idx = np.unravel_index(col, x_shape) if x_shape else ()
        head = out_labels[o].strip() if len(out_shapes) > 1 else "output"
        names.append(f"d {head} {tuple(int(v) for v in out_idx)} / d input {tuple(int(v) for v in in_idx)}")
    return ", ".join(names) + (", ..." if len(flat_indices) > 3 else "")


def _three_way(c: _Check, J_user, J_auto, J_num, sides, out_shapes, out_td, x_shape) -> list[str]:
    """Which two of {hand-written, autodiff, finite differences} agree on the entries that fail.

    Entries on a kink are left out: no derivative exists there, so no one of the three is wrong.
    """
    bad = _entry_bad(J_user, J_num, c.tol)
    if sides is not None:
        bad &= ~_kinks(*sides, c.tol.atol, c.tol.rtol)
    auto_fd = ~_entry_bad(J_auto, J_num, c.tol)
    user_auto = ~_entry_bad(J_user, J_auto, c.tol)
    labels = _output_labels(out_td, len(out_shapes))
    lines = []
    for mask, verdict in (
            (bad & auto_fd, "the hand-written {d} disagrees with both autodiff and finite differences in {n} "
                            "entr{y} ({where}): it is the one that is wrong"),
            (bad & user_auto & ~auto_fd, "the hand-written {d} agrees with autodiff in {n} entr{y} where finite "
                                         "differences differ ({where}): f is not differentiable there (a kink, "
                                         "a jump) or varies within a step; the hand-written {d} is likely right"),
            (bad & ~auto_fd & ~user_auto, "hand-written, autodiff and finite differences all differ in {n} "
                                          "entr{y} ({where})")):
        if mask.any():
            where = _entry_names([tuple(int(v) for v in e) for e in np.argwhere(mask)], out_shapes, x_shape,
                                 labels)
            n = int(mask.sum())
            lines.append("    " + verdict.format(d=c.dname, n=n, y="y" if n == 1 else "ies", where=where))
    return lines


def _autodiff_jacobians(c: _Check, f, second: bool) -> tuple[Callable | None, str]:
    """(i ↦ our autodiff's Jacobian of float leaf i, '') where f runs on Tensors; else (None, why not).

    ``second``: the Jacobian of f's gradient (its Hessian) instead of f's.
    """
    try:
        out = f(*unflatten(c.td, [Tensor(x) if k in c.float_idx else x for k, x in enumerate(c.leaves)]))
    except Exception as exc:   # any failure of user code on Tensors only means no third opinion
        return None, f"f could not run on Tensors ({type(exc).__name__}: {exc})"
    for k, o in enumerate(flatten(out)[0]):
        if not isinstance(o, Tensor):
            return None, (f"f returned {type(o).__name__}, not a Tensor, for output leaf {k} on Tensor inputs "
                          f"(it converts to numpy, e.g. np.asarray, or calls what numpy dispatch does not reach)")
    values = np.concatenate([np.asarray(o.value, dtype=np.float64).ravel() for o in flatten(out)[0]])
    # Two code paths compute f (numpy's and ours): equal up to rounding, amplified by cancellation.
    if values.shape != c.out_flat.shape or not np.allclose(values, c.out_flat, rtol=1e3 * c.precision,
                                                            atol=1e3 * c.precision):
        return None, "f gives other values on Tensors than on arrays, so autodiff would differentiate another f"
    floats = [c.leaves[k] for k in c.float_idx]
    floats_td = flatten(tuple(floats))[1]
    g = _on_floats(f, c.td, c.leaves, c.float_idx)
    if second:
        ones = unflatten(c.out_td, [np.ones(s) for s in c.out_shapes])
        grad_of = g

        def g(*a):
            return tuple(vjp(grad_of, *a)[1](ones))
        out_td, out_shapes = floats_td, [np.shape(x) for x in floats]
    else:
        out_td, out_shapes = c.out_td, c.out_shapes

    computed: dict[int, np.ndarray] = {}

    def jacobian(i):
        if i not in computed:
            computed[i] = _analytic_jacobian(g, floats_td, floats, c.float_idx.index(i), "rev", out_shapes, out_td)
        return computed[i]
    try:
        jacobian(c.float_idx[0])
    except Exception as exc:   # as above: a failure inside autodiff only means no third opinion
        return None, f"autodiff could not differentiate f ({type(exc).__name__}: {exc})"
    return jacobian, ""


def _compare(c: _Check, f_fd, user_jac: dict, out_shapes, out_td, third_opinion: Callable,
             nested: Callable | None = None) -> None:
    """Each float leaf's hand-written Jacobian against differences of f_fd; raises with the report.

    ``nested``: f_fd is itself a differenced gradient (check_hessian), whose rounding is not
    bounded by f's and whose one-sided differences, at its larger step, are off by more than
    the kink test allows: no kink notes, and the second look is :func:`_hessian_second_look`'s,
    with ``nested(k)`` the gradient differenced at k times the inner step.

    ``third_opinion()`` gives (autodiff's Jacobian of leaf i, or None, and why not); it
    is asked only when a comparison fails, so a passing check never runs f on Tensors.
    """
    failures = []
    third_opinion = _once(third_opinion)
    for i in c.float_idx:
        x_shape = tuple(np.shape(c.leaves[i]))
        differences = _difference_jacobians(f_fd, c.td, c.leaves, i, c.tol.eps, one_sided=not nested)
        J_num, sides = differences[0], (None if nested else differences[1:])
        J_user = user_jac[i]
        if J_num.size == 0:
            continue
        J_num = _hessian_second_look(c, nested, i, J_user, J_num) if nested else _finer_look(
            c, f_fd, i, J_user, J_num)
        bad, lines = _entry_comparison(J_user, J_num, sides, out_shapes, x_shape, out_td, c.tol)
        if not bad:
            continue
        if not np.isfinite(J_num).all():
            lines.append("    some finite differences are not finite: f is NaN or infinite within a step "
                         "(eps * max(1, |x|)) of this point, so its derivative cannot be checked there")
        autodiff, why_not = third_opinion()
        if autodiff is not None:
            try:
                lines += _three_way(c, J_user, autodiff(i), J_num, sides, out_shapes, out_td, x_shape)
            except Exception as exc:   # the third opinion failing must not hide the report
                lines.append(f"    autodiff could not differentiate f here ({type(exc).__name__}: {exc})")
        failures.append(f"  {c.label(i)}, hand-written {c.dname}:\n" + "\n".join(lines))
    if failures:
        why_not = third_opinion()[1]
        third = ("  (autodiff: " + why_not + "; compared with finite differences only)") if why_not else ""
        raise GradientCheckError(f"{c.what}({c.fname}): the hand-written {c.dname} and finite differences "
                                 f"disagree (tolerance atol {c.tol.atol:g} + rtol {c.tol.rtol:g} * |value|, "
                                 f"step eps {c.tol.eps:g} * max(1, |x|))\n" + "\n".join(failures)
                                 + ("\n" + third if third else ""))


def _third_opinion(c: _Check, f, three_way: bool, second: bool = False) -> Callable:
    """What _compare asks for autodiff's Jacobians when it needs them (nothing with ``three_way=False``)."""
    return (lambda: _autodiff_jacobians(c, f, second)) if three_way else (lambda: (None, ""))


@recorded
def check_gradient(f: Callable, grad_f: Callable, args: Sequence, *, eps: float | None = None,
                   atol: float | None = None, rtol: float | None = None, names: Sequence[str] | None = None,
                   three_way: bool = True) -> None:
    """Check a hand-written gradient ``grad_f`` of a scalar numpy function ``f`` against finite differences.

    Shapes: ``f(*args)`` returns a scalar (a float, a 0-d or size-1 array);
    ``grad_f(*args)`` returns the gradient in the structure of ``args``, each
    leaf of its argument's shape (one argument: the gradient array itself).
    Every float argument is checked entry by entry; integer ones are held fixed
    (their gradient entries may be ``None``). float64 defaults: eps 1e-6,
    atol 1e-6, rtol 1e-5; float32 arguments or outputs: f is differenced in
    float64 at eps 1e-6 if it computes in float64 when given float64, else in
    float32 at eps ≈ 4.9e-3 (atol ≈ 3.5e-4·max(1, |f|)); rtol ≈ 3.5e-4 = sqrt(ε32). Where f runs
    on Tensors (numpy dispatch), autodiff's gradient is compared too
    (``three_way=False`` skips it).

    Raises :class:`GradientCheckError` naming the argument and the worst entries
    (index, hand-written "analytic" vs numeric), kinks, and which of
    {hand-written, autodiff, finite differences} agree; a gradient of the wrong
    structure or shape raises it naming the argument.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> rosen = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        >>> def rosen_grad(x):
        ...     g = np.zeros_like(x)
        ...     g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
        ...     g[1:] += 200 * (x[1:] - x[:-1] ** 2)
        ...     return g
        >>> ad.check_gradient(rosen, rosen_grad, (np.array([0.5, 1.2, -0.3]),))
    """
    c = _setup("check_gradient", f, grad_f, args, "gradient", eps, atol, rtol, names, scalar=True)
    labels = [f"{c.label(i)}" for i in range(len(c.leaves))]
    values = _parsed(c, grad_f(*c.args), c.arg_template(c.arg_slot), labels)
    user = {i: values[i].reshape(1, -1) for i in c.float_idx}
    _compare(c, c.reference, user, c.out_shapes, c.out_td, _third_opinion(c, f, three_way))


@recorded
def check_jacobian(f: Callable, jac_f: Callable, args: Sequence, *, eps: float | None = None,
                   atol: float | None = None, rtol: float | None = None, names: Sequence[str] | None = None,
                   three_way: bool = True) -> None:
    """Check a hand-written Jacobian ``jac_f`` of a numpy function ``f`` against finite differences.

    Shapes: ``jac_f(*args)`` returns, in f's output structure, for each output
    leaf ``out`` the blocks of every argument leaf ``x`` (in args' structure; one
    argument: the block itself) of shape ``out.shape + x.shape``; one output
    and one argument: a single array of shape ``out.shape + x.shape``
    (``jax.jacobian``'s layout). Otherwise as :func:`check_gradient`.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> A = np.array([[1.0, 2.0], [0.0, 3.0], [4.0, 1.0]])
        >>> ad.check_jacobian(lambda x: np.tanh(A @ x),
        ...                   lambda x: (1 - np.tanh(A @ x) ** 2)[:, None] * A, (np.array([0.1, -0.2]),))
    """
    c = _setup("check_jacobian", f, jac_f, args, "Jacobian", eps, atol, rtol, names, scalar=False)
    templates, labels, places = _blocks_template(c, [_Slot(tuple(s)) for s in c.out_shapes], c.out_td)
    values = _parsed(c, jac_f(*c.args), templates, labels)
    _compare(c, c.reference, _jacobians_from_blocks(c, values, places, c.out_shapes), c.out_shapes, c.out_td,
             _third_opinion(c, f, three_way))


@recorded
def check_vjp(f: Callable, vjp_f: Callable, args: Sequence, *, eps: float | None = None,
              atol: float | None = None, rtol: float | None = None, names: Sequence[str] | None = None,
              three_way: bool = True) -> None:
    """Check a hand-written vector-Jacobian product ``vjp_f(*args, ct)`` of ``f`` against finite differences.

    Shapes: ``ct`` has f's output structure and shapes (dtypes); ``vjp_f``
    returns ⟨ct, ∂f/∂x⟩ in the structure of ``args`` (one argument: the array
    itself), each leaf of its argument's shape. It is called once per output
    entry, with unit cotangents, to build the Jacobian the report compares.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> W = np.array([[1.0, -2.0], [0.5, 3.0]])
        >>> ad.check_vjp(lambda x: np.sin(W @ x), lambda x, ct: W.T @ (np.cos(W @ x) * ct),
        ...              (np.array([0.3, 0.7]),))
    """
    c = _setup("check_vjp", f, vjp_f, args, "VJP", eps, atol, rtol, names, scalar=False)
    templates = c.arg_template(c.arg_slot)
    labels = [c.label(i) for i in range(len(c.leaves))]
    out_dtypes = [o.dtype if o.dtype.kind == "f" else np.float64
                  for o in _output_values(c.plain(*unflatten(c.td, c.leaves)))]
    n_out = sum(_size(s) for s in c.out_shapes)
    rows: dict[int, list] = {i: [] for i in c.float_idx}
    for r in range(n_out):
        flat = np.zeros(n_out)
        flat[r] = 1.0
        cts, offset = [], 0
        for s, d in zip(c.out_shapes, out_dtypes):
            cts.append(flat[offset:offset + _size(s)].reshape(s).astype(d))
            offset += _size(s)
        values = _parsed(c, vjp_f(*c.args, unflatten(c.out_td, cts)), templates, labels)
        for i in c.float_idx:
            rows[i].append(values[i].ravel())
    user = {i: np.stack(rows[i]) if rows[i] else np.zeros((0, _size(np.shape(c.leaves[i]))))
            for i in c.float_idx}
    _compare(c, c.reference, user, c.out_shapes, c.out_td, _third_opinion(c, f, three_way))


@recorded
def check_jvp(f: Callable, jvp_f: Callable, args: Sequence, *, eps: float | None = None,
              atol: float | None = None, rtol: float | None = None, names: Sequence[str] | None = None,
              three_way: bool = True) -> None:
    """Check a hand-written Jacobian-vector product ``jvp_f(*args, tangents)`` of ``f`` against finite differences.

    Shapes: ``tangents`` has args' structure (one argument: the tangent array
    itself), each float leaf of its argument's shape and dtype, ``None`` for a
    non-float one; ``jvp_f`` returns ∂f·t in f's output structure and shapes.
    It is called once per argument entry, with unit tangents.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.check_jvp(lambda x, y: x * np.exp(y), lambda x, y, t: t[0] * np.exp(y) + x * np.exp(y) * t[1],
        ...              (np.array([1.0, 2.0]), np.array([0.1, -0.4])))
    """
    c = _setup("check_jvp", f, jvp_f, args, "JVP", eps, atol, rtol, names, scalar=False)
    out_slots = [_Slot(tuple(s)) for s in c.out_shapes]
    template = unflatten(c.out_td, out_slots)
    labels = [f"{label.strip()}" for label in _output_labels(c.out_td, len(out_slots))]
    user = {}
    for i in c.float_idx:
        x = np.asarray(c.leaves[i])
        cols = []
        for j in np.ndindex(x.shape):
            t_leaves = [np.zeros(np.shape(leaf), dtype=leaf.dtype) if k in c.float_idx else None
                        for k, leaf in enumerate(c.leaves)]
            t_leaves[i][j] = 1.0
            tangents = unflatten(c.td, t_leaves)
            values = _parsed(c, jvp_f(*c.args, tangents[0] if len(c.args) == 1 else tangents), [template], labels)
            cols.append(np.concatenate([v.ravel() for v in values]) if values else np.zeros(0))
        user[i] = np.stack(cols, axis=1) if cols else np.zeros((len(c.out_flat), 0))
    _compare(c, c.reference, user, c.out_shapes, c.out_td, _third_opinion(c, f, three_way))


def _wide(c: _Check, f: Callable) -> Callable:
    """f in float64, the differences' reference for a float32 Hessian, if f computes in float64 when given it.

    A second difference of a float32 f rounds at 9·ε·|f| / (h_inner·h_outer): about 1e-3
    at the float32 steps (4.9e-2, 4.9e-3), over the tolerance 3.5e-4, so every right
    Hessian of sum(sin(x)) failed. The float32 Hessian is compared with the float64
    one at float32's tolerances; an f that casts to float32 itself keeps c.plain.
    """
    wide = _plain(f, [np.dtype(np.float64) if i in c.float_idx else None for i in range(len(c.leaves))])
    try:
        outputs = _output_values(wide(*unflatten(c.td, c.leaves)))
    except Exception:   # any failure of user code in float64 only means no wider reference
        return c.plain
    return wide if all(o.dtype == np.float64 for o in outputs if o.dtype.kind == "f") else c.plain


@recorded
def check_hessian(f: Callable, hess_f: Callable, args: Sequence, *, eps: float | None = None,
                  atol: float | None = None, rtol: float | None = None, names: Sequence[str] | None = None,
                  three_way: bool = True) -> None:
    """Check a hand-written Hessian ``hess_f`` of a scalar numpy function ``f`` against finite differences.

    Shapes: for one argument x, ``hess_f(x)`` has shape ``x.shape + x.shape``;
    for several, block (i, j) of shape ``x_i.shape + x_j.shape`` nested as
    args-of-args (``jax.hessian``'s layout). The reference is the Jacobian of
    f's central-difference gradient (step 1e-3, differenced again at ``eps``,
    default 1e-4, both extrapolated), so only f is needed; it costs about
    16·n² evaluations of f for n entries. The report's "outputs" are the
    gradient's entries: "output 0 (2,) / d input (1,)" is ∂²f/∂x₀[2]∂x₀[1]
    (output k: the gradient of float argument k). No kink notes: the
    differences' one-sided differences at step 1e-4 are too coarse to tell a
    kink from curvature; an entry that disagrees is differenced again with both
    steps times 0.25, 4, 16 and 64 (:func:`_hessian_second_look`). Float32
    arguments: the reference is f in float64 (if f computes in float64 when
    given it), compared at float32's tolerances.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.check_hessian(lambda x: np.sum(x ** 3) + x[0] * x[1],
        ...                  lambda x: np.diag(6 * x) + np.array([[0, 1.0], [1.0, 0]]), (np.array([0.5, -1.0]),))
    """
    c = _setup("check_hessian", f, hess_f, args, "Hessian", eps, atol, rtol, names, scalar=True)
    in_float64 = c.precision <= np.finfo(np.float64).eps
    reference = c.reference
    if eps is None and (in_float64 or reference is not c.plain):
        c.tol = c.tol._replace(eps=HESSIAN_OUTER_EPS)
    inner = max(HESSIAN_INNER_EPS, c.tol.eps * 10)

    def gradient_at(factor: float) -> Callable:
        def gradient(*a):
            g = flatten(numerical_grad(reference, a, eps=inner * factor))[0]
            return tuple(g[k] for k in c.float_idx)
        return gradient
    gradient = gradient_at(1.0)
    grad_shapes = [tuple(np.shape(c.leaves[k])) for k in c.float_idx]
    grad_td = flatten(tuple(np.zeros(s) for s in grad_shapes))[1]
    # Rows: the argument level again (args-of-args), non-float rows held as "any".
    row_slots = [c.arg_slot(k) for k in range(len(c.leaves))]
    row_td = flatten(c.arg_template(c.arg_slot)[0])[1]
    templates, labels, places = _blocks_template(c, row_slots, row_td)
    values = _parsed(c, hess_f(*c.args), templates, labels)
    float_rows = [(v, (c.float_idx.index(k), i)) for v, (k, i) in zip(values, places) if k in c.float_idx]
    user = _jacobians_from_blocks(c, [v for v, _ in float_rows], [p for _, p in float_rows], grad_shapes)
    _compare(c, gradient, user, grad_shapes, grad_td, _third_opinion(c, f, three_way, second=True),
             nested=gradient_at)
