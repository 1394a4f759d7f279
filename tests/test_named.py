"""ad.named: every named operation against the same computation written positionally with numpy."""

import itertools
import re

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import named as N
from autograd_dag import nn
from autograd_dag.named import AxisNameError, NamedTensor, seed000

RNG = np.random.default_rng(0)
# Sums of a few dozen products of N(0, 1) draws, added in another order by each code path,
# agree to about 1e-15 absolutely, but an entry that cancels to near zero has no relative bound;
# RNG is shared by the file's tests, so which draws a test gets depends on how xdist splits them.
_SUM_ATOL = 1e-12


def rand(*shape):
    return RNG.normal(size=shape)


def stored(value, names, order):
    """The same named tensor stored with its axes in ``order`` (a permutation of ``names``)."""
    perm = [names.index(n) for n in order]
    return NamedTensor(np.transpose(value, perm), order)


def orders(names):
    return [tuple(p) for p in itertools.permutations(names)]


# ------------------------------------------------------------ construction


def test_construction_attributes_and_repr():
    x = NamedTensor(rand(2, 3), ("seq", "layer"))
    assert x.names == ("seq", "layer") and x.sizes == {"seq": 2, "layer": 3} and x.size("layer") == 3
    assert repr(x) == "NamedTensor(seq:2 × layer:3, float64)"
    assert NamedTensor(np.ones((2, 3)), "seq, layer").names == ("seq", "layer")
    t = ad.Tensor(rand(4), requires_grad=True)
    assert NamedTensor(t, "a").tensor is t  # shared, not copied
    assert NamedTensor(3.0, ()).names == ()


def test_rename_align_and_index():
    v = rand(2, 3, 4)
    x = NamedTensor(v, "a b c")
    y = x.rename(a="a2").rename({"b": "b'"})
    assert y.names == ("a2", "b'", "c")
    np.testing.assert_array_equal(y.align("c", "a2", "b'").value, np.einsum("abc->cab", v))
    np.testing.assert_array_equal(x.align("b", "new", "a", "c").value, np.einsum("abc->bac", v)[:, None])
    np.testing.assert_array_equal(x.index(b=1).align("c", "a").value, v[:, 1, :].T)
    np.testing.assert_array_equal(x[{"c": slice(1, 3), "a": -1}].align("b", "c").value, v[-1, :, 1:3])
    np.testing.assert_array_equal(x.rename({"b": "b'"})[{"b'": 2}].value, v[:, 2])


@pytest.mark.parametrize("op, ref", [(N.add, np.add), (N.subtract, np.subtract), (N.multiply, np.multiply),
                                     (N.divide, np.divide), (N.maximum, np.maximum), (N.minimum, np.minimum)])
def test_elementwise_broadcasts_by_union_of_names_whatever_the_storage_order(op, ref):
    a, b = rand(2, 3, 4), rand(4, 5, 2) + 3.0   # a: (seq, layer, heads); b: (heads, key, seq)
    want = ref(a[:, :, :, None], np.einsum("hks->shk", b)[:, None, :, :])   # (seq, layer, heads, key)
    for oa in orders(("seq", "layer", "heads"))[::2]:
        for ob in orders(("heads", "key", "seq"))[::3]:
            out = op(stored(a, ["seq", "layer", "heads"], oa), stored(b, ["heads", "key", "seq"], ob))
            assert set(out.names) == {"seq", "layer", "heads", "key"}
            np.testing.assert_allclose(out.align("seq", "layer", "heads", "key").value, want, rtol=1e-15)


