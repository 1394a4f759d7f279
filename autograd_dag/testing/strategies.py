"""Hypothesis strategies for gradient tests: inputs away from kinks, matrices, random programs.

A gradient check at a random point fails for two reasons: the derivative is
wrong, or the point sits on (or within a finite-difference step of) a kink or
a singularity where no derivative exists. These strategies keep the second
away, so a failure means the first, and hypothesis then shrinks it to the
smallest input that breaks the gradient:

* :func:`arrays`: float arrays of a given shape and dtype, at least
  ``distance`` from points and intervals you declare (``away_from=[0.0]``),
  inside a ``domain`` (``(0, inf)`` for a log), repeating with a ``period``;
* :func:`away_from_kinks`: the inputs of one of this library's primitives,
  away from the kinks, poles, domain ends and ties its rules declare
  (:data:`autograd_dag.primitives.smoothness.SMOOTHNESS`: relu and abs at 0,
  maximum's ties, clip's bounds, log's and sqrt's domain, tan's poles...);
* :func:`orthogonal_matrices`, :func:`spd_matrices`,
  :func:`well_conditioned_matrices`: square or rectangular, batched, with
  a bounded condition number;
* :func:`recipes`: random programs (DAGs) of this library's primitives, into
  which your own primitive can be inserted (the generator of the project's
  property tests, ``tests/test_properties.py``);
* :func:`smallest_gradient_failure`: the smallest input, found and shrunk by
  hypothesis, at which :func:`autograd_dag.check_grads` fails.

Hypothesis is a test dependency (``pip install hypothesis``, or the package's
``dev`` extra): ``import autograd_dag`` never imports it, this module does.

Example (in a test file)::

    import numpy as np
    import autograd_dag as ad
    from hypothesis import given
    from autograd_dag.testing import assert_grads_close
    from autograd_dag.testing import strategies as ads

    @given(ads.arrays((3, 2), away_from=[0.0]))
    def test_abs_gradient(x):
        assert_grads_close(lambda x: ad.sum(ad.abs(x) * x), (x,))
"""

from __future__ import annotations

import inspect
import math
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

try:
    from hypothesis import HealthCheck, find, settings
    from hypothesis import strategies as st
    from hypothesis.errors import NoSuchExample
    from hypothesis.extra import numpy as hnp
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without hypothesis
    raise ImportError("autograd_dag.testing.strategies needs hypothesis, a test dependency: "
                      "pip install hypothesis (or pip install 'autograd-dag[dev]')") from exc

from ..checking import check_grads
from ..core import Primitive, Tensor
from ..errors import GradientCheckError
from ..primitives.elementwise import exp, logistic, maximum, softplus, tanh
from ..primitives.linalg import matmul
from ..primitives.smoothness import SMOOTHNESS, Smoothness
from ..primitives.structure import reshape, sum as _sum, transpose

__all__ = ["arrays", "away_from_kinks", "orthogonal_matrices", "spd_matrices", "well_conditioned_matrices",
           "Recipe", "recipes", "OPS", "smallest_gradient_failure"]


# ----------------------------------------------- arrays away from kinks

def _margin(distance: float, magnitude: float, dtype) -> float:
    # A value pushed to exactly ``distance`` in float64 may round closer when cast to a
    # narrower dtype (float32: by eps/2 · |v|); pushing a few ulps further keeps the promise.
    return distance + 8 * float(np.finfo(dtype).eps) * max(1.0, magnitude)


def _zones(away_from: Iterable, period: float | None, low: float, high: float) -> list[tuple[float, float]]:
    """The closed intervals to avoid: points are degenerate intervals; periodic ones repeat over [low, high]."""
    zones = []
    for item in away_from:
        a, b = (float(item), float(item)) if np.ndim(item) == 0 else (float(item[0]), float(item[1]))
        if a > b:
            raise ValueError(f"away_from: the interval {item!r} has its ends in the wrong order")
        if period is None:
            zones.append((a, b))
            continue
        first, last = math.floor((low - b) / period) - 1, math.ceil((high - a) / period) + 1
        zones += [(a + k * period, b + k * period) for k in range(first, last + 1)]
    return sorted(zones)


def _push(values: np.ndarray, zones, gap: float, low: float, high: float) -> np.ndarray:
    """values moved out of every zone widened by ``gap``, to the nearer side that stays in [low, high]."""
    for a, b in zones:
        inside = (values > a - gap) & (values < b + gap)
        if not inside.any():
            continue
        below, above = a - gap, b + gap
        nearer = np.where(values - below <= above - values, below, above)
        other = np.where(nearer == below, above, below)
        fits = (nearer >= low) & (nearer <= high)
        values = np.where(inside, np.where(fits, nearer, other), values)
    return values


