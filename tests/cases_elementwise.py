"""Cases for the elementwise primitives: arithmetic, power, the book's activations,
maximum / minimum, tie_weights, comparisons, where, stop_gradient and astype.

Each ``ref`` is the seed's definition written directly in numpy (e.g. logistic
is 1 / (1 + e^-x), softplus is log(1 + e^x), relu is x·[x > 0]), never the
code under test. Inputs stay away from kinks and ties (|x| >= 0.1 for relu,
abs, step and sign; operands of maximum / minimum on two interleaved grids),
so central differences are valid; cases that deliberately contain ties are
value-only (``wrt=()``), their derivatives are pinned exactly in
tests/test_primitives_table.py.
"""

import numpy as np

import autograd_dag as ad
from autograd_dag.primitives import elementwise as _ew
from tests.cases import Case

# ------------------------------------------------------------ generators


def _normal(*shapes):
    return lambda rng: tuple(rng.standard_normal(s) for s in shapes)


def _positive(*shapes, low=0.5, high=2.0):
    return lambda rng: tuple(rng.uniform(low, high, s) for s in shapes)


def _away_from_zero(*shapes, low=0.1, high=2.0):
    """Values with |x| in [low, high] and a random sign: no kink within reach of a finite difference."""
    return lambda rng: tuple(rng.choice([-1.0, 1.0], s) * rng.uniform(low, high, s) for s in shapes)


def _interleaved(shape_x, shape_y):
    """x on the grid 0.5·k, y on 0.5·k + 0.25: no ties, every pair at least 0.25 apart."""
    return lambda rng: (0.5 * rng.integers(-6, 6, shape_x).astype(np.float64),
                        0.5 * rng.integers(-6, 6, shape_y).astype(np.float64) + 0.25)


def _with_ties(shape_x, shape_y):
    """Small integers: many exact ties between x and y."""
    return lambda rng: (rng.integers(-2, 3, shape_x).astype(np.float64),
                        rng.integers(-2, 3, shape_y).astype(np.float64))

# ----------------------------------------------------- the seed's formulas


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(x))


def _tanh(x):
    e2 = np.exp(2.0 * x)
    return (e2 - 1.0) / (e2 + 1.0)


def _relu(x):
    return x * (x > 0)


def _step(x):
    return (x >= 0) * 1.0


def _sign(x):
    return (x > 0) * 1.0 - (x < 0) * 1.0


def _abs(x):
    return np.where(x < 0, -x, x)


def _max(x, y):
    return np.where(x > y, x, y)


def _min(x, y):
    return np.where(x < y, x, y)


def _tie_weights(x, y):
    return (x > y) * 1.0 + (x == y) * 0.5


# Broadcasting shape pairs shared by the binary primitives: trailing-axis
# broadcast, size-1 axes on both sides, a scalar, equal shapes, an empty axis.
BINARY_SHAPES = [
    ((3, 4), (4,), "trailing"),
    ((2, 1, 3), (4, 1), "size1_both"),
    ((), (2, 3), "scalar_x"),
    ((2, 3), (), "scalar_y"),
    ((3, 1), (3, 1), "equal_size1"),
    ((0, 3), (3,), "empty"),
]

CASES = []


def _binary(name, fn, ref, make):
    for sx, sy, label in BINARY_SHAPES:
        CASES.append(Case(name, fn, make(sx, sy), ref, id=f"{name}-{label}"))

# ------------------------------------------------------------ arithmetic


