"""erf (a primitive), Gelu and the ONNX normalisation operators (issue 28).

``ad.erf`` is compared with ``math.erf`` point by point (in ulps); each ONNX operator with a one-node
model built with onnx.helper, loaded with ``ad.onnx.load`` and compared with a numpy computation of
the operator's definition (``onnx.defs.get_schema(op).doc``), its gradient checked against finite
differences (float64 models), and the loaded program exported again and run on ONNX Runtime.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.nn import functional as F

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
from onnx import TensorProto, helper  # noqa: E402

_F, _D, _H = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16
_NP = {_F: np.float32, _D: np.float64, _H: np.float16}
_erf = np.vectorize(math.erf, otypes=[float])


def _EPS(eps):
    """An ``epsilon`` attribute as the model holds it: a float32."""
    return float(np.float32(eps))

# ------------------------------------------------------------------ erf


def _ulps(got, want):
    return np.abs(got - want) / np.spacing(np.maximum(np.abs(want), np.finfo(want.dtype).tiny))


def test_erf_is_within_four_ulps_of_math_erf_in_float64_including_the_tails():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(20000) * 3, rng.uniform(-7, 7, 20000),
                        np.linspace(-0.5, 0.5, 2001),                    # the first interval and its edge
                        np.logspace(-320, 1.5, 3000), -np.logspace(-320, 1.5, 3000),  # subnormals .. 31
                        [0.46875, np.nextafter(0.46875, 1), 4.0, np.nextafter(4.0, 5), 5.9, 26.5, 27.0, 1e300]])
    # Cody's approximations are good to 18 digits; what is left is float64 rounding of the steps.
    assert _ulps(ad.erf(ad.Tensor(x)).value, _erf(x)).max() <= 4


def test_erf_special_values_and_dtypes():
    got = ad.erf(ad.Tensor([np.inf, -np.inf, np.nan, 0.0, -0.0])).value
    np.testing.assert_array_equal(got[:2], [1.0, -1.0])
    assert np.isnan(got[2]) and got[3] == 0 and np.signbit(got[4])   # erf is odd: erf(-0) = -0
    x32 = np.random.default_rng(1).uniform(-5, 5, 5000).astype(np.float32)
    got32 = ad.erf(ad.Tensor(x32)).value
    # Computed in float64 and rounded once: float32's correctly rounded value.
    assert got32.dtype == np.float32 and _ulps(got32, _erf(x32.astype(float)).astype(np.float32)).max() <= 1
    assert ad.erf(ad.Tensor(np.array([1], np.int64))).value.dtype == np.float64   # as np.exp
    assert ad.erf(ad.Tensor(np.array([1], np.float16))).value.dtype == np.float16
    with pytest.raises(ad.AutogradDagError, match="erf.*complex"):   # not the real part's erf, silently
        ad.erf(ad.Tensor(np.array([1 + 1j])))


def test_erf_derivatives_to_second_order():
    x = np.random.default_rng(2).uniform(-2.5, 2.5, 7)
    ad.check_grads(ad.erf, (x,), order=2)
    np.testing.assert_allclose(ad.grad(lambda t: ad.sum(ad.erf(t)))(x), 2 / np.sqrt(np.pi) * np.exp(-x * x),
                               rtol=1e-15)  # the rule itself, up to rounding of exp and the product


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exported_erf_matches_the_primitive_on_onnxruntime(dtype):
    # ONNX Runtime has no float64 Erf: float64 programs spell Cody's algorithm with its operators.
    pytest.importorskip("onnxruntime")
    tiny, big = np.finfo(dtype).smallest_subnormal, np.finfo(dtype).max
    x = np.concatenate([np.linspace(-7, 7, 1401), [0.0, -0.0, 27.0, big, tiny, np.inf, -np.inf, np.nan],
                        np.logspace(-30, 0, 50)]).astype(dtype)
    prog = ad.trace(ad.erf, x)
    back = ad.onnx.run(ad.onnx.export(prog), x)[0]
    assert back.dtype == dtype
    if dtype == np.float64:   # the same steps in the same order: the same float64 numbers, but for exp's ulp
        np.testing.assert_allclose(back, prog(x), rtol=4e-16, atol=0)
    else:                     # ONNX Runtime's float32 kernel is its own approximation
        np.testing.assert_allclose(back, prog(x), rtol=2e-6, atol=1e-7)


def test_gelu_exact_and_tanh_forms():
    x = np.random.default_rng(3).standard_normal(50) * 3
    # x·Φ(x) = x/2·erfc(−x/√2), computed so (not as the definition's 1 + erf(x/√2), which cancels for x ≪ 0):
    # relative to the value, a few roundings times its condition number |x·Φ'/Φ| + 1 ≤ x² + 2.
    exact = 0.5 * x * np.vectorize(math.erfc, otypes=[float])(-x / math.sqrt(2))
    assert (np.abs(F.gelu(ad.Tensor(x)).value - exact) <= 4 * (x * x + 2) * np.spacing(np.abs(exact))).all()
    # x/2·(1 + tanh u) written as x·σ(2u), the same function without 1 + tanh's cancellation for x ≪ 0 (the
    # cancelling form lost the tail entirely: −0.0 for −4e-19). Relative: a few roundings times the value's
    # condition number |x·f'/f| (≤ 300 over |x| ≤ 10).
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
    tanh_form = x / (1 + np.exp(-2 * u))
    np.testing.assert_allclose(F.gelu(ad.Tensor(x), "tanh").value, tanh_form, rtol=1e-13, atol=1e-300)
    ad.check_grads(F.gelu, (x[:6],), order=2)
    ad.check_grads(lambda t: F.gelu(t, "tanh"), (x[:6],), order=2)
    assert F.get_activation("gelu") is F.gelu
    with pytest.raises(ad.AutogradDagError, match="approximate"):
        F.gelu(ad.Tensor(x), "sigmoid")

# ------------------------------------------------------------ ONNX models


def _model(op, inputs, outputs, *, opset, **attrs):
    """One node; ``inputs`` (name, elem type, shape); ``outputs`` (name, elem type) or '' for an omitted one."""
    node = helper.make_node(op, [name for name, *_ in inputs], [o[0] if o else "" for o in outputs], **attrs)
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(o[0], o[1], None) for o in outputs if o])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _load_run(model, *args):
    prog = ad.onnx.load(model)
    out = prog(*args)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    # The loaded program exported again runs on ONNX Runtime (or onnx's reference) with the same numbers.
    back = ad.onnx.run(ad.onnx.export(prog), *args)
    for ours, theirs in zip(outs, back):
        assert theirs.dtype == np.asarray(ours).dtype
        tol = {np.float16: 2e-3, np.float32: 2e-6}.get(theirs.dtype.type, 1e-13)
        np.testing.assert_allclose(theirs, ours, rtol=tol, atol=tol)
    return prog, outs


def _grads(prog, *args):
    """The loaded (float64) program's derivatives in every float input against central differences."""
    weights = [np.random.default_rng(9).standard_normal(np.shape(o)) for o in _outputs(prog(*args))]
    ad.check_grads(lambda *a: sum(ad.sum(o * w) for o, w in zip(_outputs(prog(*a)), weights)), args)


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def test_erf_and_gelu_nodes():
    x = np.random.default_rng(4).standard_normal((3, 4)) * 2
    prog, (y,) = _load_run(_model("Erf", [("x", _D, [3, 4])], [("y", _D)], opset=13), x)
    np.testing.assert_allclose(y, _erf(x), rtol=1e-15)
    _grads(prog, x)
    erfc = np.vectorize(math.erfc, otypes=[float])
    for approximate, want in [("none", 0.5 * x * erfc(-x / np.sqrt(2))),
                              # (x·σ(2u): the same function as x/2·(1 + tanh u), without its cancellation for x ≪ 0)
                              ("tanh", x / (1 + np.exp(-2 * np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))))]:
        prog, (y,) = _load_run(_model("Gelu", [("x", _D, [3, 4])], [("y", _D)], opset=20,
                                      approximate=approximate), x)
        np.testing.assert_allclose(y, want, rtol=1e-14, atol=1e-300)
        _grads(prog, x)
    x32 = x.astype(np.float32)
    _, (y,) = _load_run(_model("Gelu", [("x", _F, [3, 4])], [("y", _F)], opset=20), x32)
    assert y.dtype == np.float32
    with pytest.raises(ad.onnx.OnnxImportError, match=r"Gelu.*approximate='erf'"):
        ad.onnx.load(_model("Gelu", [("x", _F, [3])], [("y", _F)], opset=20, approximate="erf"))


