"""ONNX import of the recurrent operators (LSTM, GRU, RNN), the activations (Selu, Celu,
ThresholdedRelu, PRelu, Shrink, Swish, Softsign, Mish, HardSwish) and the classification losses
(NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).

Each case is a one-node model built with onnx.helper, loaded with ``ad.onnx.load`` and compared with
an independent numpy computation of the operator's definition (the equations of
``onnx.defs.get_schema(op).doc``); the loaded program's gradients are checked against finite
differences, and the program is exported again and run on ONNX Runtime. The recurrent operators are
also compared with ONNX Runtime's own kernels where the spec leaves a reading open (clip, input_forget,
the order of activation_alpha/beta, sequence_lens).
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
ort = pytest.importorskip("onnxruntime", reason="ONNX tests need 'onnxruntime': pip install 'autograd-dag[onnx]'")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import autograd_dag as ad  # noqa: E402

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
          np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64}


def _model(op, inputs, n_out, *, inits=(), opset=22, outputs=None, **attrs):
    """One node; ``inputs`` and ``inits`` are (name, array) ('' for an omitted optional input)."""
    outputs = outputs or [f"out{k}" for k in range(n_out)]
    names = [n for n, _ in inputs] + [n for n, _ in inits]
    node = helper.make_node(op, names, outputs, **attrs)
    graph = helper.make_graph(
        [node], op.lower(), [helper.make_tensor_value_info(n, _TYPES[a.dtype], a.shape) for n, a in inputs if n],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs if o],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _as_tuple(out):
    return tuple(np.asarray(o) for o in out) if isinstance(out, (tuple, list)) else (np.asarray(out),)


def _round_trip(prog, args):
    """The loaded program exported again and run on ONNX Runtime."""
    return tuple(ad.onnx.run(ad.onnx.export(prog), *args))


# ---------------------------------------------------------------------------- numpy references

def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# The spec's activation functions (alpha, beta as given; defaults applied by the caller).
_NP_ACTS = {
    "Relu": lambda x, a, b: np.maximum(x, 0.0),
    "Tanh": lambda x, a, b: np.tanh(x),
    "Sigmoid": lambda x, a, b: _sigmoid(x),
    "Affine": lambda x, a, b: a * x + b,
    "LeakyRelu": lambda x, a, b: np.where(x >= 0, x, a * x),
    "ThresholdedRelu": lambda x, a, b: np.where(x > a, x, 0.0),
    "ScaledTanh": lambda x, a, b: a * np.tanh(b * x),
    "HardSigmoid": lambda x, a, b: np.clip(a * x + b, 0.0, 1.0),
    "Elu": lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1.0)),
    "Softsign": lambda x, a, b: x / (1.0 + np.abs(x)),
    "Softplus": lambda x, a, b: np.log1p(np.exp(x)),
}


def _np_rnn(op, X, W, R, B=None, seq_lens=None, h0=None, c0=None, P=None, *, hidden_size, direction="forward",
            layout=0, activations=None, alphas=(), betas=(), clip=None, linear_before_reset=0, input_forget=0):
    """ONNX's LSTM/GRU/RNN equations, one batch entry and one step at a time: each entry runs over its
    own sequence X[:len] (reversed for the reverse direction); Y is 0 past the entry's length."""
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    defaults = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}[op]
    nd = 2 if direction == "bidirectional" else 1
    if layout:
        X = X.swapaxes(0, 1)
        h0, c0 = (None if s is None else s.swapaxes(0, 1) for s in (h0, c0))
    S, Bn, _ = X.shape
    H = hidden_size
    names = activations or defaults * nd
    # Attributes are float32: the reference takes their float32 values.
    alphas, betas, fns = [float(np.float32(a)) for a in alphas], [float(np.float32(b)) for b in betas], []
    clip = None if clip is None else float(np.float32(clip))
    default_ab = {"Affine": (1.0, 0.0), "LeakyRelu": (0.01, None), "ThresholdedRelu": (1.0, None),
                  "ScaledTanh": (1.0, 1.0), "HardSigmoid": (0.2, 0.5), "Elu": (1.0, None)}
    for name in names:
        a, b = default_ab.get(name, (None, None))
        a = alphas.pop(0) if a is not None and alphas else a
        b = betas.pop(0) if b is not None and betas else b
        fns.append(lambda x, name=name, a=a, b=b: _NP_ACTS[name](x, a, b))
    B = np.zeros((nd, 2 * G * H)) if B is None else B
    lens = np.full(Bn, S) if seq_lens is None else np.asarray(seq_lens)
    cl = (lambda v: v) if clip is None else (lambda v: np.clip(v, -clip, clip))
    Y = np.zeros((S, nd, Bn, H))
    Yh, Yc = np.zeros((nd, Bn, H)), np.zeros((nd, Bn, H))
    for d in range(nd):
        reverse = direction == "reverse" or d == 1
        k = len(defaults)
        f = fns[d * k:(d + 1) * k]
        Wb, Rb = B[d, :G * H], B[d, G * H:]
        for n in range(Bn):
            h = np.zeros(H) if h0 is None else h0[d, n].astype(np.float64)
            c = np.zeros(H) if c0 is None else c0[d, n].astype(np.float64)
            steps = range(lens[n] - 1, -1, -1) if reverse else range(lens[n])
            for t in steps:
                x = X[t, n]
                if op == "RNN":
                    h = f[0](cl(x @ W[d].T + h @ R[d].T + Wb + Rb))
                elif op == "GRU":
                    Wz, Wr, Wh = np.split(W[d], 3)
                    Rz, Rr, Rh = np.split(R[d], 3)
                    Wbz, Wbr, Wbh = np.split(Wb, 3)
                    Rbz, Rbr, Rbh = np.split(Rb, 3)
                    z = f[0](cl(x @ Wz.T + h @ Rz.T + Wbz + Rbz))
                    r = f[0](cl(x @ Wr.T + h @ Rr.T + Wbr + Rbr))
                    if linear_before_reset:
                        hh = f[1](cl(x @ Wh.T + r * (h @ Rh.T + Rbh) + Wbh))
                    else:
                        hh = f[1](cl(x @ Wh.T + (r * h) @ Rh.T + Rbh + Wbh))
                    h = (1 - z) * hh + z * h
                else:
                    Wi, Wo, Wf, Wc = np.split(W[d], 4)
                    Ri, Ro, Rf, Rc = np.split(R[d], 4)
                    Wbi, Wbo, Wbf, Wbc = np.split(Wb, 4)
                    Rbi, Rbo, Rbf, Rbc = np.split(Rb, 4)
                    Pi, Po, Pf = np.split(np.zeros(3 * H) if P is None else P[d], 3)
                    i = f[0](cl(x @ Wi.T + h @ Ri.T + Pi * c + Wbi + Rbi))
                    fg = 1 - i if input_forget else f[0](cl(x @ Wf.T + h @ Rf.T + Pf * c + Wbf + Rbf))
                    ct = f[1](cl(x @ Wc.T + h @ Rc.T + Wbc + Rbc))
                    c = fg * c + i * ct
                    o = f[0](cl(x @ Wo.T + h @ Ro.T + Po * c + Wbo + Rbo))
                    h = o * f[2](c)
                Y[t, d, n] = h
            Yh[d, n], Yc[d, n] = h, c
    if layout:
        Y, Yh, Yc = Y.transpose(2, 0, 1, 3), Yh.swapaxes(0, 1), Yc.swapaxes(0, 1)
    return (Y, Yh, Yc) if op == "LSTM" else (Y, Yh)


