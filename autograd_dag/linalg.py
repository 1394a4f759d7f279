"""``ad.linalg``: the numpy.linalg functions users differentiate, on Tensors.

Each is batched over leading axes like numpy's and has its VJP and JVP (the code
is in :mod:`autograd_dag.primitives.linalg`, the one home of linear algebra;
its docstring says what is where); ``np.linalg.<name>`` on a Tensor dispatches
here.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> ad.grad(lambda m: ad.linalg.det(m))(a)      # d det / dA = det(A) A⁻ᵀ
    array([[ 3., -1.],
           [-1.,  2.]])
"""

from .primitives.arrangement import linalg_cross as cross
from .primitives.linalg import (EighResult, QRResult, SlogdetResult, SVDResult, cholesky, cond, det, diagonal, eigh,
                                eigvalsh, inv, lstsq, matmul, matrix_norm, matrix_power, matrix_transpose, multi_dot,
                                norm, outer, pinv, qr, slogdet, solve, svd, svdvals, tensorinv, tensorsolve, trace,
                                vecdot, vector_norm)

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "svd", "svdvals", "qr", "pinv",
           "norm", "matrix_norm", "vector_norm", "matrix_power", "trace", "diagonal", "matmul", "multi_dot",
           "cond", "lstsq", "tensorinv", "tensorsolve", "matrix_transpose", "vecdot", "outer", "cross",
           "EighResult", "SVDResult", "QRResult", "SlogdetResult"]
