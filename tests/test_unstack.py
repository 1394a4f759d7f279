"""``ad.unstack``: values, errors, and the O(L) cost of its recorded backward sweep."""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.errors import ShapeError


def _getitem_nodes(outputs):
    seen, stack, nodes = set(), list(outputs), []
    while stack:
        t = stack.pop()
        if id(t) in seen or t.prim is None:
            continue
        seen.add(id(t))
        if t.prim.name == "getitem":
            nodes.append(t)
        stack.extend(t.parents)
    return nodes


@pytest.mark.parametrize("n", [0, 1, 8, 9, 100])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_unstack_gives_the_slices_in_order(n, requires_grad):
    value = np.random.default_rng(n).standard_normal((2, n, 3))
    slices = ad.unstack(ad.Tensor(value, requires_grad=requires_grad), axis=1)
    assert len(slices) == n
    for i, s in enumerate(slices):
        np.testing.assert_array_equal(s.value, value[:, i])
    if n:
        np.testing.assert_array_equal(ad.stack(slices, axis=1).value, value)


def test_unstack_of_an_array_and_inside_no_grad():
    x = np.arange(6.0).reshape(3, 2)
    assert [s.value.tolist() for s in ad.unstack(x, axis=-1)] == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    with ad.no_grad():
        t = ad.Tensor(np.ones((40, 2)), requires_grad=True)
        # Nothing is recorded: the slices are cut straight from x (40 getitem views, no tree).
        assert all(s.parents == () for s in ad.unstack(t))


def test_unstack_refuses_a_scalar_and_a_bad_axis():
    with pytest.raises(ShapeError, match="unstack.*0-d"):
        ad.unstack(ad.Tensor(1.0))
    with pytest.raises(ShapeError, match="unstack"):
        ad.unstack(ad.Tensor(np.ones((2, 3))), axis=2)


@pytest.mark.parametrize("length", [256, 1000])
def test_recorded_backward_cost_is_linear_in_the_length(length):
    """The gradient program joins the L slices' cotangents into one concatenate: O(L) elements, not O(L²).

    Cut straight from x, each slice's cotangent alone would be an array of x's
    size (index_add); the sum of every node's size in the gradient program is
    a small multiple of x's size instead.
    """
    weights = np.arange(length, dtype=float)

    def f(x):
        return ad.sum(ad.stack([s * w for s, w in zip(ad.unstack(x, axis=1), weights)], axis=1))

    x = np.ones((2, length, 3))
    gradient = ad.grad_program(ad.trace(f, x))
    names = [node.prim.name for node in gradient.nodes if node.prim is not None]
    assert "index_add" not in names and names.count("concatenate") == 1
    assert sum(int(np.prod(node.shape)) for node in gradient.nodes) <= 8 * x.size
    g = gradient(x)
    np.testing.assert_array_equal(g, np.broadcast_to(weights[None, :, None], x.shape))


def test_second_derivative_through_the_joined_slices():
    w = np.random.default_rng(0).standard_normal((20, 3))

    def f(x):
        return ad.sum(ad.stack([ad.tanh(s) * w[i] for i, s in enumerate(ad.unstack(x))]) ** 2)

    ad.check_grads(f, (np.random.default_rng(1).standard_normal((20, 3)),), order=2, modes=("rev", "fwd"))
