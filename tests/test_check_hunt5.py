"""Defects found in gradient verification (hunt of 2026-12-02), each with the figures of the old behaviour."""

import numpy as np
import pytest

import autograd_dag as ad
from tests._checking_helpers import scaling_primitive

# ------------------------------------------- check_grads: an error in one tiny entry of the gradient

_SCALE = np.array([1e3, 1.0, 1.0, 1e-4, 1.0])   # one input entry whose derivative is far smaller
_WRONG = _SCALE.copy()
_WRONG[3] = 2e-4                                  # its derivative wrong by 100%


def _scaling(name, vjp_scale, jvp_scale):
    return scaling_primitive(name, _SCALE, vjp_scale, jvp_scale)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_check_grads_fails_a_gradient_wrong_in_one_tiny_entry_of_the_input(mode):
    # Before: f = sum(x·[1e3, 1, 1, 1e-4, 1]) with d/dx_3 = 2e-4 for 1e-4 PASSED: the error (1e-4·|u v_3|)
    # sat below the projection's tolerance (1e-6 + 1e-5·|⟨g, v⟩| ~ 1e-2·|u|); per entry it is 1e-4 against
    # 1e-6 + 1e-5·2e-4 (torch.autograd.gradcheck, entry by entry, fails it: 1e-4 > 1e-5 + 1e-3·2e-4).
    wrong = _scaling(f"test_hunt5_wrong_{mode}", _WRONG if mode == "rev" else _SCALE,
                     _WRONG if mode == "fwd" else _SCALE)
    x = np.random.default_rng(3).standard_normal(5)
    with pytest.raises(ad.GradientCheckError, match=r"d output \(\) / d input \(3,\): analytic  2\.0"):
        ad.check_grads(lambda x: ad.sum(wrong(x)), (x,), modes=(mode,))
    right = _scaling(f"test_hunt5_right_{mode}", _SCALE, _SCALE)
    ad.check_grads(lambda x: ad.sum(right(x)), (x,), modes=(mode,))
    ad.check_grads(lambda x: ad.sum(right(x)), (x,), modes=(mode,), order=2)


def test_per_input_weights_raise_no_false_alarm_over_a_wide_dynamic_range():
    # Gradient entries from 2e-9 to 5e8 (exp), exact zeros (relu), x ~ 1e8, a sum of squares at |x| ~ 10.
    x = np.linspace(-20.0, 20.0, 40)
    ad.check_grads(lambda t: ad.sum(ad.exp(t)), (x,))
    ad.check_grads(lambda t: ad.sum(ad.relu(t) * t), (x + 0.05,))
    ad.check_grads(lambda t: ad.sum(t ** 3), (x * 1e6,))
    ad.check_grads(lambda t: ad.sum(ad.exp(t * 0.1) * t), (x.reshape(5, 8),), order=2)


# ------------------------------------------- entry by entry: the second look (finer step, then numdiff's steps)

_X4 = np.array([16.47339066, 9.17487983, 10.66934867, 0.47672731])   # sum(x⁴) ~ 9e4 against d/dx_3 = 0.43


def _grad_x4(x):
    return 4 * x ** 3


@pytest.mark.parametrize("case", ["kink", "rounding", "domain"])
def test_full_check_grads_looks_again_before_it_fails(case):
    # Before: with full=True there was no second look, so points the default check passes failed:
    # relu·x + relu at 1e-8 (numeric 0.51 for 1.0, a kink within the step), sum(x⁴) at |x| ~ 16
    # (0.433388 for 0.433381: rounding 8e-5), sqrt at 1e-7 (NaN: x - 1e-6 leaves the domain).
    f, x = {"kink": (lambda t: ad.sum(ad.relu(t) * t + ad.relu(t)), np.array([0.3, 1e-8, -0.7])),
            "rounding": (lambda t: ad.sum(t ** 4), _X4),
            "domain": (lambda t: ad.sum(ad.sqrt(t)), np.array([1e-7, 1.0]))}[case]
    ad.check_grads(f, (x,))
    ad.check_grads(f, (x,), full=True)


def test_full_check_grads_still_fails_a_wrong_entry_where_it_looks_again():
    wrong = ad.primitive("test_hunt5_x4_wrong", lambda u: u ** 4, replace=True,
                         vjp=lambda ct, out, u: (ct * 4 * u ** 3 * np.array([1, 1, 1, 1.001]),),
                         jvp=lambda t, out, u: t[0] * 4 * u ** 3 * np.array([1, 1, 1, 1.001]))
    with pytest.raises(ad.GradientCheckError, match=r"d input \(3,\): analytic  4\.33814.*numeric  4\.33381"):
        ad.check_grads(lambda t: ad.sum(wrong(t)), (_X4,), full=True)