def _layer_norm_ref(x, w, b, axis, eps):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    inv = 1 / np.sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True) + eps)
    return (x - mu) * inv * w + (0 if b is None else b), mu, inv


@pytest.mark.parametrize("shape, axis", [((3, 4), -1), ((2, 3, 5), 1), ((2, 3, 4, 5), -3), ((2, 3, 4), 0)])
def test_layer_normalization_values_statistics_and_gradients(shape, axis):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape) * 3 + 1
    wshape = shape[axis % len(shape):]
    w, b = rng.standard_normal(wshape), rng.standard_normal(wshape)
    model = _model("LayerNormalization", [("x", _D, shape), ("w", _D, wshape), ("b", _D, wshape)],
                   [("y", _D), ("mean", _D), ("inv", _D)], opset=17, axis=axis, epsilon=0.1)
    prog, outs = _load_run(model, x, w, b)
    for got, want in zip(outs, _layer_norm_ref(x, w, b, axis, _EPS(0.1))):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    _grads(prog, x, w, b)
    # No bias and only Y: the fused primitive alone.
    model = _model("LayerNormalization", [("x", _D, shape), ("w", _D, wshape)], [("y", _D), "", ""],
                   opset=17, axis=axis)
    prog, (y,) = _load_run(model, x, w)
    np.testing.assert_allclose(y, _layer_norm_ref(x, w, None, axis, _EPS(1e-5))[0], rtol=1e-13, atol=1e-14)
    assert [n.op for n in prog.nodes if n.op == "layer_norm"] == ["layer_norm"]


