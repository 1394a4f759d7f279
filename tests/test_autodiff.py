"""Reverse and forward mode through the public API: functional (JAX-style) and eager (PyTorch-style).

Covers nested arguments, higher order (grad of grad, jvp of grad, Hessians
against hand-derived formulas, HVP against the full Hessian), eager
``backward()`` semantics, gradient programs, custom primitives, anomaly
detection, checkpointing and a 10^6-node chain.
"""

from __future__ import annotations

import doctest
import io

import numpy as np
import pytest

import autograd_dag as ad
from tests import helpers


def line_of(marker: str) -> int:
    return helpers.line_of(marker, __name__)


def book_f(x1, x2):
    """The book's example f(x1, x2) = x2·e^{x1}·√(x1 + x2·e^{x1})."""
    return x2 * ad.exp(x1) * ad.sqrt(x1 + x2 * ad.exp(x1))


def book_grad(x1, x2):
    e = np.exp(x1)
    u, s = x2 * e, x1 + x2 * e
    return np.array([u * np.sqrt(s) + u * (1 + u) / (2 * np.sqrt(s)),
                     e * (np.sqrt(s) + u / (2 * np.sqrt(s)))])


def book_hessian(x1, x2):
    """Derived by hand with u = x2·e^{x1}, s = x1 + u, f = u·√s."""
    e = np.exp(x1)
    u, s = x2 * e, x1 + x2 * e
    r = np.sqrt(s)
    f11 = u * r + u * (2 + 3 * u) / (2 * r) - u * (1 + u) ** 2 / (4 * s ** 1.5)
    f12 = e * (r + (1 + 3 * u) / (2 * r) - u * (1 + u) / (4 * s ** 1.5))
    f22 = e * e * (1 / r - u / (4 * s ** 1.5))
    return np.array([[f11, f12], [f12, f22]])

# ------------------------------------------------------- nested structures


PARAMS = {"w": np.array([[1.0, -2.0], [0.5, 3.0]]), "b": (np.array([0.1, -0.2]), np.array(1.5))}
X = np.array([0.3, -0.7])


def nested_loss(p, x):
    h = ad.tanh(ad.matmul(p["w"], x) + p["b"][0])
    return (h * h).sum() * p["b"][1]


