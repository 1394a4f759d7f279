"""vmap: every primitive of the table against a Python loop over the batch, and its compositions.

For each case of the primitive table (tests/cases_*.py), a batch of B
different argument sets is made; ``vmap`` of the case's function must equal
``np.stack`` of the function applied to each set in a Python loop — with every
argument batched, and with each argument batched alone (the others shared) —
and so must ``vmap(grad(...))``. Built-in primitives must not fall back to the
loop (no warning), except the documented cases listed below.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import batching
from tests.test_primitives_table import ALL_CASES, case_id, closure, make_args
from tests import helpers

B = 3
# Rules that loop by design: a convolution with per-example weights (batched w, or the
# weight gradient of per-example input and cotangent pairs, which sums over examples)
# needs a grouped convolution the library does not have. With only the input batched,
# conv2d, conv2d_bias and conv2d_input_grad do not loop; nor does conv2d_weight_grad with one
# operand batched.
LOOPING_WITH_BATCHED_WEIGHTS = {"conv2d", "conv2d_bias", "conv2d_input_grad"}
LOOPING_WITH_ALL_BATCHED = {"conv2d_weight_grad"}


def _batch(args, seed):
    """B argument sets: the case's arguments scaled by 1 ± small factors (signs, ties and kinks kept)."""
    rng = np.random.default_rng(seed)
    scales = 1.0 + 0.05 * rng.uniform(-1.0, 1.0, B)
    return [np.stack([a * s for s in scales]) for a in args]


def _drawn_batch(case):
    """B argument sets the case draws with B seeds, stacked (its shapes do not depend on the seed)."""
    sets = [make_args(case, seed) for seed in range(B)]
    assert all(np.shape(a) == np.shape(b) for s in sets for a, b in zip(s, sets[0])), case_id(case)
    return [np.stack([np.asarray(s[i]) for s in sets]) for i in range(len(sets[0]))]


def _loop(fn, batched, in_axes):
    outs = []
    for b in range(B):
        call = [a[b] if ax == 0 else a for a, ax in zip(batched, in_axes)]
        with ad.no_grad():
            out = fn(*[ad.Tensor(a) for a in call])
        outs.append(np.asarray(out.value if isinstance(out, ad.Tensor) else out))
    return np.stack(outs)


def _axes_choices(n):
    choices = [(0,) * n]
    if n > 1:
        choices += [tuple(0 if i == k else None for i in range(n)) for k in range(n)]
    return choices


def _check_no_loop(record, case, in_axes=(0,)):
    looped = [str(w.message) for w in record if "vmap:" in str(w.message)]
    allowed = ((LOOPING_WITH_BATCHED_WEIGHTS if in_axes[1:2] == (0,) else set())
               | (LOOPING_WITH_ALL_BATCHED if len(in_axes) > 1 and all(a == 0 for a in in_axes) else set()))
    allowed = [m for m in looped if not any(f"'{name}'" in m for name in allowed)]
    assert not allowed, f"{case_id(case)} fell back to a loop: {allowed}"


@pytest.mark.parametrize("case", ALL_CASES, ids=[case_id(c) for c in ALL_CASES])
def test_vmap_equals_a_loop_over_the_batch(case):
    g, wrt_args = closure(case, make_args(case))
    if wrt_args:
        batched = _batch(wrt_args, 0)
    else:
        # No differentiable argument (indices, masks, comparisons): every argument is batched,
        # the examples drawn by the case itself with B seeds.
        g, wrt_args = case.fn, make_args(case)
        batched = _drawn_batch(case)
    for in_axes in _axes_choices(len(wrt_args)):
        call = [a if ax == 0 else w for a, w, ax in zip(batched, wrt_args, in_axes)]
        expected = _loop(g, call, in_axes)
        batching._LOOPED.clear()
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            got = ad.vmap(g, in_axes=in_axes)(*call)
        _check_no_loop(record, case, in_axes)
        assert np.shape(got) == expected.shape, f"in_axes={in_axes}"
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=f"in_axes={in_axes}")


