"""numpy's everyday functions: conventions at kinks, zeros and ties pinned exactly,
values that depend on the data recomputed in traced programs, Tensor methods,
creation helpers, and the library's errors for bad input.

Expected derivatives are worked out by hand in each test, never by the code
under test.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import autograd_dag as ad


def both_modes(f, x):
    """(gradient of sum(f(x)) by reverse mode, the JVP of f along ones by forward mode)."""
    rev = ad.grad(lambda t: ad.sum(f(t)))(x)
    _, fwd = ad.jvp(f, (x,), (np.ones_like(x),))
    return rev, fwd

# ------------------------------------------------------------------ kinks


def test_clip_with_one_bound_keeps_an_integer_dtype():
    """A missing bound was ±inf, which made an int32 x float64 (np.clip keeps int32)."""
    x = np.array([3, -7, 8], np.int32)
    for lo, hi in ((0, None), (None, 2)):
        out = ad.clip(ad.Tensor(x), lo, hi).value
        assert out.dtype == np.int32 and out.tolist() == np.clip(x, lo, hi).tolist()


def test_clip_bounds_pass_the_derivative_to_x():
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    for d in both_modes(lambda t: ad.clip(t, 0.0, 1.0), x):
        np.testing.assert_array_equal(d, [0.0, 1.0, 1.0, 1.0, 0.0])
    lo, hi = np.zeros(5), np.ones(5)
    dx, dlo, dhi = ad.grad(lambda a, b, c: ad.sum(ad.clip(a, b, c)), argnums=(0, 1, 2))(x, lo, hi)
    np.testing.assert_array_equal(dx, [0.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(dlo, [1.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(dhi, [0.0, 0.0, 0.0, 0.0, 1.0])
    # A scalar bound collects the derivative of every entry it clips.
    assert float(ad.grad(lambda b: ad.sum(ad.clip(ad.Tensor(x), b, 1.0)))(0.0)) == 1.0


def test_clip_with_crossed_bounds_differentiates_the_upper_bound():
    """np.clip returns a_max wherever a_min > a_max; the derivative went to a_min (or to both) there."""
    x = np.array([0.1, 0.3, 0.9, 2.0, -1.0, 0.5])
    lo = np.array([0.5, 0.8, 0.2, 0.4, 0.7, 0.0])
    hi = np.array([0.2, 0.6, 0.6, 1.0, 0.3, 1.0])   # crossed in the first two and the fifth entry
    args = (x, lo, hi)

    def numeric(i):  # central differences of numpy's clip, entry by entry (clip is linear off its kinks)
        jac = np.zeros((6, 6))
        for k in range(6):
            up, down = [a.copy() for a in args], [a.copy() for a in args]
            up[i][k] += 1e-6
            down[i][k] -= 1e-6
            jac[:, k] = (np.clip(*up) - np.clip(*down)) / 2e-6
        return jac
    grads = ad.grad(lambda *a: ad.sum(ad.clip(*a) * np.arange(1.0, 7.0)), argnums=(0, 1, 2))(*args)
    for i in range(3):
        jac = numeric(i)
        np.testing.assert_allclose(grads[i], np.arange(1.0, 7.0) @ jac, atol=1e-8)
        tangents = [np.zeros(6)] * 3
        tangents[i] = np.linspace(1.0, 2.0, 6)
        _, fwd = ad.jvp(ad.clip, args, tuple(tangents))
        np.testing.assert_allclose(fwd, jac @ tangents[i], atol=1e-8)


@pytest.mark.parametrize("fn", [ad.floor, ad.ceil, ad.trunc, ad.round, ad.rint])
def test_rounding_has_zero_derivative_also_at_integers(fn):
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.7, 2.0])
    for d in both_modes(fn, x):
        np.testing.assert_array_equal(d, np.zeros(6))


def test_norm_at_zero_has_zero_gradient():
    z = np.zeros(3)
    for ord_ in (None, 2, 1):
        for d in both_modes(lambda t, o=ord_: ad.norm(t, o), z):
            np.testing.assert_array_equal(d, np.zeros(3))
    # One zero row among nonzero ones: only that row's gradient is 0.
    m = np.array([[0.0, 0.0], [3.0, 4.0]])
    np.testing.assert_allclose(ad.grad(lambda t: ad.sum(ad.norm(t, axis=1)))(m), [[0.0, 0.0], [0.6, 0.8]],
                               rtol=1e-15, atol=0)
    np.testing.assert_array_equal(ad.grad(lambda t: ad.norm(t))(np.array([3.0, 4.0])), [0.6, 0.8])


def test_norm_inf_ties_split_and_std_of_a_constant():
    x = np.array([-2.0, 1.0, 2.0])
    np.testing.assert_array_equal(ad.grad(lambda t: ad.norm(t, np.inf))(x), [-0.5, 0.0, 0.5])
    for d in both_modes(lambda t: ad.std(t), np.full(4, 3.0)):
        np.testing.assert_array_equal(d, np.zeros(4) if d.shape == (4,) else 0.0)


def test_hypot_at_origin_has_zero_derivative():
    dx, dy = ad.grad(lambda a, b: ad.sum(ad.hypot(a, b)), argnums=(0, 1))(np.zeros(2), np.array([0.0, 2.0]))
    np.testing.assert_array_equal(dx, [0.0, 0.0])
    np.testing.assert_array_equal(dy, [0.0, 1.0])


def test_fmax_fmin_send_the_derivative_to_the_non_nan_operand_and_split_ties():
    x, y = np.array([np.nan, 1.0, 2.0]), np.array([0.5, np.nan, 2.0])
    for fn in (ad.fmax, ad.fmin):
        dx, dy = ad.grad(lambda a, b: ad.sum(fn(a, b)), argnums=(0, 1))(x, y)
        np.testing.assert_array_equal(dx, [0.0, 1.0, 0.5])
        np.testing.assert_array_equal(dy, [1.0, 0.0, 0.5])


def test_nan_to_num_passes_the_derivative_only_where_finite():
    x = np.array([np.nan, 1.0, np.inf, -np.inf, -2.0])
    with np.errstate(invalid="ignore"):
        for d in both_modes(ad.nan_to_num, x):
            np.testing.assert_array_equal(d, [0.0, 1.0, 0.0, 0.0, 1.0])

# ---------------------------------------------------------- products and zeros


def test_prod_with_one_zero_and_two_zeros():
    np.testing.assert_array_equal(ad.grad(ad.prod)(np.array([2.0, 0.0, 3.0])), [0.0, 6.0, 0.0])
    _, t = ad.jvp(ad.prod, (np.array([2.0, 0.0, 3.0]),), (np.array([1.0, 10.0, 100.0]),))
    assert float(t) == 60.0
    np.testing.assert_array_equal(ad.grad(ad.prod)(np.array([2.0, 0.0, 0.0])), [0.0, 0.0, 0.0])
    # Second derivatives at two zeros: ∂²/∂x1∂x2 of x0·x1·x2 is x0 = 2.
    np.testing.assert_array_equal(ad.hessian(ad.prod)(np.array([2.0, 0.0, 0.0])),
                                  [[0.0, 0.0, 0.0], [0.0, 0.0, 2.0], [0.0, 2.0, 0.0]])
    # Along an axis, each row on its own.
    m = np.array([[1.0, 0.0, 4.0], [0.0, 0.0, 5.0], [2.0, 3.0, 1.0]])
    np.testing.assert_array_equal(ad.grad(lambda t: ad.sum(ad.prod(t, axis=1)))(m),
                                  [[0.0, 4.0, 0.0], [0.0, 0.0, 0.0], [3.0, 2.0, 6.0]])


def test_cumprod_first_derivatives_with_two_zeros():
    # out = [2, 0, 0, 0, 0]; ∂(Σ out)/∂x_k = Σ_{i>=k} Π_{j<=i, j≠k} x_j, worked out by hand:
    # k=0: 1 (later terms hold x1 = 0); k=1 (first zero): x0 + x0·x2 = 2 + 6; k>=2: 0 (x1 = 0).
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    np.testing.assert_array_equal(ad.grad(lambda t: ad.sum(ad.cumprod(t)))(x), [1.0, 8.0, 0.0, 0.0, 0.0])
    # Forward mode, column by column: the tangent of the output along e_k.
    columns = [ad.jvp(ad.cumprod, (x,), (e,))[1] for e in np.eye(5)]
    np.testing.assert_array_equal(np.stack(columns, axis=1),
                                  [[1, 0, 0, 0, 0], [0, 2, 0, 0, 0], [0, 6, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]])


def test_cumprod_one_zero_second_derivative():
    # Σ cumprod of (a, 0, c) = a + 0 + 0; Hessian of a + a·b + a·b·c at b = 0: ∂²/∂a∂b = 1 + c, ∂²/∂b∂c = a.
    x = np.array([2.0, 0.0, 3.0])
    np.testing.assert_allclose(ad.hessian(lambda t: ad.sum(ad.cumprod(t)))(x),
                               [[0.0, 4.0, 0.0], [4.0, 0.0, 2.0], [0.0, 2.0, 0.0]], atol=1e-15)

# ------------------------------------------------------------------ sorting


def test_sort_gradient_follows_the_stable_permutation_at_ties():
    x = np.array([2.0, 1.0, 2.0, 1.0])       # sorted: x1, x3, x0, x2
    w = np.array([10.0, 20.0, 30.0, 40.0])
    np.testing.assert_array_equal(ad.grad(lambda t: ad.sum(ad.sort(t) * w))(x), [30.0, 10.0, 40.0, 20.0])
    _, t = ad.jvp(ad.sort, (x,), (np.array([1.0, 2.0, 3.0, 4.0]),))
    np.testing.assert_array_equal(t, [2.0, 4.0, 1.0, 3.0])
    np.testing.assert_array_equal(ad.argsort(ad.Tensor(x)).value, [1, 3, 0, 2])


def test_traced_gradient_programs_recompute_data_dependent_permutations_and_masks():
    w = np.array([1.0, 2.0, 3.0])
    sort_loss = lambda t: ad.sum(ad.sort(t) * w)           # noqa: E731
    program = ad.grad_program(ad.trace(sort_loss, np.array([1.0, 2.0, 3.0])))
    np.testing.assert_array_equal(program(np.array([3.0, 1.0, 2.0])), [3.0, 1.0, 2.0])
    cumprod_loss = lambda t: ad.sum(ad.cumprod(t))        # noqa: E731
    program = ad.grad_program(ad.trace(cumprod_loss, np.array([1.0, 2.0, 3.0])))
    np.testing.assert_array_equal(program(np.array([2.0, 0.0, 3.0])), [1.0, 8.0, 0.0])
    prod_loss = lambda t: ad.prod(t)                       # noqa: E731
    program = ad.grad_program(ad.trace(prod_loss, np.array([1.0, 2.0, 3.0])))
    np.testing.assert_array_equal(program(np.array([2.0, 0.0, 3.0])), [0.0, 6.0, 0.0])
    # jit records on the first call (no zeros) and replays the program on the second (a zero).
    jitted = ad.jit(ad.grad(cumprod_loss))
    np.testing.assert_array_equal(jitted(np.array([1.0, 2.0, 3.0])), [9.0, 4.0, 2.0])
    np.testing.assert_array_equal(jitted(np.array([2.0, 0.0, 3.0])), [1.0, 8.0, 0.0])


def test_argmin_one_hot_first_tie_and_no_derivative():
    x = np.array([3.0, 1.0, 1.0])
    np.testing.assert_array_equal(ad.argmin(ad.Tensor(x)).value, [0.0, 1.0, 0.0])
    for d in both_modes(ad.argmin, x):
        np.testing.assert_array_equal(d, np.zeros(3))

# ------------------------------------------------------------- values, methods


def test_logarithms_exact_at_powers_and_square_is_one_node():
    # numpy's log10 and log2, not log(x) / log(10) (2.9999999999999996 at 1000): the same function
    # on the same number gives the same bits, while a libm is only promised within an ulp of 3.
    assert float(ad.log10(ad.Tensor(1000.0)).value) == float(np.log10(np.float64(1000.0))) == pytest.approx(3.0)
    assert float(ad.log2(ad.Tensor(8.0)).value) == float(np.log2(np.float64(8.0))) == pytest.approx(3.0)
    y = ad.square(ad.Tensor([3.0], requires_grad=True))
    assert y.prim.name == "square" and y.parents[0].prim is None


def test_tensor_methods():
    m = ad.Tensor([[1.0, -2.0], [3.0, 4.0]])
    assert float(m.prod().value) == -24.0
    np.testing.assert_allclose(m.std(axis=0).value, [1.0, 3.0])
    np.testing.assert_allclose(m.var(ddof=1).value, np.var(m.value, ddof=1))
    np.testing.assert_array_equal(m.cumsum(axis=1).value, [[1.0, -1.0], [3.0, 7.0]])
    np.testing.assert_array_equal(m.cumprod().value, [1.0, -2.0, -6.0, -24.0])
    assert float(m.trace().value) == 5.0
    np.testing.assert_array_equal(m.diagonal().value, [1.0, 4.0])
    np.testing.assert_array_equal(m.dot(ad.Tensor([1.0, 1.0])).value, [-1.0, 7.0])
    np.testing.assert_array_equal(m.clip(0.0, 3.0).value, [[1.0, 0.0], [3.0, 3.0]])
    np.testing.assert_array_equal(m.repeat(2, axis=0).shape, (4, 2))
    np.testing.assert_array_equal((m % 3.0).value, [[1.0, 1.0], [0.0, 1.0]])
    np.testing.assert_array_equal((7.0 % m).value, np.mod(7.0, m.value))
    np.testing.assert_array_equal(ad.Tensor([1.26]).round(1).value, [1.3])
    np.testing.assert_array_equal(round(ad.Tensor([1.6])).value, [2.0])
    assert bool(m.any().value) and not bool((m > 5.0).all().value)
    # Index methods answer as ndarray's (np.argmax(t) likewise); ad.argmax / ad.argmin are one-hot.
    assert int(m.argmax()) == 3 and int(m.argmin()) == 1
    np.testing.assert_array_equal(m.argmax(axis=0), [1, 1])
    np.testing.assert_array_equal(m.argsort(axis=1).value, [[1, 0], [0, 1]])
    assert m.real is m and m.conj() is m
    np.testing.assert_array_equal(m.imag.value, np.zeros((2, 2)))


def test_tensor_sort_in_place_is_refused():
    with pytest.raises(ad.AutogradDagError, match="np.sort"):
        ad.Tensor([2.0, 1.0]).sort()


def test_complex_inputs_are_refused_by_real_imag_conj():
    for fn in (ad.real, ad.imag, ad.conj):
        with pytest.raises(ad.AutogradDagError, match="real"):
            fn(ad.Tensor(np.array([1.0 + 2.0j])))


def test_creation_helpers_return_tensors():
    assert isinstance(ad.zeros((2, 3)), ad.Tensor) and ad.zeros((2, 3)).dtype == np.float64
    np.testing.assert_array_equal(ad.ones(2).value, [1.0, 1.0])
    np.testing.assert_array_equal(ad.full((2,), 7).value, [7.0, 7.0])
    assert ad.full((2,), 7).dtype == np.float64
    x = ad.Tensor(np.arange(3, dtype=np.float32))
    assert ad.zeros_like(x).dtype == np.float32 and ad.ones_like(x).shape == (3,)
    np.testing.assert_array_equal(ad.full_like(x, 2.0).value, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(ad.arange(3).value, [0, 1, 2])
    np.testing.assert_array_equal(ad.arange(0.0, 1.0, 0.5).value, [0.0, 0.5])
    np.testing.assert_array_equal(ad.linspace(0.0, 1.0, 3).value, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(ad.eye(2, k=1).value, [[0.0, 1.0], [0.0, 0.0]])
    w = ad.zeros(3, requires_grad=True)
    assert w.requires_grad
    # numpy's *_like on a Tensor that requires a gradient: a constant Tensor, not an error.
    y = np.zeros_like(w)
    assert isinstance(y, ad.Tensor) and not y.requires_grad


def test_var_std_ddof_match_numpy():
    x = np.random.default_rng(0).standard_normal((4, 5))
    for ddof in (0, 1, 2):
        np.testing.assert_allclose(ad.var(ad.Tensor(x), 1, ddof=ddof).value, np.var(x, 1, ddof=ddof), rtol=1e-12)
        np.testing.assert_allclose(ad.std(ad.Tensor(x), 0, ddof=ddof).value, np.std(x, 0, ddof=ddof), rtol=1e-12)


def test_split_returns_pieces_like_numpy():
    x = np.arange(6.0)
    pieces = ad.split(ad.Tensor(x), [2, 5])
    for got, want in zip(pieces, np.split(x, [2, 5])):
        np.testing.assert_array_equal(got.value, want)

# ------------------------------------------------------------------ errors

X = ad.Tensor(np.ones((2, 3)))


@pytest.mark.parametrize("call,fragments", [
    (lambda: ad.pad(X, -1), ("pad", "non-negative")),
    (lambda: ad.pad(X, ((1, 1), (1, 1), (1, 1))), ("pad", "(2, 2)")),
    (lambda: ad.split(X, 4, axis=1), ("split", "divides")),
    (lambda: ad.diagonal(ad.Tensor([1.0, 2.0])), ("diagonal", "at least 2")),
    (lambda: ad.tensordot(X, X, 1), ("tensordot", "equal lengths")),
    (lambda: ad.norm(X, "nuc", axis=1), ("norm", "numeric order")),
    (lambda: ad.norm(ad.Tensor(np.ones((2, 2, 2))), 1), ("norm", "vector or a matrix")),
    (lambda: ad.take_along_axis(X, np.array([[3]]), 1), ("take_along_axis", "[-3, 3)")),
    (lambda: ad.take_along_axis(X, np.array([0]), 1), ("take_along_axis", "dimensions")),
    (lambda: ad.repeat(X, [1, 2], axis=1), ("repeat", "one count per entry")),
    (lambda: ad.round(X, 1.5), ("round", "decimals")),
    (lambda: ad.clip(X, None, None), ("clip", "a_min")),
    (lambda: ad.cumsum(X, axis=2), ("cumsum", "axis 2")),
    (lambda: ad.prod(X, axis=(0, 0)), ("prod", "repeated axis")),
    (lambda: ad.diff(X, -1), ("diff", "non-negative")),
    (lambda: ad.hypot(X, np.ones(4)), ("hypot", "(2, 3)", "(4,)")),
    (lambda: ad.clip(X, np.zeros(4), 1.0), ("clip", "(4,)")),
    (lambda: ad.argmin(ad.Tensor(np.ones((0, 2))), 0), ("argmin", "non-empty")),
    (lambda: ad.tile(X, -1), ("tile", "non-negative")),
])
def test_bad_calls_are_shape_errors(call, fragments):
    with pytest.raises(ad.ShapeError) as err:
        call()
    for fragment in fragments:
        assert fragment in str(err.value), (fragment, str(err.value))


def test_one_norm_behind_both_spellings():
    # ad.norm was the vector norms and the Frobenius norm only (a matrix ord was refused, naming
    # ad.linalg.norm); now both spellings are one function with every ord of np.linalg.norm.
    assert ad.norm is ad.linalg.norm
    a = np.array([[1.0, -2.0], [3.0, 4.0]])
    for ord in (2, -2, "nuc", 1, -1, np.inf, -np.inf, "fro", None):
        # (numpy's SVD and the recorded one can differ in the last bits of the singular values)
        np.testing.assert_allclose(ad.norm(ad.Tensor(a), ord).value, np.linalg.norm(a, ord), rtol=1e-12)


def test_unsupported_variants_say_so():
    with pytest.raises(ad.AutogradDagError, match="mode='mean' is not supported"):
        np.pad(X, 1, mode="mean")
    with pytest.raises(ad.AutogradDagError, match="out="):
        np.cumsum(X, out=np.zeros(6))

# ------------------------------------------------------- abstract dtype rules

ELEMENTWISE = ["tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "log1p",
               "expm1", "log2", "log10", "exp2", "square", "reciprocal", "floor", "ceil", "trunc", "round",
               "nan_to_num", "isfinite", "isnan", "isinf", "cumsum", "cumprod", "sort", "argsort",
               "arctan2", "hypot", "logaddexp", "logaddexp2", "mod", "fmod", "fmax", "fmin", "clip"]
PARAMS = {"round": {"decimals": 0}, "nan_to_num": {"nan": 0.0, "posinf": None, "neginf": None},
          "cumsum": {"axis": 1, "reverse": False}, "cumprod": {"axis": 1, "reverse": True},
          "sort": {"axis": 1}, "argsort": {"axis": 1}}
ARITY = {"arctan2": 2, "hypot": 2, "logaddexp": 2, "logaddexp2": 2, "mod": 2, "fmod": 2, "fmax": 2, "fmin": 2, "clip": 3}


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.bool_, np.float32])
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_shape_rule_dtype_matches_implementation(name, dtype):
    prim = ad.PRIMITIVES[name]
    operands = [ad.Tensor(np.array([[1, 2, 3]], dtype=dtype))] * ARITY.get(name, 1)
    params = PARAMS.get(name, {})
    with np.errstate(all="ignore"):
        try:
            value = np.asarray(prim.impl(*[o.value for o in operands], **params))
        except TypeError:
            pytest.skip(f"numpy has no {name} for {np.dtype(dtype)}")
    shape, rule_dtype = prim.shape(*operands, **params)
    assert tuple(shape) == value.shape and np.dtype(rule_dtype) == value.dtype


def test_expand_dims_takes_a_tuple_of_axes_like_numpy():
    # A tuple was refused as "axis (0, -1) is out of range", which it is not.
    a = np.arange(6.0).reshape(2, 3)
    for axis in [0, -1, (0, -1), (1, 2), (0, 1, 4)]:
        assert np.expand_dims(ad.Tensor(a), axis).shape == np.expand_dims(a, axis).shape
    with pytest.raises(ad.ShapeError, match="repeated axis"):
        ad.expand_dims(ad.Tensor(a), (0, 0))


def test_python_numbers_take_the_dtype_numpy_2_gives_them():
    # A Python number is weak: beside an integer or boolean Tensor it keeps that dtype, as numpy 2's
    # does. A float64 constant would make mask + True count to 2 instead of or-ing, and lose
    # integers above 2⁵³.
    mask = np.array([True, False, True])
    ints = np.array([2 ** 53 + 1, -3, 7], dtype=np.int64)
    i32 = np.array([1, -2, 3], dtype=np.int32)
    for ours, theirs in [
        (ad.Tensor(mask) + True, mask + True), (True * ad.Tensor(mask), True * mask),
        (ad.Tensor(mask) + 1, mask + 1), (ad.Tensor(ints) + 1, ints + 1), (1 - ad.Tensor(ints), 1 - ints),
        (ad.Tensor(i32) * 3, i32 * 3), (ad.Tensor(i32) % 2, i32 % 2), (ad.Tensor(i32) / 2, i32 / 2),
        (ad.Tensor(i32) + 0.5, i32 + 0.5), (ad.Tensor(i32.astype(np.float32)) * 2, i32.astype(np.float32) * 2),
        (ad.where(ad.Tensor(mask), ad.Tensor(i32), 0), np.where(mask, i32, 0)),
        (np.maximum(ad.Tensor(i32), 0), np.maximum(i32, 0)),
    ]:
        assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
        np.testing.assert_array_equal(ours.value, theirs)
    with pytest.raises(ad.AutogradDagError, match="int8"):
        ad.Tensor(np.array([1], dtype=np.int8)) + 1000          # numpy refuses it too


def test_full_and_full_like_keep_a_computed_fill_and_numpys_shape_keyword():
    # d/dx Σ full(3, x²) = 3·2x: the fill is recorded, not read as a number.
    assert float(ad.grad(lambda x: ad.sum(ad.full(3, x * x)))(2.0)) == 12.0
    assert float(ad.grad(lambda x: ad.sum(ad.full_like(np.ones((2, 2)), x)))(2.0)) == 4.0
    assert float(ad.jit(lambda x: ad.sum(ad.full((2,), x)))(5.0)) == 10.0        # follows the data
    t = ad.Tensor(np.ones((2, 3)))
    for ours, theirs in [(np.full_like(t, 3.0, shape=(4,)), np.full_like(t.value, 3.0, shape=(4,))),
                         (np.full_like(t, 3.5, dtype=np.int32, shape=(2, 1)),
                          np.full_like(t.value, 3.5, dtype=np.int32, shape=(2, 1))),
                         (np.zeros_like(t, shape=(1, 5)), np.zeros_like(t.value, shape=(1, 5)))]:
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours.value, theirs)


def test_power_with_an_array_exponent_at_zero_base_and_zero_exponent():
    # Features x^0, x^1, x^2 at x = 0: d/dx Σ x^k = 0 + 1 + 2x = 1 (x⁰ = 1 is constant), not NaN;
    # at x = 2: 0 + 1 + 4 = 5. The mixed derivative d²(x^y)/dx dy at y = 0 stays 1/x.
    x = np.array([0.0, 2.0])
    k = np.arange(3.0)
    rev, fwd = both_modes(lambda t: ad.sum(t[:, None] ** k, axis=1), x)
    np.testing.assert_array_equal(rev, [1.0, 5.0])
    np.testing.assert_array_equal(fwd, [1.0, 5.0])
    np.testing.assert_array_equal(ad.grad(lambda t: ad.sum(np.power(t[:, None], k)))(x), [1.0, 5.0])
    np.testing.assert_allclose(ad.hessian(lambda t: ad.sum(t[:, None] ** np.arange(4.0)))(x), np.diag([2.0, 14.0]))
    mixed = ad.jacobian(ad.grad(lambda a, b: ad.sum(a ** b)), argnums=1)(np.array([2.0]), np.array([0.0]))
    np.testing.assert_allclose(mixed, [[0.5]], rtol=1e-15)

# ------------------------------------------------ numpy 2's named results


def test_linalg_decompositions_return_numpy_2_named_tuples():
    """np.linalg.eigh/svd/qr/slogdet on a Tensor gave plain tuples: ``.eigenvalues`` etc. raised."""
    a = np.array([[2.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 4.0]])
    wide = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]])
    t = ad.Tensor(a)
    for got, ref in ((np.linalg.eigh(t), np.linalg.eigh(a)), (np.linalg.svd(ad.Tensor(wide)), np.linalg.svd(wide)),
                     (np.linalg.qr(t), np.linalg.qr(a)), (np.linalg.slogdet(t), np.linalg.slogdet(a)),
                     (ad.linalg.svd(ad.Tensor(wide), full_matrices=False), np.linalg.svd(wide, full_matrices=False))):
        assert type(got).__name__ == type(ref).__name__ and got._fields == ref._fields
        for field in ref._fields:
            np.testing.assert_allclose(np.abs(getattr(got, field).value), np.abs(getattr(ref, field)), atol=1e-12)
        first, *rest = got                      # still a tuple
        assert isinstance(got, tuple) and first is got[0] and len(rest) == len(ref) - 1
    # jit and vmap return the same named tuple.
    jitted = ad.jit(lambda m: np.linalg.eigh(m))(a)
    assert type(jitted).__name__ == "EighResult"
    np.testing.assert_allclose(jitted.eigenvalues, np.linalg.eigvalsh(a), rtol=1e-12)
    batched = ad.vmap(lambda m: ad.linalg.slogdet(m))(np.stack([a, 2 * a]))
    np.testing.assert_allclose(batched.logabsdet, np.linalg.slogdet(np.stack([a, 2 * a])).logabsdet, rtol=1e-12)
    # The fields differentiate like the tuple entries.
    ad.check_grads(lambda m: np.linalg.eigh(m).eigenvalues @ np.arange(3.0), (a,), order=1)
    ad.check_grads(lambda m: np.linalg.slogdet(m).logabsdet, (a,), order=1)
    ad.check_grads(lambda m: ad.sum(np.linalg.qr(m).R ** 2 * np.arange(9.0).reshape(3, 3)), (a,), order=1)

# ------------------------------------------- numpy's positional out=None


POSITIONAL = [
    ("max", lambda a: a.max(1, None, True)), ("min", lambda a: a.min(0, None, True)),
    ("any", lambda a: a.any(1, None, None, True)), ("all", lambda a: a.all(0, None, None, True)),
    ("sum", lambda a: a.sum(1, None, None, True)), ("mean", lambda a: a.mean(0, None, None, True)),
    ("prod", lambda a: a.prod(1, None, None, True)), ("std", lambda a: a.std(0, None, None, 1, True)),
    ("var", lambda a: a.var(1, None, None, 0, True)), ("argmax", lambda a: a.argmax(1, None, keepdims=True)),
    ("argmin", lambda a: a.argmin(0, None)), ("cumsum", lambda a: a.cumsum(1, None, None)),
    ("cumprod", lambda a: a.cumprod(0, None, None)),
    ("np.max", lambda a: np.max(a, 1, None, True)), ("np.amin", lambda a: np.amin(a, 0, None, True)),
    ("np.sum", lambda a: np.sum(a, 0, None, None, True)), ("np.std", lambda a: np.std(a, 1, None, None, 1, True)),
    ("np.cumsum", lambda a: np.cumsum(a, 0, None, None)), ("np.cumprod", lambda a: np.cumprod(a, 1, None, None)),
    ("np.round", lambda a: np.round(a, 1, None)), ("np.around", lambda a: np.around(a, 2, None)),
    ("np.trace", lambda a: np.trace(a, 1, 0, 1, None, None)), ("np.clip", lambda a: np.clip(a, 0.0, 0.5, None)),
    ("np.outer", lambda a: np.outer(a, a, None)), ("np.dot", lambda a: np.dot(a, a.T, None)),
]


@pytest.mark.parametrize("name, call", POSITIONAL, ids=[p[0] for p in POSITIONAL])
def test_numpys_positional_out_none_is_accepted(name, call):
    """t.max(axis, None, True) read True as out= and raised "out not supported"; np.cumsum(t, 0, None, None)
    raised TypeError. numpy's own positional order now gives numpy's values, dtypes and shapes."""
    a = np.array([[0.3, -1.2, 0.7], [1.5, 0.2, -0.4]])
    got, want = call(ad.Tensor(a)), call(a)
    got = got.value if isinstance(got, ad.Tensor) else got
    assert got.shape == np.shape(want) and got.dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_numpys_positional_argument_derivatives():
    a = np.array([[0.3, -1.2, 0.7], [1.5, 0.2, -0.4]])
    ad.check_grads(lambda t: t.max(1, None, True) * t.std(0, None, None, 1, True), (a,), order=2)
    ad.check_grads(lambda t: np.cumsum(t, 1, None, None) ** 2, (a,), order=2)


@pytest.mark.parametrize("call", [lambda t: t.max(0, np.zeros(3)), lambda t: t.sum(0, None, np.zeros(3)),
                                  lambda t: np.cumsum(t, 0, None, np.zeros((2, 3))), lambda t: t.argmax(0, np.zeros(3, int)),
                                  lambda t: np.round(t, 1, np.zeros((2, 3))), lambda t: np.max(t, initial=5.0)])
def test_a_real_out_array_is_refused_by_name(call):
    with pytest.raises(ad.AutogradDagError, match=r"(out=|initial) not supported on Tensors") as err:
        call(ad.Tensor(np.ones((2, 3))))
    assert "test_numpy_functions.py" in str(err.value)

# ------------------------------------------------------- integer dtypes


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.bool_])
def test_integer_inputs_keep_numpys_dtype(dtype):
    """matrix_power(int matrix, 0) was a float64 identity; np.rint of integers stayed integer (numpy's is a
    float: float16 for int8); np.reciprocal of integers was 1/x in float64 (numpy's is C integer division)."""
    m = np.array([[1, 2], [3, 0]]).astype(dtype)
    v = np.array([1, 2, 3, 0, 1]).astype(dtype) if dtype != np.bool_ else np.array([True, False])
    if dtype in (np.int8, np.int32, np.int64):
        v = np.array([1, 2, -1, -2, 5], dtype)
    for n in (0, 1, 2):
        got, want = ad.linalg.matrix_power(ad.Tensor(m), n).value, np.linalg.matrix_power(m, n)
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), (n, got, want)
    got = np.linalg.matrix_power(ad.Tensor(np.stack([m, m])), 0).value
    assert got.dtype == m.dtype and got.tolist() == [np.eye(2, dtype=dtype).tolist()] * 2
    for fn in (np.rint, np.reciprocal, ad.rint, ad.reciprocal):
        ref = getattr(np, fn.__name__)
        with np.errstate(divide="ignore", invalid="ignore"):
            got, want = fn(ad.Tensor(v)).value, ref(v)
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), (fn, got, want)


