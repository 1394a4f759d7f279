"""Defects found by an adversarial hunt in the transformations (jit, checkpoint) and at numeric edges, one test each.

Each test failed before its fix; its comment names what was wrong.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_dag as ad


def test_jit_gives_a_python_int_argument_the_dtype_of_the_float_arrays():
    # ad.jit(f)(w32, 3) computed in float64 (a Python int became a float64 input) where the eager
    # call f(Tensor(w32), 3), numpy and jax.jit all stay float32 (a Python number is weak).
    def f(w, k):
        return w * k + ad.sum(w) * k
    w = np.array([0.5, -1.25, 2.0], np.float32)
    eager = f(ad.Tensor(w), 3).value
    assert eager.dtype == np.float32
    for k in (3, True):
        out = ad.jit(f)(w, k)
        assert out.dtype == np.float32, k
        # (the same float32 operations on the same values: exact)
        np.testing.assert_array_equal(out, f(ad.Tensor(w), k).value)
    g = ad.jit(ad.grad(lambda w, k: ad.sum(w ** k)))(w, 2)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, 2 * w)
    # Beside float64 arrays, and alone, as before: float64.
    assert ad.jit(f)(w.astype(np.float64), 3).dtype == np.float64
    assert ad.jit(lambda k: k * 2)(3).dtype == np.float64


def test_checkpoint_returns_a_tuple_or_dict_as_the_function_does():
    # ad.checkpoint(f) of an f returning (sin(x), cos(x)) returned one stacked Tensor of shape
    # (2, n) (a dict became an array of objects), and its backward raised "'tuple' object has no
    # attribute 'requires_grad'". Now: f's structure, and the gradient of every route.
    x = np.array([[0.3, -1.2, 2.0], [0.7, 0.1, -0.4]])
    w = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]])

    def block(a, W):
        h = ad.tanh(a @ W)
        return {"h": h, "pair": (ad.sin(a), ad.sum(h))}

    def loss(a, W):
        out = ad.checkpoint(block)(a, W)
        return ad.sum(out["h"] ** 2) + ad.sum(out["pair"][0] * 3.0) + out["pair"][1] ** 2

    def plain(a, W):   # the same loss without the checkpoint: the reference
        out = block(a, W)
        return ad.sum(out["h"] ** 2) + ad.sum(out["pair"][0] * 3.0) + out["pair"][1] ** 2

    out = ad.checkpoint(block)(x, w)
    assert set(out) == {"h", "pair"} and isinstance(out["pair"], tuple)
    np.testing.assert_allclose(out["h"], np.tanh(x @ w), rtol=1e-15)   # (one matmul and tanh: same bits)
    np.testing.assert_allclose(out["pair"][0], np.sin(x), rtol=1e-15)
    expected = ad.grad(plain, argnums=(0, 1))(x, w)
    # Recomputed in the same operations; the sums add the same terms in another order: 1e-12.
    for got in (ad.grad(loss, argnums=(0, 1))(x, w), ad.jit(ad.grad(loss, argnums=(0, 1)))(x, w),
                ad.grad_program(ad.trace(loss, x, w))(x, w)):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    tangents = (np.ones_like(x), w * 2)
    np.testing.assert_allclose(ad.jvp(loss, (x, w), tangents)[1], ad.jvp(plain, (x, w), tangents)[1], rtol=1e-12)
    np.testing.assert_allclose(ad.hessian(loss, argnums=1)(x, w), ad.hessian(plain, argnums=1)(x, w),
                               rtol=1e-12, atol=1e-12)
    with np.testing.assert_raises_regex(ad.AutogradDagError, "one dtype"):
        ad.checkpoint(lambda a: (a, a > 0))(ad.Tensor(x, requires_grad=True))


@pytest.mark.parametrize("fn", [ad.logaddexp, ad.logaddexp2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_logaddexp_at_plus_infinity_has_derivative_one_not_nan(fn, dtype):
    # d logaddexp(x, y)/dx = 1 / (1 + e^(y − x)) is 1 at x = +inf (PyTorch and JAX say 1);
    # the rule's exp(x − out) was exp(inf − inf) = NaN, eager, jit and forward mode.
    x = np.array([np.inf, np.inf, 0.0, -np.inf, 1.0], dtype)
    y = np.array([0.0, -np.inf, np.inf, -np.inf, 2.0], dtype)
    base = 2.0 if fn is ad.logaddexp2 else np.e
    s = 1.0 / (1.0 + base ** (2.0 - 1.0))          # the finite pair's weight of x, 1/(1 + b^(y−x))
    expected_x = np.array([1.0, 1.0, 0.0, 0.0, s], dtype)   # (−inf, −inf): 0, the library's log-sum-exp rule
    expected_y = np.array([0.0, 0.0, 1.0, 0.0, 1.0 - s], dtype)
    def pullback(a, b):   # (not grad of a sum: its forward adds inf and −inf)
        return ad.vjp(fn, a, b)[1](np.ones_like(x))
    rtol = 1e-15 if dtype == np.float64 else 1e-6   # (one exp of a difference, against the closed form)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # and no "invalid value" warning from inf − inf
        for gx, gy in (pullback(x, y), ad.jit(pullback)(x, y)):
            assert gx.dtype == dtype and gy.dtype == dtype
            np.testing.assert_allclose(gx, expected_x, rtol=rtol)
            np.testing.assert_allclose(gy, expected_y, rtol=rtol)
        ones, zeros = np.ones_like(x), np.zeros_like(x)
        np.testing.assert_allclose(ad.jvp(fn, (x, y), (ones, zeros))[1], expected_x, rtol=rtol)
        np.testing.assert_allclose(ad.jvp(fn, (x, y), (zeros, ones))[1], expected_y, rtol=rtol)


def test_jacobian_and_hessian_take_and_return_nested_structures_as_jax_does():
    # ad.jacobian of an f returning a dict raised "the cotangent and the output differ in structure",
    # of a tuple argument "AttributeError: 'tuple' object has no attribute 'reshape'"; hessian of a
    # dict of parameters likewise. Now JAX's jacrev structure: the output's, each leaf the argument's.
    x = np.array([0.3, -1.2, 2.0])
    y = np.array([[0.5, -1.0, 1.5], [0.25, -0.75, 2.0]])

    def f(a, b):
        return {"s": ad.sin(a) * b, "t": ad.sum(a * b, axis=-1)}
    J = ad.jacobian(f, argnums=(0, 1))(x, y)
    assert set(J) == {"s", "t"} and [j.shape for j in J["s"]] == [(2, 3, 3), (2, 3, 2, 3)]
    assert [j.shape for j in J["t"]] == [(2, 3), (2, 2, 3)]
    # Closed forms (one product each: exact up to rounding of sin and cos, 1e-15).
    eye = np.eye(3)
    np.testing.assert_allclose(J["s"][0], np.cos(x)[None, :, None] * y[:, :, None] * eye, rtol=1e-15)
    np.testing.assert_allclose(J["s"][1], np.sin(x)[None, :, None, None] * np.einsum("ik,jl->ijkl", np.eye(2), eye),
                               rtol=1e-15)
    np.testing.assert_allclose(J["t"][0], y, rtol=1e-15)
    np.testing.assert_allclose(J["t"][1], np.einsum("ik,l->ikl", np.eye(2), x), rtol=1e-15)
    # A tuple argument: one Jacobian per leaf; the same numbers by jit.
    Jp = ad.jacobian(lambda p: p[0] * p[1])((x, x + 1.0))
    assert isinstance(Jp, tuple)
    np.testing.assert_allclose(Jp[0], np.diag(x + 1.0), rtol=1e-15)
    np.testing.assert_allclose(Jp[1], np.diag(x), rtol=1e-15)
    np.testing.assert_allclose(ad.jit(ad.jacobian(lambda p: p[0] * p[1]))((x, x + 1.0))[1], np.diag(x), rtol=1e-15)
    # hessian of a dict of parameters: H[k1][k2], of shape p[k1].shape + p[k2].shape.
    params = {"w": x, "v": y[0]}
    H = ad.hessian(lambda p: ad.sum(p["w"] * p["v"]) ** 2)(params)
    # d²(w·v)²/dw dv = 2 (v wᵀ + (w·v) I), and d²/dw² = 2 v vᵀ (exact products of small numbers: 1e-15)
    np.testing.assert_allclose(H["w"]["v"], 2 * (np.outer(y[0], x) + x @ y[0] * eye), rtol=1e-15)
    np.testing.assert_allclose(H["w"]["w"], 2 * np.outer(y[0], y[0]), rtol=1e-15)
    np.testing.assert_allclose(H["v"]["v"], 2 * np.outer(x, x), rtol=1e-15)


def test_a_tangent_has_its_primals_dtype_when_promotion_widens_it():
    # x32 + i64 is float64 (numpy's promotion), but add's JVP passed x's float32 tangent on and the
    # sum after it added the tangents in float32: 1 + 1e-8 + 1e-8 gave 1.0 (float32), not 1.00000002.
    # Reverse mode casts cotangents to each node's dtype; forward mode now casts tangents likewise.
    x = np.array([0.5, 1.0, 3.0], np.float32)
    i = np.arange(3)
    t = np.array([1.0, 1e-8, 1e-8], np.float32)
    expected = np.sum(t.astype(np.float64))   # (three float64 adds in one order on both sides: exact)
    for how, (value, tangent) in [
            ("eager", ad.jvp(lambda a: ad.sum(a + i), (x,), (t,))),
            ("jit", ad.jit(lambda a, u: ad.jvp(lambda b: ad.sum(b + i), (a,), (u,)))(x, t))]:
        assert value.dtype == np.float64 and tangent.dtype == np.float64, how
        assert tangent == expected, how


def test_numpy_where_with_only_a_condition_is_nonzero_on_a_tensor():
    # np.where(t > 0) on a Tensor raised TypeError "where() missing 2 required positional
    # arguments"; numpy's one-argument where is nonzero (indices, no derivative).
    a = np.array([[1.0, -2.0], [3.0, 4.0]])
    t = ad.Tensor(a, requires_grad=True)
    got = np.where(t > 0)
    assert len(got) == 2
    for g, e in zip(got, np.where(a > 0)):
        np.testing.assert_array_equal(g, e)
    np.testing.assert_array_equal(np.where(t > 0, t, 0.0).value, np.where(a > 0, a, 0.0))


def test_named_trace_of_a_dict_of_named_tensors():
    # named.trace(f) of an f returning a dict raised "numpy and positional ad functions have no
    # names" (the dict's NamedTensors reached the positional trace); a tuple worked.
    from autograd_dag import named
    X = named.NamedTensor(np.arange(6.0).reshape(2, 3), "a b")
    program = named.trace(lambda x: {"s": x.nsum("a"), "e": (named.exp(x), x.nsum(("a", "b")))}, X)
    s, e, total = program(np.full((2, 3), 2.0))
    np.testing.assert_array_equal(s, [4.0, 4.0, 4.0])
    np.testing.assert_allclose(e, np.exp(np.full((2, 3), 2.0)), rtol=1e-15)   # (one exp: same bits)
    assert total == 12.0
    assert [named.program_axes(program).get(k) for k in program.outputs] == [("b",), ("a", "b"), ()]


def test_a_python_number_differentiated_beside_float32_arrays_is_float32():
    # ad.jvp(f, (w32, 3.0), ...), ad.vjp(f, w32, 3.0) and grad with argnums=(0, 1) made 3.0 a
    # float64 input, so f computed in float64 where f(w32, 3.0) itself, numpy 2 and JAX stay float32.
    w = np.array([0.5, -1.25], np.float32)
    def f(a, k):
        return a * k
    value, tangent = ad.jvp(f, (w, 3.0), (w, 0.0))
    assert value.dtype == tangent.dtype == np.float32
    np.testing.assert_array_equal(tangent, 3 * w)           # (one float32 product: exact)
    out, pullback = ad.vjp(f, w, 3.0)
    gw, gk = pullback(np.ones(2, np.float32))
    assert out.dtype == gw.dtype == gk.dtype == np.float32
    assert gk == np.float32(w.sum())
    value, (gw, gk) = ad.value_and_grad(lambda a, k: ad.sum(f(a, k)), argnums=(0, 1))(w, 3.0)
    assert value.dtype == gw.dtype == gk.dtype == np.float32
    assert ad.grad(lambda a, k: ad.sum(f(a, k)), argnums=1)(w, 3.0).dtype == np.float32
    # Alone, or beside float64 arrays, a Python number is float64, as before.
    assert ad.grad(lambda k: k * k)(3.0).dtype == np.float64
    assert ad.jvp(f, (w.astype(np.float64), 3.0), (w.astype(np.float64), 0.0))[1].dtype == np.float64


def test_masks_combine_with_and_or_xor_invert_under_jit_and_vmap():
    # (x > 0) & (y > 0), |, ^ and ~ on Tensors raised TypeError "unsupported operand type(s)", and
    # np.logical_and reads the numbers, which jit refuses: a mask could not be combined in a trace.
    a = np.array([1.5, -2.0, 3.0, 0.5])
    b = np.array([1.0, 1.0, -1.0, -2.0])
    m = np.array([True, False, True, False])

    def f(lib, x, y):
        where = ad.where if lib is ad else np.where
        return where(((x > 0) & (y > 0)) | ~(x > -1) ^ (m & (y < 0)), x, 0.0)
    fast = ad.jit(lambda x, y: f(ad, x, y))
    for x in (a, -a):   # the second call runs the program on other data: its masks follow them
        np.testing.assert_array_equal(fast(x, b), f(np, x, b))
        np.testing.assert_array_equal(f(ad, ad.Tensor(x), ad.Tensor(b)).value, f(np, x, b))
    np.testing.assert_array_equal(ad.vmap(lambda x, y: f(ad, x, y))(np.stack([a, -a]), np.stack([b, b])),
                                  np.stack([f(np, a, b), f(np, -a, b)]))
    np.testing.assert_array_equal(ad.grad(lambda x: ad.sum(f(ad, x, b)))(a), f(np, a, b) != 0)
    np.testing.assert_array_equal((m & ad.Tensor(~m)).value, np.zeros(4, bool))   # (numpy's operand first)
    with pytest.raises(TypeError, match="bitwise_and"):    # (integers are numpy's bitwise and: test_integer_operators)
        ad.Tensor(np.arange(3.0)) & 1


@pytest.mark.parametrize("op", ["sign", "round", "floor"])
def test_backward_gives_a_zero_gradient_behind_an_operation_of_zero_derivative(op):
    # PyTorch's backward() and ad.grad give zeros; the eager sweep left .grad None
    # (w.grad.value raised, and an optimizer skipped the weight's decay).
    w = ad.Tensor(np.array([0.3, 1.7, -2.2]), requires_grad=True)
    b = ad.Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    loss = (getattr(ad, op)(w * 2.0) * b).sum()
    loss.backward()
    np.testing.assert_array_equal(w.grad.value, np.zeros(3))
    assert w.grad.value.dtype == w.dtype
    # b's gradient is op(2w): the forward's own numbers, exact.
    np.testing.assert_array_equal(b.grad.value, getattr(np, op)(w.value * 2.0))
    np.testing.assert_array_equal(ad.grad(lambda w: (getattr(ad, op)(w * 2.0) * b.value).sum())(w.value),
                                  np.zeros(3))


def test_a_zero_gradient_keeps_the_leafs_dtype_and_adds_into_an_existing_one():
    w = ad.Tensor(np.ones(2, dtype=np.float32), requires_grad=True)
    ad.sign(w).sum().backward()
    assert w.grad.value.dtype == np.float32
    w.grad = ad.Tensor(np.full(2, 7.0, dtype=np.float32))
    ad.sign(w).sum().backward()
    np.testing.assert_array_equal(w.grad.value, [7.0, 7.0])
    unused = ad.Tensor(np.ones(2), requires_grad=True)
    (w * 1.0).sum().backward()
    assert unused.grad is None   # not behind the output at all: None, as in PyTorch
