"""ONNX gathers, slices, scatters and tensor products (Einsum, Gemm)."""

from __future__ import annotations

import numpy as np

from ..primitives.registry import PRIMITIVES
from ..primitives import elementwise as el, indexing, numeric, structure as st
from ..primitives.linalg import einsum, matmul
from ._ops import OnnxImportError, handles, _shape, _ndim


@handles("Gather")
def _gather(c):
    table, idx = c.arg(0), c.arg(1)
    return indexing.take(table, idx, c.attr("axis", 0) % _ndim(table))


@handles("GatherElements")
def _gather_elements(c):
    x = c.arg(0)
    return numeric.take_along_axis(x, c.arg(1), c.attr("axis", 0) % _ndim(x))


@handles("Slice")
def _slice(c):
    x = c.arg(0)
    s = _shape(x)
    if c.opset < 10:
        # Before opset 10 starts, ends and axes were attributes, and there were no steps.
        starts, ends, axes, steps = c.attr("starts"), c.attr("ends"), c.attr("axes"), None
    else:
        starts, ends = c.static(1, "starts"), c.static(2, "ends")
        axes, steps = c.static(3, "axes"), c.static(4, "steps")
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * len(s)
    for start, end, a, step in zip(starts, ends, axes, steps):
        a, start, end, step = int(a) % len(s), int(start), int(end), int(step)
        d = s[a]
        start = min(max(start + d if start < 0 else start, 0), d - (step < 0))
        if end < -d:
            end = None if step < 0 else 0
        else:
            end = min(end + d if end < 0 else end, d)
        index[a] = slice(start, end, step)
    return indexing.getitem(x, tuple(index))


@handles("GatherND")
def _gather_nd(c):
    data, idx = c.arg(0), c.arg(1)
    s, b = _shape(data), c.attr("batch_dims", 0)
    i_shape = _shape(idx)
    k = i_shape[-1]
    # Rows of data seen as (batch × indexed positions, *rest): each index tuple names one row.
    inner = s[b:b + k]
    rows = _linear_rows(idx, inner)
    # Each batch entry's rows start after the rows of the entries before it.
    n_batch = int(np.prod(s[:b], dtype=np.int64))
    offsets = (np.arange(n_batch, dtype=np.int64) * int(np.prod(inner, dtype=np.int64))).reshape(
        s[:b] + (1,) * (len(i_shape) - 1 - b))
    rows = rows + offsets if isinstance(rows, np.ndarray) else el.add(rows, offsets)
    table = st.reshape(data, (n_batch * int(np.prod(inner, dtype=np.int64)),) + s[b + k:])
    return indexing.take(table, rows, 0)


def _linear_rows(idx, dims):
    """The row-major position in an array of shape ``dims`` of each index tuple idx[..., :] (negative
    entries count from the end): a numpy array for constant indices, else a Tensor."""
    dims = np.asarray(dims, dtype=np.int64)
    strides = np.cumprod(np.concatenate([dims[1:], [1]])[::-1])[::-1].astype(np.int64)
    if isinstance(idx, np.ndarray):
        idx = idx.astype(np.int64)
        if ((idx < -dims) | (idx >= dims)).any():
            raise OnnxImportError(f"onnx.load: an index is out of range for the indexed axes {tuple(dims)}")
        return (np.where(idx < 0, idx + dims, idx) * strides).sum(-1)
    idx = el.astype(idx, np.int64) if idx.dtype != np.int64 else idx
    idx = el.where(el.less(idx, np.int64(0)), el.add(idx, dims), idx)
    return st.sum(el.multiply(idx, strides), -1)


def _constant(c, i):
    """Input i's value if it is a constant of the model, else None."""
    name = c.node.input[i] if i < len(c.node.input) else ""
    return c.consts.get(name) if name else None


_SCATTER_COMBINE = {"add": el.add, "mul": el.multiply, "max": el.maximum, "min": el.minimum}


def _scatter_rows(c, table, values, rows):
    """table (n, *rest) with the rows of values (m, *rest) written into rows (m,) by the node's reduction.

    Constant rows: each update is gathered to the row it lands in and combined in the updates' order
    (the j-th update of every row at step j), as ONNX's definition loops over them; 'none' keeps a
    row's last update. Computed rows: only 'add' (a sum of all updates per row, order-free)."""
    reduction = c.attr("reduction", "none")
    if reduction not in ("none", *_SCATTER_COMBINE):
        raise OnnxImportError(f"onnx.load: {c.node.op_type} with reduction={reduction!r} is not supported")
    n = _shape(table)[0]
    if not isinstance(rows, np.ndarray):
        if reduction != "add":
            raise OnnxImportError(f"onnx.load: {c.node.op_type} with reduction={reduction!r} needs constant "
                                  f"indices (which updates meet in one place is decided when the model is "
                                  f"loaded); its indices are computed")
        return el.add(table, indexing.take_add(values, rows, n, 0))
    rows = rows.reshape(-1)
    if rows.size == 0:
        return table
    if reduction == "add":
        return el.add(table, indexing.take_add(values, rows, n, 0))
    order = np.argsort(rows, kind="stable")           # each row's updates together, in their order
    counts = np.bincount(rows, minlength=n)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    lift = (n,) + (1,) * (_ndim(table) - 1)
    if reduction == "none":
        hit = counts > 0
        last = order[np.where(hit, starts + counts - 1, 0)]
        return el.where(hit.reshape(lift), indexing.take(values, last, 0), table)
    out = table
    for j in range(int(counts.max())):
        hit = counts > j
        update = indexing.take(values, order[np.where(hit, starts + j, 0)], 0)
        out = el.where(hit.reshape(lift), _SCATTER_COMBINE[reduction](out, update), out)
    return out