@pytest.mark.parametrize("case", ALL_CASES, ids=[case_id(c) for c in ALL_CASES])
def test_vmap_of_grad_equals_a_loop_over_the_batch(case):
    g, wrt_args = closure(case, make_args(case))
    if not wrt_args:
        pytest.skip("nothing to differentiate")
    with ad.no_grad():
        probe = g(*[ad.Tensor(a) for a in wrt_args])
    if probe.dtype.kind != "f":
        pytest.skip("no derivative (integer or boolean output)")
    weights = np.random.default_rng(1).standard_normal(probe.shape)
    loss = lambda *a: ad.sum(g(*a) * weights)  # noqa: E731
    dloss = ad.grad(loss, argnums=0)
    batched = _batch(wrt_args, 2)
    call = [batched[0]] + list(wrt_args[1:])
    in_axes = (0,) + (None,) * (len(wrt_args) - 1)
    expected = np.stack([dloss(batched[0][b], *wrt_args[1:]) for b in range(B)])
    batching._LOOPED.clear()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = ad.vmap(dloss, in_axes=in_axes)(*call)
    _check_no_loop(record, case)
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-11)

# ------------------------------------------------------------ compositions


RNG = np.random.default_rng(0)
XS = RNG.standard_normal((5, 3))
W = RNG.standard_normal((3, 2))


def _loss(w, x):
    return ad.sum(ad.tanh(x @ w) ** 2)


def test_per_example_gradients():
    got = ad.vmap(ad.grad(_loss), in_axes=(None, 0))(W, XS)
    # d/dW Σ tanh(xW)² = xᵀ (2 tanh(xW)(1 − tanh²(xW))), example by example.
    t = np.tanh(XS @ W)
    expected = np.einsum("bi,bj->bij", XS, 2 * t * (1 - t ** 2))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_grad_of_vmap_and_closures():
    def total(w):
        return ad.sum(ad.vmap(lambda x: _loss(w, x))(XS))
    np.testing.assert_allclose(ad.grad(total)(W), ad.grad(lambda w: _loss(w, XS))(W), rtol=1e-12)
    ad.check_grads(total, (W,), order=2)


def test_jit_vmap_and_vmap_jit_and_nested_vmap():
    f = lambda x, w: ad.tanh(x @ w)    # noqa: E731
    expected = np.tanh(XS @ W)
    np.testing.assert_allclose(ad.jit(ad.vmap(f, in_axes=(0, None)))(XS, W), expected, rtol=1e-14)
    np.testing.assert_allclose(ad.vmap(ad.jit(f), in_axes=(0, None))(XS, W), expected, rtol=1e-14)
    outer = ad.vmap(ad.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(None, 0))(XS[0], XS[1])
    np.testing.assert_allclose(outer, np.outer(XS[1], XS[0]), rtol=1e-14)


def test_vmap_of_jvp_and_of_vjp():
    f = lambda x: ad.tanh(x) * x        # noqa: E731
    tangents = RNG.standard_normal(XS.shape)
    got = ad.vmap(lambda x, t: ad.jvp(f, (x,), (t,))[1])(XS, tangents)
    np.testing.assert_allclose(got, ((1 - np.tanh(XS) ** 2) * XS + np.tanh(XS)) * tangents, rtol=1e-12)


def test_in_axes_out_axes_and_pytrees():
    got = ad.vmap(lambda p: p["a"] * p["b"], in_axes=1, out_axes=1)({"a": XS.T, "b": XS.T})
    np.testing.assert_allclose(got, (XS * XS).T, rtol=1e-14)
    constant = ad.vmap(lambda x: ad.Tensor(np.ones(2)) + 0.0)(XS)
    assert constant.shape == (5, 2)
    total, shared = ad.vmap(lambda x: (ad.sum(x), ad.Tensor(np.ones(2)) * 2.0), out_axes=(0, None))(XS)
    np.testing.assert_allclose(total, XS.sum(1))
    np.testing.assert_array_equal(shared, [2.0, 2.0])
    with pytest.raises(ad.AutogradDagError, match="out_axes=None"):
        ad.vmap(lambda x: x * 2.0, out_axes=None)(XS)


