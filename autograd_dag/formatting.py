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


def listing(name: str, inputs, nodes, outputs, single_output: bool) -> str:
    """``print(program)``'s text: ``def name(inputs):``, one line per node of ``nodes``, ``return``.

    ``inputs`` are the input nodes (listed in the header), ``nodes`` the others
    in order (those with no primitive are constants and parameters), ``outputs``
    node indices. See :class:`~autograd_dag.program.Program` for an example.
    """
    args = ", ".join(f"%{n.index}: {n.dtype}{format_shape(n.shape)}" for n in inputs)
    lines = [f"def {name}({args}):"]
    for node in nodes:
        typed = f"{node.dtype}{format_shape(node.shape)}"
        if node.prim is None:
            label = f"  # {node.name}" if node.name else ""
            lines.append(f"  %{node.index} = {node.op} {format_value(node.value)}  : {typed}{label}")
            continue
        operands = [f"%{p}" for p in node.parents]
        operands += [f"{k}={format_param(v)}" for k, v in node.params.items()]
        source = format_source(node.source)
        lines.append(f"  %{node.index} = {node.op}({', '.join(operands)})  : {typed}"
                     f"{'  # ' + source if source else ''}")
    outs = ", ".join(f"%{k}" for k in outputs)
    lines.append(f"  return {outs}" if single_output else f"  return ({outs})")
    return "\n".join(lines)
