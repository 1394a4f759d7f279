"""Calling a built-in primitive object with parameters as a user writes them (``axis=-1``).

Its public function puts them in the form the derivative and vmap rules read; applied raw
they gave the right value but a broken gradient, and under vmap flipped, rolled or summed
the batch axis. References: numpy for values (per example for vmap), torch for gradients.
"""
import numpy as np
import pytest
import torch

import autograd_dag as ad

P = ad.PRIMITIVES
X = np.arange(1.0, 13.0).reshape(3, 4) ** 1.5 % 7.0   # distinct values: max has one argmax per row
W = np.linspace(-1.0, 2.0, 12).reshape(3, 4)

# (primitive call, numpy of one array, torch of one tensor); each keeps the shape (3, 4) -> (3, k).
CASES = {
    "sum": (lambda t: P["sum"](t, axis=-1, keepdims=True), lambda a: a.sum(-1, keepdims=True),
            lambda t: t.sum(-1, keepdim=True)),
    "max": (lambda t: P["max"](t, axis=-1, keepdims=True), lambda a: a.max(-1, keepdims=True),
            lambda t: t.amax(-1, keepdim=True)),
    "cumsum": (lambda t: P["cumsum"](t, axis=-1), lambda a: np.cumsum(a, -1), lambda t: torch.cumsum(t, -1)),
    "flip": (lambda t: P["flip"](t, axis=-1), lambda a: np.flip(a, -1), lambda t: torch.flip(t, (-1,))),
    "roll": (lambda t: P["roll"](t, shift=1, axis=-1), lambda a: np.roll(a, 1, -1), lambda t: torch.roll(t, 1, -1)),
    "concatenate": (lambda t: P["concatenate"](t, 2.0 * t, axis=-1), lambda a: np.concatenate([a, 2 * a], -1),
                    lambda t: torch.cat([t, 2 * t], -1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_primitive_called_with_user_form_parameters_has_the_right_value_and_gradient(name):
    call, in_numpy, in_torch = CASES[name]
    np.testing.assert_allclose(call(ad.Tensor(X)).value, in_numpy(X), rtol=1e-15)
    w = W[:, :1] if in_numpy(X).shape[-1] == 1 else np.tile(W, (1, in_numpy(X).shape[-1] // 4))
    mine = ad.grad(lambda t: (call(t) * w).sum())(X)
    x = torch.tensor(X, requires_grad=True)
    (in_torch(x) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(mine, x.grad.numpy(), rtol=1e-14, atol=1e-14)   # sums of a few products


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_primitive_called_with_user_form_parameters_under_vmap_maps_each_example(name):
    call, in_numpy, _ = CASES[name]
    expected = np.stack([in_numpy(row) for row in X])   # axis=-1 of one example: its last axis
    np.testing.assert_allclose(ad.vmap(call)(X), expected, rtol=1e-15)


def shadowed_by_user(x):
    """A function of a user's module with a built-in-looking name: not the primitive's public function."""
    raise AssertionError("calling a user's primitive must not call a function of its name")


def test_a_users_primitive_is_applied_as_given():
    ad.primitive("shadowed_by_user", lambda x, *, scale: x * scale,
                 vjp=lambda ct, out, x, *, scale: (ct * scale,))
    prim = P["shadowed_by_user"]
    assert prim.impl.__module__ == __name__
    y = prim(ad.Tensor(np.ones(2), requires_grad=True), scale=3.0)
    np.testing.assert_array_equal(y.value, [3.0, 3.0])
    assert y.prim is prim and y.params == {"scale": 3.0}
