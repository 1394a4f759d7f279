"""Transformations composed, against JAX 0.10 (float64 through the ``jax_x64`` fixture): checkpoint under
vmap, keyword arguments of ``trace``, and the defects an adversarial hunt found, one test each.

Each defect's test failed before its fix; its comment names what was wrong. JAX runs the same formula
with other summation orders and other tanh/exp code: float64 results agree to a few ulps amplified
by sums of at most a few dozen terms, so 1e-10 relative (1e-12 absolute, for entries near 0) leaves
a wide margin; float32 at its epsilon (1.2e-7) by the same reasoning: 1e-5.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.nn import functional as F

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

pytestmark = pytest.mark.usefixtures("jax_x64")

TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=1e-5, atol=1e-6)}


def close(ours, theirs, dtype=np.float64):
    ours_leaves, theirs_leaves = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves)
    for a, b in zip(ours_leaves, theirs_leaves):
        a, b = np.asarray(a.value if isinstance(a, ad.Tensor) else a), np.asarray(b)
        assert a.shape == b.shape, (a.shape, b.shape)
        np.testing.assert_allclose(a, b, **TOL[dtype])


def mlp_of(m):
    """A small MLP written once for ``m`` = autograd_dag or jax.numpy."""
    def mlp(x, W1, b1, W2):
        return m.tanh(m.tanh(x @ W1 + b1) @ W2)
    return mlp


def mlp_data(dtype=np.float64, batch=6, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(a.astype(dtype) for a in (rng.normal(size=(batch, 3)), rng.normal(size=(3, 8)) / 2,
                                           rng.normal(size=8), rng.normal(size=(8, 2)) / 2))


SHARED = (0, None, None, None)

# ------------------------------------------------------------ checkpoint under vmap


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vmap_of_checkpoint_is_one_batched_node_as_jax(dtype):
    # vmap(checkpoint(f)) looped over the batch: checkpoint had no batching rule, so a batch of 64
    # recorded 64 checkpoint nodes (and replayed f 64 times in the backward), with a warning.
    # Now one node whose forward and replay are f's vmap: values and gradients as JAX's.
    xs, W1, b1, W2 = mlp_data(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # (vmap's loop warns)
        prog = ad.trace(lambda xs, W1: ad.vmap(ad.checkpoint(mlp_of(ad)), in_axes=SHARED)(xs, W1, b1, W2), xs, W1)
        assert [str(n.op) for n in prog.nodes if n.prim is not None] == ["checkpoint[vmap_mlp]"]
        ours = ad.vmap(ad.checkpoint(mlp_of(ad)), in_axes=SHARED)(xs, W1, b1, W2)
        loss = lambda m, vmap, ckpt: lambda W1, b1: m.sum(vmap(ckpt(mlp_of(m)), in_axes=SHARED)(xs, W1, b1, W2) ** 2)
        grads = ad.grad(loss(ad, ad.vmap, ad.checkpoint), argnums=(0, 1))(W1, b1)
    close(ours, jax.vmap(jax.checkpoint(mlp_of(jnp)), in_axes=SHARED)(xs, W1, b1, W2), dtype)
    close(prog(xs, W1), ours, dtype)
    close(grads, jax.grad(loss(jnp, jax.vmap, jax.checkpoint), argnums=(0, 1))(W1, b1), dtype)
    # the unbatched loop gives the same (the same operations per example, batched by numpy)
    close(grads, ad.grad(lambda W1, b1: sum(ad.sum(ad.checkpoint(mlp_of(ad))(x, W1, b1, W2) ** 2) for x in xs),
                         argnums=(0, 1))(W1, b1), dtype)


def test_checkpoint_batched_replay_forward_mode_second_order_and_jit():
    xs, W1, b1, W2 = mlp_data(seed=1)
    v = np.random.default_rng(1).normal(size=W1.shape)

    def of(m, vmap, ckpt):
        return lambda W: m.sum(vmap(ckpt(mlp_of(m)), in_axes=SHARED)(xs, W, b1, W2) ** 2)
    ours, theirs = of(ad, ad.vmap, ad.checkpoint), of(jnp, jax.vmap, jax.checkpoint)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        close(ad.jvp(ours, (W1,), (v,)), jax.jvp(theirs, (W1,), (v,)))
        close(ad.hessian(ours)(W1), jax.hessian(theirs)(W1))
        close(ad.jit(ad.grad(ours))(W1), jax.grad(theirs)(W1))
        close(ad.jit(ad.grad(ours))(2 * W1), jax.grad(theirs)(2 * W1))   # the program, run again


def test_vmap_of_grad_of_checkpoint_and_nested_vmaps():
    xs, W1, b1, W2 = mlp_data(seed=2)
    per_example = lambda m, vmap, grad, ckpt: vmap(grad(lambda x, W: m.sum(ckpt(mlp_of(m))(x, W, b1, W2)),  # noqa: E731
                                                        argnums=1), in_axes=(0, None))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = per_example(ad, ad.vmap, ad.grad, ad.checkpoint)(xs, W1)
        xs3 = np.random.default_rng(2).normal(size=(4, 5, 3))
        inner = ad.vmap(ad.vmap(ad.checkpoint(mlp_of(ad)), in_axes=SHARED), in_axes=(1, None, None, None))
        nested = inner(xs3, W1, b1, W2)
        Ws = np.random.default_rng(3).normal(size=(6, 3, 8))
        both = ad.vmap(ad.checkpoint(mlp_of(ad)), in_axes=(0, 0, None, None))(xs, Ws, b1, W2)
    close(ours, per_example(jnp, jax.vmap, jax.grad, jax.checkpoint)(xs, W1))
    close(nested, jax.vmap(jax.vmap(jax.checkpoint(mlp_of(jnp)), in_axes=SHARED),
                           in_axes=(1, None, None, None))(xs3, W1, b1, W2))
    close(both, jax.vmap(jax.checkpoint(mlp_of(jnp)), in_axes=(0, 0, None, None))(xs, Ws, b1, W2))


def test_checkpoint_with_keywords_and_tuples_under_vmap():
    xs, W1, b1, W2 = mlp_data(seed=3)

    def pair(m):
        return lambda x, W1, b1: (m.sin(x @ W1 + b1), m.sum(m.cos(x)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # shared keyword operands (W1, b1 from the closure of the vmapped function) ...
        kw = ad.vmap(lambda x: ad.checkpoint(mlp_of(ad))(x, W1=W1, b1=b1, W2=W2))(xs)
        # ... batched ones (vmap batches a keyword argument along axis 0) and a tuple result
        Ws = np.stack([W1 * (1 + k) for k in range(len(xs))])
        tup = ad.vmap(ad.checkpoint(pair(ad)), in_axes=(0,))(xs, W1=Ws, b1=np.tile(b1, (len(xs), 1)))
        g = ad.grad(lambda W: sum(ad.sum(t ** 2) for t in ad.vmap(
            lambda x: ad.checkpoint(pair(ad))(x, W1=W, b1=b1))(xs)))(W1)
    close(kw, jax.vmap(jax.checkpoint(mlp_of(jnp)), in_axes=SHARED)(xs, W1, b1, W2))
    close(tup, jax.vmap(jax.checkpoint(pair(jnp)))(xs, W1=Ws, b1=np.tile(b1, (len(xs), 1))))
    close(g, jax.grad(lambda W: sum(jnp.sum(t ** 2) for t in jax.vmap(
        lambda x: jax.checkpoint(pair(jnp))(x, W1=W, b1=b1))(xs)))(W1))


def test_checkpoint_under_vmap_keeps_dropout_masks_per_example_seed():
    # A seed per example draws each example's mask, as the loop does (the same draws: exact).
    rng = np.random.default_rng(4)
    xs, W, seeds = rng.normal(size=(6, 4)), rng.normal(size=(4, 4)), np.arange(6) + 10
    f = lambda x, s, W: ad.tanh(F.dropout(x, 0.5, seed=s) @ W)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batched = ad.vmap(ad.checkpoint(f), in_axes=(0, 0, None))(xs, seeds, W)
        g = ad.grad(lambda W: ad.sum(ad.vmap(ad.checkpoint(f), in_axes=(0, 0, None))(xs, seeds, W) ** 2))(W)
    # (the documented mask: numpy's Generator seeded [stream 0, seed], kept where u >= p, scaled 1/(1 - p))
    masks = np.stack([(np.random.default_rng([0, s]).random(4) >= 0.5) * 2.0 for s in seeds])
    np.testing.assert_allclose(batched, np.tanh((xs * masks) @ W), rtol=1e-12, atol=1e-15)
    h = np.tanh((xs * masks) @ W)   # d/dW sum(h²) = (x·mask)ᵀ (2h(1 − h²))
    np.testing.assert_allclose(g, (xs * masks).T @ (2 * h * (1 - h ** 2)), rtol=1e-10, atol=1e-12)


def test_checkpoint_reading_its_numbers_under_vmap_still_loops():
    # Python control flow on the values cannot be recorded once for the batch (jax.vmap refuses
    # it); the batching rule gives way to vmap's loop, which runs each example on its numbers.
    def f(x):
        return x * 2.0 if float(x.sum()) > 0 else x * 3.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = ad.vmap(ad.checkpoint(f))(np.array([[1.0], [-1.0]]))
    np.testing.assert_array_equal(out, [[2.0], [-3.0]])


# ------------------------------------------------------------ trace with keyword arguments


def loss_of(m):
    def loss(w, x, scale=1.0, bias=0.0):
        return m.sum(m.tanh(x @ w + bias) ** 2) * scale
    return loss


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_trace_takes_keyword_arguments_as_inputs_named_by_them(dtype):
    # ad.trace(f, w, x, scale=1.5) raised TypeError (trace took positional arguments only), where
    # grad and jit take keywords. Now they are program inputs as under jit: after the positional
    # ones, sorted by name, named by the keyword; the program runs on new values, by name or position.
    rng = np.random.default_rng(5)
    w, x, bias = (rng.normal(size=s).astype(dtype) for s in (3, (4, 3), 4))
    prog = ad.trace(loss_of(ad), w, x, scale=1.5, bias=bias)
    assert [prog.nodes[k].name for k in prog.inputs] == ["w", "x", "bias", "scale"]
    assert prog.nodes[prog.inputs[3]].dtype == dtype   # a Python number is weak, as a positional one
    theirs = loss_of(jnp)
    close(prog(w, x, scale=0.5, bias=2 * bias), theirs(w, x, scale=0.5, bias=2 * bias), dtype)
    close(prog(w, x, bias, 3.0), theirs(w, x, scale=3.0, bias=bias), dtype)
    close(ad.grad_program(prog, wrt=(0, 3))(w, x, bias, 1.5),
          jax.grad(lambda w, s: theirs(w, x, scale=s, bias=bias), argnums=(0, 1))(w, dtype(1.5)), dtype)


def test_trace_keywords_nested_tensor_and_refused():
    rng = np.random.default_rng(6)
    x, W = rng.normal(size=(2, 3)), rng.normal(size=(3, 2))
    prog = ad.trace(lambda x, *, params: ad.sum(ad.tanh(x @ params["W"] + params["b"])),
                    x, params={"b": ad.Tensor(np.zeros(2)), "W": W})
    assert sorted(prog.nodes[k].name for k in prog.inputs) == ["params.W", "params.b", "x"]
    close(prog(x, **{"params.W": W, "params.b": np.ones(2)}), jnp.sum(jnp.tanh(x @ W + 1.0)))
    with pytest.raises(ad.TracingError, match=r"keyword argument 'act' is str \('tanh'\).*f\(x, act='tanh'\)"):
        ad.trace(lambda x, act="relu": x, x, act="tanh")


# ------------------------------------------------------------ vmap: pytree in_axes, axis_size


def test_vmap_takes_a_tree_of_in_axes_per_argument_as_jax():
    # in_axes=({"a": 0, "b": None},) and ((0, None), 0) were refused ("must be an int, None, or one
    # int/None per positional argument"), where JAX takes a tree (a prefix of the argument's).
    rng = np.random.default_rng(7)
    X, w, Y = rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=(3, 4))

    def ours_and_jax(f, in_axes, *args):
        return ad.vmap(f(ad), in_axes=in_axes)(*args), jax.vmap(f(jnp), in_axes=in_axes)(*args)
    close(*ours_and_jax(lambda m: lambda d: m.sin(d["a"]) * d["b"], ({"b": None, "a": 0},), {"a": X, "b": w}))
    close(*ours_and_jax(lambda m: lambda p, y: p[0] * y + p[1], ((0, None), -1), (X, w), Y))
    close(*ours_and_jax(lambda m: lambda p: p["x"][0] * p["x"][1] + p["s"], ({"x": [1, 0], "s": None},),
                        {"x": [Y, X], "s": w}))
    loss = lambda m, vmap: lambda w: m.sum(vmap(lambda p, y: m.tanh(p[0] * y + p[1]) ** 2,  # noqa: E731
                                                in_axes=((0, None), 1))((X, w), Y))
    close(ad.grad(loss(ad, ad.vmap))(w), jax.grad(loss(jnp, jax.vmap))(w))
    with pytest.raises(ad.AutogradDagError, match=r"in_axes entry \(0, None, 0\) for argument 0 does not match"):
        ad.vmap(lambda p: p[0], in_axes=((0, None, 0),))((X, w))


def test_vmap_axis_size_as_jax():
    # vmap(f, in_axes=None, axis_size=3) raised TypeError (no axis_size): the size of a batch that
    # no argument carries. Then every output is f's, repeated; with a batched argument it must agree.
    w = np.array([1.0, -2.0])
    close(ad.vmap(lambda w: ad.sin(w) * 2, in_axes=None, axis_size=3)(w),
          jax.vmap(lambda w: jnp.sin(w) * 2, in_axes=None, axis_size=3)(w))
    close(ad.vmap(lambda x, w: x * w, in_axes=(0, None), axis_size=4)(np.ones((4, 2)), w), np.tile(w, (4, 1)))
    with pytest.raises(ad.ShapeError, match="4 for argument 0, 3 for axis_size"):
        ad.vmap(lambda x: x, axis_size=3)(np.ones((4, 2)))
    with pytest.raises(ad.AutogradDagError, match="batches no argument"):
        ad.vmap(lambda w: w, in_axes=(None,))(w)


def test_vmap_takes_a_tree_of_out_axes_as_jax():
    # out_axes={"s": 0, "d": 1} for a dict result raised a bare TypeError ('<=' not supported between
    # 'int' and 'str': the dict's keys were taken as axes); a prefix tuple ((0, 1) for (a, (b, c)))
    # was refused. Both are JAX's trees of axes.
    X = np.random.default_rng(8).normal(size=(4, 3))
    close(ad.vmap(lambda a: {"s": ad.sum(a), "d": ad.outer(a, a)}, out_axes={"s": 0, "d": 1})(X),
          jax.vmap(lambda a: {"s": jnp.sum(a), "d": jnp.outer(a, a)}, out_axes={"s": 0, "d": 1})(X))
    close(ad.vmap(lambda a: (a, (ad.outer(a, a), a)), out_axes=(0, -1))(X),
          jax.vmap(lambda a: (a, (jnp.outer(a, a), a)), out_axes=(0, -1))(X))
    with pytest.raises(ad.AutogradDagError, match=r"out_axes=\{'s': 0\} must be an int, one per output leaf"):
        ad.vmap(lambda a: {"s": ad.sum(a), "d": a}, out_axes={"s": 0})(X)


# ------------------------------------------------------------ jacobian and hessian with has_aux


def with_aux(m):
    return lambda a, b: (m.sum(m.sin(a) * a ** 2 * b), {"c": m.cos(a) * b})


def test_hessian_and_jacobian_with_aux_as_jax():
    # ad.hessian(f, has_aux=True) and ad.jacobian(f, has_aux=True) raised TypeError (no has_aux),
    # where jax.hessian and jax.jacrev return (derivative, aux).
    rng = np.random.default_rng(9)
    x, y = rng.normal(size=3), rng.normal(size=3)
    close(ad.hessian(with_aux(ad), has_aux=True)(x, y), jax.hessian(with_aux(jnp), has_aux=True)(x, y))
    close(ad.hessian(with_aux(ad), argnums=(0, 1), has_aux=True)(x, y),
          jax.hessian(with_aux(jnp), argnums=(0, 1), has_aux=True)(x, y))
    close(ad.jit(ad.hessian(with_aux(ad), has_aux=True))(x, y), jax.hessian(with_aux(jnp), has_aux=True)(x, y))
    pair = lambda m: lambda a: (m.sin(a) * a[0], a * 2)  # noqa: E731
    close(ad.jacobian(pair(ad), has_aux=True)(x), jax.jacrev(pair(jnp), has_aux=True)(x))
    xs, ys = np.stack([x, y]), np.stack([y, x])
    close(ad.vmap(ad.hessian(with_aux(ad), has_aux=True))(xs, ys),
          jax.vmap(jax.hessian(with_aux(jnp), has_aux=True))(xs, ys))


def test_checkpoint_takes_tuple_list_and_dict_arguments_as_jax():
    # ad.checkpoint(f)((X, w)) made one array of the tuple ("cannot make a float64 array of (array(...),
    # array(...))"), and under vmap refused it; jax.checkpoint takes pytrees. Now their leaves are the
    # node's operands: values and gradients as JAX's, under vmap too.
    rng = np.random.default_rng(10)
    X, w = rng.normal(size=(4, 3)), rng.normal(size=3)

    def of(m, ckpt):
        f = ckpt(lambda p, s: {"a": m.sin(p["X"] @ p["v"][0]) * s})
        return lambda w: m.sum(f({"X": X, "v": [w]}, s=2.0)["a"] ** 2)
    close(ad.grad(of(ad, ad.checkpoint))(w), jax.grad(of(jnp, jax.checkpoint))(w))
    close(of(ad, ad.checkpoint)(w), of(jnp, jax.checkpoint)(w))
    pair = lambda m: lambda p: p[0] * m.tanh(p[1])  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = ad.vmap(ad.checkpoint(pair(ad)), in_axes=((0, None),))((X, w))
    close(ours, jax.vmap(jax.checkpoint(pair(jnp)), in_axes=((0, None),))((X, w)))
    W = ad.Tensor(w, requires_grad=True)   # a closure's Tensor requiring a gradient: refused, as before
    with pytest.raises(ad.NotDifferentiableError, match="from outside its arguments"):
        ad.grad(lambda X: ad.sum(ad.checkpoint(lambda p: p[0] @ W)((X, X))))(X)