def arrays(shape, dtype=np.float64, *, away_from: Iterable = (), period: float | None = None,
           domain: tuple[float, float] = (-math.inf, math.inf), distance: float = 1e-2,
           magnitude: float = 4.0) -> st.SearchStrategy:
    """Float arrays of ``shape`` at least ``distance`` from the points and intervals of ``away_from``.

    ``away_from``: numbers (kinks, poles: ``[0.0]``) and ``(a, b)`` pairs (closed
    intervals to avoid); with ``period`` they repeat every ``period`` (tan's poles:
    ``away_from=[pi / 2], period=pi``). ``domain``: the open interval where the
    function is defined; values keep ``distance`` from its ends too. Every value
    lies in ``[-magnitude, magnitude]``. ``shape`` is a tuple or a strategy of
    tuples (``hypothesis.extra.numpy.array_shapes()``); ``dtype`` a float dtype.
    Hypothesis shrinks toward 0, moved off the avoided zones.

    A value near a zone is moved to the nearer side of it that stays within the
    bounds, so the draws cover both sides of a kink. Raises ``ValueError`` when
    the zones leave no room (two zones closer than ``2 * distance``, a domain
    narrower than that).

    Example:
        >>> import numpy as np
        >>> from hypothesis import find
        >>> from autograd_dag.testing.strategies import arrays
        >>> x = find(arrays((2, 3), away_from=[0.0], distance=0.1), lambda x: True)
        >>> x.shape, bool(np.all(np.abs(x) >= 0.1))
        ((2, 3), True)
    """
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"arrays: dtype must be a float dtype, not {dtype}")
    if distance <= 0 or magnitude <= 0:
        raise ValueError("arrays: distance and magnitude must be positive")
    gap = _margin(distance, magnitude, dtype)
    low, high = max(domain[0] + gap, -magnitude), min(domain[1] - gap, magnitude)
    if not low < high:
        raise ValueError(f"arrays: no room in the domain {domain} within magnitude {magnitude} "
                         f"at distance {distance}")
    zones = _zones(away_from, period, low, high)
    for (_, b), (a, _) in zip(zones, zones[1:]):
        if a - b < 2 * gap:
            raise ValueError(f"arrays: the zones to avoid near {b} and {a} are closer than 2 * distance: "
                             f"nothing fits between them; lower distance")
    elements = st.floats(low, high, allow_nan=False, allow_infinity=False, width=64)
    return hnp.arrays(np.float64, shape, elements=elements).map(
        lambda v: _push(v, zones, gap, low, high).astype(dtype))


def _primitive_name(primitive) -> str:
    if isinstance(primitive, str):
        return primitive
    if isinstance(primitive, Primitive):
        return primitive.name
    prim = getattr(primitive, "prim", None)  # a function that applies one (ad.relu's result has none)
    return prim.name if isinstance(prim, Primitive) else getattr(primitive, "__name__", repr(primitive))


def _apart(v: np.ndarray, others: list, gap: float, magnitude: float) -> np.ndarray:
    """v moved, elementwise, at least ``gap`` from each of ``others``: upward, or downward past magnitude."""
    result = {}
    for sign in (1.0, -1.0):
        w = v.copy()
        # Each pass moves w past the partners it is near, always the same way: once past a
        # partner it stays past, so len(others) passes clear them all.
        for _ in others:
            for o in others:
                w = np.where(np.abs(w - o) < gap, o + sign * gap, w)
        result[sign] = w
    return np.where(np.abs(result[1.0]) <= magnitude, result[1.0], result[-1.0])


