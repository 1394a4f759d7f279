"""ad.linalg and the joining / rearranging functions: what the primitive table does not pin.

Library errors for bad input (singular, not positive definite, wrong shapes),
the documented conventions (lower-triangle reading, degenerate spectra,
full_matrices), numpy dispatch, and derivatives worked out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad

L = ad.linalg
A = np.array([[2.0, 1.0], [1.0, 3.0]])
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])

# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("call,fragments", [
    (lambda: L.solve(SINGULAR, np.ones(2)), ("solve", "invertible", "(2, 2)")),
    (lambda: L.inv(SINGULAR), ("inv", "invertible", "(2, 2)")),
    (lambda: L.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]])), ("cholesky", "positive-definite")),
    (lambda: L.inv(np.ones((2, 3))), ("inv", "square", "(2, 3)")),
    (lambda: L.det(np.ones(3)), ("det", "at least 2 dimensions", "(3,)")),
    (lambda: L.solve(A, np.ones(3)), ("solve", "(2,)", "(3,)")),
    (lambda: L.solve(np.ones((2, 2, 2)), np.ones((3, 2, 1))), ("solve", "broadcast")),
    (lambda: L.eigh(np.ones((2, 3))), ("eigh", "square")),
    (lambda: L.eigh(A, UPLO="X"), ("eigh", "UPLO")),
    (lambda: L.qr(np.ones((3, 2)), mode="complete"), ("qr", "complete")),
    (lambda: L.norm(np.ones(3), ord="fro"), ("norm", "numeric ord")),
    (lambda: L.norm(np.ones((2, 2)), ord=3), ("norm", "ord")),
    (lambda: L.norm(np.ones((2, 2, 2)), ord=2), ("norm", "a vector or a matrix")),
    (lambda: L.matrix_power(A, 1.5), ("matrix_power", "integer")),
    (lambda: ad.einsum(np.ones(2), [60]), ("einsum", "[0, 52)")),
    (lambda: ad.diag(np.ones((2, 2, 2))), ("diag", "1-D or 2-D")),
    (lambda: ad.inner(np.ones(2), np.ones(3)), ("inner", "(2,)", "(3,)")),
    (lambda: ad.cross(np.ones(4), np.ones(3)), ("cross", "2 or 3")),
    (lambda: ad.hstack([]), ("hstack", "at least one array")),
    (lambda: ad.vstack(ad.Tensor(2.0)), ("vstack", "0-d")),
    (lambda: ad.select([np.ones(2)], [np.ones(2)]), ("select", "boolean")),
    (lambda: ad.rot90(np.ones((2, 2)), axes=(0, 0)), ("rot90", "different")),
])
def test_bad_input_is_a_library_shape_error(call, fragments):
    with pytest.raises(ad.ShapeError) as err:
        call()
    for fragment in fragments:
        assert fragment in str(err.value), (fragment, str(err.value))


def test_singular_solve_inside_a_recorded_function_names_the_line():
    with pytest.raises(ad.ShapeError, match=r"test_linalg\.py"):
        ad.grad(lambda a: ad.sum(L.solve(a, np.ones(2))))(SINGULAR)


def test_full_matrices_svd_of_a_rectangle_differentiates_what_the_thin_svd_has():
    # numpy's default full_matrices=True adds rows to a wide matrix's vh (columns to a tall one's
    # u): any orthonormal basis of a complement, not a function of x. A loss using S or the first
    # min(m, n) rows is differentiated as with the thin SVD, as torch.linalg.svd does (before: refused
    # whatever the loss used); one using the extra rows is refused when its VJP runs.
    x = np.arange(6.0).reshape(2, 3) + np.eye(2, 3)
    u, s, vh = L.svd(ad.Tensor(x))                      # numpy's default: value fine
    assert u.shape == (2, 2) and vh.shape == (3, 3)
    with pytest.raises(ad.UndefinedDerivativeError, match="vh extra rows"):
        ad.grad(lambda a: ad.sum(L.svd(a)[2]))(x)
    u, _, vh = np.linalg.svd(x, full_matrices=False)
    g = ad.grad(lambda a: ad.sum(L.svd(a)[1]))(x)
    np.testing.assert_allclose(g, u @ vh, rtol=1e-12)   # d Σ s_i / dA = U Vᵀ
    w = np.array([[0.3, -1.0, 2.0], [1.5, 0.2, -0.7]])
    full = ad.grad(lambda a: ad.sum(w * L.svd(a)[2][:2] ** 2))(x)
    thin = ad.grad(lambda a: ad.sum(w * L.svd(a, full_matrices=False)[2] ** 2))(x)
    np.testing.assert_allclose(full, thin, rtol=1e-12, atol=1e-14)  # the same formula on the same factors
    torch = pytest.importorskip("torch")
    t = torch.tensor(x, requires_grad=True)
    (torch.tensor(w) * torch.linalg.svd(t)[2][:2] ** 2).sum().backward()
    np.testing.assert_allclose(full, t.grad.numpy(), rtol=1e-10, atol=1e-12)  # LAPACK vs MKL: ulps apart

# ------------------------------------------------------------- conventions


def test_cholesky_and_eigh_read_the_lower_triangle():
    # Changing the strict upper triangle changes nothing, so its derivative is zero;
    # the lower triangle carries both symmetric contributions.
    upper_junk = A + np.array([[0.0, 5.0], [0.0, 0.0]])
    np.testing.assert_allclose(L.cholesky(upper_junk).value, np.linalg.cholesky(A))
    g = ad.grad(lambda a: ad.sum(L.eigh(a)[0] * np.array([1.0, 2.0])))(upper_junk)
    assert g[0, 1] == 0.0
    w, v = np.linalg.eigh(A)
    full = v @ np.diag([1.0, 2.0]) @ v.T                 # ∂(w·c)/∂S for a symmetric S
    np.testing.assert_allclose(g, [[full[0, 0], 0.0], [2 * full[1, 0], full[1, 1]]], rtol=1e-12)


def _central_differences(f, x, eps=1e-6):
    """∂ f(x) / ∂x by central differences on numpy's own function (f returns a number)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        g[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return g


