"""More numpy functions on Tensors: their entries in the dispatch tables of :mod:`.operators`.

Each numpy function here maps to a composite of recorded primitives (``primitives/floats.py``,
``statistics.py``, ``polynomial.py``, ``editing.py``), so it runs eagerly, under jit, trace and vmap,
and differentiates; this module only reads numpy's arguments and refuses those with no meaning
for a recorded node (``out=``), naming them.
"""

from __future__ import annotations

import numpy as np

from .operators import NUMPY_FUNCTIONS, _UFUNCS
from .primitives import floats


_UFUNCS.update({
    np.cbrt: floats.cbrt, np.float_power: floats.float_power, np.copysign: floats.copysign,
    np.heaviside: floats.heaviside, np.ldexp: floats.ldexp, np.frexp: floats.frexp, np.modf: floats.modf,
    np.spacing: floats.spacing,
})
NUMPY_FUNCTIONS.update({np.angle: floats.angle})