def test_rint_and_reciprocal_of_floats_unchanged():
    x = np.array([0.5, 1.5, -2.5, 0.3])
    np.testing.assert_array_equal(np.rint(ad.Tensor(x)).value, [0.0, 2.0, -2.0, 0.0])
    np.testing.assert_array_equal(ad.grad(lambda t: ad.sum(np.rint(t)))(x), np.zeros(4))
    ad.check_grads(lambda t: np.reciprocal(t), (x,), order=2)
    ad.check_grads(lambda t: np.linalg.matrix_power(t, 0) * t, (np.eye(2) + 0.5,), order=1)

# -------------------------------------------------------------- fmod, sinc


def test_fmod_and_sinc_match_numpy_on_values_and_dtypes():
    """np.fmod and np.sinc on a Tensor requiring a gradient raised NotDifferentiableError (no rule)."""
    x = np.array([-7.5, 7.5, -1.0, 6.0, 1e17 + 3.0])
    y = np.array([2.0, -2.0, 0.75, 3.0, 7.0])
    got = np.fmod(ad.Tensor(x, requires_grad=True), ad.Tensor(y))
    assert got.prim.name == "fmod"
    np.testing.assert_array_equal(got.value, [math.fmod(a, b) for a, b in zip(x, y)])
    ints = np.array([-7, 7, 5, -5], np.int32)
    for a, b in ((ints, np.int32(3)), (ints, np.array([2, -2, 3, -3], np.int32))):
        got, want = np.fmod(ad.Tensor(a), b).value, np.fmod(a, b)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
    dx, dy = ad.grad(lambda a, b: ad.sum(np.fmod(a, b)), argnums=(0, 1))(x[:4], y[:4])
    np.testing.assert_array_equal(dx, np.ones(4))
    np.testing.assert_array_equal(dy, -np.trunc(x[:4] / y[:4]))
    for v in (np.array([0.0, 0.25, -3.0, 1e-4]), np.array([0, 1, 2]), np.array([0.0, 0.5], np.float32)):
        got, want = np.sinc(ad.Tensor(v, requires_grad=v.dtype.kind == "f")).value, np.sinc(v)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-15 if v.dtype == np.float64 else 1e-6, atol=1e-16)
    # sinc''(0) = -π²/3, sinc'(1) = (cos π - sinc 1)/1 = -1.
    assert abs(float(ad.grad(ad.grad(ad.sinc))(0.0)) + math.pi ** 2 / 3) < 1e-12
    assert float(ad.grad(ad.grad(ad.sinc))(0.0)) != 0.0
    assert abs(float(ad.grad(ad.sinc)(1.0)) + 1.0) < 1e-15


