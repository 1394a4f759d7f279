"""Integer and floor operators on Tensors: // % divmod << >> & | ^ ~ and numpy's floor_divide, remainder, fmod,
divmod, left_shift, right_shift, bitwise_and/or/xor, invert, gcd, lcm (primitives/integer.py).

Before, //, divmod, << and >> raised "unsupported operand type(s)", & | ^ ~ took booleans only, and
np.floor_divide / np.left_shift / np.gcd on a Tensor ran on the values (a plain array, refused under jit).
Every value and dtype is compared with numpy's ufunc on the arrays themselves (the independent
reference: numpy 2 with Python ints as weak scalars), exactly (integer results; float // and % are
exact operations, rounded once by numpy and by us in the same ufunc); derivatives with PyTorch, JAX
and central differences.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

import autograd_dag as ad

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float32, np.float64]


def _operands(dtype):
    """x and y of ``dtype`` covering signs, zeros, the type's ends and divisors -1 and 0."""
    d = np.dtype(dtype)
    if d == np.bool_:
        return np.array([True, True, False, False]), np.array([True, False, True, False])
    if d.kind == "f":
        x = np.array([7.0, -7.0, 7.5, -7.5, 1.0, 0.0, -0.0, 1e30, 5.0, np.inf, -3.25, 0.3], d)
        y = np.array([2.0, 2.0, -2.0, -2.0, 0.1, 3.0, -3.0, 7.0, np.inf, 2.0, 0.0, 0.1], d)
        return x, y
    info = np.iinfo(d)
    lo = int(info.min)
    xs = [7, 7, 0, 5, int(info.max), 100, 3, 1, lo, lo, 2] + ([-7, -7, -100, -1] if d.kind == "i" else [9, 8, 255, 1])
    ys = [2, 3, 5, 0, 7, 1, 0, 1, 3, 1, 2] + ([2, -2, 7, 0] if d.kind == "i" else [4, 3, 16, 0])
    if d.kind == "i":
        xs, ys = xs + [lo, 50], ys + [-1, -3]         # INT_MIN // -1 wraps, as numpy's
    return np.array(xs, d), np.array(ys, d)


def _shifts(dtype):
    bits = 8 * np.dtype(dtype).itemsize
    x = _operands(dtype)[0]
    return x, (np.arange(x.size) * 3 % (bits + 3)).astype(dtype)   # up to past the width (numpy: 0 / -1)


def _same(ours, theirs, what):
    theirs = np.asarray(theirs)
    got = ours.value if isinstance(ours, ad.Tensor) else np.asarray(ours)
    assert got.dtype == theirs.dtype, (what, got.dtype, theirs.dtype)
    np.testing.assert_array_equal(got, theirs, err_msg=what)
    if theirs.dtype.kind == "f":   # (the sign of zero too: 0.0 // -3.0 is -0.0)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(theirs), err_msg=what + " (sign of zero)")


def _quiet(fn, *args):
    with np.errstate(all="ignore"):
        return fn(*args)


_DIVISION = {"//": operator.floordiv, "%": operator.mod}
_BITWISE = {"<<": operator.lshift, ">>": operator.rshift, "&": operator.and_, "|": operator.or_,
            "^": operator.xor}


@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_], ids=lambda d: np.dtype(d).name)
def test_operators_match_numpy_values_and_dtypes(dtype):
    x, y = _operands(dtype)
    X, Y = ad.Tensor(x), ad.Tensor(y)
    ops = dict(_DIVISION)
    if np.dtype(dtype).kind in "biu":
        ops.update(_BITWISE)
    for name, op in ops.items():
        b = _shifts(dtype)[1] if name in ("<<", ">>") and dtype != np.bool_ else y
        B = ad.Tensor(b)
        _same(_quiet(op, X, B), _quiet(op, x, b), f"{dtype} {name} Tensor")
        for k in (1, 3) if dtype != np.bool_ else (True, 1):   # Python numbers are weak, both sides
            _same(_quiet(op, X, k), _quiet(op, x, k), f"t {name} {k!r}")
            _same(_quiet(op, k, X), _quiet(op, k, x), f"{k!r} {name} t")
        _same(_quiet(op, x, B), _quiet(op, x, b), f"array {name} Tensor")   # ndarray first: __array_ufunc__
    q, r = _quiet(divmod, X, Y)
    _same(q, _quiet(np.floor_divide, x, y), "divmod quotient")
    _same(r, _quiet(np.remainder, x, y), "divmod remainder")
    if np.dtype(dtype).kind in "biu":
        _same(~X, ~x, "~")


