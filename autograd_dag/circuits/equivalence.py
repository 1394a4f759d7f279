"""Do two circuits compute the same polynomials? Exactly when small, randomly when not.

Exact: expand both (``to_polynomial``) under a small monomial limit and compare.
Randomised (Schwartz–Zippel): evaluate both at k random points of the prime field
F_p, p = 2**61 − 1. A non-zero polynomial of degree d vanishes at a uniformly random
point with probability at most d/p, so k agreeing trials leave an error probability
of at most (d/p)**k, where d bounds the degree of the difference (the larger formal
degree of the two circuits). "Not equivalent" answers are always certain: they come
with the point where the circuits differ.

Coefficients are read exactly over the rationals: Fractions are reduced mod p, and
floats are taken as the exact binary fractions they are (``Fraction(0.1)``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from fractions import Fraction

from autograd_dag.errors import CircuitError
from autograd_dag.circuits.circuit import Circuit, Wire

PRIME = 2**61 - 1
DEFAULT_TRIALS = 20
# Expansion is tried first with this limit; past it the randomised test is used.
EXACT_MONOMIAL_LIMIT = 5_000


@dataclass
class EquivalenceResult:
    """The answer of :func:`equivalent`.

    ``equivalent``: the verdict. ``method``: ``"exact"`` or ``"schwartz-zippel"``.
    ``error_probability``: 0 for exact answers and for "not equivalent"; otherwise
    the bound (degree/p)**trials (also as ``log10_error_probability``, which does not
    underflow). ``counterexample``: for a randomised "no", the point
    (a dict of field elements) where the outputs differ; for an exact "no", the index
    of the first differing output and the difference polynomial.
    """

    equivalent: bool
    method: str
    error_probability: float
    trials: int = 0
    degree_bound: int = 0
    prime: int = PRIME
    counterexample: dict | None = None
    notes: list = field(default_factory=list)
    # error_probability underflows to 0.0 below ~1e-308; its log10 does not.
    log10_error_probability: float = float("-inf")

    def __bool__(self) -> bool:
        return self.equivalent

    def __str__(self) -> str:
        verdict = "equivalent" if self.equivalent else "NOT equivalent"
        if self.method == "exact":
            return f"{verdict} (exact: polynomials expanded and compared)"
        if not self.equivalent:
            return f"{verdict} (Schwartz–Zippel: outputs differ at {self.counterexample})"
        return (
            f"{verdict} (Schwartz–Zippel over F_p, p = 2^61 - 1, {self.trials} trials, degree ≤ "
            f"{self.degree_bound}: error probability ≤ 10^{self.log10_error_probability:.1f})"
        )


def _as_circuit(c) -> Circuit:
    if isinstance(c, Wire):
        return c.to_circuit()
    if isinstance(c, Circuit):
        return c
    raise CircuitError(f"equivalent: expected a Circuit or a circuit Wire, got {type(c).__name__}")


def _mod(value, p: int) -> int:
    if isinstance(value, int):
        return value % p
    frac = Fraction(value)  # exact for floats
    if frac.denominator % p == 0:
        raise CircuitError(f"equivalent: constant {value!r} has a denominator divisible by p = {p}")
    return frac.numerator * pow(frac.denominator, -1, p) % p


def evaluate_mod(circuit: Circuit, point: dict, p: int = PRIME) -> tuple:
    """Outputs of ``circuit`` at ``point`` (``{name: int}``) with arithmetic in F_p.

    >>> from autograd_dag.circuits import variables
    >>> x = variables("x")
    >>> evaluate_mod(Circuit.from_outputs(x * x + 1), {"x": 3}, 7)
    (3,)
    """
    nodes = circuit._nodes
    vals = [0] * len(nodes)
    for i, (kind, ops, name, value) in enumerate(nodes):
        if kind == "add":
            acc = 0
            for j in ops:
                acc += vals[j]
            vals[i] = acc % p
        elif kind == "mul":
            acc = 1
            for j in ops:
                acc = acc * vals[j] % p
            vals[i] = acc
        elif kind == "var":
            vals[i] = point[name] % p
        else:
            vals[i] = _mod(value, p)
    return tuple(vals[o] for o in circuit._outputs)


def equivalent(
    c1,
    c2,
    *,
    method: str = "auto",
    trials: int = DEFAULT_TRIALS,
    seed: int | None = None,
    exact_limit: int = EXACT_MONOMIAL_LIMIT,
) -> EquivalenceResult:
    """Decide whether two circuits compute the same polynomial(s), output by output.

    ``c1``, ``c2``: Circuits (or Wires) with the same number of outputs. ``method``:
    ``"auto"`` (exact if both expand within ``exact_limit`` monomials, else
    randomised), ``"exact"`` or ``"random"``. ``trials``: k random points; ``seed``
    makes the points reproducible.

    >>> from autograd_dag.circuits import variables
    >>> x, y = variables("x y")
    >>> equivalent((x + y) * (x + y), x * x + 2 * x * y + y * y).equivalent
    True
    >>> r = equivalent((x + y) ** 64, (y + x) ** 64, method="random", seed=0)
    >>> r.method, r.equivalent, r.error_probability < 1e-300
    ('schwartz-zippel', True, True)
    """
    a, b = _as_circuit(c1), _as_circuit(c2)
    a._require_outputs("equivalent")
    b._require_outputs("equivalent")
    if len(a.outputs) != len(b.outputs):
        raise CircuitError(
            f"equivalent: the circuits have {len(a.outputs)} and {len(b.outputs)} outputs; "
            "they can only be compared output by output"
        )
    if method not in ("auto", "exact", "random"):
        raise CircuitError(f"equivalent: method must be 'auto', 'exact' or 'random', got {method!r}")
    notes = []
    if method in ("auto", "exact"):
        limit = None if method == "exact" else exact_limit
        try:
            pa, pb = a.to_polynomial(limit=limit), b.to_polynomial(limit=limit)
        except CircuitError as exc:
            if method == "exact":
                raise
            notes.append(f"expansion abandoned: {exc}")
        else:
            pa = pa if isinstance(pa, tuple) else (pa,)
            pb = pb if isinstance(pb, tuple) else (pb,)
            for k, (u, v) in enumerate(zip(pa, pb)):
                if u != v:
                        return EquivalenceResult(
                        False, "exact", 0.0, counterexample={"output": k, "difference": str(u - v)}, notes=notes
                    )
            return EquivalenceResult(True, "exact", 0.0, notes=notes)
    if trials < 1:
        raise CircuitError(f"equivalent: trials must be ≥ 1, got {trials}")
    names = list(dict.fromkeys(list(a.variables) + list(b.variables)))
    rng = random.Random(seed)
    degree = max(a.formal_degree(), b.formal_degree())
    for _ in range(trials):
        point = {n: rng.randrange(PRIME) for n in names}
        va, vb = evaluate_mod(a, point), evaluate_mod(b, point)
        if va != vb:
            k = next(i for i, (u, v) in enumerate(zip(va, vb)) if u != v)
            return EquivalenceResult(
                False, "schwartz-zippel", 0.0, trials, degree, counterexample={"output": k, "point": point}, notes=notes
            )
    per_trial = min(1.0, degree / PRIME)
    if per_trial >= 1.0:
        notes.append(f"formal degree {degree} ≥ p: the random test proves nothing")
    log10 = trials * math.log10(per_trial) if per_trial > 0 else float("-inf")
    return EquivalenceResult(
        True, "schwartz-zippel", per_trial**trials, trials, degree, notes=notes, log10_error_probability=log10
    )
