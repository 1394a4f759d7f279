"""Where the elementwise primitives are not smooth: kinks, jumps, singularities, domains, ties.

The derivative rules in ``elementwise.py`` and ``mathfuncs.py`` fix a value at
each kink (relu'(0) = 0, ties split evenly, ...); a gradient check or a
property test should stay a distance away from these points, where finite
differences straddle the kink. :data:`SMOOTHNESS` states them by primitive
name, machine-readably, for :func:`autograd_dag.testing.strategies.away_from_kinks`;
``tests/test_strategies.py`` checks each declaration against the primitive
(a kink is where the one-sided differences disagree, a domain's outside is NaN).

A new elementwise primitive that is not smooth everywhere adds its line here.

Example:
    >>> from autograd_dag.primitives.smoothness import SMOOTHNESS
    >>> SMOOTHNESS["relu"].points, SMOOTHNESS["log"].domain
    ((0.0,), (0.0, inf))
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Smoothness:
    """Where one primitive's derivative jumps or blows up.

    ``points``: values of the inputs in ``inputs`` where the function has a kink,
    a jump or a pole; with ``period``, they repeat every ``period`` (tan's poles,
    floor's jumps). ``domain``: the open interval, for the inputs in ``inputs``,
    outside which the function is undefined (NaN) or its derivative infinite at the
    ends. ``ties``: pairs of input positions whose equality is a kink
    (``maximum(x, y)`` at x = y; ``clip(x, lo, hi)`` at x = lo, x = hi and lo = hi).
    """

    points: tuple[float, ...] = ()
    period: float | None = None
    domain: tuple[float, float] = (-math.inf, math.inf)
    inputs: tuple[int, ...] = (0,)
    ties: tuple[tuple[int, int], ...] = ()


_INF = math.inf
_TIES = Smoothness(inputs=(), ties=((0, 1),))

SMOOTHNESS: dict[str, Smoothness] = {
    # kinks and jumps at 0 (elementwise.py's conventions: relu'(0) = 0, |x|'(0) = 0, step'(x) = 0)
    "relu": Smoothness(points=(0.0,)),
    "abs": Smoothness(points=(0.0,)),
    "step": Smoothness(points=(0.0,)),
    "sign": Smoothness(points=(0.0,)),
    # poles
    "reciprocal": Smoothness(points=(0.0,)),
    "divide": Smoothness(points=(0.0,), inputs=(1,)),
    "tan": Smoothness(points=(math.pi / 2,), period=math.pi),
    # domains: NaN outside, an infinite derivative at a finite end
    "log": Smoothness(domain=(0.0, _INF)),
    "log2": Smoothness(domain=(0.0, _INF)),
    "log10": Smoothness(domain=(0.0, _INF)),
    "sqrt": Smoothness(domain=(0.0, _INF)),
    "log1p": Smoothness(domain=(-1.0, _INF)),
    "arcsin": Smoothness(domain=(-1.0, 1.0)),
    "arccos": Smoothness(domain=(-1.0, 1.0)),
    "arctanh": Smoothness(domain=(-1.0, 1.0)),
    "arccosh": Smoothness(domain=(1.0, _INF)),
    # piecewise constant: jumps at the integers (round at the halves; trunc at the nonzero
    # integers, declared as all of them: 0 is avoided too, which costs nothing)
    "floor": Smoothness(points=(0.0,), period=1.0),
    "ceil": Smoothness(points=(0.0,), period=1.0),
    "trunc": Smoothness(points=(0.0,), period=1.0),
    "round": Smoothness(points=(0.5,), period=1.0),
    # ties: the derivative is split evenly between equal operands
    "maximum": _TIES,
    "minimum": _TIES,
    "fmax": _TIES,
    "fmin": _TIES,
    # clip: x at either bound, and the bounds crossing (where lo > hi the result is hi)
    "clip": Smoothness(inputs=(), ties=((0, 1), (0, 2), (1, 2))),
}
