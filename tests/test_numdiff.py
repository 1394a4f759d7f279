"""autograd_dag.numdiff: adaptive central differences with Richardson extrapolation, against exact derivatives."""

import warnings

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.numdiff import NUM_STEPS, derivative, gradient, jacobian

M = np.array([[1.0, 2.0, 0.5], [-1.0, 0.3, 2.0], [0.7, -0.4, 1.1]])
A = np.array([[1.3, 1.0], [1.0, 1.0001]])  # condition number ~ 1e5


def _inverse_jacobian(x):
    inv = np.linalg.inv(x.reshape(2, 2))
    return -np.einsum("ik,lj->ijkl", inv, inv).reshape(4, 4)


# (name, f, exact Jacobian, x, max relative error allowed). The tolerances are about 10x the
# errors measured by benchmarks/bench_numdiff.py (the same functions), so a regression in the
# step choice or the extrapolation shows; central differences at the old fixed step 1e-6 miss
# the badly scaled and near-singular ones by 1e-7 to 1e-1.
CASES = [
    ("exp", np.exp, lambda x: np.diag(np.exp(x)), np.array([-1.0, 0.5, 2.0]), 1e-12),
    ("sin_cos", lambda x: np.sin(x) * np.cos(M @ x),
     lambda x: np.diag(np.cos(x) * np.cos(M @ x)) - (np.sin(x) * np.sin(M @ x))[:, None] * M,
     np.array([0.3, -1.2, 2.5]), 1e-11),
    ("polynomial", lambda x: np.array([x[0] ** 3 * x[1] - 2 * x[1] ** 2, x[0] * x[1] * x[2] + x[2] ** 4]),
     lambda x: np.array([[3 * x[0] ** 2 * x[1], x[0] ** 3 - 4 * x[1], 0.0],
                         [x[1] * x[2], x[0] * x[2], x[0] * x[1] + 4 * x[2] ** 3]]),
     np.array([1.5, -0.7, 2.0]), 1e-11),
    ("large_x", lambda x: x * np.sin(x * 1e-6),
     lambda x: np.diag(np.sin(x * 1e-6) + x * 1e-6 * np.cos(x * 1e-6)), np.array([1.3e6, 2.7e6]), 1e-12),
    ("tiny_x", lambda x: np.sin(1e6 * x), lambda x: np.diag(1e6 * np.cos(1e6 * x)),
     np.array([1.1e-6, 2.3e-6]), 1e-9),
    ("exp_1000x", lambda x: np.exp(1000 * x), lambda x: np.diag(1000 * np.exp(1000 * x)),
     np.array([0.01, -0.005]), 1e-12),
    ("pole", lambda x: 1 / (x - 1), lambda x: np.diag(-1 / (x - 1) ** 2), np.array([1.001, 0.999]), 1e-12),
    ("log_near_0", np.log, lambda x: np.diag(1 / x), np.array([1e-4, 1e-3]), 1e-11),
    ("sqrt_near_0", np.sqrt, lambda x: np.diag(0.5 / np.sqrt(x)), np.array([1e-5, 1e-4]), 1e-11),
    ("inverse", lambda x: np.linalg.inv(x.reshape(2, 2)).ravel(), _inverse_jacobian, A.ravel(), 1e-11),
]


def _rel_errors(est, exact):
    # An entry whose exact value is 0 is measured against the Jacobian's largest entry.
    scale = np.where(exact != 0, np.abs(exact), np.max(np.abs(exact)))
    return np.abs(est - exact) / scale


@pytest.mark.parametrize("name, f, exact, x, rtol", CASES, ids=[c[0] for c in CASES])
def test_accuracy_against_exact_derivatives(name, f, exact, x, rtol):
    with warnings.catch_warnings():
        # Large steps leave log's and sqrt's domain: the engine discards them without a warning.
        warnings.simplefilter("error")
        est = jacobian(f, (x,))
    J = exact(x)
    assert est.value[0].shape == J.shape
    assert np.max(_rel_errors(est.value[0], J)) <= rtol
    assert est.evaluations == 1 + 2 * NUM_STEPS * x.size


@pytest.mark.parametrize("name, f, exact, x, rtol", CASES, ids=[c[0] for c in CASES])
def test_error_estimates_bound_the_true_error(name, f, exact, x, rtol):
    est = jacobian(f, (x,))
    true = np.abs(est.value[0] - exact(x))
    assert np.all(true <= est.error[0])
    # And the estimate is informative, not a blanket bound: within the accuracy the test above asks.
    assert np.all(est.error[0] <= 1e3 * rtol * np.max(np.abs(exact(x))))


