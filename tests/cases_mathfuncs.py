"""Cases for numpy's everyday elementwise functions (autograd_dag/primitives/mathfuncs.py).

Each ``ref`` is an independent formula in numpy (tan as sin/cos, arcsinh as
log(x + √(x² + 1)), hypot as √(x² + y²), mod as x - floor(x/y)·y, ...), never
the function under test. Inputs stay inside each function's domain and away
from kinks and jumps (rounding functions away from integers and halves, clip
away from its bounds, mod away from multiples of y), so central differences
are valid; the conventions at the kinks are pinned exactly in
tests/test_numpy_functions.py.
"""

import math

import numpy as np

import autograd_dag as ad
from tests.cases import Case


def _normal(*shapes):
    return lambda rng: tuple(rng.standard_normal(s) for s in shapes)


def _uniform(low, high, *shapes):
    return lambda rng: tuple(rng.uniform(low, high, s) for s in shapes)


def _off_grid(*shapes, step=1.0):
    """Values k·step + u with u in [0.2, 0.4]·step or [0.6, 0.8]·step: away from integers and halves."""
    def make(rng):
        out = []
        for s in shapes:
            u = rng.choice([0.3, 0.7], s) + rng.uniform(-0.1, 0.1, s)
            out.append(step * (rng.integers(-3, 3, s) + u))
        return tuple(out)
    return make


CASES = []

# ------------------------------------------------------------ unary


def _unary(name, fn, make, ref, shapes=((3, 4), (), (0, 2))):
    for s in shapes:
        CASES.append(Case(name, fn, make(s), ref, id=f"{name}-{s}"))


_unary("tan", ad.tan, lambda s: _uniform(-1.2, 1.2, s), lambda x: np.sin(x) / np.cos(x))
_unary("arcsin", ad.arcsin, lambda s: _uniform(-0.9, 0.9, s),
       lambda x: np.arctan(x / np.sqrt(1 - x * x)))
_unary("arccos", ad.arccos, lambda s: _uniform(-0.9, 0.9, s),
       lambda x: np.pi / 2 - np.arctan(x / np.sqrt(1 - x * x)))
_unary("arctan", ad.arctan, lambda s: _normal(s), lambda x: np.arctan2(x, np.ones_like(x)))
_unary("sinh", ad.sinh, lambda s: _normal(s), lambda x: (np.exp(x) - np.exp(-x)) / 2)
_unary("cosh", ad.cosh, lambda s: _normal(s), lambda x: (np.exp(x) + np.exp(-x)) / 2)
_unary("arcsinh", ad.arcsinh, lambda s: _normal(s), lambda x: np.log(x + np.sqrt(x * x + 1)))
_unary("arccosh", ad.arccosh, lambda s: _uniform(1.2, 3.0, s), lambda x: np.log(x + np.sqrt(x * x - 1)))
_unary("arctanh", ad.arctanh, lambda s: _uniform(-0.9, 0.9, s), lambda x: 0.5 * np.log((1 + x) / (1 - x)))
_unary("erf", ad.erf, lambda s: _uniform(-3.0, 3.0, s), np.vectorize(math.erf, otypes=[float]))
_unary("erfc", ad.erfc, lambda s: _uniform(-3.0, 6.0, s), np.vectorize(math.erfc, otypes=[float]))
_unary("log1p", ad.log1p, lambda s: _uniform(-0.5, 2.0, s), lambda x: np.log(1 + x))
_unary("expm1", ad.expm1, lambda s: _normal(s), lambda x: np.exp(x) - 1)
_unary("log2", ad.log2, lambda s: _uniform(0.2, 5.0, s), lambda x: np.log(x) / np.log(2))
_unary("log10", ad.log10, lambda s: _uniform(0.2, 5.0, s), lambda x: np.log(x) / np.log(10))
_unary("exp2", ad.exp2, lambda s: _normal(s), lambda x: np.exp(x * np.log(2)))
_unary("square", ad.square, lambda s: _normal(s), lambda x: x * x)
_unary("reciprocal", ad.reciprocal, lambda s: _uniform(0.3, 2.0, s), lambda x: 1 / x)
_unary("floor", ad.floor, lambda s: _off_grid(s), lambda x: x - np.mod(x, 1.0))
_unary("ceil", ad.ceil, lambda s: _off_grid(s), lambda x: -((-x) - np.mod(-x, 1.0)))
_unary("trunc", ad.trunc, lambda s: _off_grid(s), lambda x: np.sign(x) * (np.abs(x) - np.mod(np.abs(x), 1.0)))
_unary("round", ad.round, lambda s: _off_grid(s), lambda x: np.floor(x + 0.5))
CASES += [
    Case("round", lambda x: ad.round(x, 1), _off_grid((3, 4), step=0.1),
         lambda x: np.floor(x * 10 + 0.5) / 10, id="round-decimals1"),
    Case("round", ad.rint, _off_grid((5,)), lambda x: np.floor(x + 0.5), id="round-rint"),
    Case("round", ad.rint, lambda rng: (np.array([0.5, 1.5, 2.5, -0.5]),), lambda x: np.array([0., 2., 2., -0.]),
         wrt=(), id="round-halves_to_even"),
    Case("abs", ad.fabs, lambda rng: (rng.choice([-1.0, 1.0], 4) * rng.uniform(0.2, 2, 4),),
         lambda x: np.where(x < 0, -x, x), id="abs-fabs"),
    Case("multiply", ad.deg2rad, _normal((3,)), lambda x: x / 180 * np.pi, id="multiply-deg2rad"),
    Case("multiply", ad.rad2deg, _normal((3,)), lambda x: x * 180 / np.pi, id="multiply-rad2deg"),
    Case("tan", lambda x: np.tan(x), _uniform(-1, 1, (2, 3)), lambda x: np.sin(x) / np.cos(x), id="tan-np_dispatch"),
]

