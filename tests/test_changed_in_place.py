"""A graph recorded before a parameter was changed in place is refused, never differentiated wrongly.

Optimizers change ``p.value`` in place (so that a jitted function reading the
parameters from a closure sees each step). A graph recorded before a step has
saved the old value; differentiating it after the step mixed old and new values
(before: a silently wrong gradient, 4.28 instead of 5 in the first test).
PyTorch refuses it with version counters; here the step stamps the parameter
with a serial newer than every node recorded so far (core.changed_in_place).
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn


def _graphs_before_and_after(opt_class, **kw):
    p = ad.Tensor(np.ones(2), requires_grad=True, name="p")
    first, second = ad.sum(p * p), ad.sum(p * p * p)  # both recorded at p = 1
    first.backward()
    opt_class([p], **kw).step()
    return p, second


@pytest.mark.parametrize("opt_class, kw", [(ad.optim.SGD, {"lr": 0.1}), (ad.optim.Adam, {"lr": 0.1}),
                                           (ad.optim.AdamW, {"lr": 0.1})])
def test_backward_through_a_graph_recorded_before_a_step_is_refused(opt_class, kw):
    p, second = _graphs_before_and_after(opt_class, **kw)
    grad_before = p.grad.value.copy()
    with pytest.raises(ad.ChangedInPlaceError, match=r"backward: 'p' \(shape \(2,\)\) was changed in place .* "
                                                     r"after 'multiply' \(at .*test_changed_in_place.py:\d+\)"):
        second.backward()
    np.testing.assert_array_equal(p.grad.value, grad_before)  # nothing was accumulated


def test_a_graph_recorded_after_the_step_differentiates_with_the_new_value():
    p, _ = _graphs_before_and_after(ad.optim.SGD, lr=0.1)  # p = 1 - 0.1 * 2 = 0.8
    p.grad = None
    ad.sum(p * p * p).backward()
    np.testing.assert_allclose(p.grad.value, 3 * 0.8 ** 2, rtol=1e-15)


def test_retain_graph_then_step_then_backward_again_is_refused():
    model = nn.MLP([3, 4, 2], rng=0)
    x, y = np.random.default_rng(0).standard_normal((5, 3)), np.array([0, 1, 1, 0, 1])
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward(retain_graph=True)
    ad.optim.SGD(model.parameters(), lr=0.1).step()
    with pytest.raises(ad.ChangedInPlaceError, match=r"'layers\.\d\.(weight|bias)'"):
        loss.backward()


def test_load_state_dict_stamps_the_parameters_it_writes():
    model = nn.Linear(3, 2, rng=0)
    x = np.ones((4, 3))
    out = ad.sum(model(x) ** 2)
    model.load_state_dict(nn.Linear(3, 2, rng=1).state_dict())
    with pytest.raises(ad.ChangedInPlaceError, match="load_state_dict"):
        out.backward()


def test_a_training_loop_is_unaffected():
    # Each step records afresh: the usual loop never meets a stamped parameter.
    model = nn.MLP([3, 8, 2], rng=0)
    opt = ad.optim.Adam(model.parameters(), lr=0.05)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 3))
    y = (x[:, 0] > 0).astype(np.int64)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.value))
    assert losses[-1] < 0.5 * losses[0]
