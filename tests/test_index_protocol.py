"""``Tensor.__index__`` as numpy's: only a 0-d integer array is an integer.

Issue 24, item 10: a one-element integer Tensor of shape (1,) was accepted
as an integer, so ``ndarray[Tensor([2])]`` dropped the axis that
``ndarray[np.array([2])]`` (an index array) keeps.
"""

import operator

import numpy as np
import pytest

import autograd_dag as ad

A = np.arange(12).reshape(4, 3)


@pytest.mark.parametrize("index", [np.array(2), np.array([2]), np.array([[2]]), np.array([1, 2]),
                                   np.array([], dtype=np.int64)], ids=lambda i: f"shape{i.shape}")
def test_an_integer_tensor_indexes_an_ndarray_as_the_same_numpy_array_does(index):
    got, expected = A[ad.Tensor(index)], A[index]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    got, expected = A[:, ad.Tensor(index)], A[:, index]
    assert got.shape == expected.shape


@pytest.mark.parametrize("value", [np.array([2]), np.array([[2]]), np.array(2.0), np.array(True)],
                         ids=["shape(1,)", "shape(1, 1)", "float", "bool"])
def test_only_a_0d_integer_tensor_is_a_python_integer(value):
    with pytest.raises(TypeError):
        operator.index(value)            # numpy's rule, the reference
    with pytest.raises(TypeError, match=r"cannot be used as an integer .*0-d integer Tensor"):
        operator.index(ad.Tensor(value))
    with pytest.raises(TypeError):
        [10, 11, 12][ad.Tensor(value)]


def test_a_0d_integer_tensor_is_a_python_integer():
    assert operator.index(ad.Tensor(np.array(2))) == 2
    assert [10, 11, 12][ad.Tensor(np.int64(1))] == 11
    assert list(range(ad.Tensor(np.array(3, dtype=np.uint8)))) == [0, 1, 2]
