"""Verifying gradients in your tests — an example to copy into your own pytest suite.

``assert_grads_close(f, args)`` compares the derivatives autograd_dag computes
for ``f`` (reverse mode and forward mode) with central finite differences,
and fails with a report that names the argument, the mode and the worst
Jacobian entries (index, analytic value, numerical value, errors).

Three rules make such tests reliable:

1. Check in float64. float32 differences are too coarse to tell a wrong
   derivative from rounding (the check refuses them unless you pass atol/rtol).
2. Use small random inputs with a fixed seed, away from kinks: relu, abs and
   maximum are not differentiable where their inputs tie, and a finite
   difference straddling the kink measures nothing useful.
3. Check ``order=2`` when you will differentiate twice (Hessians, HVPs,
   gradient penalties): a rule can be right at first order and still be
   written in a way that breaks the second.
"""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.testing import assert_grads_close

rng = np.random.default_rng(0)   # fixed seed: a failure is reproducible

# --------------------------------------------------------------------------
# 1. A custom loss, written with ordinary autograd_dag operations.
# --------------------------------------------------------------------------


def softmax_cross_entropy(logits, labels_one_hot, temperature):
    """Mean cross-entropy of softmax(logits / temperature) against one-hot labels."""
    log_probs = logits / temperature - ad.logsumexp(logits / temperature, axis=-1, keepdims=True)
    return -(labels_one_hot * log_probs).sum(axis=-1).mean()


@pytest.mark.parametrize("batch,classes", [(1, 3), (4, 5)])   # include a size-1 edge case
def test_cross_entropy_gradients(batch, classes):
    logits = rng.standard_normal((batch, classes))
    labels = np.eye(classes)[rng.integers(0, classes, batch)]
    # Every float argument is checked, including the temperature (a scalar);
    # pass arguments you do not want checked as integers, or close over them.
    assert_grads_close(softmax_cross_entropy, (logits, labels, 0.7), order=2)


def test_cross_entropy_gradient_wrt_logits_only():
    logits = rng.standard_normal((3, 4))
    labels = np.eye(4)[[0, 3, 1]]
    # A closure fixes the labels: only the logits are checked.
    assert_grads_close(lambda z: softmax_cross_entropy(z, labels, 1.0), (logits,))


def test_model_with_parameters_in_a_dict():
    # Arguments may be nested dicts / tuples / lists of arrays, as a model's parameters usually are.
    params = {"W": rng.standard_normal((3, 2)) * 0.5, "b": np.zeros(2)}
    x = rng.standard_normal((5, 3))

    def loss(params, x):
        h = ad.tanh(x @ params["W"] + params["b"])
        return (h * h).mean()

    # On failure the report names e.g. "argument 0 ('params')['W']".
    assert_grads_close(loss, (params, x))

# --------------------------------------------------------------------------
# 2. A custom primitive: your own numpy implementation and derivative rules.
# --------------------------------------------------------------------------
# The rules are written with autograd_dag operations (not numpy), so that
# they are recorded too and can be differentiated again (order=2 below).


def _log_cosh(x):
    # log(cosh(x)), computed stably: |x| + log1p(e^{-2|x|}) - log 2.
    a = np.abs(x)
    return a + np.log1p(np.exp(-2.0 * a)) - np.log(2.0)


log_cosh = ad.primitive(
    "example_log_cosh", _log_cosh,
    # VJP: given the output cotangent ct, return one cotangent per input.
    vjp=lambda ct, out, x: (ct * ad.tanh(x),),
    # JVP: given the input tangents (a tuple), return the output tangent.
    jvp=lambda tangents, out, x: tangents[0] * ad.tanh(x),
    # Optional: the shape/dtype rule, used to explain errors and check programs.
    shape=lambda x: (x.shape, x.dtype),
    replace=True,   # lets pytest re-import this module without a name clash
)


@pytest.mark.parametrize("shape", [(), (7,), (2, 3)])
def test_log_cosh_primitive(shape):
    x = rng.standard_normal(shape) * 3.0
    # The value, against an independent formula ...
    np.testing.assert_allclose(log_cosh(ad.Tensor(x)).value, np.log(np.cosh(x)), rtol=1e-12)
    # ... and both derivative rules, at first and second order.
    assert_grads_close(lambda v: log_cosh(v), (x,), order=2)


def test_log_cosh_inside_a_loss():
    # Gradients flow through the custom primitive like through the built-ins.
    pred, target = rng.standard_normal(6), rng.standard_normal(6)
    assert_grads_close(lambda p, t: log_cosh(p - t).mean(), (pred, target))

# --------------------------------------------------------------------------
# 3. What a failure looks like.
# --------------------------------------------------------------------------


def test_a_wrong_rule_is_reported():
    # The VJP forgot a factor 2 (d/dx x^2 = 2x); the JVP is right.
    square = ad.primitive("example_bad_square", lambda x: x * x,
                          vjp=lambda ct, out, x: (ct * x,),
                          jvp=lambda t, out, x: t[0] * 2.0 * x, replace=True)
    with pytest.raises(AssertionError) as failure:
        assert_grads_close(lambda v: square(v), (np.array([1.0, -2.0, 3.0]),))
    report = str(failure.value)
    # e.g.  argument 0 ('v'), shape (3,), float64, reverse mode (VJP): <vjp(u), v>:
    #         ...
    #         d output (2,) / d input (2,): analytic  3.000000e+00, numeric  6.000000e+00, ...
    assert "argument 0 ('v')" in report and "reverse mode" in report
    assert "forward mode (JVP) agrees" in report   # so the VJP is the rule to fix
    assert "d output (2,) / d input (2,): analytic  3.000000e+00, numeric  6.000000e+00" in report
