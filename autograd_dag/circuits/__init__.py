"""Arithmetic circuits over + and × (seed 001 §4.1.4): size, depth, polynomials, gradients.

A circuit is a DAG whose roots are variables or constants and whose gates are + and
×; its size is its number of edges. Build one from expressions, gate by gate, from a
string, or from a traced program; then measure it, expand it into its polynomial,
compare it with another circuit, simplify it, and build its gradient circuit.

Example:
    >>> from autograd_dag import circuits
    >>> x, y = circuits.variables("x y")
    >>> c = circuits.Circuit.from_outputs((x + y) * (x + y) + 3 * x)
    >>> c.size, c.num_gates, c.depth
    (10, 5, 3)
    >>> print(c.to_polynomial())
    x^2 + 2*x*y + y^2 + 3*x
    >>> circuits.gradient_circuit(c).ratio <= 5
    True
"""

from autograd_dag.circuits.circuit import Circuit, Node, Wire, constant, variables
from autograd_dag.circuits.equivalence import EquivalenceResult, equivalent
from autograd_dag.circuits.families import family_table, format_family_table
from autograd_dag.circuits.gradient import GradientCircuit, gradient_circuit
from autograd_dag.circuits.parse import parse
from autograd_dag.circuits.polynomial import DEFAULT_MONOMIAL_LIMIT, Polynomial
from autograd_dag.circuits.simplify import simplify

__all__ = [
    "Circuit", "Node", "Wire", "variables", "constant", "Polynomial", "DEFAULT_MONOMIAL_LIMIT",
    "equivalent", "EquivalenceResult", "simplify", "family_table", "format_family_table",
    "parse", "gradient_circuit", "GradientCircuit",
]