@handles("ScatterND")
def _scatter_nd(c):
    data, idx, updates = c.arg(0), c.arg(1), c.arg(2)
    s, i_shape = _shape(data), _shape(idx)
    k = i_shape[-1]
    const = _constant(c, 1)
    if const is None and c.attr("reduction", "none") != "add":
        const = np.asarray(c.static(1, "indices"))
    rows = _linear_rows(idx if const is None else const, s[:k])
    n = int(np.prod(s[:k], dtype=np.int64))
    m = int(np.prod(i_shape[:-1], dtype=np.int64))
    if const is None:
        out = _scatter_rows(c, st.reshape(data, (n,) + s[k:]), updates, rows)
    else:
        out = _scatter_rows(c, st.reshape(data, (n,) + s[k:]), st.reshape(updates, (m,) + s[k:]), rows)
    return st.reshape(out, s)


@handles("ScatterElements", "Scatter")
def _scatter_elements(c):
    data, idx, updates = c.arg(0), c.arg(1), c.arg(2)
    s = _shape(data)
    axis = c.attr("axis", 0) % _ndim(data)
    const = _constant(c, 1)
    if const is None:
        if c.attr("reduction", "none") == "add":
            return el.add(data, numeric.put_along_axis_add(updates, idx, s, axis))
        const = np.asarray(c.static(1, "indices"))
    # Every element of updates lands at its own position with the axis coordinate replaced by its index.
    where = list(np.indices(const.shape, dtype=np.int64))
    if ((const < -s[axis]) | (const >= s[axis])).any():
        raise OnnxImportError(f"onnx.load: {c.node.op_type} has an index out of range for axis {axis} of "
                              f"size {s[axis]}")
    where[axis] = np.where(const < 0, const + s[axis], const).astype(np.int64)
    rows = np.ravel_multi_index(tuple(where), s)
    out = _scatter_rows(c, st.reshape(data, (int(np.prod(s, dtype=np.int64)),)),
                        st.reshape(updates, (const.size,)), rows)
    return st.reshape(out, s)


@handles("Compress")
def _compress(c):
    x = c.arg(0)
    keep = np.flatnonzero(np.asarray(c.static(1, "condition")).reshape(-1))
    axis = c.attr("axis")
    if axis is None:
        return indexing.take(st.reshape(x, (-1,)), keep, 0)
    return indexing.take(x, keep, axis % _ndim(x))


@handles("NonZero")
def _nonzero(c):
    # Its output's shape depends on the input's values, and a program's shapes are static: only a
    # constant input (computed when the model is loaded) can be imported.
    x = c.static(0, "input")
    return np.asarray(np.nonzero(np.asarray(x)), dtype=np.int64)


@handles("Einsum")
def _einsum(c):
    args = [c.arg(i) for i in range(len(c.node.input))]
    equation = c.attr("equation").replace(" ", "")
    dtype = np.dtype(args[0].dtype)
    if dtype.type.__module__.startswith("ml_dtypes") and dtype.name.startswith(("bfloat", "float")):
        # numpy has no einsum on bfloat16 (or float8): like onnx's reference, accumulate in float32
        # and round once.
        return el.astype(einsum(equation, *[el.astype(a, np.float32) for a in args]), dtype)
    return einsum(equation, *args)


@handles("Det")
def _det(c):
    return PRIMITIVES["det"](c.arg(0))


@handles("Gemm")
def _gemm(c):
    a, b, bias = c.arg(0), c.arg(1), c.arg(2)
    if c.attr("transA", 0):
        a = st.transpose(a)
    if c.attr("transB", 0):
        b = st.transpose(b)
    out = matmul(a, b)
    if c.attr("alpha", 1.0) != 1.0:
        out = el.multiply(out, np.asarray(c.attr("alpha"), dtype=np.result_type(out.dtype)))
    if bias is not None:
        beta = c.attr("beta", 1.0)
        out = el.add(out, bias if beta == 1.0 else el.multiply(bias, beta))
    return out
