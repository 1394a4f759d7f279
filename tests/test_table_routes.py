"""The primitive table through jacobian, hessian and grad_program (tests/test_vmap.py runs vmap and vmap(grad)).

For each differentiable case of the table (tests/cases_*.py), with the other
arguments held fixed by the table's closure:

- ``jacobian`` w.r.t. each differentiable argument equals the Jacobian by
  central differences of the function run eagerly without recording;
- ``hessian`` of the weighted sum of the outputs, applied to a random
  direction, equals the central difference of the gradient along it (one
  direction: two gradients per argument, where the whole matrix would take
  two per entry and dominate the suite's time; a wrong entry still shows, with
  probability one);
- the gradient program recorded by ``grad_program`` from a trace of that loss,
  run on the case's values, equals ``grad`` of the loss.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad
from tests import helpers
from tests.test_primitives_table import GRAD_CASES, case_id, closure, make_args

# The table's finite-difference tolerances (ad.check_grads's defaults, which every case passes).
ATOL, RTOL = 1e-6, 1e-5


def _float_output(g, wrt_args) -> np.ndarray | None:
    """g's value at wrt_args when it is a float array (something to differentiate), else None."""
    with ad.no_grad():
        probe = np.asarray(g(*[ad.Tensor(a) for a in wrt_args]).value)
    return probe if probe.dtype.kind == "f" else None


def _in_argument(fn, wrt_args, k):
    """fn as a function of argument k alone, the others held at wrt_args."""
    def of(x):
        args = list(wrt_args)
        args[k] = x
        return fn(*args)
    return of


def _held(wrt_args, k):
    """The arguments with all but k as constant Tensors: as the case's closure holds them, so that
    ``a.dot(b)`` is the Tensor method, not numpy's (which refuses a Tensor requiring a gradient)."""
    return [x if i == k else ad.Tensor(x) for i, x in enumerate(wrt_args)]


def _numbers(x) -> np.ndarray:
    return np.asarray(x.value if isinstance(x, ad.Tensor) else x)


def _eager(g):
    """g on numbers, run without recording: the independent function differences are taken of."""
    def run(*args):
        with ad.no_grad():
            return np.asarray(g(*[ad.Tensor(a) for a in args]).value, dtype=np.float64)
    return run


def _weighted_loss(g, shape):
    weights = np.random.default_rng(1).standard_normal(shape)
    return lambda *a: ad.sum(g(*a) * weights)


def _differentiable(case):
    g, wrt_args = closure(case, make_args(case))
    probe = _float_output(g, wrt_args)
    if probe is None:
        pytest.skip("no derivative (integer or boolean output)")
    return g, wrt_args, probe


def _close(got, expected, what):
    # Central differences carry O(eps²) truncation and rounding/eps errors: the table's tolerances,
    # the absolute one scaled by the largest entry so that large Jacobians are compared relatively.
    scale = 1.0 + float(np.max(np.abs(expected), initial=0.0))
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL * scale, err_msg=what)

# ------------------------------------------------------------ jacobian


# A Jacobian batches the cotangent: through the weight gradient of a convolution that is
# per-example weights, the documented loop of tests/test_vmap.py (its warning is expected).
LOOP_WARNING = "ignore:vmap.*looping over the batch:UserWarning"


@pytest.mark.filterwarnings(LOOP_WARNING)
@pytest.mark.parametrize("case", GRAD_CASES, ids=[case_id(c) for c in GRAD_CASES])
def test_jacobian_equals_central_differences(case):
    g, wrt_args, probe = _differentiable(case)
    for k, x in enumerate(wrt_args):
        J = _numbers(ad.jacobian(g, argnums=k)(*_held(wrt_args, k)))
        assert np.shape(J) == probe.shape + x.shape, f"argument {k}"
        _close(J, helpers.central_jacobian(_in_argument(_eager(g), wrt_args, k), x), f"argument {k}")

# ------------------------------------------------------------- hessian


@pytest.mark.filterwarnings(LOOP_WARNING)
@pytest.mark.parametrize("case", GRAD_CASES, ids=[case_id(c) for c in GRAD_CASES])
def test_hessian_equals_central_differences_of_the_gradient(case):
    g, wrt_args, probe = _differentiable(case)
    loss = _weighted_loss(g, probe.shape)
    rng = np.random.default_rng(2)
    eps = 1e-6
    for k, x in enumerate(wrt_args):
        H = _numbers(ad.hessian(loss, argnums=k)(*_held(wrt_args, k)))
        assert np.shape(H) == x.shape * 2, f"argument {k}"
        v = rng.standard_normal(x.shape)
        grad_k = ad.grad(loss, argnums=k)
        gradient = _in_argument(lambda *a: _numbers(grad_k(*a)), _held(wrt_args, k), k)
        expected = (gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)
        Hv = np.tensordot(H, v, axes=x.ndim)
        _close(Hv, expected, f"argument {k}")
        # The Hessian of a twice-differentiable function is symmetric; hessian builds it row by
        # row from reverse-over-reverse sweeps, so a rule wrong in one mode breaks the symmetry.
        n = x.size
        _close(H.reshape(n, n), H.reshape(n, n).T, f"argument {k}: symmetry")

# -------------------------------------------------------- grad_program

@pytest.mark.parametrize("case", GRAD_CASES, ids=[case_id(c) for c in GRAD_CASES])
def test_grad_program_run_on_the_case_values_equals_grad(case):
    g, wrt_args, probe = _differentiable(case)
    loss = _weighted_loss(g, probe.shape)
    positions = tuple(range(len(wrt_args)))
    program = ad.grad_program(ad.trace(loss, *wrt_args))
    got = program(*wrt_args)
    got = got if isinstance(got, tuple) else (got,)
    expected = ad.grad(loss, argnums=positions)(*wrt_args)
    assert len(got) == len(expected)
    for k, (a, b) in enumerate(zip(got, expected)):
        assert np.shape(a) == np.shape(b), f"argument {k}"
        # The same rules on the same values, but the program shares repeated subexpressions
        # (without_common_subexpressions) where grad computes them twice: a few ulps apart.
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13, err_msg=f"argument {k}")
