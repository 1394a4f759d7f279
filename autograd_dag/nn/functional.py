"""Activations (§4.4) and losses as functions of Tensors.

Everything here is a composition of public Tensor operations, so a loss is
part of the recorded program: it executes, differentiates and renders with
the model. Class scores lie on the LAST axis throughout.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import Tensor
from ..errors import AutogradDagError, ShapeError
from ..primitives.elementwise import (add, astype, divide, logistic, multiply, negative, not_equal, relu, sigmoid,
                                      softplus, step, stop_gradient, subtract, tanh, where)
from ..primitives.elementwise import abs as _abs
from ..primitives.elementwise import exp, greater, less, log, maximum
from ..primitives.indexing import checked_indices, one_hot, take
from ..primitives.linalg.norms import vector_norm
from ..primitives.mathfuncs import erfc
from ..primitives.fused import argmax as _argmax
from ..primitives.fused import layer_norm as _layer_norm
from ..primitives.fused import logsumexp as _logsumexp
from ..primitives.fused import softargmax as _softargmax
from ..primitives.fused import softmax_cross_entropy
from ..primitives.numeric import take_along_axis
from ..primitives.random import dropout_mask, seed_for
from ..primitives.reductions import max as _max
from ..primitives.reductions import mean as _mean
from ..primitives.structure import reshape
from ..primitives.structure import sum as _sum
from . import activations as _more
from .activations import (celu, elu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, leaky_relu, logsigmoid,
                          mish, relu6, selu, silu, softshrink, softsign, tanhshrink)

__all__ = ["relu", "softplus", "step", "logistic", "sigmoid", "tanh", "identity", "softargmax",
           "softmax", "log_softargmax", "log_softmax", "argmax", "max", "logsumexp", "mse_loss",
           "cross_entropy", "nll_loss", "binary_cross_entropy_with_logits", "get_activation", "layer_norm", "dropout",
           "gelu", *_more.__all__, "l1_loss", "huber_loss", "smooth_l1_loss", "kl_div", "binary_cross_entropy",
           "normalize", "cosine_similarity", "pairwise_distance"]


# The Generator of dropout calls given neither a seed nor an rng (as torch's global generator).
_default_rng = np.random.default_rng()


def dropout(x, p: float = 0.5, training: bool = True, *, seed=None, rng=None):
    """Inverted dropout: each entry zeroed with probability ``p``, the rest scaled by 1/(1 − p).

    The identity when ``training`` is False or p = 0. The derivative is the
    same mask (recorded as a product with it). The mask is a pure function of
    a seed (:func:`autograd_dag.primitives.random.dropout_mask`): ``seed`` if
    given; else the enclosing ``ad.random_seed(seed)`` block's; else drawn from
    ``rng`` (a Generator; default: the library's, seeded by the OS). Inside
    ``jit`` or ``trace`` a drawn seed would be frozen into the program, so
    there a seed must come from an argument (``ad.random_seed``), or the call is
    refused. Shapes: (*s) -> (*s).

    Example:
        >>> import numpy as np
        >>> from autograd_dag.nn import functional as F
        >>> sorted(set(F.dropout(np.ones(1000), 0.5, seed=0).value.tolist()))
        [0.0, 2.0]
    """
    if not training or p == 0:
        return x
    stream = 0
    if seed is None:
        seed, stream = seed_for("dropout", _default_rng if rng is None else rng)
    return multiply(x, dropout_mask(x, seed, p, stream))


_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x, approximate: str = "none") -> Tensor:
    """The Gaussian error linear unit x·Φ(x) = x/2·(1 + erf(x/√2)) elementwise (Hendrycks & Gimpel, 2016).

    ``approximate="tanh"``: x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³))), as PyTorch's
    ``F.gelu(x, approximate="tanh")`` and ONNX's Gelu, computed as the same function
    x·σ(2√(2/π)·(x + 0.044715·x³)): accurate relative to the result for x ≪ 0 too,
    where PyTorch's float32 loses 30 % at x = −5. A composite of recorded
    primitives (:func:`~autograd_dag.primitives.mathfuncs.erfc` for the exact form, x/2·erfc(−x/√2)),
    so it differentiates to any order. The exact form is accurate relative to the result for x ≪ 0
    too, where PyTorch's and ONNX's 1 + erf(x/√2) cancels (PyTorch's float32 loses 17 % at x = −5).
    Shapes: (*s) -> (*s).

    Example:
        >>> import autograd_dag as ad
        >>> from autograd_dag.nn import functional as F
        >>> F.gelu(ad.Tensor([-1.0, 0.0, 1.0])).value
        array([-0.15865525,  0.        ,  0.84134475])
    """
    if approximate == "none":
        # Φ(x) = erfc(−x/√2)/2, not (1 + erf(x/√2))/2: for x ≪ 0, 1 + erf cancels (4 % of the float32 value
        # lost at x = −5, all of it from x = −5.9); erfc stays accurate relative to the result.
        return multiply(multiply(x, 0.5), erfc(divide(x, -_SQRT_2)))
    if approximate == "tanh":
        # (1 + tanh(u))/2 is σ(2u), computed without the cancellation of 1 + tanh(u) for x ≪ 0 (30 %
        # of the float32 value lost at x = −5, as PyTorch's); its derivative σ(1 − σ) keeps it too.
        cubic = add(x, multiply(multiply(multiply(x, x), x), 0.044715))
        return multiply(x, logistic(multiply(cubic, 2.0 * _SQRT_2_OVER_PI)))
    raise AutogradDagError(f"gelu: Expect: approximate 'none' or 'tanh'. Actual: {approximate!r}")


def identity(x):
    """x unchanged (the activation of a plain affine layer). Shapes: (*s) -> (*s).

    Example: ``identity(x) is x``.
    """
    return x


def softargmax(x, axis: int = -1, gamma: float = 1.0) -> Tensor:
    """exp(x/γ) / Σ exp(x/γ) over ``axis`` (§4.4.4); γ = 0 gives the hard :func:`argmax`.

    Shapes: (*s) -> (*s), each slice along ``axis`` in the probability simplex.
    Example: ``softargmax(ad.Tensor([0., 0.])).value`` is ``[.5, .5]``.
    """
    if gamma == 0:
        return _argmax(x, axis)
    return _softargmax(x, axis, gamma)


softmax = softargmax


def log_softargmax(x, axis: int = -1, gamma: float = 1.0) -> Tensor:
    """log softargmax_γ(x) = (x − lse_γ(x)) / γ, computed without forming the probabilities.

    Shapes: (*s) -> (*s).
    Example: ``log_softargmax(ad.Tensor([0., 0.])).value`` is ``[-log 2, -log 2]``.
    """
    # Shifted by the maximum first (log softargmax does not depend on it): x − lse(x) rounds lse at
    # x's magnitude, 5e-4 at |x| ~ 1e4 in float32, where (x − m) − lse(x − m) keeps 3e-7 (as PyTorch).
    shape = _shape(x)
    if shape and shape[axis] == 0:
        shifted = x   # an empty axis has no maximum to shift by, and nothing to shift (as softargmax)
    else:
        shifted = subtract(x, stop_gradient(_max(x, axis, keepdims=True)))
    out = subtract(shifted, _logsumexp(shifted, axis, keepdims=True, gamma=gamma))
    return out if gamma == 1.0 else multiply(out, 1.0 / gamma)


log_softmax = log_softargmax


def argmax(x, /, axis: int = -1) -> Tensor:
    """One-hot position of the maximum along ``axis`` (ties: first index); no gradient flows.

    Shapes: (*s) -> (*s).
    Example: ``argmax(ad.Tensor([1., 3.])).value`` is ``[0., 1.]``.
    """
    return _argmax(x, axis)


def max(x, /, axis: int = -1, *, keepdims: bool = False, gamma: float = 0.0) -> Tensor:  # noqa: A001
    """Maximum over ``axis`` with temperature γ: the hard max for γ = 0, else lse_γ (a soft max).

    max(u) ≤ lse_γ(u) ≤ max(u) + γ·log M (§4.4.2), so γ → 0 recovers the max.
    Shapes: (*s) -> s without ``axis`` (kept as 1 with ``keepdims``).
    Example: ``max(ad.Tensor([1., 3.])).value`` is ``3.0``.
    """
    if gamma == 0:
        return _max(x, axis, keepdims=keepdims)
    return _logsumexp(x, axis, keepdims, gamma)


def logsumexp(x, axis: int = -1, keepdims: bool = False, gamma: float = 1.0) -> Tensor:
    """γ·log Σ exp(x/γ) over ``axis``, computed stably (§4.4.2).

    Shapes: (*s) -> s without ``axis`` (kept as 1 with ``keepdims``).
    Example: ``logsumexp(ad.Tensor([0., 0.])).value`` is ``log 2``.
    """
    return _logsumexp(x, axis, keepdims, gamma)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Layer normalization as a function, with PyTorch's signature: (x − μ) / √(σ² + ε) ⊙ weight + bias.

    μ and σ² are over the trailing axes that ``normalized_shape`` (an int or a
    tuple of ints, as in ``F.layer_norm(x, (d,))``) names; ``weight`` and
    ``bias`` (None: 1 and 0) have that shape. One primitive, as :class:`LayerNorm`'s.
    Shapes: x (..., *normalized_shape) -> x's shape.
    Example: ``layer_norm(ad.Tensor([1., 3.]), 2, eps=0.0).value`` is ``[-1., 1.]``.
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else tuple(normalized_shape)
    got = _shape(x)
    if not shape or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in shape) \
            or len(got) < len(shape) or got[len(got) - len(shape):] != tuple(int(d) for d in shape):
        raise ShapeError(f"layer_norm: Expect: normalized_shape, a tuple of ints, naming the trailing axes of x "
                         f"(then weight and bias), as PyTorch's F.layer_norm(x, normalized_shape, weight, bias). "
                         f"Actual: x of shape {got}, normalized_shape {normalized_shape!r}")
    for what, operand in (("weight", weight), ("bias", bias)):
        # As PyTorch: a weight of another shape would broadcast (a (d,) weight across a (k, d) group,
        # or a per-sample one) into a different normalization than the one asked for.
        if operand is not None and _shape(operand) != tuple(int(d) for d in shape):
            raise ShapeError(f"layer_norm: Expect: {what} of shape normalized_shape {tuple(int(d) for d in shape)}. "
                             f"Actual: {what} of shape {_shape(operand)}")
    return _layer_norm(x, 1.0 if weight is None else weight, 0.0 if bias is None else bias,
                       tuple(range(-len(shape), 0)), eps)


_ACTIVATIONS = {"relu": relu, "softplus": softplus, "step": step, "logistic": logistic,
                "sigmoid": sigmoid, "tanh": tanh, "softargmax": softargmax, "softmax": softargmax,
                "argmax": argmax, "gelu": gelu, "identity": identity, "linear": identity, "none": identity,
                **{name: getattr(_more, name) for name in _more.__all__ if name != "glu"}, "swish": silu}


def get_activation(activation):
    """The activation function for a name ('relu', 'tanh', ...), a callable, or None (identity).

    Example: ``get_activation("relu") is relu``.
    """
    if activation is None:
        return identity
    if isinstance(activation, str):
        try:
            return _ACTIVATIONS[activation.lower()]
        except KeyError:
            raise AutogradDagError(f"unknown activation {activation!r}; choose one of "
                                   f"{sorted(_ACTIVATIONS)} or pass a callable") from None
    if callable(activation):
        return activation
    raise AutogradDagError(f"activation must be a name, a callable or None; got {type(activation).__name__}")

# ----------------------------------------------------------------- losses


def _check_reduction(reduction, name: str) -> None:
    if not isinstance(reduction, str):
        # PyTorch's losses take class weights in this position; these take them by keyword.
        weights = (f"give them as {name}(..., weight=w)" if name in _WEIGHTED_LOSSES
                   else "are not supported: weight the 'none' losses yourself")
        raise AutogradDagError(f"{name}: reduction must be 'mean', 'sum' or 'none'; got a "
                               f"{type(reduction).__name__} (class or element weights, PyTorch's third "
                               f"argument, {weights})")


_WEIGHTED_LOSSES = ("cross_entropy", "nll_loss", "binary_cross_entropy_with_logits")


def _reduce(loss: Tensor, reduction: str, name: str) -> Tensor:
    _check_reduction(reduction, name)
    if reduction == "mean":
        return _mean(loss)
    if reduction == "sum":
        return _sum(loss)
    if reduction == "none":
        return loss
    raise AutogradDagError(f"{name}: reduction must be 'mean', 'sum' or 'none'; got {reduction!r}")


def _without_ignored(name: str, target, ignore_index):
    """``(target, keep)``: the target with ``ignore_index`` entries replaced by class 0, and where it was not.

    ``keep`` is None without ``ignore_index``. A Tensor target (a jit input) is
    handled with operations, so the ignored positions follow each call's data.
    """
    if ignore_index is None:
        return target, None
    value = target.value if isinstance(target, Tensor) else np.asarray(target)
    if value.dtype.kind not in "iu":
        raise AutogradDagError(f"{name}: ignore_index applies to integer class indices; this target has "
                               f"dtype {value.dtype} (a distribution over the classes: give ignored rows zero "
                               f"weight instead)")
    if not isinstance(target, Tensor):
        keep = value != ignore_index
        return np.where(keep, value, 0), keep
    keep = not_equal(target, ignore_index)
    return where(keep, target, np.zeros((), value.dtype)), keep


def _reduce_kept(loss: Tensor, keep, reduction: str, name: str) -> Tensor:
    """``_reduce`` over the positions ``keep`` marks (all when None): the mean is over those only, as PyTorch's."""
    _check_reduction(reduction, name)
    if keep is None:
        return _reduce(loss, reduction, name)
    # where, not a product with a 0/1 mask: an ignored position's loss may be infinite.
    loss = where(keep, loss, np.zeros((), loss.dtype))
    if reduction != "mean":
        return _reduce(loss, reduction, name)
    kept = astype(keep, loss.dtype) if isinstance(keep, Tensor) else keep.astype(loss.dtype)
    return divide(_sum(loss), _sum(kept))  # NaN when every position is ignored (as PyTorch gives)


def _shape(x) -> tuple:
    return tuple(np.shape(x.value if isinstance(x, Tensor) else x))


def _target_distribution(name: str, scores: Tensor, target) -> Tensor:
    """The target as a distribution over the last axis of ``scores``: one-hot for class indices."""
    value = target.value if isinstance(target, Tensor) else np.asarray(target)
    if scores.ndim < 1:
        raise ShapeError(f"{name}: Expect: scores with a class axis (..., C). Actual: a scalar")
    if value.dtype.kind in "iu":
        if value.shape != scores.shape[:-1]:
            raise ShapeError(f"{name}: Expect: class indices of shape {scores.shape[:-1]} for scores of "
                             f"shape {scores.shape}. Actual: indices of shape {value.shape}")
        return one_hot(target if isinstance(target, Tensor) else value, scores.shape[-1], dtype=scores.dtype)
    if value.dtype.kind == "f":
        if value.shape != scores.shape:
            raise ShapeError(f"{name}: Expect: integer class indices of shape {scores.shape[:-1]} or "
                             f"class probabilities of shape {scores.shape}. Actual: float target of "
                             f"shape {value.shape}")
        target = _in_precision(target, scores)
        return target if isinstance(target, Tensor) else Tensor(target)
    raise ShapeError(f"{name}: Expect: integer class indices or float probabilities. Actual: dtype {value.dtype}")


def _class_indices(name: str, scores: Tensor, target):
    """The target as integer class indices checked against ``scores`` (an array, or the Tensor given), or None.

    A Tensor target stays a Tensor: inside ``jit`` it is an input of the
    program, and its numbers change from call to call (the range check here
    sees the traced call's).
    """
    value = target.value if isinstance(target, Tensor) else np.asarray(target)
    if value.dtype.kind not in "iu":
        return None
    if scores.ndim < 1:
        raise ShapeError(f"{name}: Expect: scores with a class axis (..., C). Actual: a scalar")
    if value.shape != scores.shape[:-1]:
        raise ShapeError(f"{name}: Expect: class indices of shape {scores.shape[:-1]} for scores of "
                         f"shape {scores.shape}. Actual: indices of shape {value.shape}")
    classes = scores.shape[-1]
    if value.size and (value.min() < 0 or value.max() >= classes):
        bad = int(value.max()) if value.max() >= classes else int(value.min())
        hint = f"; pass ignore_index={bad} to skip those positions" if bad < 0 else ""
        raise ShapeError(f"{name}: index {bad} is out of range for {classes} classes. Expect: class "
                         f"indices in [0, {classes}). Actual: {bad}{hint}")
    # A Tensor's numbers may change from call to call (a jit input): checked on every run too.
    return checked_indices(target, classes, name, f"{classes} classes") if isinstance(target, Tensor) else value


def _picked(scores: Tensor, indices) -> Tensor:
    """scores[..., indices]: each row's score of its class. Shapes: (..., C), (...) -> (...).

    A gather, not ⟨one_hot, scores⟩: no (..., C) one-hot array is made, multiplied
    and summed, forward or backward (the backward scatters into one zero array).
    """
    shape = tuple(indices.shape)
    column = reshape(indices, shape + (1,)) if isinstance(indices, Tensor) else indices[..., None]
    return reshape(take_along_axis(scores, column, -1), shape)


def _as_tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x)


