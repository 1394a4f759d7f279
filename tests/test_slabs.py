"""A recorded sweep joins the cotangents of an array read in adjacent pieces into one ``concatenate``.

Each case compares the gradient program's result with the derivative worked
out by hand in numpy, and checks which nodes the program holds: joined
pieces leave no ``index_add`` (an array of zeros per piece) behind.
"""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.primitives.indexing import slab

RNG = np.random.default_rng(7)


def _gradient(f, x):
    program = ad.grad_program(ad.trace(f, x))
    names = [node.prim.name for node in program.nodes if node.prim is not None]
    return np.asarray(program(x)), names


def test_column_blocks_of_one_array_join_into_one_concatenate():
    # Q, K and V as column blocks of one product's result.
    x = RNG.standard_normal((4, 6))
    a = RNG.standard_normal((4, 2))
    g, names = _gradient(lambda x: ad.sum(x[:, 0:2] * a) + ad.sum(ad.sin(x[:, 2:4])) + ad.sum(x[:, 4:6] ** 2), x)
    np.testing.assert_allclose(g, np.concatenate([a, np.cos(x[:, 2:4]), 2 * x[:, 4:6]], axis=1), rtol=1e-15)
    assert "index_add" not in names and names.count("concatenate") == 1


def test_every_step_of_a_sequence_joins_ints_and_slices_in_any_order():
    x = RNG.standard_normal((2, 7, 3))
    w = np.arange(1.0, 8.0)

    def f(x):
        pieces = [ad.sum(x[:, t] * w[t]) for t in (6, 0, 3, 5, 4)] + [ad.sum(x[:, 1:3] ** 2)]
        total = pieces[0]
        for p in pieces[1:]:
            total = total + p
        return total
    g, names = _gradient(f, x)
    expect = np.broadcast_to(w[None, :, None], x.shape).copy()
    expect[:, 1:3] = 2 * x[:, 1:3]
    np.testing.assert_allclose(g, expect, rtol=1e-15)
    assert "index_add" not in names and names.count("concatenate") == 1


def test_pieces_with_a_gap_overlap_or_another_axis_keep_their_own_scatter():
    x = RNG.standard_normal((5, 5))
    g, names = _gradient(lambda x: ad.sum(x[:, 0:2]) + ad.sum(x[:, 3:5] * 3.0), x)
    np.testing.assert_array_equal(g, np.array([1.0, 1.0, 0.0, 3.0, 3.0])[None, :].repeat(5, 0))
    assert names.count("index_add") == 2 and "concatenate" not in names
    g, _ = _gradient(lambda x: ad.sum(x[:, 0:3]) + ad.sum(x[:, 2:5] * 3.0), x)   # overlapping: column 2 twice
    np.testing.assert_array_equal(g, np.array([1.0, 1.0, 4.0, 3.0, 3.0])[None, :].repeat(5, 0))
    g, _ = _gradient(lambda x: ad.sum(x[0] * 2.0) + ad.sum(x[:, 0] * 5.0), x)     # a row and a column
    expect = np.zeros((5, 5))
    expect[0] += 2.0
    expect[:, 0] += 5.0
    np.testing.assert_array_equal(g, expect)


def test_joined_pieces_add_to_the_rest_of_the_cotangent():
    x = RNG.standard_normal((3, 4))
    g, names = _gradient(lambda x: ad.sum(x[..., :-1] * 2.0) + ad.sum(x[..., -1]) + ad.sum(x * x), x)
    np.testing.assert_allclose(g, np.array([2.0, 2.0, 2.0, 1.0])[None, :] + 2 * x, rtol=1e-15)
    assert "index_add" not in names and names.count("concatenate") == 1


def test_the_joined_gradient_differentiates_again_and_under_anomaly_detection():
    x = RNG.standard_normal((3, 5))

    def f(x):
        return ad.sum(ad.tanh(x[:, 0:2]) ** 2) + ad.sum(ad.sin(x[:, 2]) * x[:, 3]) + ad.sum(ad.exp(x[:, 4]))
    ad.check_grads(f, (x,), order=2, modes=("rev", "fwd"))
    with ad.detect_anomaly():  # (anomaly mode scatters every piece: each VJP's result is checked)
        g, names = _gradient(f, x)
    assert "index_add" in names
    np.testing.assert_allclose(g, _gradient(f, x)[0], rtol=1e-15)


@pytest.mark.parametrize("index, expect", [
    ((slice(None), slice(2, 5)), (1, 2, 5, True)),
    ((slice(None), 3), (1, 3, 4, False)),
    ((Ellipsis, -1), (2, 3, 4, False)),
    ((slice(1, None),), (0, 1, 4, True)),
    ((slice(None), slice(None), slice(None)), None),        # the whole array
    ((slice(None), slice(0, 6, 2)), None),                  # a step
    ((0, 1), None),                                         # two indexed axes
    ((None, 0), None),                                      # a new axis
    ((np.array([0, 1]),), None),                            # an integer array
    ((slice(None), slice(3, 3)), None),                     # empty
])
def test_slab_recognizes_one_run_of_one_axis(index, expect):
    assert slab((4, 6, 4), index) == expect
