"""Table of cases for softmax cross-entropy against class indices, forward and backward primitives.

The ``ref`` is the formula written directly in numpy: log Σ exp(z) − z[t] per row,
and (softargmax(z) − onehot(t))·ct for the backward primitive; never the code under test.
"""

import numpy as np

from tests.cases import Case
from autograd_dag.primitives import fused as L

IDX = np.array([[2, 0, 4], [1, 1, 3]])        # rows (2, 3), 5 classes
IDX_1D = np.array([0, 2])


def _lse(z):
    m = z.max(-1, keepdims=True)
    return np.log(np.exp(z - m).sum(-1, keepdims=True)) + m


def _ref_ce(idx):
    return lambda z: (_lse(z) - np.take_along_axis(z, idx[..., None], -1))[..., 0]


def _ref_grad(idx):
    def ref(ct, z):
        p = np.exp(z - _lse(z))
        return (p - np.eye(z.shape[-1])[idx]) * ct[..., None]
    return ref


CASES = [
    Case("softmax_cross_entropy", lambda z: L.softmax_cross_entropy(z, IDX),
         lambda rng: (rng.standard_normal((2, 3, 5)),), _ref_ce(IDX), id="softmax_cross_entropy-(2,3,5)"),
    Case("softmax_cross_entropy", lambda z: L.softmax_cross_entropy(z, IDX_1D),
         lambda rng: (3.0 * rng.standard_normal((2, 4)),), _ref_ce(IDX_1D), id="softmax_cross_entropy-(2,4)"),
    Case("softmax_cross_entropy_grad",
         lambda ct, z: L.softmax_cross_entropy_grad(ct, z, L.softmax_cross_entropy(z, IDX), IDX),
         lambda rng: (rng.standard_normal((2, 3)), rng.standard_normal((2, 3, 5))), _ref_grad(IDX),
         id="softmax_cross_entropy_grad-(2,3,5)"),
]
