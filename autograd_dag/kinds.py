"""What a program is: :class:`ProgramKind`, the value of ``Program.kind``.

The code that makes a program says what it made (``grad_program`` a gradient
program, a circuit an arithmetic circuit, the renderer a hand-built graph); the
renderer reads it to choose labels and titles. An enum, not a free string, so
that no misspelt kind is drawn as a plain program.
"""

from __future__ import annotations

import enum

from .errors import AutogradDagError


class ProgramKind(str, enum.Enum):
    """What a program is, for the code that draws or titles it (``Program.kind``).

    A ``str`` enum: ``program.kind == "gradient"`` and ``Program(..., kind="circuit")``
    keep working, and an unknown kind is refused instead of drawn as a plain program.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> kind = ad.grad_program(ad.trace(lambda x: ad.sum(x * x), np.ones(2))).kind
        >>> kind is ProgramKind.GRADIENT, kind == "gradient"
        (True, True)
    """

    PROGRAM = "program"
    GRADIENT = "gradient"  # made by grad_program: its outputs are gradients, drawn as such
    CIRCUIT = "circuit"  # an arithmetic circuit: + and × gates over scalars
    GRADIENT_CIRCUIT = "gradient_circuit"  # a circuit computing f and its partial derivatives
    GRAPH = "graph"  # a hand-built Graph drawn as a program: vertices, no types, never run

    def __str__(self) -> str:
        return self.value

    @classmethod
    def of(cls, kind) -> "ProgramKind":
        """``kind`` (a ProgramKind or its value) as a ProgramKind; AutogradDagError for anything else."""
        try:
            return cls(kind)
        except ValueError:
            raise AutogradDagError(f"Program: kind={kind!r}; expected one of "
                                   f"{', '.join(repr(k.value) for k in cls)}") from None
