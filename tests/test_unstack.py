"""``ad.unstack``: values, errors, and the O(L log L) shape of its backward sweep."""

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
    assert [s.value.tolist() for s in ad.unstack(x, -1)] == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
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
def test_backward_cost_is_length_times_log_length_not_quadratic(length):
    """Each getitem's VJP makes an array of its operand's size: their total is O(L log L) elements."""
    x = ad.Tensor(np.ones((2, length, 3)), requires_grad=True)
    slices = ad.unstack(x, axis=1)
    work = sum(t.parents[0].size for t in _getitem_nodes(slices))
    halvings = int(np.ceil(np.log2(length / 8)))
    # Each level of halves costs 2 x.size (two halves of every piece); the slices of a piece of
    # at most 8 slices cost at most 8 times the piece, 8 x.size in all.
    assert work <= x.size * (2 * halvings + 8)
    assert work < 0.1 * length * x.size  # slicing straight from x would cost length * x.size
    ad.sum(ad.stack([s * float(i) for i, s in enumerate(slices)], axis=1)).backward()
    np.testing.assert_array_equal(x.grad.value, np.broadcast_to(np.arange(length)[None, :, None], x.shape))


def test_second_derivative_through_the_tree():
    w = np.random.default_rng(0).standard_normal((20, 3))

    def f(x):
        return ad.sum(ad.stack([ad.tanh(s) * w[i] for i, s in enumerate(ad.unstack(x))]) ** 2)

    ad.check_grads(f, (np.random.default_rng(1).standard_normal((20, 3)),), order=2, modes=("rev", "fwd"))
