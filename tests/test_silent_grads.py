"""Derivatives that came out silently wrong at particular values: now exact, or refused.

A library used to verify gradients must give the right derivative or raise a
library error naming the operation, the values and the user's line. Each test
compares against an independent computation (central differences in float64,
a numpy formula) or asserts the refusal, in eager mode, under ``jit`` (a
program recorded on good values, run on bad ones) and under ``vmap``.
"""

import math

import numpy as np
import pytest

import autograd_dag as ad
from tests._checking_helpers import scaling_primitive
from tests import helpers
from tests.helpers import central_gradient

L = ad.linalg


def _line_of(marker: str) -> int:
    return helpers.line_of(marker, __name__)

# ------------------------------------------------------------- qr, rank-deficient


_W = np.random.default_rng(7).standard_normal((3, 5))


def _r_loss(a):
    k = min(a.shape[-2:])
    return ad.sum(L.qr(a)[1] * _W[:k, :a.shape[-1]])     # qr-loss-line


def _r_loss_np(a):
    r = np.linalg.qr(a)[1]
    k = min(a.shape[-2:])
    return float(np.sum(r * _W[:k, :a.shape[-1]]))


def _rank_deficient(shape, seed=0):
    """A matrix whose leading min(m, n) square block is singular (one column a combination of two)."""
    a = np.random.default_rng(seed).standard_normal(shape)
    k = min(shape)
    a[:, k - 1] = a[:, 0] - 2.0 * a[:, 1] if k > 2 else 3.0 * a[:, 0]
    return a


@pytest.mark.parametrize("shape", [(2, 4), (3, 5), (4, 3), (3, 3)], ids=["wide", "wide3", "tall", "square"])
def test_qr_of_a_rank_deficient_leading_block_refuses_its_derivative(shape):
    # The solves with R divided by an r_ii of 1e-17: the gradient came back off by O(1) with
    # no error (wide 2x4: 6.4 away from central differences).
    a = _rank_deficient(shape)
    line = _line_of("# qr-loss-line")
    tangent = np.ones_like(a)
    attempts = {
        "grad": lambda: ad.grad(_r_loss)(a),
        "backward": lambda: _r_loss(ad.Tensor(a, requires_grad=True)).backward(),
        "jvp": lambda: ad.jvp(_r_loss, (a,), (tangent,)),
        "hessian": lambda: ad.hessian(_r_loss)(a),
        "vmap": lambda: ad.vmap(ad.grad(_r_loss))(np.stack([a + 0.5 * np.eye(*shape), a])),
    }
    for how, attempt in attempts.items():
        with pytest.raises(ad.UndefinedDerivativeError) as info:
            attempt()
        message = str(info.value)
        assert "qr" in message and "full rank" in message and f"test_silent_grads.py:{line}" in message, (how, message)
    # A program recorded on a full-rank matrix refuses the singular one when it runs.
    compiled = ad.jit(ad.grad(_r_loss))
    good = np.random.default_rng(1).standard_normal(shape)
    np.testing.assert_allclose(compiled(good), central_gradient(_r_loss_np, good), atol=1e-6)
    with pytest.raises(ad.UndefinedDerivativeError, match=f"qr.*test_silent_grads.py:{line}"):
        compiled(a)


def test_qr_rank_test_is_relative_to_the_norm():
    # R is homogeneous of degree 1 in A, so d/dA Σ W∘R is the same at A and at 1e-200·A;
    # a tiny but full-rank matrix keeps its derivative, a near-singular one (gap 1e-6) too.
    a = np.random.default_rng(3).standard_normal((3, 5))
    expected = central_gradient(_r_loss_np, a)
    np.testing.assert_allclose(ad.grad(_r_loss)(a * 1e-200), expected, atol=1e-6)
    near = _rank_deficient((3, 5))
    near[:, 2] += 1e-6 * np.random.default_rng(4).standard_normal(3)
    np.testing.assert_allclose(ad.grad(_r_loss)(near), central_gradient(_r_loss_np, near, eps=1e-9),
                               rtol=1e-3, atol=1e-3)

# ------------------------------------------------------------- det at singular matrices


def _cofactors(a):
    """Signed (n-1)x(n-1) minors by numpy, one determinant each: ∂det/∂a (any rank)."""
    n = a.shape[-1]
    c = np.empty(a.shape)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, -2), j, -1).astype(np.float64)
            c[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return c


_SINGULAR = [
    np.array([[1.0, 2.0], [2.0, 4.0]]),                                  # rank 1 of 2
    np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]),        # rank 2 of 3
    np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]]),        # rank 1: cofactors 0
    np.zeros((3, 3)),
    np.diag([1e-170, 1e-170, 1e-5]),           # invertible, but det underflows to 0: cofactor 1e-175
]