def test_vmap_errors():
    with pytest.raises(ad.ShapeError, match="different sizes"):
        ad.vmap(lambda a, b: a + b)(np.ones((2, 3)), np.ones((4, 3)))
    with pytest.raises(ad.AutogradDagError, match="batches no argument"):
        ad.vmap(lambda a: a, in_axes=(None,))(np.ones(2))
    with pytest.raises(ad.ShapeError, match="in_axes 2"):
        ad.vmap(lambda a: a, in_axes=2)(np.ones((2, 3)))


def test_a_primitive_without_a_rule_loops_with_one_warning():
    square = ad.primitive("vmap_test_square", lambda x: x * x,
                          vjp=lambda ct, out, x: (ct * 2.0 * x,), replace=True)
    batching._LOOPED.discard("vmap_test_square")
    with pytest.warns(UserWarning, match="'vmap_test_square' has no batching rule"):
        got = ad.vmap(lambda x: square(x))(XS)
    np.testing.assert_allclose(got, XS * XS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ad.vmap(lambda x: square(x))(XS)   # warned once only


def test_jacobian_and_hessian_on_vmap():
    A = RNG.standard_normal((4, 3))
    x = RNG.standard_normal(3)
    J = ad.jacobian(lambda x: ad.tanh(A @ x))(x)
    np.testing.assert_allclose(J, (1 - np.tanh(A @ x) ** 2)[:, None] * A, rtol=1e-13)
    H = ad.hessian(lambda x: ad.sum(x ** 3) + ad.sum(x[:2] * x[1:]))(x)
    expected = np.diag(6 * x) + np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], float)
    np.testing.assert_allclose(H, expected, rtol=1e-13, atol=1e-13)
    # Inside another transformation the Jacobian is recorded and differentiates again.
    d = ad.grad(lambda x: ad.sum(ad.jacobian(lambda y: y * y * x)(x)))(x)
    np.testing.assert_allclose(d, 4 * x, rtol=1e-13)   # J = diag(2y·x) at y = x: Σ 2x² -> 4x


def test_vmap_keeps_the_gradient_of_a_parameter_read_from_a_closure():
    # Eager vmap over arrays returned arrays, so W's gradient was silently dropped from backward().
    w = ad.Tensor(W, requires_grad=True)
    loss = ad.sum(ad.vmap(lambda x: ad.sum(ad.tanh(x @ w)) ** 2)(XS)) + ad.sum(w)
    loss.backward()
    t = np.tanh(XS @ W)
    expected = np.einsum("b,bi,bj->ij", 2 * t.sum(1), XS, 1 - t ** 2) + 1.0
    np.testing.assert_allclose(w.grad.value, expected, rtol=1e-12)


def test_empty_batches_and_out_of_range_out_axes():
    # A size-0 batch raised IndexError (no example to record on); out_axes=5 was taken modulo ndim.
    empty = ad.vmap(lambda x: ad.tanh(x @ W))(np.zeros((0,) + XS.shape[1:]))
    assert empty.shape == (0,) + W.shape[1:]
    assert ad.vmap(ad.grad(lambda x: ad.sum(ad.log(x))))(np.zeros((0, 3))).shape == (0, 3)
    with pytest.raises(ad.ShapeError, match="out_axes 5"):
        ad.vmap(lambda x: x * 2.0, out_axes=5)(XS)
    with pytest.raises(ad.ShapeError, match="out_axes -4"):
        ad.vmap(lambda x: x * 2.0, out_axes=-4)(XS)
    np.testing.assert_allclose(ad.vmap(lambda x: x * 2.0, out_axes=-1)(XS), 2.0 * XS.T)


