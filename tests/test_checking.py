"""Gradient verification: check_grads, numerical_grad / numerical_jvp, and the pytest helper."""

from __future__ import annotations

import re

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.testing import GradientMismatch, assert_grads_close

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))
W = RNG.standard_normal((4, 2))

# A primitive whose VJP is wrong in one entry only (index 2 gets 3× the
# derivative) and whose JVP is right: the report must point at that entry.
_mask = np.array([1.0, 1.0, 3.0, 1.0])
bad_square = ad.primitive(
    "test_checking_bad_square", lambda x: x * x,
    vjp=lambda ct, out, x: (ct * 2.0 * x * _mask,),
    jvp=lambda t, out, x: t[0] * 2.0 * x, replace=True)

# Right at first order, wrong at second: stop_gradient hides x from the
# derivative of the rule itself.
lazy_square = ad.primitive(
    "test_checking_lazy_square", lambda x: x * x,
    vjp=lambda ct, out, x: (ct * 2.0 * ad.stop_gradient(x),),
    jvp=lambda t, out, x: t[0] * 2.0 * ad.stop_gradient(x), replace=True)

# ------------------------------------------------------------- passing


@pytest.mark.parametrize("f,args", [
    (lambda x, w: ad.tanh(x @ w).sum(), (X, W)),
    (lambda x, w: ad.logistic(x @ w), (X, W)),                       # matrix output
    (lambda x: (ad.exp(x) * 2.0, ad.softplus(x).sum()), (X,)),        # two outputs
    (lambda p: ad.sqrt(p["a"] ** 2 + 1.0) * p["b"][0], ({"a": X, "b": (W[:, 0].copy(),)},)),  # nested
    (lambda t, i: ad.take(t, i).sum(), (X, np.array([2, 0, 2]))),     # integer argument held fixed
    (lambda x: ad.maximum(x, 0.05).mean(), (np.round(X, 1) + 0.01,)),  # away from the kink
], ids=["scalar", "matrix_out", "two_outputs", "nested", "int_arg", "maximum"])
def test_check_grads_passes_on_correct_functions(f, args):
    ad.check_grads(f, args)
    ad.check_grads(f, args, full=True)
    ad.check_grads(f, args, order=2)
    assert_grads_close(f, args, order=2)


def test_no_false_alarm_at_large_magnitudes():
    # The step grows with |x| (2e-2 at x = 2e4): a plain central difference of sin was 7e-5
    # off there, failing a correct rule at rtol 1e-5; extrapolated (Richardson), it is not.
    x = np.array([1e3, 2e4, -5e4])
    ad.check_grads(lambda a: ad.sin(a) * 1e8, (x,), order=2)
    ad.check_grads(lambda a: ad.sin(a) * 1e8, (x,), full=True)
    np.testing.assert_allclose(ad.numerical_grad(lambda a: ad.sum(ad.sin(a)), (x,))[0], np.cos(x), rtol=1e-7, atol=1e-8)


def test_python_scalars_and_lists_are_accepted():
    ad.check_grads(lambda a, b: a * ad.exp(b), (1.5, np.array([0.1, -0.2])))
    # A list is a nested structure (a pytree), not an array: each entry is an argument.
    ad.check_grads(lambda a, bs: a * ad.exp(bs[0]) + bs[1] ** 2, (1.5, [0.1, -0.2]), order=2)

# ------------------------------------------------------------- failing


