"""conv2d's relatives, built from its primitives: grouped convolution, conv1d, conv_transpose2d.

* A grouped convolution (``groups`` > 1, depthwise when groups = channels) is one conv2d per
  group of channels, concatenated: each group's kernels read only its own input channels.
* conv1d is conv2d on images of height 1.
* conv_transpose2d is conv2d's transpose in its input (``conv2d_input_grad``, the VJP of
  conv2d), the layer PyTorch calls ConvTranspose2d; its derivatives are that primitive's
  transposes (conv2d and conv2d_weight_grad).
So every derivative order, the JVP and vmap come from conv2d's rules, written once.
"""

from __future__ import annotations

import numpy as np

from ..core import Tensor
from ..errors import ShapeError
from .conv import _pair, conv2d, conv2d_input_grad
from .elementwise import add
from .indexing import concatenate, getitem
from .shapes import fmt
from .structure import reshape


def _shape(x) -> tuple:
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)


def _channels(x, start: int, stop: int):
    return getitem(x, (slice(None), slice(start, stop)))


def check_groups(name: str, groups, channels: int, out_channels: int) -> int:
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ShapeError(f"{name}: Expect: groups a positive int. Actual: {groups!r}")
    if channels % groups or out_channels % groups:
        raise ShapeError(f"{name}: Expect: input channels {channels} and output channels {out_channels} both "
                         f"divisible by groups={groups}")
    return int(groups)


def _with_bias(out, bias):
    if bias is None:
        return out
    channels = _shape(bias)[0] if _shape(bias) else 1
    return add(out, reshape(bias, (1, channels, 1, 1)))


def grouped_conv2d(x, w, stride=1, padding=0, groups: int = 1, bias=None) -> Tensor:
    """conv2d with ``groups``: input and output channels split in ``groups`` blocks, block g of the
    output reading block g of the input only (PyTorch's ``F.conv2d(..., groups=)``); ``bias`` per channel.

    Shapes: x (N, C, H, W), w (O, C/groups, kh, kw), bias (O,) -> (N, O, Ho, Wo) as :func:`conv2d`.
    Example: ``grouped_conv2d(np.ones((1, 4, 5, 5)), np.ones((4, 1, 3, 3)), groups=4).shape == (1, 4, 3, 3)``.
    """
    xs, ws = _shape(x), _shape(w)
    if len(xs) != 4 or len(ws) != 4:
        raise ShapeError(f"conv2d: Expect: x (N, C, H, W) and w (O, C/groups, kh, kw). Actual: {fmt(xs)} and "
                         f"{fmt(ws)}")
    groups = check_groups("conv2d", groups, xs[1], ws[0])
    if ws[1] * groups != xs[1]:
        raise ShapeError(f"conv2d: Expect: w's second axis C/groups = {xs[1] // groups} (x has {xs[1]} channels, "
                         f"groups={groups}). Actual: w of shape {fmt(ws)}")
    if groups == 1:
        return _with_bias(conv2d(x, w, stride, padding), bias)
    c, o = xs[1] // groups, ws[0] // groups
    parts = [conv2d(_channels(x, g * c, (g + 1) * c), getitem(w, slice(g * o, (g + 1) * o)), stride, padding)
             for g in range(groups)]
    return _with_bias(concatenate(parts, axis=1), bias)


def conv1d(x, w, stride=1, padding=0, groups: int = 1, bias=None) -> Tensor:
    """1-d cross-correlation of a batch of sequences, as PyTorch's ``F.conv1d``: conv2d at height 1.

    Shapes: x (N, C, L), w (O, C/groups, k), bias (O,) -> (N, O, (L + 2p − k)//s + 1).
    Example: ``conv1d(np.ones((2, 3, 10)), np.ones((4, 3, 3)), padding=1).shape == (2, 4, 10)``.
    """
    xs, ws = _shape(x), _shape(w)
    if len(xs) != 3 or len(ws) != 3:
        raise ShapeError(f"conv1d: Expect: x (N, C, L) and w (O, C/groups, k). Actual: {fmt(xs)} and {fmt(ws)}")
    check_groups("conv1d", groups, xs[1], ws[0])
    (s,) = _single("conv1d", "stride", stride, 1)
    (p,) = _single("conv1d", "padding", padding, 0)
    out = grouped_conv2d(reshape(x, (xs[0], xs[1], 1, xs[2])), reshape(w, (ws[0], ws[1], 1, ws[2])),
                         (1, s), (0, p), groups, bias)
    return reshape(out, (xs[0], ws[0], _shape(out)[-1]))


def _single(name: str, what: str, value, minimum: int) -> tuple[int]:
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise ShapeError(f"{name}: Expect: {what} an int or a 1-tuple. Actual: {value!r}")
        value = value[0]
    return (_pair(name, what, value, minimum)[0],)


def conv_transpose2d(x, w, stride=1, padding=0, output_padding=0, bias=None) -> Tensor:
    """The transposed convolution (PyTorch's ``F.conv_transpose2d``): conv2d's transpose in its input.

    Each input pixel scatters ``w``'s kernel, scaled by it, over the output, ``stride`` apart;
    ``padding`` crops that many rows and columns on each side and ``output_padding`` (< stride)
    adds them at the bottom and right. ``w`` is laid out as PyTorch's: (in, out, kh, kw).
    Shapes: x (N, C, H, W), w (C, O, kh, kw), bias (O,) ->
    (N, O, (H − 1)·sh − 2ph + kh + oph, (W − 1)·sw − 2pw + kw + opw).
    Example: ``conv_transpose2d(np.ones((1, 2, 4, 4)), np.ones((2, 3, 3, 3)), stride=2).shape == (1, 3, 9, 9)``.
    """
    xs, ws = _shape(x), _shape(w)
    if len(xs) != 4 or len(ws) != 4 or ws[0] != xs[1]:
        raise ShapeError(f"conv_transpose2d: Expect: x (N, C, H, W) and w (C, O, kh, kw) with the same C. "
                         f"Actual: {fmt(xs)} and {fmt(ws)}")
    (sh, sw), (ph, pw) = _pair("conv_transpose2d", "stride", stride, 1), _pair("conv_transpose2d", "padding",
                                                                               padding, 0)
    oph, opw = _pair("conv_transpose2d", "output_padding", output_padding, 0)
    if oph >= sh or opw >= sw:
        raise ShapeError(f"conv_transpose2d: Expect: output_padding smaller than the stride {(sh, sw)}. "
                         f"Actual: {(oph, opw)}")
    size = ((xs[2] - 1) * sh - 2 * ph + ws[2] + oph, (xs[3] - 1) * sw - 2 * pw + ws[3] + opw)
    if min(size) < 1:
        raise ShapeError(f"conv_transpose2d: the output would be {size}: padding {(ph, pw)} crops more than the "
                         f"{fmt(xs)} input spreads to")
    return _with_bias(conv2d_input_grad(x, w, size, (sh, sw), (ph, pw)), bias)
