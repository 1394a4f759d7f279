"""Cases for convolution and max pooling (seed 000, LeNet).

The references loop over output pixels on tiny inputs: the seed's formula,
written independently of the vectorised code under test. Pooling inputs have
well separated values, so no window has a near-tie (finite differences stay
away from the kinks).
"""

import numpy as np

from autograd_dag.primitives.conv import (conv2d, conv2d_bias, conv2d_input_grad, conv2d_weight_grad,
                                          max_pool2d, max_pool2d_gather, max_pool2d_scatter)
from tests.cases import Case


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _padded(x, padding):
    ph, pw = _pair(padding)
    n, c, h, w = x.shape
    xp = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    xp[:, :, ph:ph + h, pw:pw + w] = x
    return xp


def conv_ref(x, w, stride=1, padding=0):
    (sh, sw), xp = _pair(stride), _padded(x, padding)
    o_, _, kh, kw = w.shape
    ho, wo = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1
    out = np.zeros((x.shape[0], o_, ho, wo))
    for n in range(x.shape[0]):
        for o in range(o_):
            for a in range(ho):
                for b in range(wo):
                    out[n, o, a, b] = np.sum(xp[n, :, a * sh:a * sh + kh, b * sw:b * sw + kw] * w[o])
    return out


def input_grad_ref(g, w, in_hw, stride=1, padding=0):
    (sh, sw), (ph, pw) = _pair(stride), _pair(padding)
    _, c, kh, kw = w.shape
    xp = np.zeros((g.shape[0], c, in_hw[0] + 2 * ph, in_hw[1] + 2 * pw))
    for n, o, a, b in np.ndindex(*g.shape):
        xp[n, :, a * sh:a * sh + kh, b * sw:b * sw + kw] += g[n, o, a, b] * w[o]
    return xp[:, :, ph:ph + in_hw[0], pw:pw + in_hw[1]]


def weight_grad_ref(x, g, kernel, stride=1, padding=0):
    (sh, sw), xp = _pair(stride), _padded(x, padding)
    kh, kw = kernel
    dw = np.zeros((g.shape[1], x.shape[1], kh, kw))
    for n, o, a, b in np.ndindex(*g.shape):
        dw[o] += g[n, o, a, b] * xp[n, :, a * sh:a * sh + kh, b * sw:b * sw + kw]
    return dw