def test_report_names_argument_mode_index_and_values():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    w = np.array([0.5, -1.0, 1.5, 2.0])

    def loss(x, w):
        return bad_square(w) * x

    with pytest.raises(ad.GradientCheckError) as err:
        ad.check_grads(loss, (x, w))
    report = str(err.value)
    assert report.startswith("check_grads(loss): analytic and numerical derivatives disagree")
    assert "argument 1 ('w'), shape (4,), float64, reverse mode (VJP)" in report
    assert "forward mode (JVP): <u" not in report  # the JVP is right, and the report says so:
    assert "forward mode (JVP) agrees with finite differences for every argument: look at the VJP" in report
    assert "argument 0" not in report   # and x's derivative is right
    assert "1 of 16 Jacobian entries disagree" in report
    # The wrong entry: ∂out[2]/∂w[2] = 2·w[2]·x[2] = 9, reported as 27.
    line = next(ln for ln in report.splitlines() if "d output (2,) / d input (2,)" in ln)
    numbers = dict(re.findall(r"(analytic|numeric)\s+(-?[\d.]+e[+-]\d+)", line))
    assert float(numbers["analytic"]) == pytest.approx(27.0, rel=1e-6)
    assert float(numbers["numeric"]) == pytest.approx(9.0, rel=1e-6)
    assert "abs err 1.80e+01" in line and "rel err 6.67e-01" in line
    assert "projection: analytic" in report and "tolerance" in report


def test_report_names_a_nested_argument_by_its_path():
    def loss(params, x):
        return (params["w"] * x + bad_square(params["b"][1])).sum()

    args = ({"w": np.ones(4), "b": (np.ones(2), np.array([1.0, 2.0, 3.0, 4.0]))}, np.ones(4))
    with pytest.raises(ad.GradientCheckError) as err:
        ad.check_grads(loss, args, modes=("rev",))
    assert "argument 0 ('params')['b'][1], shape (4,)" in str(err.value)
    assert "'x'" not in str(err.value)


def test_wrong_jvp_is_reported_in_forward_mode():
    half = ad.primitive("test_checking_bad_jvp", np.tanh,
                        vjp=lambda ct, out, x: (ct * (1.0 - out * out),),
                        jvp=lambda t, out, x: t[0] * (1.0 - out), replace=True)
    with pytest.raises(ad.GradientCheckError) as err:
        ad.check_grads(lambda v: half(v), (X[0],))
    report = str(err.value)
    assert "forward mode (JVP): <u" in report and "reverse mode (VJP): <vjp" not in report
    assert "reverse mode (VJP) agrees with finite differences for every argument: look at the JVP" in report
    ad.check_grads(lambda v: half(v), (X[0],), modes=("rev",))  # reverse mode alone passes


def test_derivative_of_the_wrong_shape_fails_even_if_its_projection_is_right():
    # The JVP forgets to broadcast its tangent: <u, t> still equals the right
    # projection by numpy broadcasting, so only a shape check can see it.
    lazy = ad.primitive("test_checking_lazy_broadcast", lambda x: np.broadcast_to(x, (2, 3)).copy(),
                        vjp=lambda ct, out, x: (ad.sum(ct, axis=0, keepdims=True),),
                        jvp=lambda t, out, x: t[0], replace=True)
    with pytest.raises(ad.GradientCheckError) as err:
        ad.check_grads(lambda v: lazy(v), (np.ones((1, 3)),))
    assert "forward mode (JVP)" in str(err.value)
    assert "tangent of shape (1, 3) for an output of shape (2, 3)" in str(err.value)
    ad.check_grads(lambda v: lazy(v), (np.ones((1, 3)),), modes=("rev",))


def test_second_order_error_is_caught_only_at_order_2():
    x = np.array([0.5, -1.0, 2.0])
    ad.check_grads(lambda v: lazy_square(v), (x,))
    with pytest.raises(ad.GradientCheckError) as err:
        ad.check_grads(lambda v: lazy_square(v), (x,), order=2)
    assert "order 2" in str(err.value) and "wrongly differentiated" in str(err.value)


# Right at first order in both modes, and its VJP is right at every order; its JVP rule
# records an operation whose own derivative is wrong (3 for 2), so every derivative taken
# through the JVP (grad of a jvp: reverse-over-forward, or jvp of a jvp) is wrong.
_two_x_wrongly_differentiated = ad.primitive(
    "test_checking_two_x", lambda x: 2.0 * x,
    vjp=lambda ct, out, x: (ct * 3.0,), jvp=lambda t, out, x: t[0] * 3.0, replace=True)
