"""Silent wrong results found by red-teaming numpy.linalg, special functions and rarer numpy calls.

Each test compares against numpy itself or central finite differences in
float64, never against the code under test.
"""

import numpy as np
import pytest

import autograd_dag as ad
from tests.helpers import central_gradient


def test_norms_of_integer_entries_are_computed_in_float64_as_numpy_does():
    # |x| and its sums in int8 wrap: |-128| is -128, so the 1-norm of [-128, 5, 100] came back -23.
    v = np.array([-128, 5, 100], dtype=np.int8)
    m = np.array([[100, 27], [-128, 100]], dtype=np.int8)
    big = np.array([10**7, 3], dtype=np.int64)      # 10**21 overflows int64 in x**3
    cases = [(v, o, None) for o in (None, 1, 2, 3, 0.5, -1, np.inf, -np.inf, 0)]
    cases += [(m, o, None) for o in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)]
    cases += [(m, 1, 0), (m, 3, 1), (big, 3, None), (v > 0, 1, None)]
    for x, o, axis in cases:
        ours = np.linalg.norm(ad.Tensor(x), o, axis)
        theirs = np.linalg.norm(x, o, axis)
        assert ours.dtype == theirs.dtype, (x.dtype, o)
        np.testing.assert_allclose(ours.value, theirs, rtol=1e-12, err_msg=f"{x.dtype} ord={o}")
    for o in (1, -1, np.inf, -np.inf, "fro"):
        np.testing.assert_allclose(np.linalg.cond(ad.Tensor(m), o).value, np.linalg.cond(m, o), rtol=1e-12)
    np.testing.assert_allclose(ad.norm(ad.Tensor(v), 1).value, 233.0)
    np.testing.assert_allclose(np.linalg.vector_norm(ad.Tensor(v), ord=np.inf).value, 128.0)
    np.testing.assert_allclose(np.linalg.matrix_norm(ad.Tensor(m), ord=1).value, np.linalg.matrix_norm(m, ord=1))


def test_gradient_of_integer_samples_is_computed_in_float64_as_numpy_does():
    # The differences were taken in the samples' integer type and wrapped: np.gradient of
    # uint8 [200, 100, 3] gave [156, 29.5, 159], numpy [-100, -98.5, -97].
    for f, kw in [(np.array([200, 100, 3], dtype=np.uint8), {}),
                  (np.array([100, -100, 100, 90], dtype=np.int8), {}),
                  (np.array([100, -100, 100, 90], dtype=np.int8), {"edge_order": 2}),
                  (np.array([[100, 27], [-128, 100]], dtype=np.int8), {"axis": 0}),
                  (np.array([[100, 27, 3], [-128, 100, 4]], dtype=np.int16) * 300, {})]:
        ours, theirs = np.gradient(ad.Tensor(f), **kw), np.gradient(f, **kw)
        for o, t in zip(ours if isinstance(ours, (list, tuple)) else [ours],
                        theirs if isinstance(theirs, (list, tuple)) else [theirs]):
            assert o.dtype == t.dtype
            np.testing.assert_array_equal(o.value, t)




