"""Optimizers (SGD, Adam, AdamW, RMSprop, Adagrad) with PyTorch's parameter groups, and learning-rate schedules.

An optimizer holds parameter groups (``optimizer.param_groups``: a list of dicts,
each with its ``"params"`` and its hyperparameters, as in PyTorch) and updates
the parameters' values in place from their ``.grad`` after ``loss.backward()``;
``zero_grad()`` clears the gradients. A group's hyperparameters (``"lr"`` and the
others) are read at every step: changing one takes effect at the next step.
Updates are plain numpy on the values: they are not part of any program.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> from autograd_dag import nn, optim
    >>> model = nn.Linear(2, 1, rng=0)
    >>> opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    >>> loss = nn.functional.mse_loss(model(np.ones((4, 2))), np.zeros((4, 1)))
    >>> opt.zero_grad(); loss.backward(); opt.step()
    >>> opt = optim.SGD([{"params": [model.weight]}, {"params": [model.bias], "lr": 1e-3}], lr=1e-2)
    >>> [g["lr"] for g in opt.param_groups]
    [0.01, 0.001]
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

import numpy as np

from .core import Tensor, changed_in_place
from .errors import AutogradDagError
from .nn.module import Parameter, _zero_grads

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LRScheduler", "StepLR", "CosineAnnealingLR",
           "LambdaLR", "cosine_schedule", "step_schedule", "clip_grad_norm_", "clip_grad_value_"]


class Optimizer:
    """Base class: ``params`` (Tensors, or PyTorch's parameter groups: dicts with ``"params"`` and any of the
    hyperparameters), the ``defaults`` of every group (a dict, or the lr alone), ``step()`` and ``zero_grad()``.

    Subclasses implement ``_update(i, p, g, group)`` for parameter number i (counted
    across the groups, in order) with gradient g (an ndarray) and its group's
    hyperparameters, changing ``p.value`` in place; ``_check_group(group)`` refuses
    bad hyperparameters. Parameters whose ``.grad`` is None (unused by the loss) are skipped.
    """

    def __init__(self, params: Iterable, defaults):
        self.defaults = {"maximize": False, **(defaults if isinstance(defaults, dict) else {"lr": defaults})}
        self.param_groups: list[dict] = []
        self.state: list[dict] = []  # one dict per parameter, in the order of self.params
        self.steps = 0
        if isinstance(params, (Tensor, dict)):
            raise AutogradDagError(f"{type(self).__name__}: params must be an iterable of Tensors or of parameter "
                                   f"groups (dicts); got a single {type(params).__name__} (wrap it in a list)")
        given = list(params)
        if not given:
            raise AutogradDagError(f"{type(self).__name__}: got an empty parameter list")
        kinds = {isinstance(p, dict) for p in given}
        if kinds == {True, False}:
            raise AutogradDagError(f"{type(self).__name__}: params mixes Tensors and parameter groups (dicts); "
                                   f"give either a list of Tensors or a list of dicts, each with 'params'")
        for group in (given if kinds == {True} else [{"params": given}]):
            self.add_param_group(group)

    @property
    def params(self) -> list:
        """Every parameter, group after group: parameter i of ``state``, ``state_dict`` and the error messages."""
        return [p for group in self.param_groups for p in group["params"]]

    @property
    def lr(self) -> float:
        """The learning rate of every group (an error if the groups have different ones: read param_groups)."""
        rates = [group["lr"] for group in self.param_groups]
        if len(set(rates)) > 1:
            raise AutogradDagError(f"{type(self).__name__}.lr: the {len(rates)} parameter groups have different "
                                   f"learning rates {rates}; read or set optimizer.param_groups[k]['lr']")
        return rates[0]

    @lr.setter
    def lr(self, value: float) -> None:
        rates = [group["lr"] for group in self.param_groups]
        if len(set(rates)) > 1:
            raise AutogradDagError(f"{type(self).__name__}.lr = {value}: the {len(rates)} parameter groups have "
                                   f"different learning rates {rates}; set optimizer.param_groups[k]['lr']")
        for group in self.param_groups:
            group["lr"] = _checked_lr(self, value)

    def __getattr__(self, name: str):
        # opt.momentum, opt.betas, ...: the defaults of the groups (each group's own are in param_groups).
        defaults = self.__dict__.get("defaults")
        if defaults is not None and name in defaults:
            return defaults[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (a dict with ``"params"`` and any hyperparameters; the others are the defaults), as
        PyTorch's ``add_param_group`` (fine-tuning: unfreeze a layer and give it its own lr).

        A parameter already in a group is refused, as PyTorch refuses it: it would take two updates per step.
        Example: ``opt.add_param_group({"params": model.head.parameters(), "lr": 1e-4})``.
        """
        name = type(self).__name__
        if not isinstance(param_group, dict) or "params" not in param_group:
            raise AutogradDagError(f"{name}: a parameter group is a dict with the key 'params' (and optionally "
                                   f"hyperparameters such as 'lr'); got {_describe(param_group)}")
        params = param_group["params"]
        if isinstance(params, (set, frozenset)):
            raise AutogradDagError(f"{name}: a group's 'params' is a set, whose order changes from run to run "
                                   f"(and with it the state_dict's numbering); pass a list")
        params = [params] if isinstance(params, Tensor) else list(params)
        if not params:
            raise AutogradDagError(f"{name}: parameter group {len(self.param_groups)} has no parameters")
        start, seen = len(self.state), {id(p): i for i, p in enumerate(self.params)}
        for k, p in enumerate(params):
            _check_parameter(self, start + k, p)
            j = seen.setdefault(id(p), start + k)
            if j != start + k:
                where = "" if j >= start else f" (in parameter group {self._group_of(j)})"
                raise AutogradDagError(f"{name}: parameters {j}{where} and {start + k} are the same Tensor; list "
                                       f"each parameter once, in one group (model.parameters() lists a shared "
                                       f"one once)")
        group = {**self.defaults, **{k: v for k, v in param_group.items() if k != "params"}, "params": params}
        group["lr"] = _checked_lr(self, group["lr"])
        self._check_group(group)
        self.param_groups.append(group)
        self.state.extend({} for _ in params)

    def _group_of(self, i: int) -> int:
        for k, group in enumerate(self.param_groups):
            if i < len(group["params"]):
                return k
            i -= len(group["params"])
        return len(self.param_groups)

    def _check_group(self, group: dict) -> None:
        """Refuse bad hyperparameters of a group (the subclasses' checks)."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad`` to None (to zeros with ``set_to_none=False``, as PyTorch).

        Zeros are a gradient: SGD's momentum and Adam then step the parameter, where None skips it.
        """
        _zero_grads(self.params, set_to_none)

    def step(self) -> None:
        """Apply one update to every parameter that has a gradient, with its group's hyperparameters."""
        # Every gradient and group is checked before any parameter moves: a bad one
        # leaves the model and the optimizer's state as they were.
        for group in self.param_groups:
            group["lr"] = _checked_lr(self, group["lr"])
            self._check_group(group)
        updates, i = [], 0
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    g = np.asarray(p.grad.value if isinstance(p.grad, Tensor) else p.grad)
                    if g.shape != p.shape:
                        raise AutogradDagError(f"{type(self).__name__}: parameter {i} of shape {p.shape} has a "
                                               f"gradient of shape {g.shape}")
                    # Optimizer arithmetic in the parameter's precision, so float32 models stay float32.
                    updates.append((i, p, g.astype(p.dtype, copy=False), group))
                i += 1
        self.steps += 1
        update = self._update
        for i, p, g, group in updates:
            update(i, p, -g if group["maximize"] else g, group)  # maximize (PyTorch's): ascend the objective
            changed_in_place(p)  # a graph recorded before this step can no longer be differentiated

    def _update(self, i: int, p: Tensor, g: np.ndarray, group: dict) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict:
        """Copies of what the next steps depend on, in PyTorch's layout: ``"state"`` (each parameter's
        momenta, by parameter number), ``"param_groups"`` (each group's hyperparameters, with the numbers
        of its parameters under ``"params"``) and the step count.

        Saved with the model's state dict, it resumes training on the same trajectory
        (a fresh Adam would restart its moments and bias correction).
        Example: ``opt2.load_state_dict(opt.state_dict())``.
        """
        groups, start = [], 0
        for group in self.param_groups:
            n = len(group["params"])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": list(range(start, start + n))})
            start += n
        return {"state": {i: {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in st.items()}
                          for i, st in enumerate(self.state) if st},
                "param_groups": groups, "steps": self.steps}

    def load_state_dict(self, state: dict) -> "Optimizer":
        """Take the per-parameter state, the groups' hyperparameters and the step count of :meth:`state_dict`
        (of an optimizer of the same parameters, in the same groups and order), as PyTorch's. Everything is
        checked before anything is taken. Returns self."""
        name = type(self).__name__
        per_param = state.get("state", {}) if isinstance(state, dict) else None
        if per_param is None or ("param_groups" not in state and "lr" not in state):
            raise AutogradDagError(f"{name}.load_state_dict: expected the dict Optimizer.state_dict() "
                                   f"returns (keys 'state', 'param_groups', 'steps'); got {type(state).__name__}")
        groups = self._loaded_groups(state)
        params = self.params
        loaded: list[dict] = [{} for _ in params]
        for i, st in per_param.items():
            i = int(i)
            if not 0 <= i < len(params):
                raise AutogradDagError(f"{name}.load_state_dict: state of parameter {i}, but this optimizer "
                                       f"has {len(params)} parameters")
            p = params[i]
            for key, value in st.items():
                if isinstance(value, np.ndarray):
                    if value.shape != p.shape:
                        raise AutogradDagError(f"{name}.load_state_dict: state '{key}' of parameter {i} has "
                                               f"shape {value.shape}, but the parameter has shape {p.shape}")
                    value = np.array(value, dtype=p.dtype, copy=True)  # in the parameter's precision
                loaded[i][key] = value
        self.state, self.param_groups, self.steps = loaded, groups, int(state.get("steps", 0))
        return self

    def _loaded_groups(self, state: dict) -> list[dict]:
        """This optimizer's groups with the hyperparameters of ``state`` (checked against the groups' sizes)."""
        name = type(self).__name__
        if "param_groups" not in state:  # the layout before parameter groups: one lr for every group
            lr = _checked_lr(self, state["lr"])
            return [{**group, "lr": lr} for group in self.param_groups]
        saved = state["param_groups"]
        if len(saved) != len(self.param_groups):
            raise AutogradDagError(f"{name}.load_state_dict: the state has {len(saved)} parameter groups, this "
                                   f"optimizer {len(self.param_groups)}")
        groups = []
        for k, (mine, theirs) in enumerate(zip(self.param_groups, saved)):
            if len(theirs["params"]) != len(mine["params"]):
                raise AutogradDagError(f"{name}.load_state_dict: parameter group {k} of the state has "
                                       f"{len(theirs['params'])} parameters, this optimizer's "
                                       f"{len(mine['params'])}")
            group = {**{key: v for key, v in theirs.items() if key != "params"}, "params": mine["params"]}
            group["lr"] = _checked_lr(self, group["lr"])
            self._check_group(group)
            groups.append(group)
        return groups

    def __repr__(self) -> str:
        rates = sorted({group["lr"] for group in self.param_groups})
        lr = f"lr={rates[0]:g}" if len(rates) == 1 else f"lr in {[float(f'{r:g}') for r in rates]}"
        return f"{type(self).__name__}({lr}, {len(self.state)} parameters in {len(self.param_groups)} group(s))"


