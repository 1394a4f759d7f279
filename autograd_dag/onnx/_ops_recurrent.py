"""ONNX's recurrent operators (LSTM, GRU, RNN), unrolled over time.

The sequence length is static (X's shape), so each time step is replayed with the library's
matmuls and elementwise operations: the loaded program differentiates and exports (as the
unrolled steps) with no rules of its own. Varying ``sequence_lens`` are exact by masking: past
its length a batch entry's state is held and its outputs are 0, as ONNX Runtime does.
"""

from __future__ import annotations

import numpy as np

from ..primitives import elementwise as el, indexing, mathfuncs, structure as st
from ..primitives.linalg import matmul
from ._ops import OnnxImportError, handles, _shape
from ._ops_activations import rnn_activations

# op_type -> (gates, the default activations of one direction).
_KINDS = {"LSTM": (4, ("Sigmoid", "Tanh", "Tanh")), "GRU": (3, ("Sigmoid", "Tanh")), "RNN": (1, ("Tanh",))}


def _rows(x, start, stop):
    """x[..., start:stop] (a gate's block of the last axis)."""
    return indexing.getitem(x, (Ellipsis, slice(start, stop)))


def _clipped(x, clip):
    return x if clip is None else mathfuncs.clip(x, -clip, clip)


@handles("LSTM", "GRU", "RNN")
def _recurrent(c):
    op = c.node.op_type
    gates, default_acts = _KINDS[op]
    x, w, r, b, seq_lens, h0 = (c.arg(i) for i in range(6))
    c0 = c.arg(6) if op == "LSTM" else None
    p = c.arg(7) if op == "LSTM" else None
    layout = c.attr("layout", 0)
    direction = c.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise OnnxImportError(f"onnx.load: {op} with direction='{direction}' is not supported")
    if x.dtype.kind != "f":
        raise OnnxImportError(f"onnx.load: {op} on {x.dtype} is not supported (floating-point inputs only)")
    num_dir = 2 if direction == "bidirectional" else 1
    hidden = int(c.attr("hidden_size", _shape(r)[-1]))
    if _shape(w)[0] != num_dir or _shape(w)[1] != gates * hidden or _shape(r)[-1] != hidden:
        raise OnnxImportError(f"onnx.load: {op} weights of shapes W {_shape(w)}, R {_shape(r)} do not fit "
                              f"hidden_size={hidden} and direction='{direction}'")
    _check_shapes(c, x, b, h0, c0, p, num_dir, gates, hidden, layout)
    clip = c.attr("clip")
    names = [n.decode() if isinstance(n, bytes) else n for n in c.attr("activations") or default_acts * num_dir]
    if len(names) != len(default_acts) * num_dir:
        raise OnnxImportError(f"onnx.load: {op} needs {len(default_acts) * num_dir} activations for "
                              f"direction='{direction}', got {list(names)}")
    acts = rnn_activations(c, names, c.attr("activation_alpha"), c.attr("activation_beta"))
    if layout:
        # Layout 1 is batch-major: X (batch, seq, input), states (batch, dirs, hidden).
        x = st.swapaxes(x, 0, 1)
        h0 = None if h0 is None else st.swapaxes(h0, 0, 1)
        c0 = None if c0 is None else st.swapaxes(c0, 0, 1)
    seq, batch = _shape(x)[:2]
    zeros = np.zeros((batch, hidden), dtype=x.dtype)
    masks = _masks(c, seq_lens, seq, batch)
    ys, hs, cs = [], [], []
    for d in range(num_dir):
        reverse = direction == "reverse" or d == 1
        k = len(default_acts)
        cell = dict(w=indexing.getitem(w, d), r=indexing.getitem(r, d),
                    b=None if b is None else indexing.getitem(b, d),
                    p=None if p is None else indexing.getitem(p, d),
                    acts=acts[d * k:(d + 1) * k], clip=clip, hidden=hidden, gates=gates,
                    linear_before_reset=c.attr("linear_before_reset", 0),
                    input_forget=c.attr("input_forget", 0), blocks={})
        h = zeros if h0 is None else indexing.getitem(h0, d)
        cc = zeros if c0 is None else indexing.getitem(c0, d)
        # The input's part of every gate, for all steps in one matmul: (seq, batch, gates * hidden).
        xw = matmul(x, st.transpose(cell["w"]))
        if cell["b"] is not None:
            xw = el.add(xw, _rows(cell["b"], 0, gates * hidden))
        outs = [None] * seq
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            h_new, c_new = _STEP[op](indexing.getitem(xw, t), h, cc, cell)
            if masks is None:
                h, cc, outs[t] = h_new, c_new, h_new
            else:
                m = masks[t]
                outs[t] = el.where(m, h_new, np.zeros((), x.dtype))
                h = el.where(m, h_new, h)
                cc = None if c_new is None else el.where(m, c_new, cc)
        ys.append(indexing.stack(outs, 0))
        hs.append(h)
        cs.append(cc)
    y = indexing.stack(ys, 1)            # (seq, dirs, batch, hidden)
    y_h, y_c = indexing.stack(hs, 0), (indexing.stack(cs, 0) if op == "LSTM" else None)
    if layout:
        y = st.transpose(y, (2, 0, 1, 3))
        y_h = st.swapaxes(y_h, 0, 1)
        y_c = None if y_c is None else st.swapaxes(y_c, 0, 1)
    return (y, y_h, y_c) if op == "LSTM" else (y, y_h)


