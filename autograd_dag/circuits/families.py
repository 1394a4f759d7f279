"""Families of circuits computing the same polynomial in different sizes.

Each builder returns a :class:`Circuit`; :func:`family_table` measures them side by
side (size in edges, gates, depth) and checks that the variants of a family
compute equal polynomials.
"""

from __future__ import annotations

from itertools import combinations

from autograd_dag.errors import CircuitError
from autograd_dag.circuits.circuit import Circuit


def _check_positive(name: str, value: int, minimum: int = 1) -> None:
    if not isinstance(value, int) or value < minimum:
        raise CircuitError(f"{name} must be an int ≥ {minimum}, got {value!r}")


def _check_nk(n: int, k: int) -> None:
    # e_k of n variables with k > n is identically 0: no circuit to build.
    _check_positive("n", n)
    _check_positive("k", k)
    if k > n:
        raise CircuitError(f"elementary symmetric polynomial e_{k} of {n} variables is 0: need k ≤ n")


def _default_coefficients(degree: int) -> list:
    return list(range(1, degree + 2))


# ---------------------------------------------------------------- univariate
def monomial_sum(coefficients) -> Circuit:
    """``Σ a_i x^i`` with each power computed on its own by repeated multiplication.

    ``coefficients``: ``[a_0, a_1, …, a_n]`` (numbers). About n²/2 gates.

    >>> monomial_sum([1, 2, 3]).to_polynomial().__str__()
    '3*x^2 + 2*x + 1'
    """
    c = Circuit()
    x = c.variable("x")
    terms = []
    for i, a in enumerate(coefficients):
        if a == 0:
            continue
        factors = ([a] if (a != 1 or i == 0) else []) + [x] * i
        terms.append(c.product(factors))
    c.set_outputs(c.sum(terms))
    return c


def horner(coefficients) -> Circuit:
    """``Σ a_i x^i`` by Horner's rule ``(…(a_n x + a_{n-1}) x + …) x + a_0``: 2n gates.

    >>> horner([1, 2, 3]).num_gates
    4
    """
    coefficients = list(coefficients)
    if not coefficients:
        raise CircuitError("horner: needs at least one coefficient")
    c = Circuit()
    x = c.variable("x")
    acc = c.constant(coefficients[-1])
    for a in reversed(coefficients[:-1]):
        acc = c.add(c.mul(acc, x), a)
    c.set_outputs(acc)
    return c


def power_by_squaring(k: int) -> Circuit:
    """``x^(2^k)`` by k squarings: k gates, size 2k.

    >>> power_by_squaring(3).to_polynomial().__str__()
    'x^8'
    """
    _check_positive("k", k, 0)
    c = Circuit()
    acc = c.variable("x")
    for _ in range(k):
        acc = c.mul(acc, acc)
    c.set_outputs(acc)
    return c


def power_by_multiplication(k: int) -> Circuit:
    """``x^(2^k)`` as ``x·x·…·x``: 2^k − 1 gates.

    >>> power_by_multiplication(3).num_gates
    7
    """
    _check_positive("k", k, 0)
    c = Circuit()
    x = c.variable("x")
    c.set_outputs(c.product([x] * (2**k)))
    return c


# ---------------------------------------------------------------- square of a sum
def square_of_sum(n: int) -> Circuit:
    """``(x1 + … + xn)²`` as one sum squared: n gates.

    >>> square_of_sum(3).num_gates
    3
    """
    _check_positive("n", n)
    c = Circuit()
    xs = [c.variable(f"x{i}") for i in range(1, n + 1)]
    s = c.sum(xs)
    c.set_outputs(c.mul(s, s))
    return c


def square_of_sum_expanded(n: int) -> Circuit:
    """``Σ xi² + Σ_{i<j} 2·xi·xj``: the expanded square, about n² gates.

    >>> square_of_sum_expanded(3).to_polynomial() == square_of_sum(3).to_polynomial()
    True
    """
    _check_positive("n", n)
    c = Circuit()
    xs = [c.variable(f"x{i}") for i in range(1, n + 1)]
    terms = [c.mul(x, x) for x in xs]
    terms += [c.mul(2, c.mul(xs[i], xs[j])) for i, j in combinations(range(n), 2)]
    c.set_outputs(c.sum(terms))
    return c


# ---------------------------------------------------------------- matrix product
def _matrix_variables(c: Circuit, name: str, n: int) -> list:
    return [[c.variable(f"{name}{i}_{j}") for j in range(1, n + 1)] for i in range(1, n + 1)]


