"""Property tests over random programs (hypothesis).

A recipe (``autograd_dag.testing.strategies.recipes``, public) is a random list of operations over a safe subset of primitives
(add, multiply, subtract, tanh, exp of a bounded value, logistic, softplus,
sum with keepdims, reshape ∘ transpose, matmul, maximum away from ties); each
operation takes its operands from the values computed so far, so the recipe
describes a random DAG with two inputs (a matrix and a broadcast vector).

Properties, for every recipe:
1. the eager result on new inputs equals the traced program re-executed on them;
2. the Jacobian by reverse mode (``ad.jacobian``, row by row) equals the one by
   forward mode (``ad.jvp`` on unit tangents, column by column) and central
   finite differences;
3. with one Tensor filling two argument slots of a transformation (checkpoint,
   vjp, jvp, grad) or of a user primitive, inside an outer derivative, every
   route (grad, jit(grad), grad_program(trace), hvp) equals finite differences.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import autograd_dag as ad
from autograd_dag.testing import strategies as ads
from autograd_dag.testing.strategies import X_SHAPE, Y_SHAPE

recipes = ads.recipes()  # the public generator: see its docstring for the operations and the resolution
seeds = st.integers(0, 2 ** 32 - 1)


def make_inputs(seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, X_SHAPE), rng.uniform(-1.5, 1.5, Y_SHAPE)


def fd_jacobian(f, args, k, eps=1e-6):
    """Central differences of f's output w.r.t. argument k: shape out.shape + arg.shape."""
    x = args[k]
    cols = []
    for idx in np.ndindex(x.shape):
        plus, minus = [a.copy() for a in args], [a.copy() for a in args]
        plus[k][idx] += eps
        minus[k][idx] -= eps
        with ad.no_grad():
            fp = f(*[ad.Tensor(a) for a in plus]).value
            fm = f(*[ad.Tensor(a) for a in minus]).value
        cols.append((fp - fm) / (2 * eps))
    out_shape = np.shape(cols[0])
    return np.moveaxis(np.array(cols), 0, -1).reshape(out_shape + x.shape)


def jvp_jacobian(f, args, k):
    x = args[k]
    cols = []
    for idx in np.ndindex(x.shape):
        tangents = [np.zeros_like(a) for a in args]
        tangents[k][idx] = 1.0
        cols.append(np.asarray(ad.jvp(f, tuple(args), tuple(tangents))[1]))
    out_shape = np.shape(cols[0])
    return np.moveaxis(np.array(cols), 0, -1).reshape(out_shape + x.shape)


@settings(max_examples=200, deadline=None, database=None)
@given(recipe=recipes, seed=seeds, new_seed=seeds)
def test_eager_equals_reexecuted_program(recipe, seed, new_seed):
    x, y = make_inputs(seed)
    plan = recipe.resolved(x, y)

    def f(x, y):
        return plan(x, y)

    prog = ad.trace(f, x, y)
    x2, y2 = make_inputs(new_seed)
    eager = f(ad.Tensor(x2), ad.Tensor(y2)).value
    np.testing.assert_allclose(prog(x2, y2), eager, rtol=1e-13, atol=1e-13)
    # Recorded again from the program (on Tensors), it gives the same values too.
    np.testing.assert_allclose(prog(ad.Tensor(x2), ad.Tensor(y2)).value, eager, rtol=1e-13, atol=1e-13)


@settings(max_examples=120, deadline=None, database=None)
@given(recipe=recipes, seed=seeds)
def test_reverse_equals_forward_equals_finite_differences(recipe, seed):
    x, y = make_inputs(seed)
    plan = recipe.resolved(x, y)

    def f(x, y):
        return plan(x, y)

    args = [x, y]
    for k in (0, 1):
        rev = ad.jacobian(f, argnums=k)(x, y)
        fwd = jvp_jacobian(f, args, k)
        fd = fd_jacobian(f, args, k)
        assert rev.shape == fwd.shape == fd.shape
        np.testing.assert_allclose(rev, fwd, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(rev, fd, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(fd).max()))


# One Tensor in several argument slots of a transformation (or of a user
# primitive), inside an outer derivative: every route must give the derivative
# of the function itself, checked against central differences. The sweeps key
# results by Tensor identity, so a slot that is not a node of its own would
# count a shared Tensor once per slot.

_pair = ad.primitive("pair_product_property_test", lambda a, b: a * b,
                     vjp=lambda ct, out, a, b: (ct * b, ct * a),
                     jvp=lambda t, out, a, b: (0.0 if t[0] is None else t[0] * b)
                     + (0.0 if t[1] is None else a * t[1]), replace=True)
ALIASING = ["checkpoint", "vjp", "jvp", "grad", "primitive"]