def test_logsumexp_of_an_all_minus_inf_slice_has_gradient_zero_not_nan():
    # lse of an all -inf slice is -inf and stays -inf under any finite move of its entries, so
    # its derivative is 0. The rule's exp(x - lse) gave exp(-inf + inf) = NaN there, and
    # 0 * NaN poisoned the gradient even of a loss that masks that row out (a padded row).
    from scipy.special import logsumexp as sp_lse
    x = np.random.default_rng(0).normal(size=(3, 4))
    x[0] = -np.inf
    x[1, 2] = -np.inf
    w = np.array([0.0, 1.5, -0.7])                   # the all -inf row is masked out of the loss

    def loss_np(a):
        out = sp_lse(a, axis=1)
        return float(np.sum(np.where(w != 0, out, 0.0) * w))

    def loss(a):
        return ad.sum(ad.where(w != 0, ad.logsumexp(a, axis=1), 0.0) * w)

    expected = central_gradient(loss_np, x)
    with np.errstate(invalid="ignore"):
        for g in [ad.grad(loss)(x), ad.jit(ad.grad(loss))(x), ad.grad_program(ad.trace(loss, x))(x)]:
            np.testing.assert_allclose(np.asarray(g), expected, atol=1e-6)
        # keepdims, gamma, and forward mode: the tangent of the -inf row is 0 too.
        g = ad.grad(lambda a: ad.sum(ad.logsumexp(a, axis=(1,), keepdims=True, gamma=0.5)[1:]))(x)
        assert np.all(g[0] == 0) and np.all(np.isfinite(g))
        _, t = ad.jvp(lambda a: ad.logsumexp(a, axis=1), (x,), (np.ones_like(x),))
        np.testing.assert_allclose(t, [0.0, 1.0, 1.0])
        # logaddexp(-inf, -inf) likewise.
        gx, gy = ad.grad(lambda a, b: ad.sum(ad.logaddexp(a, b)), argnums=(0, 1))(
            np.array([-np.inf, -np.inf, 1.0]), np.array([-np.inf, 0.0, -np.inf]))
        np.testing.assert_array_equal(gx, [0.0, 0.0, 1.0])
        np.testing.assert_array_equal(gy, [0.0, 1.0, 0.0])


def test_prod_gradient_is_exact_when_the_product_underflows_or_overflows():
    # The eager sweep divided the product by each entry: a product underflowed to 0 gave
    # gradient 0 (true 5e-301), one overflowed to inf gave inf for every entry (true 1 for
    # the first two); jit, which records the division-free rule, was right: two routes disagreed.
    for x in [np.array([1e-300, 1e-300, 0.5]), np.array([1e200, 1e200, 1e-200]),
              np.array([[1e-300, 2.0], [1e-300, 3.0]])]:
        with np.errstate(over="ignore", under="ignore"):
            expected = np.array([np.prod(np.delete(x.ravel(), i)) for i in range(x.size)]).reshape(x.shape)
            for g in [ad.grad(ad.prod)(x), ad.jit(ad.grad(ad.prod))(x)]:
                np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-12)
    x = np.array([[1e-300, 2.0], [1e-300, 3.0]])
    np.testing.assert_allclose(ad.grad(lambda a: ad.sum(ad.prod(a, axis=0)))(x), [[1e-300, 3.0], [1e-300, 2.0]])


def test_lstsq_rank_and_residuals_follow_the_data_under_jit_and_vmap():
    # lstsq read a's numbers for the rank when recorded: jit traced on a full-rank a kept rank 2
    # and returned residuals for a rank-1 a (numpy: none), and traced on the rank-1 a it
    # returned no residuals for a full-rank one. The rank is now computed by recorded
    # operations; where numpy returns no residuals (rank-deficient a), a recorded call gives NaN.
    rng = np.random.default_rng(0)
    full = rng.normal(size=(4, 2))
    deficient = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0], [1.0, 2.0]])
    b = rng.normal(size=4)

    def check(ours, a, bb, rcond=None):
        x, res, rank, s = np.linalg.lstsq(a, bb, rcond=rcond)
        np.testing.assert_allclose(ours[0], x, atol=1e-12)
        assert int(ours[2]) == rank
        np.testing.assert_allclose(ours[3], s, atol=1e-12)
        if rank == a.shape[1]:
            np.testing.assert_allclose(ours[1], res, rtol=1e-10)
        else:
            assert np.all(np.isnan(ours[1])) or np.size(ours[1]) == 0

    for order in [(full, deficient), (deficient, full)]:
        f = ad.jit(lambda a, bb: np.linalg.lstsq(a, bb))
        for a in order + order:
            check([np.asarray(o) for o in f(a, b)], a, b)
    batched = ad.vmap(lambda a, bb: np.linalg.lstsq(a, bb), in_axes=(0, None))(np.stack([full, deficient]), b)
    for i, a in enumerate([full, deficient]):
        check([np.asarray(o)[i] for o in batched], a, b)
    # A matrix b, an explicit rcond, and the eager call (numpy's result exactly).
    bm = rng.normal(size=(4, 3))
    g = ad.jit(lambda a, bb: np.linalg.lstsq(a, bb, rcond=1e-3))
    for a in [deficient, full, deficient + 1e-6 * full]:
        check([np.asarray(o) for o in g(a, bm)], a, bm, rcond=1e-3)
    eager = np.linalg.lstsq(ad.Tensor(deficient), ad.Tensor(b))
    assert eager[1].shape == (0,) and eager[2] == 1


