"""ONNX activations (Selu, Celu, ThresholdedRelu, PRelu, Shrink, Swish, Softsign, Mish, HardSwish)
and the classification losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).

Each is composed from the library's elementwise primitives, so a loaded model differentiates and
exports without rules of its own. ``rnn_activation`` also serves the recurrent operators, whose
``activations`` attribute names the same functions.
"""

from __future__ import annotations

import numpy as np

from ..primitives import elementwise as el, mathfuncs, numeric, structure as st
from ..nn.functional import log_softargmax
from ._ops import OnnxImportError, handles, _shape, _ndim


def _selu(x, alpha, gamma):
    # expm1, not exp - 1: exp rounds away the digits of alpha * x near 0.
    return el.multiply(el.where(el.greater(x, 0.0), x, el.multiply(mathfuncs.expm1(x), alpha)), gamma)


def _thresholded_relu(x, alpha):
    return el.where(el.greater(x, alpha), x, 0.0)


def _softsign(x):
    return el.divide(x, el.add(el.abs(x), 1.0))


@handles("Selu")
def _selu_op(c):
    return _selu(c.arg(0), c.attr("alpha", 1.67326319217681884765625), c.attr("gamma", 1.05070102214813232421875))


@handles("Celu")
def _celu(c):
    x, alpha = c.arg(0), c.attr("alpha", 1.0)
    # max(0, x) + min(0, alpha (exp(x / alpha) - 1)): the two terms never both differ from 0.
    return el.where(el.greater(x, 0.0), x, el.multiply(mathfuncs.expm1(el.divide(x, alpha)), alpha))


@handles("ThresholdedRelu")
def _thresholded_relu_op(c):
    return _thresholded_relu(c.arg(0), c.attr("alpha", 1.0))


@handles("PRelu")
def _prelu(c):
    x, slope = c.arg(0), c.arg(1)
    return el.where(el.less(x, 0.0), el.multiply(x, slope), x)


@handles("Shrink")
def _shrink(c):
    x, bias, lambd = c.arg(0), c.attr("bias", 0.0), c.attr("lambd", 0.5)
    if x.dtype.kind != "f":
        raise OnnxImportError(f"onnx.load: Shrink on {x.dtype} is not supported (floating-point inputs only)")
    return el.where(el.less(x, -lambd), el.add(x, bias),
                    el.where(el.greater(x, lambd), el.subtract(x, bias), 0.0))


@handles("Swish")
def _swish(c):
    x = c.arg(0)
    return el.multiply(x, el.logistic(el.multiply(x, c.attr("alpha", 1.0))))


@handles("Softsign")
def _softsign_op(c):
    return _softsign(c.arg(0))


@handles("Mish")
def _mish(c):
    x = c.arg(0)
    return el.multiply(x, el.tanh(el.softplus(x)))


@handles("HardSwish")
def _hard_swish(c):
    x = c.arg(0)
    return el.multiply(x, mathfuncs.clip(el.add(el.multiply(x, 1.0 / 6.0), 0.5), 0.0, 1.0))


# The recurrent operators' activation functions: name -> (function of x, alpha, beta; the defaults
# of alpha and beta, None where the function takes none). ONNX Runtime takes activation_alpha and
# activation_beta in order, one for each function that takes one.
_RNN_ACTIVATIONS = {
    "relu": (lambda x, a, b: el.relu(x), None, None),
    "tanh": (lambda x, a, b: el.tanh(x), None, None),
    "sigmoid": (lambda x, a, b: el.logistic(x), None, None),
    "affine": (lambda x, a, b: el.add(el.multiply(x, a), b), 1.0, 0.0),
    "leakyrelu": (lambda x, a, b: el.where(el.greater(x, 0.0), x, el.multiply(x, a)), 0.01, None),
    "thresholdedrelu": (lambda x, a, b: _thresholded_relu(x, a), 1.0, None),
    "scaledtanh": (lambda x, a, b: el.multiply(el.tanh(el.multiply(x, b)), a), 1.0, 1.0),
    "hardsigmoid": (lambda x, a, b: mathfuncs.clip(el.add(el.multiply(x, a), b), 0.0, 1.0), 0.2, 0.5),
    "elu": (lambda x, a, b: el.where(el.greater(x, 0.0), x, el.multiply(mathfuncs.expm1(x), a)), 1.0, None),
    "softsign": (lambda x, a, b: _softsign(x), None, None),
    "softplus": (lambda x, a, b: el.softplus(x), None, None),
}