def _naive_product(c: Circuit, A: list, B: list) -> list:
    n, m, p = len(A), len(B), len(B[0])
    return [[c.sum([c.mul(A[i][k], B[k][j]) for k in range(m)]) for j in range(p)] for i in range(n)]


def matrix_product(n: int, method: str = "naive") -> Circuit:
    """The n×n matrix product ``C = A B`` over variables ``a{i}_{j}``, ``b{i}_{j}`` (n² outputs).

    ``method``: ``"naive"`` (n³ products) or ``"strassen"`` (one level of Strassen's
    7-product recursion on 2×2 blocks, naive inside; n must be even).

    >>> matrix_product(2).num_gates, matrix_product(2, "strassen").num_gates
    (12, 31)
    """
    _check_positive("n", n)
    c = Circuit()
    A, B = _matrix_variables(c, "a", n), _matrix_variables(c, "b", n)
    if method == "naive":
        C = _naive_product(c, A, B)
    elif method == "strassen":
        if n % 2:
            raise CircuitError(f"matrix_product: Strassen needs an even n, got {n}")
        h = n // 2

        def block(M, r, s):
            return [row[s * h : (s + 1) * h] for row in M[r * h : (r + 1) * h]]

        def plus(X, Y):
            return [[c.add(x, y) for x, y in zip(rx, ry)] for rx, ry in zip(X, Y)]

        def minus(X, Y):
            return [[c.sub(x, y) for x, y in zip(rx, ry)] for rx, ry in zip(X, Y)]

        def times(X, Y):
            return _naive_product(c, X, Y)

        A11, A12, A21, A22 = block(A, 0, 0), block(A, 0, 1), block(A, 1, 0), block(A, 1, 1)
        B11, B12, B21, B22 = block(B, 0, 0), block(B, 0, 1), block(B, 1, 0), block(B, 1, 1)
        M1 = times(plus(A11, A22), plus(B11, B22))
        M2 = times(plus(A21, A22), B11)
        M3 = times(A11, minus(B12, B22))
        M4 = times(A22, minus(B21, B11))
        M5 = times(plus(A11, A12), B22)
        M6 = times(minus(A21, A11), plus(B11, B12))
        M7 = times(minus(A12, A22), plus(B21, B22))
        C11 = plus(minus(plus(M1, M4), M5), M7)
        C12 = plus(M3, M5)
        C21 = plus(M2, M4)
        C22 = plus(plus(minus(M1, M2), M3), M6)
        C = [r1 + r2 for r1, r2 in zip(C11, C12)] + [r1 + r2 for r1, r2 in zip(C21, C22)]
    else:
        raise CircuitError(f"matrix_product: method must be 'naive' or 'strassen', got {method!r}")
    flat = [C[i][j] for i in range(n) for j in range(n)]
    c.set_outputs(*flat, names=[f"c{i}_{j}" for i in range(1, n + 1) for j in range(1, n + 1)])
    return c


# ---------------------------------------------------------------- elementary symmetric
def elementary_symmetric_naive(n: int, k: int) -> Circuit:
    """``e_k(x1, …, xn)`` as the sum over all k-subsets of their products: C(n,k)·(k−1) + C(n,k) − 1 gates.

    >>> str(elementary_symmetric_naive(3, 2).to_polynomial())
    'x1*x2 + x1*x3 + x2*x3'
    """
    _check_nk(n, k)
    c = Circuit()
    xs = [c.variable(f"x{i}") for i in range(1, n + 1)]
    c.set_outputs(c.sum([c.product(list(s)) for s in combinations(xs, k)]))
    return c


def elementary_symmetric_dp(n: int, k: int) -> Circuit:
    """``e_k(x1, …, xn)`` by dynamic programming ``e_j(x1..xi) = e_j(x1..x_{i-1}) + xi·e_{j-1}(x1..x_{i-1})``: O(nk) gates.

    >>> elementary_symmetric_dp(3, 2).to_polynomial() == elementary_symmetric_naive(3, 2).to_polynomial()
    True
    """
    _check_nk(n, k)
    c = Circuit()
    xs = [c.variable(f"x{i}") for i in range(1, n + 1)]
    # e[j] holds e_j of the prefix seen so far (None while it is identically 0); e_0 = 1.
    e: list = [None] * (k + 1)
    for i, x in enumerate(xs):
        for j in range(min(i + 1, k), 0, -1):
            term = x if j == 1 else c.mul(x, e[j - 1])
            e[j] = term if e[j] is None else c.add(e[j], term)
    c.set_outputs(e[k])
    return c


