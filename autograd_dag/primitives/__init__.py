"""The primitive families. Importing this package registers every built-in primitive."""

from . import arrangement, conv, elementwise, indexing, linalg, linalg_family, reductions, structure  # noqa: F401  (registration)
from .registry import PRIMITIVES, defprim

__all__ = ["PRIMITIVES", "defprim"]
