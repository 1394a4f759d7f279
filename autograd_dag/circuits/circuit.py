"""Arithmetic circuits: DAGs of + and × gates over variables and constants (seed §4.1.4).

A :class:`Circuit` stores its nodes in topological order as a flat list of
:class:`Node` records (``kind`` in ``{"var", "const", "add", "mul"}``, operand
indices, variable name or constant value). Every pass — size, depth, evaluation,
expansion, simplification — is one loop over that list, never a recursion, so a
circuit of depth 10**5 is as easy as a shallow one.

Three ways to build one:

* expressions on circuit variables: ``x, y = variables("x y"); e = (x + y) * (x + y) + 3 * x``
  then ``Circuit.from_outputs(e)`` (each operator appends one node to a shared builder);
* gate by gate: ``c = Circuit(); x = c.variable("x"); g = c.add(x, 1); c.set_outputs(c.mul(g, g))``;
* from a traced program: ``Circuit.from_program(program)``.

Circuit size is the number of **edges** (the seed's convention, also
Shpilka–Yehudayoff's): a gate with fan-in k contributes k, roots contribute 0.
"""

from __future__ import annotations

import numbers
import re
from collections import Counter
from fractions import Fraction
from typing import Iterable, Mapping, NamedTuple

import numpy as np

from autograd_dag.core import Tensor, enable_grad
from autograd_dag.errors import CircuitError, located
from autograd_dag.graph import reachable
from autograd_dag.primitives.elementwise import add as _program_add
from autograd_dag.primitives.elementwise import multiply as _program_multiply
from autograd_dag.kinds import ProgramKind
from autograd_dag.program import NodeKind, Program, ProgramNode
from autograd_dag.circuits.polynomial import (
    DEFAULT_MONOMIAL_LIMIT,
    Polynomial,
    add_terms,
    mul_terms,
    normalize_coefficient,
)

GATE_KINDS = ("add", "mul")
# Total term products one expansion may spend, as a multiple of the monomial limit:
# many medium-sized products would otherwise run for hours without any one of them
# crossing the limit.
WORK_BUDGET_FACTOR = 100
# Shape-only primitives: on the one-element values of a scalar program they are the
# identity, and reverse mode emits them to un-broadcast cotangents.
_IDENTITY_OPS = frozenset({"broadcast_to", "reshape", "sum", "transpose"})


def _scalar_of(value, exact_constants: Mapping | None):
    """A program constant (a one-element array) as an exact circuit constant where possible."""
    v = np.asarray(value).reshape(-1)[0].item()
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        if exact_constants and v in exact_constants:
            return exact_constants[v]
        # Integral floats below 2**53 are exactly that integer: keep polynomials exact.
        if v.is_integer() and abs(v) < 2**53:
            return int(v)
    return normalize_coefficient(v)


def _input_variable_names(program: Program) -> dict:
    """One distinct variable name per program input: its own name when that is a free identifier.

    An input without a usable name (or repeating an earlier one) is named ``x{position}``,
    skipping every name an input holds: a fallback equal to another input's name would
    make the two inputs one variable.
    """
    inputs = [n.index for n in program.nodes if n.op is NodeKind.INPUT]
    position = {k: pos for pos, k in enumerate(program.inputs)}
    names: dict = {}
    taken: set = set()
    for k in inputs:
        name = program.nodes[k].name
        if isinstance(name, str) and name.isidentifier() and name not in taken:
            names[k] = name
            taken.add(name)
    for k in inputs:
        if k not in names:
            base = name = f"x{position.get(k, k)}"
            suffix = 0
            while name in taken:
                suffix += 1
                name = f"{base}_{suffix}"
            names[k] = name
            taken.add(name)
    return names


class Node(NamedTuple):
    """One node of a circuit: a root (``var`` / ``const``) or a gate (``add`` / ``mul``).

    ``operands`` are indices of earlier nodes (empty for roots); ``name`` is set for
    variables, ``value`` for constants.
    """

    kind: str
    operands: tuple
    name: str | None = None
    value: object = None