# ------------------------------------------------------------ binary

BINARY_SHAPES = [((3, 4), (4,), "trailing"), ((2, 1, 3), (4, 1), "size1_both"), ((), (2, 3), "scalar_x"),
                 ((0, 3), (3,), "empty")]


def _binary(name, fn, make, ref):
    for sx, sy, label in BINARY_SHAPES:
        CASES.append(Case(name, fn, make(sx, sy), ref, id=f"{name}-{label}"))


def _pair(gx, gy):
    return lambda sx, sy: lambda rng: (gx(rng, sx), gy(rng, sy))


def _away(rng, s):
    return rng.choice([-1.0, 1.0], s) * rng.uniform(0.3, 2.0, s)


def _interleaved(sx, sy):
    return lambda rng: (0.5 * rng.integers(-6, 6, sx).astype(float), 0.5 * rng.integers(-6, 6, sy) + 0.25)


_binary("arctan2", ad.arctan2, _pair(_away, _away), lambda y, x: 2 * np.arctan(y / (np.sqrt(x * x + y * y) + x)))
_binary("hypot", ad.hypot, _pair(_away, _away), lambda x, y: np.sqrt(x * x + y * y))
_binary("logaddexp", ad.logaddexp, _pair(lambda r, s: r.standard_normal(s), lambda r, s: r.standard_normal(s)),
        lambda x, y: np.log(np.exp(x) + np.exp(y)))
_binary("logaddexp2", ad.logaddexp2, _pair(lambda r, s: r.standard_normal(s), lambda r, s: r.standard_normal(s)),
        lambda x, y: np.log2(2.0 ** x + 2.0 ** y))
_binary("fmax", ad.fmax, _interleaved, lambda x, y: np.where(x > y, x, y))
_binary("fmin", ad.fmin, _interleaved, lambda x, y: np.where(x < y, x, y))


def _mod_ref(x, y):
    return x - np.floor(x / y) * y


for sx, sy, label in [((3, 4), (4,), "trailing"), ((2, 3), (), "scalar_y"), ((), (3,), "scalar_x")]:
    def make(rng, sx=sx, sy=sy):
        y = rng.choice([-1.0, 1.0], sy) * rng.uniform(1.0, 2.0, sy)
        q = rng.integers(-3, 3, np.broadcast_shapes(sx, sy)) + rng.uniform(0.25, 0.75, np.broadcast_shapes(sx, sy))
        if sx == ():  # |x| in [0.2, 0.8], |y| in [1, 2]: |x/y| in [0.1, 0.8]
            return np.asarray(rng.choice([-1.0, 1.0]) * rng.uniform(0.2, 0.8)), y
        return q * y, y  # x/y = q, away from integers
    CASES.append(Case("mod", ad.mod, make, _mod_ref, id=f"mod-{label}"))
CASES += [
    Case("mod", lambda x: x % 1.5, _uniform(0.1, 1.4, (3,)), lambda x: _mod_ref(x, 1.5), id="mod-operator"),
    Case("mod", lambda x: 5.0 % x, _uniform(1.1, 1.2, (3,)), lambda x: _mod_ref(5.0, x), id="mod-reflected"),
    Case("mod", lambda x, y: np.remainder(x, y), lambda rng: (np.array([-1.3, 2.6]), np.array([1.0, -1.0])),
         _mod_ref, id="mod-np_dispatch"),
    Case("fmax", ad.fmax, lambda rng: (np.array([np.nan, 1.0, np.nan]), np.array([0.5, np.nan, np.nan])),
         lambda x, y: np.array([0.5, 1.0, np.nan]), wrt=(), id="fmax-nan"),
    Case("fmin", ad.fmin, lambda rng: (np.array([np.nan, 1.0, 2.0]), np.array([0.5, np.nan, 3.0])),
         lambda x, y: np.array([0.5, 1.0, 2.0]), wrt=(), id="fmin-nan"),
]