def assert_same_structure(a, b):
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same_structure(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            assert_same_structure(u, v)
    else:
        assert isinstance(a, np.ndarray) and isinstance(b, (np.ndarray, np.generic, float))
        assert a.shape == np.shape(b) and a.dtype == np.float64


def nested_numeric_grad(p, x):
    # Central differences: forward evaluations only, no derivative rule involved.
    return ad.numerical_grad(nested_loss, (p, x))[0]


def test_zero_dimensional_values_are_ndarrays():
    t = ad.exp(ad.Tensor(np.array(1.0)))
    assert isinstance(t.value, np.ndarray)
    g = ad.grad(lambda s: s * s)(np.array(3.0))
    assert isinstance(g, np.ndarray)


def test_grad_and_value_and_grad_keep_nested_structure():
    g = ad.grad(nested_loss)(PARAMS, X)
    expected = nested_numeric_grad(PARAMS, X)
    assert set(g) == {"w", "b"} and isinstance(g["b"], tuple) and len(g["b"]) == 2
    assert g["w"].shape == (2, 2) and g["b"][0].shape == (2,) and np.shape(g["b"][1]) == ()
    np.testing.assert_allclose(g["w"], expected["w"], rtol=1e-6)
    np.testing.assert_allclose(g["b"][0], expected["b"][0], rtol=1e-6)
    np.testing.assert_allclose(g["b"][1], expected["b"][1], rtol=1e-6)
    value, g2 = ad.value_and_grad(nested_loss)(PARAMS, X)
    h = np.tanh(PARAMS["w"] @ X + PARAMS["b"][0])
    np.testing.assert_allclose(value, np.sum(h * h) * PARAMS["b"][1], rtol=1e-14)
    np.testing.assert_allclose(g2["w"], g["w"], rtol=1e-14)
    # Several argnums: a tuple of gradients, each in its argument's structure.
    gp, gx = ad.grad(nested_loss, argnums=(0, 1))(PARAMS, X)
    assert set(gp) == {"w", "b"} and gx.shape == X.shape
    np.testing.assert_allclose(gx, ad.numerical_grad(lambda x: nested_loss(PARAMS, x), (X,))[0], rtol=1e-6)
    # Lists stay lists.
    gl = ad.grad(lambda ws: (ws[0] * ws[1]).sum())([np.array([1.0, 2.0]), np.array([3.0, 4.0])])
    assert isinstance(gl, list)
    np.testing.assert_array_equal(gl[0], [3.0, 4.0])
    np.testing.assert_array_equal(gl[1], [1.0, 2.0])


def test_vjp_with_nested_inputs_and_outputs():
    def f(p):
        return {"prod": p["a"] * p["b"], "pair": (p["a"].sum(), ad.exp(p["b"]))}
    p = {"a": np.array([1.0, 2.0]), "b": np.array([0.5, -1.0])}
    out, f_vjp = ad.vjp(f, p)
    assert set(out) == {"prod", "pair"} and isinstance(out["pair"], tuple)
    np.testing.assert_array_equal(out["prod"], [0.5, -2.0])
    ct = {"prod": np.array([1.0, 10.0]), "pair": (np.array(2.0), np.array([3.0, 4.0]))}
    (g,) = f_vjp(ct)
    assert set(g) == {"a", "b"}
    np.testing.assert_allclose(g["a"], ct["prod"] * p["b"] + 2.0, rtol=1e-15)
    np.testing.assert_allclose(g["b"], ct["prod"] * p["a"] + ct["pair"][1] * np.exp(p["b"]), rtol=1e-15)
    # The same vjp_fn can be called again with another cotangent.
    (g2,) = f_vjp({"prod": np.zeros(2), "pair": (np.array(1.0), np.zeros(2))})
    np.testing.assert_array_equal(g2["a"], [1.0, 1.0])
    np.testing.assert_array_equal(g2["b"], [0.0, 0.0])


def test_jvp_with_nested_primals():
    p = {"a": np.array([1.0, 2.0]), "b": (np.array([0.5, -1.0]),)}
    t = {"a": np.array([1.0, 0.0]), "b": (np.array([0.0, 2.0]),)}
    out, tout = ad.jvp(lambda q: (q["a"] * q["b"][0], ad.tanh(q["a"]).sum()), (p,), (t,))
    assert isinstance(out, tuple) and isinstance(tout, tuple)
    np.testing.assert_allclose(tout[0], t["a"] * p["b"][0] + p["a"] * t["b"][0], rtol=1e-15)
    np.testing.assert_allclose(tout[1], np.sum((1 - np.tanh(p["a"]) ** 2) * t["a"]), rtol=1e-14)


def test_vjp_and_jvp_keep_integer_arguments():
    table, idx = np.arange(6.0).reshape(3, 2), np.array([0, 2, 2])
    out, f_vjp = ad.vjp(lambda t, i: ad.take(t, i), table, idx)
    np.testing.assert_array_equal(out, table[idx])
    g_table, _ = f_vjp(np.ones((3, 2)))
    np.testing.assert_array_equal(g_table, [[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]])
    _, t = ad.jvp(lambda t, i: ad.take(t, i), (table, idx), (np.ones((3, 2)), np.zeros(3)))
    np.testing.assert_array_equal(t, np.ones((3, 2)))


def test_jvp_refuses_a_nonzero_tangent_for_an_integer_primal():
    # Before, the tangent took the primal's integer dtype: 0.5 became 0 and the JVP was silently 0.
    with pytest.raises(ad.NotDifferentiableError, match=r"jvp: primal leaf 0 has dtype int64, so it has no "
                                                        r"tangent \(an index\), but its tangent is nonzero"):
        ad.jvp(lambda x: x * 3, (np.array([1, 2]),), (np.array([0.5, 0.5]),))
    _, t = ad.jvp(lambda x: x * 3, (np.array([1.0, 2.0]),), (np.array([0.5, 0.5]),))
    np.testing.assert_array_equal(t, [1.5, 1.5])


def test_list_of_tensors_is_never_a_silent_constant():
    try:
        g = ad.grad(lambda a: ad.exp([a, a]).sum())(1.0)
    except ad.AutogradDagError:
        return  # refusing is fine: silently dropping the derivative is not
    assert float(g) == pytest.approx(2 * np.e)


def test_functional_results_are_numpy_on_numpy_inputs():
    g = ad.grad(lambda x: (x * x).sum())(np.array([1.0, 2.0]))
    assert type(g) is np.ndarray
    out, t = ad.jvp(lambda x: x * 2.0, (np.array([1.0]),), (np.array([1.0]),))
    assert type(out) is np.ndarray and type(t) is np.ndarray
    # Python scalars work and give float64.
    assert float(ad.grad(lambda x: x * x)(3.0)) == 6.0


def test_jacobian_hessian_hvp_shapes_and_values():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 4))
    x = rng.standard_normal(4)
    J = ad.jacobian(lambda v: ad.tanh(ad.matmul(A, v)))(x)
    assert J.shape == (3, 4)
    np.testing.assert_allclose(J, (1 - np.tanh(A @ x) ** 2)[:, None] * A, rtol=1e-12)
    # Matrix input, matrix output: out.shape + arg.shape.
    M = rng.standard_normal((2, 3))
    J2 = ad.jacobian(lambda m: m * m)(M)
    assert J2.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(J2.reshape(6, 6), np.diag(2 * M.ravel()), rtol=1e-15)
    # jacobian w.r.t. a chosen argument.
    Jb = ad.jacobian(lambda a, b: a * b, argnums=1)(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    np.testing.assert_array_equal(Jb, np.diag([1.0, 2.0]))


def hvp_test_function(x):
    return ad.logsumexp(ad.tanh(x) * x, axis=-1) + (x ** 3).sum() * 0.1


def test_hvp_equals_full_hessian_times_vector():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(5)
    H = ad.hessian(hvp_test_function)(x)
    assert H.shape == (5, 5)
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-14)
    for _ in range(3):
        v = rng.standard_normal(5)
        np.testing.assert_allclose(ad.hvp(hvp_test_function, x, v), H @ v, rtol=1e-10, atol=1e-12)
    # And H itself agrees with finite differences of the gradient.
    g = ad.grad(hvp_test_function)
    h = 1e-5
    fd = np.stack([(g(x + h * e) - g(x - h * e)) / (2 * h) for e in np.eye(5)], axis=1)
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-8)