_binary("add", ad.add, lambda x, y: x + y, _normal)
_binary("subtract", ad.subtract, lambda x, y: x - y, _normal)
_binary("multiply", ad.multiply, lambda x, y: x * y, _normal)
_binary("divide", ad.divide, lambda x, y: x * (1.0 / y), _away_from_zero)
CASES += [
    Case("add", lambda x: x + 2.5, _normal((3,)), lambda x: x + 2.5, id="add-python_scalar"),
    Case("subtract", lambda x: 2.5 - x, _normal((2, 2)), lambda x: 2.5 - x, id="subtract-reflected"),
    Case("multiply", lambda x: x * x, _normal((3, 2)), lambda x: x ** 2, id="multiply-same_operand"),
    Case("divide", lambda x: 1.0 / x, _away_from_zero((4,)), lambda x: x ** -1.0, id="divide-reflected"),
    Case("negative", ad.negative, _normal((3, 4)), lambda x: 0.0 - x, id="negative-2d"),
    Case("negative", lambda x: -x, _normal(()), lambda x: 0.0 - x, id="negative-operator_scalar"),
    Case("negative", ad.negative, _normal((0, 2)), lambda x: 0.0 - x, id="negative-empty"),
]

# ------------------------------------------------------------------ power
# Static exponent (a parameter): any real base for integer exponents, a
# positive base otherwise. Tensor exponent: positive base (x^y = e^{y log x}).

def _static_power(x, e):
    """x**e as repeated products (integer e) or e^{e log x} (x > 0)."""
    if isinstance(e, int):
        out = np.ones_like(x)
        for _ in range(abs(e)):
            out = out * x
        return out if e >= 0 else 1.0 / out
    return np.exp(e * np.log(x))


for exponent, make, label in [(3, _normal((3, 4)), "cube"), (2, _normal((1, 3)), "square"),
                              (0.5, _positive((4,)), "half"), (-2, _away_from_zero((2, 3)), "minus2"),
                              (2.5, _positive((2, 1, 2)), "2.5"), (1, _normal((3,)), "one"),
                              (0, _normal((3,)), "zero"), (3, _normal((0, 2)), "empty")]:
    CASES.append(Case("power", lambda x, e=exponent: ad.power(x, e), make,
                      lambda x, e=exponent: _static_power(x, e), id=f"power-static_{label}"))
CASES += [
    Case("power", lambda x: x ** 3, _normal((2, 2)), lambda x: x * x * x, id="power-operator"),
    Case("power", ad.power, lambda rng: (rng.uniform(0.5, 2.0, (3, 4)), rng.standard_normal(4)),
         lambda x, y: np.exp(y * np.log(x)), id="power-tensor_trailing"),
    Case("power", ad.power, lambda rng: (rng.uniform(0.5, 2.0, (3, 1)), rng.standard_normal((1, 4))),
         lambda x, y: np.exp(y * np.log(x)), id="power-tensor_size1"),
    Case("power", ad.power, lambda rng: (rng.uniform(0.5, 2.0, ()), rng.standard_normal((2, 3))),
         lambda x, y: np.exp(y * np.log(x)), id="power-tensor_scalar_base"),
    Case("power", lambda y: 2.0 ** y, _normal((3,)), lambda y: np.exp(y * np.log(2.0)),
         id="power-reflected_constant_base"),
    # A traced exponent at base 0 (jit makes a Python exponent an input): d/dx x⁰ = 0 and
    # d²/dx² x¹ = 0, not 0·0⁻¹ = NaN; as the static exponents give.
    Case("power", ad.power, lambda rng: (np.zeros(4), np.array([0.0, 1.0, 2.0, 3.0])),
         lambda x, y: np.array([1.0, 0.0, 0.0, 0.0]), wrt=(0,), id="power-tensor_exponent_base_zero"),
]

# --------------------------------------------------------- transcendental

