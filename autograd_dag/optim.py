"""Optimizers (SGD with momentum and weight decay, Adam, AdamW) and learning-rate schedules.

An optimizer holds a list of parameters (leaf Tensors with ``requires_grad``)
and updates their values in place from their ``.grad`` after
``loss.backward()``; ``zero_grad()`` clears the gradients, as in PyTorch.
Updates are plain numpy on the values: they are not part of any program.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> from autograd_dag import nn, optim
    >>> model = nn.Linear(2, 1, rng=0)
    >>> opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    >>> loss = nn.functional.mse_loss(model(np.ones((4, 2))), np.zeros((4, 1)))
    >>> opt.zero_grad(); loss.backward(); opt.step()
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

import numpy as np

from .core import Tensor, changed_in_place
from .errors import AutogradDagError
from .nn.module import Parameter, _zero_grads

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "LRScheduler", "StepLR", "CosineAnnealingLR", "LambdaLR",
           "cosine_schedule", "step_schedule", "clip_grad_norm_", "clip_grad_value_"]


class Optimizer:
    """Base class: ``params`` (an iterable of Tensors), ``lr``, ``step()`` and ``zero_grad()``.

    Subclasses implement ``_update(i, p, g)`` for parameter number i with
    gradient g (an ndarray), changing ``p.value`` in place. Parameters whose
    ``.grad`` is None (unused by the loss) are skipped.
    """

    def __init__(self, params: Iterable[Tensor], lr: float):
        self.params = list(params)
        if not self.params:
            raise AutogradDagError(f"{type(self).__name__}: got an empty parameter list")
        for i, p in enumerate(self.params):
            # A frozen nn.Parameter (requires_grad False: fine-tuning passes model.parameters()) is taken,
            # as PyTorch takes it: it gets no gradient, so step() leaves it. A plain constant Tensor is refused.
            if not isinstance(p, Tensor) or not p.is_leaf or not (p.requires_grad or isinstance(p, Parameter)):
                raise AutogradDagError(f"{type(self).__name__}: parameter {i} is not a leaf Tensor with "
                                       f"requires_grad=True (got {_describe(p)})")
        # A parameter listed twice would take two updates per step (PyTorch only warns).
        first: dict[int, int] = {}
        for i, p in enumerate(self.params):
            j = first.setdefault(id(p), i)
            if j != i:
                raise AutogradDagError(f"{type(self).__name__}: parameters {j} and {i} are the same Tensor; "
                                       f"list each parameter once (model.parameters() lists a shared one once)")
        if lr < 0:
            raise AutogradDagError(f"{type(self).__name__}: lr must be >= 0; got {lr}")
        self.lr = float(lr)
        self.initial_lr = self.lr
        self.state: list[dict] = [{} for _ in self.params]
        self.steps = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad`` to None (to zeros with ``set_to_none=False``, as PyTorch).

        Zeros are a gradient: SGD's momentum and Adam then step the parameter, where None skips it.
        """
        _zero_grads(self.params, set_to_none)

    def step(self) -> None:
        """Apply one update to every parameter that has a gradient."""
        # Every gradient is checked before any parameter moves: a bad one
        # leaves the model and the optimizer's state as they were.
        updates = []
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            g = np.asarray(p.grad.value if isinstance(p.grad, Tensor) else p.grad)
            if g.shape != p.shape:
                raise AutogradDagError(f"{type(self).__name__}: parameter {i} of shape {p.shape} has a "
                                       f"gradient of shape {g.shape}")
            # Optimizer arithmetic in the parameter's precision, so float32 models stay float32.
            updates.append((i, p, g.astype(p.dtype, copy=False)))
        self.steps += 1
        for i, p, g in updates:
            self._update(i, p, g)
            changed_in_place(p)  # a graph recorded before this step can no longer be differentiated

    def _update(self, i: int, p: Tensor, g: np.ndarray) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict:
        """Copies of what the next steps depend on: lr, the step count and each parameter's state (momenta).

        Saved with the model's state dict, it resumes training on the same trajectory
        (a fresh Adam would restart its moments and bias correction).
        Example: ``opt2.load_state_dict(opt.state_dict())``.
        """
        return {"lr": self.lr, "steps": self.steps,
                "state": {i: {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in st.items()}
                          for i, st in enumerate(self.state) if st}}

    def load_state_dict(self, state: dict) -> "Optimizer":
        """Take the lr, step count and per-parameter state of :meth:`state_dict` (of an optimizer of the
        same parameters, in the same order); every array is checked before any is taken. Returns self."""
        name = type(self).__name__
        per_param = state.get("state", {}) if isinstance(state, dict) else None
        if per_param is None or "lr" not in state:
            raise AutogradDagError(f"{name}.load_state_dict: expected the dict Optimizer.state_dict() "
                                   f"returns (keys 'lr', 'steps', 'state'); got {type(state).__name__}")
        loaded: list[dict] = [{} for _ in self.params]
        for i, st in per_param.items():
            i = int(i)
            if not 0 <= i < len(self.params):
                raise AutogradDagError(f"{name}.load_state_dict: state of parameter {i}, but this optimizer "
                                       f"has {len(self.params)} parameters")
            p = self.params[i]
            for key, value in st.items():
                if isinstance(value, np.ndarray):
                    if value.shape != p.shape:
                        raise AutogradDagError(f"{name}.load_state_dict: state '{key}' of parameter {i} has "
                                               f"shape {value.shape}, but the parameter has shape {p.shape}")
                    value = np.array(value, dtype=p.dtype, copy=True)  # in the parameter's precision
                loaded[i][key] = value
        self.state, self.lr, self.steps = loaded, float(state["lr"]), int(state.get("steps", 0))
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lr={self.lr:g}, {len(self.params)} parameters)"