def aliased(plan, how):
    """A scalar function of x in which one Tensor fills two slots of ``how``."""
    def two_slots(a, b):
        return plan(a, b[0])  # b (the whole of x) supplies the vector input from its first row

    def g(x):
        if how == "checkpoint":
            return ad.sum(ad.tanh(ad.checkpoint(two_slots)(x, x)))
        if how == "vjp":
            out, f_vjp = ad.vjp(two_slots, x, x)
            da, db = f_vjp(np.ones(out.shape))
            return ad.sum(ad.tanh(da)) + ad.sum(db * db)
        if how == "jvp":
            _, t = ad.jvp(two_slots, (x, x), (np.ones(X_SHAPE), np.full(X_SHAPE, 0.5)))
            return ad.sum(ad.tanh(t))
        if how == "grad":
            return ad.sum(ad.tanh(ad.grad(lambda a, b: ad.sum(ad.tanh(two_slots(a, b))))(x, x)))
        h = two_slots(x, x)
        return ad.sum(_pair(h, h))
    return g


@settings(max_examples=60, deadline=None, database=None)
@given(recipe=recipes, seed=seeds, how=st.sampled_from(ALIASING))
def test_one_tensor_in_several_slots(recipe, seed, how):
    x, y = make_inputs(seed)
    plan = recipe.resolved(x, x[0])
    g = aliased(plan, how)
    fd = fd_jacobian(g, [x], 0)
    scale = max(1.0, np.abs(fd).max())
    for route, value in [("grad", lambda: ad.grad(g)(x)),
                         ("jit(grad)", lambda: ad.jit(ad.grad(g))(x)),
                         ("grad_program(trace)", lambda: ad.grad_program(ad.trace(g, x))(x))]:
        np.testing.assert_allclose(value(), fd, rtol=1e-5, atol=1e-6 * scale, err_msg=f"{how} via {route}")
    # Second order: the Hessian-vector product against differences of the (checked) gradient.
    v = np.random.default_rng(seed).standard_normal(X_SHAPE)
    eps = 1e-6
    fd_hvp = (ad.grad(g)(x + eps * v) - ad.grad(g)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(ad.hvp(g, x, v), fd_hvp, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(fd_hvp).max()),
                               err_msg=f"{how} via hvp")


@settings(max_examples=100, deadline=None, database=None)
@given(recipe=recipes, seed=seeds, new_seed=seeds)
def test_common_subexpression_elimination_keeps_values(recipe, seed, new_seed):
    # The recipe run twice on the same inputs repeats every node: the forward
    # copy and its VJPs are exact duplicates that the pass must merge.
    x, y = make_inputs(seed)
    plan = recipe.resolved(x, y)

    def f(x, y):
        return ad.sum(plan(x, y)) + ad.sum(plan(x, y))

    grad = ad.trace(ad.grad(f, argnums=(0, 1)), x, y)
    merged = grad.without_common_subexpressions()
    assert len(merged) < len(grad)
    x2, y2 = make_inputs(new_seed)
    for got, want in zip(merged(x2, y2), grad(x2, y2)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    for got, want in zip(ad.jit(ad.grad(f, argnums=(0, 1)))(x2, y2), grad(x2, y2)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


# ----------------------------------------------- Python numbers beside arrays, as numpy 2

_DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]
_BINARY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
           "**": lambda a, b: a ** b, "%": lambda a, b: a % b, "<": lambda a, b: a < b, "==": lambda a, b: a == b,
           "maximum": np.maximum, "where": lambda a, b: np.where(a > 0, a, b)}


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_DTYPES), st.sampled_from(sorted(_BINARY)),
       st.one_of(st.booleans(), st.integers(-3, 3), st.floats(-3, 3, allow_nan=False)), st.booleans(),
       st.integers(0, 2 ** 32 - 1))
def test_a_python_number_beside_a_tensor_gives_numpys_value_and_dtype(dtype, op, number, number_first, seed):
    values = np.random.default_rng(seed).integers(-3, 4, (2, 3)).astype(dtype)
    f = _BINARY[op]
    args = (number, values) if number_first else (values, number)
    with np.errstate(all="ignore"):
        try:
            expected = np.asarray(f(*args))
        except (TypeError, ValueError, ZeroDivisionError):   # numpy refuses (bool - bool, int ** -1, ...)
            expected = None
        tensor_args = (number, ad.Tensor(values)) if number_first else (ad.Tensor(values), number)
        if expected is None:
            try:
                f(*tensor_args)
            except (ad.AutogradDagError, TypeError, ValueError):
                return
            raise AssertionError("numpy refuses it, the Tensor computed something")
        got = f(*tensor_args)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if expected.dtype.kind == "f" and op == "**":
        # a ** b is pow, whose kernel (numpy's AVX-512 SVML loop, or libm's pow for other CPUs and
        # strides) is a few ulps from the exact value, not correctly rounded: not bit for bit.
        np.testing.assert_allclose(got.value, expected, rtol=4 * np.finfo(expected.dtype).eps, atol=0,
                                   equal_nan=True)
    else:  # integers, booleans, and +, -, *, /, %, maximum, where: correctly rounded IEEE operations
        np.testing.assert_array_equal(got.value, expected)


def test_a_bool_tensor_squared_has_numpys_dtype():
    # Found by the property above: numpy's b ** 2 is np.square (int8 for bools), np.power gave int64.
    b = np.array([[True, False], [False, True]])
    got = ad.Tensor(b) ** 2
    assert got.dtype == (b ** 2).dtype == np.int8
    np.testing.assert_array_equal(got.value, b.astype(np.int8))