# -------------------------------------------------------------- clip


def _clip_ref(x, lo, hi):
    return np.where(x < lo, lo, np.where(x > hi, hi, x)) + 0 * (lo + hi)


def _clip_args(sx, slo, shi):
    # x on the grid 0.5·k + 0.25, bounds on 0.5·k: never within 0.25 of each other; lo <= hi.
    def make(rng):
        x = 0.5 * rng.integers(-4, 4, sx) + 0.25
        lo = 0.5 * rng.integers(-3, 0, slo).astype(float)
        hi = 0.5 * rng.integers(0, 3, shi).astype(float)
        return x, lo, hi
    return make


def _clip_x(sx):
    return lambda rng: (0.5 * rng.integers(-4, 4, sx) + 0.25,)


CASES += [
    Case("clip", ad.clip, _clip_args((3, 4), (), ()), _clip_ref, id="clip-scalar_bounds"),
    Case("clip", ad.clip, _clip_args((3, 4), (4,), (3, 1)), _clip_ref, id="clip-array_bounds"),
    Case("clip", lambda x: ad.clip(x, -0.5, None), _clip_x((5,)),
         lambda x: np.where(x < -0.5, -0.5, x), id="clip-lower_only"),
    Case("clip", lambda x: np.clip(x, None, 0.5), _clip_x((5,)),
         lambda x: np.where(x > 0.5, 0.5, x), id="clip-np_upper_only"),
    Case("clip", lambda x: x.clip(-1.0, 1.0), _clip_x((2, 3)),
         lambda x: _clip_ref(x, -1.0, 1.0), id="clip-method"),
    Case("clip", ad.clip, _clip_args((0, 2), (), ()), _clip_ref, id="clip-empty"),
]

# ------------------------------------------------------ nan_to_num, tests

CASES += [
    Case("nan_to_num", ad.nan_to_num, _normal((3, 4)), lambda x: x + 0.0, id="nan_to_num-finite"),
    Case("nan_to_num", lambda x: ad.nan_to_num(x, nan=-1.0, posinf=9.0),
         lambda rng: (np.array([np.nan, np.inf, -np.inf, 0.5]),),
         lambda x: np.array([-1.0, 9.0, np.finfo(np.float64).min, 0.5]), wrt=(), id="nan_to_num-replaced"),
]
for name, fn, ref in [("isfinite", ad.isfinite, lambda x: ~(np.isnan(x) | np.isinf(x))),
                      ("isnan", ad.isnan, lambda x: x != x),
                      ("isinf", ad.isinf, lambda x: np.abs(x) == np.inf)]:
    CASES.append(Case(name, fn, lambda rng: (np.array([1.0, np.nan, np.inf, -np.inf, -2.0]),), ref,
                      wrt=(), id=f"{name}-specials"))
    CASES.append(Case(name, fn, _normal((2, 3)), ref, id=f"{name}-normal"))

# ----------------------------------------------------------- fmod, sinc


def _fmod_ref(x, y):
    # C's fmod from Python's math module, entry by entry (the sign of x).
    xb, yb = np.broadcast_arrays(x, y)
    return np.array([math.fmod(a, b) for a, b in zip(xb.ravel(), yb.ravel())]).reshape(xb.shape)


for sx, sy, label in [((3, 4), (4,), "trailing"), ((2, 3), (), "scalar_y")]:
    def make_fmod(rng, sx=sx, sy=sy):
        y = rng.choice([-1.0, 1.0], sy) * rng.uniform(1.0, 2.0, sy)
        shape = np.broadcast_shapes(sx, sy)
        q = rng.integers(-3, 3, shape) + rng.choice([-1.0, 1.0], shape) * rng.uniform(0.25, 0.75, shape)
        return q * y, y  # x/y = q, away from integers, of either sign
    CASES.append(Case("fmod", ad.fmod, make_fmod, _fmod_ref, id=f"fmod-{label}"))
CASES += [
    Case("fmod", lambda x, y: np.fmod(x, y), lambda rng: (np.array([-7.5, 7.5, -1.2]), np.array([2.0, -2.0, 0.5])),
         _fmod_ref, id="fmod-np_dispatch"),
]


def _sinc_ref(x):
    return np.array([1.0 if v == 0 else math.sin(math.pi * v) / (math.pi * v) for v in np.ravel(x)]).reshape(np.shape(x))


CASES += [
    Case("sin", ad.sinc, _uniform(-2.5, 2.5, (3, 4)), _sinc_ref, id="sin-sinc"),
    # At 0 and within the series' range (|x| < 1e-2/π), second derivatives included.
    Case("sin", lambda x: np.sinc(x), lambda rng: (np.array([0.0, 1e-3, -2e-4, 0.4, -1.7, 1.0]),), _sinc_ref,
         id="sin-sinc_at_zero"),
]
