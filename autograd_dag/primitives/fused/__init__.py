"""Fused model primitives: structured operations of a model written as one primitive each, with hand-written rules.

Each is an operation a model makes many times that a composite of primitives
would spell with several arrays of its input's size (and as many nodes), so it
is one primitive whose value is computed in place and whose VJP and JVP are
written by hand, in Tensor operations (so they differentiate again), often as
another primitive of this family. What goes where:

* :mod:`.softmax` — ``logsumexp``, ``softargmax`` (alias ``softmax``) and
  ``softargmax_jacobian``, ``masked_softargmax`` (attention's weights);
  ``argmax`` and ``argmin`` (their hard limits, no derivative).
* :mod:`.layer_norm` — ``layer_norm`` and the two primitives of its rules,
  ``standardize_jacobian`` and ``standardized_sum``.
* :mod:`.losses` — ``softmax_cross_entropy`` and its backward primitive.
* :mod:`.linear_relu` — relu(x Wᵀ + b), a feed-forward layer in one array.

A new primitive belongs here when it fuses several steps of a model and its
derivative is better written by hand than derived (cost or stability; the
comment at each rule says which). Elementwise primitives, linear ones and
linear algebra have homes of their own (``elementwise``/``mathfuncs``,
``structure``/``indexing``, ``linalg``).
"""

from .softmax import (ARGMAX, ARGMIN, LOGSUMEXP, MASKED_SOFTARGMAX, SOFTARGMAX, SOFTARGMAX_JACOBIAN, argmax, argmin,
                      logsumexp, masked_softargmax, softargmax, softargmax_jacobian, softmax)
from .layer_norm import (LAYER_NORM, STANDARDIZE_JACOBIAN, STANDARDIZED_SUM, layer_norm, standardize_jacobian,
                         standardized_sum)
from .losses import (SOFTMAX_CROSS_ENTROPY, SOFTMAX_CROSS_ENTROPY_GRAD, softmax_cross_entropy,
                     softmax_cross_entropy_grad)
from .linear_relu import LINEAR_RELU, linear_relu

__all__ = ["logsumexp", "softargmax", "softmax", "softargmax_jacobian", "masked_softargmax", "argmax", "argmin",
           "layer_norm", "standardize_jacobian", "standardized_sum", "softmax_cross_entropy",
           "softmax_cross_entropy_grad", "linear_relu",
           "LOGSUMEXP", "SOFTARGMAX", "SOFTARGMAX_JACOBIAN", "MASKED_SOFTARGMAX", "ARGMAX", "ARGMIN", "LAYER_NORM",
           "STANDARDIZE_JACOBIAN", "STANDARDIZED_SUM", "SOFTMAX_CROSS_ENTROPY", "SOFTMAX_CROSS_ENTROPY_GRAD",
           "LINEAR_RELU"]