@pytest.mark.parametrize("a", _SINGULAR, ids=["rank1of2", "rank2of3", "rank1of3", "zero", "det-underflow"])
def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix(a):
    # det·A⁻ᵀ raised at a singular A (inv), and gave 0 where det underflowed. (PyTorch 2.13
    # returns 0 at an exactly singular A, wrong for rank n-1: [[1, 2], [2, 4]] has [[4, -2], [-2, 1]].)
    expected = _cofactors(a)
    # Rounding noise of an (n-1)x(n-1) minor is about eps·‖A‖^(n-1): the tolerance where a
    # cofactor is 0; no absolute tolerance for the tiny matrix (its cofactors are 1e-175).
    noise = 1e-14 * np.linalg.norm(a, 2) ** (a.shape[-1] - 1) if np.linalg.norm(a, 2) > 1e-3 else 0.0
    tangent = np.arange(a.size, dtype=float).reshape(a.shape) - 2.0
    _, d = ad.jvp(L.det, (a,), (tangent,))
    for got in [ad.grad(L.det)(a), ad.jit(ad.grad(L.det))(a), ad.vjp(L.det, a)[1](np.array(1.0))[0]]:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=noise)
    np.testing.assert_allclose(d, np.sum(expected * tangent), rtol=1e-12, atol=10 * noise)


def test_det_gradient_batched_mixes_singular_and_invertible_matrices_in_both_precisions():
    rng = np.random.default_rng(5)
    stack = np.stack([_SINGULAR[1], rng.standard_normal((3, 3)), _SINGULAR[2], rng.standard_normal((3, 3))])
    expected = _cofactors(stack)
    weights = np.array([1.0, -2.0, 0.5, 3.0])
    loss = lambda a: ad.sum(L.det(a) * weights.astype(a.dtype))
    np.testing.assert_allclose(ad.grad(loss)(stack), expected * weights[:, None, None], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ad.vmap(ad.grad(L.det))(stack), expected, rtol=1e-10, atol=1e-12)
    single = ad.grad(loss)(stack.astype(np.float32))
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, expected * weights[:, None, None], rtol=1e-4, atol=1e-4)
    # A program recorded on invertible matrices differentiates singular ones when it runs.
    compiled = ad.jit(ad.grad(loss))
    compiled(rng.standard_normal((4, 3, 3)))
    np.testing.assert_allclose(compiled(stack), expected * weights[:, None, None], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("gap", [1.0, 1e-10, 1e-14, 0.0])
def test_det_second_derivative_is_exact_up_to_and_at_singular_matrices(gap):
    # d(det·A⁻ᵀ) through A⁻¹ lost digits as A neared singular (1% off at a gap of 1e-14)
    # and raised at it; the Hessian from the SVD is exact at any rank. 3x3 cofactors are
    # quadratic, so their central differences are exact up to rounding.
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 3))
    a[2] = a[0] + a[1] + gap * rng.standard_normal(3)
    w = np.arange(9.0).reshape(3, 3)
    expected = central_gradient(lambda x: float(np.sum(_cofactors(x) * w)), a, eps=1e-4)
    for got in [ad.grad(lambda x: ad.sum(ad.grad(L.det)(x) * w))(a),
                ad.jvp(ad.grad(L.det), (a,), (w,))[1],
                ad.jit(ad.grad(lambda x: ad.sum(ad.grad(L.det)(x) * w)))(a)]:
        np.testing.assert_allclose(got, expected, atol=1e-8)
    # rank 1 (n - 2): the Hessian is the signed 1x1 minors, still exact
    np.testing.assert_allclose(ad.hessian(L.det)(_SINGULAR[2]).reshape(9, 9),
                               np.stack([central_gradient(lambda x: float(_cofactors(x).ravel()[i]), _SINGULAR[2], eps=1e-4)
                                         .ravel() for i in range(9)]), atol=1e-8)

# ------------------------------------------------------- cumprod and prod under/overflow


def _cumprod_vjp_ref(x, ct):
    """x̄_j = Σ_{i>=j} ct_i Π_{k<=i, k≠j} x_k in float64, O(n²) products of the others (no division)."""
    x, ct = np.asarray(x, np.float64), np.asarray(ct, np.float64)
    n = len(x)
    g = np.zeros(n)
    for j in range(n):
        others = np.cumprod(np.where(np.arange(n) == j, 1.0, x))    # Π_{k<=i, k≠j} x_k for each i
        g[j] = np.sum(ct[j:] * others[j:])
    return g


