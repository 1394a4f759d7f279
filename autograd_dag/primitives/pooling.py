"""Average pooling as compositions of strided slices: avg_pool2d and adaptive_avg_pool2d.

A window's mean is separable: the sum over each window's rows, then over its columns, each a sum
of strided slices (kh + kw slices, not kh·kw). Written with recorded slices and adds, the
derivative of every order, the JVP and vmap come from theirs. (max_pool2d, whose derivative needs
each window's first maximum, is a primitive in primitives/conv.py.)
"""

from __future__ import annotations

import numpy as np

from ..core import Tensor
from ..errors import ShapeError
from .arrays import pad
from .conv import _pair, _pool_params
from .elementwise import add, divide, multiply
from .indexing import concatenate, getitem
from .reductions import mean
from .shapes import fmt
from .structure import reshape


def _shape(x) -> tuple:
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)


def _window_sums(x, axis: int, size: int, step: int, count: int):
    """Σ over windows of ``size`` entries every ``step`` along ``axis`` (−2 or −1): ``count`` windows."""
    total = None
    for offset in range(size):
        cut = slice(offset, offset + step * (count - 1) + 1, step)
        part = getitem(x, (Ellipsis, cut, slice(None)) if axis == -2 else (Ellipsis, cut))
        total = part if total is None else add(total, part)
    return total


def avg_pool2d(x, window=2, stride=None, padding=0, count_include_pad: bool = True) -> Tensor:
    """Mean over each window of the last two axes, as PyTorch's ``F.avg_pool2d`` (its ``kernel_size``).

    ``padding`` adds zeros on both sides (at most half the window, as PyTorch requires); with
    ``count_include_pad=False`` a window's mean is over its entries inside the image only.
    Shapes: (..., H, W) -> (..., (H + 2ph − kh)//sh + 1, (W + 2pw − kw)//sw + 1).
    Example: ``ad.avg_pool2d(ad.Tensor(np.ones((1, 1, 4, 4)))).shape == (1, 1, 2, 2)``.
    """
    params = _pool_params("avg_pool2d", window, stride)
    (kh, kw), (sh, sw) = params["window"], params["stride"]
    ph, pw = _pair("avg_pool2d", "padding", padding, 0)
    shape = _shape(x)
    if len(shape) < 2:
        raise ShapeError(f"avg_pool2d: Expect: an input of 2 or more axes (..., H, W). Actual: shape {fmt(shape)}")
    if ph > kh // 2 or pw > kw // 2:
        raise ShapeError(f"avg_pool2d: Expect: padding at most half the window {(kh, kw)}. Actual: {(ph, pw)}")
    h, w = shape[-2] + 2 * ph, shape[-1] + 2 * pw
    if h < kh or w < kw:
        raise ShapeError(f"avg_pool2d: Expect: a padded image at least the window {(kh, kw)}. "
                         f"Actual: {(h, w)} from shape {fmt(shape)} and padding {(ph, pw)}")
    ho, wo = (h - kh) // sh + 1, (w - kw) // sw + 1
    if ph or pw:
        x = pad(x, [(0, 0)] * (len(shape) - 2) + [(ph, ph), (pw, pw)])
    total = _window_sums(_window_sums(x, -2, kh, sh, ho), -1, kw, sw, wo)
    if count_include_pad or not (ph or pw):
        return multiply(total, 1.0 / (kh * kw))
    # Each window's count of entries inside the image: the same sums over an image of ones.
    inside = np.pad(np.ones(shape[-2:]), [(ph, ph), (pw, pw)])
    counts = _window_sums(_window_sums(inside, -2, kh, sh, ho), -1, kw, sw, wo)
    return divide(total, counts.value.astype(total.dtype))


def _bins(size: int, count: int) -> list[tuple[int, int]]:
    # PyTorch's adaptive bins: [floor(i·size/count), ceil((i + 1)·size/count)), overlapping when uneven.
    return [(i * size // count, -(-(i + 1) * size // count)) for i in range(count)]


def adaptive_avg_pool2d(x, output_size) -> Tensor:
    """Mean over PyTorch's adaptive bins of the last two axes: ``output_size`` (oh, ow) or one int.

    Global average pooling is ``output_size=1``. An axis that divides evenly is one reshape and mean;
    otherwise each bin [⌊i·H/oh⌋, ⌈(i + 1)·H/oh⌉) is averaged apart.
    Shapes: (..., H, W) -> (..., oh, ow).
    Example: ``ad.adaptive_avg_pool2d(ad.Tensor(np.ones((1, 3, 7, 7))), 1).shape == (1, 3, 1, 1)``.
    """
    oh, ow = _pair("adaptive_avg_pool2d", "output_size", output_size, 1)
    shape = _shape(x)
    if len(shape) < 2:
        raise ShapeError(f"adaptive_avg_pool2d: Expect: an input of 2 or more axes (..., H, W). "
                         f"Actual: shape {fmt(shape)}")
    for axis, count in ((-2, oh), (-1, ow)):
        x = _adaptive_mean(x, axis, count)
    return x


def _adaptive_mean(x, axis: int, count: int):
    shape = _shape(x)
    size = shape[axis]
    if size % count == 0:
        split = shape[:axis] + (count, size // count) + ((shape[-1],) if axis == -2 else ())
        return mean(reshape(x, split), axis=axis if axis == -1 else -2)
    parts = []
    for start, end in _bins(size, count):
        cut = slice(start, end)
        part = getitem(x, (Ellipsis, cut, slice(None)) if axis == -2 else (Ellipsis, cut))
        parts.append(mean(part, axis=axis, keepdims=True))
    return concatenate(parts, axis=axis)
