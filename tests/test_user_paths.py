"""Paths a new user walks: has_aux, retain_grad, integer inputs, custom-rule mistakes,
primitive redefinition, detect_anomaly, programs called by input name.

Each path ends in the right result or one clear library error.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_dag as ad

X = np.array([0.5, -1.0, 2.0])

# ------------------------------------------------------------- has_aux


def _loss_with_aux(x):
    y = x * x
    return ad.sum(y), {"y": y, "step": 3}


def test_grad_has_aux_returns_the_auxiliary_values_as_arrays():
    g, aux = ad.grad(_loss_with_aux, has_aux=True)(X)
    np.testing.assert_allclose(g, 2 * X)
    assert isinstance(aux["y"], np.ndarray) and aux["step"] == 3
    np.testing.assert_allclose(aux["y"], X * X)


def test_value_and_grad_and_vjp_has_aux():
    (value, aux), g = ad.value_and_grad(_loss_with_aux, has_aux=True)(X)
    assert float(value) == pytest.approx(float(np.sum(X * X)))
    np.testing.assert_allclose(g, 2 * X)
    np.testing.assert_allclose(aux["y"], X * X)
    out, f_vjp, aux = ad.vjp(lambda x: (x * 3.0, "label"), X, has_aux=True)
    np.testing.assert_allclose(out, 3 * X)
    np.testing.assert_allclose(f_vjp(np.ones(3))[0], [3.0, 3.0, 3.0])
    assert aux == "label"


def test_has_aux_composes_and_refuses_a_non_pair():
    # The gradient of the gradient with an auxiliary value at each level.
    h = ad.grad(lambda x: (ad.sum(ad.grad(_loss_with_aux, has_aux=True)(x)[0] ** 2), 0), has_aux=True)
    np.testing.assert_allclose(h(X)[0], 8 * X)  # d/dx Σ(2x)² = 8x
    with pytest.raises(ad.AutogradDagError, match=r"has_aux=True\): f must return a pair"):
        ad.grad(lambda x: ad.sum(x), has_aux=True)(X)

# --------------------------------------------------------- retain_grad


def test_retain_grad_fills_an_intermediate_gradient():
    x = ad.Tensor(X, requires_grad=True)
    y = ad.tanh(x).retain_grad()
    z = ad.sum(y * y)
    z.backward()
    np.testing.assert_allclose(y.grad.value, 2 * np.tanh(X))              # ∂z/∂y = 2y
    np.testing.assert_allclose(x.grad.value, 2 * np.tanh(X) * (1 - np.tanh(X) ** 2))


def test_retain_grad_accumulates_and_works_with_create_graph():
    x = ad.Tensor(X, requires_grad=True)
    y = (x * 2.0).retain_grad()
    ad.sum(y * y).backward(create_graph=True)
    assert y.grad.prim is not None  # recorded: it can be differentiated again
    np.testing.assert_allclose(y.grad.value, 4 * X)
    ad.sum(y).backward()
    np.testing.assert_allclose(y.grad.value, 4 * X + 1)

# ----------------------------------------------------------- integers


def test_one_rule_for_integer_tensors_that_require_a_gradient():
    a = ad.Tensor([1, 2], requires_grad=True)
    b = ad.Tensor(np.arange(1, 3), requires_grad=True)
    assert a.dtype == b.dtype == np.float64
    np.testing.assert_array_equal(a.value, b.value)


def test_grad_refuses_an_integer_argument_instead_of_returning_zeros():
    with pytest.raises(ad.NotDifferentiableError, match="grad requires real floating-point inputs.*int64"):
        ad.grad(lambda x: ad.sum(x * x))(np.arange(3))
    # An index argument left out of argnums is fine.
    g = ad.grad(lambda x, i: ad.sum(ad.take(x, i)), argnums=0)(X, np.array([0, 2]))
    np.testing.assert_allclose(g, [1.0, 0.0, 1.0])

# ------------------------------------------------ custom rule mistakes


def test_numpy_written_vjp_works_once_and_is_refused_clearly_at_second_order():
    cube = ad.primitive("user_paths_cube_np", lambda x: x ** 3,
                        vjp=lambda ct, out, x: (ct * 3.0 * np.asarray(x) ** 2,), replace=True)
    assert float(ad.grad(lambda x: cube(x))(2.0)) == 12.0
    with pytest.raises(ad.NotDifferentiableError,
                       match="VJP rule of 'user_paths_cube_np' failed on recorded Tensors.*ad operations"):
        ad.grad(ad.grad(lambda x: cube(x)))(2.0)


def test_vjp_returning_a_bare_cotangent_is_told_to_return_a_tuple():
    twice = ad.primitive("user_paths_twice", lambda x: 2.0 * x, vjp=lambda ct, out, x: ct * 2.0, replace=True)
    with pytest.raises(ad.AutogradDagError, match="VJP rule of 'user_paths_twice' returned a .*must return a tuple"):
        ad.grad(lambda x: ad.sum(twice(x)))(X)


def test_check_grads_without_a_jvp_rule_says_so():
    cube = ad.primitive("user_paths_cube_nojvp", lambda x: x ** 3,
                        vjp=lambda ct, out, x: (ct * 3.0 * x * x,), replace=True)
    with pytest.raises(ad.GradientCheckError,
                       match=r"no JVP rule for 'user_paths_cube_nojvp'.*modes=\('rev',\)"):
        ad.check_grads(lambda x: cube(x), (X,))
    ad.check_grads(lambda x: cube(x), (X,), modes=("rev",))


def test_user_primitive_redefinition_warns_and_builtins_are_protected():
    ad.primitive("user_paths_redefined", lambda x: x + 1.0, vjp=lambda ct, out, x: (ct,), replace=True)
    with pytest.warns(UserWarning, match="redefining primitive 'user_paths_redefined'"):
        f = ad.primitive("user_paths_redefined", lambda x: x + 2.0, vjp=lambda ct, out, x: (ct,))
    assert float(f(ad.Tensor(1.0)).value) == 3.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ad.primitive("user_paths_redefined", lambda x: x + 3.0, vjp=lambda ct, out, x: (ct,), replace=True)
    with pytest.raises(ad.AutogradDagError, match="'tanh' is a built-in primitive.*ad.primitive|ad.primitive.*'tanh'"):
        ad.primitive("tanh", np.tanh)

# ------------------------------------------------------ detect_anomaly


def test_detect_anomaly_names_an_input_nan_and_silences_numpy():
    x = ad.Tensor([1.0, np.nan], name="x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ad.AnomalyError, match="input 'x' of 'multiply' contains NaN.*from outside"):
            with ad.detect_anomaly():
                x * 2.0
        with pytest.raises(ad.AnomalyError, match="forward value of 'log' contains NaN"):
            with ad.detect_anomaly():
                ad.log(ad.Tensor([-1.0]))

# ---------------------------------------------------- programs by name


def test_program_inputs_by_name_and_errors_with_the_callers_line():
    prog = ad.trace(lambda x, w: ad.sum(x * w), np.ones(2), np.ones(2))
    assert float(prog(w=np.full(2, 2.0), x=np.ones(2))) == 4.0
    assert float(prog(np.ones(2), w=np.full(2, 3.0))) == 6.0
    with pytest.raises(ad.ProgramInputError, match=r"no input named 'q'.*\(x, w\).*test_user_paths.py:\d+"):
        prog(np.ones(2), q=np.ones(2))
    with pytest.raises(ad.ProgramInputError, match="given both by position and by name"):
        prog(np.ones(2), x=np.ones(2))
    with pytest.raises(ad.ProgramInputError, match=r"expects shape \(2,\), got \(3,\).*test_user_paths.py:\d+"):
        prog(np.ones(3), np.ones(2))


def test_grad_program_of_a_loss_built_from_parameters():
    w = ad.Tensor(X, requires_grad=True, name="w")
    prog = ad.Program.from_outputs((), ad.sum(ad.tanh(w * 2.0)))
    gprog = ad.grad_program(prog)
    assert [gprog.nodes[k].name for k in gprog.inputs] == ["w"]
    np.testing.assert_allclose(gprog(X), 2 * (1 - np.tanh(2 * X) ** 2), rtol=1e-14)
    with pytest.raises(ad.AutogradDagError, match="no inputs and no parameters"):
        ad.grad_program(ad.Program.from_outputs((), ad.sum(ad.Tensor(X) * 2.0)))


def test_grad_program_of_linear_algebra_is_recorded_on_a_nonsingular_placeholder():
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    for f in (lambda a: ad.linalg.det(a), lambda a: ad.sum(ad.linalg.inv(a)),
              lambda a: ad.sum(ad.linalg.cholesky(a @ a.T))):
        np.testing.assert_allclose(ad.grad_program(ad.trace(f, a))(a), ad.grad(f)(a), rtol=1e-12)


def test_a_vjp_rule_with_the_wrong_number_of_cotangents_or_a_python_number_is_named():
    # Too few cotangents raised a bare IndexError ("tuple index out of range"), too many
    # were dropped silently, and a Python number as cotangent raised AttributeError.
    few = ad.primitive("user_paths_few", lambda a, b: a * b, vjp=lambda ct, out, a, b: (ct * b,),
                       jvp=lambda t, out, a, b: t[0] * b, replace=True)
    many = ad.primitive("user_paths_many", lambda x: x * x, vjp=lambda ct, out, x: (ct * 2 * x, ct),
                        jvp=lambda t, out, x: t[0] * 2 * x, replace=True)
    number = ad.primitive("user_paths_number", lambda x: 2.0 * x, vjp=lambda ct, out, x: (2.0,),
                          jvp=lambda t, out, x: t[0] * 2.0, replace=True)
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    with pytest.raises(ad.AutogradDagError, match=r"VJP rule of 'user_paths_few' returned 1 cotangent.* 2 inputs"):
        ad.grad(lambda a, b: few(a, b).sum(), argnums=(0, 1))(a, b)
    with pytest.raises(ad.AutogradDagError, match=r"VJP rule of 'user_paths_many' returned 2 cotangents.* 1 input"):
        ad.grad(lambda x: many(x).sum())(a)
    x = ad.Tensor(a, requires_grad=True)
    with pytest.raises(ad.AutogradDagError, match=r"VJP rule of 'user_paths_many' returned 2 cotangents"):
        many(x).sum().backward()
    with pytest.raises(ad.AutogradDagError, match=r"VJP of 'user_paths_number' returned a float.*test_user_paths"):
        ad.grad(lambda x: number(x))(3.0)


def test_primitive_definition_checks_its_name_and_rules():
    # A non-string name raised "__name__ must be set to a string object"; a rule that is
    # not callable was accepted and failed only when differentiated, far from its definition.
    with pytest.raises(ad.AutogradDagError, match=r"ad.primitive: the name must be a non-empty string, got 3"):
        ad.primitive(3, np.sin)
    with pytest.raises(ad.AutogradDagError, match=r"ad.primitive\('user_paths_bad_vjp'\): vjp must be a function"):
        ad.primitive("user_paths_bad_vjp", np.sin, vjp=3)
    with pytest.raises(ad.AutogradDagError, match=r"ad.primitive\('user_paths_bad_jvp'\): jvp must be a function"):
        ad.primitive("user_paths_bad_jvp", np.sin, jvp="cos")
    assert "user_paths_bad_vjp" not in ad.PRIMITIVES  # nothing half-registered


@pytest.mark.parametrize("transform", [
    lambda f: ad.trace(f, np.ones(2)),
    lambda f: ad.jit(f)(np.ones(2)),
    lambda f: ad.vmap(f)(np.ones((3, 2))),
    lambda f: ad.grad(f)(np.ones(2)),
    lambda f: ad.jvp(f, (np.ones(2),), (np.ones(2),)),
])
def test_a_function_that_returns_none_is_named(transform):
    # A forgotten return gave "cannot make a numeric array of a NoneType".
    def forgot_return(x):
        ad.sum(x * 2.0)
    with pytest.raises(ad.AutogradDagError, match=r"forgot_return returned None.*return statement"):
        transform(forgot_return)