# ---------------------------------------------------------- higher order


def test_second_and_third_derivative_of_cube():
    for x in (-1.5, 0.0, 2.0):
        assert float(ad.grad(lambda t: t ** 3)(x)) == pytest.approx(3 * x * x, rel=1e-14)
        assert float(ad.grad(ad.grad(lambda t: t ** 3))(x)) == pytest.approx(6 * x, rel=1e-14, abs=1e-14)
        assert float(ad.grad(ad.grad(ad.grad(lambda t: t ** 3)))(x)) == pytest.approx(6.0, rel=1e-14)
    # x * x * x by products (no static power) gives the same.
    assert float(ad.grad(ad.grad(lambda t: t * t * t))(2.0)) == pytest.approx(12.0, rel=1e-14)
    # Forward over reverse.
    out, t = ad.jvp(ad.grad(lambda s: s ** 3), (2.0,), (1.0,))
    assert float(out) == pytest.approx(12.0) and float(t) == pytest.approx(12.0)
    # Forward over forward.
    d1 = lambda s: ad.jvp(lambda r: r ** 3, (s,), (ad.Tensor(1.0),))[1]  # noqa: E731
    assert float(ad.jvp(d1, (2.0,), (1.0,))[1]) == pytest.approx(12.0)


@pytest.mark.parametrize("x1,x2", [(1.0, 2.0), (0.3, 1.7), (-0.3, 1.5)])
def test_book_function_first_and_second_derivatives(x1, x2):
    g = ad.grad(book_f, argnums=(0, 1))(x1, x2)
    np.testing.assert_allclose([float(g[0]), float(g[1])], book_grad(x1, x2), rtol=1e-13)
    H = book_hessian(x1, x2)
    # Each entry by nested grad (mixed partials in both orders).
    for i in range(2):
        for j in range(2):
            hij = ad.grad(lambda a, b: ad.grad(book_f, argnums=i)(a, b), argnums=j)(x1, x2)
            assert float(hij) == pytest.approx(H[i, j], rel=1e-12)
    # The whole Hessian of the vector form.
    Hv = ad.hessian(lambda v: book_f(v[0], v[1]))(np.array([x1, x2]))
    np.testing.assert_allclose(Hv, H, rtol=1e-12)
    # jvp of grad: one Hessian column.
    _, col = ad.jvp(lambda v: ad.grad(lambda w: book_f(w[0], w[1]))(v), (np.array([x1, x2]),),
                    (np.array([0.0, 1.0]),))
    np.testing.assert_allclose(col, H[:, 1], rtol=1e-12)


def test_book_gradient_at_one_two():
    value, g = ad.value_and_grad(lambda v: book_f(v[0], v[1]))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(value, 2 * np.e * np.sqrt(1 + 2 * np.e), rtol=1e-15)
    # By hand: u = 2e, s = 1 + 2e; ∂1 = u√s + u(1+u)/(2√s), ∂2 = e(√s + u/(2√s)).
    np.testing.assert_allclose(g, [20.689155843285, 9.808858425287], rtol=1e-12)


def run_doctest(obj, name: str) -> None:
    """Run the docstring example of ``obj`` and fail with doctest's report if it is wrong."""
    finder = doctest.DocTestFinder(recurse=False)
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(obj, name, globs={}):
        runner.run(test, out=out.write)
    assert runner.summarize(verbose=False).failed == 0, out.getvalue()


def test_package_docstring_example():
    run_doctest(ad, "autograd_dag")


def test_checkpoint_docstring_example():
    run_doctest(ad.checkpoint, "checkpoint")


# ---------------------------------------------------------------- eager


def test_backward_fills_leaf_grads_and_accumulates_like_pytorch():
    x = ad.Tensor([1.0, 2.0], requires_grad=True)
    w = ad.Tensor([3.0, -1.0], requires_grad=True)
    c = ad.Tensor([5.0, 5.0])  # a constant: no gradient
    loss = (x * w + c).sum()
    loss.backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad.value, [3.0, -1.0])
    np.testing.assert_array_equal(w.grad.value, [1.0, 2.0])
    assert c.grad is None
    loss.backward()  # second call: gradients add up
    np.testing.assert_array_equal(x.grad.value, [6.0, -2.0])
    # A new loss accumulates too, until zero_grad.
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.value, [8.0, 2.0])
    x.zero_grad()
    assert x.grad is None
    ad.zero_grad([w])
    assert w.grad is None
    (x * w).sum().backward()
    np.testing.assert_array_equal(x.grad.value, [3.0, -1.0])
    # Fan-out: a leaf used twice receives the sum of both paths.
    y = ad.Tensor([2.0], requires_grad=True)
    (y * 3.0 + ad.exp(y)).sum().backward()
    np.testing.assert_allclose(y.grad.value, [3.0 + np.exp(2.0)], rtol=1e-15)


def test_backward_through_a_freed_graph_names_retain_graph():
    x = ad.Tensor([1.0, 2.0], requires_grad=True)
    loss = (ad.exp(x) * 2.0).sum()
    loss.backward()
    with pytest.raises(ad.GraphFreedError) as err:
        loss.backward()
    message = str(err.value)
    assert "retain_graph=True" in message and "backward" in message
    assert "test_autodiff.py" in message  # points at the user's line


