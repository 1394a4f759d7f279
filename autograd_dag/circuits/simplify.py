"""Circuit simplification that never changes the polynomial computed.

One forward sweep in topological order over the nodes the outputs need:

* constant folding — the constant operands of a gate are combined into one;
* identities — ``x + 0`` → ``x``, ``x · 1`` → ``x``, ``x · 0`` → ``0``;
* hash-consing with commutative normalisation — a gate's operands are sorted, and
  a gate equal to one already built (same kind, same operands) is reused, so common
  subexpressions such as the two ``x + y`` in ``(x + y)(x + y)`` become one node.

Every rule rewrites one gate into something with no more operands, so the size
(edges) never grows. Nodes no output depends on are dropped; variables are kept.
"""

from __future__ import annotations

from autograd_dag.circuits.circuit import Circuit, Node
from autograd_dag.circuits.polynomial import normalize_coefficient


def simplify(circuit: Circuit) -> Circuit:
    """A new, equivalent circuit with common subexpressions shared and constants folded.

    ``circuit``: any :class:`Circuit` with outputs. Returns a new Circuit (the input is
    untouched) computing the same polynomials, with ``size`` no larger.

    >>> from autograd_dag.circuits import variables, Circuit
    >>> x, y = variables("x y")
    >>> c = Circuit.from_outputs((x + y) * (y + x) * 1 + 0 * x)
    >>> c.size, simplify(c).size
    (12, 4)
    """
    circuit._require_outputs("simplify")
    nodes = circuit._nodes
    live = circuit._live()
    out = Circuit()
    new_nodes = out._nodes
    # new index -> constant value, for the nodes of `out` that are constants
    const_of: dict = {}
    # (kind, sorted operands) -> new index: the hash-consing table
    table: dict = {}
    mapping = [0] * len(nodes)

    def const_index(value) -> int:
        i = out.constant(value).index
        const_of[i] = new_nodes[i].value
        return i

    for i, (kind, ops, name, value) in enumerate(nodes):
        if kind == "var":
            mapping[i] = out.variable(name).index
            continue
        if not live[i]:
            continue
        if kind == "const":
            mapping[i] = const_index(value)
            continue
        is_add = kind == "add"
        folded = 0 if is_add else 1
        operands = []
        for j in ops:
            m = mapping[j]
            c = const_of.get(m)
            if c is None:
                operands.append(m)
            elif is_add:
                folded = folded + c
            else:
                folded = folded * c
        folded = normalize_coefficient(folded)
        if not is_add and folded == 0:
            mapping[i] = const_index(0)
            continue
        if not operands:
            mapping[i] = const_index(folded)
            continue
        operands.sort()
        neutral = folded == (0 if is_add else 1)
        if neutral and len(operands) == 1:
            mapping[i] = operands[0]
            continue
        if not neutral:
            operands.append(const_index(folded))
        key = (kind, tuple(operands))
        hit = table.get(key)
        if hit is None:
            new_nodes.append(Node(kind, key[1]))
            hit = len(new_nodes) - 1
            table[key] = hit
        mapping[i] = hit
    out._outputs = [mapping[o] for o in circuit._outputs]
    out._output_names = list(circuit._output_names)
    # A gate built before a later fold made it unread (x·c, then (x·c)·0 → 0) is dead
    # in `out` though live in `circuit`: drop it, or the size counts it.
    return out.prune()


__all__ = ["simplify"]
