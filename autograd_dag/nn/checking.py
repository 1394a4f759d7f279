"""Check every parameter's gradient of a model's loss in one call: :func:`check_module`.

``ad.check_grads`` checks a function of arrays; a model is a function of its
parameters, held by modules. ``check_module(model, x)`` makes the loss a
function of each parameter in turn (:func:`functional_call`), computes every
parameter's gradient with one reverse sweep, and compares it with central
differences: entry by entry for a small parameter, and for a big one a random
subset of its entries plus random directional projections, drawn from
``np.random.default_rng(seed)``, so a failure is reproduced by the same seed.
The report names each parameter by its path in ``model.named_parameters()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import numdiff
from ..autodiff import grad
from ..checking import DEFAULT_ATOL, DEFAULT_EPS, DEFAULT_RTOL
from ..core import Tensor, no_grad
from ..errors import AutogradDagError, GradientCheckError
from ..tree import flatten
from .module import Module, functional_call


@dataclass
class ParameterCheck:
    """One parameter's verdict: what was compared, the worst error, and the worst entries when it fails."""
    name: str                    # its path, as in model.named_parameters()
    shape: tuple
    checked: str                 # "all 12 entries", or "32 random entries of 4096 + 4 random directions"
    evaluations: int             # evaluations of the loss spent on this parameter
    max_abs_err: float
    ok: bool
    worst: list[str] = field(default_factory=list)
    disagreeing: int = 0         # how many of the compared values (entries, directions) disagree

    def line(self) -> str:
        verdict = "ok" if self.ok else "WRONG"
        count = f", {self.disagreeing} disagree; worst:" if self.disagreeing else ""
        return (f"  {verdict:5s} {self.name} {self.shape}: {self.checked}, max abs err {self.max_abs_err:.2e}, "
                f"{self.evaluations} loss evaluations{count}" + "".join(f"\n{w}" for w in self.worst))


@dataclass
class ModuleCheck:
    """Every parameter's :class:`ParameterCheck`, in the order of ``named_parameters()``."""
    model: str
    parameters: list[ParameterCheck]
    seed: int

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.parameters)

    @property
    def failed(self) -> list[str]:
        """The paths of the parameters whose gradient is wrong."""
        return [p.name for p in self.parameters if not p.ok]

    def __str__(self) -> str:
        head = (f"check_module({self.model}): {len(self.parameters) - len(self.failed)} of {len(self.parameters)} "
                f"parameter gradients agree with central differences (seed {self.seed})")
        return "\n".join([head] + [p.line() for p in self.parameters])


def _sum_of_outputs(out) -> Tensor:
    leaves = [o for o in flatten(out)[0] if isinstance(o, Tensor)]
    if not leaves:
        raise AutogradDagError("check_module: the model returned no Tensor to differentiate")
    total = leaves[0].sum()
    for o in leaves[1:]:
        total = total + o.sum()
    return total


def check_module(model: Module, x, loss: Callable | None = None, *, eps: float | None = None,
                 atol: float | None = None, rtol: float | None = None, max_entries: int = 32,
                 directions: int = 4, seed: int = 0, raise_on_failure: bool = True,
                 all_up_to: int = 256) -> ModuleCheck:
    """Check the gradient of ``loss(model(x))`` with respect to every parameter, by central differences.

    ``x``: the model's input (a tuple is passed as several arguments); ``loss``:
    the model's output -> a scalar Tensor (default: the sum of every output
    entry). A parameter of at most ``all_up_to`` (256) entries is checked entry by
    entry (2 evaluations each: a bias, a norm's scale, a small layer's weight); a
    bigger one at ``max_entries`` entries drawn at random without
    replacement and along ``directions`` random Gaussian directions v
    (⟨∇, v⟩ against the directional difference), all drawn from
    ``np.random.default_rng(seed)`` parameter by parameter in the order of
    ``named_parameters()``: the same seed draws the same entries. Each
    difference is (L(p + h e) − L(p − h e)) / 2h with h = eps · max(1, |p_j|)
    (directions: h = eps), in float64; an entry agrees within
    atol + rtol · max(|analytic|, |numeric|), or is differenced again at
    numdiff's adaptive steps before it fails (a loss with a large offset, whose
    differences round at ε·|L|/h). The model must be deterministic
    (call ``model.eval()`` first if it has dropout): a loss that differs between
    two evaluations is refused. Buffers (a training-mode BatchNorm's running
    statistics, which every evaluation moves) are restored afterwards.
    Shapes: x as the model takes it; the loss a scalar.

    Returns the :class:`ModuleCheck`; raises :class:`GradientCheckError` with it
    as the message (wrong parameters named by path, worst entries listed) when a
    gradient disagrees, unless ``raise_on_failure=False``.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> from autograd_dag import nn
        >>> report = ad.nn.check_module(nn.MLP([3, 4, 2], activation="tanh", rng=0), np.ones((5, 3)))
        >>> report.ok, [p.name for p in report.parameters]
        (True, ['layers.0.weight', 'layers.0.bias', 'layers.1.weight', 'layers.1.bias'])
    """
    eps = DEFAULT_EPS if eps is None else eps
    atol = DEFAULT_ATOL if atol is None else atol
    rtol = DEFAULT_RTOL if rtol is None else rtol
    inputs = x if isinstance(x, tuple) else (x,)
    named = list(model.named_parameters())
    if not named:
        raise AutogradDagError(f"check_module: {type(model).__name__} has no parameters to check")
    names = [n for n, _ in named]
    # Checked in float64 whatever the parameters' dtype: float32 differences cannot tell a wrong entry from rounding.
    values = [np.array(p.value, dtype=np.float64) for _, p in named]

    def objective(*params):
        out = functional_call(model, dict(zip(names, params)), *inputs)
        value = _sum_of_outputs(out) if loss is None else loss(out)
        if np.size(value.value if isinstance(value, Tensor) else value) != 1:
            raise AutogradDagError(f"check_module: the loss must be a scalar, got shape {np.shape(value)}")
        return value

    def evaluate(params) -> float:
        with no_grad():
            value = objective(*params)
        return float(np.asarray(value.value if isinstance(value, Tensor) else value).reshape(()))

    # Every evaluation of a training-mode BatchNorm moves its running statistics: the check
    # would leave them (and num_batches_tracked) dozens of updates on, from this one batch.
    buffers = [(b, np.array(b, copy=True)) for _, b in model.named_buffers()]
    try:
        base = evaluate(values)
        if evaluate(values) != base:   # the same call twice: equal unless the model draws random numbers
            raise AutogradDagError(f"check_module: {type(model).__name__}'s loss changes between two "
                                   f"evaluations at the same parameters (dropout in training mode? call "
                                   f"model.eval())")
        grads = grad(objective, argnums=tuple(range(len(values))))(*values)
        rng = np.random.default_rng(seed)
        checks = [_check_parameter(name, k, values, grads[k], evaluate, rng, eps, atol, rtol, max_entries,
                                   all_up_to, directions) for k, name in enumerate(names)]
    finally:
        for array, saved in buffers:  # in place: a program ad.jit recorded reads them by identity
            np.copyto(array, saved)
    report = ModuleCheck(type(model).__name__, checks, seed)
    if raise_on_failure and not report.ok:
        raise GradientCheckError(f"{report}\n  wrong: {', '.join(report.failed)}")
    return report


