"""Defects found by an adversarial hunt in the transformations (jit, vmap, jvp, grad), one test each.

Each test failed before its fix; its comment names what was wrong.
"""

from __future__ import annotations

import numpy as np

import autograd_dag as ad


def test_jit_gives_a_python_int_argument_the_dtype_of_the_float_arrays():
    # ad.jit(f)(w32, 3) computed in float64 (a Python int became a float64 input) where the eager
    # call f(Tensor(w32), 3), numpy and jax.jit all stay float32 (a Python number is weak).
    def f(w, k):
        return w * k + ad.sum(w) * k
    w = np.array([0.5, -1.25, 2.0], np.float32)
    eager = f(ad.Tensor(w), 3).value
    assert eager.dtype == np.float32
    for k in (3, True):
        out = ad.jit(f)(w, k)
        assert out.dtype == np.float32, k
        # (the same float32 operations on the same values: exact)
        np.testing.assert_array_equal(out, f(ad.Tensor(w), k).value)
    g = ad.jit(ad.grad(lambda w, k: ad.sum(w ** k)))(w, 2)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, 2 * w)
    # Beside float64 arrays, and alone, as before: float64.
    assert ad.jit(f)(w.astype(np.float64), 3).dtype == np.float64
    assert ad.jit(lambda k: k * 2)(3).dtype == np.float64
