"""The bare sweep's direct paths (issue 30): the same cotangents, bit for bit, as the general path.

In the eager ``backward()`` (and every sweep that records nothing) the VJP rules of matmul,
linear, reshape and transpose, and ``sum_to_shape``, call their impls directly on the arrays
instead of going through the front-end functions and ``apply``'s bare branch. Both paths run
the same impls on the same operands, so the cotangents must agree in every bit: ``==`` on the
bytes is the right test here (the same kernels run twice). Each is also checked against an
independent numpy reference, with a tolerance for BLAS's order of summation (float32 1e-5,
float64 1e-12, relative). With ``create_graph`` (or any sweep that records) the rules get
Tensors and must take the general path, recording the derivative graph.
"""

import importlib

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import core, nn
from autograd_dag.primitives.linalg import products as P
from autograd_dag.primitives import structure as S

from helpers import line_of

LR = importlib.import_module("autograd_dag.primitives.fused.linear_relu")
TOL = {np.float32: 1e-5, np.float64: 1e-12}


def bits_equal(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def bare(rule, *args):
    """``rule`` in a bare sweep, on plain arrays: its direct path."""
    with core.bare_values():
        out = rule(*args)
    return out if isinstance(out, tuple) else (out,)


def general(rule, *args):
    """``rule`` on Tensors while recording: the general path through the front-end functions and apply."""
    with core._recording_as(True):
        out = rule(*[a if a is None else ad.Tensor(a) for a in args])
    out = out if isinstance(out, tuple) else (out,)
    return tuple(o.value for o in out)


# (a shape, b shape): matrices, a stack against one matrix (the rows path), equal stacks,
# broadcast batches, one matrix against a stack, and vectors (the general path, in both modes).
MATMUL_SHAPES = [((4, 5), (5, 3)), ((2, 4, 5), (5, 3)), ((2, 3, 4, 5), (2, 3, 5, 6)),
                 ((2, 1, 4, 5), (3, 5, 6)), ((4, 5), (2, 5, 3)), ((5,), (5, 3)), ((4, 5), (5,)),
                 ((2, 4, 9), (9, 3)), ((3, 8), (8, 2))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_vjps_direct_path_is_bit_identical_and_right(sa, sb, dtype, monkeypatch):
    taken = []
    for name in ("_matmul_vjp_a_bare", "_matmul_vjp_b_bare"):
        direct = getattr(P, name)
        monkeypatch.setattr(P, name, lambda *args, direct=direct: taken.append(direct) or direct(*args))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)
    ct = rng.standard_normal(np.matmul(a, b).shape).astype(dtype)
    for i, part in enumerate(P.MATMUL.vjp_parts):
        fast, = bare(part, ct, None, a, b)
        slow, = general(part, ct, None, a, b)
        assert bits_equal(fast, slow), (i, sa, sb)
    # The comparison is between two paths: the direct one ran for matrices, only there.
    assert len(taken) == (2 if len(sa) > 1 and len(sb) > 1 else 0)
    # Independent reference: the gradient of Σ ct ⊙ (a @ b) by numpy's own products.
    a2 = a if a.ndim > 1 else a[None]
    b2 = b if b.ndim > 1 else b[:, None]
    ct2 = ct.reshape(np.matmul(a2, b2).shape)
    da = np.matmul(ct2, np.swapaxes(b2, -1, -2))
    db = np.matmul(np.swapaxes(a2, -1, -2), ct2)
    da = da.sum(axis=tuple(range(da.ndim - a2.ndim))).reshape(a2.shape) if da.ndim > a2.ndim else da
    db = db.sum(axis=tuple(range(db.ndim - b2.ndim))) if db.ndim > b2.ndim else db
    for ax in range(a2.ndim - 2):
        if a2.shape[ax] == 1 and da.shape[ax] != 1:
            da = da.sum(axis=ax, keepdims=True)
    for ax in range(b2.ndim - 2):
        if b2.shape[ax] == 1 and db.shape[ax] != 1:
            db = db.sum(axis=ax, keepdims=True)
    fa, = bare(P.MATMUL.vjp_parts[0], ct, None, a, b)
    fb, = bare(P.MATMUL.vjp_parts[1], ct, None, a, b)
    np.testing.assert_allclose(fa, da.reshape(a.shape), rtol=TOL[dtype], atol=TOL[dtype])
    np.testing.assert_allclose(fb, db.reshape(b.shape), rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sx", [(6, 8), (2, 3, 8), (8,)])
def test_linear_and_linear_relu_vjps_direct_path_is_bit_identical_and_right(sx, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(sx).astype(dtype)
    w = rng.standard_normal((5, 8)).astype(dtype)
    b = rng.standard_normal(5).astype(dtype)
    ct = rng.standard_normal(sx[:-1] + (5,)).astype(dtype)
    for i, part in enumerate(P.LINEAR.vjp_parts):
        assert bits_equal(bare(part, ct, None, x, w, b)[0], general(part, ct, None, x, w, b)[0]), i
    out = LR._linear_relu_impl(x, w, b)
    fast, slow = bare(LR._linear_relu_vjp, ct, out, x, w, b), general(LR._linear_relu_vjp, ct, out, x, w, b)
    assert all(bits_equal(f, s) for f, s in zip(fast, slow))
    # Independent reference: relu's mask read from the output, then the affine map's three cotangents.
    g = ct * (out > 0)
    g2, x2 = g.reshape(-1, 5), x.reshape(-1, 8)
    for got, want in zip(fast, ((g2 @ w).reshape(x.shape), g2.T @ x2, g2.sum(axis=0))):
        np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("big,small", [((4, 3), (3,)), ((4, 3), (1, 3)), ((2, 4, 3), (4, 1)), ((4, 3), ()),
                                       ((4, 3), (4, 3)), ((2, 1, 3), (1, 3)), ((40, 64), (64,))])
def test_sum_to_shape_direct_path_is_bit_identical_and_right(big, small, dtype):
    x = np.random.default_rng(2).standard_normal(big).astype(dtype)
    fast, = bare(lambda v: S.sum_to_shape(v, small), x)
    slow, = general(lambda v: S.sum_to_shape(v, small), x)
    assert bits_equal(fast, slow)
    lead = x.ndim - len(small)
    want = x.sum(axis=tuple(range(lead))) if lead else x
    want = want.sum(axis=tuple(i for i, d in enumerate(small) if d == 1), keepdims=True) if small else want
    np.testing.assert_allclose(np.asarray(fast), np.reshape(want, small), rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)


def test_reshape_and_transpose_vjps_direct_path_is_bit_identical():
    x = np.random.default_rng(3).standard_normal((2, 3, 4))
    ct = np.random.default_rng(4).standard_normal((4, 6))
    fast, = bare(lambda c, v: S.RESHAPE.vjp_parts[0](c, None, v, shape=(4, 6)), ct, x)
    slow, = general(lambda c, v: S.RESHAPE.vjp_parts[0](c, None, v, shape=(4, 6)), ct, x)
    assert bits_equal(fast, slow) and fast.shape == x.shape
    np.testing.assert_array_equal(fast, ct.reshape(x.shape))   # (a view: no arithmetic)
    axes = (2, 0, 1)
    ct = np.random.default_rng(5).standard_normal(np.transpose(x, axes).shape)
    fast, = bare(lambda c, v: S.TRANSPOSE.vjp_parts[0](c, None, v, axes=axes), ct, x)
    slow, = general(lambda c, v: S.TRANSPOSE.vjp_parts[0](c, None, v, axes=axes), ct, x)
    assert bits_equal(fast, slow)
    np.testing.assert_array_equal(fast, np.transpose(ct, np.argsort(axes)))


def _mlp_grads(create_graph: bool):
    model = nn.Sequential(nn.Linear(6, 5, rng=0), nn.ReLU(), nn.Linear(5, 3, rng=1))
    x = np.random.default_rng(6).standard_normal((4, 2, 6))
    loss = ad.sum(ad.reshape(model(x), (8, 3)) @ np.ones((3, 2)))
    loss.backward(create_graph=create_graph)
    return [p.grad for p in model.parameters()]


def test_eager_backward_grads_equal_the_recorded_sweeps_bit_for_bit():
    # The same rules and impls, once on plain arrays (direct paths) and once recorded on Tensors
    # (create_graph: the general paths): the same numbers in every bit.
    plain, recorded = _mlp_grads(False), _mlp_grads(True)
    for p, r in zip(plain, recorded):
        assert r.prim is not None or r.parents == ()   # recorded Tensors
        assert bits_equal(p.value, r.value)


def test_create_graph_falls_back_to_recording_the_derivative():
    # The direct paths run on arrays only: with create_graph the gradient is a recorded graph,
    # differentiable again. f = Σ (x W)²: ∇_x f = 2 (x W) Wᵀ, and ∇_x Σ ∇_x f = 2 · 1 (W Wᵀ).
    rng = np.random.default_rng(7)
    w = rng.standard_normal((3, 2))
    x = ad.Tensor(rng.standard_normal((4, 3)), requires_grad=True)
    y = ad.matmul(x, w)
    ad.sum(y * y).backward(create_graph=True)
    g = x.grad
    assert g.prim is not None   # recorded, not a leaf made of an array
    np.testing.assert_allclose(g.value, 2 * (x.value @ w) @ w.T, rtol=1e-12)
    x.grad = None
    ad.sum(g).backward()
    np.testing.assert_allclose(x.grad.value, 2 * np.ones((4, 3)) @ (w @ w.T), rtol=1e-12)


def test_grad_of_grad_through_linear_uses_the_general_path():
    w = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.25]])
    b = np.array([0.1, -0.2, 0.3])
    f = lambda x: ad.sum(P.linear(x, w, b) ** 3)
    x = np.array([[0.3, -0.7]])
    h = ad.grad(lambda x: ad.sum(ad.grad(f)(x)))(x)
    # Σ_j ∂/∂x_k of Σ_i 3 y_i² W_ij = Σ_i 6 y_i W_ik Σ_j W_ij
    y = x @ w.T + b
    np.testing.assert_allclose(h, (6 * y * w.sum(axis=1)) @ w, rtol=1e-12)


