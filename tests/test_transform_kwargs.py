"""Keyword arguments through the transformations, as a JAX user passes them.

``grad``/``value_and_grad``/``jacobian``/``hessian`` (and the named ones) pass keyword arguments
to ``f`` undifferentiated (``argnums`` counts positional arguments); ``vmap`` batches them along
axis 0; ``jit`` makes them program inputs keyed by name (never constants), and takes
``static_argnums``/``static_argnames``; ``checkpoint`` makes them operands of its node,
differentiated like positional ones. Each is compared with JAX on the same function (an
independent reference), or with the positional call and with the function without the
transformation.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import named
from autograd_dag.jitting import retrace_jit

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

# Ours against XLA's in float64: the same formula with other summation orders and other tanh/exp
# code, a few ulps apart amplified by at most a few terms: 1e-10 relative leaves a wide margin.
# In float32 the same reasoning at float32's epsilon (1.2e-7) with sums of <= 12 terms: 1e-5.
TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=1e-5, atol=1e-6)}


# Float64 in JAX for every comparison here (the fixture is tests/conftest.py's).
pytestmark = pytest.mark.usefixtures("jax_x64")


def loss_of(m):
    """A scalar loss written once for ``m`` = autograd_dag or jax.numpy; ``scale`` and ``bias`` by keyword."""
    def loss(w, x, scale=1.0, bias=0.0):
        return m.sum(m.tanh(x @ w + bias) ** 2) * scale
    return loss


def data(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=3).astype(dtype), rng.normal(size=(4, 3)).astype(dtype),
            dtype(1.5), rng.normal(size=4).astype(dtype))


def close(ours, theirs, dtype=np.float64):
    ours_leaves, theirs_leaves = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves)
    for a, b in zip(ours_leaves, theirs_leaves):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, **TOL[dtype])


# ------------------------------------------------------------------ grad and friends


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_grad_passes_keywords_undifferentiated_as_jax(dtype):
    w, x, scale, bias = data(dtype)
    ours = ad.grad(loss_of(ad), argnums=(0, 1))(w, x, scale=scale, bias=bias)
    theirs = jax.grad(loss_of(jnp), argnums=(0, 1))(w, x, scale=scale, bias=bias)
    close(ours, theirs, dtype)
    # the same as the positional call
    close(ours, ad.grad(loss_of(ad), argnums=(0, 1))(w, x, scale, bias), dtype)
    assert ours[0].dtype == dtype


def test_value_and_grad_with_keywords_and_aux():
    w, x, scale, bias = data()

    def with_aux(m):
        return lambda w, x, scale=1.0: (loss_of(m)(w, x, scale=scale), m.sum(x) * scale)
    (value, aux), g = ad.value_and_grad(with_aux(ad), has_aux=True)(w, x, scale=scale)
    (value_j, aux_j), g_j = jax.value_and_grad(with_aux(jnp), has_aux=True)(w, x, scale=scale)
    close((value, aux, g), (value_j, aux_j, g_j))
    g2, aux2 = ad.grad(with_aux(ad), has_aux=True)(w, x, scale=scale)
    close((g2, aux2), (g_j, aux_j))


def test_argnums_counts_positional_arguments_only():
    w, x, scale, _ = data()
    with pytest.raises(ad.AutogradDagError, match=r"argnums=1 .*1 positional.*'x'.*never differentiated"):
        ad.grad(loss_of(ad), argnums=1)(w, x=x)
    with pytest.raises(TypeError):   # JAX refuses it too
        jax.grad(loss_of(jnp), argnums=1)(w, x=x)


def test_a_keyword_argument_carries_an_outer_derivative():
    # d/ds of grad(loss)(w, x, scale=s): the keyword is an input of the outer grad (nested mode).
    w, x, scale, bias = data()
    ours = ad.grad(lambda s: ad.sum(ad.grad(loss_of(ad))(w, x, scale=s, bias=bias)))(scale)
    theirs = jax.grad(lambda s: jnp.sum(jax.grad(loss_of(jnp))(w, x, scale=s, bias=bias)))(scale)
    close(ours, theirs)
    assert abs(float(ours)) > 1e-3   # (not a vacuous zero)


def test_jacobian_and_hessian_with_keywords():
    w, x, scale, bias = data()
    close(ad.jacobian(lambda w, x, bias: ad.tanh(x @ w + bias))(w, x, bias=bias),
          jax.jacrev(lambda w, x, bias: jnp.tanh(x @ w + bias))(w, x, bias=bias))
    close(ad.jacobian(lambda w, x, bias: ad.tanh(x @ w + bias), argnums=(0, 1))(w, x, bias=bias),
          jax.jacrev(lambda w, x, bias: jnp.tanh(x @ w + bias), argnums=(0, 1))(w, x, bias=bias))
    close(ad.hessian(loss_of(ad))(w, x, scale=scale, bias=bias),
          jax.hessian(loss_of(jnp))(w, x, scale=scale, bias=bias))
    close(ad.hessian(loss_of(ad), argnums=(0, 1))(w, x, scale=scale, bias=bias),
          jax.hessian(loss_of(jnp), argnums=(0, 1))(w, x, scale=scale, bias=bias))


def test_named_grad_and_value_and_grad_take_keywords():
    rng = np.random.default_rng(1)
    W = named.NamedTensor(rng.normal(size=(2, 3)), "hidden layer")
    x = named.NamedTensor(rng.normal(size=3), "layer")

    def f(W, x, scale=1.0):
        return named.ndot(W, x, "layer").tanh().nsum("hidden") * scale
    g = named.grad(f)(W, x=x, scale=2.0)
    assert g.names == ("hidden", "layer")
    expected = jax.grad(lambda W, x, scale: jnp.sum(jnp.tanh(W @ x)) * scale)(
        W.align("hidden", "layer").value, x.value, scale=2.0)
    close(g.align("hidden", "layer").value, expected)
    value, g2 = named.value_and_grad(f)(W, x=x, scale=2.0)
    close(g2.align("hidden", "layer").value, expected)
    close(value, jnp.sum(jnp.tanh(W.align("hidden", "layer").value @ x.value)) * 2.0)


# ------------------------------------------------------------------ jit: keyword arguments


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jit_keywords_are_inputs_as_jax(dtype):
    w, x, scale, bias = data(dtype)
    step = ad.jit(ad.value_and_grad(loss_of(ad)))
    theirs = jax.jit(jax.value_and_grad(loss_of(jnp)))
    close(step(w, x, scale=scale, bias=bias), theirs(w, x, scale=scale, bias=bias), dtype)
    # a new value is seen (not a constant of the program): one program for both calls
    close(step(w, x, scale=2 * scale, bias=-bias), theirs(w, x, scale=2 * scale, bias=-bias), dtype)
    assert len(step.programs) == 1
    # the order keywords are passed in does not matter
    close(step(w, x, bias=bias, scale=scale), theirs(w, x, scale=scale, bias=bias), dtype)
    assert len(step.programs) == 1


def test_jit_keywords_retrace_on_shape_dtype_structure_and_names():
    w, x, scale, bias = data()
    f = ad.jit(loss_of(ad))
    f(w, x, scale=scale)
    f(w, x, scale=scale * 3)
    assert len(f.programs) == 1
    f(w, x, scale=np.full(4, 2.0))                 # a new shape
    f(w, x, scale=np.float32(2.0))                 # a new dtype
    f(w, x, bias=bias)                             # another name
    f(w, x, scale, bias)                           # positionally: no keyword names, its own program
    assert len(f.programs) == 5
    expected = jax.jit(loss_of(jnp))(w, x, scale=np.full(4, 2.0))
    close(f(w, x, scale=np.full(4, 2.0)), expected)
    assert len(f.programs) == 5


def test_jit_nested_keyword_argument_and_program_input_names():
    w, x, _, bias = data()

    def f(x, params):
        return ad.sum(ad.tanh(x @ params["w"] + params["b"]))
    fast = ad.jit(f)
    ours = fast(x, params={"w": w, "b": bias})
    close(ours, jnp.sum(jnp.tanh(x @ w + bias)))
    close(fast(x, params={"w": -w, "b": bias}), jnp.sum(jnp.tanh(x @ -w + bias)))
    (program, _), = fast.programs.values()
    assert [program.nodes[k].name for k in program.inputs] == ["x0", "params.w", "params.b"]


def test_jit_python_number_keyword_is_weak_as_a_positional_one():
    w, x, _, _ = data(np.float32)
    out = ad.jit(loss_of(ad))(w, x, scale=2.0)
    assert out.dtype == np.float32
    close(out, jax.jit(loss_of(jnp))(w, x, scale=np.float32(2.0)), np.float32)


def test_jit_refuses_a_non_numeric_keyword_naming_it():
    w, x, _, _ = data()
    f = ad.jit(lambda w, x, act="tanh": ad.sum(getattr(ad, act)(x @ w)))
    with pytest.raises(ad.TracingError, match=r"jit: keyword argument 'act' is str .*static_argnames='act'"):
        f(w, x, act="sin")


def test_jit_passes_keywords_through_inside_another_transformation():
    w, x, scale, bias = data()
    inner = ad.jit(loss_of(ad))
    # differentiated through the keyword argument of a jit function called on Tensors
    ours = ad.grad(lambda s, w: inner(w, x, scale=s, bias=bias), argnums=(0, 1))(scale, w)
    theirs = jax.grad(lambda s, w: jax.jit(loss_of(jnp))(w, x, scale=s, bias=bias), argnums=(0, 1))(scale, w)
    close(ours, theirs)
    assert len(inner.programs) == 0   # recorded through f, no program of its own
    # and under vmap, a keyword batched
    xs = np.stack([x, 2 * x])
    close(ad.vmap(lambda x: inner(w, x, scale=scale))(xs),
          jax.vmap(lambda x: loss_of(jnp)(w, x, scale=scale))(xs))


def test_jit_keyword_program_traced_again_after_retrace_jit():
    w, x, scale, _ = data()
    f = ad.jit(loss_of(ad))
    f(w, x, scale=scale)
    (first,) = f.programs.values()
    retrace_jit()
    f(w, x, scale=scale)
    (second,) = f.programs.values()
    assert second is not first


# ------------------------------------------------------------------ jit: static arguments


def power_sum_of(m):
    def power_sum(x, n, scale=1.0):      # n: Python control flow, so static
        for _ in range(n - 1):
            x = x * x
        return scale * m.sum(x)
    return power_sum


def test_static_argnames_trace_once_per_value_as_jax():
    x = np.array([0.5, 1.5, -2.0])
    ours = ad.jit(power_sum_of(ad), static_argnames="n")
    theirs = jax.jit(power_sum_of(jnp), static_argnames="n")
    for n, scale in [(2, 0.5), (3, 0.5), (2, 4.0), (3, -1.0), (4, 1.0)]:
        close(ours(x, n=n, scale=scale), theirs(x, n=n, scale=scale))
    assert len(ours.programs) == 3
    assert sorted(k[-1][0][2] for k in ours.programs) == [2, 3, 4]    # .programs shows the values
    # passed by position, n is static too (the name completes the position, as in jax.jit): no new program
    close(ours(x, 3, scale=2.0), theirs(x, 3, scale=2.0))
    assert len(ours.programs) == 3


def test_static_argnums_and_its_name():
    x = np.array([0.5, 1.5, -2.0])
    ours = ad.jit(power_sum_of(ad), static_argnums=1)
    theirs = jax.jit(power_sum_of(jnp), static_argnums=1)
    close(ours(x, 3), theirs(x, 3))
    close(ours(x, n=3), theirs(x, n=3))
    close(ours(x, 3, 2.0), theirs(x, 3, 2.0))    # scale: a new value of a dynamic input
    close(ours(x, 3, 5.0), theirs(x, 3, 5.0))
    assert len(ours.programs) == 2               # (x, n) and (x, scale, n): n by position or by name alike


def test_static_value_types_trace_apart():
    # 2 and 2.0 are equal and hash alike; f may treat them differently (range(2.0) raises), so they trace apart.
    f = ad.jit(lambda x, k: x * k if isinstance(k, float) else x + k, static_argnums=1)
    x = np.ones(2)
    np.testing.assert_array_equal(f(x, 2), [3.0, 3.0])
    np.testing.assert_array_equal(f(x, 2.0), [2.0, 2.0])
    assert len(f.programs) == 2


def test_negative_static_argnums_count_from_the_calls_end_as_jax():
    x = np.array([0.5, 1.5])
    ours = ad.jit(power_sum_of(ad), static_argnums=-1)
    theirs = jax.jit(power_sum_of(jnp), static_argnums=-1)
    close(ours(x, 3), theirs(x, 3))                 # -1 is n here...
    assert len(ours.programs) == 1
    with pytest.raises(ad.TracingError):
        ours(x, 3, 2.0)     # ...and scale here: n is an input then, and range(n) cannot read it
    with pytest.raises(Exception, match="concrete|Tracer"):   # (nor can JAX's)
        theirs(x, 3, 2.0)


def test_static_strings_and_dynamic_keywords_together():
    w, x, scale, _ = data()
    f = ad.jit(lambda w, x, act="tanh", scale=1.0: scale * ad.sum(getattr(ad, act)(x @ w)), static_argnames="act")
    for act in ["tanh", "sin", "tanh"]:
        close(f(w, x, act=act, scale=scale), scale * jnp.sum(getattr(jnp, act)(x @ w)))
    close(f(w, x, act="sin", scale=2 * scale), 2 * scale * jnp.sum(jnp.sin(x @ w)))
    assert len(f.programs) == 2


def test_static_arguments_as_a_decorator():
    @functools.partial(ad.jit, static_argnames="n")
    def by_partial(x, n):
        return x * n

    @ad.jit(static_argnums=1)
    def by_call(x, n):
        return x * n
    x = np.ones(2)
    for g in (by_partial, by_call):
        np.testing.assert_array_equal(g(x, n=3), [3.0, 3.0])
        np.testing.assert_array_equal(g(x, 3), [3.0, 3.0])
        assert len(g.programs) == 1
        assert g.__name__ in ("jit_by_partial", "jit_by_call")


def test_an_unhashable_static_argument_is_refused_naming_it():
    f = ad.jit(power_sum_of(ad), static_argnames="n")
    with pytest.raises(ad.TracingError, match=r"static argument 'n' of power_sum is list \(\[2\]\).*not hashable"):
        f(np.ones(2), n=[2])
    g = ad.jit(lambda x, *rest: x * rest[0], static_argnums=1)   # no name for position 1
    with pytest.raises(ad.TracingError, match=r"static argument 1 of <lambda> is ndarray.*not hashable"):
        g(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="Non-hashable static"):   # JAX refuses it too
        jax.jit(power_sum_of(jnp), static_argnames="n")(np.ones(2), n=[2])


def test_static_options_that_name_no_parameter_are_refused():
    f = power_sum_of(ad)
    with pytest.raises(ad.AutogradDagError, match=r"static_argnames='m' names 'm', which is not a parameter of "
                                                  r"power_sum\(x, n, scale=1.0\)"):
        ad.jit(f, static_argnames="m")
    with pytest.raises(ad.AutogradDagError, match=r"static_argnums=3, but power_sum\(x, n, scale=1.0\) takes 3"):
        ad.jit(f, static_argnums=3)
    with pytest.raises(ad.AutogradDagError, match=r"static_argnums=-4"):
        ad.jit(f, static_argnums=-4)
    with pytest.raises(ad.AutogradDagError, match="positional-only"):
        ad.jit(lambda x, n, /: x * n, static_argnames="n")
    with pytest.raises(ad.AutogradDagError, match="must be an int"):
        ad.jit(f, static_argnums="n")
    with pytest.raises(ValueError, match="invalid argnames"):     # JAX refuses the unknown name too
        jax.jit(power_sum_of(jnp), static_argnames="m")
    # f taking **kwargs / *args accepts any name / position, as in JAX
    g = ad.jit(lambda x, **kw: x * kw["k"], static_argnames="k")
    np.testing.assert_array_equal(g(np.ones(2), k=3), [3.0, 3.0])
    h = ad.jit(lambda x, *rest: x * rest[1], static_argnums=2)
    np.testing.assert_array_equal(h(np.ones(2), 5.0, 3), [3.0, 3.0])


def test_static_configuration_keeps_refusing_non_numeric_dynamic_arguments():
    f = ad.jit(lambda x, n, act: x * n, static_argnums=1)
    with pytest.raises(ad.TracingError, match=r"jit: argument 2 is str .*static_argnums=2"):
        f(np.ones(2), 3, "tanh")


# ------------------------------------------------------------------ vmap


def test_vmap_batches_keywords_along_axis_0_as_jax():
    w, x, scale, bias = data()
    xs = np.stack([x, 2 * x, -x])
    biases = np.stack([bias, 0 * bias, bias ** 2])

    def f_of(m):
        return lambda w, x, bias: m.sum(m.tanh(x @ w + bias))
    close(ad.vmap(f_of(ad), in_axes=(None, 0))(w, xs, bias=biases),
          jax.vmap(f_of(jnp), in_axes=(None, 0))(w, xs, bias=biases))
    close(ad.vmap(f_of(ad), in_axes=(None,))(w, x=xs, bias=biases),
          jax.vmap(f_of(jnp), in_axes=(None,))(w, x=xs, bias=biases))
    # per-example gradients with a batched keyword
    close(ad.vmap(ad.grad(loss_of(ad)), in_axes=(None, 0))(w, xs, bias=biases),
          jax.vmap(jax.grad(loss_of(jnp)), in_axes=(None, 0))(w, xs, bias=biases))


def test_vmap_keywords_alone_batched():
    w, xs = np.array([1.0, -2.0]), np.random.default_rng(5).normal(size=(3, 2))
    close(ad.vmap(lambda w, x: w * x, in_axes=None)(w, x=xs), jax.vmap(lambda w, x: w * x, in_axes=None)(w, x=xs))
    with pytest.raises(ad.AutogradDagError, match=r"one int/None per positional argument \(1 given; keyword"):
        ad.vmap(lambda w, x: w * x, in_axes=(None, 0))(w, x=xs)


def test_vmap_keyword_size_mismatch_names_it():
    with pytest.raises(ad.ShapeError, match=r"different sizes \(3 for argument 0, 4 for keyword argument 'y'\)"):
        ad.vmap(lambda x, y: x * y)(np.ones((3, 2)), y=np.ones((4, 2)))
    with pytest.raises(ad.ShapeError, match=r"keyword argument 'y' of shape \(\).*always batched along axis 0"):
        ad.vmap(lambda x, y: x * y)(np.ones((3, 2)), y=2.0)


# ------------------------------------------------------------------ checkpoint


def block(x, W, b=0.0):
    return ad.tanh(x @ W + b) * ad.sin(x @ W)


def block_jax(x, W, b=0.0):
    return jnp.tanh(x @ W + b) * jnp.sin(x @ W)


def test_checkpoint_gradients_of_keyword_tensors():
    rng = np.random.default_rng(2)
    x, W, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=2)
    grads = []
    for run in (block, ad.checkpoint(block)):
        Wt, bt = ad.Tensor(W, requires_grad=True), ad.Tensor(b, requires_grad=True)
        ad.sum(run(x, W=Wt, b=bt) ** 2).backward()
        grads.append((Wt.grad.value, bt.grad.value))
    theirs = jax.grad(lambda W, b: jnp.sum(jax.checkpoint(block_jax)(x, W=W, b=b) ** 2), argnums=(0, 1))(W, b)
    close(grads[1], theirs)
    close(grads[1], grads[0])
    # the functional routes: grad (reverse), jvp (forward), and both under jit
    f = lambda W, b: ad.sum(ad.checkpoint(block)(x, b=b, W=W) ** 2)   # noqa: E731
    close(ad.grad(f, argnums=(0, 1))(W, b), theirs)
    close(ad.jit(ad.grad(f, argnums=(0, 1)))(W, b), theirs)
    tangent = rng.normal(size=W.shape)
    close(ad.jvp(lambda W: f(W, b), (W,), (tangent,))[1],
          jax.jvp(lambda W: jnp.sum(block_jax(x, W, b) ** 2), (W,), (tangent,))[1])


def test_checkpoint_keyword_recomputed_in_backward_and_second_order():
    rng = np.random.default_rng(3)
    x, W = rng.normal(size=(2, 3)), rng.normal(size=(3, 3))
    ours = ad.hessian(lambda W: ad.sum(ad.checkpoint(block)(x, W=W)))(W)
    theirs = jax.hessian(lambda W: jnp.sum(jax.checkpoint(block_jax)(x, W=W)))(W)
    close(ours, theirs)


def test_checkpoint_with_keywords_returning_a_tuple_under_vmap():
    rng = np.random.default_rng(4)
    xs, W = rng.normal(size=(5, 3)), rng.normal(size=(3, 2))

    def pair(x, W):
        return ad.tanh(x @ W), ad.sin(x @ W)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # (batched by checkpoint's rule: vmap's loop would warn)
        ours = ad.vmap(lambda x: ad.checkpoint(pair)(x, W=W))(xs)
    close(ours, (np.tanh(xs @ W), np.sin(xs @ W)))