# ------------------------------------------------- pad modes, concatenate(axis=None)


@pytest.mark.parametrize("mode", ["edge", "reflect", "symmetric", "wrap"])
def test_pad_modes_match_numpy_also_with_widths_beyond_the_axis(mode):
    """np.pad(t, ..., mode) other than 'constant' raised 'not supported'."""
    x = np.arange(1.0, 7.0).reshape(2, 3)
    for widths in (((1, 2), (3, 0)), ((5, 4), (7, 8)), 2):
        np.testing.assert_array_equal(np.pad(ad.Tensor(x), widths, mode=mode).value, np.pad(x, widths, mode=mode))
    # The derivative of sum(w * pad(x)) counts every copy: the same as padding np.arange's positions.
    w = np.random.default_rng(0).standard_normal(np.pad(x, ((5, 4), (7, 8))).shape)
    positions = np.pad(np.arange(6).reshape(2, 3), ((5, 4), (7, 8)), mode=mode)
    expected = np.bincount(positions.ravel(), weights=w.ravel(), minlength=6).reshape(2, 3)
    got = ad.grad(lambda t: ad.sum(w * np.pad(t, ((5, 4), (7, 8)), mode=mode)))(x)
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    ad.check_grads(lambda t: np.pad(t, ((2, 3), (1, 4)), mode=mode) ** 2, (x,), order=2)
    batched = ad.vmap(lambda t: np.pad(t, (2, 3), mode=mode))(x)
    np.testing.assert_array_equal(batched, np.stack([np.pad(r, (2, 3), mode=mode) for r in x]))
    np.testing.assert_array_equal(ad.jit(lambda t: ad.pad(t, 1, mode))(x), np.pad(x, 1, mode=mode))