def _check_parameter(optimizer: Optimizer, i: int, p) -> None:
    # A frozen nn.Parameter (requires_grad False: fine-tuning passes model.parameters()) is taken,
    # as PyTorch takes it: it gets no gradient, so step() leaves it. A plain constant Tensor is refused.
    if not isinstance(p, Tensor) or not p.is_leaf or not (p.requires_grad or isinstance(p, Parameter)):
        raise AutogradDagError(f"{type(optimizer).__name__}: parameter {i} is not a leaf Tensor with "
                               f"requires_grad=True (got {_describe(p)})")


def _checked_lr(optimizer: Optimizer, lr) -> float:
    if isinstance(lr, (bool, np.bool_)) or not isinstance(lr, (int, float, np.integer, np.floating)):
        raise AutogradDagError(f"{type(optimizer).__name__}: lr must be a number; got {lr!r}")
    if not lr >= 0:
        raise AutogradDagError(f"{type(optimizer).__name__}: lr must be >= 0; got {lr}")
    return float(lr)


def _describe(p) -> str:
    if isinstance(p, dict):
        return f"a dict with keys {sorted(map(str, p))}"
    if not isinstance(p, Tensor):
        return f"a {type(p).__name__}"
    return f"a {type(p).__name__} with requires_grad={p.requires_grad}, is_leaf={p.is_leaf}"