def test_operators_scalars_and_unary_functions():
    v = rand(3, 2)
    x = NamedTensor(v, "a b")
    np.testing.assert_allclose((2.0 * x - 1.0).value, 2 * v - 1)
    np.testing.assert_allclose((1.0 / (x * x + 1.0)).value, 1 / (v * v + 1))
    np.testing.assert_allclose((x ** 2).value, v ** 2)
    np.testing.assert_allclose((2.0 ** x).value, 2.0 ** v)
    np.testing.assert_allclose((-x).value, -v)
    np.testing.assert_array_equal((x > 0).value, v > 0)
    # == and != are elementwise by name (they compared identities and returned False before).
    y = NamedTensor(np.where(v > 0, v, 0.0).T, "b a")
    np.testing.assert_array_equal((x == y).align("a", "b").value, v > 0)
    np.testing.assert_array_equal((x != y).align("a", "b").value, v <= 0)
    np.testing.assert_array_equal((x == 0.0).value, v == 0.0)
    for f, g in [(N.exp, np.exp), (N.tanh, np.tanh), (N.relu, lambda u: np.maximum(u, 0)), (N.sin, np.sin),
                 (N.cos, np.cos), (N.abs, np.abs), (N.logistic, lambda u: 1 / (1 + np.exp(-u)))]:
        np.testing.assert_allclose(f(x).value, g(v), rtol=1e-14)
        assert f(x).names == ("a", "b")
    np.testing.assert_allclose(x.abs().sqrt().log().value, np.log(np.sqrt(np.abs(v))))
    np.testing.assert_allclose(N.softplus(x).value, np.log1p(np.exp(v)))
    s = NamedTensor(np.array(True), ())
    assert N.where(s, x, 0.0).names == ("a", "b")


def test_where_broadcasts_three_operands_by_name():
    c, a, b = rand(3) > 0, rand(4), rand(3, 4)
    out = N.where(NamedTensor(c, "s"), NamedTensor(a, "l"), NamedTensor(b.T, "l s"))
    np.testing.assert_array_equal(out.align("s", "l").value, np.where(c[:, None], a[None, :], b))


# ------------------------------------------------------------ contraction


@pytest.mark.parametrize("over", ["layer", ("heads", "key")])
def test_ndot_against_numpy_einsum(over):
    A, B = rand(2, 5, 3), rand(4, 5, 2, 3)   # A: heads, layer, key; B: seq, layer, heads, key
    names_a, names_b = ["heads", "layer", "key"], ["seq", "layer", "heads", "key"]
    if over == "layer":   # heads and key are shared but not contracted: kept, elementwise
        want, out_names = np.einsum("hlk,slhk->hks", A, B), ("heads", "key", "seq")
    else:
        want, out_names = np.einsum("hlk,slhk->ls", A, B), ("layer", "seq")
    for oa in orders(names_a)[::2]:
        for ob in orders(names_b)[::7]:
            out = N.ndot(stored(A, names_a, oa), stored(B, names_b, ob), over)
            assert set(out.names) == set(out_names)
            np.testing.assert_allclose(out.align(*out_names).value, want, rtol=1e-13)


def test_ndot_outer_product_and_full_contraction():
    a, b = rand(3), rand(4)
    np.testing.assert_allclose(N.ndot(NamedTensor(a, "i"), NamedTensor(b, "j"), ()).align("i", "j").value,
                               np.einsum("i,j->ij", a, b))
    np.testing.assert_allclose(N.ndot(NamedTensor(a, "i"), NamedTensor(a, "i"), "i").value, a @ a)
    assert NamedTensor(a, "i").ndot(NamedTensor(a, "i"), "i").names == ()


# ------------------------------------------------------- functions over axes


def test_reductions_against_numpy():
    v = rand(2, 3, 4)
    for order in orders(("a", "b", "c"))[::2]:
        x = stored(v, ["a", "b", "c"], order)
        np.testing.assert_allclose(N.nsum(x, "b").align("a", "c").value, np.einsum("abc->ac", v), rtol=1e-14)
        np.testing.assert_allclose(x.nsum(("a", "c")).value, np.einsum("abc->b", v), rtol=1e-14)
        np.testing.assert_allclose(N.nmean(x, "c").align("a", "b").value, v.mean(axis=2), rtol=1e-14)
        np.testing.assert_allclose(N.nmax(x, "a").align("b", "c").value, v.max(axis=0))
        np.testing.assert_allclose(N.nmin(x, ("a", "b")).value, v.min(axis=(0, 1)))
        assert x.sum("a").names == tuple(n for n in order if n != "a")
        assert x.mean("a").names == x.max("a").names == x.min("a").names