def test_backward_needs_grad_for_non_scalar_and_a_gradient_path():
    x = ad.Tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    with pytest.raises(ad.AutogradDagError, match="grad="):
        y.backward()
    y.backward(grad=np.array([1.0, 10.0]))
    np.testing.assert_array_equal(x.grad.value, [2.0, 20.0])
    with pytest.raises(ad.AutogradDagError, match="requires_grad"):
        (ad.Tensor([1.0]) * 2.0).sum().backward()
    with ad.no_grad():
        z = (x * 2.0).sum()
    with pytest.raises(ad.AutogradDagError, match="no_grad"):
        z.backward()


def test_backward_create_graph_then_differentiate_grad_again():
    x = ad.Tensor([1.0, 2.0], requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    np.testing.assert_array_equal(g.value, [3.0, 12.0])
    assert g.requires_grad and g.prim is not None  # a recorded Tensor
    x.zero_grad()
    g.sum().backward()
    np.testing.assert_array_equal(x.grad.value, [6.0, 12.0])  # d/dx Σ 3x² = 6x


def test_backward_with_create_graph_keeps_the_graph():
    x = ad.Tensor([0.5], requires_grad=True)
    loss = ad.tanh(x).sum()
    loss.backward(create_graph=True)
    loss.backward(create_graph=True)  # no freed-graph error
    np.testing.assert_allclose(x.grad.value, 2 * (1 - np.tanh(0.5) ** 2), rtol=1e-15)

# ---------------------------------------------------- gradient programs


def test_grad_program_is_an_executable_printable_program():
    prog = ad.trace(book_f, 1.0, 2.0)
    gprog = ad.grad_program(prog)
    assert isinstance(gprog, ad.Program) and gprog.kind == "gradient"
    listing = str(gprog)
    assert listing.startswith("def grad_book_f(%0: float64[], %1: float64[]):")
    assert "exp(%0)" in listing and "sqrt(" in listing and listing.rstrip().endswith(")")
    for x1, x2 in [(1.0, 2.0), (0.3, 1.7), (-0.3, 1.5)]:
        got = gprog(np.float64(x1), np.float64(x2))
        want = ad.grad(book_f, argnums=(0, 1))(x1, x2)
        np.testing.assert_allclose([float(v) for v in got], [float(v) for v in want], rtol=1e-14)
    # wrt one input: a single output.
    g1 = ad.grad_program(prog, wrt=1)
    assert len(g1.outputs) == 1
    np.testing.assert_allclose(g1(np.float64(0.3), np.float64(1.7)), book_grad(0.3, 1.7)[1], rtol=1e-13)
    # with_value: the value comes first.
    gv = ad.grad_program(prog, with_value=True)
    value, d1, d2 = gv(np.float64(1.0), np.float64(2.0))
    np.testing.assert_allclose(value, 2 * np.e * np.sqrt(1 + 2 * np.e), rtol=1e-15)


def test_grad_program_of_grad_program_and_differentiating_a_gradient_program():
    prog = ad.trace(lambda x: x ** 3 + ad.tanh(x), 0.5)
    g1 = ad.grad_program(prog)
    g2 = ad.grad_program(g1)
    for x in (-1.0, 0.5, 2.0):
        assert float(g1(np.float64(x))) == pytest.approx(3 * x * x + 1 - np.tanh(x) ** 2, rel=1e-13)
        t = np.tanh(x)
        assert float(g2(np.float64(x))) == pytest.approx(6 * x - 2 * t * (1 - t * t), rel=1e-12)
    # A gradient program called on Tensors records again: ad.grad goes through it.
    assert float(ad.grad(lambda x: g1(x))(2.0)) == pytest.approx(float(g2(np.float64(2.0))), rel=1e-14)
    # Vector input, scalar loss: the gradient program's Jacobian is the Hessian.
    vprog = ad.trace(lambda v: book_f(v[0], v[1]), np.array([1.0, 2.0]))
    gv = ad.grad_program(vprog)
    H = ad.jacobian(lambda v: gv(v))(np.array([0.3, 1.7]))
    np.testing.assert_allclose(H, book_hessian(0.3, 1.7), rtol=1e-12)

# ---------------------------------------------------- custom primitives


@ad.primitive("test_autodiff_cube", vjp=lambda ct, out, x: (ct * 3.0 * x * x,),
              jvp=lambda t, out, x: t[0] * 3.0 * x * x, shape=lambda x: (x.shape, x.dtype), replace=True)
def cube(x):
    """x³ elementwise."""
    return x * x * x


def _scaled_sin_impl(x, *, scale):
    return np.sin(scale * x)


scaled_sin = ad.primitive(
    "test_autodiff_scaled_sin", _scaled_sin_impl,
    vjp=lambda ct, out, x, *, scale: (ct * scale * ad.PRIMITIVES["test_autodiff_cos"](x * scale),),
    jvp=lambda t, out, x, *, scale: t[0] * scale * ad.PRIMITIVES["test_autodiff_cos"](x * scale),
    replace=True)
cos = ad.primitive(
    "test_autodiff_cos", np.cos,
    vjp=lambda ct, out, x: (-ct * scaled_sin(x, scale=1.0),),
    jvp=lambda t, out, x: -t[0] * scaled_sin(x, scale=1.0), replace=True)


def test_custom_primitive_decorator_records_executes_and_differentiates():
    assert cube.prim is ad.PRIMITIVES["test_autodiff_cube"] and cube.__doc__ == "x³ elementwise."
    x = ad.Tensor([1.0, -2.0], requires_grad=True)
    y = cube(x)
    assert y.prim is cube.prim and y.parents == (x,)
    np.testing.assert_array_equal(y.value, [1.0, -8.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.value, [3.0, 12.0])
    prog = ad.trace(lambda v: cube(v).sum(), np.ones(2))
    assert "test_autodiff_cube(%0)" in str(prog)
    assert float(prog(np.array([2.0, 3.0]))) == 35.0
    np.testing.assert_array_equal(ad.grad_program(prog)(np.array([2.0, 3.0])), [12.0, 27.0])
    assert float(ad.grad(ad.grad(lambda v: cube(v)))(2.0)) == 12.0
    ad.check_grads(lambda v: cube(v), (np.array([0.5, -1.5]),), order=2)


def test_custom_primitive_function_form_with_params_and_mutual_rules():
    x = np.array([0.2, -1.0, 2.5])
    out = scaled_sin(ad.Tensor(x), scale=2.0)
    assert out.prim.name == "test_autodiff_scaled_sin" and out.params == {"scale": 2.0}
    np.testing.assert_allclose(out.value, np.sin(2 * x), rtol=1e-15)
    np.testing.assert_allclose(ad.grad(lambda v: scaled_sin(v, scale=2.0).sum())(x), 2 * np.cos(2 * x),
                               rtol=1e-14)
    np.testing.assert_allclose(ad.grad(ad.grad(lambda v: scaled_sin(v, scale=1.0)))(0.7), -np.sin(0.7),
                               rtol=1e-14)
    prog = ad.trace(lambda v: scaled_sin(v, scale=3.0), x)
    assert "scale=3.0" in str(prog)
    np.testing.assert_allclose(prog(x + 1), np.sin(3 * (x + 1)), rtol=1e-15)
    ad.check_grads(lambda v: scaled_sin(cos(v), scale=0.5), (x,), order=2)


def test_builtin_primitive_names_cannot_be_redefined():
    for replace in (False, True):
        with pytest.raises(ad.AutogradDagError, match="'exp' is a built-in primitive"):
            ad.primitive("exp", np.exp, vjp=lambda ct, out, x: (ct,), replace=replace)
    assert ad.PRIMITIVES["exp"].impl is np.exp


def test_jvp_rule_returning_a_wrong_shape_is_an_error():
    lazy = ad.primitive("test_autodiff_lazy_broadcast", lambda x: np.broadcast_to(x, (2, 3)).copy(),
                        vjp=lambda ct, out, x: (ad.sum(ct, axis=0, keepdims=True),),
                        jvp=lambda t, out, x: t[0],  # forgot to broadcast the tangent to (2, 3)
                        replace=True)
    try:
        _, t = ad.jvp(lambda v: lazy(v), (np.ones((1, 3)),), (np.ones((1, 3)),))
    except ad.AutogradDagError as exc:
        assert "test_autodiff_lazy_broadcast" in str(exc) and "(2, 3)" in str(exc)
        return
    assert np.shape(t) == (2, 3)


# ------------------------------------------------------------- anomaly


def test_detect_anomaly_names_op_and_line_for_nan_forward():
    x = ad.Tensor([-1.0, 2.0])
    with ad.detect_anomaly():
        with np.errstate(invalid="ignore"):
            with pytest.raises(ad.AnomalyError) as err:
                ad.log(x)  # MARK-nan-forward
    message = str(err.value)
    assert "'log'" in message and "NaN" in message
    assert f"test_autodiff.py:{line_of('MARK-nan-forward')}" in message
    with np.errstate(invalid="ignore"):  # outside the context: NaN flows silently
        assert np.isnan(ad.log(x).value[0])


def test_detect_anomaly_names_op_and_line_for_bad_gradient():
    x = ad.Tensor([0.0, 4.0], requires_grad=True)
    with ad.detect_anomaly(), np.errstate(divide="ignore"):
        root = ad.sqrt(x)  # MARK-inf-gradient
        loss = root.sum()
        with pytest.raises(ad.AnomalyError) as err:
            loss.backward()
    message = str(err.value)
    assert "'sqrt'" in message and "inf" in message and "gradient" in message
    assert f"test_autodiff.py:{line_of('MARK-inf-gradient')}" in message
    # The functional API is checked too.
    with ad.detect_anomaly(), np.errstate(divide="ignore"):
        with pytest.raises(ad.AnomalyError, match="sqrt"):
            ad.grad(lambda v: ad.sqrt(v).sum())(np.array([0.0, 1.0]))
        # forward mode: the tangent of sqrt at 0
        with pytest.raises(ad.AnomalyError, match="sqrt"):
            ad.jvp(lambda v: ad.sqrt(v), (np.array([0.0]),), (np.array([1.0]),))

# ---------------------------------------------------------- checkpoint


def mlp_block(h, W, b):
    return ad.tanh(ad.matmul(h, W) + b)


def test_checkpoint_gives_the_same_gradients():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3))
    Ws = [rng.standard_normal((3, 3)) * 0.5 for _ in range(3)]
    bs = [rng.standard_normal(3) * 0.1 for _ in range(3)]

    def loss(block):
        def f(x, Ws, bs):
            h = x
            for W, b in zip(Ws, bs):
                h = block(h, W, b)
            return (h * h).sum()
        return f

    plain = ad.grad(loss(mlp_block), argnums=(0, 1, 2))(x, Ws, bs)
    ckpt = ad.grad(loss(ad.checkpoint(mlp_block)), argnums=(0, 1, 2))(x, Ws, bs)
    np.testing.assert_allclose(ckpt[0], plain[0], rtol=1e-13)
    for a, b in zip(ckpt[1] + ckpt[2], plain[1] + plain[2]):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    # The checkpointed block is one node: its intermediates are not stored.
    prog = ad.trace(lambda x, W, b: ad.checkpoint(mlp_block)(x, W, b).sum(), x, Ws[0], bs[0])
    assert prog.op_counts() == {"input": 3, "checkpoint[mlp_block]": 1, "sum": 1}
    # Forward mode, second order and eager mode agree as well.
    ad.check_grads(lambda x, W: ad.checkpoint(mlp_block)(x, W, bs[0]).sum(), (x, Ws[0]), order=2)
    xt = ad.Tensor(x, requires_grad=True)
    loss(ad.checkpoint(mlp_block))(xt, Ws, bs).backward()
    np.testing.assert_allclose(xt.grad.value, plain[0], rtol=1e-13)

