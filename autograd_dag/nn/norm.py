"""Normalization layers (§4.5): batch normalization and layer normalization.

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

__all__ = ["BatchNorm", "BatchNorm1d", "BatchNorm2d", "LayerNorm"]


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
