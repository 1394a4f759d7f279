"""Small helpers shared by the test files."""

import inspect
import sys

import numpy as np


def line_of(marker: str, module: str) -> int:
    """Line number, in the test module named ``module``, of its one source line containing ``marker``.

    Tests use it to check that errors and listings name the user's line.
    """
    lines = inspect.getsource(sys.modules[module]).splitlines()
    hits = [i + 1 for i, text in enumerate(lines) if marker in text and "line_of(" not in text]
    assert len(hits) == 1, hits
    return hits[0]


def generator_steps(fn, filename_suffix: str) -> int:
    """How many times generator expressions written in a file ending ``filename_suffix`` resumed during ``fn()``.

    A deterministic measure of a scan hidden in ``any(x is y for y in ...)``: counted,
    not timed.
    """
    import sys
    count = [0]

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "<genexpr>" \
                and frame.f_code.co_filename.endswith(filename_suffix):
            count[0] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count[0]


def central_gradient(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """∂f/∂x of a scalar numpy function by central differences, entry by entry (the independent reference).

    A non-finite entry gets 0: moved by a finite step it does not change.
    """
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        if not np.isfinite(x[i]):
            continue
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def central_jacobian(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """∂f/∂x of a numpy function by central differences, shaped f(x).shape + x.shape (the independent reference).

    Column by column: one pair of evaluations per entry of x.
    """
    x = np.asarray(x, dtype=np.float64)
    out_shape = np.shape(f(x))
    J = np.zeros(out_shape + x.shape)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        J[(Ellipsis,) + i] = (np.asarray(f(xp), dtype=np.float64) - np.asarray(f(xm), dtype=np.float64)) / (2 * eps)
    return J


def reordered_sum_rtol(n_terms: int, dtype=np.float64) -> float:
    """Relative tolerance between two sums of the same ``n_terms`` nonnegative numbers added in different orders.

    numpy's pairwise sum, a BLAS dot and a SIMD reduction add in orders that depend on
    the code path and on the CPU's kernels. Each order is within (n - 1)·u·Σ|x| of the
    exact sum (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2; u = eps/2),
    so two orders differ by at most (n - 1)·eps relative for nonnegative terms. For terms
    of both signs, multiply by Σ|x| and use it as an absolute tolerance.
    """
    return max(n_terms - 1, 1) * float(np.finfo(dtype).eps)


def assert_identical(a, b):
    """Two pytrees of arrays equal leaf by leaf in shape, dtype and every bit (the same numpy calls run twice)."""
    from autograd_dag.tree import flatten
    la, lb = flatten(a)[0], flatten(b)[0]
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)