# ------------------------------------------------------- deep chains


def chain_backward(n: int):
    x = ad.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    c = ad.Tensor(np.array([1e-7, -1e-7]))
    y = x
    for _ in range(n):
        y = y + c
    (y * y).sum().backward()
    return x, y


def test_backward_through_a_long_chain_has_no_recursion_limit():
    x, y = chain_backward(20_000)
    np.testing.assert_allclose(x.grad.value, 2 * y.value, rtol=1e-15)


@pytest.mark.slow
def test_backward_through_a_million_node_chain():
    x, y = chain_backward(1_000_000)
    np.testing.assert_allclose(x.grad.value, 2 * y.value, rtol=1e-15)


def test_gradient_program_nodes_point_at_the_line_they_differentiate():
    def f(x):
        y = ad.exp(x)          # line A
        return (y * y).sum()   # line B
    lines = f.__code__.co_firstlineno
    gprog = ad.grad_program(ad.trace(f, np.ones(3)))
    sources = {n.source[1] for n in gprog.nodes if n.prim is not None}
    assert sources == {lines + 1, lines + 2}


def test_gradient_program_nodes_keep_the_forward_layer_scope():
    def f(x):
        with ad.name_scope("layer"):
            y = ad.tanh(x)
        return y.sum()
    gprog = ad.grad_program(ad.trace(f, np.ones(2)))
    scopes = {n.op: n.scope for n in gprog.nodes if n.prim is not None}
    assert scopes["tanh"] == ("layer",) and scopes["broadcast_to"] == ()
    # The tanh VJP's own nodes (1 - y·y, times the cotangent) sit in the layer too.
    assert sum(1 for n in gprog.nodes if n.scope == ("layer",)) >= 3


