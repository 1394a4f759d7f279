"""Linear algebra at its edges: the determinant of a 0×0 matrix, the condition number of a singular one.

Issue 24, item 10: the gradient of ``det`` of a 0×0 matrix raised an internal
reshape error (det of nothing is 1, a constant: PyTorch gives a 0×0
gradient); ``ad.linalg.cond`` of a singular matrix gave NaN (the zero matrix)
or raised ``ShapeError`` from ``inv`` (p='fro', 1, inf...) where numpy
returns inf. The reference is numpy; where numpy raises, the library must
raise its own error.
"""

import warnings

import numpy as np
import pytest

import autograd_dag as ad


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0)])
def test_det_of_a_0x0_matrix_is_1_with_an_empty_gradient(shape):
    a = np.zeros(shape)
    np.testing.assert_array_equal(ad.linalg.det(ad.Tensor(a)).value, np.linalg.det(a))
    g = ad.grad(lambda t: ad.sum(ad.linalg.det(t)))(a)          # raised: cannot reshape array of size 0
    assert g.shape == shape and g.dtype == np.float64
    _, tangent = ad.jvp(lambda t: ad.linalg.det(t), (a,), (np.ones(shape),))
    np.testing.assert_array_equal(tangent, np.zeros(shape[:-2]))   # a constant: derivative 0
    h = ad.hessian(lambda t: ad.sum(ad.linalg.det(t)))(a)
    assert h.shape == shape + shape
    gprog = ad.grad_program(ad.trace(lambda t: ad.sum(ad.linalg.det(t)), a))
    assert gprog(a).shape == shape


ORDS = [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"]
# Singular matrices whose singular values and LU pivots are exactly 0 (no rounding noise to
# compare), a stack mixing one with a regular matrix, a regular one, and one with a NaN.
MATRICES = {
    "zero": np.zeros((3, 3)),
    "diag(3, 2, 0)": np.diag([3.0, 2.0, 0.0]),
    "a zero row": np.array([[1.0, 2.0], [0.0, 0.0]]),
    "stack": np.stack([np.diag([1.0, 0.0]), np.array([[2.0, 1.0], [1.0, 3.0]])]),
    "regular": np.array([[2.0, 1.0], [1.0, 3.0]]),
    "nan entry": np.array([[1.0, np.nan], [0.0, 1.0]]),
    "empty": np.zeros((0, 0)),
}


@pytest.mark.parametrize("p", ORDS, ids=str)
@pytest.mark.parametrize("name", list(MATRICES))
def test_cond_matches_numpy_at_singular_matrices(name, p):
    a = MATRICES[name]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.asarray(np.linalg.cond(a, p))
    except np.linalg.LinAlgError:
        if p == "nuc" and not np.isnan(a).any() and a.size:
            # numpy forms the inverse as NaN and its nuclear norm fails ("SVD did not converge"):
            # the library gives the condition number of a singular matrix, inf, as for every other p.
            expected = np.where(np.linalg.matrix_rank(a) < a.shape[-1], np.inf,
                                np.linalg.norm(a, "nuc", axis=(-2, -1)) * np.linalg.norm(
                                    np.linalg.pinv(a), "nuc", axis=(-2, -1)))
            np.testing.assert_allclose(ad.linalg.cond(ad.Tensor(a), p).value, expected, rtol=1e-12)
            return
        with pytest.raises(ad.AutogradDagError, match=r"cond|svd"):
            ad.linalg.cond(ad.Tensor(a), p)
        return
    got = ad.linalg.cond(ad.Tensor(a), p).value
    assert got.shape == expected.shape
    # inf and NaN where numpy has them; finite values from the SVD / inverse and a norm: rounding.
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_cond_of_a_regular_matrix_keeps_its_gradient():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    for p in ORDS:
        f = (lambda t, p=p: ad.linalg.cond(t, p))
        g = ad.grad(f)(a)
        eps, numeric = 1e-6, np.zeros_like(a)
        for i in np.ndindex(a.shape):
            step = np.zeros_like(a)
            step[i] = eps
            numeric[i] = (np.linalg.cond(a + step, p) - np.linalg.cond(a - step, p)) / (2 * eps)
        # Central differences: error O(eps²) and rounding/eps; 1 and inf norms have kinks nowhere near.
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-7, err_msg=str(p))


def test_cond_of_a_stack_with_a_singular_matrix_keeps_the_others_gradient():
    stack = np.stack([np.diag([1.0, 0.0]), np.array([[2.0, 1.0], [1.0, 3.0]])])
    for p in ORDS:
        g = ad.grad(lambda t, p=p: ad.linalg.cond(t, p)[1])(stack)
        alone = ad.grad(lambda t, p=p: ad.linalg.cond(t, p))(stack[1])
        np.testing.assert_array_equal(g[0], 0.0, err_msg=str(p))   # (was NaN: the singular inverse's)
        # The same rules on the same matrix, batched or not: equal to rounding.
        np.testing.assert_allclose(g[1], alone, rtol=1e-12, atol=1e-15, err_msg=str(p))