def test_grad_leaves_are_made_on_the_users_line():
    x = ad.Tensor(np.ones((2, 3)), requires_grad=True)
    ad.sum(ad.matmul(x, np.ones((3, 2)))).backward()   # backward-line
    g = x.grad
    assert g.source == (__file__, line_of("# backward-line", __name__))
    assert g.prim is None and g.parents == () and not g.requires_grad and g.name is None and g.serial == 0
    np.testing.assert_array_equal(g.value, np.full((2, 3), 2.0))


def test_errors_in_a_bare_sweep_still_name_the_users_line():
    bad = ad.primitive("bad_vjp_shape_i30", lambda x: x * 2.0, vjp=lambda ct, out, x: (ct[..., :1],))
    x = ad.Tensor(np.ones((4, 3)), requires_grad=True)
    loss = ad.sum(ad.matmul(bad(ad.matmul(x, np.ones((3, 3)))), np.ones((3, 2))))   # bad-line
    with pytest.raises(ad.AutogradDagError, match="shape") as info:
        loss.backward()
    assert f"test_bare_vjps.py:{line_of('# bad-line', __name__)}" in str(info.value)


def test_module_walk_sees_lists_changed_in_place():
    # The walk of the module tree is made again at every user call: a layer appended to a
    # list after a first call is named (and its parameters found) at the next.
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(2, 2, rng=0)]
            self.sizes = (2, 2)          # a tuple of ints beside them
            self.table = {}              # an empty dict, filled later

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            for layer in self.table.values():
                x = layer(x)
            return x
    m = Stack()
    m(np.ones((1, 2)))
    extra, keyed = nn.Linear(2, 2, rng=1), nn.Linear(2, 2, rng=2)
    m.layers.append(extra)
    m.table["k"] = keyed
    ad.sum(m(np.ones((1, 2)))).backward()
    assert extra.weight.name == "layers.1.weight" and keyed.bias.name == "table.k.bias"
    assert extra.weight.grad is not None and keyed.weight.grad is not None
    assert [n for n, _ in m.named_parameters()] == ["layers.0.weight", "layers.0.bias", "layers.1.weight",
                                                    "layers.1.bias", "table.k.weight", "table.k.bias"]


