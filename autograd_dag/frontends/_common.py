"""What both importers share: their error, and the program built from replayed inputs and outputs."""

from __future__ import annotations

import os
import re

import numpy as np

from ..core import Tensor
from ..errors import AutogradDagError
from ..primitives import structure as st
from ..program import Program


class FrontendError(AutogradDagError):
    """A JAX or PyTorch graph uses a primitive (or a form of one) the library cannot express.

    ``missing`` lists every primitive or operator without a replay rule (empty when the
    error is about one equation's parameters).
    """

    def __init__(self, message: str, missing=()):
        super().__init__(message)
        self.missing = list(missing)


def require(module: str, extra: str):
    """Import ``module`` (jax or torch), or raise FrontendError naming the extra that installs it."""
    try:
        return __import__(module)
    except ImportError:
        raise FrontendError(f"{module} is not installed: pip install 'autograd-dag[{extra}]' "
                            f"(or {module} itself)") from None


def refuse_missing(caller: str, what: str, missing) -> None:
    """Raise one error naming every primitive the graph uses without a replay rule."""
    missing = sorted(set(missing))
    if missing:
        raise FrontendError(f"{caller}: the graph uses {len(missing)} {what}(s) autograd_dag cannot replay: "
                            f"{', '.join(missing)}", missing)


def constant(value, name: str | None = None) -> Tensor:
    return Tensor(np.asarray(value), name=name)


def build(inputs, outputs, name: str) -> Program:
    """The program of ``outputs`` (Tensors, or a single one) from ``inputs``.

    An output that is an input or a constant goes through ``identity`` so the
    program has a node computing it (as the ONNX importer does).
    """
    single = isinstance(outputs, Tensor)
    outs = []
    ids = {id(t) for t in inputs}
    for t in ((outputs,) if single else outputs):
        if not isinstance(t, Tensor):
            t = constant(t)
        if id(t) in ids or t.prim is None:
            t = st.identity(t)
        outs.append(t)
    return Program.from_outputs(tuple(inputs), outs[0] if single else tuple(outs), name=name)


# The wrapper a function is exported through is not the user's line.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')


def source_from_trace(text) -> tuple[str, int] | None:
    """The last ``File "...", line N`` of a Python stack trace (the innermost frame): the user's line."""
    found = [(f, int(n)) for f, n in _FILE_LINE.findall(text or "") if not f.startswith(_PACKAGE)]
    return found[-1] if found else None
