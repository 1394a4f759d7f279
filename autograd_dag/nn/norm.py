"""Normalization layers (§4.5): batch, layer, group and instance normalization.

Both standardise with ŝ = (s − μ) / √(σ² + ε) and rescale with learnable γ, β.
ε goes under the square root (as in PyTorch) rather than onto σ as the book
writes it: then the derivative stays finite when a feature has zero variance,
where √σ² is not differentiable.
"""

from __future__ import annotations

import numpy as np

from ..core import Tensor, no_grad, tracer_of
from ..errors import ShapeError, TracingError
from ..primitives.arrays import constant
from ..primitives.elementwise import add, divide, multiply, sqrt, subtract
from ..primitives.fused import layer_norm
from ..primitives.reductions import mean
from ..primitives.structure import reshape
from . import init as _init
from .module import Module, Parameter

__all__ = ["BatchNorm", "BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm", "InstanceNorm2d", "group_norm"]


def _standardize(x: Tensor, axes: tuple[int, ...], eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """ŝ = (x − μ) / √(σ² + ε) with μ, σ² the mean and variance of ``x`` over ``axes``; returns (ŝ, μ, σ²).

    Shapes: x (*s) -> ŝ (*s); μ and σ² are s with ``axes`` kept as 1.
    Example: ``_standardize(ad.Tensor([1., 3.]), (0,), 0.0)[0].value`` is ``[-1., 1.]``.
    """
    mu = mean(x, axes, keepdims=True)
    centred = subtract(x, mu)
    var = mean(multiply(centred, centred), axes, keepdims=True)
    return divide(centred, sqrt(add(var, eps))), mu, var


class BatchNorm(Module):
    """Batch normalization (§4.5.1): standardise each feature over the batch.

    For vectors (B, D) the statistics of feature j are over the B samples; for
    images (B, C, H, W) those of channel c are over (B, H, W). In ``train()``
    the batch statistics are used and the running averages updated,
    running ← (1 − momentum)·running + momentum·batch (the running variance uses
    the unbiased batch variance, as PyTorch does; ``momentum=None`` averages
    every batch so far with equal weights, as PyTorch's); in ``eval()`` the running
    averages are used, so a single sample is well defined. The update is a
    side effect of the forward pass: inside ``ad.jit`` it happens once, when
    the step is traced (as side effects do under ``jax.jit``), so train a
    BatchNorm model with eager steps, or keep it in ``eval()`` under jit.
    Under ``vmap`` training mode is refused (the update would see one example).
    Shapes: (B, D) or (B, D, *spatial) -> same shape; γ, β, running stats (D,).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> bn = nn.BatchNorm(3)
        >>> y = bn(np.random.default_rng(0).normal(5.0, 2.0, (64, 3)))
        >>> bool(np.allclose(y.value.mean(axis=0), 0.0))
        True
    """

    running_mean: np.ndarray
    running_var: np.ndarray
    num_batches_tracked: np.ndarray

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 *, dtype=np.float64):
        super().__init__()
        self.num_features = _init.size("BatchNorm", "num_features", num_features)
        self.eps = float(eps)
        # None: PyTorch's cumulative average, the running statistics the mean of every batch's so far.
        self.momentum = None if momentum is None else float(momentum)
        self.gamma = Parameter(np.ones(self.num_features, dtype=dtype)) if affine else None
        self.beta = Parameter(np.zeros(self.num_features, dtype=dtype)) if affine else None
        self.register_buffer("running_mean", np.zeros(self.num_features, dtype=dtype))
        self.register_buffer("running_var", np.ones(self.num_features, dtype=dtype))
        self.register_buffer("num_batches_tracked", np.zeros((), dtype=np.int64))

    def forward(self, x):
        x = x if isinstance(x, Tensor) else Tensor(x)
        if x.ndim < 2 or x.shape[1] != self.num_features:
            raise ShapeError(f"BatchNorm({self.num_features}): Expect: input (B, {self.num_features}) or "
                             f"(B, {self.num_features}, H, W). Actual: shape {x.shape}")
        axes = (0,) + tuple(range(2, x.ndim))
        # Per-feature vectors broadcast against (B, D, *spatial) with this shape.
        feature_shape = (1, self.num_features) + (1,) * (x.ndim - 2)
        if self.training:
            count = x.size // self.num_features
            if count < 2:
                raise ShapeError(f"BatchNorm({self.num_features}): Expect: more than one value per feature "
                                 f"in training mode (batch statistics of one sample are meaningless). "
                                 f"Actual: input shape {x.shape}; use eval() for single samples")
            out, mu, var = _standardize(x, axes, self.eps)
            if tracer_of(mu) == "vmap":
                # vmap records one example: the running statistics would move once, by its
                # batch's statistics alone, for the whole vmapped batch (PyTorch's vmap refuses too).
                raise TracingError(f"BatchNorm({self.num_features}): vmap of batch normalization in training "
                                   f"mode would update the running statistics once, from the first example's "
                                   f"batch only; call it on the whole batch, or use eval() under vmap")
            self._update_running(mu.value.reshape(-1), var.value.reshape(-1), count)
        else:
            # Buffers of the module: constants of the picture and of an exported model, not inputs.
            mu = constant(self.running_mean.reshape(feature_shape), name="running_mean")
            var = constant(self.running_var.reshape(feature_shape), name="running_var")
            out = divide(subtract(x, mu), sqrt(add(var, self.eps)))
        if self.gamma is not None:
            out = add(multiply(out, reshape(self.gamma, feature_shape)), reshape(self.beta, feature_shape))
        return out

    def _update_running(self, mu: np.ndarray, var: np.ndarray, count: int) -> None:
        with no_grad():
            self.num_batches_tracked += 1
            # With momentum None the n-th batch is weighted 1/n: the running value is the plain average.
            m = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
            unbiased = var * (count / (count - 1))
            # In place: an eval-mode program that ad.jit recorded reads these arrays by identity.
            for running, batch in ((self.running_mean, mu), (self.running_var, unbiased)):
                running *= 1 - m
                np.add(running, m * batch, out=running, casting="unsafe")

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps:g}, momentum={self.momentum}, affine={self.gamma is not None}"


