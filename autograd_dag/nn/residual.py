"""Residual blocks (§4.6): s ↦ s + h(s), optionally followed by an activation."""

from __future__ import annotations

import numpy as np

from ..core import Tensor
from ..errors import ShapeError
from ..primitives.elementwise import add
from . import init as _init
from .layers import Linear, _activation_module
from .module import Module

__all__ = ["Residual", "ResidualBranch", "ResidualBlock"]


class Residual(Module):
    """Skip connection around a residual h: s + h(s), or a(s + h(s)) with ``activation``.

    ``h`` is any module (or callable) whose output has the input's shape;
    ``activation`` is a name ('relu', ...), callable, Module or None.
    Shapes: (*s) -> (*s).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> block = nn.Residual(nn.Linear(4, 4, rng=0), activation="relu")
        >>> block(np.ones((2, 4))).shape
        (2, 4)
    """

    def __init__(self, h, activation=None):
        super().__init__()
        self.h = h
        self.activation = None if activation is None else _activation_module(activation)

    def forward(self, s):
        s = s if isinstance(s, Tensor) else Tensor(s)
        hs = self.h(s)
        if tuple(hs.shape) != tuple(s.shape):
            raise ShapeError(f"Residual: Expect: the residual h to keep the input's shape {s.shape}. "
                             f"Actual: h returned shape {hs.shape}")
        out = add(s, hs)
        return out if self.activation is None else self.activation(out)


class ResidualBranch(Module):
    """The book's residual h(s) = C·a(W s + b) + d (§4.6), as two affine layers around ``a``.

    ``inner`` holds (W, b) with W of shape (hidden, dim); ``outer`` holds (C, d)
    with C of shape (dim, hidden). With ``zero_init`` C and d start at zero, so
    the block starts as the identity.
    Shapes: (..., dim) -> (..., dim).
    Example: ``nn.ResidualBranch(4, 8, rng=0)(np.ones((2, 4))).shape == (2, 4)``.
    """

    def __init__(self, dim: int, hidden: int | None = None, activation="relu", *, zero_init: bool = False,
                 rng=None, dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        hidden = int(dim if hidden is None else hidden)
        self.inner = Linear(dim, hidden, init="he" if activation == "relu" else "glorot", rng=rng, dtype=dtype)
        self.activation = _activation_module(activation)
        self.outer = Linear(hidden, dim, rng=rng, dtype=dtype)
        if zero_init:
            self.outer.weight.value[...] = 0
            if self.outer.bias is not None:
                self.outer.bias.value[...] = 0

    def forward(self, s):
        return self.outer(self.activation(self.inner(s)))


class ResidualBlock(Residual):
    """The book's residual block s_k = s_{k-1} + C·a(W s_{k-1} + b) + d (§4.6), or a(...) of it.

    Why C = 0, d = 0 makes it the identity: then h(s) = 0·a(W s + b) + 0 = 0
    whatever W, b and a are, so the block returns s + 0 = s exactly. A deeper
    network of such blocks can therefore always represent what a shallower one
    does (set the extra blocks' C and d to zero), which is the point of residual
    networks. With ``outer_activation`` a(s + h(s)) = a(s) it is the identity
    only where a is (for ReLU: on non-negative s).
    Parameters: ``h.inner`` (W, b) and ``h.outer`` (C, d); ``block.branch`` is ``block.h``.
    Shapes: (..., dim) -> (..., dim).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> block = nn.ResidualBlock(3, hidden=5, zero_init=True, rng=0)
        >>> x = np.arange(6.0).reshape(2, 3)
        >>> bool(np.array_equal(block(x).value, x))
        True
    """

    def __init__(self, dim: int, hidden: int | None = None, activation="relu", outer_activation=None, *,
                 zero_init: bool = False, rng=None, dtype=np.float64):
        super().__init__(ResidualBranch(dim, hidden, activation, zero_init=zero_init, rng=rng, dtype=dtype),
                         activation=outer_activation)

    @property
    def branch(self) -> ResidualBranch:
        return self.h
