"""Do two circuits compute the same polynomials? Exactly when small, randomly when not.

Exact: expand both (``to_polynomial``) under a small monomial limit and compare.
Randomised (Schwartz–Zippel): evaluate both at k random points, each in a field F_p
for a prime p drawn at random from [2**60, 2**61). The difference Δ of two outputs
can vanish in F_p although it is non-zero over Q — when p divides all its
coefficients: (2**61 − 1)·x, or 2**61·x − x, vanish modulo 2**61 − 1, so one fixed
prime would call those circuits equivalent. With a random prime that happens with
probability at most (log2 H / 60) / N, H a bound on Δ's coefficients (read off the
circuits' constants, one pass each) and N > 2.4e16 the number of primes in the
range; otherwise Δ mod p, of degree ≤ d, vanishes at a random point with
probability at most d/p ≤ d/2**60. k agreeing trials leave an error probability of
at most that sum to the power k, where d bounds the degree of the difference (the
larger formal degree of the two circuits). "Not equivalent" answers are always
certain: they come with the point (and the prime) where the circuits differ.

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
# The randomised test draws its primes from [2**PRIME_BITS_LOW, 2**(PRIME_BITS_LOW + 1)).
PRIME_BITS_LOW = 60
# A lower bound on the number of primes in that range (Dusart's bounds on π(x) give 2.7e16).
PRIMES_IN_RANGE = 2.4e16
# Miller–Rabin with these bases decides primality for every n < 3.3e24 (> 2**61).
_WITNESSES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
DEFAULT_TRIALS = 20
# Expansion is tried first with this limit; past it the randomised test is used.
EXACT_MONOMIAL_LIMIT = 5_000


@dataclass
class EquivalenceResult:
    """The answer of :func:`equivalent`.

    ``equivalent``: the verdict. ``method``: ``"exact"`` or ``"schwartz-zippel"``.
    ``error_probability``: 0 for exact answers and for "not equivalent"; otherwise
    the bound (degree/2**60 + (log2 H/60)/N)**trials of the module note (also as
    ``log10_error_probability``, which does not underflow). ``prime``: the last
    prime the randomised test used. ``counterexample``: for a randomised "no", the point
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
            f"{verdict} (Schwartz–Zippel over F_p, random primes p in [2^60, 2^61), {self.trials} trials, degree ≤ "
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


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    for q in _WITNESSES:
        if n % q == 0:
            return n == q
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in _WITNESSES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _random_prime(rng: random.Random) -> int:
    """A prime drawn uniformly from [2**60, 2**61): uniform draws until one is prime."""
    low = 1 << PRIME_BITS_LOW
    while True:
        n = rng.randrange(low, 2 * low) | 1
        if _is_prime(n):
            return n


def _log2_sum(values) -> float:
    values = [v for v in values if v != -math.inf]
    if not values:
        return -math.inf
    top = max(values)
    if top == math.inf:
        return math.inf
    return top + math.log2(sum(2.0 ** (v - top) for v in values))


def _log2_bounds(circuit: Circuit) -> tuple:
    """Per output, log2 of (|Q|₁, E) where the output is Q/E, Q with integer coefficients.

    Constants a/b give (|a|, b); × multiplies both; Σ Q_j/E_j = (Σ Q_j Π_{i≠j} E_i)/Π E_j.
    Also returns log2 of the product of all constants' denominators.
    """
    q = [0.0] * len(circuit._nodes)
    e = [0.0] * len(circuit._nodes)
    denominators = 0.0
    for i, (kind, ops, _, value) in enumerate(circuit._nodes):
        if kind == "const":
            frac = Fraction(value)
            q[i] = math.log2(abs(frac.numerator)) if frac.numerator else -math.inf
            e[i] = math.log2(frac.denominator)
            denominators += e[i]
        elif kind == "mul":
            q[i] = math.fsum(q[j] for j in ops) if all(q[j] != -math.inf for j in ops) else -math.inf
            e[i] = math.fsum(e[j] for j in ops)
        elif kind == "add":
            e[i] = math.fsum(e[j] for j in ops)
            q[i] = _log2_sum([q[j] + e[i] - e[j] for j in ops])
    return [(q[o], e[o]) for o in circuit._outputs], denominators


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
    prime = PRIME
    for _ in range(trials):
        while True:
            prime = _random_prime(rng)
            point = {n: rng.randrange(prime) for n in names}
            try:
                va, vb = evaluate_mod(a, point, prime), evaluate_mod(b, point, prime)
            except CircuitError:
                continue  # a constant's denominator is divisible by this prime: draw another
            break
        if va != vb:
            k = next(i for i, (u, v) in enumerate(zip(va, vb)) if u != v)
            return EquivalenceResult(
                False, "schwartz-zippel", 0.0, trials, degree, prime=prime,
                counterexample={"output": k, "point": point, "prime": prime}, notes=notes
            )
    # Δ = Qa/Ea − Qb/Eb = (Qa·Eb − Qb·Ea)/(Ea·Eb): its integer numerator's coefficients
    # are at most H = |Qa|₁·Eb + |Qb|₁·Ea, and a non-zero one has at most log2(H)/60
    # prime factors ≥ 2**60. Primes dividing a denominator were skipped: fewer to draw from.
    (bounds_a, den_a), (bounds_b, den_b) = _log2_bounds(a), _log2_bounds(b)
    log2_height = max(_log2_sum([qa + eb, qb + ea]) for (qa, ea), (qb, eb) in zip(bounds_a, bounds_b))
    primes = PRIMES_IN_RANGE - (den_a + den_b) / PRIME_BITS_LOW
    bad_primes = max(log2_height, 0.0) / PRIME_BITS_LOW
    per_trial = degree / 2**PRIME_BITS_LOW + (bad_primes / primes if primes > 0 else math.inf)
    per_trial = min(1.0, per_trial) if not math.isnan(per_trial) else 1.0
    if per_trial >= 1.0:
        notes.append(f"formal degree {degree} or coefficients of up to 2^{log2_height:.3g} too large for "
                     "primes of 61 bits: the random test proves nothing")
    log10 = trials * math.log10(per_trial) if per_trial > 0 else float("-inf")
    return EquivalenceResult(
        True, "schwartz-zippel", per_trial**trials, trials, degree, prime=prime, notes=notes,
        log10_error_probability=log10
    )
