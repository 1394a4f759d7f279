"""Cases for ``dropout_mask``: dropout's scaled mask, a pure function of an integer seed.

The reference draws the mask from NumPy's generator as the docstring specifies
(uniforms of stream ``stream`` of the seed; kept where ≥ p, scaled by 1/(1 − p)).
The product x · mask checks the derivative through the mask (the mask itself
has none).
"""

import numpy as np

from autograd_dag.primitives.elementwise import multiply
from autograd_dag.primitives.random import dropout_mask
from tests.cases import Case


def _mask(shape, seed, p, stream=0):
    return (np.random.default_rng([stream, seed]).random(shape) >= p) / (1.0 - p)


CASES = [
    Case("dropout_mask", lambda x: multiply(x, dropout_mask(x, 7, 0.3)),
         lambda rng: (rng.standard_normal((3, 4)),), ref=lambda x: x * _mask((3, 4), 7, 0.3), id="times-x"),
    Case("dropout_mask", lambda x: multiply(x, dropout_mask(x, np.array([5, 1]), 0.5, stream=2)),
         lambda rng: (rng.standard_normal((2, 6)),),
         ref=lambda x: x * np.stack([_mask(6, 5, 0.5, 2), _mask(6, 1, 0.5, 2)]), id="a-seed-per-row"),
    Case("dropout_mask", lambda x: dropout_mask(x, 3, 0.0), lambda rng: (rng.standard_normal(5),),
         ref=lambda x: np.ones(5), wrt=(), id="p0-keeps-all"),
]