def test_softmax_logsumexp_argmax_standardize_against_numpy():
    v = rand(3, 5)
    e = np.exp(v - v.max(axis=1, keepdims=True))
    for order in orders(("seq", "vocab")):
        x = stored(v, ["seq", "vocab"], order)
        np.testing.assert_allclose(N.softmax(x, "vocab").align("seq", "vocab").value,
                                   e / e.sum(axis=1, keepdims=True), rtol=1e-14)
        np.testing.assert_allclose(x.softargmax("vocab").align("seq", "vocab").value,
                                   e / e.sum(axis=1, keepdims=True), rtol=1e-14)
        np.testing.assert_allclose(N.logsumexp(x, "vocab").value, np.log(np.exp(v).sum(axis=1)), rtol=1e-14)
        np.testing.assert_array_equal(x.argmax("vocab").align("seq", "vocab").value,
                                      np.eye(5)[v.argmax(axis=1)])
        mu, var = v.mean(axis=0), v.var(axis=0)
        np.testing.assert_allclose(x.standardize("seq", eps=0.1).align("seq", "vocab").value,
                                   (v - mu) / np.sqrt(var + 0.1), rtol=1e-13)
        np.testing.assert_allclose(N.standardize(x, "seq").align("seq", "vocab").value,
                                   (v - mu) / np.sqrt(var + 1e-5), rtol=1e-13)


# ---------------------------------------------------------- reshaping by name


def test_flatten_and_split_by_name():
    v = rand(2, 3, 4, 5)   # batch, chans, height, width
    x = NamedTensor(v, "batch chans height width")
    f = x.flatten(("height", "width", "chans"), "layer")
    assert f.sizes == {"batch": 2, "layer": 60}
    np.testing.assert_array_equal(f.align("batch", "layer").value, v.transpose(0, 2, 3, 1).reshape(2, 60))
    for order in orders(("batch", "chans", "height", "width"))[::5]:
        g = stored(v, ["batch", "chans", "height", "width"], order).flatten(("height", "width", "chans"), "layer")
        np.testing.assert_array_equal(g.align("batch", "layer").value, f.align("batch", "layer").value)
    back = f.split("layer", height=4, width=5, chans=3)
    np.testing.assert_array_equal(back.align("batch", "chans", "height", "width").value, v)
    np.testing.assert_array_equal(N.split(f, "layer", {"height": 4, "width": 5, "chans'": 3})
                                  .align("batch", "chans'", "height", "width").value, v)


def test_unroll_against_numpy_windows():
    v = rand(2, 7)
    x = NamedTensor(v, "batch seq")
    u = N.unroll(x, "seq", "kernel", 3, stride=2)
    want = np.stack([v[:, i * 2: i * 2 + 3] for i in range(3)], axis=1)   # batch, seq, kernel
    np.testing.assert_array_equal(u.align("batch", "seq", "kernel").value, want)
    assert x.unroll("seq", "kernel", 7).sizes == {"batch": 2, "seq": 1, "kernel": 7}


def _conv_numpy(x, w, b, stride=1):
    """Positional conv2d: out[n,o,a,c] = sum_{i,p,q} w[o,i,p,q] x[n,i,a*s+p,c*s+q] + b[o], by numpy einsum."""
    kh, kw = w.shape[2:]
    ho, wo = (x.shape[2] - kh) // stride + 1, (x.shape[3] - kw) // stride + 1
    win = np.empty(x.shape[:2] + (ho, wo, kh, kw))
    for a in range(ho):
        for c in range(wo):
            win[:, :, a, c] = x[:, :, a * stride:a * stride + kh, c * stride:c * stride + kw]
    return np.einsum("oipq,niacpq->noac", w, win) + b[None, :, None, None]


