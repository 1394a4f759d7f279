"""Convolution and max pooling (seed 000, LeNet), with their derivatives as primitives.

What goes here: convolution and pooling. Convolution is bilinear,
F(x, w, g) = <conv2d(x, w), g>, so its three partial maps close under
differentiation: ``conv2d`` C(x, w), ``conv2d_input_grad`` Tx(g, w) and
``conv2d_weight_grad`` Tw(x, g). Each is declared bilinear by its transposes
(``defprim(..., bilinear=True, transpose=...)``), which are the other two, so
gradients of any order stay inside the family; the JVPs are derived.
``conv2d_bias`` C(x, w) + b is a layer's convolution and bias as one node (as
``linear`` is a dense layer's): the bias is added into the product's own array.

Max pooling is differentiated through a pair of primitives linear in their first
argument, ``max_pool2d_scatter`` and ``max_pool2d_gather``, each declared by
the other as its transpose. At ties the whole gradient goes to the FIRST maximum of the window in
row-major order.

Each convolution copies the input's windows (im2col: once channels-last, in two
copies along longer runs channels-first) and multiplies them on BLAS; with few
channels the input gradient multiplies the cotangent by a banded kernel matrix
instead. Python loops run over kernel positions at most, never over pixels or channels.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import parallel
from ..core import Tensor, apply
from ..errors import ShapeError
from .elementwise import add
from .batch import batch_size, leading_axes, merge_batch
from .linalg import matmul
from .registry import defprim
from .shapes import fmt
from .structure import broadcast_to, reshape, transpose
from .structure import sum as sum_axes

# ---------------------------------------------------------------- helpers

# The least work worth a thread of its own: multiply-adds plus elements copied for
# a convolution, elements read for pooling. Module attributes, so a test can set
# them to 1 and force a split. Measured on this 2-vCPU VM, LeNet's convolutions
# (the largest 6.4M, 0.9 ms) ran 10-20% faster split when timed alone, but the
# training step with them split was slower: jit 8.7 ms against 8.1-8.3 whole
# (float64, 2 threads, BLAS on 1; 9.2-9.3 against 8.1-8.5 with BLAS on 2, whose
# idle thread spins on the second core): the pool thread starts 100-140 us late,
# and the next operation reads half its input from the other core's cache (relu
# 0.25 -> 0.40 ms). So nothing below about 4 ms of work is split (LeNet's layers run whole).
# Re-measured on a 2-vCPU AMD EPYC (AVX2), the whole LeNet float64 step, interleaved in one
# process: jit 14.1 ms whole against 15.3 with a grain of 2**20 and 15.0 with 2**22 (eager
# 15.4 against 16.8); each layer timed alone was no faster split either (first forward 1.86
# against 1.90 ms, weight gradients 1.97 against 1.63). POOL_GRAIN 2**16: no change (14.2).
CONV_GRAIN = 1 << 25
POOL_GRAIN = 1 << 22


def _splits(n: int, work: int, grain: int) -> bool:
    """Whether _by_image(fn, n, work, grain) runs on more than one thread (it may still not, on a pool thread)."""
    return parallel.get_num_threads() > 1 and n >= 2 * max(1, -(-grain // max(work, 1)))


def _by_image(fn, n: int, work: int, grain: int) -> None:
    """Call fn(start, stop) over chunks of the images range(n), on parallel.run_chunks's threads.

    ``work`` is one image's work, ``grain`` the least work worth a chunk. Each
    chunk computes whole images, in the code an unsplit call runs, so the result
    is the unsplit one (bit for bit but where a BLAS blocks a shorter product otherwise).
    """
    parallel.run_chunks(fn, n, grain=max(1, -(-grain // max(work, 1))), align=1)


def _pair(name: str, what: str, value, minimum: int) -> tuple[int, int]:
    """An int or a pair of ints, as a pair of Python ints each >= minimum."""
    if type(value) is tuple and len(value) == 2 and type(value[0]) is int and type(value[1]) is int \
            and value[0] >= minimum and value[1] >= minimum:
        return value    # already a valid pair: every VJP and JVP rule passes its parameters on so
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        pair = (int(value), int(value))
    else:
        try:
            items = tuple(value)
        except TypeError:
            items = ()
        if len(items) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                                      for v in items):
            raise ShapeError(f"{name}: Expect: {what} an int or a pair of ints. Actual: {value!r}")
        pair = (int(items[0]), int(items[1]))
    if min(pair) < minimum:
        raise ShapeError(f"{name}: Expect: {what} >= {minimum}. Actual: {value!r}")
    return pair


def _out_size(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


def _view(a: np.ndarray, shape, strides) -> np.ndarray:
    """A read-only view of a's memory with the given shape and strides (in bytes, as a.strides: a
    field of a structured array has strides that are no multiple of its itemsize)."""
    return as_strided(a, shape, strides, writeable=False)


def _window_counts(h: int, w: int, kernel, stride) -> tuple[int, int]:
    """(Ho, Wo): the windows along (h, w); a ValueError, as numpy's sliding_window_view raised, when none
    fits (the caller's shape rule then names the error)."""
    ho, wo = (h - kernel[0]) // stride[0] + 1, (w - kernel[1]) // stride[1] + 1
    if ho < 1 or wo < 1:
        raise ValueError("window shape cannot be larger than input array shape")
    return ho, wo


def _windows(x: np.ndarray, kernel, stride) -> np.ndarray:
    """View (..., Ho, Wo, kh, kw) of the kernel-sized windows of the last two axes, strided.

    Made with as_strided: numpy's sliding_window_view, which checks its arguments,
    took 10 us a call, a fifth of a small layer's whole call at LeNet's sizes.
    """
    (sh, sw), ho_wo = stride, _window_counts(*x.shape[-2:], kernel, stride)
    *lead, s2, s3 = x.strides
    return _view(x, x.shape[:-2] + ho_wo + tuple(kernel), (*lead, s2 * sh, s3 * sw, s2, s3))


def _pad(x: np.ndarray, padding) -> np.ndarray:
    if padding == (0, 0):
        return x
    ph, pw = padding
    return np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))


def _check_4d(name: str, what: str, a) -> None:
    if a.ndim != 4:
        raise ShapeError(f"{name}: Expect: {what} with 4 axes. Actual: shape {fmt(a.shape)}")