square_with_a_bad_jvp_derivative = ad.primitive(
    "test_checking_square_bad_jvp_derivative", lambda x: x * x,
    vjp=lambda ct, out, x: (ct * 2.0 * x,),
    jvp=lambda t, out, x: t[0] * _two_x_wrongly_differentiated(x), replace=True)


def test_second_order_checks_the_derivative_of_the_jvp_rule_too():
    x = np.array([0.3, -1.2])
    f = lambda v: ad.sum(square_with_a_bad_jvp_derivative(v) ** 2)  # noqa: E731
    ad.check_grads(f, (x,))
    ad.check_grads(f, (x,), order=2, modes=("rev",))  # reverse-over-reverse is right
    hv = ad.grad(lambda v: ad.jvp(f, (v,), (np.array([1.0, 0.0]),))[1])(x)  # (H·e0), wrong
    assert not np.allclose(hv, [12 * x[0] ** 2, 0.0])
    for modes in (("rev", "fwd"), ("fwd",)):
        with pytest.raises(ad.GradientCheckError) as err:
            ad.check_grads(f, (x,), order=2, modes=modes)
        assert "order 2" in str(err.value) and "forward mode) is itself wrongly differentiated" in str(err.value)


def test_forward_mode_alone_at_order_2_needs_no_vjp_rule():
    cube = ad.primitive("test_checking_cube_jvp_only", lambda x: x ** 3,
                        jvp=lambda t, out, x: t[0] * 3.0 * x * x, replace=True)
    ad.check_grads(lambda v: cube(v), (np.array([0.5, -1.5]),), order=2, modes=("fwd",))


def test_non_finite_analytic_derivative_fails():
    nan_rule = ad.primitive("test_checking_nan_rule", lambda x: 2.0 * x,
                            vjp=lambda ct, out, x: (ct * np.nan,), jvp=lambda t, out, x: t[0] * 2.0,
                            replace=True)
    with np.errstate(invalid="ignore"), pytest.raises(ad.GradientCheckError, match="reverse mode"):
        ad.check_grads(lambda v: nan_rule(v), (np.ones(2),))


def test_non_finite_finite_differences_fail_instead_of_passing():
    # d/dn x**n = x**n log x has no value at x < 0, and x**(3 ± h) is NaN there: the
    # numerical reference is NaN. Before, NaN compared as "not above the tolerance" and
    # the check passed without comparing anything (power's rule gave 0 at x <= 0, NaN now).
    x = np.array([-0.5, 1.0])
    with np.errstate(invalid="ignore"), pytest.raises(ad.GradientCheckError) as info:
        ad.check_grads(lambda x, n: ad.sum(x ** n), (x, 3.0), modes=("rev",))
    report = str(info.value)
    assert "argument 1 ('n')" in report
    assert "the finite differences are not finite" in report
    assert "1 of 1 Jacobian entries disagree" in report
    assert "argument 0" not in report  # x itself has a finite derivative, and it is right


def test_entries_that_are_not_finite_are_counted_as_disagreeing():
    # The rule's entry 0 is NaN, entry 1 right: the report counted 0 of 2 (NaN > tol is False).
    half_nan = ad.primitive("test_checking_half_nan", lambda x: 2.0 * x,
                            vjp=lambda ct, out, x: (ct * np.array([np.nan, 2.0]),),
                            jvp=lambda t, out, x: t[0] * 2.0, replace=True)
    with np.errstate(invalid="ignore"), pytest.raises(ad.GradientCheckError) as info:
        ad.check_grads(lambda v: ad.sum(half_nan(v)), (np.array([1.0, 4.0]),), modes=("rev",))
    report = str(info.value)
    assert "1 of 2 Jacobian entries disagree" in report
    assert re.search(r"d output \(\) / d input \(0,\): analytic\s+nan, numeric\s+2\.0+e\+00", report)
    assert "d input (1,)" not in report