def test_conv2d_against_numpy_and_the_unroll_definition():
    x, w, b = rand(2, 3, 7, 6), rand(4, 3, 3, 2), rand(4)
    X = NamedTensor(x, "batch chans height width")
    W = NamedTensor(w, "chans' chans kh kw")
    B = NamedTensor(b, "chans'")
    want = _conv_numpy(x, w, b)
    for order in orders(("batch", "chans", "height", "width"))[::6]:
        Xo = stored(x, ["batch", "chans", "height", "width"], order)
        out = N.conv2d(Xo, stored(w, ["chans'", "chans", "kh", "kw"], ("kw", "chans", "chans'", "kh")), B)
        np.testing.assert_allclose(out.align("batch", "chans'", "height", "width").value, want, rtol=1e-12, atol=_SUM_ATOL)
    # The paper's definition: W ⊙_{chans,kh,kw} unroll_{height→(height,kh)} unroll_{width→(width,kw)} X + b.
    U = X.unroll("height", "kh", 3).unroll("width", "kw", 2)
    paper = N.ndot(W, U, ("chans", "kh", "kw")) + B
    np.testing.assert_allclose(paper.align("batch", "chans'", "height", "width").value, want, rtol=1e-12, atol=_SUM_ATOL)
    strided = N.conv2d(X, W, stride=2)
    np.testing.assert_allclose(strided.align("batch", "chans'", "height", "width").value,
                               _conv_numpy(x, w, np.zeros(4), stride=2), rtol=1e-12, atol=_SUM_ATOL)
    padded = N.conv2d(X, W, padding=1)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    np.testing.assert_allclose(padded.align("batch", "chans'", "height", "width").value,
                               _conv_numpy(xp, w, np.zeros(4)), rtol=1e-12, atol=_SUM_ATOL)


def test_max_pool2d_against_numpy():
    v = rand(2, 3, 6, 4)
    want = v.reshape(2, 3, 3, 2, 2, 2).max(axis=(3, 5))
    for order in orders(("batch", "chans", "height", "width"))[::5]:
        out = N.max_pool2d(stored(v, ["batch", "chans", "height", "width"], order), 2)
        np.testing.assert_array_equal(out.align("batch", "chans", "height", "width").value, want)
    out = N.max_pool2d(NamedTensor(v, "batch chans height width"), 3, 2, stride=(1, 2))
    np.testing.assert_array_equal(out.align("batch", "chans", "height", "width").value,
                                  np.stack([v[:, :, i:i + 3].reshape(2, 3, 3, 2, 2).max(axis=(2, 4))
                                            for i in range(4)], axis=2))


# --------------------------------------------------------------- errors


def _raises(fn, *fragments):
    with pytest.raises(AxisNameError) as info:
        fn()
    message = str(info.value)
    for f in fragments:
        assert f in message, message
    assert not re.search(r"\baxis [0-9]|\bdimension [0-9]|position [0-9]", message), message
    return message