_UFUNCS = [np.floor_divide, np.remainder, np.mod, np.fmod, np.left_shift, np.right_shift, np.bitwise_and,
           np.bitwise_or, np.bitwise_xor, np.gcd, np.lcm]


@pytest.mark.parametrize("dtype", INTS + FLOATS, ids=lambda d: np.dtype(d).name)
def test_numpy_ufuncs_on_tensors_record_primitives(dtype):
    x, y = _operands(dtype)
    for uf in _UFUNCS:
        if np.dtype(dtype).kind == "f" and uf not in (np.floor_divide, np.remainder, np.fmod):
            continue
        b = _shifts(dtype)[1] if uf in (np.left_shift, np.right_shift) else y
        out = _quiet(uf, ad.Tensor(x), b)
        assert isinstance(out, ad.Tensor), uf     # (it was a plain array: np.floor_divide ran on the values)
        _same(out, _quiet(uf, x, b), uf.__name__)
    q, r = _quiet(np.divmod, ad.Tensor(x), y)
    _same(q, _quiet(np.divmod, x, y)[0], "np.divmod")
    _same(r, _quiet(np.divmod, x, y)[1], "np.divmod")
    if np.dtype(dtype).kind != "f":
        _same(np.invert(ad.Tensor(x)), np.invert(x), "np.invert")
        _same(np.bitwise_not(ad.Tensor(x)), np.bitwise_not(x), "np.bitwise_not")


def test_in_place_forms_rebind_like_plus_equals():
    x = np.array([-7, 7, 12], np.int16)
    t = ad.Tensor(x)
    u = t
    u //= 2
    assert u is not t and u.prim.name == "floor_divide"
    np.testing.assert_array_equal(t.value, x)       # the original is unchanged, as with t += 1
    for op, iop in [(operator.lshift, operator.ilshift), (operator.rshift, operator.irshift),
                    (operator.and_, operator.iand), (operator.or_, operator.ior), (operator.xor, operator.ixor),
                    (operator.floordiv, operator.ifloordiv), (operator.mod, operator.imod)]:
        _same(iop(ad.Tensor(x), 3), op(x.copy(), 3), iop.__name__)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint32, np.float64], ids=lambda d: np.dtype(d).name)
def test_division_by_zero_warns_as_numpy(dtype):
    x, y = np.array([5, 0, 3], dtype), np.array([0, 0, 1], dtype)
    for fn in (operator.floordiv, operator.mod):
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            expected = fn(x, y)
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            got = fn(ad.Tensor(x), ad.Tensor(y))
        _same(got, expected, fn.__name__)
        assert [(w.category, str(w.message)) for w in ours] == [(w.category, str(w.message)) for w in theirs]
        assert theirs


@pytest.mark.parametrize("op, name", [(lambda t: t & 1, "bitwise_and"), (lambda t: 3 | t, "bitwise_or"),
                                      (lambda t: t ^ t, "bitwise_xor"), (lambda t: t << 1, "left_shift"),
                                      (lambda t: 2 >> t, "right_shift"), (lambda t: ~t, "invert"),
                                      (lambda t: np.gcd(t, 4), "gcd")])
def test_float_operands_of_bitwise_and_shift_ops_are_refused(op, name):
    with pytest.raises(TypeError):
        op(np.arange(3.0))                     # numpy's own refusal: a TypeError
    with pytest.raises(ad.AutogradDagError, match=rf"{name}\(float32.*float32.*test_integer_operators.py:\d+"):
        op(ad.Tensor(np.arange(3, dtype=np.float32)))
    with pytest.raises(TypeError, match=name):
        ad.jit(op)(np.arange(3.0))


def _torch_grads(fn, x, y):
    torch = pytest.importorskip("torch")
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.tensor(y, requires_grad=True)
    fn(torch, tx, ty).sum().backward()
    return tx.grad.numpy(), ty.grad.numpy()


def _jax_grads(fn, x, y):
    jax = pytest.importorskip("jax")
    from jax import config
    before = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    try:
        gx, gy = jax.grad(lambda a, b: fn(jax.numpy, a, b).sum(), argnums=(0, 1))(x, y)
        return np.asarray(gx), np.asarray(gy)
    finally:
        config.update("jax_enable_x64", before)