def test_pad_modes_refuse_what_numpy_refuses():
    with pytest.raises(ad.ShapeError, match="empty"):
        np.pad(ad.Tensor(np.ones((0, 2))), 1, mode="edge")        # numpy: ValueError, cannot extend an empty axis
    np.testing.assert_array_equal(np.pad(ad.Tensor(np.ones((0, 2))), ((0, 0), (1, 1)), mode="wrap").value,
                                  np.zeros((0, 4)))
    with pytest.raises(ad.AutogradDagError, match="constant_values not supported with mode='edge'"):
        np.pad(X, 1, mode="edge", constant_values=2.0)
    with pytest.raises(ad.AutogradDagError, match="reflect_type='odd'"):
        np.pad(X, 1, mode="reflect", reflect_type="odd")


def test_concatenate_axis_none_flattens_as_numpy():
    """concatenate(..., axis=None) raised 'axis None is out of range'."""
    a, b = np.arange(4.0).reshape(2, 2), np.array(7.0)
    got = np.concatenate([ad.Tensor(a, requires_grad=True), ad.Tensor(b), [8, 9]], axis=None)
    np.testing.assert_array_equal(got.value, [0.0, 1.0, 2.0, 3.0, 7.0, 8.0, 9.0])
    assert got.value.dtype == np.concatenate([a, b, [8, 9]], axis=None).dtype
    np.testing.assert_array_equal(ad.grad(lambda t: ad.sum(ad.concatenate([t, t], axis=None) * np.arange(8.0)))(a),
                                  [[4.0, 6.0], [8.0, 10.0]])