def _cumprod_jvp_ref(x, t):
    x, t = np.asarray(x, np.float64), np.asarray(t, np.float64)
    n = len(x)
    return np.array([sum(t[j] * np.prod(np.delete(x[:i + 1], j)) for j in range(i + 1)) for i in range(n)])


def _assert_close_where_normal(got, expected, dtype, rtol):
    # Where the exact value is a normal number of the dtype it must agree to rtol; below,
    # it may round to a subnormal or to 0.
    tiny = np.finfo(dtype).tiny
    normal = np.abs(expected) >= tiny
    assert normal.sum() >= 2
    np.testing.assert_allclose(np.asarray(got, np.float64)[normal], expected[normal], rtol=rtol)
    assert np.all(np.abs(np.asarray(got, np.float64)[~normal]) <= 4 * tiny)


_RANGE_CASES = {
    # the running product underflows to 0 after two entries: ∂out_1/∂x_1 = x_0 = 1e-200, not 0/x_1
    "float64-underflow-early": np.array([1e-200, 1e-200, 3.0, 0.5, 7.0, -2.0]),
    "float64-300-small": np.full(300, 1e-5),
    "float32-modest": np.full(40, 0.02, dtype=np.float32),
    "float32-overflow": np.full(45, 10.0, dtype=np.float32),
}


@pytest.mark.filterwarnings("ignore:overflow encountered in accumulate")   # (the forward cumprod's own)
@pytest.mark.parametrize("name", list(_RANGE_CASES))
def test_cumprod_derivatives_are_exact_when_the_running_product_under_or_overflows(name):
    x = _RANGE_CASES[name]
    n = len(x)
    ct = np.random.default_rng(8).standard_normal(n).astype(x.dtype)
    keep = n - 12 if "overflow" in name else n          # the overflowed outputs are masked out of the loss
    ct[keep:] = 0.0
    loss = lambda t: ad.sum(ad.cumprod(t)[:keep] * ct[:keep])
    rtol = 1e-5 if x.dtype == np.float32 else 1e-11
    expected = _cumprod_vjp_ref(x, ct)
    for how, g in [("grad", ad.grad(loss)(x)), ("jit", ad.jit(ad.grad(loss))(x)),
                   ("vmap", ad.vmap(ad.grad(loss))(x[None])[0])]:
        assert g.dtype == x.dtype, how
        _assert_close_where_normal(g, expected, x.dtype, rtol)
    tangent = np.random.default_rng(9).standard_normal(n).astype(x.dtype)
    expected_jvp = _cumprod_jvp_ref(x, tangent)[:keep]
    for how, f in [("jvp", lambda t: ad.cumprod(t)[:keep]), ("jit-jvp", ad.jit(lambda t: ad.cumprod(t)[:keep]))]:
        _, d = ad.jvp(f, (x,), (tangent,)) if how == "jvp" else (None, ad.jit(
            lambda a, b: ad.jvp(lambda t: ad.cumprod(t)[:keep], (a,), (b,))[1])(x, tangent))
        _assert_close_where_normal(d, expected_jvp, x.dtype, rtol)


def test_cumprod_second_derivatives_exact_with_two_zeros():
    # Σ cumprod(a, 0, c, 0, e): ∂²/∂x1∂x3 of the terms holding both zeros, x0 x1 x2 x3 (1 + e): x0 x2 (1 + e).
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    f = lambda v: float(np.sum(np.cumprod(v)))
    eps = 1e-4
    expected = np.zeros((5, 5))
    for i in range(5):
        for j in range(5):
            e_i, e_j = np.eye(5)[i] * eps, np.eye(5)[j] * eps
            expected[i, j] = (f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j) + f(x - e_i - e_j)) / (4 * eps**2)
    np.testing.assert_allclose(ad.hessian(lambda t: ad.sum(ad.cumprod(t)))(x), expected, atol=1e-6)
    assert abs(expected[1, 3] - 2.0 * 3.0 * 6.0) < 1e-6


def test_prod_gradient_exact_when_the_product_is_subnormal():
    # prod = 1e-321, a subnormal with 3 significant digits: dividing it by each entry lost
    # the others' product to 1e-3 relative error (∂/∂x_0 = 1e-161 exactly).
    x = np.array([1e-160, 1e-160, 1e-1])
    expected = np.array([np.prod(np.delete(x, j)) for j in range(3)])
    _assert_close_where_normal(ad.grad(ad.prod)(x), expected, np.float64, 1e-13)
    _assert_close_where_normal(ad.grad(lambda t: ad.sum(ad.cumprod(t)))(x),
                               _cumprod_vjp_ref(x, np.ones(3)), np.float64, 1e-13)

