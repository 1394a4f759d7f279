"""ONNX convolution and pooling operators."""

from __future__ import annotations

from ..primitives import conv, elementwise as el, indexing, structure as st
from ..primitives.arrays import pad
from ._ops import OnnxImportError, handles, _shape, _ndim


def _plain(c, what):
    if any(d != 1 for d in c.attr("dilations", [1, 1])) or c.attr("group", 1) != 1:
        raise OnnxImportError(f"onnx.load: {what} with dilations or groups is not supported")
    if c.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise OnnxImportError(f"onnx.load: {what} with auto_pad={c.attr('auto_pad')} is not supported")
    pads = c.attr("pads", [0, 0, 0, 0])
    if list(pads[:2]) != list(pads[2:]):
        raise OnnxImportError(f"onnx.load: {what} with asymmetric pads {list(pads)} is not supported")
    return tuple(c.attr("strides", [1, 1])), tuple(pads[:2])


@handles("Conv")
def _conv(c):
    x, w, bias = c.arg(0), c.arg(1), c.arg(2)
    stride, padding = _plain(c, "Conv")
    out = conv.conv2d(x, w, stride, padding)
    if bias is not None:
        out = el.add(out, st.reshape(bias, (-1, 1, 1)))
    return out


@handles("ConvTranspose")
def _conv_transpose(c):
    g, w, bias = c.arg(0), c.arg(1), c.arg(2)
    rank = _ndim(w) - 2
    if rank not in (1, 2):
        raise OnnxImportError(f"onnx.load: ConvTranspose over {rank} spatial axes is not supported (1 and 2 are)")
    if any(d != 1 for d in c.attr("dilations", [1] * rank)) or c.attr("group", 1) != 1:
        raise OnnxImportError("onnx.load: ConvTranspose with dilations or groups is not supported")
    if c.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise OnnxImportError(f"onnx.load: ConvTranspose with auto_pad={c.attr('auto_pad')} is not supported")
    stride, extra = list(c.attr("strides", [1] * rank)), list(c.attr("output_padding", [0] * rank))
    kernel, size = _shape(w)[2:], _shape(g)[2:]
    full = [(size[a] - 1) * stride[a] + kernel[a] + extra[a] for a in range(rank)]
    if c.attr("output_shape") is not None:
        if any(c.attr("pads", [])):
            # The spec ignores pads then, ONNX's reference implementation applies them: no guess.
            raise OnnxImportError("onnx.load: ConvTranspose with both output_shape and pads is not supported")
        # The spec's pads for output_shape (floor division, as the reference: a negative total, an
        # output_shape beyond the result, extends the end with zeros).
        total = [full[a] - int(c.attr("output_shape")[a]) for a in range(rank)]
        begin, end = [t - t // 2 for t in total], [t // 2 for t in total]
    else:
        pads = list(c.attr("pads", [0] * 2 * rank))
        begin, end = pads[:rank], pads[rank:]
    if rank == 1:  # as 2-D with a height of 1
        g, w = st.reshape(g, _shape(g)[:2] + (1,) + size), st.reshape(w, _shape(w)[:2] + (1,) + kernel)
        stride, full, begin, end = [1] + stride, [1] + full, [0] + begin, [0] + end
    if begin == end and min(begin) >= 0:
        out = conv.conv2d_input_grad(g, w, tuple(f - 2 * b for f, b in zip(full, begin)), stride, tuple(begin))
    else:
        # conv2d_input_grad pads both ends alike: compute the whole result, then crop (or extend) each end.
        out = conv.conv2d_input_grad(g, w, tuple(full), stride, 0)
        if min(begin + end) < 0:
            out = pad(out, [(0, 0), (0, 0)] + [(max(-b, 0), max(-e, 0)) for b, e in zip(begin, end)])
        out = indexing.getitem(out, (slice(None),) * 2 + tuple(
            slice(max(b, 0), max(b, 0) + f - b - e) for f, b, e in zip(full, begin, end)))
    if rank == 1:
        out = st.reshape(out, _shape(out)[:2] + _shape(out)[3:])
    if bias is not None:
        out = el.add(out, st.reshape(bias, (-1,) + (1,) * rank))
    return out


@handles("MaxPool")
def _max_pool(c):
    if any(c.attr("pads", [0, 0, 0, 0])) or c.attr("ceil_mode", 0) or len(c.node.output) > 1:
        raise OnnxImportError("onnx.load: MaxPool with pads, ceil_mode or an indices output is not supported")
    if any(d != 1 for d in c.attr("dilations", [1, 1])):
        raise OnnxImportError("onnx.load: MaxPool with dilations is not supported")
    if c.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        # SAME_* pads the input: pooling it unpadded would give a smaller output, silently.
        raise OnnxImportError(f"onnx.load: MaxPool with auto_pad={c.attr('auto_pad')} is not supported")
    window = tuple(c.attr("kernel_shape"))
    return conv.max_pool2d(c.arg(0), window, tuple(c.attr("strides", [1, 1])))