# ------------------------------------------------- median and the nan-reductions

NAN_FUNCTIONS = ["median", "nansum", "nanmean", "nanmax", "nanmin"]


@pytest.mark.parametrize("name", NAN_FUNCTIONS)
def test_median_and_nan_reductions_match_numpy(name):
    """np.median, np.nansum, np.nanmean, np.nanmax, np.nanmin on a Tensor requiring a gradient raised
    NotDifferentiableError. Values, shapes and dtypes are numpy's, NaN included, on every axis form."""
    x = np.random.default_rng(1).standard_normal((3, 4, 5))
    x[0, 1, 2] = np.nan
    x[2, :, 3] = np.nan           # an all-NaN slice along axis 1
    for axis in (None, 0, 1, -1, (0, 2), (2, 0, 1)):
        for keepdims in (False, True):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
            got = getattr(np, name)(ad.Tensor(x, requires_grad=True), axis=axis, keepdims=keepdims).value
            assert got.shape == want.shape and got.dtype == want.dtype, (axis, keepdims)
            np.testing.assert_allclose(got, want, rtol=1e-14, equal_nan=True)
    for v in (np.array([3, 1, 2, 2], np.int32), np.array([1.0, 2.5, 3.0], np.float32), np.arange(6).reshape(2, 3)):
        got, want = getattr(np, name)(ad.Tensor(v)).value, getattr(np, name)(v)
        assert got.dtype == want.dtype and got == want


