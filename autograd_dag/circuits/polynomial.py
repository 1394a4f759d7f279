"""Exact sparse multivariate polynomials: the thing an arithmetic circuit computes.

A polynomial is a dict ``monomial -> coefficient``. A monomial is a tuple of
``(variable name, exponent)`` pairs sorted by name, with positive exponents; the
empty tuple is the constant monomial. Coefficients are Python ``int``,
``fractions.Fraction`` (exact) or ``float``; zero coefficients are never stored,
so two polynomials are equal exactly when their dicts are equal.

Expansion can blow up (``(x1 + y1) * ... * (x40 + y40)`` has 2**40 terms), so every
product checks a monomial limit and raises :class:`CircuitError` naming it rather
than running for hours.
"""

from __future__ import annotations

import math
import numbers
import re
from fractions import Fraction
from typing import Iterable, Mapping

from autograd_dag.errors import CircuitError

DEFAULT_MONOMIAL_LIMIT = 100_000
# A product of two polynomials may cost len(a) * len(b) term products even when the
# result is small (cancellation); bounding the work too keeps expansion from hanging.
_WORK_FACTOR = 50

Monomial = tuple  # tuple[tuple[str, int], ...]


def normalize_coefficient(value):
    """Return ``value`` as an int, Fraction or float; reject other types.

    Fractions with denominator 1 become ints so that printing and hashing are canonical.

    >>> normalize_coefficient(Fraction(4, 2))
    2
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else value
    if isinstance(value, float):
        return _finite(value)
    # numpy scalars and other registered numbers, converted without losing exactness
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Rational):
        return normalize_coefficient(Fraction(int(value.numerator), int(value.denominator)))
    if isinstance(value, numbers.Real):
        return _finite(float(value))
    raise CircuitError(
        f"constant {value!r} of type {type(value).__name__} is not a field element: "
        "use an int, a fractions.Fraction or a float"
    )


def _finite(value: float) -> float:
    # inf and nan are no field elements: x·inf expanded to "inf*x", its gradient circuit to nan
    # with a RuntimeWarning only, and equivalent() crashed with "cannot convert Infinity to
    # integer ratio".
    if not math.isfinite(value):
        raise CircuitError(f"coefficient {value!r} is not a finite number (a float constant, or float constants "
                           f"multiplied past 1.8e308): circuits compute over the rationals")
    return value


def mono_mul(a: Monomial, b: Monomial) -> Monomial:
    """Product of two monomials (sorted tuples of ``(name, exponent)``)."""
    if not a:
        return b
    if not b:
        return a
    merged = dict(a)
    for name, exp in b:
        merged[name] = merged.get(name, 0) + exp
    return tuple(sorted(merged.items()))


def canonical_monomial(pairs: Iterable) -> Monomial:
    """``(name, exponent)`` pairs as a monomial: a name given twice has its exponents added, zeros dropped.

    >>> canonical_monomial([("y", 1), ("x", 1), ("x", 2), ("z", 0)])
    (('x', 3), ('y', 1))
    """
    exponents: dict = {}
    for name, e in pairs:
        if isinstance(e, bool) or not isinstance(e, numbers.Real) or int(e) != e or e < 0:
            raise CircuitError(f"monomial exponent {e!r} of {name!r} is not a non-negative integer")
        exponents[str(name)] = exponents.get(str(name), 0) + int(e)
    return tuple(sorted((n, e) for n, e in exponents.items() if e))


def mono_degree(m: Monomial) -> int:
    """Total degree of a monomial."""
    return sum(e for _, e in m)


def _limit_error(limit: int, what: str) -> CircuitError:
    return CircuitError(
        f"polynomial expansion exceeds the monomial limit of {limit:,} terms ({what}); "
        "pass a larger limit= or compare circuits with equivalent(), which falls back "
        "to random evaluation"
    )


def add_terms(a: dict, b: dict, limit: int | None = DEFAULT_MONOMIAL_LIMIT) -> dict:
    """Sum of two term dicts (new dict; inputs untouched)."""
    if len(b) > len(a):
        a, b = b, a
    out = dict(a)
    for m, c in b.items():
        s = out.get(m, 0) + c
        if s == 0:
            out.pop(m, None)
        else:
            out[m] = s
    if limit is not None and len(out) > limit:
        raise _limit_error(limit, f"a sum has {len(out):,} terms")
    return out


def scale_terms(a: dict, c) -> dict:
    """``c * a`` for a scalar ``c`` (new dict)."""
    if c == 0:
        return {}
    if c == 1:
        return dict(a)
    out = {}
    for m, v in a.items():
        p = v * c
        if p != 0:
            out[m] = p
    return out


def mul_terms(a: dict, b: dict, limit: int | None = DEFAULT_MONOMIAL_LIMIT) -> dict:
    """Product of two term dicts, raising CircuitError past ``limit`` terms."""
    if len(a) == 1 and () in a:
        return scale_terms(b, a[()])
    if len(b) == 1 and () in b:
        return scale_terms(a, b[()])
    if limit is not None and len(a) * len(b) > _WORK_FACTOR * limit:
        raise _limit_error(
            limit, f"a product of {len(a):,} by {len(b):,} terms needs {len(a) * len(b):,} term products"
        )
    out: dict = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = mono_mul(ma, mb)
            s = out.get(m, 0) + ca * cb
            if s == 0:
                out.pop(m, None)
            else:
                out[m] = s
        if limit is not None and len(out) > limit:
            raise _limit_error(limit, f"a product reached {len(out):,} terms")
    return out


_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str):
    """Sort key putting ``x2`` before ``x10``."""
    return [int(p) if p.isdigit() else p for p in _DIGITS.split(name)]


def _format_coefficient(c) -> str:
    if isinstance(c, Fraction):
        return f"({c.numerator}/{c.denominator})"
    return repr(c) if isinstance(c, float) else str(c)


def _format_monomial(m: Monomial) -> str:
    return "*".join(name if e == 1 else f"{name}^{e}" for name, e in m)


class Polynomial:
    """An exact sparse polynomial over int / Fraction / float coefficients (immutable).

    ``terms`` maps monomials — tuples of ``(variable, exponent)`` sorted by variable —
    to non-zero coefficients. Printing is canonical (graded order, highest degree
    first, variables in natural order), so equal polynomials print identically.

    >>> x, y = Polynomial.variable("x"), Polynomial.variable("y")
    >>> str((x + y) * (x + y) + 3 * x)
    'x^2 + 2*x*y + y^2 + 3*x'
    >>> ((x + y) ** 2).degree
    2
    """

    __slots__ = ("_terms", "_hash")

    def __init__(self, terms: Mapping | None = None):
        clean: dict = {}
        for m, c in (terms or {}).items():
            c = normalize_coefficient(c)
            if c != 0:
                mono = canonical_monomial(m)
                clean[mono] = normalize_coefficient(clean.get(mono, 0) + c)
                if clean[mono] == 0:
                    del clean[mono]
        self._terms = clean
        self._hash = None

    @classmethod
    def _from_terms(cls, terms: dict) -> "Polynomial":
        # Trusted fast path: terms already canonical (used by circuit expansion).
        p = cls.__new__(cls)
        p._terms = terms
        p._hash = None
        return p

    @classmethod
    def variable(cls, name: str) -> "Polynomial":
        """The polynomial ``name`` (degree 1)."""
        return cls._from_terms({((name, 1),): 1})

    @classmethod
    def constant(cls, value) -> "Polynomial":
        """The constant polynomial ``value`` (int, Fraction or float)."""
        value = normalize_coefficient(value)
        return cls._from_terms({(): value} if value != 0 else {})

    # -- inspection -------------------------------------------------------------
    @property
    def terms(self) -> dict:
        """A copy of the ``monomial -> coefficient`` dict."""
        return dict(self._terms)

    def __len__(self) -> int:
        return len(self._terms)

    @property
    def num_terms(self) -> int:
        """Number of monomials with a non-zero coefficient."""
        return len(self._terms)

    @property
    def degree(self) -> int:
        """Total degree; ``-1`` for the zero polynomial (by convention)."""
        return max((mono_degree(m) for m in self._terms), default=-1)

    @property
    def variables(self) -> tuple:
        """Names of the variables that occur, in natural order (``x2`` before ``x10``)."""
        names = {n for m in self._terms for n, _ in m}
        return tuple(sorted(names, key=natural_key))

    def coefficient(self, monomial: Mapping | Iterable = ()) -> object:
        """Coefficient of a monomial given as ``{"x": 2, "y": 1}`` or pairs; 0 if absent."""
        items = monomial.items() if isinstance(monomial, Mapping) else monomial
        return self._terms.get(canonical_monomial(items), 0)

    def is_zero(self) -> bool:
        """True for the zero polynomial."""
        return not self._terms

    # -- arithmetic -------------------------------------------------------------
    def _coerce(self, other):
        if isinstance(other, Polynomial):
            return other._terms
        try:
            c = normalize_coefficient(other)
        except CircuitError:
            return None
        return {(): c} if c != 0 else {}

    def __add__(self, other):
        t = self._coerce(other)
        if t is None:
            return NotImplemented
        return Polynomial._from_terms(_normalize_all(add_terms(self._terms, t, None)))

    __radd__ = __add__

    def __neg__(self):
        return Polynomial._from_terms({m: -c for m, c in self._terms.items()})

    def __sub__(self, other):
        t = self._coerce(other)
        if t is None:
            return NotImplemented
        return self + Polynomial._from_terms({m: -c for m, c in t.items()})

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        t = self._coerce(other)
        if t is None:
            return NotImplemented
        return Polynomial._from_terms(_normalize_all(mul_terms(self._terms, t, None)))

    __rmul__ = __mul__

    def multiply(self, other: "Polynomial", limit: int | None = DEFAULT_MONOMIAL_LIMIT) -> "Polynomial":
        """Product with a monomial limit (raises CircuitError naming it when exceeded)."""
        t = self._coerce(other)
        return Polynomial._from_terms(_normalize_all(mul_terms(self._terms, t, limit)))

    def __pow__(self, n: int):
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise CircuitError(f"polynomial power needs a non-negative integer exponent, got {n!r}")
        result: dict = {(): 1}
        base = self._terms
        # Square-and-multiply keeps the number of products logarithmic in n.
        while n:
            if n & 1:
                result = mul_terms(result, base, None)
            n >>= 1
            if n:
                base = mul_terms(base, base, None)
        return Polynomial._from_terms(_normalize_all(result))

    def derivative(self, variable: str) -> "Polynomial":
        """Partial derivative with respect to ``variable``.

        >>> x, y = Polynomial.variable("x"), Polynomial.variable("y")
        >>> str((x * x * y).derivative("x"))
        '2*x*y'
        """
        out: dict = {}
        for m, c in self._terms.items():
            for i, (n, e) in enumerate(m):
                if n == variable:
                    rest = m[:i] + (((n, e - 1),) if e > 1 else ()) + m[i + 1 :]
                    out[rest] = normalize_coefficient(out.get(rest, 0) + c * e)
                    if out[rest] == 0:
                        del out[rest]
                    break
        return Polynomial._from_terms(out)

    def evaluate(self, values: Mapping):
        """Value at a point ``{name: value}`` (exact for int / Fraction values)."""
        total = 0
        for m, c in self._terms.items():
            term = c
            for n, e in m:
                if n not in values:
                    raise CircuitError(f"evaluate: no value given for variable {n!r}")
                term = term * values[n] ** e
            total = total + term
        return total

    # -- comparison and printing -------------------------------------------------
    def __eq__(self, other):
        t = self._coerce(other)
        if t is None:
            return NotImplemented
        return self._terms == t

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(frozenset(self._terms.items()))
        return self._hash

    def sorted_terms(self) -> list:
        """``(monomial, coefficient)`` pairs in canonical printing order."""
        order = {n: i for i, n in enumerate(self.variables)}
        nvars = len(order)

        def key(item):
            m = item[0]
            exps = [0] * nvars
            for n, e in m:
                exps[order[n]] = -e
            return (-mono_degree(m), exps)

        return sorted(self._terms.items(), key=key)

    def __str__(self) -> str:
        if not self._terms:
            return "0"
        parts: list[str] = []
        for m, c in self.sorted_terms():
            negative = c < 0
            a = -c if negative else c
            if not m:
                body = _format_coefficient(a)
            elif a == 1 and not isinstance(a, float):
                body = _format_monomial(m)
            else:
                body = f"{_format_coefficient(a)}*{_format_monomial(m)}"
            if not parts:
                parts.append(f"-{body}" if negative else body)
            else:
                parts.append(f"{'-' if negative else '+'} {body}")
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Polynomial({str(self)!r})"


def _normalize_all(terms: dict) -> dict:
    for m, c in terms.items():
        if isinstance(c, Fraction) and c.denominator == 1:
            terms[m] = c.numerator
    return terms
