"""Short texts for program listings and pictures: shapes, constants, parameters, source lines.

``print(program)`` and the renderer's labels (:mod:`autograd_dag.render.labels`)
use the same ones, so a listing and a picture of one program read alike.
Nothing here knows Tensors or programs: these are functions of plain values.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np


def format_shape(shape) -> str:
    """``[3,4]`` for a shape (``[]`` for a scalar)."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def format_value(value) -> str:
    """A constant's value: ``2``, ``0.5``, ``1e-08``, ``True`` or ``array[3,4]``."""
    value = np.asarray(value)
    if value.size == 1:
        item = value.reshape(()).item()
        if isinstance(item, float):
            # Six decimals read 1e-8 (a log's epsilon) as "0" and 2.5e-6 as "0.000003":
            # a small value they do not write exactly (1e-5 they do) is written in
            # scientific notation instead, and so is a huge one.
            text = np.format_float_positional(item, trim="-", precision=6)
            if not np.isfinite(item) or (abs(item) < 1e16 and (abs(item) >= 1e-3 or float(text) == item)):
                return text
            return np.format_float_scientific(item, trim="-", precision=6)
        return str(item)
    return f"array{format_shape(value.shape)}"


def format_param(value: Any) -> str:
    """One static parameter of a primitive (``1``, ``(0, 2)``, ``float32``, a function's name)."""
    if isinstance(value, np.ndarray):
        return f"array{format_shape(value.shape)}" if value.size > 4 else np.array2string(value, separator=",")
    if isinstance(value, np.dtype):
        return str(value)
    if callable(value):
        return getattr(value, "__name__", "fn")
    return repr(value)


def format_source(source) -> str:
    """``file.py:12`` for a recorded ``(filename, lineno)``, or ``""``."""
    if not source:
        return ""
    return f"{os.path.basename(str(source[0]))}:{source[1]}"