def _central(fn, x, y, h=1e-6):
    gx = np.array([(fn(x + h * e, y) - fn(x - h * e, y)).sum() / (2 * h) for e in np.eye(x.size)])
    gy = np.array([(fn(x, y + h * e) - fn(x, y - h * e)).sum() / (2 * h) for e in np.eye(y.size)])
    return gx, gy


# x / y at least 0.2 from an integer: every function is smooth around these points.
_X = np.array([7.5, -7.5, 5.3, -5.3, 0.9, 2.7])
_Y = np.array([2.0, 2.0, -1.5, -1.5, 0.4, -0.75])
_DERIVATIVES = {
    # name: (ours, torch, jax, numpy)
    "floor_divide": (lambda x, y: x // y, lambda T, x, y: T.div(x, y, rounding_mode="floor"),
                     lambda J, x, y: J.floor_divide(x, y), np.floor_divide),
    "mod": (lambda x, y: x % y, lambda T, x, y: T.remainder(x, y), lambda J, x, y: J.remainder(x, y), np.mod),
    "fmod": (lambda x, y: np.fmod(x, y), lambda T, x, y: T.fmod(x, y), lambda J, x, y: J.fmod(x, y), np.fmod),
}


def test_derivatives_of_float_floor_divide_mod_fmod_agree_with_torch_jax_and_differences():
    # (one test: % and fmod had their derivatives before; // is new, and the three are checked together)
    for name in _DERIVATIVES:
        _check_derivative(name)


def _check_derivative(name):
    ours_fn, torch_fn, jax_fn, np_fn = _DERIVATIVES[name]
    ours = ad.grad(lambda x, y: ad.sum(ours_fn(x, y)), argnums=(0, 1))(_X, _Y)
    fd = _central(np_fn, _X, _Y)
    expected = {"floor_divide": (np.zeros(6), np.zeros(6)), "mod": (np.ones(6), -np.floor(_X / _Y)),
                "fmod": (np.ones(6), -np.trunc(_X / _Y))}[name]
    for k, (o, t, j, f, e) in enumerate(zip(ours, _torch_grads(torch_fn, _X, _Y), _jax_grads(jax_fn, _X, _Y),
                                            fd, expected)):
        np.testing.assert_array_equal(o, e, err_msg=f"{name} d/d{'xy'[k]}: the stated formula")
        np.testing.assert_array_equal(o, t, err_msg=f"{name} d/d{'xy'[k]}: torch")
        np.testing.assert_array_equal(o, j, err_msg=f"{name} d/d{'xy'[k]}: jax")
        np.testing.assert_allclose(o, f, atol=1e-6, err_msg=f"{name} d/d{'xy'[k]}: central differences (h=1e-6)")
    # Forward mode gives the same derivative.
    _, tangent = ad.jvp(lambda x, y: ours_fn(x, y), (_X, _Y), (np.ones(6), np.ones(6)))
    np.testing.assert_array_equal(tangent, expected[0] + expected[1])


