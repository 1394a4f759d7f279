"""check_grads(batched=True): vmap of the VJP/JVP against the per-example loop (as torch's check_batched_grad)."""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.batched_checking import BATCH

# The derivative of cube_b runs times_3sq_b, whose batching rule a test breaks (on its own primitive).
times_3sq = ad.primitive("times_3sq_b", lambda c, x: c * 3.0 * x * x, replace=True)
cube = ad.primitive("cube_batched", lambda x: x ** 3, vjp=lambda ct, out, x: (times_3sq(ct, x),),
                    jvp=lambda t, out, x: times_3sq(t[0], x), replace=True)


def first_example_for_all(prim, operands, flags, **params):
    # Wrong on purpose: every example gets example 0's cotangent.
    c, x = operands
    return ad.Tensor(np.broadcast_to(c.value[:1], c.shape) * 3.0 * x.value ** 2)


@pytest.fixture
def broken_batching():
    times_3sq.prim.batch = first_example_for_all
    yield
    times_3sq.prim.batch = None


def test_correct_rules_pass_batched():
    rng = np.random.default_rng(0)
    ad.check_grads(lambda x, w: ad.tanh(x @ w), (rng.random((2, 3)), rng.random((3, 4))), batched=True)
    ad.check_grads(lambda x: (cube(x), ad.sum(x)), (rng.random(3),), batched=True)


def test_wrong_batching_rule_named_by_example_and_entry(broken_batching):
    x = np.array([0.5, 1.5, -2.0])
    ad.check_grads(lambda x: cube(x), (x,))   # finite differences cannot see it
    with pytest.raises(ad.GradientCheckError) as info:
        ad.check_grads(lambda x: cube(x), (x,), batched=True)
    msg = str(info.value)
    assert "batched reverse mode (VJP)" in msg and "batched forward mode (JVP)" in msg
    assert f"example 1 of {BATCH}" in msg or f"example 2 of {BATCH}" in msg
    assert "in examples [1, 2]" in msg      # example 0 is the one every example got
    assert "entry (" in msg and "argument 0 ('x')" in msg


def test_batched_follows_the_modes(broken_batching):
    with pytest.raises(ad.GradientCheckError) as info:
        ad.check_grads(lambda x: cube(x), (np.ones(2),), modes=("rev",), batched=True)
    assert "batched reverse mode" in str(info.value) and "forward" not in str(info.value)


def test_unbatched_check_unchanged_by_the_option(broken_batching):
    # batched=False (the default) runs no vmap: the broken rule is not reached.
    ad.check_grads(lambda x: cube(x), (np.ones(2),))
