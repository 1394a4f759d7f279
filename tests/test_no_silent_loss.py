"""No silently wrong gradient: aliasing, perturbation confusion, numpy conversion, complex inputs.

Each expected derivative is worked out by hand in the test (or by central
differences), never by the code under test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_dag as ad

X = np.array([0.3, -0.7])

# ------------------------------------------------- one Tensor, two slots


def _block(a, b):
    return ad.tanh(a * b) + a


def _block_grad(x):
    # d/dx [tanh(x·x) + x] = 2x·(1 − tanh²(x²)) + 1
    return 2 * x * (1 - np.tanh(x * x) ** 2) + 1


def _block_hessian_diag(x):
    # d/dx of the above: 2(1 − t²) − 8x²·t(1 − t²), t = tanh(x²)
    t = np.tanh(x * x)
    return 2 * (1 - t ** 2) - 8 * x * x * t * (1 - t ** 2)


def _aliased_loss(x):
    return ad.sum(ad.checkpoint(_block)(x, x))


@pytest.mark.parametrize("route", ["grad", "jit_grad", "grad_program", "backward_create_graph"])
def test_checkpoint_with_one_tensor_in_two_slots(route):
    if route == "grad":
        g = ad.grad(_aliased_loss)(X)
    elif route == "jit_grad":
        g = ad.jit(ad.grad(_aliased_loss))(X)
    elif route == "grad_program":
        g = ad.grad_program(ad.trace(_aliased_loss, X))(X)
    else:
        x = ad.Tensor(X, requires_grad=True)
        _aliased_loss(x).backward(create_graph=True)
        g = x.grad.value
    np.testing.assert_allclose(g, _block_grad(X), rtol=1e-12)


def test_checkpoint_aliased_second_order_routes():
    np.testing.assert_allclose(ad.hvp(_aliased_loss, X, np.ones(2)), _block_hessian_diag(X), rtol=1e-12)
    np.testing.assert_allclose(ad.hessian(_aliased_loss)(X), np.diag(_block_hessian_diag(X)), rtol=1e-12)
    np.testing.assert_allclose(ad.jacobian(ad.grad(_aliased_loss))(X), np.diag(_block_hessian_diag(X)),
                               rtol=1e-12)
    x = ad.Tensor(X, requires_grad=True)
    _aliased_loss(x).backward(create_graph=True)
    g = x.grad
    x.grad = None
    ad.sum(g).backward()
    np.testing.assert_allclose(x.grad.value, _block_hessian_diag(X), rtol=1e-12)


def test_vjp_and_jvp_with_one_tensor_in_two_slots():
    # f(a, b) = a·b: ∂f/∂a = b, ∂f/∂b = a, each slot separately.
    def through_vjp(x):
        _, f_vjp = ad.vjp(lambda a, b: a * b, x, x)
        da, db = f_vjp(np.ones(2))
        return ad.sum(da * 2.0 + db)          # = Σ 2x + x = 3 Σ x
    np.testing.assert_allclose(ad.grad(through_vjp)(X), [3.0, 3.0])

    def through_jvp(x):
        _, t = ad.jvp(lambda a, b: a * b, (x, x), (np.ones(2), np.zeros(2)))
        return ad.sum(t)                      # tangent along a only: b = x
    np.testing.assert_allclose(ad.grad(through_jvp)(X), [1.0, 1.0])

    def through_grad(x):
        return ad.sum(ad.grad(lambda a, b: ad.sum(a * b * b))(x, x))   # ∂/∂a = b², then Σ x²
    np.testing.assert_allclose(ad.grad(through_grad)(X), 2 * X)


def test_no_perturbation_confusion():
    # d/dx [x · d/dy (x·y)] = d/dx x² = 2x: the inner derivative is with respect to y alone,
    # although y receives x itself and the closure reads x too (Siskind & Pearlmutter's example).
    f = lambda x: x * ad.grad(lambda y: x * y)(x)        # noqa: E731
    assert float(ad.grad(f)(3.0)) == 6.0
    g = lambda x: x * ad.jvp(lambda y: x * y, (x,), (1.0,))[1]   # noqa: E731
    assert float(ad.grad(g)(3.0)) == 6.0
    assert float(ad.jit(ad.grad(f))(np.float64(3.0))) == 6.0


def test_user_primitive_with_one_tensor_in_two_slots():
    mul = ad.primitive("mul_two_slots_test", lambda a, b: a * b,
                       vjp=lambda ct, out, a, b: (ct * b, ct * a),
                       jvp=lambda t, out, a, b: (0.0 if t[0] is None else t[0] * b)
                       + (0.0 if t[1] is None else a * t[1]), replace=True)
    f = lambda x: ad.sum(mul(ad.tanh(x), ad.tanh(x)))    # noqa: E731
    # d/dx tanh²(x) = 2 tanh(x)(1 − tanh²(x))
    expected = 2 * np.tanh(X) * (1 - np.tanh(X) ** 2)
    np.testing.assert_allclose(ad.grad(f)(X), expected, rtol=1e-12)
    np.testing.assert_allclose(ad.jit(ad.grad(f))(X), expected, rtol=1e-12)
    ad.check_grads(f, (X,), order=2)


def test_per_slot_input_nodes_do_not_appear_in_programs():
    prog = ad.trace(ad.grad(lambda x: ad.sum(x * x)), X)
    assert "identity" not in prog.op_counts()

# ---------------------------------------------- numpy conversion guard

V = np.array([0.3, -1.2, 0.7, 2.0])
M = np.array([[0.5, -0.2], [0.1, 0.9]])

# (label, function of a Tensor or array returning a scalar Tensor, input)
NUMPY_CALLS = [
    ("cumsum", lambda x: ad.sum(x * np.cumsum(x)), V),
    ("dot", lambda x: ad.sum(x) * np.dot(x, x), V),
    ("sin", lambda x: ad.sum(np.sin(x)), V),
    ("cos", lambda x: ad.sum(np.cos(x) * x), V),
    ("prod", lambda x: np.prod(x) + ad.sum(x), V),
    ("sort", lambda x: ad.sum(np.sort(x) * np.arange(4.0)), V),
    ("clip", lambda x: ad.sum(np.clip(x, -1.0, 1.0) * x), V),
    ("diff", lambda x: ad.sum(np.diff(x) ** 2), V),
    ("outer", lambda x: ad.sum(np.outer(x, x) * 0.5), V),
    ("linalg.norm", lambda x: np.linalg.norm(x) * 1.0, V),
    ("linalg.det", lambda x: np.linalg.det(x) * 1.0, M),
    ("linalg.inv", lambda x: ad.sum(np.linalg.inv(x)), M),
    ("trace", lambda x: np.trace(x) * 1.0, M),
    ("asarray", lambda x: ad.sum(x * np.asarray(x)), V),
    ("array", lambda x: ad.sum(x * np.array(x)), V),
    ("add.reduce", lambda x: np.add.reduce(x) * 1.0, V),
    ("maximum.accumulate", lambda x: ad.sum(np.maximum.accumulate(x)), V),
    ("exp", lambda x: ad.sum(np.exp(x)), V),
    ("sum", lambda x: np.sum(x * x), V),
    ("mean", lambda x: np.mean(x * x, axis=0), V),
    ("concatenate", lambda x: ad.sum(np.concatenate([x, x * 2.0]) ** 2), V),
    ("stack", lambda x: ad.sum(np.stack([x, x * x])), V),
    ("where", lambda x: ad.sum(np.where(x > 0, x * x, -x)), V),
    ("reshape", lambda x: ad.sum(np.reshape(x, (2, 2)) @ np.ones(2) * x[:2]), V),
    ("transpose", lambda x: ad.sum(np.transpose(x) * x), M),
    ("einsum", lambda x: np.einsum("ij,ij->", x, x), M),
    ("tanh", lambda x: ad.sum(np.tanh(x)), V),
    ("matmul", lambda x: ad.sum(np.matmul(x, x)), M),
    # numpy's everyday functions (primitives/mathfuncs.py, numeric.py, arrays.py)
    ("tan", lambda x: ad.sum(np.tan(x * 0.5)), V),
    ("arcsin", lambda x: ad.sum(np.arcsin(x * 0.4)), V),
    ("arccos", lambda x: ad.sum(np.arccos(x * 0.4) * x), V),
    ("arctan", lambda x: ad.sum(np.arctan(x) * x), V),
    ("arctan2", lambda x: ad.sum(np.arctan2(x, x[::-1] + 3.0)), V),
    ("sinh", lambda x: ad.sum(np.sinh(x) * x), V),
    ("cosh", lambda x: ad.sum(np.cosh(x)), V),
    ("arcsinh", lambda x: ad.sum(np.arcsinh(x)), V),
    ("arccosh", lambda x: ad.sum(np.arccosh(x * x + 1.5)), V),
    ("arctanh", lambda x: ad.sum(np.arctanh(x * 0.4)), V),
    ("log1p", lambda x: ad.sum(np.log1p(x * x)), V),
    ("expm1", lambda x: ad.sum(np.expm1(x)), V),
    ("log2", lambda x: ad.sum(np.log2(x * x)), V),
    ("log10", lambda x: ad.sum(np.log10(x * x)), V),
    ("exp2", lambda x: ad.sum(np.exp2(x)), V),
    ("square", lambda x: ad.sum(np.square(x) * x), V),
    ("reciprocal", lambda x: ad.sum(np.reciprocal(x)), V),
    ("hypot", lambda x: ad.sum(np.hypot(x, 2.0)), V),
    ("logaddexp", lambda x: ad.sum(np.logaddexp(x, x * x)), V),
    ("logaddexp2", lambda x: ad.sum(np.logaddexp2(x, 0.5)), V),
    ("floor", lambda x: ad.sum(np.floor(x + 0.25) * x), V),
    ("ceil", lambda x: ad.sum(np.ceil(x + 0.25) * x), V),
    ("trunc", lambda x: ad.sum(np.trunc(x + 0.25) * x), V),
    ("rint", lambda x: ad.sum(np.rint(x) * x), V),
    ("round", lambda x: ad.sum(np.round(x, 1) * x), V),
    ("around", lambda x: ad.sum(np.around(x) * x), V),
    ("fmax", lambda x: ad.sum(np.fmax(x, 0.1)), V),
    ("fmin", lambda x: ad.sum(np.fmin(x, 0.1)), V),
    ("fabs", lambda x: ad.sum(np.fabs(x)), V),
    ("deg2rad", lambda x: ad.sum(np.deg2rad(x) * x), V),
    ("rad2deg", lambda x: ad.sum(np.rad2deg(x) * x), V),
    ("radians", lambda x: ad.sum(np.radians(x) * x), V),
    ("degrees", lambda x: ad.sum(np.degrees(x) * x), V),
    ("mod", lambda x: ad.sum(np.mod(x, 0.9) * x), V),
    ("remainder_operator", lambda x: ad.sum((x % 0.9) * x + 5.5 % (x + 3.0)), V),
    ("nan_to_num", lambda x: ad.sum(np.nan_to_num(x) * x), V),
    ("real", lambda x: ad.sum(np.real(x) * x), V),
    ("imag", lambda x: ad.sum(np.imag(x) + x), V),
    ("conj", lambda x: ad.sum(np.conj(x) * x), V),
    ("std", lambda x: np.std(x) * 1.0, V),
    ("std_ddof", lambda x: ad.sum(np.std(x, axis=0, ddof=1)), M),
    ("var", lambda x: np.var(x, ddof=1) * 1.0, V),
    ("linalg.norm_fro", lambda x: np.linalg.norm(x, "fro") * 1.0, M),
    ("linalg.norm_ord1", lambda x: ad.sum(np.linalg.norm(x, 1, axis=1)), M),
    ("linalg.norm_inf", lambda x: np.linalg.norm(x, np.inf) * 1.0, V),
    ("cumprod", lambda x: ad.sum(np.cumprod(x)), V),
    ("pad", lambda x: ad.sum(np.pad(x, 1) * np.arange(6.0)), V),
    ("flip", lambda x: ad.sum(np.flip(x) * np.arange(4.0)), V),
    ("roll", lambda x: ad.sum(np.roll(x, 1) * np.arange(4.0)), V),
    ("tile", lambda x: ad.sum(np.tile(x, 2) * np.arange(8.0)), V),
    ("repeat", lambda x: ad.sum(np.repeat(x, 2) * np.arange(8.0)), V),
    ("split", lambda x: ad.sum(np.split(x, 2)[1] * x[:2]), V),
    ("diagonal", lambda x: ad.sum(np.diagonal(x) * 2.0), M),
    ("triu", lambda x: ad.sum(np.triu(x) * x), M),
    ("tril", lambda x: ad.sum(np.tril(x) * x), M),
    ("tensordot", lambda x: np.tensordot(x, x) * 1.0, M),
    ("take_along_axis", lambda x: ad.sum(np.take_along_axis(x, np.array([3, 3, 0]), 0) * x[:3]), V),
    ("zeros_like", lambda x: ad.sum(np.zeros_like(x) + x * x), V),
    ("ones_like", lambda x: ad.sum(np.ones_like(x) * x), V),
    ("full_like", lambda x: ad.sum(np.full_like(x, 2.0) * x), V),
    ("full_like-computed-fill", lambda x: ad.sum(np.full_like(x, x[0] * x[1]) * x), V),
    ("full_like-shape", lambda x: ad.sum(np.full_like(x, 2.0, shape=(2, 4)) * x), V),
    ("isfinite", lambda x: ad.sum(ad.where(np.isfinite(x), x, 0.0)), V),
    ("argsort", lambda x: ad.sum(ad.take(x, np.argsort(x)) * np.arange(4.0)), V),
    ("any_all", lambda x: ad.sum(x) * float(np.any(x > 0)) * float(np.all(x > -5)), V),
    ("linalg.solve", lambda x: ad.sum(np.linalg.solve(x, np.array([1.0, 2.0]))), M),
    ("linalg.slogdet", lambda x: np.linalg.slogdet(x)[1] * 1.0, M),
    ("linalg.cholesky", lambda x: ad.sum(np.linalg.cholesky(x @ x.T + np.eye(2))), M),
    ("linalg.eigh", lambda x: ad.sum(np.linalg.eigh(x + x.T)[0] * np.array([1.0, 3.0])), M),
    ("linalg.svd", lambda x: ad.sum(np.linalg.svd(x, compute_uv=False) * np.array([1.0, 3.0])), M),
    ("linalg.qr", lambda x: ad.sum(np.linalg.qr(x)[1] ** 2), M),
    ("linalg.pinv", lambda x: ad.sum(np.linalg.pinv(x)), M),
    ("linalg.pinv-hermitian", lambda x: ad.sum(np.linalg.pinv(x, hermitian=True) * np.arange(4.0).reshape(2, 2)), M),
    ("linalg.pinv-rcond", lambda x: ad.sum(np.linalg.pinv(np.vstack([x, x * x]), rcond=0.5) * np.arange(8.0).reshape(2, 4)),
     M),
    ("linalg.cholesky-upper", lambda x: ad.sum(np.linalg.cholesky(x @ x.T + np.eye(2) + np.triu(x, 1), upper=True)), M),
    ("linalg.norm-nuc", lambda x: np.linalg.norm(x, "nuc") * 1.0, M),
    ("linalg.matrix_power", lambda x: ad.sum(np.linalg.matrix_power(x, 3)), M),
    ("linalg.trace", lambda x: np.linalg.trace(x @ x) * 1.0, M),
    ("hstack", lambda x: ad.sum(np.hstack([x, x * x]) ** 2), V),
    ("vstack", lambda x: ad.sum(np.vstack([x, x * x]) ** 2), V),
    ("column_stack", lambda x: ad.sum(np.column_stack([x, x * x]) ** 2), V),
    ("append", lambda x: ad.sum(np.append(x, x * x) ** 2), V),
    ("atleast_2d", lambda x: ad.sum(np.atleast_2d(x) ** 2), V),
    ("ravel", lambda x: ad.sum(np.ravel(x) ** 2), M),
    ("diag", lambda x: ad.sum(np.diag(x) ** 2), V),
    ("kron", lambda x: ad.sum(np.kron(x, x) ** 2), V),
    ("inner", lambda x: np.inner(x, x * x) * 1.0, V),
    ("cross", lambda x: ad.sum(np.cross(x[:3], x[1:]) ** 2), V),
    ("rot90", lambda x: ad.sum(np.rot90(x) * np.arange(4.0).reshape(2, 2)), M),
    ("flipud", lambda x: ad.sum(np.flipud(x) * np.arange(4.0)), V),
    ("fliplr", lambda x: ad.sum(np.fliplr(x) * np.arange(4.0).reshape(2, 2)), M),
    ("select", lambda x: ad.sum(np.select([x.value > 0], [x * x], default=x)), V),
    ("partition", lambda x: ad.sum(np.partition(x, 2) * np.arange(4.0)), V),
    ("einsum-diagonal", lambda x: np.einsum("ii", x @ x) * 1.0, M),
]


def _numerical_gradient(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        with ad.no_grad():
            g[i] = (_number(f(ad.Tensor(xp))) - _number(f(ad.Tensor(xm)))) / (2 * eps)
    return g


def _number(out) -> float:
    # Without recording, a numpy function with no rule returns a plain number.
    return float(out.value if isinstance(out, ad.Tensor) else out)


@pytest.mark.parametrize("label,f,x", NUMPY_CALLS, ids=[c[0] for c in NUMPY_CALLS])
def test_numpy_call_gives_the_right_gradient_or_raises(label, f, x):
    expected = _numerical_gradient(f, x)
    try:
        got = ad.grad(f)(x)
    except ad.NotDifferentiableError as exc:
        message = str(exc)
        assert "np." in message and "ad.primitive" in message, message
        return
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_conversion_names_the_numpy_function():
    with pytest.raises(ad.NotDifferentiableError, match=r"np\.trapezoid has no rule"):
        ad.grad(lambda x: ad.sum(x * np.trapezoid(x)))(V)
    with pytest.raises(ad.NotDifferentiableError, match="t.value or t.detach()"):
        ad.grad(lambda x: ad.sum(x * np.asarray(x)))(V)


def test_conversion_refused_while_tracing_and_for_parameters():
    with pytest.raises(ad.NotDifferentiableError):
        ad.trace(lambda x: ad.sum(x * np.asarray(x)), V)
    w = ad.Tensor(V, requires_grad=True)
    with pytest.raises(ad.NotDifferentiableError):
        np.asarray(w * 2.0)
    with pytest.raises(ad.NotDifferentiableError):
        w.numpy()


def test_conversion_allowed_where_no_derivative_is_lost():
    w = ad.Tensor(V, requires_grad=True)
    # Explicit ways out.
    np.testing.assert_array_equal(w.value, V)
    np.testing.assert_array_equal(np.asarray(w.detach()), V)
    with ad.no_grad():
        np.testing.assert_array_equal(np.cumsum(w), np.cumsum(V))
    # Constants convert as before.
    np.testing.assert_array_equal(np.cumsum(ad.Tensor(V)), np.cumsum(V))
    # Results without a derivative: shapes, indices, booleans.
    y = w * 2.0
    assert np.shape(y) == (4,) and np.ndim(y) == 1 and np.size(y) == 4
    assert int(np.argmax(y)) == 3
    np.testing.assert_array_equal(np.isfinite(y), np.ones(4, bool))
    assert bool(np.allclose(y, 2 * V))

# ------------------------------------------------------ complex inputs


Z = np.array([0.5 + 0.1j])


@pytest.mark.parametrize("call", [
    lambda: ad.numerical_jvp(lambda z: z * 2.0, (Z,), (np.ones(1),)),
    lambda: ad.numerical_grad(lambda z: ad.sum(z), (Z,)),
    lambda: ad.check_grads(lambda z: ad.stop_gradient(z) * 2.0, (Z,)),
    lambda: ad.check_grads(lambda x: x * 1j, (np.ones(2),)),
    lambda: ad.grad(lambda z: ad.sum(z))(Z),
    lambda: ad.vjp(lambda z: z * 2.0, Z),
    lambda: ad.jvp(lambda z: z * 2.0, (Z,), (Z,)),
    lambda: ad.Tensor(Z, requires_grad=True),
], ids=["numerical_jvp", "numerical_grad", "check_grads", "check_grads_output", "grad", "vjp", "jvp", "Tensor"])
def test_complex_numbers_are_refused_not_half_differentiated(call):
    with pytest.raises(ad.AutogradDagError, match="real"):
        call()

# ------------------------------------ closures over an outer transformation


W0 = np.array(3.0)
XS = np.array([1.0, 2.0])


@pytest.mark.parametrize("label,h", [
    # Each inner transformation gets numpy arguments but reads w from the enclosing grad;
    # each h is 6w (worked out beside it), so dh/dw = 6.
    ("vjp", lambda w: ad.sum(ad.vjp(lambda x: x * x * w, XS)[1](np.ones(2))[0])),      # Σ 2x·w -> 6
    ("grad", lambda w: ad.sum(ad.grad(lambda x: ad.sum(x * x * w))(XS))),                # Σ 2x·w -> 6
    ("jvp", lambda w: ad.sum(ad.jvp(lambda x: x * x * w, (XS,), (np.ones(2),))[1])),     # Σ 2x·w -> 6
    ("jit", lambda w: ad.sum(ad.jit(lambda x: x * x * w)(XS)) + w),                      # Σ x²·w + w -> 6
    ("vmap", lambda w: ad.sum(ad.vmap(lambda x: x * x * w)(XS)) + w),                    # Σ x²·w + w -> 6
])
def test_inner_transformation_closing_over_an_outer_input(label, h):
    assert float(ad.grad(h)(W0)) == pytest.approx(6.0, rel=1e-12)


def test_trace_records_an_inner_gradient_that_reads_its_input():
    prog = ad.trace(lambda w: ad.sum(ad.grad(lambda x: ad.sum(x * x * w))(XS)), W0)
    assert float(prog(np.array(2.0))) == pytest.approx(12.0)   # Σ 2x·w at w = 2


# An inner transformation whose arguments are constants, reading an *integer* input of an enclosing
# jit / vmap through a closure (an index, a count: nothing requiring a gradient), computed bare numbers:
# the enclosing program kept them as a constant (the first call's, the first example's).
IDX = np.array([[1, 2], [3, 4]])


@pytest.mark.parametrize("label, run, expected", [
    # vmap of vmap: before, every row was the first example's [[1, 0], [0, 2]]
    ("vmap(vmap)", lambda: ad.vmap(lambda i: ad.vmap(lambda c: c * i)(np.eye(2)))(IDX),
     np.stack([np.eye(2) * row for row in IDX])),
    ("vmap(jacobian)", lambda: ad.vmap(lambda i: ad.jacobian(lambda y: y * i)(np.ones(2)))(IDX),
     np.stack([np.diag(row) for row in IDX]).astype(float)),
    ("jit(grad)", lambda: [g(i) for g in [ad.jit(lambda i: ad.grad(lambda y: ad.sum(y * y * i))(np.ones(2)))]
                           for i in IDX][-1], 2.0 * IDX[-1]),
    ("jit(jvp)", lambda: [g(i) for g in [ad.jit(lambda i: ad.jvp(lambda y: y * i, (np.ones(2),), (np.ones(2),))[1])]
                          for i in IDX][-1], 1.0 * IDX[-1]),
])
def test_inner_transformation_reading_an_integer_input_of_an_enclosing_one(label, run, expected):
    np.testing.assert_array_equal(run(), expected)


def test_trace_inside_a_transformation_refuses_a_value_it_traces():
    """ad.trace inside vmap/jit made a closure's traced value a constant of its program (the first example's)."""
    xs, idx = np.array([[1.0, -2.0], [-3.0, 4.0]]), np.array([[1, 2], [3, 4]])
    with pytest.raises(ad.TracingError, match=r"trace: .*computed from an input of vmap"):
        ad.vmap(lambda x, i: ad.trace(lambda y: y * i, x)(x))(xs, idx)   # before: [[1, -4], [-3, 8]]
    with pytest.raises(ad.TracingError, match=r"trace: .*computed from an input of jit"):
        ad.jit(lambda x, i: ad.trace(lambda y: y * (i + 1), x)(x))(xs[0], idx[0])
    # A closure constant from outside any transformation stays a constant, as documented.
    np.testing.assert_array_equal(ad.vmap(lambda x: ad.trace(lambda y: y * IDX[1], x)(x))(xs), xs * IDX[1])


# ------------------------------------- a checkpointed function reading a Tensor from outside
# The checkpoint node's inputs are its arguments: a Tensor requiring a gradient read from
# f's closure got no derivative (a silent zero, e.g. ad.grad with respect to W below).


def test_checkpoint_refuses_a_closure_tensor_that_requires_a_gradient():
    x, W = np.ones((2, 3)), np.full((3, 3), 0.5)
    with pytest.raises(ad.NotDifferentiableError, match=r"checkpoint\[<lambda>\]: the function reads a Tensor "
                                                        r"of shape \(3, 3\), which requires a gradient"):
        ad.grad(lambda x, W: ad.sum(ad.checkpoint(lambda h: ad.tanh(h @ W))(x)), argnums=1)(x, W)
    layer = ad.nn.Linear(3, 3, rng=0)
    with pytest.raises(ad.NotDifferentiableError, match=r"checkpoint\[Linear\]: the function reads 'weight'"):
        ad.checkpoint(layer)(ad.Tensor(x, requires_grad=True))
    # Read through a global (no closure cell): refused when the backward replays the block.
    global _GLOBAL_W
    _GLOBAL_W = ad.Tensor(W, requires_grad=True, name="W")
    y = ad.sum(ad.checkpoint(lambda h: ad.tanh(h @ _GLOBAL_W))(ad.Tensor(x, requires_grad=True)))
    with pytest.raises(ad.NotDifferentiableError, match=r"reads 'W' \(shape \(3, 3\)\)"):
        y.backward()


def test_checkpoint_with_the_tensor_passed_as_an_argument_is_differentiated():
    x, W = np.ones((2, 3)), np.full((3, 3), 0.5)
    got = ad.grad(lambda x, W: ad.sum(ad.checkpoint(lambda h, w: ad.tanh(h @ w))(x, W)), argnums=1)(x, W)
    np.testing.assert_allclose(got, x.T @ (1 - np.tanh(x @ W) ** 2), rtol=1e-14)
    with ad.no_grad():  # nothing is recorded, so nothing can be lost: no refusal
        W_t = ad.Tensor(W, requires_grad=True)
        ad.checkpoint(lambda h: ad.tanh(h @ W_t))(ad.Tensor(x))


# A traced value (an input of jit / trace / vmap, or computed from one) read by a checkpointed
# function from outside its arguments was frozen: the checkpoint node's impl reads it as a number,
# so every later call (every example of a vmap batch) reused the first one's.
_GLOBAL_I = None


def _block_reading_global_i(y):
    return y * _GLOBAL_I


@pytest.mark.parametrize("route", ["vmap", "jit", "trace", "global"])
def test_checkpoint_refuses_a_traced_tensor_read_from_outside_its_arguments(route):
    xs, idx = np.array([[1.0, -2.0], [-3.0, 4.0]]), np.array([[1, 2], [3, 4]])
    with pytest.raises(ad.TracingError, match=r"checkpoint\[.*\]: the function reads .* computed from an "
                                              r"input of (vmap|jit|trace)"):
        if route == "vmap":   # before: [[1, -4], [-3, 8]], the first example's i for both (want [-9, 16])
            ad.vmap(lambda x, i: ad.checkpoint(lambda y: y * i)(x))(xs, idx)
        elif route == "jit":  # before: the second call gave x1 * i0
            g = ad.jit(lambda x, i: ad.checkpoint(lambda y: y * i)(x))
            g(xs[0], idx[0])
            g(xs[1], idx[1])
        elif route == "trace":
            ad.trace(lambda x, m: ad.checkpoint(lambda y: y * m)(x), xs[0], xs[0] > 0)
        else:  # read through a global: no closure cell to look in
            def f(x, i):
                global _GLOBAL_I
                _GLOBAL_I = i * 2
                return ad.checkpoint(_block_reading_global_i)(x)
            ad.vmap(f)(xs, idx)
    # Passed as an argument, the same block is right for every example (numpy: x·i row by row).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (vmap loops over a checkpoint: its one-time warning)
        np.testing.assert_array_equal(ad.vmap(lambda x, i: ad.checkpoint(lambda y, j: y * j)(x, i))(xs, idx), xs * idx)


# A checkpointed block that runs a transformation of its own on constant arguments, reading the
# block's argument from a closure (vmap over fixed scales, grad with respect to a constant): the
# replay for the derivative ran it on leaves no transformation knew about, so the inner one computed
# bare numbers and the block's derivative was a silent zero (and the forward refused its array result).
_SCALES = np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
_XB = np.array([0.4, -0.9, 1.3])
_WB = np.array([0.3, -1.2, 0.7])


def _vmap_block(x):   # sin(x)·x + sin(2x)·2x, through vmap over the scales
    return ad.sum(ad.vmap(lambda c: ad.sin(x * c) * (x * c))(_SCALES), axis=0)


def _grad_block(x):   # d/dc Σ sin(x·c)·w at c = 1: cos(x)·x·w
    return ad.grad(lambda c: ad.sum(ad.sin(x * c) * _WB))(np.ones(3))


def _vmap_block_derivative(x):   # d/dx of _vmap_block, by hand
    return (np.cos(x) * x + np.sin(x)) + 2 * (np.cos(2 * x) * 2 * x + np.sin(2 * x))


def _grad_block_derivative(x):
    return (np.cos(x) - x * np.sin(x)) * _WB


@pytest.mark.parametrize("block, derivative", [(_vmap_block, _vmap_block_derivative),
                                               (_grad_block, _grad_block_derivative)])
def test_checkpoint_of_a_block_with_an_inner_transformation(block, derivative):
    # before: grad and jvp were zeros (vmap block); the forward raised on the array (grad block)
    cp = ad.checkpoint(block)
    np.testing.assert_allclose(ad.grad(lambda x: ad.sum(cp(x) * _WB))(_XB), derivative(_XB) * _WB, rtol=1e-12)
    np.testing.assert_allclose(ad.jvp(cp, (_XB,), (_WB,))[1], derivative(_XB) * _WB, rtol=1e-12)
    x = ad.Tensor(_XB, requires_grad=True)
    ad.sum(cp(x) * _WB).backward()
    np.testing.assert_allclose(x.grad.value, derivative(_XB) * _WB, rtol=1e-12)
    np.testing.assert_allclose(ad.jit(ad.grad(lambda x: ad.sum(cp(x) * _WB)))(_XB), derivative(_XB) * _WB, rtol=1e-12)


PARAMETERS = [
    ("logsumexp gamma", lambda g: ad.logsumexp(V, gamma=g)),
    ("softmax gamma", lambda g: ad.sum(ad.softmax(V, gamma=g) * V)),
    ("nan_to_num nan", lambda g: ad.sum(ad.nan_to_num(np.array([np.nan, 1.0]), nan=g))),
    ("gradient spacing", lambda g: ad.sum(np.gradient(V * V, g))),
    ("layer_norm eps", lambda g: ad.sum(ad.primitives.fused.layer_norm(V, np.ones(4), V, eps=g) * V)),
]


@pytest.mark.parametrize("label,f", PARAMETERS, ids=[c[0] for c in PARAMETERS])
def test_a_parameter_that_requires_a_gradient_is_refused_not_read_as_a_number(label, f):
    # Each of these has a non-zero derivative in its parameter (d/dγ logsumexp, the NaN slot's fill,
    # 1/h, ...), which a Python float made of the Tensor would silently drop.
    with pytest.raises(ad.NotDifferentiableError, match="constant of the operation"):
        ad.grad(f)(0.7)
    assert np.all(np.isfinite(f(ad.Tensor(0.7)).value))     # a constant Tensor is a number, as before


def test_a_new_tensor_made_of_one_that_requires_a_gradient_is_refused():
    # ad.Tensor(x) inside the differentiated function would be a silent detach: gradient 0, not 2x.
    with pytest.raises(ad.NotDifferentiableError, match="t.detach"):
        ad.grad(lambda x: ad.sum(ad.Tensor(x) ** 2))(V)
    with pytest.raises(ad.NotDifferentiableError):
        ad.Tensor(ad.Tensor(V, requires_grad=True) * 2.0, requires_grad=True)
    np.testing.assert_allclose(ad.grad(lambda x: ad.sum(ad.Tensor(x.detach()) * x))(V), V)   # on purpose
    with ad.no_grad():
        np.testing.assert_array_equal(ad.Tensor(ad.Tensor(V, requires_grad=True)).value, V)
    np.testing.assert_array_equal(ad.Tensor(ad.Tensor(V)).value, V)                             # a constant


def test_deepcopy_copies_leaves_and_refuses_computed_tensors():
    import copy
    from autograd_dag import nn
    # A module (its parameters are leaves) copies with its numbers and gradients, shared
    # parameters staying shared, and the copy trains apart from the original.
    model = nn.Linear(3, 2, rng=0)
    model.weight.grad = ad.Tensor(np.ones((2, 3)))
    twin = copy.deepcopy(model)
    assert type(twin.weight) is type(model.weight) and twin.weight is not model.weight
    np.testing.assert_array_equal(twin.weight.value, model.weight.value)
    np.testing.assert_array_equal(twin.weight.grad.value, np.ones((2, 3)))
    twin.weight.value[...] = 0.0
    assert np.any(model.weight.value != 0.0)
    pair = copy.deepcopy([model.weight, model.weight])
    assert pair[0] is pair[1]
    # A computed Tensor: the default protocol recursed through its history (RecursionError
    # at a few thousand steps) and a detached copy would lose its derivative: refused.
    y = ad.Tensor(np.ones(2), requires_grad=True)
    for _ in range(5000):
        y = ad.tanh(y)
    with pytest.raises(ad.AutogradDagError, match="deepcopy of a Tensor computed by 'tanh'"):
        copy.deepcopy(y)
    np.testing.assert_array_equal(copy.deepcopy(y.detach()).value, y.value)