def _check_fits(name: str, in_hw, kernel, padding) -> None:
    for axis, size, k, p in (("height", in_hw[0], kernel[0], padding[0]),
                             ("width", in_hw[1], kernel[1], padding[1])):
        if k > size + 2 * p:
            raise ShapeError(f"{name}: Expect: kernel {axis} <= padded input {axis}. Actual: kernel "
                             f"{axis} {k} > {size} + 2*{p} = {size + 2 * p}")


def _channels_last(c: int, kw: int, wo: int) -> bool:
    """Whether a convolution's transposes (input and weight gradients) lay their windows out channels-last.

    Channels-last copies along runs of kw·C elements and makes one product over
    every pixel of the batch (or one per kernel position, over C); channels-first
    scatters the input gradient back along runs of Wo and multiplies per image.
    LeNet's first layer (C 1, Wo 24) runs channels-first, its second (C 6, Wo 8)
    channels-last: there each gradient measured as fast or faster (up to 5x) than
    in the other layout.
    """
    return kw * c > wo


def _forward_channels_last(c: int, kw: int, out_hw, stride) -> bool:
    """Whether ``conv2d`` itself lays its windows out channels-last (else channels-first).

    The forward copy is what decides it: channels-first copies runs of a whole
    output plane, Ho·Wo (of Wo with a vertical stride; see _cols), channels-last
    runs of kw·C. Both of LeNet's layers run channels-first: the second (Ho·Wo 64,
    kw·C 30) in 0.52 ms against 0.64 channels-last (float32), its per-image
    products beating one product over the batch followed by a transpose.
    """
    ho, wo = out_hw
    return kw * c > (ho * wo if stride[0] == 1 else wo)


# A run of at least this many elements copies at about memory speed; shorter ones
# pay numpy's per-run overhead (see _cols).
_LONG_RUN = 16


def _cols(x, kernel, stride, padding, out=None):
    """(N, C, H, W) -> (N, C·kh·kw, Ho·Wo): each image's windows as columns, and (Ho, Wo).

    Straight from the window view the copy runs along output rows, Wo elements
    each. When those are short it is made in two copies along longer runs: first
    the kw horizontal shifts of every row (runs of Wo, kw times the input only),
    then the kh vertical shifts of those (each a whole Ho·Wo plane at stride 1):
    2x faster for LeNet's second layer (Wo 8); for its first (Wo 24) the extra
    copy cost as much as it saved. ``out``: the result's array, and the
    intermediate's (see _cols_arrays), when given.
    """
    (kh, kw), (sh, sw) = kernel, stride
    xp = _pad(x, padding)
    n, c = xp.shape[:2]
    ho, wo = _window_counts(*xp.shape[2:], kernel, stride)
    if wo >= _LONG_RUN:
        win = _windows(xp, kernel, stride).transpose(0, 1, 4, 5, 2, 3)    # (N, C, kh, kw, Ho, Wo)
        if out is None:
            return win.reshape(n, c * kh * kw, ho * wo), (ho, wo)
        np.copyto(out[0].reshape(win.shape), win)
        return out[0], (ho, wo)
    # (N, C, kw, Hp, Wo): [n, c, j, y, b] = xp[n, c, y, b·sw + j]
    s0, s1, s2, s3 = xp.strides
    view = _view(xp, (n, c, kw, xp.shape[2], wo), (s0, s1, s3, s2, s3 * sw))
    if out is None:
        shifted = np.ascontiguousarray(view)
    else:
        shifted = out[1]
        np.copyto(shifted, view)
    t0, t1, t2, t3, t4 = shifted.strides
    win = _view(shifted, (n, c, kh, kw, ho, wo), (t0, t1, t3, t2, t3 * sh, t4))    # (N, C, kh, kw, Ho, Wo)
    if out is None:
        return win.reshape(n, c * kh * kw, ho * wo), (ho, wo)
    np.copyto(out[0].reshape(win.shape), win)
    return out[0], (ho, wo)


def _cols_arrays(x, kernel, stride, padding):
    """Empty arrays for _cols(x, ..., out=): (N, C·kh·kw, Ho·Wo), and its intermediate (or None).

    Made on the calling thread before a split, so that the chunks allocate
    nothing: large arrays freed and made again on a pool thread were given back
    to the system and faulted in again each time (2,164 page faults and 3.3 ms of
    system time per LeNet step, which then took 14.3 ms against 8.7 unsplit).
    """
    (kh, kw), (sh, sw) = kernel, stride
    n, c, h, w = x.shape
    hp, wp = h + 2 * padding[0], w + 2 * padding[1]
    ho, wo = (hp - kh) // sh + 1, (wp - kw) // sw + 1
    shifted = None if wo >= _LONG_RUN else np.empty((n, c, kw, hp, wo), dtype=x.dtype)
    return np.empty((n, c * kh * kw, ho * wo), dtype=x.dtype), shifted


def _part(arrays, a, b):
    """Images a:b of each array in ``arrays`` (None stays None), or None: no arrays, as for one thread.

    Unsplit, _cols makes its own arrays (as it did before the split existed: 4% faster for
    LeNet's first layer in float32 than a copy into an array made beforehand).
    """
    return None if arrays is None else tuple(None if arr is None else arr[a:b] for arr in arrays)


def _rows(x, kernel, stride, padding, out=None):
    """(N, C, H, W) -> (N·Ho·Wo, kh·kw·C): every window as a row, channels last (one copy).

    ``out``: (the result's array, the channels-last input's (N, Hp, Wp, C)), when given.
    """
    xt = _pad(x, padding).transpose(0, 2, 3, 1)
    if out is None:
        xl = np.ascontiguousarray(xt)                                     # (N, Hp, Wp, C)
    else:
        xl = out[1]
        np.copyto(xl, xt)
    (kh, kw), (sh, sw) = kernel, stride
    n, hp, wp, c = xl.shape
    ho, wo = _window_counts(hp, wp, kernel, stride)
    s0, s1, s2, s3 = xl.strides
    win = _view(xl, (n, ho, wo, kh, kw, c), (s0, s1 * sh, s2 * sw, s1, s2, s3))     # (N, Ho, Wo, kh, kw, C)
    if out is None:
        return win.reshape(n * ho * wo, kh * kw * c)
    np.copyto(out[0].reshape(win.shape), win)
    return out[0]