def test_upper_cholesky_and_hermitian_pinv_read_the_triangle_numpy_reads():
    # numpy's upper=True factors the upper triangle; hermitian=True reads the lower one.
    a = np.array([[4.0, 1.0, 0.5], [3.0, 5.0, 0.2], [-1.0, 2.0, 6.0]])     # not symmetric
    w = np.random.default_rng(0).standard_normal((3, 3))
    for ours, theirs in [(lambda m: L.cholesky(m, upper=True), lambda m: np.linalg.cholesky(m, upper=True)),
                         (lambda m: L.pinv(m, hermitian=True), lambda m: np.linalg.pinv(m, hermitian=True)),
                         (lambda m: np.linalg.pinv(m, hermitian=True), lambda m: np.linalg.pinv(m, hermitian=True))]:
        np.testing.assert_allclose(ours(ad.Tensor(a)).value, theirs(a), rtol=1e-12)
        g = ad.grad(lambda m: ad.sum(ours(m) * w))(a)
        np.testing.assert_allclose(g, _central_differences(lambda m: np.sum(theirs(m) * w), a), rtol=1e-6, atol=1e-8)


def test_pinv_with_an_rcond_that_drops_singular_values_has_their_derivative():
    # rcond = 0.5 keeps s₀ only; the dropped s₁, s₂ are not zero, so the rank is not
    # locally constant in the sense of the Golub–Pereyra formula: the kept singular
    # vectors turn towards the dropped ones at rates 1/(s₀² − sⱼ²).
    a = np.array([[3.0, 0.2, 0.1], [0.3, 1.0, 0.4], [0.1, -0.2, 0.8], [0.5, 0.1, 0.3], [0.0, 0.7, -0.1]])
    s = np.linalg.svd(a, compute_uv=False)
    assert s[1] < 0.5 * s[0] and s[2] > 0.1                       # (the case: one kept, two non-zero dropped)
    w = np.random.default_rng(1).standard_normal((3, 5))
    for rcond in (0.5, 1e-3):
        np.testing.assert_allclose(L.pinv(a, rcond=rcond).value, np.linalg.pinv(a, rcond=rcond), rtol=1e-12)
        g = ad.grad(lambda m: ad.sum(L.pinv(m, rcond=rcond) * w))(a)
        fd = _central_differences(lambda m: np.sum(np.linalg.pinv(m, rcond=rcond) * w), a)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
        _, t = ad.jvp(lambda m: L.pinv(m, rcond=rcond), (a,), (w.T,))
        fd_t = (np.linalg.pinv(a + 1e-6 * w.T, rcond=rcond) - np.linalg.pinv(a - 1e-6 * w.T, rcond=rcond)) / 2e-6
        np.testing.assert_allclose(t, fd_t, rtol=1e-6, atol=1e-8)
    # A rank-deficient matrix: the dropped values are zero, rcond or not.
    r = np.outer([1.0, 2.0, 0.5], [1.0, -1.0])
    for rcond in (None, 0.1):
        g = ad.grad(lambda m: ad.sum(L.pinv(m, rcond=rcond) * w[:2, :3]))(r)
        assert np.all(np.isfinite(g))
    np.testing.assert_allclose(ad.grad(lambda m: ad.sum(L.pinv(m, rcond=0.1) * w[:2, :3]))(r),
                               ad.grad(lambda m: ad.sum(L.pinv(m) * w[:2, :3]))(r), rtol=1e-10, atol=1e-12)