# ------------------------------------------- check_grads: an error in one tiny entry


_SCALE = np.ones((20, 20))
_SCALE[7, 11] = 1e-5            # one output entry far smaller than the others
_WRONG = _SCALE.copy()
_WRONG[7, 11] = 2e-5            # its derivative wrong by 100%


def _scaling(name, vjp_scale, jvp_scale):
    return scaling_primitive(name, _SCALE, vjp_scale, jvp_scale)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_check_grads_fails_a_derivative_wrong_in_one_tiny_entry_of_a_large_output(mode):
    # Before: the error (1e-5 · |u_r v_c|) sat far below the projection's tolerance
    # (atol + rtol · |⟨u, J v⟩| ~ 1e-6 + 1e-5 · 20), so check_grads passed a wrong VJP (and JVP).
    wrong = _scaling(f"test_silent_grads_wrong_{mode}", _WRONG if mode == "rev" else _SCALE,
                     _WRONG if mode == "fwd" else _SCALE)
    x = np.random.default_rng(10).standard_normal((20, 20))
    with pytest.raises(ad.GradientCheckError, match=r"\(7, 11\)"):
        ad.check_grads(wrong, (x,), modes=(mode,))
    right = _scaling(f"test_silent_grads_right_{mode}", _SCALE, _SCALE)
    ad.check_grads(right, (x,), modes=(mode,))
    ad.check_grads(right, (x,), modes=(mode,), order=2)


def test_check_grads_per_entry_check_raises_no_false_alarm_over_a_wide_dynamic_range():
    # Outputs from 1e-9 to 1e9 (exp), exact zeros (relu), cancellation (x - sin x near 0).
    x = np.linspace(-20.0, 20.0, 400).reshape(20, 20)
    ad.check_grads(lambda t: ad.exp(t), (x,))
    ad.check_grads(lambda t: ad.relu(t) * t, (x + 0.05,))
    ad.check_grads(lambda t: t - ad.sin(t), (x * 1e-3,))
    ad.check_grads(lambda t: ad.cumprod(t * 0.1, axis=1), (np.abs(x) * 0.5 + 0.2,), order=2)

# ------------------------------------------------ svd factors at a rank-deficient matrix


_W_SVD = np.random.default_rng(11).standard_normal((5, 5))


def _svd_u_loss(a):
    u, _, vh = L.svd(a, full_matrices=False)                  # svd-loss-line
    return ad.sum(u * u * _W_SVD[:u.shape[0], :u.shape[1]]) + ad.sum(vh * vh * _W_SVD[:vh.shape[0], :vh.shape[1]])


def _rank_below_min(shape, seed=0):
    """A matrix of rank min(m, n) - 1: a product through one dimension fewer."""
    rng = np.random.default_rng(seed)
    k = min(shape) - 1
    return rng.standard_normal((shape[0], k)) @ rng.standard_normal((k, shape[1]))


def _svd_u_loss_np(a):
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return float(np.sum(u * u * _W_SVD[:u.shape[0], :u.shape[1]]) + np.sum(vh * vh * _W_SVD[:vh.shape[0], :vh.shape[1]]))


@pytest.mark.parametrize("shape", [(4, 3), (3, 5)], ids=["tall", "wide"])
def test_svd_factor_derivative_at_a_rank_deficient_non_square_matrix_is_refused(shape):
    # (I - u uᵀ) ḡ diag(1/s) divided by s = 2e-16: a gradient of 1.9e15 where U has none
    # (its column for s = 0 is any unit vector of a 2-dimensional complement).
    a = _rank_below_min(shape)
    line = _line_of("# svd-loss-line")
    with pytest.raises(ad.UndefinedDerivativeError, match=f"svd.*singular value.*test_silent_grads.py:{line}"):
        ad.grad(_svd_u_loss)(a)
    compiled = ad.jit(ad.grad(_svd_u_loss))
    good = np.random.default_rng(2).standard_normal(shape)
    np.testing.assert_allclose(compiled(good), central_gradient(_svd_u_loss_np, good), atol=1e-6)
    with pytest.raises(ad.UndefinedDerivativeError, match="svd"):
        compiled(a)
    # Forward mode cannot know whether U is used (svdvals runs through the same rule): the
    # tangent column of the non-unique vector (U's if tall, Vh's row if wide) is NaN, not a
    # finite number; S's tangent is exact.
    tangent = np.random.default_rng(3).standard_normal(shape)
    _, (du, ds, dvh) = ad.jvp(lambda t: tuple(L.svd(t, full_matrices=False)), (a,), (tangent,))
    undefined = du[:, -1] if shape[0] > shape[1] else dvh[-1]
    assert np.isnan(undefined).all() and np.isfinite(du[:, :-1]).all() and np.isfinite(dvh[:-1]).all()
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(ds, np.einsum("ik,ij,jk->k", u, tangent, vh.T), atol=1e-10)   # ds_k = u_kᵀ dA v_k