def _check_non_negative(optimizer: Optimizer, group: dict, *names: str) -> None:
    """Refuse a negative hyperparameter (PyTorch's checks): it would quietly train in the wrong direction."""
    for name in names:
        value = group[name]
        if not value >= 0:
            raise AutogradDagError(f"{type(optimizer).__name__}: {name} must be >= 0 (as in PyTorch); got {value}")


def _refuse_unsupported(optimizer: Optimizer, differentiable=False, capturable=False) -> None:
    """PyTorch options without a meaning here are refused by name (foreach and fused are accepted: one path)."""
    name = type(optimizer).__name__
    if differentiable:
        raise AutogradDagError(f"{name}: differentiable=True is not supported: the update is plain numpy on the "
                               f"values, outside any program (write the step on Tensors to differentiate it)")
    if capturable:
        raise AutogradDagError(f"{name}: capturable=True (CUDA graph capture) is not supported: there is no "
                               f"device here")


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, Nesterov momentum and weight decay (PyTorch's rule).

    The arguments come in ``torch.optim.SGD``'s order (lr, momentum, dampening,
    weight_decay, nesterov; then keyword-only maximize) with its defaults (lr = 1e-3),
    so a call written for PyTorch means the same here; every one of them may also
    be given per parameter group.

    g ← ±∇ + λ·p (− with ``maximize``);  with momentum μ: v ← μ·v + (1 − dampening)·g
    (v ← g at the first step) and g ← v (or g + μ·v with ``nesterov``);  p ← p − lr·g.
    Example: ``SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)``.
    """

    # lr defaults to PyTorch's 1e-3, so that SGD(params) written for PyTorch takes the same step.
    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False,
                 foreach=None, differentiable: bool = False, fused=None):
        _refuse_unsupported(self, differentiable)
        super().__init__(params, dict(lr=lr, momentum=float(momentum), dampening=float(dampening),
                                      weight_decay=float(weight_decay), nesterov=bool(nesterov),
                                      maximize=bool(maximize)))

    def _check_group(self, group):
        _check_non_negative(self, group, "momentum", "weight_decay")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise AutogradDagError("SGD: nesterov needs momentum > 0 and dampening = 0")

    def _update(self, i, p, g, group):
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.value
        momentum = group["momentum"]
        if momentum:
            v = self.state[i].get("momentum")
            if v is None:
                v = self.state[i]["momentum"] = np.array(g, copy=True)
            else:
                v *= momentum
                v += (1 - group["dampening"]) * g
            g = g + momentum * v if group["nesterov"] else v
        p.value -= group["lr"] * g


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015) with bias correction; ``weight_decay`` adds λ·p to the gradient (L2).

    m ← β₁m + (1 − β₁)g;  v ← β₂v + (1 − β₂)g²;  p ← p − lr·m̂ / (√v̂ + ε),
    with m̂ = m / (1 − β₁ᵗ), v̂ = v / (1 − β₂ᵗ). ``amsgrad=True`` (Reddi et al. 2018)
    divides by the largest v so far instead; ``maximize=True`` ascends;
    ``decoupled_weight_decay=True`` is :class:`AdamW`. PyTorch's arguments, order and defaults.
    Example: ``Adam(model.parameters(), lr=1e-3)``.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False, fused=None,
                 decoupled_weight_decay: bool = False):
        _refuse_unsupported(self, differentiable, capturable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=float(eps), weight_decay=float(weight_decay),
                                      amsgrad=bool(amsgrad), maximize=bool(maximize),
                                      decoupled_weight_decay=bool(decoupled_weight_decay)))

    def _check_group(self, group):
        _check_non_negative(self, group, "eps", "weight_decay")
        betas = tuple(group["betas"])
        for k, beta in enumerate(betas):
            # β = 1 makes the bias correction 1 − βᵗ zero: every parameter would turn NaN at the first step.
            if not 0.0 <= beta < 1.0:
                raise AutogradDagError(f"{type(self).__name__}: betas[{k}] must be in [0, 1) (as in PyTorch); "
                                       f"got betas={betas}")

    def _update(self, i, p, g, group):
        b1, b2 = group["betas"]
        lr, st = group["lr"], self.state[i]
        if "m" not in st:
            st["m"], st["v"], st["t"] = np.zeros_like(p.value), np.zeros_like(p.value), 0
        if group["amsgrad"] and "v_max" not in st:
            st["v_max"] = np.zeros_like(p.value)
        if group["weight_decay"]:
            if group["decoupled_weight_decay"]:
                p.value *= 1 - lr * group["weight_decay"]
            else:
                g = g + group["weight_decay"] * p.value
        st["t"] += 1
        m, v, t = st["m"], st["v"], st["t"]
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * (g * g)
        if group["amsgrad"]:
            v = np.maximum(st["v_max"], v, out=st["v_max"])
        m_hat = m / (1 - b1 ** t)
        v_hat = v / (1 - b2 ** t)
        p.value -= lr * m_hat / (np.sqrt(v_hat) + group["eps"])


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019): p ← p − lr·λ·p, then the Adam step.

    Example: ``AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)``.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01, amsgrad: bool = False, *, maximize: bool = False, foreach=None,
                 capturable: bool = False, differentiable: bool = False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize, capturable=capturable,
                         differentiable=differentiable, decoupled_weight_decay=True)


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture 6e) with PyTorch's options, arguments, order and defaults (lr = 1e-2).

    v ← αv + (1 − α)g²;  with ``centered``: ḡ ← αḡ + (1 − α)g and s = √(v − ḡ²), else s = √v;
    with momentum μ: b ← μb + g/(s + ε), p ← p − lr·b; else p ← p − lr·g/(s + ε).
    Example: ``RMSprop(model.parameters(), lr=1e-3, momentum=0.9, centered=True)``.
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0.0,
                 momentum: float = 0.0, centered: bool = False, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False):
        _refuse_unsupported(self, differentiable, capturable)
        super().__init__(params, dict(lr=lr, alpha=float(alpha), eps=float(eps), weight_decay=float(weight_decay),
                                      momentum=float(momentum), centered=bool(centered), maximize=bool(maximize)))

    def _check_group(self, group):
        _check_non_negative(self, group, "alpha", "eps", "weight_decay", "momentum")

    def _update(self, i, p, g, group):
        alpha, st = group["alpha"], self.state[i]
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.value
        if "square_avg" not in st:
            st["square_avg"] = np.zeros_like(p.value)
        square = st["square_avg"]
        square *= alpha
        square += (1 - alpha) * g * g
        if group["centered"]:
            mean = st.setdefault("grad_avg", np.zeros_like(p.value))
            mean += (1 - alpha) * (g - mean)  # PyTorch's lerp
            scale = np.sqrt(square - mean * mean) + group["eps"]
        else:
            scale = np.sqrt(square) + group["eps"]
        if group["momentum"] > 0:
            buf = st.setdefault("momentum_buffer", np.zeros_like(p.value))
            buf *= group["momentum"]
            buf += g / scale
            p.value -= group["lr"] * buf
        else:
            p.value -= group["lr"] * (g / scale)


class Adagrad(Optimizer):
    """Adagrad (Duchi et al. 2011) with PyTorch's options, arguments, order and defaults (lr = 1e-2).

    s ← s + g² (s starts at ``initial_accumulator_value``);  p ← p − lr_t·g/(√s + ε),
    with lr_t = lr / (1 + (t − 1)·lr_decay) at the parameter's step t.
    Example: ``Adagrad(model.parameters(), lr=0.1, lr_decay=1e-3)``.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, foreach=None, *,
                 maximize: bool = False, differentiable: bool = False, fused=None):
        _refuse_unsupported(self, differentiable)
        super().__init__(params, dict(lr=lr, lr_decay=float(lr_decay), weight_decay=float(weight_decay),
                                      initial_accumulator_value=float(initial_accumulator_value), eps=float(eps),
                                      maximize=bool(maximize)))

    def _check_group(self, group):
        _check_non_negative(self, group, "lr_decay", "weight_decay", "initial_accumulator_value", "eps")

    def _update(self, i, p, g, group):
        st = self.state[i]
        if "sum" not in st:
            st["sum"], st["t"] = np.full_like(p.value, group["initial_accumulator_value"]), 0
        st["t"] += 1
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.value
        lr = group["lr"] / (1 + (st["t"] - 1) * group["lr_decay"])
        st["sum"] += g * g
        p.value -= lr * (g / (np.sqrt(st["sum"]) + group["eps"]))

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
    """Sets the learning rate of every parameter group from the schedule step; call :meth:`step` once per
    epoch (or batch). The rate at construction is schedule step 0.

    A subclass's ``_rate(k, base_lr, step)`` gives group k's rate from its base rate
    (its ``"initial_lr"``, set from its ``"lr"`` by the first scheduler, as PyTorch's);
    ``LRScheduler(optimizer, fn)`` itself sets every group's rate to ``fn(step)``.
    """

    def __init__(self, optimizer: Optimizer, fn: Callable[[int], float] | None = None):
        if fn is None and type(self)._rate is LRScheduler._rate:
            raise AutogradDagError("LRScheduler: give fn (step -> learning rate), or use a subclass "
                                   "(LambdaLR, StepLR, CosineAnnealingLR)")
        self.optimizer = optimizer
        self.fn = fn
        self.last_step = 0
        self._set_rates()

    @property
    def base_lrs(self) -> list[float]:
        """Each group's base rate (PyTorch's ``base_lrs``)."""
        return [group.setdefault("initial_lr", group["lr"]) for group in self.optimizer.param_groups]

    @property
    def base_lr(self) -> float:
        return self.base_lrs[0]

    def _rate(self, k: int, base_lr: float, step: int) -> float:
        return self.fn(step)

    def _set_rates(self) -> None:
        # Every rate is computed before any is set: a schedule that fails leaves the rates as they were.
        rates = [float(self._rate(k, base, self.last_step)) for k, base in enumerate(self.base_lrs)]
        for group, rate in zip(self.optimizer.param_groups, rates):
            group["lr"] = rate
        self._last_lr = rates

    def step(self):
        """Advance one schedule step; returns the new learning rate (the list of them with several groups)."""
        self.last_step += 1
        self._set_rates()
        rates = self.get_last_lr()
        return rates[0] if len(rates) == 1 else rates

    def get_last_lr(self) -> list[float]:
        """The learning rate of each group set by the last step, as PyTorch's ``get_last_lr()`` (a rate
        edited by hand since is in ``optimizer.param_groups``)."""
        return list(self._last_lr)

    def get_lr(self) -> float:
        """The learning rate in force (an error if the groups have different ones: use :meth:`get_last_lr`)."""
        return self.optimizer.lr

    def state_dict(self) -> dict:
        """The schedule step reached, for :meth:`load_state_dict` on resuming. Example: ``{'last_step': 12}``."""
        return {"last_step": self.last_step}

    def load_state_dict(self, state: dict) -> "LRScheduler":
        """Continue from the schedule step of :meth:`state_dict`, setting the groups' rates for it; returns self."""
        self.last_step = int(state["last_step"])
        self._set_rates()
        return self