def test_error_paths_name_the_axes():
    x = NamedTensor(rand(2, 3), "seq key")
    y = NamedTensor(rand(3, 4), "layer hidden")
    _raises(lambda: N.ndot(x, y, "layer"), "ndot over 'layer': Expect", "the left operand has axes (seq, key)")
    _raises(lambda: N.ndot(y, x, "layer"), "the right operand has axes (seq, key)")
    _raises(lambda: N.ndot(x, np.ones(3), "key"), "the right operand is a ndarray")
    _raises(lambda: N.ndot(x, NamedTensor(rand(4), "key"), "key"), "'key'", "key:3", "key:4")
    _raises(lambda: x + NamedTensor(rand(5), "seq"), "add", "seq:2", "seq:5")
    _raises(lambda: x + np.ones(3), "positional", "name its axes")
    _raises(lambda: x * ad.Tensor(np.ones((2, 3))), "positional Tensor")
    _raises(lambda: NamedTensor(np.ones((2, 3)), "a"), "one name per axis", "(a)")
    _raises(lambda: NamedTensor(np.ones((2, 3)), "a a"), "distinct", "'a'")
    _raises(lambda: NamedTensor(np.ones(2), [3]), "non-empty strings")
    _raises(lambda: NamedTensor(x, "a b"), "NamedTensor with axes (seq, key)")
    _raises(lambda: x.rename(layer="l"), "rename 'layer'", "(seq, key)")
    _raises(lambda: x.rename(seq="key"), "distinct")
    _raises(lambda: x.align("seq"), "'key' missing")
    _raises(lambda: x[0], "index by name")
    _raises(lambda: x.index(vocab=0), "'vocab'", "(seq, key)")
    _raises(lambda: x.index(seq=2), "seq=2", "'seq' of size 2")
    _raises(lambda: x.index(seq=[0, 1]), "an int or a slice")
    for f in (N.nsum, N.nmean, N.nmax, N.nmin, N.softmax, N.logsumexp, N.argmax, N.standardize):
        _raises(lambda f=f: f(x, "vocab"), "'vocab'", "(seq, key)")
    _raises(lambda: N.softmax(x, ("seq", "key")), "one axis name")
    _raises(lambda: N.softmax(np.ones(3), "seq"), "a NamedTensor")
    _raises(lambda: N.nsum(x, ("seq", "seq")), "distinct")
    _raises(lambda: x.flatten(("seq", "layer"), "l"), "'layer'")
    _raises(lambda: NamedTensor(rand(2, 3, 4), "a b c").flatten(("a", "b"), "c"), "new name", "(a, b, c)")
    _raises(lambda: x.split("key", a=2, b=2), "|key| = 3", "product 4")
    _raises(lambda: x.split("key", seq=3), "already has axes (seq, key)")
    _raises(lambda: x.unroll("key", "seq", 2), "new window name")
    _raises(lambda: x.unroll("key", "k", 4), "|key| = 3")
    X = NamedTensor(rand(1, 2, 5, 5), "batch chans height width")
    W = NamedTensor(rand(3, 2, 2, 2), "chans' chans kh kw")
    _raises(lambda: N.conv2d(X.rename(height="h"), W), "input to have axes (chans, height, width)",
            "(batch, chans, h, width)")
    _raises(lambda: N.conv2d(X, W.rename(kh="k")), "kernel to have axes (chans, kh, kw)")
    _raises(lambda: N.conv2d(X, NamedTensor(rand(3, 4, 2, 2), "chans' chans kh kw")), "chans:2", "chans:4")
    _raises(lambda: N.conv2d(X, W.rename({"chans'": "batch"})), "rename 'batch'")
    _raises(lambda: N.conv2d(np.ones((1, 2, 5, 5)), W), "named input")
    _raises(lambda: N.max_pool2d(X, 6), "height:5")
    _raises(lambda: N.max_pool2d(X.rename(width="w"), 2), "'width'", "(batch, chans, height, w)")
    _raises(lambda: np.asarray(x), "no names", ".align(*names)")
    _raises(lambda: N.grad(lambda x: x * 2.0)(x), "scalar", "(seq, key)")
    _raises(lambda: N.exp(np.ones(2)), "NamedTensors or scalars")
    _raises(lambda: N.exp(2.0), "a NamedTensor")
    _raises(lambda: N.where(np.array([True, False]), x, 0.0), "where", "positional ndarray")
    with pytest.raises(ad.AutogradDagError, match="ambiguous"):
        bool(x > 0)
    assert issubclass(AxisNameError, ad.ShapeError)


# --------------------------------------------------------------- gradients


def test_grad_and_value_and_grad_return_names():
    W = NamedTensor(rand(3, 4), "hidden layer")
    X = NamedTensor(rand(5, 4), "seq layer")

    def loss(W, X):
        return N.ndot(W, X, "layer").tanh().nsum(("hidden", "seq"))
    v, (gW, gX) = N.value_and_grad(loss, argnums=(0, 1))(W, X)
    want_v = np.tanh(np.einsum("hl,sl->hs", W.value, X.value)).sum()
    np.testing.assert_allclose(v, want_v)
    d = 1 - np.tanh(np.einsum("hl,sl->hs", W.value, X.value)) ** 2
    assert gW.names == ("hidden", "layer") and gX.names == ("seq", "layer")
    np.testing.assert_allclose(gW.value, np.einsum("hs,sl->hl", d, X.value), rtol=1e-12, atol=_SUM_ATOL)
    np.testing.assert_allclose(gX.value, np.einsum("hs,hl->sl", d, W.value), rtol=1e-12, atol=_SUM_ATOL)
    g = N.grad(loss)(W.rename({"hidden": "h"}).rename(h="hidden"), X)
    np.testing.assert_allclose(g.value, gW.value)
    # nested arguments and aux outputs keep their names
    gs, aux = N.grad(lambda p: (loss(p["W"], X), N.relu(p["W"])), has_aux=True)({"W": W, "c": 1.0})
    assert gs["W"].names == ("hidden", "layer") and aux.names == ("hidden", "layer")


def test_backward_fills_grad_with_names():
    W = NamedTensor(rand(3, 4), "hidden layer", requires_grad=True)
    X = NamedTensor(rand(5, 4), "seq layer")
    assert W.grad is None
    N.ndot(W, X, "layer").nsum(("hidden", "seq")).backward()
    assert W.grad.names == ("hidden", "layer")
    np.testing.assert_allclose(W.grad.align("layer", "hidden").value, np.tile(X.value.sum(0)[:, None], (1, 3)))