def test_many_slices_of_one_array_sum_their_cotangents_in_place():
    # The reverse sweep scatters the cotangent of each getitem/take of x into one
    # buffer (Primitive.vjp_into) once x has a cotangent sum of its own: checked
    # against the gradient written by hand, with repeated fancy indices, a use of
    # x that is not a slice, a float32 slice of a float64 array, and take.
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((4, 6))
    w = rng.standard_normal(6)
    x = ad.Tensor(xv, requires_grad=True)
    loss = ad.sum(x * 2.0)                                   # dL/dx = 2 everywhere
    for t in range(6):
        loss = loss + ad.sum(x[:, t] * w[t])                  # + w[t] in column t
    loss = loss + ad.sum(x[[0, 0, 3], 1:3])                   # + 2 at (0, 1:3), + 1 at (3, 1:3)
    loss = loss + ad.sum(ad.astype(x[1], np.float32))         # + 1 in row 1 (another dtype)
    loss = loss + ad.sum(ad.take(x, np.array([2, 2, -1])))    # + 2 in row 2, + 1 in row 3
    loss.backward()
    expected = np.full((4, 6), 2.0) + w[None, :]
    expected[0, 1:3] += 2.0
    expected[3, 1:3] += 1.0
    expected[1] += 1.0
    expected[2] += 2.0
    expected[3] += 1.0
    np.testing.assert_allclose(x.grad.value, expected, rtol=1e-12)
    # The same gradient through the recorded sweep (where nothing is scattered in place).
    x2 = ad.Tensor(xv, requires_grad=True)
    g = ad.grad(lambda v: ad.sum(ad.stack([ad.sum(v[:, t] * w[t]) for t in range(6)])) +
                ad.sum(v[[0, 0, 3], 1:3]))(x2)
    hand = w[None, :] + np.zeros((4, 6))
    hand[0, 1:3] += 2.0
    hand[3, 1:3] += 1.0
    np.testing.assert_allclose(g.value, hand, rtol=1e-12)