def test_a_kink_is_named_with_its_one_sided_derivatives():
    # relu'(0) = 0 by convention (the left derivative); the central difference is 1/2.
    with pytest.raises(ad.GradientCheckError) as info:
        ad.check_grads(lambda v: ad.sum(ad.relu(v)), (np.array([0.0, 1.0, -1.0]),), modes=("rev",))
    report = str(info.value)
    assert "1 of 3 Jacobian entries disagree" in report
    assert re.search(r"on a kink: one-sided derivatives\s+0\.0+e\+00 \(left\) and\s+1\.0+e\+00 \(right\); "
                     r"the analytic value is the left one", report)
    # A smooth function's wrong entry is not called a kink.
    with pytest.raises(ad.GradientCheckError) as info:
        ad.check_grads(lambda v: ad.sum(bad_square(v)), (np.array([1.0, 2.0, 3.0, 4.0]),), modes=("rev",))
    assert "kink" not in str(info.value)


def test_integer_arguments_are_held_fixed_and_a_check_of_nothing_is_refused():
    x = np.array([-0.5, 1.0, 2.0])
    ad.check_grads(lambda x, n: ad.sum(x ** n), (x, 3))         # a Python int exponent: held fixed
    ad.check_grads(lambda x, i: ad.sum(x[i] * x), (x, 1))       # a Python int index: held fixed
    for args in [(np.arange(3),), (2,)]:
        with pytest.raises(ad.AutogradDagError, match="no floating-point argument to check .*int64"):
            ad.check_grads(lambda v: ad.sum(v * 2.0), args)


def test_a_function_that_draws_random_numbers_is_refused():
    # Its finite differences would measure the noise: a random mask drawn on every call.
    rng = np.random.default_rng(0)
    with pytest.raises(ad.GradientCheckError, match=r"f gives different values at the same point \(output "
                                                    r"leaf 0, largest change .*\)"):
        ad.check_grads(lambda v: ad.sum(v * (rng.random(3) > 0.5)), (np.ones(3),))
    # The same mask drawn from a generator seeded inside f is a fixed function: checked.
    ad.check_grads(lambda v: ad.sum(v * (np.random.default_rng(1).random(3) > 0.5)), (np.ones(3),))


def test_a_float32_output_of_float64_inputs_is_checked_at_float32_tolerances():
    # Once, the rounding of the float32 output made a right rule "disagree" at float64's step and
    # tolerances (2.13e-01 vs 2.10e-01); then it was refused; now its differences are taken at
    # float32's step (4.9e-3) and compared at sqrt(eps32) (checking._default_tolerances).
    down = ad.primitive("test_checking_casts_down", lambda u: (u * 2).astype(np.float32),
                        vjp=lambda ct, out, u: (ct * 2,), jvp=lambda t, out, u: t[0] * 2, replace=True)
    x = np.array([0.3, -1.2, 2.0])
    ad.check_grads(lambda v: ad.sum(down(v)), (x,))
    ad.check_grads(lambda v: ad.sum(down(v)), (x,), atol=1e-2, rtol=1e-2)


def test_float16_is_refused_without_tolerances():
    x32 = X.astype(np.float32)
    with pytest.raises(ad.AutogradDagError) as err:
        ad.check_grads(lambda x: ad.tanh(x).sum(), (X.astype(np.float16),))
    message = str(err.value)
    assert not isinstance(err.value, ad.GradientCheckError)
    assert "float16" in message and "float64" in message and "atol" in message and "rtol" in message
    ad.check_grads(lambda x: ad.tanh(x).sum(), (x32,))   # float32: its own defaults (test_check_hunt9)
    with pytest.raises(ad.AutogradDagError, match="float16"):
        ad.check_grads(lambda x: ad.tanh(x).sum(), (X.astype(np.float16),), atol=1e-2)  # one is not enough
    ad.check_grads(lambda x: ad.tanh(x).sum(), (x32,), atol=1e-3, rtol=1e-3)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ad.AutogradDagError, match="tuple of arguments"):
        ad.check_grads(lambda x: x, X)
    with pytest.raises(ad.AutogradDagError, match="unknown mode 'backward'"):
        ad.check_grads(lambda x: x, (X,), modes=("backward",))

