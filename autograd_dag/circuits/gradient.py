"""Gradient circuits through the reverse-mode program transformation (cheap-gradient principle).

``gradient_circuit(c)`` turns the circuit into a program (``Circuit.to_program``),
differentiates it with ``grad_program`` (reverse mode, Algorithm 8.5: the gradient
is another program), and reads that program back as a circuit computing f and every
∂f/∂xi. Baur–Strassen (1983), in the seed's edge-counting form: such a circuit
exists with size at most 5·S(f) for fan-in-2 circuits; ``ratio`` reports how close
this one is, and ``bound`` is that theorem's bound for this circuit: a k-ary gate is
k − 1 binary gates (2(k − 1) edges), so with wider gates the bound is 5·S₂(f)/S(f) > 5,
S₂ the binarised size (a 50-ary product's gradient circuit has ratio 5.8, bound 9.8).

The reverse-mode program seeds its sweep with the cotangent 1 and multiplies by it
(``1·∂``), multiplies unused inputs by 0, and computes ``(−1)·ct`` for every
``(−1)·x``: those nodes are redundant, so by default the gradient circuit is
passed through :func:`simplify` (constant folding, x·1 / x·0 removal, hash-consing)
before it is measured. ``unsimplified_size`` keeps the raw size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from autograd_dag.autodiff import grad_program
from autograd_dag.errors import CircuitError
from autograd_dag.kinds import ProgramKind
from autograd_dag.circuits.circuit import Circuit, Node, Wire
from autograd_dag.circuits.simplify import simplify as _simplify


@dataclass
class GradientCircuit:
    """The result of :func:`gradient_circuit`.

    ``circuit``: outputs f, ∂f/∂x1, …, ∂f/∂xn (names ``f``, ``df/dx1``, …; variables in
    the original circuit's order). ``size`` = S(f, ∇f) in edges, ``original_size`` =
    S(f), ``ratio`` = size / original_size (``None`` when S(f) = 0),
    ``unsimplified_size``: the size read straight from the reverse-mode program.
    ``bound``: Baur–Strassen's bound on ``ratio``, 5 for fan-in-2 circuits and
    5·S₂(f)/S(f) with wider gates (S₂: each k-ary gate counted as k − 1 binary ones).
    """

    circuit: Circuit
    size: int
    original_size: int
    ratio: float | None
    unsimplified_size: int
    simplified: bool
    bound: float = 5.0

    @property
    def size_ratio(self) -> float | None:
        """Alias of ``ratio``: S(f, ∇f) / S(f)."""
        return self.ratio

    def to_program(self, name: str = "grad_f"):
        """The gradient circuit as a program (kind ``"gradient_circuit"``): drawn and titled as a gradient.

        >>> from autograd_dag.circuits import variables
        >>> x, y = variables("x y")
        >>> gradient_circuit(Circuit.from_outputs(x * y)).to_program().kind == "gradient_circuit"
        True
        """
        return _as_gradient(self.circuit.to_program(name))

    def drawing_program(self, name: str = "grad_f"):
        """The gradient circuit as drawn (``ad.render``): each gate with its true fan-in, ``size`` edges
        (:meth:`Circuit.drawing_program`); titled as a gradient, as :meth:`to_program`."""
        return _as_gradient(self.circuit.drawing_program(name))

    def __str__(self) -> str:
        ratio = "n/a" if self.ratio is None else f"{self.ratio:.3g}"
        how = f", simplified from {self.unsimplified_size}" if self.simplified else ""
        return f"gradient circuit: size {self.size}{how}; S(f) = {self.original_size}; ratio {ratio} (bound {self.bound:.3g})"


def _as_gradient(program):
    program.kind = ProgramKind.GRADIENT_CIRCUIT
    # Outputs f, ∂f/∂x1, …: one input per variable, in the same order. (A node returned as two
    # derivatives, a folded constant 0, is the gradient of the last.)
    for p, k in enumerate(program.outputs[1:]):
        program.nodes[k].gradient_of = p
    return program


def _comes_back_from_float64(value) -> bool:
    """Whether ``value`` read back from a float64 program constant is ``value``, type included.

    Floats are; ints below 2**53 are (``Circuit.from_program`` reads those back as ints);
    Fractions come back as floats, and 2**60 + 1 as the float 2**60.
    """
    return isinstance(value, float) or (isinstance(value, int) and abs(value) < 2**53)


def _inexact_constants_as_variables(c: Circuit) -> tuple[Circuit, dict]:
    """``c`` with each constant a float64 would change as a new variable after its own, and ``{name: value}``."""
    named: dict = {}

    def leaf(out: Circuit, node):
        if node.kind == "const" and not _comes_back_from_float64(node.value):
            name = f"_c{len(named)}"
            while name in c._var_index:
                name = "_" + name
            named[name] = node.value
            return out.variable(name)
        return out.variable(node.name) if node.kind == "var" else out.constant(node.value)

    return _rebuilt(c, c.variables, leaf), named


def _substitute(c: Circuit, values: dict) -> Circuit:
    """``c`` with the variables named in ``values`` replaced by those constants."""
    def leaf(out: Circuit, node):
        if node.kind == "var":
            return out.constant(values[node.name]) if node.name in values else out.variable(node.name)
        return out.constant(node.value)

    return _rebuilt(c, [v for v in c.variables if v not in values], leaf)


def _rebuilt(c: Circuit, variables, leaf: Callable) -> Circuit:
    """A new circuit declaring ``variables`` first (their order), then ``c``'s nodes in order:
    each variable or constant made by ``leaf(new circuit, node)`` (a Wire), each gate on its
    operands' new nodes; same outputs and output names."""
    out = Circuit()
    for v in variables:
        out.variable(v)
    mapping = [0] * len(c._nodes)
    for i, node in enumerate(c._nodes):
        if node.kind in ("var", "const"):
            mapping[i] = leaf(out, node).index
        else:
            mapping[i] = out._append(Node(node.kind, tuple(mapping[j] for j in node.operands)))
    out._outputs = [mapping[o] for o in c._outputs]
    out._output_names = list(c._output_names)
    return out


def gradient_circuit(circuit, *, simplify: bool = True) -> GradientCircuit:
    """A circuit computing f and all ∂f/∂xi, built by reverse-mode program transformation.

    ``circuit``: a one-output :class:`Circuit` (or a Wire). ``simplify``: pass the
    result through :func:`simplify` before measuring (default; see the module note).
    Returns a :class:`GradientCircuit` with ``.circuit``, ``.size``,
    ``.original_size`` and ``.ratio`` = S(f, ∇f) / S(f).

    >>> from autograd_dag.circuits import variables
    >>> x, y = variables("x y")
    >>> g = gradient_circuit(Circuit.from_outputs(x * x * y))
    >>> [str(p) for p in g.circuit.to_polynomial()]
    ['x^2*y', '2*x*y', 'x^2']
    >>> g.original_size, g.size, g.ratio <= 5
    (4, 8, True)
    """
    c = circuit.to_circuit() if isinstance(circuit, Wire) else circuit
    if not isinstance(c, Circuit):
        raise CircuitError(f"gradient_circuit: expected a Circuit, got {type(circuit).__name__}")
    c._require_outputs("gradient_circuit")
    if len(c.outputs) != 1:
        raise CircuitError(
            f"gradient_circuit: the circuit has {len(c.outputs)} outputs; a gradient needs a single output"
        )
    # The program runs in float64: a constant it would change (1/3, 2**60 + 1) is an extra
    # input of it, held fixed, and put back as that constant in the circuit read back.
    # (Mapping values back by their float64 turned a float 1/3 beside a Fraction 1/3 into
    # the Fraction, and 2**60 + 1 into the float 2**60.)
    held, named = _inexact_constants_as_variables(c)
    program = held.to_program(name="f")
    if not c.variables:
        grad = program
    else:
        grad = grad_program(program, tuple(range(len(c.variables))), with_value=True)
    g = _substitute(Circuit.from_program(grad), named)
    names = ["f"] + [f"df/d{v}" for v in c.variables]
    g._output_names = names[: len(g._outputs)]
    raw = g.size
    if simplify:
        g = _simplify(g)
    original = c.size
    # The theorem is about fan-in-2 gates; a unary gate stays one edge.
    binarised = sum(max(2 * (len(n.operands) - 1), len(n.operands)) for n in c._nodes)
    return GradientCircuit(
        circuit=g,
        size=g.size,
        original_size=original,
        ratio=(g.size / original) if original else None,
        unsimplified_size=raw,
        simplified=simplify,
        bound=5 * binarised / original if original else 5.0,
    )
