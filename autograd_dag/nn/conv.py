"""Convolutional layers and LeNet (seed 000): Conv2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Flatten."""

from __future__ import annotations

import numpy as np

from ..core import Tensor
from ..errors import ShapeError
from ..primitives.conv import _pair as _checked_pair
from ..primitives.conv import conv2d, conv2d_bias, max_pool2d
from ..primitives.elementwise import relu
from ..primitives.conv_family import check_groups, conv1d, conv_transpose2d, grouped_conv2d
from ..primitives.pooling import adaptive_avg_pool2d, avg_pool2d
from ..primitives.structure import reshape
from . import init as _init
from .layers import Classifier, Linear
from .module import Module, Parameter

__all__ = ["Conv2d", "Conv1d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Flatten", "LeNet"]


def _pair(name: str, what: str, v, minimum: int = 1) -> tuple[int, int]:
    # Checked, not int()-truncated: padding=1.5 became 1 and kernel_size=2.5 became 2 (PyTorch refuses both).
    return _checked_pair(name, what, v, minimum)


class Conv2d(Module):
    """Convolution with bias: Conv2d(X; W, b) = conv2d(X, W) + b per output channel (seed 000).

    ``weight`` W has shape (out_channels, in_channels/groups, kh, kw) (He init by
    default, for the ReLU that follows in LeNet); ``bias`` b has shape (out_channels,).
    ``groups`` splits the channels as PyTorch's (``groups=in_channels``: depthwise; one conv2d per
    group, ``primitives.conv_family.grouped_conv2d``). No dilation; ``bias`` and ``groups`` are
    keyword-only, so PyTorch's positional ``dilation`` (the sixth argument there) is refused
    rather than read as ``bias``.
    Shapes: (B, in_channels, H, W) -> (B, out_channels, (H + 2p − kh)//s + 1, (W + 2p − kw)//s + 1).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> nn.Conv2d(1, 6, 5, padding=2, rng=0)(np.zeros((2, 1, 28, 28))).shape
        (2, 6, 28, 28)
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, *, bias: bool = True,
                 groups: int = 1, init: str = "he", rng=None, dtype=np.float64):
        super().__init__()
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = _pair("Conv2d", "kernel_size", kernel_size)
        self.stride = _pair("Conv2d", "stride", stride)
        self.padding = _pair("Conv2d", "padding", padding, 0)
        self.groups = check_groups("Conv2d", groups, self.in_channels, self.out_channels)
        shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        self.weight = Parameter(_init.initialise(init, shape, rng=rng, dtype=dtype))
        self.bias = Parameter(np.zeros(self.out_channels, dtype=dtype)) if bias else None

    def output_size(self, hw) -> tuple[int, int]:
        """Spatial size (H', W') of the output for an input of spatial size ``hw``."""
        h, w = _pair("Conv2d.output_size", "hw", hw, 0)
        (kh, kw), (sh, sw), (ph, pw) = self.kernel_size, self.stride, self.padding
        return (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1

    def forward(self, x):
        if self.groups > 1:
            return grouped_conv2d(x, self.weight, self.stride, self.padding, self.groups, self.bias)
        if self.bias is None:
            return conv2d(x, self.weight, self.stride, self.padding)
        return conv2d_bias(x, self.weight, self.bias, self.stride, self.padding)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}" + (f", groups={self.groups}" if self.groups > 1 else ""))


class Conv1d(Module):
    """1-d convolution with bias over sequences (N, C, L), as PyTorch's ``nn.Conv1d``: conv2d at height 1.

    ``weight`` has shape (out_channels, in_channels/groups, kernel_size); ``bias`` (out_channels,).
    Shapes: (B, in_channels, L) -> (B, out_channels, (L + 2p − k)//s + 1).
    Example: ``nn.Conv1d(3, 4, 3, padding=1, rng=0)(np.zeros((2, 3, 10))).shape == (2, 4, 10)``.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, *,
                 bias: bool = True, groups: int = 1, init: str = "he", rng=None, dtype=np.float64):
        super().__init__()
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size, self.stride = _pair("Conv1d", "kernel_size", kernel_size)[0], _pair("Conv1d", "stride", stride)[0]
        self.padding = _pair("Conv1d", "padding", padding, 0)[0]
        self.groups = check_groups("Conv1d", groups, self.in_channels, self.out_channels)
        shape = (self.out_channels, self.in_channels // self.groups, self.kernel_size)
        self.weight = Parameter(_init.initialise(init, shape, rng=rng, dtype=dtype))
        self.bias = Parameter(np.zeros(self.out_channels, dtype=dtype)) if bias else None

    def forward(self, x):
        return conv1d(x, self.weight, self.stride, self.padding, self.groups, self.bias)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}" + (f", groups={self.groups}" if self.groups > 1 else ""))