BatchNorm1d = BatchNorm
BatchNorm2d = BatchNorm


class LayerNorm(Module):
    """Layer normalization (§4.5.2): standardise each sample over its trailing axes.

    ``normalized_shape`` (an int or tuple) names the trailing axes standardised
    together, e.g. D for (B, D) inputs or (C, H, W) for images; γ and β have
    that shape. Identical in ``train()`` and ``eval()``.
    Shapes: (..., *normalized_shape) -> same shape.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> y = nn.LayerNorm(4)(np.arange(8.0).reshape(2, 4))
        >>> bool(np.allclose(y.value.mean(axis=-1), 0.0))
        True
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, *,
                 dtype=np.float64):
        super().__init__()
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (int(normalized_shape),)
        self.normalized_shape = tuple(_init.size("LayerNorm", "normalized_shape", d) for d in normalized_shape)
        self.eps = float(eps)
        self.gamma = Parameter(np.ones(self.normalized_shape, dtype=dtype)) if elementwise_affine else None
        self.beta = Parameter(np.zeros(self.normalized_shape, dtype=dtype)) if elementwise_affine else None

    def forward(self, x):
        x = x if isinstance(x, Tensor) else Tensor(x)
        k = len(self.normalized_shape)
        if x.shape[x.ndim - k:] != self.normalized_shape or x.ndim < k:
            raise ShapeError(f"LayerNorm{self.normalized_shape}: Expect: input (..., "
                             f"{', '.join(map(str, self.normalized_shape))}). Actual: shape {x.shape}")
        # One primitive (it keeps only its output for the backward pass): the
        # composed form kept five arrays of x's size per call.
        if self.gamma is None:
            return layer_norm(x, 1.0, 0.0, tuple(range(-k, 0)), self.eps)
        return layer_norm(x, self.gamma, self.beta, tuple(range(-k, 0)), self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps:g}, affine={self.gamma is not None}"


def group_norm(x, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Group normalization (Wu & He, 2018), PyTorch's ``F.group_norm``: each example's channels split in
    ``num_groups`` groups, each group standardised over its channels and positions, then ⊙ weight + bias
    per channel. Layer norm's primitive on the (N, groups, rest) view, so one fused node.

    Shapes: x (N, C, *S), weight and bias (C,) -> x's shape.
    Example: ``group_norm(np.arange(8.0).reshape(1, 2, 4), 1).shape == (1, 2, 4)``.
    """
    x = x if isinstance(x, Tensor) else Tensor(x)
    if x.ndim < 2 or isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)) \
            or num_groups < 1 or x.shape[1] % num_groups:
        raise ShapeError(f"group_norm: Expect: x (N, C, ...) with C divisible by num_groups. Actual: shape {x.shape}, "
                         f"num_groups {num_groups!r}")
    n, c = x.shape[:2]
    for what, operand in (("weight", weight), ("bias", bias)):
        if operand is not None and tuple(np.shape(operand.value if isinstance(operand, Tensor) else operand)) != (c,):
            raise ShapeError(f"group_norm: Expect: {what} of shape ({c},). Actual: {np.shape(operand)}")
    standardized = reshape(layer_norm(reshape(x, (n, int(num_groups), -1)), 1.0, 0.0, (-1,), eps), x.shape)
    per_channel = (c,) + (1,) * (x.ndim - 2)
    if weight is not None:
        standardized = multiply(standardized, reshape(weight, per_channel))
    if bias is not None:
        standardized = add(standardized, reshape(bias, per_channel))
    return standardized