def test_singular_values_alone_stay_differentiable_at_a_rank_deficient_matrix():
    # Σ s² = ‖A‖_F²: gradient 2A at any rank, through svdvals (U and V unused).
    for shape in [(4, 3), (3, 5)]:
        a = _rank_below_min(shape)
        np.testing.assert_allclose(ad.grad(lambda t: ad.sum(L.svdvals(t) ** 2))(a), 2 * a, atol=1e-12)
        _, d = ad.jvp(lambda t: ad.sum(L.svdvals(t) ** 2), (a,), (np.ones(shape),))
        np.testing.assert_allclose(d, 2 * np.sum(a), atol=1e-12)

# ------------------------------------------------ the 2-norm where Σ x² under- or overflows


def _hypot_norm(row) -> float:
    """The 2-norm of one slice by Python's math.hypot (exact scaling, no overflow or underflow)."""
    return math.hypot(*map(float, row))


@pytest.mark.parametrize("dtype, scale", [(np.float64, 1e-200), (np.float64, 1e200), (np.float64, 1e-160),
                                          (np.float32, 1e-25), (np.float32, 1e25)])
def test_norm_and_its_gradient_where_the_sum_of_squares_under_or_overflows(dtype, scale):
    # sqrt(Σ x²) was 0 (or inf) for entries of size 1e-200 (1e200), a normal norm, and so was
    # the gradient x / ‖x‖: 0 instead of x / ‖x‖ (numpy and PyTorch compute the value the same way).
    rng = np.random.default_rng(3)
    rows = (rng.uniform(0.5, 2.0, (3, 4)) * scale).astype(dtype)
    norms = np.array([_hypot_norm(r) for r in rows])
    rtol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(ad.norm(ad.Tensor(rows), axis=1).value, norms, rtol=rtol)
    np.testing.assert_allclose(ad.jit(lambda t: ad.norm(t, axis=1))(rows), norms, rtol=rtol)
    expected = rows.astype(np.float64) / norms[:, None]   # ∂‖x‖/∂x = x / ‖x‖, each row
    for g in (ad.grad(lambda t: ad.norm(t, axis=1).sum())(rows),
              ad.jit(ad.grad(lambda t: ad.norm(t, axis=1).sum()))(rows)):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, expected, rtol=1e-5 if dtype == np.float32 else 1e-13)
    _, tangent = ad.jvp(lambda t: ad.norm(t, axis=1), (rows,), (np.ones_like(rows),))
    np.testing.assert_allclose(tangent, expected.sum(axis=1), rtol=1e-5 if dtype == np.float32 else 1e-13)


def test_norm_keeps_numpys_value_elsewhere_and_zero_inf_nan_slices():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 7))
    # Not bit for bit: np.linalg.norm of the whole array is sqrt(dot(x, x)), whose order of
    # addition is the BLAS kernel's (one ulp apart on an AMD EPYC and under
    # OPENBLAS_CORETYPE=Haswell); two orders of a sum of squares differ by at most
    # (n - 1)·eps relative, and the square root halves that.
    np.testing.assert_allclose(ad.norm(ad.Tensor(x), axis=1).value, np.linalg.norm(x, axis=1),
                               rtol=helpers.reordered_sum_rtol(x.shape[1]), atol=0)
    np.testing.assert_allclose(ad.norm(ad.Tensor(x)).value, np.linalg.norm(x),
                               rtol=helpers.reordered_sum_rtol(x.size), atol=0)
    mixed = np.array([[1e-200, 1e-200], [3.0, 4.0], [0.0, 0.0], [np.inf, 1.0], [np.nan, 1e-200]])
    got = ad.norm(ad.Tensor(mixed), axis=1, keepdims=True).value
    assert got.shape == (5, 1)
    np.testing.assert_array_equal(got[1:4, 0], [5.0, 0.0, np.inf])
    assert np.isnan(got[4, 0]) and got[0, 0] == pytest.approx(math.sqrt(2) * 1e-200, rel=1e-15)
    # Frobenius norm of a tiny matrix, through ad.linalg.norm: gradient A / ‖A‖_F.
    a = np.full((2, 2), 1e-200)
    np.testing.assert_allclose(ad.grad(lambda t: ad.linalg.norm(t))(a), np.full((2, 2), 0.5), rtol=1e-14)