class Wire:
    """A handle on one node of a circuit; Python operators on it append gates.

    ``x + y``, ``x - y`` (= ``x + (-1)·y``), ``-x`` (= ``(-1)·x``), ``x * y``,
    ``x ** n`` (non-negative int, by square-and-multiply) and ``x / c`` for a number
    ``c`` all return new wires; Python numbers mix in as constants. Wires made in
    different circuits can be mixed: the foreign cone is copied in (variables of the
    same name are the same variable).

    >>> x, y = variables("x y")
    >>> str(x * y + 1)
    '%4 = add(%2, %3)'
    >>> str((x * y + 1).to_polynomial())
    'x*y + 1'
    """

    __slots__ = ("circuit", "index")

    def __init__(self, circuit: "Circuit", index: int):
        self.circuit = circuit
        self.index = index

    # The arithmetic all lives in the circuit so that there is one builder code path.
    def __add__(self, other):
        return self.circuit._binary("add", self, other)

    def __radd__(self, other):
        return self.circuit._binary("add", other, self)

    def __mul__(self, other):
        return self.circuit._binary("mul", self, other)

    def __rmul__(self, other):
        return self.circuit._binary("mul", other, self)

    def __neg__(self):
        return self.circuit.neg(self)

    def __pos__(self):
        return self

    def __sub__(self, other):
        return self.circuit.sub(self, other)

    def __rsub__(self, other):
        return self.circuit.sub(other, self)

    def __pow__(self, exponent):
        return self.circuit.pow(self, exponent)

    def __truediv__(self, other):
        if isinstance(other, Wire):
            raise CircuitError(
                f"circuit division {self.circuit._label(self.index)} / {other.circuit._label(other.index)}: "
                "arithmetic circuits have only + and × gates; only division by a number constant is allowed"
            )
        value = normalize_coefficient(other)
        if value == 0:
            raise CircuitError(f"circuit division {self.circuit._label(self.index)} / 0: division by zero")
        inverse = 1.0 / value if isinstance(value, float) else Fraction(1) / value
        return self.circuit._binary("mul", self, normalize_coefficient(inverse))

    def __rtruediv__(self, other):
        raise CircuitError(
            f"circuit division {other!r} / {self.circuit._label(self.index)}: "
            "arithmetic circuits have only + and × gates, so a polynomial cannot be a divisor"
        )

    def __rpow__(self, other):
        raise CircuitError(f"{other!r} ** {self.circuit._label(self.index)}: exponents must be non-negative ints")

    @property
    def node(self) -> Node:
        """The :class:`Node` record this wire points at."""
        return self.circuit._nodes[self.index]

    def to_circuit(self, name: str | None = None) -> "Circuit":
        """A compact circuit with this wire as its only output (only the nodes it needs)."""
        return Circuit.from_outputs(self, names=None if name is None else [name])

    def to_polynomial(self, limit: int | None = DEFAULT_MONOMIAL_LIMIT) -> Polynomial:
        """The polynomial this wire computes (see :meth:`Circuit.to_polynomial`)."""
        return self.to_circuit().to_polynomial(limit=limit)

    def __str__(self) -> str:
        return self.circuit._node_line(self.index)

    def __repr__(self) -> str:
        return f"<Wire {self.circuit._node_line(self.index)}>"


_NAME_SPLIT = re.compile(r"[\s,]+")


def _split_names(names) -> list:
    if isinstance(names, str):
        out = [n for n in _NAME_SPLIT.split(names.strip()) if n]
    else:
        out = list(names)
    for n in out:
        if not isinstance(n, str) or not n.isidentifier():
            raise CircuitError(f"variable name {n!r} is not a Python identifier")
    return out


def variables(names, circuit: "Circuit | None" = None):
    """Create circuit variables to write expressions with.

    ``names``: a string of names separated by spaces or commas, or a list of names.
    Returns one :class:`Wire` for a single name in a string, else a tuple of wires,
    all in one shared builder circuit (``circuit`` if given, else a new one).

    >>> x, y = variables("x y")
    >>> c = Circuit.from_outputs((x + y) * (x + y) + 3 * x)
    >>> c.size, c.num_gates
    (10, 5)
    """
    circuit = Circuit() if circuit is None else circuit
    split = _split_names(names)
    wires = tuple(circuit.variable(n) for n in split)
    if isinstance(names, str) and len(wires) == 1:
        return wires[0]
    return wires


def constant(value, circuit: "Circuit | None" = None) -> Wire:
    """A constant root (int, Fraction or float) as a :class:`Wire`.

    >>> x = variables("x")
    >>> str((constant(2) * x).to_polynomial())
    '2*x'
    """
    circuit = Circuit() if circuit is None else circuit
    return circuit.constant(value)