# ----------------------------------------------------------------- conv2d


def _conv2d_impl(x, w, *, stride, padding, bias=None):
    """conv2d(x, w), plus ``bias`` (O,) per output channel when given, split over the images."""
    o, c, kh, kw = w.shape
    n = x.shape[0]
    ho, wo = (_out_size(x.shape[2 + i], w.shape[2 + i], stride[i], padding[i]) for i in range(2))
    dtype = np.result_type(x, w) if bias is None else np.result_type(x, w, bias)
    out = np.empty((n, o, ho, wo), dtype=dtype)
    work = ho * wo * c * kh * kw * (o + 1)      # one image's multiply-adds and window copy's elements
    if _forward_channels_last(c, kw, (ho, wo), stride):
        wm = w.transpose(2, 3, 1, 0).reshape(kh * kw * c, o)
        split = _splits(n, work, CONV_GRAIN)
        arrays = _rows_arrays(x, (kh, kw), stride, padding) if split else None     # see _cols_arrays
        products = np.empty((n * ho * wo, o), dtype=np.result_type(x, w))

        def chunk(a, b):
            lo, hi = a * ho * wo, b * ho * wo
            rows = _rows(x[a:b], (kh, kw), stride, padding, (arrays[0][lo:hi], arrays[1][a:b]) if split else None)
            product = np.matmul(rows, wm, out=products[lo:hi])                 # (n·Ho·Wo, O)
            if bias is not None:
                product += bias
            out[a:b] = product.reshape(b - a, ho, wo, o).transpose(0, 3, 1, 2)
    else:
        wm = w.reshape(o, c * kh * kw)
        arrays = _cols_arrays(x, (kh, kw), stride, padding) if _splits(n, work, CONV_GRAIN) else None

        def chunk(a, b):
            # One (O, C·kh·kw) x (C·kh·kw, Ho·Wo) product per image, straight into (n, O, Ho·Wo).
            planes = out[a:b].reshape(b - a, o, ho * wo)
            np.matmul(wm, _cols(x[a:b], (kh, kw), stride, padding, _part(arrays, a, b))[0], out=planes)
            if bias is not None:
                planes += bias[:, None]
    _by_image(chunk, n, work, CONV_GRAIN)
    return out


def _conv2d_rule(x, w, *, stride, padding):
    _check_4d("conv2d", "an input (N, C, H, W)", x)
    _check_4d("conv2d", "a kernel (O, C, kh, kw)", w)
    if x.shape[1] != w.shape[1]:
        raise ShapeError(f"conv2d: Expect: kernel input channels equal to the input's channels "
                         f"{x.shape[1]} (input {fmt(x.shape)}). Actual: kernel {fmt(w.shape)} has "
                         f"{w.shape[1]}")
    _check_fits("conv2d", x.shape[2:], w.shape[2:], padding)
    hw = tuple(_out_size(x.shape[2 + i], w.shape[2 + i], stride[i], padding[i]) for i in range(2))
    return (x.shape[0], w.shape[0]) + hw, np.result_type(x.dtype, w.dtype)


def _sum_terms(a, b):
    # Each term is a Tensor or False (its tangent was None); the terms of a
    # bilinear map's JVP already have the output's shape.
    if a is False:
        return None if b is False else b
    return a if b is False else add(a, b)


# Bilinear: the transposes in x and in w; one rule per operand, so the input's
# cotangent of a first layer (x is data) is never computed.
CONV2D = defprim("conv2d", _conv2d_impl, bilinear=True, transpose=(
    lambda ct, x, w, *, stride, padding: conv2d_input_grad(ct, w, x.shape[2:], stride, padding),
    lambda ct, x, w, *, stride, padding: conv2d_weight_grad(x, ct, w.shape[2:], stride, padding)),
    shape=_conv2d_rule, batch=merge_batch(0))


def conv2d(x, w, stride=1, padding=0) -> Tensor:
    """2-d cross-correlation of a batch of images with a bank of kernels (no bias).

    out[n, o, a, b] = sum over c, i, j of w[o, c, i, j] * xp[n, c, a*sh + i, b*sw + j],
    where xp is x zero-padded by ``padding`` on each side. ``stride`` and
    ``padding`` are ints or (height, width) pairs.
    Shapes: x (N, C, H, W), w (O, C, kh, kw) -> (N, O, (H + 2ph - kh)//sh + 1, (W + 2pw - kw)//sw + 1).
    Example: with x = ad.Tensor(np.ones((1, 3, 8, 8))) and w = ad.Tensor(np.ones((4, 3, 3, 3))),
    ``ad.conv2d(x, w, padding=1).shape == (1, 4, 8, 8)``.
    """
    return apply(CONV2D, x, w, stride=_pair("conv2d", "stride", stride, 1),
                 padding=_pair("conv2d", "padding", padding, 0))

# ------------------------------------------------------------ conv2d_bias


def _conv2d_bias_impl(x, w, b, *, stride, padding):
    if np.result_type(x, w) != np.result_type(x, w, b):
        return _conv2d_impl(x, w, stride=stride, padding=padding) + b.reshape(-1, 1, 1)
    # Added by each chunk into its images' product: no second array of the output's size.
    return _conv2d_impl(x, w, stride=stride, padding=padding, bias=b)


def _conv2d_bias_rule(x, w, b, *, stride, padding):
    shape, dtype = _conv2d_rule(x, w, stride=stride, padding=padding)
    if tuple(b.shape) != tuple(w.shape[:1]):
        raise ShapeError(f"conv2d_bias: Expect: a bias (O,) = {fmt(w.shape[:1])}, one per output channel "
                         f"(kernel {fmt(w.shape)}). Actual: bias {fmt(b.shape)}")
    return shape, np.result_type(dtype, b.dtype)


def _channel_sums(ct) -> Tensor:
    """Σ ct over (N, H, W), per channel: the bias's cotangent. Shapes: (N, O, H, W) -> (O,).

    Each image's planes are summed as one matrix–vector product with ones, then
    the (N, O) sums over N: numpy's sum over the axes (0, 2, 3) of a cotangent
    reduces along strided runs, 2x slower (LeNet's first layer, 64x6x24x24
    float32: 0.021 ms against 0.044; its second, 64x16x8x8: 0.009 against 0.030).
    """
    n, o, h, w = ct.shape
    if n * h * w == 0:
        return sum_axes(ct, (0, 2, 3))
    planes = reshape(ct, (n, o, h * w))
    return sum_axes(matmul(planes, np.ones(h * w, dtype=ct.dtype)), (0,))