class LambdaLR(LRScheduler):
    """lr = base_lr · factor(step), in every group; ``factor`` may be a list of one function per group
    (PyTorch's ``lr_lambda``). Example: ``LambdaLR(opt, lambda s: 0.95 ** s)``."""

    def __init__(self, optimizer: Optimizer, factor):
        factors = list(factor) if isinstance(factor, (list, tuple)) else None
        if factors is not None and len(factors) != len(optimizer.param_groups):
            raise AutogradDagError(f"LambdaLR: {len(factors)} functions for {len(optimizer.param_groups)} "
                                   f"parameter groups; give one per group, or a single one for all")
        self.factor, self.factors = factor, factors
        super().__init__(optimizer)

    def _rate(self, k, base_lr, step):
        if self.factors is None:
            return base_lr * self.factor(step)
        if k >= len(self.factors):
            raise AutogradDagError(f"LambdaLR: parameter group {k} was added after the scheduler was made with "
                                   f"{len(self.factors)} functions, one per group then; make a new scheduler")
        return base_lr * self.factors[k](step)


class StepLR(LRScheduler):
    """lr = base_lr · gamma^(step // step_size), in every group. Example: ``StepLR(opt, step_size=10, gamma=0.5)``."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer)

    def _rate(self, k, base_lr, step):
        return step_schedule(step, base_lr, self.step_size, self.gamma)


class CosineAnnealingLR(LRScheduler):
    """Cosine decay from base_lr to ``eta_min`` over ``T_max`` steps (optional linear ``warmup``), in every group.

    After ``T_max`` steps the rate stays at ``eta_min``; PyTorch's scheduler of
    the same name keeps following the cosine, back up towards base_lr over the
    next ``T_max`` steps (a period of 2·T_max), which is rarely what a decay wants.
    ``warmup`` is keyword-only: PyTorch's fourth argument is ``last_epoch``.

    Example: ``CosineAnnealingLR(opt, T_max=epochs)`` then ``sched.step()`` after each epoch.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, *, warmup: int = 0):
        self.T_max, self.eta_min, self.warmup = T_max, eta_min, warmup
        super().__init__(optimizer)

    def _rate(self, k, base_lr, step):
        return cosine_schedule(step, self.T_max, base_lr, self.eta_min, self.warmup)
