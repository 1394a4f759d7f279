"""Silent wrong results found by red-teaming numpy.linalg, special functions and rarer numpy calls.

Each test compares against numpy itself or central finite differences in
float64, never against the code under test.
"""

import numpy as np
import pytest

import autograd_dag as ad


def test_norms_of_integer_entries_are_computed_in_float64_as_numpy_does():
    # |x| and its sums in int8 wrap: |-128| is -128, so the 1-norm of [-128, 5, 100] came back -23.
    v = np.array([-128, 5, 100], dtype=np.int8)
    m = np.array([[100, 27], [-128, 100]], dtype=np.int8)
    big = np.array([10**7, 3], dtype=np.int64)      # 10**21 overflows int64 in x**3
    cases = [(v, o, None) for o in (None, 1, 2, 3, 0.5, -1, np.inf, -np.inf, 0)]
    cases += [(m, o, None) for o in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)]
    cases += [(m, 1, 0), (m, 3, 1), (big, 3, None), (v > 0, 1, None)]
    for x, o, axis in cases:
        ours = np.linalg.norm(ad.Tensor(x), o, axis)
        theirs = np.linalg.norm(x, o, axis)
        assert ours.dtype == theirs.dtype, (x.dtype, o)
        np.testing.assert_allclose(ours.value, theirs, rtol=1e-12, err_msg=f"{x.dtype} ord={o}")
    for o in (1, -1, np.inf, -np.inf, "fro"):
        np.testing.assert_allclose(np.linalg.cond(ad.Tensor(m), o).value, np.linalg.cond(m, o), rtol=1e-12)
    np.testing.assert_allclose(ad.norm(ad.Tensor(v), 1).value, 233.0)
    np.testing.assert_allclose(np.linalg.vector_norm(ad.Tensor(v), ord=np.inf).value, 128.0)
    np.testing.assert_allclose(np.linalg.matrix_norm(ad.Tensor(m), ord=1).value, np.linalg.matrix_norm(m, ord=1))


def test_gradient_of_integer_samples_is_computed_in_float64_as_numpy_does():
    # The differences were taken in the samples' integer type and wrapped: np.gradient of
    # uint8 [200, 100, 3] gave [156, 29.5, 159], numpy [-100, -98.5, -97].
    for f, kw in [(np.array([200, 100, 3], dtype=np.uint8), {}),
                  (np.array([100, -100, 100, 90], dtype=np.int8), {}),
                  (np.array([100, -100, 100, 90], dtype=np.int8), {"edge_order": 2}),
                  (np.array([[100, 27], [-128, 100]], dtype=np.int8), {"axis": 0}),
                  (np.array([[100, 27, 3], [-128, 100, 4]], dtype=np.int16) * 300, {})]:
        ours, theirs = np.gradient(ad.Tensor(f), **kw), np.gradient(f, **kw)
        for o, t in zip(ours if isinstance(ours, (list, tuple)) else [ours],
                        theirs if isinstance(theirs, (list, tuple)) else [theirs]):
            assert o.dtype == t.dtype
            np.testing.assert_array_equal(o.value, t)
