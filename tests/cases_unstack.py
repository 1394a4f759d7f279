"""Cases for ``unstack``: slices along an axis, whose cotangents a recorded sweep joins.

``unstack`` is not a primitive of its own: its slices are ``getitem`` nodes
cut straight from the operand, and the recorded VJP joins their index_adds
into one ``concatenate`` (``join_slabs``). Each case re-joins the slices in another order, weighted per
slice, so that a slice put in the wrong place or a lost cotangent changes the
value and the derivatives. References use numpy's indexing slice by slice.
"""

import numpy as np

from autograd_dag.primitives.elementwise import multiply
from autograd_dag.primitives.indexing import stack, unstack
from tests.cases import Case


def _normal(*shape):
    return lambda rng: (rng.standard_normal(shape),)


def _case(shape, axis, label):
    n = shape[axis]
    order = [(5 * i + 2) % n for i in range(n)] if n % 5 else list(range(n))[::-1]
    weights = [1.0 + 0.25 * i for i in range(n)]

    def fn(x):
        slices = unstack(x, axis=axis)
        return stack([multiply(slices[j], w) for j, w in zip(order, weights)], axis=0)

    def ref(x):
        return np.stack([np.take(x, j, axis=axis) * w for j, w in zip(order, weights)], axis=0)

    return Case("getitem", fn, _normal(*shape), ref=ref, id=label)


CASES = [
    _case((2, 3, 4), 1, "unstack-few-slices-axis1"),
    _case((19, 2), 0, "unstack-19-axis0"),
    _case((2, 37, 3), -2, "unstack-37-negative-axis"),
    _case((3, 2, 11), 2, "unstack-11-last-axis"),
]