def test_better_than_a_fixed_step_where_the_fixed_step_fails():
    # sqrt at 1e-5 with h = 1e-6: the fixed step's truncation error is 1e-3 relative.
    x = np.array([1e-5])
    fixed = (np.sqrt(x + 1e-6) - np.sqrt(x - 1e-6)) / 2e-6
    exact = 0.5 / np.sqrt(x)
    assert abs(fixed[0] / exact[0] - 1) > 1e-4
    assert abs(derivative(np.sqrt, x[0]).value / exact[0] - 1) < 1e-11


def test_float32_arguments_move_in_float32_with_tolerances_from_its_eps():
    seen = set()

    def f(x):
        seen.add(x.dtype)
        return np.sin(x) * np.exp(x)

    x = np.array([0.3, 1.7], dtype=np.float32)
    est = jacobian(f, (x,))
    assert seen == {np.dtype(np.float32)}
    x64 = x.astype(np.float64)
    exact = np.diag(np.exp(x64) * (np.cos(x64) + np.sin(x64)))
    eps32 = np.finfo(np.float32).eps
    # Rounding of f in float32 (eps 1.2e-7) divided by a step of about eps^(1/3): a few eps^(2/3).
    assert np.max(_rel_errors(est.value[0], exact)) <= 10 * eps32 ** (2 / 3)
    assert np.all(np.abs(est.value[0] - exact) <= est.error[0])
    # The float64 steps would be far too fine for float32: the estimate would be rounding only.
    assert np.max(est.error[0]) < 1e-2