def _describe(p) -> str:
    if isinstance(p, dict):
        # PyTorch's parameter groups: one optimizer per group does the same here.
        return ("a dict: parameter groups ({'params': ..., 'lr': ...}) are not supported; make one optimizer "
                "per group and call step() on each")
    if not isinstance(p, Tensor):
        return f"a {type(p).__name__}"
    return f"a {type(p).__name__} with requires_grad={p.requires_grad}, is_leaf={p.is_leaf}"


def _check_non_negative(optimizer: Optimizer, **values: float) -> None:
    """Refuse a negative hyperparameter (PyTorch's checks): it would quietly train in the wrong direction."""
    for name, value in values.items():
        if not value >= 0:
            raise AutogradDagError(f"{type(optimizer).__name__}: {name} must be >= 0 (as in PyTorch); got {value}")


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, Nesterov momentum and weight decay (PyTorch's rule).

    The arguments come in ``torch.optim.SGD``'s order (lr, momentum, dampening,
    weight_decay, nesterov) with its defaults (lr = 1e-3), so a call written for
    PyTorch means the same here.

    g ← ∇ + λ·p;  with momentum μ: v ← μ·v + (1 − dampening)·g (v ← g at the
    first step) and g ← v (or g + μ·v with ``nesterov``);  p ← p − lr·g.
    Example: ``SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)``.
    """

    # lr defaults to PyTorch's 1e-3, so that SGD(params) written for PyTorch takes the same step.
    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        super().__init__(params, lr)
        _check_non_negative(self, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise AutogradDagError("SGD: nesterov needs momentum > 0 and dampening = 0")
        self.momentum, self.weight_decay = float(momentum), float(weight_decay)
        self.dampening, self.nesterov = float(dampening), bool(nesterov)

    def _update(self, i, p, g):
        if self.weight_decay:
            g = g + self.weight_decay * p.value
        if self.momentum:
            v = self.state[i].get("momentum")
            if v is None:
                v = self.state[i]["momentum"] = np.array(g, copy=True)
            else:
                v *= self.momentum
                v += (1 - self.dampening) * g
            g = g + self.momentum * v if self.nesterov else v
        p.value -= self.lr * g


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015) with bias correction; ``weight_decay`` adds λ·p to the gradient (L2).

    m ← β₁m + (1 − β₁)g;  v ← β₂v + (1 − β₂)g²;  p ← p − lr·m̂ / (√v̂ + ε),
    with m̂ = m / (1 − β₁ᵗ), v̂ = v / (1 − β₂ᵗ).
    Example: ``Adam(model.parameters(), lr=1e-3)``.
    """

    decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        super().__init__(params, lr)
        _check_non_negative(self, eps=eps, weight_decay=weight_decay)
        for i, beta in enumerate(betas):
            # β = 1 makes the bias correction 1 − βᵗ zero: every parameter would turn NaN at the first step.
            if not 0.0 <= beta < 1.0:
                raise AutogradDagError(f"{type(self).__name__}: betas[{i}] must be in [0, 1) (as in PyTorch); "
                                       f"got betas={tuple(betas)}")
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps, self.weight_decay = float(eps), float(weight_decay)

    def _update(self, i, p, g):
        b1, b2 = self.betas
        st = self.state[i]
        if "m" not in st:
            st["m"], st["v"], st["t"] = np.zeros_like(p.value), np.zeros_like(p.value), 0
        if self.weight_decay:
            if self.decoupled:
                p.value *= 1 - self.lr * self.weight_decay
            else:
                g = g + self.weight_decay * p.value
        st["t"] += 1
        m, v, t = st["m"], st["v"], st["t"]
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * (g * g)
        m_hat = m / (1 - b1 ** t)
        v_hat = v / (1 - b2 ** t)
        p.value -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019): p ← p − lr·λ·p, then the Adam step.

    Example: ``AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)``.
    """

    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01):
        super().__init__(params, lr, betas, eps, weight_decay)

# ------------------------------------------------------------- gradient clipping


def _gradients(parameters) -> list:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [(p, np.asarray(p.grad.value if isinstance(p.grad, Tensor) else p.grad)) for p in params
            if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False) -> float:
    """Scale the gradients so that their total norm (over all parameters together) is at most ``max_norm``.

    PyTorch's ``torch.nn.utils.clip_grad_norm_``: the total norm is the ``norm_type``
    norm of every gradient entry (``inf``: the largest magnitude); each gradient is
    multiplied by min(1, max_norm / (total + 1e-6)). Parameters without a gradient are
    skipped. Returns the total norm before clipping (a float).
    Example: ``optim.clip_grad_norm_(model.parameters(), 1.0)`` between ``backward()`` and ``step()``.
    """
    found = _gradients(parameters)
    if not found:
        return 0.0
    norm_type = float(norm_type)
    if norm_type == math.inf:
        total = max(float(np.max(np.abs(g), initial=0.0)) for _, g in found)
    else:
        total = float(np.linalg.norm([np.linalg.norm(g.ravel(), norm_type) for _, g in found], norm_type))
    if error_if_nonfinite and not math.isfinite(total):
        raise AutogradDagError(f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is "
                               f"{total}; set error_if_nonfinite=False to scale them anyway")
    scale = min(1.0, float(max_norm) / (total + 1e-6))
    for p, g in found:
        # A new array: a gradient may share its array with another's (scaled twice in place) or the user's.
        p.grad = Tensor((g * scale).astype(g.dtype, copy=False))
    return total


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clip every gradient entry into [−clip_value, clip_value] (PyTorch's ``clip_grad_value_``).

    Example: ``optim.clip_grad_value_(model.parameters(), 0.5)``.
    """
    clip_value = float(clip_value)
    for p, g in _gradients(parameters):
        p.grad = Tensor(np.clip(g, -clip_value, clip_value))