def test_inlined_operations_record_the_node_apply_records():
    # @operation inlines apply's common case into ad.multiply, ad.tanh, ...: the node
    # must be the one apply records, field by field (lifted constants included).
    from autograd_dag.core import apply
    x32 = ad.Tensor(np.array([0.5, -1.0], dtype=np.float32), requires_grad=True, name="x")
    c = ad.Tensor([2.0, 3.0])
    cases = [(ad.multiply, (x32, 2.0)), (ad.add, (1.5, x32)), (ad.subtract, (c, np.array([1.0, 1.0]))),
             (ad.maximum, (x32, c)), (ad.tanh, (x32,)), (ad.relu, (x32,)), (ad.sin, (c,)), (ad.less, (x32, c))]
    with ad.name_scope("block"):
        for op, args in cases:
            fast, slow = op(*args), apply(ad.PRIMITIVES[op.__name__], *args)
            assert fast.prim is slow.prim and fast.params is slow.params is None
            np.testing.assert_array_equal(fast.value, slow.value)
            assert fast.value.dtype == slow.value.dtype
            assert (fast.requires_grad, fast.grad, fast.name, fast.scope) == \
                (slow.requires_grad, slow.grad, slow.name, slow.scope) == (fast.requires_grad, None, None, ("block",))
            assert fast.source[0] == slow.source[0] == __file__ and fast.source[1] == slow.source[1]
            assert len(fast.parents) == len(slow.parents) == len(args)
            for a, pf, ps in zip(args, fast.parents, slow.parents):
                if isinstance(a, ad.Tensor):
                    assert pf is a and ps is a
                else:  # a constant leaf of the other operand's float dtype, as apply makes it
                    assert pf.prim is None and not pf.requires_grad and pf.value.dtype == ps.value.dtype
                    np.testing.assert_array_equal(pf.value, ps.value)
            assert fast.serial < 0 and slow.serial < fast.serial  # made after it
    with ad.no_grad():
        assert ad.multiply(x32, 2.0).parents == () and not ad.tanh(x32).requires_grad
    with pytest.raises(ad.ShapeError, match=r"multiply\(float64\[2\], float64\[3\]\).*test_autodiff.py"):
        ad.multiply(c, ad.Tensor([1.0, 2.0, 3.0]))


def test_eager_backward_waits_for_every_consumer_of_a_node():
    # The eager sweep visits nodes newest first (Tensor.serial) as their first
    # cotangent arrives: a node used early and late, beside a leaf made between
    # its uses, still gets every contribution before its own VJP runs.
    x = ad.Tensor([0.3, -0.7], requires_grad=True)
    a = ad.tanh(x)
    b = a * 2.0
    w = ad.Tensor([1.5, 0.5], requires_grad=True)   # a leaf made after a and b
    c = ad.exp(a) * w + b
    loss = (c * a).sum()
    loss.backward()
    grads = ad.grad(lambda x, w: ((ad.exp(ad.tanh(x)) * w + ad.tanh(x) * 2.0) * ad.tanh(x)).sum(),
                    argnums=(0, 1))(ad.Tensor(x.value), ad.Tensor(w.value))
    np.testing.assert_allclose(x.grad.value, grads[0].value, rtol=1e-14)
    np.testing.assert_allclose(w.grad.value, grads[1].value, rtol=1e-14)


def test_a_primitive_without_vjp_is_refused_before_backward_frees_anything():
    no_vjp = ad.primitive("test_autodiff_no_vjp", np.sin, replace=True)
    x = ad.Tensor([0.5, 1.0], requires_grad=True)
    y = no_vjp(x * 2.0) * 3.0
    with pytest.raises(ad.MissingRuleError, match="test_autodiff_no_vjp"):
        y.sum().backward()
    assert y.parents is not None and y.parents[0].parents is not None  # nothing freed


def test_tangents_and_cotangents_go_with_their_primals_by_key_and_position():
    # They were paired with the primals (outputs) leaf by leaf, in order: a dict written in
    # another key order was silently misassigned (jax matches them by structure).
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    f = lambda p: ad.sum(p["a"] * 10.0 + p["b"])  # noqa: E731
    _, t = ad.jvp(f, ({"a": a, "b": b},), ({"b": np.ones(2), "a": np.zeros(2)},))
    assert float(t) == 2.0
    np.testing.assert_allclose(ad.hvp(lambda p: ad.sum(p["a"] ** 3 + p["b"] ** 2), {"a": a, "b": b},
                                      {"b": np.ones(2), "a": np.zeros(2)})["b"], [2.0, 2.0])
    _, f_vjp = ad.vjp(lambda p: {"x": p["a"] * 2.0, "y": p["b"] * 3.0}, {"a": a, "b": b})
    (g,) = f_vjp({"y": np.ones(2), "x": np.zeros(2)})
    np.testing.assert_allclose(g["a"], [0.0, 0.0])
    np.testing.assert_allclose(g["b"], [3.0, 3.0])
    np.testing.assert_allclose(ad.numerical_jvp(f, ({"a": a, "b": b},), ({"b": np.ones(2), "a": np.zeros(2)},))[0],
                               2.0, rtol=1e-6)
    # Another structure with as many leaves is refused, naming where.
    with pytest.raises(ad.AutogradDagError, match=r"differ in structure at \[0\]: expected a tuple of 2"):
        ad.jvp(lambda t, u: ad.sum(t[0] * t[1] + u), ((a, b), a), ((a,), (a, a)))
    with pytest.raises(ad.AutogradDagError, match=r"expected a dict with keys \['x', 'y'\]"):
        f_vjp({"p": np.ones(2), "q": np.zeros(2)})