CASES += [
    Case("exp", ad.exp, _normal((3, 4)), lambda x: np.e ** x, id="exp-2d"),
    Case("exp", ad.exp, _normal(()), lambda x: np.e ** x, id="exp-scalar"),
    Case("exp", ad.exp, _normal((0,)), lambda x: np.e ** x, id="exp-empty"),
    Case("log", ad.log, _positive((3, 4), low=0.2, high=5.0), np.log, id="log-2d"),
    Case("log", ad.log, _positive((1, 3), low=0.2, high=5.0), np.log, id="log-size1"),
    Case("sqrt", ad.sqrt, _positive((3, 4), low=0.2, high=5.0), lambda x: x ** 0.5, id="sqrt-2d"),
    Case("sqrt", ad.sqrt, _positive((), low=0.2, high=5.0), lambda x: x ** 0.5, id="sqrt-scalar"),
    Case("tanh", ad.tanh, _normal((3, 4)), _tanh, id="tanh-2d"),
    Case("tanh", ad.tanh, lambda rng: (np.array([-3.0, -0.5, 0.0, 0.7, 2.5]),), _tanh, id="tanh-spread"),
]

# ------------------------------------------------------------ activations

CASES += [
    Case("logistic", ad.logistic, _normal((3, 4)), _logistic, id="logistic-2d"),
    Case("logistic", ad.sigmoid, lambda rng: (np.array([-20.0, -3.0, -0.1, 0.0, 0.1, 4.0, 20.0]),),
         _logistic, id="logistic-wide_range"),
    Case("logistic", ad.logistic, _normal((0, 3)), _logistic, id="logistic-empty"),
    Case("logistic_slope", _ew.logistic_slope, lambda rng: (np.array([-30.0, -3.0, -0.1, 0.0, 0.1, 4.0, 30.0]),),
         lambda x: _logistic(x) * _logistic(-x), id="logistic_slope-wide_range"),
    Case("relu", ad.relu, _away_from_zero((3, 4)), _relu, id="relu-2d"),
    Case("relu", ad.relu, _away_from_zero((1, 5)), _relu, id="relu-size1"),
    Case("relu", ad.relu, _normal((0,)), _relu, id="relu-empty"),
    Case("softplus", ad.softplus, _normal((3, 4)), _softplus, id="softplus-2d"),
    Case("softplus", ad.softplus, lambda rng: (np.array([-20.0, -2.0, 0.0, 1.5, 20.0]),),
         _softplus, id="softplus-wide_range"),
    Case("step", ad.step, _away_from_zero((3, 4)), _step, id="step-2d"),
    Case("step", ad.step, lambda rng: (np.array([-1.0, 0.0, 2.0]),), _step, wrt=(), id="step-at_zero"),
    Case("sign", ad.sign, _away_from_zero((3, 4)), _sign, id="sign-2d"),
    Case("sign", ad.sign, lambda rng: (np.array([-1.0, 0.0, 2.0]),), _sign, wrt=(), id="sign-at_zero"),
    Case("abs", ad.abs, _away_from_zero((3, 4)), _abs, id="abs-2d"),
    Case("abs", lambda x: abs(x), _away_from_zero((2, 1)), _abs, id="abs-builtin"),
]

# ------------------------------------------------------ maximum / minimum

_binary("maximum", ad.maximum, _max, _interleaved)
_binary("minimum", ad.minimum, _min, _interleaved)
CASES += [
    Case("maximum", ad.maximum, _with_ties((4, 3), (3,)), _max, wrt=(), id="maximum-ties_value"),
    Case("minimum", ad.minimum, _with_ties((4, 3), (3,)), _min, wrt=(), id="minimum-ties_value"),
    Case("maximum", lambda x: ad.maximum(x, 0.25),
         lambda rng: (0.5 * rng.integers(-6, 6, (3, 4)).astype(np.float64),),
         lambda x: _max(x, 0.25), id="maximum-python_scalar"),
    # tie_weights: the weight of x in max(x, y); no derivative (both inputs nondiff).
    Case("tie_weights", lambda x, y: ad.core.apply(ad.PRIMITIVES["tie_weights"], x, y),
         _with_ties((4, 3), (3,)), _tie_weights, wrt=(), id="tie_weights-ties"),
    Case("tie_weights", lambda x, y: ad.core.apply(ad.PRIMITIVES["tie_weights"], x, y),
         _interleaved((2, 1, 3), (4, 1)), _tie_weights, id="tie_weights-no_ties"),
]

