"""One table-driven test over every primitive, through the public autodiff drivers.

The table is the union of the ``CASES`` lists of every ``tests/cases_*.py``
(found on disk, so a new family's file joins the table without editing this
one). For each case:

(a) the value equals the case's independent numpy reference;
(b) ``ad.check_grads`` (reverse and forward mode against central differences,
    through ``ad.vjp`` / ``ad.jvp``) passes on the differentiable float
    arguments ``case.wrt``, the other arguments held fixed by a closure;
(c) ``order=2``: the derivatives of the derivatives agree too.

Then the fixed kink conventions are pinned exactly (relu'(0) = 0, step' = 0,
|x|'(0) = 0, maximum / minimum ties split 0.5 / 0.5, max-reduction ties split
among all tied entries, max_pool2d's first maximum), and un-broadcasting is
checked against explicit sums.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.primitives.structure import sum_to_shape

TESTS_DIR = pathlib.Path(__file__).parent
CASE_MODULES = sorted(p.stem for p in TESTS_DIR.glob("cases_*.py"))


def _load_cases():
    cases = []
    for name in CASE_MODULES:
        module = importlib.import_module(f"tests.{name}")
        cases += list(module.CASES)
    return cases


ALL_CASES = _load_cases()


def case_id(case) -> str:
    label = case.id or case.prim
    return label if label.startswith(case.prim) else f"{case.prim}-{label}"


def make_args(case, seed: int = 0) -> tuple:
    return tuple(case.make_args(np.random.default_rng(seed)))


def wrt_positions(case, args) -> tuple[int, ...]:
    """The differentiable argument positions: ``case.wrt``, or every float argument."""
    if case.wrt is not None:
        return tuple(case.wrt)
    return tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")


def closure(case, args):
    """``(g, wrt_args)``: g takes only the differentiable arguments, the others are fixed constants."""
    wrt = wrt_positions(case, args)
    fixed = [ad.Tensor(a) for a in args]

    def g(*wrt_args):
        full = list(fixed)
        for i, a in zip(wrt, wrt_args):
            full[i] = a
        return case.fn(*full)
    g.__name__ = case_id(case).replace("-", "_")
    return g, tuple(np.asarray(args[i], dtype=np.float64) for i in wrt)


def recorded_ops(out: ad.Tensor) -> set[str]:
    """Names of the primitives recorded behind ``out``."""
    ops, stack, seen = set(), [out], set()
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t.prim is not None:
            ops.add(t.prim.name)
        stack.extend(t.parents or ())
    return ops


GRAD_CASES = [c for c in ALL_CASES if wrt_positions(c, make_args(c))]

# ------------------------------------------------------------- (a) values


@pytest.mark.parametrize("case", ALL_CASES, ids=[case_id(c) for c in ALL_CASES])
def test_value_matches_reference(case):
    args = make_args(case)
    out = case.fn(*[ad.Tensor(a) for a in args])
    assert case.prim in ad.PRIMITIVES
    assert case.prim in recorded_ops(out), f"{case_id(case)} does not record '{case.prim}'"
    expected = np.asarray(case.ref(*args))
    assert out.shape == expected.shape
    if expected.dtype.kind in "fc":
        assert out.dtype.kind in "fc"
        np.testing.assert_allclose(out.value, expected, rtol=1e-10, atol=1e-12)
    else:
        assert out.dtype == expected.dtype
        np.testing.assert_array_equal(out.value, expected)
    if out.prim.shape is not None:  # the abstract rule agrees with the implementation
        shape, dtype = out.prim.shape(*out.parents, **(out.params or {}))
        assert tuple(shape) == out.shape and np.dtype(dtype) == out.dtype

# --------------------------------------- (b) first order, both modes, FD


@pytest.mark.parametrize("case", GRAD_CASES, ids=[case_id(c) for c in GRAD_CASES])
def test_check_grads_reverse_and_forward(case):
    g, wrt_args = closure(case, make_args(case))
    ad.check_grads(g, wrt_args, modes=("rev", "fwd"))

# -------------------------------------------------------- (c) second order


@pytest.mark.parametrize("case", GRAD_CASES, ids=[case_id(c) for c in GRAD_CASES])
def test_check_grads_second_order(case):
    args = make_args(case, seed=3)
    g, wrt_args = closure(case, args)
    ad.check_grads(g, wrt_args, order=2, modes=("rev", "fwd"))

UNARY = ["negative", "exp", "log", "sqrt", "tanh", "logistic", "relu", "softplus", "step", "sign", "abs"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "equal", "less", "greater_equal"]


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.bool_, np.float32])
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_elementwise_shape_rule_dtype_matches_implementation(name, dtype):
    # The abstract rule is how a program is checked without running it: it
    # must predict the dtype numpy really produces, integers and bools included.
    prim = ad.PRIMITIVES[name]
    operands = [ad.Tensor(np.array([[1, 2, 3]], dtype=dtype))] * (1 if name in UNARY else 2)
    with np.errstate(all="ignore"):
        try:
            value = prim.impl(*[o.value for o in operands])
        except TypeError:
            pytest.skip(f"numpy has no {name} for {np.dtype(dtype)}")
    shape, rule_dtype = prim.shape(*operands)
    assert tuple(shape) == value.shape and np.dtype(rule_dtype) == value.dtype

# ------------------------------------------------------------ coverage


def test_every_builtin_primitive_has_a_case():
    # Built-ins as registered at import time, in a fresh interpreter: custom
    # primitives that other tests register here do not count.
    names = json.loads(subprocess.run(
        [sys.executable, "-c", "import json, autograd_dag as ad; print(json.dumps(list(ad.PRIMITIVES)))"],
        capture_output=True, text=True, check=True, cwd=TESTS_DIR.parent).stdout)
    assert len(names) > 40
    covered = {c.prim for c in ALL_CASES}
    missing = sorted(set(names) - covered)
    assert not missing, f"primitives without a case in tests/cases_*.py: {missing}"
    # Every primitive with a differentiable input is checked against finite
    # differences by at least one case (comparisons, tie_weights, argmax, one_hot
    # and stop_gradient declare all their inputs nondiff: nothing to check).
    differentiated = {c.prim for c in GRAD_CASES}
    for case in ALL_CASES:
        out = case.fn(*[ad.Tensor(a) for a in make_args(case)])
        if out.prim is not None and out.prim.name == case.prim:
            if not set(range(len(out.parents))) <= set(out.prim.nondiff):
                assert case.prim in differentiated, f"'{case.prim}' has no case with a differentiable argument"


# -------------------------------------------------- kink conventions, exactly


def both_modes_elementwise(f, x):
    """(∂f/∂x by reverse mode, by forward mode) of an elementwise f at x."""
    rev = ad.grad(lambda t: f(t).sum())(x)
    _, fwd = ad.jvp(f, (x,), (np.ones_like(x),))
    return rev, fwd


def test_relu_derivative_at_zero_is_zero():
    x = np.array([-1.0, 0.0, 1e-300, 2.0])
    for d in both_modes_elementwise(ad.relu, x):
        np.testing.assert_array_equal(d, [0.0, 0.0, 1.0, 1.0])


def test_linear_relu_derivative_at_zero_is_zero():
    # Pre-activations -1, 0, 1e-300, 2 (x = 1, W = 0, b = them): relu'(0) = 0 as for relu itself, in x, W and b.
    from autograd_dag.primitives.fused import linear_relu
    b = np.array([-1.0, 0.0, 1e-300, 2.0])
    x, W = np.ones((1, 1)), np.zeros((4, 1))
    gx, gW, gb = ad.grad(lambda x, W, b: ad.sum(linear_relu(x, W, b) * 3.0), argnums=(0, 1, 2))(x, W, b)
    np.testing.assert_array_equal(gb, [0.0, 0.0, 3.0, 3.0])
    np.testing.assert_array_equal(gW[:, 0], [0.0, 0.0, 3.0, 3.0])
    np.testing.assert_array_equal(gx, [[0.0]])  # W = 0
    _, t = ad.jvp(lambda b: linear_relu(x, W, b), (b,), (np.ones(4),))
    np.testing.assert_array_equal(t, [[0.0, 0.0, 1.0, 1.0]])


def test_step_derivative_is_zero_everywhere():
    x = np.array([-1.0, 0.0, 2.0])
    for d in both_modes_elementwise(ad.step, x):
        np.testing.assert_array_equal(d, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ad.step(ad.Tensor(x)).value, [0.0, 1.0, 1.0])  # step(0) = 1


def test_abs_derivative_at_zero_is_zero():
    x = np.array([-2.0, 0.0, 3.0])
    for d in both_modes_elementwise(ad.abs, x):
        np.testing.assert_array_equal(d, [-1.0, 0.0, 1.0])


def test_sign_and_stop_gradient_have_zero_derivative():
    x = np.array([-2.0, 0.0, 3.0])
    for f in (ad.sign, ad.stop_gradient):
        for d in both_modes_elementwise(f, x):
            np.testing.assert_array_equal(d, [0.0, 0.0, 0.0])
    # x * stop_gradient(x): only the first factor carries the derivative.
    np.testing.assert_array_equal(ad.grad(lambda t: (t * ad.stop_gradient(t)).sum())(x), x)


@pytest.mark.parametrize("fn", [ad.maximum, ad.minimum], ids=["maximum", "minimum"])
def test_maximum_minimum_ties_split_evenly(fn):
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([1.0, 5.0, 0.0])
    dx, dy = ad.grad(lambda a, b: fn(a, b).sum(), argnums=(0, 1))(x, y)
    win_x = [1.0, 0.0, 1.0] if fn is ad.maximum else [0.0, 1.0, 0.0]
    np.testing.assert_array_equal(dx, [0.5] + win_x[1:])
    np.testing.assert_array_equal(dy, [0.5] + [1 - w for w in win_x[1:]])
    _, tx = ad.jvp(fn, (x, y), (np.ones(3), np.zeros(3)))
    _, ty = ad.jvp(fn, (x, y), (np.zeros(3), np.ones(3)))
    np.testing.assert_array_equal(tx, dx)
    np.testing.assert_array_equal(ty, dy)
    # Broadcast: a scalar tied with two entries collects 0.5 from each.
    ds = ad.grad(lambda s: fn(ad.Tensor([1.0, 1.0, 7.0 if fn is ad.maximum else -7.0]), s).sum())(1.0)
    assert float(ds) == 1.0
    # max(x, x) is x: the two halves add up to the full derivative.
    np.testing.assert_array_equal(ad.grad(lambda a: fn(a, a).sum())(x), np.ones(3))


@pytest.mark.parametrize("fn", [ad.max, ad.min], ids=["max", "min"])
def test_max_reduction_ties_split_among_all_tied(fn):
    sign = 1.0 if fn is ad.max else -1.0
    x = sign * np.array([1.0, 3.0, 3.0, 2.0, 3.0])
    np.testing.assert_allclose(ad.grad(lambda t: fn(t))(x), [0, 1 / 3, 1 / 3, 0, 1 / 3], rtol=1e-15)
    _, t = ad.jvp(lambda a: fn(a), (x,), (np.array([0.0, 3.0, 6.0, 100.0, 0.0]),))
    np.testing.assert_allclose(t, 3.0, rtol=1e-15)  # the mean of the tied tangents
    # Along an axis: each row splits among its own ties.
    m = sign * np.array([[2.0, 2.0, 1.0], [0.0, 4.0, 4.0], [5.0, 5.0, 5.0]])
    np.testing.assert_allclose(ad.grad(lambda t: fn(t, axis=1).sum())(m),
                               [[0.5, 0.5, 0], [0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-15)


def test_max_pool2d_sends_gradient_to_first_maximum():
    x = np.array([[[[1.0, 4.0, 4.0, 0.0],
                    [4.0, 2.0, 3.0, 3.0],
                    [7.0, 7.0, 1.0, 2.0],
                    [7.0, 7.0, 2.0, 1.0]]]])
    dx = ad.grad(lambda t: ad.max_pool2d(t, 2).sum())(x)
    expected = np.zeros_like(x)
    expected[0, 0, 0, 1] = 1.0  # window (0, 0): 4 at (0, 1) and (1, 0): first in row-major order
    expected[0, 0, 0, 2] = 1.0  # window (0, 1): 4 at (0, 2)
    expected[0, 0, 2, 0] = 1.0  # window (1, 0): four 7s
    expected[0, 0, 2, 3] = 1.0  # window (1, 1): 2 at (2, 3) and (3, 2)
    np.testing.assert_array_equal(dx, expected)
    _, t = ad.jvp(lambda a: ad.max_pool2d(a, 2), (x,), (np.arange(16.0).reshape(x.shape),))
    np.testing.assert_array_equal(t, [[[[1.0, 2.0], [8.0, 11.0]]]])

# ------------------------------------------------------ un-broadcasting

BROADCAST_PAIRS = [((3, 4), (4,)), ((3, 1), (1, 4)), ((), (2, 3)), ((2, 1, 3), (4, 1)),
                   ((1, 1), (2, 3)), ((5,), (1,)), ((0, 3), (3,)), ((2, 3), (2, 3))]
BINARY_OPS = {
    "add": (ad.add, lambda x, y: (np.ones_like(x + y), np.ones_like(x + y))),
    "subtract": (ad.subtract, lambda x, y: (np.ones_like(x + y), -np.ones_like(x + y))),
    "multiply": (ad.multiply, lambda x, y: (y + 0 * x, x + 0 * y)),
    "divide": (ad.divide, lambda x, y: (1 / y + 0 * x, -x / y ** 2)),
    "maximum": (ad.maximum, lambda x, y: ((x > y) + 0 * y, (y > x) + 0 * x)),
    "minimum": (ad.minimum, lambda x, y: ((x < y) + 0 * y, (y < x) + 0 * x)),
    "power": (ad.power, lambda x, y: (y * x ** (y - 1), x ** y * np.log(x))),
}


def _explicit_unbroadcast(g, shape):
    """Sum g over the axes broadcasting added or stretched, by an explicit loop over entries."""
    out = np.zeros(shape)
    lead = g.ndim - len(shape)
    for idx in np.ndindex(g.shape):
        target = tuple(0 if d == 1 else i for i, d in zip(idx[lead:], shape))
        out[target] += g[idx]
    return out


@pytest.mark.parametrize("op", list(BINARY_OPS))
@pytest.mark.parametrize("sx,sy", BROADCAST_PAIRS, ids=[f"{a}-{b}" for a, b in BROADCAST_PAIRS])
def test_unbroadcast_gradient_has_input_shape_and_sums(op, sx, sy):
    fn, partials = BINARY_OPS[op]
    rng = np.random.default_rng(5)
    x = rng.uniform(0.5, 2.0, sx)
    y = rng.uniform(0.5, 2.0, sy) + 0.01  # no ties with x, positive base for power
    w = rng.standard_normal(np.broadcast_shapes(sx, sy))
    dx, dy = ad.grad(lambda a, b: (fn(a, b) * w).sum(), argnums=(0, 1))(x, y)
    assert dx.shape == sx and dy.shape == sy
    px, py = partials(x, y)
    np.testing.assert_allclose(dx, _explicit_unbroadcast(w * px, sx), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dy, _explicit_unbroadcast(w * py, sy), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sx,sy", BROADCAST_PAIRS, ids=[f"{a}-{b}" for a, b in BROADCAST_PAIRS])
def test_where_unbroadcast(sx, sy):
    rng = np.random.default_rng(6)
    cond = rng.random(np.broadcast_shapes(sx, sy)) > 0.5
    x, y = rng.standard_normal(sx), rng.standard_normal(sy)
    w = rng.standard_normal(cond.shape)
    dx, dy = ad.grad(lambda a, b: (ad.where(cond, a, b) * w).sum(), argnums=(0, 1))(x, y)
    assert dx.shape == sx and dy.shape == sy
    np.testing.assert_allclose(dx, _explicit_unbroadcast(w * cond, sx), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dy, _explicit_unbroadcast(w * ~cond, sy), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("big,small", [((2, 3, 4), (3, 1)), ((2, 3), ()), ((4, 1, 5), (1, 1, 5)),
                                       ((3,), (3,)), ((0, 2), (2,)), ((2, 3), (1, 3))])
def test_sum_to_shape_is_the_transpose_of_broadcasting(big, small):
    rng = np.random.default_rng(7)
    g = rng.standard_normal(big)
    out = sum_to_shape(ad.Tensor(g), small)
    assert out.shape == small
    np.testing.assert_allclose(out.value, _explicit_unbroadcast(g, small), rtol=1e-12, atol=1e-12)
    # <sum_to_shape(g), v> = <g, broadcast_to(v)>: the adjoint identity.
    v = rng.standard_normal(small)
    np.testing.assert_allclose(np.sum(out.value * v), np.sum(g * np.broadcast_to(v, big)), atol=1e-12)

# ------------------------------------------------------------ astype dtypes


def test_astype_gradient_comes_back_in_the_input_dtype():
    x = np.array([1.5, -2.0, 3.25])
    g = ad.grad(lambda t: (ad.astype(t, np.float32) * 2.0).sum())(x)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])
    x32 = ad.Tensor(x.astype(np.float32), requires_grad=True)
    (ad.astype(x32, np.float64) ** 2).sum().backward()
    assert x32.grad.dtype == np.float32
    np.testing.assert_array_equal(x32.grad.value, (2 * x).astype(np.float32))
    _, t = ad.jvp(lambda t: ad.astype(t, np.float32), (x,), (np.ones(3),))
    assert t.dtype == np.float32
    # Casting to an integer type cuts the derivative.
    np.testing.assert_array_equal(ad.grad(lambda t: ad.astype(ad.astype(t, np.int64), np.float64).sum())(x),
                                  np.zeros(3))

# ------------------------------------------------------------------ errors


def _shape_error(call, *fragments):
    with pytest.raises(ad.ShapeError) as err:
        call()
    message = str(err.value)
    for fragment in fragments + ("test_primitives_table.py",):
        assert fragment in message, (fragment, message)


X23 = ad.Tensor(np.ones((2, 3)))


@pytest.mark.parametrize("call,fragments", [
    (lambda: ad.transpose(X23, (0, 5)), ("transpose", "axis 5 is out of range")),   # not silently 5 % 2
    (lambda: ad.transpose(X23, (0, 1, 2)), ("transpose", "[-2, 2)")),
    (lambda: ad.transpose(X23, (1, 1)), ("transpose", "permutation")),
    (lambda: ad.swapaxes(X23, 0, 4), ("swapaxes", "axis 4")),
    (lambda: ad.expand_dims(X23, 5), ("expand_dims", "axis 5")),                      # not silently wrapped
    (lambda: ad.expand_dims(X23, -4), ("expand_dims", "axis -4")),
    (lambda: ad.squeeze(X23, 0), ("squeeze", "axis 0 of size 1")),
    (lambda: ad.reshape(X23, (4, 2)), ("reshape", "(4, 2)", "6 elements")),
    (lambda: ad.reshape(X23, (4, -1)), ("reshape", "cannot infer -1")),
    (lambda: ad.reshape(X23, (-1, -1)), ("reshape", "at most one of them -1")),
    (lambda: ad.reshape(X23, (2.5,)), ("reshape", "2.5")),                          # not truncated to 2
    (lambda: ad.reshape(X23, (-2, -3)), ("reshape", "non-negative")),
    (lambda: ad.broadcast_to(X23, (3, 3)), ("broadcast_to", "(2, 3)", "(3, 3)")),
    (lambda: ad.sum(X23, axis=2), ("sum", "axis 2")),
    (lambda: ad.sum(X23, axis=(0, -2)), ("sum", "repeated axis")),
    (lambda: ad.add(X23, np.ones(4)), ("add", "(2, 3)", "(4,)", "Expect", "Actual")),
    (lambda: ad.maximum(X23, np.ones((3, 2))), ("maximum", "(3, 2)")),
    (lambda: ad.where(np.ones(4, bool), X23, 0.0), ("where", "(4,)", "(2, 3)")),
    (lambda: ad.astype(X23, "no_such_dtype"), ("astype", "'no_such_dtype'")),
])
def test_bad_structural_and_elementwise_calls_are_shape_errors(call, fragments):
    _shape_error(call, *fragments)


def test_non_integer_axis_is_a_shape_error():
    _shape_error(lambda: ad.sum(X23, axis=1.5), "sum", "1.5")