# ------------------------------------------------- numerical derivatives


def test_numerical_grad_values():
    x = np.array([1.0, -2.0, 3.0])
    (g,) = ad.numerical_grad(lambda v: (v ** 3).sum(), (x,))
    np.testing.assert_allclose(g, 3 * x ** 2, rtol=1e-8)
    gx, gi = ad.numerical_grad(lambda v, i: ad.take(v, i).sum(), (x, np.array([0, 0, 2])))
    np.testing.assert_allclose(gx, [2.0, 0.0, 1.0], rtol=1e-8)
    assert gi is None  # integer argument
    # Nested: the gradient has the argument's structure; big inputs use a scaled step.
    (gp,) = ad.numerical_grad(lambda p: (p["a"] * p["b"]).sum(), ({"a": np.array([1e6]), "b": np.array([3.0])},))
    assert set(gp) == {"a", "b"}
    np.testing.assert_allclose(gp["a"], [3.0], rtol=1e-6)
    np.testing.assert_allclose(gp["b"], [1e6], rtol=1e-8)
    with pytest.raises(ad.AutogradDagError, match="one scalar"):
        ad.numerical_grad(lambda v: v * 2.0, (x,))


def test_numerical_jvp_values():
    x, t = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    out = ad.numerical_jvp(lambda v: (ad.exp(v), v.sum()), (x,), (t,))
    assert isinstance(out, list) and len(out) == 2
    np.testing.assert_allclose(out[0], np.exp(x) * t, rtol=1e-8)
    np.testing.assert_allclose(out[1], t.sum(), rtol=1e-8, atol=1e-10)
    # A boolean output has a zero finite difference away from the switch.
    np.testing.assert_array_equal(ad.numerical_jvp(lambda v: v > 1.5, (x,), (t,))[0], [0.0, 0.0])

# --------------------------------------------------- the pytest helper


def test_assert_grads_close_raises_an_assertion_error_with_the_report():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(AssertionError) as err:
        assert_grads_close(lambda v: bad_square(v), (x,))
    assert isinstance(err.value, GradientMismatch) and isinstance(err.value, ad.GradientCheckError)
    with pytest.raises(ad.GradientCheckError) as direct:
        ad.check_grads(lambda v: bad_square(v), (x,))
    assert str(err.value).replace("<lambda>", "") == str(direct.value).replace("<lambda>", "")
    assert err.value.__cause__ is None and err.value.__suppress_context__
    # pytest hides the helper's own frame from the failure traceback.
    assert assert_grads_close.__code__.co_consts  # a real function
    assert "__tracebackhide__" in assert_grads_close.__code__.co_varnames
    # Keywords reach check_grads.
    assert_grads_close(lambda v: bad_square(v), (x,), modes=("fwd",))
    with pytest.raises(ad.AutogradDagError, match="float16"):
        assert_grads_close(lambda v: v * 2.0, (x.astype(np.float16),))


def _mul_jvp_wrong_for_a_constant_operand(t, out, x, y):
    if t[1] is None:  # y is a constant (mul(x, W)): wrong, as if y were 2
        return t[0] * 2.0
    if t[0] is None:
        return t[1] * x
    return t[0] * y + t[1] * x


def _mul_jvp_keeping_one_tangent(t, out, x, y):
    return t[0] * y if t[0] is not None else t[1] * x  # drops t[1]·x when both are given


@pytest.mark.parametrize("rule, where", [
    (_mul_jvp_wrong_for_a_constant_operand, "argument 0 ('a')"),
    (_mul_jvp_keeping_one_tangent, "all 2 float arguments moved together")])
