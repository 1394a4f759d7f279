"""Indexing, convolution and pooling primitives: values, VJP/JVP rules, conventions, errors.

The derivative rules are checked directly (no autodiff driver needed): for
random u (output-shaped) and v_i (input-shaped),
<u, (f(x + eps v) - f(x - eps v)) / 2 eps>  ==  sum_i <vjp_i(u), v_i>  ==  <u, jvp(v)>.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograd_dag.core import Tensor, apply
from autograd_dag.errors import ShapeError
from autograd_dag.primitives import conv, indexing
from autograd_dag.primitives.conv import (conv2d, conv2d_input_grad, conv2d_weight_grad,
                                          max_pool2d, max_pool2d_gather, max_pool2d_scatter)
from autograd_dag.primitives.indexing import (concatenate, getitem, index_add, one_hot, stack,
                                              take, take_add)
from autograd_dag.primitives.registry import PRIMITIVES
from tests.cases_conv import CASES as CONV_CASES
from tests.cases_conv import conv_ref, input_grad_ref, weight_grad_ref
from tests.cases_indexing import CASES as INDEXING_CASES

CASES = INDEXING_CASES + CONV_CASES
IDS = [f"{c.prim}-{c.id}" for c in CASES]
EPS = 1e-5
RTOL = 1e-6


def _tensors(args):
    return [Tensor(a) for a in args]


def _node(case, seed=0):
    """The case's output node, its primitive, parents, params and differentiable parent positions."""
    args = case.make_args(np.random.default_rng(seed))
    tensors = _tensors(args)
    out = case.fn(*tensors)
    prim, parents, params = out.prim, out.parents, out.params or {}
    wrt = case.wrt if case.wrt is not None else tuple(
        i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")
    wrt_ids = {id(tensors[i]) for i in wrt}
    arg_ids = {id(t) for t in tensors}
    diff = [i for i, p in enumerate(parents)
            if i not in prim.nondiff and p.dtype.kind == "f"
            and (id(p) in wrt_ids or id(p) not in arg_ids)]
    return out, prim, parents, params, diff


def _dot(a, b) -> float:
    return float(np.sum(np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)))


def _close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= RTOL * (abs(a) + abs(b) + scale)


def _reexecute(t: Tensor, env: dict) -> np.ndarray:
    """Value of the recorded graph ending at t, with the values in env (by id) substituted."""
    memo = dict(env)

    def value(node):
        key = id(node)
        if key not in memo:
            if node.prim is None:
                memo[key] = node.value
            else:
                memo[key] = node.prim.impl(*[value(p) for p in node.parents], **(node.params or {}))
        return memo[key]
    return value(t)


def test_every_primitive_has_a_case():
    mine = {name for name, p in PRIMITIVES.items()
            if p in {getattr(m, k) for m in (indexing, conv) for k in dir(m) if k.isupper()}}
    assert mine >= {"getitem", "index_add", "concatenate", "take", "take_add", "one_hot", "conv2d",
                    "conv2d_input_grad", "conv2d_weight_grad", "max_pool2d",
                    "max_pool2d_scatter", "max_pool2d_gather"}
    assert mine <= {c.prim for c in CASES}

# ------------------------------------------------------------- (a) values


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_value_matches_reference(case):
    args = case.make_args(np.random.default_rng(0))
    out = case.fn(*_tensors(args))
    assert out.prim is PRIMITIVES[case.prim]
    expect = case.ref(*args)
    assert out.shape == expect.shape
    assert out.dtype == (expect.dtype if expect.dtype.kind in "iu" else np.float64)  # (integer data stays so)
    np.testing.assert_allclose(out.value, expect, rtol=1e-12, atol=1e-12)
    # The abstract rule agrees with what the implementation produced.
    shape, dtype = out.prim.shape(*out.parents, **(out.params or {}))
    assert tuple(shape) == out.shape and np.dtype(dtype) == out.dtype

