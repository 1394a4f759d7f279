"""``linear_relu``: a feed-forward layer's product, bias and relu as one primitive (on :mod:`..linalg`'s ``linear``)."""

from __future__ import annotations


import numpy as np

from ...core import Tensor, apply
from ..elementwise import greater, multiply, relu
from ..registry import defprim
from ..structure import sum_to_shape
from ..linalg.products import (LINEAR, _linear_batch, _linear_impl, _linear_jvp, _linear_rule, _linear_vjp_w,
                               _linear_vjp_x)


# ----------------------------------------------------------------- linear_relu


def _linear_relu_impl(x, w, b):
    out = _linear_impl(x, w, b)
    # relu in place in the product's own array: the pre-activation is never kept (in the eager
    # mode relu(linear(·)) kept both, the FFN's two largest arrays of the step).
    return np.maximum(out, out.dtype.type(0), out=out)


def _linear_relu_vjp(ct, out, x, w, b):
    # One rule for the three inputs: the masked cotangent (relu'(0) = 0, the mask read from the
    # output, as relu's own rule reads it) is made once and feeds the linear map's three rules.
    # (Per-input rules would each mask the cotangent again in the eager sweep.)
    g = multiply(ct, greater(out, 0.0))
    return _linear_vjp_x(g, None, x, w, b), _linear_vjp_w(g, None, x, w, b), sum_to_shape(g, b.shape)


def _linear_relu_jvp(t, out, x, w, b):
    return multiply(_linear_jvp(t, out, x, w, b), greater(out, 0.0))


def _linear_relu_batch(prim, args, batched):
    return relu(_linear_batch(LINEAR, args, batched))


# Hand-written pair: relu's mask, read from the output once, feeds linear's rules: one node, one array.
LINEAR_RELU = defprim("linear_relu", _linear_relu_impl, vjp=_linear_relu_vjp, jvp=_linear_relu_jvp,
                      shape=_linear_rule, batch=_linear_relu_batch)


def linear_relu(x, w, b) -> Tensor:
    """relu(x Wᵀ + b), as one primitive: a feed-forward layer's product, bias and activation.

    One array of the output's size (the bias added and relu applied in place in
    the product), where ``relu(linear(x, W, b))`` keeps the pre-activation too;
    relu'(0) = 0, the mask read from the output. Its one VJP rule masks the
    cotangent once for x, W and b (all three are computed: meant for hidden
    layers, whose input needs its cotangent).
    Shapes: x (..., in), W (out, in), b (out,) -> (..., out).
    Example: ``linear_relu(np.ones((1, 3)), -np.ones((4, 3)), np.arange(4.) + 2).value`` is ``[[0., 0., 1., 2.]]``.
    """
    return apply(LINEAR_RELU, x, w, b)