def test_empty_batches_through_folded_and_looping_rules():
    # A size-0 batch through a rule that folds the batch into N (max_pool2d, conv2d) divided by
    # zero (ZeroDivisionError); through the loop (conv2d with per-example weights) it stacked
    # no results (ShapeError). numpy's empty results: shape (0,) + one example's.
    x = np.zeros((0, 1, 2, 4, 4))
    assert ad.vmap(lambda a: ad.max_pool2d(a, 2))(x).shape == (0, 1, 2, 2, 2)
    assert ad.vmap(lambda a, w: ad.conv2d(a, w), (0, None))(x, np.ones((3, 2, 3, 3))).shape == (0, 1, 3, 2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the loop's one-time warning)
        assert ad.vmap(lambda a, w: ad.conv2d(a, w))(x, np.ones((0, 3, 2, 3, 3))).shape == (0, 1, 3, 2, 2)
    g = ad.vmap(ad.grad(lambda a: ad.sum(ad.max_pool2d(a, 2))))(x)
    assert g.shape == x.shape and g.dtype == np.float64


def test_jacobian_and_hessian_of_a_tensor_carry_its_gradient_to_backward():
    # On a Tensor requiring a gradient, grad returns a recorded Tensor; the Jacobian (vmap of
    # the VJP) came back as numbers, so a loss using it silently lost that part of w.grad.
    x = np.array([0.3, -0.8, 1.2])
    w = ad.Tensor(x, requires_grad=True)
    J = ad.jacobian(lambda a: ad.sin(a) * a)(w)
    (ad.sum(J) + ad.sum(w)).backward()
    np.testing.assert_allclose(w.grad.value, 2 * np.cos(x) - x * np.sin(x) + 1.0, rtol=1e-12)
    w = ad.Tensor(x, requires_grad=True)
    H = ad.hessian(lambda a: ad.sum(a ** 4))(w)  # diag(12 a²)
    ad.sum(H).backward()
    np.testing.assert_allclose(w.grad.value, 24 * x, rtol=1e-12)
    # On numbers, a Jacobian stays numbers.
    assert isinstance(ad.jacobian(lambda a: ad.sin(a) * a)(x), np.ndarray)


def test_empty_batches_of_matrix_factorizations_and_shared_dropout_seeds():
    # eigh and svd packed their factors with reshape(..., -1), undetermined for an empty stack
    # (ValueError); an empty batch was recorded on zeros, singular for inv and solve; a seed shared
    # by all examples read x[0] of an empty batch. numpy's empty results: (0,) + one example's shape.
    a = np.zeros((0, 3, 3))
    w, v = ad.linalg.eigh(ad.Tensor(a))
    assert (w.shape, v.shape) == tuple(x.shape for x in np.linalg.eigh(a))
    assert ad.vmap(ad.linalg.eigvalsh)(a).shape == (0, 3)
    assert ad.vmap(lambda m: ad.linalg.svd(m, compute_uv=False))(a[..., :2]).shape == (0, 2)
    assert ad.vmap(ad.linalg.inv)(a).shape == (0, 3, 3)
    assert ad.vmap(ad.linalg.solve, (0, None))(a, np.ones(3)).shape == (0, 3)
    from autograd_dag.primitives.random import dropout_mask
    assert ad.vmap(lambda x: dropout_mask(x, 7, 0.5))(np.zeros((0, 4))).shape == (0, 4)
    # The shared seed still gives every example the one mask f gives an example.
    xs = np.ones((3, 6))
    np.testing.assert_array_equal(ad.vmap(lambda x: x * dropout_mask(x, 7, 0.5))(xs),
                                  np.stack([dropout_mask(np.ones(6), 7, 0.5).value] * 3))


def test_vmap_of_hvp_gives_numbers_as_hvp_does():
    # The inner grad's own slot (a leaf requiring a gradient, made inside f) is no parameter
    # read from a closure: vmap gave a Tensor that required a gradient, unlike hvp and
    # vmap(grad(f)). The rows are the Hessian of sum(x³), diag(6x).
    f = lambda x: (x ** 3).sum()
    x = np.array([0.5, 1.0, 2.0])
    rows = ad.vmap(lambda v: ad.hvp(f, x, v))(np.eye(3))
    assert type(rows) is np.ndarray
    np.testing.assert_allclose(rows, np.diag(6 * x), rtol=1e-12)
    # A parameter read from a closure still makes vmap record (its gradient must reach it).
    w = ad.Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    out = ad.vmap(lambda v: ad.hvp(f, x, v) * w)(np.eye(3))
    assert isinstance(out, ad.Tensor) and out.requires_grad
    out.sum().backward()
    np.testing.assert_allclose(w.grad.value, 6 * x, rtol=1e-12)


def _eager(f):
    """f on numbers, run eagerly without recording: the unbatched function the references loop over."""
    def run(x):
        with ad.no_grad():
            return np.asarray(f(ad.Tensor(x)).value)
    return run


def test_max_pool2d_of_examples_with_two_axes_batches_the_batch_not_the_rows():
    # The rule folded the batch into the first axis as conv2d's N, but pooling maps over every
    # axis before (H, W): an example of shape (1, 5) became rows of one (3·1, 5) image, and the
    # split back was a ShapeError (reshape of (2, 2) to (3, 1, 2)). Likewise its VJP and JVP.
    xs = np.random.default_rng(0).standard_normal((3, 1, 5))
    pool = lambda a: ad.max_pool2d(a, (1, 3), stride=(2, 2))  # noqa: E731
    got = ad.vmap(pool)(xs)
    np.testing.assert_array_equal(got, np.stack([_eager(pool)(x) for x in xs]))   # maxima: copied values
    w = np.array([[2.0, -1.0]])
    loss = lambda a: ad.sum(pool(a) * w)  # noqa: E731
    per_example = np.stack([helpers.central_gradient(lambda x: float(np.sum(_eager(pool)(x) * w)), x)
                            for x in xs])
    # Central differences of a piecewise-linear function away from ties: exact up to rounding of x ± eps.
    np.testing.assert_allclose(ad.vmap(ad.grad(loss))(xs), per_example, rtol=1e-7, atol=1e-7)
    x = xs[0]
    np.testing.assert_allclose(ad.jacobian(pool)(x), helpers.central_jacobian(_eager(pool), x),
                               rtol=1e-7, atol=1e-7)
    # Stacks of examples with one and two leading axes, and the gradient's own rules batched.
    for shape in [(3, 2, 4, 5), (3, 2, 1, 4, 5)]:
        xs = np.random.default_rng(1).standard_normal(shape)
        np.testing.assert_array_equal(ad.vmap(pool)(xs), np.stack([_eager(pool)(x) for x in xs]))
        g = lambda a: ad.grad(lambda b: ad.sum(pool(b) ** 2))(a)  # noqa: E731
        np.testing.assert_allclose(ad.vmap(g)(xs), np.stack([g(x) for x in xs]), rtol=1e-14)
        np.testing.assert_allclose(ad.jacobian(g)(xs[0]), helpers.central_jacobian(g, xs[0]),
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", [
    lambda a: ad.linalg.svd(a, full_matrices=False)[0],
    lambda a: ad.linalg.svd(a, full_matrices=False)[2],
    lambda a: ad.linalg.cond(a, -2),
    lambda a: ad.linalg.cond(a, 2),
    lambda a: ad.linalg.norm(a, -2),
    lambda a: ad.linalg.norm(a, 2),
], ids=["svd-u", "svd-vh", "cond-minus-2", "cond-2", "norm-minus-2", "norm-2"])
@pytest.mark.parametrize("shape", [(2, 3), (3, 2)])
def test_jacobian_and_hessian_through_the_svd_of_a_non_square_matrix(f, shape):
    # The VJP's 1/s (svd_reciprocal) of s shared by the batch of unit cotangents and a batched
    # projection came back unbatched: jacobian raised a ShapeError (reshape of (2,) to (2, 1, 2)).
    A = np.random.default_rng(2).standard_normal(shape)
    J = ad.jacobian(f)(A)
    # Central differences of smooth functions (distinct singular values): O(eps²) truncation.
    np.testing.assert_allclose(J, helpers.central_jacobian(_eager(f), A), rtol=1e-6, atol=1e-7)
    if J.ndim == A.ndim:   # scalar functions: the Hessian against differences of the gradient
        g = ad.grad(f)
        np.testing.assert_allclose(ad.hessian(f)(A), helpers.central_jacobian(g, A), rtol=1e-6, atol=1e-6)
    # And the unit cotangents one by one, the loop the batched VJP replaces.
    out, f_vjp = ad.vjp(f, A)
    basis = np.eye(np.size(out)).reshape((np.size(out),) + np.shape(out))
    np.testing.assert_allclose(J.reshape(basis.shape[:1] + A.shape), np.stack([f_vjp(e)[0] for e in basis]),
                               rtol=1e-12, atol=1e-14)