def away_from_kinks(primitive, *shapes, dtype=np.float64, distance: float = 1e-2,
                    magnitude: float = 4.0) -> st.SearchStrategy:
    """Tuples of inputs for one of this library's primitives, away from the kinks its rules declare.

    ``primitive``: a name (``"relu"``), a :class:`~autograd_dag.Primitive`, or the
    function (``ad.relu``). ``shapes``: one shape per input (tuples or strategies
    of them); inputs compared for ties (``maximum``'s two, ``clip``'s x with its
    bounds) must have one shape. The declaration
    (:data:`~autograd_dag.primitives.smoothness.SMOOTHNESS`) gives points,
    periods and domains per input, and ties between inputs: each tied input is
    kept ``distance`` from its partner, elementwise. A primitive without a
    declaration is smooth: its inputs are plain arrays in ``[-magnitude, magnitude]``.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> from hypothesis import find
        >>> from autograd_dag.testing.strategies import away_from_kinks
        >>> x, y = find(away_from_kinks(ad.maximum, (4,), (4,), distance=0.1), lambda xy: True)
        >>> bool(np.all(np.abs(x - y) >= 0.1))
        True
        >>> (lo,) = find(away_from_kinks("log", (3,), distance=0.1), lambda a: True)
        >>> bool(np.all(lo >= 0.1))
        True
    """
    name = _primitive_name(primitive)
    rule = SMOOTHNESS.get(name, Smoothness(inputs=()))
    if not shapes:
        raise ValueError(f"away_from_kinks({name!r}): give one shape per input")
    if any(max(i, j) >= len(shapes) for i, j in rule.ties):
        raise ValueError(f"away_from_kinks({name!r}): {len(shapes)} shapes for ties {rule.ties}")
    parts = []
    for k, shape in enumerate(shapes):
        declared = k in rule.inputs
        parts.append(arrays(shape, dtype, away_from=rule.points if declared else (),
                            period=rule.period if declared else None,
                            domain=rule.domain if declared else (-math.inf, math.inf),
                            distance=distance, magnitude=magnitude))
    gap = _margin(distance, magnitude, dtype)

    partners: dict[int, list[int]] = {}
    for i, j in rule.ties:  # the later input of a tie moves, the earlier stays
        partners.setdefault(max(i, j), []).append(min(i, j))

    def untie(values):
        values = [np.asarray(v, np.float64) for v in values]
        for j, others in sorted(partners.items()):
            values[j] = _apart(values[j], [values[i] for i in others], gap, magnitude)
        return tuple(v.astype(dtype) for v in values)
    return st.tuples(*parts).map(untie)


# ----------------------------------------------- matrices

def _batched_eye(n: int, batch_shape) -> np.ndarray:
    return np.broadcast_to(np.eye(n), tuple(batch_shape) + (n, n))


def _orthogonal(m: np.ndarray, signs: np.ndarray) -> np.ndarray:
    # Cayley: S skew-symmetric gives Q = (I + S)⁻¹(I - S), orthogonal, and I + S is never
    # singular (S's eigenvalues are imaginary); m = 0 (where hypothesis shrinks) gives Q = I.
    n = m.shape[-1]
    s = m - np.swapaxes(m, -1, -2)
    eye = _batched_eye(n, m.shape[:-2])
    return np.linalg.solve(eye + s, eye - s) * signs[..., None, :]


def orthogonal_matrices(n: int, batch_shape=(), dtype=np.float64) -> st.SearchStrategy:
    """Orthogonal matrices, shape ``batch_shape + (n, n)``: Q^T Q = I to rounding.

    Built by the Cayley transform of a drawn skew-symmetric matrix (with drawn
    column signs, so determinants -1 occur too); it shrinks to the identity.

    Example:
        >>> import numpy as np
        >>> from hypothesis import find
        >>> from autograd_dag.testing.strategies import orthogonal_matrices
        >>> q = find(orthogonal_matrices(3, batch_shape=(2,)), lambda q: True)
        >>> q.shape, bool(np.allclose(q.swapaxes(-1, -2) @ q, np.eye(3)))
        ((2, 3, 3), True)
    """
    shape = tuple(batch_shape) + (n, n)
    entries = hnp.arrays(np.float64, shape, elements=st.floats(-1.0, 1.0))
    signs = hnp.arrays(np.float64, tuple(batch_shape) + (n,), elements=st.sampled_from([1.0, -1.0]))
    return st.tuples(entries, signs).map(lambda ms: _orthogonal(*ms).astype(dtype))


def _spectrum(shape, max_condition: float) -> st.SearchStrategy:
    if not max_condition >= 1:
        raise ValueError(f"max_condition must be at least 1, not {max_condition}")
    # Drawn on a log scale, so a large bound still gives small and large values alike.
    return hnp.arrays(np.float64, shape, elements=st.floats(0.0, math.log(max_condition))).map(np.exp)