def test_linalg_cross_and_multi_dot_refuse_what_numpy_refuses():
    # np.linalg.cross takes 3-vectors only (np.cross also takes 2-vectors): on 2-vectors it
    # returned np.cross's z component. multi_dot's middle arrays must be matrices: a vector
    # there gave a vector instead of numpy's error.
    v, m = np.array([1.0, 2.0]), np.array([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError):
        np.linalg.cross(v, v)
    with pytest.raises(ad.ShapeError, match="3"):
        np.linalg.cross(ad.Tensor(v), ad.Tensor(v))
    with pytest.raises(ad.ShapeError, match="3"):
        np.linalg.cross(ad.Tensor(np.ones((2, 3))), ad.Tensor(np.ones((2, 2))))
    u = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.linalg.cross(ad.Tensor(u), ad.Tensor(u[::-1].copy())).value,
                               np.linalg.cross(u, u[::-1]))
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.multi_dot([m, v, m])
    with pytest.raises(ad.ShapeError, match="multi_dot"):
        np.linalg.multi_dot([ad.Tensor(m), ad.Tensor(v), ad.Tensor(m)])
    with pytest.raises(ad.ShapeError, match="multi_dot"):
        np.linalg.multi_dot([ad.Tensor(np.ones((2, 2, 2))), ad.Tensor(m)])
    np.testing.assert_allclose(np.linalg.multi_dot([ad.Tensor(v), ad.Tensor(m), ad.Tensor(m), ad.Tensor(v)]).value,
                               np.linalg.multi_dot([v, m, m, v]))


def test_p_norm_of_a_zero_vector_has_gradient_zero_like_the_2_norm():
    # ord=3 or 1.5 at x = 0: (Σ|x|^p)^(1/p) differentiated as ∞ · 0 gave NaN, where the 2-, 1- and
    # ∞-norms give 0 (a subgradient). Zero weights at initialisation then made every gradient NaN.
    for p in (3, 1.5, 4.0):
        for x in [np.zeros(3), np.zeros((2, 3))]:
            axis = -1 if x.ndim == 2 else None
            g = ad.grad(lambda t: ad.sum(np.linalg.norm(t, p, axis=axis)))(x)
            np.testing.assert_array_equal(g, np.zeros_like(x))
            _, t = ad.jvp(lambda t: np.linalg.norm(t, p, axis=axis), (x,), (np.ones_like(x),))
            assert np.all(np.isfinite(t))
        # Elsewhere unchanged: against central differences, with one slice at zero.
        x = np.array([[0.0, 0.0, 0.0], [0.3, -1.2, 0.5]])
        f = lambda a: np.sum(np.linalg.norm(a, p, axis=1) * np.array([1.0, 2.0]))
        g = ad.grad(lambda t: ad.sum(np.linalg.norm(t, p, axis=1) * np.array([1.0, 2.0])))(x)
        fd = central_gradient(f, x)
        np.testing.assert_allclose(g[1], fd[1], rtol=1e-6)
        np.testing.assert_array_equal(g[0], 0.0)
        assert np.linalg.norm(ad.Tensor(x.astype(np.float32)), p, axis=1).dtype == np.float32
