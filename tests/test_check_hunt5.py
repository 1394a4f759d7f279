"""Defects found in gradient verification (hunt of 2026-12-02), each with the figures of the old behaviour."""

import numpy as np
import pytest

import autograd_dag as ad

# ------------------------------------------- check_grads: an error in one tiny entry of the gradient

_SCALE = np.array([1e3, 1.0, 1.0, 1e-4, 1.0])   # one input entry whose derivative is far smaller
_WRONG = _SCALE.copy()
_WRONG[3] = 2e-4                                  # its derivative wrong by 100%


def _scaling(name, vjp_scale, jvp_scale):
    return ad.primitive(name, lambda x: x * _SCALE,
                        vjp=lambda ct, out, x: (ct * vjp_scale,), jvp=lambda t, out, x: t[0] * jvp_scale,
                        replace=True)


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