def test_an_index_buffer_reused_after_indexing_does_not_move_the_gradient():
    # x[idx] kept idx by reference (an int64 one; a boolean mask or an int32 one was copied):
    # refilling the buffer for the next lookup moved the first lookup's gradient there, and
    # the jit program read the final index at both nodes.
    def f(a):
        idx = np.array([0])
        first = a[idx]
        idx[0] = 2
        return ad.sum(first) + 10.0 * ad.sum(a[idx])
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(ad.grad(f)(x), [1.0, 0.0, 10.0])
    assert float(ad.jit(f)(x)) == 31.0
    np.testing.assert_array_equal(ad.jit(ad.grad(f))(x), [1.0, 0.0, 10.0])


def test_tangents_of_a_deeply_nested_structure_are_matched_in_linear_memory():
    # leaves_like kept every pending node's path from the root as its own tuple: a tree
    # nested 3,000 deep with a sibling at each level held 4.5 million path entries at once
    # (O(depth²) memory and time); the path is now spelled out only for an error.
    import tracemalloc
    depth = 3000
    primal, tangent = np.ones(2), np.full(2, 0.5)
    primals, tangents = primal, tangent
    for i in range(depth):
        primals, tangents = [primals, {"k": (np.float64(i),)}], [tangents, {"k": (np.float64(0.0),)}]

    def f(tree):
        while isinstance(tree, list):
            tree = tree[0]
        return ad.sum(tree * tree)

    tracemalloc.start()
    try:
        _, t = ad.jvp(f, (primals,), (tangents,))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert float(t) == float(np.sum(2 * primal * tangent))
    assert peak < 8 * 2 ** 20
    # A mismatch deep inside is still named by its whole path.
    tangents[0][0][1]["k"] = ()
    with pytest.raises(ad.AutogradDagError, match=r"differ in structure at \[0\]\[0\]\[0\]\[1\]\['k'\]: "
                                                  r"expected a tuple of 1"):
        ad.jvp(f, (primals,), (tangents,))


def test_leaf_paths_of_a_deep_tree_in_linear_memory():
    # Every pending container kept its own copy of the path from the root: a leaf nested
    # 3,000 deep beside an empty list at each level held 4.5 million path entries at once
    # (check_grads of a function of such an argument: 35 s at depth 100,000).
    import tracemalloc
    from autograd_dag.tree import leaf_paths
    depth = 3000
    tree = np.ones(2)
    for _ in range(depth):
        tree = [tree, []]
    tracemalloc.start()
    try:
        paths = leaf_paths(tree)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert paths == [(0,) * depth]
    assert peak < 4 * 2 ** 20
    assert leaf_paths(({"w": 1, "b": (2, [3])}, 4)) == [(0, "w"), (0, "b", 0), (0, "b", 1, 0), (1,)]


def test_grad_program_of_many_inputs_does_not_scan_its_outputs_per_input():
    # Each input's gradient was checked against every gradient before it by identity
    # (any(g is o for o in outs)): O(inputs²), 11 s for 10,000 inputs.
    n = 1500
    xs = [np.full(1, float(i)) for i in range(n)]
    program = ad.trace(lambda *a: ad.sum(ad.concatenate(a) ** 2), *xs)
    result = {}
    steps = helpers.generator_steps(lambda: result.setdefault("g", ad.grad_program(program)), "autodiff.py")
    assert steps < 10 * n
    grads = result["g"](*xs)
    np.testing.assert_array_equal(np.concatenate(grads), 2.0 * np.arange(n))
    # One Tensor as the gradient of two inputs (x + y) still gives each output its own node.
    both = ad.grad_program(ad.trace(lambda x, y: ad.sum(x + y), np.ones(2), np.ones(2)))
    assert len(set(both.outputs)) == 2


@pytest.mark.parametrize("create_graph", [False, True])
def test_backward_calls_vjp_parts_of_one_two_and_three_operands_with_and_without_parameters(create_graph):
    # The sweep passes one or two operands to a VJP part one by one and more (or parameters)
    # through *args / **params (autodiff._Sweep.visit): every way gives the closed form.
    x0 = np.array([[0.3, -1.2, 2.0], [0.5, 0.1, -0.4]])
    b0 = np.array([1.5, -0.5, 2.0])
    x = ad.Tensor(x0, requires_grad=True)
    b = ad.Tensor(b0, requires_grad=True)
    # tanh: one operand; multiply: two, b broadcast; where: three; sum over an axis: parameters.
    y = ad.sum(ad.where(x0 > 0, ad.tanh(x) * b, x), axis=1)
    ad.sum(y * y).backward(create_graph=create_graph)
    t = np.tanh(x0)
    inner = np.where(x0 > 0, t * b0, x0)
    ct = 2 * inner.sum(axis=1, keepdims=True) * np.ones_like(x0)
    dx = np.where(x0 > 0, ct * b0 * (1 - t * t), ct)
    db = np.where(x0 > 0, ct * t, 0.0).sum(axis=0)
    # A few ulps: tanh and the sums are computed by other numpy calls in the reference.
    np.testing.assert_allclose(x.grad.value, dx, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(b.grad.value, db, rtol=1e-13, atol=1e-15)
