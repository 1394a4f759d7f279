"""Weak Python numbers: the dtype numpy 2 gives a Python number beside array operands.

``x32 * 2.0`` stays float32, ``i32 + 1`` int32, ``mask + True`` bool; alone a
number is float64. ``core``'s lifting of non-Tensor operands asks here.
"""

from __future__ import annotations

import numpy as np

from .errors import AutogradDagError, located, user_source

# The Python number types that are weak (not numpy scalars, which keep their dtype).
PY_NUMBERS = (float, int, bool)

# (operand dtypes, type of the Python number) -> its dtype: numpy 2's rule reads only the type of
# a weak number, never its value, and np.result_type costs microseconds per call.
_DTYPES: dict[tuple, np.dtype] = {}


def weak(number, dtypes: tuple) -> np.ndarray:
    """The Python ``number`` as a 0-d array of the dtype numpy 2 gives it beside operands of ``dtypes``.

    Example: ``weak(1, (np.dtype(np.int32),))`` is ``array(1, dtype=int32)``;
    ``weak(1, ())`` is ``array(1.)``.
    """
    key = (dtypes, type(number))
    dtype = _DTYPES.get(key)
    if dtype is None:
        dtype = _DTYPES[key] = np.result_type(*dtypes, number) if dtypes else np.dtype(np.float64)
    try:
        return np.array(number, dtype=dtype)
    except OverflowError as exc:  # (numpy refuses i8 + 1000 the same way)
        raise AutogradDagError(f"{exc}: the constant does not fit the {dtype} operand"
                               f"{located(user_source())}") from None