# ------------------------------------------------------------- schedules


def cosine_schedule(step: int, total: int, base_lr: float, min_lr: float = 0.0, warmup: int = 0) -> float:
    """Learning rate at ``step`` of a (linear warm-up then) cosine decay from base_lr to min_lr over ``total`` steps.

    Example: ``cosine_schedule(50, 100, 1.0)`` is ``0.5``.
    """
    if warmup and step < warmup:
        return base_lr * (step + 1) / warmup
    if step >= total:
        # (the span below is at least 1: with total = warmup, step `total` was base_lr, a step past the end)
        return min_lr
    span = total - warmup
    progress = (step - warmup) / span
    return min_lr + 0.5 * (base_lr - min_lr) * (1 + math.cos(math.pi * progress))


def step_schedule(step: int, base_lr: float, step_size: int, gamma: float = 0.1) -> float:
    """base_lr · gamma^(step // step_size). Example: ``step_schedule(25, 1.0, 10, 0.5)`` is ``0.25``."""
    return base_lr * gamma ** (step // step_size)


class LRScheduler:
    """Sets ``optimizer.lr`` from a function of the schedule step; call :meth:`step` once per epoch (or batch).

    The learning rate at construction is schedule step 0.
    """

    def __init__(self, optimizer: Optimizer, fn: Callable[[int], float]):
        self.optimizer = optimizer
        self.base_lr = optimizer.lr
        self.fn = fn
        self.last_step = 0
        optimizer.lr = float(fn(0))

    def step(self) -> float:
        """Advance one schedule step; returns the new learning rate."""
        self.last_step += 1
        self.optimizer.lr = float(self.fn(self.last_step))
        return self.optimizer.lr

    def get_lr(self) -> float:
        """The learning rate in force."""
        return self.optimizer.lr

    def state_dict(self) -> dict:
        """The schedule step reached, for :meth:`load_state_dict` on resuming. Example: ``{'last_step': 12}``."""
        return {"last_step": self.last_step}

    def load_state_dict(self, state: dict) -> "LRScheduler":
        """Continue from the schedule step of :meth:`state_dict`, setting the optimizer's lr for it; returns self."""
        self.last_step = int(state["last_step"])
        self.optimizer.lr = float(self.fn(self.last_step))
        return self


class LambdaLR(LRScheduler):
    """lr = base_lr · factor(step). Example: ``LambdaLR(opt, lambda s: 0.95 ** s)``."""

    def __init__(self, optimizer: Optimizer, factor: Callable[[int], float]):
        base = optimizer.lr
        super().__init__(optimizer, lambda s: base * factor(s))


class StepLR(LRScheduler):
    """lr = base_lr · gamma^(step // step_size). Example: ``StepLR(opt, step_size=10, gamma=0.5)``."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1):
        base = optimizer.lr
        super().__init__(optimizer, lambda s: step_schedule(s, base, step_size, gamma))


class CosineAnnealingLR(LRScheduler):
    """Cosine decay from base_lr to ``eta_min`` over ``T_max`` steps (optional linear ``warmup``).

    After ``T_max`` steps the rate stays at ``eta_min``; PyTorch's scheduler of
    the same name keeps following the cosine, back up towards base_lr over the
    next ``T_max`` steps (a period of 2·T_max), which is rarely what a decay wants.
    ``warmup`` is keyword-only: PyTorch's fourth argument is ``last_epoch``.

    Example: ``CosineAnnealingLR(opt, T_max=epochs)`` then ``sched.step()`` after each epoch.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, *, warmup: int = 0):
        base = optimizer.lr
        super().__init__(optimizer, lambda s: cosine_schedule(s, T_max, base, eta_min, warmup))