def test_integer_results_carry_no_gradient_as_other_integer_operations():
    # (astype to int already ends the derivative; & and << behave as % does on the integers behind it)
    x = np.array([1.5, 2.5, 6.25])
    for f in (lambda i: i & 3, lambda i: i << 1, lambda i: i // 2, lambda i: ~i, lambda i: ad.gcd(i, 4)):
        g = ad.grad(lambda t: ad.sum(ad.astype(f(ad.astype(t, np.int64)), np.float64) * t))(x)
        np.testing.assert_array_equal(g, f(x.astype(np.int64)).astype(np.float64))


def test_jit_runs_on_new_integer_inputs_and_prints_the_primitives():
    def f(x, y):
        q, r = divmod(x, y)
        return (q << 2) ^ (r | (x >> 1)) & ~y, np.gcd(x, y), np.lcm(x, y)
    fast = ad.jit(f)
    rng = np.random.default_rng(0)
    for _ in range(2):              # the second call runs the program on other data: inputs, not constants
        x, y = rng.integers(-50, 50, 7).astype(np.int32), rng.integers(1, 9, 7).astype(np.int32)
        for got, exp in zip(fast(x, y), f(x, y)):
            _same(got, exp, "jit")
    prog = ad.trace(f, x, y)
    assert {"floor_divide", "mod", "left_shift", "right_shift", "bitwise_xor", "bitwise_or", "bitwise_and",
            "invert", "gcd", "lcm"} <= set(prog.op_counts())
    assert "left_shift" in str(prog) and "floor_divide" in str(prog)


def test_vmap_and_checkpoint():
    x = np.arange(-12, 12, dtype=np.int16).reshape(4, 6)
    s = np.arange(6, dtype=np.int16)
    _same(ad.vmap(lambda r: (r << s) // 3 & 0x7F)(x), (x << s) // 3 & 0x7F, "vmap")
    a, b = np.array([7.5, -3.3, 2.2]), np.array([2.0, 1.5, -0.7])
    g = ad.grad(lambda u, v: ad.sum(ad.checkpoint(lambda p, q: p // q + p % q * q)(u, v)), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(g[0], b)                                   # d(x%y · y)/dx = y
    np.testing.assert_allclose(g[1], -np.floor(a / b) * b + a % b, rtol=1e-15)   # -floor(x/y)·y + x%y


def _onnx_program(dtype):
    if dtype == np.bool_:
        return lambda x, y: (x & y, x | y, x ^ y, ~x, x // y)
    if np.dtype(dtype).kind == "f":
        return lambda x, y: (x // y, divmod(x, y)[1])
    return lambda x, y, s: (x // y, x & y, x | y, x ^ y, ~x, x << s, x >> s)


@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_], ids=lambda d: np.dtype(d).name)
def test_onnx_export_runs_on_onnxruntime(dtype):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    x, y = _operands(dtype)
    args = (x, y) if np.dtype(dtype).kind in "bf" else (x, y, _shifts(dtype)[1])
    fn = _onnx_program(dtype)
    prog = ad.trace(fn, *args)
    expected = _quiet(fn, *args)
    served = ad.onnx.run(ad.onnx.export(prog), *args)
    for k, (got, exp) in enumerate(zip(served, expected)):
        _same(got, exp, f"onnxruntime output {k}")


@pytest.mark.parametrize("dtype", INTS + FLOATS + [np.bool_], ids=lambda d: np.dtype(d).name)
def test_lowered_to_jax_matches_numpy(dtype):
    jax = pytest.importorskip("jax")
    from jax import config
    before = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    try:
        x, y = _operands(dtype)
        args = (x, y) if np.dtype(dtype).kind in "bf" else (x, y, _shifts(dtype)[1])
        fn = _onnx_program(dtype) if np.dtype(dtype).kind in "bf" else (
            lambda x, y, s: _onnx_program(dtype)(x, y, s) + (np.gcd(x, y), np.lcm(x, y)))
        expected = _quiet(fn, *args)
        got = jax.jit(ad.jax.lower(ad.trace(fn, *args)))(*args)
        for k, (g, e) in enumerate(zip(got, expected)):
            _same(np.asarray(g), e, f"jax output {k}")
    finally:
        config.update("jax_enable_x64", before)


def test_from_jax_replays_bitwise_and_shift_primitives_of_integers():
    # lax.and_/or_/not_ of integers were refused ("bitwise ... has no primitive here"); xor and shifts had no rule.
    jax = pytest.importorskip("jax")
    from jax import lax
    x = np.array([-100, 7, 3, -1, 64], np.int32)
    s = np.array([0, 1, 3, 31, 40], np.int32)
    m = np.array([True, False, True, True, False])

    def f(x, s, m):
        return (((x & 12) | (x ^ 5)) + (~x) + lax.shift_left(x, s) + lax.shift_right_arithmetic(x, s)
                + lax.shift_right_logical(x, s), m ^ (m & ~m))
    ours = ad.from_jax(f, x, s, m)(x, s, m)
    for o, t in zip(ours, jax.jit(f)(x, s, m)):
        _same(np.asarray(o), np.asarray(t), "from_jax")


def test_from_torch_replays_bitwise_shift_floor_divide_remainder_fmod():
    torch = pytest.importorskip("torch")
    x = np.array([-100, 7, 3, -1, 64], np.int64)
    y = np.array([3, -2, 5, 7, 9], np.int64)
    s = np.array([0, 1, 3, 5, 7], np.int64)
    m = np.array([True, False, True, True, False])

    def f(x, y, s, m):
        return ((x & y) | (x ^ 5)) + (~x) + (x << s) + (x >> s) + torch.floor_divide(x, y) \
            + torch.remainder(x, y) + torch.fmod(x, y), m & ~m
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)   # (torch.export's own deprecation notices)
        ours = ad.from_torch(f, x, y, s, m)(x, y, s, m)
    for o, t in zip(ours, f(*[torch.tensor(a) for a in (x, y, s, m)])):
        _same(np.asarray(o), t.numpy(), "from_torch")
