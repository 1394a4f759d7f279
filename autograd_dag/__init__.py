"""autograd_dag: programs as computation graphs.

Write numpy-style code on :class:`Tensor` (every operation records a node) or
add nodes to a :class:`Graph` by hand; turn it into a :class:`Program` (a DAG
of primitive functions in topological order); then execute it (Algorithm 4.1),
differentiate it in reverse or forward mode (the gradient is another program),
analyse arithmetic circuits, and render it with Graphviz.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> f = lambda x1, x2: x2 * ad.exp(x1) * ad.sqrt(x1 + x2 * ad.exp(x1))
    >>> program = ad.trace(f, 1.0, 2.0)
    >>> gradient = ad.grad_program(program)
    >>> [round(float(g), 4) for g in gradient(np.float64(1.0), np.float64(2.0))]
    [20.6892, 9.8089]
"""

from . import operators as _operators  # noqa: F401  (wires Tensor methods)
from .autodiff import (backward, checkpoint, grad, grad_program, hvp, jvp, primitive, value_and_grad, vjp,
                       zero_grad)
from .batching import hessian, jacobian, vmap
from .checking import check_grads, numerical_grad, numerical_jvp
from .core import (Primitive, Tensor, current_scope, detect_anomaly, enable_grad, is_recording,
                   name_scope, no_grad)
from .errors import (AnomalyError, AutogradDagError, CircuitError, CycleError, GradientCheckError,
                     GraphFreedError, GraphvizNotFoundError, MissingRuleError, NotDifferentiableError,
                     ProgramInputError,
                     RenderError, SerializationError, ShapeError)
from .graph import Graph
from .primitives import PRIMITIVES
from .primitives.arrangement import (append, array_split, atleast_1d, atleast_2d, atleast_3d, column_stack,
                                     cross, diag, dsplit, dstack, fliplr, flipud, hsplit, hstack, inner, kron,
                                     moveaxis, partition, ravel, rollaxis, rot90, select, vsplit, vstack)
from .primitives.conv import conv2d, max_pool2d
from .primitives.elementwise import (abs, add, astype, divide, equal, exp, greater, greater_equal,
                                     less, less_equal, log, logistic, maximum, minimum, multiply,
                                     negative, not_equal, power, relu, sigmoid, sign, softplus, sqrt,
                                     step, stop_gradient, subtract, tanh, where)
from .primitives.indexing import concatenate, getitem, index_add, one_hot, stack, take
from .primitives.linalg import einsum, matmul
from .primitives.reductions import argmax, logsumexp, max, mean, min, softargmax, softmax, var
from .primitives.structure import (broadcast_to, expand_dims, reshape, squeeze, sum, sum_to_shape,
                                   swapaxes, transpose)
from .program import Program, ProgramNode, jit, trace

__version__ = "0.1.0"

__all__ = [
    # records and programs
    "Tensor", "Primitive", "Program", "ProgramNode", "Graph", "trace", "jit", "PRIMITIVES",
    "no_grad", "enable_grad", "is_recording", "name_scope", "current_scope", "detect_anomaly",
    # differentiation
    "vjp", "grad", "value_and_grad", "jvp", "jacobian", "hessian", "hvp", "grad_program",
    "backward", "zero_grad", "checkpoint", "primitive", "vmap",
    # verification
    "check_grads", "numerical_grad", "numerical_jvp",
    # errors
    "AutogradDagError", "ShapeError", "CycleError", "ProgramInputError", "GraphFreedError",
    "GradientCheckError", "AnomalyError", "NotDifferentiableError", "MissingRuleError", "RenderError",
    "GraphvizNotFoundError", "CircuitError", "SerializationError",
    # operations
    "add", "subtract", "multiply", "divide", "negative", "power", "exp", "log", "sqrt", "tanh",
    "logistic", "sigmoid", "relu", "softplus", "step", "sign", "abs", "maximum", "minimum",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "where",
    "stop_gradient", "astype", "sum", "mean", "max", "min", "var", "logsumexp", "softargmax",
    "softmax", "argmax", "matmul", "einsum", "reshape", "transpose", "swapaxes", "broadcast_to",
    "expand_dims", "squeeze", "sum_to_shape", "getitem", "index_add", "concatenate", "stack", "take",
    "one_hot", "conv2d", "max_pool2d",
    "hstack", "vstack", "dstack", "column_stack", "append", "atleast_1d", "atleast_2d", "atleast_3d",
    "ravel", "diag", "kron", "inner", "cross", "rot90", "flipud", "fliplr", "moveaxis", "rollaxis",
    "array_split", "hsplit", "vsplit", "dsplit", "select", "partition",
    "linalg",
    # rendering
    "render", "render_to", "highlight_path",
]
from . import circuits, linalg, nn, optim, testing  # noqa: E402
from . import text  # noqa: E402
from .render import highlight_path, render, render_to  # noqa: E402