# ---------------------------------------------------------------------------- recurrent operators

def _rnn_case(op, *, S=3, Bn=2, I=2, H=3, direction="forward", layout=0, bias=True, initial=False,
              peep=False, seq_lens=None, seq_const=False, dtype=np.float64, seed=0, **attrs):
    """The model and its arguments (graph inputs in order), and the numpy reference's keywords."""
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    nd = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((Bn, S, I) if layout else (S, Bn, I)).astype(dtype)
    W = (0.6 * rng.standard_normal((nd, G * H, I))).astype(dtype)
    R = (0.6 * rng.standard_normal((nd, G * H, H))).astype(dtype)
    state = (Bn, nd, H) if layout else (nd, Bn, H)
    named = {"X": X, "W": W, "R": R,
             "B": (0.3 * rng.standard_normal((nd, 2 * G * H))).astype(dtype) if bias else None,
             "seq_lens": None if seq_lens is None else np.asarray(seq_lens, np.int32),
             "h0": rng.standard_normal(state).astype(dtype) if initial else None,
             "c0": rng.standard_normal(state).astype(dtype) if initial and op == "LSTM" else None,
             "P": (0.5 * rng.standard_normal((nd, 3 * H))).astype(dtype) if peep else None}
    order = ["X", "W", "R", "B", "seq_lens", "h0"] + (["c0", "P"] if op == "LSTM" else [])
    while named[order[-1]] is None:
        order.pop()
    node_inputs = [k if named[k] is not None else "" for k in order]
    model_inputs = [(k, named[k]) for k in order if named[k] is not None and not (k == "seq_lens" and seq_const)]
    inits = [("seq_lens", named["seq_lens"])] if seq_const else []
    n_out = 3 if op == "LSTM" else 2
    node = helper.make_node(op, node_inputs, [f"out{k}" for k in range(n_out)], hidden_size=H,
                            direction=direction, layout=layout, **attrs)
    graph = helper.make_graph(
        [node], op.lower(), [helper.make_tensor_value_info(n, _TYPES[a.dtype], a.shape) for n, a in model_inputs],
        [helper.make_tensor_value_info(f"out{k}", _TYPES[X.dtype], None) for k in range(n_out)],
        [numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    ref_kw = dict(B=named["B"], seq_lens=named["seq_lens"], h0=named["h0"], c0=named["c0"], P=named["P"],
                  hidden_size=H, direction=direction, layout=layout, activations=attrs.get("activations"),
                  alphas=attrs.get("activation_alpha", ()), betas=attrs.get("activation_beta", ()),
                  clip=attrs.get("clip"), linear_before_reset=attrs.get("linear_before_reset", 0),
                  input_forget=attrs.get("input_forget", 0))
    return model, [a for _, a in model_inputs], (X, W, R), ref_kw


_RNN_VARIANTS = [
    dict(),
    dict(direction="reverse", initial=True),
    dict(direction="bidirectional", initial=True),
    dict(layout=1, initial=True),
    dict(layout=1, direction="bidirectional", initial=True, seq_lens=[3, 1]),
    dict(bias=False),
    dict(seq_lens=[2, 3]),
    dict(direction="reverse", seq_lens=[1, 3], seq_const=True),
    dict(direction="bidirectional", seq_lens=[3, 2], seq_const=True),
    dict(clip=0.4),
]
_RNN_CASES = ([(op, v) for op in ("LSTM", "GRU", "RNN") for v in _RNN_VARIANTS]
              + [("LSTM", dict(peep=True, initial=True)), ("LSTM", dict(peep=True, direction="bidirectional")),
                 ("LSTM", dict(input_forget=1, initial=True)),
                 ("LSTM", dict(activations=["HardSigmoid", "Softsign", "ScaledTanh"], activation_alpha=[0.3, 0.8],
                               activation_beta=[0.6, 1.2])),
                 ("GRU", dict(linear_before_reset=1, initial=True)),
                 ("GRU", dict(linear_before_reset=1, direction="bidirectional", seq_lens=[2, 3])),
                 ("GRU", dict(activations=["Sigmoid", "Softplus", "Affine", "Elu"], direction="bidirectional",
                              activation_alpha=[0.7, 0.5], activation_beta=[0.1])),
                 ("RNN", dict(activations=["LeakyRelu"], activation_alpha=[0.2])),
                 ("RNN", dict(activations=["Sigmoid", "Relu"], direction="bidirectional"))])


def _case_id(case):
    op, v = case
    return op + "-" + ("-".join(f"{k}={v[k]}" for k in v) or "defaults")


@pytest.mark.parametrize("case", _RNN_CASES, ids=_case_id)
def test_recurrent_operator_matches_the_onnx_equations_and_round_trips(case):
    op, variant = case
    model, args, (X, W, R), ref_kw = _rnn_case(op, **variant)
    prog = ad.onnx.load(model)
    expected = _np_rnn(op, X, W, R, **ref_kw)
    ours = _as_tuple(prog(*args))
    assert len(ours) == len(expected)
    for got, want in zip(ours, expected):
        # The reference runs entry by entry in a different order of sums: rounding only.
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for got, want in zip(_round_trip(prog, args), expected):
        # ONNX Runtime's float64 kernels (MatMul, Tanh, Exp) round differently from numpy's.
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("case", [("LSTM", dict(direction="bidirectional", initial=True, peep=True, seq_lens=[3, 2])),
                                  ("LSTM", dict(layout=1, clip=0.5, input_forget=1, initial=True)),
                                  ("GRU", dict(linear_before_reset=1, direction="reverse", initial=True)),
                                  ("GRU", dict(seq_lens=[1, 3], initial=True)),
                                  ("RNN", dict(direction="bidirectional", initial=True, seq_lens=[2, 3]))],
                         ids=_case_id)
def test_recurrent_operator_gradients_match_finite_differences(case):
    op, variant = case
    model, args, _, _ = _rnn_case(op, S=3, Bn=2, I=2, H=2, **variant)
    prog = ad.onnx.load(model)
    for k in range(3 if op == "LSTM" else 2):
        ad.check_grads(lambda *a, k=k: prog(*a)[k], tuple(args), modes=("rev", "fwd"))


def _ort_node(model, args):
    names = [i.name for i in model.graph.input]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip(names, args)))