def test_eigh_at_a_degenerate_eigenvalue_is_exact_for_functions_of_the_eigenvalues():
    # sum of eigenvalues = trace: gradient I even where all eigenvalues coincide.
    eye = np.eye(3) * 2.0
    np.testing.assert_allclose(ad.grad(lambda a: ad.sum(L.eigh(a)[0]))(eye), np.eye(3), atol=1e-12)
    _, t = ad.jvp(lambda a: L.eigh(a)[0], (eye,), (np.diag([1.0, 2.0, 3.0]),))
    assert np.all(np.isfinite(t))
    np.testing.assert_allclose(np.sort(t), [1.0, 2.0, 3.0], atol=1e-12)


def test_nuclear_norm_of_the_identity_has_gradient_identity():
    # Repeated singular values: the singular-value derivative U Vᵀ is still exact.
    np.testing.assert_allclose(ad.grad(lambda a: L.norm(a, "nuc"))(np.eye(3)), np.eye(3), atol=1e-12)


def test_det_and_slogdet_gradients_by_hand():
    inv_t = np.linalg.inv(A).T
    np.testing.assert_allclose(ad.grad(L.det)(A), np.linalg.det(A) * inv_t, rtol=1e-12)
    np.testing.assert_allclose(ad.grad(lambda a: L.slogdet(a)[1])(A), inv_t, rtol=1e-12)
    np.testing.assert_array_equal(ad.grad(lambda a: L.slogdet(a)[0])(A), np.zeros((2, 2)))


def test_matrix_power_zero_is_the_identity_with_zero_derivative():
    np.testing.assert_array_equal(L.matrix_power(ad.Tensor(A), 0).value, np.eye(2))
    np.testing.assert_array_equal(ad.grad(lambda a: ad.sum(L.matrix_power(a, 0)))(A), np.zeros((2, 2)))


def test_slogdet_sign_stays_right_when_a_traced_program_is_rerun():
    # The sign is a recorded node, not a constant baked into the program.
    program = ad.trace(lambda a: L.slogdet(a)[0], A)
    assert float(program(np.array([[0.0, 1.0], [1.0, 0.0]]))) == -1.0

# ---------------------------------------------------------- numpy dispatch


@pytest.mark.parametrize("call", [
    lambda a: np.linalg.solve(a, np.ones(2)), lambda a: np.linalg.inv(a), lambda a: np.linalg.det(a),
    lambda a: np.linalg.slogdet(a)[1], lambda a: np.linalg.cholesky(a), lambda a: np.linalg.eigh(a)[0],
    lambda a: np.linalg.svd(a)[1], lambda a: np.linalg.qr(a)[1], lambda a: np.linalg.pinv(a),
    lambda a: np.linalg.norm(a, "nuc"), lambda a: np.linalg.matrix_power(a, 3), lambda a: np.linalg.trace(a),
    lambda a: np.hstack([a, a]), lambda a: np.vstack([a, a]), lambda a: np.column_stack([a, a]),
    lambda a: np.append(a, a), lambda a: np.atleast_3d(a), lambda a: np.ravel(a), lambda a: np.diag(a),
    lambda a: np.kron(a, a), lambda a: np.inner(a, a), lambda a: np.cross(a, a[::-1]),
    lambda a: np.rot90(a), lambda a: np.flipud(a), lambda a: np.fliplr(a),
    lambda a: np.select([a.value > 1.5], [a]), lambda a: np.partition(a, 1), lambda a: np.einsum(a, [0, 0]),
], ids=["solve", "inv", "det", "slogdet", "cholesky", "eigh", "svd", "qr", "pinv", "norm", "matrix_power",
        "linalg.trace", "hstack", "vstack", "column_stack", "append", "atleast_3d", "ravel", "diag", "kron",
        "inner", "cross", "rot90", "flipud", "fliplr", "select", "partition", "einsum-interleaved"])
def test_numpy_functions_on_tensors_record_and_differentiate(call):
    out = call(ad.Tensor(A))
    assert isinstance(out, ad.Tensor) and out.prim is not None
    np.testing.assert_allclose(out.value, call(ad.Tensor(A)).value)
    ad.check_grads(lambda a: ad.sum(call(a) * call(a)), (A,), modes=("rev",))


def test_stacking_an_array_stacks_its_rows_as_numpy_does():
    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(ad.hstack(ad.Tensor(x)).value, np.hstack(x))
    np.testing.assert_array_equal(ad.vstack(ad.Tensor(x)).value, np.vstack(x))
    np.testing.assert_array_equal(ad.column_stack(ad.Tensor(x[0])).value, np.column_stack(x[0]))
    # d/dx of sum(w * hstack(x)) is w, reshaped as x.
    w = np.arange(6.0) + 1
    np.testing.assert_array_equal(ad.grad(lambda t: ad.sum(ad.hstack(t) * w))(x), w.reshape(3, 2))


