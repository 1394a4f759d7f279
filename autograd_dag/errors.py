"""The library's exceptions: one base class, one subclass per kind of mistake.

Every message names the operation, the shapes or values involved and, for
recorded code, the user's source line (``file.py:12``), so that a user never has
to read a numpy traceback from deep inside the library.
"""

from __future__ import annotations

import os
import sys
from types import CodeType, FrameType
from typing import Any

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


# The user's line of each call site, cached per code object (by id) and
# instruction offset: recording a node then costs two dict lookups, where
# ``frame.f_lineno`` decodes the code's line table on every read, and every
# node recorded from one line shares one ``(filename, lineno)`` tuple instead
# of allocating its own (fewer objects for the cyclic collector to scan). Each
# code object is kept alive in ``_site_codes`` so that its id is not reused
# while cached. This package's code maps to ``_INSIDE``: the walk goes on to
# its caller.
_sites: dict[int, Any] = {}
_site_codes: list = []
_INSIDE = object()
# Code made at run time (``exec``, functions defined in a loop) could grow the
# cache without bound: past this many code objects it starts afresh.
_MAX_SITE_CODES = 10_000


def site_lines(code: CodeType) -> Any:
    """The cache of ``code``'s call sites, ``{f_lasti: (filename, lineno)}``, or ``_INSIDE`` for this package."""
    if len(_site_codes) >= _MAX_SITE_CODES:
        _sites.clear()
        _site_codes.clear()
    lines = _INSIDE if code.co_filename.startswith(_PACKAGE_DIR) else {}
    _sites[id(code)] = lines
    _site_codes.append(code)
    return lines


def site_source(lines: dict, frame: FrameType) -> tuple[str, int]:
    """``(filename, lineno)`` of the call ``frame`` is making, cached in ``lines`` (its code's sites)."""
    source = lines[frame.f_lasti] = (frame.f_code.co_filename, frame.f_lineno)
    return source


def site_of(frame: FrameType | None) -> tuple[str, int] | None:
    """The user's ``(filename, lineno)``: the first frame from ``frame`` outwards that is outside this package.

    Every recorded node asks, so each call site's answer is cached per code
    object and instruction offset (:func:`site_lines`).
    """
    while frame is not None:
        lines = _sites.get(id(frame.f_code))
        if lines is None:
            lines = site_lines(frame.f_code)
        if lines is not _INSIDE:
            return lines.get(frame.f_lasti) or site_source(lines, frame)
        frame = frame.f_back
    return None


def user_source() -> tuple[str, int] | None:
    """``(filename, lineno)`` of the innermost frame outside this package: the user's line."""
    return site_of(sys._getframe(1))


class AutogradDagError(Exception):
    """Base class of every error raised on purpose by autograd_dag."""


class ShapeError(AutogradDagError, ValueError):
    """An operation got operands whose shapes, axes or dtypes do not fit.

    The message ends with the user's line (``(at file.py:12)``), found when
    the error is made; ``detail`` is the message without it.
    """

    def __init__(self, message: str):
        self.detail = message
        super().__init__(message if " (at " in message else message + located(user_source()))


class DTypeError(ShapeError, TypeError):
    """An operation got operands of a dtype it has no rule for (``x & 1`` on floats): numpy raises TypeError."""


class CycleError(AutogradDagError, ValueError):
    """A graph has (or an edge would close) a directed cycle.

    ``cycle`` holds the vertices of one cycle in order, first vertex repeated
    at the end, e.g. ``[a, b, c, a]``.
    """

    def __init__(self, message: str, cycle: list | None = None):
        super().__init__(message)
        self.cycle = list(cycle) if cycle is not None else []


class GraphError(AutogradDagError, ValueError):
    """A hand-built graph got something that is not one: an edge that is not a pair
    ``(i, j)`` of hashable vertices, or a vertex it does not have (then also a ``KeyError``)."""


class MissingVertexError(GraphError, KeyError):
    """A :class:`Graph` was asked about a vertex it does not have."""

    def __str__(self) -> str:  # KeyError would show the message in quotes
        return str(self.args[0]) if self.args else ""


class ProgramInputError(AutogradDagError, TypeError):
    """A program was called with the wrong number, shapes or dtypes of inputs."""


class GraphFreedError(AutogradDagError, RuntimeError):
    """Backward was asked to run through a graph whose saved values are gone."""


class ChangedInPlaceError(AutogradDagError, RuntimeError):
    """Backward reached a node recorded before one of its inputs was changed in place (an optimizer step)."""


class GradientCheckError(AutogradDagError, AssertionError):
    """Analytic derivatives disagree with finite differences."""


class AnomalyError(AutogradDagError, FloatingPointError):
    """A forward value or a gradient became NaN or infinite (``detect_anomaly``)."""


class NotDifferentiableError(AutogradDagError, TypeError):
    """A derivative was requested through an operation that has none."""


class UndefinedDerivativeError(NotDifferentiableError):
    """The operation has a derivative, but not at these values (say QR of a rank-deficient matrix).

    Raised when the derivative is evaluated (eagerly, or by a program recorded on
    other values), rather than a silent wrong number; the message names the
    operation, the values that fail and the line that recorded the operation.
    """


class TracingError(AutogradDagError, TypeError):
    """Code traced into a reusable program (``jit``, ``trace``, ``vmap``) read an input's numbers.

    The program would keep the value of that one call as a constant and
    silently reuse it on every later call (JAX raises a ConcretizationTypeError).
    """


class MissingRuleError(NotDifferentiableError):
    """A primitive on the path has no VJP (or JVP) rule; ``rule`` and ``primitive`` say which."""

    def __init__(self, message: str, rule: str = "", primitive: str = ""):
        super().__init__(message)
        self.rule = rule
        self.primitive = primitive


class RenderError(AutogradDagError, RuntimeError):
    """A program could not be drawn (or its picture written).

    As :class:`ShapeError`, the message ends with the user's line (``(at file.py:12)``),
    found when the error is made; ``detail`` is the message without it.
    """

    def __init__(self, message: str):
        self.detail = message
        super().__init__(message if " (at " in message else message + located(user_source()))


class GraphvizNotFoundError(RenderError):
    """Graphviz's ``dot`` program is not installed or not on PATH."""


class CircuitError(AutogradDagError, ValueError):
    """An arithmetic circuit was built or analysed with bad input.

    ``column``: for a parse error, the 0-based column of the offending character.
    """

    column: int | None = None


class SerializationError(AutogradDagError, ValueError):
    """A file could not be loaded (wrong format, pickled data, mismatched keys or shapes)."""


class TextError(AutogradDagError, ValueError):
    """Bad input to the text toolkit (``ad.text``): an unknown token or id, an unreadable file, bad cut-offs."""


def located(source) -> str:
    """Format a recorded source location ``(filename, lineno)`` as `` (at file:line)``."""
    if not source:
        return ""
    filename, lineno = source
    return f" (at {filename}:{lineno})"