def test_sizes_windows_and_strides_must_be_integers():
    # int() rounded them down: split into b:1.5 gave b:1, a 2.7 window unrolled 2 entries.
    X = NamedTensor(np.arange(6.0), "n")
    with pytest.raises(AxisNameError, match=r"split 'n': Expect: the size of 'b' an integer. Actual: 1.5"):
        N.split(X, "n", {"a": 6, "b": 1.5})
    with pytest.raises(AxisNameError, match="unroll: Expect: the window size an integer"):
        N.unroll(X, "n", "w", 2.7)
    with pytest.raises(AxisNameError, match="unroll: Expect: the stride an integer"):
        N.unroll(X, "n", "w", 2, stride=1.5)
    with pytest.raises(AxisNameError, match="max_pool2d: Expect: kh an integer"):
        N.max_pool2d(NamedTensor(np.ones((4, 4)), "height width"), 2.5)
    assert N.split(X, "n", a=np.int64(2), b=3).sizes == {"a": 2, "b": 3}


def test_one_hot_refuses_tokens_out_of_range():
    # np.eye(V)[-1] is the last token's row: token −1 became a one-hot of token V − 1.
    np.testing.assert_array_equal(seed000.one_hot(np.array([2, 0]), 3).value, [[0, 0, 1], [1, 0, 0]])
    for bad in (-1, 3):
        with pytest.raises(ad.ShapeError, match=f"one_hot: token {bad} is out of range"):
            seed000.one_hot(np.array([[0, bad]]), 3)