def test_layer_normalization_of_float16_computes_in_float32():
    # stash_type = 1: statistics of a float16 input in float32, Y rounded back to float16. In float16,
    # the variance of these values (about 1e4 from a mean of 300) loses digits.
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((4, 64)) * 100 + 300).astype(np.float16)
    w, b = np.ones(64, np.float16), np.zeros(64, np.float16)
    model = _model("LayerNormalization", [("x", _H, [4, 64]), ("w", _H, [64]), ("b", _H, [64])],
                   [("y", _H), ("mean", _F), ("inv", _F)], opset=17)
    _, (y, mean, inv) = _load_run(model, x, w, b)
    want, want_mean, want_inv = _layer_norm_ref(x.astype(np.float32), 1, 0, -1, 1e-5)
    assert y.dtype == np.float16 and mean.dtype == inv.dtype == np.float32
    np.testing.assert_allclose(y, want.astype(np.float16), rtol=1e-3, atol=2e-3)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-6)
    np.testing.assert_allclose(inv, want_inv, rtol=1e-5)
    with pytest.raises(ad.onnx.OnnxImportError, match=r"LayerNormalization.*stash_type=0"):
        ad.onnx.load(_model("LayerNormalization", [("x", _F, [2, 3]), ("w", _F, [3])], [("y", _F)], opset=17,
                            stash_type=0))
    with pytest.raises(ad.onnx.OnnxImportError, match=r"LayerNormalization.*axis=2"):
        ad.onnx.load(_model("LayerNormalization", [("x", _F, [2, 3]), ("w", _F, [3])], [("y", _F)], opset=17,
                            axis=2))


@pytest.mark.parametrize("shape, axis", [((3, 4), -1), ((2, 3, 5), 1), ((2, 3, 4), 0)])
def test_rms_normalization(shape, axis):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape)
    w = rng.standard_normal(shape[axis % len(shape):])
    prog, (y,) = _load_run(_model("RMSNormalization", [("x", _D, shape), ("w", _D, w.shape)], [("y", _D)],
                                  opset=23, axis=axis, epsilon=0.01), x, w)
    axes = tuple(range(axis % len(shape), len(shape)))
    np.testing.assert_allclose(y, x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + _EPS(0.01)) * w, rtol=1e-13)
    _grads(prog, x, w)