def test_jacobian_and_hessian_take_a_tuple_of_argnums_as_jax_does():
    # ad.jacobian(f, argnums=(0, 1)) raised a raw TypeError (argnums % len(args)).
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(3), rng.standard_normal(2)
    A = rng.standard_normal((2, 3))
    f = lambda x, y: ad.tanh(A @ x) * y  # noqa: E731
    jx, jy = ad.jacobian(f, argnums=(0, 1))(x, y)
    # independent: J_x = diag(y (1 - tanh²(Ax))) A, J_y = diag(tanh(Ax)); same ops, rounding only
    np.testing.assert_allclose(jx, (y * (1 - np.tanh(A @ x) ** 2))[:, None] * A, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(jy, np.diag(np.tanh(A @ x)), rtol=1e-13, atol=1e-15)
    (only,) = ad.jacobian(f, argnums=(1,))(x, y)
    np.testing.assert_allclose(only, jy, rtol=1e-13, atol=1e-15)
    # negative argnums count from the end, as an int argnum does
    np.testing.assert_allclose(ad.jacobian(f, argnums=(-1,))(x, y)[0], jy, rtol=1e-13, atol=1e-15)

    g = lambda x, y: ad.sum(x ** 2 * y[0] + x * y[1] ** 3)  # noqa: E731
    (hxx, hxy), (hyx, hyy) = ad.hessian(g, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(hxx, 2 * y[0] * np.eye(3), rtol=1e-13)
    np.testing.assert_allclose(hxy, np.stack([2 * x, 3 * y[1] ** 2 * np.ones(3)], axis=1), rtol=1e-13)
    np.testing.assert_allclose(hyx, hxy.T, rtol=1e-13)
    np.testing.assert_allclose(hyy, np.array([[0, 0], [0, 6 * y[1] * x.sum()]]), rtol=1e-13, atol=1e-15)
    gx, gy = ad.grad(g, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 2 * x * y[0] + y[1] ** 3, rtol=1e-13)
    value, (gx2, gy2) = ad.value_and_grad(g, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gy2, [np.sum(x ** 2), 3 * y[1] ** 2 * np.sum(x)], rtol=1e-13)


@pytest.mark.parametrize("fn", [ad.grad, ad.value_and_grad, ad.jacobian, ad.hessian])
@pytest.mark.parametrize("argnums", [1.5, "0", True, (0, 0.5), None])
def test_argnums_that_is_not_an_int_or_a_tuple_of_ints_is_refused_by_name(fn, argnums):
    with pytest.raises(ad.AutogradDagError, match=r"argnums must be an int or a tuple of ints"):
        fn(lambda x, y: ad.sum(x * y), argnums=argnums)(np.ones(2), np.ones(2))
