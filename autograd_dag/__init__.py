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
    >>> [float(np.round(g, 4)) for g in gradient(np.float64(1.0), np.float64(2.0))]
    [20.6892, 9.8089]
"""

from . import operators as _operators  # noqa: F401  (wires Tensor methods)
from . import numpy_more as _numpy_more  # noqa: F401  (more numpy functions on Tensors)
from .autodiff import (backward, grad, grad_program, hvp, jvp, value_and_grad, vjp,
                       zero_grad)
from .batching import hessian, jacobian, vmap
from .checkpointing import checkpoint
from .checking import check_grads, numerical_grad, numerical_jvp
from .checking_user import check_gradient, check_hessian, check_jacobian, check_jvp, check_vjp
from .core import (Primitive, Tensor, changed_in_place, current_scope, detect_anomaly, enable_grad,
                   is_recording, name_scope, no_grad)
from .errors import (AnomalyError, AutogradDagError, ChangedInPlaceError, CircuitError, CycleError, GraphError,
                     GradientCheckError, GraphFreedError, GraphvizNotFoundError, MissingRuleError,
                     NotDifferentiableError, ProgramInputError, RenderError, SerializationError, ShapeError,
                     TracingError, UndefinedDerivativeError)
from .dag import Graph
from .primitives import PRIMITIVES
from .primitives.registry import primitive
from .primitives.arrangement import (append, atleast_1d, atleast_2d, atleast_3d, column_stack,
                                     cross, diag, dsplit, dstack, fliplr, flipud, hsplit, hstack, inner, kron,
                                     moveaxis, partition, ravel, rollaxis, rot90, select, vsplit, vstack)
from .primitives.conv import conv2d, max_pool2d
from .primitives.pooling import adaptive_avg_pool2d, avg_pool2d
from .primitives.conv_family import conv1d, conv_transpose2d
from .primitives.elementwise import (abs, add, astype, divide, equal, exp, greater, greater_equal,
                                     less, less_equal, log, logistic, maximum, minimum, multiply,
                                     negative, not_equal, power, relu, sigmoid, sign, softplus, sqrt,
                                     step, stop_gradient, subtract, tanh, where)
from .primitives.indexing import (checked_indices, concatenate, getitem, index_add, one_hot, stack, take,
                                  unstack)
from .primitives.linalg import einsum, matmul
from .primitives.random import random_seed
from .primitives.fused import argmax, argmin, logsumexp, softargmax, softmax
from .primitives.linalg import norm
from .primitives.reductions import max, mean, min, var
from .primitives.structure import (broadcast_to, expand_dims, reshape, squeeze, sum, sum_to_shape,
                                   swapaxes, transpose)
from .primitives.arrays import (arange, array_split, constant, diagonal, dot, eye, flip, full, full_like,
                               linspace, ones, ones_like, outer, pad, repeat, roll, split, tensordot,
                               tile, tril, triu, zeros, zeros_like)
from .primitives.mathfuncs import (arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, around,
                                   ceil, clip, conj, conjugate, cos, cosh, deg2rad, degrees, erf, erfc, exp2, expm1,
                                   fabs, floor, fmax, fmin, fmod, hypot, imag, isfinite, isinf, isnan, log1p,
                                   log2, log10, logaddexp, logaddexp2, mod, nan_to_num, rad2deg, radians, real,
                                   reciprocal, remainder, rint, round, sin, sinc, sinh, square, tan, trunc)
from .primitives.integer import (bitwise_and, bitwise_or, bitwise_xor, divmod, floor_divide, gcd, invert,
                                 lcm, left_shift, right_shift)
from .primitives.numeric import (all, any, argsort, cumprod, cumsum, diff, median, nanmax, nanmean,
                                 nanmin, nansum, prod, put_along_axis_add, sort, std, take_along_axis)
from .program import NodeKind, Program, ProgramNode
from .jitting import jit, trace
from . import parallel
from .parallel import get_num_threads, num_threads, set_num_threads

__version__ = "0.1.0"

__all__ = [
    # records and programs
    "Tensor", "Primitive", "Program", "ProgramNode", "NodeKind", "Graph", "trace", "jit", "PRIMITIVES",
    "no_grad", "enable_grad", "is_recording", "name_scope", "current_scope", "detect_anomaly",
    # differentiation
    "vjp", "grad", "value_and_grad", "jvp", "jacobian", "hessian", "hvp", "grad_program",
    "backward", "zero_grad", "changed_in_place", "checkpoint", "random_seed", "primitive", "vmap",
    # threads
    "parallel", "set_num_threads", "get_num_threads", "num_threads",
    # verification
    "check_grads", "numerical_grad", "numerical_jvp",
    "check_gradient", "check_jacobian", "check_vjp", "check_jvp", "check_hessian",
    # errors
    "AutogradDagError", "ShapeError", "CycleError", "GraphError", "ProgramInputError", "GraphFreedError",
    "GradientCheckError", "AnomalyError", "NotDifferentiableError", "MissingRuleError", "RenderError",
    "GraphvizNotFoundError", "CircuitError", "SerializationError", "ChangedInPlaceError", "TracingError",
    "UndefinedDerivativeError",
    # operations
    "add", "subtract", "multiply", "divide", "negative", "power", "exp", "log", "sqrt", "tanh",
    "logistic", "sigmoid", "relu", "softplus", "step", "sign", "abs", "maximum", "minimum",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "where",
    "stop_gradient", "astype", "sum", "mean", "max", "min", "var", "logsumexp", "softargmax",
    "softmax", "argmax", "matmul", "einsum", "reshape", "transpose", "swapaxes", "broadcast_to",
    "expand_dims", "squeeze", "sum_to_shape", "getitem", "index_add", "concatenate", "stack", "unstack",
    "take",
    "one_hot", "checked_indices", "conv2d", "conv1d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
    "sin", "cos",
    "hstack", "vstack", "dstack", "column_stack", "append", "atleast_1d", "atleast_2d", "atleast_3d",
    "ravel", "diag", "kron", "inner", "cross", "rot90", "flipud", "fliplr", "moveaxis", "rollaxis",
    "hsplit", "vsplit", "dsplit", "select", "partition",
    "linalg",
    # rendering
    "render", "render_to", "render_site", "render_html", "highlight_path", "Overlay", "overlays", "profile",
]
# numpy's everyday functions (``ad.trace`` stays the program tracer: the matrix
# trace is ``np.trace(t)``, ``t.trace()`` or ``ad.primitives.arrays.trace``).
__all__ += [
    "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
    "deg2rad", "rad2deg", "radians", "degrees", "log1p", "expm1", "log2", "log10", "exp2", "square",
    "reciprocal", "floor", "ceil", "trunc", "round", "rint", "around", "fabs", "hypot", "logaddexp",
    "logaddexp2", "mod", "remainder", "fmax", "fmin", "clip", "nan_to_num", "isfinite", "isnan", "isinf",
    "real", "imag", "conj", "conjugate", "fmod", "sinc", "erf", "erfc",
    "floor_divide", "divmod", "left_shift", "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor", "invert",
    "gcd", "lcm",
    "prod", "std", "norm", "cumsum", "cumprod", "diff", "sort", "argsort", "argmin", "any", "all",
    "take_along_axis", "put_along_axis_add", "median", "nansum", "nanmean", "nanmax", "nanmin",
    "pad", "flip", "roll", "tile", "repeat", "split", "diagonal", "triu", "tril",
    "array_split", "outer", "dot", "tensordot", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
    "arange", "linspace", "eye", "constant",
]
from . import circuits, graph_algorithms, linalg, nn, optim, testing  # noqa: E402
from . import text  # noqa: E402
from . import onnx  # noqa: E402  (export and import; the onnx package itself is optional)
from . import frontends  # noqa: E402  (JAX and PyTorch graphs imported; jax and torch are optional)
from .frontends import from_jax, from_torch  # noqa: E402
__all__ += ["frontends", "from_jax", "from_torch"]
from . import jax  # noqa: E402  (lowering to JAX; jax itself is optional, imported by lower())
from . import named  # noqa: E402
from .render import highlight_path, render, render_html, render_site, render_to  # noqa: E402
from .render.overlay import Overlay  # noqa: E402
from . import overlays  # noqa: E402  (passes computing a number per node, for render(overlay=))
from .overlays import profile  # noqa: E402