_conv2d_bias_vjp = (
    lambda ct, out, x, w, b, *, stride, padding: conv2d_input_grad(ct, w, x.shape[2:], stride, padding),
    lambda ct, out, x, w, b, *, stride, padding: conv2d_weight_grad(x, ct, w.shape[2:], stride, padding),
    lambda ct, out, x, w, b, *, stride, padding: _channel_sums(ct))


def _conv2d_bias_jvp(t, out, x, w, b, *, stride, padding):
    tx, tw, tb = t
    total = _sum_terms(tx is not None and conv2d(tx, w, stride, padding),
                       tw is not None and conv2d(x, tw, stride, padding))
    if tb is None:
        return total
    tb = reshape(tb, (-1, 1, 1))
    return broadcast_to(tb, out.shape) if total is None else add(total, tb)


_fold_input = merge_batch(0)


def _conv2d_bias_batch(prim, args, batched, *, stride, padding):
    """vmap of conv2d_bias: a batched input folds into N; a batched bias (B, O) is added
    after the convolution, broadcast over N and the pixels. A batched kernel loops, as conv2d's."""
    x, w, b = args
    if batched[1]:
        return NotImplemented
    if not batched[2]:
        return _fold_input(prim, args, batched, stride=stride, padding=padding)
    if batched[0]:
        size, n = batch_size(args, batched), x.shape[1]
        out = conv2d(reshape(x, (size * n,) + tuple(x.shape[2:])), w, stride, padding)
        out = reshape(out, (size, n) + tuple(out.shape[1:]))
    else:
        out = conv2d(x, w, stride, padding)
    return add(out, reshape(b, (b.shape[0], 1, b.shape[1], 1, 1)))


# By hand: conv2d's bilinear rules plus a bias, in which it is affine, not linear.
CONV2D_BIAS = defprim("conv2d_bias", _conv2d_bias_impl, vjp=_conv2d_bias_vjp, jvp=_conv2d_bias_jvp,
                      shape=_conv2d_bias_rule, batch=_conv2d_bias_batch)


def conv2d_bias(x, w, b, stride=1, padding=0) -> Tensor:
    """A convolution layer's map, conv2d(x, w) + b per output channel, as one primitive.

    One array of the output's size: the bias is added into the convolution's
    product in place, where ``add(conv2d(x, w), reshape(b, (O, 1, 1)))`` keeps
    both. The derivatives are conv2d's, and the cotangent summed over (N, H, W) for b.
    Shapes: x (N, C, H, W), w (O, C, kh, kw), b (O,) -> (N, O, Ho, Wo), as ``conv2d``.
    Not exported as ``ad.*`` (``nn.Conv2d`` calls it); import it from ``autograd_dag.primitives.conv``.
    Example: with x = ad.Tensor(np.ones((1, 3, 8, 8))), w = ad.Tensor(np.ones((4, 3, 3, 3))) and
    b = ad.Tensor(np.arange(4.0)), ``conv2d_bias(x, w, b, padding=1).shape == (1, 4, 8, 8)``.
    """
    return apply(CONV2D_BIAS, x, w, b, stride=_pair("conv2d_bias", "stride", stride, 1),
                 padding=_pair("conv2d_bias", "padding", padding, 0))

# ------------------------------------------------------ conv2d_input_grad


def _input_grad_impl(g, w, *, in_hw, stride, padding):
    # Checked here, not only on failure: a cotangent of the wrong spatial shape
    # would otherwise be scattered silently.
    _input_grad_rule(g, w, in_hw=in_hw, stride=stride, padding=padding)
    n, o, ho, wo = g.shape
    _, c, kh, kw = w.shape
    sh, sw = stride
    ph, pw = padding
    dtype = np.result_type(g, w)
    hp, wp = in_hw[0] + 2 * ph, in_hw[1] + 2 * pw
    out = np.empty((n, c) + tuple(in_hw), dtype=dtype)
    if _banded(c, kw, wp) and np.isfinite(g).all():
        chunk = _input_grad_banded(g, w, out, stride, padding)
    elif _channels_last(c, kw, wo):
        # Made here, not in the chunks: see _cols_arrays.
        pixels = ho * wo
        rows_all = np.empty((n * pixels, o), dtype=g.dtype)
        products = np.empty((n * pixels, c), dtype=dtype)
        xp_all = np.empty((n, hp, wp, c), dtype=dtype)

        def chunk(a, b):
            rows = rows_all[a * pixels:b * pixels]
            np.copyto(rows.reshape(b - a, ho, wo, o), g[a:b].transpose(0, 2, 3, 1))
            product = products[a * pixels:b * pixels]
            # One (n·Ho·Wo, O) x (O, C) product per kernel position, added into a strided
            # block: no (N, Ho, Wo, kh, kw, C) intermediate to scatter (2x slower at LeNet's sizes).
            xp = xp_all[a:b]
            xp[...] = 0
            for i in range(kh):
                for j in range(kw):
                    np.matmul(rows, w[:, :, i, j], out=product)
                    xp[:, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw, :] += \
                        product.reshape(b - a, ho, wo, c)
            out[a:b] = xp[:, ph:ph + in_hw[0], pw:pw + in_hw[1], :].transpose(0, 3, 1, 2)
    else:
        wt = w.reshape(o, c * kh * kw).T
        cols_all = np.empty((n, c * kh * kw, ho * wo), dtype=dtype)
        xp_all = out if padding == (0, 0) else np.empty((n, c, hp, wp), dtype=dtype)

        def chunk(a, b):
            # The transpose of conv2d's channels-first product, one per image, then each
            # kernel position's (n, C, Ho, Wo) block added back into its strided window.
            cols = np.matmul(wt, g[a:b].reshape(b - a, o, ho * wo), out=cols_all[a:b])
            cols = cols.reshape(b - a, c, kh, kw, ho, wo)
            xp = xp_all[a:b]
            xp[...] = 0
            for i in range(kh):
                for j in range(kw):
                    xp[:, :, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw] += cols[:, :, i, j]
            if padding != (0, 0):
                out[a:b] = xp[:, :, ph:ph + in_hw[0], pw:pw + in_hw[1]]
    _by_image(chunk, n, ho * wo * o * c * kh * kw, CONV_GRAIN)
    return out


