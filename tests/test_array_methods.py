"""ndarray's methods and numpy functions a numpy user reaches for: copy, mT, nbytes, itemsize, take,
compress, searchsorted (before: AttributeError, or np.copy / np.compress refused as having no rule).
References: numpy on the arrays; derivatives against central differences."""

import numpy as np
import pytest

import autograd_dag as ad
from tests.helpers import central_gradient

X = np.arange(12.0).reshape(3, 4) / 7 - 0.5
W = np.random.default_rng(0).normal(size=(3, 4))

CALLS = {   # name: (function of a Tensor or an array; numpy's version runs on X)
    "copy": lambda a: a.copy() * W,
    "np.copy": lambda a: np.copy(a) * W,
    "mT": lambda a: np.stack([a, a * 2]).mT,
    "take": lambda a: a.take([0, 5, 11]),
    "take axis": lambda a: a.take([3, 1], axis=1),
    "np.compress": lambda a: np.compress([True, False, True], a, axis=0),
    "compress short condition": lambda a: a.compress([False, True], axis=1),
    "np.compress flattened": lambda a: np.compress([1, 0, 1, 1], a),
}


@pytest.mark.parametrize("name", CALLS)
def test_values_and_gradients_as_numpy(name):
    f = CALLS[name]
    expected = f(X)
    got = f(ad.Tensor(X, requires_grad=True))
    assert isinstance(got, ad.Tensor) and got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got.value, expected)   # the same numpy operations on the same numbers
    w = np.random.default_rng(1).normal(size=expected.shape)
    g = ad.grad(lambda a: ad.sum(w * f(a)))(X)
    # linear functions: central differences exact up to rounding of O(1) sums (~1e-10 at step 1e-6)
    np.testing.assert_allclose(g, central_gradient(lambda x: np.sum(w * f(x)), X), rtol=1e-7, atol=1e-8)


def test_metadata_and_search_as_numpy():
    t = ad.Tensor(X.astype(np.float32))
    assert (t.nbytes, t.itemsize) == (48, 4)
    assert ad.Tensor(np.sort(X[0])).searchsorted(0.0) == np.sort(X[0]).searchsorted(0.0)
    assert ad.Tensor(np.sort(X[0])).searchsorted(0.0, side="right") == np.sort(X[0]).searchsorted(0.0, side="right")


def test_under_jit_the_copy_follows_the_data_and_is_the_callers():
    step = ad.jit(lambda a: a.copy())
    for k in range(2):
        out = step(X + k)
        np.testing.assert_array_equal(out, X + k)
    x = X.copy()
    out = step(x)
    out[0, 0] = 99.0
    assert x[0, 0] == X[0, 0]


def test_refusals_name_the_problem():
    with pytest.raises(ad.ShapeError, match="mT.*shape \\(4,\\)"):
        ad.Tensor(X[0]).mT
    with pytest.raises(ad.ShapeError, match="compress.*1-d"):
        np.compress(np.ones((2, 2), bool), ad.Tensor(X))