def _check_shapes(c, x, b, h0, c0, p, num_dir, gates, hidden, layout):
    """Refuse operands whose shapes do not fit (a longer B or P would be sliced without a word)."""
    batch = _shape(x)[0 if layout else 1]
    state = (batch, num_dir, hidden) if layout else (num_dir, batch, hidden)
    for name, t, want in (("B", b, (num_dir, 2 * gates * hidden)), ("initial_h", h0, state),
                          ("initial_c", c0, state), ("P", p, (num_dir, 3 * hidden))):
        if t is not None and _shape(t) != want:
            raise OnnxImportError(f"onnx.load: {c.node.op_type} input {name} has shape {_shape(t)}, "
                                  f"expected {want}")


def _masks(c, seq_lens, seq, batch):
    """Per step, a (batch, 1) mask of the entries still inside their sequence; None if all are."""
    if seq_lens is None:
        return None
    name = c.node.input[4]
    if name in c.consts:
        lens = np.asarray(c.consts[name]).reshape(-1)
        if np.any(lens < 0) or np.any(lens > seq):
            raise OnnxImportError(f"onnx.load: {c.node.op_type} with sequence_lens {lens.tolist()} outside "
                                  f"[0, {seq}] is not supported")
        if np.all(lens == seq):
            return None
    lens = st.reshape(seq_lens, (batch, 1))
    return [el.less(np.asarray(t, dtype=seq_lens.dtype), lens) for t in range(seq)]


def _affine(x_part, h, cell, start, stop):
    """x_part + H R[start:stop]^T + the recurrence bias of those rows."""
    key = (start, stop)
    if key not in cell["blocks"]:
        # Sliced and transposed once per direction, not once per step.
        gh = cell["gates"] * cell["hidden"]
        rb = None if cell["b"] is None else _rows(cell["b"], gh + start, gh + stop)
        cell["blocks"][key] = (st.transpose(indexing.getitem(cell["r"], slice(start, stop))), rb)
    rt, rb = cell["blocks"][key]
    out = el.add(x_part, matmul(h, rt))
    return out if rb is None else el.add(out, rb)


def _lstm_step(xw, h, c_prev, cell):
    f, g, hact = cell["acts"]
    n, clip, p = cell["hidden"], cell["clip"], cell["p"]
    pre = _affine(xw, h, cell, 0, 4 * n)          # gates in ONNX's order i, o, f, c
    pi, po, pf, pc = (_rows(pre, k * n, (k + 1) * n) for k in range(4))
    if p is not None:
        pi = el.add(pi, el.multiply(_rows(p, 0, n), c_prev))
        pf = el.add(pf, el.multiply(_rows(p, 2 * n, 3 * n), c_prev))
    i = f(_clipped(pi, clip))
    # input_forget couples the gates: the cell forgets what it takes in.
    fg = el.subtract(1.0, i) if cell["input_forget"] else f(_clipped(pf, clip))
    c_new = el.add(el.multiply(fg, c_prev), el.multiply(i, g(_clipped(pc, clip))))
    if p is not None:
        po = el.add(po, el.multiply(_rows(p, n, 2 * n), c_new))
    o = f(_clipped(po, clip))
    return el.multiply(o, hact(c_new)), c_new


def _gru_step(xw, h, c_prev, cell):
    f, g = cell["acts"]
    n, clip = cell["hidden"], cell["clip"]
    zr = _affine(_rows(xw, 0, 2 * n), h, cell, 0, 2 * n)    # gates in ONNX's order z, r, h
    z = f(_clipped(_rows(zr, 0, n), clip))
    r = f(_clipped(_rows(zr, n, 2 * n), clip))
    xh = _rows(xw, 2 * n, 3 * n)
    if cell["linear_before_reset"]:
        pre = el.add(xh, el.multiply(r, _affine(np.zeros((), xw.dtype), h, cell, 2 * n, 3 * n)))
    else:
        pre = _affine(xh, el.multiply(r, h), cell, 2 * n, 3 * n)
    hh = g(_clipped(pre, clip))
    return el.add(el.multiply(el.subtract(1.0, z), hh), el.multiply(z, h)), None


def _rnn_step(xw, h, c_prev, cell):
    (f,) = cell["acts"]
    return f(_clipped(_affine(xw, h, cell, 0, cell["hidden"]), cell["clip"])), None


_STEP = {"LSTM": _lstm_step, "GRU": _gru_step, "RNN": _rnn_step}