def test_forward_mode_checks_each_operand_constant_and_all_moving(rule, where):
    # Each argument was moved with a zero tangent for the others, so a JVP rule was never run
    # with None for an operand (a constant: mul(x, W)), and its wrong branch passed.
    mul = ad.primitive(f"test_checking_{rule.__name__}", lambda x, y: x * y,
                       vjp=lambda ct, out, x, y: (ct * y, ct * x), jvp=rule, replace=True)
    x, y = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    with pytest.raises(ad.GradientCheckError) as err:
        ad.check_grads(lambda a, b: mul(a, b), (x, y))
    assert where in str(err.value) and "forward mode (JVP)" in str(err.value)
    assert "look at the JVP rule(s)" in str(err.value)


def test_a_rule_not_linear_in_its_cotangent_or_tangent_is_explained():
    # A VJP that ignores its cotangent (returns cos(u) as if ct were 1) gives the right
    # Jacobian entries, which are computed with unit cotangents (a JVP squaring its tangent
    # too, with unit tangents): the report used to
    # read "0 of 3 Jacobian entries disagree; worst:" and stop. It must say why.
    ignores_ct = ad.primitive(
        "test_checking_ignores_ct", np.sin,
        vjp=lambda ct, out, u: (ad.cos(u),),
        jvp=lambda t, out, u: t[0] * t[0] * ad.cos(u), replace=True)  # t², right for unit t only
    x = np.array([0.3, -1.2, 0.7])
    with pytest.raises(ad.GradientCheckError) as info:
        ad.check_grads(lambda x: ignores_ct(x).sum(), (x,))
    report = str(info.value)
    assert "0 of 3 Jacobian entries disagree; worst:\n" not in report
    assert "reverse mode (VJP)" in report and "forward mode (JVP)" in report
    assert re.search(r"VJP rule .* not linear in its cotangent", report), report
    assert re.search(r"JVP rule .* not linear in its tangent", report), report


def test_arguments_that_are_not_floats_reach_f_as_given():
    # Non-float leaves were wrapped in Tensors: range(n), x.reshape(n, -1) and a
    # function argument failed with TypeErrors from f, and f(x, None) ran the
    # branch for "not None" (Tensor(None) is not None): a different function was checked.
    x = np.array([0.3, -1.2, 0.7, 2.0])
    ad.check_grads(lambda x, n: sum(ad.sin(x[i]) for i in range(n)), (x, 2))
    ad.check_grads(lambda x, n: ad.tanh(x.reshape(n, -1)).sum(), (x, np.int64(2)))
    ad.check_grads(lambda x, act: act(x).sum(), (x, ad.tanh))
    seen = []

    def f(x, option, name, flag):
        seen.append((option, name, flag))
        return ad.exp(x).sum()
    ad.check_grads(f, (x, None, "tanh", True), order=2)
    assert seen and all(s == (None, "tanh", True) for s in seen)
    grad = ad.numerical_grad(lambda x, n: sum(ad.sin(x[i]) for i in range(n)), (x, 2))
    np.testing.assert_allclose(grad[0], [np.cos(0.3), np.cos(-1.2), 0.0, 0.0], atol=1e-8)
    assert grad[1] is None
    assert_grads_close(lambda x, n: sum(ad.sin(x[i]) for i in range(n)), (x, 3))


def test_a_point_within_a_step_of_a_kink_is_not_a_failure():
    # |x| and relu at x = 1e-8 are differentiable (derivative 1), but the default step
    # 1e-6 straddles their kink at 0: the check failed a right derivative and said
    # "f is not differentiable here". A smaller step settles it.
    x = np.array([1e-8, -1e-7, 0.5, -0.3])
    ad.check_grads(lambda x: ad.abs(x).sum(), (x,))
    ad.check_grads(lambda x: ad.nn.functional.relu(x) * np.arange(1.0, 5.0), (x,), order=2)
    ad.check_grads(lambda x, y: (ad.abs(x) * y).sum(), (x, np.array([1.0, 2.0, 3.0, 4.0])))
    # On the kink itself there is no derivative to check: still a failure, named as a kink.
    with pytest.raises(ad.GradientCheckError, match="on a kink"):
        ad.check_grads(lambda x: ad.nn.functional.relu(x).sum(), (np.array([0.0, 0.5]),))
    # A wrong derivative beside a kink is still caught.
    sloppy_abs = ad.primitive("test_checking_sloppy_abs", np.abs,
                              vjp=lambda ct, out, x: (ct * ad.sign(x) * 1.01,),
                              jvp=lambda t, out, x: t[0] * ad.sign(x), replace=True)
    with pytest.raises(ad.GradientCheckError, match="reverse mode"):
        ad.check_grads(lambda x: sloppy_abs(x).sum(), (x,))