@pytest.mark.parametrize("name", NAN_FUNCTIONS)
def test_nan_entries_get_zero_derivative_and_numbers_their_own(name):
    x = np.array([[1.0, np.nan, 3.0, -2.0], [np.nan, np.nan, np.nan, np.nan], [0.5, 4.0, np.nan, 2.0]])
    f = getattr(ad, name)
    g = ad.grad(lambda t: ad.sum(f(t, axis=1) * np.array([1.0, 2.0, 3.0])))(x)
    # The numbers of each row by hand (median's NaN rows are NaN with derivative 0).
    expected = {
        "median": [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
        "nansum": [[1, 0, 1, 1], [0, 0, 0, 0], [3, 3, 0, 3]],
        "nanmean": [[1 / 3, 0, 1 / 3, 1 / 3], [0, 0, 0, 0], [1, 1, 0, 1]],
        "nanmax": [[0, 0, 1, 0], [0, 0, 0, 0], [0, 3, 0, 0]],
        "nanmin": [[0, 0, 0, 1], [0, 0, 0, 0], [3, 0, 0, 0]],
    }[name]
    np.testing.assert_allclose(g, expected, rtol=1e-15, atol=0)
    _, tangent = ad.jvp(lambda t: f(t, axis=1), (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tangent, np.sum(expected / np.array([[1.0], [2.0], [3.0]]), axis=1), rtol=1e-15)
    # On the numbers the derivative is the finite-difference one (NaN entries held fixed).
    numbers = ~np.isnan(x)

    def on_numbers(v):
        return f(ad.where(numbers, ad.Tensor(np.zeros(12)).reshape(3, 4) + 0.0, x) + ad.where(numbers, 1.0, 0.0) * v,
                 axis=1)
    if name != "median":
        ad.check_grads(lambda v: ad.nan_to_num(on_numbers(v)), (np.where(numbers, x, 0.0),), order=1)
    np.testing.assert_array_equal(ad.grad(lambda t: ad.sum(ad.jit(lambda u: f(u, axis=1))(t)
                                                           * np.array([1.0, 2.0, 3.0])))(x), g)


def test_median_derivative_at_ties_follows_the_stable_sort_and_averages_an_even_count():
    # Odd count, a tie at the middle: the stable sort orders 1.0, 2.0 (index 1), 2.0 (index 2), 5.0, 9.0,
    # so the middle slot is the second 2.0's.
    np.testing.assert_array_equal(ad.grad(ad.median)(np.array([5.0, 2.0, 2.0, 9.0, 1.0])), [0, 0, 1, 0, 0])
    # Even count: half to each of the two middle entries, ties as the sort orders them.
    np.testing.assert_array_equal(ad.grad(ad.median)(np.array([4.0, 1.0, 3.0, 2.0])), [0, 0, 0.5, 0.5])
    np.testing.assert_array_equal(ad.grad(ad.median)(np.array([2.0, 2.0, 2.0, 2.0])), [0, 0.5, 0.5, 0])
    ad.check_grads(lambda t: np.median(t, axis=(0, 2)) ** 2, (np.random.default_rng(3).standard_normal((2, 3, 4)),),
                   order=2)
    batched = ad.vmap(lambda t: np.median(t))(np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]]))
    np.testing.assert_array_equal(batched, [2.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(np.median(ad.Tensor(np.ones((0, 3))), axis=0).value).all()


def test_median_and_nan_reductions_refuse_out_and_empty_nanmax():
    t = ad.Tensor(np.ones((2, 3)))
    with pytest.raises(ad.AutogradDagError, match="out= not supported"):
        np.median(t, 0, np.zeros(3))
    with pytest.raises(ad.AutogradDagError, match="out= not supported"):
        np.nansum(t, 0, None, np.zeros(3))
    with pytest.raises(ad.ShapeError):
        np.nanmax(ad.Tensor(np.ones((0, 3))), axis=0)        # numpy: ValueError, no identity
    np.testing.assert_array_equal(np.nanmax(t, 1, None, True).value, np.ones((2, 1)))   # (axis, out, keepdims)
    np.testing.assert_array_equal(np.nanmean(t, 0, np.float32).value, np.ones(3, np.float32))
