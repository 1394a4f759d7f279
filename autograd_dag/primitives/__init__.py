"""The primitive families. Importing this package registers every built-in primitive."""

from . import conv, elementwise, indexing, linalg, reductions, structure  # noqa: F401  (registration)
from . import arrays, mathfuncs, numeric  # noqa: F401  (registration: numpy's everyday functions)
from .registry import PRIMITIVES, defprim

__all__ = ["PRIMITIVES", "defprim"]