# ------------------------------------------------- (b) VJP / JVP vs FD


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rules_match_finite_differences(case):
    out, prim, parents, params, diff = _node(case)
    rng = np.random.default_rng(1)
    u = rng.standard_normal(out.shape)
    vs = {i: rng.standard_normal(parents[i].shape) for i in diff}

    def f(shift):
        vals = [Tensor(p.value + shift * vs[i]) if i in vs else p for i, p in enumerate(parents)]
        return apply(prim, *vals, **params).value

    fd = _dot(u, (f(EPS) - f(-EPS)) / (2 * EPS))

    cts = prim.vjp(Tensor(u), out, *parents, **params)
    assert len(cts) == len(parents)
    for i in prim.nondiff:
        assert cts[i] is None
    total = 0.0
    for i in diff:
        assert isinstance(cts[i], Tensor) and cts[i].prim is not None, "VJP must be recorded"
        assert cts[i].shape == parents[i].shape
        total += _dot(cts[i].value, vs[i])

    tangents = tuple(Tensor(vs[i]) if i in vs else None for i in range(len(parents)))
    jv = prim.jvp(tangents, out, *parents, **params)
    if not diff:
        assert jv is None and all(c is None for c in cts)
        return
    assert isinstance(jv, Tensor) and jv.shape == out.shape
    scale = float(np.sum(np.abs(u))) * max(np.max(np.abs(v), initial=0.0) for v in vs.values())
    assert _close(fd, total, scale), (fd, total)
    assert _close(fd, _dot(u, jv.value), scale), (fd, _dot(u, jv.value))

    # One tangent at a time: the JVP's "skip None" branches, against each VJP term.
    for i in diff:
        only = tuple(Tensor(vs[i]) if k == i else None for k in range(len(parents)))
        jv_i = prim.jvp(only, out, *parents, **params)
        assert jv_i.shape == out.shape
        assert _close(_dot(u, jv_i.value), _dot(cts[i].value, vs[i]), scale)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rules_reexecute_on_new_inputs(case):
    """The VJP/JVP graphs read the inputs, not values baked in at recording time."""
    out, prim, parents, params, diff = _node(case, seed=0)
    if not diff:
        return
    out2, _, parents2, _, _ = _node(case, seed=2)
    rng = np.random.default_rng(3)
    u = Tensor(rng.standard_normal(out.shape))
    tangents = tuple(Tensor(rng.standard_normal(p.shape)) if i in diff else None
                     for i, p in enumerate(parents))
    env = {id(p): p2.value for p, p2 in zip(parents, parents2)}
    env[id(out)] = out2.value
    cts = prim.vjp(u, out, *parents, **params)
    cts2 = prim.vjp(u, out2, *parents2, **params)
    for i in diff:
        np.testing.assert_allclose(_reexecute(cts[i], env), cts2[i].value, rtol=1e-12, atol=1e-12)
    jv = prim.jvp(tangents, out, *parents, **params)
    jv2 = prim.jvp(tangents, out2, *parents2, **params)
    np.testing.assert_allclose(_reexecute(jv, env), jv2.value, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 2), c=st.integers(1, 3), o=st.integers(1, 3), h=st.integers(1, 7),
       w=st.integers(1, 7), kh=st.integers(1, 4), kw=st.integers(1, 4), sh=st.integers(1, 3),
       sw=st.integers(1, 3), ph=st.integers(0, 2), pw=st.integers(0, 2), seed=st.integers(0, 99))
