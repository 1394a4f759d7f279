"""Cases of the integer primitives (primitives/integer.py): floor_divide, shifts, bitwise, gcd, lcm.

References are Python's own integer arithmetic (//, <<, >>, &, |, ^, ~ and math.gcd on Python ints,
entry by entry: unbounded, so the cases stay inside the dtype's range) and math.floor(x / y) for floats
away from the jumps, not numpy's ufuncs that the primitives call.
"""

import math

import numpy as np

import autograd_dag as ad
from tests.cases import Case


def _entrywise(op, dtype=None):
    def ref(*args):
        arrays = np.broadcast_arrays(*[np.asarray(a) for a in args])
        out = [op(*[v.item() for v in vs]) for vs in zip(*[a.ravel() for a in arrays])]
        dt = dtype or np.result_type(*[np.asarray(a).dtype for a in args])
        return np.array(out, dt).reshape(arrays[0].shape)
    return ref


def _ints(low, high, *shapes, dtype=np.int64):
    return lambda rng: tuple(rng.integers(low, high, s).astype(dtype) for s in shapes)


def _away_from_jumps(rng):
    # y with |y| in [1.1, 1.9]; x = y·(k + f), f in [0.2, 0.8]: x / y stays 0.2 from every integer.
    y = rng.uniform(1.1, 1.9, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
    return y * (rng.integers(-4, 4, (3, 4)) + rng.uniform(0.2, 0.8, (3, 4))), y


def _floor_ref(x, y):
    return np.vectorize(lambda a, b: float(math.floor(a / b)))(x, y)


def _nonzero(rng):
    y = rng.integers(1, 6, (5,)) * rng.choice([-1, 1], (5,))
    return rng.integers(-20, 20, (2, 5)), y


def _gcd(a, b):
    return math.gcd(a, b)


def _lcm(a, b):
    return abs(a * b) // math.gcd(a, b) if a and b else 0


CASES = [
    Case("floor_divide", ad.floor_divide, _away_from_jumps, _floor_ref, id="floor_divide-float"),
    Case("floor_divide", lambda x: x // 1.5, lambda rng: (rng.uniform(0.2, 1.3, (3,)) + 3.0,),
         lambda x: _floor_ref(x, 1.5), id="floor_divide-operator"),
    Case("floor_divide", lambda x: 5.0 // x, lambda rng: (rng.uniform(1.1, 1.2, (3,)),),
         lambda x: _floor_ref(5.0, x), id="floor_divide-reflected"),
    Case("floor_divide", ad.floor_divide, _nonzero, _entrywise(lambda a, b: a // b), id="floor_divide-int"),
    Case("floor_divide", lambda x, y: np.floor_divide(x, y), _nonzero, _entrywise(lambda a, b: a // b),
         id="floor_divide-np_dispatch"),
    Case("left_shift", lambda x, s: x << s, lambda rng: (rng.integers(-100, 100, (2, 3)), rng.integers(0, 12, (3,))),
         _entrywise(lambda a, s: a << s),
         id="left_shift-operator"),
    Case("right_shift", lambda x, s: x >> s, lambda rng: (rng.integers(-1000, 1000, (2, 3)), rng.integers(0, 12, (3,))),
         _entrywise(lambda a, s: a >> s), id="right_shift-operator"),
    Case("bitwise_and", lambda x, y: x & y, _ints(-50, 50, (2, 3), (3,)), _entrywise(lambda a, b: a & b),
         id="bitwise_and-operator"),
    Case("bitwise_and", lambda x, y: x & y, lambda rng: (rng.random((4,)) < 0.5, rng.random((4,)) < 0.5),
         _entrywise(lambda a, b: a and b, np.bool_), id="bitwise_and-bool"),
    Case("bitwise_or", lambda x, y: x | y, _ints(-50, 50, (2, 3), (3,)), _entrywise(lambda a, b: a | b),
         id="bitwise_or-operator"),
    Case("bitwise_xor", lambda x, y: np.bitwise_xor(x, y), _ints(-50, 50, (2, 3), (2, 3)),
         _entrywise(lambda a, b: a ^ b), id="bitwise_xor-np_dispatch"),
    Case("invert", lambda x: ~x, _ints(-50, 50, (2, 3)), _entrywise(lambda a: ~a), id="invert-operator"),
    Case("invert", lambda x: ~x, lambda rng: (rng.random((4,)) < 0.5,), _entrywise(lambda a: not a, np.bool_),
         id="invert-bool"),
    Case("gcd", ad.gcd, _ints(-60, 60, (2, 3), (3,)), _entrywise(_gcd), id="gcd"),
    Case("lcm", lambda x, y: np.lcm(x, y), _ints(-30, 30, (2, 3), (3,)), _entrywise(_lcm), id="lcm-np_dispatch"),
]