def _banded(c: int, kw: int, wp: int) -> bool:
    """Whether conv2d_input_grad runs as one banded product per image row (see _input_grad_banded).

    The other layouts make one product per kernel position, C columns wide:
    with few input channels those are small products, slow on BLAS (LeNet's
    second layer, C 6, float32: 25 products of 6 columns took 0.63 ms of its
    0.92). The band multiplies Wp/kw times the arithmetic, most of it by zeros:
    taken with C < 8 below 3x (LeNet's second layer, 12/5, float32: 0.69 ms
    against 0.94; 16 channels, 3x3, 16 wide: 3x slower banded). In float64, whose
    products do half the arithmetic per cycle, the band measured 1.31 ms against
    1.26 on an older CPU, but on this 2-vCPU AMD EPYC (AVX2) the per-position
    products are what is slow: 1.68 ms banded against 2.55 on one thread, 1.11
    against 2.49 with BLAS on two; so float64 takes the same 3x.
    """
    return c < 8 and wp < 3.0 * kw


def _input_grad_banded(g, w, out, stride, padding):
    """Tx(g, w) as one product (N·Ho, O·Wo) x (O·Wo, kh·C·Wp) and kh row additions.

    The kernel is laid out as a banded (Toeplitz) matrix along the width: row
    (o, b) holds w[o, :, i, :] at columns b·sw .. b·sw + kw - 1 of each (i, c)
    block, so one product does every horizontal shift, and each kernel row i adds
    one slice of whole padded rows (runs of C·Wp) into the result. The band's
    zeros multiply the cotangent: only for a finite one (the caller checks), as
    0 · inf would be a NaN the scatter never makes. Returns the chunk function
    fn(start, stop) writing the images start:stop of ``out`` (N, C, H, W).
    """
    n, o, ho, wo = g.shape
    _, c, kh, kw = w.shape
    (sh, sw), (ph, pw) = stride, padding
    h, wd = out.shape[2:]
    hp, wp = h + 2 * ph, wd + 2 * pw
    band = np.zeros((o, wo, kh, c, wp), dtype=out.dtype)
    # Its diagonal blocks [o, b, i, c, b·sw + j] as one view (O, Wo, kh, C, kw), filled in one copy.
    t0, t1, t2, t3, t4 = band.strides
    diagonal = as_strided(band, (o, wo, kh, c, kw), (t0, t1 + sw * t4, t2, t3, t4))
    diagonal[...] = w.transpose(0, 2, 1, 3)[:, None]                                  # (O, 1, kh, C, kw)
    band = band.reshape(o * wo, kh * c * wp)
    # Made here, not in the chunks: see _cols_arrays.
    rows_all = np.empty((n * ho, o * wo), dtype=g.dtype)                               # [(n, a), (o, b)]
    products = np.empty((n * ho, kh * c * wp), dtype=out.dtype)
    xp_all = np.empty((n, hp, c, wp), dtype=out.dtype)

    def chunk(a, b):
        rows = rows_all[a * ho:b * ho]
        np.copyto(rows.reshape(b - a, ho, o, wo), g[a:b].transpose(0, 2, 1, 3))
        product = np.matmul(rows, band, out=products[a * ho:b * ho]).reshape(b - a, ho, kh, c, wp)
        xp = xp_all[a:b]
        xp[...] = 0
        for i in range(kh):
            xp[:, i:i + sh * (ho - 1) + 1:sh] += product[:, :, i]
        out[a:b] = xp[:, ph:ph + h, :, pw:pw + wd].transpose(0, 2, 1, 3)
    return chunk


def _input_grad_rule(g, w, *, in_hw, stride, padding):
    _check_4d("conv2d_input_grad", "an output cotangent (N, O, Ho, Wo)", g)
    _check_4d("conv2d_input_grad", "a kernel (O, C, kh, kw)", w)
    if g.shape[1] != w.shape[0]:
        raise ShapeError(f"conv2d_input_grad: Expect: kernel output channels equal to the "
                         f"cotangent's channels {g.shape[1]} (cotangent {fmt(g.shape)}). "
                         f"Actual: kernel {fmt(w.shape)} has {w.shape[0]}")
    _check_fits("conv2d_input_grad", in_hw, w.shape[2:], padding)
    hw = tuple(_out_size(in_hw[i], w.shape[2 + i], stride[i], padding[i]) for i in range(2))
    if tuple(g.shape[2:]) != hw:
        raise ShapeError(f"conv2d_input_grad: Expect: a cotangent of spatial shape {fmt(hw)} "
                         f"(conv2d output for input {fmt(in_hw)}, kernel {fmt(w.shape[2:])}, "
                         f"stride {fmt(stride)}, padding {fmt(padding)}). Actual: {fmt(g.shape[2:])}")
    return (g.shape[0], w.shape[1]) + tuple(in_hw), np.result_type(g.dtype, w.dtype)


# Bilinear in (g, w): its transposes are conv2d itself and the weight gradient.
CONV2D_INPUT_GRAD = defprim("conv2d_input_grad", _input_grad_impl, bilinear=True, transpose=(
    lambda c, g, w, *, in_hw, stride, padding: conv2d(c, w, stride, padding),
    lambda c, g, w, *, in_hw, stride, padding: conv2d_weight_grad(c, g, w.shape[2:], stride, padding)),
    shape=_input_grad_rule, batch=merge_batch(0))


def conv2d_input_grad(g, w, in_hw, stride=1, padding=0) -> Tensor:
    """The transpose of ``conv2d`` in its input: the VJP of conv2d with respect to x.

    Scatters each output cotangent back over the input pixels its window read.
    ``in_hw`` is the input's (H, W): with a stride it cannot be read off g.
    Shapes: g (N, O, Ho, Wo), w (O, C, kh, kw) -> (N, C, H, W).
    Not exported as ``ad.*`` (it is conv2d's VJP); import it from ``autograd_dag.primitives.conv``.
    Example: with g = ad.Tensor(np.ones((1, 4, 6, 6))) and w = ad.Tensor(np.ones((4, 3, 3, 3))),
    ``conv2d_input_grad(g, w, (8, 8)).shape == (1, 3, 8, 8)``.
    """
    return apply(CONV2D_INPUT_GRAD, g, w, in_hw=_pair("conv2d_input_grad", "in_hw", in_hw, 1),
                 stride=_pair("conv2d_input_grad", "stride", stride, 1),
                 padding=_pair("conv2d_input_grad", "padding", padding, 0))