def test_conv2d_family_random_shapes(n, c, o, h, w, kh, kw, sh, sw, ph, pw, seed):
    """Values against the loops, and <C(x, w), g> = <x, Tx(g, w)> = <w, Tw(x, g)>."""
    if kh > h + 2 * ph or kw > w + 2 * pw:
        with pytest.raises(ShapeError, match="Expect: kernel"):
            conv2d(np.zeros((n, c, h, w)), np.zeros((o, c, kh, kw)), (sh, sw), (ph, pw))
        return
    rng = np.random.default_rng(seed)
    x, k = rng.standard_normal((n, c, h, w)), rng.standard_normal((o, c, kh, kw))
    y = conv2d(x, k, (sh, sw), (ph, pw)).value
    np.testing.assert_allclose(y, conv_ref(x, k, (sh, sw), (ph, pw)), rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(y.shape)
    gx = conv2d_input_grad(g, k, (h, w), (sh, sw), (ph, pw)).value
    gw = conv2d_weight_grad(x, g, (kh, kw), (sh, sw), (ph, pw)).value
    np.testing.assert_allclose(gx, input_grad_ref(g, k, (h, w), (sh, sw), (ph, pw)), atol=1e-12)
    np.testing.assert_allclose(gw, weight_grad_ref(x, g, (kh, kw), (sh, sw), (ph, pw)), atol=1e-12)
    assert np.isclose(_dot(y, g), _dot(x, gx)) and np.isclose(_dot(y, g), _dot(k, gw))

def test_conv2d_input_grad_banded_float32_and_an_infinite_cotangent():
    """The banded product (float32, few channels, narrow rows) against the loops; it multiplies
    the cotangent by the band's zeros, so an infinite cotangent goes the scatter's way instead
    (inf over its window, no NaN elsewhere)."""
    rng = np.random.default_rng(0)
    g, w = rng.standard_normal((2, 3, 3, 2)), rng.standard_normal((3, 2, 2, 3))
    assert conv._banded(2, 3, 4)
    gx = conv2d_input_grad(g.astype(np.float32), w.astype(np.float32), (5, 4), (2, 1), (1, 0)).value
    assert gx.dtype == np.float32
    np.testing.assert_allclose(gx, input_grad_ref(g, w, (5, 4), (2, 1), (1, 0)), rtol=1e-5, atol=1e-5)
    g = np.zeros((1, 2, 3, 3), np.float32)
    g[0, 1, 0, 0] = np.inf
    w = np.ones((2, 1, 2, 2), np.float32)
    assert conv._banded(1, 2, 4)
    with np.errstate(invalid="ignore"):  # BLAS may flag inf arithmetic (its sums stay inf)
        gx = conv2d_input_grad(g, w, (4, 4)).value
    np.testing.assert_array_equal(gx, input_grad_ref(g, w, (4, 4)))
    assert np.isinf(gx[0, 0, :2, :2]).all() and not np.isnan(gx).any()


def test_conv2d_input_grad_banded_float64_at_lenets_second_layer():
    """LeNet's second layer (C 6, 5x5, 12 wide) takes the band in float64 too; against the loops."""
    rng = np.random.default_rng(1)
    g, w = rng.standard_normal((3, 16, 8, 8)), rng.standard_normal((16, 6, 5, 5))
    assert conv._banded(6, 5, 12)
    gx = conv2d_input_grad(g, w, (12, 12)).value
    assert gx.dtype == np.float64
    # Sums of 400 products in another order: within 1e-12 of values of order 10.
    np.testing.assert_allclose(gx, input_grad_ref(g, w, (12, 12)), rtol=0, atol=1e-12)

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs, ws, stride, padding", [
    ((2, 2, 9, 40), (3, 2, 3, 4), (2, 2), (1, 2)),   # rows of 21 outputs: the windows in one copy (_windows)
    ((2, 6, 11, 12), (3, 6, 3, 4), (2, 3), (2, 1)),  # kw·C 24 > Wo: channels-last windows (_rows), strided
])
def test_conv2d_family_strided_window_views(dtype, xs, ws, stride, padding):
    """The as_strided window views at strides and paddings, against the loops: float64 within
    1e-12 (sums of at most 24 products of order 1, in another order); float32 within 1e-4 (its
    rounding, 6e-8 relative, over the same sums)."""
    rng = np.random.default_rng(7)
    x, k = rng.standard_normal(xs), rng.standard_normal(ws)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    y = conv2d(x.astype(dtype), k.astype(dtype), stride, padding).value
    assert y.dtype == dtype
    np.testing.assert_allclose(y, conv_ref(x, k, stride, padding), rtol=tol, atol=tol)
    g = rng.standard_normal(y.shape)
    gx = conv2d_input_grad(g.astype(dtype), k.astype(dtype), xs[2:], stride, padding).value
    gw = conv2d_weight_grad(x.astype(dtype), g.astype(dtype), ws[2:], stride, padding).value
    np.testing.assert_allclose(gx, input_grad_ref(g, k, xs[2:], stride, padding), rtol=tol, atol=tol)
    np.testing.assert_allclose(gw, weight_grad_ref(x, g, ws[2:], stride, padding), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("xs, ws, stride", [((2, 2, 9, 40), (3, 2, 3, 4), (2, 2)),    # one copy
                                             ((2, 2, 9, 11), (3, 2, 3, 4), (1, 2)),    # two copies
                                             ((2, 6, 11, 12), (3, 6, 3, 4), (2, 3))])  # channels-last
def test_conv2d_of_inputs_with_odd_strides(xs, ws, stride):
    """Views of inputs whose strides are no multiple of their itemsize (a field of a structured
    array: 12-byte records) or negative (reversed rows): the window views keep byte strides.
    Against the loops, within 1e-12 (float64 sums of at most 72 products of order 1)."""
    rng = np.random.default_rng(8)
    records = np.zeros(xs, dtype=[("a", "f4"), ("f", "f8")])
    records["f"] = rng.standard_normal(xs)
    k = rng.standard_normal(ws)
    for x, padding in itertools.product((records["f"], rng.standard_normal(xs)[..., ::-1]), (0, 1)):
        y = conv2d(x, k, stride, padding).value    # padding 0: the views are of x itself, not of a padded copy
        np.testing.assert_allclose(y, conv_ref(x, k, stride, padding), rtol=1e-12, atol=1e-12)
        g = rng.standard_normal(y.shape)
        np.testing.assert_allclose(conv2d_weight_grad(x, g, ws[2:], stride, padding).value,
                                   weight_grad_ref(x, g, ws[2:], stride, padding), rtol=1e-12, atol=1e-12)


def test_conv2d_kernel_larger_than_the_padded_input_is_a_shape_error():
    # The window views are made with as_strided, which would make an empty view without complaint.
    for fn in (lambda: conv2d(np.zeros((1, 1, 4, 20)), np.zeros((1, 1, 5, 3))),
               lambda: conv2d(np.zeros((1, 1, 20, 4)), np.zeros((1, 1, 3, 5)), 1, (0, 0)),
               lambda: conv2d(np.zeros((1, 3, 3, 3)), np.zeros((2, 3, 6, 2)), 1, 1)):
        with pytest.raises(ShapeError, match="Expect: kernel"):
            fn()


# ------------------------------------------------------ (c) exact conventions


def test_max_pool_tie_gives_all_to_first_maximum():
    x = np.array([[[[1.0, 3.0, 0.0, 0.0],
                    [3.0, 3.0, 0.0, 0.0],
                    [2.0, 2.0, 5.0, 1.0],
                    [2.0, 2.0, 1.0, 5.0]]]])
    xt = Tensor(x, requires_grad=True)
    out = max_pool2d(xt)
    np.testing.assert_array_equal(out.value, [[[[3.0, 0.0], [2.0, 5.0]]]])
    ct = Tensor(np.array([[[[10.0, 20.0], [30.0, 40.0]]]]))
    (gx,) = out.prim.vjp(ct, out, *out.parents, **out.params)
    expect = np.zeros((1, 1, 4, 4))
    expect[0, 0, 0, 1] = 10.0   # 3 at (0,1) comes before 3 at (1,0) and (1,1)
    expect[0, 0, 0, 2] = 20.0   # all-zero window: its first element
    expect[0, 0, 2, 0] = 30.0   # four 2s: the first
    expect[0, 0, 2, 2] = 40.0   # 5 at (2,2) before 5 at (3,3)
    np.testing.assert_array_equal(gx.value, expect)
    # The JVP reads the tangent at the same positions.
    t = Tensor(np.arange(16.0).reshape(1, 1, 4, 4))
    jv = out.prim.jvp((t,), out, *out.parents, **out.params)
    np.testing.assert_array_equal(jv.value, [[[[1.0, 2.0], [8.0, 10.0]]]])


def test_max_pool_nan_ends_the_search_for_the_maximum():
    nan = np.nan
    x = np.array([[[[1.0, nan, 7.0, 2.0],
                    [3.0, 0.0, 5.0, 9.0]]]])
    out = max_pool2d(Tensor(x), window=(2, 2))
    assert np.isnan(out.value[0, 0, 0, 0]) and out.value[0, 0, 0, 1] == 9.0
    ct = Tensor(np.array([[[[10.0, 20.0]]]]))
    (gx,) = out.prim.vjp(ct, out, *out.parents, **out.params)
    expect = np.zeros((1, 1, 2, 4))
    expect[0, 0, 0, 0] = 10.0   # 1 before the NaN; the 3 after it is not considered
    expect[0, 0, 1, 3] = 20.0
    np.testing.assert_array_equal(gx.value, expect)
    first = max_pool2d_scatter(np.ones((1, 1, 1, 1)), np.array([[[[nan, 5.0], [6.0, 7.0]]]])).value
    np.testing.assert_array_equal(first, [[[[1.0, 0.0], [0.0, 0.0]]]])


def test_max_pool_overlapping_windows_accumulate():
    x = np.zeros((1, 1, 3, 3))
    x[0, 0, 1, 1] = 5.0
    out = max_pool2d(Tensor(x), window=2, stride=1)
    (gx,) = out.prim.vjp(Tensor(np.full((1, 1, 2, 2), 1.5)), out, *out.parents, **out.params)
    expect = np.zeros((1, 1, 3, 3))
    expect[0, 0, 1, 1] = 6.0
    np.testing.assert_array_equal(gx.value, expect)


def test_max_pool_scatter_and_gather_are_transposes_at_ties():
    x = np.zeros((1, 2, 4, 5))        # every window is a tie
    rng = np.random.default_rng(0)
    ct, c = rng.standard_normal((1, 2, 2, 4)), rng.standard_normal((1, 2, 4, 5))
    s = max_pool2d_scatter(ct, x, 2, (2, 1)).value
    g = max_pool2d_gather(c, x, 2, (2, 1)).value
    assert np.isclose(_dot(s, c), _dot(ct, g))
    np.testing.assert_array_equal(g, c[:, :, ::2, :4])


def test_getitem_repeated_indices_accumulate():
    x = Tensor(np.zeros(3), requires_grad=True)
    out = getitem(x, [0, 0, 2, 0])
    (gx,) = out.prim.vjp(Tensor(np.array([1.0, 2.0, 3.0, 4.0])), out, *out.parents, **out.params)
    np.testing.assert_array_equal(gx.value, [7.0, 0.0, 3.0])
    assert gx.prim.name == "index_add"
    # Its VJP in turn is getitem again (closure for second derivatives).
    (back,) = gx.prim.vjp(Tensor(np.array([1.0, 10.0, 100.0])), gx, *gx.parents, **gx.params)
    assert back.prim.name == "getitem"
    np.testing.assert_array_equal(back.value, [1.0, 1.0, 100.0, 1.0])


def test_take_repeated_ids_accumulate():
    table = Tensor(np.ones((4, 2)), requires_grad=True)
    out = take(table, Tensor(np.array([3, 1, 3])))
    (gt, gi) = out.prim.vjp(Tensor(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])), out,
                            *out.parents, **out.params)
    assert gi is None and gt.prim.name == "take_add"
    np.testing.assert_array_equal(gt.value, [[0, 0], [3, 4], [0, 0], [6, 8]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, size", [(1024, 256), (64, 3), (300, 2), (7, 100), (1, 5)])
def test_take_add_rounds_and_reduceat_sum_each_ids_rows(dtype, n, size):
    # The rows of an id repeated up to _TAKE_ADD_ROUNDS times are added round by round (256 ids
    # over 1024 rows: ~12 rounds), those past it by one reduceat ((64, 3) and (300, 2): both paths);
    # negative ids count from the end. Against float64 sums of the same rows: a sum of k terms
    # added one after another is within (k − 1)·ε·Σ|terms| of the exact one (ε of the dtype), the
    # bound used here with k the id's count.
    rng = np.random.default_rng(n)
    ct = rng.standard_normal((n, 2, 3)).astype(dtype)
    idx = rng.integers(-size, size, n)
    got = indexing._take_add_impl(ct, idx, size=size, axis=0)
    assert got.dtype == dtype and got.shape == (size, 2, 3)
    ids = np.where(idx < 0, idx + size, idx)
    exact, magnitude = np.zeros((size, 2, 3)), np.zeros((size, 2, 3))
    np.add.at(exact, ids, ct.astype(np.float64))
    np.add.at(magnitude, ids, np.abs(ct.astype(np.float64)))
    count = np.bincount(ids, minlength=size)[:, None, None]
    assert np.all(np.abs(got - exact) <= np.maximum(count - 1, 0) * np.finfo(dtype).eps * magnitude)
    assert np.all(got[count[:, 0, 0] == 0] == 0)
    # An id's one row is its row, copied (bit for bit, −0.0 included).
    for i in np.flatnonzero(count[:, 0, 0] == 1):
        assert got[i].tobytes() == ct[ids == i][0].tobytes()


def test_getitem_index_forms_are_normalised():
    x = Tensor(np.arange(12.0).reshape(3, 4))
    by_tensor = getitem(x, Tensor(np.array([2, 0])))
    by_list = getitem(x, [2, 0])
    np.testing.assert_array_equal(by_tensor.value, x.value[[2, 0]])
    np.testing.assert_array_equal(by_list.value, x.value[[2, 0]])
    assert by_tensor.parents == (x,)                # the index is a parameter, not an input
    mask = getitem(x, x.value > 4).params["index"]  # a mask becomes integer arrays
    assert all(isinstance(i, np.ndarray) and i.dtype.kind == "i" for i in mask)
    assert getitem(x, np.int64(1)).params["index"] == (1,)
    assert getitem(x, 1).shape == (4,) and getitem(x, (1, 2)).shape == ()
    assert type(getitem(x, (1, 2)).value) is np.ndarray


def test_stack_and_concatenate_values_and_dtype():
    a, b = np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)
    assert stack([a, b], axis=1).shape == (2, 2, 3)
    assert concatenate([Tensor(a), b]).dtype == np.float32


def test_conv_and_pool_keep_float32():
    x = np.ones((1, 2, 6, 6), np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    assert conv2d(x, w).dtype == np.float32
    assert max_pool2d(x).dtype == np.float32
    assert conv2d_input_grad(np.ones((1, 3, 4, 4), np.float32), w, (6, 6)).dtype == np.float32
    assert conv2d_weight_grad(x, np.ones((1, 3, 4, 4), np.float32), (3, 3)).dtype == np.float32

# -------------------------------------------------------------- (d) errors


def _raises(fn, *words):
    with pytest.raises(ShapeError) as info:
        fn()
    message = str(info.value)
    for word in words:
        assert word in message, message
    return message


def test_conv_shape_errors():
    x = np.zeros((1, 3, 5, 5))
    _raises(lambda: conv2d(x, np.zeros((2, 4, 3, 3))), "conv2d", "Expect", "Actual", "channels")
    _raises(lambda: conv2d(x, np.zeros((2, 3, 6, 3))), "Expect", "Actual", "kernel height 6")
    _raises(lambda: conv2d(x, np.zeros((2, 3, 3, 8)), padding=1), "kernel width 8", "5 + 2*1 = 7")
    _raises(lambda: conv2d(np.zeros((3, 5, 5)), np.zeros((2, 3, 3, 3))), "Expect", "4 axes", "(3, 5, 5)")
    _raises(lambda: conv2d(x, np.zeros((3, 3, 3))), "Expect", "4 axes")
    _raises(lambda: conv2d(x, np.zeros((2, 3, 3, 3)), stride=0), "Expect", "stride >= 1")
    _raises(lambda: conv2d(x, np.zeros((2, 3, 3, 3)), padding=(1, 2, 3)), "Expect", "pair")
    _raises(lambda: conv2d_input_grad(np.zeros((1, 2, 4, 4)), np.zeros((2, 3, 3, 3)), (5, 5)),
            "conv2d_input_grad", "Expect", "(3, 3)", "Actual", "(4, 4)")
    _raises(lambda: conv2d_weight_grad(x, np.zeros((2, 2, 3, 3)), (3, 3)), "batch", "Expect", "Actual")


def test_pool_shape_errors():
    _raises(lambda: max_pool2d(np.zeros((1, 1, 3, 3)), 4), "max_pool2d", "Expect", "window", "Actual")
    _raises(lambda: max_pool2d(np.zeros(5)), "Expect", "at least 2 axes")
    _raises(lambda: max_pool2d_scatter(np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 4, 4))),
            "max_pool2d_scatter", "Expect", "(1, 1, 2, 2)", "Actual", "(1, 1, 3, 3)")