def test_shapes_and_pytrees():
    def f(p, n):
        return {"y": p["w"] @ p["b"] * n, "s": (np.sum(p["b"] ** 2),)}

    p = {"w": np.arange(6.0).reshape(2, 3), "b": np.array([1.0, -1.0, 2.0])}
    est = jacobian(f, (p, 3))
    y, (s,) = est.value["y"], est.value["s"]
    # Each output leaf holds the arguments' structure, leaves of shape out.shape + arg.shape.
    assert y[0]["w"].shape == (2, 2, 3) and y[0]["b"].shape == (2, 3) and y[1] is None
    assert s[0]["w"].shape == (2, 3) and s[0]["b"].shape == (3,)
    np.testing.assert_allclose(y[0]["b"], 3 * p["w"], rtol=1e-12)
    np.testing.assert_allclose(y[0]["w"], 3 * np.einsum("ij,k->ijk", np.eye(2), p["b"]), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(s[0]["b"], 2 * p["b"], rtol=1e-12)
    assert est.error["y"][0]["w"].shape == (2, 2, 3) and est.error["y"][1] is None
    assert est.evaluations == 1 + 2 * NUM_STEPS * 9

    g = gradient(lambda p: np.sum(np.sin(p["a"])) * p["c"], ({"a": np.zeros((2, 2)), "c": 2.0},))
    np.testing.assert_allclose(g.value[0]["a"], np.full((2, 2), 2.0), rtol=1e-12)
    np.testing.assert_allclose(g.value[0]["c"], 0.0, atol=1e-14)
    assert g.value[0]["c"].shape == () and g.error[0]["a"].shape == (2, 2)

    d = derivative(lambda t: (np.array([t, t ** 2]), np.sin(t)), 2.0)
    np.testing.assert_allclose(d.value[0], [1.0, 4.0], rtol=1e-12)
    np.testing.assert_allclose(d.value[1], np.cos(2.0), rtol=1e-12)
    assert d.error[0].shape == (2,)


def test_zero_size_arguments_and_tensors():
    est = jacobian(lambda x, y: np.sum(x) + y ** 2, (np.zeros((0, 3)), ad.Tensor(np.array([3.0]))))
    # The output has shape (1,): each Jacobian is (1,) + the argument's shape.
    assert est.value[0].shape == (1, 0, 3) and est.value[1].shape == (1, 1)
    np.testing.assert_allclose(est.value[1], [[6.0]], rtol=1e-12)
    assert est.evaluations == 1 + 2 * NUM_STEPS


def test_no_finite_difference_is_nan_with_an_infinite_error():
    with np.errstate(invalid="ignore"):  # f(x) itself, which the engine leaves to the caller
        est = derivative(np.sqrt, -1.0)
    assert np.isnan(est.value) and est.error == np.inf


@pytest.mark.parametrize("call, match", [
    (lambda: jacobian(3, (np.ones(2),)), "callable"),
    (lambda: jacobian(np.sin, np.ones(2)), "tuple of arguments"),
    (lambda: jacobian(np.sin, (np.ones(2) * 1j,)), "complex"),
    (lambda: jacobian(lambda x: x * 1j, (np.ones(2),)), "complex"),
    (lambda: jacobian(lambda x: np.array(["a"]), (np.ones(2),)), "not a number array"),
    (lambda: jacobian(lambda i: i, (np.arange(3),)), "no floating-point argument"),
    (lambda: jacobian(np.sin, (np.ones(2),), order=3), "order must be 2 or 4"),
    (lambda: jacobian(np.sin, (np.ones(2),), num_steps=3), "num_steps must be a whole number >= 4"),
    (lambda: jacobian(np.sin, (np.ones(2),), step_ratio=1.0), "step_ratio"),
    (lambda: jacobian(np.sin, (np.ones(2),), richardson_terms=-1), "richardson_terms"),
    (lambda: jacobian(np.sin, (np.ones(2),), base_step=0.0), "base_step"),
    (lambda: jacobian(lambda x: x[x > 1.0], (np.array([1.0, 2.0]),)), "changed size"),
    (lambda: gradient(np.sin, (np.ones(2),)), "one scalar"),
    (lambda: derivative(np.sin, np.ones(2)), "must be a scalar"),
])
def test_bad_input_is_refused_clearly(call, match):
    with pytest.raises(ad.AutogradDagError, match=match):
        call()


def test_order_4_and_fewer_terms_are_accurate_too():
    x = np.array([0.7])
    for options in ({"order": 4}, {"richardson_terms": 0}, {"richardson_terms": 1, "num_steps": 8}):
        est = derivative(np.exp, x[0], **options)
        assert abs(est.value / np.exp(0.7) - 1) < 1e-8, options
        assert abs(est.value - np.exp(0.7)) <= est.error


def test_numerical_grad_chooses_its_steps_unless_given_eps():
    # sqrt at 1e-5: the checker's fixed step 1e-6 (extrapolated once) is 1.4e-6 off. The engine is
    # 2e-11 off: the sum's rounding (eps·|f| = 4e-16, f ~ 2) over the small steps the pole needs.
    x = np.array([1e-5, 4.0])
    exact = 0.5 / np.sqrt(x)
    (adaptive,) = ad.numerical_grad(lambda v: ad.sum(ad.sqrt(v)), (x,))
    (fixed,) = ad.numerical_grad(lambda v: ad.sum(ad.sqrt(v)), (x,), eps=1e-6)
    assert np.max(np.abs(adaptive / exact - 1)) < 1e-9
    assert np.max(np.abs(fixed / exact - 1)) > 1e-7
    # Nested arguments, an integer one held fixed, f on Tensors: as before.
    g = ad.numerical_grad(lambda p, i: ad.take(p["a"], i).sum() * p["b"], ({"a": np.ones(3), "b": 2.0}, np.array([0, 2])))
    np.testing.assert_allclose(g[0]["a"], [2.0, 0.0, 2.0], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(g[0]["b"], 2.0, rtol=1e-12)
    assert g[1] is None


def test_check_grads_relooks_with_adaptive_steps_where_the_step_leaves_the_domain():
    # sqrt and log at 1e-7 are differentiable, but x ± 1e-6 leaves their domain: the
    # differences were NaN, and check_grads failed a right derivative. The adaptive re-look
    # takes steps down to 2.4e-8 and settles it.
    with np.errstate(invalid="ignore", divide="ignore"):   # the fixed step's NaN, before the re-look
        for f in (ad.sqrt, ad.log):
            ad.check_grads(f, (np.array([1e-7, 1.0, 3e-7]),))
    # A wrong derivative there is still caught (the re-look believes an estimate only within
    # a tenth of the tolerance).
    wrong = ad.primitive("test_numdiff_sqrt_off_by_1e-4", np.sqrt,
                         vjp=lambda ct, out, x: (ct * 0.5 / out * 1.0001,),
                         jvp=lambda t, out, x: t[0] * 0.5 / out * 1.0001, replace=True)
    for modes in (("rev",), ("fwd",)):
        with pytest.raises(ad.GradientCheckError, match="disagree"), np.errstate(invalid="ignore"):
            ad.check_grads(wrong, (np.array([1e-7, 1.0]),), modes=modes)