# ----------------------------------------------------- conv2d_weight_grad


# The inner dimension's block in _product_in_blocks.
_BLOCK = 256


def _product_in_blocks(a, b):
    """a @ b for a (M, K) and b (K, N) with K long and M, N short, as a sum over blocks of K.

    One BLAS call on the whole of K was slower on this shape: LeNet's second
    weight gradient, (16, 4096) x (4096, 150), in blocks of 256 took 0.43 ms
    in all against 0.51 (float32) and 0.74 against 0.99 (float64); blocks of 128
    or 512 gained less.
    """
    k = a.shape[1]
    if k <= 2 * _BLOCK:
        return a @ b
    out = a[:, :_BLOCK] @ b[:_BLOCK]
    for start in range(_BLOCK, k, _BLOCK):
        out += a[:, start:start + _BLOCK] @ b[start:start + _BLOCK]
    return out


def _weight_grad_impl(x, g, *, kernel, stride, padding):
    # A cotangent too small for the windows would otherwise be contracted silently.
    _weight_grad_rule(x, g, kernel=kernel, stride=stride, padding=padding)
    n, o, ho, wo = g.shape
    c = x.shape[1]
    kh, kw = kernel
    size = c * kh * kw
    work = ho * wo * size * (o + 1)
    dtype = np.result_type(x, g)
    if _channels_last(c, kw, wo):
        if n * ho * wo <= 2 * _BLOCK or n * work < 2 * CONV_GRAIN or _BLOCK % (ho * wo):
            gm = np.ascontiguousarray(g.transpose(1, 0, 2, 3)).reshape(o, n * ho * wo)
            out = _product_in_blocks(gm, _rows(x, kernel, stride, padding))    # (O, kh·kw·C)
        else:
            out = _weight_grad_blocks(x, g, kernel, stride, padding, work)
        return np.ascontiguousarray(out.reshape(o, kh, kw, c).transpose(0, 3, 1, 2))
    per_image = np.empty((n, o, size), dtype=dtype)
    arrays = _cols_arrays(x, kernel, stride, padding) if _splits(n, work, CONV_GRAIN) else None

    def chunk(a, b):
        cols = _cols(x[a:b], kernel, stride, padding, _part(arrays, a, b))[0]
        np.matmul(g[a:b].reshape(b - a, o, ho * wo), cols.transpose(0, 2, 1), out=per_image[a:b])
    _by_image(chunk, n, work, CONV_GRAIN)
    return per_image.sum(axis=0).reshape(o, c, kh, kw)