# ------------------------------------------------------------ comparisons
# Boolean outputs without a derivative: finite differences away from ties are
# zero, and so must be both modes.

for name, fn, ref in [("equal", ad.equal, np.equal), ("not_equal", ad.not_equal, np.not_equal),
                      ("less", ad.less, np.less), ("less_equal", ad.less_equal, np.less_equal),
                      ("greater", ad.greater, np.greater),
                      ("greater_equal", ad.greater_equal, np.greater_equal)]:
    CASES.append(Case(name, fn, _interleaved((3, 4), (4,)), ref, id=f"{name}-no_ties"))
    CASES.append(Case(name, fn, _with_ties((2, 1, 3), (4, 1)), ref, wrt=(), id=f"{name}-ties_value"))
CASES += [
    Case("less", lambda x, y: x < y, _interleaved((3,), ()), np.less, id="less-operator"),
    Case("equal", lambda x, y: x == y, _with_ties((5,), (5,)), np.equal, wrt=(), id="equal-operator"),
]

# ------------------------------------------------------------------ where


def _where_ref(c, x, y):
    return np.array([a if k else b for k, a, b in
                     zip(*(np.broadcast_to(v, np.broadcast_shapes(c.shape, x.shape, y.shape)).ravel()
                           for v in (c, x, y)))]).reshape(np.broadcast_shapes(c.shape, x.shape, y.shape))


CASES += [
    Case("where", ad.where,
         lambda rng: (rng.random((3, 4)) > 0.5, rng.standard_normal((3, 4)), rng.standard_normal((3, 4))),
         _where_ref, wrt=(1, 2), id="where-same_shape"),
    Case("where", ad.where,
         lambda rng: (rng.random((3, 1)) > 0.5, rng.standard_normal((1, 4)), rng.standard_normal(4)),
         _where_ref, wrt=(1, 2), id="where-broadcast"),
    Case("where", ad.where,
         lambda rng: (rng.random((2, 3)) > 0.5, rng.standard_normal(()), rng.standard_normal((2, 3))),
         _where_ref, wrt=(1, 2), id="where-scalar_x"),
    Case("where", lambda c, x: ad.where(c, x, 0.0),
         lambda rng: (rng.random((4,)) > 0.5, rng.standard_normal((4,))),
         lambda c, x: _where_ref(c, x, np.zeros(())), wrt=(1,), id="where-constant_y"),
    Case("where", ad.where,
         lambda rng: (np.zeros((0, 2), bool), rng.standard_normal((0, 2)), rng.standard_normal(2)),
         _where_ref, wrt=(1, 2), id="where-empty"),
]

# ---------------------------------------------------- stop_gradient, astype
# stop_gradient's value is x but its derivative is zero by definition, so
# finite differences cannot check it (wrt=()); tests pin it exactly.

CASES += [
    Case("stop_gradient", ad.stop_gradient, _normal((3, 2)), lambda x: x.copy(), wrt=(),
         id="stop_gradient-2d"),
    Case("astype", lambda x: ad.astype(x, np.float64), _normal((3, 2)), lambda x: x.copy(),
         id="astype-float64_to_float64"),
    Case("astype", lambda x: ad.astype(x, np.int32),
         lambda rng: (rng.integers(-5, 5, (3, 4)) + 0.5,),
         lambda x: np.array([int(v) for v in x.ravel()], np.int32).reshape(x.shape),
         id="astype-float_to_int32"),
    Case("astype", lambda n: ad.astype(n, np.float64), lambda rng: (rng.integers(-5, 5, (2, 3)),),
         lambda n: n * 1.0, id="astype-int_to_float64"),
    Case("astype", lambda c: ad.astype(c, np.float64), lambda rng: (rng.random(5) > 0.5,),
         lambda c: np.where(c, 1.0, 0.0), id="astype-bool_to_float64"),
]
