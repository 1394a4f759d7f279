"""The primitive families. Importing this package registers every built-in primitive."""

from . import (arrangement, conv, elementwise, indexing, fused, linalg,  # noqa: F401
               reductions, structure)  # (registration)
from . import arrays, integer, mathfuncs, numeric  # noqa: F401  (registration: numpy's everyday functions)
from . import random  # noqa: F401  (registration: dropout's mask)
from .registry import PRIMITIVES, defprim

__all__ = ["PRIMITIVES", "defprim"]