class ConvTranspose2d(Module):
    """Transposed convolution with bias (PyTorch's ``nn.ConvTranspose2d``): :func:`autograd_dag.conv_transpose2d`.

    ``weight`` has PyTorch's layout (in_channels, out_channels, kh, kw); ``bias`` (out_channels,).
    Shapes: (B, in_channels, H, W) -> (B, out_channels, (H − 1)·s − 2p + kh + op, (W − 1)·s − 2p + kw + op).
    Example: ``nn.ConvTranspose2d(2, 3, 3, stride=2, rng=0)(np.zeros((1, 2, 4, 4))).shape == (1, 3, 9, 9)``.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, *,
                 bias: bool = True, init: str = "he", rng=None, dtype=np.float64):
        super().__init__()
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = _pair("ConvTranspose2d", "kernel_size", kernel_size)
        self.stride = _pair("ConvTranspose2d", "stride", stride)
        self.padding = _pair("ConvTranspose2d", "padding", padding, 0)
        self.output_padding = _pair("ConvTranspose2d", "output_padding", output_padding, 0)
        shape = (self.in_channels, self.out_channels) + self.kernel_size
        self.weight = Parameter(_init.initialise(init, shape, rng=rng, dtype=dtype))
        self.bias = Parameter(np.zeros(self.out_channels, dtype=dtype)) if bias else None

    def forward(self, x):
        return conv_transpose2d(x, self.weight, self.stride, self.padding, self.output_padding, self.bias)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, output_padding={self.output_padding}")


class MaxPool2d(Module):
    """Max over each window of the last two axes (no padding); stride defaults to the window.

    Shapes: (..., H, W) -> (..., (H − kh)//sh + 1, (W − kw)//sw + 1).
    Example: ``nn.MaxPool2d(2)(np.zeros((1, 6, 28, 28))).shape == (1, 6, 14, 14)``.
    """

    def __init__(self, window=2, stride=None):
        super().__init__()
        self.window = _pair("MaxPool2d", "window", window)
        self.stride = self.window if stride is None else _pair("MaxPool2d", "stride", stride)

    def output_size(self, hw) -> tuple[int, int]:
        """Spatial size of the output for an input of spatial size ``hw``."""
        h, w = _pair("MaxPool2d.output_size", "hw", hw, 0)
        return (h - self.window[0]) // self.stride[0] + 1, (w - self.window[1]) // self.stride[1] + 1

    def forward(self, x):
        return max_pool2d(x, self.window, self.stride)

    def extra_repr(self) -> str:
        return f"window={self.window}, stride={self.stride}"


class AvgPool2d(Module):
    """Mean over each window of the last two axes (:func:`autograd_dag.avg_pool2d`); stride defaults to the window.

    Shapes: (..., H, W) -> (..., (H + 2ph − kh)//sh + 1, (W + 2pw − kw)//sw + 1).
    Example: ``nn.AvgPool2d(2)(np.zeros((1, 6, 28, 28))).shape == (1, 6, 14, 14)``.
    """

    def __init__(self, window=2, stride=None, padding=0, count_include_pad: bool = True):
        super().__init__()
        self.window = _pair("AvgPool2d", "window", window)
        self.stride = self.window if stride is None else _pair("AvgPool2d", "stride", stride)
        self.padding = _pair("AvgPool2d", "padding", padding, 0)
        self.count_include_pad = bool(count_include_pad)

    def forward(self, x):
        return avg_pool2d(x, self.window, self.stride, self.padding, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"window={self.window}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Mean over PyTorch's adaptive bins to ``output_size`` (1: global average pooling).

    Shapes: (..., H, W) -> (..., oh, ow).
    Example: ``nn.AdaptiveAvgPool2d(1)(np.zeros((2, 8, 7, 7))).shape == (2, 8, 1, 1)``.
    """

    def __init__(self, output_size=1):
        super().__init__()
        self.output_size = _pair("AdaptiveAvgPool2d", "output_size", output_size)

    def forward(self, x):
        return adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class Flatten(Module):
    """Merge all axes from ``start_axis`` on: (B, C, H, W) -> (B, C·H·W) (seed 000's (H, W, C) → layer).

    Example: ``nn.Flatten()(np.zeros((2, 16, 5, 5))).shape == (2, 400)``.
    """

    def __init__(self, start_axis: int = 1):
        super().__init__()
        self.start_axis = int(start_axis)

    def forward(self, x):
        shape = np.shape(x)
        return reshape(x, tuple(shape[:self.start_axis]) + (-1,))

    def extra_repr(self) -> str:
        return f"start_axis={self.start_axis}"


class LeNet(Classifier):
    """LeNet exactly as seed 000 writes it, sized by arguments.

    T¹ = relu(Conv¹(X⁰)), X¹ = MaxPool¹(T¹), T² = relu(Conv²(X¹)),
    X² = flatten(MaxPool²(T²)), X³ = relu(W³ X² + b³), O = softargmax(W⁴ X³ + b⁴).

    ``channels`` = (c1, c2), ``kernel_sizes``, ``paddings`` and ``pools`` give
    each convolution and pooling; ``hidden`` = |W³ rows|. The defaults are the
    classic 28×28 LeNet (5×5 kernels, 6 and 16 channels, 2×2 pooling, 120 hidden),
    without padding, as seed 000's Conv2d has none (28 → 24 → 12 → 8 → 4, so
    16·4·4 = 256 features); ``paddings`` adds zero padding as an option.
    ``model(x)`` returns the logits W⁴X³ + b⁴ (for :func:`cross_entropy`), as
    every model does (see :class:`Classifier`); :meth:`predict_proba` returns O.
    Shapes: (B, in_channels, H, W) -> (B, num_classes).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> net = nn.LeNet(image_size=8, channels=(4, 8), kernel_sizes=(3, 3), paddings=(1, 1), hidden=16, rng=0)
        >>> net(np.zeros((2, 1, 8, 8), dtype=np.float64)).shape
        (2, 10)
    """

    def __init__(self, in_channels: int = 1, image_size=28, num_classes: int = 10, *, channels=(6, 16),
                 kernel_sizes=(5, 5), paddings=(0, 0), pools=(2, 2), hidden: int = 120, rng=None,
                 dtype=np.float64):
        super().__init__()
        rng = _init.as_generator(rng)
        self.image_size = _pair("LeNet", "image_size", image_size)
        c1, c2 = (int(c) for c in channels)
        self.conv1 = Conv2d(in_channels, c1, kernel_sizes[0], padding=paddings[0], rng=rng, dtype=dtype)
        self.pool1 = MaxPool2d(pools[0])
        self.conv2 = Conv2d(c1, c2, kernel_sizes[1], padding=paddings[1], rng=rng, dtype=dtype)
        self.pool2 = MaxPool2d(pools[1])
        self.flatten = Flatten()
        hw = self.image_size
        for layer in (self.conv1, self.pool1, self.conv2, self.pool2):
            hw = layer.output_size(hw)
            if min(hw) < 1:
                raise ShapeError(f"LeNet: Expect: an image size that survives both convolutions and poolings. "
                                 f"Actual: image_size {self.image_size} shrinks to {hw} at {type(layer).__name__}")
        self.features = c2 * hw[0] * hw[1]
        self.fc3 = Linear(self.features, hidden, init="he", rng=rng, dtype=dtype)
        self.fc4 = Linear(hidden, num_classes, rng=rng, dtype=dtype)

    def forward(self, x):
        """The scores W⁴X³ + b⁴ before the softargmax. Shapes: (B, C, H, W) -> (B, num_classes)."""
        x = x if isinstance(x, Tensor) else Tensor(x)
        if x.ndim != 4 or tuple(x.shape[2:]) != self.image_size or x.shape[1] != self.conv1.in_channels:
            raise ShapeError(f"LeNet: Expect: images (B, {self.conv1.in_channels}, {self.image_size[0]}, "
                             f"{self.image_size[1]}). Actual: shape {x.shape}")
        x1 = self.pool1(relu(self.conv1(x)))
        x2 = self.flatten(self.pool2(relu(self.conv2(x1))))
        x3 = relu(self.fc3(x2))
        return self.fc4(x3)
