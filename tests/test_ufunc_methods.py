"""numpy's ufunc methods (reduce, accumulate, outer) on Tensors record the functions they name.

Before: every one raised NotDifferentiableError on a Tensor requiring a gradient, and on other
Tensors ran on the values (so under jit a TracingError). References: numpy on the arrays, and
central differences for the derivatives.
"""

import numpy as np
import pytest

import autograd_dag as ad
from tests.helpers import central_gradient

X = np.random.default_rng(0).normal(size=(3, 4))

CASES = [
    lambda x: np.add.reduce(x),
    lambda x: np.add.reduce(x, axis=1),
    lambda x: np.add.reduce(x, None),
    lambda x: np.multiply.reduce(x, 1, keepdims=True),
    lambda x: np.maximum.reduce(x, axis=0),
    lambda x: np.minimum.reduce(x, axis=(0, 1)),
    lambda x: np.fmax.reduce(x, 1),
    lambda x: np.logaddexp.reduce(x, axis=1),
    lambda x: np.add.accumulate(x, axis=1),
    lambda x: np.multiply.accumulate(x),
    lambda x: np.multiply.outer(x[0], x[1]),
    lambda x: np.subtract.outer(x, x[0, :2]),
    lambda x: np.add.reduce(x, dtype=np.float32),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_values_dtypes_and_gradients_as_numpy(k):
    f = CASES[k]
    expected = f(X)
    got = f(ad.Tensor(X, requires_grad=True))
    assert isinstance(got, ad.Tensor) and got.shape == expected.shape and got.dtype == expected.dtype
    # logaddexp.reduce folds pairwise where ours is one stable log-sum-exp: a few ulps apart.
    np.testing.assert_allclose(got.value, expected, rtol=1e-12, atol=1e-12)
    if expected.dtype == np.float64:
        w = np.random.default_rng(k).normal(size=expected.shape)
        g = ad.grad(lambda x: ad.sum(w * f(x)))(X)
        # central differences with step 1e-6 on O(1) values: truncation ~1e-12, rounding ~1e-10
        np.testing.assert_allclose(g, central_gradient(lambda x: np.sum(w * f(x)), X), rtol=1e-6, atol=1e-7)


def test_jit_and_vmap_follow_the_data():
    step = ad.jit(lambda x: np.add.reduce(x, axis=1) + np.maximum.reduce(x, axis=1))
    for seed in (1, 2):
        x = np.random.default_rng(seed).normal(size=(3, 4))
        np.testing.assert_allclose(step(x), x.sum(1) + x.max(1), rtol=1e-13)
    ints = np.arange(12).reshape(3, 4)
    assert np.array_equal(ad.jit(lambda i: np.add.accumulate(i, axis=1))(ints), np.add.accumulate(ints, axis=1))
    batched = ad.vmap(lambda v: np.multiply.outer(v, v))(X)
    np.testing.assert_allclose(batched, np.einsum("bi,bj->bij", X, X), rtol=1e-15)


@pytest.mark.parametrize("call, named", [
    (lambda x: np.maximum.accumulate(x), "np.maximum.accumulate"),
    (lambda x: np.add.reduce(x, initial=1.0), "initial"),
    (lambda x: np.add.reduceat(x, [0, 2]), "np.add.reduceat"),
])
def test_methods_without_a_rule_are_refused_by_name(call, named):
    with pytest.raises(ad.NotDifferentiableError, match=named):
        call(ad.Tensor(X, requires_grad=True))