class GroupNorm(Module):
    """Group normalization over (N, C, ...) inputs (:func:`group_norm`), γ and β per channel as PyTorch's.

    Identical in ``train()`` and ``eval()`` (no running statistics). ``num_groups = 1`` standardises each
    example over all its channels and positions; ``num_groups = C`` is instance normalization.
    Shapes: (N, C, *S) -> same shape.
    Example: ``nn.GroupNorm(2, 4)(np.ones((3, 4, 5, 5))).shape == (3, 4, 5, 5)``.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, *,
                 dtype=np.float64):
        super().__init__()
        self.num_groups = _init.size("GroupNorm", "num_groups", num_groups)
        self.num_channels = _init.size("GroupNorm", "num_channels", num_channels)
        if self.num_channels % self.num_groups:
            raise ShapeError(f"GroupNorm: Expect: num_channels divisible by num_groups. Actual: "
                             f"{self.num_channels} and {self.num_groups}")
        self.eps = float(eps)
        self.gamma = Parameter(np.ones(self.num_channels, dtype=dtype)) if affine else None
        self.beta = Parameter(np.zeros(self.num_channels, dtype=dtype)) if affine else None

    def forward(self, x):
        x = x if isinstance(x, Tensor) else Tensor(x)
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ShapeError(f"{type(self).__name__}({self.num_channels}): Expect: input (N, {self.num_channels}, "
                             f"...). Actual: shape {x.shape}")
        return group_norm(x, self.num_groups, self.gamma, self.beta, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps:g}, affine={self.gamma is not None}"


class InstanceNorm2d(GroupNorm):
    """Instance normalization of images (N, C, H, W): each channel of each image standardised over its
    pixels; γ, β per channel with ``affine=True`` (PyTorch's default False). No running statistics
    (PyTorch's ``track_running_stats=False`` default; True is refused).
    Shapes: (N, C, H, W) -> same shape.
    Example: ``nn.InstanceNorm2d(3)(np.ones((2, 3, 4, 4))).shape == (2, 3, 4, 4)``.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, *, dtype=np.float64):
        if track_running_stats:
            raise ShapeError("InstanceNorm2d: track_running_stats=True is not supported (statistics are "
                             "computed per image, in training and evaluation alike)")
        super().__init__(num_features, num_features, eps, affine, dtype=dtype)

    def forward(self, x):
        if (x.ndim if isinstance(x, Tensor) else np.ndim(x)) != 4:
            raise ShapeError(f"InstanceNorm2d: Expect: images (N, C, H, W). Actual: shape {np.shape(x)}")
        return super().forward(x)

    def extra_repr(self) -> str:
        return f"{self.num_channels}, eps={self.eps:g}, affine={self.gamma is not None}"