# ---------------------------------------------------------------- linear forms
def linear_forms_factored(n: int) -> Circuit:
    """``Π_{i=1..n} (xi + yi)`` as a product of n sums: 2n − 1 gates.

    >>> linear_forms_factored(3).num_gates
    5
    """
    _check_positive("n", n)
    c = Circuit()
    forms = [c.add(c.variable(f"x{i}"), c.variable(f"y{i}")) for i in range(1, n + 1)]
    c.set_outputs(c.product(forms))
    return c


def linear_forms_expanded(n: int) -> Circuit:
    """``Π (xi + yi)`` expanded into its 2^n monomials, each a product: about n·2^n gates.

    >>> linear_forms_expanded(3).to_polynomial().num_terms
    8
    """
    _check_positive("n", n)
    return Circuit.from_polynomial(linear_forms_factored(n).to_polynomial())


# ---------------------------------------------------------------- the table
def book_example(shared: bool = True) -> Circuit:
    """(x + y)·(x + y) + 3x, the book's example (§4.1.4): with x + y computed once, or written out twice.

    >>> book_example().size, book_example(shared=False).size
    (8, 10)
    """
    c = Circuit()
    x, y = c.variable("x"), c.variable("y")
    s = x + y
    square = s * s if shared else s * (x + y)
    c.set_outputs(square + 3 * x)
    return c


def family_table(
    degree: int = 8,
    k: int = 5,
    n_square: int = 6,
    n_matrix: int = 4,
    n_symmetric: int = 8,
    k_symmetric: int = 4,
    n_forms: int = 5,
) -> list:
    """Rows comparing circuits for the same polynomial (one row per variant).

    Returns a list of dicts with keys ``family``, ``variant``, ``size`` (edges),
    ``gates``, ``depth`` and ``equal`` (the variant's polynomials equal the first
    variant's of its family, checked exactly).

    >>> rows = family_table()
    >>> all(r["equal"] for r in rows)
    True
    >>> [r["size"] for r in rows if r["family"].startswith("x^")]
    [10, 62]
    """
    coeffs = _default_coefficients(degree)
    families = [
        ("(x + y)(x + y) + 3x", [("x + y shared (as parsed)", book_example()),
                                 ("x + y written twice", book_example(shared=False))]),
        (
            f"a0 + a1*x + ... + a{degree}*x^{degree}",
            [("sum of monomials", monomial_sum(coeffs)), ("Horner", horner(coeffs))],
        ),
        (f"x^(2^{k})", [("repeated squaring", power_by_squaring(k)), ("repeated multiplication", power_by_multiplication(k))]),
        (
            f"(x1 + ... + x{n_square})^2",
            [("as a square", square_of_sum(n_square)), ("expanded", square_of_sum_expanded(n_square))],
        ),
        (
            f"{n_matrix}x{n_matrix} matrix product",
            [("naive", matrix_product(n_matrix)), ("Strassen, one level", matrix_product(n_matrix, "strassen"))],
        ),
        (
            f"e_{k_symmetric}(x1, ..., x{n_symmetric})",
            [
                ("naive (all subsets)", elementary_symmetric_naive(n_symmetric, k_symmetric)),
                ("dynamic programming", elementary_symmetric_dp(n_symmetric, k_symmetric)),
            ],
        ),
        (
            f"(x1 + y1)...(x{n_forms} + y{n_forms})",
            [("factored", linear_forms_factored(n_forms)), ("expanded", linear_forms_expanded(n_forms))],
        ),
    ]
    rows = []
    for family, variants in families:
        reference = None
        for variant, circuit in variants:
            poly = circuit.to_polynomial()
            if reference is None:
                reference = poly
            rows.append(
                {
                    "family": family,
                    "variant": variant,
                    "size": circuit.size,
                    "gates": circuit.num_gates,
                    "depth": circuit.depth,
                    "equal": poly == reference,
                }
            )
    return rows


def format_family_table(rows: list | None = None) -> str:
    """The rows of :func:`family_table` as an aligned text table.

    >>> print(format_family_table()[:6])
    family
    """
    rows = family_table() if rows is None else rows
    headers = ["family", "variant", "size", "gates", "depth", "equal"]
    cells = [[str(r[h]) if h != "equal" else ("yes" if r[h] else "NO") for h in headers] for r in rows]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(headers)]
    numeric = {"size", "gates", "depth"}

    def fmt(row):
        return "  ".join(
            cell.rjust(w) if h in numeric else cell.ljust(w) for cell, w, h in zip(row, widths, headers)
        ).rstrip()

    lines = [fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in cells]
    return "\n".join(lines)