def first_max_positions(x, window, stride):
    """{(lead, a, b): (row, col)} of the first maximum (row-major) of each window, by loops."""
    (kh, kw), (sh, sw) = _pair(window), _pair(stride)
    h, w = x.shape[-2:]
    out = {}
    for lead in np.ndindex(*x.shape[:-2]):
        for a in range((h - kh) // sh + 1):
            for b in range((w - kw) // sw + 1):
                best = None
                for i in range(kh):
                    for j in range(kw):
                        r, c = a * sh + i, b * sw + j
                        if best is None or x[lead + (r, c)] > x[lead + best]:
                            best = (r, c)
                out[lead + (a, b)] = best
    return out


def _pooled_shape(x, window, stride):
    (kh, kw), (sh, sw) = _pair(window), _pair(stride)
    return x.shape[:-2] + ((x.shape[-2] - kh) // sh + 1, (x.shape[-1] - kw) // sw + 1)


def max_pool_ref(x, window, stride):
    out = np.zeros(_pooled_shape(x, window, stride))
    for pos, (r, c) in first_max_positions(x, window, stride).items():
        out[pos] = x[pos[:-2] + (r, c)]
    return out


def scatter_ref(ct, x, window, stride):
    out = np.zeros(x.shape)
    for pos, (r, c) in first_max_positions(x, window, stride).items():
        out[pos[:-2] + (r, c)] += ct[pos]
    return out


def gather_ref(c, x, window, stride):
    out = np.zeros(_pooled_shape(x, window, stride))
    for pos, (r, col) in first_max_positions(x, window, stride).items():
        out[pos] = c[pos[:-2] + (r, col)]
    return out


def distinct(rng, shape, gap=0.05):
    """Values at least ``gap`` apart: no window has a tie or a near-tie."""
    size = int(np.prod(shape))
    return (rng.permutation(size).reshape(shape) - size / 2) * gap


def _conv_case(xs, ws, stride, padding, label):
    return Case("conv2d", lambda x, w: conv2d(x, w, stride, padding),
                lambda rng: (rng.standard_normal(xs), rng.standard_normal(ws)),
                ref=lambda x, w: conv_ref(x, w, stride, padding), id=label)


def _pool_case(shape, window, stride, label):
    return Case("max_pool2d", lambda x: max_pool2d(x, window, stride),
                lambda rng: (distinct(rng, shape),),
                ref=lambda x: max_pool_ref(x, window, window if stride is None else stride), id=label)


CASES = [
    _conv_case((2, 3, 5, 6), (4, 3, 3, 2), 1, 0, "basic"),
    # (7 + 2 - 3) = 6 is not a multiple of 4: the last input row is never read.
    _conv_case((2, 2, 7, 6), (3, 2, 3, 2), (4, 2), 1, "stride_not_dividing"),
    _conv_case((1, 2, 5, 5), (2, 2, 3, 3), 2, (2, 1), "stride2_pad_pairs"),
    _conv_case((1, 1, 3, 4), (2, 1, 1, 1), 1, 0, "one_by_one"),
    _conv_case((1, 2, 2, 2), (1, 2, 4, 4), 1, 1, "kernel_equals_padded"),
    # Output rows of 18: the channels-first windows in one copy (two below 16).
    _conv_case((1, 2, 4, 20), (2, 2, 3, 3), 1, 0, "long_rows"),
    Case("conv2d_bias", lambda x, w, b: conv2d_bias(x, w, b),
         lambda rng: (rng.standard_normal((2, 3, 5, 6)), rng.standard_normal((4, 3, 3, 2)),
                      rng.standard_normal(4)),
         ref=lambda x, w, b: conv_ref(x, w) + b[:, None, None], id="basic"),
    Case("conv2d_bias", lambda x, w, b: conv2d_bias(x, w, b, (2, 1), (1, 2)),
         lambda rng: (rng.standard_normal((1, 2, 5, 4)), rng.standard_normal((3, 2, 3, 3)),
                      rng.standard_normal(3)),
         ref=lambda x, w, b: conv_ref(x, w, (2, 1), (1, 2)) + b[:, None, None], id="stride_pad"),
    Case("conv2d_input_grad", lambda g, w: conv2d_input_grad(g, w, (7, 6), (4, 2), 1),
         lambda rng: (rng.standard_normal((2, 3, 2, 4)), rng.standard_normal((3, 2, 3, 2))),
         ref=lambda g, w: input_grad_ref(g, w, (7, 6), (4, 2), 1), id="stride_pad"),
    Case("conv2d_input_grad", lambda g, w: conv2d_input_grad(g, w, (4, 5)),
         lambda rng: (rng.standard_normal((1, 2, 2, 3)), rng.standard_normal((2, 3, 3, 3))),
         ref=lambda g, w: input_grad_ref(g, w, (4, 5)), id="basic"),
    # Few channels and a padded width under 1.5 kernel widths: the banded product in float64 too
    # (strided rows, cropped padding).
    Case("conv2d_input_grad", lambda g, w: conv2d_input_grad(g, w, (5, 4), (2, 1), (1, 0)),
         lambda rng: (rng.standard_normal((2, 3, 3, 2)), rng.standard_normal((3, 2, 2, 3))),
         ref=lambda g, w: input_grad_ref(g, w, (5, 4), (2, 1), (1, 0)), id="banded_stride_pad"),
    Case("conv2d_weight_grad", lambda x, g: conv2d_weight_grad(x, g, (3, 2), (4, 2), 1),
         lambda rng: (rng.standard_normal((2, 2, 7, 6)), rng.standard_normal((2, 3, 2, 4))),
         ref=lambda x, g: weight_grad_ref(x, g, (3, 2), (4, 2), 1), id="stride_pad"),
    Case("conv2d_weight_grad", lambda x, g: conv2d_weight_grad(x, g, (2, 2), 1, (0, 1)),
         lambda rng: (rng.standard_normal((1, 3, 3, 3)), rng.standard_normal((1, 2, 2, 4))),
         ref=lambda x, g: weight_grad_ref(x, g, (2, 2), 1, (0, 1)), id="pad_width"),
    Case("conv2d_weight_grad", lambda x, g: conv2d_weight_grad(x, g, (3, 3)),
         lambda rng: (rng.standard_normal((1, 2, 4, 20)), rng.standard_normal((1, 2, 2, 18))),
         ref=lambda x, g: weight_grad_ref(x, g, (3, 3)), id="long_rows"),
    _pool_case((2, 3, 4, 6), 2, None, "window2"),
    _pool_case((1, 2, 7, 7), 3, 2, "overlap_not_dividing"),
    _pool_case((1, 1, 5, 7), (2, 3), (1, 2), "pairs"),
    _pool_case((2, 5, 5), 2, None, "3d_input"),
    # An (H, W) input: vmap folded its batch into H as conv2d's N (a ShapeError, issue 24).
    _pool_case((1, 5), (1, 3), (2, 2), "2d_input"),
    Case("max_pool2d_scatter", lambda ct, x: max_pool2d_scatter(ct, x, (2, 3), (1, 2)),
         lambda rng: (rng.standard_normal((3, 2)), distinct(rng, (4, 5))),
         ref=lambda ct, x: scatter_ref(ct, x, (2, 3), (1, 2)), wrt=(0,), id="2d_input"),
    Case("max_pool2d_gather", lambda c, x: max_pool2d_gather(c, x, (2, 2), 1),
         lambda rng: (rng.standard_normal((3, 4)), distinct(rng, (3, 4))),
         ref=lambda c, x: gather_ref(c, x, (2, 2), (1, 1)), wrt=(0,), id="2d_input"),
    Case("max_pool2d_scatter", lambda ct, x: max_pool2d_scatter(ct, x, 3, 1),
         lambda rng: (rng.standard_normal((1, 2, 3, 4)), distinct(rng, (1, 2, 5, 6))),
         ref=lambda ct, x: scatter_ref(ct, x, 3, 1), wrt=(0,), id="overlap"),
    Case("max_pool2d_scatter", lambda ct, x: max_pool2d_scatter(ct, x, 2),
         lambda rng: (rng.standard_normal((2, 1, 2, 2)), distinct(rng, (2, 1, 5, 4))),
         ref=lambda ct, x: scatter_ref(ct, x, 2, 2), wrt=(0,), id="window2"),
    Case("max_pool2d_gather", lambda c, x: max_pool2d_gather(c, x, (3, 2), (2, 1)),
         lambda rng: (rng.standard_normal((1, 2, 7, 5)), distinct(rng, (1, 2, 7, 5))),
         ref=lambda c, x: gather_ref(c, x, (3, 2), (2, 1)), wrt=(0,), id="overlap"),
]