@pytest.mark.parametrize("mask_shape", [(4, 4), (1, 4), (4, 1), (2, 1, 4, 4)])
def test_attention_mask_check_fast_path_still_finds_dead_rows(mask_shape):
    rng = np.random.default_rng(8)
    q = k = v = rng.standard_normal((2, 3, 4, 5))
    mask = np.zeros(mask_shape)
    assert nn.attention(q, k, v, mask=mask).shape == (2, 3, 4, 5)
    mask[..., 0, :] = -np.inf   # a row (or the one row broadcast to all) with every key masked
    with pytest.raises(ad.ShapeError, match="every key masked"):
        nn.attention(q, k, v, mask=mask)


@pytest.mark.parametrize("shape", [(6, 5), (2, 3, 5), (5,), (4, 0), (3, 1)])
def test_cross_entropy_gather_equals_take_along_axis(shape):
    # losses._gathered: the fancy index over the rows of a contiguous array, and np.take_along_axis
    # otherwise; a gather copies entries, so the two agree in every bit.
    losses = importlib.import_module("autograd_dag.primitives.fused.losses")
    rng = np.random.default_rng(9)
    a = rng.standard_normal(shape).astype(np.float32)
    col = rng.integers(0, max(shape[-1], 1), shape[:-1] + (1,)) if shape[-1] else np.zeros(shape[:-1] + (1,), int)
    for x in (a, np.asfortranarray(a), a[..., ::-1]):
        if x.shape[-1] == 0:
            continue
        assert bits_equal(losses._gathered(x, col), np.take_along_axis(x, col, -1))


def test_take_checks_indices_as_before():
    table = ad.Tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    with pytest.raises(ad.ShapeError, match="index 4 is out of range"):
        ad.take(table, np.array([0, 4]), axis=0)
    with pytest.raises(ad.ShapeError, match="index -5 is out of range"):
        ad.take(table, np.array([-5, 1]), axis=0)
    out = ad.take(table, np.array([[3, -1], [0, 2]]), axis=0)
    np.testing.assert_array_equal(out.value, np.take(table.value, [[3, -1], [0, 2]], axis=0))