def _group_norm_ref(x, scale, bias, groups, eps, per_group):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    ones = (1,) * (x.ndim - 2)
    if per_group:
        scale, bias = np.repeat(scale, c // groups), np.repeat(bias, c // groups)
    return g.reshape(x.shape) * scale.reshape((c,) + ones) + bias.reshape((c,) + ones)


@pytest.mark.parametrize("opset, per_group", [(21, False), (18, True)])
def test_group_normalization(opset, per_group):
    # Opset 21 scales each channel; 18 (deprecated) each group.
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 6, 3, 2)) * 2 + 1
    k = 3 if per_group else 6
    scale, bias = rng.standard_normal(k), rng.standard_normal(k)
    model = _model("GroupNormalization", [("x", _D, x.shape), ("s", _D, [k]), ("b", _D, [k])], [("y", _D)],
                   opset=opset, num_groups=3, epsilon=0.01)
    prog, (y,) = _load_run(model, x, scale, bias)
    np.testing.assert_allclose(y, _group_norm_ref(x, scale, bias, 3, _EPS(0.01), per_group), rtol=1e-13, atol=1e-14)
    _grads(prog, x, scale, bias)
    with pytest.raises(ad.onnx.OnnxImportError, match=r"GroupNormalization.*num_groups=4"):
        ad.onnx.load(_model("GroupNormalization", [("x", _D, x.shape), ("s", _D, [6]), ("b", _D, [6])],
                            [("y", _D)], opset=21, num_groups=4))


def test_instance_normalization():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 3, 4, 5))
    scale, bias = rng.standard_normal(3), rng.standard_normal(3)
    prog, (y,) = _load_run(_model("InstanceNormalization", [("x", _D, x.shape), ("s", _D, [3]), ("b", _D, [3])],
                                  [("y", _D)], opset=22, epsilon=0.01), x, scale, bias)
    np.testing.assert_allclose(y, _group_norm_ref(x, scale, bias, 3, _EPS(0.01), False), rtol=1e-13, atol=1e-14)
    _grads(prog, x, scale, bias)


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_with_a_zero_slice(p):
    x = np.random.default_rng(11).standard_normal((3, 4))
    x[1] = 0.0
    prog, (y,) = _load_run(_model("LpNormalization", [("x", _D, [3, 4])], [("y", _D)], opset=22, p=p, axis=1), x)
    size = np.linalg.norm(x, ord=p, axis=1, keepdims=True)
    want = np.where(size == 0, 0.0, x / np.where(size == 0, 1.0, size))   # ONNX: a zero slice gives 0
    np.testing.assert_allclose(y, want, rtol=1e-14)
    g = ad.grad(lambda t: ad.sum(prog(t) * np.arange(12.0).reshape(3, 4)))(x)
    assert np.isfinite(g).all()
    _grads(prog, x + np.array([[0.0], [0.5], [0.0]]))   # the derivative away from the zero slice
    with pytest.raises(ad.onnx.OnnxImportError, match=r"LpNormalization.*p=3"):
        ad.onnx.load(_model("LpNormalization", [("x", _D, [3, 4])], [("y", _D)], opset=22, p=3))


@pytest.mark.parametrize("axes", [None, [1]])
def test_mean_variance_normalization(axes):
    x = np.random.default_rng(12).standard_normal((2, 3, 4, 2)) * 5 + 1000
    attrs = {} if axes is None else {"axes": axes}
    prog, (y,) = _load_run(_model("MeanVarianceNormalization", [("x", _D, x.shape)], [("y", _D)], opset=13,
                                  **attrs), x)
    red = tuple(axes or (0, 2, 3))
    d = x - x.mean(axis=red, keepdims=True)
    np.testing.assert_allclose(y, d / (np.sqrt((d * d).mean(axis=red, keepdims=True)) + 1e-9), rtol=1e-12)
    _grads(prog, x)