def spd_matrices(n: int, batch_shape=(), *, max_condition: float = 100.0, scale: float = 1.0,
                 dtype=np.float64) -> st.SearchStrategy:
    """Symmetric positive definite matrices, shape ``batch_shape + (n, n)``, eigenvalues in ``scale·[1, κ]``.

    ``κ = max_condition`` bounds the condition number λmax/λmin. Built as
    ``Q diag(λ) Q^T`` from :func:`orthogonal_matrices` and drawn eigenvalues,
    then symmetrized exactly; it shrinks to ``scale`` times the identity.

    Example:
        >>> import numpy as np
        >>> from hypothesis import find
        >>> from autograd_dag.testing.strategies import spd_matrices
        >>> a = find(spd_matrices(4, max_condition=10.0), lambda a: True)
        >>> bool(np.all(np.linalg.eigvalsh(a) >= 1.0 - 1e-12)), bool(np.allclose(a, a.T))
        (True, True)
    """
    spectrum = _spectrum(tuple(batch_shape) + (n,), max_condition)

    def build(q_lam):
        q, lam = q_lam
        a = (q * (scale * lam)[..., None, :]) @ np.swapaxes(q, -1, -2)
        return ((a + np.swapaxes(a, -1, -2)) / 2).astype(dtype)
    return st.tuples(orthogonal_matrices(n, batch_shape), spectrum).map(build)


def well_conditioned_matrices(shape, batch_shape=(), *, max_condition: float = 100.0,
                              dtype=np.float64) -> st.SearchStrategy:
    """Matrices of ``shape`` (``n`` or ``(m, n)``) with singular values in ``[1, max_condition]``.

    Shape ``batch_shape + (m, n)``; the condition number σmax/σmin is at most
    ``max_condition``: ``U Σ V^T`` from two :func:`orthogonal_matrices` and drawn
    singular values. Square ones are invertible, tall ones have full column rank.

    Example:
        >>> import numpy as np
        >>> from hypothesis import find
        >>> from autograd_dag.testing.strategies import well_conditioned_matrices
        >>> a = find(well_conditioned_matrices((4, 2), max_condition=5.0), lambda a: True)
        >>> a.shape, bool(np.linalg.cond(a) <= 5.0 + 1e-9)
        ((4, 2), True)
    """
    m, n = (shape, shape) if np.ndim(shape) == 0 else tuple(shape)
    k = min(m, n)
    spectrum = _spectrum(tuple(batch_shape) + (k,), max_condition)

    def build(parts):
        u, v, sigma = parts
        return ((u[..., :, :k] * sigma[..., None, :]) @ np.swapaxes(v[..., :, :k], -1, -2)).astype(dtype)
    return st.tuples(orthogonal_matrices(m, batch_shape), orthogonal_matrices(n, batch_shape), spectrum).map(build)


# ----------------------------------------------- random programs

X_SHAPE, Y_SHAPE = (2, 3), (3,)
TIE_GAP = 1e-3  # maximum's operands must be at least this far apart at the checked point


def _matmul_step(a, b, axis):
    return matmul(matmul(a, transpose(b)), a) * 0.5


# Each operation takes two operands from the values computed so far (a unary one ignores b) and
# the axis drawn with it. The set is smooth on the inputs' range (exp of a bounded value), and
# the two exceptions are made valid by Recipe.resolved: matmul needs two (2, 3) matrices,
# maximum operands apart.
OPS: dict[str, Callable] = {
    "add": lambda a, b, axis: a + b,
    "multiply": lambda a, b, axis: a * b,
    "subtract": lambda a, b, axis: a - b,
    "tanh": lambda a, b, axis: tanh(a),
    "exp_bounded": lambda a, b, axis: exp(tanh(a) * 2.0),
    "logistic": lambda a, b, axis: logistic(a),
    "softplus": lambda a, b, axis: softplus(a),
    "sum_keepdims": lambda a, b, axis: _sum(a, axis=axis % a.ndim, keepdims=True),
    "reshape_transpose": lambda a, b, axis: reshape(transpose(a), a.shape),
    "matmul": _matmul_step,
    "maximum": lambda a, b, axis: maximum(a, b),
}


