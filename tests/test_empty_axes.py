"""Reductions over an empty axis: numpy's (or PyTorch's) result, or a clear refusal where numpy refuses.

Issue 24, item 10: ``log_softmax`` of a (1, 0) array raised from an inner
``max`` where ``softmax`` and ``logsumexp`` (and PyTorch) return an empty
result, and ``ad.norm`` of an empty vector raised ``ShapeError`` from its
rescaling step where numpy gives 0.0 (and with it ``std``, numpy's NaN).
Every case runs on the value, the VJP and the JVP. The reference is numpy
(a formula written with numpy where numpy has no such function); where numpy
raises, the library must raise its own error naming the operation.
"""

import warnings

import numpy as np
import pytest

import autograd_dag as ad

F = ad.nn.functional


def _np_logsumexp(x, axis):
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(x), axis=axis))


def _np_layer_norm(x, axes, eps=1e-5):
    mu = np.mean(x, axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(np.var(x, axis=axes, keepdims=True) + eps)


def _one_hot(index, n, axis):
    return np.moveaxis(np.eye(n)[index], -1, axis)


# name: (ad function of (x, axis), numpy function of (x, axis), has a derivative)
CASES = {
    "sum": (lambda x, a: ad.sum(x, axis=a), lambda x, a: np.sum(x, axis=a), True),
    "mean": (lambda x, a: ad.mean(x, axis=a), lambda x, a: np.mean(x, axis=a), True),
    "prod": (lambda x, a: ad.prod(x, axis=a), lambda x, a: np.prod(x, axis=a), True),
    "var": (lambda x, a: ad.var(x, axis=a), lambda x, a: np.var(x, axis=a), True),
    "var ddof=1": (lambda x, a: ad.var(x, axis=a, ddof=1), lambda x, a: np.var(x, axis=a, ddof=1), True),
    "std": (lambda x, a: ad.std(x, axis=a), lambda x, a: np.std(x, axis=a), True),
    "max": (lambda x, a: ad.max(x, axis=a), lambda x, a: np.max(x, axis=a), True),
    "min": (lambda x, a: ad.min(x, axis=a), lambda x, a: np.min(x, axis=a), True),
    "nanmax": (lambda x, a: ad.nanmax(x, axis=a), lambda x, a: np.nanmax(x, axis=a), True),
    # (ad.argmax and ad.argmin are the book's: the one-hot position, of x's shape)
    "argmax": (lambda x, a: ad.argmax(x, axis=a), lambda x, a: _one_hot(np.argmax(x, axis=a), x.shape[a], a), False),
    "argmin": (lambda x, a: ad.argmin(x, axis=a), lambda x, a: _one_hot(np.argmin(x, axis=a), x.shape[a], a), False),
    "median": (lambda x, a: ad.median(x, axis=a), lambda x, a: np.median(x, axis=a), True),
    "nansum": (lambda x, a: ad.nansum(x, axis=a), lambda x, a: np.nansum(x, axis=a), True),
    "nanmean": (lambda x, a: ad.nanmean(x, axis=a), lambda x, a: np.nanmean(x, axis=a), True),
    "any": (lambda x, a: ad.any(x, axis=a), lambda x, a: np.any(x, axis=a), False),
    "all": (lambda x, a: ad.all(x, axis=a), lambda x, a: np.all(x, axis=a), False),
    "logsumexp": (lambda x, a: ad.logsumexp(x, axis=a), _np_logsumexp, True),
    "norm": (lambda x, a: ad.norm(x, axis=a), lambda x, a: np.linalg.norm(x, axis=a), True),
    "norm ord=1": (lambda x, a: ad.norm(x, 1, axis=a), lambda x, a: np.linalg.norm(x, 1, axis=a), True),
    "norm ord=3": (lambda x, a: ad.norm(x, 3, axis=a), lambda x, a: np.linalg.norm(x, 3, axis=a), True),
    # numpy 2's rule (numpy 1 refused): the largest of no |x_i| is 0, a norm's least value.
    "norm ord=inf": (lambda x, a: ad.norm(x, np.inf, axis=a), lambda x, a: np.max(np.abs(x), axis=a, initial=0.0), True),
    "norm ord=-inf": (lambda x, a: ad.norm(x, -np.inf, axis=a), lambda x, a: np.linalg.norm(x, -np.inf, axis=a), True),
    "norm ord=0": (lambda x, a: ad.norm(x, 0, axis=a), lambda x, a: np.linalg.norm(x, 0, axis=a), False),
    "linalg.norm": (lambda x, a: ad.linalg.norm(x, axis=a), lambda x, a: np.linalg.norm(x, axis=a), True),
    "cumsum": (lambda x, a: ad.cumsum(x, axis=a), lambda x, a: np.cumsum(x, axis=a), True),
    "cumprod": (lambda x, a: ad.cumprod(x, axis=a), lambda x, a: np.cumprod(x, axis=a), True),
    "sort": (lambda x, a: ad.sort(x, axis=a), lambda x, a: np.sort(x, axis=a), True),
    "softmax": (lambda x, a: F.softmax(x, axis=a),
                lambda x, a: np.exp(x) / np.sum(np.exp(x), axis=a, keepdims=True), True),
    "log_softmax": (lambda x, a: F.log_softmax(x, axis=a),
                    lambda x, a: x - np.expand_dims(_np_logsumexp(x, a), a), True),
    "layer_norm": (lambda x, a: F.layer_norm(x, x.shape[a:]), lambda x, a: _np_layer_norm(x, a), True),
}

# (shape, axis): the reduced axis is empty, or the other axis is (an empty batch)
SHAPES = [((0,), 0), ((2, 0), -1), ((0, 3), 0), ((0, 3), -1)]


def _numpy(f_np, x, axis):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # numpy warns on the mean of nothing
        try:
            return np.asarray(f_np(x, axis))
        except ValueError:
            return None   # numpy refuses (max of nothing has no identity)


@pytest.mark.parametrize("shape,axis", SHAPES)
@pytest.mark.parametrize("name", list(CASES))
def test_reductions_over_an_empty_axis(name, shape, axis):
    f, f_np, differentiable = CASES[name]
    if name == "layer_norm" and axis == 0:
        pytest.skip("layer_norm normalizes trailing axes")
    x = np.zeros(shape)
    expected = _numpy(f_np, x, axis)
    if expected is None:
        with pytest.raises(ad.AutogradDagError, match=r"non-empty axis"):
            f(ad.Tensor(x), axis)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # nor a numpy warning leaking where numpy's own result is quiet
        warnings.filterwarnings("ignore", "Mean of empty slice|Degrees of freedom|invalid value", RuntimeWarning)
        got = f(ad.Tensor(x), axis).value
    assert got.shape == expected.shape
    assert got.dtype.kind == expected.dtype.kind
    # Reductions of nothing are exact (0, 1, NaN, -inf): no tolerance needed.
    np.testing.assert_array_equal(got, expected)
    if not differentiable:
        return
    with warnings.catch_warnings():
        # The derivatives of mean-like functions divide by the count, 0 here; the NaN they make
        # is what numpy's own mean of nothing gives (and warns of), and the test reads no NaN.
        warnings.filterwarnings("ignore", "Mean of empty slice|Degrees of freedom|invalid value", RuntimeWarning)
        g = ad.grad(lambda t: ad.sum(f(t, axis)))(x)
        out, tangent = ad.jvp(lambda t: f(t, axis), (x,), (np.ones_like(x),))
    assert g.shape == x.shape and g.dtype == x.dtype
    assert np.shape(tangent) == expected.shape
    # A function on a space of dimension 0 is constant: its derivative is 0 where it is finite.
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.asarray(tangent)[finite], 0.0)


