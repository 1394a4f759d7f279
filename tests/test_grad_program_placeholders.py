"""grad_program records on placeholder values: checks on values belong to the program's calls.

``ad.grad_program`` has no values of the user's to record on, so it records
on placeholders (``autodiff.placeholder``). A program whose linear algebra
reaches a matrix that the placeholders make singular or rank-deficient (a
slice, a product of the inputs, a stack of rectangular matrices) could not be
differentiated at all, though its gradient exists at the user's values
(issue 24, item 10). Each case here is checked against ``ad.grad`` and
against central differences of the numpy function, and a singular real
input must still raise the library's error when the program runs.
"""

import numpy as np
import pytest

import autograd_dag as ad
from tests.helpers import central_gradient

RNG = np.random.default_rng(24)
R = RNG.standard_normal((2, 3))          # placeholders: ones, so R @ R.T and slices of R are singular
V = RNG.standard_normal(2)
S = RNG.standard_normal((2, 4, 3))       # placeholder ones: rank 1 in every matrix of the stack
W = RNG.standard_normal((2, 3, 4))

# name: (ad function, numpy function of the same arguments, arguments)
CASES = {
    "inv of a product": (lambda x: ad.sum(ad.linalg.inv(x @ x.T)),
                         lambda x: np.sum(np.linalg.inv(x @ x.T)), (R,)),
    "inv of a slice": (lambda x: ad.sum(ad.linalg.inv(x[:, :2]) ** 2),
                       lambda x: np.sum(np.linalg.inv(x[:, :2]) ** 2), (R,)),
    "solve with a product": (lambda x, v: ad.sum(ad.linalg.solve(x @ x.T, v)),
                             lambda x, v: np.sum(np.linalg.solve(x @ x.T, v)), (R, V)),
    "solve with a slice": (lambda x, v: ad.sum(ad.linalg.solve(x[:, 1:], v) ** 2),
                           lambda x, v: np.sum(np.linalg.solve(x[:, 1:], v) ** 2), (R, V)),
    "slogdet of a product": (lambda x: ad.linalg.slogdet(x @ x.T)[1],
                             lambda x: np.linalg.slogdet(x @ x.T)[1], (R,)),
    "slogdet of a slice": (lambda x: ad.linalg.slogdet(x[:, 1:])[1],
                           lambda x: np.linalg.slogdet(x[:, 1:])[1], (R,)),
    "matrix_power -2 of a product": (lambda x: ad.sum(ad.linalg.matrix_power(x @ x.T, -2)),
                                     lambda x: np.sum(np.linalg.matrix_power(x @ x.T, -2)), (R,)),
    "matrix_power -1 of a slice": (lambda x: ad.sum(ad.linalg.matrix_power(x[:, :2], -1)),
                                   lambda x: np.sum(np.linalg.matrix_power(x[:, :2], -1)), (R,)),
    "cholesky of a product": (lambda x: ad.sum(ad.linalg.cholesky(x @ x.T)),
                              lambda x: np.sum(np.linalg.cholesky(x @ x.T)), (R,)),
    "qr's R of a stack": (lambda s: ad.sum(ad.linalg.qr(s)[1] ** 2 * np.arange(9.0).reshape(3, 3)),
                          lambda s: np.sum(np.linalg.qr(s)[1] ** 2 * np.arange(9.0).reshape(3, 3)), (S,)),
    "qr's Q of a stack": (lambda s: ad.sum(ad.linalg.qr(s)[0] ** 3),
                          lambda s: np.sum(np.linalg.qr(s)[0] ** 3), (S,)),
    "svd's U of a tall stack": (lambda s: ad.sum(ad.linalg.svd(s, full_matrices=False)[0] ** 4),
                                lambda s: np.sum(np.linalg.svd(s, full_matrices=False)[0] ** 4), (S,)),
    "svd's Vh of a wide stack": (lambda s: ad.sum(ad.linalg.svd(s, full_matrices=False)[2] ** 4),
                                 lambda s: np.sum(np.linalg.svd(s, full_matrices=False)[2] ** 4), (W,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_grad_program_of_linear_algebra_singular_at_the_placeholders(name):
    f, f_np, args = CASES[name]
    argnums = tuple(range(len(args)))
    gprog = ad.grad_program(ad.trace(f, *args))          # raised ShapeError / UndefinedDerivativeError
    got = gprog(*args)
    got = got if isinstance(got, tuple) else (got,)
    expected = ad.grad(f, argnums=argnums)(*args)
    for i, (g, e) in enumerate(zip(got, expected)):
        # The two paths run the same rules in a different order (common subexpressions removed,
        # BLAS products regrouped): equal to rounding, not bit for bit.
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
        # Independent: central differences of the numpy function (error O(eps²) + rounding/eps).
        numeric = central_gradient(lambda x: f_np(*args[:i], x, *args[i + 1:]), args[i])
        np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-6)


def test_a_singular_matrix_at_the_users_values_still_raises_when_the_gradient_program_runs():
    gprog = ad.grad_program(ad.trace(lambda x: ad.sum(ad.linalg.inv(x[:, :2])), R))
    singular = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0]])
    with pytest.raises(ad.ShapeError, match=r"inv: Expect: invertible matrices. Actual: a singular matrix"):
        gprog(singular)
    gprog = ad.grad_program(ad.trace(lambda x, v: ad.sum(ad.linalg.solve(x @ x.T, v)), R, V))
    with pytest.raises(ad.ShapeError, match=r"solve: .*singular matrix a"):
        gprog(singular, V)
    gprog = ad.grad_program(ad.trace(lambda x: ad.sum(ad.linalg.cholesky(x @ x.T)), R))
    with pytest.raises(ad.ShapeError, match=r"cholesky: .*not positive definite"):
        gprog(singular)
    gprog = ad.grad_program(ad.trace(CASES["qr's Q of a stack"][0], S))
    with pytest.raises(ad.UndefinedDerivativeError, match=r"qr: the derivative of A = QR needs .* full rank"):
        gprog(np.ones_like(S))
    gprog = ad.grad_program(ad.trace(CASES["svd's U of a tall stack"][0], S))
    with pytest.raises(ad.UndefinedDerivativeError, match=r"svd: the derivative of a non-square .* non-zero singular"):
        gprog(np.ones_like(S))
    # ... and a call at regular values after that one gives the gradient.
    np.testing.assert_allclose(gprog(S), ad.grad(CASES["svd's U of a tall stack"][0])(S), rtol=1e-10, atol=1e-12)


