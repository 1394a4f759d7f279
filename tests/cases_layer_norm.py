"""Table of cases for layer_norm (one primitive for LayerNorm's forward pass, §4.5.2).

The ``ref`` is the formula written directly in numpy: γ ⊙ (x − μ) / √(σ² + ε) + β
over the trailing axes, never the code under test.
"""

import numpy as np

from tests.cases import Case
from autograd_dag.primitives import fused as R


def _ref(axes, eps):
    def ref(x, gamma=1.0, beta=0.0):
        mu = x.mean(axis=axes, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * gamma + beta
    return ref


def _normal(*shapes):
    return lambda rng: tuple(rng.standard_normal(s) for s in shapes)


CASES = [
    Case("layer_norm", lambda x, g, b: R.layer_norm(x, g, b), _normal((3, 5), (5,), (5,)), _ref((-1,), 1e-5),
         id="layer_norm-(3,5)-affine"),
    Case("layer_norm", lambda x, g, b: R.layer_norm(x, g, b, axes=(-2, -1), eps=0.1),
         _normal((2, 3, 4), (3, 4), (4,)), _ref((-2, -1), 0.1), id="layer_norm-(2,3,4)-two-axes"),
    Case("layer_norm", lambda x: R.layer_norm(x), _normal((4, 6)), _ref((-1,), 1e-5), id="layer_norm-(4,6)-plain"),
    # gamma broadcasting past x (a per-example scale): the input's cotangent is summed back.
    Case("layer_norm", lambda x, g, b: R.layer_norm(x, g, b), _normal((3,), (2, 3), (1,)), _ref((-1,), 1e-5),
         id="layer_norm-broadcast-gamma"),
]


# standardize_jacobian: J v for J = ∂x̂/∂x, x̂ = (x − μ)/√(σ² + ε) (layer_norm's derivative rules in x);
# the reference is the formula, and the finite-difference checks of layer_norm's cases check it as its rule.
def _jacobian_ref(axes, eps):
    def ref(v, x):
        mu = x.mean(axis=axes, keepdims=True)
        inv = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True) + eps)
        xhat = (x - mu) * inv
        return inv * (v - v.mean(axis=axes, keepdims=True) - xhat * (v * xhat).mean(axis=axes, keepdims=True))
    return ref


CASES += [
    Case("standardize_jacobian", lambda v, x: R.standardize_jacobian(v, x), _normal((3, 5), (3, 5)),
         _jacobian_ref((-1,), 1e-5), id="standardize_jacobian-(3,5)"),
    Case("standardize_jacobian", lambda v, x: R.standardize_jacobian(v, x, axes=(-2, -1), eps=0.1),
         _normal((2, 3, 4), (2, 3, 4)), _jacobian_ref((-2, -1), 0.1), id="standardize_jacobian-two-axes"),
    Case("standardize_jacobian", lambda v, x: R.standardize_jacobian(v, x), _normal((2, 3), (3,)),
         _jacobian_ref((-1,), 1e-5), id="standardize_jacobian-broadcast-v"),
]


# standardized_sum: Σ over the leading axes of ct ⊙ x̂ (layer_norm's rule in γ); the reference is the formula.
def _sum_ref(axes, eps):
    def ref(ct, x):
        mu = x.mean(axis=axes, keepdims=True)
        xhat = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True) + eps)
        return (ct * xhat).sum(axis=tuple(range(x.ndim - len(axes))))
    return ref


CASES += [
    Case("standardized_sum", lambda ct, x: R.standardized_sum(ct, x), _normal((3, 5), (3, 5)),
         _sum_ref((-1,), 1e-5), id="standardized_sum-(3,5)"),
    Case("standardized_sum", lambda ct, x: R.standardized_sum(ct, x, axes=(-2, -1), eps=0.1),
         _normal((2, 3, 4), (2, 3, 4)), _sum_ref((-2, -1), 0.1), id="standardized_sum-two-axes"),
    Case("standardized_sum", lambda ct, x: R.standardized_sum(ct, x), _normal((5,), (5,)),
         _sum_ref((-1,), 1e-5), id="standardized_sum-no-leading-axes"),
    Case("standardized_sum", lambda ct, x: R.standardized_sum(ct, x), _normal((0, 4), (0, 4)),
         _sum_ref((-1,), 1e-5), id="standardized_sum-no-rows"),
]
