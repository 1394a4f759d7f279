from autograd_dag.circuits.circuit import Circuit, Node, Wire, constant, variables
from autograd_dag.circuits.polynomial import Polynomial