class Circuit:
    """An arithmetic circuit: nodes in topological order, + and × gates, several outputs.

    Nodes are :class:`Node` records; ``outputs`` are node indices. Measures:
    ``size`` (edges), ``num_gates``, ``depth`` (gates on the longest root-to-output
    path), ``fan_in()``, ``fan_out()``. ``evaluate`` runs Algorithm 4.1,
    ``to_polynomial`` expands exactly.

    >>> c = Circuit()
    >>> x, y = c.variable("x"), c.variable("y")
    >>> s = c.add(x, y)
    >>> c.set_outputs(c.mul(s, s))
    >>> c.size, c.num_gates, c.depth
    (4, 2, 2)
    >>> c.evaluate({"x": 1, "y": 2})
    9
    """

    def __init__(self):
        self._nodes: list = []
        self._var_index: dict = {}
        self._const_index: dict = {}
        self._outputs: list = []
        self._output_names: list = []
        self._imports: dict = {}

    # ------------------------------------------------------------------ building
    def _append(self, node: Node) -> int:
        self._nodes.append(node)
        return len(self._nodes) - 1

    def variable(self, name: str) -> Wire:
        """The variable root ``name`` (created on first use; same wire afterwards)."""
        i = self._var_index.get(name)
        if i is None:
            if not isinstance(name, str) or not name.isidentifier():
                raise CircuitError(f"variable name {name!r} is not a Python identifier")
            i = self._append(Node("var", (), name, None))
            self._var_index[name] = i
        return Wire(self, i)

    def constant(self, value) -> Wire:
        """A constant root (int, Fraction or float); equal constants share one node."""
        value = normalize_coefficient(value)
        key = (type(value), value)
        i = self._const_index.get(key)
        if i is None:
            i = self._append(Node("const", (), None, value))
            self._const_index[key] = i
        return Wire(self, i)

    def node(self, index: int) -> Wire:
        """A wire on an existing node, by index (negative indices count from the end)."""
        n = len(self._nodes)
        if not -n <= index < n:
            raise CircuitError(f"node index {index} out of range for a circuit of {n} nodes")
        return Wire(self, index % n)

    def _operand(self, x) -> int:
        if isinstance(x, Wire):
            if x.circuit is self:
                return x.index
            return self._import(x)
        if isinstance(x, (numbers.Number, Fraction)) and not isinstance(x, complex):
            return self.constant(x).index
        raise CircuitError(
            f"circuit operand {x!r} of type {type(x).__name__}: expected a circuit wire or a number"
        )

    def _import(self, wire: Wire) -> int:
        """Copy the cone of a wire from another circuit into this one; return its index."""
        other = wire.circuit
        memo = self._imports.get(id(other))
        if memo is None or memo[0] is not other:
            memo = (other, {})
            self._imports[id(other)] = memo
        mapping: dict = memo[1]
        if wire.index in mapping:
            return mapping[wire.index]
        onodes = other._nodes
        cone = reachable([wire.index], lambda i: () if i in mapping else onodes[i].operands)
        # Copy in the source's (topological) index order so relative order is kept.
        for i in sorted(i for i in cone if i not in mapping):
            node = onodes[i]
            if node.kind == "var":
                mapping[i] = self.variable(node.name).index
            elif node.kind == "const":
                mapping[i] = self.constant(node.value).index
            else:
                mapping[i] = self._append(Node(node.kind, tuple(mapping[j] for j in node.operands)))
        return mapping[wire.index]

    def _gate(self, kind: str, operands) -> Wire:
        ops = tuple(self._operand(x) for x in operands)
        if len(ops) < 2:
            raise CircuitError(f"{kind} gate needs at least 2 operands, got {len(ops)}")
        return Wire(self, self._append(Node(kind, ops)))

    def _binary(self, kind: str, a, b) -> Wire:
        # Hot path of expression building: one node per operator, no generic tuple building.
        ia = a.index if isinstance(a, Wire) and a.circuit is self else self._operand(a)
        ib = b.index if isinstance(b, Wire) and b.circuit is self else self._operand(b)
        self._nodes.append(Node(kind, (ia, ib)))
        return Wire(self, len(self._nodes) - 1)

    def add(self, *operands) -> Wire:
        """An + gate over 2 or more operands (wires or numbers); fan-in = number of operands."""
        return self._gate("add", operands)

    def mul(self, *operands) -> Wire:
        """A × gate over 2 or more operands (wires or numbers); fan-in = number of operands."""
        return self._gate("mul", operands)

    def neg(self, a) -> Wire:
        """``-a`` as ``(-1) × a`` (a number is negated directly, no gate)."""
        if not isinstance(a, Wire):
            return self.constant(-normalize_coefficient(a))
        return self._binary("mul", -1, a)

    def sub(self, a, b) -> Wire:
        """``a - b`` as ``a + (-1) × b`` (a number ``b`` becomes the constant ``-b``)."""
        if not isinstance(b, Wire):
            return self._binary("add", a, -normalize_coefficient(b))
        return self._binary("add", a, self._binary("mul", -1, b))

    def pow(self, a, exponent: int) -> Wire:
        """``a ** exponent`` for an int exponent ≥ 0, by square-and-multiply (⌊log2 n⌋ + popcount(n) − 1 gates)."""
        if isinstance(exponent, numbers.Integral) and not isinstance(exponent, bool):
            exponent = int(exponent)
        else:
            raise CircuitError(f"circuit power needs a non-negative int exponent, got {exponent!r}")
        if exponent < 0:
            raise CircuitError(f"circuit power needs a non-negative int exponent, got {exponent}")
        if exponent == 0:
            return self.constant(1)
        base = Wire(self, self._operand(a))
        result = base
        for bit in bin(exponent)[3:]:
            result = self._binary("mul", result, result)
            if bit == "1":
                result = self._binary("mul", result, base)
        return result

    def sum(self, operands: Iterable, nary: bool = False) -> Wire:
        """Sum of wires/numbers: a left chain of binary + gates, or one n-ary gate if ``nary``."""
        return self._fold("add", 0, operands, nary)

    def product(self, operands: Iterable, nary: bool = False) -> Wire:
        """Product of wires/numbers: a left chain of binary × gates, or one n-ary gate if ``nary``."""
        return self._fold("mul", 1, operands, nary)

    def _fold(self, kind: str, identity: int, operands: Iterable, nary: bool) -> Wire:
        # No operand gives the gate's identity constant, one gives that operand.
        ops = list(operands)
        if not ops:
            return self.constant(identity)
        if len(ops) == 1:
            return Wire(self, self._operand(ops[0]))
        if nary:
            return self._gate(kind, ops)
        acc = ops[0]
        for x in ops[1:]:
            acc = self._binary(kind, acc, x)
        return acc

    def set_outputs(self, *outputs, names: Iterable | None = None) -> None:
        """Declare the output wires (several allowed; numbers become constant outputs)."""
        if len(outputs) == 1 and isinstance(outputs[0], (list, tuple)):
            outputs = tuple(outputs[0])
        idx = [self._operand(o) for o in outputs]
        names = list(names) if names is not None else [f"out{k}" for k in range(len(idx))]
        if len(names) != len(idx):
            raise CircuitError(f"set_outputs: {len(idx)} outputs but {len(names)} names")
        self._outputs = idx
        self._output_names = [str(n) for n in names]

    @classmethod
    def from_outputs(cls, *outputs, names: Iterable | None = None) -> "Circuit":
        """A new compact circuit holding only the nodes the given output wires need.

        ``outputs``: wires (from one or several builders) or numbers.

        >>> x, y = variables("x y")
        >>> Circuit.from_outputs(x * y, x + y).num_gates
        2
        """
        if len(outputs) == 1 and isinstance(outputs[0], (list, tuple)):
            outputs = tuple(outputs[0])
        c = cls()
        c.set_outputs(*outputs, names=names)
        return c

    @classmethod
    def from_polynomial(cls, polynomial: Polynomial, name: str = "out0") -> "Circuit":
        """The naive circuit for a polynomial: each monomial as a chain of ×, then a chain of +.

        >>> x, y = variables("x y")
        >>> Circuit.from_polynomial(((x + y) ** 2).to_polynomial()).num_gates
        6
        """
        c = cls()
        for v in polynomial.variables:
            c.variable(v)
        terms = []
        for mono, coef in polynomial.sorted_terms():
            factors = [] if coef == 1 and mono else [coef]
            for v, e in mono:
                factors.extend([c.variable(v)] * e)
            terms.append(c.product(factors))
        c.set_outputs(c.sum(terms), names=[name])
        return c

    @classmethod
    def from_program(cls, program: Program, *, exact_constants: Mapping | None = None) -> "Circuit":
        """The circuit of a traced scalar program made of add / subtract / multiply / negative / integer power.

        ``program``: a :class:`~autograd_dag.program.Program` whose nodes all hold one
        element. Inputs become variables (named after the program's inputs), constants
        become constant roots (integral floats as ints; ``exact_constants`` maps other
        float values back to exact ones), ``subtract``/``negative`` become × by −1,
        ``power`` with a static non-negative integer exponent becomes square-and-multiply,
        and shape-only ops are the identity. Any other op raises :class:`CircuitError`
        naming it and its source line.

        >>> import autograd_dag as ad
        >>> prog = ad.trace(lambda x, y: (x + y) * (x - y) + x ** 3, 1.0, 2.0)
        >>> str(Circuit.from_program(prog).to_polynomial())
        'x^3 + x^2 - y^2'
        """
        if not isinstance(program, Program):
            raise CircuitError(f"Circuit.from_program: expected a Program, got {type(program).__name__}")
        c = cls()
        nodes = program.nodes
        mapping = [0] * len(nodes)
        variable_names = _input_variable_names(program)
        for node in nodes:
            k, op = node.index, node.op
            if node.shape and any(d != 1 for d in node.shape):
                raise CircuitError(
                    f"Circuit.from_program: node %{k} = {op} has shape {node.shape}; arithmetic circuits "
                    f"are scalar, so every node must hold exactly one element{located(node.source)}"
                )
            ps = node.parents
            if op is NodeKind.INPUT:
                mapping[k] = c.variable(variable_names[k]).index
            elif not ps:  # constant / parameter roots: a fixed value of the program
                mapping[k] = c.constant(_scalar_of(node.value, exact_constants)).index
            elif op == "add" and len(ps) == 2:
                mapping[k] = c._binary("add", Wire(c, mapping[ps[0]]), Wire(c, mapping[ps[1]])).index
            elif op == "multiply" and len(ps) == 2:
                mapping[k] = c._binary("mul", Wire(c, mapping[ps[0]]), Wire(c, mapping[ps[1]])).index
            elif op == "subtract" and len(ps) == 2:
                mapping[k] = c.sub(Wire(c, mapping[ps[0]]), Wire(c, mapping[ps[1]])).index
            elif op == "negative" and len(ps) == 1:
                mapping[k] = c.neg(Wire(c, mapping[ps[0]])).index
            elif op == "power" and len(ps) == 1 and "exponent" in node.params:
                e = node.params["exponent"]
                if isinstance(e, float) and e.is_integer():
                    e = int(e)
                if not isinstance(e, numbers.Integral) or isinstance(e, bool) or e < 0:
                    raise CircuitError(
                        f"Circuit.from_program: node %{k} = power(exponent={e!r}) is not a non-negative "
                        f"integer power{located(node.source)}"
                    )
                mapping[k] = c.pow(Wire(c, mapping[ps[0]]), int(e)).index
            elif op in _IDENTITY_OPS and len(ps) == 1:
                mapping[k] = mapping[ps[0]]
            else:
                raise CircuitError(
                    f"Circuit.from_program: node %{k} = {op}({', '.join(f'%{p}' for p in ps)}) is not an "
                    f"arithmetic-circuit operation (only add, subtract, multiply, negative and "
                    f"non-negative integer power){located(node.source)}"
                )
        names = [nodes[o].name if isinstance(nodes[o].name, str) else f"out{i}" for i, o in enumerate(program.outputs)]
        c.set_outputs(*[Wire(c, mapping[o]) for o in program.outputs], names=names)
        return c if all(c._live()) else c.prune()

    def to_program(self, name: str = "f") -> Program:
        """The circuit as a :class:`~autograd_dag.program.Program` of ``add`` / ``multiply`` nodes.

        One program input per variable (float64 scalars, named like the variables),
        one ``add``/``multiply`` node per binary gate (an n-ary gate becomes a chain),
        constants as float64 constants (Fractions are rounded to float). Only the nodes
        the outputs need are kept.

        >>> x, y = variables("x y")
        >>> prog = Circuit.from_outputs(x * y + 1).to_program()
        >>> float(prog(2.0, 3.0))
        7.0
        """
        self._require_outputs("to_program")
        live = self._live()
        vals: list = [None] * len(self._nodes)
        with enable_grad():
            inputs = tuple(Tensor(np.float64(0.0), name=v) for v in self._var_index)
            by_name = dict(zip(self._var_index, inputs))
            for i, (kind, ops, vname, value) in enumerate(self._nodes):
                if kind == "var":
                    vals[i] = by_name[vname]
                elif not live[i]:
                    continue
                elif kind == "const":
                    vals[i] = Tensor(np.float64(float(value)))
                else:
                    combine = _program_add if kind == "add" else _program_multiply
                    acc = vals[ops[0]]
                    for j in ops[1:]:
                        acc = combine(acc, vals[j])
                    vals[i] = acc
        outputs = tuple(vals[o] for o in self._outputs)
        for t, oname in zip(outputs, self._output_names):
            if t.prim is not None and t.name is None:
                t.name = oname
        # kind "circuit" tells the renderer to draw + and × gates, not tensor ops.
        program = Program.from_outputs(inputs, outputs, name=name, kind=ProgramKind.CIRCUIT)
        program.single_output = len(outputs) == 1
        return program

    def drawing_program(self, name: str = "f") -> Program:
        """The circuit as drawn (``ad.render``): one node per gate with its true fan-in, every node kept.

        :meth:`to_program` runs on numpy's binary add and multiply, so an n-ary gate is a
        chain of n − 1 nodes there, and its picture had more edges than ``size`` (a gate of
        fan-in 3 drew 4). Here each gate is one node with one edge per operand (an operand
        met twice, x·x, twice): the picture has ``size`` edges, the seed's measure. Like a
        hand-built Graph's program it describes structure only: it is drawn, never run
        (run :meth:`to_program`).

        >>> x, y, z = variables("x y z")
        >>> c = Circuit()
        >>> c.set_outputs(c.add(c.mul(x, y, z), 1))
        >>> prog = c.drawing_program()
        >>> sum(len(n.parents) for n in prog.nodes) == c.size == 5
        True
        """
        self._require_outputs("drawing_program")
        nodes: list = []
        for i, (kind, ops, vname, value) in enumerate(self._nodes):
            if kind == "var":
                nodes.append(ProgramNode(i, NodeKind.INPUT, None, (), None, (), np.float64, name=vname))
            elif kind == "const":
                nodes.append(ProgramNode(i, NodeKind.CONSTANT, None, (), None, (), np.float64,
                                         value=np.float64(float(value))))
            else:   # (op the primitive's name, prim None: the renderer draws + and ×, nothing runs it)
                nodes.append(ProgramNode(i, "add" if kind == "add" else "multiply", None, tuple(ops), None, (),
                                         np.float64))
        for o, oname in zip(self._outputs, self._output_names):
            if nodes[o].parents and nodes[o].name is None:
                nodes[o].name = oname
        program = Program(nodes, list(self._var_index.values()), self._outputs, name=name, kind=ProgramKind.CIRCUIT)
        program.single_output = len(self._outputs) == 1
        return program

    def copy(self) -> "Circuit":
        """An independent copy (same nodes, same outputs)."""
        c = Circuit()
        c._nodes = list(self._nodes)
        c._var_index = dict(self._var_index)
        c._const_index = dict(self._const_index)
        c._outputs = list(self._outputs)
        c._output_names = list(self._output_names)
        return c

    def prune(self) -> "Circuit":
        """A new circuit without the nodes no output depends on (variables are kept)."""
        live = self._live()
        c = Circuit()
        mapping = [0] * len(self._nodes)
        for i, node in enumerate(self._nodes):
            if node.kind == "var":
                mapping[i] = c.variable(node.name).index
            elif not live[i]:
                continue
            elif node.kind == "const":
                mapping[i] = c.constant(node.value).index
            else:
                mapping[i] = c._append(Node(node.kind, tuple(mapping[j] for j in node.operands)))
        c._outputs = [mapping[o] for o in self._outputs]
        c._output_names = list(self._output_names)
        return c

    # ------------------------------------------------------------------ inspection
    @property
    def nodes(self) -> tuple:
        """All nodes in topological order (a tuple of :class:`Node`)."""
        return tuple(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    @property
    def outputs(self) -> tuple:
        """Indices of the output nodes."""
        return tuple(self._outputs)

    @property
    def output_names(self) -> tuple:
        """Names of the outputs (``out0``, ``out1``, … unless given)."""
        return tuple(self._output_names)

    @property
    def variables(self) -> tuple:
        """Variable names in the order they were created."""
        return tuple(self._var_index)

    @property
    def size(self) -> int:
        """Circuit size: the number of edges (sum of the gates' fan-ins)."""
        return sum(len(n.operands) for n in self._nodes)

    @property
    def num_gates(self) -> int:
        """Number of + and × gates."""
        return sum(1 for n in self._nodes if n.operands)

    def _depths(self) -> list:
        depth = [0] * len(self._nodes)
        for i, (kind, ops, _, _) in enumerate(self._nodes):
            if ops:
                depth[i] = 1 + max([depth[j] for j in ops])
        return depth

    @property
    def depth(self) -> int:
        """Gates on the longest root-to-output path (over all nodes if no outputs are set)."""
        if not self._nodes:
            return 0
        d = self._depths()
        if self._outputs:
            return max(d[o] for o in self._outputs)
        return max(d)

    def fan_in(self) -> Counter:
        """Histogram ``{fan-in: number of gates}`` (roots are not gates and not counted)."""
        return Counter(len(n.operands) for n in self._nodes if n.operands)

    def fan_outs(self) -> list:
        """Fan-out of every node, by index: the number of edges leaving it."""
        out = [0] * len(self._nodes)
        for n in self._nodes:
            for j in n.operands:
                out[j] += 1
        return out

    def fan_out(self) -> Counter:
        """Histogram ``{fan-out: number of nodes}`` over all nodes (output half-edges not counted)."""
        return Counter(self.fan_outs())

    def formal_degrees(self) -> list:
        """Formal degree of every node (+ takes the max, × the sum): an upper bound on its polynomial's degree."""
        deg = [0] * len(self._nodes)
        for i, (kind, ops, _, _) in enumerate(self._nodes):
            if kind == "var":
                deg[i] = 1
            elif kind == "add":
                deg[i] = max([deg[j] for j in ops])
            elif kind == "mul":
                deg[i] = sum([deg[j] for j in ops])
        return deg

    def formal_degree(self) -> int:
        """Largest formal degree over the outputs (upper bound on the polynomials' degree)."""
        d = self.formal_degrees()
        return max((d[o] for o in self._outputs), default=0)

    def summary(self) -> dict:
        """Key measures as a dict: nodes, variables, constants, gates, add/mul gates, size, depth, outputs, max fan-in/out."""
        kinds = Counter(n.kind for n in self._nodes)
        fo = self.fan_outs()
        return {
            "nodes": len(self._nodes),
            "variables": kinds["var"],
            "constants": kinds["const"],
            "gates": kinds["add"] + kinds["mul"],
            "add_gates": kinds["add"],
            "mul_gates": kinds["mul"],
            "size": self.size,
            "depth": self.depth,
            "outputs": len(self._outputs),
            "max_fan_in": max((len(n.operands) for n in self._nodes), default=0),
            "max_fan_out": max(fo, default=0),
        }

    def _live(self) -> list:
        """Which nodes some output depends on (one backward sweep)."""
        live = [False] * len(self._nodes)
        for o in self._outputs:
            live[o] = True
        nodes = self._nodes
        for i in range(len(nodes) - 1, -1, -1):
            if live[i]:
                for j in nodes[i].operands:
                    live[j] = True
        return live

    def _require_outputs(self, what: str) -> None:
        if not self._outputs:
            raise CircuitError(f"{what}: the circuit has no outputs; call set_outputs(...) first")

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, values: Mapping | None = None, **kwargs):
        """Evaluate by Algorithm 4.1: node by node in topological order, values freed after last use.

        ``values``: ``{variable name: value}`` (or keyword arguments). Exact over ints and
        Fractions; numpy arrays are evaluated elementwise with broadcasting (Fraction
        constants then become floats). Returns the output's value, or a tuple for
        several outputs.

        >>> x, y = variables("x y")
        >>> Circuit.from_outputs(x * y + Fraction(1, 2)).evaluate(x=3, y=Fraction(1, 3))
        Fraction(3, 2)
        """
        self._require_outputs("evaluate")
        given = dict(values or {})
        given.update(kwargs)
        inputs = {}
        for name in self._var_index:
            if name not in given:
                raise CircuitError(
                    f"evaluate: no value given for variable {name!r} "
                    f"(circuit variables: {', '.join(self._var_index)})"
                )
            inputs[name] = given[name]
        vectorised = any(isinstance(v, (np.ndarray, np.generic)) for v in inputs.values())
        nodes = self._nodes
        n = len(nodes)
        # Last use of each value: after it, the slot is cleared (matters for big arrays).
        last = [-1] * n
        for i, node in enumerate(nodes):
            for j in node.operands:
                last[j] = i
        for o in self._outputs:
            last[o] = n
        vals: list = [None] * n
        for i, (kind, ops, name, value) in enumerate(nodes):
            if kind == "add":
                if len(ops) == 2:
                    a, b = ops
                    vals[i] = vals[a] + vals[b]
                else:
                    acc = vals[ops[0]]
                    for j in ops[1:]:
                        acc = acc + vals[j]
                    vals[i] = acc
            elif kind == "mul":
                if len(ops) == 2:
                    a, b = ops
                    vals[i] = vals[a] * vals[b]
                else:
                    acc = vals[ops[0]]
                    for j in ops[1:]:
                        acc = acc * vals[j]
                    vals[i] = acc
            elif kind == "var":
                vals[i] = inputs[name]
                continue
            else:
                vals[i] = float(value) if vectorised and isinstance(value, Fraction) else value
                continue
            for j in ops:
                if last[j] == i:
                    vals[j] = None
        outs = tuple(vals[o] for o in self._outputs)
        return outs[0] if len(outs) == 1 else outs

    def to_polynomial(self, limit: int | None = DEFAULT_MONOMIAL_LIMIT):
        """Exact expansion of the outputs into canonical sparse polynomials.

        Works node by node in topological order over the nodes the outputs need,
        freeing each polynomial after its last use. Returns a :class:`Polynomial`, or
        a tuple for several outputs. Raises :class:`CircuitError` naming ``limit``
        when some intermediate polynomial would exceed ``limit`` monomials, or when
        the whole expansion would need more than ``100 × limit`` term operations
        (``limit=None`` removes both guards).

        >>> x, y = variables("x y")
        >>> str(Circuit.from_outputs((x + y) * (x + y) + 3 * x).to_polynomial())
        'x^2 + 2*x*y + y^2 + 3*x'
        """
        self._require_outputs("to_polynomial")
        nodes = self._nodes
        n = len(nodes)
        live = self._live()
        last = [-1] * n
        for i, node in enumerate(nodes):
            if live[i]:
                for j in node.operands:
                    last[j] = i
        for o in self._outputs:
            last[o] = n
        polys: list = [None] * n
        work = 0
        budget = None if limit is None else WORK_BUDGET_FACTOR * limit
        for i, (kind, ops, name, value) in enumerate(nodes):
            if not live[i]:
                continue
            if kind == "var":
                polys[i] = {((name, 1),): 1}
                continue
            if kind == "const":
                polys[i] = {(): value} if value != 0 else {}
                continue
            acc = polys[ops[0]]
            for j in ops[1:]:
                b = polys[j]
                if kind == "add":
                    work += len(acc) + len(b)
                    acc = add_terms(acc, b, limit)
                else:
                    work += max(len(acc), 1) * max(len(b), 1)
                    acc = mul_terms(acc, b, limit)
            if budget is not None and work > budget:
                raise CircuitError(
                    f"to_polynomial: expansion needs more than {budget:,} term operations "
                    f"({WORK_BUDGET_FACTOR} × the monomial limit of {limit:,}) by node %{i}; "
                    "pass a larger limit= or use equivalent(), which falls back to random evaluation"
                )
            polys[i] = acc
            for j in ops:
                if last[j] == i:
                    polys[j] = None
        out = []
        for o in self._outputs:
            terms = {m: normalize_coefficient(c) for m, c in polys[o].items()}
            out.append(Polynomial._from_terms(terms))
        return out[0] if len(out) == 1 else tuple(out)

    # ------------------------------------------------------------------ printing
    def _label(self, i: int) -> str:
        node = self._nodes[i]
        if node.kind == "var":
            return node.name
        if node.kind == "const":
            return repr(node.value) if not isinstance(node.value, Fraction) else str(node.value)
        return f"%{i}"

    def _node_line(self, i: int) -> str:
        kind, ops, name, value = self._nodes[i]
        if kind == "var":
            return f"%{i} = var {name}"
        if kind == "const":
            return f"%{i} = const {value}"
        return f"%{i} = {kind}({', '.join(f'%{j}' for j in ops)})"

    def __str__(self) -> str:
        lines = [self._node_line(i) for i in range(len(self._nodes))]
        outs = ", ".join(f"{n}=%{o}" for n, o in zip(self._output_names, self._outputs))
        lines.append(f"outputs: {outs or '(none)'}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"<Circuit: {len(self._var_index)} variables, {self.num_gates} gates, "
            f"size {self.size}, depth {self.depth}, {len(self._outputs)} outputs>"
        )
