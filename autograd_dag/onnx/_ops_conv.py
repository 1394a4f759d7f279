"""ONNX convolution and pooling operators.

Every form is composed of the library's primitives (``conv2d`` and its transpose, ``max_pool2d``,
``pad``, strided slices, ``index_add``, ``concatenate``), so a loaded program differentiates and
exports by itself. Dilations and a third spatial axis are never made by inserting zeros into a
kernel or an input (0·inf would turn an infinite input into NaN): a dilated or depth kernel axis
is looped over, each kernel position reading its own strided slice of the input (a transposed
convolution adding each position's contribution at its own strided place), and the terms summed.
A 1-D operator runs as 2-D with a height of 1.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from ..primitives import conv, elementwise as el, fused, indexing, mathfuncs, structure as st
from ..primitives.arrays import pad
from ._ops import OnnxImportError, handles, _shape, _ndim


def _sum(terms):
    return functools.reduce(el.add, terms)


def _ints(c, key, rank, default):
    value = c.attr(key)
    return [default] * rank if value is None else [int(v) for v in value]


def _check_rank(what, rank):
    if rank not in (1, 2, 3):
        raise OnnxImportError(f"onnx.load: {what} over {rank} spatial axes is not supported (1, 2 and 3 are)")


def _pads(c, what, size, kernel, strides, dilations):
    """(begin, end) pads per spatial axis, from ``pads`` or ``auto_pad`` (windows reading the input)."""
    rank = len(size)
    auto = c.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto == "NOTSET":
        pads = _ints(c, "pads", 2 * rank, 0)
        if min(pads) < 0:
            raise OnnxImportError(f"onnx.load: {what} with negative pads {pads} is not supported")
        return pads[:rank], pads[rank:]
    if auto == "VALID":
        return [0] * rank, [0] * rank
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise OnnxImportError(f"onnx.load: {what} with auto_pad={auto} is not supported")
    # SAME: ceil(n / s) outputs, the total pad split evenly, its odd unit at the end (UPPER) or the start.
    total = [max((-(-n // s) - 1) * s + d * (k - 1) + 1 - n, 0)
             for n, k, s, d in zip(size, kernel, strides, dilations)]
    small, large = [t // 2 for t in total], [t - t // 2 for t in total]
    return (small, large) if auto == "SAME_UPPER" else (large, small)


def _out_len(n, k, s, d):
    return (n - d * (k - 1) - 1) // s + 1


def _window_slice(i, s, d, out):
    """The input positions kernel position i reads for each of ``out`` outputs."""
    return slice(i * d, i * d + s * (out - 1) + 1, s)


def _lift(x):
    """A 1-D operand (N, C, L) as 2-D (N, C, 1, L)."""
    return st.reshape(x, _shape(x)[:2] + (1,) + _shape(x)[2:])


# ---------------------------------------------------------------- Conv


def _conv_plain(x, w, strides, dilations):
    """Cross-correlation of an already padded x (N, C, *S) with w (O, C, *K), 2 or 3 spatial axes.

    conv2d runs the (height, width) axes it can (undilated); every other kernel axis (depth, a
    dilated axis) is looped over, each position correlating its strided slice of x with its slice
    of w: the sum over positions is the convolution's own sum, regrouped.
    """
    rank = _ndim(x) - 2
    size, kernel = _shape(x)[2:], _shape(w)[2:]
    out = [_out_len(n, k, s, d) for n, k, s, d in zip(size, kernel, strides, dilations)]
    looped = [a for a in range(rank) if dilations[a] != 1 or (rank == 3 and a == 0)]
    terms = []
    for offsets in itertools.product(*(range(kernel[a]) for a in looped)):
        pos = dict(zip(looped, offsets))
        xi = tuple(_window_slice(pos[a], strides[a], dilations[a], out[a]) if a in pos else slice(None)
                   for a in range(rank))
        wi = tuple(slice(pos[a], pos[a] + 1) if a in pos else slice(None) for a in range(rank))
        xs = indexing.getitem(x, (slice(None),) * 2 + xi) if looped else x
        ws = indexing.getitem(w, (slice(None),) * 2 + wi) if looped else w
        stride2 = tuple(1 if a in pos else strides[a] for a in range(rank - 2, rank))
        if rank == 3:  # the depth axis (sliced to the output's depth) folds into the batch
            n, ch, depth = _shape(xs)[:3]
            xs = st.reshape(st.transpose(xs, (0, 2, 1, 3, 4)), (n * depth, ch) + _shape(xs)[3:])
            ws = st.reshape(ws, _shape(ws)[:2] + _shape(ws)[3:])
        terms.append(conv.conv2d(xs, ws, stride2))
    y = _sum(terms)
    if rank == 3:
        n = _shape(x)[0]
        y = st.transpose(st.reshape(y, (n, out[0]) + _shape(y)[1:]), (0, 2, 1, 3, 4))
    return y


def _depthwise(x, w, strides, dilations):
    """A grouped convolution of one input channel per group, as a sum over kernel positions of
    each strided slice times its weights (per output channel): one term per kernel position
    whatever the number of channels, where a loop over groups would make one conv2d per channel."""
    rank = _ndim(x) - 2
    size, kernel = _shape(x)[2:], _shape(w)[2:]
    out = [_out_len(n, k, s, d) for n, k, s, d in zip(size, kernel, strides, dilations)]
    o, channels = _shape(w)[0], _shape(x)[1]
    # Output channel o reads input channel o // multiplier.
    chan = slice(None) if o == channels else np.arange(o) // (o // channels)
    terms = []
    for pos in itertools.product(*(range(k) for k in kernel)):
        xi = tuple(_window_slice(pos[a], strides[a], dilations[a], out[a]) for a in range(rank))
        xs = indexing.getitem(x, (slice(None), chan) + xi)
        ws = st.reshape(indexing.getitem(w, (slice(None), 0) + pos), (o,) + (1,) * rank)
        terms.append(el.multiply(xs, ws))
    return _sum(terms)


@handles("Conv")
def _conv(c):
    x, w, bias = c.arg(0), c.arg(1), c.arg(2)
    rank = _ndim(w) - 2
    _check_rank("Conv", rank)
    kernel, size = list(_shape(w)[2:]), list(_shape(x)[2:])
    strides, dilations = _ints(c, "strides", rank, 1), _ints(c, "dilations", rank, 1)
    groups = int(c.attr("group", 1))
    begin, end = _pads(c, "Conv", size, kernel, strides, dilations)
    channels, o = _shape(x)[1], _shape(w)[0]
    if groups < 1 or channels % groups or o % groups or _shape(w)[1] * groups != channels:
        raise OnnxImportError(f"onnx.load: Conv with group={groups} does not fit input channels {channels} "
                              f"and kernel {list(_shape(w))}")
    if any(_out_len(n + b + e, k, s, d) < 1 for n, k, s, d, b, e in zip(size, kernel, strides, dilations, begin, end)):
        raise OnnxImportError(f"onnx.load: Conv: kernel {kernel} (dilations {dilations}) does not fit the "
                              f"padded input {size} (pads {begin + end})")
    if rank == 2 and groups == 1 and dilations == [1, 1] and begin == end:
        out = conv.conv2d(x, w, tuple(strides), tuple(begin))   # the common case: one primitive
    else:
        if any(begin + end):
            x = pad(x, [(0, 0), (0, 0)] + list(zip(begin, end)))
        if rank == 1:
            x, w = _lift(x), _lift(w)
            strides, dilations = [1] + strides, [1] + dilations
        if groups == 1:
            out = _conv_plain(x, w, strides, dilations)
        elif _shape(w)[1] == 1:
            out = _depthwise(x, w, strides, dilations)
        else:
            cg, og = channels // groups, o // groups
            out = indexing.concatenate(
                [_conv_plain(indexing.getitem(x, (slice(None), slice(g * cg, (g + 1) * cg))),
                             indexing.getitem(w, (slice(g * og, (g + 1) * og),)), strides, dilations)
                 for g in range(groups)], axis=1)
        if rank == 1:
            out = st.reshape(out, _shape(out)[:2] + _shape(out)[3:])
    if bias is not None:
        out = el.add(out, st.reshape(bias, (-1,) + (1,) * rank))
    return out


# -------------------------------------------------------- ConvTranspose


def _transpose_plain(g, w, full, strides, dilations):
    """The transpose of ``_conv_plain`` in its input: g (N, C, *S), w (C, O, *K) -> (N, O, *full).

    conv2d_input_grad scatters the undilated (height, width) axes; each position of a looped
    kernel axis (depth, a dilated axis) scatters its own term, added at its strided place of the
    result with ``index_add`` (zeros elsewhere: adding a zero changes no value, inf and NaN included).
    """
    rank = _ndim(g) - 2
    size, kernel = _shape(g)[2:], _shape(w)[2:]
    n, o = _shape(g)[0], _shape(w)[1]
    looped = [a for a in range(rank) if dilations[a] != 1 or (rank == 3 and a == 0)]
    # conv2d_input_grad's output along an axis: whole for a scattered axis, one strided run for a looped one.
    part = [strides[a] * (size[a] - 1) + 1 if a in looped else full[a] for a in range(rank)]
    terms = []
    for offsets in itertools.product(*(range(kernel[a]) for a in looped)):
        pos = dict(zip(looped, offsets))
        wi = tuple(slice(pos[a], pos[a] + 1) if a in pos else slice(None) for a in range(rank))
        ws = indexing.getitem(w, (slice(None),) * 2 + wi) if looped else w
        gs = g
        if rank == 3:
            gs = st.reshape(st.transpose(g, (0, 2, 1, 3, 4)), (n * size[0],) + (_shape(g)[1],) + size[1:])
            ws = st.reshape(ws, _shape(ws)[:2] + _shape(ws)[3:])
        stride2 = tuple(1 if a in pos else strides[a] for a in range(rank - 2, rank))
        sub = [size[a] if a in pos else part[a] for a in range(rank - 2, rank)]
        # A ConvTranspose kernel (C, O, ...) is conv2d_input_grad's (conv2d's O = C, its C = O) as it is.
        y = conv.conv2d_input_grad(gs, ws, tuple(sub), stride2, 0)
        if rank == 3:
            y = st.transpose(st.reshape(y, (n, size[0]) + _shape(y)[1:]), (0, 2, 1, 3, 4))
        if looped:
            # A looped axis was scattered at stride 1 (its kernel slice has length 1): spread it now.
            y = indexing.index_add(y, (n, o) + tuple(full), (slice(None),) * 2 + tuple(
                slice(pos[a] * dilations[a], pos[a] * dilations[a] + strides[a] * (size[a] - 1) + 1, strides[a])
                if a in pos else slice(None) for a in range(rank)))
        terms.append(y)
    return _sum(terms)


@handles("ConvTranspose")
def _conv_transpose(c):
    g, w, bias = c.arg(0), c.arg(1), c.arg(2)
    rank = _ndim(w) - 2
    _check_rank("ConvTranspose", rank)
    strides, dilations = _ints(c, "strides", rank, 1), _ints(c, "dilations", rank, 1)
    extra = _ints(c, "output_padding", rank, 0)
    groups = int(c.attr("group", 1))
    kernel, size = list(_shape(w)[2:]), list(_shape(g)[2:])
    channels = _shape(g)[1]
    if groups < 1 or channels % groups or _shape(w)[0] != channels:
        raise OnnxImportError(f"onnx.load: ConvTranspose with group={groups} does not fit input channels "
                              f"{channels} and kernel {list(_shape(w))}")
    full = [(size[a] - 1) * strides[a] + dilations[a] * (kernel[a] - 1) + 1 + extra[a] for a in range(rank)]
    auto = c.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise OnnxImportError(f"onnx.load: ConvTranspose with auto_pad={auto} is not supported")
    shape = c.attr("output_shape")
    if shape is not None and any(c.attr("pads", [])):
        # The spec ignores pads then, ONNX's reference implementation applies them: no guess.
        raise OnnxImportError("onnx.load: ConvTranspose with both output_shape and pads is not supported")
    if shape is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        shape = [n * s for n, s in zip(size, strides)]
    if shape is not None:
        # The reference's pads for an output shape (floor division: a negative total, an output
        # shape beyond the result, extends the end with zeros); the odd unit at the end unless SAME_UPPER.
        total = [full[a] - int(shape[-rank:][a]) for a in range(rank)]
        if auto == "SAME_UPPER":
            begin, end = [t // 2 for t in total], [t - t // 2 for t in total]
        else:
            begin, end = [t - t // 2 for t in total], [t // 2 for t in total]
    elif auto == "VALID":
        begin, end = [0] * rank, [0] * rank
    else:
        pads = _ints(c, "pads", 2 * rank, 0)
        begin, end = pads[:rank], pads[rank:]
    if rank == 1:
        g, w = _lift(g), _lift(w)
        strides, dilations, full, begin, end = [1] + strides, [1] + dilations, [1] + full, [0] + begin, [0] + end
    if rank == 2 and groups == 1 and dilations == [1, 1] and begin == end and min(begin) >= 0:
        out = conv.conv2d_input_grad(g, w, tuple(f - 2 * b for f, b in zip(full, begin)), tuple(strides),
                                     tuple(begin))
    else:
        if groups == 1:
            out = _transpose_plain(g, w, full, strides, dilations)
        else:
            cg = channels // groups
            out = indexing.concatenate(
                [_transpose_plain(indexing.getitem(g, (slice(None), slice(i * cg, (i + 1) * cg))),
                                  indexing.getitem(w, (slice(i * cg, (i + 1) * cg),)), full, strides, dilations)
                 for i in range(groups)], axis=1)
        # The whole result is computed, then each end cropped (or extended with zeros).
        if min(begin + end) < 0:
            out = pad(out, [(0, 0), (0, 0)] + [(max(-b, 0), max(-e, 0)) for b, e in zip(begin, end)])
        if any(begin + end):
            out = indexing.getitem(out, (slice(None),) * 2 + tuple(
                slice(max(b, 0), max(b, 0) + f - b - e) for f, b, e in zip(full, begin, end)))
    if rank == 1:
        out = st.reshape(out, _shape(out)[:2] + _shape(out)[3:])
    if bias is not None:
        out = el.add(out, st.reshape(bias, (-1,) + (1,) * rank))
    return out


# ------------------------------------------------------------- pooling


def _pool_geometry(c, what, x, kernel=None):
    """(kernel, strides, dilations, begin, end, out): the windows of a pooling node over x (N, C, *S).

    ``end`` includes ceil_mode's extension (positions past the explicit pads, which a window
    reads but which count for nothing) or, negative, the tail no window reads.
    """
    rank = _ndim(x) - 2
    _check_rank(what, rank)
    size = list(_shape(x)[2:])
    kernel = [int(k) for k in (kernel or c.attr("kernel_shape"))]
    strides, dilations = _ints(c, "strides", rank, 1), _ints(c, "dilations", rank, 1)
    begin, end = _pads(c, what, size, kernel, strides, dilations)
    ceil = bool(c.attr("ceil_mode", 0)) and (c.attr("auto_pad", "NOTSET") or "NOTSET") == "NOTSET"
    out = []
    for n, k, s, d, b, e in zip(size, kernel, strides, dilations, begin, end):
        span = n + b + e - d * (k - 1) - 1
        if span < 0:
            raise OnnxImportError(f"onnx.load: {what}: kernel_shape {kernel} (dilations {dilations}) does not fit "
                                  f"the padded input {size}")
        m = -(-span // s) + 1 if ceil else span // s + 1
        if ceil and (m - 1) * s >= n + b:   # the last window must start inside the input or its begin pad
            m -= 1
        out.append(m)
    reach = [(m - 1) * s + d * (k - 1) + 1 for m, k, s, d in zip(out, kernel, strides, dilations)]
    return kernel, strides, dilations, begin, [r - n - b for r, n, b in zip(reach, size, begin)], out


def _padded(x, begin, end, value):
    """x padded by (begin, end) per spatial axis with ``value``; a negative end crops."""
    if any(begin) or any(e > 0 for e in end):
        x = pad(x, [(0, 0), (0, 0)] + [(b, max(e, 0)) for b, e in zip(begin, end)], constant_values=value)
    if min(end) < 0:
        x = indexing.getitem(x, (slice(None),) * 2 + tuple(slice(0, n + min(e, 0)) for n, e in
                                                         zip(_shape(x)[2:], end)))
    return x


def _window_reduce(xp, kernel, strides, dilations, out, combine):
    """``combine`` (el.maximum or el.add) over each window of xp, axis after axis (both are separable:
    the maximum or sum over a box is that over one axis of that over the others)."""
    for a in range(len(kernel)):
        if kernel[a] == 1 and strides[a] == 1:
            continue
        xp = functools.reduce(combine, [
            indexing.getitem(xp, (slice(None),) * (2 + a) + (_window_slice(i, strides[a], dilations[a], out[a]),))
            for i in range(kernel[a])])
    return xp


def _np_window_sum(x, kernel, strides, dilations, out):
    for a in range(len(kernel)):
        x = sum(x[(slice(None),) * a + (_window_slice(i, strides[a], dilations[a], out[a]),)]
                for i in range(kernel[a]))
    return x


@handles("MaxPool")
def _max_pool(c):
    x = c.arg(0)
    kernel, strides, dilations, begin, end, out = _pool_geometry(c, "MaxPool", x)
    rank = len(kernel)
    dtype = _shape_dtype(x)
    # The pads never win a window: -inf (the least integer), as the spec's "ignored" pads.
    low = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
    xp = _padded(x, begin, end, low)
    if rank >= 2 and dilations[-2:] == [1, 1]:
        # The (height, width) windows in one primitive, the depth axis (if any) by slices.
        y = conv.max_pool2d(xp, tuple(kernel[-2:]), tuple(strides[-2:]))
        y = _window_reduce(y, kernel[:-2] + [1, 1], strides[:-2] + [1, 1], dilations, out, el.maximum)
    else:
        y = _window_reduce(xp, kernel, strides, dilations, out, el.maximum)
    if len(c.node.output) < 2 or not c.node.output[1]:
        return y
    # Indices: the first entry of each window (row-major over the kernel) equal to its maximum y (a
    # NaN where y is NaN), as a flat index into x. Pads are masked out, so a window of -inf entries
    # and pads names its first entry, not a pad.
    positions = list(itertools.product(*(range(k) for k in kernel)))
    windows = indexing.stack([indexing.getitem(xp, (slice(None),) * 2 + tuple(
        _window_slice(p[a], strides[a], dilations[a], out[a]) for a in range(rank)))
        for p in positions], axis=-1)
    top = st.expand_dims(y, -1)
    match = el.add(el.astype(el.equal(windows, top), np.float64),
                   el.multiply(el.astype(mathfuncs.isnan(windows), np.float64),
                               el.astype(mathfuncs.isnan(top), np.float64)))
    size = _shape(x)[2:]
    grids = np.meshgrid(*(np.arange(m) for m in out), indexing="ij")
    coords = [grids[a][..., None] * strides[a] - begin[a] + np.array([p[a] for p in positions]) * dilations[a]
              for a in range(rank)]
    real = np.all([(co >= 0) & (co < n) for co, n in zip(coords, size)], axis=0)
    hot = fused.argmax(el.multiply(match, real.astype(np.float64)), axis=-1)
    order = "F" if c.attr("storage_order", 0) else "C"
    # A pad's coordinates, clipped into x, only make an index that is multiplied by 0.
    table = np.ravel_multi_index(tuple(np.clip(co, 0, n - 1) for co, n in zip(coords, size)), size, order=order)
    flat = st.sum(el.multiply(el.astype(hot, np.float64), table.astype(np.float64)), -1)
    n, ch = _shape(x)[:2]
    base = (np.arange(n * ch, dtype=np.int64) * int(np.prod(size))).reshape((n, ch) + (1,) * rank)
    return y, el.add(el.astype(flat, np.int64), base)


@handles("AveragePool")
def _average_pool(c):
    x = c.arg(0)
    kernel, strides, dilations, begin, end, out = _pool_geometry(c, "AveragePool", x)
    xp = _padded(x, begin, end, 0.0)
    sums = _window_reduce(xp, kernel, strides, dilations, out, el.add)
    # How many entries each window averages: the input's, the explicit pads' if count_include_pad,
    # never ceil_mode's extension (as ONNX's reference).
    size = _shape(x)[2:]
    pads = [(b, e_pad) for b, e_pad in zip(begin, _ints(c, "pads", 2 * len(size), 0)[len(size):])] \
        if (c.attr("auto_pad", "NOTSET") or "NOTSET") == "NOTSET" else list(zip(begin, [max(e, 0) for e in end]))
    weight = np.pad(np.ones(size), pads, constant_values=float(bool(c.attr("count_include_pad", 0))))
    weight = np.pad(weight, [(0, max(r - w, 0)) for r, w in zip(
        [(m - 1) * s + d * (k - 1) + 1 for m, k, s, d in zip(out, kernel, strides, dilations)], weight.shape)])
    counts = _np_window_sum(weight, kernel, strides, dilations, out)
    return el.divide(sums, counts.astype(_shape_dtype(x)))


def _shape_dtype(x):
    return np.dtype(x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype)


def _lp(c, x, kernel):
    p = int(c.attr("p", 2))
    kernel, strides, dilations, begin, end, out = _pool_geometry(c, c.node.op_type, x, kernel)
    dtype = _shape_dtype(x)
    powered = mathfuncs.square(x) if p == 2 else el.power(el.abs(x), np.asarray(p, dtype))
    sums = _window_reduce(_padded(powered, begin, end, 0.0), kernel, strides, dilations, out, el.add)
    return el.sqrt(sums) if p == 2 else el.power(sums, np.asarray(1.0 / p, dtype))


@handles("LpPool")
def _lp_pool(c):
    return _lp(c, c.arg(0), None)


@handles("GlobalLpPool")
def _global_lp_pool(c):
    x = c.arg(0)
    return _lp(c, x, list(_shape(x)[2:]))