def _check_parameter(name, k, values, g, evaluate, rng, eps, atol, rtol, max_entries, all_up_to,
                     directions) -> ParameterCheck:
    p = values[k]
    g = np.asarray(g.value if isinstance(g, Tensor) else g, dtype=np.float64)
    moved = list(values)

    def loss_at(direction: np.ndarray, t: float) -> float:
        moved[k] = p + t * direction
        return evaluate(moved)

    def difference(direction: np.ndarray, h: float) -> float:
        return (loss_at(direction, h) - loss_at(direction, -h)) / (2 * h)

    if p.size <= max(all_up_to, max_entries):
        entries = np.arange(p.size)
        checked, n_dirs = f"all {p.size} entries", 0
    else:
        entries = np.sort(rng.choice(p.size, size=max_entries, replace=False))
        checked, n_dirs = f"{max_entries} random entries of {p.size} + {directions} random directions", directions
    rows = []   # (what, direction, analytic, step)
    for j in entries:
        unit = np.zeros(p.size)
        unit[j] = 1.0
        index = tuple(int(i) for i in np.unravel_index(j, p.shape)) if p.shape else ()
        rows.append((f"entry {index}", unit.reshape(p.shape), float(g.ravel()[j]),
                     eps * max(1.0, abs(float(p.ravel()[j])))))
    for d in range(n_dirs):
        v = rng.standard_normal(p.shape)
        rows.append((f"direction {d} (<grad, v>, v ~ N(0, 1))", v, float(np.sum(g * v)), eps))
    compared, evaluations, doubt = [], 2 * len(rows), []
    for what, direction, a, h in rows:
        n, error = difference(direction, h), 0.0
        if not _agree(a, n, atol, rtol):
            # A second look: numdiff's adaptive steps, whose value is taken with its error estimate, which
            # then counts against the agreement (|a - n| + error <= tolerance), so that a gradient wrong by
            # more than the tolerance cannot pass on it. At step 1e-6 a loss of 1e6 rounds at 1e-10 / 1e-6:
            # a right gradient of an MLP's loss + 1e6 was 6.5e-5 "off" (tolerance 9.8e-6).
            est = numdiff.derivative(lambda t, direction=direction: loss_at(direction, float(t)), 0.0,
                                     num_steps=24)
            evaluations += est.evaluations
            if float(est.error) <= atol + rtol * abs(a):
                n, error = float(est.value), float(est.error)
        compared.append((what, a, n))
        doubt.append(error)
    errs = [abs(a - n) for _, a, n in compared]
    allowed = [atol + rtol * max(abs(a), abs(n)) for _, a, n in compared]
    excess = [e + u - t if np.isfinite(a) and np.isfinite(n) else np.inf
              for e, u, t, (_, a, n) in zip(errs, doubt, allowed, compared)]
    worst = []
    for e, t, (what, a, n) in sorted(zip(excess, allowed, compared), key=lambda r: -r[0])[:5]:
        if e > 0:
            scale = max(abs(a), abs(n))
            rel = abs(a - n) / scale if scale > 0 else np.inf
            worst.append(f"      {name} {what}: analytic {a: .6e}, numeric {n: .6e}, abs err {abs(a - n):.2e}, "
                         f"rel err {rel:.2e} (tolerance {t:.2e} = atol {atol:g} + rtol {rtol:g} * |value|)")
    n_bad = int(sum(e > 0 for e in excess))
    return ParameterCheck(name, tuple(p.shape), checked, evaluations, max(errs, default=0.0), not n_bad, worst,
                          n_bad)


def _agree(a: float, n: float, atol: float, rtol: float) -> bool:
    """Within atol + rtol·max(|a|, |n|); a non-finite value on either side never agrees."""
    return bool(np.isfinite(a) and np.isfinite(n) and abs(a - n) <= atol + rtol * max(abs(a), abs(n)))