def _in_precision(target, scores: Tensor):
    """A numeric target (labels, regression targets, class probabilities) in the floating dtype of ``scores``.

    Data arrives as float64 (numpy's default, and an input of a ``jit`` program
    keeps it): left so, it would turn a float32 model's loss and gradients
    float64. A Tensor target is converted by an operation (it may be a jit input,
    or require a gradient, which flows back in its own dtype).
    """
    if scores.dtype.kind != "f":
        return target
    if isinstance(target, Tensor):
        return target if target.dtype == scores.dtype else astype(target, scores.dtype)
    return np.asarray(target).astype(scores.dtype, copy=False)


def mse_loss(prediction, target, reduction: str = "mean") -> Tensor:
    """Squared error between ``prediction`` and ``target``, reduced as ``reduction`` says.

    * ``"mean"`` (default, as PyTorch's ``MSELoss``): the mean over every entry of
      (prediction − target)².
    * ``"mean_over_examples"``: the book's squared loss (§4.2 of Blondel & Roulet,
      *The Elements of Differentiable Programming*): ‖y_i − f(x_i, w)‖²₂ averaged
      over the examples i, which run along axis 0, i.e. (1/B) Σ_i Σ_j (·)²; it is
      ``"mean"`` times the number of entries per example.
    * ``"sum"``: the sum over every entry; ``"none"``: the elementwise squares.

    Shapes: prediction and target of the same shape, e.g. (B, D) -> (). Shapes
    must match exactly: broadcasting (B, 1) against (B,) would silently compare
    every pair.
    Example: ``mse_loss(ad.Tensor([[1., 3.]]), np.array([[0., 0.]])).value`` is ``5.0``;
    with ``reduction="mean_over_examples"`` it is ``10.0``.
    """
    prediction = _as_tensor(prediction)
    if _shape(prediction) != _shape(target):
        raise ShapeError(f"mse_loss: Expect: prediction and target of the same shape. Actual: "
                         f"{_shape(prediction)} and {_shape(target)}")
    diff = subtract(prediction, _in_precision(target, prediction))
    squares = multiply(diff, diff)
    if reduction == "mean_over_examples":
        if squares.ndim == 0:
            return squares
        per_example = _sum(squares, tuple(range(1, squares.ndim))) if squares.ndim > 1 else squares
        return _mean(per_example)
    if reduction not in ("mean", "sum", "none"):
        raise AutogradDagError(f"mse_loss: reduction must be 'mean', 'mean_over_examples', 'sum' or "
                               f"'none'; got {reduction!r}")
    return _reduce(squares, reduction, "mse_loss")


