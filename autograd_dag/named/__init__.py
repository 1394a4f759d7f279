"""``ad.named``: named tensors over ``Tensor`` — names on top, primitives underneath.

A :class:`NamedTensor` is a Tensor plus one name per axis (the notation of
seed 000 and of Chiang, Rush & Barak's *Named Tensor Notation*): operations
find axes by name, broadcast by the union of names, contract with
:func:`ndot` (⊙), and apply functions along a named axis
(``softmax(X, "vocab")`` or ``X.softmax("vocab")``). Gradients
(:func:`grad`, :func:`value_and_grad`, ``X.backward()``) come back named;
:func:`trace` and ``ad.render`` draw programs with ``seq:5 × layer:8``.
:mod:`autograd_dag.named.seed000` writes seed 000's TransformerLM and LeNet
line by line in this notation.

Indexing: Python forbids keywords inside ``[]``; write ``X.index(seq=3)`` or
``X[{"seq": 3}]`` (the dict form takes any name, such as ``"seq'"``).

Example:
    >>> import numpy as np
    >>> from autograd_dag import named
    >>> E = named.NamedTensor(np.eye(3, 4), "vocab layer")
    >>> X = named.NamedTensor(np.ones((2, 4)), "seq layer")
    >>> named.softmax(named.ndot(E, X, "layer"), "vocab")
    NamedTensor(vocab:3 × seq:2, float64)
"""

from ..render import render as _render
from .tensor import (AxisNameError, NamedTensor, abs, add, argmax, axes_str, conv2d, cos, divide, exp, flatten,
                     log, logistic, logsumexp, max_pool2d, maximum, minimum, multiply, names_of, ndot, negative,
                     nmax, nmean, nmin, nsum, power, relu, sigmoid, sin, softargmax, softmax, softplus, split,
                     sqrt, standardize, subtract, tanh, unroll, where)
from .transforms import (check_grads, grad, grad_program, node_axes, program_axes, program_of, trace,
                         value_and_grad)


def render(obj, view: str = "dag", **options):
    """``ad.render`` for named tensors and named programs: nodes and edges show ``seq:5 × layer:8``.

    ``obj`` is a NamedTensor (or a tuple of them), a program from :func:`trace`
    or :func:`program_of`, or anything ``ad.render`` takes. Options as ``ad.render``.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import named
        >>> X = named.NamedTensor(np.ones((5, 8)), "seq layer", name="X")
        >>> "seq:5" in named.render(X.softmax("layer")).source
        True
    """
    if isinstance(obj, (tuple, list)) and obj and all(isinstance(o, NamedTensor) for o in obj):
        obj = program_of(*obj)
    elif isinstance(obj, NamedTensor):
        obj = program_of(obj)
    return _render(obj, view, **options)


__all__ = ["NamedTensor", "AxisNameError", "ndot", "nsum", "nmean", "nmax", "nmin", "softmax", "softargmax",
           "logsumexp", "argmax", "standardize", "flatten", "split", "unroll", "conv2d", "max_pool2d", "where",
           "add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "exp", "log", "sqrt", "tanh",
           "relu", "logistic", "sigmoid", "sin", "cos", "abs", "negative", "softplus", "names_of", "axes_str",
           "grad", "value_and_grad", "check_grads", "grad_program", "trace", "program_of", "node_axes", "render", "program_axes",
           "seed000"]

from . import seed000  # noqa: E402