def _weight_grad_blocks(x, g, kernel, stride, padding, work):
    """_product_in_blocks(gm, rows) of the channels-last weight gradient, its blocks on every thread.

    gm (O, N·Ho·Wo) is the cotangent and rows (N·Ho·Wo, kh·kw·C) the windows;
    each block holds whole images (Ho·Wo divides _BLOCK). Each chunk of blocks
    makes the rows of its images, and its block products are kept, then added
    in order: the unsplit sum, bit for bit.
    """
    n, o, ho, wo = g.shape
    pixels = ho * wo
    per_block = _BLOCK // pixels
    blocks = -(-n // per_block)
    # Made here, not in the chunks: see _cols_arrays.
    gm = np.empty((o, n * pixels), dtype=g.dtype)
    rows_all = _rows_arrays(x, kernel, stride, padding)
    parts = np.empty((blocks, o, rows_all[0].shape[1]), dtype=np.result_type(x, g))

    def chunk(a, b):
        first, last = a * per_block, min(n, b * per_block)          # the images of blocks a:b
        lo, hi = first * pixels, last * pixels
        np.copyto(gm[:, lo:hi].reshape(o, last - first, ho, wo), g[first:last].transpose(1, 0, 2, 3))
        rows = _rows(x[first:last], kernel, stride, padding,
                     (rows_all[0][lo:hi], rows_all[1][first:last]))
        for k in range(a, b):
            s0, s1 = k * _BLOCK - lo, min(hi, (k + 1) * _BLOCK) - lo
            np.matmul(gm[:, lo + s0:lo + s1], rows[s0:s1], out=parts[k])
    _by_image(chunk, blocks, work * per_block, CONV_GRAIN)
    out = parts[0]
    for part in parts[1:]:
        out += part
    return out


def _rows_arrays(x, kernel, stride, padding):
    """Empty arrays for _rows(x, ..., out=), made before a split (see _cols_arrays)."""
    (kh, kw), (sh, sw) = kernel, stride
    n, c, h, w = x.shape
    hp, wp = h + 2 * padding[0], w + 2 * padding[1]
    ho, wo = (hp - kh) // sh + 1, (wp - kw) // sw + 1
    return np.empty((n * ho * wo, kh * kw * c), dtype=x.dtype), np.empty((n, hp, wp, c), dtype=x.dtype)


def _weight_grad_rule(x, g, *, kernel, stride, padding):
    _check_4d("conv2d_weight_grad", "an input (N, C, H, W)", x)
    _check_4d("conv2d_weight_grad", "an output cotangent (N, O, Ho, Wo)", g)
    if x.shape[0] != g.shape[0]:
        raise ShapeError(f"conv2d_weight_grad: Expect: input and cotangent with the same batch "
                         f"size. Actual: input {fmt(x.shape)}, cotangent {fmt(g.shape)}")
    _check_fits("conv2d_weight_grad", x.shape[2:], kernel, padding)
    hw = tuple(_out_size(x.shape[2 + i], kernel[i], stride[i], padding[i]) for i in range(2))
    if tuple(g.shape[2:]) != hw:
        raise ShapeError(f"conv2d_weight_grad: Expect: a cotangent of spatial shape {fmt(hw)} "
                         f"(conv2d output for input {fmt(x.shape)}, kernel {fmt(kernel)}, "
                         f"stride {fmt(stride)}, padding {fmt(padding)}). Actual: {fmt(g.shape[2:])}")
    return (g.shape[1], x.shape[1]) + tuple(kernel), np.result_type(x.dtype, g.dtype)


def _weight_grad_batch(prim, args, batched, *, kernel, stride, padding):
    """vmap of Tw: a batch of inputs against one cotangent (or one input against a
    batch of cotangents) is one call, the batch folded into the input's channels
    (the cotangent's). Pairs batched together would need a grouped convolution: loop."""
    x, g = args
    if batched[0] and batched[1]:
        return NotImplemented
    params = {"kernel": kernel, "stride": stride, "padding": padding}
    if batched[0]:
        b, n, c = x.shape[:3]
        folded = reshape(transpose(x, (1, 0, 2, 3, 4)), (n, b * c) + tuple(x.shape[3:]))
        out = apply(prim, folded, g, **params)                          # (O, B·C, kh, kw)
        return transpose(reshape(out, (out.shape[0], b, c) + tuple(kernel)), (1, 0, 2, 3, 4))
    b, n, o = g.shape[:3]
    folded = reshape(transpose(g, (1, 0, 2, 3, 4)), (n, b * o) + tuple(g.shape[3:]))
    out = apply(prim, x, folded, **params)                              # (B·O, C, kh, kw)
    return reshape(out, (b, o) + tuple(out.shape[1:]))


# Bilinear in (x, g): its transposes are the input gradient and conv2d itself.
CONV2D_WEIGHT_GRAD = defprim("conv2d_weight_grad", _weight_grad_impl, bilinear=True, transpose=(
    lambda c, x, g, *, kernel, stride, padding: conv2d_input_grad(g, c, x.shape[2:], stride, padding),
    lambda c, x, g, *, kernel, stride, padding: conv2d(x, c, stride, padding)),
    shape=_weight_grad_rule, batch=_weight_grad_batch)


def conv2d_weight_grad(x, g, kernel, stride=1, padding=0) -> Tensor:
    """The transpose of ``conv2d`` in its kernel: the VJP of conv2d with respect to w.

    Correlates the (padded) input with the output cotangent. ``kernel`` is
    (kh, kw): with a stride it cannot be read off x and g.
    Shapes: x (N, C, H, W), g (N, O, Ho, Wo) -> (O, C, kh, kw).
    Not exported as ``ad.*`` (it is conv2d's VJP); import it from ``autograd_dag.primitives.conv``.
    Example: with x = ad.Tensor(np.ones((1, 3, 8, 8))) and g = ad.Tensor(np.ones((1, 4, 6, 6))),
    ``conv2d_weight_grad(x, g, (3, 3)).shape == (4, 3, 3, 3)``.
    """
    return apply(CONV2D_WEIGHT_GRAD, x, g, kernel=_pair("conv2d_weight_grad", "kernel", kernel, 1),
                 stride=_pair("conv2d_weight_grad", "stride", stride, 1),
                 padding=_pair("conv2d_weight_grad", "padding", padding, 0))

# ------------------------------------------------------------ max_pool2d


def _pool_views(x: np.ndarray, window, stride) -> list[np.ndarray]:
    """The strided views (..., Ho, Wo) of x, one per kernel position in row-major order."""
    (kh, kw), (sh, sw) = window, stride
    ho, wo = (x.shape[-2] - kh) // sh + 1, (x.shape[-1] - kw) // sw + 1
    return [x[..., i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw] for i in range(kh) for j in range(kw)]


def _first_max_index(x: np.ndarray, window, stride) -> np.ndarray:
    """Flat index into x of each window's FIRST maximum in row-major order, shaped (..., Ho, Wo).

    A later element takes the place only when strictly greater than the one
    chosen; a NaN ends the search (it is chosen only as its window's first
    element, and nothing after it is). Running comparisons over the kernel
    positions: np.argmax over each window's elements was 5x slower at LeNet's sizes.
    """
    # Stacked: each position's values contiguous, compared 3x faster than as strided views.
    values = np.stack(_pool_views(x, window, stride))
    h, w = x.shape[-2:]
    kw = window[1]
    # 32-bit indices where they fit: the index arithmetic is most of the time (25% less at LeNet's sizes).
    itype = np.int32 if x.size <= np.iinfo(np.int32).max else np.intp
    best = values[0]
    index = np.zeros(best.shape, dtype=itype)
    for p in range(1, len(values)):
        later = values[p] > best
        best = np.maximum(best, values[p])
        # The offsets i·W + j grow with p: the largest one flagged is the latest taken.
        np.maximum(index, later * itype((p // kw) * w + p % kw), out=index)
    ho, wo = index.shape[-2:]
    index += (np.arange(0, ho * stride[0] * w, stride[0] * w, dtype=itype)[:, None]
              + np.arange(0, wo * stride[1], stride[1], dtype=itype))
    index += np.arange(0, x.size, h * w, dtype=itype).reshape(x.shape[:-2] + (1, 1))
    return index


def _pool_rule(name: str, x, window, stride):
    if x.ndim < 2:
        raise ShapeError(f"{name}: Expect: an input with at least 2 axes (..., H, W). "
                         f"Actual: shape {fmt(x.shape)}")
    h, w = x.shape[-2:]
    if window[0] > h or window[1] > w:
        raise ShapeError(f"{name}: Expect: a window no larger than the input's (H, W) = {fmt((h, w))}. "
                         f"Actual: window {fmt(window)}")
    return tuple(x.shape[:-2]) + ((h - window[0]) // stride[0] + 1, (w - window[1]) // stride[1] + 1)


def _max_pool_impl(x, *, window, stride):
    # Separable: a running np.maximum over the kh row views (whole rows, contiguous
    # runs of W), then over the kw column views of that, kh + kw passes in all
    # (2x2 pooling at LeNet's sizes: 15-30% faster in float32 than the kh·kw
    # views of x; numpy reduces a 6-d window view over its two last axes about
    # 30x slower). The maximum is the same in any order, NaN included.
    shape = _pool_rule("max_pool2d", x, window, stride)
    ho, wo = shape[-2:]
    sh, sw = stride
    out = np.empty(shape, dtype=x.dtype)
    rows_all = np.empty(shape[:-1] + x.shape[-1:], dtype=x.dtype)   # made here, not in the chunks

    def chunk(a, b):
        part, rows = (x[a:b], rows_all[a:b]) if x.ndim > 2 else (x, rows_all)
        rows[...] = part[..., 0:sh * (ho - 1) + 1:sh, :]
        for i in range(1, window[0]):
            np.maximum(rows, part[..., i:i + sh * (ho - 1) + 1:sh, :], out=rows)
        target = out[a:b] if x.ndim > 2 else out
        target[...] = rows[..., 0:sw * (wo - 1) + 1:sw]
        for j in range(1, window[1]):
            np.maximum(target, rows[..., j:j + sw * (wo - 1) + 1:sw], out=target)
    if x.ndim > 2 and x.size:
        _by_image(chunk, x.shape[0], x.size // x.shape[0], POOL_GRAIN)
    else:
        chunk(0, 0)
    return out


def _max_pool_rule(x, *, window, stride):
    return _pool_rule("max_pool2d", x, window, stride), x.dtype


def _scatter_impl(ct, x, *, window, stride):
    _scatter_rule(ct, x, window=window, stride=stride)  # a broadcastable ct would pass silently
    out = np.zeros(x.size, dtype=ct.dtype)
    # add.at, not assignment: overlapping windows (stride < window) can pick the same pixel.
    # Without overlap it is no slower than the alternatives (numpy 2.4, AMD EPYC, LeNet's first
    # pool in float32: add.at 0.12 ms of the 0.49, against 0.22 for an assignment; writes per
    # kernel position into strided views of the result, 0.48-1.0 ms in all): the first-maximum
    # index (the stacked copy and the comparisons) is most of the time.
    np.add.at(out, _first_max_index(x, window, stride).ravel(), ct.ravel())
    return out.reshape(x.shape)


def _scatter_rule(ct, x, *, window, stride):
    expect = _pool_rule("max_pool2d_scatter", x, window, stride)
    if tuple(ct.shape) != expect:
        raise ShapeError(f"max_pool2d_scatter: Expect: a cotangent of the pooled shape {fmt(expect)} "
                         f"(input {fmt(x.shape)}). Actual: {fmt(ct.shape)}")
    return tuple(x.shape), ct.dtype


def _gather_impl(c, x, *, window, stride):
    _gather_rule(c, x, window=window, stride=stride)
    return np.take(c, _first_max_index(x, window, stride))


def _gather_rule(c, x, *, window, stride):
    shape = _pool_rule("max_pool2d_gather", x, window, stride)
    if tuple(c.shape) != tuple(x.shape):
        raise ShapeError(f"max_pool2d_gather: Expect: values shaped like the pooled input "
                         f"{fmt(x.shape)}. Actual: {fmt(c.shape)}")
    return shape, c.dtype


MAX_POOL2D = defprim(
    # Piecewise linear, so by hand: its derivative is the scatter/gather pair at the maxima x chose.
    "max_pool2d", _max_pool_impl,
    vjp=lambda ct, out, x, *, window, stride: (max_pool2d_scatter(ct, x, window, stride),),
    jvp=lambda t, out, x, *, window, stride: max_pool2d_gather(t[0], x, window, stride),
    shape=_max_pool_rule, batch=leading_axes)
# Linear in their first input (x only chooses the positions), each the other's transpose.
MAX_POOL2D_SCATTER = defprim(
    "max_pool2d_scatter", _scatter_impl,
    transpose=(lambda c, ct, x, *, window, stride: apply(MAX_POOL2D_GATHER, c, x, window=window, stride=stride),
               None),
    shape=_scatter_rule, nondiff=(1,), batch=leading_axes)
MAX_POOL2D_GATHER = defprim(
    "max_pool2d_gather", _gather_impl,
    transpose=(lambda c, cv, x, *, window, stride: apply(MAX_POOL2D_SCATTER, c, x, window=window, stride=stride),
               None),
    shape=_gather_rule, nondiff=(1,), batch=leading_axes)


def _pool_params(name: str, window, stride) -> dict:
    window = _pair(name, "window", window, 1)
    stride = window if stride is None else _pair(name, "stride", stride, 1)
    return {"window": window, "stride": stride}


def max_pool2d(x, window=2, stride=None) -> Tensor:
    """Maximum over each window of the last two axes (no padding).

    ``window`` and ``stride`` are ints or (height, width) pairs; ``stride``
    defaults to ``window``. The derivative goes to the FIRST maximum of each
    window in row-major order (ties give it all to one element).
    Shapes: (..., H, W) -> (..., (H - kh)//sh + 1, (W - kw)//sw + 1).
    Example: ``ad.max_pool2d(ad.Tensor(np.ones((1, 6, 28, 28)))).shape == (1, 6, 14, 14)``.
    """
    return apply(MAX_POOL2D, x, **_pool_params("max_pool2d", window, stride))


def max_pool2d_scatter(ct, x, window=2, stride=None) -> Tensor:
    """Send each pooled value to its window's first-maximum position in x (adding on overlap).

    The VJP of max_pool2d; ``x`` only chooses the positions and gets no derivative.
    Shapes: ct (..., Ho, Wo), x (..., H, W) -> (..., H, W).
    Not exported as ``ad.*``; import it from ``autograd_dag.primitives.conv``.
    Example: ``max_pool2d_scatter(ad.Tensor(np.ones((1, 1, 1, 1))), np.eye(2)[None, None])``
    has the value ``[[[[1, 0], [0, 0]]]]``.
    """
    return apply(MAX_POOL2D_SCATTER, ct, x, **_pool_params("max_pool2d_scatter", window, stride))


def max_pool2d_gather(c, x, window=2, stride=None) -> Tensor:
    """Read c at each window's first-maximum position in x: the JVP of max_pool2d.

    ``x`` only chooses the positions and gets no derivative.
    Shapes: c (..., H, W), x (..., H, W) -> (..., Ho, Wo).
    Not exported as ``ad.*``; import it from ``autograd_dag.primitives.conv``.
    Example: ``max_pool2d_gather(x, x)`` has the value of ``ad.max_pool2d(x)``.
    """
    return apply(MAX_POOL2D_GATHER, c, x, **_pool_params("max_pool2d_gather", window, stride))