@pytest.mark.parametrize("case", [("LSTM", dict(clip=0.05, initial=True)),
                                  ("LSTM", dict(input_forget=1, peep=True, initial=True)),
                                  ("LSTM", dict(direction="bidirectional", seq_lens=[3, 1], initial=True, peep=True)),
                                  ("LSTM", dict(activations=["HardSigmoid", "Softplus", "ThresholdedRelu"],
                                                activation_alpha=[0.3, 0.2], activation_beta=[0.6])),
                                  ("GRU", dict(clip=0.3, direction="reverse", seq_lens=[2, 3])),
                                  ("GRU", dict(activations=["HardSigmoid", "LeakyRelu"], activation_alpha=[0.3, 0.1],
                                               activation_beta=[0.4])),
                                  ("RNN", dict(activations=["ScaledTanh"], activation_alpha=[0.7],
                                               activation_beta=[1.5], clip=0.8))],
                         ids=_case_id)
def test_recurrent_operator_matches_onnxruntime_where_the_spec_is_terse(case):
    # ONNX Runtime's kernels: clip bounds the gates' pre-activations (not the cell state), input_forget
    # makes f = 1 - i, activation_alpha/beta are taken in order by the functions that use one, and Y is
    # 0 past an entry's sequence_lens.
    op, variant = case
    model, args, _, _ = _rnn_case(op, dtype=np.float32, S=4, Bn=2, seed=3, **variant)
    for got, want in zip(_as_tuple(ad.onnx.load(model)(*args)), _ort_node(model, args)):
        # float32 kernels with different sum orders: a few units in the last place.
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_recurrent_outputs_may_be_omitted_and_hidden_size_read_from_r():
    model, args, (X, W, R), ref_kw = _rnn_case("LSTM", initial=True)
    del model.graph.node[0].output[:]
    model.graph.node[0].output.extend(["", "", "out2"])
    del model.graph.output[:2]
    del model.graph.node[0].attribute[0]    # hidden_size
    got = _as_tuple(ad.onnx.load(model)(*args))
    assert len(got) == 1
    np.testing.assert_allclose(got[0], _np_rnn("LSTM", X, W, R, **ref_kw)[2], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("variant, match", [
    (dict(activations=["Gelu"]), r"RNN with activation 'Gelu' is not supported"),
    (dict(activations=["Tanh", "Tanh"]), r"RNN needs 1 activations for direction='forward'"),
    (dict(activations=["LeakyRelu"], activation_alpha=[0.1, 0.2]), r"RNN has more activation_alpha"),
    (dict(direction="sideways"), r"RNN with direction='sideways' is not supported"),
    (dict(seq_lens=[4, 1], seq_const=True), r"RNN with sequence_lens \[4, 1\] outside \[0, 3\]"),
])
def test_recurrent_forms_outside_the_spec_or_our_reach_are_refused_by_name(variant, match):
    model, _, _, _ = _rnn_case("RNN", **variant)
    with pytest.raises(ad.onnx.OnnxImportError, match=match):
        ad.onnx.load(model)


# ---------------------------------------------------------------------------- activations

_X = np.array([[-3.4, -1.2, -0.6, -0.25], [0.15, 0.45, 0.8, 2.5]])

_ACTIVATIONS = [
    # (Selu's defaults are float32 attributes: 1.67326319217681884765625 and 1.05070102214813232421875.)
    ("Selu", {}, lambda x: np.where(x > 0, 1.05070102214813232421875 * x,
                                    1.05070102214813232421875 * 1.67326319217681884765625 * (np.exp(x) - 1))),
    ("Selu", dict(alpha=2.0, gamma=3.0), lambda x: np.where(x > 0, 3.0 * x, 3.0 * (2.0 * np.exp(x) - 2.0))),
    ("Celu", {}, lambda x: np.maximum(0, x) + np.minimum(0, np.exp(x) - 1)),
    ("Celu", dict(alpha=2.0), lambda x: np.maximum(0, x) + np.minimum(0, 2.0 * (np.exp(x / 2.0) - 1))),
    ("ThresholdedRelu", {}, lambda x: np.where(x > 1.0, x, 0.0)),
    ("ThresholdedRelu", dict(alpha=0.3), lambda x: np.where(x > 0.3, x, 0.0)),
    ("Shrink", {}, lambda x: np.where(x < -0.5, x, np.where(x > 0.5, x, 0.0))),
    ("Shrink", dict(bias=1.5, lambd=1.0), lambda x: np.where(x < -1.0, x + 1.5, np.where(x > 1.0, x - 1.5, 0.0))),
    ("Swish", {}, lambda x: x / (1 + np.exp(-x))),
    ("Swish", dict(alpha=2.5), lambda x: x / (1 + np.exp(-2.5 * x))),
    ("Softsign", {}, lambda x: x / (1 + np.abs(x))),
    ("Mish", {}, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    ("HardSwish", {}, lambda x: x * np.maximum(0, np.minimum(1, x / 6 + 0.5))),
]


@pytest.mark.parametrize("op, attrs, ref", _ACTIVATIONS, ids=lambda v: v if isinstance(v, str) else None)
def test_activation_matches_its_definition_differentiates_and_round_trips(op, attrs, ref):
    opset = 24 if op == "Swish" else 22
    prog = ad.onnx.load(_model(op, [("x", _X)], 1, opset=opset, **attrs))
    # The same formula in a different form (exp(x) - 1 for expm1): rounding only.
    np.testing.assert_allclose(prog(_X), ref(_X), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(_round_trip(prog, [_X])[0], ref(_X), rtol=1e-12, atol=1e-15)
    x32 = _X.astype(np.float32)
    out32 = ad.onnx.load(_model(op, [("x", x32)], 1, opset=opset, **attrs))(x32)
    assert np.asarray(out32).dtype == np.float32
    # _X keeps away from every kink (0, ±lambd, alpha, ±3 of HardSwish): the derivative exists there.
    ad.check_grads(prog, (_X,), order=2)


def test_prelu_broadcasts_its_slope_and_differentiates_in_both():
    x = np.random.default_rng(0).standard_normal((2, 3, 4)) + 0.05
    slope = np.array([[0.1], [0.5], [2.0]])
    prog = ad.onnx.load(_model("PRelu", [("x", x), ("slope", slope)], 1))
    want = np.where(x < 0, x * slope, x)
    np.testing.assert_allclose(prog(x, slope), want, rtol=1e-15)
    np.testing.assert_allclose(_round_trip(prog, [x, slope])[0], want, rtol=1e-15)
    ad.check_grads(prog, (x, slope))


def test_shrink_on_integers_is_refused():
    with pytest.raises(ad.onnx.OnnxImportError, match=r"Shrink on int64"):
        ad.onnx.load(_model("Shrink", [("x", np.arange(4, dtype=np.int64))], 1))


# ---------------------------------------------------------------------------- losses

def _np_nll(logp, target, weight=None, ignore_index=None, reduction="mean"):
    """The spec's loss[n, d] = -logp[n, target[n, d], d] * weight[target[n, d]], 0 where ignored."""
    N, C = logp.shape[:2]
    lp = np.moveaxis(logp, 1, -1).reshape(-1, C)
    t = target.reshape(-1)
    w = np.ones(C) if weight is None else weight
    loss, wsum = np.zeros(len(t)), 0.0
    for k, cls in enumerate(t):
        if ignore_index is not None and cls == ignore_index:
            continue
        loss[k] = -lp[k, cls] * w[cls]
        wsum += w[cls]
    if reduction == "none":
        return loss.reshape(target.shape)
    return loss.sum() if reduction == "sum" else loss.sum() / wsum


def _log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


_LOSS_CASES = [
    ((3, 5), "mean", False, None), ((3, 5), "sum", True, None), ((3, 5), "none", True, 2),
    ((2, 4, 3), "mean", True, 1), ((2, 4, 3), "none", False, -1), ((2, 3, 2, 2), "mean", False, 0),
    ((2, 3, 2, 2), "sum", True, -5), ((2, 3, 2), "mean", True, None),
]


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("shape, reduction, weighted, ignore_index", _LOSS_CASES,
                         ids=lambda v: str(v).replace(" ", ""))
def test_losses_match_their_definition_differentiate_and_round_trip(op, shape, reduction, weighted, ignore_index):
    rng = np.random.default_rng(len(shape) * 7 + (ignore_index or 0))
    x = rng.standard_normal(shape)
    C = shape[1]
    target = rng.integers(0, C, (shape[0],) + shape[2:]).astype(np.int64)
    if ignore_index is not None:
        target.reshape(-1)[0] = ignore_index    # at least one entry is ignored
        target.reshape(-1)[-1] = 1 if ignore_index != 1 else 0    # and one is not
    weight = rng.uniform(0.5, 2.0, C) if weighted else None
    inputs = [("x", x), ("target", target)] + ([("weight", weight)] if weighted else [])
    attrs = dict(reduction=reduction) | ({} if ignore_index is None else dict(ignore_index=ignore_index))
    sce = op == "SoftmaxCrossEntropyLoss"
    prog = ad.onnx.load(_model(op, inputs, 2 if sce else 1, **attrs))
    args = [a for _, a in inputs]
    logp = _log_softmax(x) if sce else x
    want = (_np_nll(logp, target, weight, ignore_index, reduction),) + ((logp,) if sce else ())
    for got, ref in zip(_as_tuple(prog(*args)), want):
        # Sums in a different order: rounding only.
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)
    for got, ref in zip(_round_trip(prog, args), want):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)
    first = (lambda *a: prog(*a)[0]) if sce else prog
    ad.check_grads(first, tuple(args), order=2 if sce else 1)


def test_softmax_cross_entropy_log_prob_output_may_be_omitted_and_reduction_is_checked():
    x, t = np.random.default_rng(1).standard_normal((3, 4)), np.array([0, 3, 1])
    prog = ad.onnx.load(_model("SoftmaxCrossEntropyLoss", [("x", x), ("t", t)], 1, reduction="none"))
    np.testing.assert_allclose(prog(x, t), _np_nll(_log_softmax(x), t, reduction="none"), rtol=1e-12)
    with pytest.raises(ad.onnx.OnnxImportError, match=r"NegativeLogLikelihoodLoss with reduction='max'"):
        ad.onnx.load(_model("NegativeLogLikelihoodLoss", [("x", x), ("t", t)], 1, reduction="max"))


def test_recurrent_operands_of_the_wrong_shape_are_refused_not_sliced():
    # A B of 3 directions' length would have been sliced to its first rows without a word.
    model, _, _, _ = _rnn_case("GRU")
    b = next(i for i in model.graph.input if i.name == "B")
    b.type.tensor_type.shape.dim[1].dim_value = 20
    with pytest.raises(ad.onnx.OnnxImportError, match=r"GRU input B has shape \(1, 20\), expected \(1, 18\)"):
        ad.onnx.load(model)