def test_backward_takes_the_cotangent_by_name_never_in_storage_order():
    # b + X stores (layer, seq): a positional cotangent meant as (seq, layer) was read transposed.
    X = NamedTensor(np.zeros((2, 2)), "seq layer", requires_grad=True)
    Y = NamedTensor(np.zeros(2), "layer") + X
    assert Y.names == ("layer", "seq")
    g = np.array([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(AxisNameError, match=r"backward: Expect: grad as a NamedTensor with axes \(layer, seq\)"):
        Y.backward(g)
    with pytest.raises(AxisNameError, match="positional Tensor of shape"):
        Y.backward(ad.Tensor(g))
    Y.backward(NamedTensor(g, "seq layer"))
    np.testing.assert_array_equal(X.grad.align("seq", "layer").value, g)


@pytest.mark.parametrize("fn", [
    lambda X, W: N.softmax(N.ndot(W, X, "layer"), "hidden"),
    lambda X, W: N.standardize(X, "layer", eps=0.1) * W.nsum("hidden"),
    lambda X, W: N.logsumexp(N.ndot(W, X, "layer"), "seq"),
    lambda X, W: N.nmax(X.flatten(("seq", "layer"), "flat"), "flat") + W.nmean(("hidden", "layer")),
    lambda X, W: N.unroll(X, "seq", "k", 2).split("layer", {"a": 2, "b": 2}).index(a=1).rename(b="c"),
])
def test_check_grads_on_named_functions(fn):
    X = NamedTensor(rand(3, 4), "seq layer")
    W = NamedTensor(rand(2, 4), "hidden layer")
    N.check_grads(fn, (X, W))


def test_check_grads_on_named_conv_and_pool():
    X = NamedTensor(rand(1, 2, 5, 5), "batch chans height width")
    W = NamedTensor(rand(3, 2, 2, 2), "chans' chans kh kw")
    N.check_grads(lambda X, W: N.max_pool2d(N.conv2d(X, W), 2), (X, W))


# ------------------------------------------------------------ seed 000 models


@pytest.mark.parametrize("vocab, d, heads, hidden, layers, batch, length", [
    (7, 8, 2, 16, 2, 2, 5), (11, 12, 3, 10, 1, 1, 4), (5, 4, 1, 6, 3, 3, 6)])
def test_named_transformer_equals_positional(vocab, d, heads, hidden, layers, batch, length):
    lm = nn.TransformerLM(vocab_size=vocab, d_model=d, heads=heads, hidden=hidden, layers=layers,
                          rng=vocab + layers)
    for p in lm.parameters():   # non-trivial LayerNorm and FFN biases
        if p.ndim == 1:
            p.value[...] = RNG.normal(size=p.shape)
    tokens = RNG.integers(0, vocab, (batch, length))
    named_lm = seed000.TransformerLM.from_positional(lm)
    I = seed000.one_hot(tokens, vocab)
    O = named_lm(I)
    assert set(O.names) == {"batch", "seq", "vocab"}
    np.testing.assert_allclose(O.align("batch", "seq", "vocab").value, lm(tokens).value, rtol=0, atol=1e-12)
    # one sequence without a batch axis
    O1 = named_lm(seed000.one_hot(tokens[0], vocab))
    np.testing.assert_allclose(O1.align("seq", "vocab").value, lm(tokens[0]).value[0] if lm(tokens[0]).ndim == 3
                               else lm(tokens[0]).value, atol=1e-12)
    # the parameters are shared: the same loss gives the same gradients
    target = np.eye(vocab)[RNG.integers(0, vocab, (batch, length))]
    loss_pos = (ad.log(lm(tokens)) * target).sum()
    loss_pos.backward()
    want = {n: p.grad.value.copy() for n, p in lm.named_parameters()}
    lm.zero_grad()
    loss_named = N.nsum(N.log(named_lm(I)) * NamedTensor(target, "batch seq vocab"), ("batch", "seq", "vocab"))
    loss_named.backward()
    np.testing.assert_allclose(float(loss_named), float(loss_pos), rtol=1e-12)
    for n, p in lm.named_parameters():
        np.testing.assert_allclose(p.grad.value, want[n], rtol=1e-9, atol=1e-12, err_msg=n)


def test_named_positional_encoding_and_mask_match_nn():
    np.testing.assert_allclose(seed000.positional_encoding(9, 6).align("seq", "layer").value,
                               nn.positional_encoding(9, 6), atol=1e-13)
    np.testing.assert_array_equal(seed000.causal_mask(4).align("seq'", "seq").value, nn.causal_mask(4))


@pytest.mark.parametrize("image, channels, kernels, pools, hidden, classes, batch", [
    (12, (2, 3), (3, 3), (2, 2), 5, 4, 2), (16, (3, 4), (5, 3), (2, 1), 7, 10, 1),
    (28, (6, 16), (5, 5), (2, 2), 12, 10, 2)])
def test_named_lenet_equals_positional_with_and_without_flattening(image, channels, kernels, pools, hidden,
                                                                   classes, batch):
    net = nn.LeNet(in_channels=2, image_size=image, num_classes=classes, channels=channels, kernel_sizes=kernels,
                   pools=pools, hidden=hidden, rng=image)
    for p in net.parameters():
        if p.ndim == 1:
            p.value[...] = RNG.normal(size=p.shape)
    x = RNG.normal(size=(batch, 2, image, image))
    X0 = NamedTensor(x, "batch chans height width")
    flat = seed000.LeNet.from_positional(net)
    alt = seed000.LeNet.from_positional(net, flatten=False)
    assert flat.params["W3"].names == ("hidden", "layer")
    assert set(alt.params["W3"].names) == {"hidden", "height", "width", "chans"}
    want = net.predict_proba(x).value
    O = flat(X0)
    assert set(O.names) == {"batch", "classes"}
    np.testing.assert_allclose(O.align("batch", "classes").value, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(alt(X0).align("batch", "classes").value, O.align("batch", "classes").value,
                               rtol=0, atol=1e-12)
    # gradients: W³ re-laid by name gives fc3's gradient back
    labels = RNG.integers(0, classes, batch)
    nn.functional.cross_entropy(net(x), labels).backward()
    onehot = NamedTensor(np.eye(classes)[labels], "batch classes")
    for model in (flat, alt):
        loss = -N.nmean(N.nsum(N.log(model(X0)) * onehot, "classes"), "batch")
        loss.backward()
        sizes = {n: alt.params["W3"].size(n) for n in ("height", "width", "chans")}
        W3g = model.params["W3"].grad
        if model.flatten:
            W3g = W3g.split("layer", sizes)
        positional = W3g.align("hidden", "chans", "height", "width").value.reshape(hidden, -1)
        np.testing.assert_allclose(positional, net.fc3.weight.grad.value, rtol=1e-9, atol=1e-12)


def test_named_lenet_checks_gradients():
    net = nn.LeNet(in_channels=1, image_size=8, num_classes=3, channels=(2, 2), kernel_sizes=(3, 2), hidden=4,
                   rng=1)
    model = seed000.LeNet.from_positional(net, flatten=False)
    X0 = NamedTensor(RNG.normal(size=(2, 1, 8, 8)), "batch chans height width")
    W3 = model.params["W3"]

    def f(X0, W3):
        model.params["W3"] = W3
        return model.logits(X0)
    N.check_grads(f, (X0, W3.detach()))


# ---------------------------------------------------------------- rendering


def test_render_shows_axis_names_with_sizes():
    X = NamedTensor(rand(5, 8), "seq layer", name="X")
    W = NamedTensor(rand(3, 8), "hidden layer", requires_grad=True, name="W")
    out = N.softmax(N.ndot(W, X, "layer"), "hidden")
    dot = N.render(out, edge_labels="shape").source
    assert "seq:5 &#215; layer:8" in dot and "hidden:3 &#215; seq:5" in dot
    assert "hidden:3 &#215; layer:8" in dot   # the parameter node
    assert re.search(r'label="?[^"\]]*hidden:3 &#215; seq:5', dot)   # an edge label
    assert ad.render(out.tensor).source.count("&#215;") == 0   # the positional picture is unchanged
    prog = N.trace(lambda X: N.standardize(X, "layer").nsum("layer"), X)
    assert N.program_axes(prog)[0] == ("seq", "layer")
    text = ad.render(prog, view="bipartite").source
    assert "seq:5 &#215; layer:8" in text and "float64 seq:5" in text
    assert ad.render(prog, axes={}).source.count("&#215;") == 0


def test_render_named_transformer_collapsed_keeps_names():
    lm = nn.TransformerLM(vocab_size=6, d_model=4, heads=2, hidden=8, layers=2, rng=0)
    O = seed000.TransformerLM.from_positional(lm)(seed000.one_hot(np.array([[1, 2, 3]]), 6))
    dot = N.render(O, depth=0).source
    assert "batch:1 &#215; seq:3 &#215; vocab:6" in dot or "vocab:6 &#215; batch:1 &#215; seq:3" in dot


def test_gradient_program_keeps_names_and_broadcast_intermediates_are_named():
    X = NamedTensor(rand(5, 8), "seq layer")
    b = NamedTensor(rand(8), "layer")
    prog = N.trace(lambda X, b: N.standardize(X + b, "layer").nsum(("seq", "layer")), X, b)
    axes = N.program_axes(prog)
    reshaped = [k for k, n in enumerate(prog.nodes) if n.op == "reshape"]
    assert reshaped and axes[reshaped[0]] == ("seq", "layer")   # b as seq:1 × layer:8
    means = [k for k, n in enumerate(prog.nodes) if n.op == "mean"]
    assert [prog.nodes[k].shape for k in means] == [(5, 1), (5, 1)] and all(axes[k] == ("seq", "layer") for k in means)
    assert "seq:1 &#215; layer:8" in ad.render(prog).source
    gprog = N.grad_program(prog)
    gaxes = N.program_axes(gprog)
    assert [gaxes[k] for k in gprog.outputs] == [("seq", "layer"), ("layer",)]
    gX, gb = N.grad(lambda X, b: N.standardize(X + b, "layer").nsum(("seq", "layer")), argnums=(0, 1))(X, b)
    out = gprog(X.value, b.value)
    np.testing.assert_allclose(out[0], gX.value, atol=1e-12)
    np.testing.assert_allclose(out[1], gb.value, atol=1e-12)
    assert "layer:8" in ad.render(gprog).source


def test_named_seed000_example_fast(tmp_path):
    from examples import named_seed000
    result = named_seed000.run(fast=True, out=str(tmp_path), verbose=False)
    assert result["transformer_difference"] < 1e-12 and result["lenet_difference"] < 1e-12
    assert result["lenet_alternative_difference"] < 1e-12
    assert result["losses"][-1] < 0.7 * result["losses"][0]
    assert "seq:6" in open(result["picture"], encoding="utf-8").read()