def cross_entropy(logits, target, reduction: str = "mean", ignore_index: int | None = None, *,
                  weight=None, label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy of softargmax(logits) against the target: −⟨target, log softargmax(logits)⟩.

    Computed from the logits through logsumexp of the logits shifted by their
    maximum, never through log(softargmax), so it stays finite and exact for
    logits of ±1e4 (to float32's precision in float32).
    ``target`` holds integer class indices or class probabilities (as in
    PyTorch, they need not sum to 1: blended or multi-hot labels). Positions
    whose index is ``ignore_index`` (e.g. -100 for padding, as in PyTorch) add
    nothing and send no gradient; "mean" averages over the other positions.
    PyTorch's options, by keyword: ``weight`` (C,) scales class c's terms by w_c, and
    "mean" with class indices then divides by the sum of the weights of the targets
    (not ignored), as PyTorch; ``label_smoothing`` ε mixes the target with the uniform
    distribution: (1 − ε)·loss + ε/C·Σ_c w_c·(−log p_c) (PyTorch's formula, whose
    smoothing term is normalised as the loss is).
    Shapes: logits (..., C); target (...) ints or (..., C) floats -> () (or (...) with 'none').
    Unlike PyTorch's (N, C, d...), the class axis is the last one: for scores of shape
    (N, C, L) pass ``logits.swapaxes(1, -1)``.
    Example: ``cross_entropy(ad.Tensor([[0., 0.]]), np.array([1])).value`` is ``log 2``.
    """
    logits = _as_tensor(logits)
    _check_reduction(reduction, "cross_entropy")
    smoothing = _label_smoothing("cross_entropy", label_smoothing)
    weight = _class_weight("cross_entropy", weight, logits)
    target, keep = _without_ignored("cross_entropy", target, ignore_index)
    indices = _class_indices("cross_entropy", logits, target)
    if indices is not None:
        # One primitive each way (forward: lse − the picked score; backward:
        # softargmax − one-hot, times the cotangent): see primitives/fused/losses.py.
        nll = softmax_cross_entropy(logits, indices)
        if weight is None and not smoothing:
            return _reduce_kept(nll, keep, reduction, "cross_entropy")
        smooth = None
        if smoothing:
            log_p = log_softargmax(logits)
            smooth = negative(_sum(log_p if weight is None else multiply(log_p, weight), -1))
        return _weighted_class_loss(nll, indices, keep, weight, smooth, smoothing, logits.shape[-1],
                                    reduction, "cross_entropy")
    t = _target_distribution("cross_entropy", logits, target)
    if smoothing:  # PyTorch: the target mixed with the uniform distribution
        t = add(multiply(t, 1.0 - smoothing), smoothing / logits.shape[-1])
    # −⟨t, log softargmax(z)⟩. Writing lse(z) − ⟨t, z⟩ assumed Σt = 1: a multi-hot or mixed target
    # got another value (−0.54 instead of PyTorch's 1.93 for [1, 1, 0]), and the gradient with respect
    # to the target lacked its −lse(z) term.
    terms = multiply(t, log_softargmax(logits))
    # With weights "mean" stays the mean over the rows (PyTorch's for probabilities).
    loss = negative(_sum(terms if weight is None else multiply(terms, weight), -1))
    return _reduce(loss, reduction, "cross_entropy")


def _label_smoothing(name: str, value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0.0 <= value <= 1.0:
        raise AutogradDagError(f"{name}: label_smoothing must be a number in [0, 1] (as in PyTorch); got {value!r}")
    return float(value)


def _class_weight(name: str, weight, scores: Tensor):
    """The class weights (C,) in the precision of ``scores`` (a Tensor stays one: it may be a jit input), or None."""
    if weight is None:
        return None
    shape = _shape(weight)
    classes = scores.shape[-1] if scores.ndim else None
    if shape != (classes,):
        raise ShapeError(f"{name}: Expect: class weights of shape ({classes},), one per class of scores of shape "
                         f"{scores.shape}. Actual: weight of shape {shape}")
    value = weight.value if isinstance(weight, Tensor) else np.asarray(weight)
    if value.dtype.kind not in "iuf":
        raise AutogradDagError(f"{name}: class weights must be numbers; got dtype {value.dtype}")
    if not isinstance(weight, Tensor):
        weight = value.astype(scores.dtype if scores.dtype.kind == "f" else np.float64, copy=False)
    return _in_precision(weight, scores)


def _weighted_class_loss(nll: Tensor, indices, keep, weight, smooth, smoothing: float, classes: int,
                         reduction: str, name: str) -> Tensor:
    """PyTorch's weighted / label-smoothed loss from the per-row −log p[t] and −Σ_c w_c log p_c.

    (1 − ε)·Σ w_t·nll / W + ε/C·Σ smooth / W with W the sum of the weights of the
    targets not ignored ("mean"; W = 1 for "sum"; per row for "none"), ignored rows 0.
    """
    zero = np.zeros((), nll.dtype)
    picked = None
    if weight is not None:
        picked = take(weight, indices)  # w[t] per row
        nll = multiply(nll, picked)
    if keep is not None:  # where, not a product with a 0/1 mask: an ignored position's loss may be infinite
        nll = where(keep, nll, zero)
        smooth = None if smooth is None else where(keep, smooth, zero)
    if reduction == "mean":
        if picked is not None:
            total = _sum(picked if keep is None else where(keep, picked, zero))
        elif keep is not None:
            total = _sum(astype(keep, nll.dtype) if isinstance(keep, Tensor) else keep.astype(nll.dtype))
        else:
            total = np.asarray(nll.size, nll.dtype)
        nll = divide(_sum(nll), total)  # NaN when every position is ignored (as PyTorch gives)
        smooth = None if smooth is None else divide(_sum(smooth), total)
    elif reduction == "sum":
        nll, smooth = _sum(nll), None if smooth is None else _sum(smooth)
    elif reduction != "none":
        raise AutogradDagError(f"{name}: reduction must be 'mean', 'sum' or 'none'; got {reduction!r}")
    if smooth is None:
        return nll
    return add(multiply(nll, 1.0 - smoothing), multiply(smooth, smoothing / classes))  # PyTorch's order


def nll_loss(log_probs, target, reduction: str = "mean", ignore_index: int | None = None, *,
             weight=None) -> Tensor:
    """Negative log-likelihood −⟨target, log_probs⟩ given log-probabilities (e.g. :func:`log_softargmax`).

    ``ignore_index`` and ``weight`` (C,) as in :func:`cross_entropy` (PyTorch's weighted mean).
    Shapes: log_probs (..., C); target (...) ints or (..., C) floats -> () (or (...) with 'none').
    Example: ``nll_loss(ad.Tensor([[-1., -2.]]), np.array([1])).value`` is ``2.0``.
    """
    log_probs = _as_tensor(log_probs)
    _check_reduction(reduction, "nll_loss")
    weight = _class_weight("nll_loss", weight, log_probs)
    target, keep = _without_ignored("nll_loss", target, ignore_index)
    indices = _class_indices("nll_loss", log_probs, target)
    if indices is not None:
        nll = negative(_picked(log_probs, indices))
        if weight is None:
            return _reduce_kept(nll, keep, reduction, "nll_loss")
        return _weighted_class_loss(nll, indices, keep, weight, None, 0.0, log_probs.shape[-1], reduction,
                                    "nll_loss")
    t = _target_distribution("nll_loss", log_probs, target)
    terms = multiply(t, log_probs)
    return _reduce(negative(_sum(terms if weight is None else multiply(terms, weight), -1)), reduction, "nll_loss")


def binary_cross_entropy_with_logits(logits, target, reduction: str = "mean", *, weight=None,
                                     pos_weight=None) -> Tensor:
    """−[y log σ(z) + (1 − y) log(1 − σ(z))] written stably as softplus(z) − y·z.

    PyTorch's options, by keyword: ``pos_weight`` p (broadcast against the target, e.g. one per
    class (C,)) weighs the positive term: −[p·y log σ(z) + (1 − y) log(1 − σ(z))], written
    (1 − y)·z + (1 + (p − 1)·y)·softplus(−z); ``weight`` (broadcast to the loss) scales each
    entry, and "mean" stays the mean over the entries, as PyTorch's.
    Shapes: logits and target (labels in [0, 1]) of the same shape -> () (or that shape with 'none').
    Example: ``binary_cross_entropy_with_logits(ad.Tensor([0.]), np.array([1.])).value`` is ``log 2``.
    """
    name = "binary_cross_entropy_with_logits"
    logits = _as_tensor(logits)
    if _shape(logits) != _shape(target):
        raise ShapeError(f"{name}: Expect: logits and target of the same shape. "
                         f"Actual: {_shape(logits)} and {_shape(target)}")
    _check_reduction(reduction, name)
    target = _in_precision(target, logits)
    if pos_weight is None:
        loss = subtract(softplus(logits), multiply(target, logits))
    else:
        pos_weight = _in_precision(_broadcasting(name, "pos_weight", pos_weight, logits), logits)
        log_weight = add(multiply(subtract(pos_weight, 1.0), target), 1.0)
        loss = add(multiply(subtract(1.0, target), logits), multiply(log_weight, softplus(negative(logits))))
    if weight is not None:
        loss = multiply(loss, _in_precision(_broadcasting(name, "weight", weight, logits), logits))
    return _reduce(loss, reduction, name)


def _broadcasting(name: str, what: str, value, like: Tensor):
    """``value`` (an array or Tensor) checked to broadcast to ``like``'s shape without growing it."""
    shape = _shape(value)
    try:
        grown = np.broadcast_shapes(shape, like.shape)
    except ValueError:
        grown = None
    if grown != like.shape:
        raise ShapeError(f"{name}: Expect: {what} broadcastable to the logits' shape {like.shape}. "
                         f"Actual: {what} of shape {shape}")
    return value if isinstance(value, Tensor) else np.asarray(value)


# ------------------------------------------- PyTorch's regression and embedding losses


def _check_same_shape(name: str, x, target) -> None:
    if _shape(x) != _shape(target):
        raise ShapeError(f"{name}: Expect: input and target of the same shape (broadcasting would compare "
                         f"every pair). Actual: {_shape(x)} and {_shape(target)}")


def _same_shape(name: str, prediction, target):
    _check_same_shape(name, prediction, target)
    return subtract(prediction, _in_precision(target, prediction))


def l1_loss(prediction, target, reduction: str = "mean") -> Tensor:
    """|prediction − target|, reduced; derivative 0 where they are equal (PyTorch's sign(0) = 0).

    Shapes: prediction and target of the same shape -> () (that shape with 'none').
    Example: ``l1_loss(ad.Tensor([1., -3.]), np.zeros(2)).value`` is ``2.0``.
    """
    return _reduce(_abs(_same_shape("l1_loss", _as_tensor(prediction), target)), reduction, "l1_loss")


def huber_loss(prediction, target, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """d²/2 where |d| < δ, else δ·(|d| − δ/2), d = prediction − target (PyTorch's ``huber_loss``).

    Shapes: as :func:`l1_loss`. Example: ``huber_loss(ad.Tensor([3.]), np.zeros(1)).value`` is ``2.5``.
    """
    if not delta > 0:
        raise AutogradDagError(f"huber_loss: Expect: delta > 0. Actual: {delta}")
    d = _same_shape("huber_loss", _as_tensor(prediction), target)
    size = _abs(d)
    loss = where(less(size, delta), multiply(multiply(d, d), 0.5), multiply(subtract(size, delta * 0.5), delta))
    return _reduce(loss, reduction, "huber_loss")


def smooth_l1_loss(prediction, target, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """d²/(2β) where |d| < β, else |d| − β/2 (PyTorch's; β = 0 is the L1 loss). Shapes: as :func:`l1_loss`.

    Example: ``smooth_l1_loss(ad.Tensor([0.5]), np.zeros(1)).value`` is ``0.125``.
    """
    if beta < 0:
        raise AutogradDagError(f"smooth_l1_loss: Expect: beta >= 0. Actual: {beta}")
    if beta == 0:
        return l1_loss(prediction, target, reduction)
    d = _same_shape("smooth_l1_loss", _as_tensor(prediction), target)
    size = _abs(d)
    loss = where(less(size, beta), divide(multiply(d, d), 2.0 * beta), subtract(size, beta * 0.5))
    return _reduce(loss, reduction, "smooth_l1_loss")


def kl_div(log_q, target, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Pointwise KL divergence target·(log target − log_q), PyTorch's ``F.kl_div`` (input = log q).

    A zero target entry adds 0 (0·log 0 = 0). ``log_target``: the target given as log p.
    ``reduction="batchmean"`` divides the sum by the size of axis 0 — the KL divergence per example,
    which "mean" (the mean over every entry, PyTorch's default) is not.
    Shapes: log_q and target of the same shape -> () (that shape with 'none').
    Example: ``kl_div(ad.Tensor(np.log([0.5, 0.5])), np.array([1., 0.]), "sum").value`` is ``log 2``.
    """
    log_q = _as_tensor(log_q)
    _check_same_shape("kl_div", log_q, target)
    target = _in_precision(target, log_q)
    if log_target:
        loss = multiply(exp(target), subtract(target, log_q))
    else:
        positive = greater(target, 0.0)
        log_p = log(where(positive, target, 1.0))   # 1 where p = 0: its term is 0 and its derivative finite
        loss = where(positive, multiply(target, subtract(log_p, log_q)), multiply(target, negative(log_q)))
    if reduction == "batchmean":
        return divide(_sum(loss), log_q.shape[0] if log_q.ndim else 1)
    return _reduce(loss, reduction, "kl_div")


_E_MINUS_100 = math.exp(-100.0)


def binary_cross_entropy(probabilities, target, reduction: str = "mean") -> Tensor:
    """−[y log p + (1 − y) log(1 − p)] from probabilities, each log clamped at −100 as PyTorch's.

    Prefer :func:`binary_cross_entropy_with_logits` (stable for any logit); a probability outside
    [0, 1] gives NaN (PyTorch refuses it, reading the values). Shapes: as :func:`l1_loss`.
    Example: ``binary_cross_entropy(ad.Tensor([0.5]), np.array([1.])).value`` is ``log 2``.
    """
    p = _as_tensor(probabilities)
    _check_same_shape("binary_cross_entropy", p, target)
    y = _in_precision(target, p)
    # log(max(p, e^-100)): the clamp at −100 before the log, so p = 0 gives a finite derivative (0, as
    # PyTorch's (p − y)/max(p(1 − p), 1e-12) where y = p), not 0/0.
    log_p = log(maximum(p, _E_MINUS_100))
    log_1mp = log(maximum(subtract(1.0, p), _E_MINUS_100))
    loss = negative(add(multiply(y, log_p), multiply(subtract(1.0, y), log_1mp)))
    return _reduce(loss, reduction, "binary_cross_entropy")


def normalize(x, p: float = 2.0, axis: int = -1, eps: float = 1e-12) -> Tensor:
    """x / max(‖x‖_p, eps) along ``axis`` (PyTorch's ``F.normalize``, its ``dim=1`` our last axis).

    Shapes: (*s) -> (*s). Example: ``normalize(ad.Tensor([3., 4.])).value`` is ``[0.6, 0.8]``.
    """
    norm = vector_norm(x, ord=p, axis=axis, keepdims=True)
    return divide(x, maximum(norm, eps))


def cosine_similarity(x1, x2, axis: int = -1, eps: float = 1e-8) -> Tensor:
    """⟨x1, x2⟩ / (max(‖x1‖, eps)·max(‖x2‖, eps)) along ``axis`` (PyTorch's, its ``dim=1`` our last axis).

    Shapes: broadcastable (..., d) and (..., d) -> (...).
    Example: ``cosine_similarity(ad.Tensor([1., 0.]), np.array([1., 1.])).value`` is ``1/√2``.
    """
    n1 = maximum(vector_norm(x1, axis=axis), eps)
    n2 = maximum(vector_norm(x2, axis=axis), eps)
    return divide(_sum(multiply(x1, x2), axis), multiply(n1, n2))


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """‖x1 − x2 + eps‖_p over the last axis, as PyTorch's (eps keeps the derivative at x1 = x2 finite).

    Shapes: broadcastable (..., d) and (..., d) -> (...). Example: ``pairwise_distance(ad.Tensor([3., 0.]),
    np.array([0., 4.]), eps=0.).value`` is ``5.0``.
    """
    return vector_norm(add(subtract(x1, x2), eps), ord=p, axis=-1, keepdims=keepdim)