def test_a_dead_attention_row_at_the_placeholders_is_checked_on_each_call():
    # The mask x > 1.5 is all False at the placeholder ones: checked_mask refused it while recording.
    def f(x):
        mask = x > 1.5
        q = x[:, :, None]                        # (2, 3, 1): three queries and keys per example
        return ad.sum(ad.nn.attention(q, q, q, mask=mask[:, None, :]))
    x = np.array([[0.5, 2.0, 3.0], [2.5, 0.1, 1.7]])
    gprog = ad.grad_program(ad.trace(f, x))
    np.testing.assert_allclose(gprog(x), ad.grad(f)(x), rtol=1e-10, atol=1e-12)
    with pytest.raises(ad.ShapeError, match=r"every key masked"):
        gprog(np.zeros_like(x))


def test_grad_program_of_something_not_a_program_is_refused_clearly():
    # ad.grad_program(None) raised AttributeError: 'NoneType' object has no attribute 'outputs'.
    with pytest.raises(ad.AutogradDagError, match=r"grad_program: expected a Program .*got NoneType"):
        ad.grad_program(None)
    with pytest.raises(ad.AutogradDagError, match=r"grad_program: expected a Program .*got function.*ad.grad"):
        ad.grad_program(lambda x: ad.sum(x))
    prog = ad.trace(lambda x: ad.sum(x * x), np.ones(3))
    with pytest.raises(ad.AutogradDagError, match=r"grad_program: wrt='x'; expected an input position"):
        ad.grad_program(prog, wrt="x")


def test_grad_program_holds_integer_inputs_fixed_as_grad_does():
    # The default differentiated every input, so token ids got a zero "gradient" of float dtype.
    def f(w, ids):
        return ad.sum(ad.tanh(ad.take(w, ids, 0)))
    w, ids = RNG.standard_normal((4, 2)), np.array([1, 3, 3])
    prog = ad.trace(f, w, ids)
    gprog = ad.grad_program(prog)
    assert [gprog.nodes[k].name for k in gprog.outputs] == [f"d{prog.name}/dw"]
    expected = np.zeros_like(w)                      # d/dw Σ tanh(w[ids]), rows counted with repeats
    np.add.at(expected, ids, 1 - np.tanh(w[ids]) ** 2)
    np.testing.assert_allclose(gprog(w, ids), expected, rtol=1e-14)   # (one array, as ad.grad(f)(w, ids))
    np.testing.assert_allclose(gprog(w, ids), ad.grad(f)(w, ids), rtol=1e-14)
    value, g = ad.grad_program(prog, with_value=True)(w, ids)
    np.testing.assert_allclose(value, np.sum(np.tanh(w[ids])), rtol=1e-14)
    np.testing.assert_allclose(g, expected, rtol=1e-14)
    # Asked for by position, an integer input is refused as grad(f, argnums=1) refuses it.
    with pytest.raises(ad.NotDifferentiableError, match=r"grad_program: input 1 \('ids'\) has dtype int64"):
        ad.grad_program(prog, wrt=1)
    with pytest.raises(ad.NotDifferentiableError, match=r"grad_program: input 1 \('ids'\) has dtype int64"):
        ad.grad_program(prog, wrt=(0, 1))
    only_ids = ad.trace(lambda ids: ad.sum(ad.take(np.arange(4.0), ids, 0)), ids)
    with pytest.raises(ad.NotDifferentiableError, match=r"grad_program: .* no floating-point input"):
        ad.grad_program(only_ids)


def test_an_index_out_of_range_at_the_placeholders_is_checked_on_each_call():
    # An integer placeholder (1) is out of range for a table of one row: take refused it while recording.
    def f(w, ids):
        return ad.sum(ad.tanh(ad.take(w, ids, 0)))
    w, ids = np.array([[0.3, 0.7]]), np.array([0, 0])
    gprog = ad.grad_program(ad.trace(f, w, ids))
    np.testing.assert_allclose(gprog(w, ids), 2 * (1 - np.tanh(w) ** 2), rtol=1e-14)
    with pytest.raises(ad.ShapeError, match=r"take: index 3 is out of range for a table of size 1"):
        gprog(w, np.array([0, 3]))


def test_named_grad_program_names_the_gradients_of_the_floating_inputs_it_returns():
    # With integer inputs held fixed, the named wrapper paired the outputs with every input
    # in turn: dX took the integer input's (missing) names.
    from autograd_dag import named as N
    X = N.NamedTensor(RNG.standard_normal((2, 3)), "seq layer")
    counts = N.NamedTensor(np.array([2, 3, 4]), "layer")
    prog = N.trace(lambda n, X: (X * n).nsum(("seq", "layer")), counts, X)
    gprog = N.grad_program(prog)
    assert [N.program_axes(gprog).get(k) for k in gprog.outputs] == [("seq", "layer")]
    np.testing.assert_array_equal(gprog(counts.value, X.value), np.broadcast_to(counts.value, (2, 3)))
