"""A program's arguments checked against its input nodes before Algorithm 4.1 runs (``Program.__call__``).

Shapes must match; a dtype may differ only by a cast that keeps every value
(an integer that fits, a float within range), so that an error names the
input and the user's line instead of failing, or wrapping around, inside numpy.
"""

from __future__ import annotations

import numpy as np

from .core import Tensor, as_array
from .errors import ProgramInputError, located, user_source

_MISSING = object()


def checked_inputs(program, args, kwargs=None) -> list:
    """``program``'s arguments (``args``, and ``kwargs`` by input name) in input order, each checked.

    Arrays come back cast to the input's dtype; Tensors as they are (the
    program then records them again). Raises :class:`ProgramInputError`.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x: ad.exp(x), np.zeros(2, np.float32))
        >>> checked_inputs(prog, (), {"x": np.ones(2)})[0].dtype
        dtype('float32')
    """
    names = [program.nodes[i].name or f"%{i}" for i in program.inputs]
    if kwargs:
        args = list(args)
        for key, value in kwargs.items():
            if key not in names:
                raise ProgramInputError(f"program '{program.name}' has no input named {key!r}; its inputs "
                                        f"are ({', '.join(names)}){located(user_source())}")
            pos = names.index(key)
            if pos < len(args) and args[pos] is not _MISSING:
                raise ProgramInputError(f"program '{program.name}': input {key!r} given both by position "
                                        f"and by name{located(user_source())}")
            args += [_MISSING] * (pos + 1 - len(args))
            args[pos] = value
        missing = [names[i] for i, a in enumerate(args) if a is _MISSING]
        if missing:
            raise ProgramInputError(f"program '{program.name}': missing input(s) {', '.join(missing)}"
                                    f"{located(user_source())}")
    if len(args) != len(program.inputs):
        raise ProgramInputError(f"program '{program.name}' takes {len(program.inputs)} input(s) "
                                f"({', '.join(names)}); got {len(args)}{located(user_source())}")
    checked = []
    for pos, (k, a) in enumerate(zip(program.inputs, args)):
        node = program.nodes[k]
        label = f"input {pos} ('{node.name}')" if node.name else f"input {pos}"
        value = a.value if isinstance(a, Tensor) else as_array(a)
        if value.shape != node.shape:
            raise ProgramInputError(f"program '{program.name}': {label} expects shape {node.shape}, "
                                    f"got {value.shape}{located(user_source())}")
        if value.dtype != node.dtype:
            if not np.can_cast(value.dtype, node.dtype, "same_kind"):
                raise ProgramInputError(f"program '{program.name}': {label} expects dtype {node.dtype}, "
                                        f"got {value.dtype}{located(user_source())}")
            if np.dtype(node.dtype).kind in "iu" and value.size and not np.can_cast(value.dtype, node.dtype):
                # A narrowing integer cast wraps around (300 as int8 is 44): only values that fit pass.
                info = np.iinfo(node.dtype)
                if value.min() < info.min or value.max() > info.max:
                    raise ProgramInputError(f"program '{program.name}': {label} expects dtype {node.dtype}, "
                                            f"got {value.dtype} values outside [{info.min}, {info.max}]"
                                            f"{located(user_source())}")
            if not isinstance(a, Tensor):
                with np.errstate(over="ignore"):
                    narrowed = value.astype(node.dtype)
                if np.dtype(node.dtype).kind == "f" and value.dtype.kind == "f" and value.size and (
                        np.isinf(narrowed) & np.isfinite(value)).any():
                    # A narrowing float cast turns what it cannot hold into inf, with a warning only.
                    top = float(np.max(np.abs(value[np.isfinite(value)])))
                    raise ProgramInputError(f"program '{program.name}': {label} expects dtype {node.dtype}, "
                                            f"got {value.dtype} values beyond its range (|value| up to "
                                            f"{top:.3g}, {node.dtype} holds up to "
                                            f"{float(np.finfo(node.dtype).max):.3g}){located(user_source())}")
                value = narrowed
        checked.append(a if isinstance(a, Tensor) else value)
    return checked