def test_the_norm_of_an_empty_vector_is_zero_with_an_empty_gradient():
    # ad.norm(ad.Tensor(np.zeros(0))) raised ShapeError from the rescaling step (max of nothing).
    assert float(ad.norm(ad.Tensor(np.zeros(0))).value) == np.linalg.norm(np.zeros(0)) == 0.0
    assert ad.grad(lambda t: ad.norm(t))(np.zeros(0)).shape == (0,)
    np.testing.assert_array_equal(ad.norm(ad.Tensor(np.zeros((0, 3))), axis=0).value, np.zeros(3))


def test_log_softmax_of_an_empty_row_is_empty_as_softmax_is():
    out = F.log_softmax(ad.Tensor(np.zeros((1, 0))), axis=-1)
    assert out.shape == (1, 0) and out.shape == F.softmax(ad.Tensor(np.zeros((1, 0))), axis=-1).shape
    assert ad.grad(lambda t: ad.sum(F.log_softmax(t, axis=-1)))(np.zeros((1, 0))).shape == (1, 0)


def test_losses_over_an_empty_batch_and_an_empty_class_axis():
    # PyTorch: cross_entropy of a batch of 0 is NaN (the mean of nothing), 0 summed; scores without
    # classes have no distribution, refused.
    logits, labels = np.zeros((0, 3)), np.zeros(0, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Mean of empty slice|invalid value", RuntimeWarning)
        assert np.isnan(F.cross_entropy(ad.Tensor(logits), labels).value)
        assert F.cross_entropy(ad.Tensor(logits), labels, reduction="sum").value == 0.0
        assert np.isnan(F.mse_loss(ad.Tensor(np.zeros(0)), np.zeros(0)).value)
    assert ad.grad(lambda t: F.cross_entropy(t, labels, reduction="sum"))(logits).shape == (0, 3)
    with pytest.raises(ad.ShapeError, match=r"cross_entropy: index 0 is out of range for 0 classes"):
        F.cross_entropy(ad.Tensor(np.zeros((2, 0))), np.zeros(2, dtype=np.int64))