def rnn_activations(c, names, alphas, betas):
    """The recurrent node's ``activations`` as functions of one Tensor, in order.

    names: the attribute's strings (any case); alphas/betas: activation_alpha/beta (or None).
    Example: ``rnn_activations(c, ["Sigmoid", "Tanh"], None, None)[1](x)`` is ``tanh(x)``.
    """
    alphas, betas = list(alphas or ()), list(betas or ())
    out = []
    for name in names:
        key = name.decode() if isinstance(name, bytes) else name
        if key.lower() not in _RNN_ACTIVATIONS:
            raise OnnxImportError(f"onnx.load: {c.node.op_type} with activation '{key}' is not supported "
                                  f"(supported: {', '.join(sorted(_RNN_ACTIVATIONS))})")
        fn, a, b = _RNN_ACTIVATIONS[key.lower()]
        if a is not None and alphas:
            a = alphas.pop(0)
        if b is not None and betas:
            b = betas.pop(0)
        out.append(lambda x, fn=fn, a=a, b=b: fn(x, a, b))
    if alphas or betas:
        raise OnnxImportError(f"onnx.load: {c.node.op_type} has more activation_alpha/activation_beta values "
                              f"than its activations {list(names)} take")
    return out


def _class_weights(c, target, weight, ignore_index):
    """The targets made safe to gather, and the weight of each target entry (0 where it is
    ignore_index; None when every entry weighs 1)."""
    safe, w = target, None
    if ignore_index is not None:
        keep = el.not_equal(target, ignore_index)
        # ignore_index may lie outside [0, C) (negative in ONNX's tests): gather at 0 there instead.
        safe = el.where(keep, target, np.asarray(0, target.dtype))
    if weight is not None:
        w = numeric.take_along_axis(weight, st.reshape(safe, (-1,)), 0)
        w = st.reshape(w, _shape(target))
    if ignore_index is not None:
        w = el.astype(keep, np.dtype(c.arg(0).dtype)) if w is None else el.where(keep, w, 0.0)
    return safe, w


def _nll(c, logp, target, weight, ignore_index, reduction):
    """ONNX's NegativeLogLikelihoodLoss of log-probabilities logp (N, C, d...) and targets (N, d...)."""
    safe, w = _class_weights(c, target, weight, ignore_index)
    picked = st.squeeze(numeric.take_along_axis(logp, st.expand_dims(safe, 1), 1), 1)
    loss = el.negative(picked) if w is None else el.negative(el.multiply(picked, w))
    if reduction == "none":
        return loss
    total = st.sum(loss)
    if reduction == "sum":
        return total
    if reduction != "mean":
        raise OnnxImportError(f"onnx.load: {c.node.op_type} with reduction='{reduction}' is not supported "
                              f"(ONNX has none, sum and mean)")
    # mean divides by the summed weights of the entries counted (their number when unweighted).
    return el.divide(total, float(np.prod(_shape(target))) if w is None else st.sum(w))


def _loss_inputs(c):
    x, target = c.arg(0), c.arg(1)
    if _ndim(x) < 2:
        raise OnnxImportError(f"onnx.load: {c.node.op_type} needs an input of rank >= 2 (N, C, ...), "
                              f"got shape {_shape(x)}")
    return x, target, c.arg(2), c.attr("ignore_index"), c.attr("reduction", "mean")


@handles("NegativeLogLikelihoodLoss")
def _nll_loss(c):
    x, target, weight, ignore_index, reduction = _loss_inputs(c)
    return _nll(c, x, target, weight, ignore_index, reduction)


@handles("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(c):
    x, target, weight, ignore_index, reduction = _loss_inputs(c)
    logp = log_softargmax(x, 1)
    loss = _nll(c, logp, target, weight, ignore_index, reduction)
    return (loss, logp) if len(c.node.output) > 1 and c.node.output[1] else loss
