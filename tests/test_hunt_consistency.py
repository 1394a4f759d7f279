"""Defects where two routes to one result disagreed (trace and jit, jit and numpy's aliasing, a circuit
and its picture) or a formula lost accuracy (gelu's tanh form), one test each.

Each test failed before its fix; its comment names what was wrong.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad


def _input_dtypes(prog):
    return [np.dtype(prog.nodes[k].dtype) for k in prog.inputs]


def test_trace_gives_a_python_number_the_dtype_of_the_float_arrays_as_jit_does():
    # ad.trace(f, x32, 2.0) made the Python number a float64 input, so the program computed and returned
    # float64 beside float32 arrays, where ad.jit(f)(x32, 2.0), numpy 2 and jax.jit stay float32.
    def f(x, s):
        return ad.tanh(x * s) + s
    x = np.array([0.5, -1.25, 2.0], np.float32)
    for s in (2.0, 2, True):
        prog = ad.trace(f, x, s)
        assert _input_dtypes(prog) == [np.float32, np.float32], s
        out = prog(x, 3.0)                                   # runs with a Python number: float32
        assert out.dtype == np.float32
        expected = ad.jit(f)(x, 3.0)
        assert expected.dtype == np.float32
        # (the same float32 operations on the same values: exact)
        np.testing.assert_array_equal(out, expected)
    # jax.jit, the reference for weak types: a Python float beside float32 gives float32.
    jax = pytest.importorskip("jax")
    assert np.dtype(jax.jit(lambda a, b: jax.numpy.tanh(a * b) + b)(x, 2.0).dtype) == np.float32
    # In a dict of parameters as well; beside float64 arrays, and alone: float64, as before.
    prog = ad.trace(lambda p, s: p["w"] * p["k"] * s, {"w": x, "k": 2}, 0.5)
    assert _input_dtypes(prog) == [np.float32] * 3
    assert _input_dtypes(ad.trace(f, x.astype(np.float64), 2.0)) == [np.float64] * 2
    assert _input_dtypes(ad.trace(f, 1.0, 2.0)) == [np.float64] * 2
    # A list of numbers is an array, strong as numpy's np.asarray([..]): float64.
    assert _input_dtypes(ad.trace(f, x, [1.0, 2.0, 3.0])) == [np.float32, np.float64]
