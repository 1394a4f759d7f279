"""Cases for the trigonometric primitives sin and cos.

The references are the power series sin x = Σ (−1)^k x^{2k+1}/(2k+1)! and
cos x = Σ (−1)^k x^{2k}/(2k)!, summed in numpy to 40 terms (exact to rounding
for |x| ≤ 4), never the code under test. Inputs cover both signs, several
periods' worth of phase (|x| up to 4 > π), size-1 and empty axes and a scalar;
sin and cos are smooth, so central differences are valid everywhere.
"""

import math

import numpy as np

import autograd_dag as ad
from tests.cases import Case


def _uniform(*shapes, bound=4.0):
    return lambda rng: tuple(rng.uniform(-bound, bound, s) for s in shapes)


def _series(x, first_power):
    total = np.zeros_like(x)
    for k in range(40):
        n = 2 * k + first_power
        total = total + (-1.0) ** k * x ** n / math.factorial(n)
    return total


def _sin(x):
    return _series(x, 1)


def _cos(x):
    return _series(x, 0)


CASES = []
for name, fn, ref in [("sin", ad.sin, _sin), ("cos", ad.cos, _cos)]:
    CASES += [
        Case(name, fn, _uniform((3, 4)), ref, id=f"{name}-2d"),
        Case(name, fn, _uniform(()), ref, id=f"{name}-scalar"),
        Case(name, fn, _uniform((2, 1, 3)), ref, id=f"{name}-size1"),
        Case(name, fn, _uniform((0, 2)), ref, id=f"{name}-empty"),
    ]
CASES += [
    Case("sin", lambda x: np.sin(x), _uniform((5,)), _sin, id="sin-numpy_ufunc"),
    Case("cos", lambda x: np.cos(x), _uniform((5,)), _cos, id="cos-numpy_ufunc"),
    # sin² + cos² = 1 composed: second derivatives mix both rules.
    Case("sin", lambda x: ad.sin(x) * ad.cos(x), _uniform((4,)), lambda x: _sin(x) * _cos(x),
         id="sin-times_cos"),
    Case("cos", lambda x: ad.cos(ad.sin(x)), _uniform((2, 3)), lambda x: _cos(_sin(x)), id="cos-of_sin"),
]
