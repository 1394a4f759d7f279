"""Checks of a user's own derivatives (checking_user): hand-written gradients, Jacobians, VJPs, JVPs, Hessians.

Every derivative here is written out by hand in numpy in this file (the reference
is the calculus, never the code under test); wrong ones are made from right ones
by one deliberate change, and the report must name the entry that changed.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.testing import (GradientMismatch, assert_gradient, assert_hessian, assert_jacobian, assert_jvp,
                                  assert_vjp)

RNG = np.random.default_rng(7)


def check_fails(check, *a, **kw) -> str:
    with pytest.raises(ad.GradientCheckError) as info:
        check(*a, **kw)
    return str(info.value)


# ---- real functions and their hand-written derivatives -------------------------------------------

X = RNG.standard_normal((6, 3))
Y = np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])


def logistic_loss(w, b):
    z = X @ w + b
    return np.mean(np.log1p(np.exp(-Y * z)))


def logistic_grad(w, b):
    z = X @ w + b
    s = -Y / (1.0 + np.exp(Y * z)) / len(Y)      # d loss / d z
    return X.T @ s, np.sum(s)


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def rosen_hess(x):
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i, i + 1] = H[i + 1, i] = -400 * x[i]
        H[i + 1, i + 1] += 200
    return H


def softmax_xent(logits, labels):
    """Mean cross-entropy of softmax(logits) against integer labels, written stably."""
    m = logits.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.sum(np.exp(logits - m), axis=1))
    return np.mean(lse - logits[np.arange(len(labels)), labels])


def softmax_xent_grad(logits, labels):
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    p[np.arange(len(labels)), labels] -= 1.0
    return p / len(labels), None     # labels are integers: held fixed, their entry is anything


MLP_X = RNG.standard_normal((5, 4))


def mlp_loss(params):
    h = np.tanh(MLP_X @ params["W1"] + params["b1"])
    return 0.5 * np.sum((h @ params["W2"]) ** 2)


def mlp_grad(params):
    h = np.tanh(MLP_X @ params["W1"] + params["b1"])
    out = h @ params["W2"]
    d_h = out @ params["W2"].T * (1 - h ** 2)
    return {"W1": MLP_X.T @ d_h, "b1": d_h.sum(axis=0), "W2": h.T @ out}


MLP_PARAMS = {"W1": RNG.standard_normal((4, 3)) * 0.5, "b1": RNG.standard_normal(3) * 0.1,
              "W2": RNG.standard_normal((3, 2)) * 0.5}


def test_correct_gradients_of_real_functions_pass():
    ad.check_gradient(logistic_loss, logistic_grad, (RNG.standard_normal(3), 0.3))
    ad.check_gradient(rosen, rosen_grad, (np.array([0.5, 1.2, -0.3, 0.9]),))
    labels = np.array([0, 2, 1, 2])
    ad.check_gradient(softmax_xent, softmax_xent_grad, (RNG.standard_normal((4, 3)), labels))
    ad.check_gradient(mlp_loss, mlp_grad, (MLP_PARAMS,))
    assert_gradient(mlp_loss, lambda p: (mlp_grad(p),), (MLP_PARAMS,))   # a 1-tuple is accepted too


def test_an_entry_off_by_1e_3_relative_is_named():
    def off(x):
        g = rosen_grad(x)
        g[2] *= 1 + 1e-3
        return g
    report = check_fails(ad.check_gradient, rosen, off, (np.array([0.5, 1.2, -0.3, 0.9]),))
    assert "1 of 4 Jacobian entries disagree" in report
    assert "d output () / d input (2,)" in report
    assert "argument 0 ('x')" in report
    # rosen runs on Tensors (numpy dispatch): autodiff is the third opinion, siding with the differences.
    assert "disagrees with both autodiff and finite differences in 1 entry (d output () / d input (2,))" in report
    assert "it is the one that is wrong" in report


def test_a_wrong_entry_of_a_nested_gradient_names_the_parameter():
    def off(p):
        g = mlp_grad(p)
        g["W1"][3, 1] += 1e-3 * max(1.0, abs(g["W1"][3, 1]))
        return g
    report = check_fails(ad.check_gradient, mlp_loss, off, (MLP_PARAMS,))
    assert re.search(r"argument 0 \('params'\)\['W1'\], shape \(4, 3\).*\n.*1 of 12 Jacobian entries", report)
    assert "d output () / d input (3, 1)" in report
    assert "['b1']" not in report and "['W2']" not in report


def test_a_transposed_jacobian_fails_naming_the_entries():
    A = np.array([[1.0, 2.0, -1.0], [0.0, 3.0, 0.5], [4.0, 1.0, 2.0]])

    def f(x):
        return np.tanh(A @ x)

    def jac(x):
        return (1 - np.tanh(A @ x) ** 2)[:, None] * A
    x = np.array([0.1, -0.2, 0.3])
    ad.check_jacobian(f, jac, (x,))
    report = check_fails(ad.check_jacobian, f, lambda x: jac(x).T, (x,))
    assert "6 of 9 Jacobian entries disagree" in report
    worst = re.findall(r"d output \((\d),\) / d input \((\d),\): analytic\s+([-+.\de]+), numeric\s+([-+.\de]+)", report)
    assert len(worst) == 5
    for r, c, analytic, numeric in worst:
        r, c = int(r), int(c)
        assert r != c      # the diagonal of a transposed Jacobian is right
        assert float(numeric) == pytest.approx((1 - np.tanh(A @ x) ** 2)[r] * A[r, c], rel=1e-6, abs=1e-6)
        assert float(analytic) == pytest.approx((1 - np.tanh(A @ x) ** 2)[c] * A[c, r], rel=1e-6, abs=1e-6)


def test_a_wrong_sign_near_a_kink_fails_and_a_right_one_passes_by_the_finer_look():
    f = lambda x: np.sum(np.abs(x) * x ** 2 + np.abs(x))  # noqa: E731
    right = lambda x: 3 * x * np.abs(x) + np.sign(x)      # noqa: E731
    # 1e-8 lies within the default step (1e-6) of the kink at 0: central differences straddle it
    # there and only the finer step sees the derivative, which is right.
    x = np.array([1e-8, 0.7, -1.3])
    ad.check_gradient(f, right, (x,))
    wrong_sign = lambda x: 3 * x * np.abs(x) + np.where(np.abs(x) < 1e-3, -np.sign(x), np.sign(x))  # noqa: E731
    report = check_fails(ad.check_gradient, f, wrong_sign, (x,))
    assert "1 of 3 Jacobian entries disagree" in report and "d output () / d input (0,)" in report


def test_on_the_kink_the_report_gives_the_one_sided_derivatives_and_no_verdict():
    report = check_fails(ad.check_gradient, lambda x: np.sum(np.abs(x)), lambda x: np.where(x >= 0, 1.0, -1.0),
                         (np.array([0.0, 1.0]),))
    assert "on a kink: one-sided derivatives -1.000000e+00 (left) and  1.000000e+00 (right)" in report
    assert "it is the one that is wrong" not in report


def test_a_hessian_missing_a_term_fails_naming_its_entries():
    x = np.array([0.5, 1.2, -0.3])
    ad.check_hessian(rosen, rosen_hess, (x,))

    def missing(x):
        H = rosen_hess(x)
        H[1, 1] -= 1200 * x[1] ** 2      # the -400 (x2 - x1²) term's derivative, forgotten
        return H
    report = check_fails(ad.check_hessian, rosen, missing, (x,))
    assert "1 of 9 Jacobian entries disagree" in report
    assert "d output (1,) / d input (1,)" in report
    assert f"analytic {rosen_hess(x)[1, 1] - 1200 * 1.2 ** 2: .6e}" in report
    # Our autodiff's Hessian (grad of grad of rosen on Tensors) is the third opinion.
    assert ("the hand-written Hessian disagrees with both autodiff and finite differences in 1 entry "
            "(d output (1,) / d input (1,)): it is the one that is wrong") in report


def test_hessian_of_two_arguments_in_args_of_args_layout():
    def f(x, y):
        return np.sum(x ** 2 * y[0]) + y[1] ** 3

    def hess(x, y):
        return ((np.diag(np.full(2, 2 * y[0])), np.stack([2 * x, np.zeros(2)], axis=1)),
                (np.stack([2 * x, np.zeros(2)]), np.array([[0.0, 0.0], [0.0, 6 * y[1]]])))
    args = (np.array([0.3, -0.4]), np.array([1.5, 0.2]))
    ad.check_hessian(f, hess, args)

    def no_cross(x, y):
        (a, b), (c, d) = hess(x, y)
        return (a, np.zeros_like(b)), (c, d)
    report = check_fails(ad.check_hessian, f, no_cross, args)
    assert "argument 1 ('y')" in report and "argument 0 ('x'), shape" not in report
    assert "d output 0 (0,) / d input (0,)" in report


def test_pytrees_in_and_out_for_vjp_jvp_and_jacobian():
    def f(p):
        return {"s": np.sin(p["a"]) * p["b"][0], "c": (p["a"] @ p["b"][1],)}
    p = {"a": np.array([0.2, -0.5, 1.1]), "b": (np.array(2.0), np.array([1.0, 3.0, -2.0]))}

    def vjp_f(p, ct):
        return {"a": ct["s"] * np.cos(p["a"]) * p["b"][0] + ct["c"][0] * p["b"][1],
                "b": (np.sum(ct["s"] * np.sin(p["a"])), ct["c"][0] * p["a"])}

    def jvp_f(p, t):
        return {"s": np.cos(p["a"]) * t["a"] * p["b"][0] + np.sin(p["a"]) * t["b"][0],
                "c": (t["a"] @ p["b"][1] + p["a"] @ t["b"][1],)}

    def jac_f(p):
        a, (s, w) = p["a"], p["b"]
        return {"s": {"a": np.diag(np.cos(a) * s), "b": (np.sin(a), np.zeros((3, 3)))},
                "c": ({"a": w, "b": (np.array(0.0), a)},)}
    ad.check_vjp(f, vjp_f, (p,))
    ad.check_jvp(f, jvp_f, (p,))
    ad.check_jacobian(f, jac_f, (p,))
    assert_vjp(f, vjp_f, (p,))

    def jvp_wrong(p, t):
        out = jvp_f(p, t)
        return {"s": out["s"], "c": (out["c"][0] - p["a"] @ t["b"][1],)}   # the second operand's term, dropped
    report = check_fails(ad.check_jvp, f, jvp_wrong, (p,))
    assert "argument 0 ('p')['b'][1], shape (3,)" in report
    assert "d output ['c'][0] () / d input (0,)" in report


def test_float32_functions_are_checked_with_tolerances_from_their_precision():
    W = RNG.standard_normal((3, 3)).astype(np.float32)

    def f(x):
        assert x.dtype == np.float32       # f gets its arguments in their own dtype
        return np.sum(np.tanh(W @ x) ** 2)

    def grad(x):
        t = np.tanh(W @ x)
        return W.T @ (2 * t * (1 - t ** 2))
    x = np.array([0.3, -0.2, 0.5], dtype=np.float32)
    ad.check_gradient(f, grad, (x,))

    def off(x):
        g = grad(x)
        g[1] *= 1.05
        return g
    report = check_fails(ad.check_gradient, f, off, (x,))
    assert "shape (3,), float32" in report and "d output () / d input (1,)" in report


def test_nan_in_the_users_gradient_is_a_failure_named_first():
    def nan_grad(x):
        g = rosen_grad(x)
        g[3] = np.nan
        return g
    report = check_fails(ad.check_gradient, rosen, nan_grad, (np.array([0.5, 1.2, -0.3, 0.9]),))
    worst = [l for l in report.splitlines() if l.strip().startswith("d output")]
    assert "d input (3,): analytic  nan" in worst[0]


def test_a_gradient_of_the_wrong_shape_names_the_argument():
    w, b = RNG.standard_normal(3), 0.3
    with pytest.raises(ad.GradientCheckError, match=r"returned shape \(1, 3\) for argument 0 \('w'\), shape "
                                                    r"\(3,\), float64; expected \(3,\)"):
        ad.check_gradient(logistic_loss, lambda w, b: (logistic_grad(w, b)[0][None], logistic_grad(w, b)[1]),
                          (w, b))
    with pytest.raises(ad.GradientCheckError, match=r"gradient returned \(array\(3,\),\); expected "
                                                    r"\(array\(3,\), array\(\)\)"):
        ad.check_gradient(logistic_loss, lambda w, b: (logistic_grad(w, b)[0],), (w, b))
    with pytest.raises(ad.GradientCheckError, match=r"VJP returned shape \(2,\) for argument 1 \('y'\)"):
        ad.check_vjp(lambda x, y: x * y, lambda x, y, ct: (ct * y, ct[:2] * x[:2]),
                     (np.ones(3), np.ones(3)))
    with pytest.raises(ad.GradientCheckError, match=r"JVP returned shape \(3,\) for output 1; expected \(2,\)"):
        ad.check_jvp(lambda x: (x, x[:2]), lambda x, t: (t, t), (np.ones(3),))


def test_without_tensors_the_report_says_autodiff_could_not_run():
    def f(x):
        return float(np.sum(np.asarray(x, dtype=np.float64) ** 2))
    ad.check_gradient(f, lambda x: 2 * x, (np.array([1.0, 2.0]),))
    report = check_fails(ad.check_gradient, f, lambda x: 2 * x + np.array([0, 1e-2]), (np.array([1.0, 2.0]),))
    assert "d output () / d input (1,)" in report
    assert "(autodiff: f " in report and "compared with finite differences only" in report
    report = check_fails(ad.check_gradient, f, lambda x: 2 * x + np.array([0, 1e-2]), (np.array([1.0, 2.0]),),
                         three_way=False)
    assert "autodiff" not in report


def test_assert_forms_raise_assertion_errors_with_the_report():
    with pytest.raises(AssertionError) as info:
        assert_gradient(rosen, lambda x: -rosen_grad(x), (np.array([0.5, 1.2]),))
    assert isinstance(info.value, GradientMismatch) and "check_gradient(rosen)" in str(info.value)
    with pytest.raises(GradientMismatch, match="1 of 4 Jacobian entries"):
        assert_hessian(rosen, lambda x: rosen_hess(x) * np.array([[1, 1], [1, 2.0]]), (np.array([0.5, 1.2]),))
    with pytest.raises(GradientMismatch, match="check_jacobian"):
        assert_jacobian(np.sin, lambda x: np.diag(np.sin(x)), (np.array([0.5, 1.2]),))
    with pytest.raises(GradientMismatch, match="check_jvp"):
        assert_jvp(np.sin, lambda x, t: np.cos(x) * t * 1.01, (np.array([0.5, 1.2]),))
    assert_jvp(np.sin, lambda x, t: np.cos(x) * t, (np.array([0.5, 1.2]),))


def test_refusals():
    with pytest.raises(ad.AutogradDagError, match="f must return one scalar"):
        ad.check_gradient(np.sin, np.cos, (np.ones(2),))
    with pytest.raises(ad.AutogradDagError, match="no floating-point argument"):
        ad.check_gradient(lambda n: float(n), lambda n: 0.0, (np.array([3]),))
    with pytest.raises(ad.AutogradDagError, match="check_jacobian: eps must be a finite number > 0"):
        ad.check_jacobian(np.sin, np.cos, (np.ones(2),), eps=-1.0)
    with pytest.raises(ad.AutogradDagError, match="check_vjp: the VJP function must be callable"):
        ad.check_vjp(np.sin, None, (np.ones(2),))
    with pytest.raises(ad.GradientCheckError, match="different values at the same point"):
        ad.check_gradient(lambda x: np.sum(x) + np.random.default_rng().standard_normal(), np.ones_like,
                          (np.ones(2),))


def test_autodiff_runs_only_when_a_comparison_fails():
    seen = []

    def f(x):
        seen.append(type(x))
        return np.sum(np.sin(x))
    ad.check_gradient(f, np.cos, (np.array([0.1, 0.2]),))
    assert ad.Tensor not in seen
    check_fails(ad.check_gradient, f, np.sin, (np.array([0.1, 0.2]),))
    assert ad.Tensor in seen


def test_f_undefined_within_a_step_is_a_failure_that_says_so():
    with np.errstate(invalid="ignore", divide="ignore"):    # sqrt(-1e-6) and 1/sqrt(0), on purpose
        report = check_fails(ad.check_gradient, lambda x: np.sum(np.sqrt(x)), lambda x: 0.5 / np.sqrt(x),
                             (np.array([0.0, 4.0]),))
    assert "d output () / d input (0,)" in report and "some finite differences are not finite" in report
