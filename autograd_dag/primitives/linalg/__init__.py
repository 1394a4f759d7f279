"""Linear algebra, the one home: the primitives and composites behind ``ad.matmul``, ``ad.einsum`` and ``ad.linalg``.

What goes where, by the kind of derivative rule:

* :mod:`.products` — the bilinear primitives, each declared by its transpose
  in every operand so that the JVP follows (``matmul``, ``einsum``), the
  affine ``linear`` (x Wᵀ + b, its own pair), and the composites made of
  products and views of a matrix (``multi_dot``, ``vecdot``, ``outer``,
  ``trace``, ``diagonal``, ``matrix_transpose``).
* :mod:`.solves` — solves, inverses and determinants (``solve``, ``inv``,
  ``det``, ``slogdet``) and their composites (``matrix_power``,
  ``tensorinv``, ``tensorsolve``): structured primitives whose VJP and JVP are
  written by hand.
* :mod:`.decompositions` — ``cholesky``, ``eigh``, ``svd``, ``qr`` (each one
  primitive whose output packs its factors) and what is made from the SVD
  (``pinv``, ``lstsq``): structured, hand-written pairs too.
* :mod:`.norms` — ``norm`` (the one behind ``ad.norm`` and ``ad.linalg.norm``),
  ``matrix_norm``, ``vector_norm``, ``cond``: composites.
* :mod:`.base` — what they share (numpy 2's result types, matrix checks, the
  packing of factors); no primitive.

A new product or view of a matrix goes in ``products``; a new factorization in
``decompositions``; a function of solves or inverses in ``solves``. The public
namespace ``ad.linalg`` (:mod:`autograd_dag.linalg`) re-exports numpy.linalg's
names from here; every function is batched over leading axes like numpy's.
"""

from .base import EighResult, QRResult, SlogdetResult, SVDResult
from .products import (EINSUM, LINEAR, MATMUL, diagonal, einsum, linear, matmul, matrix_transpose, multi_dot,
                       outer, trace, vecdot)
from .solves import (COFACTOR, COFACTOR_DERIVATIVE, DET, INV, LOGABSDET, SLOGDET_SIGN, SOLVE, det, inv,
                     matrix_power, slogdet, solve, tensorinv, tensorsolve)
from .decompositions import (CHOLESKY, EIGH, PINV, QR, QR_FULL_RANK, SVD, SVD_RECIPROCAL, cholesky, eigh,
                             eigvalsh, lstsq, pinv, qr, svd, svdvals)
from .norms import cond, matrix_norm, norm, vector_norm

__all__ = ["matmul", "linear", "einsum", "multi_dot", "vecdot", "outer", "trace", "diagonal", "matrix_transpose",
           "solve", "inv", "det", "slogdet", "matrix_power", "tensorinv", "tensorsolve",
           "cholesky", "eigh", "eigvalsh", "svd", "svdvals", "qr", "pinv", "lstsq",
           "norm", "matrix_norm", "vector_norm", "cond",
           "EighResult", "SVDResult", "QRResult", "SlogdetResult",
           "MATMUL", "LINEAR", "EINSUM", "INV", "SOLVE", "DET", "COFACTOR", "COFACTOR_DERIVATIVE", "LOGABSDET",
           "SLOGDET_SIGN", "CHOLESKY", "EIGH", "SVD", "SVD_RECIPROCAL", "QR", "QR_FULL_RANK", "PINV"]