def test_take_out_of_range_names_index_and_size():
    table = np.zeros((5, 2))
    msg = _raises(lambda: take(table, np.array([1, 7, 2])), "take", "index 7", "size 5", "Expect", "Actual")
    assert "[-5, 5)" in msg
    _raises(lambda: take(table, np.array([-6])), "index -6", "size 5")
    _raises(lambda: take(table, np.array([1.0])), "Expect: integer indices")
    _raises(lambda: take_add(np.zeros(2), np.array([0, 4]), 3), "take_add", "index 4", "size 3")


def test_one_hot_errors():
    _raises(lambda: one_hot(np.array([0, 3]), 3), "one_hot", "index 3", "3 classes", "Expect")
    _raises(lambda: one_hot(np.array([-1]), 3), "index -1")
    _raises(lambda: one_hot(np.array([0]), 0), "num_classes")
    _raises(lambda: one_hot(np.array([0.5]), 3), "integer")


def test_bad_indexing_errors():
    x = Tensor(np.zeros((3, 4)))
    _raises(lambda: getitem(x, (0, 5)), "getitem", "Expect", "Actual", "(3, 4)", "out of bounds")
    _raises(lambda: getitem(x, (0, 0, 0)), "getitem", "too many indices")
    _raises(lambda: getitem(x, np.array([0.5])), "getitem", "Expect", "dtype float64")
    _raises(lambda: getitem(x, "a"), "getitem", "Expect", "str")
    _raises(lambda: getitem(x, np.ones(4, bool)), "getitem", "Expect")
    _raises(lambda: getitem(x, slice(0, 1.5)), "slice bounds")
    _raises(lambda: index_add(np.zeros(2), (3, 4), 1), "index_add", "Expect", "(4,)", "Actual", "(2,)")
    _raises(lambda: concatenate([np.zeros((2, 3)), np.zeros((3, 2))]), "concatenate", "Expect",
            "Actual", "(3, 2)")
    _raises(lambda: concatenate([np.zeros((2, 3))], axis=2), "concatenate", "axis 2")
    _raises(lambda: concatenate([]), "concatenate")
    _raises(lambda: stack([np.zeros(2), np.zeros(3)]), "stack", "Expect", "(3,)")