def _as_step(fn: Callable) -> Callable:
    """A user's operation as a step: f(a), f(a, b) or f(a, b, axis) of Tensors."""
    try:
        arity = len([p for p in inspect.signature(fn).parameters.values()
                     if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):  # a builtin without a signature: unary
        arity = 1
    if arity >= 3:
        return fn
    if arity == 2:
        return lambda a, b, axis: fn(a, b)
    return lambda a, b, axis: fn(a)


class Recipe:
    """A random program: a list of steps ``(op, i, j, axis)`` over two inputs x and y.

    Step k applies ``ops[op]`` to the values at positions ``i`` and ``j``
    (modulo the number computed so far; positions 0 and 1 are x and y, step k's
    result is position k + 2), so a recipe describes a DAG; calling it on
    Tensors returns the last value. :meth:`resolved` makes it valid at a point
    (matmul on (2, 3) matrices only, maximum only without near-ties).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> from autograd_dag.testing.strategies import Recipe
        >>> r = Recipe([("tanh", 0, 0, 0), ("multiply", 2, 1, 0)])
        >>> x, y = np.ones((2, 3)), np.arange(3.0)
        >>> np.allclose(r(ad.Tensor(x), ad.Tensor(y)).value, np.tanh(x) * y)
        True
        >>> ad.grad(lambda x: ad.sum(r(x, y)))(x).shape
        (2, 3)
    """

    def __init__(self, steps: Sequence[tuple], ops: Mapping[str, Callable] | None = None):
        self.steps = [tuple(s) for s in steps]
        self.ops = dict(OPS if ops is None else ops)

    def __call__(self, x, y):
        pool = [x, y]
        for op, i, j, axis in self.steps:
            pool.append(self.ops[op](pool[i % len(pool)], pool[j % len(pool)], axis))
        return pool[-1]

    def resolved(self, x, y) -> "Recipe":
        """This recipe valid at (x, y): matmul only on (2, 3) matrices (else multiply), maximum only apart (else add)."""
        steps, pool = [], [Tensor(x), Tensor(y)]
        for op, i, j, axis in self.steps:
            a, b = pool[i % len(pool)], pool[j % len(pool)]
            if op == "matmul" and (a.shape != X_SHAPE or b.shape != X_SHAPE):
                op = "multiply"
            if op == "maximum" and np.min(np.abs(a.value - b.value), initial=np.inf) < TIE_GAP:
                op = "add"
            steps.append((op, i, j, axis))
            pool.append(self.ops[op](a, b, axis))
        return Recipe(steps, self.ops)

    def __repr__(self) -> str:
        return f"Recipe({self.steps!r})"


def recipes(extra: Mapping[str, Callable] | None = None, *, ops: Iterable[str] | None = None,
            min_size: int = 1, max_size: int = 8) -> st.SearchStrategy:
    """Random programs (:class:`Recipe`) of ``min_size`` to ``max_size`` steps over x (2, 3) and y (3,).

    ``ops``: the names of :data:`OPS` to draw from (all by default). ``extra``:
    your operations by name, each a function of Tensors ``f(a)``, ``f(a, b)`` or
    ``f(a, b, axis)`` (a custom primitive, or a lambda around it) that keeps the
    operands' broadcast shape; they are drawn beside ours, so your primitive is
    tested inside random compositions. Draw the point with
    ``hypothesis.extra.numpy.arrays`` or :func:`arrays` (away from your
    primitive's kinks) and call :meth:`Recipe.resolved` at it.

    Example (a test file; ``cube`` is your primitive)::

        @given(recipes({"cube": cube}), arrays((2, 3)), arrays((3,)))
        def test_cube_in_compositions(recipe, x, y):
            plan = recipe.resolved(x, y)
            assert_grads_close(lambda x, y: ad.sum(plan(x, y)), (x, y))
    """
    table = {name: OPS[name] for name in (OPS if ops is None else ops)}
    table.update({name: _as_step(fn) for name, fn in (extra or {}).items()})
    names = list(table)
    steps = st.lists(st.tuples(st.sampled_from(names), st.integers(0, 63), st.integers(0, 63), st.integers(0, 1)),
                     min_size=min_size, max_size=max_size)
    return steps.map(lambda s: Recipe(s, table))


# ----------------------------------------------- the smallest failing input

def smallest_gradient_failure(f: Callable, args: st.SearchStrategy, *, max_examples: int = 200,
                              **check_kwargs) -> tuple | None:
    """The smallest arguments drawn from ``args`` at which ``check_grads(f, ...)`` fails, or None.

    ``args``: a strategy of argument tuples (``st.tuples(arrays(...), ...)``, or
    :func:`away_from_kinks`). Hypothesis searches ``max_examples`` draws and
    shrinks a failure to the simplest one (fewest, smallest entries): the input
    that breaks the gradient, with nothing else in the way. ``check_kwargs`` go
    to :func:`autograd_dag.check_grads` (``order``, ``modes``, ``atol``...).
    A plain ``@given`` test calling :func:`~autograd_dag.testing.assert_grads_close`
    shrinks the same way; this returns the example instead of failing.

    Example:
        >>> import autograd_dag as ad
        >>> from hypothesis import strategies as st
        >>> from autograd_dag.testing.strategies import arrays, smallest_gradient_failure
        >>> print(smallest_gradient_failure(lambda x: ad.sum(ad.tanh(x)), st.tuples(arrays((3,)))))
        None
    """
    def fails(drawn) -> bool:
        try:
            check_grads(f, tuple(drawn), **check_kwargs)
        except GradientCheckError:
            return True
        return False
    try:
        return find(args, fails, settings=settings(max_examples=max_examples, database=None, deadline=None,
                                                   suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return None