def test_append_of_a_list_of_tensors_keeps_their_derivatives():
    g = ad.grad(lambda a, b: ad.sum(ad.append([a, a * 2.0], b) * np.array([1.0, 10.0, 100.0])),
                argnums=(0, 1))(1.5, 2.0)
    assert float(g[0]) == 21.0 and float(g[1]) == 100.0


def test_decompositions_trace_into_programs_that_rerun_and_differentiate():
    rng = np.random.default_rng(0)
    weights = np.arange(9.0).reshape(3, 3)

    def f(a):
        u = L.svd(a, full_matrices=False)[0]
        return (ad.sum(u ** 2 * weights) + L.slogdet(a)[1] + ad.sum(L.eigh(a)[1][0] ** 2)
                + ad.sum(L.qr(a)[1] ** 2))
    a, b = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    program = ad.trace(f, a)
    assert {"svd", "logabsdet", "eigh", "qr"} <= set(program.op_counts())
    np.testing.assert_allclose(program(b), f(ad.Tensor(b)).value, rtol=1e-12)
    np.testing.assert_allclose(ad.jit(ad.grad(f))(b), ad.grad(f)(b), rtol=1e-10)


def test_norm_of_a_list_of_tensors():
    g = ad.grad(lambda x, y: L.norm([x, y]), argnums=(0, 1))(3.0, 4.0)
    np.testing.assert_allclose([float(g[0]), float(g[1])], [0.6, 0.8], rtol=1e-12)


def test_split_family_errors_and_gradient_spacing_errors():
    with pytest.raises(ad.ShapeError, match="divides the axis length 7"):
        ad.hsplit(ad.Tensor(np.ones(7)), 3)
    with pytest.raises(ad.ShapeError, match="at least 2 dimensions"):
        ad.vsplit(ad.Tensor(np.ones(4)), 2)
    with pytest.raises(ad.ShapeError, match="coordinate arrays"):
        np.gradient(ad.Tensor(np.ones(4)), np.arange(4.0))
    with pytest.raises(ad.ShapeError, match="at least 3 samples"):
        np.gradient(ad.Tensor(np.ones(2)), edge_order=2)
    # np.array_split of a Tensor gives Tensors whose derivatives reach the input.
    g = ad.grad(lambda x: ad.sum(np.array_split(x, 3)[1] * 5.0))(np.ones(7))
    np.testing.assert_array_equal(g, [0, 0, 0, 5, 5, 0, 0])


# ------------------------------------------------------------------ layouts of a stack's product


def test_a_stack_of_small_transposed_matrices_is_multiplied_c_ordered_and_gives_numpys_product():
    from autograd_dag.primitives.linalg.products import _matmul_impl, _transposed_stack
    rng = np.random.default_rng(0)
    heads = lambda: rng.standard_normal((2, 5, 3, 4)).swapaxes(1, 2)   # (B, H, T, dh) split by a view
    q, k = heads(), heads()
    kt = k.swapaxes(-1, -2)                                             # attention's Kᵀ: a swapaxes view
    assert _transposed_stack(kt)
    # Not for row-major stacks, one matrix, longer contractions, larger matrices, integers or complex.
    assert not _transposed_stack(np.ascontiguousarray(kt))
    assert not _transposed_stack(np.ones((4, 3)).T)
    assert not _transposed_stack(np.ones((2, 8, 128)).swapaxes(-1, -2))
    assert not _transposed_stack(np.ones((2, 128, 64)).swapaxes(-1, -2))
    assert not _transposed_stack(np.ones((2, 4, 3), dtype=np.int64).swapaxes(-1, -2))
    assert not _transposed_stack(np.ones((2, 4, 3), dtype=np.complex128).swapaxes(-1, -2))
    assert _transposed_stack(np.ones((2, 4, 3), dtype=np.float32).swapaxes(-1, -2))
    # BLAS may order a transposed operand's sums differently from a C-ordered one's: rounding only.
    np.testing.assert_allclose(_matmul_impl(q, kt), np.matmul(q, kt), rtol=1e-13, atol=1e-13)
    # Through the primitive, with its derivative: Q Kᵀ and the cotangents (ct @ K, Qᵀ ct).
    ct = rng.standard_normal((2, 3, 5, 5))
    dq, dk = ad.grad(lambda a, b: ad.sum(ad.matmul(a, ad.swapaxes(b, -1, -2)) * ct), argnums=(0, 1))(q, k)
    np.testing.assert_allclose(dq, ct @ k, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(dk, ct.swapaxes(-1, -2) @ q, rtol=1e-13, atol=1e-13)