def test_check_gradient_looks_again_with_adaptive_steps():
    # Before: right gradients failed: sum(x⁴) at |x| ~ 16 (0.433368 for 0.433381, abs err 1.3e-5 > 5.3e-6:
    # f's rounding over the step 1e-6; torch's gradcheck and jax's check_grads pass it), sqrt at 1e-7 (NaN).
    ad.check_gradient(lambda x: np.sum(x ** 4), _grad_x4, (_X4,))
    ad.check_gradient(lambda x: np.sum(np.sqrt(x)), lambda x: 0.5 / np.sqrt(x), (np.array([1e-7, 1.0]),))
    ad.check_jacobian(lambda x: x ** 4 + np.sum(x ** 4), lambda x: np.diag(4 * x ** 3) + 4 * x ** 3, (_X4,))
    # ... and a gradient 1e-3 off in that entry (4.3e-4, 80 times the tolerance) still fails there.
    with pytest.raises(ad.GradientCheckError, match=r"analytic  4\.33814.*numeric  4\.33381.*\n.*disagrees with both"):
        ad.check_gradient(lambda x: np.sum(x ** 4), lambda x: _grad_x4(x) * np.array([1, 1, 1, 1.001]), (_X4,))
    with pytest.raises(ad.GradientCheckError, match=r"d input \(0,\): analytic  1\.5827.*numeric  1\.5811"):
        ad.check_gradient(lambda x: np.sum(np.sqrt(x)), lambda x: 0.5 / np.sqrt(x) * np.array([1.001, 1]),
                          (np.array([1e-7, 1.0]),))


# ------------------------------------------- check_hessian: float32, and a large f in float64

_X_SIN = np.array([0.3, -1.2, 0.8, 2.1])


def test_check_hessian_passes_a_right_float32_hessian_and_fails_a_wrong_one():
    # Before: every right float32 Hessian failed: the second difference of the float32 f rounds at ~1e-3
    # (sum(sin(x)): 7.6e-4 where the exact entry is 0, tolerance 4.2e-4). Now the reference is f in float64.
    x32 = _X_SIN.astype(np.float32)
    ad.check_hessian(lambda x: np.sum(np.sin(x)), lambda x: np.diag(-np.sin(x)), (x32,))
    ad.check_hessian(lambda x: np.sum(np.exp(x)) * 0.5, lambda x: np.diag(np.exp(x) * 0.5), (x32,))
    wrong = np.diag([1.0, 1.01, 1.0, 1.0]).astype(np.float32)           # ∂²/∂x₁² 1% off
    with pytest.raises(ad.GradientCheckError, match=r"\(1,\): analytic  9\.41359.e-01, numeric  9\.32039"):
        ad.check_hessian(lambda x: np.sum(np.sin(x)), lambda x: np.diag(-np.sin(x)) @ wrong, (x32,))


def test_check_hessian_of_a_large_f_looks_again_at_other_steps():
    # Before: sum(x⁴) at x = [16.5, 9.2, 10.7, 0.48] (|f| ~ 9e4) gave ∂²/∂x₃² = 2.727409 for 2.727227
    # (abs err 1.8e-4 > 2.8e-5: rounding over the steps 1e-3 and 1e-4), and at |x| ~ 4 the zero
    # entries came out 1.3e-6 (atol 1e-6).
    ad.check_hessian(lambda x: np.sum(x ** 4), lambda x: np.diag(12 * x ** 2), (_X4,))
    ad.check_hessian(lambda x: np.sum(x ** 4), lambda x: np.diag(12 * x ** 2),
                     (np.array([0.48302873, -1.75658647, -4.02365914, -4.20456064]),))
    with pytest.raises(ad.GradientCheckError, match=r"\(3,\) / d input \(3,\): analytic  2\.7299.*numeric  2\.72722"):
        ad.check_hessian(lambda x: np.sum(x ** 4), lambda x: np.diag(12 * x ** 2 * [1, 1, 1, 1.001]), (_X4,))


# ------------------------------------------- a step outside f's domain under pytest's -W error


@pytest.mark.filterwarnings("error")
def test_a_step_outside_the_domain_is_no_warning_under_w_error():
    # Before: numpy's "invalid value encountered in sqrt" of x - 1e-6 < 0, an exception under
    # filterwarnings = error, crashed checks that pass (the README: "sqrt at 1e-7 ... passes").
    x = np.array([1e-7, 1.0])
    ad.check_grads(lambda t: ad.sum(ad.sqrt(t)), (x,))
    ad.check_grads(lambda t: ad.sum(ad.log(t)), (x,))
    ad.check_gradient(lambda t: np.sum(np.sqrt(t)), lambda t: 0.5 / np.sqrt(t), (x,))