def test_options_that_would_check_nothing_or_anything_are_refused():
    # rtol=nan made every tolerance nan, so no comparison could fail: a wrong VJP passed.
    # modes=() and order=0 compared nothing and passed.
    x = np.array([0.5, -1.0, 2.0, 0.1])
    wrong = lambda v: bad_square(v).sum()  # noqa: E731  (its VJP is 3x off in entry 2)
    for options in ({"rtol": float("nan"), "atol": 1e-6}, {"atol": float("nan"), "rtol": 1e-5},
                    {"atol": -1.0, "rtol": 1e-5}, {"eps": 0.0}, {"eps": float("inf")}, {"modes": ()},
                    {"order": 0}, {"order": "2"}, {"order": 1.5}):
        with pytest.raises(ad.AutogradDagError, match=r"check_grads: (eps|atol|rtol|modes|order)"):
            ad.check_grads(wrong, (x,), **options)
    with pytest.raises(ad.AutogradDagError, match=r"check_grads: f must be callable"):
        ad.check_grads(3, (x,))
    # A single mode may be given as a string.
    ad.check_grads(lambda v: ad.tanh(v).sum(), (x,), modes="rev")
    with pytest.raises(ad.GradientCheckError, match="reverse mode"):
        ad.check_grads(wrong, (x,), modes="rev")


def test_report_names_an_output_by_its_key():
    # f returning {'loss': ..., 'aux': ...}: the report said "d output 1 (1,)", leaving the
    # user to guess which entry of the dict output 1 was.
    bad = ad.primitive("test_checking_bad_square_dict", lambda x: x * x,
                       vjp=lambda ct, out, x: (ct * 3.0 * x,), jvp=lambda t, out, x: t[0] * 2.0 * x, replace=True)
    with pytest.raises(ad.GradientCheckError) as info:
        ad.check_grads(lambda x: {"loss": ad.sin(x).sum(), "aux": (x, bad(x))}, (np.array([0.5, 1.0]),),
                       modes=("rev",))
    assert re.search(r"d output \['aux'\]\[1\] \(1,\) / d input \(1,\): analytic  3\.0+e\+00, numeric  2\.0+e\+00",
                     str(info.value)), str(info.value)


def test_the_finer_step_is_believed_only_where_its_rounding_error_is_small():
    # The second look at a 1000x smaller step has 1000x the rounding error: with f large
    # (or the step tiny) its differences are noise, which could land on a wrong derivative.
    from autograd_dag.checking import _Tolerances, _agrees_at_a_finer_step
    tol = _Tolerances(1e-6, 1e-6, 1e-5)
    analytic, numeric = 1.0, 0.9  # a disagreement of 0.1 at the ordinary step
    assert _agrees_at_a_finer_step(analytic, numeric, lambda: (1.0, 1e-4), tol)  # noise well under 0.1
    assert not _agrees_at_a_finer_step(analytic, numeric, lambda: (1.0, 0.05), tol)  # noise as large as it
    assert not _agrees_at_a_finer_step(analytic, numeric, lambda: (0.95, 1e-4), tol)  # still disagrees
    # End to end: a 0.2 % wrong rule on a function of size 1e6 fails at every seed.
    off = ad.primitive("test_checking_off_sin", np.sin, vjp=lambda ct, out, x: (ct * ad.cos(x) * 1.002,),
                       jvp=lambda t, out, x: t[0] * ad.cos(x) * 1.002, replace=True)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(6)
        with pytest.raises(ad.GradientCheckError):
            ad.check_grads(lambda x: off(x) + 1e6, (x,), seed=seed)
